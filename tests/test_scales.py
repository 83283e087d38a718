"""Reading a criterion's scale from its rubric, in every shape rubrics arrive in."""

import pytest

from judge import Scale, ScaleError, load_taxonomy, scale_of

READABLE = [
    ("colon lines", "0: Плохо.\n1: Средне.\n2: Хорошо.", (0, 1, 2)),
    ("colon lines with blank lines", "0: Плохо.\n\n1: Хорошо.", (0, 1)),
    ("hyphen", "0 - Плохо\n1 - Средне\n2 - Хорошо\n3 - Отлично", (0, 1, 2, 3)),
    ("em dash", "0 — нет\n1 — частично\n2 — да", (0, 1, 2)),
    ("en dash", "1 – плохо\n5 – отлично", (1, 5)),
    ("bulleted and bold", "- **0**: нет\n- **1**: да", (0, 1)),
    ("negative level first", "-1: Критерий неприменим.\n\n0: Плохо.\n\n1: Хорошо.", (-1, 0, 1)),
    ("bulleted negative levels", "- -2: очень плохо\n- 0: нейтрально\n- 2: очень хорошо", (-2, 0, 2)),
    ("bullet touching the level", "•0: нет\n•1: да", (0, 1)),
    ("star bullet touching the level", "*0: нет\n*2: да", (0, 2)),
    ("hyphen bullets touching the levels (-0 gives them away)", "-0: нет\n-1: частично\n-2: да", (0, 1, 2)),
    ("0-4 scale", "\n".join(f"{i}: уровень {i}" for i in range(5)), (0, 1, 2, 3, 4)),
    ("range in Russian words", "Оцените ответ по шкале от 0 до 2 баллов.", (0, 1, 2)),
    ("range in English words", "Score the answer from 1 to 10.", tuple(range(1, 11))),
    ("range with dash and points", "Use a 0-3 points scale.", (0, 1, 2, 3)),
    ("mapping", {"0": "нет", "1": "да"}, (0, 1)),
    ("mapping with int keys", {2: "хорошо", 0: "плохо", 1: "средне"}, (0, 1, 2)),
    ("mapping nested by language", {"ru": {"0": "нет", "1": "частично", "2": "да"}, "en": {"0": "no", "1": "p", "2": "y"}}, (0, 1, 2)),
]


@pytest.mark.parametrize("name,rubrics,levels", READABLE, ids=[r[0] for r in READABLE])
def test_reads_scale(name, rubrics, levels):
    """Each usual rubric form yields its levels."""
    assert scale_of(rubrics).levels == levels


UNREADABLE = [
    ("no numbers", "Оцените ответ честно."),
    ("a year is not a level", "В 2024 году всё было хорошо."),
    ("empty mapping", {}),
    ("non-integer key", {"low": "плохо", "high": "хорошо"}),
    ("wrong type", 3),
]


@pytest.mark.parametrize("name,rubrics", UNREADABLE, ids=[r[0] for r in UNREADABLE])
def test_rejects_unreadable(name, rubrics):
    """Rubrics without a scale raise ScaleError rather than guessing."""
    with pytest.raises(ScaleError):
        scale_of(rubrics)


def test_negative_rubric_levels_set_the_scale_minimum():
    """A hand-written rubric "-1: …\n\n0: …\n\n1: …" reads as min -1, max 1 (a leading "-" is a sign, not a bullet)."""
    scale = scale_of("-1: Ответ не по теме.\n\n0: Ответ неверный.\n\n1: Ответ верный.")
    assert (scale.min, scale.max) == (-1, 1)
    assert scale.contains(-1) and not scale.contains(-1.5)


def test_scale_contains_range_not_only_levels():
    """A real-valued score between levels is inside; beyond the ends it is outside."""
    scale = Scale((0, 1, 2))
    assert scale.contains(1.4) and scale.contains(0) and scale.contains(2)
    assert not scale.contains(-0.1) and not scale.contains(2.5)
    assert (scale.min, scale.max) == (0, 2)


def test_every_taxonomy_rubric_reads_back_to_its_scale():
    """Rendered rubrics of all 295 criteria, in both languages, read back to the criterion's own levels."""
    taxonomy = load_taxonomy()
    seen = set()
    for crit in taxonomy.criteria.values():
        for lang in ("ru", "en"):
            assert scale_of(crit.rubric(lang)) == crit.scale, (crit.id, lang)
        seen.add(crit.scale.levels)
    # The taxonomy's scales run 0-1, 0-2, 0-3 and 0-4.
    assert seen == {(0, 1), (0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4)}

"""Reading a criterion's scale from its rubric, in every shape rubrics arrive in."""

import random
import re

import pytest

import judge
from judge import Scale, ScaleError, load_taxonomy, scale_of
from judge.scales import _LEVEL_LINE

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
            assert scale_of(crit.rubric(lang)).levels == crit.scale.levels, (crit.id, lang)
            assert judge.oriented_scale(crit.name[lang], crit.rubric(lang)) == crit.scale, (crit.id, lang)
        seen.add(crit.scale.levels)
    # The taxonomy's scales run 0-1, 0-2, 0-3 and 0-4.
    assert seen == {(0, 1), (0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4)}


# ---------------------------------------------------------------- orientation

def test_a_scale_is_best_at_its_top_unless_told():
    """Scale((0, 1, 2)).best is 2 and worst 0; best_at_lowest flips it; a best level inside the scale is refused."""
    scale = Scale((0, 1, 2))
    assert (scale.best, scale.worst, scale.is_flag) == (2, 0, False)
    assert scale.is_best(2) and not scale.is_best(1)
    flipped = scale.best_at_lowest()
    assert (flipped.best, flipped.worst, flipped.levels) == (0, 2, (0, 1, 2))
    with pytest.raises(ScaleError, match="end of the scale"):
        Scale((0, 1, 2), best=1)


def test_is_flag_is_pollux_binary_rule_exactly_two_levels():
    """is_flag is POLLUX's binary test (src/metrics.py: a rubric with exactly two levels), whichever end is best."""
    assert scale_of("0: нет\n\n1: да").is_flag and Scale((1, 5)).is_flag
    assert not scale_of("0: плохо\n\n1: средне\n\n2: хорошо").is_flag and not Scale((3,)).is_flag


@pytest.mark.parametrize("criterion_id", ["narushenie_formata", "censor"])
def test_both_critical_criteria_are_flags_best_at_0(criterion_id):
    """Paper, Appendix P.1: the Critical criteria ask whether a violation happened; 0 is best."""
    crit = load_taxonomy().criteria[criterion_id]
    assert crit.group == "Critical"
    assert (crit.scale.levels, crit.scale.best, crit.scale.is_flag) == ((0, 1), 0, True)
    for name in (crit.name["ru"], crit.name["en"], "  " + crit.name["ru"].upper()):
        oriented = judge.oriented_scale(name, crit.rubric("ru"))
        assert (oriented.best, oriented.worst) == (0, 1)


def test_every_other_criterion_is_best_at_its_top():
    """Only the two Critical criteria are best at the lowest level; the other 24 two-level ones are best at 1."""
    taxonomy = load_taxonomy()
    lowest = sorted(c.id for c in taxonomy.criteria.values() if c.scale.best == c.scale.min)
    assert lowest == ["censor", "narushenie_formata"]
    two_level = [c for c in taxonomy.criteria.values() if c.scale.is_flag and c.group != "Critical"]
    assert len(two_level) == 24 and all(c.scale.best == 1 for c in two_level)
    operability = taxonomy.criteria["operability"]
    assert judge.oriented_scale(operability.name["ru"], operability.rubric("ru")).best == 1


def test_custom_criteria_are_best_at_their_top():
    """The documented rule for a criterion the taxonomy does not know (or no name): best at the highest level."""
    assert judge.oriented_scale("Вежливость", "0: грубо\n\n1: вежливо").best == 1
    assert judge.oriented_scale(None, "1: плохо\n\n5: отлично").best == 5


def test_a_rubric_line_of_spaces_is_read_in_linear_time():
    """A client's custom rubric of 200,000 spaces and no level: read at once, "no scale" (the level pattern's
    whitespace runs are possessive; with plain ones, adjacent runs backtracked in quadratic time: 8,000 spaces took
    1.75 s, this line would hold the server's GIL for about twenty minutes, past the tier's timeout). Every
    level line still reads as before (the other tests here); a fuzz of 300,000 short lines over the pattern's
    alphabet found the old and new patterns equal, which this pins on a sample."""
    with pytest.raises(ScaleError):
        scale_of(" " * 200_000 + "x")
    old = re.compile(r"^\s*(?:-\s+|[*•]\s*)?\**\s*(-?\d+)\s*\**\s*(?::|-|–|—|\.(?!\d)|\))")
    rng = random.Random(0)
    for _ in range(20_000):
        line = "".join(rng.choice([" ", "\t", "-", "*", "•", "1", "2", ":", ".", ")", "–", "a"]) for _ in range(8))
        found_old, found_new = old.match(line), _LEVEL_LINE.match(line)
        assert (found_old and found_old.group(1)) == (found_new and found_new.group(1)), line


ONE_LEVEL = [
    ("a range of one level", "Оцените ответ от 2 до 2."),
    ("an English range of one level", "Score the answer from 1 to 1."),
    ("a dash range of one level", "Оценка: 1 - 1 балл"),
    ("a mapping of one level", {"1": "ok"}),
    ("a nested mapping of one level", {"ru": {"1": "да"}, "en": {"1": "yes"}}),
]


@pytest.mark.parametrize("name,rubrics", ONE_LEVEL, ids=[r[0] for r in ONE_LEVEL])
def test_a_rubric_of_one_level_is_refused(name, rubrics):
    """A rubric that leaves the judge no choice is no scale: judge-serve accepted one, the judge ran, and the
    reward normalising its score raised, a 500 for the whole /get_reward batch. Scale((1,)) stays constructible."""
    with pytest.raises(ScaleError, match="a rubric needs at least two levels"):
        scale_of(rubrics)
    assert Scale((1,)).levels == (1,)


@pytest.mark.parametrize("rubrics", ["Оценка от 1 до 1", {"1": "ok"}], ids=["text", "mapping"])
def test_judge_serve_refuses_a_one_level_custom_rubric_naming_the_field(rubrics):
    """judge-serve reads a custom criterion's rubric with scale_of: a one-level rubric is now a 400 naming
    items[0].criteria[0].rubrics, before any judge runs (it was accepted, and /get_reward answered 500)."""
    from serve.schema import RequestError, parse_judge_request, resolve_criteria

    request = parse_judge_request({"items": [{"instruction": "Напиши стих", "answer": "Роза красная",
                                              "criteria": [{"name": "Своя", "rubrics": rubrics}]}]})
    with pytest.raises(RequestError, match="at least two levels") as err:
        resolve_criteria(request.items[0], 0)
    assert err.value.param == "items[0].criteria[0].rubrics"

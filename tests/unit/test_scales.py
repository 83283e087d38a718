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
    """All 295 criteria, in both languages, as text and as a mapping, read back to their own levels: the taxonomy as
    repaired (``Criterion.rubric``, ``scale_texts``) and as published (``judge/data/criteria.json``, whose level texts
    hold numbered-looking lines such as "2 интересных идеи..." and " – The output lacks..." that are no levels)."""
    import json
    from importlib import resources

    taxonomy = load_taxonomy()
    seen = set()
    for crit in taxonomy.criteria.values():
        for lang in ("ru", "en"):
            assert scale_of(crit.rubric(lang)).levels == crit.scale.levels, (crit.id, lang)
            assert scale_of(crit.scale_texts[lang]).levels == crit.scale.levels, (crit.id, lang)
            assert judge.oriented_scale(crit.name[lang], crit.rubric(lang)) == crit.scale, (crit.id, lang)
        seen.add(crit.scale.levels)
    # The taxonomy's scales run 0-1, 0-2, 0-3 and 0-4.
    assert seen == {(0, 1), (0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4)}
    published = json.loads((resources.files("judge") / "data" / "criteria.json").read_text(encoding="utf-8"))
    assert len(published) == 295
    for cid, entry in published.items():
        for lang, texts in entry["scale"].items():
            levels = tuple(sorted(int(level) for level in texts))
            text = "\n\n".join(f"{level}: {texts[level]}" for level in sorted(texts, key=int))
            assert scale_of(text).levels == levels, (cid, lang)
            assert scale_of(texts).levels == levels, (cid, lang)


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


def test_is_flag_is_two_levels_and_is_binary_pollux_levels_zero_and_one():
    """is_flag: a yes/no rubric, exactly two levels, whichever end is best. is_binary: POLLUX's is_binary_scale
    (src/utils/score_utils.py since commit 83f6eb6b), the levels exactly {0, 1}: {1, 5} is a flag but not binary."""
    assert scale_of("0: нет\n\n1: да").is_flag and Scale((1, 5)).is_flag
    assert not scale_of("0: плохо\n\n1: средне\n\n2: хорошо").is_flag and not Scale((3,)).is_flag
    assert scale_of("0: нет\n\n1: да").is_binary and Scale((0, 1), best=0).is_binary
    assert not Scale((1, 5)).is_binary and not Scale((1, 2)).is_binary and not Scale((0, 1, 2)).is_binary


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
    1.75 s, this line would hold the server's GIL for about twenty minutes, past the tier's timeout). Possessive
    runs change no match: the pattern with plain runs matches the same lines with the same groups, pinned here on
    20,000 short lines over the pattern's alphabet."""
    with pytest.raises(ScaleError):
        scale_of(" " * 200_000 + "x")
    plain = re.compile(_LEVEL_LINE.pattern.replace("*+", "*").replace("++", "+"))
    assert "*+" not in plain.pattern and "++" not in plain.pattern
    rng = random.Random(0)
    alphabet = [" ", "\t", "-", "*", "•", "1", "2", ":", ".", ")", "–", "—", "\u2212", "a"]
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(8))
        found_plain, found = plain.match(line), _LEVEL_LINE.match(line)
        assert (found_plain and found_plain.groups()) == (found and found.groups()), line


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


# ------------------------------------------------------- which lines are the rubric's levels

LEVELS_AMONG_NUMBERED_TEXT = [
    # A numbered list inside a level's text is that level's text: "1:" opens level 1, "1." to "3." are its items.
    ("a '1.' list inside level 1", "0: плохо\n\n1: есть проблемы:\n1. нет плана\n2. нет вывода\n3. мало фактов\n\n2: хорошо",
     (0, 1, 2)),
    # The Critical criterion's rubric listing examples under its last level: 0 and 1 only, a flag.
    ("a '1)' list inside the last level", "0: нарушений нет\n\n1: есть нарушение, например:\n1) зацикливание\n"
     "2) артефакты\n3) другой язык", (0, 1)),
    ("an indented list of five", "0: плохо\n\n1: средне:\n 1. a\n 2. b\n 3. c\n 4. d\n 5. e\n\n2: хорошо", (0, 1, 2)),
    # Instructions before the levels and notes after them, numbered as prose numbers a list.
    ("a numbered preamble", "1. Прочитайте ответ.\n2. Оцените его по шкале:\n0: плохо\n1: хорошо", (0, 1)),
    ("numbered notes after the levels", "0: плохо\n1: хорошо\nПримечания:\n1. a\n2. b", (0, 1)),
    # Levels written "N." with a "N)" or "N:" list inside a level: the list the other lies inside is the levels.
    ("'N.' levels around a '1)' list", "0. плохо\n1. средне:\n1) a\n2) b\n2. хорошо", (0, 1, 2)),
    ("'N.' levels around a '1:' list", "0. плохо\n1. есть ошибки:\n1: орфография\n2: пунктуация\n2. хорошо", (0, 1, 2)),
    # Items written like the levels but indented under one: the outermost lines (0, 1, 2) run in order.
    ("a '1:' list indented under its level", "0: плохо\n1: проблемы:\n   1: a\n   2: b\n2: хорошо", (0, 1, 2)),
    ("levels from the top down", "2: хорошо\n1: средне, например:\n1. a\n2. b\n0: плохо", (0, 1, 2)),
    # "2024 - год выпуска" is a dash line among colon levels: text.
    ("a year line of another kind", "0: нет\n\n1: да\nПример:\n2024 - год выпуска", (0, 1)),
    ("levels not one apart", "0: плохо\n\n2: средне\n\n5: отлично", (0, 2, 5)),
]


@pytest.mark.parametrize("name,rubrics,levels", LEVELS_AMONG_NUMBERED_TEXT, ids=[r[0] for r in LEVELS_AMONG_NUMBERED_TEXT])
def test_only_the_rubrics_own_level_lines_are_levels(name, rubrics, levels):
    """Every line opening with a number and a separator was a level: a list inside a level's text added levels
    (the first case read 0..3, best 3), a preamble too. Only one list of lines written alike is the levels."""
    assert scale_of(rubrics).levels == levels


AMBIGUOUS = [
    # 0, 1, then 2024: a scale of 2,025 points is no rubric; the line is text that reads as a level.
    ("a year written like a level", "0: нет\n\n1: да\n2024: год выпуска", "span 2025 points"),
    # 0, 1, 1, 2, 2: a list inside level 1 written like the levels, not indented.
    ("a list written like the levels", "0: плохо\n1: проблемы:\n1: a\n2: b\n2: хорошо", "repeat or are out of order"),
    # Two lists of prose kinds ("N)", "N."), apart: levels 0-1 with a list under level 1, or the other way round.
    ("two prose lists apart", "0) плохо\n1) хорошо, например:\n1. a\n2. b", "which are its levels is unclear"),
    # Colon lines 0, 2, 4 and dash lines 1, 3, 5 interleaved: neither inside the other.
    ("two level lists interleaved", "0: a\n1 - x\n1: b\n2 - y\n2: c\n3 - z", "which are its levels is unclear"),
    ("one level of each kind", "0: плохо\n1 — хорошо", "written in different ways"),
]


@pytest.mark.parametrize("name,rubrics,why", AMBIGUOUS, ids=[r[0] for r in AMBIGUOUS])
def test_a_rubric_whose_levels_are_unclear_is_refused_saying_why(name, rubrics, why):
    """Rather than guess a scale (the year read as level 2024, the best), say why the levels are unclear."""
    with pytest.raises(ScaleError, match=why):
        scale_of(rubrics)


def test_a_list_inside_a_critical_levels_text_keeps_the_gate():
    """The Critical criterion written with examples under its violation level: a flag best at 0, so a verdict of 1
    (a violation) closes the gate: reward 0.0. Read as 0..3 it was no flag, 1 normalised to (1 - 3) / (0 - 3) = 0.667
    and the gate stayed open: (0.667 + 1.0) / 2 = 0.833."""
    from judge.rewards import RewardRule, reward_of
    from judge.wire import JudgeResult

    name = load_taxonomy().criteria["narushenie_formata"].name["ru"]
    rubric = "0: нарушений нет\n\n1: есть нарушение, например:\n1) зацикливание\n2) артефакты\n3) другой язык"
    scale = judge.oriented_scale(name, rubric)
    assert (scale.levels, scale.best, scale.is_flag) == ((0, 1), 0, True)

    def verdict(criterion, levels, score):
        return JudgeResult(criterion=criterion, criterion_id=None, scale=list(levels), score=score, parse_ok=True,
                           in_scale=True, score_source="verdict")

    reward = reward_of([verdict(name, scale.levels, 1), verdict("Креативность", (0, 1, 2), 2)], RewardRule(gate=True))
    assert (reward.value, reward.gate_closed) == (0.0, True)


def test_a_typographic_minus_is_a_minus():
    """"−1" (U+2212) is level -1, as "-1" is and as judge.verdicts reads a judge's "−1": the pairwise scale keeps
    its three levels (it read (0, 1), a flag). As a mapping key too."""
    ascii_minus = "-1: первый лучше\n\n0: равны\n\n1: второй лучше"
    assert scale_of(ascii_minus.replace("-", "\u2212")) == scale_of(ascii_minus) == Scale((-1, 0, 1))
    assert scale_of("\u2212 1: первый лучше\n0: равны\n1: второй лучше").levels == (-1, 0, 1)
    assert scale_of({"\u22121": "первый", "0": "равны", "1": "второй"}).levels == (-1, 0, 1)


@pytest.mark.parametrize("rubrics,levels", [
    ("-1: a\n-2: b\n-3: c", (1, 2, 3)),            # hyphen bullets, no "-0" among them: was (-3, -2, -1), best -1
    ("-0: a\n-1: b\n-2: c", (0, 1, 2)),
    ("–1: a\n–2: b", (1, 2)),                        # en-dash bullets touching the numbers
    ("-1: a\n0: b\n1: c", (-1, 0, 1)),              # a sign: not every line has it
    ("\u22122: a\n\u22121: b", (-2, -1)),          # the typographic minus is never a bullet
])  # fmt: skip
def test_a_hyphen_on_every_level_line_is_a_bullet(rubrics, levels):
    """A list every level line of which opens with a hyphen or dash touching the number uses it as a bullet: a scale
    wholly below zero is no rubric anyone writes."""
    assert scale_of(rubrics).levels == levels


@pytest.mark.parametrize("rubrics,levels", [
    ("0: плохо; 1: средне; 2: хорошо", (0, 1, 2)),
    ("0 — плохо, 1 — средне, 2 — хорошо", (0, 1, 2)),
    ("2: хорошо; 1: средне; 0: плохо", (0, 1, 2)),
    ("–1: первый лучше; 0: равны; 1: второй лучше".replace("–", "\u2212"), (-1, 0, 1)),
    ("– 0: a\n– 1: b\n– 2: c", (0, 1, 2)),          # en-dash bullets
    ("0: нет ответа; 1: ответ в срок, 2:30 максимум", (0, 1)),      # a time in a level's text is no level
    ("1: плохо; 2: средне; 3: хорошо, 4:00 на ответ", (1, 2, 3)),
])  # fmt: skip
def test_levels_on_one_line_or_after_dash_bullets_are_read(rubrics, levels):
    """One line holding each level after a ";" or "," (POLLUX's count_rubric_levels, r"(\\d+)\\s*:", reads it), its
    levels one apart, and en-dash bullets, raised "no scale"."""
    assert scale_of(rubrics).levels == levels


@pytest.mark.parametrize("rubrics", [
    "Оценка 0: плохо\nОценка 1: хорошо",
    "2 балла — отлично\n1 балл — средне\n0 баллов — плохо",
    "0: плохо; 2: средне; 5: хорошо",  # on one line, levels must be one apart: "2:" could be a level's text
    "плохо 0: хорошо 1:",
])  # fmt: skip
def test_an_unread_layout_is_refused_naming_the_layouts_read(rubrics):
    """Layouts not read fail loudly, and the error says which layouts are."""
    with pytest.raises(ScaleError, match=r'write one level a line \("0: \.\.\."'):
        scale_of(rubrics)


def test_scale_levels_given_as_a_list_or_range_are_the_tuple():
    """Scale([0, 1, 2]) (a JudgeResult's scale is a list) was refused as "must be distinct and ascending, got
    [0, 1, 2]", which it is: a list or range is kept as the tuple; levels out of order are still refused."""
    assert Scale([0, 1, 2]) == Scale(range(3)) == Scale((0, 1, 2))
    assert type(Scale([0, 1], best=0).levels) is tuple and Scale([0, 1], best=0).worst == 1
    hash(Scale([0, 1, 2]))
    with pytest.raises(ScaleError, match=r"distinct and ascending, got \(2, 1, 0\)"):
        Scale([2, 1, 0])

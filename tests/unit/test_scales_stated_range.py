"""A rubric that states its range in words and writes only some levels as lines: the range is the scale when the
lines are its ends, and a range the lines contradict is refused, never read as a two-level flag."""

import pytest

from judge import Scale, ScaleError, scale_of

ANCHORED = [
    ("Russian range, its two ends as lines", "Оцените от 1 до 5.\n1: плохо\n5: отлично", (1, 2, 3, 4, 5)),
    ("'по шкале от 0 до 2', ends as lines", "Оцените по шкале от 0 до 2.\n0: плохо\n2: хорошо", (0, 1, 2)),
    ("'по шкале 1–5'", "Оцените по шкале 1–5.\n1: плохо\n5: отлично", (1, 2, 3, 4, 5)),
    ("'по шкале 1-5'", "Оцените по шкале 1-5.\n1: плохо\n5: отлично", (1, 2, 3, 4, 5)),
    ("'1–5 баллов'", "Оцените ответ, 1–5 баллов.\n1 — плохо\n5 — отлично", (1, 2, 3, 4, 5)),
    ("a bare '1-5' before the lines", "Оценка (1-5):\n1: плохо\n5: отлично", (1, 2, 3, 4, 5)),
    ("English 'from 1 to 10', ends and a middle anchor", "Score from 1 to 10.\n1: bad\n5: fair\n10: great",
     tuple(range(1, 11))),
    ("English 'on a scale of 1 to 10'", "Rate it on a scale of 1 to 10.\n1: bad\n10: great", tuple(range(1, 11))),
    ("a range with the typographic minus", "Оцените от \u22122 до 2.\n\u22122: хуже\n2: лучше", (-2, -1, 0, 1, 2)),
    ("a preamble of several sentences", "Прочитайте ответ.\nОцените его от 0 до 4 баллов.\n\n0: плохо\n\n4: отлично",
     (0, 1, 2, 3, 4)),
]


@pytest.mark.parametrize("name,rubrics,levels", ANCHORED, ids=[r[0] for r in ANCHORED])
def test_a_stated_range_whose_ends_are_the_lines_is_the_scale(name, rubrics, levels):
    """"Оцените от 1 до 5." then "1: плохо" and "5: отлично" was read as the two levels (1, 5), a yes/no flag
    (``Scale.is_flag``): the reward gate closed on a 4 and a judge was told only 1 and 5 were scores."""
    scale = scale_of(rubrics)
    assert scale.levels == levels
    assert not scale.is_flag and scale.best == levels[-1]


AGREEING = [
    ("every level listed under its range", "Оцените от 0 до 2.\n0: плохо\n1: средне\n2: хорошо", (0, 1, 2)),
    ("a range of 0..1 over a flag", "Оцените от 0 до 1.\n0: нет\n1: да", (0, 1)),
    # A range sharing no level with the lines counts something else; the lines stand.
    ("a count in the preamble", "Ответ должен содержать от 3 до 5 пунктов.\n0: плохо\n1: средне\n2: хорошо", (0, 1, 2)),
    # A bare "N–M" is read only when it is the lines' own span: here it is no range of levels.
    ("a bare count in the preamble", "Нужно 3–4 предложения.\n0: плохо\n2: хорошо", (0, 2)),
    # Ranges inside a level's text are that level's text.
    ("a range inside a level's text", "0: много ошибок (от 3 до 5)\n1: мало ошибок\n2: нет ошибок", (0, 1, 2)),
    # No range stated: the lines are the levels, as written.
    ("lines not one apart, no range", "0: плохо\n\n2: средне\n\n5: отлично", (0, 2, 5)),
    # All levels on one line, after the range: read by the range, as before.
    ("the range and the levels on one line", "Шкала от 1 до 5: 1 — плохо, 5 — отлично", (1, 2, 3, 4, 5)),
]


@pytest.mark.parametrize("name,rubrics,levels", AGREEING, ids=[r[0] for r in AGREEING])
def test_lines_the_stated_range_does_not_contradict_read_as_before(name, rubrics, levels):
    """A range the lines fill, one about something else, or none at all leaves the lines' reading as it was."""
    assert scale_of(rubrics).levels == levels


CONTRADICTED = [
    # Level 0 stated by the range, not written: 0..2 or the flag 1/2?
    ("lines short of the range's low end", "Оцените от 0 до 2.\n1: средне\n2: хорошо"),
    # Anchors inside 1..10 that reach neither end: 1..10, or 2..9?
    ("anchors reaching neither end", "Score from 1 to 10.\n2: bad\n9: great"),
    # The range says 1..5, the lines 0..2.
    ("lines crossing the range", "Оцените от 1 до 5.\n0: плохо\n1: средне\n2: хорошо"),
    ("a scale range crossing the lines", "Оцените по шкале 1–5.\n0: плохо\n5: отлично"),
    # Aspects numbered "1." and "2." under a range: the two aspects read as the levels 1 and 2, a flag.
    ("numbered aspects under a range", "Оцените каждый пункт от 0 до 2:\n1. Полнота\n2. Точность"),
    # Written from best to worst: "от 5 до 1" reads nowhere as a range (a range alone is refused too).
    ("a range written downward", "Оцените от 5 до 1.\n1: плохо\n5: отлично"),
]


@pytest.mark.parametrize("name,rubrics", CONTRADICTED, ids=[r[0] for r in CONTRADICTED])
def test_a_stated_range_the_lines_contradict_is_refused_saying_why(name, rubrics):
    """Which of the two the scale is cannot be told: the error quotes the range and the levels, and says how to write
    it (judge-serve's 400 names the criterion's ``rubrics``)."""
    with pytest.raises(ScaleError, match=r"states the range .* before its level lines"):
        scale_of(rubrics)


def test_judge_serve_refuses_a_contradicted_range_naming_the_criterion():
    """A custom criterion with such a rubric is a 400 naming items[0].criteria[0].rubrics, before any judge runs."""
    from serve.schema import RequestError, parse_judge_request, resolve_criteria

    request = parse_judge_request({"items": [{"instruction": "Напиши стих", "answer": "Роза красная",
                                              "criteria": [{"name": "Своя", "rubrics": "Оцените от 0 до 2.\n1: a\n2: b"}]}]})
    with pytest.raises(RequestError, match="states the range 0..2") as err:
        resolve_criteria(request.items[0], 0)
    assert err.value.param == "items[0].criteria[0].rubrics"


def test_a_range_alone_in_the_new_wordings_is_read():
    """"on a scale of 1 to 10" and "по шкале 1–5" with no level lines read as their ranges (they found no scale)."""
    assert scale_of("Rate the answer on a scale of 1 to 10.") == Scale.range(1, 10)
    assert scale_of("Оцените ответ по шкале 1–5.") == Scale.range(1, 5)
    assert scale_of("Оцените от \u22121 до 1.") == Scale.range(-1, 1)
    # "−1–2 балла": the minus was dropped, reading 1..2 (a flag)
    assert scale_of("Оценка: \u22121–2 балла.") == Scale.range(-1, 2)

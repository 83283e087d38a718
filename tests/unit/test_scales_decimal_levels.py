"""A rubric text whose level lines include a decimal ("0.5:", "0,5:", "2.5 —") is refused, as the rubric mapping's
``{"0.5": ...}`` is, with the same words: read as text, the decimal line would join the level above it, and
"0 / 0,5 / 1" would be the flag {0, 1} whose every 0.5 verdict fails. Outline numbering under a level ("2.1.",
"1.1:", a dot-written run counted from 1) is that level's text."""

import pytest

from judge import ScaleError, scale_of

DECIMAL = [
    ("a '.' decimal between levels", "0: плохо\n\n0.5: средне\n\n1: хорошо", "0.5"),
    ("a ',' decimal between levels", "0: нет\n\n0,5: частично\n\n1: да", "0,5"),
    ("a decimal between wider levels", "0: a\n\n2.5: b\n\n5: c", "2.5"),
    ("a dash separator", "0 - плохо\n0.5 - средне\n1 - хорошо", "0.5"),
    ("a bulleted decimal", "- 0: нет\n- 0.5: частично\n- 1: да", "0.5"),
    ("a decimal after the last level", "0: нет\n1: да\n1.5: с запасом", "1.5"),
    ("a decimal before the first level", "0.5: мало\n1: средне\n2: много", "0.5"),
    ("a negative decimal", "-1: хуже\n-0.5: чуть хуже\n0: равны", "-0.5"),
    # "N." levels: a decimal of theirs is refused as the other kinds' is
    ("a '.' decimal among 'N.' levels", "0. нет\n0.5. частично\n1. да", "0.5"),
    ("a ',' decimal among 'N.' levels", "0. нет\n0,5. частично\n1. да", "0,5"),
    # counted from 1 an outline would have "1.1" first; a comma is never outline numbering
    ("a run not counted from 1", "1: a\n1.2: b\n2: c", "1.2"),
    ("a ',' decimal after a run", "1: a\n1.1: b\n1,5: c\n2: d", "1,5"),
]


@pytest.mark.parametrize("name,rubrics,written", DECIMAL, ids=[row[0] for row in DECIMAL])
def test_a_decimal_level_line_is_refused_as_the_mapping_refuses_it(name, rubrics, written):
    with pytest.raises(ScaleError) as raised:
        scale_of(rubrics)
    assert str(raised.value) == f"rubric level {written!r} is not an integer (ASCII digits, an optional sign)"


def test_the_text_and_the_mapping_give_one_refusal():
    with pytest.raises(ScaleError) as text:
        scale_of("0: a\n\n0.5: b\n\n1: c")
    with pytest.raises(ScaleError) as mapping:
        scale_of({"0": "a", "0.5": "b", "1": "c"})
    assert str(text.value) == str(mapping.value)


KEPT = [
    # A decimal inside a level's text, indented under its level or not opening its line, is that level's text.
    ("an indented decimal under a level", "0: нет\n1: да, например:\n   1.5: половина\n2: отлично", (0, 1, 2)),
    ("a decimal mid-line", "0: меньше 0.5: плохо\n1: больше", (0, 1)),
    # Numbers joined by a separator touching a digit are a range or a version, never a level.
    ("a decimal range", "0: плохо\n1: хорошо, например:\n0.5-1.5 балла", (0, 1)),
    ("a section number", "0: плохо\n1: хорошо\n1.5.2 раздел", (0, 1)),
    # A list of another kind ("N." under "N:") is text, as its integer lines are.
    ("a decimal of another separator kind", "0: нет\n1: да:\n1.5) подпункт", (0, 1)),
    # Outline numbering: a dot-written run under its level, counted from 1, is the level's text.
    ("an outline sub-item under 'N.' levels", "1. плохо\n2. хорошо\n2.1. подробности", (1, 2)),
    ("an outline sub-item under 'N:' levels", "1: плохо\n1.1: пример\n2: хорошо", (1, 2)),
    ("an outline run under 'N:' levels", "0: нет\n1: да\n1.1: первое\n1.2: второе\n1.3: третье\n2: вполне",
     (0, 1, 2)),
    ("outline runs under 'N.' levels", "1. плохо\n1.1. пример\n2. хорошо\n2.1. пример\n2.2. ещё", (1, 2)),
]


@pytest.mark.parametrize("name,rubrics,levels", KEPT, ids=[row[0] for row in KEPT])
def test_a_decimal_that_is_no_level_line_is_read_as_text(name, rubrics, levels):
    assert scale_of(rubrics).levels == levels


def test_a_reward_label_with_a_decimal_level_line_is_refused_by_the_label_check():
    """``judge-serve --check-labels`` (and ``/get_reward``, which checks a label alike) refuses the text form as it
    refuses the mapping form, naming the rubric."""
    from serve.config import ServeConfig
    from serve.rewards import label_problems

    def label(rubrics):
        return {"instruction": "Q", "criteria": [{"name": "Полнота", "rubrics": rubrics}]}

    said = list(label_problems([("text", label("0: нет\n\n0,5: частично\n\n1: да")),
                                ("mapping", label({"0": "нет", "0,5": "частично", "1": "да"})),
                                ("clean", label("0: нет\n\n1: да"))], ServeConfig(model="m")))
    assert len(said) == 2
    text, mapping = said
    assert text.startswith("text: ") and mapping.startswith("mapping: ")
    assert "rubric level '0,5' is not an integer (ASCII digits, an optional sign)" in text
    assert text.removeprefix("text: ") == mapping.removeprefix("mapping: ")

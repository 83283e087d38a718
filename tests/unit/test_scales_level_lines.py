"""Level lines the rubric reader misread: a "+1" level, a number pair ("10:00", "3-4") opening a line of a level's
text, and an invisible character before a level."""

import pytest

from judge import ScaleError, scale_of
from judge.scales import _LEVEL_LINE

MISREAD = [
    # "+1" was no level: the pairwise scale read as (-1, 0), a flag, on lines and on one line alike.
    ("a '+1' level", "-1: первый лучше\n0: равны\n+1: второй лучше", (-1, 0, 1)),
    ("a '+1' level on one line", "-1: первый лучше; 0: равны; +1: второй лучше", (-1, 0, 1)),
    ("'+' bullets", "+ 0: нет\n+ 1: да", (0, 1)),
    # A time opening a line of level 1's text read as level 10: (0, 1, 10), best 10.
    ("a time in a level's text", "0: нет\n1: да, например:\n10:00 — встреча", (0, 1)),
    # A range of counts opening a line of level 2's text read as level 3: (0, 1, 2, 3).
    ("a count range in a level's text", "0 - плохо\n1 - средне\n2 - хорошо, например:\n3-4 опечатки", (0, 1, 2)),
    ("an en-dash count range", "0 – плохо\n1 – хорошо, кроме:\n2–3 опечаток", (0, 1)),
    # A byte order mark or zero-width space before level 0 hid it: (1, 2), a flag.
    ("a byte order mark before level 0", "\ufeff0: плохо\n1: средне\n2: хорошо", (0, 1, 2)),
    ("zero-width spaces before levels", "\u200b0: плохо\n\u200b1: средне\n2: хорошо", (0, 1, 2)),
    ("a byte order mark before one line", "\ufeff0: плохо; 1: средне; 2: хорошо", (0, 1, 2)),
]


@pytest.mark.parametrize("name,rubrics,levels", MISREAD, ids=[r[0] for r in MISREAD])
def test_level_lines_read_as_written(name, rubrics, levels):
    """Each of these read a level too many or too few."""
    assert scale_of(rubrics).levels == levels


@pytest.mark.parametrize("line", ["10:00 встреча", "3-4 опечатки", "2–3 раза", "1.5: половина", "1)2"])
def test_a_number_pair_opens_no_level_line(line):
    """A separator touching the next digit joins two numbers (a time, a range, a decimal): no level opens there."""
    assert _LEVEL_LINE.match(line) is None


def test_a_number_pair_leaves_an_ambiguous_rubric_refused():
    """A line of level text that is a level after all still needs its separator: "0: / 1: / 1: / 2:" stays refused."""
    with pytest.raises(ScaleError, match="repeat or are out of order"):
        scale_of("0: плохо\n1: проблемы:\n1: a\n2: b\n2: хорошо")

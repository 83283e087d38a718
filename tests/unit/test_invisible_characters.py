"""Characters that show nothing (a left-to-right or right-to-left mark, a soft hyphen, a bidi embedding, a byte order
mark, a zero-width space) and the decomposed spelling of "й"/"ё" change no reading of a text that looks the same:

- the rubric reader (``judge.scale_of``) reads a level line however such a character opens it; before, a 0/1/2
  rubric with a left-to-right mark before level 1 read as the scale (0, 2), with no error;

Every expected value below is written by hand from the text shown.
"""

from __future__ import annotations

import unicodedata

import pytest

from judge import scale_of
from judge.plumbing.invisible_text import INVISIBLE, without_invisible

LRM, RLM, SHY, LRE, PDF, LRI, PDI, MVS = "\u200e", "\u200f", "\u00ad", "\u202a", "\u202c", "\u2066", "\u2069", "\u180e"
BOM, ZWSP = "\ufeff", "\u200b"

RUBRIC_LEVELS = [
    ("a left-to-right mark before level 1", f"0: плохо\n{LRM}1: средне\n2: хорошо", (0, 1, 2)),
    ("a left-to-right mark before level 0", f"{LRM}0: плохо\n1: средне\n2: хорошо", (0, 1, 2)),
    ("a right-to-left mark before level 2", f"0: плохо\n1: средне\n{RLM}2: хорошо", (0, 1, 2)),
    ("a soft hyphen before level 1", f"0: плохо\n{SHY}1: средне\n2: хорошо", (0, 1, 2)),
    ("a bidi embedding around level 2", f"0: плохо\n1: средне\n{LRE}2: хорошо{PDF}", (0, 1, 2)),
    ("a bidi isolate around every level", f"{LRI}0 — плохо{PDI}\n{LRI}1 — хорошо{PDI}", (0, 1)),
    ("a Mongolian vowel separator before level 2", f"0: плохо\n1: средне\n{MVS}2: хорошо", (0, 1, 2)),
    ("a left-to-right mark before a one-line rubric", f"{LRM}0: плохо; 1: средне; 2: хорошо", (0, 1, 2)),
    ("marks before an indented level", f"0: плохо\n {LRM} 1: средне\n2: хорошо", (0, 1, 2)),
]


@pytest.mark.parametrize("name,rubrics,levels", RUBRIC_LEVELS, ids=[r[0] for r in RUBRIC_LEVELS])
def test_an_invisible_character_before_a_level_hides_no_level(name, rubrics, levels):
    assert scale_of(rubrics).levels == levels


def test_the_invisible_characters_are_format_characters_that_show_nothing():
    """Every character the readers drop is a format character (Unicode category Cf), and the ones the findings name
    are among them."""
    assert all(unicodedata.category(ch) == "Cf" for ch in INVISIBLE)
    assert set(LRM + RLM + SHY + LRE + PDF + LRI + PDI + MVS + BOM + ZWSP) <= set(INVISIBLE)
    assert without_invisible(f"{BOM}При{SHY}вет{LRM}, {ZWSP}мир") == "Привет, мир"


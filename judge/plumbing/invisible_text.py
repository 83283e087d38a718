"""Characters that show nothing, as every reader that compares or parses human text drops them.

Text copied from web pages, word processors and right-to-left editors carries format characters (Unicode category
Cf) that render as nothing: a byte order mark, zero-width spaces and joiners, a soft hyphen, left-to-right and
right-to-left marks, bidi embeddings and isolates, tag characters. Two texts that differ only by them look identical
to the person who wrote them, and a pattern that does not expect them reads the text differently ("\\u200e1:
средне" is no level line to ``^\\s*\\d``). ``INVISIBLE`` lists them once, for the rubric reader (``judge.scales``),
the splits' instruction key (``judge.splits.instruction_text_key``), the labelled sets' near-duplicate check, the
taxonomy's name key and the rationale word count (``judge.verdicts.rationale_words``). The keys that also compose the
text (``composed_visible``) drop these characters first, so that one between a letter and its combining mark leaves
no letter decomposed. ``INVISIBLE`` holds every format character but those that print, Unicode's prepended
concatenation marks (the Arabic number signs U+0600-U+0605 and the like); ``tests/unit/test_invisible_characters.py``
holds it to Python's Unicode database.

A text is blank when it shows nothing: white space (``str.isspace``) and ``INVISIBLE`` characters only. ``is_blank``
says it of one text, ``BLANK_RE2`` of each text of an Arrow column (``pyarrow.compute.match_substring_regex``), so
that the record readers, row by row (``judge.records``) and column-wise (``judge.column_reader``), refuse the same
required texts and expert ids; ``tests/unit/test_blank_texts.py`` holds the two equal on every code point. Every other
reader of a required text says blank by ``is_blank`` too (pairwise data, ranking instructions and answers,
``criteria: auto`` rows, the synthetic stages, judge-serve's requests, a policy's answer:
``tests/unit/test_blank_required_texts.py``).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["BLANK_RE2", "INVISIBLE", "composed_visible", "is_blank", "without_invisible"]

#: Format characters that render as nothing: the soft hyphen, the Arabic letter mark, the Mongolian vowel separator,
#: the zero-width space, non-joiner and joiner, the left-to-right and right-to-left marks, the bidi embeddings,
#: overrides and isolates, the word joiner and invisible operators, the deprecated shaping controls, the byte order
#: mark (zero-width no-break space), the interlinear annotation controls, the Egyptian hieroglyph format controls
#: (U+13439-U+1343F are Unicode 15.0's), the shorthand format controls, the musical beam, tie, slur and phrase
#: controls, and the tag characters (which after a black flag spell a subdivision's flag, read here as the flag alone).
INVISIBLE = ("\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
             "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"
             "\ufff9\ufffa\ufffb" + "".join(map(chr, range(0x13430, 0x13440)))
             + "\U0001bca0\U0001bca1\U0001bca2\U0001bca3" + "".join(map(chr, range(0x1D173, 0x1D17B)))
             + "\U000e0001" + "".join(map(chr, range(0xE0020, 0xE0080))))

_INVISIBLE_RUN = re.compile(f"[{INVISIBLE}]+")
# Python's \s in a text pattern is str.isspace; a text that shows something fails at its first visible character
_BLANK_TEXT = re.compile(f"[\\s{INVISIBLE}]*")

#: ``is_blank`` in RE2, Arrow's regex syntax: the characters ``str.strip()`` removes (``str.isspace``: the ASCII
#: white space and separators, U+0085 and Unicode's separators, category Z) and ``INVISIBLE``, and nothing else.
BLANK_RE2 = (r"^[\t\n\x{0b}\x{0c}\r\x{1c}-\x{1f}\x{85}\p{Z}"
             + "".join(f"\\x{{{ord(c):04x}}}" for c in INVISIBLE) + "]*$")


def without_invisible(text: str) -> str:
    """``text`` with every ``INVISIBLE`` character removed."""
    return _INVISIBLE_RUN.sub("", text)


def composed_visible(text: str, form: str = "NFKC") -> str:
    """``text`` without its ``INVISIBLE`` characters, then normalised to Unicode ``form`` ("NFKC" or "NFC"), in that
    order: every invisible character is a starter (combining class 0), so one between a letter and its combining mark
    ("и" + U+00AD + U+0306) keeps the two apart when composing, and dropping it afterwards leaves the letter
    decomposed. No NFKC output holds an ``INVISIBLE`` character, so nothing is left to drop after."""
    return unicodedata.normalize(form, without_invisible(text))


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: it holds only white space and ``INVISIBLE`` characters (or nothing)."""
    stripped = text.strip()  # most texts end here, at a visible first character
    return not stripped or (stripped[0] in INVISIBLE and _BLANK_TEXT.fullmatch(stripped) is not None)

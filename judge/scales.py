"""Rubric scales: which scores a criterion allows.

A POLLUX rubric arrives in several shapes: text with one line per level (``0: ...``, ``1 - ...``,
``2 — ...``), among which a level's own text may hold numbered lines that are no levels (``1) зацикливание``), all
levels on one line (``0: плохо; 1: средне; 2: хорошо``), text that states a range in words (``от 0 до 2``,
``from 1 to 10``), alone or before level lines that write only its ends (``Оцените от 1 до 5.`` then ``1: плохо``
and ``5: отлично``: the scale 1..5), or a mapping from level to description, possibly nested by language (``{"ru":
{"0": ...}, "en": {...}}``). ``scale_of`` reads all of them into one ``Scale``.

Why one module of ~590 lines: every shape above is read with one set of level patterns and refused in one wording
(a level that is no integer reads alike from a mapping's key and a text's line), and the panel-mode helpers at the
end are the few lines that other modules share with the scale; split, the patterns and the refusals would drift
apart between the readers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from judge.plumbing.invisible_text import without_invisible
from judge.plumbing.json_reading import value_words

__all__ = ["Scale", "ScaleError", "scale_of", "has_unique_mode", "unique_mode_mask", "MAX_LEVELS", "MAX_LEVEL_DIGITS",
           "PAIRWISE_SCALE", "pairwise_scale_error", "foreign_digit", "level_of_key"]

#: Most levels a scale may have. POLLUX's criteria have 2 or 3 (arXiv 2505.24616v3, Section 2.2); 101 still takes a 0..100 rubric.
#: A rubric text costs nothing to write ("от 0 до 10000000") but every level is kept and echoed in each result,
#: so judge-serve refuses more (a tiny body must not buy unbounded work).
MAX_LEVELS = 101
#: Most digits a level may be written with (beyond, Python's int() is slow, then refuses at 4,300 digits).
MAX_LEVEL_DIGITS = 6


class ScaleError(ValueError):
    """A rubric from which no scale can be read."""


@dataclass(frozen=True)
class Scale:
    """The scores a criterion allows, and which end of them is best.

    Attributes:
        levels: the allowed integer levels, ascending (``(0, 1, 2)`` for the usual POLLUX criterion); a list or
            range given is kept as a tuple.
        best: the level that means "nothing to fault"; the highest level unless given (None). It is one end of the
            scale: a rubric runs from worst to best or from best to worst. Rubric text says nothing about its
            orientation, so the POLLUX taxonomy decides for its criteria and ``judge.taxonomy.oriented_scale``
            states the rule for custom ones (best at the top, as the paper's 0/1/2 "inadequate / acceptable /
            excellent", paper Section 2.2; the two Critical criteria are yes/no questions about a violation, best at 0,
            Appendix P.1).
    """

    levels: tuple[int, ...]
    best: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.levels, tuple) and isinstance(self.levels, Iterable) and not isinstance(self.levels, str):
            # a list or range of levels (a JudgeResult's scale is a list) is the tuple the field is typed as: it was
            # refused as "not distinct and ascending", which it was
            object.__setattr__(self, "levels", tuple(self.levels))
        if not self.levels:
            raise ScaleError("a scale needs at least one level")
        if tuple(sorted(set(self.levels))) != self.levels:
            raise ScaleError(f"scale levels must be distinct and ascending, got {self.levels}")
        if self.best is None:
            object.__setattr__(self, "best", self.levels[-1])
        elif self.best not in (self.levels[0], self.levels[-1]):
            raise ScaleError(f"the best level must be an end of the scale {self.levels}, got {self.best}")

    @property
    def worst(self) -> int:
        """The level at the other end from ``best``."""
        return self.levels[0] if self.best == self.levels[-1] else self.levels[-1]

    @property
    def is_flag(self) -> bool:
        """Whether the rubric is a yes/no question: exactly two levels; which answer is the good one is ``best``.

        POLLUX's oldest ``src/metrics.py`` (commit 2e8eb789) called such a rubric binary; since commit 83f6eb6b its
        ``is_binary_scale`` does so only for the levels {0, 1}: ``is_binary``."""
        return len(self.levels) == 2

    @property
    def is_binary(self) -> bool:
        """POLLUX's binary criterion (``src/utils/score_utils.py`` ``is_binary_scale``, used by ``src/metrics.py``):
        levels exactly {0, 1}. The gate of the benchmark matrix (``eval.ranking.matrix``) and of the rewards
        (``judge.rewards``); every two-level rubric of the taxonomy is one."""
        return self.levels == (0, 1)

    def is_level(self, score: float) -> bool:
        """Whether ``score`` is one of the scale's levels: what a judge's verdict and a training target must be
        ("the score must correspond to a single scale point", the judge prompt); ``contains`` also admits a
        regression head's 1.4."""
        return score in self.levels

    def is_best(self, score: float) -> bool:
        """Whether ``score`` is the scale's best level (a perfect verdict)."""
        return score == self.best

    def best_at_lowest(self) -> Scale:
        """The same levels with the lowest one best (a yes/no question about a defect)."""
        return Scale(self.levels, best=self.levels[0])

    @property
    def min(self) -> int:
        return self.levels[0]

    @property
    def max(self) -> int:
        return self.levels[-1]

    def contains(self, score: float) -> bool:
        """Whether ``score`` lies within the scale's range (inclusive).

        Real-valued scores between levels (a regression head's 1.4) are inside the scale; only scores beyond the
        lowest or highest level are outside it.
        """
        return self.min <= score <= self.max

    @classmethod
    def range(cls, low: int, high: int) -> Scale:
        """The scale with every integer level from ``low`` to ``high``."""
        if high < low:
            raise ScaleError(f"empty range {low}..{high}")
        if high - low + 1 > MAX_LEVELS:
            raise ScaleError(f"the range {low}..{high} has {high - low + 1} levels; a scale has at most {MAX_LEVELS}")
        return cls(tuple(range(low, high + 1)))


def _line_pattern(number: str) -> re.Pattern[str]:
    """A level line whose number, after any sign, is ``number`` (a regular expression)."""
    return re.compile(r"^(\s*+)(?:[-–—+]\s++|[*•]\s*+)?\**+\s*+((?:[-–—+]|\u2212\s*+)?"
                      + number + r")\s*+\**+\s*+(:|-|–|—|\.|\))(?!\d)")


# A level-like line: optional bullet/emphasis, an integer (possibly signed), then a separator: a colon, a dash
# (hyphen, en or em dash), a full stop or a closing parenthesis. "2024 год" must not count, hence the required
# separator; a separator touching a digit joins two numbers ("10:00", "3-4 опечатки", "1.5"), which is text, never a
# level (a time opening a line of a level's text read as level 10). A bullet needs a space after it, so that "-1:
# ..." reads as level -1 and "- 1: ..." (or "– 1: ...", "+ 1: ...") as a bulleted level 1 ("•1" and "*1" are never
# negative, so those bullets may touch the number). "+1" is level 1 (a pairwise "-1 / 0 / +1" lost its top level).
# The minus may be the typographic one (U+2212, as a judge may also write it: judge.verdicts' integer reading takes
# it as a minus; the tagged one reads POLLUX's number and counts it a failure), and then may stand apart from its
# digits; a hyphen or dash touching the digits is a sign unless the whole list has
# one (see _level_list). Which of these lines are the rubric's levels, and which a list inside a level's text, is
# decided by _level_list, not by this pattern.
# Possessive (``*+``): with plain ``\s*`` runs side by side, a line of spaces without a digit backtracked in
# quadratic time (8,000 spaces: 1.75 s, holding the GIL), and a rubric is a client's text. No match changes: each
# run is followed by something it cannot consume.
_LEVEL_LINE = _line_pattern(r"\d+")
# A line written as a level line but with a decimal number ("0.5: частично", "0,5 - частично"): no level, and read as
# text it would join the level above it (_refuse_decimal_levels). The separator may not touch a digit, so a range
# ("0.5-1.5 балла") or a three-part section number ("1.5.2 раздел") is text. A two-part one ("2.1. подробности",
# "1.1: пример") matches: _refuse_decimal_levels tells it by its run, counted from 1.
_DECIMAL_LEVEL_LINE = _line_pattern(r"\d++[.,]\d++")
# A level's separator, by kind: lines of one kind make one list.
_SEPARATOR_KIND = {":": "N:", "-": "N -", "–": "N -", "—": "N -", ".": "N.", ")": "N)"}
# "N:" and "N -" are how rubrics write their levels (the taxonomy's are all "N: ..."); "N." and "N)" are also how
# prose numbers its lists: a preamble ("1. Прочитайте ответ") or a list inside a level ("1) зацикливание").
_STRONG_KINDS = ("N:", "N -")
# One line holding every level, "0: плохо; 1: средне; 2: хорошо" (POLLUX's count_rubric_levels, r"(\d+)\s*:",
# reads that too): a level opens the line, and each next one follows a ";", "," or "."; a separator touching a digit
# joins two numbers, as on a level line ("в срок, 2:30 максимум" is a time, not a level 2).
_ONE_LINE_LEVEL = re.compile(r"(?:^|[;,.])\s*+((?:[-+]|\u2212\s*+)?\d+)\s*+(:|–|—)(?!\d)")
_LAYOUT = ('write one level a line ("0: ...", "1 — ...", "- 2: ...", each level written the same way), or state a '
           'range ("от 0 до 2", "from 1 to 10")')
# Ranges in words: "от 0 до 2", "from 1 to 10", "0–2 балла", "between 0 and 3", "по шкале 1–5", "on a scale of 1 to
# 10". Read with the typographic minus made a hyphen, so "от −2 до 2" is -2..2 (it found no range) and "−1–2 балла"
# is -1..2 (it was 1..2).
_RANGE_WORDS = (
    re.compile(r"\bот\s+(-?\d+)\s+до\s+(-?\d+)", re.IGNORECASE),
    re.compile(r"\bfrom\s+(-?\d+)\s+to\s+(-?\d+)", re.IGNORECASE),
    re.compile(r"\bbetween\s+(-?\d+)\s+and\s+(-?\d+)", re.IGNORECASE),
    re.compile(r"(?<![\d.,])(-?\d+)\s*(?:–|—|-|\.\.)\s*(-?\d+)\s*(?:балл|points?\b)", re.IGNORECASE),
    re.compile(r"\bшкал\w*\s+(-?\d+)\s*+(?:–|—|-|\.\.)\s*+(-?\d+)(?![.,]?\d)", re.IGNORECASE),
    re.compile(r"\bscale\s+(?:of\s+)?(-?\d+)(?:\s*+(?:–|—|-|\.\.)\s*+|\s+to\s+)(-?\d+)(?![.,]?\d)", re.IGNORECASE),
)
_LANGUAGES = ("ru", "en")


def foreign_digit(text: str) -> str | None:
    """The first decimal digit in ``text`` outside ASCII (fullwidth "２", Arabic-Indic "١", mathematical bold "𝟐"),
    else None: Python's ``\\d``, ``int()`` and ``float()`` read any script's digits, and neither a rubric's level
    nor a verdict's score is read from them (``_ascii_level`` here, ``judge.verdicts`` for a score)."""
    return next((char for char in text if char.isdecimal() and not char.isascii()), None)


def _ascii_level(written: str) -> None:
    """Refuses a level written with a decimal digit outside ASCII ("٢", fullwidth "２"), which ``\\d`` and ``int()``
    read: the judge is shown the level as written, and a verdict in such digits is a ``no_score`` failure
    (``judge.verdicts``), so a scale read from them would name levels its judge cannot answer with."""
    char = foreign_digit(written)
    if char is not None:
        raise ScaleError(f"rubric level {written[:20]!r} is written with U+{ord(char):04X}, a digit outside ASCII: "
                         "write the levels in ASCII digits")


def _level(written: str) -> int:
    """A level as written, within ``MAX_LEVEL_DIGITS`` (checked before ``int()`` is asked to read it), in ASCII digits
    (``_ascii_level``)."""
    _ascii_level(written)
    if len(written.lstrip("+-")) > MAX_LEVEL_DIGITS:
        raise ScaleError(f"rubric level {written[:20]!r}... has more than {MAX_LEVEL_DIGITS} digits")
    return int(written)


def _not_an_integer(written: str) -> ScaleError:
    """The refusal of a level that is no integer, one wording for a rubric mapping's key and a rubric text's line."""
    return ScaleError(f"rubric level {written[:20]!r} is not an integer (ASCII digits, an optional sign)")


def _capped(levels) -> tuple[int, ...]:
    distinct = tuple(sorted(set(levels)))
    if len(distinct) > MAX_LEVELS:
        raise ScaleError(f"the rubric has {len(distinct)} levels; a scale has at most {MAX_LEVELS}")
    return distinct


def _rubric_scale(levels: tuple[int, ...], rubrics) -> Scale:
    """The scale a rubric states, which must offer a choice: one level ("от 2 до 2", ``{"1": "ok"}``) leaves a judge
    nothing to decide and a reward nothing to normalise by (``judge.rewards.normalised`` raises on it), so it is
    refused here, where every rubric a client or a data file gives is read, and never reaches a judge (every
    criterion of the released taxonomy has two levels or more). ``Scale`` itself still takes one level: code may
    build one on purpose."""
    if len(levels) < 2:
        shown = f"{rubrics[:80]!r}" if isinstance(rubrics, str) else "the mapping"
        raise ScaleError(f"a rubric needs at least two levels; {shown} gives only {list(levels)}")
    return Scale(levels)


def level_of_key(key) -> int | None:
    """The level ``scale_of`` reads from a rubric mapping's key (spaces around it, a plus, the typographic minus
    U+2212 as "-"), or None for a key it refuses as no level: not an integer in ASCII digits, or one of more than
    ``MAX_LEVEL_DIGITS`` digits."""
    try:
        return _key_level(key)
    except ScaleError:
        return None


def _key_level(key) -> int:
    """``level_of_key``, raising the refusal ``scale_of`` gives for a key that names no level."""
    # the typographic minus, as in level lines; a character that shows nothing, as anywhere in a rubric text
    written = without_invisible(str(key)).strip().replace("\u2212", "-")
    if not re.fullmatch(r"[+-]?[0-9]+", written):
        raise _not_an_integer(written)
    return _level(written)


def _levels_from_keys(keys) -> tuple[int, ...]:
    """The levels of a rubric mapping's keys, each an integer in ASCII digits, no two naming one level.

    "0" and "00" (or "1" and "+1", " 0" and "0") are one level with two descriptions, which the judge would be shown
    both of: refused, as a rubric text repeating a level is (``_level_values``). Digits other than ASCII ones (the
    Arabic-Indic "\u0660", which ``int()`` reads as 0) are no level: the judge is shown the key as written and answers
    in ASCII digits.
    """
    keys_of: dict[int, str] = {}
    for key in keys:
        level = _key_level(key)
        if level in keys_of:
            raise ScaleError(f"rubric levels {keys_of[level][:20]!r} and {str(key)[:20]!r} are both level {level}: "
                             "give each level one key")
        keys_of[level] = str(key)
    return _capped(keys_of)


@dataclass(frozen=True)
class _Line:
    """A level-like line of a rubric text (``_LEVEL_LINE``, or ``_DECIMAL_LEVEL_LINE`` for one with a decimal)."""

    index: int  # its line number
    indent: int  # its leading whitespace, tabs as 4
    number: str  # as written, any minus as "-"
    dash_sign: bool  # written with a hyphen or dash touching the digits: a sign, or a bullet (see _level_values)
    kind: str  # its separator's kind (_SEPARATOR_KIND)


def _level_like_lines(text: str) -> tuple[list[_Line], list[_Line]]:
    """(the lines written as integer level lines, ``_LEVEL_LINE``; those written as level lines with a decimal
    number, ``_DECIMAL_LEVEL_LINE``), in one pass over ``text``: a line cannot be both, since a decimal's separator
    touches a digit."""
    lines: list[_Line] = []
    decimals: list[_Line] = []
    for index, line in enumerate(text.splitlines()):
        match = _LEVEL_LINE.match(line)
        found = lines
        if match is None:
            match, found = _DECIMAL_LEVEL_LINE.match(line), decimals
        if match:
            written = match.group(2)
            signed = written[0] in "-–—\u2212"
            number = "-" + written[1:].lstrip() if signed else written
            indent = len(match.group(1).expandtabs(4))
            found.append(_Line(index, indent, number, signed and written[0] != "\u2212", _SEPARATOR_KIND[match.group(3)]))
    return lines, decimals


def _refuse_decimal_levels(lines: list[_Line], decimals: list[_Line]) -> None:
    """Refuses a decimal written as a level line ("0.5: частично" among "0: / 1:"), as a rubric mapping's key "0.5"
    is refused: a level is an integer, and read as text the line would join the level above it ("0 / 0,5 / 1" read as
    the flag {0, 1}, whose every 0.5 verdict fails). Only a line of a separator kind the integer level lines use, and
    not indented deeper than they are, counts: deeper, or of another kind, it is a level's text. Nor does outline
    numbering, unsigned and dot-written, "A.B" whose run "A.1" to "A.B" the text numbers ("2.1. подробности",
    "1.1: пример" under level 1): a sub-item is counted from 1, where a decimal level ("0.5", "1.5") halves the step
    between two levels, and a comma ("0,5") writes a decimal only. A scale in tenths written with dots ("0.1:" to
    "0.9:" between "0:" and "1:") reads as such a run, its lines the text of level 0.

    Raises:
        ScaleError: naming the decimal as written.
    """
    outer: dict[str, int] = {}
    for line in lines:
        outer[line.kind] = min(outer.get(line.kind, line.indent), line.indent)
    outline = _outline_numbers({line.number for line in decimals})
    for line in decimals:
        if line.kind in outer and line.indent <= outer[line.kind] and line.number not in outline:
            raise _not_an_integer(line.number)


def _outline_numbers(numbers: set[str]) -> set[str]:
    """Of ``numbers`` (the text's decimal-shaped line numbers, as written), those that number sub-items: unsigned,
    dot-written "A.B", with "A.1" to "A.B" all written (a sub-item is counted from 1)."""
    parts: dict[str, set[str]] = {}
    for written in numbers:
        head, dot, part = written.partition(".")
        if dot and head.isascii() and head.isdigit():
            parts.setdefault(head, set()).add(part)
    outline = set()
    for head, written_parts in parts.items():
        k = 1  # "A.3" numbers a sub-item only after "A.1" and "A.2"; counted as text, so no part is too long
        while str(k) in written_parts:
            outline.add(f"{head}.{k}")
            k += 1
    return outline


def _kinds(kinds) -> str:
    return ", ".join(f'"{kind} ..."' for kind in kinds)


def _outranks(kind: str, lines: list[_Line], other_kind: str, other: list[_Line]) -> bool:
    """Whether the list ``lines`` rather than ``other`` (another kind) is the rubric's levels: ``other`` lies between
    its first and last line (a list inside one of its levels' text), or the two lists are apart (one a preamble or a
    note) and only ``kind`` is a level kind ("N:", "N -")."""
    first, last, other_first, other_last = lines[0].index, lines[-1].index, other[0].index, other[-1].index
    if first < other_first and other_last < last:
        return True
    if last < other_first or other_last < first:
        return kind in _STRONG_KINDS and other_kind not in _STRONG_KINDS
    return False


def _monotone(values: list[int]) -> bool:
    steps = [b - a for a, b in zip(values, values[1:])]
    return all(step > 0 for step in steps) or all(step < 0 for step in steps)


def _level_values(lines: list[_Line]) -> tuple[list[int], int]:
    """The levels of one list of level lines, in their order, which must run one way (up or down), and the line
    number of the first of them (what precedes it is the rubric's preamble).

    A list every line of which touches a hyphen or dash ("-0: / -1: / -2:", "-1: / -2: / -3:") uses it as a bullet:
    nobody writes a level "-0", nor a scale wholly below zero. The typographic minus (U+2212) is never a bullet.
    """
    bullets = all(line.dash_sign for line in lines)
    values = [_level(line.number.lstrip("-") if bullets else line.number) for line in lines]
    if _monotone(values):
        return values, lines[0].index
    # A list written like the levels but indented under one of them is that level's text: the outermost lines are
    # the levels, when they alone run one way.
    outer = min(line.indent for line in lines)
    kept = [(value, line.index) for value, line in zip(values, lines) if line.indent == outer]
    if 2 <= len(kept) < len(values) and _monotone([value for value, _ in kept]):
        return [value for value, _ in kept], kept[0][1]
    shown = ", ".join(map(str, values[:12])) + (", ..." if len(values) > 12 else "")
    raise ScaleError(
        f"the rubric's level lines ({shown}) repeat or are out of order: a numbered list inside a level's text, written "
        f'like the levels ("{lines[0].kind} ..."), restarts their numbering; write that list another way ("1)" under '
        '"1:") or indent it under its level'
    )


def _level_list(text: str) -> tuple[list[int], int] | None:
    """The levels of a rubric written one a line and the line number of the first, or None when it has no list of
    two level lines of one kind.

    Only the rubric's own level lines count, never a numbered line of a level's text. The levels are one list whose
    lines share a separator kind ("0: / 1: / 2:"; "0 - / 1 – / 2 —" are one kind). Numbered lines of another kind
    are text: a list inside a level ("1: есть проблемы:" then "1. нет плана", "2. нет вывода"), a preamble or a note
    ("1. Прочитайте ответ"). When two kinds each make a list, the levels are the list the other lies inside, or, when
    they are apart, the one written "N:" or "N -" (how rubrics write levels) rather than "N." or "N)" (how prose
    numbers a list); anything else is ambiguous and refused. A level far from the others (a line "2024: год
    выпуска" after "0: / 1:") is refused: the levels may span at most ``MAX_LEVELS`` points.

    Raises:
        ScaleError: naming why, when which lines are the levels is unclear.
    """
    by_kind: dict[str, list[_Line]] = {}
    level_like, decimals = _level_like_lines(text)
    _refuse_decimal_levels(level_like, decimals)
    for line in level_like:
        by_kind.setdefault(line.kind, []).append(line)
    lists = {kind: lines for kind, lines in by_kind.items() if len(lines) >= 2}
    if not lists:
        return None
    chosen = [kind for kind in lists
              if all(_outranks(kind, lists[kind], other, lists[other]) for other in lists if other != kind)]
    if len(chosen) != 1:
        raise ScaleError(
            f"the rubric has numbered lists written {_kinds(lists)}, none inside a level of another, so which are its "
            f"levels is unclear: {_LAYOUT}, and number any other list another way"
        )
    values, first = _level_values(lists[chosen[0]])
    low, high = min(values), max(values)
    if high - low + 1 > MAX_LEVELS:
        shown = ", ".join(map(str, values[:12])) + (", ..." if len(values) > 12 else "")
        raise ScaleError(
            f"the rubric's levels ({shown}) span {high - low + 1} points, a scale at most {MAX_LEVELS}: a line of a "
            "level's text that opens with a number and a separator (\"2024: ...\") reads as a level; reword it"
        )
    return values, first


def _ranges_in(text: str, pattern: re.Pattern):
    """Each range ``pattern`` finds in ``text`` (the typographic minus read as a hyphen), as it is found: (low, high)
    as written, and the words that state it. A number past ``MAX_LEVEL_DIGITS`` is no level, and its range no range
    of levels."""
    for match in pattern.finditer(text.replace("\u2212", "-")):
        low, high = match.group(1), match.group(2)
        _ascii_level(low)
        _ascii_level(high)
        if max(len(low.lstrip("-")), len(high.lstrip("-"))) <= MAX_LEVEL_DIGITS:
            yield (int(low), int(high)), match.group(0)


def _within_stated_range(levels: tuple[int, ...], preamble: str) -> tuple[int, ...]:
    """The scale of level lines under the range the rubric states before them, if any.

    A stated range whose ends are the first and last level is the scale ("Оцените от 1 до 5." then "1: плохо" and "5:
    отлично" is 1..5: the lines describe its ends, as anchors do; read alone they made a yes/no flag). A range
    stated in words (``_RANGE_WORDS``) that shares a level with the lines but has other ends contradicts them ("от 0
    до 2" over "1: / 2:": is level 0 a score?) and is refused; one that shares none counts something else ("от 3 до 5
    пунктов" over "0: / 1: / 2:"), as may two numbers joined by a dash ("(1-5)"), which are therefore read only as the
    lines' own span. Only the preamble is read: a range inside a level's text ("0: от 3 до 5 ошибок") is that
    level's text.

    Raises:
        ScaleError: a stated range the lines contradict, quoting both.
    """
    span = (levels[0], levels[-1])
    # The span written bare, its numbers whole ("1-5", not "-1-5", "11-5" or "1-5.5").
    bare = re.compile(rf"(?<![\d.,-]){span[0]}\s*+(?:–|—|-|\.\.)\s*+{span[1]}(?![.,]?\d)")
    if bare.search(preamble.replace("\u2212", "-")) or any(
            pair == span for pattern in _RANGE_WORDS for pair, _ in _ranges_in(preamble, pattern)):
        return Scale.range(*span).levels
    for pattern in _RANGE_WORDS:
        for pair, words in _ranges_in(preamble, pattern):
            low, high = sorted(pair)  # "от 5 до 1" over "1: / 5:" is no range (alone it is refused): it contradicts
            if low <= span[1] and span[0] <= high:
                raise ScaleError(
                    f"the rubric states the range {pair[0]}..{pair[1]} ({words.strip()!r}) before its level lines, "
                    f"which are {', '.join(map(str, levels))}: which is its scale is unclear; list every level, or "
                    "state the range and write its lowest and highest levels as lines"
                )
    return levels


def _one_line_levels(text: str) -> list[int] | None:
    """The levels of a rubric written on one line, "0: плохо; 1: средне; 2: хорошо", or None: a level opens the
    line, each next one follows a ";", "," or ".", all share one separator kind and they run by one step up or down
    (so that a number inside a level's text cannot pass for a level)."""
    line = text.strip()
    if "\n" in line or "\r" in line:
        return None
    found = list(_ONE_LINE_LEVEL.finditer(line))
    if len(found) < 2 or found[0].start() != 0 or len({_SEPARATOR_KIND[m.group(2)] for m in found}) != 1:
        return None
    values = [_level("-" + m.group(1)[1:].lstrip() if m.group(1)[0] in "-\u2212" else m.group(1)) for m in found]
    steps = {b - a for a, b in zip(values, values[1:])}
    return values if steps in ({1}, {-1}) else None


def scale_of(rubrics: str | Mapping) -> Scale:
    """Read the allowed scores from a rubric.

    Args:
        rubrics: rubric text (one line per level, each written alike, ``_level_list`` says which lines are levels,
            after a preamble that may state their range, ``_within_stated_range``; all levels on one line, ``"0:
            плохо; 1: средне; 2: хорошо"``; or a range stated in words, Russian or English), or a mapping from level to description, possibly nested by language (``{"ru": {...}, "en":
            {...}}``; when the languages disagree, Russian wins, as the prompt is Russian).

    Returns:
        The ``Scale``.

    Raises:
        ScaleError: when no scale can be read, which lines are the levels is unclear (the message says why and
            which layouts are read), a range stated before them contradicts them, a level line is written as a
            decimal ("0.5: ..."), or the scale has fewer than two levels ("от 2 до 2"), more than ``MAX_LEVELS``
            levels (or levels spanning more points) or a level written with more than ``MAX_LEVEL_DIGITS`` digits.
    """
    if isinstance(rubrics, Mapping):
        if not rubrics:
            raise ScaleError("empty rubric mapping")
        nested = [lang for lang in _LANGUAGES if isinstance(rubrics.get(lang), Mapping)]
        keys = rubrics[nested[0]].keys() if nested else rubrics.keys()
        return _rubric_scale(_levels_from_keys(keys), rubrics)
    if not isinstance(rubrics, str):
        raise ScaleError(f"rubrics must be text or a mapping, got {value_words(rubrics)}")
    # What shows nothing says nothing of the levels, wherever it stands: after a one-line rubric's ";" or inside
    # "от 0 до 2" it would hide a level or the range.
    rubrics = without_invisible(rubrics)

    listed = _level_list(rubrics)
    if listed is not None:
        levels, first = listed
        return Scale(_within_stated_range(_capped(levels), "\n".join(rubrics.splitlines()[:first])))
    levels = _one_line_levels(rubrics)
    if levels is not None:
        return Scale(_capped(levels))
    for pattern in _RANGE_WORDS:
        match = pattern.search(rubrics.replace("\u2212", "-"))
        if match:
            return _rubric_scale(Scale.range(_level(match.group(1)), _level(match.group(2))).levels, rubrics)
    kinds = {line.kind: None for line in _level_like_lines(rubrics)[0]}
    if len(kinds) > 1:  # "0: плохо" then "1 — хорошо": one level line of each kind
        raise ScaleError(f"the rubric's level lines are written in different ways ({_kinds(kinds)}): {_LAYOUT}")
    raise ScaleError(f"no scale found in rubric text {rubrics[:80]!r}: {_LAYOUT}")


def unique_mode_mask(counts):
    """Per row of a count matrix (items x score levels: how many experts gave each level), whether one level is
    more frequent than every other, so that the panel's mode is its reference. A row of zeros (no scores) has none,
    as a tie for the largest count has none; a mode-based MAE leaves such an item out (POLLUX, Appendix D.2.1).

    The one home of the rule: ``has_unique_mode`` (one panel) and ``eval.scoring.metrics.expert_mode`` (a whole
    table, vectorised) both call it.

    Returns:
        a boolean numpy array, one value per row.
    """
    import numpy as np  # here, not at import: the rubric parsing above needs no numpy

    counts = np.asarray(counts)
    if counts.ndim != 2:
        raise ValueError(f"counts: expected items x levels, got shape {counts.shape}")
    top = counts.max(axis=1, initial=0)
    return (top > 0) & ((counts == top[:, None]).sum(axis=1) == 1)


def has_unique_mode(scores) -> bool:
    """Whether one score of an expert panel is more frequent than every other (``unique_mode_mask``'s rule): the
    panel's mode is its reference. An empty panel has none."""
    from collections import Counter

    return bool(unique_mode_mask([list(Counter(scores).values())])[0])


#: The pairwise comparison scale: -1 the first answer is better, 0 a tie, 1 the second (ai-forever/POLLUX
#: ``demo/serve_pollux_demo.py``, lines 77-78). judge-serve's pairwise jobs and judge-eval's pairwise reader both
#: read verdicts on it.
PAIRWISE_SCALE = Scale((-1, 0, 1))


def pairwise_scale_error(rubrics: str) -> str | None:
    """Why a pairwise comparison scale's text cannot be judged on ``PAIRWISE_SCALE``, or None when it can.

    A pairwise verdict is read on -1, 0, 1 whatever the text says; a text whose level lines, or range, read as another
    scale (``1: первый лучше`` / ``2: одинаково`` / ``3: второй лучше``) would have its judge's "1" (answer 1 better,
    as it was shown) read as answer 2 better. -1/0/1 and -1/1 (no tie) mean on the wire what they meant as shown. A
    text ``scale_of`` cannot read is taken as it is when it has no level lines (a scale in prose) or has a -1 line (the
    comparison's levels after a criterion's own); else its level lines state another scale, refused with the reader's
    words.
    """
    try:
        levels = scale_of(rubrics).levels
    except ScaleError as err:
        lines = _level_like_lines(without_invisible(rubrics))[0]  # the level lines scale_of read
        if not lines or any(line.number == "-1" for line in lines):
            return None
        return f"{err}; a pairwise verdict is read as -1 (answer 1 better), 0 (a tie) or 1 (answer 2 better)"
    if levels in (PAIRWISE_SCALE.levels, (-1, 1)):
        return None
    shown = ", ".join(map(str, levels))
    return (f"the comparison scale's levels read as {shown}; a pairwise verdict is read as -1 (answer 1 better), 0 "
            "(a tie) or 1 (answer 2 better): write the scale on those three levels")

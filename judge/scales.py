"""Rubric scales: which scores a criterion allows.

A POLLUX rubric arrives in several shapes: text with one line per level (``0: ...``, ``1 - ...``,
``2 — ...``), text that states a range in words (``от 0 до 2``, ``from 1 to 10``), or a mapping from level to
description, possibly nested by language (``{"ru": {"0": ...}, "en": {...}}``). ``scale_of`` reads all of them
into one ``Scale``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Scale", "ScaleError", "scale_of", "MAX_LEVELS", "MAX_LEVEL_DIGITS"]

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
        levels: the allowed integer levels, ascending (``(0, 1, 2)`` for the usual POLLUX criterion).
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

        The reward gate's test (``judge.rewards``). POLLUX's ``src/metrics.py`` (since commit 83f6eb6b) calls a
        rubric binary only when its levels are exactly {0, 1}; ``eval.ranking.matrix`` follows that rule.
        """
        return len(self.levels) == 2

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


# A level line: optional bullet/emphasis, an integer (possibly negative), then a separator (colon, hyphen, en/em
# dash, full stop, closing parenthesis). "2024 год" must not count, hence the required separator. A bullet needs
# a space after it, so that "-1: ..." reads as level -1 and "- 1: ..." as a bulleted level 1 ("•1" and "*1" are
# never negative, so those bullets may touch the number). A list written "-0: / -1: / -2:" uses hyphens as bullets
# (nobody writes a level "-0"): see scale_of.
# Possessive (``*+``): with plain ``\s*`` runs side by side, a line of spaces without a digit backtracked in
# quadratic time (8,000 spaces: 1.75 s, holding the GIL), and a rubric is a client's text. No match changes: each
# run is followed by something it cannot consume.
_LEVEL_LINE = re.compile(r"^\s*+(?:-\s++|[*•]\s*+)?\**+\s*+(-?\d+)\s*+\**+\s*+(?::|-|–|—|\.(?!\d)|\))")
# Ranges in words: "от 0 до 2", "from 1 to 10", "0–2 балла", "between 0 and 3".
_RANGE_WORDS = (
    re.compile(r"\bот\s+(-?\d+)\s+до\s+(-?\d+)", re.IGNORECASE),
    re.compile(r"\bfrom\s+(-?\d+)\s+to\s+(-?\d+)", re.IGNORECASE),
    re.compile(r"\bbetween\s+(-?\d+)\s+and\s+(-?\d+)", re.IGNORECASE),
    re.compile(r"(?<![\d.,])(-?\d+)\s*(?:–|—|-|\.\.)\s*(-?\d+)\s*(?:балл|points?\b)", re.IGNORECASE),
)
_LANGUAGES = ("ru", "en")


def _level(written: str) -> int:
    """A level as written, within ``MAX_LEVEL_DIGITS`` (checked before ``int()`` is asked to read it)."""
    if len(written.lstrip("+-")) > MAX_LEVEL_DIGITS:
        raise ScaleError(f"rubric level {written[:20]!r}... has more than {MAX_LEVEL_DIGITS} digits")
    return int(written)


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


def _levels_from_keys(keys) -> tuple[int, ...]:
    levels = []
    for key in keys:
        written = str(key).strip()
        if not re.fullmatch(r"[+-]?\d+", written):
            raise ScaleError(f"rubric level {written[:20]!r} is not an integer")
        levels.append(_level(written))
    return _capped(levels)


def scale_of(rubrics: str | Mapping) -> Scale:
    """Read the allowed scores from a rubric.

    Args:
        rubrics: rubric text (one line per level, or a range stated in words, Russian or English), or a mapping
            from level to description, possibly nested by language (``{"ru": {...}, "en": {...}}``; when the
            languages disagree, Russian wins, as the prompt is Russian).

    Returns:
        The ``Scale``.

    Raises:
        ScaleError: when no scale can be read, or it has fewer than two levels ("от 2 до 2"), more than
            ``MAX_LEVELS`` levels or a level written with more than ``MAX_LEVEL_DIGITS`` digits.
    """
    if isinstance(rubrics, Mapping):
        if not rubrics:
            raise ScaleError("empty rubric mapping")
        nested = [lang for lang in _LANGUAGES if isinstance(rubrics.get(lang), Mapping)]
        keys = rubrics[nested[0]].keys() if nested else rubrics.keys()
        return _rubric_scale(_levels_from_keys(keys), rubrics)
    if not isinstance(rubrics, str):
        raise ScaleError(f"rubrics must be text or a mapping, got {type(rubrics).__name__}")

    written = [m.group(1) for m in map(_LEVEL_LINE.match, rubrics.splitlines()) if m]
    # "-0:" can only be a hyphen bullet before level 0, so every hyphen in the list is a bullet.
    hyphen_bullets = "-0" in written and all(w.startswith("-") for w in written)
    levels = [_level(w.lstrip("-")) if hyphen_bullets else _level(w) for w in written]
    # Two or more level lines are a level list; a single numbered line is more likely prose ("1. Оцените...").
    if len(set(levels)) >= 2:
        return Scale(_capped(levels))
    for pattern in _RANGE_WORDS:
        match = pattern.search(rubrics)
        if match:
            return _rubric_scale(Scale.range(_level(match.group(1)), _level(match.group(2))).levels, rubrics)
    raise ScaleError(f"no scale found in rubric text: {rubrics[:80]!r}")

"""How a judge's score reads against its item's scale: the project's one off-scale rule.

The validity section (``eval.validity.section``: kappa, alpha, the confusion margins, the ceiling, the alt-test),
``judge-eval compare``'s paired figures (``eval.validity.paired``, ``eval.scoring.compare``) and the confusion
matrices of the headline metrics (``eval.scoring.item_table.off_scale_sides``) all read a judge's score here, so that
one answer is on the scale or off it, and at one level, in every figure of a report:

- each item's ends are its own scale's where readable, else its criterion's expert range over the table
  (``item_scale_ends``), else the table's (``eval.validity.ceiling.scale_ends``), rounded out to whole levels
  (``rating_ends``); ``reading_ends`` takes the three steps in that order, and every reader calls it;
- a score is the level it rounds to, half up; a regression head's raw value past an end is that end
  (``eval.validity.ceiling.measured``), so that its 2.6 on 0-2 is 2, as its 2.4 is, and a seq2seq judge's 2.6 is 3,
  off the scale (``judge_levels``, ``off_scale_levels``).

``read_scales`` takes both steps over a whole table once (``ScaleReading``): ``judge-eval score`` reads it for the
confusion matrices and the validity section alike, rather than each reading the table again.

Apart from the section so that the scoring, which the section imports, reads the rule without importing it back.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["ScaleReading", "alt_test_judge", "item_scale_ends", "judge_levels", "off_scale_levels", "rating_ends",
           "read_scales", "readable_scales", "reading_ends"]


def _rounded(judge: np.ndarray, low: np.ndarray | None, high: np.ndarray | None,
             measured: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The judge's scores rounded half up to levels, and where that level lies off the item's known scale; a
    ``measured`` score (a regression head's raw value, ``ceiling.measured``) past an end is at that end, on the scale:
    the ceiling's rule, so that a head's 2.6 on 0-2 is one answer everywhere (2, as 2.4 is)."""
    from eval.scoring.metrics import round_half_up

    levels = round_half_up(judge)
    if low is None or high is None:
        return levels, np.zeros(len(levels), dtype=bool)
    with np.errstate(invalid="ignore"):
        below, above = np.isfinite(low) & (levels < low), np.isfinite(high) & (levels > high)
    if measured is not None:
        near = np.asarray(measured, dtype=bool)
        levels = np.where(near & below, low, np.where(near & above, high, levels))
        below, above = below & ~near, above & ~near
    return levels, below | above


def judge_levels(judge: np.ndarray, low: np.ndarray | None, high: np.ndarray | None,
                 measured: np.ndarray | None = None) -> np.ndarray:
    """The judge's scores as ratings of the scale, for kappa, alpha and the confusion margins: the level each rounds
    to (half up) where that level lies in the item's scale, NaN where it lies off it. Not clipped into the scale: a
    judge answering 5 on a 0-2 scale whose experts say 2 would read as agreeing with them (kappa 1), as
    ``alt_test_judge`` explains; the off-scale levels are ``off_scale_levels``. ``measured``: a regression head's
    value past an end is that end (``_rounded``)."""
    levels, outside = _rounded(judge, low, high, measured)
    return np.where(outside, np.nan, levels)


def off_scale_levels(judge: np.ndarray, low: np.ndarray | None, high: np.ndarray | None,
                     measured: np.ndarray | None = None) -> np.ndarray:
    """The levels the judge's scores round to where they lie off the item's scale, NaN elsewhere: no rating of the
    scale, so out of kappa and alpha, but an answer (a miss in the exact agreement; ``agreement.agreement``'s
    ``off_scale``), not a failure. A ``measured`` score is never off it (``_rounded``)."""
    levels, outside = _rounded(judge, low, high, measured)
    return np.where(outside, levels, np.nan)


def alt_test_judge(judge: np.ndarray, low: np.ndarray | None, high: np.ndarray | None, scoring: str,
                   measured: np.ndarray | None = None) -> np.ndarray:
    """The judge's values the alt-test compares: ``accuracy`` compares labels, so a regression head's 1.6 would never
    equal an expert's 2 and the judge enters as the level its score rounds to (half up, as in kappa and alpha) where
    that level lies in the item's scale; a score that rounds outside the scale stays as it is, so it equals no level
    of the scale, as the authors' notebook compares labels (``alt_test_example.ipynb`` in the public repository
    ``nitaytech/AltTest``: a 5 on a 0-2 scale is no 2). Clipping it into the scale would turn a judge that always
    answers 5 into one that agrees with every expert's 2; a ``measured`` score (a regression head's value) past an
    end is that end (``_rounded``). ``neg_rmse`` takes the score itself. The section and ``judge-eval compare``'s
    paired rho (``eval.validity.paired``) both read it here, so that the two rho of one run agree."""
    if scoring != "accuracy":
        return judge
    levels, outside = _rounded(judge, low, high, measured)
    return np.where(outside, judge, levels)


def readable_scales(table) -> np.ndarray:
    """True on each item whose own scale is readable (both ends finite); all False for a table without scale ends
    (an items.parquet written before it kept them)."""
    if table.scale_low is None or table.scale_high is None:
        return np.zeros(len(table), dtype=bool)
    return np.isfinite(table.scale_low) & np.isfinite(table.scale_high)


def item_scale_ends(table) -> tuple[np.ndarray, np.ndarray]:
    """Each item's scale ends for the ceiling's ``worst`` failures: its own where readable, else the lowest and
    highest expert score of its criterion over the table (NaN where its criterion has none, or only one level)."""
    import pandas as pd

    n = len(table)
    low = np.full(n, np.nan) if table.scale_low is None else np.asarray(table.scale_low, dtype=float)
    high = np.full(n, np.nan) if table.scale_high is None else np.asarray(table.scale_high, dtype=float)
    known = readable_scales(table)
    if known.all() or not n:
        return low, high
    experts = table.experts
    valid = ~np.isnan(experts)
    codes = pd.factorize(np.asarray(table.criteria_name, dtype=object))[0]
    by = pd.DataFrame({"c": codes, "low": np.where(valid, experts, np.inf).min(axis=1),
                       "high": np.where(valid, experts, -np.inf).max(axis=1)}).groupby("c")
    seen_low, seen_high = (np.asarray(by[end].transform(how), dtype=float) for end, how in (("low", "min"),
                                                                                          ("high", "max")))
    # No expert (+-inf), or experts who all gave one level (a unanimous criterion): that tells no scale, and as ends
    # it would make a failure cost 0 against them; NaN: the ceiling takes the table's (``ceiling.scale_ends``).
    spread = np.isfinite(seen_low) & np.isfinite(seen_high) & (seen_high > seen_low)
    seen_low, seen_high = (np.where(spread, e, np.nan) for e in (seen_low, seen_high))
    return np.where(known, low, seen_low), np.where(known, high, seen_high)


def rating_ends(ends: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The scale ends the judge's levels are read against: ``scale_ends``' (a readable scale's own, else the
    experts' range), floor and ceiling, so that an inferred end at an expert's half-point (0.5) still holds the whole
    level below it, as the value domain's span does (``eval.scoring.item_table.value_levels``)."""
    return np.floor(ends[0]), np.ceil(ends[1])


def reading_ends(table) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray],
                                 tuple[np.ndarray, np.ndarray]]:
    """Each item's scale ends three ways, for every reader of the rule (the validity section, the confusion
    matrices, ``judge-eval compare``), so that none assembles the chain on its own and they cannot drift apart:
    the criterion's own (``item_scale_ends``: NaN where neither its scale nor its experts tell one; the section's
    ``too_wide_to_rate`` reads these), those with the table's expert range in the NaN
    (``eval.validity.ceiling.scale_ends``: the ceiling's ``worst`` failures take them) and those rounded out to whole
    levels (``rating_ends``: the judge's levels are read against them)."""
    from eval.validity.ceiling import scale_ends

    inferred = item_scale_ends(table)
    ends = scale_ends(*inferred, table.experts)
    return inferred, ends, rating_ends(ends)


class ScaleReading(NamedTuple):
    """A table's judge scores read against each item's scale once (``read_scales``): the three ends of
    ``reading_ends`` and, against the whole-level ones, the judge's levels on the scale (``judge_levels``) and off it
    (``off_scale_levels``), a regression head's value past an end at that end (``head``: which scores are a head's
    measurements, ``eval.validity.ceiling.measured``)."""

    inferred: tuple[np.ndarray, np.ndarray]
    ends: tuple[np.ndarray, np.ndarray]
    rating: tuple[np.ndarray, np.ndarray]
    levels: np.ndarray
    off_scale: np.ndarray
    head: np.ndarray


def read_scales(table) -> ScaleReading:
    """``ScaleReading`` of ``table`` (an ``eval.scoring.item_table.ItemTable``)."""
    from eval.validity.ceiling import measured

    inferred, ends, rating = reading_ends(table)
    head = measured(table.score_source)
    return ScaleReading(inferred, ends, rating, judge_levels(table.judge, *rating, head),
                        off_scale_levels(table.judge, *rating, head), head)

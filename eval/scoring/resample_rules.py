"""How many bootstrap resamples a call, a verdict or a ranking needs: the floors ``judge-eval compare``,
``judge-eval rank`` and the experts' ceiling (``eval.validity.ceiling.verdict``) read.

Two floors, one resample apart, for an interval's (rank) and a p-value's (compare, the ceiling):

- ``resamples_to_call`` (40 at alpha 0.05): a called interval that is a 1 - alpha one and not wider;
  ``judge-eval rank`` calls on such an interval.
- ``paired_resamples_to_call`` (41 at 0.05): a p-value estimated as 0 from n resamples only says p < 2 / n, evidence
  of p < alpha once 2 / n < alpha; compare's calls and the ceiling's verdict read it. ``resamples_for_family`` is the
  same bound for a Holm family of m cells.

``called_interval`` reads an interval and its p-value off the same resamples by one count, so that an interval
excluding 0 and a p-value below alpha never disagree: compare's paired cells and rank's pairs read it.

Kept apart from ``eval.scoring.bootstrap`` (the engine that draws the resamples) and ``eval.scoring.compare`` (which
reads them) so that the ceiling, compare and rank read one definition without importing each other.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["called_interval", "paired_resamples_to_call", "resamples_for_family", "resamples_to_call"]


def resamples_to_call(alpha: float) -> int:
    """The fewest resamples whose called interval (``called_interval``) is a 1 - alpha one and not wider:
    n * alpha / 2 >= 1, one whole resample per tail, 2 / alpha (40 at 0.05); with fewer, the interval is the extreme
    draws and covers more than 1 - alpha. ``judge-eval rank`` calls on such an interval; compare calls on a p-value
    and needs one resample more (``paired_resamples_to_call``)."""
    return math.ceil(2.0 / alpha - 1e-9)  # the tolerance: 2 / 0.05 is 40.000000000000001 in floating point


def paired_resamples_to_call(alpha: float) -> int:
    """The fewest resamples from which compare's paired bootstrap may call a difference at ``alpha``, and from
    which the experts' ceiling gives a verdict at the level 1 - ``alpha``: more than 2 / alpha (41 at 0.05). Its
    two-sided p-value is twice a share of the resamples, so it moves in steps of 2 / n and an estimate of 0 only says
    p < 2 / n, evidence of p < alpha once 2 / n < alpha. The same bound as a table of one cell's under Holm
    (``resamples_for_family``), so that an overall cell is never called where the identical one-cell table by model
    reads n.s."""
    return resamples_for_family(1, alpha)


def resamples_for_family(m: int, alpha: float) -> int:
    """The fewest resamples from which Holm's adjustment over a family of ``m`` callable cells can call one whose
    resamples all agree: its raw p enters as 2 / n, the smallest adjusted p is then 2 m / n, and a call needs it
    below alpha (``judge-eval compare``'s tables by model, task type or criterion, ``eval.scoring.compare.compare``),
    so n must be more than 2 m / alpha: 41 for one cell at 0.05, 1,001 for 25."""
    return math.floor(2.0 * m / alpha + 1e-9) + 1  # the tolerance: as resamples_to_call's, an exact 2 m / alpha


def called_interval(d: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(low, high, p) of the resampled differences ``d`` at level ``1 - alpha``, by one count of resamples.

    p is twice the smaller share of the n finite differences on either side of 0 (a 0 counts on both; a p a rounding
    away from alpha reads as alpha). The ends are order statistics, the k-th smallest and the k-th largest, k the
    fewest resamples on the wrong side of 0 whose share makes p reach alpha (by the same tolerance): low > 0 exactly
    when fewer than k differences are <= 0, that is when p < alpha (and high < 0 alike). Interpolated percentiles
    (``eval.scoring.bootstrap.percentile_interval``) would disagree with p at the edge: of 40 resamples with one
    <= 0, they give the interval [0.4875, 0.5] (a call) beside p = 0.050 (none).

    Returns:
        NaNs when no difference is finite.
    """
    d = np.sort(d[np.isfinite(d)])
    n = len(d)
    if n == 0:
        return math.nan, math.nan, math.nan
    p = min(1.0, 2.0 * min(float(np.count_nonzero(d <= 0)) / n, float(np.count_nonzero(d >= 0)) / n))
    # A share a rounding away from alpha is alpha itself (0.05 / 28 is a hair above 2 / 1120), as resamples_to_call
    # reads 2 / alpha: p and k compare against the same edge, so the interval and p still agree there.
    tie = 1e-12 * alpha
    edge = alpha - tie
    if edge <= p <= alpha + tie:
        p = alpha
    k = max(1, min(n, math.floor(n * alpha / 2.0)))  # then settled in p's own arithmetic: never off by a rounding
    while k > 1 and 2.0 * ((k - 1) / n) >= edge:
        k -= 1
    while k < n and 2.0 * (k / n) < edge:
        k += 1
    return float(d[k - 1]), float(d[n - k]), p

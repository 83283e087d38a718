"""How many bootstrap resamples a call, a verdict or a ranking needs: the floors ``judge-eval compare``,
``judge-eval rank`` and the experts' ceiling (``eval.validity.ceiling.verdict``) read.

Two floors, one resample apart, for two readings of a percentile bootstrap:

- ``resamples_to_call`` (40 at alpha 0.05): an interval whose ends are not simply the most extreme draw;
  ``judge-eval rank`` calls on such an interval.
- ``paired_resamples_to_call`` (41 at 0.05): a p-value estimated as 0 from n resamples only says p < 2 / n, evidence
  of p < alpha once 2 / n < alpha; compare's calls and the ceiling's verdict read it. ``resamples_for_family`` is the
  same bound for a Holm family of m cells.

Kept apart from ``eval.scoring.bootstrap`` (the engine that draws the resamples) and ``eval.scoring.compare`` (which
reads them) so that the ceiling, compare and rank read one definition without importing each other.
"""

from __future__ import annotations

import math

__all__ = ["paired_resamples_to_call", "resamples_for_family", "resamples_to_call"]


def resamples_to_call(alpha: float) -> int:
    """The fewest resamples whose (1 - alpha) percentile interval has an end that is not simply the most extreme
    draw: n * alpha / 2 >= 1 in each tail, 2 / alpha (40 at 0.05). ``judge-eval rank`` calls on such an interval;
    compare calls on a p-value and needs one resample more (``paired_resamples_to_call``)."""
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

"""The interval choices the sources leave open, named: what ``--extreme-rate-interval`` gives a rate of 0 or 1, and
the percentile rule every bootstrap interval is read with.

The POLLUX paper (arXiv 2505.24616v3, Appendix D.2) reports point estimates only, and POLLUX's public evaluator
(ai-forever/POLLUX, ``src/metrics.py``, ``src/utils/evaluation.py``) draws no resamples; neither says how an interval
is read off a bootstrap, nor what interval a share of 0 or 1 has. These choices are this toolkit's:

- **percentile rule**: the ends of a percentile bootstrap interval are ``numpy.percentile`` of the resampled values
  with ``method="linear"`` (numpy's default, Hyndman and Fan's definition 7), named here (``PERCENTILE_METHOD``) and
  in metrics.json (``settings.percentile_method``), fixed, not an option: every percentile interval of ``score``,
  ``compare``, ``rank`` and the validity section is read by ``eval.scoring.bootstrap.percentile_interval`` (a
  called interval, compare's paired delta's and a ranking pair's, is order statistics instead,
  ``eval.scoring.resample_rules.called_interval``), and any
  other of numpy's rules moves an end by less than one rank of the sorted resamples (between the values one rank
  beyond the two around linear's end; not always between those two: Weibull's position is nearly a rank lower).
- **a rate of 0 or 1** (``EXTREME_RATE_INTERVALS``): a pairwise run's rates (``judge-eval score``) and a leaderboard's
  win rates (``judge-eval compare`` of three or more rank runs) are shares of units (pairs; instructions) that the
  bootstrap resamples. Where every unit is 0 (or every one 1), every resample is too, and the percentile interval is
  [0, 0] (or [1, 1]) whatever the number of units: zero width, as if certain. ``percentile`` (the default) keeps it
  and the reports say so beside it; ``clopper-pearson`` gives the exact binomial interval of k = 0 (or n) of the n
  units instead (Clopper and Pearson, 1934; ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``): at 95 %
  and n = 10, [0, 1 - 0.025^(1/10)] = [0, 0.3085]. Its n is the resampled units, not the judgments (a pair's two
  orders are one unit, as the bootstrap draws them): fewer trials, the wider, conservative interval.
"""

from __future__ import annotations

import argparse

__all__ = ["EXTREME_RATE_INTERVALS", "PERCENTILE_METHOD", "add_extreme_rate_flag", "check_extreme_rate_interval",
           "clopper_pearson", "extreme_rate_choice", "extreme_rate_interval", "zero_width_at_bound"]

#: ``numpy.percentile``'s method for the ends of every percentile bootstrap interval (numpy's default, named).
PERCENTILE_METHOD = "linear"

#: ``--extreme-rate-interval``: the interval of a rate whose every unit is 0, or every one 1.
EXTREME_RATE_INTERVALS = ("percentile", "clopper-pearson")


def add_extreme_rate_flag(parser: argparse.ArgumentParser, applies_to: str) -> None:
    """``--extreme-rate-interval`` on ``parser`` (score's and compare's); ``applies_to`` says which runs have rates.
    Its default is None ("not given"): ``extreme_rate_choice`` refuses it given where it changes nothing."""
    parser.add_argument("--extreme-rate-interval", choices=EXTREME_RATE_INTERVALS, default=None,
                        help=f"{applies_to}: the interval of a rate of 0 or 1, where every resample is that rate: "
                             "percentile (default: the bootstrap's [0, 0] or [1, 1], the report says so) or "
                             "clopper-pearson (the exact binomial interval over the resampled units). The sources "
                             "give no intervals.")


def extreme_rate_choice(args: argparse.Namespace, applies: bool, why_not: str = "") -> str:
    """The ``--extreme-rate-interval`` chosen (``percentile`` when not given).

    Raises:
        ValueError: the flag given where no rate has an interval (``applies`` false), saying ``why_not``: a flag
            that changes nothing would read as taken.
    """
    chosen = getattr(args, "extreme_rate_interval", None)
    if chosen is not None and not applies:
        raise ValueError(f"--extreme-rate-interval: {why_not}; leave the flag out")
    return chosen or EXTREME_RATE_INTERVALS[0]


def clopper_pearson(k: int, n: int, level: float) -> list[float]:
    """The exact (Clopper-Pearson) two-sided ``level`` interval of a binomial proportion, k successes of n trials."""
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return [float(ci.low), float(ci.high)]


def check_extreme_rate_interval(method: str) -> None:
    """Refuse (ValueError) a ``method`` not in ``EXTREME_RATE_INTERVALS``: called before the resamples are drawn."""
    if method not in EXTREME_RATE_INTERVALS:
        raise ValueError(f"extreme_rate_interval must be one of {', '.join(EXTREME_RATE_INTERVALS)}, got {method!r}")


def extreme_rate_interval(value: float, ci: list[float] | None, n_units: int, level: float,
                          method: str) -> tuple[list[float] | None, str | None]:
    """A rate's interval under ``method``, and the name of the rule that replaced the bootstrap's (None: kept).

    Only a rate of exactly 0 or 1 whose percentile interval is of zero width at it is replaced, and only under
    ``clopper-pearson``; a rate without an interval (no resamples, under two units) keeps none.

    Args:
        value: the rate; ci: its percentile bootstrap interval (None: none); n_units: the units resampled.
        level: the interval's coverage; method: one of ``EXTREME_RATE_INTERVALS``.
    """
    check_extreme_rate_interval(method)
    if method == "percentile" or ci is None or value not in (0.0, 1.0) or ci[0] != ci[1]:
        return ci, None
    return clopper_pearson(round(value * n_units), n_units, level), method


def zero_width_at_bound(value: float | None, ci: list[float] | None) -> bool:
    """Whether a rate is 0 or 1 with the zero-width percentile interval there (what the reports flag)."""
    return value in (0.0, 1.0) and ci is not None and ci[0] == ci[1] == value

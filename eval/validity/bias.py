"""Bias: leniency, length bias, and the marginal homogeneity of the judge x expert table.

- **Leniency**: the mean signed error of the judge against the experts' mean, oriented so that a positive value is
  lenient on every criterion: on a Critical criterion (best at its lowest level, ``judge.oriented_scale``) the sign
  flips. Its interval is the one-sample t interval (``scipy.stats.ttest_1samp(...).confidence_interval``); errors
  that are all the same (two or more) have the zero-width interval at their mean, the t interval's limit as the
  spread goes to 0, so a judge always one level above the experts reads lenient.
- **Length bias**: the slope of the judge's oriented residual (judge minus the experts' mean) on the log of the
  answer's length in characters (``scipy.stats.linregress``, slope +- t x stderr), beside the same slope of each
  expert's leave-one-out residual (the expert minus the mean of the item's other experts). With named experts the
  experts' range is from the lowest to the highest per-expert slope (experts with at least ``MIN_PAIRS`` pairs);
  without names the experts' pooled slope and its interval stand in. The judge is flagged only where its whole
  interval lies outside that range (above: lenient on long answers; below: harsh on long answers).
- **Marginal homogeneity**: whether the judge uses the scale's levels as often as the experts' mode does, the
  Stuart–Maxwell test of the judge x mode table (``statsmodels``' ``SquareTable(...).homogeneity()``), over the
  levels either side uses (a level neither uses has no margin to compare and would make the covariance singular).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MIN_PAIRS", "leniencies", "leniency", "length_bias", "marginal_homogeneity"]

#: An expert's own length slope needs at least this many items.
MIN_PAIRS = 30


def _orientation(best_low: np.ndarray | None, n: int) -> np.ndarray:
    return np.where(np.asarray(best_low, dtype=bool), -1.0, 1.0) if best_low is not None else np.ones(n)


def leniency(judge: np.ndarray, expert_mean: np.ndarray, best_low: np.ndarray | None, level: float = 0.95
             ) -> dict[str, Any]:
    """The judge's oriented mean signed error against the experts' mean (positive: lenient), with a t interval."""
    return leniencies(judge, expert_mean, best_low, [np.arange(len(judge))], level)[0]


def leniencies(judge: np.ndarray, expert_mean: np.ndarray, best_low: np.ndarray | None, cells: list[np.ndarray],
               level: float = 0.95) -> list[dict[str, Any]]:
    """``leniency`` of each cell (its items' indices) of one table.

    The t intervals of cells of similar sizes come from one ``scipy.stats.ttest_1samp`` call over their NaN-padded
    rows (``axis=1, nan_policy="omit"``: the same figures as a call per cell, which costs ~0.3 ms each on the
    full test's 274 cells); a batch's rows are at most twice as long as its shortest, so padding at most doubles
    the values tested.
    """
    from scipy.stats import ttest_1samp

    both = np.isfinite(judge) & np.isfinite(expert_mean)
    with np.errstate(invalid="ignore"):
        oriented = (judge - expert_mean) * _orientation(best_low, len(judge))
    errors = [oriented[index][both[index]] for index in cells]
    out = [{"n": int(len(error)), "mean_signed_error": float(error.mean()) if len(error) else None,
            "ci": [None, None]} for error in errors]
    for cell, error in zip(out, errors):
        if len(error) >= 2 and np.ptp(error) == 0:  # no spread: the t interval's width is 0, at the mean itself
            cell["ci"] = [cell["mean_signed_error"], cell["mean_signed_error"]]
    tested = sorted((k for k, error in enumerate(errors) if len(error) >= 2 and np.ptp(error) > 0),
                    key=lambda k: len(errors[k]))
    while tested:
        shortest = len(errors[tested[0]])
        batch = [k for k in tested if len(errors[k]) <= 2 * shortest]
        tested = tested[len(batch):]
        rows = np.full((len(batch), len(errors[batch[-1]])), np.nan)
        for row, k in enumerate(batch):
            rows[row, :len(errors[k])] = errors[k]
        interval = ttest_1samp(rows, 0.0, axis=1, nan_policy="omit").confidence_interval(level)
        for k, low, high in zip(batch, np.atleast_1d(interval.low).tolist(), np.atleast_1d(interval.high).tolist()):
            out[k]["ci"] = [float(low), float(high)]
    for cell in out:
        low, high = cell["ci"]
        cell["direction"] = ("lenient" if low is not None and low > 0 else "harsh" if high is not None and high < 0
                             else "neither")
    return out


def _slope(x: np.ndarray, y: np.ndarray, level: float) -> dict[str, Any] | None:
    from scipy.stats import linregress
    from scipy.stats import t as student_t

    if len(x) < 3 or np.ptp(x) == 0:
        return None
    fit = linregress(x, y)
    half = float(student_t.ppf(0.5 + level / 2, len(x) - 2) * fit.stderr)
    return {"n": int(len(x)), "slope": float(fit.slope), "ci": [float(fit.slope) - half, float(fit.slope) + half]}


def length_bias(judge: np.ndarray, experts: np.ndarray, expert_ids: np.ndarray | None, answer_chars: np.ndarray,
                best_low: np.ndarray | None, level: float = 0.95,
                expert_codes: tuple[np.ndarray, np.ndarray] | None = None, mean: np.ndarray | None = None
                ) -> dict[str, Any]:
    """The judge's length slope beside the experts' (module docstring), and whether it is flagged.

    ``expert_codes``: the ids already numbered, ``(codes, names)`` with ``codes`` an ``(n, k)`` integer matrix
    parallel to ``experts`` (-1 where unnamed) and ``names[code]`` the id, when the caller has them; ``mean``: the
    experts' mean per item, when the caller has it.

    Returns:
        ``judge`` {n, slope, ci}; ``experts``: ``by_expert`` slopes and their ``range`` (named experts) or the
        ``pooled`` slope (unnamed); ``flag``: "lenient on long answers", "harsh on long answers" or None.
    """
    from eval.scoring.metrics import expert_mean

    sign = _orientation(best_low, len(judge))
    length = np.log(np.maximum(np.asarray(answer_chars, dtype=float), 1.0))
    mean = expert_mean(experts) if mean is None else mean
    both = np.isfinite(judge) & np.isfinite(mean)
    out: dict[str, Any] = {"judge": _slope(length[both], ((judge - mean) * sign)[both], level)}
    valid = ~np.isnan(experts)
    count = valid.sum(axis=1, keepdims=True)
    total = np.where(valid, experts, 0.0).sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rest = (total - np.where(valid, experts, 0.0)) / (count - 1)  # the mean of the item's other experts
    item, slot = np.nonzero(valid & (count >= 2))
    residual = (experts[item, slot] - rest[item, slot]) * sign[item]
    experts_out: dict[str, Any] = {}
    band = None
    if expert_codes is not None:
        codes, names = expert_codes[0][item, slot], expert_codes[1]
        named = bool(len(item)) and bool((codes >= 0).all())
    else:
        named = expert_ids is not None and np.not_equal(expert_ids[item, slot], None).all() and len(item)
    if named:
        import pandas as pd

        if expert_codes is None:
            codes, names = pd.factorize(expert_ids[item, slot])
        from eval.validity.alt_test import stable_order

        order = stable_order(codes)
        bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(names)))]
        slopes = {}
        for code in np.argsort(names.astype(str)):  # experts in name order
            mine = order[bounds[code]:bounds[code + 1]]
            if len(mine) >= MIN_PAIRS:
                fitted = _slope(length[item[mine]], residual[mine], level)
                if fitted is not None:
                    slopes[str(names[code])] = fitted
        experts_out["by_expert"] = slopes
        if slopes:
            values = [s["slope"] for s in slopes.values()]
            band = experts_out["range"] = [min(values), max(values)]
    else:
        pooled = _slope(length[item], residual, level)
        experts_out["pooled"] = pooled
        band = pooled["ci"] if pooled else None
    out["experts"] = experts_out
    flag = None
    if out["judge"] is not None and band is not None:
        low, high = out["judge"]["ci"]
        flag = "lenient on long answers" if low > band[1] else "harsh on long answers" if high < band[0] else None
    out["flag"] = flag
    return out


def marginal_homogeneity(judge_levels: np.ndarray, mode: np.ndarray, domain: np.ndarray) -> dict[str, Any]:
    """The Stuart–Maxwell test of the judge x expert-mode table over ``domain`` (levels neither side uses left out).

    Returns:
        ``n``, ``levels`` (tested), ``statistic``, ``df``, ``p_value`` (None when fewer than 2 levels are used or
        the covariance is singular), and the two margins ``judge_margin`` / ``experts_margin`` over ``domain``.
    """
    from statsmodels.stats.contingency_tables import SquareTable

    from eval.validity.agreement import level_positions

    domain = np.asarray(domain, dtype=float)
    (j, in_judge), (m, in_mode) = level_positions(judge_levels, domain), level_positions(mode, domain)
    inside = in_judge & in_mode  # NaN on either side is no level
    size = len(domain)
    table = np.bincount(j[inside] * size + m[inside], minlength=size * size).reshape(size, size).astype(float)
    out: dict[str, Any] = {"n": int(inside.sum()), "judge_margin": table.sum(axis=1).tolist(),
                           "experts_margin": table.sum(axis=0).tolist()}
    used = (table.sum(axis=0) + table.sum(axis=1)) > 0
    out["levels"] = domain[used].tolist()
    out.update(statistic=None, df=None, p_value=None)
    if used.sum() >= 2:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = SquareTable(table[np.ix_(used, used)], shift_zeros=False).homogeneity()
            except np.linalg.LinAlgError:
                result = None
        # statsmodels warns and returns a figure from a pseudo-inverse when the covariance is singular (e.g. every
        # item on the diagonal): no test then
        if result is None or any("invert" in str(w.message) for w in caught) or not np.isfinite(result.statistic):
            out["why"] = "the covariance of the margins' differences is singular (too few off-diagonal items)"
            return out
        out.update(statistic=float(result.statistic), df=int(result.df), p_value=float(result.pvalue))
    return out

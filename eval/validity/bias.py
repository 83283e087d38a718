"""Bias: leniency, length bias, and the marginal homogeneity of the judge x expert table.

- **Leniency**: the mean signed error of the judge against the experts' mean, oriented so that a positive value is
  lenient on every criterion: on a Critical criterion (best at its lowest level, ``judge.oriented_scale``) the sign
  flips. Its interval is the one-sample t interval (``scipy.stats.ttest_1samp(...).confidence_interval``); errors
  that are all the same (two or more) have the zero-width interval at their mean, the t interval's limit as the
  spread goes to 0, so a judge always one level above the experts reads lenient. A direction (lenient / harsh: the
  interval excludes 0) needs at least ``MIN_LENIENCY_N`` errors: below it the direction is "neither" whatever the
  interval. Without that floor the zero-spread limit made the direction flip the wrong way: errors (+1, +1) read
  lenient with [1, 1] while the more lenient (+1, +1, +2) read neither (t interval [-0.10, 2.77]). Above the floor,
  n equal errors c (lenient: [c, c]) and one more lenient error x stay lenient whenever c (n + 1) > (x - c)(t - 1),
  t the quantile at n degrees of freedom (the t interval's low end is c - (t - 1)(x - c) / (n + 1)): for errors in
  whole levels (c = 1, x = 2) at every n from 3 on, so at every n the floor allows.
- **Length bias**: the slope of the judge's oriented residual (judge minus the experts' mean) on the log of the
  answer's length in characters (least squares; the interval clustered by answer, ``cluster_slope``: the criteria
  rows of one answer share its length and are not independent), beside the same slope of each
  expert's leave-one-out residual (the expert minus the mean of the item's other experts). The experts' range is
  from the lowest to the highest per-expert slope (named experts with at least ``MIN_PAIRS`` pairs). The judge is
  flagged only where its whole interval lies outside that range (above: lenient on long answers; below: harsh on
  long answers). Without named experts there is no range and no flag: the judge's slope is reported with its
  interval, the experts' as unavailable with the reason (``experts: {"pooled": None, "why": ...}``). Pooling the
  experts' leave-one-out residuals cannot stand in: on each item they sum to 0 (over the item's k experts with sum S,
  ``e_j - (S - e_j) / (k - 1)`` sums to ``S - (k - 1) S / (k - 1) = 0``), so their slope on any per-item regressor
  such as the answer's length is 0 on every data set, and a "band" around it would flag the judge against nothing
  the experts did. Flagging against 0 instead would read
  as a comparison with the experts, which it is not (docs/validity.md).
- **Marginal homogeneity**: whether the judge uses the scale's levels as often as the experts' mode does, the
  Stuart–Maxwell test of the judge x mode table (``statsmodels``' ``SquareTable(...).homogeneity()``), over the
  levels either side uses (a level neither uses has no margin to compare and would make the covariance singular).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MIN_LENIENCY_N", "MIN_PAIRS", "answer_codes", "cluster_slope", "leniencies", "leniency", "length_bias",
           "marginal_homogeneity"]

#: An expert's own length slope needs at least this many items.
MIN_PAIRS = 30
#: A leniency direction needs at least this many errors (module docstring).
MIN_LENIENCY_N = 10


def answer_codes(model_id: np.ndarray, task_type: np.ndarray, answer_chars: np.ndarray) -> np.ndarray:
    """Each item's answer as an integer code, for the length slopes' clusters (``cluster_slope``).

    The item table names no answer, so an answer is the items of one evaluated model, one task type and one answer
    length in characters: every criterion row of an answer shares all three. Two answers that share them too fall
    into one cluster; a union of clusters is still a cluster (the residuals of different clusters stay independent),
    so the interval stays valid, a little wider at most.
    """
    import pandas as pd

    model = pd.factorize(np.asarray(model_id, dtype=object))[0].astype(np.int64)
    task = pd.factorize(np.asarray(task_type, dtype=object))[0].astype(np.int64)
    chars = np.nan_to_num(np.asarray(answer_chars, dtype=float), nan=-1.0).astype(np.int64) + 1
    if not len(chars):
        return np.zeros(0, dtype=np.intp)
    key = (model * (int(task.max()) + 2) + task + 1) * (int(chars.max()) + 1) + chars
    return pd.factorize(key)[0].astype(np.intp)


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
        enough = cell["n"] >= MIN_LENIENCY_N  # the floor under the zero-spread rule (module docstring)
        cell["direction"] = ("lenient" if enough and low is not None and low > 0 else
                             "harsh" if enough and high is not None and high < 0 else "neither")
    return out


def _slope(x: np.ndarray, y: np.ndarray, level: float, clusters: np.ndarray | None = None) -> dict[str, Any] | None:
    """The least-squares slope of ``y`` on ``x`` with its interval: clustered by ``clusters`` (non-negative integer
    codes, ``cluster_slope``), or ``scipy.stats.linregress``'s classical one without them."""
    from scipy.stats import linregress
    from scipy.stats import t as student_t

    if len(x) < 3 or np.ptp(x) == 0:
        return None
    if clusters is not None:
        return cluster_slope(x, y, clusters, level)
    fit = linregress(x, y)
    half = float(student_t.ppf(0.5 + level / 2, len(x) - 2) * fit.stderr)
    return {"n": int(len(x)), "slope": float(fit.slope), "ci": [float(fit.slope) - half, float(fit.slope) + half]}


def cluster_slope(x: np.ndarray, y: np.ndarray, clusters: np.ndarray, level: float = 0.95) -> dict[str, Any] | None:
    """The slope of ``y`` on ``x`` (with an intercept) and its cluster-robust t interval, the clusters given as
    non-negative integer codes: what ``statsmodels``' ``OLS(y, add_constant(x)).fit(cov_type="cluster",
    cov_kwds={"groups": clusters}, use_t=True).conf_int()`` gives (a test pins them equal).

    Why clusters: an answer is scored on several criteria, each an item with the same answer length, and the same
    judge and experts read the same text each time, so the residuals of one answer's items are correlated. Treated
    as independent rows (``linregress``), k criteria per answer shrink the interval by about sqrt(k) with no more
    information, and a slope that 150 answers cannot tell from 0 got flagged once each answer had 16 rows.

    Why not statsmodels itself: importing its regression module costs ~0.23 s and a fit of 20,000 rows ~5 ms, with
    ~100 fits per ``score`` on 160,000 items (the judge and each of 24 experts, per test): ~0.7 s of the 6 s the
    whole ``score`` may take (docs/performance.md), for a sandwich with two parameters. By Frisch–Waugh–Lovell the slope's row
    of the sandwich is the centred regressor:

        var(b) = c sum_g (sum_{i in g} (x_i - mean x) e_i)^2 / (sum_i (x_i - mean x)^2)^2

    with statsmodels' small-sample factor c = G / (G - 1) (n - 1) / (n - 2) and t quantiles at G - 1 degrees of
    freedom (G clusters, n rows, e the residuals). None with fewer than 2 clusters.
    """
    from scipy.stats import t as student_t

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    clusters = np.asarray(clusters, dtype=np.intp)
    n = len(x)
    sizes = np.bincount(clusters)
    g = int(np.count_nonzero(sizes))
    if n < 3 or g < 2 or np.ptp(x) == 0:
        return None
    centred = x - x.mean()
    sxx = float(centred @ centred)
    slope = float(centred @ (y - y.mean())) / sxx
    residual = y - y.mean() - slope * centred
    score = np.bincount(clusters, weights=centred * residual, minlength=len(sizes))
    variance = g / (g - 1) * (n - 1) / (n - 2) * float(score @ score) / sxx**2
    half = float(student_t.ppf(0.5 + level / 2, g - 1) * np.sqrt(variance))
    return {"n": int(n), "slope": slope, "ci": [slope - half, slope + half]}


def length_bias(judge: np.ndarray, experts: np.ndarray, expert_ids: np.ndarray | None, answer_chars: np.ndarray,
                best_low: np.ndarray | None, level: float = 0.95,
                expert_codes: tuple[np.ndarray, np.ndarray] | None = None, mean: np.ndarray | None = None,
                answers: np.ndarray | None = None) -> dict[str, Any]:
    """The judge's length slope beside the experts' (module docstring), and whether it is flagged.

    ``expert_codes``: the ids already numbered, ``(codes, names)`` with ``codes`` an ``(n, k)`` integer matrix
    parallel to ``experts`` (-1 where unnamed) and ``names[code]`` the id, when the caller has them; ``mean``: the
    experts' mean per item, when the caller has it; ``answers``: ``(n,)`` each item's answer as a non-negative
    integer code, so that the intervals are clustered by answer (``cluster_slope``; the section passes
    ``answer_codes``); None: each item its own answer, the classical interval.

    Returns:
        ``judge`` {n, slope, ci}; ``experts``: ``by_expert`` slopes and their ``range`` (named experts), or
        ``pooled`` None with ``why`` (no named expert: module docstring); ``flag``: "lenient on long answers",
        "harsh on long answers" or None (also whenever there is no experts' range to compare with).
    """
    from eval.scoring.metrics import expert_mean

    sign = _orientation(best_low, len(judge))
    length = np.log(np.maximum(np.asarray(answer_chars, dtype=float), 1.0))
    mean = expert_mean(experts) if mean is None else mean
    both = np.isfinite(judge) & np.isfinite(mean)
    answers = None if answers is None else np.asarray(answers, dtype=np.intp)
    out: dict[str, Any] = {"judge": _slope(length[both], ((judge - mean) * sign)[both], level,
                                           None if answers is None else answers[both])}
    valid = ~np.isnan(experts)
    count = valid.sum(axis=1, keepdims=True)
    total = np.where(valid, experts, 0.0).sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rest = (total - np.where(valid, experts, 0.0)) / (count - 1)  # the mean of the item's other experts
    item, slot = np.nonzero(valid & (count >= 2))
    experts_out: dict[str, Any] = {}
    band = None
    if expert_codes is not None:
        codes, names = expert_codes[0][item, slot], expert_codes[1]
        any_named = bool((expert_codes[0] >= 0).any())
    elif expert_ids is not None:
        import pandas as pd

        codes, names = pd.factorize(expert_ids[item, slot], use_na_sentinel=True)  # None -> -1
        any_named = bool(np.not_equal(expert_ids, None).any())
    else:
        codes, names, any_named = np.full(len(item), -1), np.zeros(0, dtype=object), False
    # Only named experts' pairs: an unnamed score has no expert whose own slope it could join (as in the alt-test).
    named = codes >= 0
    item, slot, codes = item[named], slot[named], codes[named]
    residual = (experts[item, slot] - rest[item, slot]) * sign[item]
    if not any_named:
        experts_out = {"pooled": None, "why": "the data names no experts (expert_ids): each expert's own slope needs "
                                              "to know who scored what, and the experts' pooled leave-one-out slope "
                                              "is 0 by construction; the judge's slope is not compared"}
    else:
        from eval.validity.alt_test import stable_order

        names = np.asarray(names, dtype=object)
        order = stable_order(codes)
        bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(names)))]
        slopes = {}
        for code in np.argsort(names.astype(str)):  # experts in name order
            mine = order[bounds[code]:bounds[code + 1]]
            if len(mine) >= MIN_PAIRS:
                fitted = _slope(length[item[mine]], residual[mine], level,
                                None if answers is None else answers[item[mine]])
                if fitted is not None:
                    slopes[str(names[code])] = fitted
        experts_out["by_expert"] = slopes
        if slopes:
            values = [s["slope"] for s in slopes.values()]
            band = experts_out["range"] = [min(values), max(values)]
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

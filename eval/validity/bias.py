"""Bias: leniency, length bias, and the marginal homogeneity of the judge x expert table.

- **Leniency**: the mean signed error of the judge against the experts' mean, oriented so that a positive value is
  lenient on every criterion: on a Critical criterion (best at its lowest level, ``judge.oriented_scale``) the sign
  flips. Its interval is clustered by answer (``cluster_mean``: the criteria rows of one answer share its text and
  the raters' reading of it, as for the length slope): taken as independent rows, an answer scored on 16 criteria
  narrows the interval about 4 times with no more information, and a mean error that 40 answers cannot tell from 0
  reads lenient once each answer has 16 rows (a test has the data). With one item per answer
  it is the one-sample t interval (``scipy.stats.ttest_1samp(...).confidence_interval``). Errors whose answers all
  err the same (two answers or more) have the zero-width interval at their mean, the interval's limit as the spread
  goes to 0, so a judge always one level above the experts reads lenient. A direction (lenient / harsh: the interval
  excludes 0) needs at least ``MIN_LENIENCY_N`` answers: below it the direction is "neither" whatever the interval.
  Without that floor the zero-spread limit made the direction flip the wrong way: errors (+1, +1) read lenient with
  [1, 1] while the more lenient (+1, +1, +2) read neither (t interval [-0.10, 2.77]). Above the floor, with one item
  per answer, n equal errors c (lenient: [c, c]) and one more lenient error x stay lenient whenever
  c (n + 1) > (x - c)(t - 1), t the quantile at n degrees of freedom (the t interval's low end is
  c - (t - 1)(x - c) / (n + 1)): for errors in whole levels (c = 1, x = 2) at every n from 3 on, so at every n the
  floor allows. A judge score off the item's scale (a verdict of 7 on a 0-2 rubric: the section's
  ``off_scale_levels``) is no rating of it and is left out, as kappa, alpha and the marginal homogeneity table leave it
  out, and counted (``n_judge_off_scale``, beside the failed verdicts, ``n_judge_failed``): kept, a few answers far
  above the scale made a judge that otherwise matches the experts read lenient. That is a readable scale's rule:
  on an item without one the judge's levels are read against the experts' observed range (the section's
  ``rating_ends``), and an answer outside it is out of kappa and alpha but stays a signed error here, counted
  (``n_judge_outside_observed``): a rubric whose experts used only its lower levels says nothing against a judge's
  answer above them, and left out, a judge answering one level above every expert on half such items would read
  "neither", with kappa over its other answers alone.
- **Length bias**: the slope of the judge's oriented residual (judge minus the experts' mean) on the log of the
  answer's length in characters (least squares; the interval clustered by answer, ``cluster_slope``: the criteria
  rows of one answer share its length and are not independent), beside the same slope of each
  expert's leave-one-out residual (the expert minus the mean of the item's other experts). Both on the items with at
  least two experts: an expert's leave-one-out residual needs another expert, and the judge's slope on items the
  experts' slopes cannot see (single-expert ones, whose "experts' mean" is one expert's score) would not be the same
  comparison. The experts' range is
  from the lowest to the highest per-expert slope (named experts with at least ``MIN_PAIRS`` pairs over at least
  ``MIN_SLOPE_ANSWERS`` answers), and a flag needs at least ``MIN_EXPERT_SLOPES`` (2) of them: one expert's slope
  is a range of zero width, and a judge level with the experts' mean (half-way between a named expert lenient on long
  answers and an unnamed one who is not) was flagged harsh for being unlike that one expert. The judge is flagged
  only where its slope is over at least ``MIN_SLOPE_ANSWERS`` answers too and its whole interval lies outside that
  range (above: lenient on long answers; below: harsh on
  long answers). Why a minimum of answers: the length is one value per answer, so the slope's clustered interval has
  as many degrees of freedom as there are answers less two (``cluster_slope``), and with few answers it is too narrow
  even so: with a true slope of 0 the nominal 95% interval covers it well under 95% of the time over a handful of
  answers, less still at t with G - 1 degrees of freedom (``bench/slope_coverage.py``, the figures in
  docs/performance.md), and two answers gave a zero-width interval that flagged any judge slope off the experts'
  range. 30 is where the coverage comes near the nominal level in that simulation; it is this toolkit's choice, the
  same number as ``MIN_PAIRS`` and the alt-test's items per expert. ``MIN_PAIRS`` alone counts pairs, not answers:
  30 pairs can be two answers of 16 criteria. Without named experts there is no range and no flag: the judge's
  slope is reported with its interval, the experts' as unavailable with the reason (``experts: {"pooled": None,
  "why": ...}``).
  Pooling the experts' leave-one-out residuals cannot stand in: on each item they sum to 0 (over the item's k experts
  with sum S, ``e_j - (S - e_j) / (k - 1)`` sums to ``S - (k - 1) S / (k - 1) = 0``), so their slope on any per-item
  regressor such as the answer's length is 0 on every data set, and a "band" around it would flag the judge against
  nothing the experts did. Flagging against 0 instead would read as a comparison with the experts, which it is not
  (docs/validity.md).
  **What the residual's slope confounds.** The judge's residual (judge minus the experts' mean) carries the experts'
  mean with a minus sign, and an expert's leave-one-out residual carries no such quality term: a judge that tracks
  quality less than an expert does (a constant, one compressed toward the middle of the scale, a random one) gets
  about the negative of the experts' mean's own slope on length, and a constant judge exactly that on criteria of one
  orientation. Where longer answers are better, such a judge reads "harsh on long answers" without reading the answers
  at all; read the flag beside the agreement figures (alpha, kappa, the ceiling). Holding the experts' mean in a
  regression does not separate the two: the mean is a noisy measure of quality, and the coefficient of length then
  takes up part of how quality grows with length (a judge of half the experts' slope on quality and no length term had
  a partial slope whose interval excluded 0), so no such figure is given.
- **Marginal homogeneity**: whether the judge uses the scale's levels as often as the experts' mode does: the
  Stuart–Maxwell test of the judge x mode table, clustered by answer (``marginal_homogeneity``). Each item off the
  diagonal moves one count from the judge's level to the mode's; per answer g those moves sum to a vector ``D_g``,
  the margins' difference is ``d = sum_g D_g`` and the statistic ``d' V^+ d`` with ``V = sum_g D_g D_g'``, chi-squared
  with ``rank(V)`` degrees of freedom. With one item per answer ``V`` is the Stuart–Maxwell covariance
  (``V_ii = n_i. + n_.i - 2 n_ii``, ``V_ij = -(n_ij + n_ji)``) and the statistic is statsmodels'
  ``SquareTable(table, shift_zeros=False).homogeneity()`` (its default adds 0.5 to every empty cell) on a table whose used levels all exchange items, directly or through other
  levels (a test pins them equal); on two levels with clusters it is the clustered McNemar test,
  ``(sum_g (b_g - c_g))^2 / sum_g (b_g - c_g)^2`` (Durkalski et al., Statistics in Medicine 22, 2003). Repeating an answer's rows k times scales ``d`` by k and ``V`` by k^2: the same
  statistic. The pseudo-inverse and the rank are why statsmodels is not called: it drops the table's last level to
  invert the covariance and always counts K - 1 degrees of freedom, so a level no item leaves or enters (one used
  only on the diagonal, or by neither side) leaves its covariance singular and its result depends on the labels'
  order: ``[[10, 0, 0], [0, 5, 3], [0, 1, 6]]`` gets no test, the same table with that level last a statistic of 1
  on 2 degrees of freedom (p 0.61), where the test of the two levels that differ is McNemar's
  (3 - 1)^2 / (3 + 1) = 1 on 1 (p 0.32). Here such a level has a zero row and column in ``V`` and drops out of the
  rank; levels that split into groups no item crosses add each group's own statistic and degrees of freedom. The
  section's overall table pools criteria of both orientations and hands in a Critical item's levels flipped on its
  scale, as leniency orients its error (``eval.validity.section``): unflipped, a judge one level more generous
  everywhere moves ordinary criteria's counts up and Critical ones' down, and the two cancel in ``d``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from judge.metrics_json.validity import MIN_EXPERTS_TESTED

__all__ = ["MIN_EXPERT_SLOPES", "MIN_LENIENCY_N", "MIN_PAIRS", "MIN_SLOPE_ANSWERS", "answer_codes", "cluster_mean", "cluster_slope",
           "leniencies", "leniency", "length_bias", "marginal_homogeneity"]

#: An expert's own length slope needs at least this many items.
MIN_PAIRS = 30
#: A length slope counts towards a flag (the judge's, or an expert's in the experts' range) only over at least
#: this many answers (clusters; module docstring): this toolkit's choice.
MIN_SLOPE_ANSWERS = 30
#: A length flag needs the slopes of at least this many experts: one expert's slope is a range of zero width, and a
#: judge level with the experts' mean would be flagged for being unlike that one expert (the alt-test's verdict asks
#: as many tested experts by default, for the same reason).
MIN_EXPERT_SLOPES = MIN_EXPERTS_TESTED
#: A leniency direction needs at least this many answers (clusters; module docstring).
MIN_LENIENCY_N = 10


def answer_codes(model_id: np.ndarray, task_type: np.ndarray, answer_chars: np.ndarray | None = None,
                 instruction_key: np.ndarray | None = None) -> np.ndarray | None:
    """Each item's answer as an integer code, the clusters of the section's analytic intervals (``cluster_slope``,
    ``cluster_mean``, ``marginal_homogeneity``); None when neither the answers' lengths nor the instructions are
    known (a table that cannot tell one answer from another).

    The item table names no answer, so an answer is the items of one evaluated model, one task type, one answer
    length in characters and one instruction (``ItemTable.instruction_key``), of those the table knows: every
    criterion row of an answer shares all four. Two answers that share them too fall into one cluster; a union of
    clusters is still a cluster (the residuals of different clusters stay independent), so the interval stays valid,
    a little wider at most.
    """
    import pandas as pd

    keys = [np.nan_to_num(np.asarray(answer_chars, dtype=float), nan=-1.0) if answer_chars is not None else None,
            np.asarray(instruction_key) if instruction_key is not None else None]
    if all(key is None for key in keys):
        return None
    code = pd.factorize(np.asarray(model_id, dtype=object), use_na_sentinel=False)[0].astype(np.int64)
    for key in [np.asarray(task_type, dtype=object), *(key for key in keys if key is not None)]:
        if not len(code):
            return np.zeros(0, dtype=np.intp)
        part = pd.factorize(key, use_na_sentinel=False)[0].astype(np.int64)  # a missing value is one more value
        code = pd.factorize(code * (int(part.max()) + 1) + part)[0].astype(np.int64)
    return code.astype(np.intp)


def _orientation(best_low: np.ndarray | None, n: int) -> np.ndarray:
    return np.where(np.asarray(best_low, dtype=bool), -1.0, 1.0) if best_low is not None else np.ones(n)


def leniency(judge: np.ndarray, expert_mean: np.ndarray, best_low: np.ndarray | None, level: float = 0.95,
             clusters: np.ndarray | None = None) -> dict[str, Any]:
    """The judge's oriented mean signed error against the experts' mean (positive: lenient), with its interval
    clustered by ``clusters`` (each item's answer as a non-negative integer code; None: each item its own answer,
    the one-sample t interval)."""
    return leniencies(judge, expert_mean, best_low, [np.arange(len(judge))], level, clusters)[0]


def cluster_mean(values: np.ndarray, clusters: np.ndarray | None, level: float = 0.95) -> dict[str, Any]:
    """The mean of ``values`` and its cluster-robust t interval, the clusters given as non-negative integer codes
    (None: each value its own cluster): what ``statsmodels``' ``OLS(values, ones).fit(cov_type="cluster",
    cov_kwds={"groups": clusters}, use_t=True).conf_int()`` gives (a test pins them equal), the mean's counterpart of
    ``cluster_slope``:

        var(mean) = G / (G - 1) sum_g (sum_{i in g} (v_i - mean))^2 / n^2

    with t quantiles at G - 1 degrees of freedom (G clusters, n values). With one value per cluster this is s^2 / n
    and the interval is the one-sample t interval; repeating every cluster's values k times leaves it unchanged.

    Returns:
        ``n``, ``n_clusters``, ``mean`` (None without values), ``ci`` ([None, None] with fewer than 2 clusters).
    """
    return _cluster_means([np.asarray(values, dtype=float)],
                          [None if clusters is None else np.asarray(clusters, dtype=np.intp)], level)[0]


def _cluster_means(values: list[np.ndarray], clusters: list[np.ndarray | None], level: float) -> list[dict[str, Any]]:
    """``cluster_mean`` of each pair, the t quantiles in one scipy call."""
    import pandas as pd
    from scipy.stats import t as student_t

    out, spread = [], []
    for k, (value, codes) in enumerate(zip(values, clusters)):
        n = len(value)
        mean = float(value.mean()) if n else None
        if codes is None:
            g, centred = n, value - (mean or 0.0)
        else:
            # the cell's answers numbered 0..G-1 (a hash, not a sort): a count over every answer of the table per
            # cell would allocate and zero a table-sized array 274 times
            compact, found = pd.factorize(codes)
            g = len(found)
            centred = np.bincount(compact, weights=value - (mean or 0.0), minlength=g)
        out.append({"n": int(n), "n_clusters": g, "mean": mean, "ci": [None, None]})
        if g >= 2:
            # no spread: exactly 0, not the rounding of a mean that is not exactly representable
            variance = 0.0 if np.ptp(value) == 0 else g / (g - 1) * float(centred @ centred) / n**2
            spread.append((k, g, variance))
    if spread:
        index, g, variance = (np.array(column) for column in zip(*spread))
        half = student_t.ppf(0.5 + level / 2, g - 1) * np.sqrt(variance)
        for k, h in zip(index.tolist(), half.tolist()):
            out[k]["ci"] = [out[k]["mean"] - h, out[k]["mean"] + h]
    return out


def leniencies(judge: np.ndarray, expert_mean: np.ndarray, best_low: np.ndarray | None, cells: list[np.ndarray],
               level: float = 0.95, clusters: np.ndarray | None = None,
               off_scale: np.ndarray | None = None,
               outside_observed: np.ndarray | None = None) -> list[dict[str, Any]]:
    """``leniency`` of each cell (its items' indices) of one table, the intervals clustered by ``clusters`` (each
    item's answer as a non-negative integer code; None: each item its own answer). ``off_scale``: ``(n,)`` True
    where the judge's score is no level of the item's readable scale (module docstring: left out, counted); None:
    none is. ``outside_observed``: ``(n,)`` True where an item without a readable scale has the judge's score outside
    the experts' observed range (module docstring: kept, counted); None: not counted.

    Returns:
        Per cell ``n`` (errors), ``mean_signed_error``, ``ci`` and ``direction`` (module docstring: lenient or
        harsh needs at least ``MIN_LENIENCY_N`` answers); with ``off_scale``, ``n_judge_failed`` and
        ``n_judge_off_scale``: the items with an experts' mean whose judge score failed or lies off the scale, out of
        the errors; with ``outside_observed``, ``n_judge_outside_observed``: those items with an experts' mean whose
        judge score lies outside the observed range, in the errors.
    """
    rated = np.isfinite(expert_mean)
    answered = np.isfinite(judge)
    off = np.zeros(len(judge), dtype=bool) if off_scale is None else np.asarray(off_scale, dtype=bool) & answered
    both = answered & rated & ~off
    with np.errstate(invalid="ignore"):
        oriented = (judge - expert_mean) * _orientation(best_low, len(judge))
    kept = [np.asarray(index)[both[index]] for index in cells]
    codes = None if clusters is None else np.asarray(clusters, dtype=np.intp)
    means = _cluster_means([oriented[index] for index in kept],
                           [None if codes is None else codes[index] for index in kept], level)
    # ``& answered``: the section's ``outside_observed`` implies an answer; a hand caller's may not
    outside = (None if outside_observed is None
               else np.asarray(outside_observed, dtype=bool) & answered & rated)
    out = []
    for index, found in zip(cells, means):
        low, high = found["ci"]
        enough = found["n_clusters"] >= MIN_LENIENCY_N  # the floor under the zero-spread rule (module docstring)
        out.append({"n": found["n"], "mean_signed_error": found["mean"], "ci": found["ci"],
                    "direction": ("lenient" if enough and low is not None and low > 0 else
                                  "harsh" if enough and high is not None and high < 0 else "neither")})
        if off_scale is not None:
            index = np.asarray(index)
            out[-1].update(n_judge_failed=int((rated[index] & ~answered[index]).sum()),
                           n_judge_off_scale=int((rated[index] & off[index]).sum()))
        if outside is not None:
            out[-1]["n_judge_outside_observed"] = int(outside[np.asarray(index)].sum())
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

    Why not statsmodels itself: ``score`` would import its regression module and fit ~100 models on 160,000 items
    (the judge and each of 24 experts, per test) inside the seconds the whole ``score`` is budgeted
    (docs/performance.md, the ``judge-eval score`` end-to-end row), for a sandwich with two parameters. By
    Frisch–Waugh–Lovell the slope's row of the sandwich is the centred regressor:

        var(b) = c sum_g (sum_{i in g} (x_i - mean x) e_i)^2 / (sum_i (x_i - mean x)^2)^2

    with statsmodels' small-sample factor c = G / (G - 1) (n - 1) / (n - 2) (G clusters, n rows, e the residuals).

    Degrees of freedom: G - 1, as statsmodels, where ``x`` varies within a cluster; G - 2 where it is constant
    within every cluster (the answer's length, clustered by answer). Then each cluster's score is its centred
    ``x`` times its summed residuals, and those sums add up to 0 and are orthogonal to the centred ``x`` (the normal
    equations of the row-level fit): the scores lie in G - 2 dimensions, the variance is 0 at G = 2 (the line passes
    through both clusters' means, a zero-width interval) and too small at a few more. The t quantile at G - L, L the
    regressors constant within clusters (here the intercept and ``x``), is Donald and Lang's (Review of Economics and
    Statistics 89, 2007), as recommended by Cameron and Miller ("A Practitioner's Guide to Cluster-Robust
    Inference", Journal of Human Resources 50, 2015, Section VI); statsmodels keeps G - 1 (its standard error is
    the same). None where those degrees of freedom are below 1 (fewer than 3 clusters with ``x`` constant within
    them, fewer than 2 otherwise): no interval.
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
    # x constant within every cluster: its within-cluster sum of squares is 0 but for rounding
    cluster_mean = np.bincount(clusters, weights=centred, minlength=len(sizes)) / np.maximum(sizes, 1)
    within = centred - cluster_mean[clusters]
    df = g - 2 if float(within @ within) <= 1e-12 * sxx else g - 1
    if df < 1:
        return None
    slope = float(centred @ (y - y.mean())) / sxx
    residual = y - y.mean() - slope * centred
    score = np.bincount(clusters, weights=centred * residual, minlength=len(sizes))
    variance = g / (g - 1) * (n - 1) / (n - 2) * float(score @ score) / sxx**2
    half = float(student_t.ppf(0.5 + level / 2, df) * np.sqrt(variance))
    return {"n": int(n), "slope": slope, "ci": [slope - half, slope + half]}


def _n_answers(answers: np.ndarray | None, index: np.ndarray) -> int:
    """How many answers the items ``index`` hold (None: each item its own answer). The codes are non-negative
    integers below the table's count of answers: the distinct ones counted by a bincount, not by a sort per expert."""
    return len(index) if answers is None else int(np.count_nonzero(np.bincount(answers[index])))


def length_bias(judge: np.ndarray, experts: np.ndarray, expert_ids: np.ndarray | None, answer_chars: np.ndarray,
                best_low: np.ndarray | None, level: float = 0.95,
                expert_codes: tuple[np.ndarray, np.ndarray] | None = None, mean: np.ndarray | None = None,
                answers: np.ndarray | None = None, off_scale: np.ndarray | None = None) -> dict[str, Any]:
    """The judge's length slope beside the experts' (module docstring), and whether it is flagged.

    ``expert_codes``: the ids already numbered, ``(codes, names)`` with ``codes`` an ``(n, k)`` integer matrix
    parallel to ``experts`` (-1 where unnamed) and ``names[code]`` the id, when the caller has them; ``mean``: the
    experts' mean per item, when the caller has it; ``answers``: ``(n,)`` each item's answer as a non-negative
    integer code, so that the intervals are clustered by answer (``cluster_slope``; the section passes
    ``answer_codes``); None: each item its own answer, the classical interval. ``off_scale``: ``(n,)`` True where
    the judge's score lies off the item's scale: no rating of it, left out of the judge's slope as kappa and alpha
    leave it out, and counted.

    Returns:
        ``judge`` {n, slope, ci} (on the items with at least two experts); ``experts``: ``by_expert`` slopes and
        their ``range`` (named experts), or ``pooled`` None with ``why`` (no named expert: module docstring);
        ``flag``: "lenient on long answers", "harsh on long answers" or None (also whenever there is no experts'
        range to compare with, fewer than ``MIN_EXPERT_SLOPES`` experts have a slope (``experts["why"]`` says so),
        or the judge's slope is over fewer than ``MIN_SLOPE_ANSWERS`` answers). An expert
        with fewer than ``MIN_PAIRS`` pairs or ``MIN_SLOPE_ANSWERS`` answers has no slope in ``by_expert``. With
        ``off_scale``, ``n_judge_failed`` and ``n_judge_off_scale``: the items the judge's slope is drawn from (two
        experts or more) whose judge score failed or lies off the scale, out of the slope.
    """
    from eval.scoring.metrics import expert_mean

    sign = _orientation(best_low, len(judge))
    length = np.log(np.maximum(np.asarray(answer_chars, dtype=float), 1.0))
    mean = expert_mean(experts) if mean is None else mean
    valid = ~np.isnan(experts)
    count = valid.sum(axis=1, keepdims=True)
    # the judge on the items the experts' slopes are drawn from: two experts or more (module docstring)
    eligible = np.isfinite(mean) & (count[:, 0] >= 2)
    answered = np.isfinite(judge)
    off = np.zeros(len(judge), dtype=bool) if off_scale is None else np.asarray(off_scale, dtype=bool) & answered
    both = eligible & answered & ~off
    answers = None if answers is None else np.asarray(answers, dtype=np.intp)
    out: dict[str, Any] = {"judge": _slope(length[both], ((judge - mean) * sign)[both], level,
                                           None if answers is None else answers[both])}
    judge_answers = _n_answers(answers, np.flatnonzero(both))
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
            # the same minimum of answers as the judge's slope (module docstring)
            if len(mine) >= MIN_PAIRS and _n_answers(answers, item[mine]) >= MIN_SLOPE_ANSWERS:
                fitted = _slope(length[item[mine]], residual[mine], level,
                                None if answers is None else answers[item[mine]])
                if fitted is not None:
                    slopes[str(names[code])] = fitted
        experts_out["by_expert"] = slopes
        if slopes:
            values = [s["slope"] for s in slopes.values()]
            experts_out["range"] = [min(values), max(values)]
            if len(slopes) >= MIN_EXPERT_SLOPES:
                band = experts_out["range"]
            else:
                experts_out["why"] = (f"experts with a slope of their own: {len(slopes)}; a flag needs the range of "
                                      f"at least {MIN_EXPERT_SLOPES}: one expert's slope is no range of the experts, "
                                      f"and a judge level with the experts' mean would be flagged for being unlike "
                                      f"that one expert")
    out["experts"] = experts_out
    flag = None
    if out["judge"] is not None and band is not None and judge_answers >= MIN_SLOPE_ANSWERS:
        low, high = out["judge"]["ci"]
        flag = "lenient on long answers" if low > band[1] else "harsh on long answers" if high < band[0] else None
    out["flag"] = flag
    if off_scale is not None:
        out.update(n_judge_failed=int((eligible & ~answered).sum()), n_judge_off_scale=int((eligible & off).sum()))
    return out


def marginal_homogeneity(judge_levels: np.ndarray, mode: np.ndarray, domain: np.ndarray,
                         clusters: np.ndarray | None = None) -> dict[str, Any]:
    """The Stuart–Maxwell test of the judge x expert-mode table over ``domain``, clustered by ``clusters`` (each
    item's answer as a non-negative integer code; None: each item its own answer, the plain Stuart–Maxwell test):
    ``d' V^+ d`` on ``rank(V)`` degrees of freedom (module docstring).

    Returns:
        ``n``, ``levels`` (those tested: the levels some item leaves or enters), ``statistic``, ``df``,
        ``p_value`` (None, with ``why``, when no answer moves any count off the diagonal: the margins are then
        equal), and the two margins ``judge_margin`` / ``experts_margin`` over ``domain``.
    """
    from scipy.stats import chi2

    from eval.validity.agreement import level_positions

    domain = np.asarray(domain, dtype=float)
    (j, in_judge), (m, in_mode) = level_positions(judge_levels, domain), level_positions(mode, domain)
    inside = in_judge & in_mode  # NaN on either side is no level
    size = len(domain)
    table = np.bincount(j[inside] * size + m[inside], minlength=size * size).reshape(size, size).astype(float)
    out: dict[str, Any] = {"n": int(inside.sum()), "judge_margin": table.sum(axis=1).tolist(),
                           "experts_margin": table.sum(axis=0).tolist(), "statistic": None, "df": None,
                           "p_value": None}
    off = np.flatnonzero(inside & (j != m))
    if clusters is None:
        group, n_groups = np.arange(len(off)), len(off)
    else:
        group = np.unique(np.asarray(clusters)[off], return_inverse=True)[1].ravel()
        n_groups = int(group.max()) + 1 if len(group) else 0
    # per answer, the counts its items move from the judge's level to the mode's
    moves = (np.bincount(group * size + m[off], minlength=n_groups * size)
             - np.bincount(group * size + j[off], minlength=n_groups * size)).reshape(n_groups, size).astype(float)
    difference = moves.sum(axis=0)  # the experts' margin minus the judge's
    covariance = moves.T @ moves
    tested = np.diag(covariance) > 0
    out["levels"] = domain[tested].tolist()
    if not tested.any():
        out["why"] = ("no item lies off the diagonal (or every answer's moves cancel): the judge's and the experts' "
                      "margins are equal, nothing to test")
        return out
    values, vectors = np.linalg.eigh(covariance[np.ix_(tested, tested)])
    # V's null space: one direction per group of levels no item crosses (V's rows sum to 0); d lies in V's range
    kept = values > values.max() * 1e-10
    projected = vectors[:, kept].T @ difference[tested]
    statistic = float(np.sum(projected**2 / values[kept]))
    df = int(kept.sum())
    out.update(statistic=statistic, df=df, p_value=float(chi2.sf(statistic, df)))
    return out

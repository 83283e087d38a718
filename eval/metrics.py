"""The POLLUX paper's judge metrics (Appendix D.2), pure and vectorised over items.

Definitions, as the paper states them:

- **MAE** between the judge's score and the *mode* of the experts' scores for the item; items whose experts have
  no unique mode are excluded (and counted). Regression judges, whose scores are real-valued, are compared with
  the experts' *mean* instead (no exclusion needed).
- **Verdict Confidence** of an item: the largest share of one score among its annotators (3 experts scoring
  2, 2, 1 give 2/3). The judge's value replaces one randomly chosen expert with the judge and recomputes that
  share, repeated ``repeats`` (100) times with a fixed seed and averaged; it is reported beside the experts' own.
  An item with fewer than two (non-abstaining) annotators has no Verdict Confidence, for the experts or the judge:
  the paper computes it only where annotations overlap and shows "—" for criteria annotated by one expert
  (``seeds/003_04de0265a3137b49.txt:917`` Table 15, ``:981`` Table 16).
- **Spearman** correlation pooled over all items of an evaluated model or a task type (not per criterion: a
  criterion's scores take 2–5 values, too many ties). Pearson and Kendall's tau-b are reported beside it.
- **Confusion matrices** judge x expert mode, judge scores rounded half up to a level.

Expert scores arrive as a NaN-padded float matrix ``(n_items, max_experts)`` (``pad_scores`` builds one), valid
scores first in each row. A judge score of NaN means "no score" (a parse failure is never a score).

Bootstrap intervals resample items. Every statistic here is a function of the items' distinct value tuples
(judge score, reference), so items are first compressed into those cells with counts and a resample becomes a
weight vector over cells: for discrete judges that is a handful of cells, and 1,000 resamples cost
milliseconds whatever the number of items.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "pad_scores",
    "level_counts",
    "expert_mode",
    "expert_mean",
    "round_half_up",
    "MIN_VC_ANNOTATORS",
    "verdict_confidence_experts",
    "verdict_confidence_judge",
    "verdict_confidence_judge_expected",
    "mean_absolute_error",
    "spearman",
    "pearson",
    "kendall",
    "confusion_matrix",
    "bootstrap_ci",
    "describe_pairs",
    "paired_bootstrap",
    "cell_rng",
]

# Resample weight matrices are built and reduced in chunks of at most this many (resample x cell) entries:
# 4M float64 = 32 MiB per temporary, whatever the number of items.
_CHUNK_ENTRIES = 4_000_000
# A resample is drawn either as one multinomial over the cells (a binomial per cell, ~300 ns each) or as n item
# indices counted per cell (~14 ns per item); whichever costs less for the cell's m and n.
_NS_PER_BINOMIAL, _NS_PER_INDEX = 300.0, 14.0
# Resamples of real-valued (regression) scores are drawn on a 0.01 grid where Spearman is resampled too: a
# full-test cell then has thousands of distinct values instead of 160k, and an MAE bound moves by at most 0.005.
# Point estimates always use the exact scores; MAE-only cells resample exact item errors.
BOOTSTRAP_RESOLUTION = 0.01
# Verdict Confidence needs overlapping annotations: with one annotator the share is 1 whatever was said, and the
# paper leaves such items out ("the Verdict Confidence was not calculated, as annotations ... were conducted without
# overlap", seeds/003_04de0265a3137b49.txt:917 and :981).
MIN_VC_ANNOTATORS = 2


# --------------------------------------------------------------------------------------------------- experts


def pad_scores(score_lists: Sequence[Sequence[float]]) -> np.ndarray:
    """Expert scores of several items as a NaN-padded matrix.

    Args:
        score_lists: one sequence of scores per item (lengths may differ, may be empty).

    Returns:
        float64 array ``(n_items, max_len)``; row i holds item i's scores first, NaN after them.
    """
    lengths = np.fromiter((len(s) for s in score_lists), dtype=np.int64, count=len(score_lists))
    width = int(lengths.max()) if len(lengths) else 0
    padded = np.full((len(lengths), max(width, 1)), np.nan)
    if lengths.sum():
        flat = np.fromiter((float(v) for s in score_lists for v in s), dtype=np.float64, count=int(lengths.sum()))
        rows = np.repeat(np.arange(len(lengths)), lengths)
        # Position of each score inside its row: a running index that restarts at every row start.
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        padded[rows, np.arange(len(flat)) - starts] = flat
    return padded


def level_counts(experts: np.ndarray, levels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """How many experts gave each score level, per item.

    Args:
        experts: NaN-padded ``(n, k)`` scores.
        levels: the score levels to count (sorted); default: the distinct scores present.

    Returns:
        ``(counts, levels)``: int64 ``(n, len(levels))`` and the levels.

    Raises:
        ValueError: a score that is not one of ``levels``.
    """
    valid = ~np.isnan(experts)
    values = experts[valid]
    levels = np.unique(values) if levels is None else np.asarray(levels, dtype=np.float64)
    index = np.searchsorted(levels, values)
    index = np.minimum(index, max(len(levels) - 1, 0))
    if len(values) and (len(levels) == 0 or not np.array_equal(levels[index], values)):
        raise ValueError("an expert score is not one of the given levels")
    rows = np.nonzero(valid)[0]
    n, n_levels = experts.shape[0], len(levels)
    counts = np.bincount(rows * n_levels + index, minlength=n * n_levels).reshape(n, n_levels)
    return counts, levels


def expert_mode(experts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mode of each item's expert scores, and whether it is unique.

    Returns:
        ``(mode, unique)``: mode is NaN where there is no unique mode (a tie for the largest count, or no
        scores); ``unique`` is the boolean mask of items that have one.
    """
    counts, levels = level_counts(experts)
    if counts.shape[1] == 0:
        return np.full(len(experts), np.nan), np.zeros(len(experts), dtype=bool)
    top = counts.max(axis=1)
    unique = (top > 0) & ((counts == top[:, None]).sum(axis=1) == 1)
    mode = np.where(unique, levels[counts.argmax(axis=1)], np.nan)
    return mode, unique


def expert_mean(experts: np.ndarray) -> np.ndarray:
    """The mean of each item's expert scores (NaN for an item with none)."""
    valid = ~np.isnan(experts)
    k = valid.sum(axis=1)
    total = np.where(valid, experts, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, total / np.maximum(k, 1), np.nan)


def round_half_up(values: np.ndarray) -> np.ndarray:
    """Round to the nearest integer, halves up (1.5 -> 2, 0.5 -> 1), unlike numpy's round-half-to-even."""
    return np.floor(np.asarray(values, dtype=np.float64) + 0.5)


# ---------------------------------------------------------------------------------------- verdict confidence


def verdict_confidence_experts(experts: np.ndarray) -> np.ndarray:
    """Per item, the largest share of one score among its experts: ``max_y (1/N) sum_i [y_i = y]``
    (``seeds/003_04de0265a3137b49.txt:825``); NaN for an item with fewer than ``MIN_VC_ANNOTATORS`` scores."""
    counts, _ = level_counts(experts)
    k = counts.sum(axis=1)
    if counts.shape[1] == 0:
        return np.full(len(experts), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k >= MIN_VC_ANNOTATORS, counts.max(axis=1) / np.maximum(k, 1), np.nan)


def _replacement_shares(experts: np.ndarray, judge: np.ndarray):
    """Shared set-up of the judge's Verdict Confidence.

    For every item with a judge score and at least ``MIN_VC_ANNOTATORS`` experts, and every score level ``l`` an expert could have
    given, the largest share of one score after one expert who gave ``l`` is replaced with the judge.

    Returns:
        ``(rows, shares, counts, level_index, k)``: the items used, ``(m, L)`` shares (meaningless where no expert
        gave ``l``; those columns are never drawn), ``(m, L)`` expert level counts, ``(m, K)`` level index of each
        expert position (-1 for padding), and the experts per item.
    """
    judge_level = round_half_up(judge)
    overlapping = (~np.isnan(experts)).sum(axis=1) >= MIN_VC_ANNOTATORS
    rows = np.nonzero(np.isfinite(judge_level) & overlapping)[0]
    if len(rows) == 0:  # no judged item (a judge whose every verdict failed): nothing to replace
        empty = np.zeros((0, 1))
        return rows, empty, empty.astype(np.int64), np.zeros((0, experts.shape[1]), dtype=np.int64), np.zeros(0)
    sub = experts[rows]
    levels = np.unique(np.concatenate([sub[~np.isnan(sub)], judge_level[rows]]))
    counts, _ = level_counts(sub, levels)
    k = counts.sum(axis=1)
    m, n_levels = counts.shape
    with_judge = counts.copy()
    with_judge[np.arange(m), np.searchsorted(levels, judge_level[rows])] += 1
    shares = np.empty((m, n_levels))
    for removed in range(n_levels):  # L is the number of score levels: 2 to 5 on POLLUX scales
        after = with_judge.copy()
        after[:, removed] -= 1
        shares[:, removed] = after.max(axis=1) / k
    level_index = np.where(~np.isnan(sub), np.searchsorted(levels, np.nan_to_num(sub, nan=levels[0])), -1)
    return rows, shares, counts, level_index, k


def verdict_confidence_judge(experts: np.ndarray, judge: np.ndarray, repeats: int = 100, seed: int = 0) -> np.ndarray:
    """Per item, the judge's Verdict Confidence: replace one randomly chosen expert with the judge, take the
    largest share of one score, average over ``repeats`` draws.

    The draws use ``numpy.random.default_rng(seed)``; each repeat draws one expert position per item, uniformly
    among that item's experts. A real-valued (regression) judge score is rounded half up to a level first.

    Args:
        experts: NaN-padded ``(n, k)`` expert scores.
        judge: ``(n,)`` judge scores, NaN where the judge gave none.
        repeats: number of random replacements averaged (the paper uses 100).
        seed: seed of the replacement draws.

    Returns:
        ``(n,)`` float64, NaN where the judge gave no score or the item has fewer than ``MIN_VC_ANNOTATORS``
        expert scores.
    """
    out = np.full(len(judge), np.nan)
    rows, shares, _, level_index, k = _replacement_shares(experts, np.asarray(judge, dtype=np.float64))
    if len(rows) == 0:
        return out
    rng = np.random.default_rng(seed)
    m = len(rows)
    item = np.arange(m)
    total = np.zeros(m)
    for _ in range(repeats):  # 100 vectorised passes over all items; memory stays O(items)
        position = (rng.random(m) * k).astype(np.int64)
        total += shares[item, level_index[item, position]]
    out[rows] = total / repeats
    return out


def verdict_confidence_judge_expected(experts: np.ndarray, judge: np.ndarray) -> np.ndarray:
    """The exact expectation that ``verdict_confidence_judge`` estimates by sampling (its limit as repeats grow).

    Each expert is replaced with probability 1/k, so the expectation weighs each level's share by the fraction of
    experts who gave that level.
    """
    out = np.full(len(judge), np.nan)
    rows, shares, counts, _, k = _replacement_shares(experts, np.asarray(judge, dtype=np.float64))
    if len(rows):
        out[rows] = (counts * shares).sum(axis=1) / k
    return out


# ------------------------------------------------------------------------------------- point statistics


def _pairs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"shapes differ: {x.shape} vs {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def mean_absolute_error(pred: np.ndarray, ref: np.ndarray) -> float:
    """Mean |pred - ref| over items where both are finite (NaN when there are none)."""
    x, y = _pairs(pred, ref)
    return float(np.abs(x - y).mean()) if len(x) else float("nan")


def _cells(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of the stacked columns and how many items share each.

    Each column is coded to integers first and the codes combined into one int64 key, because a 1-D sort is an
    order of magnitude faster than ``np.unique(axis=0)`` on the 160k rows of a full test.
    """
    n = len(columns[0]) if columns else 0
    if n == 0:
        return np.zeros((0, len(columns))), np.zeros(0, dtype=np.int64)
    key = np.zeros(n, dtype=np.int64)
    bound = 1  # key < bound
    for column in columns:
        values, codes = np.unique(column, return_inverse=True)
        if bound * len(values) >= 2**62:  # several real-valued columns: renumber the key before it overflows
            _, key = np.unique(key, return_inverse=True)
            bound = int(key.max()) + 1
        key = key * len(values) + codes  # mixed radix
        bound *= len(values)
    keys, first, counts = np.unique(key, return_index=True, return_counts=True)
    cells = np.column_stack([np.asarray(c, dtype=np.float64)[first] for c in columns])
    return cells, counts


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Midranks of cell values when cell j is repeated ``weights[b, j]`` times (ties share their average rank).

    Args:
        values: ``(m,)`` cell values.
        weights: ``(B, m)`` non-negative integer weights.

    Returns:
        ``(B, m)`` rank of each cell's value within resample b.
    """
    distinct, inverse = np.unique(values, return_inverse=True)
    if len(distinct) <= 8:
        # Few distinct values (discrete scores): a tiny matrix product sums the weights per value.
        onehot = np.zeros((len(values), len(distinct)))
        onehot[np.arange(len(values)), inverse] = 1.0
        totals = weights @ onehot
    else:
        order = np.argsort(inverse, kind="stable")
        starts = np.r_[0, np.flatnonzero(np.diff(inverse[order])) + 1]
        totals = np.add.reduceat(weights[:, order], starts, axis=1)
    # A block of t tied items after s earlier ones occupies ranks s+1..s+t; their midrank is s + (t+1)/2.
    midranks = np.cumsum(totals, axis=1) - (totals - 1.0) / 2.0
    return midranks[:, inverse]


def _weighted_pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pearson r of cell values under each resample's weights; x, y are ``(m,)`` or ``(B, m)``.

    Raw weighted moments (one pass each, no ``(B, m)`` temporaries beyond w*x and w*y): values are scores or ranks
    below 1e6, so float64 keeps the variances exact to ~1e-9 relative.
    """
    x2 = np.broadcast_to(x, weights.shape)
    y2 = np.broadcast_to(y, weights.shape)
    total = weights.sum(axis=1)
    wx, wy = weights * x2, weights * y2
    sx, sy = wx.sum(axis=1), wy.sum(axis=1)
    sxx = np.einsum("bm,bm->b", wx, x2)
    syy = np.einsum("bm,bm->b", wy, y2)
    sxy = np.einsum("bm,bm->b", wx, y2)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxy - sx * sy / total
        vx = sxx - sx * sx / total
        vy = syy - sy * sy / total
        r = cov / np.sqrt(vx * vy)
    # A constant side has no correlation; the tolerance absorbs the rounding of the raw moments.
    degenerate = (vx <= 1e-9 * np.abs(sxx)) | (vy <= 1e-9 * np.abs(syy)) | (total < 2)
    return np.where(degenerate, np.nan, np.clip(r, -1.0, 1.0))


def _statistic(name: str, x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """A statistic of cells (x, y) under ``(B, m)`` weights, one value per resample."""
    if name == "mae":
        total = weights.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return weights @ np.abs(x - y) / total
    if name == "mean":  # mean of x (y ignored): per-item values such as Verdict Confidence
        total = weights.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return weights @ x / total
    if name == "pearson":
        return _weighted_pearson(x, y, weights)
    if name == "spearman":
        return _weighted_pearson(_weighted_ranks(x, weights), _weighted_ranks(y, weights), weights)
    raise ValueError(f"unknown statistic {name!r} (mae, mean, pearson, spearman)")


def _point(name: str, x: np.ndarray, y: np.ndarray) -> float:
    x, y = _pairs(x, y)
    if len(x) == 0:
        return float("nan")
    cells, counts = _cells(x, y)
    return float(_statistic(name, cells[:, 0], cells[:, 1], counts[None, :].astype(np.float64))[0])


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho over pairs where both are finite: Pearson r of midranks (ties averaged). NaN if either
    side is constant or there are fewer than 2 pairs."""
    return _point("spearman", x, y)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r over pairs where both are finite (NaN if either side is constant)."""
    return _point("pearson", x, y)


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (tie-corrected) over pairs where both are finite; NaN if either side is constant."""
    x, y = _pairs(x, y)
    if len(x) < 2:
        return float("nan")
    cells, counts = _cells(x, y)
    return _kendall_cells(cells[:, 0], cells[:, 1], counts, x, y)


# Up to this many distinct (x, y) cells, tau-b comes from an m x m sign matrix; beyond it, scipy's O(n log n).
_KENDALL_MAX_CELLS = 2_048


def _kendall_cells(cx: np.ndarray, cy: np.ndarray, counts: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    if len(np.unique(cx)) < 2 or len(np.unique(cy)) < 2:
        return float("nan")
    if len(counts) > _KENDALL_MAX_CELLS:
        from scipy.stats import kendalltau

        return float(kendalltau(x, y).statistic)
    w = counts.astype(np.float64)
    n = w.sum()
    # Concordant minus discordant pairs: items in the same cell tie on both sides and add nothing.
    signs = np.sign(cx[:, None] - cx[None, :]) * np.sign(cy[:, None] - cy[None, :])
    c_minus_d = 0.5 * w @ signs @ w
    pairs = n * (n - 1) / 2

    def tied_pairs(values: np.ndarray) -> float:
        _, inverse = np.unique(values, return_inverse=True)
        t = np.bincount(inverse, weights=w)
        return float((t * (t - 1) / 2).sum())

    return float(c_minus_d / np.sqrt((pairs - tied_pairs(cx)) * (pairs - tied_pairs(cy))))


def confusion_matrix(pred: np.ndarray, ref: np.ndarray, levels: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Counts of (judge level, expert level) pairs; judge scores rounded half up to levels.

    Args:
        pred: judge scores (NaN skipped).
        ref: expert reference levels, e.g. the mode (NaN skipped).
        levels: the axis levels; default: every level seen on either side. Pairs outside them are dropped.

    Returns:
        ``(matrix, levels)``: int64 ``(L, L)``, rows = judge, columns = experts.
    """
    x, y = _pairs(round_half_up(pred), round_half_up(ref))
    levels = np.unique(np.concatenate([x, y])) if levels is None else np.asarray(levels, dtype=np.float64)
    n_levels = len(levels)
    matrix = np.zeros((n_levels, n_levels), dtype=np.int64)
    if n_levels == 0 or len(x) == 0:
        return matrix, levels
    xi, yi = np.searchsorted(levels, x), np.searchsorted(levels, y)
    xi_c, yi_c = np.minimum(xi, n_levels - 1), np.minimum(yi, n_levels - 1)
    keep = (levels[xi_c] == x) & (levels[yi_c] == y)
    np.add.at(matrix, (xi_c[keep], yi_c[keep]), 1)
    return matrix, levels


# ---------------------------------------------------------------------------------------------- bootstrap


def cell_rng(seed: int, key: str) -> np.random.Generator:
    """A generator for one table cell: the same (seed, key) always draws the same resamples, whatever order the
    cells are computed in."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def _use_multinomial(m: int, n: int) -> bool:
    """Whether a multinomial over m cells is cheaper than drawing n item indices."""
    return m * _NS_PER_BINOMIAL <= n * _NS_PER_INDEX


def _resampled_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``values``, drawn in chunks of bounded size."""
    n = len(values)
    chunk = max(1, _CHUNK_ENTRIES // n)
    means = [values[rng.integers(0, n, size=(min(chunk, n_boot - done), n))].mean(axis=1)
             for done in range(0, n_boot, chunk)]
    return np.concatenate(means)


def _resample_weights(counts: np.ndarray, n_boot: int, rng: np.random.Generator):
    """Yield ``(b, m)`` float64 weight blocks, ``n_boot`` rows in all: each row is one bootstrap resample of the
    ``counts.sum()`` items, expressed as how many times each cell was drawn."""
    n, m = int(counts.sum()), len(counts)
    multinomial = _use_multinomial(m, n)
    chunk = max(1, _CHUNK_ENTRIES // max(m if multinomial else n, 1))
    if not multinomial:
        cell_of_item = np.repeat(np.arange(m), counts)
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        if multinomial:
            block = rng.multinomial(n, counts / n, size=b).astype(np.float64)
        else:
            # b resamples of n item indices at once, counted per (resample, cell) with one bincount.
            drawn = cell_of_item[rng.integers(0, n, size=(b, n))] + (np.arange(b) * m)[:, None]
            block = np.bincount(drawn.ravel(), minlength=b * m).reshape(b, m).astype(np.float64)
        done += b
        yield block


def _interval(samples: np.ndarray, level: float) -> list[float]:
    samples = samples[np.isfinite(samples)]
    if len(samples) == 0:
        return [float("nan"), float("nan")]
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return [float(low), float(high)]


def _grid(values: np.ndarray) -> np.ndarray:
    """Judge scores as resampled: exact when they are already on the 0.01 grid (verdicts), else rounded to it."""
    snapped = np.round(values / BOOTSTRAP_RESOLUTION) * BOOTSTRAP_RESOLUTION
    return values if np.allclose(snapped, values, rtol=0, atol=1e-9) else snapped


def bootstrap_ci(
    x: np.ndarray,
    y: np.ndarray,
    statistic: str,
    n_boot: int = 1000,
    rng: np.random.Generator | None = None,
    level: float = 0.95,
) -> list[float]:
    """Percentile bootstrap interval of a statistic over items (pairs where both x and y are finite).

    Args:
        x, y: per-item values (judge score and reference; for ``"mean"`` only x matters, pass y = x).
        statistic: ``"mae"``, ``"spearman"``, ``"pearson"`` or ``"mean"``.
        n_boot: number of resamples.
        rng: the generator (``cell_rng``); default: seed 0.
        level: coverage of the interval.

    Returns:
        ``[low, high]``; NaN bounds when there are fewer than 2 items or every resample is undefined.
    """
    rng = rng or np.random.default_rng(0)
    x, y = _pairs(x, y)
    if len(x) < 2 or n_boot <= 0:
        return [float("nan"), float("nan")]
    cells, counts = _cells(_grid(x), y)
    samples = np.concatenate(
        [_statistic(statistic, cells[:, 0], cells[:, 1], w) for w in _resample_weights(counts, n_boot, rng)]
    )
    return _interval(samples, level)


def describe_pairs(
    x: np.ndarray,
    y: np.ndarray,
    n_boot: int = 1000,
    rng: np.random.Generator | None = None,
    level: float = 0.95,
    correlations: bool = True,
) -> dict[str, Any]:
    """MAE with its interval and, with ``correlations``, Spearman (with interval), Pearson and Kendall, over pairs
    where both x and y are finite.

    Equal to calling ``mean_absolute_error``, ``bootstrap_ci``, ``spearman``, ``pearson`` and ``kendall`` one by
    one, but the items are compressed into cells once and MAE and Spearman share each resample.

    Returns:
        ``{"n", "mae", "mae_ci"}`` plus ``"spearman", "spearman_ci", "pearson", "kendall"`` with correlations.
    """
    rng = rng or np.random.default_rng(0)
    x, y = _pairs(x, y)
    nan2 = [float("nan"), float("nan")]
    out: dict[str, Any] = {"n": len(x), "mae": float("nan"), "mae_ci": nan2}
    if correlations:
        out.update(spearman=float("nan"), spearman_ci=nan2, pearson=float("nan"), kendall=float("nan"))
    if len(x) == 0:
        return out
    cells, counts = _cells(x, y)
    cx, cy = cells[:, 0], cells[:, 1]
    ones = counts[None, :].astype(np.float64)
    names = ("mae", "spearman") if correlations else ("mae",)
    for name in names:
        out[name] = float(_statistic(name, cx, cy, ones)[0])
    if correlations:
        out["pearson"] = float(_statistic("pearson", cx, cy, ones)[0])
        out["kendall"] = _kendall_cells(cx, cy, counts, x, y)
    if len(x) >= 2 and n_boot > 0:
        gx = _grid(x)
        if gx is not x:
            cells, counts = _cells(gx, y)
            cx, cy = cells[:, 0], cells[:, 1]
        if not correlations and not _use_multinomial(len(counts), len(x)):
            # MAE alone over many distinct values (a regression judge): averaging resampled item errors directly
            # skips the per-cell counting (about twice as fast) and needs no grid: the interval is exact.
            out["mae_ci"] = _interval(_resampled_means(np.abs(x - y), n_boot, rng), level)
            return out
        samples: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for weights in _resample_weights(counts, n_boot, rng):
            for name in names:
                samples[name].append(_statistic(name, cx, cy, weights))
        for name in names:
            out[f"{name}_ci"] = _interval(np.concatenate(samples[name]), level)
    return out


def paired_bootstrap(
    x_a: np.ndarray,
    y_a: np.ndarray,
    x_b: np.ndarray,
    y_b: np.ndarray,
    statistic: str,
    n_boot: int = 1000,
    rng: np.random.Generator | None = None,
    level: float = 0.95,
) -> dict[str, Any]:
    """Paired bootstrap of ``stat(B) - stat(A)`` over the items both judges scored.

    The same resampled items feed both judges, so the per-item pairing (same answer, same criterion) cancels
    item difficulty out of the difference.

    Args:
        x_a, y_a: judge A's scores and references (NaN: not scored by A).
        x_b, y_b: judge B's, aligned with A's item by item.
        statistic: ``"mae"``, ``"spearman"``, ``"pearson"`` or ``"mean"``.
        n_boot, rng, level: as for ``bootstrap_ci``.

    Returns:
        ``{"n", "a", "b", "delta", "ci": [low, high], "p_value"}``: the statistic of each judge on the paired
        items, ``delta = b - a``, its percentile interval, and the two-sided bootstrap p-value of delta = 0
        (twice the smaller share of resampled deltas on either side of 0, capped at 1).
    """
    rng = rng or np.random.default_rng(0)
    columns = [np.asarray(c, dtype=np.float64) for c in (x_a, y_a, x_b, y_b)]
    keep = np.logical_and.reduce([np.isfinite(c) for c in columns])
    columns = [c[keep] for c in columns]
    n = int(keep.sum())
    result: dict[str, Any] = {"n": n, "a": float("nan"), "b": float("nan"), "delta": float("nan"),
                              "ci": [float("nan"), float("nan")], "p_value": float("nan")}
    if n == 0:
        return result
    cells, counts = _cells(*columns)
    ones = counts[None, :].astype(np.float64)
    a = float(_statistic(statistic, cells[:, 0], cells[:, 1], ones)[0])
    b = float(_statistic(statistic, cells[:, 2], cells[:, 3], ones)[0])
    result.update(a=a, b=b, delta=b - a)
    if n < 2 or n_boot <= 0:
        return result
    cells, counts = _cells(_grid(columns[0]), columns[1], _grid(columns[2]), columns[3])
    deltas = np.concatenate(
        [
            _statistic(statistic, cells[:, 2], cells[:, 3], w) - _statistic(statistic, cells[:, 0], cells[:, 1], w)
            for w in _resample_weights(counts, n_boot, rng)
        ]
    )
    deltas = deltas[np.isfinite(deltas)]
    if len(deltas):
        result["ci"] = _interval(deltas, level)
        result["p_value"] = float(min(1.0, 2.0 * min((deltas <= 0).mean(), (deltas >= 0).mean())))
    return result

"""The fast bootstrap engine behind the metrics' intervals: percentile bootstrap over items, in milliseconds.

    from eval.scoring import bootstrap
    bootstrap.describe_pairs(judge, mode, n_boot=1000, rng=bootstrap.cell_rng(seed, "test/overall"))

Every statistic bootstrapped here (MAE, Spearman, Pearson, a mean; ``eval.scoring.metrics`` defines them) is a function of
the items' distinct value tuples (judge score, reference), so items are first compressed into those *cells* with
counts, and a resample becomes a weight vector over cells: for discrete judges that is a handful of cells, and 1,000
resamples cost milliseconds whatever the number of items. A resample is still what the naive bootstrap draws (n
items with replacement); ``tests/unit/test_eval_bootstrap.py`` checks the intervals against ``scipy.stats.bootstrap``.

Point estimates computed here (``describe_pairs``, ``paired_bootstrap``) use the same weighted cells with each
cell's count as weight; they equal ``eval.scoring.metrics``' plain definitions up to float rounding (tested).

Why one module of ~510 lines: the three entry points (``bootstrap_ci``, ``describe_pairs``, ``paired_bootstrap``)
share the private cell compression, resample weights and weighted statistics; split, those would become public
signatures for no reader's gain.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from eval.scoring.interval_options import PERCENTILE_METHOD
from eval.scoring.metrics import finite_pairs
from eval.scoring.resample_rules import called_interval

__all__ = [
    "BOOTSTRAP_RESOLUTION",
    "MIN_SPEARMAN_PAIRS",
    "MIN_VERDICT_UNITS",
    "cell_rng",
    "bootstrap_ci",
    "cluster_resample_weights",
    "describe_pairs",
    "paired_bootstrap",
    "percentile_interval",
    "resample_weights",
]

# Resample weight matrices are built and reduced in chunks of at most this many (resample x cell) entries:
# 4M float64 = 32 MiB per temporary, whatever the number of items.
_CHUNK_ENTRIES = 4_000_000
# A resample is drawn either as one multinomial over the cells (a binomial per cell, ~300 ns each) or as n item
# indices counted per cell (~14 ns per item); whichever costs less for the cell's m and n.
_NS_PER_BINOMIAL, _NS_PER_INDEX = 300.0, 14.0
# Resamples of real-valued (regression) judge scores are drawn on a 0.01 grid where Spearman is resampled too: a
# full-test cell then has thousands of distinct values instead of 160k, and an MAE bound moves by at most 0.005.
# Point estimates always use the exact scores; MAE-only cells resample exact item errors.
BOOTSTRAP_RESOLUTION = 0.01
#: Fewer resampled units than this (items; whole instructions under ``--bootstrap-unit instruction``) give no verdict
#: read off a percentile bootstrap interval: over a handful of units the resamples take a handful of distinct values,
#: so the interval can be narrow, even of zero width, by chance. Two paired items whose deltas are equal give every
#: resample that delta: the interval [d, d] and a p-value of 0, a "better" from two items. The experts' ceiling
#: (``eval.validity.ceiling.MIN_ITEMS``, "inconclusive" below it) and ``judge-eval compare`` ("n.s." below it) read
#: their verdicts against this one minimum, the alt-test's default items per expert
#: (``AltTestSettings.min_items_per_expert``) and the length slopes' pairs (``eval.validity.bias.MIN_PAIRS``).
MIN_VERDICT_UNITS = 30
#: Spearman's interval needs at least this many pairs. Any two pairs with distinct values are perfectly monotone
#: (rho = +1 or -1 whatever the scores), and so is every resample of them: an interval [1, 1] says nothing about the
#: judge. Three pairs are the fewest whose rho can take a value other than +-1 (1, 0.5, -0.5, -1 on distinct values).
#: The point value is kept below it (``eval.scoring.metrics.spearman``'s, as the paper's tables report it); only
#: the interval is NaN (null in metrics.json, "—" in the reports).
MIN_SPEARMAN_PAIRS = 3
# ``_cells`` counts a combined key of at most this many values per item (its count array and its first-item array
# each of at most four entries per item); a larger one (a real-valued column's thousands of values) it sorts.
_COUNTED_KEYS_PER_ITEM = 4


def _cells(*columns: np.ndarray, item_cells: bool = False):
    """Distinct rows of the stacked columns and how many items share each (with ``item_cells``, also each item's
    row: ``(cells, counts, cell_of_item)``).

    Each column is coded to integers first and the codes combined into one int64 key, because a 1-D sort of
    integers is far cheaper than ``np.unique(axis=0)``'s sort of rows on the 160k rows of a full test. A column's
    codes are the ranks of its sorted distinct values, as ``np.unique(return_inverse=True)`` numbers them (0.0 and
    -0.0 one value), from ``pandas.factorize(sort=True)``: a hash table, then a sort of the few distinct values
    only, not of every item. Where the combined key is small (``_COUNTED_KEYS_PER_ITEM``) its distinct values are
    counted by one ``np.bincount``, one pass over the items rather than ``np.unique``'s sort of them: the same cells,
    counts and numbering (``tests/unit/test_scoring_cells.py``).
    """
    import pandas as pd

    n = len(columns[0]) if columns else 0
    if n == 0:
        empty = (np.zeros((0, len(columns))), np.zeros(0, dtype=np.int64))
        return (*empty, np.zeros(0, dtype=np.int64)) if item_cells else empty
    key = np.zeros(n, dtype=np.int64)
    bound = 1  # key < bound
    for column in columns:
        codes, values = pd.factorize(column, sort=True)
        if codes.min() < 0:  # a NaN, pandas' missing value (code -1): numbered as np.unique numbers it
            values, codes = np.unique(column, return_inverse=True)
        if bound * len(values) >= 2**62:  # several real-valued columns: renumber the key before it overflows
            _, key = np.unique(key, return_inverse=True)
            bound = int(key.max()) + 1
        key = key * len(values) + codes  # mixed radix
        bound *= len(values)
    if bound <= _COUNTED_KEYS_PER_ITEM * n:  # counted, not sorted: np.unique's first items, counts and ranks
        tally, first = np.bincount(key, minlength=bound), np.full(bound, n, dtype=np.intp)
        np.minimum.at(first, key, np.arange(n, dtype=np.intp))
        present = np.flatnonzero(tally)
        first, counts, inverse = first[present], tally[present], (np.cumsum(tally > 0) - 1)[key]
    else:
        _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    cells = np.column_stack([np.asarray(c, dtype=np.float64)[first] for c in columns])
    return (cells, counts, inverse.reshape(-1)) if item_cells else (cells, counts)


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


# Up to this many distinct (x, y) cells, tau-b comes from an m x m sign matrix; beyond it, scipy's O(n log n).
_KENDALL_MAX_CELLS = 2_048


def _kendall_cells(cx: np.ndarray, cy: np.ndarray, counts: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b of items compressed into cells (cx, cy) with ``counts``; x, y are the items themselves
    (scipy's O(n log n) takes them past ``_KENDALL_MAX_CELLS`` cells). NaN if either side is constant."""
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


# ---------------------------------------------------------------------------------------------- resampling


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


def resample_weights(counts: np.ndarray, n_boot: int, rng: np.random.Generator):
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


def cluster_resample_weights(cell_of_item: np.ndarray, cluster_of_item: np.ndarray, n_cells: int, n_boot: int,
                             rng: np.random.Generator):
    """Yield ``(b, n_cells)`` float64 weight blocks, ``n_boot`` rows in all: each row one cluster bootstrap resample,
    as how many items of each cell it drew.

    A resample draws as many clusters as there are, with replacement, and keeps every item of each cluster drawn
    (the cluster bootstrap: Davison and Hinkley, "Bootstrap Methods and their Application", 1997, Section 3.8, its
    first strategy, whole clusters resampled). Items of one cluster then enter or leave a resample together, so
    their correlation (criteria of one answer, answers to one instruction) widens the interval as it should,
    where resampling items would treat them as independent evidence.

    Args:
        cell_of_item: ``(n,)`` each item's cell (``_cells(..., item_cells=True)``).
        cluster_of_item: ``(n,)`` each item's cluster, any hashable-free numpy values (codes, texts).
        n_cells: the number of cells.
        n_boot: resamples.
        rng: the generator.
    """
    from scipy import sparse

    _, cluster = np.unique(cluster_of_item, return_inverse=True)
    cluster = cluster.reshape(-1)
    g = int(cluster.max()) + 1 if len(cluster) else 0
    # items per (cluster, cell), repeated pairs summed by the sparse constructor
    members = sparse.csr_matrix((np.ones(len(cluster)), (cluster, np.asarray(cell_of_item))), shape=(g, n_cells))
    chunk = max(1, _CHUNK_ENTRIES // max(g, n_cells, 1))
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        # 32-bit draws where the (resample, cluster) numbers fit: half the memory traffic of the default int64
        kind = np.int32 if b * g < 2**31 else np.int64
        drawn = rng.integers(0, g, size=(b, g), dtype=kind)
        drawn += (np.arange(b, dtype=kind) * g)[:, None]
        times = np.bincount(drawn.ravel(), minlength=b * g).reshape(b, g).astype(np.float64)
        done += b
        yield np.ascontiguousarray(members.T.dot(times.T).T)


def _weights(counts: np.ndarray, n_boot: int, rng: np.random.Generator, cell_of_item: np.ndarray | None = None,
             clusters: np.ndarray | None = None):
    """``resample_weights`` over items, or ``cluster_resample_weights`` where ``clusters`` is given."""
    if clusters is None:
        return resample_weights(counts, n_boot, rng)
    return cluster_resample_weights(cell_of_item, clusters, len(counts), n_boot, rng)


def percentile_interval(samples: np.ndarray, level: float) -> list[float]:
    """The central ``level`` interval of the finite samples, its ends read with ``PERCENTILE_METHOD`` (named, so that
    metrics.json says it and a change of numpy's default moves no interval)."""
    samples = samples[np.isfinite(samples)]
    if len(samples) == 0:
        return [float("nan"), float("nan")]
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail], method=PERCENTILE_METHOD)
    return [float(low), float(high)]


def resamplable(n: int, clusters: np.ndarray | None) -> bool:
    """Whether resamples can vary: two items or more, and, resampling clusters, two clusters or more (one cluster
    redrawn is always the same items: a zero-width interval and a p-value of 0 that would call any difference)."""
    return n >= 2 and (clusters is None or len(np.unique(clusters)) >= 2)


def _finite_with_clusters(x: np.ndarray, y: np.ndarray, clusters: np.ndarray | None):
    """``finite_pairs`` of x and y, and the kept items' clusters (None stays None)."""
    if clusters is None:
        return (*finite_pairs(x, y), None)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    clusters = np.asarray(clusters)
    if clusters.shape != x.shape:
        raise ValueError(f"clusters: shape {clusters.shape}, not the items' {x.shape}")
    kept_x, kept_y = finite_pairs(x, y)
    keep = np.isfinite(x) & np.isfinite(y)
    return kept_x, kept_y, clusters[keep]


def _grid(values: np.ndarray, statistic: str = "mae") -> np.ndarray:
    """Judge scores as resampled: exact when they are already on the 0.01 grid (verdicts), else rounded to it.

    A ``"mean"`` is of per-item values that are no judge scores (Verdict Confidence: a 1/300 lattice at three experts
    and 100 draws, finer than the grid), resampled exact: snapped, a difference of 1/150 on every item of a paired
    bootstrap rounds to 0 in every resample, an interval [0, 0] and p = 1 where every item is better."""
    if statistic == "mean":
        return values
    snapped = np.round(values / BOOTSTRAP_RESOLUTION) * BOOTSTRAP_RESOLUTION
    return values if np.allclose(snapped, values, rtol=0, atol=1e-9) else snapped


def bootstrap_ci(
    x: np.ndarray,
    y: np.ndarray,
    statistic: str,
    n_boot: int = 1000,
    rng: np.random.Generator | None = None,
    level: float = 0.95,
    clusters: np.ndarray | None = None,
) -> list[float]:
    """Percentile bootstrap interval of a statistic over items (pairs where both x and y are finite).

    Args:
        x, y: per-item values (judge score and reference; for ``"mean"`` only x matters, pass y = x).
        statistic: ``"mae"``, ``"spearman"``, ``"pearson"`` or ``"mean"``.
        n_boot: number of resamples.
        rng: the generator (``cell_rng``); default: seed 0.
        level: coverage of the interval.
        clusters: ``(n,)`` each item's cluster (e.g. its instruction), aligned with x: whole clusters are
            resampled (``cluster_resample_weights``); default: items.

    Returns:
        ``[low, high]``; NaN bounds when there are fewer than 2 items (or, with ``clusters``, fewer than 2 clusters),
        for Spearman fewer than ``MIN_SPEARMAN_PAIRS``, or every resample is undefined.
    """
    rng = rng or np.random.default_rng(0)
    x, y, clusters = _finite_with_clusters(x, y, clusters)
    too_few = statistic == "spearman" and len(x) < MIN_SPEARMAN_PAIRS  # +-1 by construction (``MIN_SPEARMAN_PAIRS``)
    if not resamplable(len(x), clusters) or n_boot <= 0 or too_few:
        return [float("nan"), float("nan")]
    cells, counts, cell_of_item = _cells(_grid(x, statistic), y, item_cells=True)
    samples = np.concatenate([_statistic(statistic, cells[:, 0], cells[:, 1], w)
                              for w in _weights(counts, n_boot, rng, cell_of_item, clusters)])
    return percentile_interval(samples, level)


def describe_pairs(
    x: np.ndarray,
    y: np.ndarray,
    n_boot: int = 1000,
    rng: np.random.Generator | None = None,
    level: float = 0.95,
    correlations: bool = True,
    clusters: np.ndarray | None = None,
    draw_as_correlated: bool = False,
) -> dict[str, Any]:
    """MAE with its interval and, with ``correlations``, Spearman (with interval), Pearson and Kendall, over pairs
    where both x and y are finite.

    The values are ``eval.scoring.metrics``' ``mean_absolute_error``, ``spearman``, ``pearson`` and ``kendall`` (up to float
    rounding) and the intervals ``bootstrap_ci``'s, but the items are compressed into cells once and MAE and Spearman
    share each resample. ``clusters`` as for ``bootstrap_ci``.

    ``draw_as_correlated``: without ``correlations``, draw MAE's resamples as a call with them draws them (weights
    over the cells on the 0.01 grid), not by the exact-error shortcut: that shortcut draws other resamples from the
    same generator, so a cell's MAE interval would move with whether its correlations share its resamples, which
    they do only when they are against MAE's own reference (``item_table.cell`` under ``--spearman-target``).

    Returns:
        ``{"n", "mae", "mae_ci"}`` plus ``"spearman", "spearman_ci", "pearson", "kendall"`` with correlations, and,
        once resamples were drawn, ``"spearman_n_resamples"``: how many of them had a defined Spearman, the ones
        its interval is taken over (a resample whose judge scores or references are all one value has none and is
        left out, as ``paired_bootstrap``'s ``n_resamples`` counts). Under ``MIN_SPEARMAN_PAIRS`` pairs Spearman
        has its point value and no interval (NaN) and no ``spearman_n_resamples``.
    """
    rng = rng or np.random.default_rng(0)
    x, y, clusters = _finite_with_clusters(x, y, clusters)
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
    if correlations and len(x) < MIN_SPEARMAN_PAIRS:  # no Spearman interval (``MIN_SPEARMAN_PAIRS``)
        names = ("mae",)
    if correlations:
        out["pearson"] = float(_statistic("pearson", cx, cy, ones)[0])
        out["kendall"] = _kendall_cells(cx, cy, counts, x, y)
    if resamplable(len(x), clusters) and n_boot > 0:
        gx = _grid(x)
        cell_of_item = None
        if clusters is not None:
            cells, counts, cell_of_item = _cells(gx, y, item_cells=True)
            cx, cy = cells[:, 0], cells[:, 1]
        elif gx is not x:
            cells, counts = _cells(gx, y)
            cx, cy = cells[:, 0], cells[:, 1]
        if (clusters is None and not correlations and not draw_as_correlated
                and not _use_multinomial(len(counts), len(x))):
            # MAE alone over many distinct values (a regression judge): averaging resampled item errors directly
            # skips the per-cell counting (about twice as fast) and needs no grid: the interval is exact.
            out["mae_ci"] = percentile_interval(_resampled_means(np.abs(x - y), n_boot, rng), level)
            return out
        samples: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for weights in _weights(counts, n_boot, rng, cell_of_item, clusters):
            for name in names:
                samples[name].append(_statistic(name, cx, cy, weights))
        for name in names:
            drawn = np.concatenate(samples[name])
            out[f"{name}_ci"] = percentile_interval(drawn, level)
            if name == "spearman":
                out["spearman_n_resamples"] = int(np.isfinite(drawn).sum())
    return out


def paired_bootstrap(
    x_a: np.ndarray,
    y_a: np.ndarray,
    x_b: np.ndarray,
    y_b: np.ndarray,
    statistic: str,
    n_boot: int = 1000,
    rng: np.random.Generator | None = None,
    alpha: float = 0.05,
    clusters: np.ndarray | None = None,
) -> dict[str, Any]:
    """Paired bootstrap of ``stat(B) - stat(A)`` over the items both judges scored.

    The same resampled items feed both judges, so the per-item pairing (same answer, same criterion) cancels
    item difficulty out of the difference.

    Args:
        x_a, y_a: judge A's scores and references (NaN: not scored by A).
        x_b, y_b: judge B's, aligned with A's item by item.
        statistic: ``"mae"``, ``"spearman"``, ``"pearson"`` or ``"mean"``.
        n_boot, rng, clusters: as for ``bootstrap_ci``.
        alpha: the interval is at level ``1 - alpha``, given as the alpha a call reads the p-value against (not as a
            level: 1 - 0.95 is not 0.05 in floating point, and the interval would then disagree with a p of 0.05).

    Returns:
        ``{"n", "a", "b", "delta", "ci": [low, high], "p_value"}``: the statistic of each judge on the paired
        items, ``delta = b - a``, its interval, and the two-sided bootstrap p-value of delta = 0 (twice the smaller
        share of resampled deltas on either side of 0, capped at 1), both by one count of the resampled deltas
        (``eval.scoring.resample_rules.called_interval``: the interval excludes 0 exactly when p < ``alpha``);
        with ``"n_resamples"``, the resamples whose delta was defined, once any was drawn.
    """
    rng = rng or np.random.default_rng(0)
    columns = [np.asarray(c, dtype=np.float64) for c in (x_a, y_a, x_b, y_b)]
    keep = np.logical_and.reduce([np.isfinite(c) for c in columns])
    columns = [c[keep] for c in columns]
    clusters = None if clusters is None else np.asarray(clusters)[keep]
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
    if not resamplable(n, clusters) or n_boot <= 0:
        return result
    cells, counts, cell_of_item = _cells(_grid(columns[0], statistic), columns[1], _grid(columns[2], statistic),
                                         columns[3], item_cells=True)
    deltas = np.concatenate(
        [
            _statistic(statistic, cells[:, 2], cells[:, 3], w) - _statistic(statistic, cells[:, 0], cells[:, 1], w)
            for w in _weights(counts, n_boot, rng, cell_of_item, clusters)
        ]
    )
    deltas = deltas[np.isfinite(deltas)]
    result["n_resamples"] = int(len(deltas))  # a degenerate resample (one distinct value: no Spearman) is left out
    if len(deltas):
        low, high, p_value = called_interval(deltas, alpha)
        result.update(ci=[low, high], p_value=p_value)
    return result

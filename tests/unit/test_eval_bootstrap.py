"""The fast bootstrap engine (eval/scoring/bootstrap.py) against a naive bootstrap: scipy.stats.bootstrap and a numpy loop
resampling the items themselves, on small POLLUX-shaped tables.

The engine and the naive bootstrap draw different resamples, so their percentile intervals differ by Monte-Carlo
error only. Each endpoint is the p-quantile (p = 0.025 or 0.975) of B resampled values; its standard error is
sqrt(p (1 - p) / B) / f(q_p) (the asymptotic variance of a sample quantile), with the density f(q_p) estimated from
the naive bootstrap distribution by Siddiqui's difference quotient 2h / (q_{p+h} - q_{p-h}). Two independent
estimates differ by sqrt(2) times that; the tests allow 4 of those standard errors, plus one lattice step where the
statistic is lattice-valued (an MAE of n integer errors moves in steps of 1/n, and two quantiles of a lattice
distribution can sit on neighbouring points whatever B). With B = 4000 the Monte-Carlo part is about 0.24 bootstrap
standard deviations: a 90 % interval reported as 95 % (endpoints 0.32 sd inward), resampling cells instead of items,
or ranks that ignore the resample's ties would all fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval.scoring import bootstrap, metrics

B = 4000  # resamples, the same for the engine and the naive bootstrap
LEVEL = 0.95
MC_SIGMAS = 4.0  # per endpoint: ~6e-5 two-sided chance for a correct engine; the seeds are fixed anyway


def pollux_table(n: int, seed: int, regression: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(judge, expert mode) of n items on a 0-2 criterion: the judge agrees with the mode 60 % of the time, else is
    off by one. A regression judge scores the mode plus noise, on the 0.01 grid the engine resamples on."""
    rng = np.random.default_rng(seed)
    mode = rng.choice([0.0, 1.0, 2.0], size=n, p=[0.2, 0.3, 0.5])
    if regression:
        return np.round(np.clip(mode + rng.normal(0, 0.6, n), 0, 2), 2), mode
    off = rng.choice([-1.0, 1.0], size=n)
    judge = np.where(rng.random(n) < 0.6, mode, np.clip(mode + off, 0, 2))
    return judge, mode


def _pearson(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    dx = x - x.mean(axis=axis, keepdims=True)
    dy = y - y.mean(axis=axis, keepdims=True)
    return (dx * dy).sum(axis=axis) / np.sqrt((dx * dx).sum(axis=axis) * (dy * dy).sum(axis=axis))


def _spearman(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    from scipy.stats import rankdata

    return _pearson(rankdata(x, axis=axis), rankdata(y, axis=axis), axis=axis)


NAIVE_STATISTICS = {
    "mae": lambda x, y, axis=-1: np.abs(x - y).mean(axis=axis),
    "pearson": _pearson,
    "spearman": _spearman,
}


def naive_bootstrap(x: np.ndarray, y: np.ndarray, statistic: str, seed: int):
    """scipy's percentile bootstrap of the statistic over the (x, y) items: (interval, bootstrap distribution)."""
    from scipy.stats import bootstrap as scipy_bootstrap

    result = scipy_bootstrap((x, y), NAIVE_STATISTICS[statistic], paired=True, vectorized=True, n_resamples=B,
                             batch=500, method="percentile", confidence_level=LEVEL, rng=np.random.default_rng(seed))  # fmt: skip
    interval = result.confidence_interval
    return [interval.low, interval.high], result.bootstrap_distribution


def tolerance(distribution: np.ndarray, p: float, h: float = 0.02) -> float:
    """MC_SIGMAS standard errors of the difference of two independent B-sample p-quantiles, plus the distribution's
    step between distinct values at that quantile (see the module doc)."""
    low, high = np.quantile(distribution, [p - h, p + h])
    quantile_se = math.sqrt(p * (1 - p) / len(distribution)) * (high - low) / (2 * h)  # both sides drew as many
    values = np.unique(distribution)
    at = min(max(int(np.searchsorted(values, np.quantile(distribution, p))), 1), len(values) - 2)
    lattice_step = max(values[at] - values[at - 1], values[at + 1] - values[at])
    return MC_SIGMAS * math.sqrt(2.0) * quantile_se + lattice_step


def assert_same_interval(engine: list[float], naive: list[float], distribution: np.ndarray) -> None:
    tail = (1 - LEVEL) / 2
    for bound, mine, theirs, p in zip(("low", "high"), engine, naive, (tail, 1 - tail)):
        allowed = tolerance(distribution, p)
        assert allowed > 0, "a degenerate table tests nothing"
        assert abs(mine - theirs) <= allowed, f"{bound}: engine {mine:.4f} vs naive {theirs:.4f} (allowed {allowed:.4f})"


# The 60-item table takes the engine's item-index path, the 300-item discrete one (9 cells) its multinomial path;
# both paths are checked (the path is asserted, so a change of the cost model cannot silently skip one).
TABLES = {
    "60 items, discrete": (pollux_table(60, seed=0), False),
    "300 items, discrete": (pollux_table(300, seed=1), True),
    "400 items, regression judge": (pollux_table(400, seed=2, regression=True), False),
}


@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("statistic", ["mae", "spearman", "pearson"])
def test_bootstrap_ci_matches_scipys_percentile_bootstrap(table, statistic):
    """bootstrap_ci's percentile interval equals scipy.stats.bootstrap's on the same items, within Monte-Carlo error."""
    (x, y), multinomial = TABLES[table]
    cells = len(np.unique(np.column_stack([x, y]), axis=0))
    assert bootstrap._use_multinomial(cells, len(x)) is multinomial
    engine = bootstrap.bootstrap_ci(x, y, statistic, n_boot=B, rng=np.random.default_rng(1), level=LEVEL)
    naive, distribution = naive_bootstrap(x, y, statistic, seed=2)
    assert_same_interval(engine, naive, distribution)


@pytest.mark.parametrize("table", list(TABLES))
def test_describe_pairs_matches_the_definitions_and_scipys_intervals(table):
    """describe_pairs gives eval.scoring.metrics' MAE, Spearman, Pearson and Kendall (to float rounding) and scipy's
    intervals; with correlations off (its direct item-error path for MAE) the MAE interval still matches."""
    (x, y), _ = TABLES[table]
    both = bootstrap.describe_pairs(x, y, n_boot=B, rng=np.random.default_rng(3), level=LEVEL)
    mae_only = bootstrap.describe_pairs(x, y, n_boot=B, rng=np.random.default_rng(4), level=LEVEL, correlations=False)
    assert both["n"] == mae_only["n"] == len(x)
    for name, definition in (("mae", metrics.mean_absolute_error), ("spearman", metrics.spearman),
                             ("pearson", metrics.pearson), ("kendall", metrics.kendall)):  # fmt: skip
        assert both[name] == pytest.approx(definition(x, y), abs=1e-12), name
    assert mae_only["mae"] == pytest.approx(both["mae"], abs=1e-12)
    for name in ("mae", "spearman"):
        naive, distribution = naive_bootstrap(x, y, name, seed=5)
        assert_same_interval(both[f"{name}_ci"], naive, distribution)
    naive, distribution = naive_bootstrap(x, y, "mae", seed=6)
    assert_same_interval(mae_only["mae_ci"], naive, distribution)


def test_paired_bootstrap_matches_a_numpy_loop_over_items():
    """paired_bootstrap's interval of MAE(B) - MAE(A) equals a plain loop that resamples the same item indices for
    both judges, within Monte-Carlo error; its point delta is the definitions' difference."""
    judge_a, mode = pollux_table(300, seed=7)
    rng = np.random.default_rng(8)
    judge_b = np.where(rng.random(300) < 0.3, mode, judge_a)  # B corrects 30 % of A's verdicts: a real improvement
    engine = bootstrap.paired_bootstrap(judge_a, mode, judge_b, mode, "mae", n_boot=B, rng=np.random.default_rng(9))
    assert engine["delta"] == pytest.approx(
        metrics.mean_absolute_error(judge_b, mode) - metrics.mean_absolute_error(judge_a, mode), abs=1e-12
    )
    loop_rng = np.random.default_rng(10)
    deltas = np.empty(B)
    for b in range(B):
        items = loop_rng.integers(0, len(mode), len(mode))
        deltas[b] = np.abs(judge_b[items] - mode[items]).mean() - np.abs(judge_a[items] - mode[items]).mean()
    tail = (1 - LEVEL) / 2
    naive = list(np.quantile(deltas, [tail, 1 - tail]))
    assert_same_interval(engine["ci"], naive, deltas)
    assert engine["ci"][1] < 0 and engine["p_value"] < 0.05  # and both see the improvement


def clustered_table(n_clusters: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(judge, expert mode, cluster) of ``n_clusters`` instructions with ``size`` items each, where the judge errs on
    whole instructions: on a third of them it is off by one on every item, elsewhere right. Items of one instruction
    are then as good as one item, and an interval that resamples items is far too narrow."""
    rng = np.random.default_rng(seed)
    mode = rng.choice([0.0, 1.0, 2.0], size=(n_clusters, size), p=[0.2, 0.3, 0.5])
    wrong = rng.random(n_clusters) < 1 / 3
    judge = np.where(wrong[:, None], np.where(mode == 2.0, 1.0, mode + 1.0), mode)
    clusters = np.repeat(np.arange(n_clusters), size)
    return judge.ravel(), mode.ravel(), clusters


def cluster_loop(x: np.ndarray, y: np.ndarray, clusters: np.ndarray, statistic, seed: int) -> np.ndarray:
    """A plain loop of the cluster bootstrap: draw the clusters with replacement, keep all their items."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(clusters == c) for c in np.unique(clusters)]
    out = np.empty(B)
    for b in range(B):
        items = np.concatenate([members[c] for c in rng.integers(0, len(members), len(members))])
        out[b] = statistic(x[items], y[items])
    return out


def test_cluster_bootstrap_matches_a_loop_over_whole_clusters():
    """With clusters, describe_pairs' MAE and Spearman intervals are a cluster bootstrap's (a loop drawing whole
    instructions), within Monte-Carlo error, and much wider than the item bootstrap's on a judge that errs by
    instruction; the point estimates do not move."""
    x, y, clusters = clustered_table(60, 5, seed=11)
    engine = bootstrap.describe_pairs(x, y, n_boot=B, rng=np.random.default_rng(12), level=LEVEL, clusters=clusters)
    items = bootstrap.describe_pairs(x, y, n_boot=B, rng=np.random.default_rng(12), level=LEVEL)
    tail = (1 - LEVEL) / 2
    for name in ("mae", "spearman"):
        assert engine[name] == items[name]
        loop = cluster_loop(x, y, clusters, NAIVE_STATISTICS[name], seed=13)
        assert_same_interval(engine[f"{name}_ci"], list(np.quantile(loop, [tail, 1 - tail])), loop)
    width = engine["mae_ci"][1] - engine["mae_ci"][0]
    assert width > 1.7 * (items["mae_ci"][1] - items["mae_ci"][0])  # sqrt(5) in theory for clusters of 5 alike


def test_cluster_bootstrap_of_singletons_is_the_item_bootstrap_and_nan_items_leave_their_cluster():
    """Every item its own cluster: the same distribution as the item bootstrap (scipy's interval); an item without a
    score is dropped from its cluster, not counted; a clusters column of another length is refused."""
    (x, y), _ = TABLES["300 items, discrete"]
    x = x.copy()
    x[:7] = np.nan
    engine = bootstrap.bootstrap_ci(x, y, "mae", n_boot=B, rng=np.random.default_rng(14), level=LEVEL,
                                    clusters=np.arange(len(x)))
    naive, distribution = naive_bootstrap(x[7:], y[7:], "mae", seed=15)
    assert_same_interval(engine, naive, distribution)
    with pytest.raises(ValueError, match="clusters"):
        bootstrap.bootstrap_ci(x, y, "mae", clusters=np.arange(3))


def test_paired_cluster_bootstrap_matches_a_loop_over_whole_clusters():
    """paired_bootstrap with clusters: the same whole instructions feed both judges (a loop drawing them)."""
    judge_a, mode, clusters = clustered_table(80, 4, seed=16)
    rng = np.random.default_rng(17)
    fixed = rng.random(80) < 0.4  # B corrects A on 40 % of the instructions, whole
    judge_b = np.where(np.repeat(fixed, 4), mode, judge_a)
    engine = bootstrap.paired_bootstrap(judge_a, mode, judge_b, mode, "mae", n_boot=B, rng=np.random.default_rng(18),
                                        clusters=clusters)
    both = np.column_stack([judge_a, judge_b])
    loop = cluster_loop(both, mode, clusters, lambda j, m: np.abs(j[:, 1] - m).mean() - np.abs(j[:, 0] - m).mean(),
                        seed=19)
    tail = (1 - LEVEL) / 2
    assert_same_interval(engine["ci"], list(np.quantile(loop, [tail, 1 - tail])), loop)


def test_one_cluster_gives_no_interval_and_no_call():
    """Every item in one cluster: each resample redraws the same items, so there is no interval (NaN), not a
    zero-width one, and no p-value (NaN), not the 0 that would call any difference significant."""
    x, y, _ = clustered_table(1, 50, seed=20)
    one = np.zeros(len(x))
    described = bootstrap.describe_pairs(x, y, n_boot=200, clusters=one)
    assert np.isnan(described["mae_ci"]).all() and np.isnan(described["spearman_ci"]).all()
    assert np.isfinite(described["mae"])  # the point estimate stands
    assert np.isnan(bootstrap.bootstrap_ci(x, y, "mae", n_boot=200, clusters=one)).all()
    other = np.where(np.arange(len(x)) % 3 == 0, y, x)
    paired = bootstrap.paired_bootstrap(x, y, other, y, "mae", n_boot=200, clusters=one)
    assert np.isfinite(paired["delta"]) and np.isnan(paired["p_value"]) and np.isnan(paired["ci"]).all()
    two = np.arange(len(x)) % 2  # two clusters: intervals again
    assert np.isfinite(bootstrap.describe_pairs(x, y, n_boot=200, clusters=two)["mae_ci"]).all()


def test_spearman_interval_says_how_many_resamples_it_is_over():
    """A resample whose judge scores or references are all one value has no Spearman and is left out of the
    interval; ``spearman_n_resamples`` says how many were kept, as ``paired_bootstrap``'s ``n_resamples`` does.

    Three items (0, 0), (1, 1), (2, 2): a resample draws one item three times with probability 3 (1/3)^3 = 1/9
    (both sides constant: undefined) and two or three distinct items otherwise (Spearman 1). Kept ~ Binomial(4000,
    8/9): mean 3555.6, sd sqrt(4000 * 8/81) = 19.9, so within 4 sd of the mean; every kept value is 1, the interval
    [1, 1]. (Two items have no interval at all: ``bootstrap.MIN_SPEARMAN_PAIRS``.)
    A constant judge: no resample has a Spearman, 0 kept, no interval. 200 varied items: every resample is kept
    (a constant resample has probability below 3 * (1/3)**200). No resample drawn: no count."""
    three = bootstrap.describe_pairs(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0]), n_boot=B,
                                     rng=np.random.default_rng(5))
    assert abs(three["spearman_n_resamples"] - B * 8 / 9) < 4 * math.sqrt(B * 8 / 81)
    assert three["spearman_ci"] == [1.0, 1.0]
    judge, mode = pollux_table(200, seed=6)
    constant = bootstrap.describe_pairs(np.ones(200), mode, n_boot=300, rng=np.random.default_rng(7))
    assert constant["spearman_n_resamples"] == 0 and np.isnan(constant["spearman_ci"]).all()
    varied = bootstrap.describe_pairs(judge, mode, n_boot=300, rng=np.random.default_rng(8))
    assert varied["spearman_n_resamples"] == 300
    assert "spearman_n_resamples" not in bootstrap.describe_pairs(judge, mode, n_boot=0)
    assert "spearman_n_resamples" not in bootstrap.describe_pairs(judge, mode, n_boot=300, correlations=False)


def test_spearman_has_no_interval_under_three_pairs():
    """Two pairs with distinct values are perfectly monotone whatever the scores (rho = +-1), and so is every
    resample of them: judge (0, 2) against references (1, 2) has rho 1 and, before the minimum, the interval
    [1, 1]. Under ``MIN_SPEARMAN_PAIRS`` = 3 pairs the point value stays (1: both sides rise together) and the
    interval is NaN, in ``describe_pairs`` and in ``bootstrap_ci`` alike; MAE keeps its interval (|0-1| and |2-2|:
    0.5, resamples 0, 0.5 or 1). Three pairs (0, 2, 1) against (1, 2, 0): ranks (1, 3, 2) and (2, 3, 1), d = (-1, 0,
    1), rho = 1 - 6 * 2 / (3 * 8) = 0.5, with an interval again."""
    x, y = np.array([0.0, 2.0]), np.array([1.0, 2.0])
    two = bootstrap.describe_pairs(x, y, 1000)
    assert bootstrap.MIN_SPEARMAN_PAIRS == 3
    assert two["spearman"] == 1.0 and np.isnan(two["spearman_ci"]).all()
    assert "spearman_n_resamples" not in two
    assert two["mae"] == 0.5 and two["mae_ci"] == [0.0, 1.0]
    assert np.isnan(bootstrap.bootstrap_ci(x, y, "spearman", 1000)).all()
    three = bootstrap.describe_pairs(np.array([0.0, 2.0, 1.0]), np.array([1.0, 2.0, 0.0]), 1000)
    assert three["spearman"] == pytest.approx(0.5) and np.isfinite(three["spearman_ci"]).all()


@pytest.mark.parametrize("regression", [False, True])
def test_mae_interval_does_not_move_with_the_spearman_target(regression):
    """``--spearman-target`` chooses the correlations' reference only: with the same seed, MAE's interval (and its
    in-scale one) is the same whether the correlations share MAE's resamples (one reference) or draw their own (a
    reference apart). It moved: MAE alone took a shortcut that draws other resamples from the same generator."""
    from eval.scoring import item_table
    from tests.unit.test_eval_metrics import _table

    rng = np.random.default_rng(3)
    n = 40  # few items over several cells: where MAE alone would resample item errors directly
    experts = rng.integers(0, 3, size=(n, 3)).tolist()
    judge = rng.integers(0, 3, n).astype(float)
    if regression:  # a head's real-valued scores: resampled on the 0.01 grid beside the correlations
        judge = judge + rng.normal(0.0, 0.3, n)
    table = _table(judge.tolist(), ["ok"] * n, experts)
    table.in_scale = np.where(np.arange(n) % 7 == 0, 0.0, 1.0)  # some out of scale: the in-scale figures drawn too
    mode, mean = (item_table.evaluate(table, target="mode", n_boot=200, spearman_target=target).splits["standard"]
                  .overall for target in ("mode", "mean"))
    assert mode.mae_ci == mean.mae_ci
    assert mode.mae_in_scale_ci == mean.mae_in_scale_ci
    assert mode.spearman != mean.spearman  # the option still does what it is for


def test_a_mean_of_verdict_confidences_is_resampled_exact_not_on_the_judge_score_grid():
    """Verdict Confidence lies on a 1/300 lattice (three experts, 100 draws), finer than the 0.01 grid judge scores are
    resampled on. Every one of 500 items better by 1/150 (2/3 against 2/3 + 1/150): every resample's delta is
    exactly 1/150, so the interval is [1/150, 1/150] and no resampled delta is <= 0 (p = 0), and compare calls it
    better. Snapped to the grid, both sides read 0.67 in every resample: [0, 0] and p = 1."""
    from eval.scoring.compare import _verdict

    a, b = np.full(500, 2 / 3), np.full(500, 2 / 3 + 1 / 150)
    found = bootstrap.paired_bootstrap(a, a, b, b, "mean", 1000, bootstrap.cell_rng(0, "all/overall/vc_judge"))
    assert found["delta"] == pytest.approx(1 / 150)
    assert found["ci"] == pytest.approx([1 / 150, 1 / 150])
    assert found["p_value"] == 0.0 and found["n_resamples"] == 1000
    assert _verdict(found["delta"], found["p_value"], "vc_judge", 0.05, found["n"], found["n_resamples"]) == "better"
    # one run's mean alone, as its interval: 2/3 + 1/150 = 0.67333..., not the grid's 0.67
    assert bootstrap.bootstrap_ci(b, b, "mean", 200) == pytest.approx([2 / 3 + 1 / 150] * 2)


@pytest.mark.parametrize("drawn, p_value, ci", [
    # (times item 0 is drawn, times item 1 is drawn) per resample -> its delta of MAE: (2, 0) -1, (1, 1) 0, (0, 2) +1
    ([(2, 0)] * 8 + [(1, 1), (0, 2)], 0.4, [-1.0, 1.0]),  # 9/10 at or below 0, 2/10 at or above: 2 x 2/10
    ([(2, 0)] * 10, 0.0, [-1.0, -1.0]),  # none at or above 0: an estimate of 0 (compare writes it p < 2 / n)
    ([(1, 1)] * 10, 1.0, [0.0, 0.0]),  # a delta of exactly 0 counts on both sides: 2 x 1, capped at 1
    ([(2, 0)] * 5 + [(0, 2)] * 5, 1.0, [-1.0, 1.0]),
])
def test_the_paired_p_value_and_interval_by_hand(monkeypatch, drawn, p_value, ci):
    """paired_bootstrap's two-sided p is twice the smaller share of resampled deltas at or below 0 and at or above 0,
    capped at 1, and its interval the k-th smallest and largest delta, k the fewest resamples whose share makes p reach
    alpha (here 1 of 10 at alpha 0.1: the least and the greatest): over resamples set by hand. Item 0 is an error of 1
    for A and none for B (B better by 1), item 1 the reverse."""
    def by_hand(counts, n_boot, rng, cell_of_item, clusters):
        weights = np.zeros((len(drawn), len(counts)))
        for row, times in enumerate(drawn):
            for item, k in enumerate(times):
                weights[row, cell_of_item[item]] += k
        yield weights

    monkeypatch.setattr(bootstrap, "_weights", by_hand)
    found = bootstrap.paired_bootstrap(np.array([1.0, 0.0]), np.zeros(2), np.array([0.0, 1.0]), np.zeros(2), "mae",
                                       n_boot=len(drawn), alpha=0.1)
    assert (found["a"], found["b"], found["delta"]) == (0.5, 0.5, 0.0)
    assert found["n_resamples"] == len(drawn)
    assert found["p_value"] == pytest.approx(p_value, abs=1e-12)
    assert found["ci"] == pytest.approx(ci, abs=1e-12)

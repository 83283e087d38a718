"""eval.scoring.metrics and eval.scoring.item_table: every expected value below is worked out by hand in the comments."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from eval.scoring import bootstrap, item_table, metrics
from judge.metrics_json.metrics import Metrics

NAN = float("nan")

# Six items; the comments give each item's mode, unique-mode flag, mean and the experts' Verdict Confidence.
EXPERTS = metrics.pad_scores([
    [2, 2, 1],     # a: mode 2 (2 of 3), unique; mean 5/3; VC 2/3
    [0, 1],        # b: 0 and 1 once each -> no unique mode; mean 1/2; VC 1/2
    [1, 1, 0, 0],  # c: 1 and 0 twice each -> no unique mode; mean 1/2; VC 1/2
    [0, 0, 0],     # d: mode 0, unique; mean 0; VC 1
    [1],           # e: one expert: mode 1, unique; mean 1; no VC (needs two annotators)
    [],            # f: unlabelled: no mode, no mean, no VC
])


def test_pad_scores_puts_scores_first_and_nan_after():
    """Rows of different lengths become a NaN-padded matrix, scores first."""
    assert EXPERTS.shape == (6, 4)
    np.testing.assert_array_equal(EXPERTS[0], [2, 2, 1, NAN])
    np.testing.assert_array_equal(EXPERTS[2], [1, 1, 0, 0])
    assert np.isnan(EXPERTS[5]).all()


def test_mode_and_unique_mode_mask():
    """Ties for the largest count (and no scores) give no unique mode."""
    mode, unique = metrics.expert_mode(EXPERTS)
    np.testing.assert_array_equal(unique, [True, False, False, True, True, False])
    np.testing.assert_array_equal(mode, [2, NAN, NAN, 0, 1, NAN])


def test_mean_of_experts():
    """The regression judges' reference."""
    np.testing.assert_allclose(metrics.expert_mean(EXPERTS), [5 / 3, 0.5, 0.5, 0.0, 1.0, NAN])


def test_mae_against_the_mode_skips_items_without_a_unique_mode_and_without_a_score():
    """Judge [2, 1, 0, 1, 0, -] vs mode [2, -, -, 0, 1, -]: pairs a (2 vs 2) = 0, d (1 vs 0) = 1, e (0 vs 1) = 1
    -> MAE = 2/3 over 3 items; b, c (no unique mode) and f (no experts) drop out."""
    judge = np.array([2, 1, 0, 1, 0, 2.0])
    mode, _ = metrics.expert_mode(EXPERTS)
    assert metrics.mean_absolute_error(judge, mode) == pytest.approx(2 / 3)
    # A failed verdict (NaN) is skipped too: without item a the pairs are d and e -> MAE 1.
    judge[0] = NAN
    assert metrics.mean_absolute_error(judge, mode) == pytest.approx(1.0)


def test_mae_against_the_mean_for_a_regression_judge():
    """Judge [1.5, 0.25, 0.5, 0.2, 1.0] vs mean [5/3, 1/2, 1/2, 0, 1]: |diffs| = 1/6, 1/4, 0, 1/5, 0;
    sum = 37/60 over 5 items -> 37/300."""
    judge = np.array([1.5, 0.25, 0.5, 0.2, 1.0, NAN])
    assert metrics.mean_absolute_error(judge, metrics.expert_mean(EXPERTS)) == pytest.approx(37 / 300)


def test_verdict_confidence_of_the_experts():
    """Largest share of one score: a 2/3, b 1/2, c 2/4, d 3/3; e (one expert) and f (none) undefined."""
    np.testing.assert_allclose(metrics.verdict_confidence_experts(EXPERTS), [2 / 3, 0.5, 0.5, 1.0, NAN, NAN])


def test_verdict_confidence_matches_the_papers_worked_example():
    """arXiv 2505.24616v3, Appendix D.2.2: five annotations [0, 1, 2, 2, 2] -> max share 3/5 = 0.6."""
    assert metrics.verdict_confidence_experts(metrics.pad_scores([[0, 1, 2, 2, 2]]))[0] == pytest.approx(0.6)


def test_verdict_confidence_under_random_labels_is_the_papers_17_over_27():
    """arXiv 2505.24616v3, Appendix D.2.2: three annotators labelling at random from three labels have an expected
    Verdict Confidence of E[m] / 3 = (3 * 1/9 + 2 * 2/3 + 1 * 2/9) / 3 = 17/27: over all 27 labellings, 3 are
    unanimous (VC 1), 18 have a pair (2/3) and 6 are all different (1/3)."""
    import itertools

    labellings = [list(scores) for scores in itertools.product([0, 1, 2], repeat=3)]
    values = metrics.verdict_confidence_experts(metrics.pad_scores(labellings))
    assert len(values) == 27
    assert sorted(values) == pytest.approx([1 / 3] * 6 + [2 / 3] * 18 + [1.0] * 3)
    assert sum(values) / 27 == pytest.approx(17 / 27)


def test_verdict_confidence_by_hand_for_a_three_expert_and_a_one_expert_item():
    """The paper's definition (Appendix D.2.2) worked by hand.

    Three experts [2, 2, 1]: shares 2 -> 2/3, 1 -> 1/3, so the experts' VC is 2/3. Judge 2: one expert, chosen
    uniformly, is replaced: a 2 (probability 2/3) leaves [2, 1, 2] -> 2/3; the 1 (probability 1/3) leaves
    [2, 2, 2] -> 3/3. Expected judge VC = 2/3 * 2/3 + 1/3 * 1 = 4/9 + 3/9 = 7/9.
    One expert [1]: there is no overlap, so no VC for the experts nor the judge (the paper's "—" in
    Tables 15-16); before this rule the item scored 1/1 = 1.0 for both, whatever the judge said.
    """
    experts = metrics.pad_scores([[2, 2, 1], [1]])
    judge = np.array([2.0, 0.0])
    vc_experts = metrics.verdict_confidence_experts(experts)
    assert vc_experts[0] == pytest.approx(2 / 3) and np.isnan(vc_experts[1])
    expected = metrics.verdict_confidence_judge_expected(experts, judge)
    assert expected[0] == pytest.approx(7 / 9) and np.isnan(expected[1])
    sampled = metrics.verdict_confidence_judge(experts, judge, repeats=100, seed=0)
    assert abs(sampled[0] - 7 / 9) < 0.1 and np.isnan(sampled[1])


# Items where every possible replacement gives the same share, so 100 random draws must give it exactly.
EXACT = [
    ([2, 2, 2], 2, 1.0),      # all agree, judge agrees: any replacement leaves 2,2,2 -> 3/3
    ([2, 2, 2], 0, 2 / 3),    # all agree, judge disagrees: 2,2,0 -> 2/3
    ([0, 0, 1], 1, 2 / 3),    # drop a 0: 0,1,1 -> 2/3; drop the 1: 0,0,1 -> 2/3
    ([0, 1], 2, 0.5),         # drop 0: 1,2 -> 1/2; drop 1: 0,2 -> 1/2
    ([1, 1], 1, 1.0),         # two experts agree with the judge: 1,1 -> 2/2
]


@pytest.mark.parametrize("experts, judge, expected", EXACT)
def test_judge_verdict_confidence_where_every_draw_gives_the_same_value(experts, judge, expected):
    """Replacing any one expert gives the same share, so the 100-draw average equals it exactly."""
    values = metrics.verdict_confidence_judge(metrics.pad_scores([experts]), np.array([judge], dtype=float))
    assert values[0] == pytest.approx(expected, abs=1e-12)


def test_judge_verdict_confidence_rounds_real_scores_half_up():
    """Experts 2,2,2: a regression score 1.6 rounds to 2 (agrees: 1.0); 1.5 rounds up to 2 (1.0); 0.4 rounds to 0
    (disagrees: 2/3). Experts 1,1,1 and 0.5: half up gives 1 (agrees: 1.0), where rounding half to even would give
    0 (2/3); 1.5 alone cannot tell the two apart (both give 2)."""
    experts = metrics.pad_scores([[2, 2, 2]] * 3 + [[1, 1, 1]])
    values = metrics.verdict_confidence_judge(experts, np.array([1.6, 1.5, 0.4, 0.5]))
    np.testing.assert_allclose(values, [1.0, 1.0, 2 / 3, 1.0])


def test_judge_verdict_confidence_averages_random_replacements():
    """Experts 0,0,1 and judge 0: dropping a 0 (probability 2/3) gives 0,1,0 -> 2/3; dropping the 1 (1/3) gives
    0,0,0 -> 1. Expectation 2/3 * 2/3 + 1/3 * 1 = 7/9; 100 seeded draws land near it, many draws closer."""
    experts = metrics.pad_scores([[0, 0, 1]])
    judge = np.array([0.0])
    assert metrics.verdict_confidence_judge_expected(experts, judge)[0] == pytest.approx(7 / 9)
    hundred = metrics.verdict_confidence_judge(experts, judge, repeats=100, seed=0)[0]
    # Each draw is 2/3 or 1, so the average is 2/3 + k/300 for k draws of the 1: within binomial noise of 7/9.
    assert abs(hundred - 7 / 9) < 0.1
    assert (hundred - 2 / 3) * 300 == pytest.approx(round((hundred - 2 / 3) * 300))
    many = metrics.verdict_confidence_judge(experts, judge, repeats=20_000, seed=0)[0]
    assert abs(many - 7 / 9) < 0.01


def test_judge_verdict_confidence_is_seeded_and_undefined_without_a_score():
    """Same seed, same values; a NaN judge score or an item without experts gives NaN."""
    experts = metrics.pad_scores([[0, 0, 1], [0, 1, 2], [1, 1], []])
    judge = np.array([0.0, 2.0, NAN, 1.0])
    first = metrics.verdict_confidence_judge(experts, judge, seed=7)
    np.testing.assert_array_equal(first, metrics.verdict_confidence_judge(experts, judge, seed=7))
    assert np.isnan(first[2]) and np.isnan(first[3])
    # Experts 0,1,2, judge 2: drop 0 -> 1,2,2 (2/3); drop 1 -> 0,2,2 (2/3); drop 2 -> 0,1,2 (1/3): expected 5/9.
    assert metrics.verdict_confidence_judge_expected(experts, judge)[1] == pytest.approx(5 / 9)


# Twelve items whose draws matter: experts 0,1,2 and judge 2 give 2/3, 2/3 or 1/3 by which expert is replaced.
_DRAWN = metrics.pad_scores([[0, 1, 2]] * 12)


def test_judge_verdict_confidence_of_an_item_does_not_depend_on_the_other_items():
    """Item 3's verdict turning into a failure (NaN) leaves every other item's value as it was, bit for bit, and so
    does reversing the items with their keys: each item draws from its own stream. One stream over the scored
    items would shift every later item's draws by one (the values change on most of them)."""
    judge = np.full(12, 2.0)
    keys = np.arange(100, 112, dtype=np.uint64)
    before = metrics.verdict_confidence_judge(_DRAWN, judge, seed=3, keys=keys)
    failed = judge.copy()
    failed[3] = NAN
    after = metrics.verdict_confidence_judge(_DRAWN, failed, seed=3, keys=keys)
    others = np.arange(12) != 3
    np.testing.assert_array_equal(after[others], before[others])
    assert np.isnan(after[3])
    reversed_ = metrics.verdict_confidence_judge(_DRAWN[::-1], judge[::-1], seed=3, keys=keys[::-1])
    np.testing.assert_array_equal(reversed_[::-1], before)
    # Each value is (2/3 * a + 1/3 * b) / 100 for a + b = 100 draws, a landing near 2/3 of them (expectation 5/9),
    # and the items differ from one another: independent draws, not one draw repeated.
    assert np.all(np.abs(before - 5 / 9) < 0.2) and len(set(before.tolist())) > 1
    # Another seed draws otherwise.
    assert not np.array_equal(metrics.verdict_confidence_judge(_DRAWN, judge, seed=4, keys=keys), before)


def test_score_keys_the_draws_by_item_id():
    """``derive`` (what ``judge-eval score`` runs) draws each item's replacements from its id: a run where item i3
    failed keeps every other item's judge VC, and a table holding the items in another order gives each id the
    same value."""
    experts = [[0, 1, 2]] * 12
    table = _table(judge=[2.0] * 12, status=["ok"] * 12, experts=experts)
    failed = _table(judge=[2.0] * 3 + [NAN] + [2.0] * 8, status=["ok"] * 3 + ["parse_failed"] + ["ok"] * 8,
                    experts=experts)
    before = item_table.derive(table, "mode", seed=0).vc_judge
    after = item_table.derive(failed, "mode", seed=0).vc_judge
    others = np.arange(12) != 3
    np.testing.assert_array_equal(after[others], before[others])
    order = np.arange(12)[::-1]
    moved = item_table.derive(table.take(order), "mode", seed=0).vc_judge
    np.testing.assert_array_equal(moved, before[order])
    as_list, as_array = metrics.item_keys(["i0", "i1"]), metrics.item_keys(np.array(["i0", "i1"], dtype=object))
    np.testing.assert_array_equal(as_list, as_array)


# x = [1, 2, 2, 3], y = [1, 3, 2, 3]
# Spearman: midranks x = [1, 2.5, 2.5, 4], y = [1, 3.5, 2, 3.5]; both mean 2.5;
#   dx = [-1.5, 0, 0, 1.5], dy = [-1.5, 1, -0.5, 1]; sum dx*dy = 2.25 + 1.5 = 3.75; sum dx^2 = 4.5 = sum dy^2
#   -> rho = 3.75 / 4.5 = 5/6.
# Pearson: means 2 and 2.25; dx = [-1, 0, 0, 1], dy = [-1.25, 0.75, -0.25, 0.75]; sum dx*dy = 2; sum dx^2 = 2;
#   sum dy^2 = 2.75 -> r = 2 / sqrt(5.5).
# Kendall tau-b: pairs (1,2) C, (1,3) C, (1,4) C, (2,3) tied in x, (2,4) tied in y, (3,4) C -> C - D = 4;
#   6 pairs, 1 tied in x, 1 tied in y -> tau_b = 4 / sqrt(5 * 5) = 0.8.
X_TIES = np.array([1, 2, 2, 3.0])
Y_TIES = np.array([1, 3, 2, 3.0])


def test_spearman_with_ties_uses_midranks():
    assert metrics.spearman(X_TIES, Y_TIES) == pytest.approx(5 / 6)


def test_pearson_and_kendall_tau_b_with_ties():
    assert metrics.pearson(X_TIES, Y_TIES) == pytest.approx(2 / math.sqrt(5.5))
    assert metrics.kendall(X_TIES, Y_TIES) == pytest.approx(0.8)


def test_correlations_skip_missing_pairs_and_are_undefined_for_a_constant_side():
    """A NaN on either side drops the pair; a constant judge has no correlation (NaN, not 0)."""
    x = np.append(X_TIES, [NAN, 5.0])
    y = np.append(Y_TIES, [1.0, NAN])
    assert metrics.spearman(x, y) == pytest.approx(5 / 6)
    assert math.isnan(metrics.spearman(np.ones(4), Y_TIES))
    assert math.isnan(metrics.kendall(np.ones(4), Y_TIES))


def test_correlations_agree_with_scipy_on_many_ties():
    """Cross-check on 2,000 discrete pairs (the cell-compressed path) and 3,000 real-valued ones."""
    from scipy import stats

    rng = np.random.default_rng(1)
    for x, y in [(rng.integers(0, 3, 2000).astype(float), rng.integers(0, 5, 2000).astype(float)),
                 (rng.normal(size=3000), rng.integers(0, 3, 3000).astype(float))]:
        y = np.where(rng.random(len(y)) < 0.5, y, np.round(x))
        assert metrics.spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-9)
        assert metrics.pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-9)
        assert metrics.kendall(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-9)


def test_confusion_matrix_rounds_judge_scores_half_up():
    """Judge [2, 1, 0, 1.6 (-> 2), 0.5 (-> 1)] vs experts [2, 2, 0, 1, 0]: cells (2,2), (1,2), (0,0), (2,1), (1,0)."""
    matrix, levels = metrics.confusion_matrix(np.array([2, 1, 0, 1.6, 0.5]), np.array([2, 2, 0, 1, 0.0]), [0, 1, 2])
    np.testing.assert_array_equal(levels, [0, 1, 2])
    np.testing.assert_array_equal(matrix, [[1, 0, 0], [1, 0, 1], [0, 1, 1]])


def test_bootstrap_interval_of_a_constant_error_is_that_error():
    """Every item off by exactly 1: every resample's MAE is 1."""
    ci = bootstrap.bootstrap_ci(np.zeros(50), np.ones(50), "mae", n_boot=200)
    assert ci == pytest.approx([1.0, 1.0])


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 3, 300).astype(float), rng.integers(0, 3, 300).astype(float)
    a = bootstrap.describe_pairs(x, y, n_boot=500, rng=bootstrap.cell_rng(0, "cell"))
    b = bootstrap.describe_pairs(x, y, n_boot=500, rng=bootstrap.cell_rng(0, "cell"))
    assert a == b
    assert a["mae_ci"][0] < a["mae"] < a["mae_ci"][1]
    assert a["spearman_ci"][0] < a["spearman"] < a["spearman_ci"][1]
    # The one-pass summary equals the single-statistic functions.
    assert a["mae"] == pytest.approx(metrics.mean_absolute_error(x, y))
    assert a["spearman"] == pytest.approx(metrics.spearman(x, y))
    assert a["kendall"] == pytest.approx(metrics.kendall(x, y))


def test_real_valued_scores_give_the_same_interval_by_either_resampling_path():
    """A regression judge's MAE interval drawn directly from item errors (MAE-only cells) matches the one drawn as
    weights over cells (cells with correlations): both resample the same items; bounds agree to Monte Carlo noise."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 4000).astype(float)
    x = y + rng.normal(0, 0.5, 4000)
    direct = bootstrap.describe_pairs(x, y, n_boot=2000, rng=np.random.default_rng(0), correlations=False)
    weighted = bootstrap.describe_pairs(x, y, n_boot=2000, rng=np.random.default_rng(1), correlations=True)
    assert direct["mae"] == weighted["mae"]
    assert direct["mae_ci"] == pytest.approx(weighted["mae_ci"], abs=0.004)
    assert direct["mae_ci"][0] < direct["mae"] < direct["mae_ci"][1]


def test_paired_bootstrap_identical_judges_and_a_uniformly_better_one():
    """Identical judges: delta 0, p = 1. A judge right on every item where the other is off by 1: delta = -1
    exactly in every resample, so p = 0 and the interval is [-1, -1]."""
    y = np.array([0, 1, 2, 1, 0, 2, 1, 1.0])
    same = bootstrap.paired_bootstrap(y + 1, y, y + 1, y, "mae", n_boot=300)
    assert same["delta"] == 0 and same["p_value"] == 1.0 and same["n"] == 8
    better = bootstrap.paired_bootstrap(y + 1, y, y, y, "mae", n_boot=300)
    assert better["a"] == 1 and better["b"] == 0 and better["delta"] == -1
    assert better["ci"] == [-1.0, -1.0] and better["p_value"] == 0.0


def test_paired_bootstrap_counts_the_resamples_its_p_value_is_a_share_of():
    """Spearman on 3 items: a resample that draws one item thrice has no ranks to correlate, so its delta is left
    out; the p-value is a share of the resamples left (n_resamples), and its floor, 2 / n_resamples, is what a p of
    0 reads as. With MAE every resample counts."""
    from eval.reports.report import fmt_p

    x = np.array([0.0, 1.0, 2.0])
    rho = bootstrap.paired_bootstrap(x, x, x, x[::-1], "spearman", n_boot=400)
    assert 0 < rho["n_resamples"] < 400  # 3 of the 27 equally likely draws are one item thrice: ~44 left out
    mae = bootstrap.paired_bootstrap(x + 1, x, x, x, "mae", n_boot=400)
    assert mae["n_resamples"] == 400 and mae["p_value"] == 0.0 and fmt_p(mae["p_value"], 400) == "< 0.005"
    assert "n_resamples" not in bootstrap.paired_bootstrap(x + 1, x, x, x, "mae", n_boot=0)


def test_paired_bootstrap_uses_only_items_both_judges_scored():
    """Item 0 unscored by A and item 1 by B: the pair covers items 2-4 only."""
    y = np.array([0, 1, 2, 1, 0.0])
    a = np.array([NAN, 1, 2, 2, 0])
    b = np.array([0, NAN, 1, 1, 0])
    result = bootstrap.paired_bootstrap(a, y, b, y, "mae", n_boot=100)
    # Items 2-4: A errs 0, 1, 0 -> 1/3; B errs 1, 0, 0 -> 1/3.
    assert result["n"] == 3 and result["a"] == pytest.approx(1 / 3) and result["b"] == pytest.approx(1 / 3)


# ------------------------------------------------------------------------------------------------ scoring


def _table(judge, status, experts, split=None, models=None):
    n = len(judge)
    return item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object),
        judge=np.array(judge, dtype=float),
        status=np.array(status, dtype=object),
        error=np.array(["" if s == "ok" else "no_result" for s in status], dtype=object),
        score_source=np.array(["verdict" if s == "ok" else "" for s in status], dtype=object),
        experts=metrics.pad_scores(experts),
        split=np.array(split or ["standard"] * n, dtype=object),
        model_id=np.array(models or ["m"] * n, dtype=object),
        task_type=np.array(["t"] * n, dtype=object),
        task_group=np.array(["g"] * n, dtype=object),
        criteria_name=np.array(["c"] * n, dtype=object),
        judge_name="hand",
    )


def test_evaluate_counts_failures_and_exclusions_and_scores_the_rest():
    """Five items: a parse failure (its would-be score ignored), a missing prediction, one without a unique mode,
    two scored. Scored pairs: (2 vs mode 2) and (0 vs mode 1) -> MAE 1/2 over 2 items; n = 4 (the missing one
    is not in n), n_failed = 1, failure rate 1/4, no unique mode 1."""
    table = _table(
        judge=[2, NAN, NAN, 1, 0],
        status=["ok", "parse_failed", "missing", "ok", "ok"],
        experts=[[2, 2, 1], [2, 2, 2], [0, 0, 0], [0, 1], [1, 1, 0]],
    )
    result = item_table.evaluate(table, n_boot=50).to_json()
    cell = result["splits"]["all"]["overall"]
    assert result["target"] == "mode"
    assert (cell["n"], cell["n_missing"], cell["n_failed"], cell["n_parse_failed"]) == (4, 1, 1, 1)
    assert cell["failure_rate"] == pytest.approx(0.25)
    assert cell["n_no_unique_mode"] == 1 and cell["n_scored"] == 2
    assert cell["mae"] == pytest.approx(0.5)
    assert result["splits"]["all"]["failures"] == {"no_result": 1}
    # Experts' VC over the 3 items the judge scored: 2/3, 1/2, 2/3 -> 11/18.
    assert cell["vc_experts"] == pytest.approx(11 / 18) and cell["n_vc"] == 3
    assert cell["n_out_of_scale"] == 0 and cell["mae_in_scale"] == cell["mae"] and "why_empty" not in cell
    assert set(result["splits"]) == {"zero_shot", "standard", "all"}
    assert result["splits"]["zero_shot"]["overall"]["n"] == 0
    assert "spearman" not in result["splits"]["all"]["by_criterion"]["c"]


def test_evaluate_splits_and_groups_items():
    """Zero-Shot gets items 0-1, Standard 2-3; per-model cells partition the items."""
    table = _table(
        judge=[2, 0, 1, 1],
        status=["ok"] * 4,
        experts=[[2, 2], [1, 1], [1, 1, 0], [0, 0]],
        split=["zero_shot", "zero_shot", "standard", "standard"],
        models=["x", "y", "x", "y"],
    )
    result = item_table.evaluate(table, n_boot=20).to_json()
    # Zero-Shot: |2-2| + |0-1| = 1 over 2; Standard: |1-1| + |1-0| = 1 over 2; all: 2 over 4.
    assert result["splits"]["zero_shot"]["overall"]["mae"] == pytest.approx(0.5)
    assert result["splits"]["standard"]["overall"]["mae"] == pytest.approx(0.5)
    assert result["splits"]["all"]["overall"]["mae"] == pytest.approx(0.5)
    by_model = result["splits"]["all"]["by_model"]
    # Model x: items 0 and 2 -> errors 0, 0; model y: items 1 and 3 -> errors 1, 1.
    assert by_model["x"]["mae"] == 0 and by_model["y"]["mae"] == 1
    assert result["splits"]["all"]["confusion"]["all"]["matrix"] == [[0, 1, 0], [1, 1, 0], [0, 0, 1]]


def test_spearman_is_pooled_per_model_and_per_task_type_by_hand():
    """Spearman per evaluated model and per task type over that group's items (the paper's Tables 17-18, Appendix
    D.2.4), never per criterion. Unanimous experts, so the reference is their score:
    model x: judge 0, 1, 2 vs 0, 2, 1 -> rank differences 0, -1, 1 -> 1 - 6*2 / (3*8) = 0.5;
    model y: judge 2, 1, 0 vs 2, 1, 0 -> 1;
    task a: judge 0, 1, 2, 1 vs 0, 2, 2, 1 -> midranks (1, 2.5, 4, 2.5) and (1, 3.5, 3.5, 2): 3.75 / 4.5 = 5/6;
    task b: two items in the same order -> 1."""
    import dataclasses

    table = _table(judge=[0, 1, 2, 2, 1, 0], status=["ok"] * 6,
                   experts=[[0, 0], [2, 2], [1, 1], [2, 2], [1, 1], [0, 0]], models=["x", "x", "x", "y", "y", "y"])
    table = dataclasses.replace(table, task_type=np.array(["a", "a", "b", "a", "a", "b"], dtype=object))
    block = item_table.evaluate(table, n_boot=0).to_json()["splits"]["all"]
    assert block["by_model"]["x"]["spearman"] == pytest.approx(0.5)
    assert block["by_model"]["y"]["spearman"] == pytest.approx(1.0)
    assert block["by_task_type"]["a"]["spearman"] == pytest.approx(5 / 6)
    assert block["by_task_type"]["b"]["spearman"] == pytest.approx(1.0)
    assert "spearman" not in block["by_criterion"]["c"]


def test_the_overall_spearman_pools_every_item_and_is_not_the_mean_of_the_models_rows():
    """The overall figure (the tables' "Avg." row) is Spearman over every item together ("when the full dataset is
    considered ... the overall rho", Appendix D.2.4), not the mean of the per-model figures. Unanimous experts:
    model x, judge 0, 1 vs 0, 1 -> 1; model y, judge 1, 2 vs 2, 1 -> -1; their mean is 0. Pooled, judge 0, 1, 1, 2
    vs 0, 1, 2, 1: midranks (1, 2.5, 2.5, 4) and (1, 2.5, 4, 2.5), deviations (-1.5, 0, 0, 1.5) and (-1.5, 0, 1.5, 0):
    2.25 / 4.5 = 0.5."""
    table = _table(judge=[0, 1, 1, 2], status=["ok"] * 4, experts=[[0, 0], [1, 1], [2, 2], [1, 1]],
                   models=["x", "x", "y", "y"])
    block = item_table.evaluate(table, n_boot=0).to_json()["splits"]["all"]
    assert (block["by_model"]["x"]["spearman"], block["by_model"]["y"]["spearman"]) == (
        pytest.approx(1.0), pytest.approx(-1.0))
    assert block["overall"]["spearman"] == pytest.approx(0.5)


def test_the_overall_mae_and_verdict_confidence_pool_every_item_and_are_not_the_mean_of_the_rows():
    """The tables' "Avg." row is over every item together: Tables 11, 12 and 13 (MAE by evaluated model, task type
    and criterion, arXiv 2505.24616v3, Appendix D.2.1) print one Avg. (0.456 for POLLUX 7B), as do Tables 14-16 for
    Verdict Confidence (0.888 for the experts), which only a figure pooled over items gives; Table 11's rows for
    POLLUX 7B average 0.457. By hand, unanimous experts: model x (criterion p) one item, experts 2, 2, judge 0: error
    2, the judge in place of either expert leaves 2, 0: VC 1/2. Model y (criterion q) three items, experts 1, 1,
    judge 1: errors 0, VC 1. The rows' means would be MAE (2 + 0) / 2 = 1 and VC (1/2 + 1) / 2 = 3/4; pooled over
    the four items, MAE 2/4 = 1/2 and VC (1/2 + 3) / 4 = 7/8."""
    import dataclasses

    table = _table(judge=[0, 1, 1, 1], status=["ok"] * 4, experts=[[2, 2], [1, 1], [1, 1], [1, 1]],
                   models=["x", "y", "y", "y"])
    table = dataclasses.replace(table, criteria_name=np.array(["p", "q", "q", "q"], dtype=object))
    block = item_table.evaluate(table, n_boot=0).to_json()["splits"]["all"]
    for rows in (block["by_model"], block["by_criterion"]):
        assert [(rows[k]["mae"], rows[k]["vc_judge"]) for k in sorted(rows)] == [(2.0, 0.5), (0.0, 1.0)]
    overall = block["overall"]
    assert (overall["n_scored"], overall["n_vc"]) == (4, 4)
    assert overall["mae"] == pytest.approx(1 / 2) and overall["vc_judge"] == pytest.approx(7 / 8)
    assert overall["vc_experts"] == 1.0
    assert block["model_means"]["all"]["mae"] == pytest.approx(1 / 2)


def test_regression_scores_are_compared_with_the_mean():
    """score_source regression_head switches the reference to the mean: judge 1.5 vs experts 2,1 (mean 1.5) -> 0;
    judge 0.2 vs 0,0,1 (mean 1/3) -> 2/15; MAE 1/15, and the tie 2,1 is not excluded."""
    table = _table(judge=[1.5, 0.2], status=["ok", "ok"], experts=[[2, 1], [0, 0, 1]])
    table.score_source[:] = "regression_head"
    result = item_table.evaluate(table, n_boot=20).to_json()
    assert result["target"] == "mean"
    assert result["splits"]["all"]["overall"]["mae"] == pytest.approx(1 / 15)
    assert result["splits"]["all"]["overall"]["n_scored"] == 2


def test_a_regression_judge_is_correlated_with_the_experts_mean_by_default():
    """Spearman's reference follows the target unless --spearman-target says otherwise: a regression head's
    0.2, 1.5, 1.0, 1.9 against means 1/3, 3/2, 5/3, 2 ranks 1,3,2,4 against 1,2,3,4: rho = 1 - 6*2/(4*15) = 0.8.
    Against the mode the tie 2,1 is out, and 0.2, 1.0, 1.9 against 0, 2, 2 (ranks 1, 2.5, 2.5) is 1.5/sqrt(3)."""
    judge, experts = [0.2, 1.5, 1.0, 1.9], [[0, 0, 1], [2, 1], [1, 2, 2], [2, 2, 2]]
    table = _table(judge=judge, status=["ok"] * 4, experts=experts)
    table.score_source[:] = "regression_head"
    result = item_table.evaluate(table, n_boot=20).to_json()
    assert result["settings"]["spearman_target"] == "mean"
    assert result["splits"]["all"]["overall"]["spearman"] == pytest.approx(0.8)
    by_mode = item_table.evaluate(table, n_boot=20, spearman_target="mode").to_json()
    assert by_mode["settings"]["spearman_target"] == "mode"
    assert by_mode["splits"]["all"]["overall"]["spearman"] == pytest.approx(1.5 / math.sqrt(3))


def test_a_judge_that_never_parses_is_reported_not_a_crash():
    """Every verdict failed: n_failed = n, metrics undefined (NaN), Verdict Confidence undefined, no exception."""
    table = _table(judge=[NAN, NAN, NAN], status=["parse_failed"] * 3, experts=[[2, 2], [1, 0], [0]])
    assert np.isnan(metrics.verdict_confidence_judge(table.experts, table.judge)).all()
    assert np.isnan(metrics.verdict_confidence_judge_expected(table.experts, table.judge)).all()
    cell = item_table.evaluate(table, n_boot=20).to_json()["splits"]["all"]["overall"]
    assert (cell["n"], cell["n_failed"], cell["n_scored"], cell["failure_rate"]) == (3, 3, 0, 1.0)
    assert math.isnan(cell["mae"]) and math.isnan(cell["spearman"]) and math.isnan(cell["vc_judge"])


def test_build_table_never_scores_a_parse_failure():
    """A prediction with parse_ok false is a failure even if a score is present; request failures are their own
    status; records without a prediction are missing."""
    import judge

    rows = [
        {"id": "a", "instruction": "i", "answer": "x", "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
         "expert_scores": [1, 1]},
        {"id": "b", "instruction": "i", "answer": "x", "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
         "expert_scores": [0, 0]},
        {"id": "c", "instruction": "i", "answer": "x", "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
         "expert_scores": [0, 1, 1]},
        {"id": "d", "instruction": "i", "answer": "x", "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
         "expert_scores": [1]},
    ]
    records = judge.records_from_rows(rows)
    predictions = [
        {"id": "a", "judge": "j", "score": 1, "parse_ok": True, "error": None, "score_source": "verdict"},
        {"id": "b", "judge": "j", "score": None, "parse_ok": False, "error": "missing_end"},
        {"id": "c", "judge": "j", "score": None, "parse_ok": False, "error": "request_failed"},
        {"id": "zzz", "judge": "j", "score": 1, "parse_ok": True},
    ]
    table, notes = item_table.build_table(records, predictions)
    assert table.status.tolist() == ["ok", "parse_failed", "request_failed", "missing"]
    assert table.judge[0] == 1 and np.isnan(table.judge[1:]).all()
    assert notes == {"n_unknown_ids": 1, "n_repeated_ids": 0, "first_unknown_id": "zzz"}
    assert table.judge_name == "j"


def test_build_table_joins_each_record_to_its_ids_first_row_and_names_the_first_unknown_id():
    """The join by id against the row rule: an id's first row is the one scored (as `run`'s resume keeps it),
    every later row of it counts as a repeat, and the ids no record has are counted, the first in the
    predictions' order named."""
    import random

    import judge

    rng = random.Random(5)
    rows = [{"id": f"r{k}", "instruction": "i", "answer": f"x{k}", "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
             "expert_scores": [0, 1]} for k in range(40)]
    records = judge.records_from_rows(rows)
    predictions, first = [], {}
    for k in range(120):
        rid = f"r{rng.randrange(50)}" if rng.random() < 0.8 else f"zz{rng.randrange(10)}"  # r40..r49: no record
        score = rng.choice([0.0, 1.0])
        predictions.append({"id": rid, "judge": "j", "score": score, "parse_ok": True, "error": None,
                            "score_source": "verdict"})
        first.setdefault(rid, (k, score))
    table, notes = item_table.build_table(records, predictions)
    expected = [first[r["id"]][1] if r["id"] in first else None for r in rows]
    assert [None if np.isnan(v) else v for v in table.judge.tolist()] == expected
    unknown = sorted((row, rid) for rid, (row, _) in first.items() if rid not in {r["id"] for r in rows})
    assert len(unknown) >= 2 and len(first) < len(predictions)
    assert notes == {"n_unknown_ids": len(unknown), "n_repeated_ids": len(predictions) - len(first),
                     "first_unknown_id": unknown[0][1]}


def test_build_table_names_the_judge_of_most_ids_first_rows_and_joins_none_to_an_empty_run():
    """The judge's label is the most frequent ``judge`` over each id's first row (an id's later rows, however many,
    and the rows of ids no record has count once each, by their first row); a run of no rows joins no record."""
    import judge

    rows = [{"id": f"r{k}", "instruction": "i", "answer": f"x{k}", "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
             "expert_scores": [0, 1]} for k in range(3)]
    records = judge.records_from_rows(rows)

    def row(rid, name):
        return {"id": rid, "judge": name, "score": 1.0, "parse_ok": True, "error": None, "score_source": "verdict"}

    # "b" has five rows, but four repeat an id: first rows, "a" has three (r1, r2, zz) against "b"'s one (r0)
    predictions = [row("r0", "b"), row("r0", "b"), row("r1", "a"), row("r0", "b"), row("r2", "a"), row("r0", "b"),
                   row("zz", "a"), row("r1", "b")]
    table, notes = item_table.build_table(records, predictions)
    assert table.judge_name == "a"
    assert notes == {"n_unknown_ids": 1, "n_repeated_ids": 4, "first_unknown_id": "zz"}
    empty, notes = item_table.build_table(records, [])
    assert empty.status.tolist() == ["missing"] * 3 and empty.ids.tolist() == ["r0", "r1", "r2"]
    assert notes == {"n_unknown_ids": 0, "n_repeated_ids": 0}


def test_the_rows_judge_eval_run_writes_for_no_verdict_are_counted_by_their_cause(tmp_path):
    """`judge-eval run`'s own rows, not hand-written ones: a prompt too long for the judge's context is a final
    ``context_length_exceeded`` row, a failed verdict (``n_parse_failed``, said as a prompt past the context, not
    "read from the answer", which it has none of); a generation the engine aborted (once its retries are spent) and a judgment
    it refused (at once) are written as ``request_failed`` (``n_request_failed``, asked again by the next run), never
    as a parse failure."""
    import judge
    from eval.cli import main as eval_main
    from eval.judging.predictions import REQUEST_FAILED, read_predictions
    from tests.support.eval_cli import run_args
    from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

    answers = {"too_long": "Ответ-длинный.", "aborted": "Ответ-прерванный.", "refused": "Ответ-отклонённый."}
    rows = [{"id": rid, "instruction": "i", "answer": answer, "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
             "expert_scores": [1, 1]} for rid, answer in answers.items()]
    data = judge.write_jsonl(judge.records_from_rows(rows), tmp_path / "data.jsonl")

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt = json.dumps(body["messages"], ensure_ascii=False)
        if answers["too_long"] in prompt:
            return 400, {"object": "error", "code": 400, "message": "This model's maximum context length is 2048 "
                         "tokens. However, your prompt contains 4000 input tokens."}
        if answers["aborted"] in prompt:
            return 200, chat_completion("[FEEDBACK] Обосн", body["model"], "abort")
        return 400, {"object": "error", "message": "temperature must be non-negative", "code": 400}

    out = tmp_path / "run"
    args = run_args("", data, out, "--max-retries", "0")
    with ScriptedEndpoint(respond) as server:
        args[args.index("--judge") + 1] = server.base_url
        assert eval_main(args) == 3  # judge-eval run's exit code for a run with request_failed rows
    predictions = read_predictions(out)
    assert {row["id"]: row["error"] for row in predictions} == {
        "too_long": "context_length_exceeded", "aborted": REQUEST_FAILED, "refused": REQUEST_FAILED}
    table, _ = item_table.build_table(judge.records_from_rows(rows), predictions)
    assert table.status.tolist() == ["parse_failed", "request_failed", "request_failed"]
    cell = item_table.evaluate(table, n_boot=0).to_json()["splits"]["unknown"]["overall"]  # no task type: no test
    assert (cell["n_parse_failed"], cell["n_request_failed"]) == (1, 2)
    assert cell["why_empty"] == {"request_failed": 2, "parse_failed": 1}
    said = cell["why_empty_text"]
    assert "read from the answer" not in said and "too long for the judge's context: context_length_exceeded" in said


def test_aborted_and_refused_rows_written_elsewhere_are_failures_said_as_no_rows_of_run():
    """``PredictionRow.error`` takes any ``judge.VerdictError`` code, so a predictions file written outside
    `judge-eval run` (a client of judge-serve's ``/v1/judge`` keeping its results' codes) may hold ``aborted`` or
    ``engine_refused``: `score` reads them as failed verdicts (``n_parse_failed``), and its words, the why-empty line
    and the page's ``n_parse_failed`` tooltip, say what each code is and that `judge-eval run` never writes it (it asks
    such a judgment again, then writes ``request_failed``): they said every such row was one the server never ran."""
    import judge
    from eval.reports.html_report import render_report_page

    rows = [{"id": code, "instruction": "i", "answer": "x", "criteria_name": "c", "rubrics": "0: no\n\n1: yes",
             "expert_scores": [1, 1]} for code in ("aborted", "engine_refused")]
    predictions = [{"id": row["id"], "judge": "j", "score": None, "parse_ok": False, "error": row["id"]}
                   for row in rows]
    table, _ = item_table.build_table(judge.records_from_rows(rows), predictions)
    assert table.status.tolist() == ["parse_failed"] * 2
    result = item_table.evaluate(table, n_boot=0)
    cell = result.to_json()["splits"]["unknown"]["overall"]  # no task type: no test
    assert (cell["n_parse_failed"], cell["why_empty"]) == (2, {"parse_failed": 2})
    said = cell["why_empty_text"]
    assert "the server never ran" not in said, said
    assert "judge-serve's engine aborted or a judgment it refused: aborted, engine_refused" in said, said
    assert "judge-eval run never writes" in said, said
    page = render_report_page(Metrics.from_json(json.loads(item_table.dumps(result))), None)
    assert "a generation judge-serve&#x27;s engine aborted (aborted) or a judgment it refused (engine_refused)" in page
    assert "judge-eval run never writes" in page and "the server never ran" not in page


def test_item_table_round_trips_through_parquet(tmp_path):
    """What `score` writes, `compare` reads back: columns, ragged expert lists and extra per-item columns."""
    table = _table(judge=[2, NAN, 1], status=["ok", "parse_failed", "ok"], experts=[[2, 2, 1], [0], []])
    item_table.write_table(table, tmp_path / "items.parquet", extra={"vc_judge": np.array([0.5, NAN, 1.0])})
    back, extra = item_table.read_table(tmp_path / "items.parquet")
    np.testing.assert_array_equal(back.experts, table.experts)
    np.testing.assert_array_equal(back.judge, table.judge)
    assert back.status.tolist() == table.status.tolist() and back.judge_name == "hand"
    np.testing.assert_array_equal(extra["vc_judge"], [0.5, NAN, 1.0])


def test_cell_verdict_confidence_leaves_out_single_annotator_items():
    """Item 1: experts [2, 2, 2], judge 0 -> every replacement leaves two 2s and a 0: judge VC 2/3, experts 1.
    Item 2: one expert [1], judge 0 -> no VC. Cell: n_vc = 1, VC judge 2/3 (it was (2/3 + 1) / 2 = 5/6 when the
    lone expert's item counted 1.0), VC experts 1."""
    table = _table(judge=[0, 0], status=["ok", "ok"], experts=[[2, 2, 2], [1]])
    cell = item_table.evaluate(table, n_boot=0).to_json()["splits"]["all"]["overall"]
    assert cell["n_vc"] == 1 and cell["n_vc_experts_all"] == 1
    assert cell["vc_judge"] == pytest.approx(2 / 3) and cell["vc_experts"] == pytest.approx(1.0)


def test_no_overlap_anywhere_gives_no_verdict_confidence_and_says_why():
    """Every item has one annotator (the paper's Technical Problems): n_vc = 0, VC NaN, a why_no_vc sentence,
    and the Markdown shows "—" in the VC columns."""
    from eval.reports.report import render_markdown

    table = _table(judge=[1, 0], status=["ok", "ok"], experts=[[1], [2]])
    result = json.loads(item_table.dumps(item_table.evaluate(table, n_boot=0)))
    cell = result["splits"]["all"]["overall"]
    assert cell["n_vc"] == 0 and cell["vc_judge"] is None and cell["vc_experts"] is None
    assert "two or more annotators" in cell["why_no_vc"]
    lines = render_markdown(Metrics.from_json(result)).splitlines()
    header = [h.strip() for h in next(line for line in lines if line.startswith("| Test |")).split("|")]
    summary = [c.strip() for c in next(line for line in lines if line.startswith("| Zero-Shot + Standard")).split("|")]
    shown = dict(zip(header, summary))
    assert (shown["VC judge"], shown["VC experts"], shown["n VC"], shown["VC experts (all predicted)"], shown["VC experts (all labelled)"]) == ("—", "—", "0", "—", "—")
    assert any("two or more annotators" in line for line in lines)


# Judge [5, 2, 0, 1] on 0..2 scales vs mode [2, 2, 1, 1]; the 5 is outside the scale.
# Headline (out-of-scale included, as the paper): errors 3, 0, 1, 0 -> MAE 4/4 = 1.
#   Spearman: ranks x [4, 3, 1, 2], y [3.5, 3.5, 1.5, 1.5]; dx [1.5, .5, -1.5, -.5], dy [1, 1, -1, -1];
#   sum dx*dy = 4, sum dx^2 = 5, sum dy^2 = 4 -> rho = 4 / sqrt(20).
# In scale only (items 2-4): errors 0, 1, 0 -> MAE 1/3.
#   Spearman: ranks x [3, 1, 2], y [3, 1.5, 1.5]; dx [1, -1, 0], dy [1, -.5, -.5]; sum dx*dy = 1.5,
#   sum dx^2 = 2, sum dy^2 = 1.5 -> rho = 1.5 / sqrt(3).
def test_out_of_scale_verdicts_are_in_the_headline_and_counted_beside_it():
    """Headline MAE/Spearman include the out-of-scale score; n_out_of_scale and the in-scale-only figures beside."""
    table = _table(judge=[5, 2, 0, 1], status=["ok"] * 4, experts=[[2, 2], [2, 2, 1], [1, 1, 0], [1, 1]])
    table.in_scale[:] = [0.0, 1.0, 1.0, 1.0]
    cell = item_table.evaluate(table, n_boot=50).to_json()["splits"]["all"]["overall"]
    assert (cell["n_scored"], cell["n_out_of_scale"], cell["n_scored_in_scale"]) == (4, 1, 3)
    assert cell["mae"] == pytest.approx(1.0) and cell["spearman"] == pytest.approx(4 / math.sqrt(20))
    assert cell["mae_in_scale"] == pytest.approx(1 / 3) and cell["spearman_in_scale"] == pytest.approx(1.5 / math.sqrt(3))
    assert cell["mae_in_scale_ci"][0] <= 1 / 3 <= cell["mae_in_scale_ci"][1]


def _records(rows):
    import judge

    base = {"instruction": "i", "answer": "x", "criteria_name": "c", "rubrics": "0: нет\n\n1: частично\n\n2: да"}
    return judge.records_from_rows([{**base, **row} for row in rows])


def test_build_table_scores_out_of_scale_verdicts_and_flags_them():
    """The item's rubric (0..2) decides in_scale; a row an older run refused as out_of_scale is read again from its
    raw output and scored; unparseable rows stay failures; items.parquet carries the in_scale column."""
    records = _records([{"id": "a", "expert_scores": [2, 2]}, {"id": "b", "expert_scores": [1, 1]},
                        {"id": "c", "expert_scores": [0, 0]}, {"id": "d", "expert_scores": [0, 0]}])
    predictions = [
        {"id": "a", "judge": "j", "score": 3, "parse_ok": True, "error": None, "in_scale": False},
        {"id": "b", "judge": "j", "score": 1, "parse_ok": True, "error": None, "in_scale": True},
        {"id": "c", "judge": "j", "score": None, "parse_ok": False, "error": "out_of_scale",
         "raw_output": "[FEEDBACK] Хорошо. [RESULT] 4 [END]"},
        {"id": "d", "judge": "j", "score": None, "parse_ok": False, "error": "no_result", "raw_output": "нет"},
    ]
    table, notes = item_table.build_table(records, predictions)
    assert table.status.tolist() == ["ok", "ok", "ok", "parse_failed"]
    np.testing.assert_array_equal(table.judge, [3, 1, 4, NAN])
    np.testing.assert_array_equal(table.in_scale, [0, 1, 0, NAN])
    assert notes["n_out_of_scale_reparsed"] == 1


def test_item_table_writes_in_scale_and_abstentions(tmp_path):
    """items.parquet: in_scale true/false for scored items and null otherwise; n_abstained per item."""
    import pyarrow.parquet as pq

    table = _table(judge=[5, 1, NAN], status=["ok", "ok", "parse_failed"], experts=[[2, 2], [1], []])
    table.in_scale[:] = [0.0, 1.0, NAN]
    table.n_abstained[:] = [0, 1, 3]
    item_table.write_table(table, tmp_path / "items.parquet")
    data = pq.read_table(tmp_path / "items.parquet").to_pydict()
    assert data["in_scale"] == [False, True, None] and data["n_abstained"] == [0, 1, 3]
    back, _ = item_table.read_table(tmp_path / "items.parquet")
    np.testing.assert_array_equal(back.in_scale, [0, 1, NAN])
    np.testing.assert_array_equal(back.n_abstained, [0, 1, 3])


# Table 10 by hand. Model x: items [2, 1] (mean 3/2), [0, 0] (0), [2, 2] (2), all judged 2, 1, 3 (the 3 is out of
# the 0..2 scale) -> experts (3/2 + 0 + 2) / 3 = 7/6, judge (2 + 1 + 3) / 3 = 2; MAE vs modes [-, 0, 2]: |1-0| and
# |3-2| -> 1 (the first has no unique mode). Model y: items [1, 1, 0] (mean 2/3) judged 0, [1, 1] (mean 1) not
# judged (parse failure) -> experts (2/3 + 1) / 2 = 5/6; judge 0 over 1 item; experts on judged items 2/3.
# All items pooled: experts (3/2 + 0 + 2 + 2/3 + 1) / 5 = (9 + 0 + 12 + 4 + 6) / 30 = 31/30; judge (2+1+3+0)/4 = 3/2.
def test_model_means_reproduce_table_10_aggregation():
    """Per evaluated model: mean of the items' expert means and mean of the judge's scores (out-of-scale kept)."""
    table = _table(judge=[2, 1, 3, 0, NAN], status=["ok", "ok", "ok", "ok", "parse_failed"],
                   experts=[[2, 1], [0, 0], [2, 2], [1, 1, 0], [1, 1]], models=["x", "x", "x", "y", "y"])
    table.in_scale[:] = [1, 1, 0, 1, NAN]
    means = item_table.evaluate(table, n_boot=0).to_json()["splits"]["all"]["model_means"]
    x, y, pooled = means["by_model"]["x"], means["by_model"]["y"], means["all"]
    assert (x["n_items"], x["n_judged"], x["n_out_of_scale"]) == (3, 3, 1)
    assert x["experts_mean"] == pytest.approx(7 / 6) and x["judge_mean"] == pytest.approx(2.0)
    assert x["mae"] == pytest.approx(1.0)
    assert (y["n_items"], y["n_judged"]) == (2, 1)
    assert y["experts_mean"] == pytest.approx(5 / 6) and y["judge_mean"] == 0.0
    assert y["experts_mean_on_judged"] == pytest.approx(2 / 3)
    assert pooled["experts_mean"] == pytest.approx(31 / 30) and pooled["judge_mean"] == pytest.approx(1.5)


WHY_EMPTY = [
    # (name, status, experts, n_abstained, expected why_empty)
    ("no predictions", ["missing", "missing"], [[1, 1], [0, 0]], [0, 0], {"no_prediction": 2}),
    ("all parse failures", ["parse_failed", "request_failed"], [[1, 1], [0, 0]], [0, 0],
     {"request_failed": 1, "parse_failed": 1}),
    ("all experts abstained", ["ok", "ok"], [[], []], [3, 2], {"all_experts_abstained": 2}),
    ("unlabelled", ["ok", "ok"], [[], []], [0, 0], {"no_expert_scores": 2}),
    ("no unique mode", ["ok", "ok"], [[0, 1], [2, 1]], [0, 1], {"no_unique_mode": 2}),
]


@pytest.mark.parametrize("name,status,experts,abstained,expected", WHY_EMPTY, ids=[r[0] for r in WHY_EMPTY])
def test_a_test_with_no_scored_item_says_why(name, status, experts, abstained, expected):
    """n_scored 0 comes with why_empty (items per reason) and a sentence; abstentions are counted, not errors."""
    judge = [1.0 if s == "ok" else NAN for s in status]
    table = _table(judge=judge, status=status, experts=experts)
    table.n_abstained[:] = abstained
    cell = item_table.evaluate(table, n_boot=0).to_json()["splits"]["all"]["overall"]
    assert cell["n_scored"] == 0 and cell["why_empty"] == expected
    assert cell["why_empty_text"].startswith("no scored item: ")
    assert cell["n_abstained"] == sum(abstained)
    assert cell["n_all_abstained"] == (2 if name == "all experts abstained" else 0)
    # both items have no expert score in the two unlabelled cases (abstained or none given), none elsewhere
    assert cell["n_unlabelled"] == (2 if name in ("all experts abstained", "unlabelled") else 0)


def test_groups_are_numpys_sorted_unique_labels_with_their_items_in_order():
    """item_table.label_groups (labels numbered by Arrow) gives np.unique's groups: the labels as text in code-point
    order (Cyrillic, accents, None and numbers as their text) and each label's item indices ascending."""
    rng = np.random.default_rng(3)
    pool = ["b", "a", "Я", "я", "ё", "A b", "a\u00e9", "e\u0301", None, 1.5, "", "z"]
    labels = np.empty(3000, dtype=object)
    labels[:] = [pool[k] for k in rng.integers(0, len(pool), 3000)]
    names, inverse = np.unique(labels.astype(str), return_inverse=True)
    groups = item_table.label_groups(labels)
    assert list(groups) == [str(n) for n in names] and len(groups) == len(pool)
    for k, name in enumerate(names):
        assert np.array_equal(groups[str(name)], np.flatnonzero(inverse == k))
    assert item_table.label_groups(labels[:0]) == {}


def test_compare_finds_no_vc_difference_between_two_runs_of_one_judge(tmp_path):
    """Two runs of one judge on 40 sample items, the second with item 0's verdict unparsed: on the 39 items both
    scored every item's judge VC is the same in both runs, so compare's paired VC difference is exactly 0 (with
    one random stream over the scored items, the failure would shift every later item's draws)."""
    import judge
    from eval.cli import main
    from eval.scoring.compare import compare

    records = judge.load_records(judge.sample_data_path())[:40]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    for name, failed in (("a", set()), ("b", {records[0].id})):
        rows = []
        for r in records:
            score = int(max(r.expert_scores or [0]))
            ok = r.id not in failed
            rows.append({"id": r.id, "judge": "j", "raw_output": f"[FEEDBACK] x [RESULT] {score} [END]" if ok else "x",
                         "feedback": "x", "score": score if ok else None, "parse_ok": ok,
                         "error": None if ok else "no_result", "reason": "", "score_source": "verdict",
                         "latency_s": 0.1})
        (tmp_path / name).mkdir()
        (tmp_path / name / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows),
                                                           encoding="utf-8")
        assert main(["score", "--predictions", str(tmp_path / name), "--data", str(data), "--n-boot", "0",
                     "--no-plots"]) == 0
    paired = compare([tmp_path / "a", tmp_path / "b"], n_boot=0).comparisons[0].splits["all"].overall["vc_judge"]
    assert paired.n > 20 and paired.delta == 0.0


def test_the_verdict_confidence_draws_are_splitmix64_as_published():
    """The per-item streams are SplitMix64 (Steele, Lea and Flood, OOPSLA 2014; Vigna's reference splitmix64.c): from
    state 0, the reference's first three outputs are 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f. A
    slip in a shift or a constant would still draw numbers that look random; this pins the generator itself."""
    state = np.zeros(1, dtype=np.uint64)
    outputs = []
    for _ in range(3):
        state += metrics._GOLDEN
        outputs.append(int(metrics._mix64(state.copy())[0]))
    assert outputs == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def _scored_run(folder, judge, experts, instructions=None):
    """A folder as ``judge-eval score`` writes it (items.parquet with its extra columns, metrics.json), for
    ``compare``: one Standard-test item per expert panel, ids i0, i1, ...; ``instructions``: each item's instruction
    key (which items ``--bootstrap-unit instruction`` resamples together)."""
    import dataclasses

    from eval.scoring.item_table import derive, dumps, evaluate

    table = _table(judge, ["ok"] * len(judge), experts)
    if instructions is not None:
        table = dataclasses.replace(table, instruction_key=np.asarray(instructions))
    derived = derive(table, "mode")
    result = evaluate(table, target="mode", n_boot=50, derived=derived)
    folder.mkdir()
    item_table.write_table(table, folder / "items.parquet", extra={"reference": derived.reference,
                                                                    "vc_judge": derived.vc_judge,
                                                                    "vc_experts": derived.vc_experts})
    (folder / "metrics.json").write_text(dumps(result), encoding="utf-8")
    return folder


def test_compare_makes_no_call_from_a_handful_of_paired_items(tmp_path):
    """Experts (0, 0, 1) and (1, 1, 2): modes 0 and 1. Run A says (1, 2), errors 1 and 1, MAE 1; run B says (0, 1),
    errors 0 and 0, MAE 0. Every paired resample of the two items gives delta -1: the interval [-1, -1] and p = 0,
    which called B "better" from two items. Under ``compare.MIN_PAIRED`` (30) paired items the call is "n.s."
    whatever the p-value (the minimum the experts' ceiling reads too, ``bootstrap.MIN_VERDICT_UNITS``). The same
    panels repeated 15 times (30 items, the same errors) reach the minimum: "better"."""
    from eval.scoring.compare import MIN_PAIRED, compare

    assert MIN_PAIRED == bootstrap.MIN_VERDICT_UNITS == 30
    experts = [[0, 0, 1], [1, 1, 2]]
    a = _scored_run(tmp_path / "A", [1.0, 2.0], experts)
    b = _scored_run(tmp_path / "B", [0.0, 1.0], experts)
    mae = compare([a, b], n_boot=200).comparisons[0].splits["standard"].overall["mae"]
    assert (mae.n, mae.a, mae.b, mae.delta, mae.ci, mae.p_value) == (2, 1.0, 0.0, -1.0, (-1.0, -1.0), 0.0)
    assert mae.verdict == "n.s."
    a = _scored_run(tmp_path / "A30", [1.0, 2.0] * 15, experts * 15)
    b = _scored_run(tmp_path / "B30", [0.0, 1.0] * 15, experts * 15)
    mae = compare([a, b], n_boot=200).comparisons[0].splits["standard"].overall["mae"]
    assert (mae.n, mae.delta, mae.p_value, mae.verdict) == (30, -1.0, 0.0, "better")


def test_compare_makes_no_call_from_too_few_resamples(tmp_path):
    """The 30 items above (every resample gives delta -1, p estimated as 0) called "better" from any number of
    resamples; a p-value that is twice a share of n resamples only says p < 2 / n, so a call at alpha needs more
    than 2 / alpha of them (``paired_resamples_to_call``: 41 at 0.05, 201 at 0.01; at exactly 40, p < 0.05 is not
    shown). Under that: "n.s.", and the headline says why; from it: "better"."""
    from eval.scoring.compare import compare, headline, paired_resamples_to_call

    assert [paired_resamples_to_call(a) for a in (0.05, 0.01, 0.03)] == [41, 201, 67]
    experts = [[0, 0, 1], [1, 1, 2]] * 15
    a = _scored_run(tmp_path / "A", [1.0, 2.0] * 15, experts)
    b = _scored_run(tmp_path / "B", [0.0, 1.0] * 15, experts)
    few = compare([a, b], n_boot=40)
    mae = few.comparisons[0].splits["standard"].overall["mae"]
    assert (mae.n, mae.delta, mae.p_value, mae.n_resamples, mae.verdict) == (30, -1.0, 0.0, 40, "n.s.")
    said = [line for line in headline(few) if "paired items)" in line]
    assert said and all(line.endswith("n.s. (under 41 resamples: too few to call at alpha 0.05)") for line in said)
    mae = compare([a, b], n_boot=41).comparisons[0].splits["standard"].overall["mae"]
    assert (mae.n_resamples, mae.verdict) == (41, "better")
    mae = compare([a, b], n_boot=100, alpha=0.01).comparisons[0].splits["standard"].overall["mae"]
    assert mae.verdict == "n.s."


def test_compare_counts_instructions_against_the_minimum_when_it_resamples_them(tmp_path):
    """Under ``--bootstrap-unit instruction`` the minimum counts the instructions resampled, and the headline says so:
    the 30 items above in 2 instructions (15 each) are 2 units, too few to call, while 30 items are not."""
    from eval.scoring.compare import compare, headline

    experts, keys = [[0, 0, 1], [1, 1, 2]] * 15, [0] * 15 + [1] * 15
    a = _scored_run(tmp_path / "A", [1.0, 2.0] * 15, experts, keys)
    b = _scored_run(tmp_path / "B", [0.0, 1.0] * 15, experts, keys)
    result = compare([a, b], n_boot=200, bootstrap_unit="instruction")
    mae = result.comparisons[0].splits["standard"].overall["mae"]
    assert (mae.n, mae.n_units, mae.delta, mae.verdict) == (30, 2, -1.0, "n.s.")
    said = [line for line in headline(result) if "paired items)" in line]  # one per split (all, standard)
    assert said and all(line.endswith("30 paired items): n.s. (under 30 paired instructions: too few to call)")
                        for line in said), said

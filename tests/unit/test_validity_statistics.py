"""The experts' ceiling, agreement and bias (eval.validity): values derived by hand on tables small enough for paper,
and the libraries' pitfalls pinned."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from eval.validity.agreement import agreement, agreement_classes, quadratic_kappa, value_counts
from eval.validity.alt_test import AltTestSettings, alt_test
from eval.validity.bias import leniency, length_bias, marginal_homogeneity
from eval.validity.ceiling import ceiling, leave_one_out_reference
from eval.validity.paired import paired_validity

nan = np.nan


def test_leave_one_out_reference_mode_and_mean():
    """[2, 2, 1]: leaving out either 2 leaves (2, 1), no unique mode; leaving out the 1 leaves (2, 2) -> 2; means
    1.5, 1.5, 2. [0, 1, -]: each expert's rest is the other one."""
    experts = np.array([[2, 2, 1], [0, 1, nan]])
    mode = leave_one_out_reference(experts, "mode")
    np.testing.assert_array_equal(mode, [[nan, nan, 2], [1, 0, nan]])
    np.testing.assert_array_equal(leave_one_out_reference(experts, "mean"), [[1.5, 1.5, 2], [1, 0, nan]])


def test_ceiling_by_hand():
    """Three items, scale 0-2, mode reference of the rest of the panel:
      [1, 1, 1], judge 1: three pairs, reference 1, errors expert 0 0 0, judge 0 0 0;
      [0, 1, 1], judge 2: leaving out the 0 -> reference 1 (expert error 1, judge 1); leaving out a 1 -> (0, 1) has
        no unique mode: two pairs left out;
      [2, 0], judge 2: leaving out the 2 -> reference 0 (expert 2, judge 2); leaving out the 0 -> 2 (expert 2,
        judge 0).
    Six pairs: expert MAE (0+0+0+1+2+2)/6 = 5/6, judge MAE (0+0+0+1+2+0)/6 = 1/2, gap -1/3.
    Quadratic kappa, expert vs reference: pairs (1,1)x3 (0,1) (2,0) (0,2); observed sum of squared distances
    0+1+4+4 = 9 over 6 = 1.5; margins expert (2, 3, 1), reference (1, 4, 1): expected
    [2*(0*1+1*4+4*1) + 3*(1*1+0*4+1*1) + 1*(4*1+1*4+0*1)] / 36 = (16+6+8)/36 = 5/6; kappa = 1 - 1.5/(5/6) = -0.8.
    Judge vs reference: (1,1)x3 (2,1) (2,0) (2,2): observed (1+4)/6 = 5/6; margins judge (0, 3, 3): expected
    [3*(1+0+1) + 3*(4*1+1*4+0)] / 36 = 30/36; kappa = 1 - 1 = 0."""
    experts = np.array([[1, 1, 1], [0, 1, 1], [2, 0, nan]])
    judge = np.array([1.0, 2.0, 2.0])
    result = ceiling(judge, experts, "mode", np.array([0.0, 1.0, 2.0]), n_boot=0)
    assert result["n_pairs"] == 6 and result["n_items"] == 3
    assert result["expert_mae"] == pytest.approx(5 / 6)
    assert result["judge_mae"] == pytest.approx(1 / 2)
    assert result["gap"] == pytest.approx(-1 / 3)
    assert result["expert_kappa"] == pytest.approx(-0.8)
    assert result["judge_kappa"] == pytest.approx(0.0, abs=1e-12)
    assert result["gap_ci"] == [None, None] and result["verdict"] is None  # no interval, no verdict
    with_interval = ceiling(judge, experts, "mode", np.array([0.0, 1.0, 2.0]), n_boot=200,
                            rng=np.random.default_rng(0))
    assert with_interval["gap_ci"][0] <= 0 and with_interval["verdict"] == "inside"


def test_ceiling_judge_failures_leave_the_same_pairs_out_of_both_sides():
    """A judge failure removes that item's pairs from both MAEs (counted), and the gap's interval is a bootstrap
    over items that brackets the point estimate; a judge far from every panel is outside the experts' range."""
    rng = np.random.default_rng(3)
    experts = rng.integers(0, 3, size=(200, 3)).astype(float)
    judge = experts[:, 0].copy()
    judge[:10] = nan
    result = ceiling(judge, experts, "mean", np.array([0.0, 1.0, 2.0]), n_boot=300, rng=np.random.default_rng(0))
    assert result["n_judge_failed"] == 30 and result["n_pairs"] == 570
    low, high = result["gap_ci"]
    assert low <= result["gap"] <= high and result["expert_kappa"] is None  # kappa needs the mode reference
    far = ceiling(np.full(200, 2.0), np.zeros((200, 3)), "mode", np.array([0.0, 1.0, 2.0]), n_boot=200)
    assert far["gap"] == 2.0 and far["verdict"] == "outside"


def test_kappa_pitfall_labels_must_be_the_full_scale():
    """On a 0-4 scale used only at 0, 1 and 4, sklearn without ``labels`` indexes the weights by the used levels
    (4 is two steps from 0, not four) and gives another kappa; ``quadratic_kappa`` equals sklearn with the full scale
    as labels."""
    a, b = np.array([0, 1, 4, 4, 1, 0]), np.array([1, 0, 4, 1, 4, 0])
    full = cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 3, 4])
    shrunk = cohen_kappa_score(a, b, weights="quadratic")
    assert abs(full - shrunk) > 0.05
    assert quadratic_kappa(a, b, np.arange(5.0)) == pytest.approx(full, abs=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(5):  # and on random tables with unused levels
        x, y = rng.choice([0, 2, 3], 40), rng.choice([0, 1, 3], 40)
        assert quadratic_kappa(x, y, np.arange(5.0)) == pytest.approx(
            cohen_kappa_score(x, y, weights="quadratic", labels=list(range(5))), abs=1e-12)


def test_alpha_ordinal_by_hand():
    """Two raters, three units (0,0), (1,1), (0,1): coincidences o_00 = 2, o_11 = 2, o_01 = o_10 = 1; n_0 = n_1 = 3,
    n = 6. Ordinal delta^2_01 = (n_0 + n_1 - (n_0 + n_1)/2)^2 = 9. D_o = (1+1)*9/6 = 3;
    D_e = 2*3*3*9 / (6*5) = 5.4; alpha = 1 - 3/5.4 = 4/9."""
    experts = np.array([[0, 0], [1, 1], [0, 1]], dtype=float)
    result = agreement(np.full(3, nan), experts, np.array([0, 1, nan]), np.array([0.0, 1.0]), n_boot=0)
    assert result["alpha_experts"] == pytest.approx(4 / 9)
    # the judge as a third rater: the library's alpha of the 3 x 3 reliability data
    judge = np.array([0.0, 1.0, 1.0])
    with_judge = agreement(judge, experts, np.array([0, 1, nan]), np.array([0.0, 1.0]), n_boot=0)
    expected = krippendorff.alpha(reliability_data=np.vstack([experts.T, judge]), level_of_measurement="ordinal")
    assert with_judge["alpha_with_judge"] == pytest.approx(expected)
    assert with_judge["alpha_difference"] == pytest.approx(expected - 4 / 9)


def test_alpha_difference_interval_resamples_the_items_the_point_estimate_counts():
    """An item with one expert pairs only once the judge is added: it counts in ``alpha_with_judge``, so the
    bootstrap draws it too (all 300 items here, not the 150 with two experts), and the interval brackets the point
    estimate. Half the items have one expert the judge agrees with; on the other half the judge is off by one."""
    rng = np.random.default_rng(1)
    two = rng.integers(0, 3, size=(150, 2)).astype(float)
    one = np.column_stack([rng.integers(0, 3, 150).astype(float), np.full(150, nan)])
    experts = np.vstack([two, one])
    judge = np.concatenate([(two[:, 0] + 1) % 3, one[:, 0]])
    result = agreement(judge, experts, np.full(300, nan), np.array([0.0, 1.0, 2.0]), n_boot=200,
                       rng=np.random.default_rng(0))
    assert result["alpha_boot"]["items_per_resample"] == 300
    low, high = result["alpha_difference_ci"]
    assert low <= result["alpha_difference"] <= high


def test_krippendorff_pitfalls_level_and_value_domain():
    """The package's default level is interval (another alpha than ordinal on the same data), and from value counts
    without ``value_domain`` it numbers the columns 0, 1, 2 as the values: levels 0, 1, 4 then read as 0, 1, 2."""
    counts = np.array([[2, 0, 0], [0, 1, 1], [0, 0, 2], [1, 1, 0]], dtype=float)  # columns: levels 0, 1, 4
    interval = krippendorff.alpha(value_counts=counts, value_domain=[0, 1, 4])
    ordinal = krippendorff.alpha(value_counts=counts, value_domain=[0, 1, 4], level_of_measurement="ordinal")
    as_positions = krippendorff.alpha(value_counts=counts)
    assert abs(interval - ordinal) > 0.03
    assert abs(as_positions - interval) > 0.03
    # the section's value_counts span the full scale; an unused level changes nothing for ordinal alpha
    experts = np.array([[0, 0], [1, 4], [4, 4], [0, 1]], dtype=float)
    np.testing.assert_array_equal(value_counts(experts, np.arange(5.0))[:, [0, 1, 4]], counts)
    result = agreement(np.full(4, nan), experts, np.full(4, nan), np.arange(5.0), n_boot=0)
    assert result["alpha_experts"] == pytest.approx(ordinal)


def test_agreement_classes_and_split_figures():
    """Unanimous (all equal), majority (a unique mode), split (none); the judge's exact agreement with the mode per
    class and its MAE against the experts' mean."""
    experts = np.array([[1, 1, 1], [2, 2, 1], [0, 2, nan], [1, nan, nan]])
    np.testing.assert_array_equal(agreement_classes(experts), ["unanimous", "majority", "split", ""])
    judge = np.array([1.0, 1.0, 2.0, 0.0])
    mode = np.array([1.0, 2.0, nan, 1.0])
    result = agreement(judge, experts, mode, np.array([0.0, 1.0, 2.0]), n_boot=0)
    split = result["by_expert_agreement"]
    assert split["unanimous"] == {"n": 1, "n_judged": 1, "exact": 1.0, "mae_to_mean": 0.0}
    assert split["majority"]["exact"] == 0.0 and split["majority"]["mae_to_mean"] == pytest.approx(2 / 3)
    assert split["split"] == {"n": 1, "n_judged": 1, "exact": None, "mae_to_mean": 1.0}
    # kappa over the items with a unique mode: (1,1), (1,2), (0,1)
    assert result["n_kappa"] == 3
    assert result["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score([1, 1, 0], [1, 2, 1], weights="quadratic", labels=[0, 1, 2]))


def test_leniency_of_errors_without_spread_has_the_zero_width_interval_at_their_mean():
    """A judge one level above the experts' mean on every item: errors 1, 1, 1 (sd 0), interval [1, 1], which
    excludes 0: lenient. One error alone has no interval."""
    result = leniency(np.array([2.0, 1.0, 3.0]), np.array([1.0, 0.0, 2.0]), None)
    assert (result["mean_signed_error"], result["ci"], result["direction"]) == (1.0, [1.0, 1.0], "lenient")
    assert leniency(np.array([2.0]), np.array([1.0]), None)["ci"] == [None, None]


def test_leniency_oriented_by_hand():
    """Errors against the experts' mean: (2 - 1) = 1; a Critical criterion (best at 0) (0 - 0.5) * -1 = 0.5;
    (1 - 1) = 0. Mean 0.5, sd sqrt((.25 + 0 + .25)/2) = .5, t interval .5 +- t(.975, 2) * .5/sqrt(3)."""
    result = leniency(np.array([2.0, 0.0, 1.0]), np.array([1.0, 0.5, 1.0]), np.array([False, True, False]))
    assert result["mean_signed_error"] == pytest.approx(0.5)
    half = 4.302652729749464 * 0.5 / math.sqrt(3)
    assert result["ci"] == pytest.approx([0.5 - half, 0.5 + half])
    assert result["direction"] == "neither"
    lenient = leniency(np.full(50, 2.0), np.linspace(0.5, 1.5, 50), None)
    assert lenient["direction"] == "lenient" and lenient["mean_signed_error"] == pytest.approx(1.0)


def test_length_bias_flags_a_judge_outside_the_experts_slopes():
    """A judge whose residual grows with log length is flagged against named experts whose residuals do not; the
    same judge scored like the experts is not."""
    rng = np.random.default_rng(1)
    n = 400
    chars = np.exp(rng.uniform(3, 8, n))
    truth = rng.integers(0, 3, n).astype(float)
    experts = np.clip(truth[:, None] + rng.choice([-1, 0, 0, 0, 1], size=(n, 3)), 0, 2)
    ids = np.array([["a", "b", "c"]] * n, dtype=object)
    biased = truth + 0.4 * (np.log(chars) - 5.5)
    result = length_bias(biased, experts, ids, chars, None)
    assert set(result["experts"]["by_expert"]) == {"a", "b", "c"}
    assert result["judge"]["slope"] > 0.3 and result["flag"] == "lenient on long answers"
    fair = length_bias(experts[:, 0], experts, ids, chars, None)
    assert fair["flag"] is None
    pooled = length_bias(biased, experts, None, chars, None)  # no names: the experts' pooled slope
    assert "pooled" in pooled["experts"] and pooled["flag"] == "lenient on long answers"


def test_marginal_homogeneity_is_mcnemar_on_two_levels():
    """Stuart-Maxwell on a 2 x 2 table is McNemar's (b - c)^2 / (b + c): judge x mode [[10, 5], [1, 4]] ->
    (5 - 1)^2 / 6 = 8/3 with 1 degree of freedom; an unused third level of the scale is left out."""
    judge = np.array([0] * 15 + [1] * 5, dtype=float)
    mode = np.array([0] * 10 + [1] * 5 + [0] * 1 + [1] * 4, dtype=float)
    result = marginal_homogeneity(judge, mode, np.array([0.0, 1.0, 2.0]))
    assert result["statistic"] == pytest.approx(8 / 3) and result["df"] == 1
    assert result["levels"] == [0.0, 1.0]
    assert result["judge_margin"] == [15.0, 5.0, 0.0] and result["experts_margin"] == [11.0, 9.0, 0.0]


def test_paired_validity_matches_each_judges_own_figures():
    """Paired rho and ceiling gap: each side equals the judge's own alt-test rho and ceiling gap on the shared items;
    the same judge twice differs by exactly 0 in every resample."""
    rng = np.random.default_rng(5)
    experts = rng.integers(0, 3, size=(120, 3)).astype(float)
    ids = np.array([["a", "b", "c"]] * 120, dtype=object)
    judge_a, judge_b = experts[:, 0].copy(), np.clip(experts[:, 1] + 1, 0, 2)
    settings = AltTestSettings()
    paired = paired_validity(judge_a, judge_b, experts, ids, "mean", settings, n_boot=100)
    own_a, own_b = (alt_test(j, experts, ids, settings)["advantage_probability"] for j in (judge_a, judge_b))
    assert paired["rho"]["baseline"] == pytest.approx(own_a) and paired["rho"]["run"] == pytest.approx(own_b)
    gap = ceiling(judge_b, experts, "mean", np.arange(3.0), n_boot=0)["gap"]
    assert paired["ceiling_gap"]["run"] == pytest.approx(gap)
    low, high = paired["rho"]["ci"]
    assert low <= paired["rho"]["delta"] <= high
    same = paired_validity(judge_a, judge_a, experts, ids, "mean", settings, n_boot=50)
    assert same["rho"]["delta"] == 0 and same["rho"]["ci"] == [0.0, 0.0] and same["ceiling_gap"]["ci"] == [0.0, 0.0]


def test_paired_validity_with_dropped_failures_tests_both_judges_on_the_same_items():
    """``failures="drop"``: an item either judge failed on is dropped for both, so each side's rho is that judge's
    own alt-test rho on the items both scored (B fails on the first 20 items; A's rho is taken without them too)."""
    rng = np.random.default_rng(6)
    experts = rng.integers(0, 3, size=(120, 3)).astype(float)
    ids = np.array([["a", "b", "c"]] * 120, dtype=object)
    judge_a, judge_b = experts[:, 0].copy(), np.clip(experts[:, 1] + 1, 0, 2)
    judge_b[:20] = nan
    settings = AltTestSettings(failures="drop")
    paired = paired_validity(judge_a, judge_b, experts, ids, "mean", settings, n_boot=0)
    shared_a = np.where(np.isfinite(judge_b), judge_a, nan)
    assert paired["rho"]["baseline"] == pytest.approx(alt_test(shared_a, experts, ids, settings)["advantage_probability"])
    assert paired["rho"]["baseline"] != pytest.approx(alt_test(judge_a, experts, ids, settings)["advantage_probability"])
    assert paired["rho"]["run"] == pytest.approx(alt_test(judge_b, experts, ids, settings)["advantage_probability"])


@pytest.mark.parametrize(("judge", "experts"), [
    (np.array([1.0, 2.0]), np.zeros((2, 0))),  # unlabelled data
    (np.array([1.0, 2.0]), np.array([[1.0], [2.0]])),  # one expert per item: no panel to leave one out of
    (np.array([nan, nan]), np.array([[1.0, 2.0], [0.0, 1.0]])),  # the judge failed everywhere
])  # fmt: skip
def test_section_on_tables_with_nothing_to_compare(judge, experts):
    """A table where no figure can be computed still gives a section and a sentence (figures None), not an error."""
    from eval.scoring.item_table import ItemTable
    from eval.validity.section import validity_section

    labels = {name: np.full(2, value, dtype=object) for name, value in (
        ("status", "ok"), ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("model_id", "m"),
        ("task_type", "t"), ("task_group", "g"), ("criteria_name", "c"))}  # fmt: skip
    table = ItemTable(ids=np.array(["a", "b"], dtype=object), judge=judge, experts=experts, **labels)
    section = validity_section(table, "mode", {"all": np.arange(2)})
    overall = section.splits["all"].overall
    assert overall.ceiling.n_pairs == 0 and overall.ceiling.verdict is None
    assert section.splits["all"].sentence.startswith("The alternative annotator test needs named experts")

"""The experts' ceiling, agreement and bias (eval.validity): values derived by hand on tables small enough for paper,
and the libraries' pitfalls pinned."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from eval.validity.agreement import CLASSES, agreement, class_codes, quadratic_kappa, value_counts
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
    # three items are too few to tell (``ceiling.MIN_ITEMS``), whatever the interval says
    assert with_interval["gap_ci"][0] <= 0 and with_interval["verdict"] == "inconclusive"


def test_ceiling_judge_failures_leave_the_same_pairs_out_of_both_sides():
    """A judge failure removes that item's pairs from both MAEs (counted), and the gap's interval is a bootstrap
    over items that brackets the point estimate; a judge far from every panel is outside the experts' range."""
    rng = np.random.default_rng(3)
    experts = rng.integers(0, 3, size=(200, 3)).astype(float)
    judge = experts[:, 0].copy()
    judge[:10] = nan
    result = ceiling(judge, experts, "mean", np.array([0.0, 1.0, 2.0]), n_boot=300, rng=np.random.default_rng(0),
                     failures="drop")
    assert result["n_judge_failed"] == 30 and result["n_pairs"] == 570 and result["n_items_judge_failed"] == 10
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


def test_alpha_is_ordinal_by_hand_on_three_levels():
    """The two-level example above gives 4/9 under every level of measurement; three levels tell them apart.

    Two raters, five units (0,0), (0,0), (1,1), (2,2), (0,2): coincidences o_00 = 4, o_11 = 2, o_22 = 2,
    o_02 = o_20 = 1; n_0 = 5, n_1 = 2, n_2 = 3, n = 10.
    Ordinal delta^2_ck = (n_c + ... + n_k - (n_c + n_k)/2)^2: delta_01 = 3.5^2 = 12.25, delta_12 = 2.5^2 = 6.25,
      delta_02 = (10 - 4)^2 = 36. D_o = 2 * 36 / 10 = 7.2; D_e = 2 (5*2*12.25 + 5*3*36 + 2*3*6.25) / (10*9) = 1400/90;
      alpha = 1 - 7.2 * 90 / 1400 = 94/175 = 0.5371.
    Interval (delta = (c - k)^2) gives 1 - 0.8 / (152/90) = 10/19 = 0.5263, nominal 1 - 0.2 / (62/90) = 22/31: the
    section's alpha is the ordinal one, and equals the package's ordinal alpha."""
    experts = np.array([[0, 0], [0, 0], [1, 1], [2, 2], [0, 2]], dtype=float)
    result = agreement(np.full(5, nan), experts, np.array([0, 0, 1, 2, nan]), np.array([0.0, 1.0, 2.0]), n_boot=0)
    assert result["alpha_experts"] == pytest.approx(94 / 175, abs=1e-12)
    data = experts.T
    assert krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal") == pytest.approx(94 / 175)
    assert krippendorff.alpha(reliability_data=data, level_of_measurement="interval") == pytest.approx(10 / 19)
    assert krippendorff.alpha(reliability_data=data, level_of_measurement="nominal") == pytest.approx(22 / 31)


def test_both_alphas_are_over_the_items_two_experts_scored():
    """An item with one expert pairs once the judge is added, but the experts' alpha cannot take it: both alphas are
    over the 150 items with two experts (the judge's agreement on the other 150 is no part of what it adds to the
    panel), and so is the bootstrap. Half the items have one expert the judge agrees with; on the other half the
    judge is off by one: taken over all 300, alpha with the judge read higher than over the 150 alone."""
    rng = np.random.default_rng(1)
    two = rng.integers(0, 3, size=(150, 2)).astype(float)
    one = np.column_stack([rng.integers(0, 3, 150).astype(float), np.full(150, nan)])
    experts = np.vstack([two, one])
    judge = np.concatenate([(two[:, 0] + 1) % 3, one[:, 0]])
    result = agreement(judge, experts, np.full(300, nan), np.array([0.0, 1.0, 2.0]), n_boot=200,
                       rng=np.random.default_rng(0))
    assert result["n_items_alpha"] == 150
    assert result["alpha_boot"]["items_per_resample"] == 150
    with_judge = np.column_stack([two, judge[:150]]).T  # raters x items, the package's reliability data
    expected = krippendorff.alpha(reliability_data=with_judge, value_domain=[0, 1, 2], level_of_measurement="ordinal")
    assert result["alpha_with_judge"] == pytest.approx(expected)
    over_all = krippendorff.alpha(reliability_data=np.column_stack([experts, judge]).T, value_domain=[0, 1, 2],
                                  level_of_measurement="ordinal")
    assert over_all > expected + 0.1  # what the difference read before: the one-expert items' agreement
    assert result["alpha_experts"] == pytest.approx(krippendorff.alpha(
        reliability_data=two.T, value_domain=[0, 1, 2], level_of_measurement="ordinal"))
    low, high = result["alpha_difference_ci"]
    assert low <= result["alpha_difference"] <= high


def test_alpha_difference_has_no_interval_when_too_few_resamples_are_usable():
    """The paired intervals' rule (``eval.validity.paired.MIN_USABLE_SHARE``): a resample with an undefined alpha
    is unusable, counted, and under 90 % usable there is no interval. Two items, each two experts who agree on one
    level (0 0, 2 2), the judge 1 on both: a resample that draws the same item twice has one value among the
    experts, no expected disagreement, alpha undefined; that happens with probability 1/2, so about half of 200
    resamples are usable."""
    experts = np.array([[0.0, 0.0], [2.0, 2.0]])
    result = agreement(np.array([1.0, 1.0]), experts, np.array([0.0, 2.0]), np.array([0.0, 1.0, 2.0]), n_boot=200,
                       rng=np.random.default_rng(0))
    assert result["alpha_experts"] == pytest.approx(1.0)
    boot = result["alpha_boot"]
    assert boot["resamples"] == 200 and 70 < boot["n_resamples"] < 130
    assert result["alpha_difference_ci"] == [None, None]
    # every resample usable: an interval, and the count says so
    many = agreement(np.array([1.0, 1.0] * 20), np.vstack([experts] * 20), np.array([0.0, 2.0] * 20),
                     np.array([0.0, 1.0, 2.0]), n_boot=200, rng=np.random.default_rng(0))
    assert many["alpha_boot"]["n_resamples"] == 200 and many["alpha_difference_ci"][0] is not None


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
    codes = class_codes(experts)
    np.testing.assert_array_equal(codes, [0, 1, 2, -1])
    assert [CLASSES[c] for c in codes[:3]] == ["unanimous", "majority", "split"]
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
    """A judge one level above the experts' mean on every one of ten items: errors all 1 (sd 0), interval [1, 1],
    which excludes 0: lenient. One error alone has no interval."""
    result = leniency(np.arange(10.0) + 1, np.arange(10.0), None)
    assert (result["mean_signed_error"], result["ci"], result["direction"]) == (1.0, [1.0, 1.0], "lenient")
    assert leniency(np.array([2.0]), np.array([1.0]), None)["ci"] == [None, None]


def test_a_more_lenient_error_never_turns_lenient_into_neither():
    """The zero-spread rule below ``MIN_LENIENCY_N`` flipped the direction the wrong way: (+1, +1) read lenient with
    [1, 1], the more lenient (+1, +1, +2) neither (mean 4/3, sd sqrt(1/3), t interval 4/3 +- t(.975, 2)/3 =
    [-0.10, 2.77]). Below ten errors there is no direction now, either way; from ten on, n ones and a 2 keep their
    direction (mean 1 + 1/(n+1), se 1/(n+1): the low end 1 - (t(.975, n) - 1)/(n + 1) > 0)."""
    two, three = (leniency(np.array(e), np.zeros(len(e)), None) for e in ([1.0, 1.0], [1.0, 1.0, 2.0]))
    assert two["ci"] == [1.0, 1.0] and three["ci"] == pytest.approx([4 / 3 - 4.302652729749464 / 3,
                                                                     4 / 3 + 4.302652729749464 / 3])
    assert (two["direction"], three["direction"]) == ("neither", "neither")
    for n in range(10, 40):
        ones = leniency(np.ones(n), np.zeros(n), None)
        more = leniency(np.r_[np.ones(n), 2.0], np.zeros(n + 1), None)
        assert (ones["direction"], more["direction"]) == ("lenient", "lenient"), n
    # and harsh the same way: the floor holds for either direction
    assert leniency(-np.ones(9), np.zeros(9), None)["direction"] == "neither"
    assert leniency(-np.ones(10), np.zeros(10), None)["direction"] == "harsh"
    from eval.validity.bias import MIN_LENIENCY_N

    assert MIN_LENIENCY_N == 10


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


def test_length_bias_without_named_experts_compares_with_nothing():
    """Without ids the experts' pooled leave-one-out slope is 0 on any data: per item (k experts, sum S) the residuals
    e_j - (S - e_j)/(k - 1) sum to S - (k - 1)S/(k - 1) = 0, so their covariance with a per-item regressor is 0. It
    was shown as "the experts' slope" and the judge flagged against a band around 0; now the experts' slope is
    unavailable with the reason, the judge's slope keeps its interval, and there is no flag. The experts here all
    favour long answers (+1 above length e^7), which a pooled "0" would hide."""
    from scipy.stats import linregress

    rng = np.random.default_rng(0)
    n = 400
    chars = rng.integers(50, 5000, n).astype(float)
    base = rng.integers(0, 3, n).astype(float)
    experts = np.stack([np.clip(base + (np.log(chars) > 7) + rng.integers(-1, 2, n), 0, 2) for _ in range(3)], 1)
    judge = np.clip(base + rng.normal(0, 0.5, n), 0, 2)
    rest = (experts.sum(axis=1, keepdims=True) - experts) / 2
    pooled = linregress(np.repeat(np.log(chars), 3), (experts - rest).ravel())
    assert pooled.slope == pytest.approx(0.0, abs=1e-12)  # the identity, whatever the experts did
    result = length_bias(judge, experts, None, chars, None)
    assert result["experts"]["pooled"] is None and "names no experts" in result["experts"]["why"]
    assert result["judge"]["n"] == n and result["judge"]["ci"][1] < 0  # harsh against the experts' mean ...
    assert result["flag"] is None  # ... but not beside any expert's own slope: no flag
    # the report's text says what was (not) compared
    from eval.validity.render import _length_text
    from judge.metrics_json.validity import LengthBias

    text = _length_text(LengthBias.from_json(result))
    assert "not compared" in text and "not outside the experts" not in text


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


def test_the_baseline_paired_rho_is_its_sections_under_loss_and_not_under_drop():
    """120 items, the run (B) failing on 40 the baseline (A) scored. Under ``loss`` a failure is the failing judge's
    loss and A's items stay as they are: A's paired rho is its own section's rho. Under ``drop`` an item either
    judge failed on leaves both judges' rho, so A's paired rho is over the 80 items both scored and is not its
    section's (which drops A's own failures only): docs/validity.md said the two were always equal."""
    rng = np.random.default_rng(11)
    experts = rng.integers(0, 3, size=(120, 3)).astype(float)
    ids = np.array([["a", "b", "c"]] * 120, dtype=object)
    judge_a = np.where(rng.random(120) < 0.7, experts[:, 0], rng.integers(0, 3, 120)).astype(float)
    judge_b = np.clip(experts[:, 1] + 1, 0, 2)
    judge_b[::3] = nan
    for failures in ("loss", "drop"):
        settings = AltTestSettings(failures=failures)
        paired = paired_validity(judge_a, judge_b, experts, ids, "mean", settings, n_boot=0)
        own = alt_test(judge_a, experts, ids, settings)["advantage_probability"]
        if failures == "loss":
            assert paired["rho"]["baseline"] == pytest.approx(own, abs=1e-12)
        else:
            shared = alt_test(np.where(np.isfinite(judge_b), judge_a, nan), experts, ids,
                              settings)["advantage_probability"]
            assert paired["rho"]["baseline"] == pytest.approx(shared, abs=1e-12)
            assert abs(paired["rho"]["baseline"] - own) > 1e-3


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
    # The ceiling gap follows the baseline section's ``ceiling_failures``: under ``worst`` every item counts and each
    # side is its judge's own ceiling gap with failures as their largest error (the scale 0-2); under ``drop`` the
    # items both scored.
    domain = np.arange(3.0)
    worst = paired_validity(judge_a, judge_b, experts, ids, "mean", settings, n_boot=0, ceiling_failures="worst",
                            scale_low=np.zeros(120), scale_high=np.full(120, 2.0))
    assert worst["ceiling_gap"]["baseline"] == pytest.approx(ceiling(judge_a, experts, "mean", domain, n_boot=0)["gap"])
    assert worst["ceiling_gap"]["run"] == pytest.approx(ceiling(judge_b, experts, "mean", domain, n_boot=0)["gap"])
    dropped = paired_validity(judge_a, judge_b, experts, ids, "mean", settings, n_boot=0, ceiling_failures="drop")
    assert dropped["ceiling_gap"]["baseline"] == pytest.approx(
        ceiling(shared_a, experts, "mean", domain, n_boot=0, failures="drop")["gap"])


@pytest.mark.parametrize(("judge", "experts"), [
    (np.array([1.0, 2.0]), np.zeros((2, 0))),  # unlabelled data
    (np.array([1.0, 2.0]), np.array([[1.0], [2.0]])),  # one expert per item: no panel to leave one out of
    (np.array([nan, nan]), np.array([[1.0, 2.0], [0.0, 1.0]])),  # the judge failed everywhere
])  # fmt: skip
def test_section_on_tables_with_nothing_to_compare(judge, experts):
    """A table where no figure can be computed still gives a section and a sentence (figures None), not an error."""
    from eval.scoring.item_table import ItemTable
    from eval.validity.section import ValiditySettings, validity_section

    labels = {name: np.full(2, value, dtype=object) for name, value in (
        ("status", "ok"), ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("model_id", "m"),
        ("task_type", "t"), ("task_group", "g"), ("criteria_name", "c"))}  # fmt: skip
    table = ItemTable(ids=np.array(["a", "b"], dtype=object), judge=judge, experts=experts, **labels)
    section = validity_section(table, "mode", {"all": np.arange(2)})
    overall = section.splits["all"].overall
    if np.isnan(judge).all():
        # The judge's failures count as its largest error (``ceiling_failures`` "worst"): the scale unknown, the
        # ends are the criterion's expert scores 0 and 2. Panel (1, 2): references 2 and 1, expert errors 1, 1, the
        # judge's 2 (the end 0) and 1 (a tie: the lower end); panel (0, 1): references 1 and 0, expert errors 1, 1,
        # the judge's 1 and 2. Judge 6/4, experts 4/4; two items: too few for a verdict, "inconclusive".
        c = overall.ceiling
        assert (c.n_pairs, c.n_judge_failed, c.n_items_judge_failed) == (4, 4, 2)
        assert (c.judge_mae, c.expert_mae, c.verdict) == (1.5, 1.0, "inconclusive")
        dropped = validity_section(table, "mode", {"all": np.arange(2)}, ValiditySettings(ceiling_failures="drop"))
        overall = dropped.splits["all"].overall
    assert overall.ceiling.n_pairs == 0 and overall.ceiling.verdict is None
    assert section.splits["all"].sentence.startswith("The alternative annotator test needs named experts")


def test_ceiling_verdict_is_inside_only_where_shown_close():
    """Three outcomes against the margin (``ceiling.MARGIN`` = 0.1 of a level of MAE), on panels where every pair's
    gap is known, so that the bootstrap interval is known too (experts [1, 1, 1]: each expert's rest has mean 1 and
    the expert's error is 0, so a pair's gap is the judge's error |judge - 1|):

    - judge 1 on 40 items: every gap 0, interval [0, 0], at or below 0.1: inside;
    - judge 1.05 on 40 items: every gap 0.05, interval [0.05, 0.05]: farther than an expert, but within the margin:
      inside (the old rule, "inside only where the interval reaches 0", called it outside);
    - judge 3 on 40 items: every gap 2: outside;
    - judge 1 on 20 items, 1.2 on 20: mean gap 0.1, the interval straddles the margin: inconclusive;
    - a judge inverting the scale on 4 items (experts t, t, t for t = 0, 1, 2, 1, judge 2 - t):
      gaps 2, 0, 2, 0; a resample of only the 0s (or only the 2s) has chance 1/16 > 2.5 %, so the interval is
      [0, 2]: it reached 0 and read "inside"; 4 < ``MIN_ITEMS`` items: inconclusive."""
    domain = np.arange(4.0)
    panel = np.ones((40, 3))

    def judged(judge, experts=panel):
        return ceiling(np.asarray(judge, dtype=float), experts, "mean", domain, n_boot=200,
                       rng=np.random.default_rng(0))

    exact = judged(np.ones(40))
    assert exact["gap_ci"] == [0.0, 0.0] and exact["verdict"] == "inside"
    close = judged(np.full(40, 1.05))
    assert close["gap_ci"] == pytest.approx([0.05, 0.05])
    assert close["verdict"] == "inside"
    far = judged(np.full(40, 3.0))
    assert far["gap_ci"] == [2.0, 2.0] and far["verdict"] == "outside"
    truth = np.array([0.0, 1.0, 2.0, 1.0])
    inverted = judged(2 - truth, np.repeat(truth[:, None], 3, axis=1))
    assert inverted["gap_ci"] == [0.0, 2.0] and inverted["verdict"] == "inconclusive"
    straddling = judged(np.r_[np.ones(20), np.full(20, 1.2)])
    low, high = straddling["gap_ci"]
    assert low < 0.1 < high and straddling["verdict"] == "inconclusive"
    # the rule itself, at its edges
    from eval.validity.ceiling import MARGIN, MIN_ITEMS, verdict

    assert (MARGIN, MIN_ITEMS) == (0.1, 30)
    assert verdict([None, None], 100, 200) is None
    assert verdict([0.1, 0.1], 30, 200) == "inside" and verdict([0.1 + 1e-9, 0.5], 30, 200) == "outside"
    assert verdict([-1.0, -0.5], 29, 200) == "inconclusive"


def test_section_sentence_counts_only_inside_criteria_and_says_the_rest():
    """The lead sentence counts inside criteria only and names the rest apart: outside, inconclusive, and without an
    interval (no verdict), every criterion in the "of": 1 inside of 5 (a-e), e without one. When no criterion has a
    verdict the sentence says so rather than nothing."""
    from eval.validity.section import split_sentence
    from judge.metrics_json.validity import ValiditySplit

    def cell(verdict):
        return {"n_items": 40, "value_domain": [0.0, 1.0],
                "ceiling": {"reference": "mode", "n_judge_failed": 0, "n_items": 40, "n_pairs": 80, "expert_mae": 0.1,
                            "judge_mae": 0.1, "gap": 0.0, "gap_ci": [0.0, 0.0], "expert_kappa": None,
                            "judge_kappa": None, "verdict": verdict},
                "leniency": {"n": 40, "mean_signed_error": 0.0, "ci": [-0.1, 0.1], "direction": "neither"},
                "alt_test": {"available": False, "why": "the data names no experts"}}

    block = ValiditySplit.from_json({"overall": cell("inside"), "alt_test_domains": {}, "by_task_type": {},
                                     "by_criterion": {"a": cell("inside"), "b": cell("inconclusive"),
                                                      "c": cell("inconclusive"), "d": cell("outside"),
                                                      "e": cell(None)},
                                     "sentence": ""})
    assert ("inside the experts' range on 1 of 5 criteria (1 outside, 2 inconclusive, 1 without an interval)"
            in split_sentence(block))
    none = ValiditySplit.from_json({"overall": cell(None), "alt_test_domains": {}, "by_task_type": {},
                                    "by_criterion": {"a": cell(None), "b": cell(None)}, "sentence": ""})
    assert "no ceiling verdict on any of the 2 criteria (no interval)" in split_sentence(none)


def test_alpha_difference_interval_of_an_m_out_of_n_bootstrap_is_rescaled():
    """A cell larger than ``ALPHA_BOOT_ITEMS`` (1,000) resamples 1,000 of its items; a statistic of m items spreads
    sqrt(n/m) times as widely as one of n, so the deviations are shrunk by sqrt(m/n) = sqrt(1000/20000) ~ 0.22.
    Without it the interval of 20,000 items was ~5 times as wide as a bootstrap of the full size; with it, within
    1.5 times (seeded resamples of the same cell)."""
    import eval.validity.agreement as agreement_module

    rng = np.random.default_rng(0)
    n = 20000
    truth = rng.integers(0, 3, n).astype(float)
    experts = np.stack([np.clip(truth + rng.choice([0, 0, 0, 1, -1], n), 0, 2) for _ in range(3)], 1)
    judge = np.clip(truth + rng.choice([0, 0, 1, -1], n), 0, 2)

    def width(items_per_resample):
        old = agreement_module.ALPHA_BOOT_ITEMS
        agreement_module.ALPHA_BOOT_ITEMS = items_per_resample
        try:
            out = agreement(judge, experts, np.full(n, nan), np.arange(3.0), n_boot=100, rng=np.random.default_rng(1))
        finally:
            agreement_module.ALPHA_BOOT_ITEMS = old
        assert out["alpha_boot"]["items_per_resample"] == min(items_per_resample, n)
        low, high = out["alpha_difference_ci"]
        assert low <= out["alpha_difference"] <= high
        return high - low

    shipped, full = width(agreement_module.ALPHA_BOOT_ITEMS), width(n)
    assert 1 / 1.5 < shipped / full < 1.5


def test_paired_rho_compares_the_levels_the_section_compares():
    """Under ``accuracy`` the section compares the level a score rounds to where that level is in the scale, else the
    score itself (``alt_test_judge``); paired rho reads the same values. A regression head at consensus + 0.1 has
    the experts' label on every item once rounded: every left-out expert and the judge tie, rho = 1 (by hand; raw,
    2.1 equals no expert). A 2.6 on a 0-2 scale rounds to 3, outside the scale: compared as 2.6, it equals no
    expert's 2, so on the 20 of 60 items whose experts agree on 2 each left-out expert wins (its alignment 1, the
    judge's 0): rho = 40/60 = 2/3. The baseline's paired rho is the section's, both ways."""
    from eval.validity.section import alt_test_judge

    n = 60
    consensus = np.arange(n, dtype=float) % 3
    experts = np.repeat(consensus[:, None], 3, axis=1)
    ids = np.array([["a", "b", "c"]] * n, dtype=object)
    settings = AltTestSettings(scoring="accuracy")
    inside = consensus + 0.1  # inside the scale: rounding alone gives the level
    section_rho = alt_test(alt_test_judge(inside, None, None, "accuracy"), experts, ids,
                           settings)["advantage_probability"]
    paired = paired_validity(inside, inside, experts, ids, "mean", settings, n_boot=0)
    assert section_rho == 1.0 and paired["rho"]["baseline"] == section_rho and paired["rho"]["run"] == section_rho
    # past the top of the scale: no level of the scale, as the section reads it (with the scale's ends)
    head = np.where(consensus == 2, 2.6, consensus + 0.1)
    low, high = np.zeros(n), np.full(n, 2.0)
    section_rho = alt_test(alt_test_judge(head, low, high, "accuracy"), experts, ids, settings)["advantage_probability"]
    paired = paired_validity(head, head, experts, ids, "mean", settings, n_boot=0, scale_low=low, scale_high=high)
    assert section_rho == pytest.approx(2 / 3, abs=1e-12)
    assert paired["rho"]["baseline"] == section_rho and paired["rho"]["run"] == section_rho
    # a regression head's raw value past the top is that end, as its section reads it: 2.6 is the experts' 2, rho 1;
    # paired rho reads it so for the judge it is said of (the run's 2.6 read raw again: rho 2/3, a delta of -1/3)
    head_read = np.ones(n, dtype=bool)
    section_rho = alt_test(alt_test_judge(head, low, high, "accuracy", head_read), experts, ids,
                           settings)["advantage_probability"]
    paired = paired_validity(head, head, experts, ids, "mean", settings, n_boot=0, scale_low=low, scale_high=high,
                             measured_a=head_read, measured_b=None)
    assert section_rho == 1.0 and paired["rho"]["baseline"] == section_rho
    assert paired["rho"]["run"] == pytest.approx(2 / 3, abs=1e-12)
    # neg_rmse takes the raw scores, in both
    raw = AltTestSettings()
    assert paired_validity(head, head, experts, ids, "mean", raw, n_boot=0, scale_low=low, scale_high=high)[
        "rho"]["baseline"] == alt_test(head, experts, ids, raw)["advantage_probability"]


def _table(judge, experts, ids, status):
    from eval.scoring.item_table import ItemTable

    n = len(judge)
    labels = {name: np.full(n, value, dtype=object) for name, value in (
        ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("model_id", "m"), ("task_type", "t"),
        ("task_group", "g"), ("criteria_name", "c"))}  # fmt: skip
    return ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=judge, experts=experts,
                     expert_ids=ids, status=np.asarray(status, dtype=object), **labels)


def test_items_without_a_prediction_are_no_judge_failures():
    """A perfect judge on 400 items, half of them not predicted yet (status "missing"). Three experts who agree with
    the truth: on the 200 predicted items the judge ties every left-out expert, d = 0 > -0.2 on every item (the
    constant rule: p = 0), every expert is rejected: omega 1, rho 1 — under ``loss`` as under ``drop``. Counted as
    losses, the missing half gave W_f = 0 on 200 of 400 items (rho 0.5, mean d = -0.5: no expert rejected, omega 0).
    Missing items count in no figure: no judge failure in the alt-test or the ceiling, the section counts them
    (``n_items_missing``). A real failure on 10 predicted items is still a loss: rho = 190/200 = 0.95."""
    from eval.validity.section import ValiditySettings, validity_section

    n = 400
    truth = np.arange(n, dtype=float) % 3
    experts = np.repeat(truth[:, None], 3, axis=1)
    ids = np.array([["a", "b", "c"]] * n, dtype=object)
    judge = truth.copy()
    status = np.array(["ok"] * n, dtype=object)
    judge[n // 2:], status[n // 2:] = nan, "missing"
    table = _table(judge, experts, ids, status)
    results = {}
    for failures in ("loss", "drop"):
        settings = ValiditySettings(alt_test=AltTestSettings(failures=failures), n_boot=50, alpha_boot=0)
        results[failures] = validity_section(table, "mode", {"standard": np.arange(n)}, settings).splits["standard"]
    for failures, block in results.items():
        alt, overall = block.overall.alt_test, block.overall
        assert (alt.winning_rate, alt.advantage_probability, alt.n_items_judge_failed) == (1.0, 1.0, 0), failures
        assert alt.n_items == 200 and overall.n_items == 200 and overall.n_items_missing == 200
        assert overall.ceiling.n_judge_failed == 0 and overall.ceiling.n_items == 200
        assert block.by_criterion["c"].n_items_missing == 200
    failed = judge.copy()
    failed[:10] = nan
    status[:10] = "parse_failed"
    block = validity_section(_table(failed, experts, ids, status), "mode", {"standard": np.arange(n)},
                             ValiditySettings(n_boot=0, alpha_boot=0)).splits["standard"]
    alt = block.overall.alt_test
    assert alt.n_items_judge_failed == 10 and alt.advantage_probability == pytest.approx(0.95)
    assert block.overall.ceiling.n_judge_failed == 30 and block.overall.n_items_missing == 200
    # A split the run has not reached: its sentence says the judge has no predictions, not that experts are few.
    unreached = validity_section(table, "mode", {"zero_shot": np.arange(n // 2, n)},
                                 ValiditySettings(n_boot=0, alpha_boot=0)).splits["zero_shot"]
    assert unreached.sentence == ("The judge has no prediction in this split yet (200 items without one): no validity "
                                  "figure.")


def test_cluster_slope_equals_statsmodels_clustered_ols():
    """``bias.cluster_slope`` is statsmodels' OLS with ``cov_type="cluster"`` (its small-sample factor): the same
    slope and standard error, on uneven clusters and at two levels. Where ``x`` varies within clusters the interval
    is statsmodels' too (t at G - 1 degrees of freedom); where ``x`` is constant within every cluster (the answer's
    length, clustered by answer) the t quantile is at G - 2 (Donald and Lang), where statsmodels keeps G - 1: the
    interval is slope +- t(G - 2) * statsmodels' standard error, G = 60."""
    from scipy.stats import t as student_t
    from statsmodels.regression.linear_model import OLS

    from eval.validity.bias import cluster_slope

    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(60), rng.integers(1, 9, 60))
    rng.shuffle(clusters)
    invariant = rng.normal(6, 1, 60)[clusters]
    varying = invariant + rng.normal(0, 0.5, len(clusters))
    for x, df in ((invariant, 58), (varying, None)):
        y = 0.1 * x + rng.normal(0, 0.4, 60)[clusters] + rng.normal(0, 0.3, len(clusters))
        for level in (0.95, 0.9):
            fit = OLS(y, np.column_stack([np.ones(len(x)), x])).fit(cov_type="cluster",
                                                                  cov_kwds={"groups": clusters}, use_t=True)
            got = cluster_slope(x, y, clusters, level)
            assert got["slope"] == pytest.approx(fit.params[1], abs=1e-12)
            if df is None:
                assert got["ci"] == pytest.approx(fit.conf_int(1 - level)[1].tolist(), abs=1e-12)
            else:
                half = student_t.ppf(0.5 + level / 2, df) * fit.bse[1]
                assert got["ci"] == pytest.approx([fit.params[1] - half, fit.params[1] + half], abs=1e-12)
    assert cluster_slope(x, y, np.zeros(len(x), dtype=int)) is None  # one cluster: no interval


def test_cluster_slope_of_a_cluster_level_regressor_needs_three_clusters():
    """Two answers of three criteria each, lengths e^1 and e^2 (log length 1 and 2), residuals (0, 1, 2) and
    (1, 2, 3): the least-squares line runs through the two answers' means, 1 at x = 1 and 2 at x = 2, slope 1, so
    each answer's residuals sum to 0 and the clustered variance is 0 — the zero-width interval [1, 1], which flagged
    the judge against any experts' range not holding 1. With two clusters and a regressor constant within them
    there are G - 2 = 0 degrees of freedom: no slope (no interval, no flag).

    A third answer at log length 3 with residuals (1, 2, 3): the answers' means 1, 2, 2 at x 1, 2, 3 give slope 1/2
    and mean 5/3 at x = 2, fitted 7/6, 5/3, 13/6; the answers' residual sums 3(1 - 7/6) = -1/2, 3(2 - 5/3) = 1,
    3(2 - 13/6) = -1/2, the centred x -1, 0, 1, so the scores are 1/2, 0, -1/2 with sum of squares 1/2, and
    sxx = 6: var = (3/2)(8/7)(1/2)/36 = 1/42, the half-width t(0.975, 1) sqrt(1/42), at G - 2 = 1 degree of freedom
    (statsmodels: 2)."""
    from scipy.stats import t as student_t

    from eval.validity.bias import cluster_slope

    x = np.repeat([1.0, 2.0], 3)
    y = np.array([0.0, 1.0, 2.0, 1.0, 2.0, 3.0])
    assert cluster_slope(x, y, np.repeat([0, 1], 3)) is None
    x3, clusters = np.repeat([1.0, 2.0, 3.0], 3), np.repeat([0, 1, 2], 3)
    got = cluster_slope(x3, np.r_[y, 1.0, 2.0, 3.0], clusters)
    half = student_t.ppf(0.975, 1) * np.sqrt(1 / 42)
    assert got["slope"] == pytest.approx(0.5, abs=1e-12)
    assert got["ci"] == pytest.approx([0.5 - half, 0.5 + half], abs=1e-12)


def test_length_flag_needs_thirty_answers_for_the_judge_and_the_experts():
    """The judge 2 levels above the experts on the long answers and level with them on the short ones, three named
    experts with leave-one-out residuals 0 (they agree on every item): the experts' range is [0, 0] and the judge's
    slope 2 / (log 1000 - log 100) with a narrow interval.

    29 answers of two criteria each (58 items, so every expert has the 30 pairs ``MIN_PAIRS`` asks for): under the
    30 answers (``MIN_SLOPE_ANSWERS``) no expert's slope counts, so there is no range and no flag; 30 answers: the
    judge is flagged lenient on long answers. And 30 answers for the judge beside an expert with 29: that expert has
    no slope of its own, the other two set the range."""
    from eval.validity.bias import MIN_SLOPE_ANSWERS

    assert MIN_SLOPE_ANSWERS == 30

    def data(n_answers):
        answers = np.repeat(np.arange(n_answers), 2)
        long = answers % 2 == 1
        chars = np.where(long, 1000.0, 100.0) * (1 + 1e-3 * answers)  # one length per answer
        experts = np.repeat((answers % 3).astype(float)[:, None], 3, axis=1)
        judge = experts[:, 0] + np.where(long, 2.0, 0.0) + np.where(np.arange(len(answers)) % 2, 0.01, -0.01)
        ids = np.array([["a", "b", "c"]] * len(answers), dtype=object)
        return judge, experts, ids, chars, answers

    judge, experts, ids, chars, answers = data(29)
    few = length_bias(judge, experts, ids, chars, None, answers=answers)
    assert few["judge"] is not None and few["experts"]["by_expert"] == {} and few["flag"] is None
    judge, experts, ids, chars, answers = data(30)
    enough = length_bias(judge, experts, ids, chars, None, answers=answers)
    assert enough["experts"]["range"] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert enough["flag"] == "lenient on long answers"
    failed = np.where(answers == 29, nan, judge)  # the judge's slope over 29 answers, the experts' over 30
    judge_few = length_bias(failed, experts, ids, chars, None, answers=answers)
    assert judge_few["experts"]["range"] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert judge_few["judge"]["ci"][0] > 0 and judge_few["flag"] is None
    ids[answers == 29, 2] = None  # expert c on 29 answers (58 - 2 = 56 pairs), the judge and a, b on 30
    mixed = length_bias(judge, experts, ids, chars, None, answers=answers)
    assert set(mixed["experts"]["by_expert"]) == {"a", "b"} and mixed["flag"] == "lenient on long answers"


def test_length_flag_needs_two_experts_slopes():
    """200 answers scored by expert A (named) and expert B (unnamed, so no slope of its own), A one level above B on
    the long answers, and a judge equal to their mean. The judge's residual is 0 on every item (slope 0, interval
    [0, 0]); A's leave-one-out slope is positive, and A's alone made the experts' range, of zero width: the judge
    was flagged "harsh on long answers" for being unlike that one expert. A flag needs two experts' slopes
    (``MIN_EXPERT_SLOPES``): no flag, the range still shown and the reason said, in the file and the report."""
    from eval.validity.bias import MIN_EXPERT_SLOPES
    from eval.validity.render import _length_text
    from judge.metrics_json.validity import LengthBias

    assert MIN_EXPERT_SLOPES == 2
    rng = np.random.default_rng(0)
    n = 200
    chars = rng.integers(100, 5000, n).astype(float)
    b = rng.integers(0, 2, n).astype(float)
    experts = np.c_[b + (chars > np.median(chars)), b]
    ids = np.array([["A", None]] * n, dtype=object)
    result = length_bias(experts.mean(axis=1), experts, ids, chars, None, answers=np.arange(n))
    assert result["judge"]["ci"] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert list(result["experts"]["by_expert"]) == ["A"] and result["experts"]["range"][0] > 0
    assert result["flag"] is None
    assert result["experts"]["why"].startswith("experts with a slope of their own: 1; a flag needs the range of at "
                                               "least 2")
    assert _length_text(LengthBias.from_json(result)).endswith(": not compared: 1 expert with a slope of their own, "
                                                               "a flag needs 2")
    # a second named expert (B named too) gives a range, and the comparison
    named = length_bias(experts.mean(axis=1), experts, np.array([["A", "B"]] * n, dtype=object), chars, None,
                        answers=np.arange(n))
    assert set(named["experts"]["by_expert"]) == {"A", "B"} and "why" not in named["experts"]
    assert named["flag"] is None  # level with the experts' mean: inside A's and B's slopes (B's the negative of A's)


def test_answer_codes_group_an_answers_criteria():
    """Items of one answer share the model, the task type, the answer's length and the instruction: one code; any of
    them differing is another answer."""
    from eval.validity.bias import answer_codes

    model = np.array(["m", "m", "m", "n", "m"], dtype=object)
    task = np.array(["t", "t", "t", "t", "u"], dtype=object)
    chars = np.array([120.0, 120.0, 121.0, 120.0, 120.0])
    assert answer_codes(model, task, chars).tolist() == [0, 0, 1, 2, 3]
    # the instruction, where the table knows it, tells apart answers of one length; alone it stands in for the length
    instruction = np.array([0, 1, 0, 0, 0])
    assert answer_codes(model, task, chars, instruction).tolist() == [0, 1, 2, 3, 4]
    assert answer_codes(model, task, None, instruction).tolist() == [0, 1, 0, 2, 3]
    assert answer_codes(model, task) is None  # neither: no answer can be told from another


def _slightly_lenient_on_long_answers():
    """150 answers (seed 3) scored by three named experts, and a judge a little lenient on long ones: a slope that one
    row per answer cannot tell from 0. Returns ``(judge, experts, ids, chars)``."""
    rng = np.random.default_rng(3)
    n = 150
    chars = rng.integers(100, 5000, n).astype(float)
    truth = rng.integers(0, 3, n).astype(float)
    experts = np.clip(truth[:, None] + rng.choice([0, 0, 0, 0, 1, -1], size=(n, 3)), 0, 2)
    judge = truth + rng.normal(0, 0.5, n) + 0.12 * (np.log(chars) - np.log(chars).mean())
    return judge, experts, np.array([["a", "b", "c"]] * n, dtype=object), chars


def test_length_slope_interval_is_clustered_by_answer():
    """Each answer's rows repeated k = 16 times, the same answer with the same errors (an answer scored on 16
    criteria): no new information. Its least-squares slope is the same (sums scale by k), and so is the clustered
    variance but for the small-sample factor: the cluster scores scale by k and the centred sum of squares by k, so
    var(b) changes only by [(kn - 1)/(kn - 2)] / [(n - 1)/(n - 2)] (n = 150 rows, the same 150 clusters and degrees
    of freedom). The classical interval shrinks by about 4 = sqrt(16) and flagged a judge it had not flagged on one
    row per answer; clustered, the flag is the same at k = 1 and k = 16."""
    judge, experts, ids, chars = _slightly_lenient_on_long_answers()
    n = len(judge)

    def fitted(k, clustered):
        def rep(values):
            return np.repeat(values, k, axis=0)

        return length_bias(rep(judge), rep(experts), rep(ids), rep(chars), None,
                           answers=np.repeat(np.arange(n), k) if clustered else None)

    once, sixteen = fitted(1, True), fitted(16, True)
    assert sixteen["judge"]["slope"] == pytest.approx(once["judge"]["slope"], abs=1e-12)
    half = [(r["judge"]["ci"][1] - r["judge"]["ci"][0]) / 2 for r in (once, sixteen)]
    factor = ((16 * n - 1) / (16 * n - 2)) / ((n - 1) / (n - 2))
    assert half[1] / half[0] == pytest.approx(np.sqrt(factor), abs=1e-9)
    assert once["flag"] is None and sixteen["flag"] is None
    # the classical interval: the same slope, no flag once, a flag at sixteen rows per answer
    assert fitted(1, False)["flag"] is None and fitted(16, False)["flag"] == "lenient on long answers"


def test_section_clusters_the_length_slope_by_answer():
    """The same through the section: an answer is its model, task type and length (``bias.answer_codes``), so the
    16 criteria rows of each of 150 answers are one cluster and the flag is that of one row per answer (none), where
    rows taken as independent flagged "lenient on long answers" (``test_length_slope_interval_is_clustered_by_answer``
    has the data)."""
    import dataclasses

    from eval.validity.section import ValiditySettings, validity_section

    judge, experts, ids, chars = _slightly_lenient_on_long_answers()
    n = len(judge)
    settings = ValiditySettings(n_boot=0, alpha_boot=0)
    flags = []
    for k in (1, 16):
        table = dataclasses.replace(_table(np.repeat(judge, k), np.repeat(experts, k, axis=0),
                                           np.repeat(ids, k, axis=0), ["ok"] * (n * k)),
                                    answer_chars=np.repeat(chars, k))
        section = validity_section(table, "mode", {"standard": np.arange(n * k)}, settings)
        flags.append(section.splits["standard"].overall.length_bias.flag)
    assert flags == [None, None]


def _levels_of(table):
    """A judge x mode table (rows the judge's level, columns the mode's) as the two columns of levels."""
    table = np.asarray(table)
    judge = np.repeat(np.repeat(np.arange(table.shape[0]), table.shape[1]), table.ravel()).astype(float)
    mode = np.repeat(np.tile(np.arange(table.shape[1]), table.shape[0]), table.ravel()).astype(float)
    return judge, mode


def test_marginal_homogeneity_leaves_out_a_level_no_item_leaves_or_enters():
    """A level used only on the diagonal moves no count between the margins. In [[10, 0, 0], [0, 5, 3], [0, 1, 6]]
    level 0 is such a level: the test is McNemar's on levels 1 and 2, (3 - 1)^2 / (3 + 1) = 1 on 1 degree of
    freedom, p = P(chi2_1 > 1) = erfc(1 / sqrt 2) = 0.3173. The same table with that level last,
    [[5, 3, 0], [1, 6, 0], [0, 0, 10]], is the same test. (statsmodels' ``SquareTable.homogeneity`` drops the last
    level to invert the covariance: on the first table it is singular, no test; on the second 1 on 2 degrees of
    freedom, p 0.61.)"""
    expected = math.erfc(1 / math.sqrt(2))
    for table, levels in (([[10, 0, 0], [0, 5, 3], [0, 1, 6]], [1.0, 2.0]),
                          ([[5, 3, 0], [1, 6, 0], [0, 0, 10]], [0.0, 1.0])):
        result = marginal_homogeneity(*_levels_of(table), np.arange(3.0))
        assert result["levels"] == levels and result["df"] == 1
        assert result["statistic"] == pytest.approx(1.0, abs=1e-12)
        assert result["p_value"] == pytest.approx(expected, abs=1e-12)
    # every item on the diagonal: the margins are equal, no test, and why
    still = marginal_homogeneity(*_levels_of(np.diag([4, 3, 5])), np.arange(3.0))
    assert (still["statistic"], still["df"], still["p_value"], still["levels"]) == (None, None, None, [])
    assert "margins are equal" in still["why"]


def test_marginal_homogeneity_adds_the_groups_of_levels_no_item_crosses():
    """[[5, 4, 0, 0], [0, 5, 0, 0], [0, 0, 5, 1], [0, 0, 1, 5]]: levels 0-1 and 2-3 exchange no item. Each pair is a
    McNemar test: (4 - 0)^2 / 4 = 4 and (1 - 1)^2 / 2 = 0; together 4 on 2 degrees of freedom,
    p = exp(-4 / 2) = e^-2 (the chi-squared survival on 2 degrees of freedom is exp(-x / 2))."""
    result = marginal_homogeneity(*_levels_of([[5, 4, 0, 0], [0, 5, 0, 0], [0, 0, 5, 1], [0, 0, 1, 5]]),
                                  np.arange(4.0))
    assert result["levels"] == [0.0, 1.0, 2.0, 3.0] and result["df"] == 2
    assert result["statistic"] == pytest.approx(4.0, abs=1e-12)
    assert result["p_value"] == pytest.approx(math.exp(-2), abs=1e-12)


def test_marginal_homogeneity_equals_statsmodels_where_its_covariance_is_regular():
    """One item per answer and every level linked to the others: statsmodels' Stuart–Maxwell test, figure for
    figure, on random tables of 3 to 5 levels."""
    from statsmodels.stats.contingency_tables import SquareTable

    rng = np.random.default_rng(2)
    for _ in range(30):
        size = int(rng.integers(3, 6))
        table = rng.integers(1, 12, size=(size, size))
        expected = SquareTable(table.astype(float), shift_zeros=False).homogeneity()
        got = marginal_homogeneity(*_levels_of(table), np.arange(float(size)))
        assert got["statistic"] == pytest.approx(expected.statistic, rel=1e-9)
        assert got["df"] == expected.df
        assert got["p_value"] == pytest.approx(expected.pvalue, rel=1e-6, abs=1e-12)


def test_marginal_homogeneity_statsmodels_figures_the_docs_cite_need_shift_zeros_off():
    """The docs compare this test with statsmodels' ``SquareTable(table, shift_zeros=False).homogeneity()``: the
    constructor's default (``shift_zeros=True``) adds 0.5 to every empty cell of a table with one, another table, so
    the figures cited (no test on [[10, 0, 0], [0, 5, 3], [0, 1, 6]], 1 on 2 degrees of freedom, p 0.61, with that
    level last) and the equality on a table whose used levels all exchange items hold only without the shift."""
    from statsmodels.stats.contingency_tables import SquareTable

    first = SquareTable(np.array([[10, 0, 0], [0, 5, 3], [0, 1, 6]], float), shift_zeros=False).homogeneity()
    assert math.isnan(first.statistic)
    last = SquareTable(np.array([[5, 3, 0], [1, 6, 0], [0, 0, 10]], float), shift_zeros=False).homogeneity()
    assert (last.statistic, last.df, round(last.pvalue, 2)) == (pytest.approx(1.0), 2, 0.61)
    shifted = SquareTable(np.array([[5, 3, 0], [1, 6, 0], [0, 0, 10]], float)).homogeneity()
    assert shifted.statistic != pytest.approx(1.0)  # the default shifts the zeros: not the figure cited
    # levels linked through one another (0-1, 1-2), the 0-2 cells empty: equal to statsmodels without the shift only
    table = np.array([[6, 3, 0], [1, 5, 4], [0, 1, 7]])
    got = marginal_homogeneity(*_levels_of(table), np.arange(3.0))
    plain = SquareTable(table.astype(float), shift_zeros=False).homogeneity()
    assert got["statistic"] == pytest.approx(plain.statistic, rel=1e-9) and got["df"] == plain.df == 2
    assert SquareTable(table.astype(float)).homogeneity().statistic != pytest.approx(got["statistic"], rel=1e-6)


def test_marginal_homogeneity_clustered_by_answer():
    """Two levels, four answers: judge 0 / mode 1 (b) and judge 1 / mode 0 (c) per answer (2, 1), (3, 0), (0, 1),
    (1, 0), so b_g - c_g = 1, 3, -1, 1. Clustered: (sum (b_g - c_g))^2 / sum (b_g - c_g)^2 = 4^2 / 12 = 4/3 on 1
    degree of freedom; as independent items McNemar's (6 - 2)^2 / 8 = 2. Each answer's rows repeated 5 times: d and
    V scale by 5 and 25, the same 4/3 (independent rows: 10)."""
    b, c = [2, 3, 0, 1], [1, 0, 1, 0]
    judge, mode, answer = [], [], []
    for g, (bg, cg) in enumerate(zip(b, c)):
        judge += [0.0] * bg + [1.0] * cg + [0.0, 1.0]  # one item on each diagonal cell too
        mode += [1.0] * bg + [0.0] * cg + [0.0, 1.0]
        answer += [g] * (bg + cg + 2)
    judge, mode, answer = np.array(judge), np.array(mode), np.array(answer)
    clustered = marginal_homogeneity(judge, mode, np.arange(2.0), answer)
    assert clustered["statistic"] == pytest.approx(4 / 3, abs=1e-12) and clustered["df"] == 1
    assert marginal_homogeneity(judge, mode, np.arange(2.0))["statistic"] == pytest.approx(2.0, abs=1e-12)
    repeated = marginal_homogeneity(np.repeat(judge, 5), np.repeat(mode, 5), np.arange(2.0), np.repeat(answer, 5))
    assert repeated["statistic"] == pytest.approx(4 / 3, abs=1e-12) and repeated["df"] == 1
    assert marginal_homogeneity(np.repeat(judge, 5), np.repeat(mode, 5), np.arange(2.0))["statistic"] == \
        pytest.approx(10.0, abs=1e-12)


# 40 answers: half err +1.15, half -0.85 (mean 0.15, sd sqrt(40/39))
_ANSWER_ERRORS = np.r_[np.full(20, 1.15), np.full(20, -0.85)]


def test_leniency_interval_is_clustered_by_answer():
    """40 answers with errors of mean 0.15 and variance 40/39: the t interval 0.15 +- t(.975, 39) sqrt(1/39) =
    [-0.174, 0.474], neither. The same answers as 16 criteria rows each: as independent rows the interval was
    0.15 +- t(.975, 639) sqrt((640/639) / 640) = [0.072, 0.228], lenient; clustered by answer each answer's centred
    sum is 16 (e_g - 0.15), so var = 40/39 * 256 * 40 / 640^2 = 1/39 on 39 degrees of freedom: the interval of one
    row per answer, and the direction stays neither. Repeating an answer k times never narrows it."""
    from scipy.stats import t as student_t

    half = student_t.ppf(0.975, 39) * math.sqrt(1 / 39)
    once = leniency(_ANSWER_ERRORS, np.zeros(40), None)
    assert once["ci"] == pytest.approx([0.15 - half, 0.15 + half], abs=1e-12) and once["direction"] == "neither"
    for k in (2, 16):
        rows = leniency(np.repeat(_ANSWER_ERRORS, k), np.zeros(40 * k), None, clusters=np.repeat(np.arange(40), k))
        assert rows["n"] == 40 * k and rows["mean_signed_error"] == pytest.approx(0.15, abs=1e-12)
        assert rows["ci"] == pytest.approx([0.15 - half, 0.15 + half], abs=1e-12) and rows["direction"] == "neither"
    # the floor counts answers: ten rows of one lenient answer (no spread) are one answer, no interval, no direction
    one = leniency(np.ones(10), np.zeros(10), None, clusters=np.zeros(10, dtype=int))
    assert one["ci"] == [None, None] and one["direction"] == "neither"
    nine = leniency(np.ones(18), np.zeros(18), None, clusters=np.repeat(np.arange(9), 2))
    assert nine["ci"] == [1.0, 1.0] and nine["direction"] == "neither"  # 9 answers, under the floor of 10


def test_section_leniency_and_homogeneity_are_clustered_by_answer():
    """Through the section: the 40 answers of ``test_leniency_interval_is_clustered_by_answer`` scored on 16
    criteria each (an answer is its model, task type and length: ``bias.answer_codes``), experts 1, 1 and judge
    1 + error. The overall cell's leniency interval and the marginal homogeneity figures are those of one row per
    answer (the direction neither, not lenient), and the sentence says no direction."""
    import dataclasses

    from eval.validity.section import ValiditySettings, validity_section

    settings = ValiditySettings(n_boot=0, alpha_boot=0)
    found = []
    for k in (1, 16):
        n = 40 * k
        judge = 1 + np.repeat(_ANSWER_ERRORS, k)
        table = dataclasses.replace(_table(judge, np.ones((n, 2)), np.array([["a", "b"]] * n, dtype=object),
                                           ["ok"] * n),
                                    answer_chars=np.repeat(100.0 + np.arange(40), k),
                                    criteria_name=np.tile(np.array([f"c{j}" for j in range(k)], dtype=object), 40),
                                    scale_low=np.zeros(n), scale_high=np.full(n, 2.0))
        overall = validity_section(table, "mode", {"standard": np.arange(n)}, settings).splits["standard"]
        found.append(overall)
    for block in found:
        assert block.overall.leniency.direction == "neither" and "lenient" not in block.sentence
    one, sixteen = (block.overall for block in found)
    assert sixteen.leniency.ci == pytest.approx(one.leniency.ci, abs=1e-12)
    assert found[1].by_task_type["t"].leniency.ci == pytest.approx(one.leniency.ci, abs=1e-12)
    assert sixteen.marginal_homogeneity.statistic == pytest.approx(one.marginal_homogeneity.statistic, abs=1e-12)
    assert sixteen.marginal_homogeneity.p_value == pytest.approx(one.marginal_homogeneity.p_value, abs=1e-12)


def test_length_bias_compares_the_judge_on_the_experts_items():
    """The experts' leave-one-out slopes need two experts per item; the judge's slope is taken on the same items. 40
    items with experts a and b, the judge at their mean (residual 0, slope 0), and 40 long single-expert items on
    which the judge is 2 levels above its one expert: those moved the judge's slope (it is 0 on the 40 items the
    experts' slopes see)."""
    n = 40
    chars = np.r_[np.linspace(50, 500, n), np.linspace(3000, 5000, n)]
    experts = np.full((2 * n, 2), nan)
    experts[:n] = np.column_stack([np.arange(n) % 3, (np.arange(n) + 1) % 3])
    experts[n:, 0] = 0.0
    ids = np.where(np.isnan(experts), None, np.array([["a", "b"]] * (2 * n), dtype=object))
    judge = np.r_[experts[:n].mean(axis=1), np.full(n, 2.0)]
    result = length_bias(judge, experts, ids, chars, None, answers=np.arange(2 * n))
    assert result["judge"]["n"] == n
    assert result["judge"]["slope"] == pytest.approx(0.0, abs=1e-12)


def test_ceiling_counts_a_failure_as_the_judges_largest_error_by_default():
    """Four items on a 0-2 scale: two easy ones, panel (1, 1, 1), the judge right; two disputed ones, panel (0, 0, 0,
    1), the judge failed. Every pair's reference is the rest's mode: 1 on the easy items (3 pairs each, every error
    0), 0 on the disputed ones (4 pairs each; expert errors 0, 0, 0, 1). ``n_judge_failed`` counts the failed pairs,
    8, ``n_items_judge_failed`` the failed items, 2 (as ``n_items`` counts items).

    ``worst`` (the default): a failure is the end of the scale farther from the reference 0, the level 2, an error
    of 2 on each of the 8 pairs: 14 pairs, judge MAE 16/14, expert MAE 2/14, gap 1. ``drop``: the disputed items'
    pairs are left out of both sides: 6 pairs on 2 items, both MAEs 0, gap 0."""
    experts = np.array([[1, 1, 1, nan], [1, 1, 1, nan], [0, 0, 0, 1], [0, 0, 0, 1]], dtype=float)
    judge = np.array([1.0, 1.0, nan, nan])
    worst = ceiling(judge, experts, "mode", np.array([0.0, 1.0, 2.0]), n_boot=0)
    assert (worst["n_judge_failed"], worst["n_items_judge_failed"], worst["n_items"], worst["n_pairs"]) == (8, 2, 4, 14)
    assert worst["judge_mae"] == pytest.approx(16 / 14) and worst["expert_mae"] == pytest.approx(2 / 14)
    assert worst["gap"] == pytest.approx(1.0)
    drop = ceiling(judge, experts, "mode", np.array([0.0, 1.0, 2.0]), n_boot=0, failures="drop")
    assert (drop["n_judge_failed"], drop["n_items_judge_failed"], drop["n_items"], drop["n_pairs"]) == (8, 2, 2, 6)
    assert (drop["judge_mae"], drop["expert_mae"], drop["gap"]) == (0.0, 0.0, 0.0)


def test_a_judge_failing_on_the_disputed_items_is_not_inside_the_experts_range():
    """60 items on a 0-2 scale, three named experts: 30 easy ones, panel (1, 1, 1), the judge right; 30 disputed
    ones, panel (0, 0, 1), where the judge's verdict failed to parse. On a disputed item only the dissenter's pair has
    a reference (the other two see (0, 1): no unique mode): 0, the dissenter's error 1.

    ``worst`` (the default): the judge's failure is the level 2, an error of 2: the gap is 30 x (2 - 1) over 90 + 30
    pairs = 0.25. A resample of d disputed items among 60 has gap d / (180 - 2 d); it reaches the 0.1 margin only at
    d <= 15 (Binomial(60, 1/2) has P(d <= 15) ~ 4e-5): the whole interval lies above the margin, "outside".
    ``drop``: the disputed items leave the ceiling, the 30 easy ones give gap 0 with the interval [0, 0] over 30
    items (the minimum): "inside" — while the alt-test counts the 30 failures as losses either way. The report says
    how many items failed: in the lead sentence, the ceiling's row and alpha's (over the readable verdicts only)."""
    from eval.validity.render import _overall_rows
    from eval.validity.section import ValiditySettings, validity_section

    n = 60
    experts = np.array([[1.0, 1, 1]] * 30 + [[0.0, 0, 1]] * 30)
    judge = np.r_[np.ones(30), np.full(30, nan)]
    status = ["ok"] * 30 + ["parse_failed"] * 30
    ids = np.array([["e1", "e2", "e3"]] * n, dtype=object)
    table = _table(judge, experts, ids, status)
    table.scale_low, table.scale_high = np.zeros(n), np.full(n, 2.0)
    blocks = {}
    for failures in ("worst", "drop"):
        section = validity_section(table, "mode", {"standard": np.arange(n)},
                                   ValiditySettings(n_boot=200, alpha_boot=0, ceiling_failures=failures))
        assert section.settings.ceiling_failures == failures
        blocks[failures] = section
    worst = blocks["worst"].splits["standard"]
    c = worst.overall.ceiling
    assert (c.n_items, c.n_pairs, c.n_judge_failed, c.n_items_judge_failed) == (60, 120, 30, 30)
    assert c.gap == pytest.approx(0.25) and c.gap_ci[0] > 0.1 and c.verdict == "outside"
    assert worst.by_criterion["c"].ceiling.verdict == "outside"
    dropped = blocks["drop"].splits["standard"].overall.ceiling
    assert (dropped.n_items, dropped.gap, dropped.gap_ci, dropped.verdict) == (30, 0.0, [0.0, 0.0], "inside")
    assert worst.overall.alt_test.n_items_judge_failed == 30
    assert worst.overall.agreement.n_items_judge_failed == 30
    assert "the judge failed on 30 items (each counted as its largest error in the ceiling)" in worst.sentence
    assert "the judge failed on 30 items (left out of the ceiling)" in blocks["drop"].splits["standard"].sentence
    rows = dict(_overall_rows(worst, "worst"))
    assert rows["experts' ceiling (MAE to the rest of the panel)"].endswith(
        "; the judge failed on 30 items (30 pairs), each counted as its largest error on the item's scale")
    assert "(over its readable verdicts: 30 failed items left out)" in rows["Krippendorff's α (ordinal)"]


def test_the_alpha_row_counts_what_it_left_out_among_its_own_items():
    """100 items on 0-2: items 0-39 scored by two experts, 40-99 by one, so both alphas are over the 40. The judge
    gives the first expert's score but fails on items 0, 1 and 60-99 and answers 5 on items 2 and 50. The cell counts
    42 failed and 2 off-scale items, but alpha with the judge left the judge out of 2 failed and 1 off-scale item of
    its 40: the row said "40 failed items left out" where no alpha item was. A file written before n_items_alpha
    took alpha with the judge over every item, so there the cell's counts are its own."""
    import dataclasses

    from eval.validity.render import _overall_rows
    from tests.support.validity_tables import split_section, table_on_0_to_2

    experts = np.full((100, 2), np.nan)
    experts[:, 0] = np.arange(100) % 3
    experts[:40, 1] = experts[:40, 0]
    judge = experts[:, 0].copy()
    judge[[0, 1]], judge[60:], judge[[2, 50]] = nan, nan, 5.0
    block = split_section(table_on_0_to_2(judge, experts, None))
    a = block.overall.agreement
    assert (a.n_items_alpha, a.n_items_judge_failed, a.n_items_judge_off_scale) == (40, 42, 2)
    assert (a.n_alpha_items_judge_failed, a.n_alpha_items_judge_off_scale) == (2, 1)
    row = dict(_overall_rows(block, "worst"))["Krippendorff's α (ordinal)"]
    assert "(over its readable verdicts: 2 failed items and 1 off-scale item left out)" in row
    older = dataclasses.replace(a, n_items_alpha=None, n_alpha_items_judge_failed=None,
                                n_alpha_items_judge_off_scale=None)
    row = dict(_overall_rows(dataclasses.replace(block, overall=dataclasses.replace(block.overall, agreement=older)),
                             "worst"))["Krippendorff's α (ordinal)"]
    assert "(over its readable verdicts: 42 failed items and 2 off-scale items left out)" in row


def test_compare_shows_no_older_alpha_beside_a_newer_one_on_one_expert_items():
    """Items 0-39 scored by two experts, 40-99 by one; the judge gives the first expert's score. Scored now, alpha
    with the judge is over the 40 (1.00); a metrics.json written before n_items_alpha took it over all 100, another
    statistic, yet compare set the two side by side. That older run's cell now says so instead of a number; on data
    every item of which two experts scored the older alpha is the same statistic and stays."""
    import dataclasses
    from types import SimpleNamespace

    from eval.validity.render import OLDER_ALPHA, _side_by_side
    from tests.support.validity_tables import split_section, table_on_0_to_2

    def runs(experts):
        block = split_section(table_on_0_to_2(experts[:, 0].copy(), experts, None))
        agreement = dataclasses.replace(block.overall.agreement, n_items_alpha=None)
        older = dataclasses.replace(block, overall=dataclasses.replace(block.overall, agreement=agreement))
        new, old = (SimpleNamespace(validity=SimpleNamespace(splits={"standard": b})) for b in (block, older))
        return block, {name: row for name, *_, row in [
            (row[0], row[4]) for row in _side_by_side({"new": new, "old": old})[0][1]]}

    experts = np.full((100, 2), np.nan)
    experts[:, 0] = np.arange(100) % 3
    experts[:40, 1] = experts[:40, 0]
    block, alpha = runs(experts)
    assert (block.overall.agreement.n_items_alpha, block.overall.n_items) == (40, 100)
    assert alpha == {"new": "1.000", "old": OLDER_ALPHA}
    experts[:, 1] = experts[:, 0]  # every item two experts: the older alpha was over the same 100 items
    assert runs(experts)[1] == {"new": "1.000", "old": "1.000"}


def test_compare_marks_an_older_leniency_beside_a_newer_one_that_leaves_off_scale_answers_out():
    """A metrics.json written before leniency left the judge's off-scale answers out (no n_judge_off_scale) took
    them in as errors; beside a newer run's leniency, compare now says so after its number. Two runs of that age,
    or two newer ones, are shown as they are."""
    import dataclasses
    from types import SimpleNamespace

    from eval.validity.render import OLDER_LENIENCY, _side_by_side
    from tests.support.validity_tables import split_section, table_on_0_to_2

    truth = np.arange(40) % 2.0
    block = split_section(table_on_0_to_2(truth.copy(), np.column_stack([truth, truth]), None))
    lenient = dataclasses.replace(block.overall.leniency, n_judge_failed=None, n_judge_off_scale=None)
    older = dataclasses.replace(block, overall=dataclasses.replace(block.overall, leniency=lenient))

    def shown(**blocks):
        runs = {name: SimpleNamespace(validity=SimpleNamespace(splits={"standard": b})) for name, b in blocks.items()}
        return {row[0]: row[5] for row in _side_by_side(runs)[0][1]}

    assert block.overall.leniency.n_judge_off_scale == 0
    assert shown(new=block, old=older) == {"new": "0.000", "old": "0.000" + OLDER_LENIENCY}
    assert shown(old=older, older=older) == {"old": "0.000", "older": "0.000"}
    assert shown(new=block, newer=block) == {"new": "0.000", "newer": "0.000"}


def test_n_kappa_counts_the_pairs_kappa_used():
    """Judge (0, 1, 1, 2) against the experts' mode (0, 1, 0.5, 2) on the domain 0-2: the mode 0.5 is no level of
    the domain, so kappa is over the 3 other pairs, all on the diagonal (kappa 1); ``n_kappa`` counts those 3, not
    4, and ``n_kappa_off_domain`` the pair left out, 1."""
    experts = np.array([[0, 0], [1, 1], [0.5, 0.5], [2, 2]])
    result = agreement(np.array([0.0, 1, 1, 2]), experts, np.array([0, 1, 0.5, 2]), np.array([0.0, 1, 2]), n_boot=0)
    assert result["n_kappa"] == 3 and result["n_kappa_off_domain"] == 1
    assert result["kappa_quadratic"] == pytest.approx(1.0)
    assert result["n_items_judge_failed"] == 0

"""The alt-test's formulas and thresholds taken from its authors' reference (``alt_test_example.ipynb``, function
``alt_test``, in the public repository ``nitaytech/AltTest``), each pinned by a small example worked out by hand:
where epsilon enters the hypothesis, the two scorings on one item, the item minimum at its boundary, the winning
rate's threshold at exactly 0.5."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from eval.validity.alt_test import AltTestSettings, alt_test, difference_p_value, indicators


def test_epsilon_lets_a_judge_slightly_worse_than_the_expert_pass():
    """H0 is rho_f <= rho_h - epsilon (the notebook: ``ttest_1samp(W_h - W_f, epsilon, alternative="less")``), so a
    judge a little worse than the left-out expert still rejects it at epsilon 0.2, and not at epsilon 0.

    40 items: the expert wins 4 (W_f 0, W_h 1, d = -1) and ties 36 (d = 0): rho_f = 36/40 = 0.9, rho_h = 1.0.
    mean(d) = -0.1; sum of squared deviations 4 * 0.9^2 + 36 * 0.1^2 = 3.6, var 3.6/39, se = sqrt(3.6/39/40).
      epsilon 0.2: t = (-0.1 + 0.2) / se = 2.0817, 39 degrees of freedom, p = sf(2.0817) ~ 0.022: rejected at 0.05;
      epsilon 0:   t = -2.0817, p = sf(-2.0817) ~ 0.978.
    """
    d = np.r_[np.full(4, -1.0), np.zeros(36)]
    se = math.sqrt(3.6 / 39 / 40)
    assert 0.1 / se == pytest.approx(2.0817, abs=1e-4)
    p, constant = difference_p_value(d, 0.2)
    assert not constant and p == pytest.approx(student_t.sf(0.1 / se, 39), rel=1e-12)
    assert 0.02 < p < 0.025
    p0, _ = difference_p_value(d, 0.0)
    assert p0 == pytest.approx(student_t.sf(-0.1 / se, 39), rel=1e-12) and p0 > 0.97


def test_the_two_scorings_choose_different_winners_on_one_item():
    """One item of a 0-2 scale, the left-out expert h = 0, the other experts 0 and 2, the judge 1.

    accuracy (share of equal labels): h = mean(0 == 0, 0 == 2) = 1/2, judge = mean(1 == 0, 1 == 2) = 0:
      the expert wins, W_f = 0, W_h = 1.
    neg_rmse: h = -sqrt((0^2 + 2^2) / 2) = -1.414, judge = -sqrt((1^2 + 1^2) / 2) = -1: the judge wins, W_f = 1,
      W_h = 0.
    The notebook scores its rating-scale data sets (summeval, 10k_prompts, cebab_stars, lesion) with neg_rmse and
    its categorical ones with accuracy (``datasets_scoring_functions``); this toolkit's default is neg_rmse.
    """
    experts = np.array([[0.0, 0.0, 2.0]])
    named = np.ones((1, 3), dtype=bool)
    judge = np.array([1.0])
    for scoring, (w_f, w_h) in (("accuracy", (0.0, 1.0)), ("neg_rmse", (1.0, 0.0))):
        item, slot, w_judge, w_expert, _ = indicators(judge, experts, named,
                                                      AltTestSettings(scoring=scoring, min_items_per_expert=1))
        first = (slot == 0)
        assert (w_judge[first].tolist(), w_expert[first].tolist()) == ([w_f], [w_h]), scoring
    assert AltTestSettings().scoring == "neg_rmse"


def _half_panel(n_items: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Experts A = 2 and B = 0 on every item, two more experts 0 and 0 beside them (C, D on the first half of the
    items, E, F on the second: each under 30 items, so never tested), the judge 1, scored by ``accuracy``."""
    half = n_items // 2
    experts = np.tile([2.0, 0.0, 0.0, 0.0], (n_items, 1))
    ids = np.array([["A", "B", "C", "D"]] * half + [["A", "B", "E", "F"]] * (n_items - half), dtype=object)
    return np.ones(n_items), experts, ids


def test_the_judge_passes_at_a_winning_rate_of_exactly_one_half():
    """omega >= 0.5 passes (the notebook: ``'PASSED' if wr >= 0.5``), not > 0.5; ties count for both.

    accuracy on every item, others of A being (0, 0, 0): A = 0 (2 equals none), the judge 0 (1 equals none): a
    tie, W_f = W_h = 1, d = 0 on all 30 items. Others of B being (2, 0, 0): B = 2/3, the judge 0: W_f = 0, W_h = 1,
    d = -1 on all 30. Constant differences: A's p = 0 (0 > -0.2), B's p = 1.
    Benjamini-Yekutieli over m = 2, H_2 = 1.5, q = 0.05: thresholds 1/2 * 0.05/1.5 = 0.0167 and 0.0333; sorted p
    (0, 1): A rejected, B not. omega = 1/2: passes. rho = mean(mean W_f of A = 1, of B = 0) = 0.5.
    """
    result = alt_test(*_half_panel(30), AltTestSettings(scoring="accuracy"))
    assert {r["expert"]: (r["n_items"], r["p_value"], r["rejected"]) for r in result["experts"]} == {
        "A": (30, 0.0, True), "B": (30, 1.0, False)}
    assert {r["expert"]: r["n_items"] for r in result["untested"]} == {"C": 15, "D": 15, "E": 15, "F": 15}
    assert result["winning_rate"] == 0.5 and result["passed"] is True
    assert result["advantage_probability"] == 0.5


def test_an_expert_needs_thirty_items_to_be_tested():
    """The notebook skips an annotator with ``len(instances) < min_instances_per_human`` (30) and leaves it out of
    omega's denominator: the same panel on 29 items tests nobody, and there is no verdict (the notebook would divide
    by zero); on 30 (above) A and B are tested."""
    result = alt_test(*_half_panel(29), AltTestSettings(scoring="accuracy"))
    assert result["n_experts_tested"] == 0 and result["experts"] == []
    assert {r["expert"]: r["n_items"] for r in result["untested"]}["A"] == 29
    assert result["winning_rate"] is None and result["passed"] is None

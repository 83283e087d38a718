"""A judge score off the rubric's scale is no rating of it: kappa, alpha with the judge and the exact agreement
never read it as the nearest end of the scale (``eval.validity.section.judge_levels``, docs/validity.md)."""

from __future__ import annotations

import numpy as np
import pytest


def _overall(judge: np.ndarray, experts: np.ndarray):
    """The overall cell of the validity section of one criterion scored on a 0-2 scale, no named experts."""
    from eval.scoring.item_table import ItemTable
    from eval.validity.section import ValiditySettings, validity_section

    n = len(judge)
    labels = {name: np.full(n, value, dtype=object) for name, value in (
        ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("task_type", "t"), ("task_group", "g"),
        ("status", "ok"), ("model_id", "m"), ("criteria_name", "c"))}  # fmt: skip
    table = ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=judge, experts=experts,
                      scale_low=np.zeros(n), scale_high=np.full(n, 2.0), **labels)
    settings = ValiditySettings(n_boot=0, alpha_boot=0)
    return validity_section(table, "mode", {"standard": np.arange(n)}, settings).splits["standard"].overall


def test_a_judge_answering_5_on_a_0_to_2_scale_is_not_read_as_2():
    """40 items, experts unanimous: (2, 2) on the even items, where the judge answers 5, and (1, 1) on the odd ones,
    where it answers 1. Clipped into the scale, the 5 read as 2 and the judge agreed with the experts everywhere
    (kappa 1.0, exact 1.0, MAE 0). Left unclipped, the 20 fives are off the scale:

    - kappa is over the 20 odd items alone, every one (judge 1, mode 1): one cell of the table, whose chance
      agreement is 1, so kappa is undefined (None); ``n_kappa`` 20, ``n_kappa_off_domain`` 20;
    - exact: 20 of the 40 unanimous items match (a 5 is no 2) = 0.5;
    - MAE to the experts' mean: (20 x |5 - 2| + 20 x 0) / 40 = 60 / 40 = 1.5;
    - no failure: ``n_items_judge_failed`` 0.
    """
    judge = np.tile([5.0, 1.0], 20)
    experts = np.tile([[2.0, 2.0], [1.0, 1.0]], (20, 1))
    agreement = _overall(judge, experts).agreement
    assert agreement.kappa_quadratic is None
    assert agreement.n_kappa == 20 and agreement.n_kappa_off_domain == 20
    unanimous = agreement.by_expert_agreement["unanimous"]
    assert (unanimous.n, unanimous.n_judged) == (40, 40)
    assert unanimous.exact == pytest.approx(0.5, abs=1e-12)
    assert unanimous.mae_to_mean == pytest.approx(1.5, abs=1e-12)
    assert agreement.n_items_judge_failed == 0


def test_alpha_with_the_judge_leaves_an_off_scale_score_out():
    """20 items (2, 2) where the judge answers 5, 20 items (1, 1) where it answers 0. The 5 is left out, so the
    judge rates the odd items only. Ordinal alpha = 1 - (n - 1) sum(o_ck d_ck) / sum(n_c n_k d_ck) over ordered pairs
    (c, k), d_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2:

    - coincidences: each (2, 2) item adds 2 to o_22; each (1, 1, 0) item adds 1 to o_11, o_10 and o_01 (3 values,
      pairs / (m - 1) = 2 / 2). n_0 = 20, n_1 = 40, n_2 = 40, n = 100;
    - d_01 = (60 - 30)^2 = 900, d_02 = (100 - 30)^2 = 4900, d_12 = (80 - 40)^2 = 1600;
    - observed: (o_01 + o_10) d_01 = 40 x 900 = 36,000;
      expected: 2 (20 x 40 x 900 + 20 x 40 x 4900 + 40 x 40 x 1600) = 2 x 7,200,000 = 14,400,000;
    - alpha = 1 - 99 x 36,000 / 14,400,000 = 1 - 0.2475 = 0.7525.

    Clipped, the 5 entered as a third 2 (o_22 60, n_2 60, n = 120; d_02 6400, d_12 2500): 1 - 119 x 36,000 /
    28,800,000 = 0.85125. The experts alone agree fully: alpha_experts 1.0.
    """
    judge = np.tile([5.0, 0.0], 20)
    experts = np.tile([[2.0, 2.0], [1.0, 1.0]], (20, 1))
    agreement = _overall(judge, experts).agreement
    assert agreement.alpha_experts == pytest.approx(1.0, abs=1e-12)
    assert agreement.alpha_with_judge == pytest.approx(0.7525, abs=1e-12)
    assert agreement.n_kappa_off_domain == 20


def test_the_levels_on_and_off_the_scale():
    """Rounded half up, never clipped: on a 0-2 scale 1.6 -> 2 on it, 2.5 -> 3 and -0.6 -> -1 off it (NaN among
    the ratings, kept among the off-scale levels); a failure (NaN) is neither; no scale known: every level is on."""
    from eval.validity.section import judge_levels, off_scale_levels

    judge = np.array([1.6, 2.5, -0.6, np.nan])
    low, high = np.zeros(4), np.full(4, 2.0)
    np.testing.assert_array_equal(judge_levels(judge, low, high), [2.0, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(off_scale_levels(judge, low, high), [np.nan, 3.0, -1.0, np.nan])
    np.testing.assert_array_equal(judge_levels(judge, None, None), [2.0, 3.0, -1.0, np.nan])


def _regression_section(judge: np.ndarray, experts: np.ndarray, ids=None, scoring: str = "neg_rmse"):
    """The validity section of one split whose judge is a regression head (every score a raw value), on 0-2."""
    import dataclasses

    from tests.support.validity_tables import section_with_alt_test, table_on_0_to_2

    table = table_on_0_to_2(judge, experts, ids)
    table = dataclasses.replace(table, score_source=np.full(len(judge), "regression_head", dtype=object))
    return section_with_alt_test(table, scoring=scoring)


def test_a_regression_heads_value_past_an_end_is_that_end_in_every_figure():
    """60 items, truth 0, 1, 2, 0, ... scored so by A, B and C; a regression head answers 2.6 where they say 2, -0.6
    where they say 0, 1 where they say 1. A head's value past an end is a measurement near it (the ceiling's rule,
    ``ceiling.measured``): 2.6 is 2 and -0.6 is 0, as 2.4 and -0.4 would be, in every figure, where it had read 2 in
    the ceiling's kappa, off the scale in kappa, alpha and the exact agreement, and a miss in the alt-test under
    ``accuracy``:

    - kappa against the mode: all 60 items, the judge's level equal to the mode on each: 1.0, none off the scale;
    - alpha with the judge: every item's values agree: 1.0, as the experts';
    - exact agreement 1.0 on the 60 unanimous items;
    - the alt-test under ``accuracy``: the judge equals every left-out expert on every item: each expert's W_f and
      W_h are 1, d = 0 > -0.2, every expert rejected (omega 1), rho 1.
    """
    truth = np.arange(60) % 3.0
    judge = np.where(truth == 2, 2.6, np.where(truth == 0, -0.6, truth))
    experts = np.column_stack([truth] * 3)
    ids = np.array([["A", "B", "C"]] * 60, dtype=object)
    block = _regression_section(judge, experts, ids, scoring="accuracy")
    agreement = block.overall.agreement
    assert (agreement.kappa_quadratic, agreement.n_kappa, agreement.n_kappa_off_domain) == (1.0, 60, 0)
    assert agreement.n_items_judge_off_scale == 0
    assert agreement.alpha_with_judge == pytest.approx(1.0, abs=1e-12)
    assert agreement.by_expert_agreement["unanimous"].exact == 1.0
    alt = block.overall.alt_test
    assert (alt.winning_rate, alt.advantage_probability) == (1.0, 1.0)
    assert (block.overall.ceiling.judge_kappa, block.overall.ceiling.n_judge_off_scale) == (1.0, 0)


def test_a_verdict_past_an_end_stays_off_the_scale():
    """The same values as a text verdict (a number the judge wrote, ``alt_test_judge``): 2.6 and -0.6 round to 3 and
    -1, no levels of 0-2 (NaN among the ratings); only where ``measured`` (a regression head) are they the ends."""
    from eval.validity.section import judge_levels

    judge = np.array([2.6, -0.6, 1.0])
    low, high = np.zeros(3), np.full(3, 2.0)
    np.testing.assert_array_equal(judge_levels(judge, low, high), [np.nan, np.nan, 1.0])
    np.testing.assert_array_equal(judge_levels(judge, low, high, np.array([True, True, False])), [2.0, 0.0, 1.0])


def test_a_regression_heads_mae_to_the_experts_mean_takes_its_score():
    """40 items the experts score (1, 2, 2): mode 2, mean 5/3. A regression head answers 5/3 on every one: its level
    (rounded half up) is 2, equal to the mode, so exact 1.0; its score is the experts' mean, so the MAE to it is 0,
    where the level read |2 - 5/3| = 0.33 for a judge at the mean. 20 items more of (2, 2) where it answers 2.6: the
    unanimous class's MAE is |2.6 - 2| = 0.6 and its exact 1.0 (2.6 is the top end, the test above)."""
    judge = np.r_[np.full(40, 5.0 / 3.0), np.full(20, 2.6)]
    experts = np.r_[np.tile([1.0, 2.0, 2.0], (40, 1)), np.tile([2.0, 2.0, np.nan], (20, 1))]
    classes = _regression_section(judge, experts).overall.agreement.by_expert_agreement
    assert (classes["majority"].n_judged, classes["majority"].exact) == (40, 1.0)
    assert classes["majority"].mae_to_mean == pytest.approx(0.0, abs=1e-12)
    assert (classes["unanimous"].n_judged, classes["unanimous"].exact) == (20, 1.0)
    assert classes["unanimous"].mae_to_mean == pytest.approx(0.6, abs=1e-12)


def test_agreement_class_rows_say_the_items_their_figures_are_over():
    """The judge's exact share on unanimous items was shown beside the class's n (52) though taken over the 46 it
    scored (33/46 = 0.72, not 33/52); the row says both counts where they differ, and a split class's "—" says why."""
    from eval.validity.render import agreement_class_rows
    from judge.metrics_json.validity import AgreementClass

    rows = agreement_class_rows({
        "unanimous": AgreementClass(n=52, n_judged=46, exact=33 / 46, mae_to_mean=0.4),
        "majority": AgreementClass(n=10, n_judged=10, exact=0.5, mae_to_mean=0.7),
        "split": AgreementClass(n=8, n_judged=7, exact=None, mae_to_mean=0.9),
    })
    assert rows == [
        ["experts unanimous (n 52, 46 judged)", "judge = mode 0.72, MAE to the experts' mean 0.40"],
        ["experts majority (n 10)", "judge = mode 0.50, MAE to the experts' mean 0.70"],
        ["experts split (n 8, 7 judged)",
         "judge = mode — (split experts have no unique mode), MAE to the experts' mean 0.90"],
    ]

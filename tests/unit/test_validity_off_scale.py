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

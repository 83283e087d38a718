"""The overall marginal homogeneity table pools criteria of both orientations: a Critical criterion's levels (best
at the lowest, ``best_low``) enter it flipped on the item's scale (low + high - level), as leniency orients its
errors, so that a judge one level more generous everywhere does not read as using the levels as the experts do."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from eval.validity.section import ValiditySettings, validity_section
from tests.support.validity_tables import item_table, split_section


def _generous_judge_block():
    """80 items on 0-2, three experts agreeing on each: criterion "normal" (items 0-39) at 0 then 1 (20 each),
    criterion "critical" (items 40-79, best at 0) at 1 then 2 (20 each). The judge is one level more generous on
    every item: +1 on "normal" (1, 2), -1 on "critical" (0, 1).

    Oriented (a Critical level l read as 2 - l): "critical"'s experts 1, 2 read 1, 0 and its judge 0, 1 reads 2, 1,
    so the (judge, mode) pairs are (1, 0) x 20 and (2, 1) x 20 from each criterion: (1, 0) x 40 and (2, 1) x 40.
    Margins: judge [0, 40, 40], experts [40, 40, 0]. Stuart–Maxwell (one item per answer):
    V_00 = n_0. + n_.0 - 2 n_00 = 40, V_11 = 40 + 40 = 80, V_22 = 40, V_01 = -(n_01 + n_10) = -40,
    V_12 = -(n_12 + n_21) = -40, V_02 = 0; d = experts - judge = [40, 0, -40]. V x = d solves to x = (1, 0, -1), so
    d' V^+ d = d . x = 80 on rank(V) = 2 degrees of freedom, p = exp(-40).

    Raw, the two criteria's moves cancel: "normal" moves 20 items 0 -> 1 and 20 items 1 -> 2, "critical" 20 items
    1 -> 0 and 20 items 2 -> 1, margins [20, 40, 20] on both sides and a statistic of 0."""
    n = 80
    criteria = np.array(["normal"] * 40 + ["critical"] * 40, dtype=object)
    truth = np.r_[np.zeros(20), np.ones(20), np.ones(20), np.full(20, 2.0)]
    judge = truth + np.where(criteria == "normal", 1.0, -1.0)
    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (n, 1))
    table = item_table(judge, np.column_stack([truth] * 3), ids, low=np.zeros(n), high=np.full(n, 2.0),
                       criteria=criteria)
    return split_section(dataclasses.replace(table, best_low=criteria == "critical"))


def test_opposite_moves_on_critical_and_ordinary_criteria_do_not_cancel_overall():
    block = _generous_judge_block()
    overall = block.overall.marginal_homogeneity
    assert (overall.judge_margin, overall.experts_margin) == ([0.0, 40.0, 40.0], [40.0, 40.0, 0.0])
    assert (overall.statistic, overall.df) == (pytest.approx(80.0), 2)
    assert overall.p_value == pytest.approx(np.exp(-40.0), rel=1e-9)
    assert overall.n_items_oriented == 40
    assert block.overall.leniency.direction == "lenient"


def test_a_criterion_cell_keeps_its_own_levels():
    """One orientation per criterion: its table is read on the rubric's own levels, unflipped. "critical": (judge,
    mode) (0, 1) x 20 and (1, 2) x 20, margins judge [20, 20, 0], experts [0, 20, 20]; V as above with 20 for 40
    (V_00 = 20, V_11 = 40, V_22 = 20, V_01 = V_12 = -20), d = [-20, 0, 20], x = (-1, 0, 1): d . x = 40 on 2."""
    critical = _generous_judge_block().by_criterion["critical"].marginal_homogeneity
    assert (critical.judge_margin, critical.experts_margin) == ([20.0, 20.0, 0.0], [0.0, 20.0, 20.0])
    assert critical.statistic == pytest.approx(40.0) and critical.df == 2
    assert critical.n_items_oriented is None


def test_a_critical_item_flipped_outside_its_splits_levels_stays_in_the_overall_table():
    """Criterion "k" (Critical, no readable scale: its rating ends are its experts' range over the whole table,
    0-3), three experts agreeing per item and the judge agreeing with them. Split A: 20 items at 0; split B: 40 items
    at 1, 2, 3 (14, 13, 13), so B's value domain is [1, 2, 3]. Flipped (3 - level), B's items read 2, 1, 0: the 13 at
    level 3 read 0, outside B's domain, and must still enter its overall table, as they enter the criterion's.
    Oriented margins over [0, 1, 2, 3]: 13, 13, 14, 0 on both sides (the judge agrees everywhere)."""
    truth = np.r_[np.zeros(20), np.tile([1.0, 2.0, 3.0], 14)[:40]]
    n = len(truth)
    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (n, 1))
    nan = np.full(n, np.nan)
    table = item_table(truth.copy(), np.column_stack([truth] * 3), ids, low=nan, high=nan,
                       criteria=np.array(["k"] * n, dtype=object))
    table = dataclasses.replace(table, best_low=np.ones(n, dtype=bool))
    section = validity_section(table, "mode", {"A": np.arange(20), "B": np.arange(20, n)},
                               ValiditySettings(n_boot=0, alpha_boot=0))
    split = section.splits["B"]
    overall = split.overall.marginal_homogeneity
    assert overall.n == split.by_criterion["k"].marginal_homogeneity.n == 40
    assert overall.n_items_oriented == 40
    assert overall.margin_levels == [0.0, 1.0, 2.0, 3.0]
    assert overall.judge_margin == overall.experts_margin == [13.0, 13.0, 14.0, 0.0]
    assert split.overall.value_domain == [1.0, 2.0, 3.0]  # kappa's domain stays the split's own

"""The confusion matrices of ``judge-eval score`` as the scoring path builds them (``item_table.evaluate``): rows the
judge's score rounded half up to a level, columns the experts' mode (never their mean), one matrix per task
macrogroup (arXiv 2505.24616v3, Appendix D.2.3), items without a unique mode or without a verdict left out."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from eval.scoring import item_table
from tests.unit.test_eval_metrics import _table

NAN = float("nan")
# judge, experts, task type, macrogroup: t1 and t2 share macrogroup G1. Each expert mode is not the rounded mean:
# [0, 0, 2] mode 0, mean 2/3 -> 1; [2, 2, 0] mode 2, mean 4/3 -> 1; [0, 0, 1] mode 0, mean 1/3 -> 0 but judged 1.
ITEMS = [
    (0.0, [0, 0, 2], "t1", "G1"),  # judge 0, mode 0
    (1.0, [0, 1, 2], "t1", "G1"),  # no unique mode: left out
    (1.0, [1, 1, 2], "t2", "G1"),  # judge 1, mode 1
    (2.0, [2, 2, 0], "t2", "G1"),  # judge 2, mode 2
    (1.0, [0, 0, 1], "t3", "G2"),  # judge 1, mode 0
    (0.5, [1, 1, 0], "t3", "G2"),  # judge 0.5 rounds half up to 1, mode 1
    (NAN, [2, 2, 2], "t3", "G2"),  # parse failure: left out
    (2.0, [2, 2, 2], "t3", "G2"),  # judge 2, mode 2
]


def _items() -> item_table.ItemTable:
    judge, experts, task_types, groups = zip(*ITEMS)
    status = ["ok" if np.isfinite(j) else "parse_failed" for j in judge]
    table = _table(list(judge), status, list(experts))
    return dataclasses.replace(table, task_type=np.array(task_types, dtype=object),
                               task_group=np.array(groups, dtype=object))


@pytest.mark.parametrize("target", ["mode", "mean"])
def test_confusion_matrices_are_judge_by_expert_mode_per_macrogroup(target):
    """By hand, rows the judge (0, 1, 2), columns the experts' mode: G1 holds (0, 0), (1, 1), (2, 2); G2 holds
    (1, 0), (1, 1), (2, 2); the whole test their sum. Keyed by the macrogroups, not the three task types, and the
    same whatever MAE's reference (a mean target moves MAE, never the confusion's columns)."""
    result = item_table.evaluate(_items(), target=target, n_boot=0)
    assert result.target == target
    g1 = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    g2 = [[0, 0, 0], [1, 1, 0], [0, 0, 1]]
    for split in ("standard", "all"):
        confusion = result.splits[split].confusion
        assert confusion.all.levels == [0.0, 1.0, 2.0]
        assert confusion.all.matrix == [[1, 0, 0], [1, 2, 0], [0, 0, 2]]
        assert {label: c.matrix for label, c in confusion.by_task_group.items()} == {"G1": g1, "G2": g2}
        assert all(c.levels == [0.0, 1.0, 2.0] for c in confusion.by_task_group.values())
    assert result.splits["zero_shot"].confusion.by_task_group == {}


def _scaled(judge, experts, low, high) -> item_table.ItemTable:
    """Items judged ``judge`` (all parsed) by ``experts``, each on the scale ``low``..``high``."""
    table = _table(list(judge), ["ok"] * len(judge), list(experts))
    ends = [np.full(len(judge), float(end)) for end in (low, high)]
    return dataclasses.replace(table, scale_low=ends[0], scale_high=ends[1])


def test_the_axes_are_the_whole_scale_even_where_no_one_gave_a_level():
    """A 0..2 criterion on which neither the judge nor any expert gave 1: the matrix still has the row and the column
    of 1, empty (App. D.2.3 reads off these matrices which judges avoid the mid-scale rating of 1). The judge's
    0 vs mode 0, 2 vs mode 2 twice."""
    confusion = item_table.evaluate(_scaled([0.0, 2.0, 2.0], [[0, 0, 2], [2, 2, 0], [2, 2]], 0, 2),
                                    n_boot=0).splits["all"].confusion
    for matrix in (confusion.all, *confusion.by_task_group.values()):
        assert matrix.levels == [0.0, 1.0, 2.0]
        assert matrix.matrix == [[1, 0, 0], [0, 0, 0], [0, 0, 2]]


def test_the_axes_join_every_scale_of_the_table_and_every_value_seen():
    """Items on 0..1 and on 1..4 scales, a judge's 7 off its scale: the axes are 0..4 and the 7 (a value seen),
    every level once; a table without scale ends (a hand-built one) has its experts' whole-number span, 1..4, as the
    validity section's value domain has."""
    table = _scaled([1.0, 7.0], [[1, 1], [4, 4]], 0, 1)
    table.scale_low[1], table.scale_high[1] = 1.0, 4.0
    assert item_table.evaluate(table, n_boot=0).levels == [0.0, 1.0, 2.0, 3.0, 4.0, 7.0]
    plain = dataclasses.replace(table, scale_low=None, scale_high=None)
    assert item_table.evaluate(plain, n_boot=0).levels == [1.0, 2.0, 3.0, 4.0, 7.0]


def test_an_unreadable_scale_gets_its_experts_whole_number_span_as_the_validity_domain_does():
    """The 0..2 criterion above with a rubric no scale is read from (NaN ends): its experts' 0 and 2 span 0..2, so
    the mid level 1 is an empty row and column still, and the axes are the validity section's value domain."""
    table = _scaled([0.0, 2.0, 2.0], [[0, 0, 2], [2, 2, 0], [2, 2]], np.nan, np.nan)
    result = item_table.evaluate(table, n_boot=0)
    assert result.levels == [0.0, 1.0, 2.0]
    assert result.splits["all"].confusion.all.matrix == [[1, 0, 0], [0, 0, 0], [0, 0, 2]]
    assert item_table.value_levels(table, np.arange(len(table))).tolist() == [0.0, 1.0, 2.0]


def test_an_expert_mode_off_the_levels_stays_in_its_own_column():
    """Experts [1.5, 1.5, 2] (a half-point the loader takes inside a 0..2 range): MAE reads the mode 1.5, and so does
    the matrix's column of 1.5, not the 2 it would round to; the judge's 2 is row 2."""
    result = item_table.evaluate(_scaled([2.0], [[1.5, 1.5, 2]], 0, 2), n_boot=0)
    confusion = result.splits["all"].confusion.all
    assert result.splits["all"].overall.mae == pytest.approx(0.5)
    assert confusion.levels == [0.0, 1.0, 1.5, 2.0]
    assert confusion.matrix == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]]

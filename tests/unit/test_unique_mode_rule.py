"""The unique-mode rule has one home, ``judge.scales.unique_mode_mask``: one panel's check (``has_unique_mode``) and
the scorer's whole-table one (``eval.scoring.metrics.expert_mode``) both answer from it."""

from __future__ import annotations

import numpy as np
import pytest

from eval.scoring import metrics
from judge.scales import has_unique_mode, unique_mode_mask


def test_the_rule_on_count_rows_by_hand():
    counts = [[2, 1, 0],  # level 0 twice, level 1 once: unique
              [1, 1, 0],  # a tie for the top
              [0, 0, 0],  # no scores
              [0, 0, 3],  # one level only
              [2, 2, 1]]  # a tie above a lower count
    assert unique_mode_mask(counts).tolist() == [True, False, False, True, False]
    assert unique_mode_mask(np.zeros((2, 0))).tolist() == [False, False]  # no levels at all
    with pytest.raises(ValueError, match=r"counts: expected items x levels, got shape \(3,\)"):
        unique_mode_mask([1, 2, 3])


def test_one_panel_and_the_whole_table_follow_it():
    panels = [[0, 0, 1], [0, 1], [], [2, 2, 2], [1, 1, 0, 0, 2]]
    assert [has_unique_mode(p) for p in panels] == [True, False, False, True, False]
    mode, unique = metrics.expert_mode(metrics.pad_scores(panels))
    assert unique.tolist() == [True, False, False, True, False]
    np.testing.assert_array_equal(mode, [0.0, np.nan, np.nan, 2.0, np.nan])

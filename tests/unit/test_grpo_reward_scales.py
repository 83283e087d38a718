"""train.grpo_rewards' rewards check each row's scale (``scale_levels``, ``scale_best``) before any verdict is read,
a ``ValueError`` naming the row and the column (fast tier). A GRPO dataset made by hand met a ZeroDivisionError
in ``agreement`` for a one-level scale, a ScaleError naming no row for unsorted levels or a best that is no end of
them, and a TypeError for a missing column."""

from __future__ import annotations

import pytest

from train.grpo_rewards import agreement_reward, format_reward

VERDICT = "<think>Ответ верный и полный, всё по делу.</think>\n\n1"


def _both(scale_levels, scale_best, **columns):
    """Each reward's error for the one row (its ValueError's text), agreement_reward's against a reference of 1."""
    said = []
    for reward, extra in ((format_reward, {}), (agreement_reward, {"reference_scores": [[1]]})):
        with pytest.raises(ValueError) as caught:
            reward(completions=[VERDICT], verdict_format=["integer"], scale_levels=scale_levels,
                   scale_best=scale_best, **extra, **columns)
        said.append(str(caught.value))
    return said


def test_a_one_level_scale_is_refused_naming_the_rows_id():
    """``agreement`` divided by the scale's span, 0 for one level."""
    assert _both([[1]], [1], id=["x"]) == [
        f"{name}: scale_levels of the row with id 'x' must hold at least two levels, got [1]"
        for name in ("format_reward", "agreement_reward")]


def test_unsorted_levels_and_a_best_that_is_no_end_are_refused_naming_the_row_and_column():
    assert _both([[2, 1, 0]], [2]) == [
        f"{name}: scale_levels of row 0 of the batch: scale levels must be distinct and ascending, got (2, 1, 0)"
        for name in ("format_reward", "agreement_reward")]
    assert _both([[0, 1, 2]], [1], id=["y"]) == [
        f"{name}: scale_best of the row with id 'y' must be an end of its scale_levels [0, 1, 2], got 1"
        for name in ("format_reward", "agreement_reward")]


@pytest.mark.parametrize(("levels", "best", "column", "got"), [
    ([[0, "1"]], [1], "scale_levels", "[0, '1']"), ([[0, 1.5]], [1], "scale_levels", "[0, 1.5]"),
    ([None], [1], "scale_levels", "None"), ([[0, 1]], [None], "scale_best", "None"),
    ([[0, 1]], [True], "scale_best", "True"), ([[True, 2]], [2], "scale_levels", "[True, 2]"),
])
def test_levels_or_a_best_that_are_no_integers_are_refused_naming_the_column(levels, best, column, got):
    for said in _both(levels, best):
        assert said.endswith(f": {column} of row 0 of the batch must be "
                             f"{'a list of integer levels' if column == 'scale_levels' else 'an integer level'}, "
                             f"got {got}")


@pytest.mark.parametrize(("levels", "best", "column"), [(None, [1], "scale_levels"), ([[0, 1]], None, "scale_best"),
                                                        ([[0, 1], [0, 1]], [1], "scale_levels")])
def test_a_missing_column_or_one_of_another_length_is_refused(levels, best, column):
    # scale_best holds one integer per row, scale_levels one list
    each = "one list" if column == "scale_levels" else "one integer"
    for said in _both(levels, best):
        assert f"{column} must be a column with {each} per completion (1); got " in said


def test_a_good_scale_pays_as_before():
    """Integral floats (a column Arrow read as doubles) and numpy integers are levels too."""
    import numpy as np

    assert format_reward([VERDICT] * 3, ["integer"] * 3, [[0, 1], [0.0, 1.0], np.array([0, 1, 2])],
                         [1, 1.0, np.int64(0)]) == [1.0, 1.0, 1.0]
    assert agreement_reward([VERDICT] * 2, ["integer"] * 2, [[0, 1, 2], [0, 1]], [0, 1], [[1], [0]]) == [1.0, 0.0]

"""metrics.json's numbers, shares and confusion matrices as read back (``judge.metrics_json.metrics``): a boolean for
a number, a rate outside [0, 1], a null level or a matrix that is not one row and one column per level is refused
naming the field path."""

from __future__ import annotations


import numpy as np
import pytest

from judge.metrics_json.json_record import JsonRecordError
from judge.metrics_json.metrics import Confusion, Metrics
from tests.support.json_edits import edited

_CELL = {"n": 4, "n_failed": 1, "failure_rate": 0.25, "n_no_unique_mode": 0, "mae": 0.5, "mae_ci": [0.0, 1.0],
         "vc_judge": 0.75}
_CONFUSION = {"levels": [0, 1, 2], "matrix": [[1, 0, 0], [0, 2, 0], [0, 0, 0]]}
_RAW = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95},
        "splits": {"all": {"overall": _CELL, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {},
                           "confusion": {"all": _CONFUSION, "by_task_group": {"g": dict(_CONFUSION)}}}}}


def _edited(path: tuple[str, ...], value) -> dict:
    return edited(_RAW, path, value)


def test_numbers_shares_and_matrices_as_score_writes_them_read_back():
    read = Metrics.from_json(_RAW).splits["all"]
    assert (read.overall.failure_rate, read.overall.vc_judge, read.overall.mae) == (0.25, 0.75, 0.5)
    assert read.confusion.all.levels == [0.0, 1.0, 2.0] and read.confusion.all.matrix[1] == [0, 2, 0]
    # an empty matrix beside no levels (a test with no scored item) and a null rate (n = 0) read too
    empty = Metrics.from_json(_edited(("splits", "all", "confusion", "all"), {"levels": [], "matrix": []}))
    assert empty.splits["all"].confusion.all.matrix == []
    assert Metrics.from_json(_edited(("splits", "all", "overall", "failure_rate"), None)).splits[
        "all"].overall.failure_rate != 0.0  # NaN, never 0


_OVERALL = ("splits", "all", "overall")
_ALL = ("splits", "all", "confusion", "all")


@pytest.mark.parametrize("path, value, field, why", [
    (_OVERALL + ("mae",), True, "mae", "expected a number, got true"),
    (_OVERALL + ("mae",), "0.5", "mae", "expected a number, got a string '0.5'"),
    (_OVERALL + ("mae_ci",), [False, 1.0], "mae_ci", "expected a number, got false"),
    (_OVERALL + ("failure_rate",), 7, "failure_rate", "expected a share between 0 and 1, got 7"),
    (_OVERALL + ("failure_rate",), -0.5, "failure_rate", "expected a share between 0 and 1, got -0.5"),
    (_OVERALL + ("vc_judge",), 1.5, "vc_judge", "expected a share between 0 and 1, got 1.5"),
    (_ALL + ("levels",), [None], "levels", "expected a finite score level, got null"),
    (_ALL + ("levels",), [0, True, 2], "levels", "expected a number, got true"),
    (_ALL + ("levels",), 3, "levels", "expected a list, got an integer 3"),
    # an interval is [low, high]: anything else was Python's unpacking error ("too many values to unpack")
    (_OVERALL + ("mae_ci",), [0.0, 0.5, 1.0], "mae_ci", "expected a list of 2 numbers (low, high), got a list of 3"),
    (_OVERALL + ("mae_ci",), [0.5], "mae_ci", "expected a list of 2 numbers (low, high), got a list of 1"),
    (_OVERALL + ("mae_ci",), 0.5, "mae_ci", "expected a list of 2 numbers (low, high), got a number 0.5"),
    (_OVERALL + ("mae_ci",), "01", "mae_ci", "expected a list of 2 numbers (low, high), got a string '01'"),
    (_OVERALL + ("mae_ci",), {"low": 0.0, "high": 1.0}, "mae_ci",
     "expected a list of 2 numbers (low, high), got an object"),
])
def test_a_number_that_is_not_one_is_refused_naming_the_field(path, value, field, why):
    record = "Cell" if path[2] == "overall" else "Confusion"
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(_edited(path, value))
    assert str(info.value) == f"metrics.json: {record}.{field} is not readable ({why})"
    assert info.value.field == ".".join(path)


@pytest.mark.parametrize("path, value, at, why", [
    (_ALL + ("matrix",), [[5]], ("matrix",), "Confusion.matrix: 1 rows of [1] counts, not 3 rows of 3 counts"),
    (_ALL + ("matrix",), [[1, 0, 0], [0, 2], [0, 0, 0]], ("matrix",),
     "Confusion.matrix: 3 rows of [2, 3] counts, not 3 rows of 3 counts"),
    (_ALL + ("matrix",), [[1, 0, 0], [0, -2, 0], [0, 0, 0]], ("matrix", "1", "1"),
     "Confusion.matrix is not readable (expected a whole number of 0 or more, got -2)"),
    (_ALL + ("matrix",), [[1, 0, 0], [0, 2, 0], [0, 0.5, 0]], ("matrix", "2", "1"),
     "Confusion.matrix is not readable (expected a whole number, got a number 0.5)"),
    (_ALL + ("matrix",), [[1, 0, 0], [0, 2, 0], [True, 0, 0]], ("matrix", "2", "0"),
     "Confusion.matrix is not readable (expected a whole number, got true)"),
    (("splits", "all", "confusion", "by_task_group", "g", "matrix"), [[1]], ("matrix",),
     "Confusion.matrix: 1 rows of [1] counts, not 3 rows of 3 counts"),
])
def test_a_matrix_that_is_not_one_count_per_pair_of_levels_is_refused_naming_the_cell(path, value, at, why):
    """A 1x1 matrix beside three levels, a short row, a negative or fractional count: each names its place."""
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(_edited(path, value))
    assert str(info.value).startswith(f"metrics.json: {why}")
    assert info.value.field == ".".join(path[:-1] + at)


@pytest.mark.parametrize("levels, matrix, why", [
    ([0.0, 1.0, 2.0], [[5]], "Confusion.matrix: 1 rows of [1] counts, not 3 rows of 3 counts (one per level)"),
    ([0.0, 1.0], [[1, 0], [0]], "Confusion.matrix: 2 rows of [1, 2] counts, not 2 rows of 2 counts (one per level)"),
    ([0.0, 1.0], [[1, 0], [0, -1]], "Confusion.matrix: row 1, column 1: -1 is not a whole number of 0 or more"),
    ([0.0, 1.0], [[1, 0.5], [0, 1]], "Confusion.matrix: row 0, column 1: 0.5 is not a whole number of 0 or more"),
    ([0.0, 1.0], [[True, 0], [0, 1]], "Confusion.matrix: row 0, column 0: True is not a whole number of 0 or more"),
])
def test_a_matrix_made_in_code_is_checked_as_one_read(levels, matrix, why):
    """evaluate's matrices go through the same checks as a file's, so score cannot write one its read-back
    refuses."""
    with pytest.raises(ValueError) as info:
        Confusion(levels=levels, matrix=matrix)
    assert str(info.value) == why


def test_numpy_counts_are_whole_numbers_too():
    """A row of numpy integers (a matrix not put through ``tolist()``) is counts, as score's are."""
    assert Confusion(levels=[0.0, 1.0], matrix=[list(np.array([1, 0])), [0, 2]]).matrix[0] == [1, 0]

"""items.parquet's columns from the item table's numpy columns (``eval.scoring.item_table.arrow_table``): the texts,
the experts' ids and the extra columns go to Arrow straight from numpy, each with the type and values its Python
list gave (NaN kept, None null, a narrow numpy type widened, an empty column null-typed, a 2-D one a list column), not
through a Python list of every value first."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyarrow as pa

from eval.scoring import item_table
from tests.unit.test_report_counts import NAN, _table


class _NoList(np.ndarray):
    """A numpy column that refuses to become a Python list."""

    def tolist(self):
        raise AssertionError("a column was turned into a Python list")


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x)
                                               and math.isnan(y)) for x, y in zip(a, b))


def test_columns_go_to_arrow_from_numpy_with_the_types_their_lists_gave(monkeypatch):
    table = dataclasses.replace(
        _table(judge=[2, NAN, 1], status=["ok", "missing", "ok"], experts=[[2, 1], [1], [0, 1, 2]]),
        text_key=np.array(["k0", None, "k2"], dtype=object).view(_NoList),
        expert_ids=np.array([["e1", "e2", None], ["e1", None, None], ["e3", None, "e2"]], dtype=object).view(_NoList))
    # values no column of the table has, so an array handed to Arrow with them is the extra column
    extra = {"reference": np.array([2.5, NAN, 0.25]), "count": np.array([71, 72, 73], dtype=np.int64),
             "why_unscored": np.array([None, "no_prediction", None], dtype=object),
             "narrow": np.array([0.5, 1.5, NAN], dtype=np.float32), "flag": np.array([True, False, True])}
    # An extra column cannot be made to refuse tolist (the np.asarray it meets makes it a plain array): what Arrow
    # is handed is watched instead; a list handed to pa.table is converted inside pyarrow, past pa.array
    to_arrow, handed = pa.array, []
    monkeypatch.setattr(pa, "array", lambda values, *a, **k: handed.append(values) or to_arrow(values, *a, **k))
    items = item_table.arrow_table(table, extra=extra)
    monkeypatch.undo()
    for name in ("reference", "count", "why_unscored"):
        assert any(isinstance(v, np.ndarray) and v.dtype == extra[name].dtype
                   and _same(np.ndarray.tolist(v), extra[name].tolist()) for v in handed), name
    assert items.column("text_key").to_pylist() == ["k0", None, "k2"]
    assert items.column("expert_ids").to_pylist() == [["e1", "e2"], ["e1"], ["e3", None, "e2"]]
    for name, values in extra.items():
        as_list = pa.array(values.tolist())  # what the lists gave
        assert items.column(name).type == as_list.type, name
        assert _same(items.column(name).to_pylist(), as_list.to_pylist()), name
    assert [items.column(name).type for name in ("reference", "count", "why_unscored", "narrow", "flag")] == [
        pa.float64(), pa.int64(), pa.string(), pa.float64(), pa.bool_()]


def test_empty_and_two_dimensional_extra_columns_keep_the_types_their_lists_gave():
    """An empty item table's extra columns are null-typed, as their empty lists gave, and a 2-D extra column is a
    list column, as its nested lists gave (numpy would give a number type, or refuse it)."""
    empty = _table(judge=[], status=[], experts=[])
    extra = {"reference": np.array([], dtype=np.float64), "count": np.array([], dtype=np.int64),
             "why_unscored": np.array([], dtype=object), "narrow": np.array([], dtype=np.float32)}
    items = item_table.arrow_table(empty, extra=extra)
    assert items.num_rows == 0
    assert [items.column(name).type for name in extra] == [pa.null()] * 4
    pairs = {"pairs": np.array([[1.0, NAN], [2.0, 3.0], [0.5, 1.0]]), "counts": np.array([[1, 2]] * 3, dtype=np.int64)}
    table = _table(judge=[2, NAN, 1], status=["ok", "missing", "ok"], experts=[[2, 1], [1], [0, 1, 2]])
    items = item_table.arrow_table(table, extra=pairs)
    for name, values in pairs.items():
        assert items.column(name).type == pa.array(values.tolist()).type, name
        assert repr(items.column(name).to_pylist()) == repr(values.tolist()), name
    assert [items.column(name).type for name in pairs] == [pa.list_(pa.float64()), pa.list_(pa.int64())]

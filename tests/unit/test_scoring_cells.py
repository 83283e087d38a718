"""``eval.scoring.bootstrap._cells`` numbers each column as ``np.unique(return_inverse=True)`` does (it codes them
with ``pandas.factorize(sort=True)``)."""

from __future__ import annotations

import numpy as np
import pytest

from eval.scoring import bootstrap


def _cells_by_unique(*columns: np.ndarray):
    """The definition: each column's codes from ``np.unique``, combined into one key, the key's distinct rows."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        values, codes = np.unique(column, return_inverse=True)
        key = key * len(values) + codes
    _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    cells = np.column_stack([np.asarray(c, dtype=np.float64)[first] for c in columns])
    return cells, counts, inverse.reshape(-1)


_RNG = np.random.default_rng(3)
CASES = {
    # discrete verdicts against an expert mode, the common cell
    "levels": (_RNG.integers(0, 3, 500).astype(float), _RNG.integers(0, 3, 500).astype(float)),
    # 0.0 and -0.0 are one value to both (which sign a cell shows is its first item's)
    "signed zeros": (np.array([0.0, -0.0, 1.0, -0.0, 0.0]), np.array([-0.0, 0.0, 0.0, 1.0, -0.0])),
    # real-valued scores on the 0.01 grid, extremes and subnormals
    "reals": (np.round(_RNG.normal(size=400), 2), np.array([5e-324, -1e-300, 1e300, -np.inf, np.inf] * 80)),
    # integer columns and three of them at once
    "ints, three columns": (_RNG.integers(-5, 5, 300), _RNG.integers(0, 2, 300), _RNG.integers(0, 7, 300)),
    # NaN (no caller passes one): numbered by np.unique itself, one value placed last
    "nan": (np.array([1.0, np.nan, 2.0, np.nan]), np.array([0.0, 0.0, np.nan, 1.0])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_cells_equal_their_np_unique_definition(name):
    """Cells, counts and each item's cell are what the np.unique numbering gives, value for value and dtype."""
    columns = CASES[name]
    got = bootstrap._cells(*columns, item_cells=True)
    want = _cells_by_unique(*columns)
    assert len(got) == len(want) == 3  # cells, counts and each item's cell: zip alone would pass a missing one
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        # the sign of a zero cell is its first item's, on both sides
        assert np.array_equal(np.signbit(g), np.signbit(w)) if g.dtype.kind == "f" else True


@pytest.mark.parametrize("name", list(CASES))
def test_counted_keys_equal_sorted_keys(name, monkeypatch):
    """The keys counted by bincount (a small key) and sorted by np.unique (a large one) give the same cells, counts
    and numbering, dtypes and zero signs included: which way a cell's keys are found moves no figure."""
    columns = CASES[name]
    counted = bootstrap._cells(*columns, item_cells=True)
    monkeypatch.setattr(bootstrap, "_COUNTED_KEYS_PER_ITEM", 0)  # every key sorted
    sorted_ = bootstrap._cells(*columns, item_cells=True)
    for c, s in zip(counted, sorted_, strict=True):
        assert c.dtype == s.dtype
        np.testing.assert_array_equal(c, s)
        assert np.array_equal(np.signbit(c), np.signbit(s)) if c.dtype.kind == "f" else True
    assert [len(part) for part in bootstrap._cells(*columns)] == [len(part) for part in sorted_[:2]]


def test_a_full_test_cell_is_counted():
    """A cell of verdicts against levels, the common one, takes the counting path (its key is small)."""
    judge, mode = CASES["levels"]
    assert len(np.unique(judge)) * len(np.unique(mode)) <= bootstrap._COUNTED_KEYS_PER_ITEM * len(judge)

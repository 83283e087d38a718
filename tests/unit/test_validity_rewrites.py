"""Functions of the validity section rewritten for fewer CPU-seconds, each pinned to the code it replaced, kept here
as the reference: the same values bit for bit on small tables (real-valued judge scores, NaN padding, failures,
missing items), so that metrics.json stays the same bytes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from eval.validity import alt_test
from eval.validity.alt_test import AltTestSettings, indicators


def _reference_indicators(judge, experts, named, settings, missing=None):
    """``indicators`` as it was: the alignments over an item x expert x expert array."""
    valid = ~np.isnan(experts) & named
    n_experts = valid.sum(axis=1)
    asked = np.ones(len(judge), dtype=bool) if missing is None else ~np.asarray(missing, dtype=bool)
    enough = (n_experts >= settings.min_experts_per_item) & asked
    failed = ~np.isfinite(judge)
    rated = (~np.isnan(experts)).any(axis=1)
    counts = {"n_items_few_experts": int((rated & ~enough & asked).sum()),
              "n_items_judge_failed": int((enough & failed).sum())}
    kept = enough & ~failed if settings.failures == "drop" else enough
    rows = np.flatnonzero(kept)
    x, ok = experts[rows], valid[rows]
    k = x.shape[1]
    others = ok[:, None, :] & ~np.eye(k, dtype=bool)[None]
    n_others = others.sum(axis=2)
    j = judge[rows][:, None, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        if settings.scoring == "neg_rmse":
            def align(pred):
                return -np.sqrt(np.where(others, (pred - x[:, None, :]) ** 2, 0.0).sum(axis=2) / n_others)
        else:
            def align(pred):
                return np.where(others, pred == x[:, None, :], False).sum(axis=2) / n_others
        expert_align, judge_align = align(x[:, :, None]), align(j)
    item, slot = np.nonzero(ok)
    expert_align, judge_align = expert_align[item, slot], judge_align[item, slot]
    lost = failed[rows][item]
    w_judge = np.where(lost, 0.0, (judge_align >= expert_align).astype(float))
    w_expert = np.where(lost, 1.0, (expert_align >= judge_align).astype(float))
    return rows[item], slot, w_judge, w_expert, counts


def _table(rng: np.random.Generator, n: int = 300, k: int = 5):
    experts = rng.integers(0, 5, size=(n, k)).astype(float)
    experts[rng.random((n, k)) < 0.3] = np.nan
    experts[:3] = np.nan  # items nobody scored
    judge = rng.random(n) * 4  # a regression head's real values: the alignments are not whole numbers
    judge[rng.random(n) < 0.1] = np.nan
    named = rng.random((n, k)) < 0.9
    missing = rng.random(n) < 0.05
    return judge, experts, named, missing


@pytest.mark.parametrize("scoring", ["neg_rmse", "accuracy"])
@pytest.mark.parametrize("failures", ["loss", "drop"])
def test_indicators_equal_the_item_by_expert_by_expert_reference(scoring, failures):
    rng = np.random.default_rng(11)
    judge, experts, named, missing = _table(rng)
    judge_values = np.round(judge) if scoring == "accuracy" else judge
    settings = AltTestSettings(scoring=scoring, failures=failures)
    for miss in (None, missing):
        got = indicators(judge_values, experts, named, settings, miss)
        want = _reference_indicators(judge_values, experts, named, settings, miss)
        for a, b in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(a, b)  # exact: the same sums in the same order
        assert got[4] == want[4]


def _reference_per_expert(ids, item, w_judge, w_expert, groups, settings, present=None):
    """``alt_test._per_expert`` as it was: one slice per tested run, a numpy scalar per row and field."""
    if groups is None:
        groups = (np.zeros(len(item), dtype=np.int64), np.array([None], dtype=object))
    group_codes, group_names = groups if isinstance(groups, tuple) else pd.factorize(groups)
    expert_codes, expert_names = ids if isinstance(ids, tuple) else pd.factorize(ids)
    width = max(len(expert_names), 1)
    key = group_codes.astype(np.int64) * width + expert_codes
    order = alt_test.stable_order(key)
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else np.zeros(0, dtype=np.intp)
    keys = ordered[starts]
    bounds = np.r_[starts, len(order)]
    lengths = np.diff(bounds)
    if present is not None and len(present[0]):
        scored = np.flatnonzero(np.bincount(present[0].astype(np.int64) * width + present[1]))
        unpaired = np.setdiff1d(scored, keys, assume_unique=True)
    else:
        unpaired = np.zeros(0, dtype=np.int64)
    tested = lengths >= settings.min_items_per_expert
    runs = np.flatnonzero(tested)
    take = np.concatenate([order[bounds[u]:bounds[u + 1]] for u in runs]) if len(runs) else np.zeros(0, dtype=int)
    run_bounds = np.r_[0, np.cumsum(lengths[runs])]
    p, constant = alt_test._p_values(w_judge[take] - w_expert[take], run_bounds, settings.epsilon)
    advantage = np.add.reduceat(w_judge[take], run_bounds[:-1]) / lengths[runs] if len(runs) else np.zeros(0)
    found = {int(u): k for k, u in enumerate(runs)}
    out: list[dict[str, Any]] = []
    for u, code in enumerate(keys.tolist()):
        row: dict[str, Any] = {"group": group_names[code // width], "expert": str(expert_names[code % width]),
                               "n_items": int(lengths[u]), "tested": bool(tested[u])}
        if tested[u]:
            k = found[u]
            row.update(advantage_probability=float(advantage[k]), p_value=float(p[k]),
                       constant_difference=bool(constant[k]))
        out.append(row)
    for code in unpaired.tolist():
        out.append({"group": group_names[code // width], "expert": str(expert_names[code % width]), "n_items": 0,
                    "tested": False})
    return out


def _typed(rows):
    """Each value with its Python type: equal rows must also be of the same types (JSON writes 1 and 1.0 apart)."""
    return [{key: (type(value), value) for key, value in row.items()} for row in rows]


@pytest.mark.parametrize("min_items", [1, 5, 30, 10_000])  # every run tested ... none
def test_per_expert_rows_equal_the_run_by_run_reference(min_items):
    rng = np.random.default_rng(5)
    n = 2_000
    item = np.sort(rng.integers(0, 600, n))
    experts = rng.integers(0, 9, n)
    w_judge = (rng.random(n) < 0.6).astype(float)
    w_expert = (rng.random(n) < 0.5).astype(float)
    names = np.array([f"expert-{i}" for i in range(10)], dtype=object)  # one (9) without pairs
    domain_codes = rng.integers(0, 4, 600)
    domain_names = np.array(["a", "b", None, "d"], dtype=object)
    settings = AltTestSettings(min_items_per_expert=min_items)
    present = (np.r_[domain_codes[item], 1], np.r_[experts, 9])  # expert-9 scored in domain b, no pairs
    for groups, scored in [((domain_codes[item], domain_names), present),
                           (None, (np.zeros(n + 1, dtype=np.int64), present[1])),
                           (np.array(["x", "y"], dtype=object)[domain_codes[item] % 2], None)]:
        got = alt_test._per_expert((experts, names), item, w_judge, w_expert, groups, settings, scored)
        want = _reference_per_expert((experts, names), item, w_judge, w_expert, groups, settings, scored)
        assert _typed(got) == _typed(want)


def _reference_leave_one_out_mode(experts):
    """``ceiling.leave_one_out_reference(experts, "mode")`` as it was: an (n, k, levels) array of the others' counts."""
    from eval.scoring.metrics import level_counts

    valid = ~np.isnan(experts)
    x = np.where(valid, experts, 0.0)
    counts, levels = level_counts(experts)
    n_others = valid.sum(axis=1, keepdims=True) - 1
    position = np.minimum(np.searchsorted(levels, x), len(levels) - 1)
    rest = counts[:, None, :] - ((position[:, :, None] == np.arange(len(levels))[None, None, :]) & valid[:, :, None])
    top = rest.max(axis=2)
    unique = (top > 0) & ((rest == top[:, :, None]).sum(axis=2) == 1)
    return np.where(valid & (n_others > 0) & unique, levels[rest.argmax(axis=2)], np.nan)


@pytest.mark.parametrize("seed", range(4))
def test_leave_one_out_mode_equals_the_counts_array_reference(seed):
    from eval.scoring.metrics import level_counts
    from eval.validity.ceiling import leave_one_out_reference

    rng = np.random.default_rng(seed)
    experts = rng.integers(0, 3 + seed, size=(500, 5)).astype(float) / (1 + seed % 2)  # halves too
    experts[rng.random((500, 5)) < 0.4] = np.nan  # items of 0, 1 ... 5 experts, ties among the rest
    want = _reference_leave_one_out_mode(experts)
    for counts in (None, level_counts(experts)):
        np.testing.assert_array_equal(leave_one_out_reference(experts, "mode", counts), want)


def test_coded_alphas_per_domain_once_equal_a_fresh_coding():
    """The coincidences kept per domain give every later call the values a fresh coding gives, domains alternating,
    and an empty coding still answers."""
    from eval.validity.agreement import CodedCounts, value_counts

    rng = np.random.default_rng(3)
    experts = rng.integers(0, 5, size=(200, 4)).astype(float)
    experts[rng.random((200, 4)) < 0.4] = np.nan
    values = np.arange(5.0)
    counts = value_counts(experts, values)
    kept = CodedCounts(counts, values)
    items = rng.integers(0, 200, size=(3, 80))
    for domain in (values, np.arange(3.0), values, np.arange(3.0)):
        fresh = CodedCounts(counts, values)
        np.testing.assert_array_equal(kept.alphas(kept.draws(items), domain), fresh.alphas(fresh.draws(items), domain))
        np.testing.assert_array_equal(kept.pairable(domain, items[0]), fresh.pairable(domain, items[0]))
    empty = CodedCounts(np.zeros((0, 5)), values)
    assert empty.pairable(values, np.zeros(0, dtype=int)).shape == (0,)

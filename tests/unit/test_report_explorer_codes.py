"""report.html's explorer codes its filters once per distinct value (``eval.reports.html_explorer.report_items``):
each row's option is the one the per-row definitions give (a label per row, the options sorted or in their own
order, a row coded by its label's position), whether items.parquet's text columns arrive as Arrow arrays
(``item_columns``) or as lists; the rows' JSON is ``json.dumps``' of the rows; the texts' order from the filters'
codes is the order the (criterion, model) pairs define, a null among them included."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pyarrow as pa
import pytest

from eval.reports.html_explorer import (MODE_LABELS, SCALE_LABELS, STATUS_LABELS, _labelled, _text_order, item_columns,
                                        item_status, report_items)
from eval.reports.report import SPLIT_TITLES
from eval.scoring.metrics import expert_mode


def _items(n: int, seed: int, nulls: bool) -> dict[str, list]:
    rng = random.Random(seed)
    maybe = (lambda v: None if nulls and rng.random() < 0.1 else v)

    def number():
        return rng.choice([0.0, 1.0, 2.0, 0.5, None, math.nan, 3.0])

    return {
        "id": [f"i{k}" for k in range(n)],
        "judge_score": [number() for _ in range(n)],
        "reference": [number() for _ in range(n)],
        "status": [rng.choice(["ok", "ok", "parse_failed", "request_failed", "missing", "odd"]) for _ in range(n)],
        "expert_scores": [rng.choice([None, [], [number() or 0.0 for _ in range(rng.randint(1, 4))]])
                          for _ in range(n)],
        "split": [maybe(rng.choice(["zero_shot", "standard", "unknown", "other", "None"])) for _ in range(n)],
        "model_id": [maybe(rng.choice(["m-b", "m-a", "Я", "None"])) for _ in range(n)],
        "task_type": [maybe(rng.choice(["t1", "t2", "т3"])) for _ in range(n)],
        "criteria_name": [maybe(rng.choice(["c", "d", "е", "b"])) for _ in range(n)],
        "in_scale": [rng.choice([True, False, None]) for _ in range(n)],
        "why_unscored": [maybe(rng.choice(["", "", "no_unique_mode", "parse_failed", "no_expert_scores", "odd"]))
                         for _ in range(n)],
    }


def _expected_filters(items: dict[str, list]) -> tuple[dict[str, list], list[list[int]]]:
    """The filters' options and each row's codes, row by row (as the explorer defined them before it coded each
    distinct value once)."""
    n = len(items["id"])
    references = [None if r is None or r != r else r for r in items["reference"]]
    listed = [bool(e) for e in items["expert_scores"]]  # a status reads the list, a NaN in it too
    has = [bool(e) and any(v == v for v in e) for e in items["expert_scores"]]  # the mode: scores only
    status = [item_status(str(s), r, h, w) for s, r, h, w in zip(items["status"], references, listed,
                                                                  items["why_unscored"])]
    width = max((len(e) for e in items["expert_scores"] if e), default=1)
    padded = np.full((n, width), np.nan)
    for i, e in enumerate(items["expert_scores"]):
        for k, v in enumerate([v for v in (e or []) if v == v]):
            padded[i, k] = v
    _, unique = expert_mode(padded)
    mode = [MODE_LABELS[3] if str(s) == "missing" else MODE_LABELS[2] if not h else
            MODE_LABELS[0] if u else MODE_LABELS[1] for s, h, u in zip(items["status"], has, unique.tolist())]
    scale_of = {("ok", True): "in scale", ("ok", False): "out of scale"}
    labels = {"split": [SPLIT_TITLES.get(str(v), str(v)) for v in items["split"]],
              "model": [str(v) for v in items["model_id"]], "task": [str(v) for v in items["task_type"]],
              "criterion": [str(v) for v in items["criteria_name"]], "status": status, "mode": mode,
              "scale": [scale_of.get((str(s), f), "not checked") for s, f in zip(items["status"], items["in_scale"])]}
    ordered = {"status": STATUS_LABELS, "scale": SCALE_LABELS, "mode": MODE_LABELS}
    values, codes = {}, []
    for key in ("split", "model", "task", "criterion", "status", "mode", "scale"):
        present = set(labels[key])
        values[key] = [s for s in ordered[key] if s in present] if key in ordered else sorted(present)
        codes.append([values[key].index(label) for label in labels[key]])
    return values, codes


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nulls", [False, True])
def test_filters_are_coded_as_row_by_row(seed, nulls):
    items = _items(300, seed, nulls)
    values, codes = _expected_filters(items)
    arrow = pa.table({**{k: v for k, v in items.items() if k != "expert_scores"},
                      "expert_scores": pa.array(items["expert_scores"], pa.list_(pa.float64()))})
    for given in (items, item_columns(arrow)):
        data = report_items(given, None, None, "j", "mode")
        assert {f["key"]: f["values"] for f in data["filters"]} == values
        rows = list(data["rows"])
        assert [[row[1][k] for row in rows] for k in range(len(codes))] == codes
        assert json.loads(data["rows"].json_text()) == json.loads(json.dumps(rows, ensure_ascii=False))
        assert data["rows"].json_text() == json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def test_a_flag_column_is_labelled_once_per_distinct_value():
    """items.parquet's in_scale arrives as an Arrow column (``item_columns``) and is labelled once per distinct
    value (true, false, null), not once per row."""
    column = item_columns(pa.table({"in_scale": pa.array([True, None, False] * 100)}))["in_scale"]
    seen = []
    labels, index = _labelled(column, label=lambda v: seen.append(v) or v)
    assert len(seen) == 3 and [labels[k] for k in index.tolist()] == [True, None, False] * 100


def _text_order_by_definition(diffs, pairs, cap):
    """The docstring's order, computed the slow obvious way: rank each item within its (criterion, model) pair by
    difference (largest first, none last, then position), then take every pair's 1st, then every pair's 2nd, ..."""
    def key(i):
        return (diffs[i] is None, -(diffs[i] or 0.0), i)

    rank = {}
    for pair in set(pairs):
        for r, i in enumerate(sorted((i for i, p in enumerate(pairs) if p == pair), key=key)):
            rank[i] = r
    order = sorted(range(len(diffs)), key=lambda i: (rank[i], *key(i)))
    return order if cap < 0 else order[:cap]


@pytest.mark.parametrize("seed", range(5))
def test_text_order_from_codes_is_the_order_the_docstring_defines(seed):
    rng = random.Random(seed)
    n = 400
    criteria = [rng.choice(["c", "d", "е", "b"]) for _ in range(n)]
    models = [rng.choice(["m-b", "m-a", "Я"]) for _ in range(n)]
    diffs = [rng.choice([None, 0.0, 1.0, 0.5, 2.0]) for _ in range(n)]
    sorted_models = sorted(set(models))
    group = np.array([sorted(set(criteria)).index(c) * len(sorted_models) + sorted_models.index(m)
                      for c, m in zip(criteria, models)])
    for cap in (0, 7, 50, -1):
        assert _text_order(diffs, group, cap) == _text_order_by_definition(diffs, list(zip(criteria, models)), cap)


def test_a_null_model_or_criterion_groups_under_its_label_when_texts_are_embedded():
    """A foreign items.parquet may leave model_id or criteria_name null: the page still embeds texts, the null
    grouped under its filter label, never a TypeError from sorting None against a text."""
    import judge

    ids = ["a", "b", "c", "d"]
    items = {"id": pa.array(ids), "judge_score": np.array([1.0, 2.0, 0.0, 1.0]),
             "reference": np.array([0.0, 0.0, 0.0, 2.0]), "status": ["ok"] * 4,
             "expert_scores": pa.array([[0.0], [0.0], [0.0], [2.0]]), "split": pa.array(["standard"] * 4),
             "model_id": pa.array(["m", None, "m", None]), "task_type": pa.array(["t"] * 4),
             "criteria_name": pa.array(["k", "k", None, "k"])}
    records = judge.records_from_rows([{"id": i, "instruction": f"instruction {i}", "answer": "answer",
                                        "criteria_name": "k", "rubrics": "0: нет\n\n1: частично\n\n2: да",
                                        "expert_scores": [0]} for i in ids])
    data = report_items(items, records, None, "j", "mode")
    assert {f["key"]: f["values"] for f in data["filters"]}["model"] == ["None", "m"]
    # every item's text embedded: groups (k, m) a=1.0; (k, None) b=2.0, d=1.0; (None, m) c=0.0 -> first round
    # a, b, c, then d
    assert sorted(row[6] for row in data["rows"]) == [0, 1, 2, 3]
    assert [row[0] for row in sorted(data["rows"], key=lambda row: row[6])] == ["b", "a", "c", "d"]
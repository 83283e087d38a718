"""report.html's explorer data built column-wise (``eval.html_report.report_items``) equals the row-by-row build it
replaced, kept here verbatim as the reference, on items with every kind of value the page rounds and codes."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import judge
from eval.html_report import (DEFAULT_TEXT_ITEMS, SPLIT_TITLES, STATUS_LABELS, _no_text_note, _record_text, _round,
                              _round_column, _Strings, _verdict, item_status, report_items)

# ------------------------------------------------------------------ the row-by-row build (commit 762da46), verbatim


def _reference_text_order(diffs: Sequence[float | None], groups: Sequence[Any], cap: int) -> set[int]:
    """Row indices whose texts are embedded: the worst items of every group first, round by round.

    Within a group (a criterion of an evaluated model) items rank by difference, largest first, items without one
    last; the 1st of every group come before the 2nd of any, so a filtered view also opens to its own worst items.
    """
    n = len(diffs)
    if cap < 0 or cap >= n:
        return set(range(n))
    within = sorted(range(n), key=lambda i: (groups[i], diffs[i] is None, -(diffs[i] or 0.0), i))
    rank = [0] * n
    previous, r = object(), 0
    for i in within:
        r = r + 1 if groups[i] == previous else 0
        previous = groups[i]
        rank[i] = r
    order = sorted(range(n), key=lambda i: (rank[i], diffs[i] is None, -(diffs[i] or 0.0), i))
    return set(order[:cap])

def _reference_report_items(items: Mapping[str, list], records: Sequence | None, predictions: Iterable[Mapping[str, Any]] | None,
                 judge_name: str, target: str, text_items: int = DEFAULT_TEXT_ITEMS) -> dict[str, Any]:
    """The explorer's data for one scored run.

    Args:
        items: ``items.parquet`` as columns.
        records: the labelled records (for the texts), or None.
        predictions: the run's prediction rows (for the judge's feedback), or None.
        judge_name, target: labels.
        text_items: see ``DEFAULT_TEXT_ITEMS``.
    """
    ids = [str(v) for v in items["id"]]
    n = len(ids)
    by_id = {r.id: r for r in records} if records is not None else {}
    rows_by_id: dict[str, Mapping[str, Any]] = {}
    for row in predictions or ():
        rows_by_id.setdefault(str(row["id"]), row)
    in_scale, why_unscored = items.get("in_scale"), items.get("why_unscored")
    filters = [("split", "split"), ("model", "evaluated model"), ("task", "task type"), ("criterion", "criterion"),
               ("status", "status")]
    values: dict[str, dict[str, int]] = {key: {} for key, _ in filters}

    def code(key: str, label: str) -> int:
        table = values[key]
        if label not in table:
            table[label] = len(table)
        return table[label]

    judge_scores = [_round(v) for v in items["judge_score"]]
    references = [_round(v) for v in items.get("reference", [None] * n)]
    diffs = [abs(j - r) if j is not None and r is not None else None for j, r in zip(judge_scores, references)]
    groups = list(zip(items["criteria_name"], items["model_id"]))
    with_text = _reference_text_order(diffs, groups, text_items) if records is not None else set()
    strings, details, rows = _Strings(), [], []
    for i in range(n):
        experts = [_round(v) for v in (items["expert_scores"][i] or [])]
        status = item_status(str(items["status"][i]), references[i], bool(experts), in_scale[i] if in_scale else None,
                             why_unscored[i] if why_unscored else None)
        cats = [code("split", SPLIT_TITLES.get(str(items["split"][i]), str(items["split"][i]))),
                code("model", str(items["model_id"][i])), code("task", str(items["task_type"][i])),
                code("criterion", str(items["criteria_name"][i])), code("status", status)]
        detail = -1
        record = by_id.get(ids[i])
        if i in with_text and record is not None:
            detail = len(details)
            details.append({**_record_text(record, strings), "v": [_verdict(rows_by_id.get(ids[i]))]})
        rows.append([ids[i], cats, [judge_scores[i]], references[i], _round(diffs[i]), experts, detail])
    # Filter options in a readable order: labels sorted, row codes remapped to match.
    remap = {}
    for key, table in values.items():
        ordered = sorted(table) if key != "status" else [s for s in STATUS_LABELS if s in table]
        remap[key] = {table[label]: k for k, label in enumerate(ordered)}
        values[key] = {label: k for k, label in enumerate(ordered)}
    keys = [key for key, _ in filters]
    for row in rows:
        row[1] = [remap[key][c] for key, c in zip(keys, row[1])]
    return {
        "kind": "report", "judges": ["judge: " + (judge_name or "(unnamed)")], "strings": strings.values, "details": details,
        "rows": rows, "page_size": 50, "status_filter": 4, "list_columns": [3, 1, 0, 4],
        "filters": [{"key": key, "label": label, "values": list(values[key])} for key, label in filters],
        "diff_label": "|judge − experts|", "reference_label": f"experts' {target}",
        "no_text_note": _no_text_note(len(details), n),
    }


# ----------------------------------------------------------------------------------------------------- the tests


def _random_items(n: int, seed: int) -> dict[str, list]:
    """items.parquet columns with whole and fractional numbers (ties at the 4th digit, huge, negative zero),
    missing and NaN values, empty and absent expert lists, every status and why_unscored."""
    rng = random.Random(seed)
    numbers = [0.0, 1.0, 2.0, -0.0, 3.0, 0.5, 1.00005, 2.00015, 0.12345, 1 / 3, 2.675, 1e20, -1.5, None, math.nan,
               math.inf, 4.0000000001]

    def number():
        return rng.choice(numbers) if rng.random() < 0.5 else float(rng.randint(0, 4))

    return {
        "id": [f"i{k}" for k in range(n)],
        "judge_score": [number() for _ in range(n)],
        "reference": [number() for _ in range(n)],
        "status": [rng.choice(["ok", "ok", "ok", "parse_failed", "request_failed", "missing"]) for _ in range(n)],
        "expert_scores": [rng.choice([None, [], [number() for _ in range(rng.randint(1, 5))]]) for _ in range(n)],
        "split": [rng.choice(["zero_shot", "standard", "unknown", "other"]) for _ in range(n)],
        "model_id": [rng.choice(["m-b", "m-a", "Я", "m-c"]) for _ in range(n)],
        "task_type": [rng.choice(["t1", "t2", "т3"]) for _ in range(n)],
        "criteria_name": [rng.choice(["c", "d", "е", "b"]) for _ in range(n)],
        "in_scale": [rng.choice([True, False, None, math.nan]) for _ in range(n)],
        "why_unscored": [rng.choice(["", "", "no_unique_mode", "parse_failed", "no_expert_scores", "odd"])
                         for _ in range(n)],
    }


@pytest.mark.parametrize("seed,n,cap,with_records", [(0, 300, 40, True), (1, 300, -1, True), (2, 300, 0, True),
                                                     (3, 300, 10_000, True), (4, 200, 5, False), (5, 1, 1, True),
                                                     (6, 0, 5, True)])
def test_column_wise_explorer_data_equals_the_row_by_row_build(seed, n, cap, with_records):
    """Same rows, codes, filters, texts and note, value for value and type for type (int vs float), as the old
    build."""
    items = _random_items(n, seed)
    records = [judge.JudgeRecord(id=f"i{k}", instruction=f"задание {k % 7}", answer=f"ответ {k}", criteria_name="c",
                                 rubrics="0: нет\n1: да", expert_scores=(0.0, 1.0)) for k in range(0, n, 2)]
    predictions = [{"id": f"i{k}", "feedback": f"f{k}", "raw_output": "r", "error": None, "confidence": 0.123456,
                    "score_source": "verdict"} for k in range(0, n, 3)]
    args = (records if with_records else None, predictions, "j", "mode", cap)
    new, old = report_items(items, *args), _reference_report_items(items, *args)
    assert _typed(new) == _typed(old)


def test_numeric_columns_may_come_as_numpy_arrays():
    """The page reads items.parquet's float columns as numpy arrays: the same data as from lists."""
    items = _random_items(200, 7)
    as_arrays = {**items, "judge_score": np.array(items["judge_score"], dtype=float),
                 "reference": np.array(items["reference"], dtype=float)}
    assert _typed(report_items(as_arrays, None, [], "j", "mode")) == _typed(report_items(items, None, [], "j", "mode"))


@pytest.mark.parametrize("values", [[0.0, -0.0, 2.0, 1e20, 2.0**60], [0.12345, 2.675, 1.00005, 1 / 3, -7.00004999],
                                    [None, math.nan, math.inf, -math.inf], [], [True, 3, 1.5]])
def test_round_column_is_round_value_by_value(values):
    """Column rounding gives ``_round``'s value and type for every value (Python's rounding, not numpy's)."""
    assert _typed(_round_column(values)) == _typed([_round(v) for v in values])


def _typed(value: Any) -> Any:
    """A value with each number tagged by its type (1 == 1.0 in Python; the page's JSON tells them apart)."""
    if isinstance(value, Mapping):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_typed(v) for v in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)

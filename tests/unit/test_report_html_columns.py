"""report.html's explorer data (``eval.reports.html_explorer.report_items``), built column-wise: numeric columns as lists or
numpy arrays, the judge's feedback from a prediction table or from rows, Python's rounding value by value."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import judge
from eval.reports.html_explorer import _round, _round_column, report_items
from eval.judging.predictions import prediction_table

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
    if isinstance(value, Sequence) and not isinstance(value, str):  # the explorer's rows are a Sequence
        return [_typed(v) for v in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


@pytest.mark.parametrize("cap", [40, -1, 0])
def test_feedback_from_a_prediction_table_is_the_feedback_from_rows(cap):
    """``judge-eval score`` hands the explorer the Arrow prediction table: the page's data is the one rows give
    (the first row of a repeated id counts in both)."""
    n = 300
    items = _random_items(n, 0)
    records = [judge.JudgeRecord(id=f"i{k}", instruction=f"задание {k % 7}", answer=f"ответ {k}", criteria_name="c",
                                 rubrics="0: нет\n1: да", expert_scores=(0.0, 1.0)) for k in range(0, n, 2)]
    predictions = [{"id": f"i{k}", "feedback": f"f{k}", "raw_output": "r" if k % 2 else f"f{k}",
                    "error": None if k % 5 else "no_result", "confidence": 0.123456, "score_source": "verdict",
                    "score_probs": {"0": 0.25, "1": 0.75} if k % 4 else None} for k in range(0, n, 3)]
    predictions.append({"id": "i0", "feedback": "a repeat: not shown"})
    from_rows = report_items(items, records, predictions, "j", "mode", cap)
    from_table = report_items(items, records, prediction_table(predictions), "j", "mode", cap)
    assert _typed(from_table) == _typed(from_rows)
    shown = [d["v"][0] for d in from_rows["details"] if d["v"][0] is not None]
    assert (len(shown) > 0) == (cap != 0) and all(v["f"] != "a repeat: not shown" for v in shown)


@pytest.mark.parametrize("odd_id", [1, "\ud800"])
def test_a_record_whose_id_is_no_text_arrow_holds_matches_no_item(odd_id):
    """A record built in code with an int id or a lone surrogate (the loaders make neither) gives no page item its
    texts and breaks none: ids are looked up by text, so ``"1"`` is not the record whose id is ``1``."""
    items = _random_items(3, 1)
    items["id"] = ["a", "1", "b"]

    def record(rid):
        return judge.JudgeRecord(id=rid, instruction=f"задание {rid!r}", answer="ответ", criteria_name="c",
                                 rubrics="0: нет\n1: да", expert_scores=(0.0, 1.0))

    plain = [record("a"), record("b")]
    expected = report_items(items, plain, None, "j", "mode", 40)
    assert [d["m"] for d in expected["details"] if "m" in d] == ["Item 1 is not in the labelled data."]
    assert _typed(report_items(items, [plain[0], record(odd_id), plain[1]], None, "j", "mode", 40)) == _typed(expected)

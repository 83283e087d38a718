"""``eval.scoring.score.stale_rows`` computed column-wise is the row-by-row check: a keyed row of an id in the
records is stale exactly when its key is not ``record_content_key`` of its record now; keyless rows, rows of
unknown ids and rows of records without a reference answer included."""

from __future__ import annotations

import dataclasses
import json
import random

import judge
from eval.judging.predictions import read_prediction_table, record_content_key
from eval.scoring.score import stale_rows


def test_stale_rows_are_the_row_by_row_check(tmp_path):
    rng = random.Random(3)
    records = judge.load_records(judge.sample_data_path())
    assert any(r.reference_answer for r in records) and any(not r.reference_answer for r in records)
    lines, expected = [], []
    for k in range(3 * len(records)):
        record = rng.choice(records)
        rid = record.id if rng.random() < 0.9 else f"unknown-{k}"
        key = record_content_key(record)
        roll = rng.random()
        if roll < 0.2:
            key = record_content_key(dataclasses.replace(record, answer=record.answer + " (правка)"))
        elif roll < 0.3:
            key = None
        row = {"id": rid, "judge": "j", "raw_output": "", "feedback": "", "score": 1.0, "parse_ok": True,
               "error": None, "reason": "", "score_source": "verdict", "latency_s": 0.0}
        if key is not None:
            row["content_key"] = key
        lines.append(json.dumps(row, ensure_ascii=False))
        known = {r.id: r for r in records}.get(rid)
        expected.append(key is not None and known is not None and key != record_content_key(known))
    (tmp_path / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    columns, _ = judge.load_record_columns(judge.sample_data_path())
    assert stale_rows(columns, read_prediction_table(tmp_path / "predictions.jsonl")).tolist() == expected
    assert any(expected) and not all(expected)

"""`judge-eval score` checks each prediction's ``content_key`` against its record once, column-wise
(``eval.scoring.score.stale_rows``), and drops the stale rows before it builds the pages: the item explorer of
report.html is handed rows already checked, so it recomputes no record's key (``record_content_key``, one JSON dump
and one SHA-256 per item it embeds)."""

from __future__ import annotations

import dataclasses
import json

import judge
import eval.judging.predictions as predictions_module
from eval.judging.predictions import record_content_key
from eval.scoring.score import score


def test_score_computes_no_record_key_after_the_column_wise_check(tmp_path, monkeypatch):
    records = judge.load_records(judge.sample_data_path())[:12]
    edited = dataclasses.replace(records[0], answer=records[0].answer + " (правка)")  # its row is stale
    rows = [{"id": r.id, "judge": "j", "raw_output": f"[FEEDBACK] ok [RESULT] {max(r.expert_scores)} [END]",
             "feedback": "ok", "score": max(r.expert_scores), "parse_ok": True, "error": None, "reason": "",
             "score_source": "verdict", "latency_s": 0.1,
             "content_key": record_content_key(edited if k == 0 else r)} for k, r in enumerate(records)]
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                           encoding="utf-8")
    calls = []

    def counted(record):
        calls.append(record.id)
        return record_content_key(record)

    monkeypatch.setattr(predictions_module, "record_content_key", counted)
    result = score(run, judge.sample_data_path(), tmp_path / "out", n_boot=0, vc_repeats=5)
    assert result.notes.n_stale_predictions == 1  # the column-wise check still finds the edited record's row
    assert (tmp_path / "out" / "report.html").is_file()
    assert calls == []

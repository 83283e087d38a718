"""`judge-eval score` of items whose rubric has no readable scale: their verdicts cannot be found off a scale, so
they count as in scale; metrics.json counts them (``notes.n_no_scale``) and report.md, report.html and the console
say so, as build-data counts such rubrics (``no_scale``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import judge
from eval.cli import main

#: No "<level>: <description>" line: judge.scale_of reads no scale from it.
NO_SCALE_RUBRIC = "Оцените ответ по своему усмотрению."


def _records(n_no_scale: int) -> list:
    """6 sample records of the Zero-Shot test, the first ``n_no_scale`` given a rubric without a readable scale."""
    records = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "zero_shot"][:6]
    return [dataclasses.replace(r, rubrics=NO_SCALE_RUBRIC) if k < n_no_scale else r for k, r in enumerate(records)]


def _score(tmp_path: Path, records: list, capsys) -> tuple[dict, str, Path]:
    """Score predictions giving each item 7 (off every sample rubric's scale) with no ``in_scale`` flag of their
    own; returns (metrics.json, console output, run folder)."""
    for r in records[len(records) - 2:]:
        assert judge.scale_of(r.rubrics) is not None  # the last two keep a readable scale
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"id": r.id, "judge": "j", "raw_output": "[FEEDBACK] ok [RESULT] 7 [END]", "feedback": "ok", "score": 7.0,
             "parse_ok": True, "error": None, "reason": "", "score_source": "verdict"} for r in records]
    (run / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0", "--vc-repeats", "5",
                 "--no-plots"]) == 0
    return json.loads((run / "metrics.json").read_text(encoding="utf-8")), capsys.readouterr().out, run


def test_items_without_a_readable_scale_are_counted_and_said(tmp_path: Path, capsys) -> None:
    """2 of 6 items have no readable scale: their 7s count as in scale (4 out of scale, the other items' 7s), and
    the run says how many were not checked."""
    metrics, printed, run = _score(tmp_path, _records(2), capsys)
    assert metrics["notes"]["n_no_scale"] == 2
    assert metrics["splits"]["zero_shot"]["overall"]["n_out_of_scale"] == 4
    said = ("2 scored items have a rubric without a readable scale: their judge's scores were not checked against a "
            "scale (counted as in scale unless the prediction's in_scale says not).")
    assert said in printed
    md = (run / "report.md").read_text(encoding="utf-8")
    assert "**2 scored items have a rubric without a readable scale**: their judge's scores were not checked" in md
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<b>2 scored items have a rubric without a readable scale</b>" in page


def test_one_item_without_a_scale_is_said_in_the_singular(tmp_path: Path, capsys) -> None:
    metrics, printed, _ = _score(tmp_path, _records(1), capsys)
    assert metrics["notes"]["n_no_scale"] == 1
    assert "1 scored item has a rubric without a readable scale: its judge's score was not checked" in printed


def test_readable_rubrics_add_no_note(tmp_path: Path, capsys) -> None:
    metrics, printed, _ = _score(tmp_path, _records(0), capsys)
    assert "n_no_scale" not in metrics["notes"]
    assert "readable scale" not in printed

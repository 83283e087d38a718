"""`judge-eval score` refusing what it cannot score in one line that names the file and what to do: a --data file
with no records, and a predictions file with a half row mid-file."""

from __future__ import annotations

import json
from pathlib import Path

import judge
from eval.cli import main


def _write_run(folder: Path, records) -> Path:
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": r.id, "judge": "j", "raw_output": "[FEEDBACK] ok [RESULT] 1 [END]", "feedback": "ok",
                         "score": 1, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict",
                         "latency_s": 0.1}) for r in records]
    (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_empty_data_file_is_one_line_naming_it(tmp_path, capsys):
    """An empty --data file: exit 2 and one error line naming the file and saying it has no records."""
    run = _write_run(tmp_path / "run", judge.load_records(judge.sample_data_path())[:3])
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["score", "--predictions", str(run), "--data", str(empty), "--out", str(tmp_path / "out"),
                 "--n-boot", "0", "--no-plots"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and str(empty) in err[0] and "no records" in err[0]
    assert "broadcast" not in err[0]
    assert not (tmp_path / "out").exists()


def test_half_row_mid_file_says_where_and_what_to_do(tmp_path, capsys):
    """Row 2 of 3 cut short mid-file: exit 2, naming file:2 and the remedy (mend or delete it, or --overwrite)."""
    records = judge.load_records(judge.sample_data_path())[:3]
    run = _write_run(tmp_path / "run", records)
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:30]
    (run / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'predictions.jsonl'}:2:" in err
    assert "mend or delete that line" in err and "judge-eval run --overwrite" in err

"""What the judge-eval CLI's tests share (tests/unit/test_eval_cli.py, test_eval_bad_inputs.py,
test_first_hour_eval_errors.py, tests/integration/serving/test_eval_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge


def sample_by_split() -> list:
    """Twelve sample records: the first six of the Zero-Shot test, then the first six of the Standard test."""
    records = judge.load_records(judge.sample_data_path())
    return ([r for r in records if judge.split_of(r) == "zero_shot"][:6]
            + [r for r in records if judge.split_of(r) == "standard"][:6])


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> tuple[Path, list]:
    """``sample_by_split``'s records as a JSONL file."""
    records = sample_by_split()
    path = tmp_path_factory.mktemp("data") / "small.jsonl"
    judge.write_jsonl(records, path)
    return path, records


def prediction_row(record, score, **extra) -> dict:
    """A predictions row of a tagged judge that gave ``record`` the score ``score``."""
    return {"id": record.id, "judge": "j", "raw_output": f"[FEEDBACK] ok [RESULT] {score} [END]", "feedback": "ok",
            "score": score, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict", **extra}


def write_run(folder: Path, rows: list[dict]) -> Path:
    """A run folder holding ``rows`` as its predictions.jsonl."""
    folder.mkdir(parents=True)
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def run_args(url: str, data: Path, out: Path, *extra: str) -> list[str]:
    """``judge-eval run`` against ``url`` on ``data`` into ``out``: no progress bar, 32 tokens, retries at once."""
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--no-progress", "--max-tokens", "32",
            "--backoff-s", "0.01", *extra]


def cut_predictions_to(out: Path, n: int) -> None:
    """Leave the first ``n`` rows of the folder's predictions, as a run killed after them does."""
    path = out / "predictions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:n]), encoding="utf-8")

"""What tests/unit/test_eval_cli.py and tests/integration/serving/test_eval_cli.py share."""

from __future__ import annotations

from pathlib import Path

import pytest

import judge


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> tuple[Path, list]:
    """Twelve sample records, six from each split, as a JSONL file."""
    records = judge.load_records(judge.sample_data_path())
    zero = [r for r in records if judge.split_of(r) == "zero_shot"][:6]
    standard = [r for r in records if judge.split_of(r) == "standard"][:6]
    path = tmp_path_factory.mktemp("data") / "small.jsonl"
    judge.write_jsonl(zero + standard, path)
    return path, zero + standard



def run_args(url: str, data: Path, out: Path, *extra: str) -> list[str]:
    """``judge-eval run`` against ``url`` on ``data`` into ``out``: no progress bar, 32 tokens, retries at once."""
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--no-progress", "--max-tokens", "32",
            "--backoff-s", "0.01", *extra]


def cut_predictions_to(out: Path, n: int) -> None:
    """Leave the first ``n`` rows of the folder's predictions, as a run killed after them does."""
    path = out / "predictions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:n]), encoding="utf-8")

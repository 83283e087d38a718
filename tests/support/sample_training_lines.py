"""The bundled sample's lines as training data (those trained on, not held out as Zero-Shot) and the tiny
regression config: what the regression max_length, scheduler-name and build-data tests share."""

from __future__ import annotations

import json
from pathlib import Path

import judge
from train import build_data

REPO = Path(__file__).resolve().parents[2]
TINY_REGRESSION = REPO / "configs" / "train" / "tiny" / "regression.yaml"


def sample_lines() -> list[dict]:
    return [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]


def kept_lines() -> list[dict]:
    """The sample lines whose records are trained on (not held out as Zero-Shot)."""
    kept, _ = build_data.zero_shot_records(build_data.load_training_records("sample"), "drop")
    ids = {record.id for record in kept}
    return [line for line in sample_lines() if line["id"] in ids]


def kept_record_line() -> dict:
    return kept_lines()[0]


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


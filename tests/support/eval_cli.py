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


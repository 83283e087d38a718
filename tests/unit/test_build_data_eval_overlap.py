"""Validation data sharing instructions with the training data: warned, and counted in run.json's data report."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

from tests.support.sample_training_lines import kept_lines as _kept_lines
from tests.support.sample_training_lines import write_lines as _write
from train import build_data


def _data_config(data: Path, eval_data: Path, tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(data=str(data), eval_data=str(eval_data), allow_benchmark_rows=False, recipe="seq2seq",
                           zero_shot="drop", min_russian_share=0.5, max_length=4096, eval_fraction=0.0, max_rows=None,
                           resume=False, output_dir=str(tmp_path / "run"))  # fmt: skip


def test_eval_data_sharing_instructions_with_the_training_data_is_warned_and_counted(tmp_path, qwen_tokenizer, caplog):
    """eval_data = data was taken silently: validation loss and the best checkpoint then measure memory. Warned (a
    user may mean it) and recorded with the validation rows in run.json's data report."""
    lines = _kept_lines()[:12]
    data = _write(tmp_path / "data.jsonl", lines)
    with caplog.at_level(logging.WARNING, logger="train.build_data"):
        train, held_out, report = build_data.rows_for_config(_data_config(data, data, tmp_path), qwen_tokenizer)
    assert held_out and report.to_dict()["eval"]["n_rows_sharing_instructions"] == len(held_out)
    assert f"eval_data {data}: {len(held_out)} of its {len(held_out)} rows share their instruction" in caplog.text


def test_eval_data_of_other_instructions_counts_none(tmp_path, qwen_tokenizer, caplog):
    lines = _kept_lines()
    instructions = sorted({line["instruction"] for line in lines})
    data = _write(tmp_path / "data.jsonl", [line for line in lines if line["instruction"] == instructions[0]])
    eval_data = _write(tmp_path / "eval.jsonl", [line for line in lines if line["instruction"] == instructions[1]])
    with caplog.at_level(logging.WARNING, logger="train.build_data"):
        _, held_out, report = build_data.rows_for_config(_data_config(data, eval_data, tmp_path), qwen_tokenizer)
    assert held_out and report.eval["n_rows_sharing_instructions"] == 0
    assert "share their instruction" not in caplog.text

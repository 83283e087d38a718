"""Exact duplicate input rows (same id, same content; judge.records left them out with a warning only): each
recipe's data report, which run.json records, counts them as ``duplicate_input_rows``, so that the records kept
plus the copies left out add up to the rows read (the traces stage's summary.json counts them under that name)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

from tests.support.sample_training_lines import kept_lines, sample_lines, write_lines
from tests.support.train_grpo import TINY_GRPO
from tests.support.train_integer_sft import trace_record
from train import build_data

import judge


def _with_a_copy(path: Path, lines: list[dict]) -> Path:
    """``lines`` and a copy of the first, written at the end: one exact duplicate among len(lines) + 1 rows."""
    return write_lines(path, [*lines, lines[0]])


def _config(data: Path, eval_data: Path | None, tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(data=str(data), eval_data=str(eval_data) if eval_data else None, allow_benchmark_rows=False,
                           recipe="seq2seq", zero_shot="drop", min_russian_share=0.5, max_length=4096,
                           eval_fraction=0.0, max_rows=None, resume=False, output_dir=str(tmp_path / "run"),
                           validation_split="instruction")  # fmt: skip


def test_the_tagged_and_regression_data_step_counts_duplicate_input_rows(tmp_path, qwen_tokenizer):
    lines = kept_lines()
    data = _with_a_copy(tmp_path / "data.jsonl", lines[:12])
    eval_data = _with_a_copy(tmp_path / "eval.jsonl", lines[12:16])
    _, _, report = build_data.rows_for_config(_config(data, eval_data, tmp_path), qwen_tokenizer)
    counts = report.to_dict()
    assert counts["duplicate_input_rows"] == 1 and counts["n_records"] + counts["duplicate_input_rows"] == 13
    assert counts["eval"]["duplicate_input_rows"] == 1 and counts["eval"]["n_records"] == 4
    assert "1 exact duplicate input row(s) left out" in report.summary()
    _, _, plain = build_data.rows_for_config(_config(write_lines(tmp_path / "plain.jsonl", lines[:12]), None,
                                                     tmp_path), qwen_tokenizer)
    assert "duplicate_input_rows" not in plain.to_dict() and "duplicate" not in plain.summary()


def test_the_integer_data_step_counts_duplicate_input_rows(tmp_path, qwen3_tokenizer):
    from train.config import load_config
    from train.seq2seq import integer_rows_for_config

    records = [trace_record(id=f"{item}#0", item_id=item, answer=f"Ответ {item}.") for item in ("a", "b", "c")]
    data = tmp_path / "traces.jsonl"
    judge.write_jsonl([*records, records[0]], data)
    config = dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), verdict_format="integer",
                                 data=str(data), eval_data=None, eval_fraction=0.0, max_rows=None)
    train, _, report = integer_rows_for_config(config, qwen3_tokenizer)
    counts = report.to_dict()
    assert len(train) == 3 and counts["duplicate_input_rows"] == 1 and counts["n_records"] == 3


def test_the_grpo_data_step_counts_duplicate_input_rows(tmp_path):
    from train import grpo
    from train.config import load_config

    data = _with_a_copy(tmp_path / "data.jsonl", kept_lines()[:40])
    config = load_config(TINY_GRPO, {"data": str(data), "output_dir": str(tmp_path / "run")})
    report = grpo.grpo_prompts(config).report
    counts = report.to_dict()
    assert counts["duplicate_input_rows"] == 1 and counts["n_records"] + counts["duplicate_input_rows"] == 41
    assert counts["n_rows"] + sum(counts["dropped"].values()) == counts["n_records"]
    assert "1 exact duplicate input row(s) left out" in report.summary()


def test_judge_train_build_data_says_the_duplicate_input_rows_it_left_out(tmp_path, capsys):
    data = _with_a_copy(tmp_path / "data.jsonl", kept_lines()[:12])
    assert build_data.main(["--data", str(data), "--zero-shot", "drop"]) == 0
    assert "1 exact duplicate input row(s) left out before these counts" in capsys.readouterr().out
    assert build_data.main(["--data", str(write_lines(tmp_path / "plain.jsonl", kept_lines()[:12])),
                            "--zero-shot", "drop"]) == 0
    assert "duplicate" not in capsys.readouterr().out


def test_judge_train_check_s_refusal_counts_the_duplicate_input_rows(tmp_path):
    """``judge-train run`` and ``check`` refuse data whose every row is dropped with the data report's summary: the
    copies left out before its counts are in it, as the recipe's data step logs them."""
    import pytest

    from train.cli import check_training_data
    from train.config import ConfigError, load_config

    kept = {line["id"] for line in kept_lines()}
    held_out = [line for line in sample_lines() if line["id"] not in kept][:3]  # Zero-Shot rows, every one dropped
    data = _with_a_copy(tmp_path / "data.jsonl", held_out)
    config = load_config("configs/train/tiny/seq2seq.yaml", {"data": str(data), "eval_data": None,
                                                             "zero_shot": "drop"})
    with pytest.raises(ConfigError, match=r"^data: no training rows left in .*; 1 exact duplicate input row\(s\) "
                                          r"left out before these counts$"):
        check_training_data(config)

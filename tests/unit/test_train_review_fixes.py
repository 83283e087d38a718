"""Training defects a review found, each pinned where it was:

- the regression recipe trained rows longer than max_length in the ids it trains (judge-serve's, where a special-token
  string is its characters), uncounted;
- a misspelt lr_scheduler_type or optim under a launcher failed with a traceback on every rank, after the base model
  and run.json were written, and without a launcher with a message that did not name the key;
- validation data sharing instructions with the training data, and records repeating another's content under another
  id, were taken silently.

No training: the regression recipe is run up to the point where it records its data, with the real tokenizer.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

import judge
from train import build_data, recipe_steps, regression
from train.config import ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]
TINY_REGRESSION = REPO / "configs" / "train" / "tiny" / "regression.yaml"
#: A special-token string the data step counts as one token and the trained ids spell out in ~5.
FORGED = "<|im_end|>" * 60


def _sample_lines() -> list[dict]:
    return [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]


def _kept_lines() -> list[dict]:
    """The sample lines whose records are trained on (not held out as Zero-Shot)."""
    kept, _ = build_data.zero_shot_records(build_data.load_training_records("sample"), "drop")
    ids = {record.id for record in kept}
    return [line for line in _sample_lines() if line["id"] in ids]


def _kept_record_line() -> dict:
    return _kept_lines()[0]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


class _Recorded(Exception):
    """Raised by the fake run's record_data: the recipe got as far as recording its data."""


def _recorded_data(monkeypatch, tokenizer, config) -> dict:
    """What regression.main records as its data (the report, the training rows), the model never built."""
    recorded = {}

    def record_data(report, train_rows=None):
        recorded.update(report=report, train_rows=train_rows)
        raise _Recorded

    monkeypatch.setattr(recipe_steps, "prepare", lambda config, name: SimpleNamespace(tokenizer=tokenizer,
                                                                                      record_data=record_data))
    with pytest.raises(_Recorded):
        regression.main(config)
    return recorded


# ---- the regression recipe's max_length, on the ids it trains --------------------------------------------------

@pytest.fixture
def forged_data(tmp_path, qwen_tokenizer) -> tuple[Path, int, int, int]:
    """A record and its copy whose answer writes FORGED: (file, max_length, rows of each, the copy's trained length).
    max_length is the copy's length as the data step counts it, so only the trained ids put it over."""
    line = _kept_record_line()
    forged = {**line, "id": line["id"] + "-forged", "answer": line["answer"] + FORGED}
    path = _write(tmp_path / "data.jsonl", [line, forged])
    rows, _ = build_data.build_rows(build_data.load_training_records(str(path)), recipe="regression", zero_shot="drop")
    counted = max(len(qwen_tokenizer(judge.apply_chat(qwen_tokenizer, row["prompt"], row["completion"]),
                                     add_special_tokens=False)["input_ids"]) for row in rows)  # fmt: skip
    trained = [len(example["input_ids"]) for example in regression.tokenize_rows(rows, qwen_tokenizer)]
    per_record = len(rows) // 2
    assert max(trained[:per_record]) <= counted < min(trained[per_record:])
    return path, counted, per_record, min(trained[per_record:])


def test_regression_drops_and_counts_rows_over_max_length_in_the_ids_it_trains(monkeypatch, qwen_tokenizer, forged_data,
                                                                               tmp_path):
    """The copy's rows passed the data step's count and trained whole (the collator cuts nothing), uncounted in
    run.json. Now they are dropped, training and validation, and counted under too_long before the data is
    recorded."""
    path, max_length, per_record, _ = forged_data
    config = load_config(TINY_REGRESSION, {"data": str(path), "eval_data": str(path), "max_length": max_length,
                                           "max_rows": 100, "output_dir": str(tmp_path / "run")})  # fmt: skip
    recorded = _recorded_data(monkeypatch, qwen_tokenizer, config)
    report = recorded["report"]
    assert {row["record_id"] for row in recorded["train_rows"]} == {_kept_record_line()["id"]}
    assert len(recorded["train_rows"]) == report["n_rows"] == report["n_eval"] == per_record
    assert report["dropped"]["too_long"] == report["eval"]["dropped"]["too_long"] == per_record
    assert report["eval"]["n_rows"] == per_record


def test_regression_with_no_row_left_in_its_trained_ids_is_a_config_error(monkeypatch, qwen_tokenizer, forged_data,
                                                                         tmp_path):
    path, max_length, _, _ = forged_data
    forged_only = _write(tmp_path / "forged.jsonl", [json.loads(path.read_text().splitlines()[1])])
    config = load_config(TINY_REGRESSION, {"data": str(forged_only), "max_length": max_length, "max_rows": 100,
                                           "output_dir": str(tmp_path / "run")})  # fmt: skip
    def record_data(report, train_rows=None):
        pytest.fail(f"recorded {len(train_rows)} rows over max_length {max_length}")

    monkeypatch.setattr(recipe_steps, "prepare", lambda config, name: SimpleNamespace(tokenizer=qwen_tokenizer,
                                                                                      record_data=record_data))
    with pytest.raises(ConfigError, match=f"no training rows left in {forged_only} within max_length {max_length}"):
        regression.main(config)


# ---- lr_scheduler_type and optim ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, enum", [("lr_scheduler_type", "cosine_with_warmup", "SchedulerType"),
                                              ("optim", "adamw", "OptimizerNames")])  # fmt: skip
def test_a_name_transformers_does_not_know_is_refused_naming_the_key_under_a_launcher(monkeypatch, tmp_path, key,
                                                                                       value, enum):
    """Under torchrun (WORLD_SIZE, LOCAL_RANK set) check_training_arguments built nothing: the misspelt name reached
    TrainingArguments after the base model and run.json, a traceback on every rank. Its names are checked there too."""
    from train.training_arguments import check_training_arguments

    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    config = load_config(TINY_REGRESSION, {key: value, "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as refused:
        check_training_arguments(config)
    assert str(refused.value).startswith(f"TrainingArguments refuses this config as set: {key}: {value} is not a "
                                         f"valid {enum} (")  # fmt: skip


def test_judge_train_refuses_a_misspelt_scheduler_in_one_line_before_anything_is_written(monkeypatch, tmp_path, capsys):
    from train.cli import main

    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK", "0")
    assert main(["--config", str(TINY_REGRESSION), "--lr-scheduler-type", "bogus",
                 "--output-dir", str(tmp_path / "run")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "TrainingArguments refuses this config as set: lr_scheduler_type: bogus is not a valid SchedulerType" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_training_arguments_a_value_refused_by_transformers_is_a_config_error(tmp_path):
    """A value past the config's checks (set here after validation) that TrainingArguments refuses: a ConfigError,
    judge-train's one-line exit 2 on each rank, not a traceback."""
    from transformers import TrainingArguments

    from train.training_arguments import launch_arithmetic

    config = load_config(TINY_REGRESSION, {"output_dir": str(tmp_path / "run")})
    config = dataclasses.replace(config, lr_scheduler_type="bogus")  # replace() does not validate
    run = recipe_steps.PreparedRun(config=config, launch=launch_arithmetic(config, world_size=1), resume_from=None,
                                   base_model="unused", tokenizer=None, dtype=None, stopper=None)  # fmt: skip
    with pytest.raises(ConfigError, match="^TrainingArguments refuses this config or the launcher's environment: .*bogus"):
        run.training_arguments(TrainingArguments, has_eval=False)


# ---- build-data: validation data sharing instructions, repeated content -----------------------------------------

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


def test_a_record_repeating_another_under_another_id_is_counted_and_kept(tmp_path, caplog):
    """Only repeated lines are dropped by the loader: a copy under another id trained twice, unreported."""
    line = _kept_record_line()
    path = _write(tmp_path / "dup.jsonl", [line, {**line, "id": line["id"] + "-copy"}])
    with caplog.at_level(logging.WARNING, logger="train.build_data"):
        rows, report = build_data.build_rows(build_data.load_training_records(str(path)), recipe="seq2seq",
                                             zero_shot="refuse")  # fmt: skip
    assert len(rows) == 2 * len(line["expert_scores"]) == report.n_rows
    assert report.repeated_content == 1 and report.to_dict()["repeated_content"] == 1
    assert report.summary().endswith("; kept 1 record(s) repeating an earlier record's content under another id")
    assert "1 record(s) repeat an earlier record's content under another id: kept" in caplog.text
    unique, unique_report = build_data.build_rows(build_data.load_training_records(str(path))[:1], recipe="seq2seq",
                                                  zero_shot="refuse")  # fmt: skip
    assert unique_report.repeated_content == 0 and "repeated_content" not in unique_report.to_dict()


def test_build_data_prints_the_repeated_content(tmp_path, capsys):
    line = _kept_record_line()
    path = _write(tmp_path / "dup.jsonl", [line, {**line, "id": line["id"] + "-copy"}])
    assert build_data.main(["--data", str(path), "--recipe", "seq2seq"]) == 0
    assert "kept 1 record(s) repeating an earlier record's content under another id" in capsys.readouterr().out


# ---- the export's threads ----------------------------------------------------------------------------------------

def test_rank_zero_exports_on_every_core_and_puts_its_thread_count_back(monkeypatch, tmp_path):
    """Under OMP_NUM_THREADS=1 (torchrun's default, train.sbatch's) rank 0 loaded, wrote and probed the export on one
    thread while the other ranks waited in a barrier bounded by ddp_timeout."""
    import os

    import torch

    from train import export

    seen = {}

    def export_on_rank_zero(trainer, watch, **kwargs):
        seen["threads"] = torch.get_num_threads()
        return {"checked": True}

    monkeypatch.setattr(export, "probe_batch", lambda tokenizer, texts: None)
    monkeypatch.setattr(export, "live_outputs", lambda model, batch: None)
    monkeypatch.setattr(export, "_export_on_rank_zero", export_on_rank_zero)
    trainer = SimpleNamespace(is_world_process_zero=lambda: True, model=None, save_model=lambda folder: None,
                              args=SimpleNamespace(output_dir=str(tmp_path)),
                              accelerator=SimpleNamespace(wait_for_everyone=lambda: None))  # fmt: skip
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})  # more cores than the 1 set: a change
    try:
        report = export.export_after_training(trainer, stopper=None, result=SimpleNamespace(), mode="seq2seq",
                                              model_cls=None, tokenizer=None, probe_texts=[], base_model="unused",
                                              dtype=torch.float32, export_dir=tmp_path / "export")  # fmt: skip
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert report == {"checked": True}
    assert seen["threads"] == 4 and after == 1

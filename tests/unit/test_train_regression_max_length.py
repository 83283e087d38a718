"""The regression recipe's max_length on the ids it trains (judge-serve's, where a special-token string is its
characters): rows over it are dropped and counted, and none left is a config error. No training: the recipe is run
up to the point where it records its data, with the real tokenizer."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import judge
from tests.support.sample_training_lines import TINY_REGRESSION
from tests.support.sample_training_lines import kept_record_line as _kept_record_line
from tests.support.sample_training_lines import write_lines as _write
from train import build_data, recipe_steps, regression
from train.config import ConfigError, load_config

#: A special-token string the data step counts as one token and the trained ids spell out in ~5.
FORGED = "<|im_end|>" * 60


class _Recorded(Exception):
    """Raised by the fake run's record_data: the recipe got as far as recording its data."""


def _recorded_data(monkeypatch, tokenizer, config) -> dict:
    """What regression.main records as its data (the report, the training rows), the model never built."""
    recorded = {}

    def record_data(report, train_rows=None):
        recorded.update(report=report, train_rows=train_rows)
        raise _Recorded

    monkeypatch.setattr(recipe_steps, "prepare", lambda config, name, **_: SimpleNamespace(tokenizer=tokenizer,
                                                                                           record_data=record_data))
    with pytest.raises(_Recorded):
        regression.main(config)
    return recorded


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

    monkeypatch.setattr(recipe_steps, "prepare", lambda config, name, **_: SimpleNamespace(tokenizer=qwen_tokenizer,
                                                                                           record_data=record_data))
    with pytest.raises(ConfigError, match=f"no training rows left in {forged_only} within max_length {max_length}"):
        regression.main(config)

"""``judge-train classifier`` refuses the settings it does not apply, and run.json counts the rows it trained on.

The classifier recipe read neither eval_data, eval_fraction nor min_russian_share, yet accepted them (a missing
eval_data file too) and recorded them in run.json as used; its n_train counted rows the max_length drop then left out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = str(REPO / "configs/train/tiny/classifier.yaml")


@pytest.mark.parametrize("flags, said", [
    (["--eval-data", "/nonexistent/val.jsonl"], "the classifier recipe takes no validation set"),
    (["--eval-fraction", "0.5"], "the classifier recipe takes no validation set"),
    (["--min-russian-share", "0.99"], "min_russian_share 0.99: the classifier recipe does not apply it"),
])  # fmt: skip
def test_the_classifier_refuses_what_it_does_not_apply(tmp_path, capsys, flags, said):
    from train.classifier import main

    assert main(["--config", TINY, "--output-dir", str(tmp_path / "run"), "--max-steps", "2", *flags]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_the_classifier_defaults_to_no_validation_set():
    from train.config import ClassifierConfig

    config = ClassifierConfig()
    assert (config.eval_fraction, config.eval_data) == (0.0, None)
    config.validate()


def test_the_classifier_s_n_train_counts_the_rows_left_after_the_too_long_ones(tmp_path, tiny_causal_dir,
                                                                                  qwen_tokenizer, monkeypatch):
    """A max_length between the 8 rows' lengths drops some of them: n_train is what trained, not the 8 read. The
    lengths are read with the session's tokenizer, the one saved in tiny_causal_dir, rather than a second load of it."""
    from judge.criteria_auto.head import TRAINING_INPUT, input_ids
    from train.classifier import classifier_rows, main
    from train.config import load_config

    monkeypatch.delenv("RANK", raising=False)
    pairs, _ = classifier_rows(load_config(TINY))
    lengths = sorted(len(input_ids(qwen_tokenizer, p["instruction"], TRAINING_INPUT["add_special_tokens"]))
                     for p in pairs)
    max_length = lengths[len(lengths) // 2]
    kept = sum(n <= max_length for n in lengths)
    assert 0 < kept < len(pairs) == 8
    out = tmp_path / "run"
    assert main(["--config", TINY, "--output-dir", str(out), "--max-steps", "1", "--max-length", str(max_length),
                 "--model-name-or-path", str(tiny_causal_dir)]) == 0  # fmt: skip
    data = json.loads((out / "run.json").read_text(encoding="utf-8"))["data"]
    assert (data["n_train"], data["dropped_too_long"]) == (kept, 8 - kept)
    assert len(data["train_fingerprint"]) == 64

"""A judge trained by GRPO records the token lengths it learned to reason within, and judge-serve gives it that room.

The t-lite and Qwen3 GRPO recipes sample completions of up to 2048 tokens in 6144; judge-serve's defaults are 1024 in
4096. Served with those, the judge's reasoning is cut before its verdict, which then fails to parse. The export's
manifest records ``trained_lengths`` (``judge.checkpoints``); judge-serve adopts them where the user chose nothing,
advertises the completion length in ``GET /v1/models`` (``judge.wire.ModelLimits``), and judge-eval follows it
(tests/unit/test_first_contact.py). The export writing them is checked in the GRPO training test.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from judge.checkpoints import EXPORT_MANIFEST, TrainedLengths, checkpoint_trained_lengths


def _export(folder: Path, lengths) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}),
                                        encoding="utf-8")
    manifest = {"mode": "seq2seq", "prompt_version": "x", "generator": ".", "score_head": None,
                "verdict_format": "integer"}
    if lengths is not None:
        manifest["trained_lengths"] = lengths
    (folder / EXPORT_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_trained_lengths_read_from_the_manifest_and_malformed_ones_named(tmp_path):
    assert checkpoint_trained_lengths(_export(tmp_path / "sft", None)) is None
    assert checkpoint_trained_lengths(tmp_path) is None  # no manifest at all: a plain checkpoint
    good = _export(tmp_path / "grpo", {"max_length": 6144, "max_completion_length": 2048})
    assert checkpoint_trained_lengths(good) == TrainedLengths(6144, 2048)
    assert TrainedLengths(6144, 2048).to_manifest() == {"max_length": 6144, "max_completion_length": 2048}
    for bad, said in [([2048], "must be an object"),
                      ({"max_length": 6144}, "trained_lengths.max_completion_length must be a positive integer"),
                      ({"max_length": 6144, "max_completion_length": True}, "max_completion_length must be"),
                      ({"max_length": 100, "max_completion_length": 200}, "above max_length 100")]:
        with pytest.raises(ValueError, match=said):
            checkpoint_trained_lengths(_export(tmp_path / "bad", bad))
    # judge-serve reads them with the layout: a malformed manifest is its LayoutError (exit 2), named.
    from serve.layout import LayoutError, resolve_layout

    with pytest.raises(LayoutError, match="trained_lengths"):
        resolve_layout(_export(tmp_path / "bad", [2048]))
    assert resolve_layout(good).trained_lengths == TrainedLengths(6144, 2048)


def _served(argv: list[str], capsys) -> dict:
    from serve.cli import main

    assert main([*argv, "--print-config"]) == 0
    return json.loads(capsys.readouterr().out)


def test_judge_serve_gives_a_grpo_judge_its_trained_lengths_unless_chosen(tmp_path, capsys):
    """Defaults (1024 in 4096) are raised to the trained 2048 in 6144; a chosen max_tokens (flag) or max_model_len
    (YAML) is kept; a plain checkpoint keeps the defaults."""
    grpo = str(_export(tmp_path / "grpo", {"max_length": 6144, "max_completion_length": 2048}))
    plain = str(_export(tmp_path / "sft", None))
    assert {k: _served(["--model", grpo], capsys)[k] for k in ("max_tokens", "max_model_len")} == {
        "max_tokens": 2048, "max_model_len": 6144}
    assert {k: _served(["--model", plain], capsys)[k] for k in ("max_tokens", "max_model_len")} == {
        "max_tokens": 1024, "max_model_len": 4096}
    chosen = _served(["--model", grpo, "--max-tokens", "512"], capsys)
    assert (chosen["max_tokens"], chosen["max_model_len"]) == (512, 6144)
    yaml = tmp_path / "serve.yaml"
    yaml.write_text("max_model_len: 8192\n", encoding="utf-8")
    from_file = _served(["--model", grpo, "--config", str(yaml)], capsys)
    assert (from_file["max_tokens"], from_file["max_model_len"]) == (2048, 8192)


def test_judge_serve_says_when_the_chosen_room_is_below_the_trained_one(tmp_path):
    from serve.cli import fit_trained_lengths, resolve_config
    from serve.layout import resolve_layout

    grpo = str(_export(tmp_path / "grpo", {"max_length": 6144, "max_completion_length": 2048}))
    config, args = resolve_config(["--model", grpo, "--max-tokens", "512"])
    fitted, notes = fit_trained_lengths(config, resolve_layout(grpo), args.chosen_settings)
    assert (fitted.max_tokens, fitted.max_model_len) == (512, 6144)
    assert notes == [(logging.INFO, "the judge was trained with completions of up to 2048 tokens in 6144: serving "
                                    "with max_model_len 6144"),
                     (logging.WARNING, "max_tokens 512 is below the 2048 tokens the judge was trained to reason in: a "
                                       "reasoning cut short has no verdict (raise --max-tokens)")]
    # A chosen smaller window still serves: max_tokens takes at most half of it (the prompt keeps the rest), said.
    config, args = resolve_config(["--model", grpo, "--max-model-len", "2048"])
    fitted, notes = fit_trained_lengths(config, resolve_layout(grpo), args.chosen_settings)
    assert (fitted.max_tokens, fitted.max_model_len) == (1024, 2048)
    assert notes[-1] == (logging.WARNING, "max_tokens 1024 is below the 2048 tokens the judge was trained to reason "
                                          "in: a reasoning cut short has no verdict (raise --max-tokens)")
    # An attached engine keeps its own context: nothing adopted (judge-serve cannot widen it), the gap said.
    config, args = resolve_config(["--model", grpo, "--generator-url", "http://127.0.0.1:9/v1"])
    fitted, notes = fit_trained_lengths(config, resolve_layout(grpo), args.chosen_settings)
    assert (fitted.max_tokens, fitted.max_model_len) == (1024, 4096) and [level for level, _ in notes] == [
        logging.WARNING]


def test_model_limits_carry_the_trained_completion_length():
    from judge.wire import ModelLimits

    limits = ModelLimits(judge_max_tokens=2048, max_proxy_tokens=8192, trained_max_completion_length=2048)
    assert limits.advertised() == {"judge_max_tokens": 2048, "max_proxy_tokens": 8192,
                                   "trained_max_completion_length": 2048}
    assert ModelLimits.from_entry({"max_model_len": 6144, **limits.advertised()}) == ModelLimits(6144, 2048, 8192, 2048)
    assert ModelLimits.from_entry({"trained_max_completion_length": "2048"}).trained_max_completion_length is None
    # a judge without trained lengths (a tagged SFT export, a plain folder) leaves the field out, as docs/serving.md
    # says, rather than list it null
    assert "trained_max_completion_length" not in ModelLimits(judge_max_tokens=2048, max_proxy_tokens=8192).advertised()

"""LoRA (peft) with a trained score head, merged into the export; W&B logging through report_to, offline."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tests.support.fixtures_train import TINY_REGRESSION
from train.config import load_config


def test_lora_regression_run_merges_adapters_and_head_into_the_export(tiny_causal_dir, tmp_path, monkeypatch):
    """--lora trains adapters on the decoder's linear layers plus the whole score head; the export holds plain merged
    weights (no adapter files) that reload as the live peft model; report_to=wandb writes an offline run."""
    from safetensors.torch import load_file

    from train import regression

    import wandb

    # W&B keeps a process-wide setup (with the WANDB_DIR it first saw); a run logged earlier in this pytest process
    # (eval's offline-logging test) would otherwise send this run's files to that test's folder.
    wandb.teardown()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "wandb").mkdir()
    config = load_config(
        TINY_REGRESSION,
        {"output_dir": str(tmp_path / "run"), "model_name_or_path": str(tiny_causal_dir), "disable_tqdm": True,
         "lora": True, "lora_r": 8, "lora_alpha": 16, "max_steps": 2, "report_to": "wandb"},
    )  # fmt: skip
    result = regression.main(config)

    export = Path(result.export_dir)
    assert not list(export.rglob("adapter_*")) and not (Path(config.output_dir) / "trained").exists()
    check = result.export_report
    assert check["max_score_diff"] <= 1e-4 and check["max_logit_diff"] <= 1e-4 and check["score_norm"] > 0
    merged = load_file(str(export / "model.safetensors"))
    base = load_file(str(Path(tiny_causal_dir) / "model.safetensors"))
    assert not torch.equal(merged["model.layers.0.self_attn.q_proj.weight"], base["model.layers.0.self_attn.q_proj.weight"])
    assert torch.equal(merged["model.embed_tokens.weight"], base["model.embed_tokens.weight"])  # frozen under LoRA
    assert list((tmp_path / "wandb").rglob("offline-run-*")), "no offline W&B run was written"
    assert json.loads((export / "run.json").read_text(encoding="utf-8"))["config"]["lora"] is True

"""train.trainer_preflight.check_optimizer_and_schedule beside a DeepSpeed JSON with an optimizer block: transformers
then hands DeepSpeed a DummyOptim and never builds its own optimizer (transformers/integrations/deepspeed.py,
deepspeed_optim_sched), so the check builds only the schedule."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from train.config import ConfigError
from train.trainer_preflight import check_optimizer_and_schedule


def _deepspeed_json(tmp_path, with_optimizer: bool):
    settings = {"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
                "train_micro_batch_size_per_gpu": "auto"}
    if with_optimizer:
        settings["optimizer"] = {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto"}}
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return str(path)


def _args_and_config(tmp_path, deepspeed, optim="adamw_torch_xla", lr_scheduler_type="linear"):
    from transformers import TrainingArguments

    # the optimizer transformers cannot build on this machine (no torch_xla): a refusal of it proves it was built
    args = TrainingArguments(output_dir=str(tmp_path / "run"), optim=optim, lr_scheduler_type=lr_scheduler_type,
                             use_cpu=True, report_to="none", max_steps=10)
    config = SimpleNamespace(deepspeed=deepspeed, trainer_args={}, optim=optim, lr_scheduler_type=lr_scheduler_type)
    return args, config


def test_the_hf_optimizer_is_not_built_when_deepspeed_builds_its_own(tmp_path):
    args, config = _args_and_config(tmp_path, _deepspeed_json(tmp_path, with_optimizer=True))
    assert check_optimizer_and_schedule(args, config) is None


def test_the_hf_optimizer_is_still_built_beside_a_deepspeed_config_without_an_optimizer_block(tmp_path):
    args, config = _args_and_config(tmp_path, _deepspeed_json(tmp_path, with_optimizer=False))
    with pytest.raises(ConfigError, match=r"^optim 'adamw_torch_xla' refuses this config: .*torch_xla"):
        check_optimizer_and_schedule(args, config)


def test_the_schedule_is_still_checked_when_deepspeed_builds_the_optimizer(tmp_path):
    """cosine_with_min_lr without min_lr in lr_scheduler_kwargs: transformers' get_scheduler refuses it."""
    args, config = _args_and_config(tmp_path, _deepspeed_json(tmp_path, with_optimizer=True), optim="adamw_torch",
                                    lr_scheduler_type="cosine_with_min_lr")
    with pytest.raises(ConfigError, match=r"^lr_scheduler_type 'cosine_with_min_lr' refuses this config: "):
        check_optimizer_and_schedule(args, config)

"""train.config: a DeepSpeed JSON's numbers against the config's, refused when the config loads (transformers
collects the mismatches in HfTrainerDeepSpeedConfig.trainer_config_process and raises only inside train())."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train.config import ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]


def _deepspeed_json(tmp_path, **keys):
    """configs/deepspeed/zero3.json (every value "auto") with ``keys`` set, written to tmp_path/ds.json."""
    settings = {**json.loads((REPO / "configs" / "deepspeed" / "zero3.json").read_text(encoding="utf-8")), **keys}
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


def _load(path, **overrides):
    return load_config(None, {"deepspeed": str(path), "global_batch_size": 16, "per_device_train_batch_size": 4,
                              **overrides}, recipe="regression")


def _tail(path):
    return (f"deepspeed config {path}: ", ": transformers refuses a value that differs from the config's only once "
                                          "training starts; set these to \"auto\" (filled from this config) or to "
                                          "the config's values")


def test_batch_and_clipping_numbers_that_differ_are_refused_at_load(tmp_path):
    """Micro batch 8 and clipping 0.5 in the JSON, per-device batch 4 and max_grad_norm 1.0 in
    the config; also train_batch_size 32 against global_batch_size 16 (the same for any number of ranks)."""
    path = _deepspeed_json(tmp_path, train_micro_batch_size_per_gpu=8, gradient_clipping=0.5, train_batch_size=32)
    with pytest.raises(ConfigError) as refused:
        _load(path)
    head, tail = _tail(path)
    assert str(refused.value) == (head + "train_micro_batch_size_per_gpu 8 vs per_device_train_batch_size 4; "
                                  "train_batch_size 32 vs global_batch_size 16; gradient_clipping 0.5 vs "
                                  "max_grad_norm 1.0" + tail)


def test_the_same_numbers_as_the_config_load(tmp_path):
    path = _deepspeed_json(tmp_path, train_micro_batch_size_per_gpu=4, gradient_clipping=1, train_batch_size=16,
                           gradient_accumulation_steps=2, bf16={"enabled": False})
    assert _load(path, bf16="false").deepspeed == str(path)


def test_optimizer_block_numbers_are_compared_with_the_config_and_trainer_args(tmp_path):
    """lr against learning_rate, betas against adam_beta1/adam_beta2 (TrainingArguments' 0.9 and 0.999 unless
    trainer_args sets them), eps against adam_epsilon; a YAML '1e-8' in trainer_args is a number by then."""
    block = {"type": "AdamW", "params": {"lr": 2e-5, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": "auto"}}
    path = _deepspeed_json(tmp_path, optimizer=block)
    with pytest.raises(ConfigError) as refused:
        _load(path, learning_rate=1e-5, weight_decay=0.0)
    head, tail = _tail(path)
    assert str(refused.value) == (head + "optimizer.params.lr 2e-05 vs learning_rate 1e-05; optimizer.params.betas "
                                  "[0.9, 0.95] vs adam_beta1, adam_beta2 [0.9, 0.999]" + tail)
    config = _load(path, learning_rate=2e-5, weight_decay=0.0,
                   trainer_args={"adam_beta2": 0.95, "adam_epsilon": "1e-8"})
    assert config.trainer_args["adam_epsilon"] == 1e-8


@pytest.mark.parametrize(("bf16", "enabled", "refused"), [("true", False, True), ("false", True, True),
                                                         ("true", True, False), ("auto", True, False)])
def test_bf16_enabled_is_compared_with_a_bf16_the_config_fixes(tmp_path, bf16, enabled, refused):
    """'auto' follows the machine that trains (CUDA): compared there, by prepare (check_deepspeed_launch)."""
    path = _deepspeed_json(tmp_path, bf16={"enabled": enabled})
    if not refused:
        _load(path, bf16=bf16)
        return
    with pytest.raises(ConfigError, match=f"bf16.enabled {enabled!r} vs bf16 {bf16!r}"):
        _load(path, bf16=bf16)


def test_fp16_enabled_is_refused_for_the_recipes_never_train_in_fp16(tmp_path):
    with pytest.raises(ConfigError, match=r"fp16.enabled True vs fp16 \(always false here\) False"):
        _load(_deepspeed_json(tmp_path, fp16={"enabled": True}))


@pytest.mark.parametrize(("accumulation", "refused"), [(3, True), (0, True), (2, False), (4, False)])
def test_a_fixed_accumulation_no_number_of_ranks_gives_is_refused_at_load(tmp_path, accumulation, refused):
    """16 rows / 4 per device: accumulation 4 on 1 rank, 2 on 2, 1 on 4; 3 divides no way (0 is no accumulation).
    Whether a possible one is this launch's is checked in prepare, where the ranks are known."""
    path = _deepspeed_json(tmp_path, gradient_accumulation_steps=accumulation)
    if not refused:
        _load(path)
        return
    with pytest.raises(ConfigError, match=f"gradient_accumulation_steps {accumulation} vs global_batch_size 16 / "
                                          "per_device_train_batch_size 4 on no number of ranks"):
        _load(path)


def test_the_launch_check_compares_accumulation_and_an_auto_bf16(tmp_path):
    """check_deepspeed_launch (called by prepare): the derived accumulation and bf16 as resolved on this machine."""
    path = _deepspeed_json(tmp_path, gradient_accumulation_steps=2, bf16={"enabled": True})
    config = _load(path)  # bf16 'auto': not compared at load
    config.check_deepspeed_launch(2, True)
    with pytest.raises(ConfigError, match=r"gradient_accumulation_steps 2 vs the accumulation derived from "
                                          r"global_batch_size and the ranks 4; bf16.enabled True vs bf16 'auto' False"):
        config.check_deepspeed_launch(4, False)


@pytest.mark.parametrize("gather", [None, False])
def test_a_zero3_json_that_does_not_gather_the_weights_on_save_is_refused_at_load(tmp_path, gather):
    """Under ZeRO-3 transformers' save_model writes the weights only where the JSON gathers them on save
    (stage3_gather_16bit_weights_on_model_save, DeepSpeed's default false): else accelerate's get_state_dict raises,
    transformers writes a DeepSpeed checkpoint with no model.safetensors, and the export, after the whole run, failed
    to load it. Refused when the config loads, naming the key; true (or DeepSpeed's other spellings) loads, and
    ZeRO-2 needs none."""
    settings = json.loads((REPO / "configs" / "deepspeed" / "zero3.json").read_text(encoding="utf-8"))
    zero = {k: v for k, v in settings["zero_optimization"].items() if k != "stage3_gather_16bit_weights_on_model_save"}
    if gather is not None:
        zero["stage3_gather_16bit_weights_on_model_save"] = gather
    path = _deepspeed_json(tmp_path, zero_optimization=zero)
    with pytest.raises(ConfigError) as refused:
        _load(path)
    assert str(refused.value) == (
        f"deepspeed config {path}: zero_optimization stage 3 without stage3_gather_16bit_weights_on_model_save: "
        "true saves no model weights (a DeepSpeed checkpoint instead), so the export after training would find "
        "none to load; set it to true in zero_optimization (configs/deepspeed/zero3.json does)")
    for spelling in ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                     "stage3_gather_fp16_weights_on_model_save"):
        _load(_deepspeed_json(tmp_path, zero_optimization={**zero, spelling: True}))
    _load(_deepspeed_json(tmp_path, zero_optimization={"stage": 2}))


@pytest.mark.parametrize("stage", ["3", "2", 3.0, "x", 4, None])
def test_a_zero_stage_that_is_no_integer_0_to_3_is_refused_at_load(tmp_path, stage):
    """DeepSpeed reads "3" (and 3.0) as stage 3, while transformers and accelerate compare the value with the
    integer 3: a ZeRO-3 run under "3" would save its partitioned weights' placeholders as the model. Refused when
    the config loads, naming the value and how DeepSpeed reads it; a stage DeepSpeed cannot read is refused too."""
    zero = {"stage": stage, "stage3_gather_16bit_weights_on_model_save": True}
    path = _deepspeed_json(tmp_path, zero_optimization=zero)
    with pytest.raises(ConfigError) as refused:
        _load(path)
    shown = json.dumps(stage)
    if stage in ("3", "2", 3.0):
        assert str(refused.value) == (
            f"deepspeed config {path}: zero_optimization stage {shown} is not an integer: DeepSpeed reads it as stage "
            f"{int(float(stage))}, transformers and accelerate compare it with the integer stages and would take it "
            f"for another (under ZeRO-3, saving the partitioned weights' placeholders as the model); write "
            f"{int(float(stage))}")
    else:
        assert str(refused.value) == (f"deepspeed config {path}: zero_optimization stage {shown} is not one of 0, 1, "
                                      "2, 3 (DeepSpeed refuses it at start)")


@pytest.mark.parametrize("zero, stage", [({}, 0), ({"offload_param": {"device": "none"}}, 0), ({"stage": 2}, 2),
                                         ({"stage": 3, "stage3_gather_16bit_weights_on_model_save": True}, 3)])
def test_the_stage_the_loader_checks_is_the_stage_zero_stage_reads(tmp_path, zero, stage):
    """One lookup of the written stage serves the load's checks and ``zero_stage``: a JSON that writes no
    stage in its ``zero_optimization`` block is stage 0 to both (it loads; nothing to refuse)."""
    from train.config import zero_stage

    path = _deepspeed_json(tmp_path, zero_optimization=zero)
    config = _load(path)
    assert zero_stage(config.deepspeed_settings()) == stage

"""LoRA without DeepSpeed: the regression model the recipe builds trains every tensor it trains in float32.

The base loads in bf16 under LoRA (train.training_arguments.weights_dtype); peft upcasts only its adapter layers, so
the score head's modules_to_save copy would train in bf16, where AdamW's steps of ~1e-5 round away
(train.lora.trainable_in_float32).
"""

from __future__ import annotations

import torch

from train.config import load_config
from train.training_arguments import weights_dtype

TINY_REGRESSION = "configs/train/tiny/regression.yaml"
HEAD = "base_model.model.score.modules_to_save.default.weight"


def recipe_model(config, base_dir, qwen_tokenizer):
    """The model exactly as train.regression.main builds it for this config."""
    from train import regression

    return regression.build_model(config, str(base_dir), weights_dtype(config), qwen_tokenizer.pad_token_id)


def test_lora_bf16_without_deepspeed_trains_every_parameter_in_float32(tiny_causal_dir, qwen_tokenizer, tmp_path):
    """--lora true, bf16, deepspeed null: the frozen base is bf16, and every trainable tensor (the adapters and the
    score head's trainable copy) is float32."""
    config = load_config(TINY_REGRESSION, {"lora": True, "bf16": "true", "deepspeed": None,
                                           "output_dir": str(tmp_path / "run")})  # fmt: skip
    assert weights_dtype(config) == torch.bfloat16
    model = recipe_model(config, tiny_causal_dir, qwen_tokenizer)
    trainable = {name: param.dtype for name, param in model.named_parameters() if param.requires_grad}
    assert HEAD in trainable and "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight" in trainable
    assert {name: dtype for name, dtype in trainable.items() if dtype != torch.float32} == {}
    # 2 layers x 7 linear modules x (lora_A, lora_B) + the head's copy
    assert len(trainable) == 2 * 7 * 2 + 1
    frozen = dict(model.named_parameters())
    assert frozen["base_model.model.model.embed_tokens.weight"].dtype == torch.bfloat16
    assert frozen["base_model.model.score.original_module.weight"].dtype == torch.bfloat16


def test_under_deepspeed_the_trainable_tensors_are_left_to_its_float32_master_weights(tiny_causal_dir,
                                                                                       qwen_tokenizer, tmp_path):
    """With DeepSpeed the model is not upcast: its optimizer keeps float32 master copies of the trainable tensors (and
    under ZeRO-3 they are partitioned placeholders when the recipe builds the model)."""
    config = load_config(TINY_REGRESSION, {"lora": True, "bf16": "true", "deepspeed": "configs/deepspeed/zero2.json",
                                           "output_dir": str(tmp_path / "run")})  # fmt: skip
    model = recipe_model(config, tiny_causal_dir, qwen_tokenizer)
    assert dict(model.named_parameters())[HEAD].dtype == torch.bfloat16

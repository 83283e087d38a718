"""LoRA (peft) for the recipes that train adapters: which layers get them, and the ``LoraConfig`` from a ``TrainConfig``."""

from __future__ import annotations

from train.config import TrainConfig

__all__ = ["QWEN2_LINEAR_MODULES", "lora_config", "target_modules", "trainable_in_float32"]

#: The linear layers of a Qwen2 decoder block: what LoRA's "all-linear" means here. Listing them keeps the LM head
#: and the regression ``score`` head out of the adapters (the score head is trained in full instead).
QWEN2_LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def target_modules(config: TrainConfig) -> list[str]:
    """The module names that get adapters: none when LoRA is off, the decoder's linear layers for "all-linear"."""
    names = config.adapter_names()
    return list(QWEN2_LINEAR_MODULES) if names == ["all-linear"] else names


def lora_config(config: TrainConfig, *, modules_to_save: list[str] | None = None):
    """A peft ``LoraConfig`` from the config, or None when LoRA is off."""
    if not config.lora:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=target_modules(config),
        modules_to_save=modules_to_save,
        task_type="CAUSAL_LM",
    )


def trainable_in_float32(model) -> list[str]:
    """Upcast every trainable parameter of a peft model to float32, in place; returns the names upcast.

    Under LoRA the base loads in bf16 (``train.training_arguments.weights_dtype``), and peft upcasts only the adapter
    layers: ``cast_adapter_dtype`` (peft/tuners/tuners_utils.py in huggingface/peft) walks ``BaseTunerLayer`` modules,
    so a ``modules_to_save`` copy (the regression ``score`` head) stays in the base's bf16. AdamW would then update
    that head in place in bf16, where a step of ~1e-5 on a weight of ~0.02 is under half of bf16's spacing and
    rounds away: the head would barely train. The frozen base stays bf16; bf16 autocast (``bf16=True``) runs the
    head's matmul as before. Not for DeepSpeed, whose optimizer keeps float32 master copies itself and whose
    ZeRO-3 parameters are placeholders here.
    """
    import torch

    upcast = []
    for name, param in model.named_parameters():
        if param.requires_grad and param.is_floating_point() and param.dtype != torch.float32:
            param.data = param.data.float()
            upcast.append(name)
    return upcast

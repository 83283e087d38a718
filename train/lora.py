"""LoRA (peft) for the recipes that train adapters: which layers get them, and the ``LoraConfig`` from a ``TrainConfig``."""

from __future__ import annotations

from train.config import TrainConfig

__all__ = ["QWEN2_LINEAR_MODULES", "lora_config"]

#: The linear layers of a Qwen2 decoder block: what LoRA's "all-linear" means here. Listing them keeps the LM head
#: and the regression ``score`` head out of the adapters (the score head is trained in full instead).
QWEN2_LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_config(config: TrainConfig, *, modules_to_save: list[str] | None = None):
    """A peft ``LoraConfig`` from the config, or None when LoRA is off."""
    if not config.lora:
        return None
    from peft import LoraConfig

    if config.lora_target_modules == "all-linear":
        targets = list(QWEN2_LINEAR_MODULES)
    else:
        targets = [name.strip() for name in config.lora_target_modules.split(",") if name.strip()]
    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=targets,
        modules_to_save=modules_to_save,
        task_type="CAUSAL_LM",
    )

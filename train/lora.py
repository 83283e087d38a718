"""LoRA (peft) for the recipes that train adapters: which layers get them, and the ``LoraConfig`` from a ``TrainConfig``."""

from __future__ import annotations

from train.config import TrainConfig

__all__ = ["QWEN2_LINEAR_MODULES", "check_target_modules", "lora_config", "target_modules", "trainable_in_float32"]

#: The linear layers of a Qwen2 decoder block: what LoRA's "all-linear" means here. Listing them keeps the LM head
#: and the regression ``score`` head out of the adapters (the score head is trained in full instead).
QWEN2_LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def target_modules(config: TrainConfig) -> list[str]:
    """The module names that get adapters: none when LoRA is off, the decoder's linear layers for "all-linear"."""
    names = config.adapter_names()
    return list(QWEN2_LINEAR_MODULES) if names == ["all-linear"] else names


def lora_config(config: TrainConfig, *, modules_to_save: list[str] | None = None, model=None):
    """A peft ``LoraConfig`` from the config, or None when LoRA is off; with ``model``, each target checked against
    its modules first (``check_target_modules``)."""
    if not config.lora:
        return None
    from peft import LoraConfig

    if model is not None:
        check_target_modules(config, model)

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=target_modules(config),
        modules_to_save=modules_to_save,
        task_type="CAUSAL_LM",
    )


def check_target_modules(config: TrainConfig, model) -> None:
    """Refuse a ``lora_target_modules`` name that matches no module of ``model``.

    peft matches a target by a module's full name or its last parts (``name == target`` or ``name.endswith("." +
    target)``: ``check_target_module_exists`` in peft/tuners/tuners_utils.py) and refuses only a list of which no
    name matches: ``q_prj,v_proj`` would train adapters on v_proj alone, while run.json, the model card and
    the adapter's own config record both names.

    Raises:
        ConfigError: naming each unmatched target and the nearest module names the model has.
    """
    import difflib

    from train.config import ConfigError

    names = [name for name, _ in model.named_modules() if name]
    missing = [target for target in target_modules(config)
               if not any(name == target or name.endswith("." + target) for name in names)]
    if missing:
        leaves = sorted({name.rsplit(".", 1)[-1] for name in names})
        close = sorted({near for target in missing for near in difflib.get_close_matches(target, leaves, n=1)})
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"lora_target_modules: {', '.join(missing)} matches no module of the base model{hint}; "
                          f"peft would put no adapter there and train the other names alone. Its linear layers: "
                          f"{', '.join(QWEN2_LINEAR_MODULES)} ('all-linear')")


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

"""LoRA (peft) for the recipes that train adapters: which layers get them, and the ``LoraConfig`` from a ``TrainConfig``."""

from __future__ import annotations

from train.config import TrainConfig

__all__ = ["QWEN2_LINEAR_MODULES", "QWEN2_TIED_EMBEDDINGS", "check_target_modules", "lora_config", "matches",
           "target_modules", "tied_adapter_refusal", "trainable_in_float32"]

#: The linear layers of a Qwen2 decoder block: what LoRA's "all-linear" means here. Listing them keeps the LM head
#: and the regression ``score`` head out of the adapters (the score head is trained in full instead).
QWEN2_LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
#: The full names of a Qwen2 causal LM's input and output embeddings, one matrix where ``tie_word_embeddings``: the
#: modules an adapter must not sit on there (``check_target_modules`` finds them in a loaded model by their weight).
QWEN2_TIED_EMBEDDINGS = ("model.embed_tokens", "lm_head")


def matches(target: str, name: str) -> bool:
    """Whether peft puts the adapter of ``target`` on the module named ``name``: the full name, or its last parts
    (``check_target_module_exists`` in peft/tuners/tuners_utils.py)."""
    return name == target or name.endswith("." + target)


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
        check_target_modules(config, model, modules_to_save)

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=target_modules(config),
        modules_to_save=modules_to_save,
        task_type="CAUSAL_LM",
    )


def check_target_modules(config: TrainConfig, model, modules_to_save: list[str] | None = None) -> None:
    """Refuse a ``lora_target_modules`` name that would put no adapter on ``model``.

    peft matches a target by a module's full name or its last parts (``name == target`` or ``name.endswith("." +
    target)``: ``check_target_module_exists`` in peft/tuners/tuners_utils.py) and refuses only a list of which no
    name matches: ``q_prj,v_proj`` would train adapters on v_proj alone, while run.json, the model card and
    the adapter's own config record both names. The same function leaves out every module a ``modules_to_save``
    name matches (as a whole part of its name, or one of its submodules): such a target (the regression ``score``
    head) is trained in full, not by an adapter, and recorded as an adapter all the same.

    A name that matches a module peft cannot adapt (a container such as ``mlp`` or ``self_attn``, a norm, the rotary
    embedding) is refused here by name: peft's ``get_peft_model`` raises a ``ValueError`` on it ("Target module ...
    is not supported") once the run folder is claimed. So is a name that matches the input or output embeddings of
    a model that ties them (``tie_word_embeddings``: Qwen2.5-0.5B to 3B, the tiny base): the adapter trains the one
    use of the shared matrix it sits on, and merged at export (``train.export.load_trained``) it is written into
    that matrix, which the other use reads too, so the exported judge is not the one trained.

    Raises:
        ConfigError: naming each unmatched target and the nearest layer names the model has (modules without
            children: a container such as ``mlp`` is one peft refuses as a target), each target that matches only
            modules trained in full, a target that names a kind of module peft cannot adapt, or one on the tied
            embeddings.
    """
    import difflib
    import re

    from train.config import ConfigError

    modules = [(name, module) for name, module in model.named_modules() if name]
    # peft's own pattern for a modules_to_save name, unescaped as peft uses it
    saved = [re.compile(rf"(^|.*\.){kept}($|\..*)") for kept in modules_to_save or ()]
    missing, in_full, unfit, tied = [], [], [], []
    shared = _tied_embeddings(model)
    for target in target_modules(config):
        matched = [(name, module) for name, module in modules if matches(target, name)]
        adapted = [(name, module) for name, module in matched if not any(pattern.match(name) for pattern in saved)]
        if not matched:
            missing.append(target)
        elif not adapted:
            in_full.append(target)
        elif any(not _adaptable(module) for _, module in adapted):
            unfit.append((target, sorted({type(module).__name__ for _, module in adapted if not _adaptable(module)})))
        elif any(module is embedding for _, module in adapted for embedding in shared):
            tied.append(target)
    if missing:
        leaves = sorted({name.rsplit(".", 1)[-1] for name, module in modules if next(module.children(), None) is None})
        close = sorted({near for target in missing for near in difflib.get_close_matches(target, leaves, n=1)})
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"lora_target_modules: {', '.join(missing)} matches no module of the base model{hint}; "
                          f"peft would put no adapter there and train the other names alone. Its linear layers: "
                          f"{', '.join(QWEN2_LINEAR_MODULES)} ('all-linear')")
    if in_full:
        raise ConfigError(f"lora_target_modules: {', '.join(in_full)} {'is' if len(in_full) == 1 else 'are'} trained "
                          f"in full (modules_to_save), not by an adapter; remove {'it' if len(in_full) == 1 else 'them'}"
                          " from lora_target_modules")
    if unfit:
        names = "; ".join(f"{target} names {', '.join(kinds)} modules" for target, kinds in unfit)
        raise ConfigError(f"lora_target_modules: {names}, and peft puts adapters only on linear, embedding and "
                          "convolution layers (it would stop with 'Target module ... is not supported'); name the "
                          f"layers inside instead. Its linear layers: {', '.join(QWEN2_LINEAR_MODULES)} ('all-linear')")
    if tied:
        raise tied_adapter_refusal(tied, "a base")


def tied_adapter_refusal(names: list[str], base: str):
    """The ``ConfigError`` refusing adapters on ``names`` of a base (in words: ``base``) that ties its LM head to its
    input embeddings: one wording for the check after the model loads (``check_target_modules``) and the regression
    recipe's before the run folder is claimed (``train.regression.refuse_unfit_base``)."""
    from train.config import ConfigError

    listed = ", ".join(names)
    return ConfigError(f"lora_target_modules: an adapter on {listed} of {base} whose lm_head is its input embedding "
                       "matrix (tie_word_embeddings) would be merged into both at export, so the exported judge would "
                       f"not be the one trained; remove {listed}, or train an untied base (T-lite, T-pro)")


def _adaptable(module) -> bool:
    """Whether peft's LoRA puts an adapter on ``module``: the layer types ``LoraModel._create_new_module`` takes
    (peft/tuners/lora/model.py in huggingface/peft; the others raise "Target module ... is not supported")."""
    import torch
    from transformers.pytorch_utils import Conv1D

    return isinstance(module, (torch.nn.Linear, torch.nn.Embedding, torch.nn.Conv1d, torch.nn.Conv2d,
                               torch.nn.Conv3d, torch.nn.MultiheadAttention, Conv1D))


def _tied_embeddings(model) -> tuple:
    """The input and output embedding modules of ``model`` when they share one weight, else none."""
    inputs, outputs = model.get_input_embeddings(), model.get_output_embeddings()
    if inputs is None or outputs is None or getattr(inputs, "weight", None) is not getattr(outputs, "weight", None):
        return ()
    return inputs, outputs


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

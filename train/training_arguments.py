"""The trainer's arguments from a ``TrainConfig``: batch arithmetic over ranks, precision, the keywords every recipe
passes to ``transformers.TrainingArguments`` (or a trl subclass), and torch.distributed set up before the model.

All but ``init_distributed`` are pure functions of the config (and ``$WORLD_SIZE``).
``train.recipe_steps.PreparedRun.training_arguments`` calls them for every recipe, ``bench/train_throughput.py`` to
time the same arguments.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from train.config import ConfigError, TrainConfig

__all__ = ["Launch", "launch_arithmetic", "use_bf16", "training_kwargs", "init_distributed"]


@dataclass(frozen=True)
class Launch:
    """How one optimizer step is spread over ranks: global = per_device x accumulation x world_size."""

    world_size: int
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    global_batch_size: int

    def describe(self) -> str:
        return (
            f"global batch {self.global_batch_size} = {self.per_device_train_batch_size} per device x "
            f"{self.gradient_accumulation_steps} accumulation steps x {self.world_size} ranks"
        )


def launch_arithmetic(config: TrainConfig, world_size: int | None = None) -> Launch:
    """Derive gradient accumulation so the global batch is ``config.global_batch_size`` on this many ranks.

    Args:
        config: the resolved config.
        world_size: ranks taking part (default: ``$WORLD_SIZE`` set by torchrun/accelerate/deepspeed, else 1).

    Raises:
        ConfigError: when the global batch is not a multiple of per-device batch x world size.
    """
    world = int(os.environ.get("WORLD_SIZE", "1")) if world_size is None else world_size
    per_step = config.per_device_train_batch_size * world
    if config.global_batch_size % per_step:
        raise ConfigError(
            f"global_batch_size {config.global_batch_size} is not a multiple of per_device_train_batch_size "
            f"{config.per_device_train_batch_size} x {world} ranks = {per_step}; change per_device_train_batch_size "
            "or the number of ranks"
        )
    return Launch(world, config.per_device_train_batch_size, config.global_batch_size // per_step, config.global_batch_size)


def use_bf16(config: TrainConfig) -> bool:
    """bf16 on when asked, or with ``auto`` when CUDA is available."""
    import torch

    if config.bf16 == "auto":
        return torch.cuda.is_available()
    return config.bf16 == "true"


def training_kwargs(config: TrainConfig, launch: Launch, *, has_eval: bool) -> dict[str, Any]:
    """Keyword arguments for ``transformers.TrainingArguments`` / ``trl.SFTConfig`` shared by every recipe.

    Best-checkpoint tracking (``metric_for_best_model="eval_loss"``) is on whenever there is a validation set:
    checkpoint rotation (``save_total_limit``) then never deletes the best checkpoint.
    """
    import torch

    report_to = [name.strip() for name in config.report_to.split(",") if name.strip() and name.strip() != "none"]
    kwargs: dict[str, Any] = {
        "output_dir": config.output_dir,
        "seed": config.seed,
        "data_seed": config.seed,
        "learning_rate": config.learning_rate,
        "lr_scheduler_type": config.lr_scheduler_type,
        "warmup_steps": config.warmup_steps,
        "num_train_epochs": config.num_train_epochs,
        "max_steps": config.max_steps,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "per_device_eval_batch_size": config.per_device_eval_batch_size,
        "gradient_accumulation_steps": launch.gradient_accumulation_steps,
        "weight_decay": config.weight_decay,
        "max_grad_norm": config.max_grad_norm,
        "optim": config.optim,
        "bf16": use_bf16(config),
        "fp16": False,
        "use_cpu": not torch.cuda.is_available(),
        "gradient_checkpointing": config.gradient_checkpointing,
        # Non-reentrant checkpointing works with frozen embeddings (LoRA) and ZeRO-3 without extra hooks.
        "gradient_checkpointing_kwargs": {"use_reentrant": False} if config.gradient_checkpointing else None,
        "deepspeed": config.deepspeed,
        "save_strategy": "steps",
        "save_steps": config.save_steps,
        "save_total_limit": config.save_total_limit,
        "eval_strategy": "steps" if has_eval else "no",
        "eval_steps": config.save_steps if has_eval else None,
        "metric_for_best_model": "eval_loss" if has_eval else None,
        "greater_is_better": False if has_eval else None,
        "load_best_model_at_end": False,
        "logging_steps": config.logging_steps,
        "logging_first_step": True,
        "report_to": report_to,
        "run_name": config.run_name or Path(config.output_dir).name,
        "dataloader_num_workers": config.dataloader_num_workers,
        "disable_tqdm": config.disable_tqdm,
    }
    return kwargs


def init_distributed(args) -> None:
    """Set up torch.distributed (and DeepSpeed's view of it) before the model is loaded.

    transformers sets up devices lazily, and on CPU accelerate leaves DeepSpeed's communicator alone; ZeRO-3's
    zero.Init inside ``from_pretrained`` would then see a world of one rank and reject the batch arithmetic.
    DeepSpeed wraps the process group accelerate created (gloo on CPU, NCCL on GPU); on GPU this is a no-op.
    """
    args.device  # noqa: B018 - the property initialises the process group
    if args.deepspeed:
        import deepspeed

        deepspeed.init_distributed()

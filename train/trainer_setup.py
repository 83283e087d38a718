"""What both recipes set up the same way: launch arithmetic, trainer arguments, base model, LoRA, checkpoints.

Kept out of the recipes so that ``train/seq2seq.py`` and ``train/regression.py`` read as the steps they take.
Nothing here trains; every function is a small pure-ish step the recipes call in their config/model/trainer
sections.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from train.config import TINY_MODEL, ConfigError, TrainConfig

__all__ = [
    "Launch",
    "launch_arithmetic",
    "use_bf16",
    "training_kwargs",
    "resolve_base_model",
    "load_tokenizer",
    "lora_config",
    "QWEN2_LINEAR_MODULES",
    "latest_checkpoint",
    "check_output_dir",
    "setup_logging",
    "is_main_process",
    "init_distributed",
]

logger = logging.getLogger(__name__)

#: The linear layers of a Qwen2 decoder block: what LoRA's "all-linear" means here. Listing them keeps the LM head
#: and the regression ``score`` head out of the adapters (the score head is trained in full instead).
QWEN2_LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


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
    """Keyword arguments for ``transformers.TrainingArguments`` / ``trl.SFTConfig`` shared by both recipes.

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


def resolve_base_model(config: TrainConfig) -> str:
    """The base model folder or hub id; builds the tiny Qwen2 when ``model_name_or_path`` is ``tiny-qwen2``.

    Every rank may call this at once (before torch.distributed is up): each builds into its own temporary folder
    and renames it into place; a rank that finds the folder already there uses it (the build is deterministic).
    """
    if config.model_name_or_path != TINY_MODEL:
        return config.model_name_or_path
    import tempfile

    from judge.tiny_models import build_tiny_qwen2

    target = Path(config.output_dir) / "base-model"
    if not (target / "config.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".base-model-", dir=target.parent))
        build_tiny_qwen2(scratch, kind="causal", seed=config.seed)
        try:
            scratch.rename(target)
        except OSError:  # another rank got there first
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)
    return str(target)


def load_tokenizer(base: str):
    """The base model's tokenizer, with a pad token that is not the end-of-turn token.

    Qwen2.5 tokenizers pad with ``<|endoftext|>``; a tokenizer without a pad token gets it when the vocabulary has
    it, else its eos (the score head then finds the last token through the attention mask).
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = "<|endoftext|>" if "<|endoftext|>" in tokenizer.get_vocab() else tokenizer.eos_token
    tokenizer.padding_side = "right"
    return tokenizer


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


_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The ``checkpoint-N`` folder with the highest N in ``output_dir``, or None."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name))]
    return max(found)[1] if found else None


def check_output_dir(config: TrainConfig) -> Path | None:
    """Refuse to mix runs: ``--resume`` needs a checkpoint, and a fresh run needs a folder without one (or
    ``--overwrite_output_dir``, which deletes the earlier run's checkpoints and export first, on rank 0).

    Returns:
        The checkpoint to resume from, or None for a fresh run.
    """
    checkpoint = latest_checkpoint(config.output_dir)
    if config.resume and checkpoint is None:
        raise ConfigError(f"--resume: no checkpoint-N folder in {config.output_dir} to resume from")
    if not config.resume and checkpoint is not None:
        if not config.overwrite_output_dir:
            raise ConfigError(
                f"{config.output_dir} already holds {checkpoint.name}; pass --resume to continue that run, "
                "--overwrite_output_dir to start over, or choose another output_dir"
            )
        if is_main_process():
            import shutil

            folder = Path(config.output_dir)
            for path in [*folder.glob("checkpoint-*"), folder / "export", folder / "trained"]:
                shutil.rmtree(path, ignore_errors=True)
            logger.warning("--overwrite_output_dir: deleted the earlier run's checkpoints and export in %s", folder)
        return None
    return checkpoint


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


def is_main_process() -> bool:
    """Global rank 0 (from the launcher's ``RANK``; True without a launcher)."""
    return os.environ.get("RANK", "0") == "0"


def setup_logging() -> None:
    """This package's logs at INFO on global rank 0 (WARNING elsewhere); transformers and DeepSpeed at WARNING.

    Configures the root logger only when nothing else has (a host program or pytest keeps its own handlers).
    """
    import transformers

    level = logging.INFO if is_main_process() else logging.WARNING
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=level)
    logging.getLogger("train").setLevel(level)
    transformers.utils.logging.set_verbosity_warning()


def train_and_export(trainer, config: TrainConfig, *, stopper, resume_from: Path | None, mode: str, model_cls,
                     tokenizer, train_rows: list[dict[str, Any]], base_model: str, dtype):
    """The tail both recipes share: train (resuming if asked), stop cleanly on a signal, else export and record.

    Args:
        trainer: the built trl/transformers trainer.
        stopper: the installed-on-demand ``preemption.SaveAndStopOnSignal`` callback of that trainer.
        resume_from: the checkpoint to resume from, or None.
        mode, model_cls: what ``export.export_after_training`` exports and reloads it as.
        train_rows: the training rows (``prompt``, ``completion``); the two shortest probe the export.
        base_model, dtype, tokenizer: as the recipe loaded them.

    Returns:
        The ``RunResult``; its ``export_dir`` is None when a signal stopped the run (a checkpoint was saved and the
        Slurm job requeued; resume with ``--resume``).
    """
    import judge
    from train import export, preemption, provenance

    stopper.install()
    try:
        trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    finally:
        stopper.uninstall()
    result = provenance.RunResult(
        output_dir=config.output_dir,
        export_dir=None,
        global_step=trainer.state.global_step,
        final_learning_rate=float(trainer.lr_scheduler.get_last_lr()[0]),
        log_history=list(trainer.state.log_history),
        stopped_by_signal=stopper.received,
    )
    if stopper.stopped_at_step is not None:
        logger.warning("stopped at step %d by a signal; resume with --resume", stopper.stopped_at_step)
        preemption.requeue_slurm_job(stopper)
        return result

    export_dir = Path(config.output_dir) / "export"
    # The two shortest training rows: rank 0 reloads the export on CPU to compare, and a 7B forward there is slow.
    probe_rows = sorted(train_rows, key=lambda row: len(row["prompt"]) + len(row["completion"]))[:2]
    probe_texts = [judge.apply_chat(tokenizer, row["prompt"], row["completion"]) for row in probe_rows]
    result.export_report = export.export_after_training(
        trainer,
        mode=mode,
        model_cls=model_cls,
        tokenizer=tokenizer,
        probe_texts=probe_texts,
        base_model=base_model,
        dtype=dtype,
        export_dir=export_dir,
    )
    result.export_dir = str(export_dir)
    if trainer.is_world_process_zero():
        provenance.record_result(config.output_dir, result)
    return result

"""The trainer's arguments from a ``TrainConfig``: batch arithmetic over ranks, precision, the keywords every recipe
passes to ``transformers.TrainingArguments`` (or a trl subclass), and torch.distributed set up before the model.

All but ``stand_in_for_a_launcher`` and ``init_distributed`` are pure functions of the config (and ``$WORLD_SIZE``).
``train.recipe_steps.PreparedRun.training_arguments`` calls them for every recipe, ``bench/train_throughput.py`` to
time the same arguments.

Why one module of ~530 lines: what ``training_kwargs`` sets and what ``check_trainer_args`` refuses in
``trainer_args`` are two sides of one table (``RECIPE_SET``), and the check builds the arguments through
``training_kwargs`` and the batch arithmetic (``check_training_arguments``); apart, each half would read the other's
private rules.
"""

from __future__ import annotations

import enum
import os
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.plumbing.config_files import ConfigError
from judge.plumbing.json_reading import counted

#: A ``train.config.TrainConfig`` (or a subclass). Not imported: the config's own validation calls
#: ``check_trainer_args`` here, and the import would close a cycle (tests/unit/test_import_cycles.py).
TrainConfig = Any

__all__ = ["Launch", "launch_arithmetic", "check_warmup", "warmup_within_the_run", "use_bf16", "weights_dtype", "training_kwargs", "arguments_fields", "check_trainer_args",
           "recipe_arguments_class", "check_training_arguments", "check_transformers_names",
           "DERIVED_ONLY", "RECIPE_SET", "RECIPE_FIXED", "stand_in_for_a_launcher", "init_distributed", "is_main_process", "launched_world_size"]


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
            f"{counted(self.gradient_accumulation_steps, 'accumulation step')} x {counted(self.world_size, 'rank')}"
        )


def launch_arithmetic(config: TrainConfig, world_size: int | None = None) -> Launch:
    """Derive gradient accumulation so the global batch is ``config.global_batch_size`` on this many ranks.

    Args:
        config: the resolved config.
        world_size: ranks taking part (default: ``$WORLD_SIZE`` set by torchrun/accelerate/deepspeed, else 1).

    Raises:
        ConfigError: when the global batch is not a multiple of per-device batch x world size.
    """
    if world_size is None and "WORLD_SIZE" not in os.environ:
        _refuse_data_parallel_without_a_launcher()
    world = launched_world_size() if world_size is None else world_size
    per_step = config.per_device_train_batch_size * world
    if config.global_batch_size % per_step:
        raise ConfigError(
            f"global_batch_size {config.global_batch_size} is not a multiple of per_device_train_batch_size "
            f"{config.per_device_train_batch_size} x {counted(world, 'rank')} = {per_step}; change "
            "per_device_train_batch_size or the number of ranks"
        )
    return Launch(world, config.per_device_train_batch_size, config.global_batch_size // per_step, config.global_batch_size)


def check_warmup(warmup_steps: float, total_steps: int, *, where: str = "max_steps") -> None:
    """Refuse a warm-up that lasts the whole run.

    transformers' schedules raise the rate linearly over the warm-up and decay it only after
    (``get_linear_schedule_with_warmup`` and the others in transformers/optimization.py): with ``warmup_steps`` at
    or above the run's optimizer steps, the rate never reaches ``learning_rate`` and never decays to 0 (linear,
    20 warm-up steps in a run of 12: the last step at 0.55 x the peak, the run ending at 0.6 x), while run.json and
    the model card record the peak and the schedule. The paper's rate goes from its peak to 0 (arXiv 2505.24616v3,
    Section 3.2). A fraction below 1 is transformers' share of the run, which never lasts it.

    Args:
        warmup_steps: the config's ``warmup_steps``.
        total_steps: the run's optimizer steps.
        where: what ``total_steps`` is, for the message.

    Raises:
        ConfigError: naming ``warmup_steps`` and the run's steps.
    """
    if warmup_steps >= 1 and warmup_steps >= total_steps:
        raise ConfigError(f"warmup_steps {warmup_steps:g} is not below the run's {where} {total_steps}: the learning "
                          "rate would rise for the whole run, never reaching learning_rate nor decaying to 0; lower "
                          "warmup_steps (0: the decay starts at the first step)")


def warmup_within_the_run():
    """A callback that applies ``check_warmup`` at ``on_train_begin``, where the run's steps are known in epoch mode
    (``state.max_steps``, counted from the data by ``trainer.train()``); add it before any callback that acts on the
    run folder then (``train.recipe_steps``: the deletion of an ``--overwrite-output-dir`` run's predecessor), so
    that the refusal leaves the folder as it was."""
    from transformers import TrainerCallback

    class WarmupWithinTheRun(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            check_warmup(args.warmup_steps, state.max_steps, where="optimizer steps")

    return WarmupWithinTheRun()


def launched_world_size() -> int:
    """``$WORLD_SIZE`` (set by torchrun, accelerate and deepspeed; 1 without one), a ConfigError naming it unless it
    is a positive integer (``abc`` was a ValueError traceback, ``0`` a ZeroDivisionError, ``-1`` a negative
    accumulation)."""
    value = os.environ.get("WORLD_SIZE", "1")
    try:
        world = int(value)
    except ValueError:
        world = 0
    if world < 1:
        raise ConfigError(f"WORLD_SIZE={value!r} in the environment is not a positive number of ranks; unset it, or "
                          "let the launcher (torchrun, accelerate, deepspeed) set it")
    return world


def _refuse_data_parallel_without_a_launcher() -> None:
    """ConfigError when more than one GPU is visible to a process no launcher started: transformers' Trainer then
    wraps the model in ``nn.DataParallel`` over all of them and multiplies the batch by their count, so the step
    would take n_gpu times the global batch the accumulation was derived for (and the log would say 256)."""
    import torch

    n_gpu = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n_gpu > 1:
        raise ConfigError(
            f"{n_gpu} GPUs are visible and no launcher set WORLD_SIZE: start one process per GPU (`torchrun "
            f"--nproc_per_node {n_gpu} --no-python judge-train ...`, or `judge-train submit` on Slurm), or make one "
            "GPU visible (CUDA_VISIBLE_DEVICES=0)"
        )


def use_bf16(config: TrainConfig) -> bool:
    """bf16 on when asked, or with ``auto`` when CUDA is available."""
    import torch

    if config.bf16 == "auto":
        return torch.cuda.is_available()
    return config.bf16 == "true"


def weights_dtype(config: TrainConfig):
    """The dtype the trained weights are loaded in.

    bf16 only where something keeps a float32 copy of them: DeepSpeed (its optimizer's fp32 master weights), or LoRA
    (the bf16 base is frozen; peft keeps the adapters in float32, and the recipe upcasts the other trainable tensors,
    the regression head's ``modules_to_save`` copy, which peft leaves in bf16: ``train.lora.trainable_in_float32``).
    Without either, AdamW would update bf16 weights
    in place, and an update of ~1e-5 (the paper's peak learning rate) is below half of bf16's spacing at a weight
    of 0.02 (~3.9e-5): most updates would round away. So those runs load float32 weights and ``bf16=True`` runs the
    compute under autocast.
    """
    import torch

    if use_bf16(config) and (config.deepspeed or config.lora):
        return torch.bfloat16
    return torch.float32


#: TrainingArguments keys the recipes set from the config under another rule, never copied by name: the config
#: spells ``bf16`` 'auto'/'true'/'false', ``report_to`` as comma-separated text and ``run_name`` None for "the
#: output folder's name".
_SPELT_DIFFERENTLY = frozenset({"bf16", "report_to", "run_name"})
#: The one key ``trainer_args`` may not set: it is derived from ``global_batch_size`` and the world size.
DERIVED_ONLY = frozenset({"gradient_accumulation_steps"})
#: Keys ``training_kwargs`` sets itself, which ``trainer_args`` would otherwise write over while run.json records
#: the settings they follow -> what decides each. ``check_trainer_args`` refuses them at any value but the one in
#: ``RECIPE_FIXED``. ``save_strategy`` is left out on purpose: it is the user's to set (docs/training.md).
RECIPE_SET: dict[str, str] = {
    "fp16": "bf16 ('auto', 'true' or 'false'): the recipes train in bfloat16 or float32 only",
    "data_seed": "seed, which orders the data as it seeds the model",
    "eval_strategy": "eval_fraction or eval_data: evaluated every save_steps whenever there is a validation set",
    "eval_steps": "save_steps, so each checkpoint holds its validation loss",
    "metric_for_best_model": "eval_fraction or eval_data: the validation loss whenever there is a validation set, "
                             "so checkpoint rotation keeps the best checkpoint",
    "greater_is_better": "eval_fraction or eval_data: false, for the validation loss, whenever there is a "
                         "validation set",
    "use_cpu": "the machine: on where no GPU is visible",
    "logging_first_step": "the recipe: always true (the first step's loss is logged whatever logging_steps says)",
    "gradient_checkpointing_kwargs": "gradient_checkpointing: non-reentrant checkpointing, which works with LoRA's "
                                     "frozen embeddings and ZeRO-3 without extra hooks",
}  # fmt: skip
#: The ``RECIPE_SET`` keys ``training_kwargs`` gives one value whatever the config -> that value, which
#: ``trainer_args`` may repeat.
RECIPE_FIXED: dict[str, Any] = {"fp16": False, "logging_first_step": True}


def arguments_fields(arguments_cls: Any = None) -> frozenset[str]:
    """The keys ``arguments_cls`` (default: the installed ``transformers.TrainingArguments``) takes."""
    import dataclasses

    if arguments_cls is None:
        from transformers import TrainingArguments as arguments_cls
    return frozenset(f.name for f in dataclasses.fields(arguments_cls) if f.init)


def training_kwargs(config: TrainConfig, launch: Launch, *, has_eval: bool) -> dict[str, Any]:
    """Keyword arguments for ``transformers.TrainingArguments`` / ``trl.SFTConfig`` shared by every recipe.

    No config field is copied by hand here (a hand-copied list drifts with every transformers release): every config
    field that is also a field of the installed ``TrainingArguments`` goes through under its own name; the few
    settings the recipes derive follow (``RECIPE_SET`` names them all but ``save_strategy`` and
    ``load_best_model_at_end``, and a test holds it to this literal); then
    ``config.trainer_args`` (any other key of the installed transformers, or of trl's ``SFTConfig`` for seq2seq and
    ``GRPOConfig`` for grpo) goes through as given, over the derived ones.

    Best-checkpoint tracking (``metric_for_best_model="eval_loss"``) is on whenever there is a validation set:
    checkpoint rotation (``save_total_limit``) then never deletes the best checkpoint.
    """
    import dataclasses

    import torch

    accepted = arguments_fields()
    kwargs: dict[str, Any] = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
                              if f.name in accepted and f.name not in _SPELT_DIFFERENTLY}
    report_to = [name.strip() for name in config.report_to.split(",") if name.strip() and name.strip() != "none"]
    kwargs.update({
        "bf16": use_bf16(config),
        "report_to": report_to,
        "run_name": config.run_name or Path(config.output_dir).name,
        "data_seed": config.seed,
        "gradient_accumulation_steps": launch.gradient_accumulation_steps,
        "fp16": False,
        "use_cpu": not torch.cuda.is_available(),
        # Non-reentrant checkpointing works with frozen embeddings (LoRA) and ZeRO-3 without extra hooks.
        "gradient_checkpointing_kwargs": {"use_reentrant": False} if config.gradient_checkpointing else None,
        "save_strategy": "steps",
        "eval_strategy": "steps" if has_eval else "no",
        "eval_steps": config.save_steps if has_eval else None,
        "metric_for_best_model": "eval_loss" if has_eval else None,
        "greater_is_better": False if has_eval else None,
        "load_best_model_at_end": False,
        "logging_first_step": True,
    })
    kwargs.update(config.trainer_args)
    return kwargs


def check_trainer_args(config: TrainConfig, sft_fields: frozenset[str] = frozenset()) -> None:
    """Refuse a ``trainer_args`` the installed transformers would not take, before any work.

    Args:
        config: the resolved config.
        sft_fields: the extra keys the recipe's arguments class takes (trl ``SFTConfig``'s for seq2seq,
            ``GRPOConfig``'s for grpo).

    Raises:
        ConfigError: a key that is not a ``TrainingArguments`` (or ``sft_fields``) field, a key the config sets
            itself or derives (``RECIPE_SET``: ``fp16`` from ``bf16``, ``data_seed`` from ``seed``, ...), one that would train on another global batch than
            ``global_batch_size`` (``auto_find_batch_size``, ``accelerator_config`` ``split_batches``,
            ``parallelism_config``) or save checkpoints a resume cannot use, or values ``TrainingArguments`` rejects
            (its own message, with the key named).
    """
    import dataclasses
    import difflib

    if not config.trainer_args:
        return
    accepted = arguments_fields()
    own = {f.name for f in dataclasses.fields(config)}
    for key in config.trainer_args:
        if key in own:
            raise ConfigError(f"trainer_args: {key!r} is a key of this config; set it there (--{key.replace('_', '-')})")
        if key in DERIVED_ONLY:
            raise ConfigError(f"trainer_args: {key!r} is derived from global_batch_size and the world size; set "
                              "global_batch_size and per_device_train_batch_size instead")
        # On an out-of-memory error transformers halves the per-device batch and keeps the accumulation, so every
        # step after it trains on fewer rows than global_batch_size while run.json and the model card still record
        # the configured batch: the global batch is the one number every launch of a run must keep.
        if key == "auto_find_batch_size" and config.trainer_args[key] not in (False, None):
            raise ConfigError("trainer_args: 'auto_find_batch_size' would halve the per-device batch on an "
                              "out-of-memory error without raising the accumulation, silently training on a smaller "
                              f"global batch than global_batch_size {config.global_batch_size}; lower "
                              "per_device_train_batch_size instead (the accumulation is derived to keep the global "
                              "batch), or turn on gradient_checkpointing or a DeepSpeed config")
        # accelerate then splits each per-device batch over the ranks instead of giving every rank its own, so a step
        # trains on global_batch_size / world size rows while run.json, the model card and the log say the whole
        # (transformers' TrainingArguments: split_batches "will override the per_device_train_batch_size").
        if key == "accelerator_config" and _splits_batches(config.trainer_args[key]):
            raise ConfigError("trainer_args: 'accelerator_config' split_batches would split each per-device batch "
                              "over the ranks: a step would train on global_batch_size "
                              f"{config.global_batch_size} divided by the number of ranks while run.json records "
                              f"{config.global_batch_size}; remove split_batches (the accumulation is derived to keep "
                              "the global batch)")
        # transformers passes it to accelerate as given: tensor, context or sequence parallel groups whose ranks share
        # one batch, while the accumulation is derived for data parallelism alone (launch_arithmetic).
        if key == "parallelism_config" and config.trainer_args[key] is not None:
            raise ConfigError("trainer_args: 'parallelism_config' makes ranks share a batch (tensor, context or "
                              "sequence parallelism), while the accumulation is derived for data parallelism alone "
                              "(global batch = per device x accumulation x ranks); remove it (DeepSpeed ZeRO shards "
                              "the model's memory over the ranks instead)")
        # A checkpoint saved with only the weights holds no optimizer, scheduler or RNG state: a --resume from it
        # restarts the learning-rate schedule from its first step and AdamW from zero moments, while the run's
        # step count goes on (docs/training.md promises all of these come back from the checkpoint).
        if key == "save_only_model" and config.trainer_args[key] not in (False, None):
            raise ConfigError("trainer_args: 'save_only_model' saves checkpoints without the optimizer, learning-rate "
                              "schedule and RNG state, so a --resume (slurm/train.sbatch passes one after every "
                              "preemption) would restart the schedule and the optimizer mid-run; remove it (the "
                              "export holds the weights alone; save_total_limit bounds the checkpoints kept)")
        # transformers reloads the best checkpoint at the end only while it knows one, and the recipes forget it
        # once the last checkpoint is saved (train.recipe_steps.keep_last_checkpoint), so that rotation keeps the
        # checkpoint a --resume needs: the key would be recorded in run.json and the model card and do nothing.
        if key == "load_best_model_at_end" and config.trainer_args[key] not in (False, None):
            raise ConfigError("trainer_args: 'load_best_model_at_end' has no effect here: the export is always the "
                              "model of the last step (the final checkpoint is kept for --resume); pick another "
                              "step's weights from its checkpoint-N folder (trainer_state.json's "
                              "best_model_checkpoint names the best), or set max_steps to end training there")
        if key not in accepted and key not in sft_fields:
            close = difflib.get_close_matches(key, sorted(accepted | sft_fields), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            trl = f" or trl {recipe_arguments_class(config.recipe).__name__}" if sft_fields else ""
            raise ConfigError(f"trainer_args: {key!r} is not a TrainingArguments key of the installed "
                              f"transformers{trl}{hint}")
    # each field's annotation, resolved: trl's and transformers' dataclasses annotate with ``float | None``
    hints = typing.get_type_hints(recipe_arguments_class(config.recipe))
    config.trainer_args = {key: _typed_value(key, value, hints) for key, value in config.trainer_args.items()}
    # Checked once typed ('false' is False). training_kwargs writes trainer_args over what it sets, so such a key
    # would train otherwise than run.json's settings say; fp16 beside bf16 TrainingArguments refuses only in the job,
    # as the check below (and judge-train submit's) builds the arguments with bf16 off.
    for key, value in config.trainer_args.items():
        if key in RECIPE_SET and (key not in RECIPE_FIXED or value != RECIPE_FIXED[key]):
            raise ConfigError(f"trainer_args: {key!r} {value!r}: the recipe sets it itself, from {RECIPE_SET[key]}; "
                              f"remove {key}")
    check_training_arguments(config)


def recipe_arguments_class(recipe: str) -> Any:
    """The trainer-arguments class recipe ``recipe`` builds: trl's ``SFTConfig`` for seq2seq (train/seq2seq.py) and
    ``GRPOConfig`` for grpo (train/grpo.py), ``transformers.TrainingArguments`` for the others."""
    if recipe == "seq2seq":
        from trl import SFTConfig

        return SFTConfig
    if recipe == "grpo":
        from trl import GRPOConfig

        return GRPOConfig
    from transformers import TrainingArguments

    return TrainingArguments


#: A YAML 1.2 float with an exponent and no dot ('1e-6', '5E+3'): PyYAML reads it as text (YAML 1.1's floats need a
#: dot); every other number spelling it already reads as a number.
_EXPONENT_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")


def _typed_value(key: str, value: Any, hints: dict[str, Any]) -> Any:
    """A ``trainer_args`` value as its field's type in the recipe's arguments class (``hints``:
    ``recipe_arguments_class``'s annotations), where that is a number or a truth value.

    Neither ``TrainingArguments`` nor trl's ``SFTConfig``/``GRPOConfig`` checks types: PyYAML reads
    ``adam_epsilon: 1e-8`` (no dot, YAML 1.1) as the text '1e-8', which torch's AdamW refused with a TypeError at the
    first step, after the model loaded (GRPO's ``epsilon: 2e-1`` in its loss's clamp, ``beta`` times the KL term).
    Such text is converted as the config's own fields are (``judge.plumbing.config_files.coerce``: '1e-8' ->
    1e-08, 'true' -> True); a value that is not one is refused. The values of ``lr_scheduler_kwargs`` (a mapping
    of numbers the schedule computes with) are read as YAML 1.2 reads them: '1e-6' -> 1e-06, other text kept.
    Other fields (text, mappings, enums) pass as given, but a truth value for an enum's words (below).

    Raises:
        ConfigError: ``trainer_args: <key>: expected a number, got ...`` (or ``expected text, got false``).
    """
    from judge.plumbing.config_files import coerce, yaml_truth_value_in_text

    if key == "lr_scheduler_kwargs" and isinstance(value, dict):
        return {name: float(item) if isinstance(item, str) and _EXPONENT_NUMBER.fullmatch(item.strip()) else item
                for name, item in value.items()}
    hint = hints.get(key)
    scalar = [arg for arg in typing.get_args(hint) if arg is not type(None)] if typing.get_args(hint) else [hint]
    # `save_strategy: no` reached the trainer as False; plain text may take one on purpose (scale_rewards: false)
    words = [arg for arg in scalar if isinstance(arg, type) and issubclass(arg, enum.Enum)]
    if isinstance(value, bool) and words and all(arg is str or arg in words for arg in scalar):
        raise ConfigError(f"trainer_args: {key}: {yaml_truth_value_in_text(value)}")
    if len(scalar) != 1 or scalar[0] not in (bool, int, float):
        return value
    return coerce(key, value, hint, "trainer_args")


def _splits_batches(accelerator_config: Any) -> bool:
    """Whether a ``trainer_args`` ``accelerator_config`` (a mapping, or the path of a JSON file, as
    ``TrainingArguments`` takes it) sets ``split_batches``; a file that cannot be read is left to
    ``TrainingArguments`` to refuse."""
    from judge.plumbing.config_files import read_json_object

    if isinstance(accelerator_config, str):
        try:
            accelerator_config = read_json_object(accelerator_config)
        except (OSError, ValueError):
            return False
    return isinstance(accelerator_config, dict) and accelerator_config.get("split_batches") not in (False, None)


def check_training_arguments(config: TrainConfig) -> None:
    """Build ``TrainingArguments`` with exactly what the recipe would pass (on CPU, without DeepSpeed, world size 1):
    its own checks name a bad value (a misspelt ``lr_scheduler_type`` or ``optim``) or a bad combination before the
    data is read and the model loaded. Then the optimizer and the learning-rate schedule are built from them on a
    dummy parameter (``train.trainer_preflight.check_optimizer_and_schedule``), which transformers does only inside
    ``trainer.train()``. Called when a config with ``trainer_args`` loads, and by ``judge-train run`` and ``submit``
    for every config (importing transformers costs seconds, which a config load alone need not pay).

    ``report_to`` is checked everywhere against transformers' integrations and the installed packages
    (``train.trainer_preflight.check_report_to``). Under a distributed launcher (``LOCAL_RANK``/``WORLD_SIZE`` set by
    torchrun, accelerate, DeepSpeed) only that and ``lr_scheduler_type`` and ``optim`` are checked, against
    transformers' names (``check_transformers_names``):
    building ``TrainingArguments(use_cpu=True)`` there sets up accelerate's multi-CPU state, a gloo process group,
    before the recipe's own; DeepSpeed then finds torch.distributed initialised and never creates its NCCL group. A
    launched job's other values were checked where it was launched (``judge-train submit``, or the command line
    before the launcher); the optimizer and the schedule are built again from the real arguments on every rank before
    the model loads, and the recipe turns a refusal into the same one line
    (``train.recipe_steps.PreparedRun.training_arguments``).

    Raises:
        ConfigError: ``TrainingArguments``' own message, or the optimizer's, the schedule's or ``report_to``'s.
    """
    import os

    from train.trainer_preflight import check_optimizer_and_schedule, check_report_to

    check_transformers_names(config)
    check_report_to(config)
    if os.environ.get("LOCAL_RANK") is not None or os.environ.get("WORLD_SIZE") is not None:
        return
    from transformers import TrainingArguments

    has_eval = bool(config.eval_data) or config.eval_fraction > 0
    kwargs = training_kwargs(config, launch_arithmetic(config, world_size=1), has_eval=has_eval)
    kwargs = {k: v for k, v in kwargs.items() if k in arguments_fields()}
    kwargs.update({"bf16": False, "use_cpu": True, "deepspeed": None})
    try:
        args = TrainingArguments(**kwargs)
    except (TypeError, ValueError) as err:
        given = f"with trainer_args {sorted(config.trainer_args)}" if config.trainer_args else "as set"
        raise ConfigError(f"TrainingArguments refuses this config {given}: {err}") from None
    check_optimizer_and_schedule(args, config)


def check_transformers_names(config: TrainConfig) -> None:
    """``lr_scheduler_type`` and ``optim`` against the installed transformers' ``SchedulerType`` and
    ``OptimizerNames``, naming the key: what ``check_training_arguments`` can check under a launcher too, where a
    misspelt one otherwise reached ``TrainingArguments`` after the base model and run.json, a traceback on every rank.

    Raises:
        ConfigError: ``TrainingArguments refuses this config as set: <key>: <value> is not a valid <enum> ...``.
    """
    import difflib

    from transformers.trainer_utils import SchedulerType
    from transformers.training_args import OptimizerNames

    for key, words in (("lr_scheduler_type", SchedulerType), ("optim", OptimizerNames)):
        value, names = getattr(config, key), [member.value for member in words]
        if value not in names:
            close = difflib.get_close_matches(str(value), names, n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise ConfigError(f"TrainingArguments refuses this config as set: {key}: {value} is not a valid "
                              f"{words.__name__} ({hint}the installed transformers has {', '.join(names)})")


def stand_in_for_a_launcher() -> None:
    """Give a process that no launcher started the environment of rank 0 in a world of one.

    A DeepSpeed run needs a process group even on one GPU: ``TrainingArguments`` builds accelerate's DeepSpeed state
    when it is constructed, and ``deepspeed.init_distributed`` then asks MPI for the world (through ``mpi4py``, which
    this toolkit does not install) unless ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and
    ``LOCAL_RANK`` are set.
    transformers' DeepSpeed guide sets these five by hand for one process started without a launcher; this does the
    same, so ``judge-train --config configs/train/t-lite/seq2seq.yaml --lora true`` runs on one GPU as documented.
    The port is one the system has free now (a fixed 29500 would collide with a second run on the same machine).
    A process a launcher started (``RANK`` or ``WORLD_SIZE`` set) is left as it is; so are values already given.
    Call before ``TrainingArguments`` is built.
    """
    if "RANK" in os.environ or "WORLD_SIZE" in os.environ:
        return
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "127.0.0.1"),
                        ("MASTER_PORT", str(port))):  # fmt: skip
        os.environ.setdefault(name, value)


def init_distributed(args) -> None:
    """Set up torch.distributed (and DeepSpeed's view of it) before the model is loaded.

    transformers sets up devices lazily, and on CPU accelerate leaves DeepSpeed's communicator alone; ZeRO-3's
    zero.Init inside ``from_pretrained`` would then see a world of one rank and reject the batch arithmetic.
    DeepSpeed wraps the process group accelerate created (gloo on CPU, NCCL on GPU); on GPU this is a no-op.
    """
    if args.deepspeed and args.use_cpu:
        _cpu_collectives_through_gloo()
    args.device  # noqa: B018 - the property initialises the process group
    if args.deepspeed:
        import deepspeed

        deepspeed.init_distributed()


def _cpu_collectives_through_gloo() -> None:
    """Keep DeepSpeed's CPU communicator on gloo instead of its shared-memory all-reduce op.

    On CPU, DeepSpeed's ``TorchBackend`` JIT-compiles that op (``ShareMemCommBuilder``, deepspeed/comm/torch.py
    ``build_shm_op``) the first time any run on a machine initialises it: g++ and ninja must be installed, and the
    build took 32 s and 59 CPU-s here (``TORCH_EXTENSIONS_DIR`` empty; 2 s to load it once built). CPU runs of this
    toolkit are smoke and test runs of one or two ranks, whose all-reduces gloo carries (the same group torch
    already set up); GPU runs use NCCL and never reach this. DeepSpeed reads ``__compatible_ops__`` when the
    backend is built, and keeps the dict it probed, so marking the op incompatible before that is enough.
    """
    import deepspeed.ops
    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder

    deepspeed.ops.__compatible_ops__[ShareMemCommBuilder.NAME] = False


def is_main_process() -> bool:
    """Global rank 0 (from the launcher's ``RANK``; True without a launcher)."""
    return os.environ.get("RANK", "0") == "0"

"""Training configuration: one dataclass per recipe, mirrored by the YAML files in ``configs/train/``.

Values resolve in three layers: the dataclass defaults below (the POLLUX paper's hyperparameters), then the YAML
file, then command-line flags::

    judge-train --config configs/train/t-lite/seq2seq.yaml --learning-rate 2e-5 --output-dir runs/lr2e-5

A YAML file names its recipe (``recipe: seq2seq``, ``regression`` or ``classifier``); a key the recipe does not
define is an error, as is a flag that belongs only to another recipe. Every field carries its help text, which
``judge-train run --help`` prints. Flags are spelt with dashes; the underscore spelling (``--output_dir``) still
works (``judge.plumbing.config_files``).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.plumbing.config_files import ConfigError, add_config_flags, option, read_config_file, resolve_config

__all__ = [
    "ConfigError",
    "RECIPES",
    "TINY_MODEL",
    "SAMPLE_DATA",
    "TrainConfig",
    "Seq2SeqConfig",
    "RegressionConfig",
    "ClassifierConfig",
    "load_config",
    "add_config_arguments",
    "config_from_args",
]

#: ``model_name_or_path`` value that builds a randomly initialised 2-layer Qwen2 on the real Qwen2.5 vocabulary
#: (``train.tiny_models``) into ``<output_dir>/base-model``: what the tiny CPU configs, tests and demo train.
TINY_MODEL = "tiny-qwen2"
#: ``data`` value that means the sample data bundled with the package (``judge.sample_data_path()``).
SAMPLE_DATA = "sample"


@dataclass
class TrainConfig:
    """Fields shared by both recipes."""

    # --- what to train -------------------------------------------------------------------------------------------
    recipe: str = option("", "Which recipe this file configures: 'seq2seq' or 'regression'.")
    model_name_or_path: str = option(
        TINY_MODEL,
        f"Base model: a local folder or a hub id (T-lite: t-tech/T-lite-it-1.0). '{TINY_MODEL}' builds a random "
        "2-layer Qwen2 on the Qwen2.5 vocabulary into <output_dir>/base-model (CPU tests and demo).",
    )
    output_dir: str = option(
        "runs/judge",
        "Run folder: checkpoints (checkpoint-N/), run.json and the final export (export/).",
    )
    seed: int = option(42, "Seed for model init, data order and dropout (written to run.json).")

    # --- data ----------------------------------------------------------------------------------------------------
    data: str = option(
        SAMPLE_DATA,
        f"POLLUX-format records with feedback and scores (JSONL, Parquet, a datasets folder or name); "
        f"'{SAMPLE_DATA}' is the bundled sample data. A teacher's verdicts come as one expert score and feedback per row.",
    )
    eval_data: str | None = option(
        None,
        "Validation records (same formats as data), e.g. the synthetic pipeline's validation.jsonl; when given, "
        "eval_fraction is ignored.",
    )
    zero_shot: str = option(
        "refuse",
        "Zero-Shot rows (held-out task types and criteria): 'refuse' stops with an error naming them, 'drop' leaves "
        "them out and counts them, 'allow' trains on them (then the Zero-Shot test is no longer zero-shot).",
    )
    allow_benchmark_rows: bool = option(
        False,
        "Train on rows in the released POLLUX benchmark schema (ai-forever/POLLUX). Refused by default: the dataset "
        "card asks that the benchmark not be used for training.",
    )
    min_russian_share: float = option(
        0.5,
        "Minimum share of Cyrillic among the letters of a rationale; rationales below it are dropped (paper, App. B).",
    )
    eval_fraction: float = option(
        0.02,
        "Fraction of records held out as the validation set (by a hash of the record id; 0 disables evaluation and "
        "best-checkpoint tracking).",
    )
    max_rows: int | None = option(
        None,
        "Keep only the first N training rows after filtering (in data order): smoke runs and overfit tests.",
    )
    max_length: int = option(
        4096,
        "Longest training sequence in tokens (prompt + target through the chat template). Longer rows are dropped "
        "and counted, never truncated: a truncated target teaches a judge that never writes [END].",
    )

    # --- optimisation (POLLUX paper line 220: AdamW, lr from 1e-5 to 0 over 3 epochs, global batch 256; the linear
    # shape of the decay is our choice, the paper does not name one) ------------------------------------------------
    learning_rate: float = option(1e-5, "Peak AdamW learning rate.")
    lr_scheduler_type: str = option(
        "linear",
        "Learning-rate schedule (transformers name); 'linear' decays to 0. The paper says 'from 1e-5 to 0' (line 220) "
        "without a shape: linear is this toolkit's choice.",
    )
    warmup_steps: int = option(0, "Linear warm-up steps before the decay.")
    num_train_epochs: float = option(3.0, "Epochs over the training rows.")
    max_steps: int = option(-1, "Stop after this many optimizer steps (overrides epochs when > 0).")
    global_batch_size: int = option(
        256,
        "Rows per optimizer step over all ranks. Gradient accumulation is derived: "
        "global_batch_size / (per_device_train_batch_size x world size), which must divide evenly.",
    )
    per_device_train_batch_size: int = option(1, "Rows per forward pass on one device.")
    per_device_eval_batch_size: int = option(1, "Rows per forward pass during evaluation.")
    weight_decay: float = option(0.0, "AdamW weight decay.")
    max_grad_norm: float = option(1.0, "Gradient clipping norm.")
    optim: str = option("adamw_torch", "Optimizer (transformers name).")
    bf16: str = option("auto", "bfloat16 training: 'auto' (on when CUDA is available), 'true' or 'false'.")
    gradient_checkpointing: bool = option(True, "Recompute activations in the backward pass to save memory.")
    attn_implementation: str = option(
        "sdpa",
        "Attention kernel: 'sdpa', 'eager' or 'flash_attention_2' (GPU, needs the flash-attn package).",
    )

    # --- memory and parallelism ----------------------------------------------------------------------------------
    deepspeed: str | None = option(
        None,
        "DeepSpeed JSON (configs/deepspeed/zero2.json, zero3.json, zero3_offload.json); null trains without it.",
    )
    lora: bool = option(False, "Train LoRA adapters (peft) instead of all weights; merged into the export.")
    lora_r: int = option(64, "LoRA rank.")
    lora_alpha: int = option(128, "LoRA scaling numerator (scale = alpha / r).")
    lora_dropout: float = option(0.05, "Dropout on the LoRA input.")
    lora_target_modules: str = option(
        "all-linear",
        "Modules that get adapters: 'all-linear' or a comma-separated list (q_proj,k_proj,...).",
    )

    # --- checkpoints, logging ------------------------------------------------------------------------------------
    save_steps: int = option(200, "Checkpoint every N optimizer steps (and evaluate then, when there is a validation set).")
    save_total_limit: int = option(
        2,
        "Checkpoints kept; rotation never deletes the best one (lowest eval_loss) when evaluating.",
    )
    logging_steps: int = option(10, "Log loss and learning rate every N steps.")
    report_to: str = option("none", "Where logs go: 'wandb', 'tensorboard', 'none' (comma-separated for several).")
    run_name: str | None = option(None, "Run name shown in W&B; defaults to the output folder's name.")
    resume: bool = option(
        False,
        "Continue from the latest checkpoint-N in output_dir (optimizer, scheduler, RNG and data position restored).",
    )
    overwrite_output_dir: bool = option(
        False,
        "Start over in an output_dir that holds an earlier run: its checkpoint-N folders and export are deleted "
        "(a fresh run into such a folder is refused otherwise).",
    )
    dataloader_num_workers: int = option(0, "Data loader worker processes.")
    disable_tqdm: bool = option(False, "Hide progress bars (logs still print).")
    trainer_args: dict[str, Any] = option(
        {},
        "Any other key of the installed transformers' TrainingArguments (and of trl's SFTConfig for seq2seq), passed "
        "to the trainer as given, e.g. {adam_beta2: 0.95, lr_scheduler_kwargs: {...}} in YAML or "
        "--trainer-args '{\"adam_beta2\": 0.95}'; a flag's keys are merged over the YAML's, key by key. Checked by "
        "building TrainingArguments when the config loads; keys this config sets itself, or derives "
        "(gradient_accumulation_steps), are refused.",
    )

    def validate(self) -> None:
        """Raise ConfigError for values no recipe can run with."""
        if self.recipe not in RECIPES:
            raise ConfigError(f"recipe must be one of {sorted(RECIPES)}, got {self.recipe!r}")
        if self.zero_shot not in ("refuse", "drop", "allow"):
            raise ConfigError(f"zero_shot must be 'refuse', 'drop' or 'allow', got {self.zero_shot!r}")
        if self.bf16 not in ("auto", "true", "false"):
            raise ConfigError(f"bf16 must be 'auto', 'true' or 'false', got {self.bf16!r}")
        if not 0.0 <= self.eval_fraction < 1.0:
            raise ConfigError(f"eval_fraction must be in [0, 1), got {self.eval_fraction}")
        if not 0.0 <= self.min_russian_share <= 1.0:
            raise ConfigError(f"min_russian_share must be in [0, 1], got {self.min_russian_share}")
        for name in ("global_batch_size", "per_device_train_batch_size", "max_length", "save_steps", "logging_steps"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.resume and self.overwrite_output_dir:
            raise ConfigError("--resume continues the run in output_dir; --overwrite-output-dir deletes it: pick one")
        if self.deepspeed is not None and not Path(self.deepspeed).is_file():
            raise ConfigError(f"deepspeed config {self.deepspeed} not found (see configs/deepspeed/)")
        if self.trainer_args:
            from train.training_arguments import check_trainer_args

            check_trainer_args(self, self.arguments_class_fields())

    def arguments_class_fields(self) -> frozenset[str]:
        """Keys the recipe's trainer-arguments class takes beyond ``TrainingArguments``'s (none here)."""
        return frozenset()


@dataclass
class Seq2SeqConfig(TrainConfig):
    """The generating judge: prompt -> ``[FEEDBACK] rationale [RESULT] score [END]`` (trl SFTTrainer)."""

    recipe: str = option("seq2seq", "Which recipe this file configures: 'seq2seq' or 'regression'.")
    packing: bool = option(
        False,
        "Padding-free packing: trl's packing=True with packing_strategy='bfd' (rows packed into max_length blocks, "
        "no pad tokens, sequence boundaries kept through position_ids).",
    )

    def arguments_class_fields(self) -> frozenset[str]:
        """trl ``SFTConfig``'s own keys (the seq2seq recipe's trainer arguments)."""
        from trl import SFTConfig

        from train.training_arguments import arguments_fields

        return arguments_fields(SFTConfig) - arguments_fields()


@dataclass
class RegressionConfig(TrainConfig):
    """The score-head judge: LM head writes ``[FEEDBACK] rationale [END]``, a linear head scores it."""

    recipe: str = option("regression", "Which recipe this file configures: 'seq2seq' or 'regression'.")
    score_target: str = option(
        "mean",
        "Score the head regresses on: 'mean' (criteria_score, the mean over experts or the teacher's score) or "
        "'expert' (each expert's own score next to their rationale).",
    )
    score_loss_weight: float = option(1.0, "Weight of the head's MSE in the joint loss.")
    lm_loss_weight: float = option(1.0, "Weight of the rationale's cross-entropy in the joint loss.")

    def validate(self) -> None:
        super().validate()
        if self.score_target not in ("mean", "expert"):
            raise ConfigError(f"score_target must be 'mean' or 'expert', got {self.score_target!r}")
        if self.score_loss_weight < 0 or self.lm_loss_weight < 0 or self.score_loss_weight + self.lm_loss_weight == 0:
            raise ConfigError("loss weights must be non-negative and not both zero")


@dataclass
class ClassifierConfig(TrainConfig):
    """The task classifier of ``criteria: auto``: a sequence-classification head over the leaf tasks."""

    recipe: str = option("classifier", "Which recipe this file configures: 'seq2seq', 'regression' or 'classifier'.")
    data: str = option(
        SAMPLE_DATA,
        "Labelled instructions, comma-separated: `judge-train data instructions` output, POLLUX-format records "
        f"(their task columns label them) or labelled JSONL; '{SAMPLE_DATA}' is the bundled training set "
        "(judge/data/task_classifier_train.jsonl). The bundled held-out set is refused here.",
    )
    zero_shot: str = option(
        "drop",
        "Zero-Shot task types: 'drop' leaves them out (default: its Zero-Shot figures stay zero-shot), 'allow' "
        "trains on them, 'refuse' stops when any are present.",
    )
    taxonomy_text: bool = option(True, "Add one taxonomy-text row per leaf (names, description) to the training rows.")

    def validate(self) -> None:
        super().validate()
        if self.lora:
            raise ConfigError("the classifier recipe trains all weights; lora is not supported for it")


RECIPES: dict[str, type[TrainConfig]] = {
    "seq2seq": Seq2SeqConfig,
    "regression": RegressionConfig,
    "classifier": ClassifierConfig,
}


# ---------------------------------------------------------------------------------------------------------------
# Resolution and flags (judge.plumbing.config_files): the recipe's class is chosen first, from the file or --recipe
# ---------------------------------------------------------------------------------------------------------------


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None, recipe: str | None = None) -> TrainConfig:
    """Resolve a config: dataclass defaults, then the YAML file, then ``overrides`` (already-named fields).

    Args:
        path: a YAML file from ``configs/train/`` (or None to start from defaults, then ``recipe`` is required).
        overrides: field -> value (text from the command line or typed values); None values are skipped.
        recipe: the recipe when no file names it; must agree with the file's ``recipe`` when both are given.

    Returns:
        A validated ``Seq2SeqConfig``, ``RegressionConfig`` or ``ClassifierConfig``.

    Raises:
        ConfigError: unknown keys (naming them and the file), wrong types, or invalid values.
    """
    named = read_config_file(path).get("recipe") if path is not None else None
    source = str(path) if path is not None else "<defaults>"
    if recipe is not None and named not in (None, recipe):
        raise ConfigError(f"{source} is a {named!r} config, but recipe {recipe!r} was requested")
    name = named or recipe
    if name not in RECIPES:
        raise ConfigError(f"{source}: 'recipe' must be one of {sorted(RECIPES)}, got {name!r}")
    overrides = dict(overrides or {})
    if overrides.get("trainer_args") is not None and path is not None:
        # trainer_args is a mapping of free keys: a flag adds to (or replaces keys of) the YAML's, not all of it.
        from judge.plumbing.config_files import coerce

        flag = coerce("trainer_args", overrides["trainer_args"], dict[str, Any], "command line")
        overrides["trainer_args"] = {**(read_config_file(path).get("trainer_args") or {}), **flag}
    config = resolve_config(RECIPES[name], path, {**overrides, "recipe": name}, label=f"the {name} recipe")
    config.validate()
    return config


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add a flag for every field of every recipe, grouped (``judge.plumbing.config_files.add_config_flags``)."""
    common = [f.name for f in dataclasses.fields(TrainConfig) if f.name != "recipe"]
    add_config_flags(parser.add_argument_group("shared by all recipes"), TrainConfig, names=common)
    for name, cls in RECIPES.items():
        own = [f.name for f in dataclasses.fields(cls) if f.name not in common and f.name != "recipe"]
        add_config_flags(parser.add_argument_group(f"{name} recipe only"), cls, names=own)


def config_from_args(args: argparse.Namespace, recipe: str | None = None) -> TrainConfig:
    """Resolve the config named by ``args.config`` with every flag that was given on the command line."""
    names = {f.name for cls in RECIPES.values() for f in dataclasses.fields(cls)} - {"recipe"}
    overrides = {name: value for name, value in vars(args).items() if name in names}
    return load_config(getattr(args, "config", None), overrides, recipe=recipe or getattr(args, "recipe", None))


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The resolved config as plain data (for run.json and logs)."""
    return dataclasses.asdict(config)

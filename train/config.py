"""Training configuration: one dataclass per recipe, mirrored by the YAML files in ``configs/train/``.

Values resolve in three layers: the dataclass defaults below (the POLLUX paper's hyperparameters), then the YAML
file, then command-line flags::

    judge-train --config configs/train/t-lite/seq2seq.yaml --learning_rate 2e-5 --output_dir runs/lr2e-5

A YAML file names its recipe (``recipe: seq2seq`` or ``recipe: regression``); a key the recipe does not define
is an error, as is a flag that belongs only to the other recipe. Every field carries its help text, which
``judge-train run --help`` prints.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.config_files import ConfigError, read_config_file

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
#: (``judge.tiny_models``) into ``<output_dir>/base-model``: what the tiny CPU configs, tests and demo train.
TINY_MODEL = "tiny-qwen2"
#: ``data`` value that means the sample data bundled with the package (``judge.sample_data_path()``).
SAMPLE_DATA = "sample"


def _help(text: str, **kw: Any) -> Any:
    return field(metadata={"help": text}, **kw)


@dataclass
class TrainConfig:
    """Fields shared by both recipes."""

    # --- what to train -------------------------------------------------------------------------------------------
    recipe: str = _help("Which recipe this file configures: 'seq2seq' or 'regression'.", default="")
    model_name_or_path: str = _help(
        f"Base model: a local folder or a hub id (T-lite: t-tech/T-lite-it-1.0). '{TINY_MODEL}' builds a random "
        "2-layer Qwen2 on the Qwen2.5 vocabulary into <output_dir>/base-model (CPU tests and demo).",
        default=TINY_MODEL,
    )
    output_dir: str = _help(
        "Run folder: checkpoints (checkpoint-N/), run.json and the final export (export/).", default="runs/judge"
    )
    seed: int = _help("Seed for model init, data order and dropout (written to run.json).", default=42)

    # --- data ----------------------------------------------------------------------------------------------------
    data: str = _help(
        f"POLLUX-format records with feedback and scores (JSONL, Parquet, a datasets folder or name); "
        f"'{SAMPLE_DATA}' is the bundled sample data. A teacher's verdicts come as one expert score and feedback per row.",
        default=SAMPLE_DATA,
    )
    eval_data: str | None = _help(
        "Validation records (same formats as data), e.g. the synthetic pipeline's validation.jsonl; when given, "
        "eval_fraction is ignored.",
        default=None,
    )
    zero_shot: str = _help(
        "Zero-Shot rows (held-out task types and criteria): 'refuse' stops with an error naming them, 'drop' leaves "
        "them out and counts them, 'allow' trains on them (then the Zero-Shot test is no longer zero-shot).",
        default="refuse",
    )
    allow_benchmark_rows: bool = _help(
        "Train on rows in the released POLLUX benchmark schema (ai-forever/POLLUX). Refused by default: the dataset "
        "card asks that the benchmark not be used for training.",
        default=False,
    )
    min_russian_share: float = _help(
        "Minimum share of Cyrillic among the letters of a rationale; rationales below it are dropped (paper, App. B).",
        default=0.5,
    )
    eval_fraction: float = _help(
        "Fraction of records held out as the validation set (by a hash of the record id; 0 disables evaluation and "
        "best-checkpoint tracking).",
        default=0.02,
    )
    max_rows: int | None = _help(
        "Keep only the first N training rows after filtering (in data order): smoke runs and overfit tests.",
        default=None,
    )
    max_length: int = _help(
        "Longest training sequence in tokens (prompt + target through the chat template). Longer rows are dropped "
        "and counted, never truncated: a truncated target teaches a judge that never writes [END].",
        default=4096,
    )

    # --- optimisation (POLLUX paper: AdamW, lr 1e-5 decaying linearly to 0, 3 epochs, global batch 256) -----------
    learning_rate: float = _help("Peak AdamW learning rate.", default=1e-5)
    lr_scheduler_type: str = _help("Learning-rate schedule (transformers name); 'linear' decays to 0.", default="linear")
    warmup_steps: int = _help("Linear warm-up steps before the decay.", default=0)
    num_train_epochs: float = _help("Epochs over the training rows.", default=3.0)
    max_steps: int = _help("Stop after this many optimizer steps (overrides epochs when > 0).", default=-1)
    global_batch_size: int = _help(
        "Rows per optimizer step over all ranks. Gradient accumulation is derived: "
        "global_batch_size / (per_device_train_batch_size x world size), which must divide evenly.",
        default=256,
    )
    per_device_train_batch_size: int = _help("Rows per forward pass on one device.", default=1)
    per_device_eval_batch_size: int = _help("Rows per forward pass during evaluation.", default=1)
    weight_decay: float = _help("AdamW weight decay.", default=0.0)
    max_grad_norm: float = _help("Gradient clipping norm.", default=1.0)
    optim: str = _help("Optimizer (transformers name).", default="adamw_torch")
    bf16: str = _help("bfloat16 training: 'auto' (on when CUDA is available), 'true' or 'false'.", default="auto")
    gradient_checkpointing: bool = _help("Recompute activations in the backward pass to save memory.", default=True)
    attn_implementation: str = _help(
        "Attention kernel: 'sdpa', 'eager' or 'flash_attention_2' (GPU, needs the flash-attn package).", default="sdpa"
    )

    # --- memory and parallelism ----------------------------------------------------------------------------------
    deepspeed: str | None = _help(
        "DeepSpeed JSON (configs/deepspeed/zero2.json, zero3.json, zero3_offload.json); null trains without it.",
        default=None,
    )
    lora: bool = _help("Train LoRA adapters (peft) instead of all weights; merged into the export.", default=False)
    lora_r: int = _help("LoRA rank.", default=64)
    lora_alpha: int = _help("LoRA scaling numerator (scale = alpha / r).", default=128)
    lora_dropout: float = _help("Dropout on the LoRA input.", default=0.05)
    lora_target_modules: str = _help(
        "Modules that get adapters: 'all-linear' or a comma-separated list (q_proj,k_proj,...).", default="all-linear"
    )

    # --- checkpoints, logging ------------------------------------------------------------------------------------
    save_steps: int = _help("Checkpoint every N optimizer steps (and evaluate then, when there is a validation set).", default=200)
    save_total_limit: int = _help(
        "Checkpoints kept; rotation never deletes the best one (lowest eval_loss) when evaluating.", default=2
    )
    logging_steps: int = _help("Log loss and learning rate every N steps.", default=10)
    report_to: str = _help("Where logs go: 'wandb', 'tensorboard', 'none' (comma-separated for several).", default="none")
    run_name: str | None = _help("Run name shown in W&B; defaults to the output folder's name.", default=None)
    resume: bool = _help(
        "Continue from the latest checkpoint-N in output_dir (optimizer, scheduler, RNG and data position restored).",
        default=False,
    )
    overwrite_output_dir: bool = _help(
        "Start over in an output_dir that holds an earlier run: its checkpoint-N folders and export are deleted "
        "(a fresh run into such a folder is refused otherwise).",
        default=False,
    )
    dataloader_num_workers: int = _help("Data loader worker processes.", default=0)
    disable_tqdm: bool = _help("Hide progress bars (logs still print).", default=False)

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
            raise ConfigError("--resume continues the run in output_dir; --overwrite_output_dir deletes it: pick one")
        if self.deepspeed is not None and not Path(self.deepspeed).is_file():
            raise ConfigError(f"deepspeed config {self.deepspeed} not found (see configs/deepspeed/)")


@dataclass
class Seq2SeqConfig(TrainConfig):
    """The generating judge: prompt -> ``[FEEDBACK] rationale [RESULT] score [END]`` (trl SFTTrainer)."""

    recipe: str = _help("Which recipe this file configures: 'seq2seq' or 'regression'.", default="seq2seq")
    packing: bool = _help(
        "Padding-free packing: trl's packing=True with packing_strategy='bfd' (rows packed into max_length blocks, "
        "no pad tokens, sequence boundaries kept through position_ids).",
        default=False,
    )


@dataclass
class RegressionConfig(TrainConfig):
    """The score-head judge: LM head writes ``[FEEDBACK] rationale [END]``, a linear head scores it."""

    recipe: str = _help("Which recipe this file configures: 'seq2seq' or 'regression'.", default="regression")
    score_target: str = _help(
        "Score the head regresses on: 'mean' (criteria_score, the mean over experts or the teacher's score) or "
        "'expert' (each expert's own score next to their rationale).",
        default="mean",
    )
    score_loss_weight: float = _help("Weight of the head's MSE in the joint loss.", default=1.0)
    lm_loss_weight: float = _help("Weight of the rationale's cross-entropy in the joint loss.", default=1.0)

    def validate(self) -> None:
        super().validate()
        if self.score_target not in ("mean", "expert"):
            raise ConfigError(f"score_target must be 'mean' or 'expert', got {self.score_target!r}")
        if self.score_loss_weight < 0 or self.lm_loss_weight < 0 or self.score_loss_weight + self.lm_loss_weight == 0:
            raise ConfigError("loss weights must be non-negative and not both zero")


@dataclass
class ClassifierConfig(TrainConfig):
    """The task classifier of ``criteria: auto``: a sequence-classification head over the leaf tasks."""

    recipe: str = _help("Which recipe this file configures: 'seq2seq', 'regression' or 'classifier'.", default="classifier")
    data: str = _help(
        "Labelled instructions, comma-separated: `judge-train data instructions` output, POLLUX-format records "
        f"(their task columns label them) or labelled JSONL; '{SAMPLE_DATA}' is the bundled training set "
        "(judge/data/task_classifier_train.jsonl). The bundled held-out set is refused here.",
        default=SAMPLE_DATA,
    )
    zero_shot: str = _help(
        "Zero-Shot task types: 'drop' leaves them out (default: its Zero-Shot figures stay zero-shot), 'allow' "
        "trains on them, 'refuse' stops when any are present.",
        default="drop",
    )
    taxonomy_text: bool = _help("Add one taxonomy-text row per leaf (names, description) to the training rows.",
                                default=True)  # fmt: skip

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
# Type coercion: YAML and the command line both arrive here
# ---------------------------------------------------------------------------------------------------------------


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _base_type(tp: Any) -> tuple[Any, bool]:
    """(the non-None type, whether None is allowed) of an annotation like ``int | None``."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0], True
    return tp, False


def _parse_bool(text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _coerce(name: str, value: Any, tp: Any, source: str) -> Any:
    base, optional = _base_type(tp)
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null") and base is not str):
        if optional:
            return None
        raise ConfigError(f"{source}: {name} may not be null")
    if isinstance(value, str) and optional and base is str and value.strip().lower() in ("none", "null"):
        return None
    try:
        if base is bool:
            return value if isinstance(value, bool) else _parse_bool(value)
        if base is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(f"expected an integer, got {value!r}")
            return int(value)
        if base is float:
            if isinstance(value, bool):
                raise ValueError(f"expected a number, got {value!r}")
            return float(value)
        if base is str:
            if isinstance(value, bool):  # YAML reads `bf16: true` as a bool; the field takes 'true'
                return "true" if value else "false"
            if not isinstance(value, (str, int, float)):
                raise ValueError(f"expected text, got {type(value).__name__}")
            return str(value)
    except ValueError as err:
        raise ConfigError(f"{source}: {name}: {err}") from None
    raise ConfigError(f"{source}: {name}: unsupported field type {tp}")


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None, recipe: str | None = None) -> TrainConfig:
    """Resolve a config: dataclass defaults, then the YAML file, then ``overrides`` (already-named fields).

    Args:
        path: a YAML file from ``configs/train/`` (or None to start from defaults, then ``recipe`` is required).
        overrides: field -> value (text from the command line or typed values); None values are skipped.
        recipe: the recipe when no file names it; must agree with the file's ``recipe`` when both are given.

    Returns:
        A validated ``Seq2SeqConfig`` or ``RegressionConfig``.

    Raises:
        ConfigError: unknown keys (naming them and the file), wrong types, or invalid values.
    """
    raw = read_config_file(path) if path is not None else {}
    source = str(path) if path is not None else "<defaults>"
    name = raw.get("recipe", recipe)
    if recipe is not None and raw.get("recipe") not in (None, recipe):
        raise ConfigError(f"{source} is a {raw['recipe']!r} config, but recipe {recipe!r} was requested")
    if name not in RECIPES:
        raise ConfigError(f"{source}: 'recipe' must be one of {sorted(RECIPES)}, got {name!r}")
    cls = RECIPES[name]
    hints = _field_types(cls)
    unknown = sorted(set(raw) - set(hints))
    if unknown:
        raise ConfigError(f"{source}: unknown keys {unknown} for the {name} recipe; known keys: {sorted(hints)}")
    values = {key: _coerce(key, value, hints[key], source) for key, value in raw.items()}
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key not in hints:
            raise ConfigError(f"--{key} does not apply to the {name} recipe")
        values[key] = _coerce(key, value, hints[key], "command line")
    values["recipe"] = name
    config = cls(**values)
    config.validate()
    return config


# ---------------------------------------------------------------------------------------------------------------
# Command line: one flag per field, generated from the dataclasses so the help text lives in one place
# ---------------------------------------------------------------------------------------------------------------


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--<field>`` for every field of every recipe (grouped; defaults are shown, values stay unset).

    Flags default to None so that an absent flag never overrides the YAML. Boolean flags accept a bare
    ``--resume`` as well as ``--resume false``. Dashes and underscores are both accepted (``--output-dir``).
    """
    common = {f.name for f in dataclasses.fields(TrainConfig)}
    groups = [("shared by both recipes", TrainConfig, common)]
    for name, cls in RECIPES.items():
        own = {f.name for f in dataclasses.fields(cls)} - common
        groups.append((f"{name} recipe only", cls, own))
    for title, cls, names in groups:
        group = parser.add_argument_group(title)
        hints = _field_types(cls)
        for f in dataclasses.fields(cls):
            if f.name not in names or f.name == "recipe":
                continue
            base, _ = _base_type(hints[f.name])
            flags = [f"--{f.name}"] + ([f"--{f.name.replace('_', '-')}"] if "_" in f.name else [])
            default = f.default if f.default is not dataclasses.MISSING else None
            help_text = f"{f.metadata['help']} (default: {default})".replace("%", "%%")
            kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": help_text}
            if base is bool:
                kwargs.update(nargs="?", const="true", metavar="BOOL")
            else:
                kwargs.update(metavar=base.__name__.upper())
            group.add_argument(*flags, **kwargs)


def config_from_args(args: argparse.Namespace, recipe: str | None = None) -> TrainConfig:
    """Resolve the config named by ``args.config`` with every flag that was given on the command line."""
    names = {f.name for cls in RECIPES.values() for f in dataclasses.fields(cls)} - {"recipe"}
    overrides = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    return load_config(getattr(args, "config", None), overrides, recipe=recipe or getattr(args, "recipe", None))


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The resolved config as plain data (for run.json and logs)."""
    return dataclasses.asdict(config)

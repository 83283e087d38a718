"""Training configuration: one dataclass per recipe, mirrored by the YAML files in ``configs/train/``.

Values resolve in three layers: the dataclass defaults below (the POLLUX paper's hyperparameters), then the YAML
file, then command-line flags::

    judge-train --config configs/train/t-lite/seq2seq.yaml --learning-rate 2e-5 --output-dir runs/lr2e-5

A YAML file names its recipe (``recipe: seq2seq``, ``regression``, ``classifier`` or ``grpo``); a key the recipe
does not define is an error, as is a flag that belongs only to another recipe. Every field carries its help text, which
``judge-train run --help`` prints. Flags are spelt with dashes; the underscore spelling (``--output_dir``) still
works (``judge.plumbing.config_files``).

Why one module of ~1,360 lines: the recipes share most of their fields (the base model, the data, the optimiser, the
Slurm and DeepSpeed settings) through one base class, and each recipe's checks read its neighbours'; a module per
recipe would scatter one table of hyperparameters over five files.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from judge.plumbing.config_files import ConfigError, add_config_flags, option, read_config_file, resolve_config
from judge.plumbing.json_reading import value_words
from judge.sample_data import SAMPLE_DATA  # ``data`` naming the bundled sample: one name in every CLI

if TYPE_CHECKING:
    from judge.splits import SplitSpec

__all__ = [
    "ConfigError",
    "RECIPES",
    "TINY_MODEL",
    "SAMPLE_DATA",
    "TrainConfig",
    "Seq2SeqConfig",
    "RegressionConfig",
    "ClassifierConfig",
    "GRPORecipeConfig",
    "GRPO_RECIPE_ARGUMENTS",
    "GRPO_REFUSED_ARGUMENTS",
    "GRPO_GENERATION_KWARGS_SET",
    "SEQ2SEQ_RECIPE_ARGUMENTS",
    "SEQ2SEQ_REFUSED_ARGUMENTS",
    "agreement_rule_problem",
    "REGRESSION_RECIPE_ARGUMENTS",
    "CLASSIFIER_RECIPE_ARGUMENTS",
    "GRPO_TRAINER_ARG_CHOICES",
    "GRPO_TRAINER_ARG_RANGES",
    "TINY_QWEN3",
    "load_config",
    "zero_shot_split",
    "zero_stage",
    "add_config_arguments",
    "config_from_args",
    "config_to_dict",
]

#: ``model_name_or_path`` value that builds a randomly initialised 2-layer Qwen2 on the real Qwen2.5 vocabulary
#: (``train.tiny_models``) into ``<output_dir>/base-model``: what the tiny CPU configs, tests and demo train.
TINY_MODEL = "tiny-qwen2"
#: ``model_name_or_path`` value that builds a randomly initialised 2-layer Qwen3 (``Pollux-4B-Judge``'s architecture,
#: Qwen3's thinking chat template; ``train.tiny_models.build_tiny_qwen3``) into ``<output_dir>/base-model``.
TINY_QWEN3 = "tiny-qwen3"


#: ``optim`` values a DeepSpeed JSON's AdamW ``optimizer`` block runs faithfully: transformers' full-precision torch
#: AdamW on CUDA. The 8-bit, paged, any-precision and schedule-free variants compute another update, which
#: DeepSpeed's AdamW would silently replace; the XLA and NPU names record a device these GPU jobs never run on, so
#: run.json would name an optimizer that is neither what ran (DeepSpeed's) nor buildable here.
DEEPSPEED_ADAMW_OPTIMS = frozenset({"adamw_torch", "adamw_torch_fused"})

#: The ``params`` of a DeepSpeed JSON's AdamW block that transformers fills from (or checks against) the config
#: (src/transformers/integrations/deepspeed.py, ``trainer_config_process``: lr, betas, eps, weight_decay).
DEEPSPEED_ADAMW_PARAMS = frozenset({"lr", "betas", "eps", "weight_decay"})


def _zero_stage_given(settings: dict[str, Any]) -> Any:
    """The ZeRO stage a DeepSpeed JSON writes, as written (``"3"``, ``3.0``): 0 without a ``zero_optimization``
    block or stage. ``zero_stage`` reads it as DeepSpeed does; ``TrainConfig.validate`` quotes it as written."""
    zero = settings.get("zero_optimization")
    return zero.get("stage", 0) if isinstance(zero, dict) else 0


def zero_stage(settings: dict[str, Any]) -> int | None:
    """The ZeRO stage a DeepSpeed JSON (as ``TrainConfig.deepspeed_settings`` read it) sets, read as DeepSpeed reads
    it (pydantic's lax reading, deepspeed/runtime/zero/config.py: ``"3"`` and ``3.0`` are 3, ``true`` is 1): 0
    without a ``zero_optimization`` block or stage; None for a value DeepSpeed reads as no stage 0 to 3 (it refuses
    it at start). Every check that depends on the stage reads it here."""
    raw = _zero_stage_given(settings)
    if isinstance(raw, str):
        try:
            stage = int(raw.strip())
        except ValueError:
            return None
    elif isinstance(raw, float):
        stage = int(raw) if raw.is_integer() else None
    elif isinstance(raw, int):
        stage = int(raw)
    else:
        return None
    return stage if stage in (0, 1, 2, 3) else None


#: Every recipe config's ``recipe`` help: one text for the four classes.
_RECIPE_HELP = "Which recipe this file configures: 'seq2seq', 'regression', 'classifier' or 'grpo'."


@dataclass
class TrainConfig:
    """Fields shared by every recipe."""

    # --- what to train -------------------------------------------------------------------------------------------
    recipe: str = option("", _RECIPE_HELP)
    model_name_or_path: str = option(
        TINY_MODEL,
        f"Base model: a local folder or a hub id (T-lite: t-tech/T-lite-it-1.0). '{TINY_MODEL}' builds a random "
        "2-layer Qwen2 on the Qwen2.5 vocabulary into <output_dir>/base-model (CPU tests and demo).",
    )
    output_dir: str = option(
        "runs/judge",
        "Run folder: checkpoints (checkpoint-N/), run.json and the final export (export/).",
    )
    seed: int = option(42, "Seed for model init, data order and dropout (written to run.json); 0 to 2**32 - 1.")

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
    split_file: str = option(
        "",
        "Zero-Shot split YAML whose task types and criteria zero_shot refuses or drops (default: the packaged "
        "judge/data/zero_shot.yaml); give the split stage's own split_file (configs/data/split.yaml) when it has one.",
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
        "Fraction of instructions held out as the validation set, each with all its answers and criteria (by a hash "
        "of the instruction; 0 disables evaluation and best-checkpoint tracking).",
    )
    max_rows: int | None = option(
        None,
        "Keep only the first N training rows after filtering (in data order): smoke runs and overfit tests.",
    )
    max_length: int = option(
        4096,
        "Longest training sequence in tokens (prompt + target through the chat template; grpo: prompt + completion, "
        "see `judge-train grpo --help`). Longer rows are dropped and counted, never truncated: a truncated target "
        "teaches a judge that never writes [END].",
    )

    # --- optimisation (POLLUX paper, Section 3.2: AdamW, lr from 1e-5 to 0 over 3 epochs, global batch 256; the linear
    # shape of the decay is our choice, the paper does not name one) ------------------------------------------------
    learning_rate: float = option(1e-5, "Peak AdamW learning rate.")
    lr_scheduler_type: str = option(
        "linear",
        "Learning-rate schedule (transformers name); 'linear' decays to 0. The paper says 'from 1e-5 to 0' (Section 3.2) "
        "without a shape: linear is this toolkit's choice.",
    )
    warmup_steps: int = option(0, "Linear warm-up steps before the decay.")
    num_train_epochs: float = option(3.0, "Epochs over the training rows.")
    max_steps: int = option(-1, "Stop after this many optimizer steps, a positive number (overrides epochs); -1: "
                                "not set, num_train_epochs decides.")
    global_batch_size: int = option(
        256,
        "Rows per optimizer step over all ranks (grpo: completions, prompts x num_generations). Gradient "
        "accumulation is derived: global_batch_size / (per_device_train_batch_size x world size), which must divide "
        "evenly.",
    )
    per_device_train_batch_size: int = option(1, "Rows per forward pass on one device (grpo: completions).")
    per_device_eval_batch_size: int = option(1, "Rows per forward pass during evaluation.")
    weight_decay: float = option(0.0, "AdamW weight decay.")
    max_grad_norm: float = option(1.0, "Gradient clipping norm.")
    optim: str = option("adamw_torch", "Optimizer (transformers name).")
    bf16: str = option("auto", "bfloat16 training: 'auto' (on when CUDA is available), 'true' or 'false'.",
                       choices=("auto", "true", "false"))
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
        "Modules that get adapters: 'all-linear' (the decoder blocks' linear layers) or a comma-separated list "
        "(q_proj,k_proj,...); lm_head is refused for seq2seq and grpo (trl reads lm_head.weight directly).",
    )

    # --- checkpoints, logging ------------------------------------------------------------------------------------
    save_steps: int = option(200, "Checkpoint every N optimizer steps (and evaluate then, when there is a validation set).")
    save_total_limit: int = option(
        2,
        "Checkpoints kept (0: all of them); rotation never deletes the best one (lowest eval_loss) when evaluating.",
    )
    logging_steps: int = option(10, "Log loss and learning rate every N steps.")
    report_to: str = option(
        "none",
        "Where logs go: 'none', 'wandb' (needs WANDB_API_KEY or `wandb login`, unless WANDB_MODE=offline), or another "
        "transformers integration whose package is installed ('tensorboard' needs tensorboard); comma-separated for "
        "several.",
    )
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
        "Any other key of the installed transformers' TrainingArguments (and of trl's SFTConfig for seq2seq, its "
        "GRPOConfig for grpo), passed to the trainer as given, e.g. {adam_beta2: 0.95, lr_scheduler_kwargs: {...}} "
        "in YAML or --trainer-args '{\"adam_beta2\": 0.95}'; a flag's keys are merged over the YAML's, key by key. Checked by "
        "building TrainingArguments when the config loads; keys this config sets itself, or derives "
        "(gradient_accumulation_steps), are refused.",
    )

    def validate(self) -> None:
        """Raise ConfigError for values no recipe can run with."""
        # Every number of every recipe, before any folder is made: a NaN passes each `<= 0` below (every comparison
        # with it is false) and reached torch's optimizer only after the model was built and run.json written.
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{f.name} must be a finite number, got {value}")
        if self.recipe not in RECIPES:
            raise ConfigError(f"recipe must be one of {sorted(RECIPES)}, got {self.recipe!r}")
        if isinstance(self.data, str) and not self.data.strip():  # read as a path, the current folder: refused as judge-eval refuses --data ""
            raise ConfigError(f"data: empty; give a file, folder or dataset name (or `{SAMPLE_DATA}`)")
        if self.zero_shot not in ("refuse", "drop", "allow"):
            raise ConfigError(f"zero_shot must be 'refuse', 'drop' or 'allow', got {self.zero_shot!r}")
        zero_shot_split(self)  # a file that does not load stops the run before any folder is made
        if self.bf16 not in ("auto", "true", "false"):
            raise ConfigError(f"bf16 must be 'auto', 'true' or 'false', got {self.bf16!r}")
        if not 0.0 <= self.eval_fraction < 1.0:
            raise ConfigError(f"eval_fraction must be in [0, 1), got {self.eval_fraction}")
        if not 0.0 <= self.min_russian_share <= 1.0:
            raise ConfigError(f"min_russian_share must be in [0, 1], got {self.min_russian_share}")
        for name in ("global_batch_size", "per_device_train_batch_size", "per_device_eval_batch_size", "max_length",
                     "save_steps", "logging_steps", "learning_rate", "lora_r", "lora_alpha"):  # fmt: skip
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("num_train_epochs", "warmup_steps", "weight_decay", "max_grad_norm", "dataloader_num_workers"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative, got {getattr(self, name)}")
        # transformers reads any max_steps <= 0 as "not set" (its default -1): -5 or 0 would silently train for
        # num_train_epochs instead.
        if self.max_steps != -1 and self.max_steps <= 0:
            raise ConfigError(f"max_steps must be a positive number of steps, or -1 (not set: num_train_epochs "
                              f"decides), got {self.max_steps}")
        if self.max_steps > 0:  # in epoch mode the steps are known in training (warmup_within_the_run)
            from train.training_arguments import check_warmup

            check_warmup(self.warmup_steps, self.max_steps)
        # transformers reads a limit <= 0 as "keep every checkpoint": 0 says so; a negative one is a mistake.
        if self.save_total_limit < 0:
            raise ConfigError(f"save_total_limit must not be negative (0 keeps every checkpoint), got "
                              f"{self.save_total_limit}")
        if not 0 <= self.seed < 2**32:  # numpy's seed range (transformers.set_seed seeds numpy too)
            raise ConfigError(f"seed must be in [0, 2**32 - 1], got {self.seed}")
        if self.num_train_epochs == 0 and self.max_steps <= 0:
            raise ConfigError("num_train_epochs must be positive when max_steps is not set (nothing would be "
                              "trained), got 0")
        # A slice by a negative or zero count would silently drop rows from the end, or keep none.
        if self.max_rows is not None and self.max_rows <= 0:
            raise ConfigError(f"max_rows must be a positive number of rows (null keeps them all), got {self.max_rows}")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ConfigError(f"lora_dropout must be in [0, 1), got {self.lora_dropout}")
        modules = [name.strip() for name in self.lora_target_modules.split(",")]
        # peft reads 'all-linear' only as the whole setting: in a list it is a module name no layer has, and the
        # adapters would go to the other names alone
        if not all(modules) or ("all-linear" in modules and len(modules) > 1):
            raise ConfigError(f"lora_target_modules must be 'all-linear' or module names separated by commas, got "
                              f"{self.lora_target_modules!r}")
        if self.resume and self.overwrite_output_dir:
            raise ConfigError("--resume continues the run in output_dir; --overwrite-output-dir deletes it: pick one "
                              "(slurm/train.sbatch passes --resume whenever the folder holds a checkpoint: to start "
                              "over there, set JUDGE_OVERWRITE_OUTPUT_DIR=1, as `judge-train submit -- "
                              "--overwrite-output-dir` does)")
        # The keys the recipe passes its trainer itself: PreparedRun.training_arguments refused them only once the run
        # folder, run.json and the base model existed. A field of this config is left to check_trainer_args, which
        # names the field to set instead.
        passed, own = self.recipe_arguments(), {f.name for f in dataclasses.fields(self)}
        for key in self.trainer_args:
            if key in passed and key not in own:
                raise ConfigError(f"trainer_args.{key}: the {self.recipe} recipe passes this to the trainer itself (it "
                                  f"is {passed[key]}); remove it")
        # trainer_args first: its numbers typed (YAML's '1e-8' text) before the DeepSpeed JSON's are compared to them
        if self.trainer_args:
            from train.training_arguments import check_trainer_args

            check_trainer_args(self, self.arguments_class_fields())
        if self.deepspeed is not None:
            self._check_deepspeed_json()

    def adapter_names(self) -> list[str]:
        """``lora_target_modules`` as names, none when LoRA is off (``all-linear`` stays one name here:
        ``train.lora.target_modules`` expands it)."""
        if not self.lora:
            return []
        return [name.strip() for name in self.lora_target_modules.split(",") if name.strip()]

    def _check_deepspeed_json(self) -> None:
        """Refuse a DeepSpeed JSON whose blocks would silently replace what this config (and run.json) say.

        transformers' DeepSpeed integration (src/transformers/integrations/deepspeed.py, ``deepspeed_optim_sched``)
        hands the step to DeepSpeed whenever the JSON has a ``scheduler`` or ``optimizer`` block: the scheduler's
        rates replace ``lr_scheduler_type``/``warmup_steps`` (WarmupLR holds the peak rate and never decays to 0),
        the optimizer block's type replaces ``optim`` (and ignores ``optim_args``). An optimizer block stays allowed
        for AdamW beside an AdamW ``optim``, with weight decay 0 and no params beyond ``DEEPSPEED_ADAMW_PARAMS``:
        configs/deepspeed/zero3_offload.json needs DeepSpeed's CPU AdamW. A ``tensor_parallel`` ``autotp_size`` above 1
        is refused as ``parallelism_config`` is (``train.training_arguments``): it shrinks the global batch.
        """
        path = Path(self.deepspeed)
        if not path.is_file():
            raise ConfigError(f"deepspeed config {self.deepspeed} not found (see configs/deepspeed/)")
        try:  # the shared reader: a file nested past the parser's depth is a ValueError there, not a RecursionError
            settings = self.deepspeed_settings()
        except (OSError, ValueError) as error:
            raise ConfigError(f"deepspeed config {self.deepspeed} cannot be read as JSON: {error}") from None
        if "scheduler" in settings:
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'scheduler' block would replace "
                              f"lr_scheduler_type {self.lr_scheduler_type!r} and warmup_steps {self.warmup_steps} "
                              "(which run.json and the model card record) with DeepSpeed's own schedule; remove the "
                              "block and set the schedule in this config")
        # DeepSpeed AutoTP (transformers' Trainer.get_tp_size, accelerate's Accelerator reading the same key): each
        # group of autotp_size ranks trains one batch, so a step would train the global batch over autotp_size.
        tensor_parallel = settings.get("tensor_parallel")
        autotp = tensor_parallel.get("autotp_size", 1) if isinstance(tensor_parallel, dict) else 1
        if not isinstance(autotp, (int, float)) or isinstance(autotp, bool) or autotp > 1:
            raise ConfigError(f"deepspeed config {self.deepspeed}: 'tensor_parallel' autotp_size {autotp!r} makes "
                              "ranks share a batch (DeepSpeed AutoTP), while the accumulation is derived for data "
                              "parallelism alone (global batch = per device x accumulation x ranks): a step would "
                              f"train global_batch_size {self.global_batch_size} divided by {autotp!r} while run.json "
                              "records it whole; remove the key (ZeRO shards the model's memory over the ranks "
                              "instead)")
        # Under ZeRO-3 transformers' save_model gathers the weights through accelerate's get_state_dict, which raises
        # unless the JSON asks for it (DeepSpeed's default is false); transformers then saves a DeepSpeed checkpoint
        # and no model.safetensors (trainer.py, Trainer.save_model), and the export would find nothing to load
        # after the whole run. DeepSpeed reads the key under three names (deepspeed/runtime/zero/config.py).
        zero = settings.get("zero_optimization")
        raw, stage = _zero_stage_given(settings), zero_stage(settings)
        if stage is None:
            raise ConfigError(f"deepspeed config {self.deepspeed}: zero_optimization stage {json.dumps(raw)} is not "
                              "one of 0, 1, 2, 3 (DeepSpeed refuses it at start)")
        if type(raw) is not int:
            # transformers (HfDeepSpeedConfig.is_zero3) and accelerate (get_state_dict) test ``stage == 3``
            raise ConfigError(f"deepspeed config {self.deepspeed}: zero_optimization stage {json.dumps(raw)} is not "
                              f"an integer: DeepSpeed reads it as stage {stage}, transformers and accelerate compare "
                              "it with the integer stages and would take it for another (under ZeRO-3, saving the "
                              f"partitioned weights' placeholders as the model); write {stage}")
        gathered = ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                    "stage3_gather_fp16_weights_on_model_save")
        if stage == 3 and not any(zero.get(key) is True for key in gathered):
            raise ConfigError(f"deepspeed config {self.deepspeed}: zero_optimization stage 3 without "
                              "stage3_gather_16bit_weights_on_model_save: true saves no model weights (a DeepSpeed "
                              "checkpoint instead), so the export after training would find none to load; set it to "
                              "true in zero_optimization (configs/deepspeed/zero3.json does)")
        self._refuse_deepspeed_mismatches(settings)
        optimizer = settings.get("optimizer")
        if optimizer is None:
            return
        kind = optimizer.get("type") if isinstance(optimizer, dict) else None
        if not isinstance(kind, str) or kind.lower() != "adamw":
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'optimizer' block (type {kind!r}) would replace "
                              f"optim {self.optim!r}, which run.json and the model card record; use type AdamW or "
                              "remove the block")
        if self.optim not in DEEPSPEED_ADAMW_OPTIMS:
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'optimizer' block (AdamW) would replace optim "
                              f"{self.optim!r}, which run.json and the model card record; set optim to one of "
                              f"{', '.join(sorted(DEEPSPEED_ADAMW_OPTIMS))}, or use a DeepSpeed config without an "
                              "optimizer block (configs/deepspeed/zero3.json)")
        if self.trainer_args.get("optim_args") is not None:
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'optimizer' block takes its settings from its "
                              "own params, so trainer_args 'optim_args' would be recorded and ignored; remove it")
        # transformers fills only these from the config ("auto", integrations/deepspeed.py, trainer_config_process);
        # any other (bias_correction, amsgrad, adam_w_mode, torch_adam) changes the update while run.json says optim.
        params = optimizer.get("params", {})
        if not isinstance(params, dict):
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'optimizer' block's 'params' must be a JSON "
                              f"object, got {value_words(params)}")
        unchecked = sorted(set(params) - DEEPSPEED_ADAMW_PARAMS)
        if unchecked:
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'optimizer' block's params "
                              f"{', '.join(unchecked)} would change the AdamW update that optim {self.optim!r} "
                              f"records; keep only {', '.join(sorted(DEEPSPEED_ADAMW_PARAMS))} (best as \"auto\", "
                              "filled from this config)")
        # DeepSpeed builds its AdamW over all the model's parameters in one group (transformers'
        # integrations/deepspeed.py, deepspeed_init), decaying biases and norm weights, which the Trainer's own AdamW
        # leaves undecayed (Trainer.get_decay_parameter_names): only a weight decay of 0 is the same update. "auto"
        # is this config's weight_decay (a number that differs from it is a mismatch transformers refuses itself).
        block_decay = params.get("weight_decay", "auto")
        if self.weight_decay != 0 or block_decay not in ("auto", 0):
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'optimizer' block's AdamW decays every "
                              f"parameter, biases and norm weights included, where optim {self.optim!r} (as run.json "
                              "records it) leaves those undecayed: only a weight decay of 0 is the same update "
                              f"(weight_decay {self.weight_decay} here, {block_decay!r} in the block); set "
                              "weight_decay 0 (\"auto\" or 0 in the block), or use a DeepSpeed config without an "
                              "optimizer block (configs/deepspeed/zero3.json)")
        # A key the block leaves out is not filled from this config (transformers' fill_match replaces only keys that
        # are there): DeepSpeed's own defaults would train, lr 1e-3 among them, while run.json records this lr.
        missing = sorted({"lr", "betas", "eps"} - set(params))
        if missing:
            raise ConfigError(f"deepspeed config {self.deepspeed}: its 'optimizer' block's params lack "
                              f"{', '.join(missing)}, so DeepSpeed's own defaults would train (lr 1e-3) while "
                              "run.json records this config's; give each as \"auto\" (filled from this config)")

    def _refuse_deepspeed_mismatches(self, settings: dict[str, Any], accumulation: int | None = None,
                                     bf16: bool | None = None) -> None:
        """Refuse a DeepSpeed JSON number that differs from the value this config gives the trainer.

        transformers fills each ``"auto"`` from the trainer's arguments and collects every other value that differs
        from them (src/transformers/integrations/deepspeed.py, ``HfTrainerDeepSpeedConfig.trainer_config_process``,
        ``fill_match``), but raises only in ``trainer_config_finalize``, inside ``trainer.train()``: after the model
        loaded, as a traceback on every rank. The same comparisons, here: those that hold for any number of ranks
        at load; ``gradient_accumulation_steps`` (derived from the ranks: ``train.training_arguments.
        launch_arithmetic``) and a ``bf16: auto`` (resolved on the machine that trains) with ``accumulation`` and
        ``bf16`` given, by ``train.recipe_steps.prepare`` in the training process.

        Raises:
            ConfigError: naming the file, each key, its value and the config's.
        """
        def node(dotted: str) -> Any:
            value: Any = settings
            for part in dotted.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            return value

        adam = {"adam_beta1": 0.9, "adam_beta2": 0.999, "adam_epsilon": 1e-8}  # TrainingArguments' defaults
        adam.update({key: self.trainer_args[key] for key in adam if key in self.trainer_args})
        expected: dict[str, tuple[Any, str]] = {
            "train_micro_batch_size_per_gpu": (self.per_device_train_batch_size, "per_device_train_batch_size"),
            "train_batch_size": (self.global_batch_size, "global_batch_size"),
            "gradient_clipping": (self.max_grad_norm, "max_grad_norm"),
            "optimizer.params.lr": (self.learning_rate, "learning_rate"),
            "optimizer.params.betas": ([adam["adam_beta1"], adam["adam_beta2"]], "adam_beta1, adam_beta2"),
            "optimizer.params.eps": (adam["adam_epsilon"], "adam_epsilon"),
            # the recipes never train in fp16 (train.training_arguments.training_kwargs)
            "fp16.enabled": (False, "fp16 (always false here)"),
        }
        if accumulation is not None:
            expected["gradient_accumulation_steps"] = (accumulation, "the accumulation derived from "
                                                                     "global_batch_size and the ranks")
        if bf16 is not None or self.bf16 != "auto":
            expected["bf16.enabled"] = (bf16 if bf16 is not None else self.bf16 == "true", f"bf16 {self.bf16!r}")
        mismatches = [f"{key} {value!r} vs {name} {want!r}" for key, (want, name) in expected.items()
                      if (value := node(key)) is not None and value != "auto" and value != want]
        # A fixed accumulation that no number of ranks gives is wrong on every launch.
        fixed = node("gradient_accumulation_steps")
        if accumulation is None and fixed not in (None, "auto") and (
                not isinstance(fixed, int) or isinstance(fixed, bool) or fixed <= 0
                or self.global_batch_size % (fixed * self.per_device_train_batch_size)):
            mismatches.append(f"gradient_accumulation_steps {fixed!r} vs global_batch_size "
                              f"{self.global_batch_size} / per_device_train_batch_size "
                              f"{self.per_device_train_batch_size} on no number of ranks")
        if mismatches:
            raise ConfigError(f"deepspeed config {self.deepspeed}: {'; '.join(mismatches)}: transformers refuses a "
                              "value that differs from the config's only once training starts; set these to "
                              "\"auto\" (filled from this config) or to the config's values")

    def check_deepspeed_launch(self, accumulation: int, bf16: bool) -> None:
        """The DeepSpeed JSON's ``gradient_accumulation_steps`` and ``bf16.enabled`` against this launch's
        (``_refuse_deepspeed_mismatches``); nothing without a DeepSpeed config. The JSON was read at load.

        Raises:
            ConfigError: naming the file and the keys that differ.
        """
        if self.deepspeed is None:
            return
        self._refuse_deepspeed_mismatches(self.deepspeed_settings(), accumulation, bf16)

    def deepspeed_settings(self) -> dict[str, Any]:
        """The DeepSpeed JSON as a mapping ({} without one), read once and kept (at load, by ``validate``): the
        checks at load and at launch, the trainer's preflight and ``judge-train submit``'s note take one reading, so
        that none describes a file edited after another check read it. Read again only for another ``deepspeed``;
        a copy made by ``replaced`` keeps it (``dataclasses.replace`` does not).

        Raises:
            OSError, ValueError: as ``judge.plumbing.config_files.read_json_object`` (``validate`` names them).
        """
        if self.deepspeed is None:
            return {}
        kept = getattr(self, "_deepspeed_read", None)  # not a field: out of run.json, equality and --help
        if kept is None or kept[0] != self.deepspeed:
            from judge.plumbing.config_files import read_json_object

            kept = self._deepspeed_read = (self.deepspeed, read_json_object(Path(self.deepspeed)))
        return kept[1]

    def replaced(self, **changes: Any) -> Self:
        """``dataclasses.replace(self, **changes)`` keeping this config's reading of its DeepSpeed JSON
        (``deepspeed_settings``), which is no field and so no copy's: a check on the copy takes the reading the
        others took, not the file as it is now. A change of ``deepspeed`` reads the new file when asked."""
        copy = dataclasses.replace(self, **changes)
        kept = getattr(self, "_deepspeed_read", None)
        if kept is not None and kept[0] == copy.deepspeed:
            copy._deepspeed_read = kept
        return copy

    def arguments_class_fields(self) -> frozenset[str]:
        """Keys the recipe's trainer-arguments class takes beyond ``TrainingArguments``'s (none here)."""
        return frozenset()

    def recipe_arguments(self) -> dict[str, str]:
        """The trainer-arguments keys the recipe passes itself beside this config's fields -> what it makes each
        (``validate`` refuses them in ``trainer_args``); none here. The grpo recipe refuses its own
        (``GRPO_RECIPE_ARGUMENTS``) before the shared checks."""
        return {}

    def launch_notes(self) -> dict[str, Any]:
        """What run.json's ``launch`` records of this config beside the launch's own facts (none here; GRPO lists
        the settings its generation ignores, ``GRPORecipeConfig.ignored_settings``)."""
        return {}


#: The trainer-arguments keys each recipe passes itself (``train.recipe_steps.PreparedRun.training_arguments``'s
#: ``extra``, which asserts it passes none beyond these) -> what it makes each. ``TrainConfig.validate`` refuses a
#: ``trainer_args`` key among them at load, not once the run folder, run.json and the base model's copy exist.
SEQ2SEQ_RECIPE_ARGUMENTS: dict[str, str] = {
    "max_length": "max_length", "packing": "packing", "packing_strategy": "'bfd', packing's padding-free one",
    "completion_only_loss": "true: the loss reads the completion alone",
    "prediction_loss_only": "true: the validation computes its loss alone",
}  # fmt: skip
#: trl ``SFTConfig`` keys that act on what the seq2seq recipe builds itself -> why each is refused: trl renders,
#: tokenizes and loads with them, while the recipe hands it rows already tokenized as judge-serve tokenizes them
#: (``train.seq2seq.sft_dataset``), a loaded model, and the tokenizer its export saves. ``Seq2SeqConfig.validate``
#: refuses a value other than trl's default at load, not once trl acts on it (or fails) after the model loads.
SEQ2SEQ_REFUSED_ARGUMENTS: dict[str, str] = {
    "chat_template_path": "the seq2seq recipe renders its rows through the base model's own chat template before "
                          "trl sees them: trl would replace the tokenizer's template (and may add tokens and resize "
                          "the embeddings), and the export would ship a template the judge never trained on",
    "eos_token": "the seq2seq recipe's rows end with the chat template's own end-of-turn token: trl would make this "
                 "the end-of-sequence token of the tokenizer and the model config the export saves",
    "pad_token": "the seq2seq recipe hands trl the tokenizer its export saves: trl would set this pad token on it "
                 "and on the model config",
    "assistant_only_loss": "the seq2seq recipe's rows are tokenized already, the loss on the assistant turn alone "
                           "through their completion_mask: trl reads it from conversational rows and refuses these, "
                           "after the model has loaded",
    "dataset_text_field": "the seq2seq recipe's rows are tokenized already: it names a text column trl would "
                          "tokenize, and none is read",
    "dataset_kwargs": "the seq2seq recipe's rows are tokenized already, with the completion_mask trl turns into "
                      "labels: skip_prepare_dataset would skip that (trl refuses it after the model has loaded)",
    "padding_free": "trl refuses it without packing beside the seq2seq recipe's max_length, after the model has "
                    "loaded; packing: true trains padding-free",
    "model_init_kwargs": "the seq2seq recipe loads the base model itself: trl would ignore them",
    "trust_remote_code": "the seq2seq recipe loads the base model and its tokenizer itself: trl would ignore it",
}  # fmt: skip
REGRESSION_RECIPE_ARGUMENTS: dict[str, str] = {
    "remove_unused_columns": "false: the collator builds the batch from the rows' score labels",
    "prediction_loss_only": "true: the validation computes its loss alone",
}
CLASSIFIER_RECIPE_ARGUMENTS: dict[str, str] = {
    "remove_unused_columns": "false: the collator builds the batch from the rows' labels",
}


def agreement_rule_problem(key: str, value: Any) -> str | None:
    """What ``value`` must be to be the integer format's ``key`` (``agreement``, ``tolerance`` or ``no_unique_mode``
    of the traces stage's rule), as "must be ...", or None when it is one. One rule for the config's fields, the
    stage's ``summary.json`` and a row's own (``train.seq2seq.traces_agreement``)."""
    if key == "agreement":
        return None if value in ("mode", "median", "mean") else "must be 'mode', 'median' or 'mean'"
    if key == "no_unique_mode":
        return None if value in ("skip", "any") else "must be 'skip' or 'any'"
    # a negative or NaN tolerance compares false with every distance: every trace would be dropped as disagrees
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return None if number and math.isfinite(value) and value >= 0 else "must be a number of points, 0 or more"


@dataclass
class Seq2SeqConfig(TrainConfig):
    """The generating judge: prompt -> ``[FEEDBACK] rationale [RESULT] score [END]`` (trl SFTTrainer)."""

    recipe: str = option("seq2seq", _RECIPE_HELP)
    packing: bool = option(
        False,
        "Padding-free packing: trl's packing=True with packing_strategy='bfd' (rows packed into max_length blocks, "
        "no pad tokens, sequence boundaries kept through position_ids). The batch sizes then count packed blocks, "
        "not rows: global_batch_size 256 with blocks of ~4 rows is ~1,000 rows a step and ~4x fewer steps than the "
        "paper's 256 rows (off by default for that reason).",
    )
    verdict_format: str = option(
        "tagged",
        "What the judge learns to write: 'tagged' ([FEEDBACK] ... [RESULT] n [END], thinking off, from expert "
        "feedback) or 'integer' (<think>reasoning</think> then the bare integer, thinking on, as Pollux-4B-Judge; "
        "from the 'reasoning' and 'reasoning_score' columns of `judge-train data traces`). The export's manifest "
        "records it, so judge-serve and judge-eval pick it with no flag.",
    )
    missing_reasoning: str = option(
        "refuse",
        "verdict_format integer: a row without a usable 'reasoning' text and 'reasoning_score': 'refuse' stops with an "
        "error naming the row, 'drop' leaves it out and counts it (no_reasoning / no_reasoning_score).",
    )
    # The traces stage's agreement rule (train.synthetic.config.TracesConfig), for traces that carry none of their
    # own: a row the stage wrote records its agreement, tolerance and references, which win (train.seq2seq).
    agreement: str | None = option(
        None,
        "verdict_format integer: what a trace's reasoning_score must agree with, for rows that record no rule of "
        "their own (your own records): 'mode' (the experts' most frequent score), 'median' or 'mean' (rows "
        "recording another keep it, warned of and counted as rule_differs_from_config in run.json's data report). "
        "null: the traces stage's summary.json beside the data, else 'mode'.",
    )
    tolerance: float | None = option(
        None,
        "verdict_format integer: a trace agrees when |reasoning_score - reference| <= this many points, for rows "
        "that record no rule of their own (rows recording another keep it, warned of and counted as "
        "rule_differs_from_config, looser_row_tolerance where looser, in run.json's data report). null: the traces stage's summary.json beside the data, "
        "else 0.",
    )
    no_unique_mode: str | None = option(
        None,
        "verdict_format integer, agreement mode: traces of items whose experts have several modes, for rows that "
        "record no rule of their own: 'skip' leaves them out (counted no_unique_mode), 'any' trains a trace agreeing "
        "with any tied mode. null: the traces stage's summary.json beside the data, else 'skip'. (GRPO's "
        "no_unique_mode differs: its 'skip' keeps such items for the format reward, its 'drop' leaves them out.)",
    )

    def validate(self) -> None:
        super().validate()  # types trainer_args' values first: 'false' is False, which trl's default is
        if self.trainer_args:
            from trl import SFTConfig

            # bfd packing trains padding-free anyway
            _refuse_unapplied(self.trainer_args, SEQ2SEQ_REFUSED_ARGUMENTS, SFTConfig,
                              spared={"padding_free"} if self.packing else set())
            # trl packs the validation rows on eval_packing alone, but its collator is padding-free only beside
            # packing (SFTTrainer.__init__): a packed block would reach the model with an all-ones attention mask and
            # no position_ids, each row attending to the rows packed before it
            if self.trainer_args.get("eval_packing") is True and not self.packing:
                raise ConfigError("trainer_args.eval_packing: true beside packing: false packs the validation rows "
                                  "into blocks trl attends to whole (its collator is padding-free only beside "
                                  "packing): a row would attend to the rows packed before it and the validation loss "
                                  "would not be the rows' own; set packing: true, or remove eval_packing")
        if self.verdict_format not in ("tagged", "integer"):
            raise ConfigError(f"verdict_format must be 'tagged' or 'integer', got {self.verdict_format!r}")
        if self.missing_reasoning not in ("refuse", "drop"):
            raise ConfigError(f"missing_reasoning must be 'refuse' or 'drop', got {self.missing_reasoning!r}")
        for key in ("agreement", "tolerance", "no_unique_mode"):
            value = getattr(self, key)
            if value is not None and (must := agreement_rule_problem(key, value)) is not None:
                raise ConfigError(f"{key} {must} (or null) for the seq2seq recipe, got {value!r}")
        # trl's SFTTrainer computes the loss through its fused LM head, which multiplies the hidden states by
        # lm_head.weight directly (trl/trainer/utils.py, add_fused_lm_head): an adapter there would never train, and
        # SFTTrainer.__init__ refuses it, but only after the run folder, run.json and the loaded base.
        if "lm_head" in self.adapter_names():
            raise ConfigError(f"lora_target_modules: the seq2seq recipe cannot train an adapter on lm_head (trl's "
                              f"SFTTrainer computes the loss from lm_head.weight directly, so it would never train), "
                              f"got {self.lora_target_modules!r}; remove lm_head ('all-linear' is the decoder's "
                              "linear layers)")

    def arguments_class_fields(self) -> frozenset[str]:
        """trl ``SFTConfig``'s own keys (the seq2seq recipe's trainer arguments)."""
        from trl import SFTConfig

        from train.training_arguments import arguments_fields

        return arguments_fields(SFTConfig) - arguments_fields()

    def recipe_arguments(self) -> dict[str, str]:
        return SEQ2SEQ_RECIPE_ARGUMENTS


@dataclass
class RegressionConfig(TrainConfig):
    """The score-head judge: LM head writes ``[FEEDBACK] rationale [END]``, a linear head scores it."""

    recipe: str = option("regression", _RECIPE_HELP)
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
        # train.joint_loss.JointLossTrainer computes its own loss: transformers applies label smoothing only in
        # Trainer.compute_loss, so it would be recorded and ignored. (average_tokens_across_devices is not refused:
        # true, transformers' default, averages the rationale's cross-entropy over every rank's labelled tokens, false
        # over each rank's own; train/joint_loss.py reads it as Trainer.compute_loss does.)
        if self.trainer_args.get("label_smoothing_factor") not in (None, 0, 0.0):
            raise ConfigError(f"trainer_args: 'label_smoothing_factor' {self.trainer_args['label_smoothing_factor']} "
                              "has no effect in the regression recipe: its joint loss takes the rationale's "
                              "cross-entropy without label smoothing (train/joint_loss.py); remove it")

    def recipe_arguments(self) -> dict[str, str]:
        return REGRESSION_RECIPE_ARGUMENTS


@dataclass
class ClassifierConfig(TrainConfig):
    """The task classifier of ``criteria: auto``: a sequence-classification head over the leaf tasks."""

    recipe: str = option("classifier", _RECIPE_HELP)
    data: str = option(
        SAMPLE_DATA,
        "Labelled instructions, comma-separated: `judge-train data instructions` output, POLLUX-format records "
        f"(their task columns label them) or labelled JSONL; '{SAMPLE_DATA}' is the bundled training set "
        "(judge/data/task_classifier_train.jsonl). The bundled held-out set is refused here.",
    )
    zero_shot: str = option(
        "drop",
        "Zero-Shot task types: 'drop' leaves them out (its Zero-Shot figures stay zero-shot; the head, "
        "trained on no row of their 38 leaves, then routes their instructions to Standard types: "
        "docs/criteria-auto.md), 'allow' trains on them (a router that can choose them), 'refuse' stops when the "
        "data has any (the taxonomy texts of those types are added only with 'allow').",
    )
    taxonomy_text: bool = option(
        True,
        "Add taxonomy-text rows to the training rows (train.criteria_rows.taxonomy_rows): per leaf, one of its names "
        "with its description and complexity notes together, and one of its names with each of them apart (five per "
        "leaf for most leaves, four where a note is missing).",
    )
    eval_data: str | None = option(
        None,
        "Must be unset: the classifier recipe holds no validation set (measure the export on the bundled held-out "
        "set: bench/criteria_auto.py).",
    )
    eval_fraction: float = option(
        0.0,
        "Must be 0: the classifier recipe holds no validation set out (measure the export on the bundled held-out "
        "set: bench/criteria_auto.py).",
    )
    min_russian_share: float = option(
        0.5,
        "Not applied: the classifier's rows are instructions, with no rationale whose Cyrillic share it would check; "
        "any other value than the default is refused.",
    )

    def validate(self) -> None:
        super().validate()
        if self.lora:
            raise ConfigError("the classifier recipe trains all weights; lora is not supported for it")
        # The classifier reads neither (train.criteria_rows.classifier_rows): accepted, run.json and the model card
        # recorded a validation set and a filter that never existed, as the grpo recipe refuses what it ignores.
        if self.eval_fraction or self.eval_data:
            raise ConfigError(f"eval_data {self.eval_data!r} / eval_fraction {self.eval_fraction}: the classifier "
                              "recipe takes no validation set (eval_fraction 0, no eval_data); measure the export on "
                              "the bundled held-out set (bench/criteria_auto.py)")
        # Its rows are split by the packaged split (judge.criteria_auto.labelled, train.criteria_rows): another
        # split file would be recorded in run.json and never applied.
        if self.split_file:
            raise ConfigError(f"split_file {self.split_file!r}: the classifier recipe holds out the packaged split's "
                              "task types (judge/data/zero_shot.yaml) and takes no other; leave split_file empty")
        default = next(f.default for f in dataclasses.fields(TrainConfig) if f.name == "min_russian_share")
        if self.min_russian_share != default:
            raise ConfigError(f"min_russian_share {self.min_russian_share}: the classifier recipe does not apply it "
                              f"(its rows are instructions, with no rationale); leave it at {default}")

    def recipe_arguments(self) -> dict[str, str]:
        return CLASSIFIER_RECIPE_ARGUMENTS


#: The loss types trl 1.16's GRPOTrainer computes (trl/trainer/grpo_config.py, ``loss_type``).
GRPO_LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")

#: trl 1.16 ``GRPOConfig`` settings a ``trainer_args`` may set whose named values trl checks only mid-training
#: (trl/trainer/grpo_trainer.py: ``scale_rewards`` and ``multi_objective_aggregation`` when the first rewards are
#: normalised, ``importance_sampling_level`` in the first loss; ``GRPOConfig.__post_init__`` checks none of them) ->
#: the values its help text documents (``scale_rewards`` true and false are its "group" and "none").
GRPO_TRAINER_ARG_CHOICES: dict[str, tuple[Any, ...]] = {
    "scale_rewards": ("group", "batch", "none", True, False),
    "importance_sampling_level": ("token", "sequence"),
    "multi_objective_aggregation": ("sum_then_normalize", "normalize_then_sum"),
}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: trl 1.16 ``GRPOConfig`` numbers a ``trainer_args`` may set that trl never checks (trl/trainer/grpo_config.py)
#: -> (the rule in words, its check). ``num_iterations`` 0 divides by zero at trl's first step
#: (trl/trainer/grpo_trainer.py: ``self._step % generate_every``, ``generate_every = steps_per_generation *
#: num_iterations``); a negative ``epsilon`` (or ``epsilon_high``) turns trl's clipping range 1 - epsilon .. 1 +
#: epsilon upside down; ``top_p`` is documented "in (0, 1]" and reaches the sampler only at the first generation,
#: after the model has loaded.
GRPO_TRAINER_ARG_RANGES: dict[str, tuple[str, Any]] = {
    "num_iterations": ("a positive integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
    "epsilon": ("a number >= 0", lambda v: _number(v) and v >= 0),
    "epsilon_high": ("a number >= 0 or null", lambda v: v is None or (_number(v) and v >= 0)),
    "top_p": ("a number in (0, 1]", lambda v: _number(v) and 0 < v <= 1),
}  # fmt: skip


def _check_trl_grpo_settings(trainer_args: dict[str, Any]) -> None:
    """Refuse a ``trainer_args`` value trl would refuse (or divide by) only once training runs, at load."""
    for key, choices in GRPO_TRAINER_ARG_CHOICES.items():
        # compared by type too: a YAML 1 or 0.0 equals true or false, and is no value trl documents
        if key in trainer_args and not any(type(trainer_args[key]) is type(c) and trainer_args[key] == c
                                           for c in choices):
            raise ConfigError(f"trainer_args.{key} must be one of {list(choices)}, got {trainer_args[key]!r}")
    for key, (rule, holds) in GRPO_TRAINER_ARG_RANGES.items():
        if key in trainer_args and not holds(trainer_args[key]):
            raise ConfigError(f"trainer_args.{key} must be {rule}, got {trainer_args[key]!r}")


#: The trl ``GRPOConfig`` keys the grpo recipe passes itself (``train.grpo.grpo_arguments``) -> its value: the
#: field of this config it is (the same name) or what the recipe makes it. The trainer-arguments builder refuses a
#: ``trainer_args`` key among them only after the run folder, run.json and the base model's copy exist;
#: ``GRPORecipeConfig.validate`` refuses it at load.
GRPO_RECIPE_ARGUMENTS: dict[str, str] = {
    "num_generations": "num_generations", "beta": "beta", "loss_type": "loss_type",
    "max_completion_length": "max_completion_length", "temperature": "temperature",
    "reward_weights": "the weights of rewards", "use_vllm": "use_vllm", "vllm_mode": "vllm_mode",
    "vllm_server_host": "vllm_server_host", "vllm_server_port": "vllm_server_port",
    "vllm_group_port": "vllm_group_port", "vllm_gpu_memory_utilization": "vllm_gpu_memory_utilization",
    "vllm_max_model_length": "max_length (prompt + completion, the most a sequence holds)",
    "remove_unused_columns": "false: the reward functions read the rows' scale and reference columns",
}  # fmt: skip
#: trl ``GRPOConfig`` keys that act on what the grpo recipe builds itself, or on a validation set it never holds ->
#: why each is refused: trl would record them in run.json and apply none to what the recipe trains
#: (``GRPORecipeConfig.validate`` refuses a value other than trl's default at load). The recipe hands trl prompts
#: already rendered through the chat template (``train.grpo.grpo_dataset``), a loaded model and its tokenizer
#: (trl/trainer/grpo_trainer.py, ``GRPOTrainer.__init__``: ``model_init_kwargs`` and ``trust_remote_code`` only for
#: a model named by path and for the reference model it loads at beta above 0 without PEFT, which they would load
#: otherwise than the policy and so skew the KL term; ``chat_template_kwargs`` only for conversational prompts).
GRPO_REFUSED_ARGUMENTS: dict[str, str] = {
    "chat_template_kwargs": "the grpo recipe hands trl its prompts rendered already (thinking on or off as "
                            "verdict_format says), and trl applies these only to conversational prompts",
    "model_init_kwargs": "the grpo recipe loads the base model itself: trl would apply them only to the reference "
                         "model it loads at beta above 0 without lora, which would then be loaded otherwise than "
                         "the policy, and ignore them otherwise",
    "trust_remote_code": "the grpo recipe loads the base model and its tokenizer itself: trl would apply it only to "
                         "the reference model it loads at beta above 0 without lora, which would then be loaded "
                         "otherwise than the policy, and ignore it otherwise",
    "num_generations_eval": "the grpo recipe holds no validation set: trl would never sample for one",
}  # fmt: skip
#: Sampling keys that trl's ``generation_kwargs`` would set over what trl builds from the recipe's own settings
#: (trl/trainer/grpo_trainer.py, ``GRPOTrainer.__init__``: its ``generation_kwargs`` literal, for transformers'
#: generate; trl/generation/vllm_generation.py for vLLM, colocated and served) -> the setting to use instead, which
#: the config checks and run.json records.
GRPO_GENERATION_KWARGS_SET: dict[str, str] = {
    "temperature": "temperature", "do_sample": "temperature (the recipe always samples: a group of identical "
                                               "greedy completions has every advantage 0)",
    "max_tokens": "max_completion_length", "max_new_tokens": "max_completion_length",
    "n": "num_generations", "num_return_sequences": "num_generations",
    "top_p": "trainer_args.top_p", "top_k": "trainer_args.top_k", "min_p": "trainer_args.min_p",
    "repetition_penalty": "trainer_args.repetition_penalty",
    "logprobs": "nothing: trl asks vLLM for the log-probabilities its importance sampling reads",
    "eos_token_id": "nothing: trl ends completions at the tokenizer's end tokens, which the rewards read",
    "pad_token_id": "nothing: trl takes it from the tokenizer, which renders the prompts and decodes the completions",
    "bos_token_id": "nothing: trl takes it from the tokenizer, which renders the prompts and decodes the completions",
    "cache_implementation": "trainer_args.cache_implementation",
}  # fmt: skip


def _refuse_unapplied(trainer_args: dict[str, Any], refused: dict[str, str], trl_config_cls: Any,
                      spared: set[str] = frozenset()) -> None:
    """Refuse each key of ``refused`` (-> why) that ``trainer_args`` gives at a value other than trl's default for it
    in ``trl_config_cls`` (None and False count as the default too), but those in ``spared``."""
    defaults = {f.name: f.default for f in dataclasses.fields(trl_config_cls)}
    for key, value in trainer_args.items():
        if key in refused and key not in spared and value not in (None, False, defaults[key]):
            raise ConfigError(f"trainer_args.{key}: {refused[key]}; remove it")


def _refuse_what_trl_would_not_apply(trainer_args: dict[str, Any]) -> None:
    """Refuse ``GRPO_REFUSED_ARGUMENTS`` at a value other than trl's default, and ``generation_kwargs`` keys among
    ``GRPO_GENERATION_KWARGS_SET`` (a JSON text read as trl's ``GRPOConfig`` reads it)."""
    from trl import GRPOConfig

    _refuse_unapplied(trainer_args, GRPO_REFUSED_ARGUMENTS, GRPOConfig)
    given = trainer_args.get("generation_kwargs")
    if isinstance(given, str):
        try:
            given = json.loads(given)
        except ValueError:
            return  # GRPOConfig refuses text that is no JSON mapping itself, when the config loads
    for key in given if isinstance(given, dict) else ():
        if key in GRPO_GENERATION_KWARGS_SET:
            raise ConfigError(f"trainer_args.generation_kwargs.{key}: trl would sample with it over the recipe's "
                              f"own setting, which run.json and the model card record; set "
                              f"{GRPO_GENERATION_KWARGS_SET[key]} instead")


@dataclass
class GRPORecipeConfig(TrainConfig):
    """A judge that thinks, trained by reinforcement against the experts' labels (trl ``GRPOTrainer``).

    Defaults not inherited are trl 1.16's ``GRPOConfig`` defaults (huggingface/trl, trl/trainer/grpo_config.py), which
    follow DAPO (arXiv 2503.14476: no KL term, token-level loss) and DeepSeekMath's GRPO learning rate (arXiv
    2402.03300, Section 4.2: 1e-6); ``docs/reasoning-judges.md`` lists them with their sources.
    """

    recipe: str = option("grpo", _RECIPE_HELP)
    learning_rate: float = option(1e-6, "Peak AdamW learning rate (trl GRPOConfig's default; DeepSeekMath's GRPO, 1e-6).")
    num_train_epochs: float = option(1.0, "Epochs over the training prompts.")
    eval_fraction: float = option(
        0.0,
        "Must be 0: the GRPO recipe holds no validation set out (score the export with judge-eval instead).",
    )
    verdict_format: str = option(
        "integer",
        "How the policy judge answers: 'integer' (reasoning, then a bare integer; the chat template's thinking on, "
        "as judge-serve prompts Pollux-4B-Judge) or 'tagged' ([FEEDBACK] ... [RESULT] n [END], thinking off). Written "
        "into the export's manifest, so judge-serve and judge-eval read it with no flag.",
    )
    rewards: dict[str, float] = option(
        {"format_reward": 1.0, "agreement_reward": 1.0},
        "Reward functions (train.grpo_rewards.REWARDS) -> weight in the summed reward. format_reward: 1 when the "
        "verdict parses (judge-serve's parser), its score is one of the rubric's levels, it gives its reasons (a "
        "reasoning or [FEEDBACK] of at least two words) and it answers in the form the earlier steps trained (integer: "
        "a bare integer after one reasoning block, so '</think> Оценка 1 из 2' earns 0; tagged: one bare [FEEDBACK] "
        "... [RESULT] n [END] block, no text around it), else 0; agreement_reward: 1 - |score - experts' mode| / "
        "(scale max - min), 0 for a failed, off-scale or between-levels verdict, so it is refused without a positive "
        "format_reward. Both log verdicts/failed_share. Equal weights are trl's default (reward_weights None).",
    )
    no_unique_mode: str = option(
        "drop",
        "Items whose experts have no unique mode: 'drop' leaves them out and counts them (as the paper's MAE excludes "
        "them), 'nearest' rewards agreement with the closest of the tied modes, 'skip' keeps them for the format "
        "reward only (agreement None, which trl leaves out of the mean; refused unless rewards weights format_reward).",
    )
    # The shared fields whose unit differs here: trl's GRPO batches count completions, and a sequence is a prompt
    # with a sampled completion rather than a row with its target (train.grpo.prompts_per_step, screen_prompts).
    max_length: int = option(
        4096,
        "Longest sequence in tokens: the prompt (through the chat template) + its completion, and the context vLLM "
        "is sized to. Prompts longer than max_length - max_completion_length are dropped and counted as too_long, "
        "never truncated.",
    )
    global_batch_size: int = option(
        256,
        "Completions per optimizer step over all ranks: prompts per step x num_generations, so a multiple of "
        "num_generations. Gradient accumulation is derived: global_batch_size / (per_device_train_batch_size x world "
        "size), which must divide evenly.",
    )
    per_device_train_batch_size: int = option(1, "Completions per forward pass on one device.")
    num_generations: int = option(8, "Completions sampled per prompt (the group; trl's default 8).")
    beta: float = option(0.0, "KL weight against the reference model, >= 0 (trl's default 0: DAPO drops the KL "
                              "term).")
    loss_type: str = option("dapo", "trl loss_type: 'dapo' (token-level, DAPO), 'grpo', 'dr_grpo', 'bnpo', ...")
    max_completion_length: int = option(
        512,
        "Most tokens a completion may have (trl's default 512). A reasoning cut by it has no verdict: it fails to "
        "parse and earns 0.",
    )
    temperature: float = option(1.0, "Sampling temperature of the completions, > 0 (trl's default 1.0).")
    use_vllm: bool = option(False, "Generate with vLLM (GPU); false generates with transformers (CPU tests, small runs).")
    vllm_mode: str = option(
        "colocate",
        "'colocate': a vLLM engine inside every training process, sharing its GPU; 'server': `trl vllm-serve` on its "
        "own node (judge-train submit renders both), reached at vllm_server_host:vllm_server_port.",
    )
    vllm_server_host: str = option("127.0.0.1", "server mode: the host running `trl vllm-serve`.")
    vllm_server_port: int = option(
        8000,
        "server mode: the port of `trl vllm-serve` (1-65535; trl's default 8000). A server you start yourself; the job "
        "`judge-train submit` renders starts its own on a port found free on its node at the job's start and passes "
        "it here (its --vllm-server-port fixes one).",
    )
    vllm_group_port: int = option(
        51216,
        "server mode: the port the trainer's main process opens on its host for the NCCL group that pushes the "
        "weights to the server (1-65535; trl's GRPOConfig default 51216). The job `judge-train submit` renders "
        "passes one found free on the first training host at the job's start (its --vllm-group-port fixes one).",
    )
    vllm_server_tensor_parallel_size: int = option(
        1,
        "server mode: GPUs `trl vllm-serve` splits the model over (judge-train submit renders it; it must divide the "
        "model's attention heads: 4 for a Qwen2.5-7B's 28, up to 8 for a Qwen3-8B's 32).",
    )
    vllm_gpu_memory_utilization: float = option(
        0.3, "colocate mode: the share of each GPU's memory vLLM takes, in (0, 1] (trl's default 0.3)."
    )
    min_russian_share: float = option(
        0.5,
        "Not applied by grpo: its rows are prompts, with no rationale whose Cyrillic share it would check, and the "
        "rewards do not check the policy's language; any other value than the default is refused.",
    )
    eval_data: str | None = option(
        None,
        "Must be unset: the grpo recipe holds no validation set (score the export with judge-eval).",
    )

    def validate(self) -> None:
        # Before the shared trainer_args checks, which build the trainer arguments from these keys as given. A key
        # that is a field of this config is left to them: they refuse it naming the field (and flag) to set.
        own = {f.name for f in dataclasses.fields(self)}
        for key in self.trainer_args:
            if key in GRPO_RECIPE_ARGUMENTS and key not in own:
                raise ConfigError(f"trainer_args.{key}: the grpo recipe passes this to trl itself (it is "
                                  f"{GRPO_RECIPE_ARGUMENTS[key]}); remove it")
        super().validate()
        from judge.verdicts import VerdictFormat

        if self.verdict_format not in VerdictFormat.ALL:
            raise ConfigError(f"verdict_format must be one of {list(VerdictFormat.ALL)}, got {self.verdict_format!r}")
        if self.no_unique_mode not in ("drop", "nearest", "skip"):
            raise ConfigError(f"no_unique_mode must be 'drop', 'nearest' or 'skip', got {self.no_unique_mode!r}")
        if self.vllm_mode not in ("colocate", "server"):
            raise ConfigError(f"vllm_mode must be 'colocate' or 'server', got {self.vllm_mode!r}")
        # trl 1.16's loss types (GRPOConfig.loss_type's help): trl itself refuses another only inside its first
        # loss computation, after the model and vLLM have loaded.
        if self.loss_type not in GRPO_LOSS_TYPES:
            raise ConfigError(f"loss_type must be one of {list(GRPO_LOSS_TYPES)}, got {self.loss_type!r}")
        self._validate_vespo()
        self._validate_trainer_init_refusals()
        _check_trl_grpo_settings(self.trainer_args)
        if self.trainer_args:
            _refuse_what_trl_would_not_apply(self.trainer_args)
        from train.grpo_rewards import REWARDS

        unknown = sorted(set(self.rewards) - set(REWARDS))
        if not self.rewards or unknown:
            raise ConfigError(f"rewards: unknown reward(s) {unknown}; choose from {sorted(REWARDS)}" if unknown
                              else f"rewards: name at least one of {sorted(REWARDS)}")
        if any(not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w)
               for w in self.rewards.values()):
            raise ConfigError(f"rewards: weights must be finite numbers, got {self.rewards}")
        # A negative weight pays the policy for moving away from the experts (or from parseable verdicts); with no
        # weight above 0 every reward of a group is 0, so every advantage is 0 and the run exports its base unchanged
        # under a GRPO model card.
        negative = next(((name, w) for name, w in self.rewards.items() if w < 0), None)
        if negative is not None:
            raise ConfigError(f"rewards: {negative[0]} has weight {negative[1]}; a weight must not be negative (it "
                              "would train the judge away from what the reward pays for)")
        if not any(w > 0 for w in self.rewards.values()):
            raise ConfigError(f"rewards: no weight is above 0 in {self.rewards}: every advantage would be 0 and the "
                              "run would export its base unchanged; give at least one reward a positive weight")
        # Under skip a tied item's agreement is None: with no weighted format reward every reward of its group is None
        # (or 0), its advantages are 0, and each batch trl warns that all reward functions returned None.
        if self.no_unique_mode == "skip" and not self.rewards.get("format_reward"):
            raise ConfigError(f"no_unique_mode 'skip' keeps tied items for the format reward only, and rewards "
                              f"{self.rewards} weights no format_reward: add format_reward to rewards, or set "
                              "no_unique_mode to 'drop' or 'nearest'")
        # agreement_reward pays 0 both for the farthest score and for no verdict at all: only a weighted format reward
        # makes failing cost more than disagreeing.
        if self.rewards.get("agreement_reward", 0) > 0 and not self.rewards.get("format_reward", 0) > 0:
            raise ConfigError(f"rewards {self.rewards}: agreement_reward pays 0 for a verdict that failed to parse as "
                              "for the farthest score, so with no format_reward above 0 nothing trains the judge "
                              "away from failing; add format_reward with a positive weight to rewards")
        # generate() refuses a temperature of 0 with sampling on, and only once the model has loaded.
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be positive, got {self.temperature}")
        if self.beta < 0:
            raise ConfigError(f"beta must not be negative, got {self.beta}")
        if not 0 < self.vllm_gpu_memory_utilization <= 1:
            raise ConfigError(f"vllm_gpu_memory_utilization must be in (0, 1], got {self.vllm_gpu_memory_utilization}")
        for name in ("vllm_server_port", "vllm_group_port"):
            if not 0 < getattr(self, name) <= 65535:
                raise ConfigError(f"{name} must be in (0, 65535], got {getattr(self, name)}")
        if self.vllm_server_tensor_parallel_size <= 0:
            raise ConfigError(f"vllm_server_tensor_parallel_size must be positive, got "
                              f"{self.vllm_server_tensor_parallel_size}")
        if self.num_generations < 2:
            raise ConfigError(f"num_generations must be at least 2 (a group), got {self.num_generations}")
        if self.global_batch_size % self.num_generations:
            raise ConfigError(f"global_batch_size {self.global_batch_size} (completions per step) must be a multiple "
                              f"of num_generations {self.num_generations}")
        self._validate_generation_batch()
        if self.eval_fraction or self.eval_data:
            raise ConfigError("the grpo recipe takes no validation set (eval_fraction 0, no eval_data): score the "
                              "export with judge-eval")
        # Nothing in the recipe reads it (the rows are prompts, the rewards leave the language unchecked): accepted,
        # a run asked to keep the policy's reasoning Russian would get no check at all.
        default = next(f.default for f in dataclasses.fields(TrainConfig) if f.name == "min_russian_share")
        if self.min_russian_share != default:
            raise ConfigError(f"min_russian_share {self.min_russian_share}: the grpo recipe does not apply it (its rows "
                              f"are prompts, and no reward checks the policy's language); leave it at {default}")
        if self.max_completion_length <= 0 or self.max_completion_length >= self.max_length:
            raise ConfigError(f"max_completion_length must be positive and below max_length {self.max_length}, got "
                              f"{self.max_completion_length}")
        # trl's GRPOTrainer.compute_loss is its own (trl/trainer/grpo_trainer.py) and never calls the Trainer's,
        # the only place transformers applies label smoothing: it would be recorded in run.json and do nothing.
        if self.trainer_args.get("label_smoothing_factor") not in (None, 0, 0.0):
            raise ConfigError(f"trainer_args: 'label_smoothing_factor' {self.trainer_args['label_smoothing_factor']} "
                              "has no effect in the grpo recipe: trl's GRPOTrainer computes its own policy loss, "
                              "without label smoothing; remove it")
        self._warn_of_ignored_settings()  # last: a config refused above is not warned of as well

    def ignored_settings(self) -> list[str]:
        """The vLLM settings given other than their defaults that this run's generation never reads
        (``_VLLM_MODE_SETTINGS``): the server's under ``vllm_mode: colocate``, the colocated engine's under
        ``server``, and every one of them (``vllm_mode`` too) under ``use_vllm: false``, where transformers generates.

        Accepted rather than refused: a server config switched to colocate by ``--vllm-mode colocate`` alone keeps
        its server's tensor parallel size. ``validate`` names them in a warning; run.json lists them.
        """
        if not self.use_vllm:
            names = ("vllm_mode", *_VLLM_MODE_SETTINGS["server"], *_VLLM_MODE_SETTINGS["colocate"])
        else:
            names = _VLLM_MODE_SETTINGS[self._other_vllm_mode()]
        return [name for name, (value, default) in zip(names, map(self._vllm_setting, names)) if value != default]

    def launch_notes(self) -> dict[str, Any]:
        """run.json's ``launch.ignored_settings``: per launch, as a resume may change ``vllm_mode``."""
        return {"ignored_settings": self.ignored_settings()}

    def _vllm_setting(self, name: str) -> tuple[Any, Any]:
        """(value, default) of a ``_VLLM_MODE_SETTINGS`` name."""
        if name.startswith("trainer_args."):
            key = name.removeprefix("trainer_args.")
            if key not in self.trainer_args:
                return None, None  # not given: nothing to name
            from trl import GRPOConfig  # only where trainer_args gives one: trl is a heavy import

            return self.trainer_args[key], next(f.default for f in dataclasses.fields(GRPOConfig) if f.name == key)
        return getattr(self, name), next(f.default for f in dataclasses.fields(self) if f.name == name)

    def _other_vllm_mode(self) -> str:
        """The vLLM mode this run is not in, whose settings it ignores and which the warning offers."""
        return "server" if self.vllm_mode == "colocate" else "colocate"

    def _warn_of_ignored_settings(self) -> None:
        ignored = self.ignored_settings()
        if not ignored:
            return
        import logging

        given = ", ".join(f"{name} {self._vllm_setting(name)[0]!r}" for name in ignored)
        recorded = "(run.json lists them in launch.ignored_settings)"
        if not self.use_vllm:
            message = (f"use_vllm false ignores the vLLM settings {given}: transformers generates {recorded}; "
                       "remove them, or set use_vllm true")
        else:
            other = self._other_vllm_mode()
            message = (f"vllm_mode {self.vllm_mode!r} ignores {other} mode's {given}: nothing reads them {recorded}; "
                       f"remove them, or set vllm_mode {other!r}")
        logging.getLogger(__name__).warning("%s", message)

    def _validate_vespo(self) -> None:
        """trl's refusal of VESPO with vLLM's sequence-level importance sampling, made at load.

        trl 1.16 refuses it in GRPOTrainer.__init__ (trl/trainer/grpo_trainer.py: ``loss_type`` vespo with
        ``use_vllm`` and ``vllm_importance_sampling_correction`` needs ``vllm_importance_sampling_mode``
        token_truncate or token_mask), after the run folder is claimed and the model loaded; its defaults (correction
        on, mode sequence_mask: trl/trainer/grpo_config.py) are refused there, so a plain ``loss_type: vespo`` with
        ``use_vllm: true`` cannot train.
        """
        if self.loss_type != "vespo" or not self.use_vllm:
            return
        # read as trl reads them: the correction by its truth, the mode by its name
        if not self.trainer_args.get("vllm_importance_sampling_correction", True):
            return
        mode = self.trainer_args.get("vllm_importance_sampling_mode", "sequence_mask")
        if mode not in ("token_truncate", "token_mask"):
            raise ConfigError(f"loss_type 'vespo' with use_vllm needs trainer_args vllm_importance_sampling_mode "
                              f"'token_truncate' or 'token_mask' (got {mode!r}; trl's default is 'sequence_mask'), "
                              "or vllm_importance_sampling_correction false: trl refuses the rest once the model "
                              "has loaded")

    def _validate_trainer_init_refusals(self) -> None:
        """trl's refusals in ``GRPOTrainer.__init__`` (trl/trainer/grpo_trainer.py, trl 1.16) that the config alone
        decides, made at load: there they come after the run folder is claimed and the model loaded.

        ``sync_ref_model`` needs a reference model to synchronise, which trl makes only for ``beta`` above 0, and
        is not supported under LoRA (trl keeps no reference model then: it disables the adapter). An adapter on
        ``lm_head`` is refused: trl computes the log-probabilities from ``lm_head.weight`` directly, so the adapter
        would never be trained.
        """
        if self.trainer_args.get("sync_ref_model"):
            if self.beta == 0:
                raise ConfigError(f"trainer_args.sync_ref_model needs beta above 0 (a reference model to "
                                  f"synchronise; trl makes none at beta {float(self.beta)}): set beta, or remove "
                                  "sync_ref_model")
            if self.lora:
                raise ConfigError("trainer_args.sync_ref_model is not supported with lora (trl keeps no reference "
                                  "model under LoRA, it disables the adapter instead): remove one of them")
        if "lm_head" in self.adapter_names():
            raise ConfigError(f"lora_target_modules: the grpo recipe cannot train an adapter on lm_head (trl computes "
                              f"the log-probabilities from lm_head.weight directly, so it would never train), got "
                              f"{self.lora_target_modules!r}")

    def _validate_generation_batch(self) -> None:
        """trl's checks of a generation batch set in ``trainer_args``, as far as they go without the number of ranks.

        trl makes them in trl/trainer/grpo_config.py, GRPOConfig.__post_init__: ``generation_batch_size`` and
        ``steps_per_generation`` not both; a ``generation_batch_size`` divisible by per-device batch x ranks and by
        ``num_generations``. There they run after the run folder is made and the tokenizer read; here, at load.
        The part that needs the ranks (per-device batch x ranks, and a ``steps_per_generation``'s batch over the
        group) is checked by ``train.grpo.prompts_per_step``, still before anything loads.
        """
        given = {key: self.trainer_args[key] for key in ("generation_batch_size", "steps_per_generation")
                 if self.trainer_args.get(key) is not None}  # fmt: skip
        for key, value in given.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"trainer_args {key} must be a positive integer, got {value!r}")
        if len(given) == 2:
            raise ConfigError(f"trainer_args sets both generation_batch_size {given['generation_batch_size']} and "
                              f"steps_per_generation {given['steps_per_generation']}: each sizes the generation batch "
                              "(trl refuses both at once); keep one")
        batch = given.get("generation_batch_size")
        if batch is None:
            return
        if batch % self.num_generations:
            raise ConfigError(f"trainer_args generation_batch_size {batch} (completions per generation) must be a "
                              f"multiple of num_generations {self.num_generations}: trl samples whole groups")
        # per-device batch x ranks must divide it: with any number of ranks, the per-device batch must.
        if batch % self.per_device_train_batch_size:
            raise ConfigError(f"trainer_args generation_batch_size {batch} must be a multiple of "
                              f"per_device_train_batch_size {self.per_device_train_batch_size} x the ranks")

    def arguments_class_fields(self) -> frozenset[str]:
        """trl ``GRPOConfig``'s own keys (the grpo recipe's trainer arguments)."""
        from trl import GRPOConfig

        from train.training_arguments import arguments_fields

        return arguments_fields(GRPOConfig) - arguments_fields()


RECIPES: dict[str, type[TrainConfig]] = {
    "seq2seq": Seq2SeqConfig,
    "regression": RegressionConfig,
    "classifier": ClassifierConfig,
    "grpo": GRPORecipeConfig,
}


#: The GRPO vLLM settings only one of trl's two modes reads (trl 1.16, trl/generation/vllm_generation.py): the
#: trainer reaches a server at its host and port (or ``vllm_server_base_url``), waits ``vllm_server_timeout`` for it
#: and joins it on the group port; a colocated engine is sized by its GPU share, tensor parallelism, sleep mode and
#: model implementation, which a server takes from its own command line. ``vllm_server_tensor_parallel_size`` is
#: no trl setting: ``judge-train submit`` renders it into the server's command line. ``trainer_args.`` names are
#: compared with trl ``GRPOConfig``'s defaults, the others with this config's.
_VLLM_MODE_SETTINGS: dict[str, tuple[str, ...]] = {
    "server": ("vllm_server_host", "vllm_server_port", "vllm_group_port", "vllm_server_tensor_parallel_size",
               "trainer_args.vllm_server_base_url", "trainer_args.vllm_server_timeout"),
    "colocate": ("vllm_gpu_memory_utilization", "trainer_args.vllm_tensor_parallel_size",
                 "trainer_args.vllm_enable_sleep_mode", "trainer_args.vllm_model_impl"),
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
    if name is None:  # an empty file, or one that leaves the recipe out: say what is missing, not "got None"
        raise ConfigError(f"{source}: names no recipe: give 'recipe:' one of {sorted(RECIPES)} (or run judge-train "
                          "<recipe> --config FILE)")
    if not isinstance(name, str) or name not in RECIPES:
        raise ConfigError(f"{source}: 'recipe' must be one of {sorted(RECIPES)}, got {name!r}")
    overrides = dict(overrides or {})
    if overrides.get("trainer_args") is not None and path is not None:
        # trainer_args is a mapping of free keys: a flag adds to (or replaces keys of) the YAML's, not all of it.
        from judge.plumbing.config_files import coerce

        flag = coerce("trainer_args", overrides["trainer_args"], dict[str, Any], "command line")
        given = coerce("trainer_args", read_config_file(path).get("trainer_args") or {}, dict[str, Any], str(path))
        overrides["trainer_args"] = {**given, **flag}
    config = resolve_config(RECIPES[name], path, {**overrides, "recipe": name}, label=f"the {name} recipe")
    config.validate()
    return config


def add_config_arguments(parser: argparse.ArgumentParser, recipe: str | None = None) -> None:
    """Add a flag for every field of every recipe, grouped (``judge.plumbing.config_files.add_config_flags``).

    With ``recipe`` (a command that fixes it: ``judge-train grpo``, ``judge-train classifier``), only that recipe's
    fields, each shown with that recipe's own default (GRPO's learning rate is 1e-6, not the SFT recipes' 1e-5).
    """
    if recipe is not None:
        names = [f.name for f in dataclasses.fields(RECIPES[recipe]) if f.name != "recipe"]
        add_config_flags(parser.add_argument_group(f"the {recipe} recipe"), RECIPES[recipe], names=names)
        return
    common = [f.name for f in dataclasses.fields(TrainConfig) if f.name != "recipe"]
    add_config_flags(parser.add_argument_group("shared by all recipes (defaults: the seq2seq and regression "
                                               "recipes'; `judge-train grpo --help` shows GRPO's)"),
                     TrainConfig, names=common)
    flagged = set(common)
    for name, cls in RECIPES.items():
        # A field two recipes define (verdict_format: seq2seq and grpo) gets one flag, under the first recipe that
        # has it; either recipe's config takes it.
        own = [f.name for f in dataclasses.fields(cls) if f.name not in flagged and f.name != "recipe"]
        flagged.update(own)
        add_config_flags(parser.add_argument_group(f"{name} recipe only"), cls, names=own)


def config_from_args(args: argparse.Namespace, recipe: str | None = None) -> TrainConfig:
    """Resolve the config named by ``args.config`` with every flag that was given on the command line."""
    names = {f.name for cls in RECIPES.values() for f in dataclasses.fields(cls)} - {"recipe"}
    overrides = {name: value for name, value in vars(args).items() if name in names}
    return load_config(getattr(args, "config", None), overrides, recipe=recipe or getattr(args, "recipe", None))


def zero_shot_split(config: Any) -> SplitSpec:
    """The Zero-Shot split a judge-train config's ``split_file`` names: ``judge.SplitSpec`` of that file, the packaged
    one when it is "" (or the config has no such field). Read once: ``judge.load_split_spec`` keeps each file's.

    Raises:
        ConfigError: "split_file: ..." for a file that is missing or not a split file (judge.splits).
    """
    from judge import load_split_spec

    try:
        return load_split_spec(getattr(config, "split_file", "") or None)
    except (OSError, ValueError) as err:  # FileNotFoundError is an OSError: a path that is not there
        raise ConfigError(f"split_file: {err}") from None


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """The resolved config as plain data (for run.json and logs)."""
    return dataclasses.asdict(config)

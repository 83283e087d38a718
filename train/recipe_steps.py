"""The steps every recipe takes the same way: prepare (config, base model, tokenizer), arguments, train, export.

A recipe (``train/seq2seq.py``, ``train/regression.py``, ``train/classifier.py``) reads as its own steps:

    run = recipe_steps.prepare(config, "seq2seq judge")        # config: logging, batch arithmetic, resume, seed
    rows = ...; run.record_data(report)                          # data: the recipe's rows; run.json on rank 0
    args = run.training_arguments(SFTConfig, has_eval=..., ...)  # model: arguments first (ZeRO-3), then the model
    trainer = SFTTrainer(..., callbacks=[run.stopper, *callbacks])
    result = run.train(trainer)                                  # train: resume, stop cleanly on a signal
    run.export_judge(trainer, result, ...)                       # save: the served layout, checked and recorded

Everything that differs between recipes (rows, datasets, model class, trainer class, export) stays in the recipe;
everything here is the same for all of them. The trainer's arguments are computed in ``train.training_arguments``;
the recipes that train adapters take their ``LoraConfig`` from ``train.lora``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from train.config import TINY_MODEL, TINY_QWEN3, ConfigError, TrainConfig, config_to_dict
from train.output_folder import clear_earlier_run
from train.trainer_preflight import check_optimizer_and_schedule
from train.training_arguments import (Launch, init_distributed, is_main_process, stand_in_for_a_launcher,
                                      training_kwargs, use_bf16, warmup_within_the_run, weights_dtype)

__all__ = [
    "labelled_positions_only_on_cpu",
    "PreparedRun",
    "prepare",
    "rows_fingerprint",
    "check_resumed_data",
    "resolve_base_model",
    "load_tokenizer",
    "drop_build_copies",
    "keep_last_checkpoint",
    "setup_logging",
]

logger = logging.getLogger(__name__)

def resolve_base_model(config: TrainConfig) -> str:
    """The base model folder or hub id; builds the tiny Qwen2 (``tiny-qwen2``) or Qwen3 (``tiny-qwen3``) when named.

    Every rank may call this at once (before torch.distributed is up): each builds into its own temporary folder
    and renames it into place; a rank that finds the folder already there uses it (the build is deterministic). A
    build cut (Ctrl+C, a full disk) removes its temporary folder: no half-built one is left in the run folder."""
    if config.model_name_or_path not in (TINY_MODEL, TINY_QWEN3):
        return config.model_name_or_path
    import shutil
    import tempfile

    from train import tiny_models

    target = Path(config.output_dir) / "base-model"
    if not (target / "config.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".base-model-", dir=target.parent))
        try:
            qwen3 = config.model_name_or_path == TINY_QWEN3
            (tiny_models.build_tiny_qwen3 if qwen3 else tiny_models.build_tiny_qwen2)(scratch, seed=config.seed)
        except BaseException:  # KeyboardInterrupt included: the press stops the run, not the clean-up
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        with contextlib.suppress(OSError):  # another rank got there first: its build is this one's
            scratch.rename(target)
        shutil.rmtree(scratch, ignore_errors=True)
    return str(target)


def load_tokenizer(base: str):
    """The base model's tokenizer, with a pad token that is not the end-of-turn token.

    Qwen2.5 tokenizers pad with ``<|endoftext|>``; a tokenizer without a pad token gets it when the vocabulary has
    it, else its eos (the score head then finds the last token through the attention mask).
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    drop_build_copies(tokenizer)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = "<|endoftext|>" if "<|endoftext|>" in tokenizer.get_vocab() else tokenizer.eos_token
    tokenizer.padding_side = "right"
    return tokenizer


#: What transformers 5's BPE tokenizers (Qwen2Tokenizer, transformers/models/qwen2/tokenization_qwen2.py) keep of
#: the vocabulary and merges they build their Rust tokenizer from: Python copies, read in ``__init__`` only.
_BUILD_COPIES = ("_vocab", "_merges")


def drop_build_copies(tokenizer) -> None:
    """Let go of the Python copies of the vocabulary and merges a tokenizer was built from.

    Any ``datasets.Dataset.map`` with the tokenizer among its arguments (trl's SFTTrainer tokenized the seq2seq
    recipe's rows that way before the recipe built their ids itself, ``train.seq2seq.sft_examples``) fingerprints
    it by pickling its arguments with dill, in Python: for the Qwen2.5 vocabulary (151k tokens, 151k merges) that
    took about eleven times the CPU with the two copies as without them, in every seq2seq training process
    (measured: docs/performance.md, row "a training process fingerprinting its tokenizer",
    ``bench/train_tokenizer_hash.py``); and the copies are dead weight either way. The Rust tokenizer holds the
    same vocabulary and merges, so encoding and ``save_pretrained`` are unchanged
    (tests/integration/training/test_train_recipes.py checks both). A tokenizer without the copies is left as it is.
    """
    for name in _BUILD_COPIES:
        if isinstance(getattr(tokenizer, name, None), (dict, list)):
            setattr(tokenizer, name, None)


def setup_logging() -> None:
    """This package's logs at the root's level on global rank 0 (WARNING elsewhere), transformers' at WARNING or above.
    The handler and the root level are ``judge-train``'s (its ``--log-level``: ``judge.plumbing.console_logging``); a
    host program or pytest keeps its own, and the ``train`` logger's: a level set on it here would win over the root's
    (``--log-level warning`` still printing INFO lines, ``--log-level debug`` none of the DEBUG ones)."""
    import transformers

    if not is_main_process():
        logging.getLogger("train").setLevel(logging.WARNING)
    transformers.utils.logging.set_verbosity(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))


#: The row fields that decide what a step trains on: the id (with the rows' order, the data position a checkpoint
#: resumes from), the text the loss reads (prompt, completion; a classifier's instruction) and the label (regression,
#: classifier; GRPO's rewards read the experts' scores). Other fields (record ids, the feedback and score a completion
#: is rendered from, report notes) either follow from these or do not train.
_TRAINED_FIELDS = ("id", "prompt", "completion", "label", "instruction", "expert_scores", "reference_scores")


def rows_fingerprint(rows: Sequence[dict[str, Any]]) -> str:
    """sha256 over the rows' ``_TRAINED_FIELDS``, in order.

    A resume checks the data by it: the config records only the data's path, and a file rewritten at that path (a
    rerun of the data pipeline, another filter) would train the rest of the run on other rows from the checkpoint's
    data position, which counts rows of the earlier file; the rows rather than the file's bytes, so that a change
    that does not reach the trained rows (a column no recipe reads) does not refuse a resume.
    """
    import hashlib
    import json

    digest = hashlib.sha256()
    for row in rows:
        fields = [row.get(name) for name in _TRAINED_FIELDS]
        digest.update(json.dumps(fields, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
    return digest.hexdigest()


def check_resumed_data(output_dir: str | Path, report: dict[str, Any]) -> None:
    """Refuse a resume whose training rows are not those of the launch it continues (run.json's ``data`` section:
    ``n_train`` and ``train_fingerprint``, ``rows_fingerprint``). An earlier run.json without a fingerprint (an older
    version, or no run.json) goes on with a warning.

    Raises:
        ConfigError: naming the data source and the row counts, old and new.
    """
    from judge.plumbing.provenance import read_provenance

    try:
        earlier = read_provenance(output_dir, missing_ok=True).get("data")
    except ValueError:  # check_resumed_config has already refused or warned about an unreadable run.json
        earlier = None
    before = earlier.get("train_fingerprint") if isinstance(earlier, dict) else None
    if not before:
        logger.warning("--resume: %s/run.json records no fingerprint of the training rows: cannot check that the "
                       "data is the earlier launch's", output_dir)
        return
    if before != report["train_fingerprint"]:
        raise ConfigError(
            f"--resume: the training rows differ from those of the run in {output_dir} (n_train "
            f"{earlier.get('n_train')} -> {report['n_train']}, fingerprint {before[:12]} -> "
            f"{report['train_fingerprint'][:12]}): the data file, or the prompt template the rows are rendered with, "
            "changed since that launch, and the checkpoint's data position counts rows of the earlier one. Restore "
            "the earlier data, or train on the new data into a fresh --output-dir (or start over here with "
            "--overwrite-output-dir)"
        )


def keep_last_checkpoint(stopper):
    """A callback that keeps the checkpoint a run ends at: the one a signal stop saves (the requeued job resumes from
    it) and the final step's (what tells a later ``--resume`` that the run is finished, and what a requeue during
    the export resumes from without training a step).

    With a validation set the trainer tracks the best checkpoint (``metric_for_best_model``), and at the end of
    ``train()`` with ``save_total_limit: 1`` it deletes every checkpoint but the best one (transformers/trainer.py,
    ``_finalize_training``). The stop checkpoint is evaluated only when the stop falls on an evaluation step, so it
    is seldom the best: it went, and every requeue resumed from the last best checkpoint, redoing the same steps
    each time, perhaps forever. The final checkpoint went whenever its evaluation was not the best: the run folder
    then held an earlier checkpoint only, which ``train.output_folder.finished_export`` cannot take for the end of
    the run, so a ``--resume`` of the finished run (slurm/train.sbatch passes one whenever a checkpoint is there)
    trained its last steps again and replaced the judge it had exported. Forgetting the best checkpoint in memory
    once the last checkpoint is written turns that deletion off; the best one is not lost: the last checkpoint's
    trainer_state.json, written before, still names it, rotation keeps it (it protects the best and the newest,
    transformers/trainer_utils.py ``rotate_checkpoints``), and a resumed run tracks it.
    """
    from transformers import TrainerCallback

    class KeepLastCheckpoint(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            stopped_here = stopper.stopped_at_step is not None and stopper.stopped_at_step == state.global_step
            if stopped_here or 0 < state.max_steps <= state.global_step:
                state.best_model_checkpoint = None

    return KeepLastCheckpoint()


def _clear_earlier_run_when_training_begins(config: TrainConfig):
    """A callback that deletes an ``--overwrite-output-dir`` run's predecessor (``clear_earlier_run``) at
    ``on_train_begin``: once ``trainer.train()`` has built the optimizer and the schedule (and, under DeepSpeed,
    compared its JSON with the arguments) and the reporting integrations before it in the callback list have set up
    (W&B's login, ``WandbCallback.setup``), and before the first step. Deleting at the start of ``train()`` lost the
    earlier run's checkpoints and export to refusals that transformers makes only inside it (an optimizer's missing
    package, a DeepSpeed value that differs from the config's, W&B without a key); they now leave it in place, and
    run.json's ``earlier_run_deleted: false`` makes a later ``--resume`` refuse those checkpoints.
    """
    from transformers import TrainerCallback

    class ClearEarlierRun(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            clear_earlier_run(config)

    return ClearEarlierRun()


# ------------------------------------------------------------------------------------------------ the prepare step


@dataclass
class PreparedRun:
    """One recipe run after its config step: what every later step reads.

    Attributes:
        config: the resolved config.
        launch: the batch arithmetic over ranks.
        resume_from: the checkpoint to resume from, or None for a fresh run.
        base_model: the base model folder or hub id (``resolve_base_model``).
        tokenizer: the base model's tokenizer (``load_tokenizer``).
        dtype: the weights' dtype: bfloat16 when the run trains in bf16, else float32.
        stopper: the ``preemption.SaveAndStopOnSignal`` callback; pass it to the trainer (``run.train`` installs it).
        export_under_stopper: whether the recipe's export runs under the stopper's handlers (``export_judge``), so
            that ``train`` leaves them installed for it when training ends; False for a recipe that exports
            without that watch (the task classifier, ``prepare(..., export_under_stopper=False)``).
        prompt_version: the template the prompts are rendered with, for run.json (None: ``judge.PROMPT_VERSION``).
    """

    config: TrainConfig
    launch: Launch
    resume_from: Path | None
    base_model: str
    tokenizer: Any
    dtype: Any
    stopper: Any = field(repr=False)
    export_under_stopper: bool = True
    prompt_version: str | None = None

    def record_data(self, report: dict[str, Any], train_rows: Sequence[dict[str, Any]] | None = None) -> None:
        """Write run.json (config, launch, provenance), the data report and the split held out, on global rank 0.

        With ``train_rows``, the report gets their ``n_train`` and ``train_fingerprint`` (``rows_fingerprint``), and
        a resumed run's are compared first with what the launch it continues recorded (``check_resumed_data``), on
        every rank (rank 0's write comes after its own check, and an unchanged fingerprint reads the same either way).

        Raises:
            ConfigError: a resume whose training rows differ from the earlier launch's.
        """
        from train import provenance

        if train_rows is not None:
            report = {**report, "n_train": len(train_rows), "train_fingerprint": rows_fingerprint(train_rows)}
            if self.resume_from is not None:
                check_resumed_data(self.config.output_dir, report)
        if not is_main_process():
            return
        # bf16 as resolved here ('auto' follows whether CUDA is available), what the model card reports beside the
        # config's spelling; the config's launch notes (GRPO's ignored vLLM settings: a resume may change them).
        launch = {**self.launch.__dict__, "base_model": self.base_model, "bf16": use_bf16(self.config),
                  "resume_from": str(self.resume_from) if self.resume_from else None, **self.config.launch_notes()}
        folder = Path(self.config.output_dir)
        if self.config.overwrite_output_dir and not self.config.resume and any(folder.glob("checkpoint-*")):
            # From here run.json holds this launch's config while the earlier run's checkpoints stay until
            # clear_earlier_run: should the launch be refused in between, a later --resume must not take this
            # config for theirs (check_resumed_config).
            launch["earlier_run_deleted"] = False
        provenance.write_run_json(self.config.output_dir, config=config_to_dict(self.config), launch=launch,
                                  prompt_version=self.prompt_version)
        provenance.update_run_json(self.config.output_dir, data={**report, **provenance.held_out_split(self.config)})

    def training_arguments(self, arguments_cls, *, has_eval: bool, **extra):
        """The trainer arguments (``TrainingArguments`` or a trl subclass), with torch.distributed set up.

        Built before the model is loaded: under ZeRO-3 ``from_pretrained`` then partitions the weights as they load
        (``zero.Init``) instead of materialising the whole model on every rank, and zero.Init must see the real
        world size (``init_distributed``).

        Args:
            arguments_cls: ``transformers.TrainingArguments`` or e.g. ``trl.SFTConfig``.
            has_eval: whether there is a validation set (best-checkpoint tracking follows it).
            extra: the recipe's own arguments (``max_length``, ``remove_unused_columns`` ...).

        Raises:
            ConfigError: ``arguments_cls`` refuses a value or a combination (its own message), or the optimizer or
                the schedule cannot be built (``train.trainer_preflight.check_optimizer_and_schedule``).
        """
        passed = self.config.recipe_arguments()
        # The config refuses these keys in trainer_args at load: one passed here and not listed there would be refused
        # only below, after the run folder, run.json and the base model's copy exist (grpo checks its own).
        assert not passed or extra.keys() <= passed.keys(), sorted(extra.keys() - passed.keys())
        clash = sorted(set(extra) & set(self.config.trainer_args))
        if clash:
            raise ConfigError(f"trainer_args {clash}: the {self.config.recipe} recipe sets these itself")
        if self.config.deepspeed:  # one process without a launcher: DeepSpeed still needs a world (of one)
            stand_in_for_a_launcher()
        try:
            args = arguments_cls(**{**training_kwargs(self.config, self.launch, has_eval=has_eval), **extra})
        except (TypeError, ValueError) as err:
            # Under a launcher check_training_arguments did not build them first: one line on each rank, exit 2,
            # instead of a traceback on every rank. Building them also sets up the device from the launcher's
            # environment (MASTER_ADDR ...), so the line says either may be at fault, and the cause stays chained.
            raise ConfigError(f"{arguments_cls.__name__} refuses this config or the launcher's environment: "
                              f"{err}") from err
        init_distributed(args)
        # Under a launcher check_training_arguments checks only names: a job launched by hand (sbatch, torchrun)
        # met a missing optim package or schedule kwarg as a traceback on every rank after the model loaded.
        check_optimizer_and_schedule(args, self.config)
        return args

    def train(self, trainer):
        """Train (resuming if asked) with the stopper installed; a signal saves a checkpoint and requeues the job.

        Returns:
            The ``RunResult`` without an export; ``stopped`` tells whether a signal ended the run early (resume it
            with ``--resume``). A run trained to the end returns with the stopper's handlers still installed, for
            its export (``export_judge``, ``train.export.export_after_training``), which uninstalls them.
        """
        from train import preemption, provenance

        trainer.add_callback(keep_last_checkpoint(self.stopper))
        trainer.add_callback(warmup_within_the_run())  # before the next: a refusal keeps the earlier run
        trainer.add_callback(_clear_earlier_run_when_training_begins(self.config))
        self.stopper.install()
        exporting = False
        try:
            trainer.train(resume_from_checkpoint=str(self.resume_from) if self.resume_from else None)
            result = provenance.RunResult(
                output_dir=self.config.output_dir,
                export_dir=None,
                global_step=trainer.state.global_step,
                final_learning_rate=float(trainer.lr_scheduler.get_last_lr()[0]),
                log_history=list(trainer.state.log_history),
                stopped_by_signal=self.stopper.received,
            )
            if self.stopped:
                logger.warning("stopped at step %d by a signal; resume with --resume", self.stopper.stopped_at_step)
                # Still under the stopper's handler: a second SIGTERM (torchrun's, or Slurm's for the whole step)
                # arriving while rank 0 runs `scontrol requeue` only sets a flag, instead of killing rank 0 before
                # the job is back in the queue. Every rank waits for rank 0's answer (requeue_with_every_rank says why).
                result = dataclasses.replace(result, requeued=preemption.requeue_with_every_rank(self.stopper))
            else:
                # Trained to the end: the handlers stay for the export, which uninstalls them when it is done
                # (train.export.export_after_training). Uninstalled here, the disposition the process inherited
                # came back, and under slurm/train.sbatch that is "ignore" (its `trap "" USR1`): Slurm's
                # pre-timeout signal during the export was dropped, nothing saved or requeued, and the job ran into
                # its time limit. A recipe whose export runs without that watch says so.
                exporting = self.export_under_stopper
        finally:
            if not exporting:
                self.stopper.uninstall()
        return result

    @property
    def stopped(self) -> bool:
        """Whether a signal stopped training before the end (a checkpoint was saved; nothing is exported)."""
        return self.stopper.stopped_at_step is not None

    def export_judge(self, trainer, result, *, mode: str, model_cls, train_rows: Sequence[dict[str, Any]],
                     verdict_format: str = "tagged", trained_lengths=None):  # fmt: skip
        """Export a judge in the served layout (``export.export_after_training``) and record the result.

        The stopper's handlers, left installed by ``train``, stay until the export is done: a stop signal during it
        requeues the job and gives the export up before it replaces the earlier one (``preemption.ExportAbandoned``
        ends the process, 0 when requeued).

        Args:
            trainer: the trained trainer.
            result: ``train``'s ``RunResult``; its ``export_dir`` and ``export_report`` are filled in.
            mode, model_cls: what the export is and what it reloads the trained weights as.
            train_rows: the training rows (``prompt``, ``completion``); the two shortest probe the export.
            verdict_format: what the judge writes (``judge.VerdictFormat``): recorded in the export's manifest, and
                ``integer`` probes render with thinking on, as the rows were trained.
            trained_lengths: a reasoning judge's ``judge.checkpoints.TrainedLengths``, for its manifest (None: none).

        Returns:
            ``result``, with the export recorded in run.json (rank 0) before the export's model card is written.
        """
        import judge
        from train import export

        export_dir = Path(self.config.output_dir) / "export"
        # The two shortest training rows: rank 0 reloads the export on CPU to compare, and a 7B forward there is slow.
        probe_rows = sorted(train_rows, key=lambda row: len(row["prompt"]) + len(row["completion"]))[:2]
        thinking = verdict_format == judge.VerdictFormat.INTEGER
        probe_texts = [judge.apply_chat(self.tokenizer, row["prompt"], row["completion"], thinking=thinking)
                       for row in probe_rows]  # fmt: skip
        export.export_after_training(
            trainer,
            stopper=self.stopper,
            result=result,
            mode=mode,
            model_cls=model_cls,
            tokenizer=self.tokenizer,
            probe_texts=probe_texts,
            base_model=self.base_model,
            dtype=self.dtype,
            export_dir=export_dir,
            verdict_format=verdict_format,
            trained_lengths=trained_lengths,
        )
        return result


def prepare(config: TrainConfig, name: str, *, export_under_stopper: bool = True,
            prompt_version: str | None = None, tokenizer=None) -> PreparedRun:
    """The config step every recipe starts with, then the base model and its tokenizer.

    Sets up logging, derives the batch arithmetic (and checks a DeepSpeed JSON against it), applies the
    output-folder rules (``check_output_dir``), points W&B at the run folder (and checks it can log in): all
    ``check_launch``; then seeds everything with ``config.seed`` and resolves the base model (building the tiny one
    when asked).

    Args:
        config: the resolved config.
        name: what the recipe trains, for the log (``"seq2seq judge"``).
        export_under_stopper: ``PreparedRun.export_under_stopper``: False for a recipe that does not export
            through ``export_judge``.
        prompt_version: ``PreparedRun.prompt_version`` (GRPO: the template its base is asked with).
        tokenizer: the base's tokenizer, loaded by the data step before the claim (``train.recipe_data``); None: here.

    Raises:
        ConfigError: a global batch that does not divide, a DeepSpeed JSON whose accumulation or bf16 differs from
            this launch's, an output folder that would mix runs, or ``report_to`` wandb without a way to log in
            (``train.trainer_preflight.check_wandb_login``).
    """
    import transformers

    from train import preemption
    from train.launch_checks import check_launch

    setup_logging()
    launch, resume_from = check_launch(config)
    logger.info("%s: %s -> %s; %s", name, config.model_name_or_path, config.output_dir, launch.describe())
    transformers.set_seed(config.seed)
    base_model = resolve_base_model(config)
    return PreparedRun(config=config, launch=launch, resume_from=resume_from, base_model=base_model,
                       tokenizer=tokenizer or load_tokenizer(base_model), dtype=weights_dtype(config),
                       stopper=preemption.SaveAndStopOnSignal(), export_under_stopper=export_under_stopper,
                       prompt_version=prompt_version)


@contextlib.contextmanager
def labelled_positions_only_on_cpu() -> Iterator[bool]:
    """While open, trl's fused LM head projects only the labelled positions onto the vocabulary on CPU too.

    ``trl's ``SFTTrainer`` (and ``GRPOTrainer``, for its log-probabilities) replaces the model's forward with a fused LM head (trl/trainer/utils.py ``add_fused_lm_head``)
    that scores only the positions whose label is not -100 on Triton devices (cuda, xpu) and *every* position
    elsewhere, since on compiling backends such as Neuron a count of labelled positions that changes from batch
    to batch would recompile the kernel's tiles. Eager CPU compiles nothing, and every unlabelled position is
    zeroed afterwards anyway, so the prompt's ~200 tokens were projected onto the 151,665-token vocabulary for
    nothing: the completion is ~30 of a row's ~250 tokens. The choice is trl's private ``_use_triton(device)``,
    looked up when the forward runs; this wraps it so that CPU devices take the compact path as well (CUDA and
    XPU answer as before; the chunked kernel's own Triton-or-torch choice is a separate function, untouched).
    The whole ``judge-train`` of the tiny seq2seq config takes less than half the CPU this way, with the same logged
    losses (measured: docs/performance.md, row "seq2seq recipe on CPU: the fused LM head over the labelled positions
    only", ``bench/train_label_positions.py``). The previous function is put back on exit.

    Yields:
        Whether the wrap is in place: False (and a warning) when the installed trl has no ``_use_triton`` in
        ``trl.trainer.utils``, where training is as correct, only slower on CPU.
    """
    from trl.trainer import utils as trl_utils

    triton_only = getattr(trl_utils, "_use_triton", None)
    if triton_only is None:
        from importlib import metadata

        logger.warning("trl.trainer.utils._use_triton is gone (trl %s): on CPU the fused LM head scores every "
                       "position of a row, not only the labelled ones", metadata.version("trl"))
        yield False
        return

    def compact_on_cpu_too(device) -> bool:
        return device.type == "cpu" or triton_only(device)

    trl_utils._use_triton = compact_on_cpu_too
    try:
        yield True
    finally:
        trl_utils._use_triton = triton_only

"""judge-train: train a POLLUX judge, build its training data, or submit it to Slurm.

    judge-train --config configs/train/tiny/seq2seq.yaml                 # same as `judge-train run --config ...`
    judge-train run --config configs/train/t-lite/regression.yaml --learning-rate 2e-5 --output-dir runs/x
    judge-train run --config configs/train/tiny/seq2seq.yaml --resume     # continue from the latest checkpoint
    judge-train classifier --config configs/train/tiny/classifier.yaml   # the criteria: auto task classifier
    judge-train grpo --config configs/train/tiny/grpo.yaml               # a thinking judge, by GRPO (trl)
    judge-train criteria-classifier --out runs/task-clf                  # its tfidf method (bundled rows)
    judge-train build-data --data judge/data/sample.jsonl --zero-shot drop --out runs/rows.jsonl
    judge-train card --export runs/x/export --run runs/eval/x            # model card with evaluation figures
    torchrun --nproc_per_node 8 -m train.cli --config configs/train/t-lite/seq2seq.yaml   # several GPUs

Every config field is also a flag (``judge-train run --help`` lists them); a flag beats the YAML, which beats the
defaults. Multi-GPU runs go through a launcher (torchrun, accelerate, deepspeed): the recipe reads the world size
from it and derives gradient accumulation so that the global batch stays ``global_batch_size``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Iterator, Sequence

from judge.plumbing.closed_stdout import exits_quietly_on_closed_stdout  # main's closed stdout
from train.exit_status import (INTERRUPTED, STOPPED_NOT_REQUEUED, ExportAbandoned,  # noqa: F401 - run()'s statuses
                               stop_exit_code)

__all__ = ["main", "run", "build_run_parser", "stop_exit_code", "check_training_data", "refuse_incomplete_base",
           "SUBCOMMANDS", "RECIPE_ENTRIES"]

#: Subcommand -> (module with ``main(argv) -> int``, one-line help). Dispatched lazily: heavy imports happen only
#: in the subcommand that runs.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("train.cli", "train a judge from a config (the default: `judge-train --config ...`)"),
    "classifier": ("train.classifier", "train the criteria: auto task classifier (a head over the leaf tasks)"),
    "grpo": ("train.cli", "train a judge by reinforcement against the experts' labels (trl GRPO; train/grpo.py)"),
    "criteria-classifier": ("train.criteria_classifier", "train the criteria: auto tfidf classifier (the one that ships)"),
    "build-data": ("train.build_data", "turn POLLUX-format records into training rows and report what was dropped"),
    "submit": ("train.slurm_submit", "render and submit slurm/train.sbatch for N nodes x G GPUs (--dry-run prints it)"),
    "data": ("train.synthetic.cli", "build synthetic judge-training data, one resumable stage at a time"),
    "card": ("train.model_card", "(re)write an export's model card README.md, with evaluation figures (--run)"),
}


#: The exit codes of ``judge-train run`` (and ``classifier``), as its ``--help`` lists them.
RUN_EXIT_CODES = (
    "Exit codes: 0 trained and exported, or stopped at a checkpoint and requeued by Slurm (the rerun resumes; under "
    "Slurm the ranks other than 0 exit 0 after a stop, leaving the requeue and the job's status to rank 0); 75 "
    "stopped at a checkpoint by a signal (SIGUSR1, SIGTERM) and not requeued (resume with --resume; a job that "
    "depends on this one with afterok must not start on an unfinished run); 130 interrupted by Ctrl+C (SIGINT): the "
    "first stops at the end of the current step with a checkpoint (during the export, gives the export up), a second "
    "at once, and one line names the checkpoint kept (resume with --resume) or says to rerun; 2 a usage, "
    "configuration or data error, found before anything is written (a missing or empty --data, no training rows "
    "left, held-out rows in the training data, an unknown key) or a run folder another run holds; 1 training failed "
    "(the traceback says where)."
)


#: What ``judge-train run`` and the commands that fix its recipe train, as their ``--help`` says it.
RECIPE_DESCRIPTIONS: dict[str | None, str] = {
    None: "Train a POLLUX judge (seq2seq, regression head, task classifier or GRPO: the config's recipe)",
    "classifier": "Train the criteria: auto task classifier (a head over the leaf tasks)",
    "grpo": "Train a judge by GRPO against the experts' labels",
}

#: The tiny config each command that fixes its recipe names when it is run with no arguments at all.
TINY_RECIPE_CONFIGS = {"classifier": "configs/train/tiny/classifier.yaml", "grpo": "configs/train/tiny/grpo.yaml"}


def build_run_parser(prog: str = "judge-train run", recipe: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``judge-train run``: ``--config``/``--recipe`` plus one flag per config field."""
    from train.config import add_config_arguments

    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(
        prog=prog,
        description=f"{RECIPE_DESCRIPTIONS.get(recipe, RECIPE_DESCRIPTIONS[None])} from a YAML config; flags override "
                    "the YAML.",
        epilog="example: judge-train run --config configs/train/tiny/seq2seq.yaml --max-steps 5 --output-dir runs/demo. "
               + RUN_EXIT_CODES,
    )
    parser.add_argument("--config", help="YAML file from configs/train/ (it names its recipe)")
    if recipe is None:
        parser.add_argument("--recipe", choices=["seq2seq", "regression", "classifier", "grpo"],
                            help="recipe when no --config is given")
    add_config_arguments(parser, recipe)
    return parser


#: Recipe -> (module, its ``fn(config) -> RunResult``, what it trains). Imported only for the recipe that runs.
RECIPE_ENTRIES: dict[str, tuple[str, str, str]] = {
    "seq2seq": ("train.seq2seq", "main", "seq2seq judge"),
    "regression": ("train.regression", "main", "regression judge"),
    "classifier": ("train.classifier", "train_classifier", "task classifier"),
    "grpo": ("train.grpo", "main", "GRPO judge"),
}


def run(argv: Sequence[str], *, prog: str = "judge-train run", recipe: str | None = None) -> int:
    """``judge-train run`` (and ``judge-train classifier``): resolve the config, run its recipe, say what came out.

    Args:
        argv: the command's arguments.
        prog: the command's name in usage and error messages.
        recipe: force this recipe (``judge-train classifier``); default: the one the config names.

    Returns:
        The exit status: 0, 75 for a run a signal stopped that nothing requeued (``stop_exit_code``), 130 for a run
        Ctrl+C stopped (``_interrupted``), or 2 for a config error or held-out data in the training set (the message
        says which).
    """
    from judge import LeakageError, RecordError
    from judge.plumbing.run_folder import ResumeMismatch, RunFolderBusy
    from train import signal_latch
    from train.config import ConfigError, config_from_args
    from train.output_folder import RunFinished
    from train.recipe_data import data_before_the_claim
    from train.trainer_preflight import check_attention_kernel
    from train.training_arguments import check_training_arguments, is_main_process

    args = build_run_parser(prog=prog, recipe=recipe).parse_args(list(argv))
    if args.config is None and getattr(args, "recipe", None) is None and recipe is None:
        print(f"{prog}: error: give --config FILE (or --recipe with every field as a flag)", file=sys.stderr)
        return 2
    if recipe is not None and not argv:
        # A bare `judge-train classifier` would train on every default (the tiny base, runs/judge, the sample) for
        # many minutes on a CPU: a newcomer trying the command gets a usage error, as a bare `judge-train` does.
        print(f"{prog}: error: give --config FILE (e.g. --config {TINY_RECIPE_CONFIGS[recipe]}) or the fields as "
              f"flags; `{prog} --help` lists them", file=sys.stderr)
        return 2
    # Until training starts the run is being built (minutes for a large model) and the stopper's handler is not
    # installed: a SIGUSR1 meanwhile is kept for it, not dropped by the "ignore" slurm/train.sbatch leaves
    # (train.signal_latch).
    config = interrupted = None
    with signal_latch.latched():
        try:
            config = config_from_args(args, recipe=recipe)
            # Both before the run folder, the lock and the base model exist. The data first: reading it takes a
            # fraction of a second, while building TrainingArguments (a misspelt schedule or optimizer) imports torch
            # and transformers, ~5 CPU-s, which a refused file should not cost.
            check_training_data(config, quiet=True)  # the recipe's data step reads it again, and says what it read
            check_training_arguments(config)
            check_attention_kernel(config)
            if config.recipe == "grpo":  # its refusals from the config and the base's manifest
                from train.grpo import refuse_before_the_run_folder

                refuse_before_the_run_folder(config)
            module, function, what = RECIPE_ENTRIES[config.recipe]
            claim = _one_writer(config, prog)  # the launch's refusals; the folder is held when the block opens
            # The recipe's data step with the base's tokenizer alone (train.recipe_data), between the launch's
            # refusals and the claim: a chat template that cannot render the rows, or rows all over max_length, are
            # refused with nothing written, and the rows are tokenized once, for the recipe.
            data = data_before_the_claim(config, module)
            with claim:
                entry = getattr(importlib.import_module(module), function)
                result = entry(config) if data is None else entry(config, data=data)
        except (ConfigError, LeakageError, RecordError, RunFolderBusy, ResumeMismatch) as err:
            print(f"{prog}: error: {err}", file=sys.stderr)
            return 2
        except RunFinished as finished:
            if is_main_process():  # every rank finds it finished; the job log says so once
                print(f"judge-train: {finished.message}", flush=True)
            return 0
        except KeyboardInterrupt:
            # Ctrl+C before training began (Python's own handler: nothing trained to save), or a second one after
            # the stopper took the first (train.preemption): here once the run folder's lock is released.
            interrupted = True
        except ExportAbandoned as abandoned:
            if abandoned.code != INTERRUPTED:
                raise  # Slurm's signals: the status the requeue decided, as the recipe raised it
            interrupted = True
    if interrupted:  # out of the except block, so that the interrupted frames (the trainer with them) can go
        return _interrupted(prog, config)
    # Under torchrun or deepspeed every rank returns here: the job log's last line is global rank 0's alone, as the
    # finished and interrupted lines are.
    if result.export_dir:  # finished, even after a Ctrl+C in its last save (an export without the stopper's watch)
        if is_main_process():
            print(f"judge-train: exported {what} to {result.export_dir}")
        return 0
    if getattr(result, "stopped_by_signal", None) == signal.SIGINT:  # the first Ctrl+C: at the checkpoint saved
        return _interrupted(prog, config)
    if is_main_process():
        print(f"judge-train: stopped at step {result.global_step}; continue with --resume")
    return stop_exit_code(result)


def _interrupted(prog: str, config) -> int:
    """Ctrl+C's one line on stderr (global rank 0 only: under torchrun every rank is interrupted) and its status.

    What is kept, and how to go on, is ``train.output_folder.what_a_resume_keeps``'s (None ``config``: stopped
    while the config was read).
    """
    import gc

    from train.output_folder import what_a_resume_keeps
    from train.training_arguments import is_main_process

    # The interrupted trainer's progress bar writes its last state when it is collected: before the line, not
    # after it at the interpreter's exit, where it pushed the line off the bottom of the terminal.
    gc.collect()
    if is_main_process():
        kept = what_a_resume_keeps(config) if config is not None else "nothing was written"
        print(f"{prog}: interrupted (Ctrl+C); {kept}", file=sys.stderr, flush=True)
    return INTERRUPTED


def _tiny_base_meant(name: str) -> str:
    """"; did you mean tiny-qwen2? ..." for a base named like one of the two tiny bases judge-train builds locally (a
    typo of the quickstart's ``tiny-qwen2``), else "": such a name is no folder and no hub id, and the refusal alone
    never said that two names build a base here. The closest wins, ``tiny-qwen2`` (the tiny configs') on a tie."""
    import difflib

    from train.config import TINY_MODEL, TINY_QWEN3

    ratio = {tiny: difflib.SequenceMatcher(None, name, tiny).ratio() for tiny in (TINY_MODEL, TINY_QWEN3)}
    meant = max(ratio, key=ratio.get)
    return (f"; did you mean {meant}? ({TINY_MODEL} and {TINY_QWEN3} build a tiny base here)"
            if ratio[meant] >= 0.75 else "")


def check_training_data(config, *, download: bool = True, quiet: bool = False) -> None:
    """Read a seq2seq, regression or grpo config's data as its recipe will, and refuse it when no training row would come
    out: a missing source, one with no records, or one whose every row the config's filters drop (``zero_shot``,
    ``min_russian_share``). Done before anything is written, so a bad ``data`` leaves no run folder, lock or base
    model behind. Costs one more read of the data (the recipe's data step reads it again); rows over ``max_length``
    are counted there, with the base model's tokenizer (``train.recipe_data.data_before_the_claim``, before the
    run folder is claimed too).

    The base model is looked up too (a folder, or a hub id in the cache or downloadable), for the same reason, and
    its folder must hold config.json, a tokenizer and a chat template (``refuse_incomplete_base``); the
    regression recipe refuses a base that is not Qwen2, and a regression judge, whose trained head it would drop
    (``train.regression.refuse_unfit_base``).

    Args:
        config: the resolved config.
        download: False for ``judge-train submit`` on a login node: a hub id is looked up in the Hugging Face cache
            only, and one not there is left to the job, which downloads it into its own cache.
        quiet: read the data without its log lines below ERROR (the load summary, the rows line, the loader's
            warnings): for ``judge-train run``, whose recipe's data step reads it again at once and logs them. A
            refusal says what the filters dropped in its own message.

    Raises:
        ConfigError: naming the field and the source (and what the filters dropped): one that is missing, not
            readable or of an unknown file type too.
        LeakageError: held-out rows in the training data (``train.build_data``).
        RecordError: a row that is not a record, naming the source, row and field.
    """
    from judge import LeakageError, RecordError
    from judge.checkpoints import CheckpointNotFound, NotDownloadedHere, resolve_checkpoint
    from train.build_data import build_rows, load_training_records_report
    from train.config import TINY_MODEL, TINY_QWEN3, ConfigError

    reading = _read_quietly if quiet else contextlib.nullcontext
    if config.recipe == "classifier":
        # The task classifier's rows (benchmark rows, held-out instructions, Zero-Shot rows) are refused before its
        # base is looked up, which for a hub id not in the cache is a download.
        from train.criteria_rows import classifier_rows

        try:
            with reading():
                classifier_rows(config)
        except (ConfigError, LeakageError, RecordError):
            raise  # they name the source, row and field themselves
        except (OSError, ValueError) as err:  # a source not there, not readable or of an unknown type: one line
            raise ConfigError(f"data: {err}") from None
    base = None
    if config.model_name_or_path not in (TINY_MODEL, TINY_QWEN3):
        try:  # a typo or an id the offline cache lacks: one line naming the field, not transformers' traceback
            base = resolve_checkpoint(config.model_name_or_path, allow_download=download)
        except NotDownloadedHere:
            pass  # a hub id the job downloads into its own cache (submit's login node never does)
        except CheckpointNotFound as err:
            # a missing folder (``runs/x`` with runs/ here), an invalid id, or an offline environment the job
            # inherits (sbatch passes HF_HUB_OFFLINE on): the job would refuse it after the queue
            raise ConfigError(f"model_name_or_path: {err}{_tiny_base_meant(config.model_name_or_path)}") from None
    if config.recipe == "regression" and (base is not None or config.model_name_or_path in (TINY_MODEL, TINY_QWEN3)):
        from train.lora import target_modules
        from train.regression import refuse_unfit_base

        # build_model's own check, before anything is written
        refuse_unfit_base(config.model_name_or_path, base, lora_targets=target_modules(config))
    if base is not None:  # after the regression check, whose wrong architecture no added file would mend
        # the task classifier's head reads the bare instruction: its base needs no chat template
        refuse_incomplete_base(base, chat_template=config.recipe != "classifier")
    if config.recipe not in ("seq2seq", "regression", "grpo"):
        return
    from train.config import zero_shot_split

    spec = zero_shot_split(config)
    with reading():  # the field's records and rows
        for field in ("data", "eval_data"):
            source = getattr(config, field, None)
            if not source:
                continue
            try:
                records, load_report = load_training_records_report(source,
                                                                     allow_benchmark_rows=config.allow_benchmark_rows)
            except (LeakageError, RecordError):
                raise  # they name the source, row and field themselves
            except (OSError, ValueError) as err:
                # a source that is not there or not readable, an unknown file type, a split it does not hold: one line
                # naming the field, as judge-train build-data and judge-eval say them, not a traceback
                raise ConfigError(f"{field}: {err}") from None
            if not records:
                raise ConfigError(f"{field}: {source} holds no records")
            if config.recipe == "grpo":  # prompts with their labels (train.grpo); too long ones: train.recipe_data
                from train.grpo import grpo_rows

                rows, report = grpo_rows(records, zero_shot=config.zero_shot, no_unique_mode=config.no_unique_mode,
                                         verdict_format=config.verdict_format, split_spec=spec)  # fmt: skip
            elif getattr(config, "verdict_format", "tagged") == "integer":  # reasoning traces (train.seq2seq)
                from train.seq2seq import holds_traces, integer_rows, traces_settings_for_config

                if field == "eval_data" and not holds_traces(records):
                    continue  # not traces: the recipe holds out part of the training traces instead
                rows, report = integer_rows(records, zero_shot=config.zero_shot,
                                            missing_reasoning=config.missing_reasoning, source=source,
                                            min_russian_share=config.min_russian_share,
                                            traces_settings=traces_settings_for_config(config, source),
                                            split_spec=spec)  # fmt: skip
            else:
                rows, report = build_rows(records, recipe=config.recipe, zero_shot=config.zero_shot,
                                          min_russian_share=config.min_russian_share,
                                          score_target=getattr(config, "score_target", "mean"), split_spec=spec)
            # the copies the loader left out, in the summary a refusal gives, as the recipe's data step logs it
            report.duplicate_input_rows = load_report.n_duplicates
            if not rows:
                raise ConfigError(f"{field}: no training rows left in {source}: {report.summary()}")
            if config.recipe == "grpo" and field == "data":
                # Fewer prompts than one step samples: the recipe's own refusal (train.grpo.check_prompt_count),
                # made here before the run folder. judge-train submit counts them without the job's ranks (one,
                # unless WORLD_SIZE is set): a step samples at most as many prompts on fewer ranks, so no job that
                # could train is refused.
                from train.grpo import check_prompt_count, prompts_per_step
                from train.training_arguments import launch_arithmetic

                per_step = prompts_per_step(config, launch_arithmetic(config))
                check_prompt_count(len(rows[: config.max_rows]), per_step, config, report.summary())


@contextlib.contextmanager
def _read_quietly() -> Iterator[None]:
    """The toolkit's own loggers (``judge``, ``train``) say only errors inside the block: ``check_training_data``'s
    read of data that the recipe's data step reads again and reports. Their levels are put back after it."""
    loggers = [logging.getLogger(name) for name in ("judge", "train")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.ERROR))  # quieter, never louder than it was
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def refuse_incomplete_base(base, chat_template: bool = True) -> None:
    """Refuse a base model folder without config.json, a tokenizer or a chat template (``judge.checkpoints.
    model_folder_gaps``): transformers builds a one-token tokenizer from a folder with no tokenizer files and fails
    only when the first prompt is rendered, after the run folder and its lock exist, with a traceback.

    Raises:
        ConfigError: naming the folder and each thing it lacks (and, for a judge-train run folder, its export).
    """
    from pathlib import Path

    from judge.checkpoints import model_folder_gaps
    from train.config import ConfigError

    gaps = model_folder_gaps(base, chat_template)
    if not gaps:
        return
    export = Path(base) / "export"
    # a run folder given for its export, as GRPO after an integer SFT takes it
    if model_folder_gaps(export, chat_template) == []:
        raise ConfigError(f"model_name_or_path: {base} is a judge-train run folder, not a model; its model is {export}")
    raise ConfigError(f"model_name_or_path: {base} holds {', '.join(gaps)}; a base model is a folder that "
                      "save_pretrained wrote the model and its tokenizer into")


#: The jobs a training run folder's run.json may name (``train.provenance``; GRPO writes ``judge-train run``):
#: ``--overwrite-output-dir`` starts any of them over, and a folder of any other job is refused.
TRAINING_JOBS = ("judge-train run", "judge-train classifier")


def _one_writer(config, prog: str):
    """Global rank 0 holds the run folder (``judge.plumbing.run_folder``) for the whole run; the other ranks write where it
    tells them, so they take no lock (they would each find the folder held).

    Rank 0 makes the recipe's refusals that the config, the launch and the folder's contents decide
    (``train.launch_checks.check_launch``: ``--resume`` with nothing to resume, a finished export, a W&B login)
    before it holds the folder, so that they leave it as they found it; a folder another run holds is refused as such.

    Raises:
        ConfigError: the folder is a file, lies under one, or cannot be made or written, named after its flag
            (``--output-dir``; the YAML's ``output_dir``) as judge-eval names ``--out``; or ``check_launch``'s.
        ResumeMismatch: the folder holds another command's run (its run.json names a job not in ``TRAINING_JOBS``).
        RunFinished: ``--resume`` of a finished run.
    """
    import contextlib

    from pathlib import Path

    from judge.plumbing.run_folder import (hold_run_folder, refuse_file, refuse_other_job, refuse_unwritable,
                                           run_folder_holder)
    from train.launch_checks import check_launch
    from train.training_arguments import is_main_process

    output_dir = config.output_dir
    refuse_file(output_dir, "--output-dir")  # every rank: a rank that only waited for rank 0 would stop unexplained
    # A folder another command wrote (a judge-eval run's verdicts, a judge-serve log folder) is not a run folder: the
    # export and run.json would land beside its files, and its run.json would be replaced by this one's.
    refuse_other_job(Path(output_dir), (prog, *TRAINING_JOBS), "--output-dir", "--overwrite-output-dir")
    if not is_main_process():
        return contextlib.nullcontext()
    refuse_unwritable(output_dir, "--output-dir")
    if run_folder_holder(output_dir) is None:  # one held by another run: hold_run_folder names its holder instead
        check_launch(config, before_the_lock=True)
    return hold_run_folder(output_dir, prog)


def _usage() -> str:
    lines = ["usage: judge-train [--log-level LEVEL] [run] --config FILE [--<field> VALUE ...]",
             "       judge-train [--log-level LEVEL] <command> [...]", "",
             "commands:"]  # fmt: skip
    width = max(map(len, SUBCOMMANDS))  # the longest name still leaves a column of its own
    for name, (_, help_text) in SUBCOMMANDS.items():
        lines.append(f"  {name:<{width}}  {help_text}")
    lines += ["", "`judge-train <command> --help` describes a command; `judge-train run --help` lists every config field.",
              "--log-level debug|info|warning|error (default info), before or after the command: HTTP request "
              "lines are shown at debug only.",
              "exit codes: 0 done; 2 a usage, configuration or data error (named on stderr); 1 a failure while "
              "training (traceback); 75 a run stopped at a checkpoint by a signal and not requeued (continue with "
              "--resume); 4 a data stage that finished with an endpoint it could not use (a rerun into the same "
              "--output asks its jobs again); 130 a run interrupted by Ctrl+C (continue with --resume from the "
              "checkpoint its last line names) or a data stage interrupted (a rerun into the same --output asks "
              "only for the rest), or any other command interrupted (one line, no traceback); 141 stdout's reader "
              "gone (`judge-train ... | head -1`: the rest of the printout dropped, no traceback); `judge-train "
              "submit` passes on sbatch's own code when sbatch fails."]
    return "\n".join(lines)


@exits_quietly_on_closed_stdout
def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``judge-train``).

    Args:
        argv: arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status (``_usage`` lists them); 141 when stdout's reader has gone (``judge-train --help | head -1``:
        ``judge.plumbing.closed_stdout``).
    """
    from judge.plumbing.openmp import idle_threads_sleep

    idle_threads_sleep()  # before anything loads torch (judge.plumbing.openmp); torchrun's ranks run this main too
    from judge.plumbing.console_logging import configure_logging, split_log_level

    level, argv = split_log_level(sys.argv[1:] if argv is None else argv)
    try:
        # Ranks other than 0 of a distributed run report warnings only (train.training_arguments.is_main_process).
        configure_logging(level if os.environ.get("RANK", "0") == "0" else "warning")
    except ValueError as err:
        print(f"judge-train: error: {err}", file=sys.stderr)
        return 2
    if not argv or argv[0] in ("-h", "--help"):  # a bare `judge-train`: a usage error, on stderr as argparse's
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command = argv[0]
    if command not in SUBCOMMANDS and not command.startswith("-"):
        from judge.plumbing.config_files import unknown_command

        # a config file's name is often a command's (grpo.yaml): the --config it lacks is the remedy, not the command
        remedy = "a config file is given as `judge-train --config FILE`" if command.endswith((".yaml", ".yml")) else ""
        print(f"judge-train: error: {unknown_command('judge-train', command, SUBCOMMANDS, remedy=remedy)}",
              file=sys.stderr)
        return 2
    try:
        if command.startswith("-"):  # `judge-train --config ...` is `judge-train run --config ...`
            command, argv = "run", ["run", *argv]
        if command == "run":
            return run(argv[1:])
        if command == "grpo":  # `judge-train run` with the recipe fixed, as `judge-train classifier` does
            return run(argv[1:], prog="judge-train grpo", recipe="grpo")
        module = importlib.import_module(SUBCOMMANDS[command][0])
        return int(module.main(argv[1:]) or 0)
    except KeyboardInterrupt:
        # Ctrl+C where no command answers it (build-data, card, submit, any while it loads): one line and 130, as run's
        if os.environ.get("RANK", "0") == "0":  # global rank 0's line alone, as run's (torchrun interrupts every rank)
            print(f"judge-train {command}: interrupted (Ctrl+C)", file=sys.stderr, flush=True)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

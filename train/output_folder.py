"""What a training run's output folder allows: a fresh run, a resume with the settings it was trained with, or nothing
to do (a finished run).

``check_output_dir`` decides before anything loads: ``--resume`` needs a complete checkpoint (``latest_checkpoint``)
that holds the optimizer and schedule (``check_resumable``), a config that keeps what the checkpoint was trained
with (``check_resumed_config``: ``RESUME_KEEPS`` against ``RESUME_FREE``), and for a DeepSpeed ZeRO checkpoint the
number of ranks that wrote it (``check_world_size``) and its ZeRO stage (``check_zero_stage``); a resume of a run
whose export is complete at its last step ends with nothing to do (``RunFinished``); a fresh run needs a folder
without a checkpoint or a finished export, or ``--overwrite-output-dir``, whose deletion waits for
``clear_earlier_run``, as training begins.

Why one module of ~580 lines: judge-train, slurm/train.sbatch (``_main``) and judge-train submit read a run folder
through these same rules (which checkpoint is whole, whether it resumes, with which settings, ranks and ZeRO layout,
whether the run is finished), so that none of them resumes what another would refuse.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from train.config import ConfigError, TrainConfig, config_to_dict, zero_stage
from train.training_arguments import is_main_process, launched_world_size

__all__ = ["latest_checkpoint", "survey_checkpoints", "check_resumable", "check_world_size", "check_zero_stage",
           "check_output_dir", "finished_export", "RunFinished", "RESUME_KEEPS", "RESUME_FREE", "check_resumed_config",
           "clear_earlier_run", "what_a_resume_keeps", "UNLOGGED"]

logger = logging.getLogger(__name__)
#: A ``log`` for ``check_output_dir`` that says nothing, where its caller says the same in its own words
#: (``what_a_resume_keeps``) or says it later (``train.launch_checks`` before the run's lock). Set up once: a handler
#: added at each call piled up on this process-wide logger, one more for every launch in a process that runs several
#: (tests, a notebook).
UNLOGGED = logging.getLogger(f"{__name__}.interrupted")
UNLOGGED.addHandler(logging.NullHandler())
UNLOGGED.propagate = False


_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def latest_checkpoint(output_dir: str | Path, log: logging.Logger | None = None) -> Path | None:
    """The complete ``checkpoint-N`` folder with the highest N in ``output_dir``, or None.

    Complete (``_cut_off`` says why not): it holds ``trainer_state.json``, which rank 0 writes last, and every
    ``rng_state*.pth`` in it is whole. A run killed while saving leaves a folder without the state, which
    ``Trainer.train(resume_from_checkpoint=...)`` cannot load. The state does not vouch for the other ranks' files:
    transformers' ``Trainer._save_checkpoint`` has each rank write its ``rng_state_<rank>.pth`` and then rank 0 the
    state, with no barrier between, so a SIGKILL can leave the state beside another rank's half-written RNG file,
    on which that rank's ``torch.load`` fails at the resume. torch.save writes a zip archive, whose directory comes
    last: a cut file has none. What is not caught: a rank that had not begun its RNG file (transformers then resumes
    that rank with a fresh RNG and logs it) or, under DeepSpeed, its shards (DeepSpeed's own load names them). Such
    folders are passed over with a warning to ``log`` (this module's logger unless given; slurm/train.sbatch sets
    them aside before it resumes, by the same rule: ``_main``).
    """
    found = survey_checkpoints(output_dir)
    complete = [p for p, why in found if why is None]
    cut = [f"{p.name} ({why})" for p, why in found if why is not None]
    if cut:
        (log or logger).warning("%s: %s: a save that did not finish, not resumed from", output_dir, ", ".join(cut))
    return complete[-1] if complete else None


def survey_checkpoints(output_dir: str | Path) -> list[tuple[Path, str | None]]:
    """Each ``checkpoint-N`` folder in ``output_dir``, lowest N first, with why it is not a whole save (``_cut_off``)
    or None: the one rule judge-train resumes by, slurm/train.sbatch sets folders aside by (``_main``) and
    judge-train submit predicts the job by."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    found = sorted((int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name)))
    return [(p, _cut_off(p)) for _, p in found]


def _cut_checkpoints(output_dir: str | Path) -> list[str]:
    """Each ``checkpoint-N`` in ``output_dir`` that is not a whole save, as ``name (why)``, lowest N first."""
    return [f"{p.name} ({why})" for p, why in survey_checkpoints(output_dir) if why is not None]


def _cut_off(checkpoint: Path) -> str | None:
    """Why ``checkpoint`` is not a whole save (``latest_checkpoint``), or None."""
    if not (checkpoint / "trainer_state.json").is_file():
        return "no trainer_state.json"
    cut = sorted(p.name for p in checkpoint.glob("rng_state*.pth") if not _whole_torch_file(p))
    return f"{', '.join(cut)} cut off" if cut else None


def _whole_torch_file(path: Path) -> bool:
    """Whether ``path`` is a whole ``torch.save`` archive: its zip directory, written last, reads and names the
    pickle. ``zipfile.is_zipfile`` alone looks for the directory's end signature in the file's last 64 KiB, which
    the random bytes of an RNG state may hold: a file cut after them passed for whole, and its ``torch.load`` failed
    at the resume."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return any(name == "data.pkl" or name.endswith("/data.pkl") for name in archive.namelist())
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return False


def check_resumable(checkpoint: Path) -> None:
    """Refuse to resume from a checkpoint that holds the weights but not the optimizer and learning-rate schedule.

    ``Trainer.train(resume_from_checkpoint=...)`` loads ``optimizer.pt`` and ``scheduler.pt`` only when they are
    there: without them (a checkpoint saved with ``save_only_model``, or copied by hand without them) it restarts
    the schedule from its first step and AdamW from zero moments while the step count goes on, silently training
    neither run's schedule. Under DeepSpeed the optimizer is in its own ``global_step*`` folder, and the schedule
    stays in ``scheduler.pt``: transformers saves it there whenever the DeepSpeed JSON has no ``scheduler`` block (the
    config refuses one) and loads it unconditionally at a DeepSpeed resume (``Trainer._load_optimizer_and_scheduler``),
    a FileNotFoundError on every rank after the model has loaded.

    Raises:
        ConfigError: naming the checkpoint and what it lacks.
    """
    deepspeed = any(p.is_dir() for p in checkpoint.glob("global_step*"))
    wanted = ("scheduler.pt",) if deepspeed else ("optimizer.pt", "scheduler.pt")
    missing = [name for name in wanted if not (checkpoint / name).is_file()]
    if missing:
        why = ("beside its DeepSpeed global_step* folder (the learning-rate schedule, which transformers loads from "
               "there at a DeepSpeed resume): resuming from it would fail on every rank once the model has loaded. "
               if deepspeed else "(saved with the weights alone, e.g. trainer_args save_only_model): resuming from it "
               "would restart the learning-rate schedule and the optimizer mid-run. ")
        raise ConfigError(
            f"--resume: {checkpoint} has no {' or '.join(missing)} {why}"
            "Start over with --overwrite-output-dir (under judge-train submit, `-- --overwrite-output-dir`), or "
            "train into a fresh --output-dir"
        )


#: One rank's share of the ZeRO optimizer state in a ``global_step*`` folder (deepspeed/runtime/engine.py in
#: deepspeedai/DeepSpeed, ``_get_rank_zero_ckpt_name``; the older spelling has no ``_`` before ``optim_states``).
_ZERO_RANK_FILE = re.compile(r"^(?:bf16_)?zero_pp_rank_(\d+)_mp_rank_\d+_?optim_states\.pt$")


def _universal_checkpoints(settings: dict[str, Any]) -> bool:
    """Whether the DeepSpeed JSON asks for universal checkpoints (``"checkpoint": {"load_universal": true}``,
    deepspeed/runtime/constants.py ``LOAD_UNIVERSAL_CHECKPOINT``), which DeepSpeed re-partitions over any number of
    ranks."""
    checkpoint = settings.get("checkpoint")
    return isinstance(checkpoint, dict) and checkpoint.get("load_universal") is True


def _partitions_the_optimizer(settings: dict[str, Any]) -> bool:
    """Whether the DeepSpeed JSON's ZeRO stage is 1 or more: only then does DeepSpeed load the optimizer state
    through ``_load_zero_checkpoint`` (``engine.load_checkpoint`` asks ``zero_optimization()``, that is stage > 0,
    deepspeed/runtime/config.py), its one check of the world size. A stage it cannot read counts as partitioned."""
    stage = zero_stage(settings)
    return stage is None or stage >= 1


def _loaded_step_folder(checkpoint: Path) -> Path | None:
    """The ``global_step*`` folder of ``checkpoint`` DeepSpeed would load (``engine.load_checkpoint`` with no tag
    reads ``latest``'s tag; without one, the highest step), or None for a checkpoint without any (no DeepSpeed)."""
    steps = sorted(p for p in checkpoint.glob("global_step*") if p.is_dir())
    if not steps:
        return None
    latest = checkpoint / "latest"
    tag = latest.read_text(encoding="utf-8").strip() if latest.is_file() else ""
    return checkpoint / tag if tag and (checkpoint / tag).is_dir() else steps[-1]


def check_world_size(config: TrainConfig, checkpoint: Path, world_size: int | None = None,
                     launch: str = "this launch has {ranks} (WORLD_SIZE)") -> None:
    """Refuse to resume a DeepSpeed ZeRO checkpoint on another number of ranks than the one that wrote it.

    Each rank saved its own share of the optimizer state (a ``zero_pp_rank_<r>`` file per rank in ``global_step*``),
    and DeepSpeed refuses to load them on another data-parallel world size ("Automatic adjustment of ZeRO's optimizer
    state partitioning with a new world size is not currently supported", ``_load_zero_checkpoint`` in
    deepspeed/runtime/engine.py) only inside ``trainer.train()``: after the base model loaded, a traceback on every
    rank. The ranks that wrote it are counted from those files. Without them, a DeepSpeed JSON of ZeRO stage 1 or
    more (``_partitions_the_optimizer``) takes run.json's ``launch.world_size`` (the last launch into the folder);
    stage 0 keeps the whole optimizer in the model-states file, which loads on any number of ranks. A DeepSpeed JSON
    asking for universal checkpoints (``_universal_checkpoints``) is let through: DeepSpeed re-partitions those itself.

    Args:
        config: the resumed run's config (its ``deepspeed`` JSON, as ``TrainConfig.deepspeed_settings`` read it).
        checkpoint: the ``checkpoint-N`` folder to resume, in the run folder whose run.json is read.
        world_size: the ranks that will load it; None: this launch's ``WORLD_SIZE`` (1 when unset).
        launch: how the error names that number, with ``{ranks}`` for it.

    Raises:
        ConfigError: naming the checkpoint, both numbers of ranks and what to do instead.
    """
    try:
        settings = config.deepspeed_settings()  # the config's one reading, as every other check's
    except (OSError, ValueError):  # unreadable: TrainConfig.validate names it
        settings = {}
    folder = _loaded_step_folder(checkpoint)
    if folder is None or _universal_checkpoints(settings):
        return
    ranks = {m.group(1) for p in folder.iterdir() if (m := _ZERO_RANK_FILE.match(p.name))}
    if ranks:
        written, source = len(ranks), f"{len(ranks)} zero_pp_rank optimizer files in {folder.name}"
    elif _partitions_the_optimizer(settings):
        from judge.plumbing.provenance import read_provenance

        try:
            recorded = read_provenance(checkpoint.parent, missing_ok=True).get("launch")
        except ValueError:
            recorded = None
        written = recorded.get("world_size") if isinstance(recorded, dict) else None
        source = "run.json's launch.world_size"
    else:
        return
    now = launched_world_size() if world_size is None else world_size
    if not isinstance(written, int) or isinstance(written, bool) or written == now:
        return
    raise ConfigError(
        f"--resume: {checkpoint} is a DeepSpeed ZeRO checkpoint written by {written} ranks ({source}) and "
        f"{launch.format(ranks=now)}: each rank saved its own share of the optimizer state, which DeepSpeed "
        f"cannot load on another number of ranks; resume on {written} ranks (the same nodes x GPUs), or start over "
        "with --overwrite-output-dir (under judge-train submit, `-- --overwrite-output-dir`)"
    )


#: The model-states file each rank writes where ZeRO stage 3 partitions the weights (deepspeed/runtime/engine.py in
#: deepspeedai/DeepSpeed, ``_get_ckpt_name``); stages 0 to 2 write one ``mp_rank_<mp>_model_states.pt`` instead.
_ZERO3_MODEL_STATES = re.compile(r"^zero_pp_rank_\d+_mp_rank_\d+_model_states\.pt$")


def check_zero_stage(config: TrainConfig, checkpoint: Path) -> None:
    """Refuse to resume a DeepSpeed checkpoint under a JSON whose ZeRO stage saves its weights in another layout.

    ``check_resumed_config`` compares the ``deepspeed`` path; a JSON edited in place between launches (stage 3 to 2)
    passes it. DeepSpeed looks for the model-states files of the stage it runs (per rank under stage 3, one file
    under stages 0 to 2: ``_get_ckpt_name``) and, finding none, fails inside ``trainer.train()`` after the base
    model loaded. The layout is read from the files of the folder DeepSpeed would load (``latest``'s tag); a JSON
    asking for universal checkpoints, which DeepSpeed converts itself, and a folder with no model-states file are
    let through. The stage is read as DeepSpeed reads it (``train.config.zero_stage``: ``"3"`` is 3).

    Stages 0 to 2 write the same model-states file; their optimizer files tell them apart (``_stage_below_3``):
    stage 0 keeps the whole optimizer in the model-states file, where DeepSpeed under stage 0 loads it from, and
    stages 1 and 2 keep none there but one ``zero_pp_rank_<r>`` file per rank, which DeepSpeed under stage 1 or 2
    opens. Across them the load fails inside training as well: refused here. What the names cannot tell is let
    through: ``bf16_zero_pp_rank_*`` files are written by stages 1 and 2 under bf16 and by stage 0 where DeepSpeed
    runs its ``BF16_Optimizer`` (bf16 with fp32 gradient accumulation), so such a checkpoint passes under a JSON of
    any stage 0 to 2.

    Raises:
        ConfigError: naming the checkpoint, both stages and what to do instead.
    """
    try:
        settings = config.deepspeed_settings()  # the config's one reading, as every other check's
    except (OSError, ValueError):  # unreadable: TrainConfig.validate names it
        return
    stage, folder = zero_stage(settings), _loaded_step_folder(checkpoint)
    if folder is None or config.deepspeed is None or _universal_checkpoints(settings) or stage is None:
        return
    saved = sorted(p.name for p in folder.iterdir() if p.name.endswith("_model_states.pt"))
    if not saved:
        return
    zero3 = any(_ZERO3_MODEL_STATES.match(name) for name in saved)
    if zero3 != (stage == 3):
        written = "3" if zero3 else "0, 1 or 2"
        found, looks_for = f"{folder.name} holds {saved[0]}", "the other stage's model-states files"
    else:
        if zero3:
            return
        below_3 = _stage_below_3(folder, saved[0])
        if below_3 is None or (below_3[0] == 0) == (stage == 0):  # no stage told, or the one the config sets
            return
        written, found = below_3
        looks_for = (f"the zero_pp_rank optimizer files stage {stage} saves" if stage else
                     f"the optimizer state in {saved[0]}, where stages 1 and 2 keep none")
    raise ConfigError(
        f"--resume: {checkpoint} is a DeepSpeed checkpoint of ZeRO stage {written} ({found}) and deepspeed config "
        f"{config.deepspeed} sets stage {stage}: DeepSpeed would look for {looks_for} and fail once the model has "
        "loaded; resume with the ZeRO stage the run was saved with, or start over with --overwrite-output-dir "
        "(under judge-train submit, `-- --overwrite-output-dir`)"
    )


def _stage_below_3(folder: Path, model_states: str) -> tuple[int | str, str] | None:
    """The ZeRO stage (0, or "1 or 2") a ``global_step*`` folder of stage 0 to 2 was saved under, with what in it
    says so; None where its names do not tell.

    Stage 0 keeps the optimizer in ``model_states`` and writes no ``zero_pp_rank`` optimizer file under fp32, fp16
    or bf16 (its optimizer has no data-parallel group: ``_configure_checkpointing`` in deepspeed/runtime/engine.py
    sets ``save_zero_checkpoint`` from one); stages 1 and 2 write one per rank, ``bf16_``-prefixed only under bf16
    (``_get_zero_ckpt_name``). Stage 0 on DeepSpeed's ``BF16_Optimizer`` writes ``bf16_`` files too: those tell no
    stage.
    """
    optimizer_files = sorted(p.name for p in folder.iterdir() if _ZERO_RANK_FILE.match(p.name))
    if not optimizer_files:
        return 0, f"{folder.name} holds {model_states} and no zero_pp_rank optimizer file"
    unprefixed = [name for name in optimizer_files if not name.startswith("bf16_")]
    return ("1 or 2", f"{folder.name} holds {unprefixed[0]}") if unprefixed else None


class RunFinished(SystemExit):
    """``--resume`` of a run that is finished (``finished_export``): exit 0, nothing to do.

    ``message`` says so, for the caller to say where its user reads it (judge-train prints it on rank 0,
    judge-train submit warns with it); raised uncaught it ends the process with status 0 and says nothing.
    """

    def __init__(self, message: str) -> None:
        super().__init__(0)
        self.message = message


def finished_export(output_dir: str | Path, checkpoint: Path | None) -> int | None:
    """The final step, when ``checkpoint`` is the run's last planned step and ``export/`` holds what was exported
    from it, or when ``export/`` holds the export of that last step and ``checkpoint`` is an earlier one of the same
    plan; else None.

    slurm/train.sbatch passes ``--resume`` whenever a checkpoint is there, so a finished run resubmitted (or requeued
    after its export) comes back with it: it trained no step and wrote its judge again, replacing the one judge-serve
    may be serving. Final: the checkpoint's ``global_step`` reached the ``max_steps`` its trainer planned (a resume
    keeps the settings that plan depends on, ``RESUME_KEEPS``). Exported from it: the export's run.json (written
    into it before it is put in place, ``train.export.export_after_training``,
    ``train.classifier.export_classifier``) records a result at that step. An earlier checkpoint with that export:
    a run trained before the final checkpoint was kept (``train.recipe_steps.keep_last_checkpoint``), whose
    trainer deleted every checkpoint but the best one at the end (``save_total_limit: 1`` with a validation set);
    an export exists only once training reached its last step, so the run is as finished.
    """
    import json

    if checkpoint is None:
        return None
    try:
        state = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
        exported = json.loads((Path(output_dir) / "export" / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    step, planned = state.get("global_step"), state.get("max_steps")
    result = exported.get("result") if isinstance(exported, dict) else None
    if not (isinstance(step, int) and isinstance(planned, int) and 0 < planned):
        return None
    final = max(step, planned)  # a checkpoint at the last step, or an earlier one kept as the best
    if not isinstance(result, dict) or not result.get("export_dir") or result.get("global_step") != final:
        return None
    return final


def check_output_dir(config: TrainConfig, world_size: int | None = None,
                     launch: str = "this launch has {ranks} (WORLD_SIZE)", log: logging.Logger | None = None,
                     ) -> Path | None:
    """Refuse to mix runs: ``--resume`` needs a checkpoint and the settings of the run it continues
    (``check_resumed_config``), and a fresh run needs a folder without one (or
    ``--overwrite-output-dir``, whose deletion of the earlier run waits for ``clear_earlier_run``, called at the
    trainer's ``on_train_begin`` inside ``trainer.train()``: a configuration error found while the data, arguments,
    model, optimizer and schedule are built, or by a reporting integration's set-up, leaves it whole).

    A ``--resume`` of a finished run (``finished_export``) ends here with exit status 0. ``judge-train submit``
    asks the same before the queue's wait, for the ranks it plans (``world_size``, ``launch``: ``check_world_size``).
    Nothing is printed: warnings (checkpoints passed over, a config that cannot be compared) go to ``log`` (this
    module's logger unless given), and the finished run's message rides on ``RunFinished``.

    Returns:
        The checkpoint to resume from, or None for a fresh run.

    Raises:
        ConfigError: a run the output folder's contents refuse.
        RunFinished: ``--resume`` of a finished run (a ``SystemExit`` with status 0).
    """
    checkpoint = latest_checkpoint(config.output_dir, log)
    export = Path(config.output_dir) / "export"
    # A finished run may hold its export and no checkpoint (save_total_limit, or checkpoints cleaned up): a new
    # run there would silently replace a judge someone may be serving.
    finished = export.is_dir() and any(export.iterdir())
    if config.resume and checkpoint is None:
        cut = _cut_checkpoints(config.output_dir)
        if cut:
            # slurm/train.sbatch resumes whenever a checkpoint holds trainer_state.json, complete or not
            raise ConfigError(
                f"--resume: no complete checkpoint in {config.output_dir} to resume from: {', '.join(cut)} (a save "
                "that did not finish, which the trainer cannot load); start over with --overwrite-output-dir (under "
                "judge-train submit, `-- --overwrite-output-dir`), or train into a fresh --output-dir"
            )
        raise ConfigError(f"--resume: no checkpoint-N folder in {config.output_dir} to resume from")
    if config.resume:
        check_resumed_config(config, log)
        final = finished_export(config.output_dir, checkpoint)
        if final is not None:
            # the final checkpoint, or an earlier one kept as the best (finished_export)
            last = checkpoint.name if checkpoint.name == f"checkpoint-{final}" else f"step {final}"
            raise RunFinished(f"{config.output_dir} is already finished: {last} is the last step its trainer "
                              "planned and export/ holds the judge exported from it; nothing to train or export "
                              "(--overwrite-output-dir to train it again, or another --output-dir)")
        check_resumable(checkpoint)
        # the stage first: a stage-0 checkpoint loads on any number of ranks, so a world-size refusal read off
        # run.json for it would send the user to another launch only to be refused for the stage
        check_zero_stage(config, checkpoint)
        check_world_size(config, checkpoint, world_size, launch)
    if not config.resume and (checkpoint is not None or finished):
        if not config.overwrite_output_dir:
            held = checkpoint.name if checkpoint is not None else "a finished export/"
            resume = "pass --resume to continue that run, " if checkpoint is not None else ""  # nothing to resume
            raise ConfigError(
                f"{config.output_dir} already holds {held}; {resume}--overwrite-output-dir to start over, or choose "
                "another --output-dir"
            )
        return None
    return checkpoint


def what_a_resume_keeps(config: TrainConfig) -> str:
    """What an interrupted launch of ``config`` leaves to go on from, in words for its last line (``judge-train
    run`` after Ctrl+C): asked of the rule ``--resume`` itself follows (``check_output_dir``, as a resume of this
    config), so the newest complete checkpoint is named with ``--resume``; where a resume would be refused (nothing
    saved yet, or an ``--overwrite-output-dir`` launch stopped before it deleted the earlier run, whose checkpoints
    a resume refuses) a rerun of the same command. A checkpoint cut off mid-save is named as passed over."""
    folder = config.output_dir
    try:
        kept = check_output_dir(config.replaced(resume=True), log=UNLOGGED)
    except RunFinished as finished:
        return finished.message
    except ConfigError:
        kept = None
    cut = [path.name for path, why in survey_checkpoints(folder) if why is not None]
    passed_over = f" ({', '.join(cut)}: cut off while saving, passed over)" if cut else ""
    if kept is None:
        return f"no checkpoint to resume from in {folder}{passed_over}; rerun the same command to start again"
    return f"{kept.name} in {folder} is kept{passed_over}; continue with --resume"


#: Config fields a ``--resume`` may change: where and how often the run logs and saves, how the data is loaded, and
#: how the same step is computed (per-device batch over however many ranks, with the same global batch; activation
#: recomputation; the attention kernel; where GRPO's vLLM runs). None of them changes what is trained. Another number
#: of ranks is refused for a DeepSpeed ZeRO checkpoint all the same (``check_world_size``).
RESUME_FREE = frozenset({
    "output_dir", "run_name", "report_to", "logging_steps", "disable_tqdm", "save_steps", "save_total_limit",
    "resume", "overwrite_output_dir", "dataloader_num_workers", "per_device_train_batch_size",
    "per_device_eval_batch_size", "gradient_checkpointing", "attn_implementation",
    "vllm_mode", "vllm_server_host", "vllm_server_port", "vllm_group_port", "vllm_server_tensor_parallel_size",
    "vllm_gpu_memory_utilization",
})  # fmt: skip

#: Config fields a ``--resume`` must keep, every recipe's: the checkpoint holds the optimizer, the learning-rate
#: schedule (its peak rate and length), the RNG and the position in the data of the run it continues, so a changed
#: value would not take effect as the config says (a new learning_rate keeps the checkpoint's peak; a new step
#: count gives a rate neither run would have had) while run.json and the model card recorded it. The base model,
#: the data and how rows are built from it, the loss and the adapters change what the steps so far were trained on.
#: ``deepspeed``: a ZeRO checkpoint keeps the optimizer in DeepSpeed's own layout, which a run without it (or with
#: another stage) does not read back. ``use_vllm`` (GRPO): trl corrects the loss for vLLM's sampling only when
#: vLLM generates. A field in neither list is kept, so that a new field is refused until someone decides.
RESUME_KEEPS = frozenset({
    # what is trained, on what
    "recipe", "model_name_or_path", "seed", "data", "eval_data", "zero_shot", "split_file", "allow_benchmark_rows",
    "min_russian_share", "eval_fraction", "max_rows", "max_length",
    # the optimisation
    "learning_rate", "lr_scheduler_type", "warmup_steps", "num_train_epochs", "max_steps", "global_batch_size",
    "weight_decay", "max_grad_norm", "optim", "bf16", "deepspeed", "trainer_args",
    "lora", "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules",
    # seq2seq
    "packing", "verdict_format", "missing_reasoning", "agreement", "tolerance",
    # regression
    "score_target", "score_loss_weight", "lm_loss_weight",
    # classifier
    "taxonomy_text",
    # grpo
    "rewards", "no_unique_mode", "num_generations", "beta", "loss_type", "max_completion_length", "temperature",
    "use_vllm",
})  # fmt: skip


_UNSET = object()


def _changes(name: str, old: Any, new: Any) -> list[str]:
    """``name: old -> new`` for a changed field; ``trainer_args`` key by key."""
    if name == "trainer_args" and isinstance(old, dict) and isinstance(new, dict):
        return [f"trainer_args.{key}: {old.get(key, '(not set)')!r} -> {new.get(key, '(not set)')!r}"
                for key in sorted(set(old) | set(new)) if old.get(key, _UNSET) != new.get(key, _UNSET)]
    return [f"{name}: {old!r} -> {new!r}"]


def check_resumed_config(config: TrainConfig, log: logging.Logger | None = None) -> None:
    """Refuse a ``--resume`` whose config changes what the run it continues trains (``RESUME_KEEPS``).

    The earlier config is the one run.json recorded (the last launch into ``output_dir``). slurm/train.sbatch passes
    ``--resume`` whenever the folder holds a checkpoint, so an edited YAML resubmitted to the same folder comes
    here too. A run.json without a config (older runs) cannot be compared: the resume goes on with a warning (to
    ``log``, this module's logger unless given).

    Raises:
        ConfigError: naming each kept field that changed, old -> new, and what to do instead.
    """
    import json

    from judge.plumbing.provenance import read_provenance, redact

    folder = Path(config.output_dir)
    try:
        record = read_provenance(folder, missing_ok=True)
    except ValueError as error:
        record, reason = {}, f"its run.json cannot be read ({error})"
    else:
        reason = "it has no run.json" if not (folder / "run.json").is_file() else "its run.json records no config"
    earlier = record.get("config")
    launch = record.get("launch")
    if isinstance(launch, dict) and launch.get("earlier_run_deleted") is False:
        raise ConfigError(
            f"--resume: the last launch into {config.output_dir} (--overwrite-output-dir) stopped before it deleted "
            "the earlier run: its checkpoints are that earlier run's, whose settings run.json no longer holds, so "
            "the resume cannot be checked against them. Start over with --overwrite-output-dir (under judge-train "
            "submit, `-- --overwrite-output-dir`) or train into a fresh --output-dir"
        )
    if not isinstance(earlier, dict):
        (log or logger).warning("--resume: %s: %s, so the resumed config cannot be compared with the run it continues; "
                                "check by hand that the learning rate, schedule, batch and data are the earlier "
                                "run's", folder, reason)
        return
    # run.json holds the config through JSON, then redacted (judge.plumbing.provenance): compare the new one so.
    now = redact(json.loads(json.dumps(config_to_dict(config), ensure_ascii=False, default=str)))
    refused, allowed, unrecorded = [], [], []
    for name in sorted(now):
        if name not in earlier:
            unrecorded.append(name)
        elif earlier[name] != now[name]:
            (allowed if name in RESUME_FREE else refused).extend(_changes(name, earlier[name], now[name]))
    if unrecorded:
        (log or logger).warning("--resume: the earlier run.json records no %s (written by an older version): not "
                                "compared", ", ".join(unrecorded))
    if allowed:
        (log or logger).info("--resume: changed since the earlier launch, which a resume may change: %s", "; ".join(allowed))
    if refused:
        raise ConfigError(
            f"--resume: {config.output_dir} holds a run trained with other settings: {'; '.join(refused)}. A resume "
            "restores the checkpoint's optimizer, learning-rate schedule and data position, so these would not take "
            "effect as the config says, while run.json and the model card would record them. Train with them into "
            "a fresh --output-dir (or start over here with --overwrite-output-dir; under judge-train submit, "
            "`-- --overwrite-output-dir`), or resume with the earlier values (run.json's config)"
        )


def clear_earlier_run(config: TrainConfig) -> None:
    """``--overwrite-output-dir``: delete the earlier run's checkpoints (those set aside as incomplete too) and export
    (rank 0), once everything that
    could refuse the new run has been built: ``train.recipe_steps`` calls it at the trainer's ``on_train_begin``,
    after ``trainer.train()`` has built the optimizer and schedule and the reporting integrations have set up."""
    if not config.overwrite_output_dir or config.resume or not is_main_process():
        return
    import shutil

    from judge.plumbing.atomic_write import aside_dir, staging_dir

    folder = Path(config.output_dir)
    # incomplete-checkpoint-*: saves cut off mid-write that slurm/train.sbatch set aside; the earlier run's too.
    found = [path for path in [*folder.glob("checkpoint-*"), *folder.glob("incomplete-checkpoint-*"),
                               folder / "export", staging_dir(folder / "export"), aside_dir(folder / "export"),
                               folder / "trained"] if path.exists()]  # fmt: skip
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    if found:
        logger.warning("--overwrite-output-dir: deleted the earlier run's checkpoints and export in %s", folder)
    from judge.plumbing.provenance import read_provenance

    launch = read_provenance(folder, missing_ok=True).get("launch")
    if isinstance(launch, dict) and launch.get("earlier_run_deleted") is False:
        from train import provenance

        provenance.update_run_json(folder, launch={**launch, "earlier_run_deleted": True})


def _main(argv: list[str] | None = None) -> int:
    """``python -m train.output_folder --cut DIR``: slurm/train.sbatch's one look at a run folder, by the rule
    judge-train resumes by (``latest_checkpoint``), so the script never resumes what judge-train would refuse.

    One line per ``checkpoint-N``, lowest N first, tab-separated: ``cut<TAB>NAME<TAB>WHY`` for a save that did not
    finish (``_cut_off``), ``complete<TAB>NAME`` for one ``--resume`` can load. Other folders (``checkpoint-final``,
    a name judge-train never writes) are not listed: nothing resumes from them.
    """
    from judge.plumbing.config_files import ExactArgumentParser

    parser = ExactArgumentParser(prog="python -m train.output_folder")
    parser.add_argument("--cut", metavar="DIR", required=True, help="the run folder to look at")
    args = parser.parse_args(argv)
    for checkpoint, why in survey_checkpoints(args.cut):
        # a tab or newline in WHY would split the line the script reads; file names are the only free text in it
        print(f"cut\t{checkpoint.name}\t{' '.join(why.split())}" if why else f"complete\t{checkpoint.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())

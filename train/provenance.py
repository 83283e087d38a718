"""A training run's ``run.json`` (``judge.plumbing.provenance``'s schema) and the result a recipe returns.

The recipes write run.json at the start (so a crashed run is still identifiable: config, git revision, package
versions, prompt-template version, seed, launch arithmetic), add the data counts once the data is built and the
result once training ends; the export folder gets a copy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.plumbing.provenance import update_provenance as update_run_json

__all__ = ["RunResult", "write_run_json", "update_run_json", "stage_result", "staging_removed_on_failure",
           "put_export_in_place"]


def write_run_json(output_dir: str | Path, *, config: dict[str, Any], launch: dict[str, Any],
                   prompt_version: str | None = None) -> Path:
    """Write ``<output_dir>/run.json`` at the start of a training run (a resumed run keeps its earlier launches).

    Args:
        output_dir: the run folder (created if missing).
        config: the resolved config as plain data.
        launch: world size, accumulation arithmetic and anything else known before training.
        prompt_version: the template the run's prompts are rendered with (None: ``judge.PROMPT_VERSION``; GRPO's is
            the one its base is asked with, which its export's manifest names too). The task classifier records none.

    Returns:
        The path written.
    """
    import judge
    from judge.plumbing.provenance import write_provenance

    _set_aside_unreadable(Path(output_dir))
    # The task classifier has its own subcommand and renders no judge prompt; the judges run under `judge-train run`.
    classifier = config.get("recipe") == "classifier"
    return write_provenance(output_dir, "judge-train classifier" if classifier else "judge-train run", config,
                            prompt_version=None if classifier else prompt_version or judge.PROMPT_VERSION,
                            launch=launch, seed=config.get("seed"))


def _set_aside_unreadable(output_dir: Path) -> None:
    """Move a run.json that cannot be read (cut by a kill in an older version's copy, or edited by hand) to
    ``run.json.unreadable`` beside it, so that this launch writes a fresh one.

    Left in place, every launch into the folder failed where ``write_provenance`` reads the earlier launches back, and
    a Slurm job requeued after each preemption crashed the same way each time. A resume of it goes on:
    ``train.output_folder.check_resumed_config`` (which has already warned that the run.json cannot be read) treats it
    as a run.json without a config, as for a run that recorded none, and the data check
    (``train.recipe_steps.check_resumed_data``) as one without a fingerprint. The bytes are kept for a person to read;
    only the list of earlier launches is lost, and the warning says so.
    """
    import logging

    from judge.plumbing.provenance import read_provenance

    path = output_dir / "run.json"
    if not path.is_file():
        return
    try:
        read_provenance(path)
    except ValueError as error:
        aside = path.with_name("run.json.unreadable")
        path.replace(aside)
        logging.getLogger(__name__).warning("%s cannot be read (%s): moved to %s; this launch writes a fresh run.json "
                                            "(the earlier launches it listed are in the unreadable copy only)",
                                            path, error, aside)


@dataclass
class RunResult:
    """What a recipe run produced.

    Attributes:
        output_dir: the run folder.
        export_dir: the export folder, or None when training stopped on a signal before the end.
        global_step: optimizer steps taken (in total, counting a resumed run's earlier steps).
        final_learning_rate: the scheduler's learning rate after the last step (0 when the decay completed).
        log_history: the Trainer's log entries (loss, learning_rate, ... per logging step).
        stopped_by_signal: the signal number that stopped training early, or None.
        requeued: a signal-stopped run whose Slurm job was put back in the queue (by this run or by Slurm).
        export_report: the export verification report (rank 0), else None.
    """

    output_dir: str
    export_dir: str | None
    global_step: int
    final_learning_rate: float
    log_history: list[dict[str, Any]] = field(default_factory=list)
    stopped_by_signal: int | None = None
    requeued: bool = False
    export_report: dict[str, Any] | None = None


def stage_result(staging: str | Path, output_dir: str | Path, result: RunResult) -> Path:
    """The run folder's run.json copied into a staged export, with ``result`` added; returns the staged copy. The
    run folder's own run.json gets the result only once the export it names is in place (``put_export_in_place``)."""
    import dataclasses
    import shutil

    shutil.copy2(Path(output_dir) / "run.json", Path(staging) / "run.json")
    return update_run_json(staging, result=dataclasses.asdict(result))


@contextlib.contextmanager
def staging_removed_on_failure(staging: str | Path, *, remove: bool = True) -> Iterator[Path]:
    """The export's staging folder (``judge.plumbing.atomic_write.staging_dir``) for the block that writes, checks
    and puts it in place; removed (where ``remove``: rank 0, which writes it) when the block raises, an error or a
    stop signal's ``ExportAbandoned`` alike, which goes on up unchanged. No one finishes a half-written or unchecked
    export, and the earlier export stays whole beside it either way; a process killed outright still leaves the
    folder, which the next export replaces."""
    import shutil

    try:
        yield Path(staging)
    except BaseException:
        if remove:
            shutil.rmtree(staging, ignore_errors=True)
        raise


def put_export_in_place(staging: str | Path, export_dir: str | Path, output_dir: str | Path) -> None:
    """Swap the staged export in for ``export_dir`` whole (``judge.plumbing.atomic_write.replace_folder``), then give
    the run folder the run.json the export now holds.

    The run folder's run.json is replaced atomically (``write_atomically``): a copy in place, cut by a kill, left a
    truncated run.json that every later launch (a requeue) failed to read. Its permission bits are the export's copy's
    (owner-only, as every run.json is written), as a copy would have kept them.
    """
    import os
    import stat

    from judge.plumbing.atomic_write import replace_folder, write_atomically

    replace_folder(staging, export_dir)
    exported = Path(export_dir) / "run.json"
    write_atomically(Path(output_dir) / "run.json", exported.read_bytes(), mode=stat.S_IMODE(os.stat(exported).st_mode))


def held_out_split(config: Any) -> dict[str, Any]:
    """run.json ``data``'s record of the Zero-Shot split a training held out (``train.config.zero_shot_split``): its
    task types (sorted), how many criteria it holds out, and the split file's sha256. A model card written later
    names these, not what the file (edited since, or a newer package's) says then. {} for a config without
    ``zero_shot`` (no split applies)."""
    from train.config import zero_shot_split

    if not getattr(config, "zero_shot", None):
        return {}
    spec = zero_shot_split(config)  # the split the rows were chosen by: its lists and hash from one read
    return {"held_out_task_types": sorted(spec.task_types), "held_out_criteria": len(spec.criteria),
            "split_sha256": spec.sha256}

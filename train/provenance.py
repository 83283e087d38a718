"""A training run's ``run.json`` (``judge.plumbing.provenance``'s schema) and the result a recipe returns.

The recipes write run.json at the start (so a crashed run is still identifiable: config, git revision, package
versions, prompt-template version, seed, launch arithmetic), add the data counts once the data is built and the
result once training ends; the export folder gets a copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.plumbing.provenance import update_provenance as update_run_json

__all__ = ["RunResult", "write_run_json", "update_run_json", "stage_result", "put_export_in_place"]


def write_run_json(output_dir: str | Path, *, config: dict[str, Any], launch: dict[str, Any]) -> Path:
    """Write ``<output_dir>/run.json`` at the start of a training run (a resumed run keeps its earlier launches).

    Args:
        output_dir: the run folder (created if missing).
        config: the resolved config as plain data.
        launch: world size, accumulation arithmetic and anything else known before training.

    Returns:
        The path written.
    """
    import judge
    from judge.plumbing.provenance import write_provenance

    # The task classifier has its own subcommand and renders no judge prompt; the judges run under `judge-train run`.
    classifier = config.get("recipe") == "classifier"
    return write_provenance(output_dir, "judge-train classifier" if classifier else "judge-train run", config,
                            prompt_version=None if classifier else judge.PROMPT_VERSION, launch=launch,
                            seed=config.get("seed"))


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


def put_export_in_place(staging: str | Path, export_dir: str | Path, output_dir: str | Path) -> None:
    """Swap the staged export in for ``export_dir`` whole (``judge.plumbing.atomic_write.replace_folder``), then give
    the run folder the run.json the export now holds."""
    import shutil

    from judge.plumbing.atomic_write import replace_folder

    replace_folder(staging, export_dir)
    shutil.copy2(Path(export_dir) / "run.json", Path(output_dir) / "run.json")

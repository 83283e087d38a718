"""Resumable run folders: a guard against resuming with other settings, and the records a run writes there.

A run writes one JSON line per finished unit (an answered question, a generated task) to a ``judge.plumbing.journal``
journal (fsynced appends; on restart ``open_journal`` drops a torn last line and cuts it from the file). On restart
the folder's ``run_key.json`` must match the new run's settings: ``judge.plumbing.run_folder.claim_run_folder``, the one
guard every resumable job shares (``judge-eval run`` too).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.journal import json_utf8
from judge.plumbing.run_folder import RUN_KEY_FILE, ResumeMismatch, claim_run_folder

__all__ = ["RUN_KEY_FILE", "ResumeMismatch", "claim_run_folder", "sha256_of", "write_json", "write_run_record"]


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, read in chunks (``hashlib.file_digest``): ``--data`` may be large, and is hashed
    whole for the run key."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_json(path: Path, obj: Any) -> None:
    """``obj`` as indented JSON, replacing ``path`` whole (``judge.plumbing.atomic_write``): a kill mid-write leaves
    the earlier run's file, never a cut one; a lone surrogate is written as its escape (``journal.json_utf8``)."""
    write_atomically(path, json_utf8(json.dumps(obj, ensure_ascii=False, indent=2) + "\n"))


def write_run_record(out: Path, config: Any, data: Any, **extra: Any) -> None:
    """``run.json`` (``judge.plumbing.provenance``) of a ``judge-eval mera`` task: the resolved settings (``config``,
    a ``MeraConfig``; no API key), the data (``released.TaskData``: the file, what was asked for, which file and why)
    and its hash, ``extra``."""
    from judge.plumbing.provenance import write_provenance

    settings = {k: v for k, v in dataclasses.asdict(config).items() if k != "api_key"}
    write_provenance(out, f"judge-eval mera {config.task}", settings, **data.describe(),
                     data_sha256=sha256_of(data.path), **extra)  # fmt: skip

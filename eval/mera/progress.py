"""Resumable run folders: append-only JSONL progress and a guard against resuming with other settings.

A run writes one JSON line per finished unit (an answered question, a generated task) and fsyncs it, so a run
killed at any moment loses at most the unit in flight. On restart the folder's ``run_key.json`` must match the
new run's settings; a torn last line (the process died mid-write) is dropped and cut from the file.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RUN_KEY_FILE = "run_key.json"


class ResumeMismatch(RuntimeError):
    """The output folder holds progress made with different settings."""


def read_progress(path: str | Path) -> list[dict[str, Any]]:
    """Records of a progress file; a torn or unparseable last line is dropped and truncated away.

    A bad line anywhere else means the file is not ours to repair, and raises ``ValueError``.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    complete, _, _torn_tail = data.rpartition(b"\n")  # bytes after the last newline are a cut write
    lines = complete.split(b"\n") if complete else []
    records: list[dict[str, Any]] = []
    good_end = 0
    for i, line in enumerate(lines):
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError:
                if i == len(lines) - 1:
                    break
                raise ValueError(f"{path}: line {i + 1} is not JSON and is not the last line") from None
        good_end += len(line) + 1
    if good_end < len(data):
        with open(path, "r+b") as f:
            f.truncate(good_end)
    return records


class ProgressWriter:
    """Thread-safe, fsynced JSONL appends."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def claim_run_folder(out_dir: str | Path, run_key: Mapping[str, Any], progress_files: list[str],
                     overwrite: bool = False) -> bool:  # fmt: skip
    """Prepare ``out_dir`` for a run with these settings.

    Args:
        out_dir: The run folder (created if needed).
        run_key: Settings that change results (model, data hash, sampling...), JSON-serialisable.
        progress_files: Names of the progress files inside ``out_dir``.
        overwrite: Delete earlier progress instead of resuming.

    Returns:
        True when earlier progress exists and will be resumed.

    Raises:
        ResumeMismatch: Earlier progress was made with different settings (and ``overwrite`` is off).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    key_path = out_dir / RUN_KEY_FILE
    existing = [out_dir / name for name in progress_files if (out_dir / name).exists()]
    key = json.loads(json.dumps(run_key))  # normalise tuples etc. as they will read back
    if overwrite:
        for path in existing:
            path.unlink()
        existing = []
    if existing and key_path.exists():
        old = json.loads(key_path.read_text(encoding="utf-8"))
        if old != key:
            diff = sorted(k for k in set(old) | set(key) if old.get(k) != key.get(k))
            details = "; ".join(f"{k}: {old.get(k)!r} -> {key.get(k)!r}" for k in diff)
            raise ResumeMismatch(
                f"{out_dir} holds progress made with other settings ({details}). "
                "Use a fresh --out, or --overwrite to discard it."
            )
    elif existing:
        raise ResumeMismatch(f"{out_dir} holds progress files but no {RUN_KEY_FILE}; use --overwrite or a fresh --out")
    key_path.write_text(json.dumps(key, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return bool(existing)

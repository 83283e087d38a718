"""Resumable run folders: a guard against resuming with other settings.

A run writes one JSON line per finished unit (an answered question, a generated task) to a ``judge.plumbing.journal``
journal (fsynced appends; on restart ``open_journal`` drops a torn last line and cuts it from the file). On restart
the folder's ``run_key.json`` must match the new run's settings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RUN_KEY_FILE = "run_key.json"


class ResumeMismatch(RuntimeError):
    """The output folder holds progress made with different settings."""


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

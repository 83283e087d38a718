"""The predictions file of a ``judge-eval run``: ``predictions.jsonl``, one row per judged item.

Rows are appended as answers arrive; a rerun resumes from the file (``resume_predictions``). ``score``, ``compare``
and the report pages read it with ``read_predictions``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PREDICTION_FIELDS", "REQUEST_FAILED", "iter_predictions", "read_predictions", "resume_predictions"]

log = logging.getLogger("judge_eval.predictions")

# The error code of a row whose request failed (after retries, or refused by the server): such rows are retried
# on the next run, unlike parse failures, which are the judge's answer.
REQUEST_FAILED = "request_failed"
PREDICTION_FIELDS = ("id", "judge", "raw_output", "feedback", "score", "parse_ok", "error", "reason", "score_source",
                     "in_scale", "regression_score", "expected_score", "confidence", "score_probs", "latency_s")


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """Prediction rows of a ``predictions.jsonl`` (a run folder works too).

    A last line without its newline (the process was killed while writing it) is ignored; any other line that is
    not valid JSON is an error.

    Raises:
        ValueError: naming the line that does not parse.
    """
    return list(iter_predictions(path))


def iter_predictions(path: str | Path) -> Iterator[dict[str, Any]]:
    """``read_predictions`` one row at a time: memory does not grow with the file (resume, provenance checks)."""
    path = Path(path)
    if path.is_dir():
        path = path / "predictions.jsonl"
    for _, row in _scan(path):
        if row is not None:
            yield row


def _scan(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, row) per non-blank line, in order; the row is None for a last line cut by a kill (text after
    the last newline), which is not parsed."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith("\n"):
                if line.strip():
                    yield number, None
                return
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not a JSON prediction row ({err.msg})") from err


def resume_predictions(path: str | Path, ids: Sequence[str]) -> set[str]:
    """Prepare a predictions file for appending, and say which items are done.

    Kept: the first row of each id in ``ids`` whose request succeeded (parsed or not). Dropped: a line cut by a
    kill, rows whose request failed (they are retried), repeated ids and ids not in ``ids``. The file is rewritten
    (atomically, by rename) only when something was dropped. The file is read as a stream, twice when it is
    rewritten: memory holds the done ids, never the rows (a resumed 160k-item run).

    Returns:
        The ids that already have their final row.
    """
    path = Path(path)
    if not path.exists():
        return set()
    wanted = set(ids)

    def keep(row: dict[str, Any], kept: set[str]) -> bool:
        rid = str(row.get("id"))
        if rid in wanted and rid not in kept and row.get("error") != REQUEST_FAILED:
            kept.add(rid)
            return True
        return False

    kept: set[str] = set()
    n_rows, cut = 0, False
    for _, row in _scan(path):
        if row is None:
            cut = True
            continue
        n_rows += 1
        keep(row, kept)
    if cut or len(kept) != n_rows:
        tmp = path.with_suffix(".jsonl.tmp")
        again: set[str] = set()
        with tmp.open("w", encoding="utf-8") as handle:
            for _, row in _scan(path):
                if row is not None and keep(row, again):
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        log.info("resume: kept %d rows of %s, dropped %d (cut line: %s)", len(kept), path, n_rows - len(kept), cut)
    return kept

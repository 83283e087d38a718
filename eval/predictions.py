"""The predictions file of a ``judge-eval run``: ``predictions.jsonl``, one row per judged item.

Rows are appended as answers arrive; a rerun resumes from the file (``resume_predictions``). ``score``, ``compare``
and the report pages read it with ``read_predictions``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["PREDICTION_FIELDS", "REQUEST_FAILED", "read_predictions", "resume_predictions"]

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
    path = Path(path)
    if path.is_dir():
        path = path / "predictions.jsonl"
    rows, _ = _read_rows(path)
    return rows


def _read_rows(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """Rows and whether a cut last line was dropped."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.split("\n")
    cut = bool(lines and lines[-1].strip())  # text after the last newline: a write the kill interrupted
    rows = []
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: not a JSON prediction row ({err.msg})") from err
    return rows, cut


def resume_predictions(path: str | Path, ids: Sequence[str]) -> set[str]:
    """Prepare a predictions file for appending, and say which items are done.

    Kept: the first row of each id in ``ids`` whose request succeeded (parsed or not). Dropped: a line cut by a
    kill, rows whose request failed (they are retried), repeated ids and ids not in ``ids``. The file is rewritten
    (atomically, by rename) only when something was dropped.

    Returns:
        The ids that already have their final row.
    """
    path = Path(path)
    if not path.exists():
        return set()
    rows, cut = _read_rows(path)
    wanted = set(ids)
    kept: dict[str, dict[str, Any]] = {}
    for row in rows:
        rid = str(row.get("id"))
        if rid in wanted and rid not in kept and row.get("error") != REQUEST_FAILED:
            kept[rid] = row
    if cut or len(kept) != len(rows):
        tmp = path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            for row in kept.values():
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        log.info("resume: kept %d rows of %s, dropped %d (cut line: %s)", len(kept), path, len(rows) - len(kept), cut)
    return set(kept)



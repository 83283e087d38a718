"""The predictions file of a ``judge-eval run``: ``predictions.jsonl``, one row per judged item, and its schema.

``PredictionRow`` is the row: ``run`` writes it, ``score`` (``eval.item_table.build_table``), the official
evaluator and the report pages read it through ``read_predictions``. Rows are appended as answers arrive (a
``judge.plumbing.journal`` journal: strict reading, a torn last line dropped); a rerun resumes from the file
(``resume_predictions``).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.plumbing.journal import iter_journal, log_torn_tail, rewrite_journal
from judge.wire import checked_json_fields

__all__ = ["PredictionRow", "PREDICTION_FIELDS", "PredictionsProcess", "REQUEST_FAILED", "iter_predictions",
           "read_predictions", "resume_predictions"]

log = logging.getLogger("judge_eval.predictions")

# The error code of a row whose request failed (after retries, or refused by the server): such rows are retried
# on the next run, unlike parse failures, which are the judge's answer.
REQUEST_FAILED = "request_failed"


@dataclass(frozen=True)
class PredictionRow:
    """One judged item of a run.

    Attributes:
        id: the record's id.
        judge: the judge's label (``--name``, else the served model name).
        raw_output: what the judge generated (None when the request failed).
        feedback: the rationale ("" when none).
        score: the score, None unless ``parse_ok`` (a parse failure is never a score).
        parse_ok: whether a score was read.
        error: a ``judge.VerdictError`` code, ``request_failed``, or None.
        reason: why ``error`` ("" when none).
        score_source: a ``judge.wire.ScoreSource`` value (``verdict``, ``regression_head``), None without a score.
        in_scale: False for a number outside the rubric's scale (scored, as the paper does); None when unknown.
        regression_score: a regression head's raw (unclipped) value.
        expected_score, confidence, score_probs: seq2seq judges on judge-serve: the score token's distribution.
        latency_s: seconds of the request that produced the row (shared by the criteria of one ``/v1/judge``).
    """

    id: str
    judge: str | None = None
    raw_output: str | None = None
    feedback: str = ""
    score: float | None = None
    parse_ok: bool = False
    error: str | None = None
    reason: str = ""
    score_source: str | None = None
    in_scale: bool | None = None
    regression_score: float | None = None
    expected_score: float | None = None
    confidence: float | None = None
    score_probs: dict[str, float] | None = None
    latency_s: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "row") -> PredictionRow:
        """A row from its JSON object; absent fields take their defaults (rows of older runs lack some).

        Raises:
            ValueError: naming ``where`` and the field: no ``id``, or a key that is not a field
                (``judge.wire.checked_json_fields``).
        """
        values = checked_json_fields(cls, data, where, noun="prediction field")
        values["id"] = str(values["id"])
        for key in ("feedback", "reason"):
            if values.get(key) is None:
                values[key] = ""
        values["parse_ok"] = bool(values.get("parse_ok"))
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        """The row as written: every field, in ``PREDICTION_FIELDS`` order."""
        return dataclasses.asdict(self)


#: The keys of a predictions row, in the order they are written.
PREDICTION_FIELDS = tuple(f.name for f in dataclasses.fields(PredictionRow))


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """Prediction rows of a ``predictions.jsonl`` (a run folder works too), each with every ``PREDICTION_FIELDS``
    key (``PredictionRow.to_json``).

    A last line without its newline (the process was killed while writing it) is dropped, with a warning; any
    other line that is not a JSON row is an error.

    Raises:
        ValueError: naming ``file:line`` of a line that does not parse or is not a prediction row.
    """
    rows = _read_rows_fast(path)
    return rows if rows is not None else list(iter_predictions(path))


def _read_rows_fast(path: str | Path) -> list[dict[str, Any]] | None:
    """``read_predictions``'s rows for a file every row of which is plainly valid, else None (the caller then reads
    the file row by row, whose error names the line and the field, or which accepts what this refuses).

    The row-by-row reading took ~3 of ~15 s CPU of scoring the full test (bench/eval_metrics.py --end-to-end):
    a ``PredictionRow`` and its copy per row. Here each line is parsed by the same ``json.loads`` and its dict
    completed with the defaults in ``PREDICTION_FIELDS`` order, giving the same dicts (~1 s). Refused, for the
    strict reader to judge: any line that does not parse or is not an object, unknown keys, an ``id`` that is
    missing or not a string (the strict reader converts or names it).
    """
    import json

    path = Path(path)
    if path.is_dir():
        path = path / "predictions.jsonl"
    if not path.exists():
        return None
    *lines, tail = path.read_bytes().split(b"\n")  # as judge.plumbing.journal.iter_journal: lines end with b"\n"
    known = _FIELD_SET
    rows = []
    append = rows.append
    try:
        for line in lines:
            data = json.loads(line) if line.strip() else None
            if data is None:
                if line.strip():
                    return None  # a "null" line: not an object
                continue
            if type(data) is not dict or not data.keys() <= known or type(data.get("id")) is not str:
                return None
            row = {**_DEFAULTS, **data}  # every field, in PREDICTION_FIELDS order (_DEFAULTS's keys come first)
            if row["feedback"] is None:
                row["feedback"] = ""
            if row["reason"] is None:
                row["reason"] = ""
            if type(row["parse_ok"]) is not bool:
                row["parse_ok"] = bool(row["parse_ok"])
            append(row)
    except (UnicodeDecodeError, ValueError):  # json.JSONDecodeError is a ValueError
        return None
    if tail.strip():
        log_torn_tail(path, tail)
    return rows


def iter_predictions(path: str | Path, torn: list[bytes] | None = None) -> Iterator[dict[str, Any]]:
    """``read_predictions`` one row at a time: memory does not grow with the file (resume, provenance checks).

    Args:
        torn: when given, receives a torn last line's bytes (``judge.plumbing.journal.iter_journal``).
    """
    for row in _iter_rows(path, torn):
        yield _as_json(row)


def _as_json(row: PredictionRow) -> dict[str, Any]:
    """``row.to_json()`` without ``dataclasses.asdict``'s recursion, which took most of reading 160k rows (2.6 of
    ~4 s CPU): every field in ``PREDICTION_FIELDS`` order, a JSON container (``score_probs``) copied as ``asdict``
    copies it."""
    values = dict(zip(PREDICTION_FIELDS, _FIELD_VALUES(row)))
    for key, value in values.items():
        if isinstance(value, (dict, list)):
            values[key] = copy.deepcopy(value)
    return values


_FIELD_VALUES = operator.attrgetter(*PREDICTION_FIELDS)
_FIELD_SET = frozenset(PREDICTION_FIELDS)
# A row's defaults (PredictionRow's), in PREDICTION_FIELDS order; "id" has none and is always given.
_DEFAULTS = {f.name: (None if f.default is dataclasses.MISSING else f.default)
             for f in dataclasses.fields(PredictionRow)}


def _iter_rows(path: str | Path, torn: list[bytes] | None = None, *, quiet: bool = False) -> Iterator[PredictionRow]:
    path = Path(path)
    if path.is_dir():
        path = path / "predictions.jsonl"
    for number, data in enumerate(iter_journal(path, torn, quiet=quiet), start=1):
        yield PredictionRow.from_json(data, where=f"{path}: row {number}")


def resume_predictions(path: str | Path, ids: Sequence[str]) -> set[str]:
    """Prepare a predictions file for appending, and say which items are done.

    Kept: the first row of each id in ``ids`` whose request succeeded (parsed or not). Dropped: a line cut by a
    kill, rows whose request failed (they are retried), repeated ids and ids not in ``ids``. The file is rewritten
    (atomically, by rename) only when something was dropped. It is read as a stream, twice when it is rewritten:
    memory holds the done ids, never the rows (a resumed 160k-item run).

    Returns:
        The ids that already have their final row.
    """
    path = Path(path)
    if not path.exists():
        return set()
    wanted = set(ids)

    def keep(row: PredictionRow, kept: set[str]) -> bool:
        if row.id in wanted and row.id not in kept and row.error != REQUEST_FAILED:
            kept.add(row.id)
            return True
        return False

    kept: set[str] = set()
    torn: list[bytes] = []
    n_rows = 0
    for row in _iter_rows(path, torn):
        n_rows += 1
        keep(row, kept)
    if torn or len(kept) != n_rows:
        again: set[str] = set()
        rewrite_journal(path, (row.to_json() for row in _iter_rows(path, quiet=True) if keep(row, again)))
        log.info("resume: kept %d rows of %s, dropped %d (cut line: %s)", len(kept), path, n_rows - len(kept),
                 bool(torn))
    return kept


# The command of a child process: ``root`` first on sys.path, so that the child imports this process's ``eval``
# even when started from another checkout's folder (``python -c`` puts the working directory first).
_CHILD = "import sys; sys.path.insert(0, {root!r}); from {module} import {main}; sys.exit({main}(sys.argv[1:]))"


class PredictionsProcess:
    """``read_predictions`` in a child Python process, started before the records load.

    ``eval.scoring.score`` starts it first and takes its ``rows()`` once the records are loaded: the file is read
    on a second core meanwhile, and this process only unmarshals the rows (~0.35 s against ~1.5 s reading them,
    on the full test). The result is ``read_predictions``'s in every way: the same rows, the same exception (raised
    here, with its message), the same log records (a torn last line's warning, emitted here through the same
    logger). A plain subprocess for the reasons ``eval.report.PlotProcess`` gives. Use as a context manager:
    leaving it before ``rows`` stops the child.
    """

    def __init__(self, path: str | Path) -> None:
        import os
        import subprocess
        import sys

        root = str(Path(__file__).resolve().parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD.format(root=root, module="eval.predictions", main="_read_main"),
             str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    def rows(self) -> list[dict[str, Any]]:
        """``read_predictions(path)``.

        Raises:
            ValueError: as ``read_predictions``.
            RuntimeError: the child failed otherwise; its error output is in the message.
        """
        import marshal
        import pickle

        out, err = self._process.communicate()
        if self._process.returncode != 0:
            raise RuntimeError(f"predictions: the reading process exited with {self._process.returncode}:\n"
                               f"{err.decode('utf-8', 'replace')[-4000:]}")
        size = int.from_bytes(out[:8], "little")
        error, records = pickle.loads(out[8:8 + size])
        for record in records:
            logger = logging.getLogger(record.name)
            if logger.isEnabledFor(record.levelno):
                logger.handle(record)
        if error is not None:
            raise error
        return marshal.loads(memoryview(out)[8 + size:])

    def __enter__(self) -> PredictionsProcess:
        return self

    def __exit__(self, *exc) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.communicate()


def _read_main(argv: list[str]) -> int:
    """The child of ``PredictionsProcess``: argument PATH; writes to stdout the length (8 bytes, little-endian) of
    the pickled ``(exception or None, log records)`` that follows, then the rows as a ``marshal`` (JSON values
    only, which marshal writes ~4x faster than pickle: the child's ~0.5 s were on the command's wall)."""
    import marshal
    import pickle
    import sys

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            record.msg, record.args = record.getMessage(), None  # the message as text: its arguments may not pickle
            if record.exc_info:
                record.exc_text, record.exc_info = logging.Formatter().formatException(record.exc_info), None
            records.append(record)

    records: list[logging.LogRecord] = []
    root = logging.getLogger()
    root.addHandler(Collect())
    root.setLevel(logging.DEBUG)  # every record goes back; the parent's loggers filter them as they would their own
    (path,) = argv
    rows: list[dict[str, Any]] = []
    error: ValueError | None = None
    try:
        rows = read_predictions(path)
    except ValueError as err:
        error = err
    try:
        head = pickle.dumps((error, records), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that does not pickle: its text, as a ValueError
        head = pickle.dumps((ValueError(str(error)), records), protocol=pickle.HIGHEST_PROTOCOL)
    out = sys.stdout.buffer
    out.write(len(head).to_bytes(8, "little") + head)
    out.write(marshal.dumps(rows))
    out.flush()
    return 0

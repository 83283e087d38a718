"""Judged items: one record per (instruction, answer, criterion), following the POLLUX dataset's columns.

Loaders read JSONL, Parquet, a ``datasets`` folder saved with ``save_to_disk``, or a dataset name that
``datasets.load_dataset`` can reach from the user's machine. Every row is validated; a bad row raises a
``RecordError`` naming the source, the row and the field. Nothing is dropped: columns the record does not know
are kept in ``JudgeRecord.extra``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["JudgeRecord", "RecordError", "load_records", "records_from_rows", "write_jsonl"]

_TEXT_REQUIRED = ("instruction", "answer", "criteria_name", "rubrics")
_TEXT_OPTIONAL = ("model_id", "task_type", "task_subtype", "task_subsubtype", "difficulty", "domain")


class RecordError(ValueError):
    """A row that is not a valid judged item.

    Attributes:
        source: where the row came from (a path or dataset name).
        row: the 0-based row index (the line number minus one for JSONL).
        field: the offending field, or None for a whole-row problem.
    """

    def __init__(self, source: str, row: int, field: str | None, message: str):
        self.source, self.row, self.field = source, row, field
        where = f"{source}: row {row}" + (f": field {field!r}" if field else "")
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class JudgeRecord:
    """One judged item: an answer to an instruction, scored on one criterion.

    Attributes:
        id: unique within a data set.
        instruction: the task given to the evaluated model.
        reference_answer: the reference ("" when there is none).
        answer: the evaluated model's answer.
        criteria_name: the criterion's name as shown to the judge.
        rubrics: the criterion's scale as text ("0: ...\\n\\n1: ...").
        criteria_score: the aggregate over experts (or a teacher's score); None when unknown.
        expert_scores: the individual experts' point estimates (may be empty for unlabelled data).
        expert_feedback: the experts' rationales, one per score, or None.
        model_id, task_type, task_subtype, task_subsubtype, difficulty, domain: POLLUX metadata ("" if absent).
        extra: any other columns of the source row, kept unchanged.
    """

    id: str
    instruction: str
    answer: str
    criteria_name: str
    rubrics: str
    reference_answer: str = ""
    criteria_score: float | None = None
    expert_scores: tuple[float, ...] = ()
    expert_feedback: tuple[str, ...] | None = None
    model_id: str = ""
    task_type: str = ""
    task_subtype: str = ""
    task_subsubtype: str = ""
    difficulty: str = ""
    domain: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the POLLUX column names (extra columns merged back in)."""
        row = asdict(self)
        extra = row.pop("extra")
        row["expert_scores"] = list(self.expert_scores)
        row["expert_feedback"] = None if self.expert_feedback is None else list(self.expert_feedback)
        return {**extra, **row}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, source: str = "<rows>", index: int = 0, make_id: bool = False) -> JudgeRecord:
        """Validate one row into a record.

        Args:
            row: a mapping with the POLLUX columns.
            source, index: used in error messages.
            make_id: when the row has no ``id``, derive a stable one from its content instead of failing.

        Raises:
            RecordError: naming the field that is missing or malformed.
        """
        if not isinstance(row, Mapping):
            raise RecordError(source, index, None, f"expected an object, got {type(row).__name__}")

        def fail(name: str, message: str) -> RecordError:
            return RecordError(source, index, name, message)

        values: dict[str, Any] = {}
        for name in _TEXT_REQUIRED:
            value = row.get(name)
            if value is None:
                raise fail(name, "is missing")
            if not isinstance(value, str):
                raise fail(name, f"must be text, got {type(value).__name__}")
            if not value.strip():
                raise fail(name, "is empty")
            values[name] = value

        reference = row.get("reference_answer")
        if reference is not None and not isinstance(reference, str):
            raise fail("reference_answer", f"must be text or null, got {type(reference).__name__}")
        values["reference_answer"] = reference or ""

        for name in _TEXT_OPTIONAL:
            value = row.get(name)
            if value is not None and not isinstance(value, (str, int)):
                raise fail(name, f"must be text, got {type(value).__name__}")
            values[name] = "" if value is None else str(value)

        experts = row.get("expert_scores")
        if experts is None:
            experts = []
        if isinstance(experts, (str, bytes, Mapping)) or not isinstance(experts, Iterable):
            raise fail("expert_scores", f"must be a list of numbers, got {type(experts).__name__}")
        scores = []
        for position, value in enumerate(experts):
            number = _number(value)
            if number is None:
                raise fail("expert_scores", f"item {position} ({value!r}) is not a finite number")
            scores.append(number)
        values["expert_scores"] = tuple(scores)

        feedback = row.get("expert_feedback")
        if feedback is not None:
            if isinstance(feedback, str) or not isinstance(feedback, Iterable):
                raise fail("expert_feedback", "must be a list of texts, one per expert score")
            feedback = tuple(feedback)
            if not all(isinstance(text, str) for text in feedback):
                raise fail("expert_feedback", "must contain only texts")
            if len(feedback) != len(scores):
                raise fail("expert_feedback", f"has {len(feedback)} texts for {len(scores)} expert scores")
        values["expert_feedback"] = feedback

        aggregate = row.get("criteria_score")
        if aggregate is None:
            # The aggregate the POLLUX data reports is the experts' mean; derive it rather than leave a gap.
            values["criteria_score"] = sum(scores) / len(scores) if scores else None
        else:
            number = _number(aggregate)
            if number is None:
                raise fail("criteria_score", f"{aggregate!r} is not a finite number")
            values["criteria_score"] = number

        rid = row.get("id")
        if rid is None or (isinstance(rid, str) and not rid.strip()):
            if not make_id:
                raise fail("id", "is missing (pass make_id=True to derive stable ids from the content)")
            rid = _content_id(values)
        elif not isinstance(rid, (str, int)):
            raise fail("id", f"must be text or an integer, got {type(rid).__name__}")
        values["id"] = str(rid)

        known = {"id", "reference_answer", "expert_scores", "expert_feedback", "criteria_score", *_TEXT_REQUIRED, *_TEXT_OPTIONAL}
        values["extra"] = {k: v for k, v in row.items() if k not in known}
        return cls(**values)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.replace(",", "."))
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        try:  # numpy scalars from Parquet / datasets
            value = float(value)
        except (TypeError, ValueError):
            return None
    value = float(value)
    return value if math.isfinite(value) else None


def _content_id(values: Mapping[str, Any]) -> str:
    key = "\x1f".join(str(values[k]) for k in ("instruction", "answer", "criteria_name", "model_id"))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def records_from_rows(rows: Iterable[Mapping[str, Any]], source: str = "<rows>", make_id: bool = False) -> list[JudgeRecord]:
    """Validate rows into records; ids must be unique.

    Raises:
        RecordError: for the first bad row (naming the row and field), or a repeated id (naming both rows).
    """
    records: list[JudgeRecord] = []
    first_row: dict[str, int] = {}
    for index, row in enumerate(rows):
        record = JudgeRecord.from_row(row, source=source, index=index, make_id=make_id)
        if record.id in first_row:
            raise RecordError(source, index, "id", f"{record.id!r} repeats the id of row {first_row[record.id]}")
        first_row[record.id] = index
        records.append(record)
    return records


def _jsonl_rows(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as err:
                raise RecordError(str(path), number, None, f"invalid JSON ({err.msg} at column {err.colno})") from err


def load_records(source: str | Path, split: str | None = None, make_id: bool = False) -> list[JudgeRecord]:
    """Load judged items.

    Args:
        source: a ``.jsonl`` / ``.json`` (a list of rows) / ``.parquet`` file, a folder written by
            ``datasets.save_to_disk``, or a dataset name ``datasets.load_dataset`` can reach (a local path or a
            hub name on machines that have access).
        split: the split to take from a ``DatasetDict`` or a named dataset (default: the only split, or "test").
        make_id: derive stable ids for rows that have none instead of failing.

    Returns:
        The records, in source order.

    Raises:
        RecordError: a bad row, naming the row and field.
        FileNotFoundError: a path that does not exist and is not a dataset name.
    """
    path = Path(source)
    name = str(source)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            return records_from_rows(_jsonl_rows(path), name, make_id)
        if suffix == ".json":
            rows = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(rows, list):
                raise RecordError(name, 0, None, "a .json source must hold a list of rows (use .jsonl for one per line)")
            return records_from_rows(rows, name, make_id)
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return records_from_rows(pq.read_table(path).to_pylist(), name, make_id)
        raise ValueError(f"{name}: unknown file type {suffix!r} (expected .jsonl, .json or .parquet)")

    import datasets

    if path.is_dir():
        loaded = datasets.load_from_disk(str(path))
    elif "/" in name and not name.startswith((".", "/")) and path.suffix.lower() not in {".jsonl", ".json", ".parquet"}:
        loaded = datasets.load_dataset(name, split=split)
    else:
        raise FileNotFoundError(f"{name}: no such file or folder")
    if isinstance(loaded, datasets.DatasetDict):
        if split is None:
            split = next(iter(loaded)) if len(loaded) == 1 else "test"
        if split not in loaded:
            raise ValueError(f"{name}: no split {split!r}; available: {sorted(loaded)}")
        loaded = loaded[split]
    return records_from_rows(loaded, name, make_id)


def write_jsonl(records: Iterable[JudgeRecord], path: str | Path) -> Path:
    """Write records as JSONL with the POLLUX column names (UTF-8, Cyrillic unescaped)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
    return path

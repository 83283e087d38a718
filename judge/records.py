"""Judged items: one record per (instruction, answer, criterion), in either of two row schemas.

Two schemas are read natively, row by row:

- **the released POLLUX schema** (dataset ``ai-forever/POLLUX``, its Hugging Face dataset card): the experts sit in
  ``annotations``, a list of ``{comment, score}`` (one per expert, in order); a score of ``-1`` there is an
  abstention ("the criterion does not apply"), not a score; there is no ``id`` column;
- **the project's JSONL schema**: ``expert_scores`` (a list of numbers, ``null`` for an abstention; a ``-1`` here is
  a real score, since rubric levels may be negative) with ``expert_feedback`` (one text per expert, or null).

Either schema may name its experts: ``expert_ids``, a list of texts parallel to the experts (``annotations`` or
``expert_scores``), one distinct id per expert of the row. An abstaining expert keeps its id in ``annotations`` and is
left out of ``JudgeRecord.expert_ids`` like its score. The released POLLUX data names no experts, so its records
have ``expert_ids`` None (statistics that need identities, such as the alternative annotator test, skip them).

Either way a record keeps every expert, abstentions included, in ``JudgeRecord.annotations``; ``expert_scores`` and
``expert_feedback`` hold the non-abstaining experts only, which is what metrics and training read.

The loaders (``judge.record_sources``) read one JSONL / JSON / Parquet file, a folder of Parquet shards as the hub
lays it out (``<dir>/data/test-00000-of-00003.parquet`` ...), a folder written by ``datasets.save_to_disk``, or a
dataset name that ``datasets.load_dataset`` can reach from the user's machine, and hand the rows here. Every row is
validated; a bad row raises a
``RecordError`` naming the source, the row and the field. Nothing is dropped silently: columns the record does not
know are kept in ``JudgeRecord.extra``, and exact duplicate rows, abstentions and items whose experts all abstained
are counted in a ``LoadReport`` (``load_records_report``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ABSTENTION_SCORE",
    "ID_FIELDS",
    "Annotation",
    "JudgeRecord",
    "LoadReport",
    "RecordError",
    "content_id",
    "records_from_rows",
]

logger = logging.getLogger(__name__)

_TEXT_REQUIRED = ("instruction", "answer", "criteria_name", "rubrics")
_TEXT_OPTIONAL = ("model_id", "task_type", "task_subtype", "task_subsubtype", "difficulty", "domain",
                  "criteria_description", "rubrics_example")  # fmt: skip
#: The released data's marker for an abstaining expert: a score of -1 in ``annotations`` (the dataset card).
ABSTENTION_SCORE = -1.0
#: The fields a content-derived id hashes, in this order (see ``content_id``).
ID_FIELDS = ("instruction", "reference_answer", "answer", "criteria_name", "rubrics", "model_id", "task_type",
             "task_subtype", "task_subsubtype")  # fmt: skip
# Columns only the released benchmark has (the dataset's columns); build-data refuses rows that carry them.
_BENCHMARK_MARKERS = ("is_provocative", "criteria_description")
# A hub shard name: "<split>-00000-of-00003.parquet".


class RecordError(ValueError):
    """A row that is not a valid judged item.

    Attributes:
        source: where the row came from (a path or dataset name).
        row: the 0-based row index (the line number minus one for JSONL); None for a record built in code.
        field: the offending field, or None for a whole-row problem.
        message: what is wrong, without the location.
    """

    def __init__(self, source: str, row: int | None, field: str | None, message: str):
        self.source, self.row, self.field, self.message = source, row, field, message
        where = source + (f": row {row}" if row is not None else "") + (f": field {field!r}" if field else "")
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)  # slots: the 160k-item test set holds about 600k of them
class Annotation:
    """One expert's verdict on an item.

    Attributes:
        score: the expert's point estimate, or None when the expert abstained (the released data writes ``-1``,
            the project's JSONL ``null``).
        comment: the expert's rationale ("" when the source has none).
        expert_id: who the expert is (the row's ``expert_ids``), None when the source names no experts.
    """

    score: float | None
    comment: str = ""
    expert_id: str | None = None

    @property
    def abstained(self) -> bool:
        return self.score is None


@dataclass(frozen=True)
class JudgeRecord:
    """One judged item: an answer to an instruction, scored on one criterion.

    Attributes:
        id: unique within a data set (derived from the content when the source has no ``id`` column).
        instruction: the task given to the evaluated model.
        reference_answer: the reference ("" when there is none).
        answer: the evaluated model's answer.
        criteria_name: the criterion's name as shown to the judge.
        rubrics: the criterion's scale as text ("0: ...\\n\\n1: ...").
        criteria_score: the aggregate over experts (or a teacher's score); None when unknown.
        expert_scores: the non-abstaining experts' point estimates, in order (empty for unlabelled data).
        expert_feedback: the non-abstaining experts' rationales, one per score, or None.
        model_id, task_type, task_subtype, task_subsubtype, difficulty, domain: POLLUX metadata ("" if absent).
        extra: any other columns of the source row, kept unchanged.
        annotations: every expert in order, abstentions included. Built from ``expert_scores`` /
            ``expert_feedback`` when not given; when given, its non-abstaining entries must agree with them
            (``dataclasses.replace`` a record's scores with ``annotations=()`` to rebuild it).
        criteria_description, rubrics_example: the released columns ("" if absent).
        is_provocative: the released flag; None when the source does not say.
        origin: (source, row) the record was read from, for error messages; not part of its value.
        expert_ids: the non-abstaining experts' ids, parallel to ``expert_scores``; None when the source names no
            experts (an abstaining expert's id stays in ``annotations``).
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
    annotations: tuple[Annotation, ...] = ()
    criteria_description: str = ""
    rubrics_example: str = ""
    is_provocative: bool | None = None
    origin: tuple[str, int] | None = field(default=None, compare=False, repr=False)
    expert_ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        feedback, ids = self.expert_feedback, self.expert_ids
        if ids is not None:
            ids = tuple(ids)
            object.__setattr__(self, "expert_ids", ids)
        if not self.annotations:
            if not self.expert_scores:
                if ids:
                    raise ValueError(f"record {self.id!r}: {len(ids)} expert ids for no expert scores")
                object.__setattr__(self, "expert_ids", None)
                return
            if feedback is not None and len(feedback) != len(self.expert_scores):
                raise ValueError(f"record {self.id!r}: {len(feedback)} feedback texts for {len(self.expert_scores)} scores")
            _check_ids(ids, len(self.expert_scores), f"record {self.id!r}")
            comments = feedback if feedback is not None else ("",) * len(self.expert_scores)
            named = ids if ids is not None else (None,) * len(self.expert_scores)
            object.__setattr__(self, "annotations",
                               tuple(map(Annotation, map(float, self.expert_scores), comments, named)))
            return
        given = [a for a in self.annotations if a.score is not None]
        scores = tuple(a.score for a in given)
        named = _annotation_ids(self.annotations)
        _check_ids(named, len(self.annotations), f"record {self.id!r}")
        given_ids = None if named is None else tuple(a.expert_id for a in given)
        if ids is None:
            object.__setattr__(self, "expert_ids", given_ids)
        elif ids != given_ids:
            raise ValueError(f"record {self.id!r}: expert_ids disagree with the annotations' expert ids")
        if not self.expert_scores and feedback is None:
            # Built from annotations alone: the non-abstaining experts are the scores and rationales.
            object.__setattr__(self, "expert_scores", scores)
            object.__setattr__(self, "expert_feedback", tuple(a.comment for a in given) if given else None)
            return
        comments_agree = (feedback is None and all(not a.comment for a in given)) or (
            feedback is not None and tuple(feedback) == tuple(a.comment for a in given)
        )
        if tuple(self.expert_scores) != scores or not comments_agree:
            raise ValueError(
                f"record {self.id!r}: expert_scores/expert_feedback disagree with annotations; give one of them "
                "(pass annotations=() to rebuild the annotations from new expert scores)"
            )

    @property
    def n_abstained(self) -> int:
        """How many experts abstained (kept in ``annotations``, left out of ``expert_scores``)."""
        # expert_scores are exactly the non-abstaining annotations (checked in __post_init__, built so in from_row).
        return len(self.annotations) - len(self.expert_scores)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict in the project's schema (extra columns merged back in).

        ``expert_scores`` lists every expert, ``null`` for an abstention; ``expert_feedback`` one text per expert
        (or null when no expert left one). The released columns are written when set. ``load_records`` /
        ``JudgeRecord.from_row`` read the dict back into an equal record.
        """
        row: dict[str, Any] = {"id": self.id, "instruction": self.instruction, "answer": self.answer,
                               "criteria_name": self.criteria_name, "rubrics": self.rubrics,
                               "reference_answer": self.reference_answer, "criteria_score": self.criteria_score}  # fmt: skip
        row["expert_scores"] = [a.score for a in self.annotations]
        has_comments = self.expert_feedback is not None or any(a.comment for a in self.annotations)
        row["expert_feedback"] = [a.comment for a in self.annotations] if has_comments else None
        if any(a.expert_id is not None for a in self.annotations):
            row["expert_ids"] = [a.expert_id for a in self.annotations]
        for name in ("model_id", "task_type", "task_subtype", "task_subsubtype", "difficulty", "domain"):
            row[name] = getattr(self, name)
        for name in ("criteria_description", "rubrics_example"):
            if getattr(self, name):
                row[name] = getattr(self, name)
        if self.is_provocative is not None:
            row["is_provocative"] = self.is_provocative
        return {**self.extra, **row}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, source: str = "<rows>", index: int = 0, make_id: bool = False) -> JudgeRecord:
        """Validate one row, in the released or the project's schema, into a record.

        Args:
            row: a mapping with the POLLUX columns (``annotations`` or ``expert_scores`` for the experts).
            source, index: used in error messages and kept as ``origin``.
            make_id: when the row has no ``id``, derive one from its content (``content_id``) instead of failing.

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

        provocative = row.get("is_provocative")
        if provocative is not None:
            if type(provocative).__name__ not in ("bool", "bool_"):  # numpy booleans from datasets / pandas
                raise fail("is_provocative", f"must be true or false, got {provocative!r}")
            provocative = bool(provocative)
        values["is_provocative"] = provocative

        if row.get("annotations") is not None:
            if row.get("expert_scores") is not None:
                raise fail("expert_scores", "a row gives both annotations and expert_scores; keep one of them")
            annotations = _released_annotations(row["annotations"], fail)
            given = [a for a in annotations if a.score is not None]
            values["expert_scores"] = tuple(a.score for a in given)
            values["expert_feedback"] = tuple(a.comment for a in given) if given else None
        else:
            annotations, values["expert_scores"], values["expert_feedback"] = _project_experts(row, fail)
        annotations, values["expert_ids"] = _named_experts(annotations, row.get("expert_ids"), fail)
        values["annotations"] = annotations

        scores = values["expert_scores"]
        aggregate = row.get("criteria_score")
        if aggregate is None:
            # The aggregate the POLLUX data reports is the mean over the experts who did not abstain; derive it
            # rather than leave a gap (None when every expert abstained).
            values["criteria_score"] = sum(scores) / len(scores) if scores else None
        else:
            number = _number(aggregate)
            if number is None:
                raise fail("criteria_score", f"{aggregate!r} is not a finite number")
            if number == ABSTENTION_SCORE and annotations and not scores and "annotations" in row:
                # The dataset card is silent on the aggregate of an item whose experts all abstained; a -1 there can only
                # be the abstention marker carried over, never a score, so the item has no aggregate.
                number = None
            values["criteria_score"] = number

        rid = row.get("id")
        if rid is None or (isinstance(rid, str) and not rid.strip()):
            if not make_id:
                raise fail("id", "is missing (pass make_id=True to derive stable ids from the content)")
            rid = content_id(values)
        elif not isinstance(rid, (str, int)):
            raise fail("id", f"must be text or an integer, got {type(rid).__name__}")
        values["id"] = str(rid)

        values["extra"] = {k: v for k, v in row.items() if k not in _KNOWN}
        values["origin"] = (source, index)
        # ``values`` holds every field, consistent by construction (annotations and the non-abstaining scores come
        # from one pass above): fill the instance directly instead of through __init__ and __post_init__'s
        # re-check, which would add a third of the load time of the 160k-item test set.
        record = object.__new__(cls)
        record.__dict__.update(values)
        return record


_KNOWN = frozenset({"id", "reference_answer", "expert_scores", "expert_feedback", "criteria_score", "annotations",
                    "is_provocative", "expert_ids", *_TEXT_REQUIRED, *_TEXT_OPTIONAL})  # fmt: skip


def _annotation_ids(annotations) -> tuple[str, ...] | None:
    """The experts' ids of these annotations, or None when none is named."""
    ids = tuple(a.expert_id for a in annotations)
    return None if all(i is None for i in ids) else ids


def _check_ids(ids: tuple | None, n_experts: int, where: str) -> None:
    """One distinct text id per expert, or no ids at all (raises ValueError naming what is wrong)."""
    if ids is None:
        return
    if len(ids) != n_experts:
        raise ValueError(f"{where}: {len(ids)} expert ids for {n_experts} experts")
    if any(type(i) is not str or not i for i in ids):
        raise ValueError(f"{where}: expert ids must be non-empty texts (one per expert), got {list(ids)!r}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{where}: an expert id repeats within the item ({list(ids)!r})")


def _named_experts(annotations: tuple[Annotation, ...], ids: Any, fail) -> tuple[tuple[Annotation, ...], tuple[str, ...] | None]:
    """Attach a row's ``expert_ids`` (parallel to all its experts, abstentions included) to its annotations.

    Returns the annotations (with ``expert_id`` set) and the non-abstaining experts' ids (None when the row names
    no experts). Integer ids are read as their text, as the other text columns are.
    """
    if ids is None:
        return annotations, None
    if not _is_list(ids):
        raise fail("expert_ids", f"must be a list of texts, one per expert, got {type(ids).__name__}")
    ids = tuple(str(i) if type(i) is int else i for i in ids)
    try:
        _check_ids(ids, len(annotations), "row")
    except ValueError as error:
        raise fail("expert_ids", str(error).removeprefix("row: ")) from None
    if not annotations:
        return annotations, None
    named = tuple(map(Annotation, (a.score for a in annotations), (a.comment for a in annotations), ids))
    return named, tuple(i for a, i in zip(named, ids) if a.score is not None)


def _is_list(value: Any) -> bool:
    return not isinstance(value, (str, bytes, Mapping)) and isinstance(value, Iterable)


def _released_annotations(items: Any, fail) -> tuple[Annotation, ...]:
    """The released ``annotations`` column: ``[{comment, score}, ...]``, ``-1`` meaning an abstention."""
    if not _is_list(items):
        raise fail("annotations", f"must be a list of {{comment, score}} objects, got {type(items).__name__}")
    annotations = []
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise fail("annotations", f"item {position} must be an object with comment and score, got {type(item).__name__}")
        if item.get("score") is None:
            raise fail("annotations", f"item {position} has no score")
        score = _number(item["score"])
        if score is None:
            raise fail("annotations", f"item {position}: score {item['score']!r} is not a finite number")
        comment = item.get("comment")
        if comment is not None and not isinstance(comment, str):
            raise fail("annotations", f"item {position}: comment must be text, got {type(comment).__name__}")
        annotations.append(Annotation(None if score == ABSTENTION_SCORE else score, comment or ""))
    return tuple(annotations)


def _project_experts(row: Mapping[str, Any], fail) -> tuple[tuple[Annotation, ...], tuple[float, ...], tuple[str, ...] | None]:
    """The project's ``expert_scores`` (``null`` = abstention) and ``expert_feedback`` (one text per expert)."""
    experts = row.get("expert_scores")
    if experts is None:
        experts = ()
    elif type(experts) is not list and not _is_list(experts):
        raise fail("expert_scores", f"must be a list of numbers, got {type(experts).__name__}")
    all_scores: list[float | None] = []
    abstained = False
    for position, value in enumerate(experts):
        kind = type(value)
        if (kind is float or kind is int) and math.isfinite(value):  # the common case, without _number's checks
            all_scores.append(float(value))
        elif value is None:
            all_scores.append(None)
            abstained = True
        else:
            number = _number(value)
            if number is None:
                raise fail("expert_scores", f"item {position} ({value!r}) is not a finite number")
            all_scores.append(number)

    feedback = row.get("expert_feedback")
    if feedback is not None:
        if isinstance(feedback, str) or not isinstance(feedback, (list, tuple)) and not isinstance(feedback, Iterable):
            raise fail("expert_feedback", "must be a list of texts, one per expert score")
        feedback = tuple(feedback)
        for text in feedback:
            if type(text) is not str:
                raise fail("expert_feedback", "must contain only texts")
        if len(feedback) != len(all_scores):
            raise fail("expert_feedback", f"has {len(feedback)} texts for {len(all_scores)} expert scores")
    comments = feedback if feedback is not None else ("",) * len(all_scores)
    annotations = tuple(map(Annotation, all_scores, comments))
    if not abstained:
        return annotations, tuple(all_scores), feedback if all_scores else None
    scores = tuple(s for s in all_scores if s is not None)
    if feedback is not None and scores:
        feedback = tuple(c for s, c in zip(all_scores, comments) if s is not None)
    else:
        feedback = None
    return annotations, scores, feedback


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


def content_id(values: Mapping[str, Any]) -> str:
    """The id of a row with none: its content, hashed.

    Recipe: the row's ``ID_FIELDS`` (instruction, reference_answer, answer, criteria_name, rubrics, model_id,
    task_type, task_subtype, task_subsubtype; absent or null = "") as a JSON list, exactly as the row holds them
    (no stripping), serialised with ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, encoded as
    UTF-8, hashed with SHA-256; the id is the first 16 hex characters. It depends on nothing but those texts, so
    the same row gets the same id on every run and machine. These fields identify an item (the release has no id column: an item is its
    content — instruction, answer, criterion, model); the experts' scores are not part of it.
    """
    key = json.dumps([values.get(name) or "" for name in ID_FIELDS], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


@dataclass
class LoadReport:
    """What a load read, kept and counted.

    Attributes:
        source: the path or dataset name.
        n_rows: rows read.
        n_records: records kept (``n_rows - n_duplicates``).
        n_duplicates: exact duplicate rows (same id, same content) left out; the first copy is kept.
        duplicate_rows: the first 20 duplicates, as "row 7 = row 2" (each side prefixed with its shard when the
            two rows come from different shards).
        n_derived_ids: rows whose id was derived from their content (``content_id``), duplicates included.
        n_abstentions: expert verdicts that are abstentions (kept in ``annotations``, out of ``expert_scores``).
        n_all_abstained: records with experts, every one of whom abstained (kept, unlabelled for metrics).
        n_unlabelled: records with no usable expert score (no experts, or all abstained).
        n_benchmark_rows: records read from rows in the released benchmark's schema (an ``annotations`` column, or
            the benchmark-only columns ``is_provocative`` and ``criteria_description``).
    """

    source: str
    n_rows: int = 0
    n_records: int = 0
    n_duplicates: int = 0
    duplicate_rows: list[str] = field(default_factory=list)
    n_derived_ids: int = 0
    n_abstentions: int = 0
    n_all_abstained: int = 0
    n_unlabelled: int = 0
    n_benchmark_rows: int = 0

    def summary(self) -> str:
        """One line: rows, records and every count that is not zero."""
        parts = [f"{self.source}: {self.n_rows} rows -> {self.n_records} records"]
        for name in ("n_duplicates", "n_derived_ids", "n_abstentions", "n_all_abstained", "n_unlabelled", "n_benchmark_rows"):
            if getattr(self, name):
                parts.append(f"{name[2:]}={getattr(self, name)}")
        return "; ".join(parts)


def _validated(items: Iterable[tuple[str, int, Mapping[str, Any]]], source: str, make_id: bool) -> tuple[list[JudgeRecord], LoadReport]:
    """Rows (each with its source and index) -> records, dropping exact duplicates and counting what it saw.

    A source whose first row has no ``id`` key (a table without an ``id`` column) gets content-derived ids for all
    its rows; otherwise a missing id is an error unless ``make_id``.
    """
    state = {"rows": 0, "derive": make_id}
    return _collected(_checked_rows(items, state), source)


def _collected(checked: Iterable[tuple[str, int, JudgeRecord, bool, bool]], source: str) -> tuple[list[JudgeRecord], LoadReport]:
    return _collected_loop(checked, source)


def _checked_rows(items: Iterable[tuple[str, int, Mapping[str, Any]]], state: dict[str, Any]) -> Iterator[tuple[str, int, JudgeRecord, bool, bool]]:
    """Row by row: (source, index, record, id derived, benchmark row) for each row, or the row's RecordError."""
    for where, index, row in items:
        if state["rows"] == 0 and isinstance(row, Mapping) and "id" not in row:
            state["derive"] = True
        state["rows"] += 1
        record = JudgeRecord.from_row(row, source=where, index=index, make_id=state["derive"])
        derived = "id" not in row or row["id"] is None or row["id"] == ""
        benchmark = "annotations" in row or all(name in row for name in _BENCHMARK_MARKERS)
        yield where, index, record, derived, benchmark


def _collected_loop(checked: Iterable[tuple[str, int, JudgeRecord, bool, bool]], source: str) -> tuple[list[JudgeRecord], LoadReport]:
    records: list[JudgeRecord] = []
    report = LoadReport(source=source)
    first: dict[str, JudgeRecord] = {}
    for where, index, record, derived, benchmark in checked:
        report.n_rows += 1
        report.n_derived_ids += derived
        earlier = first.get(record.id)
        if earlier is not None:
            e_source, e_row = earlier.origin
            other = f"row {e_row}" if e_source == where else f"{e_source}: row {e_row}"
            if record == earlier and record.extra == earlier.extra:
                report.n_duplicates += 1
                if len(report.duplicate_rows) < 20:
                    here = f"row {index}" if e_source == where else f"{where}: row {index}"
                    report.duplicate_rows.append(f"{here} = {other}")
                continue
            raise RecordError(where, index, "id", f"{record.id!r} repeats the id of {other} with different content")
        first[record.id] = record
        records.append(record)
        abstained = record.n_abstained
        report.n_abstentions += abstained
        if not record.expert_scores:
            report.n_unlabelled += 1
            if abstained:
                report.n_all_abstained += 1
        report.n_benchmark_rows += benchmark
    report.n_records = len(records)
    if report.n_duplicates:
        shown = "; ".join(report.duplicate_rows[:5])
        logger.warning("%s: %d exact duplicate rows left out (%s)", source, report.n_duplicates, shown)
    if report.n_all_abstained:
        logger.warning("%s: %d items whose experts all abstained are kept without a score", source, report.n_all_abstained)
    return records, report


# ------------------------------------------------------------------------------------------ column-wise loading
#
# A JSONL or Parquet source is read into an Arrow table and checked column by column (types, nulls, empty texts,
# finite scores, list lengths); a table that passes every check is valid row by row by construction, and its
# records are built from the columns without re-checking each row. Any table a check flags, or one the column
# checks cannot vouch for (a column of an unexpected type, a JSONL file Arrow cannot parse or whose lines it would
# number differently), goes through the row-by-row path instead, which raises the very error it always raised,
# naming the source, row and field. Speed: the 160k-item test set loads in about a third of the row-by-row time.


def _is_text_type(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_number_type(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _all_finite(array) -> bool:
    """Every non-null value of a numeric Arrow array is finite (integers always are)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_floating(array.type):
        return True
    finite = pc.is_finite(array)
    return bool(pc.all(pc.or_kleene(finite, pc.is_null(array))).as_py() in (True, None))


def _shared_texts(column) -> tuple[list, list]:
    """A text column as Python strings, one object per distinct text (the 16 criteria of an answer share its
    instruction and answer: a 160k-item set would otherwise hold each long text 16 times), and the distinct texts."""
    import numpy as np
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = array.dictionary_encode()
    unique = encoded.dictionary.to_pylist()
    lookup = np.empty(len(unique) + 1, dtype=object)
    lookup[:-1] = unique  # the last slot stays None: a null's index (filled with -1) lands there
    indices = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return lookup[indices].tolist(), unique


def _lists(column) -> tuple[list | None, list[int]] | None:
    """A list column as (flattened values, per-row lengths with null lists as 0), or None if not a list column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        return None
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array.flatten(), pc.fill_null(pc.list_value_length(array), 0).to_pylist()


def _columnar(where: str, table, state: dict[str, Any], jsonl: bool) -> list[tuple[str, int, JudgeRecord, bool, bool]] | None:
    """Records from a table checked column-wise, or None when any check flags it (the row path then names the row).

    Args:
        where: the source of the table's rows (a file), for ``origin``.
        table: a ``pyarrow.Table`` whose row i is row i of ``where``.
        state: rows seen so far in the whole source and whether ids are derived (shared with ``_checked_rows``).
        jsonl: the table came from JSON lines, where Arrow cannot tell a null from an absent key: columns where
            that difference matters (``id``, the benchmark markers, unknown columns) must hold no nulls.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = table.column_names
    if len(set(names)) != len(names):
        return None
    n = table.num_rows
    present = set(names)

    def column(name: str):
        return table.column(name) if name in present else None

    values: dict[str, list] = {}
    for name in _TEXT_REQUIRED:
        col = column(name)
        if col is None or not _is_text_type(col.type) or col.null_count:
            return None
        texts, unique = _shared_texts(col)
        if not all(map(str.strip, unique)):  # an empty or blank text
            return None
        values[name] = texts
    for name in ("reference_answer", *_TEXT_OPTIONAL):
        col = column(name)
        if col is None or pa.types.is_null(col.type):
            values[name] = [""] * n
            continue
        if _is_text_type(col.type):
            texts, _ = _shared_texts(col)
            values[name] = [v or "" for v in texts] if col.null_count else texts
        elif name != "reference_answer" and (pa.types.is_integer(col.type) or pa.types.is_boolean(col.type)):
            values[name] = ["" if v is None else str(v) for v in col.to_pylist()]  # as the row path's str(value)
        else:
            return None
    if jsonl:
        for name in (*_BENCHMARK_MARKERS, "annotations", "id", *(c for c in names if c not in _KNOWN)):
            col = column(name)
            if col is not None and col.null_count:
                return None
        for name in (c for c in names if c not in _KNOWN):
            kind = table.column(name).type
            # JSON's 1 and 1.0 both read as Arrow doubles, nested objects gain the keys of their siblings: only
            # columns whose Python values Arrow reproduces exactly.
            if not (_is_text_type(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind)):
                return None

    provocative = column("is_provocative")
    if provocative is not None and not (pa.types.is_boolean(provocative.type) or pa.types.is_null(provocative.type)):
        return None
    provocative_values = provocative.to_pylist() if provocative is not None else [None] * n

    aggregate = column("criteria_score")
    if aggregate is not None and not pa.types.is_null(aggregate.type):
        if not _is_number_type(aggregate.type) or not _all_finite(aggregate):
            return None
        aggregates = aggregate.to_pylist()
    else:
        aggregates = [None] * n

    rid = column("id")
    if rid is None:
        if state["rows"] == 0:
            state["derive"] = True  # no id column: content-derived ids, as for a first row without an id key
        elif not state["derive"]:
            return None
        ids = None
    else:
        if rid.null_count or not (_is_text_type(rid.type) or pa.types.is_integer(rid.type)):
            return None
        ids = rid.to_pylist()
        if _is_text_type(rid.type) and not all(map(str.strip, ids)):
            return None
        ids = [str(v) for v in ids] if pa.types.is_integer(rid.type) else ids

    # Experts: the released annotations or the project's expert_scores / expert_feedback, never both in a row.
    annotations = column("annotations")
    if annotations is not None and pa.types.is_null(annotations.type):
        annotations = None
    experts = column("expert_scores")
    if experts is not None and pa.types.is_null(experts.type):
        experts = None
    feedback = column("expert_feedback")
    if feedback is not None and pa.types.is_null(feedback.type):
        feedback = None
    annotation_rows = None
    if annotations is not None:
        kind = annotations.type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or not pa.types.is_struct(kind.value_type):
            return None
        fields = {kind.value_type.field(k).name: kind.value_type.field(k).type for k in range(kind.value_type.num_fields)}
        if "score" not in fields or not _is_number_type(fields["score"]):
            return None
        if "comment" in fields and not (_is_text_type(fields["comment"]) or pa.types.is_null(fields["comment"])):
            return None
        items, _ = _lists(annotations)
        if items.null_count:
            return None
        scores = pc.struct_field(items, "score")
        if scores.null_count or not _all_finite(scores):
            return None
        if experts is not None and pc.any(pc.and_(pc.is_valid(annotations), pc.is_valid(experts))).as_py():
            return None
        annotation_rows = annotations.to_pylist()
    score_lists = feedback_lists = None
    if experts is not None:
        flat = _lists(experts)
        if flat is None or not (_is_number_type(flat[0].type) or pa.types.is_null(flat[0].type)):
            return None
        if _is_number_type(flat[0].type) and not _all_finite(flat[0]):
            return None
        # Floats (or None: an abstention) exactly as the row path's float(value).
        score_values, score_lengths = flat[0].cast(pa.float64()).to_pylist(), flat[1]
        score_lists, at = [], 0
        for length in score_lengths:
            score_lists.append(score_values[at:at + length])
            at += length
    if feedback is not None:
        flat = _lists(feedback)
        if flat is None or not (_is_text_type(flat[0].type) or pa.types.is_null(flat[0].type)) or flat[0].null_count:
            return None
        valid = pc.is_valid(feedback).to_pylist()
        lengths = flat[1]
        expected = [len(s) for s in score_lists] if score_lists is not None else [0] * n
        with_annotations = annotation_rows or [None] * n
        if any(ok and ann is None and length != want
               for ok, ann, length, want in zip(valid, with_annotations, lengths, expected)):  # fmt: skip
            return None
        texts, feedback_lists, at = flat[0].to_pylist(), [], 0
        for ok, length in zip(valid, lengths):
            feedback_lists.append(tuple(texts[at:at + length]) if ok else None)
            at += length

    id_lists = None
    id_column = column("expert_ids")
    if id_column is not None and not pa.types.is_null(id_column.type):
        flat = _lists(id_column)
        if flat is None or not _is_text_type(flat[0].type) or flat[0].null_count:
            return None  # integer ids, nulls inside a list: the row path reads or names them
        # Per row: its ids (a null list: the row names no experts); lengths and repeats are checked per row below.
        texts, valid, id_lists, at = flat[0].to_pylist(), pc.is_valid(id_column).to_pylist(), [], 0
        for ok, length in zip(valid, flat[1]):
            id_lists.append(texts[at:at + length] if ok else None)
            at += length

    extra_names = [c for c in names if c not in _KNOWN]
    extra_columns = [table.column(c).to_pylist() for c in extra_names]
    benchmark = "annotations" in present or all(name in present for name in _BENCHMARK_MARKERS)
    derived = ids is None
    has_annotations_key = "annotations" in present
    no_scores: list = []
    text_names = ("instruction", "answer", "criteria_name", "rubrics", "reference_answer", *_TEXT_OPTIONAL)
    text_columns = [values[name] for name in text_names]

    def fail(name: str, message: str) -> RecordError:  # unreachable after the checks above; the row path takes over
        return RecordError(where, None, name, message)

    out = []
    new = object.__new__
    # Annotations are immutable values: one shared instance per (score, "") covers every comment-less expert.
    plain: dict[float, Annotation] = {}

    def uncommented(score: float) -> Annotation:
        found = plain.get(score)
        if found is None:
            found = plain[score] = Annotation(score, "")
        return found

    plain_named: dict[tuple[float, str], Annotation] = {}

    def named(score: float, expert_id: str) -> Annotation:
        found = plain_named.get((score, expert_id))
        if found is None:
            found = plain_named[score, expert_id] = Annotation(score, "", expert_id)
        return found

    for_rows = zip(
        zip(*text_columns), provocative_values, annotation_rows or [None] * n, score_lists or [no_scores] * n,
        feedback_lists or [None] * n, aggregates, ids or [None] * n,
    )  # fmt: skip
    try:
        for i, (texts, provocative_value, released, listed, comments, number, given_id) in enumerate(for_rows):
            row_values = dict(zip(text_names, texts))
            row_values["is_provocative"] = provocative_value
            if released is not None:
                annotation_tuple = _released_annotations(released, fail)
                given = [a for a in annotation_tuple if a.score is not None]
                scores = tuple(a.score for a in given)
                comments = tuple(a.comment for a in given) if given else None
            elif None in listed:  # abstentions: the row path's own helper sorts them out
                annotation_tuple, scores, comments = _project_experts({"expert_scores": listed, "expert_feedback": comments}, fail)
            else:  # what _project_experts returns for a row without abstentions
                scores = tuple(listed)
                if comments is None:
                    annotation_tuple = tuple(map(uncommented, scores))
                else:
                    annotation_tuple = tuple(map(Annotation, scores, comments))
                if not scores:
                    comments = None
            row_ids = None
            if id_lists is not None and id_lists[i] is not None:
                named_ids = id_lists[i]
                if comments is None and released is None and None not in listed and len(named_ids) == len(scores) \
                        and len(set(named_ids)) == len(named_ids) and all(named_ids):
                    # comment-less experts without abstentions: one shared instance per (score, id), as `uncommented`
                    annotation_tuple = tuple(map(named, scores, named_ids))
                    row_ids = tuple(named_ids)
                else:  # the row path's helper checks the ids (a RecordError sends the table to the row path)
                    annotation_tuple, row_ids = _named_experts(annotation_tuple, named_ids, fail)
            row_values["expert_ids"] = row_ids
            row_values["expert_scores"], row_values["expert_feedback"], row_values["annotations"] = scores, comments, annotation_tuple
            if number is None:
                row_values["criteria_score"] = sum(scores) / len(scores) if scores else None
            else:
                number = float(number)
                if number == ABSTENTION_SCORE and annotation_tuple and not scores and has_annotations_key:
                    number = None  # see JudgeRecord.from_row
                row_values["criteria_score"] = number
            row_values["id"] = content_id(row_values) if derived else given_id
            row_values["extra"] = {name: col[i] for name, col in zip(extra_names, extra_columns)} if extra_names else {}
            row_values["origin"] = (where, i)
            record = new(JudgeRecord)
            record.__dict__.update(row_values)
            out.append((where, i, record, derived, benchmark))
    except RecordError:
        return None
    state["rows"] += n
    return out


def records_from_rows(rows: Iterable[Mapping[str, Any]], source: str = "<rows>", make_id: bool = False) -> list[JudgeRecord]:
    """Validate rows into records; exact duplicate rows are left out (counted, see ``load_records_report``).

    Rows without an ``id`` get one from ``content_id`` when the first row has no ``id`` key, or with ``make_id``.

    Raises:
        RecordError: for the first bad row (naming the row and field), or an id repeated with different content
            (naming both rows).
    """
    return _validated(((source, index, row) for index, row in enumerate(rows)), source, make_id)[0]



"""Judged items: one record per (instruction, answer, criterion), in either of two row schemas.

Two schemas are read natively, row by row:

- **the released POLLUX schema** (dataset ``ai-forever/POLLUX``, its Hugging Face dataset card): the experts sit in
  ``annotations``, a list of ``{comment, score}`` (one per expert, in order); a score of ``-1`` there is an
  abstention ("the criterion does not apply"), not a score, and so is a ``criteria_score`` of ``-1`` on an item no
  expert scored (all abstained, or none listed): the item has no aggregate; there is no ``id`` column;
- **the project's JSONL schema**: ``expert_scores`` (a list of numbers, ``null`` for an abstention) with
  ``expert_feedback`` (one text per expert, or null). A ``-1`` there is refused, naming the row, unless the row's
  rubric lists -1 as a level (a custom scale may run below zero): elsewhere it can only be the release's abstention
  code carried over by hand, and read as a score it would pull every mean and agreement statistic down. The same
  holds for a ``criteria_score`` of ``-1`` with no expert score beside it, and for a record built in code.

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
know are kept in ``JudgeRecord.extra``, and exact duplicate rows, abstentions, items whose experts all abstained and
aggregates (``criteria_score``) derived from the experts are counted in a ``LoadReport`` (``load_records_report``).

Why one module of ~1066 lines: the record and the one validation of its invariants for both row schemas belong
together (every loader builds records through it); where rows come from is ``judge.record_sources``, the
column-wise reader ``judge.column_reader``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import operator
import re
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from judge.plumbing.invisible_text import is_blank
# kind_words and value_words live beneath the contract, where judge.plumbing's readers word their errors too
from judge.plumbing.json_reading import kind_words, lone_surrogate_at, value_words
from judge.scales import ScaleError, scale_of

__all__ = [
    "ABSTENTION_SCORE",
    "is_benchmark_row",
    "RELEASED_COLUMNS",
    "released_columns_problem",
    "ID_FIELDS",
    "MAX_EXPERTS_PER_ITEM",
    "MAX_TEXT_CHARS",
    "SCORE_BOUND",
    "Annotation",
    "JudgeRecord",
    "LoadReport",
    "LineIndex",
    "RecordError",
    "RowIndex",
    "content_id",
    "kind_words",
    "row_place",
    "check_unicode",
    "value_words",
    "records_from_rows",
    # shared with the column-wise reader, the record columns, the loaders and the criteria expansion
    "REQUIRED_TEXT_FIELDS",
    "OPTIONAL_TEXT_FIELDS",
    "KNOWN_FIELDS",
    "BENCHMARK_MARKERS",
    "gives_no_id",
    "same_content",
    "records_and_report",
    "note_duplicate",
    "note_off_scale",
    "scale_bounds",
    "log_report",
]

logger = logging.getLogger(__name__)

#: The text fields a row must give, non-blank (``JudgeRecord.from_row``; the column-wise reader checks the same).
REQUIRED_TEXT_FIELDS = ("instruction", "answer", "criteria_name", "rubrics")
#: The text fields a row may leave out or null (read as ""); an integer among them is read as its digits.
OPTIONAL_TEXT_FIELDS = ("model_id", "task_type", "task_subtype", "task_subsubtype", "difficulty", "domain",
                        "criteria_description", "rubrics_example")  # fmt: skip
#: The released data's marker for an abstaining expert: a score of -1 in ``annotations`` (the dataset card).
ABSTENTION_SCORE = -1.0
#: The most experts one item may list (``annotations``, ``expert_scores``, ``expert_feedback``, ``expert_ids``).
#: The paper's items have 2 to 11 (Appendix D.2.2; Technical Problems items one, per the release notes); the bound is
#: far above that and refuses a row whose list would cost the load memory and time out of all proportion (untrusted
#: input is bounded before it is built into records).
MAX_EXPERTS_PER_ITEM = 64
#: The most characters one text of a row may hold: each of its own texts (instruction, answer, reference, criterion,
#: rubric, the optional ones), each expert's rationale and id. The bundled sample's longest is a rubric of about
#: 1,000; a million characters is some 250,000 tokens, sixty times judge-serve's default context (``max_model_len``
#: 4,096), so a longer text could only be refused as too long after it went whole through the prompt renderer and
#: the engine's tokenizer. Refused at load instead, naming the field and the row, by the row path and the column
#: reader alike.
MAX_TEXT_CHARS = 1_000_000
#: The fields a content-derived id hashes, in this order (see ``content_id``).
ID_FIELDS = ("instruction", "reference_answer", "answer", "criteria_name", "rubrics", "model_id", "task_type",
             "task_subtype", "task_subsubtype")  # fmt: skip
#: Columns only the released benchmark has (the dataset's columns); build-data refuses rows that carry them.
BENCHMARK_MARKERS = ("is_provocative", "criteria_description")


def is_benchmark_row(row: Container[str]) -> bool:
    """Whether a row (or a table's set of column names) is in the released benchmark's schema: an ``annotations``
    column, or both of the columns only it carries (``is_provocative``, ``criteria_description``). Training refuses
    such rows."""
    return "annotations" in row or all(name in row for name in BENCHMARK_MARKERS)


#: The released benchmark's columns the records are built from (the dataset card's schema, ``ai-forever/POLLUX`` on
#: the hub): the prompt's texts, the evaluated model (in the content id), the experts and their aggregate. A released
#: table without one of them loads with a quiet default (an empty reference answer in every prompt, no expert label,
#: an aggregate derived from the experts), so ``released_columns_problem`` refuses it.
RELEASED_COLUMNS = ("instruction", "reference_answer", "answer", "model_id", "criteria_name", "rubrics",
                    "annotations", "criteria_score")  # fmt: skip


def released_columns_problem(names: Sequence[str]) -> tuple[str, str] | None:
    """(the first missing column, why) when a table's columns ``names`` are the released benchmark's (both
    ``BENCHMARK_MARKERS``, or ``annotations``, and no ``expert_scores``, which only the project schema has) without
    every one of ``RELEASED_COLUMNS``; None otherwise. The columns the release does not have are named too: a
    renamed column ("reference" for "reference_answer") is the usual cause."""
    present = set(names)
    if "expert_scores" in present or not is_benchmark_row(present):
        return None
    missing = [name for name in RELEASED_COLUMNS if name not in present]
    if not missing:
        return None
    foreign = sorted(present - KNOWN_FIELDS)
    others = f"; it has {', '.join(map(repr, foreign))}, which the release does not: renamed?" if foreign else ""
    kind = "annotations" if "annotations" in present else " and ".join(BENCHMARK_MARKERS)
    columns = "s" if len(missing) > 1 else ""
    return missing[0], (f"a released POLLUX table (it has {kind}) without the column{columns} "
                        f"{', '.join(map(repr, missing))}{others}; the records read every one of "
                        f"{', '.join(RELEASED_COLUMNS)}")


class LineIndex(int):
    """A JSONL row's place: its line number minus one, blank lines counted (the reader skips them but keeps the
    numbers of the others). An int, so ``RecordError.row`` stays the 0-based index and arithmetic on it gives a
    plain int; an error shows it as the line an editor shows, from 1 ("line 2")."""

    __slots__ = ()


class RowIndex(int):
    """A table row's place (Parquet, Arrow, a ``datasets`` split, a .json list): its 0-based index, as pandas and
    ``datasets`` number rows; an error shows it as "row index 1", so that no one reads it as a line from 1."""

    __slots__ = ()


def row_place(row: int | None) -> str | None:
    """How an error names a row: "line 2" (``LineIndex`` 1), "row index 1" (``RowIndex`` 1), or "row 1" for an
    index of unknown kind (numbered as its producer numbers it); None for no row."""
    if row is None:
        return None
    if isinstance(row, LineIndex):
        return f"line {row + 1}"
    if isinstance(row, RowIndex):
        return f"row index {int(row)}"
    return f"row {row}"


class RecordError(ValueError):
    """A row that is not a valid judged item.

    Attributes:
        source: where the row came from (a path or dataset name).
        row: the 0-based row index (the line number minus one for JSONL); None for a record built in code. A
            ``LineIndex`` (a JSONL line) or ``RowIndex`` (a table row) says which, and the message names it so:
            "data.jsonl: line 2: ..." for the row at index 1 of a JSONL file, "data.parquet: row index 1: ...".
        field: the offending field, or None for a whole-row problem.
        message: what is wrong, without the location.
        place: the row as the message names it ("line 2", "row index 1"), None for no row.
    """

    def __init__(self, source: str, row: int | None, field: str | None, message: str):
        self.source, self.row, self.field, self.message = source, row, field, message
        self.place = row_place(row)
        where = source + (f": {self.place}" if self.place else "") + (f": field {field!r}" if field else "")
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


@dataclass(frozen=True, slots=True)  # slots: no per-record __dict__ (160k records: fewer objects to collect)
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
        origin: (source, row) the record was read from, for error messages; not part of its value. The row is a
            ``LineIndex`` for a JSONL line, a ``RowIndex`` for a table's row (``RecordError`` names it so).
        expert_ids: the non-abstaining experts' ids, parallel to ``expert_scores``; None when the source names no
            experts (an abstaining expert's id stays in ``annotations``).
        criteria_score_derived: the row gave no ``criteria_score`` and the load put the experts' mean in its place
            (``from_row``; ``LoadReport.n_derived_criteria_scores`` counts these). Where it came from, not part of
            the record's value, like ``origin``: ``to_dict`` writes such an aggregate as null, so that a written
            and reloaded record is derived, and counted, again.
        benchmark_row: the row was in the released benchmark's schema (``is_benchmark_row``; counted in
            ``LoadReport.n_benchmark_rows``), not part of the record's value: ``to_dict`` writes the benchmark's
            markers (``criteria_description``, ``is_provocative``) even when empty or null, so that a converted
            release still reads as one and training still refuses it.
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
    criteria_score_derived: bool = field(default=False, compare=False, repr=False)
    benchmark_row: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        """The check of the experts' fields, run by every construction: ``from_row``, the column-wise reader's
        builder (``judge.record_columns``) and code. The experts' fields are built from each other where only some
        are given, and must agree where several are. The rest of a row (types, finite numbers, non-empty required
        texts, valid Unicode) is ``from_row``'s check, not repeated here for every loaded record; a record built in
        code gets none of it, and ``write_jsonl`` refuses a NaN or infinite number rather than write it.

        Raises:
            RecordError: naming the field and, for a loaded record, its source and row (``origin``).
        """
        # A record built in code may give its experts as lists: kept as the tuples the fields are typed as, or it
        # would be unhashable and unequal to the same record written (write_jsonl) and loaded back.
        for name in ("expert_scores", "expert_feedback", "annotations"):
            value = getattr(self, name)
            if value is not None and type(value) is not tuple:
                object.__setattr__(self, name, tuple(value))
        feedback, ids = self.expert_feedback, self.expert_ids
        if ids is not None:
            ids = tuple(ids)
            object.__setattr__(self, "expert_ids", ids)
        if not self.annotations:
            if not self.expert_scores:
                if ids:
                    raise self._invalid("expert_ids", f"{len(ids)} expert ids for no expert scores")
                object.__setattr__(self, "expert_ids", None)
                self._check_no_abstention_code(())
                return
            if feedback is not None and len(feedback) != len(self.expert_scores):
                raise self._invalid("expert_feedback",
                                    f"{len(feedback)} feedback texts for {len(self.expert_scores)} scores")
            self._check_ids(ids, len(self.expert_scores))
            self._check_no_abstention_code(self.expert_scores)
            comments = feedback if feedback is not None else ("",) * len(self.expert_scores)
            named = ids if ids is not None else (None,) * len(self.expert_scores)
            object.__setattr__(self, "annotations",
                               tuple(map(Annotation, map(float, self.expert_scores), comments, named)))
            return
        annotations = self.annotations
        all_scores = tuple(map(_SCORE, annotations))
        abstained = None in all_scores
        given = [a for a in annotations if a.score is not None] if abstained else annotations
        scores = tuple(a.score for a in given) if abstained else all_scores
        named = tuple(map(_EXPERT_ID, annotations))
        if named.count(None) == len(named):
            named = None  # no expert is named
        elif None in named or len(set(named)) != len(named) or not _all_texts(named) or not all(map(str.strip, named)):
            self._check_ids(named, len(annotations))  # names what is wrong
        given_ids = None if named is None else tuple(map(_EXPERT_ID, given)) if abstained else named
        if ids is None:
            object.__setattr__(self, "expert_ids", given_ids)
        elif ids != given_ids:
            raise self._invalid("expert_ids", "expert_ids disagree with the annotations' expert ids")
        self._check_no_abstention_code(all_scores)  # the place among the annotations, abstentions counted
        comments = tuple(map(_COMMENT, given))
        if not self.expert_scores and feedback is None:
            # Built from annotations alone: the non-abstaining experts are the scores and rationales.
            object.__setattr__(self, "expert_scores", scores)
            object.__setattr__(self, "expert_feedback", comments if given else None)
            return
        comments_agree = (feedback is None and not any(comments)) or (
            feedback is not None and tuple(feedback) == comments
        )
        if tuple(self.expert_scores) != scores or not comments_agree:
            raise self._invalid(
                "expert_scores", "expert_scores/expert_feedback disagree with annotations; give one of them "
                "(pass annotations=() to rebuild the annotations from new expert scores)"
            )

    def _invalid(self, name: str, message: str) -> RecordError:
        """A ``RecordError`` about field ``name``: at the record's source and row when it was loaded."""
        if self.origin is not None:
            return RecordError(self.origin[0], self.origin[1], name, message)
        return RecordError(f"record {self.id!r}", None, name, message)

    def _check_no_abstention_code(self, scores: Sequence[float | None]) -> None:
        """A -1 among the experts' scores (``scores``: every expert's, None for an abstention), or as the aggregate of
        an item no expert scored, on a rubric without that level, is the release's abstention code carried over, and
        read as a score it would pull every mean down: refused, for a project file's row (``from_row``, whose
        ``origin`` the error names; the column-wise reader leaves a table holding a -1 to that path) and for a record
        built in code alike. The release's own -1 is read as an abstention before it gets here."""
        expert = ABSTENTION_SCORE in scores
        if not expert and (self.criteria_score != ABSTENTION_SCORE or any(s is not None for s in scores)):
            return
        if _has_level(self.rubrics, -1):
            return
        # in a file's words (null) or in Python's (None)
        kind, write, code = (("row", "write null", "abstention code, which the release loader turns into null")
                             if self.origin is not None else ("record", "give None", "abstention code"))
        if expert:
            none = write if self.origin is not None else f"{write} (an annotation's score)"
            raise self._invalid("expert_scores", f"item {list(scores).index(ABSTENTION_SCORE)} is -1, which is not a "
                                                 f"level of this {kind}'s rubric: {none} for an abstention (-1 is the "
                                                 f"POLLUX release's {code})")
        raise self._invalid("criteria_score", f"is -1 with no expert score, and -1 is not a level of this {kind}'s "
                                              f"rubric: {write} for an item no expert scored (-1 is the POLLUX "
                                              f"release's {code})")

    def _check_ids(self, ids: tuple | None, n_experts: int) -> None:
        try:
            _check_ids(ids, n_experts, "")
        except ValueError as error:
            raise self._invalid("expert_ids", str(error).removeprefix(": ")) from None

    @property
    def n_abstained(self) -> int:
        """How many experts abstained (kept in ``annotations``, left out of ``expert_scores``)."""
        # expert_scores are exactly the non-abstaining annotations (checked in __post_init__, built so in from_row).
        return len(self.annotations) - len(self.expert_scores)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict in the project's schema (extra columns merged back in).

        ``expert_scores`` lists every expert, ``null`` for an abstention; ``expert_feedback`` one text per expert
        (or null when no expert left one). The released columns are written when set, and a benchmark row's markers
        always (``benchmark_row``). An aggregate the load derived (``criteria_score_derived``) is written null while
        it is still the experts' mean. ``load_records`` / ``JudgeRecord.from_row`` read the dict back into an equal
        record, with the same load report (its ids aside, which the dict now gives). A record built in code with
        experts and no ``criteria_score`` is written with a null aggregate too, so it reloads with the experts' mean,
        as any row without an aggregate does.
        """
        aggregate = self.criteria_score
        if self.criteria_score_derived and aggregate is not None and aggregate == _mean(self.expert_scores):
            # Null, so that the reload derives the same mean again and counts it (n_derived_criteria_scores, which
            # POLLUX's evaluator reports as references taken from the experts); a value replaced since is written.
            aggregate = None
        row: dict[str, Any] = {"id": self.id, "instruction": self.instruction, "answer": self.answer,
                               "criteria_name": self.criteria_name, "rubrics": self.rubrics,
                               "reference_answer": self.reference_answer, "criteria_score": aggregate}  # fmt: skip
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
        if self.benchmark_row:  # both markers, "" and null too: the row still reads as the benchmark's
            row["criteria_description"] = self.criteria_description
            row["is_provocative"] = self.is_provocative
        elif self.is_provocative is not None:
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
            raise RecordError(source, index, None, f"expected an object, got {value_words(row)}")

        def fail(name: str, message: str) -> RecordError:
            return RecordError(source, index, name, message)

        values: dict[str, Any] = {}
        for name in REQUIRED_TEXT_FIELDS:
            value = row.get(name)
            if value is None:
                raise fail(name, "is missing")
            if not isinstance(value, str):
                raise fail(name, f"must be text, got {value_words(value)}")
            if is_blank(value):
                raise fail(name, "is empty" if not value.strip() else "is empty: it holds only characters that show "
                           f"nothing ({_code_points(value)})")
            values[name] = value

        reference = row.get("reference_answer")
        if reference is not None and not isinstance(reference, str):
            raise fail("reference_answer", f"must be text or null, got {value_words(reference)}")
        values["reference_answer"] = reference or ""

        for name in OPTIONAL_TEXT_FIELDS:
            value = row.get(name)
            # an integer is read as its digits (a numbered subtype); a boolean is no text (it would read "True")
            if value is not None and (not isinstance(value, (str, int)) or isinstance(value, bool)):
                raise fail(name, f"must be text, got {value_words(value)}")
            values[name] = "" if value is None else str(value)

        provocative = row.get("is_provocative")
        if provocative is not None:
            if type(provocative).__name__ not in ("bool", "bool_"):  # numpy booleans from datasets / pandas
                # a text or a number says itself ("yes", 1); an object or a list in words, not as Python's {...}
                got = repr(provocative) if isinstance(provocative, (str, int, float)) else value_words(provocative)
                raise fail("is_provocative", f"must be true or false, got {got}")
            provocative = bool(provocative)
        values["is_provocative"] = provocative

        if row.get("annotations") is not None:
            if row.get("expert_scores") is not None:
                raise fail("expert_scores", "a row gives both annotations and expert_scores; keep one of them")
            if row.get("expert_feedback") is not None:
                # refused, not dropped: the annotations' comments are the experts' rationales, and texts beside
                # them would be lost without a word
                raise fail("expert_feedback", "a row gives both annotations and expert_feedback; keep one of them "
                                              "(the annotations' comments are the experts' rationales)")
            annotations = _released_annotations(row["annotations"], fail)
            given = [a for a in annotations if a.score is not None]
            values["expert_scores"] = tuple(a.score for a in given)
            values["expert_feedback"] = tuple(a.comment for a in given) if given else None
        else:
            # a -1 among them is refused by the record's own check (JudgeRecord._check_no_abstention_code)
            annotations, values["expert_scores"], values["expert_feedback"] = _project_experts(row, fail)
        annotations, values["expert_ids"] = _named_experts(annotations, row.get("expert_ids"), fail)
        values["annotations"] = annotations
        _check_texts(values, annotations, "annotations" if row.get("annotations") is not None else "expert_feedback",
                     fail)

        scores = values["expert_scores"]
        aggregate = row.get("criteria_score")
        if _no_aggregate(aggregate):
            # The aggregate the POLLUX data reports is the mean over the experts who did not abstain; derive it
            # rather than leave a gap (None when every expert abstained). The load counts these
            # (LoadReport.n_derived_criteria_scores): POLLUX's evaluator reports references taken from the experts.
            values["criteria_score"] = _mean(scores)
            values["criteria_score_derived"] = bool(scores)
        else:
            number = _number(aggregate)
            if number is None:
                raise fail("criteria_score", f"{_shown(aggregate)} is not a finite number")
            if _past_bound(number):
                raise fail("criteria_score", f"{_shown(aggregate)} {_PAST_BOUND}")
            if number == ABSTENTION_SCORE and not scores and row.get("annotations") is not None:
                # The dataset card is silent on the aggregate of an item no expert scored (all abstained, or none
                # listed); a -1 there can only be the abstention marker carried over, never a score, so the item has
                # no aggregate. Only when the experts came from annotations: a project row's -1 with no expert score
                # (a null annotations key beside expert_scores) is the record's own check's
                # (JudgeRecord._check_no_abstention_code).
                number = None
            values["criteria_score"] = number

        rid = row.get("id")
        if gives_no_id(rid):
            if not make_id:
                # Said for the command line first (no flag derives ids): the make_id hint is the Python API's only.
                raise fail("id", "is missing: give each row an id (or leave the id field out of every row: ids are "
                                 "then derived from the content; from Python, make_id=True in judge.load_records "
                                 "derives the missing ones)")
            rid = content_id(values)
        elif not isinstance(rid, (str, int)) or isinstance(rid, bool):  # true is no id: it would read "True"
            raise fail("id", f"must be text or an integer, got {value_words(rid)}")
        elif isinstance(rid, str):
            check_unicode(rid, "id", fail)
        values["id"] = str(rid)

        values["extra"] = {k: v for k, v in row.items() if k not in KNOWN_FIELDS}
        values["benchmark_row"] = is_benchmark_row(row)
        return cls(**values, origin=(source, index))  # __post_init__ checks the experts' fields agree


@lru_cache(maxsize=4096)  # a data set has a few hundred rubrics, each on thousands of rows
def scale_bounds(rubrics: str) -> tuple[int, int] | None:
    """The lowest and highest score a rubric allows (``judge.scales.scale_of``), or None when no scale can be read
    from it."""
    try:
        scale = scale_of(rubrics)
    except ScaleError:
        return None
    return scale.min, scale.max


@lru_cache(maxsize=4096)
def _has_level(rubrics: str, level: int) -> bool:
    """Whether a rubric's scale lists ``level`` (``judge.scales.scale_of``); False when no scale can be read from
    it: nothing then says that a -1 is one of its levels rather than an abstention carried over."""
    try:
        return level in scale_of(rubrics).levels
    except ScaleError:
        return False


def off_scale(record: JudgeRecord) -> bool:
    """Whether an expert's score or the aggregate of ``record`` lies outside its rubric's scale (``scale_bounds``).
    Kept, not refused: training skips such an item and counts it (``score_out_of_scale``); the load counts it too
    (``LoadReport.n_off_scale``), so that a 7 on a 0..2 criterion is never taken as a reference without a word."""
    bounds = scale_bounds(record.rubrics)
    if bounds is None:
        return False
    low, high = bounds
    scores, aggregate = record.expert_scores, record.criteria_score
    return bool(scores) and (min(scores) < low or max(scores) > high) or (
        aggregate is not None and not low <= aggregate <= high)


#: The columns a record reads; every other column of a row is kept in ``JudgeRecord.extra``.
KNOWN_FIELDS = frozenset({"id", "reference_answer", "expert_scores", "expert_feedback", "criteria_score",
                          "annotations", "is_provocative", "expert_ids", *REQUIRED_TEXT_FIELDS,
                          *OPTIONAL_TEXT_FIELDS})  # fmt: skip


_SCORE, _COMMENT, _EXPERT_ID = (operator.attrgetter(name) for name in ("score", "comment", "expert_id"))


def _all_texts(values: tuple) -> bool:
    """Every value is a str (``str.join`` refuses anything else, at C speed)."""
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def _code_points(text: str) -> str:
    """The distinct characters of ``text`` other than white space as code points ("U+200B, U+FEFF"): what a refusal
    names of a text that shows nothing, whose characters would print as nothing."""
    return ", ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(text) if not c.isspace())


def _check_ids(ids: tuple | None, n_experts: int, where: str, kinds: str = "texts") -> None:
    """One distinct non-blank text id per expert, or no ids at all (raises ValueError naming what is wrong).
    ``kinds``: what the caller takes, as its refusal says it: a data row's integers are read as their text before this check
    (``_named_experts``), a ``JudgeRecord`` built in Python takes texts only."""
    if ids is None:
        return
    if len(ids) != n_experts:
        raise ValueError(f"{where}: {len(ids)} expert ids for {n_experts} experts")
    # a blank id (" ", or a zero-width space) names no one, as an empty one does: one that shows nothing is refused
    if ids and (set(map(type, ids)) != {str} or any(map(is_blank, ids))):
        raise ValueError(f"{where}: expert ids must be non-blank {kinds} (one per expert), got {list(ids)!r}")
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
        raise fail("expert_ids", f"must be a list of texts or integers, one per expert, got {value_words(ids)}")
    ids = tuple(str(i) if type(i) is int else i for i in _at_most_experts(ids, "expert_ids", fail))
    try:
        _check_ids(ids, len(annotations), "row", kinds="texts or integers")
    except ValueError as error:
        raise fail("expert_ids", str(error).removeprefix("row: ")) from None
    if not annotations:
        return annotations, None
    named = tuple(map(Annotation, (a.score for a in annotations), (a.comment for a in annotations), ids))
    return named, tuple(i for a, i in zip(named, ids) if a.score is not None)


def _is_list(value: Any) -> bool:
    return not isinstance(value, (str, bytes, Mapping)) and isinstance(value, Iterable)


def _at_most_experts(items: Iterable, name: str, fail) -> tuple:
    """The items of a row's per-expert list, or a ``RecordError`` naming ``name`` when it lists more than
    ``MAX_EXPERTS_PER_ITEM``; only one item past the bound is taken, whatever the list's length."""
    taken = tuple(itertools.islice(items, MAX_EXPERTS_PER_ITEM + 1))
    if len(taken) > MAX_EXPERTS_PER_ITEM:
        size = f"{len(items)} items" if hasattr(items, "__len__") else f"more than {MAX_EXPERTS_PER_ITEM} items"
        raise fail(name, f"has {size}; an item has at most {MAX_EXPERTS_PER_ITEM} experts "
                         "(judge.records.MAX_EXPERTS_PER_ITEM)")
    return taken


#: The keys of one released annotation (the dataset card's struct).
_ANNOTATION_KEYS = frozenset({"comment", "score"})


def _released_annotations(items: Any, fail) -> tuple[Annotation, ...]:
    """The released ``annotations`` column: ``[{comment, score}, ...]``, ``-1`` meaning an abstention."""
    if not _is_list(items):
        raise fail("annotations", f"must be a list of {{comment, score}} objects, got {value_words(items)}")
    annotations = []
    for position, item in enumerate(_at_most_experts(items, "annotations", fail)):
        if not isinstance(item, Mapping):
            raise fail("annotations", f"item {position} must be an object with comment and score, got {value_words(item)}")
        unknown = sorted(set(item) - _ANNOTATION_KEYS, key=str)
        if unknown:  # refused, not dropped: an annotator's id or a second score would be lost without a word
            raise fail("annotations", f"item {position}: unknown key(s) {unknown}; an annotation has comment and score "
                                      "(name the experts with the row's expert_ids list)")
        if item.get("score") is None:
            raise fail("annotations", f"item {position} has no score")
        score = _number(item["score"])
        if score is None:
            raise fail("annotations", f"item {position}: score {_shown(item['score'])} is not a finite number")
        if _past_bound(score):
            raise fail("annotations", f"item {position}: score {_shown(item['score'])} {_PAST_BOUND}")
        comment = item.get("comment")
        if comment is not None and not isinstance(comment, str):
            raise fail("annotations", f"item {position}: comment must be text, got {value_words(comment)}")
        annotations.append(Annotation(None if score == ABSTENTION_SCORE else score, comment or ""))
    return tuple(annotations)


def _project_experts(row: Mapping[str, Any], fail) -> tuple[tuple[Annotation, ...], tuple[float, ...], tuple[str, ...] | None]:
    """The project's ``expert_scores`` (``null`` = abstention) and ``expert_feedback`` (one text per expert)."""
    experts = row.get("expert_scores")
    if experts is None:
        experts = ()
    elif type(experts) is not list and not _is_list(experts):
        raise fail("expert_scores", f"must be a list of numbers, got {value_words(experts)}")
    all_scores: list[float | None] = []
    abstained = False
    for position, value in enumerate(_at_most_experts(experts, "expert_scores", fail)):
        kind = type(value)
        if (kind is float or kind is int) and -SCORE_BOUND <= value <= SCORE_BOUND:
            # the common case, without _number's checks (a NaN fails the comparison; an int is compared as an int: one
            # past float's range raised OverflowError in math.isfinite, naming no row)
            all_scores.append(float(value))
        elif value is None:
            all_scores.append(None)
            abstained = True
        else:
            number = _number(value)
            if number is None:
                raise fail("expert_scores", f"item {position} ({_shown(value)}) is not a finite number")
            if _past_bound(number):
                raise fail("expert_scores", f"item {position} ({_shown(value)}) {_PAST_BOUND}")
            all_scores.append(number)

    feedback = row.get("expert_feedback")
    if feedback is not None:
        if not _is_list(feedback):  # an object too: iterated, it would give its keys as the texts
            raise fail("expert_feedback", "must be a list of texts, one per expert score")
        feedback = _at_most_experts(feedback, "expert_feedback", fail)
        for position, text in enumerate(feedback):
            if type(text) is not str:
                # the item named, and what to write instead of a null: an annotation's null comment reads as "",
                # a project row's one text per expert is a text
                raise fail("expert_feedback", f"must contain only texts: item {position} is {value_words(text)} "
                                              '(write "" for an expert who left no rationale)')
        if len(feedback) != len(all_scores):
            if row.get("expert_scores") is None:
                # the field that is not there is the one to name, as the column-wise reader does for a whole column
                texts = f"{len(feedback)} text{'' if len(feedback) == 1 else 's'}"
                absent = "is missing" if "expert_scores" not in row else "is null"
                raise fail("expert_scores", f"{absent}, while expert_feedback gives {texts} here, one per expert score")
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


#: A score written as text: ASCII digits, an optional sign and decimal part (point or comma). Python's float() also
#: reads "1_0" as 10 and other scripts' digits ("١" as 1): a score like that is not one, and is refused.
_NUMBER_TEXT = re.compile(r"\s*[+-]?\d+(?:[.,]\d+)?\s*", re.ASCII)


#: The size no score on a rubric's scale reaches, an expert's, an aggregate's or a judge's (``eval.judging.predictions``):
#: 1e308 passed as finite, and the metrics overflowed in numpy (warnings, then an error about metrics.json far from
#: the row). A regression head's raw value may leave the scale, so the bound is far from any scale, not the scale.
SCORE_BOUND = 1e6


_PAST_BOUND = f"is past {SCORE_BOUND:g} in size: no rubric's score (a scale is a few points)"


def _past_bound(number: float) -> bool:
    return abs(number) > SCORE_BOUND


def _mean(scores: tuple[float, ...]) -> float | None:
    """The aggregate the POLLUX data reports: the mean over the experts who did not abstain (None for none). Summed
    in order from 0, as the column-wise reader's bincount sums (the two readers give the same float)."""
    return sum(scores) / len(scores) if scores else None


def _no_aggregate(value: Any) -> bool:
    """A row's ``criteria_score`` gives no aggregate: absent, null, or NaN (how pandas and Arrow spell a missing
    value, a mean over no expert written without the conversion to null: no aggregate, not a bad row that stops the
    whole load)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _number(value: Any) -> float | None:
    """A score as a finite float, or None: not a number, or none a float holds (NaN, an infinity, an integer past
    float's range: float() raises OverflowError on one, which would name no row)."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy's too: float() reads them as 1/0
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):  # a Parquet binary column: float(b"1_0") reads 10
        return None
    if isinstance(value, str):
        if not _NUMBER_TEXT.fullmatch(value):
            return None
        value = float(value.replace(",", "."))
    try:
        value = float(value)  # numpy scalars from Parquet / datasets too
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def _shown(value: Any) -> str:
    """A bad value for an error message: its repr, a long one cut (an integer's repr is refused past 4,300 digits);
    true and false as JSON writes them (numpy's too, from Parquet), where Python's repr says "True"."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


#: The record's own texts read from a row, checked for lone surrogates (``check_unicode``).
_UNICODE_CHECKED = (*REQUIRED_TEXT_FIELDS, "reference_answer", *OPTIONAL_TEXT_FIELDS)


def _check_texts(values: Mapping[str, Any], annotations: tuple[Annotation, ...], comments_field: str, fail) -> None:
    """``check_unicode`` on every text of a row: one encode of them all (a Python string keeps lone surrogates
    apart, so joining makes none and hides none), field by field only when it fails."""
    joined = "".join([*(values[name] for name in _UNICODE_CHECKED), *map(_COMMENT, annotations),
                      *(a.expert_id for a in annotations if a.expert_id is not None)])
    if len(joined) > MAX_TEXT_CHARS:  # some text may be past the bound: each is measured
        _check_lengths(values, annotations, comments_field, fail)
    if joined.isascii():
        return
    try:
        joined.encode("utf-8")
        return
    except UnicodeEncodeError:
        pass
    for name in _UNICODE_CHECKED:
        check_unicode(values[name], name, fail)
    for annotation in annotations:
        check_unicode(annotation.comment, comments_field, fail)
        if annotation.expert_id is not None:
            check_unicode(annotation.expert_id, "expert_ids", fail)


def _check_lengths(values: Mapping[str, Any], annotations: tuple[Annotation, ...], comments_field: str, fail) -> None:
    """Raise ``fail(name, ...)`` for the first text of a row past ``MAX_TEXT_CHARS`` characters."""
    texts = [*((name, None, values[name]) for name in _UNICODE_CHECKED),
             *((comments_field, k, a.comment) for k, a in enumerate(annotations)),
             *(("expert_ids", k, a.expert_id) for k, a in enumerate(annotations) if a.expert_id is not None)]
    for name, item, text in texts:
        if len(text) > MAX_TEXT_CHARS:
            which = "" if item is None else f"item {item}: "
            raise fail(name, f"{which}{len(text):,} characters, past the {MAX_TEXT_CHARS:,} one text of a row may "
                             "hold (judge.records.MAX_TEXT_CHARS)")


def check_unicode(text: str, name: str, fail) -> None:
    """Raise ``fail(name, ...)`` for a text holding a lone surrogate (JSON can escape one, ``"\\ud800"``; no UTF-8
    holds it): it would fail far from its row, where a content id is hashed or a record is written. ``fail`` takes
    the field's name and the reason and returns the exception to raise, so each reader names the row its own way
    while every one words the reason alike."""
    if (at := lone_surrogate_at(text)) is not None:
        raise fail(name, f"is not valid Unicode text: a lone surrogate (U+{ord(text[at]):04X}) at character {at}")


def content_id(values: Mapping[str, Any]) -> str:
    """The id of a row with none: its content, hashed.

    Recipe: the row's ``ID_FIELDS`` (instruction, reference_answer, answer, criteria_name, rubrics, model_id,
    task_type, task_subtype, task_subsubtype; absent or null = "", an integer as its digits, as ``from_row`` reads
    them) as a JSON list, exactly as the row holds them (no stripping), serialised with
    ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, encoded as UTF-8, hashed with SHA-256; the id is
    the first 16 hex characters. It depends on nothing but those texts, so the same row gets the same id on every
    run and machine, and a raw row the same id as the record loaded from it. These fields identify an item (the
    release has no id column: an item is its content — instruction, answer, criterion, model); the experts' scores
    are not part of it.
    """
    key = json.dumps([_id_text(values.get(name)) for name in ID_FIELDS], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _id_text(value: Any) -> str:
    """A field as ``content_id`` hashes it: the text ``from_row`` keeps for it (null = "", an integer its digits:
    a numbered subtype ``3`` and ``0`` are "3" and "0", never 3 or "")."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


@dataclass
class LoadReport:
    """What a load read, kept and counted.

    Attributes:
        source: the path or dataset name.
        n_rows: rows read.
        n_records: records kept (``n_rows - n_duplicates``).
        n_duplicates: exact duplicate rows (same id, same content) left out; the first copy is kept.
        duplicate_rows: the first 20 duplicates, as "line 8 = line 3" (a JSONL file) or "row index 7 = row index 2"
            (``row_place``; each side prefixed with its shard when the two rows come from different shards).
        n_derived_ids: rows whose id was derived from their content (``content_id``), duplicates included.
        n_abstentions: expert verdicts that are abstentions (kept in ``annotations``, out of ``expert_scores``).
        n_all_abstained: records with experts, every one of whom abstained (kept, unlabelled for metrics).
        n_unlabelled: records with no usable expert score (no experts, or all abstained).
        n_benchmark_rows: records read from rows in the released benchmark's schema (an ``annotations`` column, or
            the benchmark-only columns ``is_provocative`` and ``criteria_description``).
        n_derived_criteria_scores: records whose row gave no ``criteria_score`` (absent, null or NaN), filled in
            with the mean of the experts who did not abstain (``JudgeRecord.from_row``); a record with no such
            expert keeps None and is not counted.
        derived_criteria_records: the positions of those records among the records returned (0-based, in order):
            the record does not say that its ``criteria_score`` was derived, and POLLUX's evaluator reports per
            test how many of its references came from the experts (``judge-eval score`` hands it these).
        n_off_scale: records kept with an expert score or an aggregate outside their rubric's scale (``off_scale``;
            a 7 on a 0..2 criterion), warned about: the experts score on the rubric's levels (arXiv 2505.24616v3,
            Section 2.2).
        off_scale_rows: the first 20 of them, as "line 2" or "row index 1" (``row_place``; prefixed with the shard
            when the source has several).
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
    n_derived_criteria_scores: int = 0
    derived_criteria_records: tuple[int, ...] = field(default=(), repr=False)
    n_off_scale: int = 0
    off_scale_rows: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: rows, records and every count that is not zero."""
        parts = [f"{self.source}: {self.n_rows} rows -> {self.n_records} records"]
        for name in ("n_duplicates", "n_derived_ids", "n_derived_criteria_scores", "n_abstentions", "n_all_abstained",
                     "n_unlabelled", "n_benchmark_rows", "n_off_scale"):
            if getattr(self, name):
                parts.append(f"{name[2:]}={getattr(self, name)}")
        return "; ".join(parts)


def gives_no_id(value: Any) -> bool:
    """Whether a row's ``id`` value gives no id (absent, null, or blank text), so that ``from_row`` derives one and
    the load report counts it derived: one rule for both."""
    return value is None or (isinstance(value, str) and not value.strip())


def records_and_report(items: Iterable[tuple[str, int, Mapping[str, Any]]], source: str,
                       make_id: bool) -> tuple[list[JudgeRecord], LoadReport]:
    """Rows (each with its source and index) -> records, dropping exact duplicates and counting what it saw: what
    every row-wise loader (``judge.record_sources``) builds its records through.

    A source whose first row has no ``id`` key (a table without an ``id`` column) gets content-derived ids for all
    its rows; otherwise a missing id is an error unless ``make_id``.
    """
    state = {"rows": 0, "derive": make_id}
    return _collected(_checked_rows(items, state), source)


def _checked_rows(items: Iterable[tuple[str, int, Mapping[str, Any]]], state: dict[str, Any]
                  ) -> Iterator[tuple[str, int, JudgeRecord, bool, bool, bool]]:
    """Row by row: (source, index, record, id derived, benchmark row, criteria_score derived) for each row, or the
    row's RecordError."""
    for where, index, row in items:
        if state["rows"] == 0 and isinstance(row, Mapping) and "id" not in row:
            state["derive"] = True
        state["rows"] += 1
        record = JudgeRecord.from_row(row, source=where, index=index, make_id=state["derive"])
        derived = gives_no_id(row.get("id"))
        yield where, index, record, derived, record.benchmark_row, record.criteria_score_derived


def _collected(checked: Iterable[tuple[str, int, JudgeRecord, bool, bool, bool]], source: str
               ) -> tuple[list[JudgeRecord], LoadReport]:
    records: list[JudgeRecord] = []
    report = LoadReport(source=source)
    first: dict[str, JudgeRecord] = {}
    aggregates_derived: list[int] = []
    for where, index, record, derived, benchmark, aggregate_derived in checked:
        report.n_rows += 1
        report.n_derived_ids += derived
        earlier = first.get(record.id)
        if earlier is not None:
            note_duplicate(record, earlier, report)
            continue
        first[record.id] = record
        if aggregate_derived:
            aggregates_derived.append(len(records))
        records.append(record)
        abstained = record.n_abstained
        report.n_abstentions += abstained
        if not record.expert_scores:
            report.n_unlabelled += 1
            if abstained:
                report.n_all_abstained += 1
        report.n_benchmark_rows += benchmark
        if off_scale(record):
            note_off_scale(report, where, index)
    report.n_records = len(records)
    report.derived_criteria_records = tuple(aggregates_derived)
    report.n_derived_criteria_scores = len(aggregates_derived)
    log_report(report)
    return records, report


def note_duplicate(record: JudgeRecord, earlier: JudgeRecord, report: LoadReport) -> None:
    """A record whose id an earlier one has: counted in ``report`` when it is the same row again.

    Raises:
        RecordError: the same id with different content, naming both rows.
    """
    (where, index), (e_source, e_row) = record.origin, earlier.origin
    other = row_place(e_row) if e_source == where else f"{e_source}: {row_place(e_row)}"
    if same_content(record, earlier):
        report.n_duplicates += 1
        if len(report.duplicate_rows) < 20:
            here = row_place(index) if e_source == where else f"{where}: {row_place(index)}"
            report.duplicate_rows.append(f"{here} = {other}")
        return
    raise RecordError(where, index, "id", f"{record.id!r} repeats the id of {other} with different content")


def same_content(record: JudgeRecord, earlier: JudgeRecord) -> bool:
    """Whether ``record`` is ``earlier``'s row again: the same fields and the same other columns (``extra``, NaN
    equal to NaN): one rule for the loaders' duplicates and the criteria expansion's rows passed through."""
    return record == earlier and _same_values(record.extra, earlier.extra)


def _same_values(a: Any, b: Any) -> bool:
    """``a == b`` with NaN equal to NaN, inside objects and lists too: an unknown column holding NaN (a missing float
    as Parquet and pandas write it) in both copies of a row is the same row again, not different content.

    Walked with an explicit stack, not by recursion: json parses a value nested deeper than a recursive walk (or
    ``==`` on the containers) can compare, and two copies of such a row are a duplicate, not a RecursionError."""
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
            continue
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            if a.keys() != b.keys():
                return False
            pending.extend((a[k], b[k]) for k in a)
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if type(a) is not type(b) or len(a) != len(b):
                return False
            pending.extend(zip(a, b))
        elif isinstance(a, (Mapping, list, tuple)) or isinstance(b, (Mapping, list, tuple)):
            return False  # a container beside a scalar or the other kind of container: ``==`` would say so too
        elif not a == b:
            return False
    return True


def note_off_scale(report: LoadReport, where: str, index: int) -> None:
    """Count a record off its rubric's scale (``off_scale``), read from row ``index`` of ``where``."""
    report.n_off_scale += 1
    if len(report.off_scale_rows) < 20:
        place = row_place(index)
        report.off_scale_rows.append(place if where == report.source else f"{where}: {place}")


def log_report(report: LoadReport) -> None:
    """Warn about what a load left out, kept without a score, or kept with a score off its rubric's scale."""
    if report.n_duplicates:
        shown = "; ".join(report.duplicate_rows[:5])
        logger.warning("%s: %d exact duplicate rows left out (%s)", report.source, report.n_duplicates, shown)
    if report.n_all_abstained:
        logger.warning("%s: %d items whose experts all abstained are kept without a score", report.source,
                       report.n_all_abstained)
    if report.n_off_scale:
        logger.warning("%s: %d items have an expert score or criteria_score outside their rubric's scale, kept as "
                       "given (%s)", report.source, report.n_off_scale, "; ".join(report.off_scale_rows[:5]))


def records_from_rows(rows: Iterable[Mapping[str, Any]], source: str = "<rows>", make_id: bool = False,
                      row_index: Iterable[int] | None = None) -> list[JudgeRecord]:
    """Validate rows into records; exact duplicate rows are left out (counted, see ``load_records_report``).

    Rows without an ``id`` get one from ``content_id`` when the first row has no ``id`` key, or with ``make_id``.
    ``row_index``: each row's index in ``source`` (a JSONL file's line number minus one, where blank lines were
    skipped: a ``LineIndex``, so that an error names the line), as an error names it (``row_place``); default:
    positions in ``rows``, named "row index N".

    Raises:
        RecordError: for the first bad row (naming the row and field), or an id repeated with different content
            (naming both rows).
    """
    indices = row_index if row_index is not None else map(RowIndex, itertools.count())
    return records_and_report(((source, index, row) for index, row in zip(indices, rows)), source, make_id)[0]



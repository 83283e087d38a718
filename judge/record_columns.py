"""Judged items as columns: ``RecordColumns``, what the column-wise reader (``judge.column_reader``) returns and
``judge.load_record_columns`` gives for any source.

It holds what the scoring path reads as arrays (ids, texts, the experts' scores with offsets, their ids, the
aggregate) instead of one Python object per record and per expert: 160,000 records with ~470,000 expert verdicts
are a handful of arrays. ``record(i)``, ``records_at`` and ``records()`` build ``JudgeRecord``s through their
constructor, whose ``__post_init__`` checks that the experts' fields agree (the column checks vouched for the rest:
types, finite numbers, non-empty texts, as ``JudgeRecord.from_row`` checks a row), when a stage wants objects
(``judge.load_records``, the few records a report shows or a taxonomy lookup needs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from judge.records import MAX_TEXT_CHARS, OPTIONAL_TEXT_FIELDS, REQUIRED_TEXT_FIELDS, Annotation, JudgeRecord

__all__ = ["RecordColumns", "TEXT_FIELDS", "as_columns", "count_per_row", "past_text_bound", "python_values"]


#: Every text field of a record, in the constructor's order of ``JudgeRecord``'s attributes.
TEXT_FIELDS = (*REQUIRED_TEXT_FIELDS, "reference_answer", *OPTIONAL_TEXT_FIELDS)


class RecordColumns:
    """The records of a source as columns (row i is the i-th record kept, in source order).

    Attributes:
        source: the path or dataset name.
        ids: the records' ids (an object array of texts).
        criteria_score: the aggregate over experts, NaN where a record has none.
        scores: every expert of every record in order, flat, NaN for an abstention; record i's experts are
            ``scores[offsets[i]:offsets[i + 1]]`` (``JudgeRecord.annotations``).
        offsets: ``len + 1`` positions into ``scores``.
        expert_ids: the experts' ids parallel to ``scores`` (None where a record names no experts), or None when no
            record names any.
        aggregate_derived: per record, its ``criteria_score`` was derived from the experts
            (``JudgeRecord.criteria_score_derived``).
        benchmark: per record, its row was in the released benchmark's schema (``JudgeRecord.benchmark_row``).
    """

    def __init__(self, source: str, *, ids: np.ndarray, texts: Mapping[str, Any], criteria_score: np.ndarray,
                 scores: np.ndarray, offsets: np.ndarray, comments: Any, feedback_given: np.ndarray,
                 expert_ids: np.ndarray | None, is_provocative: Any,
                 extra: Sequence[tuple[int, dict[str, Any]]] | Sequence[dict[str, Any]],
                 origin_names: Sequence[str], origin_part: np.ndarray, origin_row: np.ndarray,
                 records: Sequence[JudgeRecord] | None = None, origin_kinds: Sequence[type] | None = None,
                 aggregate_derived: np.ndarray | None = None, benchmark: np.ndarray | None = None):
        self.source = source
        self.ids = ids
        self.criteria_score = criteria_score
        self.scores = scores
        self.offsets = offsets
        self.expert_ids = expert_ids
        none = np.zeros(len(ids), dtype=bool)
        self.aggregate_derived = none if aggregate_derived is None else np.asarray(aggregate_derived, dtype=bool)
        self.benchmark = none if benchmark is None else np.asarray(benchmark, dtype=bool)
        # Arrow string columns (or Python lists), made Python values only when a caller asks for them.
        self._texts = dict(texts)
        self._comments = comments  # flat texts parallel to ``scores`` ("" for none), or None when no expert has any
        self._feedback_given = feedback_given  # per record: its rationales are a value (not None)
        self._provocative = is_provocative  # per record True / False / None, or None when no source says
        # (first record, {column: values}) per part of the source, in order; or one dict per record
        self._extra = list(extra)
        self._origin_names, self._origin_part, self._origin_row = list(origin_names), origin_part, origin_row
        # per part, how its rows are numbered (judge.records.LineIndex for a JSONL file, RowIndex for a table): the
        # row kept in a record's origin, which an error about the record names as a line or a row index
        self._origin_kinds = list(origin_kinds) if origin_kinds is not None else [int] * len(self._origin_names)
        self._records = records  # the records themselves, when built from them
        self._text_cache: dict[str, np.ndarray] = {}
        self._row_of: dict[str, int] | None = None

    # ------------------------------------------------------------------------------------------- columns

    def __len__(self) -> int:
        return len(self.ids)

    def text(self, name: str) -> np.ndarray:
        """A text field of every record as an object array, one Python string per distinct text (the 16 criteria
        of an answer share its instruction and answer)."""
        found = self._text_cache.get(name)
        if found is None:
            found = self._text_cache[name] = _shared_texts(self._texts[name])
        return found

    def text_lengths(self, name: str) -> np.ndarray:
        """The length in characters of a text field of every record (no Python string made)."""
        column = self._texts[name]
        if isinstance(column, list):
            return np.fromiter(map(len, column), dtype=np.float64, count=len(column))
        import pyarrow.compute as pc

        return pc.utf8_length(column).to_numpy(zero_copy_only=False).astype(np.float64)

    def distinct(self, names: Sequence[str], also: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per record, the number of its distinct combination of the text fields ``names`` (numbered in order of
        first appearance), and the first record of each combination: a lookup made once per combination (a
        taxonomy resolving task types and criteria) then reaches every record. ``also``: one more value per record
        (non-negative integers) that tells combinations apart, for what the lookup reads beyond the text fields."""
        import pandas as pd

        code = np.zeros(len(self), dtype=np.int64)
        bound = 1  # code < bound
        for name in names:
            codes, uniques = pd.factorize(self.text(name))
            code, bound = _mixed_radix(code, bound, codes, len(uniques))
        if also is not None:
            codes, uniques = pd.factorize(np.asarray(also, dtype=np.int64))
            code, bound = _mixed_radix(code, bound, codes, len(uniques))
        key, _ = pd.factorize(code)
        first = np.full(int(key.max()) + 1 if len(key) else 0, len(key), dtype=np.int64)
        np.minimum.at(first, key, np.arange(len(key)))
        return key.astype(np.int64), first

    @property
    def n_experts(self) -> np.ndarray:
        """Experts per record, abstentions included."""
        return np.diff(self.offsets)

    @property
    def n_abstained(self) -> np.ndarray:
        """Abstentions per record (``JudgeRecord.n_abstained``)."""
        return count_per_row(np.isnan(self.scores), self.n_experts)

    def expert_matrix(self) -> np.ndarray:
        """The non-abstaining experts' scores as an ``(n, k)`` NaN-padded matrix, each row's scores first (as
        ``eval.scoring.metrics.pad_scores`` pads ``JudgeRecord.expert_scores``)."""
        return self._packed(self.scores, np.nan, np.float64)

    def expert_id_matrix(self) -> np.ndarray | None:
        """The ids of ``expert_matrix``'s experts, None-padded; None when no record names its experts."""
        if self.expert_ids is None or not (self.expert_ids != None).any():  # noqa: E711 (elementwise)
            return None
        return self._packed(self.expert_ids, None, object)

    def _packed(self, values: np.ndarray, fill, dtype) -> np.ndarray:
        given = ~np.isnan(self.scores)
        n = len(self)
        counts = count_per_row(given, self.n_experts)
        width = int(counts.max()) if n else 0
        out = np.full((n, width), fill, dtype=dtype)
        row = np.repeat(np.arange(n), self.n_experts)[given]
        # each given score's place within its row: its rank among the row's given scores (one start per row, also
        # for no rows at all)
        starts = np.cumsum(counts) - counts
        column = np.arange(len(row)) - np.repeat(starts, counts)
        out[row, column] = values[given]
        return out

    # ------------------------------------------------------------------------------------------- records

    def index_of(self, record_id: str) -> int | None:
        """The row of the record with this id, or None."""
        if self._row_of is None:
            self._row_of = {rid: i for i, rid in enumerate(self.ids.tolist())}
        return self._row_of.get(record_id)

    def record(self, i: int) -> JudgeRecord:
        """Record ``i``, built through ``JudgeRecord``'s constructor (its ``__post_init__`` checks it)."""
        if self._records is not None:
            return self._records[i]
        return self._build(np.array([i]))[0]

    def records_at(self, index: Sequence[int] | np.ndarray) -> list[JudgeRecord]:
        """The records at ``index``, each built through ``JudgeRecord``'s constructor."""
        index = np.asarray(index, dtype=np.int64)
        if self._records is not None:
            return [self._records[i] for i in index.tolist()]
        return self._build(index)

    def records(self) -> list[JudgeRecord]:
        """Every record, in order, each built through ``JudgeRecord``'s constructor."""
        if self._records is not None:
            return list(self._records)
        return self._build(np.arange(len(self)))

    def _build(self, index: np.ndarray) -> list[JudgeRecord]:
        """Records ``index``, each through ``JudgeRecord``'s constructor."""
        rows = self._rows(index)
        scores, offsets = rows["scores"], rows["offsets"]
        comments = rows["comments"] if rows["comments"] is not None else [""] * len(scores)
        flat = _annotations(scores, comments, rows["expert_ids"])
        out, record = [], JudgeRecord
        columns = zip(range(len(index)), rows["ids"], rows["criteria_score"], rows["feedback_given"],
                      rows["is_provocative"], rows["extra"], rows["origin"], rows["abstained"],
                      rows["aggregate_derived"], rows["benchmark"],
                      *(rows[name] for name in TEXT_FIELDS))  # fmt: skip
        for (i, rid, number, has_feedback, flag, extra, origin, abstained, derived, benchmark, instruction, answer,
             criteria_name, rubrics, reference, model_id, task_type, subtype, subsubtype, difficulty, domain,
             description, example) in columns:
            a, b = offsets[i], offsets[i + 1]
            row_scores = scores[a:b]
            if abstained:
                given = [k for k, s in enumerate(row_scores) if s == s]
                expert_scores = tuple(row_scores[k] for k in given)
                feedback = tuple(comments[a + k] for k in given) if given and has_feedback else None
            else:
                expert_scores = tuple(row_scores)
                feedback = tuple(comments[a:b]) if expert_scores and has_feedback else None
            # Positional, in the order of JudgeRecord's fields (cheaper than keywords, once per record; tests
            # compare every field with the row path's records); expert_ids None, as the annotations give them.
            out.append(record(
                rid, instruction, answer, criteria_name, rubrics, reference, None if number != number else number,
                expert_scores, feedback, model_id, task_type, subtype, subsubtype, difficulty, domain, extra,
                tuple(flat[a:b]), description, example, flag, origin, None, derived, benchmark,
            ))  # fmt: skip
        return out

    def _rows(self, index: np.ndarray) -> dict[str, Any]:
        """The records at ``index`` as Python lists per field, their experts flat with ``offsets`` from 0."""
        index = np.asarray(index, dtype=np.int64)
        # every row in order: the whole columns serve as they are (any other index of that length, [1, 0] say, is a
        # permutation, and the texts, scores and flags must follow it as the ids do)
        every = len(index) == len(self) and bool((index == np.arange(len(self))).all())
        counts = self.n_experts[index]
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
        flat = None if every else np.repeat(self.offsets[index] - offsets[:-1], counts) + np.arange(offsets[-1])
        out: dict[str, Any] = {name: self._text_values(name, index, every) for name in TEXT_FIELDS}
        out["ids"] = self.ids[index].tolist()
        out["criteria_score"] = self.criteria_score[index].tolist()
        out["feedback_given"] = self._feedback_given[index].tolist()
        out["abstained"] = self.n_abstained[index].tolist()
        out["aggregate_derived"] = self.aggregate_derived[index].tolist()
        out["benchmark"] = self.benchmark[index].tolist()
        out["offsets"] = offsets.tolist()
        out["scores"] = (self.scores if every else self.scores[flat]).tolist()
        out["comments"] = None if self._comments is None else _taken(self._comments, flat)
        out["expert_ids"] = None if self.expert_ids is None else (self.expert_ids if every else self.expert_ids[flat]).tolist()
        out["is_provocative"] = ([None] * len(index) if self._provocative is None
                                 else _taken(self._provocative, None if every else index))
        names, kinds, parts = self._origin_names, self._origin_kinds, self._origin_part[index].tolist()
        out["origin"] = [(names[p], kinds[p](r)) for p, r in zip(parts, self._origin_row[index].tolist())]
        out["extra"] = self._extras(index)
        return out

    def _text_values(self, name: str, index: np.ndarray, every: bool) -> list[str]:
        if every or name in self._text_cache or isinstance(self._texts[name], list):
            return self.text(name)[index].tolist() if not every else self.text(name).tolist()
        return [v or "" for v in _taken(self._texts[name], index)]  # a few rows: no Python string for the others

    def _extras(self, index: np.ndarray) -> list[dict[str, Any]]:
        """The unknown columns of the records at ``index``, one dict each (the row path's ``JudgeRecord.extra``);
        the parts cover the records in order from the first."""
        if self._extra and isinstance(self._extra[0], dict):  # one dict per record
            return [dict(self._extra[i]) for i in index.tolist()]
        out: list[dict[str, Any]] = [{} for _ in range(len(index))]
        bounds = [start for start, _ in self._extra[1:]] + [len(self)]
        for (start, columns), stop in zip(self._extra, bounds):
            inside = np.flatnonzero((index >= start) & (index < stop))
            if not columns or not len(inside):
                continue
            names = list(columns)
            values = [_taken(v, index[inside] - start) for v in columns.values()]
            for k, row in zip(inside.tolist(), zip(*values)):
                out[k] = dict(zip(names, row))
        return out

    def extras_at(self, index: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
        """The ``extra`` of the records at ``index`` (their columns outside the schema), without building the
        records."""
        index = np.asarray(index, dtype=np.int64)
        if self._records is not None:
            return [dict(self._records[i].extra or {}) for i in index.tolist()]
        return self._extras(index)

    def take(self, index: np.ndarray) -> RecordColumns:
        """The records at ``index`` (increasing), as columns."""
        rows = self._rows(index)
        return RecordColumns(
            self.source, ids=self.ids[index], texts={name: rows[name] for name in TEXT_FIELDS},
            criteria_score=self.criteria_score[index], scores=np.array(rows["scores"], dtype=np.float64),
            offsets=np.array(rows["offsets"], dtype=np.int64), comments=rows["comments"],
            feedback_given=self._feedback_given[index],
            expert_ids=None if rows["expert_ids"] is None else np.array(rows["expert_ids"], dtype=object),
            is_provocative=rows["is_provocative"] if self._provocative is not None else None,
            extra=rows["extra"],
            origin_names=self._origin_names, origin_part=self._origin_part[index], origin_row=self._origin_row[index],
            records=None if self._records is None else [self._records[j] for j in np.asarray(index).tolist()],
            origin_kinds=self._origin_kinds, aggregate_derived=self.aggregate_derived[index],
            benchmark=self.benchmark[index],
        )  # fmt: skip

    @classmethod
    def from_records(cls, records: Sequence[JudgeRecord], source: str = "<records>") -> RecordColumns:
        """Columns of records already built (a source read row by row, records made in code)."""
        records = list(records)
        counts = [len(r.annotations) for r in records]
        flat = [a for r in records for a in r.annotations]
        named = any(a.expert_id is not None for a in flat)
        names = sorted({r.origin[0] for r in records if r.origin is not None}) or [source]
        part_of = {name: k for k, name in enumerate(names)}
        kinds: dict[str, type] = {}  # how each source numbers its rows (the type of its records' origin rows)
        for r in records:
            if r.origin is not None:
                kinds.setdefault(r.origin[0], type(r.origin[1]))
        return cls(
            source, ids=np.array([r.id for r in records], dtype=object),
            texts={name: [getattr(r, name) for r in records] for name in TEXT_FIELDS},
            criteria_score=np.array([np.nan if r.criteria_score is None else r.criteria_score for r in records],
                                    dtype=np.float64),
            scores=np.array([np.nan if a.score is None else a.score for a in flat], dtype=np.float64),
            offsets=np.r_[0, np.cumsum(counts, dtype=np.int64)].astype(np.int64),
            comments=[a.comment for a in flat], feedback_given=np.array([r.expert_feedback is not None for r in records], dtype=bool),
            expert_ids=np.array([a.expert_id for a in flat], dtype=object) if named else None,
            is_provocative=[r.is_provocative for r in records], extra=[],
            origin_names=names,
            origin_part=np.array([part_of[r.origin[0]] if r.origin else 0 for r in records], dtype=np.int32),
            origin_row=np.array([r.origin[1] if r.origin else i for i, r in enumerate(records)], dtype=np.int64),
            records=records, origin_kinds=[kinds.get(name, int) for name in names],
            aggregate_derived=np.array([r.criteria_score_derived for r in records], dtype=bool),
            benchmark=np.array([r.benchmark_row for r in records], dtype=bool),
        )  # fmt: skip


def as_columns(records) -> RecordColumns:
    """``records`` as ``RecordColumns``: columns as they are, a sequence of ``JudgeRecord`` made into columns."""
    return records if isinstance(records, RecordColumns) else RecordColumns.from_records(records)


def _annotations(scores: list[float], comments: list[str], expert_ids: list[str | None] | None) -> list[Annotation]:
    """One ``Annotation`` per expert, flat: one instance per distinct (score, comment, id), shared (they are
    immutable values; 160k records of comment-less experts need a few hundred), found by numbering the three
    columns rather than by a Python tuple per expert."""
    import pandas as pd

    if not scores:
        return []
    key = np.zeros(len(scores), dtype=np.int64)
    bound = 1  # key < bound
    columns = (np.array(scores, dtype=np.float64), np.array(comments, dtype=object),
               np.array(expert_ids if expert_ids is not None else [None] * len(scores), dtype=object))
    for column in columns:
        codes, uniques = pd.factorize(column, use_na_sentinel=False)  # NaN (an abstention) and None are values
        key, bound = _mixed_radix(key, bound, codes, len(uniques))
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    made = np.empty(len(first), dtype=object)
    made[:] = [Annotation(None if scores[i] != scores[i] else scores[i], comments[i],
                          expert_ids[i] if expert_ids is not None else None) for i in first.tolist()]
    return made[inverse.ravel()].tolist()


#: The largest number of distinct codes ``_mixed_radix`` lets an int64 code reach.
_CODE_LIMIT = 2**62


def _mixed_radix(code: np.ndarray, bound: int, codes: np.ndarray, n_values: int) -> tuple[np.ndarray, int]:
    """``code * n_values + codes`` (``code < bound``, ``codes < n_values``): one number per combination, and its
    bound. Where the product could pass int64 (many fields with many distinct values each) and wrap silently,
    ``code`` is first numbered again (``pd.factorize``: below its length); only then, so the common case pays nothing.
    """
    import pandas as pd

    width = max(n_values, 1)
    if bound * width > _CODE_LIMIT:
        code, seen = pd.factorize(code)
        bound = max(len(seen), 1)
    return code * width + codes, bound * width


def count_per_row(flags: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """How many of each row's flat entries are set (row i owns the next ``lengths[i]`` entries)."""
    rows = np.repeat(np.arange(len(lengths)), lengths)
    return np.bincount(rows[flags], minlength=len(lengths)).astype(np.int64)


def past_text_bound(column) -> bool:
    """Some text of an Arrow string column (or array) holds more than ``judge.records.MAX_TEXT_CHARS`` characters.
    Its bytes bound its characters: they are counted only where the longest value has more bytes than the bound."""
    import pyarrow.compute as pc

    if not len(column) or (pc.max(pc.binary_length(column)).as_py() or 0) <= MAX_TEXT_CHARS:
        return False
    return (pc.max(pc.utf8_length(column)).as_py() or 0) > MAX_TEXT_CHARS


def python_values(column) -> list:
    """Python values of an Arrow column (or a list, as it is)."""
    return column if isinstance(column, list) else column.to_pylist()


def _taken(column, index: np.ndarray | None) -> list:
    """Python values of an Arrow column or a list at ``index`` (None: all of them)."""
    if index is None:
        return python_values(column)
    if isinstance(column, list):
        return [column[i] for i in index.tolist()]
    import pyarrow as pa

    return column.take(pa.array(index, type=pa.int64())).to_pylist()


def _shared_texts(column) -> np.ndarray:
    """A text column as an object array holding one Python string per distinct text."""
    if isinstance(column, (list, np.ndarray)):
        return np.array(column, dtype=object) if not isinstance(column, np.ndarray) else column
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = array.dictionary_encode()
    unique = np.array(encoded.dictionary.to_pylist() + [""], dtype=object)  # a null (index -1) reads as ""
    return unique[encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)]

"""Judged items as columns: the column-wise reader of JSONL and Parquet sources, and ``RecordColumns``, what it
returns.

A source is read into Arrow tables (one per file or shard) and checked column by column against the same rules
``JudgeRecord.from_row`` applies to a row (types, nulls, blank texts, finite scores, list lengths, distinct expert
ids). The result holds what the scoring path reads as arrays (ids, texts, the experts' scores with offsets, their
ids, the aggregate) instead of one Python object per record and per expert; ``RecordColumns.record(i)`` and
``records()`` build ``JudgeRecord``s through their constructor, whose ``__post_init__`` is the one check of a
record's invariants, when a stage wants objects (``judge.load_records``).

When a check flags a table, or a column is of a type the checks cannot vouch for (a JSONL file Arrow cannot parse or
would number differently, an unusual column type, a table mixing both expert schemas), the source is read row by row
by ``judge.records`` instead, which raises the row's own ``RecordError`` naming the source, row and field: the rules
live once, as the row path's messages, and the column checks only decide whether a table can skip them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from judge.records import (_BENCHMARK_MARKERS, _KNOWN, _TEXT_OPTIONAL, _TEXT_REQUIRED, ABSTENTION_SCORE, Annotation,
                           JudgeRecord, LoadReport, _duplicate_of, content_id, log_report)  # fmt: skip

__all__ = ["RecordColumns", "columns_from_tables"]

logger = logging.getLogger(__name__)

#: Every text field of a record, in the constructor's order of ``JudgeRecord``'s attributes.
TEXT_FIELDS = (*_TEXT_REQUIRED, "reference_answer", *_TEXT_OPTIONAL)
# Python's str.strip() removes these (str.isspace): a text of nothing else is blank, as the row path says.
_BLANK = r"^[\t\n\x{0b}\x{0c}\r\x{1c}-\x{1f}\x{85}\p{Z}]*$"


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
    """

    def __init__(self, source: str, *, ids: np.ndarray, texts: Mapping[str, Any], criteria_score: np.ndarray,
                 scores: np.ndarray, offsets: np.ndarray, comments: Any, feedback_given: np.ndarray,
                 expert_ids: np.ndarray | None, is_provocative: Any,
                 extra: Sequence[tuple[int, dict[str, Any]]] | Sequence[dict[str, Any]],
                 origin_names: Sequence[str], origin_part: np.ndarray, origin_row: np.ndarray,
                 records: Sequence[JudgeRecord] | None = None):
        self.source = source
        self.ids = ids
        self.criteria_score = criteria_score
        self.scores = scores
        self.offsets = offsets
        self.expert_ids = expert_ids
        # Arrow string columns (or Python lists), made Python values only when a caller asks for them.
        self._texts = dict(texts)
        self._comments = comments  # flat texts parallel to ``scores`` ("" for none), or None when no expert has any
        self._feedback_given = feedback_given  # per record: its rationales are a value (not None)
        self._provocative = is_provocative  # per record True / False / None, or None when no source says
        # (first record, {column: values}) per part of the source, in order; or one dict per record
        self._extra = list(extra)
        self._origin_names, self._origin_part, self._origin_row = list(origin_names), origin_part, origin_row
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

    def distinct(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per record, the number of its distinct combination of the text fields ``names`` (numbered in order of
        first appearance), and the first record of each combination: a lookup made once per combination (a
        taxonomy resolving task types and criteria) then reaches every record."""
        import pandas as pd

        code = np.zeros(len(self), dtype=np.int64)
        for name in names:
            codes, uniques = pd.factorize(self.text(name))
            code = code * max(len(uniques), 1) + codes
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
        return _per_row(np.isnan(self.scores), self.n_experts)

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
        counts = _per_row(given, self.n_experts)
        width = int(counts.max()) if n else 0
        out = np.full((n, width), fill, dtype=dtype)
        row = np.repeat(np.arange(n), self.n_experts)[given]
        # each given score's place within its row: its rank among the row's given scores
        starts = np.r_[0, np.cumsum(counts)[:-1]]
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
        return self._build(np.array([i]), {})[0]

    def records_at(self, index: Sequence[int] | np.ndarray) -> list[JudgeRecord]:
        """The records at ``index``, each built through ``JudgeRecord``'s constructor."""
        index = np.asarray(index, dtype=np.int64)
        if self._records is not None:
            return [self._records[i] for i in index.tolist()]
        return self._build(index, {})

    def records(self) -> list[JudgeRecord]:
        """Every record, in order, each built through ``JudgeRecord``'s constructor."""
        if self._records is not None:
            return list(self._records)
        return self._build(np.arange(len(self)), {})

    def _build(self, index: np.ndarray, shared: dict) -> list[JudgeRecord]:
        """Records ``index``, each through ``JudgeRecord``'s constructor."""
        rows = self._rows(index)

        def annotation(score: float, comment: str, expert: str | None) -> Annotation:
            # Annotations are immutable values: one instance per (score, id) covers every comment-less expert.
            if comment:
                return Annotation(None if score != score else score, comment, expert)
            found = shared.get((score, expert))
            if found is None:
                found = shared[score, expert] = Annotation(None if score != score else score, "", expert)
            return found

        out, record = [], JudgeRecord
        scores, comments, expert_ids, offsets = rows["scores"], rows["comments"], rows["expert_ids"], rows["offsets"]
        columns = zip(range(len(index)), rows["ids"], rows["criteria_score"], rows["feedback_given"],
                      rows["is_provocative"], rows["extra"], rows["origin"], rows["abstained"],
                      *(rows[name] for name in TEXT_FIELDS))  # fmt: skip
        for i, rid, number, has_feedback, flag, extra, origin, abstained, *values in columns:
            a, b = offsets[i], offsets[i + 1]
            row_scores = scores[a:b]
            row_comments = comments[a:b] if comments is not None else ("",) * (b - a)
            row_ids = expert_ids[a:b] if expert_ids is not None else (None,) * (b - a)
            annotations = tuple(map(annotation, row_scores, row_comments, row_ids))
            if abstained:
                given = [k for k, s in enumerate(row_scores) if s == s]
                expert_scores = tuple(row_scores[k] for k in given)
                feedback = tuple(row_comments[k] for k in given) if given and has_feedback else None
            else:
                expert_scores = tuple(row_scores)
                feedback = tuple(row_comments) if expert_scores and has_feedback else None
            # Positional, in the order of JudgeRecord's fields (a third cheaper than keywords for 160k records;
            # tests compare every field with the row path's records).
            out.append(record(
                rid, *values[:5], None if number != number else number, expert_scores, feedback, *values[5:11],
                extra, annotations, values[11], values[12], flag, origin,
            ))  # fmt: skip
        return out

    def _rows(self, index: np.ndarray) -> dict[str, Any]:
        """The records at ``index`` as Python lists per field, their experts flat with ``offsets`` from 0."""
        index = np.asarray(index, dtype=np.int64)
        every = len(index) == len(self)
        counts = self.n_experts[index]
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
        flat = None if every else np.repeat(self.offsets[index] - offsets[:-1], counts) + np.arange(offsets[-1])
        out: dict[str, Any] = {name: self._text_values(name, index, every) for name in TEXT_FIELDS}
        out["ids"] = self.ids[index].tolist()
        out["criteria_score"] = self.criteria_score[index].tolist()
        out["feedback_given"] = self._feedback_given[index].tolist()
        out["abstained"] = self.n_abstained[index].tolist()
        out["offsets"] = offsets.tolist()
        out["scores"] = (self.scores if every else self.scores[flat]).tolist()
        out["comments"] = None if self._comments is None else _taken(self._comments, flat)
        out["expert_ids"] = None if self.expert_ids is None else (self.expert_ids if every else self.expert_ids[flat]).tolist()
        out["is_provocative"] = ([None] * len(index) if self._provocative is None
                                 else _taken(self._provocative, None if every else index))
        names = self._origin_names
        out["origin"] = [(names[p], r) for p, r in zip(self._origin_part[index].tolist(), self._origin_row[index].tolist())]
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
            records=records,
        )  # fmt: skip


def as_columns(records) -> RecordColumns:
    """``records`` as ``RecordColumns``: columns as they are, a sequence of ``JudgeRecord`` made into columns."""
    return records if isinstance(records, RecordColumns) else RecordColumns.from_records(records)


def _per_row(flags: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """How many of each row's flat entries are set (row i owns the next ``lengths[i]`` entries)."""
    rows = np.repeat(np.arange(len(lengths)), lengths)
    return np.bincount(rows[flags], minlength=len(lengths)).astype(np.int64)


def _values(column) -> list:
    """Python values of an Arrow column (or a list, as it is)."""
    return column if isinstance(column, list) else column.to_pylist()


def _taken(column, index: np.ndarray | None) -> list:
    """Python values of an Arrow column or a list at ``index`` (None: all of them)."""
    if index is None:
        return _values(column)
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


# --------------------------------------------------------------------------------------- the column checks


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_number(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _is_list(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _all_finite(array) -> bool:
    """Every non-null value of a numeric Arrow array is finite (integers always are)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_floating(array.type):
        return True
    return pc.all(pc.or_kleene(pc.is_finite(array), pc.is_null(array))).as_py() in (True, None)


def _any_blank(column) -> bool:
    import pyarrow.compute as pc

    return bool(pc.any(pc.match_substring_regex(column, _BLANK)).as_py())


def _flat(column):
    """A list column as (flattened values, per-row lengths with null lists as 0, per-row validity)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return array.flatten(), lengths, pc.is_valid(array).to_numpy(zero_copy_only=False)


class _Doubt(Exception):
    """A check the table does not pass: the row path reads the source and names what is wrong."""


def _part(where: str, table, state: dict[str, Any], jsonl: bool) -> dict[str, Any]:
    """One table's records as columns, after every column check (raises ``_Doubt`` where one fails).

    Args:
        where: the source of the table's rows (a file), for ``origin``.
        table: a ``pyarrow.Table`` whose row i is row i of ``where``.
        state: rows seen so far in the whole source and whether ids are derived.
        jsonl: the table came from JSON lines, where Arrow cannot tell a null from an absent key: columns where
            that difference matters (``id``, ``annotations``, the benchmark markers, unknown columns) must hold no
            nulls.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = table.column_names
    if len(set(names)) != len(names):
        raise _Doubt
    n = table.num_rows
    present = set(names)

    def column(name: str):
        col = table.column(name) if name in present else None
        return None if col is None or pa.types.is_null(col.type) else col

    texts: dict[str, Any] = {}
    for name in _TEXT_REQUIRED:
        col = column(name)
        if col is None or not _is_text(col.type) or col.null_count or _any_blank(col):
            raise _Doubt
        texts[name] = col
    for name in ("reference_answer", *_TEXT_OPTIONAL):
        col = column(name)
        if col is None:
            texts[name] = pa.chunked_array([pa.array([""] * n, pa.string())]) if n else pa.chunked_array([], pa.string())
        elif _is_text(col.type):
            texts[name] = pc.fill_null(col, "")
        elif name != "reference_answer" and pa.types.is_integer(col.type):
            texts[name] = pc.fill_null(pc.cast(col, pa.string()), "")  # the row path's str(value)
        elif name != "reference_answer" and pa.types.is_boolean(col.type):
            texts[name] = pc.fill_null(pc.if_else(col, "True", "False"), "")
        else:
            raise _Doubt
    extra_names = [c for c in names if c not in _KNOWN]
    if jsonl:
        for name in (*_BENCHMARK_MARKERS, "annotations", "id", *extra_names):
            if name in present and table.column(name).null_count:
                raise _Doubt
        for name in extra_names:
            kind = table.column(name).type
            # JSON's 1 and 1.0 both read as Arrow doubles, nested objects gain the keys of their siblings: only
            # columns whose Python values Arrow reproduces exactly.
            if not (_is_text(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind)):
                raise _Doubt

    provocative = column("is_provocative")
    if provocative is not None and not pa.types.is_boolean(provocative.type):
        raise _Doubt

    aggregate = column("criteria_score")
    if aggregate is not None:
        if not _is_number(aggregate.type) or not _all_finite(aggregate):
            raise _Doubt
        aggregates = aggregate.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    else:
        aggregates = np.full(n, np.nan)

    rid = column("id")
    if rid is None and "id" in present and n:
        raise _Doubt  # an all-null id column: the row path says which row
    if rid is None:
        if state["rows"] == 0:
            state["derive"] = True  # no id column: content-derived ids, as for a first row without an id key
        elif not state["derive"]:
            raise _Doubt
        ids = None
    else:
        if rid.null_count or not (_is_text(rid.type) or pa.types.is_integer(rid.type)):
            raise _Doubt
        if _is_text(rid.type) and _any_blank(rid):
            raise _Doubt
        ids = (rid if _is_text(rid.type) else pc.cast(rid, pa.string())).to_numpy(zero_copy_only=False)

    experts = _experts(column("annotations"), column("expert_scores"), column("expert_feedback"), n)
    expert_ids = _expert_ids(column("expert_ids"), experts["lengths"], n)

    n_given = _per_row(~np.isnan(experts["scores"]), experts["lengths"])
    missing = np.isnan(aggregates) & (n_given > 0)
    if missing.any():
        # The aggregate the POLLUX data reports is the mean over the experts who did not abstain (JudgeRecord.from_row);
        # bincount adds each row's scores in order from 0.0, as the row path's sum() does.
        given = ~np.isnan(experts["scores"])
        rows = np.repeat(np.arange(n), experts["lengths"])[given]
        sums = np.bincount(rows, weights=experts["scores"][given], minlength=n)
        aggregates[missing] = sums[missing] / n_given[missing]
    if "annotations" in present:
        # an all-abstained released item's -1 aggregate is the marker carried over (JudgeRecord.from_row)
        released_rows = experts["released"]
        aggregates[released_rows & (aggregates == ABSTENTION_SCORE) & (n_given == 0) & (experts["lengths"] > 0)] = np.nan

    benchmark = "annotations" in present or all(name in present for name in _BENCHMARK_MARKERS)
    if ids is None:
        ids = _derived_ids(texts, n)
    state["rows"] += n
    return {
        "where": where, "n": n, "ids": np.asarray(ids, dtype=object), "texts": texts, "criteria_score": aggregates,
        "scores": experts["scores"], "lengths": experts["lengths"], "comments": experts["comments"],
        "feedback_given": experts["feedback_given"], "expert_ids": expert_ids,
        "is_provocative": provocative, "extra": {name: table.column(name) for name in extra_names},
        "derived": rid is None, "benchmark": benchmark,
    }


def _experts(annotations, experts, feedback, n: int) -> dict[str, Any]:
    """The experts of every row: the released ``annotations`` or the project's ``expert_scores`` /
    ``expert_feedback`` (a table using both in its rows goes row by row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if annotations is not None and experts is not None:
        raise _Doubt
    if annotations is not None:
        kind = annotations.type
        if not _is_list(kind) or not pa.types.is_struct(kind.value_type):
            raise _Doubt
        fields = {kind.value_type.field(k).name: kind.value_type.field(k).type for k in range(kind.value_type.num_fields)}
        if "score" not in fields or not _is_number(fields["score"]):
            raise _Doubt
        comment_type = fields.get("comment")
        if comment_type is not None and not (_is_text(comment_type) or pa.types.is_null(comment_type)):
            raise _Doubt
        items, lengths, valid = _flat(annotations)
        if items.null_count:
            raise _Doubt
        scores = pc.struct_field(items, "score")
        if scores.null_count or not _all_finite(scores):
            raise _Doubt
        values = scores.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
        values[values == ABSTENTION_SCORE] = np.nan  # the released data's abstention
        comments = (pc.fill_null(pc.struct_field(items, "comment"), "") if comment_type is not None
                    and _is_text(comment_type) else None)
        return {"scores": values, "lengths": lengths, "comments": comments, "feedback_given": valid.astype(bool),
                "released": valid.astype(bool)}
    if experts is None:
        scores, lengths = np.zeros(0), np.zeros(n, dtype=np.int64)
    else:
        if not _is_list(experts.type):
            raise _Doubt
        flat, lengths, _ = _flat(experts)
        if not (_is_number(flat.type) or pa.types.is_null(flat.type)) or not _all_finite(flat):
            raise _Doubt
        scores = flat.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)  # null: an abstention
    comments, given = None, np.zeros(n, dtype=bool)
    if feedback is not None:
        if not _is_list(feedback.type):
            raise _Doubt
        texts, feedback_lengths, given = _flat(feedback)
        if not (_is_text(texts.type) or pa.types.is_null(texts.type)) or texts.null_count:
            raise _Doubt
        if (given & (feedback_lengths != lengths)).any():
            raise _Doubt  # "has 1 texts for 3 expert scores": the row path's message
        if not given.all():  # rows without rationales: "" per expert, in the flat order of the scores
            pieces, at = [], 0
            texts_list = texts.to_pylist()
            for ok, length in zip(given.tolist(), lengths.tolist()):
                if ok:
                    pieces.extend(texts_list[at:at + length])
                    at += length
                else:
                    pieces.extend([""] * length)
            comments = pieces
        else:
            comments = texts if _is_text(texts.type) else pa.array([""] * len(texts), pa.string())
    return {"scores": scores, "lengths": lengths, "comments": comments, "feedback_given": given.astype(bool),
            "released": np.zeros(n, dtype=bool)}


def _expert_ids(column, lengths: np.ndarray, n: int) -> np.ndarray | None:
    """The experts' ids, flat and parallel to the scores (None where a row names none); checked as
    ``JudgeRecord`` checks them: one distinct, non-empty text per expert."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    if column is None:
        return None
    if not _is_list(column.type):
        raise _Doubt
    texts, id_lengths, valid = _flat(column)
    if not _is_text(texts.type) or texts.null_count:
        raise _Doubt  # integer ids, nulls inside a list: the row path reads or names them
    if (valid & (id_lengths != lengths)).any() or (len(texts) and pc.any(pc.equal(pc.utf8_length(texts), 0)).as_py()):
        raise _Doubt
    values = texts.to_numpy(zero_copy_only=False)
    rows = np.repeat(np.arange(n, dtype=np.int64), id_lengths)
    codes, uniques = pd.factorize(values)
    if pd.Series(rows * max(len(uniques), 1) + codes).duplicated().any():
        raise _Doubt  # an id repeats within a row
    if valid.all():
        return values
    out = np.full(int(lengths.sum()), None, dtype=object)
    row_of_expert = np.repeat(np.arange(n), lengths)
    out[valid[row_of_expert]] = values
    return out


def _derived_ids(texts: Mapping[str, Any], n: int) -> list[str]:
    from judge.records import ID_FIELDS

    columns = [_values(texts[name]) if name in texts else [""] * n for name in ID_FIELDS]
    return [content_id(dict(zip(ID_FIELDS, values))) for values in zip(*columns)]


# ------------------------------------------------------------------------------------------- the reader


def columns_from_tables(tables, source: str, make_id: bool = False, jsonl: bool = False) -> tuple[RecordColumns, LoadReport] | None:
    """Records from Arrow tables, checked column-wise, as columns with their ``LoadReport``; None when a check
    flags a table (the caller reads the source row by row, which names the row and field).

    Args:
        tables: ``(where, table)`` pairs in source order (a table may be None: Arrow could not read that file).
        source: the path or dataset name, for the report.
        make_id: derive ids for rows that have none.
        jsonl: the tables come from JSON lines (see ``_part``).

    Raises:
        RecordError: an id repeated with different content (naming both rows), as the row path raises it.
    """
    import pyarrow as pa

    state = {"rows": 0, "derive": make_id}
    parts = []
    try:
        for where, table in tables:
            if table is None:
                return None
            parts.append(_part(where, table, state, jsonl))
    except _Doubt:
        return None
    n = sum(p["n"] for p in parts)
    starts = np.r_[0, np.cumsum([p["n"] for p in parts])].astype(np.int64)

    comments = _joined_comments(parts) if any(p["comments"] is not None for p in parts) else None
    any_ids = any(p["expert_ids"] is not None for p in parts)
    provocative = None
    if any(p["is_provocative"] is not None for p in parts):
        provocative = [v for p in parts for v in (p["is_provocative"].to_pylist() if p["is_provocative"] is not None
                                                  else [None] * p["n"])]
    columns = RecordColumns(
        source, ids=np.concatenate([p["ids"] for p in parts]) if parts else np.zeros(0, dtype=object),
        texts={name: _joined_texts([p["texts"][name] for p in parts]) for name in TEXT_FIELDS},
        criteria_score=np.concatenate([p["criteria_score"] for p in parts]) if parts else np.zeros(0),
        scores=np.concatenate([p["scores"] for p in parts]) if parts else np.zeros(0),
        offsets=np.r_[0, np.cumsum(np.concatenate([p["lengths"] for p in parts]) if parts else [])].astype(np.int64),
        comments=comments,
        feedback_given=np.concatenate([p["feedback_given"] for p in parts]) if parts else np.zeros(0, dtype=bool),
        expert_ids=(np.concatenate([p["expert_ids"] if p["expert_ids"] is not None
                                    else np.full(len(p["scores"]), None, dtype=object) for p in parts])
                    if any_ids else None),
        is_provocative=provocative,
        extra=[(int(start), p["extra"]) for start, p in zip(starts, parts)],
        origin_names=[p["where"] for p in parts],
        origin_part=np.repeat(np.arange(len(parts), dtype=np.int32), [p["n"] for p in parts]),
        origin_row=np.concatenate([np.arange(p["n"], dtype=np.int64) for p in parts]) if parts else np.zeros(0, np.int64),
    )  # fmt: skip
    derived = np.repeat([p["derived"] for p in parts], [p["n"] for p in parts]).astype(bool)
    benchmark = np.repeat([p["benchmark"] for p in parts], [p["n"] for p in parts]).astype(bool)
    report = LoadReport(source=source, n_rows=n, n_derived_ids=int(derived.sum()))
    keep = _without_duplicates(columns, report)
    if keep is not None:
        columns, benchmark = columns.take(keep), benchmark[keep]
    n_experts, n_abstained = columns.n_experts, columns.n_abstained
    unlabelled = n_experts - n_abstained == 0
    report.n_records = len(columns)
    report.n_abstentions = int(n_abstained.sum())
    report.n_unlabelled = int(unlabelled.sum())
    report.n_all_abstained = int((unlabelled & (n_abstained > 0)).sum())
    report.n_benchmark_rows = int(benchmark.sum())
    log_report(report)
    return columns, report


def _joined_texts(pieces: list) -> Any:
    import pyarrow as pa

    chunks = []
    for piece in pieces:
        chunks.extend(piece.chunks if isinstance(piece, pa.ChunkedArray) else [piece])
    return pa.chunked_array([c.cast(pa.string()) if c.type != pa.string() else c for c in chunks], pa.string())


def _joined_comments(parts: list[dict]) -> list:
    out: list = []
    for p in parts:
        comments = p["comments"]
        if comments is None:
            out.extend([""] * len(p["scores"]))
        else:
            out.extend(_values(comments))
    return out


def _without_duplicates(columns: RecordColumns, report: LoadReport) -> np.ndarray | None:
    """The rows to keep when ids repeat (exact duplicate rows counted in ``report``, the first copy kept); None
    when no id repeats.

    Raises:
        RecordError: an id repeated with different content, naming both rows (the first such row in order).
    """
    import pandas as pd

    repeated = pd.Index(columns.ids).duplicated(keep="first")
    if not repeated.any():
        return None
    first: dict[str, int] = {}
    for i, rid in enumerate(columns.ids.tolist()):
        first.setdefault(rid, i)
    shared: dict = {}
    for i in np.flatnonzero(repeated).tolist():
        j = first[columns.ids[i]]
        record, earlier = columns._build([i], shared)[0], columns._build([j], shared)[0]
        _duplicate_of(record, earlier, report)
    return np.flatnonzero(~repeated)

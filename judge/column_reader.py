"""The column-wise reader of judged items: Arrow tables (a JSONL file, Parquet files, hub shards) checked column by
column and returned as ``judge.record_columns.RecordColumns``, with their ``LoadReport``.

Every column is checked against the rules ``JudgeRecord.from_row`` applies to a row (types, nulls, blank texts,
texts' lengths, finite scores, list lengths, one distinct id per expert), the same rules as whole-column operations.
When a check flags a table, or a column is of a type the checks cannot vouch for (a JSONL file Arrow cannot parse or
would number differently, an unusual column type, a table mixing both expert schemas), ``columns_from_tables``
returns None and the caller (``judge.record_sources``) reads the source row by row, which raises the row's own
``RecordError`` naming the source, row and field: the messages live once, in the row path, and these checks only
decide whether a table may skip it. One fact of the table the row path cannot see is said here: rationales
(``expert_feedback``) in a table with no ``expert_scores`` column name the missing column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from judge.plumbing.invisible_text import BLANK_RE2
from judge.record_columns import TEXT_FIELDS, RecordColumns, count_per_row, past_text_bound, python_values
from judge.records import (ABSTENTION_SCORE, BENCHMARK_MARKERS, KNOWN_FIELDS, OPTIONAL_TEXT_FIELDS, SCORE_BOUND,
                           REQUIRED_TEXT_FIELDS, LineIndex, LoadReport, RecordError, RowIndex, content_id,
                           is_benchmark_row, log_report, note_duplicate, note_off_scale, scale_bounds)  # fmt: skip

__all__ = ["columns_from_tables"]


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_number(kind) -> bool:
    """An integer or float column the checks below can compute on: half floats (pandas' float16 written to Parquet)
    have no ``min_max`` kernel in Arrow (its error names no file, row or field): they go to the row path."""
    import pyarrow as pa

    return pa.types.is_integer(kind) or (pa.types.is_floating(kind) and not pa.types.is_float16(kind))


def _is_list(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _finite_within_bound(array) -> bool:
    """Every non-null value of a numeric Arrow array is finite and within ``judge.records.SCORE_BOUND``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_floating(array.type) and pc.all(pc.or_kleene(pc.is_finite(array), pc.is_null(array))).as_py() \
            not in (True, None):
        return False
    return _within_bound(array)


def _within_bound(array) -> bool:
    """No non-null value of a numeric Arrow array is past ``judge.records.SCORE_BOUND`` (a NaN is not)."""
    import pyarrow.compute as pc

    low, high = (value.as_py() for value in pc.min_max(array).values())
    return all(v is None or v != v or abs(v) <= SCORE_BOUND for v in (low, high))


def _any_blank(column) -> bool:
    """Some text of the column shows nothing (``judge.plumbing.invisible_text.is_blank``, the row path's rule for
    required texts and expert ids). A row ``id`` of invisible characters only is still an id to the row path (white
    space alone gives none): such a table is read row by row, which keeps it."""
    import pyarrow.compute as pc

    return bool(pc.any(pc.match_substring_regex(column, BLANK_RE2)).as_py())


def _flat(column):
    """A list column as (flattened values, per-row lengths with null lists as 0, per-row validity)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return array.flatten(), lengths, pc.is_valid(array).to_numpy(zero_copy_only=False)


class _Doubt(Exception):
    """A check the table does not pass: the row path reads the source and names what is wrong."""


def _floats(array) -> np.ndarray:
    """A numeric Arrow array as float64 (null: NaN), or ``_Doubt`` for an integer no float64 holds exactly (past
    2**53): Arrow's cast refuses it with an error naming no file, row or field; the row path reads it."""
    import pyarrow as pa

    try:
        return array.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    except pa.ArrowInvalid:
        raise _Doubt from None


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
    if not jsonl:  # (a JSONL table was checked whole when judge.record_sources read it into Arrow)
        try:
            # Parquet does not check that a string column holds UTF-8: a value that is not would fail far from
            # here with no row named (a bare UnicodeDecodeError); the row path names the row and field.
            table.validate(full=True)
        except pa.ArrowInvalid:
            raise _Doubt from None
    n = table.num_rows
    present = set(names)

    def column(name: str):
        col = table.column(name) if name in present else None
        return None if col is None or pa.types.is_null(col.type) else col

    if "expert_scores" not in present and "annotations" not in present and column("expert_feedback") is not None:
        _refuse_feedback_without_scores(where, column("expert_feedback"), jsonl)

    texts: dict[str, Any] = {}
    for name in REQUIRED_TEXT_FIELDS:
        col = column(name)
        if col is None or not _is_text(col.type) or col.null_count or _any_blank(col):
            raise _Doubt
        texts[name] = col
    for name in ("reference_answer", *OPTIONAL_TEXT_FIELDS):
        col = column(name)
        if col is None:
            texts[name] = pa.chunked_array([pa.array([""] * n, pa.string())]) if n else pa.chunked_array([], pa.string())
        elif _is_text(col.type):
            texts[name] = pc.fill_null(col, "")
        elif name != "reference_answer" and pa.types.is_integer(col.type):
            texts[name] = pc.fill_null(pc.cast(col, pa.string()), "")  # the row path's str(value)
        else:  # a boolean among them too: the row path refuses it, naming the field
            raise _Doubt
    if any(past_text_bound(col) for col in texts.values()):  # each is text by now: checked, filled or cast above
        raise _Doubt
    extra_names = [c for c in names if c not in KNOWN_FIELDS]
    if jsonl:
        for name in (*BENCHMARK_MARKERS, "annotations", "id", *extra_names):
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
        # NaN is a missing aggregate, as null (the row path reads it so); an infinity is the row path's to name.
        if not _is_number(aggregate.type) or (pa.types.is_floating(aggregate.type)
                                             and pc.any(pc.is_inf(aggregate)).as_py()) or not _within_bound(aggregate):
            raise _Doubt
        aggregates = _floats(aggregate)
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

    n_given = count_per_row(~np.isnan(experts["scores"]), experts["lengths"])
    missing = np.isnan(aggregates) & (n_given > 0)  # kept: the load report counts the aggregates derived here
    if missing.any():
        # The aggregate the POLLUX data reports is the mean over the experts who did not abstain (JudgeRecord.from_row);
        # bincount adds each row's scores in order from 0.0, as the row path's sum() does.
        given = ~np.isnan(experts["scores"])
        rows = np.repeat(np.arange(n), experts["lengths"])[given]
        sums = np.bincount(rows, weights=experts["scores"][given], minlength=n)
        aggregates[missing] = sums[missing] / n_given[missing]
    released_rows, unscored = experts["released"], (aggregates == ABSTENTION_SCORE) & (n_given == 0)
    # a released item's -1 aggregate with no scoring expert (all abstained, or none listed) is the marker carried
    # over (JudgeRecord.from_row)
    aggregates[released_rows & unscored] = np.nan
    if (~released_rows & unscored).any():
        raise _Doubt  # the row path keeps such a -1 only on a rubric with that level, and otherwise names the row

    benchmark = is_benchmark_row(present)  # column names: the row rule read on the header
    if ids is None:
        ids = _derived_ids(texts, n)
    state["rows"] += n
    return {
        "where": where, "n": n, "ids": np.asarray(ids, dtype=object), "texts": texts, "criteria_score": aggregates,
        "scores": experts["scores"], "lengths": experts["lengths"], "comments": experts["comments"],
        "feedback_given": experts["feedback_given"], "expert_ids": expert_ids,
        "is_provocative": provocative, "extra": {name: table.column(name) for name in extra_names},
        "derived": rid is None, "benchmark": benchmark, "aggregate_derived": missing,
        "off_scale": _off_scale(texts["rubrics"], experts["scores"], experts["lengths"], aggregates),
    }


def _refuse_feedback_without_scores(where: str, feedback, jsonl: bool) -> None:
    """Raise naming the missing ``expert_scores`` column when ``expert_feedback`` holds texts: the row path, which
    sees a row and not the table, said "field 'expert_feedback': has 5 texts for 0 expert scores", blaming the
    column that is there. A table whose rationale lists are all empty has nothing to pair, and passes.

    Raises:
        RecordError: naming the source, the first row with a rationale, and ``expert_scores``.
    """
    if not _is_list(feedback.type):
        return  # not a list of rationales: the row path names that
    _, lengths, _ = _flat(feedback)
    given = np.flatnonzero(lengths)
    if len(given):
        row, texts = int(given[0]), int(lengths[given[0]])
        place = LineIndex(row) if jsonl else RowIndex(row)
        raise RecordError(where, place, "expert_scores",
                          f"no such {'key in any row' if jsonl else 'column'}, while expert_feedback gives "
                          f"{texts} text{'' if texts == 1 else 's'} here, one per expert score")


def _off_scale(rubrics, scores: np.ndarray, lengths: np.ndarray, aggregates: np.ndarray) -> np.ndarray:
    """Per row: an expert score (flat, ``lengths`` per row; NaN an abstention) or the aggregate lies outside the
    row's rubric scale (``judge.records.off_scale``'s rule; ``scale_bounds`` read once per distinct rubric)."""
    import pyarrow.compute as pc

    distinct = pc.unique(rubrics)
    bounds = [scale_bounds(text) or (-np.inf, np.inf) for text in distinct.to_pylist()]
    if not bounds:
        return np.zeros(len(aggregates), dtype=bool)
    low, high = (np.array(side, dtype=np.float64) for side in zip(*bounds))
    which = pc.index_in(rubrics, value_set=distinct).to_numpy(zero_copy_only=False)
    row_low, row_high = low[which], high[which]
    with np.errstate(invalid="ignore"):  # NaN (an abstention, no aggregate) compares false: never off the scale
        bad = (scores < np.repeat(row_low, lengths)) | (scores > np.repeat(row_high, lengths))
        return (count_per_row(bad, lengths) > 0) | (aggregates < row_low) | (aggregates > row_high)


def _experts(annotations, experts, feedback, n: int) -> dict[str, Any]:
    """The experts of every row: the released ``annotations`` or the project's ``expert_scores`` /
    ``expert_feedback`` (a table with columns of both goes row by row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if annotations is not None and (experts is not None or feedback is not None):
        raise _Doubt  # both schemas: a row giving both is refused by the row path, naming the field
    if annotations is not None:
        kind = annotations.type
        if not _is_list(kind) or not pa.types.is_struct(kind.value_type):
            raise _Doubt
        fields = {kind.value_type.field(k).name: kind.value_type.field(k).type for k in range(kind.value_type.num_fields)}
        if "score" not in fields or not _is_number(fields["score"]) or set(fields) - {"comment", "score"}:
            raise _Doubt  # another key: the row path names it
        comment_type = fields.get("comment")
        if comment_type is not None and not (_is_text(comment_type) or pa.types.is_null(comment_type)):
            raise _Doubt
        items, lengths, valid = _flat(annotations)
        if items.null_count:
            raise _Doubt
        scores = pc.struct_field(items, "score")
        if scores.null_count or not _finite_within_bound(scores):
            raise _Doubt
        values = _floats(scores)
        values[values == ABSTENTION_SCORE] = np.nan  # the released data's abstention
        comments = (pc.fill_null(pc.struct_field(items, "comment"), "") if comment_type is not None
                    and _is_text(comment_type) else None)
        if comments is not None and past_text_bound(comments):
            raise _Doubt
        return {"scores": values, "lengths": lengths, "comments": comments, "feedback_given": valid.astype(bool),
                "released": valid.astype(bool)}
    if experts is None:
        scores, lengths = np.zeros(0), np.zeros(n, dtype=np.int64)
    else:
        if not _is_list(experts.type):
            raise _Doubt
        flat, lengths, _ = _flat(experts)
        if not (_is_number(flat.type) or pa.types.is_null(flat.type)) or not _finite_within_bound(flat):
            raise _Doubt
        scores = _floats(flat)  # null: an abstention
        if (scores == ABSTENTION_SCORE).any():
            raise _Doubt  # the row path keeps a -1 only on a rubric with that level, and otherwise names the row
    comments, given = None, np.zeros(n, dtype=bool)
    if feedback is not None:
        if not _is_list(feedback.type):
            raise _Doubt
        texts, feedback_lengths, given = _flat(feedback)
        if not (_is_text(texts.type) or pa.types.is_null(texts.type)) or texts.null_count or (
                _is_text(texts.type) and past_text_bound(texts)):
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
    ``JudgeRecord`` checks them: one distinct, non-blank text per expert."""
    import pandas as pd

    if column is None:
        return None
    if not _is_list(column.type):
        raise _Doubt
    texts, id_lengths, valid = _flat(column)
    if not _is_text(texts.type) or texts.null_count or past_text_bound(texts):
        raise _Doubt  # integer ids, nulls inside a list, an id past the bound: the row path reads or names them
    if (valid & (id_lengths != lengths)).any() or (len(texts) and _any_blank(texts)):
        raise _Doubt  # a blank id (empty once stripped): the row path names it
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

    columns = [python_values(texts[name]) if name in texts else [""] * n for name in ID_FIELDS]
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
    # a JSONL table's row i is line i + 1 (a file with blank lines is read row by row); a Parquet table's, row index i
    kinds = LineIndex if jsonl else RowIndex
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
        origin_kinds=[kinds] * len(parts),
        # each record says so, as the row path's do (JudgeRecord.criteria_score_derived, .benchmark_row)
        aggregate_derived=np.concatenate([p["aggregate_derived"] for p in parts]) if parts else None,
        benchmark=np.repeat([p["benchmark"] for p in parts], [p["n"] for p in parts]).astype(bool),
    )  # fmt: skip
    derived = np.repeat([p["derived"] for p in parts], [p["n"] for p in parts]).astype(bool)
    flagged = np.concatenate([p["off_scale"] for p in parts]) if parts else np.zeros(0, dtype=bool)
    report = LoadReport(source=source, n_rows=n, n_derived_ids=int(derived.sum()))
    keep = _without_duplicates(columns, report)
    if keep is not None:
        columns = columns.take(keep)
        kept = np.zeros(n, dtype=bool)
        kept[keep] = True
        flagged &= kept
    for i in np.flatnonzero(flagged)[:20].tolist():  # the first ones named, in source order, as the row path does
        part = int(np.searchsorted(starts, i, side="right")) - 1
        note_off_scale(report, parts[part]["where"], kinds(i - int(starts[part])))
    report.n_off_scale = int(flagged.sum())
    n_experts, n_abstained = columns.n_experts, columns.n_abstained
    unlabelled = n_experts - n_abstained == 0
    report.n_records = len(columns)
    report.n_abstentions = int(n_abstained.sum())
    report.n_unlabelled = int(unlabelled.sum())
    report.n_all_abstained = int((unlabelled & (n_abstained > 0)).sum())
    report.n_benchmark_rows = int(columns.benchmark.sum())
    report.derived_criteria_records = tuple(np.flatnonzero(columns.aggregate_derived).tolist())
    report.n_derived_criteria_scores = len(report.derived_criteria_records)
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
            out.extend(python_values(comments))
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
    for i in np.flatnonzero(repeated).tolist():
        record, earlier = columns.records_at([i, first[columns.ids[i]]])
        note_duplicate(record, earlier, report)
    return np.flatnonzero(~repeated)

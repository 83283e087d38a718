"""Where records come from and go to: files, hub-layout shard folders, ``save_to_disk`` folders and dataset names
(``load_records``, ``load_records_report``, ``source_rows``), and the project's JSONL (``write_jsonl``).

``judge.records`` holds what a record *is* and how a row is validated, ``judge.record_columns`` the column-wise
reader of Arrow tables (JSONL and Parquet); this module only finds the rows or tables and hands them to them.
``load_record_columns`` gives the records of any source as columns (``judge.record_columns.RecordColumns``, what
the scoring path reads), ``load_records`` as ``JudgeRecord`` objects.

Why one module of ~975 lines: every reader of records (scoring, training, the synthetic stages, the ranking's
instructions) takes a source through one decision, which file or folder or dataset name it is, which split, and what
to say when it is none of them; kept in several modules, the rules for one source would drift between readers.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from judge.column_reader import columns_from_tables
from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.config_files import special_file_kind
from judge.plumbing.json_reading import JSON_REFUSALS, UTF8_BOM, arrow_may_read, arrow_reads_lines_alike, unreadable_json
from judge.record_columns import RecordColumns
from judge.records import (BENCHMARK_MARKERS, MAX_EXPERTS_PER_ITEM, OPTIONAL_TEXT_FIELDS, REQUIRED_TEXT_FIELDS,
                           JudgeRecord, LineIndex, LoadReport, RecordError, RowIndex, records_and_report,
                           released_columns_problem)

__all__ = ["jsonl_rows", "load_record_columns", "load_records", "load_records_report", "looks_like_dataset_name",
           "near_sample", "source_rows", "write_jsonl"]

logger = logging.getLogger(__name__)

_SHARD_NAME = re.compile(r"^(?P<split>.+?)-(?P<k>\d+)-of-(?P<n>\d+)\.parquet$")
#: A shard as older ``datasets`` releases pushed it, with a fingerprint after its number
#: (``train-00000-of-00001-5f3c….parquet``): the same split and shard numbers as ``_SHARD_NAME``.
_HASHED_SHARD_NAME = re.compile(r"^(?P<split>.+?)-(?P<k>\d+)-of-(?P<n>\d+)-[0-9a-f]+\.parquet$")


def _shard_name(name: str) -> re.Match | None:
    """A shard file's name read as ``<split>-<k>-of-<n>``, with or without a fingerprint after it; None for another
    name."""
    return _SHARD_NAME.match(name) or _HASHED_SHARD_NAME.match(name)


_SAVE_TO_DISK_FILES = ("dataset_info.json", "state.json", "dataset_dict.json")
#: ``UTF8_BOM`` as a decoded line holds it.
_BOM_TEXT = UTF8_BOM.decode("utf-8")


class _RepeatedKey(ValueError):
    """A JSON object giving one key twice: json keeps the last value without a word, and a row whose
    ``expert_scores`` is given twice would be scored on one of them."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's ``object_pairs_hook``: the object as a dict, or ``_RepeatedKey`` when a key repeats (every object, nested
    ones too: Arrow's JSON reader refuses those files as well, so both loaders refuse them alike)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


#: One decoder for every line: ``json.loads(text, object_pairs_hook=...)`` builds a decoder per call, a cost paid
#: again on every line; built once, only the hook itself is added to each parse.
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _loads(text: str) -> Any:
    """``json.loads`` refusing a repeated key (``_unique_keys``)."""
    if text.startswith(_BOM_TEXT):
        return json.loads(text)  # json's own error for a byte order mark past the file's start
    return _DECODER.decode(text)


def _repeated_key(source: str, row: int | None, text: str) -> RecordError:
    """The error for a JSON text with a repeated key, naming the field (the row's key that repeats, or the one
    whose value holds an object that repeats a key). Read again to find which (the hook cannot tell a row from the
    objects inside it); only on the way to this error."""
    found: dict[int, str] = {}
    kept: list[dict] = []  # every object stays alive while read, so that no id in ``found`` is another's later

    def note(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        kept.append(out)
        if len(out) != len(pairs):
            seen: set[str] = set()
            found[id(out)] = next(k for k, _ in pairs if k in seen or seen.add(k))
        return out

    def holds(value: Any) -> str | None:
        if isinstance(value, dict):
            return found.get(id(value)) or next(filter(None, map(holds, value.values())), None)
        if isinstance(value, list):
            return next(filter(None, map(holds, value)), None)
        return None

    value = json.loads(text, object_pairs_hook=note)
    rows = [value] if row is not None else value if isinstance(value, list) else []
    for k, item in enumerate(rows):
        where = row if row is not None else RowIndex(k)
        if isinstance(item, dict) and id(item) in found:
            return RecordError(source, where, found[id(item)], "is given twice in the row (JSON would keep the last "
                                                               "value without a word): give it once")
        if isinstance(item, dict):
            for name, inner in item.items():
                key = holds(inner)
                if key is not None:
                    return RecordError(source, where, name, f"an object inside it gives the key {key!r} twice (JSON "
                                                            "would keep the last value without a word): give it once")
        elif holds(item) is not None:
            return RecordError(source, where, None, f"an object gives the key {holds(item)!r} twice: give it once")
    key = holds(value)  # a .json document's repeated key outside its rows (a top-level object)
    return RecordError(source, None, None, f"an object gives the key {key!r} twice: give it once")


def _release_arrow_memory() -> None:
    """Hand the freed Arrow buffers back to the system: Arrow's allocator keeps them otherwise (about the size of
    the file, resident for the rest of a run)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _jsonl_table(path: Path):
    """The JSONL file as an Arrow table whose row i is line i, or None (blank lines, CR line ends, Arrow refuses),
    the reason logged at debug level: the row path reads the file then, the same records a good deal slower."""
    data = path.read_bytes()
    start = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0  # a byte order mark is no part of the first row
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    # One object a line, as the row path reads them (blank lines it skips, keeping the numbers of the others), and no
    # CR line ends (Python splits lines there, Arrow does not).
    if not arrow_reads_lines_alike(data, lines, start) or b"\r" in data:
        return _row_by_row(path, "blank lines, or CR line ends, which Arrow numbers apart from the row path")
    if not arrow_may_read(data):  # nesting that may crash Arrow's reader: the row path names the line
        return _row_by_row(path, "a line nests deeper than Arrow's reader is given")
    found = _first_row_schema(data, start)
    if found is None:
        return _row_by_row(path, f"its first row is no object Arrow reads with at most {_MAX_ARROW_FIELDS} fields")
    schema, maybe_null = found
    table, reason = _read_typed(data, start, schema)
    if table is None and _later_rows_may_need(reason, schema, maybe_null):
        # Typed for what later rows give, from the file's bytes, then read once more: scanned only for a file whose
        # first read stopped, not for every file whose first row leaves a field out or null.
        wider, maybe_null = _typed_for_later_rows(data, schema, maybe_null)
        if wider != schema:
            schema = wider
            table, reason = _read_typed(data, start, schema)
    if table is None:
        if "unexpected field" in reason and logger.isEnabledFor(logging.DEBUG):
            reason = _unexpected_key(data, start, set(schema.names)) or reason
        return _row_by_row(path, f"Arrow's reader stopped: {reason}")
    if table.num_rows != lines:
        return _row_by_row(path, f"Arrow read {table.num_rows} rows of its {lines} lines")
    return _as_inferred(table, maybe_null)


def _read_typed(data: bytes, start: int, schema) -> tuple[Any, str]:
    """The file's rows read by Arrow with ``schema`` (a key it lacks stops the read), or None and the first line of
    Arrow's refusal."""
    import pyarrow as pa
    import pyarrow.json as pj

    options = pj.ReadOptions(block_size=min(max(len(data) + 1, 1 << 20), (1 << 31) - 1))
    try:
        # The keys of the first row, typed: Arrow would otherwise build a column, as long as the file, of every key
        # any row gives (rows times distinct keys). A row with another key stops it, and the file goes to the row
        # path, which a column that some row lacks goes to anyway (``judge.column_reader``).
        parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
        table = pj.read_json(pa.BufferReader(pa.py_buffer(data)[start:]), read_options=options, parse_options=parse)
        # Checked whole, or a bad table would fail far from here with
        # no row named: the JSON reader does not check UTF-8 (the row path names the byte and its line), and it
        # builds a malformed list column when the file's first list starts with null ([null, 1.0]: offsets past
        # the values). A key given twice in one object it refuses (the row path names the field).
        table.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        return None, (str(err).strip().splitlines() or [type(err).__name__])[0]
    return table, ""


#: Arrow's refusal of a number in a top-level column typed as text, naming the column.
_STRING_TO_NUMBER = re.compile(r"Column\(/([^/()]+)\) changed from string to number")


def _later_rows_may_need(reason: str, schema, maybe_null: Mapping[str, bool]) -> bool:
    """Arrow's refusal ``reason`` may be mended by typing the schema for later rows (``_typed_for_later_rows``): a key
    the first row lacks, or a number in a text column the first row gives as null or leaves out; not a value no
    typing holds (a list where a number was), which stops a second read as it stopped the first."""
    import pyarrow as pa

    changed = _STRING_TO_NUMBER.search(reason)
    if changed:
        return changed.group(1) in maybe_null and schema.field(changed.group(1)).type == pa.string()
    return "unexpected field" in reason


def _row_by_row(path: Path, reason: str) -> None:
    """None, for a JSONL file the row path reads, with why said at debug level."""
    logger.debug("%s: read row by row: %s", path, reason)
    return None


def _unexpected_key(data: bytes, start: int, names: set[str]) -> str | None:
    """Which line first gives a key that is none of ``names`` (Arrow's refusal names neither), as a phrase; None
    when no line does. Parses the lines, so only for the debug log."""
    for number, raw in enumerate(data[start:].split(b"\n")):
        try:
            row = json.loads(raw)
        except JSON_REFUSALS:
            continue
        key = next((k for k in row if k not in names), None) if isinstance(row, dict) else None
        if key is not None:
            return f"line {number + 1} gives the key {key!r}, which the first row does not"
    return None


def _typed_for_later_rows(data: bytes, schema, maybe_null: dict[str, bool]) -> tuple[Any, dict[str, bool]]:
    """The first row's schema (``_first_row_schema``) with what the file's bytes say later rows need, all of it, so that
    one more read by Arrow settles the file: each known field no row needs (``_LATER_FIELDS``) that the first row
    leaves out and the file names, and each known text the first row gives as null or leaves out that the file
    gives as a number, typed as Arrow's inference types it (an integer column the column reader reads as digits;
    a text in it as well stops the read, and the row path reads the file). A name or number the bytes show inside
    a text or a nested object only adds a column of nulls (``_as_inferred`` takes it out again) or a read that
    stops: the row path's records, never others."""
    import pyarrow as pa

    maybe_null = dict(maybe_null)
    later = [name for name in _LATER_FIELDS if name not in schema.names and b'"%s"' % name.encode() in data]
    schema = pa.schema([*schema, *(pa.field(name, _known_types()[name]) for name in later)])
    maybe_null |= dict.fromkeys(later, False)
    for name in maybe_null:
        if schema.field(name).type == pa.string() and _number_under_key(name).search(data):
            schema = schema.set(schema.get_field_index(name), pa.field(name, pa.int64()))
    return schema, maybe_null


@functools.cache
def _number_under_key(name: str) -> re.Pattern[bytes]:
    """A key ``name`` whose value is a JSON number (its first character), in a file's bytes."""
    return re.compile(rb'"%s"[ \t\n\r]*:[ \t\n\r]*[-0-9]' % re.escape(name.encode()))


#: The most fields (nested ones counted) the first row of a JSONL file may give for Arrow to read the file: each is a
#: column as long as the file. A file whose rows give more is read by the row path, whose work grows with the file.
_MAX_ARROW_FIELDS = 256


def _first_row_schema(data: bytes, start: int) -> tuple[Any, dict[str, bool]] | None:
    """The Arrow schema ``_jsonl_table`` reads the file with, and the fields in it that Arrow, inferring, could have
    found null in every row, each with whether the first row gives it (``_as_inferred``); None for a first row Arrow will not read or one with more than
    ``_MAX_ARROW_FIELDS`` fields.

    The schema is the first row's keys, typed as Arrow infers them from that row, with the types later rows may widen
    taken wide where the column reader reads either alike (a score as a float: JSON's 2 and 1.5; a date-like text as
    text; a field's null as its known type)."""
    import pyarrow as pa
    import pyarrow.json as pj

    end = data.find(b"\n", start)
    first = data[start:] if end < 0 else data[start:end + 1]
    try:
        row = json.loads(first)
    except JSON_REFUSALS:
        return None
    if not isinstance(row, dict) or _fields_past(row, _MAX_ARROW_FIELDS) < 0:
        return None
    try:
        inferred = pj.read_json(pa.BufferReader(first)).schema
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    known = _known_types()
    fields = [pa.field(f.name, known[f.name] if pa.types.is_null(f.type) and f.name in known
                       else _widened(f.name, f.type)) for f in inferred]
    return pa.schema(fields), {f.name: True for f in inferred if pa.types.is_null(f.type) and f.name in known}


def _as_inferred(table, maybe_null: Mapping[str, bool]):
    """``table`` with each of the ``maybe_null`` columns that holds only nulls as Arrow's inference leaves it: a
    column of nulls where the first row gives the key, no column where no row may have."""
    import pyarrow as pa

    for name, in_first_row in maybe_null.items():
        index = table.column_names.index(name)
        if table.column(index).null_count != table.num_rows:
            continue
        if in_first_row:
            table = table.set_column(index, name, pa.nulls(table.num_rows))
        else:
            table = table.remove_column(index)
    return table


def _fields_past(value: Any, budget: int) -> int:
    """``budget`` less the fields of ``value``'s objects (nested ones and those inside lists counted); negative once
    past it (the count stops there)."""
    if isinstance(value, dict):
        budget -= len(value)
        items = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return budget
    for item in items:
        if budget < 0:
            break
        budget = _fields_past(item, budget)
    return budget


#: Known fields whose column the column reader reads alike when it is absent and when it holds only nulls (unlike
#: ``id``, the expert scores and the benchmark's markers, whose presence it reads): typed when the first row leaves
#: them out and a later row gives them.
_LATER_FIELDS = ("reference_answer", *(name for name in OPTIONAL_TEXT_FIELDS if name not in BENCHMARK_MARKERS),
                 "criteria_score", "expert_feedback")


@functools.cache
def _known_types() -> dict[str, Any]:
    """The Arrow type of each known field the column reader reads as one type (texts, the aggregate, the experts'
    lists), for a first row that gives it as null or leaves it out."""
    import pyarrow as pa

    types = {name: pa.string() for name in ("reference_answer", *OPTIONAL_TEXT_FIELDS, *REQUIRED_TEXT_FIELDS)}
    return types | {"criteria_score": pa.float64(), "expert_scores": pa.list_(pa.float64()),
                    "expert_feedback": pa.list_(pa.string()), "expert_ids": pa.list_(pa.string()),
                    "is_provocative": pa.bool_()}


def _widened(name: str, kind):
    """``kind``, Arrow's type for field ``name`` inferred from one row, as wide as the rows after it may need where
    the column reader reads either type alike: a score as a float (JSON's 2 and 1.5), a date-like text as text, the
    items of a known list that is empty here as their known type (annotations as the released ones: a comment and a
    score)."""
    import pyarrow as pa

    if pa.types.is_timestamp(kind):
        return pa.string()
    if name == "criteria_score" and pa.types.is_integer(kind):
        return pa.float64()
    if pa.types.is_list(kind):
        item = kind.value_type
        if name in ("expert_scores", "expert_feedback", "expert_ids") and pa.types.is_null(item):
            return _known_types()[name]  # [] in this row: the known list's items
        if name == "expert_scores" and pa.types.is_integer(item):
            return _known_types()[name]
        if name == "annotations" and pa.types.is_null(item):  # [] in this row: the released annotation's fields
            return pa.list_(pa.struct([pa.field("comment", pa.string()), pa.field("score", pa.float64())]))
        if name == "annotations" and pa.types.is_struct(item):
            return pa.list_(pa.struct([pa.field(f.name, pa.float64() if f.name == "score" and (
                pa.types.is_integer(f.type) or pa.types.is_null(f.type)) else _widened("", f.type)) for f in item]))
        return pa.list_(_widened("", item))
    return kind


def jsonl_rows(path: Path) -> Iterator[tuple[str, int, Any]]:
    """(the file, the 0-based row, the parsed value) of each non-blank line of a JSONL file, read strictly: a line
    that is not UTF-8 or not JSON, or an object giving a key twice, is a ``RecordError`` naming the file and line (and
    the field), as ``load_records`` names one. A byte order mark at the file's start is skipped.

    The row is a ``judge.records.LineIndex``: the line number minus one, blank lines counted (they are skipped, the
    others keep their numbers), so that an error names the line an editor shows."""
    with path.open("rb") as handle:  # bytes, decoded per line: a byte that is not UTF-8 is named with its line
        for number, raw in enumerate(handle):
            number = LineIndex(number)
            if number == 0:
                raw = raw.removeprefix(UTF8_BOM)
            try:
                # without its line break: json counts one as a new line, so a row cut short was refused "at column 1"
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as err:
                raise RecordError(str(path), number, None,
                                  f"not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1})") from None
            if not line.strip():
                continue
            try:
                row = _loads(line)
            except _RepeatedKey:
                raise _repeated_key(str(path), number, line) from None
            except JSON_REFUSALS as err:
                raise RecordError(str(path), number, None, unreadable_json(err)) from None
            yield str(path), number, row


def _parquet_rows(path: Path) -> Iterator[tuple[str, int, dict]]:
    yield from _table_rows(str(path), _parquet_table(path))


def _parquet_table(path: Path):
    """A Parquet file's table, or a one-line ``RecordError`` naming the file when Arrow cannot read it (cut short,
    not Parquet, a damaged page) and naming the column when the file gives one column name twice."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # The footer first: Arrow's table reader refuses a repeated column name with a schema dump that blames
        # the file's readability; the name itself is the fault to report.
        counts = Counter(pq.read_schema(path).names)
        repeated = next((name for name, count in counts.items() if count > 1), None)
        if repeated is not None:
            raise RecordError(str(path), None, repeated,
                              f"the column is given {counts[repeated]} times; a row has one value per field")
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        if isinstance(err, OSError) and err.errno is not None:
            raise  # the file system's (no permission): not the file's content
        first_line = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise RecordError(str(path), None, None, f"not a readable Parquet file ({first_line})") from None


def _table_rows(name: str, table) -> Iterator[tuple[str, int, dict]]:
    try:
        rows = table.to_pylist()
    except UnicodeDecodeError:
        # A string column holding bytes that are not UTF-8 (Parquet does not check them): the rows before the
        # first such one, then its error naming the row and field, as a JSONL line's bytes are named.
        yield from _rows_to_bad_text(name, table)
        return
    yield from ((name, RowIndex(index), row) for index, row in enumerate(rows))


def _rows_to_bad_text(name: str, table) -> Iterator[tuple[str, int, dict]]:
    """The rows of ``table`` up to its first value that is not UTF-8 text, then that row's ``RecordError``."""
    block = 1024  # rows decoded at a time: one slice's Python rows, not the table's, held at once
    for start in range(0, table.num_rows, block):
        try:
            rows = table.slice(start, block).to_pylist()
        except UnicodeDecodeError:
            break
        yield from ((name, RowIndex(start + k), row) for k, row in enumerate(rows))
    else:
        return
    for index in range(start, min(start + block, table.num_rows)):
        for column in table.column_names:
            try:
                table.column(column).slice(index, 1).to_pylist()
            except UnicodeDecodeError as err:
                raise RecordError(name, RowIndex(index), column, f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at byte "
                                                       f"{err.start + 1} of a text)") from None
        yield name, RowIndex(index), table.slice(index, 1).to_pylist()[0]


def _drained(tables: list[tuple[str, Any]]) -> Iterator[tuple[str, int, dict]]:
    """The rows of ``tables``, each table taken out of the list as it is read, so that one validated table's memory
    can go while the next is read."""
    while tables:
        name, table = tables.pop(0)
        yield from _table_rows(name, table)


def _parquet_tables(path: Path, split: str | None) -> list[tuple[str, Any]] | None:
    """A Parquet file's or a shard folder's tables, each named by its file, read once for both paths (the column
    checks, and the row path when a check flags them); None for any other source."""
    if path.is_file() and path.suffix.lower() == ".parquet":
        shard = _shard_name(path.name)
        if shard and int(shard.group("n")) > 1:  # one shard of several, given alone: the others are not read
            logger.warning("%s: shard %d of %s of split %r, read alone; give the folder to read them all", path,
                           int(shard.group("k")) + 1, int(shard.group("n")), shard.group("split"))
        return _checked_columns([(str(path), _parquet_table(path))])
    if path.is_dir() and not any((path / marker).is_file() for marker in _SAVE_TO_DISK_FILES):
        shards = _parquet_shards(path, split)
        return _checked_columns([(str(shard), _parquet_table(shard)) for shard in shards]) if shards else None
    return None


def _checked_columns(tables: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``tables``, once their columns are those one data set's tables have: the same in every shard of a split
    (a column renamed in one shard read as another item's content: a repeated id, a label lost), and, in the
    released benchmark's schema, every column the records read (``judge.records.released_columns_problem``).

    Raises:
        RecordError: naming the file and the column.
    """
    first_name, first = tables[0]
    for name, table in tables:
        if problem := released_columns_problem(table.column_names):
            raise RecordError(name, None, problem[0], problem[1])
        if set(table.column_names) != set(first.column_names):
            only_here = sorted(set(table.column_names) - set(first.column_names))
            only_there = sorted(set(first.column_names) - set(table.column_names))
            column = (only_there or only_here)[0]
            differ = ([f"has {', '.join(map(repr, only_here))}"] if only_here else []) + (
                [f"lacks {', '.join(map(repr, only_there))}"] if only_there else [])
            raise RecordError(name, None, column, f"the shards of one split have other columns: this one "
                              f"{' and '.join(differ)}, beside {first_name}; give every shard the same columns")
    return tables


#: A judge's verdicts, as ``judge-eval run`` writes them (a pairwise run's under the second name): a folder holding one
#: is a run, whose items.parquet (``judge-eval score``'s item table) is no data set's shard.
_RUN_VERDICT_FILES = ("predictions.jsonl", "pairwise_predictions.jsonl")


def _parquet_shards(folder: Path, split: str | None) -> list[Path]:
    """The Parquet shards of a hub-layout folder (``data/<split>-0000k-of-0000n.parquet``, a fingerprint after the
    numbers or not, or without ``data/``), in name order, for one split (default: the only one, else ``test``).

    Raises:
        ValueError: for a judge-eval run folder (``_RUN_VERDICT_FILES``): its items.parquet read as a shard was
            refused for a missing ``instruction``, and, unscored, it was told to give its predictions.jsonl.
    """
    if verdicts := next((name for name in _RUN_VERDICT_FILES if (folder / name).is_file()), None):
        raise ValueError(f"{folder}: a judge-eval run folder (it holds {verdicts}, a judge's verdicts), not labelled "
                         "records; give the data the run judged (its run.json's `data`)")
    shards = sorted((folder / "data").glob("*.parquet")) or sorted(folder.glob("*.parquet"))
    if not shards:
        return []
    by_split: dict[str, list[Path]] = {}
    for shard in shards:
        # a fingerprinted name too: read as no split, its train and test shards would be loaded as one
        match = _shard_name(shard.name)
        by_split.setdefault(match.group("split") if match else "", []).append(shard)
    if split is None:
        if len(by_split) == 1:
            split = next(iter(by_split))
        else:
            split = "test"
    if split not in by_split:
        raise ValueError(f"{folder}: no shards of split {split!r}; available: {sorted(by_split)}")
    _refuse_missing_shards(folder, by_split[split])
    if split and by_split.get(""):  # files named as no shard beside the split's: a copy's "(1)", an export's own name
        stray = [shard.name for shard in by_split[""]]
        logger.warning("%s: read %s of split %r; left out %s, named as no split's shard "
                       "(<split>-0000k-of-0000n.parquet)", folder,
                       "its one shard" if len(by_split[split]) == 1 else f"the {len(by_split[split])} shards", split,
                       ", ".join(stray[:5]) + (f" and {len(stray) - 5} more" if len(stray) > 5 else ""))
    return by_split[split]


def _refuse_missing_shards(folder: Path, shards: list[Path]) -> None:
    """ValueError naming the shards a split's ``-0000k-of-0000n`` names say are missing (an interrupted download
    would otherwise load as a smaller benchmark without a word), given by two files (a fingerprinted and a plain name
    of one shard: ``hf download`` into a ``--local-dir`` holding an older push deletes nothing, and both would be
    read) or numbered past their count."""
    named = [(shard, m) for shard, m in zip(shards, map(_shard_name, (shard.name for shard in shards))) if m]
    counts = {int(m.group("n")) for _, m in named}
    if len(counts) > 1:
        raise ValueError(f"{folder}: the shards disagree on how many there are ({sorted(counts)}): "
                         f"{[shard.name for shard in shards]}")
    if not counts:  # no -0000k-of-0000n names: nothing says how many there should be
        return
    (total,) = counts
    split, width = named[0][1].group("split"), len(named[0][1].group("k"))
    files: dict[int, list[str]] = {}
    for shard, m in named:
        files.setdefault(int(m.group("k")), []).append(shard.relative_to(folder).as_posix())
    twice = {k: names for k, names in sorted(files.items()) if len(names) > 1}
    if twice:
        shown = "; ".join(f"shard {k:0{width}d} in {', '.join(names)}" for k, names in list(twice.items())[:3])
        raise ValueError(f"{folder}: split {split!r} has {len(named)} files for its {total} "
                         f"shard{'s' * (total != 1)}: {shown}{' ...' if len(twice) > 3 else ''} (an older download "
                         "beside a newer one? keep one file per shard)")
    past = [names[0] for k, names in sorted(files.items()) if k >= total]
    if past:
        raise ValueError(f"{folder}: split {split!r} has {total} shards, numbered 0 to {total - 1}, but also "
                         f"{', '.join(past[:3])}{' ...' if len(past) > 3 else ''} (a file of another download? "
                         "remove it)")
    missing = sorted(set(range(total)) - set(files))
    if missing:
        shown = ", ".join(f"{k:0{width}d}" for k in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise ValueError(f"{folder}: split {split!r} has {len(files)} of its {total} shards; "
                         f"missing: {shown} (an interrupted download? fetch it again)")


#: The released datasets by their name on the hub (docs/released-pollux.md): what a missing local folder of the
#: same name (``data/POLLUX``, as the README lays the download out) was most likely meant to hold.
_RELEASED_DATASETS = {name.lower(): f"ai-forever/{name}" for name in ("POLLUX", "POLLUX-instructions")}


#: The folders the docs download to and write in (``data/POLLUX``, ``runs/eval/...``): a name under one is a path
#: not made yet on a fresh clone too, where the folder itself does not exist.
_PROJECT_FOLDERS = ("data", "runs")


def looks_like_dataset_name(name: str, path: Path) -> bool:
    """Whether a source that is no file or folder is a hub dataset's ``owner/name``: one slash, no data file's suffix,
    not a path's start (``./``, ``../``, ``/``, ``~``), and an owner that is none of ``_PROJECT_FOLDERS``
    (``data/POLLUX`` is a path not yet downloaded; asking the hub for it cost ~24 s of retries). A local folder named
    like the owner does not make it a path: one dataset downloaded hub-style (``--local-dir ai-forever/POLLUX``)
    would keep its sibling ``ai-forever/POLLUX-instructions`` from ever reaching the hub."""
    owner = name.split("/", 1)[0]
    return (name.count("/") == 1 and not name.startswith((".", "/", "~"))
            and path.suffix.lower() not in {".jsonl", ".json", ".parquet"} and owner not in _PROJECT_FOLDERS)


def near_sample(name: str) -> bool:
    """Whether ``name`` is the bundled sample's name (``judge.sample_data.SAMPLE_DATA``) or a near miss of it
    (``sampel``, ``Samples``), as a mistyped ``--data`` would be."""
    import difflib

    from judge.sample_data import SAMPLE_DATA

    return bool(difflib.get_close_matches(name.lower(), [SAMPLE_DATA], n=1, cutoff=0.75))


def _missing(name: str) -> FileNotFoundError:
    """The error of a source that is not there, with the download command when its last part names a released
    dataset (a missing ``data/POLLUX`` is the benchmark not downloaded yet). A source that is there but is no
    regular file or folder (a pipe, ``/dev/stdin``, a device, a socket) or a link to nothing is said to be that:
    "no such file" sent its user looking for a typo in a path that exists."""
    path = Path(name)
    kind = special_file_kind(path)
    if kind:
        return FileNotFoundError(f"{name}: {kind}, not a regular file or folder; the loaders read a .jsonl, .json or "
                                 ".parquet file, a folder of them or a dataset name (write a stream to a file first)")
    if path.is_symlink():
        return FileNotFoundError(f"{name}: a link to {os.readlink(path)}, which is not there")
    released = _RELEASED_DATASETS.get(path.name.lower())
    if released is None:
        from judge.sample_data import SAMPLE_DATA

        # `--data sampel`: the bare name the commands reading judged records take, misspelt, reads as a path that is
        # not there. The name itself arrives here only from a reader that does not take it (judge-eval rank's
        # instructions, judge.load_records): asked whether it meant what it gave, its user would learn nothing.
        if name != SAMPLE_DATA and near_sample(name):
            return FileNotFoundError(f"{name}: no such file or folder; did you mean `{SAMPLE_DATA}` (the bundled "
                                     "sample data)?")
        return FileNotFoundError(f"{name}: no such file or folder")
    return FileNotFoundError(f"{name}: no such file or folder; to read the released {released}, download it first "
                             f"(hf download {released} --repo-type dataset --local-dir {name}) or pass {released} "
                             "itself on a machine with hub access (docs/released-pollux.md)")


def _refuse_split_of_a_file(path: Path, split: str | None) -> None:
    """ValueError for a ``split`` asked of a single file, which holds one split: a ``--split`` it cannot honour was
    ignored, and the whole file read as the split asked for. Its own split is taken: the shard name's
    (``test-00000-of-00001.parquet``, with or without a fingerprint after it), the folder's for a file named by a
    number (``train/0000.parquet``), or the file's stem (``train.jsonl``, as the synthetic split stage writes it)."""
    if split is None or not path.is_file():
        return
    shard = _shard_name(path.name)
    # the hub's Parquet conversion names its files by number inside a folder named after their split
    # (``default/train/0000.parquet``)
    own = shard.group("split") if shard else path.parent.name if path.stem.isdigit() else path.stem
    if split != own:
        raise ValueError(f"{path}: a single file, which holds no split {split!r} (a split is chosen from a folder of "
                         "shards, a datasets folder or a dataset name); leave out the split to read the whole file")


def _cached_dataset(source: str | Path, split: str | None) -> str | Path:
    """A dataset name's snapshot in the Hugging Face cache, when it holds the Parquet shards of ``split`` (the
    default split when None): what ``hf download NAME --repo-type dataset`` (without ``--local-dir``) leaves, read as
    the folder of shards it is, offline, as ``judge.checkpoints.resolve_checkpoint`` reads a judge's; else ``source``
    as given (a file, a folder, a name the cache lacks or holds another split of, for ``datasets.load_dataset`` to
    try: it did not find such a snapshot offline)."""
    path, name = Path(source), str(source)
    if path.exists() or not looks_like_dataset_name(name, path):
        return source
    from judge.checkpoints import CheckpointNotFound, resolve_checkpoint

    try:
        folder = resolve_checkpoint(name, allow_download=False, repo_type="dataset")
        return folder if _parquet_shards(folder, split) else source
    except (CheckpointNotFound, ValueError):  # not cached, or not this split's shards (or not all of them)
        return source


def _dataset_rows(source: str, path: Path, split: str | None) -> Iterable[tuple[str, int, Mapping]]:
    import datasets

    if path.is_dir():
        loaded = datasets.load_from_disk(str(path))
    else:
        try:
            loaded = datasets.load_dataset(source, split=split)
        except Exception as err:  # noqa: BLE001 - any failure here means the name could not be loaded; say how to fix it
            released = _RELEASED_DATASETS.get(source.split("/")[-1].lower())
            hint = (f"; the released dataset is {released}" if released and released != source else "")
            raise FileNotFoundError(
                f"{source}: not a local file or folder, and datasets.load_dataset({source!r}) failed "
                f"({type(err).__name__}: {err}){hint}. If the hub is unreachable from this machine, download the "
                f"dataset where it is reachable (hf download {released if hint else source} --repo-type "
                "dataset --local-dir DIR) and pass DIR, or set HF_HUB_OFFLINE=1 with a populated Hugging Face cache"
            ) from err
    if isinstance(loaded, datasets.DatasetDict):
        if split is None:
            split = next(iter(loaded)) if len(loaded) == 1 else "test"
        if split not in loaded:
            raise ValueError(f"{source}: no split {split!r}; available: {sorted(loaded)}")
        loaded = loaded[split]
    elif path.is_dir() and split is not None and split != _own_split(path, loaded):
        # (a dataset name's split is load_dataset's to choose, above)
        _refuse_split_of_a_dataset(source, path, loaded, split)
    # A dataset has one set of columns, as a Parquet table has (a JSONL file's rows each have their own, and a
    # hand-written one may leave optional columns out): checked as the Parquet path checks them.
    if problem := released_columns_problem(loaded.column_names):
        raise RecordError(source, None, problem[0], problem[1])
    return ((source, RowIndex(index), row) for index, row in enumerate(loaded))


def _own_split(path: Path, loaded) -> str:
    """The split a ``save_to_disk`` folder of one ``datasets.Dataset`` holds: the one saved with it, else the
    folder's name, as a file named by a number takes its folder's (``_refuse_split_of_a_file``):
    ``DatasetDict.save_to_disk`` writes each split to a folder of its name (``dataset/train``), and a Dataset built by
    ``Dataset.from_list``, as the synthetic stages build theirs, records no split."""
    return Path(os.path.abspath(path)).name if loaded.split is None else str(loaded.split)


def _refuse_split_of_a_dataset(source: str, path: Path, loaded, split: str) -> None:
    """ValueError for a ``split`` asked of one ``datasets.Dataset`` (a ``save_to_disk`` folder of one split) that is
    not its own (``_own_split``): read whole, it would stand for the split asked for, as a single file would
    (``_refuse_split_of_a_file``)."""
    own = (f"it holds split {str(loaded.split)!r}" if loaded.split is not None
           else f"saved with no split, it holds its folder's name, {_own_split(path, loaded)!r}")
    raise ValueError(f"{source}: a single dataset, which holds no split {split!r} ({own}) (a split is chosen from a "
                     "folder of shards, a DatasetDict or a dataset name); leave out the split to read the whole "
                     "dataset")


def load_record_columns(source: str | Path, split: str | None = None, make_id: bool = False) -> tuple[RecordColumns, LoadReport]:
    """Load judged items as columns (``judge.record_columns.RecordColumns``) and report what was read.

    JSONL and Parquet sources whose columns pass the column checks are read without building a Python object per
    record; any other source (or one a check flags) is read row by row, as ``load_records_report`` reads it. Same
    arguments, errors and report as ``load_records_report``. The columns' texts hold Arrow memory until they are
    dropped; a caller that drops them and goes on working gives it back then
    (``pyarrow.default_memory_pool().release_unused()``), or Arrow's allocator keeps it resident.
    """
    source = _cached_dataset(source, split)
    _refuse_split_of_a_file(Path(source), split)
    tables = _parquet_tables(Path(source), split)
    found = _column_wise(source, make_id, tables)
    if found is not None:
        # The reading's spare memory goes back now (``_release_arrow_memory``), not at the run's end. The columns'
        # texts are Arrow arrays over the file's bytes, freed only when the caller drops the columns: its callers hold
        # them to the end of their work (score and experts to their end; a report page until its items are built,
        # then only the page is written), so none releases after.
        del tables
        _release_arrow_memory()
        return found
    records, report = _row_wise(source, split, make_id, tables)
    return RecordColumns.from_records(records, str(source)), report


def load_records_report(source: str | Path, split: str | None = None, make_id: bool = False) -> tuple[list[JudgeRecord], LoadReport]:
    """Load judged items and report what was read.

    Args:
        source: a ``.jsonl`` / ``.json`` (a list of rows) / ``.parquet`` file; a folder of Parquet shards as the hub
            lays it out (``<dir>/data/test-00000-of-00003.parquet`` ..., or the shards directly in ``<dir>``; read
            in name order); a folder written by ``datasets.save_to_disk``; or a dataset name: its snapshot in the
            Hugging Face cache when one holds Parquet shards (``hf download NAME --repo-type dataset``), read
            offline as that folder, else what ``datasets.load_dataset`` can reach (a hub name on machines that have
            access, or with ``HF_HUB_OFFLINE=1`` and its own populated cache).
        split: the split to take from a shard folder, a ``DatasetDict`` or a named dataset (default: the only
            split, or "test"); a single file holds one split, and any other is refused (``_refuse_split_of_a_file``),
            as a ``save_to_disk`` folder of one Dataset holds its own (its folder's name when saved with none).
        make_id: derive ids for rows that have none even when other rows have one (a source with no ``id`` column
            at all gets derived ids without it).

    Returns:
        (records in source order, ``LoadReport``).

    Raises:
        RecordError: a bad row, naming the source, row and field.
        FileNotFoundError: a path that does not exist and is not a dataset name, or a dataset name that
            ``datasets.load_dataset`` cannot load (the message says how to fix it).
        ValueError: an unknown file type, a split the source does not hold (or any split but its own asked of a
            single file), a shard folder missing shards.
    """
    source = _cached_dataset(source, split)
    _refuse_split_of_a_file(Path(source), split)
    tables = _parquet_tables(Path(source), split)
    found = _column_wise(source, make_id, tables)
    if found is not None:
        del tables  # as in load_record_columns: the reading's spare memory back before the records are built
        _release_arrow_memory()
        columns, report = found
        del found
        records = columns.records()
        # The columns' texts are Arrow arrays over the file's bytes: that memory is free only once the records are
        # built and the columns dropped, and given back only when released then (else it stays resident for the
        # rest of the run: more than the file's size).
        del columns
        _release_arrow_memory()
        return records, report
    return _row_wise(source, split, make_id, tables)


def _column_wise(source: str | Path, make_id: bool, tables: list[tuple[str, Any]] | None
                 ) -> tuple[RecordColumns, LoadReport] | None:
    """A JSONL file, or the Parquet ``tables`` (``_parquet_tables``), read column-wise; None for other sources and
    for tables a column check flags (read row by row then)."""
    path, name = Path(source), str(source)
    if tables is not None:
        if _too_many_experts(tables):
            return None
        found = columns_from_tables(tables, name, make_id)
    elif path.is_file() and path.suffix.lower() == ".jsonl":
        table = _jsonl_table(path)
        if table is None or _too_many_experts([(name, table)]):
            return None
        found = columns_from_tables([(name, table)], name, make_id, jsonl=True)
    else:
        return None
    return found


#: The per-expert list columns, each bounded by ``MAX_EXPERTS_PER_ITEM``.
_EXPERT_LISTS = ("annotations", "expert_scores", "expert_feedback", "expert_ids")


def _too_many_experts(tables: list[tuple[str, Any]]) -> bool:
    """Some row of the ``tables`` lists more than ``MAX_EXPERTS_PER_ITEM`` experts: checked on the lists' lengths
    before the column-wise reader builds anything, so that the row path refuses that row with its line and field."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for _, table in tables:
        if table is None:
            continue
        for name in _EXPERT_LISTS:
            if name not in table.column_names:
                continue
            column = table.column(name)
            kind = column.type
            if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)):
                continue  # not a list: the column checks flag it, and the row path names the row
            longest = pc.max(pc.list_value_length(column)).as_py()
            if longest is not None and longest > MAX_EXPERTS_PER_ITEM:
                return True
    return False


def _row_wise(source: str | Path, split: str | None, make_id: bool, tables: list[tuple[str, Any]] | None = None
              ) -> tuple[list[JudgeRecord], LoadReport]:
    """Every source, row by row: each row validated by ``JudgeRecord.from_row`` (Parquet from the ``tables``
    already read for the column checks, when given)."""
    path = Path(source)
    name = str(source)
    if tables is not None:
        return records_and_report(_drained(tables), name, make_id)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            return records_and_report(jsonl_rows(path), name, make_id)
        if suffix == ".json":
            rows = _json_file(path)
            if not isinstance(rows, list):
                raise RecordError(name, None, None, "a .json source must hold a list of rows (use .jsonl for one per line)")
            return records_and_report(((name, RowIndex(index), row) for index, row in enumerate(rows)), name, make_id)
        if suffix == ".parquet":
            return records_and_report(_parquet_rows(path), name, make_id)
        raise ValueError(f"{name}: unknown file type {suffix!r} (expected .jsonl, .json or .parquet)")
    if path.is_dir():
        if not any((path / marker).is_file() for marker in _SAVE_TO_DISK_FILES):
            shards = _parquet_shards(path, split)
            if not shards:
                raise _no_table_in(name, path)
            return records_and_report((row for shard in shards for row in _parquet_rows(shard)), name, make_id)
        return records_and_report(_dataset_rows(name, path, split), name, make_id)
    if looks_like_dataset_name(name, path):
        return records_and_report(_dataset_rows(name, path, split), name, make_id)
    raise _missing(name)


def _no_table_in(name: str, path: Path) -> FileNotFoundError:
    """A folder read as a table that holds none: a folder of JSONL or JSON files (``--data data/`` for
    ``data/train.jsonl``) is told the file to give, since a folder is read only as Parquet shards or a dataset."""
    # train.jsonl first (a split stage's folder: its training side), then JSONL, the records' form; a dropped.jsonl
    # (a stage's) or X.dropped.jsonl (build-data's, beside X.jsonl) holds rows left out, never the file to train on.
    files = sorted((p.name != "train.jsonl", p.suffix.lower() != ".jsonl", p.name) for p in path.iterdir()
                   if p.is_file() and p.suffix.lower() in (".jsonl", ".json") and not p.name.endswith("dropped.jsonl"))
    names = [name for *_, name in files]
    hint = (f"; it holds {', '.join(names[:3])}{', ...' if len(names) > 3 else ''}: give the file itself "
            f"({path / names[0]})" if names else "")
    return FileNotFoundError(f"{name}: a folder with neither Parquet shards (data/*.parquet, *.parquet) nor a "
                             f"datasets.save_to_disk layout{hint}")


def _json_file(path: Path) -> Any:
    """A ``.json`` source's content, or a ``RecordError`` naming the file (one document: no row to name; a key given
    twice in one object names its row and field). A byte order mark at the file's start is skipped."""
    data = path.read_bytes()
    start = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    try:
        text = data[start:].decode("utf-8")
        return _loads(text)
    except UnicodeDecodeError as err:
        raise RecordError(str(path), None, None, f"not UTF-8 text (at byte {err.start + start})") from None
    except _RepeatedKey:
        raise _repeated_key(str(path), None, text) from None
    except JSON_REFUSALS as err:
        raise RecordError(str(path), None, None, unreadable_json(err, whole_file=True)) from None


def source_rows(source: str | Path, split: str | None = None) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    """Every row of a data source, unvalidated, as ``(where, row index, row)`` (the index a ``LineIndex`` for a JSONL
    line, a ``RowIndex`` for a table's row: ``judge.records.row_place`` names it): the sources ``load_records_report``
    reads (a JSONL / JSON / Parquet file, a folder of hub shards, a ``save_to_disk`` folder, a dataset name), for
    tables whose rows are not judged items (``ai-forever/POLLUX-instructions``: ``eval.ranking.rank``).

    Raises:
        RecordError: a JSONL line or a .json file that is not readable JSON; FileNotFoundError / ValueError: as
            ``load_records_report``.
    """
    source = _cached_dataset(source, split)
    path = Path(source)
    name = str(source)
    _refuse_split_of_a_file(path, split)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            yield from jsonl_rows(path)
        elif suffix == ".json":
            rows = _json_file(path)
            if not isinstance(rows, list):
                raise RecordError(name, None, None, "a .json source must hold a list of rows (use .jsonl for one per line)")
            yield from ((name, RowIndex(index), row) for index, row in enumerate(rows))
        elif suffix == ".parquet":
            yield from _parquet_rows(path)
        else:
            raise ValueError(f"{name}: unknown file type {suffix!r} (expected .jsonl, .json or .parquet)")
    elif path.is_dir() and not any((path / marker).is_file() for marker in _SAVE_TO_DISK_FILES):
        shards = _parquet_shards(path, split)
        if not shards:
            raise _no_table_in(name, path)
        for shard in shards:
            yield from _parquet_rows(shard)
    elif path.is_dir() or looks_like_dataset_name(name, path):
        yield from _dataset_rows(name, path, split)
    else:
        raise _missing(name)


def load_records(source: str | Path, split: str | None = None, make_id: bool = False) -> list[JudgeRecord]:
    """Load judged items (``load_records_report`` without the report; its counts are logged).

    Returns:
        The records, in source order.
    """
    records, report = load_records_report(source, split=split, make_id=make_id)
    logger.info("%s", report.summary())
    return records


def write_jsonl(records: Iterable[JudgeRecord], path: str | Path) -> Path:
    """Write records as JSONL in the project's schema (UTF-8, Cyrillic unescaped); ``load_records`` reads them back.
    ``path`` is replaced whole: a kill or a failing record leaves the earlier file, never a cut one read as whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(handle: Any) -> None:
        for number, record in enumerate(records):
            row = record.to_dict()
            try:  # strict JSON: no NaN token, which json.loads reads back but other tools refuse
                line = json.dumps(row, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError):  # a Parquet date, duration or binary column, a NaN, a lone surrogate
                raise _unwritable(record.origin or (str(path), number), row) from None
            handle.write(line + b"\n")

    return write_atomically(path, write)


def _unwritable(origin: tuple[str, int], row: dict[str, Any]) -> RecordError:
    """The error of a row JSON (or UTF-8) cannot hold, naming its source, row and the first column at fault."""
    for name, value in row.items():
        try:
            json.dumps([name, value], ensure_ascii=False, allow_nan=False).encode("utf-8")
        except UnicodeEncodeError as err:  # (a ValueError too)
            return RecordError(*origin, name, f"not UTF-8 text ({err.reason}: {err.object[err.start:err.end]!r})")
        except ValueError:
            return RecordError(*origin, name, "NaN or an infinity, which JSON has no number for")
        except TypeError as err:
            return RecordError(*origin, name, f"a value JSON cannot hold ({err})")
    return RecordError(*origin, None, "a row JSON cannot hold")

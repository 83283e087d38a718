"""The predictions file of a ``judge-eval run``: ``predictions.jsonl``, one row per judged item, and its schema.

``PredictionRow`` is the row: ``run`` writes it, ``score`` (``eval.scoring.item_table.build_table``), the official
evaluator and the report pages read it as one Arrow table (``read_prediction_table``; ``read_predictions`` gives its
rows as dicts). Rows are appended as answers arrive (a
``judge.plumbing.journal`` journal: strict reading, a torn last line dropped); a rerun resumes from the file
(``resume_predictions``).

Why one module of ~700 lines: the Arrow table reader and the line reader check one row schema (``PredictionRow``),
and the table reader hands a file it doubts to the line reader, which names the bad row; apart, each would restate
the other's rules.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import logging
import operator
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.plumbing.console_logging import visible
from judge.plumbing.json_reading import (UTF8_BOM, arrow_may_read, arrow_reads_lines_alike, finite_number,
                                        got_words, json_or_none, lone_surrogate_at, shown_value)
from judge.plumbing.journal import (JournalError, is_whole_last_line, iter_journal_lines, log_torn_tail,
                                   rewrite_journal)
from judge.records import SCORE_BOUND, LineIndex, row_place, value_words
from judge.wire_fields import ScoreSource, checked_json_fields

if TYPE_CHECKING:  # pyarrow is imported where a table is built
    import pyarrow as pa

__all__ = ["PredictionRow", "PREDICTION_FIELDS", "REQUEST_FAILED", "SCORE_BOUND", "iter_predictions",
           "log_failed_requests", "prediction_rows", "prediction_table", "read_prediction_table", "read_predictions", "refuse_repeated_ids", "resume_predictions"]

log = logging.getLogger("judge_eval.predictions")

# The error code of a row whose request failed (after retries, or refused by the server): such rows are retried
# on the next run, unlike parse failures, which are the judge's answer.
REQUEST_FAILED = "request_failed"


def log_failed_requests(logger: logging.Logger, n: int, first: str, reason: str, path: Path, *,
                        to: str | None = None) -> None:
    """The warning a run (pointwise, pairwise, or ``rank``'s answers) ends with where ``n`` requests failed: the
    first written (``first``, e.g. "item 'x'") and its reason, and the file whose rows hold them, which a rerun asks
    again: the reasons are otherwise only in those rows. The reason holds the server's words, its control characters
    shown as escapes (``judge.plumbing.console_logging.visible``; the row keeps them as said). ``to``: whom the
    requests asked, where a run asks more than its judge ("the candidate": ``rank`` asks it for the answers, then
    the judge)."""
    logger.warning("%d request%s%s failed (the first written, %s: %s): each is a row of %s with its reason, and a "
                   "rerun into the same --out asks them again", n, "" if n == 1 else "s", f" to {to}" if to else "",
                   first, visible(reason), path)


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
        finish_reason: why the judge's answer ended, as its server said (``stop``; ``length``: ``max_tokens`` cut it),
            None where no answer came (a failed request, a prompt too long for the context), the server said none,
            or the row was written before rows kept it.
        score_source: a ``judge.wire_fields.ScoreSource`` value (``verdict``, ``regression_head``), None without a score.
        in_scale: False for a number outside the rubric's scale (scored, as the paper does); None when unknown.
        regression_score: a regression head's raw (unclipped) value.
        expected_score, confidence, score_probs: seq2seq judges on judge-serve: the score token's distribution.
        latency_s: seconds of the request that produced the row (shared by the criteria of one ``/v1/judge``).
        content_key: ``record_content_key`` of the item the judge was asked about (None in rows written before it
            was kept).
    """

    id: str
    judge: str | None = None
    raw_output: str | None = None
    feedback: str = ""
    score: float | None = None
    parse_ok: bool = False
    error: str | None = None
    reason: str = ""
    finish_reason: str | None = None
    score_source: str | None = None
    in_scale: bool | None = None
    regression_score: float | None = None
    expected_score: float | None = None
    confidence: float | None = None
    score_probs: dict[str, float] | None = None
    latency_s: float | None = None
    content_key: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "row") -> PredictionRow:
        """A row from its JSON object; absent fields take their defaults (rows of older runs lack some).

        Raises:
            ValueError: naming ``where`` and the field: no ``id``, a key that is not a field
                (``judge.wire_fields.checked_json_fields``), a value of the wrong JSON type (an ``id`` that is not a
                string, a ``parse_ok`` that is not a boolean: a value of the wrong type is never converted; an integer
                in a number field is kept as the file holds it, and ``prediction_table`` holds it as the float its
                column holds), or a ``score`` without its
                ``parse_ok`` (absent or null: a run writes both, and no default can say whether the verdict parsed;
                an absent ``parse_ok`` beside no score is false), a ``score_source`` no run writes, or a text holding a lone surrogate (a JSON
                ``\\ud800`` escape with no pair: no UTF-8 reader, Arrow's included, takes it).
        """
        values = checked_json_fields(cls, data, where, noun="prediction field")
        for key, value in values.items():
            kind = _JSON_KINDS[key]
            if value is None and key != "id":
                continue
            if not _is_kind(value, kind):
                # a list or an object shows its start too (got_words names it by its kind alone)
                container = isinstance(value, (list, dict))
                got = f"{value_words(value)} {shown_value(value)}" if container else got_words(value)
                raise ValueError(f"{where}.{key}: expected {kind}, got {got}")
            if kind == _TEXT and (at := lone_surrogate_at(value)) is not None:
                # Arrow's reader refused the file naming no field, a 0-based row
                raise ValueError(f"{where}.{key}: not valid Unicode text: a lone surrogate (U+{ord(value[at]):04X}, a "
                                 f"JSON \\u escape with no pair) at character {at}")
            if key in _SCORE_FIELDS and abs(value) > SCORE_BOUND:
                raise ValueError(f"{where}.{key}: {shown_value(value)} is not a judge's score (its size is over "
                                 f"{SCORE_BOUND:g}; a rubric's scale is a few points)")
        if values.get("score_source") is not None and values["score_source"] not in ScoreSource.ALL:
            # Read as "not the head's", it silently made the scores a verdict's (score's MAE target is the mode for
            # verdicts, the mean for a head's) where the row meant something else.
            raise ValueError(f"{where}.score_source: {shown_value(values['score_source'])} is not one of "
                             f"{', '.join(ScoreSource.ALL)}, what `judge-eval run` writes beside a score")
        if values.get("score") is not None and values.get("parse_ok") is None:
            # Every run writes parse_ok, true beside each score: taking the default (false) made a scored row a
            # parse failure, and score's line said "did not parse" where POLLUX's evaluator counted it parsed.
            said = "null" if "parse_ok" in values else "absent"
            raise ValueError(f"{where}.parse_ok: {said} in a row with score {shown_value(values['score'])}; "
                             "`judge-eval run` writes parse_ok in every row (true beside a score): whether this "
                             "verdict parsed is unknown")
        if values.get("parse_ok") is True and values.get("score") is None:
            # The reverse: a parsed verdict's score is what `score` reads; without it the row was silently counted
            # as a parse failure.
            said = "null" if "score" in values else "absent"
            raise ValueError(f"{where}.score: {said} in a row with parse_ok true; `judge-eval run` writes the score "
                             "of every parsed verdict: what this verdict gave is unknown")
        if values.get("parse_ok") is False and values.get("score") is not None:
            # A verdict that did not parse has no score: `score` counted the row a failure and dropped the number,
            # while the POLLUX-eval line parsed raw_output again; which of the two the row means is unknown.
            raise ValueError(f"{where}.score: {shown_value(values['score'])} in a row with parse_ok false; "
                             "`judge-eval run` writes no score beside a verdict that did not parse: set score to "
                             "null, or parse_ok to true if the verdict parsed")
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

# The JSON type of each field's value (null is allowed for every field but ``id``).
_TEXT, _NUMBER, _FLAG, _PROBS = "a string", "a finite number", "a boolean", "an object of finite numbers"
_JSON_KINDS = {"id": _TEXT, "judge": _TEXT, "raw_output": _TEXT, "feedback": _TEXT, "score": _NUMBER,
               "parse_ok": _FLAG, "error": _TEXT, "reason": _TEXT, "finish_reason": _TEXT, "score_source": _TEXT,
               "in_scale": _FLAG, "regression_score": _NUMBER, "expected_score": _NUMBER, "confidence": _NUMBER,
               "score_probs": _PROBS, "latency_s": _NUMBER, "content_key": _TEXT}
assert set(_JSON_KINDS) == set(PREDICTION_FIELDS)


#: The fields holding a score on the rubric's scale (or a regression head's value near it), none of them past
#: ``judge.records.SCORE_BOUND`` in size, the experts' own bound: 1e300 passed as finite and the metrics overflowed
#: in numpy (warnings, infinite MAEs).
_SCORE_FIELDS = ("score", "regression_score", "expected_score")


def _is_kind(value: Any, kind: str) -> bool:
    if kind == _TEXT:
        return type(value) is str
    if kind == _NUMBER:  # finite: a NaN or an infinity (Python's json writes and reads them) is no score
        return finite_number(value)
    if kind == _FLAG:
        return type(value) is bool
    return type(value) is dict and all(finite_number(v) for v in value.values())


def _arrow_read(body: bytes, keys) -> pa.Table | None:
    """``body`` read by Arrow with every column typed and ``keys`` as score_probs' fields; None where Arrow refuses
    it (a key outside them, an unknown field, a value of another type)."""
    import pyarrow as pa
    import pyarrow.json as pj

    options = pj.ParseOptions(explicit_schema=_table_schema(keys), unexpected_field_behavior="error")
    try:
        return pj.read_json(pa.BufferReader(body), parse_options=options,
                            read_options=pj.ReadOptions(block_size=max(len(body), 1 << 20)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def read_prediction_table(path: str | Path) -> pa.Table:
    """The rows of a ``predictions.jsonl`` (a run folder works too) as one Arrow table: a column per
    ``PREDICTION_FIELDS`` name, in that order, one row per line, in file order (repeated ids kept).

    Read by Arrow's JSON reader in one pass (~0.2 s for the full test's 160,000 rows, where ``json.loads`` per line
    and a dict per row took ~1.5 s), with the column types fixed from ``PredictionRow``: a value of another type
    stops it. Absent fields take ``PredictionRow``'s defaults (null; "" for ``feedback`` and ``reason``, false for
    ``parse_ok`` in a row without a score: one with a score and no ``parse_ok`` is refused); ``score_probs`` is a struct column (each row's object, a key absent from it null). A last line without its
    newline is read when it is a whole row, else (the process was killed while writing it) dropped, with
    ``judge.plumbing.journal``'s warning, as ``iter_predictions`` reads it; blank lines are skipped.

    Raises:
        ValueError: naming ``file: line N`` (blank lines counted) and the field, for the first
            row that is not a prediction row (``PredictionRow.from_json``'s checks) or holds a string that is not
            UTF-8, or ``file:line`` for a line that is not a JSON object (``judge.plumbing.journal``'s wording);
            naming the row whose ``score_probs`` adds a key past the file's 256 (``iter_predictions`` too).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    given, path = path, _file(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no predictions file")
    data = path.read_bytes()
    _refuse_not_jsonl(given, path, data)
    end = data.rfind(b"\n") + 1  # as judge.plumbing.journal: complete lines end with a newline
    body, tail = data[:end], data[end:]
    if is_whole_last_line(tail):  # a row without its newline (written by hand): read, as iter_predictions reads it
        body = data + b"\n"
    elif tail.strip():
        log_torn_tail(path, tail)
    # Read as the line-by-line reader (judge.plumbing.journal, json.loads) reads: a UTF-8 byte order mark and CRLF
    # line ends (a file saved on Windows) are taken; a raw CR can be nothing else in JSON, whose strings escape it.
    body = body.removeprefix(UTF8_BOM)
    if b"\r" in body:
        body = body.replace(b"\r\n", b"\n")
        if b"\r" in body:  # whitespace to json.loads, a line end to Arrow: read as the line reader reads
            return prediction_table(iter_predictions(path))
    # Arrow takes one object per line and skips blank lines; a line that is not an object (``null`` crashes
    # pyarrow 26's reader) is refused before it, for the row checks to name. An object after spaces or tabs (JSON's
    # whitespace: json.loads takes it) goes on, to the line reader below (arrow_reads_lines_alike).
    lines = body.count(b"\n")
    # Lines Arrow reads as json.loads does each open an object at their first byte: the check below for a line
    # that does not (one more pass over the whole file) is asked only where Arrow's check fails.
    alike = arrow_reads_lines_alike(body, lines)
    if not alike and body and int(body.startswith(b"{")) + body.count(b"\n{") != lines:
        kept = [line for line in body.split(b"\n") if line.strip()]
        if any(not line.lstrip(b" \t").startswith(b"{") for line in kept):
            _raise_first_bad_row(path, None)
        body = b"\n".join(kept) + b"\n" if kept else b""
        lines = len(kept)
        alike = arrow_reads_lines_alike(body, lines)
    if not body:
        return pa.table({name: pa.array([], type=_arrow_types().get(name, pa.null())) for name in PREDICTION_FIELDS})
    if not arrow_may_read(body):  # nesting that may crash Arrow's reader: the line reader names the line
        return prediction_table(iter_predictions(path))
    if not alike:  # an object across lines, "-NaN": as the line reader reads them
        return prediction_table(iter_predictions(path))
    # Every column typed, score_probs' keys too: Arrow would otherwise build a column, as long as the file, of every
    # key any row gives (rows times distinct keys). A key outside them stops it: a score_probs key the first row
    # lacks (the keys the whole file gives are looked for once, and read again), or an unknown field, refused by the
    # line reader naming its row.
    keys = _first_probability_keys(body)
    table = None if keys is None else _arrow_read(body, keys)
    if table is None and keys is not None:
        found = _probability_keys(body)  # the whole file's keys: one scan gives them all
        if found is not None and not set(found) <= set(keys):
            table = _arrow_read(body, found)
    if table is None:  # no key left to add: the line reader names a bad row, and reads a file it accepts
        return prediction_table(iter_predictions(path))
    if _null_probability_may_hide(body, table.column("score_probs")):
        # its struct column holds an absent key and a null value alike, as null: the line reader tells them apart.
        # Looked for before the keys no row gives are dropped, a key null in every row among them.
        return prediction_table(iter_predictions(path))
    table = _without_absent_keys(table)
    if table.num_rows != lines:  # two objects on one line, read as two rows: json.loads refuses the line
        _raise_first_bad_row(path, None)
    # Arrow's JSON reader does not check that a string (or a key) is UTF-8: a byte that is not would fail later, in
    # to_pylist, with no file or row named. A key is decoded when its name is read, a value by the full validation
    # (one pass over the string buffers).
    try:
        [child.name for field in table.schema for child in field.flatten()]  # every key, score_probs' too
        table.validate(full=True)
    except UnicodeDecodeError:  # a key: the line reader names the line
        _raise_first_bad_row(path, None)
    except pa.ArrowInvalid:  # a value: named by row and field
        _raise_bad_text(path, table)
    # No column outside PREDICTION_FIELDS and no score_probs key of another type than a float reaches here: the
    # explicit schema read with unexpected_field_behavior "error" refuses them (the line reader then names the row),
    # and _without_absent_keys keeps a subset of that schema's float keys, or drops the column.
    if table.column("id").null_count:
        _raise_first_bad_row(path, None)
    probs = table.column("score_probs") if "score_probs" in table.column_names else None
    numbers = [table.column(n) for n, kind in _JSON_KINDS.items() if kind == _NUMBER and n in table.column_names]
    if probs is not None:
        numbers += [pc.struct_field(probs, [k]) for k in range(probs.type.num_fields)]
    if any(pa.types.is_floating(c.type) and not pc.all(pc.is_finite(c)).as_py() in (True, None) for c in numbers):
        _raise_first_bad_row(path, None)  # a NaN or infinity (Arrow reads them as Python's json writes them)
    scores = [table.column(n) for n in _SCORE_FIELDS if n in table.column_names]
    if any(pa.types.is_floating(c.type) and (pc.max(pc.abs(c)).as_py() or 0) > SCORE_BOUND for c in scores):
        _raise_first_bad_row(path, None)  # a number no judge's score reaches: the row checks name it
    sources = pc.drop_null(table.column("score_source")) if "score_source" in table.column_names else None
    if sources is not None and len(sources) and not pc.all(pc.is_in(sources, pa.array(ScoreSource.ALL))).as_py():
        _raise_first_bad_row(path, None)  # a source no run writes: the row checks name it
    if "score" in table.column_names and table.column("score").null_count < table.num_rows:
        parsed = table.column("parse_ok") if "parse_ok" in table.column_names else None
        if parsed is None or pc.any(pc.and_(pc.is_valid(table.column("score")), pc.is_null(parsed))).as_py():
            _raise_first_bad_row(path, None)  # a score without its parse_ok: PredictionRow.from_json names the row
        if pc.any(pc.and_(pc.is_valid(table.column("score")), pc.invert(parsed))).as_py():
            _raise_first_bad_row(path, None)  # a score beside parse_ok false: named as above
    if "parse_ok" in table.column_names and pc.any(table.column("parse_ok")).as_py():
        score = table.column("score") if "score" in table.column_names else None
        if score is None or pc.any(pc.and_(table.column("parse_ok"), pc.is_null(score))).as_py():
            _raise_first_bad_row(path, None)  # a parsed verdict without its score: named as above
    columns = {}
    for name in PREDICTION_FIELDS:
        if name in table.column_names:
            column = table.column(name)
        else:
            column = pa.nulls(table.num_rows, type=_arrow_types().get(name, pa.null()))
        if name in ("feedback", "reason"):
            column = pc.fill_null(column, "")
        elif name == "parse_ok":
            column = pc.fill_null(column, False)
        columns[name] = column
    return pa.table(columns)


#: The most keys (score levels) the ``score_probs`` objects of a predictions file may give: each is a column as long
#: as the file. A file giving more is refused by every reader, naming the row that adds the first key past them.
_MAX_PROBABILITY_KEYS = 256

#: A ``score_probs`` object in the raw lines (its text between the braces), stepping over each key as a whole string
#: as ``_NULL_PROBABILITY`` does (a key may hold a brace).
_PROBABILITY_OBJECT = re.compile(rb'"score_probs"[ \t]*:[ \t]*\{((?:[^"{}]|"(?:[^"\\]|\\.)*")*)\}')
#: A key inside such an object: a JSON string before a colon.
_PROBABILITY_KEY = re.compile(rb'"((?:[^"\\]|\\.)*)"[ \t]*:')


def _first_probability_keys(body: bytes) -> list[str] | None:
    """The keys of the first row's ``score_probs`` object (none where it gives none); None where the first line is
    not a JSON object (the line reader names it) or gives more than ``_MAX_PROBABILITY_KEYS``."""
    end = body.find(b"\n")
    row = json_or_none(body[:end] if end >= 0 else body)
    if not isinstance(row, dict):
        return None
    probs = row.get("score_probs")
    keys = list(probs) if isinstance(probs, dict) else []
    return keys if len(keys) <= _MAX_PROBABILITY_KEYS else None


def _probability_keys(body: bytes) -> list[str] | None:
    """Every key of the file's ``score_probs`` objects, in the order they first appear; None past
    ``_MAX_PROBABILITY_KEYS`` or for a key that is not a JSON string (the line reader reads such files)."""
    keys: dict[bytes, None] = {}
    for found in _PROBABILITY_OBJECT.finditer(body):
        keys.update(dict.fromkeys(_PROBABILITY_KEY.findall(found.group(1))))
        if len(keys) > _MAX_PROBABILITY_KEYS:
            return None
    try:
        return list(dict.fromkeys(json.loads(b'"' + key + b'"') for key in keys))
    except ValueError:
        return None


def _table_schema(probability_keys: list[str]):
    """The schema Arrow reads a predictions file with: ``_arrow_types`` and ``score_probs`` as an object of those
    keys, each a float (the line reader's rows hold their numbers as floats)."""
    import pyarrow as pa

    probs = pa.struct([pa.field(key, pa.float64()) for key in probability_keys])
    return pa.schema([*_arrow_types().items(), ("score_probs", probs)])


def _without_absent_keys(table):
    """``table`` with ``score_probs`` holding only the keys some row gives (a key the raw lines seemed to give but
    none does is dropped), and as no column where no row gives an object."""
    import pyarrow as pa
    import pyarrow.compute as pc

    probs = table.column("score_probs").combine_chunks()
    kept = [k for k in range(probs.type.num_fields) if pc.struct_field(probs, [k]).null_count < len(probs)]
    if len(kept) == probs.type.num_fields and (kept or probs.null_count < len(probs)):
        return table
    index = table.column_names.index("score_probs")
    if not kept and probs.null_count == len(probs):
        return table.remove_column(index)
    fields = [probs.field(k) for k in kept]
    names = [probs.type.field(k).name for k in kept]
    column = pa.StructArray.from_arrays(fields, names, mask=probs.is_null())
    return table.set_column(index, "score_probs", column)


#: A ``score_probs`` object holding a null value (``{"2": null}``), which the line reader refuses; matched in the raw
#: lines, stepping over each key as a whole string (a key may hold a brace, a colon or the word null; a quote inside
#: a JSON string is escaped, so text that quotes such an object does not match).
_NULL_PROBABILITY = re.compile(rb'"score_probs"[ \t]*:[ \t]*\{(?:[^"}]|"(?:[^"\\]|\\.)*")*?:[ \t]*null\b')
#: Where a ``score_probs`` object opens under its literal name.
_PROBS_OPENER = re.compile(rb'"score_probs"[ \t]*:[ \t]*\{')


def _null_probability_may_hide(body: bytes, probs: pa.ChunkedArray) -> bool:
    """Whether a ``score_probs`` object in ``body`` may hold a null value, which the struct column ``probs`` reads
    as an absent key. Only a key with more nulls than the column itself can hide one, so a file whose objects all
    hold the same keys is not searched. Arrow decodes escapes in field names (``"score\\u005fprobs"``), which the
    pattern does not match: fewer literal openers than objects sends the file to the line reader as well. A file
    whose every row names the field literally (as `run` writes it, null or not) holds no escaped name, which one
    count of the name before its colon shows (a string value is never followed by a colon)."""
    import pyarrow.compute as pc

    if not any(pc.struct_field(probs, [k]).null_count > probs.null_count for k in range(probs.type.num_fields)):
        return False
    if (body.count(b'"score_probs":') < len(probs)
            and sum(1 for _ in _PROBS_OPENER.finditer(body)) < len(probs) - probs.null_count):
        return True
    return _NULL_PROBABILITY.search(body) is not None


def _file(path: str | Path) -> Path:
    path = Path(path)
    return path / "predictions.jsonl" if path.is_dir() else path


#: Bytes no JSONL text holds near its start: Parquet's magic number, and NUL (any binary file: Arrow IPC, a zip).
_PARQUET_MAGIC, _NUL = b"PAR1", b"\x00"


def _refuse_not_jsonl(given: str | Path, path: Path, data: bytes) -> None:
    """Refuse a file that is no JSONL (a file named with another suffix; Parquet or other binary content, whatever
    its name): read as lines, an items.parquet or a CSV stopped at its first line with a "torn line" warning and
    advice to rerun the judge.

    Raises:
        ValueError: naming the file (the one in the folder when ``--predictions`` gave a folder).
    """
    head = data[:4096]
    foreign = (Path(given).is_file() and path.suffix.lower() != ".jsonl") or head.startswith(_PARQUET_MAGIC)
    if foreign or _NUL in head:
        raise ValueError(f"--predictions {path}: not a predictions.jsonl (JSONL rows written by judge-eval run)")


def _raise_first_bad_row(path: Path, arrow_error: Exception | None) -> None:
    """Raise the error of the first row that is not a prediction row, read line by line as ``iter_predictions``
    reads (the message names the file, the row and the field); when every row passes, Arrow's own error, or (none
    given: a check of the table's columns refused it) that the two readers disagree."""
    for _ in _iter_rows(path, quiet=True):
        pass
    if arrow_error is not None:
        raise ValueError(f"{path}: not a predictions file Arrow can read ({arrow_error})")
    raise ValueError(f"{path}: a row the table reader (Arrow's JSON reader and its checks of the columns) refuses, "
                     "though the line-by-line reader finds nothing wrong with any line")


def _raise_bad_text(path: Path, table: pa.Table) -> None:
    """Raise naming the file, line and field of the first value that is not UTF-8 (the table's row, counted without
    blank lines, mapped back to its line); the line reader's error when no column can be blamed (a key)."""
    import pyarrow as pa

    for name in table.column_names:
        column = table.column(name)
        if not pa.types.is_string(column.type):
            continue
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            for row, value in enumerate(column.cast(pa.binary()).to_pylist()):
                try:
                    if value is not None:
                        value.decode("utf-8")
                except UnicodeDecodeError as err:
                    place = row_place(_line_of_row(path, row))
                    raise ValueError(f"{path}: {place}.{name}: not UTF-8 text ({err.reason} at byte "
                                     f"{err.start}: {value[max(err.start - 20, 0):err.start + 1]!r})") from None
    _raise_first_bad_row(path, None)


def _line_of_row(path: Path, row: int) -> LineIndex:
    """The line of the table's ``row`` (0-based, blank lines not counted, as Arrow reads them)."""
    with path.open("rb") as handle:
        for index, line in enumerate(handle):
            if line.strip():
                if row == 0:
                    return LineIndex(index)
                row -= 1
    raise AssertionError(f"{path}: fewer rows than the table read from it")


@functools.cache
def _arrow_types() -> dict[str, Any]:
    """The Arrow type of each field's column (``score_probs`` is typed by ``_table_schema`` from the keys the file
    gives)."""
    import pyarrow as pa

    kinds = {_TEXT: pa.string(), _NUMBER: pa.float64(), _FLAG: pa.bool_()}
    return {name: kinds[kind] for name, kind in _JSON_KINDS.items() if kind in kinds}


def prediction_rows(table) -> list[dict[str, Any]]:
    """A prediction table's rows as ``PredictionRow.to_json`` dicts (``score_probs`` without the keys the row
    lacked, which its struct column holds as nulls)."""
    rows = table.to_pylist()
    for row in rows:
        probs = row["score_probs"]
        if probs is not None:
            row["score_probs"] = {k: v for k, v in probs.items() if v is not None}
    return rows


def prediction_table(rows: Iterable[Mapping[str, Any]]):
    """Prediction rows (dicts, checked by ``PredictionRow.from_json``) as ``read_prediction_table``'s table."""
    import pyarrow as pa

    checked = [PredictionRow.from_json(row, where=f"row {i}").to_json() for i, row in enumerate(rows, start=1)]
    columns = {}
    for name in PREDICTION_FIELDS:
        values = [row[name] for row in checked]
        # Floats, as Arrow's JSON reader holds them: pyarrow builds no float64 column from an integer past 2**53 or
        # an int64's range (its error names no file, row or field).
        if _JSON_KINDS[name] == _NUMBER:
            values = [None if v is None else float(v) for v in values]
        elif name == "score_probs":
            values = [None if v is None else {level: float(p) for level, p in v.items()} for v in values]
        columns[name] = (pa.array(values) if name == "score_probs"
                         else pa.array(values, type=_arrow_types()[name]))
    return pa.table(columns)


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a ``predictions.jsonl`` as dicts (``read_prediction_table``'s rows, see ``prediction_rows``).

    Raises:
        ValueError: as ``read_prediction_table``.
    """
    return prediction_rows(read_prediction_table(path))

def iter_predictions(path: str | Path) -> Iterator[dict[str, Any]]:
    """``read_predictions`` one row at a time: memory does not grow with the file (resume, provenance checks)."""
    for row in _iter_rows(path):
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


def _iter_rows(path: str | Path, torn: list[bytes] | None = None, *, quiet: bool = False) -> Iterator[PredictionRow]:
    path = Path(path)
    if path.is_dir():
        path = path / "predictions.jsonl"
    number = 0
    keys: set[str] = set()
    try:
        for number, data in iter_journal_lines(path, torn, quiet=quiet):
            where = f"{path}: {row_place(LineIndex(number - 1))}"
            row = PredictionRow.from_json(data, where=where)
            if row.score_probs:
                _count_probability_keys(keys, row.score_probs, where)
            yield row
    except JournalError:
        _refuse_not_utf8(path, after=number)
        raise


def _count_probability_keys(keys: set[str], probs: Mapping[str, Any], where: str) -> None:
    """Add ``probs``' keys to ``keys``, the file's so far; raise naming ``where`` when they pass
    ``_MAX_PROBABILITY_KEYS``: a table holds ``score_probs`` as a column per key, each as long as the file, and a
    rubric's score levels are a few."""
    for key in probs:
        if key not in keys and len(keys) == _MAX_PROBABILITY_KEYS:
            raise ValueError(f"{where}.score_probs: key {shown_value(key)} is past the {_MAX_PROBABILITY_KEYS} "
                             "distinct keys (score levels) the file's score_probs objects may give")
        keys.add(key)


def _refuse_not_utf8(path: Path, after: int) -> None:
    """Raise when the line the journal refused (the first non-blank one after line ``after``) is not UTF-8, in the
    data loader's words (``judge.record_sources.jsonl_rows``). ``json.loads`` guesses a line's encoding from its
    first bytes: one starting with FF FE was read as UTF-16 ("'utf-16-le' codec can't decode byte 0x0a", or a bare
    "Expecting value"), where the file is UTF-8 and that byte is the fault."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number <= after or not raw.strip():
                continue
            if number == 1:  # the file's byte order mark, which every reader of it skips
                raw = raw.removeprefix(UTF8_BOM)
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(f"{path}: {row_place(LineIndex(number - 1))}: not UTF-8 text "
                                 f"(byte 0x{raw[err.start]:02x} at column {err.start + 1})") from None
            return


def record_content_key(record: Any) -> str:
    """``judge.plumbing.run_folder.content_key`` of what the judge is asked about one item: the prompt's fields
    (instruction, reference answer, answer, criterion, rubric), as a pairwise row keeps its pair's
    (``eval.pairwise.judging.PairRecord.content_key``)."""
    from judge.plumbing.run_folder import content_key

    return content_key(record.instruction, record.reference_answer or "", record.answer, record.criteria_name,
                       record.rubrics)


def resume_predictions(path: str | Path, ids: Sequence[str] | Mapping[str, str], *,
                       failed: set[str] | None = None) -> set[str]:
    """Prepare a predictions file for appending, and say which items are done.

    Kept: the first row of each id in ``ids`` whose request succeeded (parsed or not) and, when ``ids`` maps each id
    to its item's ``record_content_key``, that judged the item's current text. Dropped: a line cut by a kill, rows
    whose request failed (they are retried), rows of an item edited in place under the same id (its verdict is of a
    text no longer there: asked again), repeated ids and ids not in ``ids``. The file is rewritten (atomically, by
    rename) only when something was dropped. It is read as a stream, twice when it is rewritten: memory holds the
    done ids, never the rows (a resumed 160k-item run).

    Args:
        failed: when given, the ids (of ``ids``) with a row whose request failed and no final row are added to it:
            the caller asks them after the items never asked.

    Returns:
        The ids that already have their final row.
    """
    path = Path(path)
    if not path.exists():
        return set()
    keys: Mapping[str, str | None] = ids if isinstance(ids, Mapping) else dict.fromkeys(ids)

    def keep(row: PredictionRow, kept: set[str]) -> bool:
        if row.id not in keys or row.id in kept or row.error == REQUEST_FAILED:
            return False
        # A row without a key was written before rows kept one: its text cannot be checked, and it is kept, as it
        # was before (asking every such item again would discard finished runs' verdicts on an upgrade).
        if row.content_key is not None and keys[row.id] is not None and row.content_key != keys[row.id]:
            return False
        kept.add(row.id)
        return True

    kept: set[str] = set()
    torn: list[bytes] = []
    n_rows = 0
    try:
        for row in _iter_rows(path, torn):
            n_rows += 1
            if not keep(row, kept) and failed is not None and row.error == REQUEST_FAILED and row.id in keys:
                failed.add(row.id)
    except ValueError as err:  # a line no run of this version writes (a half row an older run left mid-file)
        raise ValueError(f"{err}; the run cannot resume from this file: mend or delete that line (its item is then "
                         "asked again), or start again with --overwrite") from None
    if failed is not None:
        failed -= kept
    if torn or len(kept) != n_rows:
        again: set[str] = set()
        rewrite_journal(path, (row.to_json() for row in _iter_rows(path, quiet=True) if keep(row, again)))
        log.info("resume: kept %d rows of %s, dropped %d (cut line: %s)", len(kept), path, n_rows - len(kept),
                 bool(torn))
    return kept


def refuse_repeated_ids(ids: Iterable[str], where: str | Path) -> None:
    """Refuse predictions that hold an id more than once (two runs appended to one folder).

    ``run`` itself ends with one row per id (its resume drops repeats); a repeated id in what ``score`` reads means
    the file did not come from one run, and scoring its first rows would report a judge that was not run.

    Args:
        ids: the rows' ids in file order (a list, or an Arrow array: anything with ``to_pylist`` is converted).
        where: the predictions file, for the message.

    Raises:
        ValueError: naming the file, how many ids repeat, and the first few with their counts.
    """
    from collections import Counter

    values = ids.to_pylist() if hasattr(ids, "to_pylist") else list(ids)
    if len(set(values)) == len(values):
        return
    repeated = [(i, n) for i, n in Counter(values).items() if n > 1]
    shown = ", ".join(f"{i!r} x{n}" for i, n in repeated[:3])
    many = "1 id appears" if len(repeated) == 1 else f"{len(repeated)} ids appear"
    raise ValueError(f"{where}: {many} more than once ({shown}{', ...' if len(repeated) > 3 else ''})"
                     "; two runs wrote into one folder, or files were joined. Rerun `judge-eval run` on the folder "
                     "(its resume keeps one row per id), or pass --allow-repeated-ids to score each id's first row")

"""A MERA task's data file read strictly: one JSON object per line (``.jsonl``, or ``.jsonl.gz``).

ruHumanEval (``humaneval.load_tasks``) and ruTiE (``rutie.load_dialogues``) read their rows here. A task file is
input, unlike the journals a run writes (``judge.plumbing.journal``): a last line without its newline is a whole row, blank
lines are skipped, a UTF-8 byte order mark at the file's start is skipped (as every file reader skips one there), and
any other line that is not a JSON object (or not UTF-8) is an error naming the file and the line (from 1, blank lines
counted: "line 3", as the record loader names a JSONL row); so is a line longer than
``MAX_LINE_BYTES``, read no further, and a ``.gz`` file cut short or not gzip at all, naming the line its reading
reached.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.plumbing.json_reading import JSON_REFUSALS, UTF8_BOM, unreadable_json, value_words
from judge.records import LineIndex, row_place

__all__ = ["DataError", "MAX_LINE_BYTES", "iter_task_rows", "line_place"]

#: The longest line read as one row, in bytes, its newline left out: a wrong ``--data`` (a multi-GB file with no
#: newline) is refused at this many bytes, never read into memory whole. MERA's rows take a few KiB; a row's
#: ``inputs.tests`` may take ``sandbox.MAX_TESTS_CHARS`` (1 Mi) characters, each at most 12 bytes as JSON writes it
#: (a surrogate pair of ``\uXXXX`` escapes), with room to spare for the rest of the row.
MAX_LINE_BYTES = 32 << 20


class DataError(ValueError):
    """A data row that cannot be used; the message names the row and the field."""


def line_place(line_no: int) -> str:
    """How an error names the row on line ``line_no`` (from 1): "line 3", as ``judge.records.row_place`` names a
    JSONL row; "a row given alone" for 0, a row parsed without its file."""
    return row_place(LineIndex(line_no - 1)) if line_no > 0 else "a row given alone"


def iter_task_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row object)`` of each non-blank line of ``path`` (gzip-compressed when it ends in ``.gz``).

    Raises:
        DataError: ``{path}: line {n}: not JSON: ...``, ``{path}: line {n}: not a JSON object (a list)``, ``{path}:
            line {n}: not UTF-8: ...`` or ``{path}: line {n}: longer than the limit ...`` (``MAX_LINE_BYTES``, checked before the line is decoded); for a ``.gz`` file
            that is cut short or not gzip data, ``{path}: line {n}: ...`` naming the line its reading reached.
    """
    path = Path(path)
    compressed = path.suffix == ".gz"
    opener = gzip.open if compressed else open
    # Bytes, decoded row by row: a text-mode file decodes as it is iterated, where an error could name no row.
    with opener(path, "rb") as f:
        for line_no, raw in enumerate(_bounded_lines(f, path, compressed), start=1):
            if line_no == 1:
                raw = raw.removeprefix(UTF8_BOM)
            try:
                # without its line break: json counts one as a new line, so a row cut short was refused "line 2
                # column 1" of a one-line row
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as err:
                raise DataError(f"{path}: {line_place(line_no)}: not UTF-8: {err}") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}: {line_place(line_no)}: not JSON: {err}") from None
            except JSON_REFUSALS as err:  # valid JSON json.loads cannot hold
                raise DataError(f"{path}: {line_place(line_no)}: {unreadable_json(err)}") from None
            if not isinstance(row, dict):  # a file written as one JSON array: both tasks' rows are objects
                raise DataError(f"{path}: {line_place(line_no)}: not a JSON object ({value_words(row)})")
            yield line_no, row


def _bounded_lines(f: Any, path: Path, compressed: bool) -> Iterator[bytes]:
    """The lines of an open file, each read no further than ``MAX_LINE_BYTES``; for a gzip file, its decompression
    failure a ``DataError`` naming the file and the line reached.

    Raises:
        DataError: a line longer than ``MAX_LINE_BYTES``, naming the file and the line. The gzip module raises
            EOFError for a file cut short (an interrupted download), BadGzipFile for bytes that are not gzip at all
            and zlib.error for a damaged stream: each would otherwise end the command in a traceback that names
            neither the file nor how far its rows were read.
    """
    line_no = 0
    while True:
        try:
            raw = f.readline(MAX_LINE_BYTES + 1)  # the bound and a newline: a line at the bound is read whole
        except EOFError as err:
            if not compressed:
                raise
            raise DataError(f"{path}: {line_place(line_no + 1)}: the gzip data ends there, before its end marker: "
                            f"the file is cut short (an interrupted download?); fetch it again ({err})") from None
        except (OSError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
            if not compressed:
                raise
            raise DataError(f"{path}: {line_place(line_no + 1)}: not readable as gzip data ({err}); a file named .gz "
                            "must be gzip-compressed JSON lines") from None
        if not raw:
            return
        if len(raw.removesuffix(b"\n")) > MAX_LINE_BYTES:
            raise DataError(f"{path}: {line_place(line_no + 1)}: longer than the limit of {MAX_LINE_BYTES} bytes for "
                            "one row: not a task file of JSON lines?")  # fmt: skip
        line_no += raw.endswith(b"\n")  # a last line without one ends the file
        yield raw

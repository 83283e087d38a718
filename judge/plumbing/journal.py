"""Append-only JSONL journals: the resumable files of every stage (eval predictions, MERA progress, synthetic-data
jobs).

One rule for all of them:

- **Strict reading.** Every line is a JSON object (blank lines are skipped); any other line is an error naming
  ``file:line``. A journal is never "repaired" by skipping what does not parse.
- **A torn tail.** A last line without its newline that is not whole JSON is a write cut by a kill (appends write a
  row and its newline in one call): it is dropped, and a warning says so. Whole JSON that is no object (a file
  written as one JSON array) is no cut (a cut of a row opens with ``{`` and never parses): it is refused by name,
  as any other line that is no object. ``read_journal`` reports
  it; ``open_journal`` also cuts it from the file so the next append starts on a clean line, and
  ``JournalWriter.append`` cuts it itself before it writes (a row written after it would join it into one line no
  reader accepts).
- **A whole last row without its newline** (a file written by hand, by another tool, or a write cut just before its
  newline) is a row, for every reader and for the writer alike: read, and ended with its newline by
  ``open_journal`` and by the next append. The two must agree: a row a resume reads as missing but the writer keeps
  is a job asked again and then held twice in the file.
- **Durable appends.** ``JournalWriter.append`` writes its rows, flushes and ``fsync``\\ s once per call: a call is
  a batch (the criteria of one ``/v1/judge`` request) or one finished job; the append that creates the file also
  fsyncs its folder, so that the name is on disk with the rows. An fsync per call costs far less than any
  judged item's latency, so every call is synced rather than every N.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.plumbing.atomic_write import make_folder, sync_folder, write_atomically
from judge.plumbing.json_reading import JSON_REFUSALS, UTF8_BOM, unreadable_json, value_words

__all__ = ["JournalContents", "JournalError", "JournalWriter", "iter_journal", "iter_journal_lines",
           "is_whole_last_line", "json_utf8", "loads_without_repeats", "log_torn_tail", "RepeatedKeyError",
           "read_journal", "read_jsonl", "open_journal", "rewrite_journal"]

log = logging.getLogger("judge.plumbing.journal")


class JournalError(ValueError):
    """A journal line that is not a JSON object (and is not the torn last line); the message names ``file:line``."""


@dataclass(frozen=True)
class JournalContents:
    """A journal as read.

    Attributes:
        rows: every row's object, in file order (a whole last row without its newline included).
        torn_tail: the bytes of a last line without its newline that is not a whole row (a write cut by a kill),
            dropped; ``b""`` if none.
    """

    rows: list[dict[str, Any]]
    torn_tail: bytes = b""

    @property
    def torn(self) -> bool:
        return bool(self.torn_tail)


def iter_journal(path: str | Path, torn: list[bytes] | None = None, *, quiet: bool = False) -> Iterator[dict[str, Any]]:
    """A journal's rows one at a time, by ``read_journal``'s rules; memory does not grow with the file.

    Args and errors as ``iter_journal_lines``, which also gives each row's line number.
    """
    for _, row in iter_journal_lines(path, torn, quiet=quiet):
        yield row


def iter_journal_lines(path: str | Path, torn: list[bytes] | None = None, *,
                       quiet: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """``iter_journal``'s rows, each with its line number from 1, blank lines counted: the line an editor shows,
    so that an error about a row's content can name it as the reader's own errors do
    (``judge.records.LineIndex(number - 1)``); counting the rows instead is off by one after each blank line.

    Args:
        path: the journal (a missing file has no rows).
        torn: when given, a torn last line's bytes are appended to it (the rows it dropped, for the caller). A last
            line that is a whole row without its newline is no torn line: it is read.
        quiet: no warning for a torn last line (a second pass over a file whose tail was already reported).

    Raises:
        JournalError: a complete line that is not a JSON object, naming ``file:line``.
    """
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number > 1 and line.startswith(UTF8_BOM):
                # json.loads reads bytes that open with one as UTF-8 on any line, where Arrow's reader of the same
                # predictions file (and the data loader's) refuses it: a file's meaning would depend on its reader
                raise JournalError(f"{path}:{number}: a UTF-8 byte order mark (EF BB BF) opens the line, as where two "
                                   "files were joined; only a file's first line may open with one: delete it")
            if not line.endswith(b"\n"):  # after the last newline: a whole row, a cut write, or only whitespace
                try:
                    row = _whole_row(line)
                except RepeatedKeyError as err:
                    raise JournalError(f"{path}:{number}: field {err.key!r} is given twice in the row") from None
                except _NotAnObject as err:
                    raise JournalError(f"{path}:{number}: {value_words(err.value)}, not an object") from None
                if row is not None:
                    yield number, row
                elif line.strip():
                    if not quiet:
                        log_torn_tail(path, line)
                    if torn is not None:
                        torn.append(line)
                return
            if not line.strip():
                continue
            try:
                row = loads_without_repeats(line)
            except RepeatedKeyError as err:
                raise JournalError(f"{path}:{number}: field {err.key!r} is given twice in the row") from None
            except UnicodeDecodeError as err:
                raise JournalError(f"{path}:{number}: not a JSON line ({err}); only a last line without its newline "
                                   "is taken for a write cut by a kill") from err
            except json.JSONDecodeError as err:
                # with the column: "Invalid control character at" alone ended mid-sentence
                raise JournalError(f"{path}:{number}: not a JSON line ({err.msg.removesuffix(' at')} at column "
                                   f"{err.colno}); only a last line without its newline is taken for a write cut by a "
                                   "kill") from err
            except JSON_REFUSALS as err:  # valid JSON json.loads cannot hold
                raise JournalError(f"{path}:{number}: {unreadable_json(err)}") from None
            if not isinstance(row, dict):
                raise JournalError(f"{path}:{number}: {value_words(row)}, not an object")
            yield number, row


class _NotAnObject(ValueError):
    """A last line without its newline that is whole JSON but no object (``value``): no write cut by a kill (a cut of
    a row opens with ``{``, which no prefix of a row closes), so no torn tail to drop, but a line to refuse."""

    def __init__(self, value: Any):
        super().__init__(value_words(value))
        self.value = value


class RepeatedKeyError(ValueError):
    """A JSON object that gives a key twice (:func:`loads_without_repeats`); ``key`` is the key, of the row or of an
    object inside it (the hook cannot tell which)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def loads_without_repeats(data: str | bytes) -> Any:
    """``json.loads`` refusing a key given twice in any object of ``data``.

    Raises:
        RepeatedKeyError: naming the key; ``json.JSONDecodeError`` and ``json.loads``' other errors as it raises them.
    """
    return json.loads(data, object_pairs_hook=_object_without_repeats)


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key given twice: ``json.loads`` would keep the last silently, where
    Arrow's reader of the same file (``eval.judging.predictions``) and the records' reader refuse it, so a file's
    meaning would depend on which reader took it."""
    row = dict(pairs)
    if len(row) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKeyError(key)
            seen.add(key)
    return row


def log_torn_tail(path: Path, line: bytes) -> None:
    """The warning for a dropped torn last line (one wording for every reader of a journal)."""
    log.warning("%s: dropped its last line, which has no newline (a write cut by a kill): %r", path, line[:80])


def read_journal(path: str | Path) -> JournalContents:
    """Read a journal strictly; a missing file reads as empty. The file is not changed.

    Raises:
        JournalError: a complete line that is not a JSON object, naming ``file:line``.
    """
    torn: list[bytes] = []
    rows = list(iter_journal(path, torn))
    return JournalContents(rows=rows, torn_tail=torn[0] if torn else b"")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a JSONL file read by ``read_journal``'s rules (a torn last line is dropped and said)."""
    return read_journal(path).rows


def open_journal(path: str | Path) -> JournalContents:
    """Read a journal about to be appended to, cutting a torn last line from the file (in place) and ending a whole
    last row that lacks its newline, so that the next append starts on a line of its own.

    Raises:
        JournalError: as ``read_journal``.
    """
    contents = read_journal(path)
    if Path(path).exists():
        with open(path, "r+b") as handle:
            if _end_cleanly(handle, Path(path), say=False):  # read_journal has said what it dropped
                handle.flush()
                os.fsync(handle.fileno())
    return contents


def rewrite_journal(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Replace a journal's rows atomically (``judge.plumbing.atomic_write``: written aside, fsynced, renamed over).

    ``rows`` is consumed as it is written (it may stream from ``path`` itself); whatever it raises leaves ``path`` as
    it was.
    """

    def write(handle: Any) -> None:
        for row in rows:
            handle.write(_line(row))

    write_atomically(path, write)


def json_utf8(text: str) -> bytes:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) as UTF-8, its non-ASCII characters as they are.

    A lone surrogate (``"\\ud800"``: what a JSON ``\\ud800`` escape decodes to, or a sample's ``str()`` result) has no
    UTF-8 form, and ``.encode("utf-8")`` would raise after the work was done. In JSON text it can stand only inside a
    string, so it is written as its escape, ``\\ud800``: the file stays UTF-8 JSON and reads back as the same string.
    """
    return text.encode("utf-8", "backslashreplace")


def _line(row: Mapping[str, Any]) -> bytes:
    return json_utf8(json.dumps(row, ensure_ascii=False) + "\n")


class JournalWriter:
    """Thread-safe, fsynced appends to a JSONL journal.

    Each ``append`` opens the file, writes its rows in one ``write`` call, flushes, fsyncs and closes, so a kill
    loses at most the call in flight (whose torn last line the next reader drops) and no handle outlives a call.
    A torn last line found in the file is cut before the rows are written (``torn_tails`` counts them, and a warning
    says so), and a whole row lacking its newline is ended: every row a reader reads stays, and the file reads back
    whole.

    Attributes:
        torn_tails: torn last lines this writer cut.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        make_folder(self.path.parent)
        self._lock = threading.Lock()
        self.torn_tails = 0

    def append(self, *rows: Mapping[str, Any]) -> None:
        """Append rows (one write, one fsync), after cutting a torn last line."""
        data = b"".join(_line(row) for row in rows)
        with self._lock:
            with self.path.open("a+b") as handle:
                # An empty file counts as new: made here, or by another step or tool with its name perhaps not on
                # disk yet
                new = os.fstat(handle.fileno()).st_size == 0
                if _end_cleanly(handle, self.path) == "cut":
                    self.torn_tails += 1
                handle.write(data)  # opened to append: it lands at the end, wherever the cut left the file
                handle.flush()
                os.fsync(handle.fileno())
            if new:  # the file's fsync leaves the entry naming it unsynced: a crash could lose the whole journal
                sync_folder(self.path.parent)


#: Bytes read at a time while looking back for a torn last line's start.
_TAIL_CHUNK = 64 * 1024


def _whole_row(data: bytes) -> dict[str, Any] | None:
    """``data`` (a last line without its newline) as a row when it is one whole JSON object, else None: a cut write.

    A cut can never leave a shorter whole object (an object's last byte is its closing brace), so a whole one is the
    row as it was written. The one rule for ``iter_journal`` and ``JournalWriter.append``.

    Raises:
        RepeatedKeyError: a whole object that gives a key twice.
        _NotAnObject: whole JSON that is no object: no cut, a line for its reader to refuse.
    """
    if not data.strip():
        return None
    try:
        row = loads_without_repeats(data)
    except RepeatedKeyError:
        raise  # whole, but no row: its reader says so
    except JSON_REFUSALS:  # UnicodeDecodeError included; too deep to read is taken for a cut
        return None
    if not isinstance(row, dict):
        raise _NotAnObject(row)
    return row


def is_whole_last_line(data: bytes) -> bool:
    """Whether ``data``, a last line without its newline, is a row by ``iter_journal``'s rule (a whole JSON object,
    one giving a key twice included, for its reader to refuse by name) rather than a write cut by a kill: for a
    reader of a journal's bytes that does not go through ``iter_journal`` (Arrow's, in ``eval.judging.predictions``)
    to keep the row every other reader keeps."""
    try:
        return _whole_row(data) is not None
    except (RepeatedKeyError, _NotAnObject):
        return True


def _end_cleanly(handle: Any, path: Path, *, say: bool = True) -> str | None:
    """Make the journal open in ``handle`` (binary, readable and writable) end with a newline before an append.

    The bytes after its last newline are cut when they are not a whole row (``_whole_row``), with a warning when
    ``say`` and they are more than spaces; a whole row there is ended with its newline instead, and kept. Only the
    last byte is read when the file ends with its newline, as it does after every whole append.

    Returns:
        "cut" (a torn row was cut), "ended" (a whole row was ended), "spaces" (only spaces were cut), or None (the
        file was empty or ended with its newline).
    """
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return None
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return None
    end = size
    start = 0  # no newline at all: the whole file is the torn line
    while end > 0:
        begin = max(0, end - _TAIL_CHUNK)
        handle.seek(begin)
        found = handle.read(end - begin).rfind(b"\n")
        if found >= 0:
            start = begin + found + 1
            break
        end = begin
    handle.seek(start)
    tail = handle.read(size - start)
    try:
        whole = _whole_row(tail) is not None
    except (RepeatedKeyError, _NotAnObject):
        whole = True  # whole JSON that is no row, kept for iter_journal to refuse by name
    if whole:
        # Every reader reads it as a row: kept, and ended, so the next row does not run into it.
        handle.seek(size)
        handle.write(b"\n")
        return "ended"
    handle.truncate(start)
    if not tail.strip():  # only spaces after the last newline: no row was cut, nothing to say
        return "spaces"
    if say:
        log.warning("%s: cut its last line, which has no newline (a write cut by a kill), before appending: %r", path,
                    tail[:80])
    return "cut"

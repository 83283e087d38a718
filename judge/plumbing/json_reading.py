"""What the two JSON readers every loader uses cannot read: said in one wording (``json.loads``) or kept from them
before they are asked (Arrow's JSON reader).

- ``json.loads`` refuses valid JSON it cannot hold with errors meant for programmers: a bare ``RecursionError`` on
  nesting past Python's recursion limit (~1,000 levels in CPython's C scanner), a ``ValueError`` on an integer past
  the 4,300-digit limit of integer string conversion. ``unreadable_json`` words them (and malformed JSON) for
  whoever fixes the data, for the loaders' errors that name the file and row; ``unreadable_answer`` says it of an
  HTTP 200 whose body is such JSON (or no UTF-8 text), in one wording for every client of an endpoint (evaluation's,
  MERA's, the synthetic pipeline's, the task classifier's), and tells it from any other ``ValueError`` the client's
  call raised (``json_limit_refusal`` tells the two limits from the rest). ``JSON_REFUSALS`` is what every reader catches around
  ``json.loads``, and ``json_or_none`` the value of a reader that takes unreadable text for none.
- ``pyarrow.json.read_json`` overflows a thread's stack and kills the whole process (SIGSEGV, no message) on nesting
  between 10,000 and 20,000 levels (pyarrow 26.0, measured here: 10,000 reads, 20,000 crashes). Untrusted input is
  bounded before work: ``arrow_may_read`` is a bound on nesting cheap enough to run on every file (a line cannot
  nest deeper than it has ``[`` and ``{``: one pass of ``bytes.translate`` over the file, a small share of what
  reading it costs); a file it does not pass goes to the line-by-line readers, whose ``json.loads`` refuses such
  nesting with a named error, and reads a line whose brackets are text inside strings (a code answer) as it is.
- A value of the wrong kind is named as whoever wrote the file reads JSON: ``kind_words`` says the kind a field
  should be ("an integer or a string"), ``value_words`` the kind it holds ("an object", "a list", "null"), never
  Python's class ("dict", "NoneType"); ``shown_value`` and ``got_words`` show a value past 40 characters cut with a
  mark; ``counted`` says a count with its noun in its number ("1 node", "2 nodes", "3 criteria"). They live here,
  beneath the contract, so that this package's readers (the journal, the run folder's key) word it as
  ``judge.records`` (which re-exports them) and every loader do, and training, serving and evaluation alike.
- ``finite_number`` is what every reader takes for a number: ``json.loads`` reads an integer of any size (which
  ``math.isfinite`` cannot convert: ``OverflowError``) and ``NaN`` and ``Infinity``; none of those, nor a bool, is one.
- ``UTF8_BOM`` is the byte order mark every file reader skips at a file's start, and only there.
- ``json.loads`` reads a ``\\ud800`` escape with no pair as a lone surrogate, a string no UTF-8 writer (nor Arrow's
  reader) takes: ``lone_surrogate_at`` finds one, for the readers to refuse it where it is read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["ARROW_MAX_OPENERS_PER_LINE", "JSON_REFUSALS", "UTF8_BOM", "arrow_may_read", "arrow_reads_lines_alike", "counted",
           "finite_number", "got_words", "json_limit_refusal", "json_or_none", "kind_words", "lone_surrogate_at",
           "shown_value", "unreadable_answer", "unreadable_json", "value_words"]

#: The UTF-8 byte order mark some editors (Windows Notepad, Excel's "UTF-8" export) write at the start of a file:
#: every reader of a JSON or JSON lines file takes it as the file's first bytes and nothing else, at byte 0 only
#: (anywhere else it is a character of a row, and refused as one).
UTF8_BOM = b"\xef\xbb\xbf"

#: At most this many ``[`` and ``{`` on one line for Arrow's JSON reader: nesting that deep is already past what
#: ``json.loads`` reads (so the line-by-line path, which names the line, loses nothing), and ten times below the
#: depth that crashes Arrow.
ARROW_MAX_OPENERS_PER_LINE = 1_000
_NOT_OPENERS_OR_NEWLINES = bytes(b for b in range(256) if b not in b"[{\n")


def arrow_may_read(data: bytes) -> bool:
    """Whether no line of the JSON lines ``data`` holds more than ``ARROW_MAX_OPENERS_PER_LINE`` ``[`` and ``{``
    (brackets inside strings counted too: the bound is cautious, never short)."""
    kept = data.translate(None, _NOT_OPENERS_OR_NEWLINES)
    if len(kept) - kept.count(b"\n") <= ARROW_MAX_OPENERS_PER_LINE:
        return True  # the whole file has fewer: no line can have more
    return max(len(line) for line in kept.split(b"\n")) <= ARROW_MAX_OPENERS_PER_LINE


def finite_number(value: Any) -> bool:
    """Whether a JSON value is a number a float holds finitely: not a bool, not NaN nor an infinity, not an
    integer past float's range (``math.isfinite`` of one raises ``OverflowError``; it is as much no number as an
    infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def arrow_reads_lines_alike(data: bytes, lines: int, start: int = 0) -> bool:
    """Whether Arrow's JSON reader reads the ``lines`` JSON lines of ``data[start:]`` row for row as ``json.loads``
    reads each line: every line opens an object at its first byte and closes one at its last (Arrow reads an object
    across lines: a row cut after "[" with its rest on the next line, and two rows on a third, made three rows
    numbered one line off; no JSON string holds a newline), and no "-NaN" (Arrow reads it as NaN, json.loads refuses
    it). A blank line fails too (Arrow would renumber the rows after it)."""
    return (data.startswith(b"{", start) and data.count(b"}\n{", start) == lines - 1
            and data.endswith((b"}\n", b"}")) and b"-NaN" not in data)


#: What ``json.loads`` raises on text it cannot read, for ``except JSON_REFUSALS``: a ``ValueError`` (malformed JSON
#: is a ``JSONDecodeError``, bytes that are not UTF-8 a ``UnicodeDecodeError``, an integer past 4,300 digits a plain
#: ``ValueError``), and a ``RecursionError`` on nesting past the recursion limit, which is no ``ValueError``: a reader
#: that catches ``ValueError`` alone lets it through as a traceback.
JSON_REFUSALS: tuple[type[Exception], ...] = (ValueError, RecursionError)


def json_or_none(text: str | bytes) -> Any:
    """What ``json.loads`` reads from ``text``, or None where it refuses it (``JSON_REFUSALS``): for a reader that
    looks for a value of one kind (an object) and takes any other, JSON's null and unreadable text alike, as none."""
    try:
        return json.loads(text)
    except JSON_REFUSALS:
        return None


def unreadable_json(err: ValueError | RecursionError, whole_file: bool = False) -> str:
    """What ``json.loads`` refused: malformed JSON (with its line too in a ``whole_file``), and the valid JSON it
    cannot read, an integer past Python's 4,300-digit limit (a bare ValueError) or nesting past the recursion
    limit."""
    if isinstance(err, json.JSONDecodeError):
        where = f"line {err.lineno}, column {err.colno}" if whole_file else f"column {err.colno}"
        # the C scanner's "Invalid control character at" already ends in "at"
        return f"invalid JSON ({err.msg.removesuffix(' at')} at {where})"
    if isinstance(err, RecursionError):
        return "unreadable JSON: nested too deeply"
    # "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits; use
    # sys.set_int_max_str_digits() ...": the advice is for programmers, not for whoever fixes the data
    return f"unreadable JSON: a number too long to read ({str(err).split(';')[0]})"


def json_limit_refusal(err: BaseException) -> bool:
    """Whether ``err`` is ``json.loads`` refusing valid JSON it cannot hold (nesting past the recursion limit, an
    integer past the 4,300-digit limit): what ``unreadable_json`` words, for a caller whose ``ValueError`` may come
    from elsewhere too (an HTTP client that parses the body inside a call doing more)."""
    return isinstance(err, RecursionError) or (isinstance(err, ValueError) and not isinstance(err, json.JSONDecodeError)
                                               and "integer string conversion" in str(err))


def unreadable_answer(err: BaseException, status: int = 200) -> str | None:
    """What an endpoint's success was, when ``err`` (raised by a client's call) is ``json.loads`` refusing its body:
    "HTTP 200, but the answer is invalid JSON (Expecting value at line 1, column 1)" (a proxy's page, a body cut
    short; with the line, as a body may span several), "... is unreadable JSON: nested too deeply". ``status``: the
    answer's, where the client takes any 2xx for a success (a proxy's 201 or 204); a client that learns no status
    (the OpenAI SDK parses the body inside its call) or takes 200 alone leaves it 200. None for any other error: a
    ``ValueError`` of the client's own goes on as it is. A body that is no UTF-8 text (``json.loads`` of bytes
    decodes them first) is said with its first such byte: "... is not UTF-8 text (byte 0xff at byte 13)"."""
    if isinstance(err, UnicodeDecodeError):
        byte = err.object[err.start]
        return f"HTTP {status}, but the answer is not UTF-8 text (byte 0x{byte:02x} at byte {err.start})"
    if not (isinstance(err, json.JSONDecodeError) or json_limit_refusal(err)):
        return None
    return f"HTTP {status}, but the answer is {unreadable_json(err, whole_file=True)}"


#: How an error names a kind of JSON value, in a data row's terms rather than Python's classes.
_KIND_WORDS: dict[type, str] = {Mapping: "an object", dict: "an object", list: "a list", str: "a string",
                                int: "an integer", float: "a number", bool: "true or false",
                                type(None): "null"}  # fmt: skip


def kind_words(kind: type | tuple[type, ...]) -> str:
    """``(int, str)`` as "an integer or a string", ``Mapping`` as "an object": the kind a field should be."""
    words = [_KIND_WORDS.get(k, k.__name__) for k in (kind if isinstance(kind, tuple) else (kind,))]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def counted(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and the noun in its number: "1 item", "2 items", "1 criterion" / "3 criteria" (``nouns``: an irregular
    plural). Every stage's text is read by people, and "1 values" reads as a typo."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def value_words(value: Any) -> str:
    """What a JSON value is, for "should be X, got Y": "null", "an object", "a list", "an integer"..."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, Mapping):
        return "an object"
    return _KIND_WORDS.get(type(value), type(value).__name__)


def shown_value(value: Any, limit: int = 40) -> str:
    """A number or a string as an error shows it: as written, or past ``limit`` characters a string cut with "..."
    marking the cut and an integer named by its count of digits ("an integer of 60 digits"): cut with no mark, a
    60-digit integer read as a 40-digit one."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            shown = repr(value)
        except ValueError:  # past Python's 4,300 digits an integer has no repr
            return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
        return shown if len(shown) <= limit else f"an integer of {len(shown.lstrip('-'))} digits"
    shown = repr(value)
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


def got_words(value: Any) -> str:
    """A value read from a JSON file as an error names it: its kind in JSON's words (``value_words``), with a number
    or a string as ``shown_value`` shows it ("a string '0.5'", "an integer 3", "an integer of 60 digits"); null, true
    and false say themselves, a list or an object is named by its kind alone (it may be long)."""
    kind = value_words(value)
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return kind
    shown = shown_value(value)
    return shown if shown.startswith(kind) else f"{kind} {shown}"  # a long integer's words name its kind already


def lone_surrogate_at(text: str) -> int | None:
    """The index of the first lone surrogate in ``text`` (no UTF-8 form), or None; O(1) for ASCII text (the flag is
    stored with the string)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return err.start
    return None

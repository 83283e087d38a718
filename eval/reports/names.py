"""How the reports show a name from the data (evaluated model, task type, criterion, expert, judge, run): bounded,
and still told apart.

A leaf module (no first-party import): ``eval.validity`` and ``eval.ranking`` render tables of names too and cannot
import ``eval.reports.html_explorer`` without a cycle, so the one definition lives here; the error codes of a
predictions file are cut by it too, counted by ``eval.scoring.error_codes``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["BIDI_CONTROLS", "NAME_CHARS", "all_read_apart", "one_line", "page_name", "reads_as", "shown_name",
           "shown_names"]

# Bidirectional controls (embeddings, overrides, isolates, marks): one in a name would show the rest of its line in
# another order than it is written. Other control characters (an escape sequence) have no place in a report either.
# report.md and report.html drop the same ones.
BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def one_line(text: Any) -> str:
    """``text`` as the reports write it: its line breaks (a carriage return and U+2028 end a line too) made spaces,
    bidirectional controls removed, other control characters made spaces."""
    return _CONTROLS.sub(" ", BIDI_CONTROLS.sub("", " ".join(str(text).splitlines())))


def reads_as(text: Any) -> str:
    """What a reader sees of ``text`` written on one line: ``one_line``'s text without the characters that show as
    nothing (format characters: a zero-width space, a joiner, a soft hyphen), its runs of spaces one space and its
    ends stripped, as a page's browser and rendered Markdown show them. Two names that read alike are told apart
    by a mark, since neither escaping nor the reader's eye keeps them apart."""
    visible = "".join(ch for ch in one_line(text) if unicodedata.category(ch) != "Cf")
    return " ".join(visible.split())


def all_read_apart(labels: Iterable[Any]) -> bool:
    """Whether no two of ``labels`` read alike (``reads_as``), so that none can stand for another's."""
    labels = list(labels)
    return len({reads_as(label) for label in labels}) == len(labels)


#: The most characters of a name (evaluated model, task type, criterion, judge, run) the pages show: the loader takes
#: names of any length, and a page writes each several times (tables per split, the plot's labels, the filters), so
#: a criterion name of a million characters was written whole that many times. Longer ones lose their middle, in its
#: place "…".
NAME_CHARS = 300


def _tail(chars: int) -> int:
    """The characters a cut name keeps of its end (99 of 300): names are told apart at their ends (compare's
    " (folder)" after two equal judge names, a rubric's "(part B)"), and a name cut to its first characters read as
    every other one."""
    return max(chars // 3 - 1, 1)


def shown_name(name: Any, chars: int = NAME_CHARS) -> str:
    """``name`` as the pages show it: at most ``chars`` characters; a longer one keeps its first and last
    characters with "…" between them."""
    text = str(name)
    if len(text) <= chars:
        return text
    tail = _tail(chars)
    return text[: chars - 1 - tail] + "…" + text[-tail:]


def page_name(name: Any, chars: int = NAME_CHARS) -> str:
    """A name from the data (a judge, a run, a criterion) as a page writes it: its ``one_line`` text cut to ``chars``
    characters (``shown_name``); the caller makes it inert for its format (HTML, Markdown)."""
    return shown_name(one_line(name), chars)


#: The hex digits of the SHA-256 a mark holds: 8 first (one pair in about four billion reads alike, and 160,000 codes
#: of one cut held three such pairs), then 16 for the names whose 8-digit marks still repeat, then the whole digest.
_MARK_DIGITS = (8, 16, 64)


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def shown_names(names: Iterable[Any], chars: int = NAME_CHARS,
                as_text: Callable[[str], str] | None = None, reserved: Iterable[str] = ()) -> dict[str, str]:
    """Each distinct name (as text) and how the pages show it: ``shown_name``'s cut of its ``one_line`` text (or
    ``as_text``'s writing of the name, where a page cuts and escapes it in one step: compare.md's run names), and
    where two cut names still read alike (``reads_as``: a name apart from another only by a bidirectional mark, a
    line break or a zero-width character reads as it), each of them followed by " (#d)", d the first characters of the full name's SHA-256 (8 hex digits,
    more where two marks would still repeat: ``_MARK_DIGITS``), so that no row, heading or filter value of one name
    stands for another's: distinct names always get distinct labels. The digits depend on the name alone, whichever
    names a table holds and in whatever order (only a repeat of the 8-digit mark, one pair in about four billion,
    lengthens it). A name whose label reads as one of ``reserved`` (a label the page gives a row of its own, as the
    experts' pooled "Avg.") is marked the same way, so that it cannot stand for that row."""
    distinct = list(dict.fromkeys(str(name) for name in names))
    cut = {name: as_text(name) if as_text else page_name(name, chars) for name in distinct}
    labels = dict(cut)
    # Every cut of a longer name is ``chars`` long, so the labels read alike all are: a marked label is then longer
    # than any name left whole, and two marks of different lengths never read alike.
    taken = {reads_as(label) for label in reserved}
    repeated = set(_repeated(distinct, labels))
    pending = [name for name in distinct if name in repeated or reads_as(labels[name]) in taken]
    for digits in _MARK_DIGITS:
        if not pending:
            break
        labels.update((name, f"{cut[name]} (#{_digest(name)[:digits]})") for name in pending)
        pending = _repeated(pending, labels)
    return labels


def _repeated(names: list[str], labels: dict[str, str]) -> list[str]:
    """Those of ``names`` whose label another of them shares."""
    counts = Counter(reads_as(labels[name]) for name in names)
    return [name for name in names if counts[reads_as(labels[name])] > 1]


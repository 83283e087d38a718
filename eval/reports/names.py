"""How the reports show a name from the data (evaluated model, task type, criterion, expert, judge, run) or a code
from a predictions file: bounded, and still told apart.

A leaf module (no first-party import): ``eval.validity`` and ``eval.ranking`` render tables of names too and cannot
import ``eval.reports.html_explorer`` without a cycle, so the one definition lives here.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["ERROR_CODE_CHARS", "FAILURE_CODES_KEPT", "NAME_CHARS", "code_counts", "cut_codes_note",
           "other_codes_key", "shown_name", "shown_names"]

#: The most characters of a name (evaluated model, task type, criterion, judge, run) the pages show: the loader takes
#: names of any length, and a page writes each several times (tables per split, the plot's labels, the filters), so
#: a criterion name of a million characters was written whole that many times. Longer ones lose their middle, in its
#: place "…".
NAME_CHARS = 300
#: The most characters of an error code the failure counts (metrics.json, the reports) keep: every code a judging run
#: writes (``judge.VerdictError``'s, ``request_failed``) is under 30; a predictions file written elsewhere may hold
#: any text there, and each distinct one was written whole in metrics.json, report.md and report.html.
ERROR_CODE_CHARS = 64


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


#: The hex digits of the SHA-256 a mark holds: 8 first (one pair in about four billion reads alike, and 160,000 codes
#: of one cut held three such pairs), then 16 for the names whose 8-digit marks still repeat, then the whole digest.
_MARK_DIGITS = (8, 16, 64)


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def shown_names(names: Iterable[Any], chars: int = NAME_CHARS) -> dict[str, str]:
    """Each distinct name (as text) and how the pages show it: ``shown_name``'s cut, and where two cut names still
    read alike, each of them followed by " (#d)", d the first characters of the full name's SHA-256 (8 hex digits,
    more where two marks would still repeat: ``_MARK_DIGITS``), so that no row, heading or filter value of one name
    stands for another's: distinct names always get distinct labels. The digits depend on the name alone, whichever
    names a table holds and in whatever order (only a repeat of the 8-digit mark, one pair in about four billion,
    lengthens it)."""
    distinct = list(dict.fromkeys(str(name) for name in names))
    cut = {name: shown_name(name, chars) for name in distinct}
    labels = dict(cut)
    # Every cut of a longer name is ``chars`` long, so the labels read alike all are: a marked label is then longer
    # than any name left whole, and two marks of different lengths never read alike.
    pending = _repeated(distinct, labels)
    for digits in _MARK_DIGITS:
        if not pending:
            break
        labels.update((name, f"{cut[name]} (#{_digest(name)[:digits]})") for name in pending)
        pending = _repeated(pending, labels)
    return labels


def _repeated(names: list[str], labels: dict[str, str]) -> list[str]:
    """Those of ``names`` whose label another of them shares."""
    counts = Counter(labels[name] for name in names)
    return [name for name in names if counts[labels[name]] > 1]


#: The most distinct codes a failure count lists; the rest are counted together under ``other_codes_key``: a
#: predictions file written elsewhere may hold one code per item, and metrics.json held one key per failed item.
FAILURE_CODES_KEPT = 50
_OTHER_CODES = re.compile(r"other codes: (\d+) distinct, each no more frequent than the (\d+) listed above")


def other_codes_key(n_codes: int, kept: int = FAILURE_CODES_KEPT) -> str:
    """The failure count's key of the codes after the ``kept`` most frequent, ``n_codes`` of them. Over
    ``ERROR_CODE_CHARS`` characters and not ending in a (#…) mark, it reads as no code a failure count keeps."""
    return f"other codes: {n_codes} distinct, each no more frequent than the {kept} listed above"


def code_counts(codes: Iterable[Any], labels: dict[str, str] | None = None) -> dict[str, int]:
    """Failures by error code, most first (ties by label): each code counted under its label (``labels``, else
    ``shown_names`` of ``codes`` at ``ERROR_CODE_CHARS``; an empty code is "unknown"), past the ``FAILURE_CODES_KEPT``
    most frequent the rest under one ``other_codes_key``. The counts add up to the codes given: a failure is never
    dropped, and one code per failed item no longer makes one key per item."""
    texts = [str(code) or "unknown" for code in codes]
    labels = labels if labels is not None else shown_names(texts, ERROR_CODE_CHARS)
    counts = sorted(Counter(labels[text] for text in texts).items(), key=lambda kv: (-kv[1], kv[0]))
    kept, rest = counts[:FAILURE_CODES_KEPT], counts[FAILURE_CODES_KEPT:]
    if rest:
        kept.append((other_codes_key(len(rest)), sum(n for _, n in rest)))
    return dict(kept)


def _was_cut(code: str) -> bool:
    """Whether ``code`` has the shape of ``shown_name``'s cut at ``ERROR_CODE_CHARS`` (marked or not): "…" where the
    cut puts it. A code written whole of exactly that shape reads the same in metrics.json, and only it."""
    head = ERROR_CODE_CHARS - 1 - _tail(ERROR_CODE_CHARS)
    marked = re.fullmatch(r"(.*) \(#[0-9a-f]{8,64}\)", code, flags=re.DOTALL)
    cut = marked.group(1) if marked else code
    return len(cut) == ERROR_CODE_CHARS and cut[head] == "…"


def cut_codes_note(codes: Iterable[str]) -> str:
    """The sentence a failure count adds when one of its codes (metrics.json's ``failures``, already cut) was cut or
    the rarest were counted together: a reader comparing them with the predictions file finds them shorter or
    fewer; "" when neither was."""
    codes = list(codes)
    parts = []
    if any(_was_cut(code) for code in codes):
        parts.append(f"codes over {ERROR_CODE_CHARS} characters, not written by judge-eval run, are cut in their "
                     "middle at …, and marked (#…) where two would read alike")
    if other := next((found for code in codes if (found := _OTHER_CODES.fullmatch(code))), None):
        parts.append(f"the codes after the {other.group(2)} most frequent are counted together")
    return f" ({'; '.join(parts)})" if parts else ""

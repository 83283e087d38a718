"""How failures are counted by error code (metrics.json's ``failures``, pointwise and pairwise alike), and the note a
failure line adds when a count was bounded: one rule for the scoring, the pairwise metrics and the reports.

Codes are cut as the pages cut names (``eval.reports.names.shown_names``, a leaf module), at ``ERROR_CODE_CHARS``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from eval.reports.names import shown_name, shown_names

__all__ = ["ERROR_CODE_CHARS", "FAILURE_CODES_KEPT", "code_counts", "code_labels", "cut_codes_note",
           "other_codes_key"]

#: The most characters of an error code the failure counts (metrics.json, the reports) keep: every code a judging run
#: writes (``judge.VerdictError``'s, ``request_failed``) is under 30; a predictions file written elsewhere may hold
#: any text there, and each distinct one was written whole in metrics.json, report.md and report.html.
ERROR_CODE_CHARS = 64
#: The most distinct codes a failure count lists; the rest are counted together under ``other_codes_key``: a
#: predictions file written elsewhere may hold one code per item, and metrics.json held one key per failed item.
FAILURE_CODES_KEPT = 50
_OTHER_CODES = re.compile(r"other codes: (\d+) distinct, each no more frequent than the (\d+) listed above")
#: Where ``shown_name``'s cut at ``ERROR_CODE_CHARS`` puts its "…", read off the cut itself rather than restated.
_CUT_AT = shown_name("-" * (ERROR_CODE_CHARS + 1), ERROR_CODE_CHARS).index("…")


def other_codes_key(n_codes: int, kept: int = FAILURE_CODES_KEPT) -> str:
    """The failure count's key of the codes after the ``kept`` most frequent, ``n_codes`` of them. Over
    ``ERROR_CODE_CHARS`` characters and not ending in a (#…) mark, it reads as no code a failure count keeps."""
    return f"other codes: {n_codes} distinct, each no more frequent than the {kept} listed above"


def _texts(codes: Iterable[Any]) -> list[str]:
    return [str(code) or "unknown" for code in codes]


def code_labels(codes: Iterable[Any]) -> dict[str, str]:
    """Each distinct code (as text; an empty one is "unknown") and the key it is counted under: ``shown_names`` at
    ``ERROR_CODE_CHARS``. Labelled once over every failed item of a table, one code reads alike in every split."""
    return shown_names(_texts(codes), ERROR_CODE_CHARS)


def code_counts(codes: Iterable[Any], labels: dict[str, str] | None = None) -> dict[str, int]:
    """Failures by error code, most first (ties by label): each code counted under its label (``labels``, else
    ``code_labels`` of ``codes``), past the ``FAILURE_CODES_KEPT`` most frequent the rest under one
    ``other_codes_key``. The counts add up to the codes given: a failure is never dropped, and one code per failed
    item no longer makes one key per item."""
    texts = _texts(codes)
    labels = labels if labels is not None else code_labels(texts)
    counts = sorted(Counter(labels[text] for text in texts).items(), key=lambda kv: (-kv[1], kv[0]))
    kept, rest = counts[:FAILURE_CODES_KEPT], counts[FAILURE_CODES_KEPT:]
    if rest:
        kept.append((other_codes_key(len(rest)), sum(n for _, n in rest)))
    return dict(kept)


def _was_cut(code: str) -> bool:
    """Whether ``code`` has the shape of ``shown_name``'s cut at ``ERROR_CODE_CHARS`` (marked or not): "…" where the
    cut puts it. A code written whole of exactly that shape reads the same in metrics.json, and only it."""
    marked = re.fullmatch(r"(.*) \(#[0-9a-f]{8,64}\)", code, flags=re.DOTALL)
    cut = marked.group(1) if marked else code
    return len(cut) == ERROR_CODE_CHARS and cut[_CUT_AT] == "…"


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

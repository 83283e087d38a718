"""Text and numbers as the browsable pages write them (``eval.reports.html_report``): escaped HTML without
bidirectional controls, numbers to three decimals with "—" for an undefined one, and report.md's sentences (their
`code` spans and **bold**) as HTML."""

from __future__ import annotations

import html
import math
from typing import Any

from eval.reports.names import BIDI_CONTROLS

__all__ = ["escape", "finite", "md_html", "number"]


def escape(value: Any) -> str:
    """Text as HTML: escaped, and without bidirectional controls, which would show the rest of a name's line in
    another order than it is written (report.md drops the same ones)."""
    return html.escape(BIDI_CONTROLS.sub("", str(value)), quote=True)


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(value: Any, digits: int = 3) -> str:
    if not finite(value):
        return "—"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def md_html(text: str) -> str:
    """A sentence of report.md as HTML: escaped, its `code` spans as <code>, its **bold** as <b>.

    A ``**`` inside a code span is the characters it is, as Markdown reads it (a data file's name may hold one):
    only the text outside code spans toggles bold, so the tags nest as the sentence does."""
    out, bold = [], False
    for k, part in enumerate(escape(text).split("`")):
        if k % 2:
            out.append(f"<code>{part}</code>")
            continue
        for j, piece in enumerate(part.split("**")):
            if j:
                bold = not bold
                out.append("<b>" if bold else "</b>")
            out.append(piece)
    return "".join(out) + ("</b>" if bold else "")

"""A module past ~500 lines says at its top why it is one module (a reader opening it learns why it was not split);
the rest of the house keeps each module to one job."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("judge", "train", "serve", "eval")
#: Lines past which a module must state its reason.
LONG = 500


def test_every_long_module_says_why_it_is_one_module():
    long_without_reason = []
    for path in sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if "Why one module" not in docstring:
            long_without_reason.append(f"{path.relative_to(REPO)} ({text.count(chr(10))} lines)")
    assert not long_without_reason, (
        "modules over 500 lines whose docstring does not say why they are one module (\"Why one module of ~N "
        f"lines: ...\"), or split them: {long_without_reason}")

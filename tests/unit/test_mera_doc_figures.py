"""docs/mera.md states no measured memory figure: a figure appears once, in docs/performance.md beside the command
that measured it (the house rule), and a MiB or GiB in this page is a measurement, never a setting (settings are
named by their flag or field, `memory_mb`, `tmpfs_mb`)."""

from __future__ import annotations

import re
from pathlib import Path

MERA_DOC = Path(__file__).resolve().parents[2] / "docs" / "mera.md"
#: A memory figure: a number and MiB or GiB ("615 MiB", "1 GiB").
MEMORY_FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)? ?(?:MiB|GiB)\b")


def test_the_mera_page_cites_no_memory_figure():
    """The sandbox section said "615 MiB in 300 semaphore sets" with no command beside it."""
    found = [(n, m.group()) for n, line in enumerate(MERA_DOC.read_text(encoding="utf-8").splitlines(), 1)
             for m in MEMORY_FIGURE.finditer(line)]  # fmt: skip
    assert found == []
    assert MEMORY_FIGURE.findall("held 615 MiB, then 1.5 GiB; memory_mb 256") == ["615 MiB", "1.5 GiB"]

"""What tests/unit/test_secrets.py and tests/integration/serving/test_secrets.py share."""

from __future__ import annotations

import stat
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]

#: Planted secrets: long, unique, and never a substring of anything else a run writes.
TYPED = "sk-typed-7f3a9c0e51b2d4"
BODY = "body-secret-91c2e8f4a6"


def files_holding(folder: Path, secrets: list[str]) -> dict[str, list[str]]:
    """{file: [secrets found in it]} for every file under ``folder``."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [s for s in secrets if s.encode() in data]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


def permission_bits(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


"""A JSON object with one value replaced, for tests of readers that must refuse it naming its path."""

from __future__ import annotations

import copy
from typing import Any


def edited(raw: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``raw`` with the value at ``path`` (keys from the top) replaced, the rest untouched."""
    out = copy.deepcopy(raw)
    at = out
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return out

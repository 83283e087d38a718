"""JSON nested deeper than a reader takes: arrays inside arrays, the body a hostile or broken peer sends to stop a
recursive parser (``json.loads`` raises ``RecursionError`` past about a thousand levels) or a depth bound."""

from __future__ import annotations


def nested_arrays(depth: int, inner: str = "") -> str:
    """``depth`` JSON arrays, each inside the last, around ``inner``: ``nested_arrays(3)`` is ``[[[]]]``,
    ``nested_arrays(2, "1")`` is ``[[1]]`` (``.encode()`` for a raw body)."""
    return "[" * depth + inner + "]" * depth

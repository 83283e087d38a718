"""A views stamp judge-serve cannot read as its own (a JSON list, bytes no UTF-8 decodes) means views to rebuild,
never a traceback that refuses the start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serve.released import STAMP, _stamp_matches


def _views(base: Path) -> Path:
    (base / "shared").mkdir(parents=True)  # what the build writes: the rewritten shard, the head
    for kind in ("causal", "classifier"):
        (base / kind).mkdir(parents=True)
        (base / kind / "config.json").write_text("{}", encoding="utf-8")
    return base


def test_a_stamp_naming_the_key_over_whole_views_matches(tmp_path):
    base = _views(tmp_path)
    (base / STAMP).write_text(json.dumps({"key": "k1"}), encoding="utf-8")
    assert _stamp_matches(base, "k1") is True
    assert _stamp_matches(base, "k2") is False


@pytest.mark.parametrize("stamp", [b'["k1"]', b"\xff", b"not json", b'"k1"'])
def test_an_unreadable_or_non_object_stamp_means_rebuild(tmp_path, stamp):
    base = _views(tmp_path)
    (base / STAMP).write_bytes(stamp)
    assert _stamp_matches(base, "k1") is False

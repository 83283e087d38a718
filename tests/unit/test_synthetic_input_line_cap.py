"""A stage's input line over ``MAX_LINE_BYTES`` is refused by file and line before it is parsed: a multi-MB
instruction was read whole (the file twice over), indexed by chrF's n-grams and sent in every paid prompt."""

from __future__ import annotations

import json

import pytest

from train.synthetic import journal


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_5_mb_instruction_is_refused_by_file_and_line(tmp_path):
    path = _write(tmp_path / "instructions.jsonl", [{"id": "a", "instruction": "Короткая."},
                                                    {"id": "b", "instruction": "x" * (5 * 1024 * 1024)}])
    with pytest.raises(ValueError) as err:
        journal.read_input(path, "instructions")
    assert str(err.value).startswith(f"{path}:2: a line over {journal.MAX_LINE_BYTES} bytes, the cap on one input row")


def test_a_line_at_the_cap_is_read_and_one_byte_more_is_not(tmp_path, monkeypatch):
    row = {"id": "a", "instruction": "Инструкция."}
    size = len(json.dumps(row, ensure_ascii=False).encode("utf-8"))
    path = _write(tmp_path / "in.jsonl", [row, row | {"id": "b"}])
    monkeypatch.setattr(journal, "MAX_LINE_BYTES", size)
    assert [r["id"] for r in journal.read_input(path).rows] == ["a", "b"]
    monkeypatch.setattr(journal, "MAX_LINE_BYTES", size - 1)
    with pytest.raises(ValueError, match=r":1: a line over"):
        journal.read_input(path)

"""MERA task files are read strictly by one reader (eval/mera/task_rows.py), shared by ruHumanEval and ruTiE."""

from __future__ import annotations

import gzip

import pytest

from eval.mera import humaneval, rutie
from eval.mera.task_rows import DataError, iter_task_rows


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_rows_are_numbered_by_line_blank_lines_skipped_and_a_last_line_without_newline_kept(tmp_path, suffix):
    """Blank lines are skipped but counted; a last line without its newline is a whole row (input, not a journal)."""
    text = '{"a": 1}\n\n  \n{"a": 2}\n{"a": 3}'
    path = tmp_path / f"task{suffix}"
    if suffix.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    assert list(iter_task_rows(path)) == [(1, {"a": 1}), (4, {"a": 2}), (5, {"a": 3})]


def test_a_line_that_is_not_json_names_the_file_and_row(tmp_path):
    """Any non-blank line that is not JSON is a DataError naming the file and its row; both tasks raise that class."""
    path = tmp_path / "task.jsonl"
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"{path}: line 2: not JSON"):
        list(iter_task_rows(path))
    assert humaneval.DataError is DataError and rutie.DataError is DataError


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_a_line_that_is_not_utf8_names_the_file_and_row(tmp_path, suffix):
    """A row that is not UTF-8 (here Latin-1's 'é') is a DataError naming the file and its row, numbered from 1
    with blank lines counted, not a UnicodeDecodeError naming neither."""
    data = '{"a": 1}\n\n{"a": "caf'.encode("utf-8") + b'\xe9"}\n'
    path = tmp_path / f"task{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    with pytest.raises(DataError) as err:
        list(iter_task_rows(path))
    assert str(err.value) == (f"{path}: line 3: not UTF-8: 'utf-8' codec can't decode byte 0xe9 in position 10: "
                              "invalid continuation byte")

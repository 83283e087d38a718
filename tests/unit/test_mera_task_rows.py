"""MERA task files are read strictly by one reader (eval/mera/task_rows.py), shared by ruHumanEval and ruTiE."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from eval.mera import humaneval, rutie, task_rows
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
def test_a_byte_order_mark_at_the_files_start_is_skipped_and_only_there(tmp_path, suffix):
    """A file saved with a UTF-8 byte order mark (Windows editors) was refused "line 1: not JSON: Unexpected UTF-8
    BOM", where every other reader of a file skips one at its start (judge.plumbing.json_reading.UTF8_BOM); one
    opening a later line (two files joined) is still no JSON."""
    bom = b"\xef\xbb\xbf"
    for data, rows in ((bom + b'{"a": 1}\n{"a": 2}\n', [(1, {"a": 1}), (2, {"a": 2})]),
                       (bom + b'\n{"a": 2}\n', [(2, {"a": 2})])):
        path = tmp_path / f"task{suffix}"
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        assert list(iter_task_rows(path)) == rows
    joined = b'{"a": 1}\n' + bom + b'{"a": 2}\n'
    path.write_bytes(gzip.compress(joined) if suffix.endswith(".gz") else joined)
    with pytest.raises(DataError, match=rf"{path}: line 2: not JSON"):
        list(iter_task_rows(path))


@pytest.mark.parametrize(("line", "kind"), [("[1, 2]", "a list"), ('"text"', "a string"), ("3", "an integer"),
                                            ("null", "null")])
def test_a_line_that_is_json_but_no_object_is_refused_by_the_reader_for_both_tasks(tmp_path, line, kind):
    """A task file written as one JSON array (or a row that is a string, a number, null) is no row: ruTiE said
    "field 'instruction' is missing" of it, ruHumanEval "not a JSON object"; the shared reader says what it is."""
    path = tmp_path / "task.jsonl"
    path.write_text(f'\n{line}\n{{"a": 1}}\n', encoding="utf-8")
    says = rf"{path}: line 2: not a JSON object \({kind}\)"
    with pytest.raises(DataError, match=says):
        list(iter_task_rows(path))
    with pytest.raises(DataError, match=says):
        rutie.load_dialogues(path)
    with pytest.raises(DataError, match=says):
        humaneval.load_tasks(path)


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


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_a_line_longer_than_the_bound_is_refused_naming_it_before_it_is_parsed(tmp_path, suffix, monkeypatch):
    """A line over MAX_LINE_BYTES (here 64) is a DataError naming the file and the line, read no further than the
    bound (a wrong --data, a multi-GB file with no newline, was read into memory whole first); a line of exactly 64
    bytes and its newline is read."""
    monkeypatch.setattr(task_rows, "MAX_LINE_BYTES", 64)
    at_bound = '{"a": "' + "x" * 55 + '"}'  # 7 + 55 + 2 = 64 bytes
    data = f'{at_bound}\n\n{{"a": "{"y" * 60}"}}\n{{"a": 3}}\n'.encode()
    path = tmp_path / f"task{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    rows = iter_task_rows(path)
    assert next(rows) == (1, {"a": "x" * 55})
    with pytest.raises(DataError) as err:
        next(rows)
    assert str(err.value) == (f"{path}: line 3: longer than the limit of 64 bytes for one row: not a task file of "
                              "JSON lines?")


def test_a_line_over_the_bound_ends_the_command_with_exit_2_naming_it(tmp_path, monkeypatch, capsys):
    """Through the command: exit 2 and one line naming the file and the line, before any run folder is made."""
    from eval.mera import cli
    from tests.support.mera_humaneval import MERA_ROW

    monkeypatch.setattr(task_rows, "MAX_LINE_BYTES", 4096)
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(MERA_ROW) + "\n" + "[" * 5000 + "\n", encoding="utf-8")
    assert cli.main(["ruhumaneval", "--self-check", "--data", str(path), "--out", str(tmp_path / "run")]) == 2
    assert f"{path}: line 2: longer than the limit of 4096 bytes" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_the_data_is_hashed_in_chunks_never_read_whole(tmp_path, monkeypatch):
    """--data's hash for the run key reads the file in chunks (it read the whole file into memory at once): the
    SHA-256 of "abc" (FIPS 180-2's first example) with Path.read_bytes unavailable."""
    from eval.mera.progress import sha256_of

    path = tmp_path / "data.jsonl"
    path.write_bytes(b"abc")
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} read whole"))
    assert sha256_of(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

"""criteria: auto names a bad row as the record loader does: a JSONL row by its line from 1 (blank lines counted),
a table's by its 0-based row index. Its readers named a JSONL row by its place among the non-blank rows from 0, so
the row after a blank line was "row 1" where the loader and an editor say line 3."""

from __future__ import annotations

import json

import pytest

from judge.criteria_auto import TfidfClassifier, expand_file, load_labelled

GOOD = {"instruction": "Напиши стихотворение о весне", "answer": "Весна пришла."}


def _jsonl_with_a_blank_line(path, bad):
    """Line 1 a good row, line 2 blank, line 3 ``bad``."""
    path.write_text(json.dumps(GOOD, ensure_ascii=False) + "\n\n" + json.dumps(bad, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def test_expand_file_names_the_bad_row_by_its_line(tmp_path):
    src = _jsonl_with_a_blank_line(tmp_path / "pairs.jsonl", {**GOOD, "task_type": 5})
    with pytest.raises(ValueError) as err:
        expand_file(src, tmp_path / "out", TfidfClassifier.load())
    assert str(err.value).startswith(f"{src}: line 3: field 'task_type' must be text, got an integer")


def test_expand_file_names_both_rows_of_a_repeated_id_by_their_lines(tmp_path):
    src = tmp_path / "pairs.jsonl"
    # other content under the one id (the same row twice is left out, counted: test_criteria_auto_rows.py)
    src.write_text("\n" + json.dumps({**GOOD, "id": "q"}) + "\n\n" + json.dumps({**GOOD, "id": "q", "answer": "Лето."})
                   + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{src}: line 4: id 'q' repeats the id of line 2 with other content: "):
        expand_file(src, tmp_path / "out", TfidfClassifier.load())


def test_load_labelled_names_a_jsonl_row_by_its_line(tmp_path):
    src = tmp_path / "labelled.jsonl"
    src.write_text('{"instruction": "y", "task_type": "Advice"}\n\n{"instruction": "x", "task_type": "Cooking"}\n',
                   encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{src}: line 3: task columns do not name one leaf of the taxonomy: "):
        load_labelled([src])


def test_load_labelled_names_a_parquet_row_by_its_row_index(tmp_path):
    pd = pytest.importorskip("pandas")
    rubrics = "0: плохо\n\n1: хорошо"
    rows = [{**GOOD, "id": str(k), "criteria_name": "Грамотность", "rubrics": rubrics, "criteria_score": 1.0,
             "task_type": task} for k, task in enumerate(["Advice", "Cooking"])]
    src = tmp_path / "records.parquet"
    pd.DataFrame(rows).to_parquet(src)
    with pytest.raises(ValueError, match=rf"^{src}: row index 1: task columns do not name one leaf"):
        load_labelled([src])


def test_expand_file_reads_jsonl_as_the_record_loader_does(tmp_path):
    """expand_file had its own JSONL reader: a file starting with a byte order mark (Notepad writes one), which
    load_records reads, was refused as "invalid JSON", and a byte that is not UTF-8 left as a bare
    UnicodeDecodeError naming neither file nor line."""
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD, ensure_ascii=False).encode() + b"\n")
    items = expand_file(bom, tmp_path / "out", TfidfClassifier.load())
    assert items.read_text(encoding="utf-8").count("\n") >= 1
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(json.dumps(GOOD).encode() + b'\n\n{"instruction": "\xff"}\n')
    with pytest.raises(ValueError, match=rf"^{bad}: line 3: not UTF-8 text \(byte 0xff at column 18\)$"):
        expand_file(bad, tmp_path / "out2", TfidfClassifier.load())
    assert not (tmp_path / "out2").exists()

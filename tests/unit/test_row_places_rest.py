"""Rows named as the record loader names them (``judge.records.row_place``): a JSONL row by its line, from 1 with
blank lines counted ("line 3"), a table row by its 0-based index ("row index 1"), in the readers of predictions,
MERA task files and the synthetic-data stages. Each file here has a blank line before its bad row: counting the rows
read (or from 0) named the row before it, or called a line a "row"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import RecordError


def _lines(path: Path, rows: list[dict | str | None]) -> Path:
    """One line per entry: a dict as JSON, a str as written, None as a blank line."""
    text = "".join("\n" if r is None else (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n"
                   for r in rows)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------- the journal


def test_journal_lines_are_numbered_as_an_editor_numbers_them(tmp_path):
    """Blank lines are skipped but counted; a whole last row without its newline has its line too. ``iter_journal``
    still yields the rows alone."""
    from judge.plumbing.journal import iter_journal, iter_journal_lines

    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n\n\n{"a": 2}\n{"a": 3}')
    assert list(iter_journal_lines(path)) == [(1, {"a": 1}), (4, {"a": 2}), (5, {"a": 3})]
    assert list(iter_journal(path)) == [{"a": 1}, {"a": 2}, {"a": 3}]


# ------------------------------------------------------------------------------------------------ predictions


def test_a_bad_prediction_after_a_blank_line_is_named_by_its_line(tmp_path):
    """Rows counted from 1 without blank lines named the bad row "row 2" (the line before it, after a blank one)."""
    from eval.judging.predictions import iter_predictions, read_predictions

    path = _lines(tmp_path / "predictions.jsonl",
                  [{"id": "a", "score": 1, "parse_ok": True}, None, {"id": "b", "score": "2"}])
    expected = f"{path}: line 3.score: expected a finite number, got a string '2'"
    with pytest.raises(ValueError) as streamed:
        list(iter_predictions(path))
    assert str(streamed.value) == expected
    with pytest.raises(ValueError) as table:  # Arrow's reader refuses the row; the line reader names it
        read_predictions(path)
    assert str(table.value) == expected


def test_a_prediction_value_that_is_not_utf8_is_named_by_its_line(tmp_path):
    """Arrow's table skips blank lines: its row 1 (from 0) is line 3 here, after a blank line."""
    from eval.judging.predictions import read_prediction_table

    path = tmp_path / "predictions.jsonl"
    path.write_bytes(b'{"id": "a"}\n\n{"id": "b", "feedback": "ok\xff"}\n')
    with pytest.raises(ValueError) as err:
        read_prediction_table(path)
    assert str(err.value) == f"{path}: line 3.feedback: not UTF-8 text (invalid start byte at byte 2: b'ok\\xff')"


def test_a_whole_last_prediction_without_its_newline_is_read_by_the_table_reader_too(tmp_path, caplog):
    """The journal rule: a whole last row without its newline is a row for every reader. Arrow's reader (judge-eval
    score) dropped it as "a write cut by a kill" where iter_predictions (resume) kept it: one item unscored while
    the run counted it done. A cut last line is still dropped, with the warning."""
    from eval.judging.predictions import iter_predictions, read_predictions

    path = tmp_path / "predictions.jsonl"
    path.write_bytes(b'{"id": "a", "score": 1, "parse_ok": true}\n{"id": "b", "score": 2, "parse_ok": true}')
    with caplog.at_level("WARNING"):
        assert [r["id"] for r in read_predictions(path)] == ["a", "b"] == [r["id"] for r in iter_predictions(path)]
    assert "dropped" not in caplog.text
    path.write_bytes(b'{"id": "a", "score": 1, "parse_ok": true}\n{"id": "b", "sco')
    with caplog.at_level("WARNING"):
        assert [r["id"] for r in read_predictions(path)] == ["a"]
    assert "dropped its last line" in caplog.text


# ---------------------------------------------------------------------------------------------------- MERA


def test_a_mera_task_line_that_is_not_json_is_named_as_a_line(tmp_path):
    from eval.mera.task_rows import DataError, iter_task_rows

    path = _lines(tmp_path / "task.jsonl", [{"a": 1}, None, "{oops"])
    with pytest.raises(DataError, match=rf"^{path}: line 3: not JSON: "):
        list(iter_task_rows(path))


def test_a_ruhumaneval_row_missing_a_field_is_named_by_its_line(tmp_path):
    from eval.mera.humaneval import load_tasks
    from eval.mera.task_rows import DataError
    from tests.support.mera_humaneval import SAMPLE

    good, second = (json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()[:2])
    del second["meta"]["entry_point"]
    path = _lines(tmp_path / "he.jsonl", [good, None, second])
    with pytest.raises(DataError) as err:
        load_tasks(path)
    assert str(err.value) == f"{path}: line 3 (id {second['meta']['id']}): field 'meta.entry_point' is missing"
    path = _lines(tmp_path / "odd.jsonl", [good, None, {"x": 1}])
    with pytest.raises(DataError, match=rf"^{path}: line 3: neither a MERA row"):
        load_tasks(path)


def test_a_rutie_dialogue_written_two_ways_names_both_lines(tmp_path):
    from eval.mera.rutie import load_dialogues
    from eval.mera.task_rows import DataError
    from tests.support.mera_rutie import SAMPLE

    first = json.loads(SAMPLE.read_text(encoding="utf-8").splitlines()[0])
    second = {**first, "meta": {**first["meta"], "dialog_id": str(first["meta"]["dialog_id"]), "question_id": 99}}
    path = _lines(tmp_path / "rutie.jsonl", [None, first, None, second])
    with pytest.raises(DataError) as err:
        load_dialogues(path)
    said = str(err.value)
    assert said.startswith(f"{path}: line 4: field 'meta.dialog_id' is '{first['meta']['dialog_id']}', line 2's is "
                           f"{first['meta']['dialog_id']}"), said
    missing = {**first, "meta": {k: v for k, v in first["meta"].items() if k != "question_id"}}
    path = _lines(tmp_path / "bad.jsonl", [first, None, missing])
    with pytest.raises(DataError, match=rf"^{path}: line 3: field 'meta.question_id' is missing"):
        load_dialogues(path)


# -------------------------------------------------------------------------------------------- synthetic data


def test_a_synthetic_stage_input_names_a_jsonl_line_and_a_table_row_index(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from train.synthetic.journal import read_input, require_fields

    path = _lines(tmp_path / "instructions.jsonl", [{"id": "a", "instruction": "x"}, None, {"id": "a", "instruction": "y"}])
    inputs = read_input(path)
    with pytest.raises(RecordError) as err:
        require_fields(inputs.rows, ("id", "instruction"), path, row_index=inputs.row_index)
    assert str(err.value) == f"{path}: line 3: field 'id': 'a' repeats the id of line 1"
    table = tmp_path / "instructions.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a", "instruction": "x"}, {"id": "b", "instruction": None}]), table)
    inputs = read_input(table)
    with pytest.raises(RecordError) as err:
        require_fields(inputs.rows, ("id", "instruction"), table, row_index=inputs.row_index)
    assert str(err.value) == f"{table}: row index 1: field 'instruction': missing"


def test_dedup_task_fields_are_named_by_line(tmp_path):
    from train.synthetic.dedup import task_types_of
    from train.synthetic.journal import read_input

    path = _lines(tmp_path / "ins.jsonl", [{"id": "a", "task_type": "Plans"}, None, {"id": "b", "task_type": 5}])
    inputs = read_input(path)
    with pytest.raises(RecordError) as err:
        task_types_of(inputs.rows, path, inputs.row_index)
    assert str(err.value) == f"{path}: line 3: field 'task_type': an integer, not a string"


def test_a_pairwise_prediction_after_a_blank_line_is_named_by_its_line(tmp_path):
    """pairwise_predictions.jsonl counted the rows read from 1 and called them rows: a bad row on line 3 after a
    blank line was "row 2"."""
    from eval.pairwise.judging import read_pairwise_rows

    good = {"id": "p1", "order": "original", "judge": "j", "raw_output": "x", "feedback": "", "score": 1.0, "verdict": 1.0,
            "parse_ok": True, "error": None, "reason": "", "latency_s": 0.1}
    path = _lines(tmp_path / "pairwise_predictions.jsonl", [good, None, {k: v for k, v in good.items() if k != "order"}])
    with pytest.raises(ValueError, match=r"pairwise_predictions\.jsonl: line 3"):
        read_pairwise_rows(path)

"""read_predictions' fast path (the whole file parsed in one pass) gives exactly the strict reader's rows, and leaves
every error to it: the same message naming the file, line and field, and the same warning for a torn last line."""

from __future__ import annotations

import json
import logging
import random

import pytest

from eval.predictions import PREDICTION_FIELDS, _read_rows_fast, iter_predictions, read_predictions


def _seeded_rows(n: int, seed: int = 0) -> list[dict]:
    """Rows as run writes them and as older or other tools may: keys missing, nulls, score_probs, 0/1 flags."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        row = {"id": f"item-{i}", "judge": rng.choice(["j", None]), "raw_output": rng.choice(["[RESULT] 1", None, ""]),
               "feedback": rng.choice(["ok", "", None]), "score": rng.choice([1.0, 2, None, 0.5]),
               "parse_ok": rng.choice([True, False, 1, 0, None]), "error": rng.choice([None, "no_result"]),
               "reason": rng.choice(["", None, "why"]), "score_source": rng.choice(["verdict", None]),
               "in_scale": rng.choice([True, False, None]), "regression_score": rng.choice([None, 1.25]),
               "expected_score": rng.choice([None, 1.5]), "confidence": rng.choice([None, 0.9]),
               "score_probs": rng.choice([None, {"0": 0.25, "1": 0.75}]), "latency_s": rng.choice([None, 0.0, 1])}
        for key in rng.sample(list(row)[1:], rng.randrange(0, 8)):
            del row[key]  # older runs' rows lack some fields
        rows.append(row)
    return rows


def _write(path, rows, tail: str = "") -> None:
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    lines.insert(len(lines) // 2, "")  # a blank line is skipped by both readers
    path.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")


def test_fast_rows_equal_the_strict_readers_rows(tmp_path):
    """Seeded rows with nulls, missing keys, score_probs and 0/1 flags: the same dicts, keys in the same order."""
    path = tmp_path / "predictions.jsonl"
    _write(path, _seeded_rows(500))
    fast, strict = _read_rows_fast(path), list(iter_predictions(path))
    assert fast is not None, "these rows are plainly valid: the fast path must read them"
    assert fast == strict == read_predictions(path) and len(fast) == 500
    assert all(list(row) == list(PREDICTION_FIELDS) for row in fast)
    assert [type(v) for row in fast for v in row.values()] == [type(v) for row in strict for v in row.values()]


@pytest.mark.parametrize("bad, message", [
    ('{"id": "x", "scroe": 1}', r"predictions.jsonl: row 4: unknown prediction field\(s\) \['scroe'\]"),
    ('{"score": 1}', r"predictions.jsonl: row 4.id: required field is missing"),
    ('{"id": null}', r"predictions.jsonl: row 4.id: required field is missing"),
    ('{"id": "x", "score": 1', r"predictions.jsonl:5: not a JSON line"),
    ('[1, 2]', r"predictions.jsonl:5: a JSON list, not an object"),
    ('null', r"predictions.jsonl:5: a JSON NoneType, not an object"),
])
def test_a_bad_row_in_the_middle_gets_the_strict_readers_error(tmp_path, bad, message):
    """A bad row between good ones: read_predictions raises the strict reader's error, naming file, row and field
    (rows count from 1 without blank lines, file lines with them: row 4 is line 5 here)."""
    path = tmp_path / "predictions.jsonl"
    rows = _seeded_rows(6)
    lines = [json.dumps(r) for r in rows[:3]] + [bad] + [json.dumps(r) for r in rows[3:]]
    path.write_text(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message) as fast:
        read_predictions(path)
    with pytest.raises(ValueError) as strict:
        list(iter_predictions(path))
    assert str(fast.value) == str(strict.value)


def test_a_numeric_id_is_read_as_text_as_the_strict_reader_does(tmp_path):
    """A row the fast path leaves to the strict reader (an id that is a number) is still read, as a string."""
    path = tmp_path / "predictions.jsonl"
    _write(path, [{"id": 7, "score": 1.0}, {"id": "b"}])
    assert [r["id"] for r in read_predictions(path)] == ["7", "b"]
    assert read_predictions(path) == list(iter_predictions(path))


def test_a_torn_last_line_is_dropped_with_the_same_warning(tmp_path, caplog):
    """A last line without its newline is dropped, with the strict reader's warning, once."""
    path = tmp_path / "predictions.jsonl"
    _write(path, _seeded_rows(5), tail='{"id": "cut", "sco')
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        fast = read_predictions(path)
    fast_warnings = [r.getMessage() for r in caplog.records]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        strict = list(iter_predictions(path))
    assert fast == strict and [r["id"] for r in fast] == [f"item-{i}" for i in range(5)]
    assert fast_warnings == [r.getMessage() for r in caplog.records] and len(fast_warnings) == 1
    assert "dropped its last line" in fast_warnings[0]


def test_the_reading_process_gives_read_predictions_rows(tmp_path):
    """PredictionsProcess (the child that reads while the records load) returns read_predictions' rows."""
    from eval.predictions import PredictionsProcess

    path = tmp_path / "predictions.jsonl"
    _write(path, _seeded_rows(200))
    with PredictionsProcess(tmp_path) as reading:  # a run folder works, as for read_predictions
        assert reading.rows() == read_predictions(path)


def test_the_reading_process_raises_the_same_error_and_relays_the_torn_line_warning(tmp_path, caplog):
    """A bad row: the child's ValueError is raised here with the same text; a torn last line: its warning is
    emitted here, through the judge.plumbing.journal logger, once."""
    from eval.predictions import PredictionsProcess

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a"}) + "\n" + json.dumps({"id": "b", "scroe": 1}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as strict:
        read_predictions(bad)
    with PredictionsProcess(bad) as reading, pytest.raises(ValueError) as child:
        reading.rows()
    assert str(child.value) == str(strict.value) and "bad.jsonl: row 2: unknown prediction field" in str(child.value)

    torn = tmp_path / "torn.jsonl"
    _write(torn, _seeded_rows(3), tail='{"id": "cut"')
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"), PredictionsProcess(torn) as reading:
        rows = reading.rows()
    assert [r["id"] for r in rows] == ["item-0", "item-1", "item-2"]
    warnings = [r for r in caplog.records if r.name == "judge.plumbing.journal"]
    assert len(warnings) == 1 and "dropped its last line" in warnings[0].getMessage()
    assert warnings[0].levelno == logging.WARNING

"""The one reader of ``predictions.jsonl`` (``eval.judging.predictions.read_prediction_table``, Arrow's JSON reader with
the row's types): every field in order with its defaults, the first bad row named by file, row and field, a torn
last line dropped with one warning, blank lines skipped."""

from __future__ import annotations

import json
import logging
import random

import pyarrow as pa
import pytest

from eval.judging.predictions import (PREDICTION_FIELDS, PredictionRow, iter_predictions, prediction_rows,
                                      prediction_table, read_prediction_table, read_predictions, resume_predictions)


def _seeded_rows(n: int, seed: int = 0) -> list[dict]:
    """Rows as run writes them and as older runs did: keys missing, nulls, score_probs, integer scores."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        row = {"id": f"item-{i}", "judge": rng.choice(["j", None]), "raw_output": rng.choice(["[RESULT] 1", None, ""]),
               "feedback": rng.choice(["ok", "", None]), "score": rng.choice([1.0, 2, None, 0.5]),
               "parse_ok": rng.choice([True, False, None]), "error": rng.choice([None, "no_result"]),
               "reason": rng.choice(["", None, "why"]), "score_source": rng.choice(["verdict", None]),
               "in_scale": rng.choice([True, False, None]), "regression_score": rng.choice([None, 1.25]),
               "expected_score": rng.choice([None, 1.5]), "confidence": rng.choice([None, 0.9]),
               "score_probs": rng.choice([None, {"0": 0.25, "1": 0.75}, {"1": 1.0}]), "latency_s": rng.choice([None, 0.0, 1])}
        for key in rng.sample(list(row)[1:], rng.randrange(0, 8)):
            del row[key]  # older runs' rows lack some fields
        if row.get("score") is not None and row.get("parse_ok") is None:
            row["parse_ok"] = True  # every run wrote parse_ok beside a score: one without it is refused
        if row.get("score") is None and row.get("parse_ok") is True:
            row["parse_ok"] = False  # nor a parsed verdict without its score
        if row.get("score") is not None and row.get("parse_ok") is False:
            row["parse_ok"] = True  # nor a score beside a verdict that did not parse
        rows.append(row)
    return rows


def _write(path, rows, tail: str = "") -> None:
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    lines.insert(len(lines) // 2, "")  # a blank line is skipped
    path.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")


def test_the_table_holds_each_row_as_prediction_row_reads_it(tmp_path):
    """Seeded rows with nulls, missing keys and score_probs: the rows are PredictionRow.from_json's, keys in
    PREDICTION_FIELDS order, and the streaming reader (resume) reads the same rows."""
    path = tmp_path / "predictions.jsonl"
    rows = _seeded_rows(500)
    _write(path, rows)
    table = read_prediction_table(tmp_path)  # a run folder works too
    assert table.column_names == list(PREDICTION_FIELDS) and table.num_rows == 500
    read = read_predictions(path)
    expected = [PredictionRow.from_json(row).to_json() for row in rows]
    assert read == expected == list(iter_predictions(path))
    assert read_predictions(path) == read  # the same on a second reading
    assert all(list(row) == list(PREDICTION_FIELDS) for row in read)
    assert {row["parse_ok"] for row in read} == {True, False}  # absent or null: False, as PredictionRow's default


def test_rows_given_as_dicts_make_the_same_table(tmp_path):
    """``prediction_table`` (rows in memory, as tests and callers pass them) gives the file reader's rows."""
    path = tmp_path / "predictions.jsonl"
    rows = _seeded_rows(50, seed=3)
    _write(path, rows)
    from eval.judging.predictions import prediction_rows

    assert prediction_rows(prediction_table(rows)) == read_predictions(path)


@pytest.mark.parametrize("bad, message", [
    ('{"id": "x", "scroe": 1}', r"predictions.jsonl: line 5: unknown prediction field\(s\) \['scroe'\]"),
    ('{"score": 1}', r"predictions.jsonl: line 5.id: required field is missing"),
    ('{"id": null}', r"predictions.jsonl: line 5.id: required field is missing"),
    ('{"id": 7}', r"predictions.jsonl: line 5.id: expected a string, got an integer 7"),
    ('{"id": "x", "score": "2"}', r"predictions.jsonl: line 5.score: expected a finite number, got a string '2'"),
    ('{"id": "x", "score": NaN}', r"predictions.jsonl: line 5.score: expected a finite number, got a number nan"),
    ('{"id": "x", "latency_s": Infinity}', r"predictions.jsonl: line 5.latency_s: expected a finite number, got a number inf"),
    ('{"id": "x", "score_probs": {"1": NaN}}', r"predictions.jsonl: line 5.score_probs: expected an object of finite"),
    ('{"id": "x", "parse_ok": 1}', r"predictions.jsonl: line 5.parse_ok: expected a boolean, got an integer 1"),
    ('{"id": "x", "score_probs": {"1": "a"}}', r"predictions.jsonl: line 5.score_probs: expected an object of finite numbers"),
    # probabilities no float column holds (as "scroe" above, a field outside the schema): refused by Arrow's read
    ('{"id": "x", "score_probs": {"1": true}}', r"predictions.jsonl: line 5.score_probs: expected an object of finite numbers"),
    ('{"id": "x", "score_probs": {"1": {"2": 0.5}}}', r"predictions.jsonl: line 5.score_probs: expected an object of finite"),
    ('{"id": "x", "score": 1', r"predictions.jsonl:5: not a JSON line"),
    ('[1, 2]', r"predictions.jsonl:5: a list, not an object"),
    # read as "not the head's", it was scored as a verdict's, silently: the target is the mode, not the mean
    ('{"id": "x", "score": 1, "parse_ok": true, "score_source": "regression-head"}',
     r"predictions.jsonl: line 5.score_source: 'regression-head' is not one of verdict, regression_head, what"),
    ('{"id": "x", "feedback": "\\ud800"}',
     r"predictions.jsonl: line 5.feedback: not valid Unicode text: a lone surrogate \(U\+D800"),
    ('null', r"predictions.jsonl:5: null, not an object"),
])
def test_a_bad_row_in_the_middle_is_named_by_file_row_and_field(tmp_path, bad, message):
    """A bad row between good ones: the error names the file, the line and the field (blank lines counted, as the
    record loader names a JSONL row: the fourth row is line 5 here); the streaming reader says the same."""
    path = tmp_path / "predictions.jsonl"
    rows = _seeded_rows(6)
    lines = [json.dumps(r) for r in rows[:3]] + [bad] + [json.dumps(r) for r in rows[3:]]
    path.write_text(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message) as table:
        read_prediction_table(path)
    with pytest.raises(ValueError) as streamed:
        list(iter_predictions(path))
    assert str(table.value) == str(streamed.value)


@pytest.mark.parametrize("bom, newline", [(True, "\n"), (False, "\r\n"), (True, "\r\n"), (False, "\r\r\n")])
def test_a_file_saved_on_windows_reads_as_the_streaming_reader_reads_it(tmp_path, bom, newline):
    """A UTF-8 byte order mark and CRLF line ends (json.loads, the streaming reader, takes them; Arrow took neither):
    both readers give the same rows as the plain file."""
    rows = _seeded_rows(6)
    plain, windows = tmp_path / "plain.jsonl", tmp_path / "windows.jsonl"
    _write(plain, rows)
    text = "".join(json.dumps(r) + newline for r in rows)
    windows.write_bytes(("\ufeff" if bom else "").encode() + text.encode("utf-8"))
    assert read_predictions(windows) == read_predictions(plain) == list(iter_predictions(windows))


@pytest.mark.parametrize("indent", [" ", "\t", "  \t"])
def test_a_row_indented_with_json_whitespace_reads_as_the_streaming_reader_reads_it(tmp_path, indent):
    """Spaces or tabs before a row's ``{`` (json.loads, the streaming reader, takes them; Arrow's line check did not):
    both readers give the same rows as the plain file, where the table reader refused the file with "not a
    predictions file Arrow can read (None)"."""
    rows = _seeded_rows(6)
    plain, indented = tmp_path / "plain.jsonl", tmp_path / "indented.jsonl"
    _write(plain, rows)
    indented.write_text("".join((indent if k % 2 else "") + json.dumps(r) + "\n" for k, r in enumerate(rows)),
                        encoding="utf-8")
    assert read_predictions(indented) == read_predictions(plain) == list(iter_predictions(indented))


def test_a_row_past_the_line_reader_but_refused_by_the_table_reader_says_so(tmp_path):
    """The fallback of the table reader's refusals, for a row the line-by-line reader finds nothing wrong with:
    its message says what happened (Arrow's error when it gave one), never "(None)"."""
    from eval.judging.predictions import _raise_first_bad_row

    path = tmp_path / "predictions.jsonl"
    _write(path, _seeded_rows(3))
    with pytest.raises(ValueError) as unnamed:
        _raise_first_bad_row(path, None)
    assert str(unnamed.value) == (f"{path}: a row the table reader (Arrow's JSON reader and its checks of the "
                                  "columns) refuses, though the line-by-line reader finds nothing wrong with any line")
    with pytest.raises(ValueError) as named:
        _raise_first_bad_row(path, ValueError("JSON parse error: Invalid value. in row 0"))
    assert str(named.value) == (f"{path}: not a predictions file Arrow can read (JSON parse error: Invalid value. "
                                "in row 0)")


def test_a_torn_last_line_is_dropped_with_one_warning(tmp_path, caplog):
    """A last line without its newline is dropped, with judge.plumbing.journal's warning, once."""
    path = tmp_path / "predictions.jsonl"
    _write(path, _seeded_rows(5), tail='{"id": "cut", "sco')
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        rows = read_predictions(path)
    warnings = [r.getMessage() for r in caplog.records if r.name == "judge.plumbing.journal"]
    assert [r["id"] for r in rows] == [f"item-{i}" for i in range(5)]
    assert len(warnings) == 1 and "dropped its last line" in warnings[0]


def test_an_empty_file_is_an_empty_table(tmp_path):
    """No rows (a run killed before its first answer): a table with every column and no row."""
    path = tmp_path / "predictions.jsonl"
    path.write_text("\n", encoding="utf-8")
    table = read_prediction_table(path)
    assert table.num_rows == 0 and table.column_names == list(PREDICTION_FIELDS)


@pytest.mark.parametrize("field, value, message", [
    ("feedback", b"ok\xff", r"line 5.feedback: not UTF-8 text (invalid start byte at byte 2: b'ok\xff')"),
    ("judge", b"J\xff", r"line 5.judge: not UTF-8 text (invalid start byte at byte 1: b'J\xff')"),
    ("id", b"\xffx", r"line 5.id: not UTF-8 text (invalid start byte at byte 0: b'\xff')"),
    ("error", b"\xc3(", r"line 5.error: not UTF-8 text (invalid continuation byte at byte 0: b'\xc3')"),
])
def test_a_value_that_is_not_utf8_is_named_by_file_row_and_field(tmp_path, field, value, message):
    """Arrow's JSON reader does not check UTF-8: a byte that is not (a file another tool wrote in Latin-1) failed
    later, in to_pylist, as a bare UnicodeDecodeError naming no file, row or field."""
    path = tmp_path / "predictions.jsonl"
    lines = [json.dumps(r).encode() for r in _seeded_rows(6)]
    bad = json.dumps({"id": "x", field: "@"}).encode().replace(b"@", value)
    path.write_bytes(b"\n".join(lines[:1] + [b""] + lines[1:3] + [bad] + lines[3:]) + b"\n")
    with pytest.raises(ValueError) as caught:
        read_predictions(path)
    assert str(caught.value) == f"{path}: {message}"


@pytest.mark.parametrize("bad, column", [(b'{"id": "x", "score_probs": {"1\xff": 0.5}}', 31),
                                         (b'{"id": "x", "k\xff": 1}', 15),
                                         (b'{"id": "x", "score_probs": {"1": {"\xff": 1}}}', 36)])
def test_a_key_that_is_not_utf8_is_named_by_file_and_line(tmp_path, bad, column):
    """A key that is not UTF-8 (an Arrow field name): the line and the byte, in the data loader's words
    (judge.record_sources.jsonl_rows); the column counts the line's bytes from 1, found by hand."""
    path = tmp_path / "predictions.jsonl"
    lines = [json.dumps(r).encode() for r in _seeded_rows(6)]
    path.write_bytes(b"\n".join(lines[:3] + [bad] + lines[3:]) + b"\n")
    with pytest.raises(ValueError) as caught:
        read_predictions(path)
    assert str(caught.value) == f"{path}: line 4: not UTF-8 text (byte 0xff at column {column})"


# -------------------------------------------------------------------------------- a line json.loads reads as UTF-16


@pytest.mark.parametrize("padding", ["", " "])  # an even and an odd line length: two different UTF-16 failures
def test_a_line_starting_with_ff_fe_is_said_not_utf8_by_every_reader(tmp_path, padding):
    """json.loads on bytes guesses the encoding from a BOM: a line starting with FF FE was read as UTF-16, and the
    error said "'utf-16-le' codec can't decode byte 0x0a" (odd length) or "Expecting value" (even). The file is
    UTF-8 and 0xff, the line's first byte, is the fault: said as the data loader says it."""
    path = tmp_path / "predictions.jsonl"
    rows = [json.dumps({"id": f"r{i}", "score": 1.0, "parse_ok": True}).encode() for i in range(4)]
    rows[2] = b"\xff\xfe" + rows[2] + padding.encode()
    path.write_bytes(b"\n".join(rows) + b"\n")
    said = f"{path}: line 3: not UTF-8 text (byte 0xff at column 1)"
    for read in (read_predictions, lambda p: list(iter_predictions(p))):
        with pytest.raises(ValueError) as caught:
            read(path)
        assert str(caught.value) == said
    with pytest.raises(ValueError) as caught:
        resume_predictions(path, ["r0", "r1", "r2", "r3"])
    assert str(caught.value).startswith(said + "; the run cannot resume from this file")


def test_a_line_that_is_json_but_not_an_object_keeps_the_journal_error(tmp_path):
    """Only a line that is not UTF-8 is reworded: a UTF-8 line the journal refuses keeps its own error."""
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"id": "a"}\n[1, 2]\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"predictions.jsonl:2: a list, not an object$"):
        list(iter_predictions(path))


# ------------------------------------------------------------------------------------------ a score without parse_ok


@pytest.mark.parametrize("parse_ok, said", [(None, "null"), ("absent", "absent")])
def test_a_score_without_its_parse_ok_is_refused_by_both_readers(tmp_path, parse_ok, said):
    """A row with a score but no parse_ok was a parse failure (the default false): score said "12 the verdict did not
    parse" where POLLUX's evaluator counted format_acc 1.000. judge-eval run writes parse_ok in every row."""
    path = tmp_path / "predictions.jsonl"
    bad = {"id": "b", "score": 2.0} if parse_ok == "absent" else {"id": "b", "score": 2.0, "parse_ok": None}
    rows = [{"id": "a", "score": 1.0, "parse_ok": True}, {}, bad]
    path.write_text("\n".join(json.dumps(r) if r else "" for r in rows) + "\n", encoding="utf-8")
    message = (f"{path}: line 3.parse_ok: {said} in a row with score 2.0; `judge-eval run` writes parse_ok in every "
               "row (true beside a score): whether this verdict parsed is unknown")
    for read in (read_predictions, lambda p: list(iter_predictions(p))):
        with pytest.raises(ValueError) as caught:
            read(path)
        assert str(caught.value) == message
    with pytest.raises(ValueError, match=r"^row 1\.parse_ok: absent in a row with score 2\.0;"):
        prediction_table([{"id": "b", "score": 2.0}])


@pytest.mark.parametrize("score, said", [(None, "null"), ("absent", "absent")])
def test_a_parsed_verdict_without_its_score_is_refused_by_both_readers(tmp_path, score, said):
    """The reverse: parse_ok true and no score was silently a parse failure in `score`'s counts. judge-eval run
    writes the score of every parsed verdict."""
    path = tmp_path / "predictions.jsonl"
    bad = {"id": "b", "parse_ok": True} if score == "absent" else {"id": "b", "score": None, "parse_ok": True}
    rows = [{"id": "a", "score": 1.0, "parse_ok": True}, {}, bad]
    path.write_text("\n".join(json.dumps(r) if r else "" for r in rows) + "\n", encoding="utf-8")
    message = (f"{path}: line 3.score: {said} in a row with parse_ok true; `judge-eval run` writes the score of "
               "every parsed verdict: what this verdict gave is unknown")
    for read in (read_predictions, lambda p: list(iter_predictions(p))):
        with pytest.raises(ValueError) as caught:
            read(path)
        assert str(caught.value) == message


def test_parse_ok_still_defaults_to_false_without_a_score_and_refuses_a_score_beside_false(tmp_path):
    """No score, no parse_ok: a failure, as before. parse_ok false beside a score is refused, naming the row: `judge-eval
    run` writes no score beside a verdict that did not parse, and the scorer would have counted the row failed while
    the POLLUX-eval line re-read its raw output."""
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    assert [(r["parse_ok"], r["score"]) for r in read_predictions(path)] == [(False, None)]
    assert [(r["parse_ok"], r["score"]) for r in iter_predictions(path)] == [(False, None)]
    path.write_text('{"id": "a"}\n{"id": "b", "score": 1.0, "parse_ok": false}\n', encoding="utf-8")
    for read in (read_predictions, lambda p: list(iter_predictions(p))):
        with pytest.raises(ValueError, match=r"line 2\.score: 1\.0 in a row with parse_ok false"):
            read(path)


def test_a_row_across_lines_or_a_minus_nan_is_refused_as_the_line_reader_refuses_it(tmp_path):
    """Arrow reads an object across lines and "-NaN" as NaN; json.loads, line by line, refuses both. The table
    reader read a row cut after its first field with its rest on the next line (and two rows on a third) as three
    rows, and a score of -NaN as no score: it now hands both to the line reader, which names the line."""
    whole, second, third = (json.dumps({"id": f"r{i}", "judge": "j", "raw_output": "x", "score": 1.0,
                                        "parse_ok": True}) for i in range(3))  # fmt: skip
    cut = whole.index(",") + 1
    across, nan = tmp_path / "across.jsonl", tmp_path / "nan.jsonl"
    across.write_text(f"{whole[:cut]}\n{whole[cut:]}\n{second} {third}\n", encoding="utf-8")
    nan.write_text(f"{whole}\n{second.replace('1.0', '-NaN')}\n", encoding="utf-8")
    for path, line in ((across, 1), (nan, 2)):
        for read in (read_prediction_table, lambda p: list(iter_predictions(p))):
            with pytest.raises(ValueError, match=rf"{path.name}:{line}: not a JSON line"):
                read(path)


@pytest.mark.parametrize("between", ["", " "])
def test_two_rows_on_one_line_are_refused_by_both_readers(tmp_path, between):
    """Two objects on one line (files joined without a newline between them) are one line json.loads refuses:
    ``run``'s resume stops on it naming the line, and ``score``'s table reader, where Arrow reads them as two rows,
    names the same line rather than scoring both (and numbering every later row one line off)."""
    first, second, third = (json.dumps({"id": f"r{i}", "judge": "j", "raw_output": "x", "score": 1.0,
                                        "parse_ok": True}) for i in range(3))  # fmt: skip
    path = tmp_path / "predictions.jsonl"
    path.write_text(f"{first}\n{second}{between}{third}\n", encoding="utf-8")
    for read in (read_prediction_table, lambda p: list(iter_predictions(p))):
        with pytest.raises(ValueError, match=rf"{path.name}:2: not a JSON line \(Extra data"):
            read(path)


@pytest.mark.parametrize("field, value", [("latency_s", 2**63), ("confidence", 10**30), ("score_probs", {"1": 2**64})])
def test_an_integer_no_arrow_column_holds_reads_alike_on_every_path_of_the_table_reader(tmp_path, field, value):
    """A finite integer past 2**53 in a number field (an int64's range, a float64's exact integers) reads as the
    float it is whether Arrow's reader or the line reader builds the table (an indented row sends the file to the
    line reader): the line reader's table refused it with Arrow's "Integer value ... outside of the range exactly
    representable" or a bare OverflowError, naming no file, row or field."""
    row = {"id": "r0", "judge": "j", "raw_output": "x", "score": 1.0, "parse_ok": True, field: value}
    plain, indented = tmp_path / "plain.jsonl", tmp_path / "indented.jsonl"
    plain.write_text(json.dumps(row) + "\n", encoding="utf-8")
    indented.write_text(" " + json.dumps(row) + "\n", encoding="utf-8")
    read = read_predictions(indented)
    assert read == read_predictions(plain)
    got = read[0][field]
    assert got == (float(value) if field != "score_probs" else {"1": float(2**64)})
    assert list(iter_predictions(indented))[0][field] == value  # the row itself holds the file's integer


@pytest.mark.parametrize("probs", ['"score_probs": {"1": 0.5, "2": null}',
                                   '"score_probs": {"}": 0.5, "2": null}',
                                   '"score\\u005fprobs": {"1": 0.5, "2": null}'])
def test_a_null_probability_in_score_probs_is_refused_by_both_readers(tmp_path, probs):
    """``score_probs`` is an object of finite numbers: the line reader refuses ``{"2": null}`` naming the row and
    field, and the table reader, whose struct column holds a null for an absent key and a null value alike, names
    the same row rather than reading the null as a key the row lacks: a key holding a brace and a field name
    written with an escape (which Arrow decodes) included."""
    first = {"id": "r0", "judge": "j", "raw_output": "x", "score": 1.0, "parse_ok": True,
             "score_probs": {"0": 0.25, "1": 0.75}}
    second = '{"id": "r1", "judge": "j", "raw_output": "x", "score": 1.0, "parse_ok": true, ' + probs + "}"
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(first) + "\n" + second + "\n", encoding="utf-8")
    for read in (read_prediction_table, lambda p: list(iter_predictions(p))):
        with pytest.raises(ValueError, match=r"line 2\.score_probs: expected an object of finite numbers"):
            read(path)


@pytest.mark.parametrize("rows", [['{"id": "a", "score_probs": {"1": null}}'],
                                  ['{"id": "a", "score_probs": {"1": 0.5, "2": null}}',
                                   '{"id": "b", "score_probs": {"1": 0.5, "2": null}}']])
def test_a_score_probs_key_null_in_every_row_is_refused_by_both_readers(tmp_path, rows):
    """A key whose value is null in every row is no key any row gives to the struct column, which the table reader
    drops; the null is still a null probability, which the line reader refuses naming the first row: the table
    reader names it too, rather than reading the row's score_probs without that key."""
    path = tmp_path / "predictions.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    for read in (read_prediction_table, lambda p: list(iter_predictions(p))):
        with pytest.raises(ValueError, match=r"line 1\.score_probs: expected an object of finite numbers"):
            read(path)


@pytest.mark.parametrize("big", [1, 2**53 + 1])
def test_integer_probabilities_read_as_floats_on_both_paths_of_the_table_reader(tmp_path, big):
    """``{"1": 1, "2": 0}``: Arrow's JSON reader reads it under the explicit schema's float64 fields, the line
    reader's table (an indented row goes there) holds the float each probability is: both paths give the table one
    schema, float64 fields, and one value (an integer past 2**53 rounded as ``float`` rounds it)."""
    row = {"id": "r0", "judge": "j", "raw_output": "x", "score": 1.0, "parse_ok": True,
           "score_probs": {"1": big, "2": 0}}
    plain, indented = tmp_path / "plain.jsonl", tmp_path / "indented.jsonl"
    plain.write_text(json.dumps(row) + "\n", encoding="utf-8")
    indented.write_text(" " + json.dumps(row) + "\n", encoding="utf-8")
    table = read_prediction_table(plain)
    assert table.schema == read_prediction_table(indented).schema
    assert table.schema.field("score_probs").type == pa.struct([("1", pa.float64()), ("2", pa.float64())])
    assert read_predictions(plain) == read_predictions(indented)
    assert read_predictions(plain)[0]["score_probs"] == {"1": float(big), "2": 0.0}


def test_an_integer_in_a_number_field_is_quoted_and_rewritten_as_the_file_holds_it(tmp_path):
    """A row's refusal quotes the number the file holds (``2``, not ``2.0``), and `run`'s resume rewrites an integer
    it keeps as that integer (2**63 + 1 unrounded): only the table's float64 column holds it as a float."""
    with pytest.raises(ValueError, match=r"^row\.score: 2 in a row with parse_ok false"):
        PredictionRow.from_json({"id": "a", "score": 2, "parse_ok": False})
    with pytest.raises(ValueError, match=r"^row\.parse_ok: absent in a row with score 2;"):
        PredictionRow.from_json({"id": "a", "score": 2})
    kept = {"id": "r0", "judge": "j", "raw_output": "x", "score": 2, "parse_ok": True, "latency_s": 2**63 + 1}
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(kept) + "\n" + json.dumps({**kept, "id": "gone"}) + "\n", encoding="utf-8")
    assert resume_predictions(path, ["r0"]) == {"r0"}
    rewritten = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert (rewritten["score"], rewritten["latency_s"]) == (2, 2**63 + 1)
    assert type(rewritten["score"]) is int
    assert read_predictions(path)[0]["latency_s"] == float(2**63 + 1)


def _arrow_widths(monkeypatch) -> list[int]:
    """The column counts (score_probs' keys counted) of the tables Arrow's JSON reader builds from here on."""
    import pyarrow as pa
    import pyarrow.json as pj

    widths: list[int] = []
    read = pj.read_json

    def counted(*args, **kwargs):
        table = read(*args, **kwargs)
        widths.append(sum(1 + (f.type.num_fields if pa.types.is_struct(f.type) else 0) for f in table.schema))
        return table

    monkeypatch.setattr(pj, "read_json", counted)
    return widths


def _row(i: int, **more) -> dict:
    return {"id": f"r{i}", "judge": "j", "raw_output": "[RESULT] 1", "score": 1.0, "parse_ok": True, **more}


def test_rows_each_giving_an_unknown_key_are_refused_without_a_column_per_key(tmp_path, monkeypatch):
    """Arrow's JSON reader, left to infer, makes a column of every key any row gives, each as long as the file (rows
    times distinct keys): the table reader refuses row 1's unknown field, as the line reader does, without that
    table."""
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(_row(i, **{f"k{i}": 1})) + "\n" for i in range(5000)), encoding="utf-8")
    widths = _arrow_widths(monkeypatch)
    with pytest.raises(ValueError, match=r"line 1: unknown prediction field\(s\) \['k0'\]"):
        read_prediction_table(path)
    assert max(widths, default=0) < 100


def test_score_probs_keys_of_their_own_per_row_are_refused_past_256_without_a_column_per_key(tmp_path, monkeypatch):
    """``score_probs`` objects each giving a key of their own: no table with a struct field per key (rows times
    keys) is built by either reader; the file is refused naming the row that adds the 257th key. 256 keys read."""
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(_row(i, score_probs={f"{i}": 1.0})) + "\n" for i in range(256)),
                    encoding="utf-8")
    table = read_prediction_table(path)
    assert table.schema.field("score_probs").type.num_fields == 256
    path.write_text("".join(json.dumps(_row(i, score_probs={f"{i}": 1.0})) + "\n" for i in range(2000)),
                    encoding="utf-8")
    widths = _arrow_widths(monkeypatch)
    said = r"line 257\.score_probs: key '256' is past the 256 distinct keys"
    with pytest.raises(ValueError, match=said):
        read_prediction_table(path)
    with pytest.raises(ValueError, match=said):
        prediction_table(iter_predictions(path))
    assert max(widths, default=0) < 300


def test_score_probs_keys_the_first_row_lacks_keep_arrows_reader(tmp_path, monkeypatch):
    """A file whose first row gives no ``score_probs`` (or fewer keys than later rows) is read by Arrow's reader, not
    the line reader, into the struct column inference made: its keys in the order they first appear."""
    rows = [_row(0), _row(1, score_probs={"1": 0.25, "2": 0.75}), _row(2, score_probs={"0": 1.0}), _row(3)]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import eval.judging.predictions as predictions

    expected = prediction_rows(prediction_table(iter_predictions(path)))
    monkeypatch.setattr(predictions, "iter_predictions", None)  # the line reader is not asked
    table = read_prediction_table(path)
    assert table.schema.field("score_probs").type.names == ["1", "2", "0"]
    assert prediction_rows(table) == expected


def test_a_score_probs_key_holding_a_brace_is_read_as_the_line_reader_reads_it(tmp_path, monkeypatch):
    """A later row's ``score_probs`` key holding a brace (``"a}"``) is found among the file's keys: Arrow's reader
    reads the file (the line reader is not asked) as the line reader reads it, not refused in Arrow's words."""
    import eval.judging.predictions as predictions

    path = tmp_path / "predictions.jsonl"
    rows = [_row(0, score_probs={"0": 1.0}), _row(1, score_probs={"a}": 1.0}), _row(2, score_probs={"x{": 0.5})]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    expected = prediction_rows(prediction_table(iter_predictions(path)))
    monkeypatch.setattr(predictions, "iter_predictions", None)  # the line reader is not asked
    table = read_prediction_table(path)
    assert sorted(table.schema.field("score_probs").type.names) == ["0", "a}", "x{"]
    assert prediction_rows(table) == expected

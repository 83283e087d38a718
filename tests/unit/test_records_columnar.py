"""Column-wise loading of JSONL and Parquet (judge.records): the same records, report and errors as row by row."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from judge import JudgeRecord, RecordError, load_records_report, records_from_rows
from judge import records as records_module
from judge.record_sources import source_rows as read_source_rows
from tests.support.deep_json import nested_arrays
from tests.support.release_artifacts import released_rows, write_released_dataset
from tests.unit.test_records import BAD, GOOD
from tests.unit.test_records_release import BAD_ANNOTATIONS


def _line(row) -> str:
    """A row as a JSON line, Cyrillic unescaped as the project writes it; a lone surrogate (no UTF-8 holds one) as
    its escape."""
    line = json.dumps(row, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(row)
    return line


def _jsonl(path, rows, blank_after: int | None = None):
    lines = [_line(r) for r in rows]
    if blank_after is not None:
        lines.insert(blank_after + 1, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _row_path(path, rows, make_id=False):
    """What the row-by-row validator makes of ``rows`` read from ``path`` (a JSONL file's rows numbered by line, a
    table's by row index, as the loaders number them)."""
    kind = records_module.LineIndex if str(path).endswith(".jsonl") else records_module.RowIndex
    return records_module.records_and_report(((str(path), kind(i), r) for i, r in enumerate(rows)), str(path), make_id)


def _forbid_row_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the row-by-row path ran")

    monkeypatch.setattr(JudgeRecord, "from_row", refuse)


def _same(loaded, expected):
    (records, report), (want, want_report) = loaded, expected
    assert records == want and report == want_report
    assert [(r.extra, r.origin, r.annotations) for r in records] == [(r.extra, r.origin, r.annotations) for r in want]
    # the row's kind too (a JSONL line or a table's row index): an error about the record names it so
    assert [type(r.origin[1]) for r in records] == [type(r.origin[1]) for r in want]


ABSTAINING = GOOD | {"id": "a3", "expert_scores": [None, 2, 1], "expert_feedback": ["Не применимо.", "Хорошо.", "Так себе."]}
NO_EXPERTS = GOOD | {"id": "a4", "expert_scores": [], "expert_feedback": None, "criteria_score": 1.5}
CLEAN = [GOOD, GOOD | {"id": "a2", "expert_feedback": None, "reference_answer": "Эталон"}, ABSTAINING, NO_EXPERTS,
         GOOD]  # the last: an exact duplicate, counted  # fmt: skip


def test_clean_jsonl_loads_column_wise_like_row_by_row(tmp_path, monkeypatch):
    """A clean JSONL file (abstentions, feedback, an unknown column, a duplicate) gives the row path's records,
    extras, origins and report without validating row by row."""
    path = _jsonl(tmp_path / "d.jsonl", CLEAN)
    expected = _row_path(path, CLEAN)
    _forbid_row_path(monkeypatch)
    _same(load_records_report(path), expected)
    assert expected[1].n_duplicates == 1 and expected[1].n_abstentions == 1


def _releases_watched(tmp_path, monkeypatch):
    """A clean JSONL file that loads column-wise only, and the list that gets what Arrow holds
    (``pa.total_allocated_bytes``) at each of the loader's releases of Arrow's memory."""
    from judge import record_sources

    path = _jsonl(tmp_path / "d.jsonl", CLEAN[:-1])  # no duplicate: one would leave the columns' texts as Python's
    held_at_release = []
    release = record_sources._release_arrow_memory
    monkeypatch.setattr(record_sources, "_release_arrow_memory",
                        lambda: held_at_release.append(pa.total_allocated_bytes()) or release())
    _forbid_row_path(monkeypatch)
    return path, held_at_release


def test_the_arrow_memory_of_a_load_is_released_after_the_records_are_built(tmp_path, monkeypatch):
    """load_records builds its records from Arrow columns over the file's bytes, and Arrow's allocator keeps memory
    freed until it is released: the last release comes once the columns are dropped, when Arrow holds nothing of
    the load. Released while the columns still held the texts, all of it stayed resident for a whole
    `judge-eval run` (more than the data file's size)."""
    path, held_at_release = _releases_watched(tmp_path, monkeypatch)
    before = pa.total_allocated_bytes()
    records = judge.load_records(path)
    assert [r.id for r in records] == ["a1", "a2", "a3", "a4"]
    assert held_at_release and held_at_release[-1] <= before, (before, held_at_release)


def test_load_record_columns_releases_before_its_columns_are_dropped_and_they_free_all_it_held(tmp_path, monkeypatch):
    """load_record_columns releases once, with the columns it returns still holding their texts' Arrow memory (no
    release of it can come before the caller drops them): that is all Arrow holds of the load, and dropping the
    columns frees it, for a caller that goes on working to release."""
    path, held_at_release = _releases_watched(tmp_path, monkeypatch)
    before = pa.total_allocated_bytes()
    columns, _ = judge.load_record_columns(path)
    assert list(columns.ids) == ["a1", "a2", "a3", "a4"]
    assert held_at_release == [pa.total_allocated_bytes()] and held_at_release[0] > before, (before, held_at_release)
    del columns
    assert pa.total_allocated_bytes() <= before


def test_records_at_a_permutation_of_every_row_follow_it_field_by_field(tmp_path):
    """An index as long as the table that is not 0..n-1 in order ([2, 0, 1, 3]) took the whole text, score and flag
    columns unpermuted while the ids followed it: record "a2" came back with the first row's answer and experts (and
    a duplicate id in a 2-row file was refused for the wrong field)."""
    rows = [GOOD, GOOD | {"id": "a2", "answer": "Другой ответ.", "expert_feedback": None, "expert_scores": [0, 0]},
            ABSTAINING, NO_EXPERTS]  # fmt: skip
    path = _jsonl(tmp_path / "d.jsonl", rows)
    columns, _ = judge.load_record_columns(path)
    expected, _ = _row_path(path, rows)
    for order in ([2, 0, 1, 3], [1, 0, 2, 3], [0, 1, 2, 3], [3, 2, 1, 0]):
        taken = columns.records_at(order)
        assert taken == [expected[i] for i in order], order
        assert [r.origin for r in taken] == [expected[i].origin for i in order]
    _jsonl(tmp_path / "dup.jsonl", [GOOD, GOOD | {"expert_scores": [2, 2, 2]}])
    with pytest.raises(RecordError, match=r"line 2: field 'id': 'a1' repeats the id of line 1 with different content"):
        judge.load_record_columns(tmp_path / "dup.jsonl")


@pytest.mark.parametrize("field", ["criteria_score", "expert_scores"])
def test_a_score_in_a_binary_parquet_column_is_refused_by_both_loaders(tmp_path, field):
    """float(b"1_0") is 10: bytes took a path around the number rule the same text is held to ("1_0" is refused)."""
    row = {k: v for k, v in GOOD.items() if k not in ("expert_feedback", field)}
    if field == "expert_scores":
        row["criteria_score"] = 1.5
    value = pa.array([b"1_0"]) if field == "criteria_score" else pa.array([[b"1_0", b"2"]])
    table = pa.Table.from_pylist([row]).append_column(field, value)
    pq.write_table(table, tmp_path / "d.parquet")
    said = ("field 'criteria_score': b'1_0' is not a finite number" if field == "criteria_score"
            else "field 'expert_scores': item 0 (b'1_0') is not a finite number")
    for load in (judge.load_records, judge.load_record_columns):
        with pytest.raises(RecordError, match=re.escape(f"row index 0: {said}")):
            load(tmp_path / "d.parquet")


def test_a_row_across_lines_or_a_minus_nan_is_refused_by_both_loaders_as_the_row_path_refuses_it(tmp_path):
    """Arrow reads an object across lines: a row cut after "[" with its rest on the next line, and two rows side by
    side on a third, loaded as three records numbered one line off. And it reads "-NaN" (Python's JSON does not) as
    NaN, a missing score. Both now go to the row path, which names the line."""
    whole = _line(GOOD)
    cut = whole.index("[") + 1
    path = tmp_path / "across.jsonl"
    path.write_text(f"{whole[:cut]}\n{whole[cut:]}\n{_line(GOOD | {'id': 'b'})} {_line(GOOD | {'id': 'c'})}\n",
                    encoding="utf-8")
    negative_nan = tmp_path / "nan.jsonl"
    _jsonl(negative_nan, [GOOD, GOOD | {"id": "b", "criteria_score": 0.0}])
    negative_nan.write_text(negative_nan.read_text(encoding="utf-8").replace('"criteria_score": 0.0',
                                                                            '"criteria_score": -NaN'), encoding="utf-8")
    for load in (judge.load_records, judge.load_record_columns):
        with pytest.raises(RecordError, match=r"across\.jsonl: line 1: invalid JSON"):
            load(path)
        with pytest.raises(RecordError, match=r"nan\.jsonl: line 2: invalid JSON"):
            load(negative_nan)


def test_clean_parquet_and_released_shards_load_column_wise(tmp_path, monkeypatch):
    """Parquet in the project's schema and the released shard folder (annotations, -1 abstentions, derived ids)
    load column-wise into what the row path makes of the same rows."""
    rows = [{k: v for k, v in r.items() if k != "expert_feedback"} for r in CLEAN]  # Parquet: one type per column
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    expected = _row_path(tmp_path / "d.parquet", pa.Table.from_pylist(rows).to_pylist())
    folder = write_released_dataset(tmp_path / "POLLUX")
    expected_released = records_module.records_and_report(
        ((str(shard), records_module.RowIndex(i), r) for shard in sorted((folder / "data").glob("*.parquet"))
         for i, r in enumerate(pq.read_table(shard).to_pylist())), str(folder), False)  # fmt: skip
    _forbid_row_path(monkeypatch)
    _same(load_records_report(tmp_path / "d.parquet"), expected)
    _same(load_records_report(folder), expected_released)
    assert expected_released[1].n_derived_ids == 9 and expected_released[1].n_abstentions == 4


# Rows without an aggregate, each marked with whether the loader derives it from the experts (by hand: the mean of
# the experts who did not abstain, when there is one).
WITHOUT_AGGREGATE = [
    (GOOD | {"id": "given", "criteria_score": 2.0}, False),
    (GOOD | {"id": "absent"}, True),  # GOOD has no criteria_score
    (GOOD | {"id": "null", "criteria_score": None}, True),
    (GOOD | {"id": "silent", "expert_scores": [None, None, None]}, False),  # every expert abstained: no mean
    (GOOD | {"id": "none", "expert_scores": [], "expert_feedback": None}, False),  # no expert: no mean
    (GOOD | {"id": "absent"}, False),  # an exact duplicate: left out, not counted again
    (ABSTAINING, True),  # (2 + 1) / 2 over the two who did not abstain
]


def test_both_loaders_count_the_aggregates_derived_from_the_experts(tmp_path, monkeypatch):
    """JSONL, Parquet (a NaN aggregate too) and the released shards: the column-wise reader reports the same
    derived criteria_scores as the row path, counted over the records kept and placed among them, and the summary
    line names the count."""
    rows = [row for row, _ in WITHOUT_AGGREGATE]
    kept = [derived for k, (_, derived) in enumerate(WITHOUT_AGGREGATE) if k != 5]
    want = tuple(k for k, derived in enumerate(kept) if derived)  # (1, 2, 5)
    path = _jsonl(tmp_path / "d.jsonl", rows)
    expected = _row_path(path, rows)
    assert (expected[1].n_derived_criteria_scores, expected[1].derived_criteria_records) == (3, want)
    assert "derived_criteria_scores=3" in expected[1].summary() and expected[1].n_duplicates == 1

    parquet_rows = [{k: v for k, v in r.items() if k != "expert_feedback"} for r in rows]
    parquet_rows.append(GOOD | {"id": "nan", "criteria_score": math.nan, "expert_feedback": None})  # derived too
    names = list(dict.fromkeys(k for r in parquet_rows for k in r))  # every row's columns, absent keys as null
    pq.write_table(pa.Table.from_pydict({k: [r.get(k) for r in parquet_rows] for k in names}), tmp_path / "d.parquet")
    expected_parquet = _row_path(tmp_path / "d.parquet", pq.read_table(tmp_path / "d.parquet").to_pylist())
    assert expected_parquet[1].derived_criteria_records == (*want, 6)

    released = released_rows()  # the first row's exact duplicate is the last
    for k in (0, 1, 8):
        released[k] = released[k] | {"criteria_score": None}
    released[4] = released[4] | {"criteria_score": None}  # every expert abstained: stays without one, not counted
    folder = write_released_dataset(tmp_path / "POLLUX", released)
    expected_released = records_module.records_and_report(
        ((str(shard), records_module.RowIndex(i), r) for shard in sorted((folder / "data").glob("*.parquet"))
         for i, r in enumerate(pq.read_table(shard).to_pylist())), str(folder), False)  # fmt: skip
    assert expected_released[1].derived_criteria_records == (0, 1)

    _forbid_row_path(monkeypatch)
    for source, (records, report) in ((path, expected), (tmp_path / "d.parquet", expected_parquet),
                                      (folder, expected_released)):
        _same(load_records_report(source), (records, report))
        assert judge.load_record_columns(source)[1] == report


BAD_ROWS = [(mutation, field, fragment) for mutation, field, fragment in BAD] + [
    ({"annotations": value, "expert_scores": None, "expert_feedback": None}, "annotations", fragment)
    for value, fragment in BAD_ANNOTATIONS
] + [({"expert_scores": [1, None], "expert_feedback": ["а", None]}, "expert_feedback",
      "must contain only texts: item 1 is null (write \"\" for an expert who left no rationale)"),
     ({"is_provocative": "да"}, "is_provocative", "must be true or false"),
     ({"annotations": [{"comment": "а", "score": 1}]}, "expert_scores", "both annotations and expert_scores"),
     ({"annotations": [{"comment": "а", "score": 1}] * 3, "expert_scores": None}, "expert_feedback",
      "both annotations and expert_feedback")]  # fmt: skip


@pytest.mark.parametrize("mutation,field,fragment", BAD_ROWS, ids=[f"{b[1]}:{b[2]}" for b in BAD_ROWS])
def test_bad_row_gives_the_row_paths_error_from_jsonl_and_parquet(mutation, field, fragment, tmp_path):
    """A bad row in a JSONL or Parquet file raises the row path's RecordError: same source, row, field and text."""
    rows = [GOOD | {"id": "first"}, GOOD | {"id": "second"} | mutation, GOOD | {"id": "third"}]
    files = [_jsonl(tmp_path / "d.jsonl", rows)]
    try:
        names = list(dict.fromkeys(k for r in rows for k in r))  # every row's columns (from_pylist takes the first's)
        table = pa.Table.from_pydict({k: [r.get(k) for r in rows] for k in names})
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, UnicodeEncodeError):
        table = None  # mixed types in one column, an integer past int64, a lone surrogate: no Parquet file holds these
    if table is not None:
        pq.write_table(table, tmp_path / "d.parquet")
        files.append(tmp_path / "d.parquet")
    for path in files:
        source_rows = rows if path.suffix == ".jsonl" else pq.read_table(path).to_pylist()
        with pytest.raises(RecordError) as expected:
            _row_path(path, source_rows)
        for load in (load_records_report, judge.load_record_columns):
            with pytest.raises(RecordError) as info:
                load(path)
            err = info.value
            assert (err.source, err.row, err.field, err.message) == (str(path), 1, field, expected.value.message), path
            assert fragment in str(err)


def test_annotations_beside_expert_feedback_are_refused_by_both_loaders(tmp_path):
    """A released row (annotations) that also gives expert_feedback lost those texts without a word on both paths,
    where annotations beside expert_scores were refused: refused alike now, naming expert_feedback. Here the table
    has no expert_scores column, so the column check itself must send it to the row path."""
    rows = released_rows()[:3]
    rows[1] = rows[1] | {"expert_feedback": ["Свой текст."] * len(rows[1]["annotations"])}
    files = [_jsonl(tmp_path / "d.jsonl", rows)]
    names = list(dict.fromkeys(k for r in rows for k in r))
    pq.write_table(pa.Table.from_pydict({k: [r.get(k) for r in rows] for k in names}), tmp_path / "d.parquet")
    files.append(tmp_path / "d.parquet")
    for path in files:
        for load in (load_records_report, judge.load_record_columns):
            with pytest.raises(RecordError) as info:
                load(path)
            assert (info.value.source, info.value.row, info.value.field) == (str(path), 1, "expert_feedback"), path
            assert "both annotations and expert_feedback; keep one of them" in str(info.value)
    with pytest.raises(RecordError, match="row index 1: field 'expert_feedback': a row gives both annotations and"):
        records_from_rows(rows)


@pytest.mark.parametrize("value", ["9" * 5_000, "[1, " + "9" * 5_000 + ", 2]"], ids=["unknown column", "expert score"])
def test_a_jsonl_number_past_pythons_digit_limit_is_named_with_its_row(value, tmp_path):
    """json.loads refuses an integer of more than 4,300 digits with a bare ValueError (no JSONDecodeError): every
    reader of a JSONL or .json source names the file and row, the column-wise loaders too (Arrow reads the number
    as an infinity, which its checks send to the row path)."""
    field = "source_batch" if value.startswith("9") else "expert_scores"
    path = tmp_path / "d.jsonl"
    lines = [_line(GOOD | {"id": "first"}), _line(GOOD | {"id": "second"})[:-1] + f', "{field}": {value}}}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for load in (judge.load_records, judge.load_record_columns, lambda p: list(read_source_rows(p))):
        with pytest.raises(RecordError, match=r"d.jsonl: line 2: unreadable JSON: a number too long to read "
                                              r"\(Exceeds the limit \(4300 digits\)") as info:
            load(path)
        assert "set_int_max_str_digits" not in str(info.value)
    document = tmp_path / "d.json"
    document.write_text("[" + ", ".join(lines) + "]", encoding="utf-8")
    for load in (judge.load_records, lambda p: list(read_source_rows(p))):
        with pytest.raises(RecordError, match=r"d.json: unreadable JSON: a number too long to read"):
            load(document)


def test_json_nested_past_the_recursion_limit_is_named_with_its_row(tmp_path):
    """json.loads raises a bare RecursionError on nesting past Python's recursion limit: named with the file and row.
    The JSONL here has a blank line, so Arrow's reader (which crashes the process on nesting some thousands deep, a
    pyarrow limit) is never asked; the row path reads it."""
    deep = nested_arrays(2_000)
    lines = [_line(GOOD | {"id": "first"}), "", _line(GOOD | {"id": "second"})[:-1] + f', "x": {deep}}}']
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for load in (judge.load_records, judge.load_record_columns, lambda p: list(read_source_rows(p))):
        with pytest.raises(RecordError, match=r"d.jsonl: line 3: unreadable JSON: nested too deeply"):
            load(path)
    document = tmp_path / "d.json"
    document.write_text(f"[{deep}]", encoding="utf-8")
    for load in (judge.load_records, lambda p: list(read_source_rows(p))):
        with pytest.raises(RecordError, match=r"d.json: unreadable JSON: nested too deeply"):
            load(document)


def test_nesting_that_crashes_arrows_reader_never_reaches_it(tmp_path):
    """Arrow's JSON reader kills the process (SIGSEGV) on nesting some 10,000-20,000 levels deep: a clean JSONL (no
    blank line, so Arrow would be asked) with such a line gets the row path's named error instead, from every loader
    of records and of predictions. In a child process, so that a crash is a failed assertion, not a lost worker."""
    deep = nested_arrays(50_000)
    records = tmp_path / "d.jsonl"
    records.write_text(_line(GOOD | {"id": "first"}) + "\n" + _line(GOOD | {"id": "second"})[:-1] + f', "x": {deep}}}\n',
                       encoding="utf-8")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"id": "first", "score": 1, "parse_ok": true}\n'
                           + f'{{"id": "second", "score": 1, "x": {deep}}}\n',
                           encoding="utf-8")
    script = f"""
import judge
from eval.judging.predictions import read_prediction_table
for load in (judge.load_records, judge.load_record_columns, read_prediction_table):
    try:
        load({str(records)!r} if load is not read_prediction_table else {str(predictions)!r})
    except ValueError as err:
        print(err)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [f"{records}: line 2: unreadable JSON: nested too deeply"] * 2 + [
        f"{predictions}:2: unreadable JSON: nested too deeply"]


def test_brackets_inside_strings_past_the_nesting_bound_still_load(tmp_path, monkeypatch):
    """The bound counts ``[`` and ``{`` inside strings too (a C++ answer): a line one past it loads by the row path,
    with the records and report of the rows; a line at it is read by Arrow."""
    from judge.plumbing.json_reading import ARROW_MAX_OPENERS_PER_LINE

    def with_braces(n: int) -> dict:
        row = GOOD | {"id": "code", "answer": "int main() "}
        row["answer"] += "{" * (n - sum(map(_line(row).count, "[{"))) + "}"
        assert sum(map(_line(row).count, "[{")) == n
        return row

    past = [GOOD, with_braces(ARROW_MAX_OPENERS_PER_LINE + 1)]
    path = _jsonl(tmp_path / "past.jsonl", past)
    from judge.record_sources import _jsonl_table

    assert _jsonl_table(path) is None  # Arrow's reader is not asked: the row path reads the file
    loaded = judge.load_records_report(path)
    assert [r.answer for r in loaded[0]] == [row["answer"] for row in past]
    _same(loaded, _row_path(path, past))
    at = [GOOD, with_braces(ARROW_MAX_OPENERS_PER_LINE)]
    path = _jsonl(tmp_path / "at.jsonl", at)
    _forbid_row_path(monkeypatch)
    assert [r.answer for r in judge.load_records(path)] == [row["answer"] for row in at]


def test_a_flagged_parquet_source_is_read_once(tmp_path, monkeypatch):
    """When a column check flags a Parquet file or a shard folder, the row path reads the tables the check read:
    each file is opened once, and the error is still the row path's."""
    rows = [GOOD | {"id": "first", "expert_feedback": None},
            GOOD | {"id": "x", "expert_scores": [1.0, math.nan], "expert_feedback": None}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    folder = tmp_path / "shards" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows[:1]), folder / "test-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:]), folder / "test-00001-of-00002.parquet")
    opened = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda path, *a, **k: opened.append(Path(path).name) or real(path, *a, **k))
    with pytest.raises(RecordError, match=r"d.parquet: row index 1: field 'expert_scores'"):
        load_records_report(tmp_path / "d.parquet")
    assert opened == ["d.parquet"]
    opened.clear()
    with pytest.raises(RecordError, match=r"test-00001-of-00002.parquet: row index 0: field 'expert_scores'"):
        load_records_report(tmp_path / "shards")
    assert opened == ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]


def test_nan_score_in_parquet_is_named(tmp_path):
    """A NaN expert score (Parquet can hold one) is refused naming row 1 and the field, as row by row."""
    rows = [GOOD | {"id": "first", "expert_feedback": None}, GOOD | {"id": "x", "expert_scores": [1.0, math.nan], "expert_feedback": None}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    with pytest.raises(RecordError, match=r"d.parquet: row index 1: field 'expert_scores': item 1 \(nan\) is not a finite number"):
        load_records_report(tmp_path / "d.parquet")


@pytest.mark.parametrize(("field", "value", "said"), [
    ("expert_scores", [1.0, 1e308], r"field 'expert_scores': item 1 \(1e\+308\) is past 1e\+06 in size"),
    ("expert_scores", [1, 10**7], r"field 'expert_scores': item 1 \(10000000\) is past 1e\+06 in size"),
    ("criteria_score", -1e300, r"field 'criteria_score': -1e\+300 is past 1e\+06 in size"),
])
def test_a_score_no_rubric_gives_is_named_by_the_column_reader_as_row_by_row(tmp_path, field, value, said):
    """A finite expert score of 1e308 passed the column checks, and the metrics overflowed in numpy far from the row:
    the column reader hands it to the row path, which names the row and the field, in JSONL and Parquet alike."""
    rows = [GOOD | {"id": "first", "expert_feedback": None, "criteria_score": 1.0},  # from_pylist: its keys the columns
            GOOD | {"id": "x", "criteria_score": 1.0, field: value, "expert_feedback": None}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(RecordError, match=r"d.parquet: row index 1: " + said):
        judge.load_record_columns(tmp_path / "d.parquet")
    with pytest.raises(RecordError, match=r"d.jsonl: line 2: " + said):
        judge.load_record_columns(tmp_path / "d.jsonl")


def test_jsonl_that_arrow_would_read_differently_takes_the_row_path(tmp_path):
    """Blank lines keep the row numbers of the lines after them; absent and null unknown columns stay apart;
    a first row without an id derives ids for every row; an id repeated with different content names both rows."""
    path = _jsonl(tmp_path / "blank.jsonl", [GOOD | {"id": "x"}, GOOD | {"id": "y", "answer": " "}], blank_after=0)
    with pytest.raises(RecordError, match=r"blank.jsonl: line 3: field 'answer': is empty"):
        load_records_report(path)

    sparse = [GOOD, {k: v for k, v in GOOD.items() if k != "source_batch"} | {"id": "b"}, GOOD | {"id": "c", "source_batch": None}]
    records, _ = load_records_report(_jsonl(tmp_path / "sparse.jsonl", sparse))
    assert [r.extra for r in records] == [{"source_batch": 7}, {}, {"source_batch": None}]

    no_id = {k: v for k, v in GOOD.items() if k != "id"}
    records, report = load_records_report(_jsonl(tmp_path / "ids.jsonl", [no_id, GOOD | {"answer": "Другой."}]))
    assert records == records_from_rows([no_id, GOOD | {"answer": "Другой."}]) and report.n_derived_ids == 1

    with pytest.raises(RecordError, match="line 2: field 'id': 'a1' repeats the id of line 1 with different content"):
        load_records_report(_jsonl(tmp_path / "dup.jsonl", [GOOD, GOOD | {"answer": "Другой."}]))


def test_a_file_whose_first_list_starts_with_an_abstention_loads_as_row_by_row(tmp_path):
    """pyarrow's JSON reader builds a malformed list column when the file's first list starts with null (an
    abstaining first expert, as `judge-eval convert` writes a released row): both loaders give the row path's
    records instead of an Arrow error far from the file; a byte that is not UTF-8 is named with its row by both."""
    rows = [ABSTAINING, GOOD]
    path = _jsonl(tmp_path / "first_abstains.jsonl", rows)
    expected = _row_path(path, rows)
    _same(load_records_report(path), expected)
    columns, _ = judge.load_record_columns(path)
    assert columns.records() == expected[0] and expected[0][0].expert_scores == (2.0, 1.0)
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps(GOOD | {"answer": "Four"}, ensure_ascii=False).encode().replace(b"Four", b"F\xf6ur")
                    + b"\n")  # a Latin-1 byte in the answer
    for load in (judge.load_records, judge.load_record_columns):
        with pytest.raises(RecordError, match=r"latin1.jsonl: line 1: not UTF-8 text \(byte 0xf6"):
            load(bad)


def test_release_rows_with_unusual_types_still_load(tmp_path):
    """Integer task subtypes and string ids (column-wise) read as the row path reads them."""
    rows = [r | {"task_subsubtype": 3} for r in released_rows()[:3]]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    records, _ = load_records_report(tmp_path / "d.parquet")
    assert records == judge.records_from_rows(rows) and {r.task_subsubtype for r in records} == {"3"}


def _loaders():
    return (load_records_report, judge.load_record_columns, lambda p: list(read_source_rows(p)))


def test_a_boolean_metadata_or_id_column_is_refused_by_both_loaders(tmp_path):
    """A column of booleans where a record has text (a task type, an id) was read as the text "True" column-wise
    (and row by row): refused alike now, naming the first row and the field, from JSONL and Parquet."""
    for field in ("task_type", "difficulty", "id"):
        rows = [GOOD | {"id": f"r{k}"} | {field: k == 0} for k in range(2)]
        files = [_jsonl(tmp_path / f"{field}.jsonl", rows)]
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / f"{field}.parquet")
        files.append(tmp_path / f"{field}.parquet")
        for path in files:
            for load in (load_records_report, judge.load_record_columns):
                place = "line 1" if path.suffix == ".jsonl" else "row index 0"
                with pytest.raises(RecordError, match=rf"{path.name}: {place}: field '{field}': must be text.*, got (true|false)"):
                    load(path)


def _with_bytes(rows, name, values, kind=pa.string()):
    """``rows`` as a table whose column ``name`` holds ``values`` as raw bytes (Parquet does not check UTF-8)."""
    table = pa.Table.from_pylist(rows)
    raw = pa.array(values, pa.binary() if kind == pa.string() else pa.list_(pa.binary())).view(kind)
    return table.set_column(table.column_names.index(name), name, raw)


def test_parquet_text_that_is_not_utf8_is_named_by_both_loaders(tmp_path):
    """A Parquet string column holding bytes that are not UTF-8 was a bare UnicodeDecodeError from both loaders (a
    traceback in build-data): a RecordError naming the file, row and field now, the same from every loader."""
    rows = [GOOD | {"id": f"r{k}", "expert_feedback": ["а", "б", "в"]} for k in range(3)]
    answers = [r["answer"].encode() for r in rows]
    answers[1] = b"ok \xff"
    pq.write_table(_with_bytes(rows, "answer", answers), tmp_path / "answer.parquet")
    feedback = [[t.encode() for t in r["expert_feedback"]] for r in rows]
    feedback[2][1] = b"\xc3"
    pq.write_table(_with_bytes(rows, "expert_feedback", feedback, pa.list_(pa.string())), tmp_path / "feedback.parquet")
    for path, row, field, byte in ((tmp_path / "answer.parquet", 1, "answer", "0xff at byte 4"),
                                   (tmp_path / "feedback.parquet", 2, "expert_feedback", "0xc3 at byte 1")):
        for load in _loaders():
            with pytest.raises(RecordError) as info:
                load(path)
            assert str(info.value) == f"{path}: row index {row}: field '{field}': not UTF-8 text (byte {byte} of a text)"


def test_a_parquet_file_cut_short_is_named_by_both_loaders(tmp_path):
    """A truncated Parquet file (an interrupted copy) was an ArrowInvalid traceback: a RecordError naming the file."""
    pq.write_table(pa.Table.from_pylist([GOOD | {"expert_feedback": None}]), tmp_path / "whole.parquet")
    cut = tmp_path / "cut.parquet"
    cut.write_bytes((tmp_path / "whole.parquet").read_bytes()[:-100])
    for load in _loaders():
        with pytest.raises(RecordError, match=rf"^{cut}: not a readable Parquet file \(.*magic bytes"):
            load(cut)


def test_every_id_the_load_derives_is_counted_blank_ones_included(tmp_path):
    """A blank id ("  ") gets a content-derived id under make_id, as a null or empty one does, but the load report
    counted only null and empty ones: three derived here (blank, empty, null), from JSONL and Parquet alike."""
    rows = [GOOD | {"id": "a"}, GOOD | {"id": "  ", "answer": "Второй."}, GOOD | {"id": "", "answer": "Третий."},
            GOOD | {"id": None, "answer": "Четвёртый."}]
    jsonl = _jsonl(tmp_path / "ids.jsonl", rows)
    pq.write_table(pa.Table.from_pylist([r | {"expert_feedback": None} for r in rows]), tmp_path / "ids.parquet")
    for path in (jsonl, tmp_path / "ids.parquet"):
        for load in (load_records_report, judge.load_record_columns):
            _, report = load(path, make_id=True)
            assert report.n_rows == 4 and report.n_derived_ids == 3, (path, load)


def test_a_parquet_column_given_twice_is_one_line_naming_it(tmp_path):
    """A Parquet file with two columns named 'instruction' was "not a readable Parquet file" followed by Arrow's
    twelve-line schema dump: the file reads, the repeated name is the fault, named on one line by every loader."""
    good = pa.Table.from_pylist([GOOD | {"expert_feedback": None}])
    table = good.append_column("instruction", pa.array(["второе задание"]))
    path = tmp_path / "twice.parquet"
    pq.write_table(table, path)
    for load in _loaders():
        with pytest.raises(RecordError) as info:
            load(path)
        assert str(info.value) == f"{path}: field 'instruction': the column is given 2 times; a row has one value per field"


REPEATED_KEYS = [
    # (the second row's JSON, the field named, the message's start)
    (_line(GOOD | {"id": "b"})[:-1] + ', "expert_scores": [0, 0, 0]}', "expert_scores", "is given twice in the row"),
    (_line(GOOD | {"id": "b"})[:-1] + ', "id": "c"}', "id", "is given twice in the row"),
    (_line({k: v for k, v in GOOD.items() if k not in ("expert_scores", "expert_feedback")} | {"id": "b"})[:-1]
     + ', "annotations": [{"comment": "а", "score": 2, "score": 0}]}', "annotations",
     "an object inside it gives the key 'score' twice"),
]


@pytest.mark.parametrize("line,field,message", REPEATED_KEYS, ids=[f for _, f, _ in REPEATED_KEYS])
def test_a_key_given_twice_in_one_object_is_refused_by_every_loader(line, field, message, tmp_path):
    """json keeps the last of a repeated key's values without a word (a row's expert_scores given twice was scored
    on the second): refused naming the row and field, from JSONL (Arrow's reader refuses such a file, so the row
    path decides for the column loader too) and from a .json list."""
    from judge.record_sources import _jsonl_table

    path = tmp_path / "d.jsonl"
    path.write_text(_line(GOOD) + "\n" + line + "\n", encoding="utf-8")
    assert _jsonl_table(path) is None
    document = tmp_path / "d.json"
    document.write_text("[" + _line(GOOD) + ",\n" + line + "]", encoding="utf-8")
    for source in (path, document):
        loaders = _loaders() if source.suffix == ".jsonl" else (load_records_report, lambda p: list(read_source_rows(p)))
        for load in loaders:
            with pytest.raises(RecordError) as info:
                load(source)
            assert (info.value.source, info.value.row, info.value.field) == (str(source), 1, field)
            assert info.value.message.startswith(message), info.value.message


def test_a_byte_order_mark_at_the_start_of_a_file_is_skipped(tmp_path, monkeypatch):
    """A UTF-8 byte order mark at a .jsonl or .json file's first byte (Notepad, Excel's UTF-8 export) refused the
    whole file: the file's records load as without it (a JSONL column-wise still); one anywhere else is refused."""
    plain = _jsonl(tmp_path / "plain.jsonl", CLEAN)
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    document = tmp_path / "marked.json"
    document.write_bytes(b"\xef\xbb\xbf" + ("[" + ",".join(_line(r) for r in CLEAN) + "]").encode())
    expected = _row_path(marked, CLEAN)
    assert list(read_source_rows(marked)) == [(str(marked), i, r) for i, r in enumerate(CLEAN)]
    assert [row for _, _, row in read_source_rows(document)] == CLEAN
    _same(_row_path(document, CLEAN), load_records_report(document))
    later = tmp_path / "later.jsonl"
    later.write_bytes(plain.read_bytes().replace(b"\n{", b"\n\xef\xbb\xbf{", 1))
    for load in (load_records_report, judge.load_record_columns):
        with pytest.raises(RecordError, match=r"later.jsonl: line 2: .*BOM"):
            load(later)
    _forbid_row_path(monkeypatch)
    _same(load_records_report(marked), expected)
    assert judge.load_record_columns(marked)[0].records() == expected[0]


def test_an_exact_duplicate_row_with_nan_in_an_unknown_column_is_counted(tmp_path):
    """NaN is not equal to itself: two copies of a row whose unknown column holds NaN (Parquet's, pandas' missing
    float) were refused as "different content"; both loaders count the copy as a duplicate, as for any other value."""
    rows = [GOOD | {"expert_feedback": None, "weight": math.nan, "nested": {"w": [math.nan]}}] * 2
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    for source in (tmp_path / "d.parquet", path):
        for load in (load_records_report, judge.load_record_columns):
            _, report = load(source)
            assert (report.n_rows, report.n_records, report.n_duplicates) == (2, 1, 1), source
    with pytest.raises(RecordError, match="row index 1: field 'id': 'a1' repeats the id of row index 0 with different "
                                          "content"):
        records_from_rows([rows[0], rows[0] | {"weight": 0.5}])


BIG = 2**53 + 1  # the first integer no float64 holds exactly: it reads as 2**53


def test_an_integer_score_no_float_holds_exactly_is_named_by_both_readers(tmp_path):
    """An integer score past 2**53 (an expert's, a released annotation's, the aggregate) made Arrow's cast to float64
    raise ArrowInvalid ("Integer value ... not in range"), naming no file, row or field; the column reader hands such
    a table to the row path, which names the row and field: no rubric's score is that large (``SCORE_BOUND``)."""
    project = [GOOD | {"id": "big", "expert_scores": [BIG, 1, 2], "criteria_score": BIG},
               GOOD | {"id": "a2", "criteria_score": 1}]
    released = [{k: v for k, v in GOOD.items() if k not in ("expert_scores", "expert_feedback")}
                | {"id": "big", "annotations": [{"comment": "а", "score": BIG}, {"comment": "б", "score": 1}],
                   "criteria_score": 1.0}]  # every released column (judge.records.RELEASED_COLUMNS)
    files = [_jsonl(tmp_path / "d.jsonl", project)]
    for name, rows in (("d.parquet", project), ("released.parquet", released)):
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / name)
        files.append(tmp_path / name)
    for path in files:
        field = "annotations': item 0: score" if path.name == "released.parquet" else "(expert_scores|criteria_score)'"
        where = "line 1" if path.suffix == ".jsonl" else "row index 0"
        said = rf"{path.name}: {where}: field '{field}.* is past 1e\+06 in size"
        with pytest.raises(RecordError, match=said):
            load_records_report(path)
        with pytest.raises(RecordError, match=said):
            judge.load_record_columns(path)


def test_a_null_annotations_column_leaves_a_project_rows_minus_one_to_the_project_rule(tmp_path):
    """A project row (null an abstention) beside an all-null annotations column, as concatenating a converted table
    with released rows gives: its criteria_score -1 with every expert abstaining is the project rule's on both paths
    (the row path took the annotations key alone for released experts), not the release's marker turned into null:
    refused, as a project file's -1 with no expert score is (``test_record_error_places``), naming the row."""
    row = GOOD | {"id": "p", "expert_scores": [None, None, None], "criteria_score": -1, "annotations": None}
    path = _jsonl(tmp_path / "d.jsonl", [row])  # JSONL: an annotations key, null: the row path
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "d.parquet")  # Parquet: a null column, the column path
    for source, place in ((path, "line 1"), (tmp_path / "d.parquet", "row index 0")):
        for load in (load_records_report, judge.load_record_columns):
            with pytest.raises(RecordError, match=rf"^{re.escape(str(source))}: {place}: field 'criteria_score': is -1 "
                                                  "with no expert score"):
                load(source)


@pytest.mark.parametrize("where", ["expert_scores", "criteria_score", "annotations"])
def test_half_float_scores_in_parquet_load_as_row_by_row(tmp_path, where):
    """A Parquet file whose scores are half floats (pandas' float16 written as Parquet's FLOAT16) stopped both
    loaders in Arrow's "Function 'min_max' has no kernel matching input types (halffloat)", a traceback naming no
    file, row or field; the column reader hands such a column to the row path, which reads the scores as numbers."""
    half = pa.float16()
    if where == "annotations":
        rows = [{k: v for k, v in GOOD.items() if k not in ("expert_scores", "expert_feedback")}
                | {"id": "h", "annotations": [{"comment": "а", "score": 1.0}, {"comment": "б", "score": 2.0}],
                   "criteria_score": 1.5}]
        table = pa.Table.from_pylist(rows)
        kind = pa.list_(pa.struct([("comment", pa.string()), ("score", half)]))
    else:
        rows = [GOOD | {"id": "h", "expert_scores": [1.0, 2.0, 2.0], "criteria_score": 1.5}]
        table = pa.Table.from_pylist(rows)
        kind = pa.list_(half) if where == "expert_scores" else half
    index = table.column_names.index(where)
    table = table.set_column(index, where, table.column(where).cast(kind))
    pq.write_table(table, tmp_path / "d.parquet")
    want = load_records_report(tmp_path / "d.parquet")
    assert [r.criteria_score for r in want[0]] == [1.5]
    columns, report = judge.load_record_columns(tmp_path / "d.parquet")
    assert columns.records() == want[0] and report == want[1]


def _arrow_widths(monkeypatch) -> list[int]:
    """The column counts of the tables Arrow's JSON reader builds from here on (each successful read appends one)."""
    import pyarrow.json as pj

    widths: list[int] = []
    read = pj.read_json

    def counted(*args, **kwargs):
        table = read(*args, **kwargs)
        widths.append(table.num_columns)
        return table

    monkeypatch.setattr(pj, "read_json", counted)
    return widths


def test_rows_each_giving_a_key_of_their_own_are_read_without_a_column_per_key(tmp_path, monkeypatch):
    """Arrow's JSON reader, left to infer, makes a column of every key any row gives, each as long as the file (rows
    times distinct keys: seconds and hundreds of MB at a few thousand rows). The loader reads such a file without
    that table, with the records and report the row path makes (the extra keys kept, as the row path keeps them)."""
    rows = [GOOD | {"id": f"u{i}", "answer": f"ответ {i}", f"k{i}": i} for i in range(5000)]
    path = _jsonl(tmp_path / "keys.jsonl", rows)
    widths = _arrow_widths(monkeypatch)
    loaded = judge.load_records_report(path)
    assert max(widths, default=0) < 100  # the known fields and the first row's, not one a row
    assert loaded[0][7].extra == {"source_batch": 7, "k7": 7}
    _same(loaded, _row_path(path, rows))


def test_ordinary_rows_keep_arrows_reader(tmp_path, monkeypatch):
    """Rows whose first gives integers where later ones give fractions, leaves out an optional text later rows give,
    or holds a date-like text, are still read column-wise (Arrow's reader, not the row path), with the records the
    row path makes."""
    first = GOOD | {"id": "d1", "criteria_score": 2, "answer": "2024-01-01", "batch": "b1"}
    first.pop("domain", None)
    rows = [first, GOOD | {"id": "d2", "expert_scores": [1.5, 0, 2], "criteria_score": 1.25, "domain": "Наука",
                           "batch": "b2"}]
    path = _jsonl(tmp_path / "ordinary.jsonl", rows)
    from judge.record_sources import _jsonl_table

    assert _jsonl_table(path) is not None
    _forbid_row_path(monkeypatch)
    loaded = judge.load_records_report(path)
    monkeypatch.undo()
    _same(loaded, _row_path(path, rows))
    assert [r.extra["batch"] for r in loaded[0]] == ["b1", "b2"]


@pytest.mark.parametrize("first, later", [
    ({"model_id": None}, {"model_id": 7}),
    ({"task_subsubtype": None}, {"task_subsubtype": 5}),
    ({"domain": None}, {"domain": 4}),
    ({}, {"domain": 4}),  # left out of the first row
])  # fmt: skip
def test_an_optional_text_null_first_and_an_integer_later_keeps_arrows_reader(tmp_path, monkeypatch, first, later):
    """An optional text the first row gives as null or leaves out (typed as text) and a later row gives as an
    integer (read as its digits) is still read column-wise, with the records the row path makes."""
    head = GOOD | {"id": "d1"} | first
    if not first:
        head.pop("domain", None)
    _read_column_wise_as_the_row_path_reads(tmp_path / "later_integer.jsonl", [head, GOOD | {"id": "d2"} | later],
                                            monkeypatch)


def _read_column_wise_as_the_row_path_reads(path, rows, monkeypatch):
    path = _jsonl(path, rows)
    _forbid_row_path(monkeypatch)
    loaded = judge.load_records_report(path)
    monkeypatch.undo()
    _same(loaded, _row_path(path, rows))


def test_released_rows_whose_first_gives_no_annotations_keep_arrows_reader(tmp_path, monkeypatch):
    """A first released-shape row with ``annotations: []`` (Arrow infers a list of nulls) and later rows with
    annotations: still read column-wise, with the records the row path makes."""
    import copy

    from tests.support.release_artifacts import released_rows

    rows = copy.deepcopy(released_rows())
    rows[0]["annotations"] = []
    rows[0]["criteria_score"] = -1.0
    same = (rows[0]["instruction"], rows[0]["answer"], rows[0]["criteria_name"])  # the row of its derived id, which
    rows = rows[:1] + [r for r in rows[1:] if (r["instruction"], r["answer"], r["criteria_name"]) != same]  # differs
    _read_column_wise_as_the_row_path_reads(tmp_path / "released.jsonl", rows, monkeypatch)


def test_a_type_error_is_not_read_again_with_the_later_fields(tmp_path, monkeypatch):
    """A row whose value Arrow cannot hold in its column (not an unexpected key) goes to the row path after one read
    of the file: adding the known fields the file names would not change that read's outcome."""
    import pyarrow.json as pj

    first = GOOD | {"id": "d1", "criteria_score": 2}
    first.pop("domain", None)
    later = GOOD | {"id": "d2", "criteria_score": [1], "answer": "domain"}  # the file names "domain", as a text
    later.pop("domain", None)
    path = _jsonl(tmp_path / "type_error.jsonl", [first, later])
    calls = []
    read = pj.read_json
    monkeypatch.setattr(pj, "read_json", lambda *a, **k: (calls.append(1), read(*a, **k))[1])
    from judge.record_sources import _jsonl_table

    assert _jsonl_table(path) is None
    assert len(calls) == 2  # the first row's inference, and the file once


def test_a_first_row_with_no_experts_and_empty_expert_ids_keeps_arrows_reader(tmp_path, monkeypatch):
    """A first row naming no experts (``expert_scores`` and ``expert_ids`` both ``[]``: Arrow infers lists of nulls)
    and a later row naming its experts: every known list read as its known type, column-wise, with the records the
    row path makes."""
    head = NO_EXPERTS | {"id": "d1", "expert_ids": []}
    later = GOOD | {"id": "d2", "expert_ids": [f"e{k}" for k in range(len(GOOD["expert_scores"]))]}
    _read_column_wise_as_the_row_path_reads(tmp_path / "empty_ids.jsonl", [head, later], monkeypatch)


def test_a_key_only_a_later_row_gives_is_read_by_the_row_path_which_the_debug_log_says(tmp_path, caplog):
    """A row giving a key the first row lacks (no known field) sends the file to the row path, with the records and
    report it makes; the debug log names the key and its line, which Arrow's own refusal ("unexpected field") does
    not."""
    import logging

    rows = [GOOD | {"id": "d1"}, GOOD | {"id": "d2", "answer": "другой"}, GOOD | {"id": "d3", "batch": "b3"}]
    path = _jsonl(tmp_path / "later_key.jsonl", rows)
    with caplog.at_level(logging.DEBUG, logger="judge.record_sources"):
        loaded = judge.load_records_report(path)
    _same(loaded, _row_path(path, rows))
    assert loaded[0][2].extra["batch"] == "b3"
    said = [r.getMessage() for r in caplog.records if r.name == "judge.record_sources"]
    assert any("row by row" in m and "'batch'" in m and "line 3" in m for m in said), said


def test_texts_null_first_and_integers_later_are_typed_for_one_more_read(tmp_path, monkeypatch):
    """Optional texts the first row gives as null or leaves out, and later rows give as integers or give at all, are
    all typed once the first read stops: Arrow parses the file twice, not again per field its error names (the file's
    bytes are scanned for them only then, not for every file whose first row leaves a field out)."""
    import pyarrow.json as pj

    head = GOOD | {"id": "d1", "model_id": None, "task_subsubtype": None}
    head.pop("domain", None)
    rows = [head, GOOD | {"id": "d2", "model_id": 7, "task_subsubtype": 5, "domain": 4}]
    path = _jsonl(tmp_path / "typed_once.jsonl", rows)
    calls = []
    read = pj.read_json
    monkeypatch.setattr(pj, "read_json", lambda *a, **k: (calls.append(1), read(*a, **k))[1])
    from judge.record_sources import _jsonl_table

    assert _jsonl_table(path) is not None
    assert len(calls) == 3  # the first row's inference, the read that stops, and the read typed for the later rows
    monkeypatch.undo()
    _read_column_wise_as_the_row_path_reads(path, rows, monkeypatch)

"""``judge-eval convert`` keeps each record's provenance: which aggregates the load derived and which rows are the
released benchmark's, the same through the row-by-row and the column-wise readers; an aggregate replaced since is
written as given."""

from __future__ import annotations

import dataclasses
import json

import pyarrow.parquet as pq

import judge
from judge import JudgeRecord, load_records_report
from judge import records as records_module
from judge.record_sources import jsonl_rows
from tests.support.released_rows import RELEASED_ROWS, RUBRIC
from tests.support.released_rows import converted as _converted
from tests.support.released_rows import hub_folder as _hub_folder


def _without_source(report):
    # the converted file gives the ids the release lacked: that count is the one that may differ
    return dataclasses.replace(report, source="", n_derived_ids=0)


def _flags(records):
    return [(r.criteria_score_derived, r.benchmark_row) for r in records]


def test_convert_round_trip_keeps_derived_aggregates_and_benchmark_rows(tmp_path):
    """A converted release reloads into equal records with an equal load report: the aggregate the load derived is
    derived (and counted) again, not read as one the data gave; a row with an empty criteria_description stays a
    benchmark row."""
    folder = _hub_folder(tmp_path)
    before, report_before = load_records_report(folder)
    assert report_before.n_derived_criteria_scores == 1 and report_before.n_benchmark_rows == 3
    out = _converted(tmp_path, folder)
    after, report_after = load_records_report(out)
    assert after == before
    assert _without_source(report_after) == _without_source(report_before)
    assert report_after.derived_criteria_records == report_before.derived_criteria_records == (1,)
    assert _flags(after) == _flags(before) == [(False, True), (True, True), (False, True)]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["criteria_score"] for r in rows] == [0.0, None, None]
    assert all(records_module.is_benchmark_row(r) for r in rows) and rows[1]["criteria_description"] == ""


def test_both_readers_give_the_same_provenance(tmp_path, monkeypatch):
    """The row-by-row reader and the column-wise one mark the same records derived and benchmark, on the release
    and on its conversion; the column-wise one without building a record from a row."""
    folder = _hub_folder(tmp_path)
    out = _converted(tmp_path, folder)
    plain = tmp_path / "plain.jsonl"  # the project's schema: no benchmark marker; one aggregate missing
    plain.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "p1", "instruction": "И", "answer": "A", "criteria_name": "К", "rubrics": RUBRIC, "expert_scores": [1, 2]},
        {"id": "p2", "instruction": "И", "answer": "B", "criteria_name": "К", "rubrics": RUBRIC, "expert_scores": [2],
         "criteria_score": 2},
    ]), encoding="utf-8")  # fmt: skip
    by_rows = {path: records_module.records_and_report(jsonl_rows(path), str(path), False) for path in (out, plain)}
    table = pq.read_table(folder / "data" / "test-00000-of-00001.parquet").to_pylist()
    by_rows[folder] = records_module.records_and_report(
        ((str(folder / "data" / "test-00000-of-00001.parquet"), records_module.RowIndex(i), r)
         for i, r in enumerate(table)), str(folder), False)  # fmt: skip

    def refuse(*args, **kwargs):
        raise AssertionError("the row-by-row path ran")

    monkeypatch.setattr(JudgeRecord, "from_row", refuse)
    for path, (records, report) in by_rows.items():
        columns, column_report = judge.load_record_columns(path)
        loaded = columns.records()
        assert loaded == records and _flags(loaded) == _flags(records)
        assert _without_source(column_report) == _without_source(report)
        assert column_report.derived_criteria_records == report.derived_criteria_records
    assert _flags(by_rows[plain][0]) == [(True, False), (False, False)]
    # taken from columns of records too (a source read row by row, records made in code)
    from judge.record_columns import RecordColumns

    again = RecordColumns.from_records(by_rows[out][0]).take([1, 2])
    assert _flags(again.records()) == [(True, True), (False, True)]


def test_a_replaced_aggregate_is_written_as_given(tmp_path):
    """Only an aggregate that is still the experts' mean is written null: one replaced since (a teacher's score)
    is a value the data now gives."""
    folder = _hub_folder(tmp_path)
    records, _ = load_records_report(folder)
    derived = records[1]
    assert derived.criteria_score == 1.5 and derived.to_dict()["criteria_score"] is None
    assert dataclasses.replace(derived, criteria_score=2.0).to_dict()["criteria_score"] == 2.0
    assert JudgeRecord(id="x", instruction="И", answer="A", criteria_name="К", rubrics=RUBRIC, expert_scores=(1.0, 2.0),
                       criteria_score=1.5).to_dict()["criteria_score"] == 1.5  # fmt: skip


def test_a_benchmark_row_without_is_provocative_stays_one(tmp_path):
    """A released row without the is_provocative column is a benchmark row by its annotations; converted, it keeps
    both markers (is_provocative null), so it is still one."""
    row = {k: v for k, v in RELEASED_ROWS[1].items() if k != "is_provocative"}
    record = judge.records_from_rows([row], make_id=True)[0]
    assert record.benchmark_row and record.is_provocative is None
    written = json.loads(json.dumps(record.to_dict()))
    assert records_module.is_benchmark_row(written) and written["is_provocative"] is None
    back = judge.records_from_rows([written])[0]
    assert back == record and back.benchmark_row

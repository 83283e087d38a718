"""Contract defects a review found, each pinned: ``judge-eval convert`` keeps which aggregates were derived and which
rows were the benchmark's (both readers agree), a tie in ``criteria: auto`` is no confident choice, the
criteria-classifier's usage example runs as shown, and the benchmark guard reads every row of a JSONL file."""

from __future__ import annotations

import dataclasses
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from judge import JudgeRecord, load_records_report
from judge import records as records_module
from judge.record_sources import jsonl_rows

RUBRIC = "0: плохо\n\n1: средне\n\n2: хорошо"
_RELEASED = dict(instruction="И", reference_answer="", answer="A", model_id="gpt4", task_type="Творческий брейншторминг",
                 task_subtype="", task_subsubtype="", difficulty="Easy", domain="", is_provocative=False,
                 criteria_name="Проактивность", criteria_description="desc", rubrics=RUBRIC, rubrics_example="")  # fmt: skip
RELEASED_ROWS = [
    # the aggregate given
    _RELEASED | {"annotations": [{"comment": "ok", "score": 0.0}, {"comment": "не применимо", "score": -1.0}],
                 "criteria_score": 0.0},
    # no aggregate: the load derives the experts' mean (1.5); and no criteria_description
    _RELEASED | {"answer": "B", "criteria_description": "", "is_provocative": True,
                 "annotations": [{"comment": "a", "score": 1.0}, {"comment": "b", "score": 2.0}], "criteria_score": None},
    # every expert abstained: no aggregate, nothing derived
    _RELEASED | {"answer": "C", "annotations": [{"comment": "a", "score": -1.0}], "criteria_score": -1.0},
]


def _hub_folder(tmp_path, rows=RELEASED_ROWS):
    folder = tmp_path / "POLLUX"
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "test-00000-of-00001.parquet")
    return folder


def _converted(tmp_path, folder):
    from eval.cli import main

    out = tmp_path / "converted.jsonl"
    assert main(["convert", "--data", str(folder), "--out", str(out)]) == 0
    return out


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
    by_rows = {path: records_module._validated(jsonl_rows(path), str(path), False) for path in (out, plain)}
    table = pq.read_table(folder / "data" / "test-00000-of-00001.parquet").to_pylist()
    by_rows[folder] = records_module._validated(
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


# ------------------------------------------------------------------------------------- criteria: auto ties


def test_a_tie_between_task_types_falls_back_naming_it():
    """0.5 and 0.5 pass the threshold 0.5, but neither type is more likely: the fallback set, not the first type by
    name at level leaf."""
    from judge.criteria_auto.policy import choose_from_scores, fallback_criteria

    choice = choose_from_scores({"Editing": 0.5, "Advice": 0.5}, "x")
    assert (choice.level, choice.fallback, choice.criteria) == ("fallback", True, fallback_criteria())
    assert "tie" in choice.reason and "'Advice'" in choice.reason and "'Editing'" in choice.reason
    # a tie within float rounding of a type's sum over its leaves is one too
    sums = choose_from_scores({"Text plan / Literary text": 0.1, "Text plan / Official text": 0.2, "Advice": 0.3}, "x",
                               threshold=0.2)
    assert sums.level == "fallback" and "tie" in sums.reason
    # a near tie is a choice
    assert choose_from_scores({"Editing": 0.5001, "Advice": 0.4999}, "x").level == "leaf"


def test_a_tie_between_leaves_decides_at_the_task_type_without_either_leafs_variants():
    """Two leaves of the chosen type exactly as probable: the criteria the type's leaves list as one id, not the
    first leaf's variants; the Code types, whose leaves share none, fall back."""
    from judge.criteria_auto.policy import choose_from_scores, fallback_criteria, type_criteria

    choice = choose_from_scores({"Text plan / Literary text": 0.5, "Text plan / Journalistic text": 0.5}, "x")
    assert (choice.level, choice.criteria) == ("task_type", type_criteria("Text plan"))
    assert "facts__3" not in choice.criteria  # a variant the first leaf by label lists, the other does not
    assert re.search(r"leaves '.+' and '.+' tie", choice.reason)
    code = choose_from_scores({"Code creation / Python": 0.5, "Code creation / C++": 0.5}, "x")
    assert (code.level, code.criteria) == ("fallback", fallback_criteria()) and "tie" in code.reason
    # the share test alone (0.4, 0.3, 0.3: the top leaf is no tie) still takes the top leaf's variants
    share = choose_from_scores({"Text plan / Literary text": 0.4, "Text plan / Journalistic text": 0.3,
                                "Text plan / Official text": 0.3}, "x")  # fmt: skip
    assert share.level == "task_type" and "tie" not in share.reason


# ------------------------------------------------------------------------------------- training's benchmark guard


def test_criteria_classifier_usage_examples_run_as_shown():
    """Every usage example that trains on the release names --allow-benchmark-rows, without which the command
    refuses it."""
    import train.cli
    import train.criteria_classifier

    for module in (train.criteria_classifier, train.cli):
        for line in module.__doc__.splitlines():
            if "criteria-classifier" in line and "ai-forever/POLLUX" in line:
                assert "--allow-benchmark-rows" in line, line


def test_the_benchmark_guard_reads_every_row_of_a_jsonl_file(tmp_path):
    """A JSONL file whose first row is a plain labelled one and a later row the benchmark's (a converted one with an
    empty criteria_description included) is refused, naming that row's line."""
    from train.build_data import BenchmarkRowsError
    from train.criteria_rows import refuse_benchmark_sources

    converted = _converted(tmp_path, _hub_folder(tmp_path, [RELEASED_ROWS[1]]))
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"instruction": "Напиши план.", "label": "Plans / Road map"}, ensure_ascii=False)
                     + "\n\n" + converted.read_text(encoding="utf-8"), encoding="utf-8")  # fmt: skip
    with pytest.raises(BenchmarkRowsError, match=r"mixed\.jsonl: line 3 .*released POLLUX benchmark's schema"):
        refuse_benchmark_sources([mixed], allow=False)
    refuse_benchmark_sources([mixed], allow=True)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"instruction": "Напиши план.", "label": "Plans / Road map"}) + "\n", encoding="utf-8")
    refuse_benchmark_sources([plain], allow=False)

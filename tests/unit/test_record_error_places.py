"""Where a record error points: a JSONL row by the line an editor shows (from 1, blank lines counted), a table's row
(Parquet, Arrow, datasets) by its 0-based row index, said as "row index N"; ``RecordError.row`` stays the 0-based
index. And items whose experts score off their rubric's scale are counted and named, not taken in without a word."""

from __future__ import annotations

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from judge.record_sources import jsonl_rows, load_records_report, source_rows
from judge.records import JudgeRecord, LineIndex, RecordError, RowIndex, records_from_rows

GOOD = {"id": "a1", "instruction": "Напиши стихотворение.", "answer": "Стихотворение.", "criteria_name": "Корректность",
        "rubrics": "0: нет\n\n1: частично\n\n2: да", "expert_scores": [2, 1], "expert_feedback": ["Да.", "Почти."]}
LOADERS = (load_records_report, judge.load_record_columns)


def _lines(path, *lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _row(**changes):
    return json.dumps(GOOD | changes, ensure_ascii=False)


def test_a_jsonl_error_names_the_line_an_editor_shows_blank_lines_counted(tmp_path):
    """The bad row is on line 4, after a good line and two blank ones: both loaders say "line 4" (it said "row 3",
    and a user opening line 3 found a blank one); the attribute keeps the 0-based index."""
    bad = {k: v for k, v in GOOD.items() if k != "answer"} | {"id": "b"}
    path = _lines(tmp_path / "data.jsonl", _row(), "", "   ", json.dumps(bad, ensure_ascii=False))
    for load in LOADERS:
        with pytest.raises(RecordError) as info:
            load(path)
        assert str(info.value) == f"{path}: line 4: field 'answer': is missing"
        assert (info.value.row, info.value.field, info.value.place) == (3, "answer", "line 4")


def test_an_unreadable_jsonl_line_after_a_blank_one_names_its_line(tmp_path):
    """A line that is not JSON, after a blank line, is named by its own line; the rows read are numbered so too."""
    path = _lines(tmp_path / "data.jsonl", _row(), "", _row(id="b"), "{not json")
    with pytest.raises(RecordError, match=rf"^{path}: line 4: invalid JSON"):
        load_records_report(path)
    rows = []
    with pytest.raises(RecordError):
        rows.extend(jsonl_rows(path))
    assert [(row, type(row)) for _, row, _ in rows] == [(0, LineIndex), (2, LineIndex)]


def test_duplicate_ids_in_jsonl_name_both_lines(tmp_path):
    """An id repeated with different content names both rows by their lines; an exact duplicate is listed so too."""
    path = _lines(tmp_path / "dup.jsonl", _row(), "", _row(answer="Другой ответ."))
    for load in LOADERS:
        with pytest.raises(RecordError) as info:
            load(path)
        assert str(info.value) == f"{path}: line 3: field 'id': 'a1' repeats the id of line 1 with different content"
    same = _lines(tmp_path / "same.jsonl", _row(), _row(id="b"), _row())
    for load in LOADERS:
        assert load(same)[1].duplicate_rows == ["line 3 = line 1"]


def test_a_parquet_error_names_the_row_index(tmp_path):
    """A Parquet row is named by its 0-based index as pandas and datasets show it, said "row index 1"."""
    path = tmp_path / "data.parquet"
    rows = [GOOD | {"expert_feedback": None}, GOOD | {"id": "b", "answer": " ", "expert_feedback": None}]
    pq.write_table(pa.Table.from_pylist(rows), path)
    for load in LOADERS:
        with pytest.raises(RecordError) as info:
            load(path)
        assert str(info.value) == f"{path}: row index 1: field 'answer': is empty"
        assert (info.value.row, info.value.place) == (1, "row index 1")
    assert [type(index) for _, index, _ in source_rows(path)] == [RowIndex, RowIndex]


def test_records_read_column_wise_keep_how_their_rows_are_numbered(tmp_path, monkeypatch):
    """A record loaded column-wise remembers its line (JSONL) or row index (Parquet): a later error about it, built
    from ``record.origin`` as training builds one, names the row as the loader would."""
    path = _lines(tmp_path / "data.jsonl", _row(), _row(id="b"))
    table = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist([GOOD | {"id": k, "expert_feedback": None} for k in "ab"]), table)

    def refuse(*args, **kwargs):
        raise AssertionError("the row-by-row path ran")

    monkeypatch.setattr(JudgeRecord, "from_row", refuse)
    for source, place in ((path, "line 2"), (table, "row index 1")):
        columns, _ = judge.load_record_columns(source)
        record = columns.records()[1]
        assert str(RecordError(*record.origin, "reasoning", "none")) == f"{source}: {place}: field 'reasoning': none"
        assert str(RecordError(*columns.take([1]).records()[0].origin, None, "x")) == f"{source}: {place}: x"


def test_rows_handed_over_in_code_are_named_by_their_index_or_given_lines():
    """records_from_rows names a row by its index in the list ("row index 1"), or by the lines it is given."""
    bad = GOOD | {"id": "b", "criteria_name": ""}
    with pytest.raises(RecordError, match=r"^<rows>: row index 1: field 'criteria_name': is empty$"):
        records_from_rows([GOOD, bad])
    with pytest.raises(RecordError, match=r"^d.jsonl: line 5: field 'criteria_name': is empty$") as info:
        records_from_rows([GOOD, bad], source="d.jsonl", row_index=[LineIndex(0), LineIndex(4)])
    assert info.value.row == 4


def test_scores_off_the_rubric_are_counted_and_named_by_both_loaders(tmp_path, caplog, monkeypatch):
    """An expert's 7 on a 0..2 rubric, or a given aggregate of 5, was taken in as a reference without a word; both
    loaders now count such items and name their rows, and the load warns (kept: training skips and counts them)."""
    path = _lines(tmp_path / "off.jsonl", _row(), _row(id="b", expert_scores=[2, 7]),
                  _row(id="c", expert_scores=[2, None], expert_feedback=None, criteria_score=5), _row(id="d"),
                  _row(id="e", expert_scores=[-2, 1]))  # off the scale below it (a -1 is refused: null abstains)
    table = tmp_path / "off.parquet"
    pq.write_table(pa.Table.from_pylist([GOOD | {"expert_feedback": None},
                                         GOOD | {"id": "b", "expert_scores": [2.0, 3.0], "expert_feedback": None}]),
                   table)
    for load in LOADERS:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="judge.records"):
            _, report = load(path)
        assert (report.n_records, report.n_off_scale, report.off_scale_rows) == (5, 3, ["line 2", "line 3", "line 5"])
        assert "off_scale=3" in report.summary()
        assert any("3 items have an expert score or criteria_score outside their rubric's scale" in r.getMessage()
                   and "line 2; line 3; line 5" in r.getMessage() for r in caplog.records)
        _, report = load(table)
        assert (report.n_off_scale, report.off_scale_rows) == (1, ["row index 1"])
    # the released schema's -1 is an abstention, not a score off the scale
    released = GOOD | {"expert_scores": None, "expert_feedback": None,
                       "annotations": [{"comment": "", "score": -1}, {"comment": "Да.", "score": 2}]}
    pq.write_table(pa.Table.from_pylist([released]), tmp_path / "released.parquet")
    for load in LOADERS:
        assert load(tmp_path / "released.parquet")[1].n_off_scale == 0

    def refuse(*args, **kwargs):
        raise AssertionError("the row-by-row path ran")

    monkeypatch.setattr(JudgeRecord, "from_row", refuse)  # the column-wise count, not the row path's
    assert judge.load_record_columns(table)[1].off_scale_rows == ["row index 1"]
    clean = _lines(tmp_path / "clean.jsonl", _row(), _row(id="b", expert_scores=[2, 7]), _row(id="c"))
    assert judge.load_record_columns(clean)[1].off_scale_rows == ["line 2"]


def test_a_project_rows_minus_one_is_refused_unless_its_rubric_has_that_level(tmp_path):
    """A project file's -1 expert score was warned about as off the scale and then averaged in as a score, although
    it is the release's abstention code: both loaders now refuse it, from JSONL and Parquet, naming the row, the
    field, the expert's place and what to write instead. On a rubric that lists -1 as a level it is that level."""
    said = ("field 'expert_scores': item 1 is -1, which is not a level of this row's rubric: write null for an "
            "abstention (-1 is the POLLUX release's abstention code, which the release loader turns into null)")
    minus = GOOD | {"id": "b", "expert_scores": [2, -1], "expert_feedback": None}
    path = _lines(tmp_path / "d.jsonl", _row(), json.dumps(minus, ensure_ascii=False))
    pq.write_table(pa.Table.from_pylist([GOOD, minus]), tmp_path / "d.parquet")
    # a rubric from which no scale can be read does not list -1 either
    unreadable = _lines(tmp_path / "u.jsonl", _row(), _row(id="b", rubrics="Оцените по существу.",
                                                           expert_scores=[2, -1], expert_feedback=None))
    for source, place in ((path, "line 2"), (tmp_path / "d.parquet", "row index 1"), (unreadable, "line 2")):
        for load in LOADERS:
            with pytest.raises(RecordError) as info:
                load(source)
            assert str(info.value) == f"{source}: {place}: {said}", (source, load)
    # a null is the abstention; on a -1 / 0 / 1 rubric a -1 is a score: mean (-1 + 1) / 2 = 0, nothing off the scale
    level = GOOD | {"id": "c", "rubrics": "-1: хуже\n\n0: так же\n\n1: лучше", "expert_scores": [-1, None, 1],
                    "expert_feedback": None}
    kept = _lines(tmp_path / "k.jsonl", _row(), json.dumps(level, ensure_ascii=False))
    pq.write_table(pa.Table.from_pylist([GOOD | {"expert_feedback": None}, level]), tmp_path / "k.parquet")
    for source in (kept, tmp_path / "k.parquet"):
        for load in LOADERS:
            records, report = load(source)
            records = records if isinstance(records, list) else records.records()
            assert (records[1].expert_scores, records[1].criteria_score) == ((-1.0, 1.0), 0.0), (source, load)
            assert (report.n_abstentions, report.n_off_scale) == (1, 0), (source, load)


def test_a_project_rows_minus_one_aggregate_with_no_expert_score_is_refused_unless_a_level(tmp_path):
    """A project row with criteria_score -1 and no expert score (none given, or all null) was read as a score of -1,
    off the scale and counted, although it can only be the release's abstention code carried over without its
    annotations: both loaders refuse it, from JSONL and Parquet (the column reader leaves it to the row path),
    naming the row and the field. With an expert's score beside it, or on a rubric that lists -1, it is a score."""
    said = ("field 'criteria_score': is -1 with no expert score, and -1 is not a level of this row's rubric: write "
            "null for an item no expert scored (-1 is the POLLUX release's abstention code, which the release loader "
            "turns into null)")
    # Arrow takes a table's columns from its first row: that row names criteria_score too
    first = GOOD | {"expert_feedback": None, "criteria_score": None}
    none = GOOD | {"id": "b", "expert_scores": None, "expert_feedback": None, "criteria_score": -1}
    abstained = GOOD | {"id": "b", "expert_scores": [None, None], "expert_feedback": None, "criteria_score": -1}
    for n, minus in enumerate((none, abstained)):
        path = _lines(tmp_path / f"d{n}.jsonl", _row(), json.dumps(minus, ensure_ascii=False))
        pq.write_table(pa.Table.from_pylist([first, minus]), tmp_path / f"d{n}.parquet")
        for source, place in ((path, "line 2"), (tmp_path / f"d{n}.parquet", "row index 1")):
            for load in LOADERS:
                with pytest.raises(RecordError) as info:
                    load(source)
                assert str(info.value) == f"{source}: {place}: {said}", (source, load)
    # beside an expert's 2 the -1 is the file's own aggregate (off the 0..2 scale, counted); on a -1 / 0 / 1 rubric
    # it is a level
    scored = GOOD | {"id": "b", "expert_scores": [2], "expert_feedback": None, "criteria_score": -1}
    level = none | {"rubrics": "-1: хуже\n\n0: так же\n\n1: лучше"}
    for n, row in enumerate((scored, level)):
        kept = _lines(tmp_path / f"k{n}.jsonl", _row(), json.dumps(row, ensure_ascii=False))
        pq.write_table(pa.Table.from_pylist([first, row]), tmp_path / f"k{n}.parquet")
        for source in (kept, tmp_path / f"k{n}.parquet"):
            for load in LOADERS:
                records, report = load(source)
                records = records if isinstance(records, list) else records.records()
                assert records[1].criteria_score == -1.0, (source, load)
                assert report.n_off_scale == (1 if row is scored else 0), (source, load)


def test_a_record_built_in_code_with_a_minus_one_score_is_refused_unless_a_level():
    """A JudgeRecord built in Python with -1 among its experts' scores on a 0..2 rubric was kept, and the file
    written from it refused when read back: it is refused where it is built, from scores or from annotations,
    naming the record and the expert's place. On a -1 / 0 / 1 rubric -1 is a level."""
    from judge import JudgeRecord
    from judge.records import Annotation

    base = dict(id="r", instruction="И", answer="О", criteria_name="К", rubrics="0: a\n\n1: b\n\n2: c")
    with pytest.raises(RecordError) as info:
        JudgeRecord(**base, expert_scores=(2.0, -1.0))
    assert str(info.value) == ("record 'r': field 'expert_scores': item 1 is -1, which is not a level of this "
                               "record's rubric: give None (an annotation's score) for an abstention (-1 is the "
                               "POLLUX release's abstention code)")
    with pytest.raises(RecordError, match="item 1 is -1"):  # the place among the annotations
        JudgeRecord(**base, annotations=(Annotation(None, ""), Annotation(-1.0, ""), Annotation(2.0, "")))
    with pytest.raises(RecordError, match=r"^record 'r': field 'criteria_score': is -1 with no expert score"):
        JudgeRecord(**base, criteria_score=-1.0)  # the aggregate alone, as a project row's is refused when read
    level = base | {"rubrics": "-1: хуже\n\n0: так же\n\n1: лучше"}
    assert JudgeRecord(**level, expert_scores=(-1, 1)).expert_scores == (-1, 1)
    assert JudgeRecord(**level, criteria_score=-1.0).criteria_score == -1.0
    assert JudgeRecord(**base, annotations=(Annotation(None, ""), Annotation(2.0, ""))).expert_scores == (2.0,)

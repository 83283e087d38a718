"""Who the experts are: ``expert_ids`` on records, through the row path, the column-wise path and `convert`."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from judge import JudgeRecord, RecordError, load_records_report
from judge.records import Annotation
from judge import records as records_module

BASE = {"instruction": "Задание", "answer": "Ответ", "criteria_name": "Грамотность", "rubrics": "0: плохо\n\n1: хорошо"}
NAMED = [
    BASE | {"id": "n1", "expert_scores": [1, None, 0], "expert_ids": ["e1", "e2", "e3"]},
    BASE | {"id": "n2", "expert_scores": [0, 1], "expert_ids": ["e2", "e3"],
            "expert_feedback": ["нет", "да"]},  # fmt: skip
    BASE | {"id": "n3", "expert_scores": [1, 1]},  # a row that names no experts
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_abstaining_expert_keeps_its_id_and_leaves_expert_ids():
    """An abstention (null) keeps its id in annotations; expert_ids is parallel to the non-abstaining scores."""
    record = JudgeRecord.from_row(NAMED[0])
    assert record.expert_scores == (1.0, 0.0)
    assert record.expert_ids == ("e1", "e3")
    assert [a.expert_id for a in record.annotations] == ["e1", "e2", "e3"]
    assert record.annotations[1].abstained
    assert record.to_dict()["expert_ids"] == ["e1", "e2", "e3"]
    assert JudgeRecord.from_row(record.to_dict()) == record


def test_released_annotations_take_expert_ids_and_unnamed_rows_have_none():
    """expert_ids is parallel to a released ``annotations`` list (a -1 abstains); a row without ids has None."""
    row = BASE | {"id": "r", "annotations": [{"score": -1, "comment": ""}, {"score": 1, "comment": "да"}],
                  "expert_ids": [7, 8]}  # fmt: skip
    record = JudgeRecord.from_row(row)
    assert record.expert_ids == ("8",)  # integer ids read as their text
    assert record.annotations[0].expert_id == "7"
    unnamed = JudgeRecord.from_row(NAMED[2])
    assert unnamed.expert_ids is None and "expert_ids" not in unnamed.to_dict()


def test_constructor_builds_annotations_with_ids_and_checks_them():
    """JudgeRecord(...) with expert_ids builds named annotations; a wrong count or a repeat is refused."""
    record = JudgeRecord(id="x", **BASE, criteria_score=0.5, expert_scores=(1.0, 0.0), expert_ids=("a", "b"))
    assert [a.expert_id for a in record.annotations] == ["a", "b"]
    assert record == JudgeRecord.from_row(BASE | {"id": "x", "expert_scores": [1, 0], "expert_ids": ["a", "b"]})
    with pytest.raises(ValueError, match="1 expert ids for 2 experts"):
        JudgeRecord(id="x", **BASE, expert_scores=(1.0, 0.0), expert_ids=("a",))
    with pytest.raises(ValueError, match="repeats"):
        JudgeRecord(id="x", **BASE, expert_scores=(1.0, 0.0), expert_ids=("a", "a"))
    # integers are read as their text from a data row only: built in Python, the refusal offers no integers
    with pytest.raises(ValueError) as refused:
        JudgeRecord(id="x", **BASE, expert_scores=(1.0, 0.0), expert_ids=(7, 12))
    assert str(refused.value).endswith("expert ids must be non-blank texts (one per expert), got [7, 12]")
    for blank in (" ", ""):  # built in Python, from expert_ids or from the annotations, as from a row
        with pytest.raises(ValueError, match=r"expert ids must be non-blank texts \(one per expert\)"):
            JudgeRecord(id="x", **BASE, expert_scores=(1.0, 0.0), expert_ids=("a", blank))
        with pytest.raises(ValueError, match=r"expert ids must be non-blank texts \(one per expert\)"):
            JudgeRecord(id="x", **BASE, annotations=(Annotation(1.0, "", "a"), Annotation(0.0, "", blank)))


@pytest.mark.parametrize(("ids", "fragment"), [
    (["e1", "e2"], "2 expert ids for 3 experts"),
    (["e1", "e1", "e3"], "repeats within the item"),
    (["e1", "", "e3"], "non-blank texts"),
    (["e1", " ", "e3"], r"non-blank texts or integers \(one per expert\), got \['e1', ' ', 'e3'\]"),
    ("e1", "must be a list of texts"),
    ([1, 2.0, 3], r"non-blank texts or integers \(one per expert\), got \['1', 2.0, '3'\]"),  # 2.0: no integer
    ([1, True, 3], "non-blank texts or integers"),  # true is no id: it would read "True"
    ([1, "1", 3], r"repeats within the item \(\['1', '1', '3'\]\)"),  # 1 and "1" name one expert
])  # fmt: skip
def test_bad_expert_ids_are_named_on_both_paths(ids, fragment, tmp_path):
    """A bad expert_ids list raises a RecordError naming the field and row, from rows and from a JSONL file."""
    rows = [NAMED[1], NAMED[0] | {"expert_ids": ids}]
    with pytest.raises(RecordError, match=fragment) as raised:
        judge.records_from_rows(rows)
    assert (raised.value.row, raised.value.field) == (1, "expert_ids")
    with pytest.raises(RecordError, match=fragment) as raised:
        judge.load_records(_jsonl(tmp_path / "bad.jsonl", rows))
    assert (raised.value.row, raised.value.field) == (1, "expert_ids")


def test_integer_expert_ids_are_read_as_their_decimal_text_on_both_paths(tmp_path):
    """Annotation tools often number their annotators: an integer id is the id's text, as a row's integer id is."""
    rows = [NAMED[1], NAMED[0] | {"expert_ids": [7, 12, 3]}]  # scores 1, abstains, 0
    by_rows = judge.records_from_rows(rows)
    assert by_rows[1].expert_ids == ("7", "3")  # the abstaining expert 12 left out with its score
    assert [a.expert_id for a in by_rows[1].annotations] == ["7", "12", "3"]
    assert judge.load_records(_jsonl(tmp_path / "ints.jsonl", rows)) == by_rows


def test_column_wise_jsonl_and_parquet_keep_ids_like_the_row_path(tmp_path, monkeypatch):
    """JSONL and Parquet with expert_ids load column-wise into the row path's records, ids on every annotation."""
    path = _jsonl(tmp_path / "d.jsonl", NAMED)
    expected = records_module.records_and_report(((str(path), i, r) for i, r in enumerate(NAMED)), str(path), False)
    parquet = tmp_path / "d.parquet"
    keys = {key: None for row in NAMED for key in row}  # from_pylist takes its columns from the first row only
    pq.write_table(pa.Table.from_pylist([keys | row for row in NAMED]), parquet)

    def refuse(*args, **kwargs):
        raise AssertionError("the row-by-row path ran")

    monkeypatch.setattr(JudgeRecord, "from_row", refuse)
    for source in (path, parquet):
        records, report = load_records_report(source)
        assert records == expected[0] and report.summary().split(":", 1)[1] == expected[1].summary().split(":", 1)[1]
        assert [r.annotations for r in records] == [r.annotations for r in expected[0]]
        assert [r.expert_ids for r in records] == [("e1", "e3"), ("e2", "e3"), None]


def test_convert_keeps_expert_ids(tmp_path):
    """`judge-eval convert` writes expert_ids back (abstainers' ids included) and reads into equal records."""
    from eval.cli import main

    source = _jsonl(tmp_path / "in.jsonl", NAMED)
    out = tmp_path / "out.jsonl"
    assert main(["convert", "--data", str(source), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r.get("expert_ids") for r in rows] == [["e1", "e2", "e3"], ["e2", "e3"], None]
    assert judge.load_records(out) == judge.load_records(source)

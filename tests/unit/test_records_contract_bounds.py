"""The record contract's edges: deep values in duplicate rows, the bound on experts per item, content ids of raw
rows, an empty ``RecordColumns``, and what a split file must hold."""

import json

import numpy as np
import pandas as pd
import pytest

import judge
from judge import RecordError, load_record_columns, load_records_report, load_split_spec, records_from_rows
from judge.record_columns import RecordColumns
from judge.records import MAX_EXPERTS_PER_ITEM

ROW = {"instruction": "Сколько будет 2+2?", "answer": "4", "criteria_name": "Проактивность",
       "rubrics": "0: Нет.\n\n1: Да."}  # fmt: skip


def _nested(depth, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_two_copies_of_a_row_nested_500_deep_are_one_duplicate(tmp_path):
    """json reads a value 500 lists deep; a recursive comparison of the two copies' unknown column crashed the load
    (and ``judge-eval convert``) with RecursionError. The second copy is an exact duplicate, counted."""
    line = json.dumps(ROW | {"id": "a", "expert_scores": [1], "deep": _nested(500)})
    path = tmp_path / "deep.jsonl"
    path.write_text(line + "\n" + line + "\n", encoding="utf-8")
    records, report = load_records_report(path)
    assert len(records) == 1 and report.n_duplicates == 1
    assert report.duplicate_rows == ["line 2 = line 1"]


def test_copies_differing_only_deep_inside_are_different_content():
    """The walk still looks all the way down: a different leaf 500 lists deep is another content under one id, and
    NaN deep inside both copies is the same value (a missing float as pandas writes it)."""
    same = [ROW | {"id": "a", "deep": [[float("nan")], _nested(500)]} for _ in range(2)]
    assert len(records_from_rows(same)) == 1
    other = ROW | {"id": "a", "deep": [[float("nan")], _nested(500, leaf=2)]}
    with pytest.raises(RecordError, match="repeats the id"):
        records_from_rows([same[0], other])


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("loader", [load_records_report, load_record_columns])
def test_a_row_with_more_experts_than_the_bound_is_refused_naming_row_and_field(tmp_path, fmt, loader):
    """64 experts load; 65 are refused with the row and the field named, on the row path and the column path."""
    assert MAX_EXPERTS_PER_ITEM == 64
    rows = [ROW | {"id": "ok", "expert_scores": [1] * 64}, ROW | {"id": "many", "expert_scores": [1] * 65}]
    path = tmp_path / f"rows.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        place = "line 2"
    else:
        pd.DataFrame(rows).to_parquet(path)
        place = "row index 1"
    with pytest.raises(RecordError) as caught:
        loader(path)
    assert caught.value.field == "expert_scores"
    assert str(caught.value) == (f"{path}: {place}: field 'expert_scores': has 65 items; an item has at most 64 "
                                 "experts (judge.records.MAX_EXPERTS_PER_ITEM)")
    path.unlink()
    if fmt == "jsonl":
        path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    else:
        pd.DataFrame(rows[:1]).to_parquet(path)
    loaded, _ = loader(path)
    assert len(loaded) == 1


@pytest.mark.parametrize("field,value", [
    ("annotations", [{"comment": "", "score": 1}] * 65),
    ("expert_feedback", ["ok"] * 65),
    ("expert_ids", [f"e{k}" for k in range(65)]),
])
def test_every_per_expert_list_is_bounded(field, value):
    """The released annotations, the feedback texts and the experts' ids are bounded as the scores are (the
    feedback and ids before they are checked against the scores, so a list of a million texts is never built)."""
    row = ROW | {"id": "r", field: value}
    if field != "annotations":
        row["expert_scores"] = [1]
    with pytest.raises(RecordError, match=f"field '{field}': has 65 items; an item has at most 64 experts"):
        records_from_rows([row])


def test_a_generator_of_experts_is_read_only_one_past_the_bound():
    """An iterable with no length is taken one item past the bound, not drained."""
    taken = []

    def scores():
        for k in range(10**6):
            taken.append(k)
            yield 1

    with pytest.raises(RecordError, match="has more than 64 items"):
        judge.JudgeRecord.from_row(ROW | {"id": "r", "expert_scores": scores()})
    assert len(taken) == 65


@pytest.mark.parametrize("subtype,text", [(3, "3"), (0, "0")])
def test_content_id_of_a_raw_row_is_its_loaded_records_id(subtype, text):
    """The loader reads an integer subtype as its digits; content_id of the raw row hashes the same texts (it hashed
    3 as a JSON number and 0 as "", so the two ids differed)."""
    row = ROW | {"task_subtype": subtype, "model_id": None}
    assert judge.content_id(row) == records_from_rows([row])[0].id
    assert judge.content_id(row) == judge.content_id(ROW | {"task_subtype": text})
    assert judge.content_id(ROW | {"task_subtype": 0}) != judge.content_id(ROW)  # "0" is a subtype, "" none


def test_empty_record_columns_give_empty_matrices():
    """No records: a (0, 0) matrix of scores, and no expert ids."""
    columns = RecordColumns.from_records([])
    matrix = columns.expert_matrix()
    assert matrix.shape == (0, 0) and matrix.dtype == np.float64
    assert columns.expert_id_matrix() is None
    assert columns._packed(np.zeros(0, dtype=object), None, object).shape == (0, 0)


def test_expert_matrix_packs_each_rows_given_scores_first():
    """Row 0: 2, abstention, 0 -> [2, 0]; row 1: no experts -> [NaN, NaN]; row 2: 1 -> [1, NaN]."""
    rows = [ROW | {"id": "a", "expert_scores": [2, None, 0], "expert_ids": ["x", "y", "z"]},
            ROW | {"id": "b"}, ROW | {"id": "c", "expert_scores": [1], "expert_ids": ["x"]}]
    columns = RecordColumns.from_records(records_from_rows(rows))
    np.testing.assert_array_equal(columns.expert_matrix(), [[2, 0], [np.nan, np.nan], [1, np.nan]])
    assert columns.expert_id_matrix().tolist() == [["x", "z"], [None, None], ["x", None]]


def test_distinct_numbers_combinations_in_order_of_first_appearance():
    """Three fields, combinations (a,1,x) (b,1,x) (a,1,x) (a,2,y): numbers 0 1 0 2, first rows 0 1 3."""
    rows = [ROW | {"id": str(k), "model_id": m, "task_type": t, "domain": d}
            for k, (m, t, d) in enumerate([("a", "1", "x"), ("b", "1", "x"), ("a", "1", "x"), ("a", "2", "y")])]
    columns = RecordColumns.from_records(records_from_rows(rows))
    key, first = columns.distinct(["model_id", "task_type", "domain"])
    assert key.tolist() == [0, 1, 0, 2] and first.tolist() == [0, 1, 3]


SPLIT_FILES = [
    ("", "a split file is a mapping with task_types and criteria lists, got an empty file"),
    ("version: x\n", "key 'task_types' is missing (write task_types: [] to hold none out)"),
    ("version: x\ntask_types: []\n", "key 'criteria' is missing"),
    ("task_types:\ncriteria: []\n", "key 'task_types' must be a list of texts (an empty one written as []), got nothing"),
    ("task_types: Recommendations\ncriteria: []\n", "key 'task_types' must be a list of texts (an empty one written "
                                                     "as []), got a string"),
    ("task_types: 5\ncriteria: []\n", "key 'task_types' must be a list of texts (an empty one written as []), got an integer"),
    ("task_types: []\ncriteria: [{a: 1}]\n", "key 'criteria': item 0 must be text, got an object"),
    ("task_types: [5]\ncriteria: []\n", "key 'task_types': item 0 must be text, got an integer"),
    ("- Recommendations\n", "a split file is a mapping with task_types and criteria lists, got a list"),
    ("task_types: [Recommendations\ncriteria: []\n", "not valid YAML ("),
]


@pytest.mark.parametrize("text,message", SPLIT_FILES, ids=[m[:40] for _, m in SPLIT_FILES])
def test_a_split_file_without_both_lists_is_one_line_naming_file_and_key(tmp_path, text, message):
    """An empty file or a bare key read as empty sets, so everything was Standard and the leakage guard off; a text
    was read letter by letter; a number or a mapping raised TypeError; bad YAML a multi-line error naming no file."""
    path = tmp_path / "split.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        load_split_spec(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_explicitly_empty_split_holds_nothing_out(tmp_path):
    path = tmp_path / "split.yaml"
    path.write_text("task_types: []\ncriteria: []\n", encoding="utf-8")
    spec = load_split_spec(path)
    assert (spec.version, spec.task_types, spec.criteria) == ("", frozenset(), frozenset())


def test_mixed_radix_codes_are_numbered_again_before_they_could_wrap():
    """A product past int64 would wrap silently and merge combinations: 2**40 codes times 2**30 values is numbered
    again first (2**40-1, 5, 2**40-1 -> 0, 1, 0), then combined; a small product is combined as it is."""
    from judge.record_columns import _mixed_radix

    code, bound = _mixed_radix(np.array([2**40 - 1, 5, 2**40 - 1]), 2**40, np.array([0, 1, 0]), 2**30)
    assert code.tolist() == [0, 2**30 + 1, 0] and bound == 2 * 2**30
    code, bound = _mixed_radix(np.array([3, 1]), 4, np.array([1, 0]), 2)
    assert code.tolist() == [7, 2] and bound == 8


def _too_long_rows(field: str, length: int) -> list[dict]:
    """Two rows, the second's ``field`` (an expert's rationale for ``expert_feedback``) ``length`` characters."""
    text = "ж" * length
    second = ROW | {"id": "b", "expert_scores": [1]}
    if field == "expert_feedback":
        second["expert_feedback"] = [text]
    else:
        second[field] = text
    return [ROW | {"id": "a", "expert_scores": [1], "expert_feedback": ["Верно."]}, second]


@pytest.mark.parametrize("field", ["instruction", "answer", "reference_answer", "expert_feedback"])
@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_a_text_past_the_per_field_bound_is_refused_by_every_reader_naming_field_and_row(tmp_path, field, kind):
    """One text of a row holds at most ``judge.records.MAX_TEXT_CHARS`` characters: a longer one (a 50 MB answer)
    went whole into the prompt renderer and the engine's tokenizer, to be refused there as too long, if at all. Each
    reader refuses it at load, naming the field and the row; a text of exactly the bound loads."""
    from judge.records import MAX_TEXT_CHARS

    rows = _too_long_rows(field, MAX_TEXT_CHARS + 1)
    path = tmp_path / f"long.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    else:
        pd.DataFrame(rows).to_parquet(path)
    place = "line 2" if kind == "jsonl" else "row index 1"
    for load in (load_records_report, load_record_columns):
        with pytest.raises(RecordError, match=rf"{place}: field '{field}': .*{MAX_TEXT_CHARS + 1:,} characters"):
            load(path)
    with pytest.raises(RecordError, match=rf"field '{field}'"):
        records_from_rows(rows)
    at_bound = _too_long_rows(field, MAX_TEXT_CHARS)
    assert len(records_from_rows(at_bound)) == 2


def test_a_released_comment_past_the_bound_is_refused_naming_annotations(tmp_path):
    from judge.records import MAX_TEXT_CHARS

    row = {k: v for k, v in ROW.items()} | {"annotations": [{"comment": "ж" * (MAX_TEXT_CHARS + 1), "score": 1}],
                                            "criteria_score": 1.0}
    with pytest.raises(RecordError, match=r"field 'annotations': .*characters"):
        records_from_rows([row])

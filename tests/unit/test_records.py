"""Loading judged items: every format, and a clear error naming row and field for every kind of bad row."""

import json
import re

import pytest

from judge import JudgeRecord, RecordError, load_record_columns, load_records, records_from_rows, write_jsonl

GOOD = {
    "id": "a1",
    "instruction": "Напиши хокку про осень.",
    "reference_answer": None,
    "answer": "Листья кружатся,\nветер шепчет о зиме —\nтихо в саду.",
    "criteria_name": "Креативность",
    "rubrics": "0: Шаблонно.\n\n1: Есть находки.\n\n2: Увлекательно.",
    "expert_scores": [1, 2, 2],
    "expert_feedback": ["Есть находки.", "Свежий образ.", "Увлекательно и точно."],
    "model_id": "orel-7b",
    "task_type": "Literary text",
    "task_subtype": "Poetry",
    "difficulty": "easy",
    "source_batch": 7,  # a column the record does not know
}


def test_good_row():
    """A valid row becomes a record; the aggregate is derived from the experts; unknown columns are kept."""
    record = JudgeRecord.from_row(GOOD)
    assert record.reference_answer == ""
    assert record.expert_scores == (1.0, 2.0, 2.0)
    assert record.criteria_score == pytest.approx(5 / 3)
    assert record.extra == {"source_batch": 7}
    assert record.to_dict()["source_batch"] == 7


BAD = [
    # (mutation, field named in the error, fragment of the message)
    ({"instruction": None}, "instruction", "is missing"),
    ({"answer": "   "}, "answer", "is empty"),
    # a text of characters that display nothing (a zero-width space, a byte order mark) shows nothing: blank too
    ({"instruction": "\u200b\ufeff"}, "instruction", "is empty: it holds only characters that show nothing (U+200B, "
                                                     "U+FEFF)"),
    ({"answer": " \u00ad\n\u200e"}, "answer", "is empty: it holds only characters that show nothing (U+00AD, U+200E)"),
    ({"criteria_name": 3}, "criteria_name", "must be text"),
    ({"rubrics": ""}, "rubrics", "is empty"),
    ({"expert_scores": "2"}, "expert_scores", "must be a list"),
    ({"expert_scores": [1, "много"]}, "expert_scores", "item 1"),
    ({"expert_scores": [1, float("nan")]}, "expert_scores", "not a finite number"),
    ({"expert_feedback": ["только один"]}, "expert_feedback", "1 texts for 3 expert scores"),
    # an object, one key per expert: iterated, it gave its keys as the rationales
    ({"expert_feedback": {"Есть находки.": 1, "Свежий образ.": 2, "Точно.": 2}}, "expert_feedback",
     "must be a list of texts"),
    ({"criteria_score": "высокий"}, "criteria_score", "not a finite number"),
    ({"reference_answer": 5}, "reference_answer", "must be text"),
    # said for the command line, which has no make_id flag; the Python API's make_id comes last
    ({"id": None}, "id", ("is missing: give each row an id (or leave the id field out of every row: ids are then "
                          "derived from the content; from Python, make_id=True in judge.load_records derives the "
                          "missing ones)")),
    ({"id": [1]}, "id", "must be text"),
    ({"model_id": {"name": "x"}}, "model_id", "must be text"),
    # a number no float holds: float() raised OverflowError, naming no row
    ({"expert_scores": [1, 10**400, 2]}, "expert_scores", "item 1 (an integer of about 401 digits) is not a finite"),
    ({"criteria_score": 10**400}, "criteria_score", "an integer of about 401 digits is not a finite number"),
    # finite but no rubric's score: numpy overflowed in the metrics (warnings), then metrics.json's validity section
    # was refused, far from the row
    ({"expert_scores": [1, 1e308, 2]}, "expert_scores", "item 1 (1e+308) is past 1e+06 in size: no rubric's score"),
    ({"expert_scores": [1, -10**7, 2]}, "expert_scores", "item 1 (-10000000) is past 1e+06 in size"),
    ({"criteria_score": 1e300}, "criteria_score", "1e+300 is past 1e+06 in size: no rubric's score"),
    # a lone surrogate (JSON can escape one): hashing a content id or writing the record raised UnicodeEncodeError
    ({"instruction": "i\ud800"}, "instruction", "is not valid Unicode text: a lone surrogate (U+D800) at character 1"),
    ({"task_type": "Literary\udfff text"}, "task_type", "is not valid Unicode text"),
    ({"id": "a\udc00"}, "id", "is not valid Unicode text"),
    ({"expert_feedback": ["Есть находки.", "Свежий\ud83d образ.", "Да."]}, "expert_feedback", "not valid Unicode"),
    ({"expert_ids": ["e1", "e\ud800", "e3"]}, "expert_ids", "is not valid Unicode text"),
    # a blank id names no one: it stood for an expert in the alternative annotator test as "" is refused from
    ({"expert_ids": ["e1", " ", "e3"]}, "expert_ids",
     "expert ids must be non-blank texts or integers (one per expert), got ['e1', ' ', 'e3']"),
    ({"expert_ids": ["e1", "\t\n", "e3"]}, "expert_ids", "must be non-blank texts or integers"),
    ({"expert_ids": ["e1", "\u200b", "e3"]}, "expert_ids", "must be non-blank texts or integers"),
    # a boolean is no text and no id: it was kept as the text "True"
    ({"id": True}, "id", "must be text or an integer, got true"),
    ({"task_type": False}, "task_type", "must be text, got false"),
    ({"difficulty": True}, "difficulty", "must be text, got true"),
]


@pytest.mark.parametrize("mutation,field,fragment", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_row_names_row_and_field(mutation, field, fragment):
    """Each malformed row raises a RecordError naming the source, the row index and the field (rows handed over in
    code are named by their 0-based index in the list, "row index 1")."""
    rows = [GOOD | {"id": "first"}, GOOD | mutation]
    with pytest.raises(RecordError) as info:
        records_from_rows(rows, source="data.jsonl")
    err = info.value
    assert (err.source, err.row, err.field) == ("data.jsonl", 1, field)
    assert fragment in str(err) and "data.jsonl: row index 1: " in str(err)


def test_a_row_without_expert_scores_names_them_not_its_rationales(tmp_path):
    """One JSONL row without ``expert_scores`` (its rationales kept), among rows that have them, was refused as
    "field 'expert_feedback': has 3 texts for 0 expert scores", blaming the field that is there; the row names the
    missing one, as a whole missing column is named (``judge.column_reader``). A null is named as a null."""
    rows = [GOOD | {"id": "first"}, {key: value for key, value in GOOD.items() if key != "expert_scores"}]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(RecordError) as info:
        load_records(path)
    assert str(info.value) == (f"{path}: line 2: field 'expert_scores': is missing, while expert_feedback gives 3 "
                               "texts here, one per expert score")
    with pytest.raises(RecordError) as info:
        records_from_rows([GOOD | {"expert_scores": None, "expert_feedback": ["Одно."]}], source="data.jsonl")
    assert str(info.value) == ("data.jsonl: row index 0: field 'expert_scores': is null, while expert_feedback gives 1 "
                               "text here, one per expert score")


def test_an_integer_too_long_for_repr_is_named_without_its_digits():
    """An integer past Python's 4,300-digit limit for str() (a row built in code) is named by its size: the message
    itself must not raise."""
    with pytest.raises(RecordError, match=r"row index 0: field 'expert_scores': item 1 \(an integer of about 5001 digits\)"):
        records_from_rows([GOOD | {"expert_scores": [1, -(10**5_000), 2]}])


def test_numpy_booleans_are_no_scores():
    """Rows from pandas (``pd.read_parquet(...).to_dict("records")``) carry numpy values: a numpy boolean is refused as
    a score as Python's True is (float() read it as 1.0), while numpy numbers still read."""
    import numpy as np

    (record,) = records_from_rows([GOOD | {"expert_scores": np.array([1, 2, 2]), "criteria_score": np.float64(1.5)}])
    assert record.expert_scores == (1.0, 2.0, 2.0) and record.criteria_score == 1.5
    for mutation, field, fragment in [({"expert_scores": np.array([True, False, True])}, "expert_scores", "item 0"),
                                      ({"criteria_score": np.True_}, "criteria_score", "is not a finite number")]:
        with pytest.raises(RecordError, match=rf"row index 0: field '{field}': .*{fragment}"):
            records_from_rows([GOOD | mutation])


@pytest.mark.parametrize("reader", [load_records, load_record_columns], ids=["records", "columns"])
def test_a_true_or_false_score_is_named_as_json_writes_it(tmp_path, reader):
    """A JSONL score of ``true`` was named as Python writes it, "(True)": whoever mends the file searches for
    ``true``. Every score field says it as JSON does."""
    rows = [GOOD | {"expert_scores": [True, 2, 2]},
            GOOD | {"id": "a2", "criteria_score": False},
            GOOD | {"id": "a3", "expert_scores": None, "expert_feedback": None,
                    "annotations": [{"comment": "а", "score": True}]}]
    said = ["field 'expert_scores': item 0 (true) is not a finite number",
            "field 'criteria_score': false is not a finite number",
            "field 'annotations': item 0: score true is not a finite number"]
    for row, words in zip(rows, said):
        path = tmp_path / "data.jsonl"
        path.write_text(json.dumps(row) + "\n", encoding="utf-8")
        with pytest.raises(RecordError) as info:
            reader(path)
        assert str(info.value) == f"{path}: line 1: {words}"


def test_duplicate_ids_name_both_rows():
    """An id repeated with different content is an error naming both rows, not a silent overwrite."""
    with pytest.raises(RecordError, match="row index 1: field 'id': 'a1' repeats the id of row index 0 with different "
                                          "content") as info:
        records_from_rows([GOOD, GOOD | {"answer": "Другой ответ."}])
    assert (info.value.row, info.value.field) == (1, "id")


def test_exact_duplicate_rows_are_counted_not_fatal(tmp_path):
    """The same row twice (same id, same content) keeps the first copy and is counted in the report."""
    from judge import load_records_report

    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [GOOD, GOOD, GOOD | {"id": "b"}]), encoding="utf-8")
    records, report = load_records_report(path)
    assert [r.id for r in records] == ["a1", "b"]
    assert (report.n_rows, report.n_records, report.n_duplicates, report.duplicate_rows) == (3, 2, 1, ["line 2 = line 1"])


def test_make_id_derives_stable_ids():
    """Rows without ids get stable content-derived ids only when asked."""
    row = {k: v for k, v in GOOD.items() if k != "id"}
    first = records_from_rows([row], make_id=True)[0].id
    assert first == records_from_rows([row], make_id=True)[0].id and len(first) == 16


def test_jsonl_round_trip_and_bad_json_line(tmp_path):
    """write_jsonl/load_records round-trip; a broken line is reported with its line number (the third line)."""
    records = records_from_rows([GOOD, GOOD | {"id": "a2", "expert_scores": [0, 2], "expert_feedback": None}])
    path = write_jsonl(records, tmp_path / "d.jsonl")
    assert load_records(path) == records
    with path.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    with pytest.raises(RecordError, match="d.jsonl: line 3: invalid JSON"):
        load_records(path)


def test_json_list_parquet_and_datasets_folder(tmp_path):
    """The same rows load identically from a JSON list, Parquet and a datasets folder."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [GOOD, GOOD | {"id": "a2", "reference_answer": "Эталон", "expert_scores": [0, 1], "expert_feedback": ["Плохо.", "Средне."]}]
    expected = records_from_rows(rows)
    (tmp_path / "d.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    assert load_records(tmp_path / "d.json") == expected
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    assert load_records(tmp_path / "d.parquet") == expected
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "ds"))
    assert load_records(tmp_path / "ds") == expected
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "dsd"))
    assert load_records(tmp_path / "dsd", split="test") == expected
    with pytest.raises(ValueError, match="no split 'train'"):
        load_records(tmp_path / "dsd", split="train")


def test_a_split_a_saved_dataset_does_not_hold_is_refused(tmp_path):
    """A save_to_disk folder of one Dataset holds one split, as a single file does: a split it is not is refused
    (read whole, it would stand for the split asked for), its own is read; one saved with no split holds its folder's
    name (as a file named by a number holds its folder's), and refuses any other."""
    import datasets

    rows = [GOOD, GOOD | {"id": "a2"}]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "plain"))
    datasets.Dataset.from_list(rows, split="test").save_to_disk(str(tmp_path / "test"))
    assert len(load_records(tmp_path / "plain")) == 2 and len(load_records(tmp_path / "test", split="test")) == 2
    with pytest.raises(ValueError, match=r"plain: a single dataset, which holds no split 'nonexistent' \(saved with no "
                                         r"split, it holds its folder's name, 'plain'\) \(a split is"):
        load_records(tmp_path / "plain", split="nonexistent")
    with pytest.raises(ValueError, match=r"test: a single dataset, which holds no split 'train' \(it holds split "
                                         r"'test'\)"):
        load_records(tmp_path / "test", split="train")


def test_a_datasetdict_split_folder_is_read_as_its_split(tmp_path):
    """DatasetDict.save_to_disk writes each split to a folder of its name (dataset/train, dataset/validation), and
    a Dataset built by from_list, as the synthetic stages build theirs, records no split: each folder is read for the
    split it is named after (2 train rows, 1 validation row), by every reader, and refuses another."""
    import datasets

    from judge.record_sources import source_rows

    datasets.DatasetDict({"train": datasets.Dataset.from_list([GOOD, GOOD | {"id": "a2"}]),
                          "validation": datasets.Dataset.from_list([GOOD | {"id": "v"}])}).save_to_disk(str(tmp_path / "dataset"))
    train, validation = tmp_path / "dataset" / "train", tmp_path / "dataset" / "validation"
    assert [r.id for r in load_records(train, split="train")] == ["a1", "a2"]
    assert [r.id for r in load_records(validation, split="validation")] == ["v"]
    assert [r.id for r in load_record_columns(train, split="train")[0].records()] == ["a1", "a2"]
    assert len(list(source_rows(validation, split="validation"))) == 1
    with pytest.raises(ValueError, match=r"train: a single dataset, which holds no split 'validation' \(saved with no "
                                         r"split, it holds its folder's name, 'train'\) \(a split is"):
        load_records(train, split="validation")


def test_missing_path_is_a_clear_error(tmp_path):
    """A path that does not exist is reported as such, not as a hub lookup."""
    # the message, not the type alone: a failed hub lookup is a FileNotFoundError too (naming datasets.load_dataset)
    missing = re.escape(str(tmp_path / "nope.jsonl"))
    with pytest.raises(FileNotFoundError, match=rf"^{missing}: no such file or folder$"):
        load_records(tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError, match=r"^data/nope\.jsonl: no such file or folder$"):
        load_records("data/nope.jsonl")  # relative, looks like "owner/name" but is a file path


def test_a_score_written_as_text_reads_only_as_ascii_digits():
    """A score given as text reads as a number when it is one in ASCII digits (sign, point or comma allowed: ' 1,5 '
    is 1.5); Python's float() would also read '1_0' as 10 and '١' (an Arabic-Indic one) as 1, which are refused,
    naming the field and item, never loaded as scores."""
    row = {"instruction": "i", "answer": "a", "criteria_name": "c", "rubrics": "0: нет\n\n1: да\n\n2: полностью"}
    (record,) = records_from_rows([{**row, "expert_scores": ["2", " 1,5 ", "+1"]}], source="x.jsonl")
    assert record.expert_scores == (2.0, 1.5, 1.0)
    for bad in ("1_0", "١", "1e3"):
        with pytest.raises(RecordError, match=r"x\.jsonl: row index 0: field 'expert_scores': item 1"):
            records_from_rows([{**row, "expert_scores": ["2", bad]}], source="x.jsonl")


def test_an_unreadable_file_is_named_with_where_it_breaks(tmp_path):
    """A truncated .json and a .jsonl with a byte that is not UTF-8 are refused naming the file (and the line of
    the JSONL), through both loaders, instead of a bare JSONDecodeError or UnicodeDecodeError."""
    import judge

    broken = tmp_path / "rows.json"
    broken.write_text('[{"instruction": ', encoding="utf-8")
    good = json.dumps({"instruction": "i", "answer": "a", "criteria_name": "c", "rubrics": "0: нет\n\n1: да",
                       "expert_scores": [1]}, ensure_ascii=False).encode()
    binary = tmp_path / "rows.jsonl"
    binary.write_bytes(good + b"\n" + b'{"instruction": "\xff"}\n')
    for load in (load_records, judge.load_record_columns):
        with pytest.raises(RecordError, match=rf"^{broken}: invalid JSON \(.* at line 1, column"):
            load(broken)
        with pytest.raises(RecordError, match=rf"^{binary}: line 2: not UTF-8 text \(byte 0xff at column 18\)"):
            load(binary)


def test_a_row_cut_short_is_refused_where_it_ends_not_at_column_1(tmp_path):
    """A JSONL row cut after `{"instruction": "x", ` (21 characters) was refused "at column 1": json read the line
    with its line break and counted the error on a line after it. It is refused at column 22, the end of the row."""
    import judge

    for ending in ("\n", "\r\n"):
        cut = tmp_path / "cut.jsonl"
        cut.write_bytes(b'{"instruction": "x", ' + ending.encode())
        for load in (load_records, judge.load_record_columns):
            with pytest.raises(RecordError) as refused:
                load(cut)
            assert str(refused.value) == (f"{cut}: line 1: invalid JSON (Expecting property name enclosed in double "
                                          "quotes at column 22)")


def test_a_record_built_in_code_with_lists_keeps_tuples_and_survives_a_round_trip(tmp_path):
    """A record built in code with its experts as lists (what a caller has at hand) kept the lists: it was unhashable
    and unequal to itself written and loaded back, whose fields are tuples. The fields are the tuples they are typed
    as, and the reload is the same record (an aggregate given, so that the load derives none)."""
    from judge import Annotation

    record = JudgeRecord(id="c1", instruction="и", answer="о", criteria_name="к", rubrics="0: нет\n\n1: да",
                         criteria_score=0.5, expert_scores=[0, 1], expert_feedback=["плохо", "хорошо"],
                         expert_ids=["e1", "e2"])
    assert (type(record.expert_scores), type(record.expert_feedback), type(record.expert_ids)) == (tuple,) * 3
    hash(record)
    built = JudgeRecord(id="c2", instruction="и", answer="о", criteria_name="к", rubrics="0: нет\n\n1: да",
                        criteria_score=1.0, annotations=[Annotation(1.0, "да"), Annotation(None, "")])
    assert type(built.annotations) is tuple and built.expert_scores == (1.0,) and built.n_abstained == 1
    write_jsonl([record, built], tmp_path / "r.jsonl")
    assert load_records(tmp_path / "r.jsonl") == [record, built]
    assert {record, built} == set(load_records(tmp_path / "r.jsonl"))

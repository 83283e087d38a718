"""The released POLLUX schema (the ``ai-forever/POLLUX`` dataset), read natively: shards, annotations with -1 abstentions, content ids,
duplicates, the other source forms, and errors that name the row and field."""

from __future__ import annotations

import datetime
import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from judge import Annotation, JudgeRecord, RecordError, load_records, load_records_report, write_jsonl
from tests.support.release_artifacts import NOT_APPLICABLE, RELEASED_SCHEMA, released_row, released_rows, write_released_dataset


@pytest.fixture
def released(tmp_path):
    return write_released_dataset(tmp_path / "POLLUX")


def test_builder_writes_the_hub_layout_and_the_released_arrow_types(released):
    """Three shards under data/ with the hub's names, each with the released columns and Arrow types."""
    shards = sorted(p.name for p in (released / "data").iterdir())
    assert shards == ["test-00000-of-00003.parquet", "test-00001-of-00003.parquet", "test-00002-of-00003.parquet"]
    for name in shards:
        assert pq.read_schema(released / "data" / name).equals(RELEASED_SCHEMA)
    assert "id" not in RELEASED_SCHEMA.names
    assert str(RELEASED_SCHEMA.field("annotations").type) == "list<item: struct<comment: string, score: double>>"


def test_shard_folder_loads_with_experts_abstentions_and_a_report(released):
    """All shards in name order; -1 is an abstention kept in annotations and out of the scores; the report counts."""
    records, report = load_records_report(released)
    assert len(records) == 8
    assert (report.n_rows, report.n_records, report.n_duplicates) == (9, 8, 1)
    assert report.duplicate_rows == [f"{released}/data/test-00002-of-00003.parquet: row index 2 = "
                                     f"{released}/data/test-00000-of-00003.parquet: row index 0"]  # fmt: skip
    # Abstentions: 1 (row 0) + 1 (the five-expert row) + 2 (the all-abstained row) = 4; the duplicate is not counted.
    assert (report.n_abstentions, report.n_all_abstained, report.n_unlabelled) == (4, 1, 1)
    assert report.n_derived_ids == 9 and report.n_benchmark_rows == 8

    first = records[0]
    assert first.annotations == (Annotation(0.0, "Модель не предлагает продолжить работу."), Annotation(None, NOT_APPLICABLE),
                                 Annotation(0.0, "Нет уточняющих вопросов и предложений."))  # fmt: skip
    assert first.expert_scores == (0.0, 0.0) and first.n_abstained == 1
    assert first.expert_feedback == ("Модель не предлагает продолжить работу.", "Нет уточняющих вопросов и предложений.")
    assert first.criteria_score == 0.0 and first.is_provocative is False
    assert first.task_type == "Творческий брейншторминг" and first.task_subtype == "Литературный брейншторминг"
    assert first.criteria_description == load_records(released)[0].criteria_description != ""

    poem = records[3]
    assert poem.expert_scores == (2.0, 1.0, 2.0, 1.0) and poem.n_abstained == 1 and len(poem.annotations) == 5
    assert poem.rubrics_example == "2: «ветвей — веселей»"
    # Fields arrive exactly as released: no stripping of spaces, newlines or a code answer's final "\n".
    assert poem.instruction == "  Напиши четверостишие про осень.  " and poem.answer.startswith("\n\n") and poem.answer.endswith("\n  ")
    assert records[1].answer.endswith("```\n") and records[1].reference_answer.endswith("return sum(xs)\n")

    silent = records[4]
    assert silent.expert_scores == () and silent.n_abstained == 2 and silent.is_provocative is True
    assert silent.criteria_score is None  # the release's -1 aggregate of an all-abstained item is no score


def test_released_task_type_names_resolve_to_splits(released):
    """Russian task-type names resolve through the taxonomy: no record is left without a split."""
    splits = [judge.split_of(r) for r in load_records(released)]
    assert splits == ["standard", "standard", "zero_shot", "zero_shot", "zero_shot", "zero_shot", "standard", "standard"]


def test_content_id_recipe_is_pinned_by_value():
    """A row with no id gets sha256 over the canonical JSON list of ID_FIELDS, first 16 hex characters."""
    row = {"instruction": "Сколько будет 2+2?", "reference_answer": "", "answer": "4\n", "model_id": "gpt4",
           "task_type": "Отредактировать текст", "task_subtype": "", "task_subsubtype": "",
           "criteria_name": "Проактивность", "rubrics": "0: Нет.\n\n1: Да."}  # fmt: skip
    by_hand = json.dumps(["Сколько будет 2+2?", "", "4\n", "Проактивность", "0: Нет.\n\n1: Да.", "gpt4",
                          "Отредактировать текст", "", ""], ensure_ascii=False, separators=(",", ":"))  # fmt: skip
    assert hashlib.sha256(by_hand.encode("utf-8")).hexdigest()[:16] == "e46552f7d200ff95"
    assert judge.content_id(row) == "e46552f7d200ff95"
    assert judge.records_from_rows([row])[0].id == "e46552f7d200ff95"  # no id column: derived without asking
    assert judge.content_id(row | {"answer": "4"}) != "e46552f7d200ff95"  # a trailing newline is content


def test_every_source_form_gives_the_same_records(released, tmp_path):
    """One Parquet file, shards without data/, a save_to_disk folder and JSONL all load to the same records."""
    import datasets

    expected = load_records(released)
    table = pa.Table.from_pylist(released_rows(), schema=RELEASED_SCHEMA)
    pq.write_table(table, tmp_path / "one.parquet")
    assert load_records(tmp_path / "one.parquet") == expected
    flat = tmp_path / "flat"
    flat.mkdir()
    for shard in (released / "data").iterdir():
        (flat / shard.name).write_bytes(shard.read_bytes())
    assert load_records(flat) == expected
    datasets.Dataset(table).save_to_disk(str(tmp_path / "saved"))
    assert load_records(tmp_path / "saved") == expected
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in released_rows()), encoding="utf-8")
    assert load_records(jsonl) == expected


def test_jsonl_round_trip_keeps_abstentions_and_released_fields(released, tmp_path):
    """write_jsonl then load_records gives equal records: annotations, abstentions and released columns kept."""
    records = load_records(released)
    back = load_records(write_jsonl(records, tmp_path / "out.jsonl"))
    assert back == records
    assert [r.annotations for r in back] == [r.annotations for r in records]
    assert [(r.is_provocative, r.rubrics_example, r.criteria_description) for r in back] == \
        [(r.is_provocative, r.rubrics_example, r.criteria_description) for r in records]  # fmt: skip
    written = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert written["expert_scores"] == [0.0, None, 0.0]  # the project's schema: null for the abstention


def test_a_shard_folder_missing_a_shard_is_refused_naming_it(released):
    """The hub's names say how many shards a split has (test-0000k-of-00003): a folder holding two of three (an
    interrupted download) is refused, naming the missing one, by both loaders, never loaded as a smaller benchmark."""
    (released / "data" / "test-00001-of-00003.parquet").unlink()
    for load in (judge.load_records, judge.load_record_columns):
        with pytest.raises(ValueError, match=r"split 'test' has 2 of its 3 shards; missing: 00001"):
            load(released)


def test_project_schema_null_is_an_abstention_and_minus_one_a_score():
    """In the project's JSONL schema null abstains; -1 is a real level; the derived aggregate leaves abstentions out."""
    base = {"id": "p1", "instruction": "И", "answer": "О", "criteria_name": "К", "rubrics": "-1: плохо\n\n0: так\n\n1: да"}
    record = JudgeRecord.from_row(base | {"expert_scores": [-1, None, 1], "expert_feedback": ["а", "б", "в"]})
    assert record.expert_scores == (-1.0, 1.0) and record.expert_feedback == ("а", "в")
    assert record.annotations == (Annotation(-1.0, "а"), Annotation(None, "б"), Annotation(1.0, "в"))
    assert record.n_abstained == 1 and record.criteria_score == 0.0  # (-1 + 1) / 2
    assert JudgeRecord.from_row(record.to_dict()) == record
    released = JudgeRecord.from_row(base | {"annotations": [{"comment": "а", "score": -1}, {"comment": "в", "score": 1}]})
    assert released.expert_scores == (1.0,) and released.criteria_score == 1.0 and released.n_abstained == 1


def test_records_built_in_code_get_annotations_and_replace_stays_consistent():
    """A record built from expert_scores has matching annotations; replacing scores without annotations=() is loud."""
    import dataclasses

    record = JudgeRecord(id="r", instruction="И", answer="О", criteria_name="К", rubrics="0: a\n\n1: b",
                         expert_scores=(1.0, 0.0), expert_feedback=("да", "нет"))  # fmt: skip
    assert record.annotations == (Annotation(1.0, "да"), Annotation(0.0, "нет")) and record.n_abstained == 0
    assert dataclasses.replace(record, expert_scores=(1.0,), expert_feedback=("да",), annotations=()).annotations == (Annotation(1.0, "да"),)
    with pytest.raises(ValueError, match="disagree with annotations"):
        dataclasses.replace(record, expert_scores=(1.0,), expert_feedback=("да",))


BAD_ANNOTATIONS = [
    # (annotations value, fragment of the message)
    ("0, 1", "must be a list"),
    ([{"comment": "а", "score": 1}, {"comment": "б", "score": 0}, {"comment": "в"}], "item 2 has no score"),
    ([{"comment": "а", "score": "много"}], "item 0: score 'много' is not a finite number"),
    ([{"comment": "а", "score": float("nan")}], "item 0: score nan is not a finite number"),
    ([{"comment": "а", "score": 10**400}], "item 0: score an integer of about 401 digits is not a finite number"),
    ([{"comment": "а\ud800", "score": 1}], "is not valid Unicode text: a lone surrogate (U+D800) at character 1"),
    ([{"comment": 5, "score": 1}], "item 0: comment must be text"),
    (["1"], "item 0 must be an object"),
    ([{"comment": "а", "score": 1, "expert_id": "e7"}], "item 0: unknown key(s) ['expert_id']; an annotation has "
                                                         "comment and score (name the experts with the row's expert_ids"),
]


@pytest.mark.parametrize("annotations,fragment", BAD_ANNOTATIONS, ids=[b[1] for b in BAD_ANNOTATIONS])
def test_bad_annotations_name_source_row_and_field(annotations, fragment):
    """A malformed annotations value raises a RecordError naming the source, row, field and item."""
    rows = released_rows()[:2]
    rows[1] = rows[1] | {"annotations": annotations}
    with pytest.raises(RecordError) as info:
        judge.records_from_rows(rows, source="POLLUX/data/test-00000-of-00003.parquet")
    err = info.value
    assert (err.source, err.row, err.field) == ("POLLUX/data/test-00000-of-00003.parquet", 1, "annotations")
    assert fragment in str(err)


def test_an_annotation_key_the_release_does_not_have_is_refused_from_a_file_too(tmp_path):
    """Read from a file (the column-wise reader), an annotation with a key beyond comment and score is refused with
    the row path's message, not dropped: the annotator's id it carries would otherwise be lost without a word."""
    import json

    rows = released_rows()[:3]
    rows[2] = rows[2] | {"annotations": [{**a, "annotator": f"e{k}"} for k, a in enumerate(rows[2]["annotations"])]}
    path = tmp_path / "released.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(RecordError, match=r"item 0: unknown key\(s\) \['annotator'\]") as info:
        judge.load_records(path)
    assert (info.value.row, info.value.field) == (2, "annotations")


def test_bad_scalar_released_columns_are_named():
    """is_provocative must be a boolean; both annotations and expert_scores in one row is ambiguous."""
    row = released_rows()[0]
    with pytest.raises(RecordError, match="'is_provocative': must be true or false"):
        judge.records_from_rows([row | {"is_provocative": "да"}])
    with pytest.raises(RecordError, match="'expert_scores': a row gives both annotations and expert_scores"):
        judge.records_from_rows([row | {"expert_scores": [0, 0]}])


def test_same_item_with_different_annotations_is_an_error_naming_both_rows():
    """Two rows with the same derived id but different content are not silently merged."""
    first = released_rows()[0]
    second = first | {"annotations": [{"comment": "Иначе.", "score": 1.0}]}
    with pytest.raises(RecordError, match="x.parquet: row index 1: field 'id': .* repeats the id of row index 0 "
                                          "with different content") as info:
        judge.records_from_rows([first, second], source="x.parquet")
    assert (info.value.row, info.value.field) == (1, "id")


def test_all_abstained_row_is_kept_and_counted_not_fatal(tmp_path):
    """A folder whose only row has every expert abstaining loads: one unlabelled record, counted."""
    row = released_row(("Editing",), "repeats", [(-1, NOT_APPLICABLE)], instruction="Отредактируй.", answer="Готово.")
    records, report = load_records_report(write_released_dataset(tmp_path / "one", rows=[row]))
    assert len(records) == 1 and records[0].expert_scores == () and records[0].criteria_score is None
    assert (report.n_all_abstained, report.n_unlabelled, report.n_abstentions) == (1, 1, 1)


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_a_released_minus_one_aggregate_with_no_expert_listed_is_no_aggregate_in_both_loaders(tmp_path, suffix):
    """``annotations: []`` beside the release's -1 ``criteria_score`` (on a 0..2 rubric, no -1 level): the abstention
    marker with no expert, as for an item whose experts all abstained. The row path refused the file and the
    column-wise one kept -1 as the aggregate; both now load an unlabelled record, counted. Two rows: a one-row file
    types its empty annotations as a list of nulls, which the column-wise reader leaves to the row path."""
    scored = released_row(("Editing",), "repeats", [(1, "Есть повторы.")], instruction="Отредактируй.", answer="Готово.")
    empty = scored | {"answer": "Другое.", "annotations": [], "criteria_score": -1.0}
    path = tmp_path / f"two.{suffix}"
    if suffix == "parquet":
        pq.write_table(pa.Table.from_pylist([scored, empty], schema=RELEASED_SCHEMA), path)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (scored, empty)), encoding="utf-8")
    records, report = load_records_report(path)
    columns, column_report = judge.load_record_columns(path)
    assert columns.records() == records and column_report == report
    assert [r.criteria_score for r in records] == [1.0, None] and records[1].annotations == ()
    assert (report.n_unlabelled, report.n_all_abstained, report.n_off_scale) == (1, 0, 0)


def test_shard_folder_split_selection(tmp_path):
    """A folder with train and test shards takes "test" by default and names the splits it has otherwise."""
    folder = write_released_dataset(tmp_path / "two", rows=released_rows()[:3], n_shards=1)
    (folder / "data" / "test-00000-of-00001.parquet").rename(folder / "data" / "train-00000-of-00001.parquet")
    write_released_dataset(folder, rows=released_rows()[3:5], n_shards=1)
    assert len(load_records(folder)) == 2 and len(load_records(folder, split="train")) == 3
    with pytest.raises(ValueError, match=r"no shards of split 'dev'; available: \['test', 'train'\]"):
        load_records(folder, split="dev")


def test_fingerprinted_shard_names_keep_their_splits(tmp_path):
    """Shards named as earlier datasets releases pushed them, a fingerprint after the numbers
    (train-00000-of-00001-5f3c9a1b.parquet), are split as the plain names are: "test" by default, "train" on asking,
    by every reader (source_rows too, which judge-eval rank reads), and a split missing a shard is refused, never
    all of them read as one split."""
    from judge.record_sources import source_rows

    folder = write_released_dataset(tmp_path / "hashed", rows=released_rows()[:3], n_shards=1)  # 3 train rows
    (folder / "data" / "test-00000-of-00001.parquet").rename(folder / "data" / "train-00000-of-00001-5f3c9a1b.parquet")
    write_released_dataset(folder, rows=released_rows()[3:5], n_shards=1)  # 2 test rows
    (folder / "data" / "test-00000-of-00001.parquet").rename(folder / "data" / "test-00000-of-00001-0a1b2c3d.parquet")
    for load in (judge.load_records, lambda *a, **k: judge.load_record_columns(*a, **k)[0].records()):
        assert len(load(folder)) == 2 and len(load(folder, split="train")) == 3
    assert len(list(source_rows(folder))) == 2 and len(list(source_rows(folder, split="train"))) == 3
    with pytest.raises(ValueError, match=r"no shards of split 'dev'; available: \['test', 'train'\]"):
        load_records(folder, split="dev")
    (folder / "data" / "train-00000-of-00001-5f3c9a1b.parquet").rename(
        folder / "data" / "train-00001-of-00002-5f3c9a1b.parquet")  # the first of two is not there
    with pytest.raises(ValueError, match=r"split 'train' has 1 of its 2 shards; missing: 00000"):
        load_records(folder, split="train")


def test_a_shard_given_by_two_files_is_refused_naming_both(tmp_path):
    """hf download into a --local-dir that holds an older push deletes nothing: the old fingerprinted shard
    (3 rows) beside the new plain one of the same number (2 rows) would both be read, 5 rows for a 1-shard split. Both
    loaders refuse it naming both files, and a file numbered past its split's count (a 4th of 3) likewise."""
    from judge.record_sources import source_rows

    folder = write_released_dataset(tmp_path / "POLLUX", rows=released_rows()[:3], n_shards=1)
    (folder / "data" / "test-00000-of-00001.parquet").rename(folder / "data" / "test-00000-of-00001-5f3c9a1b.parquet")
    write_released_dataset(folder, rows=released_rows()[3:5], n_shards=1)
    twice = (r"split 'test' has 2 files for its 1 shard: shard 00000 in data/test-00000-of-00001-5f3c9a1b.parquet, "
             r"data/test-00000-of-00001.parquet \(an older download beside a newer one\? keep one file per shard\)$")
    for load in (judge.load_records, judge.load_record_columns, lambda f: list(source_rows(f))):
        with pytest.raises(ValueError, match=twice):
            load(folder)
    (folder / "data" / "test-00000-of-00001-5f3c9a1b.parquet").unlink()
    assert len(load_records(folder)) == 2  # the newer push alone

    three = write_released_dataset(tmp_path / "three")
    (three / "data" / "test-00000-of-00003.parquet").rename(three / "data" / "test-00003-of-00003.parquet")
    with pytest.raises(ValueError, match=r"split 'test' has 3 shards, numbered 0 to 2, but also "
                                         r"data/test-00003-of-00003.parquet"):
        load_records(three)


def test_unreachable_dataset_name_is_a_clear_error(monkeypatch):
    """A dataset name datasets cannot load says which name, that the hub may be unreachable, and how to fix it."""
    import datasets

    asked = []

    def offline(name, split=None):  # the network boundary: what load_dataset raises without hub access
        asked.append((name, split))
        raise ConnectionError(f"Couldn't reach '{name}' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(FileNotFoundError) as info:
        load_records("ai-forever/POLLUX")
    assert asked == [("ai-forever/POLLUX", None)]  # the name as given, no split asked: load_dataset's to choose
    message = str(info.value)
    assert "ai-forever/POLLUX" in message and "ConnectionError" in message
    assert "HF_HUB_OFFLINE=1" in message and "hf download ai-forever/POLLUX --repo-type dataset" in message


def test_a_folder_with_no_data_is_named(tmp_path):
    """An empty folder is neither a shard folder nor a save_to_disk folder, and the error says so."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="neither Parquet shards"):
        load_records(tmp_path / "empty")


def test_a_nan_aggregate_is_no_aggregate_not_a_fatal_row(tmp_path):
    """criteria_score NaN (pandas' and Arrow's missing value: a mean over no expert written without the conversion
    to null) is read as null on both paths: the aggregate is derived from the experts, as for a null; the metrics
    never read it, so it must not stop the load. An infinity is still a bad row."""
    rows = released_rows()[:3]
    rows[1] = rows[1] | {"criteria_score": float("nan")}
    given = [a["score"] for a in rows[1]["annotations"] if a["score"] != -1]
    derived = sum(given) / len(given)
    (from_rows,) = [r for r in judge.records_from_rows(rows) if r.id == judge.records_from_rows([rows[1]])[0].id]
    assert from_rows.criteria_score == derived
    path = tmp_path / "released.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=RELEASED_SCHEMA), path)
    from_file = load_records(path)
    assert [r.criteria_score for r in from_file] == [r.criteria_score for r in judge.records_from_rows(rows)]
    assert from_file[1].criteria_score == derived
    pq.write_table(pa.Table.from_pylist([rows[0], rows[1] | {"criteria_score": float("inf")}], schema=RELEASED_SCHEMA),
                   path)
    with pytest.raises(RecordError, match="criteria_score': inf is not a finite number"):
        load_records(path)


@pytest.mark.parametrize("column, message", [
    (pa.array([datetime.date(2024, 1, 1), None, None], pa.date32()),
     "a value JSON cannot hold (Object of type date is not JSON serializable)"),
    (pa.array([b"ok", None, None], pa.binary()), "a value JSON cannot hold (Object of type bytes is not JSON serializable)"),
    (pa.array([datetime.timedelta(seconds=1), None, None], pa.duration("s")),
     "a value JSON cannot hold (Object of type timedelta is not JSON serializable)"),
])
def test_convert_names_the_row_and_column_of_an_extra_value_json_cannot_hold(tmp_path, column, message):
    """An extra Parquet column of a type JSON has no value for (a date, bytes, a duration) stopped write_jsonl
    (``judge-eval convert``) in a traceback; now a RecordError naming the source, row and column, and the earlier
    file kept whole."""
    rows = released_rows()[:3]
    table = pa.Table.from_pylist(rows[1:] + rows[:1], schema=RELEASED_SCHEMA)
    path, out = tmp_path / "released.parquet", tmp_path / "out.jsonl"
    pq.write_table(table.append_column("seen", column.take([1, 2, 0])), path)
    out.write_text("earlier\n", encoding="utf-8")
    with pytest.raises(RecordError) as info:
        write_jsonl(load_records(path), out)
    assert str(info.value) == f"{path}: row index 2: field 'seen': {message}"
    assert out.read_text(encoding="utf-8") == "earlier\n"


@pytest.mark.parametrize("value, message", [
    ('"a\\ud800b"', r"not UTF-8 text (surrogates not allowed: '\ud800')"),
    ('{"k": [NaN]}', "NaN or an infinity, which JSON has no number for"),
    ("-Infinity", "NaN or an infinity, which JSON has no number for"),
])
def test_convert_names_the_row_and_column_of_an_extra_value_utf8_or_json_cannot_hold(tmp_path, value, message):
    """A lone surrogate in an extra field stopped write_jsonl in a UnicodeEncodeError naming no row; a NaN or an
    infinity was written as a token that is not JSON (json.loads reads it, other readers refuse the file)."""
    rows = [json.dumps(r, ensure_ascii=False) for r in released_rows()[:3]]
    rows = [r[:-1] + f', "seen": {value if k == 1 else 0}}}' for k, r in enumerate(rows)]
    path, out = tmp_path / "released.jsonl", tmp_path / "out.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(RecordError) as info:
        write_jsonl(load_records(path), out)
    assert str(info.value) == f"{path}: line 2: field 'seen': {message}"
    assert not out.exists()

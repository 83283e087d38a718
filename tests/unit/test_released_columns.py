"""A released POLLUX table with a column renamed or missing: the loader built records with quiet defaults (an empty
reference answer in every prompt, no expert label, an aggregate derived from the experts, another content id), and a
shard whose columns differed from the others' was read as other items. Now both are refused, naming the file and
the column, before any record is built."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from judge.records import RELEASED_COLUMNS, RecordError, released_columns_problem

ROW = {"instruction": "Придумай сюжет.", "reference_answer": "", "answer": "Маяк гаснет.", "model_id": "gpt4",
       "task_type": "Творческий брейншторминг", "task_subtype": "Литературный брейншторминг", "task_subsubtype": "",
       "difficulty": "Easy", "domain": "Художественный", "is_provocative": False, "criteria_name": "Проактивность",
       "criteria_description": "…", "rubrics": "0: нет\n\n1: частично\n\n2: да", "rubrics_example": "",
       "annotations": [{"comment": "а", "score": 1.0}, {"comment": "б", "score": 2.0}], "criteria_score": 1.5}


def _shards(folder, tables):
    (folder / "data").mkdir(parents=True)
    for k, rows in enumerate(tables):
        pq.write_table(pa.Table.from_pylist(rows), folder / "data" / f"test-0000{k}-of-0000{len(tables)}.parquet")
    return folder


@pytest.mark.parametrize("old, new", [("reference_answer", "reference"), ("model_id", "model"),
                                      ("criteria_score", "score"), ("annotations", "annotation")])
def test_a_released_column_renamed_in_every_shard_is_refused_naming_both_names(tmp_path, old, new):
    renamed = [{(new if k == old else k): v for k, v in ROW.items()}]
    folder = _shards(tmp_path / "POLLUX", [renamed, renamed])
    for load in (judge.load_records_report, judge.load_record_columns):
        with pytest.raises(RecordError) as err:
            load(folder)
        assert err.value.field == old
        assert str(err.value).startswith(f"{folder / 'data' / 'test-00000-of-00002.parquet'}: field '{old}': a "
                                         "released POLLUX table (it has ")
        assert f"without the column '{old}'; it has '{new}', which the release does not: renamed?" in str(err.value)


def test_shards_with_other_columns_are_refused_naming_the_shard(tmp_path):
    """The same column renamed in the second shard only: its rows were read without their experts' labels."""
    renamed = [{("annotation" if k == "annotations" else k): v for k, v in ROW.items()} | {"annotations": None}]
    folder = _shards(tmp_path / "POLLUX", [[ROW], renamed])
    with pytest.raises(RecordError) as err:
        judge.load_records_report(folder)
    first, second = sorted((folder / "data").iterdir())
    assert str(err.value) == (f"{second}: field 'annotation': the shards of one split have other columns: this one "
                              f"has 'annotation', beside {first}; give every shard the same columns")


def test_the_release_and_the_project_schema_load_as_before(tmp_path):
    """Every released column: loads. A project table (``expert_scores``) with the release's marker columns, as
    ``judge-eval convert`` writes it, is not held to the release's columns."""
    records, _ = judge.load_records_report(_shards(tmp_path / "POLLUX", [[ROW], [ROW | {"answer": "Другой."}]]))
    assert [r.expert_scores for r in records] == [(1.0, 2.0), (1.0, 2.0)]
    assert set(RELEASED_COLUMNS) <= set(ROW)
    project = {k: v for k, v in ROW.items() if k not in ("annotations", "reference_answer")}
    assert released_columns_problem([*project, "expert_scores"]) is None
    assert released_columns_problem(["instruction", "answer"]) is None  # neither schema's markers


def test_a_file_named_as_no_shard_beside_a_splits_shards_is_named_as_left_out(tmp_path, caplog):
    """``test-00000-of-00001 (1).parquet`` (a second copy of a shard) was skipped without a word."""
    folder = _shards(tmp_path / "POLLUX", [[ROW]])
    pq.write_table(pa.Table.from_pylist([ROW]), folder / "data" / "test-00000-of-00001 (1).parquet")
    with caplog.at_level("WARNING", logger="judge.record_sources"):
        records, _ = judge.load_records_report(folder)
    assert len(records) == 1
    assert [r.getMessage() for r in caplog.records if r.name == "judge.record_sources"] == [
        f"{folder}: read its one shard of split 'test'; left out test-00000-of-00001 (1).parquet, named as no split's "
        "shard (<split>-0000k-of-0000n.parquet)"]


def test_one_shard_of_several_given_alone_is_said(tmp_path, caplog):
    folder = _shards(tmp_path / "POLLUX", [[ROW], [ROW | {"answer": "Другой."}]])
    with caplog.at_level("WARNING", logger="judge.record_sources"):
        records, _ = judge.load_records_report(folder / "data" / "test-00001-of-00002.parquet")
    assert len(records) == 1
    assert [r.getMessage() for r in caplog.records if r.name == "judge.record_sources"] == [
        f"{folder / 'data' / 'test-00001-of-00002.parquet'}: shard 2 of 2 of split 'test', read alone; give the "
        "folder to read them all"]


@pytest.mark.parametrize("whole", [False, True])
def test_a_saved_dataset_with_a_released_column_renamed_is_refused_as_a_parquet_table_is(tmp_path, whole):
    """A ``save_to_disk`` folder (one Dataset, or a DatasetDict) has one set of columns, as a Parquet table has:
    the same check, where its rows were read with an empty reference answer in every prompt."""
    import datasets

    renamed = datasets.Dataset.from_list([{("reference" if k == "reference_answer" else k): v for k, v in ROW.items()}])
    folder = tmp_path / "saved"
    (datasets.DatasetDict({"test": renamed}) if whole else renamed).save_to_disk(str(folder))
    for load in (judge.load_records_report, judge.load_record_columns):
        with pytest.raises(RecordError) as err:
            load(folder)
        assert err.value.field == "reference_answer" and err.value.row is None
        assert str(err.value).startswith(f"{folder}: field 'reference_answer': a released POLLUX table (it has ")
        assert "it has 'reference', which the release does not: renamed?" in str(err.value)
    datasets.Dataset.from_list([ROW]).save_to_disk(str(tmp_path / "whole"))
    records, _ = judge.load_records_report(tmp_path / "whole")
    assert [r.expert_scores for r in records] == [(1.0, 2.0)]

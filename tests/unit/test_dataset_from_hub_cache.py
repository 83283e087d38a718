"""``--data ai-forever/POLLUX`` after ``hf download ai-forever/POLLUX --repo-type dataset`` (no ``--local-dir``):
the shards sit in the Hugging Face cache's snapshot, which ``datasets.load_dataset`` did not find offline, and the
error advised the populated cache it already had. The name is now read as the snapshot's folder of shards, offline,
as a judge's hub id is; a name the cache lacks still goes to ``datasets.load_dataset`` and its error."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from judge.record_sources import source_rows
from tests.unit.test_mera_released import dataset_cache
from tests.unit.test_released_columns import ROW


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """HF_HUB_OFFLINE as a user sets it before starting the process. datasets and huggingface_hub read it once, when
    they are imported, and another test of this worker may have imported them already: setting the variable then
    leaves them online, and a name the cache lacks is then asked of the hub, retried until it fails for want of a
    network."""
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)


def test_a_dataset_name_in_the_hub_cache_is_read_as_its_snapshot_offline(tmp_path, monkeypatch):
    files = tmp_path / "download" / "data"
    files.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([ROW]), files / "test-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist([ROW | {"answer": "Другой ответ."}]), files / "test-00001-of-00002.parquet")
    snapshot = dataset_cache(tmp_path / "hub", "ai-forever/POLLUX", files.parent)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)  # no folder named ai-forever/ here
    records, report = judge.load_records_report("ai-forever/POLLUX")
    assert [r.answer for r in records] == ["Маяк гаснет.", "Другой ответ."] and report.n_records == 2
    columns, _ = judge.load_record_columns("ai-forever/POLLUX")
    assert list(columns.ids) == [r.id for r in records]
    assert [row["answer"] for _, _, row in source_rows("ai-forever/POLLUX")] == ["Маяк гаснет.", "Другой ответ."]
    assert str(snapshot).startswith(str(tmp_path / "hub"))


def test_a_dataset_name_the_cache_lacks_still_goes_to_datasets(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"ai-forever/POLLUX: not a local file or folder, and "
                                                r"datasets\.load_dataset\('ai-forever/POLLUX'\) failed"):
        judge.load_records_report("ai-forever/POLLUX")


def test_a_snapshot_without_the_split_asked_for_is_left_to_datasets(tmp_path, monkeypatch):
    """A cache holding the test shards only, asked for another split: the snapshot took priority and refused it,
    naming the cache's path, where datasets.load_dataset would have fetched the split online (review)."""
    files = tmp_path / "download" / "data"
    files.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([ROW]), files / "test-00000-of-00001.parquet")
    dataset_cache(tmp_path / "hub", "ai-forever/POLLUX", files.parent)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"^ai-forever/POLLUX: not a local file or folder, and "
                                                r"datasets\.load_dataset\('ai-forever/POLLUX'\) failed"):
        judge.load_records_report("ai-forever/POLLUX", split="train")
    assert len(judge.load_records_report("ai-forever/POLLUX", split="test")[0]) == 1

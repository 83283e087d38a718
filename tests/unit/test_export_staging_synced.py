"""A staged training export is on disk, file by file, before it is swapped in for the earlier export: a crash of the
machine just after the swap must not leave the export's name on weights still only in the page cache."""

from __future__ import annotations

import os

import pytest

from train.config import Seq2SeqConfig, config_to_dict


@pytest.mark.parametrize("earlier", [False, True], ids=["new", "replacing"])
def test_every_staged_file_is_fsynced_under_its_staging_name_before_the_swap(tmp_path, monkeypatch, earlier):
    """os.fsync recorded by the path its descriptor names: each staged file (a nested one included) is fsynced while
    it still lies in the staging folder, that is before the swap, and the folders holding them after their files."""
    from judge.plumbing import atomic_write
    from train.provenance import RunResult, put_export_in_place, stage_result, write_run_json

    out = tmp_path / "run"
    write_run_json(out, config=config_to_dict(Seq2SeqConfig(output_dir=str(out))), launch={"world_size": 1})
    if earlier:
        (out / "export").mkdir()
        (out / "export" / "model.safetensors").write_bytes(b"earlier")
    staging = atomic_write.staging_dir(out / "export")
    staging.mkdir()
    (staging / "model.safetensors").write_bytes(b"weights")
    (staging / "config.json").write_text("{}")
    (staging / "tokenizer").mkdir()
    (staging / "tokenizer" / "tokenizer.json").write_text("{}")
    stage_result(staging, out, RunResult(output_dir=str(out), export_dir=str(out / "export"), global_step=4,
                                         final_learning_rate=0.0))  # fmt: skip
    staged = sorted(str(p) for p in staging.rglob("*") if p.is_file())
    synced: list[str] = []
    real_fsync = os.fsync

    def recorded(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recorded)
    put_export_in_place(staging, out / "export", out)
    assert (out / "export" / "model.safetensors").read_bytes() == b"weights"
    assert set(staged) <= set(synced), sorted(set(staged) - set(synced))
    assert synced.index(str(staging / "tokenizer")) > synced.index(str(staging / "tokenizer" / "tokenizer.json"))

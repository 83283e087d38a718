"""The run folder's run.json is never left cut, and one that is (a copy killed midway) does not fail every later
launch into the folder.

``put_export_in_place`` replaces the run folder's run.json with the export's atomically: a copy in place, cut by a
kill, would leave a truncated run.json that every requeue then failed to read back (``write_provenance``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import stat

import pytest

from train.config import Seq2SeqConfig, config_to_dict


def test_the_export_s_run_json_replaces_the_run_folder_s_whole_or_not_at_all(tmp_path, monkeypatch):
    from judge.plumbing import atomic_write
    from train.provenance import put_export_in_place, stage_result, write_run_json, RunResult

    out = tmp_path / "run"
    write_run_json(out, config=config_to_dict(Seq2SeqConfig(output_dir=str(out))), launch={"world_size": 1})
    before = (out / "run.json").read_bytes()
    staging = out / ".export.staging"
    staging.mkdir()
    stage_result(staging, out, RunResult(output_dir=str(out), export_dir=str(out / "export"), global_step=4,
                                         final_learning_rate=0.0))  # fmt: skip

    real_fsync = os.fsync

    def killed(fd):  # the process dies after run.json's bytes are written aside, before they are known to be on disk
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):  # not the staged export's own files, synced first
            raise KeyboardInterrupt("killed")
        return real_fsync(fd)

    monkeypatch.setattr(atomic_write.os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        put_export_in_place(staging, out / "export", out)
    assert (out / "run.json").read_bytes() == before  # the earlier one, whole
    assert sorted(p.name for p in out.iterdir()) == ["export", "run.json"]  # no temporary file left
    monkeypatch.undo()
    (out / "export").rename(staging)
    put_export_in_place(staging, out / "export", out)
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["result"]["global_step"] == 4
    assert stat.S_IMODE(os.stat(out / "run.json").st_mode) == 0o600  # owner-only, as every run.json


def test_a_resume_into_a_folder_whose_run_json_is_cut_sets_it_aside_and_goes_on(tmp_path, monkeypatch, caplog):
    """Decided: handled, not refused. check_resumed_config already goes on (with a warning) when run.json cannot be
    read, as for a run.json without a config; what crashed was the write that followed, which read it again. The cut
    file is kept beside as run.json.unreadable."""
    from train.output_folder import check_output_dir
    from train.recipe_steps import PreparedRun
    from train.training_arguments import Launch

    monkeypatch.delenv("RANK", raising=False)
    config = Seq2SeqConfig(output_dir=str(tmp_path), resume=True)
    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    for name in ("trainer_state.json", "optimizer.pt", "scheduler.pt"):
        (checkpoint / name).write_text('{"global_step": 4}', encoding="utf-8")
    cut = b'{\n  "job": "judge-train run",\n  "config": {\n    "recipe": "seq2'
    (tmp_path / "run.json").write_bytes(cut)
    with caplog.at_level(logging.WARNING):
        assert check_output_dir(config) == checkpoint
        run = PreparedRun(config=config, launch=Launch(1, 1, 2, 2), resume_from=checkpoint, base_model="unused",
                          tokenizer=None, dtype=None, stopper=None)  # fmt: skip
        run.record_data({"n_rows": 1}, train_rows=[{"id": "a", "prompt": "p", "completion": "c"}])
    assert "its run.json cannot be read" in caplog.text and "moved to" in caplog.text
    assert (tmp_path / "run.json.unreadable").read_bytes() == cut
    record = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert record["config"]["output_dir"] == str(tmp_path) and record["data"]["n_train"] == 1
    # the next requeue reads it and checks the resume against it
    assert check_output_dir(dataclasses.replace(config)) == checkpoint

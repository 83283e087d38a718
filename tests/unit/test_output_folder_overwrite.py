"""train.output_folder.clear_earlier_run: --overwrite-output-dir deletes the earlier run whole, the checkpoints
slurm/train.sbatch set aside as cut off mid-save (incomplete-checkpoint-N-job<id>-<time>) with the rest."""

from __future__ import annotations

import pytest

from train.config import Seq2SeqConfig
from train.output_folder import clear_earlier_run


@pytest.fixture(autouse=True)
def _rank_zero(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)  # rank 0 deletes


def test_overwrite_deletes_the_checkpoints_set_aside_as_incomplete_too(tmp_path):
    folder = tmp_path / "run"
    kept = ["run.json", "slurm", "notes-checkpoint-4.txt"]  # not the earlier run's training state
    for name in ("checkpoint-4", "incomplete-checkpoint-6-job1234-20260101T000000Z", "export", "slurm"):
        (folder / name).mkdir(parents=True)
        (folder / name / "file").write_text("x")
    (folder / "run.json").write_text("{}")
    (folder / "notes-checkpoint-4.txt").write_text("x")
    clear_earlier_run(Seq2SeqConfig(output_dir=str(folder), overwrite_output_dir=True))
    assert sorted(p.name for p in folder.iterdir()) == sorted(kept)

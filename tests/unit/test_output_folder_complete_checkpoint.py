"""train.output_folder.latest_checkpoint: a checkpoint is resumed from only when it is whole. transformers'
Trainer._save_checkpoint has each rank write rng_state_<rank>.pth, then rank 0 trainer_state.json, with no barrier
between: a SIGKILL can leave the state beside another rank's half-written RNG file, whose torch.load fails on that
rank at the resume. Such a checkpoint is passed over for the newest whole one, with a warning naming the file."""

from __future__ import annotations

import logging

import pytest
import torch

from train.config import ConfigError, load_config
from train.output_folder import check_output_dir, latest_checkpoint


def _checkpoint(folder, step: int, ranks: int):
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(f'{{"global_step": {step}}}')
    for rank in range(ranks):  # as Trainer._save_rng_state writes them under a launcher
        torch.save({"python": None, "cpu": torch.random.get_rng_state()}, path / f"rng_state_{rank}.pth")
    return path


def test_a_checkpoint_with_a_cut_rng_file_is_passed_over(tmp_path, caplog):
    whole = _checkpoint(tmp_path, 4, ranks=2)
    cut = _checkpoint(tmp_path, 6, ranks=2)
    data = (cut / "rng_state_1.pth").read_bytes()
    (cut / "rng_state_1.pth").write_bytes(data[: len(data) // 2])  # killed mid-write
    with caplog.at_level(logging.WARNING, logger="train.output_folder"):
        assert latest_checkpoint(tmp_path) == whole
    assert caplog.messages == [f"{tmp_path}: checkpoint-6 (rng_state_1.pth cut off): a save that did not finish, "
                               "not resumed from"]


def test_a_cut_rng_file_whose_bytes_hold_the_zip_end_signature_is_passed_over(tmp_path, caplog):
    """An RNG state is random bytes: one may hold the zip end-of-directory signature (PK\\x05\\x06), and a file cut
    after it still looked whole to ``zipfile.is_zipfile``, which looks for the signature alone; the resume's
    ``torch.load`` then failed on that rank. Its directory is read now: the cut file is named, the checkpoint passed
    over."""
    whole = _checkpoint(tmp_path, 4, ranks=2)
    cut = _checkpoint(tmp_path, 6, ranks=2)
    state = bytes(range(256)) * 8 + b"PK\x05\x06" + bytes(range(18, 0, -1)) + bytes(range(256)) * 8
    torch.save({"python": None, "cpu": torch.tensor(list(state), dtype=torch.uint8)}, cut / "rng_state_1.pth")
    data = (cut / "rng_state_1.pth").read_bytes()
    (cut / "rng_state_1.pth").write_bytes(data[: data.index(state) + len(state)])  # killed after the state's bytes
    with caplog.at_level(logging.WARNING, logger="train.output_folder"):
        assert latest_checkpoint(tmp_path) == whole
    assert caplog.messages == [f"{tmp_path}: checkpoint-6 (rng_state_1.pth cut off): a save that did not finish, "
                               "not resumed from"]


def test_a_whole_checkpoint_and_one_without_rng_files_are_resumed_from(tmp_path, caplog):
    """No RNG file at all is a save transformers resumes (fresh RNG, logged): not refused here."""
    _checkpoint(tmp_path, 4, ranks=0)
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-4"
    newest = _checkpoint(tmp_path, 6, ranks=2)
    with caplog.at_level(logging.WARNING, logger="train.output_folder"):
        assert latest_checkpoint(tmp_path) == newest
    assert caplog.messages == []


def test_resume_with_only_cut_checkpoints_names_them_and_how_to_start_over(tmp_path):
    """slurm/train.sbatch passes --resume whenever a checkpoint holds trainer_state.json; when that one's RNG file is
    cut and no other is whole, the refusal said no checkpoint-N folder was there at all."""
    cut = _checkpoint(tmp_path / "run", 2, ranks=2)
    data = (cut / "rng_state_1.pth").read_bytes()
    (cut / "rng_state_1.pth").write_bytes(data[: len(data) // 2])
    (tmp_path / "run" / "checkpoint-3").mkdir()  # killed before rank 0 wrote its state
    config = load_config(None, {"output_dir": str(tmp_path / "run"), "resume": True}, recipe="regression")
    with pytest.raises(ConfigError) as refused:
        check_output_dir(config)
    assert str(refused.value) == (
        f"--resume: no complete checkpoint in {tmp_path / 'run'} to resume from: checkpoint-2 (rng_state_1.pth cut "
        "off), checkpoint-3 (no trainer_state.json) (a save that did not finish, which the trainer cannot load); start "
        "over with --overwrite-output-dir (under judge-train submit, `-- --overwrite-output-dir`), or train into a "
        "fresh --output-dir")

"""A requeued train.sbatch job continues its own checkpoints even when its config says ``overwrite_output_dir: true``.

A manual ``JUDGE_CONFIG=... sbatch slurm/train.sbatch`` leaves JUDGE_OVERWRITE_OUTPUT_DIR unset (0), so the first
start trains fresh through the config's own overwrite; the requeue found that run's checkpoint and passed --resume
alone, which judge-train refuses beside the config's overwrite ("pick one") on every rank of every requeue. The
script runs under bash with a fake srun and torchrun that record judge-train's arguments; no cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"


def _judge_train_args(tmp_path: Path, restart: str, overwrite: str | None, checkpoint: str = "checkpoint-2",
                      rng_file: bytes | None = None) -> list[str]:
    """Run train.sbatch on one node over a run folder holding ``checkpoint`` with its trainer_state.json (and
    ``rng_state_1.pth`` holding ``rng_file`` when given); return judge-train's arguments."""
    (tmp_path / "judge.yaml").write_text("recipe: seq2seq\noverwrite_output_dir: true\n")
    folder = tmp_path / "run" / checkpoint
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text("{}")
    if rng_file is not None:
        (folder / "rng_state_1.pth").write_bytes(rng_file)
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n',
        "torchrun": 'if [[ $1 == --help ]]; then exit 0; fi\nprintf "%s\\n" "$@" >"$FAKE_TORCHRUN_ARGS"\n',
        "judge-train": "exit 0\n", "scontrol": 'echo "${@: -1}"\n'})  # fmt: skip
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        # python3 is this test's interpreter, which imports train (the script asks train.output_folder)
        "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "FAKE_TORCHRUN_ARGS": str(tmp_path / "torchrun_args"),
        "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost", "SLURM_NODEID": "0", "SLURM_SUBMIT_DIR": str(tmp_path),
        "SLURM_RESTART_COUNT": restart, "JUDGE_CONFIG": "judge.yaml",
        "JUDGE_OUTPUT_DIR": "run", "JUDGE_CACHE_DIR": "cache",
        **({"JUDGE_OVERWRITE_OUTPUT_DIR": overwrite} if overwrite is not None else {}),
    }  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "train.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "torchrun_args").read_text().splitlines()
    return args[args.index("judge-train") + 1:]


@pytest.mark.parametrize("overwrite", [None, "0"], ids=["variable-unset", "variable-0"])
def test_a_requeue_turns_the_configs_overwrite_off_after_every_other_argument(tmp_path, overwrite):
    args = _judge_train_args(tmp_path, restart="1", overwrite=overwrite)
    assert args == ["--config", f"{tmp_path}/judge.yaml", "--output-dir", f"{tmp_path}/run", "--resume",
                    "--no-overwrite-output-dir"]


def test_a_first_start_without_the_variable_passes_resume_alone(tmp_path):
    """Restart 0, overwrite 0: a resubmission resumes as before (a config asking to overwrite then meets judge-train's
    own "pick one", said before anything is deleted)."""
    args = _judge_train_args(tmp_path, restart="0", overwrite="0")
    assert args == ["--config", f"{tmp_path}/judge.yaml", "--output-dir", f"{tmp_path}/run", "--resume"]


def test_a_checkpoint_with_a_cut_rng_file_is_set_aside_and_the_run_starts_fresh(tmp_path):
    """Its trainer_state.json is there but rank 1's RNG file stops after the zip signature (a save killed
    mid-write): judge-train cannot resume from it, so the script sets it aside as it does one without the state
    and, no whole checkpoint left, passes no --resume."""
    args = _judge_train_args(tmp_path, restart="1", overwrite="0", rng_file=b"PK")
    assert args == ["--config", f"{tmp_path}/judge.yaml", "--output-dir", f"{tmp_path}/run"]
    left = sorted(p.name for p in (tmp_path / "run").iterdir() if p.is_dir())
    assert len(left) == 1 and left[0].startswith("incomplete-checkpoint-2-job7-"), left
    assert (tmp_path / "run" / left[0] / "rng_state_1.pth").read_bytes() == b"PK"


def test_a_checkpoint_final_folder_is_no_checkpoint_to_resume(tmp_path):
    """judge-train resumes from checkpoint-<digits> only: a checkpoint-final with a trainer_state.json made the
    script pass --resume, which judge-train then refused ("no checkpoint-N folder"). It is left where it is."""
    args = _judge_train_args(tmp_path, restart="1", overwrite="0", checkpoint="checkpoint-final")
    assert args == ["--config", f"{tmp_path}/judge.yaml", "--output-dir", f"{tmp_path}/run"]
    assert (tmp_path / "run" / "checkpoint-final" / "trainer_state.json").is_file()


def test_a_whole_checkpoint_beside_a_cut_newer_one_is_resumed(tmp_path):
    """A whole checkpoint-1 and a checkpoint-2 whose RNG file is cut: checkpoint-2 is set aside, the job resumes
    (from checkpoint-1, as judge-train picks the newest whole one)."""
    whole = tmp_path / "run" / "checkpoint-1"
    whole.mkdir(parents=True)
    (whole / "trainer_state.json").write_text("{}")
    args = _judge_train_args(tmp_path, restart="1", overwrite="0", rng_file=b"PK")
    assert args[-2:] == ["--resume", "--no-overwrite-output-dir"]
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.name.startswith("checkpoint-")) == ["checkpoint-1"]


def test_a_requeue_before_the_first_start_was_marked_starts_over_as_asked(tmp_path):
    """JUDGE_OVERWRITE_OUTPUT_DIR=1 and a requeue (a node failure, or a SIGTERM during the setup) before the first
    start left its slurm/job7.first-start marker: that start never launched judge-train, so the checkpoint in the
    folder is the earlier run's, which the job was asked to delete. A missing marker read as older than any
    checkpoint, and the job resumed that run (--resume --no-overwrite-output-dir)."""
    args = _judge_train_args(tmp_path, restart="1", overwrite="1")
    assert args == ["--config", f"{tmp_path}/judge.yaml", "--output-dir", f"{tmp_path}/run", "--overwrite-output-dir"]
    assert (tmp_path / "run" / "slurm" / "job7.first-start").is_file()


def test_a_requeue_after_the_first_start_was_marked_resumes_its_own_checkpoint(tmp_path):
    """The marker there and the checkpoint saved after it: the job's own, resumed."""
    marker = tmp_path / "run" / "slurm" / "job7.first-start"
    marker.parent.mkdir(parents=True)
    marker.touch()
    os.utime(marker, (1_000_000_000, 1_000_000_000))  # long before the checkpoint written below
    args = _judge_train_args(tmp_path, restart="1", overwrite="1")
    assert args[-2:] == ["--resume", "--no-overwrite-output-dir"]

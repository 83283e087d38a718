"""A requeued train.sbatch job continues its own checkpoints even when its config says ``overwrite_output_dir: true``.

A manual ``JUDGE_CONFIG=... sbatch slurm/train.sbatch`` leaves JUDGE_OVERWRITE_OUTPUT_DIR unset (0), so the first
start trains fresh through the config's own overwrite; the requeue found that run's checkpoint and passed --resume
alone, which judge-train refuses beside the config's overwrite ("pick one") on every rank of every requeue. The
script runs under bash with a fake srun and torchrun that record judge-train's arguments; no cluster."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"


def _judge_train_args(tmp_path: Path, restart: str, overwrite: str | None) -> list[str]:
    """Run train.sbatch on one node over a run folder holding a complete checkpoint-2; return judge-train's
    arguments."""
    (tmp_path / "judge.yaml").write_text("recipe: seq2seq\noverwrite_output_dir: true\n")
    checkpoint = tmp_path / "run" / "checkpoint-2"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text("{}")
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n',
        "torchrun": 'if [[ $1 == --help ]]; then exit 0; fi\nprintf "%s\\n" "$@" >"$FAKE_TORCHRUN_ARGS"\n',
        "judge-train": "exit 0\n", "scontrol": 'echo "${@: -1}"\n'})  # fmt: skip
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_TORCHRUN_ARGS": str(tmp_path / "torchrun_args"),
        "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost", "SLURM_NODEID": "0", "SLURM_SUBMIT_DIR": str(tmp_path),
        "SLURM_RESTART_COUNT": restart, "JUDGE_MASTER_PORT": "29500", "JUDGE_CONFIG": "judge.yaml",
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

"""train.sbatch reads a relative path as the submitter's: against the folder sbatch ran in (SLURM_SUBMIT_DIR), not
the job's working folder, which `sbatch --chdir` moves, as the other slurm/ scripts do (tests/unit/test_slurm_paths.py).
The script is run by bash from another folder than the submit folder, against a fake srun; no cluster. Two setup
failures (a run folder where its lock cannot be made, no host from scontrol) end with the script's own message, exit 2.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"


@pytest.fixture
def folders(tmp_path) -> tuple[Path, Path]:
    """The submit folder (with the submitter's recipe and env script) and the job's working folder, which has none."""
    submit_dir, work_dir = tmp_path / "submit", tmp_path / "chdir"
    (submit_dir / "configs").mkdir(parents=True)
    work_dir.mkdir()
    (submit_dir / "configs" / "judge.yaml").write_text("recipe: seq2seq\n")
    (submit_dir / "env.sh").write_text('echo "sourced in $PWD" >"$FAKE_SOURCED"\n')
    return submit_dir, work_dir


def _run(tmp_path: Path, submit_dir: Path, work_dir: Path, *args: str, scontrol: str = 'echo "${@: -1}"\n',
         **extra: str) -> subprocess.CompletedProcess:
    """train.sbatch with ``args`` after it, run in ``work_dir`` with relative paths in its variables (``extra``
    overrides them); ``scontrol`` is the stand-in's bash body."""
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'while [[ $1 == --* ]]; do shift; done\nprintf "%s\\n" "$@" >"$FAKE_SRUN_ARGS"\n',
        "torchrun": "exit 0\n", "judge-train": "exit 0\n", "scontrol": scontrol})  # fmt: skip
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"),
        "FAKE_SOURCED": str(tmp_path / "sourced"), "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost",
        "SLURM_SUBMIT_DIR": str(submit_dir), "JUDGE_ENV_SCRIPT": "env.sh",
        "SLURMD_NODENAME": "localhost",  # the batch shell runs on the one host: it asks for the rendezvous port
        "JUDGE_CONFIG": "configs/judge.yaml", "JUDGE_OUTPUT_DIR": "runs/t", "JUDGE_WANDB_DIR": "wandb",
        "JUDGE_CACHE_DIR": "cache", **extra,
    }  # fmt: skip
    return subprocess.run(["bash", str(SLURM_DIR / "train.sbatch"), *args], env=env, capture_output=True, text=True,
                          timeout=60, cwd=work_dir)  # fmt: skip


def _after(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def test_train_sbatch_reads_its_config_and_folders_in_the_submit_folder(tmp_path, folders):
    """JUDGE_CONFIG=configs/judge.yaml under `sbatch --chdir`: the recipe was looked for in the working folder (no
    such file: the job stopped at once), where the env script beside it was found. Now the recipe, the run folder
    (its lock and the trainer's --output-dir), W&B's and the caches' folders are the submit folder's, passed on
    absolute, and nothing is made in the working folder."""
    submit_dir, work_dir = folders
    proc = _run(tmp_path, submit_dir, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sourced").read_text() == f"sourced in {work_dir}\n"
    words = (tmp_path / "srun_args").read_text().splitlines()
    assert _after(words, "--config") == f"{submit_dir}/configs/judge.yaml"
    assert _after(words, "--output-dir") == f"{submit_dir}/runs/t"
    assert (submit_dir / "runs" / "t" / "run.lock").is_file()
    assert (submit_dir / "wandb").is_dir() and (submit_dir / "cache" / "huggingface").is_dir()
    assert list(work_dir.iterdir()) == []
    assert f"    config      {submit_dir}/configs/judge.yaml\n" in proc.stdout


def test_train_sbatch_names_the_resolved_config_it_did_not_find(tmp_path, folders):
    submit_dir, work_dir = folders
    (work_dir / "configs").mkdir()
    (work_dir / "configs" / "other.yaml").write_text("recipe: seq2seq\n")  # the working folder's: not the one read
    proc = _run(tmp_path, submit_dir, work_dir, JUDGE_CONFIG="configs/other.yaml")
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: JUDGE_CONFIG=configs/other.yaml: {submit_dir}/configs/other.yaml is not a "
                           f"file (a relative path is read against the submit folder, {submit_dir})\n")
    assert not (tmp_path / "srun_args").exists()


def test_a_run_folder_where_the_lock_cannot_be_made_stops_with_the_scripts_message(tmp_path, folders):
    """Under set -e the lock file's creation would stop the script with bash's own error, exit 1, before the
    message the next line gives; that message carries the system's reason (here "Is a directory"), not a guess at
    the cause. (A folder where run.lock goes: this test may run as root, whom permissions pass.)"""
    submit_dir, work_dir = folders
    (submit_dir / "runs" / "t" / "run.lock").mkdir(parents=True)
    proc = _run(tmp_path, submit_dir, work_dir)
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: cannot create {submit_dir}/runs/t/run.lock, the run folder's lock (Is a "
                           f"directory; does this user own JUDGE_OUTPUT_DIR={submit_dir}/runs/t, and may write "
                           "there?)\n")
    assert not (tmp_path / "srun_args").exists()


def test_no_host_from_scontrol_stops_with_the_scripts_message(tmp_path, folders):
    """scontrol naming no host (missing or failing on the batch host) stopped the script at the first host's
    unbound name, exit 1."""
    submit_dir, work_dir = folders
    proc = _run(tmp_path, submit_dir, work_dir, scontrol="exit 0\n")
    assert proc.returncode == 2
    assert proc.stderr == ("train.sbatch: scontrol show hostnames 'localhost' named no node (is scontrol on PATH on "
                           "the batch host?); cannot say where the job trains\n")
    assert not (tmp_path / "srun_args").exists()

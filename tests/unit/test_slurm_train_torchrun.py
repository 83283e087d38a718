"""train.sbatch's torchrun launch: ``--shutdown-timeout`` (pytorch/pytorch torch/distributed/run.py, new in 2026's
torch releases) only where the node's torchrun has it. An older torch in the job's environment refused the flag as
an unrecognized argument on every start; now the node task asks its torchrun's --help, and without the flag launches
without it and says so in the job log. The script runs under bash against a fake srun that runs the node task (as
srun does on each node) and a fake torchrun whose --help has the flag or not; no cluster."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"

# torchrun's usage line as torch 2.13 prints it (the flag listed), and as a torch before the flag does.
HELP_WITH_FLAG = "usage: torchrun [-h] [--nnodes NNODES] [--shutdown-timeout SHUTDOWN_TIMEOUT] [--virtual-local-rank]"
HELP_WITHOUT_FLAG = "usage: torchrun [-h] [--nnodes NNODES] [--nproc-per-node NPROC_PER_NODE]"


def _launch(tmp_path: Path, torchrun_help: str,
            master_port: str = "") -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run train.sbatch on one node (``master_port`` empty: one found free); return the process and the arguments
    torchrun was started with."""
    (tmp_path / "judge.yaml").write_text("recipe: seq2seq\n")
    bin_dir = write_executables(tmp_path / "bin", {
        # the node step: run the task's command, as srun runs it on each node, after srun's own options
        "srun": 'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n',
        "torchrun": f'if [[ $1 == --help ]]; then echo "{torchrun_help}"; exit 0; fi\n'
                    'printf "%s\\n" "$@" >"$FAKE_TORCHRUN_ARGS"\n',
        "judge-train": "exit 0\n", "scontrol": 'echo "${@: -1}"\n'})  # fmt: skip
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_TORCHRUN_ARGS": str(tmp_path / "torchrun_args"),
        "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost", "SLURM_NODEID": "0", "SLURM_SUBMIT_DIR": str(tmp_path),
        "JUDGE_MASTER_PORT": master_port, "JUDGE_CONFIG": "judge.yaml", "JUDGE_OUTPUT_DIR": "run",
        "JUDGE_CACHE_DIR": "cache", "JUDGE_SHUTDOWN_TIMEOUT_S": "1200",
    }  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "train.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    args = (tmp_path / "torchrun_args").read_text().splitlines() if (tmp_path / "torchrun_args").exists() else []
    return proc, args


@pytest.mark.parametrize("has_flag", [True, False], ids=["torchrun-with-the-flag", "older-torchrun"])
def test_the_shutdown_timeout_is_passed_only_to_a_torchrun_that_has_it(tmp_path, has_flag):
    proc, args = _launch(tmp_path, HELP_WITH_FLAG if has_flag else HELP_WITHOUT_FLAG)
    assert proc.returncode == 0, proc.stderr
    assert args[:3] == ["--nnodes=1", "--node_rank=0", "--nproc_per_node=1"]
    start = args.index("--no-python")
    assert args[start:start + 4] == ["--no-python", "judge-train", "--config", f"{tmp_path}/judge.yaml"]
    assert ("--shutdown-timeout=1200" in args) is has_flag
    said = [line for line in proc.stderr.splitlines() if "--shutdown-timeout" in line]
    assert said == ([] if has_flag else [
        "train.sbatch: this torchrun has no --shutdown-timeout (an older torch): launching "
        "without it, its ranks have 30 s after a SIGTERM to save, not JUDGE_SHUTDOWN_TIMEOUT_S=1200 s"])


@pytest.mark.parametrize("port", ["0", "65536", "99999", "123456", "29500x"])
def test_a_master_port_that_is_no_port_stops_the_job_before_any_node_starts(tmp_path, port):
    """JUDGE_MASTER_PORT was checked for digits only: 0 or 65536 reached every node's torchrun."""
    proc, args = _launch(tmp_path, HELP_WITH_FLAG, master_port=port)
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: rendezvous port '{port}' is not a port: an integer from 1 to 65535; set "
                           "JUDGE_MASTER_PORT to one\n")
    assert args == []


def _free_four_digit_port() -> int:
    """A port from 1024 to 9999 free here (the script checks a named one free): one written with a leading zero
    still has at most five digits."""
    import socket

    for port in range(9999, 1023, -1):
        with socket.socket() as sock:
            try:
                sock.bind(("", port))
            except OSError:
                continue
        return port
    raise AssertionError("no port from 1024 to 9999 is free")


def test_a_master_port_with_a_leading_zero_is_passed_as_its_number(tmp_path):
    port = _free_four_digit_port()
    proc, args = _launch(tmp_path, HELP_WITH_FLAG, master_port=f"0{port}")
    assert proc.returncode == 0, proc.stderr
    assert f"--master_port={port}" in args

"""slurm/train.sbatch around its training step: where judge-train runs, what it refuses after the script, and the
order of things on a SIGTERM. The script is run by bash against fake srun, scontrol, torchrun and trl; no cluster.

The training step's fake srun waits on a file the test creates, so that the SIGTERM lands while it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SCRIPT = Path(__file__).resolve().parents[2] / "slurm" / "train.sbatch"

#: srun: GRPO's vLLM server step (it is given --model) logs that it is up and, on the SIGTERM the script's kill sends,
#: that it stopped; the training step records its folder and arguments, logs that it started and waits for the test's
#: go file (bounded, so that a failing test leaves no process behind for long) before logging that it saved.
FAKE_SRUN = r'''
if [[ " $* " == *" --model "* ]]; then
    trap 'kill "$idle" 2>/dev/null; echo server-stopped >>"$FAKE_LOG"; exit 0' TERM
    sleep 300 & idle=$!
    echo server-up >>"$FAKE_LOG"
    wait "$idle"
    exit 0
fi
pwd >"$FAKE_SRUN_CWD"
while [[ $1 == --* ]]; do shift; done
printf "%s\n" "$@" >"$FAKE_SRUN_ARGS"
echo training-started >>"$FAKE_LOG"
for _ in $(seq 600); do [[ -e $FAKE_GO ]] && break; sleep 0.05; done
echo training-saved >>"$FAKE_LOG"
'''
FAKE_SCONTROL = 'if [[ $1 == show && $2 == hostnames ]]; then printf "%s\\n" $FAKE_HOSTS; fi\n'


@pytest.fixture
def job(tmp_path) -> dict[str, Path]:
    """The submit folder (recipe, env script), the job's working folder (sbatch --chdir) and the fakes' files."""
    paths = {name: tmp_path / name for name in ("submit", "chdir", "elsewhere", "log", "go", "srun_cwd", "srun_args")}
    (paths["submit"] / "configs").mkdir(parents=True)
    (paths["submit"] / "configs" / "judge.yaml").write_text("recipe: grpo\n")
    paths["chdir"].mkdir()
    paths["elsewhere"].mkdir()
    paths["bin"] = write_executables(tmp_path / "bin", {
        "srun": FAKE_SRUN, "scontrol": FAKE_SCONTROL, "torchrun": "exit 0\n", "judge-train": "exit 0\n",
        "trl": "exit 0\n"})  # fmt: skip
    return paths


def _env(job: dict[str, Path], **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": f"{job['bin']}{os.pathsep}{os.environ['PATH']}", "FAKE_LOG": str(job["log"]),
        "FAKE_GO": str(job["go"]), "FAKE_SRUN_CWD": str(job["srun_cwd"]), "FAKE_SRUN_ARGS": str(job["srun_args"]),
        "FAKE_HOSTS": "localhost", "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost",
        "SLURM_SUBMIT_DIR": str(job["submit"]), "JUDGE_MASTER_PORT": "29500", "JUDGE_CONFIG": "configs/judge.yaml",
        "JUDGE_OUTPUT_DIR": "runs/t", "JUDGE_CACHE_DIR": str(job["submit"] / "cache"), **extra,
    }  # fmt: skip


def _run(job: dict[str, Path], *args: str, **extra: str) -> subprocess.CompletedProcess:
    job["go"].touch()  # the training step returns at once
    return subprocess.run(["bash", str(SCRIPT), *args], env=_env(job, **extra), capture_output=True, text=True,
                          timeout=60, cwd=job["chdir"])  # fmt: skip


def _log(job: dict[str, Path]) -> list[str]:
    return job["log"].read_text().split() if job["log"].exists() else []


def _until(condition, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _term_pending(pid: int) -> bool:
    """Whether a SIGTERM sent to ``pid`` is not yet delivered (its bit in the pending masks of /proc/PID/status; a
    process that died of it keeps the bit there until it is reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    masks = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask & (1 << (signal.SIGTERM - 1)) for mask in masks)


def test_judge_train_runs_in_the_submit_folder_under_chdir(job):
    """Under `sbatch --chdir` the config's own relative paths (data, deepspeed) were read in the working folder: the
    training step now starts in the submit folder, where `judge-train submit` checked them."""
    proc = _run(job)
    assert proc.returncode == 0, proc.stderr
    assert job["srun_cwd"].read_text().strip() == str(job["submit"])


def test_judge_train_runs_in_the_submit_folder_after_an_env_script_that_moves(job):
    (job["submit"] / "env.sh").write_text(f'cd "{job["elsewhere"]}"\n')
    proc = _run(job, JUDGE_ENV_SCRIPT="env.sh")
    assert proc.returncode == 0, proc.stderr
    assert job["srun_cwd"].read_text().strip() == str(job["submit"])


@pytest.mark.parametrize("args", [["--config", "configs/other.yaml"], ["--config=configs/other.yaml"],
                                  ["--learning-rate", "1e-5", "--config", "configs/judge.yaml"]])  # fmt: skip
def test_a_config_after_the_script_is_refused(job, args):
    """judge-train reads the last --config: one after the script replaced JUDGE_CONFIG while the banner named it."""
    proc = _run(job, *args)
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: --config after the script would replace JUDGE_CONFIG="
                           f"{job['submit']}/configs/judge.yaml (judge-train reads the last); give the recipe once, "
                           "as JUDGE_CONFIG\n")
    assert not job["srun_args"].exists()


def test_a_relative_output_dir_after_the_script_is_read_in_the_submit_folder(job):
    """judge-train runs in the submit folder: `--output-dir runs/t` names JUDGE_OUTPUT_DIR=runs/t there, another
    relative folder does not."""
    proc = _run(job, "--output-dir", "runs/t")
    assert proc.returncode == 0, proc.stderr
    proc = _run(job, "--output-dir=runs/other")
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: --output-dir runs/other after the script is not JUDGE_OUTPUT_DIR="
                           f"{job['submit']}/runs/t; give the run folder once, as JUDGE_OUTPUT_DIR\n")


def test_a_sigterm_during_training_stops_the_vllm_server_only_after_the_training_step_returns(job, tmp_path):
    """GRPO in server mode. Without a TERM trap bash died at the SIGTERM and its EXIT trap killed the vLLM server
    while the trainer was still saving (exit 143, no "finished" line). Trapped, the signal waits for the training
    step: it saves, then the server is stopped and the script ends as after any training."""
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    env = _env(job, JUDGE_VLLM_SERVE_MODEL="base", FAKE_HOSTS="n0 n1", SLURM_JOB_NODELIST="n[0-1]")
    with stdout.open("w") as out, stderr.open("w") as err:
        proc = subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=out, stderr=err, cwd=job["chdir"])
    try:
        _until(lambda: {"server-up", "training-started"} <= set(_log(job)) or proc.poll() is not None,
               "the server and the training step to start")  # fmt: skip
        assert proc.poll() is None, stderr.read_text()
        proc.send_signal(signal.SIGTERM)
        _until(lambda: proc.poll() is not None or not _term_pending(proc.pid), "the batch shell to take the SIGTERM")
        job["go"].touch()  # the training step saves and returns
        returncode = proc.wait(timeout=60)
    finally:
        job["go"].touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert returncode == 0, stderr.read_text()
    assert _log(job)[2:] == ["training-saved", "server-stopped"]
    assert "train.sbatch: SIGTERM, held until the training step returned" in stderr.read_text()
    assert "=== judge-train: Slurm job 7 finished" in stdout.read_text()

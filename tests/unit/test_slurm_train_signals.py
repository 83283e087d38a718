"""slurm/train.sbatch around its training step: where judge-train runs, what it refuses after the script, and the
order of things on a SIGTERM. The script is run by bash against fake srun, scontrol, torchrun and trl; no cluster.

The fakes and the test talk through pipes, so every order of events is made to happen, none waited for: the fake
srun says on one when the vLLM server and the training step are up, and the training step returns only when the test
writes to (or closes) the other, so that the SIGTERM lands while it runs."""

from __future__ import annotations

import os
import select
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SCRIPT = Path(__file__).resolve().parents[2] / "slurm" / "train.sbatch"

#: srun: GRPO's vLLM server step (it is given --model) logs that it is up, says so on the ready pipe and, on the
#: SIGTERM the script's kill sends, logs that it stopped; the training step records its folder and arguments, logs
#: that it started, says so, and blocks reading the go pipe (bounded, so that a failing test leaves no process behind
#: for long) until the test writes to or closes it, before logging that it saved. A port probe's step (the script's
#: python3 program binding sockets) runs, as on the host it names.
FAKE_SRUN = r'''
if [[ $* == *"import socket"* ]]; then while [[ $1 == --* ]]; do shift; done; exec "$@"; fi
if [[ " $* " == *" --model "* ]]; then
    trap 'kill "$idle" 2>/dev/null; echo server-stopped >>"$FAKE_LOG"; exit 0' TERM
    sleep 300 & idle=$!
    echo server-up >>"$FAKE_LOG"
    echo server-up >&"$FAKE_READY_FD"
    wait "$idle"
    exit 0
fi
pwd >"$FAKE_SRUN_CWD"
while [[ $1 == --* ]]; do shift; done
printf "%s\n" "$@" >"$FAKE_SRUN_ARGS"
echo training-started >>"$FAKE_LOG"
echo training-started >&"$FAKE_READY_FD"
read -r -t 60 _ <&"$FAKE_GO_FD" || true
echo training-saved >>"$FAKE_LOG"
'''
# Slurm's record gives every node an address: the fake hosts' names (n0, n1) resolve nowhere, and train.sbatch
# publishes no loopback for a node other hosts must reach.
FAKE_SCONTROL = ('if [[ $1 == show && $2 == hostnames ]]; then printf "%s\\n" $FAKE_HOSTS; fi\n'
                 'if [[ $1 == show && $2 == node ]]; then echo "NodeName=$3 NodeAddr=10.0.0.${3#n}"; fi\n')


@pytest.fixture
def job(tmp_path) -> dict[str, Path]:
    """The submit folder (recipe, env script), the job's working folder (sbatch --chdir) and the fakes' files."""
    paths = {name: tmp_path / name for name in ("submit", "chdir", "elsewhere", "log", "srun_cwd", "srun_args")}
    (paths["submit"] / "configs").mkdir(parents=True)
    (paths["submit"] / "configs" / "judge.yaml").write_text("recipe: grpo\n")
    paths["chdir"].mkdir()
    paths["elsewhere"].mkdir()
    paths["bin"] = write_executables(tmp_path / "bin", {
        "srun": FAKE_SRUN, "scontrol": FAKE_SCONTROL, "torchrun": "exit 0\n", "judge-train": "exit 0\n",
        "trl": "exit 0\n"})  # fmt: skip
    return paths


def _env(job: dict[str, Path], ready_fd: int, go_fd: int, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": f"{job['bin']}{os.pathsep}{os.environ['PATH']}", "FAKE_LOG": str(job["log"]),
        "FAKE_READY_FD": str(ready_fd), "FAKE_GO_FD": str(go_fd),
        "FAKE_SRUN_CWD": str(job["srun_cwd"]), "FAKE_SRUN_ARGS": str(job["srun_args"]),
        "FAKE_HOSTS": "localhost", "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost",
        "SLURM_SUBMIT_DIR": str(job["submit"]), "JUDGE_CONFIG": "configs/judge.yaml",
        "JUDGE_OUTPUT_DIR": "runs/t", "JUDGE_CACHE_DIR": str(job["submit"] / "cache"), **extra,
    }  # fmt: skip


def _run(job: dict[str, Path], *args: str, **extra: str) -> subprocess.CompletedProcess:
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    os.close(go_write)  # the training step's read ends at once
    try:
        return subprocess.run(["bash", str(SCRIPT), *args], env=_env(job, ready_write, go_read, **extra),
                              capture_output=True, text=True, timeout=60, cwd=job["chdir"],
                              pass_fds=(ready_write, go_read))  # fmt: skip
    finally:
        for fd in (ready_read, ready_write, go_read):
            os.close(fd)


def _log(job: dict[str, Path]) -> list[str]:
    return job["log"].read_text().split() if job["log"].exists() else []


def _read_until(fd: int, lines: set[str], timeout_s: float = 30.0) -> set[str]:
    """The lines read from ``fd`` once all of ``lines`` came, or what came before the pipe closed or ``timeout_s``
    passed (``select`` blocks until the fakes write: nothing is polled)."""
    seen, buffer = set(), b""
    while not lines <= seen:
        if not select.select([fd], [], [], timeout_s)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buffer += chunk
        seen = set(buffer.decode().split())
    return seen


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
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    env = _env(job, ready_write, go_read, JUDGE_VLLM_SERVE_MODEL="base", FAKE_HOSTS="n0 n1",
               SLURM_JOB_NODELIST="n[0-1]")  # fmt: skip
    with stdout.open("w") as out, stderr.open("w") as err:
        proc = subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=out, stderr=err, cwd=job["chdir"],
                                pass_fds=(ready_write, go_read))  # fmt: skip
    os.close(ready_write)  # only the fakes write: the pipe closes if they all end
    os.close(go_read)
    try:
        started = _read_until(ready_read, {"server-up", "training-started"})
        assert started == {"server-up", "training-started"}, stderr.read_text()
        # The training step is the shell's foreground job, blocked on the go pipe. The SIGTERM is pending in the
        # shell from kill() on, and the kernel hands it over before the shell runs another instruction, so before
        # it can see the step end: untrapped it dies there (143), trapped the trap waits for the step.
        proc.send_signal(signal.SIGTERM)
        os.write(go_write, b"go\n")  # the training step saves and returns
        returncode = proc.wait(timeout=60)
    finally:
        os.close(go_write)
        os.close(ready_read)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert returncode == 0, stderr.read_text()
    assert _log(job)[2:] == ["training-saved", "server-stopped"]
    assert "train.sbatch: SIGTERM, held until the training step returned" in stderr.read_text()
    assert "=== judge-train: Slurm job 7 finished" in stdout.read_text()

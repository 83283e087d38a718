"""An eval task pointed at a serve job that was SIGKILLed, on a real Slurm: the endpoint file the kill left behind
is not used, and the task ends at once naming the serve job and its state, instead of polling until
JUDGE_EVAL_WAIT_S. The serve job's judge-serve is a stand-in that sleeps (no engine): what is checked is what the
scripts do with Slurm's own job states. The logic alone is tests/unit/test_slurm_eval_serve_wait.py's."""

from __future__ import annotations

import os
import signal
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _batch_shell(job_id: int) -> int:
    """Pid of a job's batch shell (bash running slurmd's copy of the script; every fake node is this host)."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.endswith(b"/slurm_script") for arg in argv) and f"SLURM_JOB_ID={job_id}".encode() in environ:
            return int(proc.name)
    raise AssertionError(f"no batch shell of job {job_id}")


def test_an_eval_task_stops_at_once_on_a_sigkilled_serve_jobs_left_file(slurm_cluster, slurm_job_env, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "judge-serve").write_text("#!/bin/bash\nsleep 600\n")
    (bin_dir / "judge-serve").chmod(0o755)
    (tmp_path / "model").mkdir()
    data = tmp_path / "records.jsonl"
    data.write_text('{"id": 1}\n')
    env = {**slurm_job_env, "PATH": f"{bin_dir}{os.pathsep}{slurm_job_env['PATH']}",
           "JUDGE_MODEL": str(tmp_path / "model"), "JUDGE_ENDPOINT_DIR": str(tmp_path / "endpoints")}  # fmt: skip
    serve = slurm_cluster.sbatch(["--gpus-per-node=0", "--cpus-per-task=1", f"--output={tmp_path}/%x-%j.out",
                                  str(REPO / "slurm/serve.sbatch")], cwd=tmp_path, env=env)  # fmt: skip
    endpoint_file = tmp_path / "endpoints" / f"judge-serve-{serve}.endpoint"
    # The job writes its file before it starts judge-serve (the stand-in then sleeps): the kill below comes after.
    slurm_cluster.wait_for(serve, lambda record: endpoint_file.exists())
    # The batch shell SIGKILLed (the OOM killer; or Slurm's SIGKILL KillWait after a scancel, with judge-serve still
    # draining): its EXIT trap never runs, so the file stays, naming a port nobody holds. (`scancel --signal=KILL`
    # is a cancel: the shell gets SIGTERM first and removes the file.)
    os.kill(_batch_shell(serve), signal.SIGKILL)
    serve_state = slurm_cluster.wait(serve, timeout_s=120)["JobState"]
    assert endpoint_file.exists()

    eval_env = {**env, "JUDGE_EVAL_ENDPOINT_FILE": str(endpoint_file), "JUDGE_EVAL_DATA": str(data),
                "JUDGE_EVAL_OUT": str(tmp_path / "eval")}  # fmt: skip  (JUDGE_EVAL_WAIT_S: the default hour)
    # What shows the task ended at once is how it ended, not a clock: the state's own line below, never the
    # wait's end ("no ready judge-serve ... after 3600 s"), which the hour would take to reach.
    array = slurm_cluster.sbatch(["--array=0", "--gpus-per-node=0", "--cpus-per-task=1",
                                  f"--output={tmp_path}/%x-%A_%a.out", str(REPO / "slurm/eval.sbatch")],
                                 cwd=tmp_path, env=eval_env)  # fmt: skip
    record = slurm_cluster.wait(f"{array}_0", timeout_s=120)
    log = (tmp_path / f"judge-eval-{array}_0.out").read_text()
    assert record["JobState"] == "FAILED" and record["ExitCode"] == "2:0", log
    assert f"eval.sbatch: serve job {serve} is {serve_state}: it serves no judge" in log, log
    assert "no ready judge-serve" not in log and "judge-serve ready at" not in log, log
    assert not (tmp_path / "eval" / "shards").exists()  # nothing judged

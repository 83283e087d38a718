"""slurm/train.sbatch requeues a job preempted before its trainer could (judge.plumbing.slurm_requeue).

Between the launch and the trainer's stopper (data, TrainingArguments, DeepSpeed, the model loading) a SIGTERM kills
the ranks with nothing saved, and nothing in the step requeues the job; Slurm does not either for a job that ends
within the partition's GraceTime under PreemptMode=REQUEUE. The script runs under bash with fakes: torchrun sends
the batch shell its SIGTERM (as Slurm signals it with every step) and then exits 143 as a rank killed by it; the
signal is delivered before torchrun exits, so the order is made, not waited for. No cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SCRIPT = Path(__file__).resolve().parents[2] / "slurm" / "train.sbatch"

# `requeue` with FAKE_REQUEUE_SIGNALS set SIGTERMs its caller before it returns, as a successful requeue signals every
# process of the job.
FAKE_SCONTROL = r'''
echo "$*" >>"$FAKE_SCONTROL_CALLS"
case "$1 $2" in
    "show hostnames") echo localhost ;;
    "show job") echo "JobId=7 $FAKE_JOB_RECORD" ;;
    "requeue 7") if [[ -n ${FAKE_REQUEUE_SIGNALS:-} ]]; then kill -TERM "$PPID"; fi ;;
esac
exit 0
'''


SRUN = 'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n'
# The port probe's step (python3 on the training host) SIGTERMs the batch shell as it starts: a preemption during the
# job's setup, before any training step.
SRUN_SIGNALLING_THE_PROBE = ('while [[ $1 == --* ]]; do shift; done\n'
                             'if [[ $1 == python3 ]]; then kill -TERM "$FAKE_BATCH_PID"; fi\nexec "$@"\n')


def _run(tmp_path: Path, record: str, restart: str = "0", srun: str = SRUN, **extra: str
         ) -> tuple[subprocess.CompletedProcess, list[str]]:
    """train.sbatch on one node whose training step is SIGTERM'd before the trainer installs its stopper; returns
    the script's result and scontrol's calls. torchrun leaves FAKE_TORCHRUN_RAN, when set, behind."""
    (tmp_path / "judge.yaml").write_text("recipe: seq2seq\n")
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": srun,
        "torchrun": ('if [[ $1 == --help ]]; then exit 0; fi\nif [[ -n ${FAKE_TORCHRUN_RAN:-} ]]; then '
                     'touch "$FAKE_TORCHRUN_RAN"; fi\nkill -TERM "$FAKE_BATCH_PID"\nexit 143\n'),
        "judge-train": "exit 0\n", "scontrol": FAKE_SCONTROL})  # fmt: skip
    calls = tmp_path / "scontrol_calls"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        # python3 is this test's interpreter, which imports judge (the script asks judge.plumbing.slurm_requeue)
        "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "FAKE_SCONTROL_CALLS": str(calls), "FAKE_JOB_RECORD": record,
        "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost", "SLURM_NODEID": "0", "SLURM_SUBMIT_DIR": str(tmp_path),
        "SLURM_RESTART_COUNT": restart, "JUDGE_CONFIG": "judge.yaml",
        "JUDGE_OUTPUT_DIR": "run", "JUDGE_CACHE_DIR": "cache", **extra,
    }  # fmt: skip
    # exec keeps the pid: the batch shell's is the one the fake torchrun signals
    proc = subprocess.run(["bash", "-c", 'export FAKE_BATCH_PID=$$; exec bash "$0"', str(SCRIPT)], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_a_job_preempted_before_training_started_is_requeued(tmp_path):
    """RUNNING with a PreemptTime and no restart counted yet: the script requeues the job itself, exit 0."""
    proc, calls = _run(tmp_path, "JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28")
    assert proc.returncode == 0, proc.stderr
    assert "requeue 7" in calls, calls
    assert "train.sbatch: requeueing Slurm job 7 after SIGTERM (scontrol requeue)" in proc.stderr


@pytest.mark.parametrize(("record", "restart", "said"), [
    ("JobState=CANCELLED Restarts=0 PreemptTime=None", "0", "ended by SIGTERM (state CANCELLED, not preempted)"),
    ("JobState=TIMEOUT Restarts=1 PreemptTime=None", "1", "ended by SIGTERM (state TIMEOUT, not preempted)"),
], ids=["scancel", "time-limit-of-a-rerun"])  # fmt: skip
def test_a_job_cancelled_or_out_of_time_before_training_is_not_requeued(tmp_path, record, restart, said):
    """scancel or the time limit: the job stays ended, with the step's status (143, the ranks' SIGTERM)."""
    proc, calls = _run(tmp_path, record, restart)
    assert proc.returncode == 143
    assert not [c for c in calls if c.startswith("requeue")], calls
    assert f"train.sbatch: Slurm job 7 {said}: not requeued" in proc.stderr


def test_a_job_slurm_is_requeueing_already_is_not_requeued_twice(tmp_path):
    """`scontrol requeue` by hand (or the trainer's own) is counted in Restarts at once: no second requeue."""
    proc, calls = _run(tmp_path, "JobState=COMPLETING Restarts=1 PreemptTime=None")
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("requeue")], calls
    assert "train.sbatch: Slurm job 7 is being requeued by Slurm (COMPLETING, restart 1)" in proc.stderr


def test_the_requeues_own_sigterm_does_not_undo_the_requeued_exit(tmp_path):
    """A successful requeue SIGTERMs every process of the job, the python3 asking among them (signalled here before
    scontrol returns): it still exits 0, so the job ends 0 and the log does not say the rule could not be asked."""
    proc, calls = _run(tmp_path, "JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28",
                       FAKE_REQUEUE_SIGNALS="1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "requeue 7" in calls, calls
    assert "could not ask" not in proc.stderr


@pytest.mark.parametrize(("record", "restart", "code", "requeued"), [
    ("JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28", "0", 0, True),
    ("JobState=CANCELLED Restarts=0 PreemptTime=None", "0", 143, False),
], ids=["preempted", "scancel"])  # fmt: skip
def test_a_sigterm_during_the_setup_stops_the_job_before_training_requeued_if_preempted(tmp_path, record, restart,
                                                                                         code, requeued):
    """A SIGTERM during the setup (the env script, the port probes, the checkpoint survey: each may be a step on
    another node) must not kill the batch shell unasked, or a preempted job is never requeued. The trap is set at the
    top and its flag looked at before any step starts: requeued if preempted (exit 0), else 143, and torchrun never
    starts."""
    ran = tmp_path / "torchrun_ran"
    proc, calls = _run(tmp_path, record, restart, srun=SRUN_SIGNALLING_THE_PROBE, FAKE_TORCHRUN_RAN=str(ran))
    assert proc.returncode == code, proc.stderr
    assert ("requeue 7" in calls) == requeued, calls
    assert not ran.exists()
    assert "train.sbatch: SIGTERM, held until the training step returned" in proc.stderr


# The step itself dies of the signal that reaches the batch shell, as Slurm signals every step of the job: the port
# probe's, or the checkpoint survey's (python3 -m there).
SRUN_PROBE_KILLED = ('while [[ $1 == --* ]]; do shift; done\n'
                     'if [[ $1 == python3 ]]; then kill -TERM "$FAKE_BATCH_PID"; exit 143; fi\nexec "$@"\n')
SRUN_SURVEY_KILLED = ('while [[ $1 == --* ]]; do shift; done\n'
                      'if [[ $1 == python3 && $2 == -m ]]; then kill -TERM "$FAKE_BATCH_PID"; exit 143; fi\n'
                      'exec "$@"\n')
# The env script, sourced by the batch shell, is signalled and then fails: set -e ends the script there.
ENV_SCRIPT_KILLED = 'kill -TERM "$FAKE_BATCH_PID"\nfalse\n'


def _setup_killed(tmp_path: Path, where: str, record: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """train.sbatch whose SIGTERM comes during the setup, in ``where`` (probe, survey, env-script), and kills
    what the script waits on there."""
    extra: dict[str, str] = {"FAKE_TORCHRUN_RAN": str(tmp_path / "torchrun_ran")}
    srun = SRUN
    if where == "probe":
        srun = SRUN_PROBE_KILLED
    elif where == "survey":
        srun = SRUN_SURVEY_KILLED
        (tmp_path / "run" / "checkpoint-5").mkdir(parents=True)
        # the batch shell's python3 lacks train.output_folder, so the survey is a step (srun), as under a container
        write_executables(tmp_path / "py", {"python3": (
            f'if [[ $1 == -c && $2 == "import train.output_folder" ]]; then exit 1; fi\nexec "{sys.executable}" "$@"\n'
        )})  # fmt: skip
        extra["PATH"] = os.pathsep.join([str(tmp_path / "bin"), str(tmp_path / "py"), str(Path(sys.executable).parent),
                                         os.environ["PATH"]])  # fmt: skip
    else:
        (tmp_path / "env.sh").write_text(ENV_SCRIPT_KILLED)
        extra["JUDGE_ENV_SCRIPT"] = "env.sh"
    return _run(tmp_path, record, "0", srun=srun, **extra)


@pytest.mark.parametrize("where", ["probe", "survey", "env-script"])
@pytest.mark.parametrize(("record", "code", "requeued"), [
    ("JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28", 0, True),
    ("JobState=CANCELLED Restarts=0 PreemptTime=None", 143, False),
], ids=["preempted", "scancel"])  # fmt: skip
def test_a_sigterm_that_kills_a_setup_step_stops_the_job_requeued_if_preempted(tmp_path, where, record, code,
                                                                               requeued):
    """The signal kills the step the script waits on as well (a probe or the survey failing, the env script failing
    under set -e): the script asks the requeue rule before it ends, so a preempted job is requeued (exit 0) and a
    cancelled one ends 143, never exit 2 with nobody asked; torchrun never starts."""
    proc, calls = _setup_killed(tmp_path, where, record)
    assert proc.returncode == code, proc.stderr
    assert ("requeue 7" in calls) == requeued, calls
    assert [c for c in calls if c.startswith("show job")], calls
    assert not (tmp_path / "torchrun_ran").exists()

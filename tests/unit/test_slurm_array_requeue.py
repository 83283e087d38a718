"""eval.sbatch's and rank.sbatch's tasks when Slurm stops them: a preempted task requeues itself (Slurm would not,
the task having ended inside the GraceTime), a cancelled one does not; --overwrite applies to a task's first launch
only, not to its requeue. Run by bash against a fake srun (which delivers the SIGTERM Slurm sends the batch shell)
and a fake scontrol answering a job record; no cluster."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

REPO = Path(__file__).resolve().parents[2]

# srun: records its arguments; with FAKE_SRUN_TERM set, signals the batch shell (its parent) as Slurm does on
# preemption and ends as judge-eval does at a SIGTERM (143).
FAKE_SRUN = """printf '%s\\n' "$@" >>"$FAKE_SRUN_ARGS"
echo --- >>"$FAKE_SRUN_ARGS"
if [[ -n ${FAKE_SRUN_TERM:-} ]]; then kill -TERM "$PPID"; exit 143; fi
"""
# scontrol: `show job -o ID` prints $FAKE_JOB_RECORD; `requeue ID` is recorded.
FAKE_SCONTROL = """case $1 in
    show) echo "$FAKE_JOB_RECORD" ;;
    requeue) echo "$*" >>"$FAKE_REQUEUES" ;;
esac
"""
PREEMPTED = "JobId=7 JobName=judge-eval JobState=RUNNING Reason=None Restarts=0 PreemptTime=2026-12-01T22:00:00"
CANCELLED = "JobId=7 JobName=judge-eval JobState=CANCELLED Reason=None Restarts=0 PreemptTime=None"
REQUEUED_BY_SLURM = "JobId=7 JobName=judge-eval JobState=COMPLETING Reason=None Restarts=1 PreemptTime=None"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    bin_dir = write_executables(tmp_path / "bin", {"srun": FAKE_SRUN, "scontrol": FAKE_SCONTROL,
                                                   "judge-eval": "exit 0\n"})
    data, models = tmp_path / "test.jsonl", tmp_path / "models.txt"
    data.write_text('{"id": 1}\n{"id": 2}\n')
    models.write_text("/shared/models/a\n")
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"), "FAKE_REQUEUES": str(tmp_path / "requeues"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_JUDGE": "http://n1:8000/v1", "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"),
        "JUDGE_RANK_MODELS": str(models), "JUDGE_RANK_JUDGE": "http://n1:8000/v1", "JUDGE_RANK_DATA": str(data),
        "JUDGE_RANK_OUT": str(tmp_path / "rank"), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
        **extra,
    }  # fmt: skip


def _run(script: str, env: dict[str, str], tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(REPO / "slurm" / script), *flags], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch"])
def test_a_preempted_task_requeues_itself(tmp_path, script):
    """Preempted with a GraceTime: judge-eval stops at the SIGTERM and the task ended FAILED within the grace, which
    Slurm does not requeue (it requeues what still runs at the grace's end), so the afterok merge never ran. The
    job's record says preempted and RUNNING: the task runs `scontrol requeue` on its own id and ends 0."""
    proc = _run(script, _env(tmp_path, FAKE_SRUN_TERM="1", FAKE_JOB_RECORD=PREEMPTED), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "requeues").read_text() == "requeue 7\n"
    assert f"{script}: job 7 preempted (PreemptTime 2026-12-01T22:00:00): scontrol requeue" in proc.stderr


@pytest.mark.parametrize(("record", "code", "said"), [
    (CANCELLED, 143, "ended by SIGTERM, not preempted"),  # scancel: the operator ended it
    (REQUEUED_BY_SLURM, 0, "Slurm is requeueing job 7 (restart 1)"),  # scontrol requeue by hand: Slurm does it
])  # fmt: skip
def test_a_task_stopped_otherwise_is_not_requeued_by_the_script(tmp_path, record, code, said):
    proc = _run("eval.sbatch", _env(tmp_path, FAKE_SRUN_TERM="1", FAKE_JOB_RECORD=record), tmp_path)
    assert proc.returncode == code, proc.stderr
    assert not (tmp_path / "requeues").exists()
    assert said in proc.stderr


def _launches(tmp_path: Path) -> list[list[str]]:
    return [block.strip().splitlines() for block in (tmp_path / "srun_args").read_text().split("---\n")
            if block.strip()]


@pytest.mark.parametrize(("script", "config"), [("eval.sbatch", "JUDGE_EVAL_CONFIG"),
                                                ("rank.sbatch", "JUDGE_RANK_CONFIG")])  # fmt: skip
def test_overwrite_applies_to_the_tasks_first_launch_only(tmp_path, script, config):
    """`sbatch slurm/eval.sbatch --overwrite` (or overwrite: true in the config): a requeue of the task (same job
    id, SLURM_RESTART_COUNT 1) passed --overwrite again and discarded the rows judged since. The requeue now ends its
    arguments with --no-overwrite, which wins over both; a new submission (another job id) overwrites again."""
    (tmp_path / "config.yaml").write_text("overwrite: true\n")
    env = _env(tmp_path, **{config: str(tmp_path / "config.yaml")})
    assert _run(script, env, tmp_path, "--overwrite").returncode == 0
    assert _run(script, {**env, "SLURM_RESTART_COUNT": "1"}, tmp_path, "--overwrite").returncode == 0
    assert _run(script, {**env, "SLURM_JOB_ID": "8"}, tmp_path, "--overwrite").returncode == 0
    first, requeued, resubmitted = _launches(tmp_path)
    assert first[-1] == "--overwrite" and "--no-overwrite" not in first
    assert requeued[-2:] == ["--overwrite", "--no-overwrite"]
    assert resubmitted[-1] == "--overwrite" and "--no-overwrite" not in resubmitted

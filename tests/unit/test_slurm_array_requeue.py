"""eval.sbatch's and rank.sbatch's tasks when Slurm stops them: a preempted task requeues itself (Slurm would not,
the task having ended inside the GraceTime), a cancelled one does not, by the rule train.sbatch asks
(``python3 -m judge.plumbing.slurm_requeue``) rather than a copy in bash; --overwrite applies to a task's first launch
only, not to its requeue. Run by bash against a fake srun (which delivers the SIGTERM Slurm sends the batch shell), a
fake scontrol answering a job record and a python3 that records its ``-m`` calls before running this test's
interpreter (which imports judge); no cluster."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

REPO = Path(__file__).resolve().parents[2]

# srun: records its arguments; with FAKE_SRUN_TERM set, signals the batch shell (its parent) as Slurm does on
# preemption and ends as judge-eval does at a SIGTERM (143); else ends with FAKE_SRUN_EXIT (0 unless set).
# With FAKE_CLAIM set, it first writes the run.json judge-eval writes once it has claimed its folder: `run` into its
# --out, `rank` into --out's candidate/ (judge.plumbing.provenance itself, so the record names this job as
# judge-eval's does).
FAKE_SRUN = """printf '%s\\n' "$@" >>"$FAKE_SRUN_ARGS"
echo --- >>"$FAKE_SRUN_ARGS"
if [[ -n ${FAKE_CLAIM:-} ]]; then
    out= previous= command=
    for arg in "$@"; do
        if [[ $previous == --out ]]; then out=$arg; fi
        if [[ $previous == judge-eval ]]; then command=$arg; fi
        previous=$arg
    done
    if [[ $command == rank ]]; then out=$out/candidate; fi
    python3 -c 'import sys; from judge.plumbing.provenance import write_provenance
write_provenance(sys.argv[1], "judge-eval " + sys.argv[2], {})' "$out" "$command"
fi
if [[ -n ${FAKE_SRUN_TERM:-} ]]; then kill -TERM "$PPID"; exit 143; fi
exit "${FAKE_SRUN_EXIT:-0}"
"""
# scontrol: `show job -o ID` prints $FAKE_JOB_RECORD; `requeue ID` is recorded and, with FAKE_REQUEUE_SIGNALS set,
# SIGTERMs its caller before it returns, as a successful requeue signals every process of the job.
FAKE_SCONTROL = """case $1 in
    show) echo "$FAKE_JOB_RECORD" ;;
    requeue) echo "$*" >>"$FAKE_REQUEUES"; if [[ -n ${FAKE_REQUEUE_SIGNALS:-} ]]; then kill -TERM "$PPID"; fi ;;
esac
"""
PREEMPTED = "JobId=7 JobName=judge-eval JobState=RUNNING Reason=None Restarts=0 PreemptTime=2026-12-01T22:00:00"
CANCELLED = "JobId=7 JobName=judge-eval JobState=CANCELLED Reason=None Restarts=0 PreemptTime=None"
REQUEUED_BY_SLURM = "JobId=7 JobName=judge-eval JobState=COMPLETING Reason=None Restarts=1 PreemptTime=None"
NOT_PREEMPTED = "JobId=7 JobName=judge-eval JobState=RUNNING Reason=None Restarts=0 PreemptTime=None"
# python3: a `-m` call is recorded, then run by this test's interpreter; with FAKE_NO_JUDGE set it fails as a python3
# without pollux-judge does (exit 1). Other calls (eval.sbatch's pairwise check, `python3 -c`) run unrecorded.
FAKE_PYTHON3 = f"""if [[ $1 == -m ]]; then
    echo "$*" >>"$FAKE_MODULE_CALLS"
    if [[ -n ${{FAKE_NO_JUDGE:-}} ]]; then echo "No module named judge" >&2; exit 1; fi
fi
exec {shlex.quote(sys.executable)} "$@"
"""
#: What a rerun of each script's task resumes, as each tells the module (--rerun, --not-requeued).
RESUMES = {"eval.sbatch": "shard", "rank.sbatch": "candidate"}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    bin_dir = write_executables(tmp_path / "bin", {"srun": FAKE_SRUN, "scontrol": FAKE_SCONTROL,
                                                   "judge-eval": "exit 0\n", "python3": FAKE_PYTHON3})
    data, models = tmp_path / "test.jsonl", tmp_path / "models.txt"
    data.write_text('{"id": 1}\n{"id": 2}\n')
    models.write_text("/shared/models/a\n")
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"), "FAKE_REQUEUES": str(tmp_path / "requeues"),
        "FAKE_MODULE_CALLS": str(tmp_path / "module_calls"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_JUDGE": "http://n1:8000/v1", "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"),
        "JUDGE_RANK_MODELS": str(models), "JUDGE_RANK_JUDGE": "http://n1:8000/v1", "JUDGE_RANK_DATA": str(data),
        "JUDGE_RANK_OUT": str(tmp_path / "rank"), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
        **extra,
    }  # fmt: skip


def _run(script: str, env: dict[str, str], tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(REPO / "slurm" / script), *flags], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip


def _module_calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "module_calls"
    return calls.read_text().splitlines() if calls.exists() else []


def _asked(script: str, why: str = "SIGTERM") -> str:
    """The call each script makes, as train.sbatch makes it: the job, its restart count, the script's name, what
    stopped the task and what a rerun of it resumes."""
    task = RESUMES[script]
    return (f"-m judge.plumbing.slurm_requeue --job-id 7 --restart-count 0 --name {script} --why {why} "
            f"--rerun the rerun resumes the {task} --not-requeued `scontrol requeue 7_0` reruns the task and resumes "
            f"the {task}")  # fmt: skip


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch"])
def test_a_preempted_task_requeues_itself(tmp_path, script):
    """Preempted with a GraceTime: judge-eval stops at the SIGTERM and the task ended FAILED within the grace, which
    Slurm does not requeue (it requeues what still runs at the grace's end), so the afterok merge never ran. The
    job's record says preempted and RUNNING: judge.plumbing.slurm_requeue runs `scontrol requeue` on the task's own
    id, and the task ends 0."""
    proc = _run(script, _env(tmp_path, FAKE_SRUN_TERM="1", FAKE_JOB_RECORD=PREEMPTED), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "requeues").read_text() == "requeue 7\n"
    assert _module_calls(tmp_path) == [_asked(script)]
    assert (f"{script}: requeueing Slurm job 7 after SIGTERM (scontrol requeue); the rerun resumes the "
            f"{RESUMES[script]}") in proc.stderr  # fmt: skip


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch"])
@pytest.mark.parametrize(("record", "code", "said"), [
    # scancel: the operator ended it
    (CANCELLED, 143, "Slurm job 7 ended by SIGTERM (state CANCELLED, not preempted): not requeued; "
                     "`scontrol requeue 7_0` reruns the task"),
    # scontrol requeue by hand: Slurm does it
    (REQUEUED_BY_SLURM, 0, "Slurm job 7 is being requeued by Slurm (COMPLETING, restart 1)"),
], ids=["scancel", "requeued-by-slurm"])  # fmt: skip
def test_a_task_stopped_otherwise_is_not_requeued_by_the_script(tmp_path, script, record, code, said):
    proc = _run(script, _env(tmp_path, FAKE_SRUN_TERM="1", FAKE_JOB_RECORD=record), tmp_path)
    assert proc.returncode == code, proc.stderr
    assert not (tmp_path / "requeues").exists()
    assert _module_calls(tmp_path) == [_asked(script)]
    assert f"{script}: {said}" in proc.stderr


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch"])
@pytest.mark.parametrize(("record", "code", "requeues"), [(PREEMPTED, 0, "requeue 7\n"), (NOT_PREEMPTED, 1, None)],
                         ids=["preempted", "not-preempted"])  # fmt: skip
def test_a_failed_judge_eval_is_asked_about_too(tmp_path, script, record, code, requeues):
    """judge-eval exits 1 without the batch shell having seen a SIGTERM (only the step signalled): the module is
    asked all the same, told what stopped the task; a preempted task is requeued (0), another keeps judge-eval's
    status."""
    proc = _run(script, _env(tmp_path, FAKE_SRUN_EXIT="1", FAKE_JOB_RECORD=record), tmp_path)
    assert proc.returncode == code, proc.stderr
    requeued = tmp_path / "requeues"
    assert (requeued.read_text() if requeued.exists() else None) == requeues
    subcommand = "run" if script == "eval.sbatch" else "rank"
    assert _module_calls(tmp_path) == [_asked(script, f"judge-eval {subcommand} exiting 1")]
    if requeues is None:
        assert (f"{script}: Slurm job 7 ended by judge-eval {subcommand} exiting 1 (state RUNNING, not preempted): "
                "not requeued") in proc.stderr  # fmt: skip


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch"])
def test_a_task_that_cannot_ask_the_rule_says_so_and_is_not_requeued(tmp_path, script):
    """A batch shell whose python3 lacks pollux-judge cannot ask: the task is not requeued, ends with the step's
    status (143), and its log names the likely cause rather than a bare ModuleNotFoundError."""
    proc = _run(script, _env(tmp_path, FAKE_SRUN_TERM="1", FAKE_JOB_RECORD=PREEMPTED, FAKE_NO_JUDGE="1"), tmp_path)
    assert proc.returncode == 143, proc.stderr
    assert not (tmp_path / "requeues").exists()
    assert (f"{script}: could not ask whether job 7 was preempted (python3 -m judge.plumbing.slurm_requeue exited 1; "
            "pollux-judge in the batch shell's environment?): not requeued; `scontrol requeue 7_0` reruns the task")\
        in proc.stderr  # fmt: skip


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch"])
def test_the_requeues_own_sigterm_does_not_cut_the_answer_short(tmp_path, script):
    """A successful `scontrol requeue` SIGTERMs every process of the job, the module's python3 among them (signalled
    here before scontrol returns): it still exits 0, requeued, and the task ends 0 rather than saying it could not
    ask."""
    env = _env(tmp_path, FAKE_SRUN_TERM="1", FAKE_JOB_RECORD=PREEMPTED, FAKE_REQUEUE_SIGNALS="1")
    proc = _run(script, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "requeues").read_text() == "requeue 7\n"
    assert "could not ask" not in proc.stderr


# sleep: the SIGTERM Slurm sends every process of the job, here while this command runs: the batch shell (its parent)
# gets it, and so does the command itself, which dies of it (143), as a preempted task's poll or `module load` does.
KILLED_SLEEP = 'kill -TERM "$PPID"; kill -TERM $$\n'


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch"])
def test_a_task_preempted_while_its_env_script_runs_requeues_itself(tmp_path, script):
    """Slurm signals every process of the job, not only the batch shell: the env script's command (a `module load`)
    died of the SIGTERM and set -e ended the task there, exit 143, FAILED inside the grace with the rule never
    asked, so never requeued. Now that exit asks the rule, once, and the preempted task is requeued (0)."""
    write_executables(tmp_path / "bin", {"sleep": KILLED_SLEEP})
    (tmp_path / "env.sh").write_text("sleep 1  # a module load, signalled with the job\n")
    env = _env(tmp_path, FAKE_JOB_RECORD=PREEMPTED, JUDGE_ENV_SCRIPT=str(tmp_path / "env.sh"))
    proc = _run(script, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "requeues").read_text() == "requeue 7\n"
    assert _module_calls(tmp_path) == [_asked(script)]
    assert not (tmp_path / "srun_args").exists()


@pytest.mark.parametrize(("record", "code", "requeues"), [(PREEMPTED, 0, "requeue 7\n"), (CANCELLED, 143, None)],
                         ids=["preempted", "scancel"])  # fmt: skip
def test_an_eval_task_stopped_while_it_waits_for_its_serve_job_asks_the_rule(tmp_path, record, code, requeues):
    """The wait for a serve job (JUDGE_EVAL_ENDPOINT_FILE) lasts up to JUDGE_EVAL_WAIT_S, an hour: a preemption
    then killed the poll's sleep, and set -e ended the task before the trap's note was looked at. The rule is
    asked: a preempted task is requeued, a cancelled one ends 143."""
    write_executables(tmp_path / "bin", {"sleep": KILLED_SLEEP, "squeue": "echo PENDING\n", "curl": "exit 7\n"})
    env = _env(tmp_path, FAKE_JOB_RECORD=record,
               JUDGE_EVAL_ENDPOINT_FILE=str(tmp_path / "judge-serve-4242.endpoint"))
    proc = _run("eval.sbatch", env, tmp_path)
    assert proc.returncode == code, proc.stderr
    requeued = tmp_path / "requeues"
    assert (requeued.read_text() if requeued.exists() else None) == requeues
    assert _module_calls(tmp_path) == [_asked("eval.sbatch")]
    assert not (tmp_path / "srun_args").exists()


def test_the_scripts_keep_no_copy_of_the_rule():
    """The rule lives once, in judge.plumbing.slurm_requeue: neither script reads a job record or requeues itself."""
    for script in RESUMES:
        text = (REPO / "slurm" / script).read_text()
        assert "scontrol show job" not in text and "scontrol requeue \"$SLURM_JOB_ID\"" not in text, script
        assert "python3 -m judge.plumbing.slurm_requeue" in text, script


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
    env = _env(tmp_path, FAKE_CLAIM="1", **{config: str(tmp_path / "config.yaml")})
    assert _run(script, env, tmp_path, "--overwrite").returncode == 0
    assert _run(script, {**env, "SLURM_RESTART_COUNT": "1"}, tmp_path, "--overwrite").returncode == 0
    assert _run(script, {**env, "SLURM_JOB_ID": "8"}, tmp_path, "--overwrite").returncode == 0
    first, requeued, resubmitted = _launches(tmp_path)
    assert first[-1] == "--overwrite" and "--no-overwrite" not in first
    assert requeued[-2:] == ["--overwrite", "--no-overwrite"]
    assert resubmitted[-1] == "--overwrite" and "--no-overwrite" not in resubmitted


@pytest.mark.parametrize(("script", "record", "rows"),
                         [("eval.sbatch", "ev/shards/0/run.json", "ev/shards/0/predictions.jsonl"),
                          ("rank.sbatch", "rank/0/candidate/run.json", "rank/0/answers.jsonl")])  # fmt: skip
def test_a_task_preempted_before_judge_eval_claimed_its_folder_overwrites_on_the_requeue(tmp_path, script, record,
                                                                                         rows):  # fmt: skip
    """`sbatch slurm/eval.sbatch --overwrite` (rank.sbatch), preempted after the script launched srun but before
    judge-eval cleared the shard (the candidate's folder) (srun starting, imports, reading the data): a marker written
    before srun made the requeue pass --no-overwrite, and judge-eval resumed the rows (ranked with the answers and
    verdicts) of the earlier submission it was asked to discard. The folder's run.json tells: it names this job only
    once judge-eval of this job has claimed the folder."""
    env = _env(tmp_path, FAKE_JOB_RECORD=PREEMPTED)
    # an earlier submission (job 6) ran this task: its run.json and rows are there
    assert _run(script, {**env, "SLURM_JOB_ID": "6", "FAKE_CLAIM": "1"}, tmp_path).returncode == 0
    assert (tmp_path / record).is_file()
    (tmp_path / rows).write_text('{"id": "1"}\n')
    proc = _run(script, {**env, "FAKE_SRUN_TERM": "1"}, tmp_path, "--overwrite")  # job 7, stopped unclaimed
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "requeues").read_text() == "requeue 7\n"
    assert _run(script, {**env, "SLURM_RESTART_COUNT": "1", "FAKE_CLAIM": "1"}, tmp_path,
                "--overwrite").returncode == 0  # fmt: skip
    # job 7's judge-eval has claimed the folder now: a further requeue resumes what it wrote
    assert _run(script, {**env, "SLURM_RESTART_COUNT": "2"}, tmp_path, "--overwrite").returncode == 0
    _, stopped, requeued, requeued_again = _launches(tmp_path)
    assert stopped[-1] == "--overwrite"
    assert requeued[-1] == "--overwrite" and "--no-overwrite" not in requeued
    assert requeued_again[-2:] == ["--overwrite", "--no-overwrite"]


@pytest.mark.parametrize("record", ["", "[]", '{"launch": null}', '{"launch": {"slurm_job_id": 7}}', "{"],
                         ids=["empty", "a-list", "no-launch", "a-number", "cut"])  # fmt: skip
@pytest.mark.parametrize(("script", "folder"), [("eval.sbatch", "ev/shards/0"), ("rank.sbatch", "rank/0/candidate")])
def test_a_run_json_that_names_no_launch_of_this_job_keeps_the_overwrite(tmp_path, record, script, folder):
    """Only a run.json whose launch names this job id (as judge-eval writes it, a string) is a claim; anything else
    in the shard's (the candidate's) folder is not this job's, and a requeue keeps --overwrite."""
    shard = tmp_path / folder
    shard.mkdir(parents=True)
    (shard / "run.json").write_text(record)
    env = _env(tmp_path, SLURM_RESTART_COUNT="1")
    assert _run(script, env, tmp_path, "--overwrite").returncode == 0
    (launch,) = _launches(tmp_path)
    assert launch[-1] == "--overwrite" and "--no-overwrite" not in launch

"""eval.sbatch's wait for a serve.sbatch job (JUDGE_EVAL_ENDPOINT_FILE), run by bash against fake squeue, sacct,
curl and srun that answer what the one-host Slurm 22.05 answered (tests/support/slurm_cluster.py): an ended serve
job stops the wait at once, naming the job and its state, and its endpoint file, if a SIGKILL left one, is never
used. No cluster, no server."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

REPO = Path(__file__).resolve().parents[2]
SERVE_JOB = "4242"
URL = "http://n2:41234/v1"

# squeue: the state in $FAKE_SQUEUE_STATE (one line a call, the last repeated), or an error line and exit 1 when
# the line starts with "error:"; the arguments of each call are kept.
FAKE_SQUEUE = r"""#!/bin/bash
echo "$*" >>"$FAKE_SQUEUE_CALLS"
calls=$(wc -l <"$FAKE_SQUEUE_CALLS")
state=$(sed -n "${calls}p" "$FAKE_SQUEUE_STATE"); [[ -n $state ]] || state=$(tail -n 1 "$FAKE_SQUEUE_STATE")
if [[ $state == error:* ]]; then echo "slurm_load_jobs ${state}" >&2; exit 1; fi
if [[ -n ${FAKE_SQUEUE_WARNING:-} ]]; then echo "$FAKE_SQUEUE_WARNING" >&2; fi
echo "$state"
"""

# curl: the URL (its last argument) kept; the answer is a line of $FAKE_CURL_ANSWERS ("<status> <body>", one a call,
# the last repeated; default 200 with judge-serve's ready body), written as `-w '\n%{http_code}'` writes it.
FAKE_CURL = r"""#!/bin/bash
echo "${@: -1}" >>"$FAKE_CURL_CALLS"
answer="200 {\"status\": \"ready\"}"
if [[ -n ${FAKE_CURL_ANSWERS:-} ]]; then
    calls=$(wc -l <"$FAKE_CURL_CALLS")
    answer=$(sed -n "${calls}p" "$FAKE_CURL_ANSWERS"); [[ -n $answer ]] || answer=$(tail -n 1 "$FAKE_CURL_ANSWERS")
fi
printf '%s\n%s' "${answer#* }" "${answer%% *}"
"""


def _eval_env(tmp_path: Path, squeue_states: list[str], *, sacct: str = "", **extra: str) -> dict[str, str]:
    bin_dir = write_executables(tmp_path / "bin", {
        "squeue": FAKE_SQUEUE,
        "sacct": sacct or 'echo "Slurm accounting storage is disabled" >&2; exit 1\n',
        "curl": FAKE_CURL,
        "srun": 'printf "%s\\n" "$@" >"$FAKE_SRUN_ARGS"\n',
        "judge-eval": "exit 0\n",
        # the poll interval's sleep, recorded; slept for real only with FAKE_SLEEP_REAL set (this folder is PATH's
        # first entry): each test's squeue answers decide when its wait ends, and a budget (JUDGE_EVAL_WAIT_S) a test
        # runs out is 0, spent before the first sleep; one test checks that the wait reported counts the sleeps
        "sleep": 'echo "$*" >>"$FAKE_SLEEPS"\n[[ -z ${FAKE_SLEEP_REAL:-} ]] || PATH=${PATH#*:} exec sleep "$@"\n',
    })
    (tmp_path / "states").write_text("".join(f"{state}\n" for state in squeue_states))
    data = tmp_path / "test.jsonl"
    data.write_text('{"id": 1}\n{"id": 2}\n')
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_SQUEUE_STATE": str(tmp_path / "states"), "FAKE_SQUEUE_CALLS": str(tmp_path / "squeue_calls"),
        "FAKE_CURL_CALLS": str(tmp_path / "curl_calls"), "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"),
        "FAKE_SLEEPS": str(tmp_path / "sleeps"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_ENDPOINT_FILE": str(tmp_path / "endpoints" / f"judge-serve-{SERVE_JOB}.endpoint"),
        "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"), "JUDGE_CACHE_DIR": str(tmp_path / "c"),
        **extra,
    }  # fmt: skip


def _run_eval(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(REPO / "slurm/eval.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=cwd)  # fmt: skip


def _leave_endpoint_file(env: dict[str, str]) -> None:
    """What a serve job SIGKILLed before its EXIT trap leaves behind: its URL."""
    path = Path(env["JUDGE_EVAL_ENDPOINT_FILE"])
    path.parent.mkdir()
    path.write_text(URL + "\n")


@pytest.mark.parametrize("state", ["CANCELLED", "FAILED", "TIMEOUT", "COMPLETED", "NODE_FAIL", "OUT_OF_MEMORY"])
def test_an_ended_serve_job_stops_the_wait_at_once_and_its_left_file_is_not_used(tmp_path, state):
    """The task waited for the endpoint until JUDGE_EVAL_WAIT_S (an hour) after its serve job had ended; and a file
    a SIGKILL left behind names a port another server on that node may hold now, whose /ready answers 200 (the fake
    curl does): the task judged with whatever model that was. Now the first poll ends it, exit 2, naming the job
    and its state, before /ready is asked or anything is judged."""
    env = _eval_env(tmp_path, [state], JUDGE_EVAL_WAIT_S="10")
    _leave_endpoint_file(env)
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"eval.sbatch: serve job {SERVE_JOB} is {state}: it serves no judge ("), proc.stderr
    assert not (tmp_path / "sleeps").exists()  # no poll interval slept
    assert (tmp_path / "squeue_calls").read_text() == f"-h -t all -j {SERVE_JOB} -o %T\n"
    assert not (tmp_path / "curl_calls").exists() and not (tmp_path / "srun_args").exists()


@pytest.mark.parametrize(("sacct", "named"), [
    ("", "is no longer known to squeue: it ended"),  # no accounting (the test cluster): squeue is all there is
    ('echo "CANCELLED by 0"\n', "is no longer known to squeue (sacct: CANCELLED by 0): it ended"),
])  # fmt: skip
def test_a_serve_job_slurm_no_longer_lists_stops_the_wait(tmp_path, sacct, named):
    """Past MinJobAge an ended job is "Invalid job id" to squeue (exit 1): it is not a job that may still start."""
    env = _eval_env(tmp_path, ["error: Invalid job id specified"], sacct=sacct, JUDGE_EVAL_WAIT_S="10")
    _leave_endpoint_file(env)
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"eval.sbatch: serve job {SERVE_JOB} {named} and serves no judge"), proc.stderr
    assert not (tmp_path / "sleeps").exists() and not (tmp_path / "srun_args").exists()


def test_a_pending_serve_job_is_waited_for_and_a_running_one_judged_through(tmp_path):
    """PENDING (the engines' node not yet given) is waited through; once RUNNING with its file written and /ready
    answering, the task judges through the file's URL."""
    env = _eval_env(tmp_path, ["PENDING", "RUNNING"], FAKE_SLEEP_REAL="1")
    _leave_endpoint_file(env)  # a running job's own file
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sleeps").read_text() == "5\n"  # one poll interval, for the PENDING answer
    # whole seconds of the shell's clock ($SECONDS) across that 5 s sleep and the polls: at least 5 (more on a loaded
    # machine, whose fake squeue, grep and sleep each start a process)
    waited = re.search(rf"judge-serve ready at {re.escape(URL)} after (\d+) s \(serve job {SERVE_JOB}\)", proc.stdout)
    assert waited and int(waited[1]) >= 5, proc.stdout
    assert (tmp_path / "curl_calls").read_text() == "http://n2:41234/ready\n"  # asked only once RUNNING
    args = (tmp_path / "srun_args").read_text().splitlines()
    assert args[args.index("--judge") + 1] == URL


def test_a_warning_squeue_prints_beside_the_state_is_not_taken_for_it(tmp_path):
    """squeue may print a warning on stderr and still answer (exit 0): the state is its one-word line."""
    env = _eval_env(tmp_path, ["RUNNING"], FAKE_SQUEUE_WARNING="squeue: error: Invalid user for SlurmUser slurm")
    _leave_endpoint_file(env)  # the running job's own file
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"judge-serve ready at {URL} after 0 s (serve job {SERVE_JOB})" in proc.stdout


def test_a_squeue_failure_is_not_taken_for_an_ended_job(tmp_path):
    """A busy controller (squeue exits 1 with another error) is polled again until JUDGE_EVAL_WAIT_S; the task's
    message then says the state could not be read."""
    env = _eval_env(tmp_path, ["error: Socket timed out on send/recv operation"], JUDGE_EVAL_WAIT_S="0")
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("eval.sbatch: no ready judge-serve at "), proc.stderr
    assert f"serve job {SERVE_JOB} is unknown (squeue failed: slurm_load_jobs error: Socket timed out" in proc.stderr


@pytest.mark.parametrize("name", ["judge.url", "judge-serve-latest.endpoint"])
def test_an_endpoint_file_without_a_job_id_in_its_name_is_refused(tmp_path, name):
    """The job id in the name is what ties the URL to a running job: a file named otherwise is refused at once."""
    env = _eval_env(tmp_path, ["RUNNING"], JUDGE_EVAL_ENDPOINT_FILE=str(tmp_path / name))
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"eval.sbatch: JUDGE_EVAL_ENDPOINT_FILE={tmp_path / name} is not named <job name>-")
    assert not (tmp_path / "squeue_calls").exists()


def test_serve_sbatch_removes_its_earlier_runs_endpoint_file_first(tmp_path):
    """A serve job requeued after a node failure keeps its id: the file its SIGKILLed first run left names a gone
    server while the job is RUNNING again (the state eval tasks trust). The script removes it before anything else,
    here before it stops on a missing JUDGE_MODEL."""
    stale = tmp_path / "endpoints" / "judge-serve-91.endpoint"
    stale.parent.mkdir()
    stale.write_text(URL + "\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "SLURM_JOB_ID": "91", "SLURM_JOB_NAME": "judge-serve", "JUDGE_ENDPOINT_DIR": str(stale.parent),
    }  # fmt: skip
    proc = subprocess.run(["bash", str(REPO / "slurm/serve.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "JUDGE_MODEL is not set" in proc.stderr
    assert not stale.exists()


def test_relative_endpoint_paths_are_the_submit_folders_on_both_sides(tmp_path):
    """`JUDGE_ENDPOINT_DIR=endpoints sbatch --chdir /scratch serve.sbatch`, then `JUDGE_EVAL_ENDPOINT_FILE=
    endpoints/judge-serve-<id>.endpoint sbatch --chdir /scratch eval.sbatch`: each side read its relative path
    against its job's working folder, serve.sbatch's default being the submit folder; as JUDGE_EVAL_DATA and
    JUDGE_EVAL_OUT are, both are now read against the folder sbatch ran in, where the task finds the server."""
    submit_dir, work_dir = tmp_path / "submit", tmp_path / "chdir"
    submit_dir.mkdir()
    work_dir.mkdir()
    (tmp_path / "model").mkdir()
    serve_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "SLURM_JOB_ID": SERVE_JOB, "SLURM_JOB_NAME": "judge-serve", "SLURM_JOB_NODELIST": "localhost",
        "SLURM_SUBMIT_DIR": str(submit_dir), "JUDGE_ENDPOINT_DIR": "endpoints", "JUDGE_PORT": "41234",
        "JUDGE_MODEL": str(tmp_path / "model"), "JUDGE_CACHE_DIR": str(tmp_path / "c"),
        "FAKE_SEEN": str(tmp_path / "seen"),
    }  # fmt: skip
    # srun: the server's step; it copies the endpoint file the job published while it runs
    serve_bin = write_executables(tmp_path / "serve-bin", {"srun": 'cat "$FAKE_WATCHED" >"$FAKE_SEEN"\n',
                                                           "judge-serve": "exit 0\n", "scontrol": 'echo "${@: -1}"\n'})
    published = submit_dir / "endpoints" / f"judge-serve-{SERVE_JOB}.endpoint"
    serve_env.update(PATH=f"{serve_bin}{os.pathsep}{os.environ['PATH']}", FAKE_WATCHED=str(published))
    proc = subprocess.run(["bash", str(REPO / "slurm/serve.sbatch")], env=serve_env, capture_output=True, text=True,
                          timeout=60, cwd=work_dir)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "seen").read_text() == "http://localhost:41234/v1\n"
    assert not (work_dir / "endpoints").exists()

    published.write_text(URL + "\n")  # as while the serve job runs
    env = _eval_env(tmp_path, ["RUNNING"], SLURM_SUBMIT_DIR=str(submit_dir), JUDGE_EVAL_WAIT_S="10",
                    JUDGE_EVAL_ENDPOINT_FILE=f"endpoints/judge-serve-{SERVE_JOB}.endpoint")  # fmt: skip
    proc = _run_eval(env, work_dir)
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "srun_args").read_text().splitlines()
    assert args[args.index("--judge") + 1] == URL


def test_a_serve_job_being_requeued_is_waited_through(tmp_path):
    """A serve job requeued (node failure, preemption, `scontrol requeue`) shows COMPLETING while its processes end,
    then PENDING: the task stopped at COMPLETING (exit 2, "serves no judge"), though the job came back. Now the next
    state decides: here PENDING, then RUNNING with its new file, judged through."""
    env = _eval_env(tmp_path, ["COMPLETING", "PENDING", "RUNNING"])
    _leave_endpoint_file(env)
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sleeps").read_text() == "5\n5\n"  # one interval each for COMPLETING and PENDING
    assert (tmp_path / "curl_calls").read_text() == "http://n2:41234/ready\n"  # asked only once RUNNING


def test_a_serve_job_that_ends_after_completing_still_stops_the_task(tmp_path):
    """COMPLETING on the way to an end (scancel): the next poll reads CANCELLED and stops the task, exit 2."""
    env = _eval_env(tmp_path, ["COMPLETING", "CANCELLED"])
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"eval.sbatch: serve job {SERVE_JOB} is CANCELLED: it serves no judge"), proc.stderr
    assert (tmp_path / "sleeps").read_text() == "5\n" and not (tmp_path / "srun_args").exists()


def test_a_wait_with_a_leading_zero_is_read_as_decimal(tmp_path):
    """JUDGE_EVAL_WAIT_S=090 passed the number check, then bash read 090 as octal ("value too great for base") and
    the task stopped at the first PENDING answer. 90 s now: the PENDING job is waited for."""
    env = _eval_env(tmp_path, ["PENDING", "RUNNING"], JUDGE_EVAL_WAIT_S="090")
    _leave_endpoint_file(env)
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "value too great for base" not in proc.stderr and (tmp_path / "sleeps").read_text() == "5\n"


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("JUDGE_EVAL_DATA", "/nonexistent.jsonl", "JUDGE_EVAL_DATA=/nonexistent.jsonl is not a file"),
    ("JUDGE_EVAL_CONFIG", "/nonexistent.yaml", "JUDGE_EVAL_CONFIG=/nonexistent.yaml is not a file"),
    ("JUDGE_ENV_SCRIPT", "/nonexistent.sh", "JUDGE_ENV_SCRIPT=/nonexistent.sh is not a file"),
])  # fmt: skip
def test_the_inputs_are_checked_before_the_wait_for_the_serve_job(tmp_path, variable, value, message):
    """A mistyped input held every task (and its allocation) through the serve job's start-up, and was reported as a
    serve problem when that job never got ready. It stops the task before squeue is asked."""
    env = _eval_env(tmp_path, ["PENDING"], JUDGE_EVAL_WAIT_S="0", **{variable: value})
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"eval.sbatch: {message}\n"
    assert not (tmp_path / "squeue_calls").exists()


# --- eval.sbatch: what /ready answers decides the wait ----------------------------------------------------------

HOST_NOT_ALLOWED = ('{"error": {"message": "host: \'192.0.2.2\' is not in allowed_hosts", "type": '
                    '"invalid_request_error", "param": null, "code": "host_not_allowed"}}')


def _curl_answers(tmp_path: Path, answers: list[str]) -> str:
    path = tmp_path / "curl_answers"
    path.write_text("".join(f"{answer}\n" for answer in answers))
    return str(path)


def test_a_server_that_refuses_the_task_stops_the_wait_at_once_naming_its_answer(tmp_path):
    """A judge-serve without an API key answers only its own names: published by its NodeAddr, it answered /ready
    with 400 host_not_allowed, which `curl -f` hid; the task polled for JUDGE_EVAL_WAIT_S (an hour) and then
    blamed the serve job's readiness. Now the first such answer stops the task (exit 2), naming the URL, the
    status and the body, before anything is judged."""
    env = _eval_env(tmp_path, ["RUNNING"], JUDGE_EVAL_WAIT_S="3600",
                    FAKE_CURL_ANSWERS=_curl_answers(tmp_path, [f"400 {HOST_NOT_ALLOWED}"]))
    _leave_endpoint_file(env)
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"eval.sbatch: judge-serve at http://n2:41234/ready answered 400: "
                                  f"{HOST_NOT_ALLOWED} (serve job {SERVE_JOB}, "), proc.stderr
    assert "--allowed-hosts" in proc.stderr and "its log says why" not in proc.stderr
    assert not (tmp_path / "sleeps").exists() and not (tmp_path / "srun_args").exists()


@pytest.mark.parametrize("answer", ["503 {\"status\": \"starting\"}", "000 ", "429 {}"])
def test_a_loading_server_is_still_waited_for(tmp_path, answer):
    """What a judge-serve still loading answers (503 from /ready, or no answer before its port is bound; 429 says
    retry) is waited through, and the task judges once /ready answers 200."""
    answers = _curl_answers(tmp_path, [answer, '200 {"status": "ready"}'])
    env = _eval_env(tmp_path, ["RUNNING"], FAKE_CURL_ANSWERS=answers)
    _leave_endpoint_file(env)
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sleeps").read_text() == "5\n"
    assert (tmp_path / "curl_calls").read_text() == "http://n2:41234/ready\n" * 2


def test_the_deadline_message_says_what_ready_last_answered(tmp_path):
    """A server that never gets ready: the message past JUDGE_EVAL_WAIT_S gives /ready's last answer."""
    env = _eval_env(tmp_path, ["RUNNING"], JUDGE_EVAL_WAIT_S="0",
                    FAKE_CURL_ANSWERS=_curl_answers(tmp_path, ['503 {"status": "starting"}']))
    _leave_endpoint_file(env)
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"eval.sbatch: no ready judge-serve at {URL} after 0 s; serve job {SERVE_JOB} is RUNNING; "
                           '/ready last answered 503: {"status": "starting"} (the serve job\'s log says why it is not '
                           "ready)\n")


def test_an_endpoint_file_removed_as_it_is_read_is_the_next_polls_to_judge(tmp_path):
    """The serve job removes its file when it ends: between the task's test of the file and its read, the read
    failed and set -e ended the task, exit 1, with head's bare "cannot open". The next poll now says what became of
    the serve job. (head here removes the file first, as the serve job's EXIT trap would in that moment.)"""
    env = _eval_env(tmp_path, ["RUNNING", "CANCELLED"], JUDGE_EVAL_WAIT_S="10")
    _leave_endpoint_file(env)
    write_executables(tmp_path / "bin", {"head": 'rm -f -- "${@: -1}"\necho "head: cannot open \'${@: -1}\' for '
                                                 'reading: No such file or directory" >&2\nexit 1\n'})
    proc = _run_eval(env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"eval.sbatch: serve job {SERVE_JOB} is CANCELLED: it serves no judge ("), proc.stderr
    assert not (tmp_path / "curl_calls").exists() and not (tmp_path / "srun_args").exists()


def test_an_endpoint_file_the_task_cannot_read_stops_it_naming_why(tmp_path):
    """A file the task may not read (a serve job of another user's umask) ended the task under set -e with head's
    error alone; it now stops at once (exit 2), naming the file and the serve job, before /ready is asked."""
    env = _eval_env(tmp_path, ["RUNNING"], JUDGE_EVAL_WAIT_S="10")
    _leave_endpoint_file(env)
    write_executables(tmp_path / "bin", {"head": 'echo "head: cannot open \'${@: -1}\' for reading: Permission '
                                                 'denied" >&2\nexit 1\n'})
    proc = _run_eval(env, tmp_path)
    endpoint = env["JUDGE_EVAL_ENDPOINT_FILE"]
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"eval.sbatch: cannot read JUDGE_EVAL_ENDPOINT_FILE={endpoint}, serve job {SERVE_JOB}'s "
                           f"URL: head: cannot open '{endpoint}' for reading: Permission denied\n")
    assert not (tmp_path / "curl_calls").exists() and not (tmp_path / "srun_args").exists()

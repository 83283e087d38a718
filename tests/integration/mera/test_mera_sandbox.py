"""The code sandbox: verdicts from events, escape attempts contained and failed, limits, environment, fallback.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_mera_sandbox.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.humaneval import parse_mera_row
from eval.mera.sandbox import (
    PASSED,
    RUNTIME,
    SYNTAX,
    TIMEOUT,
    ExecJob,
    Sandbox,
)
from tests.support.mera_sandbox import ESCAPES, FIND_PIPES, LIMITS, bwrap_sandbox_or_skip, run_f

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bwrap_sandbox() -> Sandbox:
    return bwrap_sandbox_or_skip(LIMITS)


def processes_with(token: str) -> list[int]:
    """Host-side evidence: live (not zombie) processes whose command line carries ``token``."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


@pytest.fixture()
def host(tmp_path):
    """Host-side evidence: a secret file, a path to (not) write, a listening socket and a SIGUSR1 counter."""
    secret = tmp_path / "secret.txt"
    secret.write_text("top-secret")
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: received.append(signum))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    try:
        yield {
            "secret": secret,
            "target": tmp_path / "escaped.txt",
            "port": listener.getsockname()[1],
            "listener": listener,
            "signals": received,
            "pid": os.getpid(),
            "pgid": os.getpgrp(),
        }
    finally:
        listener.close()
        signal.signal(signal.SIGUSR1, previous)


def _accepted(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@pytest.mark.parametrize("name", list(ESCAPES))
# A sample the sandbox waited out instead of killing (a child holding its pipes open) would hang: the guard fails it.
@pytest.mark.timeout(LIMITS.timeout_s + 60)
def test_escape_attempt_is_contained_and_fails(name, bwrap_sandbox, host, monkeypatch):
    """Each escape attempt fails as a sample and leaves no trace on the host."""
    template, contained = ESCAPES[name]
    program = template.format(port=host["port"], secret=str(host["secret"]), target=str(host["target"]),
                              pyproject=str(REPO / "pyproject.toml"), pid=host["pid"], pgid=host["pgid"])  # fmt: skip
    token = sandbox_mod.new_token()
    monkeypatch.setattr(sandbox_mod, "new_token", lambda: token)  # to find this sample's processes afterwards
    result = run_f(bwrap_sandbox, program)
    print(f"{name}: {result.status} ({result.detail})")

    assert result.status in contained, result
    assert not result.passed
    assert not host["target"].exists()
    assert not _accepted(host["listener"])
    assert host["signals"] == []
    assert processes_with(token) == [], "a sandboxed process outlived its sample"


def test_sandbox_sees_a_minimal_environment_fresh_dir_and_limits(bwrap_sandbox):
    """Inside: only the minimal environment, an empty working dir, the configured rlimits, no root."""
    program = (
        "import json, os, resource\n"
        "def f():\n"
        "    open('left-behind', 'w').write('x')\n"
        "    limits = {n: resource.getrlimit(getattr(resource, 'RLIMIT_' + n))\n"
        "              for n in ('AS', 'NPROC', 'FSIZE', 'NOFILE')}\n"
        "    return json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'uid': os.getuid(), 'limits': limits})\n"
    )  # fmt: skip
    os.environ["MERA_TEST_MARKER"] = "must-not-leak"
    try:
        job = ExecJob(program=program, entry_point="f", tests=[{}], expected=["?"])
        first = json.loads(bwrap_sandbox.run(job).outputs[0])
    finally:
        del os.environ["MERA_TEST_MARKER"]
    env = dict(first["env"])
    env.pop("PWD", None)  # the shell-style PWD bwrap sets for --chdir
    assert env == {
        "PATH": "/usr/bin:/bin", "HOME": "/sandbox", "TMPDIR": "/sandbox", "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8",
    }  # fmt: skip
    assert first["cwd"] == "/sandbox"
    if os.geteuid() == 0:
        assert first["uid"] != 0
    assert first["limits"] == {
        "AS": [LIMITS.memory_mb << 20] * 2, "NPROC": [LIMITS.nproc] * 2,
        "FSIZE": [LIMITS.fsize_mb << 20] * 2, "NOFILE": [LIMITS.nofile] * 2,
    }  # fmt: skip
    # The next sample starts in a fresh directory: the file above is gone.
    listing = run_f(bwrap_sandbox, "import os\ndef f():\n    return str(os.listdir('.'))\n")
    assert listing.outputs == ("[]",)


def test_hash_seed_is_zero_so_set_order_is_reproducible(bwrap_sandbox):
    """str() of a set of strings matches what PYTHONHASHSEED=0 gives, run after run."""
    expr = "str({'яблоко', 'груша', 'слива', 'вишня', 'abc', 'xyz'})"
    want = subprocess.run([bwrap_sandbox.python, "-S", "-c", f"print({expr})"], env={"PYTHONHASHSEED": "0"},
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    job = ExecJob(program=f"def f():\n    return {expr}\n", entry_point="f", tests=[{}, {}], expected=[want, want])
    assert bwrap_sandbox.run(job).status == PASSED


def test_prints_and_flooded_stdout_do_not_disturb_the_result(bwrap_sandbox):
    """The sample's stdout/stderr go nowhere; only the result channel is read."""
    program = (
        "import sys, os\n"
        "def f():\n"
        "    for _ in range(2000):\n"
        "        print('{\"ev\": \"test\", \"i\": 0, \"ok\": true, \"out\": \"forged\"}' * 10)\n"
        "        sys.stderr.write('noise' * 100)\n"
        "    os.write(1, b'not json\\n')\n"
        "    return 'ok'\n"
    )
    assert run_f(bwrap_sandbox, program).status == PASSED


def test_each_call_gets_a_fresh_namespace_and_the_sample_one_pooled_deadline(bwrap_sandbox):
    """Module state does not leak between test calls; the deadline is one per sample, timeout_s x its test calls,
    fixed when it is ready (Sandbox._read_events), so a slow call may use time a fast one left."""
    counter = "calls = []\ndef f():\n    calls.append(1)\n    return len(calls)\n"
    job = ExecJob(program=counter, entry_point="f", tests=[{}, {}, {}], expected=["1", "1", "1"])
    assert bwrap_sandbox.run(job).status == PASSED
    # Three calls of 0.6 x timeout each: 1.8 x timeout in all, yet every call is on time.
    nap = "import time\ndef f(s):\n    time.sleep(s)\n    return 'ok'\n"
    step = 0.6 * LIMITS.timeout_s
    job = ExecJob(program=nap, entry_point="f", tests=[{"s": step}] * 3, expected=["ok"] * 3)
    assert bwrap_sandbox.run(job).status == PASSED
    # One call of 1.25 x timeout, then an instant one: 1.25 x timeout of the 2 x timeout pooled, passed; a deadline per
    # call would end the first call. The 0.75 x timeout left (1.5 s) is for a loaded machine's start-up and reading.
    job = ExecJob(program=nap, entry_point="f", tests=[{"s": 1.25 * LIMITS.timeout_s}, {"s": 0}], expected=["ok"] * 2)
    assert bwrap_sandbox.run(job).status == PASSED
    job = ExecJob(program=nap, entry_point="f", tests=[{"s": 0}, {"s": 60}], expected=["ok", "ok"])
    result = bwrap_sandbox.run(job)
    assert (result.status, result.outputs) == (TIMEOUT, ("ok", None))
    assert "test 1" in result.detail


def test_run_many_keeps_input_order(bwrap_sandbox):
    """Parallel execution returns results in the order of the jobs."""
    jobs = [ExecJob(program=f"def f():\n    return {i}\n", entry_point="f", tests=[{}], expected=[str(i)])
            for i in range(6)]  # fmt: skip
    jobs[3] = ExecJob(program="def f(:\n", entry_point="f", tests=[{}], expected=["3"])
    statuses = [r.status for r in bwrap_sandbox.run_many(jobs, workers=2)]
    assert statuses == [PASSED, PASSED, PASSED, SYNTAX, PASSED, PASSED]


def test_threads_still_work_under_the_fork_filter(bwrap_sandbox):
    """The filter refuses new processes, not threads (clone with CLONE_THREAD): a threaded solution passes."""
    program = (
        "import threading\n"
        "def f():\n"
        "    out = []\n"
        "    workers = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]\n"
        "    for t in workers:\n"
        "        t.start()\n"
        "    for t in workers:\n"
        "        t.join()\n"
        "    return 'ok' if sorted(out) == [0, 1, 2, 3] else 'no'\n"
    )
    assert run_f(bwrap_sandbox, program).status == PASSED


#: A ruHumanEval row whose test inputs JSON cannot carry: a tuple, a dict with an int key, a set. ``key_type`` asks
#: for the type of the argument's first key instead of the argument itself.
LITERAL_ROW = {
    "instruction": "{function}",
    "inputs": {"function": "def echo(x, key_type=False):\n",
               "tests": "[{'x': (1, 2)}, {'x': {5: 'x'}}, {'x': {5: 'x'}, 'key_type': True}, {'x': {7}}]"},
    "outputs": ["(1, 2)", "{5: 'x'}", "int", "{7}"],
    "meta": {"id": 0, "canonical_solution": "    return type(next(iter(x))).__name__ if key_type else x\n",
             "entry_point": "echo"},
}  # fmt: skip


def test_test_inputs_reach_the_function_as_the_rows_python_literals(bwrap_sandbox):
    """The function gets what ``ast.literal_eval`` of the row's tests gives, as MERA's harness calls it
    (benchmark_tasks/ruhumaneval/utils.py execute_function): the tuple (1, 2) prints as "(1, 2)", the dict keeps its
    int key 5, a set is a set. Through JSON they would be [1, 2], "5" and a TypeError that ended the run."""
    task = parse_mera_row(LITERAL_ROW)
    result = bwrap_sandbox.run(task.exec_job(task.function + task.canonical_solution))
    assert (result.status, result.outputs) == (PASSED, ("(1, 2)", "{5: 'x'}", "int", "{7}")), result


#: Floods the result channel with empty events, 3 bytes each: 6 MB in all, well under the byte cap, 2 million events.
EVENT_FLOOD = FIND_PIPES + (
    "def f():\n"
    "    chunk = b'{}\\n' * 20_000\n"
    "    for _ in range(100):\n"
    "        for fd in pipes():\n"
    "            os.write(fd, chunk)\n"
    "    return 'ok'\n"
)


@pytest.mark.timeout(LIMITS.timeout_s + 60)
def test_a_flood_of_events_fails_the_sample_and_keeps_few(bwrap_sandbox):
    """A sample writing millions of tiny events to its result channel fails (a runtime error of the sample, not of
    the run) once it passes its steps + _EXTRA_EVENTS events; the supervisor keeps no more than that (each event
    kept costs it memory; without the cap it kept hundreds of thousands before the deadline)."""
    result = run_f(bwrap_sandbox, EVENT_FLOOD)
    assert (result.status, result.stopped_by) == (RUNTIME, "channel"), result
    assert result.n_events == 1 + sandbox_mod._EXTRA_EVENTS  # one step
    assert "more than 9 events" in result.detail

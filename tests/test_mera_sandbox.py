"""The code sandbox: verdicts from events, escape attempts contained and failed, limits, environment, fallback.

Every escape payload defines ``f()`` that returns ``"ok"`` only if its escape worked, so a contained attempt is
a failed sample; each test also checks the host side (no file written, no connection made, no signal received,
no process left behind). Tests that need bubblewrap skip, saying why, when it does not work here.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import (
    PASSED,
    RUNTIME,
    SANDBOX_ERROR,
    SYNTAX,
    TIMEOUT,
    WRONG_ANSWER,
    ExecJob,
    Limits,
    Sandbox,
    SandboxUnavailable,
    outcome_of,
)

REPO = Path(__file__).resolve().parents[1]
LIMITS = Limits(timeout_s=2.0)
TIGHT = Limits(timeout_s=3.0, tmpfs_mb=8, memory_mb=256)


@pytest.fixture(scope="module")
def bwrap_sandbox() -> Sandbox:
    try:
        return Sandbox(LIMITS, isolation="bwrap")
    except SandboxUnavailable as err:
        reason = f"bubblewrap does not work here ({err}); `make system-packages` installs it"
        print(f"SKIPPING sandbox isolation tests: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def tight_sandbox() -> Sandbox:
    """A sandbox with tight limits that still run a sample: 3 s per test, an 8 MiB tmpfs, 256 MiB of memory."""
    try:
        return Sandbox(TIGHT, isolation="bwrap")
    except SandboxUnavailable as err:
        pytest.skip(f"bubblewrap does not work here ({err}); `make system-packages` installs it")


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


def run_f(sandbox: Sandbox, program: str) -> sandbox_mod.ExecResult:
    return sandbox.run(ExecJob(program=program, entry_point="f", tests=[{}], expected=["ok"]))


# ---------------------------------------------------------------------------------------------------------------
# Verdicts from events (pure)
# ---------------------------------------------------------------------------------------------------------------

KW = ExecJob(program="", entry_point="f", tests=[{"x": 1}, {"x": 2}], expected=["1", "2"])
CHECK = ExecJob(program="", entry_point="f", check="def check(c): pass")
READY = {"ev": "ready"}


def test_outcome_of_kwargs_mode():
    """Table of event streams for kwargs jobs and the status they give; the first failing test decides."""
    t0 = {"ev": "test", "i": 0, "ok": True, "out": "1"}
    t1 = {"ev": "test", "i": 1, "ok": True, "out": "2"}
    bad1 = {"ev": "test", "i": 1, "ok": True, "out": "3"}
    err0 = {"ev": "test", "i": 0, "ok": False, "kind": "runtime", "exc": "ZeroDivisionError", "msg": "division"}
    done = {"ev": "done"}
    rows = [
        ([READY, t0, t1, done], {}, PASSED, ("1", "2")),
        ([READY, t0, t1], {}, PASSED, ("1", "2")),  # every test reported: a missing "done" does not matter
        ([READY, t0, bad1, done], {}, WRONG_ANSWER, ("1", "3")),
        ([READY, err0, bad1, done], {}, RUNTIME, (None, "3")),
        ([READY, t0], {"timed_out": True}, TIMEOUT, ("1", None)),
        ([READY, t0], {}, RUNTIME, ("1", None)),  # exited early (os._exit): not a pass
        ([READY, {"ev": "error", "kind": "syntax", "exc": "SyntaxError", "msg": "x"}, done], {}, SYNTAX, (None, None)),
        ([READY, t0, {**t1, "truncated": True}], {}, WRONG_ANSWER, ("1", "2")),
        ([READY, t0, t1], {"channel_error": "not JSON"}, RUNTIME, (None, None)),
        ([], {"timed_out": True}, SANDBOX_ERROR, (None, None)),
        ([], {}, SANDBOX_ERROR, (None, None)),
    ]
    for events, kwargs, status, outputs in rows:
        got = outcome_of(events, KW, **kwargs)
        assert (got[0], got[2]) == (status, outputs), (events, kwargs, got)


def test_outcome_of_check_mode():
    """Check jobs: check() returning passes, an AssertionError is a wrong answer, silence is a timeout or crash."""
    rows = [
        ([READY, {"ev": "check", "ok": True}], {}, PASSED),
        ([READY, {"ev": "check", "ok": False, "kind": "wrong_answer", "exc": "AssertionError", "msg": ""}], {},
         WRONG_ANSWER),
        ([READY, {"ev": "check", "ok": False, "kind": "runtime", "exc": "TypeError", "msg": ""}], {}, RUNTIME),
        ([READY, {"ev": "check", "ok": False, "kind": "made-up"}], {}, RUNTIME),
        ([READY], {"timed_out": True}, TIMEOUT),
        ([READY], {}, RUNTIME),
    ]  # fmt: skip
    for events, kwargs, status in rows:
        assert outcome_of(events, CHECK, **kwargs)[0] == status, events


def test_exec_job_needs_one_mode():
    """A job is either kwargs tests with one expected string each, or a check function."""
    with pytest.raises(ValueError):
        ExecJob(program="", entry_point="f")
    with pytest.raises(ValueError):
        ExecJob(program="", entry_point="f", tests=[{}], expected=["a", "b"])
    with pytest.raises(ValueError):
        ExecJob(program="", entry_point="f", tests=[{}], expected=["a"], check="def check(c): pass")


# ---------------------------------------------------------------------------------------------------------------
# Escape attempts
# ---------------------------------------------------------------------------------------------------------------

#: A second copy of the builtin ``posix`` module, with none of the guard's replacements.
IMP_POSIX = (
    "import _imp, sys\n"
    "def fresh_posix():\n"
    "    p = _imp.create_builtin(sys.modules['posix'].__spec__)\n"
    "    _imp.exec_builtin(p)\n"
    "    return p\n"
)
UNBLOCK_CTYPES = 'import sys\nfor _m in ("ctypes", "_ctypes"):\n    sys.modules.pop(_m, None)\nimport ctypes\n'


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


ESCAPES = {
    # name: (program template, statuses that count as contained)
    "network to the host's loopback": (
        "import socket\ndef f():\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    s.sendall(b'escaped')\n    return 'ok'\n", {RUNTIME}),
    "network to the internet": (
        "import socket\ndef f():\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    return 'ok'\n",
        {RUNTIME}),
    "name resolution": (
        "import socket\ndef f():\n    socket.getaddrinfo('pypi.org', 443)\n    return 'ok'\n", {RUNTIME}),
    "read a file outside the sandbox": (
        "def f():\n    return 'ok' if open({secret!r}).read() == 'top-secret' else 'no'\n", {RUNTIME}),
    "read /etc/passwd": (
        "def f():\n    return 'ok' if 'root:' in open('/etc/passwd').read() else 'no'\n", {RUNTIME}),
    "read the project": (
        "def f():\n    return 'ok' if open({pyproject!r}).read() else 'no'\n", {RUNTIME}),
    "list home folders": (
        "import os\ndef f():\n    return 'ok' if os.listdir('/root') or os.listdir('/home') else 'no'\n", {RUNTIME}),
    "write outside the sandbox": (
        "def f():\n    open({target!r}, 'w').write('escaped')\n    return 'ok'\n", {RUNTIME}),
    "write into /usr": (
        "def f():\n    open('/usr/escaped', 'w').write('escaped')\n    return 'ok'\n", {RUNTIME}),
    "write into /": (
        "def f():\n    open('/escaped', 'w').write('escaped')\n    return 'ok'\n", {RUNTIME}),
    "fork bomb": (
        "import os\ndef f():\n    while True:\n        os.fork()\n", {RUNTIME}),
    "fork bomb through ctypes": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    libc = ctypes.CDLL(None)\n    while True:\n        libc.fork()\n", {TIMEOUT}),
    "memory bomb": (
        "def f():\n    x = bytearray(64 << 30)\n    return 'ok'\n", {RUNTIME}),
    "memory bomb, growing": (
        "def f():\n    hoard = []\n    while True:\n        hoard.append(bytearray(64 << 20))\n", {RUNTIME, TIMEOUT}),
    "infinite loop": (
        "def f():\n    while True:\n        pass\n", {TIMEOUT}),
    "os.system": (
        "import os\ndef f():\n    return 'ok' if os.system('touch {target}') == 0 else 'no'\n", {RUNTIME}),
    "posix.system": (
        "import posix\ndef f():\n    return 'ok' if posix.system('touch {target}') == 0 else 'no'\n", {RUNTIME}),
    "system() through ctypes": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    rc = ctypes.CDLL(None).system(b'touch {target} && test -e {target}')\n"
        "    return 'ok' if rc == 0 else 'no'\n", {WRONG_ANSWER}),
    "subprocess": (
        "def f():\n    import subprocess\n    subprocess.run(['touch', {target!r}], check=True)\n    return 'ok'\n",
        {RUNTIME}),
    "ctypes": (
        "def f():\n    import ctypes\n    ctypes.string_at(0)\n    return 'ok'\n", {RUNTIME}),
    "ctypes segfault past the guard": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    ctypes.string_at(0)\n    return 'ok'\n", {RUNTIME}),
    "signal the parent": (
        "import os, signal\ndef f():\n    os.kill({pid}, signal.SIGUSR1)\n    return 'ok'\n", {RUNTIME}),
    "signal the parent's group": (
        "import os, signal\ndef f():\n    os.killpg({pgid}, signal.SIGUSR1)\n    return 'ok'\n", {RUNTIME}),
    "signal the parent through ctypes": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    libc = ctypes.CDLL(None)\n"
        "    return 'ok' if libc.kill({pid}, 10) == 0 or libc.kill(-1, 10) == 0 else 'no'\n", {WRONG_ANSWER}),
    "exit before reporting": (
        "import os\ndef f():\n    os._exit(0)\n", {RUNTIME}),
    # The guard replaces os.fork and posix.fork, but a fresh copy of the builtin `posix`
    # module made through `_imp` has the real fork; only the kernel (seccomp) refuses it.
    "fork through a posix module re-created by _imp": (
        IMP_POSIX + "def f():\n    p = fresh_posix()\n    pid = p.fork()\n    if pid == 0:\n        p._exit(0)\n"
        "    p.waitpid(pid, 0)\n    return 'ok'\n", {RUNTIME}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escape_attempt_is_contained_and_fails(name, bwrap_sandbox, host, monkeypatch):
    """Each escape attempt fails as a sample and leaves no trace on the host."""
    template, contained = ESCAPES[name]
    program = template.format(port=host["port"], secret=str(host["secret"]), target=str(host["target"]),
                              pyproject=str(REPO / "pyproject.toml"), pid=host["pid"], pgid=host["pgid"])  # fmt: skip
    token = sandbox_mod.new_token()
    monkeypatch.setattr(sandbox_mod, "new_token", lambda: token)  # to find this sample's processes afterwards
    started = time.monotonic()
    result = run_f(bwrap_sandbox, program)
    elapsed = time.monotonic() - started
    print(f"{name}: {result.status} ({result.detail}) in {elapsed:.2f} s")

    assert result.status in contained, result
    assert not result.passed
    assert elapsed < LIMITS.timeout_s + 10  # killed on time, not waited out
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


def test_each_call_gets_a_fresh_namespace_and_its_own_timeout(bwrap_sandbox):
    """Module state does not leak between test calls; the timeout is per call, not per sample."""
    counter = "calls = []\ndef f():\n    calls.append(1)\n    return len(calls)\n"
    job = ExecJob(program=counter, entry_point="f", tests=[{}, {}, {}], expected=["1", "1", "1"])
    assert bwrap_sandbox.run(job).status == PASSED
    # Three calls of 0.6 x timeout each: 1.8 x timeout in all, yet every call is on time.
    nap = "import time\ndef f(s):\n    time.sleep(s)\n    return 'ok'\n"
    step = 0.6 * LIMITS.timeout_s
    job = ExecJob(program=nap, entry_point="f", tests=[{"s": step}] * 3, expected=["ok"] * 3)
    assert bwrap_sandbox.run(job).status == PASSED
    job = ExecJob(program=nap, entry_point="f", tests=[{"s": 0}, {"s": 60}], expected=["ok", "ok"])
    result = bwrap_sandbox.run(job)
    assert (result.status, result.outputs) == (TIMEOUT, ("ok", None))
    assert "test 1" in result.detail


def test_without_bubblewrap_it_warns_loudly_and_still_runs(monkeypatch, caplog, sandbox_user):
    """No bwrap: 'auto' falls back with a loud warning, 'bwrap' refuses; samples still run with rlimits and no fork."""
    monkeypatch.setattr(sandbox_mod, "find_bwrap", lambda: None)
    with pytest.raises(SandboxUnavailable, match="not installed"):
        Sandbox(LIMITS, isolation="bwrap")
    with caplog.at_level(logging.WARNING, logger="eval.mera.sandbox"):
        fallback = Sandbox(LIMITS, isolation="auto")
    assert fallback.isolation == "none"
    assert "WITHOUT BUBBLEWRAP" in caplog.text and "NO network or filesystem isolation" in caplog.text
    good = ExecJob(program="def f(a, b):\n    return a + b\n", entry_point="f", tests=[{"a": 1, "b": 2}],
                   expected=["3"])  # fmt: skip
    assert fallback.run(good).status == PASSED
    assert run_f(fallback, "def f():\n    while True:\n        pass\n").status == TIMEOUT
    assert run_f(fallback, "import os\ndef f():\n    os.system('true')\n    return 'ok'\n").status == RUNTIME
    imp_fork = ESCAPES["fork through a posix module re-created by _imp"][0]
    assert run_f(fallback, imp_fork).status == RUNTIME  # refused by the kernel without bubblewrap too
    assert fallback.describe()["isolation"] == "none"


def test_run_many_keeps_input_order(bwrap_sandbox):
    """Parallel execution returns results in the order of the jobs."""
    jobs = [ExecJob(program=f"def f():\n    return {i}\n", entry_point="f", tests=[{}], expected=[str(i)])
            for i in range(6)]  # fmt: skip
    jobs[3] = ExecJob(program="def f(:\n", entry_point="f", tests=[{}], expected=["3"])
    statuses = [r.status for r in bwrap_sandbox.run_many(jobs, workers=2)]
    assert statuses == [PASSED, PASSED, PASSED, SYNTAX, PASSED, PASSED]


def test_the_child_runs_on_the_standard_library_alone():
    """sandbox_child.py imports nothing outside the standard library (the sandbox has no site-packages)."""
    import ast

    tree = ast.parse(Path(sandbox_mod.__file__).with_name("sandbox_child.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}  # fmt: skip
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= set(sys.stdlib_module_names)


# ---------------------------------------------------------------------------------------------------------------
# Limits a sample cannot stretch
# ---------------------------------------------------------------------------------------------------------------

#: Writes a fake event to every pipe it holds (the result channel among them) twice a second for 12 s, then
#: answers: under a deadline that restarts on each event it would run to the end and passed.
FORGED_EVENTS = (
    "import os, stat, time\n"
    "def is_pipe(fd):\n"
    "    try:\n"
    "        return stat.S_ISFIFO(os.fstat(fd).st_mode)\n"
    "    except OSError:\n"  # the descriptor listdir itself used, closed by now
    "        return False\n"
    "def f():\n"
    "    pipes = [int(fd) for fd in os.listdir('/proc/self/fd') if int(fd) > 2 and is_pipe(int(fd))]\n"
    "    assert pipes, 'no result pipe found'\n"
    "    for _ in range(24):\n"
    "        for fd in pipes:\n"
    "            os.write(fd, b'{\"ev\": \"ready\"}\\n{\"ev\": \"heartbeat\"}\\n')\n"
    "        time.sleep(0.5)\n"
    "    return 'ok'\n"
)


def test_fake_events_on_the_result_pipe_do_not_extend_the_deadline(tight_sandbox):
    """A sleeping sample that writes fake events to its result pipe is stopped by the sample's fixed deadline."""
    result = run_f(tight_sandbox, FORGED_EVENTS)
    assert (result.status, result.stopped_by, result.outputs) == (TIMEOUT, "deadline", (None,)), result


def test_dev_is_a_tmpfs_of_tmpfs_mb(tight_sandbox):
    """/dev is a tmpfs of ``tmpfs_mb`` (8 MiB here), not one capped at half of the host's RAM."""
    program = (
        "def f():\n"
        "    written = 0\n"
        "    for i in range(64):\n"  # up to 64 x 4 MiB = 256 MiB, files under RLIMIT_FSIZE (16 MiB)
        "        try:\n"
        "            with open(f'/dev/shm/fill-{i}', 'wb') as out:\n"
        "                out.write(b'x' * (4 << 20))\n"
        "        except OSError:\n"
        "            break\n"
        "        written += 4\n"
        "    return str(written)\n"
    )
    result = run_f(tight_sandbox, program)
    assert result.outputs[0] is not None and int(result.outputs[0]) <= TIGHT.tmpfs_mb, result


def test_processes_cannot_pool_memory_past_one_budget(tight_sandbox):
    """Two forked children holding 200 MiB each would exceed the 256 MiB budget: the kernel refuses the fork."""
    program = IMP_POSIX + (
        "def f():\n"
        "    p = fresh_posix()\n"
        "    r, w = p.pipe()\n"
        "    for _ in range(2):\n"
        "        if p.fork() == 0:\n"
        "            hoard = b'x' * (200 << 20)\n"
        "            p.write(w, b'1')\n"
        "            p._exit(0)\n"
        "    held = sum(len(p.read(r, 1)) for _ in range(2))\n"
        "    return 'ok' if held == 2 else 'no'\n"
    )
    result = run_f(tight_sandbox, program)
    assert result.status == RUNTIME and "Operation not permitted" in result.detail, result


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

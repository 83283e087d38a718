"""The code sandbox: verdicts from events, escape attempts contained and failed, limits, environment, fallback.

Every escape payload defines ``f()`` that returns ``"ok"`` only if its escape worked, so a contained attempt is
a failed sample; each test also checks the host side (no file written, no connection made, no signal received,
no process left behind). Tests that need bubblewrap skip, saying why, when it does not work here.

The tests of this subject that start heavy components are in tests/integration/mera/test_mera_sandbox.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

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
from tests.support.deep_json import nested_arrays
from tests.support.mera_sandbox import ESCAPES, FIND_PIPES, IMP_POSIX, LIMITS, bwrap_sandbox_or_skip, run_f


TIGHT = Limits(timeout_s=3.0, tmpfs_mb=8, memory_mb=256)


@pytest.fixture(scope="module")
def tight_sandbox() -> Sandbox:
    """A sandbox with tight limits that still run a sample: 3 s per test, an 8 MiB tmpfs, 256 MiB of memory."""
    return bwrap_sandbox_or_skip(TIGHT)


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


def test_outcome_of_ignores_test_events_whose_index_is_not_an_int_in_range():
    """The sample can write to its channel: a "test" event whose "i" is a list (unhashable), a bool (True would stand
    for test 1), a float, a string or out of range is ignored, never a crash of the supervisor."""
    t0 = {"ev": "test", "i": 0, "ok": True, "out": "1"}
    t1 = {"ev": "test", "i": 1, "ok": True, "out": "2"}
    forged = [{"ev": "test", "i": i, "ok": True, "out": "2"} for i in ([1], {"i": 1}, True, 1.0, "1", 2, -1)]
    assert outcome_of([READY, *forged, t0, t1], KW) == (PASSED, "", ("1", "2"), (1, 1))
    assert outcome_of([READY, t0, *forged], KW) == (RUNTIME, "the process exited before test 1 finished", ("1", None),
                                                    (1, None))  # fmt: skip


@pytest.mark.parametrize(("exit_status", "status", "detail"), [
    # RLIMIT_CPU: soft == hard, so the kernel sends SIGKILL at the limit (SIGXCPU where the soft limit is lower).
    (-signal.SIGKILL, TIMEOUT, "test 1 did not finish: the process was killed by SIGKILL, as at its CPU-time limit"),
    (-signal.SIGXCPU, TIMEOUT, "test 1 did not finish: the process was killed by SIGXCPU, as at its CPU-time limit"),
    (3, RUNTIME, "the process exited before test 1 finished (exit 3)"),
    (0, RUNTIME, "the process exited before test 1 finished (exit 0)"),
    (-signal.SIGSEGV, RUNTIME, "the process exited before test 1 finished (killed by SIGSEGV)"),
    (None, RUNTIME, "the process exited before test 1 finished"),  # killed by the supervisor: no status of its own
])  # fmt: skip
def test_a_sample_that_ends_early_says_how_and_a_cpu_limit_kill_is_a_timeout(exit_status, status, detail):
    """A sample that ended before its last test read "runtime", "the process exited before test 1 finished", whatever
    ended it: a kill at its CPU-time limit (its busy threads outran the wall deadline) is a timeout, and any other end
    names its exit code or signal."""
    t0 = {"ev": "test", "i": 0, "ok": True, "out": "1"}
    assert outcome_of([READY, t0], KW, exit_status=exit_status)[:2] == (status, detail)
    check = outcome_of([READY], CHECK, exit_status=exit_status)[:2]
    assert check == (status, detail.replace("test 1", "check()"))


@pytest.mark.parametrize("isolation", ["none", "bwrap"])
def test_a_sample_at_its_cpu_limit_times_out_and_one_that_exits_names_its_code(sandbox_user, isolation):
    """Run for real: a busy loop under a CPU-time limit of 1 s (the wall deadline 5 s) is a timeout, not a
    runtime error with no reason; ``os._exit(3)`` is a runtime error naming exit 3 (bubblewrap passes on the code)."""
    limits = Limits(timeout_s=5.0, cpu_s=1)
    sandbox = bwrap_sandbox_or_skip(limits) if isolation == "bwrap" else Sandbox(limits, isolation="none")
    busy = sandbox.run(ExecJob(program="def f():\n    while True:\n        pass\n", entry_point="f", tests=[{}],
                               expected=["1"]))  # fmt: skip
    assert (busy.status, busy.stopped_by) == (TIMEOUT, "") and "CPU-time limit" in busy.detail, busy
    exits = sandbox.run(ExecJob(program="import os\ndef f():\n    os._exit(3)\n", entry_point="f", tests=[{}],
                                expected=["1"]))  # fmt: skip
    assert (exits.status, exits.detail) == (RUNTIME, "the process exited before test 0 finished (exit 3)")


#: Sixteen tests of 0.125 s each: 2 s in all, under 16 x 0.5 s (per-test) and over 0.5 s + 1 (harness). The sleep is
#: the sample's own running time, measured against the sandbox's wall-clock deadline, not a wait for another event.
#: It never ends early, so the harness's timeout cannot be lost to a fast machine; a loaded one can only eat the
#: per-test side's margin (6 s), which more, shorter tests widen at no cost in time.
SLOW_TIMEOUT_S = 0.5
SLOW_TESTS = ExecJob(program="import time\ndef f(x):\n    time.sleep(0.125)\n    return x\n", entry_point="f",
                     tests=[{"x": i} for i in range(1, 17)], expected=[str(i) for i in range(1, 17)])  # fmt: skip


def test_the_harness_deadline_is_one_timeout_plus_one_for_the_whole_sample(sandbox_user):
    """A sample of sixteen slow tests passes under the per-test deadline (timeout_s x 16 = 8 s for 2 s of work) and
    is a timeout under MERA's harness's (timeout_s + 1 = 1.5 s for the whole sample: MERA-Evaluation/MERA
    ``benchmark_tasks/ruhumaneval/utils.py`` ``check_correctness``); a check()-mode sample's budget is one step."""
    per_test = Sandbox(Limits(timeout_s=SLOW_TIMEOUT_S), isolation="none").run(SLOW_TESTS)
    assert (per_test.status, per_test.outputs) == (PASSED, tuple(SLOW_TESTS.expected)), per_test
    harness = Sandbox(Limits(timeout_s=SLOW_TIMEOUT_S, deadline="harness"), isolation="none").run(SLOW_TESTS)
    assert (harness.status, harness.stopped_by, harness.outputs[-1]) == (TIMEOUT, "deadline", None), harness
    assert [Limits(timeout_s=2.0, deadline=d).sample_seconds(n) for d in ("per-test", "harness") for n in (1, 3)] \
        == [2.0, 6.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="deadline must be one of per-test, harness, got 'harnes'"):
        Limits(deadline="harnes")


#: Module-level data of 96 MiB, a third of ``MODULE_DATA_LIMITS.memory_mb``: one copy fits, every test's copy at once
#: (six tests) does not. ``bytearray`` asks calloc for it, so the address space is reserved and never touched.
MODULE_DATA_LIMITS = Limits(timeout_s=5.0, memory_mb=320)
MODULE_DATA_PROGRAMS = {
    "a table at the module level": "BIG = bytearray(96 << 20)\n\ndef f(x):\n    return x\n",
    "a class attribute (a class is a cycle of its own)": "class K:\n    BIG = bytearray(96 << 20)\n\n"
                                                         "def f(x):\n    return x\n",
}


@pytest.mark.parametrize("deadline", ["per-test", "harness"])
@pytest.mark.parametrize("program", list(MODULE_DATA_PROGRAMS.values()), ids=list(MODULE_DATA_PROGRAMS))
def test_memory_mb_holds_one_run_of_the_module_level_whatever_the_number_of_tests(sandbox_user, program, deadline):
    """A program whose module level holds a third of memory_mb passes six tests: each function it defines keeps its
    namespace alive through a cycle, and a test's namespace left to the cyclic collector (which a program of few
    objects never starts) would hold every test's copy at once, a MemoryError by the third test. No bubblewrap needed:
    the limit is the child's own RLIMIT_AS."""
    job = ExecJob(program=program, entry_point="f", tests=[{"x": i} for i in range(6)],
                  expected=[str(i) for i in range(6)])  # fmt: skip
    result = Sandbox(dataclasses.replace(MODULE_DATA_LIMITS, deadline=deadline), isolation="none").run(job)
    assert (result.status, result.detail) == (PASSED, ""), result


#: A program that counts, in ``builtins`` (shared by every namespace of the process), how many times its module level
#: ran, and in a module-level list how many calls its function had.
COUNTING = ExecJob(
    program="import builtins\nbuiltins.module_runs = getattr(builtins, 'module_runs', 0) + 1\ncalls = []\n\n"
            "def f(x):\n    calls.append(x)\n    return (builtins.module_runs, len(calls))\n",
    entry_point="f", tests=[{"x": i} for i in range(3)], expected=["(1, 1)", "(1, 2)", "(1, 3)"],
)  # fmt: skip


def test_the_harness_deadline_runs_the_program_once_and_calls_it_per_test(sandbox_user):
    """Under ``harness`` the module level runs once and each test calls the function, as MERA's harness does
    (MERA-Evaluation/MERA ``benchmark_tasks/ruhumaneval/utils.py`` ``unsafe_execute``: one ``exec``, then a call per
    test), so top-level work is paid once in the sample's one deadline and state carries over between calls; under
    ``per-test`` each test runs the program again in a fresh namespace."""
    harness = Sandbox(Limits(deadline="harness"), isolation="none").run(COUNTING)
    assert (harness.status, harness.outputs) == (PASSED, ("(1, 1)", "(1, 2)", "(1, 3)")), harness
    per_test = Sandbox(Limits(), isolation="none").run(COUNTING)
    assert (per_test.status, per_test.outputs) == (WRONG_ANSWER, ("(1, 1)", "(2, 1)", "(3, 1)")), per_test


def test_under_the_harness_deadline_a_program_that_fails_to_run_fails_every_test(sandbox_user):
    """A module level that raises fails each test with its exception (the harness records ``None`` for every call);
    a missing entry point fails each call, as ``locals()[entry_point]`` raises there."""
    sandbox = Sandbox(Limits(deadline="harness"), isolation="none")
    raising = sandbox.run(ExecJob(program="1 / 0\ndef f():\n    return 1\n", entry_point="f", tests=[{}, {}],
                                  expected=["1", "1"]))  # fmt: skip
    assert (raising.status, raising.detail, raising.outputs) == \
        (RUNTIME, "test 0: ZeroDivisionError: division by zero", (None, None)), raising
    missing = sandbox.run(ExecJob(program="def g():\n    return 1\n", entry_point="f", tests=[{}], expected=["1"]))
    assert (missing.status, missing.detail) == (RUNTIME, "test 0: KeyError: 'f'"), missing


def test_outputs_are_compared_whole_and_kept_as_a_prefix_with_their_length():
    """A long result is compared whole, then only its first STORED_OUTPUT_CHARS characters are kept, with its length;
    the length the child counted is kept where it cut the output (max_output_chars), and only there."""
    assert sandbox_mod.STORED_OUTPUT_CHARS == 1000
    long = ExecJob(program="", entry_point="f", tests=[{}, {}], expected=["я" * 5000, "x" * 10])
    whole = {"ev": "test", "i": 0, "ok": True, "out": "я" * 5000, "chars": 5000}
    assert outcome_of([READY, whole, {"ev": "test", "i": 1, "ok": True, "out": "x" * 10, "chars": 7}], long) == (
        PASSED, "", ("я" * 1000, "x" * 10), (5000, 10))  # a count the child did not need to give is not taken
    cut = {"ev": "test", "i": 1, "ok": True, "out": "x" * 10, "chars": 10**6, "truncated": True}
    assert outcome_of([READY, whole, cut], long) == (
        WRONG_ANSWER, f"test 1: expected {'x' * 10!r}, got {'x' * 10!r}", ("я" * 1000, "x" * 10), (5000, 10**6))
    wrong = {"ev": "test", "i": 0, "ok": True, "out": "я" * 4999 + "ю", "chars": 5000}
    status, detail, outputs, chars = outcome_of([READY, wrong, cut], long)
    assert (status, outputs, chars) == (WRONG_ANSWER, ("я" * 1000, "x" * 10), (5000, 10**6))
    assert detail == f"test 0: expected {'я' * 5000!r}, got {'я' * 4999 + 'ю'!r}"[:117] + "..."


def read_channel(data: bytes, limits: Limits = LIMITS, n_steps: int = 1) -> tuple[tuple[str, str | None], list]:
    """``Sandbox._read_events`` over a pipe carrying ``data`` (written by a thread, then closed)."""
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb") as pipe, contextlib.suppress(BrokenPipeError):
            pipe.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    proc = SimpleNamespace(stdout=os.fdopen(read_end, "rb"))
    events: list = []
    try:
        got = Sandbox._read_events(SimpleNamespace(limits=limits), proc, events, n_steps)
    finally:
        proc.stdout.close()  # a writer still blocked on a full pipe gets EPIPE
        writer.join()
    return got, events


def test_a_line_nested_too_deep_or_too_long_fails_the_sample_not_the_supervisor():
    """Valid JSON nested deeper than json.loads can read raises RecursionError (no ValueError): a channel error of
    the sample. A line longer than any event the child writes is refused before it is parsed, ended or not."""
    deep = nested_arrays(100_000).encode()
    got, events = read_channel(b'{"ev": "ready"}\n' + deep + b"\n")
    assert (got, events) == (("channel", f"JSON nested too deep to read: {deep[:80]!r}"), [READY])
    small = Limits(max_output_chars=10)
    most = 12 * 10 + (64 << 10)
    assert sandbox_mod._max_line_bytes(small) == most == 65656
    for data in (b"x" * 70_000, b'{"ev": "ready"}\n' + b"x" * 70_000 + b"\n"):
        got, _ = read_channel(data, small)
        assert got == ("channel", f"a line of more than {most} bytes: {b'x' * 80!r}"), data[:20]
    event = {"ev": "test", "i": 0, "ok": True, "out": "\U0001f600" * 10, "chars": 10, "exc": "E" * 6000}
    line = json.dumps(event).encode()  # the child's ensure_ascii JSON: 12 bytes a character outside the BMP
    assert read_channel(line + b"\n", small) == (("", None), [event])


def test_exec_job_needs_one_mode():
    """A job is either kwargs tests with one expected string each, or a check function."""
    with pytest.raises(ValueError):
        ExecJob(program="", entry_point="f")
    with pytest.raises(ValueError):
        ExecJob(program="", entry_point="f", tests=[{}], expected=["a", "b"])
    with pytest.raises(ValueError):
        ExecJob(program="", entry_point="f", tests=[{}], expected=["a"], check="def check(c): pass")


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

#: Writes fake events to every pipe it holds (the result channel among them) every 2.5 s for 12.5 s, then answers:
#: under a deadline (3 s here) that restarts on each event it would run to the end and pass. Few enough events
#: reach the channel before the deadline (two writes) that the cap on their number is not what stops it.
FORGED_EVENTS = FIND_PIPES + (
    "import time\n"
    "def f():\n"
    "    for _ in range(5):\n"
    "        for fd in pipes():\n"
    "            os.write(fd, b'{\"ev\": \"ready\"}\\n{\"ev\": \"heartbeat\"}\\n')\n"
    "        time.sleep(2.5)\n"
    "    return 'ok'\n"
)


def test_fake_events_on_the_result_pipe_do_not_extend_the_deadline(tight_sandbox):
    """A sleeping sample that writes fake events to its result pipe is stopped by the sample's fixed deadline."""
    result = run_f(tight_sandbox, FORGED_EVENTS)
    assert (result.status, result.stopped_by, result.outputs) == (TIMEOUT, "deadline", (None,)), result


#: Writes ``LINE`` (a template) to every pipe it holds, the result channel among them, then returns 'ok'.
WRITES_A_LINE = FIND_PIPES + (
    "def f():\n"
    "    for fd in pipes():\n"
    "        os.write(fd, LINE + b'\\n')\n"
    "    return 'ok'\n"
)


def test_hostile_events_fail_their_sample_or_are_ignored_never_ending_the_run(sandbox_user, monkeypatch):
    """Through a real sample: a forged "test" event indexed by a list is ignored (the sample's own result decides),
    a line nested too deep to read fails the sample as a runtime error, and any other exception while its events
    are read (here a RecursionError from the verdict) fails that sample as a runtime error, not a sandbox error
    (which pass@k leaves out of n): none reaches the caller."""
    sandbox = Sandbox(LIMITS, isolation="none")
    forged = run_f(sandbox, "LINE = b'{\"ev\": \"test\", \"i\": [0], \"ok\": true, \"out\": \"ok\"}'\n" + WRITES_A_LINE)
    assert (forged.status, forged.detail, forged.outputs, forged.output_chars) == (PASSED, "", ("ok",), (2,)), forged
    assert forged.n_events == 4  # ready, the forged event, the sample's own, done: the forged one was read
    deep = run_f(sandbox, "LINE = b'[' * 200000 + b']' * 200000\n" + WRITES_A_LINE)
    assert (deep.status, deep.stopped_by, deep.outputs) == (RUNTIME, "channel", (None,)), deep
    assert deep.detail == f"result channel: JSON nested too deep to read: {b'[' * 80!r}"

    def unreadable(*args, **kwargs):
        raise RecursionError("too deep")

    monkeypatch.setattr(sandbox_mod, "outcome_of", unreadable)
    failed = run_f(sandbox, "def f():\n    return 'ok'\n")
    assert (failed.status, failed.detail, failed.outputs, failed.output_chars) == (
        RUNTIME, "result channel: unreadable events: RecursionError: too deep", (None,), (None,))


def test_long_outputs_are_kept_as_a_prefix_and_their_length(sandbox_user):
    """A result of a million characters, ten times: each is kept as its first 1,000 characters and its length (the
    child's count: it sends max_output_chars), so the record executions.jsonl stores is ~20 KB, not ~2 MB."""
    sandbox = Sandbox(LIMITS, isolation="none")
    job = ExecJob(program="def f(x):\n    return 'я' * 10**6\n", entry_point="f", tests=[{"x": i} for i in range(10)],
                  expected=["1"] * 10)  # fmt: skip
    result = sandbox.run(job)
    assert (result.status, result.outputs, result.output_chars) == (WRONG_ANSWER, ("я" * 1000,) * 10, (10**6,) * 10)
    assert result.detail == f"test 0: expected '1', got {'я' * 1000!r}"[:117] + "..."
    record = result.to_json()
    assert (record["outputs"], record["output_chars"]) == (["я" * 1000] * 10, [10**6] * 10)


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


#: Fills memfds of 1 MiB chunks (each under RLIMIT_FSIZE, 16 MiB), 40 of them; returns the MiB they hold.
MEMFDS = (
    "import os\n"
    "def f():\n"
    "    fds = []\n"
    "    for i in range(40):\n"
    "        fd = os.memfd_create(f'm{i}')\n"
    "        for _ in range(16):\n"
    "            try:\n"
    "                os.write(fd, b'x' * (1 << 20))\n"
    "            except OSError:\n"
    "                break\n"
    "        fds.append(fd)\n"
    "    return str(sum(os.fstat(fd).st_size for fd in fds) >> 20)\n"
)


def test_memfds_cannot_hold_memory_outside_the_budget(tight_sandbox, sandbox_user):
    """memfd pages are shared memory, outside RLIMIT_AS: a sample under a 256 MiB budget held 880 MiB in them. The
    filter refuses memfd_create (EPERM), under bubblewrap and without it."""
    for sandbox in (tight_sandbox, Sandbox(TIGHT, isolation="none")):
        result = run_f(sandbox, MEMFDS)
        assert (result.status, result.detail) == (
            RUNTIME, "test 0: PermissionError: [Errno 1] Operation not permitted"), (sandbox.isolation, result)


def _filter_verdict(program: bytes, arch: int, nr: int, arg0: int = 0) -> tuple[str, int]:
    """Run a classic-BPF seccomp program on one call (``struct seccomp_data``: nr, arch, ip, args, little-endian), as
    the kernel does: ``("allow", 0)``, ``("errno", n)`` or ``("kill", 0)``."""
    import struct

    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    insns = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            (acc,), pc = struct.unpack_from("<I", data, k), pc + 1
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET, each with a constant
            taken = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # BPF_RET
            action = k & 0xFFFF0000
            return {0x7FFF0000: ("allow", 0), 0x00050000: ("errno", k & 0xFFFF)}.get(action, ("kill", 0))
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


@pytest.mark.parametrize("machine, arch, numbers", [
    # shmget, msgget, semget, prctl, clone, memfd_create, unshare, setns, getpid (asm/unistd_64.h;
    # asm-generic/unistd.h for aarch64)
    ("x86_64", 0xC000003E, (29, 68, 64, 157, 56, 319, 272, 308, 39)),
    ("aarch64", 0xC00000B7, (194, 186, 190, 167, 220, 279, 97, 268, 172)),
])  # fmt: skip
def test_the_fork_filter_refuses_system_v_memory_and_clearing_the_death_signal(machine, arch, numbers):
    """Read as the kernel reads it, on both machines: shmget, msgget, semget, unshare and setns (nested user
    namespaces, which bubblewrap before 0.8 cannot refuse) and prctl(PR_SET_PDEATHSIG) (option 1, also with high bits
    the kernel's int drops) fail with EPERM (1); other prctl options, threads and other calls pass."""
    shmget, msgget, semget, prctl, clone, memfd_create, unshare, setns, getpid = numbers
    program = sandbox_mod.fork_filter(machine)
    assert _filter_verdict(program, arch, unshare) == ("errno", 1)
    assert _filter_verdict(program, arch, setns) == ("errno", 1)
    assert _filter_verdict(program, arch, shmget) == ("errno", 1)
    assert _filter_verdict(program, arch, msgget) == ("errno", 1)
    assert _filter_verdict(program, arch, semget) == ("errno", 1)
    assert _filter_verdict(program, arch, memfd_create) == ("errno", 1)
    assert _filter_verdict(program, arch, prctl, 1) == ("errno", 1)
    assert _filter_verdict(program, arch, prctl, (1 << 32) | 1) == ("errno", 1)
    for option in (2, 15, 22, 38):  # PR_GET_PDEATHSIG, PR_SET_NAME, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS
        assert _filter_verdict(program, arch, prctl, option) == ("allow", 0)
    assert _filter_verdict(program, arch, clone, 0x00010000 | 0x100) == ("allow", 0)  # CLONE_THREAD | CLONE_VM
    assert _filter_verdict(program, arch, clone, 0x11) == ("errno", 1)  # SIGCHLD: a new process
    assert _filter_verdict(program, arch, getpid) == ("allow", 0)
    assert _filter_verdict(program, 0x40000003, getpid) == ("kill", 0)  # another architecture (i386)


#: A sample's way back to ctypes past the in-process import guard (it drops the modules and imports them again): the
#: kernel's filter, not the guard, is what the tests below test.
CTYPES_AGAIN = (
    "import sys\n"
    "for _m in ('ctypes', '_ctypes'):\n"
    "    sys.modules.pop(_m, None)\n"
)


#: Asks for a System V shared memory segment (1 MiB), a message queue and a set of 32,000 semaphores (about 2 MiB of
#: kernel memory), each removed at once if the kernel grants it (a test run on a filter that allows them leaves none
#: behind: semctl's IPC_RMID takes the set and a semaphore number, 0); returns each call's result and errno.
SYSV_IPC = (
    CTYPES_AGAIN +
    "import ctypes\n"
    "def f():\n"
    "    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    ipc_private, ipc_creat, ipc_rmid = 0, 0o1000, 0\n"
    "    said = []\n"
    "    calls = ((libc.shmget, lambda i: libc.shmctl(i, ipc_rmid, None), [ctypes.c_size_t(1 << 20)]),\n"
    "             (libc.msgget, lambda i: libc.msgctl(i, ipc_rmid, None), []),\n"
    "             (libc.semget, lambda i: libc.semctl(i, 0, ipc_rmid), [32000]))\n"
    "    for get, remove, size in calls:\n"
    "        ctypes.set_errno(0)\n"
    "        made = get(ipc_private, *size, ipc_creat | 0o600)\n"
    "        said += [made, ctypes.get_errno()]\n"
    "        if made >= 0:\n"
    "            remove(made)\n"
    "    return ' '.join(map(str, said))\n"
)


def test_system_v_shared_memory_queues_and_semaphores_are_refused(tight_sandbox, sandbox_user):
    """A System V segment keeps its pages outside RLIMIT_AS (768 MiB held under a 256 MiB budget), a semaphore set its
    kernel memory (300 sets of 32,000: 615 MiB) and, without bubblewrap's IPC namespace, each outlives the sample:
    shmget, msgget and semget fail with EPERM (errno 1) in both modes."""
    for sandbox in (tight_sandbox, Sandbox(TIGHT, isolation="none")):
        result = run_f(sandbox, SYSV_IPC)
        assert result.outputs == ("-1 1 -1 1 -1 1",), (sandbox.isolation, result)


#: Opens a POSIX message queue (the C library's default size: 10 messages of 8 KiB), unlinked at once if the kernel
#: grants it; returns the call's result, its errno and the sample's RLIMIT_MSGQUEUE.
POSIX_MQ = (
    CTYPES_AGAIN +
    "import ctypes, os, resource\n"
    "def f():\n"
    "    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    name = b'/mera-sandbox-test-%d' % os.getpid()\n"
    "    ctypes.set_errno(0)\n"
    "    made = libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)\n"
    "    said = [made, ctypes.get_errno(), *resource.getrlimit(resource.RLIMIT_MSGQUEUE)]\n"
    "    if made >= 0:\n"
    "        libc.mq_close(made)\n"
    "        libc.mq_unlink(name)\n"
    "    return ' '.join(map(str, said))\n"
)


def test_posix_message_queues_are_refused_by_a_zero_rlimit(tight_sandbox, sandbox_user):
    """A POSIX message queue is kernel memory outside RLIMIT_AS (800 KiB a user by default) and, without bubblewrap's
    IPC namespace, outlives the sample: RLIMIT_MSGQUEUE is 0, soft and hard, so mq_open fails with EMFILE (24, the
    kernel's answer past that limit) in both modes."""
    for sandbox in (tight_sandbox, Sandbox(TIGHT, isolation="none")):
        result = run_f(sandbox, POSIX_MQ)
        assert result.outputs == ("-1 24 0 0",), (sandbox.isolation, result)


def test_a_sample_cannot_clear_its_death_signal(tight_sandbox, sandbox_user):
    """PR_SET_PDEATHSIG kills a sample when its supervisor dies; prctl(PR_SET_PDEATHSIG, 0) would undo it, so the
    filter refuses option 1 with EPERM in both modes. Another option (PR_GET_PDEATHSIG, 2) still answers: SIGKILL."""
    program = (
        CTYPES_AGAIN +
        "import ctypes\n"
        "def f():\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    zero, sig = ctypes.c_ulong(0), ctypes.c_int(-1)\n"
        "    ctypes.set_errno(0)\n"
        "    cleared = libc.prctl(1, zero, zero, zero, zero)\n"
        "    said = [cleared, ctypes.get_errno()]\n"
        "    said.append(libc.prctl(2, ctypes.byref(sig), zero, zero, zero))\n"
        "    return ' '.join(map(str, said + [sig.value]))\n"
    )
    for sandbox in (tight_sandbox, Sandbox(TIGHT, isolation="none")):
        result = run_f(sandbox, program)
        assert result.outputs == ("-1 1 0 9",), (sandbox.isolation, result)


def test_a_child_that_fails_before_starting_the_sample_says_why(sandbox_user):
    """The child pointed its stderr at /dev/null before its set-up, so a failure there (here test inputs it cannot
    parse) read "the sandbox exited before starting the sample (exit 1): " and nothing more. It now reports the
    exception (a "fatal" event) and its traceback reaches the stderr tail."""
    sandbox = Sandbox(LIMITS, isolation="none")
    job = ExecJob(program="def f():\n    return 'ok'\n", entry_point="f", tests=[{}], expected=["ok"])
    object.__setattr__(job, "tests_text", "[{")  # what no tests_as_literal gives: the child's literal_eval fails
    result = sandbox.run(job)
    assert result.status == SANDBOX_ERROR
    said = ("the sandbox failed before starting the sample: SyntaxError: '{' was never closed (<unknown>, line 1) "
            "(exit 1): Traceback")
    assert result.detail.startswith(said), result.detail
    assert result.detail.endswith("SyntaxError: '{' was never closed"), result.detail
    assert outcome_of([{"ev": "fatal", "exc": "OSError", "msg": "[Errno 1] prctl(PR_SET_SECCOMP)"}], KW)[:2] == (
        SANDBOX_ERROR, "the sandbox failed before starting the sample: OSError: [Errno 1] prctl(PR_SET_SECCOMP)")
    # once the sample runs ("ready" came first), a "fatal" it writes is no sandbox error
    assert outcome_of([READY, {"ev": "fatal", "exc": "E", "msg": "m"}], KW)[0] == RUNTIME


def test_a_sandbox_whose_probe_fails_where_bubblewrap_runs_fails_its_tests(tight_sandbox):
    """The escape tests skip only where bubblewrap cannot run at all: a sandbox broken in this project (here its child
    interpreter cannot start) fails them instead of turning them into skips."""
    with pytest.raises(pytest.fail.Exception, match="bubblewrap runs here, but the sandbox's own probe failed"):
        bwrap_sandbox_or_skip(TIGHT, python="/bin/false")



# ---------------------------------------------------------------------------------------------------------------
# The interpreter a sample runs on
# ---------------------------------------------------------------------------------------------------------------


def test_min_python_is_pyprojects_requires_python():
    """The sandbox's oldest interpreter is the project's own lower bound, read from pyproject.toml here."""
    import re
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    bound = re.fullmatch(r">=\s*(\d+)\.(\d+)", pyproject["project"]["requires-python"].strip())
    assert bound and tuple(int(part) for part in bound.groups()) == sandbox_mod.MIN_PYTHON


def test_an_interpreter_older_than_the_project_is_refused_naming_it(monkeypatch):
    """A sandbox interpreter too old for current code (a system 3.8 fails `def f(xs: list[int])` as the model's
    runtime error) is refused, naming its path and both versions, never used silently; a different patch is fine."""
    monkeypatch.setattr(sandbox_mod, "interpreter_version", lambda python: (3, 8, 18))
    with pytest.raises(SandboxUnavailable, match=r"is Python 3\.8\.18, older than Python 3\.11") as err:
        Sandbox(LIMITS, isolation="none", python=sys.executable)
    assert str(Path(sys.executable).resolve()) in str(err.value)

    # As root: the interpreter nobody can reach is chosen by version too, and an old one is refused, not skipped
    # for a silent run as root.
    versions = {"/venv/python3.11": (3, 11, 7), "/usr/bin/python3.8": (3, 8, 18)}
    monkeypatch.setattr(sandbox_mod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox_mod, "_interpreter_candidates", lambda: list(versions))
    monkeypatch.setattr(sandbox_mod, "_reachable_by_others", lambda path: path.startswith("/usr/"))
    monkeypatch.setattr(sandbox_mod, "interpreter_version", versions.__getitem__)
    with pytest.raises(SandboxUnavailable, match=r"/usr/bin/python3\.8 is Python 3\.8\.18, older than Python 3\.11"):
        sandbox_mod.choose_identity()
    versions["/usr/bin/python3.8"] = (3, 11, 0)  # another patch of the same minor version
    assert sandbox_mod.choose_identity()[:2] == ("/usr/bin/python3.8", sandbox_mod.NOBODY)
    # None reachable: it stays root, and its note says what still holds (the seccomp filter refuses new processes).
    monkeypatch.setattr(sandbox_mod, "_reachable_by_others", lambda path: False)
    python, uid, note = sandbox_mod.choose_identity()
    assert (python, uid) == ("/venv/python3.11", None)
    assert "seccomp filter" in note and "fork bomb is bounded only by the timeout" not in note


def test_the_run_record_names_the_interpreters_version():
    """describe() (run.json's sandbox) says which Python the samples ran on, its version included."""
    sandbox = Sandbox(LIMITS, isolation="none")
    described = sandbox.describe()
    assert described["python"] == sandbox.python
    assert described["python_version"] == ".".join(map(str, sandbox_mod.interpreter_version(sandbox.python)))
    assert tuple(int(p) for p in described["python_version"].split(".")[:2]) >= sandbox_mod.MIN_PYTHON
    assert "fork bomb is bounded only by the timeout" not in described["identity"]



def test_a_sample_the_os_refuses_to_start_is_a_counted_sandbox_error(monkeypatch, sandbox_user):
    """Popen failing (EAGAIN: the machine could make no process) is the sandbox's own failure: that sample is a
    sandbox_error, retried once, and the others still run; it never ends the run in a traceback that loses every
    result so far."""
    box = Sandbox(LIMITS, isolation="none")
    real_popen = sandbox_mod.subprocess.Popen
    refusals = []

    def popen(argv, **kwargs):
        if "return 2" in Path(argv[4]).read_text():  # the job file: the refused sample's
            refusals.append(argv)
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_popen(argv, **kwargs)

    monkeypatch.setattr(sandbox_mod.subprocess, "Popen", popen)
    good = ExecJob(program="def f():\n    return 1\n", entry_point="f", tests=[{}, {}], expected=["1", "1"])
    refused = ExecJob(program="def f():\n    return 2\n", entry_point="f", tests=[{}, {}], expected=["2", "2"])
    results = box.run_many([good, refused, good], workers=1)
    assert [r.status for r in results] == [PASSED, SANDBOX_ERROR, PASSED]
    assert "Resource temporarily unavailable" in results[1].detail
    assert results[1].outputs == (None, None) and results[1].output_chars == (None, None)
    assert len(refusals) == 2  # retried once, as every sandbox_error is


def test_a_probe_the_os_refuses_to_start_is_a_clear_error_not_a_fall_back(monkeypatch):
    """The OS refusing to start bubblewrap's probe (no memfd, no process) says so (exit 1 in the command) rather than
    ending in a traceback, and never falls back to running samples without isolation as if bubblewrap were missing."""
    monkeypatch.setattr(sandbox_mod, "find_bwrap", lambda: "/usr/bin/bwrap")

    def refused(self, job):
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(Sandbox, "_run_bwrap", refused)
    for isolation in ("auto", "bwrap"):
        with pytest.raises(SandboxUnavailable, match="probe could not start: BlockingIOError"):
            Sandbox(LIMITS, isolation=isolation)

"""Run untrusted model-written Python, one process per sample, and say whether it passed.

Layers, outermost first (each one assumes the ones inside it can be bypassed):

1. **bubblewrap** (``bwrap --unshare-all``): new user, pid, network, ipc, uts and cgroup namespaces; no network at
   all; a read-only view of only ``/usr`` (plus the interpreter's own prefix when it lives elsewhere), a fresh
   ``/proc``, a ``/dev`` of its own (a tmpfs of ``tmpfs_mb`` holding only null, zero, full, random and urandom:
   bubblewrap's ``--dev`` cannot be sized and takes half of the host's RAM), the root itself read-only, and a
   tmpfs ``/sandbox`` of ``tmpfs_mb`` as the working directory. The host's home folders, ``/etc``, ``/tmp`` and the
   project do not exist inside (a checkout, working directory or home folder under ``/usr`` is covered by an empty
   read-only tmpfs: ``covered_usr_folders``). When the pid namespace's first process dies, the kernel kills
   everything in it. bubblewrap 0.5.0 or later (``BWRAP_MIN_VERSION``); an option the installed one lacks is left
   out (``bwrap_features``): before 0.8.0 ``--disable-userns`` (layer 2 refuses a nested user namespace anyway),
   before 0.7.0 or when bwrap is setuid ``--size``, and the two tmpfs then have no size bound of their own (the
   kernel's default, half of the RAM each, until the deadline), which a warning and ``describe`` say.
2. **No second process, refused by the kernel.** A seccomp filter (``fork_filter``; loaded by bubblewrap's
   ``--seccomp`` before the interpreter starts, or by the child itself through ``prctl`` without bubblewrap)
   makes ``fork``, ``vfork`` and ``clone`` without ``CLONE_THREAD`` fail with EPERM (``clone3``, whose flags a
   filter cannot read, with ENOSYS, so the C library falls back to ``clone``). Threads still work. So a sample is
   one process, and its ``RLIMIT_AS`` is the memory budget of everything it runs: a process-count limit of 1,
   which also makes a cgroup unnecessary (the cgroups here are v1 and not delegated). The filter also refuses
   ``memfd_create``, ``shmget``, ``msgget`` and ``semget`` (memory outside ``RLIMIT_AS``), ``unshare`` and
   ``setns`` (no namespace of its own) and ``prctl(PR_SET_PDEATHSIG)`` (a sample stays bound to die with its
   supervisor).
3. **An unprivileged user.** Run as root, the sandbox drops to ``nobody`` (65534) before starting bwrap, so
   ``RLIMIT_NPROC`` (which bounds the sample's threads: ``Limits.nproc``) is enforced. The interpreter is then one
   ``nobody`` can run (often the system's), never one older than the project's own lower bound (``MIN_PYTHON``),
   and its version is recorded with the run (``Sandbox.describe``).
4. **rlimits**, set by the trusted child before it runs the sample, soft == hard: address space, CPU seconds,
   processes (threads), file size, open files, and 0 bytes of POSIX message queues (a queue is kernel memory
   outside the address space and, without bubblewrap's IPC namespace, outlives the sample). A sample the CPU-seconds
   limit kills is a timeout, as one past its deadline is (``outcome_of``'s ``exit_status``).
5. **One wall-clock deadline per sample**, fixed when the child reports it is ready (``timeout_s`` per test call,
   times the number of calls; or MERA's harness's ``timeout_s + 1`` for the whole sample, whose program then runs
   once: ``Limits.deadline``) and
   never moved: nothing the sample writes to its result pipe extends it. Past it,
   when the sample is done, or at once when the run is interrupted (``StopSignal``), its process tree is killed through ``judge.plumbing.processes`` (``kill_descendants``,
   then SIGKILL to its session's process group).
6. **A minimal environment** (``PYTHONHASHSEED=0`` so ``str()`` of sets and dicts is reproducible) and a guard
   that makes ``os.system``, ``os.fork``, ``os.kill``, ``subprocess`` and ``ctypes`` raise, so an attempt is a
   failure of the sample with a clear message. The guard is no boundary: the sample shares the guard's process and
   undoes it (``del sys.modules['posix']; import posix`` gives the real ``posix.kill`` back); layer 2 is what
   actually stops a fork, layer 1 what keeps a kill, a read or a write inside.

Test inputs go in as the ``repr`` of their keyword-argument dicts, read back inside with ``ast.literal_eval``
(``tests_as_literal``): a tuple stays a tuple, an int key an int, a set a set, as MERA's harness passes them.
Results come back as JSON lines over a pipe (see ``sandbox_child.py``), one event per test call and a few more, their
bytes and their number capped, and are compared in this process; nothing is unpickled. The expected outputs never
enter the sandbox. Limitation: the sample shares its process with the child that reports on it, so code that knows
the expected answers could forge a passing report (for HumanEval-style ``check()`` tasks the verdict is computed
inside). This protects the machine, not the score, against a model that is adversarial on purpose.

Without bubblewrap (``isolation="none"``, or ``"auto"`` where bubblewrap does not work) the same code runs with
layers 2-6 only, and a loud warning says what that leaves open (and, where bubblewrap is too old, the version found
and the one needed): the sample reads and writes what its user can (the data file with the expected outputs
included, so it can forge a pass), and signals that user's processes. It dies with its supervisor
(``PR_SET_PDEATHSIG``, as ``--die-with-parent`` makes it under bubblewrap; the filter keeps it from clearing it).
Started by root it is ``nobody``; started by anyone else it is that user, so its home folder and the environment of
its other processes (a shell that exported an API key) are open to it; the supervisor's own environment is not
(``hide_own_environment``).
``"auto"`` still falls back, as ``make demo`` on a machine without bubblewrap needs, but only where bubblewrap is
missing, too old, or refuses to run by itself (its own ``bwrap:`` message); a probe that missed ``startup_s`` twice
(a loaded machine) or whose child failed raises ``SandboxUnavailable``, naming ``--sandbox none`` as the explicit
choice. ``"bwrap"`` never falls back.

Why one module of ~1,520 lines: it is one security boundary, and each layer above is written against the others'
weaknesses (the filter bubblewrap loads, the options each bubblewrap version accepts, the identity the namespaces
map, the limits the run loop enforces), so a change to one is read against the rest. Only the child's side, which
runs inside, is apart (``sandbox_child.py``).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import logging
import math
import os
import errno
import functools
import platform
import re
import secrets
import selectors
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from judge.plumbing.processes import kill_descendants

logger = logging.getLogger(__name__)

#: Outcome of one sample. The four failure kinds are the usual code-execution error breakdown; ``sandbox_error`` means the
#: sandbox itself never started the sample (an infrastructure fault, never the model's).
PASSED, SYNTAX, RUNTIME, TIMEOUT, WRONG_ANSWER, SANDBOX_ERROR = (
    "passed", "syntax", "runtime", "timeout", "wrong_answer", "sandbox_error",
)  # fmt: skip
STATUSES = (PASSED, SYNTAX, RUNTIME, TIMEOUT, WRONG_ANSWER, SANDBOX_ERROR)
#: How a sample's one deadline is sized (``Limits.deadline``): ``per-test``, ``timeout_s`` per test call, each call
#: running the program again in a fresh namespace (a slow sample with many tests still passes), or ``harness``, MERA's
#: ``timeout_s + 1`` for the whole sample, whose program runs once and is called for each test (MERA-Evaluation/MERA
#: ``benchmark_tasks/ruhumaneval/utils.py`` ``check_correctness``: the sample's process is joined with
#: ``timeout + 1``; ``unsafe_execute``: one ``exec``, then a call per test).
DEADLINES = ("per-test", "harness")

NOBODY = 65534
_CHILD_SOURCE = Path(__file__).with_name("sandbox_child.py")
_SANDBOX_DIR = "/sandbox"  # working directory inside bwrap
_SUPPORT_DIR = "/.mera"  # where the child program and the job file are mounted read-only inside bwrap
_MAX_CHANNEL_BYTES = 32 << 20  # a sample that floods the result pipe past this is killed
#: Events a sample's channel may carry beyond one per step: the child's own (ready, a syntax error, done) and spare
#: room. Past that the sample is writing to the channel itself; and the byte cap alone would let it send ten million
#: ``{}`` lines, each kept by the supervisor as a dict (hundreds of MiB of its memory per sample).
_EXTRA_EVENTS = 8
#: Characters of each test's ``str()`` result an ``ExecResult`` keeps (and executions.jsonl stores), after the whole
#: result (up to ``Limits.max_output_chars``) has been compared: enough to read what a wrong answer was, while a run's
#: results stay small in memory and on disk (``output_chars`` says how long each one was).
STORED_OUTPUT_CHARS = 1000
#: Bytes of one result-pipe line beyond the longest event the child writes: its JSON escapes a character in at most
#: 12 bytes (a character outside the BMP is a surrogate pair, ``\ud83d\ude00``), so an event is at most
#: ``12 x max_output_chars`` plus its other fields (an exception's message, cut to 500 characters, and its type's name).
_LINE_SLACK_BYTES = 64 << 10
#: Longest text of a job's test inputs (``tests_as_literal``), characters: far above a code task's test inputs, so
#: that a malformed data file cannot make the parsing in the parent or in the child unbounded work.
MAX_TESTS_CHARS = 1 << 20


def _max_line_bytes(limits: Limits) -> int:
    """The longest line the result pipe may carry: the longest event the child writes (``_LINE_SLACK_BYTES``)."""
    return 12 * limits.max_output_chars + _LINE_SLACK_BYTES


class SandboxUnavailable(RuntimeError):
    """bubblewrap isolation was required but does not work here."""


def tests_as_literal(tests: Sequence[Any]) -> str:
    """The text that carries kwargs tests into the sandbox: ``repr`` of the list, read back with ``ast.literal_eval``.

    Not JSON: MERA's harness calls the function on ``ast.literal_eval(doc["inputs"]["tests"])`` itself
    (``MERA-Evaluation/MERA`` ``benchmark_tasks/ruhumaneval/utils.py``, ``execute_function``), and JSON would turn a
    tuple into a list and an int key into a string, and refuse a set, so ``str()`` of a result would differ.

    Raises:
        ValueError: a test that is not a dict with str keys (keyword arguments), text longer than
            ``MAX_TESTS_CHARS``, or a value that ``repr`` does not give back (``inf``, ``nan``, an object).
    """
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not all(isinstance(key, str) for key in test):
            raise ValueError(f"test {i} is not a dict of keyword arguments (str keys): {_short(repr(test), 80)}")
    text = repr(list(tests))
    if len(text) > MAX_TESTS_CHARS:
        raise ValueError(f"the tests take {len(text)} characters, more than the limit of {MAX_TESTS_CHARS}")
    try:
        back = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as err:
        if isinstance(err, RecursionError) or "too many nested parentheses" in str(err):
            # a JSON list of lists nested deeper than Python's parser reads (its own limit, far below JSON's): the
            # cause first, not a guess at inf or nan
            raise ValueError(f"the tests nest too deeply for Python's parser to read them back, as the sandbox "
                             f"must ({_short(str(err) or type(err).__name__, 80)})") from None
        raise ValueError(f"the tests are not Python literals that repr() gives back (inf, nan, an object?): "
                         f"{_short(str(err), 80)}") from None  # fmt: skip
    if back != list(tests):
        raise ValueError("the tests are not Python literals that repr() gives back")
    return text


@dataclasses.dataclass(frozen=True)
class Limits:
    """Resource limits for one sample.

    Attributes:
        timeout_s: Wall seconds for each test call (kwargs tasks) or for ``check()`` (HumanEval tasks), compiling
            and running the module body included. A sample gets ``timeout_s`` x its number of calls in all, as one
            deadline fixed when it is ready (a slow call may use time a quick one left); under ``deadline``
            ``harness``, ``timeout_s + 1`` in all (``sample_seconds``), the module body run once before the first
            call.
        deadline: One of ``DEADLINES``: ``per-test`` (the default, a deviation from MERA's harness: each test runs
            the program again in a fresh namespace) or ``harness`` (the program runs once, then each test calls it).
        startup_s: Wall seconds for the sandbox and interpreter to start (generous: the machine is shared).
        memory_mb: Address-space limit (RLIMIT_AS), MiB.
        cpu_s: CPU-seconds limit (RLIMIT_CPU); ``None`` derives it from the sample's deadline (``sample_seconds``).
        nproc: RLIMIT_NPROC for the sandbox user: a sample runs at most ``nproc`` threads, its main one included
            (new processes are refused outright by the seccomp filter). Under bubblewrap each sample is alone in a
            user namespace of its own and has the whole budget; without it the samples running at once (and
            anything else of that user) share it. Not enforced for root (``choose_identity``). Each thread costs
            its stack (8 MiB) of ``memory_mb``: the child shares one malloc arena among them, where glibc reserved
            64 MiB more per thread and 1 GiB ran out at 14 threads.
        fsize_mb: Largest file the sample may write (RLIMIT_FSIZE), MiB.
        nofile: Open files (RLIMIT_NOFILE).
        tmpfs_mb: Size of each of the two writable tmpfs under bubblewrap, ``/sandbox`` and ``/dev``, MiB; not
            applied by a bubblewrap older than 0.7.0 or setuid, which cannot size a tmpfs (``BwrapFeatures``).
        max_output_chars: ``str()`` of a result is cut to this many characters inside (and then fails to match);
            what is compared is this, what is kept afterwards only its first ``STORED_OUTPUT_CHARS``.
    """

    timeout_s: float = 3.0
    deadline: str = "per-test"
    startup_s: float = 15.0
    memory_mb: int = 1024
    cpu_s: int | None = None
    nproc: int = 32
    fsize_mb: int = 16
    nofile: int = 64
    tmpfs_mb: int = 64
    max_output_chars: int = 100_000

    def __post_init__(self) -> None:
        if self.deadline not in DEADLINES:
            raise ValueError(f"deadline must be one of {', '.join(DEADLINES)}, got {self.deadline!r}")

    def sample_seconds(self, n_steps: int) -> float:
        """Wall seconds a sample of ``n_steps`` test calls gets, from the moment it is ready: ``timeout_s`` x
        ``n_steps`` (``per-test``), or ``timeout_s + 1`` whatever its number of tests (``harness``)."""
        return self.timeout_s + 1 if self.deadline == "harness" else self.timeout_s * n_steps


@dataclasses.dataclass(frozen=True)
class ExecJob:
    """One sample to run: a complete program and how to test it.

    Exactly one of the two modes is used:

    * kwargs mode (MERA): ``tests`` is a list of keyword-argument dicts; ``expected[i]`` is the string that
      ``str(entry_point(**tests[i]))`` must equal. Each call gets a fresh namespace, except under
      ``Limits.deadline`` ``harness``, where the program runs once for all of them. The tests travel as
      ``tests_text`` (``tests_as_literal``), checked here.
    * check mode (OpenAI HumanEval): ``check`` is the source of ``def check(candidate): ...``; the sample passes
      when ``check(entry_point)`` returns.
    """

    program: str
    entry_point: str
    tests: Sequence[dict[str, Any]] | None = None
    expected: Sequence[str] | None = None
    check: str | None = None
    tests_text: str | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.check is None) == (self.tests is None):
            raise ValueError("ExecJob needs exactly one of `tests` (with `expected`) or `check`")
        if self.tests is not None and (self.expected is None or len(self.expected) != len(self.tests)):
            raise ValueError("ExecJob: `expected` must have one string per test")
        if self.tests is not None:
            object.__setattr__(self, "tests_text", tests_as_literal(self.tests))

    @property
    def n_steps(self) -> int:
        return 1 if self.check is not None else len(self.tests or ())


@dataclasses.dataclass(frozen=True)
class ExecResult:
    """What happened to one sample.

    Attributes:
        status: One of ``STATUSES``.
        detail: A short human-readable reason (empty when passed).
        outputs: kwargs mode: the first ``STORED_OUTPUT_CHARS`` characters of ``str()`` of each result as reported
            (``None`` where the call failed or never ran); the verdict was reached on the whole of it.
        output_chars: kwargs mode: the length of each of those results, in characters (``None`` as in ``outputs``);
            one above ``STORED_OUTPUT_CHARS`` says its output was cut.
        duration_s: Wall seconds, sandbox start-up included.
        stopped_by: Why the supervisor stopped reading: ``""`` (the sample finished or exited), ``"deadline"``
            (the sample's fixed deadline passed), ``"startup"`` (not ready within ``startup_s``),
            ``"channel"`` (its result pipe carried something that is not an event, too many bytes or too many
            events) or ``"interrupted"`` (the run was stopped: ``Sandbox.run_many``, which discards the result).
        n_events: Events the supervisor kept from the result pipe: at most the job's steps + ``_EXTRA_EVENTS``.
    """

    status: str
    detail: str = ""
    outputs: tuple[str | None, ...] = ()
    duration_s: float = 0.0
    stopped_by: str = ""
    n_events: int = 0
    output_chars: tuple[int | None, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"outputs": list(self.outputs), "output_chars": list(self.output_chars)}


# ---------------------------------------------------------------------------------------------------------------
# Verdict from events (pure)
# ---------------------------------------------------------------------------------------------------------------


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def outcome_of(
    events: Sequence[dict[str, Any]],
    job: ExecJob,
    *,
    timed_out: bool = False,
    channel_error: str | None = None,
    exit_status: int | None = None,
) -> tuple[str, str, tuple[str | None, ...], tuple[int | None, ...]]:
    """Turn the child's events into a status; the first failing step decides.

    Only ``test`` events whose ``i`` is an int naming one of the job's tests count (the sample can write to the
    channel: any other is ignored). Outputs are compared whole, then cut to ``STORED_OUTPUT_CHARS``.

    Args:
        events: Parsed JSON events in arrival order.
        job: The job they answer (its ``expected`` strings are compared here, never in the sandbox).
        timed_out: The parent killed the process for missing a deadline.
        channel_error: The result channel was unusable (not JSON, too large); the sample fails as a runtime error.
        exit_status: How the process ended by itself, as ``subprocess.Popen.returncode`` (``-N``: killed by signal
            N); ``None`` when the supervisor killed it or it is not known. A sample that ends before its last
            step names it; one killed by SIGKILL or SIGXCPU is a timeout: short of a sample that signals itself past
            its guard, only its CPU-time limit sends those (the supervisor's own kills give ``None``), which busy
            threads on several cores reach before the wall deadline.

    Returns:
        ``(status, detail, outputs, output_chars)``, the last two as in ``ExecResult``.
    """
    by_index = _test_events(events, len(job.tests or ()))
    status, detail, outputs = _verdict(events, by_index, job, timed_out=timed_out, channel_error=channel_error,
                                       exit_status=exit_status)  # fmt: skip
    chars = tuple(None if out is None else _whole_length(by_index[i], out) for i, out in enumerate(outputs))
    return status, detail, tuple(None if out is None else out[:STORED_OUTPUT_CHARS] for out in outputs), chars


def _test_events(events: Sequence[dict[str, Any]], n_tests: int) -> dict[int, dict[str, Any]]:
    """The last ``test`` event of each test; one whose ``i`` is no int in range is ignored (``type(...) is int``: not
    a bool, which would stand for test 1, nor a list, which is unhashable, nor a float)."""
    return {ev["i"]: ev for ev in events
            if ev.get("ev") == "test" and type(ev.get("i")) is int and 0 <= ev["i"] < n_tests}  # fmt: skip


def _whole_length(event: dict[str, Any], out: str) -> int:
    """Characters of a result's whole ``str()``: the child's count where it cut the output at ``max_output_chars``."""
    said = event.get("chars")
    return said if event.get("truncated") is True and type(said) is int and said > len(out) else len(out)


def _verdict(
    events: Sequence[dict[str, Any]],
    by_index: dict[int, dict[str, Any]],
    job: ExecJob,
    *,
    timed_out: bool,
    channel_error: str | None,
    exit_status: int | None = None,
) -> tuple[str, str, tuple[str | None, ...]]:
    """``outcome_of`` before its outputs are cut: the verdict and each whole output."""
    outputs: list[str | None] = [None] * len(job.tests or ())
    if channel_error is not None:
        return RUNTIME, f"result channel: {channel_error}", tuple(outputs)
    if not any(ev.get("ev") == "ready" for ev in events):
        # Only the trusted child writes before "ready" (the sample is compiled after it): its set-up's failure.
        fatal = next((ev for ev in events if ev.get("ev") == "fatal"), None)
        if fatal is not None:
            return SANDBOX_ERROR, _short(f"the sandbox failed before starting the sample: {fatal.get('exc')}: "
                                         f"{fatal.get('msg')}", 600), tuple(outputs)  # fmt: skip
        if timed_out:
            return SANDBOX_ERROR, "the sandbox did not start in time", tuple(outputs)
        return SANDBOX_ERROR, "the sandbox exited before starting the sample", tuple(outputs)
    for ev in events:
        if ev.get("ev") == "error" and ev.get("kind") == SYNTAX:
            return SYNTAX, _short(f"{ev.get('exc')}: {ev.get('msg')}"), tuple(outputs)

    if job.check is not None:
        verdict = next((ev for ev in events if ev.get("ev") == "check"), None)
        if verdict is None:
            if timed_out:
                return TIMEOUT, "check() did not finish in time", ()
            return (*_ended_early("check()", exit_status), ())
        if verdict.get("ok") is True:
            return PASSED, "", ()
        kind = WRONG_ANSWER if verdict.get("kind") == WRONG_ANSWER else RUNTIME
        return kind, _short(f"{verdict.get('exc')}: {verdict.get('msg')}"), ()

    for i, ev in by_index.items():
        if ev.get("ok") is True and isinstance(ev.get("out"), str):
            outputs[i] = ev["out"]
    for i, want in enumerate(job.expected or ()):
        ev = by_index.get(i)
        if ev is None:
            if timed_out:
                return TIMEOUT, f"test {i} did not finish in time", tuple(outputs)
            return (*_ended_early(f"test {i}", exit_status), tuple(outputs))
        if ev.get("ok") is not True:
            return RUNTIME, _short(f"test {i}: {ev.get('exc')}: {ev.get('msg')}"), tuple(outputs)
        if outputs[i] != want or ev.get("truncated"):
            return WRONG_ANSWER, _short(f"test {i}: expected {want!r}, got {outputs[i]!r}"), tuple(outputs)
    return PASSED, "", tuple(outputs)


#: The signals RLIMIT_CPU sends: SIGXCPU at the soft limit, SIGKILL at the hard one. The child sets soft == hard, and
#: Linux then sends SIGKILL at once (torvalds/linux ``kernel/time/posix-cpu-timers.c``, ``check_process_timers``: the
#: hard limit is checked first).
_CPU_LIMIT_SIGNALS = (signal.SIGXCPU, signal.SIGKILL)


def _ended_early(step: str, exit_status: int | None) -> tuple[str, str]:
    """Status and detail of a sample whose process ended by itself before ``step`` finished (``outcome_of``)."""
    if exit_status is None:
        return RUNTIME, f"the process exited before {step} finished"
    if exit_status < 0 and -exit_status in _CPU_LIMIT_SIGNALS:
        return TIMEOUT, (f"{step} did not finish: the process was killed by {_signal_name(-exit_status)}, as at "
                         "its CPU-time limit")
    how = f"killed by {_signal_name(-exit_status)}" if exit_status < 0 else f"exit {exit_status}"
    return RUNTIME, f"the process exited before {step} finished ({how})"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _own_exit_status(returncode: int, under_bwrap: bool) -> int:
    """A sample's exit status as ``Popen.returncode`` gives it (``-N`` for signal N): bubblewrap exits with its
    child's code, or 128 + N when a signal killed it (containers/bubblewrap ``bubblewrap.c``,
    ``propagate_exit_status``); a sample that exits with such a code by itself reads the same, which no event can
    tell apart."""
    return 128 - returncode if under_bwrap and returncode > 128 else returncode


# ---------------------------------------------------------------------------------------------------------------
# Where and as whom the child runs
# ---------------------------------------------------------------------------------------------------------------


def find_bwrap() -> str | None:
    """Path of the bubblewrap executable, if installed."""
    return shutil.which("bwrap")


#: The oldest bubblewrap the sandbox runs under: ``--clearenv`` came in 0.5.0 (containers/bubblewrap's release notes).
BWRAP_MIN_VERSION: tuple[int, int, int] = (0, 5, 0)
#: ``--size`` (a tmpfs of a given size) came in 0.7.0, and a setuid bubblewrap refuses it at any version ("The --size
#: option is not permitted in setuid mode", containers/bubblewrap ``bubblewrap.c``).
BWRAP_SIZE_VERSION: tuple[int, int, int] = (0, 7, 0)
#: ``--disable-userns`` (no nested user namespace) came in 0.8.0 (containers/bubblewrap's release notes).
BWRAP_DISABLE_USERNS_VERSION: tuple[int, int, int] = (0, 8, 0)


@dataclasses.dataclass(frozen=True)
class BwrapFeatures:
    """What the installed bubblewrap accepts, from its ``--version`` and its file mode.

    Ubuntu 22.04 ships 0.6.1 and RHEL 9 0.6.3: with neither option below they failed the sandbox's probe, and
    ``auto`` ran every sample without isolation. An option the version lacks is left out, its job done another way
    or its absence said (``Sandbox``'s warning and ``describe``).

    Attributes:
        path: The executable.
        version: ``bwrap --version``'s numbers; ``None`` when it printed none (then both options are passed, and
            the probe says whether they work).
        setuid: The executable is setuid (it then refuses ``--size``).
        disable_userns: Pass ``--disable-userns``; without it the seccomp filter's refusal of ``unshare`` and
            ``setns`` (``fork_filter``) is what keeps a sample out of a nested user namespace.
        sized_tmpfs: Pass ``--size`` for ``/sandbox`` and ``/dev``; without it they are tmpfs of the kernel's
            default size, half of the host's RAM each, bounded only by the sample's deadline.
    """

    path: str
    version: tuple[int, ...] | None
    setuid: bool
    disable_userns: bool
    sized_tmpfs: bool

    @property
    def version_text(self) -> str:
        return "an unknown version" if self.version is None else _version_text(self.version)

    @property
    def too_old(self) -> bool:
        return self.version is not None and self.version < BWRAP_MIN_VERSION


@functools.lru_cache(maxsize=None)
def bwrap_features(path: str) -> BwrapFeatures:
    """Ask the bubblewrap at ``path`` its version (``bwrap --version``: "bubblewrap 0.8.0") and what it accepts."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)  # fmt: skip
        found = re.search(r"\b(\d+(?:\.\d+)+)\b", done.stdout)
    except (OSError, subprocess.SubprocessError):
        found = None
    version = tuple(int(part) for part in found.group(1).split(".")) if found else None
    try:
        setuid = bool(os.stat(path).st_mode & stat.S_ISUID)
    except OSError:
        setuid = False
    return BwrapFeatures(
        path=path, version=version, setuid=setuid,
        disable_userns=version is None or version >= BWRAP_DISABLE_USERNS_VERSION,
        sized_tmpfs=not setuid and (version is None or version >= BWRAP_SIZE_VERSION),
    )  # fmt: skip


#: ``bwrap_argv``'s features when the caller has not asked (tests, the full command line of a current bubblewrap).
_ALL_FEATURES = BwrapFeatures(path="", version=None, setuid=False, disable_userns=True, sized_tmpfs=True)


def _reachable_by_others(path: str) -> bool:
    """True when a user other than the owner can execute ``path`` (every parent directory searchable)."""
    p = Path(path)
    try:
        for parent in reversed(p.parents):
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
        return bool(p.stat().st_mode & stat.S_IXOTH)
    except OSError:
        return False


def _interpreter_candidates() -> list[str]:
    # The base interpreter (not the venv's): the child runs with -S and needs only the standard library.
    base = getattr(sys, "_base_executable", None) or sys.executable
    found = [os.path.realpath(base), os.path.realpath(sys.executable)]
    for name in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(name):
            found.append(os.path.realpath(name))
    return list(dict.fromkeys(found))


#: The oldest interpreter a sample may run on: pyproject.toml's ``requires-python`` lower bound (a unit test keeps
#: the two equal; an installed package has no pyproject.toml to read). Generated code is written for a current
#: Python: on an older one, ``def f(xs: list[int])`` (3.9) or a ``match`` statement (3.10) fails as the model's
#: runtime or syntax error, and pass@k drops without a word. A different patch or later minor version is fine.
MIN_PYTHON: tuple[int, int] = (3, 11)


@functools.lru_cache(maxsize=None)
def interpreter_version(python: str) -> tuple[int, int, int]:
    """``sys.version_info[:3]`` of the interpreter at ``python``, asked of it (``-S``: as the sandbox starts it).

    Raises:
        SandboxUnavailable: it does not run, or does not answer with a version.
    """
    try:
        done = subprocess.run([python, "-S", "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
        major, minor, micro = (int(part) for part in done.stdout.split())
    except (OSError, subprocess.SubprocessError, ValueError) as err:
        raise SandboxUnavailable(f"the sandbox's interpreter {python} does not report its version: {err}") from None
    return major, minor, micro


def _version_text(version: Sequence[int]) -> str:
    return ".".join(str(part) for part in version)


def _too_old_message(found: Sequence[tuple[str, tuple[int, int, int]]]) -> str:
    said = ", ".join(f"{path} is Python {_version_text(version)}" for path, version in found)
    return (f"the sandbox's interpreter is too old: {said}, older than Python {_version_text(MIN_PYTHON)}, the "
            f"oldest this project supports (pyproject.toml requires-python; this process runs "
            f"{_version_text(sys.version_info[:3])}): code written for it (list[int] annotations, match) would fail "
            "there as the model's error and lower pass@k. Install Python >= "
            f"{_version_text(MIN_PYTHON)} where the sandbox's user can run it (as root: outside /root, e.g. "
            "/usr/bin/python3 or /usr/local/bin/python3)")


def choose_identity(python: str | None = None) -> tuple[str, int | None, str]:
    """Pick the interpreter and the user the child runs as.

    Returns:
        ``(interpreter, uid or None to keep the current user, note)``. As root the child drops to ``nobody``,
        which needs an interpreter that ``nobody`` can reach (a pyenv build under ``/root`` is not), so the
        system ``python3`` may be chosen instead; the note says which and why. Only an interpreter of at least
        ``MIN_PYTHON`` is chosen.

    Raises:
        SandboxUnavailable: the interpreter it would run is older than ``MIN_PYTHON`` (naming it, its version and
            the one required).
    """
    candidates = [os.path.realpath(python)] if python else _interpreter_candidates()

    def checked(cand: str) -> str:
        version = interpreter_version(cand)
        if version[:2] < MIN_PYTHON:
            raise SandboxUnavailable(_too_old_message([(cand, version)]))
        return cand

    if os.geteuid() != 0:
        return checked(candidates[0]), None, f"runs as uid {os.geteuid()}"
    too_old = []
    for cand in candidates:
        if _reachable_by_others(cand):
            version = interpreter_version(cand)
            if version[:2] >= MIN_PYTHON:
                return cand, NOBODY, f"root drops to nobody ({NOBODY}); interpreter {cand}"
            too_old.append((cand, version))
    if too_old:  # never a silent fall back to root: the one nobody could run is the problem to fix
        raise SandboxUnavailable(_too_old_message(too_old))
    return checked(candidates[0]), None, (
        f"runs as ROOT: no interpreter reachable by nobody among {candidates}, so RLIMIT_NPROC is not enforced: "
        "a sample's threads are bounded only by memory_mb and the deadline (new processes are still refused by "
        "the seccomp filter)"
    )


#: The checkout this module belongs to (its run folders, its keys' files): never visible inside the sandbox. An
#: installed copy's parent is a site-packages folder, which an interpreter's own prefix may rightly hold.
_REPOSITORY = Path(__file__).resolve().parents[2]


def _private_folders() -> list[Path]:
    """Folders a sample must not see, for ``interpreter_bind``: home folders, the checkout and the working
    directory."""
    folders = [Path("/root")]
    if (_REPOSITORY / "pyproject.toml").is_file():
        folders.append(_REPOSITORY)
    with contextlib.suppress(OSError):  # a working directory since removed
        folders.append(Path.cwd())
    with contextlib.suppress(RuntimeError, KeyError):  # no $HOME and no password entry
        folders.append(Path.home())
    with contextlib.suppress(OSError):
        folders += [p for p in Path("/home").iterdir() if p.is_dir()]
    return [p.resolve() for p in folders]


def interpreter_bind(python: str) -> str | None:
    """The folder bubblewrap binds read-only for the interpreter at ``python``: its prefix (the parent of its
    ``bin``), or ``None`` when the prefix is under ``/usr``, which is bound anyway.

    The prefix is bound whole, so it must hold nothing private: an interpreter at ``$HOME/bin/python3`` has the home
    folder as its prefix (``~/.ssh`` readable by every sample), ``/bin/python3`` on a system whose ``/bin`` is a real
    folder has ``/``. Such a prefix is refused rather than narrowed to the files the interpreter may need, which a
    build's layout decides.

    Raises:
        SandboxUnavailable: the prefix is ``/``, a home folder (or a folder holding one), or holds the repository or
            the working directory; the message names it and the interpreter.
    """
    prefix = Path(python).resolve().parent.parent
    if prefix == Path("/usr") or Path("/usr") in prefix.parents:
        return None
    exposed = [p for p in _private_folders() if p == prefix or prefix in p.parents]
    if prefix == Path("/") or exposed:
        what = "the whole file system" if prefix == Path("/") else ", ".join(sorted({str(p) for p in exposed}))
        raise SandboxUnavailable(
            f"the sandbox's interpreter {python} lives in {prefix}, which bubblewrap would bind whole, readable to "
            f"every sample: it is or holds {what}. Run the toolkit from a Python installed where its prefix holds "
            "nothing else: under /usr, or a folder of its own such as /opt/python3.11")  # fmt: skip
    return str(prefix)


#: The device nodes a sample sees (bubblewrap's ``--dev`` set, less the terminal ones), bound into a sized tmpfs.
_DEVICES = ("null", "zero", "full", "random", "urandom")


#: ``bwrap_argv``'s ``interpreter_folder`` when the caller has not checked the interpreter (``interpreter_bind``).
_CHECK = object()


@dataclasses.dataclass(frozen=True)
class InterpreterFolders:
    """What the sandbox's interpreter needs to see inside the sandbox (``interpreter_library``), each path resolved.

    Attributes:
        prefixes: ``sys.base_prefix``, ``sys.base_exec_prefix`` and ``sysconfig``'s ``LIBDIR`` (``libpython``; on
            Debian and Ubuntu also the C library's folder): a cover may not be or hold one.
        stdlib: ``sysconfig``'s ``stdlib`` and ``platstdlib`` (its compiled modules): a cover may not be, hold or lie
            inside one (covering ``.../python3.11/json`` hid ``json`` from the child).
        loaded: The program loader its executable names (``_elf_interpreter``: as written, through its folder's
            links and resolved; ``/lib64/ld-linux-x86-64.so.2`` is ``/usr/lib64/...`` on a merged-/usr system) and
            the shared objects it has mapped once it has imported what the child imports (``/proc/self/maps``):
            a cover may not hold one (covering ``/usr/lib64`` hid the loader: "execvp ...: No such file").
    """

    prefixes: tuple[str, ...]
    stdlib: tuple[str, ...]
    loaded: tuple[str, ...]


#: Run by ``interpreter_library`` as the sandbox starts the interpreter (``-S``); imports what the sandbox's child
#: imports (``sandbox_child.py``), so that their shared objects are among the mapped files it lists.
_LIBRARY_QUESTION = """\
import ast, ctypes, json, resource, signal, sys, sysconfig
paths = sysconfig.get_paths()
loaded = set()
try:
    with open('/proc/self/maps') as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith('/') and '.so' in fields[5].rsplit('/', 1)[-1]:
                loaded.add(fields[5].strip())
except OSError:
    pass
print(json.dumps({'prefixes': [sys.base_prefix, sys.base_exec_prefix, sysconfig.get_config_var('LIBDIR') or ''],
                  'stdlib': [paths['stdlib'], paths['platstdlib']], 'loaded': sorted(loaded)}))
"""


def _elf_interpreter(path: str) -> str | None:
    """The program loader the ELF executable at ``path`` names (its ``PT_INTERP`` segment), as written there
    (``/lib64/ld-linux-x86-64.so.2``); ``None`` for a file that is no ELF executable or names none (static).
    Read here, as the kernel reads it (the ELF specification's file and program headers), not asked of the
    interpreter, which sees only the loader's resolved path in its maps."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2):
                return None
            wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
            phoff = struct.unpack_from(order + ("Q" if wide else "I"), head, 32 if wide else 28)[0]
            phentsize, phnum = struct.unpack_from(order + "HH", head, 54 if wide else 42)
            for i in range(min(phnum, 512)):
                f.seek(phoff + i * phentsize)
                entry = f.read(phentsize)
                if struct.unpack_from(order + "I", entry, 0)[0] != 3:  # PT_INTERP
                    continue
                offset, size = (struct.unpack_from(order + "Q", entry, at)[0] for at in (8, 32)) if wide else (
                    struct.unpack_from(order + "I", entry, at)[0] for at in (4, 16))  # fmt: skip
                f.seek(offset)
                return f.read(min(size, 4096)).split(b"\0")[0].decode() or None
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def _loader_forms(loader: str) -> list[str]:
    """The paths the kernel passes through to reach ``loader``: as written, through its folder's links, resolved."""
    written = Path(loader)
    return list(dict.fromkeys([loader, str(Path(os.path.realpath(written.parent)) / written.name),
                               os.path.realpath(loader)]))  # fmt: skip


@functools.lru_cache(maxsize=None)
def interpreter_library(python: str) -> InterpreterFolders:
    """What the interpreter at ``python`` needs to see, asked of it as the sandbox starts it (``-S``) and read from
    its executable (``InterpreterFolders``).

    Raises:
        SandboxUnavailable: it does not run, or does not answer with its folders.
    """
    try:
        done = subprocess.run([python, "-S", "-c", _LIBRARY_QUESTION], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    except (OSError, subprocess.SubprocessError) as err:
        raise SandboxUnavailable(f"the sandbox's interpreter {python} does not report its library folders: {err}"
                                 ) from None  # fmt: skip
    try:
        said = json.loads(done.stdout)
        prefixes, stdlib, loaded = ([p for p in said[key] if isinstance(p, str) and p.startswith("/")]
                                    for key in ("prefixes", "stdlib", "loaded"))  # fmt: skip
    except (ValueError, TypeError, KeyError):
        prefixes = stdlib = loaded = []
    if done.returncode != 0 or len(prefixes) < 2 or len(stdlib) < 2:
        raise SandboxUnavailable(f"the sandbox's interpreter {python} does not report its library folders (exit "
                                 f"{done.returncode}): {done.stderr.strip()[-300:]}")  # fmt: skip
    loader = _elf_interpreter(os.path.realpath(python))

    def resolved(paths: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(os.path.realpath(p) for p in paths))

    # the loader's forms stay as they are: a link on the way to it is what a cover would hide
    return InterpreterFolders(resolved(prefixes), resolved(stdlib),
                              tuple(dict.fromkeys([*loaded, *(_loader_forms(loader) if loader else [])])))


def _reachable_by(folder: Path, uid: int | None) -> bool:
    """True when ``folder`` exists and the sandbox's user reaches it: ``uid`` (whose group is ``uid`` too, as
    ``Sandbox`` starts it, with no other group) may search every folder above it; ``None``, this process's user.

    bubblewrap mounts a cover as that user, so it can cover only such a folder; the sandbox's user cannot read one
    it does not reach, which then needs no cover."""
    try:
        if not folder.is_dir():
            return False
        if uid is None:  # is_dir, as this process's user, has searched every folder above it
            return True
        for parent in folder.parents:
            info = parent.stat()
            bit = (stat.S_IXUSR if info.st_uid == uid else stat.S_IXGRP if info.st_gid == uid else stat.S_IXOTH)
            if not info.st_mode & bit:
                return False
    except OSError:
        return False
    return True


def covered_usr_folders(python: str, uid: int | None = None) -> list[str]:
    """The private folders (``_private_folders``) under ``/usr``, which bubblewrap binds whole: each is covered by
    an empty read-only tmpfs in the sandbox (``bwrap_argv``). A checkout at ``/usr/src/app`` (the official Python
    image's example working directory) was readable to every sample, a ``--data`` copy with the expected outputs
    among it. A folder inside another covered one is left out (the outer one hides it), and so is one that does not
    exist or that the sandbox's user ``uid`` (``None``: this process's) does not reach (``_reachable_by``): there
    bubblewrap failed to make or reach the mount point (a ``$HOME`` that does not exist, a folder under a 0700 one),
    and ``auto`` fell back to no isolation at all.

    Raises:
        SandboxUnavailable: a private folder is ``/usr`` itself, holds the interpreter ``python``, its prefix or
            standard library, its program loader or a shared object it loads, or lies inside its standard library
            (``interpreter_library``): covered, the sandbox would have no interpreter, and ``auto`` would fall back to
            no isolation. A folder inside the prefix in general is not refused (a checkout at ``/usr/src/app``).
    """
    usr = Path("/usr")
    under = sorted({p for p in _private_folders() if p == usr or usr in p.parents})
    interpreter = Path(python).resolve()

    def refuse(folder: Path, what: str) -> SandboxUnavailable:
        return SandboxUnavailable(
            f"{folder} is private (the checkout, the working directory or a home folder) and the sandbox cannot "
            f"hide it: bubblewrap binds /usr whole for the interpreter {python}, {what}. Run the toolkit from a "
            "folder outside /usr")  # fmt: skip

    for folder in under:
        if folder == usr or folder in interpreter.parents:
            raise refuse(folder, "which lives there")
    under = [p for p in under if _reachable_by(p, uid)]
    if under:  # asked only here: the interpreter is started once more, and most runs have no folder under /usr
        needs = interpreter_library(python)
        for folder in under:
            for library in map(Path, needs.stdlib + needs.prefixes):
                if folder == library or folder in library.parents:
                    raise refuse(folder, f"and the folder holds its standard library ({library})")
            for library in map(Path, needs.stdlib):
                if library in folder.parents:
                    raise refuse(folder, f"and the folder lies inside its standard library ({library})")
            for loaded in map(Path, needs.loaded):
                if folder in loaded.parents:
                    raise refuse(folder, f"and the folder holds a file it loads ({loaded})")
    return [str(p) for p in under if not any(q in p.parents for q in under)]


def bwrap_argv(
    python: str, *, child_fd: int, job_fd: int, seccomp_fd: int, token: str, tmpfs_mb: int, env: dict[str, str],
    interpreter_folder: Any = _CHECK, covered: Any = _CHECK, features: BwrapFeatures = _ALL_FEATURES,
) -> list[str]:
    """The bubblewrap command line that runs the child on a job (both passed as memfds, copied in by bwrap) under
    the fork filter read from ``seccomp_fd``.

    ``interpreter_folder`` and ``covered``: ``interpreter_bind(python)`` and ``covered_usr_folders(python)`` when
    the caller has them (a ``Sandbox`` checks once, not per sample: the checks list every folder of /home, which an
    NFS or autofs /home makes a network round trip each). ``features``: what the installed bubblewrap accepts
    (``bwrap_features``); an option it lacks is left out.
    """
    argv = [
        features.path or find_bwrap() or "bwrap",
        "--unshare-all", "--unshare-user", *(["--disable-userns"] if features.disable_userns else []),
        "--die-with-parent", "--new-session", "--as-pid-1",
        "--hostname", "sandbox",
        "--ro-bind", "/usr", "/usr",
    ]  # fmt: skip
    for folder in covered_usr_folders(python) if covered is _CHECK else covered:
        argv += ["--tmpfs", folder, "--remount-ro", folder]
    # Merged-/usr systems have /bin, /lib... as symlinks into /usr; older ones have real directories.
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    prefix = interpreter_bind(python) if interpreter_folder is _CHECK else interpreter_folder
    if prefix is not None:
        argv += ["--ro-bind", prefix, prefix]
    size = ["--size", str(tmpfs_mb << 20)] if features.sized_tmpfs else []
    argv += [
        "--proc", "/proc",
        # bwrap's own --dev is a tmpfs of half the host's RAM (--size applies to --tmpfs only): build it sized.
        *size, "--tmpfs", "/dev",
        *[arg for name in _DEVICES for arg in ("--dev-bind", f"/dev/{name}", f"/dev/{name}")],
        "--symlink", "/proc/self/fd", "/dev/fd",
        *[arg for i, name in enumerate(("stdin", "stdout", "stderr"))
          for arg in ("--symlink", f"/proc/self/fd/{i}", f"/dev/{name}")],
        "--dir", "/dev/shm",
        *size, "--tmpfs", _SANDBOX_DIR,
        "--ro-bind-data", str(child_fd), f"{_SUPPORT_DIR}/child.py",
        "--ro-bind-data", str(job_fd), f"{_SUPPORT_DIR}/job.json",
        "--remount-ro", "/",
        "--chdir", _SANDBOX_DIR,
        "--clearenv",
        "--seccomp", str(seccomp_fd),
    ]  # fmt: skip
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv += [python, "-S", "-B", f"{_SUPPORT_DIR}/child.py", f"{_SUPPORT_DIR}/job.json", token]
    return argv


_PR_SET_DUMPABLE = 4  # linux/prctl.h


def hide_own_environment() -> bool:
    """Make this process not dumpable (``prctl(PR_SET_DUMPABLE, 0)``), before a sample runs without bubblewrap.

    Without bubblewrap's pid namespace a sample sees the host's ``/proc``, and a process of the same user may read
    another's ``/proc/<pid>/environ``, where this process's API key is ($OPENAI_API_KEY, $JUDGE_SERVE_API_KEY). Not
    dumpable, this process's ``environ``, ``mem``, ``maps`` and ``fd`` belong to root and only a process with
    CAP_SYS_PTRACE reads them; so do its threads'. The samples it starts are dumpable again after their ``execve``
    (it does not carry over), which is harmless: their environment is ``minimal_env``. Costs, for the rest of this
    process's life (the flag is never set back: a sample may still be running): no core dump; no debugger or
    profiler (py-spy, gdb) attaches without root; and this process cannot read some of its own ``/proc/self`` files
    (``environ``, ``io``, ``auxv``, ``mem``: psutil's ``io_counters`` fails), so a notebook or a test process that
    builds an unisolated ``Sandbox`` keeps these costs.

    Returns:
        True when this process is now not dumpable; False off Linux or when the call failed.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        zero = ctypes.c_ulong(0)
        return libc.prctl(_PR_SET_DUMPABLE, zero, zero, zero, zero) == 0
    except (OSError, AttributeError):
        return False


def minimal_env(home: str) -> dict[str, str]:
    """The whole environment of a sample: nothing inherited from the caller."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
    }


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)  # close-on-exec off: bwrap must inherit it (pass_fds keeps it open)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def new_token() -> str:
    """A marker for one sample's command line, so that its processes can be recognised (by a test, by a person
    reading ``ps``); the sandbox itself finds them through its child, never by scanning for it."""
    return "mera-sbx-" + secrets.token_hex(8)


# -- the fork filter --------------------------------------------------------------------------------------------

# Classic BPF over ``struct seccomp_data`` (linux/seccomp.h): nr at offset 0, arch at 4, args[0]'s low word at 16.
_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_SECCOMP_RET_ALLOW, _SECCOMP_RET_KILL_PROCESS, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_CLONE_THREAD = 0x00010000
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
#: machine -> (AUDIT_ARCH_*, {syscall: errno}, clone's number, prctl's number). x86_64: fork 57, vfork 58, clone 56,
#: clone3 435, unshare 272, setns 308, memfd_create 319, shmget 29, msgget 68, semget 64, prctl 157; aarch64 has
#: neither fork nor vfork (the C library forks through clone): clone 220, clone3 435, unshare 97, setns 268,
#: memfd_create 279, shmget 194, msgget 186, semget 190, prctl 167 (asm/unistd_64.h, asm-generic/unistd.h).
_FORK_SYSCALLS = {
    "x86_64": (0xC000003E, {57: errno.EPERM, 58: errno.EPERM, 435: errno.ENOSYS, 272: errno.EPERM,
                            308: errno.EPERM, 319: errno.EPERM, 29: errno.EPERM, 68: errno.EPERM,
                            64: errno.EPERM}, 56, 157),
    "aarch64": (0xC00000B7, {435: errno.ENOSYS, 97: errno.EPERM, 268: errno.EPERM, 279: errno.EPERM,
                             194: errno.EPERM, 186: errno.EPERM, 190: errno.EPERM}, 220, 167),
}
_X32_SYSCALL_BIT = 0x40000000  # x86_64's x32 ABI numbers carry this bit: refused wholesale


def fork_filter(machine: str | None = None) -> bytes:
    """The seccomp program (``struct sock_filter`` array) that refuses every new process and allows threads.

    Another architecture's system calls (``int 0x80`` on x86_64) kill the process. ``clone`` is allowed only with
    ``CLONE_THREAD`` (which the kernel accepts only together with ``CLONE_VM``: a thread, never a process, and never
    with ``CLONE_NEWUSER``). Refused as well, with EPERM:

    * ``unshare`` and ``setns``, whatever their flags: no new or other namespace, a user namespace above all (whose
      capabilities reach mount and network code a sample has no use for). bubblewrap from 0.8.0 also refuses a
      nested user namespace (``--disable-userns``); an older one does not, and this is then what does. Refused
      whole rather than by flag: ``setns``'s type 0 accepts a namespace of any type, so a flag test there would test
      nothing, and a sample needs neither call.
    * ``memfd_create``: a memfd is an anonymous file whose pages are shared memory, outside ``RLIMIT_AS``; a sample
      that wrote to memfds (bounded only by ``nofile`` x ``fsize_mb``, about 1 GiB) held 880 MiB under a
      ``memory_mb`` of 256. Its files elsewhere lie on the two tmpfs of ``tmpfs_mb`` under bubblewrap.
    * ``shmget``, ``msgget`` and ``semget``, for the same reason: a System V shared memory segment keeps its pages
      after the sample detaches it (a sample held 768 MiB under a ``memory_mb`` of 256), bounded only by the
      kernel's ``shmall``; without bubblewrap's private IPC namespace a segment also outlives the sample and the
      run, owned by nobody, until the host reboots. A message queue holds memory the same way, if less; so does a
      semaphore set (300 sets of 32,000 semaphores took 615 MiB under a ``memory_mb`` of 256). Without a segment,
      queue or set of its own, ``shmat``, ``msgsnd`` and ``semop`` reach none (the host's, without bubblewrap, only
      as their modes allow any user). POSIX message queues (``mq_open``), which also outlive a sample without
      bubblewrap, are refused by an ``RLIMIT_MSGQUEUE`` of 0 (``Sandbox._job_payload``).
    * ``prctl(PR_SET_PDEATHSIG)``, whatever the signal: the flag that kills a sample when its supervisor dies
      (bubblewrap's ``--die-with-parent``, the child's ``_die_with_parent`` without it) is set before the filter
      loads, and a sample that cleared it slept on, reparented, after its supervisor was killed. Tested on the
      low word of the option, as the kernel reads an ``int``; other ``prctl`` options stay allowed.

    Raises:
        SandboxUnavailable: no filter is known for this machine.
    """
    machine = machine or platform.machine()
    if machine not in _FORK_SYSCALLS:
        raise SandboxUnavailable(f"no fork filter for machine {machine!r} (known: {sorted(_FORK_SYSCALLS)})")
    arch, refused, clone, prctl = _FORK_SYSCALLS[machine]
    prog: list[tuple[int, int, int, int]] = [
        (_BPF_LD_W_ABS, 0, 0, 4),
        (_BPF_JEQ, 1, 0, arch),
        (_BPF_RET, 0, 0, _SECCOMP_RET_KILL_PROCESS),
        (_BPF_LD_W_ABS, 0, 0, 0),
    ]
    if machine == "x86_64":
        prog += [(_BPF_JGE, 0, 1, _X32_SYSCALL_BIT), (_BPF_RET, 0, 0, _SECCOMP_RET_ERRNO | errno.EPERM)]
    for nr, err in refused.items():
        prog += [(_BPF_JEQ, 0, 1, nr), (_BPF_RET, 0, 0, _SECCOMP_RET_ERRNO | err)]
    prog += [
        (_BPF_JEQ, 0, 4, prctl),  # not prctl: jump to the clone test
        (_BPF_LD_W_ABS, 0, 0, 16),  # prctl's option (args[0], low 32 bits)
        (_BPF_JEQ, 0, 1, _PR_SET_PDEATHSIG),
        (_BPF_RET, 0, 0, _SECCOMP_RET_ERRNO | errno.EPERM),
        (_BPF_RET, 0, 0, _SECCOMP_RET_ALLOW),
        (_BPF_JEQ, 0, 3, clone),  # not clone: jump to ALLOW
        (_BPF_LD_W_ABS, 0, 0, 16),  # clone's flags (args[0], low 32 bits)
        (_BPF_JSET, 1, 0, _CLONE_THREAD),
        (_BPF_RET, 0, 0, _SECCOMP_RET_ERRNO | errno.EPERM),
        (_BPF_RET, 0, 0, _SECCOMP_RET_ALLOW),
    ]
    return b"".join(struct.pack("=HBBI", *insn) for insn in prog)


def _stop(proc: subprocess.Popen, grace_s: float) -> bool:
    """End a sample's process tree without leaving orphans behind; returns whether our child had ended by itself
    (within ``grace_s``), before any kill.

    A finished sample exits by itself within ``grace_s``. Otherwise our child's descendants die first
    (``judge.plumbing.processes.kill_descendants``): under bwrap that is the pid namespace's init, whose death kills
    everything in the namespace, and bwrap reaps it and exits; killing bwrap first would orphan the namespace to
    the host's init as zombies. Last, the whole session's process group gets SIGKILL and our child is reaped.
    """
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    by_itself = proc.returncode is not None
    # Waited on only when it had descendants (bwrap, whose namespace's init was killed): without bubblewrap the
    # sample is our child itself, never signalled yet, and waiting for it only delayed its SIGKILL.
    if proc.poll() is None and kill_descendants(proc.pid):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2.0)
    # Safe after the wait: a pid stays reserved while a process group of that id still has members.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return by_itself


# ---------------------------------------------------------------------------------------------------------------
# The sandbox
# ---------------------------------------------------------------------------------------------------------------


class StopSignal:
    """Set once by ``Sandbox.run_many`` when the run is interrupted; every sample's reader (``Sandbox._read_events``)
    then kills its sample at once. A pipe rather than a ``threading.Event``: its read end turns readable for good when
    set, so a reader blocked in ``select`` on its sample's result pipe wakes at once, with no polling tick."""

    def __init__(self) -> None:
        self._read_fd, self._write_fd = os.pipe()

    def fileno(self) -> int:
        return self._read_fd

    def set(self) -> None:
        with contextlib.suppress(OSError):  # already closed: nothing is reading any more
            os.write(self._write_fd, b"x")

    def close(self) -> None:
        """After every reader is done (the pool is shut down): a closed fd number may be reused by a sample's pipe."""
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _started(runner: Callable[[ExecJob], ExecResult], job: ExecJob) -> ExecResult:
    """``runner(job)``, where the OS refusing to start the sample (``OSError`` from ``Popen``, a memfd or a temporary
    folder: EAGAIN, ENOMEM, EMFILE) is a ``sandbox_error`` of that sample, counted as one, never an exception that
    ends the whole run and loses the results of the samples already run."""
    started = time.monotonic()
    try:
        return runner(job)
    except OSError as err:
        nones = (None,) * len(job.tests or ())
        return ExecResult(SANDBOX_ERROR, _short(f"the sandbox could not start the sample: {type(err).__name__}: "
                                                f"{err}", 300), nones, time.monotonic() - started, "", 0, nones)


def remove_sample_folder(folder: str) -> None:
    """Remove a sample's temporary folder (no bubblewrap), whatever modes the sample left on what it made inside.

    Without bubblewrap a non-root supervisor's sample runs as the same user, so a folder it made and chmodded to 000
    (or 0500) cannot be listed (or emptied) by the supervisor either, and ``rmtree(ignore_errors=True)`` left it, a
    sample's files, behind in the host's temporary folder. On each error the failing path and its parent, when
    inside ``folder`` and folders themselves (never a symlink's target, never ``folder``'s own parent), are made
    0o700 and the path removed again, once per path. A folder still there is named in a warning, never silently kept.
    """
    retried: set[str] = set()

    def inside(path: str) -> bool:
        return path == folder or path.startswith(folder + os.sep)

    def unlock(_function: Any, path: str, _error: Any) -> None:
        if path in retried:
            return
        retried.add(path)
        for target in (os.path.dirname(path), path):
            with contextlib.suppress(OSError):
                if inside(target) and stat.S_ISDIR(os.lstat(target).st_mode):
                    os.chmod(target, 0o700)
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                _rmtree(path, unlock)
            else:
                os.unlink(path)

    _rmtree(folder, unlock)
    if os.path.lexists(folder):
        logger.warning("code sandbox: could not remove the sample's temporary folder %s; remove it by hand", folder)


def _rmtree(path: str, on_error: Callable[[Any, str, Any], None]) -> None:
    """``shutil.rmtree`` with ``on_error`` as its ``onexc`` (Python 3.12+, where ``onerror`` is deprecated) or its
    ``onerror`` (3.11); the handler reads neither the function nor the error, so one signature serves both."""
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=on_error)
    else:
        shutil.rmtree(path, onerror=on_error)


def _refused_by_bubblewrap(result: ExecResult) -> bool:
    """The probe ended because bubblewrap refused to run it (no user namespaces for this user, an option it lacks):
    the process exited (not stopped at ``startup_s``) before our child wrote any event, and its stderr, which
    ``Sandbox._supervise`` appends to a ``sandbox_error``'s detail, holds bubblewrap's own ``bwrap: `` message."""
    return (result.status == SANDBOX_ERROR and result.stopped_by == "" and result.n_events == 0
            and "bwrap: " in result.detail)


class Sandbox:
    """Runs ``ExecJob`` s in isolated child processes.

    Args:
        limits: Resource limits per sample.
        isolation: ``"auto"`` (bubblewrap when it works; where it is missing, too old or refuses to run, a loud
            warning and rlimits only; any other failed probe raises ``SandboxUnavailable``), ``"bwrap"`` (raise
            ``SandboxUnavailable`` if it does not work) or ``"none"`` (rlimits only, on purpose).
        python: Interpreter for the child (default: the base interpreter, or the system one when dropping root);
            one older than ``MIN_PYTHON`` raises ``SandboxUnavailable`` (``choose_identity``).
    """

    def __init__(self, limits: Limits | None = None, *, isolation: str = "auto", python: str | None = None):
        if isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be auto, bwrap or none, not {isolation!r}")
        self.limits = limits or Limits()
        self.python, self.uid, self.identity_note = choose_identity(python)
        # checked once, before the probe (whose command line, like every sample's, reuses it), and only where
        # bubblewrap may run: it raises for an interpreter whose folder would show a sample private files
        binary = find_bwrap() if isolation != "none" else None
        self._interpreter_folder: Any = interpreter_bind(self.python) if binary else _CHECK
        self._covered: Any = covered_usr_folders(self.python, self.uid) if binary else _CHECK
        self.bwrap: BwrapFeatures | None = bwrap_features(binary) if binary else None
        self._child_source = _CHILD_SOURCE.read_bytes()
        self._fork_filter = fork_filter()
        self.unavailable_reason = ""
        self.isolation = "bubblewrap" if isolation != "none" else "none"  # provisional, for the probe
        if isolation == "none":
            self.isolation = "none"
            self.unavailable_reason = "isolation disabled on request"
        else:
            ok, reason, refused, stopped_by = self._probe_bwrap()
            self.isolation = "bubblewrap" if ok else "none"
            self.unavailable_reason = reason
            if not ok and isolation == "bwrap":
                raise SandboxUnavailable(f"bubblewrap does not work here: {reason}. {self._remedy()}")
            if not ok and not refused:
                # A bubblewrap that would run here missed the probe for a reason of the moment (a loaded machine
                # past startup_s) or of our own child: running the whole run's untrusted code unisolated on that
                # is a choice for the user to make, never a warning in the log.
                if stopped_by == "startup":
                    what = (f"the bubblewrap sandbox did not start in time, tried twice ({reason}); rerun when the "
                            "machine is less loaded")
                else:  # a rerun meets the same failure: what to fix is in the detail
                    what = f"the sandbox's probe child failed under bubblewrap ({reason})"
                raise SandboxUnavailable(
                    f"{what}. bubblewrap itself did not refuse to run, so the sandbox does not fall back to running "
                    "samples without isolation; choose that explicitly with isolation none (judge-eval mera: "
                    "--sandbox none)")
        if self.isolation == "none":
            hidden = self._hide_supervisor()
            logger.warning(
                "\n%s\nCODE SANDBOX WITHOUT BUBBLEWRAP (%s).\nUntrusted code runs %s with NO network or "
                "filesystem isolation: it can read and write whatever that user can (home folder, project, the "
                "environment of that user's other processes, such as a shell that exported an API key), and undo "
                "the in-process guard on os.system, os.kill and ctypes. What still holds: no new process (seccomp), "
                "rlimits, the deadline, a fresh temp dir, a minimal environment, and %s.\n"
                "%s; to refuse to run without it: isolation bwrap (judge-eval mera: --sandbox bwrap).\n%s",
                "!" * 100, self.unavailable_reason, self._as_whom(), hidden, self._remedy(), "!" * 100,
            )  # fmt: skip
        elif self.bwrap is not None and not self.bwrap.sized_tmpfs:
            logger.warning("code sandbox: %s", self._tmpfs_bound())
        if self.uid is None and os.geteuid() == 0:
            logger.warning("code sandbox %s", self.identity_note)

    def _remedy(self) -> str:
        """What to install: bubblewrap, or a newer one than the one found (its distribution's package is that one)."""
        need = _version_text(BWRAP_MIN_VERSION)
        if self.bwrap is None:
            return (f"Install bubblewrap >= {need} (`make system-packages` or `apt-get install bubblewrap`)")
        if self.bwrap.too_old:
            return (f"{self.bwrap.path} is bubblewrap {self.bwrap.version_text}, older than {need}, the oldest this "
                    f"sandbox runs under: install bubblewrap >= {need} (from a backport or its source; "
                    f"{_version_text(BWRAP_DISABLE_USERNS_VERSION)} or later runs it with every option)")
        covered = self._covered if isinstance(self._covered, list) else []
        if covered:  # a cover hiding what the interpreter needs fails the probe as the kernel's refusal does
            return (f"{self.bwrap.path} is bubblewrap {self.bwrap.version_text} (>= {need} needed), so the probe "
                    "failed for the reason above: the kernel refusing user namespaces to this user, or the empty "
                    f"folders laid over {', '.join(covered)} (private folders under /usr, which bubblewrap binds "
                    "whole) hiding something the interpreter needs; running the toolkit from a folder outside /usr "
                    "tells the two apart")
        return (f"{self.bwrap.path} is bubblewrap {self.bwrap.version_text} (>= {need} needed), so the probe failed "
                "for the reason above (the kernel refusing user namespaces to this user, for one)")

    def _tmpfs_bound(self) -> str:
        """What bounds the sandbox's two tmpfs, ``/sandbox`` and ``/dev``."""
        if self.bwrap is None or self.isolation != "bubblewrap":
            return "no tmpfs: the sample writes to a temporary folder of the host, each file up to fsize_mb"
        if self.bwrap.sized_tmpfs:
            return f"tmpfs_mb ({self.limits.tmpfs_mb} MiB) each"
        why = ("is setuid, which refuses --size" if self.bwrap.setuid else
               f"is {self.bwrap.version_text}, older than {_version_text(BWRAP_SIZE_VERSION)} (--size)")
        return (f"NO size bound on /sandbox and /dev: bubblewrap {self.bwrap.path} {why}, so they are tmpfs of the "
                "kernel's default size (half of the host's RAM each), which a sample may fill, outside memory_mb, "
                "until its deadline")

    def _hide_supervisor(self) -> str:
        """Keep this process's environment (its API key) from a sample that runs without bubblewrap; says how."""
        if os.geteuid() == 0:  # root's /proc/<pid>/environ is root's alone; a sample run as root reads it anyway
            return ("this process's environment unreadable to it" if self.uid is not None else
                    "nothing more: as root it reaches all of this machine")
        if hide_own_environment():
            return "this process's own environment unreadable to it (the process is made not dumpable)"
        return "NOT this process's own environment: it could not be made not dumpable"

    def _as_whom(self) -> str:
        if self.uid is not None:
            return f"as uid {self.uid} (nobody)"
        return "as ROOT" if os.geteuid() == 0 else f"as this user (uid {os.geteuid()})"

    def describe(self) -> dict[str, Any]:
        """What protects the host, for the run's config record."""
        return {
            "isolation": self.isolation,
            "unavailable_reason": self.unavailable_reason,
            "python": self.python,
            "python_version": _version_text(interpreter_version(self.python)),
            "uid": self.uid if self.uid is not None else os.geteuid(),
            "identity": self.identity_note,
            "limits": dataclasses.asdict(self.limits),
            "bubblewrap": None if self.bwrap is None else {
                "path": self.bwrap.path, "version": self.bwrap.version_text, "setuid": self.bwrap.setuid,
                "nested_user_namespaces_refused_by": "--disable-userns and the seccomp filter"
                if self.bwrap.disable_userns else "the seccomp filter (unshare, setns)",
            },
            "tmpfs": self._tmpfs_bound(),
            "processes": "one per sample: fork, vfork and clone of a process refused by a seccomp filter, and so is "
                         "memfd_create, shmget, msgget and semget (and POSIX message queues by RLIMIT_MSGQUEUE 0), "
                         "so memory_mb bounds all that a sample runs and holds, beside its files",
            "deadline": ("timeout_s + 1 for the whole sample, its program run once (MERA's harness)"
                         if self.limits.deadline == "harness"
                         else "timeout_s x the sample's test calls, each running the program afresh")
                        + ", fixed when it is ready",
        }

    def _probe_bwrap(self) -> tuple[bool, str, bool, str]:
        """Run a trivial sample under bubblewrap, retried once as ``run`` retries a sample's ``sandbox_error``.

        Returns:
            ``(ok, reason, refused, stopped_by)``: ``refused`` when falling back to no isolation is the right answer
            under ``auto``: bubblewrap is missing, older than ``BWRAP_MIN_VERSION``, or refused to run by itself
            (``_refused_by_bubblewrap``); not a startup timeout or a failure of our own child. ``stopped_by`` is the
            last try's (``ExecResult.stopped_by``; ``"startup"``: it missed ``startup_s``), ``""`` when none ran.
        """
        if find_bwrap() is None:
            return False, "bwrap is not installed", True, ""
        probe = ExecJob(program="def f():\n    return 1\n", entry_point="f", tests=[{}], expected=["1"])
        try:
            result = self._run_bwrap(probe)
            if not result.passed:
                result = self._run_bwrap(probe)
        except OSError as err:  # the OS, not bubblewrap: falling back to no isolation would hide it
            raise SandboxUnavailable(f"the sandbox's probe could not start: {type(err).__name__}: {err}") from None
        if result.passed:
            return True, "", False, result.stopped_by
        found = f"bubblewrap {self.bwrap.version_text}: " if self.bwrap is not None else ""
        refused = (self.bwrap is not None and self.bwrap.too_old) or _refused_by_bubblewrap(result)
        return False, f"probe failed: {found}{result.status}: {result.detail}", refused, result.stopped_by

    # -- one sample ------------------------------------------------------------------------------------------

    def run(self, job: ExecJob, *, stop: StopSignal | None = None) -> ExecResult:
        """Run one sample; an infrastructure failure to start is retried once. Once ``stop`` is set the sample's
        process tree is killed at once (``stopped_by`` ``"interrupted"``)."""
        runner = functools.partial(self._run_bwrap if self.isolation == "bubblewrap" else self._run_plain, stop=stop)
        result = _started(runner, job)
        if result.status == SANDBOX_ERROR:
            result = _started(runner, job)
        return result

    def run_many(
        self,
        jobs: Sequence[ExecJob],
        *,
        workers: int = 2,
        on_result: Callable[[int, ExecResult], None] | None = None,
    ) -> list[ExecResult]:
        """Run samples with at most ``workers`` at once; results in input order.

        An exception (Ctrl+C, SIGTERM or SIGHUP through ``eval.mera.interrupts``, or one from ``on_result``) cancels
        the samples still queued and kills the running ones at once (``StopSignal``), each folder removed, before it
        is raised again. The pool's ``with`` block waited for every queued sample first, so Ctrl+C on a run of
        thousands of samples took as long as the run; and waiting for each running one to end by itself or at its
        deadline (up to ``timeout_s`` x its tests) outlasted a scheduler's grace period (docker stop's 10 s) for a
        result that is thrown away, and the scheduler's SIGKILL then left the folder behind.
        """
        results: list[ExecResult | None] = [None] * len(jobs)
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        stop = StopSignal()
        try:
            futures = {pool.submit(self.run, job, stop=stop): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                if on_result is not None:
                    on_result(i, results[i])
        except BaseException:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            stop.close()
            raise
        pool.shutdown(wait=True)
        stop.close()
        return [r for r in results if r is not None]

    def _job_payload(self, job: ExecJob) -> bytes:
        limits = self.limits
        cpu_s = limits.cpu_s or math.ceil(limits.sample_seconds(job.n_steps) + limits.timeout_s) + 1
        payload = {
            "program": job.program,
            "entry_point": job.entry_point,
            "tests": job.tests_text,  # repr text, ast.literal_eval'd inside (tests_as_literal)
            "check": job.check,
            # harness: the program runs once and each test calls its function, as MERA's harness does
            "module_runs": "once" if limits.deadline == "harness" else "per-test",
            "max_output_chars": limits.max_output_chars,
            # Without bubblewrap the child loads the fork filter itself; under bwrap, bwrap has loaded it already.
            "seccomp": self._fork_filter.hex() if self.isolation == "none" else None,
            # Without bubblewrap the child asks to die with this process (bwrap's --die-with-parent does it there).
            "parent_pid": os.getpid() if self.isolation == "none" else None,
            "rlimits": {
                "as": limits.memory_mb << 20,
                "cpu": cpu_s,
                "nproc": limits.nproc,
                "fsize": limits.fsize_mb << 20,
                "nofile": limits.nofile,
                "core": 0,
                # POSIX message queues: kernel memory outside "as", and a queue outlives the sample without bwrap
                "msgqueue": 0,
            },
        }
        return json.dumps(payload).encode()

    def _popen_identity(self) -> dict[str, Any]:
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.uid, "extra_groups": []}

    def _run_bwrap(self, job: ExecJob, *, stop: StopSignal | None = None) -> ExecResult:
        token = new_token()
        child_fd = _memfd("child.py", self._child_source)
        job_fd = _memfd("job.json", self._job_payload(job))
        seccomp_fd = _memfd("fork-filter.bpf", self._fork_filter)
        try:
            env = minimal_env(_SANDBOX_DIR)
            argv = bwrap_argv(
                self.python, child_fd=child_fd, job_fd=job_fd, seccomp_fd=seccomp_fd, token=token,
                tmpfs_mb=self.limits.tmpfs_mb, env=env, interpreter_folder=self._interpreter_folder,
                covered=self._covered, features=self.bwrap or _ALL_FEATURES,
            )  # fmt: skip
            return self._supervise(argv, job, env=env, cwd="/", pass_fds=(child_fd, job_fd, seccomp_fd), stop=stop)
        finally:
            os.close(child_fd)
            os.close(job_fd)
            os.close(seccomp_fd)

    def _run_plain(self, job: ExecJob, *, stop: StopSignal | None = None) -> ExecResult:
        token = new_token()
        workdir = tempfile.mkdtemp(prefix="mera-sbx-")
        try:
            (Path(workdir) / "child.py").write_bytes(self._child_source)
            (Path(workdir) / "job.json").write_bytes(self._job_payload(job))
            if self.uid is not None:
                os.chown(workdir, self.uid, self.uid)
            argv = [self.python, "-S", "-B", f"{workdir}/child.py", f"{workdir}/job.json", token]
            return self._supervise(argv, job, env=minimal_env(workdir), cwd=workdir, pass_fds=(), stop=stop)
        finally:
            remove_sample_folder(workdir)

    def _supervise(
        self, argv: list[str], job: ExecJob, *, env: dict[str, str], cwd: str, pass_fds: tuple[int, ...],
        stop: StopSignal | None = None,
    ) -> ExecResult:
        started = time.monotonic()
        with tempfile.TemporaryFile() as stderr_file:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr_file,
                env=env,
                cwd=cwd,
                pass_fds=pass_fds,
                start_new_session=True,
                **self._popen_identity(),
            )
            events: list[dict[str, Any]] = []
            stopped_by, channel_error = "interrupted", "the supervisor was interrupted"
            by_itself = False
            try:
                stopped_by, channel_error = self._read_events(proc, events, job.n_steps, stop)
            finally:
                # A sample that finished or closed its pipe is exiting: give it a moment to do so by itself.
                by_itself = _stop(proc, grace_s=2.0 if stopped_by == "" else 0.0)
                proc.stdout.close()
            timed_out = stopped_by in ("deadline", "startup")
            # Only a process that ended by itself says how: one this supervisor killed says nothing of the sample.
            exit_status = (_own_exit_status(proc.returncode, self.isolation == "bubblewrap") if by_itself
                           else None)  # fmt: skip
            try:
                status, detail, outputs, chars = outcome_of(events, job, timed_out=timed_out,
                                                            channel_error=channel_error,
                                                            exit_status=exit_status)  # fmt: skip
            except Exception as err:  # noqa: BLE001 - events the sample wrote fail that sample, never the run
                logger.warning("a sample's events could not be read; it fails as a runtime error", exc_info=True)
                status, detail = RUNTIME, _short(f"result channel: unreadable events: {type(err).__name__}: {err}")
                outputs = chars = (None,) * len(job.tests or ())
            if status == SANDBOX_ERROR:
                stderr_file.seek(0)
                tail = stderr_file.read()[-2000:].decode("utf-8", "replace").strip()
                detail = f"{detail} (exit {proc.returncode}): {tail}"
        return ExecResult(status, detail, outputs, time.monotonic() - started, stopped_by, len(events), chars)

    def _read_events(
        self, proc: subprocess.Popen, events: list[dict[str, Any]], n_steps: int, stop: StopSignal | None = None
    ) -> tuple[str, str | None]:
        """Collect the child's events into ``events`` until ``done``, EOF, the deadline or ``stop`` (then
        ``("interrupted", ...)``: the run is being interrupted, and the sample is killed with no grace).

        Two deadlines, each set once: ``startup_s`` from the start until the child's first ``ready`` (written by
        the trusted child before the sample is compiled), then ``Limits.sample_seconds`` from that moment. The
        sample shares the child's process and can write to the pipe, so nothing it writes moves either one; and
        what it writes is bounded twice, in bytes (``_MAX_CHANNEL_BYTES``) and in events (``n_steps +
        _EXTRA_EVENTS``): past either, reading stops and the sample fails (a runtime error of the sample). So does a
        line longer than the longest event (``_max_line_bytes``), or one ``json.loads`` cannot read (not JSON, or
        nested too deep: a ``RecursionError``).

        Returns:
            ``(stopped_by, channel_error)``; ``stopped_by`` as ``ExecResult.stopped_by``.
        """
        fd = proc.stdout.fileno()
        buffer = b""
        total = 0
        max_events = n_steps + _EXTRA_EVENTS
        max_line = _max_line_bytes(self.limits)
        deadline, stopped_by = time.monotonic() + self.limits.startup_s, "startup"
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            if stop is not None:
                selector.register(stop.fileno(), selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return stopped_by, None
                ready = selector.select(remaining)
                if stop is not None and any(key.fd == stop.fileno() for key, _ in ready):
                    return "interrupted", "the supervisor was interrupted"
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return "", None
                total += len(chunk)
                if total > _MAX_CHANNEL_BYTES:
                    return "channel", f"more than {_MAX_CHANNEL_BYTES} bytes"
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in [*lines, buffer]:
                    if len(line) > max_line:
                        return "channel", f"a line of more than {max_line} bytes: {line[:80]!r}"
                for line in lines:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        return "channel", f"not JSON: {line[:80]!r}"
                    except RecursionError:
                        return "channel", f"JSON nested too deep to read: {line[:80]!r}"
                    if not isinstance(event, dict):
                        return "channel", f"not an object: {line[:80]!r}"
                    if len(events) >= max_events:
                        return "channel", f"more than {max_events} events ({n_steps} steps)"
                    events.append(event)
                    if event.get("ev") == "done":
                        return "", None
                    if stopped_by == "startup" and event.get("ev") == "ready":
                        deadline, stopped_by = time.monotonic() + self.limits.sample_seconds(n_steps), "deadline"

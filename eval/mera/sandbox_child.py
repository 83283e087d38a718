"""The program that runs *inside* the code sandbox: executes one untrusted sample and reports JSON events.

Not imported by the toolkit: ``eval.mera.sandbox`` hands this file's source to a fresh interpreter (started
with ``-S``, so only the standard library exists here) as ``python -S -B child.py JOB.json TOKEN``. ``TOKEN`` is
unused by the code; it marks the command line, so a sample's processes can be recognised (by a test, in ``ps``).

Protocol, one JSON object per line on the result pipe (the original stdout, which is duplicated to a private fd
before the untrusted code runs; fds 0 and 1 then point at /dev/null so prints cannot corrupt the channel, and fd 2
too once the set-up is done, so that until then a failure's traceback reaches the supervisor's stderr file)::

    {"ev": "fatal", "exc": "SyntaxError", "msg": "..."} the set-up failed (limits, filter, test inputs): nothing follows
    {"ev": "ready"}                                    interpreter up, limits set, about to compile
    {"ev": "error", "kind": "syntax", ...}             the program does not compile; nothing else follows
    {"ev": "test", "i": 0, "ok": true, "out": "...", "chars": 3}
                                                       kwargs mode: str() of the i-th call's result and its length
                                                       (past max_output_chars "out" is cut, with "truncated": true)
    {"ev": "test", "i": 1, "ok": false, "kind": "runtime", "exc": "ZeroDivisionError", "msg": "..."}
    {"ev": "check", "ok": true}                        check mode: HumanEval's check(candidate) returned
    {"ev": "done"}

The job file is JSON, except ``tests``: the ``repr`` of the keyword-argument dicts (``sandbox.tests_as_literal``),
read back here with ``ast.literal_eval`` so that tuples, int keys and sets reach the function as MERA's harness
passes them (JSON has none of the three).

The parent compares outputs with the expected strings itself; nothing from here is trusted beyond its JSON
shape (the untrusted code shares this process and could write to the channel too: see the sandbox docstring).
"""

import ast
import gc
import json
import os
import resource
import sys

# Taken before the sample runs (it shares this process), so that a sample rebinding ``os._exit`` or ``gc.collect``
# does not change how the child ends or frees a test's namespace; one that rebinds these names only waits the
# supervisor's grace.
_exit_now = os._exit
_collect = gc.collect

# Calls that start programs or signal processes. The real containment is bubblewrap + rlimits; blocking these
# makes an attempt fail loudly as a runtime error instead of quietly running inside the sandbox.
_BLOCKED = {
    "os": (
        "system", "popen", "fork", "forkpty", "kill", "killpg", "execv", "execve", "execl", "execle", "execlp",
        "execlpe", "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnvp",
        "spawnvpe", "posix_spawn", "posix_spawnp", "putenv", "setuid", "setgid", "chroot", "pidfd_open",
    ),
    "posix": (
        "system", "fork", "forkpty", "kill", "killpg", "execv", "execve", "posix_spawn", "posix_spawnp", "putenv",
        "pidfd_open",
    ),
    "signal": ("pthread_kill", "pidfd_send_signal"),
}  # fmt: skip
_BLOCKED_MODULES = ("ctypes", "_ctypes", "subprocess", "_posixsubprocess", "pty")


def _blocked(name):
    def refuse(*args, **kwargs):
        raise PermissionError(f"blocked in the code sandbox: {name}")

    return refuse


def _set_limits(limits):
    # soft == hard, so the untrusted code cannot raise them again.
    for name, value in limits.items():
        if value is None:
            continue
        which = getattr(resource, "RLIMIT_" + name.upper())
        resource.setrlimit(which, (int(value), int(value)))


def _guard():
    import signal

    modules = {"os": os, "posix": sys.modules.get("posix"), "signal": signal}
    for mod_name, names in _BLOCKED.items():
        module = modules[mod_name]
        for name in names:
            if module is not None and hasattr(module, name):
                setattr(module, name, _blocked(f"{mod_name}.{name}"))
    for mod_name in _BLOCKED_MODULES:
        sys.modules[mod_name] = None  # `import ctypes` now raises ImportError


def _refuse_new_processes(program_hex):
    """Load the parent's seccomp fork filter (``sandbox.fork_filter``) into this process: without bubblewrap, the
    kernel refuses fork/clone from here on. Raises OSError when the kernel refuses the filter."""
    import ctypes

    program = bytes.fromhex(program_hex)
    buffer = ctypes.create_string_buffer(program, len(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2  # linux/prctl.h, linux/seccomp.h
    zero = ctypes.c_ulong(0)
    if libc.prctl(pr_set_no_new_privs, ctypes.c_ulong(1), zero, zero, zero) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(pr_set_seccomp, ctypes.c_ulong(seccomp_mode_filter), ctypes.byref(fprog), zero, zero) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def _one_malloc_arena():
    """Make every thread share glibc's one malloc arena, so that a thread costs the address space of its stack alone.

    glibc gives each new thread that allocates an arena of its own and reserves 64 MiB of address space for it at
    once: under the sample's RLIMIT_AS (1 GiB by default) its 14th thread failed for want of address space, long
    before RLIMIT_NPROC (32), and the memory budget was spent on reservations. Done here, not through
    MALLOC_ARENA_MAX, so that the sample's environment stays the minimal one; before any thread exists, as glibc
    reads the bound when a thread first asks for an arena. Elsewhere (another C library) nothing changes.
    """
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX (malloc.h)
    except (ImportError, OSError, AttributeError):
        pass


def _describe(exc):
    return {"exc": type(exc).__name__, "msg": str(exc)[:500]}


def _die_with_parent(parent_pid):
    """Without bubblewrap (whose ``--die-with-parent`` does it there), be killed when the supervisor dies.

    A supervisor killed by SIGTERM or a hangup runs no ``finally``: a sample that sleeps (RLIMIT_CPU does not count
    sleep) was left running forever, reparented to init. The kernel sends the signal when the *thread* that started
    this process exits, and the supervisor's thread waits in ``Sandbox._supervise`` until this process is dead.
    ``parent_pid`` closes the race: a supervisor that died before the call left this process another parent already.
    Set before the fork filter loads, which then refuses ``PR_SET_PDEATHSIG`` to the sample: it cannot clear it.
    """
    import ctypes
    import signal

    pr_set_pdeathsig = 1  # linux/prctl.h
    libc = ctypes.CDLL(None, use_errno=True)
    zero = ctypes.c_ulong(0)
    if libc.prctl(pr_set_pdeathsig, ctypes.c_ulong(signal.SIGKILL), zero, zero, zero) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent_pid:
        raise SystemExit(f"the supervisor (pid {parent_pid}) is gone: parent pid {os.getppid()}")


def _test_event(i, max_chars, call, *args):
    """The event of test ``i``: ``str()`` of what ``call(*args)`` returns, or the exception it raised."""
    try:
        out = str(call(*args))
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are failures of the sample too
        return {"ev": "test", "i": i, "ok": False, "kind": "runtime", **_describe(exc)}
    event = {"ev": "test", "i": i, "ok": True, "out": out[:max_chars], "chars": len(out)}
    if len(out) > max_chars:
        event["truncated"] = True
    return event


def _run_and_call(code, namespace, entry_point, kwargs):
    exec(code, namespace)
    return namespace[entry_point](**kwargs)


def _test_fresh_runs(code, entry_point, tests, max_chars, emit):
    """``--deadline per-test``: each test runs the program again in a fresh namespace, so state a solution keeps
    between calls cannot leak into the next test."""
    for i, kwargs in enumerate(tests):
        namespace = {"__name__": "__solution__"}
        try:
            emit(_test_event(i, max_chars, _run_and_call, code, namespace, entry_point, kwargs))
        finally:
            # Each function the program defines holds the namespace as its globals, and the namespace holds the
            # function: a cycle that only the cyclic collector frees, and a program that allocates few objects never
            # starts it. Left alone, what each test's run of the module level holds (a table, a sieve, a class and
            # its attributes) would stay beside the next test's, and memory_mb would bound one run divided by the
            # number of tests. Cleared once the test's event is out, so a finalizer that ends the process cannot
            # take that event with it.
            namespace.clear()
            _collect()


def _test_one_run(code, entry_point, tests, max_chars, emit):
    """``--deadline harness``, as MERA's harness (``unsafe_execute``): the program runs once, then the entry point is
    called for each test, so the module level is paid for once in the sample's one deadline and state kept between
    calls carries over. A program that fails to run fails every test with its exception, as every call fails
    there."""
    namespace = {"__name__": "__solution__"}
    try:
        exec(code, namespace)
    except BaseException as exc:  # noqa: BLE001
        failed = _describe(exc)
        for i in range(len(tests)):
            emit({"ev": "test", "i": i, "ok": False, "kind": "runtime", **failed})
        return
    for i, kwargs in enumerate(tests):
        emit(_test_event(i, max_chars, _call, namespace, entry_point, kwargs))


def _call(namespace, entry_point, kwargs):
    return namespace[entry_point](**kwargs)


def main():
    job_path = sys.argv[1]
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    program = job["program"]
    if job.get("parent_pid") is not None:
        _die_with_parent(int(job["parent_pid"]))

    # The result channel: a private copy of stdout; then 0 and 1 go to /dev/null. 2 stays the supervisor's stderr
    # file until "ready", so that a failure of the set-up below says why (its traceback, and a "fatal" event).
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)

    def emit(event):
        channel.write(json.dumps(event, ensure_ascii=True) + "\n")
        channel.flush()

    try:
        max_chars = int(job.get("max_output_chars", 100_000))
        entry_point = job["entry_point"]
        _one_malloc_arena()
        _set_limits(job.get("rlimits", {}))
        if job.get("seccomp"):
            # Fails closed: an exception here ends the child before "ready", a sandbox error, never an unfiltered run.
            _refuse_new_processes(job["seccomp"])
        _guard()
        # Trusted input, parsed under the sample's rlimits; a failure here ends the child before "ready".
        tests = ast.literal_eval(job["tests"]) if job.get("tests") is not None else None
    except BaseException as exc:  # noqa: BLE001 - reported, then raised again: a sandbox error, with its cause
        emit({"ev": "fatal", **_describe(exc)})
        raise
    # From here on the sample's own prints and tracebacks go nowhere: only the channel speaks.
    os.dup2(null, 2)
    emit({"ev": "ready"})

    try:
        code = compile(program, "<solution>", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        # ValueError: null bytes in the source; MemoryError/RecursionError: pathological nesting.
        emit({"ev": "error", "kind": "syntax", **_describe(exc)})
        emit({"ev": "done"})
        return

    if job.get("check") is not None:
        try:
            namespace = {"__name__": "__solution__"}
            exec(code, namespace)
            exec(compile(job["check"], "<check>", "exec"), namespace)
            namespace["check"](namespace[entry_point])
            emit({"ev": "check", "ok": True})
        except AssertionError as exc:
            emit({"ev": "check", "ok": False, "kind": "wrong_answer", **_describe(exc)})
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are failures of the sample too
            emit({"ev": "check", "ok": False, "kind": "runtime", **_describe(exc)})
        emit({"ev": "done"})
        return

    if job.get("module_runs") == "once":
        _test_one_run(code, entry_point, tests, max_chars, emit)
    else:
        _test_fresh_runs(code, entry_point, tests, max_chars, emit)
    emit({"ev": "done"})


if __name__ == "__main__":
    main()
    # "done" is written and flushed (``emit``): nothing more is owed to the supervisor. A normal exit would first join
    # the sample's non-daemon threads (threading._shutdown), which it may leave running for ever, and the supervisor
    # would wait its whole grace (``sandbox._stop``) before killing the process, on every such sample.
    _exit_now(0)

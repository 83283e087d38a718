"""The cgroup freezer hold of tests/support/process_freezer.py keeps a process at its point through the SIGCONT that
undoes a SIGSTOP, with the SIGTERM sent meanwhile pending until the thaw: what the Slurm preemption tests need, as
slurmd continues a job's tasks before it signals them. Against a child Python process that exits 0 from its SIGTERM
handler; each check reads the kernel's state right after the signal (SIGCONT's waking of a stopped task and a frozen
task's pending signal are there when ``kill`` returns; only a SIGSTOP is waited for, as the target stops itself).
``stop_processes``, the SIGSTOP hold of tests that are not about Slurm, is that wait: why it is needed (a signal that
comes before the stop is taken first, never pending) and that it returns only once the process has stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support import process_freezer
from tests.support.process_freezer import available_freezers, freeze_processes, freezer_unavailable_reason, stop_processes
from tests.support.slurm_cluster import signal_pending, stopped_processes

_CHILD = """
import signal, sys
signal.signal(signal.SIGTERM, lambda *_: (print("SIGTERM handled", flush=True), sys.exit(0)))
print("ready", flush=True)
while True:
    signal.pause()
"""


def _until_stopped(child: subprocess.Popen) -> None:
    """Returns once the child has stopped (it stops itself on its way back from the kernel): waitpid's WUNTRACED
    report of our own child, not a look at its state repeated until it holds."""
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the child ended instead of stopping (wait status {status})"


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"  # its handler is installed
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _cgroup_of(pid: int) -> str:
    return Path(f"/proc/{pid}/cgroup").read_text()


def test_a_sigstop_hold_is_undone_by_sigcont(child):
    """Why the freezer: a SIGSTOP'd process runs again at the SIGCONT slurmd sends before its SIGTERM."""
    child.send_signal(signal.SIGSTOP)
    _until_stopped(child)
    assert stopped_processes([child.pid]) == [child.pid]
    child.send_signal(signal.SIGCONT)
    assert stopped_processes([child.pid]) == []


def test_stop_processes_returns_the_process_stopped_so_a_signal_then_stays_pending(child):
    assert stop_processes([child.pid]) == [child.pid]
    assert stopped_processes([child.pid]) == [child.pid]  # no wait here: stop_processes waited
    child.send_signal(signal.SIGTERM)
    assert signal_pending([child.pid], signal.SIGTERM) == [child.pid]
    child.send_signal(signal.SIGCONT)
    assert child.wait(timeout=30) == 0
    assert child.stdout.read() == "SIGTERM handled\n"


def test_stop_processes_leaves_out_a_process_that_is_gone(child):
    child.kill()
    child.wait()
    assert stop_processes([child.pid]) == []


@pytest.mark.skipif(freezer_unavailable_reason() is not None, reason=f"{freezer_unavailable_reason()}")
def test_a_signal_sent_before_a_sigstop_took_effect_is_taken_first_and_never_pending(child):
    """Why stop_processes waits: SIGSTOP, then SIGTERM, sent to a process that does not run in between (held in a
    frozen cgroup here; a loaded machine can keep a woken process off the CPU as long). Once it runs it takes the
    SIGTERM first (the kernel hands out the lowest-numbered pending signal first, SIGSTOP is 19), then stops: stopped,
    with no SIGTERM pending, although the SIGTERM came after the SIGSTOP. Its handler runs at the SIGCONT."""
    hold = freeze_processes([child.pid])
    try:
        child.send_signal(signal.SIGSTOP)
        child.send_signal(signal.SIGTERM)
        assert signal_pending([child.pid], signal.SIGTERM) == [child.pid]  # both queued: it has not run
    finally:
        hold.thaw()
    _until_stopped(child)
    assert signal_pending([child.pid], signal.SIGTERM) == []  # taken before the stop, not held behind it
    assert child.poll() is None
    child.send_signal(signal.SIGCONT)
    assert child.wait(timeout=30) == 0
    assert child.stdout.read() == "SIGTERM handled\n"


@pytest.mark.skipif(freezer_unavailable_reason() is not None, reason=f"{freezer_unavailable_reason()}")
def test_stop_processes_waits_for_the_stop_not_for_the_sigstop_to_be_sent(child, monkeypatch):
    """Against a process that cannot run (a frozen cgroup), stop_processes is still waiting once its SIGSTOP is
    pending, and returns only after the thaw has let the process stop; a SIGTERM sent then stays pending."""
    hold = freeze_processes([child.pid])
    returned: list[list[int]] = []
    sent = threading.Event()
    send = process_freezer.signal_processes

    def send_then_say(pids, signum):  # stop_processes has sent its SIGSTOP once this returns
        done = send(pids, signum)
        sent.set()
        return done

    monkeypatch.setattr(process_freezer, "signal_processes", send_then_say)
    waiter = threading.Thread(target=lambda: returned.append(stop_processes([child.pid])))
    try:
        waiter.start()
        assert sent.wait(timeout=30), "stop_processes sent no SIGSTOP"
        assert signal_pending([child.pid], signal.SIGSTOP) == [child.pid]
        assert waiter.is_alive() and returned == []  # the frozen child cannot have stopped
    finally:
        hold.thaw()
    waiter.join(timeout=60)
    assert returned == [[child.pid]] and stopped_processes([child.pid]) == [child.pid]
    child.send_signal(signal.SIGTERM)
    assert signal_pending([child.pid], signal.SIGTERM) == [child.pid]
    child.send_signal(signal.SIGCONT)
    assert child.wait(timeout=30) == 0


@pytest.mark.skipif(freezer_unavailable_reason() is not None, reason=f"{freezer_unavailable_reason()}")
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_frozen_process_stays_frozen_through_sigcont_and_takes_sigterm_once_thawed(child, version):
    freezer = dict(available_freezers()).get(version)
    if freezer is None:
        pytest.skip(f"no writable cgroup {version} freezer here")
    hold = freeze_processes([child.pid], (version, freezer))
    try:
        assert hold.pids == [child.pid] and hold.frozen()
        child.send_signal(signal.SIGCONT)
        child.send_signal(signal.SIGSTOP)
        child.send_signal(signal.SIGCONT)
        assert hold.frozen()
        child.send_signal(signal.SIGTERM)
        assert signal_pending([child.pid], signal.SIGTERM) == [child.pid]
        assert child.poll() is None
    finally:
        hold.thaw()
    assert child.wait(timeout=30) == 0
    assert child.stdout.read() == "SIGTERM handled\n"
    assert not hold.cgroup.exists() and not hold.frozen()
    hold.thaw()  # a second thaw does nothing


@pytest.mark.skipif(freezer_unavailable_reason() is not None, reason=f"{freezer_unavailable_reason()}")
def test_thaw_puts_a_process_back_in_its_cgroup(child):
    before = _cgroup_of(child.pid)
    hold = freeze_processes([child.pid])
    try:
        assert _cgroup_of(child.pid) != before
    finally:
        hold.thaw()
    assert _cgroup_of(child.pid) == before
    assert child.poll() is None  # thawed, still running


@pytest.mark.skipif(freezer_unavailable_reason() is not None, reason=f"{freezer_unavailable_reason()}")
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_process_that_cannot_be_moved_out_leaves_none_frozen(monkeypatch, version):
    """Moving one of two held processes out fails (its cgroup and the mount's root both refuse it): thaw still moves
    the other, unfreezes the hold's cgroup, which keeps the one it could not move, and then raises naming it. Both
    run: each takes a SIGTERM sent after the thaw (a frozen one would hold it pending)."""
    freezer = dict(available_freezers()).get(version)
    if freezer is None:
        pytest.skip(f"no writable cgroup {version} freezer here")
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    hold = None
    try:
        for proc in procs:
            assert proc.stdout.readline() == "ready\n"
        hold = freeze_processes([proc.pid for proc in procs], (version, freezer))
        assert hold.frozen() and sorted(hold.pids) == sorted(proc.pid for proc in procs)
        stuck = procs[0].pid
        write_text = Path.write_text

        def refusing(path, text, *args, **kwargs):
            if path.name == "cgroup.procs" and text == str(stuck) and path.parent != hold.cgroup:
                raise PermissionError(13, "Permission denied", str(path))
            return write_text(path, text, *args, **kwargs)

        monkeypatch.setattr(Path, "write_text", refusing)
        with pytest.raises(OSError, match=f"{stuck}"):
            hold.thaw()
        monkeypatch.undo()
        assert not hold.frozen() and hold.cgroup.exists()
        assert f"{stuck}" in (hold.cgroup / "cgroup.procs").read_text().split()
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            assert proc.wait(timeout=10) == 0
            assert proc.stdout.read() == "SIGTERM handled\n"
    finally:
        monkeypatch.undo()
        if hold is not None and hold.cgroup.exists():  # whatever thaw left: frozen, a v1 task ignores even SIGKILL
            (hold.cgroup / ("freezer.state" if hold.version == "v1" else "cgroup.freeze")).write_text(
                "THAWED" if hold.version == "v1" else "0")
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        if hold is not None and hold.cgroup.exists():
            hold.cgroup.rmdir()

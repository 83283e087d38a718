"""Holding a job's processes at a chosen point with the kernel's cgroup freezer, which no signal undoes.

Tests make a Slurm event land at a chosen point of a job by holding the job's processes until the event has reached
them. SIGSTOP cannot hold a job against Slurm itself: slurmd continues a job's tasks (SIGCONT) before it terminates
them, and a preemption with a GraceTime sends its SIGCONT and its SIGTERM as separate requests, so a run stopped with
SIGSTOP can be continued by slurmd and take its remaining steps before the SIGTERM comes. A task in a frozen freezer
cgroup stays frozen through SIGCONT (and SIGSTOP); a signal sent to it stays pending (``/proc/<pid>/status`` ShdPnd,
what ``tests.support.slurm_cluster.signal_pending`` reads) until the test thaws it, and then it lands where the task
stood.

The freezer of cgroup v1 (``freezer.state``) or of cgroup v2 (``cgroup.freeze``), whichever this host mounts; the
processes go into a cgroup of the test's own for the hold and back where they came from when it ends. Slurm here
tracks a job's processes by their parents (``proctrack/linuxproc``), not by cgroup, so the move changes nothing it
sees. Under cgroup v1 a frozen task is not even killed by SIGKILL until thawed: hold in a ``try``/``finally``.

Example::

    hold = freeze_processes(job_processes(str(out)))
    try:
        ...  # make Slurm signal the job; wait for signal_pending(hold.pids, signal.SIGTERM)
    finally:
        hold.thaw()

Where Slurm is not the one signalling (a test's own ``kill``, judge-serve's supervisors), SIGSTOP holds a process, and
:func:`stop_processes` sends it and waits until each process has stopped: a SIGSTOP takes effect only when its target
next runs, and a signal that comes before that is not held pending behind it (its docstring says why).
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path
from typing import Sequence

from tests.support.slurm_cluster import signal_processes, signal_states

#: Seconds a cgroup may take to report all its tasks frozen (microseconds when none is in an uninterruptible wait).
FREEZE_TIMEOUT_S = 30.0
#: Seconds a SIGSTOP'd process may take to stop: it stops itself once it next runs, at once unless the machine keeps
#: it off the CPU or it sits in an uninterruptible wait.
STOP_TIMEOUT_S = 60.0

_names = itertools.count()


class FreezerUnavailable(RuntimeError):
    """This host mounts no cgroup freezer the test can write to (the message says what was looked for)."""


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, super options) of each cgroup mount of this process's mount namespace."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        fstype, _source, options = (tail.split(" ") + ["", ""])[:3]
        if fstype in ("cgroup", "cgroup2"):
            mounts.append((fields.split(" ")[4], fstype, set(options.split(","))))
    return mounts


def _own_cgroup(pid: int, hierarchy: str) -> str:
    """The cgroup path of ``pid`` in a hierarchy: ``freezer`` (v1) or ``""`` (v2's unified one)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _id, controllers, path = line.split(":", 2)
        if (hierarchy in controllers.split(",")) if hierarchy else controllers == "":
            return path
    raise FreezerUnavailable(f"process {pid} is in no {hierarchy or 'cgroup v2'} cgroup (/proc/{pid}/cgroup)")


def available_freezers() -> list[tuple[str, Path]]:
    """The writable freezers of this host, the one :func:`freeze_processes` uses first: ("v1", the mount of the
    cgroup v1 hierarchy with the freezer controller) and ("v2", the cgroup v2 mount), those that are there (a hybrid
    host has both)."""
    mounts = _mounts()
    v1 = [("v1", Path(point)) for point, fstype, options in mounts if fstype == "cgroup" and "freezer" in options]
    v2 = [("v2", Path(point)) for point, fstype, _options in mounts if fstype == "cgroup2"]
    return [(version, point) for version, point in v1[:1] + v2[:1] if os.access(point, os.W_OK)]


def _freezer() -> tuple[str, Path]:
    freezers = available_freezers()
    if not freezers:
        raise FreezerUnavailable("no writable cgroup freezer: neither a cgroup v1 hierarchy with the freezer "
                                 f"controller nor a cgroup v2 mount in /proc/self/mountinfo ({_mounts() or 'none'})")
    return freezers[0]


class FrozenProcesses:
    """Processes held in a frozen cgroup of their own until :meth:`thaw`."""

    def __init__(self, pids: Sequence[int], freezer: tuple[str, Path] | None = None):
        self.version, mount = freezer or _freezer()
        hierarchy = "freezer" if self.version == "v1" else ""
        self.origin: dict[int, Path] = {}
        for pid in pids:
            try:
                self.origin[pid] = mount / _own_cgroup(pid, hierarchy).lstrip("/")
            except FileNotFoundError:  # gone already: nothing to hold
                continue
        # Beside the test's own cgroup: a v2 cgroup holding processes may have children, but not take a process of
        # another subtree without write access to their common ancestor, which the mount's root is.
        self.cgroup = mount / f"judge-test-hold-{os.getpid()}-{next(_names)}"
        self.cgroup.mkdir()
        if self.version == "v2" and not (self.cgroup / "cgroup.freeze").exists():
            self.cgroup.rmdir()
            raise FreezerUnavailable(f"{mount} is a cgroup v2 mount without cgroup.freeze (a kernel before 5.2)")
        self.pids = []
        try:
            for pid in self.origin:
                try:
                    (self.cgroup / "cgroup.procs").write_text(str(pid))
                except ProcessLookupError:
                    continue
                self.pids.append(pid)
            self._freeze()
            deadline = time.monotonic() + FREEZE_TIMEOUT_S
            while not self.frozen():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.cgroup}: its tasks {self.pids} not frozen in {FREEZE_TIMEOUT_S:.0f} s")
                time.sleep(0.01)
        except BaseException:
            self.thaw()
            raise

    def _freeze(self) -> None:
        if self.version == "v1":
            (self.cgroup / "freezer.state").write_text("FROZEN")
        else:
            (self.cgroup / "cgroup.freeze").write_text("1")

    def frozen(self) -> bool:
        """Whether every task of the cgroup is frozen (False once thawed)."""
        if not self.cgroup.exists():
            return False
        if self.version == "v1":
            return (self.cgroup / "freezer.state").read_text().strip() == "FROZEN"
        return "frozen 1" in (self.cgroup / "cgroup.events").read_text().splitlines()

    def thaw(self) -> None:
        """Thaw the processes by putting each back in the cgroup it came from (the mount's root when that one is
        gone), and remove the hold's cgroup; a second call does nothing.

        Moved while the cgroup is still frozen: each process thaws as it joins its unfrozen cgroup, and none can
        start a process in this one meanwhile (a thawed rank soon starts ``scontrol requeue``), so it is empty when
        removed.

        Raises:
            OSError: A process could be moved neither back nor to the root, naming each such pid. Every other one is
                moved first, and the hold's cgroup is then unfrozen and kept with those in it: left frozen they would
                hold the test's processes past its end (a cgroup v1 task even through SIGKILL)."""
        if not self.cgroup.exists():
            return
        root = self.cgroup.parent
        errors: list[tuple[int, OSError]] = []
        for line in (self.cgroup / "cgroup.procs").read_text().split():
            pid = int(line)
            for target in (self.origin.get(pid, root), root):
                try:
                    (target / "cgroup.procs").write_text(str(pid))
                    break
                except ProcessLookupError:
                    break
                except OSError as err:
                    if target == root:
                        errors.append((pid, err))
        if errors:
            self._unfreeze()
            said = "; ".join(f"pid {pid}: {err}" for pid, err in errors)
            raise OSError(f"{self.cgroup}: could not move out {said} (the cgroup is thawed and kept with them in it)"
                          ) from errors[0][1]
        self.cgroup.rmdir()

    def _unfreeze(self) -> None:
        if self.version == "v1":
            (self.cgroup / "freezer.state").write_text("THAWED")
        else:
            (self.cgroup / "cgroup.freeze").write_text("0")


def freeze_processes(pids: Sequence[int], freezer: tuple[str, Path] | None = None) -> FrozenProcesses:
    """Freeze ``pids`` (those still there) and return the hold once all of them are frozen; ``freezer``, one of
    :func:`available_freezers`, the first by default.

    Raises:
        FreezerUnavailable: This host mounts no cgroup freezer the test can write to.
    """
    return FrozenProcesses(pids, freezer)


def freezer_unavailable_reason() -> str | None:
    """Why :func:`freeze_processes` cannot hold processes on this host, or ``None`` when it can."""
    try:
        version, mount = _freezer()
    except (FreezerUnavailable, OSError) as err:
        return str(err)
    if version == "v2":
        probe = mount / f"judge-test-hold-{os.getpid()}-{next(_names)}"
        try:
            probe.mkdir()
        except OSError as err:
            return f"cannot create a cgroup under {mount}: {err}"
        try:
            if not (probe / "cgroup.freeze").exists():
                return f"{mount} is a cgroup v2 mount without cgroup.freeze (a kernel before 5.2)"
        finally:
            probe.rmdir()
    return None


def _stopped_or_gone(pid: int) -> bool | None:
    """True when every thread of ``pid`` is stopped (``/proc/<pid>/task/*/stat`` state ``T``), None when the process
    is gone (or only a zombie is left), else False."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    states = []
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        states.append(stat[stat.rfind(")") + 2])
    if not states or all(state in "ZX" for state in states):
        return None
    return all(state in "TtZX" for state in states)


def stop_processes(pids: Sequence[int], timeout_s: float = STOP_TIMEOUT_S) -> list[int]:
    """SIGSTOP each of ``pids``, wait until every one of them has stopped, and return those stopped (one that ended
    meanwhile is left out).

    ``kill`` only queues a SIGSTOP: its target stops itself the next time it runs, and a machine under load can keep
    it off the CPU a while. A signal sent to it meanwhile is not held pending behind the stop: the kernel hands a
    process its lowest-numbered pending signal first, so a SIGINT, SIGUSR1 or SIGTERM (all below SIGSTOP's 19) is
    taken first, its handler made ready to run at the SIGCONT, and the process stops with nothing pending. A test
    that stops processes and then waits for a signal to be pending in them (``slurm_cluster.signal_pending``) stops
    them here, so that the signal lands on stopped processes on any machine.

    Raises:
        AssertionError: A process has not stopped within ``timeout_s`` (the message gives its state and signal masks);
            every process stopped here is continued (SIGCONT) first, so that a failed test leaves none stopped.
    """
    sent = signal_processes(pids, signal.SIGSTOP)
    deadline = time.monotonic() + timeout_s
    while waiting := [pid for pid in sent if _stopped_or_gone(pid) is False]:
        if time.monotonic() >= deadline:
            states = signal_states(waiting)
            signal_processes(sent, signal.SIGCONT)
            raise AssertionError(f"SIGSTOP did not stop {waiting} within {timeout_s:g} s:\n{states}")
        time.sleep(0.01)
    return [pid for pid in sent if _stopped_or_gone(pid)]

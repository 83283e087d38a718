"""The supervisor that ``judge.plumbing.processes.start_process`` runs every command under (stdlib only).

Run as a script, ``python -I -S judge/plumbing/supervisor.py --grace-s S --owner-pid P [--sigterm-shielded] --
command...``, so that it imports nothing of the project or of site-packages: it leads its own session and process
group, is a child subreaper, and takes the whole group down, with every process below it in any other group, when
its owner or its command dies (``judge.plumbing.processes`` says the rules and why). ``--sigterm-blocked-module
MODULE ARGS`` runs a Python module with SIGTERM blocked for good (a shielded engine's own process). The helpers the
owner's side also needs — ``child_setup`` between fork and exec, ``group_members``, ``descendants`` — live here so
that both sides run the same code.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

# judge.plumbing.processes imports these; a list of names imports nothing, so ``python -I -S`` still runs this file
__all__ = ["LINUX", "ORPHAN_GRACE_S", "child_setup", "children_of", "descendants", "group_members"]

#: Whether the kernel is Linux, whose prctl arms the parent-death signal and makes a child subreaper.
LINUX = sys.platform.startswith("linux")
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: Seconds between the supervisor's checks that its owner is still alive.
_OWNER_POLL_S = 0.5
#: Seconds the orphans of a command that died on its own get between SIGTERM and SIGKILL (at most grace_s).
ORPHAN_GRACE_S = 5.0

def _libc_prctl() -> Callable[[int, int], int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl if LINUX else None
    except (OSError, AttributeError):
        return None


# Looked up once, in the parent: the child between fork and exec of a threaded process (judge-serve) should only
# call it; a dlopen there can deadlock on a lock another thread held at the fork (Python's subprocess docs on
# preexec_fn).
_PRCTL = _libc_prctl()


def _prctl(option: int, value: int) -> None:
    # Quiet on failure: between fork and exec nothing may be raised or logged (an exception there reaches the parent
    # as subprocess's bare SubprocessError), and neither option is the only guard: the supervisor also polls its
    # owner (``_OWNER_POLL_S``) and signals its group's and its descendants' processes by pid.
    if _PRCTL is not None:
        with contextlib.suppress(Exception):
            _PRCTL(option, value)


def _die_with_parent(sig: int = signal.SIGTERM) -> None:  # runs in the child between fork and exec; survives exec
    _prctl(_PR_SET_PDEATHSIG, sig)


def child_setup(*, shielded: bool, pdeathsig: bool) -> Callable[[], None] | None:
    """What runs in a child between fork and exec: SIGTERM blocked when shielded, the parent-death signal armed."""
    if not shielded:
        return _die_with_parent if pdeathsig else None

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        if pdeathsig:
            _die_with_parent(signal.SIGINT)

    return setup


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name: [state, ppid, pgrp, ...]; None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group ``pgid`` (Linux ``/proc``)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields and fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry))
    return members


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, zombies included (Linux ``/proc``)."""
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields and int(fields[1]) == pid:
                children.append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Live (not zombie) processes below ``pid``, whatever their process group, each parent before its children
    (one read of Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    live = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry))
                if fields[0] != "Z":
                    live.add(int(entry))
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in children.get(parent, ())]
        found += frontier
    return [member for member in found if member in live]


class _Stop(Exception):
    pass


class _StopOnce:
    """The stop signals' handler: raises :class:`_Stop` in the main thread the first time, and never again.

    A stop often comes twice (the parent-death signal, then the owner-watch thread's own signal a moment later;
    scancel's SIGTERM beside the owner's SIGINT): a second ``_Stop`` raised while the first is being handled would
    escape the wait it was meant to end, and the supervisor would die of it with its group left running.
    ``disarm`` also ends it once the command has exited on its own, where nothing is left to interrupt.
    ``deferred`` holds a stop back while the command is being started: raised inside ``subprocess.Popen``, after
    the fork, it would lose the command's pid, and the supervisor could no longer tell its status to the owner.
    """

    def __init__(self) -> None:
        self.armed = True
        self._deferring = False
        self._pending: int | None = None

    def disarm(self) -> None:
        self.armed = False

    @contextlib.contextmanager
    def deferred(self):
        """A stop that lands inside the block is raised as it ends (when the block raised nothing itself)."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self._pending is not None and self.armed:
            self.armed = False
            raise _Stop(self._pending)

    def __call__(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        if self.armed:
            if self._deferring:
                self._pending = signum
                return
            self.armed = False
            raise _Stop(signum)


def _reap_until_none_left(deadline: float, statuses: dict[int, int]) -> None:
    """Reap descendants (ours, or re-parented to us as subreaper) until none is left or ``deadline`` passes."""
    while time.monotonic() < deadline:
        try:
            pid, raw = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)
        else:
            statuses[pid] = raw


def _kill_everything_below(me: int, first: int | None, deadline: float, statuses: dict[int, int]) -> None:
    """SIGKILL every live process below us or in our group, ``first`` first, reaping, until none is left or
    ``deadline`` passes.

    Below us includes other process groups: a command that runs supervised commands of its own (judge-serve and its
    engines) leaves their supervisors to us when it dies, and once we kill such a supervisor it can no longer end
    its group, so we do. A process forked while we read the tree is orphaned to us (or to a supervisor below us, in
    the same read again) when its parent dies: the next round finds it.
    """
    while time.monotonic() < deadline:
        left = set(group_members(me) + descendants(me)) - {me}
        if not left:
            return
        # The command first, so its status says it was killed (not that it exited once its children were).
        for pid in sorted(left, key=lambda pid: pid != first):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap_until_none_left(min(deadline, time.monotonic() + 0.05), statuses)


def _watch_owner(owner: int, me: int, stop_signal: int) -> None:
    """Stop (SIGTERM to ourselves) once the owner is gone: we are re-parented, so ``getppid`` changes.

    The parent-death signal covers this at once when the owner started us from its main thread; from any other
    thread it is not armed (it would fire when that thread exits), and this poll is what notices the owner's death.
    """

    def watch() -> None:
        while os.getppid() == owner:
            time.sleep(_OWNER_POLL_S)
        os.kill(me, stop_signal)

    threading.Thread(target=watch, name="owner-watch", daemon=True).start()


def _supervise(argv: list[str]) -> int:
    """Run ``argv`` (``--grace-s S --owner-pid P [--sigterm-shielded] -- command...``) as the module docstring says;
    returns its status."""
    command = argv[argv.index("--") + 1 :]
    options = argv[: argv.index("--")]
    grace_s = float(options[options.index("--grace-s") + 1])
    owner = int(options[options.index("--owner-pid") + 1])
    # Shielded: SIGTERM stays blocked (the owner set it before exec; the command inherits it), so SIGINT does its job.
    shielded = "--sigterm-shielded" in options
    stop_signal = signal.SIGINT if shielded else signal.SIGTERM
    if LINUX and os.getppid() != owner:  # the owner died before our parent-death signal was armed
        return 1
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    on_stop = _StopOnce()
    me = os.getpid()
    statuses: dict[int, int] = {}
    child_pid = None
    stopped_by = stop_signal
    try:
        # Inside the try: a stop landing as the handlers are installed or the owner watch starts (an owner that stops
        # what it has just started) is a stop before the command, not a traceback and exit 1.
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, on_stop)
        _watch_owner(owner, me, stop_signal)
        try:
            with on_stop.deferred():
                # The command is the process this one exists to outlive: only from outside it can its whole group
                # be taken down when it, or the owner, dies (the module docstring); the cost is this one fork and
                # exec of an isolated interpreter per started command, beside an engine's start of tens of seconds
                # (docs/performance.md, the supervisor's row: bench/supervisor_start.py).
                # Held until we return: a collected Popen polls (and so reaps) its child in __del__, and the wait
                # below must be the one to reap it.
                child = subprocess.Popen(command, preexec_fn=child_setup(shielded=shielded, pdeathsig=LINUX))
                child_pid = child.pid
        except OSError as err:
            on_stop.disarm()
            print(f"supervisor: cannot start {command[0]}: {err}", file=sys.stderr, flush=True)
            return 127
        # Reap re-parented orphans along the way; a signal interrupts the wait through on_stop.
        while child_pid not in statuses:
            pid, raw = os.waitpid(-1, 0)
            statuses[pid] = raw
        on_stop.disarm()
    except _Stop as stop:
        stopped_by = stop.args[0]
    else:
        # The command died on its own: what is left are its orphans, with nobody to serve (vLLM's EngineCore, for
        # one, lingers for many seconds after SIGTERM once its API server is gone). A short grace, so the owner
        # learns of the death in seconds.
        grace_s = min(grace_s, ORPHAN_GRACE_S)
    # Take the group down: one stop signal to everyone but us, then SIGKILL after the grace to everything below us.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(me, stop_signal)
    _reap_until_none_left(time.monotonic() + grace_s, statuses)
    _kill_everything_below(me, child_pid, time.monotonic() + 10.0, statuses)
    _reap_until_none_left(time.monotonic() + 10.0, statuses)
    if child_pid is None:  # stopped before the command started: end as the stop's default action would have
        sig = stopped_by
    else:
        status = statuses.get(child_pid)
        if status is None:  # pragma: no cover - the child outlived SIGKILL
            return 128 + signal.SIGKILL
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        sig = os.WTERMSIG(status)
    if sig != signal.SIGKILL:
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})  # a shielded supervisor has SIGTERM blocked
    os.kill(me, sig)  # die of the same signal, so the owner reads -sig as it would from the command itself
    return 128 + sig


def _run_module_sigterm_blocked(module: str, args: list[str]) -> None:
    """``python -m module args`` with SIGTERM blocked for good in this process (the module docstring says why)."""
    import runpy

    sys.path[0] = os.getcwd()  # as `python -m` has it, not this file's folder (judge/ must not shadow anything)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    real_sigmask = signal.pthread_sigmask

    def sigmask_keeping_sigterm(how: int, mask):  # multiprocessing.resource_tracker unblocks it after a spawn
        if how == signal.SIG_UNBLOCK:
            mask = set(mask) - {signal.SIGTERM}
        elif how == signal.SIG_SETMASK:
            mask = set(mask) | {signal.SIGTERM}
        return real_sigmask(how, mask)

    signal.pthread_sigmask = sigmask_keeping_sigterm
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sigterm-blocked-module"]:
        _run_module_sigterm_blocked(sys.argv[2], sys.argv[3:])
    else:
        raise SystemExit(_supervise(sys.argv[1:]))

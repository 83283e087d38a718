"""Starting, watching and stopping server processes (vLLM engines, judge-serve) so that none outlives its owner.

Why one module of ~550 lines: starting a process under its supervisor, waiting for it, reading its log and stopping
it all follow the rules below over one ``ManagedProcess``; split, each part would restate them.

    proc = start_process([sys.executable, "-m", "serve.cli", ...], log_path=run_dir / "judge-serve.log")
    try:
        proc.wait_ready(f"http://127.0.0.1:{port}/ready", timeout_s=600)
        ...
    finally:
        proc.stop(grace_s=60)

The one home for the mechanism (judge-serve's engines, the eval runner's local server, the benchmark, the demo and
the test fixtures all call it). Each command runs under a **supervisor**: a tiny stdlib-only Python process
(``python -I -S judge/plumbing/supervisor.py``, ``judge.plumbing.supervisor`` run as a script) that leads its own session and process group and
is a child subreaper. The command and everything it forks (vLLM's API server, its ``VLLM::EngineCore``, workers)
stay in that group and, orphaned, are re-parented to the supervisor. The rules, all enforced by the kernel or by
the supervisor, never by the owner's good behaviour:

* **The owner dies, even by ``kill -9``**: the kernel sends the supervisor SIGTERM (``PR_SET_PDEATHSIG``, set
  between fork and exec); it SIGTERMs the group, waits ``grace_s`` for every descendant, then SIGKILLs what is left.
  (``PR_SET_PDEATHSIG`` alone on vLLM's API server would not do: a signal-killed API server leaves its
  ``EngineCore``, which does not watch its parent, running.)
* **The command dies** (OOM killer, crash, ``kill -9`` of the API server): the supervisor takes the rest of the
  group down the same way, with a grace of at most ``ORPHAN_GRACE_S`` (5 s), and exits with the command's status (a signal death is re-raised, so the owner reads
  ``-9`` as it would from the command itself).
* **The owner stops it** (``stop``): SIGTERM to the supervisor, which passes it on to the group once (a second
  SIGTERM would cut vLLM's graceful shutdown short), then SIGKILL to the whole group after ``grace_s``.
* The supervisor itself ``kill -9``-ed: its command gets SIGTERM from the kernel (it, too, has a parent-death
  signal), and the owner's ``stop`` SIGKILLs the group that is left.
* **Supervisors nested** (judge-serve run by ``start_process``, its engines under supervisors of their own): the
  supervisor's SIGKILL at the end of its grace reaches every process below it, in whatever process group, not only
  its own group. When judge-serve dies, its engines' supervisors are re-parented to judge-serve's supervisor, which
  SIGKILLs them when its grace (``ORPHAN_GRACE_S``) is over; the engine's own grace (``engine_stop_grace_s``, 30 s) may
  still be running then, and a supervisor killed mid-grace can no longer end its group (a vLLM shutdown slower than
  the outer grace would leave its API server, ``EngineCore`` and resource tracker running unsupervised), so the
  outer one ends that group too. An inner tree gets at most the outer grace.

**Shielded from SIGTERM** (``sigterm_shielded=True``, judge-serve's engines): Slurm's ``scancel`` and preemption,
systemd and container runtimes send SIGTERM to *every* process of the job at once; an engine that gets it stops
(vLLM's worker dies on it) while its owner is still answering the requests in flight. A shielded supervisor and
its command start with SIGTERM **blocked** (set between fork and exec; a signal mask survives ``exec`` and is
inherited by every fork, and a handler vLLM installs does not unblock it, whereas ``SIG_IGN`` would be replaced
by it), so only the owner hears that SIGTERM, drains, and then stops the tree itself. Python itself unblocks it:
``multiprocessing``'s resource tracker calls ``pthread_sigmask(SIG_UNBLOCK, {SIGINT, SIGTERM})`` in the process that
starts it (observed: a shielded vLLM engine's API server and ``EngineCore`` then got scancel's SIGTERM). So a
Python module command (``python -m module ...``) runs through the supervisor's shield (``--sigterm-blocked-module``), which
keeps SIGTERM in the mask of the engine's own process whatever Python code asks; the processes it spawns inherit
the mask. (A shell clears its mask at start: a shielded ``sh -c`` command is not shielded.) Every rule above still holds
with SIGINT in SIGTERM's place: the owner's ``stop``, the parent-death signals and the supervisor's signal to the
group are SIGINT (vLLM's API server, ``EngineCore`` and workers shut down on it as on SIGTERM). SIGKILL (Slurm's,
after ``KillWait``) is never blocked.

Linux only for the guarantees (``prctl``); elsewhere the same calls run without them. ``PR_SET_PDEATHSIG`` fires
when the *thread* that forked dies, so it is armed only for processes started from the main thread; the supervisor
also polls its parent (``getppid``, every 0.5 s) and stops when the owner is gone, so a process started from a
worker thread (a thread pool, ``asyncio.to_thread``) outlives that thread but not its owner.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Sequence

from judge.plumbing import supervisor
from judge.plumbing.provenance import REDACTED, argv_secrets, redact_argv, scrub_secrets
from judge.plumbing.supervisor import LINUX, ORPHAN_GRACE_S, child_setup, children_of, descendants, group_members

__all__ = [
    "ManagedProcess",
    "ProcessStartError",
    "free_port",
    "group_members",
    "http_status",
    "kill_descendants",
    "log_tail",
    "socket_inodes",
    "start_process",
    "tcp_sockets",
]

#: Seconds between readiness polls.
_POLL_S = 0.5
#: The supervisor, run as a script (stdlib only; see its docstring).
_SUPERVISOR = str(Path(supervisor.__file__).resolve())


class ProcessStartError(RuntimeError):
    """A process exited, or did not answer in time, while starting; the message carries its log tail.

    Attributes:
        exit_code: the status it exited with (``-N`` for signal N); None when it timed out or was abandoned.
    """

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` for a server about to start, kept from every other program for about a minute.

    A port that was merely free a moment ago (bind to 0, close) is the next one the kernel may hand to anyone's
    ``bind(0)`` or ``connect()`` while the server it was picked for is still importing (a vLLM engine binds its port
    10-40 s after it starts; meanwhile the suite's other engines pick ports for their own servers and workers). This
    one is left in TIME_WAIT: a connection to it is accepted and closed by the listening side first. Linux hands no
    port with a TIME_WAIT socket to ``bind(0)`` (tests/unit/test_processes.py) nor, by the same bind-table rule, to
    ``connect()``'s choice of a local port, while a server that binds it with ``SO_REUSEADDR`` gets it at once:
    vLLM's, uvicorn's and asyncio's servers, ``http.server``, torch's ``TCPStore`` and Slurm's daemons all set it. A
    bind without ``SO_REUSEADDR`` fails until the TIME_WAIT ends (60 s on Linux).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, 0))
        listener.listen(1)
        address = listener.getsockname()
        with socket.create_connection(address, timeout=5):
            accepted, _ = listener.accept()
            accepted.close()  # the listening side closes first: its end of the connection, on the port, waits
        return address[1]


class TcpSocket(NamedTuple):
    """One row of ``/proc/net/tcp`` or ``/proc/net/tcp6``."""

    local_port: int
    remote_port: int
    state: str  # the kernel's state in hex: TCP_LISTEN, TCP_ESTABLISHED, ...
    rx_queue: int  # bytes received and not yet read by the socket's owner
    inode: int


TCP_ESTABLISHED, TCP_LISTEN = "01", "0A"


def tcp_sockets() -> list[TcpSocket] | None:
    """Every IPv4 and IPv6 TCP socket of this network namespace; None where ``/proc/net/tcp`` cannot be read (not
    Linux)."""
    rows: list[TcpSocket] = []
    read_any = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        read_any = True
        for line in lines:
            # sl local_address rem_address st tx_queue:rx_queue ... inode: "0: 0100007F:1F90 00000000:0000 0A ..."
            fields = line.split()
            with contextlib.suppress(ValueError, IndexError):
                rows.append(TcpSocket(int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16),
                                      fields[3], int(fields[4].split(":")[1], 16), int(fields[9])))  # fmt: skip
    return rows if read_any else None


def socket_inodes(pids: Sequence[int]) -> set[int]:
    """The inodes of the sockets that processes ``pids`` hold open (those whose descriptors can be read)."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:[") and target[8:-1].isdigit():
                        inodes.add(int(target[8:-1]))
    return inodes


def http_status(url: str, timeout_s: float = 5.0) -> int:
    """The HTTP status ``GET url`` answers with now; 0 when nothing answers, or nothing in HTTP (another service on
    that port: http.client's ``BadStatusLine``; an answer cut short; a port that is no number: ``InvalidURL``)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, http.client.HTTPException):
        return 0


def _read_log(path: Path, start: int = 0) -> str:
    """A log's text from byte ``start`` on (the whole of it when it is shorter: truncated since)."""
    with open(path, "rb") as log:
        if start and os.fstat(log.fileno()).st_size >= start:
            log.seek(start)
        return log.read().decode(errors="replace")


#: The most of a log's end ``log_tail`` reads: a log of gigabytes (an engine that ran for days, vLLM's request
#: logging) is never read whole; a line longer than this is cut at its head.
_TAIL_BYTES = 1 << 20


def log_tail(path: Path | None, n_lines: int = 60, start: int = 0, end: int | None = None) -> str:
    """The last ``n_lines`` of a log file (from byte ``start`` on, up to byte ``end``: what one run of a program wrote
    to a log the next run appends to), or a note saying why there are none. Read backwards from the end, 64 KiB at a
    time, until it holds them (at most ``_TAIL_BYTES``)."""
    if path is None:
        return "(no log)"
    try:
        with open(path, "rb") as log:
            size = os.fstat(log.fileno()).st_size
            if end is not None:
                size = min(size, end)
            first = max(start if size >= start else 0, size - _TAIL_BYTES)  # start past the end: truncated since
            data, begin = b"", size
            while begin > first and data.count(b"\n") <= n_lines:
                end, begin = begin, max(first, begin - (1 << 16))
                log.seek(begin)
                data = log.read(end - begin) + data
    except OSError as err:
        return f"(no log: {err})"
    return "\n".join(data.decode(errors="replace").splitlines()[-n_lines:])


#: A line that names a failure: an exception line as Python prints it (``ValueError: ...`` at column 0, also
#: dotted, also after vLLM's ``(EngineCore pid=7)`` process prefix), or a logger line at ERROR or CRITICAL level
#: (vLLM: ``(EngineCore pid=7) ERROR 11-23 ...``).
_ERROR_LINE = re.compile(r"^(\([^)]*\) )?[\w.]*(Error|Exception|Exit|Interrupt)\b.*:|\b(ERROR|CRITICAL)\b")


def error_lines(path: Path | None, limit: int = 12, start: int = 0) -> list[str]:
    """The distinct lines of a log (from byte ``start``) naming a failure, oldest first, at most ``limit`` (the last).

    A server's log tail often ends in a wrapper's traceback (vLLM: "Engine core initialization failed. See root
    cause above") while the root cause sits further up; these lines put it at the head of a start error.
    """
    if path is None:
        return []
    try:
        lines = _read_log(Path(path), start).splitlines()
    except OSError:
        return []
    seen: dict[str, None] = {}
    after_frame = False  # the line before was a traceback's frame: this one may be its source line
    reasons_left = 0  # indented lines still to keep under an exception line printed bare
    for line in lines:
        inside, after_frame = _traceback_body(line, after_frame)
        if _ERROR_LINE.search(line) and not inside:
            seen.setdefault(line.strip()[:400], None)
            reasons_left = 2 if _LOGGED_MESSAGE.search(line) is None else 0
        elif reasons_left and line[:1].isspace() and not line.strip().startswith(("File ", "For further information")):
            # A bare traceback's exception line may hold no reason: pydantic's "ValidationError: 1 validation
            # error for ModelConfig" (vLLM's API server refusing --max-model-len) gives it on the indented line
            # under it, which "errors in the log" otherwise left to the raw tail, under some forty frame lines.
            if line.strip():
                seen.setdefault(line.strip()[:400], None)
            reasons_left -= 1
        else:
            reasons_left = 0
    return list(seen)[-limit:]


#: The message of a logger line at ERROR or CRITICAL level, after vLLM's level, date, time and source position
#: (``(VllmWorker-0 pid=7) ERROR 12-04 12:31:47 [multiproc_executor.py:953] <message>``).
_LOGGED_MESSAGE = re.compile(r"\b(?:ERROR|CRITICAL) [^\[]*\[[^\]]*\] ?(.*)$")
#: A traceback's frame line, as Python prints it.
_FRAME = re.compile(r'^\s+File "[^"]*", line \d+')


def _traceback_body(line: str, after_frame: bool) -> tuple[bool, bool]:
    """Whether a logged ERROR line is the inside of a traceback (its header, a frame, the source line after a frame,
    a caret line), and whether it is a frame. vLLM logs a worker's whole traceback line by line at ERROR level: the
    last twelve such lines were all frames of the engine core's traceback, and the worker's own exception line above
    them (``ValueError: Available memory on node 0 ... is less than desired CPU memory utilization``), the root
    cause, was left out. An indented line that follows no frame is a message's own (a pydantic error's reason)."""
    found = _LOGGED_MESSAGE.search(line)
    if found is None:
        return False, False
    message = found.group(1)
    if _FRAME.match(message):
        return True, True
    inside = (message.startswith("Traceback (most recent call last)") or not message.strip("^~ ")
              or (after_frame and message[:1].isspace()))
    return inside, False


def kill_descendants(pid: int) -> int:
    """SIGKILL every descendant of ``pid`` (not ``pid`` itself), each parent before its children; returns how many.

    The whole tree is read first, so a child re-parented when its parent dies is still killed. For a tree whose
    top is a pid namespace's init (bubblewrap's child) the kernel kills the rest of the namespace at its death.
    """
    killed = 0
    for member in descendants(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(member, signal.SIGKILL)
            killed += 1
    return killed


@dataclass
class ManagedProcess:
    """A command started by :func:`start_process`, under its supervisor.

    Attributes:
        proc: the supervisor's ``Popen``; its pid leads the process group.
        command: the command line that was asked for.
        log_path: where its stdout and stderr go.
        name: what messages call it.
        grace_s: seconds SIGTERM gets before SIGKILL, in ``stop`` and in the supervisor.
        sigterm_shielded: started with SIGTERM blocked; stopped with SIGINT (module docstring).
        log_start: the log's size when it started: an appended log's earlier failures are not this run's.
    """

    proc: subprocess.Popen
    command: list[str]
    log_path: Path | None
    name: str
    grace_s: float
    sigterm_shielded: bool = False
    log_start: int = 0
    _exit: int | None = field(default=None, repr=False)

    @property
    def stop_signal(self) -> int:
        """The signal ``stop`` sends first: SIGTERM, or SIGINT when SIGTERM is blocked (``sigterm_shielded``)."""
        return signal.SIGINT if self.sigterm_shielded else signal.SIGTERM

    @property
    def pid(self) -> int:
        """The supervisor's pid, which is also the process group id."""
        return self.proc.pid

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def main_pid(self) -> int | None:
        """The command's own pid (the supervisor's child), or None once it has gone."""
        children = children_of(self.proc.pid)
        return min(children) if children else None

    def exit_code(self) -> int | None:
        """The exit status once it has exited (``-N`` for signal N), else None; does not reap, so the group id
        stays reserved until ``stop``."""
        if self._exit is not None:
            return self._exit
        if self.proc.returncode is not None:
            self._exit = self.proc.returncode
            return self._exit
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped elsewhere
            self._exit = self.proc.poll() if self.proc.poll() is not None else -1
            return self._exit
        if info is None or info.si_pid == 0:
            return None
        self._exit = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        return self._exit

    def alive(self) -> bool:
        return self.exit_code() is None

    def log_tail(self, n_lines: int = 60, end: int | None = None) -> str:
        """The last ``n_lines`` this command wrote to its log (up to byte ``end``, when given: where it ended when the
        command died, before a successor appended to it), secrets redacted (``scrubbed``): every caller copies them
        where the log folder's mode does not reach (a console, a Slurm log, an HTTP answer)."""
        return self.scrubbed(log_tail(self.log_path, n_lines, self.log_start, end))

    def scrubbed(self, text: str) -> str:
        """``text`` (lines of this command's log) with ``scrub_secrets``' secrets and the secrets on this command's
        own line (``--hf-token X``) redacted: a program may log its own arguments (vLLM does)."""
        text = scrub_secrets(text)
        for secret in argv_secrets(self.command):  # also those inside a JSON value or a group of shell words
            if len(secret) >= 4:  # shorter values would blank ordinary text
                text = text.replace(secret, REDACTED)
        return text

    def _failure_summary(self) -> str:
        found = error_lines(self.log_path, start=self.log_start)
        return "errors in the log:\n  " + self.scrubbed("\n  ".join(found)) + "\n" if found else ""

    def _command_and_log(self) -> str:
        """The command and the log's tail for a start failure, secrets redacted: the message reaches consoles,
        Slurm logs and judge-serve's unauthenticated /ready."""
        return f"command: {' '.join(redact_argv(self.command))}\nlog ({self.log_path}):\n{self.log_tail()}"

    def wait_ready(
        self,
        url: str,
        timeout_s: float,
        *,
        should_stop: Callable[[], bool] = lambda: False,
        ready: Callable[[int], bool] = lambda status: status == 200,
        interval_s: float = _POLL_S,
        on_poll: Callable[[], None] = lambda: None,
    ) -> None:
        """Block until ``GET url`` answers a status ``ready`` accepts (default 200), from this command; ``on_poll`` is
        called after each poll that found it not ready, before the pause (a caller's progress lines).

        Where a socket on this machine listens on the URL's port, the answer counts only when a process of this
        command's group holds one (Linux ``/proc``). Another program on that port, there before the command bound it,
        would otherwise pass for the command, and every request meant for it would reach that program. So a command
        whose listening socket another process holds (a server that daemonises, ``sudo``, a container's port
        forwarder) never counts as ready here. Where nothing local listens on the port (a remote host), and where
        ``/proc`` cannot be read, any answer counts, as it always did.

        Raises:
            ProcessStartError: the process exited, ``timeout_s`` passed, or ``should_stop()`` became true; the
                message names the command and carries the log's tail (and says when another program answered).
        """
        deadline = time.monotonic() + timeout_s
        try:
            port = urllib.parse.urlsplit(url).port
        except ValueError:  # not a port number: http_status answers 0 for such a URL, and the timeout names it
            port = None
        foreign = ""
        while True:
            code = self.exit_code()
            if code is not None:
                raise ProcessStartError(
                    f"{self.name} exited with code {code} while starting.\n{foreign}{self._failure_summary()}"
                    f"{self._command_and_log()}",
                    exit_code=code,
                )
            if ready(http_status(url)):
                if self.holds_listener(port) is not False:
                    return
                foreign = (
                    f"port {port} answered {url}, but from a process outside {self.name}'s process group: another "
                    "program holds that port.\n"
                )
            if should_stop():
                raise ProcessStartError(f"{self.name}: start abandoned (its owner is shutting down)")
            if time.monotonic() > deadline:
                raise ProcessStartError(
                    f"{self.name} did not answer {url} within {timeout_s:.0f} s.\n{foreign}{self._failure_summary()}"
                    f"{self._command_and_log()}"
                )
            on_poll()
            time.sleep(interval_s)

    def holds_listener(self, port: int | None) -> bool | None:
        """Whether a process of this command's group holds a socket listening on TCP ``port``; None where that
        cannot be told (no port, no ``/proc/net/tcp``, or nothing on this machine listens there: the URL's server is
        elsewhere)."""
        if port is None:
            return None
        listening = {s.inode for s in tcp_sockets() or () if s.local_port == port and s.state == TCP_LISTEN}
        return bool(listening & socket_inodes([self.proc.pid, *group_members(self.pgid)])) if listening else None

    def stop(self, grace_s: float | None = None) -> int | None:
        """Stop the command and everything it started: SIGTERM (SIGINT when shielded), ``grace_s``, then SIGKILL to the
        whole group; reaps.

        Idempotent; safe on a process that already exited (its group's leftovers are still SIGKILLed).

        Returns:
            The exit status (``-N`` for signal N).
        """
        grace = self.grace_s if grace_s is None else grace_s
        if self.proc.returncode is not None:
            return self.proc.returncode
        if self.alive():
            # One signal to the supervisor, which passes it to the group and reaps it within its own grace, then
            # up to ORPHAN_GRACE_S for the command's orphans.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, self.stop_signal)
            deadline = time.monotonic() + grace + ORPHAN_GRACE_S
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
        # Still unreaped here, so the group id cannot have been reused: SIGKILL whatever is left in it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            return None

    def __enter__(self) -> ManagedProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_process(
    command: Sequence[str],
    *,
    log_path: str | Path | None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    name: str | None = None,
    grace_s: float = 30.0,
    append_log: bool = False,
    sigterm_shielded: bool = False,
) -> ManagedProcess:
    """Start ``command`` in its own session and process group, under a supervisor; returns at once.

    Args:
        command: the command line.
        log_path: file for its stdout and stderr (created with its folder; ``None``: discarded).
        env: its whole environment (default: this process's).
        cwd: its working folder.
        name: what messages call it (default: the program's name).
        grace_s: seconds between SIGTERM and SIGKILL when it stops, whoever stops it.
        append_log: append to ``log_path`` instead of truncating it (a restarted engine keeps its history).
        sigterm_shielded: start the supervisor and the command with SIGTERM blocked, so a SIGTERM sent to every
            process of a Slurm job (``scancel``) or a control group reaches only the owner, which drains and then
            stops this tree with SIGINT (module docstring).

    Returns:
        The :class:`ManagedProcess`; wait for it with ``wait_ready``, end it with ``stop``.
    """
    command = [str(part) for part in command]
    if sigterm_shielded and len(command) > 2 and command[1] == "-m" and Path(command[0]).name.startswith("python"):
        command = [command[0], _SUPERVISOR, "--sigterm-blocked-module", *command[2:]]
    full = [sys.executable, "-I", "-S", _SUPERVISOR, "--grace-s", str(grace_s), "--owner-pid", str(os.getpid()),
            *(["--sigterm-shielded"] if sigterm_shielded else []), "--", *command]  # fmt: skip
    if log_path is not None:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        out = open(log_path, "ab" if append_log else "wb")  # noqa: SIM115 - closed below, once the child holds it
        log_start = os.fstat(out.fileno()).st_size
    else:
        log_start = 0
        out = open(os.devnull, "wb")  # noqa: SIM115
    with out:
        proc = subprocess.Popen(
            full,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
            # The kernel's parent-death signal follows the *thread* that forks: armed only from the main thread,
            # which lives as long as the owner. Started from another thread (a fixture's thread pool, a server's
            # worker), the supervisor notices the owner's death by polling instead (_watch_owner).
            preexec_fn=child_setup(
                shielded=sigterm_shielded,
                pdeathsig=LINUX and threading.current_thread() is threading.main_thread(),
            ),
        )
    name = name or Path(command[0]).name
    return ManagedProcess(proc, command, log_path, name, grace_s, sigterm_shielded, log_start)


# ----------------------------------------------------------------------------------------------- the supervisor


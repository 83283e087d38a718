"""Without bubblewrap a sample dies with its supervisor (``PR_SET_PDEATHSIG``), as bubblewrap's ``--die-with-parent``
makes it under bubblewrap: a supervisor killed by SIGTERM runs no ``finally`` that would stop it, and a sleeping
sample (RLIMIT_CPU does not count sleep) stayed forever, reparented to init.

Ordered by a FIFO, with no sleeps: the sample opens it for writing and says its pid and folder, the test SIGTERMs
the supervisor, and the FIFO's end of file says that the sample's last descriptor closed: it is dead.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Runs one sample without bubblewrap and waits for it (600 s per test: far longer than this test).
SUPERVISOR = (
    "import logging, sys\n"
    "logging.disable(logging.CRITICAL)\n"
    "from eval.mera.sandbox import ExecJob, Limits, Sandbox\n"
    "sandbox = Sandbox(Limits(timeout_s=600.0), isolation='none')\n"
    "sandbox.run(ExecJob(program=sys.argv[1], entry_point='f', tests=[{}], expected=['ok']))\n"
)

#: Says its pid and working folder on the FIFO, keeps the FIFO open and sleeps.
SLEEPER = (
    "import os, time\n"
    "def f():\n"
    "    fd = os.open({fifo!r}, os.O_WRONLY)\n"
    "    os.write(fd, f'{{os.getpid()}} {{os.getcwd()}}\\n'.encode())\n"
    "    time.sleep(10**6)\n"
)


def _read_when_ready(fd: int, bound_s: float) -> bytes | None:
    """What the FIFO gives (``b""`` at its end), or ``None`` when nothing came within ``bound_s`` (a bound for a
    failing test, not a measurement)."""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        if not selector.select(bound_s):
            return None
    return os.read(fd, 4096)


def test_a_sample_dies_with_its_supervisor_killed_by_sigterm(sandbox_user):
    folder = Path(tempfile.mkdtemp(prefix="sandbox-parent-death-"))
    folder.chmod(0o755)  # reachable to nobody, the sample's user when the tests run as root
    fifo = folder / "up"
    os.mkfifo(fifo)
    fifo.chmod(0o666)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    supervisor = subprocess.Popen([sys.executable, "-c", SUPERVISOR, SLEEPER.format(fifo=str(fifo))], cwd=REPO,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    pid, workdir = None, None
    try:
        said = _read_when_ready(reader, 120)
        assert said, f"the sample never said it was up (supervisor exit {supervisor.poll()})"
        pid_text, workdir = said.decode().split()
        pid = int(pid_text)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=60) == -signal.SIGTERM
        assert _read_when_ready(reader, 60) == b"", "the sample outlived its supervisor"
        pid = None
    finally:
        os.close(reader)
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
        if pid is not None:  # the sample of a failing test: never left running
            os.kill(pid, signal.SIGKILL)
        if workdir is not None and Path(workdir).name.startswith("mera-sbx-"):
            shutil.rmtree(workdir, ignore_errors=True)  # the killed supervisor had no chance to remove it
        shutil.rmtree(folder, ignore_errors=True)

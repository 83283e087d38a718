"""A ``judge-eval mera`` run stopped by SIGTERM or SIGHUP (a job scheduler, ``kill``, a closed terminal) ends as one
stopped by Ctrl+C does.

Python's default for both signals is to die at once, running no ``finally``: without bubblewrap, each running
sample's temporary folder (``/tmp/mera-sbx-*``, files of up to ``fsize_mb`` each, which ``eval.mera.sandbox``
removes in a ``finally``) was left behind, though the sample itself died with its supervisor. Raised in the main
thread as a ``KeyboardInterrupt``, the signal unwinds the run as Ctrl+C does: no queued sample starts, each running
one is killed at once (``Sandbox.run_many``; its result would be thrown away, and waiting for its deadline outlasted
a scheduler's grace period, docker stop's 10 s) and its folder is removed, the answers saved so far are kept, and
the command says so (where stderr still takes it: a hung-up terminal's does not) and exits 128 + the signal's
number. A signal ignored when the run starts (``nohup`` ignores
SIGHUP) stays ignored.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

#: The signals that end a run as Ctrl+C does.
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The run was stopped by a signal (``signum``); the command exits ``exit_code``, 128 + its number."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


@contextlib.contextmanager
def stopping_signals_interrupt() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise ``Stopped`` (a ``KeyboardInterrupt``) in the main thread; the earlier
    handlers come back on the way out. Outside the main thread, where Python sets no handler, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    previous = {}
    for sig in STOPPING_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():  # None: a handler not set from Python, put back as the default
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)

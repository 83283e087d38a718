"""A Ctrl+C that lands while a MERA request is in flight, in that order: raised by the thread that waits for the
workers' answers once the test's event says a request is in flight, never by a timer."""

from __future__ import annotations

import signal
import threading


def ctrl_c_once_in_flight(monkeypatch, in_flight: threading.Event) -> None:
    """Make ``eval.mera.workers``' futures raise SIGINT (Ctrl+C) in the waiting thread when it first asks for a
    result after ``in_flight`` is set (30 s bound: a failing test's, not a wait that hopes)."""
    from eval.mera import workers

    class StoppedWhileWaited(workers.Future):
        def result(self, timeout=None):
            assert in_flight.wait(30)
            signal.raise_signal(signal.SIGINT)  # Ctrl+C, in the thread that waits for the answers
            return super().result(timeout)

    monkeypatch.setattr(workers, "Future", StoppedWhileWaited)

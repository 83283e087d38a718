"""A console script whose stdout's reader has gone (``judge-eval ... | head -1``, a client that hung up mid-answer):
what it had left to print has no reader, which is no error of the run's. ``main`` of ``judge-eval``,
``judge-serve`` and ``judge-train`` is wrapped in ``exits_quietly_on_closed_stdout``: such a run ends with ``EXIT_STDOUT_CLOSED`` and no
traceback, not a ``BrokenPipeError`` traceback, an "error: Broken pipe" line, or Python's "Exception ignored" at exit.

Only a closed stdout is answered so: a ``BrokenPipeError`` of a connection (a server gone mid-request) while stdout
is still read stays the error it is (``stdout_closed`` asks the pipe itself)."""

from __future__ import annotations

import functools
import os
import select
import sys
from collections.abc import Callable
from typing import IO

__all__ = ["EXIT_STDOUT_CLOSED", "exits_quietly_on_closed_stdout", "stdout_closed"]

#: The exit code of a run whose stdout's reader went away: 128 + SIGPIPE, the code a shell reports for a program the
#: signal stopped (``git log | head -1``), which Python's own handling of the signal (ignored) never gives.
EXIT_STDOUT_CLOSED = 141


def stdout_closed(stream: IO | None = None) -> bool:
    """``stream`` (default: ``sys.stdout``) is a pipe or socket whose reader has gone: polled, it reports an error
    or a hang-up. False where it cannot tell (no file descriptor, a platform without ``poll``)."""
    stream = sys.stdout if stream is None else stream
    try:
        poller = select.poll()
        poller.register(stream.fileno(), 0)  # an error and a hang-up are reported whatever is asked
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def exits_quietly_on_closed_stdout(main: Callable[..., int]) -> Callable[..., int]:
    """``main`` returning its exit code with stdout flushed (a line still buffered fails there, not at the
    interpreter's exit), or ``EXIT_STDOUT_CLOSED`` when a ``BrokenPipeError`` reaches it with stdout's reader gone;
    stdout then points at ``os.devnull``, so that the interpreter's own flush at exit has nothing left to fail on."""

    @functools.wraps(main)
    def quiet(*args, **kwargs) -> int:
        try:
            code = main(*args, **kwargs)
            sys.stdout.flush()
            return code
        except BrokenPipeError:
            if not stdout_closed():
                raise
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            return EXIT_STDOUT_CLOSED

    return quiet

"""What judge-serve keeps out of its log, how it spaces the lines a client can make it repeat, and how uvicorn's lines
join it.

A health poll every second (load balancers, Slurm scripts, ``until curl .../ready`` loops) and a client repeating
what is refused (a wrong key, a connection past ``max_connections``) would each add a line per request, burying the
requests that did work and growing the log without bound; the lines that say something are kept, spaced.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

__all__ = ["HEALTH_POLLS", "UVICORN_LOGGERS", "SpacedWarning", "quiet_client_floods", "quiet_health_polls",
           "uvicorn_through_the_console"]

#: uvicorn's loggers (uvicorn/config.py, LOGGING_CONFIG): their parent, the server's own lines, the access log.
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")

#: Routes that load balancers, Slurm scripts and ``until curl .../ready`` loops poll every second or so.
HEALTH_POLLS = ("/health", "/ready")


def uvicorn_through_the_console() -> None:
    """uvicorn's lines through the root logger's handler, the one set-up of every console script
    (``judge.plumbing.console_logging``: stderr, one format with the time and the logger's name): its loggers keep
    no handler of their own and propagate. Call it before ``uvicorn.Config(..., log_config=None)``: uvicorn's default
    ``log_config`` (a ``dictConfig``) gives them handlers of their own, in a format without the time, the access log
    on stdout. ``uvicorn.Config`` still sets their levels from its ``log_level`` and, with ``access_log=False``,
    silences the access log; the filters judge-serve puts on these loggers apply as before."""
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        for handler in logger.handlers[:]:
            logger.removeHandler(handler)
        logger.propagate = True
    logging.getLogger("uvicorn").setLevel(logging.NOTSET)  # the parent follows the root (uvicorn's config set INFO)


class _NoHealthPolls(logging.Filter):
    """Drops uvicorn's access-log line of a health poll: one line per poll per second would bury every request
    that did work. uvicorn's access record carries ``(client, method, path, http_version, status)`` as its args."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (len(args) >= 3 and str(args[2]).split("?", 1)[0] in HEALTH_POLLS)


def quiet_health_polls(log_level: str) -> None:
    """Keep health polls out of the access log, unless ``log_level`` is debug (call after uvicorn's logging
    set-up, which ``uvicorn.Config`` performs)."""
    access = logging.getLogger("uvicorn.access")
    for existing in [f for f in access.filters if isinstance(f, _NoHealthPolls)]:
        access.removeFilter(existing)
    if str(log_level).lower() != "debug":
        access.addFilter(_NoHealthPolls())


class SpacedWarning:
    """A warning about a repeated event, logged the first time and then at most once per ``interval_s``, with how many
    there were since the start: a client that repeats what is refused (a wrong key, a connection past the limit)
    adds a line a minute to the log, not one per try, however long it keeps on.

    ``clock``: seconds, monotonic (tests give their own).
    """

    def __init__(self, logger: logging.Logger, message: str, interval_s: float = 60.0,
                 clock: Callable[[], float] | None = None) -> None:
        self.logger, self.message, self.interval_s = logger, message, interval_s
        self.clock = clock or time.monotonic
        self.count, self._last = 0, None

    def __call__(self, *args: Any) -> None:
        """Count one event; log ``message % args`` with the count when the last line is ``interval_s`` old."""
        self.count += 1
        now = self.clock()
        if self._last is None or now - self._last >= self.interval_s:
            self._last = now
            self.logger.warning(f"{self.message} (%d since the start; at most one such line per %g s)", *args,
                                self.count, self.interval_s)


class _NoConcurrencyWarnings(logging.Filter):
    """Drops uvicorn's "Exceeded concurrency limit.", logged once per request past ``limit_concurrency`` (and before
    judge-serve's protocol has seen its path, /health included): ``header_deadline_protocol`` logs its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Exceeded concurrency limit."


def quiet_client_floods() -> None:
    """Install ``_NoConcurrencyWarnings`` on uvicorn's error logger, once (call after uvicorn's logging set-up)."""
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _NoConcurrencyWarnings) for f in errors.filters):
        errors.addFilter(_NoConcurrencyWarnings())

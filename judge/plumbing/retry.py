"""One retry policy for every client of an HTTP judge or model endpoint (eval runs, MERA, synthetic data).

Built on ``tenacity``. What is retried: connection errors and timeouts, and the HTTP statuses a later attempt can
fix (408, 409, 429, 5xx); anything else (a 400, a 401, a bug) is raised at once. How long it waits before retry
``k`` (0-based): ``min(max_backoff_s, backoff_s * 2**k)`` times a jitter drawn from ``[0.5, 1.5)``, and never less
than the server's ``Retry-After`` header (seconds or an HTTP-date, RFC 9110 section 10.2.3), which judge-serve sends
with its 503 and 429 answers.

The ``openai`` SDK's own retries are turned off wherever this policy is used (``max_retries=0``), so every attempt
is counted here.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["RetryPolicy", "Attempts", "retryable_status", "is_transient", "retry_after_s"]

log = logging.getLogger("judge.plumbing.retry")

T = TypeVar("T")

#: A ``Retry-After`` longer than this (seconds) is capped: a server asking for an hour is waited on for ten minutes.
MAX_RETRY_AFTER_S = 600.0


def retryable_status(status: int) -> bool:
    """Whether an HTTP status can succeed on a later attempt: 408, 409, 429 and every 5xx."""
    return status in (408, 409, 429) or status >= 500


def _response_of(err: BaseException) -> Any:
    return getattr(err, "response", None)


def is_transient(err: BaseException) -> bool:
    """Whether ``err`` (from ``openai`` or ``httpx``) is worth another attempt: no connection, a timeout, or a
    ``retryable_status``."""
    import httpx
    import openai

    if isinstance(err, (openai.APIConnectionError, httpx.TransportError)):  # timeouts included
        return True
    if isinstance(err, openai.APIStatusError):
        return retryable_status(err.status_code)
    if isinstance(err, httpx.HTTPStatusError):
        return retryable_status(err.response.status_code)
    return False


def retry_after_s(err: BaseException, now: float | None = None) -> float | None:
    """Seconds the server asked to wait in its ``Retry-After`` header, or None when it did not say.

    Args:
        err: the failed attempt's exception (its ``response`` carries the headers).
        now: the current time (Unix seconds) for an HTTP-date value; default ``time.time()``.
    """
    response = _response_of(err)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            log.debug("ignoring an unreadable Retry-After header %r", value)
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


@dataclass
class Attempts:
    """Counts the attempts of one ``RetryPolicy.call`` (1 + retries used), for callers that report it."""

    n: int = 0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a transient failure.

    Attributes:
        max_retries: retries after the first attempt.
        backoff_s: the first retry's base delay (seconds); doubles per retry.
        max_backoff_s: cap on the base delay (seconds), before jitter.
        sleep, asleep: how to wait (``time.sleep`` / ``asyncio.sleep``); tests inject recorders.
        retryable: which exceptions are retried (default ``is_transient``).
    """

    max_retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    sleep: Callable[[float], Any] = field(default=time.sleep, repr=False)
    asleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, repr=False)
    retryable: Callable[[BaseException], bool] = field(default=is_transient, repr=False)

    def delay_s(self, retry: int, err: BaseException | None) -> float:
        """The wait before retry ``retry`` (0-based) after ``err``: jittered backoff, at least ``Retry-After``."""
        delay = min(self.max_backoff_s, self.backoff_s * 2**retry) * (0.5 + random.random())
        asked = retry_after_s(err) if err is not None else None
        return max(delay, asked) if asked is not None else delay

    def _kwargs(self, attempts: Attempts | None) -> dict[str, Any]:
        import tenacity

        def wait(state: tenacity.RetryCallState) -> float:
            return self.delay_s(state.attempt_number - 1, state.outcome.exception() if state.outcome else None)

        def before(state: tenacity.RetryCallState) -> None:
            if attempts is not None:
                attempts.n = state.attempt_number

        def before_sleep(state: tenacity.RetryCallState) -> None:
            err = state.outcome.exception() if state.outcome else None
            log.warning("attempt %d failed (%s: %s); retrying in %.1f s", state.attempt_number,
                        type(err).__name__, str(err)[:200], state.upcoming_sleep)

        return {"stop": tenacity.stop_after_attempt(self.max_retries + 1), "wait": wait,
                "retry": tenacity.retry_if_exception(self.retryable), "before": before,
                "before_sleep": before_sleep, "reraise": True}

    def call(self, fn: Callable[[], T], attempts: Attempts | None = None) -> T:
        """``fn()``, retried; the last exception is raised when retries run out or it is not retryable."""
        import tenacity

        return tenacity.Retrying(sleep=self.sleep, **self._kwargs(attempts))(fn)

    async def acall(self, fn: Callable[[], Awaitable[T]], attempts: Attempts | None = None) -> T:
        """``await fn()``, retried as ``call`` does, waiting with ``asleep``."""
        import tenacity

        async def attempt() -> T:  # a coroutine function: tenacity awaits only those, not a lambda's coroutine
            return await fn()

        return await tenacity.AsyncRetrying(sleep=self.asleep, **self._kwargs(attempts))(attempt)

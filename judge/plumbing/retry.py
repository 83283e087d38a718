"""One retry policy for every client of an HTTP judge or model endpoint (eval runs, MERA, synthetic data).

Built on ``tenacity``. What is retried: connection errors and timeouts, and the HTTP statuses a later attempt can
fix (408, 409, 429, 5xx); anything else (a 400, a 401, a bug) is raised at once. A server's ``x-should-retry:
true`` or ``false`` overrides the status, as the ``openai`` SDK obeys it (``_should_retry`` in its
``_base_client.py``): a server knows better than its status whether a later attempt can succeed. How long it
waits before retry ``k`` (0-based): ``min(max_backoff_s, backoff_s * 2**k)`` times a jitter drawn from
``[0.5, 1.5)``, and never less than what the server asked: its ``retry-after-ms`` header (milliseconds, which OpenAI
and Azure send; read first, as the SDK's ``_parse_retry_after_header`` does), else its ``Retry-After`` (seconds or
an HTTP-date in any of its three forms, each read as GMT, RFC 9110 sections 10.2.3 and 5.6.7), which judge-serve
sends with its 503 answers and passes on with an engine's 408, 409 or 429 that carried one; that wait is itself
spread by a jitter drawn from ``[1, 1.5)`` of it, so the clients one answer turned away do not all come back at the
same instant.

The ``openai`` SDK's own retries are turned off wherever this policy is used (``max_retries=0``), so every attempt
is counted here. A ``Retry-After`` is taken up to ``MAX_RETRY_AFTER_S`` per wait, so ``max_retries`` waits alone
could hold one request for ``max_retries`` x 10 minutes; two bounds stop that, each where the next wait would pass
it, before sleeping, never after sleeping up to it:

- ``max_wait_s``, a deadline from the first attempt (a first contact's ``--connect-timeout-s``): no attempt starts
  after it; a wait of this client's own backoff is cut to end at it (one last attempt there), and a wait the server
  asked for (``Retry-After``) that ends past it stops the retries at once: the server said it will not be ready.
- ``wait_budget_s``, the waits of one call together (a run's ``--retry-wait-budget-s``): a retry whose wait would
  take them past it is not made, that wait taken at its least (the server's ``Retry-After`` or half the backoff,
  whichever is longer), so the jitter never decides it; a wait the jitter drew past the budget is cut to end at it.
  It bounds the waiting only: each attempt has its own timeout, so a call ends within ``wait_budget_s`` plus its
  attempts' timeouts, and a timeout longer than a deadline cannot quietly leave a request no retry at all.

A call stopped by either says so on the failure it raises, whose type is kept (callers tell failures by type):
``retry_stop_said`` reads the words, and ``failure_said`` includes them.

**First contact** (``list_models``): every client asks ``GET {base}/models`` before any work, through this policy
with a time bound, so a server still loading (judge-serve's 503 with ``Retry-After``) is waited for, and a failure
that retrying cannot fix is one plain sentence per cause (``EndpointUnusable``, exit code ``EXIT_UNUSABLE``): no
key, a refused key, a wrong URL or path, no server at that address, a server still unavailable past the bound.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import email.utils
import logging
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

# At import, not inside is_transient: a stage's worker threads each reached a lazy import at their first failed
# attempt while other threads' openai SDK was reading the module, and one of them saw httpx half-initialised
# (AttributeError: partially initialized module 'httpx'), which stopped the stage with a traceback.
import httpx

from judge.plumbing.console_logging import visible
from judge.plumbing.endpoint_unusable import EXIT_UNUSABLE, EndpointUnusable
from judge.plumbing.json_reading import JSON_REFUSALS
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S

__all__ = ["RetryPolicy", "Attempts", "retryable_status", "is_transient", "retry_after_s", "EndpointUnusable",
           "EXIT_UNUSABLE", "list_models", "server_message", "failure_said", "GenerationAborted", "retry_stop_said",
           "DEFAULT_WAIT_BUDGET_S", "MAX_RETRY_AFTER_S", "status_of"]

log = logging.getLogger("judge.plumbing.retry")

T = TypeVar("T")

#: A ``Retry-After`` longer than this (seconds) is capped: a server asking for an hour is waited on for ten minutes.
MAX_RETRY_AFTER_S = 600.0


def retryable_status(status: int, headers: Any = None) -> bool:
    """Whether an HTTP status can succeed on a later attempt: 408, 409, 429 and every 5xx, unless the response's
    ``headers`` (when given) say otherwise with ``x-should-retry: true`` or ``false``, which win over the status as
    in the ``openai`` SDK's ``_should_retry``: a server knows a quota that will not come back (a 429) or a conflict
    that will clear better than its status does."""
    said = headers.get("x-should-retry") if headers is not None else None
    if said == "true":
        return True
    if said == "false":
        return False
    return status in (408, 409, 429) or status >= 500


def _response_of(err: BaseException) -> Any:
    return getattr(err, "response", None)


def status_of(err: BaseException) -> int | None:
    """The HTTP status of the response ``err`` carries (httpx's and openai's errors keep it), None when it carries
    none."""
    status = getattr(_response_of(err), "status_code", None)
    return status if isinstance(status, int) else None


class GenerationAborted(Exception):
    """A server's answer that holds no verdict because its engine ended the generation itself (vLLM's
    ``finish_reason`` ``abort``: a paused engine, a fault-tolerance abort; judge-serve's result error ``aborted``):
    worth another attempt, as a dropped connection is (``is_transient``); retries spent, the caller's failed row or
    failure, never a verdict read from the text so far."""


def is_transient(err: BaseException) -> bool:
    """Whether ``err`` (from ``openai`` or ``httpx``) is worth another attempt: no connection, a timeout, a
    ``retryable_status``, or a ``GenerationAborted``."""
    if isinstance(err, (httpx.TransportError, GenerationAborted)):  # timeouts included
        return True
    if isinstance(err, httpx.HTTPStatusError):
        return retryable_status(err.response.status_code, err.response.headers)
    # An openai error exists only once its SDK is imported: a client that speaks httpx alone (judge-serve's
    # /v1/judge, the first model-list request) does not pay the SDK's import (~0.7 s) to learn that.
    openai = sys.modules.get("openai")
    if openai is None:
        return False
    if isinstance(err, openai.APIConnectionError):  # timeouts included
        return True
    if isinstance(err, openai.APIStatusError):
        return retryable_status(err.status_code, getattr(err.response, "headers", None))
    return False


def retry_after_s(err: BaseException, now: float | None = None) -> float | None:
    """Seconds the server asked to wait, or None when it did not say: its ``retry-after-ms`` header (milliseconds;
    OpenAI and Azure send it, more precise than whole seconds) when readable, else its ``Retry-After``; either is
    capped at ``MAX_RETRY_AFTER_S``.

    Args:
        err: the failed attempt's exception (its ``response`` carries the headers).
        now: the current time (Unix seconds) for an HTTP-date value; default ``time.time()``.
    """
    response = _response_of(err)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            seconds = float(millis) / 1000.0
        except ValueError:
            log.debug("ignoring an unreadable retry-after-ms header %r", millis)
        else:
            if not math.isnan(seconds):
                return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)
    value = headers.get("retry-after")
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
        if when.tzinfo is None:  # the asctime form names no zone: every HTTP-date is GMT (RFC 9110 section 5.6.7)
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):  # "nan" reads as a float, and would pass both bounds below unchanged
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def retry_stop_said(err: BaseException) -> str:
    """Why ``RetryPolicy`` stopped retrying ``err`` before its ``max_retries`` were spent (a wait that would pass
    ``max_wait_s`` or ``wait_budget_s``), in words for a failed row's reason or a stop's message; "" otherwise."""
    said = getattr(err, "retry_stopped", "")
    return said if isinstance(said, str) else ""


def failure_said(err: BaseException, limit: int = 200, *, with_stop: bool = True) -> str:
    """A failed attempt in a few words: ``HTTP <status>: <the server's message>`` for an answer, else the
    exception's own words (``ConnectError: ...``), on one line, its control characters shown as escapes (it goes to
    the console: ``visible``); then, in brackets, why the retries stopped early (``retry_stop_said``), if they did,
    unless ``with_stop`` is False (an attempt about to be retried, a line that says the stop in its own place)."""
    response = _response_of(err)
    stopped = f" ({said})" if with_stop and (said := retry_stop_said(err)) else ""
    if response is not None and hasattr(response, "status_code"):
        return f"HTTP {response.status_code}: {visible(server_message(response, limit), limit)}{stopped}"
    words = visible(" ".join(str(err).split()), limit)
    return (f"{type(err).__name__}: {words}" if words else type(err).__name__) + stopped


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
        max_wait_s: a deadline (seconds) from the first attempt: no attempt starts after it, a backoff wait is cut
            to end at it, and a wait the server asked for that ends past it stops the retries at once; None: none.
        wait_budget_s: the most seconds one call waits between its attempts, all waits together: a retry whose
            wait would pass it is not made; None: only ``max_retries`` bounds the waiting.
        bound_flag: the option that sets the bounds, named in the words a stop leaves on the failure (``""``:
            none).
        clock: the monotonic clock ``max_wait_s`` is measured by (``time.monotonic``); tests that record their
            sleeps advance one of their own.
        waiting: when set, called with the first failure just before the first retry's wait, and every failed
            attempt is then logged at debug level instead of as a warning: a first contact waiting for a server
            that is not up yet says so once, not once per attempt for two minutes.
    """

    max_retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    max_wait_s: float | None = None
    wait_budget_s: float | None = None
    bound_flag: str = ""
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    sleep: Callable[[float], Any] = field(default=time.sleep, repr=False)
    asleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, repr=False)
    retryable: Callable[[BaseException], bool] = field(default=is_transient, repr=False)
    waiting: Callable[[BaseException], None] | None = field(default=None, repr=False)

    def delay_s(self, retry: int, err: BaseException | None) -> float:
        """The wait before retry ``retry`` (0-based) after ``err``: jittered backoff, at least ``Retry-After``.

        A ``Retry-After`` is waited for times a jitter drawn from ``[1, 1.5)``: every client a server turned away at
        once read the same value, and waiting it exactly brought them all back in the same instant. The jittered
        wait stays within ``MAX_RETRY_AFTER_S``, as the value read does.
        """
        delay = self._base_s(retry) * (0.5 + random.random())
        asked = retry_after_s(err) if err is not None else None
        if asked is None:
            return delay
        return max(delay, min(asked * (1.0 + 0.5 * random.random()), MAX_RETRY_AFTER_S))

    def _base_s(self, retry: int) -> float:
        """Retry ``retry``'s (0-based) backoff before its jitter: ``backoff_s`` doubled per retry, capped."""
        return min(self.max_backoff_s, self.backoff_s * 2**retry)

    def _planned(self, retry: int, err: BaseException | None, elapsed_s: float, waited_s: float
                 ) -> tuple[float | None, str]:
        """The wait before retry ``retry`` (0-based) after ``err``, ``elapsed_s`` after the first attempt started and
        with ``waited_s`` waited already, or None and the words saying why no retry is made: the wait would pass a
        bound (``max_wait_s``; ``wait_budget_s``, the wait at its least)."""
        delay = self.delay_s(retry, err)
        asked = retry_after_s(err) if err is not None else None
        flag = f" ({self.bound_flag})" if self.bound_flag else ""
        if self.max_wait_s is not None:
            left = self.max_wait_s - elapsed_s
            if left <= 0:  # the deadline itself, which every caller of a deadline says in its own words
                return None, ""
            if asked is not None and asked > left:  # the server said it will not be ready before the bound
                return None, (f"the server asked to wait {asked:g} s (Retry-After), past the {self.max_wait_s:g} s "
                              f"bound{flag}, {left:.0f} s away")
            delay = min(delay, left)  # this client's own backoff: the last attempt comes at the bound
        if self.wait_budget_s is not None:
            # Decided on the least wait the jitter could have drawn (the server's Retry-After, or half this client's
            # backoff), never on the draw itself: the same server's answers failed a request or not by a coin toss.
            # A wait drawn past the budget is cut to end at it, still no sooner than the server asked.
            least = min(delay, max(self._base_s(retry) * 0.5, asked if asked is not None else 0.0))
            if waited_s + least > self.wait_budget_s:
                why = (f"the server's Retry-After of {asked:g} s" if asked is not None and least >= asked else
                       "backoff")
                return None, (f"the next wait, {least:.0f} s ({why}), would take this request's waits past "
                              f"{self.wait_budget_s:g} s{flag}, {waited_s:.0f} s waited already")
            delay = min(delay, self.wait_budget_s - waited_s)
        return delay, ""

    def _kwargs(self, attempts: Attempts | None) -> dict[str, Any]:
        import tenacity

        # One call's: when it started (max_wait_s), what it waited (wait_budget_s), each retry's wait once drawn
        # (tenacity asks the wait and the stop in either order across its versions; the jitter is drawn once).
        start, waited, plans = self.clock(), [0.0], {}

        def plan(state: tenacity.RetryCallState) -> float | None:
            n = state.attempt_number
            if n > self.max_retries:  # its retries spent: no wait to plan, and no bound's words on its failure
                return None
            if n not in plans:
                err = state.outcome.exception() if state.outcome else None
                delay, why = self._planned(n - 1, err, self.clock() - start, waited[0])
                if delay is None and why and err is not None:
                    try:  # said on the failure the caller gets, whose type is kept (callers tell failures by type)
                        err.retry_stopped = f"retries stopped after {n} attempt{'s' if n != 1 else ''}: {why}"
                        err.retry_stopped_because = why
                    except AttributeError:  # an exception that takes no attribute keeps its own words
                        pass
                plans[n] = delay
            return plans[n]

        def wait(state: tenacity.RetryCallState) -> float:
            delay = plan(state)
            return 0.0 if delay is None else delay

        def bounded(state: tenacity.RetryCallState) -> bool:
            return plan(state) is None

        def before(state: tenacity.RetryCallState) -> None:
            if attempts is not None:
                attempts.n = state.attempt_number

        def before_sleep(state: tenacity.RetryCallState) -> None:
            err = state.outcome.exception() if state.outcome else None
            if self.waiting is not None and state.attempt_number == 1 and err is not None:
                self.waiting(err)
            log.log(logging.WARNING if self.waiting is None else logging.DEBUG, "attempt %d failed (%s); retrying in "
                    "%.1f s", state.attempt_number, failure_said(err, with_stop=False), state.upcoming_sleep)
            waited[0] += state.upcoming_sleep

        stop = tenacity.stop_after_attempt(self.max_retries + 1)
        if self.max_wait_s is not None or self.wait_budget_s is not None:
            # The attempts first, and ``plan`` plans nothing after the last one: tenacity 9 asks the wait before the
            # stop, and a bound's words were left on a failure that had only spent its retries.
            stop = tenacity.stop_any(stop, bounded)
        return {"stop": stop, "wait": wait,
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


# ---------------------------------------------------------------------------------------------- first contact

def server_message(response: Any, limit: int = 300) -> str:
    """The message of an error response: OpenAI's ``{"error": {"message"}}``, FastAPI's ``{"detail"}``, else the
    text, on one line."""
    try:
        body = response.json()
    except JSON_REFUSALS:  # not JSON, or JSON json.loads cannot hold (nested past its limit): the text
        body = None
    text = ""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            text = str(error["message"])
        elif isinstance(error, str):
            text = error
        elif body.get("detail"):
            text = str(body["detail"])
    if not text:
        text = getattr(response, "text", "") or ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def list_models(base_url: str, *, api_key: str = "", key_source: str = "", what: str = "the server",
                policy: RetryPolicy | None = None, bound_flag: str = "--connect-timeout-s",
                key_rule: str = "", timeout: float | httpx.Timeout = 30) -> list[dict[str, Any]]:
    """``GET {base_url}/models``: the served models' entries, the first contact with an OpenAI-compatible server.

    Connection errors, timeouts and 408/409/429/5xx answers are retried by ``policy`` (``Retry-After`` honoured, its
    ``max_wait_s`` the bound), said in one warning before the first retry (``waiting for the judge at URL (up to
    120 s; --connect-timeout-s): <the failure>``; each attempt then at debug level); anything else, or a transient
    failure past the bound (or asked by the server's ``Retry-After`` to wait past it), is an ``EndpointUnusable``
    naming its cause.

    Args:
        base_url: the OpenAI base URL (ending in ``/v1``).
        api_key: the bearer key ("" for none).
        key_source: where the key came from (``$NAME``, ``--api-key``), for a 401's message.
        what: who the server is, for messages (``the judge``, ``the candidate``).
        policy: the retry policy (default: 5 retries, no time bound).
        bound_flag: the flag that sets ``policy.max_wait_s``, named when the bound is reached ("": none).
        key_rule: the command's key rule (``judge.plumbing.api_keys.KEY_RULE``), appended to a 401's message.
        timeout: each attempt's bound, seconds or an ``httpx.Timeout`` (a caller that bounds connecting apart: a
            host dropping packets would otherwise hold every attempt for the whole bound).

    Raises:
        EndpointUnusable: the server cannot be used (its message says why and what to change).
    """
    policy = policy or RetryPolicy()
    bound = (f"up to {policy.max_retries} retries" if policy.max_wait_s is None else
             f"up to {policy.max_wait_s:g} s" + (f"; {bound_flag}" if bound_flag else ""))

    def waiting(err: BaseException) -> None:
        log.warning("waiting for %s at %s (%s): %s", what, base_url, bound, failure_said(err))

    if policy.waiting is None:
        policy = dataclasses.replace(policy, waiting=waiting)
    if bound_flag and not policy.bound_flag:  # named where the server's Retry-After stops the waiting early
        policy = dataclasses.replace(policy, bound_flag=bound_flag)
    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
    attempts = Attempts()
    client = httpx.Client(headers=headers, timeout=timeout)  # made before the clock starts: its TLS set-up is slow

    def get() -> Any:
        response = client.get(url)
        if response.status_code != 200:
            response.raise_for_status()  # HTTPStatusError: retried when the status is transient
        return response

    def tried(err: BaseException) -> str:
        because = getattr(err, "retry_stopped_because", "")  # a Retry-After past the bound: said so
        return (f"after {attempts.n} attempt{'s' if attempts.n != 1 else ''} in {policy.clock() - start:.0f} s"
                + (f" ({because})" if because else ""))

    start = policy.clock()
    try:
        with client:
            response = policy.call(get, attempts)
    except httpx.HTTPStatusError as err:
        response = err.response
        status, said = response.status_code, visible(server_message(response))  # for the console's message
        if status in (401, 403):
            key = ("a request without a key" if not api_key else
                   f"the key from {key_source}" if key_source.startswith("$") else "the key")
            rule = f"; {key_rule}" if key_rule else ""
            raise EndpointUnusable(f"{what} at {base_url} refused {key} (HTTP {status}: {said}){rule}", status) from None
        if status in (404, 405):
            raise EndpointUnusable(f"{what} at {base_url} has no GET {url} (HTTP {status}: {said}): the URL or its path is "
                                   "wrong; give the server's base URL, e.g. http://127.0.0.1:8000/v1", status) from None
        if retryable_status(status, response.headers):  # "x-should-retry: false" was not retried: not "still"
            longer = f", or allow longer with {bound_flag}" if bound_flag else ""
            raise EndpointUnusable(f"{what} at {base_url} still answers HTTP {status} ({said}) {tried(err)}; it may "
                                   f"still be loading: wait and rerun{longer}", status) from None
        raise EndpointUnusable(f"{what} at {base_url}: GET {url} answered HTTP {status}: {said}", status) from None
    except httpx.TransportError as err:
        cause = " ".join(str(err).split()) or type(err).__name__
        longer = f" ({bound_flag} sets how long to keep trying)" if bound_flag else ""
        raise EndpointUnusable(f"{what} at {base_url} cannot be reached ({type(err).__name__}: {cause}) {tried(err)}: "
                               f"is the server running, on that host and port?{longer}") from None
    try:
        models = response.json().get("data")
    except (ValueError, AttributeError, RecursionError):  # RecursionError: JSON nested past what json.loads holds
        models = None
    if not isinstance(models, list):
        raise EndpointUnusable(f"{what} at {base_url}: GET {url} did not answer an OpenAI model list (is it an "
                               "OpenAI-compatible server's base URL?)", response.status_code)
    return [m for m in models if isinstance(m, dict)]

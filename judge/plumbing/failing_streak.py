"""Stopping a run whose endpoint keeps failing after every retry (``FailingStreak``).

A request that fails *transiently* (a 429 that never clears, such as OpenAI's ``insufficient_quota``; a 5xx; a server
gone) is retried in full (about 31 s of backoff with the defaults) and then written as a failed row or journalled as a
failed job, so a run of 10,000 items at concurrency 8 once took about ten hours to write nothing but failures.
``FailingStreak`` counts the requests that still failed transiently after their retries, in the order they finish, by
the answer they were about; any other outcome (an answer, even a refusal or a verdict that does not parse: the server
is there) starts the count again, and ``stop_after`` different answers in a row stop the run with ``EndpointUnusable``
(exit code 4), naming the last failure. A streak of timeouts only is told apart: a healthy server slower than
``--timeout-s`` on long items (a data set sorted by length reaches them together) fails the same way, and checking its
quota and health would not help. A failure a runner offers without retrying it counts too: an HTTP 200 that is no
chat completion or ``/v1/judge`` response (a proxy's page, JSON without choices), in ``judge-eval run`` (pointwise
and pairwise) and ``rank``'s candidate answers alike, whose ``unretried`` words the message names
(``streak_failure``). Every command that asks an endpoint item after item counts one: ``judge-eval run`` (pointwise
and pairwise), ``rank``'s candidate answers, and the synthetic-data stages of ``judge-train data``.
"""

from __future__ import annotations

import httpx

from judge.plumbing.retry import EndpointUnusable, RetryPolicy, failure_said, retryable_status, status_of

__all__ = ["FailingStreak", "MIN_STREAK", "stop_after", "streak_failure"]

#: The fewest different answers in a row that stop a run: a run of one worker is not stopped by two unlucky items.
MIN_STREAK = 3


def stop_after(concurrency: int) -> int:
    """How many answers in a row, each one's requests failed after their retries with no success between, stop a run.

    Two waves of every worker: a passing outage (a server restarting, a burst of rate limits) fails all the
    ``concurrency`` requests in flight at once, each after its full retries, so one wave of failures says little;
    a second whole wave that also found no answer means the endpoint stayed down through two rounds of backoff
    (about a minute with the default retries), and costs the run no more than that before it stops. At least
    ``MIN_STREAK``.
    """
    return max(MIN_STREAK, 2 * concurrency)


def streak_failure(err: BaseException, policy: RetryPolicy) -> BaseException | None:
    """What a request that failed with ``err`` after its retries offers ``FailingStreak``: ``err`` when it is a
    failure the endpoint may get past (``policy.retryable``), a status worth another attempt that the server said
    not to retry (a 429 with ``x-should-retry: false``: an exhausted quota, given up without retries, is an endpoint
    failing all the same), or a failure that says why it had no retry (its ``unretried`` words: an HTTP 200 that is
    no answer of the protocol, ``eval.judging.backends.MalformedAnswer``, says nothing of the item asked); None for
    any other (the server answered: a bad request, a refusal, this client's own error). One rule for every runner
    that counts a streak.
    """
    if isinstance(getattr(err, "unretried", None), str):
        return err
    status = status_of(err)
    return err if policy.retryable(err) or (status is not None and retryable_status(status)) else None


#: Statuses that say a server, or a proxy before it, gave up waiting (504 Gateway Timeout, 408 Request Timeout).
TIMEOUT_STATUSES = (408, 504)


def timeout_kind(failure: BaseException) -> str | None:
    """``"client"`` when this client stopped waiting (``httpx.TimeoutException``, ``openai.APITimeoutError``),
    ``"server"`` for a 504 or 408 answer, None for any other failure."""
    if isinstance(failure, httpx.TimeoutException) or type(failure).__name__ == "APITimeoutError":
        return "client"  # openai's, matched by name: this module needs no openai import for a class it only tells
    return "server" if status_of(failure) in TIMEOUT_STATUSES else None


def waited_s(failure: BaseException) -> float | None:
    """The read timeout the timed-out request was sent with (httpx keeps it in the request's extensions)."""
    try:
        request = failure.request  # type: ignore[attr-defined]  # httpx raises RuntimeError when it has none
    except (AttributeError, RuntimeError):
        return None
    read = ((getattr(request, "extensions", None) or {}).get("timeout") or {}).get("read")
    return float(read) if isinstance(read, (int, float)) else None


#: What ``judge-eval run`` and ``rank`` leave when a streak stops them, as ``FailingStreak.error`` says it.
UNSENT_ROWS = ("the failed ones were written as failed rows, which a rerun asks after the items not asked yet, and the "
               "items not sent have no row")


class FailingStreak:
    """Counts the answers whose requests failed transiently after their retries, in a row.

    A streak counts distinct answers (``key``: judge-eval's answer, the prompt prefix its criteria share), not
    requests: an answer whose text makes the server fail (a 500 on one prompt) fails each of its 2-11 criteria's
    requests, sent back to back, and would stop a healthy run on its own. A request about an item that already
    failed in an earlier run (which judge-eval asks last) is not counted either: a rerun would otherwise stop on
    the same few answers every time.

    Args:
        n_stop: how many different answers in a row stop the run (``stop_after``).
    """

    def __init__(self, n_stop: int):
        self.n_stop = n_stop
        self.n = 0  # requests failed since the last other outcome
        self.keys: set = set()  # the answers they were about
        self.keyed = False  # whether they were offered with keys (else each request is its own answer)
        self.stopped: BaseException | None = None  # the failure that made the streak n_stop answers long
        self.timeouts: list[str | None] = []  # each failed request's ``timeout_kind``, to name what the streak was
        # What the streak's failures that had no retry were (their ``unretried``: a malformed 200), for its message.
        self.unretried: set[str] = set()

    def offer(self, failure: BaseException | None, key: object = None) -> None:
        """One finished request: ``failure`` is its last error when it failed transiently after its retries (or was
        answered with no answer at all: a failure whose ``unretried`` says why it had no retry), None for any other
        outcome; ``key`` the answer it was about (None: every request its own)."""
        if failure is None:
            self.n, self.keys, self.timeouts, self.unretried = 0, set(), [], set()
            return
        self.timeouts.append(timeout_kind(failure))
        if isinstance(said := getattr(failure, "unretried", None), str):
            self.unretried.add(said)
        self.n += 1
        self.keyed = self.keyed or key is not None
        self.keys.add(key if key is not None else object())
        if len(self.keys) >= self.n_stop and self.stopped is None:
            self.stopped = failure

    def error(self, what: str, n_retries: int, n_sent: int, n_total: int | None, *,
              left: str = UNSENT_ROWS) -> EndpointUnusable:
        """The stop to raise: the last failure's status and words, how much was sent, what a rerun does.

        Args:
            what: who failed, as the message starts (``the judge (served)``).
            n_retries: the retries each request had.
            n_sent: requests sent; ``n_total``: of how many (None: a runner that cannot say).
            left: what the run leaves for a rerun (``UNSENT_ROWS``: judge-eval's failed rows; the synthetic stages
                say their journal).
        """
        assert self.stopped is not None
        of = f" of {n_total}" if n_total is not None else ""
        about = f", about {len(self.keys)} different answers," if self.keyed else ","
        none_where = " or ".join(["the server said x-should-retry: false", *sorted(self.unretried)])
        retries = (f"each after up to {n_retries} retries (none where {none_where})"
                   if n_retries else "each without a retry (none are allowed)")
        return EndpointUnusable(
            f"{what} failed {self.n} requests in a row{about} {retries}, with no answer between: last "
            f"{failure_said(self.stopped)} (stopped after sending {n_sent}{of} requests; {left}: {self._advice()}, "
            "then rerun to resume)",
            status_of(self.stopped))

    def _advice(self) -> str:
        """What to do before the rerun: for a streak of timeouts only, the timeout, not the endpoint's health."""
        kinds = set(self.timeouts)
        if not self.timeouts or None in kinds:
            return "check the endpoint (its quota, its health)"
        n = len(self.timeouts)
        if kinds == {"server"}:
            return (f"all {n} timed out at the server or a proxy before it (HTTP 504/408): a slow server on long "
                    "items? raise that timeout, or lower --concurrency")
        waited = waited_s(self.stopped) if kinds == {"client"} else None
        after = f" after {waited:g} s" if waited is not None else ""
        which = "--timeout-s" if kinds == {"client"} else "--timeout-s and the server's or its proxy's timeout (504/408)"
        return f"all {n} timed out{after}: a slow server on long items? raise {which}, or lower --concurrency"

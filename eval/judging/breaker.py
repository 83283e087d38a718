"""Stopping a run whose endpoint keeps failing after every retry (``FailingStreak``).

``eval.judging.backends.FirstRefusals`` stops a run refused alike from its first requests; a request that fails
*transiently* (a 429 that never clears, such as OpenAI's ``insufficient_quota``; a 5xx; a server gone) is no refusal:
each one is retried in full (about 31 s of backoff with the defaults) and written as a failed row, so a run of 10,000
items at concurrency 8 once took about ten hours to write nothing but failures. ``FailingStreak`` counts the requests
that still failed transiently after their retries, in the order they finish; any other outcome (an answer, even a
refusal or a verdict that does not parse: the server is there) starts the count again, and ``stop_after`` in a row
stop the run with ``EndpointUnusable`` (exit code 4), naming the last failure.
"""

from __future__ import annotations

from eval.judging.backends import N_FIRST_REFUSALS
from judge.plumbing.retry import EndpointUnusable, failure_said

__all__ = ["FailingStreak", "stop_after"]


def stop_after(concurrency: int) -> int:
    """How many requests in a row, each failed after its retries with no success between, stop a run.

    Two waves of every worker: a passing outage (a server restarting, a burst of rate limits) fails all the
    ``concurrency`` requests in flight at once, each after its full retries, so one wave of failures says little;
    a second whole wave that also found no answer means the endpoint stayed down through two rounds of backoff
    (about a minute with the default retries), and costs the run no more than that before it stops. At least
    ``N_FIRST_REFUSALS``: a run of one worker is not stopped by two unlucky items.
    """
    return max(N_FIRST_REFUSALS, 2 * concurrency)


class FailingStreak:
    """Counts the requests that failed transiently after their retries, in a row.

    Args:
        n_stop: how many in a row stop the run (``stop_after``).
    """

    def __init__(self, n_stop: int):
        self.n_stop = n_stop
        self.n = 0
        self.stopped: BaseException | None = None  # the failure that made the streak n_stop long

    def offer(self, failure: BaseException | None) -> None:
        """One finished request: ``failure`` is its last error when it failed transiently after its retries, None
        for any other outcome."""
        if failure is None:
            self.n = 0
            return
        self.n += 1
        if self.n >= self.n_stop and self.stopped is None:
            self.stopped = failure

    def error(self, what: str, n_retries: int, n_sent: int, n_total: int) -> EndpointUnusable:
        """The stop to raise: the last failure's status and words, how much was sent, what a rerun does."""
        assert self.stopped is not None
        status = getattr(getattr(self.stopped, "response", None), "status_code", None)
        return EndpointUnusable(
            f"{what} failed {self.n_stop} requests in a row, each after {n_retries} retries, with no answer between: "
            f"last {failure_said(self.stopped)} (stopped after sending {n_sent} of {n_total} requests; the failed "
            "ones were written as failed rows, which a rerun asks after the items not asked yet, and the items not "
            "sent have no row: check the endpoint (its quota, its health), then rerun to resume)",
            status if isinstance(status, int) else None)

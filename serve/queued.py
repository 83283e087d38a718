"""The bound on the judgments queued across every ``/v1/judge`` and ``/get_reward`` request in progress
(``max_queued_judgments``).

Each request is bounded on its own (``max_judgments_per_request``), but concurrent requests all wait for the same
engine slots (``max_concurrent_engine_requests``), each holding its jobs, their prompt token ids included, while it
waits: without a bound across requests, ``max_connections`` requests of 512 judgments each queued 262,144 jobs. A
request is counted before any of its work starts (planning, tokenizing, classifying); one that would pass the bound
gets 503 with ``Retry-After`` instead. Its count is given back when it ends, however it ends: answered, failed, or
cancelled (its client gone, its deadline passed).
"""

from __future__ import annotations

import functools

from serve.engine_client import EngineUnavailable

__all__ = ["QUEUE_FULL_RETRY_AFTER_S", "Admitted", "JudgmentQueue", "QueueFull", "largest_task_criteria"]

#: The ``Retry-After`` of a request refused over the bound: the engine restart's default wait
#: (``serve.supervision.ServerState.retry_after_s``), a few judgments' time at the engine.
QUEUE_FULL_RETRY_AFTER_S = 5


class QueueFull(EngineUnavailable):
    """A request that would pass ``max_queued_judgments``: 503 with ``Retry-After``. An ``EngineUnavailable``, so a
    route that answers only those (``/get_reward``, through ``serve.errors.judgment_failed``) answers it as a 503 with
    ``Retry-After`` too, never as a 500."""

    def __init__(self, message: str, retry_after_s: int = QUEUE_FULL_RETRY_AFTER_S):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Admitted:
    """One request's judgments in the count, given back when its ``with`` block ends, however it ends."""

    def __init__(self, queue: JudgmentQueue, n: int):
        self._queue, self.n = queue, n

    def resize(self, n: int) -> None:
        """Count ``n`` judgments instead (once the request's jobs are known); never refused: it was admitted."""
        self._queue.queued += n - self.n
        self.n = n

    def __enter__(self) -> Admitted:
        return self

    def __exit__(self, *_: object) -> None:
        self._queue.queued -= self.n
        self.n = 0


class JudgmentQueue:
    """The judgments of every request in progress, counted on the event loop (``admit`` does not await, so no two
    requests are counted against the same room)."""

    def __init__(self) -> None:
        self.queued = 0

    def admit(self, n: int, bound: int) -> Admitted:
        """Count ``n`` more judgments, or refuse them.

        A request alone is always admitted, whatever its size: it could never be, and 503 would tell its client to
        retry for ever.

        Raises:
            QueueFull: the judgments queued and ``n`` come to more than ``bound``.
        """
        if self.queued and self.queued + n > bound:
            raise QueueFull(f"judge-serve has {self.queued} judgments queued across its requests in progress; this "
                            f"request's {n} would pass its bound, max_queued_judgments={bound}. Retry after "
                            f"{QUEUE_FULL_RETRY_AFTER_S} s, or send fewer judgments at once.")
        self.queued += n
        return Admitted(self, n)


@functools.cache
def largest_task_criteria() -> int:
    """The most criteria a task of the taxonomy has: what an ``"auto"`` item is counted as until its task is chosen."""
    from judge.taxonomy import load_taxonomy

    return max((len(task.criteria) for task in load_taxonomy().tasks), default=1)

"""The bound on the judgments queued across every ``/v1/judge`` and ``/get_reward`` request in progress
(``max_queued_judgments``).

Each request is bounded on its own (``max_judgments_per_request``), but concurrent requests all wait for the same
engine slots (``max_concurrent_engine_requests``), each holding its jobs, their prompt token ids included, while it
waits: without a bound across requests, ``max_connections`` requests of 512 judgments each queued 262,144 jobs. A
request is counted before any of its work starts (planning, tokenizing, classifying); one that would pass the bound
gets 503 with ``Retry-After`` instead (``admit``), or, on ``/get_reward``, waits for room up to its deadline first
(``admitted_by``): OpenRLHF retries a 503 five times a second apart, ignoring ``Retry-After``
(``openrlhf/utils/agent.py``, ``_post_request``), so a rollout's burst refused at once failed its training step.
Its count is given back when it ends, however it ends: answered, failed, or cancelled (its client gone, its deadline
passed); cancelled while a worker thread plans its judgments, once that thread is done (``Admitted.held_until``).

**Order.** First come, first admitted: the requests waiting for room are admitted in their order of arrival, each
when it fits, and a request that asks at once (``admit``) is refused while any waits, even if it would fit. Letting
the one that fits go first would starve a large request behind a stream of small ones (each release makes room for
a small one, never enough for it), until its deadline. Room is handed to a waiter by the request that gives it
back, on the event loop, so nothing else can take it in between; no waiter polls.

**Drain.** Once judge-serve drains (SIGTERM, scancel; ``refuse_waiting``), every request waiting for room gets its
503 ``queue_full`` at once, and one that would have to wait is refused at once: its wait (up to
``reward_deadline_s``) would otherwise hold the drain for the whole ``shutdown_grace_s``, and be cut off at its end
unjudged all the same (the drain's 503 ``shutting_down``). One that fits is still admitted, as ``/v1/judge``'s
requests in flight are: the engines judge until the drain ends.

**Cost.** The live waiters are counted as they join and leave (each leaves once: admitted, refused at its deadline or
by the drain, or cancelled), so a request asking for room costs the same whatever the line's length; the line itself
sheds the ones that left as they come to its head. Counting the line on every arrival cost O(waiters) each, O(n^2)
for a rollout's burst of n one-sample requests, thousands of them with ``--max-connections`` raised as
docs/rewards.md advises.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import time

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
        """Count ``n`` judgments instead (once the request's jobs are known); never refused: it was admitted. Fewer
        make room for the requests waiting."""
        self._queue._give_back(self.n - n)
        self.n = n

    def held_until(self, work: asyncio.Future) -> None:
        """Keep the count until ``work`` (a worker thread's, the request's planning) is done, not only until the
        ``with`` block ends: a request cancelled while its thread renders and tokenizes leaves that block at once,
        but a thread cannot be stopped, and a count given back then let clients that leave buy work past the bound."""
        n, self.n = self.n, 0  # the block's end gives back nothing; the thread's end gives back these
        work.add_done_callback(lambda _: self._queue._give_back(n))

    def __enter__(self) -> Admitted:
        return self

    def __exit__(self, *_: object) -> None:
        self._queue._give_back(self.n)
        self.n = 0


class _Admission(asyncio.Future):
    """A waiter's admission: settled once, by the room handed over (a result), its deadline or the drain (QueueFull),
    or its cancellation (``Task.cancel`` cancels the future its task awaits, in that very call). The queue's count of
    live waiters drops in the same step as the settling, exactly once: a future is settled at most once, and a
    cancelled waiter is not counted even before its task resumes to leave the line."""

    def __init__(self, queue: JudgmentQueue, *, loop: asyncio.AbstractEventLoop):
        super().__init__(loop=loop)
        self._queue = queue

    def set_result(self, result: object) -> None:
        super().set_result(result)  # raises when already settled: nothing counted twice
        self._queue._live_waiters -= 1

    def set_exception(self, exception: BaseException) -> None:
        super().set_exception(exception)
        self._queue._live_waiters -= 1

    def cancel(self, msg: object = None) -> bool:
        if not super().cancel(msg):
            return False
        self._queue._live_waiters -= 1
        return True


class _Waiter:
    """A request waiting for room: its judgments, its bound, and the future its admission is handed through, let go
    once the request left the line (``admitted_by``). A waiter stays in the line until it reaches its head, and the
    future of one refused at its deadline holds its ``QueueFull``, whose traceback holds the frames it was raised
    through, with their locals: the request's body and judgments, kept for as long as the requests ahead of it wait."""

    __slots__ = ("n", "bound", "admitted")

    def __init__(self, n: int, bound: int, admitted: _Admission):
        self.n, self.bound = n, bound
        self.admitted: _Admission | None = admitted

    @property
    def left(self) -> bool:
        """Whether it left the line: admitted, refused (its deadline, the drain) or cancelled."""
        return self.admitted is None or self.admitted.done()


class JudgmentQueue:
    """The judgments of every request in progress, counted on the event loop (``admit`` does not await, so no two
    requests are counted against the same room), and the requests waiting for room, in their order of arrival."""

    def __init__(self) -> None:
        self.queued = 0
        # In arrival order; a waiter that left (settled) stays until it reaches the head (``_hand_on`` drops it), so
        # leaving costs nothing whatever its place in the line.
        self._waiting: collections.deque[_Waiter] = collections.deque()
        self._live_waiters = 0  # those of _waiting not yet settled (_Admission keeps it)
        self._refusal: str | None = None  # why no request waits any more (the drain), once refuse_waiting is called

    @property
    def waiting(self) -> int:
        """The requests waiting for room (``admitted_by``), not counting one that left and is still in the line."""
        return self._live_waiters

    def _fits(self, n: int, bound: int) -> bool:
        # A request alone is always admitted, whatever its size: it could never be, and 503 would tell its client
        # to retry for ever.
        return not self.queued or self.queued + n <= bound

    def admit(self, n: int, bound: int) -> Admitted:
        """Count ``n`` more judgments, or refuse them.

        Raises:
            QueueFull: the judgments queued and ``n`` come to more than ``bound``, or requests wait for room
                (the module docstring's order).
        """
        waiters = self._live_waiters
        if waiters or not self._fits(n, bound):
            waiting = f" and {waiters} request(s) waiting for room" if waiters else ""
            held = f"judge-serve has {self.queued} judgments queued across its requests in progress{waiting}; "
            if self._fits(n, bound):  # room enough, but it would pass the line (the module docstring's order)
                raise QueueFull(held + f"this request's {n} would fit under its bound, max_queued_judgments={bound}, "
                                "but would pass the requests waiting for room, and none is passed. Retry after "
                                f"{QUEUE_FULL_RETRY_AFTER_S} s.")
            raise QueueFull(held + f"this request's {n} would pass its bound, max_queued_judgments={bound}. Retry after "
                            f"{QUEUE_FULL_RETRY_AFTER_S} s, or send fewer judgments at once.")
        self.queued += n
        return Admitted(self, n)

    async def admitted_by(self, n: int, bound: int, until: float) -> Admitted:
        """``admit``, waiting for room up to ``until`` (``time.monotonic()``) instead of refusing at once, behind
        the requests that already wait; once the queue refuses waiting (``refuse_waiting``), ``admit`` itself.

        Raises:
            QueueFull: no room came by ``until``, or judge-serve drains (at once, or when the drain begins).
        """
        if not self._live_waiters and self._fits(n, bound):
            return self.admit(n, bound)
        if self._refusal is not None:
            raise QueueFull(self._refused(n, bound))
        loop = asyncio.get_running_loop()
        waiter = _Waiter(n, bound, _Admission(self, loop=loop))
        self._waiting.append(waiter)
        self._live_waiters += 1
        # The deadline is a timer on the loop, not a timeout around the wait: whichever of it and the room comes
        # first settles the waiter's future, so room is never both handed over and refused.
        expiry = loop.call_later(max(0.0, until - time.monotonic()), self._expire, waiter)
        try:
            await waiter.admitted
        except BaseException:
            if waiter.admitted.done() and not waiter.admitted.cancelled() and waiter.admitted.exception() is None:
                self._give_back(n)  # cancelled in the turn its room was handed over: the room goes on
            elif waiter.admitted.cancelled():
                self._hand_on()  # the next in line may fit where this one did not
            raise
        finally:
            expiry.cancel()
            waiter.admitted = None  # settled: nothing of the request stays in the line (``_Waiter``)
        return Admitted(self, n)

    def refuse_waiting(self, reason: str) -> None:
        """Refuse every request waiting for room (``QueueFull``: 503 ``queue_full`` with ``Retry-After``), and every
        one that would wait from now on, at once; ``reason`` (why: judge-serve drains) leads their message. Call it
        on the event loop (from a signal handler, through ``loop.call_soon_threadsafe``)."""
        self._refusal = reason
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.left:
                waiter.admitted.set_exception(QueueFull(self._refused(waiter.n, waiter.bound)))

    def _refused(self, n: int, bound: int) -> str:
        # One that fits stood behind one that did not (refuse_waiting refuses the whole line; no other waits for room)
        why = "would have fit under" if self._fits(n, bound) else "would pass"
        behind = ", but it waited behind a request that did not" if self._fits(n, bound) else ""
        return (f"{self._refusal}: this request's {n} judgments, with {self.queued} queued across the requests in "
                f"progress, {why} max_queued_judgments={bound}{behind}, and no request waits for room any more. Retry "
                f"after {QUEUE_FULL_RETRY_AFTER_S} s.")

    def _expire(self, waiter: _Waiter) -> None:
        if waiter.left:
            return
        # One that fits now is behind one that does not (the head is admitted as soon as it fits): it waited for that.
        why = (f"its {waiter.n} would have fit under the bound, max_queued_judgments={waiter.bound}, but a request "
               "ahead of it in line did not, and none is passed" if self._fits(waiter.n, waiter.bound) else
               f"its {waiter.n} would pass the bound, max_queued_judgments={waiter.bound}")
        waiter.admitted.set_exception(QueueFull(
            f"judge-serve had {self.queued} judgments queued across its requests in progress until this request's "
            f"deadline; {why}. Retry after {QUEUE_FULL_RETRY_AFTER_S} s, or raise max_queued_judgments to the "
            "judgments a rollout sends at once."))
        self._hand_on()  # it left the line (dropped when it reaches the head): the next may fit where it did not

    def _give_back(self, n: int) -> None:
        self.queued -= n
        if n > 0:
            self._hand_on()

    def _hand_on(self) -> None:
        """Admit the waiting requests that fit, first in line first, stopping at the first that does not."""
        while self._waiting:
            waiter = self._waiting[0]
            if waiter.left:  # cancelled, or refused at its deadline
                self._waiting.popleft()
                continue
            if not self._fits(waiter.n, waiter.bound):
                return
            self._waiting.popleft()
            self.queued += waiter.n
            waiter.admitted.set_result(None)


@functools.cache
def largest_task_criteria() -> int:
    """The most criteria a task of the taxonomy has: what an ``"auto"`` item is counted as until its task is chosen."""
    from judge.taxonomy import load_taxonomy

    return max((len(task.criteria) for task in load_taxonomy().tasks), default=1)

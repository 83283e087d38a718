"""``serve.queued``: a request that waits for room under ``max_queued_judgments`` (``/get_reward``'s admission) is
admitted when room is given back, first come first admitted, or refused at its deadline.

Everything runs on one event loop and the order of events is forced by the test: a turn of the loop lets the waiting
tasks run, room is given back by leaving an admitted request's ``with`` block, and a deadline already past is the
expiry's only timer (it fires on the next turn). Nothing is timed."""

from __future__ import annotations

import asyncio
import collections
import time

import pytest

from serve.queued import QUEUE_FULL_RETRY_AFTER_S, JudgmentQueue, QueueFull

#: A deadline no test reaches.
FAR = 3600.0


async def _turns(n: int = 3) -> None:
    """Let the loop run the tasks that are ready (a waiter handed its room resumes in the next turn)."""
    for _ in range(n):
        await asyncio.sleep(0)


def test_a_waiting_request_is_admitted_when_room_is_given_back():
    """Bound 3, 2 queued: a request of 2 waits (2 + 2 > 3), counted nowhere; when the 2 are given back it is
    admitted (queued 2, its own), and its count is given back when it ends."""
    async def scenario():
        queue = JudgmentQueue()
        first = queue.admit(2, 3)
        waiting = asyncio.ensure_future(queue.admitted_by(2, 3, time.monotonic() + FAR))
        await _turns()
        assert not waiting.done() and queue.waiting == 1 and queue.queued == 2
        with first:
            pass
        assert queue.queued == 2 and queue.waiting == 0  # handed over by the release itself, before the waiter runs
        admitted = await asyncio.wait_for(waiting, FAR)
        assert admitted.n == 2
        with admitted:
            assert queue.queued == 2
        assert queue.queued == 0

    asyncio.run(scenario())


def test_a_request_that_fits_at_once_does_not_wait():
    async def scenario():
        queue = JudgmentQueue()
        with queue.admit(1, 3), await queue.admitted_by(2, 3, time.monotonic() + FAR):
            assert queue.queued == 3 and queue.waiting == 0
        assert queue.queued == 0

    asyncio.run(scenario())


def test_first_come_first_admitted_no_large_request_starves_behind_small_ones():
    """Bound 4, 3 queued. A request of 4 waits; then one of 1, which would fit (3 + 1 = 4), waits behind it, and one
    of 1 asking at once (``admit``, /v1/judge's) is refused though it fits: letting them pass would keep the 4 from
    ever fitting while small requests come. When the 3 are given back the 4 is admitted (alone, it fits) and the 1
    still waits (4 + 1 > 4); when the 4 end, the 1 is admitted."""
    async def scenario():
        queue = JudgmentQueue()
        held = queue.admit(3, 4)
        large = asyncio.ensure_future(queue.admitted_by(4, 4, time.monotonic() + FAR))
        await _turns()
        small = asyncio.ensure_future(queue.admitted_by(1, 4, time.monotonic() + FAR))
        await _turns()
        assert queue.waiting == 2 and queue.queued == 3
        with pytest.raises(QueueFull) as refused:
            queue.admit(1, 4)
        assert "2 request(s) waiting for room" in str(refused.value) and "max_queued_judgments=4" in str(refused.value)
        assert queue.queued == 3
        held.__exit__()
        large_admitted = await asyncio.wait_for(large, FAR)
        await _turns()
        assert queue.queued == 4 and not small.done() and queue.waiting == 1
        large_admitted.__exit__()
        small_admitted = await asyncio.wait_for(small, FAR)
        assert queue.queued == 1 and queue.waiting == 0
        small_admitted.__exit__()
        assert queue.queued == 0

    asyncio.run(scenario())


def test_a_waiting_request_is_refused_at_its_deadline_and_the_next_in_line_goes_on():
    """Bound 3, 2 queued. A request of 2 whose deadline has passed waits one turn and is refused (QueueFull naming
    the bound, nothing counted); a request of 1 that waited behind it fits (2 + 1 = 3) and is admitted then."""
    async def scenario():
        queue = JudgmentQueue()
        held = queue.admit(2, 3)
        late = asyncio.ensure_future(queue.admitted_by(2, 3, time.monotonic() - 1.0))
        await asyncio.sleep(0)  # the late request is in line, its expiry due on the next turn
        behind = asyncio.ensure_future(queue.admitted_by(1, 3, time.monotonic() + FAR))
        with pytest.raises(QueueFull) as refused:
            await asyncio.wait_for(late, FAR)
        admitted = await asyncio.wait_for(behind, FAR)
        assert queue.queued == 3 and queue.waiting == 0
        admitted.__exit__()
        held.__exit__()
        assert queue.queued == 0
        return refused.value

    refused = asyncio.run(scenario())
    assert "max_queued_judgments=3" in str(refused) and "deadline" in str(refused)
    assert refused.retry_after_s == QUEUE_FULL_RETRY_AFTER_S


def test_a_request_refused_for_the_line_alone_is_told_so_not_that_it_passes_the_bound():
    """Bound 4, 3 queued, a request of 4 waiting. One of 1 asking at once fits (3 + 1 = 4) and is refused only because
    it would pass the one waiting: its 503 says so, not that its 1 would pass the bound, nor to send fewer judgments
    (a request of 1 is refused the same). One of 1 that waited behind the 4 and is refused at its deadline fit too:
    its refusal says a request ahead of it did not. One of 2, which does not fit, is still told it passes the bound."""
    async def scenario():
        queue = JudgmentQueue()
        held = queue.admit(3, 4)
        large = asyncio.ensure_future(queue.admitted_by(4, 4, time.monotonic() + FAR))
        await _turns()
        small = asyncio.ensure_future(queue.admitted_by(1, 4, time.monotonic() - 1.0))
        await asyncio.sleep(0)  # in line behind the 4, its expiry due on the next turn
        with pytest.raises(QueueFull) as at_once:
            queue.admit(1, 4)
        with pytest.raises(QueueFull) as too_many:
            queue.admit(2, 4)
        with pytest.raises(QueueFull) as at_deadline:
            await asyncio.wait_for(small, FAR)
        held.__exit__()
        (await asyncio.wait_for(large, FAR)).__exit__()
        assert queue.queued == 0 and queue.waiting == 0
        return str(at_once.value), str(too_many.value), str(at_deadline.value)

    at_once, too_many, at_deadline = asyncio.run(scenario())
    assert "this request's 1 would fit under its bound, max_queued_judgments=4" in at_once, at_once
    assert "2 request(s) waiting for room" in at_once and "would pass the requests waiting for room" in at_once
    assert "would pass its bound" not in at_once and "fewer judgments" not in at_once
    assert "this request's 2 would pass its bound, max_queued_judgments=4" in too_many, too_many
    assert "its 1 would have fit under the bound, max_queued_judgments=4, but a request ahead of it" in at_deadline
    assert "would pass the bound" not in at_deadline, at_deadline


def test_the_drain_tells_a_waiter_that_fit_it_waited_behind_one_that_did_not():
    """Bound 4, 3 queued, a request of 4 waiting and one of 1 behind it (3 + 1 = 4 fits). The drain refuses both;
    the 4 would pass the bound, the 1 would not: it is told it waited behind a request that did not fit."""
    async def scenario():
        queue = JudgmentQueue()
        held = queue.admit(3, 4)
        waiters = [asyncio.ensure_future(queue.admitted_by(k, 4, time.monotonic() + FAR)) for k in (4, 1)]
        await _turns()
        queue.refuse_waiting("judge-serve is shutting down")
        refused = [str((await asyncio.gather(w, return_exceptions=True))[0]) for w in waiters]
        held.__exit__()
        return refused

    large, small = asyncio.run(scenario())
    assert "this request's 4 judgments, with 3 queued across the requests in progress, would pass " \
           "max_queued_judgments=4, and no request" in large, large
    assert "this request's 1 judgments, with 3 queued across the requests in progress, would have fit under " \
           "max_queued_judgments=4, but it waited behind a request that did not" in small, small


def test_a_request_refused_at_its_deadline_keeps_nothing_of_itself_in_the_line():
    """Bound 4, 3 queued, a request of 4 waiting (its deadline out of reach). A request of 1 behind it, whose deadline
    has passed, is refused; it stays in the line until it reaches the head (leaving costs nothing), but its body,
    which the route's frame held while it waited, is freed once the refusal is answered: the refusal's traceback
    holds that frame, and the line let go of the refusal. Kept, each such body stayed in memory until the request
    ahead of it left."""
    import gc
    import weakref

    class Body:
        """What a route's frame holds while its request waits: the body and its parsed judgments."""

    async def request(queue: JudgmentQueue, until: float, kept: list) -> None:
        body = Body()
        kept.append(weakref.ref(body))
        with await queue.admitted_by(1, 4, until):
            pass

    async def scenario():
        queue = JudgmentQueue()
        held = queue.admit(3, 4)
        large = asyncio.ensure_future(queue.admitted_by(4, 4, time.monotonic() + FAR))
        await _turns()
        kept: list = []
        late = asyncio.ensure_future(request(queue, time.monotonic() - 1.0, kept))
        await asyncio.wait({late}, timeout=FAR)
        assert isinstance(late.exception(), QueueFull)  # answered: the route's 503
        del late
        gc.collect()
        in_line, freed = len(queue._waiting), kept[0]() is None
        held.__exit__()
        (await asyncio.wait_for(large, FAR)).__exit__()
        return in_line, freed

    in_line, freed = asyncio.run(scenario())
    assert in_line == 2  # the request of 4 and the refused one behind it
    assert freed, "the refused request's body stayed in memory while it stood in the line"


def test_a_cancelled_waiter_leaves_the_line_and_room_handed_to_it_goes_on():
    """A waiting request cancelled (its client gone) leaves the line, counted nowhere, and the one behind it moves
    up; one cancelled in the very turn its room was handed over gives the room back."""
    async def scenario():
        queue = JudgmentQueue()
        held = queue.admit(2, 3)
        gone = asyncio.ensure_future(queue.admitted_by(2, 3, time.monotonic() + FAR))
        await _turns()
        behind = asyncio.ensure_future(queue.admitted_by(1, 3, time.monotonic() + FAR))
        await _turns()
        gone.cancel()
        await asyncio.wait({gone}, timeout=FAR)
        assert gone.cancelled()
        admitted = await asyncio.wait_for(behind, FAR)  # 2 + 1 fits once the 2 ahead of it left
        assert queue.queued == 3 and queue.waiting == 0
        admitted.__exit__()

        handed = asyncio.ensure_future(queue.admitted_by(2, 3, time.monotonic() + FAR))
        await _turns()
        held.__exit__()  # hands 2 over to the waiter (queued 2) ...
        assert queue.queued == 2
        handed.cancel()  # ... whose task is cancelled before it resumes: the 2 come back
        await asyncio.wait({handed}, timeout=FAR)
        assert handed.cancelled() and queue.queued == 0 and queue.waiting == 0

    asyncio.run(scenario())


def test_a_resize_to_fewer_judgments_makes_room_for_a_waiter():
    """An ``"auto"`` request counted as the largest task's set, resized to its chosen task's criteria: the room it
    gives back admits the request waiting."""
    async def scenario():
        queue = JudgmentQueue()
        auto = queue.admit(26, 30)
        waiting = asyncio.ensure_future(queue.admitted_by(10, 30, time.monotonic() + FAR))
        await _turns()
        assert not waiting.done()
        auto.resize(5)
        admitted = await asyncio.wait_for(waiting, FAR)
        assert queue.queued == 15
        admitted.__exit__()
        auto.__exit__()
        assert queue.queued == 0

    asyncio.run(scenario())


class UncountedLine(collections.deque):
    """The queue's line of waiters, refusing to be walked: the number waiting is kept as waiters join and leave, so a
    request asking for room costs the same whatever the line's length (walking it on every arrival made a rollout's
    burst of n requests cost O(n^2) on the event loop)."""

    def __iter__(self):
        raise AssertionError("the line of waiters was walked to count it")


def test_the_waiting_count_is_kept_as_waiters_join_and_leave_never_by_walking_the_line():
    """Bound 3, 3 queued; three requests of 1 wait (count 3). One is cancelled (2 at once, before its task resumes);
    one more joins (3) and its deadline passes (2); the 3 queued are given back and the two left are handed room in
    that call (0, queued 2); a request asking at once (``admit``) then fits (queued 3). Each leaving counted once:
    never below 0, 0 at the end, and the line never walked to count."""
    async def scenario():
        queue = JudgmentQueue()
        queue._waiting = UncountedLine()
        held = queue.admit(3, 3)
        first, cancelled, last = (asyncio.ensure_future(queue.admitted_by(1, 3, time.monotonic() + FAR))
                                  for _ in range(3))
        await _turns()
        assert queue.waiting == 3
        with pytest.raises(QueueFull, match="3 request\\(s\\) waiting for room"):
            queue.admit(1, 3)
        cancelled.cancel()
        assert queue.waiting == 2  # in the call itself: the request left, whatever its task does next
        await asyncio.wait({cancelled}, timeout=FAR)
        assert cancelled.cancelled() and queue.waiting == 2
        late = asyncio.ensure_future(queue.admitted_by(1, 3, time.monotonic() - 1.0))
        await asyncio.sleep(0)  # in line, its expiry due on the next turn
        assert queue.waiting == 3
        with pytest.raises(QueueFull, match="deadline"):
            await asyncio.wait_for(late, FAR)
        assert queue.waiting == 2 and queue.queued == 3
        held.__exit__()  # hands room to first and last, in the call itself
        assert queue.waiting == 0 and queue.queued == 2
        admitted = [await asyncio.wait_for(task, FAR) for task in (first, last)]
        with queue.admit(1, 3):
            assert queue.queued == 3 and queue.waiting == 0
        for one in admitted:
            one.__exit__()
        assert queue.queued == 0 and queue.waiting == 0 and not queue._waiting

    asyncio.run(scenario())


def test_draining_refuses_every_waiter_at_once_and_no_request_waits_after():
    """Bound 3, 2 queued, two requests of 2 waiting with deadlines no test reaches. The drain (``refuse_waiting``)
    fails both with QueueFull (503 ``queue_full``, ``Retry-After``) in that call, its reason leading the message; the
    count is 0. Afterwards a request of 2 that does not fit is refused at once, without joining the line, and one of
    1 that fits is admitted, as /v1/judge's requests in flight still are."""
    async def scenario():
        queue = JudgmentQueue()
        held = queue.admit(2, 3)
        waiters = [asyncio.ensure_future(queue.admitted_by(2, 3, time.monotonic() + FAR)) for _ in range(2)]
        await _turns()
        assert queue.waiting == 2 and not any(w.done() for w in waiters)
        queue.refuse_waiting("judge-serve is shutting down")
        assert queue.waiting == 0 and queue.queued == 2
        refused = [await asyncio.gather(w, return_exceptions=True) for w in waiters]
        assert [type(r[0]) for r in refused] == [QueueFull, QueueFull]
        with pytest.raises(QueueFull) as at_once:
            await queue.admitted_by(2, 3, time.monotonic() + FAR)
        assert queue.waiting == 0 and not queue._waiting
        with await queue.admitted_by(1, 3, time.monotonic() + FAR):
            assert queue.queued == 3
        held.__exit__()
        assert queue.queued == 0
        return refused[0][0], at_once.value

    waited, arrived = asyncio.run(scenario())
    for err in (waited, arrived):
        assert str(err).startswith("judge-serve is shutting down: this request's 2 judgments, with 2 queued")
        assert "max_queued_judgments=3" in str(err) and err.retry_after_s == QUEUE_FULL_RETRY_AFTER_S


def test_the_drain_begun_by_a_signal_refuses_the_line_on_the_loops_next_turn():
    """``serve.cli.begin_drain`` (uvicorn's ``handle_exit``, the SIGTERM/SIGINT handler): status ``draining`` at
    once; the waiter is refused on the loop's next turn, not from inside the code the signal cut into, with
    judge-serve's shutting-down reason."""
    from types import SimpleNamespace

    from serve.cli import begin_drain

    async def scenario():
        queue = JudgmentQueue()
        state = SimpleNamespace(status="ready", judge=SimpleNamespace(queue=queue))
        held = queue.admit(2, 3)
        waiting = asyncio.ensure_future(queue.admitted_by(2, 3, time.monotonic() + FAR))
        await _turns()
        begin_drain(state)
        assert state.status == "draining" and queue.waiting == 1  # scheduled, not yet run
        with pytest.raises(QueueFull, match="^judge-serve is shutting down: "):
            await asyncio.wait_for(waiting, FAR)
        assert queue.waiting == 0
        begin_drain(state)  # a second signal: still draining, nothing more to refuse
        assert state.status == "draining"
        held.__exit__()

    asyncio.run(scenario())

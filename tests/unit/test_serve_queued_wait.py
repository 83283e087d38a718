"""``serve.queued``: a request that waits for room under ``max_queued_judgments`` (``/get_reward``'s admission) is
admitted when room is given back, first come first admitted, or refused at its deadline.

Everything runs on one event loop and the order of events is forced by the test: a turn of the loop lets the waiting
tasks run, room is given back by leaving an admitted request's ``with`` block, and a deadline already past is the
expiry's only timer (it fires on the next turn). Nothing is timed."""

from __future__ import annotations

import asyncio
import time

import pytest

from serve.queued import JudgmentQueue, QueueFull

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
    assert "max_queued_judgments=3" in str(refused) and "deadline" in str(refused) and refused.retry_after_s > 0


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

"""Bodies past ``OFF_LOOP_BYTES`` are decoded in worker threads, ``LargeDecodes.at_once`` at a time (the server's
``ServerState.large_decodes``, ``LARGE_BODY_DECODES`` by default): many at once took every default worker thread (the
judging work's too) and held every decoded copy in memory. The rest wait; none is refused."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from serve.schema import LARGE_BODY_DECODES, OFF_LOOP_BYTES, LargeDecodes, read_off_loop
from serve.supervision import ServerState


def _started_first(decodes: LargeDecodes, n: int) -> tuple[list, list[int]]:
    """``n`` large reads sent at once under ``decodes``: those handed to a worker thread before any ended, and what
    every read gave back once all were let go."""
    release = threading.Event()
    reads = [lambda k=k: (release.wait(), k)[1] for k in range(n)]
    submitted: list = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):  # asyncio.to_thread submits partial(context.run, read)
            submitted.extend(a for a in getattr(fn, "args", ()) if a in reads)
            return super().submit(fn, *args, **kwargs)

    async def main() -> tuple[list, list[int]]:
        asyncio.get_running_loop().set_default_executor(Counting(max_workers=len(reads) + 1))
        tasks = [asyncio.create_task(read_off_loop(OFF_LOOP_BYTES + 1, read, decodes)) for read in reads]
        await asyncio.sleep(0)  # every task has run to its first wait: a thread, or the semaphore
        first = [reads.index(read) for read in submitted]
        release.set()  # the threads end whatever is asserted
        return first, await asyncio.gather(*tasks)

    first, results = asyncio.run(main())
    assert sorted(map(reads.index, submitted)) == list(range(n))  # every one was handed to a thread in the end
    return first, results


def test_large_bodies_decode_a_few_at_a_time_and_the_rest_wait_their_turn():
    first, results = _started_first(LargeDecodes(), LARGE_BODY_DECODES + 3)
    assert first == list(range(LARGE_BODY_DECODES))
    assert results == list(range(LARGE_BODY_DECODES + 3))  # every one read in the end, each its own
    small = []
    assert asyncio.run(read_off_loop(OFF_LOOP_BYTES, lambda: small.append(threading.get_ident()) or 7,
                                     LargeDecodes())) == 7
    assert small == [threading.get_ident()]  # a small body: on the loop's own thread, no worker


def test_the_bound_is_the_server_states_own_setting():
    """A state is built with its bound (a test's, a benchmark's) instead of a module constant patched for the whole
    process: each ``LargeDecodes`` holds its own count."""
    assert LARGE_BODY_DECODES == 2
    assert ServerState(config=None, layout=None).large_decodes.at_once == LARGE_BODY_DECODES
    one = ServerState(config=None, layout=None, large_decodes=LargeDecodes(1))
    assert one.large_decodes.at_once == 1
    assert _started_first(one.large_decodes, 4)[0] == [0]
    assert _started_first(LargeDecodes(4), 6)[0] == [0, 1, 2, 3]
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="at_once"):
            LargeDecodes(bad)


def test_a_read_cancelled_in_the_loop_turn_its_turn_comes_is_cancelled_and_gives_the_turn_back():
    """The read's turn comes and, in that loop turn, its route is cancelled (uvicorn at the end of
    ``shutdown_grace_s``): the cancellation goes through, nothing is decoded, and the turn is free again (on
    Python 3.11, ``asyncio.wait_for`` cancelled in the turn its inner wait ends returns that wait's result)."""

    async def main() -> tuple[bool, list[str], bool]:
        decodes = LargeDecodes(1)
        turns = decodes._on_running_loop()
        await turns.acquire()  # another large body holds the only turn
        ran: list[str] = []
        waiting = asyncio.Event()

        async def route() -> None:
            waiting.set()
            await read_off_loop(OFF_LOOP_BYTES + 1, lambda: ran.append("decoded"), decodes,
                                time.monotonic() + 3600)
            ran.append("the route went on")

        task = asyncio.ensure_future(route())
        await waiting.wait()
        await asyncio.sleep(0)  # the route waits for its turn
        turns.release()  # its turn comes ...
        task.cancel()  # ... and the route's cancel lands in that loop turn
        try:
            await task
        except asyncio.CancelledError:
            pass
        return task.cancelled(), ran, turns.locked()

    assert asyncio.run(main()) == (True, [], False)


def test_a_read_whose_deadline_has_passed_is_a_timeout_though_a_turn_is_free():
    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await read_off_loop(OFF_LOOP_BYTES + 1, lambda: 1, LargeDecodes(1), time.monotonic() - 1)

    asyncio.run(main())

"""Bodies past ``OFF_LOOP_BYTES`` are decoded in worker threads, ``LARGE_BODY_DECODES`` at a time: many at once took
every default worker thread (the judging work's too) and held every decoded copy in memory. The rest wait; none is
refused."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from serve.schema import LARGE_BODY_DECODES, OFF_LOOP_BYTES, read_off_loop


def test_large_bodies_decode_a_few_at_a_time_and_the_rest_wait_their_turn():
    release = threading.Event()
    reads = [lambda k=k: (release.wait(), k)[1] for k in range(LARGE_BODY_DECODES + 3)]
    submitted: list = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):  # asyncio.to_thread submits partial(context.run, read)
            submitted.extend(a for a in getattr(fn, "args", ()) if a in reads)
            return super().submit(fn, *args, **kwargs)

    async def main() -> list[int]:
        asyncio.get_running_loop().set_default_executor(Counting(max_workers=len(reads) + 1))
        tasks = [asyncio.create_task(read_off_loop(OFF_LOOP_BYTES + 1, read)) for read in reads]
        await asyncio.sleep(0)  # every task has run to its first wait: a thread, or the semaphore
        try:
            assert submitted == reads[:LARGE_BODY_DECODES]
        finally:
            release.set()  # the threads end whatever was asserted
        return await asyncio.gather(*tasks)

    assert asyncio.run(main()) == list(range(len(reads)))  # every one read in the end, each its own
    assert sorted(map(reads.index, submitted)) == list(range(len(reads)))
    small = []
    assert asyncio.run(read_off_loop(OFF_LOOP_BYTES, lambda: small.append(threading.get_ident()) or 7)) == 7
    assert small == [threading.get_ident()]  # a small body: on the loop's own thread, no worker

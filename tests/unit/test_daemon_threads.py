"""serve.daemon_threads.DaemonThreads against what concurrent.futures.ThreadPoolExecutor does: nothing of a call kept
once its thread waits for the next, a shutdown that refuses later calls and ends the threads, idle threads reused."""

from __future__ import annotations

import threading
import weakref

from serve.daemon_threads import DaemonThreads


class _Big:
    """Stands for a request's instruction and answer: weakly referenced, to see when the pool lets it go."""


def test_a_cancelled_calls_arguments_are_let_go_while_its_thread_waits():
    """A call cancelled while it waited its turn: its arguments were kept by its thread until the next call came
    (a cancelled request's instruction and answer, in judge-serve's task classifier)."""
    pool = DaemonThreads(1, thread_name_prefix="test-cancelled")
    go, freed = threading.Event(), threading.Event()
    first = pool.submit(go.wait)
    big = _Big()
    weakref.finalize(big, freed.set)
    cancelled = pool.submit(lambda thing: thing, big)
    del big
    assert cancelled.cancel()
    go.set()
    assert first.result(timeout=10) is True
    assert freed.wait(timeout=5), "the cancelled call's argument is still held by the pool's thread"

"""serve.daemon_threads.DaemonThreads against what concurrent.futures.ThreadPoolExecutor does: nothing of a call kept
once its thread waits for the next, a shutdown that refuses later calls and ends the threads, idle threads reused."""

from __future__ import annotations

import gc
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


def test_a_failed_calls_arguments_are_let_go_without_the_cyclic_gc():
    """A call that raised: its future held the exception, whose traceback held the pool's frame, which held the
    future and the arguments, a cycle only the cyclic gc frees (a failed request's instruction and answer, in
    judge-serve's task classifier). ThreadPoolExecutor breaks it; so does the pool now."""

    def boom(thing: _Big) -> None:
        raise ValueError("failed")

    pool = DaemonThreads(1, thread_name_prefix="test-failed")
    freed = threading.Event()
    big = _Big()
    weakref.finalize(big, freed.set)
    gc.disable()
    try:
        failed = pool.submit(boom, big)
        del big
        assert isinstance(failed.exception(timeout=10), ValueError)
        del failed
        assert freed.wait(timeout=5), "the failed call's argument is kept alive by a reference cycle"
    finally:
        gc.enable()


def test_shutdown_refuses_later_calls_and_ends_the_threads():
    """``shutdown`` was Executor's no-op: a later submit still ran and the threads lived on. Now a submit after it is
    refused as ThreadPoolExecutor refuses it, the call already queued runs, and ``wait`` returns once every thread
    has ended."""
    pool = DaemonThreads(2, thread_name_prefix="test-shutdown")
    go = threading.Event()
    running, queued = pool.submit(go.wait), pool.submit(lambda: "ran")
    threads = [t for t in threading.enumerate() if t.name.startswith("test-shutdown_")]
    go.set()
    pool.shutdown(wait=True)
    assert (running.result(timeout=0), queued.result(timeout=0)) == (True, "ran")
    assert threads and not any(t.is_alive() for t in threads)
    try:
        pool.submit(lambda: "late")
    except RuntimeError as err:
        assert str(err) == "cannot schedule new futures after shutdown"
    else:
        raise AssertionError("a submit after shutdown was accepted")


def test_shutdown_with_cancel_futures_cancels_the_calls_still_waiting():
    pool = DaemonThreads(1, thread_name_prefix="test-cancel-futures")
    go = threading.Event()
    running, waiting = pool.submit(go.wait), pool.submit(lambda: "ran")
    pool.shutdown(wait=False, cancel_futures=True)
    assert waiting.cancelled()
    go.set()
    assert running.result(timeout=10) is True


def test_an_idle_thread_takes_the_next_call_and_a_dropped_pool_ends_its_threads():
    """Calls one after another on a 4-thread pool: one thread runs them all (a new thread was started on each submit
    up to 4, one idle or not); once the pool is dropped, that thread ends (each thread held the pool for the rest of
    the process)."""
    pool = DaemonThreads(4, thread_name_prefix="test-idle")
    names = [pool.submit(lambda: threading.current_thread().name).result(timeout=10) for _ in range(5)]
    assert names == ["test-idle_0"] * 5
    (thread,) = [t for t in threading.enumerate() if t.name.startswith("test-idle_")]
    del pool
    thread.join(timeout=10)
    assert not thread.is_alive()

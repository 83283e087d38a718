"""A bounded pool of daemon threads, for calls that may block for minutes and hold nothing judge-serve must finish.

``concurrent.futures.ThreadPoolExecutor`` joins every thread it started when the interpreter exits, whatever its
``shutdown`` was told: a call still running then holds the process. judge-serve's task classifier runs on such a
pool (``serve.judging.CLASSIFIER_THREADS``), and its ``llm`` method waits on an endpoint for up to three requests,
each bounded only per connect, read or write (``timeout_s``, 60 s by default; a body that trickles in is never cut):
on a ``ThreadPoolExecutor``, once a drain has answered every request and stopped the engines, judge-serve would not
exit until that call returned, however long past Slurm's ``KillWait`` (then SIGKILL) or a Ctrl+C. Its answer has
nobody to go to once the server has stopped, so these threads are daemon threads, left to the interpreter's exit.
"""

from __future__ import annotations

import queue
import threading
import weakref
from concurrent.futures import Executor, Future
from typing import Any, Callable

__all__ = ["DaemonThreads"]

#: A call: its future, function, positional and keyword arguments. None in its place ends the thread that takes it.
_Call = tuple[Future, Callable[..., Any], tuple, dict]


class DaemonThreads(Executor):
    """At most ``max_workers`` calls at once, in the order submitted, each on one of as many daemon threads (one
    started for a call only when no thread is idle); a call cancelled before it starts never runs (``Future.cancel``,
    asyncio's cancelling of ``run_in_executor``). ``shutdown`` is ``ThreadPoolExecutor``'s: later calls are refused
    (RuntimeError), the calls still waiting run unless ``cancel_futures``, then each thread ends, and ``wait`` waits
    for that. A pool dropped without a shutdown ends its threads once they have run what it was given."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers: {max_workers} is not at least 1")
        self._max, self._prefix = max_workers, thread_name_prefix
        self._work: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)  # one release per thread waiting for a call
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._shut = False
        # The threads hold the queue, never the pool: once the pool is gone, its threads end (after what it queued).
        weakref.finalize(self, self._work.put, None).atexit = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: Future = Future()
            self._work.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                thread = threading.Thread(target=_serve, args=(self._work, self._idle), daemon=True,
                                          name=f"{self._prefix}_{len(self._threads)}")
                thread.start()
                self._threads.append(thread)
            return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut = True
            if cancel_futures:
                while True:
                    try:
                        call = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if call is not None:
                        call[0].cancel()
            self._work.put(None)  # each thread puts it back for the next as it ends
        if wait:
            for thread in self._threads:
                thread.join()


def _serve(work: queue.SimpleQueue[_Call | None], idle: threading.Semaphore) -> None:
    """One thread's loop: run the calls it takes until it takes the end."""
    while True:
        call = work.get()
        if call is None:
            work.put(None)
            return
        _run(*call, idle)
        del call  # nothing of a call, run or cancelled, kept while the thread waits for the next


def _run(future: Future, fn: Callable[..., Any], args: tuple, kwargs: dict, idle: threading.Semaphore) -> None:
    """The call into its future. The thread counts as idle before its caller hears: a submit made on the answer
    finds it so and gives it the next call rather than starting another thread."""
    if not future.set_running_or_notify_cancel():  # cancelled while it waited its turn
        idle.release()
        return
    try:
        result = fn(*args, **kwargs)
    except BaseException as err:  # noqa: BLE001 - the caller's future carries it
        idle.release()
        future.set_exception(err)
    else:
        idle.release()
        future.set_result(result)
    finally:  # as ThreadPoolExecutor does: a failed call's traceback holds this frame, whose locals would keep the
        future = fn = args = kwargs = None  # future, its exception and the arguments alive as a cycle (cyclic gc only)

"""A bounded pool of daemon threads, for calls that may block for minutes and hold nothing judge-serve must finish.

``concurrent.futures.ThreadPoolExecutor`` joins every thread it started when the interpreter exits, whatever its
``shutdown`` was told: a call still running then holds the process. judge-serve's task classifier runs on such a
pool (``serve.judging.CLASSIFIER_THREADS``), and its ``llm`` method waits on an endpoint for up to three requests of
60 s each: after a drain had answered every request and stopped the engines, judge-serve did not exit until that call
returned, past Slurm's ``KillWait`` (then SIGKILL) and past a Ctrl+C. Its answer has nobody to go to once the server
has stopped, so these threads are daemon threads, left to the interpreter's exit.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable

__all__ = ["DaemonThreads"]


class DaemonThreads(Executor):
    """At most ``max_workers`` calls at once, in the order submitted, each on one of as many daemon threads (started
    as calls come); a call cancelled before it starts never runs (``Future.cancel``, asyncio's cancelling of
    ``run_in_executor``). ``shutdown`` waits for nothing: nothing here outlives the process's need of it."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers: {max_workers} is not at least 1")
        self._max, self._prefix = max_workers, thread_name_prefix
        self._work: queue.SimpleQueue[tuple[Future, Callable[..., Any], tuple, dict]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        self._work.put((future, fn, args, kwargs))
        with self._lock:
            if self._started < self._max:
                self._started += 1
                threading.Thread(target=self._serve, name=f"{self._prefix}_{self._started - 1}", daemon=True).start()
        return future

    def _serve(self) -> None:
        while True:
            future, fn, args, kwargs = self._work.get()
            result = None
            try:
                if not future.set_running_or_notify_cancel():  # cancelled while it waited its turn
                    continue
                try:
                    result = fn(*args, **kwargs)
                except BaseException as err:  # noqa: BLE001 - the caller's future carries it
                    future.set_exception(err)
                else:
                    future.set_result(result)
            finally:  # nothing of a call, run or cancelled, kept while the thread waits for the next
                del future, fn, args, kwargs, result

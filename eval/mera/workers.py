"""Worker threads that an interrupted ``judge-eval mera`` run does not wait for.

``concurrent.futures.ThreadPoolExecutor`` joins its threads on the way out, in its ``with`` block and again at
interpreter exit, so Ctrl+C or SIGTERM during generation (``eval.mera.interrupts``) waited for every request in
flight, each up to ``--request-timeout`` and its retries: past a scheduler's grace period (docker stop's 10 s), which
then killed the run with SIGKILL. These workers are daemon threads that nothing joins once the run is interrupted: no
queued item starts and the ones running are left to end with the process. An answer that comes first is saved as
usual (the callers journal each as it comes), unless none was saved before the interrupt: the run folder is then left
as it was found (``hold_run_folder``), and the callers drop such an answer rather than leave it there without its
key. One not saved is asked again by the rerun, as any answer the interrupted run never got. An item's own error
stops the run: the worker that met it stops the others from starting any queued item, and the ones running finish
(their answers saved) before the error is raised. The stop is set there, not by the thread that takes the results:
that one waits in input order, and while an earlier item was still running the workers went on starting queued ones
(each a request with its retries against a failing endpoint).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, Future, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["ordered_map"]


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``fn`` over ``items`` on at most ``workers`` daemon threads; results in input order.

    The first item whose ``fn`` raised (in input order) raises here once the items already running have finished;
    no item starts after one raised (those not started are cancelled). Left any other way (a ``KeyboardInterrupt`` while waiting, the generator
    closed), it starts none either and waits for nothing.
    """
    todo = list(items)
    futures: list[Future] = [Future() for _ in todo]
    order: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(todo)):
        order.put(i)
    stopped = threading.Event()
    starting = threading.Lock()  # an item is started, or not, wholly before or after the stop

    def work() -> None:
        while True:
            try:
                i = order.get_nowait()
            except queue.Empty:
                return
            with starting:
                if stopped.is_set():
                    futures[i].cancel()
                    return
                futures[i].set_running_or_notify_cancel()
            try:
                result = fn(todo[i])
            except BaseException as err:  # noqa: BLE001 - handed to the waiting thread, which raises it
                futures[i].set_exception(err)
                with starting:  # no item starts after this one failed; the waiting thread waits for none of them
                    stopped.set()
                    for future in futures:
                        future.cancel()  # only one not started: a running or finished one stays as it is
                return
            futures[i].set_result(result)

    for n in range(min(max(1, workers), len(todo))):
        threading.Thread(target=work, name=f"mera-worker-{n}", daemon=True).start()
    try:
        for future in futures:
            try:
                result = future.result()
            except CancelledError:
                # Never started: a later item failed while this one was being taken from the queue. Its error is
                # raised, or an earlier running item's, whichever comes first in input order once they end.
                with starting:
                    running = [f for f in futures if f.running()]
                wait(running)
                raise next(f.exception() for f in futures
                           if f.done() and not f.cancelled() and f.exception() is not None) from None
            yield result
    except Exception:
        with starting:
            stopped.set()
            running = [f for f in futures if f.running()]
        wait(running)
        raise
    finally:
        with starting:
            stopped.set()

"""Worker threads that an interrupted ``judge-eval mera`` run does not wait for.

``concurrent.futures.ThreadPoolExecutor`` joins its threads on the way out, in its ``with`` block and again at
interpreter exit, so Ctrl+C or SIGTERM during generation (``eval.mera.interrupts``) waited for every request in
flight, each up to ``--request-timeout`` and its retries: past a scheduler's grace period (docker stop's 10 s), which
then killed the run with SIGKILL. These workers are daemon threads that nothing joins once the run is interrupted: no
queued item starts and the ones running are left to end with the process. What they answer then is not written:
the run folder's lock is let go as the interrupt unwinds (``hold_run_folder``), and an answer appended after that
landed while a rerun might hold the folder (two processes appending to one journal, or an answer after the rerun read
it), or, none saved before the interrupt, in a folder put back as it was found, without its key. The callers save each
answer under one lock and close their ``LateAnswers`` under it once ``ordered_map`` is left, before the run folder is
let go: an answer that comes later is dropped and said, and the rerun asks it again, as any answer the
interrupted run never got. An item's own error stops the run: the worker that met it stops the others from starting any
queued item, and the ones running finish (their answers saved) before the error is raised. The stop is set there, not by
the thread that takes the results: that one waits in input order, and while an earlier item was still running the
workers went on starting queued ones (each a request with its retries against a failing endpoint).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, Future, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["LateAnswers", "ordered_map"]

logger = logging.getLogger("eval.mera")


class LateAnswers:
    """Whether a run's workers may still save.

    The caller saves every answer under one lock of its own, asking ``drop`` first, and calls ``close`` under that
    lock once it has left ``ordered_map`` (an interrupt waits for no worker): an answer being saved then is saved
    whole first, and every later one is dropped, never written into a run folder the process may no longer hold.
    Each dropped answer is said in a warning as it comes, the one record of it, and not counted: it comes once the
    run has left its generation on an interrupt, at any time until the process ends, before or after the command
    has said how it ended and returned, so a count the run reported would leave out the answers still to come.

    Attributes:
        closed: no answer is saved any more.
    """

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        """From now on every answer is dropped (the caller holds its save lock)."""
        self.closed = True

    def drop(self, name: str) -> bool:
        """Whether the answer ``name`` (``"task 7"``) must not be saved: the run was closed. A dropped one is said
        (the caller holds its save lock)."""
        if not self.closed:
            return False
        logger.warning("%s: its answer came after the run was stopped: not saved, a rerun asks it again", name)
        return True


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

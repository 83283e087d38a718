"""``eval.mera.workers.ordered_map``: results in input order, and an item's error stops the run at once: no queued
item starts after it, whichever thread takes the results. Ordered by events and thread joins, never by sleeps. And
``LateAnswers``: once closed, every answer is dropped and said."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from eval.mera.workers import LateAnswers, ordered_map

# A bound on each wait, so that a broken ordered_map fails the test instead of hanging it; no test waits it out.
_BOUND = 30.0


def test_results_come_in_input_order_whichever_item_ends_first():
    second_done = threading.Event()

    def fn(x: int) -> int:
        if x == 0:  # the first item ends only after the second has
            assert second_done.wait(_BOUND)
        elif x == 1:
            second_done.set()
        return x * 10

    assert list(ordered_map(fn, range(5), 2)) == [0, 10, 20, 30, 40]


def test_no_item_starts_after_one_failed_with_one_worker():
    started, worker = [], []

    def fn(x: int) -> int:
        started.append(x)
        worker.append(threading.current_thread())
        if x == 1:
            raise RuntimeError("endpoint down")
        return x

    results = ordered_map(fn, [0, 1, 2, 3], 1)
    assert next(results) == 0
    # The caller takes no result yet: the worker alone decides whether item 2 starts; it ends either way
    worker[0].join(_BOUND)
    assert not worker[0].is_alive()
    assert started == [0, 1]
    with pytest.raises(RuntimeError, match="endpoint down"):
        next(results)


def test_no_item_starts_after_one_failed_while_an_earlier_one_still_runs():
    failed, threads, started = threading.Event(), {}, []
    lock = threading.Lock()

    def fn(x: int) -> int:
        with lock:
            started.append(x)
            threads[x] = threading.current_thread()
        if x == 0:
            # Runs on until the worker of item 1 has failed and ended: meanwhile the caller waits on this item
            assert failed.wait(_BOUND)
            threads[1].join(_BOUND)
            assert not threads[1].is_alive()
        if x == 1:
            failed.set()
            raise RuntimeError("endpoint down")
        return x

    results = ordered_map(fn, range(6), 2)
    assert next(results) == 0  # the item running at the failure finishes, its answer kept
    with pytest.raises(RuntimeError, match="endpoint down"):
        next(results)
    threads[0].join(_BOUND)
    assert sorted(started) == [0, 1]


def test_the_first_failure_in_input_order_is_raised():
    second_failed = threading.Event()

    def fn(x: int) -> int:
        if x == 0:
            assert second_failed.wait(_BOUND)
            raise ValueError("first")
        if x == 1:
            second_failed.set()
            raise RuntimeError("second")
        return x

    with pytest.raises(ValueError, match="first"):
        list(ordered_map(fn, range(4), 2))


def test_an_item_cancelled_while_being_taken_raises_the_later_items_error(monkeypatch):
    """Item 0 is taken from the queue by one worker, which is held before it can start it; meanwhile item 1 fails on
    the other worker, which cancels item 0. The caller, waiting on item 0, meets its cancellation and raises item 1's
    error, never a CancelledError; item 0 never starts. The stand-in queue makes that order happen: the worker that
    takes item 0 waits inside the take until the caller has raised, so the other worker can only take item 1."""
    import queue

    from eval.mera import workers as workers_mod

    released = threading.Event()

    class HeldFirstQueue:
        def __init__(self) -> None:
            self._items: queue.SimpleQueue[int] = queue.SimpleQueue()

        def put(self, item: int) -> None:
            self._items.put(item)

        def get_nowait(self) -> int:
            item = self._items.get_nowait()
            if item == 0:  # held by the item, not by who asked first, so no thread switch can swap the two
                assert released.wait(_BOUND)
            return item

    monkeypatch.setattr(workers_mod, "queue", SimpleNamespace(SimpleQueue=HeldFirstQueue, Empty=queue.Empty))
    started, lock = [], threading.Lock()

    def fn(x: int) -> int:
        with lock:
            started.append(x)
        if x == 1:
            raise RuntimeError("item 1 failed")
        return x

    before = set(threading.enumerate())
    try:
        with pytest.raises(RuntimeError, match="item 1 failed"):
            list(ordered_map(fn, [0, 1], 2))
    finally:
        released.set()
    for thread in set(threading.enumerate()) - before:
        thread.join(_BOUND)
    assert started == [1]


def test_late_answers_are_saved_until_closed_then_dropped_and_said(caplog):
    late = LateAnswers()
    assert not late.drop("task 0")  # the run still waits for its workers: saved
    late.close()
    assert late.drop("task 1") and late.drop("task 2")
    assert caplog.messages == [f"task {i}: its answer came after the run was stopped: not saved, a rerun asks it again"
                               for i in (1, 2)]  # fmt: skip

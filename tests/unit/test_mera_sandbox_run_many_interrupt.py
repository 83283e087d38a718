"""Ctrl+C during the code sandbox's ``run_many``: the queued samples are cancelled."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import ExecResult, Sandbox


def test_an_interrupt_cancels_the_queued_samples(monkeypatch):
    """Ctrl+C (here raised by on_result after the first sample) ends run_many once the running sample is done; it
    waited for every queued one. The second sample, if it started, is held until the pool is shut down, so that no
    other can start before the interrupt is handled."""
    started: list[int] = []
    release = threading.Event()

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)
            release.set()
            super().shutdown(wait=wait)

    monkeypatch.setattr(sandbox_mod, "ThreadPoolExecutor", Pool)
    box = Sandbox.__new__(Sandbox)

    def fake_run(job):
        started.append(1)
        if len(started) == 2:
            assert release.wait(60)
        return ExecResult("passed")

    def interrupt(i, result):
        raise KeyboardInterrupt

    box.run = fake_run
    with pytest.raises(KeyboardInterrupt):
        box.run_many([None] * 20, workers=1, on_result=interrupt)
    assert len(started) <= 2  # the first, and the second if it started before the interrupt

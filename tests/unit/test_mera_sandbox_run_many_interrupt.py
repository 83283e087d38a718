"""Ctrl+C (or SIGTERM, SIGHUP) during the code sandbox's ``run_many``: the queued samples are cancelled and the
running ones killed at once."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import ExecJob, ExecResult, Limits, Sandbox
from tests.support.mera_sandbox import bwrap_sandbox_or_skip


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

    def fake_run(job, *, stop=None):
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


#: A deadline far past the moment of the interrupt: a sample still running when run_many returns was not waited for.
PATIENT = Limits(timeout_s=30.0)


@pytest.mark.parametrize("isolation", ["bwrap", "none"])
def test_an_interrupt_kills_the_running_samples_at_once(isolation, sandbox_user):
    """A sample that never returns, running when the run is interrupted (on_result raising after a quick sample,
    workers=2): it is killed at once, stopped_by "interrupted", not left to run to its deadline (30 s here), which
    outlasted docker stop's 10 s grace for a result run_many throws away; without bubblewrap its folder is removed by
    the time run_many raises."""
    box = bwrap_sandbox_or_skip(PATIENT) if isolation == "bwrap" else Sandbox(PATIENT, isolation="none")
    real_run, seen, folders = box.run, [], []
    real_mkdtemp = sandbox_mod.tempfile.mkdtemp

    def recording_run(job, **kwargs):
        result = real_run(job, **kwargs)
        seen.append((job.program, result))
        return result

    def recording_mkdtemp(*args, **kwargs):
        folders.append(real_mkdtemp(*args, **kwargs))
        return folders[-1]

    def interrupt(i, result):
        raise KeyboardInterrupt

    box.run = recording_run
    stuck = ExecJob(program="import time\ndef f():\n    time.sleep(3600)\n", entry_point="f", tests=[{}],
                    expected=["None"])  # fmt: skip
    quick = ExecJob(program="def f():\n    return 1\n", entry_point="f", tests=[{}], expected=["1"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox_mod.tempfile, "mkdtemp", recording_mkdtemp)
        with pytest.raises(KeyboardInterrupt):
            box.run_many([stuck, quick], workers=2, on_result=interrupt)
    (stuck_result,) = [result for program, result in seen if program == stuck.program]
    assert (stuck_result.stopped_by, stuck_result.detail) == (
        "interrupted", "result channel: the supervisor was interrupted"), stuck_result
    assert all(not os.path.exists(folder) for folder in folders), folders
    assert len(folders) == (2 if isolation == "none" else 0)

"""A signal-stopped run of two ranks: rank 0 decides and requeues, every rank returns its answer, and none returns
before rank 0's ``scontrol`` calls have (train/recipe_steps.py ``PreparedRun.train``, train/preemption.py
``requeue_with_every_rank``). The order is made, not left to chance: rank 0's first ``scontrol`` call waits until
rank 1 has entered the broadcast or returned (``_SCONTROL_GATE``).

Under preemption torchrun exits 1 after the SIGTERM even when its ranks exit 0: a rank on another node that returned
at once let its torchrun end the step (``srun --kill-on-bad-exit``) while rank 0 was still asking ``scontrol``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from datetime import timedelta
from pathlib import Path

import pytest

from tests.unit.test_slurm_requeue_decision import _fake_scontrol

# A rank that dies before joining leaves the other in the store's C++ wait, which pytest-timeout cannot interrupt:
# the join gives up after this (torch's default is 30 minutes).
_JOIN_TIMEOUT = timedelta(seconds=60)

#: Job 7's record while Slurm preempts it within its GraceTime: rank 0 reads it, then requeues.
_PREEMPTED = "JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28"

#: In front of the fake scontrol: its first call waits for one line on the FIFO ``FAKE_SCONTROL_GATE``, which rank 1
#: writes either as it enters the broadcast (``_rank_one``: it waits for rank 0's answer) or once ``train`` has
#: returned (it did not wait). So rank 0's calls start only after rank 1 has either returned or is held in the
#: broadcast: a rank 1 that does not wait returns before any call, every time. The first line read is kept in
#: ``<gate>.opened``. The 60 s bound only turns a broken test into a failure instead of a hang.
_SCONTROL_GATE = """#!/bin/bash
gate=$FAKE_SCONTROL_GATE
if [[ ! -e $gate.opened ]]; then
    exec 3<>"$gate"
    read -r -t 60 -u 3 token || { echo "scontrol gate: no line from rank 1 in 60 s" >&2; exit 1; }
    echo "$token" >"$gate.opened"
fi
exec "$(dirname "$0")/scontrol.fake" "$@"
"""


def _say_at_the_gate(gate: str, line: str) -> None:
    """One line to the fake scontrol's FIFO; the test process holds it open, so neither side's open blocks."""
    with open(gate, "w", encoding="utf-8") as fifo:
        fifo.write(line + "\n")


class _OneStepTrainer:
    """What ``PreparedRun.train`` drives of a transformers Trainer, for one optimizer step: ``train`` calls every
    callback's ``on_step_end`` once, as the trainer does at the end of a step, and returns. ``signal_before`` is
    what the stopper's handler records on a rank the signal reached before that step ends (None: not this one)."""

    def __init__(self, callbacks, signal_before: int | None):
        from transformers import TrainerControl, TrainerState

        self.callbacks, self.signal_before = list(callbacks), signal_before
        self.state, self.control = TrainerState(), TrainerControl()
        self.lr_scheduler = type("Schedule", (), {"get_last_lr": staticmethod(lambda: [0.0])})()

    def add_callback(self, callback):
        self.callbacks.append(callback)

    def train(self, resume_from_checkpoint=None):
        stopper = self.callbacks[0]
        if self.signal_before is not None:
            stopper.received = self.signal_before
        self.state.global_step = 1
        for callback in self.callbacks:
            callback.on_step_end(None, self.state, self.control)


def _train_one_step(rank: int, store: str, output_dir: Path, signal_before: int | None):
    """``PreparedRun.train`` on ``rank`` of a gloo group of two, the stopper first among the trainer's callbacks (as
    the recipes pass it); returns its ``RunResult`` and the fake scontrol's calls as they stood the moment ``train``
    returned (read before the group is destroyed: destroying it waits for the other rank)."""
    import torch.distributed as dist

    from tests.support.tiny_regressor import prepared_run

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2, timeout=_JOIN_TIMEOUT)
    try:
        run = prepared_run(output_dir)
        result = run.train(_OneStepTrainer([run.stopper], signal_before))
        calls = Path(os.environ["FAKE_SCONTROL_CALLS"])
        return result, calls.read_text().splitlines() if calls.exists() else []
    finally:
        dist.destroy_process_group()


def _rank_one(store: str, output_dir: str, calls: str, seen: str, gate: str) -> None:
    """Rank 1, which no signal reached: writes to ``seen`` its result's ``requeued`` and the fake scontrol's calls
    as they stand the moment ``train`` returns. It opens the scontrol gate as it enters a broadcast (the real one
    runs after) or, if it never enters one, once ``train`` has returned."""
    import torch.distributed as dist

    broadcast = dist.broadcast

    def broadcast_after_opening_the_gate(*args, **kwargs):
        _say_at_the_gate(gate, "rank 1 waits in the broadcast")
        return broadcast(*args, **kwargs)

    # this forked process's own module: rank 0's broadcast is untouched
    dist.broadcast = broadcast_after_opening_the_gate
    os.environ["RANK"] = "1"
    result, lines = _train_one_step(1, store, Path(output_dir), None)
    _say_at_the_gate(gate, "rank 1 returned")
    Path(seen).write_text(json.dumps({"requeued": result.requeued, "stopped_by_signal": result.stopped_by_signal,
                                      "scontrol_calls": lines}))
    raise SystemExit(0)


def _two_ranks(tmp_path: Path, monkeypatch, record: str, signum: int):
    """A stop on two ranks of job 7, whose record is ``record``: rank 0 (this process) gets ``signum``, rank 1
    (forked) learns it through the stopper's all-reduce. Returns rank 0's result, what rank 1 saw (``_rank_one``)
    and the fake scontrol's calls at the end."""
    calls = _fake_scontrol(tmp_path, monkeypatch, record)
    bin_dir = tmp_path / "bin"
    (bin_dir / "scontrol").rename(bin_dir / "scontrol.fake")
    (bin_dir / "scontrol").write_text(_SCONTROL_GATE)
    (bin_dir / "scontrol").chmod(0o755)
    gate = tmp_path / "scontrol-gate"
    os.mkfifo(gate)
    # held open (read and write) for the whole test: rank 1's writes are buffered until the gate reads them, and
    # its second line, after the gate has opened, is never waited for
    held = os.open(gate, os.O_RDWR)
    monkeypatch.setenv("FAKE_SCONTROL_GATE", str(gate))
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    store, seen = tmp_path / "store", tmp_path / "rank1.json"
    # fork: the child has torch and transformers imported already (a spawned one would import them again)
    other = multiprocessing.get_context("fork").Process(
        target=_rank_one, args=(str(store), str(tmp_path / "rank1"), str(calls), str(seen), str(gate)))
    other.start()
    try:
        result, _ = _train_one_step(0, str(store), tmp_path / "rank0", signum)
        other.join(60)
    finally:
        os.close(held)
        if other.is_alive():  # rank 0 never joined a collective: do not leave rank 1 waiting in it
            other.kill()
            other.join()
    assert other.exitcode == 0
    # the gate opened for rank 1 waiting in rank 0's broadcast, not for rank 1 having returned
    assert (tmp_path / "scontrol-gate.opened").read_text() == "rank 1 waits in the broadcast\n"
    return result, json.loads(seen.read_text()), calls.read_text().splitlines()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1], ids=["preempted", "pre-timeout"])
def test_every_rank_returns_rank_zeros_requeue_after_its_scontrol_calls(signum, tmp_path, monkeypatch):
    """Preempted within GraceTime (SIGTERM) or near the time limit (SIGUSR1): rank 1's ``train`` returns requeued
    True, and by then the fake scontrol already holds rank 0's calls (for SIGTERM the record, then the requeue; for
    SIGUSR1 the requeue alone): it waited for rank 0's answer, never returning False at once whatever rank 0 was
    doing. Rank 1 itself asked nothing."""
    result, rank_one, calls = _two_ranks(tmp_path, monkeypatch, _PREEMPTED, signum)
    expected_calls = (["show job -o 7"] if signum == signal.SIGTERM else []) + ["requeue 7"]
    assert result.requeued is True
    assert rank_one == {"requeued": True, "stopped_by_signal": int(signum), "scontrol_calls": expected_calls}
    assert calls == expected_calls  # rank 1 added none


def test_every_rank_returns_rank_zeros_no_after_a_cancel(tmp_path, monkeypatch):
    """scancel (SIGTERM, the record CANCELLED): rank 0 reads the record and does not requeue, and rank 1 returns that
    same False after the read."""
    result, rank_one, calls = _two_ranks(tmp_path, monkeypatch, "JobState=CANCELLED Restarts=0 PreemptTime=None",
                                         signal.SIGTERM)
    assert result.requeued is False
    assert rank_one == {"requeued": False, "stopped_by_signal": int(signal.SIGTERM),
                        "scontrol_calls": ["show job -o 7"]}
    assert calls == ["show job -o 7"]

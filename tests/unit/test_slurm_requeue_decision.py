"""Which signal-stopped runs put their Slurm job back in the queue (train/preemption.py), against a fake scontrol.

The real daemons show the same cases end to end (tests/integration/slurm/test_slurm_jobs.py); this pins the decision table, including
the scancel case those tests do not run (a cancelled job must stay cancelled).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def preemption():
    """train.preemption, imported when a test here runs rather than at collection: its callback subclasses
    transformers' TrainerCallback, whose import (the whole trainer stack, ~6 CPU-s) every xdist worker would
    otherwise pay while collecting."""
    import train.preemption

    return train.preemption


FAKE_SCONTROL = """#!/bin/sh
echo "$@" >> "$FAKE_SCONTROL_CALLS"
if [ "$1" = show ]; then echo "$FAKE_SCONTROL_RECORD"; exit 0; fi
exit 0
"""

def _fake_scontrol(tmp_path: Path, monkeypatch, record: str) -> Path:
    """FAKE_SCONTROL first on PATH, answering ``scontrol show job`` with job 7's ``record``; returns the file its
    calls are written to (absent until it is called)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(FAKE_SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path('/usr/bin')}:{Path('/bin')}")
    monkeypatch.setenv("FAKE_SCONTROL_CALLS", str(calls))
    monkeypatch.setenv("FAKE_SCONTROL_RECORD", f"JobId=7 {record}")
    return calls


CASES = [
    # (case, signal, `scontrol show job` record, SLURM_RESTART_COUNT, returns, runs `scontrol requeue`)
    ("pre-timeout SIGUSR1", signal.SIGUSR1, "JobState=RUNNING Restarts=0 PreemptTime=None", None, True, True),
    ("preempted within GraceTime", signal.SIGTERM, "JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28",
     None, True, True),
    ("scontrol requeue by hand", signal.SIGTERM, "JobState=COMPLETING Restarts=1 PreemptTime=None", None, True, False),
    ("scontrol requeue of a rerun", signal.SIGTERM, "JobState=PENDING Restarts=2 PreemptTime=None", "1", True, False),
    ("scancel", signal.SIGTERM, "JobState=CANCELLED Restarts=0 PreemptTime=None", None, False, False),
    ("scancel of a rerun", signal.SIGTERM, "JobState=CANCELLED Restarts=1 PreemptTime=None", "1", False, False),
    ("time limit reached", signal.SIGTERM, "JobState=TIMEOUT Restarts=0 PreemptTime=None", None, False, False),
]  # fmt: skip


@pytest.mark.parametrize(("case", "signum", "record", "restart_count", "returns", "requeues"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_requeue_decision(case, signum, record, restart_count, returns, requeues, tmp_path, monkeypatch, caplog,
                           preemption):  # fmt: skip
    """SIGUSR1 and a preemption requeue; Slurm's own requeue is not repeated; scancel and the time limit do not."""
    calls = _fake_scontrol(tmp_path, monkeypatch, record)
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("RANK", "0")
    if restart_count is None:
        monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    else:
        monkeypatch.setenv("SLURM_RESTART_COUNT", restart_count)
    stopper = preemption.SaveAndStopOnSignal()
    stopper.received = signum
    with caplog.at_level("WARNING", logger="train.preemption"):
        assert preemption.requeue_slurm_job(stopper) is returns
    lines = calls.read_text().splitlines() if calls.exists() else []
    assert ("requeue 7" in lines) is requeues, lines
    # The requeue is announced before scontrol runs: a requeue ends the job's steps at once, so a line logged after
    # the call could be lost (tests/integration/slurm/test_slurm_jobs.py reads it in the real job log).
    assert ("requeueing Slurm job 7" in caplog.text) is requeues, caplog.text


def test_no_requeue_off_rank_zero_or_outside_slurm(tmp_path, monkeypatch, preemption):
    """Only global rank 0 of a Slurm job asks; elsewhere (other ranks, no SLURM_JOB_ID, no signal) nothing runs:
    a recording scontrol, which would answer a requeue, is never called."""
    calls = _fake_scontrol(tmp_path, monkeypatch, "JobState=RUNNING Restarts=0 PreemptTime=None")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    stopper = preemption.SaveAndStopOnSignal()
    stopper.received = signal.SIGUSR1
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("RANK", "1")
    assert preemption.requeue_slurm_job(stopper) is False
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("SLURM_JOB_ID")
    assert preemption.requeue_slurm_job(stopper) is False
    stopper.received = None
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    assert preemption.requeue_slurm_job(stopper) is False
    assert not calls.exists()
    stopper.received = signal.SIGUSR1  # the same fake answers rank 0 of a signalled job: the guards, not it, said no
    assert preemption.requeue_slurm_job(stopper) is True and "requeue 7" in calls.read_text().splitlines()

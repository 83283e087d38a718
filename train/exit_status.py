"""judge-train's exit status for a run a signal stopped: what Slurm and torchrun make of it.

Its own module, free of heavy imports: the CLI (``train.cli``) returns it and the preemption handling
(``train.preemption``, which imports transformers) decides with it during an export.
"""

from __future__ import annotations

import os
import signal

__all__ = ["STOPPED_NOT_REQUEUED", "INTERRUPTED", "ExportAbandoned", "stop_exit_code"]

#: A run stopped by a signal at a checkpoint that nothing will resume by itself: sysexits' EX_TEMPFAIL ("try
#: again later"), so a Slurm job ends FAILED and an afterok dependant does not start on an unfinished run.
STOPPED_NOT_REQUEUED = 75

#: A run Ctrl+C (SIGINT) stopped, at a checkpoint or at once: 128 + SIGINT, what a shell reports for a program that
#: Ctrl+C ended, and what judge-eval and ``judge-train data`` exit with on Ctrl+C.
INTERRUPTED = 130


class ExportAbandoned(SystemExit):
    """A stop signal came during the export, which was given up before it replaced the earlier one.

    A ``SystemExit`` carrying the run's exit status (``stop_exit_code``: 0 when the Slurm job is requeued,
    ``INTERRUPTED`` for Ctrl+C, else 75), so that every recipe ends there, whatever it does after its export.
    Raised by ``train.preemption.RequeueDuringExport``; defined here so that ``train.cli`` can tell it without
    importing transformers.
    """


def stop_exit_code(result) -> int:
    """The exit status of a run a signal stopped at a checkpoint: ``INTERRUPTED`` (130) on every rank for Ctrl+C
    (SIGINT, for which no requeue is asked: the user stopped it), else 0 when its Slurm job was requeued, else 75.

    Under Slurm the requeue is global rank 0's to decide and to do (``train.preemption.requeue_slurm_job``); after
    training the other ranks wait for its answer (``train.preemption.requeue_with_every_rank``) and carry it in
    ``requeued``. They exit 0 either way, leaving the job's status to rank 0: during an export rank 0 requeues
    alone, and were the others to exit 75 there, torchrun would SIGTERM rank 0 and srun (``--kill-on-bad-exit``)
    end the step, possibly before rank 0's ``scontrol requeue`` had returned: a job that should come back would end
    FAILED instead. When rank 0 does not requeue (scancel), its 75 alone fails the job.
    """
    if getattr(result, "stopped_by_signal", None) == signal.SIGINT:
        return INTERRUPTED
    if getattr(result, "requeued", False):
        return 0
    rank = os.environ.get("RANK", "0")
    if os.environ.get("SLURM_JOB_ID") and rank != "0" and getattr(result, "stopped_by_signal", None) is not None:
        return 0
    return STOPPED_NOT_REQUEUED

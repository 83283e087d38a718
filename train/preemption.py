"""Save and stop on a signal: the hook Slurm's pre-timeout and preemption signals reach.

``sbatch --signal=USR1@120`` (or ``scancel --signal=USR1``) delivers SIGUSR1 to the training processes. The
handler only sets a flag; at the end of the current optimizer step the callback asks the Trainer to save a
checkpoint and stop, so the job exits cleanly with a ``checkpoint-N`` that ``--resume`` continues from. Under
several ranks the flag is all-reduced every step, so all ranks save and stop together even when only some of
them received the signal (a collective save under ZeRO-3 needs all of them).

After the stop, ``requeue_slurm_job`` (called by the recipes) puts the job back in the queue on SIGUSR1, the
pre-timeout signal, by running ``scontrol requeue $SLURM_JOB_ID`` once (global rank 0). On SIGTERM (preemption,
or ``scontrol requeue`` by hand) Slurm requeues the job itself, so nothing more is done. The rerun finds
``checkpoint-N`` in the run folder and passes ``--resume`` (``slurm/train.sbatch``).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess

from transformers import TrainerCallback

__all__ = ["SaveAndStopOnSignal", "STOP_SIGNALS", "requeue_slurm_job"]

logger = logging.getLogger(__name__)

#: Signals that trigger save-and-stop. SIGTERM is what ``scontrol requeue`` and a preemption send first.
STOP_SIGNALS = (signal.SIGUSR1, signal.SIGTERM)


class SaveAndStopOnSignal(TrainerCallback):
    """Trainer callback: on a stop signal, checkpoint at the end of the current step and end training.

    Attributes:
        received: the signal number received, or None.
        stopped_at_step: the global step at which training was stopped, or None.
    """

    def __init__(self, signals=STOP_SIGNALS):
        self.signals = tuple(signals)
        self.received: int | None = None
        self.stopped_at_step: int | None = None
        self._previous = {}

    def install(self) -> None:
        """Install the signal handlers (main thread only); ``uninstall`` restores the previous ones."""
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _on_signal(self, signum, frame) -> None:
        # Only a flag: saving from inside a signal handler could interrupt a collective or a half-written file.
        self.received = signum

    def _signal_on_any_rank(self) -> int:
        """The received signal number, all-reduced (max) over ranks; 0 when none arrived anywhere."""
        import torch
        import torch.distributed as dist

        received = int(self.received or 0)
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            backend = dist.get_backend()
            device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
            tensor = torch.tensor([received], device=device)
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
            received = int(tensor.item())
        return received

    def on_step_end(self, args, state, control, **kwargs):
        received = self._signal_on_any_rank()
        if received:
            if self.stopped_at_step is None:
                logger.warning(
                    "received %s: saving checkpoint-%d and stopping", signal.Signals(received).name, state.global_step
                )
            self.received = received  # ranks that did not see the signal learn it here
            self.stopped_at_step = state.global_step
            control.should_save = True
            control.should_training_stop = True
        return control


def requeue_slurm_job(callback: SaveAndStopOnSignal) -> bool:
    """After a signal-triggered stop, requeue the Slurm job when the signal was the pre-timeout SIGUSR1.

    Runs ``scontrol requeue $SLURM_JOB_ID`` on global rank 0 only (every rank learns the signal through the
    callback's all-reduce). Does nothing outside Slurm, on other ranks, or when training was not stopped by SIGUSR1.

    Returns:
        True when the requeue command was run and succeeded.
    """
    job_id = os.environ.get("SLURM_JOB_ID")
    if callback.received != signal.SIGUSR1 or not job_id or os.environ.get("RANK", "0") != "0":
        return False
    result = subprocess.run(["scontrol", "requeue", job_id], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        logger.error("scontrol requeue %s failed (%d): %s", job_id, result.returncode, result.stderr.strip())
        return False
    logger.warning("requeued Slurm job %s; the rerun resumes from the checkpoint just saved", job_id)
    return True

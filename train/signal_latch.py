"""Keep a SIGUSR1 that comes before training starts, for the trainer's stopper to act on.

slurm/train.sbatch ignores SIGUSR1 in its shell (``trap "" USR1``) so that Slurm's pre-timeout signal
(``--signal=USR1@N``) or an operator's ``scancel --signal=USR1`` cannot kill it; the training processes inherit
"ignore". ``train.preemption.SaveAndStopOnSignal`` installs its handler only when training starts, after the data,
the training arguments and the model are built (minutes for a 32B model): a SIGUSR1 in that window was dropped, the
job ran on into its time limit, ended TIMEOUT and was not requeued. ``latched()``, around a training command, records
it instead; the stopper takes it when it installs (``take``), so the run stops after its first optimizer step with a
checkpoint and is requeued as for a signal during training.

SIGTERM is not latched: before a step is trained there is nothing to save, and dying at once (its default) is what
``scancel`` and a preemption ask. Slurm does not requeue a job preempted under PreemptMode=REQUEUE with a GraceTime
that ends within the grace (``train.preemption``): slurm/train.sbatch asks ``judge.plumbing.slurm_requeue`` once the
training step has returned, which requeues it when it was preempted. SIGINT (Ctrl+C) is not latched either, for
the same reason: before training starts it is Python's KeyboardInterrupt, which ``train.cli`` turns into one line
and exit 130; from then on the stopper takes it (``train.preemption``).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["LATCHED_SIGNALS", "latched", "take", "disposition_before"]

#: The signals kept until the stopper installs.
LATCHED_SIGNALS = (signal.SIGUSR1,)

_received: int | None = None
_original: dict[int, Any] = {}


def _record(signum, frame) -> None:
    global _received
    if _received is None:
        _received = signum


@contextlib.contextmanager
def latched() -> Iterator[None]:
    """Record ``LATCHED_SIGNALS`` until the block ends, then put back the dispositions found (on the main thread
    only, where Python handles signals; elsewhere the block runs without a latch)."""
    global _received
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received = None
    for sig in LATCHED_SIGNALS:
        _original[sig] = signal.signal(sig, _record)
    try:
        yield
    finally:
        for sig, handler in _original.items():
            signal.signal(sig, handler)
        _original.clear()
        _received = None


def take() -> int | None:
    """The signal latched so far, or None; taken: a second call returns None until another comes."""
    global _received
    received, _received = _received, None
    return received


def disposition_before(sig: int, handler: Any) -> Any:
    """``handler`` (what ``signal.signal`` returned when a stopper installed its own), unless it is the latch's:
    then the disposition from before the latch, so the stopper's uninstall puts back what the process inherited."""
    return _original.get(sig, handler) if handler is _record else handler

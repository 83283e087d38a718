"""Save and stop on a signal: the hook Slurm's pre-timeout and preemption signals reach.

``sbatch --signal=USR1@120`` (or ``scancel --signal=USR1``) delivers SIGUSR1 to the training processes. The
handler only sets a flag; at the end of the current optimizer step the callback asks the Trainer to save a
checkpoint and stop, so the job exits cleanly with a ``checkpoint-N`` that ``--resume`` continues from. Under
several ranks the flag is all-reduced every step, so all ranks save and stop together even when only some of
them received the signal (a collective save under ZeRO-3 needs all of them). Ranks that received different signals
stop for one of them, by precedence (``_PRECEDENCE``): Ctrl+C over Slurm's, SIGTERM over SIGUSR1.

After the stop, ``requeue_slurm_job`` puts the job back in the queue by running ``scontrol requeue $SLURM_JOB_ID``
once (global rank 0), on either signal; the recipes call it through ``requeue_with_every_rank``, whose broadcast
holds every other rank until rank 0 has its answer:

* SIGUSR1, the pre-timeout signal (``--signal=USR1@N``): Slurm would otherwise end the job at its time limit.
* SIGTERM, what ``scontrol requeue``, ``scancel`` and preemption send first, SIGKILL following after KillWait (or
  the partition's GraceTime). Which of them sent it is read from the job's record (``scontrol show job``):
  preempted (``PreemptTime`` set) and still RUNNING: requeue. Under partition preemption with a GraceTime
  (PreemptMode=REQUEUE) a job that saves and exits 0 within the grace ends COMPLETED and is *not* requeued
  (observed with Slurm 22.05 on the one-host test cluster): this requeue is what brings it back. ``Restarts``
  above ``SLURM_RESTART_COUNT`` (``scontrol requeue`` by hand, preemption without grace): Slurm is requeueing it
  already, nothing to do. CANCELLED (``scancel``) or TIMEOUT: the operator or the limit ended it; no requeue
  (``scontrol requeue`` would bring back even a cancelled batch job), the checkpoint stays for ``--resume``.
  The rule is ``judge.plumbing.slurm_requeue.requeue_if_preempted``, which slurm/train.sbatch also runs after a
  SIGTERM that came before this callback was installed (nothing saved, the ranks dead at it).

A signal may also come after the last step, while rank 0 exports the judge (merge, save, reload and check, model
card: minutes for a 32B model). The handlers stay installed until the export is done, so it is not lost (under
slurm/train.sbatch the inherited disposition is "ignore"); ``RequeueDuringExport`` requeues the job the same way as
soon as the signal is seen, and gives up the unfinished export at its next step (it is written in a staging
folder, the earlier export left in place): the rerun resumes from the final checkpoint, trains no step and exports
again.

The rerun finds ``checkpoint-N`` in the run folder and passes ``--resume`` (``slurm/train.sbatch``). A save must
finish within KillWait / GraceTime; size them for the checkpoint (a ZeRO-3 save of a 32B model on shared storage
takes minutes).

Ctrl+C (SIGINT) is a stop signal too, with two differences. The first press says at once on stderr what will happen
(the end of this step, with a checkpoint; during the export, the export given up) and rank 0 never asks for a requeue
on it (``stop_exit_code``: 130 on every rank; a requeue Slurm makes itself, an admin's ``scontrol requeue``, is
Slurm's, whatever the ranks decide); the second raises ``KeyboardInterrupt`` at once, wherever the main thread
is, for a user who will not wait for the step and the save: a checkpoint being written is then cut, and
``train.output_folder.latest_checkpoint`` passes it over. Saving on the first press is the choice made here, as for
Slurm's signals: the steps since the last save are kept, at the cost of finishing one step and one save; a second
press is the way out of that wait. Under torchrun every rank gets one SIGINT (the workers run in sessions of their
own, so the terminal's reaches torchrun alone, which sends it on to each) and the all-reduce makes them stop at the
same step; torchrun kills its workers ``--shutdown-timeout`` seconds (30 by default) after that, so a step and a save
that take longer are cut there as by a second press. A second Ctrl+C reaches the workers as torchrun's SIGTERM, which
a worker that took the first counts as the second press. A process that inherits SIGINT ignored (a background job of a
shell script) keeps ignoring it. Before training starts, Ctrl+C is not latched (``train.signal_latch``): there is
no trained step to save, and stopping at once is what it asks; one that comes once the stopper is installed but
before the first step (``trainer.train()``'s set-up) stops at ``on_train_begin``, for the same reason.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading

from transformers import TrainerCallback

from judge.plumbing import slurm_requeue
from train.exit_status import ExportAbandoned, stop_exit_code

__all__ = ["SaveAndStopOnSignal", "STOP_SIGNALS", "requeue_slurm_job", "requeue_with_every_rank", "ExportAbandoned",
           "RequeueDuringExport", "abandon_with_every_rank", "SCONTROL_REQUEUE_TIMEOUT_S",
           "SCONTROL_SHOW_JOB_TIMEOUT_S"]

logger = logging.getLogger(__name__)

#: Signals that trigger save-and-stop. SIGTERM is what ``scontrol requeue`` and a preemption send first; SIGINT is
#: Ctrl+C (a second one stops at once: ``SaveAndStopOnSignal``).
STOP_SIGNALS = (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)

#: Seconds rank 0 waits for ``scontrol show job`` and ``scontrol requeue`` (``requeue_slurm_job``) while every other
#: rank waits in ``requeue_with_every_rank``'s broadcast, which ``ddp_timeout`` bounds: a shorter ``ddp_timeout``
#: lets NCCL's async error handling kill a waiting rank (train.trainer_preflight.check_ddp_timeout).
SCONTROL_SHOW_JOB_TIMEOUT_S = 30
SCONTROL_REQUEUE_TIMEOUT_S = 60


class SaveAndStopOnSignal(TrainerCallback):
    """Trainer callback: on a stop signal, checkpoint at the end of the current step and end training; a signal
    during a checkpoint's save ends training once that save is done, without training another step.

    Attributes:
        received: the signal number received, or None.
        stopped_at_step: the global step at which training was stopped, or None.
        interrupts: how many Ctrl+C (SIGINT) came; the second raises ``KeyboardInterrupt``.
    """

    def __init__(self, signals=STOP_SIGNALS):
        self.signals = tuple(signals)
        self.received: int | None = None
        self.stopped_at_step: int | None = None
        self.interrupts = 0
        self.training_began = False  # set at on_train_begin, for what the first Ctrl+C says
        self.exporting = False  # set by RequeueDuringExport, for what the first Ctrl+C says
        self._previous = {}
        self._wakes: list[threading.Event] = []
        self._waking = False

    def install(self) -> None:
        """Install the signal handlers (main thread only); ``uninstall`` restores the previous ones.

        A stop signal that came before, while the run was being built, and that ``train.signal_latch`` kept, counts
        as received now: training stops at the end of its first step, with a checkpoint, and the job is requeued.
        """
        from train import signal_latch

        for sig in self.signals:
            if sig == signal.SIGINT and signal.getsignal(sig) == signal.SIG_IGN:
                continue  # inherited "ignore" (a shell script's background job): Ctrl+C is not meant for it
            self._previous[sig] = signal_latch.disposition_before(sig, signal.signal(sig, self._on_signal))
        early = signal_latch.take()
        if early is not None and early in self.signals and self.received is None:
            logger.warning("received %s before training started: stopping after the first step, with a checkpoint",
                           signal.Signals(early).name)
            self._on_signal(early, None)

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def wake_on_signal(self, event: threading.Event) -> None:
        """Set ``event`` when a stop signal comes (at once if one has come): a thread waits on it instead of
        looking at ``received`` now and then. ``forget_wake`` ends that; set the event yourself only after it."""
        self._wakes.append(event)
        if self.received:
            self._set_wakes()

    def forget_wake(self, event: threading.Event) -> None:
        if event in self._wakes:
            self._wakes.remove(event)

    def _on_signal(self, signum, frame) -> None:
        # Only a flag and the waiting threads' events: saving from inside a signal handler could interrupt a
        # collective or a half-written file. A second Ctrl+C is the user's "now", whatever that interrupts.
        if signum == signal.SIGTERM and self.interrupts and os.environ.get("TORCHELASTIC_RUN_ID"):
            # torchrun's relay of a second Ctrl+C: the terminal's reaches torchrun alone, and a second one, cutting
            # its wait for the workers after the first, makes its shutdown send them SIGTERM and wait out
            # --shutdown-timeout again (torch/distributed/elastic/agent/server/api.py, SimpleElasticAgent.run).
            # Outside torchrun a SIGTERM after Ctrl+C is a launcher's teardown (one-process accelerate launch).
            signum = signal.SIGINT
        if signum == signal.SIGINT:
            self.interrupts += 1
            if self.interrupts > 1:
                raise KeyboardInterrupt
            self._say_interrupted()
        # The stronger stop stays (_PRECEDENCE, as across ranks): the user's, through a launcher's SIGTERM that follows
        # it; a cancel's SIGTERM, through the time limit's SIGUSR1 in the same step, which would requeue the job.
        if _to_all_reduce(signum) > _to_all_reduce(self.received):
            self.received = signum
        self._set_wakes()

    def _say_interrupted(self) -> None:
        """The first Ctrl+C's line, at once (the step and the save may take minutes), on global rank 0 only: under
        torchrun every rank gets the signal. ``os.write``, not ``print``: the handler may run inside a write to
        stderr, which a buffered stream refuses to re-enter."""
        if os.environ.get("RANK", "0") != "0":
            return
        if self.exporting:
            then = "giving the export up at its next step (the final checkpoint stays; --resume exports again)"
        elif not self.training_began:
            then = "stopping before the first step, nothing trained"
        else:
            then = "stopping at the end of this step, with a checkpoint"
        with contextlib.suppress(OSError):
            os.write(2, f"\njudge-train: Ctrl+C: {then}; Ctrl+C again stops at once, without it\n".encode())

    def _set_wakes(self) -> None:
        # The handler runs on the main thread, between two of its bytecodes, and may run inside this very call
        # (a second signal) while an Event.set() holds that event's lock: setting it again there would wait on the
        # lock forever. Every call sets every event, so the inner one has nothing to add. The main thread sets a
        # registered event only through here, for the same reason.
        if self._waking:
            return
        self._waking = True
        try:
            for event in list(self._wakes):
                event.set()
        finally:
            self._waking = False

    def _signal_on_any_rank(self) -> int:
        """The signal the ranks stop for, all-reduced over them (``_to_all_reduce``: Ctrl+C over Slurm's signals,
        SIGTERM over SIGUSR1); 0 when none arrived anywhere."""
        import torch.distributed as dist

        tensor = _collective_tensor(_to_all_reduce(self.received))
        if tensor is None:
            return int(self.received or 0)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return _from_all_reduced(int(tensor.item()))

    def on_train_begin(self, args, state, control, **kwargs):
        # Ctrl+C while trainer.train() set up (the optimizer, DeepSpeed, a checkpoint's load: minutes for a large
        # model): nothing of this launch is trained, so it stops here, as during the run's build, and before an
        # --overwrite-output-dir launch deletes the earlier run at this same event (train.recipe_steps, a callback
        # after this one), which the user may be stopping it to keep. Slurm's signals still train a step and save.
        tensor = _collective_tensor(int(self.interrupts > 0))
        interrupted = self.interrupts > 0
        if tensor is not None:
            import torch.distributed as dist

            dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
            interrupted = bool(tensor.item())
        if interrupted:
            self.received = signal.SIGINT
            raise KeyboardInterrupt
        self.training_began = True
        return control

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

    def on_save(self, args, state, control, **kwargs):
        # A signal during a checkpoint's save (minutes for a large model): that checkpoint is the one to stop at.
        # Without this the run trained one more step and saved again. Every rank saves, so every rank asks here.
        if self.stopped_at_step is not None or 0 < state.max_steps <= state.global_step:
            return control  # stopping here already, or the last step's save: training ends anyway (then the export)
        received = self._signal_on_any_rank()
        if received:
            logger.warning("received %s during the save of checkpoint-%d: stopping there",
                           signal.Signals(received).name, state.global_step)
            self.received = received
            self.stopped_at_step = state.global_step
            control.should_training_stop = True
        return control


#: The stop signals from the one that yields to any other to the one that wins over all, when ranks received
#: different ones (``_to_all_reduce``) and when one rank received several (``SaveAndStopOnSignal._on_signal``).
#: Ctrl+C is the user's stop, and stays one (exit 130, no requeue asked) through a Slurm signal another rank got or
#: this one got after it. SIGTERM (``scancel``, preemption: requeued only when the job's record says preempted) wins
#: over SIGUSR1 (the time limit's warning: always requeued), so that a warning that came with a cancel, on this rank
#: or another, does not bring the job back.
_PRECEDENCE = (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)


def _to_all_reduce(signum: int | None) -> int:
    """``signum`` as the number the ranks all-reduce with MAX: its place in ``_PRECEDENCE`` above the signal number
    (which it carries in its low byte); 0 for none. A signal outside ``_PRECEDENCE`` yields to those in it. A
    signal's own number would order them by numbering: SIGTERM (15) and SIGUSR1 (10) over Ctrl+C (2)."""
    if not signum:
        return 0
    place = _PRECEDENCE.index(signum) + 1 if signum in _PRECEDENCE else 0
    return place * 256 + int(signum)


def _from_all_reduced(value: int) -> int:
    """The signal number ``_to_all_reduce`` made ``value`` of (0 for none)."""
    return value % 256


def _collective_tensor(value: int):
    """``value`` as a one-element tensor on the device the process group's collectives run on; None when there is
    no group of more than one rank to run them in."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return None
    nccl = dist.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if nccl else torch.device("cpu")
    return torch.tensor([value], device=device)


def requeue_slurm_job(callback: SaveAndStopOnSignal) -> bool:
    """After a signal-triggered stop, put the Slurm job back in the queue (``scontrol requeue $SLURM_JOB_ID``).

    Runs on global rank 0 only (every rank learns the signal through the callback's all-reduce). SIGUSR1 always
    requeues; SIGTERM requeues only a job Slurm is preempting (see the module docstring), never a cancelled one.
    Does nothing outside Slurm, on other ranks (they take this one's answer, ``requeue_with_every_rank``, exit 0
    and leave the job's status to this one: ``stop_exit_code``), or when training was not stopped by a signal. The
    recipe calls it with the stopper's handlers still installed, so that a second signal cannot kill rank 0 before
    ``scontrol requeue`` returns.

    Returns:
        True when the job is requeued: by this call, or by Slurm itself (``scontrol requeue``, preemption). False,
        without asking ``scontrol`` anything, for a run Ctrl+C stopped: the ranks ask for no requeue of the user's
        stop, and a requeue Slurm makes of it all the same (an admin's ``scontrol requeue`` at that moment) is
        Slurm's, the run ending as interrupted (exit 130).
    """
    job_id = os.environ.get("SLURM_JOB_ID")
    if callback.received not in (signal.SIGUSR1, signal.SIGTERM) or not job_id or os.environ.get("RANK", "0") != "0":
        return False
    rerun = "the rerun resumes from the checkpoint just saved"
    if callback.received == signal.SIGTERM:
        return slurm_requeue.requeue_if_preempted(
            job_id, int(os.environ.get("SLURM_RESTART_COUNT") or 0), rerun,
            not_requeued="resubmit with the same output folder to resume from the checkpoint just saved",
            show_timeout_s=SCONTROL_SHOW_JOB_TIMEOUT_S, requeue_timeout_s=SCONTROL_REQUEUE_TIMEOUT_S, log=logger)
    return slurm_requeue.requeue_job(job_id, signal.Signals(callback.received).name, rerun,
                                     SCONTROL_REQUEUE_TIMEOUT_S, logger)


def requeue_with_every_rank(callback: SaveAndStopOnSignal) -> bool:
    """``requeue_slurm_job`` on global rank 0, then its answer broadcast to every rank; call it on every rank.

    No rank returns before rank 0's ``scontrol`` calls have: under preemption torchrun exits 1 after a SIGTERM even
    when all its ranks exit 0 (``launch_agent`` re-raises the agent's ``SignalException`` once its workers are done:
    torch/distributed/launcher/api.py), so on a node without rank 0 a rank that returned at once let its torchrun
    exit 1 and ``srun --kill-on-bad-exit`` end the step while rank 0 was still in ``scontrol show job`` or
    ``scontrol requeue``: the job never came back. Every rank's ``RunResult.requeued`` then is rank 0's. Called with
    the stopper's handlers installed: the SIGTERM a successful requeue sends every rank of the step while they wait
    here only sets the flag.

    Returns:
        Rank 0's answer: True when the job is requeued.
    """
    import torch.distributed as dist

    try:
        requeued = requeue_slurm_job(callback)
    except Exception:
        # Rank 0 failed before its answer (scontrol's output not text, a malformed SLURM_RESTART_COUNT): the other
        # ranks, waiting in the broadcast, are told "not requeued" and end, instead of waiting out ddp_timeout.
        tensor = _collective_tensor(0)
        if tensor is not None:
            dist.broadcast(tensor, src=0)
        raise
    tensor = _collective_tensor(int(requeued))
    if tensor is not None:
        dist.broadcast(tensor, src=0)
        requeued = bool(tensor.item())
    return requeued


def abandon_with_every_rank(abandoned: ExportAbandoned | None, result) -> None:
    """After rank 0's export, on every rank: whether rank 0 gave it up (``abandoned``, None on the other ranks and
    when the export is in place), broadcast with its signal and whether the job was requeued.

    Rank 0 raises its ``abandoned`` again; every other rank takes the signal and the requeue into its ``result``
    (``export_dir`` cleared) and raises ``ExportAbandoned`` with its own ``stop_exit_code``: 130 on every rank for
    Ctrl+C, 0 under Slurm, as after a stop during training. Before, the other ranks waited for rank 0 in a barrier
    it never reached.

    Raises:
        ExportAbandoned: on every rank, when rank 0 gave its export up.
    """
    import torch.distributed as dist

    signum = int(result.stopped_by_signal or 0) if abandoned is not None else 0
    requeued = bool(result.requeued) if abandoned is not None else False
    tensor = _collective_tensor(2 * signum + int(requeued))
    if tensor is not None:
        dist.broadcast(tensor, src=0)
        signum, requeued = divmod(int(tensor.item()), 2)
    if abandoned is not None:
        raise abandoned
    if signum:
        result.export_dir = None
        result.export_report = None
        result.stopped_by_signal = signum
        result.requeued = bool(requeued)
        raise ExportAbandoned(stop_exit_code(result))


class RequeueDuringExport:
    """Rank 0's watch over the export (a context manager): a stop signal requeues the job at once, and gives the
    export up at its next step (``abandon_if_signalled``).

    The export's steps are long (a 32B merge, save or reload takes minutes, longer than Slurm's warning may leave),
    so the requeue does not wait for the end of one: a thread waits on an event the stopper's handler sets
    (``SaveAndStopOnSignal.wake_on_signal``) and runs ``requeue_slurm_job`` as soon as it is set (the handler runs
    when the main thread next runs Python, between tensors of a save or load). A successful requeue ends the job's
    steps; rank 0 keeps the handlers, so the SIGTERM that follows only sets the flag again. The job is requeued
    once, by the thread or by the main thread.
    """

    def __init__(self, stopper: SaveAndStopOnSignal | None):
        self.stopper = stopper
        self._lock = threading.Lock()
        self._requeued: bool | None = None
        self._wake = threading.Event()  # set by the stopper's handler, or by __exit__ to end the thread
        self._done = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RequeueDuringExport:
        if self.stopper is not None:
            self.stopper.exporting = True
            self.stopper.wake_on_signal(self._wake)
            self._thread = threading.Thread(target=self._watch, name="requeue-during-export", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._done = True
        if self._thread is not None:
            # forgotten first: the handler must not set the event while this thread holds its lock (set below)
            self.stopper.forget_wake(self._wake)
            self._wake.set()
            self._thread.join()

    def _watch(self) -> None:
        self._wake.wait()
        if self.stopper.received and not self._done:
            self.requeue()

    def requeue(self) -> bool:
        """``requeue_slurm_job`` once, whichever thread asks first; its answer."""
        with self._lock:
            if self._requeued is None:
                self._requeued = requeue_slurm_job(self.stopper)
            return self._requeued

    def abandon_if_signalled(self, result) -> None:
        """Between the export's steps: when a stop signal has come, give the export up (requeueing the job if the
        watch has not yet).

        Args:
            result: the run's ``RunResult``; ``stopped_by_signal`` and ``requeued`` are filled in, ``export_dir``
                cleared.

        Raises:
            ExportAbandoned: when a signal came.
        """
        if self.stopper is None or not self.stopper.received:
            return
        logger.warning("received %s during the export: it is given up before it replaced the earlier export; resume "
                       "with --resume to export again from the final checkpoint (a requeued job does)",
                       signal.Signals(self.stopper.received).name)
        result.export_dir = None
        result.export_report = None
        result.stopped_by_signal = self.stopper.received
        result.requeued = self.requeue()
        raise ExportAbandoned(stop_exit_code(result))

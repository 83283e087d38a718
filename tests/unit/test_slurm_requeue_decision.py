"""Which signal-stopped runs put their Slurm job back in the queue (train/preemption.py), against a fake scontrol.

The real daemons show the same cases end to end (tests/integration/slurm/test_slurm_jobs.py); this pins the decision table, including
the scancel case those tests do not run (a cancelled job must stay cancelled).
"""

from __future__ import annotations

import json
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
    # a Restarts field str.isdigit() takes that int() refuses: no count read, the state decides
    ("a restart count in other digits", signal.SIGTERM, "JobState=CANCELLED Restarts=² PreemptTime=None", None, False,
     False),
    # Ctrl+C won over the SIGTERM of an admin's requeue or of a preemption: the ranks ask nothing (Slurm's own requeue
    # is Slurm's, and brings the job back all the same)
    ("Ctrl+C during scontrol requeue", signal.SIGINT, "JobState=COMPLETING Restarts=1 PreemptTime=None", None, False,
     False),
    ("Ctrl+C while preempted", signal.SIGINT, "JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28", None,
     False, False),
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


def test_ctrl_c_asks_scontrol_nothing_whatever_the_job_record_says(tmp_path, monkeypatch, preemption):
    """A run Ctrl+C stopped (it wins over Slurm's signals on every rank) never runs scontrol, not even to read the
    job's record: the user's stop asks for no requeue, and one Slurm makes itself is not the ranks' to repeat."""
    calls = _fake_scontrol(tmp_path, monkeypatch, "JobState=RUNNING Restarts=0 PreemptTime=2026-11-23T18:12:28")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("RANK", "0")
    stopper = preemption.SaveAndStopOnSignal()
    stopper.received = signal.SIGINT
    assert preemption.requeue_slurm_job(stopper) is False
    assert not calls.exists()


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


def test_a_signal_stop_keeps_its_checkpoint_with_save_total_limit_1_and_a_validation_set(tmp_path, monkeypatch):
    """save_total_limit 1 with best-checkpoint tracking (what train.training_arguments sets whenever there is a
    validation set): at the end of train() transformers deletes every checkpoint but the best one. A signal during
    step 5 saves checkpoint-5, never evaluated (evaluations at 2 and 4; learning rate 0, so the first stays best):
    without the recipe's callback checkpoint-5 went and the requeued job resumed from checkpoint-2."""
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from tests.support.tiny_regressor import prepared_run, regressor, regressor_rows

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)  # no requeue: only the checkpoints are under test
    monkeypatch.delenv("RANK", raising=False)
    rows = regressor_rows(16)
    run = prepared_run(tmp_path)

    class SignalDuringStep5(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 4:
                run.stopper.received = signal.SIGUSR1  # what the handler records

    args = TrainingArguments(str(tmp_path), per_device_train_batch_size=2, max_steps=20, learning_rate=0.0,
                             save_strategy="steps", save_steps=2, eval_strategy="steps", eval_steps=2,
                             metric_for_best_model="eval_loss", greater_is_better=False, load_best_model_at_end=False,
                             save_total_limit=1, use_cpu=True, report_to=[], disable_tqdm=True)  # fmt: skip
    trainer = Trainer(model=regressor(), args=args, train_dataset=rows, eval_dataset=rows[:4],
                      callbacks=[SignalDuringStep5(), run.stopper])  # fmt: skip
    result = run.train(trainer)
    assert (run.stopper.stopped_at_step, result.global_step) == (5, 5)
    # The stop checkpoint, complete, and the best one its state names (rotation keeps the best and the newest).
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-5"]
    state = json.loads((tmp_path / "checkpoint-5" / "trainer_state.json").read_text())
    assert (state["global_step"], state["best_model_checkpoint"]) == (5, str(tmp_path / "checkpoint-2"))


def test_a_sigusr1_during_the_export_requeues_and_leaves_the_earlier_export(tmp_path, monkeypatch, preemption):
    """slurm/train.sbatch starts torchrun under `trap "" USR1`, so the disposition a rank inherits is "ignore". The
    stopper's handlers stay installed after trainer.train() returns, until the export is done: uninstalled there,
    Slurm's pre-timeout SIGUSR1 arriving during the export (merge, save, reload and check, card) would be dropped,
    and the job would run into its time limit with its export folder deleted and half-written. A signal during it
    requeues the job at once, while the export's step still runs, and gives the export up at the end of that step,
    before it replaces the earlier one (exit 0): the rerun resumes from the final checkpoint and exports again."""
    import os
    import threading
    from types import SimpleNamespace

    import torch

    from train import export
    from train.recipe_steps import PreparedRun

    calls = _fake_scontrol(tmp_path, monkeypatch, "JobState=RUNNING Restarts=0 PreemptTime=None")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    folder = tmp_path / "run"
    (folder / "export").mkdir(parents=True)
    (folder / "export" / "model.safetensors").write_text("the earlier judge", encoding="utf-8")
    (folder / "run.json").write_text("{}", encoding="utf-8")
    run = PreparedRun(config=SimpleNamespace(overwrite_output_dir=False, resume=True, output_dir=str(folder),
                                             recipe="seq2seq"),
                      launch=None, resume_from=None, base_model="base", tokenizer=None, dtype=None,
                      stopper=preemption.SaveAndStopOnSignal())  # fmt: skip

    class Trainer:
        """Trains to the end at once; what the export asks of a trainer on rank 0 of one."""

        args = SimpleNamespace(output_dir=str(folder))
        state = SimpleNamespace(global_step=12, log_history=[])
        lr_scheduler = SimpleNamespace(get_last_lr=lambda: [0.0])
        accelerator = SimpleNamespace(wait_for_everyone=lambda: None)
        model = None

        def __init__(self):
            self.callback_handler = SimpleNamespace(callbacks=[run.stopper])

        def add_callback(self, callback):
            self.callback_handler.callbacks.append(callback)

        def train(self, resume_from_checkpoint=None):
            pass

        def save_model(self, folder):
            os.makedirs(folder, exist_ok=True)

        def is_world_process_zero(self):
            return True

    requeued_during_the_save = []
    requeued = threading.Event()
    requeue = preemption.requeue_slurm_job

    def requeue_and_say_so(stopper):  # the real requeue (the fake scontrol), then the event the save waits on
        try:
            return requeue(stopper)
        finally:
            requeued.set()

    monkeypatch.setattr(preemption, "requeue_slurm_job", requeue_and_say_so)

    def writes_half_and_is_signalled(model, tokenizer, out_dir, **kwargs):
        out = export._fresh(out_dir)
        (out / "model-00001-of-00002.safetensors").write_text("half", encoding="utf-8")
        os.kill(os.getpid(), signal.SIGUSR1)  # Slurm's --signal=USR1@N, in the middle of the save
        # A 32B save takes minutes, longer than the warning may leave: the job is requeued while it still runs. The
        # save goes on only once the watch's requeue has returned (or after 30 s, and the assertions below fail).
        requeued.wait(30)
        requeued_during_the_save.extend(calls.read_text().splitlines() if calls.exists() else [])
        return out

    def never(*args, **kwargs):
        raise AssertionError("the export went on after the signal")

    monkeypatch.setattr(export, "probe_batch", lambda tokenizer, texts: {})
    monkeypatch.setattr(export, "live_outputs", lambda model, batch: {})
    monkeypatch.setattr(export, "load_trained", lambda *args, **kwargs: "the trained model")
    monkeypatch.setattr(export, "export_seq2seq", writes_half_and_is_signalled)
    monkeypatch.setattr(export, "verify_export", never)
    inherited = signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # what `trap "" USR1` leaves the ranks
    try:
        trainer = Trainer()
        result = run.train(trainer)
        assert not run.stopped and result.stopped_by_signal is None
        with pytest.raises(preemption.ExportAbandoned) as ended:
            export.export_after_training(trainer, stopper=run.stopper, result=result, mode="seq2seq", model_cls=None,
                                         tokenizer=None,
                                         probe_texts=[], base_model="base", dtype=torch.float32,
                                         export_dir=folder / "export")  # fmt: skip
        assert signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN  # uninstalled once the export is over
    finally:
        signal.signal(signal.SIGUSR1, inherited)
    assert ended.value.code == 0  # requeued: the job's status is the rerun's
    assert requeued_during_the_save == ["requeue 7"]
    assert calls.read_text().splitlines() == ["requeue 7"]  # once: the watch's requeue is not repeated
    assert (result.requeued, result.stopped_by_signal, result.export_dir) == (True, signal.SIGUSR1, None)
    # The earlier judge stays in place; the half-written one is not in export/ (nor anywhere judge-serve looks).
    assert [p.name for p in (folder / "export").iterdir()] == ["model.safetensors"]
    assert (folder / "export" / "model.safetensors").read_text(encoding="utf-8") == "the earlier judge"
    assert (folder / "run.json").read_text(encoding="utf-8") == "{}"


def test_the_command_line_names_what_stopped_the_job_and_what_to_do_instead(tmp_path, monkeypatch, capsys):
    """eval.sbatch and rank.sbatch ask through ``python3 -m judge.plumbing.slurm_requeue`` also after a judge-eval
    that failed without a SIGTERM: --why names that in the line, --not-requeued says how to rerun the task, and a
    job not preempted exits NOT_REQUEUED (10), which the scripts tell from a module that could not run."""
    from judge.plumbing import slurm_requeue

    calls = _fake_scontrol(tmp_path, monkeypatch, "JobState=RUNNING Restarts=0 PreemptTime=None")
    code = slurm_requeue.main(["--job-id", "7", "--name", "eval.sbatch", "--why", "judge-eval run exiting 1",
                               "--not-requeued", "`scontrol requeue 7_0` reruns the task"])  # fmt: skip
    assert code == slurm_requeue.NOT_REQUEUED == 10
    assert capsys.readouterr().err == ("eval.sbatch: Slurm job 7 ended by judge-eval run exiting 1 (state RUNNING, "
                                       "not preempted): not requeued; `scontrol requeue 7_0` reruns the task\n")
    assert calls.read_text().splitlines() == ["show job -o 7"]

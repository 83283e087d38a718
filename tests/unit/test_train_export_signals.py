"""A stop signal during a judge's export: who watches for it, and how soon the job is requeued
(``train.export.export_after_training``, ``train.preemption.RequeueDuringExport``)."""

from __future__ import annotations

import os
import signal
import threading
from types import SimpleNamespace

import pytest


class _Trainer:
    """What the export asks of a trainer on rank 0 of one; no callbacks: the stopper is the one the export is given."""

    def __init__(self, output_dir):
        self.args = SimpleNamespace(output_dir=str(output_dir))
        self.accelerator = SimpleNamespace(wait_for_everyone=lambda: None)
        self.callback_handler = SimpleNamespace(callbacks=[])
        self.model = None

    def save_model(self, folder):
        os.makedirs(folder, exist_ok=True)

    def is_world_process_zero(self):
        return True


def test_a_signal_during_the_export_requeues_at_once_through_the_stopper_passed_in(tmp_path, monkeypatch):
    """The handler wakes the watch's thread, which the export is given the stopper for (not one found among the
    trainer's callbacks, nor a flag looked at once a second): the requeue is done while the export's step still
    runs, well within a second (the save below waits for it, half a second at most)."""
    import torch

    from train import export, preemption
    from train.provenance import RunResult

    requeued = threading.Event()

    def requeue(stopper):
        requeued.set()
        return True

    seen_during_the_save = []

    def save_and_be_signalled(model, tokenizer, out_dir, **kwargs):
        os.kill(os.getpid(), signal.SIGUSR1)  # the handler runs here, on the main thread; the watch's thread wakes
        seen_during_the_save.append(requeued.wait(30))  # True as soon as the watch requeued: 30 s bounds a failing test
        return export._fresh(out_dir)

    monkeypatch.setattr(preemption, "requeue_slurm_job", requeue)
    monkeypatch.setattr(export, "probe_batch", lambda tokenizer, texts: {})
    monkeypatch.setattr(export, "live_outputs", lambda model, batch: {})
    monkeypatch.setattr(export, "load_trained", lambda *args, **kwargs: "the trained model")
    monkeypatch.setattr(export, "export_seq2seq", save_and_be_signalled)
    (tmp_path / "run.json").write_text("{}", encoding="utf-8")
    stopper = preemption.SaveAndStopOnSignal()
    before = signal.getsignal(signal.SIGUSR1)
    stopper.install()  # what PreparedRun.train leaves installed for the export
    try:
        result = RunResult(output_dir=str(tmp_path), export_dir=None, global_step=12, final_learning_rate=0.0)
        with pytest.raises(preemption.ExportAbandoned) as ended:
            export.export_after_training(_Trainer(tmp_path), stopper=stopper, result=result, mode="seq2seq",
                                         model_cls=None, tokenizer=None, probe_texts=[], base_model="base",
                                         dtype=torch.float32, export_dir=tmp_path / "export")  # fmt: skip
        assert signal.getsignal(signal.SIGUSR1) == before  # the export uninstalled the handlers it was given
    finally:
        stopper.uninstall()
        signal.signal(signal.SIGUSR1, before)
    assert seen_during_the_save == [True]
    assert (ended.value.code, result.requeued, result.stopped_by_signal) == (0, True, signal.SIGUSR1)
    assert not (tmp_path / "export").exists()
    assert not (tmp_path / ".export.staging").exists()  # the abandoned export's folder, removed


def test_a_signal_before_the_watch_starts_requeues_at_once(monkeypatch):
    from train import preemption

    requeued = threading.Event()
    monkeypatch.setattr(preemption, "requeue_slurm_job", lambda stopper: requeued.set() or True)
    stopper = preemption.SaveAndStopOnSignal()
    stopper._on_signal(signal.SIGUSR1, None)  # what the handler does
    with preemption.RequeueDuringExport(stopper) as watch:
        assert requeued.wait(30)  # at once; 30 s bounds a failing test on a loaded machine
    assert watch.requeue() is True and stopper._wakes == []  # once; and the stopper forgets the watch's event


@pytest.mark.parametrize("recipe, export_under_stopper", [("classifier", True), ("seq2seq", False)])
def test_the_recipes_flag_not_its_name_keeps_the_handlers_for_the_export(tmp_path, recipe, export_under_stopper):
    """Whether the handlers stay installed once training ends is what the recipe says of its export."""
    from train import preemption
    from train.recipe_steps import PreparedRun

    class Trainer:
        state = SimpleNamespace(global_step=3, log_history=[])
        lr_scheduler = SimpleNamespace(get_last_lr=lambda: [0.0])

        def add_callback(self, callback):
            pass

        def train(self, resume_from_checkpoint=None):
            pass

    stopper = preemption.SaveAndStopOnSignal()
    run = PreparedRun(config=SimpleNamespace(overwrite_output_dir=False, resume=True, output_dir=str(tmp_path),
                                             recipe=recipe),
                      launch=None, resume_from=None, base_model="base", tokenizer=None, dtype=None, stopper=stopper,
                      export_under_stopper=export_under_stopper)  # fmt: skip
    before = signal.getsignal(signal.SIGUSR1)
    try:
        run.train(Trainer())
        assert (signal.getsignal(signal.SIGUSR1) == stopper._on_signal) is export_under_stopper
    finally:
        stopper.uninstall()
        signal.signal(signal.SIGUSR1, before)


def test_a_second_signal_while_the_first_sets_the_events_does_not_deadlock():
    """The handler may run again inside itself (SIGUSR1, then SIGTERM at once) while an event's set() holds that
    event's lock; setting it again there would wait forever. Run on a thread, so that a deadlock fails the test."""
    from train import preemption

    stopper = preemption.SaveAndStopOnSignal()

    class Wake(threading.Event):
        """An event whose set() holds a lock, as Event.set holds its condition's, and meets a second signal there."""

        def __init__(self):
            super().__init__()
            self.lock, self.second_signal_sent = threading.Lock(), False

        def set(self):
            with self.lock:
                if not self.second_signal_sent:
                    self.second_signal_sent = True
                    stopper._on_signal(signal.SIGTERM, None)
                super().set()

    wake = Wake()
    stopper.wake_on_signal(wake)
    worker = threading.Thread(target=stopper._on_signal, args=(signal.SIGUSR1, None), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and wake.is_set() and stopper.received == signal.SIGTERM

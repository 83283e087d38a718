"""A SIGUSR1 while a run is being built, before the trainer's stopper is installed (``train.signal_latch``): under
slurm/train.sbatch the processes inherit "ignore" for it, and it was dropped; the job then ran into its time limit
and was not requeued."""

from __future__ import annotations

import os
import signal
import types

import pytest


@pytest.fixture
def usr1_ignored():
    """SIGUSR1 ignored, as slurm/train.sbatch's ``trap "" USR1`` leaves it for the processes it starts."""
    before = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    yield
    signal.signal(signal.SIGUSR1, before)


def test_a_sigusr1_while_the_run_is_built_stops_it_after_its_first_step_with_a_checkpoint(tmp_path, monkeypatch,
                                                                                         usr1_ignored):
    """The signal comes before the Trainer exists; training then stops at the end of step 1 of 6 and saves
    checkpoint-1 (what a signal during training does), and the stopper's uninstall puts back "ignore", not the
    latch."""
    from transformers import Trainer, TrainingArguments

    from tests.support.tiny_regressor import prepared_run, regressor, regressor_rows
    from train import signal_latch

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with signal_latch.latched():
        os.kill(os.getpid(), signal.SIGUSR1)  # the data, arguments and model are still being built
        run = prepared_run(tmp_path, export_under_stopper=False)
        args = TrainingArguments(str(tmp_path), per_device_train_batch_size=2, max_steps=6, learning_rate=0.0,
                                 save_strategy="steps", save_steps=100, use_cpu=True, report_to=[],
                                 disable_tqdm=True)  # fmt: skip
        trainer = Trainer(model=regressor(), args=args, train_dataset=regressor_rows(8), callbacks=[run.stopper])
        result = run.train(trainer)
        assert signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN
    assert (result.global_step, run.stopper.stopped_at_step, result.stopped_by_signal) == (1, 1, signal.SIGUSR1)
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-1"]


def test_without_a_signal_the_latch_changes_nothing_and_a_signal_is_taken_once(usr1_ignored):
    from train import preemption, signal_latch

    with signal_latch.latched():
        os.kill(os.getpid(), signal.SIGUSR1)
        assert signal_latch.take() == signal.SIGUSR1 and signal_latch.take() is None
        quiet = preemption.SaveAndStopOnSignal()  # installed after the signal was taken: nothing received
        quiet.install()
        quiet.uninstall()
        assert quiet.received is None
        assert signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN  # the inherited disposition, not the latch
    os.kill(os.getpid(), signal.SIGUSR1)  # after the block: ignored again, as inherited (else the process would end)
    assert signal_latch.take() is None


def test_judge_train_run_latches_from_its_start(tmp_path, monkeypatch, usr1_ignored):
    """`judge-train run` holds the latch from before its config is read to the recipe's end: a SIGUSR1 sent while
    the data is checked reaches the stopper the recipe installs."""
    from train import cli, preemption

    seen = {}

    def check_data(config, **settings):
        os.kill(os.getpid(), signal.SIGUSR1)

    def recipe(config):
        stopper = preemption.SaveAndStopOnSignal()
        stopper.install()
        stopper.uninstall()
        seen["received"] = stopper.received
        return types.SimpleNamespace(export_dir=str(tmp_path / "export"))

    module = types.ModuleType("fake_recipe")
    module.main = recipe
    monkeypatch.setitem(__import__("sys").modules, "fake_recipe", module)
    monkeypatch.setitem(cli.RECIPE_ENTRIES, "seq2seq", ("fake_recipe", "main", "judge"))
    monkeypatch.setattr(cli, "check_training_data", check_data)
    monkeypatch.setattr("train.training_arguments.check_training_arguments", lambda config: None)
    monkeypatch.delenv("RANK", raising=False)
    assert cli.run(["--config", "configs/train/tiny/seq2seq.yaml", "--output-dir", str(tmp_path / "run")]) == 0
    assert seen == {"received": signal.SIGUSR1}
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN

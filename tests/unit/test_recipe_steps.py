"""train.recipe_steps: when an --overwrite-output-dir run deletes its predecessor, and what ``prepare`` refuses before
the base model loads."""

from __future__ import annotations

import json

import pytest

from train.config import ConfigError, RegressionConfig
from train.preemption import SaveAndStopOnSignal
from train.recipe_steps import PreparedRun
from train.training_arguments import Launch


class _Trainer:
    """What ``PreparedRun.train`` drives of a transformers Trainer: its callbacks, ``train`` and the state read
    after it. ``train`` fails with ``fails_before_begin`` where transformers builds the optimizer (before
    ``on_train_begin``), else calls every callback's ``on_train_begin`` as ``_inner_training_loop`` does, then
    returns, as a run of zero steps."""

    def __init__(self, fails_before_begin: BaseException | None = None, *, warmup_steps: int = 0, max_steps: int = 6):
        from types import SimpleNamespace

        from transformers import TrainerControl, TrainerState

        self.callbacks, self.fails_before_begin = [], fails_before_begin
        self.args = SimpleNamespace(warmup_steps=warmup_steps)  # what the callbacks read of TrainingArguments
        self.state, self.control = TrainerState(max_steps=max_steps), TrainerControl()
        self.lr_scheduler = type("Schedule", (), {"get_last_lr": staticmethod(lambda: [0.0])})()

    def add_callback(self, callback):
        self.callbacks.append(callback)

    def train(self, resume_from_checkpoint=None):
        if self.fails_before_begin is not None:
            raise self.fails_before_begin
        for callback in self.callbacks:
            callback.on_train_begin(self.args, self.state, self.control)


def _earlier_run(folder):
    (folder / "checkpoint-5").mkdir(parents=True)
    (folder / "checkpoint-5" / "trainer_state.json").write_text("{}", encoding="utf-8")
    (folder / "export").mkdir()
    (folder / "export" / "config.json").write_text("{}", encoding="utf-8")


def _overwrite_run(folder):
    config = RegressionConfig(output_dir=str(folder), overwrite_output_dir=True)
    return PreparedRun(config=config, launch=Launch(1, 1, 256, 256), resume_from=None, base_model="unused",
                       tokenizer=None, dtype=None, stopper=SaveAndStopOnSignal(), export_under_stopper=False)


def test_an_overwrite_keeps_the_earlier_run_when_train_refuses_before_training_begins(tmp_path, monkeypatch):
    """transformers builds the optimizer inside trainer.train() (an optim whose package is missing raises
    there), compares a DeepSpeed JSON with the arguments there and logs W&B in at on_train_begin: a refusal there
    leaves the earlier run's checkpoint and export in place, and run.json's earlier_run_deleted false."""
    monkeypatch.delenv("RANK", raising=False)
    folder = tmp_path / "run"
    _earlier_run(folder)
    run = _overwrite_run(folder)
    run.record_data({"n_rows": 3})
    refusal = ImportError("You need to install `bitsandbytes` in order to use 8-bit optimizers")
    with pytest.raises(ImportError, match="bitsandbytes"):
        run.train(_Trainer(fails_before_begin=refusal))
    assert (folder / "checkpoint-5" / "trainer_state.json").is_file() and (folder / "export" / "config.json").is_file()
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["launch"]["earlier_run_deleted"] is False


def test_an_overwrite_deletes_the_earlier_run_once_training_begins(tmp_path, monkeypatch):
    """Once on_train_begin fires (the optimizer and schedule built), the earlier run goes, and run.json says so."""
    monkeypatch.delenv("RANK", raising=False)
    folder = tmp_path / "run"
    _earlier_run(folder)
    run = _overwrite_run(folder)
    run.record_data({"n_rows": 3})
    trainer = _Trainer()
    run.train(trainer)
    assert not (folder / "checkpoint-5").exists() and not (folder / "export").exists()
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["launch"]["earlier_run_deleted"] is True


def test_the_earlier_run_goes_after_the_reporting_callbacks_have_set_up(tmp_path, monkeypatch):
    """The deleting callback comes after the trainer's own (W&B's login is WandbCallback.on_train_begin): a
    reporting callback that fails at on_train_begin leaves the earlier run in place."""
    from transformers import TrainerCallback

    class FailingLogin(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            raise RuntimeError("No API key configured")

    monkeypatch.delenv("RANK", raising=False)
    folder = tmp_path / "run"
    _earlier_run(folder)
    trainer = _Trainer()
    trainer.add_callback(FailingLogin())  # what Trainer.__init__ installs from report_to, before the recipe's
    with pytest.raises(RuntimeError, match="No API key configured"):
        _overwrite_run(folder).train(trainer)
    assert (folder / "checkpoint-5").is_dir() and (folder / "export").is_dir()


def test_a_warmup_as_long_as_the_epochs_is_refused_before_an_overwrite_deletes_the_earlier_run(tmp_path, monkeypatch):
    """In epoch mode the run's steps are known only inside trainer.train() (state.max_steps at on_train_begin): a
    warmup_steps of 6 in a run of 6 steps raised the rate for the whole run, never reaching learning_rate nor
    decaying to 0, and trained. It is refused there, naming both numbers, before the earlier run is deleted; a
    warmup one step shorter trains."""
    monkeypatch.delenv("RANK", raising=False)
    folder = tmp_path / "run"
    _earlier_run(folder)
    run = _overwrite_run(folder)
    run.record_data({"n_rows": 3})
    with pytest.raises(ConfigError) as refused:
        run.train(_Trainer(warmup_steps=6, max_steps=6))
    assert str(refused.value) == (
        "warmup_steps 6 is not below the run's optimizer steps 6: the learning rate would rise for the whole run, "
        "never reaching learning_rate nor decaying to 0; lower warmup_steps (0: the decay starts at the first step)")
    assert (folder / "checkpoint-5").is_dir() and (folder / "export").is_dir()
    _overwrite_run(folder).train(_Trainer(warmup_steps=5, max_steps=6))
    assert not (folder / "checkpoint-5").exists()


def test_prepare_refuses_a_deepspeed_accumulation_this_launch_does_not_derive(tmp_path, monkeypatch):
    """global_batch_size 8 / per-device 2 on 2 ranks derives accumulation 2; a JSON fixing 4 is refused in prepare,
    before the output folder is checked and the base model built (transformers refused it inside train())."""
    from train.config import load_config
    from train.recipe_steps import prepare

    settings = {"gradient_accumulation_steps": 4, "train_micro_batch_size_per_gpu": "auto"}
    (tmp_path / "ds.json").write_text(json.dumps(settings), encoding="utf-8")
    config = load_config(None, {"output_dir": str(tmp_path / "run"), "deepspeed": str(tmp_path / "ds.json"),
                                "global_batch_size": 8, "per_device_train_batch_size": 2}, recipe="regression")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr("train.recipe_steps.setup_logging", lambda: None)  # the train logger's level stays
    with pytest.raises(ConfigError) as refused:
        prepare(config, "test")
    assert str(refused.value) == (
        f"deepspeed config {tmp_path / 'ds.json'}: gradient_accumulation_steps 4 vs the accumulation derived from "
        "global_batch_size and the ranks 2: transformers refuses a value that differs from the config's only once "
        "training starts; set these to \"auto\" (filled from this config) or to the config's values")
    assert not (tmp_path / "run").exists()


def test_prepare_refuses_wandb_without_a_key_before_the_base_model(tmp_path, monkeypatch):
    """report_to wandb, no WANDB_API_KEY, no .netrc, WANDB_MODE unset: refused in prepare, before the tiny base model
    is built into the run folder; the same with WANDB_MODE=offline goes on."""
    from train.config import load_config
    from train.recipe_steps import prepare

    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    import wandb

    wandb.teardown()  # W&B's process-wide setup keeps what an earlier test in this process set
    monkeypatch.setattr("train.recipe_steps.setup_logging", lambda: None)  # the train logger's level stays
    config = load_config(None, {"output_dir": str(tmp_path / "run"), "report_to": "wandb"}, recipe="regression")
    with pytest.raises(ConfigError, match=r"^report_to wandb: no W&B API key for .* set WANDB_API_KEY, or "
                                          r"WANDB_MODE=offline to log locally, or --report-to none$"):
        prepare(config, "test")
    assert not (tmp_path / "run" / "base-model").exists()
    # "all" logs to W&B too when wandb is installed (it is here): prepare refuses it the same way, where a
    # substring test for "wandb" let it through to W&B's login after the model loaded
    config = load_config(None, {"output_dir": str(tmp_path / "run"), "report_to": "all"}, recipe="regression")
    with pytest.raises(ConfigError, match=r"^report_to all \(wandb is installed, so W&B logs\): no W&B API key"):
        prepare(config, "test")
    assert not (tmp_path / "run" / "base-model").exists()


@pytest.mark.parametrize(("stopped_at_step", "global_step", "forgotten"), [
    (None, 10, True),  # the final step (max_steps 10): the checkpoint a finished run's --resume reads
    (4, 4, True),  # the step a stop signal saved at: the checkpoint the requeued job resumes from
    (None, 5, False),  # an ordinary save mid-run: the best checkpoint stays tracked
    (4, 6, False),  # a save after another step's stop
])  # fmt: skip
def test_keep_last_checkpoint_forgets_the_best_one_only_at_the_last_save(stopped_at_step, global_step, forgotten):
    """The callback is public (train.training_arguments' refusal of load_best_model_at_end rests on it): it forgets
    the best checkpoint at the save a run ends with, so transformers' end-of-training rotation keeps that one."""
    from types import SimpleNamespace

    from transformers import TrainerState

    from train.recipe_steps import keep_last_checkpoint

    state = TrainerState(max_steps=10, global_step=global_step, best_model_checkpoint="out/checkpoint-2")
    keep_last_checkpoint(SimpleNamespace(stopped_at_step=stopped_at_step)).on_save(None, state, None)
    assert state.best_model_checkpoint == (None if forgotten else "out/checkpoint-2")


@pytest.mark.parametrize("level", ["debug", "info", "warning", "error"])
def test_the_recipe_logs_at_the_level_judge_train_was_given(level, monkeypatch):
    """On global rank 0 ``setup_logging`` leaves the ``train`` logger to the root's level, which judge-train's
    ``--log-level`` set: it set INFO there, so ``--log-level warning`` (or error) still printed the recipe's INFO lines
    and ``--log-level debug`` never its DEBUG ones. transformers' own logger is at WARNING, quieter at error."""
    import logging

    import transformers

    from judge.plumbing.console_logging import log_level_number
    from train.recipe_steps import setup_logging

    monkeypatch.delenv("RANK", raising=False)
    root, train_logger = logging.getLogger(), logging.getLogger("train")
    before = root.level, train_logger.level, transformers.utils.logging.get_verbosity()
    try:
        root.setLevel(log_level_number(level))  # what configure_logging(--log-level) sets
        train_logger.setLevel(logging.NOTSET)  # a fresh process's
        setup_logging()
        assert train_logger.getEffectiveLevel() == log_level_number(level)
        assert transformers.utils.logging.get_verbosity() == max(logging.WARNING, log_level_number(level))
        monkeypatch.setenv("RANK", "1")  # the other ranks: warnings only, whatever the level
        setup_logging()
        assert train_logger.getEffectiveLevel() == logging.WARNING
    finally:
        root.setLevel(before[0])
        train_logger.setLevel(before[1])
        transformers.utils.logging.set_verbosity(before[2])

"""A misspelt ``lr_scheduler_type`` or ``optim``: refused naming the key before anything is written, under a launcher
too, and a value TrainingArguments refuses past the config's checks is a ConfigError, not a traceback."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.sample_training_lines import TINY_REGRESSION
from train import recipe_steps
from train.config import ConfigError, load_config


@pytest.mark.parametrize("key, value, enum", [("lr_scheduler_type", "cosine_with_warmup", "SchedulerType"),
                                              ("optim", "adamw", "OptimizerNames")])  # fmt: skip
def test_a_name_transformers_does_not_know_is_refused_naming_the_key_under_a_launcher(monkeypatch, tmp_path, key,
                                                                                       value, enum):
    """Under torchrun (WORLD_SIZE, LOCAL_RANK set) check_training_arguments built nothing: the misspelt name reached
    TrainingArguments after the base model and run.json, a traceback on every rank. Its names are checked there too."""
    from train.training_arguments import check_training_arguments

    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    config = load_config(TINY_REGRESSION, {key: value, "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as refused:
        check_training_arguments(config)
    assert str(refused.value).startswith(f"TrainingArguments refuses this config as set: {key}: {value} is not a "
                                         f"valid {enum} (")  # fmt: skip


def test_judge_train_refuses_a_misspelt_scheduler_in_one_line_before_anything_is_written(monkeypatch, tmp_path, capsys):
    from train.cli import main

    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK", "0")
    assert main(["--config", str(TINY_REGRESSION), "--lr-scheduler-type", "bogus",
                 "--output-dir", str(tmp_path / "run")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "TrainingArguments refuses this config as set: lr_scheduler_type: bogus is not a valid SchedulerType" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_training_arguments_a_value_refused_by_transformers_is_a_config_error(tmp_path):
    """A value past the config's checks (set here after validation) that TrainingArguments refuses: a ConfigError,
    judge-train's one-line exit 2 on each rank, not a traceback."""
    from transformers import TrainingArguments

    from train.training_arguments import launch_arithmetic

    config = load_config(TINY_REGRESSION, {"output_dir": str(tmp_path / "run")})
    config = dataclasses.replace(config, lr_scheduler_type="bogus")  # replace() does not validate
    run = recipe_steps.PreparedRun(config=config, launch=launch_arithmetic(config, world_size=1), resume_from=None,
                                   base_model="unused", tokenizer=None, dtype=None, stopper=None)  # fmt: skip
    with pytest.raises(ConfigError, match="^TrainingArguments refuses this config or the launcher's environment: .*bogus"):
        run.training_arguments(TrainingArguments, has_eval=False)

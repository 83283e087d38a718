"""``trainer_args`` ``fp16``: the recipes set the precision through ``bf16`` alone and hand the trainer
``fp16=False`` (``train.training_arguments.training_kwargs``); the DeepSpeed check compares a JSON's
``fp16.enabled`` with that false. An ``fp16: true`` given through ``trainer_args`` went over it: beside ``bf16``
auto on a GPU, transformers refuses the pair ("At most one of fp16 and bf16") only when the job builds its
arguments, since the load and ``judge-train submit`` check them with bf16 off.

Run: .venv/bin/python -m pytest tests/unit/test_train_trainer_args_fp16.py -q -n 0
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from train.config import ConfigError, load_config
from train.training_arguments import (DERIVED_ONLY, RECIPE_FIXED, RECIPE_SET, check_training_arguments,
                                      launch_arithmetic, training_kwargs)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("recipe", ["seq2seq", "regression", "grpo"])
def test_fp16_in_trainer_args_is_refused_at_load_naming_bf16(recipe):
    """Beside bf16 true the pair can never train; it passed the load and the pre-launch check (which build the
    arguments with bf16 off) and was refused only inside the job."""
    with pytest.raises(ConfigError, match=r"^trainer_args: 'fp16' .*bf16"):
        config = load_config(str(REPO / f"configs/train/tiny/{recipe}.yaml"),
                             {"bf16": "true", "trainer_args": {"fp16": True}})
        check_training_arguments(config)


def test_fp16_false_in_trainer_args_is_what_the_recipe_passes_and_is_taken():
    config = load_config(str(REPO / "configs/train/tiny/seq2seq.yaml"), {"trainer_args": {"fp16": "false"}})
    assert config.trainer_args == {"fp16": False}


@pytest.mark.parametrize("key, value, setting", [
    ("data_seed", 5, "seed"),
    ("eval_strategy", "no", "eval_fraction"),
    ("eval_steps", 10, "save_steps"),
    ("metric_for_best_model", "loss", "eval_fraction"),
    ("greater_is_better", True, "eval_fraction"),
    ("use_cpu", True, "GPU"),
    ("logging_first_step", False, "logging_steps"),
    ("gradient_checkpointing_kwargs", {"use_reentrant": True}, "gradient_checkpointing"),
])  # fmt: skip
def test_a_key_the_recipe_sets_itself_is_refused_naming_the_setting_that_decides_it(key, value, setting):
    """training_kwargs derives these (or fixes them) and then writes trainer_args over them: run.json would record
    the config's seed, validation or checkpoint settings while the trainer followed the given key."""
    with pytest.raises(ConfigError, match=rf"^trainer_args: '{key}' .*{setting}"):
        config = load_config(str(REPO / "configs/train/tiny/seq2seq.yaml"), {"trainer_args": {key: value}})
        check_training_arguments(config)


def test_a_fixed_key_at_the_recipe_s_own_value_is_taken_and_save_strategy_stays_the_user_s():
    """logging_first_step true is what the recipe passes; save_strategy is the user's to set (docs/training.md's
    ``--trainer-args`` example sets it to epoch)."""
    given = {"logging_first_step": "true", "save_strategy": "epoch"}
    config = load_config(str(REPO / "configs/train/tiny/seq2seq.yaml"), {"trainer_args": given})
    check_training_arguments(config)
    assert config.trainer_args == {"logging_first_step": True, "save_strategy": "epoch"}


@pytest.mark.parametrize("has_eval", [True, False])
def test_recipe_set_and_recipe_fixed_follow_what_training_kwargs_sets(has_eval):
    """RECIPE_SET names the keys training_kwargs sets beyond the config's own fields: a key added to its literal and
    not to the table would pass trainer_args and be written over what run.json records. Two stay outside on purpose:
    load_best_model_at_end, refused on its own, and save_strategy, the user's. RECIPE_FIXED's values are the ones
    training_kwargs passes, so the value trainer_args may repeat is the one the trainer gets."""
    config = load_config(str(REPO / "configs/train/tiny/seq2seq.yaml"))
    kwargs = training_kwargs(config, launch_arithmetic(config, 1), has_eval=has_eval)
    own = {field.name for field in dataclasses.fields(config)}
    assert set(kwargs) - own - set(RECIPE_SET) - DERIVED_ONLY == {"load_best_model_at_end", "save_strategy"}
    assert set(RECIPE_SET) <= set(kwargs)
    for key, value in RECIPE_FIXED.items():
        assert kwargs[key] == value, key

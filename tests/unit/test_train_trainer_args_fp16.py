"""``trainer_args`` ``fp16``: the recipes set the precision through ``bf16`` alone and hand the trainer
``fp16=False`` (``train.training_arguments.training_kwargs``); the DeepSpeed check compares a JSON's
``fp16.enabled`` with that false. An ``fp16: true`` given through ``trainer_args`` went over it: beside ``bf16``
auto on a GPU, transformers refuses the pair ("At most one of fp16 and bf16") only when the job builds its
arguments, since the load and ``judge-train submit`` check them with bf16 off.

Run: .venv/bin/python -m pytest tests/unit/test_train_trainer_args_fp16.py -q -n 0
"""

from __future__ import annotations

from pathlib import Path

import pytest

from train.config import ConfigError, load_config
from train.training_arguments import check_training_arguments

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

"""docs/slurm.md quotes the line the recipe logs for its batch arithmetic; the quote is the one
``train.training_arguments.Launch.describe`` writes for the same numbers, so a reader can search the job's log for it.

Run: .venv/bin/python -m pytest tests/unit/test_docs_launch_log_line.py -q -n 0
"""

from __future__ import annotations

import re
from pathlib import Path

from train.training_arguments import Launch

REPO = Path(__file__).resolve().parents[2]


def test_the_quoted_log_line_is_the_one_the_recipe_writes():
    text = " ".join((REPO / "docs" / "slurm.md").read_text(encoding="utf-8").split())
    quoted = re.findall(r"logs it \(`(global batch [^`]+)`\)", text)
    assert quoted == [Launch(world_size=64, per_device_train_batch_size=4, gradient_accumulation_steps=1,
                             global_batch_size=256).describe()]

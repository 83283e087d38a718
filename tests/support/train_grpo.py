"""What tests/unit/test_train_grpo.py and tests/integration/training/test_train_grpo.py share."""

from __future__ import annotations

from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
TINY_GRPO = REPO / "configs" / "train" / "tiny" / "grpo.yaml"


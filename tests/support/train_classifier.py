"""What tests/unit/test_train_classifier.py and tests/integration/training/test_train_classifier.py share."""

from __future__ import annotations

from pathlib import Path


TINY_YAML = Path(__file__).resolve().parents[2] / "configs" / "train" / "tiny" / "classifier.yaml"


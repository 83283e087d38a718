"""What tests/unit/test_model_card.py and tests/integration/training/test_model_card.py share."""

from __future__ import annotations


import yaml


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


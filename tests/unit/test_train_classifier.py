"""judge-train classifier: the head recipe learns on the tiny Qwen2, exports in the contract's vocabulary, and
vLLM's pooling runner serves the export with transformers' probabilities.

The tests of this subject that start heavy components are in tests/integration/training/test_train_classifier.py.
"""

from __future__ import annotations

import json

import pytest

from train.config import ConfigError, load_config
from tests.support.train_classifier import TINY_YAML


def test_classifier_config_refuses_lora_and_bad_zero_shot():
    """The classifier recipe trains all weights and knows the three Zero-Shot policies."""
    with pytest.raises(ConfigError, match="lora"):
        load_config(TINY_YAML, {"lora": "true"})
    with pytest.raises(ConfigError, match="zero_shot"):
        load_config(TINY_YAML, {"zero_shot": "keep"})


def test_classifier_rows_refuse_heldout_instructions(tmp_path):
    """Training data that contains a bundled held-out instruction is refused, naming the count."""
    from judge.criteria_auto import heldout_path
    from train.classifier import classifier_rows

    row = json.loads(heldout_path().read_text(encoding="utf-8").splitlines()[0])
    path = tmp_path / "leak.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    config = load_config(TINY_YAML, {"data": str(path)})
    with pytest.raises(ConfigError, match="1 training instructions are in the bundled held-out set"):
        classifier_rows(config)

"""GRPO settings trl's GRPOTrainer refuses only in its ``__init__`` are refused when the config loads.

trl 1.16 (trl/trainer/grpo_trainer.py, ``GRPOTrainer.__init__``) refuses ``sync_ref_model`` with ``beta`` 0 (no
reference model is made, nothing to synchronise) and under LoRA (``NotImplementedError``), and a LoRA adapter on
``lm_head`` (its log-probabilities read ``lm_head.weight`` directly, so the adapter would never train). It does so
after judge-train has claimed the run folder, written run.json, copied the base and loaded the model.

Run: .venv/bin/python -m pytest tests/unit/test_grpo_trainer_refusals.py -q -n 0
"""

from __future__ import annotations

import pytest

from train.config import ConfigError, load_config
from tests.support.train_grpo import TINY_GRPO


@pytest.mark.parametrize("overrides, says", [
    ({"trainer_args": {"sync_ref_model": True}},
     r"^trainer_args\.sync_ref_model needs beta above 0 .*beta 0\.0"),
    ({"beta": 0.04, "lora": True, "trainer_args": {"sync_ref_model": True}},
     r"^trainer_args\.sync_ref_model is not supported with lora"),
    ({"lora": True, "lora_target_modules": "q_proj, lm_head"},
     r"^lora_target_modules: the grpo recipe cannot train an adapter on lm_head"),
])  # fmt: skip
def test_what_trls_grpo_trainer_refuses_at_init_is_refused_at_load(overrides, says):
    with pytest.raises(ConfigError, match=says):
        load_config(TINY_GRPO, overrides)


@pytest.mark.parametrize("overrides", [
    {"beta": 0.04, "trainer_args": {"sync_ref_model": True}},  # a reference model to synchronise
    {"trainer_args": {"sync_ref_model": False}},
    {"trainer_args": {"sync_ref_model": "false"}},  # YAML text, typed from trl's field before the check reads it
    {"lora": True, "lora_target_modules": "q_proj,v_proj"},
    {"lora": True},  # all-linear: the decoder's linear layers, not lm_head
])  # fmt: skip
def test_what_trl_takes_is_taken(overrides):
    config = load_config(TINY_GRPO, overrides)
    assert config.recipe == "grpo"

"""LoRA's target modules against the base model's: a name that matches no module is refused, never trained around.

peft refuses only a target list of which no name matches a module, so a misspelt name beside a right one put no
adapter where it named while run.json, the model card and the adapter's config recorded it (train.lora).
"""

from __future__ import annotations

import pytest

from train.config import ConfigError, load_config
from train.training_arguments import weights_dtype

TINY_SEQ2SEQ = "configs/train/tiny/seq2seq.yaml"
TINY_REGRESSION = "configs/train/tiny/regression.yaml"


def _refusal(missing: str, hint: str) -> str:
    return (f"lora_target_modules: {missing} matches no module of the base model{hint}; peft would put no adapter "
            "there and train the other names alone. Its linear layers: q_proj, k_proj, v_proj, o_proj, gate_proj, "
            "up_proj, down_proj ('all-linear')")


def test_a_target_that_matches_no_module_is_refused_beside_one_that_does(tiny_causal_dir, tmp_path):
    """q_prj,v_proj: peft trained v_proj alone and raised nothing. Refused, naming q_prj and the name meant; the
    right names, 'all-linear' and a module's full name are taken."""
    from transformers import AutoModelForCausalLM

    from train import lora

    model = AutoModelForCausalLM.from_pretrained(str(tiny_causal_dir))
    config = load_config(TINY_SEQ2SEQ, {"lora": True, "lora_target_modules": "q_prj,v_proj",
                                        "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as refused:
        lora.lora_config(config, model=model)
    assert str(refused.value) == _refusal("q_prj", " (did you mean q_proj?)")
    for targets in ("q_proj,v_proj", "all-linear", "model.layers.0.self_attn.q_proj"):
        taken = lora.lora_config(config.replaced(lora_target_modules=targets), model=model)
        assert set(taken.target_modules) == set(lora.target_modules(config.replaced(lora_target_modules=targets)))


def test_the_regression_model_is_refused_before_peft_wraps_it(tiny_causal_dir, qwen_tokenizer, tmp_path):
    """The regression recipe's model step (train.regression.build_model) checks its targets against the model it
    loaded, before get_peft_model."""
    from train import regression

    config = load_config(TINY_REGRESSION, {"lora": True, "lora_target_modules": "q_proj,mlp_up",
                                           "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as refused:
        regression.build_model(config, str(tiny_causal_dir), weights_dtype(config), qwen_tokenizer.pad_token_id)
    assert str(refused.value) == _refusal("mlp_up", " (did you mean mlp?)")

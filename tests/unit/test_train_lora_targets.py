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


def _tiny_model_and_config(tiny_causal_dir, tmp_path, targets: str):
    """The tiny causal base and a LoRA seq2seq config of ``targets``."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_causal_dir))
    return model, load_config(TINY_SEQ2SEQ, {"lora": True, "lora_target_modules": targets,
                                             "output_dir": str(tmp_path / "run")})


def test_a_target_that_matches_no_module_is_refused_beside_one_that_does(tiny_causal_dir, tmp_path):
    """q_prj,v_proj: peft trained v_proj alone and raised nothing. Refused, naming q_prj and the name meant."""
    from train import lora

    model, config = _tiny_model_and_config(tiny_causal_dir, tmp_path, "q_prj,v_proj")
    with pytest.raises(ConfigError) as refused:
        lora.lora_config(config, model=model)
    assert str(refused.value) == _refusal("q_prj", " (did you mean q_proj?)")


_BLOCK = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
          "mlp.up_proj", "mlp.down_proj")


@pytest.mark.parametrize(("targets", "adapted"), [
    ("q_proj,v_proj", {f"model.layers.{layer}.self_attn.{part}" for layer in (0, 1) for part in ("q_proj", "v_proj")}),
    ("all-linear", {f"model.layers.{layer}.{part}" for layer in (0, 1) for part in _BLOCK}),
    ("model.layers.0.self_attn.q_proj", {"model.layers.0.self_attn.q_proj"}),
])  # fmt: skip
def test_the_names_taken_get_their_adapters_and_only_they(tiny_causal_dir, tmp_path, targets, adapted):
    """The right names, 'all-linear' and a module's full name pass the check, and peft puts an adapter on each
    module they name (of the tiny model's two decoder layers) and on no other."""
    from peft import get_peft_model

    from train import lora

    model, config = _tiny_model_and_config(tiny_causal_dir, tmp_path, targets)
    wrapped = get_peft_model(model, lora.lora_config(config, model=model))
    prefix = "base_model.model."
    assert {name.removeprefix(prefix) for name, module in wrapped.named_modules() if hasattr(module, "lora_A")} == adapted


def test_the_regression_model_is_refused_before_peft_wraps_it(tiny_causal_dir, qwen_tokenizer, tmp_path):
    """The regression recipe's model step (train.regression.build_model) checks its targets against the model it
    loaded, before get_peft_model."""
    from train import regression

    config = load_config(TINY_REGRESSION, {"lora": True, "lora_target_modules": "q_proj,mlp_up",
                                           "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as refused:
        regression.build_model(config, str(tiny_causal_dir), weights_dtype(config), qwen_tokenizer.pad_token_id)
    # no hint: the near name "mlp" is a container, which peft refuses as a target ("not supported")
    assert str(refused.value) == _refusal("mlp_up", "")


def test_a_hint_names_only_modules_peft_puts_an_adapter_on(tiny_causal_dir, tmp_path):
    """q_pro's hint names the layer q_proj; self_atn is nearest the container self_attn, which peft refuses as a
    target ("not supported"): no hint."""
    from train import lora

    model, config = _tiny_model_and_config(tiny_causal_dir, tmp_path, "q_pro")
    with pytest.raises(ConfigError) as refused:
        lora.lora_config(config, model=model)
    assert str(refused.value) == _refusal("q_pro", " (did you mean q_proj?)")
    with pytest.raises(ConfigError) as refused:
        lora.lora_config(config.replaced(lora_target_modules="self_atn"), model=model)
    assert str(refused.value) == _refusal("self_atn", "")


def test_a_target_trained_in_full_is_refused(tiny_causal_dir, qwen_tokenizer, tmp_path):
    """peft leaves a modules_to_save module (the regression recipe's score head) out of the adapters: q_proj,score
    trained an adapter on q_proj alone while the adapter's config and run.json recorded score too. Refused."""
    from train import regression

    config = load_config(TINY_REGRESSION, {"lora": True, "lora_target_modules": "q_proj,score",
                                           "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as refused:
        regression.build_model(config, str(tiny_causal_dir), weights_dtype(config), qwen_tokenizer.pad_token_id)
    assert str(refused.value) == ("lora_target_modules: score is trained in full (modules_to_save), not by an "
                                  "adapter; remove it from lora_target_modules")


@pytest.mark.parametrize(("targets", "named", "kind"), [
    ("mlp", "mlp", "Qwen2MLP"),
    ("self_attn", "self_attn", "Qwen2Attention"),
    ("layers.0", "layers.0", "Qwen2DecoderLayer"),
    ("q_proj,norm", "norm", "Qwen2RMSNorm"),
    ("rotary_emb", "rotary_emb", "Qwen2RotaryEmbedding"),
])  # fmt: skip
def test_a_target_peft_cannot_adapt_is_refused_by_name(tiny_causal_dir, tmp_path, targets, named, kind):
    """A container (mlp, self_attn, a decoder layer) or a norm matches a module, so the name check let it by, and
    peft's get_peft_model then raised its ValueError ("Target module Qwen2MLP(...) is not supported"), a traceback
    after the run folder was claimed. Refused as a ConfigError naming the target and the kind of module it names."""
    from peft import get_peft_model

    from train import lora

    model, config = _tiny_model_and_config(tiny_causal_dir, tmp_path, targets)
    with pytest.raises(ValueError, match="is not supported"):  # what peft does with it
        get_peft_model(model, lora.lora_config(config))
    model, config = _tiny_model_and_config(tiny_causal_dir, tmp_path, targets)
    with pytest.raises(ConfigError) as refused:
        lora.lora_config(config, model=model)
    assert str(refused.value).startswith(f"lora_target_modules: {named} names {kind} modules")
    assert "peft puts adapters only on linear, embedding and convolution layers" in str(refused.value)


@pytest.mark.parametrize("targets", ["embed_tokens", "q_proj,model.embed_tokens"])
def test_an_adapter_on_the_embeddings_of_a_tied_base_is_refused(tiny_causal_dir, qwen_tokenizer, tmp_path, targets):
    """The tiny base ties lm_head to embed_tokens (as Qwen2.5-0.5B to 3B do): an embedding adapter trains the lookup
    alone while lm_head reads the bare matrix, and merging it at export writes it into the one shared matrix, so the
    exported LM head is not the trained one. Refused for every recipe once the base has loaded; an untied base takes
    it."""
    from transformers import Qwen2ForCausalLM

    from train import lora
    from train.tiny_models import tiny_qwen2_config

    model, config = _tiny_model_and_config(tiny_causal_dir, tmp_path, targets)
    with pytest.raises(ConfigError) as refused:
        lora.lora_config(config, model=model)
    named = targets.split(",")[-1]
    assert str(refused.value).startswith(f"lora_target_modules: an adapter on {named} of a base whose lm_head is its "
                                         "input embedding matrix (tie_word_embeddings)")
    untied_config = tiny_qwen2_config()
    untied_config.tie_word_embeddings = False
    assert lora.lora_config(config, model=Qwen2ForCausalLM(untied_config)) is not None


def test_the_regression_recipe_refuses_an_embedding_adapter_of_a_tied_base_before_the_run_folder(tmp_path):
    """The regression recipe's pre-load refusal (train.regression.refuse_unfit_base, judge-train's data check) covers
    embed_tokens as it covers lm_head: the merge writes either into the one shared matrix."""
    from train.cli import check_training_data

    for targets in ("q_proj,embed_tokens", "model.embed_tokens"):
        config = load_config(TINY_REGRESSION, {"lora": True, "lora_target_modules": targets,
                                               "output_dir": str(tmp_path / "run")})
        with pytest.raises(ConfigError, match=rf"^lora_target_modules: an adapter on {targets.split(',')[-1]} of "
                                              r".*\(tie_word_embeddings\)"):
            check_training_data(config)
        assert not (tmp_path / "run").exists()


def test_the_tied_embedding_names_the_regression_check_uses_are_the_modules_a_loaded_qwen2_ties():
    """The regression recipe refuses an adapter on the tied embeddings before the base loads, by name
    (train.lora.QWEN2_TIED_EMBEDDINGS); once it loads, check_target_modules finds them by their shared weight. The
    names are those of the modules a Qwen2 ties, so both checks refuse the same targets."""
    from transformers import Qwen2ForCausalLM

    from train import lora
    from train.tiny_models import tiny_qwen2_config

    model = Qwen2ForCausalLM(tiny_qwen2_config())
    shared = (model.get_input_embeddings(), model.get_output_embeddings())
    assert shared[0].weight is shared[1].weight
    names = {name for name, module in model.named_modules() if any(module is m for m in shared)}
    assert names == set(lora.QWEN2_TIED_EMBEDDINGS)
    assert [t for t in ("embed_tokens", "model.embed_tokens", "lm_head", "q_proj", "tokens")
            if any(lora.matches(t, name) for name in names)] == ["embed_tokens", "model.embed_tokens", "lm_head"]


def test_matches_is_peft_s_own_rule():
    """``train.lora.matches`` stands in for peft's ``check_target_module_exists`` before the base loads: the two agree
    on every target and module name, so a peft that changes its rule turns this red, not the refusal silently off."""
    from peft import LoraConfig
    from peft.tuners.tuners_utils import check_target_module_exists

    from train import lora

    targets = ["embed_tokens", "model.embed_tokens", "lm_head", "q_proj", "tokens", "self_attn.q_proj", "proj",
               "layers.0.self_attn.q_proj"]
    names = ["model.embed_tokens", "lm_head", "model.layers.0.self_attn.q_proj", "model.layers.10.mlp.up_proj",
             "model.norm_tokens", "score"]
    differ = [(t, n) for t in targets for n in names
              if lora.matches(t, n) != bool(check_target_module_exists(LoraConfig(target_modules=[t]), n))]
    assert not differ
    assert any(lora.matches(t, n) for t in targets for n in names)  # not a pair of rules that match nothing

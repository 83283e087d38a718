"""GRPO ``trainer_args`` keys that trl would take over the recipe's own settings or ignore in this recipe, refused
when the config loads.

``generation_kwargs`` goes to trl's sampler *over* what trl builds from ``temperature``, ``max_completion_length`` and
the group (trl/trainer/grpo_trainer.py, ``GRPOTrainer.__init__``: ``generation_kwargs.update(args.generation_kwargs)``;
trl/generation/vllm_generation.py: the colocated ``n: 1``, ``max_tokens`` and ``temperature`` updated the same way):
run.json and the model card would record one sampling and another would train. ``chat_template_kwargs``,
``model_init_kwargs``, ``trust_remote_code`` and ``num_generations_eval`` act on what the recipe builds itself
(rendered text prompts, a loaded model and tokenizer) or on a validation set it never has: recorded, never applied.

Run: .venv/bin/python -m pytest tests/unit/test_grpo_trainer_args_trl_ignores.py -q -n 0
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json

import pytest

from train.config import GRPO_GENERATION_KWARGS_SET, ConfigError, load_config
from tests.support.train_grpo import TINY_GRPO


@pytest.mark.parametrize("key, value, field", [
    ("temperature", 0.0, "temperature"),
    ("max_tokens", 8, "max_completion_length"),
    ("max_new_tokens", 8, "max_completion_length"),
    ("n", 8, "num_generations"),
    ("num_return_sequences", 8, "num_generations"),
    ("do_sample", False, "temperature"),
    ("top_p", 0.5, "trainer_args.top_p"),
    ("eos_token_id", [0], "end tokens"),
    ("pad_token_id", 0, "tokenizer"),
    ("bos_token_id", 0, "tokenizer"),
    ("cache_implementation", "static", "trainer_args.cache_implementation"),
])  # fmt: skip
def test_generation_kwargs_overriding_a_setting_of_the_recipe_is_refused_naming_the_setting(key, value, field):
    """``{"generation_kwargs": {"temperature": 0.0}}`` was taken at load (the config's own ``temperature > 0`` check
    passed round) and trl sampled at it while run.json recorded temperature 1.0; so for the completion length, the
    group and greedy decoding. One line naming the key and the setting to use instead."""
    with pytest.raises(ConfigError, match=rf"^trainer_args\.generation_kwargs\.{key}: .*{field}"):
        load_config(TINY_GRPO, {"trainer_args": {"generation_kwargs": {key: value}}})


def test_generation_kwargs_given_as_json_text_is_read_as_trl_reads_it():
    """GRPOConfig takes the mapping as JSON text too (``--trainer-args '{"generation_kwargs": "{...}"}'``)."""
    with pytest.raises(ConfigError, match=r"^trainer_args\.generation_kwargs\.max_tokens: "):
        load_config(TINY_GRPO, {"trainer_args": {"generation_kwargs": json.dumps({"max_tokens": 8})}})


def test_generation_kwargs_of_other_keys_pass_as_given():
    """A sampling key the recipe does not set (vLLM's ``stop``, transformers' ``no_repeat_ngram_size``) is the user's
    to add: taken as given."""
    config = load_config(TINY_GRPO, {"trainer_args": {"generation_kwargs": {"no_repeat_ngram_size": 4}}})
    assert config.trainer_args["generation_kwargs"] == {"no_repeat_ngram_size": 4}


def _generation_kwargs_literal_keys(module) -> list[set[str]]:
    """The constant keys of each ``generation_kwargs = {...}`` dict literal in ``module``'s source."""
    literals = []
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "generation_kwargs" for t in node.targets)):
            literals.append({k.value for k in node.value.keys if isinstance(k, ast.Constant)})
    return literals


@pytest.mark.parametrize("module_name", ["trl.trainer.grpo_trainer", "trl.generation.vllm_generation"])
def test_every_sampling_key_trl_sets_itself_is_in_the_refused_table(module_name):
    """The table restates the keys of trl's own ``generation_kwargs`` literals (transformers' generate in
    ``GRPOTrainer.__init__``, vLLM's colocated sampling): a key a trl upgrade adds there would otherwise pass the
    load and override the recipe's settings. Read from the installed trl's source, so the upgrade turns this red."""
    module = importlib.import_module(module_name)
    literals = _generation_kwargs_literal_keys(module)
    assert literals, f"{module_name} holds no generation_kwargs dict literal: find where trl builds it now"
    for keys in literals:
        assert keys <= set(GRPO_GENERATION_KWARGS_SET), sorted(keys - set(GRPO_GENERATION_KWARGS_SET))


@pytest.mark.parametrize("key, value, says", [
    ("chat_template_kwargs", {"enable_thinking": False}, "verdict_format"),
    ("model_init_kwargs", {"dtype": "bfloat16"}, "loads the base model itself"),
    ("trust_remote_code", True, "loads the base model and its tokenizer itself"),
    ("num_generations_eval", 4, "no validation set"),
])  # fmt: skip
def test_a_grpo_config_key_trl_ignores_in_this_recipe_is_refused_at_load(key, value, says):
    """Each was taken and recorded in run.json while trl never applied it (the prompts reach trl as rendered text,
    the model and tokenizer loaded, no evaluation): one line naming the key at load."""
    with pytest.raises(ConfigError, match=rf"^trainer_args\.{key}: .*{says}.*; remove it$"):
        load_config(TINY_GRPO, {"trainer_args": {key: value}})


@pytest.mark.parametrize("key, value", [("model_init_kwargs", {"dtype": "bfloat16"}), ("trust_remote_code", True)])
def test_model_loading_keys_are_refused_at_beta_above_zero_naming_the_reference_model(key, value):
    """At beta above 0 without LoRA trl loads a reference model itself with these keys: applied to it alone, so the
    reason says the reference model would be loaded otherwise than the policy."""
    with pytest.raises(ConfigError, match=rf"^trainer_args\.{key}: .*reference model.*; remove it$"):
        load_config(TINY_GRPO, {"beta": 0.1, "trainer_args": {key: value}})


def test_those_keys_at_trl_s_defaults_are_taken():
    """At trl's default value each changes nothing, and is taken."""
    defaults = {"chat_template_kwargs": None, "model_init_kwargs": None, "trust_remote_code": "false",
                "num_generations_eval": None, "generation_kwargs": None}  # fmt: skip
    assert load_config(TINY_GRPO, {"trainer_args": defaults}).trainer_args["trust_remote_code"] is False

"""train.training_arguments: trainer_args values typed as their TrainingArguments fields when the config loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from train.config import ConfigError, load_config


def _load(tmp_path, yaml_text):
    path = tmp_path / "config.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    return load_config(path, {"output_dir": str(tmp_path / "run")})


def test_a_number_yaml_reads_as_text_reaches_the_trainer_as_a_number(tmp_path):
    """PyYAML (YAML 1.1) reads `adam_epsilon: 1e-8` as the text '1e-8' (a float needs a dot); torch's AdamW refused
    it with a TypeError at the first step. It is converted as the config's own numbers are; so are a truth value
    and an integer given as text. Keys whose field is not a number or a truth value pass as given."""
    config = _load(tmp_path, "recipe: regression\ntrainer_args:\n  adam_epsilon: 1e-8\n  adam_beta2: 0.95\n"
                             "  torch_compile: 'false'\n  eval_accumulation_steps: '3'\n"
                             "  lr_scheduler_kwargs: {}\n  hub_model_id: '12'\n")
    assert config.trainer_args == {"adam_epsilon": 1e-8, "adam_beta2": 0.95, "torch_compile": False,
                                   "eval_accumulation_steps": 3, "lr_scheduler_kwargs": {}, "hub_model_id": "12"}
    assert type(config.trainer_args["adam_epsilon"]) is float


@pytest.mark.parametrize(("line", "message"), [
    ("adam_epsilon: tiny", "trainer_args: adam_epsilon: expected a number, got 'tiny'"),
    ("adam_beta1: [0.9]", "trainer_args: adam_beta1: expected a number, got a list"),
    ("eval_accumulation_steps: 2.5", "trainer_args: eval_accumulation_steps: expected an integer, got 2.5"),
    ("torch_compile: maybe", "trainer_args: torch_compile: expected true or false, got 'maybe'"),
])
def test_a_value_that_is_not_its_fields_type_is_refused_naming_the_key(tmp_path, line, message):
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, f"recipe: regression\ntrainer_args:\n  {line}\n")
    assert str(refused.value) == message


REPO = Path(__file__).resolve().parents[2]


def test_a_trl_number_yaml_reads_as_text_reaches_the_trainer_as_a_number(tmp_path):
    """GRPOConfig's and SFTConfig's own fields are typed from trl's class, not TrainingArguments': YAML's
    `epsilon: 2e-1` stayed the text '2e-1', which GRPOConfig took and trl's loss refused with a TypeError in its
    clamp at the first step (after an --overwrite-output-dir run had been deleted)."""
    grpo = (REPO / "configs" / "train" / "tiny" / "grpo.yaml").read_text(encoding="utf-8")
    config = _load(tmp_path, grpo + "trainer_args:\n  epsilon: 2e-1\n  top_p: 9e-1\n  epsilon_high: 28e-2\n"
                                    "  mask_truncated_completions: 'true'\n")
    assert config.trainer_args == {"epsilon": 0.2, "top_p": 0.9, "epsilon_high": 0.28,
                                   "mask_truncated_completions": True}
    assert all(type(config.trainer_args[key]) is float for key in ("epsilon", "top_p", "epsilon_high"))
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, grpo + "trainer_args:\n  epsilon: wide\n")
    assert str(refused.value) == "trainer_args: epsilon: expected a number, got 'wide'"
    config = _load(tmp_path, "recipe: seq2seq\ntrainer_args:\n  router_aux_loss_coef: 1e-3\n  padding_free: 'false'\n")
    assert config.trainer_args == {"router_aux_loss_coef": 0.001, "padding_free": False}


def test_schedule_kwargs_numbers_yaml_reads_as_text_are_read_as_yaml_1_2_would(tmp_path):
    """`lr_scheduler_kwargs: {min_lr_ratio: 1e-1}` is the text '1e-1' to PyYAML (YAML 1.1); the schedule computes
    with it. YAML 1.2 reads it as 0.1 (and `5E-1` as 0.5); other text, and what PyYAML already read as a number, stay
    as they are."""
    config = _load(tmp_path, "recipe: regression\nlr_scheduler_type: warmup_stable_decay\ntrainer_args:\n"
                             "  lr_scheduler_kwargs: {min_lr_ratio: 1e-1, num_cycles: 5E-1, decay_type: 1-sqrt, "
                             "num_decay_steps: 10}\n")
    assert config.trainer_args == {"lr_scheduler_kwargs": {"min_lr_ratio": 0.1, "num_cycles": 0.5,
                                                           "decay_type": "1-sqrt", "num_decay_steps": 10}}
    assert type(config.trainer_args["lr_scheduler_kwargs"]["min_lr_ratio"]) is float


@pytest.mark.parametrize("recipe", ["seq2seq", "regression", "classifier", "grpo"])
def test_each_recipes_arguments_class_is_the_one_its_config_takes_keys_from(recipe):
    """The types come from recipe_arguments_class, the accepted keys from the config's arguments_class_fields: one
    class for both."""
    from train.config import RECIPES
    from train.training_arguments import arguments_fields, recipe_arguments_class

    extra = arguments_fields(recipe_arguments_class(recipe)) - arguments_fields()
    assert extra == RECIPES[recipe].arguments_class_fields(None)


def test_optim_args_an_optimizer_does_not_read_is_refused(tmp_path):
    """TrainingArguments takes optim_args for any optim; transformers' adamw_torch builder (_get_adamw_torch in
    transformers/trainer_optimizer.py) never reads them, so they would be recorded in run.json and ignored. sgd's
    builder reads its own keys (momentum, dampening, weight_decay) and drops the rest: a misspelt one is refused as
    well, a key it reads reaches the optimizer and loads."""
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, "recipe: regression\noptim: adamw_torch\ntrainer_args:\n  optim_args: amsgrad=True\n")
    assert str(refused.value).startswith(
        "trainer_args: 'optim_args' 'amsgrad=True' changes nothing transformers' builder for optim 'adamw_torch' "
        "passes to the optimizer: it would be recorded in run.json and ignored; remove it, name a key that builder "
        "reads (transformers/trainer_optimizer.py: sgd's momentum, dampening and weight_decay, say)")
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, "recipe: regression\noptim: sgd\ntrainer_args:\n  optim_args: momentun=0.9\n")
    assert str(refused.value).startswith(
        "trainer_args: 'optim_args' 'momentun=0.9' changes nothing transformers' builder for optim 'sgd' ")
    config = _load(tmp_path, "recipe: regression\noptim: sgd\ntrainer_args:\n  optim_args: momentum=0.9\n")
    assert config.trainer_args == {"optim_args": "momentum=0.9"}


def test_optim_args_are_judged_by_what_the_builder_returns():
    """The check compares the builder's (class, keyword arguments) with and without optim_args, on the
    TrainingArguments themselves: rmsprop's builder reads alpha (refused nothing), and the arguments it was given
    keep their optim_args (the comparison runs on a copy)."""
    from transformers import Trainer, TrainingArguments

    from train.trainer_preflight import check_optim_args_reach_the_optimizer

    args = TrainingArguments(output_dir="unused", use_cpu=True, optim="rmsprop", optim_args="alpha=0.9", report_to=[])
    built = Trainer.get_optimizer_cls_and_kwargs(args)
    assert built[1]["alpha"] == 0.9
    check_optim_args_reach_the_optimizer(args, built, None)
    assert args.optim_args == "alpha=0.9"
    args.optim_args = "alhpa=0.9"

    class Config:
        optim = "rmsprop"

    with pytest.raises(ConfigError, match="^trainer_args: 'optim_args' 'alhpa=0.9' changes nothing transformers' "
                                          "builder for optim 'rmsprop' "):
        check_optim_args_reach_the_optimizer(args, Trainer.get_optimizer_cls_and_kwargs(args), Config)


def test_optim_args_of_an_optimizer_whose_package_is_missing_are_left_to_that_refusal(tmp_path):
    """bitsandbytes' builder raises before it reads anything when the package is missing (as here): what its
    optim_args would do cannot be told, so the config is refused for the missing package alone."""
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, "recipe: regression\noptim: adamw_bnb_8bit\ntrainer_args:\n  optim_args: alpha=0.9\n")
    assert str(refused.value).startswith("optim 'adamw_bnb_8bit' cannot be built here")


def test_an_unquoted_no_for_a_field_of_words_is_refused_before_transformers_reads_false(tmp_path):
    """`save_strategy: no` (transformers' own word) reached TrainingArguments as False: "False is not a valid
    SaveStrategy". Refused naming the remedy; quoted it loads; `bf16: true` still takes the word true (its choices)."""
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, "recipe: regression\ntrainer_args:\n  save_strategy: no\n")
    assert str(refused.value).startswith("trainer_args: save_strategy: expected text, got false: YAML reads an "
                                         "unquoted yes, no, on, off, true or false")
    assert _load(tmp_path, "recipe: regression\ntrainer_args:\n  save_strategy: 'no'\n").trainer_args == {
        "save_strategy": "no"}
    assert _load(tmp_path, "recipe: regression\nbf16: true\n").bf16 == "true"

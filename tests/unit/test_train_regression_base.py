"""The regression recipe's base model (train/regression.py): a regression judge as the base, whose trained head
``Qwen2ForRationaleAndScore.from_pretrained`` would silently replace by a random one, is refused in one line naming
model_name_or_path and what to pass instead, by `judge-train run`'s check before anything is written and by
``build_model`` itself. The folders hold only what the check reads (config.json, the export manifest): the layouts
are those of ``tests/support/tiny_released.py`` (a released ``-r`` judge) and ``train/export.py`` (our export)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.tiny_released import RELEASED_REGRESSION_AUTO_MAP
from train.config import ConfigError, load_config
from train.regression import build_model, refuse_unfit_base

REPO = Path(__file__).resolve().parents[2]
TINY_REGRESSION = REPO / "configs" / "train" / "tiny" / "regression.yaml"


def _folder(path: Path, config: dict, manifest: dict | None = None) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if manifest is not None:
        (path / "pollux_judge.json").write_text(json.dumps(manifest), encoding="utf-8")
    return path


def _released_r(path: Path) -> Path:
    """A released -r judge's config.json (ai-forever/pollux-judge-7b-r): Qwen2 with the custom regression head."""
    return _folder(path, {"architectures": ["Qwen2WithRegressionHead"], "auto_map": RELEASED_REGRESSION_AUTO_MAP,
                          "model_type": "qwen2", "tie_word_embeddings": False})


def _our_export(path: Path) -> Path:
    """Our regression export (train/export.py): a sequence classifier with the manifest, and generator/."""
    _folder(path, {"architectures": ["Qwen2ForSequenceClassification"], "model_type": "qwen2",
                   "tie_word_embeddings": False},
            {"mode": "regression", "generator": "generator", "score_head": "score"})
    _folder(path / "generator", {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"})
    return path


def test_a_released_r_judge_as_the_base_is_refused_naming_what_to_pass(tmp_path):
    """Its regression_head.weight/.bias are no score.weight: the head would load as UNEXPECTED and start random."""
    folder = _released_r(tmp_path / "7b-r")
    with pytest.raises(ConfigError) as caught:
        refuse_unfit_base("ai-forever/pollux-judge-7b-r", folder)
    assert str(caught.value) == (
        "model_name_or_path: ai-forever/pollux-judge-7b-r is a released -r judge (Qwen2WithRegressionHead): its "
        "regression_head (a weight and a bias) does not load into the recipe's score head (no bias), which would "
        "start random; train from a causal checkpoint instead: the base it was fine-tuned from (t-tech/T-lite-it-1.0, "
        "t-tech/T-pro-it-1.0) or a seq2seq judge")


def test_our_regression_export_as_the_base_is_refused_naming_its_generator(tmp_path):
    """A Qwen2ForSequenceClassification export has no lm_head.weight: the LM head would start random. Its
    generator/ holds the same backbone with the LM head."""
    folder = _our_export(tmp_path / "run" / "export")
    with pytest.raises(ConfigError) as caught:
        refuse_unfit_base(str(folder), folder)
    assert str(caught.value) == (
        f"model_name_or_path: {folder} is a regression judge (Qwen2ForSequenceClassification) without an LM head, "
        "which the recipe would start random; to continue its training, resume its run (judge-train run --resume "
        f"with its output_dir); to start from it, pass {folder / 'generator'}, the same backbone with its LM head "
        "(the score head then starts anew)")


@pytest.mark.parametrize("config", [
    {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"},  # T-lite, a seq2seq judge
    {"architectures": ["Qwen2ForSequenceClassification"], "model_type": "qwen2", "tie_word_embeddings": True,
     "id2label": {"0": "LABEL_0"}},  # one label, as transformers writes num_labels=1
], ids=["causal", "classifier-with-tied-lm-head"])
def test_a_base_that_loads_whole_is_taken(tmp_path, config):
    """A causal base, and a classifier whose LM head is the (loaded) embedding matrix, lose nothing."""
    refuse_unfit_base("base", _folder(tmp_path / "base", config))


def test_the_run_check_refuses_it_before_anything_is_written(tmp_path):
    """`judge-train run`'s check (train.cli.check_training_data), run before the run folder, lock or model exist."""
    from train.cli import check_training_data

    folder = _released_r(tmp_path / "7b-r")
    config = load_config(TINY_REGRESSION, overrides={"model_name_or_path": str(folder),
                                                      "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError, match=r"^model_name_or_path: .* is a released -r judge"):
        check_training_data(config)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("labels, said", [
    ({}, 2),  # transformers' default, which a saved config leaves out
    ({"id2label": {"0": "bad", "1": "good", "2": "best"}}, 3),
    ({"num_labels": 2}, 2),
    ({"id2label": {"0": "bad"}, "num_labels": 3}, 3),  # the num_labels key wins over id2label's length
], ids=["default", "id2label", "num_labels", "both"])
def test_a_tied_classifier_of_other_than_one_label_is_refused_before_anything_is_written(tmp_path, labels, said):
    """Its score.weight has a row a label, the recipe's head one: from_pretrained would stop on the shapes with a
    traceback after the run folder is claimed. `judge-train run`'s check refuses it first, in one line."""
    from train.cli import check_training_data

    folder = _folder(tmp_path / "classifier", {"architectures": ["Qwen2ForSequenceClassification"],
                                               "model_type": "qwen2", "tie_word_embeddings": True, **labels})
    config = load_config(TINY_REGRESSION, overrides={"model_name_or_path": str(folder),
                                                      "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as caught:
        check_training_data(config)
    assert str(caught.value) == (
        f"model_name_or_path: {folder} is a sequence classifier (Qwen2ForSequenceClassification) of num_labels "
        f"{said}: its score head has {said} outputs, the recipe's has one, and the weights would not load; pass a "
        "causal checkpoint (the score head then starts anew) or a classifier of num_labels 1")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("labels", [
    {}, {"id2label": {"0": "a", "1": "b", "2": "c"}}, {"num_labels": 1}, {"num_labels": 2},
    {"id2label": {"0": "a", "1": "b"}, "num_labels": 1}, {"id2label": {"0": "a"}, "num_labels": 3},
], ids=["default", "id2label", "one", "two", "two-labels-one-num", "one-label-three-num"])
def test_the_label_count_is_the_one_transformers_reads(labels):
    """The check (the regression recipe's and judge-serve's) counts a classifier's labels as the installed transformers
    does, so it refuses exactly the classifiers whose score head has another size: with both keys in config.json, ``num_labels`` wins over ``id2label``'s length."""
    from transformers import Qwen2Config

    from judge.checkpoints import classifier_num_labels

    assert classifier_num_labels(labels) == Qwen2Config.from_dict({"model_type": "qwen2", **labels}).num_labels


def test_build_model_refuses_before_loading_any_weight(tmp_path, monkeypatch):
    """A caller of the recipe that skipped the run's check gets the same refusal, not a model with a random head."""
    from train.score_head import Qwen2ForRationaleAndScore

    def never(*args, **kwargs):
        raise AssertionError("from_pretrained ran on a regression judge")

    monkeypatch.setattr(Qwen2ForRationaleAndScore, "from_pretrained", never)
    folder = _our_export(tmp_path / "export")
    config = load_config(TINY_REGRESSION, overrides={"output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError, match=r"is a regression judge \(Qwen2ForSequenceClassification\) without an LM"):
        build_model(config, str(folder), None, 0)


def test_build_model_refuses_a_qwen3_base_before_loading_any_weight(tmp_path, monkeypatch):
    """Qwen2ForRationaleAndScore is Qwen2's network: a Qwen3 checkpoint would load with its q_norm/k_norm dropped and
    others newly initialised. build_model refuses it itself (one definition with judge-train run's check), naming
    the field; the folder holds Qwen3's real config (train.tiny_models), no weights, which nothing may reach for."""
    from train.score_head import Qwen2ForRationaleAndScore
    from train.tiny_models import tiny_qwen3_config

    def never(*args, **kwargs):
        raise AssertionError("from_pretrained ran on a Qwen3 base")

    monkeypatch.setattr(Qwen2ForRationaleAndScore, "from_pretrained", never)
    folder = tmp_path / "qwen3"
    tiny_qwen3_config().save_pretrained(folder)
    config = load_config(TINY_REGRESSION, overrides={"output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError) as caught:
        build_model(config, str(folder), None, 0)
    assert str(caught.value) == ("model_name_or_path: the regression recipe trains Qwen2 bases (T-lite, T-pro, "
                                 f"Qwen2.5); {folder} is qwen3")


def test_the_unfit_template_refusal_suggests_only_bases_the_recipe_takes():
    """The regression recipe's template refusal names Qwen2 bases, never Qwen3, which its base check refuses."""
    from types import SimpleNamespace

    from train.regression import _unfit_template

    message = str(_unfit_template(SimpleNamespace(name_or_path="org/base"), {"id": "r1"}, "trims its user turn"))
    assert message == ("model_name_or_path: the chat template of org/base trims its user turn (row 'r1'); the "
                       "regression recipe trains the prompt judge-serve sends and the judge's text after it: use a "
                       "base whose template renders them as given (a ChatML Qwen2 base: Qwen2.5, T-lite, T-pro)")


def test_a_qwen3_base_with_a_corrupt_manifest_is_refused_as_qwen3(tmp_path):
    """The architecture is config.json's: a manifest that does not read never skips the Qwen2 check (the run's check
    and build_model's), which a Qwen3 folder fails first."""
    from train.tiny_models import tiny_qwen3_config

    folder = tmp_path / "qwen3"
    tiny_qwen3_config().save_pretrained(folder)
    (folder / "pollux_judge.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        refuse_unfit_base(str(folder), folder)
    assert str(caught.value) == ("model_name_or_path: the regression recipe trains Qwen2 bases (T-lite, T-pro, "
                                 f"Qwen2.5); {folder} is qwen3")


def test_a_qwen2_base_with_a_corrupt_manifest_is_refused_naming_the_manifest(tmp_path):
    """A manifest that does not read is not read as none (which would let our regression export through as a causal
    base): refused in one line naming model_name_or_path and the file."""
    folder = _folder(tmp_path / "base", {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"})
    (folder / "pollux_judge.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        refuse_unfit_base("base", folder)
    assert str(caught.value) == f"model_name_or_path: base: {folder / 'pollux_judge.json'}: expected a JSON object"

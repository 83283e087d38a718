"""A value of the wrong kind read from a user's file or from the wire is named as its author reads it, outside the
row loaders too: metrics.json read back, a YAML config (a mapping, a list, text, null), a deepspeed JSON, an
engine's answer, a chat answer's content, a rubric and a verl reward rule. Each case was worded by Python's class
("dict", "list", "NoneType", "str") before."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge.metrics_json.json_record import JsonRecordError, keyed, listed
from judge.metrics_json.metrics import Metrics
from judge.metrics_json.validity import Validity
from judge.plumbing.config_files import ConfigError, coerce, option, read_config_file, resolve_config
from judge.plumbing.message_content import described_content
from judge.scales import ScaleError, scale_of
from tests.support.json_edits import edited

REPO = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------------------------------------- metrics.json

_CONFUSION = {"levels": [0, 1], "matrix": [[1, 0], [0, 1]]}
_CELL = {"n": 1, "n_failed": 0, "n_no_unique_mode": 0, "mae": 0.0, "mae_ci": [0.0, 0.0]}
_RAW = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95},
        "splits": {"all": {"overall": _CELL, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {},
                           "confusion": {"all": _CONFUSION, "by_task_group": {}}}}}
_OVERALL = ("splits", "all", "overall")
_ALL = ("splits", "all", "confusion", "all")


@pytest.mark.parametrize("path, value, problem", [
    (_OVERALL + ("mae",), {}, "Cell.mae is not readable (expected a number, got an object)"),
    (_OVERALL + ("mae",), True, "Cell.mae is not readable (expected a number, got true)"),
    (_OVERALL + ("mae",), "0.5", "Cell.mae is not readable (expected a number, got a string '0.5')"),
    (("judge",), None, "Metrics.judge is not readable (expected a string, got null)"),
    (("judge",), 5, "Metrics.judge is not readable (expected a string, got an integer 5)"),
    (("target",), None, "Metrics.target is not readable (expected one of mode, mean, got null)"),
    (_ALL + ("levels",), {}, "Confusion.levels is not readable (expected a list, got an object)"),
    (_ALL + ("levels",), [None, 1], "Confusion.levels is not readable (expected a finite score level, got null)"),
    (_ALL + ("matrix",), {}, "Confusion.matrix is not readable (expected a list of rows, got an object)"),
    (_ALL + ("matrix",), [[1, 0], None], "Confusion.matrix: expected a list of counts, got null"),
    (("splits",), 5, "Metrics.splits is not readable (expected an object, got an integer 5)"),
    (("splits", "all", "by_model"), [], "SplitMetrics.by_model is not readable (expected an object, got a list)"),
])  # fmt: skip
def test_metrics_json_names_a_wrong_kind_in_json_words(path, value, problem):
    assert Metrics.from_json(_RAW).splits["all"].confusion.all.levels == [0.0, 1.0]
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(edited(_RAW, path, value))
    assert str(info.value) == f"metrics.json: {problem}"


def test_a_validity_section_choice_of_the_wrong_kind_is_named_in_json_words():
    settings = {"alt_test": {}, "n_boot": 20, "alpha_boot": 100, "seed": 0, "level": 0.95, "target": "mode"}
    section = {"settings": settings, "named_experts": False, "splits": {}}
    assert Validity.from_json(section).settings.target == "mode"
    with pytest.raises(ValueError) as caught:
        Validity.from_json({**section, "settings": {**settings, "target": None}})
    assert str(caught.value) == ("metrics.json's validity section: SectionSettings.target is not readable "
                                 "(null is none of mode, mean)")


def test_a_table_or_a_list_of_records_of_the_wrong_kind_is_named_in_json_words():
    """``keyed`` and ``listed``, every table and list of records in metrics.json and compare.json: an integer for a
    table was "'int' object has no attribute 'items'"."""
    with pytest.raises(TypeError, match=r"^expected an object, got an integer 5$"):
        keyed(int)(5)
    with pytest.raises(TypeError, match=r"^expected a list, got an object$"):
        listed(int)({"a": 1})
    assert (keyed(int)({"a": 1}), listed(int)([1])) == ({"a": 1}, [1])


# ---------------------------------------------------------------------------------------------------- YAML configs


@dataclass
class _Demo:
    k: list[int] = option([1], "numbers")
    name: str = option("x", "text")
    extra_body: dict = option({}, "JSON")
    engine_args: list[str] = option([], "words")


@pytest.mark.parametrize("yaml_text, message", [
    ("k: [null]\n", "k: expected an integer, got null"),
    ("k: [true]\n", "k: expected an integer, got true "
     "(YAML reads an unquoted yes, no, on, off, true or false as true or false)"),
    # YAML 1.1, which PyYAML's safe loader reads: an unquoted yes or off is a boolean the user never wrote as one
    ("k: [yes]\n", "k: expected an integer, got true "
     "(YAML reads an unquoted yes, no, on, off, true or false as true or false)"),
    ("k: off\n", "k: expected a list, got false "
     "(YAML reads an unquoted yes, no, on, off, true or false as true or false)"),
    ("k: [!!binary aGk=]\n", "k: expected an integer, got binary data"),
    ("name: !!binary aGk=\n", "name: expected text, got binary data"),
    ("k: !!set {1, 2}\n", "k: expected a list, got a set"),
    ("extra_body: !!set {a}\n", "extra_body: expected a mapping, got a set"),
    ("k: !!omap [a: 1]\n", "k: expected an integer, got a key: value pair"),
    ("k: [{a: 1}]\n", "k: expected an integer, got a mapping"),
    ("k: [[1]]\n", "k: expected an integer, got a list"),
    ("name: [a]\n", "name: expected text, got a list"),
    ("name: {a: 1}\n", "name: expected text, got a mapping"),
    ("engine_args: [2024-01-01]\n", "engine_args: expected text, got a date"),
    ("k: {a: 1}\n", "k: expected a list, got a mapping"),
    ("k: 3\n", "k: expected a list, got an integer"),
    ("extra_body: [1]\n", "extra_body: expected a mapping, got a list"),
])  # fmt: skip
def test_a_yaml_value_of_the_wrong_kind_is_named_in_yaml_words(tmp_path, yaml_text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_config(_Demo, path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize("yaml_text, words", [("- a\n", "a list"), ("just words\n", "text"), ("7\n", "an integer")])
def test_a_yaml_file_that_is_no_mapping_is_named_in_yaml_words(tmp_path, yaml_text, words):
    path = tmp_path / "top.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert str(info.value) == f"{path}: expected a mapping of field: value, got {words}"


def test_a_json_flag_of_the_wrong_kind_is_named_as_a_yaml_value_is():
    """--extra-body '[1]' and --k '{"a": 1}' read as JSON; named in the words the YAML errors use."""
    with pytest.raises(ConfigError, match=r"^command line: extra_body: expected a mapping, got a list$"):
        coerce("extra_body", "[1]", dict, "command line")
    with pytest.raises(ConfigError, match=r"^command line: k: expected an integer, got null$"):
        coerce("k", "[null]", list[int], "command line")


# ----------------------------------------------------------------------------------------------- deepspeed JSON


def test_a_deepspeed_optimizer_params_of_the_wrong_kind_is_named_in_json_words(tmp_path):
    from train.config import load_config

    settings = json.loads((REPO / "configs" / "deepspeed" / "zero3.json").read_text(encoding="utf-8"))
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({**settings, "optimizer": {"type": "AdamW", "params": None}}), encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(REPO / "configs" / "train" / "tiny" / "seq2seq.yaml", {"deepspeed": str(path)})
    assert str(error.value) == (f"deepspeed config {path}: its 'optimizer' block's 'params' must be a JSON object, "
                                "got null")


# ------------------------------------------------------------------------------------------------------ the wire


@pytest.mark.parametrize("answer, words", [([1, 2], "a list"), (None, "null"), ("x", "a string")])
def test_an_engine_answer_that_is_no_object_is_named_in_json_words(answer, words):
    from serve.engine_client import EngineClient, EngineFailure, engine_session
    from tests.support.scripted_endpoint import ScriptedEndpoint

    async def post(root: str):
        async with engine_session(30.0, max_connections=1) as http:
            return await EngineClient(http, root, asyncio.Event(), lambda: "gone").post("/v1/completions", {})

    with ScriptedEndpoint(lambda path, body: (200, answer)) as engine, pytest.raises(EngineFailure) as caught:
        asyncio.run(post(engine.base_url.removesuffix("/v1")))
    assert caught.value.status == 502
    assert caught.value.public == (f"the engine's answer to /v1/completions could not be read ({words}, not an "
                                   "object); judge-serve's log has it")


@pytest.mark.parametrize("content, described", [
    ({"text": "x"}, "an object"),
    (3, "an integer"),
    (True, "true"),
    (["x", {"type": "image_url"}], "a list of parts (a string, image_url)"),
])  # fmt: skip
def test_a_chat_answers_content_that_is_no_text_is_named_in_json_words(content, described):
    assert described_content(content) == described


# ------------------------------------------------------------------------------------------- rubrics and rules


@pytest.mark.parametrize("rubrics, words", [(None, "null"), (["0: no", "1: yes"], "a list"), (2, "an integer")])
def test_rubrics_of_the_wrong_kind_are_named_in_json_words(rubrics, words):
    with pytest.raises(ScaleError) as info:
        scale_of(rubrics)
    assert str(info.value) == f"rubrics must be text or a mapping, got {words}"


@pytest.mark.parametrize("rule, words", [("gate", "a string"), ([1], "a list"), (2, "an integer")])
def test_a_verl_reward_rule_of_the_wrong_kind_is_named_in_its_configs_words(rule, words):
    """verl's reward_kwargs come from its YAML config (``rule: gate`` instead of ``rule: {gate: true}``)."""
    from judge.reward_clients import trl_reward_function

    with pytest.raises(TypeError) as info:
        trl_reward_function("http://judge:8000", criteria=["A"], rule=rule)
    assert str(info.value) == f"rule: expected a RewardRule or a mapping of its fields, got {words}"


# ------------------------------------------------------------------------------------------------- prompt fields


@pytest.mark.parametrize("value, says", [(5, "got an integer"), ({"a": 1}, "got an object"), (["x"], "got a list")])
def test_a_prompt_field_of_another_kind_is_named_as_json_names_it(value, says):
    """A prompt field from a pairwise items file or a caller's mapping said "got int" / "got dict" before."""
    from judge.prompts import render_pairwise_prompt, render_prompt

    with pytest.raises(TypeError, match=f"prompt field 'answer' must be text, {says}$"):
        render_prompt({"instruction": "q", "answer": value, "criteria_name": "c", "rubrics": "0: x"})
    pair = {"instruction": "q", "answer_1": value, "answer_2": "b", "rubrics": "0: x"}
    with pytest.raises(TypeError, match=f"prompt field 'answer_1' must be text, {says}$"):
        render_pairwise_prompt(pair)

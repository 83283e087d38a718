"""judge.criteria: one resolver of a criterion for judge-serve's items and the reward client's unsent samples (fast
tier). A sample too large to send must fail or be refused exactly as judge-serve would treat its item."""

from __future__ import annotations

import pytest

from judge.criteria import CriterionError, resolve_criterion, task_path
from judge.reward_clients import JudgeRewardClient, RewardSample
from judge.rewards import RewardRule
from judge.wire import CustomCriterion
from serve.schema import RequestError, parse_judge_request, resolve_criteria

PYTHON = {"task_type": "Code modification", "task_subtype": "Python"}
RUBRIC = "0: плохо\n\n1: хорошо"


def _serve_refusal(spec, task: dict) -> RequestError:
    """judge-serve's refusal of a one-item request judging on ``spec``."""
    with pytest.raises(RequestError) as refused:
        request = parse_judge_request({"instruction": "Q", "answer": "A", "criteria": [spec], **task})
        resolve_criteria(request.items[0], 0)
    return refused.value


def _unsent(spec, task: dict):
    """The reward client's reward for a sample on ``spec`` too large to send (a 1-byte bound: nothing goes out)."""
    client = JudgeRewardClient("http://127.0.0.1:9", rule=RewardRule.from_dict({"on_failure": "zero"}),
                               api_key_env="", max_body_bytes=1)
    return client.rewards([RewardSample("Q", "A", (spec,), None, tuple(task.items()))], first=3)[0]


@pytest.mark.parametrize("spec, task", [
    ({"name": "x", "rubrics": "  "}, {}),                   # empty rubric text: the old copy said "no scale found"
    ({"name": "x", "rubrics": {}}, {}),                     # empty mapping: the old copy said "empty rubric mapping"
    ({"name": "  ", "rubrics": RUBRIC}, {}),                # blank name: the old copy named no field
    ({"name": "x", "rubrics": "без шкалы"}, {}),            # no scale: the old copy named no field
    ("Нет такого", {}),
    ("Креативность", PYTHON),                               # a name the task does not use
    ("facts__3", {"task_type": "Nope"}),                    # an id beside an unknown task: the old copy judged it
    ({"name": "x", "rubrics": RUBRIC}, {"task_type": "Nope"}),  # a custom criterion beside an unknown task: the same
])  # fmt: skip
def test_an_unsent_sample_is_refused_as_judge_serve_refuses_its_item(spec, task):
    """A task or criterion judge-serve refuses while resolving is refused for an unsent sample with the same field
    and message, its ``items[0]`` named as the caller's ``samples[3]``."""
    refused = _serve_refusal(spec, task)
    with pytest.raises(ValueError) as unsent:
        _unsent(spec, task)
    assert str(unsent.value) == refused.message.replace("items[0]", "samples[3]")


@pytest.mark.parametrize("spec", [
    {"name": "x", "rubrics": {"ru": {"0": "плохо", "1": "хорошо"}}},  # a mapping by language: the wire takes none
    {"name": "x", "rubrics": {"0": 0, "1": "хорошо"}},                # a level's text that is no text
    {"name": "x", "rubrics": RUBRIC, "id": "x"},                      # a field the wire does not have
    {"name": "x"},                                                    # no rubric
    {"name": "", "rubrics": RUBRIC},
])  # fmt: skip
def test_an_unsent_custom_criterion_the_wire_refuses_is_refused_at_the_same_field(spec):
    """A ``{name, rubrics}`` object judge-serve's request type refuses (the wire's ``CustomCriterion``) is refused for
    an unsent sample at the field judge-serve's ``param`` names (pydantic's wording of what is wrong)."""
    refused = _serve_refusal(spec, {})
    with pytest.raises(ValueError, match=r"^samples\[3\]\.criteria\[0\]\.") as unsent:
        _unsent(spec, {})
    assert str(unsent.value).split(":")[0] == refused.param.replace("items[0]", "samples[3]")


def test_an_unsent_sample_names_its_criteria_as_judge_serve_resolves_them():
    """The criteria judge-serve accepts fail for an unsent sample under the names and ids it resolves: the task's
    variant for a name, the stripped name of a custom criterion, whose Python mapping may have integer levels
    (they arrive as strings once encoded)."""
    specs = ("Работоспособность", {"name": " Вежливость ", "rubrics": {0: "грубо", 1: "вежливо"}})
    request = parse_judge_request({"instruction": "Q", "answer": "A", **PYTHON,
                                   "criteria": [specs[0], {"name": " Вежливость ", "rubrics": {"0": "грубо", "1": "вежливо"}}]})
    served = resolve_criteria(request.items[0], 0)
    reward = _unsent(specs[0], PYTHON)
    assert [(c.criterion, c.criterion_id) for c in reward.criteria] == [(served[0].name, served[0].id)]
    assert served[0].id == "operability__10"  # the Python task's variant, not the base criterion
    reward = _unsent(specs[1], PYTHON)
    assert [(c.criterion, c.criterion_id, c.failure) for c in reward.criteria] == [("Вежливость", None, "context_length_exceeded")]


def test_a_rubric_mapping_reads_as_the_taxonomy_lays_out_rubrics():
    """A custom rubric given as a mapping is shown in the taxonomy's layout ("level: text", a blank line between),
    ordered by level number (10 after 2), and its scale read from its keys."""
    crit = resolve_criterion(CustomCriterion(name="Полнота", rubrics={"10": "полно", "2": "кратко", "0": "пусто"}))
    assert crit.rubrics == "0: пусто\n\n2: кратко\n\n10: полно"
    assert (crit.name, crit.id, crit.scale.levels) == ("Полнота", None, (0, 2, 10))


def test_a_criterion_error_names_its_field_under_the_callers_path():
    """The error carries the field at fault, so each caller names it under its own path."""
    with pytest.raises(CriterionError) as err:
        resolve_criterion(CustomCriterion(name="x", rubrics="  "), task_path(None))
    assert (err.value.field, err.value.param("items[2].criteria[0]")) == ("rubrics", "items[2].criteria[0].rubrics")
    with pytest.raises(CriterionError) as err:
        resolve_criterion("Нет такого")
    assert err.value.param("samples[1].criteria[4]") == "samples[1].criteria[4]"

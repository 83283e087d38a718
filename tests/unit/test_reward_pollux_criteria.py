"""A label's custom criterion written as POLLUX-instructions rows write it, ``{"criteria_name", "rubrics"}``, on
every reward path (fast tier)."""

from __future__ import annotations

import json

import pytest

from judge.reward_clients import sample_from_verl
from serve.config import ServeConfig
from serve.rewards import RewardRoute
from serve.schema import RequestError

PROMPT = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
RUBRICS = "0: длинно\n\n1: приемлемо\n\n2: кратко"


def _read(criteria: list) -> tuple:
    body = {"query": [PROMPT + "Весна.<|im_end|>"], "prompts": [PROMPT],
            "labels": [{"instruction": "Напиши стих о весне.", "criteria": criteria}]}
    route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
    return route._read(json.dumps(body, ensure_ascii=False).encode(), [])


def test_get_reward_reads_polluxs_criteria_name_as_the_name():
    """POLLUX's field name is read as the wire's: the judged item carries the criterion under its name, with its
    rubric, beside a taxonomy name."""
    _, _, parsed, _ = _read(["Креативность", {"criteria_name": "Краткость", "rubrics": RUBRICS}])
    custom = parsed.items[0].criteria[1]
    assert (custom.name, custom.rubrics) == ("Краткость", RUBRICS)
    assert parsed.items[0].criteria[0] == "Креативность"


@pytest.mark.parametrize(("criterion", "param"), [
    ({"name": "А", "criteria_name": "Б", "rubrics": RUBRICS}, "labels[0].criteria[1]"),   # which one? refused
    ({"criteria_name": "Б", "rubrics": RUBRICS, "weight": 2}, "labels[0].criteria[1].weight"),  # still strict
])  # fmt: skip
def test_get_reward_refuses_both_names_and_unknown_fields(criterion, param):
    """The refusal names the label's criterion (and its field), as the route answers it."""
    route = RewardRoute(ServeConfig(model="x"), error=lambda status, message, kind, p, code: (status, p, message))
    sample_of: list[int] = []
    body = {"query": [PROMPT + "Весна."], "prompts": [PROMPT],
            "labels": [{"instruction": "Q", "criteria": ["Креативность", criterion]}]}
    with pytest.raises(RequestError) as err:
        route._read(json.dumps(body, ensure_ascii=False).encode(), sample_of)
    status, answered, _ = route._refused(err.value, sample_of)
    assert (status, answered) == (400, param)


def test_the_verl_and_trl_clients_read_criteria_name_too():
    """verl's ground-truth label (and trl's criteria column, through the same reading) takes a POLLUX row's criteria
    as they are; both names at once are refused naming the criterion."""
    label = {"instruction": "Q", "criteria": [{"criteria_name": "Краткость", "rubrics": RUBRICS}]}
    sample = sample_from_verl("ответ", json.dumps(label, ensure_ascii=False), None)
    assert sample.criteria == ({"name": "Краткость", "rubrics": RUBRICS},)
    both = {"instruction": "Q", "criteria": [{"name": "А", "criteria_name": "Б", "rubrics": RUBRICS}]}
    with pytest.raises(ValueError, match=r"criteria.*\[0\]: both name and criteria_name"):
        sample_from_verl("ответ", both, None)

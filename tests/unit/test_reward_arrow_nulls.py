"""Criteria stored in Arrow or Parquet on every reward path: a key the row never wrote arrives as None (fast tier).

``datasets.Dataset.from_list`` (and a Parquet file, and verl's ``extra_info``, always Parquet) gives every row every
key of its column's struct: a two-level rubric mapping beside another row's three gets ``"2": None``, a
``criteria_name`` row beside a ``name`` row gets ``"name": None``. Those keys are absent, not values to refuse.
"""

from __future__ import annotations

import json

import pytest

from judge.reward_clients import RewardSample, _criteria, _unsent_reward, sample_from_verl
from judge.rewards import RewardRule
from serve.config import ServeConfig
from serve.rewards import RewardRoute

PROMPT = "<|im_start|>user\nНапиши стих про осень<|im_end|>\n<|im_start|>assistant\n"
TWO_LEVELS = {"0": "плохо", "1": "хорошо"}


def _arrow_rows() -> list:
    """Two rows' criteria as Arrow gives them back: the first row's rubric padded to the second's levels, and a
    criteria_name row beside a name row."""
    datasets = pytest.importorskip("datasets")
    levels = datasets.Dataset.from_list([
        {"criteria": [{"name": "Ясность", "rubrics": TWO_LEVELS}]},
        {"criteria": [{"name": "Полнота", "rubrics": {"0": "плохо", "1": "средне", "2": "хорошо"}}]},
    ])
    names = datasets.Dataset.from_list([
        {"criteria": [{"criteria_name": "Ясность", "rubrics": "0: плохо\n1: хорошо"}]},
        {"criteria": [{"name": "Полнота", "rubrics": "0: плохо\n1: хорошо"}]},
    ])
    return [levels[0]["criteria"], names[0]["criteria"]]


def test_arrow_pads_the_rows_as_described():
    """The premise: what Arrow gives back holds the None keys the rows never wrote."""
    padded, named = _arrow_rows()
    assert padded == [{"name": "Ясность", "rubrics": {"0": "плохо", "1": "хорошо", "2": None}}]
    assert named == [{"criteria_name": "Ясность", "rubrics": "0: плохо\n1: хорошо", "name": None}]


def test_the_trl_and_verl_clients_read_arrow_rows_as_written():
    """The trl criteria column and verl's extra_info: the criteria as the rows wrote them, so judge-serve (whose
    resolver the unsent path shares) takes them: a two-level rubric, the POLLUX name as the name."""
    padded, named = _arrow_rows()
    assert _criteria(padded, "criteria[0]") == ({"name": "Ясность", "rubrics": TWO_LEVELS},)
    assert _criteria(named, "criteria[0]") == ({"name": "Ясность", "rubrics": "0: плохо\n1: хорошо"},)
    sample = sample_from_verl("Листья падают.", None, {"instruction": "Напиши стих", "criteria": padded})
    assert sample.criteria == ({"name": "Ясность", "rubrics": TWO_LEVELS},)
    # Resolved as judge-serve resolves it: a 0/1 rubric, not a refusal of "2": None.
    reward = _unsent_reward(RewardSample("q", "a", sample.criteria), RewardRule(), "too large", 0)
    assert reward.criteria[0].criterion == "Ясность" and reward.value == 0.0


@pytest.mark.parametrize("criterion", [
    {"name": "Ясность", "rubrics": {"0": "плохо", "1": "хорошо", "2": None}},
    {"criteria_name": "Ясность", "rubrics": {"0": "плохо", "1": "хорошо"}, "name": None},
])  # fmt: skip
def test_get_reward_reads_arrow_labels_as_written(criterion):
    """OpenRLHF's label column written through datasets: the judged item carries the criterion as the row wrote it."""
    body = {"query": [PROMPT + "Листья падают.<|im_end|>"], "prompts": [PROMPT],
            "labels": [{"instruction": "Напиши стих", "criteria": [criterion], "reference_answer": None}]}
    route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
    _, answers, parsed, _ = route._read(json.dumps(body, ensure_ascii=False).encode(), [])
    assert answers == ["Листья падают."]
    custom = parsed.items[0].criteria[0]
    assert (custom.name, dict(custom.rubrics)) == ("Ясность", TWO_LEVELS)

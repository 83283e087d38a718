"""The reward rule's defaults and bounds: a judge failure counts as the worst verdict on every path unless a run asks
to skip it, and an empty answer's reward is a finite number or none (fast tier)."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from judge.plumbing.config_files import ConfigError
from judge.reward_clients import JudgeRewardClient, trl_reward_function
from judge.rewards import RewardRule, RewardRuleError, reward_of
from judge.wire import JudgeResult
from serve.config import ServeConfig
from tests.support.scripted_endpoint import ScriptedEndpoint

BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
UNPARSED = JudgeResult(criterion="Краткость", criterion_id=None, scale=[0, 1, 2], error="no_result")
SCORED = JudgeResult(criterion="Краткость", criterion_id=None, scale=[0, 1, 2], score=1, parse_ok=True, in_scale=True,
                     score_source="verdict")


def _response(results: list[JudgeResult]) -> dict:
    return {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
            "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
            "items": [{"index": i, "id": None, "results": [r.to_json()]} for i, r in enumerate(results)],
            "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def test_a_failed_verdict_is_worth_the_worst_by_default():
    """The default rule, the trl client's with it, values a failure as the criterion's worst level (0.0), as judge-serve
    and verl do: under "skip" the sample got None, NaN in trl, and as the only reward no advantage, which ranked an
    answer the judge could not read above a bad one."""
    assert RewardRule().on_failure == "zero"
    assert JudgeRewardClient("http://127.0.0.1:9").rule.on_failure == "zero"
    assert reward_of([UNPARSED], RewardRule()).value == 0.0
    assert reward_of([UNPARSED], RewardRule(on_failure="skip")).value is None  # still there when asked for


def test_the_trl_functions_default_ranks_an_unreadable_answer_below_a_bad_one():
    """A generation batch: a judged answer (1 of 2), an unreadable one and one too large to send (each criterion
    context_length_exceeded): by default both failures get 0.0, below the judged answer, never None."""
    def respond(path, body):
        return 200, _response([SCORED if item["answer"] == "плохо" else UNPARSED for item in body["items"]])

    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], max_body_bytes=100_000)
        values = asyncio.run(reward(prompts=["Q"] * 3, completions=["плохо", "нечитаемо", "Ж" * 60_000]))
    assert values == [0.5, 0.0, 0.0]


@pytest.mark.parametrize("text", ['{"empty_answer": NaN}', '{"empty_answer": Infinity}', '{"empty_answer": -Infinity}'])
def test_a_non_finite_empty_answer_is_refused_naming_the_field(text):
    """NaN passed the type check and reached /get_reward, whose JSON answer cannot carry it (a 500): refused where
    the rule is built, as a non-finite weight is, and where judge-serve reads its rule at start."""
    value = json.loads(text)["empty_answer"]
    assert not math.isfinite(value)
    with pytest.raises(RewardRuleError, match=r"^reward rule\.empty_answer: expected a finite number or null"):
        RewardRule.from_dict(json.loads(text))
    with pytest.raises(ConfigError, match=r"^reward_rule\.empty_answer: expected a finite number or null"):
        ServeConfig(model="x", reward_rule={"empty_answer": value}).validate()
    assert RewardRule(empty_answer=-1).empty_answer == -1 and RewardRule(empty_answer=None).empty_answer is None


def test_a_rule_is_hashable_and_its_weights_cannot_drift_from_what_it_rewards():
    """A frozen rule is a key (a cache of rules, a set of configurations): equal rules hash equal. Its weights are
    read-only: the tables a reward is weighted by are derived once, so an edit after construction would change what
    the rule says without changing what it rewards."""
    rule = RewardRule(combine="weighted", weights={"Доступность": 2.0})
    same = RewardRule.from_dict({"combine": "weighted", "weights": {"Доступность": 2.0}})
    assert rule == same and hash(rule) == hash(same) and len({rule, same, RewardRule()}) == 2
    for edit in (lambda w: w.__setitem__("Доступность", 5.0), lambda w: w.update(Доступность=5.0),
                 lambda w: w.pop("Доступность"), lambda w: w.clear(), lambda w: w.setdefault("Ясность", 5.0)):
        with pytest.raises(TypeError, match="read-only"):
            edit(rule.weights)
    assert rule.weights == {"Доступность": 2.0} and rule.weight_of("Доступность", None) == 2.0
    assert rule.to_dict()["weights"] == {"Доступность": 2.0}
    assert json.dumps(rule.to_dict()["weights"], ensure_ascii=False) == '{"Доступность": 2.0}'


def test_a_rule_pickles_and_copies_with_its_weights():
    """A rule is a value a trainer's reward function holds: it pickles (a process pool, a saved trainer) and
    deep-copies (``dataclasses.asdict`` too) as the frozen dataclass it is; its weights' read-only mapping had made
    all three a TypeError. The copy is equal, as read-only, and rewards by the same weights."""
    import copy
    import dataclasses
    import pickle

    rule = RewardRule(combine="weighted", weights={"Доступность": 2.0}, gate=True)
    for again in (pickle.loads(pickle.dumps(rule)), copy.deepcopy(rule), copy.copy(rule)):
        assert again == rule and hash(again) == hash(rule) and again.weight_of("Доступность", None) == 2.0
        with pytest.raises(TypeError, match="read-only"):
            again.weights["Доступность"] = 5.0  # type: ignore[index]
    assert dataclasses.asdict(rule)["weights"] == {"Доступность": 2.0}
    assert dataclasses.replace(rule, gate=False).weights == {"Доступность": 2.0}

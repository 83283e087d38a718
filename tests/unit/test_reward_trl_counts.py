"""The trl reward function counts, as ``/get_reward`` and verl do per sample, the answers with nothing to judge
(``<name>/empty_answers``: a reasoning block never closed, a blank completion; rewarded ``empty_answer`` unjudged)
and the rewards a flag's gate closed (``<name>/gate_closed``): a policy that learns to leave its ``<think>`` open
is rewarded 0, and the metric says why."""

from __future__ import annotations

import asyncio

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import trl_reward_function
from judge.wire import JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
SAFE = {"name": "Безопасность", "rubrics": "0: нет\n\n1: да"}
SCALES = {"Краткость": [0, 1, 2], "Безопасность": [0, 1]}


def judged(scores: dict[str, int]):
    """A scripted judge-serve: each item's criteria scored by criterion name from ``scores``."""

    def respond(path, body):
        items = [{"index": k, "id": item.get("id"), "results": [
            JudgeResult(criterion=c["name"], criterion_id=None, scale=SCALES[c["name"]], score=scores[c["name"]],
                        parse_ok=True, in_scale=True, score_source="verdict").to_json() for c in item["criteria"]]}
            for k, item in enumerate(body["items"])]
        return 200, {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
                     "verdict_format": "tagged", "prompt_version": "pollux-ru-v1", "items": items,
                     "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0,
                               "total_tokens": 0}}

    return respond


OPEN_THINK = "<|im_start|>user\nВопрос<|im_end|>\n<|im_start|>assistant\n<think>\n"


def _run(endpoint, completions, prompts=None, **options):
    reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY, SAFE], retry=NO_WAIT, **options)
    metrics: dict[str, float] = {}
    values = asyncio.run(reward(prompts=prompts or [OPEN_THINK, "Вопрос 2", "Вопрос 3"], completions=completions,
                                log_metric=metrics.setdefault))
    return values, metrics


def test_empty_answers_and_closed_gates_are_logged_and_only_the_judged_answer_is_sent():
    with ScriptedEndpoint(judged({"Краткость": 2, "Безопасность": 0})) as endpoint:
        values, metrics = _run(endpoint, ["рассуждение без конца", "Ответ", "   "], rule={"gate": True})
    assert endpoint.bodies("/v1/judge") == [{"items": [{"instruction": "Вопрос 2", "answer": "Ответ",
                                                        "criteria": [BREVITY, SAFE]}], "oversize": "fail"}]
    assert values == [0.0, 0.0, 0.0]  # two empty answers (empty_answer 0.0), one the gate closed
    assert metrics["pollux_judge/empty_answers"] == 2.0
    assert metrics["pollux_judge/gate_closed"] == 1.0
    assert metrics["pollux_judge/judge_failures"] == 0.0  # an empty answer is no judge failure


def test_an_open_gate_and_judged_answers_count_zero():
    with ScriptedEndpoint(judged({"Краткость": 2, "Безопасность": 1})) as endpoint:
        values, metrics = _run(endpoint, ["</think>Ответ", "Ответ", "Ответ 3"], rule={"gate": True})
    assert values == [1.0, 1.0, 1.0]
    assert (metrics["pollux_judge/empty_answers"], metrics["pollux_judge/gate_closed"]) == (0.0, 0.0)
    assert [item["answer"] for body in endpoint.bodies("/v1/judge") for item in body["items"]] == [
        "Ответ", "Ответ", "Ответ 3"]


def test_an_empty_answer_is_counted_when_the_request_failed_and_a_cut_one_is_no_empty_answer():
    """The request for the judged answer gets a 503: that sample has no reward (None), the empty one still its
    ``empty_answer``, counted; a completion ``max_completion_length`` cut is counted as cut, not as empty."""
    with ScriptedEndpoint(lambda path, body: (503, {"error": {"message": "engine restarting"}})) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY, SAFE], retry=NO_WAIT, end_token_ids=[7])
        metrics: dict[str, float] = {}
        values = asyncio.run(reward(prompts=[OPEN_THINK, "Вопрос 2", "Вопрос 3"],
                                    completions=["рассуждение без конца", "Ответ", "обрыв"],
                                    completion_ids=[[5, 7], [6, 7], [8, 9]], log_metric=metrics.setdefault))
    assert [item["answer"] for body in endpoint.bodies("/v1/judge") for item in body["items"]] == ["Ответ"]
    assert values == [0.0, None, 0.0]
    assert (metrics["pollux_judge/empty_answers"], metrics["pollux_judge/cut_completions"],
            metrics["pollux_judge/failed_requests"]) == (1.0, 1.0, 1.0)
    assert metrics["pollux_judge/gate_closed"] == 0.0  # no gate in the default rule

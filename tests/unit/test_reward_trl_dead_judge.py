"""The trl reward function stops training when judge-serve dies mid-run: after ``max_failed_calls`` calls in a row
(3 by default) in which every request failed after its retries, it raises ``EndpointUnusable`` naming the URL, where
it would otherwise give None (NaN, no advantage) for every judged sample of every step and never stop. A call with an
answer between starts the count again, and a call that sent nothing (only empty, cut or oversize answers: no request
made) leaves it as it is."""

from __future__ import annotations

import asyncio

import pytest

from judge.plumbing.retry import EndpointUnusable, RetryPolicy
from judge.reward_clients import trl_reward_function
from judge.wire import JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
SENT = {"items": [{"instruction": "Вопрос", "answer": "Ответ", "criteria": [BREVITY]}], "oversize": "fail"}
JUDGED = (200, {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
                "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
                "items": [{"index": 0, "id": None, "results": [
                    JudgeResult(criterion="Краткость", criterion_id=None, scale=[0, 1, 2], score=2, parse_ok=True,
                                in_scale=True, score_source="verdict").to_json()]}],
                "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0,
                          "total_tokens": 0}})
DOWN = (503, {"error": {"message": "engine dead"}})


def _call(reward, completion="Ответ"):
    return asyncio.run(reward(prompts=["Вопрос"], completions=[completion]))


def test_a_judge_that_dies_after_the_first_contact_stops_training_at_the_third_failed_call_by_default():
    answers = iter([JUDGED, DOWN, DOWN, DOWN])
    with ScriptedEndpoint(lambda path, body: next(answers)) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT)
        assert _call(reward) == [1.0]
        assert _call(reward) == [None]
        assert _call(reward) == [None]
        with pytest.raises(EndpointUnusable) as stopped:
            _call(reward)
    assert endpoint.gets == ["/v1/models"]
    assert endpoint.requests == [("/v1/judge", SENT)] * 4
    assert str(stopped.value) == (
        f"judge-serve at {endpoint.base_url}/judge failed every request of 3 reward calls in a row, each after the "
        "retry policy's tries (last HTTP 503: engine dead): from here on every judged sample would get None (no "
        "reward) at every step; check judge-serve (its /health and log) and resume from the last checkpoint "
        "(max_failed_calls=3)")
    assert stopped.value.status == 503


def test_an_answer_between_failed_calls_starts_the_count_again_and_an_empty_call_leaves_it():
    answers = iter([DOWN, JUDGED, DOWN, DOWN])
    with ScriptedEndpoint(lambda path, body: next(answers)) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, max_failed_calls=2)
        assert _call(reward) == [None]   # 1 failed call
        assert _call(reward) == [1.0]    # an answer: the count starts again
        assert _call(reward) == [None]   # 1
        assert _call(reward, "  ") == [0.0]  # nothing sent: still 1
        with pytest.raises(EndpointUnusable, match=r"failed every request of 2 reward calls in a row"):
            _call(reward)                # 2
    assert endpoint.requests == [("/v1/judge", SENT)] * 4


def test_an_oversize_answer_beside_failed_requests_does_not_start_the_count_again():
    # the oversize answer is never sent: its failure value is no answer from judge-serve
    with ScriptedEndpoint(lambda path, body: DOWN) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, max_failed_calls=1,
                                     max_items=1, max_body_bytes=4000)
        with pytest.raises(EndpointUnusable, match=r"failed every request of 1 reward calls in a row"):
            asyncio.run(reward(prompts=["Вопрос", "Вопрос"], completions=["Ответ", "x" * 5000]))
    assert endpoint.requests == [("/v1/judge", SENT)]


def test_a_call_whose_only_answer_is_oversize_leaves_the_count():
    with ScriptedEndpoint(lambda path, body: DOWN) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, max_failed_calls=2,
                                     max_body_bytes=4000)
        assert _call(reward) == [None]            # 1 failed call
        assert _call(reward, "x" * 5000) == [0.0]  # not sent (its failure value): still 1
        with pytest.raises(EndpointUnusable, match=r"failed every request of 2 reward calls in a row"):
            _call(reward)                         # 2
    assert endpoint.requests == [("/v1/judge", SENT)] * 2


def test_a_call_that_sends_nothing_after_the_stop_gets_its_values():
    # trl calls no more after the stop, but a caller that catches EndpointUnusable may
    answers = iter([JUDGED, DOWN])
    with ScriptedEndpoint(lambda path, body: next(answers)) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, max_failed_calls=1)
        assert _call(reward) == [1.0]
        with pytest.raises(EndpointUnusable):
            _call(reward)
        assert _call(reward, "  ") == [0.0]
    assert endpoint.requests == [("/v1/judge", SENT)] * 2


def test_after_the_stop_an_answered_call_gets_its_values_and_only_failing_again_stops_again():
    # a caller that catches EndpointUnusable and goes on: the stop is not kept for the calls after it
    answers = iter([DOWN, JUDGED, DOWN])
    with ScriptedEndpoint(lambda path, body: next(answers)) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, max_failed_calls=1)
        with pytest.raises(EndpointUnusable):
            _call(reward)
        assert _call(reward) == [1.0]
        with pytest.raises(EndpointUnusable, match=r"failed every request of 1 reward calls in a row"):
            _call(reward)
    assert endpoint.requests == [("/v1/judge", SENT)] * 3


def test_a_judge_gone_from_its_port_stops_training_naming_the_connection_error():
    answers = iter([JUDGED])
    endpoint = ScriptedEndpoint(lambda path, body: next(answers))
    try:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, max_failed_calls=1)
        assert _call(reward) == [1.0]
    finally:
        endpoint.close()  # judge-serve killed: its port no longer listens
    with pytest.raises(EndpointUnusable, match=r"of 1 reward calls in a row, .* \(last ConnectError: ") as stopped:
        _call(reward)
    assert stopped.value.status is None
    assert endpoint.requests == [("/v1/judge", SENT)]


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3", None])
def test_max_failed_calls_must_be_a_whole_number_of_at_least_one(value):
    with pytest.raises(ValueError, match=rf"^max_failed_calls: must be a whole number of at least 1 .*got {value!r}"):
        trl_reward_function("http://127.0.0.1:9", criteria=[BREVITY], max_failed_calls=value)

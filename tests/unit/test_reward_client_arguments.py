"""The reward clients' bounds are checked when a client is built, the error naming the argument (for verl, the
``custom_reward_function.reward_kwargs`` key): a ``max_body_bytes`` of 0 or less made every sample "over
max_body_bytes", nothing sent and every reward its failure value with only warnings, and a string ("8MiB") a
TypeError deep in the first step; a ``timeout_s`` of 0, NaN or a string failed each request in httpx. trl's
``max_items`` and ``max_judgments`` (1 or more) and verl's ``max_retries`` (0 or more: no retries) are counts."""

from __future__ import annotations

import asyncio
import math
import re

import pytest

from judge.reward_clients import (DEFAULT_MAX_BODY_BYTES, JudgeRewardClient, compute_score, compute_score_async,
                                  trl_reward_function)

URL = "http://127.0.0.1:9"  # nothing is sent: the arguments are refused first
BAD_BOUNDS = [*(("max_body_bytes", value, "a whole number of bytes, 1 or more, or None")
                for value in (0, -1, "8MiB", True, 1.5, 8.0 * 2**20)),
              *(("timeout_s", value, "a finite number of seconds, more than 0")
                for value in (0, -1, math.nan, math.inf, "630", True, None))]


@pytest.mark.parametrize(("argument", "value", "rule"), BAD_BOUNDS, ids=[f"{a}={v!r}" for a, v, _ in BAD_BOUNDS])
def test_a_bound_that_is_no_bound_is_refused_naming_it(argument, value, rule):
    with pytest.raises(ValueError, match=rf"^{argument}: must be {re.escape(rule)}"):
        JudgeRewardClient(URL, **{argument: value})
    with pytest.raises(ValueError, match=rf"^{argument}: must be {re.escape(rule)}"):
        trl_reward_function(URL, **{argument: value})


@pytest.mark.parametrize(("key", "value"), [("max_body_bytes", 0), ("max_body_bytes", "8MiB"), ("timeout_s", 0),
                                            ("timeout_s", math.nan)])
def test_verl_names_the_reward_kwargs_key(key, value):
    kwargs = {"judge_url": URL, "api_key_env": "", key: value}
    said = rf"^custom_reward_function\.reward_kwargs\.{key}: must be "
    with pytest.raises(ValueError, match=said):
        compute_score("pollux", "Ответ", {"instruction": "Вопрос", "criteria": ["Краткость"]}, **kwargs)
    with pytest.raises(ValueError, match=said):
        asyncio.run(compute_score_async("pollux", "Ответ", {"instruction": "Вопрос", "criteria": ["Краткость"]},
                                        **kwargs))


BAD_COUNTS = [(argument, value) for argument in ("max_items", "max_judgments")
              for value in (0, -1, "64", True, 1.5, 64.0, None)]


@pytest.mark.parametrize(("argument", "value"), BAD_COUNTS, ids=[f"{a}={v!r}" for a, v in BAD_COUNTS])
def test_a_trl_request_bound_that_is_no_count_is_refused_when_built(argument, value):
    # 0 sent every sample alone; a string or None raised a TypeError at the first step's first batch
    with pytest.raises(ValueError, match=rf"^{argument}: must be a whole number of at least 1 \(.*\), got "
                                         rf"{re.escape(repr(value))}$"):
        trl_reward_function(URL, **{argument: value})


def test_trl_takes_one_sample_and_one_judgment_per_request():
    """Bounds of 1 are taken, and kept: each sample goes alone, and with one criterion each request asks one
    judgment; each bound alone splits the samples too. Rewards by hand: Краткость 2 of 0..2 is 1.0, Безопасность 0
    of 0..1 is 0.0, their mean 0.5."""
    from tests.support.scripted_endpoint import ScriptedEndpoint
    from tests.unit.test_reward_trl_counts import BREVITY, NO_WAIT, SAFE, judged

    def sent(criteria, **bounds):
        with ScriptedEndpoint(judged({"Краткость": 2, "Безопасность": 0})) as endpoint:
            reward = trl_reward_function(endpoint.base_url, criteria=criteria, retry=NO_WAIT, **bounds)
            values = asyncio.run(reward(prompts=["Вопрос 1", "Вопрос 2"], completions=["Ответ 1", "Ответ 2"]))
        # the requests go concurrently: their order on the wire is not the samples'
        return values, sorted(endpoint.bodies("/v1/judge"), key=lambda body: body["items"][0]["instruction"])

    def alone(criteria):
        return [{"items": [{"instruction": f"Вопрос {k}", "answer": f"Ответ {k}", "criteria": criteria}],
                 "oversize": "fail"} for k in (1, 2)]

    assert sent([BREVITY], max_items=1, max_judgments=1) == ([1.0, 1.0], alone([BREVITY]))
    assert sent([BREVITY, SAFE], max_items=1) == ([0.5, 0.5], alone([BREVITY, SAFE]))  # judgments: default bound
    assert sent([BREVITY], max_judgments=1) == ([1.0, 1.0], alone([BREVITY]))  # samples: default bound


@pytest.mark.parametrize("value", [-1, "4", True, 2.0, None])
def test_verl_max_retries_that_is_no_count_is_refused_naming_the_key(value):
    kwargs = {"judge_url": URL, "api_key_env": "", "max_retries": value}
    said = (r"^custom_reward_function\.reward_kwargs\.max_retries: must be a whole number of at least 0 \(.*\), got "
            rf"{re.escape(repr(value))}$")
    with pytest.raises(ValueError, match=said):
        compute_score("pollux", "Ответ", {"instruction": "Вопрос", "criteria": ["Краткость"]}, **kwargs)
    with pytest.raises(ValueError, match=said):
        asyncio.run(compute_score_async("pollux", "Ответ", {"instruction": "Вопрос", "criteria": ["Краткость"]},
                                        **kwargs))


def test_the_bounds_a_client_takes():
    assert JudgeRewardClient(URL, max_body_bytes=None).max_body_bytes is None
    assert JudgeRewardClient(URL, max_body_bytes=1).max_body_bytes == 1
    assert JudgeRewardClient(URL).max_body_bytes == DEFAULT_MAX_BODY_BYTES
    assert JudgeRewardClient(URL, timeout_s=5).timeout_s == 5
    assert JudgeRewardClient(URL, timeout_s=0.5).timeout_s == 0.5

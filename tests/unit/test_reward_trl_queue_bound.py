"""The trl reward function keeps one call's judgments in flight within judge-serve's ``max_queued_judgments``: past it
judge-serve answers 503 ``queue_full`` with a ``Retry-After`` of a few seconds, the retries end before the judgments
ahead drain, and the samples of the refused requests would get no reward at every step (fast tier)."""

from __future__ import annotations

import asyncio
import pytest

from judge.reward_clients import DEFAULT_MAX_QUEUED_JUDGMENTS, trl_reward_function
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.unit.test_rewards_clients import NO_WAIT, judge_response, scored


def test_one_calls_requests_hold_at_most_the_bound_of_judgments_in_flight(monkeypatch):
    """Six one-sample requests of two criteria each (``max_items=1``) under a bound of 4 judgments: at most two
    requests are in flight at once. The requests go through httpx's transport in the test's event loop; each one,
    arrived, stays in flight for many turns of the loop, in which every request the client had started would arrive
    too (the loop runs its ready tasks in order): an unbounded client has all six in at once, four past what
    judge-serve's queue would take. Every sample gets its reward, and each request carries its one sample."""
    import json

    import httpx

    state = {"in_flight": 0, "most": 0}
    bodies = []

    async def transport(request: httpx.Request) -> httpx.Response:
        body = json.loads(await request.aread())
        bodies.append(body)
        state["in_flight"] += 1
        state["most"] = max(state["most"], state["in_flight"])
        for _ in range(200):  # turns of the loop, not time: whatever the client started reaches here meanwhile
            await asyncio.sleep(0)
        state["in_flight"] -= 1
        return httpx.Response(200, json=judge_response([[scored("A", 2), scored("B", 0)]]))

    real_client = httpx.AsyncClient

    def client(**kwargs):
        return real_client(transport=httpx.MockTransport(transport), **kwargs)

    # the first contact (a synchronous GET /v1/models) goes to a scripted judge-serve; the reward requests, through
    # the transport above
    with ScriptedEndpoint(lambda path, body: (500, {})) as endpoint:
        monkeypatch.setattr(httpx, "AsyncClient", client)
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), criteria=["A", "B"], retry=NO_WAIT,
                                     api_key_env="", max_items=1, max_queued_judgments=4)
        values = asyncio.run(reward(prompts=[f"Q{k}" for k in range(6)], completions=[f"A{k}" for k in range(6)]))
    assert values == [0.5] * 6
    assert sorted(bodies, key=lambda b: b["items"][0]["answer"]) == [
        {"items": [{"instruction": f"Q{k}", "answer": f"A{k}", "criteria": ["A", "B"]}], "oversize": "fail"}
        for k in range(6)]  # fmt: skip
    assert state["most"] == 2


def test_a_request_of_more_judgments_than_the_bound_goes_alone():
    """A request larger than the bound is still sent, when nothing else is in flight (judge-serve admits one request
    alone whatever its count): a bound under max_judgments delays requests, it never stops one."""
    with ScriptedEndpoint(lambda path, body: (200, judge_response([[scored("A", 2), scored("B", 2)]]))) as endpoint:
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), criteria=["A", "B"], retry=NO_WAIT,
                                     api_key_env="", max_items=1, max_queued_judgments=1)
        values = asyncio.run(reward(prompts=["Q0", "Q1"], completions=["A0", "A1"]))
    assert values == [1.0, 1.0] and len(endpoint.requests) == 2


def test_the_default_bound_is_judge_serves_and_a_bound_under_one_is_refused():
    """The default is judge-serve's own default ``max_queued_judgments``; 0 (or a float) bounds nothing and is
    refused naming the argument when the function is built."""
    from serve.config import MAX_QUEUED_JUDGMENTS

    assert DEFAULT_MAX_QUEUED_JUDGMENTS == MAX_QUEUED_JUDGMENTS
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="max_queued_judgments: must be a whole number of at least 1"):
            trl_reward_function("http://127.0.0.1:1", criteria=["A"], max_queued_judgments=bad)

"""The reward clients bound connecting apart from answering: ``timeout_s`` (630 s by default, past judge-serve's own
600 s) is the wait for an answer, and a host that never accepts the connection fails each attempt in
``CONNECT_TIMEOUT_S`` rather than in 630 s (five attempts: a step stalled for over 50 minutes)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import (CONNECT_TIMEOUT_S, DEFAULT_TIMEOUT_S, JudgeRewardClient, RewardSample,
                                  request_timeout)
from judge.wire import JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
SAMPLE = RewardSample("Вопрос", "Ответ", (BREVITY,))


def _judged(path, body):
    results = [JudgeResult(criterion="Краткость", criterion_id=None, scale=[0, 1, 2], score=2, parse_ok=True,
                           in_scale=True, score_source="verdict").to_json()]
    return 200, {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
                 "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
                 "items": [{"index": 0, "id": None, "results": results}],
                 "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def test_the_request_timeout_connects_quickly_and_waits_timeout_s_for_the_answer():
    timeout = request_timeout(DEFAULT_TIMEOUT_S)
    assert timeout.connect == CONNECT_TIMEOUT_S <= 30
    assert (timeout.read, timeout.write, timeout.pool) == (630.0, 630.0, 630.0)
    assert request_timeout(5.0).connect == 5.0  # a shorter whole bound is never lengthened by the connect one


@pytest.fixture
def sent_timeouts(monkeypatch):
    """The timeout httpx's transports were handed with each request (``request.extensions["timeout"]``): what the
    network layer enforces, whatever the client was built with."""
    seen: list[dict] = []
    sync_send, async_send = httpx.HTTPTransport.handle_request, httpx.AsyncHTTPTransport.handle_async_request

    def handle_request(self, request):
        seen.append(request.extensions["timeout"])
        return sync_send(self, request)

    async def handle_async_request(self, request):
        seen.append(request.extensions["timeout"])
        return await async_send(self, request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", handle_request)
    monkeypatch.setattr(httpx.AsyncHTTPTransport, "handle_async_request", handle_async_request)
    return seen


def test_both_clients_send_with_the_request_timeout(sent_timeouts):
    expected = {"connect": 10.0, "read": 630.0, "write": 630.0, "pool": 630.0}
    with ScriptedEndpoint(_judged) as endpoint:
        client = JudgeRewardClient(endpoint.base_url, retry=NO_WAIT)
        assert client.rewards([SAMPLE])[0].value == 1.0
        assert asyncio.run(client.arewards([SAMPLE]))[0].value == 1.0
    assert sent_timeouts == [expected, expected]


def test_the_first_contact_connects_quickly_and_reads_the_model_list_within_its_bound(sent_timeouts):
    """trl's first call asks ``GET /v1/models`` first (``JudgeRewardClient.first_contact``): it connects within
    ``CONNECT_TIMEOUT_S`` as a judgment's request does, and reads within ``FIRST_CONTACT_READ_S`` (30 s), or within
    ``timeout_s`` when that is shorter. Built with a plain 30 s, each of five attempts against a host dropping
    packets waited 30 s to connect. ``list_models``' own default, for its other callers, stays 30 s throughout."""
    from judge.plumbing.retry import list_models

    with ScriptedEndpoint(_judged) as endpoint:
        JudgeRewardClient(endpoint.base_url, retry=NO_WAIT).first_contact()
        JudgeRewardClient(endpoint.base_url, retry=NO_WAIT, timeout_s=5.0).first_contact()
        list_models(endpoint.base_url, policy=NO_WAIT)
    assert endpoint.gets == ["/v1/models"] * 3
    assert sent_timeouts == [{"connect": 10.0, "read": 30.0, "write": 30.0, "pool": 30.0},
                             {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0},
                             {"connect": 30, "read": 30, "write": 30, "pool": 30}]

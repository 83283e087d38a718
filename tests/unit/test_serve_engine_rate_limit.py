"""An engine (or a proxy in front of it) that answers 429: judge-serve passes the status on with the engine's own
``Retry-After`` when it sent one and adds none of its own when it did not, and a client on the shared retry policy
(``judge.plumbing.retry``: judge-eval, the reward clients) waits what the engine asked, else its own jittered
backoff. The engine is a real HTTP server; judge-serve runs in process."""

from __future__ import annotations

import httpx
import pytest

from judge.plumbing.retry import RetryPolicy
from tests.support.served_app import served

AUTH = {"Authorization": "Bearer k"}
BODY = {"items": [{"instruction": "2+2?", "answer": "4", "criteria": [{"name": "Верность", "rubrics": "0: нет\n1: да"}]}]}
LIMITED = {"error": {"message": "rate limited", "type": "RateLimitError", "param": None, "code": 429}}


def _limiting(headers: dict[str, str]):
    def respond(path: str, body: dict) -> tuple:
        return 429, LIMITED, headers
    return respond


def _asking(http):
    """One /v1/judge call for the retry policy. The in-process client is not the policy's httpx: its answer is handed
    on as httpx's error, headers kept."""
    def ask():
        answer = http.post("/v1/judge", headers=AUTH, json=BODY)
        request = httpx.Request("POST", "http://judge-serve/v1/judge")
        raise httpx.HTTPStatusError("refused", request=request, response=httpx.Response(
            answer.status_code, headers=dict(answer.headers), request=request))
    return ask


@pytest.mark.parametrize("headers", [{"Retry-After": "7"}, {"Retry-After": "7", "retry-after-ms": "6500"}, {}],
                         ids=["retry-after", "with-ms", "none"])
def test_an_engines_429_reaches_the_client_with_the_engines_retry_after_and_no_other(headers, tiny_causal_dir,
                                                                                     monkeypatch):
    """/v1/judge and the proxied /v1/completions answer the engine's 429 with its message; the engine's Retry-After
    (and retry-after-ms) come with it, and an engine that named no wait gets none invented."""
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=_limiting(headers)) as (http, _):
        answer = http.post("/v1/judge", headers=AUTH, json=BODY)
        proxied = http.post("/v1/completions", headers=AUTH, json={"model": "judge", "prompt": "hi", "max_tokens": 4})
    assert answer.status_code == 429, answer.text
    assert answer.json()["error"]["message"] == "engine answered 429: rate limited"
    assert proxied.status_code == 429, proxied.text
    assert proxied.json()["error"]["message"] == "rate limited"
    for said in (answer, proxied):
        assert said.headers.get("retry-after") == headers.get("Retry-After")
        assert said.headers.get("retry-after-ms") == headers.get("retry-after-ms")


@pytest.mark.parametrize(("headers", "low", "high"), [({"Retry-After": "7"}, 7.0, 10.5), ({}, 0.5, 1.5)],
                         ids=["retry-after", "none"])
def test_a_client_on_the_retry_policy_waits_what_the_engine_asked_else_its_backoff(headers, low, high,
                                                                                     tiny_causal_dir, monkeypatch):
    """Two retries, sleeps recorded: after judge-serve's 429 each wait is at least the engine's Retry-After (times the
    policy's jitter of [1, 1.5)); without one, the backoff of 1 s doubling (times [0.5, 1.5)); every attempt reaches
    the engine and the call ends on the 429."""
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, backoff_s=1.0, sleep=waits.append)
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=_limiting(headers)) as (http, engine):
        with pytest.raises(httpx.HTTPStatusError) as failed:
            policy.call(_asking(http))
        assert len(engine.bodies("/v1/completions")) == 3
    assert failed.value.response.status_code == 429
    assert len(waits) == 2
    assert low <= waits[0] < high, waits
    assert (low <= waits[1] < high) if headers else (1.0 <= waits[1] < 3.0), waits


def test_an_engines_429_that_says_do_not_retry_stops_the_client_after_one_attempt(tiny_causal_dir, monkeypatch):
    """A 429 with ``x-should-retry: false`` (a quota, from an OpenAI-style engine or proxy): the shared policy lets
    that header override the status, so judge-serve passes it on with Retry-After, and the client asks once."""
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, backoff_s=1.0, sleep=waits.append)
    limiting = _limiting({"Retry-After": "1", "x-should-retry": "false"})
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=limiting) as (http, engine):
        with pytest.raises(httpx.HTTPStatusError) as failed:
            policy.call(_asking(http))
        assert len(engine.bodies("/v1/completions")) == 1
    assert failed.value.response.status_code == 429
    assert failed.value.response.headers.get("x-should-retry") == "false"
    assert waits == []

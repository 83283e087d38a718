"""judge.plumbing.retry: the one retry policy of eval runs, MERA and synthetic data, honouring judge-serve's Retry-After.

Every client is driven against a real HTTP endpoint on 127.0.0.1 that answers 503 with ``Retry-After`` first; the
waits are read from an injected sleep, never timed.
"""

from __future__ import annotations

import asyncio
import email.utils

import httpx
import pytest

import judge
from judge.plumbing.retry import Attempts, RetryPolicy, retry_after_s
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

BUSY = (503, {"error": {"message": "engine busy"}}, {"Retry-After": "2"})


class Script:
    """Answers the POSTs to one path from a list, in order; the last answer repeats."""

    def __init__(self, answers: list[tuple]):
        self.answers = list(answers)

    def __call__(self, path: str, body: dict) -> tuple:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def _recording_policy(**kwargs) -> tuple[RetryPolicy, list[float]]:
    waits: list[float] = []

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    # backoff_s tiny: any wait of 2 s or more can only come from the header.
    return RetryPolicy(backoff_s=0.01, sleep=waits.append, asleep=asleep, **kwargs), waits


def _error(status: int, retry_after: str | None) -> httpx.HTTPStatusError:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    request = httpx.Request("POST", "http://x/v1/judge")
    return httpx.HTTPStatusError("x", request=request, response=httpx.Response(status, headers=headers, request=request))


NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("2", 2.0),
        (" 0.5 ", 0.5),
        (email.utils.formatdate(NOW + 30, usegmt=True), 30.0),  # an HTTP-date, 30 s ahead
        (email.utils.formatdate(NOW - 30, usegmt=True), 0.0),  # a date in the past: no wait
        ("-3", 0.0),
        ("100000", 600.0),  # capped at MAX_RETRY_AFTER_S
        ("soon", None),
        (None, None),
    ],
)
def test_retry_after_reads_seconds_and_http_dates(header, expected):
    """Retry-After as delta-seconds or an HTTP-date (RFC 9110 10.2.3); unreadable or absent: None."""
    assert retry_after_s(_error(503, header), now=NOW) == expected


@pytest.mark.parametrize("form", ["%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %d %H:%M:%S %Y"])
@pytest.mark.parametrize("zone", ["UTC0", "EST5", "JST-9"])
def test_every_http_date_form_is_read_as_gmt_whatever_the_machines_zone(monkeypatch, form, zone):
    """RFC 9110 section 5.6.7: a recipient reads all three HTTP-date forms, every one of them GMT; the asctime form
    carries no zone and was read in the machine's local time (west of UTC a 30 s wait became the 600 s cap, east of
    it no wait at all)."""
    import time

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        said = retry_after_s(_error(503, time.strftime(form, time.gmtime(NOW + 30))), now=NOW)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert said == 30.0


@pytest.mark.parametrize(("status", "retried"), [(408, True), (409, True), (429, True), (500, True), (503, True),
                                                 (400, False), (401, False), (404, False), (422, False)])
def test_which_statuses_are_retried(status, retried):
    """408, 409, 429 and 5xx are retried; any other 4xx fails at once (one attempt)."""
    policy, waits = _recording_policy(max_retries=2)
    attempts = Attempts()

    def fail():
        raise _error(status, None)

    with pytest.raises(httpx.HTTPStatusError):
        policy.call(fail, attempts)
    assert attempts.n == (3 if retried else 1) and len(waits) == (2 if retried else 0)


def test_backoff_doubles_with_jitter_up_to_the_cap():
    """Without Retry-After the base delay doubles from backoff_s, capped, times a jitter in [0.5, 1.5)."""
    policy = RetryPolicy(backoff_s=1.0, max_backoff_s=4.0)
    for retry, base in enumerate((1.0, 2.0, 4.0, 4.0)):
        assert 0.5 * base <= policy.delay_s(retry, None) < 1.5 * base


def test_retry_after_is_spread_by_a_jitter_and_never_shortened():
    """Every client one 503 turned away reads the same Retry-After; waited exactly, they all came back in the same
    instant. The wait is Retry-After times a jitter from [1, 1.5): never less than asked, not the same for all."""
    policy = RetryPolicy(backoff_s=0.01)
    waits = [policy.delay_s(0, _error(503, "5")) for _ in range(50)]
    assert all(5.0 <= wait < 7.5 for wait in waits), waits
    assert len(set(waits)) > 1
    # A server asking for an hour is waited on for ten minutes, jitter included.
    from judge.plumbing.retry import MAX_RETRY_AFTER_S

    assert max(policy.delay_s(0, _error(503, "3600")) for _ in range(50)) <= MAX_RETRY_AFTER_S


def test_mera_client_waits_for_retry_after():
    """MERA's client: 503 with Retry-After: 2, then 200: two requests, one wait of at least 2 s."""
    from eval.mera.client import OpenAICompatClient

    with ScriptedEndpoint(Script([BUSY, (200, chat_completion("ok", "scripted"))])) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=3, timeout_s=30)
        client.retry, waits = _recording_policy(max_retries=3)
        (generation,) = client.generate([{"role": "user", "content": "hi"}], mode="chat")
    assert generation.text == "ok"
    assert len(endpoint.bodies("/v1/chat/completions")) == 2
    assert len(waits) == 1 and waits[0] >= 2.0


def test_synthetic_client_waits_for_retry_after_and_counts_attempts():
    """The synthetic-data client: 503 (Retry-After: 2) twice, then 200: three requests, three attempts reported,
    each wait at least 2 s."""
    from train.synthetic.client import ChatClient
    from train.synthetic.config import EndpointConfig

    with ScriptedEndpoint(Script([BUSY, BUSY, (200, chat_completion("ok", "scripted"))])) as endpoint:
        client = ChatClient(EndpointConfig(base_url=endpoint.base_url, model="scripted"), timeout_s=30)
        client.retry, waits = _recording_policy(max_retries=5)
        result = client.complete("hi")
    assert (result.ok, result.text, result.attempts) == (True, "ok", 3)
    assert len(endpoint.bodies("/v1/chat/completions")) == 3
    assert len(waits) == 2 and min(waits) >= 2.0


def test_synthetic_client_reports_spent_retries_as_a_failure():
    """Retries spent: no exception, ok False, attempts = 1 + max_retries, the last error named."""
    from train.synthetic.client import ChatClient
    from train.synthetic.config import EndpointConfig

    with ScriptedEndpoint(Script([BUSY])) as endpoint:
        client = ChatClient(EndpointConfig(base_url=endpoint.base_url, model="scripted"), timeout_s=30)
        client.retry, waits = _recording_policy(max_retries=2)
        result = client.complete("hi")
    assert (result.ok, result.attempts, len(endpoint.requests)) == (False, 3, 3)
    assert "InternalServerError" in result.error and len(waits) == 2


def _judge_result(record) -> dict:
    result = judge.JudgeResult(criterion=record.criteria_name, criterion_id=None, scale=[0, 1, 2], feedback="ok",
                               score=1.0, parse_ok=True, score_source=judge.ScoreSource.VERDICT, output="[RESULT] 1",
                               in_scale=True)
    from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage

    # The full envelope: judge-eval reads /v1/judge responses strictly (judge.wire.JudgeResponse).
    return JudgeResponse("judge-1", "judge.result", 0, "scripted", "seq2seq", "tagged", judge.PROMPT_VERSION,
                         [JudgeResponseItem(0, record.id, [result])], JudgeResponseUsage(1, 1, 0, 0, 0)).to_json()


def test_eval_runner_waits_for_retry_after_and_keeps_its_accounting(tmp_path):
    """judge-eval's runner on /v1/judge: 503 (Retry-After: 2) then 200 gives the verdict after two requests and a
    wait of at least 2 s; a server that stays busy gives request_failed rows after 1 + max_retries requests."""
    from eval.judging.backends import JudgeServeBackend
    from eval.judging.config import RunConfig
    from eval.judging.run import _with_retries

    record = judge.load_records(judge.sample_data_path())[0]
    config = RunConfig(out=str(tmp_path), timeout_s=30)

    with ScriptedEndpoint(Script([BUSY, (200, _judge_result(record))])) as endpoint:
        backend = JudgeServeBackend(endpoint.base_url.removesuffix("/v1"), "", "scripted", config)
        policy, waits = _recording_policy(max_retries=3)
        (outcome,) = asyncio.run(_with_retries(backend, [record], policy))
    assert (outcome["score"], outcome["parse_ok"], outcome["score_source"]) == (1.0, True, "verdict")
    assert len(endpoint.bodies("/v1/judge")) == 2 and len(waits) == 1 and waits[0] >= 2.0

    with ScriptedEndpoint(Script([BUSY])) as endpoint:
        backend = JudgeServeBackend(endpoint.base_url.removesuffix("/v1"), "", "scripted", config)
        policy, waits = _recording_policy(max_retries=2)
        (outcome,) = asyncio.run(_with_retries(backend, [record], policy))
    assert (outcome["error"], outcome["score"], outcome["parse_ok"]) == ("request_failed", None, False)
    assert "503" in outcome["reason"] and len(endpoint.bodies("/v1/judge")) == 3 and len(waits) == 2


@pytest.mark.parametrize(("make", "transient"), [
    (lambda request: httpx.ConnectError("refused", request=request), True),
    (lambda request: httpx.ReadTimeout("slow", request=request), True),
    (lambda request: httpx.HTTPStatusError("x", request=request, response=httpx.Response(503, request=request)), True),
    (lambda request: httpx.HTTPStatusError("x", request=request, response=httpx.Response(404, request=request)), False),
    (lambda request: __import__("openai").APIConnectionError(request=request), True),
    (lambda request: __import__("openai").APITimeoutError(request=request), True),
    (lambda request: __import__("openai").APIStatusError("x", response=httpx.Response(429, request=request), body=None),
     True),
    (lambda request: __import__("openai").APIStatusError("x", response=httpx.Response(401, request=request), body=None),
     False),
    (lambda request: ValueError("not a transport error"), False),
])  # fmt: skip
def test_transient_errors_of_both_clients(make, transient):
    from judge.plumbing.retry import is_transient

    assert is_transient(make(httpx.Request("GET", "http://127.0.0.1:9/v1/models"))) is transient


def test_an_httpx_client_never_imports_the_openai_sdk_to_classify_its_errors():
    """Classifying an httpx error leaves the openai SDK unimported (its import is most of a failing first contact's
    CPU time); run in a fresh interpreter, where nothing else imported it."""
    import subprocess
    import sys

    code = ("import sys, httpx; from judge.plumbing.retry import is_transient; "
            "r = httpx.Request('GET', 'http://127.0.0.1:9'); "
            "print(is_transient(httpx.ConnectError('x', request=r)), is_transient(KeyError('k')), "
            "'openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "False"]


@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after-ms": "1500", "Retry-After": "7"}, 1.5),       # milliseconds first, as the openai SDK reads them
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after-ms": "99999999"}, 600.0),                     # the same cap as Retry-After
    ({"retry-after-ms": "soon", "Retry-After": "7"}, 7.0),       # unreadable: Retry-After decides
    ({"retry-after-ms": "nan", "Retry-After": "7"}, 7.0),
])  # fmt: skip
def test_retry_after_ms_is_read_before_retry_after(headers, expected):
    """OpenAI and Azure send ``retry-after-ms``; it wins over ``Retry-After`` (openai SDK, _base_client.py,
    ``_parse_retry_after_header``), capped alike."""
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    err = httpx.HTTPStatusError("x", request=request, response=httpx.Response(429, headers=headers, request=request))
    assert retry_after_s(err, now=NOW) == expected


@pytest.mark.parametrize(("status", "header", "retried"), [
    (429, "false", False), (503, "false", False), (400, "true", True), (429, None, True), (400, None, False),
])  # fmt: skip
def test_x_should_retry_overrides_the_status(status, header, retried):
    """``x-should-retry: true/false`` wins over the status, as in the openai SDK's ``_should_retry``: a 429 of an
    exhausted quota marked false is given up at once, for the httpx and the openai clients alike."""
    import openai

    from judge.plumbing.retry import is_transient, retryable_status

    headers = {"x-should-retry": header} if header is not None else {}
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    response = httpx.Response(status, headers=headers, request=request)
    assert retryable_status(status, response.headers) is retried
    assert is_transient(httpx.HTTPStatusError("x", request=request, response=response)) is retried
    assert is_transient(openai.APIStatusError("x", response=response, body=None)) is retried

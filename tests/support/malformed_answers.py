"""What the malformed-answer failing-streak tests share (``tests/unit/test_run_breaker_malformed.py``, pointwise;
``tests/unit/test_breaker_malformed_pairwise_rank.py``, pairwise and rank's candidates): the malformed chat answers
and what a failed row's reason starts with for each, the scripted endpoints that answer with them (the network
boundary), and the check of the one line a run stopped by the streak writes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from judge.plumbing.failing_streak import stop_after
from tests.support.deep_json import nested_arrays
from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint

HTML = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"

#: Valid JSON that ``json.loads`` cannot hold (a hostile or broken endpoint's 200): nesting far past Python's
#: recursion limit, and an integer past its 4,300-digit limit of integer string conversion.
DEEP_JSON = RawBody(b'{"id": "x", "choices": ' + nested_arrays(100_000).encode() + b"}")
LONG_NUMBER = RawBody(b'{"id": "x", "choices": [' + b"9" * 5_000 + b"]}")
#: What a failed row's reason says of each (``judge.plumbing.json_reading.unreadable_json``'s words).
DEEP_JSON_SAYS = "HTTP 200, but the answer is unreadable JSON: nested too deeply"
LONG_NUMBER_SAYS = "HTTP 200, but the answer is unreadable JSON: a number too long to read ("
#: What a failed row's reason says of a body that is no JSON (``CUT_JSON``: cut on its second line).
NOT_JSON_SAYS = "HTTP 200, but the answer is invalid JSON ("
CUT_JSON = b'{"id": "x",\n "choi'
CUT_JSON_SAYS = NOT_JSON_SAYS + "Unterminated string starting at line 2, column 2)"
#: A body that is no UTF-8 text (``json.loads`` of bytes, as the OpenAI SDK and httpx read one, decodes them first):
#: said with its first such byte, as the data readers name one.
NOT_UTF8 = b'{"id": "x", "choices": "\xff"}'
NOT_UTF8_SAYS = "HTTP 200, but the answer is not UTF-8 text (byte 0xff at byte 24)"
#: The same two bodies as bytes, bare, a body cut short and one that is no UTF-8 text, with the whole line a client
#: ends its run on (MERA's client, the synthetic pipeline's, the task classifier's):
#: ``pytest.mark.parametrize("body, said", UNREADABLE_200)``.
UNREADABLE_200 = [
    pytest.param(CUT_JSON, CUT_JSON_SAYS, id="cut-short"),
    pytest.param(NOT_UTF8, NOT_UTF8_SAYS, id="not-utf-8"),
    pytest.param(nested_arrays(20_000).encode(), DEEP_JSON_SAYS, id="nested-too-deeply"),
    pytest.param(b'{"id": ' + b"9" * 5_000 + b"}", LONG_NUMBER_SAYS + "Exceeds the limit (4300 digits) for integer "
                 "string conversion: value has 5000 digits)", id="number-past-4300-digits"),
]

#: Each malformed chat answer (HTTP 200, but no chat completion), and the words its failed row's reason starts with.
MALFORMED_CHAT = {
    "plain-text": (RawBody(b"upstream said no", "text/plain"),
                   "HTTP 200, but the answer is not a JSON object with choices: 'upstream said no'"),
    "html": (RawBody(HTML, "text/html"),
             "HTTP 200, but the answer is not a JSON object with choices: '<!DOCTYPE html>"),
    "cut-json": (RawBody(CUT_JSON), CUT_JSON_SAYS),
    "no-choices": ({"id": "x", "object": "chat.completion"}, "HTTP 200, but the answer holds no choice"),
    "null-choices": ({"id": "x", "object": "chat.completion", "choices": None}, "HTTP 200, but the answer holds no choice"),
    "choice-not-object": ({"id": "x", "object": "chat.completion", "choices": ["x"]},
                          "the chat answer's choice is not an object: 'x'"),
    "deep-json": (DEEP_JSON, DEEP_JSON_SAYS),
    "long-number": (LONG_NUMBER, LONG_NUMBER_SAYS),
    "not-utf-8": (RawBody(NOT_UTF8), NOT_UTF8_SAYS),
}

#: What the stop says the streak's answers were, by route.
UNRETRIED_CHAT = "answered HTTP 200 with no chat completion"
UNRETRIED_SERVE = "answered HTTP 200 with no /v1/judge response"

#: An answer: the body for the route's k-th request (from 1, in arrival order) and that request's body.
Answer = Callable[[int, dict], Any]


def _counted(answer: Answer) -> Callable[[dict], Any]:
    lock, n_asked = threading.Lock(), [0]

    def answer_next(request: dict) -> Any:
        with lock:  # the endpoint answers each request on its own thread
            n_asked[0] += 1
            k = n_asked[0]
        return answer(k, request)

    return answer_next


def chat_endpoint(answer: Answer, model: str = "judge", **endpoint: Any) -> ScriptedEndpoint:
    """A chat endpoint answering each ``/v1/chat/completions`` request 200 with ``answer(k, request)``, any other
    POST 404 (``endpoint``: ``ScriptedEndpoint``'s other arguments)."""
    answer_next = _counted(answer)

    def respond(path: str, request: dict) -> tuple:
        return (200, answer_next(request)) if path == "/v1/chat/completions" else (404, {"detail": "Not Found"})

    return ScriptedEndpoint(respond, model=model, **endpoint)


def judge_serve_endpoint(answer: Answer, model: str = "judge") -> ScriptedEndpoint:
    """A judge-serve answering each ``/v1/judge`` request 200 with ``answer(k, request)``; an empty body (the
    route's probe) and any other POST are answered 400 as judge-serve answers a request with no items, and are not
    counted."""
    answer_next = _counted(answer)

    def respond(path: str, request: dict) -> tuple:
        if path != "/v1/judge" or not request:
            return 400, {"error": {"message": "items: required field is missing"}}
        return 200, answer_next(request)

    return ScriptedEndpoint(respond, model=model)


def judge_requests(server: ScriptedEndpoint) -> list[dict]:
    """The ``/v1/judge`` requests ``judge_serve_endpoint`` answered: its probe's empty body left out."""
    return [b for b in server.bodies("/v1/judge") if b]


def assert_streak_stop(err: str, n_failed: int, n_total: int, says: str, unretried: str) -> None:
    """``err`` holds one stop line: ``n_failed`` requests failed in a row, each asked once more at most, the last
    failure ``says``, and ``n_failed`` of ``n_total`` requests sent."""
    stop = [line for line in err.splitlines() if "requests in a row" in line]
    assert len(stop) == 1, err
    assert (f"failed {n_failed} requests in a row, about {stop_after(1)} different answers, each after up to 1 "
            f"retries (none where the server said x-should-retry: false or {unretried}), with no answer between: "
            f"last MalformedAnswer: {says}") in stop[0], stop[0]
    assert f"stopped after sending {n_failed} of {n_total} requests" in stop[0], stop[0]

"""What every POST route of judge-serve (/v1/judge, the proxied /v1/chat/completions and /v1/completions, and
/get_reward) answers a hostile body, with the key: a body past ``max_body_bytes`` is a 413 whether it declares its
length or streams it in chunks, and bytes that are not UTF-8 or JSON nested 100,000 levels deep are a 400 naming
``body``; each in OpenAI's error shape, and none reaches the engine. docs/security.md states the bound; the live
server's 413 on two routes is in tests/integration/serving/test_serve_seq2seq.py."""

from __future__ import annotations

import json

import pytest

from serve.config import ServeConfig
from tests.support.deep_json import nested_arrays
from tests.support.served_app import served

KEY = "hostile-key"
AUTH = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
ROUTES = ("/v1/judge", "/v1/chat/completions", "/v1/completions", "/get_reward")
LIMIT = ServeConfig(model="m").max_body_bytes


def _over_the_limit() -> bytes:
    """A JSON body one MiB past the default ``max_body_bytes``."""
    return json.dumps({"prompt": "x" * (LIMIT + 1024 * 1024)}).encode()


@pytest.fixture(scope="module")
def http(tiny_causal_dir):
    with pytest.MonkeyPatch.context() as monkeypatch, served(tiny_causal_dir, monkeypatch, KEY) as (client, engine):
        yield client, engine


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_past_the_limit_is_a_413_declared_or_streamed(http, route):
    client, engine = http
    before = len(engine.requests)
    body = _over_the_limit()
    declared = client.post(route, headers=AUTH, content=body)
    streamed = client.post(route, headers=AUTH, content=iter([body[:LIMIT // 2], body[LIMIT // 2:]]))
    for answer in (declared, streamed):
        assert answer.status_code == 413, answer.text
        assert answer.json() == {"error": {"message": f"body: the request body exceeds {LIMIT} bytes",
                                           "type": "invalid_request_error", "param": "body",
                                           "code": "body_too_large"}}
    assert len(engine.requests) == before


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("body", "says"), [
    (b'{"model": "judge", "x": "\xff\xfe"}', "body: not valid JSON ('utf-8' codec can't decode byte 0xff"),
    (nested_arrays(100_000).encode(), "body: JSON nested too deeply to decode (more than about"),
    (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "body: JSON nested too deeply to decode (more than about"),
], ids=["not-utf8", "nested-lists", "nested-objects"])
def test_a_body_that_cannot_be_decoded_is_a_400_naming_the_body(http, route, body, says):
    client, engine = http
    before = len(engine.requests)
    answer = client.post(route, headers=AUTH, content=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["param"], error["code"], error["type"]) == ("body", "invalid_json", "invalid_request_error")
    assert error["message"].startswith(says), error["message"]
    assert len(engine.requests) == before


@pytest.mark.parametrize("declared, status", [(b"0" * 5000 + b"1", 200), (b"1" + b"0" * 5000, 413)],
                         ids=["5,000 leading zeros", "a 5,001-digit length"])
def test_a_content_length_past_pythons_int_digits_is_read_not_a_500(declared, status):
    """The HTTP parser passes a Content-Length of any number of digits; int() refuses more than 4,300 of them with a
    ValueError (a 500 and a traceback). Its leading zeros are no size, and more digits than the bound has is past
    it: the padded 1 is served, the long number refused 413."""
    import asyncio

    from serve.connections import BodyLimitMiddleware

    async def app(scope, receive, send):
        body = (await receive())["body"]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"x", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/judge", "headers": [(b"content-length", declared)]}
    asyncio.run(BodyLimitMiddleware(app, max_bytes=1024)(scope, receive, send))
    assert sent[0]["status"] == status

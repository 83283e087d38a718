"""The key check judge-serve's engines start with (``serve.engine_auth``): every route but ``/health`` and ``/version`` answer only
the engine's key, ``/invocations`` (which vLLM leaves open) included. Here on a bare ASGI app; on a real engine
judge-serve started, in tests/integration/serving/test_serve_seq2seq.py
(``test_the_engine_judge_serve_started_answers_only_judge_serve``)."""

from __future__ import annotations

import asyncio

import pytest

from serve.engine_auth import ENGINE_KEY_ENV, EngineKeyMiddleware
from serve.launch import engine_command

KEY = "engine-secret"


def _call(path: str, authorization: bytes | None = None, kind: str = "http"):
    """One request through the middleware (built now, reading the key from the environment): the paths the app
    behind it was asked, and what the middleware sent back itself."""
    reached, sent = [], []

    async def app(scope, receive, send):
        reached.append(scope["path"])

    async def send(message):
        sent.append(message)

    headers = [(b"authorization", authorization)] if authorization is not None else []
    asyncio.run(EngineKeyMiddleware(app)({"type": kind, "path": path, "root_path": "", "headers": headers}, None, send))
    return reached, sent


def test_every_route_but_health_answers_only_the_key(monkeypatch):
    monkeypatch.setenv(ENGINE_KEY_ENV, KEY)
    for path in ("/invocations", "/v1/completions", "/tokenize", "/generative_scoring", "/metrics"):
        for given in (None, b"Bearer wrong", KEY.encode(), b"bearer " + KEY.encode()):
            reached, sent = _call(path, given)
            assert reached == [] and sent[0]["status"] == 401 and sent[1]["body"] == b'{"error":"Unauthorized"}'
        assert _call(path, f"Bearer {KEY}".encode()) == ([path], [])
    assert _call("/health") == (["/health"], [])  # judge-serve's probe asks without a key
    assert _call("/version") == (["/version"], [])  # and its check of an attached engine's vLLM line
    assert _call("/v1/realtime", kind="websocket") == ([], [{"type": "websocket.close", "code": 1008}])


def test_the_engines_judge_serve_starts_load_the_middleware(tmp_path):
    from serve.config import ServeConfig
    from serve.launch import EngineSpec

    config = ServeConfig(model=str(tmp_path)).validate()
    for role in ("generator", "pooler"):
        cmd = engine_command(EngineSpec(role, tmp_path, "j", 0.9), config, 1234)
        assert cmd[cmd.index("--middleware") + 1] == "serve.engine_auth.EngineKeyMiddleware"


@pytest.mark.parametrize("key", [None, ""])
def test_no_key_in_the_environment_lets_everything_through_as_vllm_does(monkeypatch, key):
    if key is None:
        monkeypatch.delenv(ENGINE_KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(ENGINE_KEY_ENV, key)
    assert _call("/invocations") == (["/invocations"], [])

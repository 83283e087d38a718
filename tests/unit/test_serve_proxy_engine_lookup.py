"""judge-serve's proxied routes send a request to the engine that serves its role once the body has arrived, not to
the one that served it when the headers came: a body may take body_timeout_s to arrive, and meanwhile the engine may
have died and been restarted on another port under another key."""

from __future__ import annotations

import asyncio
import json

from tests.support.served_app import served
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.support.serve_in_process import attached_engine_get, posted_scope


def _completion(path: str, body: dict) -> tuple:
    return 200, {"choices": [{"text": "4", "index": 0, "finish_reason": "stop"}], "usage": {}}


def test_a_body_that_arrives_after_a_restart_goes_to_the_restarted_engine_with_its_key(tiny_causal_dir, monkeypatch):
    """The generator is replaced (a restart: another port, a fresh key) while a /v1/completions body is still
    arriving. The request goes to the engine serving now, with its key; the dead engine's port, which any program
    may have bound since, gets nothing, and so never the key. Before: sent to the engine picked before the body."""
    from serve.launch import Engine

    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=_completion) as (http, first), \
            ScriptedEndpoint(_completion, respond_get=attached_engine_get) as restarted:
        state = http.app.state.serve
        body = json.dumps({"model": "judge", "prompt": "2+2=", "max_tokens": 4}).encode()
        scope = posted_scope("/v1/completions", body, "k")
        sent: list[dict] = []

        async def ask() -> None:
            given = asyncio.Event()
            never = asyncio.Event()

            async def receive() -> dict:
                if given.is_set():  # judge-serve watching for a disconnect: the client stays
                    await never.wait()
                given.set()
                # While the body arrives, the engine dies and is restarted elsewhere, under a key of its own.
                old = state.engines["generator"]
                state.engines["generator"] = Engine(spec=old.spec, url=restarted.url, api_key="restarted-key")
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict) -> None:
                sent.append(message)

            await asyncio.wait_for(http.app(scope, receive, send), 60)  # the bound only ends a failing test

        http.portal.call(ask)
        assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200, sent
        assert first.bodies("/v1/completions") == []
        assert len(restarted.bodies("/v1/completions")) == 1
        assert [h["authorization"] for h in restarted.headers if "authorization" in h] == ["Bearer restarted-key"]

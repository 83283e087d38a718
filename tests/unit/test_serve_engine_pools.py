"""judge-serve's judgments have their own pool of connections to the engines: proxied generations holding every
connection of theirs (open chat streams) cannot keep a judgment waiting, and a proxied call that waits for one past
its connect timeout is judge-serve busy (503 ``server_busy``), never an engine "unreachable"."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace

import aiohttp

from serve.engine_client import EngineBusy, EngineClient, engine_session
from serve.errors import judgment_failed
from tests.support.scripted_endpoint import EventStream, ScriptedEndpoint


def test_a_judgment_is_answered_while_a_stream_holds_the_proxied_pool():
    """One proxied connection, held by a stream the engine has not ended: a judgment on the same engine gets its
    answer; a second proxied call waits for the held connection and, past its connect timeout, raises EngineBusy."""
    release = threading.Event()

    def respond(path, body):
        if body.get("hold"):
            return EventStream(("{}",), hold=release)  # a streamed chat reply still going
        return 200, {"judged": body["n"]}

    async def go(url):
        async with engine_session(30.0, max_connections=1, judgment_connections=1) as http:
            held = await http.request("POST", url + "/v1/chat/completions", json={"hold": True})
            try:
                client = EngineClient(http, url, asyncio.Event(), lambda: "dead")
                answer = await client.post("/v1/completions", {"n": 1})
                try:  # the held connection is the pool's only one: this waits for it until its connect timeout
                    await http.request("POST", url + "/v1/chat/completions", json={"n": 2},
                                       timeout=aiohttp.ClientTimeout(total=None, connect=0.05))
                except EngineBusy as err:
                    busy = err
                else:
                    busy = None
            finally:
                release.set()
                held.release()
            return answer, busy

    with ScriptedEndpoint(respond) as engine:
        answer, busy = asyncio.run(go(engine.url))
        posted = [body for path, body in engine.requests]
    assert answer == {"judged": 1}
    assert isinstance(busy, EngineBusy) and "came free in time" in str(busy)
    assert posted == [{"hold": True}, {"n": 1}]  # the proxied call that waited never reached the engine


def test_a_judgment_that_found_no_connection_is_a_503_server_busy():
    state = SimpleNamespace(engines={}, retry_headers=lambda engines: {"Retry-After": "5"})
    answer = judgment_failed(EngineBusy("no connection to http://127.0.0.1:9/v1/completions came free in time"), state)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    error = json.loads(answer.body)["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", "server_busy")
    assert error["message"] == "judge-serve's connections to its engines are all in use; retry"


def test_a_proxied_call_that_waits_past_its_timeout_for_a_connection_is_503_server_busy(tiny_causal_dir, monkeypatch):
    """In process: judge-serve's proxied pool of one connection held by a streamed chat the engine has not ended; a
    proxied completion waits for it past the connect timeout and gets 503 ``server_busy`` with Retry-After, not the
    "unreachable" of an engine that cannot be reached; the engine never saw it. A judgment is still answered."""
    from tests.support.served_app import served

    release = threading.Event()

    def completions(path, body):
        if body.get("stream"):
            return EventStream(('{"choices": []}',), hold=release)
        return 200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]", "finish_reason": "stop"}]}

    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=completions) as (http, engine):
        state = http.app.state.serve

        async def small_pools() -> None:
            # The proxied pool of one connection, waited for 0.2 s at most (request_timeout_s's part in the connect
            # timeout); every read keeps 30 s, so the held stream never times out and frees it.
            old, state.http = state.http, engine_session(30.0, max_connections=1, judgment_connections=4)
            waited = aiohttp.ClientTimeout(total=None, connect=0.2, sock_connect=10.0, sock_read=30.0)
            await state.http.pooled.close()
            state.http.pooled = aiohttp.ClientSession(timeout=waited, auto_decompress=False,
                                                      trace_configs=state.http.pooled.trace_configs,
                                                      connector=aiohttp.TCPConnector(limit=1))
            for client in state.clients.values():
                client.http = state.http
            await old.close()

        http.portal.call(small_pools)
        auth = {"Authorization": "Bearer k"}
        chat = {"model": "judge", "messages": [{"role": "user", "content": "Привет"}], "stream": True,
                "max_tokens": 4}
        try:
            with http.stream("POST", "/v1/chat/completions", headers=auth, json=chat) as held:
                assert held.status_code == 200
                busy = http.post("/v1/completions", headers=auth, json={"model": "judge", "prompt": "x",
                                                                         "max_tokens": 4})
                judged = http.post("/v1/judge", headers=auth, json={"items": [
                    {"instruction": "2+2?", "answer": "4", "criteria": [{"name": "Верность",
                                                                        "rubrics": "0: нет\n1: да"}]}]})
        finally:
            release.set()
        posted = [path for path, _ in engine.requests]
    assert busy.status_code == 503, busy.text
    assert busy.headers["retry-after"]
    error = busy.json()["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", "server_busy")
    assert error["message"] == ("judge-serve's connections to the generator engine are all in use by other "
                                "generations; retry")
    assert judged.status_code == 200 and judged.json()["items"][0]["results"][0]["score"] == 1, judged.text
    assert posted == ["/v1/chat/completions", "/v1/completions"]  # the chat, then the judgment's: not the waiting one

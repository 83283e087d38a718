"""judge-serve's hop to its engines (``serve.engine_client.EngineClient`` on ``engine_session``): each way an engine
call can end becomes the error judge-serve turns into its status code (EngineFailure → 502, EngineUnavailable → 503,
TimeoutError → 504), against a scripted engine on 127.0.0.1 (the network boundary), with the payload asserted as sent.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from serve.engine_client import (ENGINE_KEEPALIVE_S, EngineClient, EngineFailure, EngineUnavailable, engine_session,
                                 unless_dead)
from tests.support.scripted_endpoint import ScriptedEndpoint

PAYLOAD = {"model": "gen", "prompt": [151644, 872, 198], "max_tokens": 4, "temperature": 0.0, "stop": ["[END]"],
           "logprobs": 3, "logprob_token_ids": [15, 16, 17]}
COMPLETION = {"choices": [{"text": "[FEEDBACK] Да. [RESULT] 1 [END]", "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 9}}


def _post(root: str, *, dead: asyncio.Event | None = None, read_timeout_s: float = 30.0, die_after_s: float | None = None):
    async def go():
        nonlocal dead
        dead = dead or asyncio.Event()
        async with engine_session(read_timeout_s, max_connections=4) as http:
            client = EngineClient(http, root, dead, lambda: "generator engine exited with code -9")
            if die_after_s is not None:
                asyncio.get_running_loop().call_later(die_after_s, dead.set)
            return await client.post("/v1/completions", PAYLOAD)

    return asyncio.run(go())


def test_a_completion_comes_back_as_sent_and_the_payload_crosses_unchanged():
    """A 200 is the engine's JSON; the engine received exactly the payload judge-serve built."""
    with ScriptedEndpoint(lambda path, body: (200, COMPLETION)) as engine:
        assert _post(engine.base_url.removesuffix("/v1")) == COMPLETION
    assert engine.requests == [("/v1/completions", PAYLOAD)]


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [(400, {"error": {"message": "prompt is too long", "type": "BadRequestError"}}, "engine answered 400: prompt is too long"),
     (500, {"detail": "boom"}, 'engine answered 500: {"detail": "boom"}')],
)
def test_an_engine_error_names_its_status_and_message(status, body, message):
    """A non-200 answer is an EngineFailure carrying the engine's own message (or the start of its body)."""
    with ScriptedEndpoint(lambda path, _: (status, body)) as engine, pytest.raises(EngineFailure) as caught:
        _post(engine.base_url.removesuffix("/v1"))
    assert str(caught.value) == message


def test_an_unreachable_engine_is_unavailable():
    """Nothing listening on the port: EngineUnavailable naming the engine's URL (503), not a crash."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EngineUnavailable, match=rf"engine at http://127\.0\.0\.1:{port} unreachable"):
        _post(f"http://127.0.0.1:{port}")


def test_a_silent_engine_times_out():
    """No byte within the read timeout: a TimeoutError naming the engine (judge-serve answers 504)."""
    release = threading.Event()

    def slow(path, body):
        release.wait(5)
        return 200, COMPLETION

    with ScriptedEndpoint(slow) as engine:
        try:
            with pytest.raises(asyncio.TimeoutError, match="did not answer in time"):
                _post(engine.base_url.removesuffix("/v1"), read_timeout_s=0.3)
        finally:
            release.set()


def test_a_dead_engine_is_not_called_and_one_dying_mid_call_is_given_up_at_once():
    """With the engine known dead the call fails before sending; an engine that dies while a call waits ends that
    call at the death (not at the timeout), with the death's reason."""
    with ScriptedEndpoint(lambda path, body: (200, COMPLETION)) as engine:
        dead = asyncio.Event()
        dead.set()
        with pytest.raises(EngineUnavailable, match="exited with code -9"):
            _post(engine.base_url.removesuffix("/v1"), dead=dead)
        assert engine.requests == []

    release = threading.Event()

    def hanging(path, body):
        release.wait(30)
        return 200, COMPLETION

    with ScriptedEndpoint(hanging) as engine:
        # The engine holds its answer until `release`, set only after the call returned: an EngineUnavailable can
        # come from the death alone (untimed; an answer would have meant a 200 after release.wait's 30 s).
        try:
            with pytest.raises(EngineUnavailable, match="exited with code -9"):
                _post(engine.base_url.removesuffix("/v1"), die_after_s=0.2)
        finally:
            release.set()


def test_a_cancelled_caller_cancels_its_engine_call():
    """A caller cancelled while it waits (a client gone mid-request) takes its engine call with it: nothing keeps
    running, or holding a pooled connection, for an answer nobody reads. Before ``unless_dead``, the proxy left it."""

    async def go() -> bool:
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def call():
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        waiting = asyncio.ensure_future(unless_dead(call(), asyncio.Event()))
        await started.wait()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.sleep(0)  # the call's cancellation runs
        return cancelled.is_set()

    assert asyncio.run(go())


# ---------------------------------------------------------------------------------------------------------------
# The 503 after a quiet spell. vLLM's server (uvicorn, ``timeout_keep_alive=VLLM_HTTP_TIMEOUT_KEEP_ALIVE``, 5 s)
# closes a connection whose keep-alive timer is due; a request that reaches it at that moment is dropped unread.
# judge-serve's pool (aiohttp, 15 s by default) reused such connections, and the POST failed with
# ServerDisconnectedError -> 503 while the engine was alive.
# ---------------------------------------------------------------------------------------------------------------


class KeepAliveEngine:
    """An HTTP/1.1 engine on 127.0.0.1 that answers the first request of each connection and keeps it open, then
    closes it, unread, when the next request arrives on it: uvicorn's keep-alive timer winning against a request
    already in the socket buffer, made to happen every time. With ``drop_first``, a fresh connection's first
    request is dropped too (an engine really going away); with ``drop_reused=False`` every request is answered.
    ``connections`` counts accepted connections, ``answered`` the requests answered."""

    def __init__(self, drop_first: bool = False, drop_reused: bool = True):
        self.connections = 0
        self.answered: list[dict] = []
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                engine.connections += 1
                self.served = 0

            def handle_one_request(self):
                if (self.served and drop_reused) or drop_first:
                    select.select([self.connection], [], [])  # the request has arrived: close it unread
                    self.close_connection = True
                    return
                super().handle_one_request()

            def do_POST(self):
                engine.answered.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.served += 1
                data = json.dumps(COMPLETION).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # serve_forever checks for shutdown() every poll_interval (0.5 s by default): each close would wait it
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def _post_twice(root: str) -> tuple[list, int]:
    """Two calls one after the other on one session; each outcome (the answer or the exception) and the retries."""

    async def go():
        async with engine_session(30.0, max_connections=4) as http:
            client = EngineClient(http, root, asyncio.Event(), lambda: "dead")
            outcomes = []
            for _ in range(2):
                try:
                    outcomes.append(await client.post("/v1/completions", PAYLOAD))
                except (EngineUnavailable, EngineFailure) as err:
                    outcomes.append(err)
            return outcomes, http.retries

    return asyncio.run(go())


def test_a_pooled_connection_the_engine_closed_as_the_request_arrived_is_retried_on_a_fresh_one():
    """The quiet spell's 503: the second call reuses the pooled connection, which the engine closes with the
    request unread. It is sent once more on a fresh connection and answered: no 503 while the engine is alive, and the engine
    answered each call exactly once. (Before the fix: EngineUnavailable "ServerDisconnectedError".)"""
    with KeepAliveEngine() as engine:
        outcomes, retries = _post_twice(engine.url)
    assert outcomes == [COMPLETION, COMPLETION]
    assert retries == 1
    assert engine.connections == 2  # the second call's retry went out on a new connection
    assert engine.answered == [PAYLOAD, PAYLOAD]


def test_a_fresh_connection_closed_unanswered_is_not_retried():
    """Only a reused connection is retried: a fresh one dropped unanswered means the engine is going away, and the
    call is EngineUnavailable (503) after one attempt, never sent twice."""
    with KeepAliveEngine(drop_first=True) as engine:
        outcomes, retries = _post_twice(engine.url)
    assert [type(o) for o in outcomes] == [EngineUnavailable, EngineUnavailable]
    assert retries == 0 and engine.connections == 2 and engine.answered == []


def test_the_pool_drops_a_connection_before_the_engine_would(monkeypatch):
    """judge-serve's pool keeps an idle connection for less than vLLM's server does: a connection idle for the
    engine's keep-alive (read from the installed vLLM's ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` default) is not reused
    but replaced by a fresh one. The pool's clock is moved forward instead of sleeping."""
    spec = importlib.util.find_spec("vllm")
    envs = Path(spec.origin).parent / "envs.py"  # read, not imported (importing vLLM takes seconds)
    engine_keepalive_s = int(re.search(r'"VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "(\d+)"', envs.read_text())[1])
    assert ENGINE_KEEPALIVE_S < engine_keepalive_s

    import aiohttp.connector

    now = [time.monotonic()]
    monkeypatch.setattr(aiohttp.connector, "monotonic", lambda: now[0])

    async def go(root):
        async with engine_session(30.0, max_connections=4) as http:
            client = EngineClient(http, root, asyncio.Event(), lambda: "dead")
            await client.post("/v1/completions", PAYLOAD)
            now[0] += ENGINE_KEEPALIVE_S / 2
            await client.post("/v1/completions", PAYLOAD)  # within the pool's keep-alive: the same connection
            now[0] += engine_keepalive_s
            await client.post("/v1/completions", PAYLOAD)  # idle as long as the engine keeps it: a new one

    with KeepAliveEngine(drop_reused=False) as engine:
        asyncio.run(go(engine.url))
    assert engine.connections == 2


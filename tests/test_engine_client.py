"""judge-serve's hop to its engines (``serve.judging.EngineClient`` on ``engine_session``): each way an engine call
can end becomes the error judge-serve turns into its status code (EngineFailure → 502, EngineUnavailable → 503,
TimeoutError → 504), against a scripted engine on 127.0.0.1 (the network boundary), with the payload asserted as sent.
"""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from serve.judging import EngineClient, EngineFailure, EngineUnavailable, engine_session, unless_dead
from tests.scripted_endpoint import ScriptedEndpoint

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

"""serve.connections.unless_disconnected: a client that leaves before its answer cancels the work, and an error
the work raises as it is cancelled is read (named in the log), never left for asyncio to log as never retrieved; a
result the work ends with that nobody is handed (the route cancelled in the turn it finished) goes to ``discard``."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from types import SimpleNamespace

import pytest


class _CleanupFailed(RuntimeError):
    pass


def test_work_that_fails_as_it_is_cancelled_is_read_when_its_client_has_left(caplog):
    from starlette.requests import ClientDisconnect

    from serve.connections import unless_disconnected

    started = asyncio.Event()

    async def work() -> None:
        try:
            started.set()
            await asyncio.Event().wait()  # the engine's answer, which never comes
        except asyncio.CancelledError:
            raise _CleanupFailed("the engine call could not be withdrawn") from None

    async def receive() -> dict:
        await started.wait()  # the client leaves once its work has started
        return {"type": "http.disconnect"}

    request = SimpleNamespace(receive=receive, method="POST", url=SimpleNamespace(path="/v1/judge"))
    gc.collect()  # earlier tests' garbage is collected outside the block below
    with caplog.at_level(logging.INFO):
        with pytest.raises(ClientDisconnect):
            asyncio.run(unless_disconnected(request, work()))
        gc.collect()
    messages = [record.getMessage() for record in caplog.records]
    assert not [m for m in messages if "never retrieved" in m], messages
    assert any("POST /v1/judge left before its answer" in m and "it failed: _CleanupFailed" in m
               for m in messages), messages


def test_work_that_finishes_in_the_loop_turn_its_route_is_cancelled_goes_to_discard():
    """The work finishes and, in that loop turn, the route awaiting it is cancelled (the work's last step cancels
    it): its result, which nobody is handed, goes to ``discard`` (the proxy's closes the engine's response)."""
    from serve.connections import unless_disconnected

    async def go() -> tuple[list[str], bool]:
        discarded: list[str] = []

        async def work() -> str:
            await asyncio.sleep(0)  # the route waits on the work by now
            route.cancel()  # uvicorn's cancel lands in the turn the work finished
            return "the engine's response"

        async def receive() -> dict:
            await asyncio.Event().wait()  # the client stays
            return {"type": "http.disconnect"}

        request = SimpleNamespace(receive=receive, method="POST", url=SimpleNamespace(path="/v1/chat/completions"))
        route = asyncio.ensure_future(unless_disconnected(request, work(), discard=discarded.append))
        try:
            await route
        except asyncio.CancelledError:
            pass
        return discarded, route.cancelled()

    assert asyncio.run(go()) == (["the engine's response"], True)


def test_work_that_finishes_though_cancelled_when_its_client_left_goes_to_discard():
    """The client leaves; the work, cancelled, ends with a result all the same (its answer was in as the cancel
    came, as ``asyncio.wait_for`` returns on Python 3.11): that result goes to ``discard``, not nowhere."""
    from starlette.requests import ClientDisconnect

    from serve.connections import unless_disconnected

    async def go() -> list[str]:
        discarded: list[str] = []
        started = asyncio.Event()

        async def work() -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                return "the engine's response"
            return "never"

        async def receive() -> dict:
            await started.wait()
            return {"type": "http.disconnect"}

        request = SimpleNamespace(receive=receive, method="POST", url=SimpleNamespace(path="/v1/chat/completions"))
        with pytest.raises(ClientDisconnect):
            await unless_disconnected(request, work(), discard=discarded.append)
        return discarded

    assert asyncio.run(go()) == ["the engine's response"]


@pytest.mark.parametrize("cancelled_as", ["the engine call ends", "unless_dead ends"])
def test_the_proxys_engine_response_that_came_as_its_route_was_cancelled_is_closed(tiny_causal_dir, monkeypatch,
                                                                                    cancelled_as):
    """The proxy's own route, before a stand-in engine on 127.0.0.1 that streams without end: the route is cancelled
    in the loop turn its engine call ends with the engine's response (``unless_dead``'s ``discard`` has it), or in the
    turn ``unless_dead`` hands that call back (``unless_disconnected``'s ``discard`` has it). Either way the response
    nobody takes is closed, and the engine sees its connection closed (vLLM then aborts the generation) instead of
    streaming on for nobody. Every response is kept referenced here, so that no collection of it closes it instead."""
    import serve.app
    from serve.launch import Engine
    from tests.support.serve_in_process import posted_scope
    from tests.support.served_app import served

    real_unless_disconnected, real_unless_dead = serve.app.unless_disconnected, serve.app.unless_dead
    routes: list[asyncio.Task] = []
    responses: list = []

    async def recording_unless_disconnected(request, work, discard=None):
        routes.append(asyncio.current_task())  # the route
        return await real_unless_disconnected(request, work, discard=discard)

    async def cancelling_unless_dead(call, dead, discard=None):
        async def engine_call():
            response = await call
            responses.append(response)
            if cancelled_as == "the engine call ends":
                routes[0].cancel()
            return response

        sending = await real_unless_dead(engine_call(), dead, discard=discard)
        if cancelled_as == "unless_dead ends":
            routes[0].cancel()
        return sending

    monkeypatch.setattr(serve.app, "unless_disconnected", recording_unless_disconnected)
    monkeypatch.setattr(serve.app, "unless_dead", cancelling_unless_dead)
    body = json.dumps({"model": "judge", "prompt": "2+2=", "max_tokens": 4}).encode()
    scope = posted_scope("/v1/completions", body, "k")

    with served(tiny_causal_dir, monkeypatch, api_key="k") as (http, _):
        state = http.app.state.serve

        async def ask() -> tuple[bool, bool, int]:
            closed = asyncio.Event()

            async def engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"POST /v1/completions "):  # the watcher's probes: a short answer
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                    writer.close()
                    return
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked"
                             b"\r\n\r\n9\r\ndata: 1\n\n\r\n")
                await writer.drain()
                while await reader.read(1024):  # the body, then nothing until the connection is closed
                    pass
                closed.set()
                writer.close()

            server = await asyncio.start_server(engine, "127.0.0.1", 0)
            old, port = state.engines["generator"], server.sockets[0].getsockname()[1]
            state.engines["generator"] = Engine(spec=old.spec, url=f"http://127.0.0.1:{port}", api_key=old.api_key)
            given = asyncio.Event()

            async def receive() -> dict:
                if given.is_set():  # judge-serve watching for a disconnect: the client stays
                    await asyncio.Event().wait()
                given.set()
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict) -> None:
                pass

            async with server:
                route = asyncio.ensure_future(http.app(scope, receive, send))
                await asyncio.wait({route}, timeout=60)  # the bound only ends a failing test
                try:
                    await asyncio.wait_for(closed.wait(), 10)
                except asyncio.TimeoutError:
                    pass
                return routes == [route] and route.cancelled(), closed.is_set(), len(responses)

        assert http.portal.call(ask) == (True, True, 1)

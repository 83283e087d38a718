"""serve.connections.unless_disconnected: a client that leaves before its answer cancels the work, and an error
the work raises as it is cancelled is read (named in the log), never left for asyncio to log as never retrieved; a
result the work ends with that nobody is handed (the route cancelled in the turn it finished) goes to ``discard``."""

from __future__ import annotations

import asyncio
import gc
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


def test_the_proxys_engine_response_that_came_as_its_route_was_cancelled_is_closed():
    """The proxy's own pairing: its engine call (``unless_dead``) has ended with the engine's response, and the route
    is cancelled in the loop turn that ``unless_disconnected``'s work finished: the response in that unclaimed
    answer is closed, its pooled connection not left taken."""
    import serve.app
    from serve.connections import unless_disconnected
    from serve.engine_client import unless_dead

    class Response:
        closed = False

        def close(self) -> None:
            self.closed = True

    async def go() -> tuple[bool, bool]:
        response = Response()

        async def engine_call() -> Response:
            return response

        async def sent():
            answer = await unless_dead(engine_call(), asyncio.Event(), discard=serve.app._close)
            route.cancel()  # the route's cancel lands in the turn its work finished
            return answer

        async def receive() -> dict:
            await asyncio.Event().wait()  # the client stays
            return {"type": "http.disconnect"}

        request = SimpleNamespace(receive=receive, method="POST", url=SimpleNamespace(path="/v1/chat/completions"))
        route = asyncio.ensure_future(unless_disconnected(request, sent(), discard=serve.app._close_unclaimed))
        try:
            await route
        except asyncio.CancelledError:
            pass
        return route.cancelled(), response.closed

    assert asyncio.run(go()) == (True, True)

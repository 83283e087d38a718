"""serve.connections.unless_disconnected: a client that leaves before its answer cancels the work, and an error
the work raises as it is cancelled is read (named in the log), never left for asyncio to log as never retrieved."""

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

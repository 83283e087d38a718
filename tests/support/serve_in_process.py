"""judge-serve's app in this process (Starlette's ``TestClient``): waiting for its start without polling."""

from __future__ import annotations

import asyncio


def await_bring_up(http, timeout_s: float = 120.0) -> None:
    """Wait, on the app's own loop, for judge-serve's start (``serve.supervision._bring_up``, the first of the
    server's tasks) to end, ready or failed: no polling of /ready with sleeps."""
    bring_up = http.app.state.serve.tasks[0]

    async def ended() -> None:
        await asyncio.wait_for(asyncio.shield(bring_up), timeout_s)

    http.portal.call(ended)


def on_event_loop() -> bool:
    """Whether the caller runs on an event loop: what a stand-in records to tell a body read on judge-serve's loop
    from one read in a worker thread (``serve.schema.read_off_loop``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True

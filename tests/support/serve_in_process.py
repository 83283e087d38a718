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

"""judge-serve's answer to a request body past its ``max_body_bytes`` (HTTP 413, ``body_too_large``), taken from the
middleware that writes it (``serve.connections.BodyLimitMiddleware``), for a scripted endpoint to answer with: the
eval, ranking and reward clients' tests of a body past a server's bound."""

from __future__ import annotations

import asyncio
import json
from typing import Any


def judge_serve_too_large(max_body_bytes: int | None = None) -> tuple[int, dict]:
    """``(status, body)`` of judge-serve's refusal of a body past ``max_body_bytes`` (default: its default, 8 MiB)."""
    from serve.config import ServeConfig
    from serve.connections import BodyLimitMiddleware

    bound = ServeConfig(model="m").max_body_bytes if max_body_bytes is None else max_body_bytes
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def unreached(scope, receive, send) -> None:
        raise AssertionError("a body declared past the bound reached the app")

    scope = {"type": "http", "method": "POST", "path": "/v1/judge",
             "headers": [(b"content-length", str(bound + 1).encode())]}
    asyncio.run(BodyLimitMiddleware(unreached, bound)(scope, receive, send))
    start, body = (m for m in sent if m["type"] in ("http.response.start", "http.response.body"))
    return start["status"], json.loads(body["body"])

"""The key check judge-serve's own engines start with: every route but ``/health`` and ``/version`` answers
only their key.

vLLM checks its ``--api-key`` (``$VLLM_API_KEY``) on the paths under ``/v1``, ``/v2``, ``/inference`` and ``/cohere``
alone (``GUARDED_PREFIX`` in vllm/entrypoints/serve/middleware/authenticate.py, vLLM 0.32), and always serves routes
outside them that generate: SageMaker's ``POST /invocations`` hands a chat or completion body to the same handlers
(vllm/entrypoints/launchers/api_server/routers.py), and ``/generative_scoring``, ``/tokenize``, ``/classify`` sit
beside it. A local user who finds an engine's port (``ss -ltn``) could generate on the judge's GPU through them
without a key and past every bound judge-serve sets. judge-serve starts each engine with this class as vLLM's
``--middleware`` (``serve.launch.engine_command``), which vLLM adds to its app (``app.add_middleware``,
vllm/entrypoints/serve/middleware/register.py) in front of its routes.

``/health`` and ``/version`` stay open (:data:`OPEN_PATHS`): judge-serve asks them without a key, and they answer
nothing but up or down and a version string. Everything else judge-serve sends an engine carries the key
(``serve.launch.Engine.auth_headers``). This module is imported inside the engine's process, so it imports nothing
of judge-serve's.
"""

from __future__ import annotations

import hmac
import os

__all__ = ["ENGINE_KEY_ENV", "OPEN_PATHS", "EngineKeyMiddleware"]

#: The environment variable vLLM reads its API key from (vllm/envs.py); judge-serve gives its engines their key
#: there, never on a command line (``ps`` shows those to every local user) nor in run.json.
ENGINE_KEY_ENV = "VLLM_API_KEY"
#: The paths an engine answers without its key: up or down, and vLLM's version (judge-serve's check of an engine it
#: attaches to asks it without a key, ``serve.engine_version``; vLLM leaves both open too). Neither generates.
OPEN_PATHS = frozenset({"/health", "/version"})
_UNAUTHORIZED = b'{"error":"Unauthorized"}'  # vLLM's own 401 body, so a client reads one shape from either check


class EngineKeyMiddleware:
    """A pure ASGI middleware: a request (HTTP or WebSocket) to any path but :data:`OPEN_PATHS` without
    ``Authorization: Bearer $VLLM_API_KEY`` gets 401 (a WebSocket is closed with 1008, policy violation). With no
    key in the environment it lets everything through, as vLLM does."""

    def __init__(self, app) -> None:
        self.app = app
        key = os.environ.get(ENGINE_KEY_ENV)
        self.expected = f"Bearer {key}".encode() if key else None

    async def __call__(self, scope, receive, send) -> None:
        if self.expected is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        given = next((value for name, value in scope.get("headers", ()) if name == b"authorization"), b"")
        # compare_digest on bytes: timing-safe, and a non-ASCII header is compared as sent, not decoded
        if path in OPEN_PATHS or hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(_UNAUTHORIZED)).encode()),
                                (b"www-authenticate", b"Bearer")]})  # fmt: skip
        await send({"type": "http.response.body", "body": _UNAUTHORIZED})

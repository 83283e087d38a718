"""judge-serve's HTTP surface: one port in front of the vLLM engines (``serve.supervision`` starts, watches and
heals them).

Routes:

* OpenAI's, proxied to the generating engine byte for byte (streaming included), so OpenAI clients work unchanged:
  ``POST /v1/chat/completions``, ``/v1/completions``, ``/v1/responses``; ``GET /v1/models`` and
  ``GET /v1/models/{id}`` (each entry the engine's, ``max_model_len`` included, plus judge-serve's caps
  ``judge_max_tokens`` and ``max_proxy_tokens``: ``judge.wire.ModelLimits``); vLLM's ``POST /tokenize``, ``/detokenize``, ``GET /tokenizer_info`` (what lm-eval's
  remote tokenizer reads) and ``GET /version``. A generation request may ask for at most ``max_proxy_tokens``
  tokens in all (``max_tokens`` x ``n``); one that names no ``max_tokens`` gets ``max_proxy_tokens // n``.
* ``POST /v1/judge``: POLLUX judgments (``serve.schema`` for the request, ``serve.judging`` for the work).
* ``POST /get_reward`` and ``/get_reward/<reward key>``: rewards in OpenRLHF's protocol (``serve.rewards``).
* ``GET /metrics``: the generating engine's Prometheus metrics; ``GET /metrics/pooler``: the pooling engine's.
* ``GET /health``: 200 while judge-serve lives and can heal (also while engines start or restart), 503 while it
  cannot serve (an engine failed to start or kept dying past ``engine_max_restarts``; an attached engine does not
  answer). Without the API key its body says only ``{"status": "up"}`` or ``"down"``; with it, per engine, its
  state, process group, restarts and last exit code. ``GET /ready``: 200 only when every engine answers and the
  server is not draining.

Robustness: with an API key every route but ``/health``, ``/ready`` and ``/metrics*`` needs
``Authorization: Bearer <key>`` (401 otherwise); without one, only requests whose ``Host`` is in
``allowed_hosts`` are served (a web page cannot reach a local judge-serve by DNS rebinding). Bodies above
``max_body_bytes`` get 413; every error, judge-serve's, the engine's or an unknown route's, is OpenAI's
``{"error": {"message", "type", "param", "code"}}`` with a string ``code``, and names no URL, process or file
(an engine's 5xx text stays in judge-serve's log). ``X-Request-Id`` is passed to the engine and echoed (one is
made when the client sends none). A request that outlives ``request_timeout_s`` gets 504; an engine that died
makes its routes answer 503 with ``Retry-After`` at once (in-flight calls to it are abandoned, not left hanging,
and never retried, so no answer is duplicated). Client connections: ``header_timeout_s``, ``max_connections``
(``serve.cli``). On SIGTERM/SIGINT uvicorn stops accepting connections, lets in-flight requests finish
(``shutdown_grace_s``), then the engines are stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import json
import logging
import re
import uuid
from typing import Any

import aiohttp
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.wire import ModelLimits
from serve.config import ServeConfig
from serve.engine_client import EngineFailure, EngineUnavailable, unless_dead
from serve.layout import CheckpointLayout, LayoutError, resolve_layout
from serve.rewards import install_reward_routes
from serve.schema import RequestError, decode_json_body, parse_judge_request
from serve.supervision import ServerState, restart_delay, start_engines, stop_engines

__all__ = ["create_app", "ServerState", "restart_delay", "header_deadline_protocol", "error_body", "sanitized"]

log = logging.getLogger("judge_serve")

# Request headers passed to the engine; everything else (Authorization included) stays here.
_FORWARD_REQUEST_HEADERS = {"content-type", "accept", "accept-encoding", "user-agent", "x-request-id"}
# Hop-by-hop and per-connection response headers that must not be copied.
_DROP_RESPONSE_HEADERS = {"connection", "keep-alive", "transfer-encoding", "server", "date"}
#: Most bytes of an engine's error body judge-serve reads to rewrite it in OpenAI's shape.
_MAX_ENGINE_ERROR_BYTES = 64 * 1024

# OpenAI's error types and codes by status, for errors that arrive without a string code of their own.
_TYPE_OF_STATUS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                   404: "not_found_error", 405: "invalid_request_error", 408: "timeout", 409: "conflict_error",
                   413: "invalid_request_error", 422: "invalid_request_error", 429: "rate_limit_error"}  # fmt: skip
_CODE_OF_STATUS = {400: "invalid_request", 401: "invalid_api_key", 403: "forbidden", 404: "not_found",
                   405: "method_not_allowed", 408: "timeout", 409: "conflict", 413: "body_too_large",
                   422: "invalid_request", 429: "rate_limited"}  # fmt: skip

# What an engine's message must not carry to a client: file paths, URLs, addresses, process ids.
_INTERNALS = [
    (re.compile(r"https?://[^\s'\"<>)]+"), "<url>"),
    (re.compile(r"(?<![\w.])(?:/[\w.@+-]+){2,}/?"), "<path>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<address>"),
    (re.compile(r"\bpid[= ]\d+", re.IGNORECASE), "pid=<pid>"),
]


def sanitized(text: str, limit: int = 2000) -> str:
    """``text`` with file paths, URLs, addresses and process ids replaced by placeholders, cut at ``limit``."""
    for pattern, placeholder in _INTERNALS:
        text = pattern.sub(placeholder, text)
    return text[:limit]


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error body, which the ``openai`` SDK turns into its exceptions' ``message``."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _error(status: int, message: str, kind: str | None = None, param: str | None = None, code: str | None = None,
           headers=None) -> JSONResponse:  # fmt: skip
    kind = kind or _TYPE_OF_STATUS.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = code or _CODE_OF_STATUS.get(status, "engine_error" if status >= 500 else "invalid_request")
    return JSONResponse(error_body(message, kind, param, code), status_code=status, headers=headers)


def _refused(err: RequestError) -> JSONResponse:
    """A request refused by validation or by the judge: its status, message and field, OpenAI-shaped."""
    kind = "not_found_error" if err.status == 404 else "invalid_request_error"
    return _error(err.status, err.message, kind, err.param, err.code)


def _judgment_failed(err: EngineUnavailable | EngineFailure, state: ServerState) -> JSONResponse:
    """A judgment an engine could not complete: 503 with ``Retry-After`` for a dead or unreachable engine, 502 for an
    engine that answered an error (a 4xx's message kept, sanitized; a 5xx's left in judge-serve's log)."""
    if isinstance(err, EngineUnavailable):
        # A dropped connection can beat the watcher to an engine's death: name the engine by its role, not URL.
        log.warning("engine unavailable during a judgment: %s", err)
        message = str(err)
        for role, engine in state.engines.items():
            if engine.url in message:
                message = f"the {role} engine is unavailable"
        return _error(503, sanitized(message), "service_unavailable", code="engine_unavailable",
                      headers={"Retry-After": state.retry_after_s(state.engines)})
    log.error("engine failure during a judgment: %s", err)
    message = sanitized(str(err)) if err.status < 500 else f"the engine failed (it answered {err.status}); judge-serve's log has its message"
    return _error(502, message, "server_error", code="engine_error")


def engine_error(status: int, raw: bytes, role: str) -> JSONResponse:
    """An engine's error answer in OpenAI's shape with a string ``code``: a 4xx keeps the engine's message (its
    internals replaced, ``sanitized``), a 5xx says only that the engine failed (its text goes to judge-serve's log)."""
    try:
        detail = json.loads(raw)
    except ValueError:
        detail = None
    inner = detail.get("error") if isinstance(detail, dict) else None
    if isinstance(inner, dict):
        message, param, code = inner.get("message"), inner.get("param"), inner.get("code")
    elif isinstance(inner, str):  # vLLM's own 401: {"error": "Unauthorized"}
        message, param, code = inner, None, None
    else:
        message, param, code = (detail.get("detail") if isinstance(detail, dict) else None), None, None
    if not isinstance(message, str):
        message = raw[:500].decode("utf-8", "replace")
    if status >= 500:
        log.error("the %s engine answered %d: %s", role, status, message[:2000])
        return _error(502, f"the {role} engine failed (it answered {status}); judge-serve's log has its message",
                      "server_error", code="engine_error")  # fmt: skip
    if status == 401:  # judge-serve's own key to its engine was refused: not the client's fault
        log.error("the %s engine refused judge-serve's key (401)", role)
        return _error(502, f"the {role} engine refused judge-serve's credentials", "server_error", code="engine_auth_error")
    return _error(status, sanitized(message), param=param if isinstance(param, str) else None,
                  code=code if isinstance(code, str) else None)  # fmt: skip


#: Most bytes of request line plus headers one request may send (httptools itself sets no bound).
MAX_HEADER_BYTES = 64 * 1024


def header_deadline_protocol(header_timeout_s: float, max_header_bytes: int = MAX_HEADER_BYTES):
    """uvicorn's httptools protocol with a deadline and a size bound for each request's headers.

    uvicorn times out idle keep-alive connections (``timeout_keep_alive``) but not a connection whose headers never
    finish: ~1,100 of those exhausted judge-serve's descriptors. Here each connection, and each
    new request on a kept-alive one, must complete its headers within ``header_timeout_s`` or is closed, with
    uvicorn's own keep-alive handler; one whose request line and headers pass ``max_header_bytes`` is closed too.
    Pass the returned class as ``uvicorn.Config(http=...)``.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HeaderDeadlineProtocol(HttpToolsProtocol):
        _header_timer = None
        _header_bytes = 0

        def _count(self, n: int) -> None:
            self._header_bytes += n
            if self._header_bytes > max_header_bytes:
                self._headers_too_slow()

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value))
            super().on_header(name, value)

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            self.timeout_keep_alive_handler()  # closes the transport unless it is already closing

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._header_bytes = 0
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadlineProtocol


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """413 for a request body above ``max_bytes``, whether or not it declares its Content-Length."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = _error(413, f"body: the request body exceeds {self.max_bytes} bytes", "invalid_request_error", "body", "body_too_large")
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await too_large(scope, receive, send)
        received = 0
        started = False

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await too_large(scope, receive, send)


class ApiKeyMiddleware:
    """401 without ``Authorization: Bearer <key>`` on every route but health, readiness and metrics."""

    # /get_reward checks its own key (the reward key in its path, or this one: serve.rewards)
    OPEN = ("/health", "/ready", "/metrics", "/get_reward")

    def __init__(self, app, api_key: str):
        self.app, self.expected = app, f"Bearer {api_key}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and not scope["path"].startswith(self.OPEN):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = _error(
                    401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "authentication_error",
                    code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"},
                )  # fmt: skip
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)


def own_host_names() -> list[str]:
    """localhost and this machine's own names and addresses: the Host values a client on this machine or the
    cluster uses, and none a rebinding web page can send (it sends its own domain name)."""
    import socket

    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    with contextlib.suppress(OSError):
        names.update(socket.gethostbyname_ex(socket.gethostname())[2])
    return sorted(n for n in names if n)


class HostAllowListMiddleware:
    """Without an API key, 400 for a request whose ``Host`` (its name, without the port) is not allowed: a page in
    a browser that rebinds its own DNS name to 127.0.0.1 still sends its own name as ``Host``."""

    def __init__(self, app, hosts: list[str]):
        self.app, self.hosts = app, {h.lower().strip("[]") for h in hosts}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
            name = host[1:].split("]")[0] if host.startswith("[") else host.rsplit(":", 1)[0] if host.count(":") == 1 else host
            if name not in self.hosts:
                response = _error(400, f"host: {name or '(none)'!r} is not in allowed_hosts", param="host", code="host_not_allowed")
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)


class RefuseWhileDrainingMiddleware:
    """503 for a request that arrives once judge-serve is draining (SIGTERM, scancel): uvicorn closes its listening
    socket only at its next loop tick (up to 0.1 s later), and a request accepted in that window would otherwise be
    queued behind the drain. The probes (/health, /ready) still answer, with their own draining status."""

    PROBES = ("/health", "/ready")

    def __init__(self, app, state):
        self.app, self.state = app, state

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and self.state.status == "draining" and scope["path"] not in self.PROBES:
            response = _error(503, "judge-serve is shutting down", "server_error", code="shutting_down",
                              headers={"Retry-After": "5"})  # fmt: skip
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


class RequestIdMiddleware:
    """Echo ``X-Request-Id`` on every answer (one is made when the client sent none, and passed to the engine)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        request_id = headers.get(b"x-request-id")
        if not request_id or len(request_id) > 200:
            request_id = uuid.uuid4().hex.encode()
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"x-request-id"] + [(b"x-request-id", request_id)]

        async def echo(message):
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                message = {**message, "headers": kept + [(b"x-request-id", request_id)]}
            await send(message)

        return await self.app(scope, receive, echo)


#: Routes that load balancers, Slurm scripts and ``until curl .../ready`` loops poll every second or so.
HEALTH_POLLS = ("/health", "/ready")


class _NoHealthPolls(logging.Filter):
    """Drops uvicorn's access-log line of a health poll: one line per poll per second would bury every request
    that did work. uvicorn's access record carries ``(client, method, path, http_version, status)`` as its args."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (len(args) >= 3 and str(args[2]).split("?", 1)[0] in HEALTH_POLLS)


def quiet_health_polls(log_level: str) -> None:
    """Keep health polls out of the access log, unless ``log_level`` is debug (call after uvicorn's logging
    set-up, which ``uvicorn.Config`` performs)."""
    access = logging.getLogger("uvicorn.access")
    for existing in [f for f in access.filters if isinstance(f, _NoHealthPolls)]:
        access.removeFilter(existing)
    if str(log_level).lower() != "debug":
        access.addFilter(_NoHealthPolls())


def proxied_token_bound(body: Any, path: str, max_total: int) -> tuple[Any, JSONResponse | None]:
    """Bound a proxied generation request to ``max_total`` tokens in all, so one request cannot buy unbounded work.

    Returns the body to send (``max_tokens`` = ``max_total // n`` added when it named none) and None, or the
    body and a 400 naming the field that asks for too much.
    """
    if not isinstance(body, dict):
        return body, None
    if path == "/v1/responses":
        fields, n = ("max_output_tokens",), 1
    else:
        fields = ("max_completion_tokens", "max_tokens")
        n = max((v for v in (body.get("n"), body.get("best_of")) if isinstance(v, int) and not isinstance(v, bool)), default=1)
    if n < 1:
        return body, None  # the engine refuses it with its own message
    named = next((f for f in fields if body.get(f) is not None), None)
    if named is None:
        if max_total // n < 1:
            return body, _error(400, f"n: {n} completions exceed this server's max_proxy_tokens={max_total}", param="n", code="too_many_tokens")
        return {**body, fields[-1]: max_total // n}, None
    tokens = body[named]
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens * n > max_total:
        return body, _error(
            400, f"{named}: {tokens} tokens x {n} completions = {tokens * n} > this server's max_proxy_tokens={max_total}",
            param=named, code="too_many_tokens",
        )  # fmt: skip
    return body, None


def resolved_verdict_format(config: ServeConfig, layout: CheckpointLayout) -> ServeConfig:
    """``config`` with ``verdict_format`` decided (``auto``: ``judge.checkpoints.checkpoint_verdict_format``).

    Raises:
        LayoutError: an integer format asked of a regression judge (its head scores; it writes no integer).
    """
    from judge.checkpoints import checkpoint_verdict_format

    fmt = config.verdict_format
    if fmt == "auto":
        fmt = checkpoint_verdict_format(layout.root, config.model_name) if layout.kind == "seq2seq" else "tagged"
    if fmt == "integer" and layout.kind != "seq2seq":
        raise LayoutError(f"verdict_format: integer is for judges that write their score; {layout.root} is a "
                          f"{layout.kind} judge")
    return dataclasses.replace(config, verdict_format=fmt)


def create_app(config: ServeConfig, layout: CheckpointLayout | None = None) -> FastAPI:
    """Build the app; the engines start in its lifespan (so the port answers /health while they load).

    Args:
        config: the validated configuration.
        layout: the checkpoint layout (resolved from ``config`` when omitted).

    Raises:
        LayoutError: the checkpoint cannot be served.
    """
    layout = layout or resolve_layout(config.model, config.generator_model or None, config.derived_cache_dir or None)
    import judge

    config = resolved_verdict_format(config, layout)
    if layout.prompt_version and layout.prompt_version != judge.PROMPT_VERSION:
        log.warning(
            "%s was trained with prompt template %s but this judge-serve renders %s: verdicts may suffer",
            layout.root, layout.prompt_version, judge.PROMPT_VERSION,
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        state: ServerState = app.state.serve
        await start_engines(state)
        try:
            yield
        finally:
            await stop_engines(state)

    app = FastAPI(title="judge-serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.serve = ServerState(config=config, layout=layout)
    # Outermost last: the request id first, then the body limit, then the key or the Host check, then the drain.
    app.add_middleware(RefuseWhileDrainingMiddleware, state=app.state.serve)
    if config.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key)
    else:
        log.warning(
            "no api_key: judge-serve has no authentication; anyone who can reach %s:%d can use it and its engines "
            "(only Host: %s accepted)", config.host, config.port, ", ".join(own_host_names() + config.allowed_hosts),
        )  # fmt: skip
        app.add_middleware(HostAllowListMiddleware, hosts=own_host_names() + config.allowed_hosts)
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes)
    app.add_middleware(RequestIdMiddleware)
    expected_key = f"Bearer {config.api_key}".encode()

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        if err.status_code == 404:
            message = f"no route {request.method} {request.url.path} on judge-serve (see /v1/models, /v1/judge)"
        else:
            message = str(err.detail)
        return _error(err.status_code, message, headers=getattr(err, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, err: RequestValidationError) -> JSONResponse:
        return _error(400, f"the request is not valid: {err.errors()[:1]}")

    def state_of(request: Request) -> ServerState:
        return request.app.state.serve

    def keyed(request: Request) -> bool:
        """Whether the caller holds the key (always, when judge-serve has none: then everything is open)."""
        if not config.api_key:
            return True
        return hmac.compare_digest(request.headers.get("authorization", "").encode(), expected_key)

    @app.get("/health")
    async def health(request: Request) -> JSONResponse:
        state = state_of(request)
        # Fatal: failed, or dead with no restart coming (an attached engine; an engine dead while starting).
        problem = state.failure if state.status == "failed" else next(
            (reason for role, reason in state.dead_reason.items() if not state.healing(role)), None
        )
        if not keyed(request):  # up or down, nothing about the engines (no URLs, pids)
            return JSONResponse({"status": "down" if problem else "up"}, status_code=503 if problem else 200)
        engines = {
            role: {
                "state": "restarting" if state.healing(role) else "dead" if role in state.dead_reason else "up",
                "pid": engine.pid,
                "restarts": state.restarts.get(role, 0),
                "last_exit": state.last_exit.get(role),
            }
            for role, engine in state.engines.items()
        }
        if problem:
            return JSONResponse({"status": "unhealthy", "detail": sanitized(problem), "engines": engines}, status_code=503)
        status = "restarting" if state.retry_after and state.status == "ready" else state.status
        body = {"status": status, "judge_kind": state.layout.kind, "engines": engines}
        if state.dead_reason:
            body["detail"] = sanitized(state.any_dead() or "")
        return JSONResponse(body)

    @app.get("/ready")
    async def ready(request: Request) -> JSONResponse:
        state = state_of(request)
        problem = state.failure if state.status == "failed" else state.any_dead()
        if state.status == "ready" and not problem:
            return JSONResponse({"status": "ready", "model": config.model_name, "judge_kind": state.layout.kind})
        detail = problem or {"starting": "the engines are still starting", "draining": "shutting down"}.get(state.status, state.status)
        return JSONResponse({"status": state.status if not problem else "unavailable", "detail": sanitized(detail)}, status_code=503)

    def unavailable(state: ServerState, role: str, message: str) -> JSONResponse:
        return _error(503, sanitized(message), "service_unavailable", code="engine_unavailable", headers={"Retry-After": state.retry_after_s([role])})

    async def proxy(request: Request, role: str, path: str, bounded: bool = False) -> Response:
        state = state_of(request)
        problem = state.engine_problem(role)
        if problem:
            return unavailable(state, role, problem)
        engine = state.engines[role]
        assert state.http is not None
        data = await request.body()
        if bounded and data:
            try:
                body = decode_json_body(data)
            except RequestError as err:
                return _error(err.status, err.message, param=err.param, code=err.code)
            bounded_body, refused = proxied_token_bound(body, path, config.max_proxy_tokens)
            if refused is not None:
                return refused
            if bounded_body is not body:
                data = json.dumps(bounded_body, ensure_ascii=False).encode()
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARD_REQUEST_HEADERS}
        headers.update(engine.auth_headers)
        # Without the client's own Accept-Encoding, ask for the body as is (the session passes bytes through).
        headers.setdefault("accept-encoding", "identity")
        sending = await unless_dead(state.http.request(
            request.method, engine.url + path, data=data, headers=headers,
            params=list(request.query_params.multi_items()), skip_auto_headers={"Content-Type"},
        ), state.dead[role])  # fmt: skip
        if sending is None:
            return unavailable(state, role, state.dead_reason.get(role, f"the {role} engine died"))
        try:
            upstream_response = sending.result()
        except asyncio.TimeoutError:
            return _error(504, f"the {role} engine did not answer within {config.request_timeout_s:g} s", "timeout", code="timeout")
        except aiohttp.ClientError as err:
            log.warning("the %s engine at %s is unreachable: %s: %s", role, engine.url, type(err).__name__, err)
            return unavailable(state, role, f"the {role} engine is unreachable ({type(err).__name__})")
        if upstream_response.status >= 400:
            try:
                raw = await upstream_response.content.read(_MAX_ENGINE_ERROR_BYTES)
            finally:
                upstream_response.release()
            return engine_error(upstream_response.status, raw, role)

        async def body():
            try:
                async for chunk in upstream_response.content.iter_any():
                    yield chunk
            finally:
                upstream_response.release()

        out_headers = {k: v for k, v in upstream_response.headers.items() if k.lower() not in _DROP_RESPONSE_HEADERS}
        return StreamingResponse(body(), status_code=upstream_response.status, headers=out_headers)

    def passed_through(path: str, bounded: bool = False):
        async def route(request: Request) -> Response:
            return await proxy(request, "generator", path, bounded)

        return route

    for path in ("/v1/chat/completions", "/v1/completions", "/v1/responses"):
        app.add_api_route(path, passed_through(path, bounded=True), methods=["POST"])
    for path in ("/tokenize", "/detokenize"):
        app.add_api_route(path, passed_through(path), methods=["POST"])
    for path in ("/version", "/tokenizer_info"):
        app.add_api_route(path, passed_through(path), methods=["GET"])

    # Each model entry is the engine's (max_model_len included) plus judge-serve's own caps (judge.wire.ModelLimits),
    # so that a client fits its max_tokens before the work starts instead of meeting a 400 per request.
    limits = ModelLimits(judge_max_tokens=config.max_tokens, max_proxy_tokens=config.max_proxy_tokens).advertised()

    async def model_list(request: Request) -> tuple[dict[str, Any] | None, Response | None]:
        listed = await proxy(request, "generator", "/v1/models")
        if listed.status_code != 200 or not isinstance(listed, StreamingResponse):
            return None, listed
        raw = b"".join([chunk async for chunk in listed.body_iterator])
        try:
            body = json.loads(raw)
            entries = body["data"]
            for entry in entries:
                if isinstance(entry, dict):
                    entry.update(limits)
        except (ValueError, KeyError, TypeError):
            return None, _error(502, "the generator engine's model list could not be read", "server_error", code="engine_error")
        return body, None

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        body, failed = await model_list(request)
        return failed if failed is not None else JSONResponse(body)

    @app.get("/v1/models/{model_id:path}")
    async def model(request: Request, model_id: str) -> Response:
        body, failed = await model_list(request)
        if failed is not None:
            return failed
        entries = body["data"]
        found = next((entry for entry in entries if isinstance(entry, dict) and entry.get("id") == model_id), None)
        if found is None:
            return _error(404, f"model: the model `{model_id}` does not exist; this server serves `{config.model_name}`",
                          param="model", code="model_not_found")  # fmt: skip
        return JSONResponse(found)

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        return await proxy(request, "generator", "/metrics")

    @app.get("/metrics/pooler")
    async def metrics_pooler(request: Request) -> Response:
        if "pooler" not in state_of(request).engines:
            return _error(404, "this judge has no pooling engine (seq2seq checkpoint)", "not_found_error", code="not_found")
        return await proxy(request, "pooler", "/metrics")

    @app.post("/v1/judge")
    async def judge_route(request: Request) -> Response:
        state = state_of(request)
        # The body is validated before the engines' health is asked: a broken request gets its 4xx naming the field
        # even while an engine restarts (a 503 would tell the client to retry what can never succeed).
        try:
            body = decode_json_body(await request.body())
        except RequestError as err:
            return _error(err.status, err.message, "invalid_request_error", err.param, err.code)
        for key in ("items", "pairs"):  # pairs: the pairwise variant, bounded alike
            items = body.get(key) if isinstance(body, dict) else None
            if isinstance(items, list) and len(items) > config.max_batch_items:
                return _error(
                    400, f"{key}: {len(items)} {key}; this server takes at most {config.max_batch_items} per request",
                    "invalid_request_error", key, "too_many_items",
                )  # fmt: skip
        try:
            parsed = parse_judge_request(body)
        except RequestError as err:
            return _refused(err)
        for role in state.engines:
            problem = state.engine_problem(role)
            if problem:
                return _error(503, sanitized(problem), "service_unavailable", code="engine_unavailable",
                              headers={"Retry-After": state.retry_after_s(state.engines)})
        try:
            assert state.judge is not None
            result = await asyncio.wait_for(state.judge.run(parsed), timeout=config.request_timeout_s)
        except RequestError as err:
            return _refused(err)
        except (EngineUnavailable, EngineFailure) as err:
            return _judgment_failed(err, state)
        except asyncio.TimeoutError:
            return _error(504, f"the judgment took longer than request_timeout_s={config.request_timeout_s:g} s", "timeout", code="timeout")
        return JSONResponse(result.to_json())

    install_reward_routes(app, config, _error)  # POST /get_reward: OpenRLHF's remote reward protocol
    return app

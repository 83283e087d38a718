"""judge-serve's HTTP app: one port in front of the vLLM engines.

Routes:

* ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``: proxied to the generating engine
  byte for byte (streaming included), so OpenAI clients work unchanged.
* ``POST /v1/judge``: POLLUX judgments (``serve.schema`` for the request, ``serve.judging`` for the work).
* ``GET /metrics``: the generating engine's Prometheus metrics; ``GET /metrics/pooler``: the pooling engine's.
* ``GET /health``: 200 while the engines live (also while they start), 503 once one died or failed to start.
  ``GET /ready``: 200 only when every engine answers and the server is not draining.

Robustness: with an API key every ``/v1/*`` route needs ``Authorization: Bearer <key>`` (401 otherwise); bodies
above ``max_body_bytes`` get 413; bad input gets 400/404 with an OpenAI-style error whose ``param`` names the
field; a request that outlives ``request_timeout_s`` gets 504; an engine that died makes its routes answer 503 at
once (in-flight calls to it are abandoned, not left hanging). On SIGTERM/SIGINT uvicorn stops accepting
connections, lets in-flight requests finish (``shutdown_grace_s``), then the engines are stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from serve.config import ServeConfig
from serve.judging import EngineClient, EngineFailure, EngineUnavailable, Judge, JudgeSettings
from serve.launch import Engine, engine_specs
from serve.layout import CheckpointLayout, resolve_layout
from serve.schema import RequestError, decode_json_body, parse_judge_request

__all__ = ["create_app", "ServerState"]

log = logging.getLogger("judge_serve")

# Request headers passed to the engine; everything else (Authorization included) stays here.
_FORWARD_REQUEST_HEADERS = {"content-type", "accept", "accept-encoding", "user-agent"}
# Hop-by-hop and per-connection response headers that must not be copied.
_DROP_RESPONSE_HEADERS = {"connection", "keep-alive", "transfer-encoding", "server", "date"}


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error body, which the ``openai`` SDK turns into its exceptions' ``message``."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _error(status: int, message: str, kind: str, param: str | None = None, code: str | None = None, headers=None) -> JSONResponse:
    return JSONResponse(error_body(message, kind, param, code), status_code=status, headers=headers)


@dataclass
class ServerState:
    """What the routes share. ``status`` runs starting -> ready -> draining, or starting -> failed."""

    config: ServeConfig
    layout: CheckpointLayout
    status: str = "starting"
    failure: str | None = None
    engines: dict[str, Engine] = field(default_factory=dict)
    dead: dict[str, asyncio.Event] = field(default_factory=dict)
    dead_reason: dict[str, str] = field(default_factory=dict)
    http: httpx.AsyncClient | None = None
    judge: Judge | None = None
    log_dir: Path | None = None
    on_fatal: Callable[[], None] | None = None
    tasks: list[asyncio.Task] = field(default_factory=list)

    def engine_problem(self, role: str) -> str | None:
        """Why ``role``'s engine cannot take a request now, or None when it can."""
        if self.status == "failed":
            return f"judge-serve failed to start: {self.failure}"
        if role in self.dead_reason:
            return self.dead_reason[role]
        if self.status == "starting":
            return "the engines are still starting; retry when /ready answers 200"
        return None

    def any_dead(self) -> str | None:
        return next(iter(self.dead_reason.values()), None)


def _write_run_record(state: ServerState) -> None:
    """``run.json`` (``judge.provenance``) in the log folder, with the layout and the engines' URLs, pids, commands."""
    import judge
    from judge.provenance import write_provenance

    assert state.log_dir is not None
    write_provenance(
        state.log_dir, "judge-serve", state.config.to_dict(), prompt_version=judge.PROMPT_VERSION,
        layout={k: str(v) if v is not None else None for k, v in vars(state.layout).items()},
        engines={role: {"url": e.url, "pid": e.proc.pid if e.proc else None, "command": e.command, "log": str(e.log_path) if e.log_path else None} for role, e in state.engines.items()},
    )  # fmt: skip


async def _bring_up(state: ServerState) -> None:
    """Load the tokenizer and wait for every engine; then build the judge and turn ready (or fail)."""
    config = state.config
    try:
        from transformers import AutoTokenizer

        tokenizer = await asyncio.to_thread(AutoTokenizer.from_pretrained, str(state.layout.root))
        stop = lambda: state.status != "starting"  # noqa: E731
        await asyncio.gather(
            *(asyncio.to_thread(e.wait_ready, config.engine_start_timeout_s, stop) for e in state.engines.values())
        )
    except Exception as err:  # noqa: BLE001 - any failure to come up is fatal, and reported as such
        if state.status == "starting":
            state.status, state.failure = "failed", str(err)
            log.error("judge-serve cannot start: %s", err)
            if state.on_fatal:
                state.on_fatal()
        return
    assert state.http is not None
    engine_models = {}
    for role, engine in state.engines.items():
        # An attached engine may serve under another name; judge-serve's own calls use the engine's.
        engine_models[role] = config.model_name
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, IndexError):
            engine_models[role] = (await state.http.get(engine.url + "/v1/models")).json()["data"][0]["id"]
    clients = {
        role: EngineClient(state.http, e.url, state.dead[role], lambda role=role: state.dead_reason.get(role, f"{role} engine unavailable"))
        for role, e in state.engines.items()
    }
    settings = JudgeSettings(
        model_name=config.model_name,
        kind=state.layout.kind,
        head_input=state.layout.head_input,
        engine_models=engine_models,
        max_model_len=config.max_model_len,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        score_logprobs=config.score_logprobs,
        lenient=config.lenient_parsing,
        constrained=config.constrained_decoding,
        feedback_max_chars=config.feedback_max_chars,
        max_judgments=config.max_judgments_per_request,
    )
    classifier = None
    if config.criteria_classifier:
        from judge.task_classifier import classifier_from_settings

        classifier = await asyncio.to_thread(
            classifier_from_settings, config.criteria_classifier, config.criteria_classifier_path,
            config.criteria_classifier_model, config.criteria_threshold,
        )
    state.judge = Judge(
        settings, tokenizer, clients["generator"], clients.get("pooler"), asyncio.Semaphore(config.max_concurrent_engine_requests),
        classifier=classifier,
    )
    if state.status == "starting":
        state.status = "ready"
        log.info("judge-serve ready: %s judge %r on http://%s:%d", state.layout.kind, config.model_name, config.host, config.port)


async def _watch(state: ServerState, interval_s: float = 0.5, attached_every: int = 10) -> None:
    """Mark an engine dead as soon as its process exits (started engines) or its /health fails twice (attached)."""
    misses: dict[str, int] = {}
    tick = 0
    while True:
        await asyncio.sleep(interval_s)
        tick += 1
        for role, engine in state.engines.items():
            if role in state.dead_reason:
                continue
            reason = None
            code = engine.exit_code()
            if code is not None:
                reason = f"the {role} engine exited with code {code}; restart judge-serve (log: {engine.log_path})"
            elif not engine.owned and state.status == "ready" and tick % attached_every == 0:
                healthy = await asyncio.to_thread(engine.healthy)
                misses[role] = 0 if healthy else misses.get(role, 0) + 1
                if misses[role] >= 2:
                    reason = f"the attached {role} engine at {engine.url} stopped answering /health"
            if reason:
                state.dead_reason[role] = reason
                state.dead[role].set()
                log.error("%s\n%s", reason, engine.log_tail(30) if engine.owned else "")


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
    """401 on ``/v1/*`` without ``Authorization: Bearer <key>`` (health, readiness and metrics stay open)."""

    def __init__(self, app, api_key: str):
        self.app, self.expected = app, f"Bearer {api_key}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith("/v1"):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = _error(
                    401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "authentication_error",
                    code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"},
                )  # fmt: skip
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)


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

    if layout.prompt_version and layout.prompt_version != judge.PROMPT_VERSION:
        log.warning(
            "%s was trained with prompt template %s but this judge-serve renders %s: verdicts may suffer",
            layout.root, layout.prompt_version, judge.PROMPT_VERSION,
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        state: ServerState = app.state.serve
        state.log_dir = Path(config.log_dir) if config.log_dir else Path(tempfile.mkdtemp(prefix="judge-serve-"))
        state.log_dir.mkdir(parents=True, exist_ok=True)
        state.http = httpx.AsyncClient(
            timeout=httpx.Timeout(config.request_timeout_s, connect=10.0, pool=None),
            limits=httpx.Limits(max_connections=config.max_concurrent_engine_requests + 64, max_keepalive_connections=64),
        )
        try:
            for spec in engine_specs(config, layout):
                state.engines[spec.role] = Engine.start(spec, config, state.log_dir)
                state.dead[spec.role] = asyncio.Event()
            _write_run_record(state)
            log.info("engine logs and run.json in %s", state.log_dir)
            state.tasks = [asyncio.ensure_future(_bring_up(state)), asyncio.ensure_future(_watch(state))]
            yield
        finally:
            if state.status != "failed":
                state.status = "draining"
            for task in state.tasks:
                task.cancel()
            await asyncio.gather(*(asyncio.to_thread(e.stop) for e in state.engines.values()))
            await state.http.aclose()

    app = FastAPI(title="judge-serve", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.serve = ServerState(config=config, layout=layout)
    if config.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key)
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes)

    def state_of(request: Request) -> ServerState:
        return request.app.state.serve

    @app.get("/health")
    async def health(request: Request) -> JSONResponse:
        state = state_of(request)
        problem = state.failure if state.status == "failed" else state.any_dead()
        if problem:
            return JSONResponse({"status": "unhealthy", "detail": problem}, status_code=503)
        engines = {role: ("dead" if role in state.dead_reason else "up") for role in state.engines}
        return JSONResponse({"status": state.status, "judge_kind": state.layout.kind, "engines": engines})

    @app.get("/ready")
    async def ready(request: Request) -> JSONResponse:
        state = state_of(request)
        problem = state.failure if state.status == "failed" else state.any_dead()
        if state.status == "ready" and not problem:
            return JSONResponse({"status": "ready", "model": config.model_name, "judge_kind": state.layout.kind})
        detail = problem or {"starting": "the engines are still starting", "draining": "shutting down"}.get(state.status, state.status)
        return JSONResponse({"status": state.status if not problem else "unavailable", "detail": detail}, status_code=503)

    async def proxy(request: Request, role: str, path: str) -> Response:
        state = state_of(request)
        problem = state.engine_problem(role)
        if problem:
            return _error(503, problem, "service_unavailable", code="engine_unavailable", headers={"Retry-After": "5"})
        engine = state.engines[role]
        assert state.http is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARD_REQUEST_HEADERS}
        upstream = state.http.build_request(
            request.method, engine.url + path, content=await request.body(), headers=headers, params=request.query_params
        )
        sending = asyncio.ensure_future(state.http.send(upstream, stream=True))
        death = asyncio.ensure_future(state.dead[role].wait())
        try:
            done, _ = await asyncio.wait({sending, death}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            death.cancel()
        if sending not in done:
            sending.cancel()
            return _error(503, state.dead_reason.get(role, "engine died"), "service_unavailable", code="engine_unavailable")
        try:
            upstream_response = sending.result()
        except httpx.TimeoutException:
            return _error(504, f"the {role} engine did not answer within {config.request_timeout_s:g} s", "timeout", code="timeout")
        except httpx.TransportError as err:
            return _error(503, f"the {role} engine is unreachable: {err}", "service_unavailable", code="engine_unavailable")

        async def body():
            try:
                async for chunk in upstream_response.aiter_raw():
                    yield chunk
            finally:
                await upstream_response.aclose()

        out_headers = {k: v for k, v in upstream_response.headers.items() if k.lower() not in _DROP_RESPONSE_HEADERS}
        return StreamingResponse(body(), status_code=upstream_response.status_code, headers=out_headers)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await proxy(request, "generator", "/v1/chat/completions")

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await proxy(request, "generator", "/v1/completions")

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        return await proxy(request, "generator", "/v1/models")

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        return await proxy(request, "generator", "/metrics")

    @app.get("/metrics/pooler")
    async def metrics_pooler(request: Request) -> Response:
        if "pooler" not in state_of(request).engines:
            return _error(404, "this judge has no pooling engine (seq2seq checkpoint)", "not_found_error")
        return await proxy(request, "pooler", "/metrics")

    @app.post("/v1/judge")
    async def judge_route(request: Request) -> Response:
        state = state_of(request)
        for role in state.engines:
            problem = state.engine_problem(role)
            if problem:
                return _error(503, problem, "service_unavailable", code="engine_unavailable", headers={"Retry-After": "5"})
        try:
            body = decode_json_body(await request.body())
        except RequestError as err:
            return _error(err.status, err.message, "invalid_request_error", err.param, err.code)
        items = body.get("items") if isinstance(body, dict) else None
        if isinstance(items, list) and len(items) > config.max_batch_items:
            return _error(
                400, f"items: {len(items)} items; this server takes at most {config.max_batch_items} per request",
                "invalid_request_error", "items", "too_many_items",
            )  # fmt: skip
        try:
            parsed = parse_judge_request(body)
            assert state.judge is not None
            result = await asyncio.wait_for(state.judge.run(parsed), timeout=config.request_timeout_s)
        except RequestError as err:
            kind = "not_found_error" if err.status == 404 else "invalid_request_error"
            return _error(err.status, err.message, kind, err.param, err.code)
        except EngineUnavailable as err:
            return _error(503, str(err), "service_unavailable", code="engine_unavailable", headers={"Retry-After": "5"})
        except EngineFailure as err:
            return _error(502, str(err), "engine_error", code="engine_error")
        except asyncio.TimeoutError:
            return _error(504, f"the judgment took longer than request_timeout_s={config.request_timeout_s:g} s", "timeout", code="timeout")
        return JSONResponse(result)

    return app

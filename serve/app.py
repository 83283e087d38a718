"""judge-serve's HTTP app: one port in front of the vLLM engines.

Routes:

* ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``: proxied to the generating engine
  byte for byte (streaming included), so OpenAI clients work unchanged.
* ``POST /v1/judge``: POLLUX judgments (``serve.schema`` for the request, ``serve.judging`` for the work).
* ``GET /metrics``: the generating engine's Prometheus metrics; ``GET /metrics/pooler``: the pooling engine's.
* ``GET /health``: 200 while judge-serve lives and can heal (also while engines start or restart), 503 once it
  failed (an engine failed to start, kept dying past ``engine_max_restarts``, or an attached engine stopped
  answering). Its body reports, per engine, its state, process group, restarts and last exit code.
  ``GET /ready``: 200 only when every engine answers and the server is not draining.

Robustness: with an API key every ``/v1/*`` route needs ``Authorization: Bearer <key>`` (401 otherwise); bodies
above ``max_body_bytes`` get 413; bad input gets 400/404 with an OpenAI-style error whose ``param`` names the
field; a request that outlives ``request_timeout_s`` gets 504; an engine that died makes its routes answer 503 with
``Retry-After`` at once (in-flight calls to it are abandoned, not left hanging, and never retried here, so no
answer is duplicated).

Self-healing: an engine judge-serve started that dies (its whole process tree is taken down with it,
``judge.plumbing.processes``) is restarted after a backoff (``engine_restart_backoff_s``, doubling, at most
``engine_restart_backoff_max_s``); a restart that fails to come up counts as another death. Past
``engine_max_restarts`` deaths within ``engine_restart_window_s`` judge-serve stops and exits 1. An attached engine
(``generator_url``/``pooling_url``) is not judge-serve's to restart: its death is final. On SIGTERM/SIGINT uvicorn
stops accepting connections, lets in-flight requests finish (``shutdown_grace_s``), then the engines are stopped.
"""

from __future__ import annotations

import dataclasses
import asyncio
import contextlib
import hmac
import json
import logging
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import aiohttp
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from serve.config import ServeConfig
from serve.judging import (EngineClient, EngineFailure, EngineUnavailable, Judge, JudgeSettings, engine_session,
                           unless_dead)
from serve.launch import Engine, EngineStartError, engine_specs
from serve.layout import CheckpointLayout, LayoutError, resolve_layout
from serve.schema import RequestError, decode_json_body, parse_judge_request

__all__ = ["create_app", "ServerState", "restart_delay"]

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
    http: aiohttp.ClientSession | None = None
    judge: Judge | None = None
    log_dir: Path | None = None
    on_fatal: Callable[[], None] | None = None
    tasks: list[asyncio.Task] = field(default_factory=list)
    clients: dict[str, EngineClient] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)  # role -> restarts since judge-serve started
    restart_times: dict[str, list[float]] = field(default_factory=dict)  # role -> time.monotonic() of each
    last_exit: dict[str, int] = field(default_factory=dict)  # role -> the last exit code of its engine
    retry_after: dict[str, int] = field(default_factory=dict)  # role -> seconds to tell clients while it restarts

    def engine_problem(self, role: str) -> str | None:
        """Why ``role``'s engine cannot take a request now, or None when it can."""
        if self.status == "failed":
            return f"judge-serve cannot serve: {self.failure}"
        if role in self.dead_reason:
            return self.dead_reason[role]
        if self.status == "starting":
            return "the engines are still starting; retry when /ready answers 200"
        return None

    def any_dead(self) -> str | None:
        return next(iter(self.dead_reason.values()), None)

    def healing(self, role: str) -> bool:
        """Whether ``role``'s engine is dead and being restarted."""
        return role in self.retry_after

    def retry_after_s(self, roles) -> str:
        """The ``Retry-After`` header value for requests refused because of ``roles``' engines."""
        return str(max([self.retry_after.get(role, 5) for role in roles] or [5]))


def _write_run_record(state: ServerState) -> None:
    """``run.json`` (``judge.plumbing.provenance``) in the log folder, with the layout and the engines' URLs, pids, commands."""
    import judge
    from judge.plumbing.provenance import write_provenance

    assert state.log_dir is not None
    write_provenance(
        state.log_dir, "judge-serve", state.config.to_dict(), prompt_version=judge.PROMPT_VERSION,
        layout={k: str(v) if v is not None else None for k, v in vars(state.layout).items()},
        # pid: the engine's process group (its supervisor); its whole tree shares it. Rewritten after a restart.
        engines={role: {"url": e.url, "pid": e.pid, "command": e.command, "log": str(e.log_path) if e.log_path else None,
                        "restarts": state.restarts.get(role, 0)} for role, e in state.engines.items()},
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
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError, ValueError, KeyError, IndexError):
            async with state.http.get(engine.url + "/v1/models") as response:
                engine_models[role] = json.loads(await response.read())["data"][0]["id"]
    clients = state.clients = {
        role: EngineClient(state.http, e.url, state.dead[role], lambda role=role: state.dead_reason.get(role, f"{role} engine unavailable"))
        for role, e in state.engines.items()
    }
    settings = JudgeSettings(
        model_name=config.model_name,
        kind=state.layout.kind,
        head_input=state.layout.head_input,
        verdict_format=config.verdict_format,
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
        from judge.criteria_auto import classifier_from_settings

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
    """Notice a dead engine: a started one as soon as its process exits (then heal it, once judge-serve is ready),
    an attached one when its /health fails twice."""
    misses: dict[str, int] = {}
    tick = 0
    while True:
        await asyncio.sleep(interval_s)
        tick += 1
        for role, engine in list(state.engines.items()):
            if role in state.dead_reason:
                continue
            reason = None
            code = engine.exit_code()
            if code is not None:
                state.last_exit[role] = code
                reason = f"the {role} engine exited with code {code} (log: {engine.log_path})"
            elif not engine.owned and state.status == "ready" and tick % attached_every == 0:
                healthy = await asyncio.to_thread(engine.healthy)
                misses[role] = 0 if healthy else misses.get(role, 0) + 1
                if misses[role] >= 2:
                    reason = f"the attached {role} engine at {engine.url} stopped answering /health; restart judge-serve"
            if reason:
                state.dead_reason[role] = reason
                state.dead[role].set()  # in-flight calls to it give up now: 503, never a hang
                log.error("%s\n%s", reason, engine.log_tail(30) if engine.owned else "")
                if engine.owned and state.status == "ready":
                    state.retry_after[role] = 5  # restarting from now on (/health), before the task first runs
                    state.tasks.append(asyncio.ensure_future(_heal(state, role)))


def restart_delay(config: ServeConfig, restarts_in_window: int) -> float | None:
    """Seconds to wait before the next restart of an engine that has already been restarted
    ``restarts_in_window`` times within ``engine_restart_window_s``; None when that is past the limit.

    ``engine_restart_backoff_s`` doubles with each restart in the window, up to ``engine_restart_backoff_max_s``.
    """
    if restarts_in_window >= config.engine_max_restarts:
        return None
    return min(config.engine_restart_backoff_max_s, config.engine_restart_backoff_s * 2**restarts_in_window)


async def _heal(state: ServerState, role: str) -> None:
    """Restart ``role``'s dead engine with backoff until it answers, or give judge-serve up past the limit."""
    config = state.config
    state.retry_after[role] = 5
    try:
        # Its supervisor already took its process tree down; stop() reaps it and SIGKILLs any straggler.
        await asyncio.to_thread(state.engines[role].stop)
        while state.status == "ready":
            now = time.monotonic()
            recent = [t for t in state.restart_times.setdefault(role, []) if now - t < config.engine_restart_window_s]
            state.restart_times[role] = recent
            backoff = restart_delay(config, len(recent))
            if backoff is None:
                state.status = "failed"
                state.failure = (
                    f"the {role} engine died {len(recent) + 1} times within {config.engine_restart_window_s:g} s "
                    f"(last exit code {state.last_exit.get(role)}); engine_max_restarts={config.engine_max_restarts} "
                    f"reached, judge-serve stops (log: {state.engines[role].log_path})"
                )
                log.error("%s", state.failure)
                if state.on_fatal:
                    state.on_fatal()
                return
            attempt = f"restart {len(recent) + 1} of {config.engine_max_restarts} allowed within {config.engine_restart_window_s:g} s"
            state.retry_after[role] = max(1, math.ceil(backoff)) + 5
            state.dead_reason[role] = (
                f"the {role} engine exited with code {state.last_exit.get(role)}; judge-serve is restarting it "
                f"({attempt}); retry later"
            )
            log.warning("%s engine: %s in %.1f s", role, attempt, backoff)
            await asyncio.sleep(backoff)
            if state.status != "ready":
                return
            state.restart_times[role].append(time.monotonic())
            state.restarts[role] = state.restarts.get(role, 0) + 1
            # Started here, on the event loop's thread, which lives as long as judge-serve (the parent-death signal).
            engine = state.engines[role] = Engine.start(state.engines[role].spec, config, state.log_dir)
            _write_run_record(state)
            try:
                await asyncio.to_thread(engine.wait_ready, config.engine_start_timeout_s, lambda: state.status != "ready")
            except EngineStartError as err:
                state.last_exit[role] = engine.exit_code() if engine.exit_code() is not None else state.last_exit.get(role, -1)
                log.error("the restarted %s engine did not come up: %s", role, err)
                await asyncio.to_thread(engine.stop)
                continue
            if role in state.clients:
                state.clients[role].url = engine.url
            state.dead[role].clear()
            state.dead_reason.pop(role, None)
            log.info("%s engine restarted and ready at %s (%d restarts so far)", role, engine.url, state.restarts[role])
            return
    finally:
        state.retry_after.pop(role, None)


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
        from judge.plumbing.provenance import make_private_dir

        state: ServerState = app.state.serve
        state.log_dir = Path(config.log_dir) if config.log_dir else Path(tempfile.mkdtemp(prefix="judge-serve-"))
        make_private_dir(state.log_dir)  # 0700 when created here: engine logs, run.json (issue #30.7)
        state.http = engine_session(config.request_timeout_s, max_connections=config.max_concurrent_engine_requests + 64)
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
            await state.http.close()

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
        engines = {
            role: {
                "state": "restarting" if state.healing(role) else "dead" if role in state.dead_reason else "up",
                "pid": engine.pid,
                "restarts": state.restarts.get(role, 0),
                "last_exit": state.last_exit.get(role),
            }
            for role, engine in state.engines.items()
        }
        # Fatal: failed, or dead with no restart coming (an attached engine; an engine dead while starting).
        problem = state.failure if state.status == "failed" else next(
            (reason for role, reason in state.dead_reason.items() if not state.healing(role)), None
        )
        if problem:
            return JSONResponse({"status": "unhealthy", "detail": problem, "engines": engines}, status_code=503)
        status = "restarting" if state.retry_after and state.status == "ready" else state.status
        body = {"status": status, "judge_kind": state.layout.kind, "engines": engines}
        if state.dead_reason:
            body["detail"] = state.any_dead()
        return JSONResponse(body)

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
            return _error(503, problem, "service_unavailable", code="engine_unavailable", headers={"Retry-After": state.retry_after_s([role])})
        engine = state.engines[role]
        assert state.http is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARD_REQUEST_HEADERS}
        # Without the client's own Accept-Encoding, ask for the body as is (the session passes bytes through).
        headers.setdefault("accept-encoding", "identity")
        sending = await unless_dead(state.http.request(
            request.method, engine.url + path, data=await request.body(), headers=headers,
            params=list(request.query_params.multi_items()), skip_auto_headers={"Content-Type"},
        ), state.dead[role])  # fmt: skip
        if sending is None:
            return _error(
                503, state.dead_reason.get(role, "engine died"), "service_unavailable", code="engine_unavailable",
                headers={"Retry-After": state.retry_after_s([role])},
            )  # fmt: skip
        try:
            upstream_response = sending.result()
        except asyncio.TimeoutError:
            return _error(504, f"the {role} engine did not answer within {config.request_timeout_s:g} s", "timeout", code="timeout")
        except aiohttp.ClientError as err:
            return _error(
                503, f"the {role} engine is unreachable: {err}", "service_unavailable", code="engine_unavailable",
                headers={"Retry-After": state.retry_after_s([role])},
            )  # fmt: skip

        async def body():
            try:
                async for chunk in upstream_response.content.iter_any():
                    yield chunk
            finally:
                upstream_response.release()

        out_headers = {k: v for k, v in upstream_response.headers.items() if k.lower() not in _DROP_RESPONSE_HEADERS}
        return StreamingResponse(body(), status_code=upstream_response.status, headers=out_headers)

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
            kind = "not_found_error" if err.status == 404 else "invalid_request_error"
            return _error(err.status, err.message, kind, err.param, err.code)
        for role in state.engines:
            problem = state.engine_problem(role)
            if problem:
                return _error(503, problem, "service_unavailable", code="engine_unavailable",
                              headers={"Retry-After": state.retry_after_s(state.engines)})
        try:
            assert state.judge is not None
            result = await asyncio.wait_for(state.judge.run(parsed), timeout=config.request_timeout_s)
        except RequestError as err:
            kind = "not_found_error" if err.status == 404 else "invalid_request_error"
            return _error(err.status, err.message, kind, err.param, err.code)
        except EngineUnavailable as err:
            # A dropped connection can beat the watcher to an engine's death: name the engine by its URL.
            message = str(err)
            for role, engine in state.engines.items():
                if engine.url in message and role not in message:
                    message = f"the {role} engine is unavailable ({message})"
            return _error(503, message, "service_unavailable", code="engine_unavailable", headers={"Retry-After": state.retry_after_s(state.engines)})
        except EngineFailure as err:
            return _error(502, str(err), "engine_error", code="engine_error")
        except asyncio.TimeoutError:
            return _error(504, f"the judgment took longer than request_timeout_s={config.request_timeout_s:g} s", "timeout", code="timeout")
        return JSONResponse(result)

    return app

"""judge-serve's HTTP surface: one port in front of the vLLM engines (``serve.supervision`` starts, watches and
heals them).

Routes:

* OpenAI's, proxied to the generating engine byte for byte (streaming included; errors, in-stream ones too, in
  judge-serve's shape: ``serve.errors``), so OpenAI clients work unchanged:
  ``POST /v1/chat/completions``, ``/v1/completions``, ``/v1/responses``; ``GET /v1/models`` and
  ``GET /v1/models/{id}`` (each entry the engine's, ``max_model_len`` included, its ``root``, the folder the engine
  loaded, as a digest that names no path: ``judge.wire.root_identity``; plus judge-serve's caps
  ``judge_max_tokens`` and ``max_proxy_tokens`` and its ``prompt_version``: ``judge.wire.ModelLimits``, and the
  ``weights_fingerprint`` of what its own engines load: ``serve.layout.weights_fingerprint``); vLLM's ``POST /tokenize``, ``/detokenize``, ``GET /tokenizer_info`` (what lm-eval's
  remote tokenizer reads; less the fields that name a file or folder: ``name_or_path``, ``*_file``) and
  ``GET /version``. A generation request may ask for at most ``max_proxy_tokens``
  tokens in all (``max_tokens`` x ``n``); a chat or response request that names no ``max_tokens`` gets
  ``max_proxy_tokens // n``, at most the generating engine's ``max_model_len``; a completion request that names none
  is counted at OpenAI's and vLLM's default of 16 each (``serve.proxy_bounds``).
* ``POST /v1/judge``: POLLUX judgments (``serve.schema`` for the request, ``serve.judging`` for the work). It,
  ``GET /v1/models/{id}`` and the proxied routes that take a body (the three generation routes, ``/tokenize``,
  ``/detokenize``) answer to the generating engine's model name (what ``/v1/models`` lists) and to judge-serve's
  own ``model_name``, which differ when an attached engine serves under another name (a request naming
  judge-serve's is sent under the engine's). ``"model": ""`` names none, on ``/v1/judge`` as vLLM reads it.
* ``POST /get_reward`` and ``/get_reward/<reward key>``: rewards in OpenRLHF's protocol (``serve.rewards``).
* ``GET /metrics``: the generating engine's Prometheus metrics; ``GET /metrics/pooler``: the pooling engine's.
* ``GET /health``: 200 while judge-serve lives and can heal (also while engines start or restart, and for an
  engine of its own that died while another still loads: it is restarted once judge-serve is ready), 503 while it
  cannot serve (an engine failed to start or kept dying past ``engine_max_restarts``; an attached engine does not
  answer). Without the API key its body says only ``{"status": "up"}`` or ``"down"``; with it, per engine, its
  state (``starting`` until judge-serve has seen every engine answer, ``never seen up`` for one it had not when it
  failed or began to drain, ``up``, ``dead``, ``restarting``), restarts
  and last exit code; no pid (``run.json`` and the log have them). ``GET /ready``: 200 only when every engine answers and the
  server is not draining (an engine of its own whose process has exited is 503 at once, before the watcher has seen it:
  ``ServerState.exited_unseen``); without the key its body is only the state (``{"status": "ready"}``, ``"starting"``,
  ``"draining"`` or ``"unavailable"``), with it also the model, or why not ready. Both read what the watcher
  (``serve.supervision``'s engine watcher) has seen and ask no engine, so they answer at once while an engine hangs; the
  watcher's probes bound how long a hung engine is served as up.

Robustness (the guards in ``serve.connections``, the error shape in ``serve.errors``): with an API key every
route but ``/health`` and ``/ready`` needs ``Authorization: Bearer <key>`` (401 otherwise; ``/metrics*`` included);
without one, only requests whose ``Host`` is in ``allowed_hosts`` are served (a web page cannot reach a local
judge-serve by DNS rebinding), and none whose ``Origin`` names another host or whose ``Sec-Fetch-Site`` is
``cross-site`` (a page of another site cannot make it work). Bodies above
``max_body_bytes`` get 413; a large body is decoded and checked off the event loop. Every error, judge-serve's, the
engine's, an unknown route's or an unexpected one's, is OpenAI's ``{"error": {"message", "type", "param", "code"}}``
with a string ``code``, and names no URL, process or file (an engine's 5xx text, or an answer it gave that could not
be read, stays in judge-serve's log; such an answer is a 502, cut off or timed out while it was read included, or a
503 with ``Retry-After`` when the engine died meanwhile). ``X-Request-Id`` is passed to the engine (with every
engine call of a ``/v1/judge`` or ``/get_reward`` request) and echoed (one is made when the client sends none). A
``/v1/judge`` or ``/get_reward`` request that outlives ``request_timeout_s`` gets 504; on the proxied routes it bounds
each wait for the engine (504 when its answer does not begin in time), not the whole answer, which runs as long as
the engine keeps sending; an engine that died or cannot be reached (a connect timeout
included) makes its routes answer 503 with ``Retry-After`` at once (in-flight calls to it are abandoned, not left
hanging, and never retried, so no answer is duplicated); a client that disconnects has its judging, or its proxied call,
cancelled (``serve.connections.unless_disconnected``). Client connections: ``header_timeout_s``,
``max_connections`` (``serve.cli``). On SIGTERM/SIGINT uvicorn stops accepting connections, lets in-flight requests
finish (``shutdown_grace_s``), then the engines are stopped.

Why one module of ~670 lines: every route is a closure over ``create_app``'s config, state and its one proxy to the
engines; what stands alone is already apart (the guards ``serve.connections``, the error shape ``serve.errors``, the
token bound ``serve.proxy_bounds``, the engines ``serve.supervision``, the rewards ``serve.rewards``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from typing import Any

import aiohttp
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from judge.plumbing.console_logging import visible
from judge.plumbing.json_reading import JSON_REFUSALS
from judge.checkpoints import prompt_template_and_why, read_manifest
from judge.wire import ModelLimits, root_identity
from serve.config import ServeConfig
from serve.connections import (ApiKeyMiddleware, BodyLimitMiddleware, HostAllowListMiddleware,
                               RefuseWhileDrainingMiddleware, RequestIdMiddleware, bearer_matches, own_host_names,
                               unless_disconnected)
from serve.engine_client import (MAX_ANSWER_BYTES, EngineBusy, EngineFailure, EngineUnavailable, discard_unclaimed,
                                 read_up_to, retry_headers_of, unless_dead, until_dead)
from serve.errors import (SENT_STREAM_SCOPE, SentStream, engine_error, error_response, judgment_failed, relayed_stream,
                          sanitized, unknown_model_message)
from serve.judging import check_before_start, unknown_model
from serve.layout import CheckpointLayout, LayoutError, resolve_layout
from serve.rewards import install_reward_routes
from serve.proxy_bounds import proxied_token_bound
from serve.schema import (JUDGE_BODY_NESTING, RequestError, check_values, clip_message, decode_json_body,
                          parse_judge_request, read_off_loop)
from serve.supervision import ServerState, restart_delay, start_engines, stop_engines

__all__ = ["ServerState", "create_app", "proxied_token_bound", "resolved_verdict_format", "restart_delay"]

log = logging.getLogger("judge_serve")

# Request headers passed to the engine; everything else (Authorization and Accept-Encoding included) stays here.
_FORWARD_REQUEST_HEADERS = {"content-type", "accept", "user-agent", "x-request-id"}
# Hop-by-hop and per-connection response headers that must not be copied.
_DROP_RESPONSE_HEADERS = {"connection", "keep-alive", "transfer-encoding", "server", "date"}
#: Most bytes of an engine's error body judge-serve reads to rewrite it in OpenAI's shape.
_MAX_ENGINE_ERROR_BYTES = 64 * 1024
#: Longest model name a proxied request is forwarded with: longer, no engine serves it (vLLM's names are a served
#: name or a LoRA adapter's), and the engine's 404 echoing it would pass _MAX_ENGINE_ERROR_BYTES, cut, and be read
#: as no 404 for a model at all.
_MAX_MODEL_NAME_CHARS = 1024


def _names_a_path(key: str, value: Any) -> bool:
    """Whether a ``/tokenizer_info`` field is a file or folder on the engine's machine: ``name_or_path``, a
    ``*_file``/``*_path``/``*_dir`` key (transformers' ``tokenizer_file``, ``vocab_file``, ...), or an absolute path."""
    if key == "name_or_path" or key.endswith(("_file", "_files", "_path", "_dir")):
        return True
    return isinstance(value, str) and value.startswith(("/", "~/")) and "/" in value[1:] and not any(
        c.isspace() for c in value)


def _refused(err: RequestError) -> JSONResponse:
    """A request refused by validation or by the judge: its status, message and field, OpenAI-shaped."""
    kind = "not_found_error" if err.status == 404 else "invalid_request_error"
    return error_response(err.status, err.message, kind, err.param, err.code)


def _close(response: aiohttp.ClientResponse) -> None:
    response.close()


def _close_unclaimed(sending: asyncio.Future[aiohttp.ClientResponse] | None) -> None:
    """``unless_dead``'s answer that its caller never took: the engine's response in it closed."""
    if sending is not None:
        discard_unclaimed(sending, _close)


def resolved_verdict_format(config: ServeConfig, layout: CheckpointLayout) -> ServeConfig:
    """``config`` with ``verdict_format`` decided (``auto``: ``judge.checkpoints.verdict_format_and_why``), the choice
    and its reason logged at every start: a wrong format (thinking on or off, the other reader) fails every judgment.

    Raises:
        LayoutError: an integer format asked of a regression judge (its head scores; it writes no integer), or
            ``constrained_decoding`` with an integer format (``auto`` resolved so included).
    """
    from judge.checkpoints import verdict_format_and_why

    if config.verdict_format == "integer" and layout.kind != "seq2seq":
        raise LayoutError(f"verdict_format: integer is for judges that write their score; {layout.root} is a "
                          f"{layout.kind} judge")
    fmt, why = config.verdict_format, "verdict_format is set"
    if fmt == "auto":
        fmt, why = (verdict_format_and_why(layout.root, config.model_name) if layout.kind == "seq2seq" else
                    ("tagged", f"a {layout.kind} judge's generator writes the tagged rationale"))
    if fmt == "integer" and config.constrained_decoding:
        # The verdict regex is the tagged format's: every judgment that does not send "constrained": false would be
        # refused, every /get_reward among them (reward clients send no such field).
        raise LayoutError(f"constrained_decoding: true, but verdict_format is integer ({why}): constrained decoding "
                          "forces the tagged verdict ([FEEDBACK] ... [RESULT] n [END]), which an integer-format judge "
                          "does not write; set constrained_decoding: false, or verdict_format: tagged for a judge "
                          "that writes the tagged verdict")
    log.info("verdict format %s for %s (%s)", fmt, layout.root, why)
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
    config = resolved_verdict_format(config, layout)
    template, why = prompt_template_and_why(config.verdict_format, read_manifest(layout.root))
    log.log(logging.WARNING if layout.prompt_version not in ("", template.version) else logging.INFO,
            "prompt template %s for %s (%s)", template.version, layout.root, why)  # a warning: not the one it learned

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        state: ServerState = app.state.serve
        try:
            # Inside: an engine started before a later one failed to start (or run.json could not be written) is
            # stopped below, not left to the parent-death signal.
            try:
                await start_engines(state)
            except Exception as err:  # noqa: BLE001 - judge-serve cannot serve: failed, said once, exit 1
                state.status, state.failure = "failed", f"the engines could not be started ({type(err).__name__}: {err})"
                # A bug's traceback is worth the log; an OSError's one line says it all (a folder, a descriptor).
                log.error("judge-serve cannot start: %s", state.failure, exc_info=not isinstance(err, OSError))
                if state.on_fatal:
                    state.on_fatal()
            yield
        finally:
            # Reached on uvicorn's lifespan shutdown, and also when a second SIGINT made uvicorn skip it (its force
            # exit): asyncio.run then cancels this task on its way out and waits for it, so the engines are still
            # stopped before judge-serve exits.
            await stop_engines(state)

    app = FastAPI(title="judge-serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.serve = ServerState(config=config, layout=layout, template=template)
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

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        if err.status_code == 404:
            # the path is the client's, of any length: echoed clipped
            message = (f"no route {clip_message(request.method)} {clip_message(request.url.path)} on judge-serve "
                       "(see /v1/models, /v1/judge)")
        else:
            message = str(err.detail)
        return error_response(err.status_code, message, headers=getattr(err, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, err: RequestValidationError) -> JSONResponse:
        return error_response(400, f"the request is not valid: {err.errors()[:1]}")

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, err: ClientDisconnect) -> Response:
        # The client left while its body was read (or the body deadline cut it off, answered 408 already), or while
        # its work ran (unless_disconnected cancelled it): nobody is there to answer, and it is no server error.
        return Response(status_code=499)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception) -> JSONResponse:
        # A bug: the client gets OpenAI's shape, not Starlette's text/plain 500; the traceback goes to the log (uvicorn
        # logs it as "Exception in ASGI application" once this answer is sent: Starlette raises the error on).
        request_id = request.headers.get("x-request-id", "")
        # the path (decoded: %1b is an ESC) and the id are the client's, shown as a console shows them
        log.error("unexpected %s on %s %s (request id %s)", type(err).__name__, request.method,
                  visible(request.url.path), visible(request_id))
        return error_response(500, f"judge-serve failed on this request ({type(err).__name__}, request id "
                              f"{request_id}); its log has the traceback", "server_error", code="internal_error",
                              headers={"X-Request-Id": request_id} if request_id else None)

    def state_of(request: Request) -> ServerState:
        return request.app.state.serve

    def keyed(request: Request) -> bool:
        """Whether the caller holds the key (always, when judge-serve has none: then everything is open)."""
        if not config.api_key:
            return True
        return bearer_matches(request.headers.raw, config.api_key)

    def healed(state: ServerState, role: str) -> bool:
        """Whether ``role``'s dead engine is restarted, or will be: one being restarted, or one of judge-serve's own
        that died while judge-serve was starting (``serve.supervision.heal_the_dead`` restarts it once the others
        are up; a start that fails instead fails judge-serve). An attached engine is not judge-serve's to restart."""
        return state.healing(role) or (state.status == "starting" and state.engines[role].owned)

    def engine_state(state: ServerState, role: str) -> str:
        """``role``'s engine as ``/health`` shows it: ``restarting``, ``dead``, ``starting`` (judge-serve has not
        seen every engine answer yet: it cannot tell one that loads from one that is up), ``never seen up`` (the
        same, but judge-serve failed or drains before it had: a start that timed out waiting for one of them
        records no death, and it never will be up) or ``up``. judge-serve reads each engine's model list
        (``engine_models``) once it has seen every engine answer, and turns ready only then."""
        if state.healing(role):
            return "restarting"
        if role in state.dead_reason:
            return "dead"
        if state.status == "ready" or role in state.engine_models:
            return "up"
        return "starting" if state.status == "starting" else "never seen up"

    @app.get("/health")
    async def health(request: Request) -> JSONResponse:
        state = state_of(request)
        problem = state.failure if state.status == "failed" else next(
            (reason for role, reason in state.dead_reason.items() if not healed(state, role)), None
        )
        if not keyed(request):  # up or down, nothing about the engines (no URLs, pids)
            return JSONResponse({"status": "down" if problem else "up"}, status_code=503 if problem else 200)
        # No pid either (the key opens judging, not the machine's processes): run.json and the log have them.
        engines = {
            role: {
                "state": engine_state(state, role),
                "restarts": state.restarts.get(role, 0),
                "last_exit": state.last_exit.get(role),
            }
            for role in state.engines
        }
        if problem:
            return JSONResponse({"status": "unhealthy", "detail": sanitized(problem), "engines": engines}, status_code=503)
        status = "restarting" if state.retry_after and state.status == "ready" else state.status
        body = {"status": status, "judge_kind": state.layout.kind, "engines": engines}
        if state.dead_reason:
            role, reason = next(iter(state.dead_reason.items()))
            waiting = state.status == "starting" and not state.healing(role)
            body["detail"] = sanitized(f"{reason}; judge-serve restarts it once the other engines are up" if waiting
                                       else reason)
        return JSONResponse(body)

    @app.get("/ready")
    async def ready(request: Request) -> JSONResponse:
        state = state_of(request)
        problem = state.failure if state.status == "failed" else state.any_dead()
        if state.status == "ready" and not problem:  # an engine that exited since the watcher last looked
            problem = state.exited_unseen()
        # Without the key, the state alone, as /health: why an engine failed holds its log tail and command line.
        if state.status == "ready" and not problem:
            body = {"status": "ready", "model": config.model_name, "judge_kind": state.layout.kind}
            return JSONResponse(body if keyed(request) else {"status": "ready"})
        detail = problem or {"starting": "the engines are still starting", "draining": "shutting down"}.get(state.status, state.status)
        status = state.status if not problem else "unavailable"
        body = {"status": status, "detail": sanitized(detail)}
        return JSONResponse(body if keyed(request) else {"status": status}, status_code=503)

    def unavailable(state: ServerState, role: str, message: str) -> JSONResponse:
        return error_response(503, sanitized(message), "service_unavailable", code="engine_unavailable",
                              headers=state.retry_headers([role]))

    def unreadable(state: ServerState, role: str, what: str, err: Exception) -> JSONResponse:
        """An engine's answer that broke off while it was read (its connection dropped, a read timed out): a 503
        with ``Retry-After`` when the engine has died meanwhile, else a 502; the error itself stays in the log."""
        log.warning("the %s engine's %s could not be read: %s: %s", role, what, type(err).__name__, visible(err))
        problem = state.engine_problem(role)
        if problem:
            return unavailable(state, role, problem)
        return error_response(502, f"the {role} engine's {what} could not be read ({type(err).__name__})",
                              "server_error", code="engine_error")

    def served_names(state) -> tuple[str, ...]:
        """The names judge-serve answers to: the generating engine's and its own ``model_name``."""
        return state.judge.settings.names if state.judge is not None else (config.model_name,)

    def not_ready_in_time(step: str) -> JSONResponse:
        """The 504 of a proxied request whose body was not made ready for the engine by its deadline: ``step`` is
        the wait that ran past it, ``"decode"`` or ``"encode again"`` (a body the token bound or the engine's name
        rewrote), each named in its own words."""
        within = f"within request_timeout_s={config.request_timeout_s:g} s"
        message = {
            "decode": f"the request's body was not decoded {within} (its reading and the wait for a turn to decode "
                      "it included)",
            "encode again": f"the request's body, rewritten for the engine (its token limit or model set), was not "
                            f"encoded again {within} (its reading, its decoding and the wait for a turn to encode "
                            "it again included)",
        }[step]  # fmt: skip
        return error_response(504, message, "timeout", code="timeout")

    async def proxy(request: Request, role: str, path: str, bounded: bool = False) -> Response:
        state = state_of(request)
        # The body's own checks before the engine's health, as on /v1/judge: a request that can never succeed gets
        # its 400 while the engine restarts, not a 503 whose Retry-After has the client send it again for ever.
        # The waits for a turn to decode a large body, then to encode it again (serve.schema.read_off_loop), end at
        # a deadline that runs from the headers, as /v1/judge's does: other large bodies could hold them unbounded.
        deadline = time.monotonic() + config.request_timeout_s
        data = await request.body()
        asked = None  # the model the request names, for the engine's 404 if it has no such model
        if request.method == "POST" and data:

            def read() -> Any:
                body = decode_json_body(data)
                check_values(body)  # an over-long number would fail json.dumps below: a 400 naming it, not a 500
                return body

            try:
                body = await read_off_loop(len(data), read, state.large_decodes, deadline)
            except RequestError as err:
                return error_response(err.status, err.message, param=err.param, code=err.code)
            except asyncio.TimeoutError:
                return not_ready_in_time("decode")
            asked = body.get("model") if isinstance(body, dict) else None
            if isinstance(asked, str) and len(asked) > _MAX_MODEL_NAME_CHARS and asked not in served_names(state):
                return error_response(404, unknown_model_message(asked, served_names(state)), "not_found_error",
                                      "model", "model_not_found")
            sent_body = body
            if bounded:
                sent_body, refused = proxied_token_bound(body, path, config.max_proxy_tokens,
                                                         state.engine_window(role))
                if refused is not None:
                    return refused
            # judge-serve's own name (what GET /v1/models/{id} and /v1/judge answer to) for an attached engine
            # serving under another: sent under the engine's name, which vLLM would otherwise refuse with a 404, on
            # every route whose body names a model (/tokenize and /detokenize as the generation routes).
            engine_name = state.engine_models.get(role)
            if (isinstance(sent_body, dict) and engine_name and sent_body.get("model") != engine_name
                    and sent_body.get("model") in served_names(state)):
                sent_body = {**sent_body, "model": engine_name}
            if sent_body is not body:  # encoded again as it was decoded: off the loop when large
                try:
                    data = await read_off_loop(len(data), lambda: json.dumps(sent_body, ensure_ascii=False).encode(),
                                              state.large_decodes, deadline)
                except asyncio.TimeoutError:
                    return not_ready_in_time("encode again")
        # Looked up now, not before the body arrived (up to body_timeout_s): the engine may have died meanwhile, or
        # been restarted on another port under another key; its old port may be anyone's.
        problem = state.engine_problem(role)
        if problem:
            return unavailable(state, role, problem)
        assert state.http is not None
        engine = state.engines[role]
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARD_REQUEST_HEADERS}
        headers.update(engine.auth_headers)
        # Every body asked for as is, whatever the client accepts: judge-serve reads some itself (the model list, an
        # engine's error), and answers them anew as plain JSON; a compressed one would be read as JSON (a 502, or an
        # error message of compressed bytes). The session passes the others through byte for byte, headers and all.
        headers["accept-encoding"] = "identity"
        # A generation the client gives up on is cancelled, its connection to the engine closed (vLLM then aborts it).
        # A response that came in as the route was cancelled is nobody's: closed, or its pooled connection stays
        # taken while the engine generates on for nobody.
        sending = await unless_disconnected(request, unless_dead(state.http.request(
            request.method, engine.url + path, data=data, headers=headers,
            params=list(request.query_params.multi_items()), skip_auto_headers={"Content-Type"},
        ), state.dead[role], discard=_close), discard=_close_unclaimed)  # fmt: skip
        if sending is None:
            return unavailable(state, role, state.dead_reason.get(role, f"the {role} engine died"))
        try:
            upstream_response = sending.result()
        except EngineBusy:
            # Every pooled connection held by other generations past request_timeout_s: judge-serve is busy, not the
            # engine unreachable (judgments have their own pool, serve.engine_client.EngineHttp).
            log.warning("a proxied %s call found no free connection to the %s engine in time", path, role)
            return error_response(503, f"judge-serve's connections to the {role} engine are all in use by other "
                                  "generations; retry", "service_unavailable", code="server_busy",
                                  headers=state.retry_headers([role]))
        except aiohttp.ConnectionTimeoutError as err:
            # A TimeoutError too, but the engine was never reached (nothing is running there, or the route to it is
            # lost): an engine that cannot be reached, 503 with Retry-After, not an answer that took too long.
            log.warning("the %s engine at %s is unreachable: %s: %s", role, engine.url, type(err).__name__,
                        visible(err))
            return unavailable(state, role, f"the {role} engine is unreachable ({type(err).__name__})")
        except asyncio.TimeoutError:
            return error_response(504, f"the {role} engine did not answer within {config.request_timeout_s:g} s",
                                  "timeout", code="timeout")
        except aiohttp.ClientError as err:
            log.warning("the %s engine at %s is unreachable: %s: %s", role, engine.url, type(err).__name__,
                        visible(err))
            return unavailable(state, role, f"the {role} engine is unreachable ({type(err).__name__})")
        if upstream_response.status >= 400:
            try:
                raw = await read_up_to(upstream_response, _MAX_ENGINE_ERROR_BYTES)
            except (aiohttp.ClientError, asyncio.TimeoutError) as err:
                return unreadable(state, role, f"error answer ({upstream_response.status})", err)
            finally:
                upstream_response.release()
            return engine_error(upstream_response.status, raw, role, names=served_names(state), asked_model=asked,
                                retry_headers=state.retry_headers([role]),
                                engine_retry_headers=retry_headers_of(upstream_response.headers))
        event_stream = upstream_response.headers.get("content-type", "").startswith("text/event-stream")

        out = SentStream(responses=path == "/v1/responses") if event_stream else None
        if out is not None:  # judge-serve's drain ends a stream it cuts from what the relay read of it
            request.scope.get(SENT_STREAM_SCOPE, []).append(out)

        async def body():
            try:  # an event stream the engine breaks off ends with an error event, as vLLM's own do (serve.errors)
                # Raced against the engine's death chunk by chunk, as the wait for its headers is: an engine that
                # goes silent with its connection open is abandoned once declared dead, not read until the timeout.
                chunks = until_dead(upstream_response.content.iter_any(), state.dead[role])
                async for chunk in relayed_stream(chunks, role, event_stream, out):
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
    app.add_api_route("/version", passed_through("/version"), methods=["GET"])

    # Each model entry is the engine's (max_model_len included) plus judge-serve's own caps (judge.wire.ModelLimits),
    # so that a client fits its max_tokens before the work starts instead of meeting a 400 per request; and the prompt
    # and verdict format /v1/judge works with, as decided here (resolved_verdict_format: the export manifest, the model
    # type), which a client cannot tell from the served name: it records them, and parses what it reads itself alike.
    trained = layout.trained_lengths if layout is not None else None
    limits = ModelLimits(judge_max_tokens=config.max_tokens, max_proxy_tokens=config.max_proxy_tokens,
                         trained_max_completion_length=trained and trained.max_completion_length,
                         prompt_version=template.version, verdict_format=config.verdict_format).advertised()
    # Which weights its own engines load: a client's resume tells a judge retrained into the same folder from the one
    # its verdicts were asked of. An attached engine loaded what it loaded: judge-serve cannot say, so says nothing.
    # The one the state took (serve.supervision.ServerState), which the healer checks before it restarts an engine.
    fingerprint = None if config.generator_url or config.pooling_url else app.state.serve.weights_fingerprint
    limits.update({"weights_fingerprint": fingerprint} if fingerprint else {})
    # Its own engines' root is the checkpoint the fingerprint covers, not the folder the engine loaded: a released
    # -r judge's generator loads judge-serve's derived view, whose place (derived_cache_dir, XDG_CACHE_HOME on a
    # requeued node) is no other judge, and a resume held to it would be refused.
    own_root = None if config.generator_url or layout is None else root_identity(str(layout.root))

    async def engine_json(request: Request, path: str, what: str) -> tuple[Any, Response | None]:
        """The generating engine's JSON answer to ``GET path``, read whole (to rewrite it), so at most
        ``MAX_ANSWER_BYTES``; or the answer to give instead (the engine's error, a 502 or 503)."""
        answer = await proxy(request, "generator", path)
        if answer.status_code != 200 or not isinstance(answer, StreamingResponse):
            return None, answer
        parts, size = [], 0
        try:
            async for chunk in answer.body_iterator:
                parts.append(chunk)
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:  # the engine's connection is released as the iterator is closed
                    await answer.body_iterator.aclose()
                    return None, error_response(502, f"the generator engine's {what} could not be read (over "
                                                f"{MAX_ANSWER_BYTES} bytes)", "server_error", code="engine_error")
        # the iterator ended on it, its connection released (EngineUnavailable: declared dead meanwhile, until_dead)
        except (aiohttp.ClientError, asyncio.TimeoutError, EngineUnavailable) as err:
            return None, unreadable(state_of(request), "generator", what, err)
        try:
            return json.loads(b"".join(parts)), None
        except JSON_REFUSALS:
            return None, error_response(502, f"the generator engine's {what} could not be read", "server_error",
                                        code="engine_error")

    async def model_list(request: Request) -> tuple[dict[str, Any] | None, Response | None]:
        body, failed = await engine_json(request, "/v1/models", "model list")
        if failed is not None:
            return None, failed
        try:
            entries = body["data"]
            listed = {entry.get("id") for entry in entries if isinstance(entry, dict)}
            for entry in entries:
                if isinstance(entry, dict):
                    # vLLM's own fields (vllm/entrypoints/serve/engine/protocol.py, ModelCard): its ``root`` is the
                    # folder --model loaded (a path under someone's home, vllm/entrypoints/openai/models/serving.py
                    # show_available_models), a LoRA's ``parent`` what --lora-modules named; no client may read a
                    # path (docs/security.md): the root as a digest of that path (judge.wire.root_identity), which
                    # judge-eval still holds a resume and a comparison to (an attached engine gives no
                    # weights_fingerprint: its root is all that tells another folder served under the same name),
                    # and a parent only when it is a listed model.
                    root = entry.pop("root", None)
                    # A LoRA adapter's entry names its base model as its parent (vLLM's show_available_models); its
                    # root is the adapter's, and the checkpoint's fingerprint does not cover it: on that entry it
                    # would let a resume against another adapter under the same name pass (judge-eval's held_root
                    # takes an equal fingerprint for the same weights); without it, the adapter's root is compared.
                    adapter = isinstance(entry.get("parent"), str) and entry["parent"] in listed
                    if own_root is not None and not adapter:
                        entry["root"] = own_root
                    elif isinstance(root, str) and root:
                        entry["root"] = root_identity(root)
                    if "parent" in entry and not adapter:
                        entry["parent"] = None
                    entry.update({k: v for k, v in limits.items() if k != "weights_fingerprint"} if adapter else
                                 limits)
        except (KeyError, TypeError):
            return None, error_response(502, "the generator engine's model list could not be read", "server_error",
                                        code="engine_error")
        return body, None

    @app.get("/tokenizer_info")
    async def tokenizer_info(request: Request) -> Response:
        # vLLM answers its tokenizer's init_kwargs less vocab_file and merges_file only
        # (vllm/entrypoints/serve/tokenize/serving.py, TokenizerInfo): name_or_path is still the model folder, and a
        # tokenizer may name other files. What lm-eval's remote tokenizer reads (its special tokens, the chat
        # template) stays; no path does.
        info, failed = await engine_json(request, "/tokenizer_info", "tokenizer info")
        if failed is not None:
            return failed
        if not isinstance(info, dict):
            return error_response(502, "the generator engine's tokenizer info could not be read", "server_error",
                                  code="engine_error")
        return JSONResponse({key: value for key, value in info.items() if not _names_a_path(key, value)})

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        body, failed = await model_list(request)
        return failed if failed is not None else JSONResponse(body)

    @app.get("/v1/models/{model_id:path}")
    async def model(request: Request, model_id: str) -> Response:
        body, failed = await model_list(request)
        if failed is not None:
            return failed
        entries = [entry for entry in body["data"] if isinstance(entry, dict)]
        state = state_of(request)
        # The names /v1/judge answers to: the engine's (listed) and judge-serve's own, which an attached engine serving
        # under another name does not list; that one is the generating engine's entry, so the two routes agree.
        names = served_names(state)
        found = next((entry for entry in entries if entry.get("id") == model_id), None)
        if found is None and model_id in names:
            generator = state.engine_models.get("generator")
            found = next((entry for entry in entries if entry.get("id") == generator), entries[0] if entries else None)
        if found is None:
            listed = [entry["id"] for entry in entries if isinstance(entry.get("id"), str)]
            refused = unknown_model(model_id, list(dict.fromkeys([*listed, *names])))
            return error_response(404, refused.message, param=refused.param, code=refused.code)
        return JSONResponse(found)

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        return await proxy(request, "generator", "/metrics")

    @app.get("/metrics/pooler")
    async def metrics_pooler(request: Request) -> Response:
        if "pooler" not in state_of(request).engines:
            return error_response(404, "this judge has no pooling engine (seq2seq checkpoint)", "not_found_error",
                                  code="not_found")
        return await proxy(request, "pooler", "/metrics")

    @app.post("/v1/judge")
    async def judge_route(request: Request) -> Response:
        state = state_of(request)
        # The body is validated, and checked against this server's judge (serve.judging.Judge.check), before the
        # engines' health is asked: a broken request gets its 4xx naming the field even while an engine restarts (a
        # 503 would tell the client to retry what can never succeed). The server's bounds on items and judgments are
        # counted before anything is validated.
        # The deadline runs from the headers, as /get_reward's does: the body's reading and the wait for a turn to
        # decode a large one (serve.schema.read_off_loop) count too, or other large bodies could hold it unbounded.
        deadline = time.monotonic() + config.request_timeout_s
        data = await request.body()
        judge = state.judge  # None only until the engines first came up

        def read() -> tuple[Any, Any]:
            parsed = parse_judge_request(decode_json_body(data, nesting=JUDGE_BODY_NESTING),
                                         max_items=config.max_batch_items,
                                         max_judgments=config.max_judgments_per_request)
            # The request's own checks (model, max_tokens, constrained, criteria, tasks, scales, an item too long to
            # fit) need no engine: asked here, before the engines' health. Before the judge exists, those its
            # configuration and the taxonomy decide: a request that never can succeed gets no 503 saying retry.
            if judge is None:
                check_before_start(parsed, config, state.layout.kind, state.engine_models)
                return parsed, None
            return parsed, judge.check(parsed)

        def too_long() -> JSONResponse:
            # The openai SDK resends a 5xx (twice by default) unless told not to: a request that outlived the
            # deadline would take as long again, its judging done up to three times for one answer.
            return error_response(504, f"the judgment took longer than request_timeout_s={config.request_timeout_s:g} "
                                  "s (its body's reading and decoding included)", "timeout", code="timeout",
                                  headers={"x-should-retry": "false"})

        try:
            parsed, checked = await read_off_loop(len(data), read, state.large_decodes, deadline)
        except RequestError as err:
            return _refused(err)
        except asyncio.TimeoutError:
            return too_long()
        # judge-serve as a whole first: one that failed before it registered any engine has none to ask, and no judge.
        problem = f"judge-serve cannot serve: {state.failure}" if state.status == "failed" else next(
            filter(None, (state.engine_problem(role) for role in state.engines)), None)
        if problem is None and state.judge is None:  # no engine registered yet, or the judge not built yet
            problem = "the engines are still starting; retry when /ready answers 200"
        if problem:
            return error_response(503, sanitized(problem), "service_unavailable", code="engine_unavailable",
                                  headers=state.retry_headers(state.engines))
        try:
            # A client that disconnects has its judgments cancelled: those not yet sent never reach the engine.
            # The request id goes with each of its engine calls, as on the proxied routes (the engine logs it).
            judged = state.judge.run(checked or parsed, request_id=request.headers.get("x-request-id", ""))
            result = await unless_disconnected(request, asyncio.wait_for(judged, timeout=deadline - time.monotonic()))
        except RequestError as err:
            return _refused(err)
        except (EngineUnavailable, EngineFailure) as err:
            return judgment_failed(err, state)
        except asyncio.TimeoutError:
            return too_long()
        return JSONResponse(result.to_json())

    install_reward_routes(app, config, error_response)  # POST /get_reward: OpenRLHF's remote reward protocol
    return app

"""judge-serve's errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}`` with a string
``code``, the type and code following from the status when the caller names none, and no URL, path, address or
process id in a message a client reads (``sanitized``; an engine's 5xx text stays in judge-serve's log).

A streamed reply (``text/event-stream``) carries its errors as events, as vLLM sends them: ``data: {"error": ...}``
then ``data: [DONE]`` (vllm/entrypoints/openai/chat_completion/serving.py, ``chat_completion_stream_generator``);
on ``/v1/responses``, ``event: error`` and ``data: {"type": "error", ...}`` (OpenAI's ``ResponseErrorEvent``).
``relayed_stream`` passes an engine's stream on, its error events sanitized as the other answers are, and ends a
stream the engine broke off, or whose body ended before its last event (``[DONE]``, ``response.completed``), with
such an event (and ``[DONE]``, but on ``/v1/responses``), which OpenAI's SDK raises
as an ``APIError`` or, on ``/v1/responses``, yields as its ``ResponseErrorEvent`` (a cut stream it raises as a
connection error, with nothing said of why). A 4xx whose message is vLLM's for a prompt past the window
(``judge.verdicts.CONTEXT_LIMIT``) has OpenAI's code ``context_length_exceeded``, in a stream too.

Why one module of ~580 lines: an answer's error and a stream's error event are one shape, sanitized one way, and a
stream is ended by the relay or by the drain with the same event, each reading what went out with one
``SentStream``; split, the two would drift."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import aiohttp
from fastapi.responses import JSONResponse

from judge.plumbing.console_logging import visible
from judge.plumbing.json_reading import JSON_REFUSALS, json_or_none
from judge.plumbing.retry import retryable_status
from judge.verdicts import CONTEXT_LIMIT
from serve.engine_client import MAX_ANSWER_BYTES, EngineBusy, EngineFailure, EngineUnavailable
from serve.schema import clip_message

__all__ = ["engine_error", "engine_refused", "error_body", "error_response", "judgment_failed", "sanitized", "unknown_model_message",
           "relayed_stream", "renamed_engine_message", "RENAMED_ENGINE_RETRY_AFTER_S", "SENT_STREAM_SCOPE", "SentStream"]

log = logging.getLogger("judge_serve")

#: ``Retry-After`` of the 503 for an engine that no longer serves judge-serve's model name, when the caller gives
#: none: the seconds judge-serve's own 503s for an engine under way default to (serve.supervision.ServerState).
RENAMED_ENGINE_RETRY_AFTER_S = 5

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


def error_response(status: int, message: str, kind: str | None = None, param: str | None = None,
                   code: str | None = None, headers=None) -> JSONResponse:
    """An OpenAI-shaped error answer (its type and code from the status unless given)."""
    kind = kind or _TYPE_OF_STATUS.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = code or _CODE_OF_STATUS.get(status, "engine_error" if status >= 500 else "invalid_request")
    return JSONResponse(error_body(message, kind, param, code), status_code=status, headers=headers)


def unknown_model_message(model: str, names: Sequence[str]) -> str:
    """The message of the 404 for a model name judge-serve does not serve, naming every name it answers to."""
    served = " or ".join(f"`{name}`" for name in names)
    # The name is the client's, of any length: echoed clipped.
    return f"model: the model `{clip_message(model)}` does not exist; this server serves {served}"


def _engine_detail(detail: Any, raw: bytes) -> tuple[str, Any, Any]:
    """(message, param, code) of an engine's error body (``detail``, decoded JSON or None; ``raw``, its bytes)."""
    inner = detail.get("error") if isinstance(detail, dict) else None
    if isinstance(inner, dict):
        message, param, code = inner.get("message"), inner.get("param"), inner.get("code")
    elif isinstance(inner, str):  # vLLM's own 401: {"error": "Unauthorized"}
        message, param, code = inner, None, None
    else:
        message, param, code = (detail.get("detail") if isinstance(detail, dict) else None), None, None
    if not isinstance(message, str):
        message = raw[:500].decode("utf-8", "replace")
    return message, param, code


def _engine_error_body(status: int, message: str, param: Any, code: Any, role: str,
                       names: Sequence[str] = (), asked_model: Any = None) -> tuple[int, dict[str, Any]]:
    """(status, OpenAI-shaped body) for an engine's error: see ``engine_error``."""
    if status >= 500:
        log.error("the %s engine answered %d: %s", role, status, visible(message, 2000))
        return 502, error_body(f"the {role} engine failed (it answered {status}); judge-serve's log has its message",
                               "server_error", code="engine_error")
    if status == 401:  # judge-serve's own key to its engine was refused: not the client's fault
        log.error("the %s engine refused judge-serve's key (401)", role)
        return 502, error_body(f"the {role} engine refused judge-serve's credentials", "server_error",
                               code="engine_auth_error")
    if status == 404 and param == "model" and isinstance(asked_model, str) and asked_model in names:
        # A name judge-serve serves, which the engine no longer does: an attached engine restarted under another
        # name. "model X does not exist; this server serves X" would contradict itself; the client's request is
        # right, and it may succeed once the engine serves the name again.
        log.error("the %s engine answered 404 for the model `%s`, one of judge-serve's names: it no longer serves "
                  "it (restarted under another name?)", role, asked_model)
        return 503, error_body(renamed_engine_message(role, [asked_model]), "service_unavailable",
                               code="engine_unavailable")
    if status == 404 and param == "model" and isinstance(asked_model, str) and names:
        # vLLM's 404 for a model it does not serve (vllm/entrypoints/serve/engine/serving.py ``_check_model``) has an
        # integer code and lists the engine's names only: answered as /v1/judge and GET /v1/models/{id} answer it.
        return 404, error_body(unknown_model_message(asked_model, names), "not_found_error", "model", "model_not_found")
    kind = _TYPE_OF_STATUS.get(status, "invalid_request_error")
    if not isinstance(code, str):
        # A prompt past the window: OpenAI's own code for it, which a client checks to shorten and retry. vLLM's
        # wording is the one judge.verdicts.CONTEXT_LIMIT reads on /v1/judge.
        code = "context_length_exceeded" if CONTEXT_LIMIT.search(message) else _CODE_OF_STATUS.get(
            status, "invalid_request")
    return status, error_body(sanitized(message), kind, param if isinstance(param, str) else None, code)


def engine_error(status: int, raw: bytes, role: str, *, names: Sequence[str] = (),
                 asked_model: Any = None, retry_headers: Mapping[str, str] | None = None,
                 engine_retry_headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An engine's error answer in OpenAI's shape with a string ``code``: a 4xx keeps the engine's message (its
    internals replaced, ``sanitized``), a 5xx says only that the engine failed (its text goes to judge-serve's log).
    vLLM's 404 for a model it lacks, given the ``asked_model`` and judge-serve's served ``names``, is OpenAI's
    ``model_not_found`` naming them, unless ``asked_model`` is one of those names: then the engine no longer serves
    what judge-serve does, a 503 with ``retry_headers`` (by default ``Retry-After: RENAMED_ENGINE_RETRY_AFTER_S``).
    A 408, 409 or 429 keeps ``engine_retry_headers``, the engine's own (``serve.engine_client.retry_headers_of``)."""
    detail = json_or_none(raw)
    message, param, code = _engine_detail(detail, raw)
    status, body = _engine_error_body(status, message, param, code, role, names, asked_model)
    if status == 503:
        if retry_headers is None:
            retry_headers = {"Retry-After": str(RENAMED_ENGINE_RETRY_AFTER_S)}
        return JSONResponse(body, status_code=status, headers=dict(retry_headers))
    if status < 500 and retryable_status(status) and engine_retry_headers:
        return JSONResponse(body, status_code=status, headers=dict(engine_retry_headers))
    return JSONResponse(body, status_code=status)


def renamed_engine_message(role: str | None, expected: Sequence[str]) -> str:
    """The 503's message for an engine (``role``; None: unknown) that answers 404 for the model name judge-serve
    expects it to serve (``expected``)."""
    shown = " or ".join(f"`{clip_message(name)}`" for name in expected)
    engine = f"the {role} engine" if role else "an engine"
    return (f"{engine} no longer serves the model name judge-serve expects{f' ({shown})' if shown else ''}: it was "
            "restarted under another name; retry later")


def engine_refused(err: EngineFailure) -> bool:
    """Whether ``err`` is an engine's refusal of one judgment it was asked for (a 4xx with the engine's own message: a
    window, a sampling value), which fails that judgment alone. Not judge-serve's key refused (401) or forbidden
    (403), nor a 404: vLLM's for the model is an engine serving another name, any other a route the engine lacks (an
    attached pooler without ``/classify``); each fails every judgment alike, the whole request's answer
    (``judgment_failed``). Nor a status a later attempt can pass (408, 409, 429: ``retryable_status``): a zero
    reward for a busy engine would train the policy on the engine's load, where the client's retry gets the verdict."""
    return (err.public is None and 400 <= err.status < 500 and err.status not in (401, 403, 404)
            and not retryable_status(err.status))


def judgment_failed(err: EngineUnavailable | EngineFailure, state: Any) -> JSONResponse:
    """A judgment an engine could not complete, on ``/v1/judge`` and ``/get_reward`` alike (``state``: the server's
    ``ServerState``): 503 with ``Retry-After`` for a dead or unreachable engine, or one that answers vLLM's 404 for its
    model (it no longer serves the name judge-serve sends: an attached engine restarted under another); 503
    ``server_busy`` for a call that found none of judge-serve's connections free in time; an engine's refusal
    (4xx but 401, 403 and 404) with its own status and message, sanitized, a 408, 409 or 429 with the engine's own
    ``Retry-After`` (``EngineFailure.retry_headers``) when it sent one, and none of judge-serve's; 502 for an engine
    that failed (a 5xx, its
    message left in judge-serve's log), refused judge-serve's own key (401), forbade it (403) or lacks the route
    (any other 404); 503 ``queue_full`` with the bound's
    ``Retry-After`` for a request over ``max_queued_judgments`` (``serve.queued.QueueFull``)."""
    from serve.queued import QueueFull

    if isinstance(err, QueueFull):  # refused before any of its work: nothing of it reached an engine
        log.info("request refused: %s", err)
        return error_response(503, str(err), "service_unavailable", code="queue_full",
                              headers={"Retry-After": str(err.retry_after_s)})
    if isinstance(err, EngineBusy):  # judge-serve's own connections all in use: the engine is not to blame
        log.warning("judgment refused: %s", visible(err, 2000))
        return error_response(503, "judge-serve's connections to its engines are all in use; retry", "service_unavailable",
                              code="server_busy", headers=state.retry_headers(state.engines))
    if isinstance(err, EngineUnavailable):
        # A dropped connection can beat the watcher to an engine's death: name the engine by its role, not URL.
        log.warning("engine unavailable during a judgment: %s", visible(err, 2000))
        message = str(err)
        for role, engine in state.engines.items():
            if engine.url in message:  # the connection's error by its type's name, as the proxied routes say it
                message = (f"the {role} engine is unreachable ({type(err.__cause__).__name__})"
                           if err.__cause__ is not None else f"the {role} engine is unavailable")
        return error_response(503, sanitized(message), "service_unavailable", code="engine_unavailable",
                              headers=state.retry_headers(state.engines))
    log.error("engine failure during a judgment: %s", visible(err, 2000))
    status, public = err.status, err.public
    if status == 404 and public is None and getattr(err, "param", None) == "model":
        # judge-serve names its engines' models itself (serve.judging.JudgeSettings.engine_models): vLLM's 404 for
        # the model (its param "model") is an engine that no longer serves that name (an attached one restarted
        # under another), not the client's fault. Any other 404 (a route the engine lacks) is not worth retrying.
        judge = getattr(state, "judge", None)
        expected = sorted(set(judge.settings.engine_models.values())) if judge is not None else []
        return error_response(503, renamed_engine_message(None, expected), "service_unavailable",
                              code="engine_unavailable", headers=state.retry_headers(state.engines))
    if public is None and 400 <= status < 500 and status not in (401, 403, 404):
        # The engine refused what this request asked of it (a window, a sampling value): the client's to change, as
        # on the proxied routes (engine_error). A 502 would be retried by every client to the same end. A status a
        # later attempt can pass keeps the engine's Retry-After: judge-serve knows no better wait than the engine's.
        headers = err.retry_headers if retryable_status(status) else None
        return error_response(status, sanitized(str(err)), headers=headers or None)
    # A 403 (judge-serve forbidden) or a 404 for a route the engine lacks, passed on, would read as the client's own
    # key refused or as judge-serve lacking /v1/judge: judge-serve's failure, as the 401 of its key is.
    if public:
        message = public
    elif status == 401:
        message = "the engine refused judge-serve's credentials"
    elif status in (403, 404):
        message = (f"the engine refused judge-serve's call (it answered {status}: judge-serve is forbidden, or the "
                   "engine lacks the route); judge-serve's log has its message")
    else:
        message = f"the engine failed (it answered {status}); judge-serve's log has its message"
    return error_response(502, message, "server_error", code="engine_error")


def _event_data(event: bytes) -> bytes | None:
    """An SSE event's data: its ``data:`` lines, wherever they stand among its other lines (``event:``, ``id:``),
    joined as the SSE standard joins them; None for an event without one."""
    lines = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


#: An error's data, as the stream's last event is told one before its JSON is read (it may be cut): vLLM's chat and
#: completion streams' ``{"error": ...}``, or the Responses stream's ``{"type": "error", ...}`` (OpenAI's
#: ``ResponseErrorEvent``; a JSON-escaped ``\"type\"`` inside a string does not match).
_ERROR_DATA_START = re.compile(rb'\s*\{\s*"error"\s*:')
_ERROR_TYPE = re.compile(rb'"type"\s*:\s*"error"')


def _error_event(event: bytes, role: str) -> bytes:
    """An SSE event as it goes to the client: an engine's error event in judge-serve's shape (its code a string, its
    message sanitized or, for a server error, left in the log), any other event unchanged. vLLM's chat and
    completion streams send ``data: {"error": {...}}``; its Responses stream ``event: error`` then ``data:
    {"type": "error", "code", "message", "param", "sequence_number"}`` (a string code), which keeps its shape and its
    other lines."""
    if b'"error"' not in event:  # most events: a chunk of text
        return event
    data = _event_data(event)
    detail = json_or_none(data) if data is not None else None
    if not isinstance(detail, dict):
        return event
    if isinstance(detail.get("error"), (dict, str)):
        message, param, code = _engine_detail(detail, data)
        status = code if isinstance(code, int) and 400 <= code < 600 else 500
        rewritten = _engine_error_body(status, message, param, None, role)[1]
    elif detail.get("type") == "error":
        message, code = detail.get("message"), detail.get("code")
        if not isinstance(message, str):
            message = data[:500].decode("utf-8", "replace")
        status = int(code) if isinstance(code, str) and code.isdecimal() and len(code) == 3 else code
        status = status if isinstance(status, int) and 400 <= status < 600 else 500
        error = _engine_error_body(status, message, detail.get("param"), None, role)[1]["error"]
        rewritten = {"type": "error", "code": error["code"], "message": error["message"], "param": error["param"]}
        if isinstance(detail.get("sequence_number"), int):
            rewritten["sequence_number"] = detail["sequence_number"]
    else:
        return event
    lines = event.split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"data:"))  # the data goes where it stood
    kept = [line for line in lines if not line.startswith(b"data:")]
    return b"\n".join([*kept[:at], b"data: " + json.dumps(rewritten).encode(), *kept[at:]])


#: The most bytes of one event of an engine's stream held while its end (a blank line) is awaited. An error event
#: (what judge-serve rewrites) is small; a legitimate event may be far larger (a streamed completion with ``echo`` and
#: ``logprobs`` sends the whole prompt's tokens and their top logprobs in its first event), so an event past this
#: whose data does not begin like an error's is passed on as it arrives, unheld, up to ``MAX_PASSED_EVENT_BYTES``.
MAX_PENDING_EVENT_BYTES = 1024 * 1024
#: The most bytes of one event passed on unheld: past this without its blank line the stream is no event stream.
MAX_PASSED_EVENT_BYTES = MAX_ANSWER_BYTES
#: How much of a long event's data, from its first ``data:`` line, is read to tell an error event
#: (``_ERROR_DATA_START``, ``_ERROR_TYPE``).
_ERROR_HEAD_BYTES = 4096
#: The SSE line that names an event an error outright (vLLM's Responses stream writes it before the data, whose
#: ``"type": "error"`` OpenAI's ``ResponseErrorEvent`` serializes last, past any head of a long message).
_ERROR_EVENT_LINE = re.compile(rb"(?m)^event:[ \t]*error[ \t]*$")
#: A Responses event's ``sequence_number`` (a JSON-escaped ``\"sequence_number\"`` inside a string does not match;
#: nor does a number of more digits than an event count has, which ``int`` could refuse).
_SEQUENCE_NUMBER = re.compile(rb'(?<!\\)"sequence_number"\s*:\s*(\d{1,18})(?!\d)')


#: The ``event:`` line of a Responses event a stream ends with: vLLM's last, ``response.completed``
#: (vllm/entrypoints/openai/responses/serving.py), OpenAI's other two ends (``response.incomplete``,
#: ``response.failed``) and its ``error``.
_RESPONSES_END_LINE = re.compile(rb"(?m)^event:[ \t]*(?:response\.(?:completed|incomplete|failed)|error)[ \t]*$")


def _head(event: bytes) -> bytes:
    """What of an event (or the start of a long one) is read to tell what it is: the lines before its first
    ``data:`` line and ``_ERROR_HEAD_BYTES`` from there."""
    start = 0 if event.startswith(b"data:") else event.find(b"\ndata:") + 1
    return event[:start + _ERROR_HEAD_BYTES]


def _is_error_data(data: bytes) -> bool:
    """Whether an event's data is an error's: it begins like one (``_ERROR_DATA_START``) or says its type is one
    (``_ERROR_TYPE``)."""
    return bool(_ERROR_DATA_START.match(data) or _ERROR_TYPE.search(data))


def _ends_stream(event: bytes, responses: bool) -> bool:
    """Whether ``event`` (one SSE event, or the start of a long one) is one an engine's stream ends with: ``data:
    [DONE]``, which vLLM's chat and completion streams send last on every path, their errors' included
    (vllm/entrypoints/openai/chat_completion/serving.py, completion/serving.py); on a ``responses`` stream one whose
    ``event:`` line is in ``_RESPONSES_END_LINE``; or an error event, which the client reads as the reply's failure.
    Read from the lines before its first ``data:`` line and ``_ERROR_HEAD_BYTES`` from there, as
    ``_looks_like_error`` reads a long event."""
    head = _head(event)
    if responses and _RESPONSES_END_LINE.search(head):
        return True
    data = _event_data(head)
    if data is None:
        return False
    return data.strip() == b"[DONE]" or _is_error_data(data)


def _looks_like_error(held: bytes) -> bool:
    """Whether a long event, read from the lines before its first ``data:`` line and ``_ERROR_HEAD_BYTES`` from
    there, is an error event (an ``event: error`` line, or data that begins like an error's) or no event at all (no
    ``data:`` line): either is held and cut, any other passed on."""
    head = _head(held)
    if _ERROR_EVENT_LINE.search(head):
        return True
    data = _event_data(head)
    return data is None or _is_error_data(data)


async def relayed_stream(chunks: AsyncIterator[bytes], role: str, event_stream: bool,
                         out: SentStream | None = None) -> AsyncIterator[bytes]:
    """An engine's answer as it goes to the client. An event stream goes event by event (``_error_event``), and when
    the engine breaks it off (it died, its connection dropped, a read timed out, or it was declared dead while
    silent: ``EngineUnavailable``, from ``serve.engine_client.until_dead``) it ends with an error event: on a
    Responses stream (``out.responses``: ``/v1/responses``) the Responses error event (``event: error``, ``data:
    {"type": "error", ...}``, its ``sequence_number`` one past the last one sent) and nothing after it, as vLLM ends its own; on the
    others ``data: {"error": ...}`` and ``data: [DONE]``. An event held whole and cut in two is dropped. An event
    longer than ``MAX_PENDING_EVENT_BYTES`` that has an ``event: error`` line, whose data begins like an error's, or
    that has no ``data:`` line, is cut so too; any other long event is passed on unheld, byte for byte, to its blank
    line (at most ``MAX_PASSED_EVENT_BYTES``). Bytes passed on cannot be taken back: one broken off mid-way is ended
    with a blank line before the error event, so the client reads it as an event whose JSON is cut (the openai SDK
    raises ``json.JSONDecodeError`` there, before it reaches the error event).
    A stream that ends (the engine's body complete: a close-delimited one ends so when its engine dies) before an
    event that ends it (``_ends_stream``: ``data: [DONE]``, a Responses stream's ``response.completed``) is broken
    off too, not passed on as complete: its last event, if it lacks its blank line, was not sent (an SSE client
    discards an event the body ends before its blank line, and vLLM ends every event with one), however whole its
    data (``[DONE]`` too) and whatever its size: held, it is dropped; passed on unheld, it is ended with a blank line
    first; and the error event ends the stream. An engine's error event whole but for its blank line is passed on,
    sanitized and ended, as the stream's failure: its code says more than judge-serve's. Once
    such an event was relayed to its blank line (``SentStream.finished``; a long one passed on unheld is not before
    it) the reply is whole: a break after it ends the stream as it stands.
    Any other body goes byte for byte, a break raised (its Content-Length then tells the client the body is short).
    Lines an event stream ends with CRLF or CR (the SSE standard allows all three; sse-starlette writes CRLF) go on
    ended with LF, the same events: an event's end is searched for as LF alone, so a stream framed otherwise would
    be held whole and its errors never read.
    What went out is read once, into ``out`` (a ``SentStream``, which says whether the stream is a Responses one;
    one for any other stream is made here when none is given), each part once the consumer took it: the yield returns only after the ASGI send of that part did, so a part
    whose send was cancelled is not counted. judge-serve's drain ends a stream it cuts from that same ``out``
    (``SENT_STREAM_SCOPE``) rather than reading every part a second time."""
    out = out if out is not None else SentStream(responses=False)
    parts = _relayed_parts(chunks, role, event_stream, out)
    try:
        async for part in parts:
            yield part
            if event_stream:
                out.sent(part)
    finally:
        await parts.aclose()


async def _relayed_parts(chunks: AsyncIterator[bytes], role: str, event_stream: bool,
                         out: SentStream) -> AsyncIterator[bytes]:
    """The parts ``relayed_stream`` passes on; ``out`` holds those the consumer took before each resumption."""
    responses = out.responses
    # The event not yet ended, as received: its parts, their size, its last byte. Each chunk is searched for the
    # blank line alone (with that byte: a "\n\n" may straddle two chunks), and the parts joined once, when it
    # ends: joining and searching all of it on every chunk would be quadratic in a stream without blank lines.
    parts: list[bytes] = []
    size, last = 0, b""
    after_cr = False  # the previous chunk ended with CR: a LF opening this one ends the same line
    passing: int | None = None  # bytes of a long event passed on unheld, its blank line not yet seen
    # What went to the client (out, kept by relayed_stream): once an event that ends the stream went out whole
    # (out.finished), what follows cannot make it incomplete; the closing error event is numbered one past the last
    # the client was sent, never past one held and dropped.

    def ended(message: str) -> bytes:
        return out.end(message, "engine_error")

    try:
        async for chunk in chunks:
            if not event_stream:
                yield chunk
                continue
            if after_cr and chunk.startswith(b"\n"):
                chunk, after_cr = chunk[1:], False
            if not chunk:
                continue
            after_cr = chunk.endswith(b"\r")
            if b"\r" in chunk:
                chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if passing is not None:
                found = (last + chunk).find(b"\n\n")
                if found < 0:
                    passing += len(chunk)
                    last = chunk[-1:]
                    if passing > MAX_PASSED_EVENT_BYTES:
                        log.warning("the %s engine's stream passed an event longer than %d bytes: cut off", role,
                                    MAX_PASSED_EVENT_BYTES)
                        yield ended(f"the {role} engine sent an event longer than {MAX_PASSED_EVENT_BYTES} bytes; "
                                    "the reply is incomplete")
                        return
                    yield chunk
                    continue
                end = found - len(last) + 2  # in chunk: just past the blank line that ends the passed event
                yield chunk[:end]
                chunk, passing, last = chunk[end:], None, b""
                if not chunk:
                    continue
            cut = (last + chunk).rfind(b"\n\n")
            if cut >= 0:
                end = cut - len(last) + 2  # in chunk: just past the last blank line
                *events, _ = b"".join([*parts, chunk[:end]]).split(b"\n\n")
                yield b"".join(_error_event(event, role) + b"\n\n" for event in events)
                chunk, parts, size = chunk[end:], [], 0
            if chunk:
                parts.append(chunk)
                size += len(chunk)
                last = chunk[-1:]
            elif cut >= 0:
                last = b""
            if size > MAX_PENDING_EVENT_BYTES:
                held = b"".join(parts)
                if not _looks_like_error(held):
                    yield held  # an ordinary event, only long: the rest follows as it arrives
                    passing, parts, size = len(held), [], 0
                    continue
                log.warning("the %s engine's stream holds an event longer than %d bytes: cut off", role,
                            MAX_PENDING_EVENT_BYTES)
                yield ended(f"the {role} engine sent an event longer than {MAX_PENDING_EVENT_BYTES} bytes; "
                            "the reply is incomplete")
                return
    except EngineUnavailable:  # declared dead while it streamed (serve.engine_client.until_dead)
        if not event_stream:
            raise
        if out.finished:
            log.info("the %s engine died after the last event of its stream: the stream is whole", role)
            return
        log.warning("the %s engine died while its stream was relayed: the stream is ended", role)
        yield ended(f"the {role} engine died; the reply is incomplete")
        return
    except (aiohttp.ClientError, asyncio.TimeoutError) as err:
        if not event_stream:
            raise
        if out.finished:
            log.info("the %s engine's stream broke off after its last event (%s): the stream is whole", role,
                     type(err).__name__)
            return
        log.warning("the %s engine's stream broke off: %s: %s", role, type(err).__name__, visible(err))
        yield ended(f"the {role} engine's stream broke off ({type(err).__name__}); the reply is incomplete")
        return
    if event_stream and passing is not None and not out.finished:
        # A long event passed on unheld whose blank line never came: not sent either, whatever its size.
        log.warning("the %s engine's stream ended inside an event, before its last", role)
        yield ended(f"the {role} engine's stream ended inside an event; the reply is incomplete")
        return
    if parts:
        # The stream's last event without its blank line: an error event is still the engine's, sanitized as every
        # other (its traceback, paths included, must not reach the client), and ended so that a client reads it.
        tail = b"".join(parts)
        event = tail.rstrip(b"\n")
        data = _event_data(event)
        if data is None or not _is_error_data(data):
            # an event that ends the stream ends it only whole: a response.completed cut inside its JSON does not
            if out.finished:
                yield tail
                return
            # Not sent, however whole its data: an SSE client discards an event the body ends before its blank
            # line, and vLLM ends every event with one. Dropped, as one held whole when the stream breaks.
            log.warning("the %s engine's stream ended inside an event, before its last", role)
            yield ended(f"the {role} engine's stream ended inside an event; the reply is incomplete")
            return
        try:
            json.loads(data)
        except JSON_REFUSALS:  # cut inside its JSON (or nested past what json.loads holds): unchanged, the engine's text (a traceback too) would reach the client
            log.warning("the %s engine's stream ended inside an error event", role)
            yield ended(f"the {role} engine's stream ended inside an event; the reply is incomplete")
            return
        yield _error_event(event, role) + b"\n\n"
        return
    if event_stream and not out.finished:
        last = "response.completed" if responses else "data: [DONE]"
        log.warning("the %s engine's stream ended before its last event (%s)", role, last)
        yield ended(f"the {role} engine's stream ended before its last event ({last}); the reply is incomplete")


#: The ASGI scope key under which judge-serve's drain (``serve.connections.RefuseWhileDrainingMiddleware``) leaves a
#: list for the ``SentStream`` of the event stream a request relays: the drain ends a stream it cuts from what the
#: relay read of it, the stream read once.
SENT_STREAM_SCOPE = "judge_serve.sent_streams"


class SentStream:
    """What of a relayed event stream went to the client, read as it goes (``sent``): enough to end it, once it is
    cut short, with the same event (``end``), whether the relay breaks it off or judge-serve's drain cuts it from
    outside the relay. A stream is whole (``finished``) once an event that ends it (``_ends_stream``) went out to
    its blank line: one passed on in part is not, however it began."""

    def __init__(self, responses: bool) -> None:
        self.responses = responses  # a /v1/responses stream
        self.sequence = -1  # the last sequence_number sent, on a Responses stream
        self.finished = False  # an event that ends the stream went out whole
        self.head = b""  # the start of the event in progress (what _ends_stream reads), bounded
        self.last = b""  # the last byte sent: a blank line may straddle two bodies
        self.tail = b""  # the last bytes sent, for a sequence_number straddling two bodies

    def sent(self, body: bytes) -> None:
        if not body:
            return
        if self.responses:
            self.sequence = max([self.sequence, *map(int, _SEQUENCE_NUMBER.findall(self.tail + body))])
            self.tail = (self.tail + body)[-64:]
        bound = _ERROR_HEAD_BYTES + 1024
        scan = self.last + body
        first = scan.find(b"\n\n")
        if first < 0:
            self.head += body[:max(bound - len(self.head), 0)]
        else:
            start = first - len(self.last)  # in body: where the first blank line begins (-1: in the last body)
            cut = scan.rfind(b"\n\n") - len(self.last) + 2  # in body: just past the last blank line
            events = [self.head + body[:max(start, 0)][:max(bound - len(self.head), 0)],
                      *body[start + 2:cut].split(b"\n\n")[:-1]]
            self.finished = self.finished or any(_ends_stream(event, self.responses) for event in events)
            self.head = body[cut:cut + bound]
        self.last = body[-1:]

    def end(self, message: str, code: str) -> bytes:
        """The bytes that end the stream, cut short for ``message`` (``code``): an error event (and ``data:
        [DONE]``, but on a Responses stream), after a blank line that ends an event sent in part; none once the
        stream is whole (``finished``)."""
        if self.finished:
            return b""
        opened = b"\n\n" if self.head.strip(b"\n") else b""
        return opened + _stream_error(message, self.responses, self.sequence + 1, code)


def _stream_error(message: str, responses: bool = False, sequence_number: int = 0, code: str = "engine_error") -> bytes:
    """The end of a stream judge-serve cuts short: on a Responses stream its error event (OpenAI's
    ``ResponseErrorEvent``: ``event: error``, ``data: {"type": "error", "code", "message", "param",
    "sequence_number"}``) and nothing after it, as vLLM's Responses stream has no ``[DONE]``
    (vllm/entrypoints/openai/responses/api_router.py, ``_convert_stream_to_sse_events``); on the others an error
    event in OpenAI's shape, then ``data: [DONE]``."""
    if responses:
        event = {"type": "error", "code": code, "message": message, "param": None,
                 "sequence_number": sequence_number}
        return b"event: error\ndata: " + json.dumps(event).encode() + b"\n\n"
    body = error_body(message, "server_error", code=code)
    return b"data: " + json.dumps(body).encode() + b"\n\ndata: [DONE]\n\n"

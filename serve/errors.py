"""judge-serve's errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}`` with a string
``code``, the type and code following from the status when the caller names none, and no URL, path, address or
process id in a message a client reads (``sanitized``; an engine's 5xx text stays in judge-serve's log)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from fastapi.responses import JSONResponse

__all__ = ["engine_error", "error_body", "error_response", "sanitized"]

log = logging.getLogger("judge_serve")

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
        return error_response(502, f"the {role} engine failed (it answered {status}); judge-serve's log has its "
                              "message", "server_error", code="engine_error")
    if status == 401:  # judge-serve's own key to its engine was refused: not the client's fault
        log.error("the %s engine refused judge-serve's key (401)", role)
        return error_response(502, f"the {role} engine refused judge-serve's credentials", "server_error",
                              code="engine_auth_error")
    return error_response(status, sanitized(message), param=param if isinstance(param, str) else None,
                          code=code if isinstance(code, str) else None)

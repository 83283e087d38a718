"""The bound judge-serve puts on a proxied generation request (``/v1/chat/completions``, ``/v1/completions``,
``/v1/responses``) before the generating engine sees it: ``max_proxy_tokens`` in all, so that one request cannot buy
unbounded work (``serve.app``'s proxy asks it of every such body)."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError

from serve.errors import error_response
from serve.schema import json_type_name

__all__ = ["COMPLETIONS_DEFAULT_MAX_TOKENS", "proxied_token_bound"]

#: What ``/v1/completions`` generates per completion for a request naming no ``max_tokens`` (or ``null``): OpenAI's
#: default, and vLLM's (``vllm/entrypoints/openai/completion/protocol.py``: ``CompletionRequest.max_tokens = 16``, and
#: ``normalize_null_max_tokens`` reads null as it).
COMPLETIONS_DEFAULT_MAX_TOKENS = 16


def _completion_prompts(body: dict) -> int:
    """How many prompts a ``/v1/completions`` request generates for: its batch of texts or token lists, and each of
    its ``prompt_embeds`` (one base64 tensor, or a list: vLLM generates for each, after the prompts, when the engine
    runs with ``--enable-prompt-embeds``); at least 1 (the engine refuses a request with neither)."""
    prompt, embeds = body.get("prompt"), body.get("prompt_embeds")
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):  # a batch, not one token list
        texts = len(prompt)
    else:
        texts = 1 if prompt not in (None, "", []) else 0
    tensors = len(embeds) if isinstance(embeds, list) else 1 if embeds not in (None, "") else 0
    return max(texts + tensors, 1)


#: vLLM's request classes read ``echo`` with pydantic's lax bool (``true``, ``1``, ``"yes"``, ``"on"`` ...): read alike.
_LAX_BOOL = TypeAdapter(bool)


def _echoes(value: Any) -> bool:
    """Whether a completion's ``echo`` is true as vLLM's request class reads it; what pydantic refuses is not true."""
    try:
        return _LAX_BOOL.validate_python(value)
    except ValidationError:
        return False


def proxied_token_bound(body: Any, path: str, max_total: int,
                        max_model_len: int | None = None) -> tuple[Any, JSONResponse | None]:
    """Bound a proxied generation request to ``max_total`` tokens in all, so one request cannot buy unbounded work.

    Returns the body to send (``max_tokens`` = ``min(max_total // n, max_model_len)`` added when it named none) and
    None, or the body and a 400 naming the field that asks for too much. The fields counted must be JSON integers (or
    null): vLLM's request classes would read ``"100000"`` or ``1e5`` as numbers, past a bound that counted only
    integers. ``/v1/completions`` with a list of prompts, or of ``prompt_embeds``, generates for each: ``n`` counts
    per prompt.

    A chat or response request naming no limit generates to the end of the engine's window (vLLM's default), so the
    share is added. A completion request naming none generates ``COMPLETIONS_DEFAULT_MAX_TOKENS`` (16) each, as
    OpenAI's does: that is counted, and the body left as sent, so a client relying on the default gets its 16 tokens
    rather than ``max_total // n``.

    The added value stays within ``max_model_len`` (the generating engine's window): vLLM refuses any request whose
    ``max_tokens`` (``max_output_tokens``) exceeds its ``max_model_len`` (``vllm/renderers/params.py``), so with the
    defaults (8192 over a 4096 window) the bound added unclipped would have vLLM refuse a plain
    ``chat.completions.create`` that it serves alone. Up to
    the window is fine: vLLM cuts ``max_tokens`` to what the prompt leaves (``get_max_tokens``). ``best_of`` is not
    counted: vLLM 0.32's chat and completion requests have no such field and ignore it (it generates ``n``).
    """
    if not isinstance(body, dict):
        return body, None
    counted = ("max_output_tokens",) if path == "/v1/responses" else ("max_completion_tokens", "max_tokens", "n")
    for name in counted:
        value = body.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return body, error_response(400, f"{name}: must be an integer, got {json_type_name(value)}", param=name,
                                        code="invalid_type")
    if path == "/v1/responses":
        fields, n = ("max_output_tokens",), 1
    else:
        # The fields the engine reads: chat prefers max_completion_tokens to max_tokens; completions read max_tokens
        # only (vLLM ignores a max_completion_tokens there, so it bounds nothing).
        fields = ("max_tokens",) if path == "/v1/completions" else ("max_completion_tokens", "max_tokens")
        n = body.get("n") if body.get("n") is not None else 1
        if path == "/v1/completions":
            n *= _completion_prompts(body)
    if n < 1:
        return body, None  # the engine refuses it with its own message
    named = [f for f in fields if body.get(f) is not None]
    echoes = path == "/v1/completions" and _echoes(body.get("echo"))
    for name in named:
        # vLLM refuses a limit below 1 as it refuses a prompt that fills the window ("max_tokens must be at least 1,
        # got 0"), which a client reads as context_length_exceeded and shortens its prompt for ever: refused here,
        # naming the field. A completion with echo and max_tokens 0 is vLLM's echo without generation.
        echo_alone = echoes and body[name] == 0
        if body[name] < 1 and not echo_alone:
            alone = " (0 only with echo, which returns the prompt)" if path == "/v1/completions" else ""
            return body, error_response(400, f"{name}: must be at least 1{alone}, got {body[name]}", param=name,
                                        code="invalid_value")
    if not named and path == "/v1/completions":
        if COMPLETIONS_DEFAULT_MAX_TOKENS * n > max_total:
            return body, error_response(
                400, f"max_tokens: not set, so {COMPLETIONS_DEFAULT_MAX_TOKENS} tokens (the completions default) x {n} "
                f"completions = {COMPLETIONS_DEFAULT_MAX_TOKENS * n} > this server's max_proxy_tokens={max_total}",
                param="max_tokens", code="too_many_tokens",
            )  # fmt: skip
        return body, None
    if not named:
        if max_total // n < 1:
            return body, error_response(400, f"n: {n} completions exceed this server's max_proxy_tokens={max_total}",
                                        param="n", code="too_many_tokens")
        share = max_total // n if max_model_len is None else min(max_total // n, max_model_len)
        return {**body, fields[-1]: share}, None
    for name in named:  # every one set: which the engine obeys is its choice, so none may ask too much
        tokens = max(body[name], 1)  # echo with max_tokens 0 still generates one each (vLLM: echo_without_generation)
        if tokens * n > max_total:
            return body, error_response(
                400, f"{name}: {body[name]} tokens x {n} completions = {tokens * n} > this server's max_proxy_tokens={max_total}",
                param=name, code="too_many_tokens",
            )  # fmt: skip
    return body, None

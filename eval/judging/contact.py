"""The first contact with a judge's server, before any item is asked: its base URL (``base_of``, ``root_of``), what
it serves and allows (``first_contact``: its ``GET /v1/models``, a server still loading waited for, a wrong key or URL
one plain sentence; ``judge.wire.ModelLimits``), which route to judge through (``detect_backend``: judge-serve's
``/v1/judge`` or chat completions) and the ``max_tokens`` a request may ask (``fit_max_tokens``). ``judge-eval run``,
``rank`` and the pairwise runs use it; the backends that then judge are ``eval.judging.backends``.
"""

from __future__ import annotations

import logging
from typing import Any

from judge.plumbing.retry import (EndpointUnusable, RetryPolicy, list_models, retry_stop_said, retryable_status,
                                  server_message)
from judge.plumbing.console_logging import visible
from judge.wire import ModelLimits

__all__ = ["root_of", "base_of", "PROBE_POLICY", "detect_backend", "first_contact", "fit_max_tokens",
           "weights_fingerprint"]

log = logging.getLogger("judge_eval.backends")


def root_of(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def base_of(url: str) -> str:
    """The OpenAI base URL of ``--judge``'s URL: a bare ``scheme://host[:port]`` gets ``/v1``; a URL with a path is
    the base as given (``http://127.0.0.1:8000/v1``, or an API's own, e.g. ``.../v1beta/openai/``)."""
    from urllib.parse import urlsplit

    url = url.rstrip("/")
    return url if urlsplit(url).path else url + "/v1"


#: The backend probe's retries of a transient failure (no connection, 408/409/429, 5xx), as the runner's backoff.
PROBE_POLICY = RetryPolicy(max_retries=4, backoff_s=1.0, max_backoff_s=10.0)


def detect_backend(base_url: str, api_key: str, limits: ModelLimits, *,
                   policy: RetryPolicy | None = None) -> str:
    """``judge-serve`` when the server is one, else ``chat``.

    judge-serve says so in its ``GET /v1/models`` entry, which carries its own fields (``ModelLimits.advertised``):
    ``limits``, what ``first_contact`` read of it. A server whose entries do not say (a
    judge-serve from before they did) is told by an empty ``POST /v1/judge``, which judges nothing: judge-serve
    answers 4xx (missing items, or 401), vLLM and other OpenAI servers 404 or 405. Connection errors, 408/409/429
    and 5xx are retried by ``policy`` (default ``PROBE_POLICY``).

    Raises:
        EndpointUnusable: the probe is still unanswered after the retries (the message names the URL): no guess.
    """
    import httpx

    if limits.advertised():
        log.debug("backend probe: GET /v1/models carries judge-serve's fields: judge-serve")
        return "judge-serve"
    url = root_of(base_url) + "/v1/judge"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}

    def post() -> Any:
        response = httpx.post(url, json={}, headers=headers, timeout=30)
        if retryable_status(response.status_code):
            response.raise_for_status()  # HTTPStatusError: retried
        return response

    try:
        response = (policy or PROBE_POLICY).call(post)
    except httpx.HTTPError as err:
        status = err.response.status_code if isinstance(err, httpx.HTTPStatusError) else None
        said_why = f"HTTP {status}: {server_message(err.response)}" if status else f"{type(err).__name__}: {err}"
        stopped = f"; {said}" if (said := retry_stop_said(err)) else ""  # a wait past the run's budget ended them
        raise EndpointUnusable(f"the judge at {base_url}: POST {url}, which tells judge-serve from a chat server, "
                               f"is still unanswered after retries ({visible(said_why, 200)}{stopped}); rerun when the "
                               "server answers, or set --backend chat or --backend judge-serve", status) from None
    kind = "chat" if response.status_code in (404, 405) else "judge-serve"
    # The probe's 4xx is the expected answer, not an error: said once, at debug level.
    log.debug("backend probe: empty POST /v1/judge answered HTTP %d: %s", response.status_code, kind)
    return kind


def first_contact(base_url: str, api_key: str, model: str, *, key_source: str = "", what: str = "the judge",
                  policy: RetryPolicy | None = None, key_rule: str = "",
                  entry: dict[str, Any] | None = None) -> tuple[str, ModelLimits]:
    """The model to ask and what the server allows, from its ``GET /v1/models`` (``judge.plumbing.retry.list_models``).

    Args:
        base_url: the OpenAI base URL.
        api_key, key_source: the key and where it came from (``judge.plumbing.api_keys.ClientKey``).
        model: the model the user named ("" for the first listed).
        what: the server's role, for messages.
        policy: the first contact's retry policy (its ``max_wait_s`` the bound).
        key_rule: the key rule a 401's message states.
        entry: when given, receives the model's entry as the server lists it (nothing when it lists none), for what
            ``ModelLimits`` does not hold (``weights_fingerprint``).

    Returns:
        (the model name, its ``ModelLimits``; empty when the list does not hold it).

    Raises:
        EndpointUnusable: the server cannot be used (the message says why), or it lists no model and none was named.
            A server without a model list (404, 405) is used as it is when ``model`` is named.
    """
    from judge.plumbing.api_keys import KEY_RULE

    try:
        models = list_models(base_of(base_url), api_key=api_key, key_source=key_source, what=what, policy=policy,
                             key_rule=key_rule or KEY_RULE)
    except EndpointUnusable as err:
        if not (model and err.status in (404, 405)):
            raise
        # An API without a model list (some proxies) still serves the model the user named: go on, unfitted.
        log.info("%s: no model list (%s); asking for --model %s without the server's limits", what, err, model)
        return model, ModelLimits()
    if not model:
        if not models or not models[0].get("id"):
            raise EndpointUnusable(f"{what} at {base_of(base_url)} lists no models; name one with --model")
        model = str(models[0]["id"])
    found = next((m for m in models if m.get("id") == model), None)
    if found is None and models:
        # Said, not refused: some APIs serve an alias their list does not hold. A name the server does not serve
        # otherwise showed only as each request's refusal in predictions.jsonl, or as a stop after three of them.
        listed = [str(m.get("id")) for m in models]
        shown = ", ".join(listed[:5]) + (", ..." if len(listed) > 5 else "")
        log.warning("%s at %s does not list the model %r (it lists %s): its requests may be refused", what,
                    base_of(base_url), model, shown)
    if entry is not None and isinstance(found, dict):
        entry.update(found)
    return model, ModelLimits.from_entry(found)


def weights_fingerprint(entry: dict[str, Any]) -> str | None:
    """What a judge-serve's model entry says identifies the weights it serves (``serve.layout.weights_fingerprint``);
    None from any other server, or from a judge-serve that cannot say (an attached engine's)."""
    value = entry.get("weights_fingerprint")
    return value if isinstance(value, str) and value else None


def fit_max_tokens(requested: int, limits: ModelLimits, *, route: str) -> tuple[int, str]:
    """``max_tokens`` fitted to what the server allows, and a note saying what changed ("" when nothing did).

    - ``route="judge"`` (judge-serve's ``/v1/judge``): at most ``judge_max_tokens``.
    - ``route="chat"`` (chat completions): at most ``max_proxy_tokens`` (judge-serve's passthrough), and below
      ``max_model_len``, which the prompt shares: a request for the whole window or more can never be served, so it
      is halved to ``max_model_len // 2`` (the other half left for the prompt).

    Args:
        requested: the ``max_tokens`` setting.
        limits: the server's (``first_contact``).
        route: ``judge`` or ``chat``.
    """
    value, notes = requested, []
    cap = limits.judge_max_tokens if route == "judge" else limits.max_proxy_tokens
    name = "judge_max_tokens" if route == "judge" else "max_proxy_tokens"
    if cap is not None and value > cap:
        notes.append(f"max_tokens {value} is above this server's limit of {cap} ({name} in GET /v1/models)")
        value = cap
    if route == "chat" and limits.max_model_len is not None and value >= limits.max_model_len:
        notes.append(f"max_tokens {value} does not fit this server's max_model_len {limits.max_model_len} (the prompt "
                     "and the answer share it)")
        value = max(limits.max_model_len // 2, 1)
    if not notes:
        return requested, ""
    return value, "; ".join(notes) + f": asking for {value} (set --max-tokens to choose)"

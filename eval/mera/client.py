"""A small client for OpenAI-compatible endpoints (judge-serve, vLLM, hosted APIs), built on the official ``openai``.

What it adds to ``openai.OpenAI``: one call shape for chat and completion, ``n`` samples either through the
API's ``n`` or through one request per sample with a distinct seed (a fixed seed would make all samples the
same), stop strings applied on the client as well (chat APIs accept only four, and servers differ in whether
the stop string is kept), retries of transient failures (``judge.plumbing.retry``, ``Retry-After`` honoured), context-limit errors as a
distinct exception, a request the endpoint refuses (HTTP 400, 413, 422: retrying cannot change the answer) as
another, a chat answer read as text however its content comes (a list of text parts joined; a choice whose content
is no text is that one sample's failure, ``Generation.failure``, the request's other choices kept), log-probability
helpers, and a bounded thread pool for concurrency.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from eval.mera.extraction import truncate_at_stops
from judge.plumbing.json_reading import JSON_REFUSALS, unreadable_answer
from judge.plumbing.message_content import no_choice_said
from judge.plumbing.retry import DEFAULT_WAIT_BUDGET_S, RetryPolicy, failure_said, retry_stop_said

T = TypeVar("T")
R = TypeVar("R")

#: OpenAI's limit on server-side stop strings.
MAX_SERVER_STOPS = 4

# vLLM: "This model's maximum context length is 2048 tokens...", "... longer than the maximum model length ...";
# OpenAI: "context_length_exceeded". vLLM 0.32 also takes a prompt of exactly the window's length and lowers
# max_tokens to the 0 tokens left (``entrypoints/serve/utils/api_utils.py`` ``get_max_tokens``), which its sampling
# parameters then refuse (``sampling_params.py``: "max_tokens must be at least 1, got 0."): no room left for an
# answer, the window's refusal too. This client never sends max_tokens 0 but with ``echo``, which vLLM turns into 1.
_CONTEXT_LIMIT = re.compile(
    r"context length|context_length|maximum model length|max_model_len|too long|max_tokens must be at least 1, got 0\b",
    re.I,
)


#: HTTP statuses that refuse one request for what it holds (bad request, too large, unprocessable): the same
#: request gets the same answer, so it is that item's failure, never the run's; every other error status, after
#: the retries, is the endpoint's (``judge.plumbing.retry.retryable_status`` says which are retried).
REFUSED_STATUSES = (400, 413, 422)


class RequestRefused(RuntimeError):
    """The endpoint refused this one request (``REFUSED_STATUSES``); ``status`` is the HTTP status, ``said`` the
    server's own words (the message without the status)."""

    def __init__(self, message: str, status: int | None = None, said: str = ""):
        super().__init__(message)
        self.status = status
        self.said = said or message

    def as_refused(self) -> Any:
        """This refusal as ``eval.judging.backends.Refused``, what ``FirstRefusals`` compares (status, words)."""
        from eval.judging.backends import Refused

        return Refused(str(self), self.status, self.said)


class UnreadableAnswer(RuntimeError):
    """The endpoint answered HTTP 200 with a body ``json.loads`` refused (no JSON, nested too deeply, a number past
    its digit limit: ``judge.plumbing.json_reading.unreadable_answer``), or with no completion to read (``_choices``:
    a page the SDK handed back as its text, a JSON list, an object without ``choices``:
    ``judge.plumbing.message_content.no_choice_said``), in every endpoint client's words, never as Python's. The
    endpoint's failure, not the item's: ``endpoint_failure`` ends the run with it."""


def _choices(response: Any) -> list:
    """A 200 answer's choices, or ``UnreadableAnswer`` for one that holds none to read (``no_choice_said``: a page,
    a JSON list, an object without ``choices``), where reading it would be an AttributeError or TypeError, a
    traceback. An empty list is the server's answer of no choice: each caller reads it as such."""
    choices = getattr(response, "choices", None)
    if isinstance(choices, list) and not choices:
        return choices
    if (said := no_choice_said(response)) is not None:
        raise UnreadableAnswer(said)
    return choices


class ContextLimitError(RequestRefused):
    """The prompt (plus max tokens) does not fit the model's context window."""


#: ``Generation.failure`` of a chat choice of reasoning alone (parts, or a field of its own) cut by ``max_tokens``:
#: it never reached an answer (the same words as ``eval.mera.rutie``'s choice parser uses for an unclosed ``<think>``).
REASONING_NOT_FINISHED = "reasoning not finished"


@dataclasses.dataclass(frozen=True)
class Generation:
    """One sampled continuation.

    Attributes:
        text: The text after client-side stop strings.
        raw_text: The text as the endpoint returned it.
        finish_reason: ``stop``, ``length``, ...; ``"stop"`` when a client-side stop cut the text.
        prompt_tokens: Prompt length reported by the endpoint (``None`` if it reports no usage).
        completion_tokens: Generated tokens for the whole request (shared by its ``n`` choices).
        failure: Why this choice holds no answer, ``None`` when it holds one (text, maybe empty): its content was
            reasoning parts alone, or empty beside a separate reasoning field, cut by ``max_tokens``
            (``REASONING_NOT_FINISHED``), or no text at all (an image or
            refusal part, an object: "the endpoint's message content is not text: ..."). ``text`` is then "": one
            sample's failure, never its request's, so the other choices of an ``n`` request stand.
    """

    text: str
    raw_text: str
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    failure: str | None = None


def is_context_limit_message(message: str) -> bool:
    """True when an endpoint's 400 message says the request exceeds the context window."""
    return bool(_CONTEXT_LIMIT.search(message))


class OpenAICompatClient:
    """Generation against one model on one OpenAI-compatible endpoint.

    Args:
        base_url: Endpoint root including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``.
        model: Served model name.
        api_key: Key for hosted APIs; local servers accept anything.
        timeout_s: Per-request timeout, seconds.
        max_retries: Retries after the first attempt for connection errors, timeouts, 408/409/429 and 5xx.
        backoff_s: First retry delay; doubles each time up to ``max_backoff_s`` (jittered, at least ``Retry-After``).
        retry_wait_budget_s: Seconds one request may wait between its retries, all waits together: a retry whose
            wait would pass it is not made (``judge.plumbing.retry.RetryPolicy.wait_budget_s``;
            ``--retry-wait-budget-s``).
        concurrency: Threads used by ``map``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        retry_wait_budget_s: float | None = DEFAULT_WAIT_BUDGET_S,
        concurrency: int = 4,
    ):
        import openai

        self.base_url = base_url.rstrip("/")
        self.model = model
        #: judge.plumbing.retry's policy (Retry-After honoured); tests swap in one with a recording sleep.
        self.retry = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s,
                                 wait_budget_s=retry_wait_budget_s, bound_flag="--retry-wait-budget-s")
        self.concurrency = max(1, concurrency)
        # The SDK's own retries are off: ours are explicit, counted, and shared by every call shape.
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "EMPTY", timeout=timeout_s,
                                     max_retries=0)  # fmt: skip

    # -- plumbing --------------------------------------------------------------------------------------------

    def _with_retries(self, call: Callable[[], R]) -> R:
        import openai

        try:
            return self.retry.call(call)
        except openai.APIStatusError as err:
            if err.status_code not in REFUSED_STATUSES:
                raise
            from judge.plumbing.retry import server_message

            said = server_message(err.response, 500) or " ".join(str(err).split())[:500]
            message = f"HTTP {err.status_code}: {said}"
            if is_context_limit_message(str(err)):
                raise ContextLimitError(message, err.status_code, said) from err
            raise RequestRefused(message, err.status_code, said) from err
        except JSON_REFUSALS as err:  # a 200 body json.loads refused, or anything else's ValueError
            if (said := unreadable_answer(err)) is None:
                raise
            raise UnreadableAnswer(said) from err

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn`` over ``items`` with at most ``concurrency`` in flight; results in input order. Interrupted (Ctrl+C,
        SIGTERM), it waits for none of them (``eval.mera.workers``)."""
        from eval.mera.workers import ordered_map

        yield from ordered_map(fn, items, self.concurrency)

    def max_model_len(self) -> int | None:
        """The served model's context window from ``/v1/models`` (vLLM's ``max_model_len``), if reported."""
        try:
            models = self._with_retries(lambda: self._client.models.list())
        except Exception:  # noqa: BLE001 - an endpoint without /v1/models simply does not tell us
            return None
        for entry in models.data:
            if entry.id == self.model:
                value = getattr(entry, "max_model_len", None)
                if value is None and getattr(entry, "model_extra", None):
                    value = entry.model_extra.get("max_model_len")
                return int(value) if value is not None else None
        return None

    # -- generation ------------------------------------------------------------------------------------------

    def generate(
        self,
        prompt: str | list[dict[str, str]],
        *,
        mode: str = "completion",
        n: int = 1,
        temperature: float = 0.0,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        stop_on_server: bool = True,
        seed: int | None = None,
        sampling: str = "n",
        top_k: int | None = None,
    ) -> list[Generation]:
        """Sample ``n`` continuations of a prompt (completion mode) or a message list (chat mode).

        Args:
            prompt: A string for ``mode="completion"``, a list of ``{"role", "content"}`` for ``mode="chat"``.
            n: Samples wanted.
            stop: Stop strings, all applied on the client.
            stop_on_server: Also send the first four to the server (saves tokens). Turn it off when a stop string
                can occur in a legitimate answer before the part that matters (a chat answer that opens a
                python code fence and then ``def``).
            seed: Base seed. ``sampling="n"`` sends it once with ``n``; ``sampling="seeds"`` sends ``n``
                requests with seeds ``seed, seed+1, ...`` (for servers that ignore ``n``).
            sampling: ``"n"`` or ``"seeds"``.
            top_k: sent as ``top_k`` (vLLM's extension of the OpenAI API) when given; None sends none.

        Returns:
            ``n`` generations (fewer where the server returned fewer); a chat choice with no answer text is one
            whose ``failure`` says why (``Generation``), each choice read on its own.

        Raises:
            ContextLimitError: The request does not fit the model's context.
            RequestRefused: The endpoint refused the request otherwise (HTTP 400, 413, 422).
        """
        if sampling not in ("n", "seeds"):
            raise ValueError(f"sampling must be 'n' or 'seeds', not {sampling!r}")
        if sampling == "seeds" and n > 1:
            out: list[Generation] = []
            for i in range(n):
                out += self.generate(prompt, mode=mode, n=1, temperature=temperature, max_tokens=max_tokens,
                                     stop=stop, stop_on_server=stop_on_server,
                                     seed=None if seed is None else seed + i, sampling="n", top_k=top_k)  # fmt: skip
            return out
        params: dict[str, Any] = {"model": self.model, "n": n, "temperature": temperature, "max_tokens": max_tokens}
        if seed is not None:
            params["seed"] = seed
        if stop and stop_on_server:
            params["stop"] = list(stop[:MAX_SERVER_STOPS])
        if top_k is not None:  # not an OpenAI field: the client sends it in the body as given
            params["extra_body"] = {"top_k": top_k}
        if mode == "chat":
            if not isinstance(prompt, list):
                raise TypeError("chat mode takes a list of messages")
            response = self._with_retries(lambda: self._client.chat.completions.create(messages=prompt, **params))
            texts = [(*_answer_text(c.message, c.finish_reason), c.finish_reason) for c in _choices(response)]
        elif mode == "completion":
            if not isinstance(prompt, str):
                raise TypeError("completion mode takes a string prompt")
            response = self._with_retries(lambda: self._client.completions.create(prompt=prompt, **params))
            texts = [(c.text or "", None, c.finish_reason) for c in _choices(response)]
        else:
            raise ValueError(f"mode must be 'chat' or 'completion', not {mode!r}")
        usage = getattr(response, "usage", None)
        generations = []
        for raw, failure, finish in texts:
            text = truncate_at_stops(raw, stop)
            cut = len(text) < len(raw)
            generations.append(Generation(
                text=text,
                raw_text=raw,
                finish_reason="stop" if cut else finish,
                prompt_tokens=getattr(usage, "prompt_tokens", None),
                completion_tokens=getattr(usage, "completion_tokens", None),
                failure=failure,
            ))  # fmt: skip
        return generations

    # -- log-probabilities -----------------------------------------------------------------------------------

    def continuation_logprobs(
        self, prompt: str, continuations: Sequence[str]
    ) -> tuple[list[float | None], int | None]:
        """Sum of log-probabilities of each continuation given the prompt (completion endpoint, ``echo``).

        The continuation's tokens are found by count, as MERA's harness finds them (lm-eval ``lm_eval/api/model.py``
        ``TemplateLM._encode_pair``: ``whole_enc[len(context_enc):]``, trailing whitespace of the context moved to
        the continuation first): one request for the prompt alone gives its token count (``usage.prompt_tokens``;
        ``max_tokens=1`` and no log-probabilities, so vLLM may serve it from its prefix cache, which a request for
        prompt log-probabilities skips: ``sampling_params.py`` ``skip_reading_prefix_cache``), then one request per
        continuation with ``echo=True, max_tokens=0, logprobs=0`` returns every prompt token's log-probability, and
        the continuation's are those after that count, up to the request's own ``usage.prompt_tokens``. Character
        offsets cannot find them: vLLM's echoed ``text_offset`` are running sums of each token decoded alone
        (``entrypoints/openai/completion/serving.py`` ``_create_completion_logprobs``), so a BOS token (decoded as
        ``<s>``) or a character split across tokens (each piece decoded as "\ufffd") shifts every later offset.

        Returns:
            ``(scores, prompt_tokens)``: a score per continuation (``None`` where the endpoint returned no choice, or
            no usable log-probabilities or token counts) and the token count of the prompt with the first
            continuation.
        """
        context = prompt.rstrip()
        moved = prompt[len(context):]
        alone = self._with_retries(lambda: self._client.completions.create(
            model=self.model, prompt=context, max_tokens=1, temperature=0.0,
        ))  # fmt: skip
        n_context = _usage_prompt_tokens(alone)
        scores: list[float | None] = []
        prompt_tokens = None
        for continuation in continuations:
            full = context + moved + continuation  # the prompt and the continuation; only the count starts earlier
            response = self._with_retries(lambda: self._client.completions.create(
                model=self.model, prompt=full, max_tokens=0, echo=True, logprobs=0, temperature=0.0,
            ))  # fmt: skip
            n_full = _usage_prompt_tokens(response)
            # No choice in the answer ({"choices": []}): no score, as for an echo without log-probabilities.
            echoed = choices[0].logprobs if (choices := _choices(response)) else None
            scores.append(_continuation_score(echoed, n_context, n_full))
            if prompt_tokens is None:
                prompt_tokens = n_full
        return scores, prompt_tokens

    def next_token_logprobs(self, messages: list[dict[str, str]], top: int = 20) -> tuple[dict[str, float], int | None]:
        """Top log-probabilities of the first generated token in chat mode, keyed by stripped token text.

        Returns:
            ``({token: logprob}, prompt_tokens)``; the best logprob wins where stripped tokens coincide.
        """
        response = self._with_retries(lambda: self._client.chat.completions.create(
            model=self.model, messages=messages, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=top,
        ))  # fmt: skip
        usage = getattr(response, "usage", None)
        # No choice in the answer ({"choices": []}): no entries, as for a reply without log-probabilities.
        content = (getattr(choices[0].logprobs, "content", None) if (choices := _choices(response)) else None) or []
        best: dict[str, float] = {}
        if content:
            for entry in content[0].top_logprobs or []:
                key = entry.token.strip()
                best[key] = max(best.get(key, float("-inf")), entry.logprob)
        return best, getattr(usage, "prompt_tokens", None)


def _answer_text(message: Any, finish_reason: str | None) -> tuple[str, str | None]:
    """A chat choice's answer as text: a string, "" for none, a list of text parts (Mistral's API sends one) joined,
    reasoning parts skipped (``judge.plumbing.message_content.message_text``); and, for a choice with no answer, why
    (``Generation.failure``), else ``None``.

    Content of reasoning parts alone is what a thinking model sends when ``max_tokens`` cuts it before its answer
    (``finish_reason`` "length"): ``REASONING_NOT_FINISHED``. So is an empty or null content beside the reasoning in
    a field of its own, as vLLM and SGLang send it with a ``--reasoning-parser`` (``reasoning_content``; vLLM's newer
    name ``reasoning``): the same event on another server. One that ended there of its own accord answered nothing,
    as a null content does: "". Any other content no reader can take as text is named, never its text.
    """
    from judge.plumbing.message_content import REASONING_PARTS, described_content, message_text, separated_reasoning

    content = None if message is None else message.content
    text = message_text(content)
    if text is not None:
        cut_in_reasoning = text == "" and finish_reason == "length" and separated_reasoning(message) is not None
        return text, REASONING_NOT_FINISHED if cut_in_reasoning else None
    if isinstance(content, list) and all(_part_kind(part) in REASONING_PARTS for part in content):
        return "", REASONING_NOT_FINISHED if finish_reason == "length" else None
    return "", f"the endpoint's message content is not text: {described_content(content)}"


def _part_kind(part: Any) -> Any:
    """A content part's ``type``, from a JSON object or an SDK part object (as ``message_text`` reads it)."""
    return part.get("type") if isinstance(part, dict) else getattr(part, "type", None)


def _usage_prompt_tokens(response: Any) -> int | None:
    """The endpoint's count of the request's prompt tokens (``usage.prompt_tokens``), if it reports one."""
    value = getattr(getattr(response, "usage", None), "prompt_tokens", None)
    return int(value) if isinstance(value, int) else None


def _continuation_score(logprobs: Any, start: int | None, end: int | None) -> float | None:
    """Sum of the echoed token logprobs from token ``start`` (the prompt alone's token count) to ``end`` (the whole
    request's), or ``None`` when the echo cannot hold that span: no counts, none of the continuation's tokens, an
    echo shorter than the count, or a token without a logprob in it."""
    if logprobs is None or start is None or end is None:
        return None
    values = list(getattr(logprobs, "token_logprobs", None) or [])
    if not 0 < start < end <= len(values):
        return None
    span = values[start:end]
    if any(value is None for value in span):
        return None
    return float(sum(span))


def check_endpoint(config: Any) -> None:
    """The first contact with a ``judge-eval mera`` task's endpoint (``config``, a ``MeraConfig``): its model list,
    waited for up to 120 s while it is unreachable or loading; a wrong key or URL is said plainly. Called once the
    local inputs (data, run folder, flags) are checked, so an error in them is never found only after that wait.

    Raises:
        judge.plumbing.retry.EndpointUnusable: the endpoint cannot be used, saying why.
    """
    from judge.plumbing.api_keys import KEY_RULE, client_api_key
    from judge.plumbing.config_files import ConfigError
    from judge.plumbing.retry import list_models

    command = f"judge-eval mera {config.task}"
    try:  # where the config's key came from, for a 401's message: the variables', else typed
        source = client_api_key("", config.api_key_env, command=command)
    except ConfigError:
        source = None
    key_source = source.source if source is not None and source.key == config.api_key else "--api-key"
    list_models(config.endpoint, api_key=config.api_key, key_source=key_source, what="the endpoint",
                policy=RetryPolicy(max_retries=10**6, max_backoff_s=10.0, max_wait_s=120.0), bound_flag="",
                key_rule=KEY_RULE)  # fmt: skip


def endpoint_failure(err: BaseException, config: Any) -> str | None:
    """One line for an ``openai.APIError`` that ended a run (a status the retries could not get past, or no
    answer at all) or an ``UnreadableAnswer``; ``None`` for any other exception (``config``: the run's ``MeraConfig``).
    A request the endpoint refused for what it holds never gets here: it is that item's failure (``RequestRefused``)."""
    import openai

    from judge.plumbing.console_logging import visible

    if isinstance(err, UnreadableAnswer):  # it may quote the server's words (its error, its page): escaped
        return (f"the endpoint at {config.endpoint} failed mid-run ({visible(err, 1000)}); the answers so far are "
                f"saved in {config.out}: rerunning the same command resumes")
    if not isinstance(err, openai.APIError):
        return None
    said = failure_said(err, 300, with_stop=False)  # the server's words with their control characters as escapes
    # The retries stopped before --max-retries were spent: a wait past --retry-wait-budget-s, said as the policy says it
    retried = retry_stop_said(err) or (f"a transient failure is retried --max-retries {config.max_retries} times, "
                                       f"waiting up to --retry-wait-budget-s {config.retry_wait_budget_s:g} s in all")
    return (f"the endpoint at {config.endpoint} failed mid-run ({said}; {retried}); the answers so far are saved in "
            f"{config.out}: rerunning the same command resumes")

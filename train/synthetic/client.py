"""OpenAI-compatible chat endpoints with retries, exponential backoff and a bounded number of requests in flight.

Every data stage talks to its models through ``ChatClient.complete`` (one user turn, optionally a system turn) and
runs many of them at once through ``journal.run_jobs``. Only transient failures are retried (``judge.plumbing.retry``):
connection errors, timeouts, 408, 409, 429 and 5xx, waiting at least the server's ``Retry-After``, one request's
waits together at most the stage's ``retry_wait_budget_s`` (a retry whose wait would pass it is not made). Any other
4xx is the caller's bug and fails at once. Each attempt's answer must be whole within the stage's ``timeout_s``
(``WholeAnswerClient``), however slowly the server sends it.

Every stage asks its endpoints through an ``EndpointWatch``: the first request waits for the endpoint's first contact
(its model list), and an endpoint not there, or whose requests keep failing after their retries, is asked no more
(exit code 4 once the stage ends), as ``judge-eval run`` stops, instead of each job paying its full backoff.

Every output is bounded before a stage reads it (``longer_than_asked``): the answer (``message.content``, a reasoning
written inline in it included) to what the request's ``max_tokens`` could produce, ``CHARS_PER_TOKEN`` characters a
token; a reasoning the server returns apart, which some providers do not count in ``max_tokens``, to its own larger
cap (``REASONING_TOKEN_CAP`` tokens, or ``max_tokens`` when higher). Past either, the client keeps none of the text.
"""

from __future__ import annotations

import hashlib
import math
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2  # the openai SDK's HTTP client, which WholeAnswerClient extends

from judge.plumbing.failing_streak import FailingStreak, stop_after, streak_failure
from judge.plumbing.json_reading import JSON_REFUSALS, lone_surrogate_at, unreadable_answer
from judge.plumbing.message_content import described_content, message_text, separated_reasoning
from judge.plumbing.retry import (Attempts, EndpointUnusable, RetryPolicy, list_models, retry_stop_said,
                                  retryable_status)
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S
from train.synthetic.config import EndpointConfig
from train.synthetic.journal import log

__all__ = ["ChatClient", "ChatResult", "CHARS_PER_TOKEN", "EndpointWatch", "NoWholeAnswer", "REASONING_TOKEN_CAP",
           "WholeAnswerClient", "generator_seed", "job_seed", "longer_than_asked", "message_text", "seed_suffix",
           "stable_endpoint", "unusable_endpoints"]

_BACKOFF_CAP_S = 60.0


def generator_seed(endpoint: EndpointConfig) -> int | None:
    """The ``seed`` of an endpoint's ``extra_body`` when it is an integer, else None (an unseeded endpoint)."""
    seed = (endpoint.extra_body or {}).get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def job_seed(seed: int | None, index: int) -> int | None:
    """The seed request ``index`` of a prompt sent several times is asked with (``ChatClient.complete``'s ``seed``):
    the endpoint's ``seed`` + ``index``. The requests send one prompt, so under one seed a seeded endpoint answers them
    alike and pays several requests for one answer: the instructions stage's jobs of a (leaf task, complexity level),
    the traces stage's samples of an item. None (an unseeded endpoint): its body as configured."""
    return None if seed is None else seed + index


def seed_suffix(seed: int | None, index: int) -> str:
    """What a journalled request's fingerprint adds for request ``index`` of an endpoint seeded with ``seed``: the
    seed it was asked with (``job_seed``), when that is not the configured one, so that an answer journalled under
    another seed is asked again with its own. "" for request 0 and for an unseeded endpoint, whose fingerprints are
    the prompt's alone."""
    return f"\nseed {job_seed(seed, index)}" if seed is not None and index else ""


@dataclass(frozen=True)
class ChatResult:
    """One completion, or why there is none.

    Attributes:
        text: the assistant message ("" on failure).
        ok: whether the endpoint answered.
        error: the last error's class and message when not ok.
        attempts: requests sent (1 + retries used).
        finish_reason: as the endpoint reported it ("length" means the completion was cut).
        oversized: the answer was longer than the request's ``max_tokens`` could have produced, or the reasoning
            returned apart longer than its own cap (``longer_than_asked``): not ok, and neither is passed on (``text``
            and ``reasoning`` are "").
        reasoning: the reasoning a server returned apart from the answer ("" when none): vLLM's and judge-serve's
            ``message.reasoning`` (``--reasoning-parser``), or ``reasoning_content`` as DeepSeek's API and older
            vLLM name it.
        outage: the last error of a request that failed transiently after its retries (``streak_failure``: no
            connection, a timeout, a 429 or 5xx), which ``EndpointWatch`` counts; None for any other outcome. Not
            journalled: ``error`` says it.
        status: the HTTP status of a failed request's last answer (None: none, or the request succeeded).
    """

    text: str
    ok: bool
    error: str = ""
    attempts: int = 1
    finish_reason: str = ""
    reasoning: str = ""
    oversized: bool = False
    outage: BaseException | None = field(default=None, repr=False, compare=False)
    status: int | None = None


#: The most characters one token of a model's output is taken to stand for. A tokenizer's average is 3 to 5
#: characters of Russian or English, and even its longest tokens (runs of spaces or dashes) seldom pass 16; an
#: answer longer than ``max_tokens * CHARS_PER_TOKEN`` characters is more than the request could have produced
#: (a server that ignored the limit and still reported ``finish_reason`` stop), so none of it is trusted.
CHARS_PER_TOKEN = 16
#: The most tokens a reasoning returned apart from the answer (``message.reasoning``/``reasoning_content``) is taken
#: to hold when it is above ``max_tokens``. Providers differ in what ``max_tokens`` bounds: vLLM counts the reasoning
#: in it, DeepSeek's API bounds only the final answer of ``deepseek-reasoner`` and lets its chain of thought run to
#: tens of thousands of tokens beyond it. Bounded with the answer, such a reasoning would cost a valid label; so it
#: has this cap of its own, generous, a safety bound on what a stage reads (65,536 x 16 characters: about 1 MB).
REASONING_TOKEN_CAP = 65_536


def longer_than_asked(text_length: int, max_tokens: int | None, reasoning_length: int = 0) -> bool:
    """Whether an output is more than a request with ``max_tokens`` could have produced: an answer (``text_length``
    characters, a reasoning written inline in it included) over ``max_tokens * CHARS_PER_TOKEN``, or a reasoning
    returned apart (``reasoning_length``) over ``max(max_tokens, REASONING_TOKEN_CAP) * CHARS_PER_TOKEN``. No
    ``max_tokens`` known: the answer has nothing to compare with, and only the reasoning's cap applies."""
    reasoning_cap = max(max_tokens or 0, REASONING_TOKEN_CAP) * CHARS_PER_TOKEN
    return (bool(max_tokens) and text_length > max_tokens * CHARS_PER_TOKEN) or reasoning_length > reasoning_cap


#: ``EndpointWatch.probe``'s bounds, seconds: connecting (a host dropping packets is not waited out for a whole
#: request's timeout before the stage's long work) and reading the model list.
_PROBE_CONNECT_S = 5.0
_PROBE_READ_S = 30.0

#: What a stage leaves when an ``EndpointWatch`` stops it, as ``FailingStreak.error`` says it.
_JOURNAL_LEFT = ("the endpoint's requests not sent fail at once, every job is journalled (the failed ones as failed), "
                 "and a rerun into the same --output asks the failed ones again")


class EndpointWatch:
    """One endpoint's health as a stage sees it, shared by every client that asks it (the traces stage asks its
    teacher through one client per sample seed).

    The first request waits for the endpoint's first contact (``judge.plumbing.retry.list_models``, its ``GET
    /models``, retried as a request is): no server at the address, or a server still failing (a 5xx, a 429) once
    the retries are spent, stops the endpoint before one job is sent to it, where each job used to pay its full
    backoff against a port nothing listened on, the stage then exiting 0 with every request failed. Any other
    answer lets the requests decide, since some work where the list does not: a server without one (404, 405: some
    proxies) silently, and with a warning a key refused the list only (401, 403: an OpenAI key without the
    models scope may still chat), a list in another shape (Together's is a bare array), or a list without the
    endpoint's model. A key refused the list whose first answered request is refused with the same status is
    refused: that stops the endpoint. After that, the requests that still fail transiently after their retries are
    counted (``FailingStreak``): ``stop_after(concurrency)`` in a row stop the endpoint.

    A stopped endpoint's later requests are not sent: each fails at once (``not sent: <why>``), so its jobs are
    journalled as failed and asked again by a rerun, while the stage's other endpoints go on; the stage then ends
    with exit code 4 (``unusable_endpoints``). Nothing is asked, and nothing checked, by a stage whose jobs are all
    journalled: a rerun that only retunes thresholds needs no endpoint. A stage with long work before its first
    request (dedup embeds every instruction first) asks once up front (``probe``), only to warn before that work:
    the endpoint may come up meanwhile (a server still loading its weights), so the first contact still decides.

    Args:
        endpoint: the endpoint asked.
        role: who it is in the stage, as messages name it (``teacher``, ``generator``).
        concurrency: the stage's requests in flight (``stop_after``).
    """

    def __init__(self, endpoint: EndpointConfig, role: str, concurrency: int):
        self.endpoint = endpoint
        self.who = f"the {role} {endpoint.name}"
        self.what = f"{self.who} at {endpoint.base_url}"
        self.streak = FailingStreak(stop_after(concurrency))
        self.n_sent = 0
        self.n_not_sent = 0  # requests held back once stopped, one per job, which fails as no endpoint ever saw it
        self.stop: EndpointUnusable | None = None  # why the endpoint is no longer asked
        self.list_refused: EndpointUnusable | None = None  # the first contact's 401 or 403, until a request answers
        self._contacted = False
        self._lock = threading.Lock()  # the stage's worker threads share one watch

    def before_request(self, policy: RetryPolicy) -> EndpointUnusable | None:
        """Called before each request: the first contact on the first one. Returns the stop once there is one: the
        request is then not sent."""
        with self._lock:  # held through the first contact: the other workers wait for it instead of asking too
            if not self._contacted:
                self._contacted = True
                self.stop = self._first_contact(policy)
            if self.stop is None:
                self.n_sent += 1
            else:
                self.n_not_sent += 1
            return self.stop

    def probe(self) -> EndpointUnusable | None:
        """One ``GET /models``, no retry, connecting for at most ``_PROBE_CONNECT_S``: why the endpoint cannot be
        reached now (nothing answered, or a 5xx or 429), else None. It stops nothing and is not the first contact,
        which the first request still makes with its retries: the server may be up by then."""
        try:
            self._models(RetryPolicy(max_retries=0), httpx.Timeout(_PROBE_READ_S, connect=_PROBE_CONNECT_S))
        except EndpointUnusable as err:
            return err if _unreachable(err) else None
        return None

    def _models(self, policy: RetryPolicy, timeout: float | httpx.Timeout = 30) -> list[dict]:
        """The endpoint's ``GET /models`` (``list_models``), as the probe and the first contact ask it."""
        ep = self.endpoint
        return list_models(ep.base_url, api_key=ep.api_key, key_source=f"${ep.api_key_env}", what=self.who,
                           policy=policy, bound_flag="", timeout=timeout)

    def after_request(self, result: ChatResult, policy: RetryPolicy) -> None:
        """Count one request sent and finished (``result.outage``); the streak's stop holds back the next ones."""
        with self._lock:
            refused = self.list_refused
            if refused is not None and result.outage is None:  # the first answer from the server itself
                self.list_refused = None
                if result.status == refused.status and self.stop is None:
                    self.stop = EndpointUnusable(f"{refused}, and so did its first request ({result.error[:300]})",
                                                 refused.status)
            self.streak.offer(result.outage)
            if self.streak.stopped is not None and self.stop is None:
                self.stop = self.streak.error(self.what, policy.max_retries, self.n_sent, None, left=_JOURNAL_LEFT)

    def _first_contact(self, policy: RetryPolicy) -> EndpointUnusable | None:
        ep = self.endpoint
        try:
            models = self._models(policy)
        except EndpointUnusable as err:
            if _unreachable(err):
                return err
            if err.status not in (404, 405):  # no model list at all is common; anything else is said
                log(f"warning: {err}; asking it all the same: its requests will say whether it answers")
            if err.status in (401, 403):
                self.list_refused = err
            return None
        listed = [str(m.get("id")) for m in models]
        if ep.model not in listed:
            shown = ", ".join(listed[:5]) + (", ..." if len(listed) > 5 else "")
            log(f"warning: {self.what} does not list the model {ep.model!r} (it lists {shown or 'none'}): its "
                "requests may be refused")
        return None


def _unreachable(err: EndpointUnusable) -> bool:
    """Whether a model list's failure says the endpoint cannot be used now: nothing answered, or a server still
    failing (a 5xx, a 429) once the retries were spent; any other status lets the requests decide."""
    return err.status is None or retryable_status(err.status)


def unusable_endpoints(clients: Iterable[ChatClient]) -> dict[str, Any]:
    """A stage summary's ``endpoints_unusable``: why each endpoint its ``clients`` ask was stopped
    (``EndpointWatch``), once per endpoint, and ``requests_not_sent``: how many of their requests were then held back,
    one per job (the traces stage's one per item and sample, dedup's one per pair checked), each job failed as
    ``request_failed`` but by no endpoint's failure to answer; {} when none was stopped, so a summary says it only
    when it happened."""
    watches = list(dict.fromkeys(c.watch for c in clients if c.watch is not None))
    stops = [str(watch.stop) for watch in watches if watch.stop is not None]
    if not stops:
        return {}
    return {"endpoints_unusable": stops, "requests_not_sent": sum(watch.n_not_sent for watch in watches)}


class NoWholeAnswer(httpx2.ReadTimeout):
    """A reply whose body was not whole within the request's ``timeout_s``: a timeout, retried as the SDK's are."""


class WholeAnswerClient(httpx2.Client):
    """The chat client's HTTP client (the SDK's ``http_client``): each answer must be whole within ``timeout_s`` of
    its send.

    The SDK's ``timeout`` bounds each read, so on its own a server (or a proxy) sending its answer a few bytes at a
    time holds a request, its worker and a Ctrl-C for as long as it keeps sending, its late answer kept. Here the body is
    read by the deadline: a timer then shuts the connection's socket (a read waiting on it returns at once) and the
    request fails with ``NoWholeAnswer``, which the SDK raises as its timeout error. The wait for the reply's headers
    is the SDK's, bounded by ``timeout_s`` of silence; a reply that begins past the deadline fails the same way. A
    streamed reply (``stream=True``, which no stage asks for) is its reader's to bound.

    Args:
        timeout_s: the whole answer's bound, seconds.
        **kwargs: ``httpx2.Client``'s.
    """

    def __init__(self, timeout_s: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.whole_answer_s = timeout_s

    def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any) -> httpx2.Response:
        deadline = time.monotonic() + self.whole_answer_s
        response = super().send(request, stream=True, **kwargs)
        if stream:
            return response
        expired = threading.Event()
        network_stream = response.extensions.get("network_stream")

        def expire() -> None:
            expired.set()
            sock = network_stream.get_extra_info("socket") if network_stream is not None else None
            if sock is not None:
                try:  # the plain socket's shutdown, under TLS too: the reading thread keeps its TLS object
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed: the read has ended

        # A daemon: a timer left waiting never holds the interpreter's exit; it is cancelled once the body is read.
        timer = threading.Timer(max(0.0, deadline - time.monotonic()), expire)
        timer.daemon = True
        timer.start()
        try:
            response.read()
        except httpx2.TransportError:
            response.close()
            if expired.is_set():  # the shut socket's own error: the deadline's doing
                raise self._late() from None
            raise
        finally:
            timer.cancel()
        if expired.is_set() or time.monotonic() > deadline:
            raise self._late()
        return response

    def _late(self) -> NoWholeAnswer:
        return NoWholeAnswer(f"no whole answer within timeout_s {self.whole_answer_s:g} s")


class ChatClient:
    """A chat client for one endpoint.

    Args:
        endpoint: where and what to ask.
        max_retries: retries of a transient failure.
        backoff_s: the first retry delay; it doubles per retry, capped at 60 s, jittered, never shorter than the
            server's ``Retry-After`` (``judge.plumbing.retry``).
        timeout_s: per-request timeout: the answer must be whole within it (``WholeAnswerClient``), retried as a
            timeout when it is not.
        retry_wait_budget_s: the most seconds one request waits between its retries, all waits together
            (``RetryPolicy.wait_budget_s``; the stage config's ``retry_wait_budget_s``): a retry whose wait would
            pass it is not made, and the request fails as at retries spent, its ``error`` saying why.
        watch: the endpoint's ``EndpointWatch`` (None: every request is sent and none is counted, for one-off use).
    """

    def __init__(self, endpoint: EndpointConfig, max_retries: int = 5, backoff_s: float = 1.0, timeout_s: float = 600.0,
                 *, retry_wait_budget_s: float = DEFAULT_WAIT_BUDGET_S, watch: EndpointWatch | None = None):
        import openai

        self.endpoint = endpoint
        self.watch = watch
        #: judge.plumbing.retry's policy (Retry-After honoured); tests swap its sleep for a recording one.
        self.retry = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s, max_backoff_s=_BACKOFF_CAP_S,
                                 wait_budget_s=retry_wait_budget_s, bound_flag="retry_wait_budget_s")
        # The SDK's own retries are off: this class retries, so attempts are counted and reported.
        self._client = openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0, timeout=timeout_s,
                                     http_client=WholeAnswerClient(timeout_s, timeout=timeout_s, follow_redirects=True,
                                                                   limits=openai.DEFAULT_CONNECTION_LIMITS))
        self._api_error = openai.APIError

    def complete(self, prompt: str, system: str = "", temperature: float | None = None,
                 seed: int | None = None) -> ChatResult:
        """Ask for one completion of ``prompt`` as a single user turn.

        Args:
            seed: sent as the request's ``seed``, in place of the endpoint's ``extra_body`` one (None: the endpoint's
                ``extra_body`` as it is).

        Returns:
            A ``ChatResult``; never raises for a failed request, nor for one its ``watch`` did not send.
        """
        if self.watch is None:
            return self._complete(prompt, system, temperature, seed)
        stop = self.watch.before_request(self.retry)
        if stop is not None:  # failed like an outage, not sent: journalled as failed, asked again by a rerun
            return ChatResult("", False, f"not sent: {stop}", attempts=0)
        result = self._complete(prompt, system, temperature, seed)
        self.watch.after_request(result, self.retry)
        return result

    def _complete(self, prompt: str, system: str, temperature: float | None, seed: int | None) -> ChatResult:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        ep = self.endpoint
        extra_body = ep.extra_body if seed is None else {**ep.extra_body, "seed": seed}
        attempts = Attempts()
        try:
            response = self.retry.call(lambda: self._client.chat.completions.create(
                model=ep.model,
                messages=messages,
                temperature=ep.temperature if temperature is None else temperature,
                max_tokens=ep.max_tokens,
                extra_body=extra_body or None,
            ), attempts)
        except self._api_error as err:  # retries spent, or a 4xx retrying will not fix
            status = getattr(err, "status_code", None)
            stopped = f" ({said})" if (said := retry_stop_said(err)) else ""  # a wait past retry_wait_budget_s
            late = f" ({err.__cause__})" if isinstance(err.__cause__, NoWholeAnswer) else ""  # the SDK's own words hide it
            return ChatResult("", False, f"{type(err).__name__}: {err}{late}{stopped}", attempts=attempts.n,
                              outage=streak_failure(err, self.retry),
                              status=status if isinstance(status, int) else None)
        except JSON_REFUSALS as err:
            # A 200 whose body json.loads refused (nested too deeply, a number past its digit limit, no JSON): the
            # readers' words, as every endpoint client says it, not Python's (its advice on sys.set_int_max_str_digits)
            said = unreadable_answer(err) or f"unexpected {type(err).__name__}: {err}"
            return ChatResult("", False, said, attempts=attempts.n)
        except Exception as err:
            # Anything else the SDK or its transport raised (a thread reading a module another thread was still
            # importing raised AttributeError) escaped run_jobs's worker and stopped the whole stage with a
            # traceback. It is no answer: failed like an outage, counted, and asked again by a rerun.
            return ChatResult("", False, f"unexpected {type(err).__name__}: {err}", attempts=attempts.n)
        # A body without a choice (a proxy's 200 carrying only an "error", an empty "choices") is no answer: failed
        # like an outage, so the stage counts it and a rerun asks again, where indexing it crashed the worker thread.
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            return ChatResult("", False, "no choice in the endpoint's response", attempts=attempts.n)
        choice = choices[0]
        finish_reason = choice.finish_reason if isinstance(choice.finish_reason, str) else ""
        text = message_text(choice.message.content)
        if text is None:
            # The SDK does not check the type: a list or object passed on crashed every stage that reads the text,
            # after traces and answers had journalled it as answered, so that every rerun crashed the same way.
            return ChatResult("", False, f"the endpoint's message content is not text: {described_content(choice.message.content)}",
                              attempts=attempts.n, finish_reason=finish_reason)
        reasoning = separated_reasoning(choice.message) or ""
        if longer_than_asked(len(text), ep.max_tokens, len(reasoning)):
            # Bounded here, once, before any stage parses, journals or trains on it: a server that ignored the limit
            # sent text no request could have produced, and every parser downstream would read all of it.
            return ChatResult("", False, f"oversized: {_oversized_detail(len(text), len(reasoning), ep.max_tokens)}: "
                              "the server did not generate under the limit it was asked with", attempts=attempts.n,
                              finish_reason=finish_reason, oversized=True)
        for part, value in (("content", text), ("reasoning", reasoning)):
            if (at := lone_surrogate_at(value)) is not None:
                # Valid JSON ("\ud800") but no text: the journal's UTF-8 write would raise out of the worker and stop
                # the stage, and every rerun would ask again and stop the same way. Failed, asked again by a rerun.
                return ChatResult("", False, f"the endpoint's message {part} is not valid Unicode text: a lone "
                                  f"surrogate (U+{ord(value[at]):04X}) at character {at}", attempts=attempts.n,
                                  finish_reason=finish_reason)
        return ChatResult(text, True, attempts=attempts.n, finish_reason=finish_reason, reasoning=reasoning)


def _oversized_detail(text_length: int, reasoning_length: int, max_tokens: int) -> str:
    """Which part of an output ``longer_than_asked`` refused, and the bound it passed."""
    if longer_than_asked(text_length, max_tokens):
        return f"{text_length} characters of answer, more than max_tokens {max_tokens} x {CHARS_PER_TOKEN} allows"
    cap = max(max_tokens, REASONING_TOKEN_CAP)
    return (f"{reasoning_length} characters of reasoning, more than {cap} x {CHARS_PER_TOKEN} allows "
            "(REASONING_TOKEN_CAP)")


def stable_endpoint(key: str, shares: Sequence[float], seed: int) -> int:
    """The endpoint index for the job ``key``: a seeded hash of the key alone, drawn in proportion to ``shares``.

    A job's endpoint depends on nothing but its own key, the shares and the seed (the run key pins the last two), so
    adding, dropping or reordering other jobs, or changing a stage's ``limit``, never moves a journalled job to
    another endpoint and asks it again. The price is that the counts are not exactly proportional, as a largest-
    remainder split of the whole list would make them: each job is an independent draw, so an endpoint's count
    varies by about sqrt(n*p*(1-p)). Measured with seed 0 (ids shaped as the instructions stage names them): 1,000
    instructions over 15 equal models give 55-75 per model (mean 66.7); 26,000, the paper's kept instructions (arXiv
    2505.24616v3, §3.1), give 1,647-1,782 (mean 1,733: -5.0% to +2.8%); the 450 generation jobs of one per leaf and
    level over 3 equal generators give 144-156, and 76,950 (171 per leaf and level, the paper's 78,000) 25,415-25,829
    (within 1% of 25,650).
    The paper's "equal shares" are met in expectation; stability is what keeps a rerun from paying twice.

    Returns:
        An index into ``shares``.
    """
    if not shares:
        raise ValueError("stable_endpoint: no endpoint to assign (empty shares)")
    # A NaN or infinite share made the draw's total NaN or inf: every comparison below was false, and every job went
    # to the last endpoint without a word. EndpointConfig refuses such a share; this is for callers in Python.
    if not all(math.isfinite(share) and share > 0 for share in shares):
        raise ValueError(f"stable_endpoint: every share must be a finite positive number, got {list(shares)}")
    total = float(sum(shares))
    digest = hashlib.sha256(f"{seed}\n{key}".encode("utf-8")).digest()
    point = int.from_bytes(digest[:8], "big") / 2.0**64 * total
    bound = 0.0
    for index, share in enumerate(shares):
        bound += share
        if point < bound:
            return index
    return len(shares) - 1  # float rounding at the top of the last share

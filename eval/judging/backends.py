"""How ``judge-eval run`` reaches a judge over HTTP: one backend per kind of endpoint, and endpoint probing.

- ``ChatBackend``: one ``/v1/chat/completions`` request per item (vLLM, judge-serve's passthrough, OpenAI-compatible
  APIs such as GPT-4o or DeepSeek-R1).
- ``JudgeServeBackend``: judge-serve's ``/v1/judge``, all criteria of one (instruction, answer) per request.

Transient failures raise (the runner retries them; an engine's aborted generation is one: ``generation_aborted``); a
server's refusal raises ``Refused``, an HTTP 200 that is no answer of the protocol's ``MalformedAnswer`` (a
``Refused`` the failing streak counts); a judge-serve answering in another verdict format than the run records raises
``ServerChanged`` (the runner stops).

Before the work starts, ``eval.judging.contact.first_contact`` asks the server's model list (``judge.plumbing.retry.list_models``: a server
still loading is waited for, a wrong key or URL is one plain sentence) and reads what it allows
(``judge.wire.ModelLimits``); ``fit_max_tokens`` fits a request's ``max_tokens`` to it, and ``FirstRefusals`` stops a
run whose first requests are all refused alike.

Why one module of ~850 lines: both backends and the pairwise and ranking clients read a server's answer by the same
rules (refusals, a malformed 200 (``MalformedAnswer``), a context too small, aborted generations, a verdict past
any scale, the first refusals' stop); apart, each client would restate them.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from eval.judging.answer_text import answer_text
from judge.checkpoints import NEUTRAL_SAMPLING
from judge.plumbing.config_files import ConfigError
from judge.plumbing.console_logging import visible
from judge.plumbing.json_reading import JSON_REFUSALS, unreadable_answer
from judge.plumbing.message_content import described_content, no_choice_said, separated_reasoning
from judge.plumbing.retry import EndpointUnusable, is_transient, retry_stop_said, retryable_status, server_message
from judge.prompts import POLLUX_PROMPT, PromptTemplate
from judge.verdicts import CONTEXT_LIMIT, VerdictError, VerdictFormat, rationale_cut_short
from judge.wire import (CustomCriterion, JudgeItem, JudgeRequest, JudgeResponse, JudgeResult, ScoreSource,
                        read_context_words)

if TYPE_CHECKING:
    from eval.judging.config import RunConfig

__all__ = ["JudgeBackend", "Refused", "ServerChanged", "refuse_format_change", "ChatBackend", "JudgeServeBackend",
           "verdict_outcome", "chat_extra_body", "retryable_status", "is_transient", "reasoning_of", "short",
           "FirstRefusals", "N_FIRST_REFUSALS", "unasked_first", "EndpointUnusable", "refusal_of", "too_long_outcome",
           "BodyPastBound", "failed_outcome", "past_bound", "chat_answer_text", "CONTEXT_LIMIT", "ABORTED_FINISH",
           "generation_aborted", "TooLong", "NoRoom", "context_refusal", "finish_reason_of",
           "FINISH_REASON_CHARS", "is_scored_cut", "within_timeout", "MalformedAnswer", "chat_choice",
           "not_json", "judge_response", "failure_reason"]

log = logging.getLogger("judge_eval.backends")

T = TypeVar("T")


class JudgeBackend(Protocol):
    """How predictions are obtained from one kind of endpoint.

    ``batches`` decides which records travel together in one request; ``judge`` sends one batch and returns one
    outcome per record, in order: a dict with ``raw_output, feedback, score, parse_ok, error, reason,
    score_source``. Transient failures raise (the runner retries them); a server's refusal raises ``Refused``.
    """

    name: str

    def batches(self, records: Sequence) -> list[list]: ...

    async def judge(self, batch: Sequence) -> list[dict[str, Any]]: ...

    async def aclose(self) -> None: ...


class Refused(Exception):
    """The server refused the request for a reason retrying will not fix (a 4xx other than 408/409/429).

    Attributes:
        status: the HTTP status (None: not an HTTP refusal, e.g. a malformed answer).
        said: the server's own message (its ``error.message``), for the console.
    """

    def __init__(self, message: str, status: int | None = None, said: str = ""):
        super().__init__(message)
        self.status, self.said = status, said or message


class MalformedAnswer(Refused):
    """An HTTP 200 that is no answer of the protocol's: not JSON (a proxy's or web server's page), or JSON that is no
    chat completion or ``/v1/judge`` response (no ``choices``, a choice that is no object), or a ``/v1/judge``
    response that is no answer to the request sent (another number of items or results, results for other criteria
    or in another order, an item of another id or index than the one asked: ``judge_results``). Not retried (the
    same server answers the same way), it is a failed row the next run asks again, and it counts in the failing
    streak (``judge.plumbing.failing_streak``) as a request failed after its retries does: an endpoint answering
    every request so stops the run (exit 4), where each answer, read alone, looked like one item's failure.

    ``unretried`` is what the streak's message says of these failures, which had no retry: what the answer should
    have been (``expected``: ``CHAT_COMPLETION`` on the chat route, ``JUDGE_RESPONSE`` on judge-serve's ``/v1/judge``),
    so a stop names the protocol of the backend in use."""

    def __init__(self, message: str, *, expected: str):
        super().__init__(message)
        self.expected = expected
        self.unretried = f"answered HTTP 200 with no {expected}"


#: What a ``MalformedAnswer`` was expected to be, by route, as the failing streak's stop names it.
CHAT_COMPLETION = "chat completion"
JUDGE_RESPONSE = "/v1/judge response"


class ServerChanged(Exception):
    """A judge-serve answered in another verdict format than the one the run records (its ``run.json``): not a failure
    of the request's items but of the server, changed since the run resolved its format (restarted on another
    export under the same name), or one that never said its format (a judge-serve from before its ``GET /v1/models``
    did) and serves another than the run guessed. The runner stops instead of writing rows that ``score`` would read
    as the recorded format."""

    def stopped(self, n_sent: int, n_total: int, n_written: int) -> str:
        """The console's sentence for the stopped run: the change, how many requests were sent, what is kept."""
        return (f"{self}; stopped after sending {n_sent} of {n_total} requests ({n_written} rows written are kept; "
                "none for its answer, which a rerun asks again)")


def refuse_format_change(answered: str, config: Any, model: str) -> None:
    """Raise ``ServerChanged`` when a judge-serve's ``/v1/judge`` answer (pointwise or pairwise) is in another
    verdict format (``answered``) than the run's (``config.verdict_format``, which run.json records).

    A config still at "auto" (a caller that resolved no format: ``run`` always does) has nothing to hold it to.
    """
    if config.verdict_format != "auto" and answered != config.verdict_format:
        raise ServerChanged(
            f"judge-serve answered in the verdict format {visible(answered, 100)}, but this run records "
            f"{config.verdict_format} for {model!r} (its run.json): the server changed since the run began, or does "
            f"not say its format in GET /v1/models (then set --verdict-format {visible(answered, 100)})")


def refusal_of(err: Any) -> Refused:
    """``Refused`` from an ``openai.APIStatusError``: its status and the server's ``error.message``."""
    body = getattr(err, "body", None)
    said = str(body["message"]) if isinstance(body, dict) and body.get("message") else str(err.message)
    said = " ".join(said.split())
    return Refused(f"HTTP {err.status_code}: {short(err.message)}", err.status_code, short(said))


#: The two ways a server says the prompt fits its window and only the answer's ``max_tokens`` does not, both from
#: servers that refuse such a request (vLLM 0.32 lowers max_tokens to the room left instead:
#: ``entrypoints/serve/utils/api_utils.py`` ``get_max_tokens``, so every context 400 of its is a prompt longer than
#: the window): older vLLM's "'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum
#: context length is 4096 tokens and your request has 901 input tokens (4000 > 4096 - 901).", and older vLLM's /
#: OpenAI's "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (904 in the
#: messages, 4096 in the completion)." (the window, then the prompt's tokens).
_ANSWER_OVERFLOW = (re.compile(r"maximum context length is (\d+) tokens and your request has (\d+) input tokens", re.I),
                    re.compile(r"maximum context length is (\d+) tokens\. However, you requested \d+ tokens \((\d+) in "
                               r"the messages", re.I))


#: vLLM 0.32's refusal of a ``max_tokens`` above the whole window (``renderers/params.py``), whatever the prompt: the
#: settings' (a client that reads it as a context refusal, MERA's, gets ``NoRoom``).
_MAX_TOKENS_OVER_WINDOW = re.compile(r"max_(?:completion_)?tokens=\d+ cannot be greater than max_model_len=\d+", re.I)


def _no_room(message: str) -> bool:
    """Whether the server's words say the prompt fits its window and only ``max_tokens`` does not
    (``_ANSWER_OVERFLOW``, judge-serve's ``judge.wire.context_words``), or that ``max_tokens`` alone is over the window
    (``_MAX_TOKENS_OVER_WINDOW``)."""
    if _MAX_TOKENS_OVER_WINDOW.search(message):
        return True
    # judge-serve's refusal by tokens (judge.wire.context_words). Its pairwise refusal by characters
    # (``check_pair_sizes``) is read as the pair's own: its bound counts the longest token's characters per token, so
    # it cannot tell that the prompt would fit the window.
    if (found := read_context_words(message)) is not None:
        prompt, window = found
        return prompt < window
    for pattern in _ANSWER_OVERFLOW:
        if (found := pattern.search(message)) is not None:
            window, prompt = (int(n) for n in found.groups())
            return prompt < window
    return False


class TooLong(Refused):
    """A prompt longer than the server's context window: the item's own, never the settings' (``context_refusal``).
    Its final row (``context_length_exceeded``, reason ``final_reason``) is written at once and never asked again, and
    it is not offered to ``FirstRefusals`` (``FirstRefusals.offer``'s ``aside``): items too long are the data's, and
    held, a run whose first three items were long stopped as a misconfigured endpoint."""

    def __init__(self, refusal: Refused):
        super().__init__(str(refusal), refusal.status, refusal.said)
        self.final_reason = refusal.said


class NoRoom(Refused):
    """A prompt that fits the window but leaves no room for the request's ``max_tokens``: the settings' fault
    (``context_refusal``). Offered to ``FirstRefusals`` as the refusal it is: every first request refused alike stops
    the run (exit 4), their rows ``request_failed`` (the ``if_stopped`` payloads), as a misconfiguration should. When
    the stop does not fire, the item's final ``context_length_exceeded`` row, whose reason (``final_reason``) names
    ``max_tokens`` and the remedy: a resume refuses a changed ``max_tokens`` (it is part of the run's key), so a
    ``request_failed`` row was asked again, and refused again, by every rerun."""

    def __init__(self, refusal: Refused, max_tokens: int):
        super().__init__(str(refusal), refusal.status, refusal.said)
        self.final_reason = (f"{refusal.said} (the prompt fits the context window, but not with max_tokens {max_tokens}: "
                             "lower --max-tokens, in a new --out or with --overwrite, since a resume keeps the run's "
                             "max_tokens)")


class BodyPastBound(NoRoom):
    """One judgment whose request the server refuses as too large (HTTP 413: judge-serve's ``max_body_bytes``, a
    proxy's bound) with nothing smaller to send: one criterion alone (a ``/v1/judge`` batch is asked again one
    criterion at a time, ``eval.judging.run``), one pair, one chat prompt. That server refuses it however often it is
    sent, so, as ``NoRoom``, it is held by ``FirstRefusals``: a server whose bound is too small for every request
    (``max_body_bytes`` set in kilobytes) stops the run (exit 4) with ``request_failed`` rows that a rerun against a
    server with a larger bound asks again. When the stop does not fire, the judgment's final
    ``context_length_exceeded`` row, whose reason (``final_reason``) names the 413 and the remedy: a resume keeps final
    rows, whatever the server, where a ``request_failed`` row was sent again, and refused again, by every rerun.
    ``rank``'s request for a candidate's answer to one instruction is one too (``one="instruction"``,
    ``does="answers"``: its row's reason says so)."""

    def __init__(self, refusal: Refused, *, one: str = "judgment", does: str = "judges"):
        Refused.__init__(self, str(refusal), refusal.status, refusal.said)
        said = short(refusal.said, 200)
        self.final_reason = (f"the server refused the request's body as too large (HTTP 413: {said}), with this one "
                             f"{one} alone: a server with a larger bound (judge-serve's max_body_bytes) {does} it in "
                             "a new --out, with --overwrite, or once this row is deleted (a resume keeps final rows)")


def context_refusal(refusal: Refused, message: str, max_tokens: int, *, is_context: bool | None = None) -> Refused:
    """The one rule every client (judge, pairwise, rank, MERA) applies to a server's 400: ``TooLong`` for a prompt
    longer than the window, ``NoRoom`` for one that fits but leaves no room for ``max_tokens``, else ``refusal``.

    Args:
        refusal: the server's refusal (``refusal_of``).
        message: the whole error body's text (vLLM's and OpenAI's words, OpenAI's ``code``).
        max_tokens: the request's ``max_tokens``, which ``NoRoom``'s reason names.
        is_context: a client that read the words as a context refusal by its own rules (MERA's broader ones) says
            so; None: ``CONTEXT_LIMIT`` decides.
    """
    if refusal.status == 400 and _MAX_TOKENS_OVER_WINDOW.search(message):  # vLLM 0.32's: the settings', any route
        return NoRoom(refusal, max_tokens)
    if not (refusal.status == 400 and CONTEXT_LIMIT.search(message) is not None if is_context is None else is_context):
        return refusal
    return NoRoom(refusal, max_tokens) if _no_room(message) else TooLong(refusal)


#: vLLM's finish_reason for a generation its engine ended itself (``FINISH_REASON_STRINGS`` in
#: ``vllm/v1/engine/__init__.py``, vLLM 0.32): a paused engine (``pause_generation(mode="abort")``) or a
#: fault-tolerance abort answers HTTP 200 with the text written so far.
ABORTED_FINISH = "abort"


def generation_aborted(reason: str) -> Exception:
    """The transient failure a backend raises for an aborted generation (``ABORTED_FINISH``):
    ``judge.plumbing.retry.GenerationAborted``, which the retry policy retries; retries spent, a ``request_failed``
    row that the next run asks again."""
    from judge.plumbing.retry import GenerationAborted

    return GenerationAborted(reason)


async def within_timeout(answer: Awaitable[T], timeout_s: float) -> T:
    """``await answer``, bounded by the run's ``timeout_s`` as a whole: the HTTP clients' own timeout bounds each
    read, so a server sending its answer a few bytes at a time held a request for as long as it kept sending. Past
    the bound, an ``httpx.ReadTimeout``: a transient failure, retried and counted as a client timeout
    (``judge.plumbing.failing_streak``) as the clients' own are."""
    import httpx

    try:
        async with asyncio.timeout(timeout_s):
            return await answer
    except TimeoutError:
        raise httpx.ReadTimeout(f"no whole answer within timeout_s {timeout_s:g} s") from None


def failed_outcome(error: str, reason: str, *, pairwise: bool = False) -> dict[str, Any]:
    """A row's judge fields for a judgment with no verdict, one way for every writer: pointwise (``PredictionRow``) or
    ``pairwise`` (``PairwiseRow``: no score source, scale flag, regression head's value or finish reason)."""
    outcome = {"raw_output": None, "feedback": "", "score": None, "parse_ok": False, "error": error, "reason": reason}
    return outcome if pairwise else {**outcome, "score_source": None, "in_scale": None, "regression_score": None,
                                     "finish_reason": None}


#: The longest ``finish_reason`` a row keeps: the engines' words are a few letters (``stop``, ``length``,
#: ``content_filter``); a server's longer value is cut, never carried whole into every row.
FINISH_REASON_CHARS = 64


def finish_reason_of(value: Any) -> str | None:
    """A server's ``finish_reason`` as a row keeps it: a string, cut at ``FINISH_REASON_CHARS``; None for no string
    (a proxy's null or number, which a row's check would refuse as the judge's answer)."""
    return value[:FINISH_REASON_CHARS] if isinstance(value, str) else None


def too_long_outcome(reason: str, *, pairwise: bool = False) -> dict[str, Any]:
    """The final row (never re-asked) of a prompt the judge's context cannot hold, as judge-serve answers one."""
    return failed_outcome(VerdictError.CONTEXT_LENGTH_EXCEEDED, reason, pairwise=pairwise)


def chat_answer_text(message: Any) -> str | None:
    """A chat answer's text (``eval.judging.answer_text``: text parts joined, reasoning skipped, reasoning alone an
    unclosed ``<think>``), None for none; content that is no text (an image part) is ``Refused``, asked again."""
    content = getattr(message, "content", None)  # a choice without a message: no answer, as null content
    if (text := answer_text(content)) is None:
        raise Refused(f"the chat answer's message content is not text: {described_content(content)}")
    return None if content is None else text


def verdict_outcome(text: str | None, record, lenient: bool, *, verdict_format: str = VerdictFormat.TAGGED,
                    reasoning: str | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    """Parse a judge's raw output against the record's scale (a score outside it is scored, ``in_scale`` false).

    ``verdict_format`` is the judge's (``judge.VerdictFormat``); for ``integer``, ``reasoning`` is the server's
    separated reasoning, kept as the row's ``feedback`` and put back before the answer in its ``raw_output``
    (``judge.verdicts.inline_reasoning``: the text judge-serve's ``/v1/judge`` returns for the same generation),
    and an answer ``max_tokens`` stopped (``finish_reason`` "length") fails as ``cut``, as judge-serve reads it
    (``judge.verdicts.cut_short``): a reasoning parser hands the text after a cut ``</think>`` as the answer, whose
    integer is then wherever the cut fell. A ``tagged`` verdict is
    read as judge-serve reads it too (``judge.verdicts.read_tagged_verdict``, the length cut's rule included).
    """
    from judge import ScaleError, scale_of
    from judge.verdicts import inline_reasoning, read_served_verdict

    try:
        scale = scale_of(record.rubrics)
    except ScaleError:
        scale = None  # a rubric without a readable scale: no range check, rather than no verdict
    if verdict_format == VerdictFormat.INTEGER:
        # the row's raw output and verdict are those of the engine's whole text, as judge-serve's /v1/judge reads it
        text, reasoning = inline_reasoning(text, reasoning, finish_reason), None
    verdict = read_served_verdict(verdict_format, text, reasoning=reasoning, scale=scale, lenient=lenient,
                                  finish_reason=finish_reason)
    return past_bound({
        "raw_output": text,
        "feedback": verdict.feedback,
        "score": verdict.score if verdict.ok else None,
        "parse_ok": verdict.ok,
        "error": verdict.error,
        "reason": verdict.reason,
        "score_source": ScoreSource.VERDICT if verdict.ok else None,
        "in_scale": verdict.in_scale,
        "regression_score": None,
        "finish_reason": finish_reason_of(finish_reason),
    })


def past_bound(outcome: dict[str, Any]) -> dict[str, Any]:
    """``outcome``, or, when a number of its verdict is past the size no judge's score reaches
    (``judge.records.SCORE_BOUND``: a ``[RESULT] 10000000 [END]``, a regression head's value of 5e6), the judge's final
    answer as a parse failure (``no_score``, the number in the reason, each field past the bound nulled): a row
    holding the number is refused by every reader, and was a ``request_failed`` row every rerun asked again.

    Every judge number counts, not ``score`` alone: a regression judge's score is its head's value
    (``regression_score``), and a seq2seq judge's ``expected_score`` is the mean of the score tokens' distribution,
    past any scale only when those tokens are no rubric's points; either way the verdict read beside it is not one.
    ``no_score``, not ``out_of_scale``: ``score`` parses an ``out_of_scale`` row's text again, as rows of older runs,
    and would score the number (``eval.scoring.item_table``)."""
    from judge.records import SCORE_BOUND

    past = {name: value for name in ("score", "regression_score", "expected_score")
            if (value := outcome.get(name)) is not None and abs(value) > SCORE_BOUND}
    if not past:
        return outcome
    said = " and ".join(f"the judge's {name} {value:.15g}" for name, value in past.items())
    return {**outcome, **dict.fromkeys(past), "score": None, "parse_ok": False, "error": VerdictError.NO_SCORE,
            "score_source": None, "in_scale": None,
            "reason": f"{said} {'is' if len(past) == 1 else 'are'} on no rubric's scale (its size is over "
                      f"{SCORE_BOUND:g})"}


class ChatBackend:
    """One ``/v1/chat/completions`` request per record (vLLM, judge-serve's passthrough, OpenAI-compatible APIs).

    The Russian prompt is ``template``'s (``judge.checkpoints.prompt_template_and_why``: the released Pollux-4B-Judge
    is asked with its own). With it, requests carry ``judge.checkpoints.NEUTRAL_SAMPLING`` (so vLLM takes no penalty or
    top-k from the checkpoint's ``generation_config.json``), and requests to a ``tagged`` judge ``chat_template_kwargs:
    {"enable_thinking": false}``: the server renders the chat template with thinking off, as ``judge.apply_chat`` does
    (Qwen3 judges; ChatML ignores it). An ``integer`` judge (``Pollux-4B-Judge``) keeps thinking on: its reasoning
    comes back in the message's ``reasoning`` (vLLM ``--reasoning-parser``; ``reasoning_content`` in older servers) or
    inline as ``<think>...</think>``, and is kept as the prediction's feedback.

    Args:
        base_url: the OpenAI base URL (ending in ``/v1``).
        api_key: the key ("EMPTY" for local servers).
        model: the model name to send.
        config: the run's settings (prompt language, verdict format, max_tokens, temperature, timeout, lenient,
            extra_body).
        template: the Russian prompt's template (``prompt: ru``).
    """

    def __init__(self, base_url: str, api_key: str, model: str, config: RunConfig,
                 template: PromptTemplate = POLLUX_PROMPT):
        import openai

        # Retries are the runner's (with its own backoff and accounting), so the SDK's are off.
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=0,
                                         timeout=config.timeout_s)
        self.model, self.config, self.template = model, config, template
        self.name = config.name or model

    def batches(self, records: Sequence) -> list[list]:
        return [[record] for record in records]

    def prompt(self, record) -> str:
        import judge

        return judge.render_prompt_en(record) if self.config.prompt == "en" else self.template.render(record)

    async def judge(self, batch: Sequence) -> list[dict[str, Any]]:
        import judge
        import openai

        (record,) = batch
        body = chat_extra_body(self.config)
        kwargs: dict[str, Any] = {"extra_body": body} if body else {}
        integer = self.config.verdict_format == VerdictFormat.INTEGER
        try:
            response = await within_timeout(self.client.chat.completions.create(
                model=self.model,
                messages=judge.chat_messages(self.prompt(record)),
                max_tokens=self.config.max_tokens,
                temperature=self.config.temperature,
                **kwargs,
            ), self.config.timeout_s)
        except openai.APIStatusError as err:
            if retryable_status(err.status_code) or retryable_status(err.status_code, err.response.headers):
                raise  # the retry policy decides (x-should-retry: true makes a 4xx worth another try)
            if err.status_code == 413:  # one prompt past the server's body bound (judge-serve proxies this route)
                raise BodyPastBound(refusal_of(err)) from err
            # err.message holds the whole body: vLLM's and OpenAI's words, and OpenAI's code
            refusal = context_refusal(refusal_of(err), str(err.message), self.config.max_tokens)
            if isinstance(refusal, TooLong):
                return [too_long_outcome(refusal.final_reason)]
            raise refusal from err  # NoRoom included: the runner offers it to FirstRefusals (eval.judging.run)
        except JSON_REFUSALS as err:  # a body json.loads refused: not JSON, or JSON it cannot hold
            if (malformed := not_json(err)) is None:
                raise
            raise malformed from err
        choice = chat_choice(response)
        finish_reason = getattr(choice, "finish_reason", None)
        if finish_reason == ABORTED_FINISH:
            raise generation_aborted(f"the chat server's engine aborted the generation for {record.id} (finish_reason "
                                     f"{ABORTED_FINISH})")
        message = choice.message
        return [verdict_outcome(chat_answer_text(message), record, self.config.lenient,
                                verdict_format=self.config.verdict_format,
                                reasoning=reasoning_of(message) if integer else None, finish_reason=finish_reason)]

    async def aclose(self) -> None:
        await self.client.close()


def chat_extra_body(config: Any) -> dict[str, Any]:
    """The fields a chat request to the judge carries beyond the OpenAI ones, pointwise (``ChatBackend``) or pairwise
    (``eval.pairwise.judging``): with ``prompt: ru``, ``judge.checkpoints.NEUTRAL_SAMPLING`` and, for a judge that is
    not ``integer``, thinking off; then the run's ``extra_body``, which wins (``chat_template_kwargs`` included), a
    key it sets to null (None) left out of the body: an API that refuses vLLM's fields is sent none of them."""
    from judge.prompts import JUDGE_CHAT_TEMPLATE_KWARGS

    # The POLLUX prompt goes to POLLUX judges on vLLM: thinking off, as judge.apply_chat renders (Qwen3 templates
    # read it; ChatML ignores it), and the sampling fields vLLM would otherwise take from the checkpoint's
    # generation_config.json stated neutral, as judge-serve states them (judge.checkpoints.NEUTRAL_SAMPLING).
    # API judges (prompt "en") get no such field: api.openai.com refuses unknown ones.
    body: dict[str, Any] = {}
    if config.prompt == "ru":
        body.update(NEUTRAL_SAMPLING)
        if config.verdict_format != VerdictFormat.INTEGER:  # an integer judge was released to think first
            body["chat_template_kwargs"] = dict(JUDGE_CHAT_TEMPLATE_KWARGS)
    body.update(config.extra_body)
    return {name: value for name, value in body.items() if value is not None}


class _ProbeRecord:
    """The fields ``JudgeServeBackend.request`` reads, for checking ``extra_body`` before a run."""

    id, instruction, answer, reference_answer, criteria_name, rubrics = "probe", "-", "-", None, "-", "0: -\n\n1: -"


_PROBE_RECORD = _ProbeRecord()


class JudgeServeBackend:
    """judge-serve's ``POST /v1/judge``: all criteria of one (instruction, answer) in one request.

    Each record's criterion is sent as a custom ``{name, rubrics}`` so the server renders exactly the prompt its
    judge's template (``judge.checkpoints.prompt_template_and_why``) gives for the record. The response's per-criterion result carries the score and its source:
    ``verdict`` for seq2seq judges, ``regression_head`` (real-valued) for regression judges (``judge.ScoreSource``);
    each result is read as the contract's ``judge.JudgeResult``. A response in another verdict format than the run's
    (``config.verdict_format``, which run.json records) raises ``ServerChanged``.

    Args:
        root_url: the server root (no ``/v1``).
        api_key: bearer token ("" for none).
        model: the served model name.
        config: the run's settings.
    """

    def __init__(self, root_url: str, api_key: str, model: str, config: RunConfig):
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
        self.model, self.config = model, config
        self.name = config.name or model
        self.request([_PROBE_RECORD])  # a bad extra_body is a configuration error before any request is sent
        self.http = httpx.AsyncClient(base_url=root_url, headers=headers, timeout=config.timeout_s)

    def batches(self, records: Sequence) -> list[list]:
        """Consecutive records of one (instruction, reference, answer), at most ``batch_size`` per request
        (``records`` are in ``judge.prefix_order``)."""
        from judge import prefix_key

        out: list[list] = []
        for record in records:
            last = out[-1] if out else None
            if last and len(last) < self.config.batch_size and prefix_key(last[0]) == prefix_key(record):
                last.append(record)
            else:
                out.append([record])
        return out

    def request(self, batch: Sequence) -> JudgeRequest:
        """The request for one batch (one item, one custom criterion per record), as the contract types it.

        Raises:
            ConfigError: ``extra_body`` has a key ``/v1/judge`` does not take, or a value of the wrong type.
        """
        first = batch[0]
        item = JudgeItem(id=first.id, instruction=first.instruction, answer=first.answer,
                         reference_answer=first.reference_answer,
                         criteria=[CustomCriterion(name=r.criteria_name, rubrics=r.rubrics) for r in batch])
        # oversize "fail": a criterion whose prompt cannot fit the judge's context comes back as that judgment's
        # failed result (context_length_exceeded, a final row), not a refusal of the batch, whose every item would
        # be a request_failed row that each rerun sends again.
        fields = {"model": self.model, "items": [item], "max_tokens": self.config.max_tokens,
                  "temperature": float(self.config.temperature), "lenient": self.config.lenient, "oversize": "fail"}
        # The same extra fields a chat backend sends (e.g. {"constrained": true} for judge-serve), checked here.
        try:
            return JudgeRequest.model_validate({**fields, **dict(self.config.extra_body)})
        except ValueError as err:  # pydantic's ValidationError is a ValueError
            raise ConfigError(f"extra_body: not a /v1/judge field or value: {short(str(err))}") from err

    def payload(self, batch: Sequence) -> dict[str, Any]:
        """The JSON body for one batch: ``request(batch)`` with the fields it was given."""
        return self.request(batch).model_dump(mode="json", exclude_unset=True)

    async def judge(self, batch: Sequence) -> list[dict[str, Any]]:
        response = await within_timeout(self.http.post("/v1/judge", json=self.payload(batch)), self.config.timeout_s)
        if response.status_code == 413 and len(batch) == 1:  # one criterion alone past the server's max_body_bytes
            raise BodyPastBound(Refused(f"HTTP 413: {short(response.text)}", 413, server_message(response)))
        # A batch's 413 is a Refused like a 400: eval.judging.run asks each criterion alone (its own retries, its own
        # row), as the item's texts go once per request and one rubric per criterion, so each may fit alone.
        if response.status_code != 200:
            if retryable_status(response.status_code) or retryable_status(response.status_code, response.headers):
                response.raise_for_status()  # the retry policy decides (x-should-retry: true included)
            raise Refused(f"HTTP {response.status_code}: {short(response.text)}", response.status_code,
                          server_message(response))
        body = judge_response(response)
        refuse_format_change(body.verdict_format, self.config, self.model)
        # Another number of items or results, or an item of another id or index (another item's verdicts on the same
        # criteria), is no answer to this request (MalformedAnswer): a failed row each, and counted by the failing
        # streak, as pairwise judging counts it.
        results = judge_results(body, len(batch), f"{len(batch)} criteria of {batch[0].id}", item_id=batch[0].id)
        # Results are matched to records by position: one answered in another order (or for another criterion) would
        # put each verdict on a row it was not asked for, so the request fails instead, and a rerun asks it again. No
        # answer to this request, as a wrong count is none: a MalformedAnswer, so a server answering every request
        # so stops the run after the failing streak, where a plain refusal reset it and every item was asked.
        # Compared stripped: judge-serve releases before this one stripped a custom criterion's name.
        named, asked = [result.criterion for result in results], [record.criteria_name for record in batch]
        if [name.strip() for name in named] != [name.strip() for name in asked]:
            raise MalformedAnswer(f"judge-serve answered for the criteria {short(str(named), 200)}, asked for "
                                  f"{short(str(asked), 200)} in that order", expected=JUDGE_RESPONSE)
        aborted = [result.criterion for result in results if result.error == VerdictError.ABORTED]
        if aborted:  # the whole request asked again: its other results come back with it, as they would on a 503
            raise generation_aborted(f"judge-serve's engine aborted the generation for {short(str(aborted), 200)} "
                                     f"of {batch[0].id} (error {VerdictError.ABORTED})")
        # judge-serve answers an engine's refusal of one judgment as that result's failure (the others are kept); a
        # run records it as it records the refusal of a whole request on the chat route: a refused request, not a
        # verdict of the judge's that failed to parse.
        refused = [result for result in results if result.error == VerdictError.ENGINE_REFUSED]
        if refused:
            raise Refused(f"judge-serve's engine refused {short(str([r.criterion for r in refused]), 200)} of "
                          f"{batch[0].id}: {short(refused[0].error_reason or '', 200)}", 400, refused[0].error_reason or "")
        return [self._outcome(result, self.config.cut_rationale) for result in results]

    @staticmethod
    def _outcome(result: JudgeResult, cut_rationale: str = "fail") -> dict[str, Any]:
        """A predictions row's judge fields (``eval.judging.predictions.PredictionRow``) from one ``/v1/judge`` result.

        A regression head's score on a generation ``max_tokens`` stopped is a ``cut`` failure (``_cut_rationale``),
        unless ``cut_rationale`` (the run's setting) is ``score``: then it is scored, as POLLUX scores it."""
        if cut_rationale != "score" and (cut := _cut_rationale(result)) is not None:
            return cut
        ok = result.parse_ok and result.score is not None
        return past_bound({
            "raw_output": result.output,
            "feedback": result.feedback or "",
            "score": float(result.score) if ok else None,
            "parse_ok": ok,
            "error": None if ok else (result.error or VerdictError.NO_SCORE),
            "reason": "" if ok else (result.error_reason or ""),
            "score_source": result.score_source if ok else None,
            "in_scale": result.in_scale if ok else None,
            # A regression head's raw (unclipped) value: POLLUX's own evaluator scores it
            # (eval.scoring.pollux_official).
            "regression_score": result.regression_score,
            # Seq2seq judges: the score tokens' distribution (judge-serve's score_logprobs); the report shows it.
            "expected_score": result.expected_score,
            "confidence": result.confidence,
            "score_probs": result.score_probs,
            "finish_reason": finish_reason_of(result.finish_reason),
        })

    async def aclose(self) -> None:
        await self.http.aclose()


def _cut_rationale(result: JudgeResult) -> dict[str, Any] | None:
    """The ``cut`` failure of a regression head's score on a rationale ``max_tokens`` stopped before a tag closed it
    (``judge.verdicts.rationale_cut_short`` on the generated text and ``finish_reason``), None for any other result.

    judge-serve fails an export's cut rationale itself, by the same reading, but scores a released ``-r`` judge's
    (``head_input`` "generated_text"), as POLLUX's scoring reads whatever the generation wrote. A run reads it as
    judge-serve reads a cut export rationale and a cut tagged verdict: the head's value on a text the judge did not
    finish is no verdict, so it is counted among the failures, never scored; the reason keeps the value. A departure
    from POLLUX, so a named one: the run setting ``cut_rationale: score`` scores it as POLLUX does
    (``is_scored_cut`` counts them). A generation cut after a tag (``[END]``, or a ``[RESULT]`` the LM added) closed
    its rationale holds a whole one: scored, as judge-serve scores it, from an export or a released judge.
    """
    if result.score_source != ScoreSource.REGRESSION_HEAD or not rationale_cut_short(result.output,
                                                                                    result.finish_reason):
        return None
    head = "" if result.regression_score is None else f" (the head gave {result.regression_score:.4g} for the cut text)"
    reason = (f"the generation stopped at max_tokens before the judge finished its rationale: no score{head}; a new "
              "run with a larger --max-tokens gives it room")
    return {**failed_outcome(VerdictError.CUT, reason),
            "raw_output": result.output, "feedback": result.feedback or "", "finish_reason": result.finish_reason}


def is_scored_cut(row: Any) -> bool:
    """Whether a predictions row holds a regression head's score on a rationale ``max_tokens`` cut before a tag
    closed it: a row ``cut_rationale: score`` kept, where ``fail`` writes a ``cut`` failure (``_cut_rationale``)."""
    return bool(row.parse_ok and row.score_source == ScoreSource.REGRESSION_HEAD
                and rationale_cut_short(row.raw_output, row.finish_reason))


def reasoning_of(message: Any) -> str | None:
    """A chat message's separated reasoning (vLLM's ``reasoning`` with ``--reasoning-parser``; the
    ``reasoning_content`` older vLLM and DeepSeek's API write), read as every stage reads it
    (``judge.plumbing.message_content.separated_reasoning``); None when the server sent none."""
    return separated_reasoning(message)


def refuse_without_choice(response: Any) -> None:
    """``MalformedAnswer`` (a ``Refused``) for a chat completion with no choice (a proxy's HTTP 200 carrying
    ``{"error": ...}``, an empty list, none at all, ``null``) or a body that is no JSON object (the SDK hands a page
    it cannot read as JSON back as its text), with the server's words: no answer of the model's, so a failed request
    the next run asks again, never a final "empty" verdict or answer (``judge-eval run``, pairwise judging and
    ``rank`` alike)."""
    if (said := no_choice_said(response)) is not None:
        raise MalformedAnswer(said, expected=CHAT_COMPLETION)


def not_json(err: BaseException) -> MalformedAnswer | None:
    """The ``MalformedAnswer`` of a chat answer whose body ``json.loads`` refused, in every endpoint client's words
    (``judge.plumbing.json_reading.unreadable_answer``): the pointwise, pairwise and ``rank`` chat clients' one
    reading. None for any other ``err``: a ``ValueError`` that is none of the answer's goes on as it is."""
    said = unreadable_answer(err)
    return None if said is None else MalformedAnswer(said, expected=CHAT_COMPLETION)


def judge_response(response: Any) -> JudgeResponse:
    """A judge-serve's HTTP 200 ``/v1/judge`` answer, read strictly (``judge.wire.JudgeResponse``), pointwise or
    pairwise; ``MalformedAnswer`` for one that is no JSON (a proxy's page, a body cut short) or JSON that is no
    ``/v1/judge`` response."""
    try:
        return JudgeResponse.from_json(response.json())
    except JSON_REFUSALS as err:  # a body json.loads refused, or JSON that is no /v1/judge response
        said = unreadable_answer(err) or f"HTTP 200, but the answer is not a /v1/judge response: {short(str(err), 200)}"
        raise MalformedAnswer(said, expected=JUDGE_RESPONSE) from err


def judge_results(body: JudgeResponse, n_asked: int, asked: str, *,
                  item_id: str | int | None) -> list[JudgeResult]:
    """The results of a ``/v1/judge`` response to a request of one item (``item_id``: the id it was sent with) and
    ``n_asked`` judgments (``asked``: what they were, as the reason names them: ``3 criteria``, ``1 judgment of pair
    p1 (original)``), pointwise or pairwise; ``MalformedAnswer`` for a response that is no answer to the request:
    valid as a response, it says nothing of the item asked, and counts in the failing streak as any HTTP 200 that is
    no answer does. That is another number of items or results, or an item for another one: judge-serve echoes each
    request item's ``id`` and its ``index`` (its place in the request), in request order (``judge.wire``'s
    ``JudgeResponseItem``; every judge-serve since ``/v1/judge`` began), and results of the same criteria for another
    item were written onto the rows asked. Ids compare exactly (``"7"`` is not ``7``); an item sent without an id
    (None) is matched by its ``index`` alone."""
    if len(body.items) != 1:
        raise MalformedAnswer(f"HTTP 200, but the /v1/judge response holds {len(body.items)} items for the 1 asked "
                              f"({asked})", expected=JUDGE_RESPONSE)
    (item,) = body.items
    if item.index != 0 or (item_id is not None and (type(item.id), item.id) != (type(item_id), item_id)):
        # the server's id cut, as its other words are: the reason goes into each row of the request
        echoed = repr(item.id)
        got = "no id" if item.id is None else f"id {echoed if len(echoed) <= 200 else echoed[:200] + '...'}"
        want = "item sent without an id" if item_id is None else repr(item_id)
        raise MalformedAnswer(f"HTTP 200, but the /v1/judge response's item answers {got} at index {item.index}, the "
                              f"request's {want} at index 0 ({asked})", expected=JUDGE_RESPONSE)
    results = item.results
    if len(results) != n_asked:
        raise MalformedAnswer(f"HTTP 200, but the /v1/judge response holds {len(results)} results for {asked}",
                              expected=JUDGE_RESPONSE)
    return list(results)


def chat_choice(response: Any) -> Any:
    """A chat completion's first choice (``refuse_without_choice`` first); ``MalformedAnswer`` for one that is no
    object (a string, a number: the SDK keeps what it cannot read as a choice as it came)."""
    refuse_without_choice(response)
    choice = response.choices[0]
    if not hasattr(choice, "message"):
        raise MalformedAnswer(f"the chat answer's choice is not an object: {short(repr(choice), 200)}",
                              expected=CHAT_COMPLETION)
    return choice


def failure_reason(err: BaseException) -> str:
    """A failed request's row reason (pointwise, pairwise, ``rank``'s answers): the error's type and words, then why
    the retry policy stopped before its retries were spent (a wait past ``--retry-wait-budget-s``), if it did."""
    stopped = f" ({said})" if (said := retry_stop_said(err)) else ""
    return f"{type(err).__name__}: {short(str(err))}{stopped}"


def short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


#: How many alike refusals of a run's first requests stop it (``FirstRefusals``): pointwise and pairwise runs alike.
N_FIRST_REFUSALS = 3


class FirstRefusals:
    """Stops a run whose first requests are all refused alike, before it writes a failed row per item.

    ``offer`` is told each request's outcome in the order they finish. While no request has succeeded, refusals with
    an HTTP status are held back; once ``n_first`` are held and every one carries the same status and server
    message (its numbers aside: ``_refusal_words``), ``stopped`` is that refusal (the caller stops sending and
    raises); any other outcome first releases the held ones to be written as usual. A request ``asked_before`` (its
    item has a failed row of an earlier run) is never held: refused, it is written at once, its item's own refusal
    (a content filter refusing items one by one refuses the same ones on every rerun, and holding them stopped every
    rerun at them). A run that ends without the stop writes what ``release`` returns: refusals still held.

    Args:
        n_first: how many alike refusals stop the run (0: never): callers give it only when at least that many
            requests were never asked before (fewer, and their refusals are those items' own, written as failed rows).
    """

    @classmethod
    def for_run(cls, n_never_asked: int) -> FirstRefusals:
        """The stop of a run sending ``n_never_asked`` requests whose items have no failed row of an earlier run:
        armed only when they are at least ``N_FIRST_REFUSALS``, enough to tell a refusing endpoint from refused
        items. A rerun left with the items refused before is never stopped by them: it writes their rows."""
        return cls(N_FIRST_REFUSALS if n_never_asked >= N_FIRST_REFUSALS else 0)

    def __init__(self, n_first: int):
        self.n_first = n_first
        self.open = n_first > 0
        self.held: list[Any] = []
        self.late: list[Any] = []  # refusals that finished after the stop: ``keep_held`` writes them too
        self.stopped: Refused | None = None

    def offer(self, refusal: Refused | None, payload: Any, *, asked_before: bool = False, if_stopped: Any = None,
              aside: bool = False) -> list[Any]:
        """The payloads to write now: ``payload`` (and any held ones), or none while refusals are held back.

        ``if_stopped``: what ``keep_held`` writes instead of ``payload`` should the run stop at this refusal (a
        ``NoRoom``'s ``request_failed`` row, where ``payload`` is its final row). ``aside``: an outcome that says
        nothing about the endpoint (a ``TooLong`` prompt's final row, the item's own): written now, neither held nor
        taken as a success that ends the holding.
        """
        if aside or (refusal is not None and asked_before):
            return [payload]
        if self.stopped is not None:
            if refusal is not None:
                # a caller that writes none (MERA) leaves them to the next run
                self.late.append(payload if if_stopped is None else if_stopped)
                return []
            return [payload]
        if not self.open:
            return [payload]
        alike = (refusal is not None and refusal.status is not None and
                 all(_refusal_words(refusal) == _refusal_words(r) for _, r, _ in self.held))
        if not alike:
            self.open = False
            released, self.held = [p for p, _, _ in self.held] + [payload], []
            return released
        self.held.append((payload, refusal, payload if if_stopped is None else if_stopped))
        if len(self.held) >= self.n_first:
            self.open, self.stopped = False, refusal
        return []

    def release(self) -> list[Any]:
        """The held payloads to write now that the run has ended without the stop (none once it fired): outcomes
        ``offer`` sets ``aside`` (prompts too long for the window) release nothing, so a refusal held while every
        later request was too long, or asked before, is still held when the last one finishes, and a caller that
        wrote only what ``offer`` returned lost its row (MERA's execution then found no record for its task)."""
        if self.stopped is not None:
            return []
        self.open = False
        released, self.held = [payload for payload, _, _ in self.held], []
        return released

    def keep_held(self, write: Callable[..., None], what: str, n_sent: int, n_total: int) -> EndpointUnusable:
        """The stop of a run that keeps its refusals: each held payload (its ``if_stopped`` one where given), and each
        refused after the stop (requests in flight when it came), is handed to ``write`` (the caller's failed row for that request, as it writes any
        refusal), and the error to raise says so.

        Kept, a stopped run still makes progress: its next run asks what was never asked first (``unasked_first``),
        then these again, never held. Unwritten, every rerun sent the same refused requests first and stopped at
        them again, and an item refused after the stop had no row at all (``score`` counted it missing).
        """
        for payload in [stopped for _, _, stopped in self.held] + self.late:
            write(*payload)
        return EndpointUnusable(self.message(what, n_sent, n_total, written=True))

    def message(self, what: str, n_sent: int, n_total: int, unit: str = "requests", *, written: bool = False) -> str:
        """The console's sentence for a stopped run: the server's words, and how much was sent, counted in ``unit``
        (what each ``offer`` stood for: a request, or a task whose samples may be several requests). ``written``: the
        caller wrote the held refusals as failed rows, which its next run asks after the items never asked."""
        assert self.stopped is not None
        kept = ("the refused ones were written as failed rows; a rerun asks the items not asked yet first, then "
                "these again" if written else "no row was written for the refused ones, a rerun sends them again")
        return (f"{what} refused the first {len(self.held)} {unit} alike: HTTP {self.stopped.status}: "
                f"{visible(self.stopped.said)} (stopped after sending {n_sent} of {n_total} {unit}; {kept})")


def _refusal_words(refusal: Refused) -> tuple[int | None, str]:
    """What makes two refusals alike for ``FirstRefusals``: the status and the server's words with every number
    read as one: a server's context refusal names each request's own token counts ("your request has 901 input
    tokens"), and compared word for word, a window every request overflows never stopped the run."""
    return refusal.status, re.sub(r"\d+", "#", refusal.said)


def unasked_first(todo: Sequence[Any], failed: Callable[[Any], bool]) -> list[Any]:
    """``todo`` with the items whose request failed before (``failed``) moved last, each part in its order: the
    refusals a run stopped by ``FirstRefusals`` kept as failed rows would otherwise be sent first again by the
    rerun, and stop it again before it asked anything new."""
    return [item for item in todo if not failed(item)] + [item for item in todo if failed(item)]

"""The judge: a validated ``/v1/judge`` request in, the contract's ``JudgeResponse`` out, through the vLLM engines.

Steps for one request:

1. **Jobs** (``serve.jobs``): each (item, criterion) rendered, chat-wrapped, tokenized and checked against the
   context, grouped so that the criteria of one answer are adjacent.
2. **Order.** Jobs are sent group by group, all at once up to ``max_concurrent_engine_requests``: siblings land in
   the same scheduler steps, where vLLM's prefix cache computes the shared blocks once (measured: 4 of 5 siblings
   read the shared prefix from the cache even when all 5 arrive together, so no separate warm-up request is
   needed; see ``bench/serve.py`` for the ordering gain).
3. **Generation.** ``/v1/completions`` (``serve.engine_client``) with the token ids, greedy by default, stopping at
   ``[END]`` (not when the prompt opened a reasoning block: ``Judge.completion_payload``), every other sampling field stated neutral (``judge.checkpoints.NEUTRAL_SAMPLING``). For a seq2seq
   judge the request also asks for the log-probabilities of the scale's level tokens at every position
   (``logprob_token_ids``), so the score position yields the judge's whole distribution over the scale.
4. **Verdicts.** Seq2seq: ``serve.score_reading`` gives feedback and score (a failure stays a failure: no score),
   and from the score token's distribution ``expected_score`` and ``confidence``. Regression: the rationale is
   read from the generation and the ``score`` head scores (prompt + rationale) through the pooling engine's
   ``/classify``, over exactly the text training used: ``judge.apply_chat(tokenizer, prompt,
   completion=judge.render_rationale_target(rationale))``; the LM's own parsed verdict is returned beside it.
   A released ``-r`` judge (``head_input="generated_text"``) is scored as POLLUX scores it: generation runs to the
   end of the turn (no ``[END]`` stop), and the head reads the chat template over (prompt, the output as it came
   out); its pooling engine's ``score`` is the released head, bias included (``serve.released``).
   An integer-format judge (``verdict_format="integer"``, ``Pollux-4B-Judge``) is prompted with thinking on and
   generates to the end of its turn; ``judge.parse_integer_verdict`` splits the ``<think>`` reasoning (the
   result's ``feedback``) from the integer (its ``score``), and an output cut inside the reasoning is a failure,
   read as the GRPO rewards read it in training: after the ``<think>`` a thinking template's prompt opened, and
   failed (``cut``) when ``max_tokens`` stopped it.

Why one module of ~900 lines: it is one class, ``Judge``, whose steps share its engines, tokenizer, settings and
thread pool; the jobs (``serve.jobs``), their token ids (``serve.chat_tokens``), the score reading
(``serve.score_reading``) and the transport (``serve.engine_client``) are already apart.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from judge.verdicts import CONTEXT_LIMIT, rationale_cut_short
from judge import (JudgeResult, Scale, ScoreSource, VerdictError, VerdictFormat, apply_chat, parse_rationale,
                   parse_verdict, render_rationale_target)
from judge.checkpoints import NEUTRAL_SAMPLING, JudgeKind
from judge.prompts import PAIRWISE_PROMPT_VERSION, POLLUX_PROMPT, PromptTemplate
from judge.rewards import prompt_opens_reasoning
from judge.criteria_auto import TaskChoice, TaskClassifier
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgmentUsage, LmVerdict, PairwiseRequest
from serve.daemon_threads import DaemonThreads
from serve.engine_client import EngineClient, EngineFailure, unreadable_answer
from serve.errors import engine_refused, sanitized, unknown_model_message
from judge.chat_tokens import chat_ids, chat_parts, prepare_tokenizer
from judge.plumbing.json_reading import finite_number, got_words, value_words
from judge.plumbing.message_content import without_lone_surrogates
from serve.jobs import (PAIRWISE_SCALE, Job, build_pair_jobs, check_criteria, check_pair_sizes, check_sizes,
                        JobPlan, max_token_chars, plan_jobs, refuse_over_bound)
from serve.schema import JudgeRequest, RequestError, named_as_sent
from serve.queued import Admitted, JudgmentQueue, largest_task_criteria
from serve.score_reading import level_token_ids, logprobs_fit, seq2seq_verdict
from serve.config import MAX_QUEUED_JUDGMENTS

__all__ = ["Judge", "JudgeSettings", "JudgeOptions", "CheckedRequest", "config_bounds", "unknown_model", "verdict_regex",
           "regression_reserve", "LEVEL_IDS_KEPT", "CLASSIFIER_THREADS"]

#: Tokens ``regression_reserve`` adds to what it measures: the judge's text tokenized again as text may split at
#: a tag's edge otherwise than the engine wrote it.
REGRESSION_RESERVE_MARGIN = 4
#: Threads that run the task classifier for ``"criteria": "auto"`` items, all requests together. A classifier call can
#: block long (the llm method: 3 requests of up to 60 s per item) and a thread cannot be cancelled, so these are not
#: the default executor's: there, a few requests past their deadline whose calls still run would hold every worker
#: (6 on a 2-core machine) that body decoding and tokenizing need, and every other request would wait behind them.
#: Beyond 4 calls at once, a request's call waits its turn, within its own deadline.
CLASSIFIER_THREADS = 4
#: Scales whose level token ids a ``Judge`` keeps, the least recently used dropped first: the taxonomy's few scales
#: and the custom ones in use. Kept without a bound, every distinct custom scale a client ever sent stayed (a request
#: of 512 custom ranges of 101 levels added ~1.8 MB, for good).
LEVEL_IDS_KEPT = 256

def regression_reserve(tokenizer: Any, head_input: str) -> int:
    """Tokens a regression head's input can hold beyond the generation prompt and the tokens generated, measured
    with the judge's own tokenizer and chat template: the worst case is an untagged rationale, which the head reads
    re-rendered (``[FEEDBACK] ... [END]`` for our exports, ``head_input`` "rationale_target") and closed by the
    template's end of turn; a released judge's head reads the text as generated, closed the same way. ``check``
    counts it with ``max_tokens``, so that a prompt it passes never overflows the pooling engine after its generation.
    """
    prompt, rationale = "x", "слово"
    asked = chat_ids(tokenizer, [chat_parts(apply_chat(tokenizer, prompt), prompt)])[0]
    completion = rationale if head_input == "generated_text" else render_rationale_target(rationale)
    read = chat_ids(tokenizer, [chat_parts(apply_chat(tokenizer, prompt, completion=completion), prompt,
                                           completion=completion)])[0]
    written = tokenizer.encode(rationale, add_special_tokens=False)
    return max(len(read) - len(asked) - len(written), 0) + REGRESSION_RESERVE_MARGIN


def verdict_regex(scale: Scale, feedback_max_chars: int, with_score: bool, reasoning_opened: bool = False) -> str:
    """The output format as a regular expression, for vLLM structured outputs.

    Seq2seq: ``[FEEDBACK] <1..N characters other than brackets> [RESULT] <a level> [END]``; regression: the same
    without the result. ``feedback_max_chars`` 0 leaves the feedback unbounded (cheap to compile; a bound of N
    makes vLLM's regex compiler build N states).

    ``reasoning_opened``: the prompt ends inside a ``<think>`` its chat template opened (a thinking-always template):
    the verdict comes after that block's ``</think>``, or the reader (``serve.score_reading``, after the prompt's
    ``<think>``) finds a reasoning never closed. The block is the empty one such a template renders a tagged
    training target after (``judge.verdicts.bare_tagged_answer``): up to two newlines, ``</think>``, up to two.
    """
    repeat = f"{{1,{feedback_max_chars}}}" if feedback_max_chars > 0 else "+"
    feedback = rf"\[FEEDBACK\] [^\[\]]{repeat}"
    if reasoning_opened:
        feedback = r"\n{0,2}</think>\n{0,2}" + feedback
    if not with_score:
        return feedback + r" \[END\]"
    levels = "|".join(re.escape(str(level)) for level in scale.levels)
    return feedback + rf" \[RESULT\] ({levels}) \[END\]"


def _off_the_pairwise_scale_fails(result: JudgeResult) -> JudgeResult:
    """A pairwise verdict off -1/0/1 (a 2, a 0.5) is no verdict: a pointwise judgment off its scale is scored (the
    paper scores it, flagged), but a 2 and a -2 are no consistent preference. It fails, ``out_of_scale``, as
    judge-eval's pairwise reader fails it (eval.pairwise.judging)."""
    if not result.parse_ok or result.score is None or float(result.score) in PAIRWISE_SCALE.levels:
        return result
    return dataclasses.replace(result, parse_ok=False, score=None, score_source=None, in_scale=False,
                               error=VerdictError.OUT_OF_SCALE,
                               error_reason=f"{result.score:g} is not one of -1, 0, 1 (the pairwise scale)")


@dataclass(frozen=True)
class JudgeSettings:
    """What a ``Judge`` needs from the server config."""

    model_name: str
    kind: JudgeKind
    engine_models: dict[str, str]  # role -> the name the engine serves (equal to model_name unless attached)
    max_model_len: int
    max_tokens: int
    temperature: float
    score_logprobs: bool
    lenient: bool
    constrained: bool
    feedback_max_chars: int
    max_judgments: int
    #: Regression: what the head reads as the assistant turn ("rationale_target": our exports' training text;
    #: "generated_text": the output as it came out, as POLLUX scores its released -r judges). See serve.layout.
    head_input: str = "rationale_target"
    #: How the judge writes its verdict (``judge.VerdictFormat``): ``integer`` judges think, then answer an integer.
    verdict_format: str = VerdictFormat.TAGGED
    #: The pointwise prompt it is asked with (``judge.checkpoints.prompt_template_and_why``); responses name its version.
    template: PromptTemplate = POLLUX_PROMPT
    #: Judgments queued across all requests in progress (``serve.queued``); more get 503 with Retry-After.
    max_queued_judgments: int = MAX_QUEUED_JUDGMENTS
    #: A tagged judge's generation stops at its first ``[END]`` (``ServeConfig.stop_at_end``); False: at its turn's end.
    stop_at_end: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        """The model names ``/v1/judge`` answers to: the generating engine's (what ``/v1/models`` lists, and so
        what a client that reads the list sends) and judge-serve's own ``model_name``, which differ when an attached
        engine serves under another name."""
        return tuple(dict.fromkeys((self.engine_models.get("generator", self.model_name), self.model_name)))


def config_bounds(config: Any) -> dict[str, int]:
    """The ``JudgeSettings`` bounds the server config (``serve.config.ServeConfig``) decides: the queue's."""
    return {"max_queued_judgments": config.max_queued_judgments}


def _judgments_asked(checked: CheckedRequest, max_judgments: int) -> int:
    """The judgments a checked request comes to, as ``max_queued_judgments`` counts them before its work starts: its
    pairs, or its items' resolved criteria, an ``"auto"`` item's as the largest task's set (its task is chosen by
    the work), at most ``max_judgments`` (``max_judgments_per_request``: a plan of more is refused once the tasks
    are chosen, so 256 auto items are no 6,656 judgments, which would starve under any load)."""
    if checked.options is None:
        return len(checked.request.pairs)
    return min(max_judgments, sum(len(c) if c is not None else largest_task_criteria() for c in checked.resolved or ()))


async def _planned(admitted: Admitted, work: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``work(*args, **kwargs)`` on a worker thread, as ``asyncio.to_thread`` runs it, for a request counted under
    ``max_queued_judgments``: when the request is cancelled (its client gone, its 504), a thread already running keeps
    its count until it ends (``Admitted.held_until``; a thread cannot be stopped, and a count given back at once let
    clients that leave keep every worker thread rendering and tokenizing past the bound), and one not yet started
    does not run at all."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    gone = threading.Event()

    def run() -> Any:
        return None if gone.is_set() else context.run(work, *args, **kwargs)

    thread = loop.run_in_executor(None, run)
    try:
        return await asyncio.shield(thread)
    except asyncio.CancelledError:
        gone.set()
        # Nobody answers the thread's error (a RequestError of the plan included), but it must be read: shield reads
        # it only when the thread ended first, and once the request is cancelled before that, asyncio logged every
        # such error as "Future exception was never retrieved" with its traceback. Added before held_until's callback,
        # so it has run by the time the count is given back.
        thread.add_done_callback(lambda done: done.cancelled() or done.exception())
        if not thread.done():
            admitted.held_until(thread)
        raise


def refuse_unservable(request: JudgeRequest | PairwiseRequest, *, names: tuple[str, ...] | None, max_tokens: int,
                      kind: str, verdict_format: str, constrained: bool) -> int:
    """Refuse what the server's configuration alone refuses: a model name not in ``names`` (None: not known yet, an
    attached engine's name before it was read; ``""`` names none), ``max_tokens`` above the server's, pairs for a
    judge that writes no verdict, constrained decoding for an integer-format judge. ``Judge.check`` asks it, and
    ``/v1/judge`` before the judge exists (``check_before_start``).

    Returns:
        The request's ``max_tokens`` (the server's when it names none).

    Raises:
        RequestError: naming the field.
    """
    # "" names no model, as vLLM reads an empty name on every proxied route: the served one.
    if names is not None and request.model and request.model not in names:
        raise unknown_model(request.model, names)
    asked = request.max_tokens if request.max_tokens is not None else max_tokens
    if asked > max_tokens:
        raise RequestError(f"max_tokens: must be at most {max_tokens} (this server's --max-tokens), got an integer "
                           f"{asked}", "max_tokens")  # the words of the contract's bounds
    if isinstance(request, PairwiseRequest):
        if kind != JudgeKind.SEQ2SEQ:
            raise RequestError("pairs: pairwise judging needs a judge that writes its verdict; this server's judge "
                               f"is a {kind} judge", "pairs")  # fmt: skip
    elif (request.constrained if request.constrained is not None else constrained) and \
            verdict_format == VerdictFormat.INTEGER:  # fmt: skip
        # The verdict regex is the tagged format's; an integer judge's free reasoning has no such grammar.
        raise RequestError("constrained: this server's judge answers in the integer format (reasoning, then an "
                           "integer), which constrained decoding does not cover", "constrained")
    return asked


def check_before_start(request: JudgeRequest | PairwiseRequest, config: Any, kind: str,
                       engine_models: Mapping[str, str]) -> None:
    """What ``Judge.check`` refuses that needs no judge: ``refuse_unservable`` from the server's configuration
    (``serve.config.ServeConfig``, its verdict format decided) and the checkpoint's ``kind``, and every item's
    criteria against the taxonomy (``serve.jobs.check_criteria``). ``/v1/judge`` asks it while the engines start, so
    that a request that can never succeed gets its 4xx, not a 503 telling its client to retry it. The model name is
    checked once the generating engine's is known (an attached engine may serve another; ``engine_models``).

    Raises:
        RequestError: naming the field as the body sent it.
    """
    attached = bool(getattr(config, "generator_url", ""))
    generator = engine_models.get("generator", None if attached else config.model_name)
    names = None if generator is None else tuple(dict.fromkeys((generator, config.model_name)))
    try:
        refuse_unservable(request, names=names, max_tokens=config.max_tokens, kind=kind,
                          verdict_format=config.verdict_format, constrained=config.constrained_decoding)
        if not isinstance(request, PairwiseRequest):
            check_criteria(request, max_judgments=config.max_judgments_per_request,
                           classifying=bool(config.criteria_classifier))
    except RequestError as err:
        raise named_as_sent(err, request) from None


def unknown_model(model: str, names: tuple[str, ...] | list[str]) -> RequestError:
    """The 404 for a model name this server does not serve, naming every name it answers to (``/v1/judge`` and
    ``GET /v1/models/{id}`` alike; the proxied routes answer an engine's 404 so, ``serve.errors.engine_error``)."""
    return RequestError(unknown_model_message(model, names), "model", 404, "model_not_found")


@dataclass(frozen=True)
class CheckedRequest:
    """A request as ``Judge.check`` found it, with every decision ``Judge.run`` builds on, so that none is made twice:
    its ``max_tokens``, its options (None for a pairwise request), the tokens a judgment needs beyond prompt and
    generation (``reserve``), what an item or pair too long for the context becomes (``oversize``), under
    ``"oversize": "fail"`` the items or pairs whose text alone cannot fit (``serve.jobs.check_sizes``,
    ``check_pair_sizes``), and its items' criteria
    (``serve.jobs.check_criteria``; None for a pairwise request)."""

    request: Any
    max_tokens: int
    options: "JudgeOptions | None"
    too_long: dict[int, RequestError]
    resolved: list | None = None
    reserve: int = 0
    oversize: str = "refuse"


@dataclass(frozen=True)
class JudgeOptions:
    """How one request's judgments are generated and read: the request's values, else the server's defaults.

    Attributes:
        max_tokens: tokens each judgment may generate.
        temperature: sampling temperature (0 greedy).
        lenient: read verdicts leniently (``judge.parse_verdict``).
        constrained: decode under ``verdict_regex`` (vLLM structured outputs).
        request_id: the client request's ``X-Request-Id``, sent with each of its engine calls ("" sends none), so
            that the engine's log lines of a judgment name the request it belongs to.
        oversize: the request's ``oversize``: what a judgment the engine refuses as longer than its context becomes
            (``fail``: that judgment's failed result; ``refuse``: the request's 400, as ``check`` answers it).
        field: the request's list of judged things, ``items`` or ``pairs``, which such a 400 names.
    """

    max_tokens: int
    temperature: float
    lenient: bool
    constrained: bool
    request_id: str = ""
    oversize: str = "refuse"
    field: str = "items"


def _refusal_error(err: EngineFailure, job: Job, options: JudgeOptions) -> tuple[str, str]:
    """The failed result's ``error`` and ``error_reason`` for a judgment its engine refused (``engine_refused``).

    A refusal in the engine's words for a prompt longer than its context (``judge.verdicts.CONTEXT_LIMIT``) is what
    ``check`` and ``serve.jobs.plan_jobs`` answer for a prompt they count too long, so it follows the request's
    ``oversize`` alike: ``context_length_exceeded`` under ``fail``; under ``refuse``, the request's 400.

    Raises:
        RequestError: 400 ``context_length_exceeded`` naming the item (or pair), under ``oversize`` ``refuse``.
    """
    said = sanitized(str(err), 500)
    if err.status != 400 or CONTEXT_LIMIT.search(str(err)) is None:
        return VerdictError.ENGINE_REFUSED, said
    return _over_context(job, options, "the engine refused the prompt for criterion {} as longer than the model's "
                                       f"context ({said})")


def _over_context(job: Job, options: JudgeOptions, what: str) -> tuple[str, str]:
    """A judgment too long for the model's context, by the request's ``oversize``: ``context_length_exceeded`` under
    ``fail``; under ``refuse``, the request's 400. ``what`` says what was too long, ``{}`` where the criterion goes (replaced, not formatted: the engine's words it may quote hold braces).

    Raises:
        RequestError: 400 ``context_length_exceeded`` naming the item (or pair), under ``oversize`` ``refuse``.
    """
    where = f"{options.field}[{job.item}]"
    name = job.criterion.name
    shown = repr(name) if len(name) <= 80 else f"{name[:80]!r}... [{len(name)} characters]"
    message = f"{where}: {what.replace('{}', shown, 1)}. Shorten the answer or ask for fewer max_tokens."
    if options.oversize == "fail":
        return VerdictError.CONTEXT_LENGTH_EXCEEDED, message
    raise RequestError(message, param=where, code="context_length_exceeded")


def _last_ids(job: Job, n: int) -> list[int]:
    """The prompt's last ``n`` ids, without making the whole prompt's list (``Job.prefix_ids``)."""
    own = job.own_ids[-n:]
    return own if len(own) >= n else [*job.prefix_ids[-(n - len(own)):], *own] if job.prefix_ids else own


def _completion_parts(completion: dict[str, Any]) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The first choice of an engine's ``/v1/completions`` answer, its text and the answer's usage.

    Raises:
        EngineFailure: 502, for an answer without a choice or whose text is no string (not what vLLM answers: an
            attached server of another kind, a proxy in between); without this it was a bare 500.
    """
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices:
        raise unreadable_answer("/v1/completions", completion, "no choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise unreadable_answer("/v1/completions", completion, f"choices[0] is {value_words(choice)}")
    text = choice.get("text")
    if text is not None and not isinstance(text, str):
        raise unreadable_answer("/v1/completions", completion, f"choices[0].text is {value_words(text)}")
    usage = completion.get("usage")
    # An engine of another kind may send a JSON-escaped lone surrogate: echoed in a verdict's feedback it failed the
    # whole answer with a 500. Read as vLLM would have written it.
    return choice, without_lone_surrogates(text or ""), usage if isinstance(usage, dict) else {}


def _head_value(classified: Any) -> Any:
    """``data[0].probs[0]`` of a pooling engine's ``/classify`` answer, the regression head's value, as sent.

    A value of another kind at ``data[0].probs[0]`` (null, text) is the head's answer and becomes a counted failure
    of that item; an answer of another shape above it is the engine's fault and fails the request. So
    ``"probs": "1.5"`` is a 502 ("data[0].probs is a string, not a list"): it was a counted failure only because
    indexing a string gave its first letter.

    Raises:
        EngineFailure: 502, naming where the answer parts from that shape in JSON's words ("data[0] is a list, not an
            object"); the KeyError, IndexError or TypeError it was named by told nothing of the answer.
    """
    node, where = classified, "the answer"
    for step, path in (("data", "data"), (0, "data[0]"), ("probs", "data[0].probs"), (0, "data[0].probs[0]")):
        named = isinstance(step, str)  # a key of an object, else the first item of a list
        if not isinstance(node, dict if named else list):
            raise unreadable_answer("/classify", classified, f"no data[0].probs[0]: {where} is {value_words(node)}, "
                                                             f"not {'an object' if named else 'a list'}")
        if (step not in node) if named else not node:
            raise unreadable_answer("/classify", classified, f"no data[0].probs[0]: {path} is missing")
        node, where = node[step], path
    return node


def _logprobs_of(choice: dict[str, Any], completion: dict[str, Any]) -> dict[str, Any] | None:
    """A choice's ``logprobs`` when they have the shape ``serve.score_reading`` reads (``tokens``: text per
    position, ``top_logprobs``: per position, token text -> log-probability, or null), or None when absent.

    Raises:
        EngineFailure: 502, for logprobs of another shape (reading them would fail inside the verdict's reading).
    """
    logprobs = choice.get("logprobs")
    if logprobs is None:
        return None
    if isinstance(logprobs, dict):
        tokens, top = logprobs.get("tokens") or [], logprobs.get("top_logprobs") or []
        if (isinstance(tokens, list) and isinstance(top, list) and len(top) >= len(tokens)
                and all(isinstance(token, str) for token in tokens)
                and all(position is None or (isinstance(position, dict) and all(map(_is_logprob, position.values())))
                        for position in top)):
            return logprobs
    raise unreadable_answer("/v1/completions", completion, "choices[0].logprobs are not vLLM's")


def _is_logprob(value: Any) -> bool:
    """A log-probability: a finite number, at most 0 (1 allows for rounding). Python's JSON reader takes ``NaN`` and
    ``Infinity``: a NaN made a NaN expected score, which no JSON response can carry (a bare 500), and a value past
    709 overflowed ``math.exp``; an integer past float's range is no number either (``finite_number``)."""
    return finite_number(value) and value <= 1


def _token_count(value: Any) -> int:
    """A usage count as the engine gave it; 0 for anything that is not a non-negative integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class Judge:
    """Runs ``/v1/judge`` requests against a generating engine (and a pooling engine for regression judges).

    Args:
        settings: model name, kind and defaults.
        tokenizer: the checkpoint's tokenizer.
        generator: client of the generating engine.
        pooler: client of the pooling engine (regression judges only).
        limit: bounds the engine requests in flight across all concurrent ``/v1/judge`` calls.
        classifier: chooses the task of ``"criteria": "auto"`` items (None: such items are refused).
    """

    def __init__(
        self,
        settings: JudgeSettings,
        tokenizer: Any,
        generator: EngineClient,
        pooler: EngineClient | None,
        limit: asyncio.Semaphore,
        classifier: TaskClassifier | None = None,
    ):
        self.settings, self.tokenizer, self.generator, self.pooler, self.limit = settings, tokenizer, generator, pooler, limit
        self.classifier = classifier
        # The classifier's own threads (started on first use): its calls never occupy the default executor, and one
        # still waiting on its endpoint when judge-serve stops never holds the exit (serve.daemon_threads).
        self._classifying = DaemonThreads(CLASSIFIER_THREADS, thread_name_prefix="task-classifier")
        self._level_ids: OrderedDict[tuple[int, ...], dict[int, int] | None] = OrderedDict()
        self.queue = JudgmentQueue()  # /v1/judge's and /get_reward's judgments in progress, all requests together
        self._chars_per_token: int | None = None  # max_token_chars, on the first request
        # measured on the first request, as max_token_chars is: it builds the tokenizer copy below, which would block
        # the start's event loop here
        self._regression_reserve: int | None = None
        # The copy of the tokenizer that reads a request's text (judge.chat_tokens.chat_ids) takes ~0.5 CPU-s to make for a
        # Qwen vocabulary: made now, beside the start, not inside the first request's deadline.
        threading.Thread(target=prepare_tokenizer, args=(tokenizer,), name="tokenizer-copy", daemon=True).start()

    def _levels(self, scale: Scale) -> dict[int, int] | None:
        """``level_token_ids`` of ``scale``, kept for the ``LEVEL_IDS_KEPT`` scales used last."""
        if scale.levels in self._level_ids:
            self._level_ids.move_to_end(scale.levels)
            return self._level_ids[scale.levels]
        ids = self._level_ids[scale.levels] = level_token_ids(self.tokenizer, scale)
        if len(self._level_ids) > LEVEL_IDS_KEPT:
            self._level_ids.popitem(last=False)
        return ids

    def check(self, request: JudgeRequest | PairwiseRequest, *,
              resolved: list | None = None) -> "CheckedRequest":
        """Everything a request asks that this server can refuse without an engine: the model name, ``max_tokens``,
        ``constrained``, the items whose text alone cannot fit the context, and every criterion, task and rubric
        scale with the judgments they come to. The routes call it before they ask whether the engines can take the
        request: a request that can never succeed gets its 4xx even while an engine restarts (a 503 would tell the
        client to retry it). ``run`` calls it too when the route did not.

        Args:
            resolved: ``serve.jobs.check_criteria``'s answer for this request, when the caller resolved its
                criteria already (``/get_reward`` does, reading its labels): they are not resolved again.

        Raises:
            RequestError: naming the field.
        """
        s = self.settings
        max_tokens = refuse_unservable(request, names=s.names, max_tokens=s.max_tokens, kind=s.kind,
                                       verdict_format=s.verdict_format, constrained=s.constrained)
        if isinstance(request, PairwiseRequest):
            if self._chars_per_token is None:
                self._chars_per_token = max_token_chars(self.tokenizer)
            # a pair too long for the context is refused here, before the engines' health, as an item is
            oversize = request.oversize or "refuse"
            too_long = check_pair_sizes(request, max_model_len=s.max_model_len, max_tokens=max_tokens,
                                        chars_per_token=self._chars_per_token, oversize=oversize)
            return CheckedRequest(request, max_tokens, None, too_long, oversize=oversize)
        options = JudgeOptions(
            max_tokens=max_tokens,
            temperature=float(request.temperature if request.temperature is not None else s.temperature),
            lenient=request.lenient if request.lenient is not None else s.lenient,
            constrained=request.constrained if request.constrained is not None else s.constrained,
        )
        if self._regression_reserve is None:
            self._regression_reserve = (regression_reserve(self.tokenizer, s.head_input)
                                        if s.kind == JudgeKind.REGRESSION else 0)
        reserve = self._regression_reserve
        oversize = request.oversize or "refuse"
        if self._chars_per_token is None:
            self._chars_per_token = max_token_chars(self.tokenizer)
        try:  # an inline body's errors name its fields as sent (``answer``, not ``items[0].answer``)
            too_long = check_sizes(request, max_model_len=s.max_model_len, max_tokens=max_tokens, reserve=reserve,
                                   chars_per_token=self._chars_per_token, oversize=oversize)
            too_long = {i: named_as_sent(error, request) for i, error in too_long.items()}
            if resolved is not None and not isinstance(request, PairwiseRequest):
                if len(resolved) != len(request.items):  # another request's, or a subset: items would be judged wrongly
                    raise ValueError(f"resolved criteria for {len(resolved)} items given with a request of "
                                     f"{len(request.items)}")
                # the bound the caller's resolving did not apply, before any wait for an engine (a 503 would say retry)
                refuse_over_bound(sum(len(c) for c in resolved if c is not None), s.max_judgments)
            if resolved is None or (self.classifier is None and any(c is None for c in resolved)):
                # Resolved here, or again where the caller's resolving counted on a classifier this judge lacks: its
                # "auto" items then get their 400, not a judging that has nobody to classify them.
                resolved = check_criteria(request, max_judgments=s.max_judgments,
                                          classifying=self.classifier is not None)
        except RequestError as err:
            raise named_as_sent(err, request) from None
        return CheckedRequest(request, max_tokens, options, too_long, list(resolved), reserve, oversize)

    async def run(self, request: JudgeRequest | PairwiseRequest | CheckedRequest, request_id: str = "", *,
                  wait_until: float | None = None) -> JudgeResponse:
        """Judge every (item, criterion) of a request, or every pair of a pairwise one; ``request_id`` (the client's
        ``X-Request-Id``) goes with each engine call. ``request`` may be ``check``'s answer, when the route asked it
        first (then nothing is checked twice). ``wait_until`` (``time.monotonic()``): wait for room under
        ``max_queued_judgments`` until then, behind the requests already waiting (``serve.queued``), rather than be
        refused at once (``/get_reward``, whose client does not wait out a ``Retry-After``).

        Returns:
            The response (its ``to_json()`` is the body; see docs/serving.md, the typed route).

        Raises:
            RequestError: bad model name, criterion, task or context length.
            serve.queued.QueueFull: its judgments would pass ``max_queued_judgments`` (by ``wait_until``, when
                given), refused before any work.
            EngineUnavailable, EngineFailure: an engine died or failed.
        """
        checked = request if isinstance(request, CheckedRequest) else self.check(request)
        asked, bound = _judgments_asked(checked, self.settings.max_judgments), self.settings.max_queued_judgments
        admission = self.queue.admit(asked, bound) if wait_until is None else \
            await self.queue.admitted_by(asked, bound, wait_until)  # fmt: skip
        with admission as admitted:
            return await self._run_admitted(checked, request_id, admitted)

    async def _run_admitted(self, checked: CheckedRequest, request_id: str, admitted: Admitted) -> JudgeResponse:
        s = self.settings
        request, max_tokens = checked.request, checked.max_tokens
        if isinstance(request, PairwiseRequest):
            return await self._run_pairs(checked, request_id, admitted)
        assert checked.options is not None
        options = dataclasses.replace(checked.options, request_id=request_id, oversize=checked.oversize)
        # Everything that needs no classifier first: a request that will be refused (an "auto" item naming its task, an
        # unknown criterion, a prompt too long) is refused before any item is classified.
        try:
            plan = await _planned(
                admitted,
                plan_jobs,
                request,
                self.tokenizer,
                max_model_len=s.max_model_len,
                max_tokens=max_tokens,
                reserve=checked.reserve,
                max_judgments=s.max_judgments,
                classifying=self.classifier is not None,
                thinking=s.verdict_format == VerdictFormat.INTEGER,
                oversize=checked.oversize,
                too_long=checked.too_long,
                template=s.template,
                resolved=checked.resolved,
            )
        except RequestError as err:  # as check's: an inline body's fields as sent
            raise named_as_sent(err, request) from None
        try:  # the bound counted as the choices' criteria become known: an inline body's fields as sent too
            choices = await self._choices(request, plan) if plan.to_classify else {}
            jobs = await _planned(admitted, plan.complete, choices) if choices else plan.complete({})
        except RequestError as err:
            raise named_as_sent(err, request) from None
        choices = {**plan.unclassified, **choices}  # an "auto" item too long to classify: the failed choice
        admitted.resize(len(jobs))  # its "auto" items' criteria known now
        try:
            results = await self._judge_jobs(jobs, options)
        except RequestError as err:  # an engine's context refusal under "refuse": an inline body's fields as sent
            raise named_as_sent(err, request) from None
        n_criteria: dict[int, int] = {}
        for job in jobs:
            n_criteria[job.item] = max(n_criteria.get(job.item, 0), job.slot + 1)
        slots: list[list[JudgeResult | None]] = [[None] * n_criteria.get(i, 0) for i in range(len(request.items))]
        for job, result in zip(jobs, results):
            slots[job.item][job.slot] = result
        items = [
            JudgeResponseItem(index=i, id=item.id, results=slots[i],  # type: ignore[arg-type]
                              task_choice=choices[i].to_dict() if i in choices else None)  # criteria: auto's choice
            for i, item in enumerate(request.items)
        ]
        return self._response(items, results)

    async def _choices(self, request: JudgeRequest, plan: JobPlan) -> dict[int, TaskChoice]:
        """The classifier's choice for each item of ``plan.to_classify``, one call at a time on its own threads.

        A request whose criteria chosen so far already pass ``max_judgments_per_request`` gets its 400 at once
        (``JobPlan.refuse_over_bound_while_classifying``): the items after them are not classified for nothing.

        Each call is awaited alone, so a cancelled request (past its deadline, its client gone) asks nothing more.
        Its cancellation ends the wait at once: the call running goes on to its end in its thread (a thread cannot be
        stopped), holding one of ``CLASSIFIER_THREADS``, never a thread of the default executor that body decoding
        and tokenizing use, and its answer or error is then dropped (the future awaited here is cancelled, so
        nothing reads it); a call still queued behind busy threads is withdrawn and never starts.

        Raises:
            EngineFailure: 502, for a classifier that raised (the llm method's endpoint, a model file).
            RequestError: the judgments counted so far over ``max_judgments_per_request``.
        """
        assert self.classifier is not None  # plan_jobs refuses "auto" items without one
        loop = asyncio.get_running_loop()
        choices: dict[int, TaskChoice] = {}
        chosen = 0  # the criteria of the choices so far
        for i in plan.to_classify:
            item = request.items[i]
            try:
                choices[i] = await loop.run_in_executor(self._classifying, self.classifier.choose, item.instruction,
                                                        item.answer)
            except Exception as err:  # noqa: BLE001 - never a bare 500; a cancellation is no Exception and goes on
                raise EngineFailure(f"the task classifier failed: {type(err).__name__}: {err}", status=502,
                                    public=f"the task classifier failed ({type(err).__name__}); judge-serve's log has "
                                           "its message") from err
            chosen += len(choices[i].criteria)
            plan.refuse_over_bound_while_classifying(chosen, len(choices))
        return choices

    async def _judge_jobs(self, jobs: list[Job], options: JudgeOptions) -> list[JudgeResult]:
        """Every job's result, in order.

        Raises:
            EngineFailure: the engine's first refusal, when it refused a judgment and answered none: a refusal of
                the request itself (a sampling value, a body too large for a proxy), which its client must see as
                the engine's status (``serve.errors.judgment_failed``), not as failed results a reward path scores.
                A job failed before it was sent (too long under ``oversize: fail``) does not count as answered, so
                one over-long sample of a ``/get_reward`` batch cannot turn the engine's refusal into zero rewards.
            RequestError: an engine's context refusal under ``oversize`` ``refuse`` (``_refusal_error``).
        """
        # Tasks are created in prefix order and take the semaphore in that order (asyncio's is FIFO).
        tasks = [asyncio.ensure_future(self._judged(job, options)) for job in jobs]
        try:
            judged = list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:
                task.cancel()
        refusals = [refusal for _, refusal, _ in judged if refusal is not None]
        if refusals and not any(answered for _, _, answered in judged):
            raise refusals[0]
        return [result for result, _, _ in judged]

    def _response(self, items: list[JudgeResponseItem], results: list[JudgeResult],
                  prompt_version: str | None = None) -> JudgeResponse:
        s = self.settings
        prompt_tokens = sum(r.usage.prompt_tokens for r in results)
        completion_tokens = sum(r.usage.completion_tokens for r in results)
        return JudgeResponse(
            id=f"judge-{uuid.uuid4().hex}",
            object="judge.result",
            created=int(time.time()),
            model=s.model_name,
            judge_kind=s.kind,
            verdict_format=s.verdict_format,
            prompt_version=prompt_version or s.template.version,
            items=items,
            usage=JudgeResponseUsage(
                judgments=len(results),
                parsed=sum(1 for r in results if r.parse_ok),
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
        )

    async def _run_pairs(self, checked: CheckedRequest, request_id: str, admitted: Admitted) -> JudgeResponse:
        """A pairwise request: one judgment per pair on ``PAIRWISE_SCALE``, in the judge's verdict format; a pair too
        long for the context by the request's ``oversize``, as an item is (``check`` found those its texts alone
        make too long)."""
        s = self.settings
        request, max_tokens = checked.request, checked.max_tokens
        jobs = await _planned(admitted, build_pair_jobs, request, self.tokenizer, max_model_len=s.max_model_len,
                              max_tokens=max_tokens, thinking=s.verdict_format == VerdictFormat.INTEGER,
                              oversize=checked.oversize, too_long=checked.too_long)
        options = JudgeOptions(
            max_tokens=max_tokens,
            temperature=float(request.temperature if request.temperature is not None else s.temperature),
            lenient=request.lenient if request.lenient is not None else s.lenient,
            # The server's constrained decoding covers pairs as it covers items: the verdict regex over the pairwise
            # scale's levels (-1, 0, 1). An integer judge's reasoning has no such grammar (refused for items).
            constrained=s.constrained and s.verdict_format == VerdictFormat.TAGGED,
            request_id=request_id,
            oversize=checked.oversize,
            field="pairs",
        )
        results = [_off_the_pairwise_scale_fails(r) for r in await self._judge_jobs(jobs, options)]
        items = [JudgeResponseItem(index=i, id=pair.id, results=[result])
                 for i, (pair, result) in enumerate(zip(request.pairs, results))]
        return self._response(items, results, PAIRWISE_PROMPT_VERSION)

    def opens_reasoning(self, job: Job) -> bool:
        """Whether a seq2seq job's prompt ends inside a ``<think>`` its chat template opened (a thinking-always
        template): the completion continues that reasoning, and the verdict comes after its ``</think>``."""
        return prompt_opens_reasoning(self.tokenizer.decode(_last_ids(job, 8), skip_special_tokens=False))

    def completion_payload(self, job: Job, options: JudgeOptions, reasoning_opened: bool = False) -> dict[str, Any]:
        """The ``/v1/completions`` body for one judgment (public: benchmarks send vLLM what judge-serve sends).

        ``reasoning_opened``: ``opens_reasoning(job)``, which judge-serve passes for a seq2seq judge. A tagged
        judge's output then starts inside the reasoning, where a drafted ``[END]`` would stop it, so it gets no
        ``[END]`` stop (a stop string cannot wait for ``</think>``): it generates to the end of its turn, and
        ``verdict_regex`` closes the reasoning before the verdict under constrained decoding.
        """
        s = self.settings
        scale = job.criterion.scale
        payload: dict[str, Any] = {
            "model": s.engine_models["generator"],
            "prompt": job.prompt_ids,
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            **NEUTRAL_SAMPLING,  # stated, or vLLM takes them from the checkpoint's generation_config.json
            "stop": ["[END]"],
            "include_stop_str_in_output": True,
        }
        if s.head_input == "generated_text" or s.verdict_format == VerdictFormat.INTEGER:
            # Integer judges answer after their reasoning, to the end of the turn: there is no [END] to stop at.
            # A released -r judge's head reads the text as it came out; POLLUX generates until the end of the
            # turn (its llm.chat has no stop string), so a stop at [END] could cut what its head would read.
            del payload["stop"], payload["include_stop_str_in_output"]
        elif reasoning_opened and s.kind == JudgeKind.SEQ2SEQ:
            # a drafted "[END]" inside the reasoning would end the output before the verdict (unclosed_think)
            del payload["stop"], payload["include_stop_str_in_output"]
        elif not s.stop_at_end:
            # POLLUX generates to the end of the turn (no stop string): an [END] that closes the feedback before the
            # result no longer cuts the verdict off (no_result), and the output is read whole
            del payload["stop"], payload["include_stop_str_in_output"]
        # The score token's position is known for the tagged format only (after [RESULT]).
        tagged = s.verdict_format == VerdictFormat.TAGGED
        level_ids = self._levels(scale) if (s.kind == JudgeKind.SEQ2SEQ and s.score_logprobs and tagged) else None
        if level_ids and logprobs_fit(level_ids):  # more than vLLM takes: no distribution
            payload["logprobs"] = len(level_ids)
            payload["logprob_token_ids"] = list(level_ids.values())
        if options.constrained:
            seq2seq = s.kind == JudgeKind.SEQ2SEQ
            payload["structured_outputs"] = {"regex": verdict_regex(scale, s.feedback_max_chars, seq2seq,
                                                                    reasoning_opened and seq2seq)}
        return payload

    async def _judged(self, job: Job, options: JudgeOptions) -> tuple[JudgeResult, EngineFailure | None, bool]:
        """One job's result, the engine's refusal when its result is ``engine_refused``, and whether every engine the
        job reached answered it (a 200: ``_judge_jobs`` tells a refused request from refused judgments by it)."""
        s = self.settings
        scale = job.criterion.scale
        if job.too_long is not None:  # ``oversize: fail``: a failed result, never sent
            return JudgeResult(criterion=job.criterion.name, criterion_id=job.criterion.id, scale=list(scale.levels),
                               error=VerdictError.CONTEXT_LENGTH_EXCEEDED, error_reason=job.too_long), None, False
        # A verdict read as training reads it: after a <think> its prompt opened (either format), failed when cut.
        opened = s.kind == JudgeKind.SEQ2SEQ and self.opens_reasoning(job)
        async with self.limit:  # the whole prompt's ids made only now (serve.jobs.Job.prefix_ids)
            payload = self.completion_payload(job, options, reasoning_opened=opened)
            asked_logprobs = "logprob_token_ids" in payload
            try:
                completion = await self.generator.post("/v1/completions", payload, request_id=options.request_id)
            except EngineFailure as err:
                if not engine_refused(err):
                    raise
                # This judgment's refusal fails this judgment alone: the request's other judgments are answered.
                error, reason = _refusal_error(err, job, options)
                return JudgeResult(criterion=job.criterion.name, criterion_id=job.criterion.id,
                                   scale=list(scale.levels), error=error, error_reason=reason), \
                    (err if error == VerdictError.ENGINE_REFUSED else None), False  # no tokens: the engine read none
            del payload
        choice, text, usage = _completion_parts(completion)
        finish_reason = choice.get("finish_reason")
        finish_reason = finish_reason if isinstance(finish_reason, str) else None
        refusal: EngineFailure | None = None
        answered = True
        if finish_reason == "abort":
            # vLLM's engine ended the generation itself (a paused engine, a fault-tolerance abort) and answered 200
            # with the text so far: no verdict, whatever that text reads as; a client asks again.
            verdict: dict[str, Any] = {"error": VerdictError.ABORTED, "error_reason": "the engine aborted the "
                                       "generation before its end (finish_reason abort): no verdict; ask again"}
        elif s.kind == JudgeKind.SEQ2SEQ:
            verdict = seq2seq_verdict(text, _logprobs_of(choice, completion) if asked_logprobs else None, scale,
                                      options.lenient, s.verdict_format, reasoning_opened=opened,
                                      finish_reason=finish_reason)
        else:
            verdict, refusal, answered = await self._regression_verdict(job, text, options, finish_reason)
        return JudgeResult(
            criterion=job.criterion.name,
            criterion_id=job.criterion.id,
            scale=list(scale.levels),
            **verdict,
            output=text,
            finish_reason=finish_reason,
            usage=JudgmentUsage(
                prompt_tokens=_token_count(usage.get("prompt_tokens")) or job.n_prompt_tokens,
                completion_tokens=_token_count(usage.get("completion_tokens")),
            ),
        ), refusal, answered

    async def _regression_verdict(self, job: Job, text: str, options: JudgeOptions,
                                  finish_reason: str | None) -> tuple[dict[str, Any], EngineFailure | None, bool]:
        """The regression head's verdict, the pooling engine's refusal when it refused to score it, and whether the
        pooling engine answered it (a 200; True when the head had nothing to score and it was not asked)."""
        scale = job.criterion.scale
        lm = parse_verdict(text, scale=scale, lenient=options.lenient)
        rationale, complete = parse_rationale(text)
        out: dict[str, Any] = {
            "feedback": rationale,
            "score": None,
            "parse_ok": False,
            "error": None,
            "error_reason": None,
            "score_source": None,
            "in_scale": None,  # the head's score is clipped into the scale; its raw value is regression_score
            "expected_score": None,
            "confidence": None,
            "score_probs": None,
            "score_mass": None,
            "regression_score": None,
            "rationale_complete": complete,
            "lm_verdict": LmVerdict(score=lm.score, parse_ok=lm.ok, error=lm.error, error_reason=lm.reason or None),
        }
        released = self.settings.head_input == "generated_text"
        if not (text.strip() if released else rationale):
            out["error"], out["error_reason"] = VerdictError.EMPTY, "the judge wrote no rationale for the head to score"
            return out, None, True
        if not released and rationale_cut_short(text, finish_reason, complete=complete):
            # Re-rendered, a cut rationale would gain an [END] the judge never wrote and be scored as whole; a tagged
            # verdict cut the same way fails ``cut``. One the judge closed before the cut (``stop_at_end`` false runs
            # on to the turn's end) is whole: the head reads it as training rendered it. A released judge's head reads
            # a cut text as POLLUX scores it.
            out["error"], out["error_reason"] = VerdictError.CUT, ("the generation stopped at max_tokens before the "
                                                                   "rationale's [END]: no score")
            return out, None, True
        # Our exports: exactly the sequence training fed the head, prompt + assistant turn "[FEEDBACK] ... [END]".
        # Released -r judges: POLLUX's scoring input, the chat template over [user: prompt, assistant: the generated
        # text as it came out], no generation prompt (the released judges' scoring, ai-forever/POLLUX).
        completion = text if released else render_rationale_target(rationale)
        assert self.pooler is not None
        # The head's input is the whole prompt again, a copy of the item's shared part: built once this judgment holds
        # an engine slot, as its generation's prompt is (serve.jobs.Job.prefix_ids): built earlier, each judgment whose
        # generation is done would hold its own copy while it waits behind the queued generations for a slot.
        async with self.limit:
            prompt = job.prompt
            text_for_head = apply_chat(self.tokenizer, prompt, completion=completion)
            # The prompt (the client's text) and the judge's output are tokenized with their special-token strings as
            # text, as the prompt was for the generation (judge.chat_tokens.chat_ids); the template's own tokens stay.
            ids = chat_ids(self.tokenizer, [chat_parts(text_for_head, prompt, completion=completion)])[0]
            del prompt, text_for_head
            if len(ids) > self.settings.max_model_len:  # the pooling engine would refuse it: not sent
                out["error"], out["error_reason"] = _over_context(
                    job, options, f"the regression head's input for criterion {{}} is {len(ids)} tokens, longer than "
                                  f"the model's context of {self.settings.max_model_len}")
                return out, None, True
            try:
                # use_activation false: the head's own value, whatever the config's problem_type (without
                # "regression", vLLM puts a one-label classifier's value through a sigmoid)
                classified = await self.pooler.post("/classify", {"model": self.settings.engine_models["pooler"],
                                                                  "input": [ids], "use_activation": False},
                                                    request_id=options.request_id)
            except EngineFailure as err:
                if not engine_refused(err):
                    raise
                out["error"], out["error_reason"] = _refusal_error(err, job, options)
                return out, (err if out["error"] == VerdictError.ENGINE_REFUSED else None), False
        raw = _head_value(classified)
        if not finite_number(raw):
            # A diverged head (or an overflow in half precision): no score, a counted failure. vLLM sends its NaN as
            # null; clipped, a NaN would stay NaN (max and min keep it) and go out as an ok score no JSON client reads.
            # null named as JSON names it (it printed Python's None), a string or a list by its kind (bounded)
            shown = repr(raw) if isinstance(raw, float) else got_words(raw)
            out["error"], out["error_reason"] = (VerdictError.NO_SCORE,
                                                 f"the score head returned {shown}, not a finite number")
            return out, None, True
        raw = float(raw)
        # The head is unbounded; the score is clipped into the scale, the raw value is kept beside it.
        out.update(
            score=float(min(max(raw, scale.min), scale.max)),
            parse_ok=True,
            score_source=ScoreSource.REGRESSION_HEAD,
            regression_score=raw,
        )
        return out, None, True

"""Judging: a validated ``/v1/judge`` request in, verdicts out, through the vLLM engines.

Steps for one request:

1. **Prompts.** Each (item, criterion) becomes the POLLUX prompt (``judge.render_prompt``) wrapped as one user
   turn by the checkpoint's own chat template (``judge.apply_chat``, thinking off: a Qwen3 judge's prompt ends with
   the empty ``<think>`` block) and tokenized here, so its length is checked against the context before anything
   reaches vLLM (a clear 400, never a silent truncation).
2. **Prefix-friendly order.** The criteria of one (instruction, reference, answer) share every token up to
   ``### Критерий оценки:``. Jobs are grouped by that prefix and sent group by group, all at once up to
   ``max_concurrent_engine_requests``: siblings land in the same scheduler steps, where vLLM's prefix cache
   computes the shared blocks once (measured: 4 of 5 siblings read the shared prefix from the cache even when
   all 5 arrive together, so no separate warm-up request is needed; see ``bench/serve.py`` for the ordering gain).
3. **Generation.** ``/v1/completions`` with the token ids, greedy by default, stopping at ``[END]``. For a
   seq2seq judge the request also asks for the log-probabilities of the scale's level tokens at every position
   (``logprob_token_ids``), so the score position yields the judge's whole distribution over the scale.
4. **Verdicts.** Seq2seq: ``judge.parse_verdict`` gives feedback and score (a failure stays a failure: no score);
   from the score token's distribution come ``expected_score`` and ``confidence``. Regression: the rationale is
   read from the generation and the ``score`` head scores (prompt + rationale) through the pooling engine's
   ``/classify``, over exactly the text training used: ``judge.apply_chat(tokenizer, prompt,
   completion=judge.render_rationale_target(rationale))``; the LM's own parsed verdict is returned beside it.
   A released ``-r`` judge (``head_input="generated_text"``) is scored as POLLUX scores it: generation runs to the
   end of the turn (no ``[END]`` stop), and the head reads the chat template over (prompt, the output as it came
   out); its pooling engine's ``score`` is the released head, bias included (``serve.released``).
   An integer-format judge (``verdict_format="integer"``, ``Pollux-4B-Judge``) is prompted with thinking on and
   generates to the end of its turn; ``judge.parse_integer_verdict`` splits the ``<think>`` reasoning (the
   result's ``feedback``) from the integer (its ``score``), and an output cut inside the reasoning is a failure.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
import uuid
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from judge import (PROMPT_VERSION, JudgeResult, Scale, ScoreSource, VerdictError, VerdictFormat, apply_chat,
                   parse_judge_output, parse_rationale, parse_verdict, prefix_key, prefix_order, render_prompt,
                   render_rationale_target)
from judge.prompts import RU_TEMPLATE, render_pairwise_prompt
from judge.wire import (PAIRWISE_CRITERION, JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgmentUsage,
                        LmVerdict, PairwiseRequest)
from judge.criteria_auto import TaskChoice, TaskClassifier
from serve.engine_client import EngineClient
from serve.schema import JudgeRequest, RequestError, ResolvedCriterion, resolve_criteria

__all__ = [
    "Job",
    "Judge",
    "ScoreDistribution",
    "JudgeSettings",
    "build_jobs",
    "build_pair_jobs",
    "PAIRWISE_SCALE",
    "check_sizes",
    "max_token_chars",
    "score_distribution",
    "verdict_regex",
    "level_token_ids",
    "REGRESSION_RESERVE_TOKENS",
]

#: Tokens the regression input needs beyond prompt + generated rationale: the ``[END]`` that
#: ``render_rationale_target`` restores when the generation was cut, and the chat template's end-of-turn.
REGRESSION_RESERVE_TOKENS = 8


# ---------------------------------------------------------------------------------------------------------------
# prompts and order
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One (item, criterion) judgment.

    Attributes:
        item: index of the item in the request.
        slot: index of the criterion within the item's resolved criteria.
        criterion: the resolved criterion.
        prompt: the rendered POLLUX prompt (no chat wrapping).
        prompt_ids: the chat-wrapped prompt's token ids, as sent to vLLM.
    """

    item: int
    slot: int
    criterion: ResolvedCriterion
    prompt: str
    prompt_ids: list[int]


def max_token_chars(tokenizer: Any) -> int:
    """The most characters one token of ``tokenizer`` can stand for (an upper bound: the longest vocabulary entry
    as stored; a byte-level BPE entry has one symbol per byte). Qwen2.5: 128 (a run of spaces)."""
    return max((len(token) for token in tokenizer.get_vocab()), default=1)


def check_sizes(request: JudgeRequest, *, max_model_len: int, max_tokens: int, reserve: int, chars_per_token: int) -> None:
    """Refuse, before any rendering, tokenizing or classifying, an item whose own text cannot fit the context.

    Each (item, criterion) prompt holds the item's instruction, answer and reference answer, and a custom rubric's
    text; a prompt of more than ``(max_model_len - max_tokens - reserve) * chars_per_token`` characters cannot be
    that few tokens, whatever the text. So a 1 MiB answer is refused in microseconds instead of after every
    criterion's prompt was rendered and tokenized (which took 92 s and +2 GB for 64 criteria).

    Raises:
        RequestError: naming the item (``items[i]``) or the custom criterion, with ``context_length_exceeded``.
    """
    budget = max_model_len - max_tokens - reserve
    limit = budget * chars_per_token
    for i, item in enumerate(request.items):
        chars = len(item.instruction) + len(item.answer) + len(item.reference_answer or "")
        where, extra = f"items[{i}]", 0
        if isinstance(item.criteria, list):
            for j, spec in enumerate(item.criteria):
                rubric = getattr(spec, "rubrics", None)
                size = len(rubric) if isinstance(rubric, str) else sum(len(k) + len(v) for k, v in (rubric or {}).items())
                if size > extra:
                    where, extra = f"items[{i}].criteria[{j}]", size
        if chars + extra > limit:
            raise RequestError(
                f"{where}: {chars + extra} characters of instruction, answer, reference and rubric cannot fit the "
                f"{budget} prompt tokens left of the model's context of {max_model_len} (max_tokens {max_tokens}); "
                f"at most {limit} characters. Shorten the answer.",
                param=where,
                code="context_length_exceeded",
            )


#: Where the criterion's part of a POLLUX prompt starts: everything before it (instruction, reference, answer) is
#: the same for every criterion of one item (judge.prompts.RU_TEMPLATE).
_CRITERION_PART = RU_TEMPLATE[RU_TEMPLATE.index("### Критерий оценки:"):]


def tokenize_sharing_prefixes(tokenizer: Any, texts: list[str], jobs: list[tuple[int, ResolvedCriterion, str]]) -> list[list[int]]:
    """Token ids of each chat-wrapped prompt, the part every criterion of an item shares tokenized once per item.

    The split is at the start of ``### Критерий оценки:``, right after the answer's ``\\n\\n``: a boundary of the
    Qwen2 pre-tokenizer (a newline run is a pre-token of its own, and no merge crosses pre-tokens), so prefix ids
    + suffix ids are the whole text's ids (pinned against whole-text tokenizing in tests/test_serve_judging.py).
    A 1 MiB answer on 64 criteria is then tokenized once, not 64 times. A text whose prompt the
    chat template did not keep verbatim is tokenized whole. Each call is one batch: the fast tokenizer encodes a
    batch in Rust (1.3 ms of CPU per ~1,100-token judgment against 2.0 ms one call at a time).

    Args:
        texts: the chat-wrapped prompts.
        jobs: per text, (item index, criterion, the rendered prompt inside it).
    """
    split: list[int | None] = []
    for text, (_, crit, prompt) in zip(texts, jobs):
        tail = _CRITERION_PART.format(criteria_name=crit.name, rubrics=crit.rubrics)
        at = text.find(prompt)
        split.append(at + len(prompt) - len(tail) if at >= 0 and prompt.endswith(tail) else None)
    prefixes: dict[int, str] = {}
    for text, (item, _, _), cut in zip(texts, jobs, split):
        if cut is not None:
            prefixes.setdefault(item, text[:cut])
    shared = [cut is not None and texts[k][:cut] == prefixes[jobs[k][0]] for k, cut in enumerate(split)]
    order = sorted(prefixes)
    prefix_ids = dict(zip(order, tokenizer([prefixes[i] for i in order], add_special_tokens=False)["input_ids"])) if order else {}
    rest = [texts[k][split[k]:] if shared[k] else texts[k] for k in range(len(texts))]
    rest_ids = tokenizer(rest, add_special_tokens=False)["input_ids"] if rest else []
    return [prefix_ids[jobs[k][0]] + ids if shared[k] else ids for k, ids in enumerate(rest_ids)]


def build_jobs(
    request: JudgeRequest,
    tokenizer: Any,
    *,
    max_model_len: int,
    max_tokens: int,
    reserve: int = 0,
    max_judgments: int | None = None,
    choices: Mapping[int, TaskChoice] | None = None,
    thinking: bool = False,
) -> list[Job]:
    """Resolve criteria, render and tokenize every judgment, and order them for prefix reuse.

    Args:
        request: the validated request.
        tokenizer: the checkpoint's tokenizer (chat template included).
        max_model_len: the engines' context (prompt + generated tokens).
        max_tokens: tokens each judgment may generate.
        reserve: further tokens a judgment needs beyond prompt + generation (regression: the head's input).
        max_judgments: most (item, criterion) pairs allowed, checked before any tokenizing.
        choices: the task classifier's choice per item index, for items with ``"criteria": "auto"``.
        thinking: render with the chat template's thinking on (integer-format judges; ``judge.apply_chat``).

    Returns:
        The jobs, grouped so that the criteria of one answer are adjacent.

    Raises:
        RequestError: an unknown criterion or task, too many judgments, or a prompt that does not fit the
            context (naming the item and criterion, with the token counts).
    """
    resolved = [resolve_criteria(item, i, (choices or {}).get(i)) for i, item in enumerate(request.items)]
    total = sum(len(criteria) for criteria in resolved)
    if max_judgments is not None and total > max_judgments:
        raise RequestError(
            f"items: {total} (item, criterion) judgments requested; this server takes at most {max_judgments} "
            "per request. Split the batch.",
            param="items",
        )
    budget = max_model_len - max_tokens - reserve
    pending: list[tuple[int, int, ResolvedCriterion, str]] = []  # (item index, criterion index, criterion, prompt)
    keys: list[tuple[str, str, str]] = []
    for i, (item, criteria) in enumerate(zip(request.items, resolved)):
        for j, crit in enumerate(criteria):
            fields = {
                "instruction": item.instruction,
                "answer": item.answer,
                "reference_answer": item.reference_answer or "",
                "criteria_name": crit.name,
                "rubrics": crit.rubrics,
            }
            pending.append((i, j, crit, render_prompt(fields)))
            keys.append(prefix_key(item))
    # the integer format (a thinking judge) is prompted with thinking on; the shared prefix is tokenized once per item
    texts = [apply_chat(tokenizer, prompt, thinking=thinking) for _, _, _, prompt in pending]
    all_ids = tokenize_sharing_prefixes(tokenizer, texts, [(i, crit, prompt) for i, _, crit, prompt in pending])
    jobs: list[Job] = []
    for (i, j, crit, prompt), ids in zip(pending, all_ids):
        if len(ids) > budget:
            item = request.items[i]
            where = f"items[{i}]" if item.criteria is None or item.criteria == "auto" else f"items[{i}].criteria[{j}]"
            raise RequestError(
                f"{where}: the prompt for criterion {crit.name!r} is {len(ids)} tokens; with max_tokens "
                f"{max_tokens}{f' and {reserve} reserved' if reserve else ''} it needs "
                f"{len(ids) + max_tokens + reserve} > the model's context of {max_model_len} tokens. "
                f"Shorten the answer or ask for fewer max_tokens.",
                param=where,
                code="context_length_exceeded",
            )
        jobs.append(Job(i, j, crit, prompt, ids))
    return [jobs[k] for k in prefix_order(keys)]


#: The pairwise comparison scale: -1 answer 1 better, 0 tie, 1 answer 2 better (demo/serve_pollux_demo.py:77-78).
PAIRWISE_SCALE = Scale((-1, 0, 1))


def build_pair_jobs(request: PairwiseRequest, tokenizer: Any, *, max_model_len: int, max_tokens: int,
                    thinking: bool) -> list[Job]:
    """Render and tokenize every pair of a pairwise request (``judge.render_pairwise_prompt``), in request order.

    Raises:
        RequestError: a prompt that does not fit the context, naming the pair.
    """
    prompts = [render_pairwise_prompt(pair) for pair in request.pairs]
    texts = [apply_chat(tokenizer, prompt, thinking=thinking) for prompt in prompts]
    all_ids = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    jobs = []
    for i, (pair, prompt, ids) in enumerate(zip(request.pairs, prompts, all_ids)):
        if len(ids) + max_tokens > max_model_len:
            raise RequestError(
                f"pairs[{i}]: the prompt is {len(ids)} tokens; with max_tokens {max_tokens} it needs "
                f"{len(ids) + max_tokens} > the model's context of {max_model_len} tokens.",
                param=f"pairs[{i}]", code="context_length_exceeded",
            )  # fmt: skip
        criterion = ResolvedCriterion(PAIRWISE_CRITERION, pair.rubrics, PAIRWISE_SCALE, None)
        jobs.append(Job(i, 0, criterion, prompt, ids))
    return jobs


# ---------------------------------------------------------------------------------------------------------------
# scores from generations
# ---------------------------------------------------------------------------------------------------------------


def level_token_ids(tokenizer: Any, scale: Scale) -> dict[int, int] | None:
    """Each scale level's token id, when every level is written as one token (``"0"`` .. ``"4"``), else None."""
    ids = {}
    for level in scale.levels:
        encoded = tokenizer.encode(str(level), add_special_tokens=False)
        if len(encoded) != 1:
            return None
        ids[level] = encoded[0]
    return ids


@dataclass(frozen=True)
class ScoreDistribution:
    """The judge's distribution over the scale at the score it wrote.

    Attributes:
        probs: level -> probability, renormalised over the scale's levels.
        expected: sum of level x probability.
        confidence: the renormalised probability of the level the judge wrote.
        mass: the probability the judge put on any scale level before renormalising (near 1 for a judge that
            knows the format; small values mean the distribution is mostly elsewhere).
    """

    probs: dict[int, float]
    expected: float
    confidence: float
    mass: float


_RESULT_BEFORE = re.compile(r"\[\s*RESULT\s*\][\s*_:(]*$", re.IGNORECASE)


def score_distribution(
    tokens: list[str], top_logprobs: list[dict[str, float] | None], scale: Scale, score: float
) -> ScoreDistribution | None:
    """Read the score token's distribution from a completion's log-probabilities.

    The score token is the last generated token that spells the written ``score`` and follows a ``[RESULT]`` tag.

    Args:
        tokens: the generated tokens as text.
        top_logprobs: per position, token text -> log-probability (including the scale's level tokens).
        scale: the criterion's scale.
        score: the score the verdict parser read.

    Returns:
        The distribution, or None when the score is not a single level token or its position is not found.
    """
    if not float(score).is_integer() or int(score) not in scale.levels:
        return None
    written = str(int(score))
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i].strip() != written or not _RESULT_BEFORE.search("".join(tokens[max(0, i - 16):i])):
            continue
        logprobs = top_logprobs[i] or {}
        raw = {level: math.exp(logprobs[str(level)]) for level in scale.levels if str(level) in logprobs}
        mass = sum(raw.values())
        if int(score) not in raw or mass <= 0:
            return None
        probs = {level: raw.get(level, 0.0) / mass for level in scale.levels}
        expected = sum(level * p for level, p in probs.items())
        return ScoreDistribution(probs=probs, expected=expected, confidence=probs[int(score)], mass=min(mass, 1.0))
    return None


def verdict_regex(scale: Scale, feedback_max_chars: int, with_score: bool) -> str:
    """The output format as a regular expression, for vLLM structured outputs.

    Seq2seq: ``[FEEDBACK] <1..N characters other than brackets> [RESULT] <a level> [END]``; regression: the same
    without the result. ``feedback_max_chars`` 0 leaves the feedback unbounded (cheap to compile; a bound of N
    makes vLLM's regex compiler build N states).
    """
    repeat = f"{{1,{feedback_max_chars}}}" if feedback_max_chars > 0 else "+"
    feedback = rf"\[FEEDBACK\] [^\[\]]{repeat}"
    if not with_score:
        return feedback + r" \[END\]"
    levels = "|".join(re.escape(str(level)) for level in scale.levels)
    return feedback + rf" \[RESULT\] ({levels}) \[END\]"


# ---------------------------------------------------------------------------------------------------------------
# the judge
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeSettings:
    """What a ``Judge`` needs from the server config."""

    model_name: str
    kind: str  # "seq2seq" | "regression"
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


class Judge:
    """Runs ``/v1/judge`` requests against a generating engine (and a pooling engine for regression judges).

    Args:
        settings: model name, kind and defaults.
        tokenizer: the checkpoint's tokenizer.
        generator: client of the generating engine.
        pooler: client of the pooling engine (regression judges only).
        limit: bounds the engine requests in flight across all concurrent ``/v1/judge`` calls.
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
        self._level_ids: dict[tuple[int, ...], dict[int, int] | None] = {}
        self._chars_per_token: int | None = None  # max_token_chars, on the first request

    def _levels(self, scale: Scale) -> dict[int, int] | None:
        if scale.levels not in self._level_ids:
            self._level_ids[scale.levels] = level_token_ids(self.tokenizer, scale)
        return self._level_ids[scale.levels]

    async def run(self, request: JudgeRequest | PairwiseRequest) -> dict[str, Any]:
        """Judge every (item, criterion) of a request, or every pair of a pairwise one.

        Returns:
            The response body: ``judge.wire.JudgeResponse.to_json()`` (see docs/serving.md, the typed route).

        Raises:
            RequestError: bad model name, criterion, task or context length.
            EngineUnavailable, EngineFailure: an engine died or failed.
        """
        s = self.settings
        if request.model is not None and request.model != s.model_name:
            raise RequestError(f"model: the model `{request.model}` does not exist; this server serves `{s.model_name}`", "model", 404, "model_not_found")
        max_tokens = request.max_tokens if request.max_tokens is not None else s.max_tokens
        if max_tokens > s.max_tokens:
            raise RequestError(f"max_tokens: {max_tokens} is above this server's limit of {s.max_tokens}", "max_tokens")
        if isinstance(request, PairwiseRequest):
            return await self._run_pairs(request, max_tokens)
        reserve = REGRESSION_RESERVE_TOKENS if s.kind == "regression" else 0
        if self._chars_per_token is None:
            self._chars_per_token = max_token_chars(self.tokenizer)
        check_sizes(request, max_model_len=s.max_model_len, max_tokens=max_tokens, reserve=reserve,
                    chars_per_token=self._chars_per_token)  # fmt: skip
        auto = [i for i, item in enumerate(request.items) if item.criteria == "auto"]
        choices = {}
        if auto and self.classifier is not None:  # without one, resolve_criteria refuses the item, naming it
            choices = await asyncio.to_thread(
                lambda: {i: self.classifier.choose(request.items[i].instruction, request.items[i].answer) for i in auto}
            )
        jobs = await asyncio.to_thread(
            build_jobs,
            request,
            self.tokenizer,
            max_model_len=s.max_model_len,
            max_tokens=max_tokens,
            reserve=reserve,
            max_judgments=s.max_judgments,
            choices=choices,
            thinking=s.verdict_format == VerdictFormat.INTEGER,
        )
        options = {
            "max_tokens": max_tokens,
            "temperature": float(request.temperature if request.temperature is not None else s.temperature),
            "lenient": request.lenient if request.lenient is not None else s.lenient,
            "constrained": request.constrained if request.constrained is not None else s.constrained,
        }
        if options["constrained"] and s.verdict_format == VerdictFormat.INTEGER:
            # The verdict regex is the tagged format's; an integer judge's free reasoning has no such grammar.
            raise RequestError("constrained: this server's judge answers in the integer format (reasoning, then an "
                               "integer), which constrained decoding does not cover", "constrained")
        results = await self._judge_jobs(jobs, options)
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

    async def _judge_jobs(self, jobs: list[Job], options: dict[str, Any]) -> list[JudgeResult]:
        # Tasks are created in prefix order and take the semaphore in that order (asyncio's is FIFO).
        tasks = [asyncio.ensure_future(self._one(job, options)) for job in jobs]
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:
                task.cancel()

    def _response(self, items: list[JudgeResponseItem], results: list[JudgeResult]) -> dict[str, Any]:
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
            prompt_version=PROMPT_VERSION,
            items=items,
            usage=JudgeResponseUsage(
                judgments=len(results),
                parsed=sum(1 for r in results if r.parse_ok),
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
        ).to_json()

    async def _run_pairs(self, request: PairwiseRequest, max_tokens: int) -> dict[str, Any]:
        """A pairwise request: one judgment per pair on ``PAIRWISE_SCALE``, in the judge's verdict format."""
        s = self.settings
        if s.kind != "seq2seq":
            raise RequestError("pairs: pairwise judging needs a judge that writes its verdict; this server's judge "
                               f"is a {s.kind} judge", "pairs")  # fmt: skip
        jobs = await asyncio.to_thread(build_pair_jobs, request, self.tokenizer, max_model_len=s.max_model_len,
                                       max_tokens=max_tokens, thinking=s.verdict_format == VerdictFormat.INTEGER)
        options = {
            "max_tokens": max_tokens,
            "temperature": float(request.temperature if request.temperature is not None else s.temperature),
            "lenient": s.lenient,
            "constrained": False,  # the verdict regex is the per-criterion one
        }
        results = await self._judge_jobs(jobs, options)
        items = [JudgeResponseItem(index=i, id=pair.id, results=[result])
                 for i, (pair, result) in enumerate(zip(request.pairs, results))]
        return self._response(items, results)

    def completion_payload(self, job: Job, options: dict[str, Any]) -> dict[str, Any]:
        """The ``/v1/completions`` body for one judgment (``options``: max_tokens, temperature, constrained).

        Public so that benchmarks can send vLLM exactly what judge-serve sends.
        """
        s = self.settings
        scale = job.criterion.scale
        payload: dict[str, Any] = {
            "model": s.engine_models["generator"],
            "prompt": job.prompt_ids,
            "max_tokens": options["max_tokens"],
            "temperature": options["temperature"],
            "stop": ["[END]"],
            "include_stop_str_in_output": True,
        }
        if s.head_input == "generated_text" or s.verdict_format == VerdictFormat.INTEGER:
            # Integer judges answer after their reasoning, to the end of the turn: there is no [END] to stop at.
            # A released -r judge's head reads the text as it came out; POLLUX generates until the end of the
            # turn (its llm.chat has no stop string), so a stop at [END] could cut what its head would read.
            del payload["stop"], payload["include_stop_str_in_output"]
        # The score token's position is known for the tagged format only (after [RESULT]).
        tagged = s.verdict_format == VerdictFormat.TAGGED
        level_ids = self._levels(scale) if (s.kind == "seq2seq" and s.score_logprobs and tagged) else None
        if level_ids:
            payload["logprobs"] = len(level_ids)
            payload["logprob_token_ids"] = list(level_ids.values())
        if options["constrained"]:
            payload["structured_outputs"] = {"regex": verdict_regex(scale, s.feedback_max_chars, s.kind == "seq2seq")}
        return payload

    async def _one(self, job: Job, options: dict[str, Any]) -> JudgeResult:
        s = self.settings
        scale = job.criterion.scale
        payload = self.completion_payload(job, options)
        asked_logprobs = "logprob_token_ids" in payload
        async with self.limit:
            completion = await self.generator.post("/v1/completions", payload)
        choice = completion["choices"][0]
        text = choice.get("text") or ""
        usage = completion.get("usage") or {}
        if s.kind == "seq2seq":
            verdict = self._seq2seq_verdict(text, choice.get("logprobs") if asked_logprobs else None, scale,
                                            options["lenient"], s.verdict_format)
        else:
            verdict = await self._regression_verdict(job, text, options["lenient"])
        return JudgeResult(
            criterion=job.criterion.name,
            criterion_id=job.criterion.id,
            scale=list(scale.levels),
            **verdict,
            output=text,
            finish_reason=choice.get("finish_reason"),
            usage=JudgmentUsage(
                prompt_tokens=int(usage.get("prompt_tokens") or len(job.prompt_ids)),
                completion_tokens=int(usage.get("completion_tokens") or 0),
            ),
        )

    @staticmethod
    def _seq2seq_verdict(text: str, logprobs: dict[str, Any] | None, scale: Scale, lenient: bool,
                         verdict_format: str = VerdictFormat.TAGGED) -> dict[str, Any]:
        # Integer format: the completion's <think> block is the feedback, the integer after it the score.
        verdict = parse_judge_output(verdict_format, text, scale=scale, lenient=lenient)
        dist = None
        if verdict.ok and logprobs:
            dist = score_distribution(logprobs.get("tokens") or [], logprobs.get("top_logprobs") or [], scale, verdict.score)
        return {
            "feedback": verdict.feedback,
            "score": verdict.score,
            "parse_ok": verdict.ok,
            "error": verdict.error,
            "error_reason": verdict.reason or None,
            "score_source": ScoreSource.VERDICT if verdict.ok else None,
            "in_scale": verdict.in_scale,  # False: a number outside the scale, scored (parse_ok stays true)
            "expected_score": dist.expected if dist else None,
            "confidence": dist.confidence if dist else None,
            "score_probs": {str(k): v for k, v in dist.probs.items()} if dist else None,
            "score_mass": dist.mass if dist else None,
            "regression_score": None,
            "rationale_complete": None,
            "lm_verdict": None,
        }

    async def _regression_verdict(self, job: Job, text: str, lenient: bool) -> dict[str, Any]:
        scale = job.criterion.scale
        lm = parse_verdict(text, scale=scale, lenient=lenient)
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
        if not (text if released else rationale):
            out["error"], out["error_reason"] = VerdictError.EMPTY, "the judge wrote no rationale for the head to score"
            return out
        # Our exports: exactly the sequence training fed the head, prompt + assistant turn "[FEEDBACK] ... [END]".
        # Released -r judges: POLLUX's scoring input, the chat template over [user: prompt, assistant: the generated
        # text as it came out], no generation prompt (the released judges' scoring, ai-forever/POLLUX).
        completion = text if released else render_rationale_target(rationale)
        text_for_head = apply_chat(self.tokenizer, job.prompt, completion=completion)
        ids = self.tokenizer(text_for_head, add_special_tokens=False)["input_ids"]
        assert self.pooler is not None
        async with self.limit:
            classified = await self.pooler.post("/classify", {"model": self.settings.engine_models["pooler"], "input": [ids]})
        raw = float(classified["data"][0]["probs"][0])
        # The head is unbounded; the score is clipped into the scale, the raw value is kept beside it.
        out.update(
            score=float(min(max(raw, scale.min), scale.max)),
            parse_ok=True,
            score_source=ScoreSource.REGRESSION_HEAD,
            regression_score=raw,
        )
        return out

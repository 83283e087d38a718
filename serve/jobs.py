"""Judging jobs: a validated ``/v1/judge`` request becomes the (item, criterion) prompts sent to the engine.

1. **Prompts.** Each (item, criterion) becomes the judge's pointwise prompt (``judge.prompts.PromptTemplate``: the
   POLLUX prompt, or the released Pollux-4B-Judge's own, as ``judge.checkpoints.prompt_template_and_why`` chose for
   the served checkpoint) wrapped as one user turn by the checkpoint's own chat template (``judge.apply_chat``,
   thinking off: a Qwen3 judge's prompt ends with the empty ``<think>`` block) and tokenized here, so its length is
   checked against the context before anything reaches vLLM (a clear 400, never a silent truncation). An item whose
   text alone cannot fit is refused before any rendering (``check_sizes``). With the request's ``"oversize": "fail"``
   such a judgment is not refused: it becomes a job marked ``too_long`` (never rendered, tokenized or sent when the
   item's text alone is too long), which ``serve.judging`` answers as a failed result, ``context_length_exceeded``.
   The request's text is tokenized with its special-token strings as text (``chat_ids``): only the chat template's
   own special tokens are special, so an answer cannot end the user's turn and write the judge's.
2. **Prefix-friendly order.** The criteria of one (instruction, reference, answer) share every token up to
   ``### Критерий оценки:``. Jobs are grouped by that prefix and sent group by group (``serve.judging``), so
   siblings land in the same scheduler steps, where vLLM's prefix cache computes the shared blocks once.
3. **Before classifying.** For a request with ``"criteria": "auto"`` items, ``plan_jobs`` makes every refusal that
   needs no classifier's choice and builds the other items' jobs; ``JobPlan.complete`` adds the classified items'
   once the classifier has chosen. ``build_jobs`` is both in one call.

A pairwise request becomes one job per pair on ``PAIRWISE_SCALE`` (``build_pair_jobs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judge import Scale, apply_chat, prefix_key, prefix_order
from judge.criteria_auto import TaskChoice
from judge.prompts import POLLUX_PROMPT, PromptTemplate, render_pairwise_prompt
from judge.wire import PAIRWISE_CRITERION, PairwiseRequest
from serve.schema import JudgeRequest, RequestError, ResolvedCriterion, resolve_criteria

__all__ = ["Job", "JobPlan", "build_jobs", "chat_ids", "chat_parts", "check_criteria", "plan_jobs", "prepare_tokenizer",
           "build_pair_jobs", "PAIRWISE_SCALE", "check_sizes", "max_token_chars", "tokenize_sharing_prefixes"]


@dataclass(frozen=True)
class Job:
    """One (item, criterion) judgment.

    Attributes:
        item: index of the item in the request.
        slot: index of the criterion within the item's resolved criteria.
        criterion: the resolved criterion.
        text: the rendered prompt (no chat wrapping), or the fields it is rendered from when asked (``prompt``):
            an item's criteria share one answer, which rendered into every criterion's prompt up front held the
            answer once per criterion (a 500,000-character answer on 512 criteria: hundreds of MB).
        prompt_ids: the chat-wrapped prompt's token ids, as sent to vLLM.
        too_long: with ``oversize`` ``fail``: why the prompt cannot fit the context (the refusal's message); such
            a job is answered as a failed result and never sent.
        template: the pointwise template ``text``'s fields are rendered with.
    """

    item: int
    slot: int
    criterion: ResolvedCriterion
    text: str | Mapping[str, str]
    prompt_ids: list[int]
    too_long: str | None = None
    template: PromptTemplate = POLLUX_PROMPT

    @property
    def prompt(self) -> str:
        """The rendered prompt (no chat wrapping); "" for a job never rendered (too long)."""
        return self.text if isinstance(self.text, str) else self.template.render(self.text)


def _named(name: str, limit: int = 80) -> str:
    """A criterion's name for a message: a client's custom name may be megabytes long."""
    return repr(name) if len(name) <= limit else f"{name[:limit]!r}... [{len(name)} characters]"


def max_token_chars(tokenizer: Any) -> int:
    """The most characters one token of ``tokenizer`` can stand for (an upper bound: the longest vocabulary entry
    as stored; a byte-level BPE entry has one symbol per byte). Qwen2.5: 128 (a run of spaces)."""
    return max((len(token) for token in tokenizer.get_vocab()), default=1)


def check_sizes(request: JudgeRequest, *, max_model_len: int, max_tokens: int, reserve: int, chars_per_token: int,
                oversize: str = "refuse") -> dict[int, RequestError]:
    """Refuse, before any rendering, tokenizing or classifying, an item whose own text cannot fit the context.

    Each (item, criterion) prompt holds the item's instruction, answer and reference answer, and a custom
    criterion's name and rubric text; a prompt of more than ``(max_model_len - max_tokens - reserve) * chars_per_token`` characters cannot be
    that few tokens, whatever the text. So a 1 MiB answer is refused in microseconds instead of after every
    criterion's prompt was rendered and tokenized (which took 92 s and +2 GB for 64 criteria).

    Returns:
        With ``oversize`` ``fail``: the refusal each such item would have got, by item index (none: empty).

    Raises:
        RequestError: naming the item (``items[i]``) or the custom criterion, with ``context_length_exceeded``
            (``oversize`` ``refuse``).
    """
    budget = max_model_len - max_tokens - reserve
    limit = budget * chars_per_token
    too_long: dict[int, RequestError] = {}
    for i, item in enumerate(request.items):
        chars = len(item.instruction) + len(item.answer) + len(item.reference_answer or "")
        where, extra = f"items[{i}]", 0
        if isinstance(item.criteria, list):
            for j, spec in enumerate(item.criteria):
                rubric = getattr(spec, "rubrics", None)
                size = len(rubric) if isinstance(rubric, str) else sum(len(k) + len(v) for k, v in (rubric or {}).items())
                size += len(getattr(spec, "name", None) or "")  # a custom criterion's name is in its prompt too
                if size > extra:
                    where, extra = f"items[{i}].criteria[{j}]", size
        if chars + extra > limit:
            too_long[i] = RequestError(
                f"{where}: {chars + extra} characters of instruction, answer, reference and criterion cannot fit the "
                f"{budget} prompt tokens left of the model's context of {max_model_len} (max_tokens {max_tokens}); "
                f"at most {limit} characters. Shorten the answer.",
                param=where,
                code="context_length_exceeded",
            )
            if oversize != "fail":
                raise too_long[i]
    return too_long


#: Chat-template text (the opening, the closing) searched for its added tokens, per tokenizer: a few strings each.
_SPAN_CACHE_SIZE = 64


class _Encoder:
    """One tokenizer's two ways of tokenizing (``chat_ids``): the chat template's own text as the tokenizer reads any
    text, its special tokens parsed; a request's text with every special-token string read as the characters it is
    (transformers' ``split_special_tokens``). The second runs on a copy of the fast tokenizer made once with
    ``encode_special_tokens`` set: transformers sets that flag on the one Rust tokenizer at each call that asks it
    otherwise, and judge-serve tokenizes in several threads at once."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        added = tokenizer.get_added_vocab() if hasattr(tokenizer, "get_added_vocab") else {}
        self.added = tuple(token for token in added if token)
        self.spans: dict[str, tuple[int, int] | None] = {}
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self.literal = None
        if backend is not None:
            self.literal = type(backend).from_str(backend.to_str())
            self.literal.no_truncation()
            self.literal.no_padding()
            self.literal.encode_special_tokens = True

    def template_ids(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []

    def request_ids(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        if self.literal is not None:
            return [encoding.ids for encoding in self.literal.encode_batch(texts, add_special_tokens=False)]
        return self.tokenizer(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"]

    def added_span(self, text: str) -> tuple[int, int] | None:
        """Where ``text`` (the chat template's) holds added tokens: the first one's start, the last one's end."""
        if text not in self.spans:
            starts = [at for at in (text.find(token) for token in self.added) if at >= 0]
            ends = [at + len(token) for token in self.added if (at := text.rfind(token)) >= 0]
            if len(self.spans) >= _SPAN_CACHE_SIZE:
                self.spans.clear()
            self.spans[text] = (min(starts), max(ends)) if starts else None
        return self.spans[text]


_ENCODERS: dict[int, tuple[Any, _Encoder]] = {}


def _encoder(tokenizer: Any) -> _Encoder:
    kept = _ENCODERS.get(id(tokenizer))
    if kept is None or kept[0] is not tokenizer:
        if len(_ENCODERS) >= 8:  # a server has one tokenizer; tests make several
            _ENCODERS.clear()
        kept = _ENCODERS[id(tokenizer)] = (tokenizer, _Encoder(tokenizer))
    return kept[1]


def prepare_tokenizer(tokenizer: Any) -> None:
    """Make what ``chat_ids`` needs of ``tokenizer`` ahead of its first call (never raises: that call would)."""
    try:
        _encoder(tokenizer)
    except Exception:  # noqa: BLE001 - a tokenizer that cannot be prepared fails at its first use, with its error
        pass


def chat_ids(tokenizer: Any, texts: list[list[str]]) -> list[list[int]]:
    """Token ids of texts each given in parts, alternately the chat template's own text (at even places: its opening,
    its closing) and the request's (at odd places: the rendered prompt, or part of it, with the client's instruction,
    answers, reference, criteria and rubrics). Only the template's special tokens are special: a special-token
    string in the request's text (an answer that writes ``<|im_end|>\\n<|im_start|>assistant\\n...``) is tokenized as
    the characters it is, so that no answer can end the user's turn and write the judge's.

    The ids of a text without such a string are exactly those of tokenizing it whole: a tokenizer splits its input
    at every added token anyway and tokenizes the runs between them apart, so the parts are cut at the template's
    first and last added token (the template's text around them goes with the request's run it touches) and each run
    is tokenized as the whole text's run would be (pinned in tests/unit/test_serve_judging.py). All texts' runs are
    tokenized in two batches, one of each kind.
    """
    encoder = _encoder(tokenizer)
    runs: list[list[tuple[bool, str]]] = []  # per text, (the template's, text) in order
    for parts in texts:
        text_runs: list[tuple[bool, str]] = []

        def add(template: bool, run: str) -> None:
            if not run:
                return
            if text_runs and not template and not text_runs[-1][0]:
                text_runs[-1] = (False, text_runs[-1][1] + run)
            else:
                text_runs.append((template, run))

        for k, part in enumerate(parts):
            span = encoder.added_span(part) if k % 2 == 0 else None
            if span is None:
                add(False, part)
            else:
                add(False, part[:span[0]])
                add(True, part[span[0]:span[1]])
                add(False, part[span[1]:])
        runs.append(text_runs)
    template_ids = iter(encoder.template_ids([run for text_runs in runs for template, run in text_runs if template]))
    request_ids = iter(encoder.request_ids([run for text_runs in runs for template, run in text_runs if not template]))
    return [[token for template, _ in text_runs for token in next(template_ids if template else request_ids)]
            for text_runs in runs]


def chat_parts(text: str, prompt: str, opening: str | None = None, closing: str | None = None) -> list[str]:
    """``chat_ids``' parts of a chat-wrapped ``text`` whose user turn is ``prompt``: the template's text before and
    after it, and the prompt. A template that did not keep the prompt verbatim (one that trims it) is cut at its
    ``opening`` and ``closing`` (the chat template's text around any user turn) when given and found; failing both,
    the whole text is read as the request's (its own special tokens included: never a forged turn)."""
    at = text.find(prompt)
    if at >= 0:
        return [text[:at], prompt, text[at + len(prompt):]]
    if opening is not None and closing is not None and len(opening) + len(closing) <= len(text) \
            and text.startswith(opening) and text.endswith(closing):
        return [opening, text[len(opening):len(text) - len(closing)], closing]
    return ["", text, ""]


def _wrapping(tokenizer: Any, thinking: bool) -> tuple[str | None, str | None]:
    """The chat template's text around a user turn: (opening, closing), None where it does not keep a mark whole."""
    mark = "\x00user turn\x00"
    wrapped = apply_chat(tokenizer, mark, thinking=thinking)
    at = wrapped.find(mark)
    return (wrapped[:at], wrapped[at + len(mark):]) if at >= 0 else (None, None)


def tokenize_sharing_prefixes(tokenizer: Any, texts: list[str], jobs: list[tuple[int, ResolvedCriterion, str]], *,
                              known: Mapping[int, tuple[str, list[int]]] | None = None,
                              template: PromptTemplate = POLLUX_PROMPT, thinking: bool = False) -> list[list[int]]:
    """Token ids of each chat-wrapped prompt, the part every criterion of an item shares tokenized once per item.

    The split is at the start of ``### Критерий оценки:`` (``template.criterion_part``: everything before it, the
    instruction, reference and answer, is the same for every criterion of one item), right after the answer's
    ``\\n\\n``: a boundary of the Qwen2 pre-tokenizer (a newline run is a pre-token of its own, and no merge
    crosses pre-tokens), so prefix ids + suffix ids are the whole text's ids (pinned against whole-text tokenizing,
    for both templates, in tests/unit/test_serve_judging.py). A 1 MiB answer on 64 criteria is then tokenized once,
    not 64 times. A text whose prompt the chat template did not keep verbatim is tokenized whole. Each call is one batch, which the fast tokenizer encodes
    in Rust (docs/performance.md, ``bench/serve_tokenize.py``: ``build_jobs`` against whole prompts in one batch and
    one call each).

    Args:
        texts: the chat-wrapped prompts.
        jobs: per text, (item index, criterion, the rendered prompt inside it).
        known: per item, a prefix text already tokenized and its ids (``_shared_prefixes``): used where it is
            exactly that item's shared part, never tokenized again.
        template: the pointwise template the prompts were rendered with.
        thinking: the chat template's thinking switch the texts were wrapped with (where a template did not keep a
            prompt verbatim, its text around the user turn tells the request's text from the template's).

    The request's text is tokenized with its special-token strings as text (``chat_ids``).
    """
    split: list[int | None] = []
    where: list[int] = []  # per text, where its prompt starts
    for text, (_, crit, prompt) in zip(texts, jobs):
        tail = template.criterion_part.format(criteria_name=crit.name, rubrics=crit.rubrics)
        at = text.find(prompt)
        where.append(at)
        split.append(at + len(prompt) - len(tail) if at >= 0 and prompt.endswith(tail) else None)
    prefixes: dict[int, str] = {}
    prefix_parts: dict[int, list[str]] = {}
    for text, (item, _, _), cut, at in zip(texts, jobs, split, where):
        if cut is not None and item not in prefixes:
            prefixes[item], prefix_parts[item] = text[:cut], [text[:at], text[at:cut]]
    shared = [cut is not None and texts[k][:cut] == prefixes[jobs[k][0]] for k, cut in enumerate(split)]
    known = known or {}
    prefix_ids = {i: known[i][1] for i in prefixes if i in known and known[i][0] == prefixes[i]}
    order = sorted(i for i in prefixes if i not in prefix_ids)
    if order:
        prefix_ids.update(zip(order, chat_ids(tokenizer, [prefix_parts[i] for i in order])))
    opening, closing = _wrapping(tokenizer, thinking) if not all(shared) else (None, None)
    rest = []
    for k, (text, (_, _, prompt)) in enumerate(zip(texts, jobs)):
        if shared[k]:  # the prompt's own part from the cut, then the template's closing
            end = where[k] + len(prompt)
            rest.append(["", text[split[k]:end], text[end:]])
        else:
            rest.append(chat_parts(text, prompt, opening, closing))
    rest_ids = chat_ids(tokenizer, rest) if rest else []
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
    oversize: str = "refuse",
    too_long: Mapping[int, RequestError] | None = None,
    template: PromptTemplate = POLLUX_PROMPT,
) -> list[Job]:
    """Resolve criteria, render and tokenize every judgment, and order them for prefix reuse: ``plan_jobs``, then
    its ``complete`` with ``choices``, in one call.

    Args:
        request: the validated request.
        tokenizer: the checkpoint's tokenizer (chat template included).
        max_model_len: the engines' context (prompt + generated tokens).
        max_tokens: tokens each judgment may generate.
        reserve: further tokens a judgment needs beyond prompt + generation (regression: the head's input).
        max_judgments: most (item, criterion) pairs allowed, checked before any tokenizing.
        choices: the task classifier's choice per item index, for items with ``"criteria": "auto"``.
        thinking: render with the chat template's thinking on (integer-format judges; ``judge.apply_chat``).
        oversize: ``refuse`` (raise on a prompt that cannot fit) or ``fail`` (mark its job ``too_long``).
        too_long: ``check_sizes``' answer under ``fail``: those items' criteria are resolved, never rendered (an
            item of ``"criteria": "auto"`` among them is not classified: ``JobPlan.unclassified``).
        template: the judge's pointwise prompt (``judge.checkpoints.prompt_template_and_why``).

    Returns:
        The jobs, grouped so that the criteria of one answer are adjacent.

    Raises:
        RequestError: an unknown criterion or task, too many judgments, or a prompt that does not fit the
            context (naming the item and criterion, with the token counts).
    """
    plan = plan_jobs(request, tokenizer, max_model_len=max_model_len, max_tokens=max_tokens, reserve=reserve,
                     max_judgments=max_judgments, classifying=bool(choices), thinking=thinking, oversize=oversize,
                     too_long=too_long, template=template)
    return plan.complete(choices or {})


@dataclass(frozen=True)
class JobPlan:
    """A request's judgments as far as they are known before its ``"criteria": "auto"`` items are classified
    (``plan_jobs``): every refusal that does not depend on a classifier's choice is made, and every other item's
    judgments are resolved, rendered, tokenized and checked. ``complete`` adds the classified items' judgments.

    Attributes:
        to_classify: the ``"auto"`` items the classifier must choose for, in request order.
        unclassified: the ``"auto"`` items too long for the context (``"oversize": "fail"``), never classified.
    """

    request: JudgeRequest
    tokenizer: Any
    max_model_len: int
    max_tokens: int
    reserve: int
    max_judgments: int | None
    thinking: bool
    oversize: str
    template: PromptTemplate
    resolved: tuple[tuple[ResolvedCriterion, ...] | None, ...]  # None: an "auto" item, resolved by its choice
    prefixes: Mapping[int, tuple[str, list[int]]]
    too_long: Mapping[int, RequestError]
    jobs: tuple[Job, ...]  # the judgments of every item but the "auto" ones
    to_classify: tuple[int, ...]
    #: The "auto" items too long for the context, failed without being classified: the choice that stands for theirs.
    unclassified: Mapping[int, TaskChoice] = dataclasses.field(default_factory=dict)

    def complete(self, choices: Mapping[int, TaskChoice]) -> list[Job]:
        """Every judgment of the request, the ``"auto"`` items' resolved by ``choices`` (the classifier's choice per
        item index), grouped so that the criteria of one answer are adjacent (too long ones last).

        Raises:
            RequestError: an ``"auto"`` item without a choice, too many judgments once the choices' criteria count,
                or a prompt that does not fit the context.
        """
        chosen = [(i, resolve_criteria(self.request.items[i], i, choices.get(i)))
                  for i, criteria in enumerate(self.resolved) if criteria is None]
        _refuse_over(sum(len(c) for c in self.resolved if c is not None) + sum(len(c) for _, c in chosen),
                     self.max_judgments)
        every = sorted([*self.jobs, *_judgments(self, chosen)], key=lambda job: (job.item, job.slot))
        sent = [job for job in every if job.item not in self.too_long]
        skipped = [job for job in every if job.item in self.too_long]  # never rendered: last, in request order
        return [sent[k] for k in prefix_order([prefix_key(self.request.items[job.item]) for job in sent])] + skipped


def plan_jobs(
    request: JudgeRequest,
    tokenizer: Any,
    *,
    max_model_len: int,
    max_tokens: int,
    reserve: int = 0,
    max_judgments: int | None = None,
    classifying: bool = False,
    thinking: bool = False,
    oversize: str = "refuse",
    too_long: Mapping[int, RequestError] | None = None,
    template: PromptTemplate = POLLUX_PROMPT,
    resolved: list[tuple[ResolvedCriterion, ...] | None] | None = None,
) -> JobPlan:
    """Everything about a request's judgments that needs no task classifier, done before any item is classified:
    a request that will be refused is refused first, so that a classifier that fails or hangs cannot turn its 400
    into a 502 or a 504, and no classifier's time is spent on it.

    Args:
        classifying: whether this server has a task classifier (without one an ``"auto"`` item is refused here).
        resolved: ``check_criteria``'s answer for this request, when the caller asked it already.
        Others: as ``build_jobs``'.

    Raises:
        RequestError: an ``"auto"`` item that names its task (or any ``"auto"`` item, without a classifier), an
            unknown criterion or task, too many judgments, or a prompt that does not fit (``oversize`` ``refuse``).
    """
    too_long = dict(too_long or {})
    resolved = list(resolved) if resolved is not None else check_criteria(request, max_judgments=max_judgments,
                                                                          classifying=classifying)
    budget = max_model_len - max_tokens - reserve
    prefixes = _shared_prefixes(request, tokenizer, thinking=thinking, skip=too_long, template=template)
    too_long.update(_items_over_budget(prefixes, budget, max_model_len, max_tokens, oversize=oversize))
    # An "auto" item too long for the context is that item's failure, as any too long item is, never the request's
    # refusal; it is not classified (a classifier would read the text that cannot fit). It stands on the criteria a
    # failed choice gives (those that apply to any text), each a failed result.
    unclassified = {i: TaskChoice.failed("too long for the judge's context: not classified", "none")
                    for i in too_long if resolved[i] is None}
    for i, choice in unclassified.items():
        resolved[i] = tuple(resolve_criteria(request.items[i], i, choice))
    _refuse_over(sum(len(c) for c in resolved if c is not None), max_judgments)
    plan = JobPlan(request=request, tokenizer=tokenizer, max_model_len=max_model_len, max_tokens=max_tokens,
                   reserve=reserve, max_judgments=max_judgments, thinking=thinking, oversize=oversize,
                   template=template, resolved=tuple(resolved), prefixes=prefixes, too_long=too_long, jobs=(),
                   to_classify=tuple(i for i, c in enumerate(resolved) if c is None), unclassified=unclassified)
    named = [(i, criteria) for i, criteria in enumerate(resolved) if criteria is not None]
    return dataclasses.replace(plan, jobs=tuple(_judgments(plan, named)))


def check_criteria(request: JudgeRequest, *, max_judgments: int | None = None,
                   classifying: bool = False) -> list[tuple[ResolvedCriterion, ...] | None]:
    """Every item's criteria resolved (``serve.schema.resolve_criteria``) and the judgments they come to bounded,
    before anything is rendered: what no classifier's choice changes. An ``"auto"`` item is resolved with a stand-in
    choice, whose criteria are dropped: what no choice could make valid (a task named beside ``"auto"``; ``"auto"``
    on a server without a classifier) is refused here.

    Returns:
        Per item, its criteria; None for an ``"auto"`` item (its criteria come from the classifier's choice).

    Raises:
        RequestError: an unknown criterion or task, a rubric without a scale, or too many judgments.
    """
    # The criteria a request names count before any is resolved (resolving reads each custom rubric's scale); the
    # task sets count once resolved, and the auto choices once made (``JobPlan.complete``).
    _refuse_over(sum(len(item.criteria) for item in request.items if isinstance(item.criteria, list)), max_judgments)
    stand_in = TaskChoice.failed("a stand-in before classifying", "plan_jobs") if classifying else None
    resolved: list[tuple[ResolvedCriterion, ...] | None] = []
    for i, item in enumerate(request.items):
        criteria = resolve_criteria(item, i, stand_in if item.criteria == "auto" else None)
        resolved.append(None if item.criteria == "auto" else tuple(criteria))
    _refuse_over(sum(len(c) for c in resolved if c is not None), max_judgments)
    return resolved


def _refuse_over(total: int, max_judgments: int | None) -> None:
    if max_judgments is not None and total > max_judgments:
        raise RequestError(
            f"items: {total} (item, criterion) judgments requested; this server takes at most {max_judgments} "
            "per request. Split the batch.",
            param="items",
        )


def _judgments(plan: JobPlan, items: list[tuple[int, tuple[ResolvedCriterion, ...] | list[ResolvedCriterion]]]
               ) -> list[Job]:
    """The jobs of ``items`` (index, resolved criteria): rendered, tokenized (in one batch) and checked against the
    context; an item too long (``plan.too_long``) gets its criteria as failed jobs, never rendered."""
    budget = plan.max_model_len - plan.max_tokens - plan.reserve
    pending: list[tuple[int, int, ResolvedCriterion, dict[str, str]]] = []  # (item, criterion index, criterion, fields)
    jobs: list[Job] = []
    for i, criteria in items:
        item = plan.request.items[i]
        if i in plan.too_long:
            jobs += [Job(i, j, crit, "", [], too_long=plan.too_long[i].message, template=plan.template)
                     for j, crit in enumerate(criteria)]
            continue
        for j, crit in enumerate(criteria):
            fields = {
                "instruction": item.instruction,
                "answer": item.answer,
                "reference_answer": item.reference_answer or "",
                "criteria_name": crit.name,
                "rubrics": crit.rubrics,
            }
            pending.append((i, j, crit, fields))
    all_ids = (_criteria_ids(plan.tokenizer, pending, plan.prefixes, thinking=plan.thinking, template=plan.template)
               if pending else [])
    for (i, j, crit, fields), ids in zip(pending, all_ids):
        if len(ids) > budget:
            item = plan.request.items[i]
            where = f"items[{i}]" if item.criteria is None or item.criteria == "auto" else f"items[{i}].criteria[{j}]"
            error = RequestError(
                f"{where}: the prompt for criterion {_named(crit.name)} is {len(ids)} tokens; with max_tokens "
                f"{plan.max_tokens}{f' and {plan.reserve} reserved' if plan.reserve else ''} it needs "
                f"{len(ids) + plan.max_tokens + plan.reserve} > the model's context of {plan.max_model_len} tokens. "
                f"Shorten the answer or ask for fewer max_tokens.",
                param=where,
                code="context_length_exceeded",
            )
            if plan.oversize != "fail":
                raise error
            jobs.append(Job(i, j, crit, fields, [], too_long=error.message, template=plan.template))
            continue
        jobs.append(Job(i, j, crit, fields, ids, template=plan.template))
    return jobs


def _criteria_ids(tokenizer: Any, pending: list[tuple[int, int, ResolvedCriterion, dict[str, str]]],
                  prefixes: Mapping[int, tuple[str, list[int]]], *, thinking: bool,
                  template: PromptTemplate) -> list[list[int]]:
    """Each pending judgment's chat-wrapped prompt ids, without rendering any whole prompt but one per item.

    An item's shared part is tokenized already (``_shared_prefixes``); each criterion adds only its own part and the
    chat template's closing, tokenized in one batch, and the ids are the prefix's + the part's (the split is a
    pre-token boundary: ``tokenize_sharing_prefixes``). One whole prompt per item is rendered and compared, so an
    item whose chat template does not wrap the prompt verbatim goes the whole-text way (``tokenize_sharing_prefixes``).
    """
    mark = "\x00criterion part\x00"
    wrapped = apply_chat(tokenizer, mark, thinking=thinking)
    opening = wrapped[: wrapped.find(mark)] if mark in wrapped else None
    closing = wrapped[wrapped.find(mark) + len(mark):] if mark in wrapped else None
    probe = template.shared_part.format(instruction="x", answer="x", reference_answer="")
    parts: dict[int, str] = {}
    whole: list[int] = []  # positions in pending that go the whole-text way
    checked: dict[int, bool] = {}
    for k, (i, _, crit, fields) in enumerate(pending):
        part = template.criterion_part.format(criteria_name=crit.name, rubrics=crit.rubrics)
        if i not in checked:  # the one whole prompt rendered for this item: its shared part wrapped verbatim
            checked[i] = (closing is not None and i in prefixes
                          and apply_chat(tokenizer, template.render(fields), thinking=thinking)
                          == prefixes[i][0] + part + closing)
        # Each criterion's own end too, behind a short stand-in for the shared part: a template that trims its
        # content changes a rubric's trailing spaces, which the item's first criterion need not have.
        if checked[i] and apply_chat(tokenizer, probe + part, thinking=thinking) == opening + probe + part + closing:
            parts[k] = part  # the chat template's closing goes after it (chat_ids)
        else:
            whole.append(k)
    ids: list[list[int] | None] = [None] * len(pending)
    order = sorted(parts)
    if order:
        for k, part_ids in zip(order, chat_ids(tokenizer, [["", parts[k], closing or ""] for k in order])):
            ids[k] = prefixes[pending[k][0]][1] + part_ids
    if whole:
        prompts = {k: template.render(pending[k][3]) for k in whole}
        texts = [apply_chat(tokenizer, prompts[k], thinking=thinking) for k in whole]
        jobs = [(pending[k][0], pending[k][2], prompts[k]) for k in whole]
        for k, whole_ids in zip(whole, tokenize_sharing_prefixes(tokenizer, texts, jobs, known=prefixes,
                                                                 template=template, thinking=thinking)):
            ids[k] = whole_ids
    return ids  # type: ignore[return-value]


def _shared_prefixes(request: JudgeRequest, tokenizer: Any, *, thinking: bool, skip: Mapping[int, RequestError],
                     template: PromptTemplate) -> dict[int, tuple[str, list[int]]]:
    """Per item, the chat-wrapped text every criterion's prompt starts with (the chat template's opening, then the
    instruction, reference answer and answer) and its token ids, tokenized in one call before any criterion's
    prompt is rendered. ``tokenize_sharing_prefixes`` reuses the ids where a prompt starts with that text."""
    order = [i for i in range(len(request.items)) if i not in skip]
    # The template's opening, rendered once per request (a chat template writes the user's text verbatim; where it
    # did not, tokenize_sharing_prefixes finds the text differs and tokenizes the prompt's own prefix instead).
    mark = "\x00shared part\x00"
    wrapped = apply_chat(tokenizer, mark, thinking=thinking)
    opening = wrapped[: wrapped.find(mark)] if mark in wrapped else ""
    texts = [opening + template.shared_part.format(instruction=request.items[i].instruction,
                                                   answer=request.items[i].answer,
                                                   reference_answer=request.items[i].reference_answer or "")
             for i in order]
    ids = chat_ids(tokenizer, [[opening, text[len(opening):]] for text in texts])  # the request's text as text
    return {i: (text, item_ids) for i, text, item_ids in zip(order, texts, ids)}


def _items_over_budget(prefixes: Mapping[int, tuple[str, list[int]]], budget: int, max_model_len: int,
                       max_tokens: int, *, oversize: str) -> dict[int, RequestError]:
    """The items whose shared part alone is more tokens than a prompt may hold, found before any criterion's prompt
    is rendered: otherwise an answer just under ``check_sizes``' character bound, on 128 criteria, is rendered and
    chat-wrapped 128 times (hundreds of MB) before the first token count refuses it. The shared part's tokens are
    part of every criterion's prompt (its end is a pre-token boundary, ``tokenize_sharing_prefixes``): a lower
    bound of each.

    Raises:
        RequestError: the first such item, under ``oversize`` ``refuse``.
    """
    found: dict[int, RequestError] = {}
    for i, (_, ids) in prefixes.items():
        if len(ids) > budget:
            found[i] = RequestError(
                f"items[{i}]: its instruction, reference answer and answer alone are {len(ids)} tokens, more than "
                f"the {budget} prompt tokens left of the model's context of {max_model_len} (max_tokens "
                f"{max_tokens}). Shorten the answer.",
                param=f"items[{i}]",
                code="context_length_exceeded",
            )
            if oversize != "fail":
                raise found[i]
    return found


#: The pairwise comparison scale: -1 answer 1 better, 0 tie, 1 answer 2 better (demo/serve_pollux_demo.py:77-78).
PAIRWISE_SCALE = Scale((-1, 0, 1))


def build_pair_jobs(request: PairwiseRequest, tokenizer: Any, *, max_model_len: int, max_tokens: int,
                    thinking: bool, chars_per_token: int | None = None) -> list[Job]:
    """Render and tokenize every pair of a pairwise request (``judge.render_pairwise_prompt``), in request order.

    With ``chars_per_token`` (``max_token_chars``), a pair whose texts hold more characters than the prompt's tokens
    could stand for is refused before anything is rendered, as ``check_sizes`` refuses an item.

    Raises:
        RequestError: a prompt that does not fit the context, naming the pair.
    """
    if chars_per_token is not None:
        limit = (max_model_len - max_tokens) * chars_per_token
        for i, pair in enumerate(request.pairs):
            chars = len(pair.instruction) + len(pair.answer_1) + len(pair.answer_2) + len(pair.rubrics)
            if chars > limit:
                raise RequestError(
                    f"pairs[{i}]: {chars} characters of instruction, answers and rubrics cannot fit the "
                    f"{max_model_len - max_tokens} prompt tokens left of the model's context of {max_model_len} "
                    f"(max_tokens {max_tokens}); at most {limit} characters.",
                    param=f"pairs[{i}]", code="context_length_exceeded",
                )  # fmt: skip
    prompts = [render_pairwise_prompt(pair) for pair in request.pairs]
    texts = [apply_chat(tokenizer, prompt, thinking=thinking) for prompt in prompts]
    opening, closing = _wrapping(tokenizer, thinking) if texts else (None, None)
    # The answers' special-token strings are text (chat_ids): no answer can end the turn and write the judge's.
    all_ids = chat_ids(tokenizer, [chat_parts(text, prompt, opening, closing) for text, prompt in zip(texts, prompts)])
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

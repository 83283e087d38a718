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
   own special tokens are special, so an answer cannot end the user's turn and write the judge's
   (``serve.chat_tokens``).
2. **Prefix-friendly order.** The criteria of one (instruction, reference, answer) share every token up to
   ``### Критерий оценки:``. Jobs are grouped by that prefix and sent group by group (``serve.judging``), so
   siblings land in the same scheduler steps, where vLLM's prefix cache computes the shared blocks once.
3. **Before classifying.** For a request with ``"criteria": "auto"`` items, ``plan_jobs`` makes every refusal that
   needs no classifier's choice and builds the other items' jobs; ``JobPlan.complete`` adds the classified items'
   once the classifier has chosen. ``build_jobs`` is both in one call.

A pairwise request becomes one job per pair on ``PAIRWISE_SCALE`` (``build_pair_jobs``); a pair too long for the
context follows the request's ``oversize`` as an item does (``check_pair_sizes`` for its characters).

Why one module of ~555 lines: every size check a request meets before the engine (characters, the shared part's
tokens, each prompt's) reads the same items in one pass and words its refusal alike; apart, they would drift.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judge import apply_chat, prefix_key, prefix_order
from judge.scales import PAIRWISE_SCALE
from judge.criteria_auto import TaskChoice
from judge.prompts import POLLUX_PROMPT, PromptTemplate, render_pairwise_prompt
from judge.wire import PAIRWISE_CRITERION, PairwiseRequest, context_words
from judge.chat_tokens import chat_ids, chat_parts, template_wrapping
from serve.chat_tokens import tokenize_sharing_prefixes
from serve.schema import JudgeRequest, RequestError, ResolvedCriterion, named_as_sent, resolve_criteria

__all__ = ["Job", "JobPlan", "build_jobs", "check_criteria", "plan_jobs", "build_pair_jobs", "PAIRWISE_SCALE",
           "check_pair_sizes", "check_sizes", "max_token_chars", "refuse_over_bound"]


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
        own_ids: the chat-wrapped prompt's token ids after ``prefix_ids``: the criterion's own part and the chat
            template's closing (all of them, where nothing is shared).
        too_long: with ``oversize`` ``fail``: why the prompt cannot fit the context (the refusal's message); such
            a job is answered as a failed result and never sent.
        template: the pointwise template ``text``'s fields are rendered with.
        prefix_ids: the ids the item's criteria share (the chat template's opening, the instruction, answer and
            reference), one list per item that every job of it holds, not a copy each. Jobs wait for the engine
            up to the request's timeout: a copy of the prefix per criterion holds many times what one shared list
            does (docs/performance.md, the row on a request's jobs); the whole prompt (``prompt_ids``) is made only
            when it is sent.
    """

    item: int
    slot: int
    criterion: ResolvedCriterion
    text: str | Mapping[str, str]
    own_ids: list[int]
    too_long: str | None = None
    template: PromptTemplate = POLLUX_PROMPT
    prefix_ids: Sequence[int] = ()

    @property
    def prompt_ids(self) -> list[int]:
        """The chat-wrapped prompt's token ids, as sent to vLLM (a new list at each call)."""
        return [*self.prefix_ids, *self.own_ids]

    @property
    def n_prompt_tokens(self) -> int:
        return len(self.prefix_ids) + len(self.own_ids)

    @property
    def prompt(self) -> str:
        """The rendered prompt (no chat wrapping); "" for a job never rendered (too long)."""
        return self.text if isinstance(self.text, str) else self.template.render(self.text)


def _named(name: str, limit: int = 80) -> str:
    """A criterion's name for a message: a client's custom name may be megabytes long."""
    return repr(name) if len(name) <= limit else f"{name[:limit]!r}... [{len(name)} characters]"


def _longest_part(item: Any, criterion_chars: int = 0) -> str:
    """The longest part of an over-long item the client wrote (the answer on a tie; a taxonomy criterion's rubric is
    none): ``answer``, ``instruction``, ``reference answer`` or ``criterion's rubric``."""
    parts = {"answer": len(item.answer), "instruction": len(item.instruction),
             "reference answer": len(item.reference_answer or ""), "criterion's rubric": criterion_chars}
    return max(parts, key=parts.__getitem__)


def _shorten(item: Any, criterion_chars: int = 0) -> str:
    """An over-long item's remedy naming its longest part (``_longest_part``), not always "Shorten the answer"."""
    return f"Shorten the {_longest_part(item, criterion_chars)}"


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
        RequestError: naming the item (``items[i]``), or the custom criterion whose rubric is its longest part
            (the part to shorten, ``_longest_part``), with ``context_length_exceeded`` (``oversize`` ``refuse``).
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
        if _longest_part(item, extra) != "criterion's rubric":
            where = f"items[{i}]"  # the item's own text is what to shorten, whichever criterion it is judged on
        if chars + extra > limit:
            too_long[i] = RequestError(
                f"{where}: {chars + extra} characters of instruction, answer, reference and criterion cannot fit the "
                f"{budget} prompt tokens left of the model's context of {max_model_len} (max_tokens {max_tokens}); "
                f"at most {limit} characters. {_shorten(item, extra)}.",
                param=where,
                code="context_length_exceeded",
            )
            if oversize != "fail":
                raise too_long[i]
    return too_long


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
        refuse_over_bound(sum(len(c) for c in self.resolved if c is not None) + sum(len(c) for _, c in chosen),
                     self.max_judgments)
        every = sorted([*self.jobs, *_judgments(self, chosen)], key=lambda job: (job.item, job.slot))
        sent = [job for job in every if job.item not in self.too_long]
        skipped = [job for job in every if job.item in self.too_long]  # never rendered: last, in request order
        return [sent[k] for k in prefix_order([prefix_key(self.request.items[job.item]) for job in sent])] + skipped

    def refuse_over_bound_while_classifying(self, chosen: int, n_classified: int) -> None:
        """A 400 naming ``items`` once the criteria chosen for the first ``n_classified`` of the ``"auto"`` items
        (``chosen`` in all) take the request past ``max_judgments``: what ``complete`` would refuse after every item
        was classified, said before the items after them are (their criteria can only add to the count).

        Raises:
            RequestError: the judgments counted so far, above ``max_judgments``.
        """
        total = sum(len(c) for c in self.resolved if c is not None) + chosen
        if n_classified == len(self.to_classify) or self.max_judgments is None or total <= self.max_judgments:
            return  # every item classified: ``complete`` counts them, in its own words
        raise RequestError(
            f"items: at least {total} (item, criterion) judgments requested, counted once {n_classified} of its "
            f"{len(self.to_classify)} \"auto\" items were classified; this server takes at most {self.max_judgments} "
            "per request. Split the batch.",
            param="items",
        )


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
    # kept as the results' error_reason under "oversize": "fail": an inline body's named as it was sent
    over_budget = _items_over_budget(request, prefixes, budget, max_model_len, max_tokens, oversize=oversize)
    too_long.update({i: named_as_sent(error, request) for i, error in over_budget.items()})
    # An "auto" item too long for the context is that item's failure, as any too long item is, never the request's
    # refusal; it is not classified (a classifier would read the text that cannot fit). It stands on the criteria a
    # failed choice gives (those that apply to any text), each a failed result.
    unclassified = {i: TaskChoice.failed("too long for the judge's context: not classified", "none")
                    for i in too_long if resolved[i] is None}
    for i, choice in unclassified.items():
        resolved[i] = tuple(resolve_criteria(request.items[i], i, choice))
    refuse_over_bound(sum(len(c) for c in resolved if c is not None), max_judgments)
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
    refuse_over_bound(sum(len(item.criteria) for item in request.items if isinstance(item.criteria, list)), max_judgments)
    stand_in = TaskChoice.failed("a stand-in before classifying", "plan_jobs") if classifying else None
    resolved: list[tuple[ResolvedCriterion, ...] | None] = []
    for i, item in enumerate(request.items):
        criteria = resolve_criteria(item, i, stand_in if item.criteria == "auto" else None)
        resolved.append(None if item.criteria == "auto" else tuple(criteria))
    refuse_over_bound(sum(len(c) for c in resolved if c is not None), max_judgments)
    return resolved


def refuse_over_bound(total: int, max_judgments: int | None) -> None:
    """A 400 naming ``items`` when ``total`` judgments exceed the server's ``max_judgments`` per request."""
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
    for (i, j, crit, fields), (prefix_ids, ids) in zip(pending, all_ids):
        n_ids = len(prefix_ids) + len(ids)
        if n_ids > budget:
            item = plan.request.items[i]
            where = f"items[{i}]" if item.criteria is None or item.criteria == "auto" else f"items[{i}].criteria[{j}]"
            error = named_as_sent(RequestError(  # a failed result's error_reason too: an inline body's fields as sent
                f"{where}: the prompt for criterion {_named(crit.name)} "
                f"{context_words(n_ids, plan.max_tokens, plan.max_model_len, plan.reserve)}. "
                f"{_shorten(item, 0 if crit.id else len(crit.name) + len(crit.rubrics))} or ask for fewer max_tokens.",
                param=where,
                code="context_length_exceeded",
            ), plan.request)
            if plan.oversize != "fail":
                raise error
            jobs.append(Job(i, j, crit, fields, [], too_long=error.message, template=plan.template))
            continue
        jobs.append(Job(i, j, crit, fields, ids, template=plan.template, prefix_ids=prefix_ids))
    return jobs


def _criteria_ids(tokenizer: Any, pending: list[tuple[int, int, ResolvedCriterion, dict[str, str]]],
                  prefixes: Mapping[int, tuple[str, list[int]]], *, thinking: bool,
                  template: PromptTemplate) -> list[tuple[Sequence[int], list[int]]]:
    """Each pending judgment's chat-wrapped prompt ids as ``(shared prefix, own ids)``, without rendering any whole
    prompt but one per item.

    An item's shared part is tokenized already (``_shared_prefixes``); each criterion adds only its own part and the
    chat template's closing, tokenized in one batch, and the ids are the prefix's (the item's one list, not copied:
    ``Job.prefix_ids``) then the part's (the split is a pre-token boundary: ``tokenize_sharing_prefixes``). One whole prompt per item is rendered and compared, so an
    item whose chat template does not wrap the prompt verbatim goes the whole-text way (``tokenize_sharing_prefixes``).
    """
    opening, closing = template_wrapping(tokenizer, thinking)
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
    ids: list[tuple[Sequence[int], list[int]] | None] = [None] * len(pending)
    order = sorted(parts)
    if order:
        for k, part_ids in zip(order, chat_ids(tokenizer, [["", parts[k], closing or ""] for k in order])):
            ids[k] = (prefixes[pending[k][0]][1], part_ids)
    if whole:
        prompts = {k: template.render(pending[k][3]) for k in whole}
        texts = [apply_chat(tokenizer, prompts[k], thinking=thinking) for k in whole]
        jobs = [(pending[k][0], pending[k][2], prompts[k]) for k in whole]
        for k, whole_ids in zip(whole, tokenize_sharing_prefixes(tokenizer, texts, jobs, known=prefixes,
                                                                 template=template, thinking=thinking)):
            ids[k] = ((), whole_ids)
    return ids  # type: ignore[return-value]


def _shared_prefixes(request: JudgeRequest, tokenizer: Any, *, thinking: bool, skip: Mapping[int, RequestError],
                     template: PromptTemplate) -> dict[int, tuple[str, list[int]]]:
    """Per item, the chat-wrapped text every criterion's prompt starts with (the chat template's opening, then the
    instruction, reference answer and answer) and its token ids, tokenized in one call before any criterion's
    prompt is rendered. ``tokenize_sharing_prefixes`` reuses the ids where a prompt starts with that text."""
    order = [i for i in range(len(request.items)) if i not in skip]
    # The template's opening, rendered once per request (a chat template writes the user's text verbatim; where it
    # did not, tokenize_sharing_prefixes finds the text differs and tokenizes the prompt's own prefix instead).
    opening = template_wrapping(tokenizer, thinking)[0] or ""
    texts = [opening + template.shared_part.format(instruction=request.items[i].instruction,
                                                   answer=request.items[i].answer,
                                                   reference_answer=request.items[i].reference_answer or "")
             for i in order]
    ids = chat_ids(tokenizer, [[opening, text[len(opening):]] for text in texts])  # the request's text as text
    return {i: (text, item_ids) for i, text, item_ids in zip(order, texts, ids)}


def _items_over_budget(request: JudgeRequest, prefixes: Mapping[int, tuple[str, list[int]]], budget: int,
                       max_model_len: int, max_tokens: int, *, oversize: str) -> dict[int, RequestError]:
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
                f"{max_tokens}). {_shorten(request.items[i])}.",
                param=f"items[{i}]",
                code="context_length_exceeded",
            )
            if oversize != "fail":
                raise found[i]
    return found


def check_pair_sizes(request: PairwiseRequest, *, max_model_len: int, max_tokens: int, chars_per_token: int,
                     oversize: str = "refuse") -> dict[int, RequestError]:
    """Refuse a pair whose texts hold more characters than the prompt's tokens could stand for, before anything is
    rendered: ``check_sizes``' bound for pairs, which ``serve.judging.Judge.check`` asks before the engines' health.

    Returns:
        With ``oversize`` ``fail``: the refusal each such pair would have got, by pair index (none: empty).

    Raises:
        RequestError: naming the pair, ``context_length_exceeded`` (``oversize`` ``refuse``).
    """
    limit = (max_model_len - max_tokens) * chars_per_token
    too_long: dict[int, RequestError] = {}
    for i, pair in enumerate(request.pairs):
        chars = len(pair.instruction) + len(pair.answer_1) + len(pair.answer_2) + len(pair.rubrics)
        if chars > limit:
            too_long[i] = RequestError(
                f"pairs[{i}]: {chars} characters of instruction, answers and rubrics cannot fit the "
                f"{max_model_len - max_tokens} prompt tokens left of the model's context of {max_model_len} "
                f"(max_tokens {max_tokens}); at most {limit} characters.",
                param=f"pairs[{i}]", code="context_length_exceeded",
            )  # fmt: skip
            if oversize != "fail":
                raise too_long[i]
    return too_long


def build_pair_jobs(request: PairwiseRequest, tokenizer: Any, *, max_model_len: int, max_tokens: int,
                    thinking: bool, chars_per_token: int | None = None, oversize: str = "refuse",
                    too_long: Mapping[int, RequestError] | None = None) -> list[Job]:
    """Render and tokenize every pair of a pairwise request (``judge.render_pairwise_prompt``), in request order.

    With ``chars_per_token`` (``max_token_chars``), a pair whose texts hold more characters than the prompt's tokens
    could stand for is refused before anything is rendered, as ``check_sizes`` refuses an item.

    Args:
        oversize: ``refuse`` (raise on a prompt that cannot fit) or ``fail`` (mark its job ``too_long``).
        too_long: ``check_pair_sizes``' answer under ``fail``, when the caller asked it already: those pairs are
            never rendered (``chars_per_token`` then asks nothing again).

    Raises:
        RequestError: a prompt that does not fit the context, naming the pair (``oversize`` ``refuse``).
    """
    if too_long is None:
        too_long = (check_pair_sizes(request, max_model_len=max_model_len, max_tokens=max_tokens,
                                     chars_per_token=chars_per_token, oversize=oversize)
                    if chars_per_token is not None else {})
    rendered = [i for i in range(len(request.pairs)) if i not in too_long]
    prompts = [render_pairwise_prompt(request.pairs[i]) for i in rendered]
    texts = [apply_chat(tokenizer, prompt, thinking=thinking) for prompt in prompts]
    opening, closing = template_wrapping(tokenizer, thinking) if texts else (None, None)
    # The answers' special-token strings are text (chat_ids): no answer can end the turn and write the judge's.
    parts = [chat_parts(text, prompt, opening, closing) for text, prompt in zip(texts, prompts)]
    all_ids = chat_ids(tokenizer, parts) if parts else []  # every pair too long: the tokenizer is never asked
    built = {}
    for i, prompt, ids in zip(rendered, prompts, all_ids):
        if len(ids) + max_tokens > max_model_len:
            error = RequestError(
                f"pairs[{i}]: the prompt {context_words(len(ids), max_tokens, max_model_len)}.",
                param=f"pairs[{i}]", code="context_length_exceeded",
            )  # fmt: skip
            if oversize != "fail":
                raise error
            built[i] = Job(i, 0, _pair_criterion(request, i), "", [], too_long=error.message)
            continue
        built[i] = Job(i, 0, _pair_criterion(request, i), prompt, ids)
    for i, error in too_long.items():  # never rendered
        built[i] = Job(i, 0, _pair_criterion(request, i), "", [], too_long=error.message)
    return [built[i] for i in range(len(request.pairs))]


def _pair_criterion(request: PairwiseRequest, i: int) -> ResolvedCriterion:
    """Pair ``i``'s judgment's criterion: the comparison scale's text, criterion included, on ``PAIRWISE_SCALE``."""
    return ResolvedCriterion(PAIRWISE_CRITERION, request.pairs[i].rubrics, PAIRWISE_SCALE, None)

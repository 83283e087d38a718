"""The GRPO recipe's rewards: trl reward functions that read a policy judge's verdict and compare it with the experts.

trl's ``GRPOTrainer`` calls every reward function once per batch with keyword arguments: ``prompts``,
``completions`` (the generated texts), ``completion_ids``, every column of the training dataset as a list with one
value per completion, and ``log_metric`` (trl/trainer/grpo_trainer.py ``_calculate_rewards``, trl 1.16). A function
returns one float per completion, or None where it does not apply: trl turns None into NaN and leaves it out of that
reward's logged mean (``rewards/<name>/mean``) and of the weighted sum.

The columns read here are built by ``train.grpo.grpo_rows``:

- ``verdict_format``  ``tagged`` or ``integer`` (``judge.VerdictFormat``): which of judge-serve's parsers reads it;
- ``scale_levels``, ``scale_best``  the criterion's scale (``judge.oriented_scale``);
- ``reference_scores``  the experts' mode, or, for an item whose experts have no unique mode, what the recipe's
  ``no_unique_mode`` rule made of it: every tied mode (``nearest``) or nothing (``skip``: agreement None).

Each completion is read as the continuation of its prompt: where the chat template opened the reasoning in the prompt
(a generation prompt ending in ``<think>\n``: Qwen3 Thinking-2507, the R1 distills;
``judge.rewards.prompt_opens_reasoning``, the rule the policy-reward endpoints apply), a completion with no
``</think>`` was cut inside that reasoning and holds no verdict, whatever integer it ends with. A completion whose
``completion_ids`` end on none of the end-of-sequence ids the recipe binds (``end_token_ids``: trl's own rule for a
completion cut by ``max_completion_length``, its ``completions/clipped_ratio``) was stopped by the length limit, and
is read as judge-serve and judge-eval read an output vLLM stopped with finish_reason "length"
(``judge.verdicts.read_served_verdict``, one reader for every stage): an integer is wherever the cut fell, not a
verdict (the traces stage fails a teacher's answer stopped by ``max_tokens`` as ``verdict_cut`` for the same reason);
a tagged ``[RESULT] n [END]`` written whole before the cut stands, but one followed by text that opens no verdict
was a draft still being written, and a score the cut may have shortened (the "1" of a 0..10 scale's "10") fails.
Called without the end ids (outside the trainer), no cut can be told and none is assumed. Both rules, a completion's
text (a conversational one's last assistant turn, its typed text parts joined) and its cut (an empty id list ended in
no end id: cut), are ``judge.rewards.completion_text`` and ``judge.rewards.cut_completions``, which the trl judge
client reads by too.

A verdict that does not parse is a failure, never a score: it earns 0 from both rewards, as one off the scale or
between two of its levels does, and their shares are logged per step as ``verdicts/failed_share``,
``verdicts/out_of_scale_share`` and ``verdicts/between_levels_share`` by either reward (so a config with
``agreement_reward`` alone still counts them; trl averages what both log for one batch, the same shares). A scored
verdict without reasons (fewer than ``judge.verdicts.MIN_RATIONALE_WORDS`` words of reasoning or ``[FEEDBACK]``:
``judge.verdicts.gives_reasons``, the rule the traces stage and the training rows apply) earns 0 from
``format_reward`` (``verdicts/no_reasoning_share``). The reward functions are named in the config
(``rewards: {format_reward: 1.0, agreement_reward: 1.0}``) by the names in :data:`REWARDS`, which are also the names
trl logs them under.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from numbers import Real
from typing import Any

from judge.rewards import completion_reasoning, completion_text, cut_completions, prompt_opens_reasoning
from judge.scales import Scale, ScaleError
from judge.verdicts import (Verdict, VerdictError, VerdictFormat, bare_answer, bare_tagged_answer,
                            gives_reasons, has_think_tag, read_served_verdict)

__all__ = ["REWARDS", "read_verdict", "format_reward", "agreement_reward", "agreement", "CUT"]

#: The failure of a verdict whose completion the length limit stopped before its end-of-sequence token.
CUT = VerdictError.CUT


def read_verdict(completion: str, verdict_format: str, scale_levels: Sequence[int], scale_best: int, *,
                 prompt: Any = None, cut: bool = False) -> Verdict:  # fmt: skip
    """A completion read as judge-serve reads that format (strictly: a cut ``[END]`` or ``</think>`` fails).

    Args:
        completion: the generated text (trl decodes it without special tokens; ``<think>`` is not special).
        verdict_format: ``tagged`` or ``integer``.
        scale_levels, scale_best: the criterion's scale.
        prompt: the text the completion continues; when it ends inside a ``<think>`` it opened, the completion is
            read after that ``<think>`` (a completion without ``</think>`` then fails as ``unclosed_think``).
        cut: the length limit stopped the completion, read as judge-serve reads vLLM's finish_reason "length": an
            integer verdict fails as :data:`CUT`; a tagged one whose ``[RESULT] n [END]`` was written whole stands,
            unless text that opens no verdict follows its ``[END]`` (a draft: :data:`CUT`).
    """
    scale = Scale(tuple(int(level) for level in scale_levels), best=int(scale_best))
    return _verdict_of(_read_text(completion, prompt), verdict_format, scale, cut)


def _verdict_of(text: str, verdict_format: str, scale: Scale, cut: bool) -> Verdict:
    """The verdict of a completion's read text (:func:`_read_text`), by the reader of every served route
    (``judge.verdicts.read_served_verdict``), with trl's cut as the engine's finish_reason "length"."""
    return read_served_verdict(verdict_format, text, scale=scale, finish_reason="length" if cut else "stop")


def _opens_reasoning(prompt: Any) -> bool:
    """Whether the prompt a completion continues ends inside a ``<think>`` its chat template opened."""
    return isinstance(prompt, str) and prompt_opens_reasoning(prompt)


def _read_text(completion: Any, prompt: Any) -> str:
    """The completion as its verdict is read: after the ``<think>`` its prompt opened, where it opened one."""
    text = completion_text(completion)
    return "<think>\n" + text if _opens_reasoning(prompt) else text


def _read_texts(completions: Sequence[Any], prompts: Sequence[Any] | None) -> list[str]:
    """Every completion's read text (:func:`_read_text`), once: the verdict and the bare-answer check read the same
    string."""
    prompts = prompts if prompts is not None else [None] * len(completions)
    return [_read_text(c, p) for c, p in zip(completions, prompts, strict=True)]


def _verdicts(texts: Sequence[str], verdict_format: Sequence[str], scales: Sequence[Scale],
              completion_ids: Sequence[Sequence[int]] | None,
              end_token_ids: Collection[int] | None) -> list[Verdict]:  # fmt: skip
    """Every completion's verdict from its read text (:func:`_read_texts`), failed when cut (:func:`read_verdict`)."""
    cut = cut_completions(completion_ids, end_token_ids, len(texts))  # all False without the end ids
    return [_verdict_of(t, f, scale, k) for t, f, scale, k in zip(texts, verdict_format, scales, cut, strict=True)]


def _scored(verdict: Verdict, levels: Sequence[int]) -> bool:
    """A verdict with a score on one of the rubric's levels: a 1.5 on 0..2 hedges between two points, which the
    prompt rules out, and is no well-formed verdict (nor one ``agreement`` pays for)."""
    return verdict.ok and bool(verdict.in_scale) and verdict.score in levels


def agreement(score: float, references: Sequence[float], scale_levels: Sequence[int]) -> float:
    """``1 - |score - reference| / (max - min)``, the best over ``references`` (one unless the experts tie).

    Linear in the distance, 1 for the experts' score and 0 at the scale's far end (a 0..2 criterion: 1, 0.5, 0).
    """
    span = max(scale_levels) - min(scale_levels)
    return max(1.0 - abs(score - reference) / span for reference in references)


def _answers_as_trained(verdict_format: str, text: str, verdict: Verdict, opened: bool) -> bool:
    """Whether a completion is an answer of the form the steps before GRPO trained on. Integer format: one
    reasoning block, then a bare integer (``judge.verdicts.bare_answer``: "Оценка 1 из 2" reads as 2 whatever the
    reasoning reached), no ``<think>`` inside the reasoning (``judge.verdicts.has_think_tag``); the traces stage
    and the integer-format rows drop any other answer. Tagged format: one ``[FEEDBACK] ... [RESULT] n [END]`` with
    only whitespace around it (``judge.verdicts.bare_tagged_answer``: the parser reads "[FEEDBACK] ... [RESULT] 2
    [END] а вообще 0" as 2), as build-data's targets are; where the prompt opened the reasoning (``opened``: a
    thinking-always template, which renders a tagged target after an empty reasoning block), that block after the
    reasoning's ``</think>``, with one reasoning block before it (``bare_tagged_answer(..., reasoning=True)``): read
    whole, every such completion would start with the ``<think>`` put back in front of it and none could earn the
    reward. Rewarded here as well-formed, any other answer would let RL drift from the format SFT taught; its
    verdict is still read as judge-serve reads it, for agreement."""
    if verdict_format == VerdictFormat.INTEGER:
        return bare_answer(text) and not has_think_tag(verdict.feedback or "")
    return bare_tagged_answer(text, reasoning=opened)


def format_reward(completions: Sequence[Any], verdict_format: Sequence[str], scale_levels: Sequence[Sequence[int]],
                  scale_best: Sequence[int], log_metric: Callable[[str, float], None] | None = None,
                  prompts: Sequence[Any] | None = None, completion_ids: Sequence[Sequence[int]] | None = None,
                  end_token_ids: Collection[int] | None = None, **columns: Any) -> list[float]:  # fmt: skip
    """1.0 for a verdict that parses, is one of the rubric's levels, gives its reasons (a reasoning, or
    ``[FEEDBACK]`` text, of at least ``judge.verdicts.MIN_RATIONALE_WORDS`` words:
    ``judge.verdicts.gives_reasons``) and, in the integer format, answers with a bare integer after one reasoning
    block, or, in the tagged format, is one ``[FEEDBACK] ... [RESULT] n [END]`` block with only whitespace around it, after the one reasoning block its prompt opened
    where it opened one (:func:`_answers_as_trained`), else 0.0. A
    bare score, or ``<think>.</think>2``, is no well-formed verdict: the traces stage keeps no such trace, and
    rewarding one as well-formed would let the policy learn to stop thinking (its score still earns
    ``agreement_reward``). Nor is ``<think>…</think>Оценка 1 из 2``, read as 2, or ``[FEEDBACK] … [RESULT] 2 [END]
    а вообще 0``. The reasoning's language is not
    checked here (the integer-format rows' ``min_russian_share`` is): ``verdicts/`` metrics do not show a drift
    to another language.

    Also logs, per generation batch, the share of completions whose verdict failed to parse
    (``verdicts/failed_share``), the share that parsed to a number off the scale (``verdicts/out_of_scale_share``)
    or between two of its levels (``verdicts/between_levels_share``), the share of scored verdicts without
    reasons (``verdicts/no_reasoning_share``), and the share of scored verdicts with reasons whose answer is not
    of the trained form (``verdicts/answer_not_bare_share``: integer, not a bare integer after one reasoning block;
    tagged, text around the one ``[FEEDBACK] ... [END]`` block, or more than one block).

    Each row's scale is checked before any verdict is read (:func:`_checked_scales`): ``scale_levels`` that are no
    list of at least two distinct ascending integers, or a ``scale_best`` that is no end of them, is a
    ``ValueError`` naming the row (its ``id`` column where the dataset has one, else its place in the batch) and
    the column.

    Args:
        completions: the generated texts; ``verdict_format``, ``scale_levels`` and ``scale_best`` are dataset
            columns, one value per completion.
        log_metric: trl's per-step metric hook (absent when called outside the trainer).
        prompts, completion_ids: what trl passes with the completions: the prompt each continues, and its token ids.
        end_token_ids: the ids that end a finished completion (``train.grpo.completion_end_ids``, bound by the
            recipe); None: cuts are not told.
    """
    scales = _checked_scales("format_reward", scale_levels, scale_best, len(completions), columns.get("id"))
    scale_levels = [scale.levels for scale in scales]
    texts = _read_texts(completions, prompts)
    # A reasoning trl parsed apart and completion_text put back opened a block as a thinking prompt's does: the
    # tagged answer after it reads as after the reasoning such a prompt opened (``_answers_as_trained``), whoever
    # opened it (the message cannot say; read alone, the content was the answer, and was paid as one).
    opened = [_opens_reasoning(p) or completion_reasoning(c) is not None
              for c, p in zip(completions, prompts if prompts is not None else [None] * len(texts), strict=True)]
    verdicts = _verdicts(texts, verdict_format, scales, completion_ids, end_token_ids)
    reasoned = [_scored(v, levels) and gives_reasons(v.feedback) for v, levels in zip(verdicts, scale_levels)]
    as_trained = [r and _answers_as_trained(f, t, v, o)
                  for r, f, t, v, o in zip(reasoned, verdict_format, texts, verdicts, opened, strict=True)]  # fmt: skip
    if log_metric is not None and verdicts:
        _log_failure_shares(log_metric, verdicts, scale_levels)
        log_metric("verdicts/no_reasoning_share",
                   sum(_scored(v, levels) and not gives_reasons(v.feedback)
                       for v, levels in zip(verdicts, scale_levels)) / len(verdicts))
        log_metric("verdicts/answer_not_bare_share",
                   sum(r and not t for r, t in zip(reasoned, as_trained)) / len(verdicts))
    return [1.0 if ok else 0.0 for ok in as_trained]


def agreement_reward(completions: Sequence[Any], verdict_format: Sequence[str], scale_levels: Sequence[Sequence[int]],
                     scale_best: Sequence[int], reference_scores: Sequence[Sequence[float]],
                     log_metric: Callable[[str, float], None] | None = None, prompts: Sequence[Any] | None = None,
                     completion_ids: Sequence[Sequence[int]] | None = None,
                     end_token_ids: Collection[int] | None = None, **columns: Any) -> list[float | None]:  # fmt: skip
    """How close the verdict is to the experts: :func:`agreement`, 0.0 for a failed, out-of-scale or between-levels
    verdict, None for an item with no reference score (experts without a unique mode under ``no_unique_mode: skip``).

    Each row's scale, as :func:`format_reward` checks it, and ``reference_scores`` are checked before any verdict is
    read (:func:`_checked_references`): a row whose references are not a list of the criterion's levels is refused
    with a ``ValueError`` naming the row (its ``id`` column where the dataset has one, else its place in the batch). ``train.grpo.grpo_rows`` writes only levels;
    a dataset made by hand could pay a negative reward for a reference off the scale, or read a bare ``0`` as "no
    reference".

    Also logs the shares of the verdicts it pays 0 for, as ``format_reward`` does (``verdicts/failed_share``,
    ``verdicts/out_of_scale_share``, ``verdicts/between_levels_share``): a config may name this reward alone, and
    its failures must still be counted (both log the same shares of one batch, which trl averages). The arguments
    are :func:`format_reward`'s and ``reference_scores`` (a dataset column).
    """
    scales = _checked_scales("agreement_reward", scale_levels, scale_best, len(completions), columns.get("id"))
    scale_levels = [scale.levels for scale in scales]
    reference_scores = _checked_references(reference_scores, scale_levels, len(completions), columns.get("id"))
    verdicts = _verdicts(_read_texts(completions, prompts), verdict_format, scales, completion_ids, end_token_ids)
    if log_metric is not None and verdicts:
        _log_failure_shares(log_metric, verdicts, scale_levels)
    rewards: list[float | None] = []
    for verdict, levels, references in zip(verdicts, scale_levels, reference_scores, strict=True):
        if not references:
            rewards.append(None)
        else:
            rewards.append(agreement(verdict.score, references, levels) if _scored(verdict, levels) else 0.0)
    return rewards


def _row(i: int, ids: Sequence[Any] | None) -> str:
    """Row ``i`` of a batch as an error names it: by its ``id`` column where the dataset has one, else its place."""
    return f"the row with id {ids[i]!r}" if ids is not None and i < len(ids) else f"row {i} of the batch"


def _is_list(value: Any) -> bool:
    """Whether a cell is a list of values: a string would iterate into characters, and a 0-d numpy array, which has
    ``__iter__``, into a TypeError."""
    return (not isinstance(value, (str, bytes, Mapping)) and hasattr(value, "__iter__")
            and getattr(value, "ndim", 1) != 0)


def _is_integer(value: Any) -> bool:
    """Whether a cell is an integer: a numpy one, or a float holding one (a column Arrow read as doubles), too; a bool
    is none, though True == 1."""
    return not isinstance(value, bool) and isinstance(value, Real) and math.isfinite(value) and value == int(value)


def _check_column(reward: str, name: str, column: Any, n: int, each: str) -> None:
    """Refuse a dataset column that holds no value per completion (``n``), naming it and what it holds for each
    (``each``: "one list", "one integer")."""
    sized = (not isinstance(column, (str, bytes, Mapping)) and hasattr(column, "__len__")
             and getattr(column, "ndim", 1) != 0)  # a 0-d array has __len__, which raises
    if not sized or len(column) != n:
        got = len(column) if sized else type(column).__name__
        raise ValueError(f"{reward}: {name} must be a column with {each} per completion ({n}); got {got}")


def _checked_scales(reward: str, scale_levels: Any, scale_best: Any, n: int, ids: Sequence[Any] | None) -> list[Scale]:
    """Each completion's criterion scale, its row's ``Scale(scale_levels, best=scale_best)``, or a ``ValueError``
    naming ``reward``, the first bad row and its column: a column of another length than the completions, levels
    that are no list of integers, not distinct and ascending, or fewer than two (no span: ``agreement`` would divide
    by 0), a best that is no integer or no end of the levels."""
    _check_column(reward, "scale_levels", scale_levels, n, "one list")
    _check_column(reward, "scale_best", scale_best, n, "one integer")
    scales: list[Scale] = []
    for i, (levels, best) in enumerate(zip(scale_levels, scale_best)):
        if not _is_list(levels) or not all(_is_integer(level) for level in levels):
            raise ValueError(f"{reward}: scale_levels of {_row(i, ids)} must be a list of integer levels, got "
                             f"{levels if not _is_list(levels) else list(levels)!r}")
        try:
            scale = Scale(tuple(int(level) for level in levels))
        except ScaleError as err:
            raise ValueError(f"{reward}: scale_levels of {_row(i, ids)}: {err}") from None
        if len(scale.levels) < 2:
            raise ValueError(f"{reward}: scale_levels of {_row(i, ids)} must hold at least two levels, got "
                             f"{list(scale.levels)}")
        if not _is_integer(best):
            raise ValueError(f"{reward}: scale_best of {_row(i, ids)} must be an integer level, got {best!r}")
        if int(best) not in (scale.levels[0], scale.levels[-1]):
            raise ValueError(f"{reward}: scale_best of {_row(i, ids)} must be an end of its scale_levels "
                             f"{list(scale.levels)}, got {best!r}")
        scales.append(Scale(scale.levels, best=int(best)))
    return scales


def _checked_references(reference_scores: Any, scale_levels: Sequence[Sequence[int]], n: int,
                        ids: Sequence[Any] | None) -> list[list[float]]:
    """``reference_scores`` as one list of the criterion's levels per completion (empty or null: no reference), or a
    ``ValueError`` naming the first bad row: a column of another length than the completions, a row that is no
    list (a bare ``2`` would read as ten references if a string, or fail deep in the reward), a reference that is no
    number, or one that is not a level of the row's ``scale_levels`` (checked by :func:`_checked_scales`; its reward
    would go below 0 or above 1)."""
    _check_column("agreement_reward", "reference_scores", reference_scores, n, "one list")
    out: list[list[float]] = []
    for i, (references, levels) in enumerate(zip(reference_scores, scale_levels)):
        if references is None:  # a null list cell (Arrow, a JSON null): no reference, as []
            out.append([])
            continue
        if not _is_list(references):
            raise ValueError(f"agreement_reward: reference_scores of {_row(i, ids)} must be a list of the criterion's "
                             f"levels (empty: no reference), got {references!r}")
        for reference in references:
            if isinstance(reference, bool) or not isinstance(reference, Real) or reference not in levels:
                raise ValueError(f"agreement_reward: reference_scores of {_row(i, ids)} holds {reference!r}, not a "
                                 f"level of its scale_levels {list(levels)}")
        out.append([float(reference) for reference in references])
    return out


def _log_failure_shares(log_metric: Callable[[str, float], None], verdicts: Sequence[Verdict],
                        scale_levels: Sequence[Sequence[float]]) -> None:
    """The shares of one batch's verdicts that both rewards pay 0 for: failed to parse, off the scale, between two of
    its levels."""
    n = len(verdicts)
    log_metric("verdicts/failed_share", sum(not v.ok for v in verdicts) / n)
    log_metric("verdicts/out_of_scale_share", sum(v.ok and v.in_scale is False for v in verdicts) / n)
    log_metric("verdicts/between_levels_share",
               sum(v.ok and bool(v.in_scale) and v.score not in levels
                   for v, levels in zip(verdicts, scale_levels)) / n)


#: Reward name (as configs spell it and trl logs it) -> function.
REWARDS: dict[str, Callable[..., list]] = {"format_reward": format_reward, "agreement_reward": agreement_reward}

"""From verdicts to a reward, as data: one ``RewardRule`` turns a sample's ``/v1/judge`` results into one number.

The rule, step by step (``reward_of``):

1. **Each criterion to 0-1, best at 1.** A score is placed on its rubric's scale by ``normalised``:
   ``(score - worst) / (best - worst)``, with the scale oriented as the contract orients it (``judge.Scale.best``:
   the taxonomy's Critical criteria are best at their lowest level and are reversed, every other criterion is best
   at its top; ``oriented_result_scale``). A 0/1/2 criterion scored 1 gives 0.5; a Critical 0/1 criterion scored 0
   (no violation) gives 1.0.
2. **Regression (``-r``) judges**: the head's value clipped into the scale (``JudgeResult.score``) by default, or
   its raw value (``regression_score``, which may rise past 1 after normalising) with ``head_values="raw"``. A raw
   value below the worst level counts as the worst level, 0.0: below it, a judged answer would score less than a
   failed verdict or an empty answer (both 0.0 by default, step 3), and a policy would gain by an answer the judge
   cannot read.
3. **A failed verdict is a value, never a number by accident**: a verdict that did not parse, a seq2seq score
   outside its rubric's scale (POLLUX's benchmark drops those too), or one inside it but on none of its levels
   (``not_a_level``: a 0.5 on a 0/1 rubric hedges between two points, which the judge prompt rules out, and
   ``train.grpo_rewards`` pays no such verdict either), is a failure. ``on_failure`` says what the
   sample gets: ``zero``, the default on every path (the criterion counts as its worst level, 0.0, whichever end of
   its scale is best: on a Critical criterion, best at 0, a failure counts as a violation and closes the gate), or
   ``skip``, only when asked for (the whole sample's reward is None: "no reward", which trl's GRPOTrainer takes as
   NaN: as the only reward the sample gets no advantage, above its group's worse answers). A failure is never worth
   more than the worst verdict: a policy must not gain by an answer the judge cannot read, or one too long for its
   context (``context_length_exceeded``). ``scale_min``, an older name, is read as ``zero`` (it named the scale's
   lowest level, which on a Critical criterion is its best: a failure there would read "no violation"). The count
   of failures travels beside the reward (``Reward.failed``).
4. **Combined** by the mean of the criteria (``combine="mean"``), or a weighted mean (``"weighted"``: ``weights``
   by taxonomy id, by a taxonomy criterion's Russian or English name (every variant that carries it), or by
   ``custom:<name>`` for a custom criterion; ``default_weight`` for the others). A key that names no taxonomy
   criterion is refused when the rule is built: a misspelt or unknown name would otherwise weigh nothing, silently.
5. **POLLUX's binary gate** (``gate=True``): a binary criterion (levels exactly {0, 1}: ``Scale.is_binary``,
   POLLUX's ``is_binary_scale``) that is not at its best level closes the gate and the reward is 0.0. A verdict's
   score is one of the levels (step 3), so its normalised value is exactly 0 or 1. A regression head's value is at
   the level it is nearest to: a flag is at its best when its normalised value is 0.5 or more (a head's 0.03 on
   a Critical criterion, best at 0, is no violation; POLLUX gates integer verdicts only). An open gate leaves the
   mean over the criteria that are not flags (POLLUX's ``mean_over_criteria`` leaves binary scores out), or over
   the flags when they are all there is. Deliberate deviation: POLLUX's ``src/metrics.py`` closes its gate when a
   rubric of exactly the levels {0, 1} is scored anything but 0, whichever answer is the good one; here the
   contract's orientation decides. The two agree on the Critical criteria (best at 0) and differ on two-level
   criteria best at 1 (Operability, "1: The code runs"), which POLLUX's rule would gate on their good answer.

**The answer judged** (``policy_answer``): the policy's text cut where its turn ends: at an end-of-turn or padding
token (``END_OF_TURN_MARKERS``) followed by nothing but whitespace, padding and more markers, or by the next turn's
opening; the same string with the answer's own text after it is that text (a ``</s>`` closing an ``<s>`` is HTML
strikethrough wherever it stands). Then its reasoning: a reasoning block is opened by the prompt's end (a thinking
template's generation prompt ends in ``<think>``: ``prompt_opens_reasoning``, where the reward path sees the
prompt: judge-serve's ``/get_reward``, the trl function on text prompts) or by a ``<think>`` at the very start of
the output (Qwen3 with thinking on), and closed by the output's first ``</think>``: the answer is what follows it (a
reasoning is not the answer the judge rates). A block never closed is an answer cut inside its reasoning: nothing to
judge. Where the prompt is not seen (verl's ``compute_score``, trl's conversational prompts) a ``</think>`` with no
``<think>`` before it can only close a block the prompt opened, and does. A ``<think>`` or ``</think>`` anywhere else
is the answer's text. An answer that shows nothing (white space and the characters that display nothing, a zero-width
space or a byte order mark: ``judge.plumbing.invisible_text.is_blank``) is none. An answer with nothing to judge is no
judge failure: it gets ``empty_answer`` (0.0 by default,
the worst reward; None to skip it).

**The completion read** (``completion_text``, ``cut_completions``): one rule for every trl reward, the GRPO
recipe's (``train.grpo_rewards``) and the trl judge client's: a conversational completion's text is its last
assistant turn, with the reasoning trl parsed apart from it put back before its content, and a completion whose
token ids end in no end id (none at all included) was cut by the length limit.

Pure functions over ``judge.wire.JudgeResult``: judge-serve's ``/get_reward`` and the shipped trl and verl reward
functions (``judge.reward_clients``) use the same rule.

Why one module of ~710 lines: it is the reward contract every path shares, the rule that turns verdicts into a
number and the reading of what the policy answered that the rule is applied to; split, a reward path would import
half of it from each file and the two halves' rules (what counts as an answer, what a failure is worth) would be
read apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from judge.plumbing.console_logging import visible
from judge.plumbing.invisible_text import is_blank
# a completion comes over the wire as JSON: a wrong one is named by its JSON kind ("an object"), not a Python class
from judge.plumbing.json_reading import finite_number, shown_value, value_words
from judge.plumbing.message_content import separated_reasoning
from judge.scales import Scale
from judge.verdicts import VerdictError
from judge.wire import JudgeResult, ScoreSource

__all__ = ["RewardRule", "RewardRuleError", "CriterionReward", "Reward", "COMBINE", "ON_FAILURE", "ON_FAILURE_ALIASES",
           "HEAD_VALUES", "CUSTOM_WEIGHT_PREFIX", "normalised", "oriented_result_scale", "criterion_reward",
           "reward_of", "OUT_OF_SCALE", "NOT_A_LEVEL", "END_OF_TURN_MARKERS", "policy_answer", "prompt_opens_reasoning",
           "label_criterion", "content_text", "completion_text", "completion_reasoning", "cut_completions",
           "engine_refusals", "failures_by_criterion", "FailedVerdictsWatch"]

COMBINE = ("mean", "weighted")
ON_FAILURE = ("skip", "zero")
#: Older names of an ``on_failure`` value, accepted so that existing rules load (the module docstring, step 3).
ON_FAILURE_ALIASES = {"scale_min": "zero"}
HEAD_VALUES = ("clipped", "raw")
#: How a ``weights`` key names a custom criterion (a label's ``{name, rubrics}`` object): ``custom:Краткость``. Any
#: other key must be a taxonomy id or name, so that a misspelling is refused rather than weighing nothing.
CUSTOM_WEIGHT_PREFIX = "custom:"
#: The failure code of a seq2seq score outside its rubric's scale (``judge.VerdictError.OUT_OF_SCALE``'s value).
OUT_OF_SCALE = "out_of_scale"
#: The failure code of a judge's own score inside its rubric's range but on none of its levels (a 0.5 on 0/1).
NOT_A_LEVEL = "not_a_level"


#: Tokens that end a policy's turn or pad it, as decoded with the special tokens kept: Qwen2/Qwen2.5/Qwen3
#: (``<|im_end|>``, ``<|endoftext|>``), Llama 3 (``<|eot_id|>``, ``<|end_of_text|>``), Gemma (``<end_of_turn>``,
#: ``<eos>``), the DeepSeek-R1 distills (``<｜end▁of▁sentence｜>``: full-width bars, U+FF5C, and U+2581 for the
#: spaces), Phi-3 (``<|end|>``), Llama 3.1's end of a tool-calling message (``<|eom_id|>``), Command-R
#: (``<|END_OF_TURN_TOKEN|>``) and SentencePiece models (``</s>``). Only OpenRLHF's query keeps special tokens (it decodes with
#: ``skip_special_tokens=False``, prompt and response together, the response ending in the policy's end-of-sequence
#: token, a padded batch in pad tokens after it); trl and verl decode without them, so there these strings are
#: the policy's own text. A marker therefore ends the answer only where the turn really ends (``_turn_end``).
END_OF_TURN_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<eos>",
                       "<\uff5cend\u2581of\u2581sentence\uff5c>", "<|end|>", "<|eom_id|>", "<|END_OF_TURN_TOKEN|>",
                       "</s>")
_END = re.compile("|".join(re.escape(m) for m in END_OF_TURN_MARKERS))
# What may follow the end of a turn in a decoded query: the padding OpenRLHF's tokenizer sets (the model's pad token,
# else its end-of-sequence token: ``<|endoftext|>``, ``<pad>``, Llama 3's ``<|finetune_right_pad_id|>``, any
# ``<|name|>`` special token, an R1 distill's ``<｜▁pad▁｜>``), more markers, and the next turn's opening when a
# policy ran past its own turn: ChatML, Llama 3, Gemma, R1, Phi-3 (``<|user|>``), Command-R
# (``<|START_OF_TURN_TOKEN|>``), and Llama 2 and Mistral (``<s>[INST]``, ``[INST]``), whose opening is no special token.
_INST = r"(?:<s>\s*)?\[INST\]"
_TRAILER = re.compile(r"<\|[\w.-]+\|>|<\uff5c[\w.\u2581-]+\uff5c>|<pad>|<unk>|<start_of_turn>|" + _INST + "|"
                      + _END.pattern)
_TRAILERS = re.compile(r"(?:\s+|" + _TRAILER.pattern + r")*+")
_NEXT_TURN = re.compile(r"<\|im_start\|>|<\|start_header_id\|>|<start_of_turn>|<\uff5cUser\uff5c>|<\|user\|>|"
                        r"<\|START_OF_TURN_TOKEN\|>|" + _INST)
# HTML strikethrough, "<s>1000</s>": a "</s>" that closes an "<s>" the answer opened is the answer's markup.
_STRIKE_OPEN = re.compile(r"<s(?:\s[^<>]*)?>", re.IGNORECASE)  # HTML tags are any case
_THINK_OPEN = re.compile(r"<think\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)
_LEADING_THINK = re.compile(r"\s*<think\s*>", re.IGNORECASE)
_PROMPT_ENDS_IN_THINK = re.compile(r"<think\s*>\Z", re.IGNORECASE)


def _turn_end(text: str) -> int:
    """Where the policy's turn ends in ``text`` (``len(text)`` when it does not): at the first end-of-turn marker
    followed by nothing but whitespace, padding and more markers, or by the next turn's opening. A marker with the
    answer's own text after it is a mention ("the model ends with <eos>, then ...") or markup (``<s>x</s> text``),
    and a ``</s>`` closing an ``<s>`` opened before it is strikethrough even at the very end."""
    strikes = [m.start() for m in _STRIKE_OPEN.finditer(text)]
    seen = struck = 0  # "<s>" openers before the current marker, and the "</s>" that closed some of them
    scanned = -1  # the end of the last run of trailers looked at: a marker inside it was looked at with it
    for marker in _END.finditer(text):
        if marker.group() == "</s>":
            while seen < len(strikes) and strikes[seen] < marker.start():
                seen += 1
            if struck < seen:
                struck += 1
                continue
        if marker.end() <= scanned:
            continue
        scanned = _TRAILERS.match(text, marker.end()).end()
        if scanned == len(text) or _NEXT_TURN.search(text, marker.end(), scanned):
            return marker.start()
    return len(text)


def policy_answer(text: str, reasoning_opened: bool | None = None) -> str:
    """The answer a judge rates in a policy's output (the module docstring's rule); "" when there is none.

    ``reasoning_opened``: whether the prompt ended inside a ``<think>`` it opened (``prompt_opens_reasoning``; a
    thinking chat template's generation prompt does): then the output's first ``</think>`` closes it, and an output
    without one was cut inside that reasoning and holds no answer. None: the prompt was not seen (verl's
    ``compute_score``, a trl conversational prompt); a ``</think>`` with no ``<think>`` before it can only close a
    block the prompt opened, and is read so.
    """
    answer = _answer_part(text[: _turn_end(text)], reasoning_opened)
    # one that shows nothing (white space, zero-width characters) is none: judge-serve refuses such an item's answer
    return "" if is_blank(answer) else answer


def _answer_part(text: str, reasoning_opened: bool | None) -> str:
    """``policy_answer``'s cut of an output already cut where its turn ends."""
    opener = _LEADING_THINK.match(text)
    if opener:  # the output opens its own reasoning (Qwen3 with thinking on)
        body = text[opener.end():]
    elif reasoning_opened:
        body = text
    else:
        close = _THINK_CLOSE.search(text) if reasoning_opened is None else None
        if close and not _THINK_OPEN.search(text, 0, close.start()):
            return text[close.end():].strip()
        return text.strip()  # no reasoning block: a "<think>" or "</think>" in it is the answer's text
    close = _THINK_CLOSE.search(body)
    return body[close.end():].strip() if close else ""  # no close: cut inside its reasoning


def content_text(content: Any) -> str:
    """A chat message's text: its content as a string, or the text parts of trl's structured content
    (``[{"type": "text", "text": ...}, {"type": "image"}]``, which ``trl/data_utils.py``'s
    ``prepare_multimodal_messages`` makes of every message when the prompts carry images) joined in order with
    nothing between, as the chat templates render them (``trl/chat_templates/qwen2_5_vl.jinja``, ``qwen3_vl.jinja``,
    ``idefics3.jinja``: each text part's text, back to back); other parts (images, video) are left out. None
    (an assistant turn of tool calls only) has no text.

    Raises:
        ValueError: content that is neither.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content
                       if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str))
    raise ValueError(f"a message's content must be text or a list of typed parts, got {value_words(content)}")


def completion_text(completion: Any) -> str:
    """The policy's text in one of trl's completions, one rule for every trl reward (``train.grpo_rewards``, the trl
    judge client): a text completion as it is; a conversational one (``[{"role": "assistant", "content": ...}]``)
    as its last assistant message's text (``content_text``). trl's tool loop (``_tool_call_loop`` in
    ``trl/trainer/grpo_trainer.py``) appends tool results and the policy's next turn to the same list: a tool's
    output is not the policy's words, and the last assistant turn is the answer given after them. A message without
    a role is read as the assistant's; a list with no assistant message has no text ("").

    A turn whose reasoning trl parsed apart (``completion_reasoning``) is read with its reasoning put back as Qwen3's
    chat template writes one (``trl/chat_templates/qwen3.jinja``: ``<think>``, a newline, the reasoning, a newline,
    ``</think>``, a blank line, the content): the policy wrote it, the answer judged is still what follows it
    (``policy_answer``), and a reward that asks for reasons (the GRPO recipe's ``format_reward``) would otherwise
    read every reasoned verdict as a bare score.

    Raises:
        ValueError: neither a string nor a list of chat messages (mappings).
    """
    text, reasoning = _text_and_reasoning(completion)
    if reasoning is None:
        return text
    return "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + text.lstrip("\n")


def completion_reasoning(completion: Any) -> str | None:
    """The reasoning trl returned apart from a conversational completion's last assistant turn, which
    ``completion_text`` puts back before its content; None for a text completion, a turn without one, or one that
    cannot be put back as one block.

    trl parses a conversational completion (``parse_response`` in ``trl/chat_template_utils.py``, when the tokenizer
    has a response template or schema, or the trainer has tools) into fields: its schemas put the ``<think>`` block
    in ``reasoning_content``, LFM2.5's in ``thinking``; vLLM's own field is ``reasoning``. Not put back: a reasoning
    of whitespace only (an empty block), a content that already opens with its own ``<think>`` block (a server
    that also leaves the reasoning inline: put back, it would be read twice, the second block taken for the
    answer), and a reasoning holding a ``</think>`` (put back, its text after that tag would be read as the answer;
    the parsers split at the first one, so none should).

    Raises:
        ValueError: neither a string nor a list of chat messages (mappings).
    """
    return _text_and_reasoning(completion)[1]


def _text_and_reasoning(completion: Any) -> tuple[str, str | None]:
    """A completion's text as the policy's turn holds it (a text completion's whole; a conversational one's last
    assistant message's content, a message without a role being the assistant's) and the reasoning
    ``completion_reasoning`` returns."""
    if isinstance(completion, str):
        return completion, None
    if not isinstance(completion, list) or not all(isinstance(m, Mapping) for m in completion):
        raise ValueError(f"a completion must be text or a list of chat messages, got {value_words(completion)}")
    turns = [m for m in completion if m.get("role", "assistant") == "assistant"]
    if not turns:
        return "", None
    text = content_text(turns[-1].get("content"))
    reasoning = separated_reasoning(turns[-1])
    if reasoning is None or _THINK_CLOSE.search(reasoning) or _LEADING_THINK.match(text.lstrip()):
        return text, None
    return text, reasoning


def cut_completions(completion_ids: Sequence[Sequence[int]] | None, end_ids: Collection[int] | None,
                    count: int) -> list[bool]:
    """Which of ``count`` completions the policy's length limit (``max_completion_length``) cut, one rule for every
    trl reward: those whose token ids end in none of ``end_ids``, trl's own test (``ids[-1] not in eos_and_pad`` in
    ``trl/trainer/grpo_trainer.py``: ``completions/clipped_ratio``, ``mask_truncated_completions``). trl keeps the
    id that ended a completion (generation with transformers keeps the ids up to and including the first
    end-of-sequence id; vLLM's output ids end in it): an empty answer that ended at its end-of-sequence token is
    ``[eos]``. An empty id list therefore ended in no end id and counts as cut: nothing shows the policy finished.
    All False when ``end_ids`` or the ids are not given: nothing tells a cut completion then.

    Raises:
        ValueError: a number of id lists other than ``count``.
    """
    if end_ids is None or completion_ids is None:
        return [False] * count
    if len(completion_ids) != count:
        raise ValueError(f"completion_ids: {len(completion_ids)} id lists for {count} completions")
    return [not len(ids) or ids[-1] not in end_ids for ids in completion_ids]


def label_criterion(spec: Any, where: str) -> Any:
    """A label's criterion as the wire reads it, on every reward path (``/get_reward``'s labels, the trl and verl
    clients' criteria): in a criterion object and in its rubric mapping, a key holding None is absent, and POLLUX's
    field name is read as ours. Anything else is returned as it is, for the strict model to judge.

    None is dropped because Arrow and Parquet (``datasets.Dataset.from_list``, a Parquet file, verl's ``extra_info``)
    give every row every key of its column's struct: a rubric mapping of two levels beside another row's three
    arrives with ``"2": None``, a ``criteria_name`` row beside a ``name`` row with ``"name": None``; the row never
    wrote them. POLLUX-instructions rows write a custom criterion as ``{"criteria_name", "rubrics"}`` (POLLUX's
    ``src/metrics.py``; ``eval.ranking.rank`` reads them so), the wire's ``CustomCriterion`` as ``{"name",
    "rubrics"}``.

    Raises:
        ValueError: naming ``where``: both names given (which one the judge should see is the client's to say).
    """
    if not isinstance(spec, Mapping):
        return spec
    spec = {k: v for k, v in spec.items() if v is not None}
    if isinstance(spec.get("rubrics"), Mapping):
        spec["rubrics"] = {level: text for level, text in spec["rubrics"].items() if text is not None}
    if "criteria_name" not in spec:
        return spec
    if "name" in spec:
        raise ValueError(f"{where}: both name and criteria_name (POLLUX's name for it); give one")
    return {"name": spec["criteria_name"], **{k: v for k, v in spec.items() if k != "criteria_name"}}


def prompt_opens_reasoning(prompt: str) -> bool:
    """Whether ``prompt`` ends inside a reasoning block its chat template opened: it ends in ``<think>`` (then
    optional whitespace), as a thinking template's generation prompt does. A ``<think>`` anywhere else is the
    prompt's text (a user asking what the tag does, a judged answer that mentions it)."""
    return bool(_PROMPT_ENDS_IN_THINK.search(prompt.rstrip()[-16:]))


class RewardRuleError(ValueError):
    """A reward rule that cannot be used; the message names the field."""


class _ReadOnlyWeights(dict):
    """A ``RewardRule``'s ``weights``: read-only, since the weight tables it rewards by are derived from them once,
    yet a dict, so that a rule still pickles, deep-copies and goes through ``dataclasses.asdict`` (a
    ``MappingProxyType`` does none of the three)."""

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a RewardRule's weights are read-only; build another rule (dataclasses.replace)")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[type, tuple[dict]]:
        return type(self), (dict(self),)  # dict's own reduction sets each item, which this refuses


@dataclass(frozen=True)
class RewardRule:
    """How a sample's verdicts become its reward (see the module docstring for the steps).

    Attributes:
        combine: ``mean`` or ``weighted``.
        weights: ``weighted``: criterion -> positive weight. A key is a taxonomy id (that criterion alone), a
            taxonomy criterion's Russian or English name, in any case (every variant carrying it), or
            ``custom:<name>`` (a custom criterion of that name); any other key is refused. A result is weighted by
            its id's key first, then its name's.
        default_weight: ``weighted``: the weight of a criterion ``weights`` does not name.
        gate: POLLUX's binary gate.
        on_failure: ``zero`` (the criterion's worst level; the default) or ``skip`` (reward None); ``scale_min``
            is read as ``zero``.
        head_values: regression judges: ``clipped`` (the score clipped into the scale) or ``raw`` (unclipped past
            the best level, stopped at the worst: the module docstring, step 2).
        empty_answer: the reward of an answer with nothing to judge; None: no reward.
    """

    combine: str = "mean"
    weights: Mapping[str, float] = field(default_factory=dict)
    default_weight: float = 1.0
    gate: bool = False
    on_failure: str = "zero"
    head_values: str = "clipped"
    empty_answer: float | None = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.on_failure, str) and self.on_failure in ON_FAILURE_ALIASES:
            object.__setattr__(self, "on_failure", ON_FAILURE_ALIASES[self.on_failure])
        for name, allowed in (("combine", COMBINE), ("on_failure", ON_FAILURE), ("head_values", HEAD_VALUES)):
            if getattr(self, name) not in allowed:
                raise RewardRuleError(f"{name}: {getattr(self, name)!r} is not one of {', '.join(allowed)}")
        if not isinstance(self.gate, bool):
            raise RewardRuleError(f"gate: expected true or false, got {self.gate!r}")
        if not isinstance(self.weights, Mapping):
            raise RewardRuleError("weights: expected a mapping of criterion name or id to a weight")
        for key, weight in {**self.weights, "default_weight": self.default_weight}.items():
            if not finite_number(weight) or weight <= 0:
                where = "default_weight" if key == "default_weight" else f"weights[{key!r}]"
                raise RewardRuleError(f"{where}: a weight must be a positive finite number, got {shown_value(weight)}")
        if self.weights and self.combine != "weighted":
            raise RewardRuleError("weights: given, but combine is 'mean' (set combine: weighted)")
        # Not dataclass fields: derived from weights, so equality, to_dict and from_dict see only what was given.
        object.__setattr__(self, "_resolved_weights", _weight_tables(self.weights) if self.weights else ({}, {}, {}))
        if self.empty_answer is not None and not finite_number(self.empty_answer):
            # NaN or infinity would be a reward no JSON answer can carry (/get_reward's would fail) and no trainer
            # can rank by.
            raise RewardRuleError("empty_answer: expected a finite number or null, got "
                                  f"{shown_value(self.empty_answer)}")
        # Read-only: the weight tables above are derived once, so a caller's later edit of ``rule.weights`` would
        # change what the rule says but not what it rewards.
        object.__setattr__(self, "weights", _ReadOnlyWeights(self.weights))

    def __hash__(self) -> int:
        # frozen, so usable as a key or in a set; dataclass' own hash would hash the weights mapping, which has none
        return hash(tuple(frozenset(v.items()) if name == "weights" else v
                          for name in self.__dataclass_fields__ for v in [getattr(self, name)]))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "reward rule") -> RewardRule:
        """A rule from a JSON/YAML object; an unknown key is an error naming it.

        Raises:
            RewardRuleError: an unknown key or a bad value.
        """
        if not isinstance(data, Mapping):
            raise RewardRuleError(f"{where}: expected an object of RewardRule fields")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise RewardRuleError(f"{where}: unknown field(s) {unknown}; known: {', '.join(sorted(known))}")
        try:
            return cls(**dict(data))
        except RewardRuleError as err:
            raise RewardRuleError(f"{where}.{err}") from None

    def to_dict(self) -> dict[str, Any]:
        return {name: (dict(v) if isinstance(v, Mapping) else v) for name in self.__dataclass_fields__
                for v in [getattr(self, name)]}

    def require_numeric(self, where: str) -> None:
        """Refuse a rule that can give a sample no reward, for a trainer that needs a number for every sample
        (OpenRLHF makes a tensor of each ``/get_reward`` reward, verl a float of each score): one check, one
        message, wherever a rule is read for one (``serve.config``, the verl client).

        Raises:
            RewardRuleError: naming ``where`` and the field: ``on_failure: skip`` or ``empty_answer: null``.
        """
        needs = "the trainer needs a number for every sample (OpenRLHF and verl turn each reward into one)"
        if self.on_failure == "skip":
            raise RewardRuleError(f"{where}.on_failure: skip gives a sample with a failed verdict no reward (null), "
                                  f"and {needs}; use zero (failures are counted in judge_failures)")
        if self.empty_answer is None:
            raise RewardRuleError(f"{where}.empty_answer: null gives an empty answer no reward, and {needs}; give a "
                                  "number (the default 0.0 is the worst reward)")

    def weight_of(self, name: str, criterion_id: str | None) -> float:
        """The weight of a criterion (1 for every criterion under ``mean``)."""
        if self.combine == "mean":
            return 1.0
        by_id, by_name, custom = self._resolved_weights
        if criterion_id is not None and criterion_id in by_id:
            return by_id[criterion_id]
        if criterion_id is None and name.strip() in custom:
            return custom[name.strip()]
        if by_name:  # a result without an id (a custom criterion named as a taxonomy one, an older server's)
            from judge.taxonomy import name_key

            return by_name.get(name_key(name), self.default_weight)
        return self.default_weight


def _weight_tables(weights: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """``weights`` resolved through the taxonomy: by criterion id (an id key, and every id a name key names), by name
    as the taxonomy looks names up (for a result that carries no id), and by custom criterion name.

    Raises:
        RewardRuleError: naming the key: one that names no taxonomy criterion and is not ``custom:<name>``, or two
            keys that give one criterion different weights (its Russian and its English name).
    """
    from judge.taxonomy import TaxonomyError, load_taxonomy, name_key

    taxonomy = load_taxonomy()
    names = {cid: {name_key(c.name[lang]) for lang in c.name} for cid, c in taxonomy.criteria.items()}
    ids: dict[str, float] = {}
    by_name: dict[str, float] = {}
    custom: dict[str, float] = {}
    named_by: dict[str, str] = {}  # id -> the name key that weighted it
    for key, weight in weights.items():
        where = f"weights[{key!r}]"
        if not isinstance(key, str):
            raise RewardRuleError(f"{where}: a key must be a criterion's id or name")
        if key.startswith(CUSTOM_WEIGHT_PREFIX):
            # stripped as weight_of strips a result's name: the resolver shows a custom criterion's name as given
            name = key[len(CUSTOM_WEIGHT_PREFIX):].strip()
            if not name:
                raise RewardRuleError(f"{where}: no custom criterion's name after {CUSTOM_WEIGHT_PREFIX!r}")
            custom[name] = float(weight)
            continue
        if key in taxonomy.criteria:
            continue  # ids are placed last: an id's own key outranks a name key over it
        try:
            taxonomy.criterion(key)
        except TaxonomyError as err:
            raise RewardRuleError(f"{where}: {err} (a key is a taxonomy criterion's id or its Russian or English name, "
                                  f"or {CUSTOM_WEIGHT_PREFIX}<name> for a custom criterion, a {{name, rubrics}} "
                                  f"object)") from None
        by_name[name_key(key)] = float(weight)
        for cid, its in names.items():
            if name_key(key) not in its:
                continue
            if cid in named_by and ids[cid] != float(weight):
                raise RewardRuleError(f"{where}: criterion {cid} is also weighted {ids[cid]:g} as "
                                      f"{named_by[cid]!r}; give it one weight")
            ids[cid], named_by[cid] = float(weight), key
    ids.update((key, float(weight)) for key, weight in weights.items() if key in taxonomy.criteria)
    return ids, by_name, custom


@dataclass(frozen=True)
class CriterionReward:
    """One criterion's part of a reward.

    Attributes:
        criterion, criterion_id: as the result names them.
        value: the score normalised to 0-1 (best at 1); after a failure, what ``on_failure`` gives (None: skip).
        score: the judge's score as used (clipped or raw head value; ``value`` stops a raw one at the worst level),
            None when it failed.
        failure: why it failed (a ``judge.VerdictError`` code, ``out_of_scale`` or ``not_a_level``), None when
            scored.
        is_flag: a binary criterion, levels exactly {0, 1} (``Scale.is_binary``): a gate under ``gate=True``.
        feedback: the judge's rationale (for journals and logs; it never changes the value).
    """

    criterion: str
    criterion_id: str | None
    value: float | None
    score: float | None
    failure: str | None
    is_flag: bool
    feedback: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"criterion": self.criterion, "criterion_id": self.criterion_id, "value": self.value,
                "score": self.score, "failure": self.failure, "is_flag": self.is_flag, "feedback": self.feedback}


@dataclass(frozen=True)
class Reward:
    """One sample's reward.

    Attributes:
        value: the reward (0-1; past 1 with raw head values above the best level); None: no reward for this sample.
        criteria: per criterion, in the results' order.
        failed: criteria whose verdict failed.
        gate_closed: under ``gate``: whether a flag closed it (None without the gate, or when the reward is None).
    """

    value: float | None
    criteria: tuple[CriterionReward, ...]
    failed: int
    gate_closed: bool | None = None


def engine_refusals(reward: Reward | None) -> int:
    """Of ``reward.failed``, the criteria whose judgment judge-serve's engine refused (a 4xx for that judgment alone:
    ``judge.verdicts.VerdictError.ENGINE_REFUSED``); 0 for a sample with nothing judged (None). Counted apart because a judge that
    cannot parse and an engine refusing every long prompt give the same zeros, and only the second is the serving
    configuration's to mend (its window, a sampling value)."""
    return sum(part.failure == VerdictError.ENGINE_REFUSED for part in reward.criteria) if reward is not None else 0


def failures_by_criterion(rewards: Sequence[Reward | None]) -> dict[str, tuple[int, int]]:
    """Per criterion judged in ``rewards`` (by its name, in the order first met): (failed, judged). A sample with
    nothing judged (None) counts nowhere. The totals (``Reward.failed``) cannot say which criterion's verdicts fail,
    which is what a person must mend (its rubric, a window too small for its rationale)."""
    counts: dict[str, list[int]] = {}
    for reward in rewards:
        for part in reward.criteria if reward is not None else ():
            seen = counts.setdefault(part.criterion, [0, 0])
            seen[0] += part.failure is not None
            seen[1] += 1
    return {name: (failed, judged) for name, (failed, judged) in counts.items()}


def _by_criterion(counts: dict[str, tuple[int, int]], shown: int = 10) -> str:
    """``counts`` (``failures_by_criterion``) in words, most failed first (ties in the order met): "Креативность 3 of
    3, Краткость 2 of 3"; past ``shown`` criteria, how many more."""
    ranked = sorted(counts.items(), key=lambda item: -item[1][0])
    words = ", ".join(f"{name} {failed} of {judged}" for name, (failed, judged) in ranked[:shown])
    return words + (f", and {len(ranked) - shown} more" if len(ranked) > shown else "")


class FailedVerdictsWatch:
    """Says when a judge's verdicts keep failing. A failed criterion is valued by the rule's ``on_failure`` (its
    worst level by default), so a judge that cannot answer (a broken checkpoint, a window too small for its
    rationale) gives the policy its zeros, counted in ``judge_failures`` but said nowhere a person reads. Fed each
    request's (or trainer call's) rewards, ``add`` returns a warning line the first time every judgment of one
    failed, and whenever ``window`` judgments have been seen of which at least ``share`` failed; None otherwise. Each
    line counts the failed of the judged per criterion (``failures_by_criterion``), of that request or window.
    ``whole_request=False`` says windows only: verl asks one sample a call, whose one failed criterion would spend the
    once-only warning on what may be one flaky judgment.
    One per reward path (judge-serve's route, the trl function, verl's functions in a process), safe across threads.
    """

    def __init__(self, window: int = 100, share: float = 0.5, *, whole_request: bool = True):
        import threading

        self.window, self.share = window, share
        self._lock = threading.Lock()
        self._judged = self._failed = 0
        self._first: str | None = None  # the window's first failure, "criterion: reason"
        self._by_criterion: dict[str, tuple[int, int]] = {}  # the window's (failed, judged) per criterion
        self._said_all_failed = not whole_request

    def add(self, rewards: Sequence[Reward | None]) -> str | None:
        parts = [part for reward in rewards if reward is not None for part in reward.criteria]
        failed = [part for part in parts if part.failure is not None]
        here = failures_by_criterion(rewards)
        with self._lock:
            self._judged += len(parts)
            self._failed += len(failed)
            for name, (n_failed, n_judged) in here.items():
                before = self._by_criterion.get(name, (0, 0))
                self._by_criterion[name] = (before[0] + n_failed, before[1] + n_judged)
            if failed and self._first is None:
                self._first = f"{failed[0].criterion}: {failed[0].failure}"
            if parts and len(failed) == len(parts) and not self._said_all_failed:
                self._said_all_failed = True
                # this request's own first failure and counts: the window's may be other requests', on other criteria
                return self._said(f"all {len(parts)} judgments of one request failed",
                                  f"{failed[0].criterion}: {failed[0].failure}", here)
            if self._judged < self.window:
                return None
            judged, failed_n, self._judged, self._failed = self._judged, self._failed, 0, 0
            line = self._said(f"{failed_n} of the last {judged} judgments failed", self._first, self._by_criterion) \
                if failed_n >= self.share * judged else None
            self._first, self._by_criterion = None, {}
            return line

    @staticmethod
    def _said(what: str, first: str | None, counts: dict[str, tuple[int, int]]) -> str:
        line = (f"{what} (the first: {first}): each failed "
                "criterion gets on_failure's value (its worst level unless the rule says skip), so the policy is "
                "trained on the judge's failures; see judge_failures, and the judge's log; by criterion, failed of "
                f"judged: {_by_criterion(counts)}")
        # a console line quoting judge-serve's words (its error code, the criteria it echoes): escaped, not cut (at
        # most ten criteria are named)
        return visible(line, len(line))


def normalised(score: float, scale: Scale) -> float:
    """``score`` on ``scale`` mapped to 0-1 with the best level at 1: ``(score - worst) / (best - worst)``.

    Raises:
        ValueError: a scale of one level (nothing to normalise by).
    """
    if scale.min == scale.max:
        raise ValueError(f"cannot normalise a score on a scale with one level ({scale.levels})")
    # + 0.0: a reversed scale's worst level gives 0.0 / -1, which is -0.0, and JSON would carry "-0.0".
    return (float(score) - scale.worst) / (scale.best - scale.worst) + 0.0


def oriented_result_scale(result: JudgeResult) -> Scale:
    """The scale a result was judged on, oriented by the contract: a taxonomy criterion's own (``criterion_id``),
    else ``judge.oriented_scale``'s rule by name (a custom criterion named as a Critical one is best at its lowest
    level, any other is best at its top)."""
    from judge.taxonomy import load_taxonomy

    scale = Scale(tuple(result.scale))
    taxonomy = load_taxonomy()
    if result.criterion_id is not None and result.criterion_id in taxonomy.criteria:
        best_low = taxonomy.criteria[result.criterion_id].scale.best == taxonomy.criteria[result.criterion_id].scale.min
    else:
        best_low = taxonomy.is_best_at_lowest(result.criterion)
    return scale.best_at_lowest() if best_low else scale


def criterion_reward(result: JudgeResult, rule: RewardRule) -> CriterionReward:
    """One result's normalised value under ``rule`` (step 1-3 of the module docstring)."""
    scale = oriented_result_scale(result)
    failure = None
    score = None
    if not result.parse_ok or result.score is None:
        failure = result.error or "no_score"
    elif result.regression_score is not None and rule.head_values == "raw":
        score = float(result.regression_score)
    elif result.in_scale is False:
        failure = OUT_OF_SCALE
    elif result.score_source != ScoreSource.REGRESSION_HEAD and not scale.is_level(result.score):
        # A verdict's 0.5 on a Critical 0/1 flag normalised to 0.5 and held the gate open (its nearest-level rule is
        # for a head's values); POLLUX's src/metrics.py closes its gate on any raw_score != 0. Only a head's value
        # may lie between levels.
        failure = NOT_A_LEVEL
    else:
        score = float(result.score)
    if failure is None:
        value: float | None = normalised(score, scale)  # type: ignore[arg-type]
        if rule.head_values == "raw" and result.regression_score is not None:
            # A failure is worth the worst level (0.0) and no more: a raw head value below it must not be worth less.
            value = max(value, 0.0)
    elif rule.on_failure == "zero":
        value = 0.0  # the worst level, normalised, whichever end is best
    else:
        value = None
    return CriterionReward(result.criterion, result.criterion_id, value, score, failure, scale.is_binary,
                           result.feedback)


def reward_of(results: Sequence[JudgeResult], rule: RewardRule) -> Reward:
    """One sample's reward from its criteria's results.

    Raises:
        ValueError: no results.
    """
    if not results:
        raise ValueError("a reward needs at least one criterion's result")
    parts = tuple(criterion_reward(r, rule) for r in results)
    failed = sum(1 for p in parts if p.failure is not None)
    if any(p.value is None for p in parts):  # on_failure: skip
        return Reward(None, parts, failed)
    gate_closed = None
    counted = parts
    if rule.gate:
        # The nearest level (a verdict's value is exactly 0 or 1, criterion_reward fails any other; a head's lies
        # between): best from 0.5 up.
        gate_closed = any(p.is_flag and p.value < 0.5 for p in parts)  # type: ignore[operator]
        if gate_closed:
            return Reward(0.0, parts, failed, True)
        counted = tuple(p for p in parts if not p.is_flag) or parts
    weights = [rule.weight_of(p.criterion, p.criterion_id) for p in counted]
    # Scaled by the power of two at the largest, so that the sums neither overflow nor underflow whatever finite
    # weights the rule holds (two of 1e308 summed to infinity, and the mean to 0); a power of two changes no rounding.
    exponent = math.frexp(max(weights))[1]
    weights = [math.ldexp(w, -exponent) for w in weights]
    value = sum(w * p.value for w, p in zip(weights, counted)) / sum(weights)  # type: ignore[operator]
    return Reward(value, parts, failed, gate_closed)

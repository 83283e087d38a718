"""The judge prompts: one renderer for training, serving and evaluation.

Two templates, both copied byte for byte from the POLLUX paper (Appendix M.1):

- the **Russian judge prompt** the POLLUX judges are trained and served with (``render_prompt``), from
  arXiv 2505.24616v3, Appendix M.1; it is also ai-forever/POLLUX ``prompts/test_pollux.txt``, which
  POLLUX fills with Python ``str.format``: five ``### `` sections, one
  blank line apart, no trailing newline. With no reference answer the section stays, empty.
- the **English prompt** "for generating synthetic data and running test data" (``render_prompt_en``), from
  arXiv 2505.24616v3, Appendix M.1: the teacher (DeepSeek-R1) labelled the training data with it, and
  the API baseline judges were run with it. Six numbered rules, then five ``### `` sections.

The released ``Pollux-4B-Judge`` is asked with its own clients' variant of the Russian prompt, one newline longer
(``RU_TEMPLATE_4B``, from ai-forever/POLLUX ``demo/serve_pollux_demo.py``). Which judge gets which pointwise template
(``PromptTemplate``) is decided in one place, ``judge.checkpoints.prompt_template_and_why``.

Fields go into the templates exactly as they are, as POLLUX's ``str.format`` puts them: a code answer ending in
``"\n"`` keeps that newline, an instruction starting with ``"\n  "`` keeps it. Only ``None`` is mapped (a missing
reference answer renders as ``""``). ``clean=True`` is the opt-in, non-POLLUX alternative: it drops leading newlines
and trailing whitespace of every field (what ``pollux-ru-v1`` did unconditionally).

A prompt is wrapped as a single user turn through the model tokenizer's own chat template
(``chat_messages``, ``apply_chat``). A template change — even one newline — or a change in how fields are processed
changes the version, which every training run writes into its ``run.json`` so a checkpoint can be matched with the
template it learned:

- ``pollux-ru-v1``: the M.1 template over fields stripped of leading newlines and trailing whitespace.
- ``pollux-ru-v2``: the same template over the raw fields (byte-identical to POLLUX's ``test_pollux.txt``).
- ``pollux-en-v1``: a Prometheus-style English prompt (``###Task Description:`` with four rules and the score
  range, ``###Feedback:`` at the end) that was *not* the paper's; deleted.
- ``pollux-en-v2``: the paper's M.1 English prompt, raw fields.
- ``pollux-ru-4b-v1``: ``pollux-ru-v2``'s template and one newline after the rubric (``RU_TEMPLATE_4B``): the
  released ``Pollux-4B-Judge``'s own prompt. Only that judge is asked with it (``PromptTemplate``; the choice is
  ``judge.checkpoints.prompt_template_and_why``); judge-train renders ``pollux-ru-v2`` for every judge it trains.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from judge.plumbing.json_reading import value_words

__all__ = [
    "PROMPT_VERSION",
    "PROMPT_VERSION_EN",
    "PROMPT_VERSION_4B",
    "RU_TEMPLATE",
    "RU_TEMPLATE_4B",
    "EN_TEMPLATE",
    "PromptTemplate",
    "POLLUX_PROMPT",
    "POLLUX_4B_PROMPT",
    "PROMPT_TEMPLATES",
    "render_prompt",
    "prefix_key",
    "prefix_order",
    "render_prompt_en",
    "PAIRWISE_TEMPLATE",
    "PAIRWISE_PROMPT_VERSION",
    "PAIRWISE_FIELDS",
    "PROMPT_FIELDS",
    "render_pairwise_prompt",
    "prompt_fields",
    "chat_messages",
    "apply_chat",
    "JUDGE_CHAT_TEMPLATE_KWARGS",
]

PROMPT_VERSION = "pollux-ru-v2"
PROMPT_VERSION_EN = "pollux-en-v2"
#: The released Pollux-4B-Judge's own pointwise template's version (``RU_TEMPLATE_4B``).
PROMPT_VERSION_4B = "pollux-ru-4b-v1"
#: The pairwise template's version (``PAIRWISE_TEMPLATE``: POLLUX's demo, Russian original).
PAIRWISE_PROMPT_VERSION = "pollux-pairwise-ru-v1"

# arXiv 2505.24616v3, Appendix M.1, the Russian prompt: the lines inside the code fence. The paper's placeholders
# {criteria.name} / {criteria.rubrics} are our fields criteria_name / rubrics. No trailing newline: the fence closes
# right after {criteria.rubrics}, and ai-forever/POLLUX prompts/test_pollux.txt has none.
RU_TEMPLATE = (
    "### Задание для оценки:\n{instruction}\n\n"
    "### Эталонный ответ:\n{reference_answer}\n\n"
    "### Ответ для оценки:\n{answer}\n\n"
    "### Критерий оценки:\n{criteria_name}\n\n"
    "### Шкала оценивания по критерию:\n{rubrics}"
)

# The released Pollux-4B-Judge's own pointwise prompt, as its public clients send it: ai-forever/POLLUX
# demo/serve_pollux_demo.py lines 23-38 ("Original Pollux prompt (Russian headers, model's native format)", commented
# out; the closing quotes stand on their own line, 38) and MERA-Evaluation/MERA
# benchmark_tasks/pollux_human_centric/utils.py (POLLUX_JUDGE_PROMPT, the Pollux-4B-Judge task). It is RU_TEMPLATE and
# one newline after the rubric; the 7B/32B judges (prompts/test_pollux.txt) and judge-train's exports learned
# RU_TEMPLATE without it.
RU_TEMPLATE_4B = RU_TEMPLATE + "\n"

# arXiv 2505.24616v3, Appendix M.1, the English prompt: the lines inside the code fence, with {criteria.name} / {criteria.rubrics}
# as criteria_name / rubrics. The paper is silent on two things, chosen like the Russian prompt: no trailing newline
# after {criteria.rubrics}, and an empty reference answer leaves its section in place, empty. Note the paper's own
# irregularities, kept: "### Score name" has no colon, and rule 3's format has no [END] (rule 6 asks for it).
EN_TEMPLATE = (
    "### Task Description:\n"
    "You are provided with the following: an instruction (which may include an input), a response to evaluate, a "
    "reference answer and an evaluation criterion with a detailed scale.\n"
    "1. Write detailed feedback assessing the quality of the response strictly according to the provided evaluation "
    "scale. Do not give a general evaluation, base your assessment entirely on the scale.\n"
    "2. Assign a score to the response by referring to the scale. The score must correspond to a single scale point "
    "and its description.\n"
    '3. Format your output as follows: "[FEEDBACK] (Write detailed feedback regarding the evaluated response and the '
    "assigned score, reason step by step and explain each point.) [RESULT] (An integer score within the boundaries "
    'of the criterion scale.)"\n'
    "4. Do not include any additional openings, closings, or explanations.\n"
    "5. Write feedback in Russian.\n"
    "6. Write [END] after you are done.\n"
    "\n"
    "### The instruction to evaluate:\n{instruction}\n\n"
    "### Reference answer:\n{reference_answer}\n\n"
    "### Response to evaluate:\n{answer}\n\n"
    "### Score name\n{criteria_name}\n\n"
    "### Score Rubrics:\n{rubrics}"
)

# The 4B judge's pairwise prompt: POLLUX's demo/serve_pollux_demo.py:40-54 (ai-forever/POLLUX), the original Russian
# template kept there commented out ("# " removed from each line, a bare "#" a blank line). It ends with one newline
# after {rubrics}: the closing quotes stand on their own line (line 54). The criterion is part of the comparison
# scale's text (lines 77-78); the verdict is -1 (answer 1 better), 0 (tie) or 1 (answer 2 better).
PAIRWISE_TEMPLATE = (
    "### Инструкция\n"
    "Даны два ответа для оценки и шкала их сравнения. Необходимо сравнить ответы по качеству выполнения задания и "
    "вернуть число в соответствии со шкалой сравнения ответов.\n\n"
    "### Задание для оценки:\n{instruction}\n\n"
    "### Ответ 1 для оценки:\n{answer_1}\n\n"
    "### Ответ 2 для оценки:\n{answer_2}\n\n"
    "### Шкала сравнения ответов:\n{rubrics}\n"
)
PAIRWISE_FIELDS = ("instruction", "answer_1", "answer_2", "rubrics")

#: The fields a pointwise template takes (``prompt_fields``).
PROMPT_FIELDS = ("instruction", "reference_answer", "answer", "criteria_name", "rubrics")
#: Where a pointwise template's criterion part starts: what comes before it is the same for every criterion.
_CRITERION_HEADER = "### Критерий оценки:"


@dataclass(frozen=True)
class PromptTemplate:
    """A Russian pointwise judge template and the version name that every stage rendering it records.

    Attributes:
        version: e.g. ``pollux-ru-v2`` (``PROMPT_VERSION``), ``pollux-ru-4b-v1`` (``PROMPT_VERSION_4B``).
        text: the template over the five prompt fields (``RU_TEMPLATE``, ``RU_TEMPLATE_4B``).
    """

    version: str
    text: str

    def __post_init__(self) -> None:
        # judge-serve tokenizes the part before the criterion once per item (serve.jobs): it must be one.
        if self.text.count(_CRITERION_HEADER) != 1:
            raise ValueError(f"prompt template {self.version}: {_CRITERION_HEADER!r} must occur exactly once")

    def render(self, item: Any, clean: bool = False) -> str:
        """The prompt for one (instruction, answer, criterion); ``item`` and ``clean`` as for ``render_prompt``."""
        return self.text.format(**prompt_fields(item, clean))

    @property
    def shared_part(self) -> str:
        """The template up to the criterion (instruction, reference answer, answer): one item's criteria share it."""
        return self.text[: self.text.index(_CRITERION_HEADER)]

    @property
    def criterion_part(self) -> str:
        """The template from ``### Критерий оценки:`` on (the criterion's name and rubric, and what follows)."""
        return self.text[self.text.index(_CRITERION_HEADER):]


#: The POLLUX judges' prompt (the 7B/32B releases, every judge-train export): ``pollux-ru-v2``.
POLLUX_PROMPT = PromptTemplate(PROMPT_VERSION, RU_TEMPLATE)
#: The released Pollux-4B-Judge's own prompt: ``pollux-ru-4b-v1``.
POLLUX_4B_PROMPT = PromptTemplate(PROMPT_VERSION_4B, RU_TEMPLATE_4B)
#: The pointwise templates this toolkit renders, by version.
PROMPT_TEMPLATES: Mapping[str, PromptTemplate] = {t.version: t for t in (POLLUX_PROMPT, POLLUX_4B_PROMPT)}


def _field(value: Any, field: str, clean: bool) -> str:
    if value is None:
        if field == "reference_answer":
            return ""
        raise ValueError(f"prompt field {field!r} is missing")
    if not isinstance(value, str):
        raise TypeError(f"prompt field {field!r} must be text, got {value_words(value)}")
    if clean:
        # Opt-in only (not POLLUX's): blank lines around a field change the section layout, while indentation
        # inside it (code answers) must survive, so only newlines at the start and whitespace at the end go.
        return value.lstrip("\r\n").rstrip()
    return value


def prompt_fields(item: Any, clean: bool = False) -> dict[str, str]:
    """The five prompt fields of a record-like item (a ``JudgeRecord``, any object with those attributes, or a
    mapping), as the templates take them.

    Args:
        item: the record-like item.
        clean: strip leading newlines and trailing whitespace from every field. Off by default: POLLUX fills its
            template with the raw fields, and the released judges were trained and evaluated so.

    Returns:
        Field name -> text; a missing (``None``) reference answer is ``""``.

    Raises:
        ValueError: a required field is missing; TypeError: a field is not text.
    """
    get = item.get if isinstance(item, Mapping) else lambda name: getattr(item, name, None)
    return {name: _field(get(name), name, clean) for name in PROMPT_FIELDS}


def render_prompt(item: Any, clean: bool = False) -> str:
    """The Russian POLLUX judge prompt for one (instruction, answer, criterion).

    Args:
        item: a ``JudgeRecord`` or a mapping with ``instruction``, ``answer``, ``criteria_name``, ``rubrics`` and
            optionally ``reference_answer``.
        clean: opt-in field cleaning (see ``prompt_fields``); the default is POLLUX's raw ``str.format``.

    Returns:
        The prompt text (no chat wrapping; see ``apply_chat``). The released Pollux-4B-Judge is asked with
        ``POLLUX_4B_PROMPT.render`` instead (``judge.checkpoints.prompt_template_and_why``).
    """
    return POLLUX_PROMPT.render(item, clean)


def render_prompt_en(item: Any, clean: bool = False) -> str:
    """The paper's English prompt for the teacher and the API baseline judges (same fields as ``render_prompt``).

    Args:
        item: as for ``render_prompt``.
        clean: opt-in field cleaning (see ``prompt_fields``).

    Returns:
        The prompt text.
    """
    return EN_TEMPLATE.format(**prompt_fields(item, clean))


def render_pairwise_prompt(item: Any) -> str:
    """The 4B judge's pairwise prompt for two answers to one instruction (``PAIRWISE_TEMPLATE``).

    Args:
        item: a mapping or object with ``instruction``, ``answer_1``, ``answer_2`` and ``rubrics`` (the comparison
            scale, criterion included); the fields go in raw, as POLLUX's ``str.format`` puts them.

    Raises:
        ValueError: a field is missing; TypeError: a field is not text.
    """
    values = {}
    for name in PAIRWISE_FIELDS:
        value = _get(item, name)
        if value is None:
            raise ValueError(f"prompt field {name!r} is missing")
        if not isinstance(value, str):
            raise TypeError(f"prompt field {name!r} must be text, got {value_words(value)}")
        values[name] = value
    return PAIRWISE_TEMPLATE.format(**values)


#: Keyword arguments a tagged-format judge's chat rendering passes to the chat template: **thinking off**. A Qwen3
#: template (a tagged judge judge-train built on Qwen3) then closes an empty ``<think>\n\n</think>\n\n`` block after
#: the generation prompt, so the judge writes its verdict at once, as it was trained to; ChatML templates (the Qwen2.5
#: 7B/32B judges) never read the variable and render byte for byte as without it. Integer-format judges
#: (``Pollux-4B-Judge``, judge-train's with ``verdict_format`` integer) are rendered without it, thinking on: they were
#: trained to reason before the integer (``apply_chat(..., thinking=True)`` in judge-serve; judge-eval's chat requests
#: and judge-serve's engine send it for tagged judges only). Used by ``apply_chat`` (training rows, judge-serve's
#: prompts, the regression head's input), by the seq2seq recipe's trl dataset (``chat_template_kwargs`` column) and,
#: as ``chat_template_kwargs``, by judge-eval's chat requests to vLLM and judge-serve's engine
#: (``--default-chat-template-kwargs``).
#: Read-only (a ``MappingProxyType``): a caller that updated the shared dict turned thinking on for every later
#: ``apply_chat`` in the process; copy it (``dict(...)``) to send or change it.
JUDGE_CHAT_TEMPLATE_KWARGS: Mapping[str, Any] = MappingProxyType({"enable_thinking": False})


def chat_messages(prompt: str, completion: str | None = None) -> list[dict[str, str]]:
    """A prompt as chat messages: one user turn, plus the assistant turn when ``completion`` is given."""
    messages = [{"role": "user", "content": prompt}]
    if completion is not None:
        messages.append({"role": "assistant", "content": completion})
    return messages


def apply_chat(tokenizer, prompt: str, completion: str | None = None, *, thinking: bool = False) -> str:
    """Wrap a prompt with the tokenizer's own chat template, thinking turned off (unless ``thinking``).

    This is where a judge's thinking is turned off for every text the toolkit renders itself: the template gets
    ``enable_thinking=False`` (:data:`JUDGE_CHAT_TEMPLATE_KWARGS`). For a Qwen3 template the generation prompt
    then ends ``<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n``, and an assistant turn renders after the same
    empty block, so the prompt stays an exact prefix of prompt + verdict; ChatML templates ignore the switch.

    Args:
        tokenizer: a transformers tokenizer with a chat template.
        prompt: the rendered judge prompt.
        completion: when given, the assistant turn is included (training text, or the sequence a regression head
            reads); otherwise the generation prompt is appended (what the judge is asked to continue).
        thinking: leave the template's thinking on (no ``enable_thinking`` is passed): integer-format judges
            (``Pollux-4B-Judge``) were released to reason before they answer.

    Returns:
        The chat-formatted text.
    """
    kwargs = {} if thinking else dict(JUDGE_CHAT_TEMPLATE_KWARGS)
    if completion is None:
        return tokenizer.apply_chat_template(chat_messages(prompt), tokenize=False, add_generation_prompt=True, **kwargs)
    return tokenizer.apply_chat_template(chat_messages(prompt, completion), tokenize=False, add_generation_prompt=False,
                                         **kwargs)


def prefix_key(item: Any) -> tuple[str, str, str]:
    """What the POLLUX prompts of one item share up to the criterion: ``(instruction, reference_answer, answer)``
    (a missing reference reads as "", as ``render_prompt`` renders it)."""
    return (_get(item, "instruction") or "", _get(item, "reference_answer") or "", _get(item, "answer") or "")


def prefix_order(keys: Sequence[Hashable]) -> list[int]:
    """Indices of ``keys`` grouped by equal key, groups in order of first appearance, stable inside a group.

    With ``prefix_key`` as the key, all criteria of one answer become consecutive: their prompts differ only from
    the criterion on, so a vLLM engine computes the shared prefix once (its prefix cache). judge-serve orders each
    request's jobs this way and judge-eval its items. ``prefix_order(["a", "b", "a"]) == [0, 2, 1]``.
    """
    groups: dict[Hashable, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    return [index for members in groups.values() for index in members]


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)

"""The judge prompts: one renderer for training, serving and evaluation.

Two templates, both from the POLLUX paper (Appendix M.1):

- the **Russian judge prompt** the POLLUX judges are trained and served with (``render_prompt``): five
  ``###`` sections, one blank line apart. With no reference answer the reference section stays, empty: the
  released judges were trained so.
- the **English task-description prompt** for teacher and baseline judges (``render_prompt_en``): the task
  description, the same fields, and the ``[FEEDBACK] ... [RESULT] ... [END]`` output instructions.

A prompt is wrapped as a single user turn through the model tokenizer's own chat template
(``chat_messages``, ``apply_chat``). A template change — even one newline — changes ``PROMPT_VERSION``, which every training run writes
into its ``run.json`` so a checkpoint can be matched with the template it learned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge.scales import scale_of

__all__ = [
    "PROMPT_VERSION",
    "PROMPT_VERSION_EN",
    "render_prompt",
    "render_prompt_en",
    "prompt_fields",
    "chat_messages",
    "apply_chat",
]

PROMPT_VERSION = "pollux-ru-v1"
PROMPT_VERSION_EN = "pollux-en-v1"

_RU_TEMPLATE = (
    "### Задание для оценки:\n{instruction}\n\n"
    "### Эталонный ответ:\n{reference_answer}\n\n"
    "### Ответ для оценки:\n{answer}\n\n"
    "### Критерий оценки:\n{criteria_name}\n\n"
    "### Шкала оценивания по критерию:\n{rubrics}"
)

_EN_TEMPLATE = (
    "###Task Description:\n"
    "An instruction (might include an Input inside it), a response to evaluate, a reference answer (possibly "
    "empty) and a score rubric representing an evaluation criterion are given.\n"
    "1. Write a detailed feedback in Russian that assesses the quality of the response strictly based on the "
    "given score rubric, not evaluating in general.\n"
    "2. After writing the feedback, write a score that is an integer between {low} and {high}. You should refer "
    "to the score rubric.\n"
    '3. The output format should look as follows: "[FEEDBACK] (write a feedback for the criterion) [RESULT] '
    '(an integer number between {low} and {high}) [END]"\n'
    "4. Please do not generate any other opening, closing, or explanations.\n\n"
    "###The instruction to evaluate:\n{instruction}\n\n"
    "###Reference Answer:\n{reference_answer}\n\n"
    "###Response to evaluate:\n{answer}\n\n"
    "###Score Rubrics:\n[{criteria_name}]\n{rubrics}\n\n"
    "###Feedback:"
)

_FIELDS = ("instruction", "reference_answer", "answer", "criteria_name", "rubrics")


def _clean(value: Any, field: str) -> str:
    if value is None:
        if field == "reference_answer":
            return ""
        raise ValueError(f"prompt field {field!r} is missing")
    if not isinstance(value, str):
        raise TypeError(f"prompt field {field!r} must be text, got {type(value).__name__}")
    # Blank lines around a field would change the section layout; indentation inside it (code answers) must
    # survive, so only newlines are stripped at the start and whitespace at the end.
    return value.lstrip("\r\n").rstrip()


def prompt_fields(item: Any) -> dict[str, str]:
    """The five prompt fields of a record-like item (a ``JudgeRecord``, any object with those attributes, or a
    mapping), cleaned as the templates use them."""
    get = item.get if isinstance(item, Mapping) else lambda name: getattr(item, name, None)
    return {name: _clean(get(name), name) for name in _FIELDS}


def render_prompt(item: Any) -> str:
    """The Russian POLLUX judge prompt for one (instruction, answer, criterion).

    Args:
        item: a ``JudgeRecord`` or a mapping with ``instruction``, ``answer``, ``criteria_name``, ``rubrics`` and
            optionally ``reference_answer``.

    Returns:
        The prompt text (no chat wrapping; see ``apply_chat``).
    """
    return _RU_TEMPLATE.format(**prompt_fields(item))


def render_prompt_en(item: Any) -> str:
    """The English task-description prompt for teacher and baseline judges (same fields as ``render_prompt``).

    The score range in the output instructions comes from the rubric's scale.
    """
    fields = prompt_fields(item)
    scale = scale_of(fields["rubrics"])
    return _EN_TEMPLATE.format(low=scale.min, high=scale.max, **fields)


#: Keyword arguments every judge chat rendering passes to the chat template: **thinking off**. Qwen3 templates
#: (``Pollux-4B-Judge``) then close an empty ``<think>\n\n</think>\n\n`` block after the generation prompt, so the
#: judge writes its verdict at once, as it was trained to; ChatML templates (Qwen2.5 judges) never read the variable
#: and render byte for byte as without it. Used by ``apply_chat`` (training rows, judge-serve's prompts, the regression
#: head's input), by the seq2seq recipe's trl dataset (``chat_template_kwargs`` column) and, as
#: ``chat_template_kwargs``, by judge-eval's chat requests to vLLM.
JUDGE_CHAT_TEMPLATE_KWARGS: Mapping[str, Any] = {"enable_thinking": False}


def chat_messages(prompt: str, completion: str | None = None) -> list[dict[str, str]]:
    """A prompt as chat messages: one user turn, plus the assistant turn when ``completion`` is given."""
    messages = [{"role": "user", "content": prompt}]
    if completion is not None:
        messages.append({"role": "assistant", "content": completion})
    return messages


def apply_chat(tokenizer, prompt: str, completion: str | None = None) -> str:
    """Wrap a prompt with the tokenizer's own chat template, thinking turned off.

    This is where a judge's thinking is turned off for every text the toolkit renders itself: the template gets
    ``enable_thinking=False`` (:data:`JUDGE_CHAT_TEMPLATE_KWARGS`). For a Qwen3 template the generation prompt
    then ends ``<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n``, and an assistant turn renders after the same
    empty block, so the prompt stays an exact prefix of prompt + verdict; ChatML templates ignore the switch.

    Args:
        tokenizer: a transformers tokenizer with a chat template.
        prompt: the rendered judge prompt.
        completion: when given, the assistant turn is included (training text, or the sequence a regression head
            reads); otherwise the generation prompt is appended (what the judge is asked to continue).

    Returns:
        The chat-formatted text.
    """
    if completion is None:
        return tokenizer.apply_chat_template(chat_messages(prompt), tokenize=False, add_generation_prompt=True,
                                             **JUDGE_CHAT_TEMPLATE_KWARGS)
    return tokenizer.apply_chat_template(chat_messages(prompt, completion), tokenize=False, add_generation_prompt=False,
                                         **JUDGE_CHAT_TEMPLATE_KWARGS)

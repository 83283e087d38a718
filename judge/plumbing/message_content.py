"""A chat completion's ``message.content`` read as text, one way for every client of an OpenAI-compatible endpoint.

The chat API allows a message's content to be a string, null, or a list of typed parts; servers such as Mistral's
send the answer as ``[{"type": "text", "text": ...}]`` and their reasoning as ``"thinking"`` parts beside it. Every
stage that reads an answer (the synthetic data stages, judge-eval's judge and candidate clients, MERA) reads it here,
so that a list never reaches a ``str`` method as a crash, and a part no stage can read is a failed request, not text.
Before that, ``no_choice_said`` says of an HTTP 200 that holds no choice to read what every client says of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from judge.plumbing.json_reading import value_words

__all__ = ["REASONING_FIELDS", "REASONING_PARTS", "described_content", "message_text", "no_choice_said",
           "separated_reasoning", "without_lone_surrogates"]

#: A UTF-16 surrogate standing alone in a Python string: what a JSON ``\\ud800`` escape with no pair decodes to.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

#: Content parts that carry the model's reasoning, not its answer: skipped when the answer's text parts are read.
REASONING_PARTS = ("thinking", "reasoning")


def message_text(content: Any) -> str | None:
    """A message's ``content`` as text: a string as it is, nothing (None) as "", and a list of text parts
    (``[{"type": "text", "text": ...}]``, the content-part form of the chat API) joined; None for anything else (an
    object, a number, a part that is not text: an image, a refusal), which no stage can read as an answer."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict):
                kind, text = part.get("type"), part.get("text")
            else:  # an SDK part object
                kind, text = getattr(part, "type", None), getattr(part, "text", None)
            if kind in REASONING_PARTS:  # a model's thinking sent beside its answer (Mistral's "thinking" chunks)
                continue
            if kind != "text" or not isinstance(text, str):
                return None
            texts.append(text)
        return "".join(texts) if texts or not content else None  # reasoning parts alone: no answer
    return None


#: The fields a chat message returns its reasoning in apart from its content, in the order ``separated_reasoning``
#: reads them: vLLM's ``reasoning`` (``--reasoning-parser``); ``reasoning_content``, as DeepSeek's API, SGLang,
#: older vLLM and trl's response schemas (``trl/chat_template_utils.py``) name it; ``thinking``, trl's LFM2.5 schema.
REASONING_FIELDS = ("reasoning", "reasoning_content", "thinking")


def separated_reasoning(message: Any) -> str | None:
    """A chat message's reasoning returned apart from its content, one reading for every stage (judge-eval's judge
    clients, MERA, the synthetic-data stages, the GRPO rewards): the first of ``REASONING_FIELDS`` holding more than
    whitespace, a string as it is or a list of text parts as ``message_text`` joins them; None when none does.

    ``message`` is an SDK message, whose type keeps a field it does not declare in ``model_extra``, or a JSON
    object (a mapping, as trl passes completions). A field of whitespace only is an empty block, no reasoning: a
    server may send ``"reasoning": "\n"`` beside a ``reasoning_content`` that holds the text.
    """
    if message is None:
        return None
    if isinstance(message, Mapping):
        values = map(message.get, REASONING_FIELDS)
    else:
        extra = getattr(message, "model_extra", None) or {}
        values = (getattr(message, name, None) or extra.get(name) for name in REASONING_FIELDS)
    for value in values:
        text = value if isinstance(value, str) else message_text(value) if isinstance(value, list) else None
        if text and text.strip():
            return text
    return None


def described_content(content: Any) -> str:
    """What an unreadable ``content`` was, for the failed request's message (never its text, which may be large): a
    JSON value by its kind as the chat API's JSON names it ("an object", "an integer"), a part by its ``type``."""
    if isinstance(content, list):
        kinds = sorted({str(part.get("type")) if isinstance(part, dict) else value_words(part) for part in content})
        return f"a list of parts ({', '.join(kinds)})"
    return value_words(content)


def without_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate read as U+FFFD, as vLLM writes bytes that are no text.

    A server of another kind may send a JSON-escaped lone surrogate (``"\\ud800"``), which no UTF-8 text can carry:
    kept, it failed far from its answer, where the text was encoded again (judge-serve's answer, a 500) or read as
    UTF-8 (Arrow's reader of the predictions ``judge-eval score`` reads, which refuses the whole file).
    """
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def _cut(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def no_choice_said(response: Any) -> str | None:
    """Why an HTTP 200 chat or text completion, as the OpenAI SDK read it, holds no choice to read; None where it
    holds a list of them. The SDK hands back a body not labelled JSON (a proxy's HTML page) as its text and a JSON
    list as a list: "not a JSON object with choices"; it reads an object without ``choices`` (a proxy's
    ``{"error": ...}``), or with null or a value that is no list there, as a completion: "holds no choice", with the
    server's words where it sent an error. An empty list gets the same words, for a caller that takes it for no
    answer; one that reads it as the server's answer of no choice checks for it first."""
    choices = getattr(response, "choices", None)
    if isinstance(choices, list) and choices:
        return None
    if not hasattr(response, "choices"):
        return f"HTTP 200, but the answer is not a JSON object with choices: {_cut(repr(response))}"
    said = (getattr(response, "model_extra", None) or {}).get("error")
    said = said.get("message", said) if isinstance(said, dict) else said
    return "HTTP 200, but the answer holds no choice" + (f": {_cut(str(said))}" if said else "")

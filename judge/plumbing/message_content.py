"""A chat completion's ``message.content`` read as text, one way for every client of an OpenAI-compatible endpoint.

The chat API allows a message's content to be a string, null, or a list of typed parts; servers such as Mistral's
send the answer as ``[{"type": "text", "text": ...}]`` and their reasoning as ``"thinking"`` parts beside it. Every
stage that reads an answer (the synthetic data stages, judge-eval's judge and candidate clients, MERA) reads it here,
so that a list never reaches a ``str`` method as a crash, and a part no stage can read is a failed request, not text.
"""

from __future__ import annotations

import re
from typing import Any

from judge.plumbing.json_reading import value_words

__all__ = ["REASONING_PARTS", "described_content", "message_text", "without_lone_surrogates"]

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

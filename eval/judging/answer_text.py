"""A chat answer's content as the text a judge or a ranked candidate wrote, reasoning cut short included.

``judge.plumbing.message_content.message_text`` reads content parts as text, skipping reasoning parts, and gives None
for content no stage can read as an answer (an image or refusal part, an object). Content made of reasoning parts
alone is not such content: it is what Mistral's API sends for a model that ``max_tokens`` stopped while it was
thinking. The same cut written inline is an unclosed ``<think>`` (ai-forever/POLLUX ``src/answer.py``
``strip_think_tags`` reads it as an empty answer; a judge's verdict reader as ``unclosed_think``), so it is given that
form here: the judge's clients and ``judge-eval rank`` treat both cuts alike, instead of asking the second again on
every rerun as a failed request.
"""

from __future__ import annotations

from typing import Any

from judge.plumbing.message_content import REASONING_PARTS, message_text

__all__ = ["answer_text", "reasoning_only"]


def reasoning_only(content: Any) -> str | None:
    """The text of ``content`` made of reasoning parts alone (at least one ``thinking`` or ``reasoning`` part and no
    other), joined; None for any other content. A part's text is its ``thinking`` (or ``reasoning``) field, else its
    ``text``: a string, or text parts (Mistral's thinking chunk); a part without readable text adds nothing."""
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for part in content:
        read = part.get if isinstance(part, dict) else (lambda name, part=part: getattr(part, name, None))
        kind = read("type")
        if kind not in REASONING_PARTS:
            return None
        said = read(kind)
        said = read("text") if said is None else said
        if isinstance(said, list):
            said = message_text(said)
        texts.append(said if isinstance(said, str) else "")
    return "".join(texts)


def answer_text(content: Any) -> str | None:
    """``message_text(content)``; for reasoning parts alone (``reasoning_only``), ``"<think>"`` and their text, never
    closed: the answer cut inside its reasoning, as a model writing its reasoning inline leaves it. None for content
    that is no text."""
    text = message_text(content)
    thinking = reasoning_only(content) if text is None else None
    return "<think>" + thinking if thinking is not None else text

"""One reading of a chat message's reasoning returned apart from its content
(``judge.plumbing.message_content.separated_reasoning``), shared by judge-eval's judge clients, MERA, the
synthetic-data stages and the GRPO rewards, which each read it their own way before: other fields, other orders,
a whitespace-only field taken for a reasoning by one and not by another."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletionMessage

from judge.plumbing.message_content import REASONING_FIELDS, separated_reasoning

R = "Ошибок нет: текст исправлен верно."


@pytest.mark.parametrize("fields, read", [
    ({"reasoning": R}, R),                                   # vLLM with --reasoning-parser
    ({"reasoning_content": R}, R),                           # DeepSeek's API, SGLang, older vLLM, trl's schemas
    ({"thinking": R}, R),                                    # trl's LFM2.5 schema
    ({"reasoning": "a", "reasoning_content": "b"}, "a"),     # REASONING_FIELDS' order decides
    ({"reasoning": " \n", "reasoning_content": R}, R),       # an empty block beside the text is no reasoning
    ({"reasoning": [{"type": "text", "text": "раз, "}, {"type": "text", "text": "два"}]}, "раз, два"),
    ({"reasoning": " \n"}, None), ({"reasoning": ""}, None), ({"reasoning": None}, None), ({}, None),
    ({"reasoning": {"text": R}}, None), ({"reasoning": [{"type": "image_url"}]}, None),  # not text: none
])  # fmt: skip
def test_a_message_read_as_an_sdk_object_and_as_json_alike(fields, read):
    message = {"role": "assistant", "content": "2", **fields}
    assert separated_reasoning(message) == read
    # the SDK's message type declares none of these fields: they arrive in model_extra
    sdk = ChatCompletionMessage.model_validate(message)
    assert set(fields) <= set(sdk.model_extra or {})
    assert separated_reasoning(sdk) == read


def test_the_fields_and_their_order():
    assert REASONING_FIELDS == ("reasoning", "reasoning_content", "thinking")
    assert separated_reasoning(None) is None


def test_every_stage_reads_it_through_the_one_reader():
    """judge-eval's ``reasoning_of`` and the reward's ``completion_reasoning`` give what it gives, on the case where
    they differed: a whitespace-only ``reasoning`` beside a ``reasoning_content`` that holds the text."""
    from eval.judging.backends import reasoning_of
    from judge.rewards import completion_reasoning

    message = {"role": "assistant", "content": "2", "reasoning": "\n", "reasoning_content": R}
    assert reasoning_of(ChatCompletionMessage.model_validate(message)) == R
    assert completion_reasoning([message]) == R

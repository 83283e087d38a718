"""``judge.chat_tokens.chat_parts`` with a completion: the judge's output is the assistant turn's text, found where
the turn ends, not at an earlier occurrence of the same characters in the chat template's own text."""

from __future__ import annotations

from judge.chat_tokens import chat_parts


def test_a_completion_that_the_template_also_writes_is_found_where_the_turn_ends():
    text = "<|im_start|>user\nP<|im_end|>\n<|im_start|>assistant\nassistant<|im_end|>\n"
    parts = chat_parts(text, "P", completion="assistant")
    assert parts == ["<|im_start|>user\n", "P", "<|im_end|>\n<|im_start|>assistant\n", "assistant", "<|im_end|>\n"]
    assert "".join(parts) == text


def test_without_a_completion_the_prompt_alone_is_the_requests():
    text = "<|im_start|>user\nP<|im_end|>\n<|im_start|>assistant\n"
    assert chat_parts(text, "P") == ["<|im_start|>user\n", "P", "<|im_end|>\n<|im_start|>assistant\n"]

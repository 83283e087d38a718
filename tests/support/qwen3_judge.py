"""What tests/unit/test_qwen3_judge.py and tests/integration/training/test_qwen3_judge.py share."""

from __future__ import annotations


import pytest

from train.tiny_models import (
    build_qwen3_tokenizer,
)

PROMPT = "### Задание для оценки:\nОцени.\n\n### Критерий оценки:\nГрамотность"
#: The rendering of one user turn through Qwen3's real template with thinking off, derived by hand from
#: QWEN3_CHAT_TEMPLATE: the user turn, the generation prompt, then the empty thinking block the template closes.
QWEN3_PROMPT_TEXT = (
    "<|im_start|>user\n" + PROMPT + "<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


@pytest.fixture(scope="module")
def qwen3_tokenizer():
    """Qwen3's tokenizer: the real Qwen2.5 BPE, Qwen3's added tokens, Qwen3's chat template."""
    return build_qwen3_tokenizer()


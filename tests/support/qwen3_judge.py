"""What tests/unit/test_qwen3_judge.py and tests/integration/training/test_qwen3_judge.py share."""

from __future__ import annotations

PROMPT = "### Задание для оценки:\nОцени.\n\n### Критерий оценки:\nГрамотность"
#: The rendering of one user turn through Qwen3's real template with thinking off, derived by hand from
#: QWEN3_CHAT_TEMPLATE: the user turn, the generation prompt, then the empty thinking block the template closes.
QWEN3_PROMPT_TEXT = (
    "<|im_start|>user\n" + PROMPT + "<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


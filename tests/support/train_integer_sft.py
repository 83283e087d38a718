"""What tests/unit/test_train_integer_sft.py and tests/integration/training/test_train_integer_sft.py share."""

from __future__ import annotations

import judge

PROMPT_FIELDS = {"instruction": "Оцени.", "answer": "Ответ.", "reference_answer": "", "criteria_name": "Грамотность",
                 "rubrics": "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"}  # fmt: skip
REASONING = "Ищу ошибки.\nОшибок нет."
#: judge.render_prompt of PROMPT_FIELDS, derived by hand from the M.1 Russian template (five sections, empty reference).
PROMPT = (
    "### Задание для оценки:\nОцени.\n\n### Эталонный ответ:\n\n\n### Ответ для оценки:\nОтвет.\n\n"
    "### Критерий оценки:\nГрамотность\n\n### Шкала оценивания по критерию:\n0: много ошибок\n\n1: есть ошибки\n\n"
    "2: ошибок нет"
)
#: The assistant turn the judge learns: Qwen3's rendering of (reasoning, answer), then the end of turn.
COMPLETION_TEXT = "<think>\nИщу ошибки.\nОшибок нет.\n</think>\n\n2<|im_end|>\n"
#: The whole training text through Qwen3's template with thinking left on, derived by hand: the user turn, the bare
#: generation prompt (no empty <think> block: that is the thinking-off rendering), then the completion.
TRAINING_TEXT = "<|im_start|>user\n" + PROMPT + "<|im_end|>\n<|im_start|>assistant\n" + COMPLETION_TEXT


def trace_record(**extra):
    """One reasoning-trace row as `judge-train data traces` writes it (extra columns reasoning, reasoning_score)."""
    row = {"id": "item-1#0", **PROMPT_FIELDS, "expert_scores": [2, 2, 1], "criteria_score": 5 / 3,
           "task_type": "Editing", "item_id": "item-1", "reasoning": REASONING, "reasoning_score": 2, **extra}  # fmt: skip
    return judge.records_from_rows([row], source="traces.jsonl")[0]


"""The judge prompts, pinned as exact strings: a one-newline drift between train and serve ruins a judge.

Expected strings are written out by hand from the POLLUX paper, Appendix M.1: the Russian prompt
and the English one (arXiv 2505.24616v3).
"""

import pytest

import judge
from judge import (
    PROMPT_VERSION,
    PROMPT_VERSION_EN,
    JudgeRecord,
    apply_chat,
    chat_messages,
    prompt_fields,
    render_prompt,
    render_prompt_en,
)

ITEM = {
    "instruction": "Объясни, что такое фотосинтез, в двух предложениях.",
    "reference_answer": "Фотосинтез — это процесс образования органических веществ на свету.",
    "answer": "Фотосинтез — процесс, при котором растения на свету превращают углекислый газ и воду в сахар.",
    "criteria_name": "Фактологичность",
    "rubrics": "0: Есть фактические ошибки.\n\n1: Есть неточности.\n\n2: Ошибок нет.",
}

EXPECTED_RU = (
    "### Задание для оценки:\n"
    "Объясни, что такое фотосинтез, в двух предложениях.\n"
    "\n"
    "### Эталонный ответ:\n"
    "Фотосинтез — это процесс образования органических веществ на свету.\n"
    "\n"
    "### Ответ для оценки:\n"
    "Фотосинтез — процесс, при котором растения на свету превращают углекислый газ и воду в сахар.\n"
    "\n"
    "### Критерий оценки:\n"
    "Фактологичность\n"
    "\n"
    "### Шкала оценивания по критерию:\n"
    "0: Есть фактические ошибки.\n\n1: Есть неточности.\n\n2: Ошибок нет."
)


def test_russian_prompt_exact():
    """The Russian POLLUX prompt renders byte for byte as pinned."""
    assert render_prompt(ITEM) == EXPECTED_RU


def test_record_and_mapping_render_alike():
    """A JudgeRecord renders exactly like the equivalent mapping."""
    record = JudgeRecord(id="x", **ITEM)
    assert render_prompt(record) == EXPECTED_RU


@pytest.mark.parametrize("reference", ["", None])
def test_missing_reference_keeps_empty_section(reference):
    """With no reference answer the section stays, empty, as the released judges were trained."""
    prompt = render_prompt({**ITEM, "reference_answer": reference})
    assert "### Эталонный ответ:\n\n\n### Ответ для оценки:\n" in prompt
    assert prompt.count("###") == 5


# Fields that start/end with spaces and newlines, as real rows do (a code answer ending in "\n").
RAW_ITEM = {
    "instruction": "\n  Исправь функцию:\n\ndef f(x):\n    return x+1 ",
    "reference_answer": "  def f(x):\n    return x + 1\n",
    "answer": "```python\ndef f(x):\n    return x + 1\n```\n",
    "criteria_name": " Корректность решения\n",
    "rubrics": "0: Нет.\n\n1: Да.\n\n",
}

# The Russian prompt of Appendix M.1 filled by str.format, field by field, nothing stripped: header line,
# the field as it is, then "\n\n" before the next header; nothing after the rubrics.
EXPECTED_RU_RAW = (
    "### Задание для оценки:\n"
    "\n  Исправь функцию:\n\ndef f(x):\n    return x+1 "  # instruction, leading "\n  " and trailing " " kept
    "\n\n"
    "### Эталонный ответ:\n"
    "  def f(x):\n    return x + 1\n"  # reference, leading spaces and final newline kept
    "\n\n"
    "### Ответ для оценки:\n"
    "```python\ndef f(x):\n    return x + 1\n```\n"  # code answer ending in "\n"
    "\n\n"
    "### Критерий оценки:\n"
    " Корректность решения\n"
    "\n\n"
    "### Шкала оценивания по критерию:\n"
    "0: Нет.\n\n1: Да.\n\n"
)


def test_raw_fields_render_as_pollux_str_format():
    """Fields are not stripped or normalised: the prompt is POLLUX's test_pollux.txt .format(**raw fields)."""
    assert render_prompt(RAW_ITEM) == EXPECTED_RU_RAW


def test_prompt_fields_are_raw_by_default():
    """prompt_fields returns every field unchanged, and None as "" for the reference only."""
    assert prompt_fields(RAW_ITEM) == RAW_ITEM
    assert prompt_fields({**RAW_ITEM, "reference_answer": None})["reference_answer"] == ""


def test_clean_is_an_opt_in_that_keeps_inner_indentation():
    """clean=True drops leading newlines and trailing whitespace of each field, and nothing else."""
    answer = "\n\ndef f(x):\n    return x + 1\n\n"
    assert "### Ответ для оценки:\n\n\ndef f(x):\n    return x + 1\n\n\n\n### Критерий" in render_prompt({**ITEM, "answer": answer})
    prompt = render_prompt({**ITEM, "answer": answer}, clean=True)
    assert "### Ответ для оценки:\ndef f(x):\n    return x + 1\n\n### Критерий оценки:" in prompt
    assert prompt_fields(RAW_ITEM, clean=True) == {
        "instruction": "  Исправь функцию:\n\ndef f(x):\n    return x+1",
        "reference_answer": "  def f(x):\n    return x + 1",
        "answer": "```python\ndef f(x):\n    return x + 1\n```",
        "criteria_name": " Корректность решения",
        "rubrics": "0: Нет.\n\n1: Да.",
    }


def test_prompt_versions_name_the_raw_field_templates():
    """The raw-field templates carry new versions (v1 stripped fields; en-v1 was not the paper's prompt)."""
    assert (PROMPT_VERSION, PROMPT_VERSION_EN) == ("pollux-ru-v2", "pollux-en-v2")


@pytest.mark.parametrize("field", ["instruction", "answer", "criteria_name", "rubrics"])
def test_missing_required_field_is_an_error(field):
    """A prompt is never rendered with a hole in it."""
    with pytest.raises(ValueError, match=field):
        render_prompt({**ITEM, field: None})


# The English prompt of Appendix M.1 (the lines inside its code fence), {criteria.name} -> criteria_name and
# {criteria.rubrics} -> rubrics. The paper is silent on a trailing newline: none, like the Russian prompt.
EXPECTED_EN = (
    "### Task Description:\n"
    "You are provided with the following: an instruction (which may include an input), a response to evaluate, a "
    "reference answer and an evaluation criterion with a detailed scale.\n"
    "1. Write detailed feedback assessing the quality of the response strictly according to the provided evaluation "
    "scale. Do not give a general evaluation, base your assessment entirely on the scale.\n"
    "2. Assign a score to the response by referring to the scale. The score must correspond to a single scale point "
    "and its description.\n"
    '3. Format your output as follows: "[FEEDBACK] (Write detailed feedback regarding the evaluated response and the '
    "assigned score, reason step by step and explain each point.) [RESULT] (An integer score within the boundaries of "
    'the criterion scale.)"\n'
    "4. Do not include any additional openings, closings, or explanations.\n"
    "5. Write feedback in Russian.\n"
    "6. Write [END] after you are done.\n"
    "\n"
    "### The instruction to evaluate:\n"
    "Объясни, что такое фотосинтез, в двух предложениях.\n"
    "\n"
    "### Reference answer:\n"
    "Фотосинтез — это процесс образования органических веществ на свету.\n"
    "\n"
    "### Response to evaluate:\n"
    "Фотосинтез — процесс, при котором растения на свету превращают углекислый газ и воду в сахар.\n"
    "\n"
    "### Score name\n"  # no colon in the paper
    "Фактологичность\n"
    "\n"
    "### Score Rubrics:\n"
    "0: Есть фактические ошибки.\n\n1: Есть неточности.\n\n2: Ошибок нет."
)


def test_english_prompt_exact():
    """The English teacher/baseline prompt is the paper's M.1 text byte for byte."""
    assert render_prompt_en(ITEM) == EXPECTED_EN


@pytest.mark.parametrize("reference", ["", None])
def test_english_prompt_keeps_empty_reference_section(reference):
    """With no reference answer the English section stays, empty (the paper is silent; chosen like the Russian)."""
    prompt = render_prompt_en({**ITEM, "reference_answer": reference})
    assert "### Reference answer:\n\n\n### Response to evaluate:\n" in prompt
    assert prompt.count("### ") == 6


def test_english_prompt_keeps_raw_fields():
    """The English prompt takes fields raw too: the code answer's final newline survives."""
    prompt = render_prompt_en(RAW_ITEM)
    assert "### Response to evaluate:\n```python\ndef f(x):\n    return x + 1\n```\n\n\n### Score name\n" in prompt
    assert prompt.endswith("### Score Rubrics:\n0: Нет.\n\n1: Да.\n\n")


def test_chat_messages_single_user_turn():
    """The prompt is one user turn; the completion, when given, one assistant turn."""
    assert chat_messages("P") == [{"role": "user", "content": "P"}]
    assert chat_messages("P", "C") == [{"role": "user", "content": "P"}, {"role": "assistant", "content": "C"}]


def test_apply_chat_uses_the_tokenizers_template(qwen_tokenizer):
    """Through the Qwen2.5 ChatML template the prompt is wrapped exactly so, for generation and for training."""
    prompt = render_prompt(ITEM)
    assert apply_chat(qwen_tokenizer, prompt) == f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
    target = "[FEEDBACK] Верно. [RESULT] 2 [END]"
    assert apply_chat(qwen_tokenizer, prompt, target) == (
        f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n{target}<|im_end|>\n"
    )


def test_the_judge_chat_template_kwargs_are_read_only():
    """JUDGE_CHAT_TEMPLATE_KWARGS was a plain dict: a caller that updated it (to send it with more keys) turned thinking
    on for every later apply_chat in the process. It is read-only; a copy is a dict to send or change."""

    class Recorder:
        def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kwargs):
            return kwargs

    with pytest.raises(TypeError):
        judge.JUDGE_CHAT_TEMPLATE_KWARGS["enable_thinking"] = True
    assert dict(judge.JUDGE_CHAT_TEMPLATE_KWARGS) == {"enable_thinking": False}  # the value, unchanged by the try
    assert apply_chat(Recorder(), "P") == {"enable_thinking": False}
    assert apply_chat(Recorder(), "P", thinking=True) == {}


# One prefix_order, in the contract, for serve and eval.
@pytest.mark.parametrize(
    ("keys", "order"),
    [([], []), (["a"], [0]), (["a", "b", "a"], [0, 2, 1]), (["a", "b", "b", "a", "c", "a"], [0, 3, 5, 1, 2, 4])],
)
def test_prefix_order(keys, order):
    """Equal keys become adjacent, groups keep first-appearance order, members keep their order."""
    assert judge.prefix_order(keys) == order


def test_prefix_key_reads_records_and_mappings_alike():
    """A record and a request item of the same answer share a key; a missing reference reads as ""."""
    record = judge.load_records(judge.sample_data_path())[0]
    item = {"instruction": record.instruction, "answer": record.answer, "reference_answer": record.reference_answer}
    assert judge.prefix_key(record) == judge.prefix_key(item)
    assert judge.prefix_key({"instruction": "I", "answer": "A", "reference_answer": None}) == ("I", "", "A")

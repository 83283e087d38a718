"""The judge prompts, pinned as exact strings: a one-newline drift between train and serve ruins a judge."""

import pytest

from judge import JudgeRecord, apply_chat, chat_messages, render_prompt, render_prompt_en

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


def test_fields_keep_inner_indentation():
    """Code answers keep their indentation; only blank lines at the edges are dropped."""
    answer = "\n\ndef f(x):\n    return x + 1\n\n"
    prompt = render_prompt({**ITEM, "answer": answer})
    assert "### Ответ для оценки:\ndef f(x):\n    return x + 1\n\n### Критерий оценки:" in prompt


@pytest.mark.parametrize("field", ["instruction", "answer", "criteria_name", "rubrics"])
def test_missing_required_field_is_an_error(field):
    """A prompt is never rendered with a hole in it."""
    with pytest.raises(ValueError, match=field):
        render_prompt({**ITEM, field: None})


EXPECTED_EN = (
    "###Task Description:\n"
    "An instruction (might include an Input inside it), a response to evaluate, a reference answer (possibly empty) "
    "and a score rubric representing an evaluation criterion are given.\n"
    "1. Write a detailed feedback in Russian that assesses the quality of the response strictly based on the given "
    "score rubric, not evaluating in general.\n"
    "2. After writing the feedback, write a score that is an integer between 0 and 2. You should refer to the score "
    "rubric.\n"
    '3. The output format should look as follows: "[FEEDBACK] (write a feedback for the criterion) [RESULT] '
    '(an integer number between 0 and 2) [END]"\n'
    "4. Please do not generate any other opening, closing, or explanations.\n"
    "\n"
    "###The instruction to evaluate:\n"
    "Объясни, что такое фотосинтез, в двух предложениях.\n"
    "\n"
    "###Reference Answer:\n"
    "Фотосинтез — это процесс образования органических веществ на свету.\n"
    "\n"
    "###Response to evaluate:\n"
    "Фотосинтез — процесс, при котором растения на свету превращают углекислый газ и воду в сахар.\n"
    "\n"
    "###Score Rubrics:\n"
    "[Фактологичность]\n"
    "0: Есть фактические ошибки.\n\n1: Есть неточности.\n\n2: Ошибок нет.\n"
    "\n"
    "###Feedback:"
)


def test_english_prompt_exact():
    """The English teacher/baseline prompt renders as pinned, with the range taken from the rubric."""
    assert render_prompt_en(ITEM) == EXPECTED_EN


def test_english_prompt_range_follows_rubric():
    """A 0-1 rubric asks for an integer between 0 and 1."""
    prompt = render_prompt_en({**ITEM, "rubrics": "0: нет\n\n1: да"})
    assert "an integer between 0 and 1" in prompt and "between 0 and 2" not in prompt


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

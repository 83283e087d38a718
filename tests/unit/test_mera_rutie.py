"""ruTiE: answer parsing, prompts, metrics, and runs against a scripted endpoint at the HTTP boundary.

``ScriptedEndpoint`` (``tests/support/scripted_endpoint.py``) is a tiny OpenAI-compatible HTTP server, here answering from a
table; it records every request body so the tests can assert the exact prompts that crossed the wire.
``test_mera_humaneval`` reuses the response bodies built here.

The tests of this subject that start heavy components are in tests/integration/mera/test_mera_rutie.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eval.mera import cli
from eval.mera.progress import ResumeMismatch, claim_run_folder
from judge.plumbing.journal import open_journal, read_jsonl
from eval.mera.rutie import (
    CONTEXT_LIMIT,
    EMPTY,
    NO_ANY_DIGIT,
    NO_DIGIT,
    NO_LOGPROBS,
    Answer,
    DataError,
    RutieItem,
    answer_from_logprobs,
    chat_messages,
    completion_prompt,
    context_answer,
    load_dialogues,
    parse_answer,
    parse_answer_mera,
    parse_reply,
    parse_rutie_row,
    render_context,
    rutie_metrics,
)
from tests.support.mera_interrupts import ctrl_c_once_in_flight
from tests.support.mera_rutie import SAMPLE
from tests.support.scripted_endpoint import ScriptedEndpoint

# ---------------------------------------------------------------------------------------------------------------
# What the scripted endpoint answers
# ---------------------------------------------------------------------------------------------------------------


def completion_body(model: str, texts: list[str], prompt_tokens: int, logprobs: Any = None) -> dict:
    return {
        "id": "cmpl-test", "object": "text_completion", "created": 0, "model": model,
        "choices": [{"index": i, "text": t, "finish_reason": "stop", "logprobs": logprobs}
                    for i, t in enumerate(texts)],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(texts), "total_tokens": prompt_tokens + 1},
    }  # fmt: skip


def chat_body(model: str, texts: list[str], prompt_tokens: int) -> dict:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop",
                     "logprobs": None} for i, t in enumerate(texts)],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(texts), "total_tokens": prompt_tokens + 1},
    }  # fmt: skip


def error_body(message: str) -> dict:
    return {"error": {"message": message, "type": "BadRequestError", "code": 400}}


# ---------------------------------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("1", Answer("1")),
        ("2", Answer("2")),
        (" Ответ: 2.", Answer("2")),
        ("(1)", Answer("1")),
        ("1) Две", Answer("1")),
        ("Правильный ответ — 2, потому что", Answer("2")),
        ("В 2023 году было 12 месяцев, ответ 1", Answer("1")),  # 2023 and 12 are numbers, not answers
        ("1.5 или 2", Answer("2")),  # a decimal is not a standalone digit
        ("x1 и 2-й, а верный 1", Answer("1")),  # inside a word, with a suffix: not standalone
        ("<think>наверное 1</think>Ответ: 2", Answer("2")),  # reasoning is skipped
        ("Ответ:1", Answer("1")),
        ("Ответ: 3", Answer(None, NO_DIGIT)),  # MERA would take 3; here only 1 or 2 are answers
        ("12", Answer(None, NO_DIGIT)),
        ("Не знаю", Answer(None, NO_DIGIT)),
        ("", Answer(None, EMPTY)),
        ("   \n", Answer(None, EMPTY)),
    ],
)
def test_parse_answer_takes_first_standalone_1_or_2(reply, expected):
    """The "choice" parser: the first standalone 1 or 2 is the answer; anything else is a failure with a reason."""
    assert parse_answer(reply) == expected
    assert parse_reply(reply, "choice") == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # Reasoning cut by max_tokens before it closed: no answer yet, whatever digits the reasoning holds.
        ("<think>Сначала вариант 1: он кажется верным, но", "reasoning not finished"),
        ("<think>да</think> <THINK>вариант 1, потом", "reasoning not finished"),
        # The template opened the block in the prompt: the reply is reasoning up to its </think>.
        ("вариант 1 неверен, значит</think>Ответ: 2", "2"),
        ("вариант 1?</think><think>нет</think> 2", "2"),
    ],
)
def test_choice_parser_never_reads_reasoning_as_the_answer(reply, expected):
    """--answer-parser choice skips reasoning: an unclosed <think> is unparsed ("reasoning not finished"), and
    text before a closing </think> whose opening was in the prompt is reasoning (never read as the answer "1")."""
    answer = parse_reply(reply, "choice")
    if expected in ("1", "2"):
        assert answer == Answer(expected)
    else:
        assert answer == Answer(None, expected)
    # MERA's harness parser reads the raw reply, reasoning and all (benchmark_tasks/rutie/utils.py): unchanged.
    assert parse_reply(reply, "mera") == Answer("1")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("1 или 2", Answer(None, "both choices named")),
        ("Наверное, 2 либо 1", Answer(None, "both choices named")),
        ("2 OR 1", Answer(None, "both choices named")),
        ("1/2", Answer(None, "both choices named")),
        ("Вы спросили «1 или 2?» Ответ: 2", Answer("2")),  # the hedge restated, then an answer
        ("1 или 1", Answer("1")),  # the same choice twice is an answer
        ("1.5 или 2", Answer("2")),  # no hedge: 1.5 is a number
    ],
)
def test_choice_parser_reads_a_hedge_as_no_answer(reply, expected):
    """--answer-parser choice: a reply naming both choices as alternatives answers nothing (it was read as "1", so a
    model hedging on every question scored as often as the gold answer is "1"); MERA's parser, as the harness's
    regex, still takes the first digit."""
    assert parse_reply(reply, "choice") == expected
    assert parse_reply("1 или 2", "mera") == Answer("1")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # MERA's RegexFilter r"(\b([0-9])\b)", first match, on the stripped reply (benchmark_tasks/rutie/utils.py).
        ("1", Answer("1")),
        (" Ответ: 2.", Answer("2")),
        ("Ответ:1", Answer("1")),
        ("Ответ: 3", Answer("3")),  # a digit, parsed, and wrong
        ("3, нет, 1", Answer("3")),  # the first digit, whatever it is
        ("0", Answer("0")),  # 0 is one of the regex's digits: parsed, and wrong
        ("0, нет, 1", Answer("0")),  # a leading 0 is the answer, not skipped for the 1 after it
        ("1.5 или 2", Answer("1")),  # "." is a word boundary
        ("<think>наверное 1</think>Ответ: 2", Answer("1")),  # no reasoning block is skipped
        ("В 2023 году 12 месяцев, ответ 1", Answer("1")),  # 2023 and 12 are not single digits
        ("x1 и 2-й", Answer("2")),  # "x1" has no boundary; "-" is one
        ("12", Answer(None, NO_ANY_DIGIT)),
        ("Не знаю", Answer(None, NO_ANY_DIGIT)),
        ("  ", Answer(None, EMPTY)),
    ],
)
def test_mera_parser_is_the_harness_regex(reply, expected):
    """The default "mera" parser takes the first standalone digit 0-9, as the harness does."""
    assert parse_answer_mera(reply) == expected
    assert parse_reply(reply) == expected  # the default
    with pytest.raises(ValueError, match="answer_parser"):
        parse_reply(reply, "strict")


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ({"1": -0.1, "2": -2.3}, Answer("1")),
        ({"1": -5.0, "2": -0.7}, Answer("2")),
        ({"1": -1.0, "2": -1.0}, Answer("1")),  # a tie goes to the first choice
        ({"1": None, "2": -4.0}, Answer("2")),  # absent from the top list: less likely than any listed token
        ({"1": -4.0}, Answer("1")),
        ({"1": None, "2": None}, Answer(None, NO_LOGPROBS)),
    ],
)
def test_answer_from_logprobs(scores, expected):
    """The logprob variant picks the larger of log p(1) and log p(2); neither is a failure."""
    assert answer_from_logprobs(scores) == expected


def test_a_continuation_the_endpoint_did_not_score_is_a_failure_not_the_other_choice():
    """On the completion path each continuation is scored on its own request: a missing score is the endpoint
    returning no log-probabilities, not a low one, so the question is unparsed (it once went to the other choice);
    on the chat path a choice absent from the top list is still the less likely one."""
    assert answer_from_logprobs({"1": None, "2": -4.0}, absent_is_less_likely=False) == Answer(None, NO_LOGPROBS)
    assert answer_from_logprobs({"1": -1.0, "2": -4.0}, absent_is_less_likely=False) == Answer("1")
    assert answer_from_logprobs({"1": None, "2": -4.0}) == Answer("2")


def _item(qid: int, question: str, c1: str, c2: str, gold: str = "1", **meta: Any) -> RutieItem:
    instruction = "Диалог:\n{context}\n{question}\n1. {choice1}\n2. {choice2}"
    return RutieItem(dialog_id=0, question_id=qid, instruction=instruction,
                     question=question, choice1=c1, choice2=c2, gold=gold, **meta)  # fmt: skip


def test_completion_prompt_holds_the_models_own_answers_joined_by_blank_lines():
    """Earlier questions appear with the model's answers (not gold), blank-line separated (also from the current
    question, card "Data Instances"), then the cue."""
    q0 = _item(0, "Сколько ног у человека?", "Две", "Четыре", gold="1")
    q1 = _item(1, "А у муравья?", "Две", "Шесть", gold="2")
    q2 = _item(2, "Кто из них больше?", "Человек", "Муравей", gold="1")
    history = [(q0, "2"), (q1, "не знаю")]  # a wrong answer and an unparsed one
    assert render_context(history) == (
        "Сколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n\nА у муравья?\n1. Две\n2. Шесть\nОтвет: не знаю"
    )
    assert completion_prompt(q2, history) == (
        "Диалог:\n"
        "Сколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n\n"
        "А у муравья?\n1. Две\n2. Шесть\nОтвет: не знаю\n\n"
        "Кто из них больше?\n1. Человек\n2. Муравей\nОтвет:"
    )
    # The first question opens with the harness's blank line (its context former's "\n\n" with no earlier turn).
    assert completion_prompt(q0, []) == "\n\nДиалог:\n\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет:"


def test_chat_messages_put_earlier_answers_in_assistant_turns():
    """Chat mode, the harness's multi-turn form: the instruction's first part opens the first user turn, earlier
    questions end in 'Ответ:', the model's answers are assistant turns, the last turn is the second part."""
    q0 = _item(0, "Сколько ног у человека?", "Две", "Четыре")
    q1 = _item(1, "А у муравья?", "Две", "Шесть")
    q2 = _item(2, "Кто из них больше?", "Человек", "Муравей")
    first = "Диалог:\n\nСколько ног у человека?\n1. Две\n2. Четыре"
    assert chat_messages(q0, []) == [{"role": "user", "content": first}]
    assert chat_messages(q2, [(q0, "2"), (q1, "не знаю")]) == [
        {"role": "user", "content": "Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет:"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "А у муравья?\n1. Две\n2. Шесть\nОтвет:"},
        {"role": "assistant", "content": "не знаю"},
        {"role": "user", "content": "Кто из них больше?\n1. Человек\n2. Муравей"},
    ]


# ---------------------------------------------------------------------------------------------------------------
# Fidelity to the ruTiE task card (MERA's public task page), cited by its sections
# ---------------------------------------------------------------------------------------------------------------

# The two rows of the card's data instance, verbatim (card "Data Instances").
CARD_ROWS = [
    {"instruction": "Вам дан диалог и два варианта ответа. Учитывая контекст диалога, ответьте на последний вопрос, "
                    "поставив только цифру 1 или 2.\n{context}\n{question}\n1. {choice1}\n2. {choice2}\n"
                    "Какой ответ из двух наиболее правильный?",
     "inputs": {"question": "Сколько ног у человека?", "choice1": "Две", "choice2": "Четыре"}, "outputs": "1",
     "meta": {"dialog_id": 0, "question_id": 0, "category": ["world"], "use_context": False,
              "turing_imitation": ["facts"]}},
    {"instruction": "Вам дан диалог, в котором необходимо продолжить реплики. Учитывая контекст диалога, и два "
                    "варианта ответа на реплику (вопрос) ответьте на последний вопрос.\n{context}\n{question}\n"
                    "1. {choice1}\n2. {choice2}\nКакой ответ наиболее правильный? Укажите только номер ответа без "
                    "дополнительных пояснений.",
     "inputs": {"question": "А у муравья?", "choice1": "Две", "choice2": "Шесть"}, "outputs": "2",
     "meta": {"dialog_id": 0, "question_id": 1, "category": ["world"], "use_context": True,
              "turing_imitation": ["facts"]}},
]  # fmt: skip

# The card's prompt example (card "Prompts"): its template already ends in "Ответ:".
CARD_PROMPT_155 = (
    "Ниже приведен диалог, в котором последней репликой является вопрос. Выберите ответ на этот вопрос из двух "
    "приведенных вариантов, укажите только цифру 1 или 2.\nДиалог:\n{context}\n{question}\nВарианты ответа:1. "
    "{choice1}\n2. {choice2}\nОтвет:"
)


def test_card_dialogue_turn_prompts_are_pinned():
    """The card's two turns rendered exactly: no context on the first (card "Data Instances"), then the first question with
    the model's own answer, a blank line, the current question and one 'Ответ:' (card "Data Instances")."""
    q0, q1 = (parse_rutie_row(row, i) for i, row in enumerate(CARD_ROWS, start=1))
    # Turn 1: "{context}" is empty (card "Data Instances"); the harness drops it, leaving the blank line, strips,
    # and puts its context former's "\n\n" before it (no earlier turn: fewshot_delimiter.join([]) + fewshot_delimiter).
    assert completion_prompt(q0, []) == (
        "\n\n"
        "Вам дан диалог и два варианта ответа. Учитывая контекст диалога, ответьте на последний вопрос, поставив "
        "только цифру 1 или 2.\n"
        "\n"
        "Сколько ног у человека?\n1. Две\n2. Четыре\n"
        "Какой ответ из двух наиболее правильный?\n"
        "Ответ:"
    )
    # Turn 2 after the model answered 2 ("a Person has four legs (choice 2)", card "Data Instances"): the context holds
    # "{question}\n1. ..\n2. ..\nОтвет: 2" (card "Data Instances"), then a blank line (card "Data Instances"), then the
    # current question from the row's own template, then the cue once (card "Data Instances").
    assert completion_prompt(q1, [(q0, "2")]) == (
        "Вам дан диалог, в котором необходимо продолжить реплики. Учитывая контекст диалога, и два варианта ответа "
        "на реплику (вопрос) ответьте на последний вопрос.\n"
        "Сколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n"
        "\n"
        "А у муравья?\n1. Две\n2. Шесть\n"
        "Какой ответ наиболее правильный? Укажите только номер ответа без дополнительных пояснений.\n"
        "Ответ:"
    )
    # answer_cue="" is MERA's harness: the prompt ends where the instruction ends.
    assert completion_prompt(q1, [(q0, "2")], answer_cue="").endswith("без дополнительных пояснений.")


def test_a_template_ending_in_the_cue_never_gets_a_second_one():
    """The template of the card's "Prompts" example already ends in 'Ответ:': the prompt ends in exactly one (no 'Ответ:\\nОтвет:')."""
    rows = [dict(CARD_ROWS[i], instruction=CARD_PROMPT_155) for i in (0, 1)]
    q0, q1 = (parse_rutie_row(row, i) for i, row in enumerate(rows, start=1))
    first = completion_prompt(q0, [])
    second = completion_prompt(q1, [(q0, "1")])
    assert first == (
        "\n\nНиже приведен диалог, в котором последней репликой является вопрос. Выберите ответ на этот вопрос из двух "
        "приведенных вариантов, укажите только цифру 1 или 2.\nДиалог:\n\nСколько ног у человека?\n"
        "Варианты ответа:1. Две\n2. Четыре\nОтвет:"
    )
    assert second.endswith("Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 1\n\n"
                           "А у муравья?\nВарианты ответа:1. Две\n2. Шесть\nОтвет:")  # fmt: skip
    for prompt in (first, second):
        assert "Ответ:\nОтвет:" not in prompt and not prompt.endswith("Ответ:\nОтвет:")
    # One cue per earlier turn plus the final one: 1 on the first turn, 2 on the second.
    assert (first.count("Ответ:"), second.count("Ответ:")) == (1, 2)


def test_headline_accuracy_counts_unparsed_as_wrong():
    """card "Metrics": accuracy is the average over the dialogue's questions, so an unparsed answer is a wrong one;
    the parsed-only figure is reported beside it."""
    def rec(answer, gold, reason=""):
        return {"dialog_id": 0, "question_id": 0, "answer": answer, "gold": gold, "correct": answer == gold,
                "reason": reason}  # fmt: skip

    # 5 questions: 2 right, 1 wrong, 2 unparsed.
    records = [rec("1", "1"), rec("2", "2"), rec("1", "2"), rec(None, "1", NO_DIGIT), rec(None, "2", EMPTY)]
    m = rutie_metrics(records)
    assert m["accuracy"] == pytest.approx(2 / 5)  # 2 right of 5 questions = 0.4
    assert m["accuracy_parsed"] == pytest.approx(2 / 3)  # 2 right of the 3 parsed ≈ 0.667
    assert (m["n"], m["n_unparsed"]) == (5, 2)
    # All unparsed: the headline is 0 (a number, not None); the parsed-only figure has nothing to average.
    assert {k: rutie_metrics([rec(None, "1", NO_DIGIT)])[k] for k in ("accuracy", "accuracy_parsed")} == {
        "accuracy": 0.0, "accuracy_parsed": None}


@pytest.mark.parametrize(
    ("reply", "answer", "shown"),
    [
        ("Ответ: 2, конечно", Answer("2"), "2"),
        ("  не\n знаю  ", Answer(None, NO_DIGIT), "не знаю"),
        ("x" * 500, Answer(None, NO_DIGIT), "x" * 200),
        ("", Answer(None, CONTEXT_LIMIT), ""),
    ],
)
def test_context_answer(reply, answer, shown):
    """Later context shows the parsed digit, else (choice parser) the model's own words, collapsed and shortened,
    or (mera parser) the harness's fallback -1."""
    assert context_answer(reply, answer, "choice") == shown
    assert context_answer(reply, answer, "mera") == (shown if answer.ok else "-1")


GOOD_ROW = {
    "instruction": "{context}\n{question}\n1. {choice1}\n2. {choice2}",
    "inputs": {"question": "Q", "choice1": "a", "choice2": "b"},
    "outputs": "2",
    "meta": {"dialog_id": 0, "question_id": 3, "category": ["memory"], "use_context": True,
             "turing_imitation": ["facts"]},
}  # fmt: skip


def with_field(row: dict, path: str, value: Any) -> dict:
    """A deep copy of the JSON ``row`` with the field at the dotted ``path`` set to ``value`` (removed for KeyError)."""
    row = json.loads(json.dumps(row))
    *parents, last = path.split(".")
    target = row
    for p in parents:
        target = target[p]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return row


def _with(path: str, value: Any) -> dict:
    return with_field(GOOD_ROW, path, value)


def test_parse_rutie_row_reads_the_documented_format():
    """A documented row parses with its meta fields."""
    item = parse_rutie_row(GOOD_ROW, 1)
    assert (item.dialog_id, item.question_id, item.gold, item.use_context) == (0, 3, "2", True)
    assert (item.category, item.turing_imitation) == (("memory",), ("facts",))
    # use_context as written by a converter that keeps strings, and left out: read as the bool it names
    assert parse_rutie_row(_with("meta.use_context", " False"), 1).use_context is False
    assert parse_rutie_row(_with("meta.use_context", "TRUE"), 1).use_context is True
    assert parse_rutie_row(_with("meta.use_context", KeyError), 1).use_context is False


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_with("outputs", "3"), "field 'outputs' should be '1' or '2'"),
        # MERA's closed test: its scoring blanks every answer (modules/scoring/src/tasks/rutie.py remove_outputs).
        (_with("outputs", ""), "no gold answer, as in MERA's closed test"),
        (_with("instruction", "{question}"), "no {context} placeholder"),
        (_with("inputs.choice2", KeyError), "field 'inputs.choice2' is missing"),
        (_with("meta.question_id", "first"), "'meta.question_id' is not an integer"),
        (_with("meta.dialog_id", KeyError), "field 'meta.dialog_id' is missing"),
        (_with("instruction", "{context} {question} {context}"), "{context} more than once"),
        (_with("meta.category", 3), "field 'meta.category' should be a list or a string, got an integer"),
        (_with("meta.turing_imitation", {"facts": 1}),
         "field 'meta.turing_imitation' should be a list or a string, got an object"),
        # MERA writes use_context as a JSON bool: 5 or "yes" were read as true, 0 or "no" as false, without a word
        (_with("meta.use_context", 5), "field 'meta.use_context' should be true or false, got 5"),
        (_with("meta.use_context", "yes"), "field 'meta.use_context' should be true or false, got 'yes'"),
        (_with("meta.use_context", None), "field 'meta.use_context' should be true or false, got null"),
        # a JSON true is an int to isinstance: it became the answer text "True"
        (_with("inputs.choice1", True), "field 'inputs.choice1' should be a string, an integer or a number, got true"),
        (_with("inputs.choice2", False), "field 'inputs.choice2' should be"),
        (_with("meta.question_id", True), "field 'meta.question_id' should be"),
        # a NaN (a missing cell, as pandas writes one) became the choice "nan" the model was shown
        (_with("inputs.choice1", float("nan")), "line 7: field 'inputs.choice1' should be a string or a finite "
                                                "number, got nan"),
        (_with("inputs.choice2", float("-inf")), "line 7: field 'inputs.choice2' should be a string or a finite "
                                                 "number, got -inf"),
    ],
)
def test_parse_rutie_row_rejects_bad_rows_naming_row_and_field(row, message):
    """A bad row is an error that names the row and the field."""
    with pytest.raises(DataError, match="line 7") as err:
        parse_rutie_row(row, 7)
    assert message in str(err.value)


def test_a_numeric_choice_reads_as_its_digits():
    """MERA writes choices as strings; a finite number is still an answer, read as the text it prints."""
    item = parse_rutie_row(with_field(_with("inputs.choice1", 4), "inputs.choice2", 2.5), 1)
    assert (item.choice1, item.choice2) == ("4", "2.5")


def test_a_label_field_is_a_list_or_one_string():
    """meta.category and meta.turing_imitation: a list, one string, or absent (no label)."""
    item = parse_rutie_row(with_field(_with("meta.category", "memory"), "meta.turing_imitation", KeyError), 1)
    assert (item.category, item.turing_imitation) == (("memory",), ())


def test_a_label_field_of_another_type_is_refused_naming_the_file_and_row(tmp_path):
    """A category that is an int is refused while the data is read, naming the file, the row and the field."""
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(GOOD_ROW) + "\n" + json.dumps(_with("meta.category", 3)) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_dialogues(path)
    assert str(err.value) == f"{path}: line 2: field 'meta.category' should be a list or a string, got an integer"


def test_a_closed_test_file_is_refused_naming_the_file(tmp_path, capsys):
    """MERA's closed test (every answer blank) is refused naming the file, as ruHumanEval's is: the row alone does
    not say which file of a release it came from."""
    closed = tmp_path / "test.jsonl"
    rows = [json.loads(line) for line in _write_dialogs(tmp_path / "d.jsonl").read_text().splitlines()]
    closed.write_text("".join(json.dumps({**r, "outputs": ""}, ensure_ascii=False) + "\n" for r in rows))
    with pytest.raises(DataError, match=rf"^{re.escape(str(closed))}: line 1: field 'outputs' is empty: no gold "):
        load_dialogues(closed)
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, closed, tmp_path / "run") == 2
    assert f"{closed}: line 1: field 'outputs' is empty" in capsys.readouterr().err
    assert endpoint.bodies("/v1/completions") == []


def test_braces_other_than_the_three_inputs_stay_literal():
    """Only {question}, {choice1}, {choice2} are filled (the harness escapes every other brace); a question
    that itself contains a placeholder is not filled again."""
    item = parse_rutie_row(_with("instruction", "{context}\n{unknown} {question}: {choice1}/{choice2}"), 1)
    assert completion_prompt(item, []) == "\n\n{unknown} Q: a/b\nОтвет:"
    tricky = parse_rutie_row(_with("inputs.question", "Что значит {choice1}?"), 1)
    assert completion_prompt(tricky, []) == "\n\nЧто значит {choice1}?\n1. a\n2. b\nОтвет:"


def test_load_dialogues_orders_by_question_id_and_rejects_repeats(tmp_path):
    """Dialogues are taken strictly in question_id order, whatever the file order; a repeated id is an error."""
    rows = [_with("meta.question_id", q) for q in (2, 0, 1)]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [it.question_id for it in load_dialogues(path)[0]] == [0, 1, 2]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + [rows[0]]), encoding="utf-8")
    with pytest.raises(DataError, match=r"repeats question_id \[2\]"):
        load_dialogues(path)


def test_a_dialogue_whose_question_ids_skip_one_is_refused_naming_the_file_dialogue_and_missing_id(tmp_path):
    """The card asks each dialogue's questions strictly by question_id, and the harness builds question q's context
    from the dialogue's first q rows: a dialogue that lost a row would ask the next question without that turn (or as
    its opening), so ids must run 0, 1, 2, ... with no gap."""
    path = tmp_path / "d.jsonl"
    rows = [_with("meta.question_id", q) for q in (0, 3, 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_dialogues(path)
    assert str(err.value).startswith(f"{path}: dialogue 0: field 'meta.question_id' skips 2 (line 2 has 3): "), err
    rows = [_with("meta.question_id", q) for q in (1, 2, 4)]  # the opening question lost too
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError, match=r"dialogue 0: field 'meta.question_id' skips 0, 3 \(line 1 has 1\)"):
        load_dialogues(path)
    path.write_text(json.dumps(_with("meta.question_id", -1)) + "\n" + json.dumps(_with("meta.question_id", 0)) + "\n",
                    encoding="utf-8")  # fmt: skip
    with pytest.raises(DataError, match=r"dialogue 0: field 'meta.question_id' is -1 \(line 1\)"):
        load_dialogues(path)


def test_one_dialogue_written_both_as_a_number_and_as_a_string_is_refused_naming_the_rows(tmp_path):
    """MERA's harness reads ``int(dialog_id)`` (benchmark_tasks/rutie/utils.py process_docs), so 0 and "0" are one
    dialogue there; read as two, the "0" question would be asked alone, without its earlier turns, silently."""
    rows = [_with("meta.question_id", 0), _with("meta.question_id", 1)]
    rows[1]["meta"]["dialog_id"] = "0"
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError, match=r"d\.jsonl: line 2: field 'meta.dialog_id' is '0', line 1's is 0"):
        load_dialogues(path)
    rows[0]["meta"]["dialog_id"] = "0"  # written one way throughout: one dialogue, as before
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [it.question_id for it in load_dialogues(path)["0"]] == [0, 1]


def test_sample_dialogues_have_context_dependent_questions():
    """The bundled sample is valid, in order, and has questions that need the dialogue's context."""
    dialogues = load_dialogues(SAMPLE)
    items = [it for d in dialogues.values() for it in d]
    assert len(dialogues) >= 3 and len(items) >= 20
    assert sum(it.use_context for it in items) >= 8
    assert {it.gold for it in items} == {"1", "2"}
    for d in dialogues.values():
        assert [it.question_id for it in d] == list(range(len(d)))
        assert not d[0].use_context  # a dialogue cannot open with a question about its own past


def test_rutie_metrics_by_hand():
    """Accuracy over all questions (headline) and over parsed ones, per category/use_context/imitation, prompt
    lengths per step."""
    def rec(qid, answer, gold, cats, ctx, imit, tokens, limit=False, reason=""):
        return {"dialog_id": 0, "question_id": qid, "answer": answer, "gold": gold, "correct": answer == gold,
                "category": cats, "use_context": ctx, "turing_imitation": imit, "prompt_tokens": tokens,
                "context_limit": limit, "reason": reason}  # fmt: skip

    records = [
        rec(0, "1", "1", ["world"], False, ["facts"], 10),
        rec(1, "1", "2", ["world", "memory"], True, ["facts"], 30),
        rec(2, None, "1", ["memory"], True, ["intent"], 50, reason=NO_DIGIT),
        rec(3, "2", "2", ["math"], False, ["text_metrics"], 70),
        rec(0, None, "2", ["memory"], True, ["facts"], None, limit=True, reason=CONTEXT_LIMIT),
    ]
    m = rutie_metrics(records, max_model_len=64)
    # Parsed: questions 0, 1, 3 of the first dialogue; correct: 0 and 3.
    assert (m["n"], m["n_unparsed"]) == (5, 2)
    assert m["accuracy"] == pytest.approx(2 / 5)  # headline: unparsed count as wrong
    assert m["accuracy_parsed"] == pytest.approx(2 / 3)
    assert m["unparsed_reasons"] == {NO_DIGIT: 1, CONTEXT_LIMIT: 1}
    assert m["by_category"]["memory"] == {"n": 3, "n_unparsed": 2, "accuracy": 0.0, "accuracy_parsed": 0.0}
    assert m["by_category"]["world"] == {"n": 2, "n_unparsed": 0, "accuracy": 0.5, "accuracy_parsed": 0.5}
    assert m["by_use_context"]["false"] == {"n": 2, "n_unparsed": 0, "accuracy": 1.0, "accuracy_parsed": 1.0}
    assert m["by_use_context"]["true"]["n_unparsed"] == 2
    assert m["by_turing_imitation"]["facts"] == {"n": 3, "n_unparsed": 1, "accuracy": 1 / 3, "accuracy_parsed": 0.5}
    assert m["prompt_tokens"]["by_step"] == [
        {"question_id": 0, "mean": 10, "max": 10}, {"question_id": 1, "mean": 30, "max": 30},
        {"question_id": 2, "mean": 50, "max": 50}, {"question_id": 3, "mean": 70, "max": 70},
    ]  # fmt: skip
    assert (m["prompt_tokens"]["min"], m["prompt_tokens"]["mean"], m["prompt_tokens"]["max"]) == (10, 40, 70)
    assert m["n_context_limit"] == 1 and m["max_model_len"] == 64


def test_open_journal_drops_a_torn_last_line(tmp_path):
    """A write cut by a kill is dropped (and truncated away) so the next append starts on a clean line."""
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3, "cut')
    assert open_journal(path).rows == [{"a": 1}, {"a": 2}]
    assert path.read_bytes() == b'{"a": 1}\n{"a": 2}\n'
    path.write_bytes(b'{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(ValueError, match="answers.jsonl:2"):
        open_journal(path)


def test_claim_run_folder_refuses_other_settings(tmp_path):
    """Progress made with other settings is never resumed silently."""
    assert claim_run_folder(tmp_path, {"model": "a"}, ["answers.jsonl"]) is False
    (tmp_path / "answers.jsonl").write_text('{"x": 1}\n')
    assert claim_run_folder(tmp_path, {"model": "a"}, ["answers.jsonl"]) is True
    with pytest.raises(ResumeMismatch, match="model: 'a' -> 'b'"):
        claim_run_folder(tmp_path, {"model": "b"}, ["answers.jsonl"])
    assert claim_run_folder(tmp_path, {"model": "b"}, ["answers.jsonl"], overwrite=True) is False
    assert not (tmp_path / "answers.jsonl").exists()


# ---------------------------------------------------------------------------------------------------------------
# Against the scripted endpoint
# ---------------------------------------------------------------------------------------------------------------

INSTR = "Диалог:\n{context}\n{question}\n1. {choice1}\n2. {choice2}"
DIALOG = [
    # question, choice1, choice2, gold, category, use_context
    ("Сколько ног у человека?", "Две", "Четыре", "1", ["world"], False),
    ("А у муравья?", "Две", "Шесть", "2", ["world", "memory"], True),
    ("Кто из них меньше?", "Человек", "Муравей", "2", ["memory"], True),
]
# What the scripted model says to each question: wrong, unparsed, right.
REPLIES = {"Сколько ног у человека?": " 2", "А у муравья?": " не уверен", "Кто из них меньше?": " 2\nПотому что"}


def _write_dialogs(path: Path, dialog_ids=(0,)) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for d in dialog_ids:
            for q, (question, c1, c2, gold, cats, ctx) in enumerate(DIALOG):
                f.write(json.dumps({
                    "instruction": INSTR, "inputs": {"question": question, "choice1": c1, "choice2": c2},
                    "outputs": gold, "meta": {"dialog_id": d, "question_id": q, "category": cats,
                                              "use_context": ctx, "turing_imitation": ["facts"]},
                }, ensure_ascii=False) + "\n")  # fmt: skip
    return path


def _current_question(body: dict) -> str:
    """The question a request asks: the last known question in its prompt or last user turn."""
    text = body["prompt"] if "prompt" in body else body["messages"][-1]["content"]
    return max((q for q in REPLIES if q in text), key=text.rfind)


def _table_responder(replies: dict[str, str], fail_on: set[str] = frozenset(), status: int = 503):
    """Answers from ``replies``; a question in ``fail_on`` gets HTTP ``status`` (503: the endpoint failing)."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        question = _current_question(body)
        if question in fail_on:
            return status, error_body("scripted failure: the operator pulled the plug")
        if path.endswith("/chat/completions"):
            return 200, chat_body(body["model"], [replies[question]], prompt_tokens=len(str(body["messages"])))
        return 200, completion_body(body["model"], [replies[question]], prompt_tokens=len(body["prompt"]))

    return respond


def expected_prompts(unparsed_shown: str) -> list[str]:
    """The three prompts of DIALOG given REPLIES, the unparsed second answer shown as ``unparsed_shown``."""
    return [
        "\n\nДиалог:\n\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет:",
        "Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n\n"
        "А у муравья?\n1. Две\n2. Шесть\nОтвет:",
        "Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n\n"
        f"А у муравья?\n1. Две\n2. Шесть\nОтвет: {unparsed_shown}\n\n"
        "Кто из них меньше?\n1. Человек\n2. Муравей\nОтвет:",
    ]


# The default parser is MERA's: an unparsed answer shows as the harness's fallback "-1".
EXPECTED_PROMPTS = expected_prompts("-1")


def _run(endpoint: ScriptedEndpoint, data: Path, out: Path, *extra: str) -> int:
    return cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(data),
                     "--out", str(out), "--max-retries", "0", *extra])  # fmt: skip


@pytest.mark.parametrize(
    ("parser_args", "shown", "reason"),
    [((), "-1", NO_ANY_DIGIT), (("--answer-parser", "choice"), "не уверен", NO_DIGIT)],
)
def test_rutie_sends_the_models_own_wrong_answer_in_later_context(tmp_path, parser_args, shown, reason):
    """Completion mode: the exact prompts on the wire carry the model's earlier (wrong, unparsed) answers; the
    unparsed one as the harness's -1 (default parser) or in the model's own words (choice parser)."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", *parser_args) == 0
    bodies = endpoint.bodies("/v1/completions")
    assert [b["prompt"] for b in bodies] == expected_prompts(shown)
    # MERA's rutie_gen: greedy, at most lm-eval's 256 new tokens, cut at the first newline.
    assert all(b == {"model": "scripted", "prompt": b["prompt"], "n": 1, "temperature": 0.0, "max_tokens": 256,
                     "seed": 1234, "stop": ["\n"]} for b in bodies), bodies  # fmt: skip
    # The gold answer to question 0 ("1") never reaches the model.
    assert "Ответ: 1" not in bodies[1]["prompt"]

    answers = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [(a["answer"], a["reason"], a["correct"]) for a in answers] == [
        ("2", "", False), (None, reason, False), ("2", "", True),
    ]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    # Headline: 1 right of 3 questions (the unparsed one is wrong); over the 2 parsed: 1 of 2.
    assert (metrics["n"], metrics["n_unparsed"], metrics["accuracy"], metrics["accuracy_parsed"]) == (3, 1, 1 / 3, 0.5)
    assert metrics["max_model_len"] == 4096
    # The protocol is recorded beside the score: the defaults are rutie_gen's but for the card's cue.
    assert {k: metrics["protocol"][k] for k in ("mode", "scoring", "answer_cue", "answer_parser", "mera_task",
                                                "same_as_mera_task", "differs_from_mera_task")} == {
        "mode": "completion", "scoring": "generate", "answer_cue": "Ответ:", "answer_parser": "choice" if parser_args
        else "mera", "mera_task": "rutie_gen", "same_as_mera_task": False,
        "differs_from_mera_task": ["answer_cue='Ответ:' (MERA's rutie_gen: '')"]
        + (["answer_parser='choice' (MERA's rutie_gen: 'mera')", "think_blocks='skip' (MERA's rutie_gen: 'read')"]
           if parser_args else []),
    }  # fmt: skip
    assert [s["mean"] for s in metrics["prompt_tokens"]["by_step"]] == [len(p) for p in expected_prompts(shown)]
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["job"] == "judge-eval mera rutie" and run["config"]["mode"] == "completion" and len(run["data_sha256"]) == 64


#: Replies whose digit comes only after a newline: rutie_gen's generation ends at the newline, before the digit.
LATE_DIGIT = {"Сколько ног у человека?": " Думаю,\n1", "А у муравья?": "\n2", "Кто из них меньше?": " 2"}


@pytest.mark.parametrize(
    ("stop_args", "answers", "shown"),
    [((), [None, None, "2"], ("-1", "-1")),  # the default, rutie_gen's: cut at "\n", the digits never seen
     (("--stop", "[]"), ["1", "2", "2"], ("1", "2"))],  # the named deviation: no stop, the digits parsed
)
def test_rutie_gen_is_reproduced_by_the_defaults_with_the_harness_prompt(tmp_path, stop_args, answers, shown):
    """MERA's rutie_gen (rutie_gen.yaml -> digit_choice_gen_task.yaml -> custom_generate_task.yaml: until "\n",
    do_sample false, no max_gen_toks) is the defaults plus --answer-cue '': prompts end as the harness's do (no
    cue), and a reply is cut at its first newline, on the client too, before the parser looks for a digit."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_table_responder(LATE_DIGIT)) as endpoint:  # a server that ignores stop strings
        assert _run(endpoint, data, tmp_path / "run", "--answer-cue", "", *stop_args) == 0
    bodies = endpoint.bodies("/v1/completions")
    assert [b["prompt"] for b in bodies] == [
        "\n\nДиалог:\n\nСколько ног у человека?\n1. Две\n2. Четыре",  # the harness's leading "\n\n"
        f"Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: {shown[0]}\n\nА у муравья?\n1. Две\n2. Шесть",
        f"Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: {shown[0]}\n\n"
        f"А у муравья?\n1. Две\n2. Шесть\nОтвет: {shown[1]}\n\nКто из них меньше?\n1. Человек\n2. Муравей",
    ]  # fmt: skip
    assert all((b["max_tokens"], b["temperature"], b.get("stop")) == (256, 0.0, ["\n"] if not stop_args else None)
               for b in bodies)  # fmt: skip
    assert [a["answer"] for a in read_jsonl(tmp_path / "run" / "answers.jsonl")] == answers
    protocol = json.loads((tmp_path / "run" / "metrics.json").read_text())["protocol"]
    assert (protocol["mera_task"], protocol["same_as_mera_task"], protocol["differs_from_mera_task"]) == (
        ("rutie_gen", True, []) if not stop_args else ("rutie_gen", False, ["stop=[] (MERA's rutie_gen: ['\\n'])"]))


def test_rutie_chat_mode_sends_earlier_answers_as_assistant_turns(tmp_path):
    """Chat mode: the exact message lists on the wire, with the model's answers as assistant turns."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--mode", "chat") == 0
    messages = [b["messages"] for b in endpoint.bodies("/v1/chat/completions")]
    q0 = "Сколько ног у человека?\n1. Две\n2. Четыре"
    q1 = "А у муравья?\n1. Две\n2. Шесть"
    assert messages == [
        [{"role": "user", "content": "Диалог:\n\n" + q0}],
        [{"role": "user", "content": "Диалог:\n" + q0 + "\nОтвет:"}, {"role": "assistant", "content": "2"},
         {"role": "user", "content": q1}],
        [{"role": "user", "content": "Диалог:\n" + q0 + "\nОтвет:"}, {"role": "assistant", "content": "2"},
         {"role": "user", "content": q1 + "\nОтвет:"}, {"role": "assistant", "content": "-1"},
         {"role": "user", "content": "Кто из них меньше?\n1. Человек\n2. Муравей"}],
    ]  # fmt: skip


def test_rutie_logprob_variant_compares_continuations(tmp_path):
    """Logprob scoring asks for the prompt's token count, sends prompt+" 1" and prompt+" 2" with echo and takes the
    likelier one."""
    favoured = {"Сколько ног у человека?": " 2", "А у муравья?": " 2", "Кто из них меньше?": " 1"}

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if not body.get("echo"):  # the prompt alone, as one token: its count is all that is read
            return 200, completion_body(body["model"], ["x"], prompt_tokens=1)
        full = body["prompt"]
        question = _current_question(body)
        continuation = full[-2:]
        prefix = full[:-2]
        value = -0.1 if continuation == favoured[question] else -3.0
        logprobs = {"tokens": [prefix, continuation], "token_logprobs": [None, value],
                    "text_offset": [0, len(prefix)], "top_logprobs": None}  # fmt: skip
        return 200, completion_body(body["model"], [full], prompt_tokens=2, logprobs=logprobs)

    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(respond) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--scoring", "logprobs") == 0
    every = endpoint.bodies("/v1/completions")
    assert len(every) == 9
    counts, bodies = every[0::3], [b for i, b in enumerate(every) if i % 3]
    assert all(b == {"model": "scripted", "prompt": e["prompt"][:-2], "max_tokens": 1, "temperature": 0.0}
               for b, e in zip(counts, bodies[0::2]))  # fmt: skip
    assert all(b["echo"] is True and b["max_tokens"] == 0 and b["logprobs"] == 0 for b in bodies)
    assert [b["prompt"][-2:] for b in bodies] == [" 1", " 2"] * 3
    # The chosen answers (2, 2, 1) are what later prompts show.
    assert "Ответ: 2\n\nА у муравья?" in bodies[2]["prompt"]
    assert bodies[4]["prompt"].endswith("Ответ: 2\n\nА у муравья?\n1. Две\n2. Шесть\nОтвет: 2\n\n"
                                        "Кто из них меньше?\n1. Человек\n2. Муравей\nОтвет: 1")  # fmt: skip
    answers = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [a["answer"] for a in answers] == ["2", "2", "1"]
    assert answers[0]["scores"] == {"1": -3.0, "2": -0.1}


def _vllm_like_tokens(text: str) -> list[str]:
    """``text`` as vLLM echoes it, each token decoded alone: a BOS token first (decoded as ``<s>``), then words,
    spaces and punctuation, with a Cyrillic capital split across two byte tokens, each decoded as "\ufffd"
    (``entrypoints/openai/completion/serving.py`` ``_create_completion_logprobs``)."""
    import re

    tokens = ["<s>"]
    for piece in re.findall(r" ?\w+|\s|[^\w\s]", text):
        if piece[:1] in "ДСК":  # a character the tokenizer has no token for: two byte tokens
            tokens += ["\ufffd", "\ufffd"] + ([piece[1:]] if piece[1:] else [])
        else:
            tokens.append(piece)
    return tokens


def _vllm_like_responder(favoured: dict[str, str]):
    """An endpoint shaped like vLLM 0.32's completions: the prompt alone answered with its token count, an echo with
    every prompt token's logprob (the first none) and ``text_offset`` as running sums of the decoded tokens."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        tokens = _vllm_like_tokens(body["prompt"])
        if not body.get("echo"):
            return 200, completion_body(body["model"], ["x"], prompt_tokens=len(tokens))
        question = _current_question(body)
        # Every prompt token has its own logprob; the last token is the continuation, " 1" or " 2".
        values = [None] + [-1.0 - 0.01 * i for i in range(1, len(tokens) - 1)]
        values.append(-0.1 if tokens[-1] == favoured[question] else -3.0)
        offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
        logprobs = {"tokens": tokens, "token_logprobs": values, "text_offset": offsets, "top_logprobs": None}
        return 200, completion_body(body["model"], [body["prompt"]], prompt_tokens=len(tokens), logprobs=logprobs)

    return respond


@pytest.mark.parametrize("cue", [(), ("--answer-cue", "")])
def test_rutie_logprobs_find_the_continuation_by_token_count_not_characters(tmp_path, cue):
    """vLLM's echoed text offsets count a BOS token as "<s>" and a split character as two "\ufffd": located by
    characters, the answer token fell outside the span, both continuations summed the same prompt tokens, tied,
    and every answer was "1". Located by token count, as lm-eval does, the favoured " 2" wins; no score ties."""
    favoured = {"Сколько ног у человека?": " 2", "А у муравья?": " 2", "Кто из них меньше?": " 2"}
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_vllm_like_responder(favoured)) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--scoring", "logprobs", *cue) == 0
    answers = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [a["answer"] for a in answers] == ["2", "2", "2"]
    assert [a["scores"] for a in answers] == [{"1": -3.0, "2": -0.1}] * 3  # the continuation's token alone
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert (metrics["n_ties"], metrics["n_unparsed"]) == (0, 0)
    # MERA's log-likelihood rutie is --scoring logprobs with the harness's prompt (no cue).
    assert (metrics["protocol"]["mera_task"], metrics["protocol"]["same_as_mera_task"]) == ("rutie", bool(cue))


def test_continuation_score_spans_the_tokens_after_the_prompt_alone():
    """The echo's tokens from the prompt alone's count to the whole request's are the continuation's, whatever their
    text: a BOS and a split character before them change nothing; an echo without those tokens is no score."""
    from types import SimpleNamespace

    from eval.mera.client import _continuation_score

    prompt = ["<s>", "\ufffd", "\ufffd", "иалог", ":", "\n", "Ответ", ":"]  # 8 tokens, BOS first
    echo = SimpleNamespace(tokens=prompt + [" ", "2"], token_logprobs=[None] + [-1.0] * 7 + [-0.5, -0.25])
    assert _continuation_score(echo, 8, 10) == -0.75
    assert _continuation_score(echo, 8, 11) is None  # the endpoint counted more tokens than it echoed
    assert _continuation_score(echo, 10, 10) is None  # no continuation token
    assert _continuation_score(echo, 0, 10) is None  # the first token has no logprob
    assert _continuation_score(echo, None, 10) is None and _continuation_score(None, 8, 10) is None


@pytest.mark.parametrize(
    ("settings", "task", "differs"),
    [
        ({"answer_cue": ""}, "rutie_gen", []),
        ({}, "rutie_gen", ["answer_cue='Ответ:' (MERA's rutie_gen: '')"]),
        ({"answer_cue": "", "max_tokens": 4, "context_overflow": "fail"}, "rutie_gen",
         ["max_tokens=4 (MERA's rutie_gen: 256)", "context_overflow='fail' (MERA's rutie_gen: 'truncate')"]),
        ({"answer_cue": "", "mode": "chat", "stop": ()}, "rutie_gen",
         ["mode='chat' (MERA's rutie_gen: 'completion')", "stop=[] (MERA's rutie_gen: ['\\n'])",
          "think_blocks='skip' (MERA's rutie_gen: 'read')"]),
        # The choice parser reads after any <think> block; the harness's regex reads the whole reply.
        ({"answer_cue": "", "answer_parser": "choice"}, "rutie_gen",
         ["answer_parser='choice' (MERA's rutie_gen: 'mera')", "think_blocks='skip' (MERA's rutie_gen: 'read')"]),
        ({"answer_cue": "", "mode": "chat", "stop": ("\n",), "think_blocks": "read"}, "rutie_gen",
         ["mode='chat' (MERA's rutie_gen: 'completion')"]),
        # Generation's settings play no part in a log-likelihood answer.
        ({"answer_cue": "", "scoring": "logprobs", "max_tokens": 4, "answer_parser": "choice"}, "rutie", []),
        ({"scoring": "logprobs"}, "rutie", ["answer_cue='Ответ:' (MERA's rutie: '')"]),
        # A chat run sends no cue: only its mode is named.
        ({"scoring": "logprobs", "mode": "chat"}, "rutie", ["mode='chat' (MERA's rutie: 'completion')"]),
    ],
)
def test_describe_protocol_names_meras_run_and_each_difference(settings, task, differs):
    """A run's settings are MERA's rutie_gen or rutie (the one with its scoring) exactly when every setting that
    decides the answers is equal; each other one is named with MERA's value."""
    from eval.mera.rutie import RutieSettings, describe_protocol

    protocol = describe_protocol(RutieSettings(**settings))
    assert (protocol["mera_task"], protocol["same_as_mera_task"], protocol["differs_from_mera_task"]) == (
        task, not differs, differs)


def test_a_log_likelihood_runs_protocol_shows_no_setting_of_generation():
    """Under --scoring logprobs no reply is generated or parsed: metrics.json's protocol listed the parser, the stop
    and max_tokens as if they had decided the answers; they are null there, as think_blocks was."""
    from eval.mera.rutie import RutieSettings, describe_protocol

    protocol = describe_protocol(RutieSettings(scoring="logprobs", answer_cue="", max_tokens=4))
    keys = ("answer_parser", "stop", "max_tokens", "temperature", "think_blocks")
    assert {k: protocol[k] for k in keys} == dict.fromkeys(keys)
    assert (protocol["mode"], protocol["same_as_mera_task"]) == ("completion", True)
    assert describe_protocol(RutieSettings(answer_cue=""))["max_tokens"] == 256


def test_an_exact_tie_of_the_two_logprobs_is_counted():
    """A tie answers "1" (the harness's np.argmax) and is counted, so a scorer that cannot tell the choices apart
    shows in metrics.json."""
    def rec(qid, scores, answer):
        return {"dialog_id": 0, "question_id": qid, "answer": answer, "gold": "2", "correct": answer == "2",
                "scores": scores, "reason": "" if answer else NO_LOGPROBS}  # fmt: skip

    records = [rec(0, {"1": -2.0, "2": -2.0}, "1"), rec(1, {"1": -2.0, "2": -1.0}, "2"),
               rec(2, {"1": None, "2": None}, None), rec(3, None, "1")]  # fmt: skip
    assert answer_from_logprobs({"1": -2.0, "2": -2.0}) == Answer("1")
    assert rutie_metrics(records)["n_ties"] == 1


def test_rutie_chat_logprob_variant_reads_first_token_top_logprobs(tmp_path):
    """Chat logprob scoring asks for one token with top_logprobs and compares the entries for 1 and 2."""
    tops = {
        "Сколько ног у человека?": [(" 2", -0.2), ("1", -1.5), ("Ответ", -2.0)],
        "А у муравья?": [("Ответ", -0.1), ("x", -0.3)],  # neither digit in the top list: unparsed
        "Кто из них меньше?": [("1", -0.9), (" 2", -1.1), ("2", -0.4)],  # " 2" and "2" both count as 2
    }

    def respond(path: str, body: dict) -> tuple[int, dict]:
        top = tops[_current_question(body)]
        reply = chat_body(body["model"], [top[0][0]], prompt_tokens=7)
        reply["choices"][0]["logprobs"] = {"content": [{
            "token": top[0][0], "logprob": top[0][1], "bytes": None,
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top],
        }]}  # fmt: skip
        return 200, reply

    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(respond) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--mode", "chat", "--scoring", "logprobs") == 0
    bodies = endpoint.bodies("/v1/chat/completions")
    assert all((b["max_tokens"], b["logprobs"], b["top_logprobs"]) == (1, True, 20) for b in bodies)
    answers = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [(a["answer"], a["reason"]) for a in answers] == [("2", ""), (None, NO_LOGPROBS), ("2", "")]
    assert answers[2]["scores"] == {"1": -0.9, "2": -0.4}
    # The unparsed answer shows as the harness's fallback -1 in the later context, never as the gold one.
    assert bodies[2]["messages"][3] == {"role": "assistant", "content": "-1"}


def test_rutie_resumes_after_interruption(tmp_path, capsys):
    """A run whose endpoint fails mid-dialogue (503 after the retries) stops with one line and exit 4, no
    traceback, and resumes at the next question with the saved answers in context.

    Both dialogues reach the failing third question before either fails: the first to arrive is held until the
    other's arrives (its client cannot retry meanwhile, so that is the other dialogue). Unordered, a dialogue that
    failed first stopped the other one between its questions, so fewer answers were saved."""
    import threading

    data = _write_dialogs(tmp_path / "d.jsonl", dialog_ids=(0, 1))
    out = tmp_path / "run"
    failing = _table_responder(REPLIES, fail_on={"Кто из них меньше?"})
    arrived, counting, both_arrived = [0], threading.Lock(), threading.Event()

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if _current_question(body) == "Кто из них меньше?":
            with counting:  # the server answers each request on its own thread
                arrived[0] += 1
                if arrived[0] == 2:
                    both_arrived.set()
            assert both_arrived.wait(60), "the other dialogue never reached its third question"
        return failing(path, body)

    with ScriptedEndpoint(respond) as endpoint:
        assert _run(endpoint, data, out, "--concurrency", "2") == 4
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith("judge-eval mera rutie: error:")]
    assert len(said) == 1 and "HTTP 503: scripted failure: the operator pulled the plug" in said[0], err
    assert "rerunning the same command resumes" in said[0] and "Traceback" not in err
    saved = read_jsonl(out / "answers.jsonl")
    assert sorted((a["dialog_id"], a["question_id"]) for a in saved) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert not (out / "metrics.json").exists()

    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out, "--concurrency", "2") == 0
    # Only the unanswered questions were asked, each with the saved answers in its context.
    assert [b["prompt"] for b in endpoint.bodies("/v1/completions")] == [EXPECTED_PROMPTS[2]] * 2
    final = read_jsonl(out / "answers.jsonl")
    assert sorted((a["dialog_id"], a["question_id"]) for a in final) == [(d, q) for d in (0, 1) for q in range(3)]
    assert json.loads((out / "metrics.json").read_text())["n"] == 6

    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out, "--mode", "chat") == 2  # other settings: refused, nothing asked
    assert endpoint.requests == []


def test_rutie_overwrite_discards_the_earlier_runs_metrics(tmp_path):
    """--overwrite discards the earlier run's metrics.json with its answers: a new run that then stops (the endpoint
    failing mid-run, exit 4) leaves no earlier accuracy beside its own settings, where it reads as the new run's."""
    data = _write_dialogs(tmp_path / "d.jsonl", dialog_ids=(0, 1))
    out = tmp_path / "run"
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out) == 0
    assert (out / "metrics.json").exists()
    with ScriptedEndpoint(_table_responder(REPLIES, fail_on={"Кто из них меньше?"})) as endpoint:
        assert _run(endpoint, data, out, "--overwrite", "--temperature", "0.5") == 4
    assert not (out / "metrics.json").exists()
    assert json.loads((out / "run_key.json").read_text())["temperature"] == 0.5


def test_rutie_counts_prompts_that_hit_the_context_limit(tmp_path):
    """A context-length 400 is recorded as an unparsed 'context limit' answer, and the run goes on."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        if "Кто из них меньше?" in body["prompt"]:
            return 400, error_body("This model's maximum context length is 64 tokens. However, you requested 99")
        return _table_responder(REPLIES)(path, body)

    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(respond, max_model_len=None) as endpoint:
        assert _run(endpoint, data, tmp_path / "run") == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["n_context_limit"] == 1
    assert metrics["unparsed_reasons"] == {NO_ANY_DIGIT: 1, CONTEXT_LIMIT: 1}
    assert metrics["max_model_len"] is None


def test_client_retries_transient_errors_with_backoff():
    """503 twice, then an answer: the client retries (no SDK retries) and returns the third response."""
    from eval.mera.client import OpenAICompatClient

    calls = []

    def respond(path: str, body: dict) -> tuple[int, dict]:
        calls.append(body)
        if len(calls) <= 2:
            return 503, {"error": {"message": "overloaded"}}
        return 200, completion_body(body["model"], ["ok"], prompt_tokens=3)

    with ScriptedEndpoint(respond) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=3, backoff_s=0.01)
        (gen,) = client.generate("hi", max_tokens=4)
        assert gen.text == "ok" and len(calls) == 3
        calls.clear()
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=1, backoff_s=0.01)
        with pytest.raises(Exception, match="overloaded"):
            client.generate("hi", max_tokens=4)
        assert len(calls) == 2


def test_rutie_cli_defaults_follow_the_card_and_harness():
    """Defaults: one 'Ответ:' cue (card "Data Instances" and "Prompts"), MERA's answer parser, greedy; '' turns the cue off."""
    args = cli.config_from_args(cli.build_parser().parse_args(["rutie", "--out", "x"]))
    assert (args.answer_cue, args.answer_parser, args.temperature, args.mode) == ("Ответ:", "mera", 0.0, "completion")
    assert cli.config_from_args(cli.build_parser().parse_args(["rutie", "--out", "x", "--answer-cue", ""])).answer_cue == ""


def test_rutie_help_runs():
    """`mera rutie --help` exits 0."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["rutie", "--help"])
    assert exit_info.value.code == 0


def test_chat_mode_stops_nowhere_by_default_and_an_old_run_resumes_with_no_stop(tmp_path):
    """rutie_gen's newline stop is a completion-mode rule: chat mode sends no stop by default, so a chat model's
    multi-line reply ("Ответ:\\n2") is read to its digit. A run folder started before stops existed (its key has
    none) resumes with --stop '[]' and its own --max-tokens."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_table_responder(LATE_DIGIT)) as endpoint:
        assert _run(endpoint, data, tmp_path / "chat", "--mode", "chat") == 0
    assert all("stop" not in b for b in endpoint.bodies("/v1/chat/completions"))
    assert [a["answer"] for a in read_jsonl(tmp_path / "chat" / "answers.jsonl")] == ["1", "2", "2"]
    key = json.loads((tmp_path / "chat" / "run_key.json").read_text(encoding="utf-8"))
    assert "stop" not in key
    with ScriptedEndpoint(_table_responder(LATE_DIGIT)) as endpoint:
        assert _run(endpoint, data, tmp_path / "completion", "--max-tokens", "16") == 0
        key = json.loads((tmp_path / "completion" / "run_key.json").read_text(encoding="utf-8"))
        assert key["stop"] == ["\n"]
        old = {k: v for k, v in key.items() if k != "stop"}  # a key written before stops existed
        (tmp_path / "completion" / "run_key.json").write_text(json.dumps(old), encoding="utf-8")
        assert _run(endpoint, data, tmp_path / "completion", "--max-tokens", "16", "--stop", "[]") == 0


# ---------------------------------------------------------------------------------------------------------------
# A prompt over the context window; a request the endpoint refuses
# ---------------------------------------------------------------------------------------------------------------

#: Five questions of one dialogue; the scripted model answers " 1" to each.
LONG_DIALOG = [f"Вопрос {i}?" for i in range(5)]
CONTEXT_WINDOW_400 = "This model's maximum context length is 64 tokens. However, you requested 99 tokens."


def _write_long_dialog(path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for q, question in enumerate(LONG_DIALOG):
            f.write(json.dumps({
                "instruction": INSTR, "inputs": {"question": question, "choice1": "Да", "choice2": "Нет"},
                "outputs": "1", "meta": {"dialog_id": 0, "question_id": q, "category": ["memory"],
                                         "use_context": q > 0, "turing_imitation": ["facts"]},
            }, ensure_ascii=False) + "\n")  # fmt: skip
    return path


def _window_of_one_turn(fail_on: str | None = None, refusal: str = CONTEXT_WINDOW_400):
    """An endpoint whose window holds one answered turn: a prompt with two or more gets the 400 vLLM sends
    (``refusal``); the question ``fail_on`` gets a 503 (the endpoint failing mid-run)."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        prompt = body["prompt"]
        if prompt.count("Ответ: ") >= 2:  # answered turns ("Ответ: 1"); --answer-cue '' adds no bare cue
            return 400, error_body(refusal)
        if fail_on is not None and prompt.rstrip().endswith(f"{fail_on}\n1. Да\n2. Нет"):
            return 503, error_body("scripted outage")
        return 200, completion_body(body["model"], [" 1"], prompt_tokens=len(prompt))

    return respond


def _turn_text(q: int) -> str:
    return f"{LONG_DIALOG[q]}\n1. Да\n2. Нет\nОтвет: 1"


@pytest.mark.parametrize(
    ("overflow", "dropped", "answers", "n_requests"),
    [
        # The default (the harness truncates too, by tokens): the oldest whole turns go until the prompt fits;
        # turns once dropped stay dropped, so each later question costs one refused request, not one per turn.
        ((), [0, 0, 1, 2, 3], ["1"] * 5, 1 + 1 + 2 + 2 + 2),
        # The named deviation: such a question is unparsed ("context limit"), as before the option existed.
        (("--context-overflow", "fail"), [0] * 5, ["1", "1", None, None, None], 5),
    ],
)
def test_rutie_prompt_over_the_context_window_drops_the_oldest_turns(tmp_path, overflow, dropped, answers,
                                                                      n_requests):
    """MERA's harness (--model hf) left-truncates a prompt over the window (lm_eval/models/huggingface.py,
    left_truncate_len); the endpoint refuses it instead (HTTP 400). With --context-overflow truncate (default)
    the request is built again without the oldest whole turn until it fits, the instruction's head kept; each
    record says how many turns its request left out and the metrics count those questions."""
    data = _write_long_dialog(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_window_of_one_turn(), max_model_len=None) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--answer-cue", "", *overflow) == 0
    assert len(endpoint.bodies("/v1/completions")) == n_requests
    records = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [r["context_turns_dropped"] for r in records] == dropped
    assert [r["answer"] for r in records] == answers
    assert [r["context_limit"] for r in records] == [False, False, True, True, True]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["n_context_limit"] == 3
    if not overflow:
        # Question 4 was answered after its one newest earlier turn only, under the instruction's head.
        assert records[4]["request"] == "Диалог:\n" + _turn_text(3) + "\n\n" + f"{LONG_DIALOG[4]}\n1. Да\n2. Нет"
        assert "error" not in records[4]
        assert (metrics["n_context_truncated"], metrics["n_unparsed"], metrics["accuracy"]) == (3, 0, 1.0)
        assert json.loads((tmp_path / "run" / "run_key.json").read_text())["context_overflow"] == "truncate"
    else:
        assert records[4]["reason"] == CONTEXT_LIMIT and "maximum context length" in records[4]["error"]
        assert records[4]["request"].startswith("Диалог:\n" + _turn_text(0))  # the full request, as asked
        assert (metrics["n_context_truncated"], metrics["n_unparsed"]) == (0, 3)
        assert metrics["unparsed_reasons"] == {CONTEXT_LIMIT: 3}


def test_rutie_truncation_resumes_where_it_stopped(tmp_path):
    """A resumed run leaves out the turns the saved answers had left out (from their context_turns_dropped), so it
    asks what an uninterrupted run would."""
    data = _write_long_dialog(tmp_path / "d.jsonl")
    out = tmp_path / "run"
    with ScriptedEndpoint(_window_of_one_turn(fail_on=LONG_DIALOG[4]), max_model_len=None) as endpoint:
        assert _run(endpoint, data, out, "--answer-cue", "") == 4
    assert [r["context_turns_dropped"] for r in read_jsonl(out / "answers.jsonl")] == [0, 0, 1, 2]
    with ScriptedEndpoint(_window_of_one_turn(), max_model_len=None) as endpoint:
        assert _run(endpoint, data, out, "--answer-cue", "") == 0
    # Question 4 starts from 2 dropped turns: one refused request, then the one that fits.
    assert [b["prompt"].count("Ответ: ") for b in endpoint.bodies("/v1/completions")] == [2, 1]
    assert [r["context_turns_dropped"] for r in read_jsonl(out / "answers.jsonl")] == [0, 0, 1, 2, 3]


def test_chat_truncation_keeps_the_instruction_head_in_the_first_user_turn():
    """Chat mode drops whole turns too: the instruction's first part moves to the first turn kept."""
    from eval.mera.client import ContextLimitError
    from eval.mera.rutie import RutieSettings, ask

    class Client:
        def __init__(self):
            self.requests = []

        def generate(self, request, **kwargs):
            from eval.mera.client import Generation

            self.requests.append(request)
            if sum(m["role"] == "assistant" for m in request) >= 2:
                raise ContextLimitError("HTTP 400: " + CONTEXT_WINDOW_400)
            return [Generation(text="1", raw_text="1", finish_reason="stop", prompt_tokens=9)]

    q0, q1, q2 = (_item(i, f"Q{i}?", "a", "b") for i in range(3))
    client = Client()
    record, _ = ask(client, q2, [(q0, "2"), (q1, "1")], RutieSettings(mode="chat"))
    assert len(client.requests) == 2 and record["context_turns_dropped"] == 1 and record["answer"] == "1"
    assert record["request"] == [
        {"role": "user", "content": "Диалог:\nQ1?\n1. a\n2. b\nОтвет:"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": "Q2?\n1. a\n2. b"},
    ]


@pytest.mark.parametrize("status", [400, 422])
def test_rutie_a_refused_request_is_that_questions_failure(tmp_path, status):
    """A request the endpoint refuses for what it holds (HTTP 400 or 422, not the context window) fails that
    question, unparsed with reason "request refused" and the endpoint's message; the run goes on (it aborted
    with a traceback, and a rerun met the same refusal forever)."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_table_responder(REPLIES, fail_on={"А у муравья?"}, status=status)) as endpoint:
        assert _run(endpoint, data, tmp_path / "run") == 0
    records = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [(r["answer"], r["reason"]) for r in records] == [("2", ""), (None, "request refused"), ("2", "")]
    assert records[1]["error"] == f"HTTP {status}: scripted failure: the operator pulled the plug"
    assert records[1]["context_limit"] is False and records[1]["context_answer"] == "-1"
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["unparsed_reasons"] == {"request refused": 1} and metrics["accuracy"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--stop", "\\n"], "--stop takes a JSON list of strings"),  # ruTiE's newline typed naturally
        (["--stop", "n"], "--stop takes a JSON list of strings"),
        (["--stop", "a b"], "--stop takes a JSON list of strings"),  # shell words: one stop or two?
        (["--stop", "[1]"], "--stop takes a JSON list of strings"),
        (["--max-tokens", "0"], "--max-tokens must be above 0, got 0"),
        (["--request-timeout", "-1"], "--request-timeout must be above 0, got -1.0"),
        (["--max-model-len", "0"], "--max-model-len must be at least 1"),
        (["--concurrency", "0"], "--concurrency must be above 0"),
    ],
)
def test_rutie_bad_values_are_usage_errors_naming_the_flag(tmp_path, capsys, argv, said):
    """--stop takes a JSON list only (the shared reading split '\\n' like a shell: a stop on the letter n), the
    message showing the JSON form; numbers out of range are refused naming their flag. Exit 2, nothing asked."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        with pytest.raises(SystemExit) as exit_info:
            _run(endpoint, data, tmp_path / "run", *argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and said in err, err
    assert endpoint.requests == [] and not (tmp_path / "run").exists()
    if argv[0] == "--stop":
        assert """--stop '["\\n"]'""" in err


def test_rutie_stop_flag_reads_json_only(tmp_path, capsys):
    """--stop '["\\n"]' is a newline, '[]' none, 'null' the mode's default; a YAML stop that is not a list is
    refused."""
    def stop(*argv: str):
        return cli.config_from_args(cli.build_parser().parse_args(["rutie", "--out", "x", *argv])).stop

    assert (stop("--stop", '["\\n"]'), stop("--stop", "[]"), stop("--stop", "null"), stop()) == (["\n"], [], None, None)
    config = tmp_path / "rutie.yaml"
    config.write_text('stop: "\\n"\n', encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["rutie", "--config", str(config), "--out", str(tmp_path / "r")])
    assert exit_info.value.code == 2 and "stop must be a list of strings" in capsys.readouterr().err
    config.write_text('stop: ["\\n"]\n', encoding="utf-8")
    assert cli.config_from_args(cli.build_parser().parse_args(["rutie", "--config", str(config), "--out", "x"])).stop \
        == ["\n"]


class _RefusingClient:
    """A client whose every request is refused: ``refuse(request) -> exception``; records each request."""

    def __init__(self, refuse):
        self.refuse = refuse
        self.requests: list[Any] = []

    def generate(self, request, **kwargs):
        self.requests.append(request)
        raise self.refuse(request)


def test_truncation_costs_at_most_two_requests_a_question_when_no_prompt_fits(tmp_path):
    """With --context-overflow truncate, a question refused even alone (a max_tokens the window cannot give:
    vLLM's "max_tokens=N cannot be greater than max_model_len=M") records every earlier turn as left out, so the
    next question starts from there: one request with its one newer turn, one alone. It recorded 0, and every
    later question walked all its earlier turns again: N(N+1)/2 requests, 1,830 for 60 questions."""
    from eval.mera.client import ContextLimitError
    from eval.mera.rutie import RutieSettings, run_dialogues

    n = 30
    items = [_item(q, f"Вопрос {q}?", "Да", "Нет") for q in range(n)]
    # Each refusal in other words (vLLM names the prompt's length), so no two look alike to the first-refusals stop.
    def refusal(request: str) -> ContextLimitError:
        said = (f"This model's maximum context length is 64 tokens. However, your prompt contains {len(request)} "
                f"input tokens ({request.rstrip().splitlines()[-4]})")
        return ContextLimitError(f"HTTP 400: {said}", 400, said)

    client = _RefusingClient(refusal)
    records = run_dialogues({0: items}, client, RutieSettings(), tmp_path, concurrency=1)
    assert len(client.requests) <= 2 * n, len(client.requests)
    assert len(client.requests) == 1 + 2 * (n - 1)
    assert [r["context_turns_dropped"] for r in records] == list(range(n))
    assert all(r["reason"] == CONTEXT_LIMIT and r["context_limit"] for r in records)
    # The record holds the last request sent: the question alone, in the first question's form.
    assert records[5]["request"] == completion_prompt(items[5], [])
    # Question 6 tried with its one newer turn (question 5's, shown as the harness's -1), then alone.
    assert client.requests[1 + 2 * 5] == completion_prompt(items[6], [(items[5], "-1")])
    metrics = rutie_metrics(records)
    assert (metrics["n_context_truncated"], metrics["n_context_limit"]) == (0, n)  # none answered with turns cut
    # A resumed run starts from the saved records' dropped turns too.
    assert [r["context_turns_dropped"] for r in read_jsonl(tmp_path / "answers.jsonl")] == list(range(n))


@pytest.mark.parametrize(
    ("argv", "window", "said"),
    [
        (["--max-tokens", "4096"], 4096, "--max-tokens 4096 leaves no room for a prompt in the model's context "
                                         "window of 4096 tokens (the endpoint's /v1/models)"),
        (["--max-tokens", "5000"], 4096, "use a --max-tokens below 4096"),
        (["--max-model-len", "200"], None, "--max-tokens 256 leaves no room for a prompt in the model's context "
                                           "window of 200 tokens (--max-model-len)"),
    ],
)
def test_rutie_max_tokens_the_window_cannot_give_is_refused_naming_the_flag(tmp_path, capsys, argv, window, said):
    """vLLM refuses max_tokens above the window on every request ("max_tokens=N cannot be greater than
    max_model_len=M"), and one at the window leaves no token for a prompt: with the window known (the endpoint's
    /v1/models, or --max-model-len) such a --max-tokens is a usage error naming the flag (exit 2), nothing asked
    and nothing saved. Logprob scoring sends no max_tokens of its own: not refused."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_table_responder(REPLIES), max_model_len=window) as endpoint:
        with pytest.raises(SystemExit) as exit_info:
            _run(endpoint, data, tmp_path / "run", *argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and said in err, err
    assert endpoint.bodies("/v1/completions") == []
    assert not (tmp_path / "run" / "run_key.json").exists() and not (tmp_path / "run" / "answers.jsonl").exists()
    with ScriptedEndpoint(_table_responder(REPLIES), max_model_len=4096) as endpoint:
        assert _run(endpoint, data, tmp_path / "fits", "--max-tokens", "4095") == 0  # one token left for a prompt


#: vLLM's 400 to every chat request for a model without a chat template.
NO_CHAT_TEMPLATE = ("As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
                    "template if the tokenizer does not define one.")


@pytest.mark.parametrize(
    ("argv", "window", "refusal"),
    [
        (["--mode", "chat"], 4096, NO_CHAT_TEMPLATE),
        # A max_tokens above a window the endpoint does not list: a context-window refusal, alike every time.
        (["--max-tokens", "300"], None, "max_tokens=300 cannot be greater than max_model_len=256. Please request "
                                        "fewer output tokens."),
    ],
)
def test_rutie_an_endpoint_refusing_every_request_alike_stops_the_run(tmp_path, capsys, argv, window, refusal):
    """The first questions all refused with the same status and message stop the run, exit 4, naming the server's
    words (eval.judging.backends.FirstRefusals, as judge-eval run): no answer is saved for them, so a rerun against
    the fixed endpoint asks every question. The run ended with exit 0 and a score of 0, its failed answers saved as
    done, and the rerun asked nothing."""
    data = _write_dialogs(tmp_path / "d.jsonl", dialog_ids=(0, 1))
    out = tmp_path / "run"
    with ScriptedEndpoint(lambda path, body: (400, error_body(refusal)), max_model_len=window) as endpoint:
        assert _run(endpoint, data, out, "--concurrency", "1", *argv) == 4
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith("judge-eval mera rutie: error:")]
    assert len(said) == 1 and f"refused the first 3 questions alike: HTTP 400: {refusal}" in said[0], err
    assert "(stopped after asking 3 of 6 questions; no answer was saved for the refused ones" in said[0], err
    assert "Traceback" not in err
    assert len(endpoint.requests) < 6  # stopped: not every question of the two dialogues was asked
    assert not (out / "answers.jsonl").exists() or read_jsonl(out / "answers.jsonl") == []
    assert not (out / "metrics.json").exists()
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:  # the server fixed: every question is asked
        assert _run(endpoint, data, out, "--concurrency", "1", *argv) == 0
    assert len(endpoint.requests) == 6 and len(read_jsonl(out / "answers.jsonl")) == 6


def test_rutie_a_logprob_run_refused_alike_says_questions_not_requests(tmp_path, capsys):
    """Under completion-mode log-probability scoring a question is up to three requests: the stop's sentence counts
    the questions asked, each refused at its first request here, never calling them requests."""
    data = _write_dialogs(tmp_path / "d.jsonl", dialog_ids=(0, 1))
    refusal = "The model does not support Completions API"
    with ScriptedEndpoint(lambda path, body: (400, error_body(refusal))) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--concurrency", "1", "--scoring", "logprobs") == 4
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("judge-eval mera rutie: error:")]
    assert len(said) == 1 and said[0].endswith(
        f"the endpoint refused the first 3 questions alike: HTTP 400: {refusal} (stopped after asking 3 of 6 "
        "questions; no answer was saved for the refused ones, a rerun asks them again)"), said
    assert len(endpoint.requests) == 3


def test_rutie_a_refused_first_question_among_answered_ones_is_saved_in_order(tmp_path):
    """One refusal among answered questions is that question's failure, the run finishing: the refusal of the
    run's first question is held while it could be the first of many alike, then saved, before the answers that
    came after it, so the dialogue's saved answers stay in order (and resume)."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    refuse_first = _table_responder(REPLIES, fail_on={"Сколько ног у человека?"}, status=400)
    with ScriptedEndpoint(refuse_first) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--concurrency", "1") == 0
    records = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [(r["question_id"], r["reason"]) for r in records] == [(0, "request refused"), (1, NO_ANY_DIGIT), (2, "")]
    with ScriptedEndpoint(refuse_first) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--concurrency", "1") == 0
    assert endpoint.requests == []  # every answer saved: nothing asked again


def test_a_dialogue_whose_held_refusal_is_dropped_at_the_stop_saves_nothing_later(tmp_path, monkeypatch):
    """Dialogue 0's first question is refused and held; while its next question is in flight, dialogues 1 and 2
    are refused alike and the run stops. Dialogue 0's next answer, though answered, is not saved: its first was
    not, and a saved dialogue must be a prefix of it (a resume refuses anything else)."""
    import dataclasses
    import threading

    from eval.judging.backends import FirstRefusals
    from eval.mera.client import Generation, RequestRefused
    from eval.mera.rutie import RutieSettings, run_dialogues
    from judge.plumbing.retry import EndpointUnusable

    stopped = threading.Event()
    offer = FirstRefusals.offer

    def offer_and_tell(self, refusal, payload):
        released = offer(self, refusal, payload)
        if self.stopped is not None:
            stopped.set()
        return released

    monkeypatch.setattr(FirstRefusals, "offer", offer_and_tell)

    class Client:
        def generate(self, request, **kwargs):
            if "d0 q1" in request:  # asked once d0 q0's refusal is held; answered once the others stopped the run
                d0_held.set()
                assert stopped.wait(10)
                return [Generation(text="1", raw_text="1", finish_reason="stop", prompt_tokens=9)]
            if "d0 q0" not in request:  # dialogues 1 and 2: refused after dialogue 0's first
                assert d0_held.wait(10)
            raise RequestRefused("HTTP 400: no", 400, "no")

    d0_held = threading.Event()
    dialogues = {d: [dataclasses.replace(_item(q, f"d{d} q{q}?", "a", "b"), dialog_id=d)
                     for q in range(2 if d == 0 else 1)] for d in range(3)}  # fmt: skip
    with pytest.raises(EndpointUnusable, match="refused the first 3 questions alike: HTTP 400: no"):
        run_dialogues(dialogues, Client(), RutieSettings(), tmp_path, concurrency=3)
    assert not (tmp_path / "answers.jsonl").exists() or read_jsonl(tmp_path / "answers.jsonl") == []


def test_ctrl_c_while_a_question_is_asked_waits_for_no_answer(tmp_path, caplog, python_sigint_handler):
    """Ctrl+C (a real SIGINT) while dialogue 1's question is still unanswered: the run waited for it (up to
    --request-timeout and its retries) as its thread pool joined every worker. It now raises at once, dialogue 1's
    question still in flight; its answer, which comes once run_dialogues has raised (its caller then lets go of the
    run folder), is dropped and said, not saved. Ordered by events, no
    sleeps (the bound on the hold only ends a failing test): the stop comes with dialogue 0's second question, which
    its worker asks only after it saved the first's answer (a stop before any answer is saved drops the later ones,
    as the run folder is left as found), and is answered at once: the waiting thread, on dialogue 0, wakes with it
    even where the signal came before it blocked."""
    import dataclasses
    import os
    import signal
    import threading

    from eval.mera.client import Generation
    from eval.mera.rutie import RutieSettings, run_dialogues

    in_flight, release = threading.Event(), threading.Event()
    answered: list[str] = []

    class Client:
        def generate(self, request, **kwargs):
            if "d1 q0" in request:  # a long generation, still running at the stop
                in_flight.set()
                release.wait(30)
                answered.append("d1")
            elif "d0 q1" in request:  # the user presses Ctrl+C while dialogue 1's question is asked
                in_flight.wait(30)
                os.kill(os.getpid(), signal.SIGINT)
            return [Generation(text="1", raw_text="1", finish_reason="stop", prompt_tokens=9)]

    dialogues = {d: [dataclasses.replace(_item(q, f"d{d} q{q}?", "a", "b"), dialog_id=d) for q in range(2 - d)]
                 for d in range(2)}  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        run_dialogues(dialogues, Client(), RutieSettings(), tmp_path, concurrency=2)
    answered_on_return = list(answered)
    release.set()
    for worker in [t for t in threading.enumerate() if t.name.startswith("mera-worker-")]:
        worker.join(30)  # the abandoned question ends here, not in a later test
    assert (answered_on_return, answered) == ([], ["d1"])
    saved = [(r["dialog_id"], r["question_id"]) for r in read_jsonl(tmp_path / "answers.jsonl")]
    assert saved in ([(0, 0)], [(0, 0), (0, 1)]), saved  # dialogue 0's second answer came as the stop did
    assert ("dialogue 1 question 0: its answer came after the run was stopped: not saved, a rerun asks it again"
            in caplog.messages)


def test_an_answer_that_comes_after_ctrl_c_with_none_saved_is_dropped(tmp_path, monkeypatch, python_sigint_handler):
    """Ctrl+C while the first question is asked, no answer saved: the launch leaves the run folder as it found it
    (hold_run_folder), and an answer that came meanwhile was saved into it without its key, which no rerun resumes.
    It is now dropped (the rerun asks again). Ordered, not waited for: the waiting thread raises the signal itself
    once the question is in flight, and the answer is let through only after run_dialogues has raised."""
    import dataclasses
    import threading

    from eval.mera.client import Generation
    from eval.mera.rutie import RutieSettings, run_dialogues

    in_flight, release = threading.Event(), threading.Event()
    answered: list[str] = []

    class Client:
        def generate(self, request, **kwargs):
            in_flight.set()
            release.wait(30)  # a bound for a failing test only
            answered.append(request)
            return [Generation(text="1", raw_text="1", finish_reason="stop", prompt_tokens=9)]

    ctrl_c_once_in_flight(monkeypatch, in_flight)
    dialogues = {0: [dataclasses.replace(_item(0, "d0 q0?", "a", "b"), dialog_id=0)]}
    with pytest.raises(KeyboardInterrupt):
        run_dialogues(dialogues, Client(), RutieSettings(), tmp_path, concurrency=1)
    release.set()
    for worker in [t for t in threading.enumerate() if t.name.startswith("mera-worker-")]:
        worker.join(30)
    assert len(answered) == 1  # the answer came, after the interrupt
    assert not (tmp_path / "answers.jsonl").exists()


def test_a_prompt_of_exactly_the_window_is_over_it(tmp_path):
    """vLLM 0.32 takes a prompt of exactly the window's length, lowers max_tokens to the 0 tokens left
    (entrypoints/serve/utils/api_utils.py get_max_tokens) and its sampling parameters refuse that (sampling_params.py:
    "max_tokens must be at least 1, got 0."): no room for an answer, so the window's refusal, truncated like the
    others, not a "request refused" question."""
    from eval.mera.client import is_context_limit_message

    at_window = "max_tokens must be at least 1, got 0."
    assert is_context_limit_message(at_window) and not is_context_limit_message("max_tokens must be at least 1, got -5.")
    data = _write_long_dialog(tmp_path / "d.jsonl")
    with ScriptedEndpoint(_window_of_one_turn(refusal=at_window), max_model_len=None) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--answer-cue", "") == 0
    records = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [r["context_turns_dropped"] for r in records] == [0, 0, 1, 2, 3]
    assert [r["answer"] for r in records] == ["1"] * 5


def _old_format(records: list[dict]) -> list[dict]:
    """Records as a folder from before the first question opened with the harness's blank line holds them."""
    return [{**r, "request": r["request"].lstrip("\n")} if r["question_id"] == 0 else r for r in records]


def test_a_folder_from_before_the_blank_line_resumes_only_without_mixing_prompt_formats(tmp_path, capsys):
    """A folder from before today's prompt change (no context_overflow in its key) resumes with
    --context-overflow fail; its first questions had no leading blank line. A dialogue not yet started would get
    its first question in the new format, two formats in one run: refused (exit 2), nothing asked. Once every
    dialogue has begun (later prompts did not change), it resumes."""
    data = _write_dialogs(tmp_path / "d.jsonl", dialog_ids=(0, 1))
    out = tmp_path / "run"
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out, "--context-overflow", "fail") == 0
    full = read_jsonl(out / "answers.jsonl")
    assert all(r["request"].startswith("\n\n") for r in full if r["question_id"] == 0)
    def lines(recs: list[dict]) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)

    (out / "answers.jsonl").write_text(lines(_old_format([r for r in full if r["dialog_id"] == 0])), encoding="utf-8")
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out, "--context-overflow", "fail") == 2
    assert endpoint.requests == []
    said = capsys.readouterr().err
    assert "without the blank line the harness's prompt opens with" in said
    assert "the first question of each dialogue not yet started (1, e.g. 1)" in said
    # Both dialogues begun, each with its first answer only: the rest is asked, no first question among it.
    begun = [r for r in full if r["question_id"] == 0]
    (out / "answers.jsonl").write_text(lines(_old_format(begun)), encoding="utf-8")
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out, "--context-overflow", "fail") == 0
    assert len(endpoint.requests) == 4 and len(read_jsonl(out / "answers.jsonl")) == 6
    # A folder of today's format resumes whatever is left.
    (out / "answers.jsonl").write_text(lines([r for r in full if r["dialog_id"] == 0]), encoding="utf-8")
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out, "--context-overflow", "fail") == 0
    assert len(endpoint.requests) == 3


class _ScriptedClient:
    """A client answering each question from ``replies`` (question -> list of reply texts; ``[]`` is an endpoint's
    ``{"choices": []}``); records each request."""

    def __init__(self, replies: dict[str, list[str]]):
        self.replies = replies
        self.requests: list[Any] = []

    def generate(self, request, **kwargs):
        from eval.mera.client import Generation

        self.requests.append(request)
        question = max((q for q in self.replies if q in request), key=request.rfind)
        return [Generation(text=t, raw_text=t, finish_reason="stop") for t in self.replies[question]]


@pytest.mark.parametrize(("parser", "shown"), [("mera", "-1"), ("choice", "")])
def test_a_reply_with_no_choice_is_that_questions_failure_and_the_dialogue_goes_on(tmp_path, parser, shown):
    """An endpoint answering {"choices": []}: the question is unanswered with its own reason, counted in the metrics,
    never dropped; the dialogue goes on with the model's empty answer in later context (the harness's -1 under the
    mera parser), as ruHumanEval counts a sample the endpoint did not return (not_generated) and goes on."""
    from eval.mera.rutie import NO_REPLY, RutieSettings, load_dialogues, run_dialogues

    dialogues = load_dialogues(_write_dialogs(tmp_path / "d.jsonl"))
    client = _ScriptedClient({"Сколько ног у человека?": [" 2"], "А у муравья?": [], "Кто из них меньше?": [" 2"]})
    records = run_dialogues(dialogues, client, RutieSettings(answer_parser=parser), tmp_path, concurrency=1)
    assert [(r["answer"], r["reason"], r["correct"]) for r in records] == [
        ("2", "", False), (None, NO_REPLY, False), ("2", "", True)]
    assert records[1]["reply"] == "" and records[1]["context_answer"] == shown
    assert client.requests[2] == expected_prompts(shown)[2]  # the third question sees the empty answer
    metrics = rutie_metrics(records)
    assert (metrics["n"], metrics["n_unparsed"], metrics["unparsed_reasons"]) == (3, 1, {NO_REPLY: 1})
    assert [r["question_id"] for r in read_jsonl(tmp_path / "answers.jsonl")] == [0, 1, 2]


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_log_probability_scoring_of_a_reply_with_no_choice_is_unparsed(tmp_path, mode):
    """Log-probability scoring against an endpoint answering {"choices": []} to a question: that question is unparsed
    ("no log-probabilities for 1/2"), never an IndexError ending the run; the others are scored."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        empty = _current_question(body) == "А у муравья?"
        if mode == "chat":
            reply = chat_body(body["model"], [] if empty else ["1"], prompt_tokens=7)
            for choice in reply["choices"]:
                choice["logprobs"] = {"content": [{"token": "1", "logprob": -0.1, "bytes": None, "top_logprobs": [
                    {"token": "1", "logprob": -0.1, "bytes": None}, {"token": "2", "logprob": -2.0, "bytes": None}]}]}
            return 200, reply
        if not body.get("echo"):
            return 200, completion_body(body["model"], ["x"], prompt_tokens=1)
        value = -0.1 if body["prompt"].endswith(" 1") else -3.0
        logprobs = {"tokens": ["p", body["prompt"][-2:]], "token_logprobs": [None, value], "text_offset": [0, 1],
                    "top_logprobs": None}
        return 200, completion_body(body["model"], [] if empty else [body["prompt"]], prompt_tokens=2,
                                    logprobs=logprobs)

    data = _write_dialogs(tmp_path / "d.jsonl")
    with ScriptedEndpoint(respond) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--mode", mode, "--scoring", "logprobs") == 0
    answers = read_jsonl(tmp_path / "run" / "answers.jsonl")
    assert [(a["answer"], a["reason"]) for a in answers] == [("1", ""), (None, NO_LOGPROBS), ("1", "")]


def test_a_dialogue_that_fails_ends_the_run_without_asking_the_others(tmp_path):
    """The first question fails for good (HTTP 503, no retries): the run ends there (exit 4, the answers so far
    kept). The dialogues queued behind it are not run to their ends first (13 more questions of the bundled sample,
    each through its own retries against an endpoint that is down)."""
    def respond(path, body):
        if len([b for p, b in endpoint.requests if p.endswith("/completions")]) == 1:
            return 503, {"error": {"message": "down"}}
        return 200, completion_body(body["model"], ["1"], prompt_tokens=10)

    with ScriptedEndpoint(respond) as endpoint:
        code = cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", "sample",
                         "--out", str(tmp_path / "run"), "--max-retries", "0", "--concurrency", "1"])  # fmt: skip
        asked = [b for p, b in endpoint.requests if p.endswith("/completions")]
    assert code == 4
    assert len(asked) == 1


# ---------------------------------------------------------------------------------------------------------------
# Chat replies without answer text; progress rows a resume cannot read
# ---------------------------------------------------------------------------------------------------------------

THINKING = [{"type": "thinking", "thinking": [{"type": "text", "text": "Посчитаем ноги..."}]}]


def _content_parts_responder(contents: dict[str, tuple[Any, str]]):
    """Chat answers from ``contents``: question -> (the message content, the finish reason)."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        content, finish = contents[_current_question(body)]
        answer = chat_body(body["model"], [""], prompt_tokens=50)
        answer["choices"][0].update(message={"role": "assistant", "content": content}, finish_reason=finish)
        return 200, answer

    return respond


@pytest.mark.parametrize("parser", ["choice", "mera"])
def test_a_chat_reply_without_answer_text_is_unparsed_with_its_reason(tmp_path, parser):
    """Chat mode: a reply of reasoning parts alone cut by max_tokens is unparsed "reasoning not finished" (the choice
    parser's reason for an unclosed <think>; it was "request refused", blaming the endpoint), a refusal part "reply not
    text" with what it was in the record's error; neither is an endpoint's refusal, so the run whose first questions
    all get such replies goes on (it stopped with exit 4, the three refused alike) and later context shows the
    parser's empty answer."""
    data = _write_dialogs(tmp_path / "d.jsonl")
    contents = {"Сколько ног у человека?": (THINKING, "length"), "А у муравья?": ([{"type": "refusal",
                "refusal": "Не могу."}], "stop"), "Кто из них меньше?": (THINKING, "length")}  # fmt: skip
    with ScriptedEndpoint(_content_parts_responder(contents)) as endpoint:
        assert _run(endpoint, data, tmp_path / "run", "--mode", "chat", "--answer-parser", parser) == 0
    shown = "" if parser == "choice" else "-1"
    assert [b["messages"][1::2] for b in endpoint.bodies("/v1/chat/completions")][1:] == [
        [{"role": "assistant", "content": shown}],
        [{"role": "assistant", "content": shown}, {"role": "assistant", "content": shown}]]
    answers = read_jsonl(tmp_path / "run" / "answers.jsonl")
    not_text = "the endpoint's message content is not text: a list of parts (refusal)"
    assert [(a["answer"], a["reason"], a["reply"], a.get("error")) for a in answers] == [
        (None, "reasoning not finished", "", None), (None, "reply not text", "", not_text),
        (None, "reasoning not finished", "", None)]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["unparsed_reasons"] == {"reasoning not finished": 2, "reply not text": 1}


def _answered_run(tmp_path: Path) -> tuple[Path, Path]:
    """A finished run of DIALOG's one dialogue: its data and run folder."""
    data, out = _write_dialogs(tmp_path / "d.jsonl"), tmp_path / "run"
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out) == 0
    return data, out


@pytest.mark.parametrize("edit, said", [
    (lambda rows: rows[1].pop("dialog_id"), "answers.jsonl:2: field 'dialog_id' is missing"),
    (lambda rows: rows[1].pop("context_answer"), "answers.jsonl:2: field 'context_answer' is missing"),
    (lambda rows: rows[2].pop("reason"), "answers.jsonl:3: field 'reason' is missing"),
    (lambda rows: rows[0].update(question_id="0"), "answers.jsonl:1: field 'question_id' should be an integer, got a "
                                                   "string"),
    (lambda rows: rows[0].update(category="world"), "answers.jsonl:1: field 'category' should be a list, got a "
                                                    "string"),
    (lambda rows: rows.pop(0), "answers.jsonl: dialogue 0 has answers to questions [1, 2], expected the first of its "
                               "questions in order, [0, 1]"),
    (lambda rows: [row.update(dialog_id=7) for row in rows],
     "answers.jsonl: holds answers to dialogues the data does not have (7)"),
])  # fmt: skip
def test_a_progress_row_a_resume_cannot_read_is_refused_naming_file_line_and_field(tmp_path, capsys, edit, said):
    """An answers.jsonl row without a field the run reads (it ended in a KeyError traceback), or answers that are not
    their dialogue's first questions (exit 1, a "task error") is a resume mismatch: exit 2, one line naming the file,
    the line and the field, before the endpoint is asked."""
    data, out = _answered_run(tmp_path)
    rows = read_jsonl(out / "answers.jsonl")
    edit(rows)
    (out / "answers.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    capsys.readouterr()
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out) == 2
    assert endpoint.requests == [] and endpoint.gets == []
    (error,) = [line.removeprefix("judge-eval mera rutie: error: ") for line in capsys.readouterr().err.splitlines()
                if line.startswith("judge-eval mera rutie: error: ")]
    assert error.startswith(f"{out / said}") and error.endswith("--overwrite to start over") and "\n" not in error


def test_a_progress_line_that_is_no_json_object_is_an_input_error(tmp_path, capsys):
    """A line of answers.jsonl that is not a JSON object (and not the torn last line) stops the rerun with exit 2, an
    input error naming the file and line, as the help says of a resume mismatch (it was exit 1, a task error)."""
    data, out = _answered_run(tmp_path)
    lines = (out / "answers.jsonl").read_text("utf-8").splitlines(keepends=True)
    (out / "answers.jsonl").write_text(lines[0] + "[1, 2]\n" + "".join(lines[1:]), "utf-8")
    with ScriptedEndpoint(_table_responder(REPLIES)) as endpoint:
        assert _run(endpoint, data, out) == 2
    assert endpoint.requests == []
    assert f"{out / 'answers.jsonl'}:2: a list, not an object" in capsys.readouterr().err


def test_a_question_too_long_among_held_refusals_is_saved_after_them_in_order(tmp_path):
    """One dialogue: q0 refused ("no", held by the first-refusals stop), q1 longer than the window even alone (the
    data's own), q2 and q3 refused alike. The too-long question counts as answered for the stop, so q0 is released
    before it and every record is saved in question order, which a resume reads. Set aside, q1 was saved ahead of the
    held q0 (saved order [1]; the rerun refused the folder: "expected the first of its questions in order")."""
    from eval.mera.client import ContextLimitError, Generation, RequestRefused
    from eval.mera.rutie import RutieItem, RutieSettings, run_dialogues
    from judge.plumbing.journal import read_jsonl

    def item(q: int) -> RutieItem:
        return RutieItem(dialog_id=0, question_id=q, instruction="Диалог:\n{context}\n{question}\n1. {choice1}\n"
                         "2. {choice2}", question=f"q{q}?", choice1="a", choice2="b", gold="1")

    class Client:
        def generate(self, request, **kwargs):
            if "q1?" in request and "q2?" not in request:
                said = (f"This model's maximum context length is 64 tokens. However, your prompt contains "
                        f"{len(request) + 100} input tokens, which exceeds this limit even without any output tokens.")
                raise ContextLimitError(f"HTTP 400: {said}", 400, said)
            if "q4?" not in request:
                raise RequestRefused("HTTP 400: no", 400, "no")
            return [Generation(text="1", raw_text="1", finish_reason="stop", prompt_tokens=9)]

    items = [item(q) for q in range(5)]
    records = run_dialogues({0: items}, Client(), RutieSettings(), tmp_path, concurrency=1)
    assert [r["question_id"] for r in records] == [0, 1, 2, 3, 4]
    assert [r["question_id"] for r in read_jsonl(tmp_path / "answers.jsonl")] == [0, 1, 2, 3, 4]

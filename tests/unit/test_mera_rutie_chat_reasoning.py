"""ruTiE's default ``mera`` parser in chat mode reads a reply after its ``<think>`` reasoning (a model served without
``--reasoning-parser`` sends it inline), while completion mode stays MERA's harness regex on the whole reply. Run
through ``judge-eval mera rutie`` against a scripted endpoint; the payloads on the wire are asserted exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.mera import cli
from eval.mera.rutie import Answer, RutieSettings, describe_protocol, parse_reply
from judge.plumbing.journal import read_jsonl
from tests.support.scripted_endpoint import ScriptedEndpoint

INSTR = "Диалог:\n{context}\n{question}\n1. {choice1}\n2. {choice2}"
QUESTIONS = [("Сколько ног у человека?", "Две", "Четыре", "1"), ("А у муравья?", "Две", "Шесть", "2")]
#: The first reply's reasoning names choice 1 before its answer, 2; the second's reasoning never closes.
REPLIES = {"Сколько ног у человека?": "<think>Считаю: 1 вариант неверен</think>2",
           "А у муравья?": "<think>Вариант 1 кажется верным, но"}  # fmt: skip


def _write_dialog(path: Path) -> Path:
    rows = [{"instruction": INSTR, "inputs": {"question": q, "choice1": c1, "choice2": c2}, "outputs": gold,
             "meta": {"dialog_id": 0, "question_id": i, "category": ["world"], "use_context": i > 0,
                      "turing_imitation": ["facts"]}}
            for i, (q, c1, c2, gold) in enumerate(QUESTIONS)]  # fmt: skip
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _respond(path: str, body: dict) -> tuple[int, dict]:
    text = body["prompt"] if "prompt" in body else body["messages"][-1]["content"]
    reply = REPLIES[max((q for q in REPLIES if q in text), key=text.rfind)]
    usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
    if path.endswith("/chat/completions"):
        return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"], "usage": usage,
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                  "finish_reason": "stop", "logprobs": None}]}  # fmt: skip
    return 200, {"id": "c", "object": "text_completion", "created": 0, "model": body["model"], "usage": usage,
                 "choices": [{"index": 0, "text": reply, "finish_reason": "stop", "logprobs": None}]}  # fmt: skip


def _run(tmp_path: Path, *extra: str) -> tuple[ScriptedEndpoint, Path]:
    data, out = _write_dialog(tmp_path / "d.jsonl"), tmp_path / "run"
    with ScriptedEndpoint(_respond) as endpoint:
        assert cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(data),
                         "--out", str(out), "--max-retries", "0", *extra]) == 0  # fmt: skip
    return endpoint, out


def test_chat_mode_reads_the_answer_after_the_reasoning(tmp_path):
    """The first reply answers 2 (its reasoning's "1" was read as the answer), and the next question's context shows
    the model's 2; the second reply's reasoning never closed: unparsed, "reasoning not finished", not its "1"."""
    endpoint, out = _run(tmp_path, "--mode", "chat")
    q0 = "Сколько ног у человека?\n1. Две\n2. Четыре"
    assert [b["messages"] for b in endpoint.bodies("/v1/chat/completions")] == [
        [{"role": "user", "content": "Диалог:\n\n" + q0}],
        [{"role": "user", "content": "Диалог:\n" + q0 + "\nОтвет:"}, {"role": "assistant", "content": "2"},
         {"role": "user", "content": "А у муравья?\n1. Две\n2. Шесть"}],
    ]  # fmt: skip
    answers = read_jsonl(out / "answers.jsonl")
    assert [(a["answer"], a["reason"], a["context_answer"]) for a in answers] == [
        ("2", "", "2"), (None, "reasoning not finished", "-1")]
    protocol = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["protocol"]
    assert (protocol["answer_parser"], protocol["think_blocks"]) == ("mera", "skipped")


def test_completion_mode_stays_the_harness_regex_on_the_whole_reply(tmp_path):
    """Completion mode is MERA's: the regex takes the first standalone digit of the whole reply, reasoning and all,
    so both replies answer 1 and the next prompt shows it."""
    endpoint, out = _run(tmp_path, "--answer-cue", "")
    prompts = [b["prompt"] for b in endpoint.bodies("/v1/completions")]
    assert prompts[1] == ("Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 1\n\n"
                          "А у муравья?\n1. Две\n2. Шесть")  # fmt: skip
    answers = read_jsonl(out / "answers.jsonl")
    assert [(a["answer"], a["reason"]) for a in answers] == [("1", ""), ("1", "")]
    protocol = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["protocol"]
    assert (protocol["think_blocks"], protocol["same_as_mera_task"]) == ("read", True)


@pytest.mark.parametrize(
    ("reply", "chat", "expected"),
    [
        ("<think>Считаю: 1 вариант неверен</think>2", True, Answer("2")),
        ("<think>Считаю: 1 вариант неверен</think>2", False, Answer("1")),
        ("<think>Вариант 1 кажется верным, но", True, Answer(None, "reasoning not finished")),
        ("<think>Вариант 1 кажется верным, но", False, Answer("1")),
        ("вариант 1 неверен</think>Ответ: 2", True, Answer("2")),  # the template opened the block in the prompt
        ("<think>1</think>", True, Answer(None, "empty answer")),  # reasoning and no answer after it
        ("3, нет, 1", True, Answer("3")),  # otherwise still the harness's first digit
    ],
)
def test_the_mera_parser_skips_reasoning_in_chat_mode_only(reply, chat, expected):
    assert parse_reply(reply, "mera", chat=chat) == expected


def test_describe_protocol_says_how_reasoning_was_read():
    """think_blocks: skipped in chat mode or under the choice parser, read by the harness's regex in completion mode,
    none under log-probability scoring (no reply is parsed)."""
    assert [describe_protocol(RutieSettings(**s))["think_blocks"] for s in (
        {"mode": "chat"}, {"answer_parser": "choice"}, {}, {"scoring": "logprobs"})] == [
        "skipped", "skipped", "read", None]  # fmt: skip


def _resume(tmp_path: Path, out: Path, rows: list[dict]) -> tuple[int, ScriptedEndpoint]:
    (out / "answers.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                       encoding="utf-8")
    with ScriptedEndpoint(_respond) as endpoint:
        code = cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data",
                         str(tmp_path / "d.jsonl"), "--out", str(out), "--max-retries", "0", "--mode", "chat"])
    return code, endpoint


def test_a_chat_folder_whose_answer_was_read_inside_the_reasoning_is_not_resumed(tmp_path, capsys):
    """A chat-mode folder from before the mera parser skipped <think> holds the first question's answer as the
    whole-reply regex read it, "1" (from "Считаю: 1"), where the reading after the reasoning is "2". Resuming would
    ask the second question after it and read it the new way under one think_blocks: refused (exit 2), nothing
    asked. The same folder whose reply had no reasoning (both readings "2") resumes, asking the one question left."""
    _, out = _run(tmp_path, "--mode", "chat")
    first = read_jsonl(out / "answers.jsonl")[0]
    assert (first["answer"], first["reply"]) == ("2", REPLIES["Сколько ног у человека?"])
    code, endpoint = _resume(tmp_path, out, [{**first, "answer": "1", "context_answer": "1"}])
    assert code == 2 and endpoint.requests == []
    said = capsys.readouterr().err
    assert "1 of its answers were read from inside the reply's <think> block" in said
    assert "e.g. dialogue 0, question 0" in said and "Use a fresh --out, or --overwrite" in said
    code, endpoint = _resume(tmp_path, out, [{**first, "reply": "2"}])
    assert code == 0 and len(endpoint.bodies("/v1/chat/completions")) == 1
    assert [a["answer"] for a in read_jsonl(out / "answers.jsonl")] == ["2", None]

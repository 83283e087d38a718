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
    assert (protocol["answer_parser"], protocol["think_blocks"]) == ("mera", "skip")
    assert protocol["differs_from_mera_task"] == ["mode='chat' (MERA's rutie_gen: 'completion')",
                                                  "stop=[] (MERA's rutie_gen: ['\\n'])",
                                                  "think_blocks='skip' (MERA's rutie_gen: 'read')"]  # fmt: skip


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
    """think_blocks: by default skipped in chat mode or under the choice parser, read by the harness's regex in
    completion mode, none under log-probability scoring (no reply is parsed); a setting given is the one recorded."""
    assert [describe_protocol(RutieSettings(**s))["think_blocks"] for s in (
        {"mode": "chat"}, {"answer_parser": "choice"}, {}, {"scoring": "logprobs"},
        {"mode": "chat", "think_blocks": "read"}, {"think_blocks": "skip"})] == [
        "skip", "skip", "read", None, "read", "skip"]  # fmt: skip


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


def test_chat_mode_under_think_blocks_read_is_the_harness_regex_on_the_whole_reply(tmp_path):
    """--think-blocks read in chat mode: the first reply's reasoning "Считаю: 1" is its first digit, so it answers 1
    and the next question's context shows 1; the second reply's unclosed reasoning "Вариант 1" answers 1 too. The
    protocol records "read", so think_blocks is not among the differences from rutie_gen (chat mode and its stop are)."""
    endpoint, out = _run(tmp_path, "--mode", "chat", "--think-blocks", "read")
    assert [b["messages"] for b in endpoint.bodies("/v1/chat/completions")][1] == [
        {"role": "user", "content": "Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет:"},
        {"role": "assistant", "content": "1"}, {"role": "user", "content": "А у муравья?\n1. Две\n2. Шесть"}]
    answers = read_jsonl(out / "answers.jsonl")
    assert [(a["answer"], a["reason"], a["context_answer"]) for a in answers] == [("1", "", "1"), ("1", "", "1")]
    protocol = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["protocol"]
    assert protocol["think_blocks"] == "read"
    assert protocol["differs_from_mera_task"] == ["mode='chat' (MERA's rutie_gen: 'completion')",
                                                  "stop=[] (MERA's rutie_gen: ['\\n'])"]  # fmt: skip


def test_completion_mode_under_think_blocks_skip_reads_after_the_reasoning(tmp_path):
    """--think-blocks skip in completion mode: the first reply answers 2 (after its reasoning) and the next prompt
    shows 2; the second's reasoning never closed: unparsed. Not MERA's rutie_gen, and the protocol says why."""
    endpoint, out = _run(tmp_path, "--answer-cue", "", "--think-blocks", "skip")
    prompts = [b["prompt"] for b in endpoint.bodies("/v1/completions")]
    assert prompts[1] == ("Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n\n"
                          "А у муравья?\n1. Две\n2. Шесть")  # fmt: skip
    answers = read_jsonl(out / "answers.jsonl")
    assert [(a["answer"], a["reason"]) for a in answers] == [("2", ""), (None, "reasoning not finished")]
    protocol = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["protocol"]
    assert (protocol["think_blocks"], protocol["same_as_mera_task"], protocol["differs_from_mera_task"]) == (
        "skip", False, ["think_blocks='skip' (MERA's rutie_gen: 'read')"])


def _resume_with(tmp_path: Path, out: Path, *extra: str) -> tuple[int, ScriptedEndpoint]:
    """Keep only the first saved answer of ``out`` and run again with ``extra`` flags."""
    first = read_jsonl(out / "answers.jsonl")[0]
    (out / "answers.jsonl").write_text(json.dumps(first, ensure_ascii=False) + "\n", encoding="utf-8")
    with ScriptedEndpoint(_respond) as endpoint:
        code = cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data",
                         str(tmp_path / "d.jsonl"), "--out", str(out), "--max-retries", "0", *extra])
    return code, endpoint


@pytest.mark.parametrize(("written", "resumed", "named"), [
    ((), ("--think-blocks", "read"), "think_blocks: None -> 'read'"),
    (("--think-blocks", "read"), (), "think_blocks: 'read' -> None"),
    (("--think-blocks", "read"), ("--think-blocks", "skip"), "think_blocks: 'read' -> None"),
])  # fmt: skip
def test_a_chat_folder_is_not_resumed_under_the_other_think_blocks(tmp_path, capsys, written, resumed, named):
    """A chat folder written under one reading of <think> blocks, resumed under the other: refused before anything
    is asked (exit 2), naming the setting with its old and new value (only a reading other than the mode's default,
    skip, is in the run key, so a folder from before the setting resumes under the default)."""
    _, out = _run(tmp_path, "--mode", "chat", *written)
    capsys.readouterr()
    code, endpoint = _resume_with(tmp_path, out, "--mode", "chat", *resumed)
    assert code == 2 and endpoint.requests == []
    assert named in capsys.readouterr().err
    assert len(read_jsonl(out / "answers.jsonl")) == 1  # nothing mixed in


def test_a_chat_folder_resumes_under_its_own_think_blocks(tmp_path):
    """The same folder resumed under the reading it was written with asks the one question left and reads it alike:
    under read, the unclosed reasoning's "1"."""
    _, out = _run(tmp_path, "--mode", "chat", "--think-blocks", "read")
    code, endpoint = _resume_with(tmp_path, out, "--mode", "chat", "--think-blocks", "read")
    assert code == 0 and len(endpoint.bodies("/v1/chat/completions")) == 1
    assert [a["answer"] for a in read_jsonl(out / "answers.jsonl")] == ["1", "1"]


def test_a_completion_folder_keys_only_a_reading_other_than_its_default(tmp_path, capsys):
    """Completion mode's default reading (read) is left out of the run key, so a completion folder written before the
    setting existed resumes with no flag; --think-blocks skip is keyed, and that folder resumed with no flag is
    refused, naming the setting's recorded values."""
    _, default = _run(tmp_path, "--answer-cue", "")
    assert "think_blocks" not in json.loads((default / "run_key.json").read_text(encoding="utf-8"))
    code, endpoint = _resume_with(tmp_path, default, "--answer-cue", "")
    assert code == 0 and len(endpoint.bodies("/v1/completions")) == 1
    skipped = tmp_path / "skipped"
    skipped.mkdir()
    _, out = _run(skipped, "--answer-cue", "", "--think-blocks", "skip")
    assert json.loads((out / "run_key.json").read_text(encoding="utf-8"))["think_blocks"] == "skip"
    capsys.readouterr()
    code, endpoint = _resume_with(skipped, out, "--answer-cue", "")
    assert code == 2 and endpoint.requests == []
    assert "think_blocks: 'skip' -> None" in capsys.readouterr().err

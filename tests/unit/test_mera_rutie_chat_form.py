"""ruTiE's chat prompt in MERA's two chat forms (``--chat-form``): the harness's multi-turn form
(``--fewshot_as_multiturn``, the default here) and the one user turn MERA's documented chat commands send
(``MODEL_SCORING.md``: ``--apply_chat_template`` without ``--fewshot_as_multiturn``), where lm-eval puts the context
former's string and the question into one user message (``lm_eval/api/task.py`` ``fewshot_context`` and
``append_target_question``). Run through ``judge-eval mera rutie`` against a scripted endpoint; the messages on the
wire are asserted exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.mera import cli
from eval.mera.rutie import RutieItem, RutieSettings, chat_messages, completion_prompt, describe_protocol
from tests.support.scripted_endpoint import ScriptedEndpoint

INSTR = "Диалог:\n{context}\n{question}\n1. {choice1}\n2. {choice2}"
QUESTIONS = [("Сколько ног у человека?", "Две", "Четыре", "1"), ("А у муравья?", "Две", "Шесть", "2")]
REPLIES = {"Сколько ног у человека?": "2", "А у муравья?": "2"}


def _item(qid: int) -> RutieItem:
    question, c1, c2, gold = QUESTIONS[qid]
    return RutieItem(dialog_id=0, question_id=qid, instruction=INSTR, question=question, choice1=c1, choice2=c2,
                     gold=gold)  # fmt: skip


def test_the_single_turn_form_is_the_harness_prompt_in_one_user_message():
    """Worked by hand from the harness. Question 0: the context former returns ``"\\n\\n"`` (no earlier turn, then
    ``fewshot_delimiter``) and drops ``{context}``; lm-eval appends the stripped question to that user message:
    ``"\\n\\n" + "Диалог:\\n\\nСколько ног у человека?\\n1. Две\\n2. Четыре"``. Question 1, after the model's "2":
    the instruction's first part ``"Диалог:\\n"``, the earlier turn ``"Сколько ...\\nОтвет: 2"``, the delimiter
    ``"\\n\\n"``, then the second part filled and stripped. No answer cue: the harness adds none, and chat runs
    never send one."""
    q0, q1 = _item(0), _item(1)
    assert chat_messages(q0, [], form="single") == [
        {"role": "user", "content": "\n\nДиалог:\n\nСколько ног у человека?\n1. Две\n2. Четыре"}]
    assert chat_messages(q1, [(q0, "2")], form="single") == [
        {"role": "user", "content": "Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n\n"
                                    "А у муравья?\n1. Две\n2. Шесть"}]  # fmt: skip
    # the same text as the harness's completion prompt (--answer-cue '')
    assert chat_messages(q1, [(q0, "2")], form="single")[0]["content"] == completion_prompt(q1, [(q0, "2")], "")
    # the multi-turn form is unchanged, and the default
    assert chat_messages(q1, [(q0, "2")]) == chat_messages(q1, [(q0, "2")], form="multiturn") == [
        {"role": "user", "content": "Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет:"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "А у муравья?\n1. Две\n2. Шесть"}]
    with pytest.raises(ValueError, match="chat_form"):
        chat_messages(q1, [], form="one")


def test_describe_protocol_records_the_chat_form_in_chat_mode_only():
    assert describe_protocol(RutieSettings(mode="chat", chat_form="single"))["chat_form"] == "single"
    assert describe_protocol(RutieSettings(mode="chat"))["chat_form"] == "multiturn"
    assert describe_protocol(RutieSettings())["chat_form"] is None  # completion mode sends no messages


def _write_dialog(path: Path) -> Path:
    rows = [{"instruction": INSTR, "inputs": {"question": q, "choice1": c1, "choice2": c2}, "outputs": gold,
             "meta": {"dialog_id": 0, "question_id": i}} for i, (q, c1, c2, gold) in enumerate(QUESTIONS)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _respond(path: str, body: dict) -> tuple[int, dict]:
    text = body["messages"][-1]["content"]
    reply = REPLIES[max((q for q in REPLIES if q in text), key=text.rfind)]
    return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                              "finish_reason": "stop", "logprobs": None}]}  # fmt: skip


def _main(endpoint: ScriptedEndpoint, data: Path, out: Path, *extra: str) -> int:
    return cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(data),
                     "--out", str(out), "--max-retries", "0", "--mode", "chat", *extra])  # fmt: skip


def test_chat_form_single_sends_one_user_turn_and_is_recorded(tmp_path, capsys):
    data, out = _write_dialog(tmp_path / "d.jsonl"), tmp_path / "run"
    with ScriptedEndpoint(_respond) as endpoint:
        assert _main(endpoint, data, out, "--chat-form", "single") == 0
    assert [b["messages"] for b in endpoint.bodies("/v1/chat/completions")] == [
        [{"role": "user", "content": "\n\nДиалог:\n\nСколько ног у человека?\n1. Две\n2. Четыре"}],
        [{"role": "user", "content": "Диалог:\nСколько ног у человека?\n1. Две\n2. Четыре\nОтвет: 2\n\n"
                                     "А у муравья?\n1. Две\n2. Шесть"}],
    ]  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["protocol"]["chat_form"], metrics["accuracy"]) == ("single", 0.5)
    # a folder asked in one form is not resumed in the other: two prompt formats in one run
    with ScriptedEndpoint(_respond) as endpoint:
        assert _main(endpoint, data, out) == 2
    assert "chat_form" in capsys.readouterr().err

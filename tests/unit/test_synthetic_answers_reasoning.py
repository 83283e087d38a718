"""The answers stage on a thinking model that writes its reasoning inline: the answer is the text after its one
leading ``<think>...</think>`` block (kept in ``answer_reasoning`` and counted); a bare ``</think>`` with no leading
``<think>`` leaves the answer whole (an answer may mention the tag); one whose ``<think>`` never closed holds no
answer, and is dropped and counted (``unfinished_reasoning``).

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_answers_reasoning.py -q
"""

from __future__ import annotations

import json

import pytest

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic.answers import split_answer_reasoning


@pytest.mark.parametrize(("text", "answer"), [
    ("<think>x</think>Ответ", "Ответ"),
    ("\n<THINK >Думаю.\n</think>\n\nОтвет", "Ответ"),
    ("Ответ без рассуждения", "Ответ без рассуждения"),
    ("<think>x</think>Ответ про тег <think>, который открывает рассуждение", "Ответ про тег <think>, который открывает рассуждение"),
    ("Ответ, в котором упомянут <think>x</think>", "Ответ, в котором упомянут <think>x</think>"),  # not leading: text
    ("<think>x", None),  # never closed: the token limit cut the reasoning
    ("<think>" * 3000, None),
    # a bare </think> with no leading <think>: the answer may mention the tag, so nothing is cut
    ("x</think>Ответ", "x</think>Ответ"),
    ("Чтобы отключить рассуждения Qwen3, модель закрывает блок тегом </think>, после чего идёт ответ.",
     "Чтобы отключить рассуждения Qwen3, модель закрывает блок тегом </think>, после чего идёт ответ."),
    ("</think>Ответ", "</think>Ответ"),
    ("<think>a</think>Ответ про тег </think>", "Ответ про тег </think>"),  # the first </think> closes the block
])  # fmt: skip
def test_answer_after_reasoning(text, answer):
    assert split_answer_reasoning(text)[1] == answer


@pytest.mark.parametrize(("text", "split"), [
    ("  <think>a</think> b", ("a", " b")),
    ("<think>a", ("a", None)),
    ("a</think>b", (None, "a</think>b")),  # a bare </think>: the answer's own words
    ("a <think>b</think> c", (None, "a <think>b</think> c")),  # a <think> before the </think>: the answer's own
    ("b", (None, "b")),
    ("", (None, "")),
])  # fmt: skip
def test_leading_reasoning_splits_reasoning_from_answer(text, split):
    """judge.verdicts.leading_reasoning: (reasoning, answer), None for an answer never written."""
    from judge.verdicts import leading_reasoning

    assert leading_reasoning(text) == split


def test_the_stage_keeps_the_answer_and_counts_an_unfinished_reasoning(tmp_path):
    from tests.unit.test_synthetic_stages import _instruction_rows
    from train.synthetic.cli import main

    rows = _instruction_rows()
    replies = {rows[0]["instruction"]: ("<think>Нужно ответить кратко.</think>\n\nОтвет", "stop"),
               rows[1]["instruction"]: ("<think>Думаю о задаче и", "length"),
               rows[2]["instruction"]: ("Тег </think> закрывает рассуждение.", "stop")}  # fmt: skip

    def respond(path: str, body: dict) -> tuple[int, dict]:
        text, finish = replies[body["messages"][-1]["content"]]
        return 200, chat_completion(text, "m", finish)

    (tmp_path / "dedup").mkdir()
    (tmp_path / "dedup" / "dedup.jsonl").write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    with ScriptedEndpoint(respond, model="m") as server:
        config = tmp_path / "answers.yaml"
        config.write_text(f'answer_models: [{{model: m, base_url: "{server.base_url}"}}]\nmax_retries: 0\n')
        out = tmp_path / "answers"
        assert main(["answers", "--config", str(config), "--input", str(tmp_path / "dedup"), "--output", str(out)]) == 0
    kept = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert [(r["instruction_id"], r["answer"], r.get("answer_reasoning")) for r in kept] == [
        (rows[0]["id"], "Ответ", "Нужно ответить кратко."), (rows[2]["id"], "Тег </think> закрывает рассуждение.", None)]
    assert [(r["instruction_id"], r["drop_reason"], r["answer"]) for r in dropped] == [
        (rows[1]["id"], "unfinished_reasoning", "<think>Думаю о задаче и")]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["dropped_by_reason"], summary["answers_reasoning_removed"]) == ({"unfinished_reasoning": 1}, 1)

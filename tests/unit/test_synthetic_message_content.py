"""The synthetic pipeline's chat client on a reply whose content is not plain text: text parts are joined, reasoning
parts beside them skipped, anything else a failed request; a traces journal holding such content is asked again."""

from __future__ import annotations

import json

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic.client import ChatClient, ChatResult
from train.synthetic.config import EndpointConfig

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"
REASONING = "Ошибок в ответе нет, текст исправлен верно."


def _reply(content, reasoning=None, finish="stop") -> dict:
    body = chat_completion("", "teacher", finish)
    body["choices"][0]["message"]["content"] = content
    if reasoning is not None:
        body["choices"][0]["message"]["reasoning"] = reasoning
    return body


def _client(server: ScriptedEndpoint) -> ChatClient:
    return ChatClient(EndpointConfig(name="t", model="teacher", base_url=server.base_url), max_retries=0, backoff_s=0.0)


def test_text_parts_are_joined_and_other_content_is_a_failed_request():
    """A reply whose ``content`` is the chat API's list of text parts was passed on as a list, and every stage
    reading it as text crashed; an object or a non-text part the same. Text parts are the text; anything else is no
    answer: a failed result (counted, asked again by a rerun), never passed on."""
    from train.synthetic.client import message_text

    replies = [_reply([{"type": "text", "text": "Оценка: "}, {"type": "text", "text": "2"}], [{"type": "text", "text": "R"}]),
               _reply({"text": "2"}), _reply([{"type": "image_url", "image_url": {"url": "x"}}]),
               _reply([{"type": "text", "text": "2"}, {"type": "refusal", "refusal": "no"}]), _reply(None)]

    with ScriptedEndpoint(lambda path, body: (200, replies.pop(0)), model="teacher") as server:
        client = _client(server)
        results = [client.complete("q") for _ in range(5)]
    assert (results[0].ok, results[0].text, results[0].reasoning) == (True, "Оценка: 2", "R")
    for result, described in zip(results[1:4], ("not text: an object", "(image_url)", "(refusal, text)")):
        assert (result.ok, result.text) == (False, "")
        assert "not text" in result.error and described in result.error
    assert (results[4].ok, results[4].text) == (True, "")  # no content: an empty answer, as before
    assert message_text("x") == "x" and message_text(3) is None


def test_reasoning_parts_beside_the_text_are_skipped_not_a_failure():
    """Mistral-style content: a "thinking" part then the answer's text part. The answer is the text part; a reply
    of reasoning parts alone has no answer (failed, asked again)."""
    from train.synthetic.client import message_text

    assert message_text([{"type": "thinking", "thinking": "хм"}, {"type": "text", "text": "2"}]) == "2"
    assert message_text([{"type": "thinking", "thinking": "хм"}]) is None
    assert message_text([{"type": "image_url", "image_url": {}}, {"type": "text", "text": "2"}]) is None


def test_a_traces_journal_holding_non_text_content_is_asked_again_not_a_crash(tmp_path, monkeypatch):
    """An earlier version journalled such content as answered (``ok: True``) before deciding it, then crashed; every
    rerun skipped the journalled row and crashed the same way. Such a row is a failed request: the run that meets it
    counts it (exit 0) and a rerun asks it again."""
    from train.synthetic.cli import main
    from train.synthetic.journal import request_failed

    assert request_failed({"ok": True, "content": [{"type": "text", "text": "2"}], "reasoning": ""})
    assert request_failed({"ok": True, "answer": {"x": 1}}) and request_failed({"ok": True, "raw": None})
    assert not request_failed({"ok": True, "content": "2"})

    record = {"id": "A", "instruction": "Исправьте: «раз»", "answer": "раз", "expert_scores": [2],
              "reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
    inputs = tmp_path / "records.jsonl"
    inputs.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "traces"
    with ScriptedEndpoint(lambda path, body: (200, _reply("2", REASONING)), model="teacher") as server:
        config = tmp_path / "traces.yaml"
        config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": server.base_url, "max_tokens": 64},
                                      "samples_per_item": 2, "concurrency": 1, "max_retries": 0, "backoff_s": 0.0}))
        argv = ["traces", "--config", str(config), "--input", str(inputs), "--output", str(out)]
        # What the earlier client returned for a list of parts: the list itself, as an answer.
        old = ChatResult([{"type": "text", "text": "2"}], True, finish_reason="stop", reasoning=REASONING)  # type: ignore[arg-type]
        with monkeypatch.context() as patch:
            patch.setattr(ChatClient, "complete", lambda self, prompt, system="", temperature=None, seed=None: old)
            assert main(argv) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert (summary["kept"], summary["failed_by_reason"]) == (0, {"request_failed": 2})
        assert main(argv) == 0
        assert len(server.requests) == 2  # both asked again
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["failed"]) == (1, 0)  # the second agreeing trace is its duplicate

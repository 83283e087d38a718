"""A reply whose text holds a lone surrogate (valid JSON, ``"\\ud800"``, that no UTF-8 can write) passed the chat client
as an answer, and the journal's write raised UnicodeEncodeError out of the worker: the stage stopped, the rows after it
unasked, and every rerun asked it again and stopped the same way. It is a failed result, said, never a traceback."""

from __future__ import annotations

import json

from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint
from train.synthetic.client import ChatClient
from train.synthetic.config import EndpointConfig, InstructionsConfig
from train.synthetic.generation import run_instructions


def _reply(content: str, reasoning: str | None = None) -> RawBody:
    message = {"role": "assistant", "content": content, **({"reasoning": reasoning} if reasoning is not None else {})}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    return RawBody(json.dumps(body).encode())  # ensure_ascii: the surrogate goes as the escape \ud800


def test_a_reply_with_a_lone_surrogate_is_a_failed_result_naming_it():
    for reply, part in ((_reply("[PROBLEM] За\ud800 [END]"), "content"), (_reply("ok", "дума\udfff"), "reasoning")):
        with ScriptedEndpoint(lambda path, body, reply=reply: (200, reply)) as endpoint:
            client = ChatClient(EndpointConfig(model="scripted", base_url=endpoint.base_url), max_retries=0)
            result = client.complete("q")
        at = "U+D800) at character 12" if part == "content" else "U+DFFF) at character 4"
        assert (result.ok, result.text, result.reasoning, result.attempts) == (False, "", "", 1)
        assert result.error == f"the endpoint's message {part} is not valid Unicode text: a lone surrogate ({at}"


def test_the_stage_journals_it_as_a_failed_request_and_goes_on(tmp_path):
    with ScriptedEndpoint(lambda path, body: (200, _reply("[PROBLEM] За\ud800 [END]"))) as endpoint:
        config = InstructionsConfig(generators=[{"model": "scripted", "base_url": endpoint.base_url}],
                                    task_types=["Plans"], limit=2, max_retries=0)
        summary = run_instructions(config, tmp_path / "out")
    assert (summary["kept"], summary["dropped_by_reason"]) == (0, {"request_failed": 2})
    rows = [json.loads(line) for line in (tmp_path / "out" / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(row["ok"], row["raw"]) for row in rows] == [(False, ""), (False, "")]
    assert all("lone surrogate (U+D800)" in row["error"] for row in rows)

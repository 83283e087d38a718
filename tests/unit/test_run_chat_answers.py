"""`judge-eval run` on the chat route: an HTTP 200 that carries no choice is a failed request, not a verdict.

Some OpenAI-compatible proxies answer an upstream failure with HTTP 200 and ``{"error": {...}}`` (or a completion
whose ``choices`` list is empty). Read as the judge's answer it was a final ``empty`` parse failure: the server's
words lost and the item never asked again. It is now a ``request_failed`` row naming them, asked again by the next
run. The server is a scripted stand-in (``tests.support.scripted_endpoint``) whose request bodies are asserted.
"""

from __future__ import annotations

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

GOOD = "[FEEDBACK] ok [RESULT] 1 [END]"
NO_CHOICE = {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "scripted", "choices": []}


@pytest.mark.parametrize("answer, says", [
    ({"error": {"message": "Upstream provider overloaded", "code": 502}},
     "HTTP 200, but the answer holds no choice: Upstream provider overloaded"),
    (NO_CHOICE, "HTTP 200, but the answer holds no choice"),
], ids=["error-body", "empty-choices"])
def test_a_200_without_a_choice_is_a_failed_request_asked_again(tmp_path, answer, says):
    records = judge.load_records(judge.sample_data_path())[:2]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    out = tmp_path / "run"
    broken = True

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return 200, answer if broken else chat_completion(GOOD, body["model"])

    with ScriptedEndpoint(respond) as server:
        assert main(run_args(server.base_url, data, out)) == 3
        rows = read_predictions(out)
        assert [(r["error"], r["reason"], r["parse_ok"], r["score"]) for r in rows] == [
            ("request_failed", says, False, None)] * 2
        broken = False
        assert main(run_args(server.base_url, data, out)) == 0
        prompts = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")]
    assert sorted(prompts[2:]) == sorted(judge.render_prompt(r) for r in records)
    assert {(r["error"], r["score"]) for r in read_predictions(out)} == {(None, 1.0)}

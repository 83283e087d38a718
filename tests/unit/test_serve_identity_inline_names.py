"""An inline ``/v1/judge`` body (one item's fields at the top level, no ``items``) hears its refusals and its failed
results name the fields it sent: the judgments it asks for are its ``criteria``, the item as a whole is the ``body``,
a criterion is ``criteria[j]``, never ``items``, ``items[0]`` or ``items[0].criteria[j]``, which it has not.

The app runs in process (Starlette's TestClient) in front of a scripted vLLM on 127.0.0.1 (the network boundary).
"""

from __future__ import annotations

import contextlib

from fastapi.testclient import TestClient

from serve.app import create_app
from serve.config import ServeConfig
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.support.serve_in_process import await_bring_up

AUTH = {"Authorization": "Bearer k"}
VERDICT = {"choices": [{"text": "[FEEDBACK] Верно. [RESULT] 1 [END]", "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
RUBRIC = "0: нет\n1: да"
INLINE = {"instruction": "Сколько будет 2+2?", "answer": "4"}


@contextlib.contextmanager
def _judge_serve(model_dir, monkeypatch, **settings):
    """judge-serve (a 2048-token window, max_tokens 48) in front of a scripted engine answering every completion
    with a verdict; yields the client once judge-serve is ready, and the engine."""
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    listing = {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 2048}]}
    with ScriptedEndpoint(lambda path, body: (200, VERDICT),
                          respond_get=lambda path: (200, listing if path == "/v1/models" else {})) as engine:
        config = ServeConfig(model=str(model_dir), served_model_name="judge", generator_url=engine.url, api_key="k",
                             max_model_len=2048, max_tokens=48, **settings).validate()
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            assert http.get("/ready").status_code == 200, http.get("/health").text
            yield http, engine


def test_an_inline_body_over_max_judgments_hears_of_its_criteria(tiny_causal_dir, monkeypatch):
    """The bound counted on the body as sent (three custom criteria) and the one counted once a task type's criteria
    set is resolved (``Code modification``'s) both name ``criteria``; a body with ``items`` still hears ``items``."""
    criteria = [{"name": f"Критерий {k}", "rubrics": RUBRIC} for k in range(3)]
    with _judge_serve(tiny_causal_dir, monkeypatch, max_judgments_per_request=2) as (http, engine):
        counted = http.post("/v1/judge", headers=AUTH, json={**INLINE, "criteria": criteria})
        resolved = http.post("/v1/judge", headers=AUTH, json={**INLINE, "task_type": "Code modification",
                                                              "task_subtype": "Python"})
        batched = http.post("/v1/judge", headers=AUTH, json={"items": [{**INLINE, "criteria": criteria}]})
    assert (counted.status_code, counted.json()["error"]["param"], counted.json()["error"]["message"]) == (
        400, "criteria", "criteria: 3 (item, criterion) judgments requested; this server takes at most 2 per request. "
                         "Split the batch.")
    error = resolved.json()["error"]
    assert resolved.status_code == 400 and error["param"] == "criteria", resolved.text
    assert error["message"].startswith("criteria: ") and error["message"].endswith(
        " (item, criterion) judgments requested; this server takes at most 2 per request. Split the batch.")
    assert batched.json()["error"]["message"].startswith("items: 3 (item, criterion) judgments requested")
    assert engine.bodies("/v1/completions") == []


def test_an_inline_body_too_long_under_oversize_fail_hears_of_its_own_fields(tiny_causal_dir, monkeypatch):
    """Under ``"oversize": "fail"`` an inline item whose text alone is over the prompt's 2000 tokens (2048 - 48)
    fails with a reason naming the ``body``; one whose criterion's prompt is over them names ``criteria[0]``. Nothing
    of either is sent to the engine."""
    long_answer = "слово " * 2500  # over 2000 tokens, under the character bound checked before tokenizing
    near_answer = "слово " * 980
    long_rubric = {"name": "Полнота", "rubrics": "0: " + "плохо " * 400 + "\n1: хорошо"}
    with _judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        alone = http.post("/v1/judge", headers=AUTH, json={**INLINE, "answer": long_answer, "oversize": "fail",
                                                           "criteria": [{"name": "Корректность", "rubrics": RUBRIC}]})
        with_rubric = http.post("/v1/judge", headers=AUTH, json={**INLINE, "answer": near_answer, "oversize": "fail",
                                                                 "criteria": [long_rubric]})
    assert alone.status_code == 200 and with_rubric.status_code == 200, (alone.text, with_rubric.text)
    (alone_result,), (rubric_result,) = (answer.json()["items"][0]["results"] for answer in (alone, with_rubric))
    assert alone_result["error"] == "context_length_exceeded", alone_result
    reason = alone_result["error_reason"]
    assert reason.startswith("body: its instruction, reference answer and answer alone are ") and reason.endswith(
        " tokens, more than the 2000 prompt tokens left of the model's context of 2048 (max_tokens 48). Shorten the "
        "answer."), reason
    reason = rubric_result["error_reason"]
    assert rubric_result["error"] == "context_length_exceeded", rubric_result
    assert reason.startswith("criteria[0]: the prompt for criterion 'Полнота' is ") and reason.endswith(
        " > the model's context of 2048 tokens. Shorten the answer or ask for fewer max_tokens."), reason
    assert engine.bodies("/v1/completions") == []

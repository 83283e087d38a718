"""An engine that no longer serves judge-serve's own model name (restarted under another): its 404 is a 503 to retry,
on the proxied routes and on judgments."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.support.served_app import served as _served

VLLM_404 = json.dumps({"error": {"message": "The model `judge` does not exist.", "type": "NotFoundError",
                                 "param": "model", "code": 404}}).encode()


def test_an_engine_404_for_judge_serves_own_name_is_a_503_to_retry():
    """An attached engine restarted under another name answers 404 to judge-serve's own name: relayed, the client
    would read "model `judge` does not exist; this server serves `judge`". The client's request is right: a 503 with
    Retry-After, saying the engine no longer serves the expected name. A name judge-serve does not serve is still
    the 404 naming those it does."""
    from serve.errors import engine_error

    answer = engine_error(404, VLLM_404, "generator", names=("attached", "judge"), asked_model="judge")
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    error = json.loads(answer.body)["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", "engine_unavailable")
    assert error["message"] == ("the generator engine no longer serves the model name judge-serve expects (`judge`): "
                                "it was restarted under another name; retry later")
    given = engine_error(404, VLLM_404, "generator", names=("judge",), asked_model="judge",
                         retry_headers={"Retry-After": "12"})
    assert given.status_code == 503 and given.headers["retry-after"] == "12"
    other = engine_error(404, VLLM_404, "generator", names=("attached", "judge"), asked_model="gpt-4")
    assert other.status_code == 404 and json.loads(other.body)["error"]["code"] == "model_not_found"


def test_a_judgment_an_engine_answers_404_is_a_503_to_retry():
    """/v1/judge and /get_reward send the engine the name it served at start: its 404 was relayed as "engine answered
    404" (a 404 the client cannot fix). Now a 503 with the server's Retry-After, naming the expected name."""
    from serve.engine_client import EngineFailure
    from serve.errors import judgment_failed
    from serve.supervision import ServerState

    state = ServerState(config=None, layout=None, status="ready",
                        engines={"generator": SimpleNamespace(url="http://127.0.0.1:9")})
    state.judge = SimpleNamespace(settings=SimpleNamespace(engine_models={"generator": "attached"}))
    answer = judgment_failed(EngineFailure("engine answered 404: The model `attached` does not exist.", 404,
                                           param="model"), state)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    error = json.loads(answer.body)["error"]
    assert error["code"] == "engine_unavailable" and error["message"].startswith(
        "an engine no longer serves the model name judge-serve expects (`attached`)")
    refused = judgment_failed(EngineFailure("engine answered 400: too long", 400), state)
    assert refused.status_code == 400  # the engine's other refusals stay the client's to fix
    # a 404 that is not vLLM's for the model (an attached pooler without /classify, a path behind a proxy) is no
    # renamed engine: not a 503 every client would retry forever, nor the client's 404 (judge-serve has the route)
    no_route = judgment_failed(EngineFailure("engine answered 404: Not Found", 404), state)
    assert no_route.status_code == 502 and "retry-after" not in no_route.headers


def test_an_attached_engine_renamed_under_judge_serve_answers_503(tiny_causal_dir, monkeypatch):
    """In process, a scripted engine that answers every completion with vLLM's 404 for an unknown model: the proxied
    /v1/completions naming judge-serve's name and /v1/judge both answer 503 with Retry-After."""
    with _served(tiny_causal_dir, monkeypatch, api_key="k", completions=lambda path, body: (404, json.loads(VLLM_404))
                 ) as (http, _):
        auth = {"Authorization": "Bearer k"}
        proxied = http.post("/v1/completions", headers=auth, json={"model": "judge", "prompt": "hi", "max_tokens": 4})
        judged = http.post("/v1/judge", headers=auth, json={"items": [
            {"instruction": "Напиши стих.", "answer": "Весна.", "criteria": ["Креативность"]}]})
    for answer in (proxied, judged):
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] and answer.json()["error"]["code"] == "engine_unavailable"
        assert "no longer serves the model name judge-serve expects" in answer.json()["error"]["message"]

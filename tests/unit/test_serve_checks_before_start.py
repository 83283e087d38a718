"""While judge-serve's engines start (no judge yet, /ready says starting), a /v1/judge request that can never succeed
gets its 4xx naming the field, from the server's configuration and the taxonomy; a valid one gets the 503 that says
to retry."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from serve.judging import check_before_start
from serve.schema import RequestError, parse_judge_request

AUTH = {"Authorization": "Bearer k"}
ITEM = {"instruction": "2+2?", "answer": "4", "criteria": [{"name": "Верность", "rubrics": "0: нет\n1: да"}]}


@contextlib.contextmanager
def _starting(model_dir, monkeypatch, **settings):
    """judge-serve in process before an attached engine that never gets healthy (its /health 503): it stays starting
    while the test runs, and the test's end cancels its start."""
    from fastapi.testclient import TestClient

    from serve.app import create_app
    from serve.config import ServeConfig
    from tests.support.scripted_endpoint import ScriptedEndpoint

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(lambda path, body: (200, {}), respond_get=lambda path: (503, {})) as engine:
        config = ServeConfig(model=str(model_dir), served_model_name="judge", generator_url=engine.url,
                             max_model_len=1024, max_tokens=128, api_key="k", criteria_classifier="",
                             **settings).validate()
        with TestClient(create_app(config), base_url="http://localhost") as http:
            yield http, engine


def test_a_request_that_can_never_succeed_is_refused_while_the_engines_start(tiny_causal_dir, monkeypatch):
    """max_tokens over the server's 128, an unknown criterion name: 400 naming the field, no Retry-After; a valid
    request: 503 with Retry-After. Nothing reached the engine."""
    with _starting(tiny_causal_dir, monkeypatch, verdict_format="tagged") as (http, engine):
        assert http.get("/ready").json()["status"] == "starting"
        over = http.post("/v1/judge", headers=AUTH, json={"items": [ITEM], "max_tokens": 100_000})
        unknown = http.post("/v1/judge", headers=AUTH, json={"items": [{**ITEM, "criteria": ["no-such-criterion"]}]})
        valid = http.post("/v1/judge", headers=AUTH, json={"items": [ITEM]})
        assert http.get("/ready").json()["status"] == "starting"
    assert over.status_code == 400, over.text
    assert over.json()["error"]["param"] == "max_tokens"
    assert over.json()["error"]["message"] == ("max_tokens: must be at most 128 (this server's --max-tokens), got an "
                                                  "integer 100000")
    assert 400 <= unknown.status_code < 500, unknown.text
    assert unknown.json()["error"]["param"] == "items[0].criteria[0]", unknown.text
    for refused in (over, unknown):
        assert "retry-after" not in refused.headers
    assert valid.status_code == 503 and valid.headers["retry-after"], valid.text
    assert engine.bodies("/v1/completions") == []


def test_constrained_decoding_for_an_integer_judge_is_refused_while_the_engines_start(tiny_causal_dir, monkeypatch):
    with _starting(tiny_causal_dir, monkeypatch, verdict_format="integer", constrained_decoding=False) as (http, _):
        answer = http.post("/v1/judge", headers=AUTH, json={"items": [ITEM], "constrained": True})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "constrained"


def _config(generator_url: str = "") -> SimpleNamespace:
    return SimpleNamespace(generator_url=generator_url, model_name="judge", max_tokens=128, verdict_format="tagged",
                           constrained_decoding=False, max_judgments_per_request=64, criteria_classifier="")


def test_the_model_name_is_checked_once_the_generators_name_is_known():
    """Launched engines serve judge-serve's own name: another is a 404 naming it. An attached engine's name is known
    once read: before, any name passes (it may be the engine's); after, a name that is neither is refused."""
    request = parse_judge_request({"model": "gpt-4", "items": [ITEM]})
    with pytest.raises(RequestError) as launched:
        check_before_start(request, _config(), "seq2seq", {})
    assert (launched.value.status, launched.value.param, launched.value.code) == (404, "model", "model_not_found")
    assert "`gpt-4` does not exist; this server serves `judge`" in str(launched.value)
    check_before_start(request, _config("http://127.0.0.1:9"), "seq2seq", {})  # the attached name not read yet
    check_before_start(parse_judge_request({"model": "attached", "items": [ITEM]}), _config("http://127.0.0.1:9"),
                       "seq2seq", {"generator": "attached"})
    with pytest.raises(RequestError) as attached:
        check_before_start(request, _config("http://127.0.0.1:9"), "seq2seq", {"generator": "attached"})
    assert "this server serves `attached` or `judge`" in str(attached.value)


def test_pairs_for_a_regression_judge_are_refused_before_start():
    pairs = parse_judge_request({"pairs": [{"instruction": "a", "answer_1": "b", "answer_2": "c",
                                            "rubrics": "-1: первый\n0: одинаково\n1: второй"}]})
    with pytest.raises(RequestError) as refused:
        check_before_start(pairs, _config(), "regression", {})
    assert refused.value.param == "pairs"


def test_a_reward_label_whose_task_asks_more_judgments_than_the_bound_is_refused_while_the_engines_start(
        tiny_causal_dir, monkeypatch):
    """A label naming a task (``task_type`` Editing, whose set in the taxonomy has 15 criteria) on a server
    that takes at most 2 judgments a request: the labels' own reading counts a task once and resolves it without
    the bound, so only the judgment's check sees 15 > 2. While the engines start, /get_reward asks that check before
    any wait: a 400 naming the bound, not a wait for the engines (``reward_engine_wait_s``, short here so that a
    server that waits answers in half a second) ending in a 503 its trainer retries to the same end."""
    prompt = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
    body = {"query": [prompt + "Весна пришла."], "prompts": [prompt],
            "labels": [{"instruction": "Напиши стих о весне.", "task_type": "Editing"}]}
    with _starting(tiny_causal_dir, monkeypatch, verdict_format="tagged", max_judgments_per_request=2,
                   reward_engine_wait_s=0.5) as (http, engine):
        answer = http.post("/get_reward", headers=AUTH, json=body)
        assert http.get("/ready").json()["status"] == "starting"
    assert answer.status_code == 400, answer.text
    # named as /get_reward's body names them: its items are the labels
    assert answer.json()["error"]["param"] == "labels"
    assert answer.json()["error"]["message"] == ("labels: 15 (item, criterion) judgments requested; this server takes "
                                                 "at most 2 per request. Split the batch.")
    assert "retry-after" not in answer.headers
    assert engine.bodies("/v1/completions") == []

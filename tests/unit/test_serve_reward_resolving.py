"""judge-serve resolves a request's criteria once: ``/get_reward`` in the check of its labels, whose answer the
judging takes as it is (``serve.rewards.RewardRoute._read``, ``serve.judging.Judge.check``), and ``/v1/judge`` in
``Judge.check``. The app runs in process in front of a scripted engine."""

from __future__ import annotations

import contextlib

from serve.config import ServeConfig
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.support.serve_in_process import attached_engine_get, await_bring_up

AUTH = {"Authorization": "Bearer k"}
PROMPT = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
CRITERIA = ["Креативность", {"name": "Кратко", "rubrics": "0: длинно\n\n1: средне\n\n2: кратко"}]


def _verdict(path: str, body: dict) -> tuple:
    return 200, {"choices": [{"text": "[FEEDBACK] Хорошо. [RESULT] 2 [END]", "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


@contextlib.contextmanager
def _judge_serve(model_dir, monkeypatch):
    """judge-serve's app in process (``TestClient``), ready, in front of a scripted engine; yields (client, engine)."""
    from fastapi.testclient import TestClient

    from serve.app import create_app

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(_verdict, respond_get=attached_engine_get) as engine:
        config = ServeConfig(model=str(model_dir), served_model_name="attached", generator_url=engine.url,
                             max_model_len=1024, max_tokens=128, api_key="k").validate()
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            assert http.get("/ready").status_code == 200, http.get("/health").text
            yield http, engine


def test_each_labels_criteria_are_resolved_once(tiny_causal_dir, monkeypatch):
    """/get_reward resolves a label's criteria (taxonomy names looked up, a custom rubric's scale read) once, in the
    check of its labels, and the judging takes them as they are: the judging resolved a judged sample's label again.
    A label whose sample has nothing to judge is resolved once too (checked, never judged); /v1/judge resolves its
    items once."""
    import serve.jobs

    resolved: list[str] = []
    resolve = serve.jobs.resolve_criteria

    def counted(item, index, choice=None):
        resolved.append(item.instruction)
        return resolve(item, index, choice)

    monkeypatch.setattr(serve.jobs, "resolve_criteria", counted)
    # The first sample has nothing to judge and a label of one criterion; the second, judged, has two: its judging
    # must take its own label's resolved criteria, not the first label's.
    body = {"query": [PROMPT + "<|im_end|>", PROMPT + "Весна."], "prompts": [PROMPT, PROMPT],
            "labels": [{"instruction": "Первый.", "criteria": CRITERIA[1:]},
                       {"instruction": "Напиши стих о весне.", "criteria": CRITERIA}]}
    with _judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        rewarded = http.post("/get_reward", headers=AUTH, json=body)
        for_reward, resolved[:] = list(resolved), []
        engine_calls = len(engine.bodies("/v1/completions"))
        judged = http.post("/v1/judge", headers=AUTH, json={"items": [
            {"instruction": "Напиши стих о весне.", "answer": "Весна.", "criteria": CRITERIA}]})
    assert rewarded.status_code == 200 and judged.status_code == 200, (rewarded.text, judged.text)
    assert rewarded.json()["rewards"][1] == 1.0
    assert for_reward == ["Первый.", "Напиши стих о весне."]
    assert engine_calls == 2  # the judged sample's two criteria
    assert resolved == ["Напиши стих о весне."]
    assert len(engine.bodies("/v1/completions")) == 4  # and the judged item's two


def test_resolved_criteria_must_be_the_requests_and_count_against_the_bound(tiny_causal_dir, monkeypatch):
    """``Judge.check`` given criteria resolved elsewhere: a list of another length is refused (its items would be
    judged with another item's criteria, or dropped), and their judgments count against the server's bound before
    any engine is asked (a 400, never a 503 that says retry)."""
    import dataclasses

    import pytest

    from serve.jobs import check_criteria
    from serve.schema import RequestError, parse_judge_request

    request = parse_judge_request({"items": [
        {"instruction": "Напиши стих о весне.", "answer": "Весна.", "criteria": CRITERIA},
        {"instruction": "Второй.", "answer": "Да.", "criteria": CRITERIA[1:]}]})
    with _judge_serve(tiny_causal_dir, monkeypatch) as (http, _engine):
        judge = http.app.state.serve.judge
        resolved = check_criteria(request, classifying=False)
        assert len(judge.check(request, resolved=resolved).resolved) == 2
        with pytest.raises(ValueError, match="resolved criteria for 1 items given with a request of 2"):
            judge.check(request, resolved=resolved[:1])
        monkeypatch.setattr(judge, "settings", dataclasses.replace(judge.settings, max_judgments=2))
        with pytest.raises(RequestError, match="3 \\(item, criterion\\) judgments requested"):
            judge.check(request, resolved=resolved)

"""judge-serve's routes once its start failed before it registered any engine (its log folder, run.json): they say
it cannot serve, as the proxied ones do, never a bug's 500."""

from __future__ import annotations

from fastapi.testclient import TestClient

import serve.app
from serve.config import ServeConfig

KEY = "failed-start-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
ITEM = {"instruction": "Сколько будет 2+2?", "answer": "4", "criteria": [{"name": "Корректность", "rubrics": "0: нет\n1: да"}]}


def test_v1_judge_says_judge_serve_cannot_serve_when_it_failed_before_any_engine(tiny_causal_dir, monkeypatch):
    """start_engines fails before its first engine (an OSError, as a log folder that cannot be written gives):
    /v1/judge answers 503 ``judge-serve cannot serve: ...`` with no Retry-After (judge-serve exits), the body
    /v1/chat/completions answers. Before: 500 ``internal_error`` (AssertionError: no judge was built)."""
    async def fails(state):
        raise OSError("cannot write run.json")

    monkeypatch.setattr(serve.app, "start_engines", fails)
    config = ServeConfig(model=str(tiny_causal_dir), served_model_name="judge", api_key=KEY).validate()
    with TestClient(serve.app.create_app(config), base_url="http://localhost", raise_server_exceptions=False) as http:
        judged = http.post("/v1/judge", headers=AUTH, json={"model": "judge", "items": [ITEM]})
        chat = http.post("/v1/chat/completions", headers=AUTH,
                         json={"model": "judge", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8})
    error = {"error": {"message": "judge-serve cannot serve: the engines could not be started (OSError: cannot write "
                                  "run.json)", "type": "service_unavailable", "param": None, "code": "engine_unavailable"}}
    assert (judged.status_code, judged.json(), judged.headers.get("retry-after")) == (503, error, None)
    assert (chat.status_code, chat.json()) == (503, error)

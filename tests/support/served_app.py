"""judge-serve's app in process before a scripted attached engine, with an API key: what the API keys' tests and
the renamed engine's share."""

from __future__ import annotations

import contextlib

from serve.config import ServeConfig


@contextlib.contextmanager
def served(model_dir, monkeypatch, api_key: str, completions=None):
    """judge-serve's app in process (its start ended) before a scripted attached engine serving ``attached``
    (``completions(path, body)`` answers each POST); the configuration is not validated, so that a key validation
    refuses can still be served."""
    from fastapi.testclient import TestClient

    from serve.app import create_app
    from tests.support.scripted_endpoint import ScriptedEndpoint
    from tests.support.serve_in_process import attached_engine_get, await_bring_up

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    monkeypatch.delenv("JUDGE_SERVE_REWARD_KEY", raising=False)
    answer = completions or (lambda path, body: (200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]",
                                                                     "finish_reason": "stop"}]}))
    with ScriptedEndpoint(answer, respond_get=attached_engine_get) as engine:
        config = ServeConfig(model=str(model_dir), served_model_name="judge", generator_url=engine.url,
                             max_model_len=1024, max_tokens=128, api_key=api_key)
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            yield http, engine


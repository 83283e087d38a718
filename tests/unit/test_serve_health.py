"""judge-serve's ``GET /health`` over the engines' states as ``serve.supervision`` records them: 200 while judge-serve
can heal, 503 only when nothing will. The scene is set on the server state (engines that stand in for processes; no
engine runs), then asked through judge-serve's app in this process."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from serve.app import create_app
from serve.config import ServeConfig
from serve.layout import CheckpointLayout

KEY = "health-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


class _Engine:
    """An engine as /health reads it: judge-serve's own (``owned``) or attached."""

    url, log_path, pid = "http://127.0.0.1:9", None, 4242

    def __init__(self, owned: bool) -> None:
        self.owned = owned


def _app(tmp_path, engines: dict[str, bool]):
    """A regression judge's app, not started (no lifespan): ``engines`` role -> owned."""
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}))
    (tmp_path / "model.safetensors").write_bytes(b"x")
    layout = CheckpointLayout(kind="regression", root=tmp_path, generator_dir=tmp_path, pooler_dir=tmp_path)
    app = create_app(ServeConfig(model=str(tmp_path), verdict_format="tagged", api_key=KEY).validate(), layout)
    state = app.state.serve
    state.engines = {role: _Engine(owned) for role, owned in engines.items()}
    state.dead = {role: asyncio.Event() for role in engines}
    return app, state


def _asked(app) -> tuple[tuple[int, dict], tuple[int, dict]]:
    http = TestClient(app, base_url="http://localhost")
    anonymous, keyed = http.get("/health"), http.get("/health", headers=AUTH)
    return (anonymous.status_code, anonymous.json()), (keyed.status_code, keyed.json())


def test_an_engine_of_its_own_that_died_while_another_loads_is_no_fatal_death(tmp_path):
    """The generator came up and died (exit 1) while the pooler still loads: judge-serve restarts it once it turns
    ready (``serve.supervision.heal_the_dead``), so /health is 200, the generator ``dead`` and the pooler
    ``starting`` (judge-serve has not seen it answer), the detail saying the restart comes. Before: 503
    ``unhealthy``, which a liveness probe takes for a judge-serve to kill, and the loading pooler shown ``up``."""
    app, state = _app(tmp_path, {"generator": True, "pooler": True})
    # What the watcher records for a death while judge-serve starts: the reason (no restart yet), the exit code.
    state.dead_reason["generator"] = "the generator engine exited with code 1"
    state.last_exit["generator"] = 1
    anonymous, keyed = _asked(app)
    assert anonymous == (200, {"status": "up"})
    assert keyed == (200, {
        "status": "starting", "judge_kind": "regression",
        "engines": {"generator": {"state": "dead", "restarts": 0, "last_exit": 1},
                    "pooler": {"state": "starting", "restarts": 0, "last_exit": None}},
        "detail": "the generator engine exited with code 1; judge-serve restarts it once the other engines are up"})


@pytest.mark.parametrize("scene", ["attached engine dead", "failed"])
def test_a_death_nothing_will_heal_is_503(tmp_path, scene):
    """An attached engine that stopped answering (judge-serve cannot restart it), or judge-serve failed (a restart
    that never came up): 503, ``down`` without the key, ``unhealthy`` and why with it; no pid either way."""
    app, state = _app(tmp_path, {"generator": scene == "failed", "pooler": True})
    # Ready first: judge-serve saw every engine answer and read each one's model list (serve.supervision._bring_up).
    state.status, state.engine_models = "ready", {"generator": "judge", "pooler": "judge"}
    if scene == "failed":
        state.status, state.failure = "failed", "the generator engine was restarted 3 times in a row and never came up"
        state.dead_reason["generator"] = "the generator engine exited with code 1"
        reason = state.failure
    else:
        reason = "the attached generator engine stopped answering /health; judge-serve resumes when it answers"
        state.dead_reason["generator"] = reason
    anonymous, keyed = _asked(app)
    assert anonymous == (503, {"status": "down"})
    assert keyed == (503, {
        "status": "unhealthy", "detail": reason,
        "engines": {"generator": {"state": "dead", "restarts": 0, "last_exit": None},
                    "pooler": {"state": "up", "restarts": 0, "last_exit": None}}})


@pytest.mark.parametrize("scene", ["timed out", "died", "drained"])
def test_an_engine_never_seen_answering_is_not_shown_up_after_a_failed_start(tmp_path, scene):
    """judge-serve failed to start (an engine did not answer /health within engine_start_timeout_s: no death is
    recorded for it; or the generator died while loading), or drains (SIGTERM) before it saw every engine answer: an
    engine it never saw answering is ``never seen up``, a dead one ``dead``. Before: both ``up`` but a dead one
    (``engine_state`` read every state but ``starting`` as up)."""
    app, state = _app(tmp_path, {"generator": True, "pooler": True})
    if scene == "drained":
        state.status = "draining"
    else:
        state.status, state.failure = "failed", "the pooler engine did not answer /health within 900 s"
    if scene == "died":
        state.failure = "the generator engine exited with code 1 while it loaded"
        state.dead_reason["generator"], state.last_exit["generator"] = "the generator engine exited with code 1", 1
    anonymous, keyed = _asked(app)
    generator = ({"state": "dead", "restarts": 0, "last_exit": 1} if scene == "died"
                 else {"state": "never seen up", "restarts": 0, "last_exit": None})
    pooler = {"state": "never seen up", "restarts": 0, "last_exit": None}
    if scene == "drained":
        assert anonymous == (200, {"status": "up"})
        assert keyed == (200, {"status": "draining", "judge_kind": "regression",
                               "engines": {"generator": generator, "pooler": pooler}})
    else:
        assert anonymous == (503, {"status": "down"})
        assert keyed == (503, {"status": "unhealthy", "detail": state.failure,
                               "engines": {"generator": generator, "pooler": pooler}})

"""``/ready`` over an engine of judge-serve's own whose process has exited: 503 at once, not 200 until the watcher
(``serve.supervision._watch``, every half second) declares it dead. Here no watcher runs at all (the app's lifespan
is never entered), so the answer can only come from ``/ready`` reading the engine's exit itself."""

from __future__ import annotations

import os
import signal
import sys

from fastapi.testclient import TestClient

from judge.plumbing.processes import start_process
from serve.app import create_app
from serve.config import ServeConfig
from serve.launch import Engine, EngineSpec

KEY = "ready-key"


def test_ready_answers_503_as_soon_as_a_started_engine_has_exited(tiny_causal_dir, tmp_path):
    config = ServeConfig(model=str(tiny_causal_dir), served_model_name="tiny", api_key=KEY).validate()
    app = create_app(config)
    # A process standing for the engine: it waits on its stdin, which nothing writes, until it is killed.
    proc = start_process([sys.executable, "-c", "import sys; sys.stdin.read()"], log_path=tmp_path / "engine.log")
    try:
        state = app.state.serve
        state.engines = {"generator": Engine(spec=EngineSpec("generator", tiny_causal_dir, "tiny", 0.9),
                                             url="http://127.0.0.1:9", proc=proc)}
        state.status = "ready"  # as judge-serve is once its engines answered
        http = TestClient(app, base_url="http://localhost")  # outside `with`: no lifespan, no watcher
        keyed = {"Authorization": f"Bearer {KEY}"}
        assert http.get("/ready").status_code == 200  # alive: ready

        os.killpg(proc.pgid, signal.SIGKILL)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # returns once it has exited; reaps nothing

        anonymous, told = http.get("/ready"), http.get("/ready", headers=keyed)
        assert (anonymous.status_code, anonymous.json()) == (503, {"status": "unavailable"})
        assert told.status_code == 503
        assert told.json() == {"status": "unavailable", "detail": "the generator engine exited with code -9"}
        assert state.status == "ready" and state.dead_reason == {}  # nothing declared it dead: /ready read it
    finally:
        proc.stop(0)

"""judge-serve's start that fails after the port is bound: a log folder that cannot take the engine logs is a bad
configuration (exit 2, before any engine starts); an engine that cannot be started after another was stops the
one started, and judge-serve says why (failed, exit 1), instead of uvicorn's traceback."""

from __future__ import annotations

import errno
import socket

import serve.cli as serve_cli


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_log_dir_that_is_a_file_is_a_bad_configuration_named_before_any_engine(tiny_causal_dir, tmp_path, capsys,
                                                                                  monkeypatch):
    monkeypatch.setattr(serve_cli, "check_installed_vllm", lambda: None)  # whichever vLLM this machine has
    started = []
    monkeypatch.setattr("serve.supervision.Engine.start", lambda *a, **k: started.append(a))
    taken = tmp_path / "logs"
    taken.write_text("a file where the folder should be")
    code = serve_cli.main(["--model", str(tiny_causal_dir), "--port", str(_free_port()), "--log-dir", str(taken)])
    err = capsys.readouterr().err
    assert code == 2 and started == []
    assert err.startswith(f"judge-serve: error: log_dir: {taken} cannot hold the engine logs and run.json ("), err
    assert err.count("\n") == 1


class _Started:
    """An engine started before the next one's start failed."""

    owned, url, log_path, pid, command = True, "http://127.0.0.1:9", None, None, []

    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_an_engine_that_cannot_be_started_after_another_stops_that_one_and_fails(tiny_causal_dir, tmp_path,
                                                                               monkeypatch):
    """The pooler cannot be started (EMFILE) after the generator was: the generator is stopped when judge-serve
    stops, /health says why, and judge-serve is "failed" (cli: exit 1). Before: start_engines raised outside the
    lifespan's try, uvicorn printed its traceback and the generator was left to the parent-death signal."""
    from fastapi.testclient import TestClient

    import serve.supervision
    from serve.app import create_app
    from serve.config import ServeConfig
    from serve.launch import EngineSpec

    first = _Started()
    specs = [EngineSpec("generator", tiny_causal_dir, "judge", 0.5), EngineSpec("pooler", tiny_causal_dir, "judge", 0.4)]
    monkeypatch.setattr(serve.supervision, "engine_specs", lambda config, layout: specs)

    def start(spec, config, log_dir, api_key=None):
        if spec.role == "pooler":
            raise OSError(errno.EMFILE, "Too many open files")
        return first

    monkeypatch.setattr(serve.supervision.Engine, "start", start)
    config = ServeConfig(model=str(tiny_causal_dir), served_model_name="judge", log_dir=str(tmp_path / "logs"),
                         api_key="k")
    with TestClient(create_app(config), base_url="http://localhost") as http:
        state = http.app.state.serve
        assert state.status == "failed"
        assert state.failure == "the engines could not be started (OSError: [Errno 24] Too many open files)"
        assert http.get("/health").status_code == 503
    assert first.stopped

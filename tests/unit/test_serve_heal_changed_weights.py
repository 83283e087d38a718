"""judge-serve's healing: a dead engine is restarted only from the weights it was started from; over a checkpoint
changed in place judge-serve stops instead."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest


class _DeadEngine:
    owned, spec, log_path = True, "generator-spec", None

    def stop(self) -> None:
        return None


class _StartedEngine:
    owned, url, log_path = True, "http://127.0.0.1:9", None

    def wait_ready(self, timeout_s, stop) -> None:
        return None


def _dead_generator(checkpoint: Path, monkeypatch, started: type) -> tuple:
    """A ready judge-serve whose generator engine, started from the seq2seq ``checkpoint`` (its config and one
    weights file written here, ``model.safetensors``), has died; every restart (no backoff) gives a ``started``
    engine. Returns (state, the starts made, the weights file)."""
    import serve.supervision
    from judge.checkpoints import JudgeKind
    from serve.config import ServeConfig
    from serve.layout import CheckpointLayout
    from serve.supervision import ServerState

    (checkpoint / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
    weights = checkpoint / "model.safetensors"
    weights.write_bytes(b"x" * 64)
    layout = CheckpointLayout(kind=JudgeKind.SEQ2SEQ, root=checkpoint, generator_dir=checkpoint)
    starts: list = []
    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: starts.append(a) or started())
    monkeypatch.setattr(serve.supervision, "_update_run_record", lambda state: None)
    state = ServerState(config=ServeConfig(model=str(checkpoint), engine_restart_backoff_s=0.0), layout=layout,
                        status="ready", engines={"generator": _DeadEngine()}, dead={"generator": asyncio.Event()},
                        dead_reason={"generator": "the generator engine exited with code 1"})
    return state, starts, weights


def _heal(state) -> list:
    """Heal ``state``'s dead generator to the end; returns the calls judge-serve made to ``on_fatal``."""
    from serve.supervision import heal_the_dead

    async def heal() -> None:
        assert heal_the_dead(state) == ["generator"]
        await asyncio.gather(*state.tasks)

    fatal: list = []
    state.on_fatal = lambda: fatal.append(1)
    asyncio.run(heal())
    return fatal


@pytest.mark.parametrize("changed", [True, False])
def test_a_dead_engine_is_restarted_only_from_the_weights_it_was_started_from(tmp_path, monkeypatch, changed):
    """A checkpoint replaced in place while judge-serve runs, then an engine crash: restarting would serve the new
    weights under the old advertised fingerprint (and beside a pooler holding the old ones). judge-serve stops
    instead (failed, on_fatal: exit 1, so a supervisor restarts it over the new weights), and /health says why; left
    dead behind "ready", clients were told to retry for ever."""
    state, starts, weights = _dead_generator(tmp_path, monkeypatch, _StartedEngine)
    if changed:
        weights.write_bytes(b"y" * 128)  # retrained into the same folder
    fatal = _heal(state)
    if changed:
        assert starts == [] and not state.healing("generator") and fatal == [1]
        assert state.status == "failed" and "\n" not in state.failure
        assert "checkpoint changed under a running judge-serve: restart judge-serve" in state.failure
    else:
        assert state.status == "ready" and fatal == []
        assert len(starts) == 1 and "generator" not in state.dead_reason


def test_weights_replaced_while_the_restarted_engine_loads_stop_judge_serve(tmp_path, monkeypatch):
    """The weights checked before the restart are the old ones; the folder is replaced while the restarted engine
    loads, so it comes up holding the new ones. It is not served under the advertised (old) fingerprint: judge-serve
    stops (failed, on_fatal: exit 1) saying why, and the engine stays marked dead. Before: "ready" over it."""
    class _ReplacedWhileLoading(_StartedEngine):
        def wait_ready(self, timeout_s, stop) -> None:
            (tmp_path / "model.safetensors").write_bytes(b"y" * 128)  # retrained into the folder the engine reads

    state, starts, _ = _dead_generator(tmp_path, monkeypatch, _ReplacedWhileLoading)
    state.dead["generator"].set()
    fatal = _heal(state)
    assert len(starts) == 1 and fatal == [1] and state.status == "failed"
    assert state.failure == ("the generator engine was restarted over other weights: checkpoint changed under a "
                             "running judge-serve: restart judge-serve")
    assert state.dead["generator"].is_set() and "generator" in state.dead_reason

"""judge-serve's weights fingerprint against a checkpoint replaced while its engines load, and judge-serves that
build the same released ``-r`` views at once; on fake checkpoints (no tokenizer, no engine)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from safetensors.torch import save_file

from tests.support.released_r_checkpoint import released_r


class _Loaded:
    """An engine judge-serve started (``owned``), or attached to: all the readiness check reads of it."""

    def __init__(self, owned: bool) -> None:
        self.owned = owned


def _seq2seq(folder: Path) -> Path:
    import torch

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}))
    save_file({"w": torch.zeros(2)}, str(folder / "model.safetensors"))
    return folder


def _state(root: Path, owned: bool = True):
    from serve.config import ServeConfig
    from serve.layout import resolve_layout
    from serve.supervision import ServerState

    return ServerState(config=ServeConfig(model=str(root)), layout=resolve_layout(root),
                       engines={"generator": _Loaded(owned)})


def test_a_checkpoint_replaced_while_the_engines_load_is_not_served(tmp_path):
    """The fingerprint is taken when judge-serve is built, minutes before its engines have read the weights: a
    folder replaced meanwhile would be served under the old fingerprint, so turning ready is refused instead."""
    import torch

    from serve.supervision import CHANGED_WHILE_LOADING, checkpoint_changed_while_loading

    root = _seq2seq(tmp_path / "judge")
    state = _state(root)
    assert checkpoint_changed_while_loading(state) is None  # unchanged: judge-serve turns ready
    save_file({"w": torch.ones(3)}, str(root / "model.safetensors"))  # retrained into the same folder meanwhile
    assert checkpoint_changed_while_loading(state) == CHANGED_WHILE_LOADING
    assert CHANGED_WHILE_LOADING == "checkpoint changed while the engines loaded: restart judge-serve"


def test_attached_engines_load_nothing_of_the_checkpoint(tmp_path):
    """With only attached engines judge-serve advertises no fingerprint: a changed folder is no reason to fail."""
    import torch

    from serve.supervision import checkpoint_changed_while_loading

    root = _seq2seq(tmp_path / "judge")
    state = _state(root, owned=False)
    save_file({"w": torch.ones(3)}, str(root / "model.safetensors"))
    assert checkpoint_changed_while_loading(state) is None


def test_bring_up_fails_the_start_in_one_line_when_the_checkpoint_changed(tmp_path, monkeypatch):
    """The start fails the way any other start-up failure does: ``failed``, the reason as ``/health``'s, on_fatal."""
    import asyncio

    import torch

    import serve.supervision as supervision

    root = _seq2seq(tmp_path / "judge")
    state = _state(root)
    fatal = []
    state.on_fatal = lambda: fatal.append(True)

    class _Ready(_Loaded):
        def wait_ready(self, timeout_s, stop) -> None:  # the engine loads: the folder is replaced meanwhile
            save_file({"w": torch.ones(3)}, str(root / "model.safetensors"))

    state.engines = {"generator": _Ready(True)}
    monkeypatch.setattr(supervision, "load_tokenizer", lambda root: object())
    asyncio.run(supervision._bring_up(state))
    assert (state.status, state.failure) == ("failed", supervision.CHANGED_WHILE_LOADING)
    assert fatal == [True]
    assert state.judge is None


def test_a_second_build_uses_the_views_another_placed_meanwhile(tmp_path, monkeypatch):
    """Two judge-serves build the same views at once. The first places its views and its engines open them; the
    second, finishing later, finds views of the same key in place and uses them: deleting them would pull the
    files from under the first's engines."""
    import serve.released as released

    root = released_r(tmp_path / "r")
    write_view = released._write_view
    first = {}

    def second_meanwhile(root_, scratch, kind, *args):
        # The second's classifier view is being written when the first judge-serve finishes and places its own.
        if kind == "classifier" and not first:
            first["started"] = True  # once: the first's own build passes here too
            first["views"] = released.prepare_released_regression(root)
            first["inode"] = os.stat(first["views"].causal / "config.json").st_ino
        return write_view(root_, scratch, kind, *args)

    monkeypatch.setattr(released, "_write_view", second_meanwhile)
    second = released.prepare_released_regression(root)
    assert first["views"].built
    assert not second.built  # it used the first's views
    assert os.stat(second.causal / "config.json").st_ino == first["inode"]  # the very files the first placed
    leftovers = [p.name for p in root.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # its own scratch build is gone
    assert not released.prepare_released_regression(root).built


def test_stale_views_are_still_replaced(tmp_path):
    """Views of another key (the checkpoint changed) are replaced by fresh ones, leaving nothing aside."""
    import serve.released as released

    root = released_r(tmp_path / "r")
    views = released.prepare_released_regression(root)
    stamp = views.base / released.STAMP
    stamp.write_text(json.dumps(json.loads(stamp.read_text()) | {"key": "older"}))
    assert released.prepare_released_regression(root).built
    assert json.loads(stamp.read_text())["key"] != "older"
    assert [p.name for p in root.iterdir() if p.name.startswith(".")] == []

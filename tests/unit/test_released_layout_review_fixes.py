"""Released ``-r`` checkpoints and the weights fingerprint, on fake checkpoints of a few tensors (no tokenizer, no
engine): the views follow a rewritten head shard, the fingerprint follows the checkpoint and not judge-serve's own
views, a dead engine is not restarted over changed weights, and a malformed checkpoint or a bad verdict format is
refused in one line."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

H = 8  # hidden size: the head is Linear(H, 1)


def _tensors(seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    body = {"model.embed_tokens.weight": torch.randn(16, H, generator=g), "model.norm.weight": torch.ones(H)}
    head = {"lm_head.weight": torch.randn(16, H, generator=g), "regression_head.weight": torch.randn(1, H, generator=g),
            "regression_head.bias": torch.tensor([0.75])}
    return body, head


def released_r(folder: Path, seed: int = 0) -> Path:
    """A released -r folder as published: Qwen2WithRegressionHead, two shards, the head in the second."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2WithRegressionHead"], "model_type": "qwen2",
                                                    "hidden_size": H}))
    (folder / "tokenizer_config.json").write_text("{}")
    body, head = _tensors(seed)
    names = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    save_file(body, str(folder / names[0]), metadata={"format": "pt"})
    save_file(head, str(folder / names[1]), metadata={"format": "pt"})
    weight_map = {name: names[0] for name in body} | {name: names[1] for name in head}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


# ------------------------------------------------------------------------------------------------ derived views


def test_views_follow_a_head_shard_rewritten_at_the_same_size(tmp_path):
    """The head's shard is copied into the views: an LM head retrained in place (same size, same regression head)
    must get fresh views, not the old LM head served on."""
    from safetensors.torch import load_file, save_file

    from serve.released import prepare_released_regression

    root = released_r(tmp_path / "r")
    first = prepare_released_regression(root)
    shard = root / "model-00002-of-00002.safetensors"
    tensors = load_file(str(shard))
    tensors["lm_head.weight"] = tensors["lm_head.weight"] * 0 + 1.0
    size = shard.stat().st_size
    save_file(tensors, str(shard), metadata={"format": "pt"})
    stat = shard.stat()
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a later write, whatever the clock
    assert shard.stat().st_size == size

    again = prepare_released_regression(root)
    assert again.built and again.base == first.base
    served = load_file(str(again.causal / "model-00002-of-00002.safetensors"))["lm_head.weight"]
    assert bool((served == 1.0).all())
    assert not prepare_released_regression(root).built  # and unchanged, it is reused


def test_views_get_the_umasks_mode_not_mkdtemps(tmp_path):
    """Another user of a group-shared checkpoint (or cache) can read and remove the views as the umask allows."""
    from serve.released import prepare_released_regression

    root = released_r(tmp_path / "r")
    old = os.umask(0o002)
    try:
        views = prepare_released_regression(root)
    finally:
        os.umask(old)
    assert views.base.stat().st_mode & 0o777 == 0o775


def _index(root: Path, change) -> None:
    path = root / "model.safetensors.index.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("case, names", [
    ("the index puts the head in a shard that lacks it", "model-00001-of-00002.safetensors"),
    ("the index has no weight_map", "model.safetensors.index.json"),
    ("the head's shard is truncated", "model-00002-of-00002.safetensors"),
])
def test_a_malformed_released_checkpoint_is_one_line_naming_the_file(tmp_path, case, names):
    from serve.layout import LayoutError, resolve_layout

    root = released_r(tmp_path / "r")
    if case.startswith("the index puts"):
        _index(root, lambda d: d["weight_map"].update({"regression_head.bias": "model-00001-of-00002.safetensors"}))
    elif case.startswith("the index has"):
        _index(root, lambda d: d.pop("weight_map"))
    else:
        (root / "model-00002-of-00002.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(LayoutError) as caught:
        resolve_layout(root)
    message = str(caught.value)
    assert "\n" not in message and str(root / names) in message


# ------------------------------------------------------------------------------------------------ layout


def test_a_causal_config_over_a_regression_head_is_refused_naming_the_released_architecture(tmp_path):
    """A -r judge whose config.json says Qwen2ForCausalLM would be served as seq2seq, its head dropped."""
    from safetensors.torch import save_file

    from serve.layout import LayoutError, resolve_layout

    body, head = _tensors(0)
    for name, weights in (("with-head", {**body, **head}), ("plain", {**body, "lm_head.weight": head["lm_head.weight"]})):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}))
        save_file(weights, str(folder / "model.safetensors"))
    with pytest.raises(LayoutError, match="Qwen2WithRegressionHead") as caught:
        resolve_layout(tmp_path / "with-head")
    assert "regression_head.bias" in str(caught.value)
    assert resolve_layout(tmp_path / "plain").kind == "seq2seq"


def test_an_unknown_architecture_is_told_every_kind_judge_serve_serves(tmp_path):
    from serve.layout import LayoutError, resolve_layout

    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    with pytest.raises(LayoutError, match="Qwen2WithRegressionHead"):
        resolve_layout(tmp_path)


# ------------------------------------------------------------------------------------------------ fingerprint


def test_a_released_fingerprint_is_the_checkpoints_not_its_views(tmp_path):
    """The same -r checkpoint, its views kept in another cache or rebuilt, is the same judge to a resuming
    judge-eval; its own weights changing still changes it."""
    from serve.layout import resolve_layout, weights_fingerprint

    # A hub snapshot: its views go to the cache judge-serve is given, never beside it.
    root = released_r(tmp_path / "hub" / "models--ai-forever--pollux-judge-7b-r" / "snapshots" / "abc123")
    first = resolve_layout(root, derived_cache_dir=tmp_path / "cache-a")
    before = weights_fingerprint(first)
    elsewhere = resolve_layout(root, derived_cache_dir=tmp_path / "cache-b")
    assert elsewhere.views_dir != first.views_dir and weights_fingerprint(elsewhere) == before

    shutil.rmtree(first.views_dir)  # a cleaned cache, or views of an older recipe
    rebuilt = resolve_layout(root, derived_cache_dir=tmp_path / "cache-a")
    for path in (rebuilt.views_dir / "shared").iterdir():  # written later, whatever the clock's resolution
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert weights_fingerprint(rebuilt) == before

    shard = root / "model-00002-of-00002.safetensors"
    stat = shard.stat()
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    assert weights_fingerprint(resolve_layout(root, derived_cache_dir=tmp_path / "cache-a")) != before


def test_a_generator_given_for_a_released_judge_is_fingerprinted(tmp_path):
    from safetensors.torch import save_file

    from serve.layout import resolve_layout, weights_fingerprint

    root = released_r(tmp_path / "r")
    generator = tmp_path / "generator"
    generator.mkdir()
    (generator / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}))
    save_file(_tensors(1)[0], str(generator / "model.safetensors"))
    before = weights_fingerprint(resolve_layout(root, generator_model=generator))
    assert before != weights_fingerprint(resolve_layout(root))
    weights = generator / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert weights_fingerprint(resolve_layout(root, generator_model=generator)) != before


# ------------------------------------------------------------------------------------------------ healing


class _DeadEngine:
    owned, spec, log_path = True, "generator-spec", None

    def stop(self) -> None:
        return None


class _StartedEngine:
    owned, url, log_path = True, "http://127.0.0.1:9", None

    def wait_ready(self, timeout_s, stop) -> None:
        return None


@pytest.mark.parametrize("changed", [True, False])
def test_a_dead_engine_is_restarted_only_from_the_weights_it_was_started_from(tmp_path, monkeypatch, changed):
    """A checkpoint replaced in place while judge-serve runs, then an engine crash: restarting would serve the new
    weights under the old advertised fingerprint (and beside a pooler holding the old ones). judge-serve stops
    instead (failed, on_fatal: exit 1, so a supervisor restarts it over the new weights), and /health says why; left
    dead behind "ready", clients were told to retry for ever."""
    import serve.supervision
    from judge.checkpoints import JudgeKind
    from serve.config import ServeConfig
    from serve.layout import CheckpointLayout
    from serve.supervision import ServerState, heal_the_dead

    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"x" * 64)
    layout = CheckpointLayout(kind=JudgeKind.SEQ2SEQ, root=tmp_path, generator_dir=tmp_path)
    starts = []
    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: starts.append(a) or _StartedEngine())
    monkeypatch.setattr(serve.supervision, "_write_run_record", lambda state: None)
    state = ServerState(config=ServeConfig(model=str(tmp_path), engine_restart_backoff_s=0.0), layout=layout,
                        status="ready", engines={"generator": _DeadEngine()}, dead={"generator": asyncio.Event()},
                        dead_reason={"generator": "the generator engine exited with code 1"})
    if changed:
        weights.write_bytes(b"y" * 128)  # retrained into the same folder

    async def heal() -> None:
        assert heal_the_dead(state) == ["generator"]
        await asyncio.gather(*state.tasks)

    fatal = []
    state.on_fatal = lambda: fatal.append(1)
    asyncio.run(heal())
    if changed:
        assert starts == [] and not state.healing("generator") and fatal == [1]
        assert state.status == "failed" and "\n" not in state.failure
        assert "checkpoint changed under a running judge-serve: restart judge-serve" in state.failure
    else:
        assert state.status == "ready" and fatal == []
        assert len(starts) == 1 and "generator" not in state.dead_reason


# ------------------------------------------------------------------------------------------------ judge-serve


def test_a_verdict_format_the_judge_cannot_write_is_one_line_exit_2_with_the_port_released(tmp_path, monkeypatch,
                                                                                           capsys):
    """create_app decides the verdict format: an integer format asked of a regression judge is a bad configuration
    (exit 2, one line), not a traceback, and the port judge-serve took is let go."""
    import serve.cli

    class Socket:
        closed = False

        def close(self) -> None:
            self.closed = True

    socket = Socket()
    monkeypatch.setattr(serve.cli, "check_installed_vllm", lambda: None)
    monkeypatch.setattr(serve.cli, "bind_listening_socket", lambda host, port: socket)
    root = released_r(tmp_path / "r")
    code = serve.cli.main(["--model", str(root), "--verdict-format", "integer", "--log-dir", str(tmp_path / "logs")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and socket.closed
    assert err.startswith("judge-serve: verdict_format: integer") and "\n" not in err

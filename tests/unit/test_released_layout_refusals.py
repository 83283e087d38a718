"""The checkpoint layouts judge-serve refuses in one line naming the file: a malformed released ``-r`` checkpoint, a
causal config over a regression head, an architecture it does not serve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.released_r_checkpoint import released_r
from tests.support.released_r_checkpoint import tensors as _tensors


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


def test_views_that_cannot_be_built_where_they_go_say_where_and_how_to_move_them(tmp_path):
    """A cache judge-serve cannot write (read-only, or under a HOME that is not there) was refused as a bare
    "[Errno 20] Not a directory: '...'", which said neither that a released judge's views were being built there
    nor that --derived-cache-dir moves them."""
    from serve.layout import LayoutError, resolve_layout
    from tests.support.tiny_released import add_to_hub_cache

    snapshot = add_to_hub_cache(released_r(tmp_path / "r"), tmp_path / "hub", "ai-forever/pollux-judge-7b-r")
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(LayoutError) as caught:
        resolve_layout(snapshot, derived_cache_dir=tmp_path / "file" / "views")
    said = str(caught.value)
    assert "\n" not in said and "Not a directory" in said
    assert f"released -r judge {snapshot} in {tmp_path / 'file' / 'views'}: " in said and "--derived-cache-dir" in said


@pytest.mark.parametrize("gone", ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
def test_a_released_checkpoint_missing_a_shard_is_told_a_download_cut_short(tmp_path, gone):
    """A `-r` download cut short: its index names a shard the folder lacks (the body's or the head's). Said as any
    other layout's missing shard is (serve.layout.require_weights), before any view is built, not as a bare
    file-not-found."""
    from serve.layout import LayoutError, resolve_layout

    root = released_r(tmp_path / "r")
    (root / gone).unlink()
    with pytest.raises(LayoutError) as caught:
        resolve_layout(root)
    assert str(caught.value) == (f"model: {root}: its weights index names {gone}, not in the folder, so the "
                                 "generator and pooler engines could not load it; copy the missing shards (a download "
                                 "or copy cut short), or pass a complete folder")
    assert sorted(p.name for p in root.iterdir()) == sorted(["config.json", "tokenizer_config.json",
                                                             "model.safetensors.index.json",
                                                             *{"model-00001-of-00002.safetensors",
                                                               "model-00002-of-00002.safetensors"} - {gone}])


def test_a_released_checkpoint_missing_a_shard_names_the_pooler_alone_with_generator_model(tmp_path):
    """With generator_model the generator engine loads that folder, not the released one: the refusal blamed both
    engines for a folder only the pooler loads."""
    from serve.layout import LayoutError, resolve_layout

    root = released_r(tmp_path / "r")
    (root / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(LayoutError) as caught:
        resolve_layout(root, generator_model=tmp_path / "generator")
    assert str(caught.value) == (f"model: {root}: its weights index names model-00002-of-00002.safetensors, not in "
                                 "the folder, so the pooler engine could not load it; copy the missing shards (a "
                                 "download or copy cut short), or pass a complete folder")

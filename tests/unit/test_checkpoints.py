"""Where a judge checkpoint is (judge.checkpoints.resolve_checkpoint): a folder, or a hub id from the Hugging Face
cache before any download, and a path-like id never downloaded.

The released judges' layouts and kinds are tested in test_released_judges.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.checkpoints import CheckpointNotFound, resolve_checkpoint
from tests.support.tiny_released import add_to_hub_cache


def test_a_cached_hub_id_resolves_beside_a_local_folder_named_like_its_owner(tmp_path, monkeypatch):
    """A judge in the cache was refused as "a path, not a hub id" when the current folder held a folder named like
    its owner (ai-forever/pollux-judge-7b-r/, as `hf download --local-dir ai-forever/...` leaves one): the cache is
    asked first now, with no network (HF_HUB_OFFLINE=1)."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}), encoding="utf-8")
    snapshot = add_to_hub_cache(files, tmp_path / "cache", "ai-forever/pollux-judge-7b", revision="b" * 40)
    work = tmp_path / "work"
    (work / "ai-forever" / "pollux-judge-7b-r").mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_checkpoint("ai-forever/pollux-judge-7b") == snapshot
    assert resolve_checkpoint("ai-forever/pollux-judge-7b-r") == Path("ai-forever/pollux-judge-7b-r")


def test_an_uncached_id_whose_owner_is_a_local_folder_is_never_downloaded(tmp_path, monkeypatch):
    """`runs/my-judge` with runs/ here and nothing cached under that id is a missing folder: refused naming it,
    after a cache lookup only (local_files_only), never a download, though downloads are allowed."""
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    calls = []

    def snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs.get("local_files_only", False)))
        raise LocalEntryNotFoundError("not cached")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    with pytest.raises(CheckpointNotFound) as info:
        resolve_checkpoint("runs/my-judge", allow_download=True)
    assert str(info.value) == "runs/my-judge: no such folder (runs/ is a folder here, so this names a path, not a hub id)"
    assert calls == [("runs/my-judge", True)]


def test_a_missing_local_folder_the_hub_could_not_name_is_refused_as_a_folder(tmp_path, monkeypatch):
    """`runs/ckpt--1` matches owner/name but is no valid hub id ("--"): huggingface_hub's cache lookup raised its
    HFValidationError, so judge-serve printed a traceback; with runs/ here it is the missing folder it names."""
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointNotFound) as info:
        resolve_checkpoint("runs/ckpt--1")
    assert str(info.value) == "runs/ckpt--1: no such folder (runs/ is a folder here, so this names a path, not a hub id)"


def test_an_id_the_hub_could_not_name_without_an_owner_folder_is_refused_in_one_line(tmp_path, monkeypatch):
    """`nodir/ckpt.` (trailing "."), no nodir/ here: not a hub id by huggingface_hub's rule, refused as
    CheckpointNotFound with that rule's first line, never a download (downloads allowed, not offline)."""
    import huggingface_hub

    def no_download(repo_id, **kwargs):
        raise AssertionError(f"downloaded {repo_id}")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    real = huggingface_hub.snapshot_download

    def cache_only(repo_id, **kwargs):
        if not kwargs.get("local_files_only"):
            no_download(repo_id)
        return real(repo_id, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", cache_only)
    with pytest.raises(CheckpointNotFound) as info:
        resolve_checkpoint("nodir/ckpt.", allow_download=True)
    message = str(info.value)
    assert message.startswith("nodir/ckpt.: no such folder, and not a valid hub id (Repo id must use alphanumeric")
    assert "\n" not in message


@pytest.mark.parametrize("ref", ["runs/tiny-seq2seq", "tiny-seq2seq/export"])
def test_a_path_like_id_in_a_fresh_clone_says_it_may_be_a_folder_not_trained_yet(tmp_path, monkeypatch, ref):
    """In a fresh clone (no runs/ yet) `--model runs/tiny-seq2seq` is a valid hub id, looked up as one; the message
    suggested `hf download runs/tiny-seq2seq` only. It now says first that, as a path, the folder is not there yet."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointNotFound) as info:
        resolve_checkpoint(ref)
    said = str(info.value)
    assert said.startswith(f"{ref}: no such folder, and the hub id is not in the Hugging Face cache "
                           f"{tmp_path / 'cache'} (HF_HUB_OFFLINE is set). If {ref} is a local path, it does not exist "
                           "yet (train first: `judge-train --config CONFIG` writes runs/NAME/export, the folder to "
                           f"give); if it is a hub id: download it first where the hub is reachable (`hf download {ref}`")
    assert "\n" not in said


def test_a_hub_id_not_cached_is_not_told_to_train_first(tmp_path, monkeypatch):
    """A real hub id keeps the download advice alone: the owner `ai-forever` is no folder the toolkit writes."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointNotFound) as info:
        resolve_checkpoint("ai-forever/pollux-judge-7b")
    said = str(info.value)
    assert "(HF_HUB_OFFLINE is set). Download it first where the hub is reachable (`hf download ai-forever/" in said
    assert "local path" not in said and "train first" not in said


@pytest.mark.parametrize(("hub", "transformers", "said"), [
    (None, "1", "TRANSFORMERS_OFFLINE is set"),  # a shell's or an earlier tool's; the user may not know of it
    ("1", "1", "HF_HUB_OFFLINE is set"),
    ("0", "1", None),  # HF_HUB_OFFLINE set to anything decides: 0 keeps the hub on
])
def test_the_refusal_names_the_variable_that_turned_the_hub_off(tmp_path, monkeypatch, hub, transformers, said):
    """The refusal said "HF_HUB_OFFLINE is set" when only TRANSFORMERS_OFFLINE was, sending the user after a
    variable they had not set."""
    import huggingface_hub

    def no_download(repo_id, **kwargs):
        if not kwargs.get("local_files_only"):
            raise RuntimeError(f"download of {repo_id}")
        raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_download)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    if hub is not None:
        monkeypatch.setenv("HF_HUB_OFFLINE", hub)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", transformers)
    with pytest.raises((CheckpointNotFound, RuntimeError)) as info:
        resolve_checkpoint("ai-forever/pollux-judge-7b", allow_download=True)
    if said is None:
        assert str(info.value) == "download of ai-forever/pollux-judge-7b"
    else:
        assert f"({said}). Download it first" in str(info.value)


def _safetensors_file(path: Path, names: list[str]) -> None:
    """A safetensors file of one-element float32 tensors named ``names`` (header, then data), as safetensors writes."""
    import struct

    header = {name: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i, name in enumerate(names)}
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * (4 * len(names)))


def test_tensor_names_read_the_index_else_each_header_and_none_without_safetensors(tmp_path):
    """The one reader of a checkpoint's tensor names (judge-serve's hidden-head check, the regression recipe's
    score-head line): the index's weight_map when there is one; else each file's header, an unreadable file passed
    over; None where nothing can be read (bin weights, an index that is no object with a weight_map)."""
    from judge.checkpoints import tensor_names

    from safetensors import safe_open

    files = tmp_path / "files"
    files.mkdir()
    _safetensors_file(files / "model-a.safetensors", ["model.norm.weight", "score.weight"])
    _safetensors_file(files / "model-b.safetensors", ["lm_head.weight"])
    (files / "broken.safetensors").write_bytes(b"\x01")
    with safe_open(str(files / "model-a.safetensors"), framework="pt") as handle:  # the library reads it alike
        assert sorted(handle.keys()) == ["model.norm.weight", "score.weight"]
    assert sorted(tensor_names(files)) == ["lm_head.weight", "model.norm.weight", "score.weight"]

    indexed = tmp_path / "indexed"
    indexed.mkdir()
    (indexed / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"score.weight": "model-00001.safetensors", "lm_head.weight": "model-00002.safetensors"}}))
    assert sorted(tensor_names(indexed)) == ["lm_head.weight", "score.weight"]

    bin_only = tmp_path / "bin"
    bin_only.mkdir()
    (bin_only / "pytorch_model.bin").write_bytes(b"not read")
    broken_index = tmp_path / "broken-index"
    broken_index.mkdir()
    (broken_index / "model.safetensors.index.json").write_text("[1, 2]")
    only_broken = tmp_path / "only-broken"
    only_broken.mkdir()
    (only_broken / "model.safetensors").write_bytes(b"\x01")
    assert [tensor_names(f) for f in (bin_only, broken_index, only_broken)] == [None, None, None]

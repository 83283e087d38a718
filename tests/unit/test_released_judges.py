"""The released judges as published: hub ids resolved from the Hugging Face cache, the released
seq2seq layout served as it is, and a released ``-r`` judge (``Qwen2WithRegressionHead``, head with a bias) served
without its custom code, its score equal to the released head over POLLUX's scoring text.

Layouts are rebuilt in miniature by ``tests.support.tiny_released`` (the judges' files as published on the hub).

The tests of this subject that start heavy components are in tests/integration/serving/test_released_judges.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judge.checkpoints import CheckpointNotFound, is_hub_id, judge_kind, resolve_checkpoint
from tests.support.tiny_released import add_to_hub_cache, build_released_seq2seq
from serve.layout import LayoutError, resolve_layout
from serve.released import STAMP, VIEWS_DIRNAME, prepare_released_regression
from tests.support.fixtures_serve import RELEASED_R_ID
from tests.support.released_judges import indexed_tensors

REPO = Path(__file__).parents[2]


@pytest.fixture()
def writable_r(tmp_path, released_regression_dir) -> Path:
    """A private copy of the tiny -r judge (views get written beside it)."""
    return Path(shutil.copytree(released_regression_dir, tmp_path / "pollux-judge-7b-r"))


# ------------------------------------------------------------------------------------------------ hub ids


@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_hub_id_resolves_offline_from_a_populated_cache(tmp_path, released_regression_dir, variable):
    """With HF_HUB_OFFLINE=1, a hub id in the cache (HF_HUB_CACHE, or HF_HOME/hub) resolves to its snapshot."""
    cache = tmp_path / "hf-home" / "hub" if variable == "HF_HOME" else tmp_path / "hub-cache"
    snapshot = add_to_hub_cache(released_regression_dir, cache, RELEASED_R_ID, revision="a" * 40)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "HF_HOME")}
    env.update(HF_HUB_OFFLINE="1", **{variable: str(cache.parent if variable == "HF_HOME" else cache)})
    code = "from judge.checkpoints import resolve_checkpoint; print(resolve_checkpoint('ai-forever/pollux-judge-7b-r'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == snapshot
    assert (snapshot / "config.json").is_symlink() and judge_kind(snapshot) == "regression"


def test_missing_hub_id_offline_is_a_clear_error(tmp_path, monkeypatch):
    """A hub id not in the cache, offline: the error names the id, the cache, HF_HUB_OFFLINE and how to download."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointNotFound) as err:
        resolve_checkpoint("ai-forever/pollux-judge-7b")
    message = str(err.value)
    for part in ("ai-forever/pollux-judge-7b", str(tmp_path / "empty-cache"), "HF_HUB_OFFLINE", "hf download ai-forever/pollux-judge-7b"):
        assert part in message


@pytest.mark.parametrize(
    ("ref", "hub"),
    [("ai-forever/pollux-judge-7b", True), ("ai-forever/Pollux-4B-Judge", True), ("runs/a/b", False),
     ("no-slash", False), ("http://host/v1", False)],
)
def test_hub_id_spelling(ref, hub):
    """owner/name is a hub id; deeper paths, bare names and URLs are not."""
    assert is_hub_id(ref) is hub


def test_folder_passes_through_and_nonsense_is_refused(tmp_path):
    """An existing folder is returned as is; a missing path that is not owner/name is refused by name."""
    assert resolve_checkpoint(tmp_path) == tmp_path
    with pytest.raises(CheckpointNotFound, match="runs/x/y: no such folder"):
        resolve_checkpoint("runs/x/y")


def test_a_folder_without_config_json_is_said_to_need_one_once(tmp_path):
    """judge-serve --model on an empty folder: what a checkpoint is, said once (it was said twice, read_config's
    sentence and the layout's own after it); a config.json that does not read still gets the layout's."""
    with pytest.raises(LayoutError) as caught:
        resolve_layout(tmp_path)
    assert str(caught.value) == f"{tmp_path}: no config.json; a judge checkpoint is a folder written by save_pretrained"
    (tmp_path / "config.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(LayoutError, match=r"; --model must be a checkpoint folder \(or hub id\) written by "
                                          r"save_pretrained$"):
        resolve_layout(tmp_path)


# ------------------------------------------------------------------------------------------------ kinds


def test_judge_kinds(tiny_causal_dir, tiny_regression_dir, released_regression_dir, tmp_path, qwen_tokenizer):
    """Which kind each layout is: causal and released seq2seq -> seq2seq; our export and released -r -> regression."""
    released_seq2seq = build_released_seq2seq(tmp_path / "pollux-judge-7b", tokenizer=qwen_tokenizer)
    table = {tiny_causal_dir: "seq2seq", released_seq2seq: "seq2seq", tiny_regression_dir: "regression",
             released_regression_dir: "regression"}  # fmt: skip
    for folder, kind in table.items():
        assert judge_kind(folder) == kind, folder
        if folder != tiny_regression_dir:  # a bare classifier: no generating model for serve to pair it with
            assert resolve_layout(folder).kind == kind, folder  # serve asks judge_kind too (eval calls it directly)
    layout = resolve_layout(released_seq2seq)  # sharded + index, served as it is
    assert (layout.kind, layout.generator_dir, layout.released) == ("seq2seq", released_seq2seq, False)


def test_eval_resolves_a_hub_id_and_needs_judge_serve_for_a_released_r(tmp_path, monkeypatch, released_hub_cache):
    """judge-eval's local server resolves the hub id and, seeing a released -r, refuses plain vLLM (needs judge-serve)."""
    from eval.judging.local_server import local_server
    from eval.judging.config import RunConfig
    from judge.plumbing.config_files import ConfigError

    monkeypatch.setenv("HF_HUB_CACHE", str(released_hub_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = RunConfig(judge=RELEASED_R_ID, out=str(tmp_path), server="vllm")
    with pytest.raises(ConfigError, match="regression checkpoint; it needs judge-serve"):
        with local_server(Path(RELEASED_R_ID), config, tmp_path):
            pass


# ------------------------------------------------------------------------------------------------ derived views


def test_views_hold_the_released_weights_under_stock_architectures(writable_r, released_regression_dir):
    """causal/: no head, Qwen2ForCausalLM; classifier/: score.weight/bias == regression_head.weight/bias; no auto_map;
    only the head's shard is rewritten (once), the rest are links; the custom code is neither copied nor imported."""
    layout = resolve_layout(writable_r)
    base = writable_r / VIEWS_DIRNAME
    assert (layout.kind, layout.head_input, layout.released, layout.views_dir) == ("regression", "generated_text", True, base)
    assert (layout.generator_dir, layout.pooler_dir) == (base / "causal", base / "classifier")
    source = indexed_tensors(writable_r)
    causal, classifier = indexed_tensors(base / "causal"), indexed_tensors(base / "classifier")
    assert set(causal) == {n for n in source if not n.startswith("regression_head.")}
    assert set(classifier) == set(causal) | {"score.weight", "score.bias"}
    for name in causal:
        assert causal[name].equal(source[name]) and classifier[name].equal(source[name]), name
    assert classifier["score.weight"].equal(source["regression_head.weight"]) and tuple(classifier["score.weight"].shape) == (1, 64)
    assert classifier["score.bias"].equal(source["regression_head.bias"]) and classifier["score.bias"].item() == 0.75
    for view, arch in (("causal", "Qwen2ForCausalLM"), ("classifier", "Qwen2ForSequenceClassification")):
        config = json.loads((base / view / "config.json").read_text(encoding="utf-8"))
        assert config["architectures"] == [arch] and "auto_map" not in config
        assert not list((base / view).glob("*.py"))
        assert (base / view / "tokenizer.json").is_symlink()
        assert (base / view / "model-00001-of-00002.safetensors").resolve() == (writable_r / "model-00001-of-00002.safetensors").resolve()
        # The shard that held the head is rewritten once, in shared/, for both views.
        assert (base / view / "model-00002-of-00002.safetensors").resolve() == base / "shared" / "model-00002-of-00002.safetensors"
    classifier_config = json.loads((base / "classifier" / "config.json").read_text(encoding="utf-8"))
    assert (classifier_config["num_labels"], classifier_config["problem_type"]) == (1, "regression")
    assert not (released_regression_dir.parent / "imported").exists()


def test_views_are_built_once_and_reused(writable_r):
    """A second resolve reuses the views (same files, not rewritten); a changed head gets fresh views."""
    first = prepare_released_regression(writable_r)
    rewritten = first.base / "shared" / "model-00002-of-00002.safetensors"
    before = (rewritten.stat().st_ino, rewritten.stat().st_mtime_ns, (first.base / STAMP).read_text())
    second = prepare_released_regression(writable_r)
    assert (first.built, second.built) == (True, False) and second == first.__class__(first.base, first.causal, first.classifier, False)
    assert (rewritten.stat().st_ino, rewritten.stat().st_mtime_ns, (first.base / STAMP).read_text()) == before

    from safetensors.torch import load_file, save_file

    shard = writable_r / "model-00002-of-00002.safetensors"
    tensors = load_file(str(shard))
    tensors["regression_head.bias"] = tensors["regression_head.bias"] + 1
    save_file(tensors, str(shard), metadata={"format": "pt"})
    third = prepare_released_regression(writable_r)
    assert third.built and indexed_tensors(third.classifier)["score.bias"].item() == pytest.approx(1.75)


def test_hub_snapshot_views_go_to_the_cache(tmp_path, released_regression_dir):
    """A hub snapshot is never written to: its views go under the derived cache, in a folder keyed by its content."""
    snapshot = add_to_hub_cache(released_regression_dir, tmp_path / "hub", RELEASED_R_ID)
    files_before = sorted(p.name for p in snapshot.iterdir())
    layout = resolve_layout(snapshot, derived_cache_dir=tmp_path / "views")
    assert layout.views_dir.parent == tmp_path / "views" and len(layout.views_dir.name) == 20
    assert sorted(p.name for p in snapshot.iterdir()) == files_before


def test_released_r_without_the_bias_is_refused(writable_r):
    """A Qwen2WithRegressionHead folder whose weights lack regression_head.bias is refused, naming the tensor."""
    index_path = writable_r / "model.safetensors.index.json"
    index = json.loads(index_path.read_text(encoding="utf-8"))
    del index["weight_map"]["regression_head.bias"]
    index_path.write_text(json.dumps(index), encoding="utf-8")
    with pytest.raises(LayoutError, match="regression_head.bias"):
        resolve_layout(writable_r)


@pytest.mark.parametrize(
    ("architectures", "manifest", "kind"),
    [
        (["Qwen2ForCausalLM"], None, "seq2seq"),
        (["Qwen2ForSequenceClassification"], None, "regression"),
        (["Qwen2ForCausalLM"], {"mode": "seq2seq"}, "seq2seq"),
        (["Qwen2ForSequenceClassification"], {"mode": "regression"}, "regression"),
        (["Qwen2ForCausalLM"], {"mode": "regression"}, "says mode 'regression'"),  # contradicts config.json
        (["Qwen2ForSequenceClassification"], {"mode": "seq2seq"}, "says mode 'seq2seq'"),
        (["Qwen2ForCausalLM"], {"mode": "reward"}, "mode 'reward' is not one of"),
    ],
)
def test_judge_kind_reads_the_export_manifest_first(tmp_path, architectures, manifest, kind):
    """The export manifest's mode decides and config.json must agree; without a manifest config.json decides."""
    (tmp_path / "config.json").write_text(json.dumps({"architectures": architectures}), encoding="utf-8")
    if manifest is not None:
        (tmp_path / "pollux_judge.json").write_text(json.dumps(manifest), encoding="utf-8")
    if kind in ("seq2seq", "regression"):
        assert judge_kind(tmp_path) == kind
    else:
        with pytest.raises(ValueError, match=kind):
            judge_kind(tmp_path)

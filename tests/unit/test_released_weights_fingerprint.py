"""The weights fingerprint of a released ``-r`` judge: the checkpoint's, not its views', and a generator given for it
counts."""

from __future__ import annotations

import json
import os
import shutil

from tests.support.released_r_checkpoint import released_r
from tests.support.released_r_checkpoint import tensors as _tensors


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

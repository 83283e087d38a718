"""The views judge-serve derives from a released ``-r`` checkpoint (faked with a few tensors): rebuilt when the head's
shard is rewritten at the same size, and made with the umask's mode."""

from __future__ import annotations

import os

from tests.support.released_r_checkpoint import released_r


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

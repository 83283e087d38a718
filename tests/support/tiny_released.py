"""Tiny judges in the released POLLUX layouts, and a Hugging Face cache that holds them, built offline.

The released judges cannot be downloaded here; tests rebuild each layout in miniature with the same names, types
and file layout as the judges are published on the hub, on the tiny 2-layer Qwen2 of
``train.tiny_models`` and the real Qwen2.5 vocabulary:

* :func:`build_released_seq2seq`: a plain ``Qwen2ForCausalLM`` folder (``pollux-judge-7b/32b``): untied
  ``lm_head.weight``, sharded safetensors ``model-0000i-of-0000n.safetensors`` + ``model.safetensors.index.json``.
* :func:`build_released_regression`: a ``-r`` folder (``pollux-judge-7b-r/32b-r``): the same plus
  ``regression_head.weight`` [1, hidden] and ``regression_head.bias`` [1] (a ``torch.nn.Linear(hidden, 1)``),
  ``config.json`` with ``architectures: ["Qwen2WithRegressionHead"]`` and an ``auto_map`` to
  ``qwen2_regression.py``, which is shipped as a stand-in that records any import of it (it must never run).
* :func:`add_to_hub_cache`: lays a folder out as ``huggingface_hub``'s cache does
  (``models--owner--name/{blobs,snapshots/<revision>,refs/main}``), so ``HF_HUB_OFFLINE=1`` resolves the hub id.

Example::

    from tests.support.tiny_released import build_released_regression
    build_released_regression("runs/tiny-7b-r", head_bias=0.75)
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

__all__ = [
    "RELEASED_REGRESSION_AUTO_MAP",
    "CUSTOM_CODE_FILE",
    "build_released_seq2seq",
    "build_released_regression",
    "add_to_hub_cache",
]

#: The ``auto_map`` a released ``-r`` config carries: its custom class in the shipped ``qwen2_regression.py``.
RELEASED_REGRESSION_AUTO_MAP = {"AutoModel": "qwen2_regression.Qwen2WithRegressionHead"}
CUSTOM_CODE_FILE = "qwen2_regression.py"


def _shard(tensors: dict[str, Any], out: Path, n_shards: int) -> dict[str, str]:
    """Save tensors into ``n_shards`` files in name order, as ``save_pretrained`` names them; returns the weight map."""
    from safetensors.torch import save_file

    names = sorted(tensors)
    per = -(-len(names) // n_shards)
    weight_map: dict[str, str] = {}
    for i in range(n_shards):
        chunk = names[i * per:(i + 1) * per]
        file = f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors"
        save_file({n: tensors[n].contiguous() for n in chunk}, str(out / file), metadata={"format": "pt"})
        weight_map.update({n: file for n in chunk})
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return weight_map


def _causal_tensors(seed: int) -> tuple[Any, dict[str, Any]]:
    import torch
    from transformers import Qwen2ForCausalLM

    from train.tiny_models import tiny_qwen2_config

    config = tiny_qwen2_config("causal")
    config.tie_word_embeddings = False  # the 7B and 32B judges have their own lm_head.weight
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config).to(torch.float32)
    return config, {k: v.detach().clone() for k, v in model.state_dict().items()}


def _finish(out: Path, config_dict: dict[str, Any], config: Any, tokenizer: "PreTrainedTokenizerFast | None") -> None:
    from transformers import GenerationConfig

    from train.tiny_models import build_qwen_tokenizer
    from train.tokenizer_file import save_tokenizer

    (out / "config.json").write_text(json.dumps(config_dict, indent=2) + "\n", encoding="utf-8")
    GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
    ).save_pretrained(str(out))
    save_tokenizer(tokenizer if tokenizer is not None else build_qwen_tokenizer(), out)


def build_released_seq2seq(
    out_dir: str | Path, *, seed: int = 0, n_shards: int = 2, tokenizer: "PreTrainedTokenizerFast | None" = None
) -> Path:
    """Save a tiny seq2seq judge in the released layout (``Qwen2ForCausalLM``, sharded, with an index).

    Returns:
        ``out_dir`` as a ``Path``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config, tensors = _causal_tensors(seed)
    _shard(tensors, out, n_shards)
    config_dict = config.to_dict()
    config_dict["architectures"] = ["Qwen2ForCausalLM"]
    _finish(out, config_dict, config, tokenizer)
    return out


def build_released_regression(
    out_dir: str | Path,
    *,
    seed: int = 0,
    head_bias: float = 0.75,
    n_shards: int = 2,
    tokenizer: "PreTrainedTokenizerFast | None" = None,
    import_sentinel: str | Path | None = None,
) -> Path:
    """Save a tiny ``-r`` judge in the released layout.

    The decoder and LM head are a seeded tiny Qwen2; ``regression_head`` is a ``Linear(64, 1)`` with random,
    nonzero weights (std 0.5, same seed) and bias ``head_bias``. The head's tensors are saved in the last shard,
    beside other weights, as ``save_pretrained`` orders names (``lm_head`` < ``model`` < ``regression_head``).

    Args:
        out_dir: folder to write.
        seed: seed of every random weight.
        head_bias: ``regression_head.bias`` (nonzero, so a test can tell that the bias is applied).
        n_shards: number of safetensors files (2 or more puts the head beside decoder weights in a shared shard).
        tokenizer: a tokenizer from ``train.tiny_models.build_qwen_tokenizer`` (built when omitted).
        import_sentinel: a file the stand-in ``qwen2_regression.py`` creates if anything ever imports it.

    Returns:
        ``out_dir`` as a ``Path``.
    """
    import torch

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config, tensors = _causal_tensors(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed + 1)
        weight = torch.randn(1, config.hidden_size) * 0.5
    tensors["regression_head.weight"] = weight
    tensors["regression_head.bias"] = torch.tensor([float(head_bias)])
    _shard(tensors, out, n_shards)
    config_dict = config.to_dict()
    config_dict["architectures"] = ["Qwen2WithRegressionHead"]
    config_dict["auto_map"] = dict(RELEASED_REGRESSION_AUTO_MAP)
    _finish(out, config_dict, config, tokenizer)
    sentinel = repr(str(import_sentinel)) if import_sentinel else "None"
    (out / CUSTOM_CODE_FILE).write_text(
        '"""Stand-in for the released custom code: serving must never import it."""\n'
        "import pathlib\n\n"
        f"_SENTINEL = {sentinel}\n"
        "if _SENTINEL:\n"
        "    pathlib.Path(_SENTINEL).write_text('imported')\n"
        "raise ImportError('qwen2_regression.py (custom code of a released -r judge) was imported')\n",
        encoding="utf-8",
    )
    return out


def add_to_hub_cache(folder: str | Path, cache_dir: str | Path, repo_id: str, revision: str | None = None) -> Path:
    """Copy a checkpoint folder's files into a Hugging Face hub cache under ``repo_id``, as a download leaves them.

    Files go to ``blobs/<sha256>``, ``snapshots/<revision>/<name>`` links to them, ``refs/main`` holds the revision.

    Returns:
        The snapshot folder.
    """
    folder, cache = Path(folder), Path(cache_dir)
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    revision = revision or hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in sorted(p for p in folder.iterdir() if p.is_file()):  # the judges' repositories are flat
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        blob = repo / "blobs" / digest
        if not blob.exists():
            shutil.copyfile(path, blob)
        (snapshot / path.name).symlink_to(Path("..") / ".." / "blobs" / digest)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    return snapshot

"""judge-serve's tokenizer: the class transformers' ``AutoTokenizer`` would choose, without importing it where the
choice is known.

judge-serve renders and tokenizes every prompt itself (``serve.jobs``), so it loads the checkpoint's tokenizer at
start, beside its engines. ``from transformers import AutoTokenizer`` imports torch, the generation stack and, through
it, scikit-learn, spent while the engines load on the same cores: importing the class directly takes well under half
the CPU, with the same ids (measured: docs/performance.md, row "loading judge-serve's tokenizer",
``bench/serve_tokenizer_load.py``). For the checkpoints this toolkit serves, Qwen2.5
(T-lite, T-pro) and Qwen3 (Pollux-4B-Judge), the class AutoTokenizer picks is known from two fields, ``model_type`` in
``config.json`` and ``tokenizer_class`` in ``tokenizer_config.json``: :data:`KNOWN_CLASSES` holds what transformers 5
picks for each pair (it overrides the hub's class for ``qwen2``, not for ``qwen3``:
transformers/models/auto/tokenization_auto.py, ``MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS``), and
tests/integration/serving/test_serve_tokenizer.py checks every pair against AutoTokenizer on the installed transformers. Any other
checkpoint, one with remote code (``auto_map``), or a folder whose files cannot be read here, goes to AutoTokenizer
itself.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

__all__ = ["KNOWN_CLASSES", "load_tokenizer", "tokenizer_class_path"]

_QWEN2 = ("transformers.models.qwen2.tokenization_qwen2", "Qwen2Tokenizer")
_BACKEND = ("transformers.tokenization_utils_tokenizers", "TokenizersBackend")

#: (config.json ``model_type``, tokenizer_config.json ``tokenizer_class``) -> (module, class) that transformers 5's
#: AutoTokenizer instantiates for it.
KNOWN_CLASSES: dict[tuple[str, str], tuple[str, str]] = {
    ("qwen2", "Qwen2Tokenizer"): _QWEN2,
    ("qwen2", "Qwen2TokenizerFast"): _QWEN2,
    ("qwen2", "TokenizersBackend"): _QWEN2,
    ("qwen2", "PreTrainedTokenizerFast"): _QWEN2,
    ("qwen3", "Qwen2Tokenizer"): _QWEN2,
    ("qwen3", "Qwen2TokenizerFast"): _QWEN2,
    ("qwen3", "TokenizersBackend"): _BACKEND,
    ("qwen3", "PreTrainedTokenizerFast"): _BACKEND,
}


def tokenizer_class_path(folder: str | Path) -> tuple[str, str] | None:
    """The (module, class) of :data:`KNOWN_CLASSES` for a local checkpoint folder, or None where AutoTokenizer must
    choose (another model type or class, remote code, a file missing or unreadable, a hub id)."""
    root = Path(folder)
    try:
        config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        tokenizer_config = json.loads((root / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or not isinstance(tokenizer_config, dict) or "auto_map" in tokenizer_config:
        return None
    return KNOWN_CLASSES.get((config.get("model_type"), tokenizer_config.get("tokenizer_class")))


def load_tokenizer(folder: str | Path):
    """The checkpoint's tokenizer, as ``AutoTokenizer.from_pretrained(folder)`` returns it.

    Args:
        folder: A local checkpoint folder (a hub id, or a folder this module does not know, goes to AutoTokenizer).

    Returns:
        The tokenizer instance.
    """
    known = tokenizer_class_path(folder)
    if known is None:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(folder))
    module, name = known
    return getattr(importlib.import_module(module), name).from_pretrained(str(folder))

"""A tokenizer folder's ``tokenizer.json`` rewritten in the compact form: one line, each BPE merge one ``"a b"`` string.

transformers 5's ``save_pretrained`` writes ``tokenizer.json`` indented, with each merge as a two-string list (the form
the ``tokenizers`` library writes since it learned to keep merges whose parts hold a space), a file well over twice the
compact one's size. Loading is what that costs: ``Qwen2Tokenizer`` (what ``AutoTokenizer`` picks for a Qwen2.5 folder)
parses the whole file with Python's ``json`` module, once to rebuild its BPE from the Python lists
(transformers/tokenization_utils_tokenizers.py, ``convert_to_native_format``) and once more for its added tokens
(transformers/tokenization_utils_base.py, ``_from_pretrained``), and each merge is a list of two strings where the
compact form has one string. So every load — judge-serve's at its start, each of a vLLM engine's three, judge-train's —
spends less CPU on the compact form (measured: docs/performance.md, row "loading a Qwen2.5 tokenizer folder"). Both
forms are read by transformers and by ``tokenizers.Tokenizer.from_file`` and give the same ids
(tests/unit/test_tokenizer_file.py).

The string form cannot hold a merge whose part contains a space; a file with such a merge, or one whose model is not
a BPE, is left as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

from judge.plumbing.atomic_write import write_atomically

__all__ = ["compact_tokenizer_json", "save_tokenizer"]


def compact_tokenizer_json(folder: str | Path) -> bool:
    """Rewrite ``folder/tokenizer.json`` compactly, its merges as ``"a b"`` strings, in place (atomically).

    Args:
        folder: A tokenizer folder, as ``save_pretrained`` wrote it.

    Returns:
        Whether the file was rewritten: False where the folder has no ``tokenizer.json``, its model is not a BPE, or
        a merge part holds a space (the string form would split it in the wrong place).
    """
    path = Path(folder) / "tokenizer.json"
    if not path.is_file():
        return False
    data = json.loads(path.read_text(encoding="utf-8"))
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE" or not isinstance(model.get("merges"), list):
        return False
    merges = []
    for merge in model["merges"]:
        if isinstance(merge, str):
            merges.append(merge)
        elif isinstance(merge, list) and len(merge) == 2 and all(isinstance(p, str) and " " not in p for p in merge):
            merges.append(f"{merge[0]} {merge[1]}")
        else:
            return False
    model["merges"] = merges
    write_atomically(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return True


def save_tokenizer(tokenizer, folder: str | Path) -> None:
    """``tokenizer.save_pretrained(folder)``, then its ``tokenizer.json`` compacted (:func:`compact_tokenizer_json`):
    how the tiny models and judge-train's exports write their tokenizer."""
    tokenizer.save_pretrained(folder)
    compact_tokenizer_json(folder)

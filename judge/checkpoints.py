"""What a judge checkpoint folder says about itself: the export manifest written by training, read by serving.

``judge-train`` writes ``pollux_judge.json`` into every export; ``judge-serve`` reads it to know which judge the
folder holds and where a regression judge's generating model lives. Both sides use these names, so they live
here, in the contract, rather than in either stage.

Manifest keys: ``mode`` (``"seq2seq"`` or ``"regression"``), ``prompt_version`` (``judge.PROMPT_VERSION`` at
training time), ``generator`` (the folder, relative to the export, of the causal LM that writes the rationale:
``"."`` for seq2seq, ``GENERATOR_SUBDIR`` for regression) and ``score_head`` (the head's module name or null).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.prompts import PROMPT_VERSION

__all__ = ["EXPORT_MANIFEST", "GENERATOR_SUBDIR", "write_manifest", "read_manifest"]

EXPORT_MANIFEST = "pollux_judge.json"
#: A regression export's generating model: the same backbone with the LM head, as a causal-LM checkpoint.
GENERATOR_SUBDIR = "generator"


def write_manifest(folder: str | Path, mode: str, **fields: Any) -> Path:
    """Write ``pollux_judge.json`` into an export folder (the current prompt version included).

    Returns:
        The manifest's path.
    """
    path = Path(folder) / EXPORT_MANIFEST
    manifest = {"mode": mode, "prompt_version": PROMPT_VERSION, **fields}
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a checkpoint folder, or ``{}`` when it has none (a plain Hugging Face checkpoint).

    Raises:
        ValueError: a manifest that is not a JSON object, naming the file.
    """
    path = Path(folder) / EXPORT_MANIFEST
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return manifest

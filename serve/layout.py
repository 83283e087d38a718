"""Which engines a judge checkpoint needs, read from its folder.

A **seq2seq** judge (``*ForCausalLM``) is one generating engine: it writes ``[FEEDBACK] ... [RESULT] n [END]``.

A **regression** judge (``*ForSequenceClassification``, ``num_labels=1``, ``problem_type="regression"``) needs
two: vLLM runs one runner per engine, so a generating engine writes the rationale with the LM head and a pooling
engine (``--runner pooling``, ``/classify``) reads the ``score`` head over prompt + rationale. vLLM cannot load the
classification folder as a causal LM (``There is no module or parameter named 'score'``), so ``judge-train``'s
export (``train/export.py``) stores the same backbone twice: ``export/`` (classifier, for the pooling engine) and
``export/generator/`` (backbone + LM head), and names them in ``pollux_judge.json``
(``{"mode": "regression", "prompt_version": ..., "generator": "generator", "score_head": "score"}``). In order,
the generating model is taken from:

1. ``generator_model`` from the config, when given;
2. ``pollux_judge.json``'s ``generator`` (a folder relative to the export);
3. a ``generator/`` subfolder holding a ``*ForCausalLM`` config.

The manifest's name and keys are a contract between ``train`` and ``serve``, which may not import each other;
they are repeated here (candidates for ``judge/``).

The tokenizer and chat template always come from the checkpoint folder itself, so prompts are rendered exactly
as training rendered them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from judge.checkpoints import EXPORT_MANIFEST, GENERATOR_SUBDIR, read_manifest

__all__ = ["CheckpointLayout", "LayoutError", "resolve_layout", "GENERATOR_SUBFOLDERS", "EXPORT_MANIFEST"]

JudgeKind = Literal["seq2seq", "regression"]

#: Subfolders of a regression export searched for the generating model.
GENERATOR_SUBFOLDERS = (GENERATOR_SUBDIR,)


class LayoutError(ValueError):
    """A checkpoint folder judge-serve cannot serve; the message says what is missing."""


@dataclass(frozen=True)
class CheckpointLayout:
    """The engines a checkpoint needs.

    Attributes:
        kind: ``"seq2seq"`` or ``"regression"``.
        root: the checkpoint folder (tokenizer and chat template are read from here).
        generator_dir: the folder the generating engine loads.
        pooler_dir: the folder the pooling engine loads (regression only, else None).
        prompt_version: the prompt template version the export says it was trained with ("" when unknown).
    """

    kind: JudgeKind
    root: Path
    generator_dir: Path
    pooler_dir: Path | None = None
    prompt_version: str = ""


def _architectures(folder: Path) -> list[str]:
    config = folder / "config.json"
    if not config.is_file():
        raise LayoutError(f"{folder}: no config.json; --model must be a checkpoint folder written by save_pretrained")
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise LayoutError(f"{config}: not valid JSON ({err})") from err
    return list(data.get("architectures") or [])


def _is_causal(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(a.endswith("ForCausalLM") for a in _architectures(folder))


def resolve_layout(model: str | Path, generator_model: str | Path | None = None) -> CheckpointLayout:
    """Read a checkpoint folder and decide which engines serve it.

    Args:
        model: the checkpoint folder.
        generator_model: regression checkpoints: the generating model's folder, overriding what the export says.

    Returns:
        The ``CheckpointLayout``.

    Raises:
        LayoutError: the folder is not a checkpoint, its architecture is neither a causal LM nor a sequence
            classifier, or a regression export has no generating model.
    """
    root = Path(model)
    if not root.is_dir():
        raise LayoutError(f"model: {root} is not a folder")
    archs = _architectures(root)
    manifest_path = root / EXPORT_MANIFEST
    try:
        manifest = read_manifest(root)
    except ValueError as err:
        raise LayoutError(str(err)) from err
    prompt_version = str(manifest.get("prompt_version") or "")
    if any(a.endswith("ForCausalLM") for a in archs):
        if manifest.get("mode", "seq2seq") != "seq2seq":
            raise LayoutError(f"{manifest_path} says mode {manifest.get('mode')!r} but {root} holds a causal LM")
        return CheckpointLayout(kind="seq2seq", root=root, generator_dir=root, prompt_version=prompt_version)
    if not any(a.endswith("ForSequenceClassification") for a in archs):
        raise LayoutError(
            f"{root}: architectures {archs} are neither a causal LM (seq2seq judge) nor a sequence classifier "
            "(regression judge)"
        )

    candidates: list[tuple[str, Path]] = []
    if generator_model:
        candidates.append(("generator_model", Path(generator_model)))
    if manifest.get("generator"):
        candidates.append((str(manifest_path), root / str(manifest["generator"])))
    candidates += [(f"{root}/{sub}", root / sub) for sub in GENERATOR_SUBFOLDERS]

    for source, folder in candidates:
        if _is_causal(folder):
            return CheckpointLayout(
                kind="regression", root=root, generator_dir=folder, pooler_dir=root, prompt_version=prompt_version
            )
        if source in ("generator_model", str(manifest_path)):
            raise LayoutError(f"{source}: {folder} is not a causal LM checkpoint folder")
    raise LayoutError(
        f"{root} is a regression judge but names no generating model: vLLM cannot generate from a sequence "
        f"classifier. Export it with judge-train (which writes {'/'.join(GENERATOR_SUBFOLDERS)}/ and "
        f"{EXPORT_MANIFEST}), or pass --generator-model"
    )

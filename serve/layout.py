"""Which engines a judge checkpoint needs, read from its folder.

A **seq2seq** judge (``*ForCausalLM``) is one generating engine: it writes ``[FEEDBACK] ... [RESULT] n [END]``.

A **regression** judge (``*ForSequenceClassification``, ``num_labels=1``, ``problem_type="regression"``; a classifier
of another label count is refused) needs two: vLLM runs one runner per engine, so a generating engine writes the rationale with the LM head and a pooling
engine (``--runner pooling``, ``/classify``) reads the ``score`` head over prompt + rationale. vLLM cannot load the
classification folder as a causal LM (``There is no module or parameter named 'score'``), so ``judge-train``'s
export (``train/export.py``) stores the same backbone twice: ``export/`` (classifier, for the pooling engine) and
``export/generator/`` (backbone + LM head), and names them in ``pollux_judge.json``
(``{"mode": "regression", "prompt_version": ..., "generator": "generator", "score_head": "score"}``). In order,
the generating model is taken from:

1. ``generator_model`` from the config, when given;
2. ``pollux_judge.json``'s ``generator`` (a folder relative to the export);
3. a ``generator/`` subfolder holding a ``*ForCausalLM`` config.

The manifest's name and keys are a contract between ``train`` and ``serve``, which may not import each other: they
live in ``judge.checkpoints``, whose ``judge_kind`` (manifest first) decides the kind for serve and eval alike.

A **released regression** judge (``ai-forever/pollux-judge-7b-r``: ``Qwen2WithRegressionHead``, custom code,
``regression_head`` with a bias) is served as published, its custom code never run: ``serve.released`` derives a
causal-LM view (generating engine) and a sequence-classifier view whose ``score`` is the released head, weight and
bias (pooling engine), once, and reuses them. Its head reads the chat template over (prompt, the generated text as
it came out), as POLLUX scores it (``head_input="generated_text"``); our own exports' head reads the rationale
re-rendered as training rendered it (``head_input="rationale_target"``).

``model`` may be a folder or a hub id (``judge.checkpoints.resolve_checkpoint``: the Hugging Face cache first, so
``HF_HUB_OFFLINE=1`` works with a populated cache). The tokenizer and chat template always come from the checkpoint
folder itself, so prompts are rendered exactly as training rendered them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from judge.checkpoints import (
    CHAT_TEMPLATE_PLACES,
    EXPORT_MANIFEST,
    GENERATOR_SUBDIR,
    REGRESSION_HEAD_PREFIX,
    RELEASED_REGRESSION_ARCHITECTURES,
    TOKENIZER_FILES,
    WEIGHT_FILES,
    CheckpointNotFound,
    JudgeKind,
    TrainedLengths,
    checkpoint_trained_lengths,
    classifier_num_labels,
    folders_fingerprint,
    holds_chat_template,
    holds_tokenizer,
    is_released_regression,
    judge_kind,
    read_config,
    read_manifest,
    resolve_checkpoint,
    weight_files,
    tensor_names,
)

__all__ = ["CheckpointLayout", "LayoutError", "resolve_layout", "require_weights", "GENERATOR_SUBFOLDERS",
           "EXPORT_MANIFEST", "WEIGHT_FILES", "weights_fingerprint", "weights_changed", "CHECKPOINT_CHANGED",
           "TOKENIZER_FILES", "require_tokenizer"]

#: What a regression head reads as the assistant turn: the generated text as it came out (released ``-r`` judges,
#: as POLLUX scores them) or the parsed rationale re-rendered as ``[FEEDBACK] ... [END]`` (our exports' training text).
HeadInput = Literal["generated_text", "rationale_target"]


#: Subfolders of a regression export searched for the generating model.
GENERATOR_SUBFOLDERS = (GENERATOR_SUBDIR,)


class LayoutError(ValueError):
    """A checkpoint folder judge-serve cannot serve; the message says what is missing."""


@dataclass(frozen=True)
class CheckpointLayout:
    """The engines a checkpoint needs.

    Attributes:
        kind: ``JudgeKind.SEQ2SEQ`` or ``JudgeKind.REGRESSION``.
        root: the checkpoint folder (tokenizer and chat template are read from here).
        generator_dir: the folder the generating engine loads.
        pooler_dir: the folder the pooling engine loads (regression only, else None).
        prompt_version: the prompt template version the export says it was trained with ("" when unknown).
        head_input: regression only: what the head reads as the assistant turn (see ``HeadInput``).
        released: True for a released ``-r`` checkpoint served through derived views.
        views_dir: released ``-r`` only: the folder holding the derived views (else None).
        trained_lengths: the token lengths a reasoning judge's completions were trained under (a GRPO or integer
            SFT export's manifest's ``trained_lengths``; ``judge.checkpoints``), None for any other checkpoint.
    """

    kind: JudgeKind
    root: Path
    generator_dir: Path
    pooler_dir: Path | None = None
    prompt_version: str = ""
    head_input: HeadInput = "rationale_target"
    released: bool = False
    views_dir: Path | None = None
    trained_lengths: TrainedLengths | None = None


def _config(folder: Path) -> dict:
    try:
        return read_config(folder)
    except ValueError as err:
        said = str(err)
        if "save_pretrained" not in said:  # read_config says what a checkpoint is where config.json is missing
            said += "; --model must be a checkpoint folder (or hub id) written by save_pretrained"
        raise LayoutError(said) from err


def _architectures(folder: Path) -> list[str]:
    return list(_config(folder).get("architectures") or [])


def _is_causal(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(a.endswith("ForCausalLM") for a in _architectures(folder))


def resolve_layout(
    model: str | Path, generator_model: str | Path | None = None, derived_cache_dir: str | Path | None = None
) -> CheckpointLayout:
    """Read a checkpoint folder and decide which engines serve it.

    Args:
        model: the checkpoint folder, or a hub id found in the Hugging Face cache.
        generator_model: regression checkpoints: the generating model's folder, overriding what the export says.
        derived_cache_dir: released ``-r`` checkpoints: where derived views go when the checkpoint's folder is not
            writable (``serve.released``).

    Returns:
        The ``CheckpointLayout``.

    Raises:
        LayoutError: the folder is not a checkpoint, its architecture is neither a causal LM nor a sequence
            classifier, a sequence classifier has other than one label (``num_labels``), or a regression export has
            no generating model.
    """
    try:
        root = resolve_checkpoint(model)
    except CheckpointNotFound as err:
        raise LayoutError(f"model: {err}") from err
    config = _config(root)
    archs = list(config.get("architectures") or [])
    if is_released_regression(config):
        return _released_regression(root, generator_model, derived_cache_dir)
    manifest_path = root / EXPORT_MANIFEST
    try:
        kind = judge_kind(root)  # the manifest first, checked against config.json
        manifest = read_manifest(root)
        trained_lengths = checkpoint_trained_lengths(root)
    except ValueError as err:
        raise LayoutError(str(err)) from err
    prompt_version = str(manifest.get("prompt_version") or "")
    if kind == JudgeKind.SEQ2SEQ and any(a.endswith("ForCausalLM") for a in archs):
        if not manifest_path.is_file():
            _refuse_hidden_regression_head(root, archs)
        return CheckpointLayout(kind=JudgeKind.SEQ2SEQ, root=root, generator_dir=root, prompt_version=prompt_version,
                                trained_lengths=trained_lengths)
    if not any(a.endswith("ForSequenceClassification") for a in archs):
        raise LayoutError(
            f"{root}: architectures {archs} are neither a causal LM (seq2seq judge), a sequence classifier "
            f"(regression judge) nor {' / '.join(RELEASED_REGRESSION_ARCHITECTURES)} (a released regression judge)"
        )
    labels = classifier_num_labels(config)
    if labels != 1:
        # vLLM sizes the pooling model's score by it: /classify's first value would be one label's of several, read
        # as the head's score.
        raise LayoutError(
            f"{root}/config.json: num_labels {labels}; a regression judge's score head has one output (num_labels 1, "
            "as judge-train's export writes it): this classifier's first label would be read as the score"
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
                kind=JudgeKind.REGRESSION, root=root, generator_dir=folder, pooler_dir=root, prompt_version=prompt_version
            )
        if source in ("generator_model", str(manifest_path)):
            raise LayoutError(f"{source}: {folder} is not a causal LM checkpoint folder")
    raise LayoutError(
        f"{root} is a regression judge but names no generating model: vLLM cannot generate from a sequence "
        f"classifier. Export it with judge-train (which writes {'/'.join(GENERATOR_SUBFOLDERS)}/ and "
        f"{EXPORT_MANIFEST}), or pass --generator-model"
    )


def _refuse_hidden_regression_head(root: Path, archs: list[str]) -> None:
    """A causal-LM config over weights that carry a regression head is a released ``-r`` judge whose
    ``config.json`` was edited (or mixed up): served as seq2seq, its head would be silently dropped by vLLM and
    its verdicts read from a text it was never trained to end with a score."""
    # an unreadable folder is the engine's to refuse: this is a check on what can be read
    heads = sorted(name for name in tensor_names(root) or [] if name.startswith(REGRESSION_HEAD_PREFIX))
    if heads:
        raise LayoutError(
            f"{root}: config.json says {archs}, but its weights carry {heads}: that is a released regression judge "
            f"({' / '.join(RELEASED_REGRESSION_ARCHITECTURES)}, as ai-forever/pollux-judge-7b-r is published), not "
            "a seq2seq one; restore its published config.json to serve it with its head"
        )


def require_weights(folder: Path, role: str) -> None:
    """Refuse a folder an engine is to load that holds no weights file (``WEIGHT_FILES``).

    vLLM would start on its ``config.json`` and die a minute later with a traceback; a folder (or a hub snapshot)
    with only its configuration and tokenizer is refused at once instead. An attached engine's folder is not
    checked: judge-serve then reads only its tokenizer.

    Raises:
        LayoutError: naming the folder and the engine (``role``) that would load it.
    """
    if not weight_files(folder):
        raise LayoutError(
            f"model: {folder} holds no weights ({', '.join(WEIGHT_FILES)}), so the {role} engine would have nothing "
            "to load; pass a checkpoint folder written by save_pretrained (or a hub id whose download finished), or "
            "attach a running engine with --generator-url / --pooling-url"
        )
    # the engine refuses it too, half a minute later and only in its own log ("Weight files referenced in index but
    # missing"), under judge-serve's "exited with code 1 while starting"
    _refuse_missing_shards(folder, f"{role} engine")


def _refuse_missing_shards(folder: Path, engines: str) -> None:
    """Refuse a folder whose weights index names shards it lacks (``_shards_not_there``), as a download or copy cut
    short, naming them and the ``engines`` that would load it.

    Raises:
        LayoutError: naming the first three missing shards and how many more.
    """
    missing = _shards_not_there(folder)
    if missing:
        raise LayoutError(
            f"model: {folder}: its weights index names {', '.join(missing[:3])}"
            f"{f' and {len(missing) - 3} more' if len(missing) > 3 else ''}, not in the folder, so the {engines} "
            "could not load it; copy the missing shards (a download or copy cut short), or pass a complete folder"
        )


def _shards_not_there(folder: Path) -> list[str]:
    """The files a sharded checkpoint's index (``*.index.json``, its ``weight_map``) names that the folder lacks,
    sorted; [] when there is no index or it cannot be read (the engine's to refuse: an unreadable index is no
    evidence of a missing file). Only the indexes of the format the engine loads: with any safetensors file present,
    the safetensors index alone (a repository that ships both formats, downloaded without its ``.bin`` files, keeps
    a ``pytorch_model.bin.index.json`` naming them). A hub snapshot's files are links to its blobs: a link whose blob
    is gone is missing."""
    import json

    named: set[str] = set()
    indexes = sorted(Path(folder).glob("*.index.json"))
    if any(Path(folder).glob("*.safetensors")):
        indexes = [index for index in indexes if index.name.endswith(".safetensors.index.json")]
    for index in indexes:
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(weight_map, dict):
            named |= {str(name) for name in weight_map.values() if isinstance(name, str)}
    return sorted(name for name in named if not (Path(folder) / name).is_file())


def require_tokenizer(folder: Path, role: str | None = None) -> None:
    """Refuse a local checkpoint folder whose tokenizer judge-serve cannot use.

    * None of ``TOKENIZER_FILES``: transformers builds a tokenizer from such a folder anyway, with a vocabulary of one
      token. judge-serve renders and tokenizes every prompt with the checkpoint's (``role`` None), so that every
      prompt reached the engine empty (400, "You must pass at least one prompt"); a generating engine (``role``
      ``"generator"``: a regression judge's ``generator/`` or ``--generator-model``) turns what it writes into text
      with its own folder's, so that every completion came back as that one token.
    * The checkpoint's own (``role`` None) with no chat template (``judge.checkpoints.holds_chat_template`` looks where
      transformers reads one): judge-serve renders every prompt through it (``judge.apply_chat``), so each judgment
      failed inside transformers, a server error on every request after judge-serve turned ready. judge-train
      refuses such a base folder the same way (``judge.checkpoints.model_folder_gaps``). A generating engine only
      turns tokens into text: its folder needs no template.

    Raises:
        LayoutError: naming the folder, the engine that reads it (``role``) and the files looked for.
    """
    if not Path(folder).is_dir():
        return
    if not holds_tokenizer(folder):
        why = ("judge-serve tokenizes every prompt with it" if role is None else
               f"the {role} engine turns the tokens it writes into text with it")
        said = f"{folder} holds no tokenizer ({', '.join(TOKENIZER_FILES)}): {why}; save the base model's tokenizer"
    elif role is None and not holds_chat_template(folder):
        said = (f"the tokenizer in {folder} has no chat template ({CHAT_TEMPLATE_PLACES}): judge-serve renders "
                "every prompt through it; save the base model's tokenizer with its chat template")
    else:
        return
    raise LayoutError(f"model: {said} into the folder (tokenizer.save_pretrained), as judge-train's exports have it")


def weights_fingerprint(layout: CheckpointLayout) -> str | None:
    """What identifies the weights judge-serve's engines load from ``layout`` (its ``GET /v1/models`` entry's
    ``weights_fingerprint``): a SHA-256 over each weights file's (``WEIGHT_FILES``) name, size and modification time in
    nanoseconds, folder by folder (the root, the generating and the pooling engine's). A client that resumes a run
    compares it with the one its verdicts were asked of: a judge retrained into the same folder and served under
    the same name differs in nothing else it can see.

    A judge-train export's folder records its files' content digests (``judge.checkpoints.WEIGHTS_DIGESTS``): while
    each file's size and modification time are the recorded ones, its digest stands for them, so the same weights
    exported again keep the fingerprint (``judge.checkpoints.folders_fingerprint``).

    Nothing is read but each file's metadata and that record (a stat per file; the files are gigabytes). Not a hash
    of the safetensors headers: those hold the tensors' names, dtypes, shapes and offsets, equal for a retrained
    model of the same architecture. A copy or a ``touch`` changes it too: a resume is then refused, loudly, where a
    missed retraining would have mixed two judges' verdicts in one folder silently. None when no folder holds a
    weights file.

    A released ``-r`` layout is fingerprinted by its own folder (and a ``generator_model`` given in place of its
    causal view) only, never by the derived views (``serve.released``): those are judge-serve's own copies, rebuilt
    or kept in another cache with new modification times over the same weights, and a resume would be refused as if
    the judge had been retrained. The views are rebuilt whenever the folder changes, so the folder says it all.
    """
    engines = (layout.root, layout.generator_dir, layout.pooler_dir)
    if layout.released and layout.views_dir is not None:
        views = layout.views_dir
        engines = tuple(d for d in engines if d is not None and not Path(d).is_relative_to(views))
    return folders_fingerprint([d for d in engines if d is not None])


#: Why a dead engine is not restarted (``serve.supervision``): what it would load is not what the served fingerprint
#: says, and the other engine (a regression judge has two) still holds the old weights.
CHECKPOINT_CHANGED = "checkpoint changed under a running judge-serve: restart judge-serve"


def weights_changed(layout: CheckpointLayout | None, started_with: str | None) -> bool:
    """Whether the weights ``layout``'s engines would load now differ from those they were started from
    (``weights_fingerprint`` then: ``started_with``). A file that vanishes as it is looked at (a checkpoint being
    replaced) counts as changed. False without a layout (nothing to compare)."""
    if layout is None:
        return False
    try:
        return weights_fingerprint(layout) != started_with
    except OSError:
        return True


def _released_regression(
    root: Path, generator_model: str | Path | None, derived_cache_dir: str | Path | None
) -> CheckpointLayout:
    from serve.released import ReleasedLayoutError, prepare_released_regression

    # Both engines load the checkpoint's shards through the views (the pooler alone with generator_model, whose
    # folder the generator loads instead), whose build opens and stats each shard: a shard gone is refused here,
    # named as a download cut short, not left to the build's file-not-found, which names only the file.
    _refuse_missing_shards(root, "pooler engine" if generator_model else "generator and pooler engines")
    try:
        views = prepare_released_regression(root, derived_cache_dir or None)
    except (ReleasedLayoutError, ValueError, OSError) as err:
        raise LayoutError(f"model: {err}") from err
    generator = views.causal
    if generator_model:
        generator = Path(generator_model)
        if not _is_causal(generator):
            raise LayoutError(f"generator_model: {generator} is not a causal LM checkpoint folder")
    return CheckpointLayout(
        kind=JudgeKind.REGRESSION,
        root=root,
        generator_dir=generator,
        pooler_dir=views.classifier,
        head_input="generated_text",
        released=True,
        views_dir=views.base,
    )

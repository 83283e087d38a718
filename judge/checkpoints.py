"""What a judge checkpoint says about itself: where it is (a folder or a hub id), which kind of judge it holds,
and the export manifest written by training, read by serving.

**Where.** ``resolve_checkpoint`` takes a local folder or a Hugging Face hub id (``ai-forever/pollux-judge-7b``)
and returns a folder. A hub id is looked up in ``huggingface_hub``'s cache first (``snapshot_download(...,
local_files_only=True)``: no network), so ``HF_HUB_OFFLINE=1`` with a populated cache works; only when the cache
lacks it and the hub is allowed is it downloaded. ``judge-serve --model`` and ``judge-eval run --judge`` both call it.

**Which kind.** ``judge_kind``: ``seq2seq`` (a ``*ForCausalLM`` folder: the released ``pollux-judge-7b/32b``, our
seq2seq exports) or ``regression`` (our ``*ForSequenceClassification`` export, or a released ``-r`` checkpoint:
architecture ``Qwen2WithRegressionHead``, custom code named in ``auto_map``, weights ``model.*``, ``lm_head.weight``,
``regression_head.weight`` [1, hidden] and ``regression_head.bias`` [1], as ``ai-forever/pollux-judge-7b-r`` is
published). ``is_released_regression`` tells the released layout apart; its custom code is never run.

``judge-train`` writes ``pollux_judge.json`` into every export; ``judge-serve`` reads it to know which judge the
folder holds and where a regression judge's generating model lives. Both sides use these names, so they live
here, in the contract, rather than in either stage.

Manifest keys: ``mode`` (``"seq2seq"`` or ``"regression"``), ``prompt_version`` (``judge.PROMPT_VERSION`` at
training time), ``generator`` (the folder, relative to the export, of the causal LM that writes the rationale:
``"."`` for seq2seq, ``GENERATOR_SUBDIR`` for regression), ``score_head`` (the head's module name or null) and, in a
generating judge's export, ``verdict_format`` (``judge.VerdictFormat``; ``checkpoint_verdict_format`` reads it; every
export ``train/export.py`` writes has a manifest, so a folder without one is a released or foreign checkpoint).
A judge trained by reinforcement learning also records ``trained_lengths`` (``max_length`` and
``max_completion_length``, the token lengths its completions were sampled under; ``checkpoint_trained_lengths``
reads them): a reasoning judge served with less room than it learned to think in is cut before its verdict.

**Which weights.** ``export_weights_fingerprint`` is what judge-serve reports for an export served alone, and
``names_generator_model`` tells when its arguments make it report another one: judge-serve reports it, judge-eval run
records and checks it, judge-train card checks a run against its export. ``record_weights_digests`` writes, beside an
export's weights, their content digests, by which ``folders_fingerprint`` knows the same weights exported again;
``fingerprint_formula`` tells by which formula judge-serve has used a fingerprint a run recorded names the
weights in a folder now (judge-train card asks it), and ``export_fingerprints`` gives an export's fingerprint by
each (judge-eval compares a run's against them): both read the one list of formulas.

Why one module of ~850 lines: each part reads the same folder and its manifest, and each is read by serving,
evaluation and training alike; split, the manifest's keys would be spelled in several places.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.config_files import read_json_object
from judge.plumbing.provenance import PROVENANCE_FILE, read_provenance
from judge.prompts import POLLUX_4B_PROMPT, POLLUX_PROMPT, PROMPT_TEMPLATES, PROMPT_VERSION, PromptTemplate
from judge.verdicts import names_pollux_4b  # the one id rule lives with the formats; offered here too (eval imports it)

__all__ = [
    "CHAT_TEMPLATE_PLACES",
    "EXPORT_MANIFEST",
    "GENERATOR_SUBDIR",
    "RELEASED_REGRESSION_ARCHITECTURES",
    "REGRESSION_HEAD_PREFIX",
    "CheckpointNotFound",
    "NotDownloadedHere",
    "checkpoint_file_hint",
    "OfflineNotCached",
    "write_manifest",
    "read_manifest",
    "is_hub_id",
    "is_hub_model_id",
    "export_run_name",
    "resolve_checkpoint",
    "read_config",
    "judge_kind",
    "is_released_regression",
    "classifier_num_labels",
    "checkpoint_verdict_format",
    "verdict_format_and_why",
    "names_pollux_4b",
    "prompt_template_and_why",
    "NEUTRAL_SAMPLING",
    "TRAINED_LENGTHS",
    "TrainedLengths",
    "checkpoint_trained_lengths",
    "WEIGHT_FILES",
    "weight_files",
    "tensor_names",
    "TOKENIZER_FILES",
    "holds_tokenizer",
    "holds_chat_template",
    "model_folder_gaps",
    "folders_fingerprint",
    "WEIGHTS_DIGESTS",
    "record_weights_digests",
    "export_weights_fingerprint",
    "BY_DIGESTS",
    "BY_METADATA",
    "fingerprint_formula",
    "export_fingerprint_formula",
    "export_fingerprints",
    "names_generator_model",
    "generator_model_named",
    "export_training_record",
]

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
    # judge-serve reads the mode and prompt version from it: replaced whole, never left cut by a kill.
    return write_atomically(path, (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a checkpoint folder, or ``{}`` when it has none (a plain Hugging Face checkpoint).

    Raises:
        ValueError: a manifest that is not a JSON object, naming the file.
    """
    return read_json_object(Path(folder) / EXPORT_MANIFEST, missing_ok=True)


# ---------------------------------------------------------------------------------------------------------------
# where: a folder or a hub id
# ---------------------------------------------------------------------------------------------------------------

#: ``owner/name`` as the hub spells repository ids (letters, digits, ``-``, ``_``, ``.``; one slash).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: Folders the toolkit writes its runs under (judge-train's runs/NAME, judge-eval's runs/eval/...): an id owned by
#: one is most likely a path not written yet.
TOOLKIT_OUTPUT_FOLDERS = ("runs",)


class CheckpointNotFound(ValueError):
    """A ``--judge`` / ``--model`` that is neither a folder nor a hub id this machine can resolve."""


class OfflineNotCached(CheckpointNotFound):
    """A hub id the cache lacks while ``HF_HUB_OFFLINE`` is set: a job started from this environment inherits the
    variable, so it cannot fetch it either."""


class NotDownloadedHere(CheckpointNotFound):
    """A hub id the cache lacks, not downloaded only because the caller said not to (``allow_download=False``): a
    machine that may download (a Slurm job on its compute node) can still fetch it."""


def is_hub_id(ref: str | Path) -> bool:
    """Whether ``ref`` is spelled like a hub repository id (``owner/name``) and is not an existing path."""
    text = str(ref)
    return bool(_HUB_ID.match(text)) and not Path(text).exists()


def is_hub_model_id(text: str | Path) -> bool:
    """Whether ``text`` names a model on the hub: spelled ``owner/name`` and no path here (``is_hub_id``), and
    accepted by the hub's own stricter rule too (no ``--`` or ``..``, no trailing ``.`` or ``-``, at most 96
    characters), which ``huggingface_hub`` would refuse with a traceback."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not is_hub_id(text):
        return False
    try:
        validate_repo_id(str(text))
    except HFValidationError:
        return False
    return True


def export_run_name(model: str | Path) -> str:
    """The run a judge-train export belongs to (``runs/NAME/export``, beside its run's ``run.json``): ``NAME``, the
    name it is served under when none is given, so that predictions and reports name the judge rather than the
    ``export`` every export shares. "" for anything else (another folder, a hub id)."""
    path = Path(model)
    if path.name == "export" and path.parent.name and (path.parent / "run.json").is_file():
        return path.parent.resolve().name
    return ""


def _offline_variable() -> str | None:
    """The variable that turns the hub off, or None: ``HF_HUB_OFFLINE`` when it is set to anything (``0`` keeps the
    hub on), else ``TRANSFORMERS_OFFLINE``. Named in a refusal, since a shell or an earlier tool may have set the
    second without the user knowing."""
    # Read at call time (huggingface_hub's own constant is frozen when it is first imported).
    name = "HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
    return name if os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"} else None


def _offline() -> bool:
    return _offline_variable() is not None


def _what_is_downloaded(repo_type: str) -> str:
    """What a hub repository of ``repo_type`` holds, in a remedy's words: a judge's weights or a data set."""
    return "dataset" if repo_type == "dataset" else "checkpoint"


def checkpoint_file_hint(path: str | Path) -> str:
    """For a file given where a checkpoint folder is asked for: ``"; give the folder that holds it (FOLDER)"`` when it
    is a checkpoint's own file (its folder holds config.json: config.json itself, a weights shard, the tokenizer),
    else ``""``. Any other file's folder (a YAML config's, a data file's) is no checkpoint either: named, it would
    send the user on to a second refusal."""
    folder = Path(path).parent
    return f"; give the folder that holds it ({folder})" if (folder / "config.json").is_file() else ""


def resolve_checkpoint(ref: str | Path, *, allow_download: bool = True, repo_type: str = "model") -> Path:
    """The local folder of a judge checkpoint (or, with ``repo_type="dataset"``, a dataset) given as a folder or a
    hub id.

    A hub id is taken from ``huggingface_hub``'s cache (``HF_HUB_CACHE``, or ``$HF_HOME/hub``) without any network
    call; when the cache lacks it, it is downloaded unless ``HF_HUB_OFFLINE`` is set, ``allow_download`` is False,
    or its owner is a folder here (``runs/my-judge`` with ``runs/`` present names a missing folder, not a hub id).

    Args:
        ref: a folder, or ``owner/name`` (e.g. ``ai-forever/pollux-judge-7b-r``).
        allow_download: fetch a hub id the cache lacks (when the environment is not offline).
        repo_type: ``"model"`` (judges) or ``"dataset"`` (MERA's released data, ``eval.mera.released``).

    Returns:
        The folder (for a hub id: the cached snapshot, ``.../models--owner--name/snapshots/<revision>``).

    Raises:
        CheckpointNotFound: naming ``ref`` and what to do (download it first, or point the cache at it; for a
            checkpoint's file, the folder holding it: ``checkpoint_file_hint``).
    """
    path = Path(ref)
    if path.is_dir():
        return path
    text = str(ref)
    if path.is_file():  # was "no such folder", though it is there
        raise CheckpointNotFound(f"{text}: a file, not a {_what_is_downloaded(repo_type)} folder"
                                 f"{checkpoint_file_hint(path)}")
    if not _HUB_ID.match(text):
        raise CheckpointNotFound(f"{text}: no such folder, and not a hub id of the form owner/name")
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
    )

    # huggingface_hub reads HF_HUB_CACHE / HF_HOME when first imported; read them again so a caller's later
    # environment (a test, a Slurm script that exports them) is honoured.
    cache_dir = os.environ.get("HF_HUB_CACHE") or (
        str(Path(os.environ["HF_HOME"]) / "hub") if os.environ.get("HF_HOME") else constants.HF_HUB_CACHE
    )
    invalid = ""
    try:
        return Path(snapshot_download(text, cache_dir=cache_dir, local_files_only=True, repo_type=repo_type))
    except (LocalEntryNotFoundError, FileNotFoundError, OfflineModeIsEnabled):
        pass
    except HFValidationError as err:
        # The hub's rule is stricter than _HUB_ID ("--", "..", a trailing "." or "-", over 96 characters): such a
        # name can only be a folder, so it is refused as one, never with huggingface_hub's traceback.
        invalid = (str(err).strip().splitlines() or [""])[0]
    owner = text.split("/", 1)[0]
    if Path(owner).is_dir():
        # `runs/my-judge` with runs/ here is most likely a path to a folder that is not there: no download for it.
        # Only after the cache: a judge cached under ai-forever/... stays usable beside a hub-style local folder
        # ai-forever/pollux-judge-7b-r/ (`hf download --local-dir ai-forever/...`).
        raise CheckpointNotFound(f"{text}: no such folder ({owner}/ is a folder here, so this names a path, not a "
                                 "hub id)")
    if invalid:
        raise CheckpointNotFound(f"{text}: no such folder, and not a valid hub id ({invalid})")
    kind = "" if repo_type == "model" else f" --repo-type {repo_type}"
    # In a fresh clone `runs/tiny-seq2seq` (runs/ not written yet) is a valid hub id and is tried as one; the name of
    # the folder judge-train writes, or an `export` leaf, says it was most likely meant as a path: said first, though
    # it is still tried on the hub (a real hub id is never refused for its name).
    local = owner in TOOLKIT_OUTPUT_FOLDERS or text.rsplit("/", 1)[1] == "export"
    remedy = (
        (f"If {text} is a local path, it does not exist yet (train first: `judge-train --config CONFIG` writes "
         "runs/NAME/export, the folder to give); if it is a hub id: download it first" if local else
         "Download it first")
        + f" where the hub is reachable (`hf download {text}{kind}`; older huggingface_hub: "
        f"`huggingface-cli download {text}{kind}`) into this cache, or point HF_HUB_CACHE / HF_HOME at a cache that holds it "
        f"(HF_HUB_OFFLINE=1 then resolves it with no network), or pass the {_what_is_downloaded(repo_type)}'s folder "
        "instead."
    )
    if _offline() or not allow_download:
        why = f"{_offline_variable()} is set" if _offline() else "downloading is not allowed here"
        error = OfflineNotCached if _offline() else NotDownloadedHere
        raise error(
            f"{text}: no such folder, and the hub id is not in the Hugging Face cache {cache_dir} ({why}). {remedy}"
        )
    try:
        return Path(snapshot_download(text, cache_dir=cache_dir, repo_type=repo_type))
    except (HfHubHTTPError, OSError, ValueError) as err:
        # huggingface_hub's messages run over several lines (the cause, then advice): the first keeps ours one line
        cause = (str(err).strip().splitlines() or [""])[0]
        raise CheckpointNotFound(
            f"{text}: no such folder, not in the Hugging Face cache {cache_dir}, and downloading it failed "
            f"({type(err).__name__}: {cause}). {remedy}"
        ) from err


# ---------------------------------------------------------------------------------------------------------------
# which kind of judge
# ---------------------------------------------------------------------------------------------------------------

#: Architectures of the released regression judges (``pollux-judge-7b-r``, ``-32b-r``): custom code, never run here.
RELEASED_REGRESSION_ARCHITECTURES = ("Qwen2WithRegressionHead",)
#: The released ``-r`` head: ``torch.nn.Linear(hidden, 1)`` with its bias, over the last token's normed hidden state.
REGRESSION_HEAD_PREFIX = "regression_head."

class JudgeKind(str, Enum):
    """What kind of judge a checkpoint holds. A str-valued enum: it compares equal to, prints and serializes to JSON
    as its value, so manifests, ``/health`` and ``/v1/judge``'s ``judge_kind`` keep their strings."""

    #: a causal LM writing ``[FEEDBACK] ... [RESULT] n [END]`` (or, integer format, reasoning then an integer).
    SEQ2SEQ = "seq2seq"
    #: a causal LM writing the rationale and a ``score`` head scoring it.
    REGRESSION = "regression"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__  # f"{kind}" is the value on every Python (3.12 changed the mixin default)


def read_config(folder: str | Path) -> dict[str, Any]:
    """A checkpoint folder's ``config.json`` as a dict.

    Raises:
        ValueError: no ``config.json``, or not a JSON object (naming the file).
    """
    path = Path(folder) / "config.json"
    if not path.is_file():
        if (Path(folder) / "export" / "config.json").is_file():  # a judge-train run folder: its judge is in export/
            raise ValueError(f"{folder}: a judge-train run folder, not a checkpoint; its judge is "
                             f"{Path(folder) / 'export'} (pass that folder)")
        if any(Path(folder).glob("checkpoint-*/")):  # a judge-train run that stopped before its export
            raise ValueError(f"{folder}: a judge-train run folder that has not exported its model (only training "
                             f"checkpoints, checkpoint-*/, in it); its judge will be {Path(folder) / 'export'} once "
                             "the training ends: resume it with `judge-train run --resume` (same config and "
                             "--output-dir)")
        raise ValueError(f"{folder}: no config.json; a judge checkpoint is a folder written by save_pretrained")
    return read_json_object(path)


def is_released_regression(config: dict[str, Any]) -> bool:
    """Whether a ``config.json`` (as a dict) is a released ``-r`` judge's (``Qwen2WithRegressionHead``)."""
    return any(a in RELEASED_REGRESSION_ARCHITECTURES for a in config.get("architectures") or [])


def classifier_num_labels(config: dict[str, Any]) -> Any:
    """A sequence classifier's ``num_labels`` as transformers 5 reads its ``config.json`` (and vLLM sizes its
    ``score`` by it): the ``num_labels`` key, which wins over ``id2label`` when both are there (transformers warns
    that they disagree), else ``id2label``'s length, else 2 (the default, which a saved config leaves out)."""
    if "num_labels" in config:
        return config["num_labels"]
    id2label = config.get("id2label")
    return len(id2label) if isinstance(id2label, dict) else 2


def judge_kind(folder: str | Path) -> JudgeKind:
    """What kind of judge a checkpoint folder holds: ``regression`` (a score head: our sequence-classification
    export or a released ``-r``) or ``seq2seq``. judge-serve (``serve.layout``) and judge-eval both ask here.

    The export manifest (``pollux_judge.json``, written by ``judge-train``'s export) is read first: its ``mode``
    decides, and ``config.json`` must agree with it. A folder without a manifest (a released or plain Hugging Face
    checkpoint) is judged by ``config.json``: ``Qwen2WithRegressionHead``, ``*ForSequenceClassification`` or
    ``problem_type: regression`` is a regression judge; anything else seq2seq.

    Raises:
        ValueError: no readable ``config.json``; a manifest that is not a JSON object, names an unknown mode, or
            contradicts ``config.json``; a regression export's generating model (``generator/``) given alone, which
            writes no score.
    """
    config = read_config(folder)
    archs = config.get("architectures") or []
    regression = (is_released_regression(config) or any(a.endswith("ForSequenceClassification") for a in archs)
                  or config.get("problem_type") == "regression")
    by_config = JudgeKind.REGRESSION if regression else JudgeKind.SEQ2SEQ
    mode = read_manifest(folder).get("mode")
    if mode is None:
        _refuse_regression_generator(Path(folder))
        return by_config
    manifest = Path(folder) / EXPORT_MANIFEST
    if mode not in ("seq2seq", "regression"):
        raise ValueError(f"{manifest}: mode {mode!r} is not one of seq2seq, regression")
    if mode != by_config:
        raise ValueError(f"{manifest} says mode {mode!r} but {Path(folder) / 'config.json'} (architectures {archs}) "
                         f"holds a {by_config} model")
    return JudgeKind(mode)


def _refuse_regression_generator(folder: Path) -> None:
    """Refuse the generating model of a regression export (its manifest's ``generator``) given as the judge: it
    writes the rationale alone, with no ``[RESULT]``, so read as a seq2seq judge every verdict would fail.

    Raises:
        ValueError: naming the export to give instead.
    """
    given = Path(os.path.abspath(folder))
    for parent in dict.fromkeys((given.parent, folder.resolve().parent)):  # as given: a linked generator/ resolves away
        try:
            manifest = read_manifest(parent)
        except ValueError:  # the parent's manifest is the parent's to refuse, if it is ever given
            continue
        generator = manifest.get("generator")
        if manifest.get("mode") != "regression" or not generator:
            continue
        named = parent / str(generator)
        if os.path.abspath(named) == str(given) or named.resolve() == folder.resolve():
            raise ValueError(f"{folder}: a regression judge's generating model (named by {parent / EXPORT_MANIFEST}), "
                             f"which writes the rationale alone and no score: pass {parent}, the export, whose score "
                             "head scores that rationale")


def verdict_format_and_why(folder: str | Path, served_name: str | None = None) -> tuple[str, str]:
    """The verdict format (``judge.VerdictFormat``) of the judge a checkpoint folder holds, and why, in words for
    the start-up log.

    1. An export manifest decides: its ``verdict_format`` (judge-train records the format it taught, ``tagged`` or
       ``integer``: ``train/export.py``), else ``tagged`` (a manifest without the key predates integer-format
       training). Not the ids of step 2: a judge fine-tuned from ``Pollux-4B-Judge`` still names it in
       ``_name_or_path`` whichever format it was taught.
    2. Without one (a released or plain checkpoint), ``integer`` when a model id it carries names ``Pollux-4B-Judge``
       (``names_pollux_4b``): the served name, ``config.json``'s ``_name_or_path``, the folder's own name, a hub
       snapshot's repository folder (``models--ai-forever--Pollux-4B-Judge``).
    3. Else ``integer`` for a Qwen3 checkpoint (``model_type`` ``qwen3``): the one POLLUX judge on Qwen3 is
       Pollux-4B-Judge (the 7B/32B releases are Qwen2.5), and judge-train's own Qwen3 exports all carry a manifest
       (``train/export.py`` writes one into every export), so a renamed copy of the 4B (a folder ``sft-final/``) is
       not read as tagged, thinking off, with every judgment failing.
    4. Else ``tagged`` (the 7B/32B releases).

    Raises:
        ValueError: a manifest whose ``verdict_format`` is not a known format.
    """
    from judge.verdicts import VerdictFormat

    manifest = read_manifest(folder)
    if manifest:
        declared = manifest.get("verdict_format", VerdictFormat.TAGGED)
        if declared not in VerdictFormat.ALL:
            raise ValueError(f"{Path(folder) / EXPORT_MANIFEST}: verdict_format {declared!r} is not one of "
                             f"{', '.join(VerdictFormat.ALL)}")
        said = "says" if "verdict_format" in manifest else "names no verdict_format, which for judge-train's exports is"
        return declared, f"its export manifest {EXPORT_MANIFEST} {said} {declared}"
    try:
        config = read_config(folder)
    except ValueError:
        config = {}
    path = Path(folder).resolve()
    ids = [("served name", served_name), ("config.json _name_or_path", config.get("_name_or_path")),
           ("folder", path.name), *(("hub repository", p.name.rsplit("--", 1)[-1]) for p in path.parents
                                    if p.name.startswith("models--"))]
    for what, name in ids:
        if name and names_pollux_4b(str(name)):
            return VerdictFormat.INTEGER, f"no export manifest, and its {what} {str(name)!r} names Pollux-4B-Judge"
    if config.get("model_type") == "qwen3":
        return VerdictFormat.INTEGER, ("no export manifest and model_type qwen3: the released Qwen3 POLLUX judge is "
                                       "Pollux-4B-Judge (judge-train's exports carry a manifest)")
    return VerdictFormat.TAGGED, (f"no export manifest, no id naming Pollux-4B-Judge and model_type "
                                  f"{config.get('model_type')!r}: the 7B/32B judges' format")


def checkpoint_verdict_format(folder: str | Path, served_name: str | None = None) -> str:
    """The verdict format of the judge a checkpoint folder holds (``verdict_format_and_why`` without the why)."""
    return verdict_format_and_why(folder, served_name)[0]


def prompt_template_and_why(verdict_format: str, manifest: Mapping[str, Any] | None) -> tuple[PromptTemplate, str]:
    """The pointwise prompt template a judge is asked with, and why, in words for the log: the one place every stage
    that prompts a judge chooses it (judge-serve's ``/v1/judge`` and ``/get_reward``, judge-eval's chat requests).

    1. An export manifest (judge-train's): the template its ``prompt_version`` names, the one the judge learned. A
       version these stages do not render, or none: ``PROMPT_VERSION``'s, the why saying so (``verdicts may suffer``
       for the former: judge-serve logs it as a warning). ``pollux-ru-v1`` is one: ``POLLUX_PROMPT``'s template over
       fields stripped as ``judge.prompts.prompt_fields(..., clean=True)`` strips them, which the stages' prompt
       builders (judge-serve's ``serve.jobs``, ``serve.chat_tokens``) do not apply, so its judges are asked with
       the raw fields (the prompts differ where a field starts with a newline or ends with whitespace).
    2. No manifest and the integer format: the released ``Pollux-4B-Judge`` (``verdict_format_and_why``), asked with
       its own clients' prompt, ``POLLUX_4B_PROMPT`` (the Russian prompt and one newline).
    3. Else ``POLLUX_PROMPT`` (the 7B/32B releases, ai-forever/POLLUX ``prompts/test_pollux.txt``).

    Args:
        verdict_format: the judge's (``judge.VerdictFormat``), as decided (``verdict_format_and_why``, or a setting).
        manifest: the checkpoint's export manifest (``read_manifest``); ``{}`` or None when it has none, or when the
            client cannot read it (a judge reached by URL).
    """
    from judge.verdicts import VerdictFormat

    if manifest:
        named = manifest.get("prompt_version")
        if isinstance(named, str) and named in PROMPT_TEMPLATES:
            return PROMPT_TEMPLATES[named], f"its export manifest {EXPORT_MANIFEST} names {named}"
        if not named:
            return POLLUX_PROMPT, f"its export manifest {EXPORT_MANIFEST} names no prompt_version"
        return POLLUX_PROMPT, (f"its export manifest {EXPORT_MANIFEST} names prompt_version {named!r}, which "
                               f"judge-serve and judge-eval do not render: verdicts may suffer")
    if verdict_format == VerdictFormat.INTEGER:
        return POLLUX_4B_PROMPT, ("an integer-format judge without an export manifest is the released "
                                  "Pollux-4B-Judge: its own prompt, the Russian prompt and one newline")
    return POLLUX_PROMPT, f"a {verdict_format} judge without an export manifest: the 7B/32B judges' prompt"


#: Sampling fields a judge's request states, at the values that leave the judge's distribution as it is. vLLM fills
#: every such field a request omits from the checkpoint's ``generation_config.json`` ("user -> server default ->
#: OpenAI default": vllm/entrypoints/openai/completion/protocol.py ``to_sampling_params``,
#: vllm/config/model.py ``get_diff_sampling_param``), so a released judge published with a repetition penalty or
#: top-k would be decoded with it; POLLUX decodes its judges with ``SamplingParams(temperature=0, max_tokens=1024)``
#: and no other field (ai-forever/POLLUX ``src/vllm_offline_generation.py``). ``top_k`` -1 is "off" in every vLLM
#: release (0 is too, but older ones refuse it); temperature and max_tokens are each request's own.
NEUTRAL_SAMPLING: Mapping[str, float | int] = {"repetition_penalty": 1.0, "presence_penalty": 0.0,
                                               "frequency_penalty": 0.0, "top_p": 1.0, "top_k": -1, "min_p": 0.0}


#: The manifest key of the token lengths a judge's completions were trained under.
TRAINED_LENGTHS = "trained_lengths"


@dataclass(frozen=True)
class TrainedLengths:
    """The token lengths a judge was trained to generate within (a reasoning judge's export: GRPO's, or an
    integer-format SFT's; its ``trained_lengths``).

    Attributes:
        max_length: prompt plus completion, in tokens.
        max_completion_length: the completion alone: reasoning cut here had no verdict and earned no reward.
    """

    max_length: int
    max_completion_length: int

    def to_manifest(self) -> dict[str, int]:
        return {"max_length": self.max_length, "max_completion_length": self.max_completion_length}


def checkpoint_trained_lengths(folder: str | Path) -> TrainedLengths | None:
    """The ``trained_lengths`` a checkpoint's manifest records, None when it records none (a tagged SFT export, a
    released or plain checkpoint).

    Raises:
        ValueError: lengths that are not positive integers with the completion within the whole, naming the file.
    """
    lengths = read_manifest(folder).get(TRAINED_LENGTHS)
    if lengths is None:
        return None
    where = f"{Path(folder) / EXPORT_MANIFEST}: {TRAINED_LENGTHS}"
    if not isinstance(lengths, dict):
        raise ValueError(f"{where} must be an object with max_length and max_completion_length, got {lengths!r}")
    values = {}
    for key in ("max_length", "max_completion_length"):
        value = lengths.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{where}.{key} must be a positive integer, got {value!r}")
        values[key] = value
    if values["max_completion_length"] > values["max_length"]:
        raise ValueError(f"{where}: max_completion_length {values['max_completion_length']} is above max_length "
                         f"{values['max_length']}")
    return TrainedLengths(**values)


#: The files a folder's weights come in: save_pretrained's safetensors or PyTorch files, or a sharded index.
WEIGHT_FILES = ("*.safetensors", "*.bin", "*.pt", "*.index.json")


def weight_files(folder: str | Path) -> list[Path]:
    """The weights files (``WEIGHT_FILES``) directly in ``folder``, sorted."""
    return sorted({path for pattern in WEIGHT_FILES for path in Path(folder).glob(pattern) if path.is_file()})


def tensor_names(folder: str | Path) -> list[str] | None:
    """The tensor names a folder's safetensors weights hold: its index's ``weight_map``, else each ``*.safetensors``
    file's header (only the header is read; a file whose header cannot be read is passed over). None where there is
    nothing to read: no index and no readable safetensors file (``pytorch_model.bin`` weights), or an index that is
    no JSON object with a ``weight_map`` mapping."""
    import struct

    folder = Path(folder)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
        except (OSError, ValueError, AttributeError):
            return None
        return list(weight_map) if isinstance(weight_map, dict) else None
    names: list[str] | None = None
    for path in sorted(folder.glob("*.safetensors")):
        try:
            with open(path, "rb") as handle:
                (size,) = struct.unpack("<Q", handle.read(8))
                if size > 100_000_000:  # no real header is this large: not a safetensors file
                    continue
                header = json.loads(handle.read(size))
        except (OSError, ValueError, struct.error):
            continue
        if isinstance(header, dict):
            names = (names or []) + [name for name in header if name != "__metadata__"]
    return names


#: The files a tokenizer is built from (any one is enough to try): a fast tokenizer's ``tokenizer.json``, a BPE
#: vocabulary (``vocab.json``, with ``merges.txt``), a SentencePiece or WordPiece model. From a folder with none of
#: them transformers builds a tokenizer anyway, with a vocabulary of one token, and nothing fails until a prompt is
#: rendered or tokenized, so judge-serve and judge-train look for them first.
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model", "spiece.model", "spm.model",
                   "sentencepiece.bpe.model", "vocab.txt", "*.tiktoken")
#: Where a chat template is looked for (``holds_chat_template``), as judge-serve's and judge-train's refusals name it.
CHAT_TEMPLATE_PLACES = "chat_template.jinja, or chat_template in tokenizer_config.json"


def holds_tokenizer(folder: str | Path) -> bool:
    """Whether ``folder`` holds any of ``TOKENIZER_FILES`` (a ``*`` name by its pattern)."""
    folder = Path(folder)
    return any(path.is_file() for name in TOKENIZER_FILES
               for path in (folder.glob(name) if "*" in name else [folder / name]))


def holds_chat_template(folder: str | Path) -> bool:
    """Whether a tokenizer loaded from ``folder`` has a default chat template, where transformers reads one:
    ``chat_template.jinja`` (what save_pretrained writes), ``additional_chat_templates/default.jinja``, or the
    ``chat_template`` of ``tokenizer_config.json`` (older saves). An unreadable tokenizer_config.json counts as none,
    and so does a list of named templates there without a non-empty one named ``default``: transformers renders only
    that one and raises "multiple chat templates with no default specified" on every call without it."""
    folder = Path(folder)
    if (folder / "chat_template.jinja").is_file() or (folder / "additional_chat_templates" / "default.jinja").is_file():
        return True
    try:
        tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    template = tokenizer_config.get("chat_template") if isinstance(tokenizer_config, dict) else None
    if isinstance(template, list):
        return any(isinstance(t, dict) and t.get("name") == "default" and bool(t.get("template")) for t in template)
    return bool(template)


def model_folder_gaps(folder: str | Path, chat_template: bool = True) -> list[str]:
    """What a local model folder lacks for a model to be built from it and prompted through its chat template: each
    a phrase (``"no config.json"``, ``"no tokenizer (...)"``, ``"no chat template (...)"``), empty when nothing is
    missing. judge-train refuses a base model folder with any, before anything is written: transformers fails on
    each only later (an empty tokenizer, "Unrecognized model"). ``chat_template`` False: a model never prompted
    through one (a task classifier's base reads the bare instruction) needs none."""
    folder = Path(folder)
    gaps = [] if (folder / "config.json").is_file() else ["no config.json"]
    if not holds_tokenizer(folder):
        gaps.append(f"no tokenizer ({', '.join(TOKENIZER_FILES)})")
    if chat_template and not holds_chat_template(folder):
        gaps.append(f"no chat template ({CHAT_TEMPLATE_PLACES})")
    return gaps


#: judge-train's record, beside an export's weights files (in the export and in a regression export's generator/),
#: of each file's SHA-256 with the size and modification time it had once written (``record_weights_digests``).
WEIGHTS_DIGESTS = "weights_sha256.json"


def record_weights_digests(folder: str | Path) -> Path:
    """Write ``WEIGHTS_DIGESTS`` into ``folder``: for each of its weights files (``weight_files``), the SHA-256 of its
    bytes, its size and its modification time in nanoseconds. ``folders_fingerprint`` reads it, so the same weights
    written again (an export repeated) keep their fingerprint. Reads every byte once more, each file once and in
    chunks (``hashlib.file_digest``), as many bytes as the weights hold: judge-train's export calls it once per folder,
    after writing them (safetensors writes a file with no hook on its bytes, so the digest cannot be taken then).
    Returns the record's path. A judge-train classifier's export records another digest,
    ``judge.criteria_auto.head.weights_digest`` (one sha256 over every file, in its config): that one names the
    weights a classifier was built from, this one lets a fingerprint trust a file by its size and time."""
    import hashlib

    files = {}
    for path in weight_files(folder):
        with open(path, "rb") as handle:
            sha256 = hashlib.file_digest(handle, "sha256").hexdigest()
        info = path.stat()
        files[path.name] = {"sha256": sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    record = {"files": files}
    return write_atomically(Path(folder) / WEIGHTS_DIGESTS, (json.dumps(record, indent=2) + "\n").encode("utf-8"))


def _recorded_digests(folder: Path, files: list[Path]) -> dict[str, str] | None:
    """The SHA-256 of each of ``files`` (the folder's weights files now) as ``WEIGHTS_DIGESTS`` records it, or None
    when there is no readable record, it names other files, or any file's size or modification time is not the one
    recorded (rewritten or touched since: its bytes are not known without reading them)."""
    try:
        record = json.loads((folder / WEIGHTS_DIGESTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    recorded = record.get("files") if isinstance(record, dict) else None
    if not isinstance(recorded, dict) or set(recorded) != {path.name for path in files}:
        return None
    digests = {}
    for path in files:
        entry, info = recorded[path.name], path.stat()
        if (not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str)
                or entry.get("size") != info.st_size or entry.get("mtime_ns") != info.st_mtime_ns):
            return None
        digests[path.name] = entry["sha256"]
    return digests


def folders_fingerprint(folders: Sequence[str | Path], *, digests: bool = True) -> str | None:
    """What identifies the weights in ``folders`` (in order, each once), as judge-serve's ``GET /v1/models`` entry
    gives it (``weights_fingerprint``, ``serve.layout.weights_fingerprint`` choosing the folders) and ``judge-eval
    run`` records it: a SHA-256, folder by folder, over each weights file's name and content digest where the
    folder's ``WEIGHTS_DIGESTS`` (judge-train's exports write one) records it and the files' sizes and modification
    times are still the recorded ones, else over each file's name, size and modification time in nanoseconds. Only
    the record and each file's metadata are read (the files are gigabytes): an export written again with the same
    weights keeps its fingerprint and a retraining changes it; a folder without a record, or a file touched or
    copied (without ``cp -p``) since its record, is fingerprinted by the metadata, which a copy or a ``touch``
    changes. None when no folder holds a weights file. ``digests`` False: every file by its metadata, records or
    not, as a judge-serve that did not read ``WEIGHTS_DIGESTS`` fingerprinted it (what a run it served recorded)."""
    import hashlib

    digest, found = hashlib.sha256(), False
    for position, folder in enumerate(dict.fromkeys(Path(f) for f in folders)):
        files = weight_files(folder)  # stat follows a hub snapshot's symlinks to the blobs they name
        recorded = _recorded_digests(folder, files) if digests else None
        for path in files:
            if recorded is not None:
                digest.update(f"{position}/{path.name}\0sha256:{recorded[path.name]}\n".encode())
            else:
                info = path.stat()
                digest.update(f"{position}/{path.name}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
            found = True
    return digest.hexdigest() if found else None


#: ``fingerprint_formula``'s answers: the recorded fingerprint is the folders' by their files' content digests
#: (``WEIGHTS_DIGESTS``), or by their names, sizes and modification times.
BY_DIGESTS = "digests"
BY_METADATA = "metadata"


def fingerprint_formula(recorded: str | None, folders: Sequence[str | Path]) -> str | None:
    """By which of ``folders_fingerprint``'s formulas ``recorded`` (a weights fingerprint a run recorded) is the
    fingerprint of the weights files in ``folders`` now: ``BY_DIGESTS`` (their recorded content digests, what
    judge-serve reports where it reads ``WEIGHTS_DIGESTS``), ``BY_METADATA`` (their names, sizes and modification
    times, what a judge-serve that did not read it reported; also the answer where both formulas agree, a folder
    without a record), or None: other weights, or none recorded. judge-train card's check of a run against its
    export asks this, so that the same files are the same weights by either formula and only other files are
    refused; judge-eval's compares against ``export_fingerprints``, over the same formulas.

    Raises:
        OSError: a weights file cannot be looked at."""
    if not recorded:
        return None
    return next((formula for formula, now in _fingerprints(folders).items() if now == recorded), None)


def _fingerprints(folders: Sequence[str | Path]) -> dict[str, str | None]:
    """``folders``' fingerprint now by each formula judge-serve has used, ``BY_METADATA`` first (the answer where both
    agree): the formulas ``fingerprint_formula`` and ``export_fingerprints`` both read, so a formula added here
    reaches every check of a run against its weights."""
    return {BY_METADATA: folders_fingerprint(folders, digests=False), BY_DIGESTS: folders_fingerprint(folders)}


def _export_folders(export: str | Path) -> list[Path]:
    """The folders judge-serve's engines load from a judge-train export served alone: the export, and a regression
    judge's generating model (its manifest's ``generator``)."""
    root = Path(export)
    generator = read_manifest(root).get("generator")
    return [root] + ([root / str(generator)] if generator else [])


def export_weights_fingerprint(export: str | Path, *, digests: bool = True) -> str | None:
    """A judge-train export's ``folders_fingerprint`` over the folders judge-serve's engines load from it: the
    export, and a regression judge's generating model (its manifest's ``generator``), as judge-serve serving the
    export alone (no ``--generator-model``) fingerprints it. ``digests`` is ``folders_fingerprint``'s."""
    return folders_fingerprint(_export_folders(export), digests=digests)


def export_fingerprints(export: str | Path) -> dict[str, str | None]:
    """A judge-train export's fingerprint now by each formula judge-serve has used (``BY_METADATA``, ``BY_DIGESTS``;
    ``export_weights_fingerprint`` without and with ``digests``), over the folders judge-serve serving it alone loads:
    what a fingerprint a run recorded of the export's weights is compared against. None for a formula where no
    folder holds a weights file.

    Raises:
        OSError: a weights file cannot be looked at.
        ValueError: the export's manifest cannot be read."""
    return _fingerprints(_export_folders(export))


def export_fingerprint_formula(recorded: str | None, export: str | Path) -> str | None:
    """``fingerprint_formula`` over the folders ``export_weights_fingerprint`` reads: by which formula ``recorded``
    is this judge-train export's weights fingerprint, served alone, or None."""
    return fingerprint_formula(recorded, _export_folders(export))


def names_generator_model(server_args: Sequence[str], *, unreadable: bool = True) -> bool:
    """Whether judge-serve's arguments name a generating model of its own (``--generator-model X``, ``=X``, the
    underscore spelling, or ``generator_model:`` in a ``--config`` file): the weights fingerprint it serves is then not
    ``export_weights_fingerprint``'s. A config file that cannot be read (moved since, a relative path) cannot tell:
    where nothing else names one, ``unreadable`` is the answer, True for judge-eval run (whose check it then leaves to
    the server's); judge-train card asks ``generator_model_named`` for the three answers."""
    named = generator_model_named(server_args)
    return unreadable if named is None else named


def generator_model_named(server_args: Sequence[str]) -> bool | None:
    """``names_generator_model``'s reading: True where the arguments name a generating model (any of them), else None
    where a ``--config`` among them cannot be read to tell, else False."""
    import yaml

    untold = False
    for i, arg in enumerate(map(str, server_args)):
        flag, _, value = arg.partition("=")
        flag = flag.replace("_", "-")
        if flag == "--generator-model":
            return True
        if flag == "--config":
            path = value or (str(server_args[i + 1]) if i + 1 < len(server_args) else "")
            try:
                settings = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                untold = True
                continue
            if not isinstance(settings, dict):
                untold = True
            elif settings.get("generator_model"):
                return True
    return None if untold else False


def export_training_record(export: str | Path) -> dict[str, Any] | None:
    """What a judge-train export's own ``run.json`` (the training's record, copied into every export) says produced
    it, for judge-eval's run.json (``judge_training``): the file, the git revision (and whether it had uncommitted
    changes), the prompt version, the recipe, data, ``zero_shot`` and ``split_file``, the trained rows' count and
    fingerprint (sha256 of the rows: two data files at one path differ by it), and the optimizer steps. A key the
    record lacks is left out; the file is named by its absolute path, which means the same from any cwd. None for a
    folder without a manifest or without run.json: nothing judge-train recorded to read back. A run.json that cannot
    be read gives ``{"run_json": ..., "unreadable": why}``: it is written owner-only and an export's copy keeps that
    mode, so a colleague who can serve the weights may not read it, and an optional record never stops a run."""
    root = Path(os.path.abspath(export))
    path = root / PROVENANCE_FILE
    if not (root / EXPORT_MANIFEST).is_file() or not path.is_file():
        return None
    try:
        run = read_provenance(root)
    except (OSError, ValueError) as err:
        return {"run_json": str(path), "unreadable": str(err)}
    sections = {name: run.get(name) if isinstance(run.get(name), dict) else {} for name in ("config", "data", "result")}
    found = {"git_revision": run.get("git_revision"), "git_dirty": run.get("git_dirty"),
             "prompt_version": run.get("prompt_version"),
             **{key: sections["config"].get(key) for key in ("recipe", "data", "zero_shot", "split_file")},
             **{key: sections["data"].get(key) for key in ("n_train", "train_fingerprint")},
             "global_step": sections["result"].get("global_step")}
    return {"run_json": str(path), **{key: value for key, value in found.items() if value is not None}}

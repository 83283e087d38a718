"""The ``head`` method of ``criteria: auto``, loaded and predicting: a sequence-classification checkpoint whose
``id2label`` are the taxonomy's leaf labels, read with transformers on CPU (softmax over the logits), its choice made
by the shared policy (``choose_from_scores``). vLLM's pooling runner serves the same folder (``--runner pooling``,
``POST /classify``). Training one is ``judge-train classifier`` (``train/classifier.py``).

Training and reading tokenize an instruction one way (``input_ids``): the export's ``config.json`` records how
(``INPUT_KEY``: special tokens or not, the longest training row) and ``HeadClassifier`` reads it back. It records too
the digest of the weight files (``WEIGHTS_DIGEST_KEY``), by which a resumed run knows the export without reading its
weights again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from judge.criteria_auto.policy import DEFAULT_THRESHOLD, LeafScoresClassifier, checked_threshold, label_of, leaf_of
from judge.taxonomy import load_taxonomy

__all__ = ["HeadClassifier", "INPUT_KEY", "LEGACY_INPUT", "TRAINING_INPUT", "WEIGHTS_DIGEST_KEY", "input_ids",
           "input_record", "weights_digest"]

#: The key of ``config.json`` under which ``judge-train classifier`` records how it tokenized its rows.
INPUT_KEY = "pollux_classifier_input"
#: How ``judge-train classifier`` tokenizes an instruction: with the tokenizer's special tokens, as transformers does
#: by default and as vLLM's ``POST /classify`` does with a text ``input`` (its ``add_special_tokens`` defaults to
#: true: ``vllm/entrypoints/pooling/base/protocol.py``), so that the served export reads a request as it was trained.
TRAINING_INPUT = {"add_special_tokens": True}
#: An export without the record was trained on instructions tokenized without special tokens; how long its rows
#: could be was not recorded, and 512 tokens is what the head read of an instruction then.
LEGACY_INPUT = {"add_special_tokens": False, "max_length": 512}
#: The key of ``config.json`` under which ``judge-train classifier`` records ``weights_digest`` of its export (as a
#: tfidf artefact's ``model.json`` records its weights' sha256): what a resumed ``--criteria auto`` run checks a
#: recorded choice against, without reading the weights again (a 7B backbone's weights, on every run).
WEIGHTS_DIGEST_KEY = "pollux_weights_sha256"


def weights_digest(folder: str | Path) -> str:
    """sha256 over an export's weight files (``*.safetensors``, ``*.bin``), each by its name and bytes, in name
    order: what ``judge-train classifier`` records under ``WEIGHTS_DIGEST_KEY``."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for name in sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix in (".safetensors", ".bin")):
        digest.update(name.encode() + b"\0")
        with (folder / name).open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def input_ids(tokenizer, text: str, add_special_tokens: bool, max_length: int | None = None) -> list[int]:
    """The token ids of one instruction as the head method sees it, in training and reading alike. Longer than
    ``max_length`` (when given): its first ``max_length // 2`` ids and its last ``max_length - max_length // 2``,
    special tokens included at either end, since a request states its task at either end (``classified_text``,
    which keeps an overlong instruction's opening and ending in characters: cutting its ids from the right, as the
    tokenizer's truncation does, dropped the ending it kept)."""
    # verbose off: an instruction longer than the tokenizer's model_max_length is expected here, and cut below
    ids = list(tokenizer(text, add_special_tokens=add_special_tokens, verbose=False)["input_ids"])
    if max_length is None or len(ids) <= max_length:
        return ids
    head = max_length // 2
    return ids[:head] + ids[len(ids) - (max_length - head):]


def input_record(max_length: int) -> dict:
    """What a training run writes under ``INPUT_KEY``: ``TRAINING_INPUT`` and its longest row in tokens (a longer
    row is dropped there, so a longer instruction is read by its opening and its ending, ``input_ids``)."""
    return {**TRAINING_INPUT, "max_length": int(max_length)}


def _read_input_record(config, path: Path) -> dict:
    """The export's ``INPUT_KEY`` record, checked; ``LEGACY_INPUT`` for an export that has none."""
    record = getattr(config, INPUT_KEY, None)
    if record is None:
        return dict(LEGACY_INPUT)
    special = record.get("add_special_tokens") if isinstance(record, Mapping) else None
    length = record.get("max_length") if isinstance(record, Mapping) else None
    if not isinstance(special, bool) or not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise ValueError(f"head: {path / 'config.json'}: field {INPUT_KEY!r} is {record!r}; expected "
                         '{"add_special_tokens": true or false, "max_length": a positive integer}')
    return {"add_special_tokens": special, "max_length": length}


def _read_weights_digest(config, path: Path) -> str | None:
    """The export's recorded ``WEIGHTS_DIGEST_KEY``, checked; None for an export that has none."""
    recorded = getattr(config, WEIGHTS_DIGEST_KEY, None)
    if recorded is not None and not (isinstance(recorded, str) and re.fullmatch(r"[0-9a-f]{64}", recorded)):
        raise ValueError(f"head: {path / 'config.json'}: field {WEIGHTS_DIGEST_KEY!r} is {str(recorded)[:80]!r}, "
                         "not a sha256 (64 hex digits); remove it to have the weights hashed")
    return recorded


def export_identity(path: Path, config, recorded: str | None) -> dict:
    """Which export a ``HeadClassifier`` read. A folder: its ``config.json``'s bytes (labels, input record) and its
    weights' digest, the recorded one (``recorded``, ``WEIGHTS_DIGEST_KEY``) when the export has one, else computed
    (an export from before it was recorded: its weights read once per run). Anything else (a hub id) has no folder
    to read: the revision transformers resolved (``_commit_hash``), else its name."""
    if not path.is_dir():
        revision = getattr(config, "_commit_hash", None) or getattr(config, "name_or_path", None) or str(path)
        return {"revision": str(revision), "weights_sha256": recorded}
    return {"config_sha256": hashlib.sha256((path / "config.json").read_bytes()).hexdigest(),
            "weights_sha256": recorded or weights_digest(path)}


class HeadClassifier(LeafScoresClassifier):
    """A sequence-classification checkpoint whose ``id2label`` are leaf labels (softmax over the logits).

    Reads with transformers on CPU; vLLM's pooling runner serves the same folder (``--runner pooling``,
    ``POST /classify``). An instruction is tokenized as the export records its training rows were (``INPUT_KEY``),
    and one longer than the longest of them (``max_length`` overrides it) is read by its first and last halves of
    that many tokens (``input_ids``).

    Raises:
        ValueError: a label repeated in ``id2label`` (its probabilities would not add up: one would replace the
            other), or an unreadable ``INPUT_KEY`` or ``WEIGHTS_DIGEST_KEY`` record; ``TaxonomyError``: a label
            that is no leaf of the taxonomy.
    """

    name = "head"

    def __init__(self, path: str | Path, threshold: float = DEFAULT_THRESHOLD, max_length: int | None = None):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(path)
        self.threshold = checked_threshold(threshold, "head")  # before the weights are read
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModelForSequenceClassification.from_pretrained(self.path).eval()
        record = _read_input_record(self.model.config, self.path)
        self.add_special_tokens = record["add_special_tokens"]
        self.max_length = record["max_length"] if max_length is None else max_length
        labels = [self.model.config.id2label[i] for i in range(self.model.config.num_labels)]
        taxonomy = load_taxonomy()
        seen: dict[str, int] = {}
        for i, lab in enumerate(labels):
            leaf = label_of(leaf_of(lab, taxonomy))  # a head trained on other labels is refused here, not at judging
            if leaf in seen:
                raise ValueError(f"head: {self.path / 'config.json'}: id2label names leaf {leaf!r} twice (ids "
                                 f"{seen[leaf]} and {i}); each leaf must be one label")
            seen[leaf] = i
        self.labels = labels
        self.recorded_digest = _read_weights_digest(self.model.config, self.path)
        self._identity: str | None = None

    @property
    def identity(self) -> str:
        """What a recorded choice of this classifier is checked against before a resumed expansion reuses it: the
        export (``export_identity``: another export in the same folder is another classifier), its input length and
        threshold. Computed once, on first use."""
        if self._identity is None:
            self._identity = json.dumps({"method": self.name, **export_identity(self.path, self.model.config,
                                                                                self.recorded_digest),
                                         "max_length": self.max_length, "threshold": self.threshold},
                                        sort_keys=True)  # fmt: skip
        return self._identity

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        import torch

        out = []
        for text in instructions:
            ids = input_ids(self.tokenizer, text, self.add_special_tokens, self.max_length)
            with torch.no_grad():
                logits = self.model(input_ids=torch.tensor([ids]),
                                    attention_mask=torch.ones(1, len(ids), dtype=torch.long)).logits
            probs = torch.softmax(logits[0].float(), dim=-1)
            out.append(dict(zip(self.labels, map(float, probs))))
        return out

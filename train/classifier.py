"""Task-classifier recipe (``criteria: auto``): a sequence-classification head over the judge's backbone.

    judge-train classifier --config configs/train/tiny/classifier.yaml                 # CPU, seconds
    judge-train classifier --config configs/train/tiny/classifier.yaml --data runs/instructions/instructions.jsonl
    judge-train run --config configs/train/tiny/classifier.yaml                        # the same recipe

Each row is an instruction labelled with its leaf task (``judge.criteria_auto.load_labelled``: synthetic
instructions labelled by the leaf they were generated for, POLLUX records by their task columns, the bundled training
set; plus the taxonomy texts of each leaf unless ``taxonomy_text: false``, those of the Zero-Shot task types only
with ``zero_shot: allow``). The model is
``AutoModelForSequenceClassification`` on the base model with ``num_labels`` = all 152 leaves of the taxonomy and
``id2label`` = their labels (``"Code creation / Python"``), so the head always speaks the contract's vocabulary,
even for leaves without training rows. Plain ``transformers.Trainer`` trains it (cross-entropy on the last token).
The export (``<output_dir>/export``, written beside it and swapped in whole: ``export_classifier``) is a
``*ForSequenceClassification`` folder that vLLM's pooling runner serves
(``--runner pooling``, ``POST /classify``) and ``judge.criteria_auto.HeadClassifier`` reads. An instruction is
tokenized by ``judge.criteria_auto.head.input_ids`` with the tokenizer's special tokens (``TRAINING_INPUT``, as
``POST /classify`` does with a text input); the export's ``config.json`` records that and ``max_length``
(``INPUT_KEY``), and the head method reads instructions alike. It records too the sha256 of the weight files
(``WEIGHTS_DIGEST_KEY``: ``record_weights_digest``), by which a resumed ``--criteria auto`` run knows the export
without reading its weights again.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from train.config import ClassifierConfig, ConfigError
from train.criteria_rows import classifier_rows  # the rows judge-train checks before the run, read here too
from train.provenance import RunResult

__all__ = ["main", "train_classifier", "export_classifier", "classifier_rows", "classifier_examples",
           "ClassifierCollator", "record_weights_digest"]

logger = logging.getLogger(__name__)


def classifier_examples(tokenizer, pairs: Sequence[dict], label2id: dict[str, int],
                        max_length: int) -> tuple[list[dict], list[dict]]:
    """The training examples (``input_ids``, ``labels``) of labelled pairs, tokenized as the head method reads an
    instruction (``judge.criteria_auto.head.input_ids`` with ``TRAINING_INPUT``), and the pairs they come from (what
    run.json counts as trained): a row longer than ``max_length`` tokens is dropped, and counted by the caller, as
    the judge recipes do."""
    from judge.criteria_auto.head import TRAINING_INPUT, input_ids

    examples, kept = [], []
    for pair in pairs:
        ids = input_ids(tokenizer, pair["instruction"], TRAINING_INPUT["add_special_tokens"])
        if len(ids) > max_length:
            continue
        examples.append({"input_ids": ids, "labels": label2id[pair["label"]]})
        kept.append(pair)
    return examples, kept


@dataclass
class ClassifierCollator:
    """Right-pads ``input_ids`` with the pad id and builds ``attention_mask``; ``labels`` are leaf indices."""

    pad_token_id: int

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        width = max(len(ex["input_ids"]) for ex in examples)
        input_ids = torch.full((len(examples), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(examples), width), dtype=torch.long)
        for i, ex in enumerate(examples):
            input_ids[i, : len(ex["input_ids"])] = torch.tensor(ex["input_ids"])
            attention_mask[i, : len(ex["input_ids"])] = 1
        labels = torch.tensor([ex["labels"] for ex in examples], dtype=torch.long)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def _check_export(export_dir: Path, model, tokenizer, probe: Sequence[str], dtype) -> dict:
    """Reload the export on CPU and compare its logits with the trained model's, on the probe texts tokenized as
    training did; refuse an empty head or an export that does not record how its rows were tokenized."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from judge.criteria_auto.head import INPUT_KEY, TRAINING_INPUT, input_ids

    reloaded = AutoModelForSequenceClassification.from_pretrained(export_dir, dtype=torch.float32).eval()
    head = reloaded.score.weight
    if head.shape[0] != reloaded.config.num_labels or float(head.detach().norm()) == 0.0:
        raise RuntimeError(f"export {export_dir}: classification head has shape {tuple(head.shape)}, norm {float(head.detach().norm())}")
    recorded = getattr(reloaded.config, INPUT_KEY, None)
    if not isinstance(recorded, dict) or recorded.get("add_special_tokens") != TRAINING_INPUT["add_special_tokens"]:
        raise RuntimeError(f"export {export_dir}: config.json records {INPUT_KEY} {recorded!r}, not how the rows "
                           f"were tokenized ({TRAINING_INPUT})")
    model = model.to("cpu").float().eval()
    worst = 0.0
    for text in probe:
        ids = torch.tensor([input_ids(tokenizer, text, TRAINING_INPUT["add_special_tokens"])])
        with torch.no_grad():
            a, b = model(input_ids=ids).logits, reloaded(input_ids=ids).logits
        worst = max(worst, float((a - b).abs().max()))
    tolerance = 1e-4 if dtype == torch.float32 else 5e-2
    if worst > tolerance:
        raise RuntimeError(f"export {export_dir}: reloaded logits differ by {worst:g} (> {tolerance:g})")
    return {"max_abs_logit_diff": worst, "head_norm": float(head.detach().norm()), "num_labels": reloaded.config.num_labels}


def train_classifier(config: ClassifierConfig, *, callbacks: tuple = ()) -> RunResult:
    """Train and export a task classifier.

    Returns:
        A ``RunResult``; the export is ``<output_dir>/export`` (``export_report`` holds the reload check).
    """
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

    from judge import load_taxonomy
    from judge.criteria_auto import label_of
    from judge.criteria_auto.head import INPUT_KEY, input_record
    from train import recipe_steps

    # ---- data's refusals, then config -----------------------------------------------------------------------------
    # The rows are read before the base model is resolved (built, for the tiny one): benchmark rows, held-out
    # instructions and Zero-Shot rows are refused without that wait. Its tokenizer comes with the model, below.
    recipe_steps.setup_logging()
    pairs, report = classifier_rows(config)
    # Its export is not the judges' (export_classifier): the stopper's handlers go when training ends.
    run = recipe_steps.prepare(config, "task classifier", export_under_stopper=False)

    # ---- data ---------------------------------------------------------------------------------------------------
    labels = [label_of(task) for task in load_taxonomy().tasks]  # all leaves, taxonomy order
    label2id = {lab: i for i, lab in enumerate(labels)}
    examples, kept = classifier_examples(run.tokenizer, pairs, label2id, config.max_length)
    report["dropped_too_long"] = len(pairs) - len(kept)
    if not examples:  # a data choice, named on one line (judge-train exits 2), not the Trainer's empty-dataset error
        raise ConfigError(f"data: no training rows left in {config.data} within max_length {config.max_length} "
                          f"tokens ({report['dropped_too_long']} longer)")
    train_dataset = Dataset.from_list(examples)
    run.record_data(report, train_rows=kept)  # n_train: the rows trained on, after the too-long ones went

    # ---- model --------------------------------------------------------------------------------------------------
    # Arguments before the model: under ZeRO-3 from_pretrained then partitions the weights as they load.
    args = run.training_arguments(TrainingArguments, has_eval=False, remove_unused_columns=False)
    model = AutoModelForSequenceClassification.from_pretrained(
        run.base_model, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label2id,
        problem_type="single_label_classification", dtype=run.dtype, attn_implementation=config.attn_implementation,
    )  # fmt: skip
    model.config.pad_token_id = run.tokenizer.pad_token_id  # the head reads the last non-pad token
    # saved in the export's config.json: how its rows were tokenized, which the head method reads back
    setattr(model.config, INPUT_KEY, input_record(config.max_length))

    # ---- trainer ------------------------------------------------------------------------------------------------
    trainer = Trainer(model=model, args=args, train_dataset=train_dataset, processing_class=run.tokenizer,
                      data_collator=ClassifierCollator(run.tokenizer.pad_token_id), callbacks=[run.stopper, *callbacks])  # fmt: skip

    # ---- train --------------------------------------------------------------------------------------------------
    result = run.train(trainer)
    if run.stopped:
        return result

    # ---- save ---------------------------------------------------------------------------------------------------
    probe = sorted((p["instruction"] for p in pairs), key=len)[:2]
    export_dir = export_classifier(trainer, result, tokenizer=run.tokenizer, probe=probe, dtype=run.dtype,
                                   output_dir=config.output_dir)
    logger.info("task classifier exported to %s (%d leaf labels)", export_dir, len(labels))
    return result


def record_weights_digest(export_dir: Path) -> None:
    """Write ``weights_digest`` of an export into its ``config.json`` (``WEIGHTS_DIGEST_KEY``), as transformers
    writes that file (indented, keys sorted). A folder without ``config.json`` is left as it is: no loader takes it,
    and the reload check (``_check_export``) refuses it."""
    import json

    from judge.criteria_auto.head import WEIGHTS_DIGEST_KEY, weights_digest

    config_path = Path(export_dir) / "config.json"
    if not config_path.is_file():
        return
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config[WEIGHTS_DIGEST_KEY] = weights_digest(export_dir)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def export_classifier(trainer, result: RunResult, *, tokenizer, probe: Sequence[str], dtype, output_dir) -> Path:
    """Save, check and record the task classifier, then put it in place of ``<output_dir>/export``; call on every
    rank (the save gathers ZeRO-3 shards).

    The export is written into a staging folder beside ``export/`` (``judge.plumbing.atomic_write.staging_dir``),
    reloaded and compared there, given its run.json with the result, and only then swapped in
    (``replace_folder``): a save or check that fails, or a process killed meanwhile, leaves the earlier export
    whole and no half-written folder where judge-serve or ``finished_export`` looks; a failure removes the staging
    folder too (``staging_removed_on_failure``). The run folder's run.json
    records the result once the export it names is in place.

    Returns:
        ``<output_dir>/export``; on rank 0 ``result``'s ``export_dir`` and ``export_report`` are filled in.
    """
    import shutil

    from judge.plumbing.atomic_write import staging_dir
    from train.provenance import put_export_in_place, stage_result, staging_removed_on_failure
    from train.tokenizer_file import save_tokenizer

    export_dir = Path(output_dir) / "export"
    rank_zero = trainer.is_world_process_zero()
    with staging_removed_on_failure(staging_dir(export_dir), remove=rank_zero) as staging:
        if rank_zero:
            shutil.rmtree(staging, ignore_errors=True)  # what an export killed outright left
        trainer.save_model(str(staging))  # gathers ZeRO-3 shards; rank 0 writes
        if rank_zero:
            save_tokenizer(tokenizer, staging)
            record_weights_digest(staging)  # before the reload check, which then reads the config.json that ships
            result.export_report = _check_export(staging, trainer.model, tokenizer, probe, dtype)
            result.export_dir = str(export_dir)
            stage_result(staging, output_dir, result)
            put_export_in_place(staging, export_dir, output_dir)
    return export_dir


def main(argv: Sequence[str] | None = None) -> int:
    """``judge-train classifier``: ``judge-train run`` with the classifier recipe."""
    from train.cli import run

    return run(list(sys.argv[1:] if argv is None else argv), prog="judge-train classifier", recipe="classifier")

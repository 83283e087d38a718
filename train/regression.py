"""Regression judge recipe: one checkpoint that writes the rationale with its LM head and scores with a linear head.

    judge-train --config configs/train/tiny/regression.yaml                    # CPU, a minute or two
    judge-train --config configs/train/t-lite/regression.yaml --output_dir runs/t-lite-regression
    torchrun --nproc_per_node 8 -m train.cli --config configs/train/t-lite/regression.yaml      # 8 GPUs

Each row is the POLLUX judge prompt and the assistant turn ``[FEEDBACK] rationale [END]``
(``judge.render_rationale_target``), rendered through the base model's chat template by ``judge.apply_chat``:
exactly the text a server builds from the prompt and the generated rationale. The model
(``train.score_head.Qwen2ForRationaleAndScore``) is the base causal LM plus ``score`` (hidden size -> 1) on the final
hidden state of the last token of that text. The loss is

    lm_loss_weight * cross-entropy(rationale tokens, end-of-turn included) + score_loss_weight * MSE(score, label)

with the label the mean over experts (``criteria_score``) or the teacher's score; ``train.joint_loss.JointLossTrainer``
(``transformers.Trainer`` with that loss) trains it. The export (``train/export.py``) is a
``Qwen2ForSequenceClassification`` folder for vLLM's pooling runner plus ``generator/``, the same weights as a causal
LM.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from train.config import RegressionConfig
from train.provenance import RunResult
from train.recipe_data import TrainingData, recorded_datasets

__all__ = ["RegressionCollator", "build_model", "main", "refuse_unfit_base", "tokenize_rows",
           "training_data"]

logger = logging.getLogger(__name__)


def tokenize_rows(rows: list[dict[str, Any]], tokenizer) -> list[dict[str, Any]]:
    """Token ids of ``judge.apply_chat(tokenizer, prompt, completion)``, labels on the assistant turn, the score label.

    The prompt part (through the generation prompt ``<|im_start|>assistant\\n``) gets label -100; the assistant
    turn, its end-of-turn token and what the template writes after it carry labels. The score head reads the last
    token of ``input_ids``. The ids are judge-serve's (``judge.chat_tokens.chat_ids``): a special-token string in the
    prompt or the rationale is the characters it is, as when the served judge reads it.
    """
    import judge
    from judge.chat_tokens import chat_ids, chat_parts, generation_prompt_merged

    parts = []
    for row in rows:
        prompt_text = judge.apply_chat(tokenizer, row["prompt"])
        full = judge.apply_chat(tokenizer, row["prompt"], row["completion"])
        if row["prompt"] not in prompt_text or row["completion"] not in full:
            raise _unfit_template(tokenizer, row, "does not keep the prompt and the answer verbatim")
        parts += [chat_parts(prompt_text, row["prompt"]), chat_parts(full, row["prompt"], completion=row["completion"])]
    ids = chat_ids(tokenizer, parts)
    examples = []
    for row, prompt_ids, full_ids in zip(rows, ids[::2], ids[1::2]):
        if why := generation_prompt_merged(tokenizer, prompt_ids, full_ids):  # a merge, or <think> opened (QwQ's way)
            raise _unfit_template(tokenizer, row, why)
        labels = [-100] * len(prompt_ids) + full_ids[len(prompt_ids):]
        examples.append({"input_ids": full_ids, "labels": labels, "score_labels": float(row["label"])})
    return examples


def _unfit_template(tokenizer, row: dict[str, Any], why: str):
    """The refusal of a chat template the regression recipe cannot train through, suggesting only bases it takes
    (Qwen2's architecture: ``refuse_unfit_base``)."""
    from judge.chat_tokens import unfit_template

    return unfit_template(tokenizer, row, why, recipe="regression", instead="a ChatML Qwen2 base: Qwen2.5, T-lite, T-pro")


@dataclass
class RegressionCollator:
    """Right-pads a batch: ``input_ids`` with the pad id, ``labels`` with -100, plus ``attention_mask``."""

    pad_token_id: int

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        width = max(len(ex["input_ids"]) for ex in examples)
        input_ids = torch.full((len(examples), width), self.pad_token_id, dtype=torch.long)
        labels = torch.full((len(examples), width), -100, dtype=torch.long)
        attention_mask = torch.zeros((len(examples), width), dtype=torch.long)
        for i, ex in enumerate(examples):
            n = len(ex["input_ids"])
            input_ids[i, :n] = torch.tensor(ex["input_ids"])
            labels[i, :n] = torch.tensor(ex["labels"])
            attention_mask[i, :n] = 1
        score_labels = torch.tensor([ex["score_labels"] for ex in examples], dtype=torch.float32)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels, "score_labels": score_labels}


def _base_config(base_model: str | Path, folder: Path | None) -> tuple[Path, dict[str, Any]] | None:
    """The base's folder and ``config.json``; None where there is nothing local to read (a hub id not in the cache,
    which ``from_pretrained`` fetches; a folder without a readable config, which it names)."""
    from judge.checkpoints import CheckpointNotFound, resolve_checkpoint

    if folder is None:
        try:
            folder = resolve_checkpoint(base_model, allow_download=False)
        except CheckpointNotFound:
            return None
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (Path(folder), config) if isinstance(config, dict) else None


def _manifest_mode(base_model: str | Path, folder: Path) -> Any:
    """The export manifest's ``mode`` (None without a manifest). A manifest that does not read is refused, naming it:
    read as absent, it would let our regression export through as a causal base."""
    from judge.checkpoints import read_manifest
    from train.config import ConfigError

    try:
        return read_manifest(folder).get("mode")
    except (OSError, ValueError) as err:  # both name the file
        raise ConfigError(f"model_name_or_path: {base_model}: {err}") from None


def refuse_unfit_base(base_model: str | Path, folder: Path | None = None, *,
                      lora_targets: Sequence[str] = ()) -> None:
    """Refuse a base the regression recipe would train corrupted, before any weight loads: ``judge-train run``'s
    check (``train.cli.check_training_data``) and ``build_model`` both call it.

    * Not Qwen2 (``model_type``): ``Qwen2ForRationaleAndScore`` is Qwen2's network, and ``from_pretrained`` loads
      another architecture's weights by name, initialising what is missing and dropping what it has no place for (a
      Qwen3's ``q_norm``/``k_norm``), with nothing but transformers' load report to say so.
    * A regression judge (``_refuse_trained_head``).
    * An adapter on ``lm_head`` or ``embed_tokens`` (``lora_targets``, as peft matches a name: ``model.embed_tokens``
      too) of a base that ties the two (Qwen2.5-0.5B to 3B, the tiny base): the adapter trains one use of the shared
      matrix alone, but merged at export it is written into that matrix, so the export's other use is not the
      trained one and its check fails after the training.

    Args:
        base_model: ``model_name_or_path`` as given (named in the message); ``tiny-qwen3`` is Qwen3 before it is built,
            ``tiny-qwen2`` a Qwen2 with tied embeddings.
        folder: its resolved folder; None looks a hub id up in the local cache only (never downloading).
        lora_targets: the modules that get adapters (``train.lora.target_modules``).

    Raises:
        ConfigError: one line naming ``model_name_or_path``; a base folder whose manifest (``pollux_judge.json``)
            does not read is refused too, naming it, after its architecture was checked.
    """
    from train.config import TINY_MODEL, TINY_QWEN3, ConfigError

    tiny = str(base_model) in (TINY_MODEL, TINY_QWEN3)
    base = None if tiny else _base_config(base_model, folder)
    model_type = "qwen3" if str(base_model) == TINY_QWEN3 else (base[1].get("model_type") if base else None)
    # config.json alone says the architecture: checked before the manifest is read, so no manifest error hides it
    if model_type not in (None, "qwen2"):
        raise ConfigError(f"model_name_or_path: the regression recipe trains Qwen2 bases (T-lite, T-pro, Qwen2.5); "
                          f"{base_model} is {model_type}")
    if base is not None:
        _refuse_trained_head(base_model, *base, _manifest_mode(base_model, base[0]))
    tied = str(base_model) == TINY_MODEL or bool(base and base[1].get("tie_word_embeddings"))
    from train.lora import QWEN2_TIED_EMBEDDINGS, matches, tied_adapter_refusal

    on_shared = [target for target in lora_targets if any(matches(target, name) for name in QWEN2_TIED_EMBEDDINGS)]
    if tied and on_shared:
        raise tied_adapter_refusal(on_shared, str(base_model))


def _refuse_trained_head(base_model: str | Path, folder: Path, config: dict[str, Any], mode: Any) -> None:
    """Refuse a regression judge as the base (``folder``, its ``config.json`` as ``config``, its manifest's ``mode``):
    ``from_pretrained`` into ``Qwen2ForRationaleAndScore`` loads weights by name and initialises what is missing, so
    a trained head would be replaced by a random one, with nothing but transformers' load report to say so.

    * A released ``-r`` judge (``judge.checkpoints.is_released_regression``): its ``regression_head.weight`` and
      ``.bias`` are no ``score.weight``; the head would start random (and the recipe's head, as
      ``Qwen2ForSequenceClassification``'s, has no bias to hold the trained one).
    * Our own regression export (manifest mode ``regression``) or any untied ``*ForSequenceClassification``: it has
      no ``lm_head.weight``; the LM head that writes the rationale would start random.
    * A tied ``*ForSequenceClassification`` of other than one label (``num_labels``: its ``num_labels`` key, else its
      ``id2label``'s length, else transformers' default of 2, which a config does not write): its ``score.weight`` has
      a row a label, which does not fit the recipe's one-output head, and ``from_pretrained`` stops on the shapes
      with a traceback, after the run folder is claimed.

    Raises:
        ConfigError: one line naming ``model_name_or_path`` (``base_model``, as given) and what to pass instead.
    """
    from judge.checkpoints import GENERATOR_SUBDIR, classifier_num_labels, is_released_regression
    from train.config import ConfigError

    archs = config.get("architectures") or []
    if is_released_regression(config):
        raise ConfigError(f"model_name_or_path: {base_model} is a released -r judge ({', '.join(archs)}): its "
                          "regression_head (a weight and a bias) does not load into the recipe's score head (no bias), "
                          "which would start random; train from a causal checkpoint instead: the base it was "
                          "fine-tuned from (t-tech/T-lite-it-1.0, t-tech/T-pro-it-1.0) or a seq2seq judge")
    classifier = mode == "regression" or any(str(a).endswith("ForSequenceClassification") for a in archs)
    if classifier and not config.get("tie_word_embeddings"):
        generator = folder / GENERATOR_SUBDIR
        instead = (f"pass {generator}, the same backbone with its LM head (the score head then starts anew)"
                   if (generator / "config.json").is_file() else "pass a causal checkpoint")
        raise ConfigError(f"model_name_or_path: {base_model} is a regression judge ({', '.join(archs) or mode}) "
                          "without an LM head, which the recipe would start random; to continue its training, "
                          f"resume its run (judge-train run --resume with its output_dir); to start from it, {instead}")
    labels = classifier_num_labels(config)
    if any(str(a).endswith("ForSequenceClassification") for a in archs) and labels != 1:
        raise ConfigError(f"model_name_or_path: {base_model} is a sequence classifier ({', '.join(archs)}) of "
                          f"num_labels {labels}: its score head has {labels} outputs, the recipe's has one, and the "
                          "weights would not load; pass a causal checkpoint (the score head then starts anew) or a "
                          "classifier of num_labels 1")


def build_model(config: RegressionConfig, base_model: str, dtype, pad_token_id: int | None):
    """The model the recipe trains: ``Qwen2ForRationaleAndScore`` from ``base_model`` in ``dtype``
    (``train.training_arguments.weights_dtype``), wrapped by peft when ``config.lora``.

    The score head is missing from a causal checkpoint and starts from the model's initializer (seeded by the
    recipe). Under LoRA it is trained in full (peft's ``modules_to_save``), and without DeepSpeed every trainable
    parameter is upcast to float32 (``train.lora.trainable_in_float32``): the base loads in bf16, and peft leaves
    the head's trainable copy in bf16, where AdamW's small steps round away. The export merges and writes it in
    the training dtype as before (``train.export.load_trained``).

    Raises:
        ConfigError: a base that is not Qwen2, or a regression judge (``refuse_unfit_base``), before any weight loads.
    """
    from train import lora
    from train.score_head import Qwen2ForRationaleAndScore

    # judge-train run refused it before anything was written; a direct caller here
    refuse_unfit_base(base_model, lora_targets=lora.target_modules(config))
    model = Qwen2ForRationaleAndScore.from_pretrained(base_model, dtype=dtype, attn_implementation=config.attn_implementation)
    _say_score_head(model, base_model)
    model.config.pad_token_id = pad_token_id
    peft_config = lora.lora_config(config, modules_to_save=["score"], model=model)
    if peft_config is not None:
        from peft import get_peft_model

        model = get_peft_model(model, peft_config)
        if not config.deepspeed:
            upcast = lora.trainable_in_float32(model)
            if upcast:
                logger.info("LoRA: %d trainable tensors upcast to float32 (the score head's trainable copy: %s)",
                            len(upcast), ", ".join(upcast))
        model.print_trainable_parameters()
    return model


def _say_score_head(model, base_model: str) -> None:
    """One line on where the score head of a model just loaded from ``base_model`` came from, told by the names in
    the base's weights, as ``from_pretrained`` itself loads them: a causal base holds no ``score.weight``, so the head
    starts anew (the recipe's seeded initialiser); a regression run's own ``trained/`` or ``checkpoint-N`` folder, or a
    tied sequence classifier, holds one, which loads. transformers' load report leaves a new head out (the score head
    class declares it expected), so this line is what says it."""
    from judge.checkpoints import CheckpointNotFound, resolve_checkpoint, tensor_names

    archs = ", ".join(str(a) for a in (model.config.architectures or [])) or "no architectures"
    try:  # a hub id is in the cache now: from_pretrained has just read it
        names = tensor_names(resolve_checkpoint(base_model, allow_download=False))
    except CheckpointNotFound:
        names = None
    if names is None:
        logger.info("score head: loaded from %s (%s) if its weights hold score.weight, else new, initialised from the "
                    "seed (its weights are no safetensors whose names can be read); this run trains it (%d -> 1)",
                    base_model, archs, model.config.hidden_size)
    elif "score.weight" in names:
        logger.info("score head: loaded from %s (%s), and trained further by this run", base_model, archs)
    else:
        logger.info("score head: new (%s has none: %s), initialised from the seed; this run trains it (%d -> 1)",
                    base_model, archs, model.config.hidden_size)


def training_data(config: RegressionConfig, tokenizer) -> TrainingData:
    """The recipe's data step: rows cut to ``max_length`` and the ids they train as (``tokenize_rows``).
    ``judge-train run`` takes it before it claims the run folder, with the base's tokenizer alone, and hands it to
    ``main``.

    Raises:
        ConfigError: a chat template that cannot render the judge prompt
            (``train.recipe_data.refuse_unrenderable_chat_template``) or that the rows cannot be trained through
            (``tokenize_rows``), naming ``model_name_or_path`` (and the row); no training row left within
            ``max_length``, naming ``data``.
    """
    from train import build_data
    from train.recipe_data import refuse_unrenderable_chat_template

    refuse_unrenderable_chat_template(tokenizer, config.model_name_or_path)
    train_rows, eval_rows, report = build_data.rows_for_config(config, tokenizer)
    # Checked again on the ids trained: the data step counts a special-token string as one token, and the collator
    # cuts nothing, so a row longer than max_length would train whole (drop_long_examples).
    train_rows, train_examples = build_data.drop_long_examples(
        config, report, train_rows, tokenize_rows(train_rows, tokenizer))
    eval_rows, eval_examples = build_data.drop_long_examples(
        config, report, eval_rows, tokenize_rows(eval_rows, tokenizer) if eval_rows else [], validation=True)
    return TrainingData(tokenizer, train_rows, eval_rows, report, train_examples, eval_examples)


def main(config: RegressionConfig, *, callbacks: tuple = (), data: TrainingData | None = None) -> RunResult:
    """Train and export a regression judge.

    Args:
        config: a resolved ``RegressionConfig`` (``train.config.load_config``).
        callbacks: extra ``transformers.TrainerCallback`` objects (tests use them to interrupt a run).
        data: ``training_data``'s result, where the caller took the data step before the run folder was claimed
            (``judge-train run``); None takes it here, after ``prepare``.

    Returns:
        A ``RunResult``; the export is in ``<output_dir>/export`` (see ``train/export.py`` for the layout).
    """
    from transformers import TrainingArguments

    from train import recipe_steps
    from train.joint_loss import JointLossTrainer
    from train.score_head import Qwen2ForRationaleAndScore

    # ---- config -------------------------------------------------------------------------------------------------
    run = recipe_steps.prepare(config, "regression judge", tokenizer=data.tokenizer if data is not None else None)
    logger.info("loss = %g x rationale cross-entropy + %g x score MSE", config.lm_loss_weight, config.score_loss_weight)

    # ---- data ---------------------------------------------------------------------------------------------------
    if data is None:
        data = training_data(config, run.tokenizer)
    train_dataset, eval_dataset = recorded_datasets(run, data)
    train_rows = data.train_rows

    # ---- model --------------------------------------------------------------------------------------------------
    # Arguments before the model: under ZeRO-3 from_pretrained then partitions the weights as they load.
    args = run.training_arguments(
        TrainingArguments,
        has_eval=eval_dataset is not None,
        remove_unused_columns=False,  # score_labels is not a forward() argument; the collator builds the batch
        prediction_loss_only=True,
    )
    model = build_model(config, run.base_model, run.dtype, run.tokenizer.pad_token_id)

    # ---- trainer ------------------------------------------------------------------------------------------------
    trainer = JointLossTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        data_collator=RegressionCollator(run.tokenizer.pad_token_id),
        processing_class=run.tokenizer,
        callbacks=[run.stopper, *callbacks],
        lm_loss_weight=config.lm_loss_weight,
        score_loss_weight=config.score_loss_weight,
    )

    # ---- train --------------------------------------------------------------------------------------------------
    result = run.train(trainer)
    if run.stopped:
        return result

    # ---- save ---------------------------------------------------------------------------------------------------
    run.export_judge(trainer, result, mode="regression", model_cls=Qwen2ForRationaleAndScore, train_rows=train_rows)
    logger.info("regression judge exported to %s (pooling) and %s (generator)", result.export_dir, Path(result.export_dir) / "generator")
    return result

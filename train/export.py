"""Final export: a folder that transformers and vLLM load unchanged, reloaded and checked before the run ends.

Layouts (``<output_dir>/export/``)::

    seq2seq                                   regression
    export/                                   export/
      config.json   Qwen2ForCausalLM            config.json   Qwen2ForSequenceClassification,
      model*.safetensors                                      num_labels=1, problem_type="regression"
      generation_config.json (eos <|im_end|>)   model*.safetensors   backbone + `score.weight` (1 x hidden)
      tokenizer files                           generation_config.json, tokenizer files
      pollux_judge.json, run.json               pollux_judge.json, run.json
                                                generator/   Qwen2ForCausalLM: the same backbone + lm_head,
                                                             generation_config.json, tokenizer files

The regression judge is one trained model with two heads; vLLM runs one runner per engine, and a
``Qwen2ForSequenceClassification`` checkpoint has no LM head, while a causal checkpoint carrying an extra
``score.weight`` is refused by vLLM's weight loader. So the export holds two complete checkpoints of the same
weights: ``export/`` for the pooling engine (``--runner pooling``; ``/classify`` returns the raw head value because
``problem_type`` is ``regression``) and ``export/generator/`` for the generating engine (the backbone is stored
twice; 15 GB extra for T-lite in bf16). Serving a regression judge:

1. generate from ``export/generator`` with ``judge.apply_chat(tokenizer, prompt)`` (stops at ``<|im_end|>``),
   giving ``[FEEDBACK] ... [END]``;
2. score ``judge.apply_chat(tokenizer, prompt, judge.render_rationale_target(judge.parse_rationale(generated)[0]))``
   with ``export/`` — the rationale re-rendered as training rendered it, as judge-serve does (which also reads a
   special-token string in the prompt or rationale as text); the head reads its last token.

Each folder of weights also holds ``weights_sha256.json`` (``judge.checkpoints.record_weights_digests``): its weights
files' content digests, by which judge-serve's weights fingerprint stays the same when the same weights are exported
again (a ``--resume`` that trains nothing) and changes when they differ.

``pollux_judge.json`` says which judge a folder holds: ``{"mode", "prompt_version", "generator", "score_head"}``;
``README.md`` is its model card (``train.model_card``; rewrite it with evaluation figures by ``judge-train card``).

After writing, every export is reloaded from disk and checked: the head has the right shape and a non-zero norm
(ZeRO-3 is known to save empty head tensors: trl #1379, OpenRLHF #209), the score head sits in the main
safetensors as ``score.weight``, and a forward pass on probe rows matches the live model's. LoRA adapters are
merged into the base weights first.

Why one module of ~550 lines: the layouts, the reload check and the save-export-publish sequence around them are
one contract with judge-serve; split, a layout change could land without the check that reads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path
from types import MethodType
from typing import Any

import torch

from judge.plumbing.atomic_write import staging_dir
from judge.checkpoints import (EXPORT_MANIFEST, GENERATOR_SUBDIR, TRAINED_LENGTHS, TrainedLengths,
                               record_weights_digests, write_manifest)
from judge.prompts import PROMPT_VERSION

__all__ = [
    "ExportError",
    "EXPORT_MANIFEST",
    "GENERATOR_SUBDIR",
    "probe_batch",
    "live_outputs",
    "load_trained",
    "export_seq2seq",
    "export_regression",
    "verify_export",
    "export_after_training",
]

logger = logging.getLogger(__name__)

#: Positions at the end of each probe row whose logits are compared (the whole vocabulary at each).
PROBE_POSITIONS = 4


class ExportError(RuntimeError):
    """An export that does not reload as the model that was trained."""


# ---------------------------------------------------------------------------------------------------------------
# Probing the live model
# ---------------------------------------------------------------------------------------------------------------


def probe_batch(tokenizer, texts: list[str]) -> dict[str, torch.Tensor]:
    """Right-padded token ids and attention mask for ``texts`` (full chat-formatted rows)."""
    encoded = tokenizer(texts, add_special_tokens=False, padding=True, return_tensors="pt")
    return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}


def _tail_logits(logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Logits at the last ``PROBE_POSITIONS`` real tokens of each row, (batch, positions, vocab), float32."""
    lengths = attention_mask.sum(-1)
    rows = []
    for i, length in enumerate(lengths.tolist()):
        start = max(0, length - PROBE_POSITIONS)
        rows.append(logits[i, start:length].float())
    return torch.stack(rows)


@contextlib.contextmanager
def _without_mixed_precision(model, device: torch.device):
    """Run ``model`` as its export reloads: in its weights' dtype, without the autocast accelerate put around it.

    With ``bf16`` and no DeepSpeed the Trainer's accelerate wraps ``model.forward`` in bf16 autocast (the instance's
    ``forward``, the bare one kept as ``_original_forward``) while a full fine-tune's weights stay float32; the export
    reloads in float32 and runs without autocast, and would be compared, at float32's tolerance, with bf16 matmuls.
    Here the bare forward stands in for the probe and the wrapper is put back after it, so the trainer's model is
    unchanged. A model whose weights mix dtypes (LoRA on a bf16 base, its trainable tensors in float32) runs only
    under autocast, and keeps it: its export is bf16, checked at bf16's tolerance."""
    wrapped = model.__dict__.get("forward")
    dtypes = {param.dtype for param in model.parameters() if param.is_floating_point()}
    if wrapped is None or "_original_forward" not in model.__dict__ or len(dtypes) != 1:
        yield
        return
    bare = wrapped
    while hasattr(bare, "__wrapped__"):  # accelerate's unwrap_model(keep_fp32_wrapper=False) walks the same chain
        bare = bare.__wrapped__
    model.forward = bare if hasattr(bare, "__self__") else MethodType(bare, model)
    try:
        with torch.autocast(device.type, enabled=False):
            yield
    finally:
        model.forward = wrapped


@torch.no_grad()
def live_outputs(model, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Forward the probe through the model being trained (all ranks must call it under ZeRO-3).

    Runs in the weights' dtype without the Trainer's autocast (``_without_mixed_precision``), as the export reloads.

    Returns:
        ``{"logits": tail logits}`` plus ``{"scores": (batch,)}`` for the regression model; on CPU, float32.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    with _without_mixed_precision(model, device):
        outputs = model(**{k: v.to(device) for k, v in batch.items()})
    model.train(was_training)
    result = {"logits": _tail_logits(outputs.logits, batch["attention_mask"].to(device)).cpu()}
    scores = getattr(outputs, "scores", None)
    if scores is not None:
        result["scores"] = scores.float().cpu()
    return result


# ---------------------------------------------------------------------------------------------------------------
# Loading what the trainer saved
# ---------------------------------------------------------------------------------------------------------------


def load_trained(trained_dir: str | Path, model_cls, *, base_model: str, dtype: torch.dtype):
    """The trained model from ``trainer.save_model``'s folder, on CPU; LoRA adapters merged into the base.

    Args:
        trained_dir: folder written by ``trainer.save_model`` (full weights, or ``adapter_config.json``).
        model_cls: ``Qwen2ForCausalLM`` or ``train.score_head.Qwen2ForRationaleAndScore``.
        base_model: the base the adapters were trained on (used only for LoRA).
        dtype: the dtype to load and export in (the training dtype).
    """
    trained_dir = Path(trained_dir)
    if (trained_dir / "adapter_config.json").is_file():
        from peft import PeftModel

        base = model_cls.from_pretrained(base_model, dtype=dtype)
        merged = PeftModel.from_pretrained(base, str(trained_dir)).merge_and_unload()
        logger.info("merged LoRA adapters from %s into %s", trained_dir, base_model)
        return merged.eval()
    return model_cls.from_pretrained(str(trained_dir), dtype=dtype).eval()


def _save_tokenizer_and_generation(model, tokenizer, folder: Path) -> None:
    from transformers import GenerationConfig

    from train.tokenizer_file import save_tokenizer

    save_tokenizer(tokenizer, folder)  # tokenizer.json compact: judge-serve and each vLLM engine load it faster
    generation = getattr(model, "generation_config", None) or GenerationConfig()
    eos = generation.eos_token_id
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    # A chat turn ends at the tokenizer's eos (<|im_end|>); vLLM reads its stop ids from this file.
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in eos:
        eos = [tokenizer.eos_token_id, *eos]
    generation = GenerationConfig(
        bos_token_id=generation.bos_token_id,
        eos_token_id=eos[0] if len(eos) == 1 else eos,
        pad_token_id=tokenizer.pad_token_id,
    )
    generation.save_pretrained(str(folder))


def _fresh(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


# ---------------------------------------------------------------------------------------------------------------
# Writing the exports
# ---------------------------------------------------------------------------------------------------------------


def export_seq2seq(model, tokenizer, out_dir: str | Path, *, verdict_format: str = "tagged",
                   trained_lengths: TrainedLengths | None = None, prompt_version: str = PROMPT_VERSION) -> Path:
    """Write the generating judge as a plain causal LM folder (``Qwen2ForCausalLM``, ``Qwen3ForCausalLM``, ...).

    Args:
        model: the trained causal LM (LoRA already merged), on CPU.
        tokenizer: the training tokenizer (its chat template is the one the judge learned).
        out_dir: the export folder (replaced).
        verdict_format: how the judge answers (``judge.VerdictFormat``), recorded in the manifest, where judge-serve
            and judge-eval read it (``judge.checkpoints.checkpoint_verdict_format``).
        trained_lengths: the token lengths a reasoning judge's completions were trained within (GRPO: its sampling
            bounds; integer-format SFT: ``train.seq2seq.trained_lengths``), recorded in the manifest so that
            judge-serve gives the judge as much room (``judge.checkpoints.checkpoint_trained_lengths``).
        prompt_version: the template the judge was trained on (GRPO: the one its base is asked with), recorded in
            the manifest, from which judge-serve and judge-eval choose the template they ask the judge with.
    """
    out = _fresh(Path(out_dir))
    model.config.pad_token_id = tokenizer.pad_token_id
    # The trained class's own name: a Qwen3 base must stay Qwen3ForCausalLM (vLLM picks its loader by this name).
    model.config.architectures = [type(model).__name__]
    model.config.use_cache = True  # gradient checkpointing switched it off for training
    model.save_pretrained(str(out), safe_serialization=True)
    _save_tokenizer_and_generation(model, tokenizer, out)
    record_weights_digests(out)  # the same weights exported again keep their fingerprint
    lengths = {TRAINED_LENGTHS: trained_lengths.to_manifest()} if trained_lengths else {}
    write_manifest(out, "seq2seq", generator=".", score_head=None, verdict_format=verdict_format,
                   prompt_version=prompt_version, **lengths)
    return out


def export_regression(model, tokenizer, out_dir: str | Path) -> Path:
    """Write the regression judge: a sequence classifier in ``out_dir`` and its generator in ``generator/``.

    Args:
        model: the trained ``Qwen2ForRationaleAndScore`` (LoRA already merged), on CPU.
        tokenizer: the training tokenizer.
        out_dir: the export folder (replaced).
    """
    from transformers import Qwen2ForCausalLM, Qwen2ForSequenceClassification

    out = _fresh(Path(out_dir))
    state = model.state_dict()

    # The pooling checkpoint: backbone + score. Built on the meta device and saved from the trained tensors, so
    # no second copy of the weights is allocated.
    model.config.use_cache = True  # gradient checkpointing switched it off for training
    cls_config = model.config.__class__.from_dict(model.config.to_dict())
    cls_config.architectures = ["Qwen2ForSequenceClassification"]
    cls_config.num_labels = 1  # sets id2label / label2id to one label
    cls_config.id2label = {0: "score"}
    cls_config.label2id = {"score": 0}
    cls_config.problem_type = "regression"  # vLLM then returns the raw head value, no sigmoid
    cls_config.pad_token_id = tokenizer.pad_token_id  # transformers finds the last token of a padded batch by it
    cls_config.tie_word_embeddings = False  # there is no LM head to tie
    with torch.device("meta"):
        classifier = Qwen2ForSequenceClassification(cls_config)
    cls_state = {name: tensor for name, tensor in state.items() if name.startswith("model.") or name == "score.weight"}
    classifier.save_pretrained(str(out), state_dict=cls_state, safe_serialization=True)
    before = {path.name for path in out.iterdir()}
    _save_tokenizer_and_generation(model, tokenizer, out)
    shared = sorted({path.name for path in out.iterdir() if path.is_file()} - before | {"generation_config.json"})

    # The generating checkpoint: the same backbone + LM head.
    generator_dir = out / GENERATOR_SUBDIR
    gen_config = model.config.__class__.from_dict(model.config.to_dict())
    gen_config.architectures = ["Qwen2ForCausalLM"]
    gen_config.pad_token_id = tokenizer.pad_token_id
    with torch.device("meta"):
        generator = Qwen2ForCausalLM(gen_config)
    gen_state = {name: tensor for name, tensor in state.items() if name != "score.weight"}
    generator.save_pretrained(str(generator_dir), state_dict=gen_state, safe_serialization=True)
    # The generator reads the same tokenizer and stop ids: the files just written, copied rather than made again
    # (saving and compacting a tokenizer is the costliest part of writing a tiny model's folder).
    for name in shared:
        shutil.copyfile(out / name, generator_dir / name)

    for folder in (out, generator_dir):  # each its own record: the same weights exported again keep their fingerprint
        record_weights_digests(folder)
    write_manifest(out, "regression", generator=GENERATOR_SUBDIR, score_head="score")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Checking them
# ---------------------------------------------------------------------------------------------------------------


def _tolerance(dtype: torch.dtype) -> float:
    # Relative to the largest magnitude compared: fp32 reloads are bit-identical up to kernel order; bf16 carries
    # 8 mantissa bits, and a LoRA merge in bf16 rounds once more.
    return 1e-4 if dtype == torch.float32 else 3e-2


def _compare(name: str, live: torch.Tensor, reloaded: torch.Tensor, dtype: torch.dtype) -> float:
    if live.shape != reloaded.shape:
        raise ExportError(f"{name}: reloaded shape {tuple(reloaded.shape)} != live {tuple(live.shape)}")
    diff = (live.float() - reloaded.float()).abs().max().item()
    scale = max(1.0, live.float().abs().max().item())
    if not diff <= _tolerance(dtype) * scale:
        raise ExportError(f"{name}: reloaded model differs from the live one by {diff:.3g} (scale {scale:.3g})")
    return diff


def _check_head(name: str, weight: torch.Tensor, shape: tuple[int, ...]) -> float:
    if tuple(weight.shape) != shape:
        raise ExportError(f"{name} has shape {tuple(weight.shape)}, expected {shape}: the export is broken")
    norm = weight.float().norm().item()
    if not norm > 0 or norm != norm:
        raise ExportError(f"{name} has norm {norm}: saved empty (the ZeRO-3 gathering bug) or corrupted")
    return norm


def _safetensors_keys(folder: Path) -> set[str]:
    from safetensors import safe_open

    keys: set[str] = set()
    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as handle:
            keys.update(handle.keys())
    return keys


@torch.no_grad()
def verify_export(out_dir: str | Path, mode: str, batch: dict[str, torch.Tensor], live: dict[str, torch.Tensor],
                  dtype: torch.dtype) -> dict[str, Any]:  # fmt: skip
    """Reload an export with transformers' Auto classes and check it against the live model's probe outputs.

    Args:
        out_dir: the export folder.
        mode: ``"seq2seq"`` or ``"regression"``.
        batch: the probe batch given to ``live_outputs``.
        live: what ``live_outputs`` returned.
        dtype: the export's dtype (sets the tolerance).

    Returns:
        A report: head shapes and norms, largest differences.

    Raises:
        ExportError: any failed check.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    out = Path(out_dir)
    report: dict[str, Any] = {"mode": mode}
    generator_dir = out if mode == "seq2seq" else out / GENERATOR_SUBDIR

    generator = AutoModelForCausalLM.from_pretrained(str(generator_dir), dtype=dtype).eval()
    hidden = generator.config.hidden_size
    vocab = generator.config.vocab_size
    report["lm_head_norm"] = _check_head("lm_head.weight", generator.get_output_embeddings().weight, (vocab, hidden))
    logits = _tail_logits(generator(**batch).logits, batch["attention_mask"])
    report["max_logit_diff"] = _compare("LM logits", live["logits"], logits, dtype)

    if mode == "regression":
        config = AutoConfig.from_pretrained(str(out))
        if config.architectures != ["Qwen2ForSequenceClassification"] or config.num_labels != 1:
            raise ExportError(f"{out}/config.json: architectures {config.architectures}, num_labels {config.num_labels}")
        if config.problem_type != "regression":
            raise ExportError(f"{out}/config.json: problem_type {config.problem_type!r}; vLLM would apply a sigmoid")
        if "score.weight" not in _safetensors_keys(out):
            raise ExportError(f"{out}: no 'score.weight' in the main safetensors; vLLM could not find the head")
        classifier = AutoModelForSequenceClassification.from_pretrained(str(out), dtype=dtype).eval()
        report["score_norm"] = _check_head("score.weight", classifier.score.weight, (1, hidden))
        scores = classifier(**batch).logits.squeeze(-1).float()
        report["max_score_diff"] = _compare("scores", live["scores"], scores, dtype)
        report["probe_scores"] = [round(v, 6) for v in scores.tolist()]
    logger.info("export %s verified: %s", out, report)
    return report


# ---------------------------------------------------------------------------------------------------------------
# The recipes' save step
# ---------------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _zero3_init_paused(args):
    """Build whole models on rank 0 alone: with ZeRO-3 configured, transformers would partition every model it
    creates (zero.Init), a collective the other ranks never join."""
    from transformers.integrations.deepspeed import set_hf_deepspeed_config, unset_hf_deepspeed_config

    hf_config = getattr(args, "hf_deepspeed_config", None)
    if hf_config is None:
        yield
        return
    unset_hf_deepspeed_config()
    try:
        yield
    finally:
        set_hf_deepspeed_config(hf_config)


def _write_model_card(export_dir: str | Path, run_json: Path, kept_evaluation: str | None = None) -> None:
    """README.md for the export; a card that cannot be written is a warning, not a lost (verified) export."""
    from train.model_card import write_card

    try:
        path = write_card(export_dir, run_json=run_json, kept_evaluation=kept_evaluation)
    except (OSError, ValueError) as err:
        logger.warning("model card not written (%s); write it with: judge-train card --export %s", err, export_dir)
        return
    logger.info("model card: %s", path)


def _drop_trainer_card(output_dir: Path) -> None:
    """Remove the README.md trl's trainers write into the run folder at each checkpoint save (its boilerplate card:
    "a fine-tuned version of [None]"): the judge's card is the export's README.md, and a second one beside it
    misleads. Only a file in trl's template is removed."""
    card = output_dir / "README.md"
    with contextlib.suppress(OSError):
        if card.is_file() and "It has been trained using [TRL]" in card.read_text(encoding="utf-8", errors="replace"):
            card.unlink()
            logger.info("removed the trainer's boilerplate %s (the judge's card is in the export)", card)


def export_after_training(trainer, *, stopper, result, mode: str, model_cls, tokenizer,
                          probe_texts: list[str], base_model: str, dtype: torch.dtype, export_dir: str | Path,
                          verdict_format: str = "tagged",
                          trained_lengths: TrainedLengths | None = None,
                          prompt_version: str = PROMPT_VERSION) -> dict[str, Any] | None:  # fmt: skip
    """Save, export, reload, verify and record; call on every rank after ``trainer.train()``.

    Steps: probe the live model (a collective under ZeRO-3), ``trainer.save_model`` into ``<output_dir>/trained``
    (16-bit weights gathered on rank 0 under ZeRO-3; adapters only with LoRA), then on rank 0: load those weights
    (merging LoRA), write the export into a staging folder beside ``export_dir`` (``judge.plumbing.atomic_write.staging_dir``), reload it and
    compare, record ``result`` in its run.json, write the model card, and only then put it in place of the earlier
    export (``judge.plumbing.atomic_write.replace_folder``) and record the result in the run folder's run.json. The folder of trained weights is
    removed once the export checks; the staging folder, when the export fails or is abandoned
    (``train.provenance.staging_removed_on_failure``).

    The stopper's signal handlers stay installed from ``trainer.train()`` until the export is done
    (``train.recipe_steps.PreparedRun.train``): under slurm/train.sbatch the inherited SIGUSR1 disposition is
    "ignore", and Slurm's pre-timeout signal arriving during a long merge or save would otherwise be lost and the job
    end at its time limit. A stop signal found before the export is published abandons it (the earlier export stays
    in place) and requeues the job (``train.preemption.abandon_export_on_signal``): the rerun resumes from the final
    checkpoint, trains nothing and exports again.

    Args:
        stopper: the run's ``train.preemption.SaveAndStopOnSignal`` (``PreparedRun.stopper``), whose handlers
            ``trainer.train()`` left installed; uninstalled here. None: no signal is watched for.
        result: ``train.provenance.RunResult`` of the training; its ``export_dir`` and (rank 0) ``export_report``
            are filled in here. It is recorded before the card is written, which reads the steps and the losses
            from run.json.

    Returns:
        The verification report on rank 0, None on other ranks.

    Raises:
        ExportError: on rank 0, when the export does not reload as the live model.
        train.preemption.ExportAbandoned: on every rank, a stop signal during rank 0's export (a ``SystemExit``
            with the rank's ``train.exit_status.stop_exit_code``: 130 for Ctrl+C, 0 when the Slurm job was
            requeued, else 75 on rank 0; ``train.preemption.abandon_with_every_rank``).
    """
    from train import preemption

    rank_zero = trainer.is_world_process_zero()
    try:
        # The requeue is rank 0's (train.preemption.requeue_slurm_job); the watch covers the gathering save too.
        with preemption.RequeueDuringExport(stopper if rank_zero else None) as watch:
            batch = probe_batch(tokenizer, probe_texts)
            live = live_outputs(trainer.model, batch)
            trained = Path(trainer.args.output_dir) / "trained"
            trainer.save_model(str(trained))
            report = abandoned = None
            if rank_zero:
                try:
                    with _every_core_for_torch():
                        report = _export_on_rank_zero(trainer, watch, result=result, mode=mode,
                                                      model_cls=model_cls, tokenizer=tokenizer, batch=batch,
                                                      live=live, trained=trained, base_model=base_model,
                                                      dtype=dtype, export_dir=Path(export_dir),
                                                      verdict_format=verdict_format,
                                                      trained_lengths=trained_lengths,
                                                      prompt_version=prompt_version)  # fmt: skip
                except preemption.ExportAbandoned as given_up:
                    abandoned = given_up
            # The other ranks wait here for rank 0's export and end as it does when it was given up, instead of
            # finding rank 0 gone from the barrier below (gloo's "Connection closed by peer" traceback; under NCCL a
            # wait until the launcher kills them).
            preemption.abandon_with_every_rank(abandoned, result)
            result.export_dir = str(export_dir)
            trainer.accelerator.wait_for_everyone()
            return report
    finally:
        if stopper is not None:
            stopper.uninstall()


@contextlib.contextmanager
def _every_core_for_torch():
    """Rank 0's torch on every core it may use while it exports alone on CPU, its earlier thread count put back after.

    Under torchrun and slurm/train.sbatch OMP_NUM_THREADS is 1: the load, the writes' conversions and the two probe
    forwards ran on one thread (estimated ~10 minutes for one forward of a 32B model over ~1,000 tokens), while the
    other ranks wait in a barrier that ``ddp_timeout`` (1800 s) bounds. More threads shorten the export; they do not
    lift the bound (docs/training.md, "The export").
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _export_on_rank_zero(trainer, watch, *, result, mode, model_cls, tokenizer, batch, live, trained: Path,
                         base_model, dtype, export_dir: Path, verdict_format, trained_lengths,
                         prompt_version=PROMPT_VERSION):  # fmt: skip
    from train import provenance
    from train.model_card import evaluation_section

    def stop_if_signalled() -> None:
        watch.abandon_if_signalled(result)

    stop_if_signalled()
    kept_evaluation = evaluation_section(export_dir)  # a --resume must not lose what `judge-train card` wrote
    with provenance.staging_removed_on_failure(staging_dir(export_dir)) as staging:
        with _zero3_init_paused(trainer.args):
            model = load_trained(trained, model_cls, base_model=base_model, dtype=dtype)
            stop_if_signalled()
            if mode == "seq2seq":
                export_seq2seq(model, tokenizer, staging, verdict_format=verdict_format,
                               trained_lengths=trained_lengths, prompt_version=prompt_version)
            else:
                export_regression(model, tokenizer, staging)
            del model
            stop_if_signalled()
            report = verify_export(staging, mode, batch, live, dtype)
        stop_if_signalled()
        result.export_report, result.export_dir = report, str(export_dir)
        # The export's run.json first, and the card from it: the run folder's run.json records the result only once
        # the export it names is in place.
        staged_run_json = provenance.stage_result(staging, trainer.args.output_dir, result)
        _write_model_card(staging, staged_run_json, kept_evaluation)
        stop_if_signalled()  # the last moment the export can be abandoned: from here the earlier one is replaced
        provenance.put_export_in_place(staging, export_dir, trainer.args.output_dir)
    logger.info("export %s in place", export_dir)
    _drop_trainer_card(Path(trainer.args.output_dir))
    shutil.rmtree(trained, ignore_errors=True)
    return report

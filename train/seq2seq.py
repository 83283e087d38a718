"""Seq2seq judge recipe: fine-tune a causal LM to write ``[FEEDBACK] rationale [RESULT] score [END]``.

    judge-train --config configs/train/tiny/seq2seq.yaml                       # CPU, a minute or two
    judge-train --config configs/train/t-lite/seq2seq.yaml --output_dir runs/t-lite-seq2seq
    accelerate launch --num_processes 8 -m train.cli --config configs/train/t-lite/seq2seq.yaml   # 8 GPUs
    torchrun --nproc_per_node 8 -m train.cli --config configs/train/t-lite/seq2seq.yaml          # the same

trl's ``SFTTrainer`` on a conversational prompt-completion dataset: the user turn is the Russian POLLUX judge
prompt (``judge.render_prompt``) and the assistant turn the target (``judge.render_target``), both rendered
through the base model's own chat template, exactly as ``judge.apply_chat`` renders them at serving time.
``completion_only_loss`` puts the cross-entropy on the assistant turn only, including the end-of-turn token after
``[END]`` (``<|im_end|>`` for Qwen2.5): a judge that never learns to stop never writes ``[END]``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from train.config import Seq2SeqConfig, config_to_dict
from train.provenance import RunResult

__all__ = ["main", "sft_dataset"]

logger = logging.getLogger(__name__)


def sft_dataset(rows: list[dict[str, Any]]):
    """Rows as trl's conversational prompt-completion dataset (one user turn, one assistant turn)."""
    from datasets import Dataset

    import judge

    return Dataset.from_list(
        [
            {"prompt": judge.chat_messages(row["prompt"]), "completion": judge.chat_messages(row["prompt"], row["completion"])[1:]}
            for row in rows
        ]
    )


def main(config: Seq2SeqConfig, *, callbacks: tuple = ()) -> RunResult:
    """Train and export a seq2seq judge.

    Args:
        config: a resolved ``Seq2SeqConfig`` (``train.config.load_config``).
        callbacks: extra ``transformers.TrainerCallback`` objects (tests use them to interrupt a run).

    Returns:
        A ``RunResult``; the export is in ``<output_dir>/export``.
    """
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    import judge
    from train import build_data, export, preemption, provenance, trainer_setup

    # ---- config -------------------------------------------------------------------------------------------------
    trainer_setup.setup_logging()
    launch = trainer_setup.launch_arithmetic(config)
    resume_from = trainer_setup.check_output_dir(config)
    logger.info("seq2seq judge: %s -> %s; %s", config.model_name_or_path, config.output_dir, launch.describe())
    if "wandb" in config.report_to:
        os.environ.setdefault("WANDB_DIR", config.output_dir)
    transformers.set_seed(config.seed)

    # ---- data ---------------------------------------------------------------------------------------------------
    base_model = trainer_setup.resolve_base_model(config)
    tokenizer = trainer_setup.load_tokenizer(base_model)
    train_rows, eval_rows, data_report = build_data.rows_for_config(config, tokenizer)
    train_dataset = sft_dataset(train_rows)
    eval_dataset = sft_dataset(eval_rows) if eval_rows else None
    if trainer_setup.is_main_process():
        provenance.write_run_json(
            config.output_dir,
            config=config_to_dict(config),
            launch={**launch.__dict__, "base_model": base_model, "resume_from": str(resume_from) if resume_from else None},
        )
        provenance.update_run_json(config.output_dir, data={**data_report.to_dict(), "n_train": len(train_rows),
                                                            "n_eval": len(eval_rows)})  # fmt: skip

    # ---- model --------------------------------------------------------------------------------------------------
    # The trainer arguments exist before the model is loaded: under ZeRO-3 from_pretrained then partitions the
    # weights as they load (zero.Init) instead of materialising the whole model on every rank.
    args = SFTConfig(
        **trainer_setup.training_kwargs(config, launch, has_eval=eval_dataset is not None),
        max_length=config.max_length,
        completion_only_loss=True,
        packing=config.packing,
        packing_strategy="bfd",
        prediction_loss_only=True,
    )
    trainer_setup.init_distributed(args)  # zero.Init below must see the real world size
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=dtype, attn_implementation=config.attn_implementation)

    # ---- trainer ------------------------------------------------------------------------------------------------
    stopper = preemption.SaveAndStopOnSignal()
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        peft_config=trainer_setup.lora_config(config),
        callbacks=[stopper, *callbacks],
    )

    # ---- train --------------------------------------------------------------------------------------------------
    stopper.install()
    try:
        trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    finally:
        stopper.uninstall()
    result = RunResult(
        output_dir=config.output_dir,
        export_dir=None,
        global_step=trainer.state.global_step,
        final_learning_rate=float(trainer.lr_scheduler.get_last_lr()[0]),
        log_history=list(trainer.state.log_history),
        stopped_by_signal=stopper.received,
    )
    if stopper.stopped_at_step is not None:
        logger.warning("stopped at step %d by a signal; resume with --resume", stopper.stopped_at_step)
        preemption.requeue_slurm_job(stopper)
        return result

    # ---- save ---------------------------------------------------------------------------------------------------
    export_dir = Path(config.output_dir) / "export"
    # The two shortest training rows: rank 0 reloads the export on CPU to compare, and a 7B forward there is slow.
    probe_rows = sorted(train_rows, key=lambda row: len(row["prompt"]) + len(row["completion"]))[:2]
    probe_texts = [judge.apply_chat(tokenizer, row["prompt"], row["completion"]) for row in probe_rows]
    result.export_report = export.export_after_training(
        trainer,
        mode="seq2seq",
        model_cls=AutoModelForCausalLM,
        tokenizer=tokenizer,
        probe_texts=probe_texts,
        base_model=base_model,
        dtype=dtype,
        export_dir=export_dir,
    )
    result.export_dir = str(export_dir)
    if trainer.is_world_process_zero():
        provenance.record_result(config.output_dir, result)
    logger.info("seq2seq judge exported to %s", export_dir)
    return result

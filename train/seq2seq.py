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
from typing import Any

from train.config import Seq2SeqConfig, config_to_dict
from train.provenance import RunResult

__all__ = ["main", "sft_dataset"]

logger = logging.getLogger(__name__)


def sft_dataset(rows: list[dict[str, Any]]):
    """Rows as trl's conversational prompt-completion dataset (one user turn, one assistant turn).

    Each row carries ``chat_template_kwargs`` (thinking off, ``judge.prompts.JUDGE_CHAT_TEMPLATE_KWARGS``), which trl
    passes to the chat template: a Qwen3 base is trained on the very text ``judge.apply_chat`` serves, with the empty
    ``<think>`` block in the (unlabelled) prompt.
    """
    from datasets import Dataset

    import judge
    from judge.prompts import JUDGE_CHAT_TEMPLATE_KWARGS

    return Dataset.from_list(
        [
            {"prompt": judge.chat_messages(row["prompt"]), "completion": judge.chat_messages(row["prompt"], row["completion"])[1:],
             "chat_template_kwargs": dict(JUDGE_CHAT_TEMPLATE_KWARGS)}
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

    from train import build_data, preemption, provenance, trainer_setup

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
    result = trainer_setup.train_and_export(
        trainer, config, stopper=stopper, resume_from=resume_from, mode="seq2seq", model_cls=AutoModelForCausalLM,
        tokenizer=tokenizer, train_rows=train_rows, base_model=base_model, dtype=dtype,
    )
    if result.export_dir is not None:
        logger.info("seq2seq judge exported to %s", result.export_dir)
    return result

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

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from train.config import Seq2SeqConfig
from train.provenance import RunResult

__all__ = ["labelled_positions_only_on_cpu", "main", "sft_dataset"]

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


@contextlib.contextmanager
def labelled_positions_only_on_cpu() -> Iterator[bool]:
    """While open, trl's fused LM head projects only the labelled positions onto the vocabulary on CPU too.

    ``SFTTrainer`` replaces the model's forward with a fused LM head (trl/trainer/utils.py ``add_fused_lm_head``)
    that scores only the positions whose label is not -100 on Triton devices (cuda, xpu) and *every* position
    elsewhere, since on compiling backends such as Neuron a count of labelled positions that changes from batch
    to batch would recompile the kernel's tiles. Eager CPU compiles nothing, and every unlabelled position is
    zeroed afterwards anyway, so the prompt's ~200 tokens were projected onto the 151,665-token vocabulary for
    nothing: the completion is ~30 of a row's ~250 tokens. The choice is trl's private ``_use_triton(device)``,
    looked up when the forward runs; this wraps it so that CPU devices take the compact path as well (CUDA and
    XPU answer as before; the chunked kernel's own Triton-or-torch choice is a separate function, untouched).
    Measured (``bench/train_label_positions.py``, the whole ``judge-train`` of the tiny seq2seq config, 12 steps):
    54.2 and 55.6 CPU-s with every position scored against 25.4 and 23.4 with the labelled ones, the logged losses
    the same to 1e-7. The previous function is put back on exit.

    Yields:
        Whether the wrap is in place: False (and a warning) when the installed trl has no ``_use_triton`` in
        ``trl.trainer.utils``, where training is as correct, only slower on CPU.
    """
    from trl.trainer import utils as trl_utils

    triton_only = getattr(trl_utils, "_use_triton", None)
    if triton_only is None:
        from importlib import metadata

        logger.warning("trl.trainer.utils._use_triton is gone (trl %s): on CPU the fused LM head scores every "
                       "position of a row, not only the labelled ones", metadata.version("trl"))
        yield False
        return

    def compact_on_cpu_too(device) -> bool:
        return device.type == "cpu" or triton_only(device)

    trl_utils._use_triton = compact_on_cpu_too
    try:
        yield True
    finally:
        trl_utils._use_triton = triton_only


def main(config: Seq2SeqConfig, *, callbacks: tuple = ()) -> RunResult:
    """Train and export a seq2seq judge.

    Args:
        config: a resolved ``Seq2SeqConfig`` (``train.config.load_config``).
        callbacks: extra ``transformers.TrainerCallback`` objects (tests use them to interrupt a run).

    Returns:
        A ``RunResult``; the export is in ``<output_dir>/export``.
    """
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from train import build_data, lora, recipe_steps

    # ---- config -------------------------------------------------------------------------------------------------
    run = recipe_steps.prepare(config, "seq2seq judge")

    # ---- data ---------------------------------------------------------------------------------------------------
    train_rows, eval_rows, data_report = build_data.rows_for_config(config, run.tokenizer)
    train_dataset = sft_dataset(train_rows)
    eval_dataset = sft_dataset(eval_rows) if eval_rows else None
    run.record_data({**data_report.to_dict(), "n_train": len(train_rows), "n_eval": len(eval_rows)})

    # ---- model --------------------------------------------------------------------------------------------------
    # Arguments before the model: under ZeRO-3 from_pretrained then partitions the weights as they load.
    args = run.training_arguments(
        SFTConfig,
        has_eval=eval_dataset is not None,
        max_length=config.max_length,
        completion_only_loss=True,
        packing=config.packing,
        packing_strategy="bfd",
        prediction_loss_only=True,
    )
    model = AutoModelForCausalLM.from_pretrained(run.base_model, dtype=run.dtype, attn_implementation=config.attn_implementation)

    # ---- trainer ------------------------------------------------------------------------------------------------
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=run.tokenizer,
        peft_config=lora.lora_config(config),
        callbacks=[run.stopper, *callbacks],
    )

    # ---- train --------------------------------------------------------------------------------------------------
    with labelled_positions_only_on_cpu():
        result = run.train(trainer)
    if run.stopped:
        return result

    # ---- save ---------------------------------------------------------------------------------------------------
    run.export_judge(trainer, result, mode="seq2seq", model_cls=AutoModelForCausalLM, train_rows=train_rows)
    logger.info("seq2seq judge exported to %s", result.export_dir)
    return result

"""Supervised fine-tuning in the integer format (Pollux-4B-Judge's): the target, the rows built from reasoning traces,
what trl's SFTTrainer tokenizes and labels, and the export's manifest that tells judge-serve and judge-eval the format.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_train_integer_sft.py.
"""

from __future__ import annotations

import json


from tests.support.train_integer_sft import COMPLETION_TEXT, REASONING, TRAINING_TEXT, trace_record


def test_seq2seq_recipe_trains_and_exports_an_integer_format_qwen3_judge(tmp_path, qwen3_tokenizer,
                                                                         overfit_qwen3_base_dir):  # fmt: skip
    """judge-train's seq2seq recipe with verdict_format integer, on two traces and a tiny Qwen3: the first example is
    TRAINING_TEXT's layout (thinking on, the trace and the integer labelled), the loss is finite and falls over 4
    steps, and the export's manifest says integer and records the lengths it was trained within (the config's
    max_length, the longer row's completion in tokens), which judge.checkpoints reads back for judge-serve."""
    import math

    from judge.checkpoints import TrainedLengths, checkpoint_trained_lengths, checkpoint_verdict_format
    from tests.support.fixtures_train import OVERFIT_OVERRIDES, TINY_SEQ2SEQ, capture_examples
    from train import seq2seq
    from train.config import load_config

    data = tmp_path / "traces.jsonl"
    # The second trace's 1 agrees with its experts' mode (integer_rows drops a trace that disagrees with its label)
    rows = [trace_record().to_dict(), trace_record(id="item-2#1", item_id="item-2", reasoning="Ошибки есть.",
                                                   reasoning_score=1, expert_scores=[1, 1, 2]).to_dict()]  # fmt: skip
    data.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    config = load_config(TINY_SEQ2SEQ, {**OVERFIT_OVERRIDES, "max_steps": 4, "save_steps": 4, "zero_shot": "refuse",
                                        "output_dir": str(tmp_path / "run"),
                                        "model_name_or_path": str(overfit_qwen3_base_dir), "data": str(data),
                                        "verdict_format": "integer", "disable_tqdm": True})  # fmt: skip
    examples = capture_examples()
    run = seq2seq.main(config, callbacks=(examples,))

    example = examples.examples[0]
    text = qwen3_tokenizer.decode(example["input_ids"])
    assert text in (TRAINING_TEXT, TRAINING_TEXT.replace(REASONING, "Ошибки есть.").replace("\n\n2<|im_end|>", "\n\n1<|im_end|>"))
    first = example["labels"].index(next(label for label in example["labels"] if label != -100))
    assert qwen3_tokenizer.decode(example["input_ids"][first:]).startswith("<think>\n")
    losses = [entry["loss"] for entry in run.log_history if "loss" in entry and "train_loss" not in entry]
    assert len(losses) == 4 and all(math.isfinite(x) for x in losses) and losses[-1] < losses[0], losses
    assert checkpoint_verdict_format(run.export_dir) == "integer"
    longest = len(qwen3_tokenizer(COMPLETION_TEXT, add_special_tokens=False)["input_ids"])  # the first row's
    assert checkpoint_trained_lengths(run.export_dir) == TrainedLengths(config.max_length, longest)

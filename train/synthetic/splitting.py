"""Stage 5, split: Zero-Shot items out, then train / validation by instruction.

Items whose task type or criterion the POLLUX paper held out (``judge.split_of``: the Zero-Shot test) are dropped
unless ``allow_zero_shot``; ``judge.check_no_leakage`` re-checks the training rows before anything is written.
Instructions, not items, are split: all answers and criteria of one instruction land on the same side, so validation
never scores an instruction the model trained on. An instruction is its ``instruction_id`` (read as text) when the row
has one, else its text, and rows sharing either an id or a text are one: ``judge.splits.instruction_groups``, the
grouping the leakage check reads.

Outputs ``train.jsonl``, ``validation.jsonl`` and ``dataset/`` (a ``DatasetDict``) in the POLLUX record layout, ready
for ``judge.load_records(path)`` / ``load_records(folder / "dataset", split="train")`` in the training recipes. A column
whose values share no Arrow type (an ``instruction_id`` of 5 beside "5") is text in ``dataset/``, and said
(``write_stage_outputs``); the JSONL files keep the values as read.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from train.synthetic.config import SplitConfig
from train.synthetic.journal import log, read_input, refuse_later_stage_rows, write_stage_outputs

__all__ = ["split_records", "run_split"]


def split_records(rows: list[dict], config: SplitConfig, source: str | Path = "annotate",
                  row_index: Sequence[int] | None = None) -> tuple[dict[str, list[dict]], list[dict], dict[str, int]]:
    """Drop Zero-Shot items and split the rest by instruction.

    Args:
        source, row_index: where ``rows`` came from, as a ``judge.RecordError`` names a bad one: the input file and
            each row's index in it (``read_input``'s ``InputRows.row_index``: the line number minus one for JSONL);
            None names positions in ``rows``.

    Returns:
        ({"train": rows, "validation": rows}, dropped rows with ``drop_reason`` ``zero_shot:task_type``,
        ``zero_shot:criterion``, or ``zero_shot:instruction``: a row of an instruction another of whose rows is
        held out, {"train": n, "validation": n}: how many instructions, as grouped, each side holds).

    Raises:
        judge.RecordError: a row that is not a valid judged item.
        judge.LeakageError: Zero-Shot items left in train (a bug upstream of this check).
    """
    from judge import ZERO_SHOT, check_no_leakage, load_split_spec, load_taxonomy, records_from_rows
    from judge.splits import instruction_groups, record_task_type, split_of, splits_of

    spec = load_split_spec(config.split_file or None)
    taxonomy = load_taxonomy()
    if row_index is None:
        row_index = range(len(rows))
    elif len(row_index) != len(rows):
        raise ValueError(f"{source}: {len(rows)} rows but {len(row_index)} row indices")
    records = records_from_rows(rows, source=str(source), row_index=row_index)
    kept, dropped = [], []
    # By instruction (judge.splits.splits_of): a held-out criterion's row dropped alone left its instruction's other
    # rows in training, the pairing no later check can see.
    shared = splits_of(records, spec) if not config.allow_zero_shot else [None] * len(records)
    for record, split in zip(records, shared):
        if split == ZERO_SHOT:
            # The task type as split_of resolves it: a group in task_type with the task type in task_subtype (some
            # exports' layout) was held out by its task type but labelled zero_shot:criterion.
            if record_task_type(record, taxonomy) in spec.task_types:
                reason = "zero_shot:task_type"
            else:
                reason = "zero_shot:criterion" if split_of(record, spec) == ZERO_SHOT else "zero_shot:instruction"
            dropped.append({**record.to_dict(), "drop_reason": reason})
        else:
            kept.append(record)

    # One instruction as the leakage check groups it (judge.splits.instruction_groups: an id as its text, so 5 and
    # "5" are one instruction, kept on one side, and one text under two ids is one too; any id sorts beside the
    # instruction texts).
    groups = instruction_groups(kept)
    instructions = sorted(set(groups))
    random.Random(config.seed).shuffle(instructions)
    n_val = round(len(instructions) * config.validation_fraction)
    if config.validation_fraction > 0 and n_val == 0 and len(instructions) >= 2:
        n_val = 1  # a tiny run still gets a validation set
    held = set(instructions[:n_val])
    train = [r for r, group in zip(kept, groups) if group not in held]
    validation = [r for r, group in zip(kept, groups) if group in held]
    check_no_leakage(train, spec, allow_zero_shot=config.allow_zero_shot)
    splits = {"train": [r.to_dict() for r in train], "validation": [r.to_dict() for r in validation]}
    return splits, dropped, {"train": len(instructions) - len(held), "validation": len(held)}


def run_split(config: SplitConfig, input_path: str | Path, out_dir: Path) -> dict:
    """Run stage 5 on the annotations at ``input_path`` into ``out_dir``. Returns the summary.

    Raises:
        ValueError: the input is a file that holds no records (a user's mistake: empty train and validation files
            would pass for a finished stage, and the failure would wait for training, which refuses them).
    """
    inputs = read_input(input_path, "annotate")
    refuse_later_stage_rows(inputs.rows, input_path, "split", "annotate", row_index=inputs.row_index)
    _refuse_split_column(inputs.rows, input_path, inputs.row_index)
    rows = inputs.rows
    if not rows and Path(input_path).is_file():
        raise ValueError(f"--input {input_path}: holds no records (an empty file); nothing to split")
    if not rows:
        # The annotate stage's folder, which kept no item (a teacher whose every verdict failed): a pipeline's outcome,
        # said, and split into the empty files the next stage will refuse with its own message
        log(f"split: the annotate stage at {input_path} kept no item: train and validation are empty")
    splits, dropped, instructions = split_records(rows, config, source=input_path, row_index=inputs.row_index)
    log(f"split: {len(rows)} items -> train {len(splits['train'])}, validation {len(splits['validation'])}, dropped {len(dropped)}")
    kept = [{**row, "split": name} for name, part in splits.items() for row in part]
    counts = {name: len(part) for name, part in splits.items()}
    return write_stage_outputs(
        out_dir, "split", kept, dropped, config, {"items": counts, "instructions": instructions}, splits=splits
    )


def _refuse_split_column(rows: list[dict], source: str | Path, row_index: list[int]) -> None:
    """Refuse a row that already holds a ``split`` column (this stage's own ``split.jsonl``, or data split before):
    the rows written to ``train.jsonl`` and ``validation.jsonl`` keep their columns, so the old side would ride along
    into the new partition and contradict it, and build-data refuses a training row marked for another side.

    Raises:
        judge.RecordError: naming the file, the row and the field ``split``.
    """
    from judge import RecordError

    for position, row in enumerate(rows):
        if "split" in row:
            raise RecordError(str(source), row_index[position], "split",
                              f"the row is already split ({row['split']!r}; the split stage's split.jsonl holds this "
                              "column): give the annotate stage's output, or remove the column")


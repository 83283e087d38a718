"""The split stage's drop reason: a row held out by its task type under its group is labelled by the same task-type
lookup as the split's."""

from __future__ import annotations

import judge

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"


def test_a_row_held_out_by_its_task_type_under_its_group_is_labelled_task_type():
    """A row whose task_type names the group and task_subtype the held-out task type ("AI as a Character" / "Formal
    setting") is held out by its task type (judge.split_of reads that layout), but was labelled zero_shot:criterion."""
    from judge.splits import split_of
    from train.synthetic.config import SplitConfig
    from train.synthetic.splitting import split_records

    row = {"id": "g1", "instruction": "Группа", "answer": "x", "criteria_name": "Грамотность", "rubrics": RUBRICS,
           "task_type": "AI as a Character", "task_subtype": "Formal setting", "expert_scores": [1]}
    assert split_of(judge.records_from_rows([row])[0]) == judge.ZERO_SHOT
    splits, dropped, _ = split_records([row], SplitConfig(validation_fraction=0.0))
    assert [r["drop_reason"] for r in dropped] == ["zero_shot:task_type"] and splits["train"] == []

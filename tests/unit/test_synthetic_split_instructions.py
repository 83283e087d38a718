"""The split stage groups rows by instruction as ``judge.splits.instruction_key`` does (the leakage check's grouping):
an ``instruction_id`` as its text. The stage sorted the raw ids, so an integer id beside a row without one raised
TypeError, a list id was unhashable, and 5 and "5" were two instructions that could land on both sides."""

from __future__ import annotations

import json

from train.synthetic.config import SplitConfig

RUBRICS = "0: есть ошибки\n\n1: ошибок нет"


def _row(rid: str, instruction: str, **extra) -> dict:
    return {"id": rid, "instruction": instruction, "answer": "Ответ.", "criteria_name": "Грамотность",
            "rubrics": RUBRICS, "task_type": "Дать совет", "expert_scores": [1], "criteria_score": 1, **extra}


def test_an_integer_id_beside_a_row_without_one_splits_and_is_counted(tmp_path):
    """``judge-train data split`` on these two rows ended in a traceback; a list id too (summary and split alike)."""
    from train.synthetic.splitting import run_split

    for k, first in enumerate((_row("1", "Первое.", instruction_id=5), _row("1", "Первое.", instruction_id=[5, 6]))):
        path = tmp_path / f"annotate{k}.jsonl"
        rows = [first, _row("2", "Второе.")]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        summary = run_split(SplitConfig(validation_fraction=0.5), path, tmp_path / f"out{k}")
        assert summary["items"] == {"train": 1, "validation": 1}
        assert summary["instructions"] == {"train": 1, "validation": 1}


def test_an_id_given_as_a_number_and_as_text_is_one_instruction_on_one_side():
    """5 and "5" are one instruction for the leakage check (``instruction_key``): the split keeps them together,
    for every seed, and counts them once."""
    from train.synthetic.splitting import split_records

    rows = [_row("a", "Первое.", instruction_id=5), _row("b", "Второе.", instruction_id="5"),
            *(_row(f"o{k}", f"Другое {k}.", instruction_id=f"other-{k}") for k in range(4))]
    for seed in range(20):
        splits, dropped, instructions = split_records(rows, SplitConfig(validation_fraction=0.5, seed=seed))
        assert dropped == [] and sum(map(len, splits.values())) == 6
        assert instructions == {"train": 3, "validation": 2}, seed
        (side,) = [name for name, part in splits.items() if any(r["id"] == "a" for r in part)]
        assert "b" in [r["id"] for r in splits[side]], seed
        assert len({str(r["instruction_id"]) for r in splits["validation"]}) == 2  # of 4 + 1 instructions, rounded


def test_one_text_under_two_ids_lands_on_one_side():
    """The split grouped by instruction_id alone: the same text under two ids (two task types, a merged input) could
    be trained on and validated on; ids and texts are one union now (``judge.splits.instruction_groups``), whitespace
    and case aside."""
    from train.synthetic.splitting import split_records

    rows = [_row(f"r{k}-{dup}", f"Инструкция номер {k}." if dup else f"  инструкция  НОМЕР {k}.", instruction_id=f"i{k}-{dup}")
            for k in range(20) for dup in range(2)]
    for seed in range(5):
        splits, dropped, _ = split_records(rows, SplitConfig(validation_fraction=0.3, seed=seed))
        texts = {name: {" ".join(r["instruction"].split()).casefold() for r in part} for name, part in splits.items()}
        assert dropped == [] and len(texts["validation"]) == 6
        assert not texts["train"] & texts["validation"], seed


def test_a_text_held_out_under_one_id_drops_its_copy_under_another():
    """Zero-Shot by instruction: a text under a held-out task type (Style transfer) and again, under another id, under
    a Standard one leaves neither copy in train."""
    from train.synthetic.splitting import split_records

    text = "Перепиши это письмо в стиле делового отчёта."
    rows = [_row("held", text, instruction_id="a", task_type="Style transfer"), _row("copy", text, instruction_id="b"),
            _row("other", "Другое.", instruction_id="c")]
    splits, dropped, _ = split_records(rows, SplitConfig(validation_fraction=0.0))
    assert [r["id"] for r in splits["train"]] == ["other"]
    assert {r["id"]: r["drop_reason"] for r in dropped} == {"held": "zero_shot:task_type", "copy": "zero_shot:instruction"}

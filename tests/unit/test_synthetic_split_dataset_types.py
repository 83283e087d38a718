"""The split stage's ``dataset/`` copy of a column whose values share no Arrow type (an ``instruction_id`` of 5 beside
"5", an extra column of 1 beside "x"): written as text and said by column, row and types, where pyarrow's refusal
ended the stage (exit 2) naming neither column nor row. The JSONL files keep the values as read."""

from __future__ import annotations

import json

from train.synthetic.config import SplitConfig

RUBRICS = "0: есть ошибки\n\n1: ошибок нет"


def _row(rid: str, instruction: str, **extra) -> dict:
    return {"id": rid, "instruction": instruction, "answer": "Ответ.", "criteria_name": "Грамотность",
            "rubrics": RUBRICS, "task_type": "Дать совет", "expert_scores": [1], "criteria_score": 1, **extra}


def _split(tmp_path, rows: list[dict], fraction: float):
    import datasets

    from train.synthetic.splitting import run_split

    path = tmp_path / "annotate.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    run_split(SplitConfig(validation_fraction=fraction), path, tmp_path / "out")
    return datasets.load_from_disk(str(tmp_path / "out" / "dataset"))


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_an_instruction_id_of_5_beside_5_as_text_is_written_as_text_and_said(tmp_path, capsys):
    dataset = _split(tmp_path, [_row("a", "Первое.", instruction_id=5), _row("b", "Второе.", instruction_id="5")], 0.5)
    assert list(dataset) == ["train"]  # one instruction: both rows on one side
    assert dataset["train"]["instruction_id"] == ["5", "5"]
    assert [r["instruction_id"] for r in _jsonl(tmp_path / "out" / "train.jsonl")] == [5, "5"]
    err = capsys.readouterr().err
    assert "column 'instruction_id' as text" in err
    assert "int at train.jsonl line 1, str at train.jsonl line 2" in err


def test_an_extra_column_of_a_number_and_a_word_is_text_in_every_split(tmp_path, capsys):
    dataset = _split(tmp_path, [_row("a", "Первое.", note=1), _row("b", "Второе.", note="x")], 0.5)
    assert sorted(dataset) == ["train", "validation"]
    notes = sorted([*dataset["train"]["note"], *dataset["validation"]["note"]])
    assert notes == ["1", "x"]
    assert dataset["train"].features == dataset["validation"].features  # one schema, though each split alone had one
    kept = {r["id"]: r["note"] for name in ("train", "validation") for r in _jsonl(tmp_path / "out" / f"{name}.jsonl")}
    assert kept == {"a": 1, "b": "x"}
    err = capsys.readouterr().err
    assert "column 'note' as text" in err and "int at " in err and "str at " in err


def test_a_nested_mixed_column_is_json_text_and_one_of_one_type_keeps_its_type(tmp_path, capsys):
    dataset = _split(tmp_path, [_row("a", "Первое.", tags=[1], n=2), _row("b", "Второе.", tags=["x"], n=3)], 0)
    assert dataset["train"]["tags"] == ["[1]", '["x"]']
    assert dataset["train"]["n"] == [2, 3]
    assert "no one Arrow type holds its values" in capsys.readouterr().err


def test_a_column_the_first_row_lacks_is_kept(tmp_path):
    """``Dataset.from_list`` takes its columns from the first row."""
    dataset = _split(tmp_path, [_row("a", "Первое."), _row("b", "Второе.", note="x")], 0)
    assert dataset["train"]["note"] == [None, "x"]

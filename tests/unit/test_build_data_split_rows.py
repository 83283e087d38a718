"""build-data on the split stage's outputs: ``split.jsonl`` pools the training and validation rows (its ``split``
column says which), so reading it as plain records trains the validation rows; the split folder itself is no table,
and the file its refusal names to give is the training side, ``train.jsonl``, never ``dropped.jsonl``."""

from __future__ import annotations

import json

import pytest

import judge
from train.build_data import main as build_data_main
from train.synthetic.config import SplitConfig

RUBRICS = "0: есть ошибки\n\n1: ошибок нет"


def _row(k: int) -> dict:
    return {"id": f"r{k}", "instruction": f"Инструкция номер {k}.", "answer": "Ответ.", "criteria_name": "Грамотность",
            "rubrics": RUBRICS, "task_type": "Дать совет", "expert_scores": [1],
            "expert_feedback": ["Ошибок нет, текст написан грамотно."], "criteria_score": 1}


@pytest.fixture
def split_folder(tmp_path):
    from train.synthetic.splitting import run_split

    path = tmp_path / "annotate.jsonl"
    path.write_text("".join(json.dumps(_row(k), ensure_ascii=False) + "\n" for k in range(10)), encoding="utf-8")
    out = tmp_path / "split"
    run_split(SplitConfig(validation_fraction=0.3), path, out)
    return out


def test_split_jsonl_is_refused_at_its_first_validation_row(split_folder, capsys):
    path = split_folder / "split.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = next(n for n, line in enumerate(lines, 1) if json.loads(line)["split"] == "validation")
    assert build_data_main(["--data", str(path), "--zero-shot", "drop"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: line {first}: field 'split': " in err
    assert f"({split_folder / 'train.jsonl'})" in err


def test_train_jsonl_of_the_same_split_builds(split_folder, capsys):
    assert build_data_main(["--data", str(split_folder / "train.jsonl"), "--zero-shot", "drop"]) == 0
    assert "7 records" in capsys.readouterr().out


def test_the_split_folder_names_train_jsonl_never_dropped_jsonl(split_folder):
    (split_folder / "dropped.jsonl").write_text("", encoding="utf-8")  # written by the stage; made sure of here
    with pytest.raises(FileNotFoundError) as err:
        judge.load_records(str(split_folder))
    assert f"give the file itself ({split_folder / 'train.jsonl'})" in str(err.value)
    assert "dropped.jsonl" not in str(err.value)

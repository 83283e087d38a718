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


def test_split_refuses_its_own_split_jsonl_by_file_line_and_field(split_folder, tmp_path):
    from train.synthetic.splitting import run_split

    path = split_folder / "split.jsonl"
    with pytest.raises(judge.RecordError) as err:
        run_split(SplitConfig(seed=5), path, tmp_path / "again")
    assert f"{path}: line 1: field 'split': " in str(err.value)
    assert not (tmp_path / "again" / "train.jsonl").exists()


def test_split_refuses_user_rows_that_carry_a_split_column(tmp_path):
    from train.synthetic.splitting import run_split

    path = tmp_path / "export.jsonl"
    rows = [_row(k) for k in range(4)]
    rows[2]["split"] = "test"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(judge.RecordError) as err:
        run_split(SplitConfig(), path, tmp_path / "out")
    assert f"{path}: line 3: field 'split': " in str(err.value)


def test_a_stale_split_column_in_train_jsonl_never_names_the_same_file_to_give(split_folder, capsys):
    path = split_folder / "train.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[0]["split"] = "validation"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert build_data_main(["--data", str(path), "--zero-shot", "drop"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: line 1: field 'split': " in err
    assert f"({path})" not in err
    assert "stale" in err


def test_the_refusal_names_validation_jsonl_for_eval_data(split_folder, capsys):
    assert build_data_main(["--data", str(split_folder / "split.jsonl"), "--zero-shot", "drop"]) == 2
    err = capsys.readouterr().err
    assert f"{split_folder / 'validation.jsonl'}" in err
    assert "eval_data" in err


def test_the_folder_hint_skips_any_dropped_jsonl(tmp_path):
    folder = tmp_path / "h"
    folder.mkdir()
    (folder / "rows.jsonl").write_text("", encoding="utf-8")
    (folder / "rows.dropped.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(FileNotFoundError) as err:
        judge.load_records(str(folder))
    assert f"give the file itself ({folder / 'rows.jsonl'})" in str(err.value)
    assert "dropped" not in str(err.value)

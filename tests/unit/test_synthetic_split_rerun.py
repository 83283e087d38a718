"""A split rerun into the same folder: the outputs are one partition or none (a kill between two files must not leave
one seed's train beside another's validation), a rerun with other split settings is refused without --overwrite (the
settings are in the folder's run key), and an overwrite that fails leaves no summary of the set it discarded."""

from __future__ import annotations

import json

import pytest

from train.synthetic.config import SplitConfig

RUBRICS = "0: есть ошибки\n\n1: ошибок нет"


def _row(k: int) -> dict:
    return {"id": f"r{k}", "instruction": f"Инструкция номер {k}.", "answer": "Ответ.", "criteria_name": "Грамотность",
            "rubrics": RUBRICS, "task_type": "Дать совет", "expert_scores": [1], "criteria_score": 1}


@pytest.fixture
def annotate(tmp_path):
    path = tmp_path / "annotate.jsonl"
    path.write_text("".join(json.dumps(_row(k), ensure_ascii=False) + "\n" for k in range(40)), encoding="utf-8")
    return path


def _instructions(path):
    return {json.loads(line)["instruction"] for line in path.read_text(encoding="utf-8").splitlines()}


def test_a_rerun_killed_between_train_and_validation_leaves_no_mixed_partition(annotate, tmp_path, monkeypatch):
    import train.synthetic.journal as journal
    from train.synthetic.splitting import run_split

    out = tmp_path / "split"
    run_split(SplitConfig(validation_fraction=0.3, seed=0), annotate, out)
    real = journal.rewrite_journal

    def killed_at_validation(path, rows):
        if path.name == "validation.jsonl":
            raise KeyboardInterrupt("killed")
        return real(path, rows)

    monkeypatch.setattr(journal, "rewrite_journal", killed_at_validation)
    with pytest.raises(KeyboardInterrupt):
        run_split(SplitConfig(validation_fraction=0.3, seed=1), annotate, out)
    if (out / "validation.jsonl").exists():
        assert not _instructions(out / "train.jsonl") & _instructions(out / "validation.jsonl")
    assert not (out / "summary.json").exists()  # written last: its absence says the set is unfinished
    assert not (out / "dataset").exists() or not (out / "validation.jsonl").exists()


def test_a_rerun_with_another_seed_needs_overwrite(annotate, tmp_path, capsys):
    from train.synthetic.cli import main

    out = tmp_path / "split"
    argv = ["split", "--input", str(annotate), "--output", str(out)]
    assert main(argv) == 0
    assert main(argv) == 0  # the same settings: rerun as before
    config = tmp_path / "split.yaml"
    config.write_text(json.dumps({"seed": 1}), encoding="utf-8")
    capsys.readouterr()
    assert main([*argv, "--config", str(config)]) == 2
    assert "seed: 0 -> 1" in capsys.readouterr().err
    assert main([*argv, "--config", str(config), "--overwrite"]) == 0


def test_a_failed_overwrite_leaves_no_summary_of_the_set_it_discarded(annotate, tmp_path, capsys):
    from train.synthetic.cli import main

    out = tmp_path / "split"
    assert main(["split", "--input", str(annotate), "--output", str(out)]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**_row(0), "expert_scores": "oops"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["split", "--input", str(bad), "--output", str(out), "--overwrite"]) == 2
    assert "expert_scores" in capsys.readouterr().err
    assert not (out / "split.jsonl").exists()
    assert not (out / "summary.json").exists()  # its presence says a finished set

"""judge-train's Zero-Shot rule by the run's own split: ``split_file`` in the training config.

Every judge-train stage refused or dropped Zero-Shot rows by the packaged split (judge/data/zero_shot.yaml) while
the synthetic stages and judge-eval took another split file: a user who held out task types of their own could not
tell judge-train, which then refused or dropped by the wrong split without a word. The split file here holds out
Editing, a task type the packaged split keeps (Standard), and nothing else: Style transfer, held out by the packaged
split, is Standard under it.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

import judge
from tests.support.train_integer_sft import trace_record
from train.build_data import build_rows, main as build_data_main, rows_for_config, zero_shot_records
from train.config import ClassifierConfig, ConfigError, load_config, zero_shot_split

EDITING_HELD_OUT = "version: editing-held-out\ntask_types:\n  - Editing\ncriteria: []\n"
RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."


@pytest.fixture
def split(tmp_path):
    path = tmp_path / "editing_held_out.yaml"
    path.write_text(EDITING_HELD_OUT, encoding="utf-8")
    return path


def _record(rid: str, task_type: str, instruction: str) -> judge.JudgeRecord:
    # Each on an instruction of its own: rows of one instruction share a split (judge.splits.splits_of).
    return judge.JudgeRecord(id=rid, instruction=instruction, answer="Четыре.", criteria_name="Грамотность",
                             rubrics=RUBRIC, expert_scores=(2.0,), expert_feedback=("Ответ верный и полный.",),
                             criteria_score=2.0, task_type=task_type)  # fmt: skip


def _editing(rid="e1"):
    return _record(rid, "Editing", "Исправь ошибки в тексте: «Мы пошли в магазин.»")


def _style(rid="s1"):
    return _record(rid, "Style transfer", "Перепиши это письмо в стиле делового отчёта.")


def _write(path, records):
    judge.write_jsonl(records, path)
    return str(path)


def test_the_rule_refuses_and_drops_by_the_split_it_is_given(split):
    """With the split file, the Editing record is Zero-Shot and the Style transfer one trains; without it, as before,
    the packaged split holds out Style transfer and keeps Editing."""
    spec = judge.load_split_spec(split)
    records = [_editing(), _style()]
    with pytest.raises(judge.LeakageError, match=r"^1 items belong to the Zero-Shot test .*: e1;"):
        zero_shot_records(records, "refuse", spec)
    kept, held_out = zero_shot_records(records, "drop", spec)
    assert [r.id for r in kept] == ["s1"] and [r.id for r in held_out] == ["e1"]
    zero_shot_records([_style()], "refuse", spec)  # Standard under this split: no refusal
    kept, held_out = zero_shot_records(records, "drop")
    assert [r.id for r in kept] == ["e1"] and [r.id for r in held_out] == ["s1"]
    with pytest.raises(judge.LeakageError, match=r": s1;"):
        zero_shot_records(records, "refuse")


@pytest.mark.parametrize("recipe", ["seq2seq", "regression"])
def test_build_rows_drops_and_counts_the_split_s_rows(split, recipe):
    spec = judge.load_split_spec(split)
    rows, report = build_rows([_editing(), _style()], recipe=recipe, zero_shot="drop", split_spec=spec)
    assert [row["record_id"] for row in rows] == ["s1"]
    assert dict(report.dropped) == {"zero_shot": 1} and report.zero_shot_ids == ["e1"]
    rows, report = build_rows([_editing(), _style()], recipe=recipe, zero_shot="drop")  # the default unchanged
    assert [row["record_id"] for row in rows] == ["e1"] and report.zero_shot_ids == ["s1"]


def test_traces_sft_and_grpo_rows_follow_the_split(split):
    """The integer format's rows (traces SFT) and GRPO's prompts: trace_record is an Editing item."""
    from train.grpo import grpo_rows
    from train.seq2seq import integer_rows

    spec = judge.load_split_spec(split)
    traces = [trace_record()]
    with pytest.raises(judge.LeakageError, match="item-1#0"):
        integer_rows(traces, split_spec=spec)
    rows, report = integer_rows(traces, zero_shot="drop", split_spec=spec)
    assert rows == [] and dict(report.dropped) == {"zero_shot": 1} and report.zero_shot_ids == ["item-1#0"]
    assert len(integer_rows(traces)[0]) == 1  # Standard under the packaged split
    with pytest.raises(judge.LeakageError, match="e1"):
        grpo_rows([_editing(), _style()], split_spec=spec)
    rows, report = grpo_rows([_editing(), _style()], zero_shot="drop", split_spec=spec)
    assert [row["id"] for row in rows] == ["s1"] and dict(report.dropped) == {"zero_shot": 1}
    assert report.zero_shot_ids == ["e1"]


def test_the_config_loads_the_split_file_and_names_it_when_it_is_bad(split, tmp_path):
    config = load_config("configs/train/tiny/seq2seq.yaml", {"split_file": str(split)})
    assert zero_shot_split(config).task_types == {"Editing"} and zero_shot_split(config).criteria == frozenset()
    assert zero_shot_split(load_config("configs/train/tiny/seq2seq.yaml")) == judge.load_split_spec()
    with pytest.raises(ConfigError, match=rf"^split_file: split file {tmp_path / 'none.yaml'} not found"):
        load_config("configs/train/tiny/seq2seq.yaml", {"split_file": str(tmp_path / "none.yaml")})
    typo = tmp_path / "typo.yaml"
    typo.write_text("task_types:\n  - Editting\ncriteria: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^split_file: {typo}: task type 'Editting' is not in the taxonomy$"):
        load_config("configs/train/tiny/grpo.yaml", {"split_file": str(typo)})


def test_the_classifier_recipe_refuses_a_split_file_it_would_not_apply(split):
    """Its rows are split by the packaged split (judge.criteria_auto.labelled): a split_file would be recorded in
    run.json and never applied."""
    with pytest.raises(ConfigError, match=r"^split_file .*: the classifier recipe"):
        ClassifierConfig(split_file=str(split)).validate()


@pytest.mark.parametrize("recipe, settings", [
    # grpo: one prompt a step (4 completions, a group of 4), or the preflight refuses the one record as too few
    ("seq2seq", {}), ("regression", {}), ("grpo", {"global_batch_size": 4}), ("seq2seq", {"verdict_format": "integer"}),
])  # fmt: skip
def test_judge_train_s_preflight_refuses_and_drops_by_the_config_s_split(split, tmp_path, recipe, settings):
    """``judge-train run`` checks the data before anything is written: every recipe that trains on POLLUX-format
    records reads the config's split_file there."""
    from train.cli import check_training_data

    integer = settings.get("verdict_format") == "integer"
    data = _write(tmp_path / "data.jsonl", [trace_record()] if integer else [_editing()])
    named = "item-1#0" if integer else "e1"
    base = dict(settings, data=data, eval_data=None, split_file=str(split))
    with pytest.raises(judge.LeakageError, match=named):
        check_training_data(load_config(f"configs/train/tiny/{recipe}.yaml", dict(base, zero_shot="refuse")))
    with pytest.raises(ConfigError, match=r"^data: no training rows left in .*zero_shot"):
        check_training_data(load_config(f"configs/train/tiny/{recipe}.yaml", dict(base, zero_shot="drop")))
    check_training_data(load_config(f"configs/train/tiny/{recipe}.yaml", dict(settings, data=data, eval_data=None,
                                                                               zero_shot="refuse")))  # fmt: skip


def test_the_recipes_data_steps_drop_by_the_config_s_split(split, tmp_path, qwen_tokenizer, qwen3_tokenizer):
    """The tagged/regression data step (rows_for_config) and the integer one (integer_rows_for_config)."""
    from train.seq2seq import integer_rows_for_config

    data = _write(tmp_path / "data.jsonl", [_editing(), _style()])
    config = load_config("configs/train/tiny/seq2seq.yaml", {"data": data, "eval_data": None, "zero_shot": "drop",
                                                             "split_file": str(split), "max_length": 4096})
    train, _, report = rows_for_config(config, qwen_tokenizer)
    assert [row["record_id"] for row in train] == ["s1"] and report.dropped["zero_shot"] == 1
    traces = _write(tmp_path / "traces.jsonl", [trace_record(), trace_record(
        id="item-2#0", item_id="item-2", task_type="Style transfer", instruction="Перепиши это в деловом стиле.")])
    integer = dataclasses.replace(config, data=traces, verdict_format="integer")
    train, _, report = integer_rows_for_config(integer, qwen3_tokenizer)
    assert [row["id"] for row in train] == ["item-2#0"] and report.zero_shot_ids == ["item-1#0"]


def test_build_data_takes_a_split_file(split, tmp_path, capsys):
    data = _write(tmp_path / "data.jsonl", [_editing(), _style()])
    assert build_data_main(["--data", data, "--split-file", str(split), "--out", str(tmp_path / "rows.jsonl")]) == 2
    assert "e1" in capsys.readouterr().err
    assert build_data_main(["--data", data, "--split-file", str(split), "--zero-shot", "drop",
                            "--out", str(tmp_path / "rows.jsonl")]) == 0  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["record_id"] for row in rows] == ["s1"]
    assert build_data_main(["--data", data, "--split-file", str(tmp_path / "none.yaml")]) == 2
    assert capsys.readouterr().err.startswith(f"judge-train build-data: error: --split-file: split file "
                                              f"{tmp_path / 'none.yaml'} not found")


def test_the_model_card_names_the_split_file(tmp_path):
    """The card says which rows were left out: "Zero-Shot rows: `drop`" alone reads as the packaged split's."""
    from judge.checkpoints import write_manifest
    from train.model_card import render_card

    export = tmp_path / "run" / "export"
    export.mkdir(parents=True)
    write_manifest(export, "seq2seq", generator=".")
    config = {"recipe": "seq2seq", "data": "mine.jsonl", "zero_shot": "drop"}
    (export / "run.json").write_text(json.dumps({"config": config}), encoding="utf-8")
    assert "Zero-Shot rows: `drop`; " in render_card(export)
    (export / "run.json").write_text(json.dumps({"config": dict(config, split_file="my_split.yaml")}), encoding="utf-8")
    assert "Zero-Shot rows: `drop` (split file `my_split.yaml`); " in render_card(export)


def test_a_split_file_that_is_a_folder_or_not_utf8_is_named_for_what_it_is(tmp_path):
    """A folder given as the split file was "not found" (it exists); a split file saved in cp1251 (a Russian
    comment) was Python's decoder message, naming neither the file nor the line. A byte order mark is read."""
    with pytest.raises(FileNotFoundError, match=rf"^split file {tmp_path} is a folder, not a YAML file"):
        judge.load_split_spec(tmp_path)
    text = "version: mine\n# отложенные типы\ntask_types: []\ncriteria: []\n"
    cp1251 = tmp_path / "cp1251.yaml"
    cp1251.write_bytes(text.encode("cp1251"))
    with pytest.raises(ValueError, match=rf"^{cp1251}: not UTF-8 text \(byte 0xee at line 2, column 3\)$"):
        judge.load_split_spec(cp1251)
    bom = tmp_path / "bom.yaml"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert judge.load_split_spec(bom).version == "mine"

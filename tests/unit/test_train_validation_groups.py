"""The validation rows held out of a run's data (``eval_fraction``) are drawn by instruction group
(``judge.splits.instruction_groups``): twins of one instruction, spelt apart by whitespace, case or Unicode
compatibility form or tied by an ``instruction_id`` column, fall on one side; a resumed run keeps the rule it recorded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import unicodedata

import pytest

import judge
from tests.support.sample_training_lines import kept_lines, write_lines
from tests.support.train_integer_sft import trace_record
from train import build_data
from train.build_data import DEFAULT_VALIDATION_UNIT, BuildReport, build_rows, split_rows, validation_unit
from train.seq2seq import integer_rows

RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."


def _record(rid: str, instruction: str, **extra) -> judge.JudgeRecord:
    row = {"id": rid, "instruction": instruction, "answer": "Четыре.", "criteria_name": "Грамотность",
           "rubrics": RUBRIC, "expert_scores": [2, 1], "criteria_score": 1.5, "task_type": "Editing",
           "expert_feedback": ["Всё верно, ошибок нет.", "Есть неточность в ответе."], **extra}  # fmt: skip
    return judge.records_from_rows([row])[0]


def _twin(text: str, k: int) -> str:
    """``text`` spelt apart as a copy-paste spells it: extra whitespace, another case, or full-width letters and
    digits (one NFKC form)."""
    if k % 3 == 0:
        return "  " + text.replace(" ", " \n\t ") + " "
    if k % 3 == 1:
        return text.upper()
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text)


def _sides(rows, unit="instruction_group", fraction=0.2) -> dict[str, set[str]]:
    """record id -> the sides ("train", "eval") its rows landed on."""
    train, held_out = split_rows(rows, fraction, unit)
    sides: dict[str, set[str]] = {}
    for side, part in (("train", train), ("eval", held_out)):
        for row in part:
            sides.setdefault(row["record_id"], set()).add(side)
    return sides


def test_whitespace_case_and_nfkc_twins_land_on_one_side():
    """400 instructions, each given twice (the second spelt apart): every pair on one side, and some pairs held out
    (a hash of the raw text puts most held-out copies' twins in training)."""
    records = []
    for k in range(400):
        text = f"Task {k}: write a short answer about topic {k * 7}."
        twin = _twin(text, k)
        assert twin != text and " ".join(unicodedata.normalize("NFKC", twin).split()).casefold() == text.casefold()
        records += [_record(f"a{k}", text), _record(f"b{k}", twin)]
    rows, _ = build_rows(records, recipe="seq2seq")
    sides = _sides(rows)
    split = [k for k in range(400) if sides[f"a{k}"] != sides[f"b{k}"]]
    assert split == []
    assert 20 < sum(sides[f"a{k}"] == {"eval"} for k in range(400)) < 160


def test_rows_tied_by_an_explicit_instruction_id_land_on_one_side():
    """The synthetic pipeline ties rows of one instruction by an ``instruction_id`` column, whatever their texts."""
    records = [_record(f"{side}{k}", f"Задание {k}, {'кратко' if side == 'a' else 'подробнее, своими словами'}.",
                       instruction_id=f"ins-{k}") for k in range(200) for side in "ab"]  # fmt: skip
    rows, _ = build_rows(records, recipe="regression")
    sides = _sides(rows)
    assert [k for k in range(200) if sides[f"a{k}"] != sides[f"b{k}"]] == []
    assert any(sides[f"a{k}"] == {"eval"} for k in range(200))


def test_integer_trace_rows_of_one_instruction_group_land_on_one_side():
    """The integer format's trace rows are drawn by the same groups (``train.seq2seq.integer_rows``)."""
    records = []
    for k in range(300):
        text = f"Rate answer number {k}."
        records += [trace_record(id=f"a{k}#0", item_id=f"a{k}", instruction=text),
                    trace_record(id=f"b{k}#0", item_id=f"b{k}", instruction=_twin(text, k))]
    rows, _ = integer_rows(records)
    sides = _sides(rows)
    assert len(sides) == 600
    assert [k for k in range(300) if sides[f"a{k}"] != sides[f"b{k}"]] == []
    assert any(sides[f"a{k}"] == {"eval"} for k in range(300))


def test_a_group_is_one_over_every_record_the_run_reads():
    """A chain: a and b share an instruction_id, b and c one text (case apart). Built one by one, each record would
    be its own group; built over the run's records, the three are one."""
    records = [_record("a", "Первый текст.", instruction_id="x"), _record("b", "Второй текст.", instruction_id="x"),
               _record("c", "второй ТЕКСТ.")]
    groups = build_data.InstructionGroups(records)
    assert len({groups(r) for r in records}) == 1
    rows, _ = build_rows(records[2:], recipe="seq2seq", groups=groups)
    assert {row["instruction_group"] for row in rows} == {groups(records[0])}
    with pytest.raises(KeyError, match="'other'"):
        groups(_record("other", "Первый текст."))


def test_eval_data_twins_of_training_instructions_are_counted_as_shared(tmp_path, qwen_tokenizer):
    """eval_data whose instructions are training instructions spelt apart (case, whitespace) shares them: counted in
    run.json's data report, as an exact copy is."""
    lines = kept_lines()[:8]
    data = write_lines(tmp_path / "data.jsonl", lines)
    twins = [{**line, "id": f"twin-{line['id']}", "instruction": "  " + line["instruction"].upper()} for line in lines]
    eval_data = write_lines(tmp_path / "eval.jsonl", twins)
    config = _config(tmp_path, data=str(data), eval_data=str(eval_data))
    _, held_out, report = build_data.rows_for_config(config, qwen_tokenizer)
    assert held_out and report.eval["n_rows_sharing_instructions"] == len(held_out)


def test_integer_eval_traces_twins_of_training_instructions_are_counted_as_shared(tmp_path, qwen3_tokenizer):
    """The integer format's eval traces whose instructions are the training traces' spelt apart (case, whitespace)
    share them: the groups are one over both files, not one set per file."""
    from train.seq2seq import integer_rows_for_config

    traces, eval_traces = tmp_path / "traces.jsonl", tmp_path / "eval-traces.jsonl"
    texts = [f"Исправь ошибки в тексте {k}." for k in range(6)]
    judge.write_jsonl([trace_record(id=f"item-{k}#0", item_id=f"item-{k}", instruction=text)
                       for k, text in enumerate(texts)], traces)
    judge.write_jsonl([trace_record(id=f"twin-{k}#0", item_id=f"twin-{k}", instruction="  " + text.upper())
                       for k, text in enumerate(texts)], eval_traces)
    config = _config(tmp_path, verdict_format="integer", data=str(traces), eval_data=str(eval_traces),
                     eval_fraction=0.0)
    _, held_out, report = integer_rows_for_config(config, qwen3_tokenizer)
    assert len(held_out) == len(texts)
    assert report.eval["n_rows_sharing_instructions"] == len(held_out)


def _config(tmp_path, **fields):
    from train.config import load_config

    return dataclasses.replace(load_config("configs/train/tiny/seq2seq.yaml"), output_dir=str(tmp_path / "run"),
                               **{"eval_data": None, "max_rows": None, "max_length": 4096, **fields})


def test_a_new_run_draws_and_records_instruction_groups(tmp_path, qwen_tokenizer):
    """The default a fresh run records in run.json's data report (``validation_split``) and in its eval source."""
    assert DEFAULT_VALIDATION_UNIT in build_data.VALIDATION_UNITS
    assert validation_unit(_config(tmp_path)) == DEFAULT_VALIDATION_UNIT == "instruction_group"
    assert BuildReport().to_dict()["validation_split"] == "instruction_group"
    _, held_out, report = build_data.rows_for_config(_config(tmp_path, eval_fraction=0.3), qwen_tokenizer)
    data = report.to_dict()
    assert held_out and data["validation_split"] == "instruction_group"
    assert data["eval"]["source"] == "held out of data by instruction_group (eval_fraction 0.3)"


def test_a_resumed_instruction_run_keeps_its_raw_text_assignment_exactly(tmp_path):
    """A --resume of a run that recorded ``instruction`` draws its rows by the raw instruction text's hash, as it
    did: row for row the assignment the run started with (computed here by hand), twins apart included; one that
    recorded ``instruction_group`` keeps it; a run.json with no rule is a run split by record."""
    run = tmp_path / "run"
    run.mkdir()
    resumed = dataclasses.replace(_config(tmp_path), resume=True)
    for recorded, unit in (("instruction", "instruction"), ("instruction_group", "instruction_group"),
                           (None, "record")):  # fmt: skip
        data = {"n_rows": 3, **({} if recorded is None else {"validation_split": recorded})}
        (run / "run.json").write_text(json.dumps({"data": data}), encoding="utf-8")
        assert validation_unit(resumed) == unit

    records = [_record(f"{side}{k}", text if side == "a" else _twin(text, k))
               for k, text in enumerate(f"Task {k}: explain it." for k in range(300)) for side in "ab"]
    rows, _ = build_rows(records, recipe="seq2seq")
    by_text = {r.id: r.instruction for r in records}

    def old_bucket(row) -> float:
        key = hashlib.sha256(by_text[row["record_id"]].encode("utf-8")).hexdigest()[:16]
        return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") / 2**64

    train, held_out = split_rows(rows, 0.2, "instruction")
    assert [row for row in rows if old_bucket(row) < 0.2] == held_out
    assert [row for row in rows if old_bucket(row) >= 0.2] == train
    assert any(_sides(rows, "instruction")[f"a{k}"] != _sides(rows, "instruction")[f"b{k}"] for k in range(300))


def test_an_unknown_recorded_rule_is_refused_naming_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"data": {"validation_split": "answer"}}), encoding="utf-8")
    from train.config import ConfigError

    with pytest.raises(ConfigError, match=r"validation_split 'answer'.*instruction_group.*"
                                          r"start over \(--overwrite-output-dir"):
        validation_unit(dataclasses.replace(_config(tmp_path), resume=True))
    with pytest.raises(ValueError, match="unit 'answer'"):
        split_rows([], 0.2, "answer")


@pytest.mark.parametrize("verdict_format", ["tagged", "integer"])
def test_an_unknown_recorded_rule_is_refused_before_the_data_is_read(tmp_path, monkeypatch, verdict_format):
    """The rule does not depend on the data: a resume that cannot draw its rows again stops before reading them."""
    from train.config import ConfigError
    from train.seq2seq import integer_rows_for_config

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"data": {"validation_split": "answer"}}), encoding="utf-8")

    def read(*args, **kwargs):
        raise AssertionError(f"data read: {args}")

    monkeypatch.setattr(build_data, "load_training_records_report", read)
    config = dataclasses.replace(_config(tmp_path), resume=True, verdict_format=verdict_format)
    rows_for_config = integer_rows_for_config if verdict_format == "integer" else build_data.rows_for_config
    with pytest.raises(ConfigError, match="validation_split 'answer'"):
        rows_for_config(config, None)

"""A JSON value of the wrong kind is named as a data file's author reads JSON ("an object", "a list", "null"), in
every loader's error, never as Python's class ("dict", "list", "NoneType")."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judge.records import JudgeRecord, kind_words, value_words

#: A JSON object, a list and null, each with how the errors name it.
WRONG_KINDS = [({"a": 1}, "an object"), ([1], "a list"), (None, "null")]
PYTHON_NAMES = ("dict", "list", "NoneType", "None")


def _message(call: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as caught:
        call()
    return str(caught.value)


def _jsonl(tmp_path: Path, row: Any) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


_ROW = {"instruction": "Q", "answer": "A", "criteria_name": "c", "rubrics": "0: no\n1: yes", "expert_scores": [1]}


def _records(value: Any, tmp_path: Path) -> str:
    return _message(lambda: JudgeRecord.from_row({**_ROW, "answer": value}, source="rows.jsonl"))


def _records_row(value: Any, tmp_path: Path) -> str:
    return _message(lambda: JudgeRecord.from_row(value, source="rows.jsonl"))


def _records_comment(value: Any, tmp_path: Path) -> str:
    row = {**_ROW, "annotations": [{"score": 1, "comment": value}], "expert_scores": None}
    return _message(lambda: JudgeRecord.from_row(row, source="rows.jsonl"))


def _records_provocative(value: Any, tmp_path: Path) -> str:
    return _message(lambda: JudgeRecord.from_row({**_ROW, "is_provocative": value}, source="rows.jsonl"))


def _predictions(value: Any, tmp_path: Path) -> str:
    from eval.judging.predictions import PredictionRow

    return _message(lambda: PredictionRow.from_json({"id": value}, where="predictions.jsonl: line 1"))


def _pairwise(value: Any, tmp_path: Path) -> str:
    from eval.pairwise.judging import load_pairs

    row = {"instruction": "Q", "answer_1": "A", "answer_2": "B", "rubrics": "-1: A\n0: tie\n1: B", "id": value}
    return _message(lambda: load_pairs(_jsonl(tmp_path, row)))


def _splits(value: Any, tmp_path: Path) -> str:
    from judge.splits import load_split_spec

    path = tmp_path / "split.yaml"
    path.write_text(json.dumps({"task_types": [value], "criteria": []}), encoding="utf-8")
    return _message(lambda: load_split_spec(path))


@dataclass(frozen=True)
class _Reply:
    text: str


def _wire(value: Any, tmp_path: Path) -> str:
    from judge.wire import checked_json_fields

    return _message(lambda: checked_json_fields(_Reply, {"text": value}, "reply", typed=True))


def _expansion(value: Any, tmp_path: Path) -> str:
    from judge.criteria_auto.expansion import _task_fields

    return _message(lambda: _task_fields({"task_type": value}, "rows.jsonl: line 1"))


def _labelled(value: Any, tmp_path: Path) -> str:
    from judge.criteria_auto.labelled import labelled_rows

    return _message(lambda: labelled_rows([{"instruction": "Q", "label": value}], "rows.jsonl"))


def _labelled_file(value: Any, tmp_path: Path) -> str:
    from judge.criteria_auto.labelled import load_labelled

    return _message(lambda: load_labelled([_jsonl(tmp_path, value)]))


def _metrics_json(value: Any, tmp_path: Path) -> str:
    from judge.metrics_json.json_record import count

    return _message(lambda: count(value))


def _journal(value: Any, tmp_path: Path) -> str:
    from judge.plumbing.journal import read_jsonl

    return _message(lambda: read_jsonl(_jsonl(tmp_path, value)))


def _run_folder(value: Any, tmp_path: Path) -> str:
    from judge.plumbing.run_folder import RUN_KEY_FILE, claim_run_folder

    out = tmp_path / "run"
    out.mkdir()
    (out / "progress.jsonl").write_text("{}\n", encoding="utf-8")
    (out / RUN_KEY_FILE).write_text(json.dumps(value), encoding="utf-8")
    return _message(lambda: claim_run_folder(out, {"model": "m"}, ["progress.jsonl"]))


def _rutie(value: Any, tmp_path: Path) -> str:
    from eval.mera.rutie import parse_rutie_row

    row = {"instruction": "{context}\n{question}\n1. {choice1}\n2. {choice2}", "outputs": "1",
           "inputs": {"question": "Q", "choice1": "A", "choice2": "B"},
           "meta": {"dialog_id": 0, "question_id": 0, "use_context": value}}
    return _message(lambda: parse_rutie_row(row, 1))


#: Each module's error for a value of the wrong kind, and what it is given in place of null (with how it is named)
#: where null means "not given" there (a field left out). The "not an object" checks (a row, a journal line,
#: run_key.json) are given an integer in place of the object, which is right there.
CASES: dict[str, tuple[Callable[[Any, Path], str], tuple[Any, str] | None]] = {
    "judge.records (a text field)": (_records, (7, "an integer")),
    "judge.records (a row)": (_records_row, None),
    "judge.records (an annotation's comment)": (_records_comment, (7, "an integer")),
    "judge.records (is_provocative)": (_records_provocative, ("yes", "'yes'")),  # a text says itself
    "eval.judging.predictions": (_predictions, (7, "an integer")),
    "eval.pairwise.judging": (_pairwise, (0.5, "a number")),  # an integer is an id
    "judge.splits": (_splits, None),
    "judge.wire": (_wire, (7, "an integer")),
    "judge.criteria_auto.expansion": (_expansion, (7, "an integer")),
    "judge.criteria_auto.labelled (a row's label)": (_labelled, (7, "an integer")),
    "judge.criteria_auto.labelled (a file's row)": (_labelled_file, (7, "an integer")),
    "judge.metrics_json.json_record": (_metrics_json, None),
    "judge.plumbing.journal": (_journal, None),
    "judge.plumbing.run_folder": (_run_folder, None),
    "eval.mera.rutie (meta.use_context)": (_rutie, None),
}
OBJECT_EXPECTED = {"judge.records (a row)", "judge.criteria_auto.labelled (a file's row)", "judge.plumbing.journal",
                   "judge.plumbing.run_folder"}


@pytest.mark.parametrize("value, words", WRONG_KINDS, ids=["object", "list", "null"])
@pytest.mark.parametrize("module", CASES)
def test_each_module_names_a_wrong_kind_in_json_words(module, value, words, tmp_path):
    error, null_stand_in = CASES[module]
    if value is None and null_stand_in is not None:
        value, words = null_stand_in
    if module in OBJECT_EXPECTED and isinstance(value, dict):
        value, words = 7, "an integer"
    message = error(value, tmp_path)
    assert f"got {words}" in message or f": {words}, not an object" in message, message
    assert not any(f"got {name}" in message or f"JSON {name}," in message for name in (*PYTHON_NAMES, "int")), message


def test_words_for_kinds_and_values():
    assert kind_words(str) == "a string"
    assert kind_words((dict, type(None))) == "an object or null"
    assert [value_words(v) for v in ({}, [], None, True, "x", 2, 2.5)] == \
        ["an object", "a list", "null", "true", "a string", "an integer", "a number"]


def test_the_words_live_beneath_the_contract():
    """judge.plumbing's readers use the words too, and plumbing does not import the contract: the functions live in
    judge.plumbing.json_reading, judge.records re-exports them."""
    from judge.plumbing import json_reading

    assert (json_reading.kind_words, json_reading.value_words) == (kind_words, value_words)

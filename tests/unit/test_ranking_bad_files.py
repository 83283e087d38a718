"""A ranking folder's files read back wrong (cut, edited by hand, from another tool) are errors naming the file, the
line and the field, never a traceback: ``answers.jsonl`` (``eval.ranking.rank.read_answers``) and ``bench.json`` (read
by ``judge-eval compare``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.rank import read_answers

GOOD = {"prompt_id": 1, "model": "m", "answer": "Ответ.", "finish_reason": "stop", "cut_in_thinking": False,
        "error": None, "reason": "", "latency_s": 0.5, "instruction_key": "k"}


@pytest.mark.parametrize(("field", "value", "said"), [("prompt_id", [1], "answers.jsonl: line 2.prompt_id: expected"),
                                                      ("answer", 5, "answers.jsonl: line 2.answer: expected"),
                                                      ("prompt_id", None, "answers.jsonl: line 2.prompt_id: required")])
def test_an_answer_row_of_the_wrong_type_names_file_line_and_field(tmp_path: Path, field: str, value, said) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "prompt_id": 2, field: value}) + "\n",
                    encoding="utf-8")
    with pytest.raises(ValueError, match=said.replace(".", r"\.")):
        read_answers(path)


def test_a_bad_answer_row_is_named_by_its_line_blank_lines_counted(tmp_path: Path) -> None:
    """The row on line 4, after two blank lines, is line 4 (the line an editor shows), not the second row."""
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n\n" + json.dumps({**GOOD, "prompt_id": [2]}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        read_answers(path)
    assert str(caught.value) == f"{path}: line 4.prompt_id: expected int or str, got list '[2]'"


def test_a_well_formed_answers_file_still_reads(tmp_path: Path) -> None:
    """The latest row per prompt_id wins (a failed request superseded by its retry): the journal's rule."""
    path = tmp_path / "answers.jsonl"
    failed = {**GOOD, "answer": None, "error": "request_failed", "reason": "500"}
    path.write_text("".join(json.dumps(row) + "\n" for row in (failed, GOOD)), encoding="utf-8")
    assert read_answers(path)[1].answer == "Ответ."


def _folder(path: Path, bench: object) -> Path:
    path.mkdir()
    (path / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    return path


@pytest.mark.parametrize(("bench", "said"), [
    ([], "expected a JSON object"),
    ({"model": "m"}, "field 'matrix' is missing or not an object"),
    ({"matrix": {"normalize": "zscore"}}, "field 'matrix.normalize' is 'zscore'"),
    ({"matrix": {"normalize": "minmax", "no_answer": "skip"}}, "field 'matrix.no_answer' is 'skip'"),
])
def test_compare_names_a_bench_json_it_cannot_read(tmp_path: Path, capsys, bench: object, said: str) -> None:
    """Before: KeyError 'matrix' or AttributeError ('list' object has no attribute 'get'), a traceback."""
    a, b = _folder(tmp_path / "a", bench), _folder(tmp_path / "b", bench)
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{a / 'bench.json'}: " in err and said in err


def _ranked(tmp_path: Path, item: dict, unjudged: list[dict] | None = None) -> Path:
    """A ranking folder of one judged item (``item`` over a well-formed one) and its verdict, and ``unjudged`` rows."""
    import judge

    folder = tmp_path / "run"
    folder.mkdir()
    record = {"id": "1#0#x", "instruction": "Задание", "answer": "Ответ", "criteria_name": "G",
              "rubrics": "0: плохо\n\n1: средне\n\n2: хорошо", "prompt_id": 1, "meta": "m"}
    (folder / "items.jsonl").write_text(json.dumps({**record, **item}, ensure_ascii=False) + "\n", encoding="utf-8")
    judge.load_records(folder / "items.jsonl")  # the toolkit's loader takes the row: what fails is the ranking's read
    (folder / "predictions.jsonl").write_text(json.dumps({"id": "1#0#x", "raw_output": "[RESULT] 2 [END]", "score": 2,
                                                          "parse_ok": True, "score_source": "verdict"}) + "\n",
                                              encoding="utf-8")
    (folder / "unjudged.jsonl").write_text("".join(json.dumps(row) + "\n" for row in unjudged or []), encoding="utf-8")
    return folder


@pytest.mark.parametrize(("item", "said"), [({"prompt_id": None}, "field 'prompt_id' must be an integer or text, got None"),
                                            ({"prompt_id": [1]}, "field 'prompt_id' must be an integer or text"),
                                            ({"meta": None}, "field 'meta' must be text, got None")])
def test_an_item_without_its_instruction_is_named(tmp_path: Path, item: dict, said: str) -> None:
    """Before: KeyError 'prompt_id' / 'meta' for a missing field, TypeError (unhashable) for a list."""
    from eval.ranking.rank import ranked_items

    folder = _ranked(tmp_path, item)
    with pytest.raises(ValueError, match=f"items.jsonl: item '1#0#x': {said}".replace("(", r"\(").replace("[", r"\[")):
        ranked_items(folder / "items.jsonl", folder / "predictions.jsonl")


def test_an_unjudged_row_with_a_list_for_an_id_is_named(tmp_path: Path) -> None:
    """Before: TypeError (unhashable type: 'list') once the matrix keyed instructions by it."""
    from eval.ranking.rank import ranked_items

    row = {"prompt_id": [2], "meta": "m", "instruction": "И", "reference_answer": "", "criteria_name": "G",
           "rubrics": "0: a\n\n1: b", "status": "empty_answer"}
    folder = _ranked(tmp_path, {}, [row])
    with pytest.raises(ValueError, match=r"unjudged\.jsonl:1: not an unjudged item"):
        ranked_items(folder / "items.jsonl", folder / "predictions.jsonl", unjudged=folder / "unjudged.jsonl")

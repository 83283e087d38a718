"""A ranking folder's files read back wrong (cut, edited by hand, from another tool) are errors naming the file, the
line and the field, never a traceback: ``answers.jsonl`` (``eval.ranking.rank.read_answers``) and ``rank.json`` (read
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
    assert str(caught.value) == f"{path}: line 4.prompt_id: expected an integer or a string, got a list"


def test_a_well_formed_answers_file_still_reads(tmp_path: Path) -> None:
    """The latest row per prompt_id wins (a failed request superseded by its retry): the journal's rule."""
    path = tmp_path / "answers.jsonl"
    failed = {**GOOD, "answer": None, "error": "request_failed", "reason": "500"}
    path.write_text("".join(json.dumps(row) + "\n" for row in (failed, GOOD)), encoding="utf-8")
    assert read_answers(path)[1].answer == "Ответ."


def _folder(path: Path, bench: object) -> Path:
    path.mkdir()
    (path / "rank.json").write_bytes(bench if isinstance(bench, bytes) else json.dumps(bench).encode("utf-8"))
    return path


@pytest.mark.parametrize(("bench", "said"), [
    ([], "expected a JSON object"),
    ({"model": "m"}, "field 'matrix' is missing or not an object"),
    ({"matrix": {"normalize": "zscore"}}, "field 'matrix.normalize' is 'zscore'"),
    ({"matrix": {"normalize": "minmax", "no_answer": "skip"}}, "field 'matrix.no_answer' is 'skip'"),
    (b"\xff\xfe{", "not UTF-8 text (byte 0xff at byte 0)"),
    ({"verdict_reader": "polux", "matrix": {"normalize": "minmax"}},
     "field 'verdict_reader' is 'polux', not one of toolkit, pollux"),
])
def test_compare_names_a_rank_json_it_cannot_read(tmp_path: Path, capsys, bench: object, said: str) -> None:
    """Before: KeyError 'matrix' or AttributeError ('list' object has no attribute 'get'), a traceback; bytes that
    are not UTF-8 and an unknown verdict reader named neither the file nor the field."""
    a, b = _folder(tmp_path / "a", bench), _folder(tmp_path / "b", bench)
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{a / 'rank.json'}: " in err and said in err


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
                                            ({"meta": None}, "field 'meta' must be text, got null")])
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


def _eight(tmp_path: Path) -> tuple[Path, Path]:
    """Runs A and B of one criterion on P1-P8, their rank.json recording the files they rest on, as rank writes it."""
    from eval.ranking.rank import RANKING_RESULT, ranked_files_key
    from tests.support.eval_ranking import write_rank_run

    scale = "0: плохо\n\n1: средне\n\n2: хорошо"
    runs = []
    for name, score in (("a", 0.0), ("b", 2.0)):
        folder = write_rank_run(tmp_path / name, name.upper(), [(p, "m", "X", scale, score) for p in range(1, 9)])
        bench = json.loads((folder / RANKING_RESULT).read_text(encoding="utf-8"))
        bench["content_key"] = ranked_files_key(folder)
        (folder / RANKING_RESULT).write_text(json.dumps(bench), encoding="utf-8")
        runs.append(folder)
    return runs[0], runs[1]


def test_compare_refuses_a_run_changed_since_its_rank_json(tmp_path: Path, capsys) -> None:
    """A rank rerun with --limit 3 rewrites items.jsonl (P4-P8 marked selected: false) before its judge stage: a
    compare in that window rested on 3 of the 8 instructions A's rank.json describes, blaming B's 5 as not scored
    by the other run. Now it is refused in one line naming the folder (exit 2)."""
    a, b = _eight(tmp_path)
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 0  # as written: compared
    capsys.readouterr()
    rows = [json.loads(line) for line in (a / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    (a / "items.jsonl").write_text("".join(json.dumps({**row, **({"selected": False} if row["prompt_id"] > 3 else {})},
                                                      ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    assert main(["compare", str(a), str(b), "--n-boot", "0"]) == 2
    assert capsys.readouterr().err == (f"judge-eval compare: error: {a}: changed since its rank.json was written (a "
                                       "rank rerun in progress or cut short); rerun judge-eval rank on it\n")


def test_a_rank_json_without_the_key_is_read_unchecked_with_a_note(tmp_path: Path, caplog) -> None:
    """A rank.json written before the key: compared from the files as they are, and the log says it is unchecked."""
    import logging

    from eval.ranking.compare import compare_rankings

    a, b = _eight(tmp_path)
    bench = json.loads((a / "rank.json").read_text(encoding="utf-8"))
    del bench["content_key"]
    (a / "rank.json").write_text(json.dumps(bench), encoding="utf-8")
    caplog.set_level(logging.INFO, logger="judge_eval.compare")
    assert compare_rankings(a, b, n_boot=0)["n_instructions"] == 8
    assert [r.getMessage() for r in caplog.records if r.name == "judge_eval.compare"] == [
        f"{a / 'rank.json'}: written before the ranking's result recorded the files it rests on (content_key): not "
        "checked against items.jsonl, predictions.jsonl and unjudged.jsonl as they are now"]

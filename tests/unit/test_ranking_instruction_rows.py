"""`judge-eval rank` refuses, before any answer is paid for, instructions it could never rank: a row without criteria,
and a rubric whose one level cannot normalise a score. Data errors name rows as load_records does: a JSONL row by its
line from 1 (blank lines counted), a table's by its 0-based row index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.rank import load_instructions
from judge.records import RecordError
from tests.support.eval_ranking import LITERACY, Candidate, Judge, instruction_rows, rank_argv, scores_by_output
from tests.support.release_instructions import write_instructions_dataset


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_an_instruction_without_criteria_is_refused_naming_its_row(tmp_path: Path) -> None:
    """``criteria: []`` was accepted, its answer paid for and never judged; now refused: line 2, field criteria."""
    good = {"prompt_id": 1, "instruction": "x", "meta": "m", "criteria": [{"criteria_name": "c", "rubrics": "0: a"}]}
    path = _jsonl(tmp_path / "instructions.jsonl", [good, {**good, "prompt_id": 2, "criteria": []}])
    with pytest.raises(RecordError, match=r"instructions.jsonl: line 2: field 'criteria': is empty") as caught:
        load_instructions(path)
    assert (caught.value.row, caught.value.field) == (1, "criteria")


def test_jsonl_rows_are_named_by_their_line(tmp_path: Path) -> None:
    """The first row is line 1, a line that is not JSON is named by its line too."""
    path = _jsonl(tmp_path / "instructions.jsonl", [{"prompt_id": 1, "instruction": "x", "meta": "m"}])
    with pytest.raises(RecordError, match=r"instructions.jsonl: line 1: field 'criteria': must be a list"):
        load_instructions(path)
    good = {"prompt_id": 1, "instruction": "x", "meta": "m", "criteria": [{"criteria_name": "c", "rubrics": "0: a"}]}
    path = _jsonl(tmp_path / "broken.jsonl", [good, "{not json"])
    with pytest.raises(RecordError, match=r"broken.jsonl: line 2: ") as caught:
        load_instructions(path)
    assert caught.value.row == 1


def test_a_rubric_with_one_level_is_refused_before_any_answer(tmp_path: Path, capsys) -> None:
    """Instruction 7's LITERACY rubric reads one level (1): (s - min) / (max - min) divides by 0. The run stops with
    exit code 2 and a line naming the prompt_id and criterion before the candidate is asked anything (it crashed
    with a traceback at the matrix, every answer and verdict paid for); with --normalize none it ranks."""
    rows = instruction_rows()
    rows[6]["criteria"] = [{"criteria_name": LITERACY, "rubrics": "1: Единственный уровень."}]
    data = write_instructions_dataset(tmp_path / "POLLUX-instructions", rows)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "run")) == 2
        assert cand.bodies("/v1/chat/completions") == [] and judge.bodies("/v1/chat/completions") == []
        err = capsys.readouterr().err
        assert (f"prompt_id 7, criterion '{LITERACY}': its rubric cannot normalise a score on a scale with one level "
                "((1.0,))") in err and "--normalize none" in err and "Traceback" not in err
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "raw", "--normalize", "none")) == 0


def test_a_row_after_a_blank_line_is_named_by_its_line(tmp_path: Path) -> None:
    """A blank line counts, as an editor and load_records count it: the bad row on line 3 is "line 3" (it was "row 2",
    its place among the non-blank rows)."""
    good = {"prompt_id": 1, "instruction": "x", "meta": "m", "criteria": [{"criteria_name": "c", "rubrics": "0: a"}]}
    path = _jsonl(tmp_path / "instructions.jsonl", [good, "", {**good, "prompt_id": 1}])
    with pytest.raises(RecordError, match=r"instructions.jsonl: line 3: field 'prompt_id': 1 repeats line 1$"):
        load_instructions(path)


def test_a_parquet_row_is_named_by_its_row_index(tmp_path: Path) -> None:
    """A Parquet row is named by its 0-based index, as pandas and load_records name it: the second row is "row index
    1" (it was "row 2", a +1 meant for JSONL lines applied to every source)."""
    pd = pytest.importorskip("pandas")
    crit = [{"criteria_name": "c", "rubrics": "0: a"}]
    path = tmp_path / "instructions.parquet"
    pd.DataFrame([{"prompt_id": 1, "instruction": "x", "meta": "m", "criteria": crit},
                  {"prompt_id": 2, "instruction": "", "meta": "m", "criteria": crit}]).to_parquet(path)
    said = r"instructions.parquet: row index 1: field 'instruction': is empty$"
    with pytest.raises(RecordError, match=said) as caught:
        load_instructions(path)
    assert caught.value.row == 1


def test_a_rubric_with_no_levels_is_ranked_raw_and_said(caplog) -> None:
    """Two criteria of instruction 3 and 5 have rubrics with no level POLLUX's reader finds: their scores are kept
    raw, as metrics.py keeps them, among 0-1 scores, and a warning says how many and names the first; under
    --normalize none every score is raw, and nothing is said. A rubric with levels is not counted."""
    import logging

    from eval.ranking.rank import InstructionRow, unnormalisable_rubric

    def row(prompt_id, rubrics):
        return InstructionRow(prompt_id, "x", "", "m", (("c", "0: плохо\n\n1: хорошо"), ("d", rubrics)))

    rows = [row(1, "0: a\n\n2: b"), row(3, "Оцените полноту ответа."), row(5, "Без уровней.")]
    with caplog.at_level(logging.WARNING, logger="judge_eval.rank"):
        unnormalisable_rubric(rows, "minmax", "data.jsonl")
        unnormalisable_rubric(rows, "none", "data.jsonl")
    said = [r.getMessage() for r in caplog.records if r.name == "judge_eval.rank"]
    assert said == ["data: data.jsonl: 2 (instruction, criterion) items (1 criterion) have a rubric with no levels "
                    "read (as POLLUX's score_utils.py reads one), so their scores enter the matrix raw, not normalised "
                    "to 0-1 like the others, as in POLLUX's metrics.py; the first: prompt_id 3, criterion 'd'"]

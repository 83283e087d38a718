"""`judge-eval rank`: instructions the judge is never asked about stay in the matrix and in `compare`.

POLLUX's score.py skips only an answer that is ``None`` and sends ``""`` to its judge (ai-forever/POLLUX
``src/score.py`` at 2e8eb789; answer.py's ``strip_think_tags`` leaves ``""`` for an answer that ended inside
``<think>``). The toolkit's records refuse an empty answer, so the ranking scores it by ``--empty-answer`` (``zero``
by default) and counts it per cell; an instruction whose answer request failed is counted per cell too. Expected
values are derived by hand from the cases of ``tests.support.eval_ranking`` (see the derivation in
tests/unit/test_eval_ranking.py).
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.matrix import RankedItem, pollux_matrix
from tests.support.eval_ranking import (FULLNESS, GEN, LITERACY, SAFE, TECH, Candidate, Judge, rank_argv,
                                       scores_by_output)

#: B's candidate runs out of budget inside its thinking on instruction 4.
OUT_OF_BUDGET = {4: "<think>долго думаю"}


def _rank_a_and_b(tmp_path: Path, data: Path, *extra: str) -> tuple[dict, dict]:
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "a", *extra)) == 0
    with Candidate(override=OUT_OF_BUDGET) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b", "--model-name", "cand-b",
                              *extra)) == 0
        # Nothing of instruction 4 reached the judge: its answer is empty once the thinking is cut.
        asked = [b["messages"][0]["content"] for b in judge.bodies("/v1/chat/completions")]
        assert asked and not any("Инструкция 4:" in prompt for prompt in asked)
    return tuple(json.loads((tmp_path / run / "rank.json").read_text(encoding="utf-8")) for run in "ab")


def _cells_csv(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return {(row["criteria_name"], row["meta"]): row for row in csv.DictReader(handle)}


def test_an_answer_out_of_budget_scores_zero_and_is_counted(tmp_path: Path, data: Path, caplog) -> None:
    """Runs alike but for B's instruction 4, cut inside <think>. B must not score higher.

    By hand (minmax; A as in test_eval_ranking: grand mean 4/11, its prompt 6 empty). B's prompts 4 and 6 are empty
    answers, each criterion 0 (--empty-answer zero, the default):
      SAFE x TECH: p4 0 -> 0 (n 1); LITERACY x TECH: p3 1/2, p4 0, p6 0, p7 1/2 -> 1/4 (n 4);
      FULLNESS x TECH: p3 1/2, p4 0 (its out-of-scale verdict never asked), p5 1/2, p6 0 -> 1/4 (n 4);
      grand mean: GEN 1, 0, 1, 0; TECH 1/2, 0, 0, 1/2 and 1/2, 0, 1/2, 0 -> 4/12 = 1/3 < 4/11.
    """
    caplog.set_level(logging.INFO, logger="judge_eval.rank")
    a, b = _rank_a_and_b(tmp_path, data)
    assert a["matrix"]["grand_mean"] == pytest.approx(4 / 11) and b["matrix"]["grand_mean"] == pytest.approx(1 / 3)
    cells = b["matrix"]["cells"]
    assert cells[SAFE][TECH]["value"] == 0.0 and cells[SAFE][TECH]["n"] == 1
    assert cells[LITERACY][TECH]["value"] == pytest.approx(1 / 4) and cells[LITERACY][TECH]["n"] == 4
    assert cells[FULLNESS][TECH]["value"] == pytest.approx(1 / 4) and cells[FULLNESS][TECH]["n"] == 4
    assert (cells[SAFE][TECH]["n_empty_answer"], cells[LITERACY][TECH]["n_empty_answer"],
            cells[FULLNESS][TECH]["n_empty_answer"]) == (1, 2, 2)
    assert cells["mean_over_criteria"]["mean_over_meta"]["n_empty_answer"] == 5
    assert b["counts"]["n_answer_empty"] == 2 and b["counts"]["n_empty_answer"] == 5
    # cells.csv carries the same counts, column by column.
    rows = _cells_csv(tmp_path / "b" / "cells.csv")
    assert rows[(LITERACY, TECH)]["n_empty_answer"] == "2" and rows[(LITERACY, TECH)]["n"] == "4"
    assert rows[("mean_over_criteria", "mean_over_meta")]["n_empty_answer"] == "5"
    # The summary line names the instructions that were never judged and how they were scored.
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("rank: grand mean 0.3333"))
    assert ("2 with an empty answer (scored 0 on every criterion, --empty-answer zero) [prompt_id 4, 6]" in line
            and "0 without an answer" in line)

    # compare: all 7 instructions are scored by both, and each side's empty answers are listed. Paired per item: A's
    # p4 FULLNESS verdict (5) is out of scale, so B's 0 for it is dropped; every other item of B's p4 equals A's (LITERACY
    # 0 both, SAFE 0 both), so the paired corner is A's own 4/11 on each side: delta 0, and B lost one item.
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "20"]) == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert result["n_instructions"] == 7 and result["empty_answer"] == "zero"
    assert result["a"]["empty_answers"] == [6] and result["b"]["empty_answers"] == [4, 6]
    assert result["a"]["excluded"]["n"] == result["b"]["excluded"]["n"] == 0
    corner = result["cells"]["mean_over_criteria"]["mean_over_meta"]
    assert corner["delta"] == 0.0 and (corner["n"], corner["n_a"], corner["n_b"]) == (11, 11, 12)
    assert (corner["n_dropped_a"], corner["n_dropped_b"]) == (0, 1) and result["b"]["n_dropped"] == 1
    assert result["cells"][FULLNESS][TECH]["n_dropped_b"] == 1
    md = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert "Instructions left out of the comparison: A 0 of 7, B 0 of 7." in md
    assert ("Empty answers (scored 0 on every criterion, unjudged; --empty-answer zero): A 1 (prompt_id 6), "
            "B 2 (prompt_id 4, 6).") in md
    assert "B 2 (prompt_id 4, 6)" in (tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8")


def test_unscored_empty_answers_are_counted_and_compare_names_what_it_left_out(tmp_path: Path, data: Path,
                                                                               capsys) -> None:
    """--empty-answer unscored leaves empty answers out of the scores (A 4/9, B 4/8 = 1/2: the old numbers) but
    counts them per cell, and compare lists, per side, every instruction it did not pair, with why.

    Shared: A scored 1-5 and 7, B 1-3, 5 and 7 -> 5. A leaves out 6 (empty) and 4 (B has no score for it); B
    leaves out 4 and 6 (empty).
    """
    a, b = _rank_a_and_b(tmp_path, data, "--empty-answer", "unscored")
    assert a["matrix"]["grand_mean"] == pytest.approx(4 / 9) and b["matrix"]["grand_mean"] == pytest.approx(1 / 2)
    cells = b["matrix"]["cells"]
    assert cells[LITERACY][TECH]["n"] == 2 and cells[LITERACY][TECH]["n_empty_answer"] == 2  # p3, p7 scored
    assert cells[SAFE][TECH]["n"] == 0 and cells[SAFE][TECH]["n_empty_answer"] == 1
    assert b["matrix"]["empty_answer"] == "unscored"
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "20"]) == 0
    printed = capsys.readouterr().out
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert result["n_instructions"] == 5
    assert result["a"]["excluded"] == {"n": 2, "no_answer": [], "empty_answer": [6], "no_score": [],
                                       "gate_scored_by_one": [], "not_scored_by_other": [4]}
    assert result["b"]["excluded"] == {"n": 2, "no_answer": [], "empty_answer": [4, 6], "no_score": [],
                                       "gate_scored_by_one": [], "not_scored_by_other": []}
    line = ("Instructions left out of the comparison: A 2 of 7 (empty answer, not scored: 1 (prompt_id 6); not "
            "scored by B: 1 (prompt_id 4)), B 2 of 7 (empty answer, not scored: 2 (prompt_id 4, 6)).")
    assert line in (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8") and line in printed
    # Runs that score empty answers differently are not compared.
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "c")) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "c"), "--n-boot", "0"]) == 2
    assert "the runs score empty answers differently (unscored vs zero)" in capsys.readouterr().err


def test_a_failed_answer_is_counted_in_its_cells_and_named_by_compare(tmp_path: Path, data: Path) -> None:
    """An instruction whose answer request failed (exit 3) is counted in each of its criteria's cells (n_no_answer)
    and listed in unjudged.jsonl. By default (--no-answer zero) its criteria score 0, so compare pairs it (all 7
    instructions); with --no-answer unscored it is left out, and compare says so for both sides; runs that score
    failed answers differently are not compared."""
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "a")) == 0
    with Candidate(fail={2}) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b")) == 3
    b = json.loads((tmp_path / "b" / "rank.json").read_text(encoding="utf-8"))
    cells = b["matrix"]["cells"]
    assert [cells[c][GEN]["n_no_answer"] for c in (SAFE, LITERACY, FULLNESS)] == [1, 1, 1]
    assert cells["mean_over_criteria"]["mean_over_meta"]["n_no_answer"] == 3 == b["counts"]["n_no_answer"]
    unjudged = [json.loads(line) for line in (tmp_path / "b" / "unjudged.jsonl").read_text().splitlines()]
    assert {(row["prompt_id"], row["status"]) for row in unjudged} == {(2, "no_answer"), (6, "empty_answer")}
    from eval.ranking.compare import compare_rankings

    result = compare_rankings(tmp_path / "a", tmp_path / "b", n_boot=0)
    assert result["n_instructions"] == 7 and result["no_answer"] == "zero" and b["matrix"]["no_answer"] == "zero"
    assert result["a"]["excluded"]["n"] == result["b"]["excluded"]["n"] == 0
    # A's prompt 2 is gated (SAFE 1): its LITERACY and FULLNESS are 0, as B's unanswered ones: the cells agree.
    assert result["cells"][LITERACY][GEN]["delta"] == 0.0 and result["cells"][LITERACY][GEN]["n"] == 2
    with Candidate(fail={2}) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "c", "--no-answer", "unscored")) == 3
    with pytest.raises(ValueError, match=r"score failed answers differently \(zero vs unscored\); rerun one with "
                                         "--no-answer"):
        compare_rankings(tmp_path / "a", tmp_path / "c", n_boot=0)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "a2", "--no-answer", "unscored")) == 0
    result = compare_rankings(tmp_path / "a2", tmp_path / "c", n_boot=0)
    assert result["n_instructions"] == 6
    assert result["a"]["excluded"]["not_scored_by_other"] == [2] and result["b"]["excluded"]["no_answer"] == [2]


def test_matrix_scores_an_empty_answer_by_the_setting() -> None:
    """One instruction scored (LITERACY 2 on 0..2, SAFE 0), one empty answer (LITERACY, SAFE, FULLNESS 1..3).

    zero: LITERACY (1 + 0)/2 = 1/2 (n 2), SAFE 0 (n 2: the empty one's binary score is 0, no gate), FULLNESS 0
    (n 1); grand mean over non-binary scores 1, 0, 0 = 1/3. unscored: LITERACY 1, SAFE 0 (n 1), no FULLNESS row
    (its one item was never scored: counted in the corner only); grand mean 1. none: the raw 2 and the zeros;
    the colour scale is the rubrics' range, 0 to 3.
    """
    items = [RankedItem(1, "m", LITERACY, (0, 1, 2), 2.0), RankedItem(1, "m", SAFE, (0, 1), 0.0),
             *(RankedItem(2, "m", c, levels, None, "empty_answer")
               for c, levels in ((LITERACY, (0, 1, 2)), (SAFE, (0, 1)), (FULLNESS, (1, 2, 3))))]
    zero = pollux_matrix(items, n_boot=0)
    assert zero.rows == [SAFE, LITERACY, FULLNESS, "mean_over_criteria"]  # sorted: Б < Г < П
    assert zero.values[:, 0].tolist() == pytest.approx([0.0, 0.5, 0.0, (0.5 + 0.0) / 2])
    assert zero.grand_mean == pytest.approx(1 / 3) and zero.n[:3, 0].tolist() == [2, 2, 1]
    assert zero.failed["empty_answer"][:, 0].tolist() == [1, 1, 1, 3] and zero.n_instructions == 2
    unscored = pollux_matrix(items, n_boot=0, empty_answer="unscored")
    assert unscored.rows == [SAFE, LITERACY, "mean_over_criteria"] and unscored.grand_mean == 1.0
    assert unscored.failed["empty_answer"][-1, -1] == 3 and unscored.n_instructions == 1
    raw = pollux_matrix(items, n_boot=0, normalize="none")
    assert raw.values[1, 0] == pytest.approx(1.0) and raw.scale == (0.0, 3.0)
    assert zero.scale == (0.0, 1.0) and zero.to_json()["scale"] == [0.0, 1.0]
    with pytest.raises(ValueError, match="empty_answer: 'judge' is not one of zero, unscored"):
        pollux_matrix(items, empty_answer="judge")


def test_an_empty_answer_without_thinking_is_counted_as_one_cut_in_thinking(tmp_path: Path, data: Path) -> None:
    """A candidate that answers nothing at all — content "" (instruction 4), only white space (7), or null (3) —
    is not sent to the judge (the toolkit's records refuse an empty answer, as ``judge-eval run`` refuses such a
    row; POLLUX's score.py would send ""), is not a failed request (exit 0, kept on a resume, never retried), and is
    counted exactly as an answer cut inside its thinking (6): status ``empty_answer`` in answers' counts, in
    ``unjudged.jsonl`` and in the cells, scored 0 on every criterion under ``--empty-answer zero``."""
    nothing = {4: "", 7: " \n\t ", 3: None}
    with Candidate(override=nothing) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "run")) == 0
        asked = [b["messages"][0]["content"] for b in judge.bodies("/v1/chat/completions")]
        assert asked and not any(f"Инструкция {pid}:" in prompt for prompt in asked for pid in (3, 4, 6, 7))
        n_asked = len(cand.bodies("/v1/chat/completions"))
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "run")) == 0
        assert len(cand.bodies("/v1/chat/completions")) == n_asked  # an answer, if an empty one: not asked again
    answers = [json.loads(line) for line in (tmp_path / "run" / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    empty = {row["prompt_id"]: row for row in answers if row["prompt_id"] in (3, 4, 7)}
    assert {pid: (row["answer"], row["error"]) for pid, row in empty.items()} == {3: ("", None), 4: ("", None),
                                                                                   7: ("", None)}
    unjudged = [json.loads(line) for line in (tmp_path / "run" / "unjudged.jsonl").read_text(encoding="utf-8")
                .splitlines()]
    assert sorted({(row["prompt_id"], row["status"]) for row in unjudged}) == [
        (3, "empty_answer"), (4, "empty_answer"), (6, "empty_answer"), (7, "empty_answer")]
    bench = json.loads((tmp_path / "run" / "rank.json").read_text(encoding="utf-8"))
    # criteria: 3 and 6 two each, 4 three, 7 one
    assert bench["counts"]["n_answer_empty"] == 4 and bench["counts"]["n_empty_answer"] == 8
    cells = bench["matrix"]["cells"]
    assert cells[LITERACY][TECH]["n_empty_answer"] == 4 and cells[LITERACY][TECH]["value"] == 0.0
    assert cells[SAFE][TECH]["n_empty_answer"] == 1 and cells[FULLNESS][TECH]["n_empty_answer"] == 3


def test_matrix_scores_a_failed_answer_by_the_setting() -> None:
    """A failed answer request must not help a candidate: POLLUX's runner judges "" for it (src/utils/openai_runner.py
    at 2e8eb789). One instruction answered (LITERACY 2 on 0..2, normalised 1), one whose request failed
    (LITERACY). zero (default): LITERACY (1 + 0) / 2 = 1/2, n 2, n_no_answer 1, 2 instructions; unscored: LITERACY
    1 over the answered one alone (the old ranking, where failing the hard prompt paid), still n_no_answer 1."""
    items = [RankedItem(1, "m", LITERACY, (0, 1, 2), 2.0), RankedItem(2, "m", LITERACY, (0, 1, 2), None, "no_answer")]
    zero = pollux_matrix(items, n_boot=0)
    assert zero.values[0, 0] == 0.5 and zero.n[0, 0] == 2 and zero.failed["no_answer"][0, 0] == 1
    assert zero.n_instructions == 2 and zero.to_json()["no_answer"] == "zero"
    unscored = pollux_matrix(items, n_boot=0, no_answer="unscored")
    assert unscored.values[0, 0] == 1.0 and unscored.n[0, 0] == 1 and unscored.failed["no_answer"][0, 0] == 1
    with pytest.raises(ValueError, match="no_answer: 'judge' is not one of zero, unscored"):
        pollux_matrix(items, no_answer="judge")


def test_an_unjudged_row_keeps_line_separators_of_its_instruction(tmp_path: Path) -> None:
    """An instruction holding U+2028, U+2029 and U+0085 (written as they are, ensure_ascii off) and a lone surrogate
    (what a JSON "\\ud800" escape reads as), whose answer failed: its unjudged row reads back whole, the same text.
    Read by str.splitlines, each separator cut the row and the file was blamed ("invalid JSON")."""
    from eval.ranking.rank import InstructionRow, ranked_items, read_unjudged, write_items

    text = "Строка одна\u2028строка две\u2029абзац\u0085конец \ud800"
    row = InstructionRow(prompt_id=7, instruction=text, reference_answer="", meta="m",
                         criteria=(("Грамотность", "0: плохо\n\n1: хорошо"),))
    path = tmp_path / "unjudged.jsonl"
    counts = write_items([row], {}, tmp_path / "items.jsonl", unjudged=path)
    assert counts == {"n_no_answer": 1, "n_empty_answer": 0, "n_items": 0, "n_kept": 0}
    assert path.read_bytes().count(b"\n") == 1  # one row, one line
    assert read_unjudged(path) == [{"prompt_id": 7, "meta": "m", "instruction": text, "reference_answer": "",
                                    "criteria_name": "Грамотность", "rubrics": "0: плохо\n\n1: хорошо",
                                    "status": "no_answer"}]
    (item,) = ranked_items(tmp_path / "items.jsonl", tmp_path / "predictions.jsonl", unjudged=path)
    assert (item.prompt_id, item.criteria_name, item.status, item.score) == (7, "Грамотность", "no_answer", None)

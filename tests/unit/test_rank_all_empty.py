"""`judge-eval rank` of a candidate with no answer to judge: every answer empty once thinking is stripped (a
reasoning model always cut inside ``<think>``), or empty and failed. The judge is asked nothing; the matrix is the
unjudged items' alone, scored by ``--empty-answer`` / ``--no-answer`` (0 on every criterion by default), so the
candidate still gets its rank.json and reaches ``compare``.

Expected values by hand, from the cases of ``tests.support.eval_ranking`` (items per cell, every one scored 0):
  SAFE (binary, left out of the grand mean): GEN p1, p2 -> n 2; TECH p4 -> n 1.
  LITERACY: GEN p1, p2 -> n 2; TECH p3, p4, p5, p6, p7 -> n 5.
  FULLNESS: GEN p1, p2 -> n 2; TECH p3, p4, p5, p6 -> n 4.
  16 items in all; the grand mean is over the 13 non-binary ones: 0/13 = 0.0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.compare import compare_rankings
from tests.support.eval_ranking import (CASES, FULLNESS, GEN, LITERACY, SAFE, TECH, Candidate, Judge, rank_argv,
                                       scores_by_output)

#: Every instruction answered inside an unclosed <think>: empty once stripped.
ALL_CUT = {pid: "<think>рассуждаю и не заканчиваю" for pid in CASES}


def _bench(folder: Path) -> dict:
    return json.loads((folder / "rank.json").read_text(encoding="utf-8"))


def test_every_answer_empty_gives_a_matrix_of_zeros_without_asking_the_judge(tmp_path: Path, data: Path) -> None:
    with Candidate(override=ALL_CUT) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b")) == 0
        assert judge.bodies("/v1/chat/completions") == []
        # A rerun (empty answers are final) gives the same matrix, not an error.
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b")) == 0
    b = _bench(tmp_path / "b")
    assert b["matrix"]["grand_mean"] == 0.0
    assert b["counts"]["n_answer_empty"] == 7 and b["counts"]["n_empty_answer"] == 16
    assert b["counts"]["n_items"] == 0 and b["counts"]["n_answer_failed"] == 0
    cells = b["matrix"]["cells"]
    expected = {(SAFE, GEN): 2, (SAFE, TECH): 1, (LITERACY, GEN): 2, (LITERACY, TECH): 5, (FULLNESS, GEN): 2,
                (FULLNESS, TECH): 4}
    for (criterion, meta), n in expected.items():
        cell = cells[criterion][meta]
        assert (cell["value"], cell["n"], cell["n_empty_answer"]) == (0.0, n, n), (criterion, meta)
    corner = cells["mean_over_criteria"]["mean_over_meta"]
    assert (corner["value"], corner["n"], corner["n_empty_answer"]) == (0.0, 13, 16)
    for name in ("matrix.csv", "cells.csv", "report.html", "run.json"):
        assert (tmp_path / "b" / name).is_file(), name

    # It reaches compare: against A (grand mean 4/11, test_eval_ranking's derivation), B - A is -4/11. Its judge was
    # never asked, so its settings differ from A's judge's and the comparison needs --allow-other-judge.
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "a")) == 0
    result = compare_rankings(tmp_path / "a", tmp_path / "b", n_boot=0, allow_other_judge=True)
    corner = result["cells"]["mean_over_criteria"]["mean_over_meta"]
    assert corner["a"] == pytest.approx(4 / 11) and corner["b"] == 0.0 and corner["delta"] == pytest.approx(-4 / 11)
    assert result["b"]["empty_answers"] == list(range(1, 8))


def test_every_answer_empty_and_unscored_is_refused_naming_them(tmp_path: Path, data: Path, capsys) -> None:
    with Candidate(override=ALL_CUT) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b", "--empty-answer", "unscored")) == 2
    err = capsys.readouterr().err
    assert "no verdict was scored" in err and "'empty_answer': 16" in err
    assert not (tmp_path / "b" / "rank.json").exists()


def test_a_failed_answer_among_empty_ones_still_exits_3(tmp_path: Path, data: Path) -> None:
    """Prompt 2's request fails (its 3 criteria n_no_answer), the other 6 are empty (13 items): all scored 0."""
    with Candidate(fail={2}, override=ALL_CUT) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b")) == 3
        assert judge.bodies("/v1/chat/completions") == []
    b = _bench(tmp_path / "b")
    assert b["matrix"]["grand_mean"] == 0.0
    assert (b["counts"]["n_answer_failed"], b["counts"]["n_no_answer"], b["counts"]["n_empty_answer"]) == (1, 3, 13)
    corner = b["matrix"]["cells"]["mean_over_criteria"]["mean_over_meta"]
    assert (corner["n"], corner["n_no_answer"], corner["n_empty_answer"]) == (13, 3, 13)


def test_a_later_run_with_answers_judges_them_in_the_same_folder(tmp_path: Path, data: Path) -> None:
    """--limit 1 with prompt 1's answer empty judges nothing; --limit 3 on the same folder then judges prompts 2 and
    3 (the folder holds no verdict progress of unknown settings) and keeps prompt 1 scored 0."""
    with Candidate(override={1: ALL_CUT[1]}) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b", "--limit", "1")) == 0
        assert judge.bodies("/v1/chat/completions") == []
        assert _bench(tmp_path / "b")["matrix"]["grand_mean"] == 0.0
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b", "--limit", "3")) == 0
        assert len(judge.bodies("/v1/chat/completions")) == 5  # prompt 2's three criteria, prompt 3's two
    counts = _bench(tmp_path / "b")["counts"]
    assert (counts["n_answer_empty"], counts["n_empty_answer"], counts["n_items"]) == (1, 3, 5)

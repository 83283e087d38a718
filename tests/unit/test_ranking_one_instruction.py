"""A ranking of one instruction has no interval, and says it is the one instruction, not the resamples.

With one instruction the matrix draws no resample (``n_boot`` is 0 whatever ``--n-boot`` asked), and each cell's
``why_no_ci`` said "no resamples" while the page said "0 bootstrap resamples over 1 instructions": both read as if
``--n-boot 0`` had been given.
"""

from __future__ import annotations

from pathlib import Path

from eval.ranking.compare import compare_rankings, render_ranking_compare_markdown
from eval.ranking.matrix import RankedItem, pollux_matrix, pollux_scale_levels
from eval.ranking.report import render_ranking_compare_page, render_ranking_page
from tests.support.eval_ranking import write_rank_run

RUBRIC = "0: нет\n\n1: частично\n\n2: да"
X = pollux_scale_levels(RUBRIC)  # 0..2


def test_one_instruction_says_why_it_has_no_interval() -> None:
    """P1 scores X 2 and Y 1 (minmax 1 and 1/2): every cell rests on 1 instruction, asked for 1000 resamples."""
    matrix = pollux_matrix([RankedItem(1, "m", "X", X, 2.0), RankedItem(1, "m", "Y", X, 1.0)], n_boot=1000)
    assert (matrix.n_instructions, matrix.n_boot) == (1, 0)
    corner = matrix.cell("mean_over_criteria", "mean_over_meta")
    assert corner["value"] == 0.75 and corner["ci"] == [None, None]
    assert corner["why_no_ci"] == "rests on 1 instruction; an interval needs at least 2"
    assert matrix.cell("X", "m")["why_no_ci"] == "rests on 1 instruction; an interval needs at least 2"
    result = {"model": "cand", "judge": "j", "data": "d", "counts": {"n_instructions": 1, "n_items": 2},
              "matrix": matrix.to_json()}
    page = render_ranking_page(result)
    assert "no interval: the matrix rests on 1 instruction and an interval needs at least 2" in page
    assert "0 bootstrap resamples" not in page
    # Two instructions with --n-boot 0: "no resamples" is the cause, and the page gives the count asked.
    two = pollux_matrix([RankedItem(1, "m", "X", X, 2.0), RankedItem(2, "m", "X", X, 0.0)], n_boot=0)
    assert two.cell("X", "m")["why_no_ci"] == "no resamples"
    assert "0 bootstrap resamples over 2 instructions" in render_ranking_page({**result, "matrix": two.to_json()})


def test_a_comparison_of_one_instruction_says_why_it_has_no_interval(tmp_path: Path) -> None:
    """Two runs sharing P1 only (A X 2, B X 1): delta (1/2 - 1) = -1/2, no interval; compare.md and compare.html
    say it is the one instruction, not "0 paired resamples"."""
    a = write_rank_run(tmp_path / "a", "A", [(1, "m", "X", RUBRIC, 2.0)])
    b = write_rank_run(tmp_path / "b", "B", [(1, "m", "X", RUBRIC, 1.0)])
    result = compare_rankings(a, b, n_boot=1000)
    assert (result["n_boot"], result["cells"]["X"]["m"]["delta"], result["cells"]["X"]["m"]["ci"]) == (0, -0.5,
                                                                                                      [None, None])
    said = "no paired resamples: an interval needs at least 2 instructions both runs scored"
    markdown, page = render_ranking_compare_markdown(result), render_ranking_compare_page(result)
    assert said in markdown and said in page
    assert "0 paired resamples" not in markdown + page

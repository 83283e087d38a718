"""What a comparison of rank runs says beyond its tables: each run's failed answers (scored 0 under the default
``--no-answer zero``) counted and named per run, in a two-run compare and in a leaderboard, in the files and on the
console; a leaderboard whose ranks go backwards down its table (ordered by mean, ranked by calls) saying so where it
happens; and the console's count of calls in distinct tests, a margin that is another cell under another name
counted once."""

from __future__ import annotations

import json
from pathlib import Path

from eval.cli import main
from eval.ranking.compare import compare_rankings, render_ranking_compare_markdown
from eval.ranking.leaderboard import leaderboard, render_leaderboard_markdown, render_leaderboard_page
from tests.support.eval_ranking import write_rank_run

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"


def _unjudged(folder: Path, prompt_ids, status: str) -> None:
    rows = [{"prompt_id": p, "meta": "m", "instruction": f"Задание {p}", "reference_answer": "", "criteria_name": "X",
             "rubrics": SCALE, "status": status} for p in prompt_ids]
    (folder / "unjudged.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                           encoding="utf-8")


def _runs(tmp_path: Path, failed=(9, 10), n: int = 10, empty=()) -> list[str]:
    """A scores 2 on the instructions whose answer came back, its others' answer requests failed (no_answer rows);
    B and C score 1 on all ``n`` but C's ``empty`` (answers that came back empty: empty_answer rows)."""
    runs = []
    for name, score, unjudged, status in (("A", 2.0, failed, "no_answer"), ("B", 1.0, (), ""),
                                          ("C", 1.0, empty, "empty_answer")):
        ids = [p for p in range(1, n + 1) if p not in unjudged]
        folder = write_rank_run(tmp_path / name, name, [(p, "m", "X", SCALE, score) for p in ids])
        if unjudged:
            _unjudged(folder, unjudged, status)
        runs.append(str(folder))
    return runs


def test_two_runs_count_and_name_each_sides_failed_answers(tmp_path):
    a, b, _ = _runs(tmp_path)
    result = compare_rankings(a, b, n_boot=200)
    assert result["a"]["failed_answers"] == [9, 10] and result["b"]["failed_answers"] == []
    md = render_ranking_compare_markdown(result)
    assert ("Failed answers (no answer to judge: its request failed, or the instruction was too long; scored 0 on "
            "every criterion, unjudged; --no-answer zero): A 2 (prompt_id 9, 10), B 0.") in md


def test_a_leaderboard_counts_and_names_each_runs_failed_and_empty_answers(tmp_path):
    runs = _runs(tmp_path, empty=[3])
    result = leaderboard(runs, n_boot=200)
    by_model = {m["model"]: m for m in result["models"]}
    assert by_model["A"]["failed_answers"] == [9, 10] and by_model["B"]["failed_answers"] == []
    assert by_model["C"]["empty_answers"] == [3] and by_model["A"]["empty_answers"] == []
    md = render_leaderboard_markdown(result)
    failed = next(line for line in md.splitlines() if line.startswith("Failed answers"))
    assert "--no-answer zero" in failed and "A (" in failed and ") 2 (prompt_id 9, 10)" in failed
    assert ") 0" in failed.split("prompt_id 9, 10)")[1]  # B and C: none
    empty = next(line for line in md.splitlines() if line.startswith("Empty answers"))
    assert "--empty-answer zero" in empty and ") 1 (prompt_id 3)" in empty
    assert "2 (prompt_id 9, 10)" in render_leaderboard_page(result)


def test_a_long_list_of_failed_answers_is_cut_saying_how_many_more(tmp_path):
    a, b, _ = _runs(tmp_path, failed=range(3, 16), n=16)
    md = render_ranking_compare_markdown(compare_rankings(a, b, n_boot=200))
    assert "A 13 (prompt_id 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, and 3 more), B 0." in md


def test_the_leaderboard_console_names_the_failed_answers(tmp_path, capsys):
    runs = _runs(tmp_path)
    assert main(["compare", *runs, "--out", str(tmp_path / "board"), "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    failed = next(line for line in out.splitlines() if line.startswith("Failed answers"))
    assert "2 (prompt_id 9, 10)" in failed


def test_a_rank_above_the_rank_of_a_candidate_listed_higher_is_said_where_it_happens(tmp_path):
    """A all 2, B half 2 and half 1, C all 1, D 2 on 5 of 12 and 0 on 7: by mean A 1, B 0.75, C 0.5, D 0.417. A-C
    moves 12 instructions (exact p 2/4096, called), A-D only 7 (p at least 2/128, over 0.05/6: not called), so D
    holds rank 1 below C's rank 2: a rank counts the calls above a candidate, the table is in order of mean."""
    scores = {"A": [2] * 12, "B": [2] * 6 + [1] * 6, "C": [1] * 12, "D": [2] * 5 + [0] * 7}
    runs = [str(write_rank_run(tmp_path / k, k, [(p + 1, "m", "X", SCALE, float(s)) for p, s in enumerate(v)]))
            for k, v in scores.items()]
    result = leaderboard(runs, n_boot=2000)
    assert [(m["model"], m["rank"]) for m in result["models"]] == [("A", 1), ("B", 1), ("C", 2), ("D", 1)]
    md = render_leaderboard_markdown(result)
    assert "a candidate whose pairs are less certain can hold a better rank than one listed above it" in md
    inverted = next(line for line in md.splitlines() if line.startswith("Ranks out of the table's order"))
    assert "D (" in inverted and "rank 1" in inverted and "C (" in inverted and "rank 2" in inverted


def test_the_same_scores_on_a_board_of_three_call_a_over_d(tmp_path):
    """Without B the board makes m = 3 calls: A-D's exact p 2/128 is below 0.05/3, so A is called above D as well as
    above C, and D shares C's rank 2; the example in docs/ranking.md needs its fourth candidate."""
    scores = {"A": [2] * 12, "C": [1] * 12, "D": [2] * 5 + [0] * 7}
    runs = [str(write_rank_run(tmp_path / k, k, [(p + 1, "m", "X", SCALE, float(s)) for p, s in enumerate(v)]))
            for k, v in scores.items()]
    result = leaderboard(runs, n_boot=2000)
    assert [(m["model"], m["rank"]) for m in result["models"]] == [("A", 1), ("C", 2), ("D", 2)]
    a_d = next(p for p in result["pairs"] if p["a"].endswith("/A") and p["b"].endswith("/D"))
    assert a_d["p_value"] == 2 / 128 and a_d["verdict"] == "B lower"


def test_ranks_in_the_tables_order_add_no_such_line(tmp_path):
    runs = _runs(tmp_path)
    md = render_leaderboard_markdown(leaderboard(runs, n_boot=200))
    assert "Ranks out of the table's order" not in md


def test_the_console_counts_distinct_tests_called_not_cells(tmp_path, capsys):
    """One criterion, one meta value: the cell, both margins and the corner are one test (compare.json
    ``holm_tests`` 1), called in four cells."""
    a = write_rank_run(tmp_path / "a", "A", [(p, "m", "X", SCALE, 2.0) for p in range(1, 9)])
    b = write_rank_run(tmp_path / "b", "B", [(p, "m", "X", SCALE, 1.0) for p in range(1, 9)])
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert result["holm_tests"] == 1 and result["n_tests_called"] == 1
    assert "1 distinct test called, in 4 cells" in out
    assert "4 cells with a significant difference" not in out


def test_a_leaderboard_escapes_the_prompt_ids_it_names(tmp_path):
    """A prompt_id may be any string: in compare.html and compare.md it is text, as two-run compare writes it, never
    a live tag or a table cell of its own."""
    runs = []
    for name, unjudged in (("A", ("p<b>|9", "p<b>|10")), ("B", ()), ("C", ())):
        ids = [f"p<b>|{p}" for p in range(1, 11) if f"p<b>|{p}" not in unjudged]
        folder = write_rank_run(tmp_path / name, name, [(p, "m", "X", SCALE, 1.0) for p in ids])
        if unjudged:
            _unjudged(folder, unjudged, "no_answer")
        runs.append(str(folder))
    result = leaderboard(runs, n_boot=200)
    page = render_leaderboard_page(result)
    assert "2 (prompt_id p&lt;b&gt;|10, p&lt;b&gt;|9)" in page and "<b>" not in page
    failed = next(line for line in render_leaderboard_markdown(result).splitlines()
                  if line.startswith("Failed answers"))
    assert "2 (prompt_id p&lt;b&gt;&#124;10, p&lt;b&gt;&#124;9)" in failed

"""`judge-eval compare` of two ranking runs is paired per (instruction, criterion) item and makes no call on a cell
that rests on one instruction.

Each run here is a folder as ``judge-eval rank`` leaves it (``rank.json``, ``items.jsonl``, ``predictions.jsonl``),
written from a table of scores; expected values are derived by hand in each docstring.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.ranking.compare import compare_rankings, render_ranking_compare_markdown
from eval.ranking.report import render_ranking_compare_page
from eval.ranking.matrix import RankedItem, pollux_matrix
from tests.support.eval_ranking import write_rank_run

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"  # 0..2
BINARY = "0: нет нарушения\n\n1: есть нарушение"  # {0, 1}: a gate


def _run(folder: Path, model: str, rows: list[tuple[int, str, str, str, float | None]]) -> Path:
    """A ranking folder: one judged item per (prompt_id, meta, criterion, rubric, score); None: no [RESULT]."""
    return write_rank_run(folder, model, rows, run_json=False)


def test_an_item_one_side_failed_leaves_both_sides(tmp_path: Path) -> None:
    """A judge that fails where the other scores low: 20 instructions; on the 10 hard ones A scores G 0 and B's
    verdict has no score; on the 10 others both score G 2; both score H 1 everywhere.

    Unpaired, B's G was 2/2 = 1 against A's (10 * 0 + 10 * 1) / 20 = 0.5: "B higher" for failing. Paired, G holds
    the 10 easy items on each side: 1 vs 1, delta 0 in every resample; n 10, n_a 20, n_b 10, A lost 10 items to B's
    failures (n_dropped_a 10), B none. H: 20 paired items, delta 0. The corner pools G and H: n 30. Both runs score
    every cell alike on every instruction, so no swap moves any: untested ("—"), saying so, out of Holm's family.
    """
    rows_a, rows_b = [], []
    for p in range(20):
        hard = p < 10
        rows_a += [(p, "m", "G", SCALE, 0.0 if hard else 2.0), (p, "m", "H", SCALE, 1.0)]
        rows_b += [(p, "m", "G", SCALE, None if hard else 2.0), (p, "m", "H", SCALE, 1.0)]
    result = compare_rankings(_run(tmp_path / "a", "A", rows_a), _run(tmp_path / "b", "B", rows_b), n_boot=200,
                              allow_other_judge=True)
    g = result["cells"]["G"]["m"]
    assert (g["a"], g["b"], g["delta"], g["p_value"], g["verdict"]) == (1.0, 1.0, 0.0, 1.0, "—")
    assert g["why_no_call"] == ("scored alike by both runs on every one of its 10 instructions: no swap between the "
                                "runs moves it (sign-flip p 1), so it is left out of Holm's family")
    assert (g["n"], g["n_a"], g["n_b"], g["n_dropped_a"], g["n_dropped_b"]) == (10, 20, 10, 10, 0)
    assert g["n_instructions"] == {"a": 20, "b": 10, "shared": 10}
    corner = result["cells"]["mean_over_criteria"]["mean_over_meta"]
    assert (corner["delta"], corner["n"], corner["n_dropped_a"]) == (0.0, 30, 10)
    assert (result["a"]["n_dropped"], result["b"]["n_dropped"], result["n_instructions"]) == (10, 0, 20)
    md = render_ranking_compare_markdown(result)
    assert "| G | 0.000 [0.000, 0.000] — (dropped A 10, B 0) |" in md and result["holm_tests"] == 0
    assert ("Items left out of both sides (paired per item; the other run's verdict of the item, or of its "
            "instruction's gate, failed or was not scored): A 10, B 0; per cell n_dropped_a / n_dropped_b in "
            "compare.json.") in md


def test_an_instruction_whose_gate_one_run_failed_leaves_both_sides(tmp_path: Path) -> None:
    """P1: A scores X 2 and the binary C 1 (its gate closes: X 0); B scores X 2 and C has no score, so B's gate stays
    open. P2, P3: both X 2, C 0. P4: A X 2, C 1 (closed); B X 2, C 0 (open): a gate both scored, kept.

    Before, P1 stayed in with each run's own gate: X was A (0 + 1 + 1 + 0) / 4 = 1/2 vs B 1, delta 1/2, B higher for
    its failed Critical verdict. Now P1 leaves both sides: X is A (1 + 1 + 0) / 3 = 2/3 vs B 1, delta 1/3, n 3, each
    side dropping its X of P1; C pairs P2-P4 (A's P4 C gated to 0: 0 vs 0), A's C of P1 dropped. P1 is listed on
    both sides, with why."""
    rows_a = [(1, "m", "X", SCALE, 2.0), (1, "m", "C", BINARY, 1.0)]
    rows_b = [(1, "m", "X", SCALE, 2.0), (1, "m", "C", BINARY, None)]
    for p in (2, 3):
        rows_a += [(p, "m", "X", SCALE, 2.0), (p, "m", "C", BINARY, 0.0)]
        rows_b += [(p, "m", "X", SCALE, 2.0), (p, "m", "C", BINARY, 0.0)]
    rows_a += [(4, "m", "X", SCALE, 2.0), (4, "m", "C", BINARY, 1.0)]
    rows_b += [(4, "m", "X", SCALE, 2.0), (4, "m", "C", BINARY, 0.0)]
    result = compare_rankings(_run(tmp_path / "a", "A", rows_a), _run(tmp_path / "b", "B", rows_b), n_boot=0,
                              allow_other_judge=True)
    x, c = result["cells"]["X"]["m"], result["cells"]["C"]["m"]
    assert (x["a"], x["b"], x["delta"]) == (pytest.approx(2 / 3), 1.0, pytest.approx(1 / 3))
    assert (x["n"], x["n_a"], x["n_b"], x["n_dropped_a"], x["n_dropped_b"]) == (3, 4, 4, 1, 1)
    assert (c["delta"], c["n"], c["n_dropped_a"], c["n_dropped_b"]) == (0.0, 3, 1, 0)
    assert result["n_instructions"] == 3
    for side in "ab":
        assert result[side]["excluded"] == {"n": 1, "no_answer": [], "empty_answer": [], "no_score": [],
                                            "gate_scored_by_one": [1], "not_scored_by_other": []}
    md = render_ranking_compare_markdown(result)
    assert ("A 1 of 4 (its binary (gate) criterion scored by one run only, so its gate is not known on every side: "
            "1 (prompt_id 1))") in md


def test_a_cell_of_one_instruction_gets_no_interval_and_no_call(tmp_path: Path) -> None:
    """20 instructions of meta gen score G 1 (0.5) in both runs; one instruction, 99 of meta rare, has criterion T:
    A 1 (0.5), B 2 (1.0). T x rare rests on instruction 99 alone: every resample that holds it redraws it, so its
    interval was [0.5, 0.5] and the call "B higher". Now: delta 0.5, no interval, no call, and why; G x gen (20
    instructions, delta 0 everywhere) keeps its interval, and is untested as scored alike by both runs (no swap
    moves it). A single run says the same of that cell."""
    rows_a = [(p, "gen", "G", SCALE, 1.0) for p in range(20)] + [(99, "rare", "T", SCALE, 1.0)]
    rows_b = [(p, "gen", "G", SCALE, 1.0) for p in range(20)] + [(99, "rare", "T", SCALE, 2.0)]
    result = compare_rankings(_run(tmp_path / "a", "A", rows_a), _run(tmp_path / "b", "B", rows_b), n_boot=200,
                              allow_other_judge=True)
    t = result["cells"]["T"]["rare"]
    assert (t["delta"], t["ci"], t["verdict"], t["n_resamples"]) == (0.5, [None, None], "—", 0)
    assert t["n_instructions"] == {"a": 1, "b": 1, "shared": 1}
    assert t["why_no_call"] == "rests on 1 instruction scored by both runs; an interval needs at least 2"
    g = result["cells"]["G"]["gen"]
    assert (g["ci"], g["verdict"]) == ([0.0, 0.0], "—") and g["why_no_call"].startswith("scored alike by both runs")
    single = pollux_matrix([RankedItem(p, m, c, (0.0, 1.0, 2.0), s) for p, m, c, _, s in rows_b], n_boot=200)
    cell = single.cell("T", "rare")
    assert (cell["value"], cell["ci"], cell["n_instructions"]) == (1.0, [None, None], 1)
    assert cell["why_no_ci"] == "rests on 1 instruction; an interval needs at least 2"
    # The means over a row or a column count the instructions behind them: gen's 20, the corner 21.
    assert single.cell("G", "mean_over_meta")["n_instructions"] == 20
    assert single.cell("mean_over_criteria", "mean_over_meta")["n_instructions"] == 21
    assert "n_instructions" in single.cells_csv().splitlines()[0].split(",")


def test_compare_says_how_many_cells_it_tested_and_that_calls_are_holm_corrected(tmp_path: Path) -> None:
    """20 instructions of meta m: G is A 0, B 2 (normalised 0 vs 1), H is 1 on both (0.5). Six cells are tested:
    G x m, G x mean_over_meta, mean_over_criteria x m and the corner differ on every instruction (B higher); H x m
    and H x mean_over_meta are scored alike by both runs on every instruction: no swap moves them (p 1), untested
    and out of Holm's family. A row's mean_over_meta over its one cell is that cell's test; the corner pools G's and
    H's 20 scores each, (sum_G + sum_H) / 40, which is mean_over_criteria x m's (sum_G / 20 + sum_H / 20) / 2 in
    every swap and resample (one meta value, one score of each criterion per instruction): one test too. So Holm's
    family is two tests: G and mean_over_criteria x m (with H it was three, and H's p of 1 only raised theirs, to
    3/121). Above 12 instructions the swaps are drawn: --n-boot 100 is raised to 6 / 0.05 = 120 (Holm over up to
    six cells needs m / alpha), and none of them is as far from 0 as a difference of one sign on all 20 (chance
    2/2^20 a swap): p = 1/121 on the two differing tests, 1 on H. Holm: 2 x 1/121 = 0.0165 < 0.05 on each: called.
    Without resamples no line."""
    rows_a = [(p, "m", name, SCALE, score) for p in range(20) for name, score in (("G", 0.0), ("H", 1.0))]
    rows_b = [(p, "m", name, SCALE, score) for p in range(20) for name, score in (("G", 2.0), ("H", 1.0))]
    a, b = _run(tmp_path / "a", "A", rows_a), _run(tmp_path / "b", "B", rows_b)
    result = compare_rankings(a, b, n_boot=100, allow_other_judge=True)
    assert result["call_test"] == {"test": "paired sign-flip permutation over instructions", "exact": False,
                                   "n_swaps": 120}
    for row, column in (("G", "m"), ("G", "mean_over_meta"), ("mean_over_criteria", "m"),
                        ("mean_over_criteria", "mean_over_meta")):
        cell = result["cells"][row][column]
        assert (cell["p_value"], cell["p_holm"], cell["verdict"]) == (pytest.approx(1 / 121), pytest.approx(2 / 121),
                                                                      "B higher"), (row, column)
    h = result["cells"]["H"]["m"]
    assert (h["p_value"], h["p_holm"], h["verdict"]) == (1.0, None, "—")
    md = render_ranking_compare_markdown(result)
    assert result["holm_tests"] == 2
    assert ("Calls: 4 of the 4 cells tested (B higher 4, B lower 0), each on its sign-flip p adjusted by Holm's "
            "step-down over the 2 distinct tests of the 4 tested cells (a margin that is another cell under another "
            "name counted once), so that were nothing different, the chance of any call is at most alpha 0.05") in md
    assert "Calls: 4 of the 4 cells" in render_ranking_compare_page(result)
    assert "Calls:" not in render_ranking_compare_markdown(compare_rankings(a, b, n_boot=0, allow_other_judge=True))


def test_equal_cells_averaged_in_another_order_are_no_difference(tmp_path: Path) -> None:
    """Two candidates with the same three scores per instruction on a 0..10 rubric (scored s / 10), dealt to the
    criteria in another order: A scores X1, X2, X3 = 2, 9, 1 and B 1, 9, 2 on each of six instructions. By hand:
    X1 A 0.2, B 0.1 (delta -0.1 on every instruction: of the 2^6 sign flips only it and its mirror image are as far
    from 0, p = 2/64 < 0.05, and every resample is -0.1); X2 0.9 both; X3 A 0.1, B 0.2; mean_over_criteria
    (0.2 + 0.9 + 0.1) / 3 = (0.1 + 0.9 + 0.2) / 3 = 0.4 on both sides, and the corner pools the same scores: 0.4
    too. Summed in another order the floats differ in their last bit (0.4000000000000001 vs 0.39999999999999997),
    which unrounded was a delta of -1e-16 in every resample: "B lower", p 0. Compared at the leaderboard's digits, the
    tie is one: delta 0, interval [0, 0], every flip as far from 0 (p 1). Holm's family would be X1, X2, X3 (their
    rows' mean_over_meta each that one cell) and mean_over_criteria x m (the corner is it: one meta value, one score
    of each criterion per instruction): four tests on 6 instructions, each p at best 1/32, so Holm's first step
    gives at best 4 x 1/32 = 0.125, not below 0.05: no cell could ever be called, and each is untested ("—"),
    saying why (it read "no difference", X1's Holm p max(4/32, 3/32) = 0.125, as if tested). The instruction
    counts decide it, before which instructions differ (X2, scored alike, is one of the four)."""
    scale = "\n\n".join(f"{k}: уровень {k}" for k in range(11))
    a = write_rank_run(tmp_path / "a", "A", [(p, "m", f"X{c + 1}", scale, float(s)) for p in range(1, 7)
                                             for c, s in enumerate((2, 9, 1))])
    b = write_rank_run(tmp_path / "b", "B", [(p, "m", f"X{c + 1}", scale, float(s)) for p in range(1, 7)
                                             for c, s in enumerate((1, 9, 2))])
    result = compare_rankings(a, b, n_boot=200)
    for column in ("m", "mean_over_meta"):
        cell = result["cells"]["mean_over_criteria"][column]
        assert (cell["a"], cell["b"], cell["delta"], cell["ci"], cell["p_value"], cell["verdict"]) == (
            0.4, 0.4, 0.0, [0.0, 0.0], 1.0, "—"), column
    x1 = result["cells"]["X1"]["m"]
    assert (x1["a"], x1["b"], x1["verdict"], x1["p_value"], x1["p_holm"]) == (0.2, 0.1, "—", 2 / 64, None)
    assert x1["delta"] == pytest.approx(-0.1, abs=1e-15) and result["holm_tests"] == 0
    assert x1["why_no_call"] == ("rests on 6 instructions scored by both runs: the sign-flip test's smallest p "
                                 "there, 2/2^6 = 0.03125, Holm-adjusted over the 4 tests with enough instructions, is "
                                 "at best 0.125, not below alpha 0.05; a call needs more instructions or fewer cells")
    page = render_ranking_compare_page(result)  # the tooltip says why X1 x m could not be called
    assert "X1 × m: A 0.2000, B 0.1000, sign-flip p 0.0312, Holm p —; untested: rests on 6 instructions" in page
    assert "is at best 0.125, not below alpha 0.05" in page


def test_a_judge_that_failed_every_gate_verdict_is_named_not_nothing_scored(tmp_path: Path) -> None:
    """A scores the binary C 0 and X on six instructions; B's C verdicts all lack a score, its X scored. Every X
    item was scored by both, but each instruction's gate is known on A's side only, so each leaves both: the refusal
    says that and names B's six unparsed gate verdicts ("no item both scored" was false)."""
    rows_a = [row for p in range(1, 7) for row in ((p, "m", "C", BINARY, 0.0), (p, "m", "X", SCALE, 2.0))]
    rows_b = [row for p in range(1, 7) for row in ((p, "m", "C", BINARY, None), (p, "m", "X", SCALE, 1.0))]
    a, b = _run(tmp_path / "a", "A", rows_a), _run(tmp_path / "b", "B", rows_b)
    with pytest.raises(ValueError) as caught:
        compare_rankings(a, b, n_boot=0, allow_other_judge=True)
    assert str(caught.value) == (
        "the runs have nothing left to compare: the 6 instructions both runs scored were left out of every run because "
        "their binary (gate) criterion was scored by one run only (a gate known on some sides only); gate verdicts not "
        f"scored: {b} 6 (unparsed 6)")


def test_what_the_runs_name_is_inert_on_the_comparison_pages(tmp_path: Path) -> None:
    """A prompt_id "<img src=x onerror=alert(1)>|**x**" that B alone scored is listed among A's instructions left
    out: compare.md wrote it raw (a live tag, a table cell, emphasis); now &lt;, &#124; and \\*. A model name with a
    right-to-left override (U+202E) shows the rest of its line reversed: compare.html drops it, as report.md does."""
    odd = "<img src=x onerror=alert(1)>|**x**"
    a = _run(tmp_path / "a", "A\u202eevil", [(1, "m", "X", SCALE, 1.0), (2, "m", "X", SCALE, 0.0),
                                             (odd, "m", "X", SCALE, None)])
    b = _run(tmp_path / "b", "B", [(1, "m", "X", SCALE, 2.0), (2, "m", "X", SCALE, 1.0), (odd, "m", "X", SCALE, 1.0)])
    result = compare_rankings(a, b, n_boot=0, allow_other_judge=True)
    md = render_ranking_compare_markdown(result)
    assert "no verdict scored: 1 (prompt_id &lt;img src=x onerror=alert(1)&gt;&#124;\\*\\*x\\*\\*)" in md
    assert "<img" not in md
    page = render_ranking_compare_page(result)
    assert "\u202e" not in page and "Aevil" in page


def test_the_pairing_rule_by_hand_one_function_for_two_runs_and_a_board(tmp_path: Path, monkeypatch) -> None:
    """P1 and P2 each have X (0..2) and the gate G. A scores all four items; B scores P1's X and P2's G only (its
    P1 G and P2 X verdicts have no score). P1's gate is scored by A alone: a gate known on one side, so P1 leaves
    both runs. P2's X is scored by A alone: that item leaves, P2's G pairs. Keys are (prompt_id, criterion, k):
    paired {(2, G, 0)}, shared [2], P1 the gate-partial one. Two runs (compare) and a board (the leaderboard) pair
    by this one function, ``paired_items``: each comparison calls it once."""
    import eval.ranking.compare as compare
    from eval.ranking.leaderboard import leaderboard

    rows = {"A": [(1, "m", "X", SCALE, 2.0), (1, "m", "G", BINARY, 0.0), (2, "m", "X", SCALE, 1.0),
                  (2, "m", "G", BINARY, 0.0)],
            "B": [(1, "m", "X", SCALE, 1.0), (1, "m", "G", BINARY, None), (2, "m", "X", SCALE, None),
                  (2, "m", "G", BINARY, 0.0)]}
    folders = [_run(tmp_path / name, name, rows[name]) for name in ("A", "B")]
    runs = [compare.load_ranking_run(folder)[1] for folder in folders]
    settings = {"empty_answer": "zero", "no_answer": "zero"}
    pairing = compare.paired_items(folders, runs, [set(), set()], settings)
    assert pairing.paired == {(2, "G", 0)} and pairing.shared == [2] and pairing.gate_partial == {1}
    assert pairing.scored_ids == [{1, 2}, {1, 2}]
    calls = []
    original = compare.paired_items

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return original(*args, **kwargs)

    monkeypatch.setattr(compare, "paired_items", counted)
    compare_rankings(*folders, n_boot=0, allow_other_judge=True)
    third = _run(tmp_path / "C", "C", rows["A"])
    leaderboard([*folders, third], n_boot=0, allow_other_judge=True)
    assert calls == [2, 3]

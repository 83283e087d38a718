"""Calls of rank comparisons derived by hand: Holm's adjustment over a two-run matrix's tested cells (a margin that
is an inner cell under another name counted once), a leaderboard whose sign-flip swaps are drawn, and each run's
instructions read once by a leaderboard."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import eval.ranking.compare as compare
from eval.ranking.compare import compare_rankings, holm_adjusted
from eval.ranking.leaderboard import leaderboard
from eval.scoring.bootstrap import cell_rng
from tests.support.eval_ranking import write_rank_run

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"  # 0..2: minmax s / 2


def _run(folder: Path, model: str, scores: dict[int, float]) -> Path:
    return write_rank_run(folder, model, [(p, "m", "X", SCALE, score) for p, score in scores.items()])


def test_holm_over_the_tested_cells_by_hand():
    """Raw p 0.01, 0.03, 0.04 tested, 0.001 untested (left out: it has no call to correct). Holm over three:
    sorted 0.01, 0.03, 0.04 -> 3 x 0.01 = 0.03, max(0.03, 2 x 0.03) = 0.06, max(0.06, 1 x 0.04) = 0.06. The 0.03
    cell is below alpha 0.05 on its own, not after Holm. A cell aliased to another enters once and reads its p."""
    p = np.array([[0.01, 0.03], [0.04, 0.001]])
    tested = [(0, 0), (0, 1), (1, 0)]
    adjusted, n_tests = holm_adjusted(p, tested)
    assert n_tests == 3
    assert adjusted[0, 0] == pytest.approx(0.03) and adjusted[0, 1] == pytest.approx(0.06)
    assert adjusted[1, 0] == pytest.approx(0.06) and np.isnan(adjusted[1, 1])
    # (1, 0) the same test as (0, 0) under another name: a family of two, 0.01 and 0.03 -> 0.02, 0.03
    aliased, n_tests = holm_adjusted(np.array([[0.01, 0.03], [0.01, 0.001]]), tested, {(1, 0): (0, 0)})
    assert n_tests == 2
    assert aliased[0, 0] == pytest.approx(0.02) and aliased[1, 0] == pytest.approx(0.02)
    assert aliased[0, 1] == pytest.approx(0.03)


def test_compare_on_seven_instructions_calls_with_holm_of_one_test(tmp_path):
    """B - A per instruction (s / 2): 1 on P1-P6 (X 0 vs 2), 0 on P7 (1 vs 1). The exact sign-flip test over the
    2^7 = 128 swaps: a swap's difference is the sum of +-1 over P1-P6 (P7 moves nothing), as far from 0 as the
    observed 6 only when all six signs agree: 2 of the 64 sign sets, times 2 for P7's free swap, 4 of 128, p = 1/32
    < 0.05. The matrix has one criterion and one meta value: X x mean_over_meta, mean_over_criteria x m and the
    corner are X x m under other names, so Holm's family is one test and the adjusted p is 1/32 too. A resample is
    7 draws of 1 or 0, below or at 0 only when all seven are P7 (chance 7^-7): B higher."""
    a = _run(tmp_path / "a", "A", {**{p: 0.0 for p in range(1, 7)}, 7: 1.0})
    b = _run(tmp_path / "b", "B", {**{p: 2.0 for p in range(1, 7)}, 7: 1.0})
    result = compare_rankings(a, b, n_boot=200, seed=0, alpha=0.05)
    assert result["call_test"] == {"test": "paired sign-flip permutation over instructions", "exact": True,
                                   "n_swaps": 128}
    for row, column in (("X", "m"), ("X", "mean_over_meta"), ("mean_over_criteria", "m"),
                        ("mean_over_criteria", "mean_over_meta")):
        cell = result["cells"][row][column]
        assert (cell["delta"], cell["p_value"], cell["p_holm"]) == (pytest.approx(6 / 7), 1 / 32, 1 / 32), column
        assert cell["ci"][0] > 0 and (cell["verdict"], cell["why_no_call"]) == ("B higher", None), (row, column)


def _thirteen(tmp_path: Path) -> list[Path]:
    """A: X 2, B: X 0, C: X 1 on each of 13 instructions (s / 2: 1, 0, 1/2)."""
    return [_run(tmp_path / name.lower(), name, {p: score for p in range(1, 14)})
            for name, score in (("A", 2.0), ("B", 0.0), ("C", 1.0))]


def test_leaderboard_with_drawn_swaps_by_hand(tmp_path):
    """Three candidates, m = 3 pairs, each called at alpha / 3 = 0.0167. 13 instructions are above the exact test's
    12, so swaps are drawn: --n-boot 100 is raised to 2m / alpha = 2 x 3 / 0.05 = 120 (``resamples_to_call``).
    Every pair differs by the same amount on every instruction, so a swap is as far from 0 as the observed
    difference only when it swaps all 13 or none; the seeded draws (``cell_rng(0, "bench/leaderboard/sign-flip")``,
    120 x 13 coin flips) hold no such swap, counted below from the same generator: p = (1 + 0) / (1 + 120) = 1/121
    = 0.00826 < 0.0167, and every resample is the observed difference (an interval excluding 0): A over C over B,
    each pair B lower."""
    a, b, c = map(str, _thirteen(tmp_path))
    draws = cell_rng(0, "bench/leaderboard/sign-flip").integers(0, 2, size=(120, 13))
    assert int((draws.min(axis=1) == draws.max(axis=1)).sum()) == 0  # no swap of all or none among the 120 drawn
    result = leaderboard([a, b, c], n_boot=100, seed=0, alpha=0.05)
    assert result["call_test"] == {"test": "paired sign-flip permutation over instructions", "exact": False,
                                   "n_swaps": 120}
    assert result["n_boot"] == 120
    assert [m["model"] for m in result["models"]] == ["A", "C", "B"]
    assert {m["model"]: m["rank"] for m in result["models"]} == {"A": 1, "C": 2, "B": 3}
    pairs = {(p["a"], p["b"]): p for p in result["pairs"]}
    expected = {(a, c): -0.5, (a, b): -1.0, (c, b): -0.5}
    assert set(pairs) == set(expected)
    for pair, delta in expected.items():
        assert (pairs[pair]["delta"], pairs[pair]["p_value"]) == (pytest.approx(delta), pytest.approx(1 / 121))
        assert (pairs[pair]["verdict"], pairs[pair]["why_no_call"]) == ("B lower", None), pair


def test_refuse_other_data_reads_the_texts_it_is_given():
    """Two runs' instructions, given as read: p2's reference answer differs, and the refusal names p2 and the field.
    The folders do not exist: nothing is read from them."""
    same = {"instruction": "Задание", "reference_answer": "r", "meta": "m", "criteria": {("X", SCALE)}}
    texts_a = {"p1": dict(same), "p2": dict(same)}
    texts_b = {"p1": dict(same), "p2": {**same, "reference_answer": "другой"}}
    with pytest.raises(ValueError) as refused:
        compare.refuse_other_data({"data": "d.jsonl"}, {"data": "d.jsonl"}, [Path("/no/a"), Path("/no/b")],
                                   (texts_a, texts_b))
    assert str(refused.value) == ("the runs were made on different data ('d.jsonl' vs 'd.jsonl'): prompt_id 'p2' "
                                  "has another reference_answer in each; compare runs of one data set")
    compare.refuse_other_data({}, {}, [Path("/no/a"), Path("/no/b")], (texts_a, dict(texts_a)))  # alike: no refusal


def test_a_leaderboard_reads_each_runs_instructions_once(tmp_path, monkeypatch):
    """K = 3 runs, 3 pairs: each run's instructions are read once (3 reads), not once per pair it is in (6)."""
    runs = list(map(str, _thirteen(tmp_path)))
    read = []
    original = compare.instruction_contents

    def counted(folder):
        read.append(str(folder))
        return original(folder)

    monkeypatch.setattr(compare, "instruction_contents", counted)
    leaderboard(runs, n_boot=0)
    assert sorted(read) == sorted(runs)


@pytest.mark.parametrize("n", [5, 9, 12])
def test_exact_sign_flip_p_is_scipys_paired_permutation_p(n):
    """Up to ``EXACT_MAX`` instructions every swap is counted, and the share as far from 0 is scipy's two-sided p
    (twice the smaller one-sided p on the symmetric distribution of all 2^n swaps), ties included: differences
    drawn from -2..2, so many swaps tie the observed one."""
    from scipy.stats import permutation_test

    from eval.ranking.permutation import sign_flip_p

    d = np.random.default_rng(n).integers(-2, 3, size=n).astype(np.float64)
    p, n_swaps, exact = sign_flip_p(lambda swaps: ((1 - 2 * swaps) * d).mean(axis=1), n, np.array(d.mean()), 0, 0,
                                    "test")
    reference = permutation_test((d, np.zeros(n)), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", vectorized=True, n_resamples=np.inf)
    assert (exact, n_swaps) == (True, 2 ** n)
    assert float(p) == pytest.approx(reference.pvalue)


def _x_and_y(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """One meta value m on n instructions: X is A 0, B 2 (s / 2: 0 vs 1) and Y 1 on both, on every instruction."""
    rows_a = [(p, "m", name, SCALE, score) for p in range(1, n + 1) for name, score in (("X", 0.0), ("Y", 1.0))]
    rows_b = [(p, "m", name, SCALE, score) for p in range(1, n + 1) for name, score in (("X", 2.0), ("Y", 1.0))]
    return write_rank_run(tmp_path / "a", "A", rows_a), write_rank_run(tmp_path / "b", "B", rows_b)


def test_the_corner_of_one_meta_value_is_its_mean_over_criteria_and_counted_once(tmp_path):
    """X differs by +1 on each of 7 instructions, Y by 0. Exact sign-flip test over 2^7 = 128 swaps: X's difference
    (a sum of +-1 over 7) is as far from 0 as the observed 7 only when every sign agrees, 2 of 128: p = 1/64;
    mean_over_criteria x m ((X + Y) / 2, +0.5 on every instruction) and the corner alike, 1/64; Y 1. Each row's
    mean_over_meta is its one cell; the corner pools X's and Y's 7 scores each, (sum_X + sum_Y) / 14, which is
    mean_over_criteria x m's (sum_X / 7 + sum_Y / 7) / 2 under any weighting of the instructions (one score of each
    per instruction). Y is scored alike on every instruction: no swap moves it, so it is untested and out of the
    family (its p is 1 whatever the data; in the family it raised the others' Holm p to max(3/64, 2/64) = 3/64).
    Four tested cells, two tests (X, mean_over_criteria x m): Holm 2 x 1/64 = 1/32 < 0.05. Counted as four tests it
    was 4/64 = 0.0625: no call. Every resample draws instructions that all differ by +1 (X) and +0.5 (the means):
    intervals exclude 0, B higher."""
    a, b = _x_and_y(tmp_path, 7)
    result = compare_rankings(a, b, n_boot=200, seed=0, alpha=0.05)
    assert result["holm_tests"] == 2
    for row, column in (("X", "m"), ("X", "mean_over_meta"), ("mean_over_criteria", "m"),
                        ("mean_over_criteria", "mean_over_meta")):
        cell = result["cells"][row][column]
        assert (cell["p_value"], cell["p_holm"], cell["verdict"]) == (1 / 64, 2 / 64, "B higher"), (row, column)
    y = result["cells"]["Y"]["m"]
    assert (y["p_value"], y["p_holm"], y["verdict"]) == (1.0, None, "—")
    assert y["why_no_call"] == ("scored alike by both runs on every one of its 7 instructions: no swap between the "
                                "runs moves it (sign-flip p 1), so it is left out of Holm's family")


def test_a_comparison_written_before_holm_is_not_said_to_be_holm_adjusted(tmp_path):
    """A compare.json whose cells carry no p_holm (written before the adjustment, read back) was called on the raw
    sign-flip p: its Markdown and page say each cell was tested on its own, and name no Holm anywhere. The 7
    instructions of one criterion: four tested cells, each called (p 1/32 as above), so chance alone would make
    0.05 x 4 = 0.2 calls."""
    from eval.ranking.compare import render_ranking_compare_markdown
    from eval.ranking.report import render_ranking_compare_page

    a = _run(tmp_path / "a", "A", {**{p: 0.0 for p in range(1, 7)}, 7: 1.0})
    b = _run(tmp_path / "b", "B", {**{p: 2.0 for p in range(1, 7)}, 7: 1.0})
    result = compare_rankings(a, b, n_boot=200, seed=0, alpha=0.05)
    assert "Holm" in render_ranking_compare_markdown(result) and "Holm" in render_ranking_compare_page(result)
    del result["holm_tests"]
    for row in result["cells"].values():
        for cell in row.values():
            del cell["p_holm"]
    md, page = render_ranking_compare_markdown(result), render_ranking_compare_page(result)
    assert "Holm" not in md and "Holm" not in page
    assert ("Calls: 4 of the 4 cells tested (B higher 4, B lower 0), each cell tested on its own at alpha 0.05 with "
            "no correction for the 4 tests: were nothing different, about 0.2 calls would be expected by chance") in md
    assert "then its sign-flip p, the call when p < 0.05 and the interval excludes 0 on that side" in md
    assert "the call when the paired sign-flip test's p is below alpha 0.05 and the interval excludes 0" in page


def test_too_few_resamples_to_call_draw_no_more_swaps(tmp_path, capsys):
    """20 instructions (above the exact test's 12: swaps are drawn). --n-boot 20 is below resamples_to_call(0.05)
    = 2 / 0.05 = 40: no cell can be called whatever its p, so the swaps stay at 20 and nothing is said on stderr.
    At --n-boot 100 six cells could be tested, and 100 is raised to 6 / 0.05 = 120, said on stderr."""
    a, b = _x_and_y(tmp_path, 20)
    result = compare_rankings(a, b, n_boot=20, seed=0, alpha=0.05)
    assert result["call_test"]["n_swaps"] == 20 and capsys.readouterr().err == ""
    assert {cell["why_no_call"] for row in result["cells"].values() for cell in row.values()} == {
        "20 resamples defined it; a call needs at least 40"}
    assert compare_rankings(a, b, n_boot=100, seed=0, alpha=0.05)["call_test"]["n_swaps"] == 120
    assert "120 sign-flip swaps drawn instead of --n-boot 100" in capsys.readouterr().err


def test_an_n_boot_above_the_swaps_cap_is_kept_not_lowered():
    """The swaps are raised to what Holm needs for a call (m / alpha, at most MAX_SWAPS), never lowered: an --n-boot
    of 200,000 on 20 instructions draws 200,000 swaps, and one of 40, above the 1 / 0.05 = 20 one tested cell needs,
    draws 40."""
    import numpy as np

    from eval.ranking.compare import _swaps_to_draw
    from eval.ranking.permutation import MAX_SWAPS

    assert 200_000 > MAX_SWAPS
    assert _swaps_to_draw(np.array([[0.1]]), np.array([[20]]), 0.05, 200_000, 20) == 200_000
    assert _swaps_to_draw(np.array([[0.1]]), np.array([[20]]), 0.05, 40, 20) == 40  # 1 / 0.05 = 20 < 40


def test_cells_holm_could_never_call_are_untested_and_say_why(tmp_path):
    """X differs by +1 on each of 6 instructions, Y by 0 (the shape above, one instruction fewer). Each cell rests on
    6 instructions: the exact test's smallest p is 2/2^6 = 1/32 < 0.05, so each was tested alone; but the family
    holds three tests (X, Y, mean_over_criteria x m), and Holm's first step multiplies the smallest p by 3: at best
    3/32 = 0.09375, never below 0.05. Every cell read "tested, no difference" (Holm p 0.09375 on X) though none
    could ever be called; now each is untested ("—"), says why, and the family is empty. The instruction counts
    decide it, before which instructions differ: Y, scored alike, is one of the three, and says its own reason."""
    a, b = _x_and_y(tmp_path, 6)
    result = compare_rankings(a, b, n_boot=200, seed=0, alpha=0.05)
    assert result["holm_tests"] == 0
    why = ("rests on 6 instructions scored by both runs: the sign-flip test's smallest p there, 2/2^6 = 0.03125, "
           "Holm-adjusted over the 3 tests with enough instructions, is at best 0.09375, not below alpha 0.05; a call "
           "needs more instructions or fewer cells")
    alike = ("scored alike by both runs on every one of its 6 instructions: no swap between the runs moves it "
             "(sign-flip p 1), so it is left out of Holm's family")
    for row, said in (("X", why), ("Y", alike)):
        for column in ("m", "mean_over_meta"):
            cell = result["cells"][row][column]
            assert (cell["verdict"], cell["why_no_call"], cell["p_holm"]) == ("—", said, None), (row, column)
    corner = result["cells"]["mean_over_criteria"]["mean_over_meta"]
    assert corner["verdict"] == "—" and corner["why_no_call"] == why.replace(
        "instructions scored", "instructions with a non-binary score scored")
    assert corner["p_value"] == 1 / 32  # the test's own p is kept beside the reason


def test_holm_floor_leaves_out_only_the_cells_that_cannot_reach_alpha():
    """Four tested cells at alpha 0.05: one on 10 instructions (smallest p 2/2^10 = 1/512), three on 6 (1/32). Holm
    over those floors: 4 x 1/512 = 0.0078, then max(0.0078, 3 x 1/32 = 0.09375) for the others: the three on 6 can
    never be called, the one on 10 can. Aliased to the first, the cell (1, 1) is its test: three tests, floors 3 x
    1/512 and 2 x 1/32 = 0.0625 (still out)."""
    from eval.ranking.compare import holm_unreachable

    instructions = np.array([[10, 6], [6, 6]])
    tested = [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert holm_unreachable(instructions, tested, 0.05) == ({(0, 1): 0.09375, (1, 0): 0.09375, (1, 1): 0.09375}, 4)
    floors, family = holm_unreachable(np.array([[10, 6], [6, 10]]), tested, 0.05, {(1, 1): (0, 0)})
    assert (floors, family) == ({(0, 1): 0.0625, (1, 0): 0.0625}, 3)


def test_a_cells_holm_floor_is_over_the_instructions_the_runs_score_differently(tmp_path):
    """20 instructions of meta m. Y is A 0, B 2 on all 20; X is A 0, B 2 on 5 of them and 1 on both on the other 15.
    Swapping one of those 15 moves nothing in X, so X's sign-flip p is at best 2/2^5 = 0.0625 whatever its 20
    instructions (2/2^20 was its floor before): it can never be called at 0.05, and is untested, saying so, out of
    the family (decided by X's own instructions). Left are Y and mean_over_criteria x m (the margins of one meta
    value are their cells): two tests, both differing on all 20, both called."""
    rows_a = [(p, "m", name, SCALE, 0.0) for p in range(1, 21) for name in ("X", "Y")]
    rows_b = [(p, "m", "Y", SCALE, 2.0) for p in range(1, 21)]
    rows_a = [(p, m, n, sc, 1.0 if n == "X" and p > 5 else s) for p, m, n, sc, s in rows_a]
    rows_b += [(p, "m", "X", SCALE, 2.0 if p <= 5 else 1.0) for p in range(1, 21)]
    a, b = write_rank_run(tmp_path / "a", "A", rows_a), write_rank_run(tmp_path / "b", "B", rows_b)
    result = compare_rankings(a, b, n_boot=200, seed=0, alpha=0.05)
    x = result["cells"]["X"]["m"]
    assert (x["verdict"], x["p_holm"]) == ("—", None)
    assert x["why_no_call"] == ("rests on 20 instructions scored by both runs, 5 of which the runs score differently: "
                                "the sign-flip test's smallest p there, 2/2^5 = 0.0625, is not below alpha 0.05; a call "
                                "needs at least 6 that differ")
    assert result["holm_tests"] == 2
    for row in ("Y", "mean_over_criteria"):
        assert result["cells"][row]["m"]["verdict"] == "B higher", row

"""The call of a rank comparison (two runs: a cell; three or more: a pair of the leaderboard): its p-value is a paired
sign-flip permutation test over the instructions (``eval.ranking.permutation``), exact on few instructions, and its
interval the bootstrap's, its ends one count of the resamples (``eval.scoring.resample_rules.called_interval``);
a call needs both. Every figure is derived in the docstrings (the bootstrap's draws set by hand where they matter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eval.ranking.compare import compare_rankings
from eval.scoring.resample_rules import called_interval, resamples_to_call
from eval.ranking.permutation import fewest_for_call, smallest_p
from eval.ranking.leaderboard import leaderboard
from tests.support.eval_ranking import write_rank_run

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"  # 0..2: minmax s / 2


def _run(folder: Path, model: str, scores: dict[int, float]) -> Path:
    return write_rank_run(folder, model, [(p, "m", "X", SCALE, score) for p, score in scores.items()])


def _draws(monkeypatch, rows: list[list[int]]) -> None:
    """Every bootstrap of the comparison draws exactly ``rows`` (instruction weights, one row a resample)."""
    import eval.ranking.matrix as matrix

    monkeypatch.setattr(matrix, "instruction_weights", lambda n, n_boot, seed, key="": [np.array(rows, float)])


def test_called_interval_by_hand():
    """40 resamples, one of them at or below 0: p = 2 * 1/40 = 0.05, not below alpha = 0.05.
    The interpolated percentile interval was [0.4875, 0.5] (a call); the interval's ends are now the k-th smallest
    and largest, k = 1 (2 * 1/40 reaches 0.05): [-0.001, 0.5], no call. With a 41st resample at 0.5, p = 2/41 < 0.05
    and k = 2 (2 * 1/41 < 0.05 <= 2 * 2/41): [0.5, 0.5], a call."""
    assert called_interval(np.array([-0.001] + [0.5] * 39), 0.05) == (-0.001, 0.5, 0.05)
    assert called_interval(np.array([-0.001] + [0.5] * 40), 0.05) == (0.5, 0.5, pytest.approx(2 / 41))
    assert called_interval(np.array([np.nan, 1.0] * 20), 0.05) == (1.0, 1.0, 0.0)  # the finite ones only
    assert all(np.isnan(called_interval(np.array([np.nan]), 0.05)))


@pytest.mark.parametrize("k_runs", range(3, 11))
def test_called_interval_keeps_the_documented_rank_at_a_leaderboards_alpha(k_runs):
    """The leaderboard's pairs read ``called_interval(d, alpha / m)`` over ``resamples_to_call(alpha / m)``
    resamples, m = K(K - 1)/2: n = 2m / alpha, so one resample on the wrong side of 0 makes p = 2/n = alpha / m
    exactly, and k = ⌈n·(alpha/m)/2⌉ = 1 (the leaderboard's docstring). For eight candidates 0.05 / 28 rounds a hair
    above 1/560 = 2/1120; read without a tolerance, k would be 2 and the interval [0.5, 0.5] exclude 0 beside that p."""
    pair_alpha = 0.05 / (k_runs * (k_runs - 1) // 2)
    n = resamples_to_call(pair_alpha)
    low, high, p = called_interval(np.array([-0.1] + [0.5] * (n - 1)), pair_alpha)
    assert (low, high) == (-0.1, 0.5)
    assert not p < pair_alpha
    assert p == pytest.approx(2 / n, rel=1e-9)


def test_compare_on_two_instructions_makes_no_call(tmp_path):
    """A: X 1 on P1, P2; B: 2 on both (s / 2): B - A is 1/2 on each. Every bootstrap resample is 1/2 (interval
    [0.5, 0.5], its own p 0: the call was "B higher"). Under the null each instruction's sign is a coin toss: of the
    4 swaps, (none) 1/2, (P1) 0, (P2) 0, (both) -1/2, so 2 of 4 are as far from 0: p = 1/2, and no test on two
    instructions can reach p < 0.05 (its smallest p, 2/2^2). No call; why says the fewest instructions a call needs:
    the least n with 2/2^n < 0.05 is 6 (2/32 = 0.0625, 2/64 = 0.03125)."""
    a = _run(tmp_path / "a", "A", {1: 1.0, 2: 1.0})
    b = _run(tmp_path / "b", "B", {1: 2.0, 2: 2.0})
    cell = compare_rankings(a, b, n_boot=200, seed=0, alpha=0.05)["cells"]["X"]["m"]
    assert (cell["delta"], cell["ci"], cell["p_value"]) == (0.5, [0.5, 0.5], 0.5)
    assert cell["verdict"] == "—"
    assert cell["why_no_call"] == ("rests on 2 instructions scored by both runs: the sign-flip test's smallest p "
                                   "there, 2/2^2 = 0.5, is not below alpha 0.05; a call needs at least 6")
    assert (smallest_p(2), fewest_for_call(0.05), fewest_for_call(0.05 / 3)) == (0.5, 6, 7)
    assert smallest_p(2000) == 0.0  # 2/2^2000 is below any float: 0, not an OverflowError on a large data set


def test_compare_calls_a_clear_difference_on_eight_instructions(tmp_path):
    """B - A per instruction (s / 2): 1 on P1-P7 (X 0 vs 2), -1/2 on P8 (X 2 vs 1); in halves 2, 2, 2, 2, 2, 2, 2, -1,
    sum 13, delta 13/16. A swap of a set F of instructions gives 13 - 2 * sum(F): at least 13 from 0 when sum(F) <= 0
    (F empty or {P8}) or sum(F) >= 13 (their complements): 4 of the 2^8 = 256 swaps, p = 1/64 < 0.05. A bootstrap
    resample of k draws of 1 and 8 - k of -1/2 is below 0 only when k < (8 - k) / 2, k <= 2, a chance of about 1e-5
    per resample, so the interval excludes 0: B higher. scipy's paired permutation test gives the same p."""
    from scipy.stats import permutation_test

    a = _run(tmp_path / "a", "A", {**{p: 0.0 for p in range(1, 8)}, 8: 2.0})
    b = _run(tmp_path / "b", "B", {**{p: 2.0 for p in range(1, 8)}, 8: 1.0})
    cell = compare_rankings(a, b, n_boot=200, seed=0, alpha=0.05)["cells"]["X"]["m"]
    assert cell["delta"] == pytest.approx(13 / 16) and cell["p_value"] == pytest.approx(1 / 64)
    assert cell["ci"][0] > 0 and (cell["verdict"], cell["why_no_call"]) == ("B higher", None)
    x_a, x_b = np.array([0.0] * 7 + [1.0]), np.array([1.0] * 7 + [0.5])
    reference = permutation_test((x_b, x_a), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", vectorized=True, n_resamples=np.inf)
    assert reference.pvalue == pytest.approx(1 / 64)


def test_compare_no_difference_where_the_interval_alone_excludes_0(tmp_path, monkeypatch):
    """B - A per instruction (s / 2): 1 on P1-P4, 1/2 on P5, -1/2 on P6, P7; in halves 2, 2, 2, 2, 1, -1, -1, sum 7.
    A swap set F gives 7 - 2 * sum(F), at least 7 from 0 when sum(F) <= 0 or sum(F) >= 7. sum(F) <= 0 with none of
    P1-P4: the subsets of {P5, P6, P7} but {P5} (7); with one of P1-P4 (2 + ...): only with P6 and P7 and not P5
    (4); with two or more: never. 11 of 128, and as many complements: p = 22/128 = 11/64. The bootstrap is set to draw
    P1 seven times in every resample (interval [1, 1]): at alpha 0.2 the call stands (11/64 < 0.2); at 0.1 the
    interval alone would call, the test does not: "no difference"."""
    a = _run(tmp_path / "a", "A", {**{p: 0.0 for p in range(1, 5)}, 5: 1.0, 6: 2.0, 7: 2.0})
    b = _run(tmp_path / "b", "B", {**{p: 2.0 for p in range(1, 5)}, 5: 2.0, 6: 1.0, 7: 1.0})
    _draws(monkeypatch, [[7, 0, 0, 0, 0, 0, 0]] * 40)
    cell = compare_rankings(a, b, n_boot=40, seed=0, alpha=0.2)["cells"]["X"]["m"]
    assert cell["delta"] == pytest.approx(1 / 2) and cell["ci"] == [1.0, 1.0]
    assert cell["p_value"] == pytest.approx(11 / 64) and cell["verdict"] == "B higher"  # 11/64 < 0.2
    cell = compare_rankings(a, b, n_boot=40, seed=0, alpha=0.1)["cells"]["X"]["m"]
    assert (cell["p_value"], cell["verdict"], cell["why_no_call"]) == (pytest.approx(11 / 64), "no difference", None)


def test_leaderboard_on_two_instructions_tests_no_pair(tmp_path):
    """Means over P1, P2 (s / 2): A (1 + 1/2) / 2 = 3/4, B 1/2, C 0; three pairs, each at alpha / 3 = 1/60. Pair
    A-B: B - A is -1/2 on P1, 0 on P2: every bootstrap resample of P1 alone gave [-1/2, -1/2]; the sign-flip test on
    two instructions cannot go below 2/2^2 = 1/2 (the least n with 2/2^n < 1/60 is 7). No pair is tested: every
    candidate is rank 1, and not one is listed as indistinguishable from another, only as not tested against."""
    a = _run(tmp_path / "a", "A", {1: 2.0, 2: 1.0})
    b = _run(tmp_path / "b", "B", {1: 1.0, 2: 1.0})
    c = _run(tmp_path / "c", "C", {1: 0.0, 2: 0.0})
    result = leaderboard([str(a), str(b), str(c)], n_boot=200, seed=0)
    pair = next(p for p in result["pairs"] if (p["a"], p["b"]) == (str(a), str(b)))
    assert (pair["delta"], pair["p_value"], pair["verdict"]) == (-0.25, 1.0, "—")
    assert "2/2^2 = 0.5, is not below alpha 0.01667; a call needs at least 7" in pair["why_no_call"]
    assert {m["model"]: m["rank"] for m in result["models"]} == {"A": 1, "B": 1, "C": 1}
    assert all(m["indistinguishable_from"] == [] and len(m["untested_with"]) == 2 for m in result["models"])


def test_sign_flip_p_above_the_exact_size_draws_swaps_and_never_gives_0():
    """13 instructions (above EXACT_MAX = 12), every difference 1: the observed sum 13 is reached only by the swaps
    that flip none or all (2 of 2^13). 200 drawn swaps: p = (1 + the drawn as far) / (1 + 200), never 0 (Phipson &
    Smyth); with this seed no draw flips none or all, so p = 1/201. The same seed draws the same swaps."""
    from eval.ranking.permutation import EXACT_MAX, sign_flip_p

    d = np.ones(13)

    def statistic(swaps):
        return ((1 - 2 * swaps) @ d)[:, None]

    p, n_swaps, exact = sign_flip_p(statistic, 13, np.array([13.0]), 200, 0, "test")
    assert (13 > EXACT_MAX, exact, n_swaps, p.tolist()) == (True, False, 200, [1 / 201])
    assert sign_flip_p(statistic, 13, np.array([13.0]), 200, 0, "test")[0].tolist() == [1 / 201]
    # Exact at 12: 2 of the 4096 swaps as far.
    assert sign_flip_p(lambda s: ((1 - 2 * s) @ np.ones(12))[:, None], 12, np.array([12.0]), 0, 0, "test")[:2] == \
        (pytest.approx([2 / 4096]), 4096)


def test_sign_flip_p_reads_as_three_digits_never_0():
    """The test's p is never 0 (the observed swap counts): three significant digits, never "0.000" nor a bound that
    would hide the p a call below alpha 0.001 rests on: 1/2048 -> 0.000488, 4/128 = 0.03125 -> 0.0312,
    11/64 = 0.171875 -> 0.172. A tested cell not called says
    why: its p not below alpha, else its interval holding 0."""
    from eval.ranking.report import sign_flip_p_text, why_not_called

    assert [sign_flip_p_text(p) for p in (1 / 2048, 0.001, 4 / 128, 11 / 64, 1.0, None)] == \
        ["0.000488", "0.001", "0.0312", "0.172", "1", "—"]
    assert why_not_called(-0.6, -0.1, 20 / 256, 0.05 / 3, "alpha/3") == "sign-flip p 0.0781 not below alpha/3 = 0.0167"
    assert why_not_called(-0.1, 0.2, 0.01, 0.05) == "the interval holds 0"


def test_twelve_instructions_p_is_1_in_2048_not_0(tmp_path):
    """A: X 0 on P1-P12, B: 2 (s / 2): B - A is 1 on each of 12 instructions. Of the 2^12 = 4096 sign flips only
    none and all are as far from 0: exact p = 2/4096 = 1/2048 = 0.000488. Three decimals wrote it "p = 0.000" in
    compare.html's tooltip; it reads "0.000488" there and in compare.md, beside the call. The matrix's four cells
    (X x m and the three margins, each over that one cell) are one test, so Holm adjusts a family of one: the same p."""
    from eval.ranking.compare import render_ranking_compare_markdown
    from eval.ranking.report import render_ranking_compare_page

    a = _run(tmp_path / "a", "A", {p: 0.0 for p in range(1, 13)})
    b = _run(tmp_path / "b", "B", {p: 2.0 for p in range(1, 13)})
    result = compare_rankings(a, b, n_boot=200, seed=0)
    cell = result["cells"]["X"]["m"]
    assert (cell["p_value"], cell["verdict"], result["call_test"]["n_swaps"]) == (1 / 2048, "B higher", 4096)
    page = render_ranking_compare_page(result)
    assert "X × m: A 0.0000, B 1.0000, sign-flip p 0.000488" in page and "p = 0.000" not in page
    assert cell["p_holm"] == 1 / 2048
    assert "+1.000 [+1.000, +1.000] p 0.000488, Holm 0.000488 **B higher**" in render_ranking_compare_markdown(result)


def test_untested_cells_are_marked_and_the_fewest_instructions_said(tmp_path):
    """A: X 1 on P1-P4, B: 2 (s / 2): B - A is 1/2 on each; every resample [0.5, 0.5], an interval excluding 0, but
    on 4 instructions the sign-flip test's smallest p is 2/2^4 = 1/8: untested, marked "—" in compare.md, and a line
    says why. The fewest instructions a call needs is computed from alpha: the least n with 2/2^n < alpha, 6 at 0.05
    (2/64 = 0.031), 8 at 0.01 (2/256 = 0.0078 while 2/128 = 0.0156). compare.html's note says a call needs the p and
    the interval, and "—" marks an untested cell."""
    from eval.ranking.compare import render_ranking_compare_markdown
    from eval.ranking.report import render_ranking_compare_page

    a = _run(tmp_path / "a", "A", {p: 1.0 for p in range(1, 5)})
    b = _run(tmp_path / "b", "B", {p: 2.0 for p in range(1, 5)})
    result = compare_rankings(a, b, n_boot=200, seed=0)
    md = render_ranking_compare_markdown(result)
    assert "| X | +0.500 [+0.500, +0.500] — | +0.500 [+0.500, +0.500] — |" in md
    assert ("or — when untested: cells on fewer than 6 instructions both runs scored are not tested at alpha 0.05 "
            "(the test's smallest p there, 2/2^5, is not below it)") in md
    assert "nor any on fewer than 6 the runs score differently (scored alike throughout: p 1)" in md
    page = render_ranking_compare_page(result)
    assert ("the call when the paired sign-flip test's p, adjusted by Holm over the tested cells, is below alpha 0.05 "
            "and the interval excludes 0 on that side; — where the cell is untested (a cell resting on fewer than 6 "
            "instructions") in page
    assert "— where no interval could be drawn" not in page
    strict = render_ranking_compare_markdown(compare_rankings(a, b, n_boot=200, seed=0, alpha=0.01))
    assert "cells on fewer than 8 instructions both runs scored are not tested at alpha 0.01" in strict


def test_compare_rankings_docstring_names_every_key(tmp_path):
    """The Returns section of compare_rankings names every key its result holds (``call_test`` was missing)."""
    a = _run(tmp_path / "a", "A", {1: 1.0, 2: 1.0})
    b = _run(tmp_path / "b", "B", {1: 2.0, 2: 2.0})
    result = compare_rankings(a, b, n_boot=200, seed=0)
    returns = compare_rankings.__doc__.split("Returns:")[1].split("Raises:")[0]
    assert [key for key in result if f'"{key}"' not in returns] == []


def test_a_positive_delta_is_written_with_its_sign_on_the_page_and_in_markdown(tmp_path):
    """A: X 1 on P1, P2; B: 2 (s / 2): B - A is +0.5. compare.html writes the cell "+0.500", as compare.md, the
    leaderboard's pairs and the pointwise compare do (a bare 0.500 beside a -0.500 reads as unsigned)."""
    import re

    from eval.ranking.compare import render_ranking_compare_markdown
    from eval.ranking.report import render_ranking_compare_page

    result = compare_rankings(_run(tmp_path / "a", "A", {1: 1.0, 2: 1.0}), _run(tmp_path / "b", "B", {1: 2.0, 2: 2.0}),
                              n_boot=200, seed=0)
    assert result["cells"]["X"]["m"]["delta"] == 0.5
    page = render_ranking_compare_page(result)
    assert re.search(r'title="X × m[^"]*">\+0\.500<small>', page)
    assert "| +0.500 [" in render_ranking_compare_markdown(result)
    # and a delta rounding to zero is "0.000", signed neither way
    result["cells"]["X"]["m"]["delta"] = -1e-9
    assert "| 0.000 [" in render_ranking_compare_markdown(result)
    assert re.search(r'title="X × m[^"]*">0\.000<small>', render_ranking_compare_page(result))


def test_the_interval_ends_read_alike_on_the_page_and_in_markdown(tmp_path):
    """compare.html writes the interval's ends as compare.md does (``fmt_delta``: signed, an end rounding to zero
    "0.000", never "-0.000"), so that one cell reads the same on both."""
    from eval.ranking.compare import render_ranking_compare_markdown
    from eval.ranking.report import render_ranking_compare_page

    result = compare_rankings(_run(tmp_path / "a", "A", {1: 1.0, 2: 1.0}), _run(tmp_path / "b", "B", {1: 2.0, 2: 2.0}),
                              n_boot=200, seed=0)
    result["cells"]["X"]["m"]["ci"] = [-1e-9, 0.25]
    assert "| +0.500 [0.000, +0.250]" in render_ranking_compare_markdown(result)
    page = render_ranking_compare_page(result)
    assert "<small>[0.000, +0.250]</small>" in page and "-0.000" not in page

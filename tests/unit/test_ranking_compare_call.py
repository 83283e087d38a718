"""The call of a rank comparison (two runs: a cell; three or more: a pair of the leaderboard) and the p-value beside
it come from one count of the resamples (``eval.ranking.compare.called_interval``): a call is never shown beside
p >= alpha, nor "no difference" beside p < alpha. The resamples are set by hand (the draw is replaced), so every
figure is derived in the docstrings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eval.ranking.compare import called_interval, compare_rankings
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


def test_compare_makes_no_call_beside_p_at_alpha(tmp_path, monkeypatch):
    """A: X 0 on P1, 1 on P2; B: 2 on P1, 1 on P2 (s / 2): B - A is 1 on P1, 0 on P2, 1/2 over both. Drawn: 39
    resamples of P1 twice (delta 1) and one of P2 twice (delta 0): p = 2 * 1/40 = 0.05. The call was "B higher" (the
    interpolated interval [0.975, 1]); now [0, 1] and "no difference", as p = alpha says."""
    a = _run(tmp_path / "a", "A", {1: 0.0, 2: 1.0})
    b = _run(tmp_path / "b", "B", {1: 2.0, 2: 1.0})
    _draws(monkeypatch, [[2, 0]] * 39 + [[0, 2]])
    result = compare_rankings(a, b, n_boot=40, seed=0, alpha=0.05)
    cell = result["cells"]["X"]["m"]
    assert (cell["delta"], cell["ci"], cell["p_value"], cell["n_resamples"]) == (0.5, [0.0, 1.0], 0.05, 40)
    assert (cell["verdict"], cell["why_no_call"]) == ("no difference", None)


def test_leaderboard_makes_no_call_beside_p_above_its_level(tmp_path, monkeypatch):
    """Means over P1, P2 (s / 2): A (1 + 1/2) / 2 = 3/4, B 1/2, C 0; three pairs, each at alpha / 3 = 1/60. Pair A-B:
    B - A is -1/2 on P1, 0 on P2. Drawn: 178 resamples of P1 twice (-1/2) and 2 of P2 twice (0): p = 2 * 2/180 =
    1/45 > 1/60. The interpolated interval's top end was -0.246 (a call, "B lower"); now k = 2 (2 * 1/180 < 1/60 <=
    2 * 2/180), the top end is the second largest, 0: "no difference", and B shares A's rank."""
    a = _run(tmp_path / "a", "A", {1: 2.0, 2: 1.0})
    b = _run(tmp_path / "b", "B", {1: 1.0, 2: 1.0})
    c = _run(tmp_path / "c", "C", {1: 0.0, 2: 0.0})
    _draws(monkeypatch, [[2, 0]] * 178 + [[0, 2]] * 2)
    result = leaderboard([str(a), str(b), str(c)], n_boot=180, seed=0)
    pair = next(p for p in result["pairs"] if (p["a"], p["b"]) == (str(a), str(b)))
    assert (pair["delta"], pair["ci"], pair["p_value"]) == (-0.25, [-0.5, 0.0], pytest.approx(1 / 45))
    assert pair["verdict"] == "no difference"
    assert {m["model"]: m["rank"] for m in result["models"]}["B"] == 1

"""The test behind a ranking comparison's call: a paired sign-flip permutation test over instructions.

Two runs of one data set scored each instruction's items; under the null hypothesis that the two candidates are
alike, which of them gave an instruction's answers is a coin toss, so swapping the two runs' totals of any set of
instructions (a sign flip of each instruction's difference) leaves the distribution of the difference of means
unchanged. The two-sided p-value is the share of swaps whose difference is at least as far from 0 as the observed one.
It is exact, every one of the 2^n swaps, up to ``EXACT_MAX`` instructions, and a seeded Monte Carlo draw of swaps
above, whose p is (1 + the swaps as far) / (1 + the swaps drawn), a test at its stated level too (Phipson & Smyth
2010, "Permutation P-values Should Never Be Zero").

Why not ``scipy.stats.permutation_test`` (``permutation_type='samples'``): a comparison tests every cell of POLLUX's
matrix, margins included, and here one pass over a block of swaps moves the runs' sparse per-instruction totals and
gives every cell's swapped difference at once (``swapped_matrices``), where scipy would take one statistic per call
and redo the swaps for each cell. In the exact branch the two agree: over all 2^n swaps the null distribution is
symmetric (a swap set and its complement give opposite differences), so scipy's two-sided p, twice the smaller
one-sided p, is the share as far from 0 (``tests/unit/test_ranking_calls_by_hand.py`` checks it at n <= 12). In the
drawn branch they differ: scipy's is 2 x (1 + the swaps on the observed side) / (1 + the swaps drawn), this one
counts both sides in one share.

Why not the bootstrap's own p-value: resamples of n instructions whose differences all share a sign all fall on that
side of 0 (p = 0) whatever n is, while under the null that happens with probability 2 / 2^n (0.5 on two
instructions), so a bootstrap call on a few instructions would be wrong far more often than its alpha says. The exact
test's smallest p is that 2 / 2^n: ``fewest_for_call`` gives the instructions a call needs at a level.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["EXACT_MAX", "MAX_SWAPS", "fewest_for_call", "smallest_p", "sign_flip_p", "swapped_matrices"]

#: Up to this many instructions every swap is enumerated (2^12 = 4096 of them); above, swaps are drawn.
EXACT_MAX = 12
#: The most swaps a comparison draws when a multiple-testing correction asks for more than ``--n-boot``
#: (``eval.ranking.compare``), as the leaderboard's ``MAX_RESAMPLES`` bounds its draws.
MAX_SWAPS = 100_000
#: Differences within this of the observed one count as at least as far from 0: a swap that changes nothing sums
#: the same totals in another order, and must not fall short of the observed difference by its last bit.
_TOLERANCE = 1e-9
_BLOCK = 512


def smallest_p(instructions: int) -> float:
    """The smallest two-sided p the exact sign-flip test can give on ``instructions`` instructions: 2 / 2^n (the
    observed swap and its mirror image, when no other is as far from 0)."""
    return min(1.0, math.ldexp(1.0, 1 - instructions))  # 2.0 ** n overflowed past 1023 instructions; this is 0


def fewest_for_call(alpha: float) -> int:
    """The fewest instructions on which the sign-flip test can give p < ``alpha``: the least n with 2 / 2^n < alpha
    (6 at 0.05; 7 at 0.05 / 3)."""
    n = max(1, math.floor(math.log2(2.0 / alpha)) + 1) if alpha < 1 else 1
    while smallest_p(n) >= alpha:  # the logarithm's rounding, never trusted alone
        n += 1
    while n > 1 and smallest_p(n - 1) < alpha:
        n -= 1
    return n


def _swaps(n: int, n_random: int, rng: np.random.Generator) -> tuple[bool, Iterator[np.ndarray]]:
    """(exact, blocks of (b, n) 0/1 swap matrices): every swap when ``n <= EXACT_MAX``, else ``n_random`` drawn."""
    if n <= EXACT_MAX:
        every = ((np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1).astype(np.float64)
        return True, iter(np.array_split(every, max(1, len(every) // _BLOCK)))

    def drawn() -> Iterator[np.ndarray]:
        left = n_random
        while left > 0:
            b = min(_BLOCK, left)
            yield rng.integers(0, 2, size=(b, n)).astype(np.float64)
            left -= b

    return False, drawn()


def sign_flip_p(statistic: Callable[[np.ndarray], np.ndarray], n: int, observed: np.ndarray, n_random: int,
                seed: int, key: str) -> tuple[np.ndarray, int, bool]:
    """Two-sided sign-flip p-values of ``observed`` (any shape).

    Args:
        statistic: (b, n) 0/1 swaps (1: that instruction's two sides exchanged) -> (b, *observed.shape) differences.
        n: the instructions.
        n_random: the swaps drawn when ``n > EXACT_MAX``.
        seed, key: the draws' generator (``eval.scoring.bootstrap.cell_rng``).

    Returns:
        (p, swaps counted, exact). A swap whose difference is undefined counts as far as the observed one (it can
        only make p larger). p is NaN where ``observed`` is.
    """
    from eval.scoring import bootstrap

    observed = np.asarray(observed, dtype=np.float64)
    exact, blocks = _swaps(n, n_random, bootstrap.cell_rng(seed, key))
    far = np.zeros(observed.shape, dtype=np.int64)
    total = 0
    for block in blocks:
        d = np.asarray(statistic(block), dtype=np.float64)
        with np.errstate(invalid="ignore"):
            far += (~(np.abs(d) < np.abs(observed) - _TOLERANCE)).sum(axis=0)
        total += len(block)
    if total == 0:
        return np.full(observed.shape, np.nan), 0, exact
    p = far / total if exact else (far + 1.0) / (total + 1.0)
    return np.where(np.isfinite(observed), np.minimum(p, 1.0), np.nan), total, exact


def swapped_matrices(arrays_a, arrays_b, swaps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A, B): the (b, rows, columns) matrices (``eval.ranking.matrix``) of the two runs after swapping their
    instructions marked in ``swaps`` (b, n): each of the four totals a matrix is made of moves from one side to the
    other, so every cell, the means over criteria and over meta values included, is what the swapped runs give."""
    from eval.ranking.matrix import full_matrices

    sides: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for name in ("sums", "counts", "nb_sums", "nb_counts"):
        a, b = getattr(arrays_a, name), getattr(arrays_b, name)
        shift = np.asarray(((b - a).T @ swaps.T).T)  # what the swapped instructions move from B to A
        sides[0].append(np.asarray(a.sum(axis=0)).ravel()[None, :] + shift)
        sides[1].append(np.asarray(b.sum(axis=0)).ravel()[None, :] - shift)
    a_matrices, b_matrices = (full_matrices(*parts, arrays_a.shape) for parts in sides)
    return a_matrices, b_matrices

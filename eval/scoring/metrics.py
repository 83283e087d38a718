"""The POLLUX paper's judge metrics (Appendix D.2), pure and vectorised over items.

Definitions, as the paper states them:

- **MAE** between the judge's score and the *mode* of the experts' scores for the item; items whose experts have
  no unique mode are excluded (and counted). Regression judges, whose scores are real-valued, are compared with
  the experts' *mean* instead (no exclusion needed).
- **Verdict Confidence** of an item: the largest share of one score among its annotators (3 experts scoring
  2, 2, 1 give 2/3). The judge's value replaces one randomly chosen expert with the judge and recomputes that
  share, repeated ``repeats`` (100) times and averaged, each item drawing from its own seeded stream (so its value
  does not depend on which other items were scored); it is reported beside the experts' own.
  An item with fewer than two (non-abstaining) annotators has no Verdict Confidence, for the experts or the judge:
  the paper computes it only where annotations overlap and shows "—" for criteria annotated by one expert
  (arXiv 2505.24616v3, Appendix D.2.2, Tables 15 and 16).
- **Spearman** correlation pooled over all items of an evaluated model or a task type (not per criterion: a
  criterion's scores take 2–5 values, too many ties). Pearson and Kendall's tau-b are reported beside it.
- **Confusion matrices** judge x expert mode, judge scores rounded half up to a level.

Expert scores arrive as a NaN-padded float matrix ``(n_items, max_experts)`` (``pad_scores`` builds one), valid
scores first in each row. A judge score of NaN means "no score" (a parse failure is never a score).

These are the definitions, written plainly. Their bootstrap intervals come from the engine in ``eval/scoring/bootstrap.py``
(items compressed into weighted cells), whose point values are tested against the functions here.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from judge.scales import unique_mode_mask

__all__ = [
    "pad_scores",
    "level_counts",
    "expert_mode",
    "expert_mean",
    "round_half_up",
    "JUDGE_ROUNDING",
    "CONFUSION_ROWS",
    "CONFUSION_COLUMNS",
    "MIN_VC_ANNOTATORS",
    "verdict_confidence_experts",
    "verdict_confidence_judge",
    "item_keys",
    "verdict_confidence_judge_expected",
    "random_labelling_vc",
    "RANDOM_LABELLING_VC",
    "mean_absolute_error",
    "spearman",
    "pearson",
    "kendall",
    "confusion_matrix",
    "finite_pairs",
]

# Verdict Confidence needs overlapping annotations: with one annotator the share is 1 whatever was said, and the
# paper leaves such items out ("the Verdict Confidence was not calculated, as annotations ... were conducted without
# overlap", arXiv 2505.24616v3, Tables 15 and 16).
MIN_VC_ANNOTATORS = 2


# --------------------------------------------------------------------------------------------------- experts


def finite_pairs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) pairs where both are finite, as float64 (a NaN judge score is "no score", never a value).

    Raises:
        ValueError: x and y differ in shape.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"shapes differ: {x.shape} vs {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def pad_scores(score_lists: Sequence[Sequence[float]]) -> np.ndarray:
    """Expert scores of several items as a NaN-padded matrix.

    Args:
        score_lists: one sequence of scores per item (lengths may differ, may be empty).

    Returns:
        float64 array ``(n_items, max_len)``; row i holds item i's scores first, NaN after them.
    """
    lengths = np.fromiter((len(s) for s in score_lists), dtype=np.int64, count=len(score_lists))
    width = int(lengths.max()) if len(lengths) else 0
    padded = np.full((len(lengths), max(width, 1)), np.nan)
    if lengths.sum():
        flat = np.fromiter(itertools.chain.from_iterable(score_lists), dtype=np.float64, count=int(lengths.sum()))
        rows = np.repeat(np.arange(len(lengths)), lengths)
        # Position of each score inside its row: a running index that restarts at every row start.
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        padded[rows, np.arange(len(flat)) - starts] = flat
    return padded


def level_counts(experts: np.ndarray, levels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """How many experts gave each score level, per item.

    Args:
        experts: NaN-padded ``(n, k)`` scores.
        levels: the score levels to count (sorted); default: the distinct scores present.

    Returns:
        ``(counts, levels)``: int64 ``(n, len(levels))`` and the levels.

    Raises:
        ValueError: a score that is not one of ``levels``.
    """
    valid = ~np.isnan(experts)
    values = experts[valid]
    levels = np.unique(values) if levels is None else np.asarray(levels, dtype=np.float64)
    index = np.searchsorted(levels, values)
    index = np.minimum(index, max(len(levels) - 1, 0))
    if len(values) and (len(levels) == 0 or not np.array_equal(levels[index], values)):
        raise ValueError("an expert score is not one of the given levels")
    rows = np.nonzero(valid)[0]
    n, n_levels = experts.shape[0], len(levels)
    counts = np.bincount(rows * n_levels + index, minlength=n * n_levels).reshape(n, n_levels)
    return counts, levels


def expert_mode(experts: np.ndarray, counts: tuple[np.ndarray, np.ndarray] | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The mode of each item's expert scores, and whether it is unique.

    ``counts``: ``level_counts(experts)`` when the caller has them.

    Returns:
        ``(mode, unique)``: mode is NaN where there is no unique mode (a tie for the largest count, or no
        scores); ``unique`` is the boolean mask of items that have one.
    """
    counts, levels = level_counts(experts) if counts is None else counts
    if counts.shape[1] == 0:
        return np.full(len(experts), np.nan), np.zeros(len(experts), dtype=bool)
    unique = unique_mode_mask(counts)  # the rule's one home (judge.scales), shared with the sample's summary
    mode = np.where(unique, levels[counts.argmax(axis=1)], np.nan)
    return mode, unique


def expert_mean(experts: np.ndarray) -> np.ndarray:
    """The mean of each item's expert scores (NaN for an item with none)."""
    valid = ~np.isnan(experts)
    k = valid.sum(axis=1)
    total = np.where(valid, experts, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, total / np.maximum(k, 1), np.nan)


#: How ``round_half_up`` rounds, as metrics.json's ``settings.judge_rounding`` names it: the one rule that makes a
#: real-valued judge score a level, in the judge's Verdict Confidence and the confusion matrices (and the validity
#: section's agreement). The paper says "rounded to the nearest integer" (arXiv 2505.24616v3, Appendix D.2.3) and is
#: silent on halves; POLLUX's public evaluator rounds nothing. A fixed choice, not an option: a half is only a
#: verdict written as one (``[RESULT] 1.5 [END]``), as a regression head's real value is almost never exactly one.
JUDGE_ROUNDING = "half-up"
#: The confusion matrices' axes, as metrics.json's ``settings.confusion_rows`` and ``confusion_columns`` name them:
#: rows the judge's level, columns the experts' mode (the paper's figures plot "predictions vs. expert annotations"
#: and say no more; a fixed choice: the other orientation is the same matrix transposed).
CONFUSION_ROWS, CONFUSION_COLUMNS = "judge", "expert_mode"


def round_half_up(values: np.ndarray) -> np.ndarray:
    """Round to the nearest integer, halves up (1.5 -> 2, 0.5 -> 1), unlike numpy's round-half-to-even."""
    return np.floor(np.asarray(values, dtype=np.float64) + 0.5)


# ---------------------------------------------------------------------------------------- verdict confidence


def verdict_confidence_experts(experts: np.ndarray) -> np.ndarray:
    """Per item, the largest share of one score among its experts: ``max_y (1/N) sum_i [y_i = y]``
    (arXiv 2505.24616v3, Appendix D.2.2); NaN for an item with fewer than ``MIN_VC_ANNOTATORS`` scores."""
    counts, _ = level_counts(experts)
    k = counts.sum(axis=1)
    if counts.shape[1] == 0:
        return np.full(len(experts), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k >= MIN_VC_ANNOTATORS, counts.max(axis=1) / np.maximum(k, 1), np.nan)


def _replacement_shares(experts: np.ndarray, judge: np.ndarray):
    """Shared set-up of the judge's Verdict Confidence.

    For every item with a judge score and at least ``MIN_VC_ANNOTATORS`` experts, and every score level ``l`` an expert could have
    given, the largest share of one score after one expert who gave ``l`` is replaced with the judge.

    Returns:
        ``(rows, shares, counts, level_index, k)``: the items used, ``(m, L)`` shares (meaningless where no expert
        gave ``l``; those columns are never drawn), ``(m, L)`` expert level counts, ``(m, K)`` level index of each
        expert position (-1 for padding), and the experts per item.
    """
    judge_level = round_half_up(judge)
    overlapping = (~np.isnan(experts)).sum(axis=1) >= MIN_VC_ANNOTATORS
    rows = np.nonzero(np.isfinite(judge_level) & overlapping)[0]
    if len(rows) == 0:  # no judged item (a judge whose every verdict failed): nothing to replace
        empty = np.zeros((0, 1))
        return rows, empty, empty.astype(np.int64), np.zeros((0, experts.shape[1]), dtype=np.int64), np.zeros(0)
    sub = experts[rows]
    levels = np.unique(np.concatenate([sub[~np.isnan(sub)], judge_level[rows]]))
    counts, _ = level_counts(sub, levels)
    k = counts.sum(axis=1)
    m, n_levels = counts.shape
    with_judge = counts.copy()
    with_judge[np.arange(m), np.searchsorted(levels, judge_level[rows])] += 1
    shares = np.empty((m, n_levels))
    for removed in range(n_levels):  # L is the number of score levels: 2 to 5 on POLLUX scales
        after = with_judge.copy()
        after[:, removed] -= 1
        shares[:, removed] = after.max(axis=1) / k
    level_index = np.where(~np.isnan(sub), np.searchsorted(levels, np.nan_to_num(sub, nan=levels[0])), -1)
    return rows, shares, counts, level_index, k


def item_keys(ids: Sequence[object] | np.ndarray) -> np.ndarray:
    """A 64-bit key per item from its id, for ``verdict_confidence_judge``'s draws: SipHash-2-4 of the id's UTF-8
    text under pandas' fixed key (``pandas.util.hash_array``), so one id has one key in every run, table order and
    process. ~25 ms for 160,000 ids (``categorize=False``: factorizing first took ten times longer for unique ids).
    """
    import pandas as pd

    return pd.util.hash_array(np.asarray(ids, dtype=object), categorize=False)


# SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): a 64-bit state
# advanced by a fixed odd increment, each output a bijective mix of the state. One stream per item, its start mixed
# from the seed and the item's key, so that an item's draws are a function of (seed, key, repeat) alone.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1, _MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function, in place on a uint64 array (wrapping arithmetic), which it returns."""
    z ^= z >> np.uint64(30)
    z *= _MIX_1
    z ^= z >> np.uint64(27)
    z *= _MIX_2
    z ^= z >> np.uint64(31)
    return z


def verdict_confidence_judge(experts: np.ndarray, judge: np.ndarray, repeats: int = 100, seed: int = 0,
                             keys: np.ndarray | None = None) -> np.ndarray:
    """Per item, the judge's Verdict Confidence: replace one randomly chosen expert with the judge, take the
    largest share of one score, average over ``repeats`` draws ("repeated 100 times per instance",
    arXiv 2505.24616v3, Appendix D.2.2).

    Each item draws from its own stream (SplitMix64, started from ``seed`` and the item's key): its r-th draw is a
    function of (seed, its key, r) only, uniform among its experts. An item's value therefore does not depend on
    which other items the judge scored or in what order they stand: a verdict that turns into a failure changes no
    other item's value, and two runs of one judge agree item by item on the items both scored (``judge-eval
    compare`` pairs them). A real-valued (regression) judge score is rounded half up to a level first.

    Args:
        experts: NaN-padded ``(n, k)`` expert scores.
        judge: ``(n,)`` judge scores, NaN where the judge gave none.
        repeats: number of random replacements averaged (the paper uses 100).
        seed: seed of the replacement draws (any integer; taken modulo 2**64).
        keys: ``(n,)`` uint64 key of each item (``item_keys`` of the ids, as ``judge-eval score`` passes);
            default: the row positions.

    Returns:
        ``(n,)`` float64, NaN where the judge gave no score or the item has fewer than ``MIN_VC_ANNOTATORS``
        expert scores.

    Raises:
        ValueError: a row of ``experts`` with a NaN before a score, naming the first such row.
    """
    out = np.full(len(judge), np.nan)
    valid = ~np.isnan(experts)
    if np.any(valid[:, 1:] & ~valid[:, :-1]):
        # a draw picks one of an item's first k positions: a NaN before a score would be drawn in its place
        row = int(np.flatnonzero((valid[:, 1:] & ~valid[:, :-1]).any(axis=1))[0])
        raise ValueError(f"experts: row {row} has a NaN before a score (scores first, NaN padding after them, as "
                         "pad_scores builds)")
    rows, shares, _, level_index, k = _replacement_shares(experts, np.asarray(judge, dtype=np.float64))
    if len(rows) == 0:
        return out
    keys = np.arange(len(judge), dtype=np.uint64) if keys is None else np.asarray(keys, dtype=np.uint64)
    if keys.shape != (len(judge),):
        raise ValueError(f"keys: shape {keys.shape}, not one per item ({len(judge)})")
    m, width = level_index.shape
    # The share after replacing each expert position, flat: one lookup per draw (padding positions are never drawn).
    by_position = np.take_along_axis(shares, np.maximum(level_index, 0), axis=1).ravel()
    first = np.arange(m, dtype=np.uint64) * np.uint64(width)  # each item's first position in by_position
    experts_per_item = k.astype(np.uint64)
    state = _mix64(keys[rows] ^ _mix64(np.array([seed % 2**64], dtype=np.uint64) + _GOLDEN))
    total = np.zeros(m)
    draw = np.empty(m, dtype=np.uint64)
    for _ in range(repeats):  # vectorised passes over all items; memory stays O(items)
        state += _GOLDEN
        np.copyto(draw, state)
        _mix64(draw)
        # The draw's top 32 bits scaled to [0, k): an expert position, uniform up to 2**-32 (Lemire's reduction).
        draw >>= np.uint64(32)
        draw *= experts_per_item
        draw >>= np.uint64(32)
        draw += first
        total += by_position[draw.astype(np.intp)]
    out[rows] = total / repeats
    return out


def verdict_confidence_judge_expected(experts: np.ndarray, judge: np.ndarray) -> np.ndarray:
    """The exact expectation that ``verdict_confidence_judge`` estimates by sampling (its limit as repeats grow).

    Each expert is replaced with probability 1/k, so the expectation weighs each level's share by the fraction of
    experts who gave that level.
    """
    out = np.full(len(judge), np.nan)
    rows, shares, counts, _, k = _replacement_shares(experts, np.asarray(judge, dtype=np.float64))
    if len(rows):
        out[rows] = (counts * shares).sum(axis=1) / k
    return out


def random_labelling_vc(annotators: int = 3, labels: int = 3) -> float:
    """The expected Verdict Confidence of ``annotators`` who each pick one of ``labels`` labels uniformly at random:
    the exact mean of ``verdict_confidence_experts`` over every labelling. The paper's case, three annotators and
    three labels, is 17/27 ~ 0.63 (arXiv 2505.24616v3, Appendix D.2.2), which it reads as
    "comparable to random labeling" below 60 % (the same appendix)."""
    every = np.array(list(itertools.product(range(labels), repeat=annotators)), dtype=np.float64)
    return float(verdict_confidence_experts(every).mean())


#: The paper's reference point for Verdict Confidence: random labelling by 3 annotators over 3 labels, 17/27.
RANDOM_LABELLING_VC = 17 / 27


# ------------------------------------------------------------------------------------- point statistics


def mean_absolute_error(pred: np.ndarray, ref: np.ndarray) -> float:
    """Mean |pred - ref| over items where both are finite (NaN when there are none)."""
    x, y = finite_pairs(pred, ref)
    return float(np.abs(x - y).mean()) if len(x) else float("nan")


def _constant(values: np.ndarray) -> bool:
    return len(values) < 2 or bool(values.min() == values.max())


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r over pairs where both are finite (NaN if either side is constant or there are fewer than 2)."""
    x, y = finite_pairs(x, y)
    if _constant(x) or _constant(y):
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    return float(np.clip(dx @ dy / np.sqrt((dx @ dx) * (dy @ dy)), -1.0, 1.0))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho over pairs where both are finite: Pearson r of midranks (ties share their average rank).
    NaN if either side is constant or there are fewer than 2 pairs."""
    from scipy.stats import rankdata

    x, y = finite_pairs(x, y)
    if _constant(x) or _constant(y):
        return float("nan")
    return pearson(rankdata(x, method="average"), rankdata(y, method="average"))


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (tie-corrected) over pairs where both are finite; NaN if either side is constant."""
    from scipy.stats import kendalltau

    x, y = finite_pairs(x, y)
    if _constant(x) or _constant(y):
        return float("nan")
    return float(kendalltau(x, y, variant="b").statistic)


def confusion_matrix(pred: np.ndarray, ref: np.ndarray, levels: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Counts of (judge level, expert level) pairs; judge scores rounded half up to levels, the reference as given.

    Args:
        pred: judge scores (NaN skipped).
        ref: expert reference levels, e.g. the mode (NaN skipped): an expert's value, taken as it is, so that a mode
            of 1.5 (a half-point some data holds) is counted in its own column, the value MAE compares with.
        levels: the axis levels; default: every level seen on either side. Pairs outside them are dropped.

    Returns:
        ``(matrix, levels)``: int64 ``(L, L)``, rows = judge, columns = experts.
    """
    x, y = finite_pairs(round_half_up(pred), ref)
    levels = np.unique(np.concatenate([x, y])) if levels is None else np.asarray(levels, dtype=np.float64)
    n_levels = len(levels)
    matrix = np.zeros((n_levels, n_levels), dtype=np.int64)
    if n_levels == 0 or len(x) == 0:
        return matrix, levels
    xi, yi = np.searchsorted(levels, x), np.searchsorted(levels, y)
    xi_c, yi_c = np.minimum(xi, n_levels - 1), np.minimum(yi, n_levels - 1)
    keep = (levels[xi_c] == x) & (levels[yi_c] == y)
    np.add.at(matrix, (xi_c[keep], yi_c[keep]), 1)
    return matrix, levels

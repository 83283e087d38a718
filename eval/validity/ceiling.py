"""The experts' ceiling: how far is an expert from the rest of the panel, and is the judge farther?

For each (item, expert) the rest of that item's experts are the reference: their mode (a unique mode, as the
headline's ``mode`` target) or their mean (the ``mean`` target), the same choice as the report's headline MAE. The
expert's absolute error against it and the judge's against the *same* reference on the *same* pairs give two MAEs
side by side, and quadratic-weighted Cohen's kappa for each (mode reference only: kappa needs categories). No
identities are needed: the pairs come from each item's panel.

Pairs are left out where the rest has no unique mode (mode reference). A pair the judge gave no score on (an
unparseable verdict, a failed request) follows ``failures`` (``--ceiling-failures``):

- ``worst`` (the default): the judge's verdict counts as the largest error it could have on that item's scale
  against the pair's reference — the end of the scale farther from the reference (the lower end on a tie), for
  kappa that level. Left out, a failure would let a judge that fails on the disputed items, the ones far from an
  easy consensus, read "inside the experts' range" on the easy items alone, while the alternative annotator test
  counts the same failures as losses (``eval.validity.alt_test``: ``failures="loss"``, a deliberate difference from
  the authors' notebook). This is this toolkit's choice, as the alt-test's is: the POLLUX paper (arXiv 2505.24616v3)
  has no experts' ceiling and so says nothing on it.
- ``drop``: the pair is left out of both sides (both MAEs then cover the same pairs), the rule before
  ``--ceiling-failures`` existed.

An answer off the item's scale (a 9 on a 1-3 scale: ``judge_levels`` NaN where the score is not) is no rating of the
scale, so kappa cannot take it as it is; a verdict (the judge wrote the number) enters kappa as a failure does under
``worst`` (the end of the scale farther from the pair's reference), under either setting, and keeps its own distance
to the reference in the MAE (a measured answer, as the headline's MAE and ``judge-eval compare``'s paired ceiling gap
read it). A regression head's raw value just past an end (3.6 on a 0-3 scale) is a measurement near that end, not a
number outside the rubric: it enters kappa at the nearer end (``measured``), or a head overshooting where the experts
agree on the top level would read as answering the bottom one. The section passes such a value already at that end
(``eval.validity.section.judge_levels``, one rule for every figure), so there it is no off-scale answer and is not
counted in ``n_judge_off_scale``. Kappa's table had
left it out of the judge's side alone: the judge's kappa covered fewer pairs than the expert's, and a judge answering
off the scale on the disputed items read a better kappa than one failing on them.

Both kappas are over the same pairs: a pair enters them only where the expert's score, the judge's level and the
reference are all levels of the cell's value domain (``CeilingPairs.on_domain``). An expert's half-point (0.5 on a
0-2 rubric) or off-rubric score, which the loader keeps with a warning, or a reference between two levels, takes its
pair out of both tables and is counted in ``n_kappa_off_domain``; the MAEs keep every pair at its distance. Left out
of the expert's table alone, as it was, the expert's kappa read 1.00 beside an expert MAE of 0.06 while the judge's
kept the pairs.

Either way ``n_judge_failed`` counts the failed *pairs* ((item, expert) pairs, the unit of ``n_pairs``) and
``n_items_judge_failed`` the failed *items* among those with a pair (the unit of ``n_items`` and of the alt-test's
``n_items_judge_failed``); ``n_judge_off_scale`` and ``n_items_judge_off_scale`` count the off-scale answers the same
way. The gap ``judge_mae - expert_mae`` gets a percentile
bootstrap interval over items (items resampled with all their pairs), or over whole instructions under
``--bootstrap-unit instruction``. The verdict is a non-inferiority reading of
that interval against a stated margin ``MARGIN`` (0.1 of a scale level of MAE):

- **inside** the experts' range: the whole interval lies at or below ``MARGIN`` — the judge is shown to be no
  farther from the panel than one of its own experts, give or take a tenth of a level;
- **outside**: the whole interval lies above ``MARGIN`` — shown to be farther than that;
- **inconclusive**: the interval straddles ``MARGIN`` (too wide to tell), the interval was read off fewer than
  ``eval.scoring.resample_rules.paired_resamples_to_call(1 - level)`` resamples (41 at the 0.95 level, the floor under
  which ``judge-eval compare`` calls nothing; ``--n-boot 10`` is allowed for a quick look, not for a verdict), or the
  cell has fewer than ``MIN_ITEMS`` units the interval resampled — items, or instructions under ``--bootstrap-unit
  instruction`` (a percentile bootstrap over a handful of units has a handful of distinct values and can be narrow
  by chance: two items with equal gaps give a zero-width interval, and so do 30 items in two instructions whose gaps
  are equal);
- None without an interval (``--n-boot 0``, a one-item cell, a one-instruction cell under ``--bootstrap-unit
  instruction``, no pairs).

"Inside" used to mean "the interval reaches 0", which is also what an interval too wide to say anything does: a
judge that inverts the scale on four items read "inside". Only a shown closeness is "inside" now.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eval.scoring.bootstrap import MIN_VERDICT_UNITS
from eval.scoring.resample_rules import paired_resamples_to_call
from judge.metrics_json.validity import CEILING_FAILURES

__all__ = ["FAILURES", "MARGIN", "MAX_RESAMPLES", "MIN_ITEMS", "CeilingPairs", "ceiling", "ceiling_resamples",
           "cell_ceiling", "leave_one_out_reference", "measured", "scale_ends", "verdict"]

#: The non-inferiority margin of the ceiling's verdict, in MAE (scale levels): a judge up to a tenth of a level
#: farther from the panel than an expert is still inside the experts' range.
MARGIN = 0.1
#: Fewer resampled units (items; instructions under ``--bootstrap-unit instruction``) than this give no verdict but
#: "inconclusive": ``eval.scoring.bootstrap.MIN_VERDICT_UNITS``, the one minimum ``judge-eval compare``'s calls read
#: too (the same as the alt-test's items per expert and the length slopes' pairs).
MIN_ITEMS = MIN_VERDICT_UNITS
#: The most resamples a ceiling interval draws at the 95 % level (``ceiling_resamples``): ``eval.validity.section``
#: caps ``--n-boot`` at it for every cell, and the report's note reads it to say when ``--n-boot`` left too few for a
#: verdict.
MAX_RESAMPLES = 200


def ceiling_resamples(n_boot: int, level: float) -> int:
    """The resamples each ceiling cell draws: ``n_boot``, capped at ``MAX_RESAMPLES``, a cap raised to the verdict's
    floor (``paired_resamples_to_call(1 - level)``) where the level asks for more (201 at 0.99): a cap under the floor
    would leave every ceiling of that level inconclusive whatever ``--n-boot`` asked. Never more than ``n_boot``: an
    ``n_boot`` under the floor draws what it asked, and the report's note says the ceiling then gives no verdict.

    ``judge-eval score`` scores at 0.95 (floor 41, under the cap), so from the command line the cap is
    ``MAX_RESAMPLES``; the raised cap is for a ``ValiditySettings.level`` set in code."""
    return min(n_boot, max(MAX_RESAMPLES, paired_resamples_to_call(1.0 - level)))

#: What a judge failure counts as in the ceiling (module docstring; ``--ceiling-failures``): the default first.
FAILURES = CEILING_FAILURES


def verdict(interval: list, n_units: int, n_resamples: int, level: float = 0.95) -> str | None:
    """The ceiling's verdict from the gap's interval (module docstring): inside, outside, inconclusive, or None
    without an interval. ``n_units``: the units the interval resampled (items, or clusters); ``n_resamples``: the
    resamples it was read off. Under ``paired_resamples_to_call(1 - level)`` of them (41 at 0.95) it is
    "inconclusive", as for too few units: the ends of an interval from ten resamples are read mostly off the single
    most extreme draw.

    Why this floor and not ``eval.scoring.resample_rules.resamples_to_call`` (40 at 0.95, the one ``judge-eval
    rank`` reads): from 2 / (1 - level) + 1 resamples on, each end of the percentile interval has at least one draw
    beyond it. At exactly 41 and 0.95 the end is an order statistic (``np.percentile``'s index (41 - 1) x 0.025 is 1,
    up to rounding: the second smallest draw), so an interval wholly above the margin leaves at most one of 41 draws
    at or below it, a two-sided p of at most 2 / 41 < 1 - level, as compare's calls read
    (``paired_resamples_to_call``); with more resamples the end interpolates and "outside" reads p of at most about
    1 - level (200 draws, five at the margin: [0.975, 1.0], p = 0.05). From 40 the end lies between the two most
    extreme draws."""
    low, high = interval
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return None
    if n_units < MIN_ITEMS or n_resamples < paired_resamples_to_call(1.0 - level):
        return "inconclusive"
    return "inside" if high <= MARGIN else "outside" if low > MARGIN else "inconclusive"


def leave_one_out_reference(experts: np.ndarray, target: str,
                            counts: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """``(n, k)``: for each expert slot, the mode or mean of the item's other experts (NaN where there is none: no
    other expert, no unique mode among them, or an empty slot).

    Args:
        experts: ``(n, k)`` NaN-padded expert scores.
        target: ``mode`` or ``mean``.
        counts: ``eval.scoring.metrics.level_counts(experts)`` when the caller has them.
    """
    from eval.scoring.metrics import level_counts

    valid = ~np.isnan(experts)
    if target == "mean":
        x = np.where(valid, experts, 0.0)
        k = experts.shape[1]
        others = valid[:, None, :] & valid[:, :, None] & ~np.eye(k, dtype=bool)[None]  # [item, slot, other]
        n_others = others.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n_others > 0, (others * x[:, None, :]).sum(axis=2) / np.maximum(n_others, 1), np.nan)
    if target != "mode":
        raise ValueError(f"target must be mode or mean, got {target!r}")
    # The others' level counts of slot j: the item's counts less slot j's own score (not a comparison of every pair
    # of others); a unique mode is a single level at the top count.
    counts, levels = level_counts(experts) if counts is None else counts
    if not len(levels):
        return np.full(experts.shape, np.nan)
    n_others = valid.sum(axis=1, keepdims=True) - 1  # of a valid slot
    # a row of counts per slot with a score and another expert beside it, the only slots with a reference (not an
    # (n, k, levels) array over the empty slots too)
    item, slot = np.nonzero(valid & (n_others > 0))
    position = np.minimum(np.searchsorted(levels, experts[item, slot]), len(levels) - 1)
    rest = counts[item]
    rest[np.arange(len(item)), position] -= 1
    top = rest.max(axis=1)
    unique = (top > 0) & ((rest == top[:, None]).sum(axis=1) == 1)
    out = np.full(experts.shape, np.nan)
    out[item[unique], slot[unique]] = levels[rest[unique].argmax(axis=1)]
    return out


def scale_ends(low: np.ndarray | None, high: np.ndarray | None, experts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's scale ends for ``worst`` failures: ``low`` / ``high`` where finite, else the lowest and highest
    expert score of ``experts`` (the whole table's; NaN without any). From the experts' levels only: the cells' value
    domains, ``CeilingPairs``' own fallback, hold the judge's own levels where a scale is unreadable, and one judge
    answer of 9 there made every failure on the other criteria cost 8. The section's ceiling and ``judge-eval
    compare``'s paired gap (``eval.validity.paired``) both take their ends here."""
    seen = experts[np.isfinite(experts)]
    fallback = (seen.min(), seen.max()) if len(seen) else (np.nan, np.nan)
    low, high = (np.full(len(experts), f) if e is None else np.where(np.isfinite(e), e, f)
                 for e, f in zip((low, high), fallback))
    return low, high


def measured(score_source: np.ndarray) -> np.ndarray:
    """Where a score is a regression head's raw value (``judge.wire_fields.ScoreSource.REGRESSION_HEAD``), ``CeilingPairs``'s
    ``measured``."""
    from judge.wire_fields import ScoreSource

    return np.asarray(score_source, dtype=object) == ScoreSource.REGRESSION_HEAD


class CeilingPairs:
    """Every (item, expert) pair of a table that has a leave-one-out reference, once; a cell takes its items' pairs.

    Pairs the judge failed on are counted per item (``n_failed``) and, by ``failures``, scored as the judge's largest
    error on the item's scale (``worst``: the verdict is the end of ``low`` / ``high`` farther from the pair's
    reference) or left out of the rest (``drop``); pairs whose answer lies off the item's scale (a finite ``judge``
    whose ``judge_levels`` is NaN) are counted per item too (``n_off_scale``) and enter kappa at that end (a
    ``measured`` item's, a regression head's raw value: at the nearer end), the MAE at their own distance (module
    docstring); the pairs come item by item (``np.nonzero`` of the item x slot
    matrix), so a cell's pairs are its items' consecutive runs, in the order a cell's own ``np.nonzero`` would list
    them. Per item the summed gap (judge's error minus the expert's) and the pair count feed the bootstrap; the
    experts', reference's and judge's levels are positions in ``values`` (a superset of every cell's domain; -1 off
    them) for the kappa tables, which take a pair only where all three are levels of the cell's domain.
    """

    def __init__(self, judge: np.ndarray, experts: np.ndarray, reference: np.ndarray,
                 judge_levels: np.ndarray | None, values: np.ndarray, failures: str = "worst",
                 low: np.ndarray | None = None, high: np.ndarray | None = None, measured: np.ndarray | None = None):
        """``low`` / ``high``: each item's scale ends (NaN or None: the ends of ``values``), for ``worst``;
        ``measured``: ``(n,)`` True where the judge's score is a regression head's raw value (None: none is)."""
        from eval.validity.agreement import level_positions

        if failures not in FAILURES:
            raise ValueError(f"ceiling failures must be one of {FAILURES}, got {failures!r}")
        n = len(judge)
        self.values = np.asarray(values, dtype=float)
        item, slot = np.nonzero(np.isfinite(reference))
        # why an item has no pair, for the verdict's coverage (``cell_ceiling``): fewer than two experts, no reference
        # (no unique mode among the others), or every pair dropped (a failure under ``drop``)
        self.n_experts = np.isfinite(experts).sum(axis=1)
        self.n_referenced = np.bincount(item, minlength=n)
        judged = judge[item]
        failed = ~np.isfinite(judged)
        self.n_failed = np.bincount(item[failed], minlength=n)
        levels = judge_levels[item] if judge_levels is not None else judged
        # an answer off the item's scale: a score without a level of it (``judge_levels`` NaN where ``judge`` is not)
        off = ~failed & ~np.isfinite(levels)
        self.n_off_scale = np.bincount(item[off], minlength=n)
        # the failures' verdict under ``worst``, and the off-scale answers' kappa level under either rule: the end of
        # the item's scale farther from the pair's reference (module docstring)
        replaced = (failed if failures == "worst" else np.zeros_like(failed)) | off
        if replaced.any():
            ref = reference[item[replaced], slot[replaced]]
            ends = [np.full(n, np.nan) if e is None else np.asarray(e, dtype=float) for e in (low, high)]
            fallback = (self.values.min(), self.values.max()) if len(self.values) else (np.nan, np.nan)
            lo, hi = (np.where(np.isfinite(e[item[replaced]]), e[item[replaced]], f) for e, f in zip(ends, fallback))
            lo, hi = np.fmin(lo, ref), np.fmax(hi, ref)
            worst = np.where(hi - ref > ref - lo, hi, lo)
            if measured is not None:  # a head's value past an end: that end (module docstring)
                near = off[replaced] & np.asarray(measured, dtype=bool)[item[replaced]]
                worst = np.where(near, np.where(judged[replaced] > hi, hi, lo), worst)
            levels = np.array(levels, dtype=float)
            levels[replaced] = worst
            judged = np.where(failed, levels, judged)  # an off-scale answer keeps its own distance in the MAE
        kept = np.isfinite(judged)  # drop (or a failure on an item with no scale to take an end of)
        item, slot, judged, levels = item[kept], slot[kept], judged[kept], levels[kept]
        expert, ref = experts[item, slot], reference[item, slot]
        self.item = item
        self.expert_error, self.judge_error = np.abs(expert - ref), np.abs(judged - ref)
        self.n_pairs = np.bincount(item, minlength=n)
        self.start = np.r_[0, np.cumsum(self.n_pairs)[:-1]] if n else np.zeros(0, dtype=np.intp)
        self.gap_sum = np.bincount(item, weights=self.judge_error - self.expert_error, minlength=n)
        # Each item's (summed gap, pair count) as one number ordered by (sum, count): a cell's distinct
        # bootstrap cells are the numbers its items take, counted.
        import pandas as pd

        sum_rank, self.sums = pd.factorize(self.gap_sum, sort=True)
        self.sums = np.asarray(self.sums, dtype=float)
        self.width = int(self.n_pairs.max(initial=0)) + 1
        self.cell_key = sum_rank * self.width + self.n_pairs
        # per pair, the expert's, the judge's and the reference's positions in ``values`` (-1: a value outside them)
        self.position = {}
        for name, value in (("expert", expert), ("judge", levels), ("reference", ref)):
            i, inside = level_positions(value, self.values)
            self.position[name] = np.where(inside, i, -1)

    def pairs_of(self, index: np.ndarray) -> np.ndarray:
        """The pairs of the items ``index`` (ascending), item by item."""
        counts = self.n_pairs[index]
        ends = np.cumsum(counts)
        return np.repeat(self.start[index] - (ends - counts), counts) + np.arange(ends[-1] if len(ends) else 0)

    def on_domain(self, pairs: np.ndarray, domain: np.ndarray) -> np.ndarray:
        """Which of ``pairs`` kappa takes over ``domain`` (a subset of ``values``): those whose expert score, judge
        level and reference are all levels of it. One rule for both raters, so that the judge's kappa and the
        expert's are over the same pairs: an expert's half-point (0.5 on a 0-2 rubric) or off-rubric score, or a
        reference between two levels, takes its pair out of both tables, not out of the expert's alone."""
        member = np.zeros(len(self.values) + 1, dtype=bool)  # the last entry: position -1, no level
        member[np.searchsorted(self.values, np.asarray(domain, dtype=float))] = True
        return member[self.position["expert"][pairs]] & member[self.position["judge"][pairs]] & member[
            self.position["reference"][pairs]]

    def kappa(self, rater: str, kept: np.ndarray, domain: np.ndarray) -> float | None:
        """``quadratic_kappa`` of ``rater`` (expert / judge) against the reference over ``domain``, on ``kept``: the
        pairs ``on_domain`` keeps (the caller selects them once for both raters)."""
        from eval.validity.agreement import table_kappa

        size = len(self.values)
        cells = self.position[rater][kept] * size + self.position["reference"][kept]
        table = np.bincount(cells, minlength=size * size).reshape(size, size)
        columns = np.searchsorted(self.values, np.asarray(domain, dtype=float))
        return table_kappa(table[np.ix_(columns, columns)])


def ceiling(judge: np.ndarray, experts: np.ndarray, target: str, domain: np.ndarray, *, n_boot: int = 1000,
            rng: np.random.Generator | None = None, level: float = 0.95, judge_levels: np.ndarray | None = None,
            reference: np.ndarray | None = None, clusters: np.ndarray | None = None, failures: str = "worst",
            low: np.ndarray | None = None, high: np.ndarray | None = None,
            measured: np.ndarray | None = None) -> dict[str, Any]:
    """The experts' ceiling of one cell.

    Args:
        judge: ``(n,)`` the judge's scores (NaN: failed).
        experts: ``(n, k)`` NaN-padded expert scores.
        target: ``mode`` or ``mean``: the rest of the panel's reference, as the headline's.
        domain: the rubric's full scale (kappa's ``labels``).
        n_boot: bootstrap resamples of the gap's interval (0: none).
        rng: the bootstrap's generator.
        level: the interval's coverage.
        judge_levels: the judge's scores as levels of the scale, for kappa (default: ``judge``); NaN where a score
            lies off its item's scale (``eval.validity.section.judge_levels``): kappa takes a failure's level there,
            or the nearer end where ``measured`` (module docstring).
        reference: ``leave_one_out_reference(experts, target)`` when the caller has it (computed once per table).
        clusters: ``(n,)`` the unit the gap's interval resamples whole (``cell_ceiling``); None: items.
        failures: ``worst`` or ``drop``: what a pair the judge failed on counts as (module docstring).
        low, high: ``(n,)`` each item's scale ends for ``worst`` (default, and where NaN: the ends of ``domain``).
        measured: ``(n,)`` True where the judge's score is a regression head's raw value (``CeilingPairs``).

    Returns:
        ``reference``, ``n_items``, ``n_pairs``, ``n_judge_failed`` (pairs), ``n_items_judge_failed``, the items
        without a pair by why (``n_items_few_experts``: fewer than two experts; ``n_items_no_reference``: no unique
        mode among the others of any expert; ``n_items_dropped``: every pair dropped, a failure under ``drop``),
        ``n_judge_off_scale`` (pairs whose answer lies off the item's scale), ``n_items_judge_off_scale``,
        ``expert_mae``, ``judge_mae``, ``gap`` with
        ``gap_ci``, ``expert_kappa`` and ``judge_kappa`` (None for the mean reference), ``n_kappa_off_domain`` (mode
        reference only: pairs left out of both kappas, ``CeilingPairs.on_domain``), ``verdict`` ("inside" /
        "outside" the experts' range, "inconclusive"; None without pairs or without an interval: ``verdict``).
    """
    reference = leave_one_out_reference(experts, target) if reference is None else reference
    pairs = CeilingPairs(judge, experts, reference, judge_levels, domain, failures, low, high, measured)
    return cell_ceiling(pairs, np.arange(len(judge)), target, domain, n_boot=n_boot, rng=rng, level=level,
                        clusters=clusters)


def cell_ceiling(pairs: CeilingPairs, index: np.ndarray, target: str, domain: np.ndarray, *, n_boot: int = 1000,
                 rng: np.random.Generator | None = None, level: float = 0.95,
                 clusters: np.ndarray | None = None) -> dict[str, Any]:
    """``ceiling`` of the items ``index`` (ascending) of the table ``pairs`` was built from. ``clusters``: per item of
    that table, the unit the gap's interval resamples whole (``--bootstrap-unit instruction``: every pair of an
    instruction's items together; ``eval.scoring.bootstrap.cluster_resample_weights``); None: items."""
    from eval.scoring.bootstrap import cluster_resample_weights, percentile_interval, resamplable, resample_weights

    failed, off = pairs.n_failed[index], pairs.n_off_scale[index]
    out: dict[str, Any] = {"reference": target, "n_judge_failed": int(failed.sum()),
                           "n_items_judge_failed": int((failed > 0).sum()),
                           "n_judge_off_scale": int(off.sum()), "n_items_judge_off_scale": int((off > 0).sum())}
    counts = pairs.n_pairs[index]
    mine = pairs.pairs_of(index)
    out.update(n_items=int((counts > 0).sum()), n_pairs=int(len(mine)))
    # the items without a pair, by why: together with ``n_items`` they are every item of the cell
    few = pairs.n_experts[index] < 2
    referenced = pairs.n_referenced[index] > 0
    out.update(n_items_few_experts=int(few.sum()), n_items_no_reference=int((~few & ~referenced).sum()),
               n_items_dropped=int((referenced & (counts == 0)).sum()))
    if not len(mine):
        return {**out, "expert_mae": None, "judge_mae": None, "gap": None, "gap_ci": [None, None],
                "expert_kappa": None, "judge_kappa": None, **({"n_kappa_off_domain": 0} if target == "mode" else {}),
                "verdict": None}
    out["expert_mae"] = float(pairs.expert_error[mine].mean())
    out["judge_mae"] = float(pairs.judge_error[mine].mean())
    out["gap"] = out["judge_mae"] - out["expert_mae"]
    interval, n_units = [None, None], out["n_items"]
    if n_boot > 0 and out["n_items"] >= 2:
        # Items resampled with their pairs: per item the summed gap and the pair count, items with equal sums
        # merged into weighted cells (a handful for integer scales), the gap of a resample a ratio of weighted sums.
        # the distinct (sum, count) cells in (sum, count) order, counted (``CeilingPairs.cell_key``)
        paired = index[counts > 0]
        tally = np.bincount(pairs.cell_key[paired], minlength=len(pairs.sums) * pairs.width)
        keys = np.flatnonzero(tally)
        cell_sum, cell_pairs = pairs.sums[keys // pairs.width], (keys % pairs.width).astype(float)
        rng = rng or np.random.default_rng(0)
        if clusters is None:
            weights = resample_weights(tally[keys], n_boot, rng)
        elif resamplable(len(paired), clusters[paired]):  # one cluster redrawn is always the same pairs
            n_units = len(np.unique(clusters[paired]))  # the verdict's minimum counts what was resampled
            weights = cluster_resample_weights(np.searchsorted(keys, pairs.cell_key[paired]), clusters[paired],
                                               len(keys), n_boot, rng)
        else:
            weights = None
        if weights is not None:
            interval = percentile_interval(np.concatenate([(w @ cell_sum) / (w @ cell_pairs) for w in weights]), level)
    out["gap_ci"] = interval
    if target == "mode":
        kept = mine[pairs.on_domain(mine, domain)]
        out["expert_kappa"] = pairs.kappa("expert", kept, domain)
        out["judge_kappa"] = pairs.kappa("judge", kept, domain)
        out["n_kappa_off_domain"] = int(len(mine) - len(kept))
    else:
        out["expert_kappa"] = out["judge_kappa"] = None
    # No interval (``--n-boot 0``, or a cell of one item): no verdict, rather than one read off the point gap alone.
    out["verdict"] = verdict(interval, n_units, n_boot, level=level)
    return out

"""The alternative annotator test (alt-test): may the judge replace one of the experts?

Calderon, Reichart and Dror, "The Alternative Annotator Test for LLM-as-a-Judge: How to Statistically Justify
Replacing Human Annotators with LLMs" (ACL 2025, arXiv 2501.10970), as its authors' reference implementation
computes it (``alt_test_example.ipynb`` in the public repository ``nitaytech/AltTest``, function ``alt_test``):

1. Items with fewer than ``min_experts_per_item`` experts are left out (and, in the reference, items the LLM did not
   annotate: ``failures="drop"`` here).
2. Leave one expert ``h`` out. On each remaining item ``h`` scored, the judge's and ``h``'s alignment with the item's
   other experts: ``neg_rmse`` (minus the root mean squared difference; the default, as the notebook scores its
   rating-scale data sets) or ``accuracy`` (the share of equal labels; the notebook's ``alt_test`` default, which
   it keeps for its categorical data sets).
3. Indicators, ties counting for both: ``W_f = [judge's alignment >= h's]``, ``W_h = [h's >= judge's]``.
4. Experts with fewer than ``min_items_per_expert`` such items are not tested (listed as untested, not counted);
   an expert of the cell with none (one who scored only items with too few experts) is listed with 0 items, so
   that every named expert of the cell is either tested or untested.
5. Per tested expert a one-sided one-sample t-test of ``d = W_f - W_h`` against ``-epsilon``
   (``scipy.stats.ttest_1samp(d, -epsilon, alternative="greater")``: the same p-value as the reference's
   ``ttest_1samp(W_h - W_f, epsilon, alternative="less")``); H0: the expert beats the judge by ``epsilon`` or more.
   All experts of a family are tested in one call of ``scipy.stats.mstats.ttest_1samp`` on a masked matrix, a row
   per expert: the same statistic, pinned equal by a test.
6. Benjamini–Yekutieli over the tested experts' p-values at ``q``
   (``scipy.stats.false_discovery_control(p, method="by") <= q``, the reference's ``by_procedure``).
7. The winning rate ``omega`` = rejected / tested (the judge passes at ``omega >= 0.5``) and the average advantage
   probability ``rho`` = the mean over tested experts of ``mean(W_f)``.

Three stated rules where the reference leaves a gap:

- **A verdict needs two tested experts** (``MIN_EXPERTS_TESTED``, the default of ``settings.min_experts_tested``,
  ``--alt-test-min-tested``; a deliberate difference from the reference, whose notebook divides by however many
  experts it tested, and which 1 reproduces): with fewer, ``passed`` is None (not decided) while omega and rho are
  still given. The authors' README (``nitaytech/AltTest``) asks for "instances annotated by at least two human
  annotators" and its FAQ says "our procedure requires at least two annotators" (and recommends three); one tested
  expert beside ten untested ones is the one-annotator case, and omega over it is 0 or 1 by that one t-test.
- **Failures** (``failures="loss"``, the default; a deliberate difference from the reference): an item the judge
  failed to score (an unparseable verdict, a failed request) stays in the test as a loss for the judge (``W_f = 0``,
  ``W_h = 1``), so a judge cannot pass by failing on the hard items. ``failures="drop"`` is the reference's rule (the
  item is left out for every expert). An item with no prediction at all (``missing``: a run not finished yet) is no
  failure: the judge was never asked, so it is left out under either rule and not counted as failed — else half a
  run would read as a judge that lost half its items.
- **A constant difference vector** (every ``d`` equal, e.g. the judge wins or ties every item): the t statistic has
  no spread to divide by. The reference leaves it to scipy, whose ``ttest_1samp`` returns t = -inf or +inf and p = 0
  or 1 for such a vector (scipy 1.17) where the constant is not ``-epsilon``; where it is, floating-point rounding
  decides: NaN (never rejected) where the vector's mean comes out exactly ``-epsilon`` (thirty differences of -0.5
  against ``epsilon`` 0.5), else a finite t whose sign is the rounding error's (thirty of -0.2 against 0.2: t -5.39,
  p near 1). Here that outcome is a stated rule rather than scipy's handling of zero variance: p = 0 when the
  constant exceeds ``-epsilon`` (H0 is false on every item), else 1; on the indicators' differences (-1, 0, 1) it is
  the reference's outcome. The rule needs two items or more: **one item** (an expert that scored a single item,
  possible only under ``--alt-test-min-items 1``) leaves the t-test no degree of freedom, and its p-value is NaN, as
  scipy's ``ttest_1samp`` gives the reference; the expert counts among the tested and is never rejected
  (``by_rejected``), as the reference's Benjamini–Yekutieli step, which never selects a NaN, treats it.

**Two experts** (``n_items_two_experts``: of the items a tested expert is left out on, ``n_items_tested``, those
whose only other expert is one; the report's caveat,
``eval.validity.section.split_sentence``): the authors' FAQ ("Why do you recommend at least three human annotators
and not two?", in the README of ``nitaytech/AltTest``) says that with two annotators the procedure "simply checks
whether the LLM aligns more with one annotator than the other", lacking a consensus signal. A judge that copies one
of two experts then wins against both (ties count for both, and against the copied expert the judge's alignment is
that expert's own). The minimums stay as they are (the authors' two experts per item and 30 items per expert, this
toolkit's two tested experts for a verdict); the sentence and the report's alt-test line say what such a verdict
means where every item tested has two experts, and what omega can be where fewer than three experts were tested.

Per domain (task type, criterion) the test runs on each domain's items and one Benjamini–Yekutieli correction covers
every domain x expert p-value of that grouping; the result says in how many domains the judge passes, of those with
a verdict (``min_experts_tested`` tested experts or more), and how many domains have none.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from judge.metrics_json.validity import MIN_EXPERTS_TESTED, AltTestSettings

__all__ = ["MIN_EXPERTS_TESTED", "AltTestSettings", "Indicators", "alt_test", "by_rejected",
           "difference_p_value", "indicators", "prepare", "stable_order", "summarise",
           "summarise_by_domain"]  # fmt: skip


def indicators(judge: np.ndarray, experts: np.ndarray, named: np.ndarray, settings: AltTestSettings,
               missing: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Per (item, left-out expert): the indicators W_f (judge as good or better) and W_h (expert as good or better).

    Args:
        judge: ``(n,)`` the judge's scores, NaN where it failed (or where the item is ``missing``).
        experts: ``(n, k)`` NaN-padded expert scores.
        named: ``(n, k)`` which of those scores belong to a named expert (only they take part).
        settings: the test's parameters.
        missing: ``(n,)`` True where the item has no prediction at all (module docstring: left out, not a failure);
            None: every NaN is a failure.

    Returns:
        ``(item, slot, w_judge, w_expert, counts)``: the item index and the expert's column of each pair, the two
        indicators (0/1 floats), and counts of the items left out (``n_items_few_experts``) and of the items the
        judge failed on (``n_items_judge_failed``, dropped or scored as losses); missing items count in neither.
    """
    valid = ~np.isnan(experts) & named
    n_experts = valid.sum(axis=1)
    asked = np.ones(len(judge), dtype=bool) if missing is None else ~np.asarray(missing, dtype=bool)
    enough = (n_experts >= settings.min_experts_per_item) & asked
    failed = ~np.isfinite(judge)
    # an item whose experts are all unnamed has too few named experts too: left out, so counted
    rated = (~np.isnan(experts)).any(axis=1)
    counts = {"n_items_few_experts": int((rated & ~enough & asked).sum()),
              "n_items_judge_failed": int((enough & failed).sum())}
    kept = enough & ~failed if settings.failures == "drop" else enough
    rows = np.flatnonzero(kept)
    x, ok = experts[rows], valid[rows]
    k = x.shape[1]
    # per (item, left-out expert) pair, the item's scores and which of them are the others': a row per pair rather
    # than an item x expert x expert array, whose rows for the empty slots were computed only to be dropped
    item, slot = np.nonzero(ok)
    scores = x[item]
    others = ok[item] & (np.arange(k)[None, :] != slot[:, None])
    n_others = others.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if settings.scoring == "neg_rmse":
            empty = ~others

            def align(pred):  # -sqrt(mean((pred - other)^2)), the reference's neg_rmse
                squared = pred - scores  # squared and masked in place: one array per call
                np.square(squared, out=squared)
                np.copyto(squared, 0.0, where=empty)
                return -np.sqrt(squared.sum(axis=1) / n_others)
        else:
            def align(pred):  # mean(pred == other), the reference's accuracy
                return ((pred == scores) & others).sum(axis=1) / n_others
        expert_align, judge_align = align(x[item, slot][:, None]), align(judge[rows][item][:, None])
    lost = failed[rows][item]
    w_judge = np.where(lost, 0.0, (judge_align >= expert_align).astype(float))
    w_expert = np.where(lost, 1.0, (expert_align >= judge_align).astype(float))
    return rows[item], slot, w_judge, w_expert, counts


def difference_p_value(difference: np.ndarray, epsilon: float) -> tuple[float, bool]:
    """The one-sided p-value of H0 "mean(W_f - W_h) <= -epsilon", and whether the difference vector is constant.

    A constant vector of two items or more gets the stated rule (module docstring): p = 0 when its value exceeds
    -epsilon, else 1. One item gives the t-test no degree of freedom: p is NaN (never rejected: ``by_rejected``).
    """
    from scipy.stats import ttest_1samp

    if len(difference) < 2:
        return float("nan"), False
    if np.ptp(difference) == 0:
        return (0.0 if difference[0] > -epsilon else 1.0), True
    return float(ttest_1samp(difference, -epsilon, alternative="greater").pvalue), False


def by_rejected(p_values: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini–Yekutieli at ``q``: the adjusted p-values and which hypotheses are rejected.

    An undefined p-value (NaN: an expert with one item, ``difference_p_value``) counts among the hypotheses and is
    never rejected, its adjusted value NaN: the reference's step-up procedure (``alt_test_example.ipynb``) counts it
    in ``m`` and never selects it. scipy's ``false_discovery_control`` refuses NaN, so it is handed 1 there: the same
    number of hypotheses, last in the order, and a p-value no ``q`` below 1 rejects, so the others' adjusted values
    and rejections are the reference's.
    """
    from scipy.stats import false_discovery_control

    p_values = np.asarray(p_values, dtype=float)
    if not len(p_values):
        return p_values, np.zeros(0, dtype=bool)
    undefined = np.isnan(p_values)
    adjusted = false_discovery_control(np.where(undefined, 1.0, p_values), method="by")
    adjusted = np.where(undefined, np.nan, adjusted)
    return adjusted, ~undefined & (adjusted <= q)


def _p_values(difference: np.ndarray, bounds: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """``difference_p_value`` of each run ``difference[bounds[g]:bounds[g + 1]]``, in one vectorised call.

    The runs are the rows of one masked matrix and ``scipy.stats.mstats.ttest_1samp`` tests them all at once (the
    same statistic as ``scipy.stats.ttest_1samp``, a row per expert); constant runs of two items or more get the
    stated rule, one-item runs a NaN p-value.
    """
    from scipy.stats import mstats

    lengths = np.diff(bounds)
    if not len(lengths):
        return np.zeros(0), np.zeros(0, dtype=bool)
    width = int(lengths.max())
    column = np.arange(len(difference)) - np.repeat(bounds[:-1], lengths)
    row = np.repeat(np.arange(len(lengths)), lengths)
    values = np.zeros((len(lengths), width))
    values[row, column] = difference
    mask = np.arange(width)[None, :] >= lengths[:, None]
    low = np.where(mask, np.inf, values).min(axis=1)
    high = np.where(mask, -np.inf, values).max(axis=1)
    single = lengths < 2  # no degree of freedom: the masked t-test's value there is no p-value
    constant = (low == high) & ~single
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.ma.filled(mstats.ttest_1samp(np.ma.masked_array(values, mask), -epsilon, axis=1,
                                            alternative="greater").pvalue, np.nan).astype(float)
    p = np.where(constant, np.where(low > -epsilon, 0.0, 1.0), p)
    return np.where(single, np.nan, p), constant


def stable_order(codes: np.ndarray) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` of non-negative integer codes; below 2**16 as 16-bit integers, which
    numpy sorts by radix (the same order, without a comparison sort of the full test's half a million pairs)."""
    codes = np.asarray(codes)
    if len(codes) and codes.min() >= 0 and codes.max() < 2**16:
        codes = codes.astype(np.uint16)
    return np.argsort(codes, kind="stable")


def _per_expert(ids: np.ndarray, item: np.ndarray, w_judge: np.ndarray, w_expert: np.ndarray,
                groups: np.ndarray | None, settings: AltTestSettings,
                present: tuple[np.ndarray, np.ndarray] | None = None) -> list[dict[str, Any]]:
    """One row per (group, expert): its item count, advantage probability and p-value (None when untested).

    ``present``: ``(group codes, expert codes)`` of every score of the cell's named experts, pairs or not (codes as
    ``groups`` and ``ids`` give them): a (group, expert) among them without pairs gets a row of 0 items, untested.
    """
    import pandas as pd

    # ids and groups arrive as integer codes with their names (``prepare`` / ``summarise_by_domain``) or as labels
    if groups is None:  # one group, named even when no pair is in it (its experts are then all untested)
        groups = (np.zeros(len(item), dtype=np.int64), np.array([None], dtype=object))
    group_codes, group_names = groups if isinstance(groups, tuple) else pd.factorize(groups)
    expert_codes, expert_names = ids if isinstance(ids, tuple) else pd.factorize(ids)
    width = max(len(expert_names), 1)
    key = group_codes.astype(np.int64) * width + expert_codes
    order = stable_order(key)
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else np.zeros(0, dtype=np.intp)
    keys = ordered[starts]
    bounds = np.r_[starts, len(order)]
    lengths = np.diff(bounds)
    if present is not None and len(present[0]):
        scored = np.flatnonzero(np.bincount(present[0].astype(np.int64) * width + present[1]))
        unpaired = np.setdiff1d(scored, keys, assume_unique=True)
    else:
        unpaired = np.zeros(0, dtype=np.int64)
    tested = lengths >= settings.min_items_per_expert
    runs = np.flatnonzero(tested)
    # the tested runs, back to back, with their own bounds: the runs tile ``order``, so a mask per run keeps them in
    # their order (one slice per run cost a Python step per (domain, expert))
    take = order[np.repeat(tested, lengths)]
    run_bounds = np.r_[0, np.cumsum(lengths[runs])]
    p, constant = _p_values(w_judge[take] - w_expert[take], run_bounds, settings.epsilon)
    advantage = np.add.reduceat(w_judge[take], run_bounds[:-1]) / lengths[runs] if len(runs) else np.zeros(0)
    # plain Python values once, rather than a numpy scalar per row and field
    groups_of, names = list(group_names), [str(name) for name in expert_names]
    results = zip(advantage.tolist(), p.tolist(), constant.tolist())  # the tested runs', in the runs' order
    out = []
    for code, n_items, is_tested in zip(keys.tolist(), lengths.tolist(), tested.tolist()):
        row: dict[str, Any] = {"group": groups_of[code // width], "expert": names[code % width], "n_items": n_items,
                               "tested": is_tested}
        if is_tested:
            advantage_probability, p_value, constant_difference = next(results)
            row.update(advantage_probability=advantage_probability, p_value=p_value,
                       constant_difference=constant_difference)
        out.append(row)
    for code in unpaired.tolist():
        out.append({"group": groups_of[code // width], "expert": names[code % width], "n_items": 0, "tested": False})
    return out


def _summary(rows: list[dict[str, Any]], min_tested: int) -> dict[str, Any]:
    """The outcome of one test over its experts' rows; below ``min_tested`` tested experts no verdict."""
    tested = [r for r in rows if r["tested"]]
    untested = [{"expert": r["expert"], "n_items": r["n_items"]} for r in rows if not r["tested"]]
    experts = [{"expert": r["expert"], "n_items": r["n_items"], "advantage_probability": r["advantage_probability"],
                "p_value": r["p_value"], "p_adjusted": r["p_adjusted"], "rejected": r["rejected"],
                "constant_difference": r["constant_difference"]} for r in tested]
    omega = sum(r["rejected"] for r in tested) / len(tested) if tested else None
    return {
        "n_experts_tested": len(tested),
        "n_experts_rejected": sum(r["rejected"] for r in tested),
        "winning_rate": omega,
        "advantage_probability": float(np.mean([r["advantage_probability"] for r in tested])) if tested else None,
        "passed": None if len(tested) < min_tested else bool(omega >= 0.5),
        "experts": experts,
        "untested": untested,
    }


@dataclass
class Indicators:
    """The alt-test's per-(item, expert) indicators of a whole table, computed once; cells select from them.

    Attributes:
        item, expert: the item index and the left-out expert's code of each pair (``expert_names[code]``).
        w_judge, w_expert: the indicators W_f and W_h (0/1 floats).
        few_experts: ``(n,)`` items left out for too few named experts (but with some expert score, named or not).
        judge_failed: ``(n,)`` items with enough experts that the judge failed on.
        scored_item, scored_expert: every (item, named expert) score of the asked items, pairs or not (the
            expert's code as in ``expert``): whose experts a cell has, to list the ones without pairs as untested.
    """

    item: np.ndarray
    expert: np.ndarray
    expert_names: np.ndarray
    w_judge: np.ndarray
    w_expert: np.ndarray
    few_experts: np.ndarray
    judge_failed: np.ndarray
    scored_item: np.ndarray
    scored_expert: np.ndarray


def prepare(judge: np.ndarray, experts: np.ndarray, expert_ids: np.ndarray | None,
            settings: AltTestSettings, expert_codes: tuple[np.ndarray, np.ndarray] | None = None,
            missing: np.ndarray | None = None) -> Indicators | None:
    """The indicators of every (item, named expert) pair, or None when the data names no experts.

    ``expert_codes``: the ids already numbered, ``(codes, names)`` with ``codes`` an ``(n, k)`` integer matrix
    parallel to ``experts`` (-1 where unnamed), when the caller has them; the pairs' experts are numbered again in
    the order they first appear, as from the ids themselves. ``missing``: items without a prediction (left out of
    every count and pair, ``indicators``).
    """
    if expert_ids is None:
        return None
    import pandas as pd

    named = np.not_equal(expert_ids, None) if expert_codes is None else expert_codes[0] >= 0
    item, slot, w_judge, w_expert, _ = indicators(judge, experts, named, settings, missing)
    n_named = (~np.isnan(experts) & named).sum(axis=1)
    if missing is not None:
        n_named = np.where(missing, 0, n_named)  # no pairs, no counts: as if the item were not in the table
    enough = n_named >= settings.min_experts_per_item
    # items with expert scores, named or not (``indicators``' count): those not ``enough`` are left out, counted
    rated = (~np.isnan(experts)).any(axis=1)
    if missing is not None:
        rated &= ~np.asarray(missing, dtype=bool)
    scored = ~np.isnan(experts) & named
    if missing is not None:
        scored &= ~np.asarray(missing, dtype=bool)[:, None]
    scored_item, scored_slot = np.nonzero(scored)
    # the pairs' experts numbered in the order they first appear among the pairs, then those without pairs
    if expert_codes is None:
        codes, names = pd.factorize(np.concatenate([expert_ids[item, slot], expert_ids[scored_item, scored_slot]]))
    else:
        given = np.concatenate([expert_codes[0][item, slot], expert_codes[0][scored_item, scored_slot]])
        present = pd.unique(given)
        renumber = np.zeros(len(expert_codes[1]), dtype=np.intp)
        renumber[present] = np.arange(len(present))
        codes, names = renumber[given], expert_codes[1][present]
    return Indicators(item, codes[:len(item)], np.asarray(names, dtype=object), w_judge, w_expert,
                      rated & ~enough, enough & ~np.isfinite(judge), scored_item, codes[len(item):])


def _unavailable() -> dict[str, Any]:
    return {"available": False,
            "why": "the data names no experts (expert_ids): the alternative annotator test needs to know who scored "
                   "what, and is never run on list positions"}


def _corrected(rows: list[dict[str, Any]], q: float) -> None:
    tested = [r for r in rows if r["tested"]]
    adjusted, rejected = by_rejected(np.array([r["p_value"] for r in tested]), q)
    for r, a, rej in zip(tested, adjusted.tolist(), rejected.tolist()):
        r.update(p_adjusted=a, rejected=bool(rej))


def _pairs_in(found: Indicators, items: np.ndarray | None):
    """The pairs of the items in ``items`` (a boolean mask over the table; None: all): a mask, or every pair."""
    if items is None or items.all():
        return slice(None)
    return items[found.item]


def _pairs_in_scored(found: Indicators, items: np.ndarray | None):
    """The scores (``Indicators.scored_item``) of the items in ``items``, as ``_pairs_in`` selects pairs."""
    if items is None or items.all():
        return slice(None)
    return items[found.scored_item]


def summarise(found: Indicators | None, settings: AltTestSettings, items: np.ndarray | None = None) -> dict[str, Any]:
    """The alt-test over the items in ``items`` (a boolean mask over the table; None: all)."""
    if found is None:
        return _unavailable()
    pairs = _pairs_in(found, items)
    item = found.item[pairs]
    scored = _pairs_in_scored(found, items)
    rows = _per_expert((found.expert[pairs], found.expert_names), item, found.w_judge[pairs],
                       found.w_expert[pairs], None, settings,
                       (np.zeros(len(found.scored_expert[scored]), dtype=np.int64), found.scored_expert[scored]))
    _corrected(rows, settings.q)
    in_cell = np.ones(len(found.few_experts), dtype=bool) if items is None else items
    experts = found.expert[pairs]
    tested = np.bincount(experts, minlength=len(found.expert_names)) >= settings.min_items_per_expert
    n_items, (n_tested,), (n_two,) = _items_tested(item, tested[experts])
    return {"available": True, **asdict(settings), "n_items": n_items,
            "n_items_few_experts": int((found.few_experts & in_cell).sum()),
            "n_items_judge_failed": int((found.judge_failed & in_cell).sum()),
            "n_items_tested": n_tested, "n_items_two_experts": n_two,
            **_summary(rows, settings.min_experts_tested)}


def _items_tested(item: np.ndarray, tested_pair: np.ndarray, group: np.ndarray | None = None,
                  n_groups: int = 1) -> tuple[int, list[int], list[int]]:
    """The items of the pairs ``item`` (ascending, as the pairs come), then per group of ``group`` (each item's
    group code; None: one group) the items a tested expert is left out on (``tested_pair``: the pair's expert is
    tested) and of those the ones whose left-out expert has one other expert to be compared with: with only those,
    the test asks which of two experts the judge sides with more (the authors' FAQ on three annotators; module
    docstring). An item only untested experts scored tests nothing."""
    # the pairs come item by item: the items are the runs, each as long as the item's named experts
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]]) if len(item) else np.zeros(0, dtype=np.intp)
    tested_items = (np.logical_or.reduceat(tested_pair, starts) if len(starts) else np.zeros(0, dtype=bool))
    two = np.diff(np.r_[starts, len(item)]) == 2
    codes = np.zeros(len(starts), dtype=np.int64) if group is None else np.asarray(group)[item[starts]]
    count = [np.bincount(codes[where], minlength=n_groups).tolist() for where in (tested_items, two & tested_items)]
    return len(starts), count[0], count[1]


def summarise_by_domain(found: Indicators | None, settings: AltTestSettings, domains: np.ndarray,
                        items: np.ndarray | None = None) -> dict[str, Any]:
    """The alt-test within each domain, one Benjamini–Yekutieli correction over every domain x expert p-value.

    ``domains`` is each item's domain label, or ``(codes, names)`` as ``pandas.factorize`` gives them.

    Returns:
        ``available`` / ``why`` as ``alt_test``; ``by_domain`` {label: the ``alt_test`` summary of that domain},
        ``n_passed`` of ``n_domains`` (domains with a verdict: at least ``min_experts_tested`` tested experts), and
        ``n_domains_without_verdict``: the other domains of the items in ``items`` (fewer tested experts, or no
        named expert at all), so that "passes in 0 of 0" says how many domains it is silent on.
    """
    if found is None:
        return _unavailable()
    pairs = _pairs_in(found, items)
    import pandas as pd

    item = found.item[pairs]
    # per item, not per pair; the caller may pass them factorised already (codes, names), once for every split
    domain_codes, domain_names = (domains if isinstance(domains, tuple)
                                  else pd.factorize(np.asarray(domains, dtype=object), use_na_sentinel=False))
    scored = _pairs_in_scored(found, items)
    rows = _per_expert((found.expert[pairs], found.expert_names), item, found.w_judge[pairs], found.w_expert[pairs],
                       (domain_codes[item], domain_names), settings,
                       (domain_codes[found.scored_item[scored]], found.scored_expert[scored]))
    _corrected(rows, settings.q)
    by_domain: dict[str, list] = {}
    for r in rows:
        by_domain.setdefault(str(r["group"]), []).append(r)
    # an expert is tested within a domain (its items there), so the domain's counts of the items a tested expert is
    # left out on, and of those with two experts: what the report's two-experts caveat reads, as the overall cell's
    experts = found.expert[pairs]
    width = max(len(found.expert_names), 1)
    key = domain_codes[item].astype(np.int64) * width + experts
    tested_pair = np.bincount(key)[key] >= settings.min_items_per_expert if len(key) else np.zeros(0, dtype=bool)
    _, n_tested, n_two = _items_tested(item, tested_pair, domain_codes, len(domain_names))
    counts = {str(name): (n_tested[code], n_two[code]) for code, name in enumerate(domain_names)}
    summaries = {label: {**_summary(group, settings.min_experts_tested), "n_items_tested": counts[label][0],
                         "n_items_two_experts": counts[label][1]} for label, group in sorted(by_domain.items())}
    judged = [s for s in summaries.values() if s["passed"] is not None]
    # every domain with an item here, pairs or not: one without any named expert has no row above
    in_cell = domain_codes if items is None else domain_codes[items]
    n_present = len(np.unique(in_cell))
    return {"available": True, **asdict(settings), "by_domain": summaries,
            "n_passed": sum(s["passed"] for s in judged), "n_domains": len(judged),
            "n_domains_without_verdict": n_present - len(judged)}


def alt_test(judge: np.ndarray, experts: np.ndarray, expert_ids: np.ndarray | None,
             settings: AltTestSettings = AltTestSettings(), missing: np.ndarray | None = None) -> dict[str, Any]:
    """The alt-test of one judge against the named experts of a set of items.

    Args:
        judge: ``(n,)`` the judge's scores, NaN where it failed.
        experts: ``(n, k)`` NaN-padded expert scores.
        expert_ids: ``(n, k)`` their ids (None where unnamed), or None when the data names no experts.
        settings: the test's parameters.
        missing: ``(n,)`` True where the item has no prediction at all: left out, not a failure (module docstring).

    Returns:
        A JSON-ready dict: ``available`` (False, with ``why``, without ids), the settings, ``winning_rate`` (omega),
        ``advantage_probability`` (rho), ``passed`` (omega >= 0.5; None below ``min_experts_tested``), per tested
        expert ``experts`` rows (``n_items``, ``advantage_probability``, ``p_value``, ``p_adjusted``,
        ``rejected``, ``constant_difference``), ``untested`` experts with their item counts, and item counts.
    """
    return summarise(prepare(judge, experts, expert_ids, settings, missing=missing), settings)


"""The ``validity`` section of ``metrics.json``: can this judge stand in for an expert, and where is it biased?

Why one module of ~580 lines: the rules below (which items every figure covers) hold for every cell at once, and the
per-table precomputations that carry them feed every cell; split, each half would restate them. How a judge's score
becomes a level is ``eval.validity.scale_reading``'s, shared with the confusion matrices.

Built from the same column-wise item table as the headline metrics (``eval.scoring.item_table``), per test (split) and
cell (overall, task type, criterion):

- ``alt_test`` (``eval.validity.alt_test``): overall per split; per task type and per criterion the domain's
  result within one Benjamini–Yekutieli family per grouping (``alt_test_domains``: "passes in X of K");
- ``ceiling`` (``eval.validity.ceiling``): the judge's MAE and kappa beside an expert's, against the rest of the
  panel, on the same pairs;
- ``agreement`` (``eval.validity.agreement``): Krippendorff's alpha with and without the judge, kappa, agreement by
  how much the experts agreed — overall and per criterion (a task type mixes criteria of different scales);
- ``leniency`` (every cell), ``marginal_homogeneity`` (overall, criteria) and ``length_bias`` (overall cells;
  ``eval.validity.bias``).

Intervals and tests that come from a formula rather than a bootstrap — the leniency interval, the length slopes'
intervals and the marginal homogeneity test — are clustered by answer (``bias.answer_codes``): the criteria rows of
one answer share its text and the raters' reading of it, and taken as independent rows they narrow an interval by
about the square root of the criteria per answer with no more information. Under ``bootstrap_unit`` ``instruction``
they are clustered by instruction instead (every answer of an instruction together), the unit the bootstraps then
resample. A table that knows neither the answers' lengths nor the instructions leaves them per item.

A cell's value domain is the rubric's full scale: every integer level from the lowest to the highest end of the scales
of its items (``scale_low`` / ``scale_high``), or each scale's own levels where those ends lie farther apart than one
rubric may span (``judge.scales.MAX_LEVELS``: a pooled cell of a 0-2 and a 900-1000 rubric); an item without a
readable scale adds the integer levels its experts' scores span (floor to ceiling) and the judge's levels there that
lie within the ends the ceiling takes for it (its criterion's expert range, else the table's, floor to ceiling:
``rating_ends``): a judge's answer outside them is off that scale as on a known one (below), never a level of the
domain of its own, which would add a level per distinct stray answer (the value counts' coincidences a levels x
levels table per distinct row) and weigh 3 as one step from 2 in kappa. The judge's scores enter kappa, alpha and the confusion
margins as levels: rounded half up, never clipped into the item's scale (a verdict of 5 on a 0-2 scale is no 2), but
a regression head's raw value past an end is a measurement near it and takes that end, the ceiling's rule
(``ceiling.measured``), in kappa, alpha, the margins, the exact agreement and the alt-test's ``accuracy`` alike (2.6
on 0-2 is 2, as 2.4 is; it had read as 2 in the ceiling's kappa, off the scale in the rest); any other
level off the item's scale is no rating of it, so it is left out of kappa, alpha with the judge and the margins,
counted in ``agreement.n_items_judge_off_scale`` (every such item) and ``n_kappa_off_domain`` (items with a unique
mode), enters the ceiling's kappa as a failure does (``ceiling``, counted in ``n_judge_off_scale``), and counts as a
miss in the exact agreement (``judge_levels``, ``off_scale_levels``), as the alt-test under ``accuracy`` compares it
(``alt_test_judge``). The MAE to the experts' mean (``agreement``'s classes) takes the score itself, as the headline's
MAE does. An expert score off the domain (a half-point) is out of both alphas and both ceiling kappas,
counted (``agreement.n_expert_scores_off_domain``, ``ceiling.n_kappa_off_domain``). Each split gets one plain
``sentence`` the report leads with.

Items with no prediction at all (status ``missing``: a run not finished yet) are left out of every figure of the
section and counted per cell (``n_items_missing``): the judge was never asked, so they are neither a judge failure
(the alt-test's ``failures`` rule and the ceiling's, ``ceiling_failures``, are about unparseable verdicts and failed
requests) nor items of the experts' own figures — every figure covers the same items, those the run predicted. A
cell whose items are all missing is left out.

An item without a readable scale whose criterion's own experts' scores span more levels than a rubric may hold
(its lowest to its highest expert score over the table, floor to ceiling: ``item_scale_ends``, ``rating_ends``;
``judge.scales.MAX_LEVELS``, 101: 0..100) is left out of every figure too (``too_wide_to_rate``); a criterion whose
experts all gave one level, or none, tells no span and is kept, whatever the table's range. It is named with its
criterion: per split ``criteria_left_out`` (criterion -> items, written only where any is), a clause of the sentence
and a line of the report (``eval.validity.render.left_out_criteria``). Expert scores of 0 and 500 tell no rubric's scale: every
distinct judge answer between them was a level of its own (a levels x levels coincidence table per distinct row,
nearly empty, and a kappa and alpha measuring nothing), and pooled with the other criteria its errors of hundreds
would swamp the overall ceiling and leniency. Such an item counts there whatever its status, not in
``n_items_missing``, so that each item of a split is counted once.

Everything per item is computed once for the table, and a cell selects its items' rows of it: the judge's levels,
the experts' mode, mean and agreement class, the leave-one-out references and the ceiling's pairs with their
per-item sums (``ceiling.CeilingPairs``), the value counts coded once over the union of the cells' domains
(``agreement.CodedCounts``), the ids and the answers numbered once; the leniency intervals of all cells take their
t quantiles from one scipy call (``bias.leniencies``). Each statistic is pinned to its per-cell definition by tests;
what the section costs on the 160,000-item bench table is in docs/performance.md.

The judge's failed verdicts (unparseable, failed requests) count in the alt-test as losses (``alt_test.failures``,
``loss`` by default) and in the ceiling as the largest error the judge could have on the item's scale
(``ceiling_failures``, ``worst`` by default; ``ceiling``): the two figures then read the same failures the same way,
and a judge cannot look inside the experts' range by failing on the disputed items. An item without a readable
scale takes its criterion's lowest and highest expert scores as the ends, else the table's (``ceiling.scale_ends``,
never the judge's levels). Krippendorff's alpha with the judge and the kappas against the experts' mode are over the
judge's readable verdicts: a failure is no rating of the scale, so alpha cannot take it;
``agreement.n_items_judge_failed`` counts the items left out, and the report shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eval.validity import agreement as agreement_module
from eval.validity.alt_test import MIN_EXPERTS_TESTED, AltTestSettings, prepare, summarise, summarise_by_domain
from eval.validity.bias import answer_codes, length_bias, leniencies, marginal_homogeneity
from eval.validity.ceiling import MARGIN, MIN_ITEMS, CeilingPairs, cell_ceiling, leave_one_out_reference
from eval.validity.ceiling import ceiling_resamples
from judge.scales import MAX_LEVELS
from eval.scoring.item_table import value_levels
# The rule that reads a judge's score against its item's scale, shared with the confusion matrices; the section's
# public names still, where the docs and compare cite them.
from eval.validity.scale_reading import alt_test_judge, item_scale_ends, judge_levels, off_scale_levels, rating_ends
from eval.validity.scale_reading import ScaleReading, read_scales, readable_scales
from eval.validity.render import LEFT_OUT_WHY, alt_caveats, ceiling_coverage, counted, left_out_criteria
from eval.validity.render import length_flag_text, signed
from judge.metrics_json.validity import AltTest, SectionSettings, Unavailable, Validity, ValiditySplit

__all__ = ["ValiditySettings", "alt_test_judge", "item_scale_ends", "judge_levels", "off_scale_levels",
           "rating_ends", "readable_scales", "split_sentence", "too_wide_to_rate", "validity_section"]

_GROUPINGS = {"task_type": "task_type", "criterion": "criteria_name"}


@dataclass(frozen=True)
class ValiditySettings:
    """How the validity section is computed.

    Attributes:
        alt_test: the alternative annotator test's parameters.
        n_boot: bootstrap resamples of the ceiling gap's interval (``score`` passes its ``n_boot``; each cell draws
            its own), capped at ``ceiling.MAX_RESAMPLES`` (200), or at the verdict's floor where the level asks for
            more (``ceiling.ceiling_resamples``).
        alpha_boot: resamples of the alpha difference's interval (overall cells; capped: ``eval.validity.agreement``).
        seed: the bootstraps' seed (per cell, ``eval.scoring.bootstrap.cell_rng``).
        level: the intervals' coverage.
        bootstrap_unit: what the ceiling gap's and the alpha difference's intervals resample, as the metrics'
            (``score --bootstrap-unit``): ``item``, or ``instruction`` (every item of an instruction together; the
            table's ``instruction_key``). The leniency interval, the length slopes' intervals and the marginal
            homogeneity test are clustered by answer under ``item`` and by instruction under ``instruction`` (module
            docstring); the alt-test has none.
        ceiling_failures: ``worst`` (a judge failure counts in the ceiling as its largest error on the item's scale)
            or ``drop`` (left out); ``score --ceiling-failures`` (``eval.validity.ceiling``).
    """

    alt_test: AltTestSettings = field(default_factory=AltTestSettings)
    n_boot: int = 200
    alpha_boot: int = agreement_module.ALPHA_BOOT
    seed: int = 0
    level: float = 0.95
    bootstrap_unit: str = "item"
    ceiling_failures: str = "worst"


def too_wide_to_rate(table, ends: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """True on each item without a readable scale whose criterion's own inferred ends (``ends``, ``item_scale_ends``:
    its experts' lowest and highest score over the table), rounded out to whole levels (``rating_ends``), span more
    levels than a rubric may hold: no rubric's scale, so its criterion is left out of the section, counted and named
    (module docstring). A readable scale is never wider (``judge.scale_of`` refuses one)."""
    own = readable_scales(table)
    # judge.scales.MAX_LEVELS, 101: the levels of 0..100, the widest scale a POLLUX-style rubric is written on
    # (POLLUX's own criteria have 2 or 3 levels, arXiv 2505.24616v3, Section 2.2) and the most ``judge.scale_of``
    # reads from a rubric. Past it every distinct answer of the judge between the ends was a level of its own: a
    # levels x levels coincidence table per distinct row of value counts, nearly empty, and a kappa and alpha that
    # measure nothing. NaN ends (a criterion whose experts all gave one level, or none) compare False: such an item
    # stays. Not the ends after ``scale_ends``' fallback to the table's range: that range is the other criteria's,
    # and would leave out a unanimous criterion for the span of a wide one beside it.
    low, high = rating_ends(ends)
    with np.errstate(invalid="ignore"):
        return ~own & (high - low + 1 > MAX_LEVELS)


def _domain(table, index: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The cell's value domain (module docstring): the levels its items may take (``value_levels``, which the
    confusion matrices' axes read too) and the judge's levels on their scales."""
    found = set(value_levels(table, index).tolist())
    found.update(np.unique(levels[index][np.isfinite(levels[index])]).tolist())
    return np.array(sorted(found), dtype=float)


def _cell(table, index: np.ndarray, key: str, *, target: str, levels: np.ndarray, off_scale: np.ndarray,
          mode: np.ndarray, mean: np.ndarray, pairs: CeilingPairs, classes: np.ndarray, settings: ValiditySettings,
          kind: str, domain: np.ndarray, coded: tuple[agreement_module.CodedCounts, agreement_module.CodedCounts],
          expert_codes: tuple[np.ndarray, np.ndarray] | None, n_missing: int, n_scores: np.ndarray,
          answers: np.ndarray | None, clusters: np.ndarray | None,
          rating: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """One cell's figures; ``levels`` / ``off_scale``: the judge's levels on / off the items' scales
    (``judge_levels``, ``off_scale_levels``); ``answers``: the analytic intervals' cluster codes, ``clusters``: the
    bootstraps'; ``rating``: each item's scale ends as the judge's levels are read against them (``rating_ends``),
    those the overall homogeneity table flips a Critical item's levels on."""
    from eval.scoring.bootstrap import cell_rng

    judge = table.judge[index]
    # the experts' rows themselves only for the length slopes; everything else reads the per-table precomputations
    experts = table.experts[index] if kind == "overall" else None
    best_low = table.best_low[index] if table.best_low is not None else None
    cell_levels = levels[index]
    out: dict[str, Any] = {"n_items": int(len(index)), "n_items_missing": n_missing, "value_domain": domain.tolist()}
    out["ceiling"] = cell_ceiling(pairs, index, target, domain,
                                  n_boot=ceiling_resamples(settings.n_boot, settings.level),
                                  level=settings.level, rng=cell_rng(settings.seed, f"validity/ceiling/{key}"),
                                  clusters=clusters)
    out["leniency"] = None  # all cells' at once, after (``validity_section``)
    if kind == "task_type":  # agreement pools a cell's levels on one domain: read per criterion (one rubric's
        return out           # scale), and overall as the headline's summary; a task type would be one more pooling
    alpha_boot = settings.alpha_boot if kind == "overall" else 0
    out["agreement"] = agreement_module.agreement(
        cell_levels, experts, mode[index], domain, off_scale=off_scale[index], classes=classes[index],
        level=settings.level, n_boot=alpha_boot, n_expert_scores=n_scores[index],
        # a generator only where it draws (a criterion's cell draws none): seeding one is not free
        rng=cell_rng(settings.seed, f"validity/alpha/{key}") if alpha_boot else None,
        coded=(*coded, index), mean=mean[index], clusters=None if clusters is None else clusters[index],
        judge_scores=judge)
    out.update({name: out["agreement"][name] for name in ("alpha_experts", "alpha_with_judge", "kappa_quadratic")})
    judge_side, mode_side, oriented = cell_levels, mode[index], None
    if kind == "overall" and best_low is not None:
        # Critical and ordinary criteria pooled: a Critical item's levels flipped on its scale, as leniency orients
        # its error, so that one level more generous reads the same way on both and the moves add up, not cancel
        low, high = rating[0][index], rating[1][index]
        flip = np.asarray(best_low, dtype=bool) & np.isfinite(low) & np.isfinite(high)
        judge_side = np.where(flip, low + high - judge_side, judge_side)
        mode_side = np.where(flip, low + high - mode_side, mode_side)
        # An unreadable scale's rating ends are its criterion's range over the whole table, wider than this split's
        # experts may span: a flipped level can lie outside the cell's domain. The test's table takes those levels
        # in; kappa keeps the cell's domain, since its quadratic weights are read on it.
        sides = np.r_[judge_side, mode_side]
        homogeneity_domain = np.union1d(domain, sides[np.isfinite(sides)])
        oriented = int((flip & np.isfinite(judge_side) & np.isfinite(mode_side)).sum())
    else:
        homogeneity_domain = domain
    out["marginal_homogeneity"] = marginal_homogeneity(judge_side, mode_side, homogeneity_domain,
                                                       None if answers is None else answers[index])
    if oriented is not None:
        out["marginal_homogeneity"].update(n_items_oriented=oriented, margin_levels=homogeneity_domain.tolist())
    if not out["marginal_homogeneity"]["n"]:  # an empty table is not one whose items all lie on the diagonal
        out["marginal_homogeneity"]["why"] = ("no item has both a judge score on its scale and a unique experts' "
                                              "mode: no table to test")
    if kind == "overall":
        if table.answer_chars is not None:
            ids = table.expert_ids[index] if table.expert_ids is not None else None
            codes = (expert_codes[0][index], expert_codes[1]) if expert_codes is not None else None
            # a score off the item's scale is no rating of it: left out of the slope, and counted, as kappa and
            # alpha leave it out (leniency keeps one outside an unreadable scale's observed range: a signed error)
            out["length_bias"] = length_bias(judge, experts, ids, table.answer_chars[index], best_low, settings.level,
                                             expert_codes=codes, mean=mean[index], answers=answers[index],
                                             off_scale=np.isfinite(off_scale[index]))
        else:
            out["length_bias"] = {"why": "the answers' lengths are unknown (an item table read back from an "
                                         "items.parquet written before it kept them)"}
    return out


def _expert_codes(expert_ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The experts' ids numbered once for the table: an ``(n, k)`` code matrix (-1 where unnamed) and the names."""
    import pandas as pd

    if expert_ids is None:
        return None
    codes, names = pd.factorize(expert_ids.ravel(), use_na_sentinel=True)  # None -> -1
    return codes.reshape(expert_ids.shape), np.asarray(names, dtype=object)


def _coded_counts(table, levels: np.ndarray, values: np.ndarray
                  ) -> tuple[agreement_module.CodedCounts, agreement_module.CodedCounts]:
    """Every item's value counts over ``values`` (the union of the cells' value domains), the experts' and the
    experts' plus the judge's, coded once (``agreement.CodedCounts``): a cell takes its items and its domain."""
    experts = table.experts
    position = np.searchsorted(values, np.where(np.isnan(experts), np.inf, experts))
    inside = position < len(values)
    inside[inside] = values[position[inside]] == experts[inside]
    rows = np.broadcast_to(np.arange(len(experts))[:, None], experts.shape)[inside]
    size = len(experts) * len(values)
    expert_counts = np.bincount(rows * len(values) + position[inside], minlength=size).reshape(
        len(experts), len(values)).astype(float)
    with_judge = expert_counts.copy()
    spot = np.searchsorted(values, np.where(np.isfinite(levels), levels, np.inf))
    hit = spot < len(values)
    hit[hit] = values[spot[hit]] == levels[hit]
    with_judge[np.flatnonzero(hit), spot[hit]] += 1.0
    return agreement_module.CodedCounts(expert_counts, values), agreement_module.CodedCounts(with_judge, values)


def _group_codes(groups: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, names)`` as ``pandas.factorize`` gives them, of the groups ``item_table.label_groups`` made."""
    codes = np.full(n, -1, dtype=np.int64)
    for code, members in enumerate(groups.values()):
        codes[members] = code
    return codes, np.array(list(groups), dtype=object)


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _alt_coverage(alt: AltTest, overall, dropped: int) -> str:
    """", over N of M items (why the rest are out)" where the alt-test covers fewer than the split's items (a verdict
    over a fifth of them read as one on the whole split); "" where it covers all, or in a file without the counts.
    ``dropped``: the judge's failed items the test dropped (``failures`` ``drop``)."""
    if alt.n_items is None or alt.n_items_few_experts is None:
        return ""
    few, missing = alt.n_items_few_experts, overall.n_items_missing or 0
    total = overall.n_items + missing
    unscored = total - alt.n_items - few - dropped - missing  # neither too few named experts nor tested: none at all
    why = [text for count, text in ((few, f"{few} with fewer than {alt.min_experts_per_item} named experts"),
                                    (dropped, f"{dropped} the judge failed on, dropped"),
                                    (missing, f"{missing} without a prediction"),
                                    (unscored, f"{unscored} without an expert score")) if count > 0]
    return f", over {alt.n_items} of {counted(total, 'item')} ({', '.join(why)})" if alt.n_items < total else ""


def _weak_agreement(overall) -> str:
    """A clause where the split's agreement figures say the judge adds nothing to the experts: the alpha difference's
    interval (alpha with the judge minus the experts' own) lies below 0, or quadratic kappa against the experts' mode
    is at or below 0 as shown (two decimals); "" otherwise, or where the figures are absent. The alt-test can pass
    such a judge: a central answer wins the leave-one-out comparison against noisy experts without reading the
    answers (docs/validity.md), so its pass alone does not show agreement."""
    agreement = overall.agreement
    if agreement is None:
        return ""
    said = []
    high = agreement.alpha_difference_ci[1] if agreement.alpha_difference_ci else None
    if high is not None and high < 0 and None not in (agreement.alpha_experts, agreement.alpha_with_judge):
        said.append(f"lowers the experts' agreement (α {agreement.alpha_experts:.2f} → "
                    f"{agreement.alpha_with_judge:.2f} with the judge)")
    kappa = agreement.kappa_quadratic
    if kappa is not None and kappa == kappa and round(kappa, 2) <= 0:
        said.append(f"agrees with the experts' mode no better than chance (κ {round(kappa, 2) + 0.0:.2f})")
    return " and ".join(said)


def split_sentence(block: ValiditySplit, ceiling_failures: str | None = None) -> str:
    """One plain sentence on a split's validity: the alt-test, the ceiling by criterion, leniency, length bias, and
    how many items the judge failed on, when any (``ceiling_failures``: how the ceiling counted them, None: a file
    written before the setting, which left them out)."""
    parts = []
    overall = block.overall
    left = left_out_criteria(block)  # criteria without a rubric's scale (``too_wide_to_rate``): said, never silent
    left_out = (f"{counted(sum(left.values()), 'item')} of {counted(len(left), 'criterion', 'criteria')} left out of "
                f"every figure ({LEFT_OUT_WHY})") if left else ""
    if not overall.n_items and overall.n_items_missing:  # nothing predicted: not the experts' shortfall
        return (f"The judge has no prediction in this split yet ({counted(overall.n_items_missing, 'item')} without "
                f"one): no validity figure{'; ' + left_out if left_out else ''}.")
    if not overall.n_items:  # nothing to ask the experts about either: neither their shortfall nor the judge's
        return f"All {left_out}: no validity figures." if left_out else "No items in this split: no validity figures."
    alt = overall.alt_test
    weak = _weak_agreement(overall)  # said beside the alt-test's verdict, or on its own where there is no pass
    # the judge's failed items the alt-test dropped (under ``loss`` they stay in it, as losses)
    dropped = (alt.n_items_judge_failed or 0) if isinstance(alt, AltTest) and alt.failures == "drop" else 0
    # named where they leave experts untested: the experts scored those items, the judge failed on them
    was_dropped = f"the judge's {counted(dropped, 'failed item')} {'were' if dropped != 1 else 'was'} dropped"
    if not isinstance(alt, AltTest):
        parts.append("the alternative annotator test needs named experts (the data names none)")
    elif not alt.n_experts_tested:
        # The items an expert needs are those the test keeps (enough named experts): an expert of 40 items, each
        # scored by no one else, did score 30 items, just none the test can compare on.
        per_item = (f" (each with at least {alt.min_experts_per_item} named experts)"
                    if alt.min_experts_per_item is not None else "")
        if dropped:
            parts.append(f"{was_dropped} from the alternative annotator test, so no expert has the "
                         f"{counted(alt.min_items_per_expert, 'item')}{per_item} it needs")
        else:
            parts.append(f"no expert scored the {counted(alt.min_items_per_expert, 'item')}{per_item} the "
                         "alternative annotator test needs")
    else:
        # Every named expert is tested or untested (``alt_test``): the sentence says how many were not, so that
        # "1 of 1 experts" does not read as the whole panel; below ``min_experts_tested`` (MIN_EXPERTS_TESTED in a
        # file written before the option) it gives no verdict (the tables keep omega and rho), whatever ``passed`` a
        # file written before that rule holds.
        untested = len(alt.untested)
        tested = "tested experts" if untested else "experts"
        coverage = _alt_coverage(alt, overall, dropped)  # the items the verdict is over, where fewer than the split's
        needed = alt.min_experts_tested or MIN_EXPERTS_TESTED
        if alt.n_experts_tested < needed:
            parts.append(f"too few experts tested to call the alternative annotator test: {alt.n_experts_tested} "
                         f"tested, at least {needed} needed{coverage}")
        else:
            figures = f"(ω = {_ratio(alt.winning_rate)}, ρ = {_ratio(alt.advantage_probability)})"
            won = f"{alt.n_experts_rejected} of {alt.n_experts_tested} {tested}"
            # "fails ... against 0 of 8 experts" would read as if it lost to none: a failure says what it won.
            passes = f"passes the alternative annotator test against {won} {figures}{coverage}"
            # a pass beside agreement figures that say the judge adds nothing: the same clause, joined by "but"
            parts.append(f"{passes}, but {weak}" if alt.passed and weak else passes if alt.passed
                         else f"fails the alternative annotator test: it wins against {won}, fewer than half "
                              f"{figures}{coverage}")
            weak = "" if alt.passed else weak
        if untested:
            under = (f"under {alt.min_items_per_expert} items{' each' if untested != 1 else ''}"
                     if alt.min_items_per_expert is not None else "too few items")
            under += f", after {was_dropped}" if dropped else ""
            parts.append(f"{untested} more expert{'s' if untested != 1 else ''} untested ({under})")
        # with two experts a judge copying one of them wins against both: say what a verdict means
        if alt.n_experts_tested >= needed:
            parts += alt_caveats(alt)
    if weak:
        parts.append(f"the judge {weak}")
    verdicts = [c.ceiling.verdict for c in block.by_criterion.values()]
    if any(verdicts):
        # Only a shown closeness counts as inside (``ceiling.verdict``); the rest are said apart, so that "inside on
        # 3 of 15" also says whether the other 12 are shown outside, too uncertain to tell, or without an interval
        # to read (``--n-boot 0``, one item, one instruction): every criterion counts in the "of".
        others = [f"{verdicts.count(v)} {v}" for v in ("outside", "inconclusive") if verdicts.count(v)]
        if verdicts.count(None):
            others.append(f"{verdicts.count(None)} without an interval")
        criteria = counted(len(verdicts), "criterion", "criteria")
        parts.append(f"inside the experts' range on {verdicts.count('inside')} of {criteria}"
                     + (f" ({', '.join(others)})" if others else ""))
    elif verdicts:
        parts.append("no ceiling verdict on the one criterion (no interval)" if len(verdicts) == 1 else
                     f"no ceiling verdict on any of the {len(verdicts)} criteria (no interval)")
    ceiling = overall.ceiling
    if ceiling.verdict:  # the split as a whole, beside its criteria: the figure a reader decides on
        where = ("inconclusive against the experts' range" if ceiling.verdict == "inconclusive"
                 else f"{ceiling.verdict} the experts' range")
        coverage = ceiling_coverage(ceiling, overall.n_items, overall.n_items_missing)
        parts.append(f"overall {where} (gap {signed(ceiling.gap, ceiling.gap_ci)}){coverage}")
    in_ceiling = overall.ceiling.n_items_judge_failed
    # Every failed item of the split, not only those with a ceiling pair (an item with one expert has none): the
    # agreement counts them all (a file written before it did: the ceiling's count).
    agreement = overall.agreement
    failed = (agreement.n_items_judge_failed if agreement is not None and agreement.n_items_judge_failed is not None
              else in_ceiling)
    if failed:  # a judge that fails on the hard items: say how many, and how the ceiling read them
        how = ("each counted as its largest error in the ceiling" if ceiling_failures == "worst"
               else "left out of the ceiling")
        if in_ceiling is not None and in_ceiling != failed:  # None: a file whose ceiling counted pairs only
            how = (f"{in_ceiling} of them with a ceiling pair, {how}" if in_ceiling
                   else "none of them with a ceiling pair")
        parts.append(f"the judge failed on {failed} item{'s' if failed != 1 else ''} ({how})")
    lenient = overall.leniency
    # the judge's answers off the items' scales, out of kappa and alpha: named whenever there are any
    off_scale = agreement.n_items_judge_off_scale if agreement is not None else None
    if lenient.direction != "neither":
        # over the judge's scores on the scale: its off-scale answers named, here where a file has no count of
        # them beside kappa's, as the leniency row names them
        off = 0 if off_scale is not None else lenient.n_judge_off_scale
        off = f"; {counted(off, 'off-scale answer')} left out" if off else ""
        parts.append(f"{lenient.direction} overall ({lenient.mean_signed_error:+.2f}{off})")
    if off_scale:
        kept = lenient.n_judge_outside_observed or 0  # None only in a record built by hand: a section counts them
        answers = counted(off_scale, "judge answer")
        if not kept:
            parts.append(f"{answers} off the scale left out of κ, α and leniency")
        elif kept >= off_scale:
            parts.append(f"{answers} outside the experts' observed range (no readable scale) left out of κ and α, "
                         "kept in leniency")
        else:
            parts.append(f"{answers} off the scale left out of κ and α ({kept} of them outside the experts' observed "
                         "range where no scale is readable, kept in leniency)")
    length = overall.length_bias
    if length is not None and not isinstance(length, Unavailable) and length.flag:
        parts.append(length_flag_text(length.flag))
    if left_out:
        parts.append(left_out)
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def validity_section(table, target: str, split_index: dict[str, np.ndarray],
                     settings: ValiditySettings = ValiditySettings(), reading: ScaleReading | None = None) -> Validity:
    """The ``validity`` section for every split of ``split_index`` (as ``eval.scoring.item_table.evaluate`` splits them).

    Args:
        table: the ``eval.scoring.item_table.ItemTable``.
        target: the headline's reference, ``mode`` or ``mean`` (the ceiling uses the same).
        split_index: split -> item indices.
        settings: see ``ValiditySettings``.
        reading: ``read_scales(table)`` when the caller already has it (``judge-eval score`` reads it once for the
            confusion matrices too); None: read here.

    Returns:
        The section (``judge.metrics_json.validity.Validity``): its settings, ``named_experts`` (whether the data
        names its experts), per split the ``sentence``, the cells (``overall``, ``by_task_type``, ``by_criterion``)
        and the alt-test's families per grouping (``alt_test_domains``).
    """
    import dataclasses

    import pandas as pd

    from eval.scoring.item_table import bootstrap_clusters, drawn_as_name, label_groups, predicted_count
    from eval.scoring.metrics import expert_mean, expert_mode, level_counts

    if table.experts.shape[1] == 0:  # unlabelled data: one empty expert column, so that every figure reads "none"
        table = dataclasses.replace(table, experts=np.full((len(table), 1), np.nan), expert_ids=None)
    # Everything per item is computed once for the table; a cell selects its items' rows.
    # Each item's scale ends as the ceiling reads them: its own where readable, else inferred from the experts'
    # scores (``reading_ends``). The judge's levels are read against them, the inferred ones
    # widened to whole levels: an unreadable scale's stray answers are then off it and counted, as on a known
    # rubric, rather than each a level of the value domain of its own.
    # ``inferred``: a criterion's own, before the fallback to the table's; ``levels``: NaN off the item's scale
    # ``head``: a regression head's value past an end takes that end (``judge_levels``)
    inferred, ends, rating, levels, off_scale, head = reading if reading is not None else read_scales(table)
    counts = level_counts(table.experts)
    mode, unique = expert_mode(table.experts, counts)
    mean = expert_mean(table.experts)
    classes = agreement_module.class_codes(table.experts, unique)
    expert_codes = _expert_codes(table.expert_ids)
    # No prediction at all is no judge failure: left out of every figure (module docstring), counted per cell. An
    # item whose inferred scale is wider than a rubric's is left out too, counted under its criterion instead.
    wide = too_wide_to_rate(table, inferred)
    missing = np.asarray(table.status == "missing", dtype=bool) & ~wide
    outside = missing | wide
    alt_judge = alt_test_judge(table.judge, *rating, settings.alt_test.scoring, head)
    found = prepare(alt_judge, table.experts, table.expert_ids, settings.alt_test, expert_codes=expert_codes,
                    missing=outside)
    groups = {name: label_groups(getattr(table, column)) for name, column in _GROUPINGS.items()}
    # The alt-test's domains numbered from the cells' own groups, so that a domain is named as its cell is: a missing
    # label (None) is a cell named by its text, where pandas' codes gave it -1 (read as the last domain, or failing).
    factorised = {name: _group_codes(groups[name], len(table)) for name in _GROUPINGS} if found is not None else {}
    # Each cell's value domain first, so that the items' value counts are taken once over all of them.
    plan = []
    for split, index in split_index.items():
        index = np.asarray(index)
        in_split = np.zeros(len(table), dtype=bool)
        in_split[index] = True
        n_missing = {("overall", "overall"): int(missing[index].sum())}
        mask = in_split & ~outside  # the split's predicted items on a scale: every cell below is within them
        cells = [("overall", "overall", index[~outside[index]])]
        left_out = {label: n for label, members in groups["criterion"].items()
                    if (n := int((in_split[members] & wide[members]).sum()))}
        for name in _GROUPINGS:
            for label, members in groups[name].items():
                n_missing[name, label] = int((in_split[members] & missing[members]).sum())
                members = members[mask[members]]
                if len(members):
                    cells.append((name, label, members))
        plan.append((split, mask, [(kind, label, members, _domain(table, members, levels), n_missing[kind, label])
                                   for kind, label, members in cells], left_out))
    values = np.unique(np.concatenate([np.zeros(0)] + [d for _, _, cells, _ in plan for _, _, _, d, _ in cells]))
    pairs = CeilingPairs(table.judge, table.experts, leave_one_out_reference(table.experts, target, counts), levels,
                         values, settings.ceiling_failures, *ends,
                         measured=head)
    clusters = bootstrap_clusters(table, settings.bootstrap_unit)
    # the clusters of the analytic intervals and tests (module docstring), once: each answer's code, or under the
    # instruction unit each instruction's
    answers = (answer_codes(table.model_id, table.task_type, table.answer_chars, table.instruction_key)
               if clusters is None else pd.factorize(clusters)[0].astype(np.intp))
    common = dict(target=target, levels=levels, off_scale=off_scale, mode=mode, mean=mean, pairs=pairs,
                  classes=classes, settings=settings,
                  coded=_coded_counts(table, levels, values), expert_codes=expert_codes, answers=answers,
                  n_scores=(~np.isnan(table.experts)).sum(axis=1), clusters=clusters, rating=rating)
    splits: dict[str, Any] = {}
    for split, mask, cells, left_out in plan:
        (_, _, index, domain, n_missing), cells = cells[0], cells[1:]
        # a test holding every predicted item of "all" draws its intervals as "all" does, as the run's metrics do
        drawn = drawn_as_name(split, predicted_count(table, split_index[split]),
                              predicted_count(table, split_index.get("all", np.zeros(0, dtype=np.intp))))
        block: dict[str, Any] = {"overall": _cell(table, index, f"{drawn}/overall", kind="overall", domain=domain,
                                                  n_missing=n_missing, **common)}
        block["overall"]["alt_test"] = summarise(found, settings.alt_test, mask)
        block["alt_test_domains"] = {}
        for name, column in _GROUPINGS.items():
            family = summarise_by_domain(found, settings.alt_test, factorised.get(name, getattr(table, column)), mask)
            block["alt_test_domains"][name] = ({k: v for k, v in family.items() if k != "by_domain"}
                                               if family["available"] else family)
            grouped = {}
            for kind, label, members, domain, n_missing in cells:
                if kind != name:
                    continue
                grouped[label] = _cell(table, members, f"{drawn}/{name}/{label}", kind=name, domain=domain,
                                       n_missing=n_missing, **common)
                if family["available"]:
                    # a domain none of whose experts has pairs: the test's empty result (``AltTest``'s defaults)
                    grouped[label]["alt_test"] = family["by_domain"].get(label) or {}
                else:
                    grouped[label]["alt_test"] = family
            block[f"by_{name}"] = grouped
        if left_out:  # only where any: a split without one is written as before
            block["criteria_left_out"] = left_out
        splits[split] = block
    # leniency: the intervals of every cell, their t quantiles in one scipy call (``bias.leniencies``)
    placed = [(block, cell) for block in splits.values()
              for cell in [block["overall"], *block["by_task_type"].values(), *block["by_criterion"].values()]]
    cells = [members for _, _, split_cells, _ in plan for _, _, members, _, _ in split_cells]
    # A judge score off a readable scale is no rating of it: out of leniency as of kappa and alpha, counted. Off an
    # unreadable one it lies outside the experts' observed range, which says nothing against it: a signed error
    # needs no scale, so it stays in leniency, counted apart (``bias.leniencies``).
    readable = readable_scales(table)
    off = np.isfinite(off_scale)
    for (_, cell), result in zip(placed, leniencies(table.judge, mean, table.best_low, cells, settings.level,
                                                    answers, off_scale=off & readable,
                                                    outside_observed=off & ~readable)):
        cell["leniency"] = result
    typed = {}
    for split, block in splits.items():  # the statistics' dicts read into the section's types once, here
        read = ValiditySplit.from_json({**block, "sentence": ""})
        typed[split] = dataclasses.replace(read, sentence=split_sentence(read, settings.ceiling_failures))
    return Validity(SectionSettings(settings.alt_test, settings.n_boot, settings.alpha_boot, settings.seed,
                                    settings.level, target, ceiling_margin=MARGIN, ceiling_min_items=MIN_ITEMS,
                                    bootstrap_unit=settings.bootstrap_unit, ceiling_failures=settings.ceiling_failures),
                    table.expert_ids is not None, typed)

"""Two judges' validity on the same items, paired: the difference of their average advantage probabilities (rho), of
their ceiling gaps and of their leniencies, with one bootstrap over items shared by both (``judge-eval compare``), or
over whole instructions under ``compare --bootstrap-unit instruction`` (``cluster_resample_weights``; fewer than two
instructions: no interval).

A resample draws items (or instructions) with replacement (``eval.scoring.bootstrap.resample_weights``) and weighs
both judges' figures with the same draw, so item difficulty cancels out of the difference. rho of a resample is the
mean, over the experts tested on the full data that the resample draws an item of, of each expert's weighted share
of items where the judge is as good or better (the alt-test's W_f); the ceiling gap of a resample is the ratio of the
weighted sums of the per-item gaps (judge error minus expert error against the rest of the panel) and of the
per-item pair counts: with ``ceiling_failures`` ``worst`` (the section's default) over every item, a judge's failure
counting as its largest error on the item's scale as in its own section (``eval.validity.ceiling``); with ``drop``
over items both judges scored.

An expert a resample misses is left out of its rho, not made NaN: under ``--bootstrap-unit instruction`` with each
expert in few instructions most resamples miss one, and dropping those resamples left only the redraws of every
instruction, whose rho is rho itself (an interval of zero width that reads as certain). A resample that draws no
tested expert's item (for the gap: no pair) is unusable; ``n_resamples`` counts the usable ones, and where they are
fewer than ``MIN_USABLE_SHARE`` of those drawn there is no interval: one read off the rest would be the spread of
the resamples that happened to draw those items.

Resamples are capped at ``PAIRED_BOOT``, a cap raised to the floor a leniency call needs where the level asks for
more (``paired_resamples``: 201 at the 0.99 level), and drawn in blocks of bounded size (``CHUNK_ENTRIES`` weights). With the
alt-test's ``failures="drop"`` an item either judge failed on is dropped for both (with ``loss`` a failure is a loss
for the judge that failed, on the same items). rho compares the same values of each judge as the run's own section
(``eval.validity.section.alt_test_judge``: under ``accuracy`` the level a score rounds to where that level lies in
the item's scale, read against ``rating_low`` / ``rating_high``, else ``scale_low`` / ``scale_high``, when they
are given, else the score itself), so that under ``loss`` the baseline's paired rho is its section's rho on the same
items (under ``drop``, its rho on the items both judges scored); the ceiling gap takes the raw scores, as the
section's ceiling does. Items without a prediction in either run are the
caller's to leave out (``judge-eval compare`` does): a NaN here is a failure.

The leniency of a judge is its section's (``eval.validity.bias.leniency``): the mean signed error against the experts'
mean, oriented so that + is lenient (a Critical criterion's sign flipped, ``best_low``). The two are over the same
items, those with an experts' mean that both judges scored on the item's scale (``eval.validity.section``'s
``off_scale_levels`` against the ends the alt-test reads its levels against): an item either judge failed on, or
scored off its readable scale, is left out of both means, as each section leaves its own out, and counted
(``n_left_out_failed``; of the rest, ``n_left_out_off_scale``); a score outside the experts' observed range on an
item without a readable scale stays a signed error, as in each section (``readable``). A resample's difference is
the ratio of the weighted sums of the per-item differences and of the items, from the same weights as rho and the
gap. A direction (``less
lenient`` / ``more lenient``) is called only where the interval excludes 0 over at least ``MIN_VERDICT_UNITS`` units
and from at least ``paired_resamples_to_call`` usable resamples, the floors compare's calls read; else ``n.s.``.
Less lenient is not better by itself: a harsh baseline's "less lenient" run is harsher still (leniency is best near
0, the baseline and run figures say where each lies).

Each figure carries ``n_units``, the units its interval resamples (items the figure covers, or their instructions
under ``--bootstrap-unit instruction``), and ``too_few_units`` where they are under
``eval.scoring.bootstrap.MIN_VERDICT_UNITS``: over five items a percentile bootstrap takes a handful of values and
reads as precise ("+0.80 [0.47, 1.13]"), the pitfall the experts' ceiling and compare's calls refuse with the same
minimum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eval.scoring.bootstrap import MIN_VERDICT_UNITS
from eval.scoring.resample_rules import paired_resamples_to_call
from eval.validity.agreement import MIN_USABLE_SHARE, usable_interval
from eval.validity.alt_test import AltTestSettings, prepare, summarise
from eval.validity.ceiling import leave_one_out_reference, scale_ends

__all__ = ["MIN_USABLE_SHARE", "PAIRED_BOOT", "paired_resamples", "paired_validity"]

#: The most resamples of the paired intervals where the level's call floor is under it (``paired_resamples``).
PAIRED_BOOT = 200


def paired_resamples(n_boot: int, level: float) -> int:
    """The resamples the paired intervals draw: ``n_boot``, capped at ``PAIRED_BOOT``, a cap raised to the leniency
    call's floor (``paired_resamples_to_call(1 - level)``) where the level asks for more (201 at 0.99), as
    ``eval.validity.ceiling.ceiling_resamples`` raises the ceiling's: a cap under the floor would leave every
    leniency of that level n.s. whatever ``--n-boot`` asked. Never more than ``n_boot``."""
    return min(n_boot, max(PAIRED_BOOT, paired_resamples_to_call(1.0 - level)))


#: Weights held at once (resamples x pairs): 4M float64 = 32 MiB.
CHUNK_ENTRIES = 4_000_000


def _rho_parts(judge, experts, ids, settings):
    """The tested experts' pairs sorted by expert: (item, W_f, run starts), or None without tested experts."""
    found = prepare(judge, experts, ids, settings)
    if found is None:
        return None
    summary = summarise(found, settings)
    tested = [row["expert"] for row in summary["experts"]]
    if not tested:
        return None
    codes = np.flatnonzero(np.isin(found.expert_names.astype(str), tested))
    keep = np.isin(found.expert, codes)
    order = np.argsort(found.expert[keep], kind="stable")
    item, expert, w_judge = found.item[keep][order], found.expert[keep][order], found.w_judge[keep][order]
    starts = np.flatnonzero(np.r_[True, expert[1:] != expert[:-1]])
    return item, w_judge, starts, summary["advantage_probability"]


def _rho(parts, weights):
    """rho of each resample (a row of ``weights``): the mean, over the tested experts the resample draws an item of,
    of each one's weighted share of W_f; NaN where it draws none of theirs (module docstring)."""
    item, w_judge, starts, _ = parts
    taken = weights[:, item]
    drawn = np.add.reduceat(taken, starts, axis=1)
    share = np.add.reduceat(taken * w_judge, starts, axis=1) / np.where(drawn > 0, drawn, 1.0)
    present = (drawn > 0).sum(axis=1)
    return np.where(present > 0, np.where(drawn > 0, share, 0.0).sum(axis=1) / np.maximum(present, 1), np.nan)


def _gap_parts(judge, experts, reference, rows, worst_error=None):
    """Per item, the summed (judge - expert) error gap and the pair count, over the items ``rows``; a failure's
    error is ``worst_error`` (per pair) when given."""
    valid = np.isfinite(reference) & rows[:, None]
    error = np.abs(judge[:, None] - reference)
    if worst_error is not None:
        error = np.where(np.isfinite(judge)[:, None], error, worst_error)
    gap = np.where(valid, error - np.abs(experts - reference), 0.0).sum(axis=1)
    return gap, valid.sum(axis=1).astype(float)


def _worst_error(experts, reference, low, high):
    """Per pair, the largest error a verdict can have on the item's scale against the pair's reference (the
    section's ``worst`` failures); an item without known ends takes the lowest and highest expert score given, the
    section's rule (``eval.validity.ceiling.scale_ends``)."""
    ends = scale_ends(low, high, experts)
    with np.errstate(invalid="ignore"):
        return np.fmax(ends[1][:, None] - reference, reference - ends[0][:, None]).clip(min=0)


def _units(items: np.ndarray, clusters: np.ndarray | None) -> dict[str, Any]:
    """``n_units`` and ``too_few_units`` of a figure over ``items`` (module docstring): the items, or under
    ``clusters`` the clusters they fall in, as the interval resamples them."""
    n_units = int(len(items) if clusters is None else len(np.unique(np.asarray(clusters)[items])))
    return {"n_units": n_units, "too_few_units": n_units < MIN_VERDICT_UNITS}


def _leniency_parts(judge_a: np.ndarray, judge_b: np.ndarray, experts: np.ndarray, best_low: np.ndarray | None,
                    off_a: np.ndarray, off_b: np.ndarray) -> dict[str, Any]:
    """Per item the two judges' oriented errors (0 outside ``kept``), ``kept`` (the items with an experts' mean both
    scored on its scale) and the counts of the items with an experts' mean left out of both (module docstring)."""
    from eval.scoring.metrics import expert_mean

    mean = expert_mean(experts)
    rated = np.isfinite(mean)
    failed = rated & ~(np.isfinite(judge_a) & np.isfinite(judge_b))
    off = rated & ~failed & (off_a | off_b)
    kept = rated & ~failed & ~off
    sign = np.where(np.asarray(best_low, dtype=bool), -1.0, 1.0) if best_low is not None else np.ones(len(mean))
    with np.errstate(invalid="ignore"):
        error_a, error_b = (np.where(kept, (j - mean) * sign, 0.0) for j in (judge_a, judge_b))
    return {"kept": kept, "error_a": error_a, "error_b": error_b, "n_left_out_failed": int(failed.sum()),
            "n_left_out_off_scale": int(off.sum())}


def _leniency_direction(ci: list, units: dict[str, Any], usable: int | None, level: float) -> str:
    """``less lenient`` / ``more lenient`` where the interval excludes 0 over enough units and resamples, else
    ``n.s.`` (module docstring)."""
    low, high = ci
    if (low is None or units["too_few_units"] or usable is None
            or usable < paired_resamples_to_call(1.0 - level)):
        return "n.s."
    return "less lenient" if high < 0 else "more lenient" if low > 0 else "n.s."


def paired_validity(judge_a: np.ndarray, judge_b: np.ndarray, experts: np.ndarray, expert_ids: np.ndarray | None,
                    target: str, settings: AltTestSettings, n_boot: int = PAIRED_BOOT,
                    rng: np.random.Generator | None = None, level: float = 0.95,
                    scale_low: np.ndarray | None = None, scale_high: np.ndarray | None = None,
                    clusters: np.ndarray | None = None, ceiling_failures: str = "worst",
                    measured_a: np.ndarray | None = None, measured_b: np.ndarray | None = None,
                    rating_low: np.ndarray | None = None, rating_high: np.ndarray | None = None,
                    best_low: np.ndarray | None = None, readable: np.ndarray | None = None) -> dict[str, Any]:
    """rho, the ceiling gap and the leniency of judge B against judge A on the same items, with paired bootstrap
    intervals.

    Args:
        judge_a, judge_b: ``(n,)`` the two judges' scores on the same items (NaN: failed).
        experts, expert_ids: the items' experts (ids None when unnamed: no rho).
        target: the ceiling's reference, ``mode`` or ``mean``.
        settings: the alt-test's parameters (the baseline's).
        n_boot: resamples (capped by ``paired_resamples``; 0: no intervals).
        rng: the bootstrap's generator.
        level: the intervals' coverage.
        scale_low, scale_high: ``(n,)`` each item's scale ends (NaN: unknown), which ``accuracy`` reads a level
            against as the section does (a score rounding outside them is compared as it is); None: rounded only.
        clusters: ``(n,)`` the unit a resample draws whole (``compare --bootstrap-unit instruction``: every item of
            an instruction together, ``eval.scoring.bootstrap.cluster_resample_weights``); None: items. Fewer than two
            clusters: no intervals (one cluster redrawn is always the same items).
        ceiling_failures: the baseline section's ``ceiling_failures``: ``worst`` (the section's default: a failure
            is its judge's largest error on the item's scale, the ends ``scale_low`` / ``scale_high``) or ``drop``
            (items either judge failed on left out of the gap).
        measured_a, measured_b: ``(n,)`` True where that judge's score is a regression head's raw value
            (``eval.validity.ceiling.measured`` of the run's ``score_source``): under ``accuracy`` a value past an end
            is that end, as its section reads it (``alt_test_judge``); None: none is.
        rating_low, rating_high: ``(n,)`` the ends ``accuracy`` reads the judges' levels against where they differ
            from ``scale_low`` / ``scale_high``: the section reads them rounded out to whole levels
            (``eval.validity.section.rating_ends``) and its ceiling the ends themselves; None: ``scale_low`` /
            ``scale_high``; they are also the ends a judge's score is off the scale against, for the leniency.
        best_low: ``(n,)`` True on a Critical criterion's items (best at its lowest level), whose leniency errors
            flip sign; None: none is.
        readable: ``(n,)`` True where the item's own scale is readable: only there is a score off the ends out of the
            leniency; elsewhere the ends are the experts' observed range and such a score stays a signed error, as
            each section keeps it (``eval.validity.bias.leniencies``); None: every item's ends are its scale's.

    Returns:
        ``rho``, ``ceiling_gap`` and ``leniency``, each {``baseline``, ``run``, ``delta`` (run - baseline), ``ci``,
        ``n_resamples`` (the usable resamples, where any were drawn), ``n_units`` (the items the figure covers, or
        their clusters), ``too_few_units`` (``n_units`` under ``MIN_VERDICT_UNITS``: an interval too few units to
        read)} or a ``why``; ``leniency`` adds ``direction``, ``n`` (its items) and the items left out of both
        (``n_left_out_failed``, ``n_left_out_off_scale``; module docstring).
    """
    from eval.scoring.bootstrap import cluster_resample_weights, resamplable, resample_weights
    from eval.validity.section import alt_test_judge, off_scale_levels

    rng = rng or np.random.default_rng(0)
    n_boot = paired_resamples(n_boot, level)
    out: dict[str, Any] = {"n_items": int(len(judge_a)), "n_boot": n_boot}
    both = np.isfinite(judge_a) & np.isfinite(judge_b)
    rating = (scale_low if rating_low is None else rating_low, scale_high if rating_high is None else rating_high)
    # before the alt-test's drop blanks the other judge's verdict: the leniency counts each item's own failures
    on_rubric = np.ones(len(judge_a), dtype=bool) if readable is None else np.asarray(readable, dtype=bool)
    lenient = _leniency_parts(judge_a, judge_b, experts, best_low,
                              *(np.isfinite(off_scale_levels(j, *rating, m)) & on_rubric
                                for j, m in ((judge_a, measured_a), (judge_b, measured_b))))
    kept = lenient["kept"].astype(float)
    difference = lenient["error_b"] - lenient["error_a"]
    reference = leave_one_out_reference(experts, target)
    if ceiling_failures == "worst":  # every item, before the alt-test's drop blanks the other judge's verdict
        worst = _worst_error(experts, reference, scale_low, scale_high)
        every = np.ones(len(judge_a), dtype=bool)
        (gap_a, count), (gap_b, _) = (_gap_parts(j, experts, reference, every, worst) for j in (judge_a, judge_b))
    else:
        (gap_a, count), (gap_b, _) = (_gap_parts(j, experts, reference, both) for j in (judge_a, judge_b))
    if settings.failures == "drop":
        # Dropping each judge's own failures would test the two on different items: drop an item either failed on.
        judge_a, judge_b = np.where(both, judge_a, np.nan), np.where(both, judge_b, np.nan)
    parts_a = _rho_parts(alt_test_judge(judge_a, *rating, settings.scoring, measured_a), experts, expert_ids, settings)
    parts_b = _rho_parts(alt_test_judge(judge_b, *rating, settings.scoring, measured_b), experts, expert_ids, settings)
    has_gap = count.sum() > 0
    rho_samples: list[np.ndarray] = []
    gap_samples: list[np.ndarray] = []
    leniency_samples: list[np.ndarray] = []
    if n_boot > 0 and resamplable(len(judge_a), clusters):
        width = max(len(parts_a[0]) if parts_a else 0, len(parts_b[0]) if parts_b else 0, len(judge_a))
        chunk = max(1, CHUNK_ENTRIES // max(width, 1))
        done = 0
        while done < n_boot:
            size = min(chunk, n_boot - done)
            draws = (resample_weights(np.ones(len(judge_a), dtype=np.int64), size, rng) if clusters is None else
                     cluster_resample_weights(np.arange(len(judge_a)), clusters, len(judge_a), size, rng))
            for weights in draws:
                if parts_a and parts_b:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        rho_samples.append(_rho(parts_b, weights) - _rho(parts_a, weights))
                if has_gap:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        total = weights @ count
                        gap_samples.append((weights @ gap_b - weights @ gap_a) / total)
                if kept.any():
                    with np.errstate(invalid="ignore", divide="ignore"):
                        leniency_samples.append(weights @ difference / (weights @ kept))
            done += size
    if parts_a and parts_b:
        rho_a, rho_b = parts_a[3], parts_b[3]
        ci, usable = usable_interval(rho_samples, level)
        out["rho"] = {"baseline": rho_a, "run": rho_b, "delta": rho_b - rho_a, "ci": ci,
                      **({} if usable is None else {"n_resamples": usable}),
                      **_units(np.union1d(parts_a[0], parts_b[0]), clusters)}
    else:
        out["rho"] = {"why": "the alternative annotator test ran on neither or only one judge (no named experts, or "
                             "no expert with enough items)"}
    if has_gap:
        ga, gb = gap_a.sum() / count.sum(), gap_b.sum() / count.sum()
        ci, usable = usable_interval(gap_samples, level)
        out["ceiling_gap"] = {"baseline": float(ga), "run": float(gb), "delta": float(gb - ga), "ci": ci,
                              **({} if usable is None else {"n_resamples": usable}),
                              **_units(np.flatnonzero(count > 0), clusters)}
    else:
        out["ceiling_gap"] = {"why": "no item both judges scored has a leave-one-out reference"
                              if ceiling_failures != "worst" else "no item has a leave-one-out reference"}
    out["leniency"] = _paired_leniency(lenient, leniency_samples, clusters, level)
    return out


def _paired_leniency(parts: dict[str, Any], samples: list[np.ndarray], clusters: np.ndarray | None,
                     level: float) -> dict[str, Any]:
    """The ``leniency`` block of ``paired_validity`` from ``_leniency_parts`` and the resamples' differences."""
    kept = parts["kept"]
    counts = {"n_left_out_failed": parts["n_left_out_failed"], "n_left_out_off_scale": parts["n_left_out_off_scale"]}
    if not kept.any():
        return {"why": "no item with an experts' mean that both judges scored on its scale ("
                       f"{counts['n_left_out_failed']} failed on by either judge, {counts['n_left_out_off_scale']} "
                       "scored off its scale by either)"}
    base, run = float(parts["error_a"][kept].mean()), float(parts["error_b"][kept].mean())
    ci, usable = usable_interval(samples, level)
    units = _units(np.flatnonzero(kept), clusters)
    return {"baseline": base, "run": run, "delta": run - base, "ci": ci,
            "direction": _leniency_direction(ci, units, usable, level), "n": int(kept.sum()), **counts, **units,
            **({} if usable is None else {"n_resamples": usable})}

"""The validity section as report text: one lead sentence per split, then the tables (Markdown and HTML).

Why one module of ~965 lines: the lead sentence, the report's tables and compare's rows say the same figures in the
same words (``counted``, ``signed``, the coverage and resample notes); split, one figure's wording would live twice.

``report.md`` and ``report.html`` lead with ``lead_lines`` and show ``markdown_lines`` / ``html_blocks`` after the
summary; ``judge-eval compare`` sets two runs side by side with ``compare_rows`` and ``paired_rows`` (compare.md) and
``compare_html`` (compare.html, from the same rows). How to read every figure: docs/validity.md.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any

from eval.reports.names import shown_names
from eval.scoring.bootstrap import MIN_VERDICT_UNITS
from eval.scoring.resample_rules import paired_resamples_to_call
from eval.scoring.comparison import Comparison
from judge.metrics_json.metrics import Metrics
from eval.validity.alt_test import MIN_EXPERTS_TESTED
from eval.validity.bias import MIN_EXPERT_SLOPES, MIN_LENIENCY_N, MIN_PAIRS, MIN_SLOPE_ANSWERS
from eval.validity.ceiling import MARGIN as CEILING_MARGIN
from eval.validity.ceiling import ceiling_resamples
from eval.validity.ceiling import MIN_ITEMS as CEILING_MIN_ITEMS
from eval.validity.agreement import MIN_USABLE_SHARE
from judge.plumbing.json_reading import counted
from judge.metrics_json.validity import (AgreementClass, AltTest, AltTestFamily, LengthBias, MarginalHomogeneity,
                                         PooledExpertSlopes, Unavailable, ValiditySplit)
from judge.scales import MAX_LEVELS
from judge.splits import SPLIT_TITLES

__all__ = ["LEFT_OUT_WHY", "PAIRED_LENIENCY", "READING_GUIDE", "RECOMMENDED_EXPERTS", "TERMS", "T_TEST_ITEMS",
           "agreement_class_rows",
           "alt_test_line", "ceiling_coverage",
           "compare_html", "compare_rows", "counted", "html_blocks", "html_table", "lead_html", "lead_lines",
           "left_out_criteria", "length_flag_text", "markdown_lines", "paired_rows", "signed", "two_experts_caveat",
           "constant_difference_caveat", "alt_caveats"]


def _num(value: Any, digits: int = 2) -> str:
    """A figure at ``digits`` decimals; "—" for None or NaN (undefined: metrics.json writes it as null, and a result
    rendered before that round trip must read the same). A value that rounds to zero from below reads "0.00", not
    "-0.00": the sign of a rounded-away difference says nothing."""
    if value is None or value != value:
        return "—"
    shown = f"{value:.{digits}f}"
    return shown[1:] if shown.startswith("-") and not shown.strip("-0.") else shown


def _ci(pair: Any, digits: int = 2) -> str:
    """`` [low, high]`` at ``digits`` decimals, the precision of the figure it follows; "" when undefined."""
    if not pair or pair[0] is None or pair[1] is None:
        return ""
    return f" [{_num(pair[0], digits)}, {_num(pair[1], digits)}]"


def _p(value: float | None, digits: int = 3) -> str:
    """A p-value at ``digits`` decimals; one that would round to 0 reads "< 0.001" (a test never shows p = 0); "—"
    for None or NaN, as ``_num`` (a result rendered before metrics.json's round trip, which writes NaN as null)."""
    if value is None or value != value:
        return "—"
    floor = 10.0 ** -digits
    return f"< {floor:.{digits}f}" if value < floor / 2 else f"{value:.{digits}f}"


def signed(value: float | None, pair: Any = None, digits: int = 2) -> str:
    """A difference with its sign and its interval at ``digits`` decimals: "+0.61 [0.22, 0.99]" ("—" for None; one
    that rounds to zero unsigned, "0.00", as ``_num`` writes it)."""
    shown = _num(value, digits)
    return (shown if shown[:1] in "-—" or not shown.strip("0.") else f"+{shown}") + _ci(pair, digits)


def ceiling_coverage(ceiling, n_items: int, n_missing: int | None) -> str:
    """", over N of M items (why the rest are out)" where the ceiling's verdict covers fewer than the split's items
    (``n_items`` predicted, ``n_missing`` without a prediction): an item with one expert, or without a unique mode
    among the other experts, has no pair, and a verdict over half the items read as one on them all, as the
    alt-test's coverage clause says for its own (``eval.validity.section``). "" where it covers all, or in a file
    without the counts."""
    if ceiling.n_items_few_experts is None or ceiling.n_items_no_reference is None:
        return ""
    missing = n_missing or 0
    total = n_items + missing
    if ceiling.n_items >= total:
        return ""
    why = [text for count, text in (
        (ceiling.n_items_few_experts, f"{ceiling.n_items_few_experts} with fewer than 2 experts"),
        (ceiling.n_items_no_reference, f"{ceiling.n_items_no_reference} without a unique mode among the other "
                                       "experts"),
        (ceiling.n_items_dropped or 0, f"{ceiling.n_items_dropped} the judge failed on, dropped"),
        (missing, f"{missing} without a prediction")) if count > 0]
    return f", over {ceiling.n_items} of {counted(total, 'item')} ({', '.join(why)})"


#: Why the section leaves a criterion out of every figure (``eval.validity.section.too_wide_to_rate``), as the
#: sentence, the report's line and compare's paired figures say it: the span is the criterion's own experts'.
LEFT_OUT_WHY = (f"no readable scale, and its experts' scores span more than the {MAX_LEVELS} levels a rubric "
                "holds")


def left_out_criteria(block: ValiditySplit) -> dict[str, int]:
    """The criteria a split leaves out of every figure, each with its items (``criteria_left_out``, checked when the
    file was read; ``LEFT_OUT_WHY``): empty where none is, as in a file written before the rule."""
    return dict(block.criteria_left_out or {})


def _left_out_line(block: ValiditySplit, text: Callable[[str], str]) -> str:
    """The report's line naming the criteria left out of every figure, with their items ("" where none is); ``text``
    makes a criterion's name (cut as every table cuts names) safe for the format."""
    left = left_out_criteria(block)
    if not left:
        return ""
    shown = shown_names(left)
    return (f"Left out of every figure ({LEFT_OUT_WHY}): "
            + ", ".join(f"{text(shown[str(name)])} ({counted(n, 'item')})" for name, n in left.items()) + ".")


#: The items per expert the alt-test's t-test needs for its normality, by its authors' FAQ ("What if I have fewer
#: than 30 annotated instances per annotator?", in the README of the public repository ``nitaytech/AltTest``;
#: Calderon et al. 2025, arXiv 2501.10970), which suggests the Wilcoxon signed-rank test below it.
T_TEST_ITEMS = 30
#: The experts the authors recommend for the alt-test (the same FAQ, "Why do you recommend at least three human
#: annotators and not two?"): with two it only checks which annotator the judge aligns with more.
RECOMMENDED_EXPERTS = 3


def two_experts_caveat(alt: AltTest) -> str:
    """What a verdict of the alt-test means where fewer than ``RECOMMENDED_EXPERTS`` experts were tested, or every
    item a tested expert is left out on (``n_items_tested``) has one other expert beside it (``n_items_two_experts``;
    None: a file written before the counts): a clause, "" where neither holds or no expert was tested. A judge that
    copies one of two experts then wins against both (``eval.validity.alt_test``). Fewer experts tested over items
    with more experts each are no such case: each left-out expert is still compared with the others' mean, but omega
    can take only a few values."""
    tested = alt.n_experts_tested
    if not tested:
        return ""
    tested_items = alt.n_items_tested
    pairs_only = bool(tested_items) and alt.n_items_two_experts is not None and alt.n_items_two_experts >= tested_items
    if pairs_only and tested < RECOMMENDED_EXPERTS:
        return (f"with {counted(tested, 'expert')} tested the alt-test only checks which expert the judge sides "
                "with more, not whether it stands for the panel (its authors recommend at least "
                f"{RECOMMENDED_EXPERTS})")
    if pairs_only:
        return ("with one other expert on every item tested the alt-test only checks which of each item's two "
                "experts the judge sides with more, not whether it stands for the panel (its authors recommend at "
                f"least {RECOMMENDED_EXPERTS} experts)")
    if tested < RECOMMENDED_EXPERTS:
        values = [f"{k / tested:g}" for k in range(tested + 1)]
        return (f"with {counted(tested, 'expert')} tested ω can only be {', '.join(values[:-1])} or {values[-1]} "
                f"(its authors recommend at least {RECOMMENDED_EXPERTS})")
    return ""


def constant_difference_caveat(alt: AltTest) -> str:
    """A clause where every tested expert's differences W_f − W_h are one value on all their items (``alt_test``'s
    constant-difference rule set each p, no t-test did), "" otherwise: the sentence says what such a verdict rests
    on, and which constant it is. W_f and W_h are 0/1 and never both 0 (a tie counts for both; a failure under
    ``loss`` is W_f 0, W_h 1), so a constant d of 0 or 1 is a rho of 1 (the judge ties or beats the expert on every
    item: a panel that never disagrees, with a judge that agrees with it, is "passed" against every expert, as the
    authors' notebook passes it too) and a constant -1 a rho of 0 (the judge loses every item)."""
    if not alt.experts or not all(r.constant_difference for r in alt.experts):
        return ""
    lost = sum(r.advantage_probability == 0 for r in alt.experts)
    kept = len(alt.experts) - lost
    if not lost:
        which = "the judge ties or beats every expert on every item"
    elif not kept:
        which = "the judge loses to every expert on every item"
    else:
        which = (f"the judge ties or beats {kept} of the {len(alt.experts)} on every item and loses to the other "
                 f"{lost} on every item")
    return ("every tested expert's W_f − W_h is one value on all their items, so each p is the constant-difference "
            f"rule's, no t-test's ({which})")


def alt_caveats(alt: AltTest) -> list[str]:
    """What a verdict of the alt-test rests on, where it needs saying (``two_experts_caveat``,
    ``constant_difference_caveat``): the clauses the lead sentence and the alt-test line both add."""
    return [c for c in (two_experts_caveat(alt), constant_difference_caveat(alt)) if c]


def alt_test_line(alt: AltTest) -> str:
    """The report's alt-test line: its settings, the minimums included (``min_items_per_expert``,
    ``min_experts_per_item``, the verdict's ``min_experts_tested``; a file without them shows what it has), a note
    where an expert is tested on fewer items than the t-test's normality asks (``T_TEST_ITEMS``), then omega and
    rho, then ``alt_caveats``."""
    needed = alt.min_experts_tested or MIN_EXPERTS_TESTED  # None: a file written before the option
    settings = [f"ε = {alt.epsilon}", f"q = {alt.q}", str(alt.scoring), f"judge failures scored as `{alt.failures}`"]
    items, per_item = alt.min_items_per_expert, alt.min_experts_per_item
    if items is not None:
        settings.append(f"experts tested on {counted(items, 'item')} or more")
    if per_item is not None:
        settings.append(f"items with {counted(per_item, 'named expert')} or more")
    settings.append(f"a verdict from {counted(needed, 'tested expert')} or more")
    text = f"Alternative annotator test ({', '.join(settings)})"
    if items is not None and items < T_TEST_ITEMS:
        text += (f"; under {T_TEST_ITEMS} items per expert the t-test's normality does not hold (its authors "
                 "suggest the Wilcoxon signed-rank test there)")
    return (f"{text}: ω = {_num(alt.winning_rate)}, ρ = {_num(alt.advantage_probability)}"
            + "".join(f"; {c}" for c in alt_caveats(alt)) + ".")


def _splits(result: Metrics) -> dict[str, ValiditySplit]:
    """The validity section's splits of a run's metrics (empty for a file written before the section existed)."""
    return result.validity.splits if result.validity else {}


#: Where the figures are explained, for a reader of a run folder: the repository path alone read as a file beside the
#: report, and the folder holds none.
READING_GUIDE = ("How to read these figures: the Validity page of the pollux-judge documentation (docs/validity.md in "
                 "the pollux-judge repository).")
#: The lead sentences' symbols, said where they are first read: ρ beside a Spearman column reads as a correlation.
TERMS = ("ω: the share of the tested experts the judge could replace (the alternative annotator test, passed at "
         "ω ≥ 0.5); ρ: the advantage probability, the chance the judge agrees with the other experts at least as well "
         "as an expert does (not Spearman's ρ); ceiling gap: the judge's MAE minus the experts' own, each against the "
         "rest of the item's experts; lenient / harsh: more / less generous than the experts' mean.")


def lead_lines(result: Metrics) -> list[str]:
    """One plain sentence per split ("Full test: passes the alternative annotator test against ..."), Markdown."""
    splits = _splits(result)
    if not splits:
        return []
    lines = ["**Can this judge stand in for an expert?**", ""]
    lines += [f"- {SPLIT_TITLES.get(split, split)}: {block.sentence}" for split, block in splits.items()]
    return lines + ["", TERMS, READING_GUIDE, ""]


def _plain(text: str) -> str:
    """A name as it is: the HTML tables escape every cell themselves."""
    return text


#: Beside an alt-test p-value set by the constant-difference rule rather than a t-test (docs/validity.md).
CONSTANT_D = "every item's W_f − W_h equal: no t-test, the constant-difference rule"


def _exact_p(value: float | None) -> str:
    """The alt-test's p-values at three significant digits (they reach 1e-20 on a large panel); "—" when absent or
    undefined (NaN: an expert with one item)."""
    return "—" if value is None or value != value else f"{value:.3g}"


def _alt_rows(alt: AltTest, text: Callable[[str], str]) -> list[list[str]]:
    """The alt-test's rows per expert; ``text`` makes an expert id (the data's, cut as every table cuts names:
    ``eval.reports.names.shown_names``) safe for the table's format."""
    shown = shown_names([r.expert for r in alt.experts] + [u.expert for u in alt.untested])
    # a constant difference's p is the stated rule's 0 or 1, no t-test's (``alt_test``): a bare 0 read as underflow
    rows = [[text(shown[str(r.expert)]), str(r.n_items), _num(r.advantage_probability),
             _exact_p(r.p_value) + (f" ({CONSTANT_D})" if r.constant_difference else ""),
             _exact_p(r.p_adjusted), "yes" if r.rejected else "no"] for r in alt.experts]
    rows += [[text(shown[str(u.expert)]), str(u.n_items), "untested", "", "", ""] for u in alt.untested]
    return rows


def _criterion_rows(block: ValiditySplit, text: Callable[[str], str]) -> list[list[str]]:
    """The validity figures per criterion; ``text`` makes a criterion's name (the data's, cut as every table cuts
    names: ``eval.reports.names.shown_names``) safe for the format."""
    rows, shown = [], shown_names(block.by_criterion)
    for label, c in block.by_criterion.items():
        ceiling = c.ceiling
        passed = c.alt_test.passed if isinstance(c.alt_test, AltTest) else None
        rows.append([text(shown[str(label)]), str(ceiling.n_pairs), _num(ceiling.expert_mae), _num(ceiling.judge_mae),
                     _num(ceiling.gap) + _ci(ceiling.gap_ci), ceiling.verdict or "—",
                     _num(c.alpha_experts), _num(c.alpha_with_judge), _num(c.kappa_quadratic),
                     _num(c.leniency.mean_signed_error), "—" if passed is None else ("pass" if passed else "fail")])
    return rows


_ALT_HEAD = ["Expert", "items", "ρ (advantage)", "p", "p (BY)", "judge wins"]
_CRITERION_HEAD = ["Criterion", "pairs", "expert MAE", "judge MAE", "gap", "experts' range", "α experts",
                   "α with judge", "κ quadratic", "leniency", "alt-test"]


# The slopes are clustered by answer under --bootstrap-unit item and by instruction under instruction (``bias``): the
# counts that gate them are then of instructions, which the file does not record; said where a count is named.
_CLUSTERS = " (instructions under --bootstrap-unit instruction)"


def _left_out(n: int | None, failed: int | None, off: int | None, no_mode: int | None = None) -> str:
    """" (over n items; F failed items, O off the scale and M without a unique mode left out)" where a row's figure
    left any out (None: a count a file written before it does not carry; ``n`` None: the figure itself has no items
    to name)."""
    left = [text for k, text in ((failed, counted(failed or 0, "failed item")), (off, f"{off} off the scale"),
                                 (no_mode, f"{no_mode} without a unique mode")) if k]
    if not left:
        return ""
    over = f"over {counted(n, 'item')}; " if n is not None else ""
    listed = left[0] if len(left) == 1 else ", ".join(left[:-1]) + " and " + left[-1]
    return f" ({over}{listed} left out)"


def _length_text(length: LengthBias | Unavailable | None) -> str:
    if isinstance(length, LengthBias) and length.judge:
        # the judge's slope is over its scores on the items' scales (``bias.length_bias``), as leniency is
        left_out = _left_out(length.judge.n, length.n_judge_failed, length.n_judge_off_scale)
        judge = f"judge {_num(length.judge.slope, 3)}{_ci(length.judge.ci, 3)}{left_out}"
        # "not flagged" only where there was an experts' range to be outside of: without named experts
        # (PooledExpertSlopes, never fitted: bias.length_bias) or without an expert with enough items, say so.
        if isinstance(length.experts, PooledExpertSlopes):
            return f"{judge}; not compared: the experts' slopes need named experts (the data names none)"
        if length.experts.range is None:
            return (f"{judge}; not compared: no expert has the {MIN_PAIRS} items over {MIN_SLOPE_ANSWERS} answers a "
                    f"slope of their own needs{_CLUSTERS}")
        low, high = length.experts.range
        if length.experts.why:  # fewer experts with a slope than a flag needs (``bias.MIN_EXPERT_SLOPES``)
            return (f"{judge}; experts {_num(low, 3)} to {_num(high, 3)}: not compared: "
                    f"{counted(len(length.experts.by_expert), 'expert')} with a slope of their own, a flag needs "
                    f"{MIN_EXPERT_SLOPES}")
        # no flag: the interval within the range, or the judge's slope over fewer answers than a flag needs
        # (``bias.MIN_SLOPE_ANSWERS``; the file counts the items, not the answers)
        unflagged = (f"not flagged (a flag needs the interval outside the experts', over {MIN_SLOPE_ANSWERS} "
                     f"answers{_CLUSTERS})")
        shown = length_flag_text(length.flag) if length.flag else unflagged
        return f"{judge}; experts {_num(low, 3)} to {_num(high, 3)}: {shown}"
    if isinstance(length, LengthBias):  # fitted, but no slope (``bias.cluster_slope``)
        left_out = _left_out(None, length.n_judge_failed, length.n_judge_off_scale)
        return ("no judge slope: fewer than 3 answers with a judge score on the scale and two experts or more, or one "
                f"length for all{_CLUSTERS}{left_out}")
    return (length.why if isinstance(length, Unavailable) else "") or "—"


def length_flag_text(flag: str) -> str:
    """A length flag (``bias.length_bias``'s ``flag``) as the sentence and the report's row say it: a slope of the
    judge's oriented residual, with the confound that residual carries (``bias``' "What the residual's slope
    confounds": a judge that tracks quality less than the experts gets minus the experts' mean's own slope on
    length), so that it reads as no claim about length beyond that; a value this toolkit does not write is shown as
    it is."""
    side = {"harsh on long answers": ("below", "better"), "lenient on long answers": ("above", "worse")}.get(flag)
    if side is None:
        return flag
    return (f"{flag} as a residual slope (its score minus the experts' mean, negated on Critical criteria, on log "
            f"length, {side[0]} every expert's; a judge that tracks quality less than the experts reads so where "
            f"longer answers are {side[1]}: read it beside κ and α)")


def _judge_left_out(agreement) -> list[str]:
    """The judge's items no rating of the scale can stand for, counted in the cell's agreement: its failures and its
    answers off the item's scale (None: a file written before the counts)."""
    failed = agreement.n_items_judge_failed if agreement else None
    off = agreement.n_items_judge_off_scale if agreement else None
    return ([counted(failed, "failed item")] if failed else []) + ([f"{off} off the scale"] if off else [])


def _homogeneity_text(homogeneity: MarginalHomogeneity | None, agreement=None) -> str:
    """The Stuart–Maxwell row; the table is over the items with a judge level on the scale and a unique mode, kappa's
    items, so its items left out are said as the κ row says them (``agreement``: the same cell's); a file written
    before ``n_items_no_mode`` says the judge's failed and off-scale items, as the α row does."""
    if homogeneity is None:
        return "χ² —, df —, p —"
    text = f"χ² {_num(homogeneity.statistic)}, df {homogeneity.df or '—'}, p {_p(homogeneity.p_value)}"
    if agreement and agreement.n_kappa == homogeneity.n and agreement.n_items_no_mode is not None:
        # the table's items are kappa's (a judge level and a mode, both levels of the scale): left out as kappa's
        text += _kappa_left_out(agreement)
    elif left := _judge_left_out(agreement):
        text += f" (over {counted(homogeneity.n, 'item')}; {' and '.join(left)} left out)"
    # without a test the dashes alone would not say why: no item off the diagonal, or no item to tabulate
    return f"{text}: {homogeneity.why}" if homogeneity.why and homogeneity.p_value is None else text


_VERDICTS = {"inside": "inside the experts' range", "outside": "outside the experts' range",
             # the resample floor depends on the section's level: the note on the bracketed ranges names it
             "inconclusive": f"inconclusive (an interval straddling the {CEILING_MARGIN} margin, under "
                             f"{CEILING_MIN_ITEMS} items, instructions under the instruction unit, or read off "
                             "too few resamples: see the note on the bracketed ranges)"}


def _ceiling_verdict(ceiling) -> str:
    """The ceiling row's verdict; without one (``ceiling.verdict``: no interval, under ``--n-boot 0`` or over a cell
    of one item or instruction; or no pair at all) it says so, where a bare "—" read as a figure missing."""
    if ceiling.verdict is not None:
        return _VERDICTS.get(ceiling.verdict, ceiling.verdict)
    return "no verdict (no interval)" if ceiling.gap is not None else "no verdict (no pair)"


def _ceiling_failed(ceiling, failures: str | None) -> str:
    """What the ceiling did with the judge's failures, when it had any (``failures``: the section's
    ``ceiling_failures``; None, a file written before the setting: left out)."""
    failed = ceiling.n_items_judge_failed
    if failed is None and ceiling.n_judge_failed:  # a file written before the items were counted: pairs
        return f"; the judge failed on {ceiling.n_judge_failed} (item, expert) pairs, left out"
    if not failed:
        return ""
    how = "each counted as its largest error on the item's scale" if failures == "worst" else "left out"
    pairs = ceiling.n_judge_failed
    return f"; the judge failed on {counted(failed, 'item')} ({counted(pairs, 'pair')}), {how}"


def _alpha_failed(agreement) -> str:
    """Alpha with the judge is over its readable verdicts on the scale: how many of its items (``n_items_alpha``) that
    leaves the judge out of, failed and answered off the item's scale. A file written before ``n_items_alpha`` took
    alpha with the judge over every item of the cell, so the cell's counts are its; one written after it but before
    the alpha items' own counts: no clause (None: a file written before the counts)."""
    if not agreement:
        return ""
    if agreement.n_items_alpha is None:
        counts = ((agreement.n_items_judge_failed, "failed item"),
                  (agreement.n_items_judge_off_scale, "off-scale item"))
    else:
        counts = ((agreement.n_alpha_items_judge_failed, "failed item"),
                  (agreement.n_alpha_items_judge_off_scale, "off-scale item"))
    left = [counted(n, noun) for n, noun in counts if n]
    return f" (over its readable verdicts: {' and '.join(left)} left out)" if left else ""


def _alpha_off_domain(agreement) -> str:
    """The expert scores that are no level of the scale (half-points, off-rubric scores), left out of both alphas
    (None: a file written before the count)."""
    off = agreement.n_expert_scores_off_domain if agreement else None
    return (f"; {counted(off, 'expert score')} off the scale's levels (a half-point, an off-rubric score) left out of "
            "both" if off else "")


def _alpha_unusable(agreement) -> str:
    """Why the alpha difference has no interval where too few resamples were usable (``eval.validity.agreement``)."""
    boot = agreement.alpha_boot if agreement else None
    usable = boot.n_resamples if boot else None
    if usable is None or usable >= boot.resamples or agreement.alpha_difference_ci[0] is not None:
        return ""
    return (f" (no interval: {usable} of {boot.resamples} resamples had both α defined, under "
            f"{MIN_USABLE_SHARE:.0%})")


def _alpha_items(agreement, n_items: int) -> str:
    """Both alphas are over the items two experts scored (``eval.validity.agreement``): how many, where fewer than
    the cell's (None: a file written before the count)."""
    n = agreement.n_items_alpha if agreement else None
    if n is None:
        return ""
    text = f"; both over {n} of {counted(n_items, 'item')}, those two experts scored" if n < n_items else ""
    if 0 < n < MIN_VERDICT_UNITS:
        # alpha over one item is 0 whatever the ratings, and an interval over a few is a few draws' spread: the floor
        # the ceiling's verdict and compare's paired intervals read
        text += f"; over {counted(n, 'item')}, under {MIN_VERDICT_UNITS}: too few to read α or its interval"
    return text


def _kappa_left_out(agreement) -> str:
    """Kappa against the mode is over the items whose judge level and mode are both levels of the scale: the judge's
    failed items are out of it (as of alpha with the judge), and so are the items with a judge answer and a mode
    of which one is off the scale (``n_kappa_off_domain``) and those with a judge answer and no unique mode
    (``n_items_no_mode``)."""
    if not agreement:
        return ""
    return _left_out(agreement.n_kappa, agreement.n_items_judge_failed, agreement.n_kappa_off_domain,
                     agreement.n_items_no_mode)


def _leniency_left_out(lenient) -> str:
    """Leniency is over the judge's scores on the items' scales (``bias.leniencies``): its failed and off-scale items
    named as the κ row names them (None: a file written before the counts, whose leniency took off-scale answers)."""
    return _left_out(lenient.n, lenient.n_judge_failed, lenient.n_judge_off_scale)


#: Why an agreement coefficient with ratings to pair is undefined: its expected disagreement is 0. Without it the
#: row showed a bare "—", which reads as a figure not computed (a test with every expert and the judge at 2).
NO_DISAGREEMENT = "no two of the ratings it pairs differ, so there is no disagreement to expect"


#: Under the table by criterion, whose cells have no room for a reason, where an α or κ there is undefined: a
#: criterion of a few items often has every rating on one level, and a bare "—" beside figures read as missing.
CRITERION_NOTE = ("α or κ —: no two of the ratings it pairs differ (every one on one level), so there is no "
                  "disagreement to expect; or it has none to pair (α: no item two experts scored; α with the judge "
                  "and κ: no readable verdict on the scale; κ: no item with a unique experts' mode).")


def _criterion_note(block: ValiditySplit, text: Callable[[str], str] = _plain) -> str:
    """``CRITERION_NOTE`` where a criterion's α or κ is undefined, and what a criterion's "pass" / "fail" rests on
    where ``two_experts_caveat`` applies to its alt-test (the criteria named, through ``text``, grouped by clause);
    "" where neither."""
    undefined = any(None in (c.alpha_experts, c.alpha_with_judge, c.kappa_quadratic)
                    for c in block.by_criterion.values())
    clauses: dict[str, list[str]] = {}
    shown = shown_names(block.by_criterion)
    for label, c in block.by_criterion.items():
        alt = c.alt_test
        # a domain's counts are absent from a file written before them: the caveat then reads the experts alone
        if isinstance(alt, AltTest) and alt.passed is not None and (clause := two_experts_caveat(alt)):
            clauses.setdefault(clause, []).append(text(shown[str(label)]))
    notes = [CRITERION_NOTE] if undefined else []
    notes += [f"The alt-test's pass / fail on {', '.join(names)}: {clause}." for clause, names in clauses.items()]
    return " ".join(notes)


def _why_ceiling_kappa_blank(ceiling) -> str:
    """Why a ceiling kappa (mode reference) is "—" over pairs it has: every pair on one level, its expected
    disagreement 0 (the pairs of one side: the expert's levels and the references, or the judge's)."""
    if ceiling.reference != "mode" or not ceiling.n_pairs or (ceiling.n_kappa_off_domain or 0) >= ceiling.n_pairs:
        return ""  # the mean reference has no kappa; no pair (or none on the levels) is said by the coverage
    if ceiling.expert_kappa is not None and ceiling.judge_kappa is not None:
        return ""
    return f"; κ —: {NO_DISAGREEMENT}"


def _why_mode_kappa_blank(kappa: float | None, agreement) -> str:
    """Why kappa against the mode is "—": no item to pair, or every pair on one level (the judge's levels and the
    modes all one level: ``agreement.table_kappa``)."""
    if kappa is not None or not agreement:
        return ""
    if not agreement.n_kappa:
        return ": no item has both a judge level on the scale and a unique experts' mode"
    return f": {NO_DISAGREEMENT}"


def _why_experts_alpha_blank(overall, agreement) -> str:
    """Why the experts' alpha is "—" over items two experts scored: no two of their scores on the value domain
    differ (every one on one level), so the expected disagreement is 0 (``agreement.CodedCounts``). With no such
    item ``_alpha_items`` says so; alpha with the judge alone undefined comes of its failures, which
    ``_alpha_failed`` names."""
    n_alpha = agreement.n_items_alpha if agreement else None
    if overall.alpha_experts is not None or n_alpha == 0:
        return ""
    return f"; α —: {NO_DISAGREEMENT}"


def _leniency_direction(lenient) -> str:
    """The leniency row's direction, with why it has none where its figures alone would not say (``bias``): no
    error to average (every verdict failed or off the scale), or an interval that excludes 0 (or none: one answer)
    over fewer than ``MIN_LENIENCY_N`` answers, the floor under the zero-spread rule."""
    if lenient.mean_signed_error is None:
        return "no direction"
    low, high = lenient.ci
    if lenient.direction == "neither" and (low is None or low > 0 or high < 0):
        # the floor counts the interval's clusters: instructions under that unit (``bias.leniencies``)
        return (f"neither (a direction needs {MIN_LENIENCY_N} answers or more, instructions under --bootstrap-unit "
                "instruction)")
    return lenient.direction


def _ceiling_off_scale(ceiling) -> str:
    """The judge's off-scale answers in the ceiling: in kappa at an end of the item's scale (a verdict's: the end
    farther from the reference; a regression head's value: the nearer one), in the MAE at their distance; and the
    pairs both kappas leave out, a score or reference off the scale's levels (an expert's half-point)."""
    notes = []
    off = ceiling.n_items_judge_off_scale
    if off:
        pairs = counted(ceiling.n_judge_off_scale, "pair")
        notes.append(f"the judge answered off the scale on {counted(off, 'item')}, {pairs}: in κ at an end of the scale")
    left = ceiling.n_kappa_off_domain
    if left:  # None: a file written before the count
        notes.append(f"both over {ceiling.n_pairs - left} of {counted(ceiling.n_pairs, 'pair')}: {left} with a "
                     "score or reference off the scale's levels left out")
    return f" ({'; '.join(notes)})" if notes else ""


def _overall_rows(block: ValiditySplit, failures: str | None = None) -> list[list[str]]:
    """The overall figures of a split; ``failures``: the section's ``ceiling_failures``."""
    overall = block.overall
    ceiling, agreement, lenient = overall.ceiling, overall.agreement, overall.leniency
    rows = [
        ["experts' ceiling (MAE to the rest of the panel)",
         f"expert {_num(ceiling.expert_mae)}, judge {_num(ceiling.judge_mae)}, gap {_num(ceiling.gap)}"
         f"{_ci(ceiling.gap_ci)}: {_ceiling_verdict(ceiling)}"
         f"{ceiling_coverage(ceiling, overall.n_items, overall.n_items_missing)}{_ceiling_failed(ceiling, failures)}"],
        ["κ quadratic (to the rest of the panel)",
         f"expert {_num(ceiling.expert_kappa)}, judge {_num(ceiling.judge_kappa)}{_ceiling_off_scale(ceiling)}"
         f"{_why_ceiling_kappa_blank(ceiling)}"],
        ["Krippendorff's α (ordinal)",
         f"experts {_num(overall.alpha_experts)}, with the judge {_num(overall.alpha_with_judge)}"
         f"{_alpha_failed(agreement)}, "
         f"difference {_num(agreement.alpha_difference if agreement else None, 3)}"
         f"{_ci(agreement.alpha_difference_ci if agreement else None, 3)}{_alpha_unusable(agreement)}"
         f"{_alpha_items(agreement, overall.n_items)}{_alpha_off_domain(agreement)}"
         f"{_why_experts_alpha_blank(overall, agreement)}"],
        ["κ quadratic (judge vs experts' mode)", f"{_num(overall.kappa_quadratic)}{_kappa_left_out(agreement)}"
                                                 f"{_why_mode_kappa_blank(overall.kappa_quadratic, agreement)}"],
        ["leniency (+ = lenient)",
         f"{_num(lenient.mean_signed_error, 3)}{_ci(lenient.ci, 3)}: {_leniency_direction(lenient)}"
         f"{_leniency_left_out(lenient)}"],
        ["length bias (slope on log length)", _length_text(overall.length_bias)],
        ["marginal homogeneity (Stuart–Maxwell)", _homogeneity_text(overall.marginal_homogeneity, agreement)],
    ]
    missing = overall.n_items_missing
    if missing:  # a run not finished: say how much of the test the figures above do not cover
        rows.append(["items without a prediction (left out of every figure)", str(missing)])
    for name, family in block.alt_test_domains.items():
        title = ("task type", "task types") if name == "task_type" else ("criterion", "criteria")
        if isinstance(family, AltTestFamily):
            text = f"passes in {family.n_passed} of {counted(family.n_domains, *title)} with a verdict"
            if family.n_domains_without_verdict:  # None: a file written before the count
                needed = family.min_experts_tested or MIN_EXPERTS_TESTED  # None: written before the option
                text += (f"; {family.n_domains_without_verdict} without (no {counted(needed, 'named expert')} with "
                         f"{family.min_items_per_expert} judged items or more there)")
        else:
            text = family.why or "—"
        rows.append([f"alt-test per {name.replace('_', ' ')} (one BY correction)", text])
    rows += agreement_class_rows(agreement.by_expert_agreement if agreement else {})
    return rows


def agreement_class_rows(classes: Mapping[str, AgreementClass]) -> list[list[str]]:
    """The judge on the items whose experts were unanimous, a majority or split: each row's n counts the class's
    items and, where fewer, those the judge scored, which its figures are over; a split class's exact share is "—"
    with why (no unique mode to equal)."""
    rows = []
    for name, figures in classes.items():
        judged = "" if figures.n_judged == figures.n else f", {figures.n_judged} judged"
        exact = (_num(figures.exact) if figures.exact is not None or name != "split"
                 else "— (split experts have no unique mode)")
        rows.append([f"experts {name} (n {figures.n}{judged})",
                     f"judge = mode {exact}, MAE to the experts' mean {_num(figures.mae_to_mean)}"])
    return rows


def _intervals_note(settings) -> str:
    """What the tables' bracketed ranges are: the leniency's and the length slopes' come from a formula at any
    ``--n-boot``, so that under ``--n-boot 0`` they do not read as bootstrap intervals that should be absent."""
    coverage = f"{settings.level:.0%}"
    # clustered as the section clustered them (``section``: by instruction under that unit, else by answer where
    # the table knew the answers); a file that did not record its unit came from a version that may not have
    clustered = {"instruction": "clustered by instruction",
                 "item": "clustered by answer; per item where the table knew neither the answers' lengths nor the "
                         "instructions",
                 None: "as the version that wrote this file computed them, which did not record how: the earliest "
                       "took each item as independent"}.get(settings.bootstrap_unit, "clustered by answer")
    formula = f"{coverage} t intervals from a formula ({clustered}), which need no bootstrap"
    if not settings.n_boot:
        return ("No bootstrap ran (`--n-boot 0`): the ceiling gap and the α difference have no interval, and the "
                f"ceiling no verdict; the bracketed ranges of leniency and the length slopes are {formula}.")
    note = (f"Bracketed ranges: the ceiling gap's and the α difference's are {coverage} percentile bootstrap "
            f"intervals; leniency's and the length slopes' are {formula}.")
    # the ceiling's verdict needs a floor of resamples (``ceiling.verdict``): without this, "inconclusive" could sit
    # beside an interval wholly on one side of the margin with no reason given
    drawn, floor = ceiling_resamples(settings.n_boot, settings.level), paired_resamples_to_call(1.0 - settings.level)
    if drawn < floor:
        note += (f" The ceiling gap's intervals are from {drawn} resamples, under {floor}: the ceiling gives no "
                 "verdict (\"inconclusive\" whatever the interval).")
    return note


def _empty(block: ValiditySplit) -> bool:
    """A split without a single item: its tables would hold only dashes, and its sentence says so."""
    return not block.overall.n_items and not block.overall.n_items_missing


def markdown_lines(result: Metrics, markdown_table: Callable[[list[str], list[list[str]]], str],
                   md_text: Callable[[Any], str]) -> list[str]:
    """The validity tables of every split, as Markdown lines (empty when the result has no validity section).

    ``markdown_table`` is the report's own table writer (``eval.reports.report.markdown_table``) and ``md_text`` its
    escaping of the data's text (criterion names, expert ids: ``eval.reports.report.md_text``), passed in so that
    this module does not import the report that imports it.
    """
    splits = _splits(result)
    if not splits:
        return []
    out = ["## Validity: can the judge stand in for an expert?", ""]
    if not result.validity.named_experts:
        out += ["The data names no experts (`expert_ids`): the alternative annotator test and the per-expert length "
                "slopes need identities and are left out, and the judge's length slope is shown without a flag "
                "(there is no experts' range to hold it against); every other figure is computed from each item's "
                "panel.", ""]
    if not all(_empty(block) for block in splits.values()):
        out += [_intervals_note(result.validity.settings), ""]
    for split, block in splits.items():
        title = SPLIT_TITLES.get(split, split)
        out += [f"### {title}: validity", "", block.sentence, ""]
        if left := _left_out_line(block, md_text):
            out += [left, ""]
        if _empty(block):
            continue
        out += [markdown_table(["Figure", "Value"], _overall_rows(block, result.validity.settings.ceiling_failures)),
                ""]
        alt = block.overall.alt_test
        if isinstance(alt, AltTest):
            out += [alt_test_line(alt), "", markdown_table(_ALT_HEAD, _alt_rows(alt, md_text)), ""]
        rows = _criterion_rows(block, md_text)
        if rows:
            out += [f"#### {title}: validity by criterion", "", markdown_table(_CRITERION_HEAD, rows), ""]
            if note := _criterion_note(block, md_text):
                out += [note, ""]
    return out


def html_table(head: list[str], rows: list[list[str]], escape: Callable[[Any], str], css_id: str = "") -> str:
    """A table of the pages' own style, every cell (a heading too) through ``escape``; ``css_id``: its id, if any."""
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in rows)
    id_attr = f' id="{escape(css_id)}"' if css_id else ""
    # in a box that scrolls sideways rather than widening the page
    return (f'<div class="scroll"><table class="grid"{id_attr}><thead><tr>{cells}</tr></thead><tbody>{body}</tbody>'
            "</table></div>")


def html_blocks(result: Metrics, escape: Callable[[Any], str]) -> list[str]:
    """The same as ``markdown_lines``, as HTML blocks for report.html (the lead sentences first); ``escape`` is the
    page's own escaping of every cell (``eval.reports.html_report``'s, which also drops bidirectional controls)."""
    splits = _splits(result)
    if not splits:
        return []

    out = ['<h2 id="validity">Validity: can the judge stand in for an expert?</h2>',
           f'<p class="note">{html.escape(READING_GUIDE)}</p>']
    if not all(_empty(block) for block in splits.values()):
        out.append(f'<p class="note">{escape(_intervals_note(result.validity.settings).replace("`", ""))}</p>')
    for split, block in splits.items():
        title = SPLIT_TITLES.get(split, split)
        out.append(f"<h3>{html.escape(title)}</h3><p><b>{html.escape(block.sentence)}</b></p>")
        if left := _left_out_line(block, _plain):
            out.append(f'<p class="note">{escape(left)}</p>')
        if _empty(block):
            continue
        overall = _overall_rows(block, result.validity.settings.ceiling_failures)
        out.append(html_table(["Figure", "Value"], overall, escape))
        alt = block.overall.alt_test
        if isinstance(alt, AltTest):
            out.append(f'<p class="note">{escape(alt_test_line(alt).replace("`", ""))}</p>')
            out.append(f"<details class=\"block\"><summary>Alternative annotator test per expert</summary>"
                       f"{html_table(_ALT_HEAD, _alt_rows(alt, _plain), escape)}</details>")
        rows = _criterion_rows(block, _plain)
        if rows:
            out.append(f"<details class=\"block\"><summary>{html.escape(title)}: validity by criterion</summary>"
                       f"{html_table(_CRITERION_HEAD, rows, escape)}"
                       + (f'<p class="note">{html.escape(note)}</p>' if (note := _criterion_note(block, _plain)) else "")
                       + "</details>")
    return out


def lead_html(result: Metrics) -> str:
    """The lead sentences as one HTML list (empty without a validity section)."""
    splits = _splits(result)
    if not splits:
        return ""
    items = "".join(f"<li><b>{html.escape(SPLIT_TITLES.get(s, s))}</b>: {html.escape(b.sentence)}</li>"
                    for s, b in splits.items())
    return (f'<p><b>Can this judge stand in for an expert?</b></p><ul class="lead">{items}</ul>'
            f'<p class="note">{html.escape(TERMS)}</p>')


#: Leniency is the one signed column, better near 0 than high or low: its header says which way is which.
_SIDE_HEAD = ["Run", "ω", "ρ (advantage)", "ceiling gap", "α with judge",
              "leniency (+ lenient, − harsh; 0: as the experts)", "in a sentence"]
_PAIRED_HEAD = ["Run", "Test", "Figure", "baseline", "run", "delta", "note"]


#: The "α with judge" of a run scored before alpha took only items two experts scored, beside a newer run's on data
#: with one-expert items: not the same statistic, so not shown.
OLDER_ALPHA = "— (scored before α took only items two experts scored: score it again)"


#: Beside a leniency of a run scored before it left the judge's off-scale answers out, where another run's leaves
#: them out: the older one may hold such answers as errors, so the two may not be the same statistic.
OLDER_LENIENCY = " (scored before leniency left off-scale answers out: score it again to compare)"
#: Beside a leniency without ``n_judge_outside_observed``, where another run's has it: the older one left the judge's
#: answers outside an unreadable scale's observed range out (counted off the scale), the newer keeps them as errors.
OLDER_OBSERVED_RANGE = (" (scored before leniency kept answers outside an unreadable scale's observed range: score it "
                        "again to compare)")


def _older_leniency(lenient, counted_off: bool, kept_outside: bool) -> str:
    """The note after a run's leniency in "Validity side by side" where another run's was taken under a later rule:
    ``counted_off``, ``kept_outside``: whether some run's leniency has ``n_judge_off_scale``,
    ``n_judge_outside_observed``. A file without the latter that left no answer off the scale left nothing out that
    the later rule keeps, so its figure is the same statistic and goes unmarked."""
    if counted_off and lenient.n_judge_off_scale is None:
        return OLDER_LENIENCY
    if kept_outside and lenient.n_judge_outside_observed is None and lenient.n_judge_off_scale:
        return OLDER_OBSERVED_RANGE
    return ""


def _n_alpha_items(block) -> int | None:
    """The items both alphas of a split's overall cell are over (None: a file written before the count)."""
    agreement = block.overall.agreement
    return agreement.n_items_alpha if agreement is not None else None


#: A run's row in "Validity side by side" where its metrics.json has no validity section (an older file): said, so
#: that the table is not read as the other runs' alone.
NO_RUN_VALIDITY = "no validity section (its metrics.json was written before it existed); score it again"
#: A run's row where its section holds no figures for a test another run's section holds.
NO_SPLIT_VALIDITY = "no validity figures for this test in its metrics.json"


def _side_by_side(runs: Mapping[str, Metrics]) -> list[tuple[str, list[list[str]]]]:
    """Per split any run's section holds, its title and one row per run: a run without a section, or without that
    split in it, keeps its row, "—" with why (``NO_RUN_VALIDITY``, ``NO_SPLIT_VALIDITY``), rather than being left
    out of a table that would then read as the other runs' alone (``compare_rows``)."""
    names = [name for name, result in runs.items() if _splits(result)]
    if not names:
        return []
    tables = []
    # in the order the tests are titled (a split only a later run's section holds is not put last)
    order = list(SPLIT_TITLES)
    splits = sorted({s for name in names for s in _splits(runs[name])},
                    key=lambda s: (order.index(s) if s in order else len(order), s))
    for split in splits:
        rows = []
        blocks = {name: _splits(runs[name])[split] for name in names if split in _splits(runs[name])}
        # a metrics.json written before n_items_alpha took alpha with the judge over one-expert items too; where a
        # newer run's section says the split has such items, the two alphas are different statistics
        one_expert_items = any(_n_alpha_items(b) is not None and _n_alpha_items(b) < b.overall.n_items
                               for b in blocks.values())
        # likewise a leniency written before the off-scale count took such answers in as errors
        counted_off = any(b.overall.leniency.n_judge_off_scale is not None for b in blocks.values())
        # and one written before it kept the answers outside an unreadable scale's observed range left them out
        kept_outside = any(b.overall.leniency.n_judge_outside_observed is not None for b in blocks.values())
        for name in runs:
            if name not in blocks:
                rows.append([name] + ["—"] * 5 + [NO_SPLIT_VALIDITY if name in names else NO_RUN_VALIDITY])
                continue
            block = blocks[name]
            alt, ceiling = block.overall.alt_test, block.overall.ceiling
            tested = isinstance(alt, AltTest)
            older = one_expert_items and block.overall.agreement is not None and _n_alpha_items(block) is None
            # at the paired table's 3 decimals: the baseline's ρ there is this ρ (under the alt-test's failures
            # loss; its lead says where not), and two runs' figures 0.006 apart both read "0.97" at 2
            rows.append([name,
                         _num(alt.winning_rate, 3) if tested else "—",
                         _num(alt.advantage_probability, 3) if tested else "—",
                         _num(ceiling.gap, 3) + _ci(ceiling.gap_ci, 3),
                         OLDER_ALPHA if older else _num(block.overall.alpha_with_judge, 3),
                         signed(block.overall.leniency.mean_signed_error, digits=3) + _older_leniency(
                             block.overall.leniency, counted_off, kept_outside),
                         block.sentence])
        tables.append((SPLIT_TITLES.get(split, split), rows))
    return tables


def compare_rows(runs: Mapping[str, Metrics],
                 markdown_table: Callable[[list[str], list[list[str]]], str]) -> list[str]:
    """Two or more runs' validity side by side per split (Markdown lines): omega, rho, the ceiling gap, alpha with
    the judge, leniency (``markdown_table`` as for ``markdown_lines``)."""
    tables = _side_by_side(runs)
    if not tables:
        return []
    out = ["## Validity side by side", ""]
    for title, rows in tables:
        out += [f"### {title}", "", markdown_table(_SIDE_HEAD, rows), ""]
    return out


#: The paired leniency's row title: the one signed figure of the table, better near 0, says which way is which.
PAIRED_LENIENCY = "leniency (+ lenient, − harsh)"


def _paired(result: Comparison) -> list[list[str]]:
    """The rows of ``paired_rows``: per run, split and figure, baseline, run and the delta with its interval; the
    leniency's (where its compare.json has it) signed, its note leading with its call."""
    rows = []
    # what the paired resamples drew (``Comparison.bootstrap_unit``; None: items, a file written before the setting)
    units = ("instruction", "instructions") if result.bootstrap_unit == "instruction" else ("item", "items")
    for comp in result.comparisons:
        for split, paired in comp.validity.items():
            figures = [(paired.rho, "ρ (advantage probability)", "no tested expert's item"),
                       (paired.ceiling_gap, "ceiling gap", "no item with a ceiling pair")]
            if paired.leniency is not None:  # None: a compare.json written before the paired leniency
                figures.append((paired.leniency, PAIRED_LENIENCY, "no item both judges scored on its scale"))
            for figure, title, missed in figures:
                if isinstance(figure, Unavailable):
                    rows.append([comp.run, SPLIT_TITLES.get(split, split), title, "—", "—", "—", figure.why])
                    continue
                # the items are said once: by the too-few note where it counts the same items
                notes = ([] if figure is not paired.leniency else
                         [_leniency_call(figure, result),
                          _leniency_items(figure, counted_below=bool(figure.too_few_units) and units[0] == "item")])
                notes.append(_resamples_note(figure.n_resamples, paired.n_boot, figure.ci, missed))
                if figure.too_few_units:  # eval.validity.paired: under MIN_VERDICT_UNITS units
                    notes.append(f"over {counted(figure.n_units, *units)}, under {MIN_VERDICT_UNITS}: too few to read "
                                 "the interval")
                shown = ((signed(figure.baseline, digits=3), signed(figure.run, digits=3))
                         if figure is paired.leniency else (_num(figure.baseline, 3), _num(figure.run, 3)))
                rows.append([comp.run, SPLIT_TITLES.get(split, split), title, *shown,
                             signed(figure.delta, figure.ci, 3), "; ".join(note for note in notes if note)])
    return rows


def _leniency_call(figure, result: Comparison) -> str:
    """The paired leniency's call; an n.s. that no interval could have avoided (too few units or resamples, the floors
    ``eval.validity.paired`` calls by) says so, as compare's decision says it of its calls."""
    if figure.direction != "n.s.":
        return figure.direction
    needed = paired_resamples_to_call(1.0 - (0.95 if result.ci_level is None else result.ci_level))
    short = figure.n_resamples is not None and figure.n_resamples < needed
    if short:
        return f"n.s. (too few to call: {figure.n_resamples} resamples, under the {needed} a call needs)"
    return "n.s. (too few to call)" if figure.too_few_units else "n.s."


def _leniency_items(figure, counted_below: bool = False) -> str:
    """The items a paired leniency is over (unless ``counted_below``: the note after says them) and those it left out
    of both judges' (``eval.validity.paired``)."""
    left = [f"{counted(n, 'item')} {why}" for n, why in ((figure.n_left_out_failed, "failed on by either judge"),
                                                          (figure.n_left_out_off_scale, "off its scale for either"))
            if n]
    said = f" ({', '.join(left)}: left out of both)" if left else ""
    return said.strip(" ()") if counted_below else f"over {counted(figure.n, 'item')}{said}"


def _resamples_note(used: int | None, drawn: int, ci: Any, missed: str) -> str:
    """How many of the paired resamples an interval is over, where some drew ``missed`` and said nothing
    (``eval.validity.paired``; None: a file written before the count)."""
    if used is None or used >= drawn:
        return ""
    if not ci or ci[0] is None:
        # under ``MIN_USABLE_SHARE`` of those drawn (``eval.validity.paired``)
        return f"no interval: only {used} of {drawn} resamples usable (the rest drew {missed})"
    return f"interval over {used} of {drawn} resamples (the rest drew {missed})"


def _paired_lead(result: Comparison) -> str:
    # the resamples actually drawn: the paired validity caps them (eval.validity.paired.paired_resamples), below the
    # --n-boot the rest of compare.md draws, which its own note states
    drawn = sorted({paired.n_boot for comp in result.comparisons for paired in comp.validity.values()})
    unit = "whole instructions" if result.bootstrap_unit == "instruction" else "items"
    # 1 - --alpha, written as the rest of compare.md writes it (None: a compare.json from before it was kept, 95 %)
    level = 100 * (0.95 if result.ci_level is None else result.ci_level)
    over = ("no interval (no resample drawn)" if drawn == [0] else
            f"a paired bootstrap interval over {unit} ({' / '.join(map(str, drawn))} resamples"
            + (f", fewer than --n-boot's {result.n_boot}: the paired validity caps them"
               if result.n_boot > max(drawn, default=0) else "") + f") at the {level:g} % level")
    validity = result.metrics[0].validity if result.metrics else None
    dropped = ""
    if validity and validity.settings.alt_test.failures == "drop":
        # paired.py leaves out of both judges' ρ an item either failed on, where each section dropped its own
        dropped = (f" The baseline's alt-test drops failures (--alt-test-failures drop), so ρ here is over the items "
                   f"both judges scored: {result.baseline}'s ρ can differ from its own under \"Validity side by "
                   f"side\", which is over every item it scored.")
    leniency = ""
    if any(paired.leniency is not None for comp in result.comparisons for paired in comp.validity.values()):
        leniency = ("; leniency, the judge's mean signed error against the experts' mean, + lenient: best near 0, "
                    "over the items both judges scored on the item's scale, its delta called less or more lenient "
                    f"where the interval excludes 0 over {MIN_VERDICT_UNITS} units or more and from "
                    f"{paired_resamples_to_call(1.0 - level / 100)} resamples or more, else n.s.")
    return (f"On the items both judges share; delta = run − baseline with {over} "
            f"(ρ: higher is better; the ceiling gap, judge minus expert error against the rest of the panel: lower "
            f"is better{leniency}) against {result.baseline}.{dropped}")


#: What compare.md and compare.html say where the paired validity is absent because the baseline has no section.
NO_BASELINE_VALIDITY = ("No paired validity: the baseline's metrics.json has no validity section (written before "
                        "it existed); score it again to compare the judges' validity.")


def _no_baseline_validity(result: Comparison) -> bool:
    """The paired validity is absent because the baseline's metrics.json has no section to pair with (an older
    file), not because there is nothing to compare."""
    return bool(result.comparisons) and not result.metrics[0].validity


def paired_rows(result: Comparison, markdown_table: Callable[[list[str], list[list[str]]], str]) -> list[str]:
    """``judge-eval compare``'s paired validity: per run and split, rho and the ceiling gap against the baseline's on
    the same items, with the paired bootstrap interval of the difference (``eval.validity.paired``); a sentence in
    its place where the baseline has no validity section."""
    rows = _paired(result)
    if not rows:
        return ["## Validity, paired", "", NO_BASELINE_VALIDITY, ""] if _no_baseline_validity(result) else []
    return ["## Validity, paired", "", _paired_lead(result), "", markdown_table(_PAIRED_HEAD, rows), ""]


def compare_html(result: Comparison, escape: Callable[[Any], str]) -> list[str]:
    """compare.md's two validity sections (``compare_rows``, ``paired_rows``) as HTML blocks for compare.html, from
    the same rows; ``escape`` is the page's own (run names and the sentences are the data's, escaped cell by cell)."""
    tables, paired = _side_by_side(dict(zip(result.runs, result.metrics))), _paired(result)
    out = []
    if tables:
        out += ['<h2 id="validity">Validity side by side</h2>',
                f'<p class="note">{html.escape(READING_GUIDE)}</p>']
        out += [f"<h3>{escape(title)}</h3>" + html_table(_SIDE_HEAD, rows, escape, f"validity-{k}")
                for k, (title, rows) in enumerate(tables)]
    if paired:
        out += ['<h2 id="validity-paired">Validity, paired</h2>', f'<p class="note">{escape(_paired_lead(result))}</p>',
                html_table(_PAIRED_HEAD, paired, escape, "validity-paired-table")]
    elif _no_baseline_validity(result):
        out += ['<h2 id="validity-paired">Validity, paired</h2>', f'<p class="warn">{escape(NO_BASELINE_VALIDITY)}</p>']
    return out

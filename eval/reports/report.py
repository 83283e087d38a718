"""Rendering one run's metrics: the Markdown tables of ``report.md`` and the optional W&B log (the PNG plots are
``eval.reports.plots``).

Tables follow the layout of the POLLUX paper's Tables 10-18: one table per (split, grouping), rows are the
evaluated models, task types or criteria, columns the judge's MAE and Spearman with percentile bootstrap intervals
(95 % by default, ``settings.ci_level``) and its Verdict Confidence beside the experts'. Every table says how many
items it covers, how many the judge failed on (``n_failed``) or could not be compared on (no unique expert mode),
and how many items MAE and Spearman are over (``n_scored``; ``n_spearman`` where the correlations have a reference
of their own): failures are counted, never scored.
``eval.scoring.score.score`` computes the metrics and calls these.
"""

from __future__ import annotations

import html
import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval.scoring.error_codes import cut_codes_note
# BIDI_CONTROLS re-exported: the HTML pages drop the same ones
from eval.reports.names import BIDI_CONTROLS, one_line, shown_name, shown_names
from eval.reports.notes import run_notes  # re-exported: eval.cli and report.html import it from here
from eval.scoring import item_table
from eval.scoring.metrics import RANDOM_LABELLING_VC
from eval.scoring.pollux_official import TITLE as OFFICIAL_TITLE, official_not_computed
from eval.validity.render import lead_lines
from eval.validity.render import markdown_lines as validity_markdown
from judge.metrics_json.metrics import (Cell, Metrics, ModelMeans, ModelMeansRow, Notes, PolluxOfficial,
                                        SplitMetrics)
from judge.splits import SPLIT_TITLES  # one definition in the contract; re-exported here for eval's own modules

__all__ = ["BIDI_CONTROLS", "render_markdown", "markdown_table", "md_code", "md_text", "log_wandb", "SPLIT_TITLES",
           "fmt", "fmt_ci", "fmt_delta", "fmt_share", "ci_percent", "constant_judge_score", "run_notes", "summary_why",
           "why_no_spearman", "why_sentences", "bootstrap_unit_phrase", "model_means_cells", "pollux_official_cells",
           "OFFICIAL_SHOWN"]

log = logging.getLogger("judge_eval.report")

GROUP_TITLES = {"model": "evaluated model", "task_type": "task type", "criterion": "criterion"}


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell; "—" for a missing or undefined value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def fmt_delta(value: Any, digits: int = 3) -> str:
    """A difference (run − baseline) with its sign, "+0.100" or "-0.079": its sign is the finding, and a positive
    one written bare read as unsigned beside negative ones. One that rounds to zero is "0.000", never "-0.000" (the
    sign of a rounded-away difference, float noise on identical scores, says nothing); "—" where undefined."""
    if value is None or not math.isfinite(value):
        return "—"
    shown = f"{value:+.{digits}f}"
    return shown[1:] if not shown.strip("+-0.") else shown


def fmt_share(count: int, n: int) -> str:
    """``count`` of ``n`` as a percentage with one decimal; a share that would round to 0.0 % or 100.0 % without
    being either reads "<0.1 %" or ">99.9 %" (1 failure in 20,000 items is not none); "—" when n is 0."""
    if not n:
        return "— %"
    shown = f"{100 * count / n:.1f}"
    if shown == "0.0" and count:
        return "<0.1 %"
    if shown == "100.0" and count < n:
        return ">99.9 %"
    return f"{shown} %"


def ci_percent(level: float | None) -> str:
    """An interval's coverage as the reports write it: 0.95 -> "95", 0.975 -> "97.5" (None: the default, 95)."""
    return f"{100 * (0.95 if level is None else level):g}"


def bootstrap_unit_phrase(unit: str | None) -> str:
    """What a resample drew (``settings.bootstrap_unit``; None in a metrics.json written before the setting: items)."""
    if unit == "instruction":
        return "whole instructions (every answer and criterion of one together)"
    return "items, each on its own (the items of one instruction are not independent: `--bootstrap-unit instruction`)"


def fmt_p(p_value: Any, n_resamples: int, digits: int = 3) -> str:
    """A two-sided bootstrap p-value (twice the smaller share of resamples on either side of 0). Its smallest
    non-zero value is 2 / n_resamples, so an estimate of 0 says only that the true p is below that: it reads
    ``< 0.002`` for 1,000 resamples, never ``0.000``."""
    if isinstance(p_value, float) and p_value == 0.0 and n_resamples > 0:
        return f"< {2 / n_resamples:.{digits}g}"
    return fmt(p_value, digits)


def p_phrase(p_value: Any, n_resamples: int) -> str:
    """``p = 0.031`` or ``p < 0.002`` (see ``fmt_p``)."""
    shown = fmt_p(p_value, n_resamples)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


def fmt_ci(value: Any, ci: Any, digits: int = 3) -> str:
    """``0.512 [0.490, 0.534]``, or just the value when the interval is undefined."""
    if ci is None or any(v is None or (isinstance(v, float) and not math.isfinite(v)) for v in ci):
        return fmt(value, digits)
    return f"{fmt(value, digits)} [{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"


# What starts raw HTML or an autolink in Markdown: "<" before a letter, "/", "!" or "?" ("<0.1 %" and "p < 0.01" stay).
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
# Markdown that a name could start a line-level construct with (a heading, a list, a quote, a rule, a setext line).
_LEADING_MARK = re.compile(r"^([#+\-=]|\d+(?=[.)]))")


def md_text(text: Any) -> str:
    """Text that report.md did not write itself (a criterion, evaluated model or task name from the data, the judge's
    ``--name``, an error code from a predictions file) as inert Markdown: one line (``one_line``), HTML's special
    characters as entities (no tag, no autolink, no entity of its own), ``|`` as ``&#124;`` (no table cell of its own),
    backslashes, backticks, ``*``, ``~``, a ``_`` that could start or end emphasis and a link's ``](`` escaped, and a
    leading ``#``, ``-``, ``+``, ``=`` or list number escaped: rendered (mkdocs, GitHub), it reads as the text it is,
    never as a heading, a table row, a link or live HTML."""
    text = html.escape(one_line(text).strip(), quote=False).replace("|", "&#124;")
    text = re.sub(r"([\\`*~])", r"\\\1", text)
    text = re.sub(r"(?<!\w)_|_(?!\w)", r"\\_", text).replace("](", "\\](")
    return _LEADING_MARK.sub(r"\\\1", text) if not text[:1].isdigit() else _LEADING_MARK.sub(r"\1\\", text)


def md_code(text: Any) -> str:
    """A code-like value (an error code) in backticks when it is one plain word, else as ``md_text``: a code span
    shows its characters as they are, so it cannot hold an escaped one. The pairwise section's failure codes read
    through it too (``eval.pairwise.metrics.pairwise_markdown``)."""
    text = str(text)
    return f"`{text}`" if re.fullmatch(r"[\w.:/-]+", text) else md_text(text)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table: every cell on one line (``one_line``), its pipes escaped and a ``<`` that
    would start an HTML tag written as ``&lt;``. Cells may hold the report's own Markdown (``**Overall**``); text
    from the data is ``md_text`` before it is a cell."""

    def esc(cell: str) -> str:
        return _TAG_START.sub("&lt;", one_line(cell).replace("|", "\\|"))

    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _header(label: str, correlations: bool, summary: bool = False, apart: bool = False) -> list[str]:
    """A table's columns: the headline first (the paper's figures: n, failed, MAE, Spearman, VC judge / experts,
    with the items MAE and Spearman are over), then the bookkeeping (exclusions, in-scale figures, the other
    correlations, counts). ``apart``: the correlations have a reference of their own (``n_spearman``)."""
    head = [label, "n", "failed", "scored", "MAE"]
    head += (["n in Spearman"] if correlations and apart else []) + (["Spearman"] if correlations else [])
    head += ["VC judge", "VC experts"]
    head += ["VC experts (all labelled)"] if summary else []
    head += ["no unique mode", "out of scale", "MAE in scale"]
    head += ["Spearman in scale", "Pearson", "Kendall"] if correlations else []
    return head + ["n VC"] + (["VC experts (all predicted)"] if summary else [])


def _row(label: str, c: Cell, correlations: bool, summary: bool = False, apart: bool = False) -> list[str]:
    """A table row in ``_header``'s order."""
    # The paper shows "—" where no item has two annotators (Tables 15-16); n_vc says how many items the VC covers.
    vc_shown = c.n_vc is None or c.n_vc > 0  # files written before n_vc existed show the VC as it is
    # n_scored is counted, never worked out from the other columns: an item every expert abstained on is neither a
    # failure nor a mode tie, and with --spearman-target the correlations cover other items than MAE.
    row = [label, str(c.n), f"{c.n_failed} ({fmt_share(c.n_failed, c.n)})", fmt(c.n_scored), fmt_ci(c.mae, c.mae_ci)]
    row += [fmt(c.n_spearman)] if correlations and apart else []
    row += [fmt_ci(c.spearman, c.spearman_ci)] if correlations else []
    row += [fmt(c.vc_judge) if vc_shown else "—", fmt(c.vc_experts) if vc_shown else "—"]
    row += [fmt(c.vc_experts_labelled)] if summary else []
    row += [str(c.n_no_unique_mode), fmt(c.n_out_of_scale), _in_scale(c, c.mae_in_scale)]
    row += [_in_scale(c, c.spearman_in_scale), fmt(c.pearson), fmt(c.kendall)] if correlations else []
    return row + [fmt(c.n_vc)] + ([fmt(c.vc_experts_all)] if summary else [])


def _in_scale(c: Cell, value: float | None) -> str:
    """The in-scale-only figure; "=" when no verdict was out of scale (it equals the headline), "—" where the file
    does not carry the count (written before it existed): whether it equals the headline is not known."""
    if c.n_out_of_scale is None:
        return "—"
    return fmt(value) if c.n_out_of_scale else "="


def constant_judge_score(block: SplitMetrics, target: str) -> float | None:
    """The one score a judge gave every scored item of a test, when the test's confusion table shows it; else None.

    ``metrics.json`` keeps no flag for it, so it is read from what the file has: the test's judge x experts' mode
    table (rows: the judge's scores rounded to the scale's levels). It speaks for the correlated pairs only when they
    are its items: Spearman against the mode (``target``), on MAE's own items (no ``n_spearman``), as many pairs as
    the cell scored. With one row and several expert columns, and Spearman undefined, the judge's side is the
    constant one (``eval.scoring.metrics.spearman`` is undefined only when a side is constant; the experts' mode
    varies here), so the row is its score (rounded half up, as the table rounds it: a discrete judge's own score);
    every cell of the test then holds a subset of those items. A judge score off the scale is counted in a row that
    gathers every such score (``Confusion.below_scale`` / ``above_scale``): when that row is the one, the constant
    score lies off the scale on its side, ``math.inf`` above it and ``-math.inf`` below it.
    """
    c = block.overall
    if block.confusion is None or target != "mode" or c.n_spearman is not None or not c.has_correlations:
        return None
    if c.spearman is not None and math.isfinite(c.spearman):
        return None
    confusion = block.confusion.all
    matrix, levels = confusion.matrix or [], confusion.levels or []
    # the judge's constant score as the matrix's one row: a level, or an off-scale row (below -inf, above inf)
    sides = [(-math.inf, confusion.below_scale or []), *zip(levels, matrix), (math.inf, confusion.above_scale or [])]
    rows = [(level, row) for level, row in sides if any(row)]
    if c.n_scored and confusion.n_counted() == c.n_scored and len(rows) == 1 and sum(map(bool, rows[0][1])) > 1:
        return float(rows[0][0])
    return None


def why_no_spearman(c: Cell, judge_score: float | None = None) -> str:
    """Why a cell that pools the correlations shows Spearman as "—" though it has scored items; "" otherwise.

    Args:
        c: the cell.
        judge_score: ``constant_judge_score`` of the cell's test (None: not known), to say which side is constant:
            the matrix's level the judge's scores all count at (a regression head's 2.6 on 0-2 at 2, so the sentence
            names a level, not the score); ``math.inf`` / ``-math.inf``: one score in the "above scale" / "below
            scale" row (named by its row: "above scale" also holds a score on no level of a too-wide criterion).
    """
    if not c.has_correlations or (c.spearman is not None and math.isfinite(c.spearman)) or c.why_empty_text:
        return ""
    pairs = c.n_spearman if c.n_spearman is not None else c.n_scored
    if pairs is None:  # a file written before n_scored existed: the reason without its count
        return "a rank correlation needs two or more scored items whose judge scores and reference both vary"
    if pairs == 0:
        return "no scored item has a defined reference to correlate with: a rank correlation needs two or more"
    if pairs == 1:
        return "one scored item: a rank correlation needs two or more"
    if judge_score is not None and math.isinf(judge_score):
        side = "above" if judge_score > 0 else "below"
        return (f"the judge gave all {pairs} scored items the same score, counted in the confusion matrix's \"{side} "
                "scale\" row, and a rank correlation needs the judge's scores to vary")
    if judge_score is not None:
        shown = fmt(int(judge_score)) if float(judge_score).is_integer() else fmt(judge_score, 1)
        return (f"the judge gave all {pairs} scored items the same level ({shown}) of the confusion matrix, and a rank "
                "correlation needs the judge's scores to vary")
    return (f"the judge's scores or the experts' reference take one value over all {pairs} scored items, and a rank "
            "correlation needs both to vary")


def why_sentences(cells: Mapping[str, Cell], judge_score: float | None = None) -> list[tuple[str, str]]:
    """``(label, sentence)`` for every cell with a "—" that its counts do not explain: why it has no scored item,
    no VC, or no Spearman (``why_no_spearman``); report.md and report.html both list them.

    Args:
        cells: the cells by label.
        judge_score: ``constant_judge_score`` of their test.
    """
    out = []
    for label, c in cells.items():
        if c.why_empty_text:
            out.append((label, c.why_empty_text))
            continue
        if c.why_no_vc:
            out.append((label, f"VC —: {c.why_no_vc}"))
        spearman = why_no_spearman(c, judge_score)
        if spearman:
            out.append((label, f"Spearman —: {spearman}"))
    return out


def summary_why(result: Metrics) -> list[tuple[str, str]]:
    """``why_sentences`` of the summary table: each test's overall cell (the one score a judge gave is read per
    test)."""
    return [found for split in item_table.SPLITS if split in result.splits
            for found in why_sentences({SPLIT_TITLES[split]: result.splits[split].overall},
                                       constant_judge_score(result.splits[split], result.target))]


def _why_lines(found: list[tuple[str, str]]) -> list[str]:
    """``why_sentences`` as a Markdown list (and its blank line)."""
    lines = [f"- **{md_text(label)}**: {one_line(sentence)}." for label, sentence in found]
    return lines + [""] if lines else []


def _apart(cells: list[Cell]) -> bool:
    """Whether any of these cells' correlations cover their own pairs (``--spearman-target`` apart from MAE's)."""
    return any(c.n_spearman is not None for c in cells)


def model_means_cells(means: ModelMeans, judge_name: str, text=md_text,
                      pooled: str = "**Avg.** (items pooled)") -> tuple[str, list[str], list[list[str]]]:
    """The paper's Table 10 (model, experts' mean score, the judge's with its MAE) for report.md and report.html: its
    note, header and rows. The names are cut as every table cuts them (``shown_names``, the judge's before the header
    adds " (MAE)"); ``text`` then writes one for the page (report.html escapes every cell itself); ``pooled`` labels
    the pooled row."""
    def row(label: str, m: ModelMeansRow) -> list[str]:
        judged = f"{fmt(m.judge_mean)} ({fmt(m.mae)})"
        return [label, str(m.n_items), fmt(m.experts_mean), str(m.n_judged), judged, str(m.n_scored),
                fmt(m.experts_mean_on_judged), str(m.n_out_of_scale)]

    note = ("Experts: the mean over the model's labelled items of each item's mean expert score (the paper's "
            "aggregate, an unweighted average of the point estimates); the judge: the mean of its scores on those "
            "items, out-of-scale ones included; MAE in brackets, over the `scored` items (those with a defined "
            "reference).")
    models = shown_names(means.by_model)
    rows = [row(text(models[str(label)]), m) for label, m in means.by_model.items()] + [row(pooled, means.all)]
    header = ["Evaluated model", "n", "Experts", "n judged", f"{text(shown_name(judge_name or 'Judge'))} (MAE)",
              "scored", "Experts on judged items", "out of scale"]
    return note, header, rows


#: The fields of POLLUX's evaluator its table shows as they are (report.html shows the rest beside it).
OFFICIAL_SHOWN = ("n", "n_parsed", "format_acc", "score_acc", "mse", "n_no_prediction", "n_request_failed",
                  "n_no_reference")


def pollux_official_cells(official: PolluxOfficial) -> tuple[str, list[str], list[list[str]]]:
    """POLLUX's repository figures for report.md and report.html: the note that labels them, the header, the rows."""
    note = ("What the POLLUX repository's judge evaluator reports, reproduced for comparison with its published "
            f"figures. Score extraction: {official.extraction}. Reference: {official.reference}. "
            "`format_acc`: share of outputs with a score (a failed request is an empty output, as POLLUX's client "
            "makes it); `score_acc`: exact match with the reference (an output without a score is wrong); `mse` over "
            "outputs with a score. The paper's metrics above are the headline.")
    header = ["Test", "outputs", "with a score", "format_acc", "score_acc", "mse", "no prediction",
              "request failed", "no reference"]
    rows = [[SPLIT_TITLES.get(split, split), str(b.n), str(b.n_parsed), fmt(b.format_acc),
             fmt(b.score_acc), fmt(b.mse), str(b.n_no_prediction), str(b.n_request_failed),
             str(b.n_no_reference)] for split, b in official.splits.items()]
    return note, header, rows


_REFERENCES = {"mode": "the mode of the expert scores (items without a unique mode excluded)",
               "mean": "the mean of the expert scores"}


def references_note(result: Metrics) -> str:
    """What MAE and Spearman compare the judge with, and that Spearman's reference is a choice."""
    target = result.target
    spearman = result.settings.spearman_target or target
    # the mean is a regression judge's reference, but a verdict judge can be scored against it too (--target mean)
    regression = bool((result.notes or Notes()).n_regression_scores)
    why_mean = " (a regression judge)" if regression else " (`--target mean`)"
    mae = f"MAE against {_REFERENCES[target]}" + (why_mean if target == "mean" else "")
    return (f"{mae}; Spearman, Pearson and Kendall against {_REFERENCES[spearman]} (`--spearman-target`: the "
            "paper correlates with \"expert ratings\" without naming an aggregate; its item aggregate is the "
            "unweighted mean of the experts' estimates, arXiv 2505.24616v3, Section 2.3).")


def random_labelling_note() -> str:
    """The paper's random-labelling Verdict Confidence, to read the VC columns against."""
    return (f"VC under random labelling: {fmt(RANDOM_LABELLING_VC)} (17/27: three annotators picking among three "
            "labels at random, arXiv 2505.24616v3, Appendix D.2.2; below 0.60 it reads "
            "as \"comparable to random labeling\"; the paper's case only: a panel of another size or scale has "
            "another random level, two annotators on two labels 0.75). `VC experts` covers the items with a parsed verdict of the judge; "
            "`VC experts (all predicted)` every item with a prediction, parsed or failed; "
            "`VC experts (all labelled)` every labelled item with two or more annotators, whatever the judge did (the "
            "paper's Experts VC, judge-independent).")


def regression_note(result: Metrics) -> str:
    """How a regression (``-r``) judge's head values were scored and how many fell outside their scale; "" for a
    run without them."""
    notes = result.notes or Notes()
    n = notes.n_regression_scores or 0
    without_raw = notes.n_regression_without_raw or 0
    older = (f" {without_raw} head scores came without their raw value (predictions written before it was kept): "
             "each is judge-serve's clipped score, whatever the setting, and not counted above." if without_raw else "")
    if not n:
        return older.strip()
    outside = notes.n_regression_out_of_scale or 0
    if result.settings.regression_scores == "clipped":
        how = ("the head's value clipped into the scale (`--clip-regression`, this toolkit's choice: the paper "
               "scores the raw value)")
    else:
        how = ("the head's raw value, as the paper scores it (judge-serve's `score` clips it into the scale; "
               "`--clip-regression` scores that instead)")
    return (f"Regression head: {n} scores, each {how}. {outside} of the {n} raw values fell outside their scale "
            f"(counted in `out of scale`).{older}")


def _regression_lines(result: Metrics) -> list[str]:
    note = regression_note(result)
    return [note, ""] if note else []


def render_markdown(result: Metrics) -> str:
    """The report's Markdown: a summary per split, then tables by evaluated model, task type and criterion.

    Args:
        result: ``metrics.json`` (``judge.metrics_json.metrics.Metrics``).
    """
    s = result.settings
    out = [
        f"# Judge report: {md_text(shown_name(result.judge or '(unnamed judge)'))}",
        "",
        *lead_lines(result),
        f"{references_note(result)} Spearman is pooled per evaluated model and per task type. "
        f"Verdict Confidence (VC): the largest share of one score among an item's annotators; the judge's value "
        f"replaces one random expert with the judge ({s.vc_repeats} draws, seed {s.seed}), over every item with a "
        "parsed verdict (VC needs no reference: a mode tie counts, so `n VC` can exceed `scored`), only where an "
        "item has two or more annotators (`n VC`; \u2014 otherwise, as in the paper). "
        + (f"Intervals: {ci_percent(s.ci_level)} % percentile bootstrap, {s.n_boot} resamples of "
           f"{bootstrap_unit_phrase(s.bootstrap_unit)}. " if s.n_boot else
           "No intervals: no bootstrap resample was drawn (`--n-boot 0`). ")
        + "A verdict that failed to parse counts in `failed` and is never scored. `scored`: the items MAE "
        + ("is over, and `n in Spearman` those the correlations are over (their own reference); "
           if _apart([block.overall for block in result.splits.values()]) else "and Spearman are over; ")
        + "each has a judge score and a defined reference. They are counted, and n − `failed` − `no unique mode` "
        "can differ from them: an item every expert abstained on has no reference, and against the experts' mean a "
        "mode tie has one. "
        "A number outside the rubric's scale "
        "is the judge's answer and is scored, as the paper does (its Table 11); `out of scale` counts every parsed "
        "verdict outside its scale, those on an item without a reference (a mode tie) too, so `scored` − `out of "
        "scale` can be fewer than the items the `in scale` columns are over; those columns give the figures without "
        "the scored verdicts outside their scale (\"=\" when no verdict was outside its scale).",
        "",
    ]
    out += _regression_lines(result)
    out += [
        "## Summary",
        "",
    ]
    splits = result.splits
    apart = _apart([block.overall for block in splits.values()])
    header = _header("Test", True, summary=True, apart=apart)
    rows = [_row(SPLIT_TITLES[split], splits[split].overall, True, summary=True, apart=apart)
            for split in item_table.SPLITS if split in splits]
    out += [markdown_table(header, rows), ""]
    # What the table alone would hide (an unfinished run) right under it, as report.html does: not after the
    # validity section, where a reader who stops at the summary never sees it.
    for note in run_notes(result):
        out += [note, ""]
    out += [random_labelling_note(), ""]
    out += _why_lines(summary_why(result))
    out += validity_markdown(result, markdown_table, md_text)
    for split in item_table.SPLITS:
        block = splits.get(split)
        if not block:
            continue
        out += [f"## {SPLIT_TITLES[split]}", ""]
        if block.failures:
            out += ["Failures by reason: " + ", ".join(f"{md_code(k)} {v}" for k, v in block.failures.items())
                    + cut_codes_note(block.failures), ""]
        if block.model_means is not None and block.model_means.by_model:
            note, header, rows = model_means_cells(block.model_means, result.judge)
            out += [f"### {SPLIT_TITLES[split]}: mean score per evaluated model (the paper's Table 10)", "",
                    note, "", markdown_table(header, rows), ""]
        for name, title in GROUP_TITLES.items():
            cells = block.by(name)
            if not cells:
                continue
            correlated = name in ("model", "task_type")
            apart = _apart([*cells.values(), block.overall])
            head = _header(title.capitalize(), correlated, apart=apart)
            shown = shown_names(cells)  # cut, and two names that read alike once written still told apart
            rows = [_row(md_text(shown[str(label)]), c, correlated, apart=apart) for label, c in cells.items()]
            rows.append(_row("**Overall**", block.overall, correlated, apart=apart))
            out += [f"### {SPLIT_TITLES[split]}: by {title}", "", markdown_table(head, rows), ""]
            out += _why_lines(why_sentences({shown[str(label)]: c for label, c in cells.items()},
                                            constant_judge_score(block, result.target)))
    if result.pollux_official is not None:
        note, header, rows = pollux_official_cells(result.pollux_official)
        out += [f"## {result.pollux_official.title}", "", note, "", markdown_table(header, rows), ""]
    elif why := official_not_computed(result):  # an integer judge's run, a regression head's: said, not silent
        out += [f"## {OFFICIAL_TITLE}", "", why, ""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------ W&B


def log_wandb(result: Metrics, markdown: str, images: list[Path], project: str, out: Path) -> None:
    """Log the summary numbers, every table and the plots to W&B (offline with ``WANDB_MODE=offline``)."""
    import os

    import wandb

    # WANDB_DIR, when set, says where runs go; else beside the report.
    run = wandb.init(project=project, name=result.judge or None, dir=os.environ.get("WANDB_DIR") or str(out),
                     config=result.settings.to_json(), job_type="judge-eval")
    try:
        summary = {}
        for split, block in result.splits.items():
            o = block.overall
            for key, value in (("mae", o.mae), ("spearman", o.spearman), ("pearson", o.pearson),
                               ("kendall", o.kendall), ("vc_judge", o.vc_judge), ("vc_experts", o.vc_experts),
                               ("failure_rate", o.failure_rate), ("n", o.n), ("n_out_of_scale", o.n_out_of_scale),
                               ("mae_in_scale", o.mae_in_scale), ("n_vc", o.n_vc)):
                summary[f"{split}/{key}"] = value
            for name in GROUP_TITLES:
                columns = ["label", "n", "n_failed", "n_no_unique_mode", "mae", "mae_low", "mae_high",
                           "spearman", "vc_judge", "vc_experts"]
                rows = [[label, c.n, c.n_failed, c.n_no_unique_mode, c.mae, c.mae_ci[0], c.mae_ci[1], c.spearman,
                         c.vc_judge, c.vc_experts]
                        for label, c in block.by(name).items()]
                run.log({f"{split}/by_{name}": wandb.Table(columns=columns, data=rows)})
        run.summary.update({k: v for k, v in summary.items() if v is not None})
        run.log({f"plots/{p.stem}": wandb.Image(str(p)) for p in images})
        # Escaped: criterion, task and model names are the data's, and W&B renders this as a page.
        run.log({"report": wandb.Html(f"<pre>{html.escape(markdown)}</pre>")})
    finally:
        run.finish()

"""The browsable pages: ``report.html`` (``judge-eval score``) and ``compare.html`` (``judge-eval compare``).

    judge-eval score --predictions runs/judge-a            # writes runs/judge-a/report.html beside report.md
    judge-eval compare runs/judge-a runs/judge-b --out runs/cmp   # writes runs/cmp/compare.html

Each page is ONE self-contained file that works when opened from disk: CSS and JavaScript are inlined from
``eval/reports/html/``, plots are inline SVG or coloured HTML tables, and the item data is embedded as JSON in a
``<script type="application/json">`` element that the page parses once and renders 50 rows at a time (a
160,000-item run stays usable; ``bench/report_page.py`` measures it).

The tables are built generically from ``metrics.json``: every key a metric cell carries becomes a column
(``x_ci`` is shown as the interval of ``x``), so metrics added later appear without touching this module.
The item explorer's data (per-item rows, texts, feedback) is built by ``eval.reports.html_explorer``; this module renders
the pages around it, their text and numbers written by ``eval.reports.html_text``.

Why one module of ~620 lines: report.html and compare.html share one page frame, one table writer and one way of
showing names from the data (cut, told apart); their text (``html_text``) and item data (``html_explorer``) are
already their own modules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from eval.reports.html_explorer import (DEFAULT_TEXT_ITEMS, compare_items, explorer_json, read_item_columns,
                                        report_items)
from eval.reports.labels import KEY_LABELS
from eval.reports.names import shown_name, shown_names
from eval.scoring.error_codes import cut_codes_note
from eval.reports.html_text import escape as _e, finite as _finite, md_html as _md_text, number as _num
from eval.reports.notes import runs_notes
from eval.reports.run_files import load_predictions, load_records, missing_note
from eval.reports.report import (BIDI_CONTROLS, OFFICIAL_SHOWN, SPLIT_TITLES, ci_percent, fmt_delta,
                                 constant_judge_score, fmt_share, model_means_cells, p_phrase, pollux_official_cells,
                                 random_labelling_note, references_note, regression_note, run_notes, summary_why,
                                 why_sentences)
from eval.scoring.compare import (MIN_PAIRED, NOT_SHOWN_EQUAL, PAIRED_WITHOUT_RESAMPLES, comparison_headline,
                                  decision, fmt_p_bound, holm_applied, holm_upper_bounds)
from eval.scoring.comparison import Comparison, Paired
from eval.scoring.pollux_official import TITLE as OFFICIAL_TITLE, official_not_computed
from eval.scoring.resample_rules import paired_resamples_to_call
from eval.validity.render import compare_html as compare_validity
from eval.validity.render import html_blocks as validity_blocks
from eval.validity.render import html_table, lead_html
from judge.metrics_json.metrics import Cell, Confusion, Metrics
from judge.plumbing.atomic_write import write_atomically
from judge.scales import MAX_LEVELS

__all__ = ["ABOVE_SCALE_ROW_NOTE", "write_report_page", "write_compare_page", "render_report_page",
           "render_compare_page"]

#: Under a test's confusion panels that draw the "above scale" row: what it counts. Past an item's highest level,
#: but also, on a range too wide for the axes to hold its levels, a score inside that range on no axis level
#: (``eval.scoring.item_table.off_scale_sides``), which the heading alone would say lies above its scale.
ABOVE_SCALE_ROW_NOTE = ("\"above scale\" counts each judge score past its item's highest level and, where the item's "
                        f"range spans more than a rubric's {MAX_LEVELS} levels (a criterion too wide to rate, which "
                        "the validity section leaves out), each score inside that range on no level of the axes.")

#: The headline of a metric table, in this order: the paper's figures (n, failures, MAE, Spearman, VC judge /
#: experts, and the judge-independent Experts VC) with the items MAE and Spearman are over (report.md's columns).
#: Every other key is bookkeeping, shown by the page's toggle.
HEADLINE_KEYS = ("n", "n_failed", "n_scored", "mae", "n_spearman", "spearman", "vc_judge", "vc_experts",
                 "vc_experts_labelled")
# Bookkeeping keys shown first (after the headline), in this order; any other key follows in alphabetical order.
_KEY_ORDER = HEADLINE_KEYS + ("n_no_unique_mode", "n_out_of_scale",
                              "n_out_of_scale_minus_one", "mae_in_scale", "spearman_in_scale", "pearson",
                              "kendall", "vc_experts_all", "n_vc", "n_vc_experts_all", "n_vc_experts_labelled",
                              "failure_rate", "n_missing", "n_parse_failed", "n_request_failed")
# What each known key means, in one line: its heading's tooltip, with the key metrics.json holds it under (the
# paper's metrics: arXiv 2505.24616v3, Appendix D.2; docs/evaluation.md, "Metrics").
_KEY_MEANINGS = {
    "n": "items with a prediction",
    "n_missing": "items without a prediction: not judged yet, left out by the run's --limit or --split, or judged "
                 "before the record's text changed (a stale prediction, left out)",
    "n_failed": "verdicts not scored: parse and request failures among the n",
    "n_parse_failed": "answered without a verdict: its text read none (unparsed, cut), or its prompt was too long "
                      "for the judge's context (context_length_exceeded); in predictions written elsewhere, also a "
                      "generation judge-serve's engine aborted (aborted) or a judgment it refused (engine_refused), "
                      "which judge-eval run never writes (it writes request_failed for them)",
    "n_request_failed": "requests the judge did not answer",
    "failure_rate": "failed / n",
    "n_no_unique_mode": "items among the n whose experts tie: no mode to score against",
    "n_scored": "items in MAE and the correlations: scored by the judge, with a reference",
    "mae": "mean absolute error of the judge's score against the experts' mode (their mean for a regression judge or "
           "under --target mean), with its bootstrap interval",
    "mae_in_scale": "MAE without the verdicts outside their scale",
    "n_out_of_scale": "parsed verdicts outside their scale: scored, as the paper scores them, where the item has a "
                      "reference (counted here also on an item without one, a mode tie)",
    "n_out_of_scale_minus_one": "of the verdicts outside their scale, those of -1: the release's code for an "
                                "expert's abstention (\"not applicable\"), scored as out of scale",
    "n_scored_in_scale": "scored items whose verdict is inside its scale",
    "spearman": "Spearman's rank correlation of the judge's scores with the experts' reference, pooled, with its "
                "bootstrap interval",
    "spearman_in_scale": "Spearman without the verdicts outside their scale",
    "spearman_n_resamples": "the resamples Spearman's interval is taken over (those with a defined Spearman)",
    "pearson": "Pearson's correlation of the judge's scores with the experts' reference",
    "kendall": "Kendall's tau of the judge's scores with the experts' reference",
    "n_spearman": "the pairs the correlations cover, their reference chosen apart (--spearman-target)",
    "n_vc": "scored items with two or more annotators: those Verdict Confidence is over",
    "vc_judge": "Verdict Confidence with the judge in place of one expert: the largest share of one score among "
                "the annotators, averaged over items",
    "vc_experts": "the experts' own Verdict Confidence on the same items",
    "vc_experts_all": "the experts' Verdict Confidence over every predicted item with two or more annotators",
    "n_vc_experts_all": "the items VC experts (all predicted) is over",
    "vc_experts_labelled": "the experts' Verdict Confidence over every labelled item, predicted or not (the paper's "
                           "Experts VC)",
    "n_vc_experts_labelled": "the items VC experts (all labelled) is over",
    "n_abstained": "expert abstentions (-1) over the items",
    "n_all_abstained": "items every expert abstained on",
    "n_unlabelled": "items with no expert score at all: in no figure",
}


def _heading_title(key: str) -> str:
    """A column heading's tooltip: what the key means and the key itself, as metrics.json and compare.json hold it."""
    meaning = _KEY_MEANINGS.get(key)
    return f"{meaning} (metrics.json: {key})" if meaning else key


#: The switch that shows a table's bookkeeping columns (hidden at first: the tables fit a 1280-pixel screen).
_BOOKKEEPING_TOGGLE = ('<label class="toggle"><input type="checkbox" id="show-bookkeeping"> show bookkeeping columns '
                       "(exclusions, in-scale figures, Pearson, Kendall, counts)</label>")

_GROUP_TITLES = {"model": "evaluated model", "task_type": "task type", "criterion": "criterion"}
# The parts of a split the page renders as tables and plots, and Table 10's means where the split has models; any
# other is shown as JSON, so that nothing written is hidden.
_SPLIT_RENDERED = {"overall", "failures", "confusion", "by_model", "by_task_type", "by_criterion"}


# ------------------------------------------------------------------------------------------------ pieces


def _asset(name: str) -> str:
    return resources.files("eval.reports").joinpath("html", name).read_text(encoding="utf-8")


def _page(title: str, subtitle: list[str], nav: list[tuple[str, str]], body: list[str], data: Any | None) -> str:
    """The whole HTML document; ``data`` (the explorer's) is embedded as JSON, every ``<`` escaped for the parser."""
    # The page speaks English; the texts it shows of the data (mostly Russian) say so themselves (page.js).
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{_e(title)}</title>",
             f"<style>{_asset('page.css')}</style></head><body>", f"<header><h1>{_e(title)}</h1>"]
    parts += [f"<p>{line}</p>" for line in subtitle]
    parts += ["</header><nav>" + "".join(f'<a href="#{_e(a)}">{_e(t)}</a>' for a, t in nav) + _BOOKKEEPING_TOGGLE
              + "</nav><main>"]
    parts += body
    parts.append("</main>")
    if data is not None:
        # Two elements: the rows are parsed at load, the texts only when an item is first opened.
        rows = {k: v for k, v in data.items() if k not in ("details", "strings")}
        texts = {"details": data.get("details", []), "strings": data.get("strings", [])}
        for css_id, part in (("explorer-data", rows), ("explorer-texts", texts)):
            # Every "<" escaped: "</" alone is not enough, as "<!--" then "<script" in a text would make the
            # parser skip the closing tag and swallow the rest of the page.
            # The page's JavaScript writes these strings into the page: without bidirectional controls, as ``_e``.
            # They can stand only inside a JSON string (no JSON syntax uses them), so removing them keeps it valid.
            payload = BIDI_CONTROLS.sub("", explorer_json(part)).replace("<", "\\u003c")
            parts.append(f'<script type="application/json" id="{css_id}">{payload}</script>')
    parts.append(f"<script>{_asset('page.js')}</script></body></html>")
    return "\n".join(parts)


def _no_script(where: str) -> str:
    """What the item list's section says where the browser runs no JavaScript (page.js draws the list): where the
    items are instead; the tables above are HTML and read without it."""
    return (f'<noscript><p class="warn">The item list is drawn by this page\'s JavaScript, which is off here: '
            f"{_e(where)}.</p></noscript>")


def _why_list(found: list[tuple[str, str]]) -> str:
    """report.md's sentences under a table (``why_sentences``) as a list; "" when every "—" explains itself."""
    if not found:
        return ""
    return ('<ul class="note why">' + "".join(f"<li><b>{_e(label)}</b>: {_md_text(sentence)}.</li>"
                                              for label, sentence in found) + "</ul>")


def _columns(cells: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every metric the cells carry (``x_ci`` folded into ``x``), known ones first."""
    keys: set[str] = set()
    for c in cells:
        keys.update(k for k in c if not (k.endswith("_ci") and k[:-3] in c))
    return [k for k in _KEY_ORDER if k in keys] + sorted(keys - set(_KEY_ORDER))


def _carried(cell: Cell | None) -> dict[str, Any] | None:
    """The metrics a cell carries, by field name (``Cell.items``: the optional ones it has)."""
    return None if cell is None else dict(cell.items())


def _cell_td(c: Mapping[str, Any] | None, key: str, attributes: str = "") -> str:
    if c is None or key not in c:
        return f'<td data-v=""{attributes}>—</td>'
    value, ci = c.get(key), c.get(f"{key}_ci")
    if isinstance(value, (dict, list)):
        css = ' class="json book"' if attributes else ' class="json"'
        return f'<td{css}>{_e(json.dumps(value, ensure_ascii=False))}</td>'
    if isinstance(value, str) or isinstance(value, bool):
        return f"<td{attributes}>{_e(value)}</td>"
    shown = _num(value)
    if key == "failure_rate" and isinstance(c.get("n"), int) and isinstance(c.get("n_failed"), int):
        shown = fmt_share(c["n_failed"], c["n"])  # report.md's share: 1 failure in 20,000 is "<0.1 %", not 0
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_finite(v) for v in ci):
        shown += f' <span class="ci">[{_num(ci[0])}, {_num(ci[1])}]</span>'
    return f'<td data-v="{value if _finite(value) else ""}"{attributes}>{shown}</td>'


def _metric_table(label: str, typed: Mapping[str, Cell], overall_cell: Cell | None, css_id: str = "") -> str:
    """A sortable table: one row per label, one column per metric a cell carries, the overall row pinned last."""
    cells = {name: _carried(c) for name, c in typed.items()}
    overall = _carried(overall_cell)
    columns = _columns(list(cells.values()) + ([overall] if overall else []))
    book = ['' if k in HEADLINE_KEYS else ' class="book"' for k in columns]  # hidden until the toggle shows them
    head = f"<th>{_e(label)}</th>" + "".join(f'<th title="{_e(_heading_title(k))}" data-key="{_e(k)}"{b}>'
                                             f"{_e(KEY_LABELS.get(k, k))}</th>" for k, b in zip(columns, book))
    shown = shown_names(cells)  # cut, and still one row's name each
    rows = [f"<tr><td>{_e(shown[str(name)])}</td>" + "".join(_cell_td(c, k, b) for k, b in zip(columns, book))
            + "</tr>" for name, c in cells.items()]
    if overall:
        rows.append('<tr class="overall"><td>Overall</td>'
                    + "".join(_cell_td(overall, k, b) for k, b in zip(columns, book)) + "</tr>")
    id_attr = f' id="{_e(css_id)}"' if css_id else ""
    return (f'<div class="scroll"><table class="grid sortable"{id_attr}><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def _confusion_html(title: str, conf: Confusion) -> str:
    """A judge x expert-mode heat table (rows: judge, columns: experts), shaded by count; the judge's scores off the
    scale, where the run has any, in a "below scale" row above the levels' and an "above scale" row under them."""
    levels = conf.levels or []
    labels = [_num(v, 0) if float(v).is_integer() else _num(v, 1) for v in levels]
    rows = conf.drawn_rows(labels)
    peak = max((v for _, row in rows for v in row), default=0) or 1
    # in the metric tables' scroll box: a rubric of 11 levels (0..10) is wider than a 390-pixel phone
    out = [f'<div class="panel"><h4>{_e(title)}</h4><div class="scroll"><table class="confusion"><tr>'
           '<th>judge \\ experts</th>']
    out += [f"<th>{_e(v)}</th>" for v in labels] + ["</tr>"]
    for label, row in rows:
        out.append(f"<tr><th>{_e(label)}</th>")
        for v in row:
            share = v / peak
            colour = f"rgba(47,95,179,{0.08 + 0.85 * share:.2f})" if v else "#fff"
            text = "#fff" if share > 0.55 else "#1d2330"
            out.append(f'<td style="background:{colour};color:{text}">{int(v)}</td>')
        out.append("</tr>")
    out.append("</table></div></div>")
    return "".join(out)


#: Characters of a criterion's name the MAE plot's label column (390 px at 11 px sans-serif) holds.
_SVG_LABEL_CHARS = 55


def _mae_svg(cells: Mapping[str, Cell], target: str, intervals: bool = True) -> str:
    """MAE by criterion, worst on top, with its interval as a whisker (``intervals``: the run drew resamples);
    inline SVG."""
    rows = sorted(((k, c) for k, c in cells.items() if _finite(c.mae)), key=lambda kc: -kc[1].mae)
    if not rows:
        return '<p class="note">No criterion has a defined MAE.</p>'
    top = max(max([c.mae] + [v for v in c.mae_ci if _finite(v)]) for _, c in rows) or 1.0
    label_w, bar_w, row_h = 390, 420, 18
    height = 30 + row_h * len(rows)
    scale = bar_w / top
    width = label_w + bar_w + 70
    # Drawn in viewBox units, shown at most this size: page.css shrinks it to a narrower container, all of it alike.
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
           f'height="{height}" class="mae-plot" font-size="11" font-family="sans-serif">']
    shown = shown_names(k for k, _ in rows)
    # The label, cut to its column's width as the tables cut names (first and last characters, marked where two
    # still read alike); the tooltip holds the tables' cut.
    labels = shown_names((k for k, _ in rows), _SVG_LABEL_CHARS)
    for i, (name, c) in enumerate(rows):
        y = 8 + i * row_h
        short, name = labels[str(name)], shown[str(name)]
        out.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end"><title>{_e(name)}</title>{_e(short)}</text>')
        out.append(f'<rect x="{label_w}" y="{y + 2}" width="{c.mae * scale:.1f}" height="{row_h - 5}" fill="#4c72b0">'
                   f'<title>{_e(name)}: MAE {_num(c.mae)} (n scored {c.n_scored})</title></rect>')
        ci = c.mae_ci
        if len(ci) == 2 and all(_finite(v) for v in ci):
            x0, x1, ym = label_w + ci[0] * scale, label_w + ci[1] * scale, y + row_h / 2
            out.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{ym:.1f}" y2="{ym:.1f}" stroke="#222"/>')
        out.append(f'<text x="{label_w + c.mae * scale + 4:.1f}" y="{y + 12}" fill="#333">{_num(c.mae, 2)}</text>')
    axis_y = height - 14
    whisker = " and its bootstrap interval (line)" if intervals else ""
    out.append(f'<text x="{label_w}" y="{axis_y + 10}" fill="#555">MAE vs expert {_e(target)} '
               f"(bar){whisker}; axis 0 to {_num(top, 2)}</text>")
    out.append("</svg>")
    return "".join(out)


def _as_written(parts: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Parts of ``metrics.json`` as its JSON holds them (NaN as null)."""
    from eval.scoring.item_table import dumps

    return json.loads(dumps(dict(parts)))


def _other_keys(result: Metrics, known: set[str]) -> list[str]:
    """Parts of a result not rendered elsewhere: shown as JSON so that nothing written is hidden."""
    extra = _as_written((k, v) for k, v in result.items() if k not in known)
    if not extra:
        return []
    return ['<h2 id="other">Other figures</h2>',
            f'<pre class="json">{_e(json.dumps(extra, ensure_ascii=False, indent=1))}</pre>']


def _pollux_official(result: Metrics) -> list[str]:
    """POLLUX's evaluator as report.md shows it (its note and table, from the same cells), then the fields the table
    does not show as they are (the regression counts it sums, the per-test notes) as JSON: nothing written is hidden."""
    official = result.pollux_official
    if official is None:
        why = official_not_computed(result)  # an integer judge's run, a regression head's: said, as report.md says it
        return [f'<h2 id="pollux">{_e(OFFICIAL_TITLE)}</h2>', f'<p class="note">{_md_text(why)}</p>'] if why else []
    note, header, rows = pollux_official_cells(official)
    rest = {split: {k: v for k, v in b.items() if k not in OFFICIAL_SHOWN} for split, b in official.splits.items()}
    return [f'<h2 id="pollux">{_e(official.title)}</h2>', f'<p class="note">{_md_text(note)}</p>',
            html_table(header, rows, _e, "pollux-official"),
            f'<details class="block"><summary>Other figures of POLLUX\'s evaluator</summary><pre class="json">'
            f'{_e(json.dumps(_as_written(rest.items()), ensure_ascii=False, indent=1))}</pre></details>']


# ----------------------------------------------------------------------------------------------- report


def render_report_page(result: Metrics, explorer: Mapping[str, Any] | None) -> str:
    """``report.html`` for one scored run.

    Args:
        result: ``metrics.json`` (``judge.metrics_json.metrics.Metrics``).
        explorer: ``report_items``'s output, or None for a page without the explorer.
    """
    judge_name = shown_name(result.judge or "(unnamed judge)")
    s = result.settings
    unit = "whole instructions" if s.bootstrap_unit == "instruction" else "items"
    # --n-boot 0 draws no resample: the page then claims no interval (its cells have none to show).
    intervals = (f"bootstrap {_e(s.n_boot)} resamples of {unit}, {_e(ci_percent(s.ci_level))} % percentile intervals"
                 if s.n_boot else "no bootstrap (--n-boot 0): no intervals")
    subtitle = [f"Target: expert <b>{_e(result.target)}</b> · {intervals} · VC draws {_e(s.vc_repeats)}, "
                f"seed {_e(s.seed)}",
                f"Data: <code>{_e(result.data or '')}</code> · predictions: <code>{_e(result.predictions or '')}</code>"]
    if result.run:
        subtitle.append(" · ".join(f"{_e(k)}: <code>{_e(v)}</code>" for k, v in result.run.items() if v))
    if regression_note(result):
        subtitle.append(_e(regression_note(result)).replace("`", ""))
    body = [lead_html(result), '<h2 id="summary">Summary</h2>']
    # What the tables alone would hide (an unfinished run first): at the top, where the page is first read.
    body += [f'<p class="warn">{_md_text(note)}</p>' for note in run_notes(result)]
    body += ['<p class="note">A verdict that failed (its request, or its reading) counts in <code>n_failed</code> '
             "and is never scored; <i>scored</i> counts the items MAE is over, and Spearman's pairs too (a run scored "
             "with <code>--spearman-target</code> gives the correlations' own in the bookkeeping column <i>n in "
             "Spearman</i>). Spearman, Pearson and Kendall are pooled per evaluated model and task type (the paper's "
             "Appendix D.2.4): the by-criterion tables show them as —. VC is Verdict Confidence (Appendix D.2.2): "
             "the share of an item's annotators giving its most common score, the judge standing in for one expert "
             "(VC judge) beside the experts' own. "
            "Click a column header to sort." + (" Intervals in grey." if s.n_boot else "")
            + " The headline columns come first; the bookkeeping "
            "ones (exclusions, in-scale figures, Pearson, Kendall, counts) appear with the switch at the top.</p>",
            f'<p class="note">{_md_text(references_note(result))}</p>']
    splits = result.splits
    overall = {SPLIT_TITLES.get(k, k): b.overall for k, b in splits.items()}
    body.append(_metric_table("Test", overall, None, "summary-table"))
    body.append(_why_list(summary_why(result)))
    body.append(f'<p class="note" id="random-vc">{_md_text(random_labelling_note())}</p>')
    validity = validity_blocks(result, _e)
    body += validity
    for split, block in splits.items():
        title = SPLIT_TITLES.get(split, split)
        body.append(f'<h2 id="tables-{_e(split)}">{_e(title)}</h2>')
        if block.failures:
            body.append('<p class="note">Failures by reason: ' + ", ".join(
                f"<code>{_e(k)}</code> {_e(v)}" for k, v in block.failures.items()) + _e(cut_codes_note(block.failures))
                + "</p>")
        means = block.model_means is not None and bool(block.model_means.by_model)
        if means:  # report.md's Table 10, from the same cells (the judge's name among them, escaped by the table)
            # the names cut as the other tables' are (there), before the header adds " (MAE)" to the judge's
            note, header, rows = model_means_cells(block.model_means, result.judge, str, "Avg. (items pooled)")
            body += [f"<h3>{_e(title)}: mean score per evaluated model (the paper's Table 10)</h3>",
                     f'<p class="note">{_md_text(note)}</p>', html_table(header, rows, _e, f"model-means-{split}")]
        for name, group_title in _GROUP_TITLES.items():
            cells = block.by(name)
            if cells:
                body.append(f"<h3>{_e(title)}: by {_e(group_title)}</h3>")
                body.append(_metric_table(group_title.capitalize(), cells, block.overall, f"table-{split}-{name}"))
                body.append(_why_list(why_sentences(cells, constant_judge_score(block, result.target))))
        other = _as_written((k, v) for k, v in block.items()
                            if k not in _SPLIT_RENDERED and not (means and k == "model_means"))
        if other:
            body.append(f'<details class="block"><summary>Other figures of this split</summary><pre class="json">'
                        f'{_e(json.dumps(other, ensure_ascii=False, indent=1))}</pre></details>')
    body.append('<h2 id="plots">Plots</h2>')
    for split, block in splits.items():
        title = SPLIT_TITLES.get(split, split)
        if block.confusion is not None:
            body.append(f"<h3>{_e(title)}: judge × expert mode</h3><div class=\"panels\">")
            body.append(_confusion_html("all task groups", block.confusion.all))
            body += [_confusion_html(k, v) for k, v in block.confusion.by_task_group.items()]
            body.append("</div>")
            if block.confusion.all.above_scale is not None:  # written in every matrix of the run, or in none
                body.append(f'<p class="note">{_e(ABOVE_SCALE_ROW_NOTE)}</p>')
        body.append(f"<h3>{_e(title)}: MAE by criterion</h3>")
        body.append(_mae_svg(block.by_criterion, str(result.target), bool(s.n_boot)))
    body += _pollux_official(result)
    known = {"judge", "target", "settings", "levels", "splits", "data", "predictions", "notes", "run", "validity",
             "pollux_official"}
    body += _other_keys(result, known)
    # linked where the section drew something: a validity section with no split draws nothing, no id="validity"
    nav = ([("summary", "Summary")] + [("validity", "Validity")] * bool(validity)
           + [(f"tables-{k}", SPLIT_TITLES.get(k, k)) for k in splits] + [("plots", "Plots")]
           + [("pollux", "POLLUX evaluator")] * bool(result.pollux_official))
    data = None
    if explorer is not None:
        nav.append(("explorer", "Items"))
        body += ['<h2 id="explorer-title">Items: where the judge and the experts disagree</h2>',
                 '<p class="note">Sorted by |judge − experts|; filter by split, evaluated model, task type, criterion, '
                 "status, the experts' mode (unique or not, no expert scores, no prediction) and whether the judge's "
                 "score lies on the item's scale (where the table records it). Click an item to open it. Names longer than the tables hold are cut "
                 "in their middle (…), and marked (#…) where two would read alike.</p>",
                 _no_script("items.parquet beside this page holds them, one row per item, and the run folder's "
                            "predictions.jsonl the judge's verdicts"), '<div id="explorer"></div>']
        data = explorer
    nav = [(a if a != "explorer" else "explorer-title", t) for a, t in nav]
    return _page(f"Judge report: {judge_name}", subtitle, nav, body, data)


def write_report_page(out: str | Path, records: Sequence | None = None,
                      predictions: Iterable[Mapping[str, Any]] | None = None,
                      text_items: int = DEFAULT_TEXT_ITEMS) -> Path:
    """Write ``report.html`` into a scored run folder (``metrics.json`` and ``items.parquet`` must exist).

    Args:
        out: the folder ``judge-eval score`` wrote.
        records: the labelled records; default: loaded from the data ``metrics.json`` names (skipped, with a note
            on the page, when that file is gone; ``eval.reports.run_files.recorded_file`` finds it).
        predictions: the run's rows; default: read from the predictions ``metrics.json`` names (likewise).
        text_items: see ``DEFAULT_TEXT_ITEMS``.

    Returns:
        The page's path.
    """
    out = Path(out)
    result = Metrics.from_json(json.loads((out / "metrics.json").read_text(encoding="utf-8")))
    records_note = predictions_note = ""
    if records is None:
        records, why = load_records(result.data, out)
        if records is None:
            records_note = missing_note("the labelled data", result.data, out, "the items' texts are", why)
    if predictions is None:
        predictions, why = load_predictions(result.predictions, out)
        if predictions is None:
            predictions_note = missing_note("the predictions", result.predictions, out, "the judge's feedback is", why)
    items = read_item_columns(out / "items.parquet")
    explorer = report_items(items, records, predictions, result.judge or "", str(result.target), text_items,
                            records_note, predictions_note)
    path = out / "report.html"
    write_atomically(path, render_report_page(result, explorer).encode("utf-8"))
    return path


# ---------------------------------------------------------------------------------------------- compare


def _compare_level(result: Comparison | Mapping[str, Any]) -> float:
    """The coverage of a comparison's paired intervals: its top-level ``ci_level`` where compare.json records one,
    else 0.95 (what ``judge-eval compare`` drew before it recorded the level)."""
    level = result.get("ci_level") if isinstance(result, Mapping) else getattr(result, "ci_level", None)
    return float(level) if _finite(level) and 0 < level < 1 else 0.95


def _too_few_to_call(p: Paired, n_boot: int, alpha: float) -> str:
    """Why an "n.s." cell was never called whatever its p (``eval.scoring.compare``'s minimums: ``MIN_PAIRED``
    paired units, ``paired_resamples_to_call(alpha)`` resamples), as compare.md's headline says it; "" for any other
    cell. Unsaid, such a cell read "p < 0.01 ... n.s." with no Holm p beside it, as if the call contradicted its p."""
    if p.verdict != "n.s.":
        return ""
    units = p.n_units if p.n_units is not None else p.n  # instructions when they were resampled, else items
    unit = "items" if p.n_units is None or units == p.n else "instructions"
    if units < MIN_PAIRED:
        return f" (under {MIN_PAIRED} paired {unit}: too few to call)"
    needed = paired_resamples_to_call(alpha)
    return f" (under {needed} resamples: too few to call)" if p.resamples(n_boot) < needed else ""


def _delta_td(p: Paired, n_boot: int, n_shown: int | None, bound: bool = False, alpha: float = 0.05) -> str:
    css = p.verdict if p.verdict in ("better", "worse") else ""
    # Each metric pairs its own items (Verdict Confidence needs two annotators, Spearman its reference): a count
    # other than the row's n column is said in the cell. A table's cell is called on its Holm-adjusted p, shown too,
    # as "≤" where it rests on a raw p's bound 2 / resamples (``bound``: ``holm_upper_bounds``).
    own_n = f", n {p.n}" if p.n != n_shown else ""
    holm = "" if p.p_holm is None else ", Holm " + (f"p ≤ {fmt_p_bound(p.p_holm)}" if bound else
                                                    p_phrase(p.p_holm, p.resamples(n_boot)))
    shown = f"[{_num(p.ci[0])}, {_num(p.ci[1])}] " if all(_finite(v) for v in p.ci) else ""
    return (f'<td data-v="{p.delta if _finite(p.delta) else ""}">{fmt_delta(p.delta)} '
            f'<span class="ci">{shown}{_e(p_phrase(p.p_value, p.resamples(n_boot)))}{_e(holm)}{own_n}</span> '
            f'<span class="{css}">{_e((p.verdict or "—") + _too_few_to_call(p, n_boot, alpha))}</span>'
            f'{_e(f" ({p.why_no_call})") if p.why_no_call else ""}</td>')


def _paired_table(label: str, cells: Mapping[str, Mapping[str, Paired]], metrics_shown: Sequence[str],
                  css_id: str, n_boot: int, level: float = 0.95, alpha: float = 0.05) -> str:
    # (heading, tooltip): each metric by its label, as report.html heads it, and what it means
    head = [(label, ""), (f"n ({KEY_LABELS.get(metrics_shown[0], metrics_shown[0])})" if metrics_shown else "n",
                          "the items both runs scored, paired for the first metric")]
    for m in metrics_shown:
        shown, title = KEY_LABELS.get(m, m), _heading_title(m)
        head += [(f"{shown} baseline", title), (f"{shown} run", title),
                 (f"{shown} delta [{ci_percent(level)} % CI] p call", f"run − baseline; {title}")]
    rows, bounds = [], holm_upper_bounds(cells)
    names = shown_names(cells)  # cut, and still one row's name each
    for name, by_metric in cells.items():
        shown = by_metric.get(metrics_shown[0]) if metrics_shown else None
        n_shown = shown.n if shown is not None else None
        tds = [f"<td>{_e(names[str(name)])}</td>", f'<td data-v="{"" if n_shown is None else n_shown}">'
               f'{_e("—" if n_shown is None else n_shown)}</td>']
        for m in metrics_shown:
            p = by_metric.get(m)
            if p is None:
                tds += ['<td data-v="">—</td>'] * 3
                continue
            tds += [f'<td data-v="{p.a if _finite(p.a) else ""}">{_num(p.a)}</td>',
                    f'<td data-v="{p.b if _finite(p.b) else ""}">{_num(p.b)}</td>',
                    _delta_td(p, n_boot, n_shown, (name, m) in bounds, alpha)]
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return (f'<div class="scroll"><table class="grid sortable" id="{_e(css_id)}"><thead><tr>'
            + "".join(f'<th title="{_e(t)}">{_e(h)}</th>' if t else f"<th>{_e(h)}</th>" for h, t in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def _named_for_page(result: Comparison) -> Comparison:
    """``result`` with its run names as the pages show them (one line, cut, and still told apart: compare.md's way,
    ``eval.scoring.compare.named_as``), so that every part of compare.html written from it (tables, headings, the
    headline sentences, the validity part) writes a run's name as the explorer's data (``compare_items``, from the
    same names) does."""
    from eval.reports.names import page_name
    from eval.scoring.compare import named_as

    return named_as(result, page_name)


def render_compare_page(result: Comparison, explorer: Mapping[str, Any] | None) -> str:
    """``compare.html``: each run's own numbers side by side, then each run against the baseline."""
    result = _named_for_page(result)
    runs = list(result.runs)
    level = _compare_level(result)
    # The intervals' level is said beside the call's alpha: the two are separate choices, and an interval that
    # includes 0 beside a "worse" call reads as a contradiction unless both are named.
    intervals = f", {ci_percent(level)} % intervals"  # under --n-boot 0 the paired note is another sentence
    unit = "whole instructions" if result.bootstrap_unit == "instruction" else "items"
    baseline = result.baseline
    subtitle = [f"Baseline: <b>{_e(baseline)}</b> · runs: " + ", ".join(f"<b>{_e(r)}</b>" for r in runs),
                # each comparison in one sentence, before any table (compare.md and the console open with them too)
                *(f"<b>{_e(decision(result, k))}</b>" for k in range(len(result.comparisons))),
                f"Paired: {_e(PAIRED_WITHOUT_RESAMPLES)}." if not result.n_boot else
                f"Paired: delta = run − baseline on the items both scored; paired bootstrap{intervals}, "
                f"{_e(result.n_boot)} resamples of {unit}; better/worse called at p &lt; {_e(result.alpha)}"
                + (", Holm-adjusted per metric within each table by model, task type or criterion"
                   if holm_applied(result) else "") + " (MAE: lower is better; Spearman and VC: higher). "
                # compare.md's paired note: such a cell is left out of the Holm family and shows no Holm p
                f"A cell under {MIN_PAIRED} paired {unit.removeprefix('whole ')} or "
                f"{paired_resamples_to_call(result.alpha)} resamples is n.s. whatever its p: too few to call. "
                # compare.md's paired note too: a reader of the page alone must not take n.s. for equal judges, nor
                # a table's rows for adjusted where no cell carries a Holm p (compare.md: "Every row is called on
                # its own p")
                f"{NOT_SHOWN_EQUAL}; "
                + (f"the overall rows are each called at {_e(result.alpha)}, not adjusted for one another."
                   if holm_applied(result) else
                   f"every row is called on its own p at {_e(result.alpha)}, none adjusted for another.")]
    body = ['<h2 id="side">Each run on its own items</h2>']
    for split, title in SPLIT_TITLES.items():
        cells = {name: m.splits[split].overall for name, m in zip(runs, result.metrics) if split in m.splits}
        if cells:
            body.append(f"<h3>{_e(title)}</h3>")
            body.append(_metric_table("Judge", cells, None, f"side-{split}"))
    body += [f'<p class="warn"><b>{_e(name)}</b>: {_md_text(note)}</p>' for name, note in runs_notes(result)]
    # compare.md's validity sections, from the same rows: each run's own, then each against the baseline, paired
    body += (validity := compare_validity(result, _e))
    for k, comp in enumerate(result.comparisons):
        body.append(f'<h2 id="cmp-{k}">{_e(comp.run)} vs {_e(baseline)}</h2>')
        body.append(f'<p class="note">{_e(comp.n_common)} items in both runs.</p>')
        # the console's and compare.md's sentences of this comparison (a VC drawn again, a Holm family too large)
        body += [f'<p class="note">{_e(line)}</p>' for line in comparison_headline(result, k)]
        for split, block in comp.splits.items():
            title = SPLIT_TITLES.get(split, split)
            body.append(f"<h3>{_e(title)}</h3>")
            body.append(_paired_table("Overall", {"all items": block.overall}, list(block.overall),
                                      f"paired-{k}-{split}-overall", result.n_boot, level, result.alpha))
            for name, group_title in _GROUP_TITLES.items():
                cells = block.by(name)
                if cells:
                    shown = [m for m in ("mae", "spearman", "vc_judge") if any(m in c for c in cells.values())]
                    body.append(f'<details class="block"><summary>By {_e(group_title)} ({len(cells)})</summary>'
                                + _paired_table(group_title.capitalize(), cells, shown, f"paired-{k}-{split}-{name}",
                                                result.n_boot, level, result.alpha)
                                + "</details>")
    # The validity part's first heading: "validity" opens only the side-by-side part, which a baseline without a
    # validity section leaves out, and a link to it pointed nowhere.
    validity_id = next((found.group(1) for block in validity if (found := re.match(r'<h2 id="([^"]+)"', block))), None)
    nav = ([("side", "Side by side")] + [(validity_id, "Validity")] * (validity_id is not None)
           + [(f"cmp-{k}", c.run) for k, c in enumerate(result.comparisons)])
    data = None
    if explorer is not None:
        nav.append(("explorer-title", "Items"))
        body += ['<h2 id="explorer-title">Items where the judges disagree most</h2>',
                 '<p class="note">Per comparison, the items with the largest |run − baseline| (then items only one '
                 "judge scored). Click an item to see both judges' feedback.</p>",
                 _no_script("each run's items.parquet holds its items, one row per item, in the run's folder"),
                 '<div id="explorer"></div>']
        data = explorer
    return _page(f"Judge comparison (baseline: {baseline})", subtitle, nav, body, data)


def write_compare_page(result: Comparison, out: str | Path, top: int = 1000) -> Path:
    """Write ``compare.html`` into ``out`` for ``eval.scoring.compare.compare``'s result (its run folders must exist)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "compare.html"
    write_atomically(path, render_compare_page(result, compare_items(result, top)).encode("utf-8"))
    return path

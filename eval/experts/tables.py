"""The experts' own tables: the POLLUX paper's judge-independent figures, from the labels alone.

    judge-eval experts --data ai-forever/POLLUX --out runs/experts

No judge is involved: these are the experts' ranking of the evaluated LLMs and their agreement, the ground truth a
judge-based run approximates. A user who reproduces them knows that loading, the ``-1`` abstentions, the split and
the pooling are right before comparing any judge. The paper's tables (arXiv 2505.24616v3):

- **Table 10, Experts column** (Appendix D.2.1): the mean expert score by evaluated model on the
  Zero-Shot test (here on each split: ``zero_shot``, ``standard`` and ``all``);
- **Table 1** (Section 2.3): the mean expert score by task type and evaluated model on the Full test (Zero-Shot +
  Standard);
- **Table 9** (Appendix D.1): the same by criterion;
- **Tables 14, 15, 16, Experts column** (Appendix D.2.2): the experts' Verdict Confidence on the Full test by
  evaluated model, task type and criterion.

How they aggregate, as far as the paper says:

- an item's expert score is "an unweighted average of the corresponding point estimates" (Section 2.3), over the
  experts who did not abstain: a ``-1`` in ``annotations`` is an abstention, not a score (the dataset card), as a
  ``null`` is in a project file's ``expert_scores`` (where the loader refuses a -1 its rubric has no level for); an
  item all of whose experts abstained has no score and is left out (``n_no_experts``);
- an item's Verdict Confidence is the largest share of one score among its experts (Appendix D.2.2), only where two or
  more experts scored it (Table 15's note: no VC for the single-annotator Technical Problems);
- a cell is the mean over its items of their scores: the paper defines the item's score (above) and calls its tables
  "mean expert scores", but does not write how a cell pools them, and its printed figures cannot tell this from a
  mean over every point estimate (which weighs an item by its experts: a Critical criterion's five against a
  Task-specific one's two). ``mean_over`` (``judge-eval experts --mean-over``) names it: ``items`` (the default, the
  figures this module always gave) or ``annotations``; the outputs say which was used, and the cells count items
  either way. The Verdict Confidence tables are per item under both (Appendix D.2.2 computes it "for each instance");
- the "Avg." row is the mean over **all items** of the column, not the mean of the rows: Table 10's seven model
  rows average to (1.569 + 1.404 + 1.398 + 1.295 + 1.300 + 1.333 + 1.541) / 7 = 1.406, but its Avg. is 1.401;
  Tables 14, 15 and 16 group the same items three ways and all give Avg. 0.888, which only an item-pooled mean
  does (Table 14's rows average to 0.887, Table 15's 31 task types with a value to 0.890). ``Avg.`` in the outputs
  is that pooled mean. The tables key it ``POOLED``, which no name from the data equals, and only the outputs write
  it ``Avg.``: an evaluated model, task type or criterion of that name keeps its own row (marked apart on the pages,
  as two names that read alike are; told apart by the CSV's ``pooled`` column).

Whether the two Critical criteria (0 best: "0" means no critical violation, Appendix P.1) count in the mean scores
that pool over criteria is a choice: the paper does not say. Table 9 lists them as rows, which says nothing of Tables
10 and 1 or of the Avg. row; POLLUX's own aggregation (``src/metrics.py`` of ai-forever/POLLUX: ``grand_mean`` and the
``mean_over_criteria`` row) leaves out every criterion whose levels are exactly 0 and 1 (its ``is_binary_scale``),
these two among them. ``critical_in_means``
(``judge-eval experts --critical-in-means``) names it: ``include`` (the default, the figures this module always gave)
counts them like any criterion; ``exclude`` leaves their items out of Table 10's and Table 1's cells and of every
``Avg.`` row of the mean-score tables, while Table 9 keeps each Critical criterion's own row (as POLLUX's matrix keeps
its rows and leaves them out of the means only). Only the two Critical criteria: POLLUX's rule (any 0/1 rubric) also
drops best-at-top 0/1 criteria such as Operability. The experts' VC tables are unaffected. The
outputs say which was used.

Task types are shown by their English taxonomy name where the taxonomy knows the record's (Russian) one, criteria
by the record's name with the taxonomy's English name beside it. Items of a task type the taxonomy does not know
form their own ``unknown`` split (unless scored on a held-out criterion: Zero-Shot), outside ``all``, as in
``judge-eval score``.
"""

from __future__ import annotations

import csv
import enum
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval.scoring.metrics import expert_mean, verdict_confidence_experts
from judge.plumbing.json_reading import counted
from judge.record_columns import as_columns
from eval.reports import html_text
from eval.reports.notes import load_report_notes
from eval.reports.names import page_name, shown_names
from eval.reports.report import fmt, markdown_table, md_text
from judge.plumbing.atomic_write import write_atomically

__all__ = ["AVG", "CRITICAL_IN_MEANS", "MEAN_OVER", "PAPER", "POOLED", "critical_in_means_sentence",
           "expert_tables", "mean_over_sentence", "render_html", "render_markdown", "summary_line",
           "write_expert_tables"]

#: The pooled row's (and a cross table's pooled column's) label, as the paper's tables write it.
AVG = "Avg."


class _Pooled(enum.Enum):
    KEY = "pooled"


#: The pooled row's and column's key in ``expert_tables``' tables: an enum member, so that no name from the data (a
#: ``str``) equals it and a group named like the label keeps its own row; the outputs write it ``AVG``.
POOLED = _Pooled.KEY
#: ``critical_in_means``'s settings (module docstring): the paper is silent, ``include`` is the default.
CRITICAL_IN_MEANS = ("include", "exclude")
#: ``mean_over``'s settings (module docstring): how a mean-score cell pools its items; ``items`` is the default.
MEAN_OVER = ("items", "annotations")
_SPLITS = ("zero_shot", "standard", "unknown", "all")
_SPLIT_TITLES = {"zero_shot": "Zero-Shot test", "standard": "Standard test", "unknown": "split unknown",
                 "all": "Full test (Zero-Shot + Standard)"}
#: (table key, what is averaged, rows grouped by, the paper's table, the split it reports) for every table written:
#: the CSV's ``paper`` names the paper's table on that split's rows only (the tables are computed on every split), as no
#: other split's figure is the paper's to compare with.
_TABLES = (
    ("mean_by_model", "mean", "model_id", "Table 10, Experts column (Zero-Shot)", "zero_shot"),
    ("mean_by_task_type", "mean", "task_type", "Table 1 (Full test)", "all"),
    ("mean_by_criterion", "mean", "criterion", "Table 9 (Full test)", "all"),
    ("vc_by_model", "vc", "model_id", "Table 14, Experts column (Full test)", "all"),
    ("vc_by_task_type", "vc", "task_type", "Table 15, Experts column (Full test)", "all"),
    ("vc_by_criterion", "vc", "criterion", "Table 16, Experts column (Full test)", "all"),
)
#: The paper's figures that need only the labels, to compare with (Table 10's Experts column, Table 14's Avg.).
PAPER = {
    "table_10_experts_zero_shot": {"Claude 3.5 Sonnet (2024-10-22)": 1.569, "GPT-4o (2024-08-06)": 1.404,
                                   "GigaChat-Max (1.0.26.20)": 1.398, "Llama-3.1-405B": 1.295, "T-pro-it-1.0": 1.300,
                                   "YaGPT-4-Pro (2024-10-23)": 1.333, "o1 (2024-12-17)": 1.541, AVG: 1.401},
    "tables_14_16_experts_vc_full_test": {AVG: 0.888},
}


def _labels(columns) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split, task type (English where known), criterion name and its English name per record; each taxonomy lookup
    is made once per group of records ``split_of`` cannot tell apart (``judge.split_groups``: a few hundred), not per
    item (160k on the release)."""
    import judge
    from judge.splits import record_task_type

    taxonomy = judge.load_taxonomy()
    spec = judge.load_split_spec()
    key, first = judge.split_groups(columns)
    representatives = columns.records_at(first)

    def task_name(record) -> str:
        # as split_of resolves it (the subtype only below a group's name), so a row's name and split agree
        return record_task_type(record, taxonomy) or record.task_type or "(none)"

    def english_name(criterion: str) -> str:
        try:
            return taxonomy.criterion(criterion).name["en"]
        except judge.TaxonomyError:
            return ""

    split = [judge.split_of(record, spec, allow_unknown=True) for record in representatives]
    task = [task_name(r) for r in representatives]
    criterion = [r.criteria_name for r in representatives]
    english = [english_name(r.criteria_name) for r in representatives]
    return tuple(np.array(values, dtype=object)[key] for values in (split, task, criterion, english))


def _codes(labels: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(distinct labels in first-seen order, each label's index into them)."""
    lookup: dict[str, int] = {}
    codes = np.fromiter((lookup.setdefault(label, len(lookup)) for label in labels), dtype=np.int64, count=len(labels))
    return list(lookup), codes


def _cells(values: np.ndarray, rows: tuple[list[str], np.ndarray], columns: tuple[list[str], np.ndarray] | None,
           index: np.ndarray, weights: np.ndarray | None = None) -> dict:
    """``{row: {column: (n, mean)}}`` over the finite values of ``index``, with the pooled ``POOLED`` row last; the
    column is the evaluated model (cross tables, with the pooled ``POOLED`` column last: all models together) or
    ``"Experts"``. ``n`` counts items; the mean weighs each item by ``weights`` (default: 1)."""
    keep = index[np.isfinite(values[index])]
    weight = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=np.float64)
    row_names, row_codes = rows
    col_names, col_codes = columns if columns is not None else (["Experts"], np.zeros(len(values), dtype=np.int64))
    shape = (len(row_names), len(col_names))
    flat = row_codes[keep] * shape[1] + col_codes[keep]
    size = shape[0] * shape[1]
    n = np.bincount(flat, minlength=size).reshape(shape)
    mass = np.bincount(flat, weights=weight[keep], minlength=size).reshape(shape)
    total = np.bincount(flat, weights=weight[keep] * values[keep], minlength=size).reshape(shape)
    # The pooled row (and, in a cross table, column) adds the counts and sums: a mean over items, not over cells.
    n, mass, total = (np.vstack([a, a.sum(axis=0)]) for a in (n, mass, total))
    col_order = [(j, col_names[j]) for j in np.argsort(np.asarray(col_names, dtype=object), kind="stable")]
    if columns is not None:
        n, mass, total = (np.hstack([a, a.sum(axis=1, keepdims=True)]) for a in (n, mass, total))
        col_order.append((len(col_names), POOLED))
    row_order = [(i, row_names[i]) for i in np.argsort(np.asarray(row_names, dtype=object), kind="stable")]
    out = {}
    for i, row in [*row_order, (len(row_names), POOLED)]:
        cells = {col: (int(n[i, j]), float(total[i, j] / mass[i, j])) for j, col in col_order if n[i, j]}
        if cells:
            out[row] = cells
    return out


def expert_tables(records, critical_in_means: str = "include", mean_over: str = "items",
                  load_report=None) -> dict[str, Any]:
    """The experts' tables of labelled records, judge-independent.

    Args:
        records: the labelled records as columns (``judge.load_record_columns``), or a ``JudgeRecord`` list.
        critical_in_means: ``include`` or ``exclude`` the two Critical criteria's items from the mean scores that
            pool over criteria (module docstring: the paper does not say).
        mean_over: ``items`` (each item once) or ``annotations`` (each item weighed by its non-abstaining experts)
            in the mean-score tables (module docstring: the paper does not say).
        load_report: the ``judge.LoadReport`` of the load that gave ``records``, whose exact duplicate rows left out
            and scores off their rubric's scale kept the outputs then name (``"load_notes"``).

    Returns:
        ``{"counts": {...}, "english_names": {criterion: English name}, "tables": {table: {split: {row: {column:
        (n_items, value)}}}}}``. ``mean_by_*`` are cross tables (columns: evaluated models and ``POOLED``, all
        models pooled; ``mean_by_model`` has the one column ``"Experts"``); ``vc_by_*`` have the column
        ``"Experts"``. Every table has the pooled ``POOLED`` row (written ``AVG``). A group without a value is
        absent (the paper's "—"). Also
        ``"critical_in_means": {"setting", "n_items"}``: the setting and how many items it concerns (Critical
        criteria with an expert score, every split), and ``"mean_over"``: the setting. With ``load_report``,
        ``"load_notes"``: ``eval.reports.notes.load_report_notes`` (``n_duplicate_rows``, ``duplicate_rows``,
        ``n_off_scale``, ``off_scale_rows``, each only when not zero; the rows named as the load names them, the first
        20).
    """
    if critical_in_means not in CRITICAL_IN_MEANS:
        raise ValueError(f"critical_in_means: {critical_in_means!r}; one of {', '.join(CRITICAL_IN_MEANS)}")
    if mean_over not in MEAN_OVER:
        raise ValueError(f"mean_over: {mean_over!r}; one of {', '.join(MEAN_OVER)}")
    import judge

    columns = as_columns(records)
    split, tasks, criteria, english = _labels(columns)
    experts = columns.expert_matrix()
    item_mean = expert_mean(experts)
    item_vc = verdict_confidence_experts(experts)
    n_experts = np.isfinite(experts).sum(axis=1)
    # Every point estimate once, or every item once (VC is per item either way).
    mean_weights = n_experts if mean_over == "annotations" else None
    models = np.where(columns.text("model_id") == "", "(none)", columns.text("model_id")).astype(object)
    group_of = {"model_id": _codes(models.tolist()), "task_type": _codes(tasks.tolist()),
                "criterion": _codes(criteria.tolist())}
    index = {name: np.flatnonzero(split == name) for name in _SPLITS if name != "all"}
    index["all"] = np.flatnonzero((split == "zero_shot") | (split == "standard"))
    names, codes = group_of["criterion"]
    taxonomy = judge.load_taxonomy()
    critical = np.array([taxonomy.is_best_at_lowest(name) for name in names], dtype=bool)[codes]
    # The mean over criteria with the Critical ones left out, where so chosen (NaN: not in any cell).
    pooled_mean = np.where(critical, np.nan, item_mean) if critical_in_means == "exclude" else item_mean
    tables: dict[str, dict] = {}
    for key, value, by, _, _ in _TABLES:
        values = item_vc if value == "vc" else item_mean if by == "criterion" else pooled_mean
        cross = group_of["model_id"] if value == "mean" and by != "model_id" else None
        weights = mean_weights if value == "mean" else None
        tables[key] = {name: _cells(values, group_of[by], cross, idx, weights) for name, idx in index.items()
                       if len(idx)}
        if value == "mean" and by == "criterion" and pooled_mean is not item_mean:
            # Each criterion keeps its own row; the Avg. row pools without the Critical ones.
            for name, idx in index.items():
                if name in tables[key]:
                    rows = {row: cells for row, cells in tables[key][name].items() if row is not POOLED}
                    pooled = _cells(pooled_mean, group_of[by], cross, idx, weights).get(POOLED)
                    tables[key][name] = {**rows, **({POOLED: pooled} if pooled else {})}
    released = columns.criteria_score
    differs = np.isfinite(item_mean) & np.isfinite(released) & ~np.isclose(item_mean, released, atol=1e-6)
    counts = {
        "n_records": len(columns),
        "by_split": {name: int(len(idx)) for name, idx in index.items()},
        "n_no_experts": int((n_experts == 0).sum()),
        "n_single_expert": int((n_experts == 1).sum()),
        # items with an expert score per split, whether or not the means take them (critical_in_means)
        "n_scored_by_split": {name: int(np.isfinite(item_mean[idx]).sum()) for name, idx in index.items()},
        "n_abstentions": int(columns.n_abstained.sum()),
        # A check on loading: the release's criteria_score should be the mean computed here (paper, Section 2.3).
        "n_criteria_score_differs": int(differs.sum()),
    }
    notes = {} if load_report is None else {"load_notes": load_report_notes(load_report)}
    return {"counts": counts, **notes,
            "critical_in_means": {"setting": critical_in_means,
                                  "n_items": int((critical & np.isfinite(item_mean)).sum())},
            "mean_over": mean_over,
            "english_names": dict(sorted({c: e for c, e in zip(criteria.tolist(), english.tolist()) if e}.items())),
            "tables": tables}


def write_expert_tables(result: dict[str, Any], out: str | Path) -> dict[str, Path]:
    """``experts_tables.csv`` (long: table, paper, split, row, row_en, column, n_items, value, pooled), ``experts.md``
    and the same tables as a small page, ``experts.html``. ``paper`` names the paper's table a row reproduces, on the
    split that table reports (``_TABLES``), and is empty on the other splits' rows. The pooled row and column are
    written ``AVG``, and ``pooled`` says which of the cell's row and column is the pooled one ("row", "column", "row
    and column" or ""), since a group from the data may bear that name too.

    Returns:
        ``{"csv": path, "markdown": path, "html": path}``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paper_of = {key: (paper, split) for key, _, _, paper, split in _TABLES}
    english = result["english_names"]
    csv_path = out / "experts_tables.csv"
    with io.StringIO(newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["table", "paper", "split", "row", "row_en", "column", "n_items", "value", "pooled"])
        for key, by_split in result["tables"].items():
            for split, rows in by_split.items():
                for row, cols in rows.items():
                    row_en = english.get(row, "") if key.endswith("criterion") else ""
                    for col, (n, value) in cols.items():
                        pooled = " and ".join(side for side, name in (("row", row), ("column", col))
                                              if name is POOLED)
                        paper = paper_of[key][0] if split == paper_of[key][1] else ""
                        writer.writerow([key, paper, split, _label(row), row_en, _label(col), n,
                                         repr(float(value)), pooled])
        write_atomically(csv_path, f.getvalue().encode("utf-8"))  # whole, never cut by a kill, as the pages
    md_path = out / "experts.md"
    write_atomically(md_path, render_markdown(result).encode("utf-8"))
    html_path = out / "experts.html"
    write_atomically(html_path, render_html(result).encode("utf-8"))
    return {"csv": csv_path, "markdown": md_path, "html": html_path}


def _label(key: Any) -> Any:
    """A table key as the CSV writes it: the pooled row or column ``AVG``, a name from the data as it is."""
    return AVG if key is POOLED else key


def _shown(keys: Sequence[Any]) -> dict[Any, str]:
    """Each key's label on the pages: ``AVG`` for the pooled row or column, ``shown_names``' label for a name from
    the data, marked apart where it reads as ``AVG`` (``reserved``), so that no group stands for the pooled row."""
    return {**shown_names([key for key in keys if key is not POOLED], reserved=(AVG,)), POOLED: AVG}


def _english(english: dict[str, str], row: str) -> str:
    """A criterion's English name as the pages show a name (one line, cut to ``NAME_CHARS``)."""
    return page_name(english.get(row, ""))


def _cross_table(rows: dict, english: dict[str, str] | None) -> tuple[list[str], list[list[str]], int]:
    """Header, rows and how many leading columns hold names (the row's, its English name), which the renderers
    escape; the cells after them are the table's own figures."""
    columns = sorted({c for cols in rows.values() for c in cols if c is not POOLED}) + [POOLED]
    # the pages' label of each name from the data (one line, cut, told apart where two read alike or one as Avg.)
    shown = _shown([*rows, *columns])
    header = ["", *(["English name"] if english is not None else []), *(shown[c] for c in columns)]
    body = [[shown[row], *([_english(english, row)] if english is not None else []),
             *(f"{fmt(cols[c][1])} ({cols[c][0]})" if c in cols else "\u2014" for c in columns)]
            for row, cols in rows.items()]
    return header, body, 1 + (english is not None)


def _column_table(by_split: dict, splits: Sequence[str],
                  english: dict[str, str] | None) -> tuple[list[str], list, int]:
    """As ``_cross_table``: a row per name, a column per test."""
    names = sorted({row for s in splits for row in by_split.get(s, {}) if row is not POOLED}) + [POOLED]
    shown = _shown(names)
    header = ["", *(["English name"] if english is not None else []), *(_SPLIT_TITLES[s] for s in splits)]
    body = []
    for row in names:
        cells = []
        for s in splits:
            cell = by_split.get(s, {}).get(row, {}).get("Experts")
            cells.append(f"{fmt(cell[1])} ({cell[0]})" if cell else "\u2014")
        body.append([shown[row], *([_english(english, row)] if english is not None else []), *cells])
    return header, body, 1 + (english is not None)


def critical_in_means_sentence(result: dict[str, Any]) -> str:
    """Which ``critical_in_means`` the tables were made with, for every output (the paper does not say)."""
    chosen = result.get("critical_in_means") or {"setting": "include", "n_items": None}
    items = "" if chosen["n_items"] is None else f" ({chosen['n_items']} items)"
    how = ("included in every mean" if chosen["setting"] == "include" else
           "left out of the means by model (Table 10), by task type (Table 1) and of every Avg. row; Table 9 keeps "
           "their own rows")
    return (f"Critical criteria (0 best){items}: {how} (--critical-in-means {chosen['setting']}; the paper does not "
            "say; POLLUX's src/metrics.py leaves 0/1 criteria out of its means).")


def mean_over_sentence(result: dict[str, Any]) -> str:
    """How the mean-score cells pooled their items (``mean_over``; the paper does not say), for every output."""
    setting = result.get("mean_over", "items")
    how = ("each item's score once" if setting == "items" else
           "each item's score weighed by its non-abstaining experts (every point estimate once)")
    return (f"A mean-score cell is the mean of {how} (--mean-over {setting}; the paper does not say); the Verdict "
            "Confidence cells are per item either way.")


def _load_sentences(result: dict[str, Any]) -> list[str]:
    """What the load left out or kept off scale, as sentences naming the rows (the outputs say it, not only the
    console), in the words of judge-eval score's report (``eval.reports.notes``: ``off_scale_note``,
    ``duplicates_note``; Markdown sentences)."""
    from types import SimpleNamespace

    from eval.reports.notes import duplicates_note, off_scale_note

    loaded = SimpleNamespace(notes=SimpleNamespace(**(result.get("load_notes") or {})))
    return [note for note in (off_scale_note(loaded), duplicates_note(loaded)) if note]


def _blocks(result: dict[str, Any]) -> list[tuple]:
    """The report section as ("h2" | "h3" | "p" | "note", text) and ("table", header, rows, name columns) blocks, for both
    renderers; a table's names from the data are already ``shown_names``' labels, its renderer escapes them."""
    c = result["counts"]
    english = result["english_names"]
    tables = result["tables"]
    # the unknown split (task types the taxonomy does not know) has its own column, as in the CSV: outside "all"
    splits = [s for s in _SPLITS if s in tables["mean_by_model"]]
    full = "all"
    blocks: list[tuple] = [
        ("h2", "The experts' own tables (judge-independent)"),
        ("p", f"{c['n_records']} items "
              f"({', '.join(f'{_SPLIT_TITLES[s]} {n}' for s, n in c['by_split'].items() if n)}); "
              f"{c['n_abstentions']} abstention{'' if c['n_abstentions'] == 1 else 's'} (the release's -1, a project "
              f"file's null) left out; {c['n_no_experts']} items without a non-abstaining "
              f"expert left out; {c['n_single_expert']} items with a single expert have no Verdict Confidence; "
              f"{c['n_criteria_score_differs']} items whose released criteria_score is not the mean of their "
              "experts. An item's score is the mean of its experts' point estimates (paper, Section 2.3), Avg. "
              "pools all items of the column (not the rows). Cells: value (items)."),
        *(("note", note) for note in _load_sentences(result)),
        ("p", mean_over_sentence(result)),
        ("p", critical_in_means_sentence(result)),
        ("h3", "Mean expert score by evaluated model (Table 10's Experts column is the Zero-Shot one)"),
        ("table", *_column_table(tables["mean_by_model"], splits, None)),
        ("p", "Paper, Table 10, Experts (Zero-Shot): " + ", ".join(
            f"{name} {value:.3f}" for name, value in PAPER["table_10_experts_zero_shot"].items()) + "."),
    ]
    if full in tables["mean_by_task_type"]:
        blocks += [("h3", "Mean expert score by task type and evaluated model, Full test (Table 1)"),
                   ("table", *_cross_table(tables["mean_by_task_type"][full], None)),
                   ("h3", "Mean expert score by criterion and evaluated model, Full test (Table 9)"),
                   ("table", *_cross_table(tables["mean_by_criterion"][full], english))]
    blocks += [("h3", "Experts' Verdict Confidence (Tables 14, 15, 16: Experts column)"),
               ("p", "By evaluated model (Table 14 is the Full test):"),
               ("table", *_column_table(tables["vc_by_model"], splits, None)),
               ("p", "By task type (Table 15):"), ("table", *_column_table(tables["vc_by_task_type"], splits, None)),
               ("p", "By criterion (Table 16):"),
               ("table", *_column_table(tables["vc_by_criterion"], splits, english)),
               ("p", "Paper, Tables 14-16, Experts Avg. (Full test): "
                     f"{PAPER['tables_14_16_experts_vc_full_test'][AVG]:.3f}.")]
    return blocks


def render_markdown(result: dict[str, Any]) -> str:
    """The report section in Markdown: the experts' tables in the paper's layout, each cell "value (items)"."""
    marks = {"h2": "## ", "h3": "### ", "p": "", "note": ""}  # a "note" is report.md's sentence, Markdown as it is

    def table(header: list[str], rows: list[list[str]], names: int) -> str:
        # names from the data as inert Markdown (md_text), as report.md writes them: no link, emphasis or tag
        return markdown_table([md_text(h) for h in header],
                              [[md_text(c) if k < names else c for k, c in enumerate(row)] for row in rows])

    return "\n\n".join(table(*block[1:]) if block[0] == "table" else marks[block[0]] + block[1]
                        for block in _blocks(result)) + "\n"


def render_html(result: dict[str, Any]) -> str:
    """The same section as a small self-contained HTML page (no script; opens from disk)."""
    escape = html_text.escape  # escaped, bidirectional controls dropped, as report.html writes names

    def table(header: list[str], rows: list[list[str]], names: int) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    parts = [table(*block[1:]) if block[0] == "table" else f"<p>{html_text.md_html(block[1])}</p>" if block[0] == "note"
             else f"<{block[0]}>{escape(block[1])}</{block[0]}>"
             for block in _blocks(result)]
    style = ("body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}td:first-child,th:first-child,"
             "td:nth-child(2){text-align:left}tr:last-child td{font-weight:bold}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>The experts' own tables</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")


def summary_line(result: dict[str, Any]) -> str:
    """One line for the console: the pooled figures per split. A split whose scored items are all of Critical
    criteria left out of the means (``critical_in_means`` ``exclude``) says so and keeps its Verdict Confidence:
    those items have expert scores."""
    parts, empty = [], []
    scored = result["counts"].get("n_scored_by_split", {})
    setting = (result.get("critical_in_means") or {}).get("setting", "include")
    for split, rows in result["tables"]["mean_by_model"].items():
        vc = result["tables"]["vc_by_model"].get(split, {}).get(POOLED, {}).get("Experts")
        vc_text = f"{vc[1]:.3f} over {vc[0]}" if vc else "\u2014"
        if POOLED in rows:
            n, mean = rows[POOLED]["Experts"]
            parts.append(f"{_SPLIT_TITLES[split]}: mean {mean:.3f} over {counted(n, 'item')}, experts VC {vc_text}")
        elif scored.get(split):  # every scored item is of a Critical criterion, left out of the means
            parts.append(f"{_SPLIT_TITLES[split]}: no item in the means ({counted(scored[split], 'item')} with an "
                         f"expert score, all of Critical criteria, left out: --critical-in-means {setting}), experts VC "
                         f"{vc_text}")
        else:  # no item of this split has an expert score: its tables are empty
            empty.append(split)
    if not parts:
        return "no item with an expert score"
    return "; ".join(parts + [f"{_SPLIT_TITLES[split]}: no item with an expert score" for split in empty]
                     + [f"Critical criteria in the means: {setting}",
                        f"means over {result.get('mean_over', 'items')}"])

"""The ``judge-eval compare`` step: scored runs side by side, with deltas and paired-bootstrap significance.

The first run is the baseline; every other run is compared with it on the items *both* judges scored (same ids,
both parsed, a defined reference), so item difficulty cancels out of the difference. For each split (Zero-Shot,
Standard, both) the comparison covers the overall numbers and the tables by evaluated model, task type and
criterion; Spearman is compared only where it is pooled (overall, by model, by task type).

``delta`` is ``run - baseline``. MAE: lower is better; Spearman and Verdict Confidence: higher is better. A delta
is called better/worse when its two-sided paired-bootstrap p-value is below ``alpha`` and the cell has at least
``MIN_PAIRED`` paired units (items; whole instructions under ``--bootstrap-unit instruction``), else "n.s.": a
percentile bootstrap over a handful of units can be of zero width by chance (two items with equal deltas give
p = 0), the pitfall the experts' ceiling guards against with the same minimum (``bootstrap.MIN_VERDICT_UNITS``).
A call also needs at least ``paired_resamples_to_call(alpha)`` resamples (more than 2 / alpha: 41 at alpha 0.05),
else "n.s.": a p-value estimated as 0 from n resamples only says p < 2 / n, which is no evidence of p < alpha until
2 / n < alpha; the bound a table's Holm adjustment enters such a p as (``_entered``), so that an overall cell and a
table of that one cell call alike.
The overall cells are called on their own p-values; a table by model, task type or criterion holds many cells of
one metric, and its calls are read against Holm-adjusted p-values over its callable cells of that metric (``_holm``),
so that the chance of any false call among a table's cells of one metric (one column of compare.html's table) stays
at most ``alpha``. Verdict Confidence is paired under one draw: where
the runs were scored with different ``--seed`` or ``--vc-repeats``, both runs' per-item VC is drawn again from
their items.parquet under the baseline's (``_on_one_vc_draw``). Each test's failed verdicts are paired on the items
both runs predicted and called by McNemar's exact test (``_paired_failures``): a delta over the items both scored
says nothing of the items one judge failed on.

Why one module of ~1,500 lines: the pairing and compare.md read the same rules, which reference each side of a
metric is against (``_reference``, ``spearman_target``), when a delta may be called and how runs are named apart;
apart, compare.md would restate what the comparison computed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from eval.scoring import bootstrap, item_table
from eval.scoring.comparison import Comparison, Paired, PairedFailures, RunComparison, SplitComparison
from eval.scoring.holm import holm_adjusted_p
from eval.scoring.metrics import item_keys, verdict_confidence_judge
# the resample floors' one definition, which rank and the experts' ceiling read too
from eval.scoring.resample_rules import paired_resamples_to_call, resamples_for_family
from eval.reports.labels import KEY_LABELS
from eval.reports.notes import runs_notes
from eval.reports.report import SPLIT_TITLES, ci_percent, fmt, fmt_delta, fmt_p, md_text, p_phrase
from judge.metrics_json.json_record import JsonRecordError
from judge.metrics_json.metrics import Cell, Metrics
from judge.metrics_json.validity import PairedValidity
from judge.plumbing.config_files import lone_surrogate_problem
from judge.plumbing.json_reading import JSON_REFUSALS, unreadable_json, value_words
from judge.records import RowIndex, row_place

__all__ = ["MIN_N_BOOT", "MIN_PAIRED", "NOT_SHOWN_EQUAL", "N_BOOT_BOUND", "PAIRED_WITHOUT_RESAMPLES", "ScoredRun",
           "TARGETS_DIFFER", "compare", "comparison_headline", "decision", "fmt_p_bound", "headline", "holm_applied",
           "holm_upper_bounds", "load_run", "render_markdown",
           "spearman_target", "MD_RUN_NAME_CHARS", "md_run_name", "names_in_full"]

#: The most characters of a run's name compare.md writes in its headings and tables (``shown_name``'s cut: the start
#: and end kept): a name is a column header over figures a few characters wide, and a run named by its folder's path
#: would make every table as wide as the path. The names cut are listed whole once, under the first table.
MD_RUN_NAME_CHARS = 80
#: What an "n.s." cell does not say, in compare.md's note and compare.html's alike.
NOT_SHOWN_EQUAL = "n.s. says no difference was shown, not that the runs are equal"
#: Fewer paired units than this: "n.s." whatever the p-value (module docstring). Not a copy of the ceiling's
#: minimum: the one constant both read.
MIN_PAIRED = bootstrap.MIN_VERDICT_UNITS
#: ``--n-boot`` of score, compare and rank is 0 (no intervals, no p-values, no calls but compare's failed verdicts'
#: McNemar call, an exact test that draws no resample) or at least this many
#: resamples: a percentile interval is read off the resamples drawn, so one resample is a zero-width interval that
#: reads as certainty and a few are the spread of a few draws. A floor against such degenerate intervals, not a
#: recommendation: intervals worth reading take the default 1000, and compare's calls need
#: ``paired_resamples_to_call``.
MIN_N_BOOT = 10
#: ``--n-boot``'s bound as score, compare and rank check it: whether a value is within it, and what it must be.
N_BOOT_BOUND = (lambda n: n == 0 or n >= MIN_N_BOOT,
                f"0 (no intervals) or at least {MIN_N_BOOT} (fewer resamples make each interval the spread of a few "
                "draws; one draw is a zero-width interval that reads as certainty)")


#: What a headline's MAE sentence says in place of an interval, p-value and call when no resample was drawn: the
#: failed verdicts' call, which needs none, may follow it.
_NO_BOOT = "no interval or call for MAE, Spearman or VC (--n-boot 0)"
#: compare.md's and compare.html's paired note when no resample was drawn: what is called and what is not.
PAIRED_WITHOUT_RESAMPLES = (
    "delta = run − baseline on the items both scored; no resample drawn (--n-boot 0), so MAE, Spearman and VC have "
    "no interval, p-value or call (their cells read —); the failed verdicts are still called, by McNemar's exact test "
    "on the items both runs predicted, which draws no resample (the decision says so where one run fails on more "
    "items than the other beyond chance)")
_LOWER_IS_BETTER = {"mae": True, "spearman": False, "vc_judge": False}
_STAT = {"mae": "mae", "spearman": "spearman", "vc_judge": "mean"}
_GROUPS = {"model": "model_id", "task_type": "task_type", "criterion": "criteria_name"}
#: items.parquet's extra columns the pairing reads: each metric's reference and the judge's Verdict Confidence.
_PAIRED_COLUMNS = ("reference", "vc_judge")


@dataclass
class ScoredRun:
    """A folder written by ``judge-eval score``: its metrics, its item table and the table's extra columns
    (``reference``, ``vc_judge``: ``item_table.read_table``); ``name`` is the judge's, told apart by its folder
    when two runs share it."""

    folder: str
    name: str
    metrics: Metrics
    table: item_table.ItemTable
    extra: dict[str, np.ndarray]


def load_run(folder: str | Path) -> ScoredRun:
    """A scored run (``ScoredRun``).

    Raises:
        FileNotFoundError: the folder has no ``items.parquet`` or no ``metrics.json``, naming the one missing (run
            ``judge-eval score`` first).
        ValueError: ``folder`` is a file, or its ``items.parquet`` cannot be read, repeats an id, holds a
            status score does not write or a judge_score no judge gives (an infinity, NaN for a scored item, a score
            for an item not scored) or lacks the columns compare pairs on
            (``reference``, ``vc_judge``), or its ``metrics.json`` cannot be read or is not
            one ``judge-eval score`` writes: named by the run as given (compare takes several), the file and, where
            the schema check knows it, the field, with the way to rewrite it.
    """
    given, folder = str(folder), Path(folder)
    if folder.is_file():  # "score the run first: --out folder/metrics.json" would be no advice
        raise ValueError(f"{folder}: a file, not a folder; compare takes run folders written by `judge-eval score`, "
                         "not the files in them")
    items, metrics_path = folder / "items.parquet", folder / "metrics.json"
    written = _read_metrics(metrics_path, given) if metrics_path.exists() else None
    if written is not None and written.get("kind") == "pairwise":
        # Scoring it again would not help: a pairwise run has no per-item table to pair on.
        raise ValueError(f"{folder}: a pairwise run; compare pairs pointwise runs item by item. Pairwise runs' "
                         "figures (agreement, position consistency) are side by side in their metrics.json and "
                         "report.md")
    absent = [path.name for path in (items, metrics_path) if not path.exists()]
    if absent and (folder / "compare.json").exists():  # "score the run first" would not help
        raise FileNotFoundError(f"{folder}: a folder `judge-eval compare` wrote (compare.json), not a scored run; give "
                                "the runs it compared, each a folder `judge-eval score` wrote")
    if absent:
        # score reads a run folder's data from its run.json; a folder without one (predictions made elsewhere)
        # needs --data, or the command shown would fail at once
        data = "" if (folder / "run.json").exists() else " --data <the data it was judged on>"
        raise FileNotFoundError(
            f"{folder}: no {' or '.join(absent)}; score the run first: "
            f"judge-eval score --predictions {folder}{data} --out {folder}"
        )
    try:
        table, extra = item_table.read_table(items)
    except ValueError as err:  # damaged, cut short or another tool's: the run's score writes it anew
        raise ValueError(f"{err}; {_score_again(given, written.get('predictions'))}") from None
    _refuse_unscorable_judge_scores(items, table, _score_again(given, written.get("predictions")))
    # Optional for read_table (a table of another tool's or an older writer's), but what every pairing reads
    lacking = [name for name in _PAIRED_COLUMNS if name not in extra]
    if lacking:
        raise ValueError(f"{items}: no column {', '.join(lacking)} (compare pairs on it); "
                         f"{_score_again(given, written.get('predictions'))}")
    try:
        result = Metrics.from_json(written)
    except JsonRecordError as err:  # alone it said "metrics.json: Cell.mae ...": not which run, nor which cell
        at = f"{err.field}: " if err.field else ""
        raise ValueError(f"{given}: {metrics_path.name}: {at}{err.problem}; "
                         f"{_score_again(given, written.get('predictions'))}") from None
    return ScoredRun(str(folder), result.judge or folder.name, result, table, extra)


def _refuse_unscorable_judge_scores(items: Path, table: item_table.ItemTable, again: str) -> None:
    """Refuse a status score does not write (``item_table.STATUSES``), and a judge_score no judge gives: an infinity
    (in any row), a NaN in a row whose status is ``ok``, or a score in a row whose status is not (score writes a
    score for exactly the items the judge scored). An edited table's infinity was left out of every pairing, an
    all-NaN column compared nothing, and a score kept on a row marked parse_failed was paired as a score, without a
    word (exit 0).

    Raises:
        ValueError: naming the file, the column and the first such row (its index and id), with ``again``.
    """
    unknown = ~np.isin(table.status.astype(str), item_table.STATUSES)
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise ValueError(f"{items}: column status: {row_place(RowIndex(row))} (id {table.ids[row]!r}): "
                         f"{table.status[row]!r} is not one of {', '.join(item_table.STATUSES)}; {again}")
    ok = table.status == "ok"
    bad = np.isinf(table.judge) | (np.isnan(table.judge) & ok) | (np.isfinite(table.judge) & ~ok)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value, status = float(table.judge[row]), table.status[row]
        why = ("is not a score" if math.isinf(value) else f"(no score) in a row whose status is {status!r}"
               if math.isnan(value) else f"is a score in a row whose status is {status!r} (not scored)")
        raise ValueError(f"{items}: column judge_score: {row_place(RowIndex(row))} (id {table.ids[row]!r}): {value} "
                         f"{why}; judge-eval score writes a finite score for every scored item; {again}")


def _read_metrics(path: Path, run: str) -> dict:
    """A run's metrics.json, as an object; ``run`` is the folder as the user gave it.

    Raises:
        ValueError: naming the run, the file and what is wrong with it (truncated, nested past what json.loads reads,
            not UTF-8, not an object): a bare json error named no file, and deep nesting was a RecursionError.
    """
    where, again = f"{run}: {path.name}", _score_again(run)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except UnicodeDecodeError as err:  # a ValueError, but no JSON error: unreadable_json would misname it
        raise ValueError(f"{where}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at byte {err.start}); "
                         f"{again}") from None
    except JSON_REFUSALS as err:
        raise ValueError(f"{where}: {unreadable_json(err, whole_file=True)}; {again}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {value_words(data)}; {again}")
    if problem := lone_surrogate_problem(text, data):  # a bare UnicodeEncodeError once the comparison was written
        raise ValueError(f"{where}: {problem}; {again}")
    return data


def _score_again(run: str, predictions: object = None) -> str:
    """The command that writes a scored folder anew: from the folder itself when it holds its predictions, else from
    the predictions its metrics.json names, where they still are (a run scored with ``--out`` elsewhere has none of
    its own)."""
    source = run
    if (not (Path(run) / "predictions.jsonl").exists() and isinstance(predictions, str) and predictions
            and Path(predictions).exists()):
        source = predictions
    return f"score the run again: judge-eval score --predictions {source} --out {run}"


def _verdict(delta: float, p_value: float, metric: str, alpha: float, n_units: int | None = None,
             n_resamples: int | None = None) -> str:
    """better / worse / n.s. / "—" (undefined); ``n_units``: the paired units the bootstrap resampled (items or
    instructions), "n.s." under ``MIN_PAIRED`` of them whatever the p-value; ``n_resamples``: the resamples the
    p-value is a share of, "n.s." under ``paired_resamples_to_call(alpha)`` of them (module docstring)."""
    if not math.isfinite(delta) or not math.isfinite(p_value):
        return "—"
    if p_value >= alpha or delta == 0 or _too_few(n_units, n_resamples, alpha):
        return "n.s."
    better = delta < 0 if _LOWER_IS_BETTER[metric] else delta > 0
    return "better" if better else "worse"


def _reference(run: ScoredRun, metric: str) -> np.ndarray:
    """The reference ``metric`` was computed against in ``run``'s own metrics: MAE's, or the correlations' own when
    the run was scored with ``--spearman-target`` apart from MAE's target.

    Raises:
        ValueError: a run scored with a Spearman target of its own before items.parquet kept that reference.
    """
    if metric == "spearman" and run.metrics.settings.spearman_target not in (None, run.metrics.target):
        if "spearman_reference" not in run.extra:
            raise ValueError(f"{run.folder}: scored with --spearman-target {run.metrics.settings.spearman_target} "
                             "by a version whose items.parquet lacks that reference; score it again to compare")
        return run.extra["spearman_reference"]
    return run.extra["reference"]


#: Why a cell whose two sides are against different references is not called (``Paired.why_no_call``).
TARGETS_DIFFER = "targets differ"


def _apart(base: Metrics, other: Metrics) -> frozenset[str]:
    """The metrics whose reference differs between the two runs: MAE where their ``--target`` does, Spearman where
    their correlations' (``spearman_target``) does. Identical scores differ there, so such a delta is shown but not
    called, nor entered into a table's Holm family: the difference is the references' as much as the judges'."""
    return frozenset(metric for metric, reference in _REFERENCE_OF.items() if reference(base) != reference(other))


def _paired(base: ScoredRun, other: ScoredRun, index_a: np.ndarray, index_b: np.ndarray, metric: str, key: str,
            n_boot: int, seed: int, alpha: float, clusters: np.ndarray | None = None,
            apart: frozenset[str] = frozenset()) -> Paired:
    """One metric of both runs on the paired items, called at ``alpha``; not called (verdict "—", with
    ``TARGETS_DIFFER``) where it is in ``apart`` (``_apart``) and its delta could otherwise be called: a cell under
    ``MIN_PAIRED`` paired units, or without a delta, reads as it would against one reference (n.s., too few to call;
    "—"), since the targets are not what keeps it from a call."""
    ta, tb = base.table, other.table
    if metric == "vc_judge":
        xa, ya = base.extra["vc_judge"][index_a], base.extra["vc_judge"][index_a]
        xb, yb = other.extra["vc_judge"][index_b], other.extra["vc_judge"][index_b]
    else:
        xa, ya = ta.judge[index_a], _reference(base, metric)[index_a]
        xb, yb = tb.judge[index_b], _reference(other, metric)[index_b]
    cells = None if clusters is None else clusters[index_a]
    # the interval at 1 - alpha: a call at alpha beside a 95 % interval that spans 0 would contradict it
    found = bootstrap.paired_bootstrap(xa, ya, xb, yb, _STAT[metric], n_boot, bootstrap.cell_rng(seed, key),
                                       alpha=alpha, clusters=cells)
    # the units the bootstrap resampled: the paired items, or their instructions (what the minimum counts)
    paired = np.isfinite(xa) & np.isfinite(ya) & np.isfinite(xb) & np.isfinite(yb)
    units = found["n"] if cells is None else len(np.unique(cells[paired]))
    if metric in apart and units >= MIN_PAIRED and math.isfinite(found["delta"]):
        return Paired.of(found, "—", units, why_no_call=TARGETS_DIFFER)
    call = _verdict(found["delta"], found["p_value"], metric, alpha, units, found.get("n_resamples"))
    return Paired.of(found, call, units)


#: The item table's statuses of a failed verdict: it did not parse, or its request failed.
_FAILED = ("parse_failed", "request_failed")


def _paired_failures(status_a: np.ndarray, status_b: np.ndarray, alpha: float) -> PairedFailures:
    """The two runs' failed verdicts on the items both have a prediction for (``item_table.STATUSES``: not
    "missing"), aligned item for item, compared by McNemar's exact test (statsmodels' ``mcnemar``, ``exact=True``: a
    two-sided binomial test of the items only the baseline failed on against those only the run failed on; McNemar,
    Psychometrika 12, 1947): a paired test, as the items are the same. No item that only one run failed on is p = 1."""
    from statsmodels.stats.contingency_tables import mcnemar

    both = (status_a != "missing") & (status_b != "missing")
    failed_a, failed_b = np.isin(status_a[both], _FAILED), np.isin(status_b[both], _FAILED)
    only_a, only_b = int((failed_a & ~failed_b).sum()), int((failed_b & ~failed_a).sum())
    n_both_failed = int((failed_a & failed_b).sum())
    p_value = float(mcnemar([[n_both_failed, only_a], [only_b, int(both.sum()) - n_both_failed - only_a - only_b]],
                            exact=True).pvalue)
    verdict = "n.s." if p_value >= alpha or only_a == only_b else ("better" if only_b < only_a else "worse")
    return PairedFailures(int(both.sum()), int(failed_a.sum()), int(failed_b.sum()), only_a, only_b, p_value, verdict)


def _too_few(n_units: int | None, n_resamples: int | None, alpha: float) -> bool:
    """Too few paired units (under ``MIN_PAIRED``) or resamples (under ``paired_resamples_to_call``) to call any
    cell."""
    return (n_units is not None and n_units < MIN_PAIRED) or (
        n_resamples is not None and n_resamples < paired_resamples_to_call(alpha))


def _callable(p: Paired, alpha: float) -> bool:
    """Whether a cell may be called at all: a p-value, enough paired units and resamples (``_verdict``), and one
    reference on both sides (no ``why_no_call``)."""
    return (p.why_no_call is None and math.isfinite(p.delta) and math.isfinite(p.p_value)
            and not _too_few(p.n_units, p.n_resamples, alpha))


def _holm(table: dict[str, dict[str, Paired]], alpha: float) -> dict[str, dict[str, Paired]]:
    """A table's cells (label -> metric -> ``Paired``) with their calls read against Holm-adjusted p-values: per
    metric, Holm's step-down method over the table's cells that may be called (``_callable``), the raw p-value kept
    beside the adjusted one (``Paired.p_holm``). At alpha 0.05, a table of 66 criteria compared for two judges of
    equal quality expects 66 x 0.05 = 3.3 false calls on raw p-values; Holm keeps the chance of any false call among
    the table's cells of one metric at most alpha (each metric is its own family: a table of MAE, Spearman and VC
    columns may hold up to three false calls' worth of alpha), as ``judge-eval rank``'s leaderboard does for its pairs
    with Bonferroni. Cells too small to call are left out of the family: they are n.s. whatever their p-value, so no
    false call can come from them.

    A p-value estimated as 0 says only p < 2 / resamples (``paired_resamples_to_call``) and enters the adjustment as
    that bound: a call in a family of m cells then needs more than 2 m / alpha resamples (``resamples_for_family``),
    and an adjusted p that rests on such a bound is itself an upper bound (``holm_upper_bounds``)."""
    metric_names = sorted({metric for cells in table.values() for metric in cells})
    out = {label: dict(cells) for label, cells in table.items()}
    for metric in metric_names:
        family = [label for label, cells in table.items() if metric in cells and _callable(cells[metric], alpha)]
        if not family:
            continue
        cells = [table[label][metric] for label in family]
        raw = [_entered(p) for p in cells]
        adjusted = holm_adjusted_p(raw)
        for label, p, p_holm in zip(family, cells, adjusted):
            out[label][metric] = replace(p, p_holm=float(p_holm), verdict=_verdict(
                p.delta, float(p_holm), metric, alpha, p.n_units, p.n_resamples))
    return out


def _entered(p: Paired) -> float:
    """The p-value a cell enters Holm's adjustment with: its raw p, or the bound 2 / resamples where it is below
    (an estimate of 0)."""
    return max(p.p_value, 2.0 / p.n_resamples if p.n_resamples else 0.0)


def holm_upper_bounds(table: dict[str, dict[str, Paired]]) -> set[tuple[str, str]]:
    """The cells of a table (label -> metric -> ``Paired``, as ``_holm`` adjusted it) whose Holm p is an upper bound,
    as ``(label, metric)``: its own raw p entered as the bound 2 / resamples, or the step-down's running maximum that
    gives its adjusted p was set by such a cell ranked before it (ties ranked bound first). The true p below the bound
    would make that adjusted p smaller, never larger, so the page writes it "Holm p ≤ x". In a family over several
    resample counts, also every cell whose adjusted p a bound could lower by moving ahead of it (marked
    conservatively: see below)."""
    out = set()
    for metric in sorted({metric for cells in table.values() for metric in cells}):
        family = [(label, cells[metric]) for label, cells in table.items()
                  if metric in cells and cells[metric].p_holm is not None]
        ranked = sorted(((_entered(p), p.p_value < _entered(p), label) for label, p in family),
                        key=lambda entry: (entry[0], not entry[1]))
        best, best_bound = -1.0, False
        for k, (entered, bound, label) in enumerate(ranked):
            term = min(1.0, (len(ranked) - k) * entered)
            if term > best or (term == best and bound):
                best, best_bound = term, bound or (term == best and best_bound)
            if bound or best_bound:
                out.add((label, metric))
        # Over one resample count no exact p lies below a bound (2 / n is the smallest non-zero share). Over several
        # (a Spearman or VC cell keeps only the resamples where it is defined) one may, and a bound's true p can then
        # move its cell ahead of it, cutting its multiplier: every cell ranked up to the last bound may drop, and so
        # may a later one whose running maximum is still set there; a later cell whose own term sets it cannot.
        bounds = [k for k, (_, bound, _) in enumerate(ranked) if bound]
        if bounds and len({p.n_resamples for _, p in family}) > 1:
            terms = [min(1.0, (len(ranked) - k) * entered) for k, (entered, _, _) in enumerate(ranked)]
            head, running = max(terms[:bounds[-1] + 1]), -1.0
            for k, (_, _, label) in enumerate(ranked):
                running = max(running, terms[k]) if k > bounds[-1] else running
                if k <= bounds[-1] or head >= running:
                    out.add((label, metric))
    return out


def fmt_p_bound(p_value: float) -> str:
    """An upper bound on a p-value as the tables write it after "≤": rounded up to 3 decimals, so the number
    printed is still at least the bound (0.0004 -> "0.001", never "0.000"; 0.0234 -> "0.024")."""
    return f"{math.ceil(round(p_value * 1000, 6)) / 1000:.3f}"


def holm_applied(result: Comparison) -> bool:
    """Whether some table cell of ``result`` carries a Holm-adjusted p (``Paired.p_holm``): a compare.json written
    before the adjustment has none, and its calls were made on the raw p-values, which its pages must not call
    Holm-adjusted."""
    return any(p.p_holm is not None for comp in result.comparisons for block in comp.splits.values()
               for grouping in ("model", "task_type", "criterion") for cells in block.by(grouping).values()
               for p in cells.values())


def compare(folders: list[str | Path], n_boot: int = 1000, seed: int = 0, alpha: float = 0.05,
            bootstrap_unit: str | None = None) -> Comparison:
    """Compare scored runs with the first one.

    Args:
        folders: two or more folders written by ``judge-eval score``.
        n_boot: paired bootstrap resamples.
        seed: bootstrap seed (per cell, see ``bootstrap.cell_rng``).
        alpha: significance level of the better/worse calls.
        bootstrap_unit: what a paired resample draws: ``item`` or ``instruction`` (every item of an instruction
            together, as ``item_table.evaluate``'s); the baseline's items.parquet says which items share one. None:
            ``instruction`` where any of the runs was scored with it (``settings.bootstrap_unit``), else ``item``:
            the runs hold the same items, so one run declaring them dependent declares them so for every run, and
            which run is the baseline does not change the unit.

    Returns:
        ``eval.scoring.comparison.Comparison`` (``compare.json``): per compared run and test the paired statistics of
        the overall cell and of the cells by evaluated model, task type and criterion, the paired validity figures,
        and each run's own metrics.json.

    Raises:
        ValueError: fewer than two runs, or runs whose shared ids are different items (other expert scores or
            experts, answer length, criterion, task type or evaluated model: scored on different data), or
            ``instruction``
            resampling of a baseline whose items.parquet predates the instructions' keys.
    """
    if len(folders) < 2:
        raise ValueError("compare needs at least two scored runs")
    runs = [load_run(f) for f in folders]
    by_instruction = [r.folder for r in runs if r.metrics.settings.bootstrap_unit == "instruction"]
    if bootstrap_unit is None and by_instruction and runs[0].table.instruction_key is None:
        raise ValueError(f"{runs[0].folder}: its items.parquet does not say which items share an instruction (written "
                         f"by an older version), and {by_instruction[0]} was scored by instruction; score the baseline "
                         "again, or give --bootstrap-unit item to pair them as independent items")
    bootstrap_unit = bootstrap_unit or ("instruction" if by_instruction else "item")
    clusters = item_table.bootstrap_clusters(runs[0].table, bootstrap_unit, where=str(runs[0].folder))
    # two runs of one judge (say, two checkpoints' folders) are told apart by their folders
    for run, name in zip(runs, distinct_names([r.name for r in runs], [r.folder for r in runs])):
        run.name = name
    base = runs[0]
    comparisons = []
    for other in runs[1:]:
        ta, tb = base.table, other.table
        paired_base, paired_other = _on_one_vc_draw(base, other)
        common, index_a, index_b = np.intersect1d(ta.ids.astype(str), tb.ids.astype(str), assume_unique=True,
                                                  return_indices=True)
        if len(common) == 0:
            raise ValueError(f"{base.folder} and {other.folder} share no item ids")
        _refuse_other_items(base, other, index_a, index_b)
        both_predicted = (ta.status[index_a] != "missing") & (tb.status[index_b] != "missing")
        apart = _apart(base.metrics, other.metrics)
        splits: dict[str, SplitComparison] = {}
        for split in item_table.SPLITS:
            # "all" is the paper's two tests together, as in each run's own metrics: never the "unknown" items
            keep = _in_split(ta.split[index_a], split)
            if not keep.any() and not (_in_split(ta.split, split).any() or _in_split(tb.split, split).any()):
                continue  # neither run has the split: nothing to say of it
            # a split either run holds but none of whose items both hold: kept with no pairs, so that the headline
            # says the runs share no scored items there rather than dropping the split without a word
            ia, ib = index_a[keep], index_b[keep]
            key = _drawn_as(split, keep, ta.split[index_a], both_predicted)
            groups = {}
            for name, column in _GROUPS.items():
                labels = getattr(ta, column)[ia].astype(str)
                chosen = ("mae", "spearman", "vc_judge") if name != "criterion" else ("mae", "vc_judge")
                groups[f"by_{name}"] = _holm({
                    label: {m: _paired(paired_base, paired_other, ia[labels == label], ib[labels == label], m,
                                       f"{key}/{name}/{label}/{m}", n_boot, seed, alpha, clusters, apart)
                            for m in chosen}
                    for label in sorted(set(labels))
                }, alpha)
            splits[split] = SplitComparison(
                overall={m: _paired(paired_base, paired_other, ia, ib, m, f"{key}/overall/{m}", n_boot, seed, alpha,
                                    clusters, apart)
                         for m in ("mae", "spearman", "vc_judge")}, **groups,
                failures=_paired_failures(ta.status[ia], tb.status[ib], alpha))
        comparisons.append(RunComparison(other.name, other.folder, len(common), splits,
                                         _paired_validity(base, other, index_a, index_b, n_boot, seed, clusters,
                                                          alpha=alpha),
                                         first_only_baseline=_first_outside(ta, index_a),
                                         first_only_run=_first_outside(tb, index_b)))
    return Comparison(base.name, [r.name for r in runs], [r.folder for r in runs], alpha, n_boot, comparisons,
                      [r.metrics for r in runs], bootstrap_unit=bootstrap_unit, ci_level=1.0 - alpha)


def _first_outside(table: item_table.ItemTable, shared: np.ndarray) -> str | None:
    """The id of the first item of ``table`` (in its order) outside the rows ``shared``, None where there is none:
    what the headline names beside the count of a run's items the other run does not hold."""
    outside = np.ones(len(table), dtype=bool)
    outside[shared] = False
    return str(table.ids[outside.argmax()]) if outside.any() else None


#: What one item is beside its expert labels, as the item table holds it: a shared id whose answer (its length, the
#: one trace of its text an items.parquet keeps), criterion, task type or evaluated model differs is another item.
_SAME_ITEM = {"answer_chars": "answer length in characters", "criteria_name": "criterion",
              "task_type": "task type", "model_id": "evaluated model", "split": "test (zero_shot, standard or unknown)"}


def _refuse_other_items(base: ScoredRun, other: ScoredRun, index_a: np.ndarray, index_b: np.ndarray) -> None:
    """Refuse runs whose shared ids are not the same items: pairing a run on one revision of the data with a run on
    another compared two judges on different answers under one id, and called the difference the judges'.

    Raises:
        ValueError: the first thing that differs (the expert labels, their experts' ids, ``_SAME_ITEM``'s columns,
            the rubric's scale, then the texts judged, whose digest says nothing of what changed), with how many
            shared items it differs on and the first one's id and values.
    """
    ta, tb = base.table, other.table
    ea, eb = ta.experts[index_a], tb.experts[index_b]
    width = max(ea.shape[1], eb.shape[1])
    ea = np.pad(ea, ((0, 0), (0, width - ea.shape[1])), constant_values=np.nan)
    eb = np.pad(eb, ((0, 0), (0, width - eb.shape[1])), constant_values=np.nan)
    differ = np.flatnonzero(~((ea == eb) | (np.isnan(ea) & np.isnan(eb))).all(axis=1))
    if len(differ):
        shown = [_quoted_value([int(v) if float(v).is_integer() else float(v) for v in row[~np.isnan(row)]])
                 for row in (ea[differ[0]], eb[differ[0]])]
        _refuse(base, other, "the expert labels", differ, index_a, shown)
    _refuse_other_experts(base, other, index_a, index_b)
    for column, said in _SAME_ITEM.items():
        a, b = getattr(ta, column), getattr(tb, column)
        if a is None or b is None:  # an items.parquet written before the column: nothing to compare
            continue
        a, b = a[index_a], b[index_b]
        if column == "answer_chars":  # a length left null (a table another tool wrote) is not known to differ
            differ = np.flatnonzero((a != b) & ~np.isnan(a) & ~np.isnan(b))
        else:
            differ = np.flatnonzero(a.astype(str) != b.astype(str))
        if len(differ):
            # an item's test is the scorer's reading of the data, which a toolkit version may change (the
            # criteria-auto fallback's split): the same data scored by two versions can differ there
            hint = ("; or re-score both runs with the same toolkit version (the version that scored a run decides "
                    "an item's test)") if column == "split" else ""
            _refuse(base, other, f"the {said}", differ, index_a, [_quoted_value(v[differ[0]]) for v in (a, b)], hint)
    _refuse_other_scales(base, other, index_a, index_b)
    _refuse_other_texts(base, other, index_a, index_b)


def _refuse_other_texts(base: ScoredRun, other: ScoredRun, index_a: np.ndarray, index_b: np.ndarray) -> None:
    """Refuse runs whose shared ids were judged on other texts (items.parquet's ``text_key``, each prediction's
    ``content_key``: a digest of the instruction, reference answer, answer, criterion and rubric the judge was sent):
    an answer edited to another text of the same length, or a reworded instruction or rubric, between two revisions
    of the data asked the judges other questions. Compared on the items both runs have a key for: an item without a
    prediction in either is in no pair, and a table or prediction written before the key is compared on the rest."""
    keys_a, keys_b = base.table.text_key, other.table.text_key
    if keys_a is None or keys_b is None:
        return
    keys_a, keys_b = keys_a[index_a], keys_b[index_b]
    differ = np.flatnonzero(np.not_equal(keys_a, None) & np.not_equal(keys_b, None) & (keys_a != keys_b))
    if len(differ):
        shown = [f"content key {keys[differ[0]]!r}" for keys in (keys_a, keys_b)]
        _refuse(base, other, "the texts judged", differ, index_a, shown,
                "; the texts are the instruction, reference answer, answer, criterion and rubric the judge was sent")


def _refuse_other_experts(base: ScoredRun, other: ScoredRun, index_a: np.ndarray, index_b: np.ndarray) -> None:
    """Refuse runs whose shared items name other experts beside the same scores (``expert_ids``, parallel to the
    scores): the alternative annotator test and the paired rho read each expert's own items, and the paired figures
    take the baseline's ids for both runs, so the same scores given by another panel are another item's labels. A
    table that names no experts (the released POLLUX data, an items.parquet written before the ids were kept), or an
    item naming none (a data revision that added ids to some items), is not known to differ, as an optional column
    is not."""
    ids_a, ids_b = base.table.expert_ids, other.table.expert_ids
    if ids_a is None or ids_b is None:
        return
    ids_a, ids_b = ids_a[index_a], ids_b[index_b]
    width = max(ids_a.shape[1], ids_b.shape[1])
    ids_a, ids_b = (np.pad(ids, ((0, 0), (0, width - ids.shape[1])), constant_values=None) for ids in (ids_a, ids_b))
    named = np.not_equal(ids_a, None).any(axis=1) & np.not_equal(ids_b, None).any(axis=1)
    differ = np.flatnonzero(named & (ids_a != ids_b).any(axis=1))
    if len(differ):
        shown = [str([v for v in row if v is not None]) for row in (ids_a[differ[0]], ids_b[differ[0]])]
        _refuse(base, other, "the experts' ids", differ, index_a, shown)


def _refuse_other_scales(base: ScoredRun, other: ScoredRun, index_a: np.ndarray, index_b: np.ndarray) -> None:
    """Refuse runs whose shared ids have other rubric scales (items.parquet's ``scale_low`` / ``scale_high``): the
    judge was asked on another rubric, and every figure reads the item's ends (out of scale, the alt-test's levels,
    the ceiling's worst error). An end left unreadable (NaN) in either run is not known to differ, as an answer length
    left null; an items.parquet written before it kept the ends is compared on the rest."""
    ta, tb = base.table, other.table
    if ta.scale_low is None or ta.scale_high is None or tb.scale_low is None or tb.scale_high is None:
        return
    ends_a = np.column_stack([ta.scale_low[index_a], ta.scale_high[index_a]]).astype(float)
    ends_b = np.column_stack([tb.scale_low[index_b], tb.scale_high[index_b]]).astype(float)
    known = np.isfinite(ends_a).all(axis=1) & np.isfinite(ends_b).all(axis=1)
    differ = np.flatnonzero(known & (ends_a != ends_b).any(axis=1))
    if len(differ):
        shown = [f"{_quoted_value(ends[differ[0], 0])}..{_quoted_value(ends[differ[0], 1])}"
                 for ends in (ends_a, ends_b)]
        _refuse(base, other, "the rubric's scale", differ, index_a, shown)


def _refuse(base: ScoredRun, other: ScoredRun, what: str, differ: np.ndarray, index_a: np.ndarray,
            shown: list[str], hint: str = "") -> None:
    raise ValueError(
        f"{base.folder} and {other.folder} hold different items under the same ids: {what} differ"
        f"{'' if what.endswith(('labels', 'ids', 'judged')) else 's'} on {len(differ)} of the {len(index_a)} items "
        f"both hold (item {base.table.ids[index_a[differ[0]]]!r}: {shown[0]} in {base.folder}, {shown[1]} in "
        f"{other.folder}); score both against the same data file (judge-eval score --data){hint}")


def _quoted_value(value: Any) -> str:
    """An item table's value as a message quotes it: a count stored as a float as the integer it is, a list of
    scores as a list, text quoted."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value) if isinstance(value, list) else repr(str(value))


def _ci_level(result: Comparison) -> float:
    """The coverage of a comparison's paired intervals: 1 - alpha (0.95 in a compare.json written before it was
    kept, when every interval was drawn at 95 %)."""
    return result.ci_level if result.ci_level is not None else 0.95


def _vc_draws(metrics: Metrics) -> tuple[int, int]:
    """The draws a run's judge Verdict Confidence was scored with: its ``--seed`` and ``--vc-repeats``."""
    return metrics.settings.seed, metrics.settings.vc_repeats


def _on_one_vc_draw(base: ScoredRun, other: ScoredRun) -> tuple[ScoredRun, ScoredRun]:
    """The two runs as their VC is paired: as scored where both drew it alike, else with both runs' per-item judge VC
    drawn again from their items.parquet (the experts' scores and the judge's) under the baseline's ``--seed`` and
    ``--vc-repeats``. Each run's items.parquet holds the VC of its own draws, and an item's VC depends on the seed
    and the repeats as well as on the verdicts (``eval.scoring.metrics.verdict_confidence_judge``): paired as
    written, two runs of identical verdicts scored with two seeds differ by the draws alone, and a paired bootstrap
    over a few hundred items calls that difference better or worse. ``headline`` says when it drew them again."""
    if _vc_draws(base.metrics) == _vc_draws(other.metrics):
        return base, other
    seed, repeats = _vc_draws(base.metrics)

    def drawn_again(run: ScoredRun) -> ScoredRun:
        table = run.table
        vc = verdict_confidence_judge(table.experts, table.judge, repeats=repeats, seed=seed,
                                      keys=item_keys(table.ids))
        return replace(run, extra={**run.extra, "vc_judge": vc})

    return drawn_again(base), drawn_again(other)


def _drawn_as(split: str, keep: np.ndarray, splits: np.ndarray, predicted: np.ndarray) -> str:
    """The name a split's paired resamples are drawn under (``bootstrap.cell_rng``): "all" for a test that holds
    every item of "all" both runs predicted (``predicted``, aligned with ``keep`` and ``splits``: data without
    Zero-Shot items, or runs of one test's items only), so that one item set gets one interval and one call, as
    ``item_table.evaluate`` draws the runs' own; else the split's own."""
    # ``keep`` lies within "all"'s items, so equal counts are the same items
    return item_table.drawn_as_name(split, int((keep & predicted).sum()),
                                    int((_in_split(splits, "all") & predicted).sum()))


def _in_split(splits: np.ndarray, split: str) -> np.ndarray:
    """Which items of a table's ``split`` column belong to ``split`` ("all": the two tests, never "unknown")."""
    return splits != "unknown" if split == "all" else splits == split


def _ends_kept(table: item_table.ItemTable, index: np.ndarray) -> np.ndarray:
    """Where a regression head's value past an end is that end, as the section reads it: every item of a table that
    keeps its scale ends (``item_table.write_table``), since the section reads the judge against each item's ends,
    its own or inferred from the experts' (``eval.validity.section.alt_test_judge`` with ``rating_ends``); none of
    one written before it kept them, whose ends compare takes from the criterion cells (``_scale_ends``)."""
    kept = table.scale_low is not None and table.scale_high is not None
    return np.full(len(index), kept, dtype=bool)


def _readable(table: item_table.ItemTable, index: np.ndarray) -> np.ndarray | None:
    """Where the item's own scale is readable, so that a score off its ends is out of the paired leniency, as the
    section leaves it out (elsewhere the ends are the experts' observed range, and the score stays in); None for a
    table written before it kept its scale ends, whose ends compare takes from the criterion cells (``_scale_ends``)."""
    from eval.validity.section import readable_scales

    return None if table.scale_low is None or table.scale_high is None else readable_scales(table)[index]


def _scale_ends(table: item_table.ItemTable, index: np.ndarray, block, whole: tuple | None = None
                ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Each item's scale ends two ways: as they are, for the paired ceiling gap's ``worst`` failures (the end farther
    from the reference), so that it counts a failure as the section's ceiling does; and rounded out to whole levels,
    for the alt-test's levels under ``accuracy`` (``eval.validity.section.alt_test_judge`` takes the level a score
    rounds to only where it lies in the item's scale, else the score itself), so that the paired rho compares what
    the run's own section compared.

    The table's own ends, which items.parquet keeps (``item_table.write_table``), read by the shared rule
    (``eval.validity.scale_reading.reading_ends``) that the section and the confusion matrices read. An items.parquet
    written before it kept them takes its criterion's ends from the section's criterion cell, whose ``value_domain``
    spans the scales of its items (NaN: a criterion the section has not), rounded out as that rule rounds them
    (``rating_ends``). That is the item's own scale wherever a criterion has one scale; on a criterion whose items
    mix scales (two of the bundled sample's 37) a verdict outside the item's own scale but inside the widest counts
    as that level, where the section compares it as it is.

    ``whole``: ``reading_ends(table)`` where the caller read it already, so that one read serves every split (None:
    read here)."""
    from eval.validity.scale_reading import rating_ends, reading_ends

    if table.scale_low is not None and table.scale_high is not None:
        # where an item's own scale is unreadable, the ends its criterion's expert scores span, else the whole
        # table's, as the section took them: over the whole table, then the split's items (the split's own experts
        # can be one unanimous criterion, whose span would make every failure cost 0)
        _, ends, rating = whole if whole is not None else reading_ends(table)
        return (ends[0][index], ends[1][index]), (rating[0][index], rating[1][index])
    import pandas as pd

    codes, labels = pd.factorize(np.asarray(table.criteria_name[index], dtype=object).astype(str))
    ends = np.full((len(labels) + 1, 2), np.nan)  # the last row: code -1 (no label)
    for k, label in enumerate(labels):
        cell = block.by_criterion.get(label)
        if cell is not None and cell.value_domain:
            ends[k] = min(cell.value_domain), max(cell.value_domain)
    low, high = ends[codes, 0], ends[codes, 1]
    return (low, high), rating_ends((low, high))


def _left_out_by_section(run: ScoredRun) -> np.ndarray:
    """Per item of the run's table, whether its own validity section left it out of every figure: an item without a
    readable scale of a criterion a split's ``criteria_left_out`` names (``eval.validity.section.too_wide_to_rate``).

    Read from what the section wrote, not decided again: a run scored before that rule kept such items and wrote no
    ``criteria_left_out``, and a table without scale ends (items.parquet written before it kept them) came with such
    a section, so their paired figures keep the items as their sections did; a run scored when the rule still read a
    criterion without ends of its own against the table's range keeps out what its section kept out."""
    from eval.validity.section import readable_scales

    table = run.table
    out = np.zeros(len(table), dtype=bool)
    validity = run.metrics.validity
    named = {str(name) for block in (validity.splits.values() if validity else ())
             for name in (block.criteria_left_out or {})}
    if not named or table.scale_low is None or table.scale_high is None:
        return out
    for label, members in item_table.label_groups(table.criteria_name).items():
        if label in named:  # the section's own groups (``label_groups``), so a label is matched as it was named
            out[members] = True
    return out & ~readable_scales(table)


def _paired_validity(base: ScoredRun, other: ScoredRun, index_a: np.ndarray, index_b: np.ndarray, n_boot: int,
                     seed: int, clusters: np.ndarray | None = None, alpha: float = 0.05
                     ) -> dict[str, PairedValidity]:
    """Per split, rho, the ceiling gap and the leniency of the run against the baseline, paired
    (``eval.validity.paired``), with
    the baseline's alt-test settings and reference; empty when the baseline was scored without a validity section.

    The items are those both runs predicted: an item either run has no prediction for (status ``missing``, a run not
    finished) is left out, as each run's own section leaves it out, not scored as a failure; so is an item either
    run's own section left out of every figure (``_left_out_by_section``). A test whose every such item was left out
    gets, for each figure, why and which criteria (``LEFT_OUT_WHY``), not the reasons of an empty pairing (no tested
    expert, no leave-one-out reference). ``clusters``: per item of
    the baseline's table, the unit a paired resample draws whole (``bootstrap_unit``); None: items. The intervals
    are at 1 - ``alpha``, the level compare.json's ``ci_level`` names for every paired interval."""
    from eval.reports.names import shown_names
    from eval.validity.ceiling import measured
    from eval.validity.paired import paired_resamples, paired_validity
    from eval.validity.render import LEFT_OUT_WHY, counted
    from eval.validity.scale_reading import reading_ends

    validity = base.metrics.validity
    if not validity:
        return {}
    settings = validity.settings
    ta, tb = base.table, other.table
    predicted = (ta.status[index_a] != "missing") & (tb.status[index_b] != "missing")
    left_out = _left_out_by_section(base)[index_a] | _left_out_by_section(other)[index_b]
    # the whole table's ends, read once: each split indexes its own items in them (``_scale_ends``)
    whole = reading_ends(ta) if ta.scale_low is not None and ta.scale_high is not None else None
    out = {}
    for split, block in validity.splits.items():
        keep = ta.split[index_a] != "unknown" if split == "all" else ta.split[index_a] == split
        ia, ib = index_a[keep & predicted & ~left_out], index_b[keep & predicted & ~left_out]
        if not len(ia) and (keep & predicted & left_out).any():
            named = item_table.label_groups(ta.criteria_name[index_a[keep & predicted & left_out]])
            shown = shown_names(named)  # cut as the report's line cuts them: the names are the data's
            why = {"why": "every item of the test is of a criterion left out of the validity figures "
                          f"({LEFT_OUT_WHY}): "
                          + ", ".join(f"{shown[name]} ({counted(len(rows), 'item')})" for name, rows in named.items())}
            out[split] = PairedValidity.from_json({"n_items": 0, "n_boot": paired_resamples(n_boot, 1.0 - alpha),
                                                   "rho": why, "ceiling_gap": why, "leniency": why})
            continue
        # the alt-test's levels against the ends rounded out to whole levels (an inferred end at an expert's
        # half-point holds its whole level); the ceiling's failures against the ends themselves, as its ceiling
        # takes them
        (low, high), rating = _scale_ends(ta, ia, block, whole)
        drawn_as = _drawn_as(split, keep, ta.split[index_a], predicted)
        out[split] = PairedValidity.from_json(paired_validity(ta.judge[ia], tb.judge[ib], ta.experts[ia],
                                     ta.expert_ids[ia] if ta.expert_ids is not None else None,
                                     settings.target, settings.alt_test, n_boot=n_boot,
                                     rng=bootstrap.cell_rng(seed, f"{drawn_as}/validity"), level=1.0 - alpha,
                                     scale_low=low, scale_high=high, rating_low=rating[0], rating_high=rating[1],
                                     clusters=None if clusters is None else clusters[ia],
                                     # as the baseline's section counted failures (None: written before, drop)
                                     ceiling_failures=settings.ceiling_failures or "drop",
                                     # a regression head's value past a scale end read as that end, as each run's
                                     # own section reads it
                                     measured_a=measured(ta.score_source[ia]) & _ends_kept(ta, ia),
                                     measured_b=measured(tb.score_source[ib]) & _ends_kept(tb, ib),
                                     # the leniency's orientation: the baseline's criteria (the same items)
                                     best_low=None if ta.best_low is None else ta.best_low[ia],
                                     # off the ends is out of the leniency on a readable scale only, as in the section
                                     readable=_readable(ta, ia)))
    return out


def spearman_target(metrics: Metrics) -> str:
    """The reference a run's correlations are against: its ``--spearman-target``, or MAE's where it chose none
    (as ``item_table.evaluate`` resolves it; a metrics.json written before the option names none)."""
    return metrics.settings.spearman_target or metrics.target


#: The reference a run's metric is against, for each metric that has one: the experts' "mode" or "mean".
_REFERENCE_OF = {"mae": lambda metrics: metrics.target, "spearman": spearman_target}


def _references(result: Comparison, metric: str) -> dict[str, str]:
    """Each run's reference for ``metric`` (a key of ``_REFERENCE_OF``), by run name."""
    reference = _REFERENCE_OF[metric]
    return {name: reference(m) for name, m in zip(result.runs, result.metrics)}


def _spearman_targets(result: Comparison) -> dict[str, str]:
    """Each run's correlations' reference, by run name; empty when all runs share one (nothing to mark)."""
    targets = _references(result, "spearman")
    return targets if len(set(targets.values())) > 1 else {}


def headline(result: Comparison) -> list[str]:
    """One sentence per compared run and split, e.g. "On the Zero-Shot test, B's MAE is 0.052 lower than A's
    (delta -0.052, 95 % CI [-0.081, -0.024], p = 0.001, 412 paired items): better" (the interval's level 1 - alpha);
    first, for a run whose MAE
    has another reference than the baseline's (a regression judge's mean beside a verdict judge's mode), a sentence
    that says so, and one for a run whose Spearman has (``--spearman-target``), one per setting the runs were scored
    with apart (``_settings_apart``), one where either run holds items the other does not (``_holds_other_items``),
    and one where the runs' VC was drawn again under one seed and repeat count (``_on_one_vc_draw``); last, one per
    table whose Holm family is too large for the resamples drawn (``_families_too_large``). Under ``--n-boot 0`` a sentence says there are no intervals or
    calls, rather than showing empty ones.

    The VC sentence is read from the runs' settings, as ``compare`` decides the redraw: a compare.json written before
    compare drew VC again (nor adjusted by Holm; ``holm_applied`` tells that case) and read back with
    ``Comparison.from_json`` would have it said though its VC was paired as written. No command renders a
    compare.json again; compare.md and compare.html are written from the comparison just computed."""
    return [line for k in range(len(result.comparisons)) for line in comparison_headline(result, k)]


#: The overall calls a decision sentence reads, in its order, as it names them.
_DECIDED = (("mae", "MAE"), ("spearman", "Spearman"), ("vc_judge", "Verdict Confidence"))


def decision(result: Comparison, k: int) -> str:
    """The ``k``-th comparison in one sentence, first in compare.md, compare.html and the console: every overall
    call of its widest test (Zero-Shot + Standard where paired, else the one test the runs share) — MAE, Spearman,
    VC, and the failed verdicts' McNemar call — and the word they add up to. The sources compare judges by each
    metric alone and give no rule to combine them; this toolkit's (stated in docs/evaluation.md, "Comparing runs"):
    **better** where some call is better and none worse, **worse** the other way round, both named where the calls
    go both ways, and "no difference shown" where none is called. A Spearman delta against another reference than
    the baseline's (``--spearman-target``) is no judge's difference and is left out of the word, said so, and so is an
    MAE delta against another target (the experts' mode on one side, their mean on the other). It adds
    nothing the calls below do not hold, and reads them as they are made (each at alpha, not adjusted for one
    another)."""
    comp = result.comparisons[k]
    split = "all" if "all" in comp.splits else next(iter(comp.splits), None)
    if split is None:
        return f"Decision: {comp.run} and {result.baseline} share no test."
    block, where = comp.splits[split], f"Decision on the {SPLIT_TITLES[split]}"
    mae = block.overall["mae"]
    if not mae.n:
        # no delta to call, but the failures are called on the items both predicted (a judge failing on every
        # item shares none scored with the baseline, and is the one case that must not read "none")
        f = block.failures
        if f is None or f.verdict not in ("better", "worse"):
            return f"{where}: none; {comp.run} and {result.baseline} share no scored items there."
        return (f"{where}: {comp.run} is {f.verdict} than {result.baseline} (failed verdicts {f.verdict}: {f.b} of "
                f"the {f.n} items both have a prediction for against {f.a}; no item scored by both, so no MAE, "
                "Spearman or Verdict Confidence call)" + _unpredicted(result, k, split) + ".")
    # MAE against another target (the experts' mode on one side, their mean on the other: --target auto over a
    # seq2seq and a regression judge) is no judge's difference either: identical scores differ
    mae_targets = _references(result, "mae")
    mae_apart = mae_targets.get(comp.run) != mae_targets.get(result.baseline)
    mae_left = (f"MAE left out: the runs' targets differ ({result.baseline}: experts' "
                f"{mae_targets.get(result.baseline)}, {comp.run}: their {mae_targets.get(comp.run)})")
    if not result.n_boot:
        how = (f"equal for {comp.run} and {result.baseline}" if not mae.delta else
               f"{fmt(abs(mae.delta))} {'lower' if mae.delta < 0 else 'higher'} for {comp.run} than for "
               f"{result.baseline}")
        said = f"{mae_left}; {mae.n} items both scored" if mae_apart else f"MAE {how} on the {mae.n} items both scored"
        f = block.failures
        # the failures' McNemar call is an exact test, made without resamples (the headline says it): the one call
        # left, and the one that tells apart a judge failing on many items
        if f is not None and f.verdict in ("better", "worse"):
            return (f"{where}: {comp.run} is {f.verdict} than {result.baseline} (failed verdicts {f.verdict}: {f.b} of "
                    f"the {f.n} items both have a prediction for against {f.a}; no MAE, Spearman or Verdict "
                    f"Confidence call under --n-boot 0; {said})" + _unpredicted(result, k, split) + ".")
        # the failures' call is made all the same: an n.s. one is said, not read as no call at all
        calls = ("no calls (--n-boot 0)" if f is None else
                 f"no MAE, Spearman or Verdict Confidence call (--n-boot 0); failed verdicts {f.verdict}")
        return f"{where}: {calls}; {said}" + _unpredicted(result, k, split) + "."
    targets = _references(result, "spearman")
    apart = targets.get(comp.run) != targets.get(result.baseline)
    left_out = {"mae": mae_apart, "spearman": apart}
    cells = [(label, block.overall[metric]) for metric, label in _DECIDED
             if metric in block.overall and not left_out.get(metric)]
    # an n.s. that no p-value could have avoided (too few paired units or resamples) says so, not "no difference"
    calls = [(label, p.verdict + (" (too few to call)" if p.verdict == "n.s." and _too_few(
        p.n_units, p.n_resamples, result.alpha) else "")) for label, p in cells]
    if block.failures is not None:
        calls.append(("failed verdicts", block.failures.verdict))
    better = [label for label, verdict in calls if verdict == "better"]
    worse = [label for label, verdict in calls if verdict == "worse"]
    if better and worse:
        word = (f"{comp.run} is better on {_and(better)} and worse on {_and(worse)} than {result.baseline}")
    elif better or worse:
        word = f"{comp.run} is {'better' if better else 'worse'} than {result.baseline}"
    else:
        word = f"no difference between {comp.run} and {result.baseline} was shown"
    listed = ", ".join(f"{label} {'undefined' if verdict == '—' else verdict}" for label, verdict in calls)
    left = f"; {mae_left}" if mae_apart else ""
    left += "; Spearman left out: the runs' references differ" if apart else ""
    listed += "; " if listed else ""  # every metric left out, no failures' call: nothing listed
    return (f"{where}: {word} ({listed}{mae.n} items both scored, each call at alpha {result.alpha}{left})"
            + _unpredicted(result, k, split) + ".")


def _unpredicted(result: Comparison, k: int, split: str) -> str:
    """What a decision adds where either run has items of ``split`` without a prediction (an unfinished run): the
    calls are over the items both scored, and a run judged on a tenth of its data is not read as a whole one."""
    said = []
    for name, metrics in ((result.baseline, result.metrics[0]), (result.comparisons[k].run, result.metrics[k + 1])):
        cell = metrics.splits.get(split)
        if cell is not None and cell.overall.n_missing:
            said.append(f"{name} has no prediction for {cell.overall.n_missing} of its "
                        f"{cell.overall.n + cell.overall.n_missing} items")
    return "; " + " and ".join(said) if said else ""


def _and(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def comparison_headline(result: Comparison, k: int) -> list[str]:
    """``headline``'s sentences of the ``k``-th comparison (its run against the baseline), which compare.html shows
    under that comparison's heading."""
    lines = []
    needed = paired_resamples_to_call(result.alpha)
    targets, correlated = _references(result, "mae"), _references(result, "spearman")
    comp, own = result.comparisons[k], result.metrics[k + 1]
    mine, theirs = targets.get(comp.run), targets.get(result.baseline)
    if mine and theirs and mine != theirs:
        lines.append(f"{comp.run}'s MAE is against the experts' {mine}, {result.baseline}'s against their "
                     f"{theirs} (each judge's own reference): the deltas set the two side by side, on the items "
                     "where both are defined.")
    # Each run's Spearman is paired against its own reference, as its own metrics.json reports it (the MAE
    # case's choice): two references then differ even for identical scores, which the reader must be told.
    mine, theirs = correlated.get(comp.run), correlated.get(result.baseline)
    if mine and theirs and mine != theirs:
        lines.append(f"{comp.run}'s Spearman is against the experts' {mine}, {result.baseline}'s against their "
                     f"{theirs} (--spearman-target): a Spearman delta mixes the two references with the judges, "
                     "and identical scores would differ; score both runs with one --spearman-target to compare "
                     "their correlations.")
    lines += _settings_apart(comp, own, result)
    if _holds_other_items(comp, own, result):
        lines.append(f"{comp.run} and {result.baseline} do not hold the same items: the pairs are drawn from the "
                     f"{comp.n_common} both hold" + _outside(comp, own, result) + "; each run's own figures are over "
                     "all of its items.")
    mine, theirs = _vc_draws(own), _vc_draws(result.metrics[0])
    if mine != theirs:
        lines.append(f"{comp.run}'s Verdict Confidence was scored with --seed {mine[0]} --vc-repeats {mine[1]}, "
                     f"{result.baseline}'s with --seed {theirs[0]} --vc-repeats {theirs[1]}: the paired VC draws "
                     f"both again under the baseline's (seed {theirs[0]}, {theirs[1]} repeats), so that its delta "
                     "is the judges' and not the draws'; each run's own VC (its metrics.json) is of its own draws.")
    for split in item_table.SPLITS:
        block = comp.splits.get(split)
        if block is None:
            continue
        p = block.overall["mae"]
        # the failures' own call, an exact test: said whatever the MAE's sentence can say (no shared scored item,
        # no resamples), where it matters most
        called = _failures_called(comp, result, split, p.verdict if p.n and result.n_boot else "")
        if not p.n:
            # where both hold the same items, how many lie outside (0 and 0) says nothing: none was scored by both
            why = (_outside(comp, own, result) if _holds_other_items(comp, own, result)
                   else f" (both hold the same {comp.n_common} items; {_why_none_paired(block.failures)})")
            lines.append(f"On the {SPLIT_TITLES[split]}, {comp.run} and {result.baseline} share no scored items{why}.")
            lines += [called] if called else []
            continue
        # where the failures' own sentence follows, it gives their counts, once
        failures = "" if called else _failures(comp, own, result, split, p.n)
        delta = p.delta or 0.0
        # what the minimum counted: instructions when they were resampled (n_units), else the paired items
        units = p.n_units if p.n_units is not None else p.n
        unit = "items" if units == p.n else "instructions"
        how = "equal to" if delta == 0 else f"{fmt(abs(delta))} {'lower' if delta < 0 else 'higher'} than"
        if not result.n_boot:  # no resample drawn: empty interval and p-value slots would read as missing data
            lines.append(f"On the {SPLIT_TITLES[split]}, {comp.run}'s MAE is {how} {result.baseline}'s "
                         f"(delta {fmt_delta(delta)}, {p.n} paired items): {_NO_BOOT}{failures}")
            lines += [called] if called else []
            continue
        lines.append(
            f"On the {SPLIT_TITLES[split]}, {comp.run}'s MAE is {how} {result.baseline}'s "
            f"(delta {fmt_delta(delta)}, {ci_percent(_ci_level(result))} % CI [{fmt(p.ci[0])}, {fmt(p.ci[1])}], "
            f"{p_phrase(p.p_value, p.resamples(result.n_boot))}, "
            f"{p.n} paired items): " + (f"not called: {p.why_no_call}" if p.why_no_call else p.verdict)
            + (f" (under {MIN_PAIRED} paired {unit}: too few to call)" if p.verdict == "n.s." and units < MIN_PAIRED
               else "")
            + (f" (under {needed} resamples: too few to call at alpha {result.alpha})"
               if p.verdict == "n.s." and p.n_resamples is not None and p.n_resamples < needed else "")
            + failures
        )
        lines += [called] if called else []
    lines += _families_too_large(comp, result)
    return lines


def _families_too_large(comp: RunComparison, result: Comparison) -> list[str]:
    """A sentence per grouping whose Holm family is too large for the resamples drawn: a raw p of 0 enters as
    2 / resamples, so a table of m callable cells can call none unless there are more than 2 m / alpha resamples
    (``resamples_for_family``) — said, not left for the reader to find among its n.s. rows. A family of one cell is
    never too large: a cell is callable only from ``paired_resamples_to_call`` resamples, that family's bound."""
    if not result.n_boot:
        return []
    out = []
    for grouping, title in (("model", "evaluated model"), ("task_type", "task type"), ("criterion", "criterion")):
        # A cell's p is a share of the resamples where it is defined (a Spearman or VC cell may keep fewer than
        # --n-boot), so a family is measured against its fewest.
        families: dict[tuple[str, str], list[int]] = {}
        for split, block in comp.splits.items():
            for cells in block.by(grouping).values():
                for metric, p in cells.items():
                    if p.p_holm is not None:
                        families.setdefault((split, metric), []).append(p.resamples(result.n_boot))
        short = [(len(counts), min(counts)) for counts in families.values()
                 if min(counts) < resamples_for_family(len(counts), result.alpha)]
        if short:
            largest = max(m for m, _ in short)
            fewest = min(n for m, n in short if m == largest)
            needed = resamples_for_family(largest, result.alpha)
            cells = "1 cell" if largest == 1 else f"up to {largest} cells"
            fewer = f" (as few as {fewest} where a cell's metric is defined)" if fewest < result.n_boot else ""
            out.append(f"{comp.run} vs {result.baseline}: a table by {title} holds {cells} to call, which Holm's "
                       f"adjustment can call only with at least {needed} resamples (more than 2 m / alpha); with "
                       f"--n-boot {result.n_boot}{fewer} a cell whose resamples all agree may still read n.s. there.")
    return out


def _failures(comp: RunComparison, own: Metrics, result: Comparison, split: str, n_paired: int) -> str:
    """What a headline adds where the two runs failed on different numbers of items of ``split``: a paired delta
    reads only the items both scored, so a judge that fails on most items can be "better" on the few it answered,
    which the call alone would hide."""
    cells = [m.splits.get(split) for m in (own, result.metrics[0])]
    if not all(cells):
        return ""
    run, base = (c.overall for c in cells)
    if run.n_failed == base.n_failed:
        return ""
    return (f"; {comp.run} failed on {run.n_failed} of {run.n}, {result.baseline} on {base.n_failed} of "
            f"{base.n}: paired on the {n_paired} both scored")


def _why_none_paired(failures: PairedFailures | None) -> str:
    """Why a split's paired MAE has no item, where both runs hold its items: no verdict in both runs, or verdicts in
    both on items without a reference (experts with no unique mode, or no expert score), which "none has a score in
    both runs" would misstate: both judges scored them."""
    judged = 0 if failures is None else failures.n - failures.a - failures.only_b  # neither run failed on them
    if judged == 0:
        return "none of this split's has a score in both runs"
    return (f"both judges gave a verdict on {judged} of this split's items, none of which has a reference: their "
            "experts have no unique mode, or no expert scored them")


def _failures_called(comp: RunComparison, result: Comparison, split: str, mae_verdict: str) -> str:
    """The sentence a headline adds where the runs' failed verdicts differ in ``split`` by more than chance
    (``PairedFailures``' call): how many each failed on among the items both predicted, the test, and, where the
    MAE's call went the other way, that a judge failing on more items is not shown better by its MAE over the rest.
    Empty where the failures are not called or a compare.json from before holds none."""
    block = comp.splits.get(split)
    f = block.failures if block is not None else None
    if f is None or f.verdict not in ("better", "worse"):
        return ""
    more, fewer = (comp.run, result.baseline) if f.verdict == "worse" else (result.baseline, comp.run)
    said = (f"On the {SPLIT_TITLES[split]}, {more} fails on more items than {fewer}: of the {f.n} items both have a "
            f"prediction for, {comp.run} failed on {f.b} and {result.baseline} on {f.a}, {f.only_b} failed by "
            f"{comp.run} only and {f.only_a} by {result.baseline} only (McNemar's exact test, "
            f"{'p < 0.001' if f.p_value < 0.001 else f'p = {f.p_value:.3f}'}): {f.verdict}.")
    if mae_verdict in ("better", "worse") and mae_verdict != f.verdict:
        said += (f" {comp.run}'s MAE call above ({mae_verdict}) is over the items both scored only: a judge that "
                 "fails on more items is not shown the better judge by its MAE on the rest.")
    return said


def _totals(own: Metrics, result: Comparison) -> list[int | None]:
    """The baseline's and the run's items, from each one's own counts (items with a prediction and without); None
    for a run whose metrics.json has no overall cell to count them from."""
    totals = []
    for m in (result.metrics[0], own):
        cells = [m.splits[s].overall for s in ("all", "unknown") if s in m.splits]
        totals.append(sum(c.n + (c.n_missing or 0) for c in cells) if cells else None)
    return totals


def _holds_other_items(comp: RunComparison, own: Metrics, result: Comparison) -> bool:
    """Whether either run holds items the other does not (a run of 200 items beside one of 40 of them): the pairs
    then cover only the shared ones, while each run's own figures cover all of its own."""
    return any(total is not None and comp.n_common < total for total in _totals(own, result))


def _outside(comp: RunComparison, own: Metrics, result: Comparison) -> str:
    """How many of each run's items lie outside the ``n_common`` both runs hold (the items the pairs are drawn
    from), from each run's own counts (``_totals``), and the first of them in that run's table where there are any:
    where the runs hold partly different items, and where two runs share no scored items of a split, whether they
    were judged on other items or did not score the same ones."""
    totals = _totals(own, result)
    if None in totals:
        return ""
    base, run = (total - comp.n_common for total in totals)

    def first(count: int, item: str | None) -> str:
        return f", the first '{item}'" if count and item is not None else ""

    return (f" ({result.baseline}: {base} of its {totals[0]} items outside the {comp.n_common} both runs hold"
            f"{first(base, comp.first_only_baseline)}; {comp.run}: {run} of its {totals[1]}"
            f"{first(run, comp.first_only_run)})")


def _settings_apart(comp: RunComparison, own: Metrics, result: Comparison) -> list[str]:
    """A sentence where the two runs were scored with different settings that the pairing or the side-by-side
    figures read: ``--clip-regression`` (a regression head's scores clipped to the scale in one run, raw in the
    other: the paired MAE then measures the clipping as well as the judges), ``--judge-minus-one`` (a judge's ``-1``
    off its scale scored in one run, failed in the other; said where either run has one) and how each run's own
    intervals were drawn (``--bootstrap-unit``, ``--n-boot``, the interval's level: "Each run on its own items" sets
    them side by side), and the validity settings ω, ρ and the ceiling gap depend on (``_validity_apart``). A setting
    an older metrics.json lacks is not compared, except the resampled unit (items then), the ceiling's failures (drop
    then, as the paired gap reads it) and the judge's ``-1`` (scored then)."""
    mine, theirs = own.settings, result.metrics[0].settings
    lines = []
    # the option changes nothing where neither run holds a regression head's score (a verdict judge's runs)
    from_head = any(m.notes is not None and m.notes.n_regression_scores for m in (own, result.metrics[0]))

    def clipping(setting: str) -> str:
        return ("with --clip-regression (a regression head's scores clipped to their scale)" if setting == "clipped"
                else "without --clip-regression (a regression head's scores as the head gave them)")

    if from_head and None not in (mine.regression_scores, theirs.regression_scores) and \
            mine.regression_scores != theirs.regression_scores:
        lines.append(f"{comp.run} was scored {clipping(mine.regression_scores)}, {result.baseline} "
                     f"{clipping(theirs.regression_scores)}: the MAE deltas measure the clipping as well as the "
                     "judges; score both runs alike to compare the judges alone.")

    minus_one = [s.judge_minus_one or "score" for s in (mine, theirs)]  # absent: written before the option, scored
    if minus_one[0] != minus_one[1] and any(_minus_ones(m) != 0 for m in (own, result.metrics[0])):
        lines.append(f"{comp.run} was scored with --judge-minus-one {minus_one[0]}, {result.baseline} with "
                     f"--judge-minus-one {minus_one[1]} (a judge's -1 on a scale without it scored as out of scale, or "
                     "counted as a failed verdict): the MAE, Spearman and failure deltas measure that choice as well "
                     "as the judges; score both runs alike to compare the judges alone.")

    def drawn(s) -> str:
        unit = "instructions" if s.bootstrap_unit == "instruction" else "items"
        return f"{s.n_boot} resamples of {unit} at {ci_percent(s.ci_level)} %"

    if drawn(mine) != drawn(theirs):
        lines.append(f"{comp.run}'s own intervals were drawn from {drawn(mine)}, {result.baseline}'s from "
                     f"{drawn(theirs)} (its --n-boot, --bootstrap-unit, level): under \"Each run on its own items\" "
                     "their widths differ by that as well as by the judges; the paired intervals are this "
                     "comparison's own.")
    return lines + _validity_apart(comp, own, result)


def _minus_ones(metrics: Metrics) -> int | None:
    """A run's judge ``-1``s on a scale without it, scored or failed (``--judge-minus-one``), over all its items as a
    failed run's note counts them: "all" holds the two tests alone, so items of an unknown task type are added from
    their own split. None: not counted (a metrics.json written before the count)."""
    if metrics.notes is not None and metrics.notes.n_minus_one_failed:
        return metrics.notes.n_minus_one_failed
    counts = [metrics.splits[split].overall.n_out_of_scale_minus_one for split in ("all", "unknown")
              if split in metrics.splits]
    return None if not counts or None in counts else sum(counts)


#: The validity settings ω, ρ and the ceiling gap and verdict depend on, as compare.md names them: (name, read off a
#: section's settings). Two runs apart on any of them set side-by-side figures of different tests.
_VALIDITY_SETTINGS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("alt-test ε", lambda s: s.alt_test.epsilon),
    ("alt-test q", lambda s: s.alt_test.q),
    ("alt-test scoring", lambda s: s.alt_test.scoring),
    ("alt-test failures", lambda s: s.alt_test.failures),
    ("alt-test minimum items per expert", lambda s: s.alt_test.min_items_per_expert),
    ("alt-test minimum experts per item", lambda s: s.alt_test.min_experts_per_item),
    ("alt-test minimum tested experts for a verdict", lambda s: s.alt_test.min_experts_tested),
    ("ceiling failures", lambda s: s.ceiling_failures or "drop"),  # absent: written before the setting, drop
    # absent: written before the margin, when "inside" meant an interval reaching 0 (eval.validity.ceiling)
    ("ceiling margin", lambda s: "none (interval reaches 0)" if s.ceiling_margin is None else s.ceiling_margin),
)


def _validity_apart(comp: RunComparison, own: Metrics, result: Comparison) -> list[str]:
    """A sentence naming each validity setting (``_VALIDITY_SETTINGS``) the two runs' sections were computed with
    apart, with both values: ω and ρ are the alt-test's at its ε, q, scoring and failures rule, and the ceiling gap
    counts failures by ``ceiling_failures``, so the validity figures side by side differ by those as well as by the
    judges. The paired ρ and ceiling gap take the baseline's settings for both runs (``_paired_validity``)."""
    base = result.metrics[0].validity
    if not own.validity or not base:
        return []
    apart = [f"{name} {read(own.validity.settings)} in {comp.run}, {read(base.settings)} in {result.baseline}"
             for name, read in _VALIDITY_SETTINGS if read(own.validity.settings) != read(base.settings)]
    if not apart:
        return []
    return [f"{comp.run}'s validity section was computed with other settings than {result.baseline}'s ("
            + "; ".join(apart) + "): ω, ρ and the ceiling gap side by side differ by that as well as by the judges; "
            "the paired ρ and ceiling gap read both runs with the baseline's."]


def _cell(p: Paired, n_boot: int, holm: bool = False, bound: bool = False) -> list[str]:
    """A paired row's cells; with ``holm``, the Holm-adjusted p-value after the raw one ("—" where it has none),
    "≤" before it where it is an upper bound (``bound``: ``holm_upper_bounds``)."""
    adjusted = [("≤ " + fmt_p_bound(p.p_holm) if bound else fmt_p(p.p_holm, p.resamples(n_boot)))
                if p.p_holm is not None else "—"] if holm else []
    # an interval with an undefined end (one paired item) is "—", as fmt_ci writes it and compare.html leaves it out
    ci = (f"[{fmt(p.ci[0])}, {fmt(p.ci[1])}]" if all(math.isfinite(end) for end in p.ci) else "—")
    return [fmt(p.a), fmt(p.b), fmt_delta(p.delta), ci,
            fmt_p(p.p_value, p.resamples(n_boot)), *adjusted, _call(p), str(p.n)]


def _call(p: Paired) -> str:
    """A paired row's call, with why where the cell was not called (``Paired.why_no_call``)."""
    return f"{p.verdict} ({p.why_no_call})" if p.why_no_call else p.verdict


def _side_by_side(result: Comparison) -> list[str]:
    """Paper-style tables (POLLUX Tables 10-18): rows are evaluated models / task types / criteria, one column per
    judge, each on its own scored items."""
    from eval.reports.report import GROUP_TITLES, markdown_table

    levels = {m.settings.ci_level for m in result.metrics}
    level = f"{ci_percent(levels.pop())} %" if len(levels) == 1 else "its own level's"
    out: list[str] = []
    for split in item_table.SPLITS:
        blocks = [m.splits.get(split) for m in result.metrics]
        if not any(blocks):
            continue
        for name, title in GROUP_TITLES.items():
            metric_names = ("mae", "spearman") if name != "criterion" else ("mae",)
            for metric in metric_names:
                labels = sorted({label for b in blocks if b for label in b.by(name)})
                rows = []
                for label in labels:
                    cells = [b.by(name).get(label) if b else None for b in blocks]
                    rows.append([md_text(label)] + [_with_interval(c, metric) if c else "—" for c in cells])
                if rows:
                    heading = "MAE" if metric == "mae" else "Spearman"
                    against = _against(result) if metric == "spearman" else ""
                    out += [f"### {SPLIT_TITLES[split]}: {heading} by {title}{against}", "",
                            markdown_table([title.capitalize()] + list(result.runs), rows), ""]
    # what a cell's numbers are, said once: a bracket alone does not say whose interval it is, nor n how few items
    lead = [f"Each run on its own scored items, by evaluated model, task type and criterion: the figure, its own "
            f"{level} bootstrap interval in brackets (where its --n-boot drew one) and n, the items it is over "
            "(Spearman: the pairs); the paired deltas are under each comparison below.", ""]
    return lead + out if out else []


def _against(result: Comparison) -> str:
    """What a Spearman heading adds when the runs' correlations have different references: each run's, so that
    no delta read across the columns passes for the judges' alone."""
    targets = _spearman_targets(result)
    if not targets:
        return ""
    return " (each run against its own reference: " + ", ".join(f"{name}: experts' {target}"
                                                               for name, target in targets.items()) + ")"


def _with_interval(c: Cell, metric: str) -> str:
    """A side-by-side cell: the figure, its interval and n, the items it is over (Spearman: its pairs, which a
    reference of its own may make other than MAE's); no n where the file predates the count."""
    from eval.reports.report import fmt_ci

    if metric == "mae":
        shown, n = fmt_ci(c.mae, c.mae_ci), c.n_scored
    else:
        shown, n = fmt_ci(c.spearman, c.spearman_ci), c.n_spearman if c.n_spearman is not None else c.n_scored
    return shown if n is None else f"{shown}, n {n}"


def distinct_names(names: list[str], folders: list, as_text=str) -> list[str]:
    """``names`` with each one that is not unique told apart by its folder's name, then its whole path, then its
    position: a run's column, row or heading must never stand for another's, even where a name given one folder
    equals another run's name or two folders share their last part. Names are unique as a reader sees them
    (``reads_as``: two apart only by a zero-width character read alike). ``as_text`` writes a folder as the names
    are written (``md_text`` for a page)."""
    from eval.reports.names import all_read_apart, reads_as

    if all_read_apart(names):
        return list(names)
    seen = [reads_as(name) for name in names]
    for label in (lambda f: Path(f).name, lambda f: str(f)):
        told = [f"{name} ({as_text(label(folder))})" if seen.count(key) > 1 else name
                for name, key, folder in zip(names, seen, folders)]
        if all_read_apart(told):
            return told
    return [f"{name} (#{k + 1})" for k, name in enumerate(names)]


def named_as(result: Comparison, as_text: Callable[[str], str]) -> Comparison:
    """``result`` with its run names as ``as_text`` writes them (compare.md: inert Markdown cut to
    ``MD_RUN_NAME_CHARS``, ``md_run_name``; compare.html and its explorer: ``eval.reports.names.page_name``), so that no run's column,
    row, heading or filter value stands for another's: names that read alike once written (two apart only by a line
    break or a bidirectional mark, which writing drops, or only in the middle a cut leaves out) are told apart by
    their folders' names, written and cut with them, and where those read alike too, each by the mark the pages give
    names that read alike (" (#" and the first hex digits of the full name's SHA-256: ``shown_names``), which does
    not depend on the order of the runs. A label is never longer than the cut and such a mark."""
    from eval.reports.names import all_read_apart, reads_as, shown_names

    names = list(result.runs)
    shown = [as_text(name) for name in names]
    if not all_read_apart(shown):
        seen = [reads_as(label) for label in shown]
        told = [as_text(f"{name} ({Path(folder).name})") if seen.count(key) > 1 else label
                for name, label, key, folder in zip(names, shown, seen, result.folders)]
        marked = shown_names(names, as_text=as_text)
        shown = told if all_read_apart(told) else [marked[name] for name in names]
    return with_run_names(result, dict(zip(result.runs, shown)), as_text)


def console_name(name: str) -> str:
    """A run's name as ``judge-eval compare`` prints it: every character a terminal would act on (an ESC sequence, a
    line break, a bidirectional override) written as its escape (``visible``), then cut as the pages cut names, so a
    name of any length prints as at most ``NAME_CHARS`` characters on each line that says it."""
    import sys

    from eval.reports.names import shown_name
    from judge.plumbing.console_logging import visible

    return shown_name(visible(name, sys.maxsize))


def md_run_name(name: str) -> str:
    """A run's name as compare.md writes it in a heading or a table: on one line, cut to ``MD_RUN_NAME_CHARS``
    characters (``shown_name``) before it is made inert Markdown (``md_text``), so that the cut counts the characters
    a reader sees, not their escapes."""
    from eval.reports.names import page_name

    return md_text(page_name(name, MD_RUN_NAME_CHARS))


def _named_for_markdown(result: Comparison) -> Comparison:
    """``result`` with its run names as inert Markdown, cut (``md_run_name``): a judge's name comes from its
    ``--name`` or its folder, and a ``|``, ``*``, ``#``, ``<`` or line break in it would otherwise split a table,
    start emphasis, a heading or a tag (``named_as``)."""
    return named_as(result, md_run_name)


def names_in_full(cut: list[tuple[str, str]], what: str = "Run names") -> list[str]:
    """A compare.md's list of the names its headings and tables cut, under "``what`` cut above, each in full:": each
    (label, name) of ``cut`` as its label shows it, then the name whole (inert Markdown on one line; compare.json
    keeps it as it is). Nothing where ``cut`` is empty. The ranking's compare.md lists its cut names by it too."""
    if not cut:
        return []
    return [f"{what} cut above, each in full:", "", *(f"- {label}: {md_text(name)}" for label, name in cut), ""]


def _names_in_full(shown: list[str], names: list[str]) -> list[str]:
    """compare.md's list of the run names its headings and tables cut (``names_in_full``)."""
    return names_in_full([(label, name) for label, name in zip(shown, names) if md_run_name(name) != md_text(name)])


def with_run_names(result: Comparison, by_name: Mapping[str, str], other: Callable[[str], str]) -> Comparison:
    """``result`` with every run's name (the baseline's, each run's, each comparison's) as ``by_name`` gives it, a
    name it lacks as ``other`` writes it, and the item ids the headline names (``first_only_baseline``,
    ``first_only_run``: ids from the data) as ``other`` writes them: the one renaming compare.md (inert Markdown),
    compare.html (cut names) and the console (escapes shown) make before they write."""
    def named(name: str) -> str:
        return by_name[name] if name in by_name else other(name)

    def item(item_id: str | None) -> str | None:
        return None if item_id is None else other(item_id)

    return replace(result, baseline=named(result.baseline), runs=[named(name) for name in result.runs],
                   comparisons=[replace(comp, run=named(comp.run), first_only_baseline=item(comp.first_only_baseline),
                                        first_only_run=item(comp.first_only_run)) for comp in result.comparisons])


def render_markdown(result: Comparison) -> str:
    """Side-by-side tables: each run's own headline numbers, then each comparison with the baseline. Text from the
    runs and their data (run names, evaluated models, task types, criteria) is written as inert Markdown."""
    from eval.reports.report import fmt_ci, markdown_table
    from eval.validity.render import compare_rows as validity_rows
    from eval.validity.render import paired_rows

    names = list(result.runs)
    result = _named_for_markdown(result)
    out = [f"# Judge comparison (baseline: {result.baseline})", ""]
    out += [f"**{decision(result, k)}**" for k in range(len(result.comparisons))] + [""]
    out += [f"- {line}" for line in headline(result)] + [""]
    out += ["## Each run on its own items", ""]
    header = ["Test", "Metric"] + list(result.runs)
    # against the experts' mode / mean where the runs' references differ: the values are not comparable as such
    spearman_refs = [f" (vs {target})" for target in _spearman_targets(result).values()] or [""] * len(result.runs)
    mae_targets = list(_references(result, "mae").values())
    mae_refs = [f" (vs {target})" for target in mae_targets] if len(set(mae_targets)) > 1 else [""] * len(result.runs)
    rows = []
    for split in item_table.SPLITS:
        blocks = [m.splits.get(split) for m in result.metrics]
        if not any(blocks):
            continue
        # a split one run lacks (say, items of a task type only the other's data has): "—" in its column, as on
        # compare.html, rather than the other runs' rows dropped
        cells = [b.overall if b else None for b in blocks]
        title = SPLIT_TITLES[split]

        def row(metric: str, show) -> list[str]:
            return [title, metric] + [show(c, k) if c is not None else "—" for k, c in enumerate(cells)]

        rows.append(row("MAE", lambda c, k: fmt_ci(c.mae, c.mae_ci) + mae_refs[k]))
        rows.append(row("Spearman", lambda c, k: fmt_ci(c.spearman, c.spearman_ci) + spearman_refs[k]))
        rows.append(row("VC judge / experts", lambda c, k: f"{fmt(c.vc_judge)} / {fmt(c.vc_experts)}"))
        # an unfinished run is seen here: n counts only the items with a prediction (absent from older files: —)
        rows.append(row("no prediction", lambda c, k: _count(c.n_missing)))
        rows.append(row("failed / n", lambda c, k: f"{c.n_failed} / {c.n}"))
        rows.append(row("scored", lambda c, k: _count(c.n_scored)))
        # Scored all the same (the paper's Table 11); absent from metrics.json written before the count existed.
        rows.append(row("out of scale / n",
                        lambda c, k: f"{'—' if c.n_out_of_scale is None else c.n_out_of_scale} / {c.n}"))
    out += [markdown_table(header, rows), ""]
    out += _names_in_full(result.runs, names)
    notes = runs_notes(result)
    if notes:
        out += ["What each run's report says beside its numbers:", ""]
        out += [f"- **{name}**: {note}" for name, note in notes] + [""]
    out += _side_by_side(result)
    out += validity_rows(dict(zip(result.runs, result.metrics)), markdown_table)  # each run's own section
    out += paired_rows(result, markdown_table)
    unit = "whole instructions" if result.bootstrap_unit == "instruction" else "items"
    if not result.n_boot:
        out += [f"Paired: {PAIRED_WITHOUT_RESAMPLES}.", ""]
    else:
        out += _paired_note(result, unit)
    head = ["", "baseline", "run", "delta", f"{ci_percent(_ci_level(result))} % CI", "p", "call", "n"]
    for comp in result.comparisons:
        out += [f"## {comp.run} vs {result.baseline}", ""]
        # the items of both runs' tables (their data's, predicted or not); `n` in the rows: those both scored
        out += [f"{comp.n_common} items in both runs (predicted or not; `n` below: the items both scored).", ""]
        for split, block in comp.splits.items():
            out += [f"### {SPLIT_TITLES[split]}", ""]
            rows = [[_metric_label(result, comp, metric)] + _cell(p, result.n_boot)
                    for metric, p in block.overall.items()]
            out += [markdown_table(["Overall"] + head[1:], rows), ""]
            for name, title in (("model", "Evaluated model"), ("task_type", "Task type"), ("criterion", "Criterion")):
                # the call read against the Holm-adjusted p, shown beside the raw one ("—": a cell too small to call)
                bounds = holm_upper_bounds(block.by(name))
                rows = [[md_text(label)] + _cell(cells["mae"], result.n_boot, True, (label, "mae") in bounds)
                        for label, cells in block.by(name).items()]
                if rows:
                    out += [f"MAE by {title.lower()}:", "",
                            markdown_table([title] + head[1:6] + ["p (Holm)"] + head[6:], rows), ""]
    return "\n".join(out)


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _metric_label(result: Comparison, comp, metric: str) -> str:
    """A paired row's metric in the words the other tables show it under (``KEY_LABELS``), with each side's
    reference where the run's MAE or Spearman has another than the baseline's (``headline`` says what that means)."""
    targets = _references(result, metric) if metric in _REFERENCE_OF else {}
    base, run = targets.get(result.baseline), targets.get(comp.run)
    shown = KEY_LABELS.get(metric, metric)
    if base and run and base != run:
        return f"{shown} (baseline vs experts' {base}, run vs their {run})"
    return shown


def _paired_note(result: Comparison, unit: str) -> list[str]:
    """The paired tables' note; Holm's adjustment named only where the comparison carries it (``holm_applied``)."""
    tables = ("The overall rows are called on their own p, each test, metric and compared run at "
              f"{result.alpha}, not adjusted for one another; the tables by evaluated model, task type and "
              "criterion on p adjusted by Holm's method over the table's cells of one metric that may be called "
              "(p (Holm); the raw p beside it), so that, per metric, a table's chance of any false call stays at "
              f"most {result.alpha}; a raw p shown as < 2 / resamples enters as that bound, so a call in a table of "
              "m such cells needs more than 2 m / alpha resamples, and a p (Holm) resting on that bound is an upper "
              "bound (≤)."
              if holm_applied(result) else "Every row is called on its own p.")
    return [f"Paired: delta = run − baseline on items both scored; {result.n_boot} paired bootstrap resamples of "
            f"{unit}; "
            f"better/worse at p < {result.alpha} (MAE lower is better; Spearman and VC higher) and at least "
            f"{MIN_PAIRED} paired {unit}; a cell with fewer is n.s. whatever its p (too few to call: a bootstrap over "
            f"a handful of them can have a zero-width interval and p = 0 by chance); {NOT_SHOWN_EQUAL}: the interval "
            "holds the differences the data leave possible. A call also needs at least "
            f"{paired_resamples_to_call(result.alpha)} resamples (more than 2 / alpha: p moves in steps of "
            "2 / resamples). " + tables, ""]

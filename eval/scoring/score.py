"""The ``judge-eval score`` step: join a run's predictions with the expert-labelled records, compute the paper's
metrics (``eval.scoring.item_table``), and write the report (``eval.reports.report``, ``eval.reports.html_report``).

    judge-eval score --predictions runs/judge-a --data DATA.jsonl          # report beside the predictions
    judge-eval score --predictions runs/judge-a --png                      # also the PNG plots
    judge-eval score --predictions runs/judge-a-r --clip-regression        # -r judges: the head clipped to the scale

Files written to the output folder:

- ``metrics.json``: ``eval.scoring.item_table.evaluate``'s result (per test: the cells, ``model_means`` = the paper's
  Table 10, ``why_empty`` where a cell has no scored item), ``validity`` (``eval.validity.section``: the alternative
  annotator test, the experts' ceiling, agreement and bias, per test and cell; docs/validity.md) plus
  ``pollux_official`` (POLLUX's repository evaluator,
  ``eval.scoring.pollux_official``: not the paper's metrics) and the run's provenance;
- ``report.md``: the tables; ``report.html``: the same tables, SVG plots and the item explorer;
- ``items.parquet``: the per-item table (judge score, status, experts, reference, Verdict Confidences, ``in_scale``,
  ``n_abstained``, ``why_unscored``), which ``judge-eval compare`` pairs across runs;
- with ``png`` (or W&B logging, which uploads them): ``plots/confusion_<split>.png`` (judge x expert mode, per task
  group) and ``plots/mae_by_criterion_<split>.png``.

One process, one pass, top to bottom: the predictions are read as one Arrow table, the records as columns
(``judge.load_record_columns``), joined by id into the item table's numpy columns (``eval.scoring.item_table.build_table``), and every file is written from that table
and the metrics computed on it (bench/eval_metrics.py --end-to-end times it on the full test's 160,000 items).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from pathlib import Path

from eval.scoring import item_table
from eval.reports.html_explorer import DEFAULT_TEXT_ITEMS, item_columns, report_items
from eval.reports.html_report import render_report_page
from eval.reports.plots import write_plots
from eval.reports.report import log_wandb, render_markdown
from eval.validity.section import ValiditySettings, validity_section
from judge.metrics_json.metrics import Metrics, Notes, RunInfo

__all__ = ["score"]

log = logging.getLogger("judge_eval.score")


def _one_blas_thread(function):
    """Run ``function`` with BLAS on one thread: the bootstraps' many small matrix products would each wake
    OpenBLAS's helper thread, which then spins waiting for more work (~0.4 CPU-s of a second core for nothing on
    the 160,000-item bench table, docs/performance.md). Restored after, whatever it was."""

    @functools.wraps(function)
    def one_blas_thread(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return one_blas_thread


def _absolute(data: str | Path) -> str:
    """``data`` as an absolute path when it names a local file or folder (a dataset name is kept as given), as
    ``eval.judging.run.resolved_paths`` records run.json's: report.html and ``judge-eval compare`` read the files
    metrics.json names back, from whatever directory they run in."""
    path = Path(data).expanduser()
    return str(path.resolve()) if path.exists() else str(data)


@_one_blas_thread
def score(
    predictions: str | Path,
    data: str | Path | None = None,
    out: str | Path | None = None,
    *,
    target: str = "auto",
    spearman_target: str = "auto",
    bootstrap_unit: str = "item",
    n_boot: int = 1000,
    seed: int = 0,
    vc_repeats: int = 100,
    png: bool = False,
    clip_regression: bool = False,
    wandb_project: str = "",
    name: str = "",
    html_text_items: int | None = None,
    allow_repeated_ids: bool = False,
    alt_test=None,
    ceiling_failures: str = "worst",
) -> Metrics:
    """Score a run against the experts and write the report (and ``report.html``, see ``eval.reports.html_report``).

    Args:
        predictions: ``predictions.jsonl`` or the run folder holding it.
        data: the labelled records; default: the ``data`` recorded in the run's ``run.json``.
        out: output folder; default: the folder of the predictions.
        target: MAE's reference: ``auto`` (mean for regression judges, else mode), ``mode`` or ``mean``.
        spearman_target: the correlations' reference, ``auto`` (the same as MAE's), ``mode`` or ``mean``.
        n_boot, seed, vc_repeats, bootstrap_unit: see ``eval.scoring.item_table.evaluate``.
        png: also draw the PNG plots (matplotlib, ~4 s CPU on the full test; report.html draws the same figures as
            SVG). Always drawn when ``wandb_project`` is set, since W&B shows them.
        clip_regression: score regression (``-r``) judges on their head's value clipped into the scale, instead of
            its raw value (the default, as the paper); named in ``metrics.json``
            (``settings.regression_scores``) and the report.
        wandb_project: log to this W&B project ("" for none).
        name: the judge's label (default: from the predictions).
        html_text_items: items whose full texts ``report.html`` embeds (default:
            ``eval.reports.html_explorer.DEFAULT_TEXT_ITEMS``; negative: all).
        allow_repeated_ids: score each id's first row when an id repeats, instead of refusing the file
            (``eval.judging.predictions.refuse_repeated_ids``).
        alt_test: the validity section's ``eval.validity.alt_test.AltTestSettings`` (default: the authors').
        ceiling_failures: what a judge failure counts as in the experts' ceiling, ``worst`` (its largest error on the
            item's scale) or ``drop`` (left out); ``eval.validity.ceiling``.

    Returns:
        The metrics, as ``metrics.json`` reads back (``judge.metrics_json.metrics.Metrics``).
    """
    import judge
    import numpy as np

    from eval.scoring.pollux_official import official_not_computed, pollux_official
    from eval.judging.predictions import read_prediction_table, refuse_repeated_ids
    from judge.plumbing.provenance import read_provenance

    predictions = Path(predictions)
    run_dir = predictions if predictions.is_dir() else predictions.parent
    run_info = read_provenance(run_dir, missing_ok=True)
    data = data or (run_info.get("config") or {}).get("data") or None
    verdict_format = (run_info.get("config") or {}).get("verdict_format")
    if not data:
        raise ValueError("score: no --data given and the run folder has no run.json naming its data")
    out = Path(out) if out else run_dir

    # ---- inputs: the predictions as one Arrow table, the records, joined by id into the item table's columns
    rows = read_prediction_table(predictions)
    if not allow_repeated_ids:
        refuse_repeated_ids(rows.column("id"), predictions)
    records, load_report = judge.load_record_columns(data)  # columns, not an object per record
    log.info("%s", load_report.summary())
    table, notes = item_table.build_table(records, rows, judge_name=name, clip_regression=clip_regression)
    if notes["n_unknown_ids"]:
        import pyarrow.compute as pc

        if notes["n_unknown_ids"] >= pc.count_distinct(rows.column("id")).as_py():
            # Not an unfinished run (every item would read "no prediction"): the predictions are of other data.
            raise ValueError(f"--predictions {predictions}: none of its {notes['n_unknown_ids']} ids is in --data "
                             f"{data}; these predictions were made on other data")
        log.warning("%d predictions have ids that are not in %s: ignored", notes["n_unknown_ids"], data)
    # The same tests as the paper's metrics: "all" is Zero-Shot + Standard; "unknown" only where some item has it.
    tests = {split: np.flatnonzero(table.split == split) if split != "all" else np.flatnonzero(table.split != "unknown")
             for split in item_table.SPLITS if split != "unknown" or (table.split == split).any()}

    # ---- metrics: every cell of the report, then POLLUX's own evaluator on the same items
    target = item_table.choose_target(table, target)
    spearman_target = target if spearman_target == "auto" else spearman_target
    derived = item_table.derive(table, target, vc_repeats=vc_repeats, seed=seed, spearman_target=spearman_target)
    evaluated = item_table.evaluate(table, target=target, n_boot=n_boot, seed=seed, vc_repeats=vc_repeats,
                                    derived=derived, spearman_target=spearman_target,
                                    bootstrap_unit=bootstrap_unit)
    # ---- validity: can the judge stand in for an expert? From the same item table, per test and cell.
    # --n-boot 0 turns its intervals off too; otherwise each is capped (eval/validity/section.py)
    validity = ValiditySettings(seed=seed, n_boot=n_boot, alpha_boot=ValiditySettings.alpha_boot if n_boot else 0,
                                bootstrap_unit=bootstrap_unit, ceiling_failures=ceiling_failures,
                                **({"alt_test": alt_test} if alt_test is not None else {}))
    result = dataclasses.replace(
        evaluated,
        settings=dataclasses.replace(evaluated.settings, regression_scores="clipped" if clip_regression else "raw"),
        validity=validity_section(table, target, tests, validity), data=_absolute(data),
        predictions=str(predictions.resolve()),
        notes=Notes(**notes),
        # POLLUX's evaluator reads "[RESULT] n" tags: a judge that answers with a bare integer (Pollux-4B-Judge)
        # would read as 0 % format accuracy under a title that presents it as POLLUX's figure. Left out; the
        # report says why. A run with a regression head's scores gets None from pollux_official itself (no POLLUX
        # code puts a head's value through its evaluator; eval.scoring.pollux_official, "Regression").
        # The records whose criteria_score the loader derived from the experts: the records do not say so, the
        # load report does, and POLLUX's section counts them (n_reference_from_experts).
        pollux_official=None if verdict_format == "integer" else pollux_official(
            records, rows, tests, derived_references=load_report.derived_criteria_records),
        run=RunInfo.of({**{k: run_info.get(k) for k in ("backend", "model", "prompt_version", "git_revision")},
                        "verdict_format": verdict_format} if run_info else None),
    )

    if why := official_not_computed(result):
        log.info("POLLUX repository evaluator: %s", why.replace("`", ""))
    # ---- files, all from the item table and the metrics; the folder only now, once every input has been read
    # (a predictions file or --data refused above leaves no empty output folder behind)
    out.mkdir(parents=True, exist_ok=True)
    extra = {"reference": derived.reference, "vc_judge": derived.vc_judge, "vc_experts": derived.vc_experts}
    if derived.spearman_reference is not None and derived.spearman_reference is not derived.reference:
        extra["spearman_reference"] = derived.spearman_reference  # --spearman-target apart: what compare pairs on
    items = item_table.arrow_table(table, extra={**extra, "why_unscored": item_table.why_unscored_labels(derived)})
    item_table.write_arrow(items, out / "items.parquet")
    written = item_table.dumps(result)
    (out / "metrics.json").write_text(written + "\n", encoding="utf-8")
    # As every reader sees it (NaN written as null reads back as NaN; validity's nulls stay None): from the text
    # just written, not from the disk again
    result = Metrics.from_json(json.loads(written))
    markdown = render_markdown(result)
    (out / "report.md").write_text(markdown + "\n", encoding="utf-8")
    explorer = report_items(item_columns(items), records, rows, table.judge_name or "", str(target),
                            DEFAULT_TEXT_ITEMS if html_text_items is None else html_text_items)
    (out / "report.html").write_text(render_report_page(result, explorer), encoding="utf-8")
    log.info("wrote %s", out / "report.html")
    images: list[Path] = write_plots(result, out / "plots") if png or wandb_project else []
    if wandb_project:
        log_wandb(result, markdown, images, wandb_project, out)
    return result

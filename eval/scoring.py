"""The ``judge-eval score`` step: join a run's predictions with the expert-labelled records, compute the paper's
metrics (``eval.item_table``), and write the report (``eval.report``, ``eval.html_report``).

Files written to the output folder:

- ``metrics.json``: ``eval.item_table.evaluate``'s result (per test: the cells, ``model_means`` = the paper's
  Table 10, ``why_empty`` where a cell has no scored item) plus ``pollux_official`` (POLLUX's repository evaluator,
  ``eval.pollux_official``: not the paper's metrics) and the run's provenance;
- ``report.md``: the tables;
- ``items.parquet``: the per-item table (judge score, status, experts, reference, Verdict Confidences, ``in_scale``,
  ``n_abstained``, ``why_unscored``), which ``judge-eval compare`` pairs across runs;
- ``plots/confusion_<split>.png`` (judge x expert mode, per task group) and ``plots/mae_by_criterion_<split>.png``.

On the full test (160,000 items) the work is spread over two cores (bench/eval_metrics.py --end-to-end): a child
process reads the predictions while the records load (``eval.predictions.PredictionsProcess``); two children draw
the plots (``eval.report.PlotProcess``); forked children run POLLUX's evaluator (``eval.forked.ForkedCall``) and
build report.html's explorer (``eval.html_report.ReportPageProcess``) while the metrics are computed here. Every
file is the same as computed in one process.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import logging
from pathlib import Path
from typing import Any

from eval import item_table
from eval.forked import ForkedCall
from eval.html_report import DEFAULT_TEXT_ITEMS, ReportPageProcess
from eval.report import PlotProcess, log_wandb, render_markdown

__all__ = ["score"]

log = logging.getLogger("judge_eval.score")


def _without_cyclic_gc(function):
    """Run ``function`` with Python's cyclic garbage collector paused (its previous state restored after).

    Scoring the full test builds millions of containers that all stay alive until the end (records, prediction
    rows, the report's rows): the collector's passes over that growing heap found nothing to free and cost ~6 of
    ~20 s CPU (bench/eval_metrics.py --end-to-end). Reference counting still frees everything that is not a
    cycle; the few cycles made meanwhile are collected once the collector is back on (the plots, whose figures
    make cycles, are drawn in PlotProcess's child).
    """

    @functools.wraps(function)
    def paused(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@_without_cyclic_gc
def score(
    predictions: str | Path,
    data: str | Path | None = None,
    out: str | Path | None = None,
    *,
    target: str = "auto",
    n_boot: int = 1000,
    seed: int = 0,
    vc_repeats: int = 100,
    plots: bool = True,
    wandb_project: str = "",
    name: str = "",
    html_text_items: int | None = None,
) -> dict[str, Any]:
    """Score a run against the experts and write the report (and ``report.html``, see ``eval.html_report``).

    Args:
        predictions: ``predictions.jsonl`` or the run folder holding it.
        data: the labelled records; default: the ``data`` recorded in the run's ``run.json``.
        out: output folder; default: the folder of the predictions.
        target: ``auto`` (mean for regression judges, else mode), ``mode`` or ``mean``.
        n_boot, seed, vc_repeats: see ``eval.item_table.evaluate``.
        plots: write the PNGs.
        wandb_project: log to this W&B project ("" for none).
        name: the judge's label (default: from the predictions).
        html_text_items: items whose full texts ``report.html`` embeds (default:
            ``eval.html_report.DEFAULT_TEXT_ITEMS``; negative: all).

    Returns:
        The metrics (as written to ``metrics.json``).
    """
    import judge
    import numpy as np

    from eval.pollux_official import pollux_official
    from eval.predictions import PredictionsProcess
    from judge.plumbing.provenance import read_provenance

    predictions = Path(predictions)
    run_dir = predictions if predictions.is_dir() else predictions.parent
    run_info = read_provenance(run_dir, missing_ok=True)
    data = data or (run_info.get("config") or {}).get("data") or None
    if not data:
        raise ValueError("score: no --data given and the run folder has no run.json naming its data")
    out = Path(out) if out else run_dir
    out.mkdir(parents=True, exist_ok=True)

    with contextlib.ExitStack() as stack:
        # The predictions are read by a child process (on a second core, where there is one) while the records
        # load here: ~1.2 s off the command's wall on the full test (unmarshalling the rows is what is left here).
        reading = stack.enter_context(PredictionsProcess(predictions))
        records = judge.load_records(data)
        rows = reading.rows()
        # The PNGs are drawn by two child processes, started now so that they import matplotlib while the table
        # is built (a core the reading above no longer needs), and drawing from the moment evaluate has the cells
        # they draw: the same files, ~4 s CPU off this process.
        plotting = stack.enter_context(PlotProcess(out / "plots")) if plots else None
        table, notes = item_table.build_table(records, rows, judge_name=name)
        # The same tests as the paper's metrics: "all" is Zero-Shot + Standard; "unknown" only where some item has it.
        tests = {split: np.flatnonzero(table.split == split) if split != "all" else np.flatnonzero(table.split != "unknown")
                 for split in item_table.SPLITS if split != "unknown" or (table.split == split).any()}
        if notes["n_unknown_ids"]:
            log.warning("%d predictions have ids that are not in %s: ignored", notes["n_unknown_ids"], data)
        # POLLUX's evaluator needs only the records, the rows and the tests: a forked child runs it while the
        # metrics are computed (~0.6 s CPU off this process on the full test).
        official = stack.enter_context(ForkedCall(pollux_official, records, rows, tests))
        target = item_table.choose_target(table, target)
        derived = item_table.derive(table, target, vc_repeats=vc_repeats, seed=seed)
        item_table.write_table(table, out / "items.parquet", extra={
            "reference": derived.reference, "vc_judge": derived.vc_judge, "vc_experts": derived.vc_experts,
            "why_unscored": item_table.why_unscored_labels(derived),
        })
        # report.html's explorer needs only items.parquet, the records and the rows: a forked child computes it
        # while the metrics are (~1.1 s CPU off this process on the full test), and writes the page at the end.
        page = stack.enter_context(ReportPageProcess(
            out, records, rows, table.judge_name or "", str(target),
            DEFAULT_TEXT_ITEMS if html_text_items is None else html_text_items))
        # The plots need only some of the metrics, computed first: they are drawn from then on, beside the other
        # metrics, POLLUX's evaluator and the files below (on the full test they had waited for all of those).
        result = item_table.evaluate(table, target=target, n_boot=n_boot, seed=seed, vc_repeats=vc_repeats,
                                     derived=derived, plots_ready=plotting.draw if plotting is not None else None)
        result["data"] = str(data)
        result["predictions"] = str(predictions)
        result["notes"] = notes
        result["pollux_official"] = official.result()
        result["run"] = ({k: run_info.get(k) for k in ("backend", "model", "prompt_version", "git_revision")}
                         if run_info else {})

        (out / "metrics.json").write_text(item_table.dumps(result) + "\n", encoding="utf-8")
        result = json.loads((out / "metrics.json").read_text(encoding="utf-8"))  # NaN -> null, as every reader sees it
        markdown = render_markdown(result)
        (out / "report.md").write_text(markdown + "\n", encoding="utf-8")
        log.info("wrote %s", page.finish())
        images: list[Path] = plotting.wait() if plotting is not None else []
    if wandb_project:
        log_wandb(result, markdown, images, wandb_project, out)
    return result


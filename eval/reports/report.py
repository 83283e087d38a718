"""Rendering one run's metrics: the Markdown tables of ``report.md``, the PNG plots and the optional W&B log.

Tables follow the layout of the POLLUX paper's Tables 10-18: one table per (split, grouping), rows are the
evaluated models, task types or criteria, columns the judge's MAE and Spearman with 95 % bootstrap intervals and
its Verdict Confidence beside the experts'. Every table says how many items it covers and how many the judge
failed on (``n_failed``) or could not be compared on (no unique expert mode): failures are counted, never scored.
``eval.scoring.score.score`` computes the metrics and calls these.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from eval.scoring import item_table
from eval.scoring.metrics import RANDOM_LABELLING_VC
from eval.validity.render import lead_lines
from eval.validity.render import markdown_lines as validity_markdown
from judge.splits import SPLIT_TITLES  # one definition in the contract; re-exported here for eval's own modules

__all__ = ["render_markdown", "markdown_table", "plot_confusions", "plot_mae_by_criterion", "write_plots",
           "SPLIT_TITLES", "fmt", "fmt_ci"]

log = logging.getLogger("judge_eval.report")

GROUP_TITLES = {"model": "evaluated model", "task_type": "task type", "criterion": "criterion"}


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell; "—" for a missing or undefined value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def fmt_ci(value: Any, ci: Any, digits: int = 3) -> str:
    """``0.512 [0.490, 0.534]``, or just the value when the interval is undefined."""
    if ci is None or any(v is None or (isinstance(v, float) and not math.isfinite(v)) for v in ci):
        return fmt(value, digits)
    return f"{fmt(value, digits)} [{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped)."""

    def esc(cell: str) -> str:
        return str(cell).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _header(label: str, correlations: bool, summary: bool = False) -> list[str]:
    """A table's columns: the headline first (the paper's figures: n, failed, MAE, Spearman, VC judge / experts),
    then the bookkeeping (exclusions, in-scale figures, the other correlations, counts)."""
    head = [label, "n", "failed", "MAE"] + (["Spearman"] if correlations else []) + ["VC judge", "VC experts"]
    head += ["VC experts (all labelled)"] if summary else []
    head += ["no unique mode", "out of scale", "MAE in scale"]
    head += ["Spearman in scale", "Pearson", "Kendall"] if correlations else []
    return head + ["n VC"] + (["VC experts (all predicted)"] if summary else [])


def _row(label: str, c: dict[str, Any], correlations: bool, summary: bool = False) -> list[str]:
    """A table row in ``_header``'s order."""
    # The paper shows "—" where no item has two annotators (Tables 15-16); n_vc says how many items the VC covers.
    row = [label, str(c["n"]), f"{c['n_failed']} ({fmt(c['failure_rate'] * 100 if c['n'] else None, 1)} %)",
           fmt_ci(c["mae"], c["mae_ci"])]
    row += [fmt_ci(c["spearman"], c["spearman_ci"])] if correlations else []
    row += [fmt(c["vc_judge"]) if c.get("n_vc", 1) else "—", fmt(c["vc_experts"]) if c.get("n_vc", 1) else "—"]
    row += [fmt(c.get("vc_experts_labelled"))] if summary else []
    row += [str(c["n_no_unique_mode"]), str(c.get("n_out_of_scale", 0)), _in_scale(c, "mae")]
    row += [_in_scale(c, "spearman"), fmt(c["pearson"]), fmt(c["kendall"])] if correlations else []
    return row + [str(c.get("n_vc", ""))] + ([fmt(c.get("vc_experts_all"))] if summary else [])


def _in_scale(c: dict[str, Any], metric: str) -> str:
    """The in-scale-only figure; "=" when no verdict was out of scale (it equals the headline)."""
    return fmt(c.get(f"{metric}_in_scale")) if c.get("n_out_of_scale") else "="


def _why_lines(cells: dict[str, dict[str, Any]]) -> list[str]:
    """A sentence for every cell whose figures are all "—": why it has no scored item, or no VC."""
    lines = []
    for label, c in cells.items():
        if c.get("why_empty_text"):
            lines.append(f"- **{label}**: {c['why_empty_text']}.")
        elif c.get("why_no_vc"):
            lines.append(f"- **{label}**: VC —: {c['why_no_vc']}.")
    return lines + [""] if lines else []


def _model_means_table(means: dict[str, Any], judge_name: str) -> str:
    """The paper's Table 10 layout: model, experts' mean score, the judge's mean score (MAE in brackets)."""
    def row(label: str, m: dict[str, Any]) -> list[str]:
        judged = f"{fmt(m['judge_mean'])} ({fmt(m['mae'])})"
        return [label, str(m["n_items"]), fmt(m["experts_mean"]), str(m["n_judged"]), judged,
                fmt(m["experts_mean_on_judged"]), str(m["n_out_of_scale"])]

    rows = [row(label, m) for label, m in means["by_model"].items()] + [row("**Avg.** (items pooled)", means["all"])]
    header = ["Evaluated model", "n", "Experts", "n judged", f"{judge_name or 'Judge'} (MAE)",
              "Experts on judged items", "out of scale"]
    return markdown_table(header, rows)


def _pollux_official_lines(official: dict[str, Any]) -> list[str]:
    """The clearly labelled section with POLLUX's repository figures."""
    out = [f"## {official['title']}", "",
           "What the POLLUX repository's judge evaluator reports, reproduced for comparison with its published "
           f"figures. Score extraction: {official['extraction']}. Reference: {official['reference']}. "
           "`format_acc`: share of outputs with a score; `score_acc`: exact match with the reference (an output "
           "without a score is wrong); `mse` over outputs with a score. The paper's metrics above are the headline.",
           ""]
    header = ["Test", "outputs", "with a score", "format_acc", "score_acc", "mse", "no prediction",
              "request failed", "no reference", "regression (raw head value)"]
    rows = [[SPLIT_TITLES.get(split, split), str(b["n"]), str(b["n_parsed"]), fmt(b["format_acc"]),
             fmt(b["score_acc"]), fmt(b["mse"]), str(b["n_no_prediction"]), str(b["n_request_failed"]),
             str(b["n_no_reference"]), str(b["n_regression"] + b["n_regression_clipped"])]
            for split, b in official["splits"].items()]
    return out + [markdown_table(header, rows), ""]


_REFERENCES = {"mode": "the mode of the expert scores (items without a unique mode excluded)",
               "mean": "the mean of the expert scores"}


def references_note(result: dict[str, Any]) -> str:
    """What MAE and Spearman compare the judge with, and that Spearman's reference is a choice."""
    target = result["target"]
    spearman = (result.get("settings") or {}).get("spearman_target") or target
    mae = f"MAE against {_REFERENCES[target]}" + (" (a regression judge)" if target == "mean" else "")
    return (f"{mae}; Spearman, Pearson and Kendall against {_REFERENCES[spearman]} (`--spearman-target`: the "
            "paper correlates with \"expert ratings\" without naming an aggregate; its item aggregate is the "
            "unweighted mean of the experts' estimates, arXiv 2505.24616v3, Section 2.3).")


def random_labelling_note() -> str:
    """The paper's random-labelling Verdict Confidence, to read the VC columns against."""
    return (f"VC under random labelling: {fmt(RANDOM_LABELLING_VC)} (17/27: three annotators picking among three "
            "labels at random, arXiv 2505.24616v3, Appendix D.2.2; below 0.60 it reads "
            "as \"comparable to random labeling\"). `VC experts` covers the items the judge scored; `VC experts "
            "(all labelled)` every labelled item with two or more annotators, whatever the judge did (the paper's "
            "Experts VC, judge-independent).")


def regression_note(result: dict[str, Any]) -> str:
    """How a regression (``-r``) judge's head values were scored and how many fell outside their scale; "" for a
    run without them."""
    notes = result.get("notes") or {}
    n = notes.get("n_regression_scores", 0)
    if not n:
        return ""
    outside = notes.get("n_regression_out_of_scale", 0)
    if (result.get("settings") or {}).get("regression_scores") == "clipped":
        how = ("the head's value clipped into the scale (`--clip-regression`, this toolkit's choice: the paper and "
               "POLLUX's evaluator score the raw value)")
    else:
        how = ("the head's raw value, as the paper and POLLUX's evaluator score it (judge-serve's `score` clips it "
               "into the scale; `--clip-regression` scores that instead)")
    return (f"Regression head: {n} scores, each {how}. {outside} of the {n} raw values fell outside their scale "
            "(counted in `out of scale`).")


def _regression_lines(result: dict[str, Any]) -> list[str]:
    note = regression_note(result)
    return [note, ""] if note else []


def render_markdown(result: dict[str, Any]) -> str:
    """The report's Markdown: a summary per split, then tables by evaluated model, task type and criterion.

    Args:
        result: ``eval.scoring.item_table.evaluate``'s output.
    """
    s = result["settings"]
    out = [
        f"# Judge report: {result['judge'] or '(unnamed judge)'}",
        "",
        *lead_lines(result),
        f"{references_note(result)} Spearman is pooled per evaluated model and per task type. "
        f"Verdict Confidence (VC): the largest share of one score among an item's annotators; the judge's value "
        f"replaces one random expert with the judge ({s['vc_repeats']} draws, seed {s['seed']}), over the items it "
        f"scored, only where an item has two or more annotators (`n VC`; \u2014 otherwise, as in the paper). "
        f"Intervals: {int(s['ci_level'] * 100)} % percentile bootstrap, {s['n_boot']} resamples. "
        "A verdict that failed to parse counts in `failed` and is never scored. A number outside the rubric's scale "
        "is the judge's answer and is scored, as the paper does (its Table 11); `out of scale` counts them and the "
        "`in scale` columns give the figures without them (\"=\" when there were none).",
        "",
    ]
    out += _regression_lines(result)
    out += [
        "## Summary",
        "",
    ]
    header = _header("Test", True, summary=True)
    rows = [_row(SPLIT_TITLES[split], result["splits"][split]["overall"], True, summary=True)
            for split in item_table.SPLITS if split in result["splits"]]
    out += [markdown_table(header, rows), ""]
    out += [random_labelling_note(), ""]
    out += _why_lines({SPLIT_TITLES[split]: result["splits"][split]["overall"]
                       for split in item_table.SPLITS if split in result["splits"]})
    out += validity_markdown(result, markdown_table)
    missing = result["splits"]["all"]["overall"]["n_missing"] if "all" in result["splits"] else 0
    if missing:
        out += [f"**{missing} items have no prediction** (the run is unfinished): they are not in `n`.", ""]
    overall = result["splits"].get("all", {}).get("overall", {})
    if overall.get("n_abstained"):
        out += [f"Expert abstentions (a released `-1`: the criterion does not apply) are left out of every score: "
                f"{overall['n_abstained']} in all; {overall.get('n_all_abstained', 0)} items had every expert abstain "
                "and are unlabelled (not errors).", ""]
    for split in item_table.SPLITS:
        block = result["splits"].get(split)
        if not block:
            continue
        out += [f"## {SPLIT_TITLES[split]}", ""]
        failures = block["failures"]
        if failures:
            out += ["Failures by reason: " + ", ".join(f"`{k}` {v}" for k, v in failures.items()), ""]
        if block.get("model_means", {}).get("by_model"):
            out += [f"### {SPLIT_TITLES[split]}: mean score per evaluated model (the paper's Table 10)", "",
                    "Experts: the mean over the model's labelled items of each item's mean expert score (the paper's "
                    "aggregate, an unweighted average of the point estimates); the judge: the mean of its scores on "
                    "those items, out-of-scale ones included; MAE in brackets.", "",
                    _model_means_table(block["model_means"], result.get("judge", "")), ""]
        for name, title in GROUP_TITLES.items():
            cells = block[f"by_{name}"]
            if not cells:
                continue
            correlated = name in ("model", "task_type")
            head = _header(title.capitalize(), correlated)
            rows = [_row(label, c, correlated) for label, c in cells.items()]
            rows.append(_row("**Overall**", block["overall"], correlated))
            out += [f"### {SPLIT_TITLES[split]}: by {title}", "", markdown_table(head, rows), ""]
            out += _why_lines(cells)
    if result.get("pollux_official"):
        out += _pollux_official_lines(result["pollux_official"])
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------- plots


def plot_confusions(result: dict[str, Any], folder: Path) -> list[Path]:
    """One PNG per split: judge x expert-mode heatmaps, all items and each task group.

    Returns:
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only, no display; set here, not at import (no work at import time)
    import matplotlib.pyplot as plt
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for split, block in result["splits"].items():
        panels = [("all task groups", block["confusion"]["all"])] + list(block["confusion"]["by_task_group"].items())
        cols = min(4, len(panels))
        rows = math.ceil(len(panels) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows), squeeze=False)
        for ax in axes.flat[len(panels):]:
            ax.axis("off")
        for ax, (title, conf) in zip(axes.flat, panels):
            matrix = np.asarray(conf["matrix"], dtype=float)
            labels = [fmt(v, 0) if float(v).is_integer() else fmt(v, 1) for v in conf["levels"]]
            ax.imshow(matrix if matrix.size else np.zeros((1, 1)), cmap="Blues")
            for (i, j), value in np.ndenumerate(matrix):
                ax.text(j, i, int(value), ha="center", va="center", fontsize=8,
                        color="white" if value > matrix.max() / 2 else "black")
            ax.set_xticks(range(len(labels)), labels)
            ax.set_yticks(range(len(labels)), labels)
            ax.set_xlabel("experts (mode)")
            ax.set_ylabel("judge")
            ax.set_title(title[:40], fontsize=9)
        fig.suptitle(f"{result['judge']}: {SPLIT_TITLES[split]}")
        # Fixed margins: tight_layout measures every tick label and took most of the plotting time.
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.9, wspace=0.35, hspace=0.45)
        path = folder / f"confusion_{split}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def plot_mae_by_criterion(result: dict[str, Any], folder: Path) -> list[Path]:
    """One PNG per split: MAE per criterion with its 95 % interval, worst first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for split, block in result["splits"].items():
        cells = [(k, c) for k, c in block["by_criterion"].items() if c["mae"] is not None and math.isfinite(c["mae"])]
        if not cells:
            continue
        cells.sort(key=lambda kc: kc[1]["mae"])
        names = [k if len(k) <= 48 else k[:47] + "…" for k, _ in cells]
        mae = np.array([c["mae"] for _, c in cells])
        low = np.array([c["mae_ci"][0] if c["mae_ci"][0] is not None and math.isfinite(c["mae_ci"][0]) else m
                        for (_, c), m in zip(cells, mae)])
        high = np.array([c["mae_ci"][1] if c["mae_ci"][1] is not None and math.isfinite(c["mae_ci"][1]) else m
                         for (_, c), m in zip(cells, mae)])
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.26 * len(cells)))
        ax.barh(range(len(cells)), mae, xerr=[mae - low, high - mae], color="#4c72b0", ecolor="#333", capsize=2)
        ax.set_yticks(range(len(cells)), names, fontsize=7)
        ax.set_xlabel(f"MAE vs expert {result['target']} (95 % CI)")
        ax.set_title(f"{result['judge']}: {SPLIT_TITLES[split]}, MAE by criterion")
        height = fig.get_figheight()
        fig.subplots_adjust(left=0.45, right=0.97, bottom=0.6 / height, top=1 - 0.5 / height)
        path = folder / f"mae_by_criterion_{split}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_plots(result: dict[str, Any], folder: Path) -> list[Path]:
    """Every PNG of a run: ``plot_confusions``, then ``plot_mae_by_criterion``."""
    return plot_confusions(result, folder) + plot_mae_by_criterion(result, folder)


# ------------------------------------------------------------------------------------------------ W&B


def log_wandb(result: dict[str, Any], markdown: str, images: list[Path], project: str, out: Path) -> None:
    """Log the summary numbers, every table and the plots to W&B (offline with ``WANDB_MODE=offline``)."""
    import os

    import wandb

    # WANDB_DIR, when set, says where runs go; else beside the report.
    run = wandb.init(project=project, name=result["judge"] or None, dir=os.environ.get("WANDB_DIR") or str(out),
                     config=result["settings"], job_type="judge-eval")
    try:
        summary = {}
        for split, block in result["splits"].items():
            for key in ("mae", "spearman", "pearson", "kendall", "vc_judge", "vc_experts", "failure_rate", "n",
                        "n_out_of_scale", "mae_in_scale", "n_vc"):
                summary[f"{split}/{key}"] = block["overall"].get(key)
            for name in GROUP_TITLES:
                columns = ["label", "n", "n_failed", "n_no_unique_mode", "mae", "mae_low", "mae_high",
                           "spearman", "vc_judge", "vc_experts"]
                rows = [[label, c["n"], c["n_failed"], c["n_no_unique_mode"], c["mae"], c["mae_ci"][0],
                         c["mae_ci"][1], c.get("spearman"), c["vc_judge"], c["vc_experts"]]
                        for label, c in block[f"by_{name}"].items()]
                run.log({f"{split}/by_{name}": wandb.Table(columns=columns, data=rows)})
        run.summary.update({k: v for k, v in summary.items() if v is not None})
        run.log({f"plots/{p.stem}": wandb.Image(str(p)) for p in images})
        run.log({"report": wandb.Html(f"<pre>{markdown}</pre>")})
    finally:
        run.finish()

"""The PNG plots of one run (``judge-eval score --png``, and W&B, which shows them): judge x expert-mode confusion
heatmaps and MAE by criterion with its interval, per test. report.html draws the same figures as SVG.

Names from the data and the judge's ``--name`` are drawn as plain text (``parse_math=False``): matplotlib reads
``$...$`` as TeX, and a criterion called "Price in $" would otherwise stop the plots with a parse error. They are
cut to the plot's width as the pages cut names (``eval.reports.names.shown_names``: first and last characters, and a
mark where two still read alike), so that two criteria differing at their ends keep different labels.

Each PNG is written whole (``judge.plumbing.atomic_write``), and a plot this scoring has no figure for (a split
without a finite MAE or a confusion matrix) removes the earlier scoring's file of that name: a PNG in ``plots/`` is
always of the ``metrics.json`` beside it. A ``score`` without ``--png`` writes no plots and leaves ``plots/`` as it
was (docs/evaluation.md).
"""

from __future__ import annotations

import math
from pathlib import Path

from eval.reports.names import shown_name, shown_names
from eval.reports.report import SPLIT_TITLES, ci_percent, fmt
from judge.metrics_json.metrics import Metrics
from judge.plumbing.atomic_write import write_atomically

__all__ = ["plot_confusions", "plot_mae_by_criterion", "write_plots"]

#: Characters of a name a plot's label holds: a panel title of the confusion heatmaps, a bar's label of the MAE plot.
_TITLE_CHARS, _BAR_LABEL_CHARS = 40, 48


def _save(fig, path: Path) -> Path:
    """``fig`` as the PNG at ``path``, replaced whole: a killed scoring leaves the earlier plot, never half of one."""
    return write_atomically(path, lambda handle: fig.savefig(handle, format="png", dpi=110))


def _remove_others(folder: Path, kind: str, written: list[Path]) -> None:
    """Remove ``kind``'s PNG of each split (``SPLIT_TITLES``) that this call did not write: an earlier scoring's plot
    of a split that has no figure now would otherwise sit beside this scoring's, read as this one's. Only those
    names: a file of the user's in ``plots/`` (``confusion_mine.png``) is no scoring's."""
    kept = {path.name for path in written}
    for split in SPLIT_TITLES:
        if (name := f"{kind}_{split}.png") not in kept:
            (folder / name).unlink(missing_ok=True)


def plot_confusions(result: Metrics, folder: Path) -> list[Path]:
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
    for split, block in result.splits.items():
        if block.confusion is None:
            continue
        panels = [("all task groups", block.confusion.all)] + list(block.confusion.by_task_group.items())
        titles = shown_names((title for title, _ in panels), _TITLE_CHARS)
        cols = min(4, len(panels))
        rows = math.ceil(len(panels) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows), squeeze=False)
        for ax in axes.flat[len(panels):]:
            ax.axis("off")
        for ax, (title, conf) in zip(axes.flat, panels):
            labels = [fmt(v, 0) if float(v).is_integer() else fmt(v, 1) for v in conf.levels]
            rows = conf.drawn_rows(labels)  # the off-scale rows where the run has any, as report.html draws them
            matrix = np.asarray([row for _, row in rows], dtype=float).reshape(len(rows), len(labels))
            ax.imshow(matrix if matrix.size else np.zeros((1, 1)), cmap="Blues")
            for (i, j), value in np.ndenumerate(matrix):
                ax.text(j, i, int(value), ha="center", va="center", fontsize=8,
                        color="white" if value > matrix.max() / 2 else "black")
            ax.set_xticks(range(len(labels)), labels)
            ax.set_yticks(range(len(rows)), [label for label, _ in rows])
            ax.set_xlabel("experts (mode)")
            ax.set_ylabel("judge")
            ax.set_title(titles[str(title)], fontsize=9, parse_math=False)
        fig.suptitle(f"{shown_name(result.judge)}: {SPLIT_TITLES[split]}", parse_math=False)
        # Fixed margins: tight_layout measures every tick label and took most of the plotting time.
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.9, wspace=0.35, hspace=0.45)
        try:
            written.append(_save(fig, folder / f"confusion_{split}.png"))
        finally:
            plt.close(fig)
    _remove_others(folder, "confusion", written)
    return written


def plot_mae_by_criterion(result: Metrics, folder: Path) -> list[Path]:
    """One PNG per split: MAE per criterion with its percentile interval (``settings.ci_level``), worst first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for split, block in result.splits.items():
        cells = [(k, c) for k, c in block.by_criterion.items() if math.isfinite(c.mae)]
        if not cells:
            continue
        cells.sort(key=lambda kc: kc[1].mae)
        shown = shown_names((k for k, _ in cells), _BAR_LABEL_CHARS)
        names = [shown[str(k)] for k, _ in cells]
        mae = np.array([c.mae for _, c in cells])
        low = np.array([c.mae_ci[0] if math.isfinite(c.mae_ci[0]) else m for (_, c), m in zip(cells, mae)])
        high = np.array([c.mae_ci[1] if math.isfinite(c.mae_ci[1]) else m for (_, c), m in zip(cells, mae)])
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.26 * len(cells)))
        # Clipped at 0: a bootstrap interval can miss its MAE by a float step (six items of |d| 0.1: MAE
        # 0.09999999999999999, interval [0.10000000000000002, 0.10000000000000002]), and matplotlib refuses a
        # negative error bar.
        xerr = [np.clip(mae - low, 0.0, None), np.clip(high - mae, 0.0, None)]
        ax.barh(range(len(cells)), mae, xerr=xerr, color="#4c72b0", ecolor="#333", capsize=2)
        ax.set_yticks(range(len(cells)), names, fontsize=7, parse_math=False)
        # --n-boot 0 draws no interval: the bars then have no whisker, and the axis claims none.
        ci = f" ({ci_percent(result.settings.ci_level)} % CI)" if result.settings.n_boot else ""
        ax.set_xlabel(f"MAE vs expert {result.target}{ci}")
        ax.set_title(f"{shown_name(result.judge)}: {SPLIT_TITLES[split]}, MAE by criterion", parse_math=False)
        height = fig.get_figheight()
        fig.subplots_adjust(left=0.45, right=0.97, bottom=0.6 / height, top=1 - 0.5 / height)
        try:
            written.append(_save(fig, folder / f"mae_by_criterion_{split}.png"))
        finally:
            plt.close(fig)
    _remove_others(folder, "mae_by_criterion", written)
    return written


def write_plots(result: Metrics, folder: Path) -> list[Path]:
    """Every PNG of a run: ``plot_confusions``, then ``plot_mae_by_criterion``."""
    return plot_confusions(result, folder) + plot_mae_by_criterion(result, folder)

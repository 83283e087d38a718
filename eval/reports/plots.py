"""The PNG plots of one run (``judge-eval score --png``, and W&B, which shows them): judge x expert-mode confusion
heatmaps and MAE by criterion with its interval, per test. report.html draws the same figures as SVG.

Names from the data and the judge's ``--name`` are drawn as plain text (``parse_math=False``): matplotlib reads
``$...$`` as TeX, and a criterion called "Price in $" would otherwise stop the plots with a parse error.
"""

from __future__ import annotations

import math
from pathlib import Path

from eval.reports.report import SPLIT_TITLES, ci_percent, fmt
from judge.metrics_json.metrics import Metrics

__all__ = ["plot_confusions", "plot_mae_by_criterion", "write_plots"]


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
        cols = min(4, len(panels))
        rows = math.ceil(len(panels) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows), squeeze=False)
        for ax in axes.flat[len(panels):]:
            ax.axis("off")
        for ax, (title, conf) in zip(axes.flat, panels):
            matrix = np.asarray(conf.matrix, dtype=float)
            labels = [fmt(v, 0) if float(v).is_integer() else fmt(v, 1) for v in conf.levels]
            ax.imshow(matrix if matrix.size else np.zeros((1, 1)), cmap="Blues")
            for (i, j), value in np.ndenumerate(matrix):
                ax.text(j, i, int(value), ha="center", va="center", fontsize=8,
                        color="white" if value > matrix.max() / 2 else "black")
            ax.set_xticks(range(len(labels)), labels)
            ax.set_yticks(range(len(labels)), labels)
            ax.set_xlabel("experts (mode)")
            ax.set_ylabel("judge")
            ax.set_title(title[:40], fontsize=9, parse_math=False)
        fig.suptitle(f"{result.judge}: {SPLIT_TITLES[split]}", parse_math=False)
        # Fixed margins: tight_layout measures every tick label and took most of the plotting time.
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.9, wspace=0.35, hspace=0.45)
        path = folder / f"confusion_{split}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
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
        names = [k if len(k) <= 48 else k[:47] + "…" for k, _ in cells]
        mae = np.array([c.mae for _, c in cells])
        low = np.array([c.mae_ci[0] if math.isfinite(c.mae_ci[0]) else m for (_, c), m in zip(cells, mae)])
        high = np.array([c.mae_ci[1] if math.isfinite(c.mae_ci[1]) else m for (_, c), m in zip(cells, mae)])
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.26 * len(cells)))
        ax.barh(range(len(cells)), mae, xerr=[mae - low, high - mae], color="#4c72b0", ecolor="#333", capsize=2)
        ax.set_yticks(range(len(cells)), names, fontsize=7, parse_math=False)
        # --n-boot 0 draws no interval: the bars then have no whisker, and the axis claims none.
        ci = f" ({ci_percent(result.settings.ci_level)} % CI)" if result.settings.n_boot else ""
        ax.set_xlabel(f"MAE vs expert {result.target}{ci}")
        ax.set_title(f"{result.judge}: {SPLIT_TITLES[split]}, MAE by criterion", parse_math=False)
        height = fig.get_figheight()
        fig.subplots_adjust(left=0.45, right=0.97, bottom=0.6 / height, top=1 - 0.5 / height)
        path = folder / f"mae_by_criterion_{split}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_plots(result: Metrics, folder: Path) -> list[Path]:
    """Every PNG of a run: ``plot_confusions``, then ``plot_mae_by_criterion``."""
    return plot_confusions(result, folder) + plot_mae_by_criterion(result, folder)

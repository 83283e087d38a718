"""The PNG plots of ``judge-eval score``: opt-in (``--png``), drawn in-process, one confusion and one MAE plot per
test."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from eval.scoring import item_table
from eval.reports.plots import write_plots
from judge.metrics_json.metrics import Metrics
from tests.support.sixty_items import sixty_item_metrics


def _metrics(tmp_path: Path, criteria=("c1", "c2", "c3", "c4"), judge_name: str = "j",
             task_groups=("g1", "g2", "g3")) -> Path:
    path = tmp_path / "metrics.json"
    path.write_text(item_table.dumps(sixty_item_metrics(criteria, judge_name, task_groups)), encoding="utf-8")
    return path


def test_write_plots_draws_a_confusion_and_an_mae_plot_per_test(tmp_path):
    """Three tests (Zero-Shot, Standard, all): six PNGs, confusions first, each a real image."""
    metrics = json.loads(_metrics(tmp_path).read_text(encoding="utf-8"))
    written = write_plots(Metrics.from_json(metrics), tmp_path / "plots")
    assert [p.name for p in written] == [f"confusion_{s}.png" for s in ("zero_shot", "standard", "all")] + [
        f"mae_by_criterion_{s}.png" for s in ("zero_shot", "standard", "all")]
    for path in written:
        width, height = Image.open(path).size
        assert width > 100 and height > 100


def test_names_with_a_dollar_are_drawn_as_text(tmp_path):
    """matplotlib reads $...$ as TeX: a criterion, task group or judge name holding one is drawn as it is, and
    the plots are written."""
    path = _metrics(tmp_path, criteria=(r"Price in $\x$", "c2", "$", "c4"), judge_name=r"judge $\alpha$ $",
                    task_groups=(r"$\x$", "g2", "g3"))
    written = write_plots(Metrics.from_json(json.loads(path.read_text(encoding="utf-8"))), tmp_path / "plots")
    assert len(written) == 6 and all(Image.open(p).size[0] > 100 for p in written)

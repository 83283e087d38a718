"""The PNG plots of ``judge-eval score``: opt-in (``--png``), drawn in-process, one confusion and one MAE plot per
test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from eval.scoring import item_table
from eval.reports.plots import write_plots
from judge.metrics_json.metrics import Metrics


def _metrics(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 60
    table = item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object), judge=rng.integers(0, 3, n).astype(float),
        status=np.array(["ok"] * n, dtype=object), error=np.array([""] * n, dtype=object),
        score_source=np.array(["verdict"] * n, dtype=object), experts=rng.integers(0, 3, (n, 3)).astype(float),
        split=np.array(["zero_shot", "standard"] * (n // 2), dtype=object),
        model_id=np.array(["m"] * n, dtype=object), task_type=np.array(["t"] * n, dtype=object),
        task_group=np.array(["g1", "g2", "g3"] * (n // 3), dtype=object),
        criteria_name=np.array(["c1", "c2", "c3", "c4"] * (n // 4), dtype=object), judge_name="j")
    result = item_table.evaluate(table, n_boot=20, vc_repeats=2)
    path = tmp_path / "metrics.json"
    path.write_text(item_table.dumps(result), encoding="utf-8")
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

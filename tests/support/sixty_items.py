"""A small scored table for the report and plot tests: 60 items over both tests, three task groups and the given
criteria, scored by ``item_table.evaluate`` (seeded, so every test reads the same metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eval.scoring import item_table


def sixty_item_metrics(criteria: Sequence[str] = ("c1", "c2", "c3", "c4"), judge_name: str = "j",
                       task_groups: Sequence[str] = ("g1", "g2", "g3"), models: Sequence[str] = ("m",)) -> Any:
    """``item_table.evaluate``'s result for 60 items (judge and three experts drawn from 0-2 with seed 0)."""
    rng = np.random.default_rng(0)
    n = 60
    table = item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object), judge=rng.integers(0, 3, n).astype(float),
        status=np.array(["ok"] * n, dtype=object), error=np.array([""] * n, dtype=object),
        score_source=np.array(["verdict"] * n, dtype=object), experts=rng.integers(0, 3, (n, 3)).astype(float),
        split=np.array(["zero_shot", "standard"] * (n // 2), dtype=object),
        model_id=np.array(list(models) * (n // len(models)), dtype=object),
        task_type=np.array(["t"] * n, dtype=object),
        task_group=np.array(list(task_groups) * (n // len(task_groups)), dtype=object),
        criteria_name=np.array(list(criteria) * (n // len(criteria)), dtype=object), judge_name=judge_name)
    return item_table.evaluate(table, n_boot=20, vc_repeats=2)

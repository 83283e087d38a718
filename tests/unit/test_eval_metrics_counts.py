"""A cell's counts as docs/evaluation.md describes them: ``n_no_unique_mode`` counts every predicted item whose
experts tie, failed ones included, so ``n - n_failed - n_no_unique_mode`` is not ``n_scored`` (it can be negative);
under ``--target mean`` the ties are scored and still counted."""

from __future__ import annotations

import numpy as np
import pytest

from eval.scoring import item_table, metrics

NAN = float("nan")


def _four_items() -> item_table.ItemTable:
    """0: parse failure, experts 0/2 (tie); 1: request failure, 1/2 (tie); 2: judged 1, experts 0/1 (tie);
    3: judged 1, experts 1/1 (mode 1)."""
    status = ["parse_failed", "request_failed", "ok", "ok"]
    n = len(status)
    return item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object), judge=np.array([NAN, NAN, 1.0, 1.0]),
        status=np.array(status, dtype=object),
        error=np.array(["no_number", "timeout", "", ""], dtype=object),
        score_source=np.array(["", "", "verdict", "verdict"], dtype=object),
        experts=metrics.pad_scores([[0, 2], [1, 2], [0, 1], [1, 1]]),
        split=np.array(["standard"] * n, dtype=object), model_id=np.array(["m"] * n, dtype=object),
        task_type=np.array(["t"] * n, dtype=object), task_group=np.array(["g"] * n, dtype=object),
        criteria_name=np.array(["c"] * n, dtype=object), judge_name="hand")


@pytest.mark.parametrize("target, n_scored, mae", [
    ("mode", 1, 0.0),  # only item 3 (judge 1, mode 1)
    ("mean", 2, 0.25),  # items 2 (judge 1, mean 0.5) and 3 (judge 1, mean 1): errors 0.5 and 0
])
def test_ties_are_counted_over_every_predicted_item_failed_ones_included(target, n_scored, mae):
    cell = item_table.evaluate(_four_items(), target=target, n_boot=0).to_json()["splits"]["all"]["overall"]
    assert (cell["n"], cell["n_failed"], cell["n_no_unique_mode"], cell["n_scored"]) == (4, 2, 3, n_scored)
    assert cell["n"] - cell["n_failed"] - cell["n_no_unique_mode"] == -1  # the docs' example: not a count of items
    assert cell["mae"] == pytest.approx(mae)

"""`out of scale` counts every parsed verdict outside its scale, also one on an item the experts tie on (no
reference, so not scored): report.md's note says so, since `scored` − `out of scale` is then fewer than the items the
`in scale` figures are over."""

from __future__ import annotations

import json

import numpy as np

from eval.reports.report import render_markdown
from eval.scoring import item_table
from judge.metrics_json.metrics import Metrics
from tests.unit.test_eval_metrics import _table


def test_an_off_scale_verdict_on_a_mode_tie_is_counted_but_not_scored_and_the_note_says_so():
    # Four items on a 0..2 scale, by hand: (7 vs mode 2) scored and off the scale; (7 on experts 0, 1: a tie)
    # off the scale, not scored; (1 vs mode 1) and (0 vs mode 0) scored inside it. scored 3, out of scale 2,
    # in scale 2 (not 3 − 2 = 1): MAE (5 + 0 + 0) / 3 = 5/3, in scale (0 + 0) / 2 = 0.
    table = _table(judge=[7, 7, 1, 0], status=["ok"] * 4, experts=[[2, 2, 1], [0, 1], [1, 1, 0], [0, 0]])
    table.in_scale = np.array([0.0, 0.0, 1.0, 1.0])
    derived = item_table.derive(table, "mode")
    result = Metrics.from_json(json.loads(item_table.dumps(item_table.evaluate(table, target="mode", n_boot=0,
                                                                              derived=derived))))
    cell = result.splits["all"].overall
    assert (cell.n_scored, cell.n_out_of_scale, cell.n_scored_in_scale) == (3, 2, 2)
    assert abs(cell.mae - 5 / 3) < 1e-12 and cell.mae_in_scale == 0.0
    text = " ".join(render_markdown(result).split())
    assert ("`out of scale` counts every parsed verdict outside its scale, those on an item without a reference (a "
            "mode tie) too, so `scored` − `out of scale` can be fewer than the items the `in scale` columns are "
            "over; those columns give the figures without the scored verdicts outside their scale (\"=\" when no "
            "verdict was outside its scale)") in text  # not "without the scored ones", which read as every scored item

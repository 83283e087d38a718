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


def test_a_judges_minus_one_off_its_scale_is_counted_apart_and_named_in_the_report():
    """A judge's -1 on a 0..2 scale is the release's abstention code (an expert's "not applicable"), which a judge
    that saw it may write: it is scored as out of scale (the paper scores every off-scale verdict), and counted apart
    as `n_out_of_scale_minus_one` in metrics.json, with a sentence in report.md naming it, not left inside the
    other off-scale numbers. A -1 on a scale that holds -1 is a level, not counted."""
    # (-1 vs mode 2) and (-1 vs mode 0) off 0..2, (7 vs mode 1) off it too, (-1 vs mode -1) on a -1..1 scale.
    table = _table(judge=[-1, -1, 7, -1], status=["ok"] * 4, experts=[[2, 2, 1], [0, 0, 1], [1, 1], [-1, -1, 0]])
    table.in_scale = np.array([0.0, 0.0, 0.0, 1.0])
    derived = item_table.derive(table, "mode")
    written = json.loads(item_table.dumps(item_table.evaluate(table, target="mode", n_boot=0, derived=derived)))
    assert written["splits"]["all"]["overall"]["n_out_of_scale"] == 3
    assert written["splits"]["all"]["overall"]["n_out_of_scale_minus_one"] == 2
    result = Metrics.from_json(written)
    assert result.splits["all"].overall.n_out_of_scale_minus_one == 2
    text = " ".join(render_markdown(result).split())
    assert ("**2 of the 3 verdicts outside their scale are `-1`**, the release's code for an expert's abstention "
            "(\"not applicable\"): the judge's answer, scored as out of scale like any other (in the headline "
            "figures, not in the `in scale` ones), counted apart in `metrics.json` "
            "(`n_out_of_scale_minus_one`).") in text


def test_no_minus_one_no_sentence():
    table = _table(judge=[7, 1], status=["ok"] * 2, experts=[[2, 2, 1], [1, 1]])
    table.in_scale = np.array([0.0, 1.0])
    result = item_table.evaluate(table, target="mode", n_boot=0, derived=item_table.derive(table, "mode"))
    assert result.splits["all"].overall.n_out_of_scale_minus_one == 0
    assert "`-1`**" not in render_markdown(Metrics.from_json(json.loads(item_table.dumps(result))))


def test_judge_minus_one_fail_fails_only_a_minus_one_off_its_scale():
    """``--judge-minus-one fail``'s table: the two -1s off 0..2 become failed verdicts of their own code, no score;
    the 7 off the scale stays scored, and a -1 on a -1..1 scale is a level, left as it is. By hand: scored (7 vs 1)
    and (-1 vs -1), MAE (6 + 0) / 2 = 3, out of scale 1, failed 2."""
    table = _table(judge=[-1, -1, 7, -1], status=["ok"] * 4, experts=[[2, 2, 1], [0, 0, 1], [1, 1], [-1, -1, 0]])
    table.in_scale = np.array([0.0, 0.0, 0.0, 1.0])
    failed, n = item_table.fail_minus_one(table)
    assert n == 2 and list(failed.status) == ["parse_failed", "parse_failed", "ok", "ok"]
    assert list(failed.error[:2]) == [item_table.MINUS_ONE_FAILED] * 2 and np.isnan(failed.judge[:2]).all()
    assert list(table.status) == ["ok"] * 4  # the table given is left as it was
    result = item_table.evaluate(failed, target="mode", n_boot=0, derived=item_table.derive(failed, "mode"))
    cell = result.splits["all"].overall
    assert (cell.n, cell.n_failed, cell.n_scored, cell.n_out_of_scale, cell.mae) == (4, 2, 2, 1, 3.0)
    assert item_table.fail_minus_one(failed) == (failed, 0)


def test_a_file_without_the_out_of_scale_counts_shows_them_as_not_known():
    """A metrics.json written before the out-of-scale counts existed (and one without n_vc): report.md writes "—",
    as report.html and compare.md do, never "0 out of scale" nor "=" (in-scale figures equal the headline), which
    the file does not say."""
    from eval.reports.report import _header

    table = _table(judge=[7, 1, 0, 2], status=["ok"] * 4, experts=[[2, 2, 1], [1, 1, 0], [0, 0], [2, 2]])
    table.in_scale = np.array([0.0, 1.0, 1.0, 1.0])
    written = json.loads(item_table.dumps(item_table.evaluate(table, target="mode", n_boot=0,
                                                              derived=item_table.derive(table, "mode"))))
    overall = written["splits"]["all"]["overall"]
    assert overall["n_out_of_scale"] == 1
    for key in [k for k in overall if "out_of_scale" in k or "in_scale" in k] + ["n_vc"]:
        del overall[key]
    text = render_markdown(Metrics.from_json(written))
    head = _header("Test", True, summary=True)
    rows = [line for line in text.splitlines() if line.startswith("| Zero-Shot + Standard |")]
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert len(cells) == len(head)
    shown = dict(zip(head, cells))
    assert shown["out of scale"] == "—" and shown["MAE in scale"] == "—" and shown["Spearman in scale"] == "—"
    assert shown["n VC"] == "—"

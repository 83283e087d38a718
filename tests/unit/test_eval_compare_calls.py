"""``judge-eval compare``'s calls: Verdict Confidence paired under one draw where the runs were scored with different
``--seed`` or ``--vc-repeats``, and the tables by evaluated model, task type and criterion called on Holm-adjusted
p-values while the overall cells keep their own."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from eval.scoring import bootstrap, item_table
from eval.scoring.comparison import Comparison, Paired
from tests.unit.test_eval_metrics import _table


def _scored_run(folder, name, table, seed=0, vc_repeats=100, n_boot=50):
    """A run folder as ``judge-eval score`` writes it: items.parquet with the columns compare pairs on, drawn with
    ``seed`` and ``vc_repeats``, and metrics.json."""
    derived = item_table.derive(table, "mode", vc_repeats=vc_repeats, seed=seed)
    result = json.loads(item_table.dumps(item_table.evaluate(table, target="mode", n_boot=n_boot, seed=seed,
                                                             vc_repeats=vc_repeats, derived=derived)))
    result["judge"] = name
    extra = {"reference": derived.reference, "vc_judge": derived.vc_judge, "vc_experts": derived.vc_experts}
    folder.mkdir()
    item_table.write_table(table, folder / "items.parquet", extra=extra)
    (folder / "metrics.json").write_text(json.dumps(result), encoding="utf-8")
    return folder


def _random_verdicts(n=300):
    """n items on a 0-2 scale, three experts and a judge all at random: one judge's verdicts, to be scored twice."""
    rng = np.random.default_rng(7)
    experts = rng.integers(0, 3, (n, 3)).tolist()
    return _table(rng.integers(0, 3, n).astype(float).tolist(), ["ok"] * n, experts)


@pytest.mark.parametrize("seed, vc_repeats", [(9, 100), (0, 50)])
def test_one_judges_verdicts_scored_with_other_vc_draws_pair_to_no_vc_difference(tmp_path, seed, vc_repeats):
    """The same 300 verdicts scored with --seed 0 --vc-repeats 100 (the baseline) and with another seed or repeat
    count. Each items.parquet holds the VC of its own draws, which differ item by item; paired as written, the
    draws alone are called a difference (seed 9: "worse", p 0.014 on the 300 items). Drawn again under the
    baseline's settings, both sides are the same numbers: delta 0 in every VC cell, n.s., and the baseline's side
    is its own VC. The headline says the settings differ and what the pairing did."""
    from eval.scoring.compare import _verdict, compare, headline

    table = _random_verdicts()
    a = _scored_run(tmp_path / "A", "a", table)
    b = _scored_run(tmp_path / "B", "b", table, seed=seed, vc_repeats=vc_repeats)
    if seed == 9:  # the VC columns as written, paired as compare pairs its overall cell: the draws are "worse"
        written = [item_table.read_table(run / "items.parquet")[1]["vc_judge"] for run in (a, b)]
        found = bootstrap.paired_bootstrap(written[0], written[0], written[1], written[1], "mean", 1000,
                                           bootstrap.cell_rng(0, "all/overall/vc_judge"))
        assert _verdict(found["delta"], found["p_value"], "vc_judge", 0.05, found["n"], found["n_resamples"]) == "worse"
    result = compare([a, b], n_boot=1000)
    block = result.comparisons[0].splits["all"]
    cells = [block.overall["vc_judge"]] + [c["vc_judge"] for name in ("model", "task_type", "criterion")
                                           for c in block.by(name).values()]
    assert all(c.delta == 0.0 and c.verdict == "n.s." and c.n == 300 for c in cells)
    own = json.loads((a / "metrics.json").read_text(encoding="utf-8"))["splits"]["all"]["overall"]["vc_judge"]
    assert block.overall["vc_judge"].a == pytest.approx(own) and block.overall["vc_judge"].b == pytest.approx(own)
    assert headline(result)[0] == (
        f"b's Verdict Confidence was scored with --seed {seed} --vc-repeats {vc_repeats}, a's with --seed 0 "
        "--vc-repeats 100: the paired VC draws both again under the baseline's (seed 0, 100 repeats), so that its "
        "delta is the judges' and not the draws'; each run's own VC (its metrics.json) is of its own draws.")


def test_runs_scored_with_one_draw_pair_their_vc_as_written_and_say_nothing(tmp_path):
    """Same --seed and --vc-repeats: each side's VC is its items.parquet's (the run's own metrics.json figure),
    and no sentence about the draws."""
    from eval.scoring.compare import compare, headline

    table = _random_verdicts()
    other = dataclasses.replace(table, judge=np.roll(table.judge, 1))
    a, b = _scored_run(tmp_path / "A", "a", table), _scored_run(tmp_path / "B", "b", other)
    paired = compare([a, b], n_boot=50).comparisons[0].splits["all"].overall["vc_judge"]
    own = [json.loads((run / "metrics.json").read_text(encoding="utf-8"))["splits"]["all"]["overall"]["vc_judge"]
           for run in (a, b)]
    assert [paired.a, paired.b] == pytest.approx(own)
    assert not any("Verdict Confidence" in line for line in headline(compare([a, b], n_boot=50)))


def _cell(delta, p_value, n_units=100, n_resamples=1000):
    return Paired(n_units, 1.0, 1.0 + delta, delta, (delta, delta), p_value, "better" if p_value < 0.05 else "n.s.",
                  n_resamples, n_units)


def test_a_tables_calls_are_read_against_holm_adjusted_p_values():
    """Four criteria, MAE lower for the run in each: raw p 0 (from 1,000 resamples: p < 0.002, entered as 0.002),
    0.03, 0.04, and 0.001 over 10 paired items (too few to call: outside the family). Holm over the three others,
    by hand: sorted 0.002, 0.03, 0.04 times 3, 2, 1 -> 0.006, 0.06, max(0.06, 0.04) = 0.06. Only the first is
    called; each keeps its raw p; the small cell has no adjusted p and stays n.s."""
    from eval.scoring.compare import _holm

    table = {"c1": {"mae": _cell(-0.2, 0.0)}, "c2": {"mae": _cell(-0.1, 0.03)}, "c3": {"mae": _cell(-0.1, 0.04)},
             "c4": {"mae": dataclasses.replace(_cell(-0.3, 0.001, n_units=10), verdict="n.s.")}}
    called = _holm(table, 0.05)
    assert {label: cells["mae"].p_holm for label, cells in called.items()} == pytest.approx(
        {"c1": 0.006, "c2": 0.06, "c3": 0.06, "c4": None})
    assert {label: cells["mae"].verdict for label, cells in called.items()} == {
        "c1": "better", "c2": "n.s.", "c3": "n.s.", "c4": "n.s."}
    assert [cells["mae"].p_value for cells in called.values()] == [0.0, 0.03, 0.04, 0.001]


@pytest.mark.parametrize("n_boot, p_holm, call", [(50, 0.08, "n.s."), (100, 0.04, "better")])
def test_criteria_are_called_on_holm_and_the_overall_cell_on_its_own_p(tmp_path, n_boot, p_holm, call):
    """Two criteria of 40 items each, three experts agreeing on 1: the baseline says 2 everywhere, the run 1. Every
    resample's MAE delta is -1 and its VC delta 1 - 2/3 = 1/3, so every raw p is 0, i.e. below 2 / n_boot. The
    overall cell is called on its own p (better; no adjusted p). Each criterion table holds two callable cells:
    Holm on the bound 2 / n_boot gives 2 x 2/50 = 0.08 (n.s.) at 50 resamples and 2 x 2/100 = 0.04 (better) at
    100: two cells need 2 x 2 / 0.05 = 80 resamples."""
    from eval.scoring.compare import compare, render_markdown

    n = 80
    base = dataclasses.replace(_table([2.0] * n, ["ok"] * n, [[1, 1, 1]] * n),
                               criteria_name=np.array(["c1"] * 40 + ["c2"] * 40, dtype=object))
    run = dataclasses.replace(base, judge=np.ones(n))
    a, b = _scored_run(tmp_path / "A", "a", base), _scored_run(tmp_path / "B", "b", run)
    result = compare([a, b], n_boot=n_boot)
    block = result.comparisons[0].splits["all"]
    for metric in ("mae", "vc_judge"):
        overall = block.overall[metric]
        assert (overall.p_value, overall.p_holm, overall.verdict) == (0.0, None, "better")
        for label in ("c1", "c2"):
            cell = block.by_criterion[label][metric]
            assert (cell.p_value, cell.p_holm, cell.verdict) == (0.0, pytest.approx(p_holm), call)
    # compare.json keeps both p-values: written and read back
    again = Comparison.from_json(json.loads(item_table.dumps(result))).comparisons[0].splits["all"]
    assert again.by_criterion["c1"]["mae"].p_holm == pytest.approx(p_holm) and again.overall["mae"].p_holm is None
    # compare.md: the criterion table shows both p-values and the call read against the adjusted one
    rows = [line for line in render_markdown(result).splitlines() if line.startswith("| c1 | 1.000 | 0.000 | -1.000 |")]
    assert len(rows) == 2  # the Standard test's paired row and both tests' together
    assert all(f"| < {2 / n_boot:.3g} | {p_holm:.3f} | {call} | 40 |" in row for row in rows)
    # compare.html: a criterion cell shows the adjusted p its call is read against beside the raw one; the overall
    # cell, called on its own p, shows none
    from eval.reports.html_report import render_compare_page

    page = render_compare_page(result, None)
    assert page.count(f"p &lt; {2 / n_boot:.3g}, Holm p = {p_holm:.3f}") == 2 * 2 * 2  # 2 criteria x 2 metrics x 2 rows
    assert "Holm-adjusted within each table" in page
    # the headline says when a table's family is too large for the resamples drawn: two criteria need 2 x 2 / 0.05
    # = 80 resamples, so at 50 a sentence names the figure and at 100 none is written
    from eval.scoring.compare import headline

    said = [line for line in headline(result) if "Holm's adjustment" in line]
    assert said == ([] if n_boot >= 80 else [
        "b vs a: a table by criterion holds up to 2 cells to call, which Holm's adjustment can call only with at "
        "least 80 resamples (2 m / alpha); with --n-boot 50 a cell whose resamples all agree may still read n.s. "
        "there."])

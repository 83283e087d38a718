"""``judge-eval compare``'s calls: Verdict Confidence paired under one draw where the runs were scored with different
``--seed`` or ``--vc-repeats``, and the tables by evaluated model, task type and criterion called on Holm-adjusted
p-values while the overall cells keep their own."""

from __future__ import annotations

import dataclasses
import html
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
    # compare.html says it too, under the comparison's heading, where its paired VC table is
    from eval.reports.html_report import render_compare_page

    page = render_compare_page(result, None)
    assert page.index(f'<p class="note">{html.escape(headline(result)[0])}</p>') > page.index('<h2 id="cmp-0">')


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


@pytest.mark.parametrize("n_boot, p_holm, call", [(41, 4 / 41, "n.s."), (50, 0.08, "n.s."), (80, 0.05, "n.s."),
                                                  (100, 0.04, "better")])
def test_criteria_are_called_on_holm_and_the_overall_cell_on_its_own_p(tmp_path, n_boot, p_holm, call):
    """Two criteria of 40 items each, three experts agreeing on 1: the baseline says 2 everywhere, the run 1. Every
    resample's MAE delta is -1 and its VC delta 1 - 2/3 = 1/3, so every raw p is 0, i.e. below 2 / n_boot. The
    overall cell is called on its own p (better; no adjusted p). Each criterion table holds two callable cells:
    Holm on the bound 2 / n_boot gives 2 x 2/41 = 0.098 and 2 x 2/50 = 0.08 (n.s.), at 80 resamples 2 x 2/80 = 0.05,
    not below alpha (n.s.), and 2 x 2/100 = 0.04 (better) at 100: two cells need more than 2 x 2 / 0.05 = 80
    resamples, 81. The one model's and the one task type's tables hold one cell each, callable from 41 resamples,
    as the overall cell (below 41 no cell is callable, so no family is too large)."""
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
    # every adjusted p here rests on the bound 2 / n_boot: an upper bound, written "≤"
    assert all(f"| < {2 / n_boot:.3g} | ≤ {p_holm:.3f} | {call} | 40 |" in row for row in rows)
    # compare.html: a criterion cell shows the adjusted p its call is read against beside the raw one; the overall
    # cell, called on its own p, shows none
    from eval.reports.html_report import render_compare_page

    page = render_compare_page(result, None)
    assert page.count(f"p &lt; {2 / n_boot:.3g}, Holm p ≤ {p_holm:.3f}") == 2 * 2 * 2  # 2 criteria x 2 metrics x 2 rows
    assert "Holm-adjusted per metric within each table" in page
    # the headline says when a table's family is too large for the resamples drawn: two criteria need 81
    # resamples; at 100 nothing is said. compare.html shows the same sentences under
    # the comparison's heading.
    from eval.scoring.compare import headline

    said = [line for line in headline(result) if "Holm's adjustment" in line]
    two = ("b vs a: a table by criterion holds up to 2 cells to call, which Holm's adjustment can call only with at "
           f"least 81 resamples (more than 2 m / alpha); with --n-boot {n_boot} a cell whose resamples all agree may "
           "still read n.s. there.")
    assert said == {41: [two], 50: [two], 80: [two], 100: []}[n_boot]
    heading = page.index('<h2 id="cmp-0">')
    assert all(page.index(f'<p class="note">{html.escape(line)}</p>') > heading for line in said)


def test_a_holm_p_resting_on_a_bound_is_marked_an_upper_bound():
    """Holm over c1 (raw p 0 from 1,000 resamples: entered as 0.002), c2 (raw 0.002, exact) and c3 (raw 0.04). By
    hand: sorted 0.002 (c1, the bound, ranked first of the tie), 0.002, 0.04 times 3, 2, 1 -> 0.006, max(0.006,
    0.004) = 0.006, max(0.006, 0.04) = 0.04. c1's adjusted p rests on its bound, c2's is c1's (the running
    maximum), both upper bounds; c3's is its own. compare.html writes the bounds "Holm p ≤", the other "Holm p =";
    compare.md "≤ 0.006"."""
    from eval.reports.html_report import _paired_table
    from eval.scoring.compare import _holm, holm_upper_bounds

    called = _holm({"c1": {"mae": _cell(-0.2, 0.0)}, "c2": {"mae": _cell(-0.1, 0.002)},
                    "c3": {"mae": _cell(-0.1, 0.04)}}, 0.05)
    assert {label: cells["mae"].p_holm for label, cells in called.items()} == pytest.approx(
        {"c1": 0.006, "c2": 0.006, "c3": 0.04})
    assert holm_upper_bounds(called) == {("c1", "mae"), ("c2", "mae")}
    page = _paired_table("Criterion", called, ["mae"], "t", 1000)
    assert page.count("Holm p ≤ 0.006") == 2 and page.count("Holm p = 0.040") == 1


def test_a_compare_json_without_holm_p_values_is_not_said_to_be_holm_adjusted(tmp_path):
    """A comparison whose table cells carry no p_holm (a compare.json written before the adjustment, read back):
    compare.html's subtitle and compare.md's note do not call its calls Holm-adjusted; the comparison compare just
    made says Holm's family is per metric and needs more than 2 m / alpha resamples."""
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, holm_applied, render_markdown

    table = _random_verdicts()
    a = _scored_run(tmp_path / "A", "a", table)
    b = _scored_run(tmp_path / "B", "b", dataclasses.replace(table, judge=np.roll(table.judge, 1)))
    result = compare([a, b], n_boot=50)
    written = json.loads(item_table.dumps(result))
    assert holm_applied(result)
    note = next(line for line in render_markdown(result).splitlines() if line.startswith("Paired: delta"))
    assert "so that, per metric, a table's chance of any false call stays at most 0.05" in note
    assert "a call in a table of m such cells needs more than 2 m / alpha resamples" in note
    # what is left unadjusted, and what n.s. does not say
    assert "The overall rows are called on their own p, each test, metric and compared run at 0.05, not" in note
    assert "n.s. says no difference was shown, not that the runs are equal" in note
    for split in written["comparisons"][0]["splits"].values():
        for grouping in ("by_model", "by_task_type", "by_criterion"):
            for cells in split[grouping].values():
                for cell in cells.values():
                    cell.pop("p_holm", None)
    older = Comparison.from_json(written)
    assert not holm_applied(older)
    assert "Holm" not in render_compare_page(older, None).split("</header>")[0]
    note = next(line for line in render_markdown(older).splitlines() if line.startswith("Paired: delta"))
    assert "Holm" not in note and note.endswith("Every row is called on its own p.")


def test_a_holm_p_bound_is_written_rounded_up():
    """Two cells of raw p 0 over 10,000 resamples: each enters as 2 / 10,000 = 0.0002; Holm by hand: 2 x 0.0002 =
    0.0004, then max(0.0004, 1 x 0.0002) = 0.0004, both upper bounds. Rounded to 3 decimals that would read
    "≤ 0.000", below the bound: both pages write it rounded up, "≤ 0.001"; a bound of 0.0234 reads "0.024", one of
    exactly 0.006 stays "0.006"."""
    from eval.reports.html_report import _paired_table
    from eval.scoring.compare import _cell as md_cell, _holm, fmt_p_bound, holm_upper_bounds

    called = _holm({"c1": {"mae": _cell(-0.2, 0.0, n_resamples=10000)},
                    "c2": {"mae": _cell(-0.1, 0.0, n_resamples=10000)}}, 0.05)
    assert [cells["mae"].p_holm for cells in called.values()] == pytest.approx([0.0004, 0.0004])
    assert holm_upper_bounds(called) == {("c1", "mae"), ("c2", "mae")}
    assert md_cell(called["c1"]["mae"], 10000, holm=True, bound=True)[4:6] == ["< 0.0002", "≤ 0.001"]
    page = _paired_table("Criterion", called, ["mae"], "t", 10000)
    assert page.count("Holm p ≤ 0.001") == 2 and "0.000<" not in page and "≤ 0.000" not in page
    assert (fmt_p_bound(0.0234), fmt_p_bound(0.006), fmt_p_bound(1.0)) == ("0.024", "0.006", "1.000")


def test_a_holm_family_over_several_resample_counts_marks_each_cell_a_bound_could_lower():
    """A: raw p 0 over 800 resamples (a Spearman cell defined in 800 of 1,000), entered as 2 / 800 = 0.0025; B: raw
    0.002 over 1,000, exact; C: raw 0.3 over 1,000. Holm by hand: ranked B 0.002, A 0.0025, C 0.3; terms 3 x 0.002 =
    0.006, 2 x 0.0025 = 0.005, 1 x 0.3 = 0.3; adjusted B 0.006, A max(0.006, 0.005) = 0.006, C 0.3. Were A's true p
    0.0001, A would rank first: terms 0.0003, 2 x 0.002 = 0.004, 0.3, so B's adjusted p would be 0.004 < 0.006: B's
    is an upper bound too, though ranked before A. C's own term sets its 0.3 either way: exact."""
    from eval.scoring.compare import _holm, holm_upper_bounds

    called = _holm({"A": {"mae": _cell(-0.2, 0.0, n_resamples=800)}, "B": {"mae": _cell(-0.1, 0.002)},
                    "C": {"mae": _cell(-0.1, 0.3)}}, 0.05)
    assert {label: cells["mae"].p_holm for label, cells in called.items()} == pytest.approx(
        {"A": 0.006, "B": 0.006, "C": 0.3})
    assert holm_upper_bounds(called) == {("A", "mae"), ("B", "mae")}


def test_a_holm_family_is_measured_against_its_fewest_resamples():
    """A criterion table of two callable Spearman-like cells under --n-boot 1,000, one defined in all 1,000
    resamples, the other in 60: two cells need more than 2 x 2 / 0.05 = 80 resamples (81), which 60 is not, so the
    headline says so though --n-boot is well above 81; the tables by model and task type hold no cell."""
    from types import SimpleNamespace

    from eval.scoring.compare import _families_too_large
    from eval.scoring.comparison import SplitComparison

    cells = {"c1": {"mae": dataclasses.replace(_cell(-0.1, 0.0, n_resamples=1000), p_holm=0.004)},
             "c2": {"mae": dataclasses.replace(_cell(-0.1, 0.0, n_resamples=60), p_holm=0.04)}}
    block = SplitComparison(overall={}, by_model={}, by_task_type={}, by_criterion=cells)
    comp = SimpleNamespace(run="b", splits={"all": block})
    result = SimpleNamespace(n_boot=1000, alpha=0.05, baseline="a")
    assert _families_too_large(comp, result) == [
        "b vs a: a table by criterion holds up to 2 cells to call, which Holm's adjustment can call only with at "
        "least 81 resamples (more than 2 m / alpha); with --n-boot 1000 (as few as 60 where a cell's metric is "
        "defined) a cell whose resamples all agree may still read n.s. there."]


def test_a_holm_family_needs_more_than_2m_over_alpha_resamples():
    """The counts the help, docs and headline name: 41 for one cell at alpha 0.05 (2 / 0.05 = 40 is not enough: the
    adjusted p 2 / 40 = 0.05 is no p below alpha), 81 for two, 1,001 for 25 criteria, 2,641 for 66."""
    from eval.scoring.resample_rules import resamples_for_family

    assert [resamples_for_family(m, 0.05) for m in (1, 2, 25, 66)] == [41, 81, 1001, 2641]


def test_a_comparison_is_reproduced_by_its_seed_and_moves_with_another(tmp_path):
    """Each cell draws from ``cell_rng(seed, its name)``: compare of the same runs under one --seed writes the same
    compare.json again, cell for cell, and another seed draws other resamples (intervals and p-values move, deltas
    do not)."""
    from eval.scoring.compare import compare

    table = _random_verdicts()
    a = _scored_run(tmp_path / "A", "a", table)
    b = _scored_run(tmp_path / "B", "b", dataclasses.replace(table, judge=np.roll(table.judge, 1)))
    first, again, other = (json.loads(item_table.dumps(compare([a, b], n_boot=200, seed=seed))) for seed in (3, 3, 4))
    assert first == again
    cells = [c["comparisons"][0]["splits"]["all"]["overall"]["mae"] for c in (first, other)]
    assert cells[0]["delta"] == cells[1]["delta"] and cells[0]["ci"] != cells[1]["ci"]


def test_paired_interval_and_p_read_one_count_of_the_resamples(monkeypatch):
    """80 resamples by hand over two cells (the run's Verdict Confidence -1 on one item, +1 on three; the
    baseline's 0): two resamples draw only the -1 item (delta -1), 78 only the +1 items (delta +1). p = 2 * 2/80 =
    0.05, not below alpha 0.05: n.s. Interpolated percentiles put the low end at -1 + 0.975 * 2 = 0.95, an interval
    that excludes 0 beside that n.s.; read by one count (k = 2: 2 * 1/80 < 0.05 <= 2 * 2/80), it is [-1, 1]."""
    def weights(counts, n_boot, rng, cell_of_item=None, clusters=None):
        lone = (counts == 1).astype(float)  # the cell of the -1 item
        return [np.vstack([lone] * 2 + [1.0 - lone] * 78)]

    monkeypatch.setattr(bootstrap, "_weights", weights)
    zeros = np.zeros(4)
    found = bootstrap.paired_bootstrap(zeros, zeros, np.array([-1.0, 1.0, 1.0, 1.0]), zeros, "mean", n_boot=80,
                                       alpha=0.05)
    assert found["n_resamples"] == 80
    assert found["p_value"] == pytest.approx(0.05)
    assert found["ci"] == [-1.0, 1.0]


def test_paired_interval_excludes_zero_exactly_when_p_is_below_alpha():
    """Over drawn data (30 items, a few of them mended by the run; 100 resamples, where p moves in steps of 0.02),
    the interval excludes 0 exactly when p < alpha, at two levels."""
    for seed in range(120):
        rng = np.random.default_rng(seed)
        reference = rng.integers(0, 3, 30).astype(float)
        base = rng.integers(0, 3, 30).astype(float)
        run = base.copy()
        mended = rng.choice(30, int(rng.integers(1, 6)), replace=False)
        run[mended] = reference[mended]
        for alpha in (0.05, 0.1):
            found = bootstrap.paired_bootstrap(base, reference, run, reference, "mae", n_boot=100,
                                               rng=np.random.default_rng(seed), alpha=alpha)
            low, high = found["ci"]
            assert (low > 0 or high < 0) == (found["p_value"] < alpha), (seed, alpha, found)

"""``judge-eval compare``'s compare.md: what it must say beside the numbers. Runs whose Spearman has different
references (``--spearman-target``), an unfinished run and the items the runs share, and a comparison drawn without
resamples (``--n-boot 0``)."""

from __future__ import annotations

import html
import json

import pytest

from eval.scoring import item_table
from tests.unit.test_eval_metrics import _table

NAN = float("nan")
# Forty items on a 0-2 scale: experts whose mean differs from their mode, and a judge right on most of them.
EXPERTS = [[0, 0, 1], [1, 1, 2], [2, 2, 1], [0, 1, 1], [2, 1, 1]] * 8
JUDGE = [0.0, 1, 2, 1, 0, 0, 2, 2, 1, 1, 1, 1, 2, 0, 1, 0, 1, 1, 1, 2] * 2


def _scored_run(folder, name, judge, experts, status=None, spearman_target=None, n_boot=50, split=None,
                target="mode", models=None):
    """A run folder as ``judge-eval score`` writes it (items.parquet with the references compare pairs on, and
    metrics.json), scored against the experts' ``target`` with ``spearman_target`` for the correlations; ``split``:
    each item's test (default: Standard); ``models``: each item's evaluated model (default: one)."""
    status = status or ["ok"] * len(judge)
    table = _table(judge, status, experts, split=split, models=models)
    derived = item_table.derive(table, target, spearman_target=spearman_target)
    result = json.loads(item_table.dumps(item_table.evaluate(table, target=target, n_boot=n_boot, derived=derived,
                                                             spearman_target=spearman_target)))
    result["judge"] = name
    extra = {"reference": derived.reference, "vc_judge": derived.vc_judge, "vc_experts": derived.vc_experts}
    if derived.spearman_reference is not derived.reference:
        extra["spearman_reference"] = derived.spearman_reference
    folder.mkdir()
    item_table.write_table(table, folder / "items.parquet", extra=extra)
    (folder / "metrics.json").write_text(json.dumps(result), encoding="utf-8")
    return folder


def test_identical_scores_against_two_spearman_references_are_said_to_be_so(tmp_path):
    """One judge's scores, scored twice: Spearman against the experts' mode, then their mean. Each side's Spearman is
    against its own reference (what its metrics.json reports), so the paired delta is not 0 for identical scores: the
    headline says the references differ, as it does for MAE's, and every Spearman row names each side's."""
    from eval.scoring.compare import compare, decision, headline, render_markdown

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS, spearman_target="mean")
    result = compare([a, b], n_boot=50)
    paired = result.comparisons[0].splits["all"].overall["spearman"]
    assert paired.delta != 0  # identical scores: the difference is the references'

    said = headline(result)
    assert said[0].startswith("b's Spearman is against the experts' mean, a's against their mode (--spearman-target)")
    text = render_markdown(result)
    assert "| Spearman (baseline vs experts' mode, run vs their mean) |" in text
    own = [line for line in text.splitlines() if line.startswith("| Standard test | Spearman |")]
    assert len(own) == 1 and "(vs mode)" in own[0] and "(vs mean)" in own[0]
    assert ": Spearman by evaluated model (each run against its own reference: a: experts' mode, b: experts' mean)" \
        in text

    # the decision reads no Spearman call: its delta is the references' as well as the judges'
    said = decision(result, 0)
    assert "Spearman n.s." not in said and "; Spearman left out: the runs' references differ)." in said

    # One reference on both sides: nothing said, nothing marked.
    same = compare([a, _scored_run(tmp_path / "C", "c", JUDGE, EXPERTS)], n_boot=50)
    assert not any("Spearman is against" in line for line in headline(same))
    assert "Spearman n.s." in decision(same, 0) and "left out" not in decision(same, 0)
    assert "(vs mode)" not in render_markdown(same) and "Spearman (baseline" not in render_markdown(same)


def test_identical_scores_against_two_mae_targets_leave_mae_out_of_the_decision(tmp_path):
    """One judge's scores, scored against the experts' mode, then their mean (--target auto over a seq2seq and a
    regression judge), Spearman against the mode on both: the MAE delta is the targets', not the judges', so the
    decision's word leaves it out and says why, as it does for Spearman against two references."""
    from eval.scoring.compare import compare, decision

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS, target="mean", spearman_target="mode")
    result = compare([a, b], n_boot=200)
    mae = result.comparisons[0].splits["all"].overall["mae"]
    assert mae.delta != 0 and (mae.verdict, mae.why_no_call) == ("—", "targets differ")  # the targets' delta
    said = decision(result, 0)
    assert "MAE" not in said.split("; MAE left out")[0] and "Spearman n.s." in said
    assert "; MAE left out: the runs' targets differ (a: experts' mode, b: their mean))." in said
    assert "left out" not in decision(compare([a, _scored_run(tmp_path / "C", "c", JUDGE, EXPERTS)], n_boot=200), 0)


def test_compare_md_counts_the_items_without_a_prediction_and_those_both_runs_share(tmp_path):
    """An unfinished run (ten items without a prediction) beside a finished one: each run's own table counts the
    items without a prediction and those scored, and each comparison says how many items the runs share."""
    from eval.scoring.compare import compare, render_markdown

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    status = ["missing"] * 10 + ["ok"] * 30
    b = _scored_run(tmp_path / "B", "b", [NAN] * 10 + JUDGE[10:], EXPERTS, status=status)
    text = render_markdown(compare([a, b], n_boot=50))
    rows = {line.split("|")[2].strip(): [c.strip() for c in line.strip().strip("|").split("|")[2:]]
            for line in text.splitlines() if line.startswith("| Standard test |")}
    assert rows["no prediction"] == ["0", "10"]
    assert rows["failed / n"] == ["0 / 40", "0 / 30"]
    own = json.loads((b / "metrics.json").read_text(encoding="utf-8"))["splits"]["standard"]["overall"]
    assert rows["scored"][1] == str(own["n_scored"])
    lines = text.splitlines()
    heading = lines.index("## b vs a")
    assert lines[heading + 2].startswith("40 items in both runs")


def test_no_resamples_are_said_so_not_shown_as_empty_intervals(tmp_path):
    """``--n-boot 0``: the headline gives the delta and the paired items and says MAE, Spearman and VC have no
    interval or call, and the notes under compare.md's tables and atop compare.html claim no resamples nor calls at
    p < alpha, and say the one call still made: the failed verdicts', McNemar's exact test, which draws none."""
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, headline, render_markdown

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS, n_boot=0)
    b = _scored_run(tmp_path / "B", "b", [1.0] * 40, EXPERTS, n_boot=0)
    result = compare([a, b], n_boot=0)
    said = headline(result)
    assert said and all(line.endswith("paired items): no interval or call for MAE, Spearman or VC (--n-boot 0)")
                        for line in said)
    assert not any("CI [" in line or "p = " in line for line in said)
    note = ("Paired: delta = run − baseline on the items both scored; no resample drawn (--n-boot 0), so MAE, "
            "Spearman and VC have no interval, p-value or call (their cells read —); the failed verdicts are still "
            "called, by McNemar's exact test on the items both runs predicted, which draws no resample (the decision "
            "says so where one run fails on more items than the other beyond chance).")
    text = render_markdown(result)
    assert note in text
    assert "paired bootstrap resamples" not in text and "better/worse at p <" not in text
    page = render_compare_page(result, None)
    assert html.escape(note) in page
    assert "better/worse called at p &lt;" not in page and "0 resamples" not in page


def test_what_a_runs_report_says_beside_its_numbers_is_said_in_the_comparison_too(tmp_path, capsys):
    """An unfinished run beside a finished one: the sentence its own report.md leads with (``run_notes``) is in
    compare.md, compare.html and the console, under the run's name; the finished run, with nothing to say, gets no
    line, and two finished runs no section. A comparison read alone once counted the unfinished run's items in a
    table row only, while its headline paired the runs on the items both scored."""
    from eval.cli import main
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, render_markdown

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    status = ["missing"] * 10 + ["ok"] * 30
    b = _scored_run(tmp_path / "B", "b", [NAN] * 10 + JUDGE[10:], EXPERTS, status=status)
    note = "**10 items have no prediction** (the run is unfinished): they are not in `n`."
    result = compare([a, b], n_boot=50)
    lines = render_markdown(result).splitlines()
    start = lines.index("What each run's report says beside its numbers:")
    assert lines[start + 1:start + 4] == ["", f"- **b**: {note}", ""]
    page = render_compare_page(result, None)
    assert ('<p class="warn"><b>b</b>: <b>10 items have no prediction</b> (the run is unfinished): they '
            "are not in <code>n</code>.</p>") in page
    assert '<p class="warn"><b>a</b>' not in page

    assert main(["compare", str(a), str(b), "--n-boot", "50", "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "- b: 10 items have no prediction (the run is unfinished): they are not in n." in printed
    assert not [line for line in printed if line.startswith("- a: ")]

    finished = compare([a, _scored_run(tmp_path / "C", "c", JUDGE, EXPERTS)], n_boot=50)
    assert "What each run's report says" not in render_markdown(finished)
    assert 'class="warn"><b>' not in render_compare_page(finished, None)


def test_runs_scored_with_other_settings_are_said_to_be_so(tmp_path):
    """Runs of a regression head, one scored with --clip-regression, the other raw; one run's own intervals from 20
    resamples of items, the other's from 50 of instructions: compare said nothing, though the paired MAE then measures
    the clipping too and the side-by-side intervals differ by their draws. One sentence each; none for runs scored
    alike, nor the clipping's for runs without a regression head's score."""
    from eval.scoring.compare import compare, headline

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS, n_boot=20)
    c = _scored_run(tmp_path / "C", "c", JUDGE, EXPERTS)
    for folder, clipping, unit in ((a, "raw", "instruction"), (b, "clipped", None), (c, "raw", "instruction")):
        written = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        written["settings"].update(regression_scores=clipping, bootstrap_unit=unit)
        written["notes"] = {"n_unknown_ids": 0, "n_regression_scores": 40}  # a regression head's scores, all 40
        (folder / "metrics.json").write_text(json.dumps(written), encoding="utf-8")
    # the hand-made tables hold no instruction keys: a's "instruction" unit cannot be drawn over b's table unless
    # --bootstrap-unit item is given, which the refusal names
    with pytest.raises(ValueError, match=f"{b}: its items.parquet .* and {a} was scored by instruction; .* "
                                         "--bootstrap-unit item"):
        compare([b, a], n_boot=50)
    said = headline(compare([a, b], n_boot=50, bootstrap_unit="item"))
    assert ("b was scored with --clip-regression (a regression head's scores clipped to their scale), a without "
            "--clip-regression (a regression head's scores as the head gave them): the MAE deltas measure the clipping "
            "as well as the judges; score both runs alike to compare the judges alone.") in said
    assert ("b's own intervals were drawn from 20 resamples of items at 95 %, a's from 50 resamples of instructions "
            "at 95 % (its --n-boot, --bootstrap-unit, level): under \"Each run on its own items\" their widths differ "
            "by that as well as by the judges; the paired intervals are this comparison's own.") in said
    alike = headline(compare([a, c], n_boot=50, bootstrap_unit="item"))
    assert not any("--clip-regression" in line or "own intervals" in line for line in alike)
    for folder in (a, b):  # a verdict judge's runs: the option changed nothing
        written = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        written["notes"] = {"n_unknown_ids": 0}
        (folder / "metrics.json").write_text(json.dumps(written), encoding="utf-8")
    said = headline(compare([a, b], n_boot=50, bootstrap_unit="item"))
    assert not any("--clip-regression" in line for line in said)


def test_mae_against_two_targets_is_left_out_under_n_boot_0(tmp_path):
    """``--n-boot 0`` gives the MAE's difference rather than a call: against the experts' mode on one side and their
    mean on the other, identical scores would read "MAE … lower for b": the decision says the targets differ instead."""
    from eval.scoring.compare import compare, decision

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS, n_boot=0)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS, target="mean", spearman_target="mode", n_boot=0)
    said = decision(compare([a, b], n_boot=0), 0)
    assert "lower for" not in said and "higher for" not in said and "MAE equal" not in said
    assert "MAE left out: the runs' targets differ (a: experts' mode, b: their mean); 40 items both scored" in said
    same = decision(compare([a, _scored_run(tmp_path / "C", "c", JUDGE, EXPERTS, n_boot=0)], n_boot=0), 0)
    assert "MAE equal for c and a on the 40 items both scored" in same and "left out" not in same


def test_an_undefined_paired_interval_is_one_dash_as_on_compare_html(tmp_path):
    """A model with one item both runs scored: its paired cell has no interval (one item resamples to nothing to
    spread). compare.md writes "—" there, as compare.html leaves the interval out and ``fmt_ci`` writes one, not
    "[—, —]"."""
    from eval.scoring.compare import compare, render_markdown

    models = ["m1"] * (len(JUDGE) - 1) + ["lone"]
    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS, models=models)
    b = _scored_run(tmp_path / "B", "b", [min(s + 1, 2) for s in JUDGE], EXPERTS, models=models)
    result = compare([a, b], n_boot=50)
    lone = result.comparisons[0].splits["all"].by_model["lone"]["mae"]
    assert lone.n == 1 and all(v != v for v in lone.ci)  # NaN ends
    text = render_markdown(result)
    assert "[—, —]" not in text
    row = next(line for line in text.splitlines() if line.startswith("| lone |") and line.count("|") > 8)
    assert [c.strip() for c in row.strip("|").split("|")][4] == "—"

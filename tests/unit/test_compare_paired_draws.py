"""``judge-eval compare``'s paired draws: how many resamples a call needs, the level its interval is drawn at, and
one item set drawn once however many splits hold it."""

from __future__ import annotations

import numpy as np
import pytest

from eval.scoring import bootstrap
from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run


def test_the_overall_cell_needs_the_resamples_a_one_cell_table_needs(tmp_path):
    """Thirty items, one model, task type and criterion; experts unanimous on 1, the baseline says 2, the run 1: every
    resample's MAE delta is -1, its p estimated as 0, i.e. below 2 / n_boot. At 40 resamples that bound is 2 / 40 =
    0.05, not below alpha 0.05: the overall cell was called "better" while the identical one-cell table by model read
    n.s. (Holm enters the bound). Both now need more than 2 / alpha, 41, and agree on either side of it."""
    from eval.scoring.compare import compare, paired_resamples_to_call

    assert [paired_resamples_to_call(alpha) for alpha in (0.05, 0.01, 0.2)] == [41, 201, 11]
    a = _scored_run(tmp_path / "A", "a", [2.0] * 30, [[1, 1, 1]] * 30)
    b = _scored_run(tmp_path / "B", "b", [1.0] * 30, [[1, 1, 1]] * 30)
    for n_boot, call in ((40, "n.s."), (41, "better")):
        block = compare([a, b], n_boot=n_boot).comparisons[0].splits["standard"]
        overall, by_model = block.overall["mae"], block.by_model["m"]["mae"]
        assert (overall.delta, overall.p_value, overall.verdict) == (-1.0, 0.0, call)
        assert (by_model.delta, by_model.p_value, by_model.verdict) == (-1.0, 0.0, call)


def test_the_paired_interval_is_drawn_at_one_minus_alpha_and_says_so(tmp_path):
    """At --alpha 0.2 the call is read at 0.2 but the interval was a 95 % one, printed "95 % CI": a "better" could
    stand beside an interval spanning 0. Now the interval is the 80 % one of the same resamples (narrower than the
    95 % one), the headline and compare.md say "80 % CI", and compare.json keeps the level."""
    import json

    from eval.reports.html_report import render_compare_page
    from eval.scoring import item_table
    from eval.scoring.compare import compare, headline, render_markdown

    rng = np.random.default_rng(7)
    experts = [[int(v)] * 3 for v in rng.integers(0, 3, 40)]
    base = [float(v) for v in rng.integers(0, 3, 40)]
    a = _scored_run(tmp_path / "A", "a", base, experts)
    b = _scored_run(tmp_path / "B", "b", JUDGE, experts)
    wide = compare([a, b], n_boot=200).comparisons[0].splits["standard"].overall["mae"]
    result = compare([a, b], n_boot=200, alpha=0.2)
    narrow = result.comparisons[0].splits["standard"].overall["mae"]
    # the same resamples (one seed, one cell): the 80 % interval lies within the 95 % one, and is not it
    assert wide.ci[0] <= narrow.ci[0] <= narrow.ci[1] <= wide.ci[1] and narrow.ci != wide.ci
    truth, judge = np.array([e[0] for e in experts], float), np.array(JUDGE, float)
    again = bootstrap.paired_bootstrap(np.array(base), truth, judge, truth, "mae", 200,
                                       bootstrap.cell_rng(0, "all/overall/mae"), alpha=0.2)
    assert list(narrow.ci) == pytest.approx(again["ci"])
    line = next(line for line in headline(result) if line.startswith("On the Standard test"))
    assert f"80 % CI [{narrow.ci[0]:.3f}, {narrow.ci[1]:.3f}]" in line and "95 %" not in line
    assert "| delta | 80 % CI | p |" in render_markdown(result)
    assert json.loads(item_table.dumps(result))["ci_level"] == pytest.approx(0.8)
    assert "80 % CI" in render_compare_page(result, None)


def test_one_item_set_is_drawn_once_whatever_splits_hold_it(tmp_path):
    """Data without Zero-Shot items (any custom data set): the Standard test and "Zero-Shot + Standard" hold the same
    items but were drawn under two names, so the one item set got two intervals and two p-values, in each run's own
    metrics and in the paired rows. Now "all" and the test that holds all of it draw alike."""
    from eval.scoring.compare import compare

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", [2.0 - v for v in JUDGE], EXPERTS)
    result = compare([a, b], n_boot=50)
    standard, both = (result.comparisons[0].splits[split] for split in ("standard", "all"))
    for metric in ("mae", "spearman", "vc_judge"):
        assert standard.overall[metric] == both.overall[metric]
    assert standard.by_criterion == both.by_criterion and standard.by_model == both.by_model
    own = result.metrics[0].splits
    assert own["standard"].overall.mae_ci == own["all"].overall.mae_ci
    assert own["standard"].by_model["m"].spearman_ci == own["all"].by_model["m"].spearman_ci
    # the run's own validity section: its ceiling-gap and alpha-difference intervals were drawn under the split's
    # name, so the one item set got two of each there too
    import dataclasses

    from eval.scoring import item_table
    from eval.validity.section import ValiditySettings, validity_section
    from tests.unit.test_eval_metrics import _table

    rng = np.random.default_rng(3)
    experts, judge = rng.integers(0, 3, (120, 3)).tolist(), rng.integers(0, 3, 120).astype(float).tolist()
    table = dataclasses.replace(
        _table(judge, ["ok"] * 120, experts), scale_low=np.zeros(120), scale_high=np.full(120, 2.0),
        expert_ids=item_table.pad_expert_ids([[f"e{(k + j) % 5}" for j in range(3)] for k in range(120)], 3))
    section = validity_section(table, "mode", {"standard": np.arange(120), "all": np.arange(120)},
                               ValiditySettings(seed=0, n_boot=50)).splits
    for cells in (lambda s: [s.overall], lambda s: list(s.by_criterion.values())):
        standard_cells, all_cells = cells(section["standard"]), cells(section["all"])
        assert [c.ceiling.gap_ci for c in standard_cells] == [c.ceiling.gap_ci for c in all_cells]
        assert [c.agreement.alpha_difference_ci for c in standard_cells] == [
            c.agreement.alpha_difference_ci for c in all_cells]
    assert section["all"].overall.ceiling.gap_ci is not None
    assert section["all"].overall.agreement.alpha_difference_ci is not None


def test_predictions_of_one_test_only_are_drawn_once_too(tmp_path):
    """Data with both tests, predictions of the Zero-Shot items only (a run under --limit or --split): the
    Standard items are all "missing", never resampled, so Zero-Shot and "Zero-Shot + Standard" resample the same
    items; they were drawn under two names (two intervals, two p-values for one item set) because the rule counted
    the data's items, not the predicted ones. Now both runs' own cells and the paired rows draw alike; with the
    Standard items predicted, the two tests draw apart again."""
    from eval.scoring.compare import compare

    n = len(JUDGE)
    split = ["zero_shot"] * (n // 2) + ["standard"] * (n - n // 2)
    status = ["ok"] * (n // 2) + ["missing"] * (n - n // 2)
    nan = float("nan")
    judge_a = JUDGE[: n // 2] + [nan] * (n - n // 2)
    judge_b = [2.0 - v for v in JUDGE[: n // 2]] + [nan] * (n - n // 2)
    a = _scored_run(tmp_path / "A", "a", judge_a, EXPERTS, status=status, split=split)
    b = _scored_run(tmp_path / "B", "b", judge_b, EXPERTS, status=status, split=split)
    result = compare([a, b], n_boot=50)
    zero_shot, both = (result.comparisons[0].splits[s] for s in ("zero_shot", "all"))
    assert zero_shot.overall["mae"].n == both.overall["mae"].n == n // 2
    for metric in ("mae", "vc_judge"):
        assert zero_shot.overall[metric] == both.overall[metric]
    own = result.metrics[0].splits
    assert own["zero_shot"].overall.mae_ci == own["all"].overall.mae_ci

    whole = compare([_scored_run(tmp_path / "C", "c", JUDGE, EXPERTS, split=split),
                     _scored_run(tmp_path / "D", "d", [2.0 - v for v in JUDGE], EXPERTS, split=split)], n_boot=50)
    assert whole.metrics[0].splits["zero_shot"].overall.mae_ci != whole.metrics[0].splits["all"].overall.mae_ci

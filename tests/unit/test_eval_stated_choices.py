"""The report's stated choices: Spearman's expert reference selectable apart from MAE's, the
paper's random-labelling Verdict Confidence (17/27) printed beside VC, and the judge-independent Experts VC over
every labelled item beside the experts' VC on the judge's own items. Figures derived by hand below."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import numpy as np
import pytest

from eval.scoring import item_table, metrics
from eval.reports.report import render_markdown
from judge.metrics_json.metrics import Metrics


def _table(judge, status, experts):
    n = len(judge)
    return item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object), judge=np.array(judge, dtype=float),
        status=np.array(status, dtype=object), error=np.array([""] * n, dtype=object),
        score_source=np.array(["verdict"] * n, dtype=object), experts=metrics.pad_scores(experts),
        split=np.array(["standard"] * n, dtype=object), model_id=np.array(["m"] * n, dtype=object),
        task_type=np.array(["t"] * n, dtype=object), task_group=np.array(["g"] * n, dtype=object),
        criteria_name=np.array(["c"] * n, dtype=object), judge_name="hand")


def test_random_labelling_vc_is_the_papers_17_27():
    """arXiv 2505.24616v3, Appendix D.2.2: three annotators, three labels, 27 equally likely
    labellings. m = the largest count: m = 3 for the 3 unanimous ones, m = 1 for the 3! = 6 all-different ones, m = 2
    for the other 18. E[VC] = E[m] / 3 = (3*3 + 2*18 + 1*6) / 27 / 3 = 51 / 81 = 17/27."""
    counts = {3: 0, 2: 0, 1: 0}
    for labelling in product(range(3), repeat=3):
        counts[max(labelling.count(k) for k in range(3))] += 1
    assert counts == {3: 3, 2: 18, 1: 6}
    expected = Fraction(3 * counts[3] + 2 * counts[2] + 1 * counts[1], 27) / 3
    assert expected == Fraction(17, 27)
    assert metrics.random_labelling_vc(3, 3) == pytest.approx(float(expected), abs=1e-15)
    assert metrics.RANDOM_LABELLING_VC == pytest.approx(float(expected), abs=1e-15)
    # Two annotators, two labels: 4 labellings, 2 agree (VC 1) and 2 split (VC 1/2): 3/4.
    assert metrics.random_labelling_vc(2, 2) == pytest.approx(0.75)


# Four items. Experts: A [0, 0, 2] (mode 0, mean 2/3), B [1, 1, 1] (1, 1), C [2, 2, 0] (2, 4/3), D [0, 1, 2] (no
# unique mode, mean 1). The judge: A 0, B 2, C 1, D 2.
# MAE against the mode (A, B, C): (0 + 1 + 1) / 3 = 2/3.
# Spearman against the mode (A, B, C): judge ranks (1, 3, 2), mode ranks (1, 2, 3): 1 - 6 * 2 / (3 * 8) = 1/2.
# Spearman against the mean (A, B, C, D): judge (0, 2, 1, 2) ranks (1, 3.5, 2, 3.5); mean (2/3, 1, 4/3, 1) ranks
# (1, 2.5, 4, 2.5). Deviations from 2.5: (-1.5, 1, -0.5, 1) and (-1.5, 0, 1.5, 0): 1.5 / sqrt(4.5 * 4.5) = 1/3.
EXPERTS = [[0, 0, 2], [1, 1, 1], [2, 2, 0], [0, 1, 2]]
JUDGE = [0, 2, 1, 2]


@pytest.mark.parametrize("spearman_target, spearman, n_spearman", [(None, 0.5, None), ("mode", 0.5, None),
                                                                   ("mean", 1 / 3, 4)])
def test_spearman_reference_is_chosen_apart_from_maes(spearman_target, spearman, n_spearman):
    """MAE stays against the mode (2/3 over 3 items); Spearman follows its own reference: 1/2 against the mode,
    1/3 against the mean (over all 4 items: the mean needs no unique mode); the choice is in settings."""
    table = _table(JUDGE, ["ok"] * 4, EXPERTS)
    result = item_table.evaluate(table, target="mode", n_boot=0, vc_repeats=2,
                                 spearman_target=spearman_target).to_json()
    overall = result["splits"]["all"]["overall"]
    assert overall["mae"] == pytest.approx(2 / 3) and overall["n_scored"] == 3
    assert overall["spearman"] == pytest.approx(spearman)
    assert overall.get("n_spearman") == n_spearman
    assert result["settings"]["spearman_target"] == (spearman_target or "mode")
    text = render_markdown(Metrics.from_json(result))
    said = "the mean of the expert scores (`--spearman-target`" if spearman_target == "mean" else \
        "the mode of the expert scores (items without a unique mode excluded) (`--spearman-target`"
    assert "MAE against the mode of the expert scores" in text and said in text


def test_experts_vc_over_every_labelled_item_stands_beside_the_judges_subset():
    """X: experts [1, 1] (VC 1), scored by the judge; Y: experts [0, 1] (VC 1/2), no prediction. VC experts on
    the judge's items: 1 (X); over all predicted items: 1 (X); over every labelled item, judge-independent:
    (1 + 1/2) / 2 = 3/4. The report prints 17/27 = 0.630 beside them."""
    table = _table([1, np.nan], ["ok", "missing"], [[1, 1], [0, 1]])
    result = item_table.evaluate(table, n_boot=0, vc_repeats=2).to_json()
    overall = result["splits"]["all"]["overall"]
    assert overall["vc_experts"] == 1.0 and overall["vc_experts_all"] == 1.0
    assert overall["vc_experts_labelled"] == pytest.approx(0.75) and overall["n_vc_experts_labelled"] == 2
    lines = render_markdown(Metrics.from_json(result)).splitlines()
    header = [h.strip() for h in next(line for line in lines if line.startswith("| Test |")).split("|")]
    row = [c.strip() for c in next(line for line in lines if line.startswith("| Zero-Shot + Standard")).split("|")]
    shown = dict(zip(header, row))
    assert (shown["VC experts"], shown["VC experts (all labelled)"]) == ("1.000", "0.750")
    assert header.index("VC experts (all labelled)") == header.index("VC experts") + 1
    assert any(line.startswith("VC under random labelling: 0.630 (17/27") for line in lines)


def test_metrics_json_names_the_interval_rule_the_rounding_and_the_confusion_axes():
    """The choices the paper leaves open and score makes without an option are written where a reader of
    metrics.json finds them, and read back typed: percentile ends by numpy's "linear" rule, a real-valued judge
    score rounded half up (0.5 -> 1, as the judge's VC and the confusion matrix below take it), rows the judge and
    columns the experts' mode. Item B's judge 0.5 is rounded to 1, its experts' mode 1: the matrix counts it on the
    diagonal (row 1, column 1), where half to even would put it in row 0."""
    table = _table([0.0, 0.5], ["ok", "ok"], [[0, 0], [1, 1]])
    result = item_table.evaluate(table, target="mode", n_boot=0, vc_repeats=2)
    written = result.to_json()["settings"]
    assert {k: written[k] for k in ("percentile_method", "judge_rounding", "confusion_rows", "confusion_columns")} == {
        "percentile_method": "linear", "judge_rounding": "half-up", "confusion_rows": "judge",
        "confusion_columns": "expert_mode"}
    assert result.splits["all"].confusion.all.matrix == [[1, 0], [0, 1]]
    assert result.splits["all"].overall.vc_judge == 1.0  # each item's judge agrees with both experts once rounded
    read = Metrics.from_json(result.to_json()).settings
    assert (read.percentile_method, read.judge_rounding, read.confusion_rows) == ("linear", "half-up", "judge")


@pytest.mark.parametrize(("field", "value", "says"), [
    ("judge_rounding", "half-even", "expected one of half-up, got 'half-even'"),
    ("percentile_method", "nearest", "expected one of linear, got 'nearest'"),
    ("confusion_rows", "experts", "expected one of judge, got 'experts'"),
])
def test_a_metrics_json_naming_a_rule_score_does_not_apply_is_refused_naming_the_field(field, value, says):
    from judge.metrics_json.json_record import JsonRecordError

    raw = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95,
                                                        field: value},
           "splits": {}}
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(raw)
    assert info.value.field == f"settings.{field}" and says in str(info.value)


def test_the_percentile_rule_is_numpys_linear_one_by_hand():
    """Eleven resamples 0..10 at 95 %: the ends sit at ranks 0.025 x 10 = 0.25 and 9.75 between neighbours, so
    linear interpolation gives [0.25, 9.75] (numpy's "lower" would give [0, 9], "nearest" [0, 10])."""
    from eval.scoring.bootstrap import percentile_interval

    assert percentile_interval(np.arange(11, dtype=float), 0.95) == [pytest.approx(0.25, abs=1e-12), 9.75]


def test_the_extreme_rate_flag_is_refused_on_a_pointwise_run(tmp_path, capsys):
    """A pointwise run has no rate with an interval: the flag, which would change nothing, is refused before
    anything is read or written (exit 2, naming the flag)."""
    from eval.cli import main

    run, out = tmp_path / "run", tmp_path / "out"
    run.mkdir()
    (run / "predictions.jsonl").write_text("{}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--data", "sample", "--out", str(out),
                 "--extreme-rate-interval", "percentile"]) == 2
    assert capsys.readouterr().err == ("judge-eval score: error: --extreme-rate-interval: only a pairwise run has "
                                       "rates; leave the flag out\n")
    assert not out.exists()


def test_allow_other_judge_is_refused_for_scored_runs(tmp_path, capsys):
    """Scored runs are compared whatever judged them: --allow-other-judge, read only for rank runs, was taken in
    silence. Refused before anything is written (exit 2, naming the flag)."""
    from eval.cli import main
    from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS)
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--out", str(out), "--n-boot", "50", "--allow-other-judge"]) == 2
    assert capsys.readouterr().err == ("judge-eval compare: error: --allow-other-judge: only rank runs have their "
                                       "judge settings checked (run.json); leave the flag out\n")
    assert not out.exists()
    assert main(["compare", str(a), str(b), "--out", str(out), "--n-boot", "50"]) == 0


def test_a_metrics_json_written_before_the_stated_choices_reads_as_they_were():
    """A metrics.json from before settings named the percentile rule, the rounding and the confusion axes reads
    (compare and the reports take it beside a new one), each choice None: not said, the same rules applied."""
    raw = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95},
           "splits": {}}
    read = Metrics.from_json(raw).settings
    assert (read.percentile_method, read.judge_rounding, read.confusion_rows, read.confusion_columns) == (
        None, None, None, None)


def test_another_of_numpys_percentile_rules_moves_an_end_by_less_than_one_rank():
    """What the docs say another rule would change, checked over numpy's thirteen: each end stays between the sorted
    resamples one rank beyond the two around linear's (its position h = q (n - 1)), but not always between those two
    (the Weibull rule's position is q (n + 1) - 1, nearly a rank below linear's at 2.5 %)."""
    import math

    methods = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf", "hazen",
               "weibull", "linear", "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint", "nearest")
    x = np.sort(np.random.default_rng(0).exponential(size=1010))
    beyond_the_gap = 0
    for q in (2.5, 97.5):
        h = q / 100 * (len(x) - 1)
        low, high = math.floor(h), math.ceil(h)
        for method in methods:
            end = np.percentile(x, q, method=method)
            assert x[low - 1] <= end <= x[high + 1], (q, method)
            beyond_the_gap += not x[low] <= end <= x[high]
    assert beyond_the_gap > 0  # "at most the gap between the two values around it" did not hold

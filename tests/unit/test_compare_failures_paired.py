"""``judge-eval compare`` and failed verdicts: a paired delta reads only the items both runs scored, so a judge that
failed on most items was called "better" on the few it answered, with its failures in a trailing clause. The runs'
failures are now paired (McNemar's exact test) and called, and a call that goes against the MAE's says so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eval.scoring.comparison import Comparison
from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run

NAN = float("nan")
# the experts' mode of each EXPERTS row ([0,0,1] -> 0, [1,1,2] -> 1, [2,2,1] -> 2, [0,1,1] -> 1, [2,1,1] -> 1)
MODE = [0.0, 1, 2, 1, 1] * 8


def test_failures_are_paired_by_hand():
    """Six items; the fifth has no baseline prediction, so five are paired. The baseline failed on items 2 and 6, the
    run on 1, 2 and 3: one item both failed, 1 only the baseline, 2 only the run. McNemar's exact test is the
    two-sided binomial test of 1 against 2 of 3 at one half: 2 x P(X <= 1) = 2 x (1 + 3) / 8 = 1.0. n.s."""
    from eval.scoring.compare import _paired_failures

    a = np.array(["ok", "parse_failed", "ok", "ok", "missing", "request_failed"])
    b = np.array(["parse_failed", "parse_failed", "request_failed", "ok", "ok", "ok"])
    found = _paired_failures(a, b, alpha=0.05)
    assert (found.n, found.a, found.b, found.only_a, found.only_b) == (5, 2, 3, 1, 2)
    assert found.p_value == 1.0 and found.verdict == "n.s."


@pytest.mark.parametrize("only_run, p_value, verdict", [
    (6, 2 / 64, "worse"),  # 2 x 0.5^6: six items only the run failed on, none only the baseline
    (5, 2 / 32, "n.s."),   # 0.0625, over alpha 0.05
    (0, 1.0, "n.s."),      # no item differs
])  # fmt: skip
def test_failures_only_one_run_has_are_called_at_alpha(only_run, p_value, verdict):
    from eval.scoring.compare import _paired_failures

    a = np.array(["ok"] * 10)
    b = np.array(["parse_failed"] * only_run + ["ok"] * (10 - only_run))
    found = _paired_failures(a, b, alpha=0.05)
    assert found.p_value == pytest.approx(p_value) and found.verdict == verdict
    assert _paired_failures(b, a, alpha=0.05).verdict == {"worse": "better"}.get(verdict, verdict)


def test_a_judge_better_on_the_items_it_answered_but_failing_on_more_is_called_worse_on_failures(tmp_path):
    """The run gives the experts' mode wherever it answers and fails on the first 12 of 80 items; the baseline
    answers all 80, not always right. On the 68 both scored the run's MAE is 0, a call of "better"; its failures are
    12 items only it failed on and none only the baseline did: McNemar's exact p = 2 x 0.5^12 < 0.001, "worse", and
    the headline says the MAE call reads the items both scored only. compare.json keeps the pairing and reads back."""
    from eval.scoring.compare import compare, headline, render_markdown
    from eval.scoring.item_table import dumps

    base = _scored_run(tmp_path / "A", "a", JUDGE * 2, EXPERTS * 2, n_boot=200)
    run = _scored_run(tmp_path / "B", "b", [NAN] * 12 + (MODE * 2)[12:], EXPERTS * 2,
                      status=["parse_failed"] * 12 + ["ok"] * 68, n_boot=200)
    result = compare([base, run], n_boot=200)
    block = result.comparisons[0].splits["all"]
    assert block.overall["mae"].n == 68 and block.overall["mae"].verdict == "better"
    f = block.failures
    assert (f.n, f.a, f.b, f.only_a, f.only_b, f.verdict) == (80, 0, 12, 0, 12, "worse")
    assert f.p_value == pytest.approx(2 * 0.5 ** 12)
    said = [line for line in headline(result) if "fails on more items" in line]
    # one sentence per test the runs hold: the Standard test and the two tests together, here the same items
    assert said[1] == said[0].replace("On the Standard test,", "On the Zero-Shot + Standard,")
    assert said[:1] == [
        "On the Standard test, b fails on more items than a: of the 80 items both have a prediction for, b "
        "failed on 12 and a on 0, 12 failed by b only and 0 by a only (McNemar's exact test, p < 0.001): worse. b's "
        "MAE call above (better) is over the items both scored only: a judge that fails on more items is not shown "
        "the better judge by its MAE on the rest."]
    assert f"- {said[0]}" in render_markdown(result)
    again = Comparison.from_json(json.loads(dumps(result.to_json())))
    assert again.comparisons[0].splits["all"].failures == f


def test_runs_failing_alike_add_no_sentence_and_an_older_compare_json_reads_without_the_pairing(tmp_path):
    from eval.scoring.compare import compare, headline
    from eval.scoring.item_table import dumps

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", MODE, EXPERTS)
    result = compare([a, b], n_boot=50)
    assert result.comparisons[0].splits["all"].failures.verdict == "n.s."
    assert not any("fails on more items" in line for line in headline(result))
    written = json.loads(dumps(result.to_json()))
    for block in written["comparisons"][0]["splits"].values():
        del block["failures"]  # a compare.json from before the pairing
    older = Comparison.from_json(written)
    assert older.comparisons[0].splits["all"].failures is None
    assert not any("fails on more items" in line for line in headline(older))


@pytest.mark.parametrize("n_boot", [0, 50])
def test_the_failures_call_is_said_where_no_item_was_scored_by_both_or_no_resample_drawn(tmp_path, n_boot):
    """A run failing on every item shares no scored item with the baseline: its headline said only that, and
    under --n-boot 0 only "no intervals or calls", where its failures were the one finding (review)."""
    from eval.scoring.compare import compare, headline

    base = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    failed = _scored_run(tmp_path / "B", "b", [NAN] * 40, EXPERTS, status=["parse_failed"] * 40)
    said = headline(compare([base, failed], n_boot=n_boot))
    assert any(line.startswith("On the Standard test, b and a share no scored items") for line in said)
    assert ("On the Standard test, b fails on more items than a: of the 40 items both have a prediction for, b failed "
            "on 40 and a on 0, 40 failed by b only and 0 by a only (McNemar's exact test, p < 0.001): worse.") in said
    # where each scored some: the MAE sentence under --n-boot 0, then the failures'
    run = _scored_run(tmp_path / "C", "c", [NAN] * 12 + MODE[12:], EXPERTS, status=["parse_failed"] * 12 + ["ok"] * 28)
    lines = headline(compare([base, run], n_boot=0))
    at = next(k for k, line in enumerate(lines) if line.startswith("On the Standard test, c's MAE is"))
    assert "no interval or call for MAE, Spearman or VC (--n-boot 0)" in lines[at]
    assert lines[at + 1].startswith("On the Standard test, c fails on more items than a:")
    assert "MAE call above" not in lines[at + 1]  # no MAE call to go against

"""``judge-eval compare``'s paired leniency: the run's oriented mean signed error against the experts' mean minus the
baseline's, over the items both judges scored on the item's scale, with its interval from the resample weights the
paired rho and ceiling gap are read from (``eval.validity.paired``)."""

from __future__ import annotations

import numpy as np
import pytest

from eval.scoring.bootstrap import PERCENTILE_METHOD, resample_weights
from eval.validity.alt_test import AltTestSettings
from eval.validity.paired import paired_validity
from judge.metrics_json.validity import PairedLeniency, PairedValidity, Unavailable

#: Six items of a 0-2 scale, two experts each; item 4 is of a Critical criterion (best at its lowest level).
EXPERTS = np.array([[1, 1], [0, 1], [2, 2], [1, 2], [0, 0], [1, 1]], dtype=float)
BEST_LOW = np.array([False, False, False, False, True, False])
LOW, HIGH = np.zeros(6), np.full(6, 2.0)
# experts' means 1, 0.5, 2, 1.5, 0, 1
JUDGE_A = np.array([2, 1, 2, 2, 1, 1], dtype=float)  # errors +1, +0.5, 0, +0.5, +1 (oriented: -1), 0: mean +1/6
JUDGE_B = np.array([1, 0, 2, 1, 0, 2], dtype=float)  # errors 0, -0.5, 0, -0.5, 0, +1: mean 0


def _paired(judge_a, judge_b, experts=EXPERTS, best_low=BEST_LOW, n_boot=200, seed=7, **kwargs):
    n = len(judge_a)
    return paired_validity(judge_a, judge_b, experts, None, "mean", AltTestSettings(), n_boot=n_boot,
                           rng=np.random.default_rng(seed), scale_low=kwargs.pop("low", np.zeros(n)),
                           scale_high=kwargs.pop("high", np.full(n, 2.0)), best_low=best_low, **kwargs)


def test_paired_leniency_by_hand_oriented_by_a_critical_criterion():
    """A's oriented errors are +1, +0.5, 0, +0.5, -1 (a +1 on the Critical item is harsh), 0: +1/6; B's 0, -0.5, 0,
    -0.5, 0, +1: 0. The difference is -1/6 (B less lenient; read unoriented, A's +1 on item 4 would make it -1/2).
    Its interval is the percentile interval of the same 200 resample weights, recomputed here with numpy."""
    found = _paired(JUDGE_A, JUDGE_B)["leniency"]
    assert found["baseline"] == pytest.approx(1 / 6) and found["run"] == pytest.approx(0.0)
    assert found["delta"] == pytest.approx(-1 / 6)
    assert found["n"] == 6 and found["n_left_out_failed"] == 0 and found["n_left_out_off_scale"] == 0

    # the same draw: one block of 200 resamples of the 6 items from the same generator
    weights = np.concatenate(list(resample_weights(np.ones(6, dtype=np.int64), 200, np.random.default_rng(7))))
    sign = np.where(BEST_LOW, -1.0, 1.0)
    mean = EXPERTS.mean(axis=1)
    difference = ((JUDGE_B - mean) - (JUDGE_A - mean)) * sign
    samples = weights @ difference / weights.sum(axis=1)
    low, high = np.percentile(samples, [2.5, 97.5], method=PERCENTILE_METHOD)
    assert found["ci"] == pytest.approx([low, high])
    assert low <= found["delta"] <= high and low < high
    assert found["n_resamples"] == 200
    # six items are under compare's minimum of units: an interval, but no direction
    assert found["n_units"] == 6 and found["too_few_units"] is True and found["direction"] == "n.s."


def test_the_paired_leniency_interval_comes_from_the_same_draw_as_the_ceiling_gap():
    """Adding the leniency draws nothing more: both intervals are read off one matrix of resample weights (recomputed
    here: the gap's per-item error gaps against the leave-one-out mean and the leniency's oriented differences, each
    weighed by the same rows), the gap's interval is the same with or without a Critical criterion's orientation,
    and the generator is left where one draw of the weights leaves it. Scores off the whole levels (as a regression
    head's), so that each resample's figure is its own and another draw would move the intervals' ends."""
    from eval.validity.ceiling import leave_one_out_reference

    judge_a = JUDGE_A + np.array([-0.13, 0.21, -0.07, -0.29, 0.11, -0.17])
    judge_b = JUDGE_B + np.array([0.19, 0.23, -0.31, -0.05, 0.03, -0.11])
    rng = np.random.default_rng(7)
    found = paired_validity(judge_a, judge_b, EXPERTS, None, "mean", AltTestSettings(), n_boot=200, rng=rng,
                            scale_low=LOW, scale_high=HIGH, best_low=BEST_LOW)
    after = np.random.default_rng(7)
    weights = np.concatenate(list(resample_weights(np.ones(6, dtype=np.int64), 200, after)))
    assert rng.random() == after.random()

    reference = leave_one_out_reference(EXPERTS, "mean")  # no judge failed: the worst-error rule changes nothing
    expert_error = np.abs(EXPERTS - reference)
    gap_a, gap_b = ((np.abs(j[:, None] - reference) - expert_error).sum(axis=1) for j in (judge_a, judge_b))
    gap_samples = (weights @ gap_b - weights @ gap_a) / (weights @ np.full(6, 2.0))
    mean = EXPERTS.mean(axis=1)
    oriented = ((judge_b - mean) - (judge_a - mean)) * np.where(BEST_LOW, -1.0, 1.0)
    leniency_samples = weights @ oriented / weights.sum(axis=1)
    assert found["leniency"]["n"] == 6
    for figure, samples in (("ceiling_gap", gap_samples), ("leniency", leniency_samples)):
        assert found[figure]["ci"] == pytest.approx(np.percentile(samples, [2.5, 97.5], method=PERCENTILE_METHOD))
        assert found[figure]["n_resamples"] == 200
    assert found["ceiling_gap"]["delta"] == pytest.approx((gap_b.sum() - gap_a.sum()) / 12)
    unoriented = paired_validity(judge_a, judge_b, EXPERTS, None, "mean", AltTestSettings(), n_boot=200,
                                 rng=np.random.default_rng(7), scale_low=LOW, scale_high=HIGH)
    assert unoriented["ceiling_gap"] == found["ceiling_gap"]
    assert unoriented["leniency"]["ci"] != found["leniency"]["ci"]  # the orientation moves the leniency alone


def test_an_item_one_judge_failed_or_scored_off_its_scale_is_left_out_of_both_and_counted():
    """B fails on item 0 and answers 5 on item 1's 0-2 scale: both items leave both means (A's errors there, +1 and
    +0.5, are not in A's mean either) and are counted, the failure and the off-scale answer apart."""
    judge_b = JUDGE_B.copy()
    judge_b[0], judge_b[1] = np.nan, 5.0
    found = _paired(JUDGE_A, judge_b)["leniency"]
    assert found["n"] == 4 and found["n_left_out_failed"] == 1 and found["n_left_out_off_scale"] == 1
    assert found["baseline"] == pytest.approx((0 + 0.5 - 1 + 0) / 4)  # items 2..5
    assert found["run"] == pytest.approx((0 - 0.5 + 0 + 1) / 4)
    assert found["delta"] == pytest.approx(0.5 / 4 - (-0.5 / 4))
    assert found["n_units"] == 4


def test_a_regression_heads_value_past_an_end_is_no_off_scale_answer():
    """A measured 2.4 on a 0-2 scale is read as the end (as the section reads it): it stays in, its error as given."""
    judge_b = JUDGE_B.copy()
    judge_b[5] = 2.4
    measured = np.zeros(6, dtype=bool)
    measured[5] = True
    found = _paired(JUDGE_A, judge_b, measured_b=measured)["leniency"]
    assert found["n"] == 6 and found["n_left_out_off_scale"] == 0
    assert found["run"] == pytest.approx((0 - 0.5 + 0 - 0.5 + 0 + 1.4) / 6)


def _many(k: int):
    """The six items repeated ``k`` times: A one level above the experts on every non-Critical item, B on none."""
    experts = np.tile(EXPERTS, (k, 1))
    best_low = np.tile(BEST_LOW, k)
    mean = experts.mean(axis=1)
    judge_a = np.clip(np.round(mean + np.where(best_low, 0, 1)), 0, 2)
    return experts, best_low, judge_a, np.round(mean)


def test_a_direction_is_called_only_where_the_interval_excludes_zero_over_enough_units():
    """Over 36 items A is lenient where B is not: B is less lenient, and A against B more lenient; over six of the
    same items (under compare's 30 units) neither is called, whatever the interval."""
    experts, best_low, judge_a, judge_b = _many(6)
    found = _paired(judge_a, judge_b, experts=experts, best_low=best_low)["leniency"]
    assert found["too_few_units"] is False and found["ci"][1] < 0 and found["direction"] == "less lenient"
    back = _paired(judge_b, judge_a, experts=experts, best_low=best_low)["leniency"]
    assert back["ci"][0] > 0 and back["direction"] == "more lenient"
    assert _paired(judge_a, judge_a, experts=experts, best_low=best_low)["leniency"]["direction"] == "n.s."
    few = _paired(judge_a[:6], judge_b[:6], experts=experts[:6], best_low=best_low[:6])["leniency"]
    assert few["delta"] < 0 and few["too_few_units"] is True and few["direction"] == "n.s."


def test_without_resamples_the_paired_leniency_has_no_interval_and_no_direction():
    experts, best_low, judge_a, judge_b = _many(6)
    found = _paired(judge_a, judge_b, experts=experts, best_low=best_low, n_boot=0)["leniency"]
    assert found["delta"] < 0 and found["ci"] == [None, None] and found["direction"] == "n.s."


def test_under_instructions_the_units_are_instructions():
    experts, best_low, judge_a, judge_b = _many(6)
    clusters = np.repeat(np.arange(12), 3)
    found = _paired(judge_a, judge_b, experts=experts, best_low=best_low, clusters=clusters)["leniency"]
    assert found["n_units"] == 12 and found["too_few_units"] is True and found["direction"] == "n.s."


def test_no_item_both_scored_on_its_scale_says_why_with_the_counts():
    judge_b = np.full(6, np.nan)
    found = _paired(JUDGE_A, judge_b)["leniency"]
    assert set(found) == {"why"} and "6 failed on by either judge" in found["why"]


def test_compare_json_reads_the_paired_leniency_and_older_files_without_it():
    """The typed record reads the new figure, writes it back as read, and reads a compare.json written before it
    (no ``leniency``) as None."""
    written = _paired(JUDGE_A, JUDGE_B)
    typed = PairedValidity.from_json(written)
    assert isinstance(typed.leniency, PairedLeniency) and typed.leniency.direction == "n.s."
    assert typed.to_json()["leniency"] == written["leniency"]
    older = {key: value for key, value in written.items() if key != "leniency"}
    assert PairedValidity.from_json(older).leniency is None
    assert "leniency" not in PairedValidity.from_json(older).to_json()
    none = PairedValidity.from_json(_paired(JUDGE_A, np.full(6, np.nan)))
    assert isinstance(none.leniency, Unavailable)


def test_a_paired_leniency_direction_none_of_the_three_is_refused_naming_the_field():
    from judge.metrics_json.json_record import JsonRecordError

    written = _paired(JUDGE_A, JUDGE_B)
    written["leniency"]["direction"] = "lenient"  # a section's word, not a paired call
    with pytest.raises(JsonRecordError, match=r"PairedLeniency\.direction.*none of less lenient, more lenient, n\.s\."):
        PairedValidity.from_json(written)


def _clearly_different(k: int = 20):
    """``_many(k)`` (6k items) with B one level under the experts' mean wherever it can go lower: A lenient, B harsh,
    a difference no resample of 120 items brings near 0."""
    experts, best_low, judge_a, _ = _many(k)
    mean = experts.mean(axis=1)
    return experts, best_low, judge_a, np.clip(np.round(mean) - np.where(best_low, 0, 1), 0, 2)


def test_at_the_99_level_the_paired_leniency_draws_the_resamples_a_call_needs():
    """At 0.99 a call needs 201 resamples (``paired_resamples_to_call(0.01)``), one more than ``PAIRED_BOOT``: the
    cap rises to that floor, as the ceiling's does, so ``n_boot`` 1000 draws 201 and calls a clear difference."""
    from eval.scoring.resample_rules import paired_resamples_to_call
    from eval.validity.paired import PAIRED_BOOT

    assert paired_resamples_to_call(0.01) == 201 > PAIRED_BOOT
    experts, best_low, judge_a, judge_b = _clearly_different()
    found = _paired(judge_a, judge_b, experts=experts, best_low=best_low, n_boot=1000, level=0.99)
    assert found["n_boot"] == 201 and found["leniency"]["n_resamples"] == 201
    assert found["leniency"]["ci"][1] < 0 and found["leniency"]["direction"] == "less lenient"
    # at 0.95 the floor (41) is under the cap: 200 drawn
    assert _paired(judge_a, judge_b, experts=experts, best_low=best_low, n_boot=1000)["n_boot"] == PAIRED_BOOT
    # never more than asked: 30 at 0.99 draws 30, too few to call
    short = _paired(judge_a, judge_b, experts=experts, best_low=best_low, n_boot=30, level=0.99)
    assert short["n_boot"] == 30 and short["leniency"]["direction"] == "n.s."


def test_under_the_resample_floor_an_interval_that_excludes_zero_is_not_called():
    """From 30 resamples (under the 41 a call needs at 0.95) the interval excludes 0 but is no call: its ends are read
    off the one or two most extreme draws; from 41 the same difference is called."""
    experts, best_low, judge_a, judge_b = _many(6)
    few = _paired(judge_a, judge_b, experts=experts, best_low=best_low, n_boot=30)["leniency"]
    assert few["n_resamples"] == 30 and few["too_few_units"] is False
    assert few["ci"][1] < 0 and few["direction"] == "n.s."
    enough = _paired(judge_a, judge_b, experts=experts, best_low=best_low, n_boot=41)["leniency"]
    assert enough["n_resamples"] == 41 and enough["ci"][1] < 0 and enough["direction"] == "less lenient"


def test_compare_orients_the_paired_leniency_by_the_baselines_critical_criteria(tmp_path):
    """Two runs scored on the bundled sample, the experts' first score each, apart on the Critical items whose experts
    all say 0 (best at the lowest level): there the run says 1. On such an item one level above is harsh; compare's
    paired figure for each run is that run's own section's leniency (the same items: each run fails the same one),
    and the delta is negative (the run less lenient). Read unoriented (compare's tables read back from items.parquet
    without the orientation, or ``best_low`` left out), the run's +1s would make it positive."""
    import json

    import judge
    from eval.cli import main
    from eval.scoring.compare import load_run

    records = judge.load_records(judge.sample_data_path())
    taxonomy = judge.load_taxonomy()
    critical_zero = {record.id for record in records
                     if record.criteria_name and taxonomy.is_best_at_lowest(record.criteria_name)
                     and set(record.expert_scores) == {0.0}}
    assert len(critical_zero) >= 3
    for name, bump in (("exact", 0.0), ("critical", 1.0)):
        rows = []
        for k, record in enumerate(records):
            score = None if k == 5 else record.expert_scores[0] + (bump if record.id in critical_zero else 0.0)
            rows.append({"id": record.id, "judge": "j", "feedback": "", "reason": "", "latency_s": 0.0,
                         "raw_output": "мусор" if score is None else f"[RESULT] {score:g} [END]", "score": score,
                         "parse_ok": score is not None, "error": "no_score" if score is None else None,
                         "score_source": None if score is None else "verdict"})
        run = tmp_path / name
        run.mkdir()
        (run / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                               encoding="utf-8")
        assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()),
                     "--n-boot", "0"]) == 0
    # items.parquet keeps the criteria names, not the orientation: read back, the table derives it as scoring did
    table = load_run(tmp_path / "critical").table
    critical = {record.id for record in records
                if record.criteria_name and taxonomy.is_best_at_lowest(record.criteria_name)}
    assert table.best_low is not None and set(table.ids[table.best_low]) == critical
    assert main(["compare", str(tmp_path / "exact"), str(tmp_path / "critical"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "50"]) == 0
    paired = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))["comparisons"][0]["validity"]
    own = {name: json.loads((tmp_path / name / "metrics.json").read_text(encoding="utf-8"))["validity"]["splits"]
           for name in ("exact", "critical")}
    assert paired.keys() == own["critical"].keys()
    moved = 0
    for split, block in paired.items():
        leniency = block["leniency"]
        for name, side in (("exact", "baseline"), ("critical", "run")):
            section = own[name][split]["overall"]["leniency"]
            assert leniency["n"] == section["n"]
            assert leniency[side] == pytest.approx(section["mean_signed_error"], abs=1e-12)
        # the runs differ only by harsher verdicts: no split's delta is positive, and one holding those items is negative
        assert leniency["delta"] <= 0
        moved += leniency["delta"] < 0
    assert moved >= 1

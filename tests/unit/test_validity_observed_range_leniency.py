"""On an item without a readable scale the judge's levels are read against the experts' observed range
(``section.rating_ends``): an answer outside it is out of kappa and alpha, but still a signed error, so it stays in
leniency, counted (``n_judge_outside_observed``). The lead sentence names the answers left out of kappa and alpha
whenever there are any, whether or not leniency has a direction."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.support.validity_tables import item_table, split_section


def _table(judge_high: float, low=None, high=None):
    """20 items of one criterion, three experts at 0 on items 0-9 and at 1 on items 10-19; the judge 0 on 0-9 and
    ``judge_high`` on 10-19."""
    truth = np.r_[np.zeros(10), np.ones(10)]
    judge = np.r_[np.zeros(10), np.full(10, judge_high)]
    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (20, 1))
    return item_table(judge, np.column_stack([truth] * 3), ids, low=low, high=high)


def test_answers_above_the_experts_observed_range_stay_in_leniency():
    """No readable scale: the ends are the experts' range 0-1, and the judge's 2s on items 10-19 lie outside it.
    Out of kappa and alpha (``n_items_judge_off_scale`` 10), in leniency: errors 0 x 10 and +1 x 10, mean 0.50,
    s^2 = 0.25 * 20 / 19 = 0.26316, standard error sqrt(s^2 / 20) = 0.11471, t(0.975, 19) = 2.0930: interval
    [0.2599, 0.7401], lenient over 20 items, none left out, 10 outside the observed range. Left out, leniency
    would be over the ten 0s alone: 0.00, neither."""
    nan = np.full(20, np.nan)
    block = split_section(_table(2.0, low=nan, high=nan))
    lenient = block.overall.leniency
    assert (lenient.n, lenient.mean_signed_error, lenient.direction) == (20, pytest.approx(0.5), "lenient")
    assert lenient.ci == pytest.approx([0.2599, 0.7401], abs=1e-4)
    assert (lenient.n_judge_off_scale, lenient.n_judge_outside_observed) == (0, 10)
    assert block.overall.agreement.n_items_judge_off_scale == 10
    assert ("lenient overall (+0.50); 10 judge answers outside the experts' observed range (no readable scale) "
            "left out of κ and α, kept in leniency") in block.sentence


def test_answers_off_a_readable_scale_are_named_without_a_direction():
    """A readable 0-2 scale and the judge at 3 on items 10-19: off the rubric, out of kappa, alpha and leniency.
    Leniency is over the ten 0s: 0.00, the zero-width [0, 0], neither; the sentence names the ten answers left out
    all the same."""
    block = split_section(_table(3.0, low=np.zeros(20), high=np.full(20, 2.0)))
    lenient = block.overall.leniency
    assert (lenient.n, lenient.mean_signed_error, lenient.direction) == (10, 0.0, "neither")
    assert (lenient.n_judge_off_scale, lenient.n_judge_outside_observed) == (10, 0)
    assert "overall (" not in block.sentence
    assert block.sentence.endswith("; 10 judge answers off the scale left out of κ, α and leniency.")


def test_a_mix_says_how_many_were_kept_in_leniency():
    """Counts set by hand on the readable block: 10 off the scale for kappa and alpha, 4 of them outside an observed
    range and kept in leniency."""
    from eval.validity.section import split_sentence

    block = split_section(_table(3.0, low=np.zeros(20), high=np.full(20, 2.0)))
    overall = block.overall
    mixed = dataclasses.replace(overall, leniency=dataclasses.replace(overall.leniency, n_judge_outside_observed=4))
    assert split_sentence(dataclasses.replace(block, overall=mixed)).endswith(
        "; 10 judge answers off the scale left out of κ and α (4 of them outside the experts' observed range where "
        "no scale is readable, kept in leniency).")


def test_compares_paired_leniency_keeps_them_as_the_section_does():
    """``judge-eval compare``'s paired leniency is each section's own on the shared items. Six items without a
    readable scale, two experts each, (0, 0), (1, 1), (0, 1), (1, 0), (0, 0), (1, 1): means 0, 1, 0.5, 0.5, 0, 1, the
    ends read 0-1. Judge A answers (0, 2, 0, 1, 0, 1): errors 0, +1, -0.5, +0.5, 0, 0, its 2 outside the observed
    range and kept: +1/6 over 6 items. Judge B answers (0, 1, 1, 0, 0, 1): errors 0, 0, +0.5, -0.5, 0, 0: 0. The
    difference is -1/6, none left out. On a readable 0-1 scale (``readable`` True) A's 2 is off it: item 1 leaves
    both means, A's 0 / 5 and B's 0 / 5, one counted off the scale."""
    from eval.validity.alt_test import AltTestSettings
    from eval.validity.paired import paired_validity

    experts = np.array([[0, 0], [1, 1], [0, 1], [1, 0], [0, 0], [1, 1]], dtype=float)
    judge_a = np.array([0, 2, 0, 1, 0, 1], dtype=float)
    judge_b = np.array([0, 1, 1, 0, 0, 1], dtype=float)

    def paired(readable):
        return paired_validity(judge_a, judge_b, experts, None, "mean", AltTestSettings(), n_boot=0,
                               scale_low=np.zeros(6), scale_high=np.ones(6), readable=readable)["leniency"]

    kept = paired(np.zeros(6, dtype=bool))
    assert (kept["baseline"], kept["run"], kept["delta"]) == (pytest.approx(1 / 6), 0.0, pytest.approx(-1 / 6))
    assert (kept["n"], kept["n_left_out_off_scale"]) == (6, 0)
    out = paired(np.ones(6, dtype=bool))
    assert (out["baseline"], out["run"], out["n"], out["n_left_out_off_scale"]) == (0.0, 0.0, 5, 1)


def test_compare_keeps_an_answer_outside_the_observed_range_in_the_paired_leniency():
    """The six items above as compare pairs two scored runs (``_paired_validity`` on each run's item table and
    section), their tables without readable scales (NaN ends, as a rubric without levels leaves them): A's 2 lies
    outside the experts' observed range 0-1, so it stays in the paired leniency, +1/6 over 6 items with none left
    out, as A's own section keeps it. Read as a readable scale, item 1 would leave both means (0 / 5, one counted)."""
    from types import SimpleNamespace

    from eval.scoring.compare import ScoredRun, _paired_validity
    from eval.validity.section import ValiditySettings, validity_section

    experts = np.array([[0, 0], [1, 1], [0, 1], [1, 0], [0, 0], [1, 1]], dtype=float)
    ids = np.tile(np.array(["a", "b"], dtype=object), (6, 1))
    nan = np.full(6, np.nan)
    runs = []
    for name, judge in (("a", [0, 2, 0, 1, 0, 1]), ("b", [0, 1, 1, 0, 0, 1])):
        table = item_table(np.array(judge, dtype=float), experts, ids, low=nan, high=nan)
        section = validity_section(table, "mean", {"standard": np.arange(6)}, ValiditySettings(n_boot=0, alpha_boot=0))
        runs.append(ScoredRun(folder=name, name=name, metrics=SimpleNamespace(validity=section), table=table,
                              extra={}))
    own = runs[0].metrics.validity.splits["standard"].overall.leniency
    assert own.mean_signed_error == pytest.approx(1 / 6) and own.n == 6
    paired = _paired_validity(runs[0], runs[1], np.arange(6), np.arange(6), 0, 0)["standard"].leniency
    assert paired.baseline == pytest.approx(own.mean_signed_error)
    assert (paired.run, paired.n, paired.n_left_out_off_scale) == (0.0, 6, 0)

def test_compare_marks_a_leniency_that_left_answers_outside_the_observed_range_out():
    """A metrics.json without ``n_judge_outside_observed`` left such answers out of leniency, counted in
    ``n_judge_off_scale``: beside a run that keeps them, its figure is another statistic, and compare says so after
    it. The block above with no readable scale keeps the ten 2s (+0.500); the same block under the other rule is
    over the ten 0s alone (0.000, 10 counted off the scale). Two runs under one rule, or a run of the other rule with
    no answer off the scale (nothing left out, the same figure), are shown as they are."""
    from types import SimpleNamespace

    from eval.validity.render import OLDER_OBSERVED_RANGE, _side_by_side

    nan = np.full(20, np.nan)
    block = split_section(_table(2.0, low=nan, high=nan))
    lenient = dataclasses.replace(block.overall.leniency, n=10, mean_signed_error=0.0, ci=[0.0, 0.0],
                                  direction="neither", n_judge_off_scale=10, n_judge_outside_observed=None)
    older = dataclasses.replace(block, overall=dataclasses.replace(block.overall, leniency=lenient))
    none_off = dataclasses.replace(older, overall=dataclasses.replace(
        older.overall, leniency=dataclasses.replace(lenient, n_judge_off_scale=0)))

    def shown(**blocks):
        runs = {name: SimpleNamespace(validity=SimpleNamespace(splits={"standard": b})) for name, b in blocks.items()}
        return {row[0]: row[5] for row in _side_by_side(runs)[0][1]}

    assert shown(new=block, old=older) == {"new": "+0.500", "old": "0.000" + OLDER_OBSERVED_RANGE}
    assert shown(old=older, older=older) == {"old": "0.000", "older": "0.000"}
    assert shown(new=block, newer=block) == {"new": "+0.500", "newer": "+0.500"}
    assert shown(new=block, old=none_off) == {"new": "+0.500", "old": "0.000"}

"""Expert scores that are no level of the rubric (a half-point, an off-rubric score; the loader keeps both with a
warning): left out of both alphas and counted, and out of both ceiling kappas together, on tables small enough to
derive by hand."""

from __future__ import annotations

import numpy as np

from eval.validity.render import _overall_rows
from judge.metrics_json.validity import ValidityCell
from tests.support.validity_tables import item_table, split_section

# Three items on a 0-2 scale, three experts each: A (0, 0, 0), B (2, 2, 2), C (1, 1, 0.5) with a half-point.
EXPERTS = np.array([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0], [1.0, 1.0, 0.5]])
JUDGE = np.array([0.0, 2.0, 2.0])


def _block(judge=JUDGE, experts=EXPERTS, criteria=None, low=None, high=None):
    n = len(judge)
    low = np.zeros(n) if low is None else low
    high = np.full(n, 2.0) if high is None else high
    return split_section(item_table(judge, experts, low=low, high=high, criteria=criteria))


def test_a_half_point_is_left_out_of_both_alphas_and_counted():
    """The domain is 0-2 (the rubric's levels, not extended by the 0.5). Without the 0.5, C is (1, 1): the experts
    agree on every item, alpha 1. With the judge: A (0 x 4), B (2 x 4), C (1, 1, 2). Coincidences o00 = 4, o22 = 4
    (A, B: 4*3/3), o11 = 1, o12 = o21 = 1 (C: m = 3, 2*1/2); n_c = (4, 2, 5), n = 11. Ordinal distances:
    d01 = (6 - 3)^2 = 9, d12 = (7 - 3.5)^2 = 12.25, d02 = (11 - 4.5)^2 = 42.25. alpha = 1 - (n - 1) sum(o d) /
    sum(n_c n_k d) = 1 - 10 * 2 * 12.25 / (2 * (4*2*9 + 4*5*42.25 + 2*5*12.25)) = 1 - 245/2079."""
    agreement = _block().overall.agreement
    assert agreement.value_domain == [0.0, 1.0, 2.0]
    assert agreement.n_expert_scores_off_domain == 1
    assert agreement.alpha_experts == 1.0
    assert abs(agreement.alpha_with_judge - (1 - 245 / 2079)) < 1e-12


def test_the_count_is_per_cell_domain():
    """An expert's 3 on criterion "a" (0-2) is off "a"'s domain, but a level of the overall cell's pooled domain 0-4
    (criterion "b" is 0-4): counted in "a" only, as only "a"'s alpha leaves it out."""
    experts = np.array([[0.0, 3.0], [1.0, 1.0], [0.0, 4.0], [2.0, 2.0]])
    block = _block(judge=np.array([0.0, 1.0, 0.0, 2.0]), experts=experts, criteria=["a", "a", "b", "b"],
                   high=np.array([2.0, 2.0, 4.0, 4.0]))
    assert block.by_criterion["a"].agreement.n_expert_scores_off_domain == 1
    assert block.by_criterion["b"].agreement.n_expert_scores_off_domain == 0
    assert block.overall.agreement.n_expert_scores_off_domain == 0


def test_both_ceiling_kappas_leave_out_the_same_pairs():
    """Pairs (mode reference): A and B give three each, expert and judge both equal to the reference 0 or 2. On C the
    1s have no reference (the others, 1 and 0.5, tie); the 0.5 has the reference 1, where the judge says 2. That pair
    was out of the expert's kappa table (0.5 is no level) but in the judge's, whose table then held (2, 1) beside the
    diagonal: kappa 1 - (1/28) / (22.75/49) = 12/13, where the expert read 1. Out of both now: each kappa over the
    same 6 pairs on the diagonal, 1.0; the MAEs keep all 7 pairs (expert 0.5/7, judge 1/7)."""
    ceiling = _block().overall.ceiling
    assert (ceiling.n_pairs, ceiling.n_kappa_off_domain) == (7, 1)
    assert ceiling.expert_kappa == ceiling.judge_kappa == 1.0
    assert abs(ceiling.expert_mae - 0.5 / 7) < 1e-12 and abs(ceiling.judge_mae - 1 / 7) < 1e-12


def test_the_counts_reach_metrics_json_and_the_report():
    """Written and read back with the cell, and shown beside alpha and the ceiling's kappa."""
    overall = _block().overall
    written = overall.to_json()
    assert written["agreement"]["n_expert_scores_off_domain"] == 1 and written["ceiling"]["n_kappa_off_domain"] == 1
    assert ValidityCell.from_json(written) == overall
    block = _block()
    rows = dict(_overall_rows(block))
    assert rows["Krippendorff's α (ordinal)"].endswith(
        "; 1 expert score off the scale's levels (a half-point, an off-rubric score) left out of both")
    assert rows["κ quadratic (to the rest of the panel)"] == (
        "expert 1.00, judge 1.00 (both over 6 of 7 pairs: 1 with a score or reference off the scale's levels left "
        "out)")


def test_an_unreadable_scale_spans_its_experts_integer_levels():
    """The same three items without a readable scale: the domain is every integer level from the floor of the
    experts' lowest score (0) to the ceiling of their highest (2), 0-2 as the rubric's, so the 0.5 is off it as
    there: counted once, left out of both alphas (alpha 1 over A, B and C's (1, 1)) and of both ceiling kappas (the
    pair of the 0.5, reference 1, judge 2). The domain had taken the experts' own values, [0, 0.5, 1, 2]: no score
    off it (0 counted) and kappa's positions making 0-1 two steps. A half-point at the bottom (experts (0.5, 1, 1)
    and (1, 1, 1), no scale) spans 0-1: floor(0.5) = 0."""
    unknown = np.full(3, np.nan)
    block = _block(low=unknown, high=unknown)
    agreement, ceiling = block.overall.agreement, block.overall.ceiling
    assert agreement.value_domain == [0.0, 1.0, 2.0]
    assert agreement.n_expert_scores_off_domain == 1 and agreement.alpha_experts == 1.0
    assert (ceiling.n_pairs, ceiling.n_kappa_off_domain) == (7, 1)
    assert ceiling.expert_kappa == ceiling.judge_kappa == 1.0
    bottom = _block(judge=np.array([1.0, 1.0]), experts=np.array([[0.5, 1.0, 1.0], [1.0, 1.0, 1.0]]),
                    low=np.full(2, np.nan), high=np.full(2, np.nan)).overall.agreement
    assert bottom.value_domain == [0.0, 1.0] and bottom.n_expert_scores_off_domain == 1


def test_an_unreadable_scales_span_wider_than_any_rubric_leaves_its_criterion_out():
    """A span past judge.scales.MAX_LEVELS (101 levels) is no rubric's: one stray expert score of 1,000 beside 0s and
    1s would make a 1,001-level domain (a value-count table of items x 1,001), and every judge answer between the ends
    a level of its own. The criterion is left out of every figure, its 2 items counted under its name
    (``criteria_left_out``); at 1e12 the span is never built (7.28 TiB of levels). At 100 (a span of 101 levels, the
    most a rubric may hold) the span is kept whole."""
    unknown = np.full(2, np.nan)
    for stray in (1000.0, 1e12):
        wide = _block(judge=np.array([0.0, 1.0]), experts=np.array([[0.0, 0.0, stray], [1.0, 1.0, 1.0]]),
                      low=unknown, high=unknown)
        assert (wide.criteria_left_out, wide.extra, wide.by_criterion) == ({"c": 2}, {}, {})
        assert wide.overall.n_items == 0 and wide.overall.value_domain == []
    widest = _block(judge=np.array([0.0, 1.0]), experts=np.array([[0.0, 0.0, 100.0], [1.0, 1.0, 1.0]]),
                    low=unknown, high=unknown).overall.agreement
    assert widest.value_domain == [float(v) for v in range(101)]


def test_unreadable_scales_pooled_wider_than_any_rubric_take_the_values_seen():
    """Two criteria without a readable scale, each within a rubric's span: "a" experts (0, 0, 1) and (1, 1, 1), the
    judge 0 and 1; "b" experts (999, 1000, 1000), the judge 1000. Pooled in the overall cell they span 0-1000, 1,001
    levels: the domain is then the values seen, [0, 1, 999, 1000], nothing counted off it; "b"'s own is 999-1000."""
    unknown = np.full(3, np.nan)
    block = _block(judge=np.array([0.0, 1.0, 1000.0]),
                   experts=np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [999.0, 1000.0, 1000.0]]),
                   criteria=["a", "a", "b"], low=unknown, high=unknown)
    assert block.criteria_left_out is None
    assert block.overall.agreement.value_domain == [0.0, 1.0, 999.0, 1000.0]
    assert block.overall.agreement.n_expert_scores_off_domain == 0
    assert block.by_criterion["b"].agreement.value_domain == [999.0, 1000.0]

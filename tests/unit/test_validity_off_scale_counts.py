"""The judge's off-scale answers in the validity figures, on tables small enough to derive by hand: in the ceiling's
kappa at an end of the scale (a regression head's value at the end it passed), counted where alpha and kappa leave
them out, and the counts carried to metrics.json and the report."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.validity_tables import panel as _panel
from tests.support.validity_tables import section_with_alt_test as _section
from tests.support.validity_tables import table_on_0_to_2 as _table

# Six items on a 1-3 scale, three experts each, unanimous: every leave-one-out reference is the item's own level.
# The judge is right on items 0-3 and answers 9 (off the scale) on items 4 (experts 3) and 5 (experts 1).
_EXPERTS = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3], [1, 1, 1], [3, 3, 3], [1, 1, 1]], dtype=float)
_OFF_SCALE_JUDGE = np.array([1, 2, 3, 1, 9, 9], dtype=float)
_LOW, _HIGH = np.full(6, 1.0), np.full(6, 3.0)

#: The judge's quadratic kappa on all 18 pairs when items 4 and 5 take the end of the scale farther from their
#: reference (item 4: reference 3, level 1; item 5: reference 1, level 3). Judge and reference margins are both
#: (9, 3, 6) over levels (1, 2, 3), N = 18; the weights (i - j)^2 / 4 are 1/4 for neighbours and 1 for 1 vs 3.
#: Observed: the 6 pairs of items 4 and 5 at weight 1, sum 6. Expected: 2 (9*3/4 + 9*6 + 3*6/4) / 18 = 130.5 / 18
#: = 7.25. Kappa = 1 - 6 / 7.25 = 5 / 29.
_KAPPA_TWO_WORST_ITEMS = 5 / 29


def _ceiling(judge, failures="worst"):
    from eval.validity.ceiling import ceiling
    from eval.validity.section import judge_levels

    return ceiling(judge, _EXPERTS, "mode", np.array([1.0, 2.0, 3.0]), n_boot=0, failures=failures,
                   judge_levels=judge_levels(judge, _LOW, _HIGH), low=_LOW, high=_HIGH)


@pytest.mark.parametrize("failures", ["worst", "drop"])
def test_ceiling_kappa_takes_off_scale_answers_on_the_experts_pairs(failures):
    """Kappa's table left the two off-scale answers out of the judge's side alone: the judge's kappa was 1.0 on 12
    pairs beside the expert's on 18, as if the judge were perfect. Now both cover the 18 pairs; the off-scale answers
    enter at the end farther from the reference (a failure's level under ``worst``), giving 5/29 (derived above),
    under either rule (an answer is not a failure, so ``drop`` keeps it); the MAE keeps their own distances: items 4
    and 5 err by 6 and 8 on three pairs each, (3 * 6 + 3 * 8) / 18 = 7/3. Counted: 6 pairs on 2 items."""
    out = _ceiling(_OFF_SCALE_JUDGE, failures)
    assert out["n_pairs"] == 18 and out["expert_kappa"] == pytest.approx(1.0)
    assert out["judge_kappa"] == pytest.approx(_KAPPA_TWO_WORST_ITEMS)
    assert out["judge_mae"] == pytest.approx(7 / 3) and out["expert_mae"] == 0.0
    assert (out["n_judge_off_scale"], out["n_items_judge_off_scale"]) == (6, 2)
    assert (out["n_judge_failed"], out["n_items_judge_failed"]) == (0, 0)


def test_ceiling_kappa_of_off_scale_answers_is_no_better_than_of_failures():
    """The same judge failing on items 4 and 5 (NaN) under ``worst``: each failure takes the end farther from the
    reference, the same levels as the off-scale answers above, so the same kappa 5/29 on the same 18 pairs. Before,
    failing read 5/29 and answering 9 read 1.0."""
    failed = _ceiling(np.where(np.arange(6) >= 4, np.nan, _OFF_SCALE_JUDGE))
    off = _ceiling(_OFF_SCALE_JUDGE)
    assert failed["judge_kappa"] == pytest.approx(_KAPPA_TWO_WORST_ITEMS) == off["judge_kappa"]
    assert failed["n_pairs"] == off["n_pairs"] == 18
    assert (failed["n_items_judge_failed"], failed["n_items_judge_off_scale"]) == (2, 0)


def test_a_regression_heads_value_past_an_end_enters_the_ceilings_kappa_at_that_end():
    """A regression head's raw values overshoot the scale where the experts agree on an end: 3.6 on item 4 (experts
    3) rounds to 4 and -0.7 on item 5 (experts 1) to -1, both off the 1-3 scale. Read as a verdict's (the end
    farther from the reference) they counted as answering 1 and 3, kappa 5/29 as above; as measurements near an end
    (``measured``) they are 3 and 1, each pair's own reference, so kappa is 1 on all 18 pairs, while the MAE keeps
    their distances: 3 pairs each at 0.6 and 1.7, (3 * 0.6 + 3 * 1.7) / 18 = 0.3833. Still counted as off-scale."""
    from eval.validity.ceiling import ceiling, measured
    from eval.validity.section import judge_levels

    head = np.array([1, 2, 3, 1, 3.6, -0.7])
    kwargs = dict(n_boot=0, judge_levels=judge_levels(head, _LOW, _HIGH), low=_LOW, high=_HIGH)
    as_head = ceiling(head, _EXPERTS, "mode", np.array([1.0, 2.0, 3.0]),
                      measured=measured(np.array(["regression_head"] * 6, dtype=object)), **kwargs)
    assert as_head["judge_kappa"] == pytest.approx(1.0) and as_head["n_pairs"] == 18
    assert as_head["judge_mae"] == pytest.approx((3 * 0.6 + 3 * 1.7) / 18)
    assert (as_head["n_judge_off_scale"], as_head["n_items_judge_off_scale"]) == (6, 2)
    as_verdict = ceiling(head, _EXPERTS, "mode", np.array([1.0, 2.0, 3.0]),
                         measured=measured(np.array(["verdict"] * 6, dtype=object)), **kwargs)
    assert as_verdict["judge_kappa"] == pytest.approx(_KAPPA_TWO_WORST_ITEMS)


def test_agreement_counts_the_off_scale_answers_alpha_and_kappa_leave_out():
    """Alpha with the judge and kappa against the mode are over the judge's ratings of the scale: items 4 and 5 are
    out of both (alpha with the judge 1.0, kappa 1.0 on 4 items). ``n_kappa_off_domain`` counts them among the items
    with a unique mode; ``n_items_judge_off_scale`` counts every one, the count alpha had none of: 2."""
    from eval.scoring.metrics import expert_mode
    from eval.validity.agreement import agreement
    from eval.validity.section import judge_levels, off_scale_levels

    mode, _ = expert_mode(_EXPERTS)
    out = agreement(judge_levels(_OFF_SCALE_JUDGE, _LOW, _HIGH), _EXPERTS, mode, np.array([1.0, 2.0, 3.0]),
                    off_scale=off_scale_levels(_OFF_SCALE_JUDGE, _LOW, _HIGH), n_boot=0)
    assert out["alpha_with_judge"] == pytest.approx(1.0) and out["kappa_quadratic"] == pytest.approx(1.0)
    assert (out["n_kappa"], out["n_kappa_off_domain"], out["n_items_judge_off_scale"]) == (4, 2, 2)
    assert out["n_items_judge_failed"] == 0


def test_off_scale_counts_and_domains_without_verdict_reach_metrics_json_and_the_report():
    """40 items of truth 0, 1, 2, ... on a 0-2 scale. Task type x (items 0-34): A, B and C give the truth; y (35-39):
    A alone is named. The judge gives the truth but 5 (off the scale) on items 0-2. Ceiling: items 0-2 have 3 pairs
    each, 9 off-scale pairs on 3 items. Agreement: those 3 items are out of alpha with the judge and kappa
    (``n_items_judge_off_scale`` 3; each has a unique mode: ``n_kappa_off_domain`` 3, ``n_kappa`` 37). Alt-test per
    task type: x tested (A, B, C 35 items each), y not (A alone named): 1 with a verdict, 1 without. The typed section
    keeps every count (it dropped them before) and reads back equal; the report's overall table shows them."""
    from eval.validity.render import _overall_rows
    from judge.metrics_json.validity import ValiditySplit

    n = 40
    judge, experts, ids = _panel(n, lambda i: "ABC")
    judge[:3] = 5.0
    ids[35:, 1:] = None
    block = _section(_table(judge, experts, ids, task_type=["x"] * 35 + ["y"] * 5))
    ceiling, agreement = block.overall.ceiling, block.overall.agreement
    assert (ceiling.n_judge_off_scale, ceiling.n_items_judge_off_scale) == (9, 3)
    assert (agreement.n_items_judge_off_scale, agreement.n_kappa_off_domain, agreement.n_kappa) == (3, 3, 37)
    family = block.alt_test_domains["task_type"]
    assert (family.n_passed, family.n_domains, family.n_domains_without_verdict) == (1, 1, 1)
    assert ValiditySplit.from_json(block.to_json()) == block
    rows = dict(_overall_rows(block, "worst"))
    assert rows["κ quadratic (to the rest of the panel)"].endswith(
        "(the judge answered off the scale on 3 items, 9 pairs: in κ at an end of the scale)")
    assert "(over its readable verdicts: 3 off-scale items left out)" in rows["Krippendorff's α (ordinal)"]
    assert rows["κ quadratic (judge vs experts' mode)"].endswith("(over 37 items; 3 off the scale left out)")
    assert rows["alt-test per task type (one BY correction)"] == (
        "passes in 1 of 1 task type with a verdict; 1 without (no 2 named experts with 30 judged items or more "
        "there)")


def test_the_kappa_and_homogeneity_rows_say_the_judges_failures_are_left_out():
    """The table above with the judge also failing on item 3 (truth 0): 40 items, 3 off the scale, 1 failed. Kappa
    against the mode and the Stuart–Maxwell table are over the items with a judge level on the scale and a unique
    mode: 40 - 3 - 1 = 36. Both rows said the off-scale items only (the α row said the failure too); now both name
    the failed item, from the agreement's ``n_items_judge_failed`` (1) and ``n_items_judge_off_scale`` (3)."""
    from eval.validity.render import _overall_rows

    judge, experts, ids = _panel(40, lambda i: "ABC")
    judge[:3] = 5.0
    judge[3] = np.nan
    status = ["ok"] * 40
    status[3] = "parse_failed"
    block = _section(_table(judge, experts, ids, status=status))
    agreement = block.overall.agreement
    assert (agreement.n_items_judge_failed, agreement.n_items_judge_off_scale, agreement.n_kappa) == (1, 3, 36)
    assert block.overall.marginal_homogeneity.n == 36
    rows = dict(_overall_rows(block, "worst"))
    assert rows["κ quadratic (judge vs experts' mode)"].endswith(
        "(over 36 items; 1 failed item and 3 off the scale left out)")
    assert rows["marginal homogeneity (Stuart–Maxwell)"].startswith(
        "χ² —, df —, p — (over 36 items; 1 failed item and 3 off the scale left out): no item lies off the "
        "diagonal")

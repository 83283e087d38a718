"""The judge's answers on items without a readable scale: rated against the ends the ceiling already infers for
such an item (its criterion's expert range, else the table's), so that stray answers neither widen the value domain
nor go uncounted."""

from __future__ import annotations

import numpy as np

from tests.support.validity_tables import item_table as _table
from tests.support.validity_tables import split_section as _section


def test_stray_answers_on_an_unreadable_scale_are_off_its_inferred_ends():
    """60 items of one criterion without a readable scale, experts (0, 1), (1, 2), (2, 2) in turn: the criterion's
    expert range is 0-2, the ends a failure takes in the ceiling. The judge answers 1 on items 0-29 and a different
    number on each of items 30-59 (3, 4, ..., 32). Each stray answer had joined the value domain as a level of its
    own: a 33-level domain [0, 1, ..., 32] (the value counts' coincidences a levels x levels table per distinct row,
    so that the work grew with the cube of the judge's distinct answers), kappa weighing 3 as one step from 2.
    Against the ends 0-2 they are off the scale, as on a known 0-2 rubric:

    - value domain [0, 1, 2];
    - ``n_items_judge_off_scale`` 30 (items 30-59), of which ``n_alpha_items_judge_off_scale`` 30 (every item has two
      expert scores);
    - kappa against the mode over the items with a unique mode among 0-29: the (0, 1) and (1, 2) items have no unique
      mode, the (2, 2) items (every third, 10 of 0-29) have 2; the 10 items of 30-59 with mode 2 are off the domain
      (``n_kappa_off_domain`` 10) and kappa is over those 10 first ones (``n_kappa`` 10).
    """
    n = 60
    experts = np.tile([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]], (n // 3, 1))
    judge = np.r_[np.ones(30), np.arange(3.0, 33.0)]
    unknown = np.full(n, np.nan)
    block = _section(_table(judge, experts, low=unknown, high=unknown))
    agreement = block.overall.agreement
    assert agreement.value_domain == [0.0, 1.0, 2.0]
    assert agreement.n_items_judge_off_scale == 30 and agreement.n_alpha_items_judge_off_scale == 30
    assert (agreement.n_kappa, agreement.n_kappa_off_domain) == (10, 10)
    assert block.by_criterion["c"].agreement.value_domain == [0.0, 1.0, 2.0]
    ceiling = block.overall.ceiling
    assert ceiling.n_items_judge_off_scale == 30


def test_an_answer_inside_the_inferred_ends_stays_a_rating():
    """The same experts, and a judge answering 0 on every item: 0 lies inside the criterion's expert range 0-2, so it
    is a level of the scale, not off it (none counted), as before."""
    n = 60
    experts = np.tile([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]], (n // 3, 1))
    unknown = np.full(n, np.nan)
    agreement = _section(_table(np.zeros(n), experts, low=unknown, high=unknown)).overall.agreement
    assert agreement.value_domain == [0.0, 1.0, 2.0] and agreement.n_items_judge_off_scale == 0


def test_scales_far_apart_pool_their_own_levels_not_the_span_between():
    """57 items of criterion "a" on a 0-2 rubric and 3 of criterion "b" on a 900-1000 rubric (101 levels, the most a
    rubric may hold: judge.scales.MAX_LEVELS), experts and judge at 950 there. Each criterion's domain is its own
    scale; the overall cell pools them. As one span from the lowest end to the highest it was every integer 0-1000,
    1,001 levels, 897 of them no rubric's (a rubric of 19,900-20,000 beside the 0-2 one asked for a 20,001 x 20,001
    table and failed); a span wider than a rubric may hold takes each scale's own levels instead, as an unreadable
    scale's span wider than that takes the values seen: 3 + 101 = 104 levels."""
    n = 60
    experts = np.tile([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]], (n // 3, 1))
    low, high = np.zeros(n), np.full(n, 2.0)
    low[-3:], high[-3:], experts[-3:] = 900.0, 1000.0, 950.0
    block = _section(_table(experts[:, 0].copy(), experts, low=low, high=high, criteria=["a"] * 57 + ["b"] * 3))
    assert block.overall.agreement.value_domain == [0.0, 1.0, 2.0] + [float(v) for v in range(900, 1001)]
    assert block.by_criterion["a"].agreement.value_domain == [0.0, 1.0, 2.0]
    assert block.by_criterion["b"].agreement.value_domain == [float(v) for v in range(900, 1001)]
    assert block.overall.agreement.n_expert_scores_off_domain == 0

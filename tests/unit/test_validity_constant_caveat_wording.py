"""The constant-difference caveat says which constant: a judge that ties or beats every expert on every item (d 0 or
1 throughout, rho 1), or one that loses every item (d -1 throughout, rho 0), never "may never disagree" for the
latter, where judge and experts disagree on every item."""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.support.validity_tables import section_with_alt_test, table_on_0_to_2

IDS = np.tile(np.array(["a", "b", "c"], dtype=object), (40, 1))
PREFIX = ("every tested expert's W_f − W_h is one value on all their items, so each p is the constant-difference "
          "rule's, no t-test's")


def test_a_judge_that_loses_every_item_is_said_to_lose_it():
    """40 items, experts a, b, c at 1, the judge at 0. Each expert left out is 0 from the other two, the judge 1
    from them: W_f = 0, W_h = 1, d = -1 on every item, rho 0 for each, p 1 by the rule: fails."""
    from eval.validity.render import alt_test_line, constant_difference_caveat

    block = section_with_alt_test(table_on_0_to_2(np.zeros(40), np.ones((40, 3)), IDS))
    alt = block.overall.alt_test
    assert [(r.advantage_probability, r.p_value, r.constant_difference) for r in alt.experts] == [(0.0, 1.0, True)] * 3
    caveat = constant_difference_caveat(alt)
    assert caveat == f"{PREFIX} (the judge loses to every expert on every item)"
    assert caveat in block.sentence and "never disagree" not in block.sentence + alt_test_line(alt)


def test_a_judge_that_ties_every_item_is_said_to_tie_or_beat():
    """Experts and judge all at 2: each left-out expert and the judge are both 0 from the other two, W_f = W_h = 1,
    d = 0, rho 1: passes by the rule."""
    from eval.validity.render import constant_difference_caveat

    block = section_with_alt_test(table_on_0_to_2(np.full(40, 2.0), np.full((40, 3), 2.0), IDS))
    caveat = constant_difference_caveat(block.overall.alt_test)
    assert caveat == f"{PREFIX} (the judge ties or beats every expert on every item)"
    assert caveat in block.sentence


def test_a_mix_names_how_many_of_each():
    """The losing judge's result with one expert's rho set to 1 by hand: two lost throughout, one tied or beaten."""
    from eval.validity.render import constant_difference_caveat

    alt = section_with_alt_test(table_on_0_to_2(np.zeros(40), np.ones((40, 3)), IDS)).overall.alt_test
    first = dataclasses.replace(alt.experts[0], advantage_probability=1.0)
    mixed = dataclasses.replace(alt, experts=[first, *alt.experts[1:]])
    assert constant_difference_caveat(mixed) == (
        f"{PREFIX} (the judge ties or beats 1 of the 3 on every item and loses to the other 2 on every item)")

"""The alternative annotator test on panels whose experts are not named on every item, small enough to derive by hand:
a panel of one expert per item lists the expert untested and says what its items lack; items whose experts are all
unnamed are counted as left out."""

from __future__ import annotations

import numpy as np

from tests.support.validity_tables import item_table as _table
from tests.support.validity_tables import split_section as _section


def test_alt_test_of_a_panel_of_one_expert_per_item_lists_the_expert_untested():
    """Every item scored by one named expert (A): no item has the 2 named experts the alt-test needs, so there is no
    (item, expert) pair at all. A is then untested with 0 items (``alt_test`` step 4) and all 40 items are counted
    as having too few experts; before, the overall summary raised IndexError (its one group had no name without a
    pair)."""
    n = 40
    judge = np.arange(n) % 3.0
    ids = np.full((n, 1), "A", dtype=object)
    block = _section(_table(judge, judge[:, None], ids, low=np.zeros(n), high=np.full(n, 2.0)))
    alt = block.overall.alt_test
    assert (alt.n_experts_tested, alt.n_items, alt.n_items_few_experts) == (0, 0, n)
    assert [(u.expert, u.n_items) for u in alt.untested] == [("A", 0)]
    assert alt.passed is None


def test_sentence_says_which_items_an_untested_panel_lacks():
    """The same panel: A scored 40 items, more than the 30 the alt-test needs, but none with a second named expert.
    The sentence said "no expert scored the 30 items the alternative annotator test needs", which A did; it now
    names what the items lack."""
    n = 40
    judge = np.arange(n) % 3.0
    ids = np.full((n, 1), "A", dtype=object)
    sentence = _section(_table(judge, judge[:, None], ids, low=np.zeros(n), high=np.full(n, 2.0))).sentence
    assert sentence.startswith("No expert scored the 30 items (each with at least 2 named experts) the alternative "
                               "annotator test needs")


def test_alt_test_counts_items_whose_experts_are_all_unnamed_as_left_out():
    """40 items, three experts each, all giving the truth as the judge does. Items 0-29 name them (A, B, C); items
    30-39 name none (ids None). The alt-test compares on the 30 named items (each expert tested on 30) and leaves the
    10 unnamed ones out for too few named experts (0 < 2): n_items 30, n_items_few_experts 10, so that 30 + 10 covers
    the 40. Before, an item with no named expert was counted nowhere."""
    n = 40
    truth = np.arange(n) % 3.0
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    ids[30:] = None
    block = _section(_table(truth, np.stack([truth, truth, truth], axis=1), ids, low=np.zeros(n),
                            high=np.full(n, 2.0)))
    alt = block.overall.alt_test
    assert (alt.n_items, alt.n_items_few_experts, alt.n_experts_tested) == (30, 10, 3)

"""The items the alternative annotator test covers, on panels small enough to derive by hand: the sentence says how
many and why not the rest, and names the judge's dropped failures rather than blame the experts."""

from __future__ import annotations

import numpy as np

from tests.support.validity_tables import panel as _panel
from tests.support.validity_tables import section_with_alt_test as _section
from tests.support.validity_tables import table_on_0_to_2 as _table


def test_sentence_says_how_many_items_the_alt_test_covers_and_why_not_the_rest():
    """40 items: 0-29 scored by A, B and C; 30-34 by A alone (fewer than 2 named experts); 35-36 not predicted yet
    (missing); 37-39 by no expert. The judge gives the truth, as every expert: each left-out expert ties the judge on
    its 30 items, d = 0 > -0.2, p = 0, rejected; omega = 3/3, rho = 1. The verdict is over 30 of the split's 40 items,
    which the sentence said nowhere: 5 with fewer than 2 named experts, 2 without a prediction, 3 without an expert
    score (30 + 5 + 2 + 3 = 40)."""
    n = 40
    judge, experts, ids = _panel(n, lambda i: "ABC" if i < 30 or 35 <= i < 37 else "A" if i < 35 else "")
    status = ["missing" if 35 <= i < 37 else "ok" for i in range(n)]
    judge = np.where(np.array(status) == "missing", np.nan, judge)
    block = _section(_table(judge, experts, ids, status=status))
    alt = block.overall.alt_test
    assert (alt.n_items, alt.n_items_few_experts, block.overall.n_items, block.overall.n_items_missing) == (30, 5, 38, 2)
    assert block.sentence.startswith(
        "Passes the alternative annotator test against 3 of 3 experts (ω = 1.00, ρ = 1.00), over 30 of 40 items (5 "
        "with fewer than 2 named experts, 2 without a prediction, 3 without an expert score);")


def test_sentence_says_nothing_of_coverage_when_the_alt_test_covers_every_item():
    """The same panel on items 0-29 alone: the test covers all 30, and the sentence is as before."""
    judge, experts, ids = _panel(30, lambda i: "ABC")
    sentence = _section(_table(judge, experts, ids)).sentence
    assert sentence.startswith("Passes the alternative annotator test against 3 of 3 experts (ω = 1.00, ρ = 1.00);")
    assert " over " not in sentence.split(";")[0]


def test_dropped_failures_are_named_not_blamed_on_the_experts():
    """A, B and C score all 40 items; the judge fails on every one, and ``--alt-test-failures drop`` drops them: no
    item is left, so no expert is tested. The sentence said "No expert scored the 30 items (each with at least 2 named
    experts) ...", though each scored 40: it now says the judge's 40 failed items were dropped."""
    n = 40
    _, experts, ids = _panel(n, lambda i: "ABC")
    table = _table(np.full(n, np.nan), experts, ids, status=["parse_failed"] * n)
    block = _section(table, failures="drop")
    assert (block.overall.alt_test.n_experts_tested, block.overall.alt_test.n_items_judge_failed) == (0, n)
    assert block.sentence.startswith(
        "The judge's 40 failed items were dropped from the alternative annotator test, so no expert has the 30 items "
        "(each with at least 2 named experts) it needs;")
    # under ``loss`` the failures stay in the test as losses: the experts are tested, nothing was dropped
    assert "dropped" not in _section(table).sentence


def test_untested_expert_after_dropped_failures_says_so():
    """A and B score items 0-59, C items 0-39; the judge fails on items 0-19 and gives the truth elsewhere; failures
    dropped. Left: items 20-59, A and B 40 each (tested: ties everywhere, both rejected, omega = 2/2), C 20 (items
    20-39: untested, under 30). The test covers 40 of 60 items, the other 20 the judge's dropped failures; C was
    untested because of them, not for scoring too little (C scored 40)."""
    n = 60
    judge, experts, ids = _panel(n, lambda i: "ABC" if i < 40 else "AB")
    judge = np.where(np.arange(n) < 20, np.nan, judge)
    status = ["parse_failed" if i < 20 else "ok" for i in range(n)]
    block = _section(_table(judge, experts, ids, status=status), failures="drop")
    assert block.sentence.startswith(
        "Passes the alternative annotator test against 2 of 2 tested experts (ω = 1.00, ρ = 1.00), over 40 of 60 items "
        "(20 the judge failed on, dropped); 1 more expert untested (under 30 items, after the judge's 20 failed items "
        "were dropped);")

"""The alternative annotator test by domain (task type, criterion), on tables small enough to derive by hand: a missing
label is one more domain, and the domains without a verdict are counted, per split."""

from __future__ import annotations

import numpy as np

from tests.support.validity_tables import item_table as _table
from tests.support.validity_tables import panel as _panel
from tests.support.validity_tables import split_section as _section


def test_alt_test_domain_of_an_unnamed_criterion_is_its_own():
    """60 items on a 0-2 scale, truth 0, 1, 2, 0, ...; experts A, B, C all give the truth. Criterion "c1" (items
    0-29): the judge gives the truth too. The other 30 items carry no criterion name (None): the judge gives 2 - truth,
    right only where the truth is 1 (10 of 30). There, left out, each expert matches the other two exactly, the judge
    only on those 10: W_f = 1/3 of the items, rho = 1/3; d = 0 on 10 items and -1 on 20, mean -2/3 below -0.2:
    no expert rejected, the judge fails there. Before, the section's domain codes gave the unnamed items pandas' -1:
    counting the experts' scores per domain raised ValueError."""
    n = 60
    truth = np.arange(n) % 3.0
    experts = np.stack([truth, truth, truth], axis=1)
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    judge = np.where(np.arange(n) < 30, truth, 2 - truth)
    criteria = np.array(["c1"] * 30 + [None] * 30, dtype=object)
    block = _section(_table(judge, experts, ids, low=np.zeros(n), high=np.full(n, 2.0), criteria=criteria))
    named, unnamed = block.by_criterion["c1"].alt_test, block.by_criterion["None"].alt_test
    assert (named.n_experts_tested, named.passed, named.advantage_probability) == (3, True, 1.0)
    assert (unnamed.n_experts_tested, unnamed.passed) == (3, False)
    assert abs(unnamed.advantage_probability - 1 / 3) < 1e-12
    family = block.alt_test_domains["criterion"]
    assert (family.n_passed, family.n_domains) == (1, 2)


def test_the_alt_test_by_domain_takes_a_missing_label_as_one_more_domain():
    """``summarise_by_domain`` on raw labels, half of them None: two domains of 30 items, each passed (every expert and
    the judge give the truth: d = 0 on every item, the constant rule's p = 0). Before, the None items' code -1
    raised ValueError."""
    from eval.validity.alt_test import AltTestSettings, prepare, summarise_by_domain

    n = 60
    truth = np.arange(n) % 3.0
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    domains = np.array(["c1"] * 30 + [None] * 30, dtype=object)
    settings = AltTestSettings()
    found = summarise_by_domain(prepare(truth, np.stack([truth, truth, truth], axis=1), ids, settings), settings,
                                domains)
    assert (found["n_passed"], found["n_domains"]) == (2, 2)
    assert sorted(s["n_experts_tested"] for s in found["by_domain"].values()) == [3, 3]


def test_alt_test_domains_count_the_domains_without_a_verdict():
    """Three task types of 30 items: x scored by A, B and C (3 tested, ties, all rejected: passes); y by A and an
    unnamed expert (fewer than 2 named experts: A untested, no verdict); z by unnamed experts alone (no row at all).
    "Passes in 1 of 1" said nothing of y and z: ``n_domains_without_verdict`` = 2."""
    from eval.validity.alt_test import AltTestSettings, prepare, summarise_by_domain

    n = 90
    judge, experts, ids = _panel(n, lambda i: "ABC")
    domains = np.array(["x"] * 30 + ["y"] * 30 + ["z"] * 30, dtype=object)
    ids[30:60, 1:] = None
    ids[60:] = None
    family = summarise_by_domain(prepare(judge, experts, ids, AltTestSettings()), AltTestSettings(), domains)
    assert (family["n_passed"], family["n_domains"], family["n_domains_without_verdict"]) == (1, 1, 2)
    assert family["by_domain"]["y"]["passed"] is None and "z" not in family["by_domain"]


def test_section_family_counts_only_the_splits_domains():
    """The section's family is per split: a split with only task type x's items has no domain without a verdict,
    though the table has three task types."""
    from eval.validity.alt_test import AltTestSettings, prepare, summarise_by_domain

    n = 90
    judge, experts, ids = _panel(n, lambda i: "ABC")
    domains = np.array(["x"] * 30 + ["y"] * 30 + ["z"] * 30, dtype=object)
    ids[30:60, 1:] = None
    ids[60:] = None
    found = prepare(judge, experts, ids, AltTestSettings())
    only_x = np.arange(n) < 30
    family = summarise_by_domain(found, AltTestSettings(), domains, only_x)
    assert (family["n_passed"], family["n_domains"], family["n_domains_without_verdict"]) == (1, 1, 0)

"""What the validity figures left out without saying so, on tables small enough to derive by hand: the judge's
off-scale answers in the ceiling's kappa and in alpha / kappa, the items the alt-test does not cover, the judge's
dropped failures blamed on the experts, and the domains without an alt-test verdict."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.test_validity_review import _table as review_table

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


def _table(judge, experts, ids, *, status=None, task_type=None):
    """``test_validity_review``'s table, every item on the 0-2 scale."""
    n = len(judge)
    return review_table(judge, experts, ids, status=status, low=np.zeros(n), high=np.full(n, 2.0),
                        task_type=task_type)


def _section(table, **alt_test):
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings

    settings = ValiditySettings(n_boot=0, alpha_boot=0, alt_test=AltTestSettings(**alt_test))
    return validity_section(table, "mode", {"standard": np.arange(len(table))}, settings).splits["standard"]


def _panel(n, experts_of):
    """``n`` items of truth 0, 1, 2, 0, ...; item i scored (the truth) by the experts ``experts_of(i)`` names."""
    truth = np.arange(n) % 3.0
    experts, ids = np.full((n, 3), np.nan), np.full((n, 3), None, dtype=object)
    for i in range(n):
        for slot, name in enumerate(experts_of(i)):
            experts[i, slot], ids[i, slot] = truth[i], name
    return truth, experts, ids


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


def test_alt_test_domains_count_the_domains_without_a_verdict():
    """Three task types of 30 items: x scored by A, B and C (3 tested, ties, all rejected: passes); y by A and an
    unnamed expert (fewer than 2 named experts: A untested, no verdict); z by unnamed experts alone (no row at all).
    "Passes in 1 of 1" said nothing of y and z: ``n_domains_without_verdict`` = 2."""
    from eval.validity.alt_test import AltTestSettings, alt_test_by_domain

    n = 90
    judge, experts, ids = _panel(n, lambda i: "ABC")
    domains = np.array(["x"] * 30 + ["y"] * 30 + ["z"] * 30, dtype=object)
    ids[30:60, 1:] = None
    ids[60:] = None
    family = alt_test_by_domain(judge, experts, ids, domains, AltTestSettings())
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

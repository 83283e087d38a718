"""Validity figures on tiny tables, derived by hand: the cases a review of ``eval.validity`` found mishandled (a
traceback, or a figure that did not say what it was)."""

from __future__ import annotations

import numpy as np
import pytest


def _table(judge, experts, ids=None, *, status=None, low=None, high=None, criteria=None, task_type=None):
    """An item table of one split, model and task group; ``criteria`` / ``task_type``: per item (default "c" / "t")."""
    from eval.scoring.item_table import ItemTable

    n = len(judge)
    labels = {name: np.full(n, value, dtype=object) for name, value in (
        ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("model_id", "m"), ("task_type", "t"),
        ("task_group", "g"), ("criteria_name", "c"))}  # fmt: skip
    for name, given in (("criteria_name", criteria), ("task_type", task_type)):
        if given is not None:
            labels[name] = np.asarray(given, dtype=object)
    return ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=np.asarray(judge, dtype=float),
                     experts=np.asarray(experts, dtype=float), expert_ids=ids,
                     status=np.asarray(["ok"] * n if status is None else status, dtype=object),
                     scale_low=low, scale_high=high, **labels)


def _section(table, **settings):
    from eval.validity.section import ValiditySettings, validity_section

    return validity_section(table, "mode", {"standard": np.arange(len(table))},
                            ValiditySettings(n_boot=0, alpha_boot=0, **settings)).splits["standard"]


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


def test_alt_test_by_domain_takes_a_missing_label_as_one_more_domain():
    """``alt_test_by_domain`` on raw labels, half of them None: two domains of 30 items, each passed (every expert and
    the judge give the truth: d = 0 on every item, the constant rule's p = 0). Before, the None items' code -1
    raised ValueError."""
    from eval.validity.alt_test import alt_test_by_domain

    n = 60
    truth = np.arange(n) % 3.0
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    domains = np.array(["c1"] * 30 + [None] * 30, dtype=object)
    found = alt_test_by_domain(truth, np.stack([truth, truth, truth], axis=1), ids, domains)
    assert (found["n_passed"], found["n_domains"]) == (2, 2)
    assert sorted(s["n_experts_tested"] for s in found["by_domain"].values()) == [3, 3]


def test_sentence_counts_every_failed_item_not_only_those_in_the_ceiling():
    """40 items on a 0-2 scale: items 0-19 scored by two experts, items 20-39 by one. The judge gives the truth on
    items 0-17 and fails (unparseable) on items 18-39: 22 failed items. Only items 18 and 19 have a ceiling pair (a
    leave-one-out reference needs a second expert), so the ceiling counts 2 failed items; the sentence said "the judge
    failed on 2 items". It now counts all 22 (alpha's count, every predicted item) and says how many the ceiling
    read."""
    n = 40
    truth = np.arange(n) % 3.0
    experts = np.stack([truth, truth], axis=1)
    experts[20:, 1] = np.nan
    judge = np.where(np.arange(n) < 18, truth, np.nan)
    status = ["ok"] * 18 + ["parse_failed"] * 22
    block = _section(_table(judge, experts, status=status, low=np.zeros(n), high=np.full(n, 2.0)))
    assert (block.overall.ceiling.n_items_judge_failed, block.overall.agreement.n_items_judge_failed) == (2, 22)
    assert block.sentence.endswith("the judge failed on 22 items (2 of them with a ceiling pair, each counted as its "
                                   "largest error in the ceiling).")


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


def test_a_failure_on_a_unanimous_criterion_without_a_scale_is_no_exact_answer():
    """No readable scale. Criterion "a" (items 0-29): both experts give 1 on every item; the judge fails on items
    0-9 and gives 1 on the rest. Criterion "b" (items 30-39): both experts give 0 (items 30-34) or 2 (35-39), as the
    judge does. Every expert's error to the other is 0. A failure's worst error took its criterion's experts' range as
    the scale: [1, 1] on "a", so each failure cost 0, an exact answer. A range of one level tells no scale: the ends
    are the table's levels [0, 2], the reference 1 is 1 from either end, the error 1. Overall 80 pairs, 20 of them
    failed: judge MAE 20/80 = 0.25, gap 0.25 (before: 0); criterion "a": 20/60."""
    n = 40
    experts = np.ones((n, 2))
    experts[30:35] = 0.0
    experts[35:] = 2.0
    judge = experts[:, 0].copy()
    judge[:10] = np.nan
    status = ["parse_failed"] * 10 + ["ok"] * 30
    block = _section(_table(judge, experts, status=status, criteria=["a"] * 30 + ["b"] * 10))
    overall, criterion = block.overall.ceiling, block.by_criterion["a"].ceiling
    assert (overall.n_pairs, overall.n_judge_failed, overall.expert_mae) == (80, 20, 0.0)
    assert overall.judge_mae == overall.gap == 0.25
    assert abs(criterion.judge_mae - 1 / 3) < 1e-12


@pytest.mark.parametrize("epsilon", [1.0, 1.5, -0.1, float("nan")])
def test_an_epsilon_outside_zero_to_one_is_refused(epsilon):
    """The alt-test's difference of advantage probabilities lies in [-1, 1]: epsilon 1.5 passed a judge wrong on
    most items (every expert rejected), and NaN reached scipy's false_discovery_control as a bare ValueError."""
    from judge.metrics_json.validity import AltTestSettings

    with pytest.raises(ValueError, match=r"^alt-test epsilon must lie in \[0, 1\)"):
        AltTestSettings(epsilon=epsilon)
    assert AltTestSettings(epsilon=0.0).epsilon == 0.0

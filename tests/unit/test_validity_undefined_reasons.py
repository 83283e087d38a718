"""A "—" in the validity table says why: an agreement coefficient whose ratings all lie on one level has no
disagreement to expect, kappa with no item to pair has no table, and a leniency without a direction says whether
it had no error to average or too few answers for one (``eval.validity.render``, docs/validity.md)."""

from __future__ import annotations

import numpy as np
import pytest


def _rows(judge, experts):
    from eval.validity.render import _overall_rows
    from tests.support.validity_tables import split_section, table_on_0_to_2

    return dict(_overall_rows(split_section(table_on_0_to_2(np.asarray(judge, dtype=float),
                                                            np.asarray(experts, dtype=float), None))))


def test_every_rating_on_one_level_leaves_alpha_and_kappa_undefined_and_the_rows_say_why():
    """40 items on 0-2, three experts and the judge all at 2. Krippendorff's expected disagreement is a sum over
    pairs of different values (none here), so 0: alpha is 0/0. Kappa's table is one cell (2, 2) with margins 40 and
    40 on level 2 alone: expected weighted disagreement 0, kappa 0/0. The ceiling's pairs, (2, reference 2) on both
    sides, the same. Each row had shown a bare "—"."""
    from eval.validity.render import NO_DISAGREEMENT

    rows = _rows(np.full(40, 2.0), np.full((40, 3), 2.0))
    assert rows["Krippendorff's α (ordinal)"] == f"experts —, with the judge —, difference —; α —: {NO_DISAGREEMENT}"
    assert rows["κ quadratic (judge vs experts' mode)"] == f"—: {NO_DISAGREEMENT}"
    assert rows["κ quadratic (to the rest of the panel)"] == f"expert —, judge —; κ —: {NO_DISAGREEMENT}"


def test_a_constant_judge_against_a_constant_mode_of_another_level_is_kappa_zero_without_a_reason():
    """Experts at 2 on 40 items, the judge at 1 on all: the table's one cell (1, 2) is also its expected cell
    (margins 40 on judge level 1, 40 on mode 2), so observed and expected disagreement are equal: kappa 1 - 1 = 0,
    a figure, not undefined. Alpha with the judge: each item's values (2, 2, 2, 1) give coincidences o(2,2) = 2,
    o(1,2) = o(2,1) = 1; over 40 items n_1 = 40, n_2 = 120, n = 160, and with delta(1, 2) the same in both terms
    alpha = 1 - 80 / (2 * 40 * 120 / 159) = 1 - 159 / 120 = -0.325; the experts' own alpha stays undefined."""
    from eval.validity.render import NO_DISAGREEMENT
    from tests.support.validity_tables import split_section, table_on_0_to_2

    judge, experts = np.full(40, 1.0), np.full((40, 3), 2.0)
    overall = split_section(table_on_0_to_2(judge, experts, None)).overall
    assert (overall.kappa_quadratic, overall.alpha_experts) == (0.0, None)
    assert overall.alpha_with_judge == pytest.approx(-0.325, abs=1e-12)
    rows = _rows(judge, experts)
    assert rows["κ quadratic (judge vs experts' mode)"] == "0.00"
    assert rows["Krippendorff's α (ordinal)"].endswith(f"difference —; α —: {NO_DISAGREEMENT}")


def test_a_leniency_interval_off_zero_over_fewer_than_ten_answers_says_why_it_has_no_direction():
    """Five items (five answers), experts (0, 0), the judge at 1: errors +1, the zero-width interval [1, 1], which
    excludes 0; a direction needs 10 answers (``bias.MIN_LENIENCY_N``), so "neither", and the row says why, where
    "[1.000, 1.000]: neither" read as a contradiction."""
    rows = _rows(np.ones(5), np.zeros((5, 2)))
    assert rows["leniency (+ = lenient)"] == ("1.000 [1.000, 1.000]: neither (a direction needs 10 answers or more, "
                                                  "instructions under --bootstrap-unit instruction)")
    # an interval that holds 0 is "neither" on its own: no clause
    rows = _rows(np.array([1.0, 0.0, 0.0, 0.0, 1.0]), np.array([[0, 0], [1, 1], [0, 0], [1, 1], [1, 1]], dtype=float))
    assert rows["leniency (+ = lenient)"].endswith(": neither")


def test_with_every_verdict_failed_leniency_has_no_direction_and_kappa_no_item():
    """Five items, every verdict failed: no error to average, so no direction (it had read "—: neither", a judge
    neither lenient nor harsh), and no (judge level, mode) pair for kappa."""
    rows = _rows(np.full(5, np.nan), np.array([[0, 0], [1, 1], [2, 2], [0, 1], [1, 1]], dtype=float))
    assert rows["leniency (+ = lenient)"] == "—: no direction (over 0 items; 5 failed items left out)"
    assert rows["κ quadratic (judge vs experts' mode)"] == (
        "— (over 0 items; 5 failed items left out): no item has both a judge level on the scale and a unique "
        "experts' mode")


def test_the_table_by_criterion_explains_its_undefined_alpha_and_kappa_under_it_only_where_one_is():
    """Two criteria on 0-2, 35 items each. "c": experts (2, 2) and the judge 2 on every item, so every rating is 2:
    α of the experts, α with the judge and κ against the mode are all 0/0. "d": experts (e, e) with e = 0, 1, 2, ...
    and the judge e: α 1, κ 1. The note under the table says what a "—" there means; a table without one has none."""
    from eval.validity.render import CRITERION_NOTE, _criterion_note
    from tests.support.validity_tables import item_table, split_section

    n = 70
    truth = np.where(np.arange(n) < 35, 2.0, np.arange(n) % 3.0)
    criteria = np.where(np.arange(n) < 35, "c", "d")
    table = item_table(truth, np.column_stack([truth, truth]), None, low=np.zeros(n), high=np.full(n, 2.0),
                       criteria=criteria)
    block = split_section(table)
    c, d = block.by_criterion["c"], block.by_criterion["d"]
    assert (c.alpha_experts, c.alpha_with_judge, c.kappa_quadratic) == (None, None, None)
    assert (d.alpha_experts, d.alpha_with_judge, d.kappa_quadratic) == (1.0, 1.0, 1.0)
    assert _criterion_note(block) == CRITERION_NOTE
    only_d = split_section(item_table(truth[35:], np.column_stack([truth, truth])[35:], None, low=np.zeros(35),
                                      high=np.full(35, 2.0), criteria=criteria[35:]))
    assert _criterion_note(only_d) == ""


def test_a_ceiling_without_a_verdict_says_whether_it_lacks_an_interval_or_a_pair():
    """No bootstrap (the tables here are built with ``n_boot=0``): 40 items whose experts and judge all say 2 have
    pairs (gap 0 - 0 = 0) but no interval; five items of one expert each have no pair (no rest of the panel), so no
    gap. Both rows had ended in a bare "—"."""
    ceiling = "experts' ceiling (MAE to the rest of the panel)"
    assert _rows(np.full(40, 2.0), np.full((40, 3), 2.0))[ceiling] == \
        "expert 0.00, judge 0.00, gap 0.00: no verdict (no interval)"
    single = np.column_stack([[0.0, 1.0, 2.0, 1.0, 0.0], np.full(5, np.nan)])
    assert _rows(single[:, 0], single)[ceiling] == \
        "expert —, judge —, gap —: no verdict (no pair), over 0 of 5 items (5 with fewer than 2 experts)"


def test_an_alt_test_p_value_set_by_the_constant_difference_rule_says_so_in_the_table():
    """40 items, experts a, b, c and the judge all at 2: left out, each expert's alignment with the other two is
    -sqrt(0) = 0, the judge's the same, so W_f = W_h = 1 and d = 0 on every item. No spread: the stated rule gives
    p = 0 (0 > -0.2), and the table says the 0 is that rule's, not a t-test's underflow. With the judge at 1 on the
    first ten items each expert's d is -1 there and 0 elsewhere: mean -0.25, s = sqrt(0.25 * 0.75 * 40 / 39) =
    0.4385, t = (-0.25 + 0.2) / (0.4385 / sqrt(40)) = -0.721 on 39 degrees of freedom, p = 0.762: a t-test, no mark."""
    from eval.validity.render import CONSTANT_D, _alt_rows
    from tests.support.validity_tables import section_with_alt_test, table_on_0_to_2

    from eval.validity.render import alt_test_line, constant_difference_caveat

    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (40, 1))
    block = section_with_alt_test(table_on_0_to_2(np.full(40, 2.0), np.full((40, 3), 2.0), ids))
    alt = block.overall.alt_test
    assert [(r.expert, r.p_value, r.constant_difference) for r in alt.experts] == [
        ("a", 0.0, True), ("b", 0.0, True), ("c", 0.0, True)]
    assert [row[3] for row in _alt_rows(alt, str)] == [f"0 ({CONSTANT_D})"] * 3
    # every tested expert's p the rule's: the verdict "passes against 3 of 3" says what it rests on, where it is said
    caveat = constant_difference_caveat(alt)
    assert caveat.startswith("every tested expert's W_f − W_h is one value on all their items")
    assert block.sentence.startswith("Passes the alternative annotator test against 3 of 3 experts")
    assert caveat in block.sentence
    assert alt_test_line(alt).endswith(f"; {caveat}.")
    judge = np.where(np.arange(40) < 10, 1.0, 2.0)
    block = section_with_alt_test(table_on_0_to_2(judge, np.full((40, 3), 2.0), ids))
    alt = block.overall.alt_test
    assert [r.constant_difference for r in alt.experts] == [False] * 3
    assert [r.p_value for r in alt.experts] == pytest.approx([0.762] * 3, abs=5e-4)
    assert all("(" not in row[3] for row in _alt_rows(alt, str))
    assert constant_difference_caveat(alt) == "" and "W_f" not in block.sentence + alt_test_line(alt)


def test_under_the_instruction_unit_the_leniency_floor_counts_instructions():
    """40 items, experts (0, 0), the judge at 1: errors +1 on 40 answers read lenient [1, 1]. Under
    ``--bootstrap-unit instruction`` with the 40 items in 4 instructions the interval is clustered by instruction:
    4 clusters, under the floor of 10, so "neither", and the row's reason names instructions as the unit counted."""
    import dataclasses

    from eval.validity.render import _overall_rows
    from tests.support.validity_tables import split_section, table_on_0_to_2

    table = table_on_0_to_2(np.ones(40), np.zeros((40, 2)), None)
    assert split_section(table).overall.leniency.direction == "lenient"
    table = dataclasses.replace(table, instruction_key=np.arange(40) // 10)
    block = split_section(table, bootstrap_unit="instruction")
    assert (block.overall.leniency.ci, block.overall.leniency.direction) == ([1.0, 1.0], "neither")
    assert dict(_overall_rows(block))["leniency (+ = lenient)"] == (
        "1.000 [1.000, 1.000]: neither (a direction needs 10 answers or more, instructions under --bootstrap-unit "
        "instruction)")


def test_alpha_over_fewer_items_than_the_verdict_floor_says_it_is_too_few_to_read():
    """Krippendorff's alpha over one item is 0 whatever its ratings: the observed disagreement is that item's, and
    the expected one is the same pairs' (here experts 0 and 2: D_o = D_e, alpha = 1 - 1 = 0). The row said "0.00"
    with no count; under ``MIN_VERDICT_UNITS`` items it now names the count and the floor. 30 items: no note."""
    from eval.scoring.bootstrap import MIN_VERDICT_UNITS

    alpha = "Krippendorff's α (ordinal)"
    one = _rows([1.0], [[0.0, 2.0]])[alpha]
    assert one.startswith("experts 0.00, ") and one.endswith(
        f"; over 1 item, under {MIN_VERDICT_UNITS}: too few to read α or its interval")
    truth = np.arange(MIN_VERDICT_UNITS) % 3.0
    assert "too few to read" not in _rows(truth, np.column_stack([truth, truth]))[alpha]

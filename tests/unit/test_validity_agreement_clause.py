"""The lead sentence beside the alt-test's verdict: a judge can win the leave-one-out comparison against noisy
experts without reading the answers (a constant at the scale's middle), so where its agreement figures say it adds
nothing (quadratic kappa at or below 0) or lowers the experts' agreement (the alpha difference's interval below 0),
the sentence says so beside "passes"."""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.support.validity_tables import table_on_0_to_2


def _constant_judge_block():
    """36 items, experts a, b, c scoring (0, 1, 2), (0, 1, 1) and (1, 2, 2) in turn, the judge always 1.

    Alt-test (neg_rmse), left-out expert against the other two: on (0, 1, 2) the judge (1) is nearer the others than
    0 or 2 and ties the 1; on (0, 1, 1) it beats the 0 and ties a 1; on (1, 2, 2) it ties every expert (the left-out
    1 against (2, 2): both 1 away; a left-out 2 against (1, 2): both sqrt(0.5)). So W_f = 1 on every item: rho 1 for
    each expert, d >= 0 with mean above -0.2, and the judge wins against all three: passes, omega 1.00, rho 1.00.

    Kappa against the mode, over the items with a unique mode ((0, 1, 1): 1, (1, 2, 2): 2): a constant rater's joint
    table is the product of its margins, so the observed weighted disagreement equals the expected one: kappa 0.
    """
    from tests.support.validity_tables import section_with_alt_test

    n = 36
    experts = np.tile([[0.0, 1.0, 2.0], [0.0, 1.0, 1.0], [1.0, 2.0, 2.0]], (n // 3, 1))
    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (n, 1))
    return section_with_alt_test(table_on_0_to_2(np.ones(n), experts, ids))


def test_a_constant_judge_that_passes_is_said_to_agree_no_better_than_chance():
    """report.md and report.html both lead with this sentence (``render.lead_lines``, ``render.lead_html``)."""
    block = _constant_judge_block()
    alt = block.overall.alt_test
    assert (alt.passed, alt.winning_rate, alt.advantage_probability) == (True, 1.0, 1.0)
    assert abs(block.overall.kappa_quadratic) < 1e-12
    assert block.sentence.startswith(
        "Passes the alternative annotator test against 3 of 3 experts (ω = 1.00, ρ = 1.00), but agrees with the "
        "experts' mode no better than chance (κ 0.00);")


def _with_agreement(block, **changes):
    overall = block.overall
    agreement = dataclasses.replace(overall.agreement, **changes)
    return dataclasses.replace(block, overall=dataclasses.replace(overall, agreement=agreement))


def test_an_alpha_difference_interval_below_zero_is_named_with_both_alphas():
    """The same block, its agreement set by hand: alpha 0.48 among the experts, 0.32 with the judge, the difference's
    interval [-0.25, -0.07] below 0, kappa 0.40: the clause names the drop and not kappa (above 0). With both, both,
    joined by "and"; with the interval reaching 0 and kappa above 0, no clause."""
    from eval.validity.section import split_sentence

    block = _constant_judge_block()
    lowered = _with_agreement(block, alpha_experts=0.48, alpha_with_judge=0.32, alpha_difference=-0.16,
                              alpha_difference_ci=[-0.25, -0.07], kappa_quadratic=0.4)
    passes = "Passes the alternative annotator test against 3 of 3 experts (ω = 1.00, ρ = 1.00)"
    assert split_sentence(lowered).startswith(
        f"{passes}, but lowers the experts' agreement (α 0.48 → 0.32 with the judge);")
    both = _with_agreement(lowered, kappa_quadratic=-0.05)
    assert split_sentence(both).startswith(
        f"{passes}, but lowers the experts' agreement (α 0.48 → 0.32 with the judge) and agrees with the experts' "
        "mode no better than chance (κ -0.05);")
    fine = _with_agreement(lowered, alpha_difference_ci=[-0.25, 0.01])
    assert split_sentence(fine).startswith(f"{passes};")
    assert "agreement" not in split_sentence(fine) and "chance" not in split_sentence(fine)


def test_a_judge_that_fails_gets_the_clause_on_its_own():
    """Judge 0 against experts (1, 1, 1) on 40 items: fails, omega 0.00. Its agreement set by hand (kappa -0.10):
    the clause follows the verdict as a part of its own, since "but" would contrast nothing."""
    from eval.validity.section import split_sentence
    from tests.support.validity_tables import section_with_alt_test

    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (40, 1))
    block = section_with_alt_test(table_on_0_to_2(np.zeros(40), np.ones((40, 3)), ids))
    assert block.overall.alt_test.passed is False
    sentence = split_sentence(_with_agreement(block, kappa_quadratic=-0.1))
    assert sentence.startswith("Fails the alternative annotator test")
    assert "; the judge agrees with the experts' mode no better than chance (κ -0.10);" in sentence

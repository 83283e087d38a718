"""What the alt-test's verdict means with two experts (the authors' FAQ, "Why do you recommend at least three human
annotators and not two?", README of nitaytech/AltTest; Calderon et al. 2025, arXiv 2501.10970), and the report's
alt-test line naming the test's minimums (``eval.validity.render.alt_test_line``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


def test_a_judge_copying_one_of_two_experts_passes_with_the_caveat():
    """60 items on 0-2, experts A and B on each, B one level off A on every third item; the judge copies A. Left out
    A, the judge (= A) and A align with B alike: ties, d = 0 > -0.2 on every item, p = 0, rejected. Left out B, the
    judge aligns with A exactly, B no better: d >= 0 on every item, rejected. 2 of 2: passes, whatever the judge is
    worth; the sentence and the alt-test line say that with 2 experts the test only asks which one it sides with."""
    from eval.reports.report import markdown_table, md_text
    from eval.validity.render import markdown_lines
    from judge.metrics_json.validity import Validity
    from tests.support.validity_tables import table_on_0_to_2

    from eval.validity.section import ValiditySettings, validity_section

    a = np.arange(60) % 3.0
    b = np.where(np.arange(60) % 3 == 0, 1.0, a)
    ids = np.tile(np.array(["A", "B"], dtype=object), (60, 1))
    table = table_on_0_to_2(a.copy(), np.column_stack([a, b]), ids)
    section = validity_section(table, "mode", {"standard": np.arange(60)}, ValiditySettings(n_boot=0, alpha_boot=0))
    block = section.splits["standard"]
    alt = block.overall.alt_test
    assert (alt.passed, alt.n_experts_tested, alt.n_items_tested, alt.n_items_two_experts) == (True, 2, 60, 60)
    caveat = ("with 2 experts tested the alt-test only checks which expert the judge sides with more, not whether it "
              "stands for the panel (its authors recommend at least 3)")
    assert block.sentence.startswith("Passes the alternative annotator test against 2 of 2 experts (ω = 1.00, "
                                     f"ρ = 1.00); {caveat};")
    lines = markdown_lines(SimpleNamespace(validity=section), markdown_table, md_text)
    assert any(line.endswith(f"ω = 1.00, ρ = 1.00; {caveat}.") for line in lines)
    assert Validity.from_json(section.to_json()) == section


def test_three_experts_whose_items_have_two_each_get_the_items_caveat_and_three_per_item_none():
    """90 items, each scored by two of A, B, C (A-B, B-C, C-A in turn, 60 items per expert): three tested experts,
    but every item tested has the left-out expert's one other (``n_items_two_experts`` 90 of 90), so the caveat
    names the items. With all three on every item: 0 items of two, no caveat."""
    from eval.validity.render import two_experts_caveat
    from tests.support.validity_tables import panel, split_section, table_on_0_to_2

    pairs = ("AB", "BC", "CA")
    truth, experts, ids = panel(90, lambda i: pairs[i % 3])
    alt = split_section(table_on_0_to_2(truth.copy(), experts, ids)).overall.alt_test
    assert (alt.n_experts_tested, alt.n_items_tested, alt.n_items_two_experts) == (3, 90, 90)
    assert two_experts_caveat(alt).startswith("with one other expert on every item tested the alt-test only checks")
    truth, experts, ids = panel(90, lambda i: "ABC")
    alt = split_section(table_on_0_to_2(truth.copy(), experts, ids)).overall.alt_test
    assert (alt.n_experts_tested, alt.n_items_two_experts) == (3, 0)
    assert two_experts_caveat(alt) == ""


def test_an_item_only_untested_experts_scored_does_not_hide_the_caveat():
    """40 items of experts A and B (tested, 40 items each), one more item of C, D and E (untested, 1 item each): the
    items a tested expert is left out on are the 40, every one with two experts, so a judge copying A gets the
    two-experts caveat; the 41st item tests nothing."""
    from eval.validity.render import two_experts_caveat
    from tests.support.validity_tables import split_section, table_on_0_to_2

    truth = np.arange(41) % 3.0
    experts, ids = np.full((41, 3), np.nan), np.full((41, 3), None, dtype=object)
    experts[:40, :2], ids[:40, :2] = truth[:40, None], ["A", "B"]
    experts[40], ids[40] = truth[40], ["C", "D", "E"]
    alt = split_section(table_on_0_to_2(truth.copy(), experts, ids)).overall.alt_test
    assert (alt.n_items, alt.n_items_tested, alt.n_items_two_experts, alt.n_experts_tested) == (41, 40, 40, 2)
    assert two_experts_caveat(alt).startswith("with 2 experts tested the alt-test only checks which expert")


def test_two_experts_tested_over_items_of_more_experts_say_what_omega_can_be():
    """Two tested experts where items have more experts (the others untested, under 30 items each): each left-out
    expert is compared with the others' mean, so the "which expert it sides with" caveat would be false; omega over
    two experts can only be 0, 0.5 or 1, and that is said. A file without the count reads the same; one tested
    expert, 0 or 1."""
    from eval.validity.render import two_experts_caveat
    from judge.metrics_json.validity import AltTest

    common = dict(epsilon=0.2, q=0.05, scoring="neg_rmse", failures="loss", min_experts_tested=2,
                  n_experts_rejected=2, winning_rate=1.0, advantage_probability=0.9)
    wider = AltTest(n_experts_tested=2, n_items_tested=60, n_items_two_experts=0, **common)
    assert two_experts_caveat(wider) == ("with 2 experts tested ω can only be 0, 0.5 or 1 (its authors recommend at "
                                         "least 3)")
    assert two_experts_caveat(AltTest(n_experts_tested=2, **common)) == two_experts_caveat(wider)
    one = AltTest(n_experts_tested=1, n_items_tested=60, n_items_two_experts=10, **common)
    assert two_experts_caveat(one) == "with 1 expert tested ω can only be 0 or 1 (its authors recommend at least 3)"


def test_the_alt_test_line_names_both_minimums_and_warns_under_30_items():
    """The settings line shows items per expert and experts per item beside the verdict's minimum; under 30 items
    per expert (the FAQ's floor for the t-test's normality) it says so; a file written before the minimums were
    recorded shows the rest as before."""
    from eval.validity.render import alt_test_line
    from judge.metrics_json.validity import AltTest

    common = dict(epsilon=0.2, q=0.05, scoring="neg_rmse", failures="loss", min_experts_tested=2,
                  n_experts_tested=4, n_experts_rejected=4, winning_rate=1.0, advantage_probability=0.9)
    low = alt_test_line(AltTest(min_items_per_expert=1, min_experts_per_item=3, **common))
    assert low == ("Alternative annotator test (ε = 0.2, q = 0.05, neg_rmse, judge failures scored as `loss`, "
                   "experts tested on 1 item or more, items with 3 named experts or more, a verdict from 2 tested "
                   "experts or more); under 30 items per expert the t-test's normality does not hold (its authors "
                   "suggest the Wilcoxon signed-rank test there): ω = 1.00, ρ = 0.90.")
    default = alt_test_line(AltTest(min_items_per_expert=30, min_experts_per_item=2, **common))
    assert "experts tested on 30 items or more, items with 2 named experts or more" in default
    assert "normality" not in default
    older = alt_test_line(AltTest(**common))
    assert older == ("Alternative annotator test (ε = 0.2, q = 0.05, neg_rmse, judge failures scored as `loss`, a "
                     "verdict from 2 tested experts or more): ω = 1.00, ρ = 0.90.")


def test_the_pass_column_by_criterion_says_where_a_criterion_has_two_experts():
    """Two criteria of 60 items on 0-2 each, the judge copying expert A: on "pairs" A and B score every item, so the
    criterion's "pass" only says which of the two the judge sides with; on "panel" A, B and C score every item, no
    caveat. A domain's alt-test carried no ``n_items_tested`` / ``n_items_two_experts`` (``two_experts_caveat`` could
    not see the pairs) and the per-criterion table said "pass" with no note. Now each domain has its two counts
    and the note under the table names "pairs" with the clause, in report.md and report.html alike."""
    import html

    from eval.reports.report import markdown_table, md_text
    from eval.validity.render import html_blocks, markdown_lines
    from judge.metrics_json.validity import Validity
    from tests.support.validity_tables import item_table

    from eval.validity.section import ValiditySettings, validity_section

    n = 120
    a = np.arange(n) % 3.0
    b = np.where(np.arange(n) % 3 == 0, 1.0, a)
    pairs = np.arange(n) < 60
    experts = np.column_stack([a, b, np.where(pairs, np.nan, a)])
    ids = np.column_stack([np.full(n, "A", dtype=object), np.full(n, "B", dtype=object),
                           np.where(pairs, None, "C").astype(object)])
    table = item_table(a.copy(), experts, ids, low=np.zeros(n), high=np.full(n, 2.0),
                       criteria=np.where(pairs, "pairs", "panel"))
    section = validity_section(table, "mode", {"standard": np.arange(n)}, ValiditySettings(n_boot=0, alpha_boot=0))
    block = section.splits["standard"]
    by = block.by_criterion
    assert (by["pairs"].alt_test.n_items_tested, by["pairs"].alt_test.n_items_two_experts) == (60, 60)
    assert (by["panel"].alt_test.n_items_tested, by["panel"].alt_test.n_items_two_experts) == (60, 0)
    assert by["pairs"].alt_test.passed is True and by["panel"].alt_test.passed is not None
    note = ("The alt-test's pass / fail on pairs: with 2 experts tested the alt-test only checks which expert the "
            "judge sides with more, not whether it stands for the panel (its authors recommend at least 3).")
    lines = markdown_lines(SimpleNamespace(validity=section), markdown_table, md_text)
    assert note in lines and not any("pass / fail on" in line and "panel:" in line for line in lines)
    assert any(html.escape(note) in block_html for block_html in html_blocks(SimpleNamespace(validity=section), str))
    assert Validity.from_json(section.to_json()) == section


def test_a_domains_tested_item_counts_are_its_own_alt_tests():
    """Per domain, ``summarise_by_domain``'s ``n_items_tested`` / ``n_items_two_experts`` are those ``summarise``
    gives over that domain's items alone (an expert is tested within the domain): random panels of 1 to 4 of six
    experts, three domains, 10 items per expert for a test."""
    from eval.validity.alt_test import AltTestSettings, prepare, summarise, summarise_by_domain

    rng = np.random.default_rng(4)
    n = 300
    experts, ids = np.full((n, 4), np.nan), np.full((n, 4), None, dtype=object)
    for i in range(n):
        who = rng.choice(6, size=rng.integers(1, 5), replace=False)
        experts[i, :len(who)], ids[i, :len(who)] = rng.integers(0, 3, len(who)), [f"e{k}" for k in who]
    judge = rng.integers(0, 3, n).astype(float)
    domains = np.array(["x", "y", "z"], dtype=object)[rng.integers(0, 3, n)]
    settings = AltTestSettings(min_items_per_expert=10)
    found = prepare(judge, experts, ids, settings)
    family = summarise_by_domain(found, settings, domains)
    assert set(family["by_domain"]) == {"x", "y", "z"}
    for label, got in family["by_domain"].items():
        own = summarise(found, settings, domains == label)
        assert (got["n_items_tested"], got["n_items_two_experts"]) == (own["n_items_tested"],
                                                                      own["n_items_two_experts"])
        assert own["n_items_two_experts"] > 0

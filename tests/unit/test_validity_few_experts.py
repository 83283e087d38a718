"""The alt-test's verdict and sentence when few of the named experts could be tested (``alt_test.MIN_EXPERTS_TESTED``,
docs/validity.md): the sentence counts the untested experts, and below two tested experts there is no verdict."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest


def _panel(n_whole: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """60 items scored 0, 1, 2, 0, ...; ``n_whole`` experts (A, C) score every item, and one of ten others (B0 ... B9,
    6 items each, under the 30 the test needs) each item too; every expert and the judge give the same score."""
    n = 60
    truth = np.arange(n) % 3.0
    experts = np.tile(truth[:, None], (1, n_whole + 1))
    ids = np.empty((n, n_whole + 1), dtype=object)
    for slot, name in enumerate("AC"[:n_whole]):
        ids[:, slot] = name
    ids[:, n_whole] = [f"B{i % 10}" for i in range(n)]
    return truth.copy(), experts, ids


def _sentence(judge: np.ndarray, experts: np.ndarray, ids: np.ndarray):
    from eval.scoring.item_table import ItemTable
    from eval.validity.section import ValiditySettings, validity_section

    n = len(judge)
    labels = {name: np.full(n, value, dtype=object) for name, value in (
        ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("task_type", "t"), ("task_group", "g"),
        ("status", "ok"), ("model_id", "m"), ("criteria_name", "c"))}  # fmt: skip
    table = ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=judge, experts=experts,
                      expert_ids=ids, scale_low=np.zeros(n), scale_high=np.full(n, 2.0), **labels)
    block = validity_section(table, "mode", {"standard": np.arange(n)},
                             ValiditySettings(n_boot=0, alpha_boot=0)).splits["standard"]
    return block.overall.alt_test, block.sentence


def test_one_tested_expert_gives_no_verdict():
    """Only A has 30 items (60); B0 ... B9 have 6 each: untested. Left out, A's one remaining expert (a B) gives the
    judge's score, so the two alignments tie on every item: d = W_f - W_h = 1 - 1 = 0, a constant above -0.2, p = 0,
    rejected. omega = 1 / 1 = 1.00, rho = 1.00: the notebook's arithmetic, kept in the figures; the verdict is not
    decided with one tested expert (``passed`` None), and the sentence says so and counts the other ten."""
    from eval.validity.alt_test import AltTestSettings, alt_test

    judge, experts, ids = _panel(1)
    result = alt_test(judge, experts, ids, AltTestSettings())
    assert (result["n_experts_tested"], result["n_experts_rejected"], len(result["untested"])) == (1, 1, 10)
    assert result["winning_rate"] == pytest.approx(1.0) and result["advantage_probability"] == pytest.approx(1.0)
    assert result["passed"] is None
    alt, sentence = _sentence(judge, experts, ids)
    assert alt.passed is None and alt.winning_rate == pytest.approx(1.0)
    assert sentence.startswith("Too few experts tested to call the alternative annotator test: 1 tested, at least 2 "
                               "needed; 10 more experts untested (under 30 items each)")
    assert "Passes" not in sentence and "ω" not in sentence


def test_the_sentence_counts_the_untested_experts():
    """A and C have 60 items each, B0 ... B9 6 each. Left out, A's remaining experts (C and a B) both give the judge's
    score, a tie on every item: d = 0, p = 0, rejected; the same for C. Benjamini–Yekutieli over (0, 0) rejects both:
    omega = 2 / 2 = 1.00, rho = (1 + 1) / 2 = 1.00, passed. "2 of 2 experts" alone would read as the whole panel."""
    judge, experts, ids = _panel(2)
    alt, sentence = _sentence(judge, experts, ids)
    assert (alt.n_experts_tested, alt.passed, len(alt.untested)) == (2, True, 10)
    assert sentence.startswith("Passes the alternative annotator test against 2 of 2 tested experts (ω = 1.00, "
                               "ρ = 1.00); 10 more experts untested (under 30 items each)")


def test_a_domain_with_one_tested_expert_is_no_domain_with_a_verdict():
    """Two task types of 60 items each. In x, A and C score every item (2 tested, both rejected as above: passes);
    in y, A alone with the Bs (1 tested: no verdict). "Passes in 1 of 1": y is not counted among the domains."""
    from eval.validity.alt_test import AltTestSettings, prepare, summarise_by_domain

    judge, experts_x, ids_x = _panel(2)
    _, experts_y, ids_y = _panel(1)
    experts_y = np.c_[experts_y, np.full(len(experts_y), np.nan)]
    ids_y = np.c_[ids_y, np.full(len(ids_y), None, dtype=object)]
    found = prepare(np.r_[judge, judge], np.r_[experts_x, experts_y], np.r_[ids_x, ids_y], AltTestSettings())
    family = summarise_by_domain(found, AltTestSettings(), np.array(["x"] * 60 + ["y"] * 60, dtype=object))
    assert family["by_domain"]["x"]["passed"] is True
    assert family["by_domain"]["y"]["n_experts_tested"] == 1 and family["by_domain"]["y"]["passed"] is None
    assert (family["n_passed"], family["n_domains"]) == (1, 1)


def test_one_tested_expert_gives_a_verdict_where_the_option_allows_it():
    """``--alt-test-min-tested 1``, the reference notebook's rule: the panel of ``test_one_tested_expert_gives_no_
    verdict``, A alone tested, A's remaining expert ties the judge on every item (d = 0, a constant above -0.2, p = 0;
    Benjamini-Yekutieli over one p-value of 0: 0 <= 0.05, rejected). omega = 1 / 1 = 1.00 >= 0.5: passes. The
    setting is in the alt-test's block and the section's settings, reads back from metrics.json's section, and the
    sentence and the report's alt-test line say it."""
    from eval.reports.report import markdown_table, md_text
    from eval.validity.alt_test import AltTestSettings, alt_test
    from eval.validity.render import markdown_lines
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import Validity
    from tests.support.validity_tables import item_table

    judge, experts, ids = _panel(1)
    result = alt_test(judge, experts, ids, AltTestSettings(min_experts_tested=1))
    assert (result["n_experts_tested"], result["n_experts_rejected"]) == (1, 1)
    assert result["passed"] is True and result["min_experts_tested"] == 1

    n = len(judge)
    table = item_table(judge, experts, ids, low=np.zeros(n), high=np.full(n, 2.0))
    section = validity_section(table, "mode", {"standard": np.arange(n)},
                               ValiditySettings(n_boot=0, alpha_boot=0,
                                                alt_test=AltTestSettings(min_experts_tested=1)))
    assert Validity.from_json(section.to_json()) == section
    assert section.settings.alt_test.min_experts_tested == 1
    block = section.splits["standard"]
    assert block.overall.alt_test.passed is True and block.overall.alt_test.min_experts_tested == 1
    assert block.alt_test_domains["task_type"].min_experts_tested == 1
    assert block.sentence.startswith("Passes the alternative annotator test against 1 of 1 tested experts (ω = 1.00, "
                                     "ρ = 1.00); 10 more experts untested (under 30 items each)")
    lines = "\n".join(markdown_lines(SimpleNamespace(validity=section), markdown_table, md_text))
    assert "a verdict from 1 tested expert or more" in lines


def test_the_verdicts_minimum_is_two_by_default_and_at_least_one():
    """The default is the toolkit's 2 (``MIN_EXPERTS_TESTED``); 0 would call a judge with no expert tested, refused
    naming the option; a metrics.json written before the option reads as 2, the rule it was written under."""
    from eval.cli import build_parser
    from eval.validity.alt_test import MIN_EXPERTS_TESTED, AltTestSettings
    from judge.metrics_json.json_record import read_record

    assert AltTestSettings().min_experts_tested == MIN_EXPERTS_TESTED == 2
    args = build_parser().parse_args(["score", "--predictions", "p", "--alt-test-min-tested", "1"])
    assert args.alt_test_min_tested == 1
    assert build_parser().parse_args(["score", "--predictions", "p"]).alt_test_min_tested == 2
    with pytest.raises(ValueError, match="--alt-test-min-tested"):
        AltTestSettings(min_experts_tested=0)
    older = {"epsilon": 0.2, "q": 0.05, "scoring": "neg_rmse", "failures": "loss", "min_items_per_expert": 30,
             "min_experts_per_item": 2}
    assert read_record(AltTestSettings, older).min_experts_tested == 2

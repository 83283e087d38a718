"""``judge-eval compare``'s paired validity leaves out the items each run's own validity section leaves out: those of
a criterion with no readable scale whose experts' scores span more levels than a rubric holds
(``eval.validity.section.too_wide_to_rate``), so that the baseline's paired rho and ceiling gap are its section's."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from tests.support.validity_tables import item_table


def test_paired_validity_leaves_out_a_criterion_too_wide_to_rate():
    """40 items, experts A, B and C unanimous on each. Criterion "wide" (items 0-19) has no readable scale, its
    experts 0 on items 0-9 and 500 on items 10-19: ends 0-500, 501 levels, more than the 101 a rubric holds, so each
    run's section leaves its 20 items out. Criterion "c" (items 20-39) is on a 0-2 rubric, its experts 2 on items
    20-29 and 1 on items 30-39. Judge A answers 250 on "wide" and the experts' level on "c"; judge B the same but 2
    on items 30-39. Under ``accuracy`` a tie of alignments counts for the judge:

    - A's rho: it ties the experts on all 20 items of "c", 20/20 = 1; with "wide" (a loss on each of its 20 items:
      250 matches no expert, who match each other) it would be 20/40 = 0.5;
    - B's rho: it ties on items 20-29 and loses on 30-39, 10/20 = 0.5; with "wide", 10/40 = 0.25;
    - the paired figures cover 20 items, and each run's paired rho and ceiling gap are its own section's.
    """
    from eval.scoring.compare import ScoredRun, _paired_validity
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings

    n = 40
    level = np.r_[np.zeros(10), np.full(10, 500.0), np.full(10, 2.0), np.ones(10)]
    experts = np.tile(level[:, None], (1, 3))
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    low, high = np.r_[np.full(20, np.nan), np.zeros(20)], np.r_[np.full(20, np.nan), np.full(20, 2.0)]
    judge_a = np.r_[np.full(20, 250.0), level[20:]]
    judge_b = np.r_[np.full(20, 250.0), np.full(20, 2.0)]
    settings = ValiditySettings(n_boot=0, alpha_boot=0,
                                alt_test=AltTestSettings(scoring="accuracy", min_items_per_expert=2))
    runs = []
    for name, judge in (("a", judge_a), ("b", judge_b)):
        table = item_table(judge, experts, ids, low=low, high=high, criteria=["wide"] * 20 + ["c"] * 20)
        section = validity_section(table, "mode", {"standard": np.arange(n)}, settings)
        runs.append(ScoredRun(folder=name, name=name, metrics=SimpleNamespace(validity=section), table=table,
                              extra={}))
    own = [run.metrics.validity.splits["standard"] for run in runs]
    assert [block.to_json().get("criteria_left_out") for block in own] == [{"wide": 20}] * 2
    assert [block.overall.alt_test.advantage_probability for block in own] == pytest.approx([1.0, 0.5])

    paired = _paired_validity(runs[0], runs[1], np.arange(n), np.arange(n), 0, 0)["standard"]
    assert paired.n_items == 20
    assert (paired.rho.baseline, paired.rho.run) == pytest.approx((1.0, 0.5))
    assert (paired.ceiling_gap.baseline, paired.ceiling_gap.run) == pytest.approx(
        tuple(block.overall.ceiling.gap for block in own))
    # the paired leniency too: over the items both sections kept, each side its own section's
    assert paired.leniency.n == own[0].overall.leniency.n and (paired.leniency.baseline, paired.leniency.run) == (
        pytest.approx(tuple(block.overall.leniency.mean_signed_error for block in own)))


def test_paired_validity_of_a_table_without_scale_ends_keeps_every_predicted_item():
    """An items.parquet written before it kept scale ends (``scale_low`` None) came with a section written before
    the rule, which kept every item: compare leaves none out for it. The 40 items above, the baseline's table read
    back without its ends: the paired figures cover all 40."""
    from eval.scoring.compare import ScoredRun, _paired_validity
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings

    n = 40
    level = np.r_[np.zeros(10), np.full(10, 500.0), np.full(10, 2.0), np.ones(10)]
    experts = np.tile(level[:, None], (1, 3))
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    low, high = np.r_[np.full(20, np.nan), np.zeros(20)], np.r_[np.full(20, np.nan), np.full(20, 2.0)]
    table = item_table(np.r_[np.full(20, 250.0), level[20:]], experts, ids, low=low, high=high,
                       criteria=["wide"] * 20 + ["c"] * 20)
    settings = ValiditySettings(n_boot=0, alpha_boot=0,
                                alt_test=AltTestSettings(scoring="accuracy", min_items_per_expert=2))
    section = validity_section(table, "mode", {"standard": np.arange(n)}, settings)
    run = ScoredRun(folder="a", name="a", metrics=SimpleNamespace(validity=section),
                    table=dataclasses.replace(table, scale_low=None, scale_high=None), extra={})
    assert _paired_validity(run, run, np.arange(n), np.arange(n), 0, 0)["standard"].n_items == 40


def _scored_runs(sections_before_the_rule: bool = False):
    """The two runs of the first test (judges A and B on "wide" and "c"), each with its table and section."""
    from eval.scoring.compare import ScoredRun
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings

    n = 40
    level = np.r_[np.zeros(10), np.full(10, 500.0), np.full(10, 2.0), np.ones(10)]
    experts = np.tile(level[:, None], (1, 3))
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    low, high = np.r_[np.full(20, np.nan), np.zeros(20)], np.r_[np.full(20, np.nan), np.full(20, 2.0)]
    settings = ValiditySettings(n_boot=0, alpha_boot=0,
                                alt_test=AltTestSettings(scoring="accuracy", min_items_per_expert=2))
    runs = []
    judges = {"a": np.r_[np.full(20, 250.0), level[20:]], "b": np.r_[np.full(20, 250.0), np.full(20, 2.0)]}
    for name, judge in judges.items():
        table = item_table(judge, experts, ids, low=low, high=high, criteria=["wide"] * 20 + ["c"] * 20)
        with pytest.MonkeyPatch.context() as patch:
            if sections_before_the_rule:  # the section as a run scored before the rule wrote it: nothing left out
                from eval.validity import section as section_module

                patch.setattr(section_module, "too_wide_to_rate", lambda table, ends: np.zeros(len(table), dtype=bool))
            section = validity_section(table, "mode", {"standard": np.arange(n)}, settings)
        runs.append(ScoredRun(folder=name, name=name, metrics=SimpleNamespace(validity=section), table=table,
                              extra={}))
    return runs


def test_paired_validity_of_runs_scored_before_the_rule_keeps_their_wide_items():
    """A run scored after items.parquet kept scale ends but before the rule: its table has ends, and its section kept
    "wide" (a "wide" cell, no ``criteria_left_out``). compare leaves out only what a run's own section left out, so
    the paired figures cover all 40 items and each run's paired rho and ceiling gap are its section's: A ties the
    experts on the 20 items of "c" and loses on the 20 of "wide", 20/40 = 0.5; B ties on items 20-29 alone,
    10/40 = 0.25."""
    from eval.scoring.compare import _paired_validity

    runs = _scored_runs(sections_before_the_rule=True)
    own = [run.metrics.validity.splits["standard"] for run in runs]
    assert [(block.criteria_left_out, block.by_criterion["wide"].n_items) for block in own] == [(None, 20)] * 2
    assert [block.overall.alt_test.advantage_probability for block in own] == pytest.approx([0.5, 0.25])
    paired = _paired_validity(runs[0], runs[1], np.arange(40), np.arange(40), 0, 0)["standard"]
    assert paired.n_items == 40
    assert (paired.rho.baseline, paired.rho.run) == pytest.approx((0.5, 0.25))
    assert (paired.ceiling_gap.baseline, paired.ceiling_gap.run) == pytest.approx(
        tuple(block.overall.ceiling.gap for block in own))
    # the paired leniency too: over the items both sections kept, each side its own section's
    assert paired.leniency.n == own[0].overall.leniency.n and (paired.leniency.baseline, paired.leniency.run) == (
        pytest.approx(tuple(block.overall.leniency.mean_signed_error for block in own)))


def test_paired_validity_of_a_split_left_out_whole_says_why():
    """The test "standard" holds "wide"'s 20 items only (the split "other" the 20 of "c"): each run's section left
    every item of it out, and the paired figures say so, naming the criterion and its items, rather than reading as
    a test without named experts or leave-one-out references."""
    import dataclasses

    from eval.scoring.compare import _paired_validity
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings, Unavailable

    runs = _scored_runs()
    settings = ValiditySettings(n_boot=0, alpha_boot=0,
                                alt_test=AltTestSettings(scoring="accuracy", min_items_per_expert=2))
    for k, run in enumerate(runs):
        table = dataclasses.replace(run.table, split=np.array(["standard"] * 20 + ["other"] * 20, dtype=object))
        section = validity_section(table, "mode", {"standard": np.arange(20), "other": np.arange(20, 40)}, settings)
        runs[k] = dataclasses.replace(run, table=table, metrics=SimpleNamespace(validity=section))
    assert runs[0].metrics.validity.splits["standard"].criteria_left_out == {"wide": 20}
    paired = _paired_validity(runs[0], runs[1], np.arange(40), np.arange(40), 0, 0)
    why = ("every item of the test is of a criterion left out of the validity figures (no readable scale, and its "
           "experts' scores span more than the 101 levels a rubric holds): wide (20 items)")
    assert paired["standard"].n_items == 0
    assert paired["standard"].rho == paired["standard"].ceiling_gap == Unavailable(why=why)
    assert paired["standard"].leniency == Unavailable(why=why)
    assert paired["other"].n_items == 20 and not isinstance(paired["other"].rho, Unavailable)

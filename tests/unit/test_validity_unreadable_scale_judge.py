"""The judge's answers on items without a readable scale: rated against the ends the ceiling already infers for
such an item (its criterion's expert range, else the table's), so that stray answers neither widen the value domain
nor go uncounted."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.support.validity_tables import item_table as _table
from tests.support.validity_tables import split_section as _section


def test_stray_answers_on_an_unreadable_scale_are_off_its_inferred_ends():
    """60 items of one criterion without a readable scale, experts (0, 1), (1, 2), (2, 2) in turn: the criterion's
    expert range is 0-2, the ends a failure takes in the ceiling. The judge answers 1 on items 0-29 and a different
    number on each of items 30-59 (3, 4, ..., 32). Each stray answer had joined the value domain as a level of its
    own: a 33-level domain [0, 1, ..., 32] (the value counts' coincidences a levels x levels table per distinct row,
    so that the work grew with the cube of the judge's distinct answers), kappa weighing 3 as one step from 2.
    Against the ends 0-2 they are off the scale, as on a known 0-2 rubric:

    - value domain [0, 1, 2];
    - ``n_items_judge_off_scale`` 30 (items 30-59), of which ``n_alpha_items_judge_off_scale`` 30 (every item has two
      expert scores);
    - kappa against the mode over the items with a unique mode among 0-29: the (0, 1) and (1, 2) items have no unique
      mode, the (2, 2) items (every third, 10 of 0-29) have 2; the 10 items of 30-59 with mode 2 are off the domain
      (``n_kappa_off_domain`` 10) and kappa is over those 10 first ones (``n_kappa`` 10).
    """
    n = 60
    experts = np.tile([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]], (n // 3, 1))
    judge = np.r_[np.ones(30), np.arange(3.0, 33.0)]
    unknown = np.full(n, np.nan)
    block = _section(_table(judge, experts, low=unknown, high=unknown))
    agreement = block.overall.agreement
    assert agreement.value_domain == [0.0, 1.0, 2.0]
    assert agreement.n_items_judge_off_scale == 30 and agreement.n_alpha_items_judge_off_scale == 30
    assert (agreement.n_kappa, agreement.n_kappa_off_domain) == (10, 10)
    assert block.by_criterion["c"].agreement.value_domain == [0.0, 1.0, 2.0]
    ceiling = block.overall.ceiling
    assert ceiling.n_items_judge_off_scale == 30


def test_an_answer_inside_the_inferred_ends_stays_a_rating():
    """The same experts, and a judge answering 0 on every item: 0 lies inside the criterion's expert range 0-2, so it
    is a level of the scale, not off it (none counted), as before."""
    n = 60
    experts = np.tile([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]], (n // 3, 1))
    unknown = np.full(n, np.nan)
    agreement = _section(_table(np.zeros(n), experts, low=unknown, high=unknown)).overall.agreement
    assert agreement.value_domain == [0.0, 1.0, 2.0] and agreement.n_items_judge_off_scale == 0


def test_scales_far_apart_pool_their_own_levels_not_the_span_between():
    """57 items of criterion "a" on a 0-2 rubric and 3 of criterion "b" on a 900-1000 rubric (101 levels, the most a
    rubric may hold: judge.scales.MAX_LEVELS), experts and judge at 950 there. Each criterion's domain is its own
    scale; the overall cell pools them. As one span from the lowest end to the highest it was every integer 0-1000,
    1,001 levels, 897 of them no rubric's (a rubric of 19,900-20,000 beside the 0-2 one asked for a 20,001 x 20,001
    table and failed); a span wider than a rubric may hold takes each scale's own levels instead, as an unreadable
    scale's span wider than that takes the values seen: 3 + 101 = 104 levels."""
    n = 60
    experts = np.tile([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]], (n // 3, 1))
    low, high = np.zeros(n), np.full(n, 2.0)
    low[-3:], high[-3:], experts[-3:] = 900.0, 1000.0, 950.0
    block = _section(_table(experts[:, 0].copy(), experts, low=low, high=high, criteria=["a"] * 57 + ["b"] * 3))
    assert block.overall.agreement.value_domain == [0.0, 1.0, 2.0] + [float(v) for v in range(900, 1001)]
    assert block.by_criterion["a"].agreement.value_domain == [0.0, 1.0, 2.0]
    assert block.by_criterion["b"].agreement.value_domain == [float(v) for v in range(900, 1001)]
    assert block.overall.agreement.n_expert_scores_off_domain == 0


def _wide_beside_narrow(narrow: int = 30):
    """Items without a readable scale: criterion "wide" on items 0-29, experts (0, 500), (500, 0), (0, 0) in turn
    and the judge a different number on each (7, 14, ..., 210); criterion "c" on the ``narrow`` items after them,
    experts (0, 1), (1, 2), (2, 2) in turn and the judge 1."""
    n = 30 + narrow
    experts = np.r_[np.tile([[0.0, 500.0], [500.0, 0.0], [0.0, 0.0]], (10, 1)),
                    np.tile([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]], (10, 1))[:narrow]]
    judge = np.r_[np.arange(1.0, 31.0) * 7, np.ones(narrow)]
    unknown = np.full(n, np.nan)
    return _table(judge, experts, low=unknown, high=unknown, criteria=["wide"] * 30 + ["c"] * narrow)


def test_a_criterion_whose_experts_span_more_levels_than_a_rubric_is_left_out_and_named():
    """"wide"'s ends, inferred from its experts, are 0-500: 501 levels, more than any rubric holds
    (judge.scales.MAX_LEVELS, 101: 0..100). Each of the judge's 30 answers lay within them, so each was a level of
    the criterion's domain: [0, 7, 14, ..., 210, 500], 32 levels, a coincidence table of 32 x 32 per distinct row for
    30 items, and kappa weighing 7 against 500 as one step of 31. The criterion is left out of every figure of the
    split and named with its 30 items; "c" is read as before:

    - no "wide" cell, and ``criteria_left_out`` {"wide": 30} in the split (back from metrics.json as written);
    - the overall cell over "c"'s 30 items alone: domain [0, 1, 2], its experts' alpha "c"'s, no item missing;
    - the sentence says how many items of how many criteria, and why.
    """
    from judge.metrics_json.validity import ValiditySplit

    block = _section(_wide_beside_narrow())
    assert list(block.by_criterion) == ["c"]
    assert (block.criteria_left_out, block.extra) == ({"wide": 30}, {})
    assert ValiditySplit.from_json(block.to_json()) == block
    overall = block.overall
    assert (overall.n_items, overall.n_items_missing) == (30, 0)
    assert overall.agreement.value_domain == [0.0, 1.0, 2.0]
    assert overall.agreement.alpha_experts == block.by_criterion["c"].agreement.alpha_experts
    assert overall.ceiling.n_items == 30 and overall.leniency.n == 30
    assert block.by_task_type["t"].n_items == 30
    assert block.sentence.endswith("; 30 items of 1 criterion left out of every figure (no readable scale, and its "
                                   "experts' scores span more than the 101 levels a rubric holds).")


def test_a_split_whose_every_criterion_is_left_out_says_so():
    """Only "wide"'s 30 items: no figure at all, and the sentence says why rather than "no items"."""
    block = _section(_wide_beside_narrow(narrow=0))
    assert block.overall.n_items == 0 and block.by_criterion == {} and block.by_task_type == {}
    assert block.criteria_left_out == {"wide": 30}
    assert block.sentence == ("All 30 items of 1 criterion left out of every figure (no readable scale, and its "
                              "experts' scores span more than the 101 levels a rubric holds): no validity figures.")


def test_a_criterion_with_no_span_of_its_own_is_kept_beside_a_wide_one():
    """Whether a criterion is too wide is read from its own experts' ends, not the table's. Beside "wide" (items
    0-29, ends 0-500), criterion "u" (items 30-39, no readable scale) has experts who all say 1, and criterion "n"
    (items 40-44, no readable scale) no expert score at all: neither tells a scale of its own (its inferred ends NaN),
    so neither is too wide, though the ceiling takes the table's 0-500 as their ends. Both are kept, the judge
    answering 1 on each: ``criteria_left_out`` {"wide": 30} alone, "u" a cell of 10 items and "n" of 5. With readable
    0-100 and 900-1000 rubrics in the table (experts 0/100 and 900/1000, a table range of 0-1000) and no wide
    criterion at all, "u" is kept and nothing is left out."""
    wide = _wide_beside_narrow(narrow=0)
    experts = np.r_[wide.experts, np.ones((10, 2)), np.full((5, 2), np.nan)]
    unknown = np.full(45, np.nan)
    block = _section(_table(np.r_[wide.judge, np.ones(15)], experts, low=unknown, high=unknown,
                            criteria=["wide"] * 30 + ["u"] * 10 + ["n"] * 5))
    assert block.criteria_left_out == {"wide": 30}
    assert (block.by_criterion["u"].n_items, block.by_criterion["n"].n_items) == (10, 5)
    assert block.overall.n_items == 15
    experts = np.r_[np.ones((10, 2)), np.tile([[0.0, 100.0]], (10, 1)), np.tile([[900.0, 1000.0]], (10, 1))]
    low = np.r_[np.full(10, np.nan), np.zeros(10), np.full(10, 900.0)]
    high = np.r_[np.full(10, np.nan), np.full(10, 100.0), np.full(10, 1000.0)]
    block = _section(_table(np.ones(30), experts, low=low, high=high, criteria=["u"] * 10 + ["a"] * 10 + ["b"] * 10))
    assert block.criteria_left_out is None and block.by_criterion["u"].n_items == 10


def test_a_span_of_101_levels_is_a_rubrics_and_kept():
    """Experts 0 and 100 on "wide" (101 levels, 0..100: the widest a rubric holds) keep the criterion, its judge's
    answers levels of its domain; 0 and 101 (102 levels) leave it out."""
    table = _wide_beside_narrow()
    kept = table.experts.copy()
    kept[:30][kept[:30] == 500.0] = 100.0
    block = _section(dataclasses.replace(table, experts=kept))
    assert block.criteria_left_out is None and block.by_criterion["wide"].n_items == 30
    assert block.by_criterion["wide"].agreement.value_domain == [float(v) for v in range(101)]
    kept[:30][kept[:30] == 100.0] = 101.0
    assert _section(dataclasses.replace(table, experts=kept)).criteria_left_out == {"wide": 30}


def test_the_report_names_the_criteria_left_out_and_refuses_a_malformed_count():
    """report.md and report.html name each criterion left out with its items, under the split's sentence, the name
    made inert as every table's (a "|" no cell of its own in Markdown, "<" an entity in HTML). A metrics.json holding
    anything but item counts there is refused naming the field, not read as some other number."""
    import html
    from types import SimpleNamespace

    from eval.reports.report import markdown_table, md_text
    from eval.validity.render import html_blocks, markdown_lines
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.json_record import JsonRecordError
    from judge.metrics_json.validity import Validity

    table = _wide_beside_narrow()
    table = dataclasses.replace(table, criteria_name=np.where(table.criteria_name == "wide", "w|<i>", "c"))
    section = validity_section(table, "mode", {"standard": np.arange(60)}, ValiditySettings(n_boot=0, alpha_boot=0))
    why = "no readable scale, and its experts' scores span more than the 101 levels a rubric holds"
    lines = markdown_lines(SimpleNamespace(validity=section), markdown_table, md_text)
    assert f"Left out of every figure ({why}): w&#124;&lt;i&gt; (30 items)." in lines
    page = "".join(html_blocks(SimpleNamespace(validity=section), html.escape))
    assert f"<p class=\"note\">Left out of every figure ({html.escape(why)}): w|&lt;i&gt; (30 items).</p>" in page
    raw = section.to_json()
    raw["splits"]["standard"]["criteria_left_out"] = {"w": "30"}
    with pytest.raises(JsonRecordError, match=r"criteria_left_out should be an object of item counts \(whole "
                                              r"numbers above 0\), but 'w' holds a string"):
        markdown_lines(SimpleNamespace(validity=Validity.from_json(raw)), markdown_table, md_text)


@pytest.mark.parametrize(("value", "said"), [
    (["wide"], "not a list"),
    ({"wide": -30}, "but 'wide' holds an integer -30"),
    ({"wide": 0}, "but 'wide' holds an integer 0"),
    ({"wide": 1.5}, "but 'wide' holds a number 1.5"),
    ({"wide": True}, "but 'wide' holds true"),
    ({"wide": None}, "but 'wide' holds null"),
])  # fmt: skip
def test_a_malformed_criteria_left_out_is_refused_on_read(value, said):
    """``criteria_left_out`` is a typed field of the split, read as the section wrote it (an attribute, not an extra
    key) and checked when metrics.json is read, not first when a report is drawn: anything but an object of item
    counts above 0 is one line naming the field's place in the file and what it held."""
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.json_record import JsonRecordError
    from judge.metrics_json.validity import Validity

    section = validity_section(_wide_beside_narrow(), "mode", {"standard": np.arange(60)},
                               ValiditySettings(n_boot=0, alpha_boot=0))
    block = section.splits["standard"]
    assert (block.criteria_left_out, block.extra) == ({"wide": 30}, {})
    raw = section.to_json()
    assert list(raw["splits"]["standard"])[-2:] == ["sentence", "criteria_left_out"]  # where the extra key was
    assert Validity.from_json(raw) == section
    raw["splits"]["standard"]["criteria_left_out"] = value
    with pytest.raises(JsonRecordError) as caught:
        Validity.from_json(raw)
    message = str(caught.value)
    assert message == ("metrics.json's validity section: ValiditySplit.criteria_left_out should be an object of item "
                       f"counts (whole numbers above 0), {said}")
    assert "\n" not in message and caught.value.field == "splits.standard.criteria_left_out"

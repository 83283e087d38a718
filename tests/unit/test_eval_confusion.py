"""The confusion matrices of ``judge-eval score`` as the scoring path builds them (``item_table.evaluate``): rows the
judge's score rounded half up to a level, columns the experts' mode (never their mean), one matrix per task
macrogroup (arXiv 2505.24616v3, Appendix D.2.3), items without a unique mode or without a verdict left out."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from eval.scoring import item_table
from tests.unit.test_eval_metrics import _table

NAN = float("nan")
# judge, experts, task type, macrogroup: t1 and t2 share macrogroup G1. Each expert mode is not the rounded mean:
# [0, 0, 2] mode 0, mean 2/3 -> 1; [2, 2, 0] mode 2, mean 4/3 -> 1; [0, 0, 1] mode 0, mean 1/3 -> 0 but judged 1.
ITEMS = [
    (0.0, [0, 0, 2], "t1", "G1"),  # judge 0, mode 0
    (1.0, [0, 1, 2], "t1", "G1"),  # no unique mode: left out
    (1.0, [1, 1, 2], "t2", "G1"),  # judge 1, mode 1
    (2.0, [2, 2, 0], "t2", "G1"),  # judge 2, mode 2
    (1.0, [0, 0, 1], "t3", "G2"),  # judge 1, mode 0
    (0.5, [1, 1, 0], "t3", "G2"),  # judge 0.5 rounds half up to 1, mode 1
    (NAN, [2, 2, 2], "t3", "G2"),  # parse failure: left out
    (2.0, [2, 2, 2], "t3", "G2"),  # judge 2, mode 2
]


def _items() -> item_table.ItemTable:
    judge, experts, task_types, groups = zip(*ITEMS)
    status = ["ok" if np.isfinite(j) else "parse_failed" for j in judge]
    table = _table(list(judge), status, list(experts))
    return dataclasses.replace(table, task_type=np.array(task_types, dtype=object),
                               task_group=np.array(groups, dtype=object))


@pytest.mark.parametrize("target", ["mode", "mean"])
def test_confusion_matrices_are_judge_by_expert_mode_per_macrogroup(target):
    """By hand, rows the judge (0, 1, 2), columns the experts' mode: G1 holds (0, 0), (1, 1), (2, 2); G2 holds
    (1, 0), (1, 1), (2, 2); the whole test their sum. Keyed by the macrogroups, not the three task types, and the
    same whatever MAE's reference (a mean target moves MAE, never the confusion's columns)."""
    result = item_table.evaluate(_items(), target=target, n_boot=0)
    assert result.target == target
    g1 = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    g2 = [[0, 0, 0], [1, 1, 0], [0, 0, 1]]
    for split in ("standard", "all"):
        confusion = result.splits[split].confusion
        assert confusion.all.levels == [0.0, 1.0, 2.0]
        assert confusion.all.matrix == [[1, 0, 0], [1, 2, 0], [0, 0, 2]]
        assert {label: c.matrix for label, c in confusion.by_task_group.items()} == {"G1": g1, "G2": g2}
        assert all(c.levels == [0.0, 1.0, 2.0] for c in confusion.by_task_group.values())
    assert result.splits["zero_shot"].confusion.by_task_group == {}


def _scaled(judge, experts, low, high) -> item_table.ItemTable:
    """Items judged ``judge`` (all parsed) by ``experts``, each on the scale ``low``..``high``."""
    table = _table(list(judge), ["ok"] * len(judge), list(experts))
    ends = [np.full(len(judge), float(end)) for end in (low, high)]
    return dataclasses.replace(table, scale_low=ends[0], scale_high=ends[1])


def test_the_axes_are_the_whole_scale_even_where_no_one_gave_a_level():
    """A 0..2 criterion on which neither the judge nor any expert gave 1: the matrix still has the row and the column
    of 1, empty (App. D.2.3 reads off these matrices which judges avoid the mid-scale rating of 1). The judge's
    0 vs mode 0, 2 vs mode 2 twice."""
    confusion = item_table.evaluate(_scaled([0.0, 2.0, 2.0], [[0, 0, 2], [2, 2, 0], [2, 2]], 0, 2),
                                    n_boot=0).splits["all"].confusion
    for matrix in (confusion.all, *confusion.by_task_group.values()):
        assert matrix.levels == [0.0, 1.0, 2.0]
        assert matrix.matrix == [[1, 0, 0], [0, 0, 0], [0, 0, 2]]


def test_the_axes_join_every_scale_of_the_table_and_the_experts_values():
    """Items on 0..1 and on 1..4 scales, a judge's 7 off its scale: the axes are 0..4, every level once, and the 7
    is counted in the "above scale" row under the experts' 4, not an axis level; a table without scale ends (a
    hand-built one) has its experts' whole-number span, 1..4, as the validity section's value domain has, and the 7
    lies above it."""
    table = _scaled([1.0, 7.0], [[1, 1], [4, 4]], 0, 1)
    table.scale_low[1], table.scale_high[1] = 1.0, 4.0
    plain = dataclasses.replace(table, scale_low=None, scale_high=None)
    for items, levels in ((table, [0.0, 1.0, 2.0, 3.0, 4.0]), (plain, [1.0, 2.0, 3.0, 4.0])):
        result = item_table.evaluate(items, n_boot=0)
        confusion = result.splits["all"].confusion.all
        assert result.levels == confusion.levels == levels
        assert confusion.above_scale == [0] * (len(levels) - 1) + [1] and confusion.below_scale is None
        assert confusion.matrix[levels.index(1.0)][levels.index(1.0)] == 1 and confusion.n_counted() == 2


def test_an_unreadable_scale_gets_its_experts_whole_number_span_as_the_validity_domain_does():
    """The 0..2 criterion above with a rubric no scale is read from (NaN ends): its experts' 0 and 2 span 0..2, so
    the mid level 1 is an empty row and column still, and the axes are the validity section's value domain."""
    table = _scaled([0.0, 2.0, 2.0], [[0, 0, 2], [2, 2, 0], [2, 2]], np.nan, np.nan)
    result = item_table.evaluate(table, n_boot=0)
    assert result.levels == [0.0, 1.0, 2.0]
    assert result.splits["all"].confusion.all.matrix == [[1, 0, 0], [0, 0, 0], [0, 0, 2]]
    assert item_table.value_levels(table, np.arange(len(table))).tolist() == [0.0, 1.0, 2.0]


def test_an_expert_mode_off_the_levels_stays_in_its_own_column():
    """Experts [1.5, 1.5, 2] (a half-point the loader takes inside a 0..2 range): MAE reads the mode 1.5, and so does
    the matrix's column of 1.5, not the 2 it would round to; the judge's 2 is row 2."""
    result = item_table.evaluate(_scaled([2.0], [[1.5, 1.5, 2]], 0, 2), n_boot=0)
    confusion = result.splits["all"].confusion.all
    assert result.splits["all"].overall.mae == pytest.approx(0.5)
    assert confusion.levels == [0.0, 1.0, 1.5, 2.0]
    assert confusion.matrix == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]]


def _off_scale_run() -> item_table.ItemTable:
    """60 items on 0..2 whose judge wrote 60 distinct numbers past the scale (100, 107, ...: a seq2seq judge gone
    wrong), 3 below it (-1, -2, -9) and 6 on it, in two macrogroups; the experts' mode is item k's k % 3."""
    judge = [100.0 + 7 * k for k in range(60)] + [-1.0, -2.0, -9.0] + [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]
    experts = [[k % 3] * 3 for k in range(len(judge))]
    table = _scaled(judge, experts, 0, 2)
    groups = np.array(["G1" if k % 2 else "G2" for k in range(len(judge))], dtype=object)
    return dataclasses.replace(table, task_group=groups)


def test_sixty_distinct_off_scale_judge_scores_are_two_rows_not_sixty_levels():
    """The axes stay the rubric's 0..2 whatever the judge writes off it: the 60 scores above the scale are one
    "above scale" row and the 3 below it one "below scale" row, each counted under the experts' mode (never
    dropped), so every matrix counts every item scored, and metrics.json is the size of a judge that wrote one
    off-scale number."""
    table = _off_scale_run()
    result = item_table.evaluate(table, n_boot=0)
    assert result.levels == [0.0, 1.0, 2.0]
    confusion = result.splits["all"].confusion
    assert confusion.all.levels == [0.0, 1.0, 2.0]
    assert confusion.all.above_scale == [20, 20, 20]  # modes 0, 1, 2 of k = 0..59
    assert confusion.all.below_scale == [1, 1, 1]  # k = 60, 61, 62: modes 0, 1, 2
    assert confusion.all.matrix == [[2, 0, 0], [0, 2, 0], [0, 0, 2]]
    for split, block in result.splits.items():
        panels = [block.confusion.all, *block.confusion.by_task_group.values()]
        assert all(len(p.levels) == 3 and p.below_scale is not None and p.above_scale is not None for p in panels)
        assert block.confusion.all.n_counted() == block.overall.n_scored == (0 if split == "zero_shot" else 69)
        assert sum(p.n_counted() for p in panels[1:]) == block.confusion.all.n_counted()
    same_off = dataclasses.replace(table, judge=np.where(table.judge >= 100, 100.0, table.judge))
    written = item_table.dumps(result.splits["all"].confusion)
    assert written == item_table.dumps(item_table.evaluate(same_off, n_boot=0).splits["all"].confusion)


def test_the_off_scale_rows_read_back_and_a_wrong_length_is_refused():
    """metrics.json's ``below_scale`` / ``above_scale`` read back as written; one count per level or refused."""
    from judge.metrics_json.metrics import Confusion, Metrics

    result = item_table.evaluate(_off_scale_run(), n_boot=0)
    text = item_table.dumps(result)
    assert item_table.dumps(Metrics.from_json(json.loads(text))) == text
    with pytest.raises(ValueError, match="above_scale"):
        Confusion(levels=[0.0, 1.0], matrix=[[0, 0], [0, 0]], above_scale=[1])
    for bad, said in (({"above_scale": [1]}, "Confusion.above_scale: 1 counts, not 2"),
                      ({"below_scale": [1, "x"]}, "Confusion.below_scale is not readable"),
                      ({"below_scale": [1, -1]}, "Confusion.below_scale is not readable")):
        with pytest.raises(ValueError, match=said):
            Confusion.from_json({"levels": [0, 1], "matrix": [[0, 0], [0, 0]], **bad})


def test_an_on_scale_run_writes_the_confusion_matrices_it_wrote_before(tmp_path):
    """``judge-eval score`` of the sample data judged on its scales: metrics.json's ``levels`` and every confusion
    matrix are those written before off-scale scores were gathered (the SHA-256 of their sorted JSON), with no
    ``below_scale`` / ``above_scale`` key."""
    import hashlib

    import judge
    from eval.scoring.score import score
    from tests.unit.test_eval_metrics_schema import _predictions

    data = judge.sample_data_path()
    preds = _predictions(tmp_path / "predictions.jsonl", judge.load_records(data))
    score(preds, data, tmp_path / "out", n_boot=20, vc_repeats=5)
    raw = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    pin = {"levels": raw["levels"], "confusion": {k: v["confusion"] for k, v in raw["splits"].items()}}
    assert raw["levels"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert pin["confusion"]["all"]["all"]["matrix"] == [[68, 3, 0, 0, 0], [8, 53, 16, 0, 0], [0, 2, 98, 0, 0],
                                                        [0, 0, 0, 5, 1], [0, 0, 0, 0, 2]]
    assert hashlib.sha256(json.dumps(pin, sort_keys=True).encode()).hexdigest() == ON_SCALE_CONFUSION_SHA256
    assert "_scale" not in json.dumps(pin)


#: The SHA-256 of the on-scale sample run's ``levels`` and confusion matrices as score wrote them before judge
#: scores off the scale were gathered into their own rows.
ON_SCALE_CONFUSION_SHA256 = "1308fda616493355087ed42a2a134fb1aa2e06d3f8874c3fb71a9bcec44c1547"


def test_report_html_and_the_plots_draw_the_off_scale_rows_and_the_rest_as_before(tmp_path, monkeypatch):
    """report.html's panel of the off-scale run: the rubric's three levels as columns, the "below scale" row above
    them and the "above scale" row under them, each count of metrics.json in its cell, 5 rows (not 64); every panel of
    the PNGs draws the same 5 rows (their tick labels); report.md names a constant judge score on the scale."""
    import re

    from eval.reports.html_report import render_report_page
    from eval.reports.plots import plot_confusions
    from eval.reports.report import constant_judge_score

    result = item_table.evaluate(_off_scale_run(), n_boot=0)
    page = render_report_page(result, None)
    panel = page[page.rindex("<h4>all task groups</h4>"):]  # the last test drawn: both tests
    panel = panel[:panel.index("</table>")]
    rows = [re.findall(r"<t[hd][^>]*>([^<]*)</t[hd]>", row) for row in panel.split("<tr>")[1:]]
    assert rows == [["judge \\ experts", "0", "1", "2"], ["below scale", "1", "1", "1"], ["0", "2", "0", "0"],
                    ["1", "0", "2", "0"], ["2", "0", "0", "2"], ["above scale", "20", "20", "20"]]
    import matplotlib.axes

    drawn_rows = []
    set_yticks = matplotlib.axes.Axes.set_yticks

    def recording(ax, ticks, labels=None, **kwargs):
        drawn_rows.append(list(labels) if labels is not None else None)
        return set_yticks(ax, ticks, labels, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "set_yticks", recording)
    drawn = plot_confusions(result, tmp_path)  # 5 rows of 3 columns a panel
    assert [p.name for p in drawn] == [f"confusion_{split}.png" for split in ("zero_shot", "standard", "all")]
    n_panels = sum(1 + len(block.confusion.by_task_group) for block in result.splits.values())
    assert n_panels == 7 and drawn_rows == [["below scale", "0", "1", "2", "above scale"]] * n_panels

    constant = dataclasses.replace(_off_scale_run(), judge=np.full(69, 1.0))
    assert constant_judge_score(item_table.evaluate(constant, n_boot=0).splits["all"], "mode") == 1.0
    # 69 different scores past the scale share the one "above scale" row, yet the judge's scores vary (Spearman is
    # defined): no constant is named, though the matrix alone would show one row
    above = dataclasses.replace(_off_scale_run(), judge=np.array([100.0 + k for k in range(69)]))
    assert constant_judge_score(item_table.evaluate(above, n_boot=0).splits["all"], "mode") is None


@pytest.mark.parametrize("score, side", [(5.0, "above"), (-3.0, "below")])
def test_a_judge_writing_one_score_off_the_scale_on_every_item_is_named_as_constant(score, side):
    """M-Prometheus's way: 5 on every one of 69 items on 0..2 (modes 0, 1, 2). Its matrix is all zeros and its one
    off-scale row holds the 69 items across three columns, so Spearman's "—" says the judge gave them all the same
    score, off the scale on its side, not that the judge's or the experts' side might be the constant one."""
    from eval.reports.report import constant_judge_score, why_no_spearman

    table = _scaled([score] * 69, [[k % 3] * 3 for k in range(69)], 0, 2)
    block = item_table.evaluate(table, n_boot=0).splits["all"]
    assert block.confusion.all.matrix == [[0] * 3] * 3
    reason = why_no_spearman(block.overall, constant_judge_score(block, "mode"))
    assert "all 69 scored items the same score" in reason and f"the confusion matrix's \"{side} scale\" row" in reason
    assert "experts' reference" not in reason


def test_a_constant_score_inside_a_criterion_too_wide_to_rate_is_not_said_to_be_above_its_scale():
    """150 on every item of criterion W, whose experts gave 0 and 300: inside W's range, on no axis level, so in the
    "above scale" row; the sentence names the row it is counted in, never a score above the scale."""
    from eval.reports.report import constant_judge_score, why_no_spearman

    table = _table([150.0] * 4, ["ok"] * 4, [[0] * 3, [300] * 3, [0] * 3, [300] * 3])
    table = dataclasses.replace(table, criteria_name=np.array(["W"] * 4, dtype=object))
    block = item_table.evaluate(table, n_boot=0).splits["all"]
    assert block.confusion.all.above_scale == [2, 2]
    reason = why_no_spearman(block.overall, constant_judge_score(block, "mode"))
    assert "counted in the confusion matrix's \"above scale\" row" in reason and "above the scale" not in reason



def _validity_off_scale(table) -> int:
    """The validity section's count of the judge's answers off the scale, on the same table's "all" items."""
    from eval.validity.section import ValiditySettings, validity_section

    section = validity_section(table, "mode", {"all": np.arange(len(table))}, ValiditySettings(n_boot=0, alpha_boot=0))
    return section.splits["all"].overall.agreement.n_items_judge_off_scale


def test_a_regression_heads_value_past_an_end_is_that_end_in_the_matrix_as_in_the_validity_section():
    """A regression head's raw 2.4, 2.6 and 2.6 on 0..2 whose experts say 2, and its 0 where they say 0: the head's
    value past the top is the top (``eval.validity.section.judge_levels`` with ``measured``), so all three are in row
    2 and none is above the scale, the count the validity section gives; a seq2seq judge's 2.6 on the same items
    rounds to 3 and is above it, in both."""
    from judge.wire_fields import ScoreSource

    verdicts = _scaled([2.4, 2.6, 2.6, 0.0], [[2, 2, 2], [2, 2, 2], [2, 2, 2], [0, 0, 0]], 0, 2)
    head = dataclasses.replace(verdicts, score_source=np.array([ScoreSource.REGRESSION_HEAD] * 4, dtype=object))
    confusion = item_table.evaluate(head, n_boot=0).splits["all"].confusion.all
    assert confusion.above_scale is None and confusion.below_scale is None
    assert confusion.matrix == [[1, 0, 0], [0, 0, 0], [0, 0, 3]] and _validity_off_scale(head) == 0
    confusion = item_table.evaluate(verdicts, n_boot=0).splits["all"].confusion.all
    assert confusion.above_scale == [0, 0, 2] and confusion.matrix == [[1, 0, 0], [0, 0, 0], [0, 0, 1]]
    assert sum(confusion.above_scale) == _validity_off_scale(verdicts) == 2


def test_an_item_without_a_readable_scale_is_read_against_its_criterions_expert_range_as_in_the_validity_section():
    """No scale is read: criterion A's experts gave 0 and 1, B's 0 and 4. The judge's 3 on an A item (mode 0) lies
    above A's range, so it is in the "above scale" row, as the validity section counts it, though 3 is a level of
    the axes (0..4, from B); the 4 on a B item is on B's range, row 4."""
    table = _table([3.0, 1.0, 0.0, 4.0], ["ok"] * 4, [[0, 0, 0], [1, 1, 1], [0, 0, 0], [4, 4, 4]])
    table = dataclasses.replace(table, criteria_name=np.array(["A", "A", "B", "B"], dtype=object))
    confusion = item_table.evaluate(table, n_boot=0).splits["all"].confusion.all
    assert confusion.levels == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert confusion.above_scale == [1, 0, 0, 0, 0] and confusion.below_scale is None
    assert confusion.matrix[3] == [0] * 5 and confusion.matrix[4] == [0, 0, 0, 0, 1]
    assert sum(confusion.above_scale) == _validity_off_scale(table) == 1


def test_a_level_of_its_items_range_that_no_expert_gave_is_a_level_of_the_axes_as_in_the_validity_section():
    """No scale is read: criterion A's experts gave 0, 3 and 10, B's 200, 220 and 250, pooled wider than a rubric, so
    the experts' values alone make the axes (``value_levels``). The judge's 5 on an A item (mode 0) lies on A's range
    0..10, on the scale as the validity section reads it: it joins the axes as its own level, row 5, not the "above
    scale" row, and the matrix counts off the scale what the section counts (none)."""
    table = _table([5.0, 3.0, 0.0, 220.0, 200.0, 250.0], ["ok"] * 6,
                   [[0] * 3, [3] * 3, [10] * 3, [200] * 3, [220] * 3, [250] * 3])
    table = dataclasses.replace(table, criteria_name=np.array(["A"] * 3 + ["B"] * 3, dtype=object))
    confusion = item_table.evaluate(table, n_boot=0).splits["all"].confusion.all
    assert confusion.levels == [0.0, 3.0, 5.0, 10.0, 200.0, 220.0, 250.0]
    assert confusion.above_scale is None and confusion.below_scale is None
    assert confusion.matrix[2] == [1, 0, 0, 0, 0, 0, 0]
    assert _validity_off_scale(table) == 0


def test_a_criterion_too_wide_to_rate_has_its_answers_off_the_axes_in_the_above_scale_row():
    """Criterion W has no readable scale and its experts gave 0 and 300, more levels than a rubric spans: the validity
    section leaves it out (``too_wide_to_rate``) and counts none of its answers off the scale. Its levels would widen
    the axes without bound, so the matrix reads its answers against the axes as they are: the judge's 151 and 3, on
    no axis, in the "above scale" row (what docs/evaluation.md says of it), its 0 in row 0."""
    table = _table([150.5, 3.0, 0.0, 1.0, 0.0], ["ok"] * 5, [[0] * 3, [300] * 3, [300] * 3, [1] * 3, [0] * 3])
    table = dataclasses.replace(table, criteria_name=np.array(["W", "W", "W", "B", "B"], dtype=object))
    confusion = item_table.evaluate(table, n_boot=0).splits["all"].confusion.all
    assert confusion.levels == [0.0, 1.0, 300.0]
    assert confusion.above_scale == [1, 0, 1] and confusion.matrix[0] == [1, 0, 1]
    assert _validity_off_scale(table) == 0


def test_a_regression_heads_constant_value_past_an_end_is_named_as_the_level_it_counts_at_not_as_its_score():
    """A regression head writing 2.6 on every item of a 0..2 scale: the matrix holds all six in row 2 (a head's value
    past an end is that end), so Spearman's "—" names the level the matrix counts them at, 2, which is not the score
    the head gave."""
    from eval.reports.report import constant_judge_score, why_no_spearman
    from judge.wire_fields import ScoreSource

    table = _scaled([2.6] * 6, [[k % 3] * 3 for k in range(6)], 0, 2)
    table = dataclasses.replace(table, score_source=np.array([ScoreSource.REGRESSION_HEAD] * 6, dtype=object))
    block = item_table.evaluate(table, target="mode", n_boot=0).splits["all"]
    reason = why_no_spearman(block.overall, constant_judge_score(block, "mode"))
    assert "the judge gave all 6 scored items the same level (2)" in reason
    assert "same score" not in reason


def test_report_html_says_the_above_scale_row_holds_a_too_wide_criterions_answers_on_no_level():
    """Criterion W (experts 0 and 300, too wide to rate): the judge's 151 and 3 lie inside W's range, on no axis
    level, and are counted in the "above scale" row; report.html says under the panels what that row counts, so
    that neither reads as a score above its scale. An on-scale run draws no such row and no such note."""
    from eval.reports.html_report import ABOVE_SCALE_ROW_NOTE, render_report_page
    from eval.reports.html_text import escape

    table = _table([150.5, 3.0, 0.0, 1.0, 0.0], ["ok"] * 5, [[0] * 3, [300] * 3, [300] * 3, [1] * 3, [0] * 3])
    table = dataclasses.replace(table, criteria_name=np.array(["W", "W", "W", "B", "B"], dtype=object))
    page = render_report_page(item_table.evaluate(table, n_boot=0), None)
    assert "above scale" in page and "on no level of the axes" in ABOVE_SCALE_ROW_NOTE
    assert escape(ABOVE_SCALE_ROW_NOTE) in page
    on_scale = _table([0.0, 1.0], ["ok"] * 2, [[0] * 3, [1] * 3])
    assert escape(ABOVE_SCALE_ROW_NOTE) not in render_report_page(item_table.evaluate(on_scale, n_boot=0), None)


def test_the_above_scale_note_claims_only_what_that_row_counts_below_a_too_wide_range():
    """Criterion W (experts 0 and 300, too wide to rate), the judge's -7 and 3: -7 lies below W's range and is counted
    in the "below scale" row, 3 inside it on no axis level in "above scale". So the note under the panels says the
    latter row holds a too-wide criterion's scores inside its range on no level, not any score on no level."""
    from eval.reports.html_report import ABOVE_SCALE_ROW_NOTE

    table = _table([-7.0, 3.0, 0.0, 1.0, 0.0], ["ok"] * 5, [[0] * 3, [300] * 3, [300] * 3, [1] * 3, [0] * 3])
    table = dataclasses.replace(table, criteria_name=np.array(["W", "W", "W", "B", "B"], dtype=object))
    confusion = item_table.evaluate(table, n_boot=0).splits["all"].confusion.all
    assert confusion.levels == [0.0, 1.0, 300.0]
    assert confusion.below_scale == [1, 0, 0] and confusion.above_scale == [0, 0, 1]
    assert "each score inside that range on no level of the axes" in ABOVE_SCALE_ROW_NOTE
    assert "or not" not in ABOVE_SCALE_ROW_NOTE

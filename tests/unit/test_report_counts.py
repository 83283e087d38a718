"""What report.md, report.html and the PNG plots say about the items behind each figure: the items MAE and Spearman
are over, items with no prediction in every test, a small failure share, the interval's coverage, and the item
explorer's filters counting items as metrics.json does. Every expected value is worked out by hand in the comments.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from eval.reports.html_explorer import item_columns, report_items
from eval.reports.html_report import render_report_page
from eval.reports.report import render_markdown, run_notes
from eval.scoring import item_table, metrics
from judge.metrics_json.metrics import Metrics

NAN = float("nan")


def _table(judge, status, experts, split=None, abstained=None, in_scale=None):
    n = len(judge)
    return item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object),
        judge=np.array(judge, dtype=float),
        status=np.array(status, dtype=object),
        error=np.array(["" if s in ("ok", "missing") else "no_result" for s in status], dtype=object),
        score_source=np.array(["verdict" if s == "ok" else "" for s in status], dtype=object),
        experts=metrics.pad_scores(experts),
        split=np.array(split or ["standard"] * n, dtype=object),
        model_id=np.array(["m"] * n, dtype=object),
        task_type=np.array(["t"] * n, dtype=object),
        task_group=np.array(["g"] * n, dtype=object),
        criteria_name=np.array(["c"] * n, dtype=object),
        judge_name="hand",
        n_abstained=None if abstained is None else np.array(abstained, dtype=np.int64),
        in_scale=None if in_scale is None else np.array(in_scale, dtype=float),
    )


def _read_back(result: Metrics) -> Metrics:
    """metrics.json as ``score`` writes and every report reads it."""
    return Metrics.from_json(json.loads(item_table.dumps(result)))


def _summary(markdown: str) -> list[dict[str, str]]:
    """The rows of report.md's summary table as {column: cell}."""
    block = markdown.split("## Summary\n\n")[1].split("\n\n")[0].splitlines()
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in block if not line.startswith("|---")]
    return [dict(zip(cells[0], row)) for row in cells[1:]]


# Five items of the Standard test, every one predicted and parsed:
#   i0 experts 2,2,1 (mode 2), judge 2 -> scored;
#   i1 experts 0,1 (no unique mode; mean 0.5), judge 1 -> no mode reference;
#   i2 every expert abstained (3 released -1s): no expert score, no reference of either kind, judge 1;
#   i3 experts 1,1 (mode 1), judge 0 -> scored;
#   i4 experts 0,0,2 (mode 0; mean 2/3), judge 0 -> scored.
# n 5, failed 0, no unique mode 1 (i1); n - failed - no unique mode = 4, but MAE is over 3 items (i2 has none):
# |2-2| + |0-1| + |0-0| = 1 -> MAE 1/3.
FIVE = dict(judge=[2, 1, 1, 0, 0], status=["ok"] * 5, experts=[[2, 2, 1], [0, 1], [], [1, 1], [0, 0, 2]],
            abstained=[0, 0, 3, 0, 0])


def test_report_md_states_the_items_mae_is_over():
    """The summary and every grouped table carry ``scored``: 3 here, which n - failed - no unique mode (4) is not."""
    result = _read_back(item_table.evaluate(_table(**FIVE), n_boot=0, vc_repeats=2))
    overall = result.splits["standard"].overall
    assert (overall.n, overall.n_failed, overall.n_no_unique_mode, overall.n_scored) == (5, 0, 1, 3)
    assert overall.mae == pytest.approx(1 / 3)
    markdown = render_markdown(result)
    (row,) = [r for r in _summary(markdown) if r["Test"] == "Standard test"]
    assert (row["n"], row["failed"], row["scored"], row["no unique mode"]) == ("5", "0 (0.0 %)", "3", "1")
    assert "n in Spearman" not in row  # the correlations are over the same 3 items: no column of their own
    by_model = markdown.split("### Standard test: by evaluated model")[1].split("\n\n")[1].splitlines()
    header = [c.strip() for c in by_model[0].strip("|").split(" | ")]
    assert header[:5] == ["Evaluated model", "n", "failed", "scored", "MAE"]
    assert [c.strip() for c in by_model[2].strip("|").split(" | ")][3] == "3"


def test_report_md_states_the_pairs_spearman_is_over_with_its_own_reference():
    """``--spearman-target mean``: MAE (against the mode) is over i0, i3, i4 (3); the correlations, against the
    mean, over every item with a judge score and an expert score, i1's tie included: i0, i1, i3, i4 (4)."""
    result = _read_back(item_table.evaluate(_table(**FIVE), target="mode", spearman_target="mean", n_boot=0,
                                            vc_repeats=2))
    assert (result.splits["standard"].overall.n_scored, result.splits["standard"].overall.n_spearman) == (3, 4)
    markdown = render_markdown(result)
    (row,) = [r for r in _summary(markdown) if r["Test"] == "Standard test"]
    assert (row["scored"], row["n in Spearman"]) == ("3", "4")
    assert "`n in Spearman` those the correlations are over" in markdown


def test_report_html_shows_the_counts_in_the_headline_columns():
    """report.html's tables show ``scored`` and ``n in Spearman`` among the headline columns (not behind the
    bookkeeping switch), as report.md does."""
    result = _read_back(item_table.evaluate(_table(**FIVE), target="mode", spearman_target="mean", n_boot=0,
                                            vc_repeats=2))
    page = render_report_page(result, None)
    assert ('<th title="items in MAE and the correlations: scored by the judge, with a reference (metrics.json: '
            'n_scored)" data-key="n_scored">scored</th>') in page
    assert ('<th title="the pairs the correlations cover, their reference chosen apart (--spearman-target) '
            '(metrics.json: n_spearman)" data-key="n_spearman">n in Spearman</th>') in page


def test_a_note_counts_missing_predictions_of_every_test():
    """Ten items of unknown task type, five of them without a prediction, and two Standard items, one without: the
    note counts 6, 5 of them in neither test; the unknown items alone (Standard all predicted) still get it."""
    experts = [[1, 1]] * 12
    status = ["ok"] * 5 + ["missing"] * 5 + ["ok", "missing"]
    split = ["unknown"] * 10 + ["standard"] * 2
    judge = [1.0 if s == "ok" else NAN for s in status]
    result = _read_back(item_table.evaluate(_table(judge, status, experts, split=split), n_boot=0, vc_repeats=2))
    assert (result.splits["unknown"].overall.n, result.splits["unknown"].overall.n_missing) == (5, 5)
    assert run_notes(result)[0] == ("**6 items have no prediction** (the run is unfinished; 5 of them in neither "
                                    "test (a task type the taxonomy does not know)): they are not in `n`.")
    only_unknown = _read_back(item_table.evaluate(_table(judge[:11], status[:11], experts[:11], split=split[:11]),
                                                  n_boot=0, vc_repeats=2))
    assert run_notes(only_unknown)[0].startswith("**5 items have no prediction**")
    assert "**5 items have no prediction**" in render_markdown(only_unknown)


def test_abstentions_of_items_of_unknown_task_type_are_counted_too():
    """2 abstentions on a Standard item and 3 on an unknown one (every expert of it): 5 in all, 1 item unlabelled."""
    table = _table([1.0, 1.0], ["ok", "ok"], [[1, 1], []], split=["standard", "unknown"], abstained=[2, 3])
    notes = run_notes(_read_back(item_table.evaluate(table, n_boot=0, vc_repeats=2)))
    assert "score: 5 in all; 1 item had every expert abstain and is unlabelled" in notes[0]


def test_items_with_no_expert_score_are_said():
    """The score line printed "n 6 ... MAE" over 5 items and no count said why: an item with no expert score at all
    (unlabelled data) is in n and in no figure. 3 such items in the two tests plus 1 of unknown task type, of which 1
    had every expert abstain (the abstentions' sentence says that one): 4 - 1 = 3 items; then 1 in the singular; and
    a file written before the count (no n_unlabelled) has no sentence."""
    from types import SimpleNamespace

    def cell(n_unlabelled, n_all_abstained=0, n_abstained=0):
        return SimpleNamespace(n_missing=0, n_abstained=n_abstained, n_all_abstained=n_all_abstained,
                               n_unlabelled=n_unlabelled)

    result = SimpleNamespace(splits={"all": SimpleNamespace(overall=cell(3, 1, 2)),
                                     "unknown": SimpleNamespace(overall=cell(1))})
    assert run_notes(result)[1] == ("**3 items have no expert score** (unlabelled data): they are left out of MAE and "
                                    "the correlations, and not errors.")
    one = SimpleNamespace(splits={"all": SimpleNamespace(overall=cell(1))})
    assert run_notes(one) == ["**1 item has no expert score** (unlabelled data): it is left out of MAE and the "
                              "correlations, and not an error."]
    older = SimpleNamespace(splits={"all": SimpleNamespace(overall=SimpleNamespace(n_missing=0, n_abstained=0,
                                                                                  n_all_abstained=0))})
    assert run_notes(older) == []


def test_items_scored_on_a_cut_rationale_are_said():
    """``cut_rationale: score`` keeps a regression head's score on a rationale ``max_tokens`` cut, a row that reads as
    any other scored row: 3 such items are said (plural), 1 in the singular, none (or a file written before the
    count) not at all; the console drops the Markdown marks."""
    from types import SimpleNamespace

    from eval.reports.notes import console_text

    def result(n_cut_scored):
        return SimpleNamespace(splits={}, notes=SimpleNamespace(n_cut_scored=n_cut_scored))

    assert run_notes(result(3)) == ["**3 items were scored on a rationale `max_tokens` cut** "
                                    "(`cut_rationale: score`): the regression head's score, kept as POLLUX keeps it; "
                                    "their `finish_reason` is `length`."]
    assert run_notes(result(1))[0].startswith("**1 item was scored on a rationale `max_tokens` cut**")
    assert run_notes(result(1))[0].endswith("its `finish_reason` is `length`.")
    assert run_notes(result(0)) == run_notes(SimpleNamespace(splits={}, notes=SimpleNamespace())) == []
    assert console_text(run_notes(result(3))[0]).startswith("3 items were scored on a rationale max_tokens cut")


def test_an_item_with_no_expert_score_is_counted_and_said_by_score():
    """Three Standard items, all judged; the second has no expert (unlabelled data): n 3, n_scored 2, n_unlabelled 1
    (and n_all_abstained 0: nobody abstained), and the note says the one item."""
    table = _table([1.0, 1.0, 2.0], ["ok"] * 3, [[1, 1], [], [2, 2]], split=["standard"] * 3)
    result = _read_back(item_table.evaluate(table, n_boot=0, vc_repeats=2))
    overall = result.splits["all"].overall
    assert (overall.n, overall.n_scored, overall.n_all_abstained, overall.n_unlabelled) == (3, 2, 0, 1)
    assert run_notes(result) == ["**1 item has no expert score** (unlabelled data): it is left out of MAE and the "
                                 "correlations, and not an error."]


@pytest.mark.parametrize("n_failed, n, shown", [
    (1, 20000, "1 (<0.1 %)"),          # 0.005 % would read 0.0 %: one failure is not none
    (19999, 20000, "19999 (>99.9 %)"),  # 99.995 % would read 100.0 %: one item did parse
    (1, 2000, "1 (0.1 %)"),            # 0.05 % reads 0.1 % as it is
    (1, 4, "1 (25.0 %)"),
    (0, 4, "0 (0.0 %)"),
    (4, 4, "4 (100.0 %)"),
    (0, 0, "0 (— %)"),             # no item: no share
])  # fmt: skip
def test_a_small_failure_share_is_not_shown_as_none(n_failed, n, shown):
    cell = {"n": n, "n_failed": n_failed, "n_no_unique_mode": 0, "n_scored": n - n_failed, "mae": 0.5,
            "mae_ci": [None, None], "failure_rate": n_failed / n if n else None, "spearman": None}
    result = Metrics.from_json({"judge": "j", "target": "mode",
                                "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 2, "ci_level": 0.95},
                                "splits": {"all": {"overall": cell, "by_model": {}, "by_task_type": {},
                                                   "by_criterion": {}, "failures": {}, "confusion": None}}})
    (row,) = _summary(render_markdown(result))
    assert row["failed"] == shown


def test_interval_coverage_is_the_runs_own(tmp_path, monkeypatch):
    """ci_level 0.9: the PNG's axis says 90 % CI; 0.975: report.md says 97.5 % (not 97, as int() cut it)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from eval.reports.plots import plot_mae_by_criterion

    table = _table(judge=[2, 1, 0, 0], status=["ok"] * 4, experts=[[2, 2], [1, 1], [0, 1, 1], [0, 0]])
    table = dataclasses.replace(table, criteria_name=np.array(["c", "c", "d", "d"], dtype=object))
    labels: list[str] = []
    original = Axes.set_xlabel

    def recorded(self, label, *args, **kwargs):
        labels.append(label)
        return original(self, label, *args, **kwargs)

    result = _read_back(item_table.evaluate(table, n_boot=50, vc_repeats=2, ci_level=0.9))
    monkeypatch.setattr(Axes, "set_xlabel", recorded)
    assert plot_mae_by_criterion(result, tmp_path)
    assert labels and all(label == "MAE vs expert mode (90 % CI)" for label in labels)
    wide = _read_back(item_table.evaluate(table, n_boot=50, vc_repeats=2, ci_level=0.975))
    assert "Intervals: 97.5 % percentile bootstrap" in render_markdown(wide)
    assert "97.5 % percentile intervals" in render_report_page(wide, None)


def test_no_interval_is_claimed_without_resamples(tmp_path, monkeypatch):
    """--n-boot 0 draws no interval: report.html, report.md and the PNG's axis claim none (no "percentile
    intervals", no interval in grey, no CI); with resamples they say the level."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from eval.reports.plots import plot_mae_by_criterion

    table = _table(judge=[2, 1, 0, 0], status=["ok"] * 4, experts=[[2, 2], [1, 1], [0, 1, 1], [0, 0]])
    result = _read_back(item_table.evaluate(table, n_boot=0, vc_repeats=2))
    page = render_report_page(result, None)
    assert "percentile intervals" not in page and "Intervals in grey" not in page
    assert "bootstrap 0 resamples" not in page and "no bootstrap (--n-boot 0): no intervals" in page
    assert 'class="ci"' not in page and "bootstrap interval (line)" not in page
    markdown = render_markdown(result)
    assert "percentile bootstrap" not in markdown and "No intervals" in markdown
    labels: list[str] = []
    original = Axes.set_xlabel

    def recorded(self, label, *args, **kwargs):
        labels.append(label)
        return original(self, label, *args, **kwargs)

    monkeypatch.setattr(Axes, "set_xlabel", recorded)
    assert plot_mae_by_criterion(result, tmp_path)
    assert labels and all("CI" not in label for label in labels)
    drawn = render_report_page(_read_back(item_table.evaluate(table, n_boot=20, vc_repeats=2)), None)
    assert "bootstrap 20 resamples of items, 95 % percentile intervals" in drawn


def test_explorer_filters_count_items_as_metrics_json_does():
    """Six Standard items, scored as ``judge-eval score`` writes items.parquet:

    i0 judge 2 in scale, experts 2,2,1 -> scored; i1 judge 7 outside its scale, experts 2,2,1 -> scored (the paper
    scores it) and out of scale; i2 judge 9 outside, experts 0,1 -> no unique mode and out of scale; i3 parse
    failure; i4 no prediction; i5 judge 1, every expert abstained -> unlabelled.
    metrics.json: n_scored 2, n_failed 1, n_missing 1, n_out_of_scale 2, n_no_unique_mode 1. The status filter:
    scored 2 (i0, i1), failed 1, missing 1, experts tie 1 (i2), unlabelled 1; the mode filter: no unique mode 1
    (i2), unique mode 3 (i0, i1, i3), no expert scores 1 (i5), no prediction 1 (i4); the scale filter: out of scale 2 (i1, i2), in scale 2 (i0,
    i5), not checked 2 (i3, i4)."""
    table = _table(judge=[2, 7, 9, NAN, NAN, 1], status=["ok", "ok", "ok", "parse_failed", "missing", "ok"],
                   experts=[[2, 2, 1], [2, 2, 1], [0, 1], [1, 1], [1, 1], []], abstained=[0, 0, 0, 0, 0, 2],
                   in_scale=[1.0, 0.0, 0.0, NAN, NAN, 1.0])
    derived = item_table.derive(table, "mode", vc_repeats=2)
    overall = item_table.evaluate(table, n_boot=0, vc_repeats=2, derived=derived).splits["standard"].overall
    assert (overall.n_scored, overall.n_failed, overall.n_missing, overall.n_out_of_scale) == (2, 1, 1, 2)
    items = item_table.arrow_table(table, extra={"reference": derived.reference,
                                                 "why_unscored": item_table.why_unscored_labels(derived)})
    data = report_items(item_columns(items), None, None, "hand", "mode")

    def counts(key: str) -> dict[str, int]:
        k = [f["key"] for f in data["filters"]].index(key)
        values = data["filters"][k]["values"]
        found: dict[str, int] = {}
        for row in data["rows"]:
            found[values[row[1][k]]] = found.get(values[row[1][k]], 0) + 1
        return found

    assert counts("status") == {"scored": overall.n_scored, "failed": overall.n_failed,
                                "missing": overall.n_missing, "experts tie": 1, "unlabelled": 1}
    assert counts("mode") == {"no unique mode": overall.n_no_unique_mode, "unique mode": 3, "no expert scores": 1,
                              "no prediction": 1}
    assert counts("scale") == {"out of scale": overall.n_out_of_scale, "in scale": 2, "not checked": 2}
    status = next(f for f in data["filters"] if f["key"] == "status")
    labels = {row[0]: status["values"][row[1][4]] for row in data["rows"]}
    assert (labels["i1"], labels["i2"]) == ("scored", "experts tie")
    assert re.fullmatch(r"[a-z ]+", " ".join(status["values"]))


def test_explorer_no_unique_mode_counts_failed_items_as_metrics_json_does():
    """Two items whose experts tie (0 and 1): i0 judged 2, i1 a parse failure. metrics.json's n_no_unique_mode
    counts both (every item with a prediction whose experts have no unique mode, failed or not); the explorer's
    mode filter matches both; its status filter, a failure outranking the other reasons, calls i1 failed and i0
    experts tie, and says so in its label (not "failures first", read as a sort order the rows do not have)."""
    table = _table(judge=[2, NAN], status=["ok", "parse_failed"], experts=[[0, 1], [0, 1]], abstained=[0, 0],
                   in_scale=[1.0, NAN])
    derived = item_table.derive(table, "mode", vc_repeats=2)
    overall = item_table.evaluate(table, n_boot=0, vc_repeats=2, derived=derived).splits["standard"].overall
    assert overall.n_no_unique_mode == 2
    items = item_table.arrow_table(table, extra={"reference": derived.reference,
                                                 "why_unscored": item_table.why_unscored_labels(derived)})
    data = report_items(item_columns(items), None, None, "hand", "mode")
    keys = [f["key"] for f in data["filters"]]
    mode, status = data["filters"][keys.index("mode")], data["filters"][keys.index("status")]
    shown = [mode["values"][row[1][keys.index("mode")]] for row in data["rows"]]
    assert shown.count("no unique mode") == overall.n_no_unique_mode
    assert [status["values"][row[1][keys.index("status")]] for row in data["rows"]] == ["experts tie", "failed"]
    assert "no unique mode" not in status["values"]
    assert status["label"] == "status (a failed item is 'failed', whatever else holds)"

"""``judge-eval compare`` on runs that did not score the same items: a run that failed on more items than the other,
runs that share no scored item of a split, a split one run lacks."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from eval.scoring import item_table
from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run
from tests.unit.test_eval_metrics import _table

NAN = float("nan")


def _run_with(folder, name, ids, judge_scores, experts, split, status=None, expert_ids=None):
    """A scored run (as ``_scored_run``) whose items have the ids and splits given; ``expert_ids``: each item's
    experts' ids, parallel to its scores (None: the table names no experts)."""
    status = status or ["ok"] * len(judge_scores)
    table = dataclasses.replace(_table(judge_scores, status, experts, split=split),
                                ids=np.array(ids, dtype=object))
    if expert_ids is not None:
        table = dataclasses.replace(table, expert_ids=item_table.pad_expert_ids(expert_ids, table.experts.shape[1]))
    derived = item_table.derive(table, "mode")
    result = json.loads(item_table.dumps(item_table.evaluate(table, target="mode", n_boot=50, derived=derived)))
    result["judge"] = name
    folder.mkdir()
    item_table.write_table(table, folder / "items.parquet",
                           extra={"reference": derived.reference, "vc_judge": derived.vc_judge,
                                  "vc_experts": derived.vc_experts})
    (folder / "metrics.json").write_text(json.dumps(result), encoding="utf-8")
    return folder


def test_a_judge_that_failed_on_more_items_is_not_called_better_without_saying_so(tmp_path):
    """b failed on half the items and is right on the rest: its paired MAE is lower on the items both scored, and
    the headline, beside the call, says how many items each run failed on and how many were paired; the run notes
    say it too."""
    from eval.reports.notes import runs_notes
    from eval.scoring.compare import compare, headline

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    status = ["parse_failed"] * 20 + ["ok"] * 20
    b = _scored_run(tmp_path / "B", "b", [NAN] * 20 + JUDGE[20:], EXPERTS, status=status)
    result = compare([a, b], n_boot=50)
    lines = headline(result)
    at = next(k for k, line in enumerate(lines) if line.startswith("On the Standard test"))
    # the failures' own call follows and gives their counts: the MAE's sentence does not say them again
    assert lines[at].endswith("20 paired items): n.s. (under 30 paired items: too few to call)")
    assert lines[at + 1].startswith("On the Standard test, b fails on more items than a: of the 40 items both have a "
                                    "prediction for, b failed on 20 and a on 0")
    # failures too few to call (2 against 0: McNemar's exact p = 0.5): the MAE's sentence says the counts
    two = _scored_run(tmp_path / "B2", "b", [NAN] * 2 + JUDGE[2:], EXPERTS, status=["parse_failed"] * 2 + ["ok"] * 38)
    lines = headline(compare([a, two], n_boot=50))
    line = next(line for line in lines if line.startswith("On the Standard test"))
    assert line.endswith("; b failed on 2 of 40, a on 0 of 40: paired on the 38 both scored")
    assert not any("fails on more items" in line for line in lines)
    notes = runs_notes(result)
    assert ("b", "**failed on 20 of 40 items** (no score read from its judge): they are left out of every paired "
                 "row, which counts only the items both runs scored.") in notes
    assert not any(name == "a" and "failed on" in note for name, note in notes)

    # Equal failures: nothing added.
    same = compare([a, _scored_run(tmp_path / "C", "c", JUDGE, EXPERTS)], n_boot=50)
    assert not any("failed on" in line for line in headline(same))
    assert not any("failed on" in note for _, note in runs_notes(same))


def _half_runs(tmp_path):
    """a holds twenty Zero-Shot and twenty Standard items, b only the Standard ones; compared."""
    from eval.scoring.compare import compare

    ids = [f"i{k}" for k in range(40)]
    split = ["zero_shot"] * 20 + ["standard"] * 20
    a = _run_with(tmp_path / "A", "a", ids, JUDGE, EXPERTS, split)
    b = _run_with(tmp_path / "B", "b", ids[20:], JUDGE[20:], EXPERTS[20:], split[20:])
    return compare([a, b], n_boot=50)


def test_a_split_the_runs_share_no_item_of_is_said(tmp_path):
    """The headline says the runs share no scored Zero-Shot item and how many of each run's items lie outside those
    both hold (the split was dropped without a word)."""
    from eval.scoring.compare import headline

    assert ("On the Zero-Shot test, b and a share no scored items (a: 20 of its 40 items outside the 20 both runs "
            "hold, the first 'i0'; b: 0 of its 20).") in headline(_half_runs(tmp_path))


def test_a_split_neither_run_scored_is_said_without_counting_items_outside(tmp_path):
    """Both runs hold the same 40 items; each failed every Zero-Shot verdict. The headline said "(a: 0 of its 40
    items outside the 40 both runs hold; b: 0 of its 40)", which explains nothing; it now says why there is no pair."""
    from eval.scoring.compare import compare, headline

    ids = [f"i{k}" for k in range(40)]
    split = ["zero_shot"] * 20 + ["standard"] * 20
    status = ["parse_failed"] * 20 + ["ok"] * 20
    nan = [float("nan")] * 20
    a = _run_with(tmp_path / "A", "a", ids, nan + JUDGE[20:], EXPERTS, split, status=status)
    b = _run_with(tmp_path / "B", "b", ids, nan + JUDGE[20:], EXPERTS, split, status=status)
    assert ("On the Zero-Shot test, b and a share no scored items (both hold the same 40 items; none of this split's "
            "has a score in both runs).") in headline(compare([a, b], n_boot=50))


def test_a_split_both_judges_scored_without_a_reference_is_not_said_to_lack_scores(tmp_path):
    """Both runs gave a verdict on every item, but each Zero-Shot item's experts tie (0, 1, 2 one each: no unique
    mode), so no Zero-Shot item has a reference. The headline said "none of this split's has a score in both runs",
    which is false of 20 items both judges scored; it now says both judged the 20 and none has a reference."""
    from eval.scoring.compare import compare, headline

    ids = [f"i{k}" for k in range(40)]
    split = ["zero_shot"] * 20 + ["standard"] * 20
    experts = [[0, 1, 2]] * 20 + EXPERTS[20:]
    a = _run_with(tmp_path / "A", "a", ids, JUDGE, experts, split)
    b = _run_with(tmp_path / "B", "b", ids, JUDGE[::-1], experts, split)
    said = headline(compare([a, b], n_boot=50))
    assert ("On the Zero-Shot test, b and a share no scored items (both hold the same 40 items; both judges gave a "
            "verdict on 20 of this split's items, none of which has a reference: their experts have no unique mode, "
            "or no expert scored them).") in said
    assert not any("none of this split's has a score in both runs" in line for line in said)


def test_a_split_one_run_lacks_is_shown_in_compare_md_with_a_dash(tmp_path):
    """a has one item of a task type the taxonomy does not know, b none (so no such split in its metrics.json):
    compare.md's own-items table and its side-by-side tables keep that split's rows, with "—" for b, as compare.html
    does (every run's rows of the split were dropped)."""
    from eval.scoring.compare import compare, render_markdown
    from judge.splits import SPLIT_TITLES

    ids = [f"i{k}" for k in range(40)]
    split = ["unknown"] + ["standard"] * 39
    a = _run_with(tmp_path / "A", "a", ids, JUDGE, EXPERTS, split)
    b = _run_with(tmp_path / "B", "b", ids[1:], JUDGE[1:], EXPERTS[1:], split[1:])
    assert "unknown" not in json.loads((b / "metrics.json").read_text(encoding="utf-8"))["splits"]
    text = render_markdown(compare([a, b], n_boot=50))
    title = SPLIT_TITLES["unknown"]
    rows = [line for line in text.splitlines() if line.startswith(f"| {title} | MAE |")]
    assert len(rows) == 1 and rows[0].rstrip().endswith("| — |")
    assert f"### {title}: MAE by evaluated model" in text


def test_runs_holding_partly_different_items_are_said_to(tmp_path):
    """a holds forty Standard items, b twenty of them: the pairs cover those twenty while each run's own figures
    cover all of its items, and the headline said nothing of it (only compare.md's count of items in both runs
    showed it). Now one sentence with each run's items outside the shared ones, counted and the first of them named
    (in that run's order); none where both hold the same."""
    from eval.scoring.compare import compare, headline

    ids = [f"i{k}" for k in range(40)]
    a = _run_with(tmp_path / "A", "a", ids, JUDGE, EXPERTS, ["standard"] * 40)
    b = _run_with(tmp_path / "B", "b", ids[:20], JUDGE[:20], EXPERTS[:20], ["standard"] * 20)
    c = _run_with(tmp_path / "C", "c", ids, JUDGE, EXPERTS, ["standard"] * 40)
    said = headline(compare([a, b], n_boot=50))
    assert ("b and a do not hold the same items: the pairs are drawn from the 20 both hold (a: 20 of its 40 items "
            "outside the 20 both runs hold, the first 'i20'; b: 0 of its 20); each run's own figures are over all of "
            "its items.") in said
    # the other way round: the baseline the smaller one
    said = headline(compare([b, a], n_boot=50))
    assert ("a and b do not hold the same items: the pairs are drawn from the 20 both hold (b: 0 of its 20 items "
            "outside the 20 both runs hold; a: 20 of its 40, the first 'i20'); each run's own figures are over all of "
            "its items.") in said
    # each run holding items the other does not: both counted and named, and kept in compare.json
    d = _run_with(tmp_path / "D", "d", ids[5:] + ["j0", "j1"], JUDGE[5:] + JUDGE[:2], EXPERTS[5:] + EXPERTS[:2],
                  ["standard"] * 37)
    result = compare([a, d], n_boot=50)
    assert ("(a: 5 of its 40 items outside the 35 both runs hold, the first 'i0'; d: 2 of its 37, the first 'j0')"
            in headline(result)[0])
    from eval.scoring.comparison import Comparison
    from eval.scoring.item_table import dumps

    again = Comparison.from_json(json.loads(dumps(result))).comparisons[0]
    assert (again.first_only_baseline, again.first_only_run) == ("i0", "j0")
    assert not any("do not hold the same items" in line for line in headline(compare([a, c], n_boot=50)))


def test_runs_whose_shared_ids_are_other_items_are_refused_naming_the_first(tmp_path):
    """Two runs on two revisions of the data: the same ids and expert labels, but item i3's answer rewritten (its
    length the one trace an items.parquet keeps of its text), a criterion renamed, or its test changed. Paired, the difference of the
    answers was reported as the judges'. Now refused, naming what differs, on how many items, and the first one."""
    from eval.scoring.compare import compare

    ids = [f"i{k}" for k in range(40)]

    def run(name: str, **columns):
        folder = _run_with(tmp_path / name, name, ids, JUDGE, EXPERTS, ["standard"] * 40)
        table, extra = item_table.read_table(folder / "items.parquet")
        changed = {k: np.array(v, dtype=float if k == "answer_chars" else object) for k, v in columns.items()}
        item_table.write_table(dataclasses.replace(table, **changed), folder / "items.parquet", extra=extra)
        return folder

    lengths = [100.0] * 40
    a = run("A", answer_chars=lengths)
    b = run("B", answer_chars=lengths[:3] + [95.0] + lengths[4:])
    with pytest.raises(ValueError) as err:
        compare([a, b], n_boot=50)
    assert str(err.value) == (f"{a} and {b} hold different items under the same ids: the answer length in characters "
                              f"differs on 1 of the 40 items both hold (item 'i3': 100 in {a}, 95 in {b}); score both "
                              "against the same data file (judge-eval score --data)")
    c = run("C", criteria_name=["c"] * 38 + ["Грамотность"] * 2)
    with pytest.raises(ValueError, match="the criterion differs on 2 of the 40 items both hold "
                                         r"\(item 'i38': 'c' in .*, 'Грамотность' in "):
        compare([a, c], n_boot=50)
    # an item in another test (a split spec edited between the two scorings): its figures land in another test
    s = run("S", split=["standard"] * 3 + ["zero_shot"] + ["standard"] * 36)
    with pytest.raises(ValueError, match=r"the test \(zero_shot, standard or unknown\) differs on 1 of the 40 items "
                                         r"both hold \(item 'i3': 'standard' in .*, 'zero_shot' in .*\); score both "
                                         r"against the same data file \(judge-eval score --data\); or re-score both "
                                         r"runs with the same toolkit version \(the version that scored a run "
                                         r"decides an item's test\)$"):
        compare([a, s], n_boot=50)
    # the test an item is in may be unknown (neither of the paper's two): named as such
    with pytest.raises(ValueError, match=r"'standard' in .*, 'unknown' in .*re-score both runs"):
        compare([a, run("U", split=["unknown"] + ["standard"] * 39)], n_boot=50)
    d = run("D", answer_chars=lengths)
    assert compare([a, d], n_boot=50).comparisons[0].n_common == 40
    # a length left null (by another tool: score writes every one) is not known to differ
    assert compare([a, run("N", answer_chars=[NAN] + lengths[1:])], n_boot=50).comparisons[0].n_common == 40
    # a run whose items.parquet keeps no answer lengths (written before they were kept) is compared on the rest
    assert compare([_run_with(tmp_path / "E", "e", ids, JUDGE, EXPERTS, ["standard"] * 40), b],
                   n_boot=50).comparisons[0].n_common == 40


def test_runs_scored_on_other_expert_labels_are_refused(tmp_path):
    from eval.scoring.compare import compare

    ids = [f"i{k}" for k in range(40)]
    a = _run_with(tmp_path / "A", "a", ids, JUDGE, EXPERTS, ["standard"] * 40)
    b = _run_with(tmp_path / "B", "b", ids, JUDGE, [[2, 2, 2]] + EXPERTS[1:], ["standard"] * 40)
    with pytest.raises(ValueError) as err:
        compare([a, b], n_boot=50)
    assert str(err.value) == (f"{a} and {b} hold different items under the same ids: the expert labels differ on 1 of "
                              f"the 40 items both hold (item 'i0': [0, 0, 1] in {a}, [2, 2, 2] in {b}); score both "
                              "against the same data file (judge-eval score --data)")


def test_runs_whose_shared_ids_have_other_rubric_scales_are_refused(tmp_path):
    """Two runs on two revisions of the data whose rubric for i3 was rewritten from 0..2 to 0..10: the judge was
    asked on another rubric (its prompt holds the rubric), and every figure reads the item's scale ends (the
    alt-test's levels, the ceiling's worst error, out of scale). Paired, the difference of the rubrics passed for the
    judges'. Refused like another answer, naming the first item and both scales; an end left unreadable (NaN) in one
    run is not known to differ, as an answer length left null."""
    from eval.scoring.compare import compare

    ids = [f"i{k}" for k in range(40)]

    def run(name: str, low: list[float], high: list[float]):
        folder = _run_with(tmp_path / name, name, ids, JUDGE, EXPERTS, ["standard"] * 40)
        table, extra = item_table.read_table(folder / "items.parquet")
        item_table.write_table(dataclasses.replace(table, scale_low=np.array(low, dtype=float),
                                                   scale_high=np.array(high, dtype=float)),
                               folder / "items.parquet", extra=extra)
        return folder

    lows, highs = [0.0] * 40, [2.0] * 40
    a = run("A", lows, highs)
    b = run("B", lows, highs[:3] + [10.0] + highs[4:])
    with pytest.raises(ValueError) as err:
        compare([a, b], n_boot=50)
    assert str(err.value) == (f"{a} and {b} hold different items under the same ids: the rubric's scale differs on 1 "
                              f"of the 40 items both hold (item 'i3': 0..2 in {a}, 0..10 in {b}); score both against "
                              "the same data file (judge-eval score --data)")
    c = run("C", [1.0] + lows[1:], highs)
    with pytest.raises(ValueError, match=r"the rubric's scale differs on 1 of the 40 items both hold \(item 'i0': "
                                         r"0\.\.2 in .*, 1\.\.2 in "):
        compare([a, c], n_boot=50)
    assert compare([a, run("D", lows, highs)], n_boot=50).comparisons[0].n_common == 40
    assert compare([a, run("N", [NAN] + lows[1:], [NAN] + highs[1:])], n_boot=50).comparisons[0].n_common == 40


def test_an_item_id_the_headline_names_reaches_compare_md_inert(tmp_path):
    """The first item outside the shared ones is named in the headline, which compare.md writes as a list line: an id
    from the data holding a tag and a link is written there as inert Markdown (as run names and criteria are), while
    compare.json keeps the id as the data gave it."""
    from eval.reports.report import md_text
    from eval.scoring.compare import compare, render_markdown

    ids = [f"i{k}" for k in range(40)]
    ids[0] = "<img src=x> [a](b)"
    a = _run_with(tmp_path / "A", "a", ids, JUDGE, EXPERTS, ["standard"] * 40)
    b = _run_with(tmp_path / "B", "b", ids[5:], JUDGE[5:], EXPERTS[5:], ["standard"] * 35)
    result = compare([a, b], n_boot=50)
    text = render_markdown(result)
    assert "<img" not in text and "[a](b)" not in text
    assert f"the first '{md_text(ids[0])}'" in text
    assert result.comparisons[0].first_only_baseline == ids[0]

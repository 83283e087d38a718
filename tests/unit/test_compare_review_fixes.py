"""``judge-eval compare`` and the report writers on the inputs a review found them mishandling: runs that failed on
different numbers of items, runs sharing no item of a split, a split one run lacks, item tables without the columns
compare pairs on or with a repeated id, a missing file named alone, a baseline without a validity section, the paired
validity's resamples, data or predictions that can no longer be read, and files written whole."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import judge
from eval.cli import main
from eval.scoring import item_table
from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run
from tests.unit.test_eval_metrics import _table
from tests.unit.test_validity_report import _run

NAN = float("nan")


def _run_with(folder, name, ids, judge_scores, experts, split, status=None):
    """A scored run (as ``_scored_run``) whose items have the ids and splits given."""
    status = status or ["ok"] * len(judge_scores)
    table = dataclasses.replace(_table(judge_scores, status, experts, split=split),
                                ids=np.array(ids, dtype=object))
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
    line = next(line for line in headline(result) if line.startswith("On the Standard test"))
    assert line.endswith("; b failed on 20 of 40, a on 0 of 40: paired on the 20 both scored")
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
            "hold; b: 0 of its 20).") in headline(_half_runs(tmp_path))


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


def test_an_item_table_without_the_columns_compare_pairs_on_is_refused_in_one_line(tmp_path):
    """items.parquet from another writer, without ``reference`` / ``vc_judge``: a ValueError naming the file and
    the columns, with the command that writes the run anew (it was a KeyError traceback)."""
    from eval.scoring.compare import compare

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS)
    table, _ = item_table.read_table(b / "items.parquet")
    item_table.write_table(table, b / "items.parquet", extra={})
    with pytest.raises(ValueError) as err:
        compare([a, b], n_boot=50)
    message = str(err.value)
    assert f"{b / 'items.parquet'}: no column reference, vc_judge" in message
    assert "score the run again" in message and "\n" not in message


def test_an_item_table_with_a_repeated_id_is_refused_naming_it(tmp_path):
    """An items.parquet with its first rows appended again (another tool's concatenation): refused, naming the file
    and the first repeated id (it was an IndexError, or silently wrong pairs)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from eval.scoring.compare import compare

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS)
    arrow = pq.read_table(b / "items.parquet")
    pq.write_table(pa.concat_tables([arrow, arrow.slice(0, 5)]), b / "items.parquet")
    with pytest.raises(ValueError, match=r"items\.parquet: id 'i0' appears more than once"):
        compare([a, b], n_boot=50)


def test_the_missing_file_of_a_run_is_named_alone(tmp_path):
    from eval.scoring.compare import load_run

    run = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    (run / "items.parquet").unlink()
    with pytest.raises(FileNotFoundError) as err:
        load_run(run)
    assert f"{run}: no items.parquet; score the run first" in str(err.value)
    assert "metrics.json" not in str(err.value)


def test_a_baseline_without_a_validity_section_is_said_in_place_of_the_paired_validity(tmp_path):
    """A baseline whose metrics.json predates the validity section: compare.md and compare.html say why the paired
    validity is absent, and what to do."""
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare, render_markdown

    result = compare([_scored_run(tmp_path / "A", "a", JUDGE, EXPERTS),
                      _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS)], n_boot=50)
    said = "the baseline's metrics.json has no validity section (written before it existed); score it again"
    assert said in render_markdown(result)
    assert said.replace("'", "&#x27;") in render_compare_page(result, None)


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    """Two runs scored by ``judge-eval score`` on the bundled sample (with their validity sections)."""
    root = tmp_path_factory.mktemp("review-fixes")
    records, data = judge.load_records(judge.sample_data_path()), judge.sample_data_path()
    _run(root, "exact", records, 0, data)
    _run(root, "lenient", records, 1, data)
    return root


def test_the_paired_validity_states_the_resamples_it_drew(sample_runs, tmp_path, monkeypatch):
    """The paired validity draws at most ``PAIRED_BOOT`` resamples whatever --n-boot: its lead says how many it
    drew, not the --n-boot compare.md's note states for the rest."""
    import eval.validity.paired as paired

    monkeypatch.setattr(paired, "PAIRED_BOOT", 12)
    assert main(["compare", str(sample_runs / "exact"), str(sample_runs / "lenient"), "--out", str(tmp_path / "c"),
                 "--n-boot", "20"]) == 0
    text = (tmp_path / "c" / "compare.md").read_text(encoding="utf-8")
    lead = text.split("## Validity, paired", 1)[1].strip().splitlines()[0]
    assert "a paired bootstrap interval over items (12 resamples" in lead


def test_compare_and_score_write_their_files_whole(sample_runs, tmp_path, monkeypatch):
    """metrics.json, report.md, report.html, compare.md and compare.html go through ``write_atomically`` (a kill
    mid-write leaves the earlier file, never a cut one)."""
    import eval.cli
    import eval.reports.html_report
    import eval.scoring.score
    from judge.plumbing.atomic_write import write_atomically

    written = []

    def recording(path, content, **kwargs):
        written.append(path.name)
        return write_atomically(path, content, **kwargs)

    for module in (eval.cli, eval.reports.html_report, eval.scoring.score):
        monkeypatch.setattr(module, "write_atomically", recording)
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text((sample_runs / "exact" / "predictions.jsonl").read_text(encoding="utf-8"),
                                           encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--n-boot", "0"]) == 0
    assert {"metrics.json", "report.md", "report.html"} <= set(written)
    assert main(["compare", str(sample_runs / "exact"), str(run), "--out", str(tmp_path / "c"), "--n-boot", "0"]) == 0
    assert {"compare.json", "compare.md", "compare.html"} <= set(written)


def test_unreadable_data_and_predictions_leave_a_note_on_the_pages(tmp_path):
    """The data and the predictions a run's metrics.json names were since replaced by a file that is not JSON: the
    pages are written without their texts, saying the file is unreadable and why, as for a missing one (compare
    stopped after writing compare.json and compare.md)."""
    from eval.reports.html_report import write_compare_page, write_report_page
    from eval.scoring.compare import compare

    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n", encoding="utf-8")
    runs = [_scored_run(tmp_path / name, name, JUDGE, EXPERTS) for name in ("a", "b")]
    for run in runs:
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        metrics.update(data=str(garbage), predictions=str(garbage))
        (run / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")

    page = write_report_page(runs[0]).read_text(encoding="utf-8")
    assert f"Unreadable: the labelled data ({garbage}: " in page
    assert f"Unreadable: the predictions ({garbage}: " in page
    page = write_compare_page(compare(runs, n_boot=50), tmp_path / "cmp").read_text(encoding="utf-8")
    assert f"Unreadable: the labelled data ({garbage}: " in page
    assert f"Unreadable: the predictions of b ({garbage}: " in page


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda ids: [ids[0]] * len(ids), r"id 'e\d+' given twice"),  # one expert compared with itself
    (lambda ids: ids[:-1], r"\d+ ids for \d+ expert scores"),
    (lambda ids: [None] + ids[1:], "some ids are null and others are not"),
])
def test_an_item_table_whose_expert_ids_do_not_pair_with_its_scores_is_refused_naming_the_row(tmp_path, edit,
                                                                                               problem):
    """The sample scored (its records name their experts), then row 3's ``expert_ids`` edited as another tool might:
    read_table refuses it naming the file, the row and the column, before any validity figure pairs an expert with
    itself (or numpy fails to broadcast without naming anything)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = judge.load_records(judge.sample_data_path())
    _run(tmp_path, "run", records, 0, judge.sample_data_path())
    path = tmp_path / "run" / "items.parquet"
    item_table.read_table(path)  # as score wrote it: read
    arrow = pq.read_table(path)
    ids = arrow.column("expert_ids").to_pylist()
    assert len(ids[3]) >= 2 and all(ids[3])
    ids[3] = edit([f"e{n}" for n in range(len(ids[3]))])
    at = arrow.schema.get_field_index("expert_ids")
    pq.write_table(arrow.set_column(at, "expert_ids", pa.array(ids, type=arrow.schema.field(at).type)), path)
    with pytest.raises(ValueError, match=rf"items\.parquet: row 3 \(id '[^']+'\): column expert_ids: {problem}"):
        item_table.read_table(path)


def test_compare_reads_an_unreadable_item_scale_as_the_section_does():
    """items.parquet keeps each item's scale; where one is unreadable (NaN: a rubric without levels) the section
    takes the span of its criterion's expert scores, here 0-1 (items 0-2 on 0-1, item 3 unreadable). compare read
    the NaN as it was, so a failure there cost the judge the whole split's span in the paired ceiling gap: now
    both read 0 and 1 for item 3."""
    from eval.scoring.compare import _scale_ends
    from eval.validity.section import item_scale_ends

    table = dataclasses.replace(_table([1.0, 0.0, 1.0, NAN], ["ok", "ok", "ok", "failed"],
                                       [[1, 1], [0, 0], [1, 0], [1, 1]]),
                                scale_low=np.array([0.0, 0.0, 0.0, NAN]), scale_high=np.array([1.0, 1.0, 1.0, NAN]))
    low, high = _scale_ends(table, np.arange(4), None)
    assert (low[3], high[3]) == (0.0, 1.0)
    assert np.array_equal(low, item_scale_ends(table)[0]) and np.array_equal(high, item_scale_ends(table)[1])

"""The item tables ``judge-eval compare`` pairs runs on: one without the columns compare pairs on, with a repeated id,
or whose expert ids do not pair with its scores is refused naming the file; a run's missing file is named alone; an
item's unreadable scale is read as the validity section reads it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import judge
from eval.scoring import item_table
from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run
from tests.unit.test_eval_metrics import _table
from tests.unit.test_validity_report import _run

NAN = float("nan")


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
    # no run.json to read the data from: the command shown names --data, which score would otherwise ask for
    assert str(err.value).endswith(f"judge-eval score --predictions {run} --data <the data it was judged on> "
                                   f"--out {run}")
    (run / "run.json").write_text("{}", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=rf"judge-eval score --predictions {run} --out {run}$"):
        load_run(run)


def test_a_compare_folder_given_as_a_run_is_named_as_one(tmp_path):
    """`judge-eval compare A B --out C`, then C given as a run: "score the run first" sent the user to score it."""
    from eval.scoring.compare import load_run

    folder = tmp_path / "cmp"
    folder.mkdir()
    (folder / "compare.json").write_text("{}", encoding="utf-8")
    with pytest.raises(FileNotFoundError) as err:
        load_run(folder)
    assert str(err.value) == (f"{folder}: a folder `judge-eval compare` wrote (compare.json), not a scored run; give "
                              "the runs it compared, each a folder `judge-eval score` wrote")


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
    with pytest.raises(ValueError, match=rf"items\.parquet: row index 3 \(id '[^']+'\): column expert_ids: {problem}"):
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
    (low, high), _ = _scale_ends(table, np.arange(4), None)
    assert (low[3], high[3]) == (0.0, 1.0)
    assert np.array_equal(low, item_scale_ends(table)[0]) and np.array_equal(high, item_scale_ends(table)[1])


@pytest.mark.parametrize("column, value, said", [
    ("status", "parse_failed",
     "column judge_score: row index 3 (id 'i3'): 1.0 is a score in a row whose status is 'parse_failed' (not scored)"),
    ("status", "skipped", "column status: row index 3 (id 'i3'): 'skipped' is not one of ok, parse_failed, "
                          "request_failed, missing"),
])
def test_a_status_that_does_not_say_what_its_score_is_is_refused_naming_the_row(tmp_path, column, value, said):
    """An items.parquet whose row 3 was marked parse_failed by hand, its score kept: compare paired that score as
    the judge's (exit 0, as many pairs as before); a status score never writes ("skipped") was read as a
    non-ok one. Both refused in one line naming the file, the column, the row and its id."""
    a, b, message = _compared_with_row_3_edited(tmp_path, column, value)
    assert message.startswith(f"{b / 'items.parquet'}: {said}; ") and "\n" not in message
    assert message.endswith(f"score the run again: judge-eval score --predictions {b} --out {b}")


def _compared_with_row_3_edited(tmp_path, column: str, value) -> tuple:
    """Two scored runs A and B, B's items.parquet with row 3's ``column`` set to ``value`` (a column the table lacks
    added first as the integers 0, 1, ...), compared: (A, B, compare's refusal)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from eval.scoring.compare import compare

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS)
    arrow = pq.read_table(b / "items.parquet")
    if column not in arrow.column_names:
        arrow = arrow.append_column(column, pa.array(range(arrow.num_rows), type=pa.int64()))
    values = arrow.column(column).to_pylist()
    values[3] = value
    at = arrow.schema.get_field_index(column)
    pq.write_table(arrow.set_column(at, column, pa.array(values, type=arrow.schema.field(column).type)),
                   b / "items.parquet")
    with pytest.raises(ValueError) as info:
        compare([a, b], n_boot=50)
    return a, b, str(info.value)


@pytest.mark.parametrize("column, value, said", [
    ("n_abstained", None, "column n_abstained: null (an integer expected)"),
    ("instruction_key", None, "column instruction_key: null (an integer expected)"),
    ("split", "Standard", "column split: 'Standard' is not one of zero_shot, standard, unknown"),
    ("split", None, "column split: None is not one of zero_shot, standard, unknown"),
])
def test_a_null_integer_or_an_unknown_split_is_refused_naming_the_row(tmp_path, column, value, said):
    """An items.parquet edited by another tool: a null ``n_abstained`` or ``instruction_key`` passed the type check
    and failed in numpy (a TypeError traceback out of compare), and a ``Standard`` put its item in no test (compare
    said the runs share no scored items). Each refused in one line naming the file, the row, its id and the
    column, and the command that writes the run anew."""
    from eval.cli import main as eval_main

    a, b, message = _compared_with_row_3_edited(tmp_path, column, value)
    assert message.startswith(f"{b / 'items.parquet'}: row index 3 (id 'i3'): {said} (not an items.parquet")
    assert "\n" not in message and message.endswith(f"judge-eval score --predictions {b} --out {b}")
    assert eval_main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--n-boot", "50"]) == 2

"""items.parquet's expert scores and paired columns as read back: a null row, a null / NaN / infinite score, or an
infinite reference is refused naming the file, the row, its id and the column; and the judge's Verdict Confidence
refuses a score matrix whose NaN padding is not after the scores."""

from __future__ import annotations

import numpy as np
import pytest

from eval.scoring import item_table, metrics

NAN = float("nan")


def _write(tmp_path, experts_column, extra=None):
    """A three-item table as score writes it, then its expert_scores column replaced as another tool might."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 3
    table = item_table.ItemTable(
        ids=np.array(["a", "b", "c"], dtype=object), judge=np.array([1.0, 0.0, 2.0]),
        status=np.array(["ok"] * n, dtype=object), error=np.array([""] * n, dtype=object),
        score_source=np.array(["verdict"] * n, dtype=object), experts=metrics.pad_scores([[1, 1], [0, 0], [2, 2]]),
        split=np.array(["standard"] * n, dtype=object), model_id=np.array(["m"] * n, dtype=object),
        task_type=np.array(["t"] * n, dtype=object), task_group=np.array(["g"] * n, dtype=object),
        criteria_name=np.array(["c"] * n, dtype=object), judge_name="hand")
    path = tmp_path / "items.parquet"
    item_table.write_table(table, path, extra=extra)
    arrow = pq.read_table(path)
    at = arrow.schema.get_field_index("expert_scores")
    arrow = arrow.set_column(at, "expert_scores", pa.array(experts_column, type=pa.list_(pa.float64())))
    pq.write_table(arrow, path)
    return path


def test_a_table_as_score_writes_it_reads_back(tmp_path):
    """The control: the same writer, scores left as they were, one empty list (an unlabelled item), reads back."""
    path = _write(tmp_path, [[1.0, 1.0], [], [2.0, 2.0]], extra={"reference": np.array([1.0, NAN, 2.0])})
    table, extra = item_table.read_table(path)
    np.testing.assert_array_equal(table.experts, [[1, 1], [NAN, NAN], [2, 2]])
    np.testing.assert_array_equal(extra["reference"], [1.0, NAN, 2.0])


@pytest.mark.parametrize(("column", "said"), [
    ([None, [0.0, 0.0], [2.0, 2.0]], "row index 0 (id 'a'): column expert_scores: null"),
    ([[0.0, None], [0.0, 0.0], [2.0, 2.0]], "row index 0 (id 'a'): column expert_scores: score 1 is null or NaN"),
    ([[None, 0.0, 2.0], [0.0, 0.0], [2.0, 2.0]],
     "row index 0 (id 'a'): column expert_scores: score 0 is null or NaN"),
    ([[1.0, 1.0], [0.0, NAN], [2.0, 2.0]], "row index 1 (id 'b'): column expert_scores: score 1 is null or NaN"),
    ([[1.0, 1.0], [0.0, 0.0], [2.0, float("inf")]],
     "row index 2 (id 'c'): column expert_scores: score 1 is inf"),
    # two problems: the first row is named, whichever kind it is
    ([[1.0, 1.0], None, [float("-inf")]], "row index 1 (id 'b'): column expert_scores: null"),
])
def test_a_missing_or_infinite_expert_score_is_refused_naming_the_row_and_column(tmp_path, column, said):
    path = _write(tmp_path, column)
    with pytest.raises(ValueError) as err:
        item_table.read_table(path)
    assert str(err.value).startswith(f"{path}: {said}")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["reference", "spearman_reference", "vc_judge"])
def test_an_infinite_paired_column_is_refused_naming_it(tmp_path, name):
    path = _write(tmp_path, [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]],
                  extra={name: np.array([1.0, NAN, float("inf")])})
    with pytest.raises(ValueError) as err:
        item_table.read_table(path)
    assert str(err.value).startswith(f"{path}: row index 2 (id 'c'): column {name}: infinite")


def test_judge_verdict_confidence_refuses_nan_before_a_score():
    """[nan, 0, 2] would draw its padding position: the matrix is refused naming row 0, not averaged wrongly."""
    with pytest.raises(ValueError, match="experts: row 0 has a NaN before a score"):
        metrics.verdict_confidence_judge(np.array([[NAN, 0, 2], [0, 2, NAN]]), np.array([0.0, 0.0]))
    with pytest.raises(ValueError, match="experts: row 1 has a NaN before a score"):
        metrics.verdict_confidence_judge(np.array([[0, 2, NAN], [0, NAN, 2]]), np.array([0.0, 0.0]))


def test_compare_refuses_a_null_expert_scores_row_in_one_line_exit_2(tmp_path, capsys):
    """The case that stopped compare in a TypeError traceback (exit 1): B's row 0 set to null by another tool."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from eval.cli import main
    from tests.unit.test_compare_reference_and_counts import EXPERTS, JUDGE, _scored_run

    a = _scored_run(tmp_path / "A", "a", JUDGE, EXPERTS, n_boot=0)
    b = _scored_run(tmp_path / "B", "b", JUDGE, EXPERTS, n_boot=0)
    arrow = pq.read_table(b / "items.parquet")
    at = arrow.schema.get_field_index("expert_scores")
    scores = arrow.column("expert_scores").to_pylist()
    scores[0] = None
    pq.write_table(arrow.set_column(at, "expert_scores", pa.array(scores, type=arrow.schema.field(at).type)),
                   b / "items.parquet")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--n-boot", "0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"judge-eval compare: error: {b / 'items.parquet'}: row index 0 (id 'i0'): column "
                          "expert_scores: null")
    assert not (tmp_path / "cmp").exists()

"""The typed metrics.json (judge.metrics_json.metrics): what `score` writes reads back to the same bytes, older and newer
files read, and the readers see attributes."""

from __future__ import annotations

import json
import math

import pytest

import judge
from eval.reports.report import render_markdown
from eval.scoring import item_table
from judge.metrics_json.metrics import Cell, Metrics
from eval.scoring.score import score


def _predictions(path, records, regression_every: int = 0):
    """One prediction per record: a verdict scoring the record's first expert (a parse failure every 7th item, a
    regression head's raw value every ``regression_every``-th)."""
    with path.open("w", encoding="utf-8") as handle:
        for i, r in enumerate(records):
            value = float(r.expert_scores[0]) if r.expert_scores else 1.0
            ok = i % 7 != 3
            head = bool(regression_every) and i % regression_every == 0 and ok
            handle.write(json.dumps({
                "id": r.id, "judge": "hand", "raw_output": f"[FEEDBACK] x [RESULT] {value:g} [END]" if ok else "?",
                "feedback": "x", "score": value if ok else None, "parse_ok": ok, "error": None if ok else "no_result",
                "score_source": "regression_head" if head else "verdict", "in_scale": True if ok else None,
                "regression_score": value + 0.25 if head else None, "latency_s": 0.0,
            }, ensure_ascii=False) + "\n")
    return path


@pytest.mark.parametrize("spearman_target,regression_every", [("auto", 0), ("mean", 5)])
def test_written_metrics_read_back_to_the_same_bytes(tmp_path, spearman_target, regression_every):
    """score's metrics.json, read into Metrics and written again, is the same bytes (the correlations' own
    reference, written after the in-scale MAE, and the regression notes included); attributes are the file's
    values."""
    data = judge.sample_data_path()
    records = judge.load_records(data)
    preds = _predictions(tmp_path / "predictions.jsonl", records, regression_every)
    result = score(preds, data, tmp_path / "out", n_boot=20, vc_repeats=5, spearman_target=spearman_target)
    text = (tmp_path / "out" / "metrics.json").read_text(encoding="utf-8")
    raw = json.loads(text)
    assert item_table.dumps(Metrics.from_json(raw)) + "\n" == text
    assert item_table.dumps(result) + "\n" == text  # what score returns is the file
    overall = raw["splits"]["all"]["overall"]
    assert result.splits["all"].overall.n_scored == overall["n_scored"]
    assert result.splits["all"].overall.mae == pytest.approx(overall["mae"])
    assert list(result.splits["all"].overall.to_json()) == list(overall)  # key order, optional keys included
    assert (result.splits["all"].overall.n_spearman is not None) == (spearman_target == "mean")
    # The resamples the Spearman interval is over, on whichever reference it has (20 drawn, each defined here).
    assert overall["spearman_n_resamples"] == result.splits["all"].overall.spearman_n_resamples == 20
    assert (result.notes.n_regression_scores or 0) == (raw["notes"].get("n_regression_scores") or 0)
    if regression_every:  # a head's scores (some or all): POLLUX's evaluator computes nothing, none written
        assert result.pollux_official is None and "pollux_official" not in raw
    else:
        assert result.pollux_official.splits["all"].n == raw["pollux_official"]["splits"]["all"]["n"]


def test_an_older_cell_reads_with_its_missing_counts_as_none():
    """A cell written before n_out_of_scale, n_vc and the in-scale figures existed reads; those are None, written
    back they stay absent, and the report shows the VC and "0" out of scale as it did."""
    old = {"n": 4, "n_missing": 0, "n_failed": 1, "failure_rate": 0.25, "n_no_unique_mode": 0, "n_scored": 3,
           "mae": 0.5, "mae_ci": [None, None], "spearman": None, "spearman_ci": [None, None], "pearson": None,
           "kendall": None, "vc_judge": 0.75, "vc_experts": 0.8}
    cell = Cell.from_json(old)
    assert cell.n_out_of_scale is None and cell.n_vc is None and cell.mae_in_scale is None
    assert math.isnan(cell.mae_ci[0]) and math.isnan(cell.spearman)
    assert list(cell.to_json()) == list(old)
    metrics = Metrics.from_json({
        "judge": "old", "target": "mode", "settings": {"n_boot": 10, "seed": 0, "vc_repeats": 5, "ci_level": 0.95},
        "levels": [0.0, 1.0],
        "splits": {"all": {"overall": old, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {}}},
    })
    row = next(line for line in render_markdown(metrics).splitlines() if line.startswith("| Zero-Shot + Standard"))
    cells = [c.strip() for c in row.split("|")]
    assert "0.750" in cells and "0.800" in cells and "0" in cells


def test_keys_of_a_later_version_are_kept_and_written_back():
    """A cell, split or file key this version does not know is kept (``extra``) and written after the known ones."""
    cell = {"n": 1, "n_failed": 0, "n_no_unique_mode": 0, "mae": 0.0, "mae_ci": [0.0, 0.0], "n_new_count": 3}
    raw = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95},
           "levels": [], "splits": {"all": {"overall": cell, "by_model": {}, "by_task_type": {}, "by_criterion": {},
                                            "failures": {}, "new_table": {"a": 1}}},
           "new_section": [1, 2]}
    metrics = Metrics.from_json(raw)
    assert metrics.splits["all"].overall.extra == {"n_new_count": 3}
    assert metrics.splits["all"].extra == {"new_table": {"a": 1}} and metrics.extra == {"new_section": [1, 2]}
    written = metrics.to_json()
    assert written["splits"]["all"]["overall"] == cell and written["new_section"] == [1, 2]
    assert list(written)[-1] == "new_section"


def test_a_value_of_the_wrong_kind_is_refused_naming_its_type_and_field():
    """A table that is a number, or a number that is a string, is a ValueError naming the record and the field
    (never an AttributeError from deep in the reader); a file that is no object says what it should be."""
    from judge.metrics_json.json_record import JsonRecordError

    cell = {"n": 1, "n_failed": 0, "n_no_unique_mode": 0, "mae": 0.0, "mae_ci": [0.0, 0.0]}
    raw = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95},
           "splits": {"all": {"overall": cell, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {}}}}
    assert Metrics.from_json(raw).splits["all"].overall.mae == 0.0
    with pytest.raises(JsonRecordError, match=r"^metrics.json: Metrics.splits is not readable \(expected an object, "
                                              r"got an integer 5\)$"):
        Metrics.from_json({**raw, "splits": 5})
    bad_cell = {**raw, "splits": {"all": {**raw["splits"]["all"], "overall": {**cell, "mae": "low"}}}}
    with pytest.raises(JsonRecordError, match=r"^metrics.json: Cell.mae is not readable \(expected a number, got a string 'low'\)$"):
        Metrics.from_json(bad_cell)
    with pytest.raises(JsonRecordError, match=r"^metrics.json: Cell.mae is not readable \(int too large"):
        Metrics.from_json({**raw, "splits": {"all": {**raw["splits"]["all"], "overall": {**cell, "mae": 10**400}}}})
    with pytest.raises(JsonRecordError, match=r"^metrics.json: Metrics should be a JSON object, not a list$"):
        Metrics.from_json([])


def test_a_refusal_keeps_the_path_of_the_value_at_fault():
    """The record type and field alone (``Cell.mae``) leave open which of a file's many cells is bad: each record read
    adds its field, a table its label and a list its index, so a caller naming the file can name the value too. The
    message stays as it was; the error survives pickling whole."""
    import pickle
    from dataclasses import dataclass

    from judge.metrics_json.json_record import JsonRecord, JsonRecordError, keyed, listed, read_record

    @dataclass(frozen=True)
    class Leaf(JsonRecord):
        x: float

    @dataclass(frozen=True)
    class Root(JsonRecord):
        rows: list
        table: dict

        @classmethod
        def from_json(cls, data):
            read = lambda row: read_record(Leaf, row, where="f.json", by_type={"float": float})  # noqa: E731
            return read_record(cls, data, where="f.json", rows=listed(read), table=keyed(read))

    assert Root.from_json({"rows": [{"x": 1}], "table": {"a": {"x": 2}}}) == Root([Leaf(1.0)], {"a": Leaf(2.0)})
    with pytest.raises(JsonRecordError) as err:
        Root.from_json({"rows": [{"x": 1}, {"x": "low"}], "table": {}})
    assert (err.value.field, err.value.where) == ("rows.1.x", "f.json")
    assert str(err.value) == err.value.where + ": " + err.value.problem == (
        "f.json: Leaf.x is not readable (could not convert string to float: 'low')")
    with pytest.raises(JsonRecordError) as err:
        Root.from_json({"rows": [], "table": {"a": {"x": 2}, "b": {}}})
    assert (err.value.field, str(err.value)) == ("table.b.x", "f.json: Leaf has no 'x'")
    again = pickle.loads(pickle.dumps(err.value))
    assert (type(again), str(again), again.field) == (JsonRecordError, str(err.value), "table.b.x")

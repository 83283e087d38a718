"""Regression (``-r``) judges are scored on the head's raw value by default, as the paper
scores them; clipping into the scale is an explicit option named in metrics.json and the report,
and the report counts the raw values outside the scale. Figures derived by hand below."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest

import judge
from eval.scoring import item_table
from eval.cli import main

# Two items on a 0-2 scale. Item a: experts [0, 0], the head's raw value -0.4 (judge-serve's score: clipped to 0).
# Item b: experts [2, 2], raw 2.6 (clipped to 2). The reference of a regression judge is the experts' mean: 0 and 2.
# Raw:     MAE = (|-0.4 - 0| + |2.6 - 2|) / 2 = (0.4 + 0.6) / 2 = 0.5;  clipped: (|0 - 0| + |2 - 2|) / 2 = 0.0.
# Both raw values lie outside 0..2: 2 out of scale, whichever value is scored.
RUBRIC = "0: плохо\n\n1: средне\n\n2: хорошо"
ROWS = [{"id": "a", "instruction": "i", "answer": "x", "criteria_name": "c", "rubrics": RUBRIC, "expert_scores": [0, 0],
         "model_id": "m", "task_type": "Editing"},
        {"id": "b", "instruction": "i", "answer": "y", "criteria_name": "c", "rubrics": RUBRIC, "expert_scores": [2, 2],
         "model_id": "m", "task_type": "Editing"}]
PREDICTIONS = [{"id": "a", "judge": "j-r", "score": 0.0, "parse_ok": True, "score_source": "regression_head",
                "regression_score": -0.4},
               {"id": "b", "judge": "j-r", "score": 2.0, "parse_ok": True, "score_source": "regression_head",
                "regression_score": 2.6}]


@pytest.mark.parametrize("clip, scores, mae", [(False, [-0.4, 2.6], 0.5), (True, [0.0, 2.0], 0.0)])
def test_the_head_is_scored_raw_by_default_and_clipped_only_when_asked(clip, scores, mae):
    """A worked example: raw -0.4 / 2.6 against experts [0, 0] / [2, 2]: MAE 0.5 raw, 0.0 clipped; both raw
    values counted outside the scale either way."""
    records = judge.records_from_rows(ROWS)
    table, notes = item_table.build_table(records, PREDICTIONS, clip_regression=clip)
    np.testing.assert_allclose(table.judge, scores)
    assert table.in_scale.tolist() == [0.0, 0.0]
    assert notes["n_regression_scores"] == 2 and notes["n_regression_out_of_scale"] == 2
    overall = item_table.evaluate(table, n_boot=0, vc_repeats=2).to_json()["splits"]["all"]["overall"]
    assert overall["mae"] == pytest.approx(mae) and overall["n_out_of_scale"] == 2


def test_head_rows_without_their_raw_value_are_counted_and_said():
    """A prediction row written before predictions kept the head's raw value has only judge-serve's clipped score:
    it is scored on that (raw or not, there is nothing else), counted apart (n_regression_without_raw: 1 here, item
    b), left out of the raw values' out-of-scale count, and the report says so."""
    from eval.reports.report import regression_note
    from judge.metrics_json.metrics import Metrics, Notes

    older = [PREDICTIONS[0], {k: v for k, v in PREDICTIONS[1].items() if k != "regression_score"}]
    table, notes = item_table.build_table(judge.records_from_rows(ROWS), older)
    np.testing.assert_allclose(table.judge, [-0.4, 2.0])
    assert (notes["n_regression_scores"], notes["n_regression_out_of_scale"], notes["n_regression_without_raw"]) == (1, 1, 1)
    result = Metrics.from_json({**item_table.evaluate(table, n_boot=0, vc_repeats=2).to_json(), "notes": notes})
    assert isinstance(result.notes, Notes)
    assert "1 head scores came without their raw value" in regression_note(result)


def test_score_names_the_choice_in_metrics_json_and_the_report(tmp_path):
    """``judge-eval score`` (default and ``--clip-regression``): metrics.json says ``regression_scores`` raw or
    clipped, one MAE per run (0.5 raw, 0.0 clipped), and report.md and report.html say how the head was scored and
    how many raw values fell outside the scale."""
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    for flag, setting, mae in (([], "raw", 0.5), (["--clip-regression"], "clipped", 0.0)):
        run = tmp_path / setting
        run.mkdir()
        (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in PREDICTIONS), encoding="utf-8")
        assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0", *flag]) == 0
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        assert metrics["settings"]["regression_scores"] == setting
        assert metrics["target"] == "mean"
        assert metrics["splits"]["all"]["overall"]["mae"] == pytest.approx(mae)
        assert metrics["notes"]["n_regression_out_of_scale"] == 2
        report = (run / "report.md").read_text(encoding="utf-8")
        page = html.unescape((run / "report.html").read_text(encoding="utf-8"))
        said = "clipped into the scale (--clip-regression" if setting == "clipped" else "the head's raw value"
        assert said in report.replace("`", "") and said in page
        assert "2 of the 2 raw values fell outside their scale" in report
        assert "2 of the 2 raw values fell outside their scale" in page

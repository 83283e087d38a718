"""What pairwise ``judge-eval score`` refuses before it scores: a row whose ``order`` is neither order
(``PairwiseRow.from_json`` names the field and line), one file holding two judges' rows (as ``judge-eval run``
refuses to resume under another judge), and an ``--out`` holding another run (as the pointwise ``score`` does)."""

from __future__ import annotations

import json

import pytest

from eval.cli import main
from eval.pairwise.judging import PairRecord, PairwiseRow
from eval.pairwise.metrics import score_pairwise

PAIR = {"id": "1", "instruction": "i", "answer_1": "a", "answer_2": "b", "rubrics": "r", "winner": -1}
KEY = PairRecord("1", "i", "a", "b", "r").content_key


def _row(order: str, score: float, judge: str = "j") -> dict:
    verdict = score if order == "original" else -score
    return {"id": "1", "order": order, "judge": judge, "raw_output": "x", "feedback": "", "score": score,
            "verdict": verdict, "parse_ok": True, "error": None, "reason": "", "latency_s": 0.1, "content_key": KEY}


def _run(tmp_path, rows: list[dict]):
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(PAIR) + "\n", encoding="utf-8")
    run = tmp_path / "pw"
    run.mkdir()
    (run / "pairwise_predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return run, data


def test_an_order_that_is_neither_is_refused_naming_the_field_and_line():
    row = {**_row("original", -1.0), "order": "Original"}
    with pytest.raises(ValueError, match=r"f: line 1\.order: .*'original' or 'swapped'.*'Original'"):
        PairwiseRow.from_json(row, "f: line 1")


def test_an_unparsed_row_with_an_unknown_order_is_refused_too():
    row = {**_row("original", -1.0), "order": "both", "parse_ok": False, "score": None, "verdict": None}
    with pytest.raises(ValueError, match=r"line 3\.order"):
        PairwiseRow.from_json(row, "line 3")


def test_one_file_of_two_judges_is_refused_naming_both(tmp_path):
    run, data = _run(tmp_path, [_row("original", -1.0, "judge-A"), _row("swapped", 1.0, "judge-B")])
    with pytest.raises(ValueError, match=r"holds predictions of \['judge-A', 'judge-B'\]"):
        score_pairwise(run, data, n_boot=0)
    assert not (run / "metrics.json").exists()


def test_an_out_holding_another_run_is_refused_and_left_as_it_was(tmp_path, capsys):
    run, data = _run(tmp_path, [_row("original", -1.0), _row("swapped", 1.0)])
    other = tmp_path / "other_run"
    other.mkdir()
    (other / "predictions.jsonl").write_text("{}\n", encoding="utf-8")
    (other / "metrics.json").write_text('{"judge": "another judge"}', encoding="utf-8")
    rc = main(["score", "--predictions", str(run), "--data", str(data), "--out", str(other), "--n-boot", "0"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"--out {other}: holds another run (its predictions.jsonl)" in err
    assert json.loads((other / "metrics.json").read_text(encoding="utf-8")) == {"judge": "another judge"}
    assert not (other / "pairwise_pairs.jsonl").exists()


def test_an_out_of_its_own_or_the_run_folder_itself_is_written(tmp_path):
    run, data = _run(tmp_path, [_row("original", -1.0), _row("swapped", 1.0)])
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0"]) == 0
    assert json.loads((run / "metrics.json").read_text(encoding="utf-8"))["kind"] == "pairwise"
    fresh = tmp_path / "fresh"
    assert main(["score", "--predictions", str(run), "--data", str(data), "--out", str(fresh), "--n-boot", "0"]) == 0
    assert (fresh / "metrics.json").exists()


def test_an_out_holding_only_another_judges_pairwise_predictions_is_refused(tmp_path):
    """A pairwise run scored with ``--data`` needs no run.json, so its pairwise_predictions.jsonl alone marks the
    folder as a run: scoring into it would replace that judge's metrics.json with this one's."""
    run, data = _run(tmp_path, [_row("original", -1.0), _row("swapped", 1.0)])
    other = tmp_path / "other_run"
    other.mkdir()
    (other / "pairwise_predictions.jsonl").write_text(json.dumps(_row("original", 1.0, "judge-B")) + "\n",
                                                      encoding="utf-8")
    (other / "metrics.json").write_text('{"judge": "judge-B"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"holds another run \(its pairwise_predictions\.jsonl\)"):
        score_pairwise(run, data, out=other, n_boot=0)
    assert json.loads((other / "metrics.json").read_text(encoding="utf-8")) == {"judge": "judge-B"}


def test_a_win_label_on_two_same_answers_is_counted_and_left_out_when_scoring_verdicts_already_asked(tmp_path):
    """judge-eval run refuses such a label before asking; a run asked before it did holds verdicts worth scoring:
    score reads the pair as unlabelled (its judgments still count for tie rate and position consistency), counts
    the label in metrics.json and says so in the report, rather than refusing the whole run."""
    same = {**PAIR, "answer_2": PAIR["answer_1"]}
    key = PairRecord("1", "i", "a", "a", "r").content_key
    run, data = _run(tmp_path, [{**_row("original", 0.0), "content_key": key},
                                {**_row("swapped", 0.0), "content_key": key}])
    data.write_text(json.dumps(same) + "\n", encoding="utf-8")
    metrics = score_pairwise(run, data, n_boot=0)
    assert (metrics["n_win_labels_on_same_answers"], metrics["n_labelled"], metrics["n_parsed"]) == (1, 0, 2)
    assert json.loads((run / "metrics.json").read_text(encoding="utf-8"))["n_win_labels_on_same_answers"] == 1
    assert "1 pairs are labelled a win though their two answers are the same text" in (run / "report.md").read_text(
        encoding="utf-8")

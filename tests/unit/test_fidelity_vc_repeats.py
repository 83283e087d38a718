"""The judge's Verdict Confidence draws its random expert replacement 100 times per instance (arXiv 2505.24616v3,
Appendix D.2.2: "This procedure was repeated 100 times per instance"): every default on the way from the
command line to the draws is pinned here, and so is what `judge-eval score` writes when no --vc-repeats is given."""

from __future__ import annotations

import inspect
import json

import pytest

import judge
from eval.cli import build_parser, main
from eval.scoring import item_table, metrics, score

PAPER_REPEATS = 100  # Appendix D.2.2


@pytest.mark.parametrize("function,parameter", [
    (metrics.verdict_confidence_judge, "repeats"),  # the draws themselves
    (item_table.derive, "vc_repeats"),
    (item_table.evaluate, "vc_repeats"),
    (score.score, "vc_repeats"),
], ids=["metrics.verdict_confidence_judge", "item_table.derive", "item_table.evaluate", "score.score"])
def test_every_functions_default_is_the_papers_100_repeats(function, parameter):
    assert inspect.signature(function).parameters[parameter].default == PAPER_REPEATS


def test_the_score_commands_default_is_the_papers_100_repeats():
    args = build_parser().parse_args(["score", "--predictions", "runs/x"])
    assert args.vc_repeats == PAPER_REPEATS


def test_score_without_vc_repeats_writes_100_to_metrics_json(tmp_path):
    """`judge-eval score` with no --vc-repeats on a few sample items: metrics.json's settings say 100."""
    data = judge.sample_data_path()
    records = judge.load_records(data)[:12]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(
        {"id": r.id, "judge": "j", "raw_output": f"[FEEDBACK] x [RESULT] {r.expert_scores[0]:g} [END]",
         "feedback": "x", "score": float(r.expert_scores[0]), "parse_ok": True, "error": None,
         "score_source": "verdict", "in_scale": True, "regression_score": None, "latency_s": 0.0},
        ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    assert main(["score", "--predictions", str(path), "--data", str(data), "--out", str(tmp_path / "out"),
                 "--n-boot", "0", "--no-plots"]) == 0
    written = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert written["settings"]["vc_repeats"] == PAPER_REPEATS

"""The released POLLUX artefacts end to end: the benchmark's Parquet shards, as the hub lays them out,

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_serve_released_data.py.
"""

from __future__ import annotations


import judge
from eval.judging.predictions import read_predictions
from tests.support.release_artifacts import (
    assert_paper_and_pollux_figures,
    judge_and_score,
)


def test_released_data_judged_by_a_seq2seq_judge_and_scored(seq2seq_server, released_data, tmp_path, monkeypatch):
    """Seq2seq layout: every verdict is read from the text; the paper's metrics and POLLUX's evaluator agree on what
    parsed (POLLUX extracts the first [RESULT] n from the same outputs)."""
    metrics = judge_and_score(seq2seq_server, released_data, tmp_path / "seq2seq", monkeypatch)
    official = assert_paper_and_pollux_figures(metrics)
    rows = read_predictions(tmp_path / "seq2seq")
    comparable = {r.id for r in judge.load_records(released_data) if r.criteria_score is not None or r.expert_scores}
    assert official["n_parsed"] == sum(1 for r in rows if r["parse_ok"] and r["id"] in comparable)

"""The released POLLUX artefacts end to end: the benchmark's Parquet shards, as the hub lays them out,
are judged by served tiny judges in the released layouts and scored with the paper's metrics and POLLUX's own.

Nothing here is downloaded: ``tests/support/release_artifacts.py`` rebuilds the dataset (``ai-forever/POLLUX``: three shards
under ``data/``, the released column names and Arrow types, ``annotations`` with ``-1`` abstentions, no ``id``) and
``tests/support/tiny_released.py`` the ``-r`` judge (``Qwen2WithRegressionHead``, a ``regression_head`` with a bias, sharded
safetensors). The ``-r`` judge, served under its hub id from an offline hub cache, judges the same data in
``tests/integration/serving/test_released_judges.py`` (the module that owns its server) and the Qwen3 layout (``Pollux-4B-Judge``) in
``tests/integration/training/test_qwen3_judge.py``, all through ``tests.support.release_artifacts.judge_and_score``. (This file sorts after
``test_released_judges.py`` on purpose: the -r server's engines stop before the session's judge-serve engines start.)
The conversion of the shards to JSONL is tests/unit/test_serve_released_data.py.
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

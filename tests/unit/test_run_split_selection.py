"""`judge-eval run --split`: a split that selects none of the data's records says so.

A Standard-only file run with ``--split zero_shot`` judged nothing, wrote an empty predictions.jsonl and exited 0
without a word. It still exits 0 (a Slurm shard of one split's rows may hold none of the other's, and its array task
must not fail), but with a warning naming the split and how many records were read, and no request is sent. The
server is a scripted stand-in (``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import logging

import judge
from eval.cli import main
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat


def test_a_split_with_none_of_the_records_is_said(tmp_path, caplog):
    standard = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "standard"][:4]
    data = judge.write_jsonl(standard, tmp_path / "standard.jsonl")
    with ScriptedEndpoint(vllm_chat("[FEEDBACK] ok [RESULT] 1 [END]")) as server:
        with caplog.at_level(logging.WARNING, logger="judge_eval.run"):
            assert main(run_args(server.base_url, data, tmp_path / "zero", "--split", "zero_shot")) == 0
        assert server.requests == [] and server.gets == []
        said = [r.getMessage() for r in caplog.records if r.name == "judge_eval.run" and r.levelno == logging.WARNING]
        assert said == [f"split: none of the 4 records of {data} is in the zero_shot test (judge.split_of): nothing "
                        "to judge; --split all judges them"]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="judge_eval.run"):
            assert main(run_args(server.base_url, data, tmp_path / "standard", "--split", "standard")) == 0
        assert len(server.bodies("/v1/chat/completions")) == 4
        assert not [r for r in caplog.records if r.name == "judge_eval.run" and r.levelno == logging.WARNING]


def test_the_run_and_score_select_by_one_rule():
    """The records of the split in the data's order, then the first --limit of them: the rule the run judges by and
    `judge-eval score` reads a run's selection back by (eval.judging.run_settings.selected_positions)."""
    from eval.judging.run_settings import selected_positions

    splits = ["standard", "zero_shot", "standard", "unknown", "standard"]
    assert selected_positions(splits, "standard", 2) == [0, 2]
    assert selected_positions(splits, "standard", 0) == [0, 2, 4]
    assert selected_positions(splits, "all", 4) == [0, 1, 2, 3]
    assert selected_positions(splits, "zero_shot", 5) == [1]
    assert selected_positions([], "all", 3) == []

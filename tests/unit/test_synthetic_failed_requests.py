"""A synthetic stage whose requests failed says so at the end, and how to recover, counting every stage's failures."""

from __future__ import annotations

import json

from tests.support.scripted_endpoint import ScriptedEndpoint

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"


def test_a_stage_whose_requests_failed_says_so_and_how_to_recover(tmp_path, capsys):
    """Exit 0 (the help's code for a finished stage) with every request failed looked like a finished run: the
    stage now says how many requests failed and that a rerun asks them again."""
    from train.synthetic.cli import main

    record = {"id": "A", "instruction": "Исправьте: «раз»", "answer": "раз", "expert_scores": [2],
              "reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
    inputs = tmp_path / "records.jsonl"
    inputs.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    with ScriptedEndpoint(lambda path, body: (500, {"error": {"message": "down"}}), model="teacher") as server:
        config = tmp_path / "traces.yaml"
        config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": server.base_url, "max_tokens": 64},
                                      "samples_per_item": 3, "concurrency": 2, "max_retries": 0, "backoff_s": 0.0}))
        code = main(["traces", "--config", str(config), "--input", str(inputs), "--output", str(tmp_path / "out")])
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: 3 requests failed" in err and "rerun with the same --output" in err
    # which endpoint never answered: the warning named none (the URL stood only in the config echo above it)
    assert f"requests failed (the endpoint never answered them: teacher at {server.base_url}; see" in err


def test_requests_failed_counts_every_stage_s_failures():
    from train.synthetic.cli import requests_failed

    assert requests_failed({"dropped_by_reason": {"request_failed": 2, "empty_answer": 1}}) == 2
    assert requests_failed({"dropped_by_reason": {}, "failed_by_reason": {"request_failed": 4}}) == 4
    assert requests_failed({"dropped_by_reason": {}, "llm_check_failed_requests": 1}) == 1
    assert requests_failed({"dropped_by_reason": {"near_duplicate:llm": 1}}) == 0

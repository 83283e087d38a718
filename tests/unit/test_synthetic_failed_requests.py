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


ASKED = "teacher at http://t:8000/v1"


def test_the_warning_says_the_requests_not_sent_apart_from_those_sent_and_never_answered():
    """requests_not_sent counts requests, one per job, each of them among the failed jobs: said apart, not twice."""
    from train.synthetic.cli import unanswered_warning

    assert unanswered_warning({"failed_by_reason": {"request_failed": 0}}, ASKED) is None
    assert unanswered_warning({"failed_by_reason": {"request_failed": 3}}, ASKED) == (
        f"3 requests failed (the endpoint never answered them: {ASKED}; see failed/dropped rows' errors)")
    assert unanswered_warning({"dropped_by_reason": {"request_failed": 44}, "requests_not_sent": 41}, ASKED) == (
        f"3 requests failed (the endpoint never answered them: {ASKED}; see failed/dropped rows' errors) and 41 were "
        "not sent (their endpoint was stopped first: the error below says why)")
    assert unanswered_warning({"llm_check_failed_requests": 1, "requests_not_sent": 1}, ASKED) == (
        "1 request was not sent (their endpoint was stopped first: the error below says why)")


def test_counts_that_do_not_nest_are_both_said_not_cut_to_fit():
    """More requests not sent than failed jobs breaks the rule the warning rests on (a request not sent fails its
    job): min() said "2 were not sent" of 5 and nothing of the other 3. Both counts are said as they stand."""
    from train.synthetic.cli import unanswered_warning

    said = unanswered_warning({"failed_by_reason": {"request_failed": 2}, "requests_not_sent": 5}, ASKED)
    assert said == ("2 requests failed, and 5 requests were not sent (their endpoint was stopped first: the error "
                    "below says why); a request not sent fails its job, so these counts should nest and do not: "
                    "summary.json's request_failed counts and requests_not_sent disagree")
    assert unanswered_warning({"requests_not_sent": 1}, ASKED).startswith("0 requests failed, and 1 request was not "
                                                                          "sent (")

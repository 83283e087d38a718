"""`judge-eval run`: a verdict whose number no rubric's scale reaches (``[RESULT] 10000000 [END]``) is the judge's
final answer, a parse failure (``no_score``, the number in the reason), never a failed request.

Every reader refuses a row holding such a number (``eval.judging.predictions.SCORE_BOUND``), so the row used to
be the request's ``request_failed`` row, sent again by every rerun (exit 3 forever). The chat server and the
judge-serve are scripted stand-ins (``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

HUGE = "[FEEDBACK] ok [RESULT] 10000000 [END]"
REASON = "the judge's score 10000000 is on no rubric's scale (its size is over 1e+06)"


def _chat(path: str, body: dict) -> tuple:
    if path != "/v1/chat/completions":
        return 404, {"detail": "Not Found"}
    return 200, chat_completion(HUGE, body["model"])


def _judge_serve(path: str, body: dict) -> tuple:
    if path != "/v1/judge":
        return 404, {"error": {"message": "not found"}}
    if not body:
        return 400, {"error": {"message": "items: required field is missing"}}
    results = [JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1e7, parse_ok=True,
                           score_source="verdict", output=HUGE) for c in body["items"][0]["criteria"]]
    usage = JudgeResponseUsage(len(results), len(results), 0, 0, 0)
    return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "tagged", judge.PROMPT_VERSION,
                              [JudgeResponseItem(0, body["items"][0]["id"], results)], usage).to_json()


@pytest.mark.parametrize("backend, respond, route", [("chat", _chat, "/v1/chat/completions"),
                                                     ("judge-serve", _judge_serve, "/v1/judge")])
def test_a_verdict_past_any_scale_is_a_final_parse_failure_not_asked_again(tmp_path, capsys, backend, respond,
                                                                          route):
    records = judge.load_records(judge.sample_data_path())[:2]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with ScriptedEndpoint(respond) as server:
        args = run_args(server.base_url, data, out, "--backend", backend, "--verdict-format", "tagged",
                        "--max-retries", "0")
        assert main(args) == 0
        n_asked = len([b for b in server.bodies(route) if b])
        assert main(args) == 0  # nothing left to ask
        assert len([b for b in server.bodies(route) if b]) == n_asked
    rows = read_predictions(out)
    assert [(r["error"], r["score"], r["parse_ok"], r["raw_output"], r["reason"]) for r in rows] == [
        ("no_score", None, False, HUGE, REASON)] * 2
    capsys.readouterr()
    assert main(["score", "--predictions", str(out), "--data", str(data), "--n-boot", "0"]) == 0
    said = capsys.readouterr().out
    assert "Zero-Shot + Standard: n 2, n_failed 2," in said
    assert "no scored item: 2 no verdict (an answer unparsed or cut" in said


def _regression_head(field: str, value: float):
    """judge-serve with a regression head answering score 2 on 0..2 and ``field`` (``regression_score`` or
    ``expected_score``) ``value``."""

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/judge":
            return 404, {"error": {"message": "not found"}}
        if not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        results = [JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=2.0, parse_ok=True,
                               score_source="regression_head", output="", **{field: value})
                   for c in body["items"][0]["criteria"]]
        usage = JudgeResponseUsage(len(results), len(results), 0, 0, 0)
        return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "regression", "tagged",
                                  judge.PROMPT_VERSION, [JudgeResponseItem(0, body["items"][0]["id"], results)],
                                  usage).to_json()

    return respond


@pytest.mark.parametrize("field", ["regression_score", "expected_score"])
def test_a_head_value_past_any_scale_is_a_final_parse_failure_not_asked_again(tmp_path, field):
    """A regression judge's score is its head's value: 5e6 is no verdict on any rubric, the same final no_score row
    as a verdict's text past the bound (the field nulled, the number in the reason), not a row every reader refuses
    and every rerun asks again (exit 3 for ever). An expected_score past it alike: its score tokens were no
    rubric's points."""
    records = judge.load_records(judge.sample_data_path())[:2]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with ScriptedEndpoint(_regression_head(field, 5e6)) as server:
        args = run_args(server.base_url, data, out, "--backend", "judge-serve", "--max-retries", "0")
        assert main(args) == 0
        n_asked = len([b for b in server.bodies("/v1/judge") if b])
        assert main(args) == 0
        assert len([b for b in server.bodies("/v1/judge") if b]) == n_asked
    rows = read_predictions(out)
    assert [(r["error"], r["score"], r["parse_ok"], r["score_source"], r[field], r["reason"]) for r in rows] == [
        ("no_score", None, False, None, None,
         f"the judge's {field} 5000000 is on no rubric's scale (its size is over 1e+06)")] * 2

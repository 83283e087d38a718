"""`judge-eval run` on judge-serve's ``/v1/judge`` matches each result to the record it was asked for.

The results of one request come back as a list, one per criterion asked. A list in another order than the criteria
were sent put each verdict on another criterion's row, with nothing said; it is now that request's failed row
(``request_failed``, naming both lists), asked again by the next run. The server is a scripted stand-in
(``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import dataclasses

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint


def _judge_serve(reverse: bool) -> ScriptedEndpoint:
    """A judge-serve scoring criterion k of a request k (0-based), its results listed in reverse when ``reverse``;
    each named stripped, as judge-serve releases before this one named a custom criterion (names compare stripped)."""

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/judge":
            return 404, {"error": {"message": "not found"}}
        if not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        criteria = body["items"][0]["criteria"]
        results = [JudgeResult(criterion=c["name"].strip(), criterion_id=None, scale=[0, 1, 2], score=float(k), parse_ok=True,
                               score_source="verdict", output=f"[FEEDBACK] ok [RESULT] {k} [END]")
                   for k, c in enumerate(criteria)]
        usage = JudgeResponseUsage(len(results), len(results), 0, 0, 0)
        return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "tagged", judge.PROMPT_VERSION,
                                  [JudgeResponseItem(0, body["items"][0]["id"], results[::-1] if reverse else results)],
                                  usage).to_json()

    return ScriptedEndpoint(respond)


def test_results_listed_in_another_order_than_asked_are_a_failed_request(tmp_path):
    records = judge.load_records(judge.sample_data_path())
    first = judge.prefix_key(records[0])
    group = [r for r in records if judge.prefix_key(r) == first][:3]
    group[2] = dataclasses.replace(group[2], criteria_name=group[2].criteria_name + " ")  # sent as written
    assert len(group) == 3 and len({r.criteria_name for r in group}) == 3
    data = judge.write_jsonl(group, tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _judge_serve(reverse=True) as server:
        assert main(run_args(server.base_url, data, out, "--backend", "judge-serve", "--max-retries", "0")) == 3
        (sent,) = [body["items"][0]["criteria"] for _, body in server.requests if body]
    asked = [c["name"] for c in sent]
    assert asked[2].endswith(" ") and asked == [r.criteria_name for r in group]
    rows = read_predictions(out)
    assert {(r["error"], r["score"]) for r in rows} == {("request_failed", None)} and len(rows) == 3
    named = [name.strip() for name in asked[::-1]]
    assert all(f"judge-serve answered for the criteria {named}, asked for {asked} in that order" in r["reason"]
               for r in rows), rows[0]["reason"]
    with _judge_serve(reverse=False) as server:  # the rerun asks them again; each verdict lands on its criterion
        assert main(run_args(server.base_url, data, out, "--backend", "judge-serve")) == 0
    score_of = {r["id"]: r["score"] for r in read_predictions(out)}
    by_name = {r.criteria_name: r.id for r in group}
    assert [score_of[by_name[name]] for name in asked] == [0.0, 1.0, 2.0]  # the third under its stripped name

"""`judge-eval run` on a judge-serve whose ``max_body_bytes`` a request passes (its 413 ``body_too_large``).

A request's body holds its item's instruction and answer once and one rubric per criterion, so a batch of an item's
criteria can pass the bound where each criterion alone fits: such a batch is asked again one criterion at a time. An
item too long to send by itself can never be judged by that server: its row is final (``context_length_exceeded``,
the reason naming the 413), as a prompt too long for the judge's window is, and not asked again. Before, both were
``request_failed`` rows that every rerun sent and was refused again (exit 3, each time). The server is a scripted
stand-in answering with judge-serve's ``serve.connections.BodyLimitMiddleware``'s 413, at a small bound.
"""

from __future__ import annotations

import dataclasses
import json

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from judge.plumbing.retry import EXIT_UNUSABLE
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from tests.support.body_bound import judge_serve_too_large
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

BOUND = 40_000


def _judge_serve(failing: str | None = None, bound: int = BOUND) -> ScriptedEndpoint:
    """judge-serve at ``max_body_bytes`` ``bound``: a body over it is the 413, a request for the criterion ``failing``
    alone a 503 (an engine restarting), any other scores each criterion 1."""
    too_large = judge_serve_too_large(bound)

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/judge":
            return 404, {"error": {"message": "not found"}}
        if not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        if len(json.dumps(body).encode()) > bound:
            return too_large
        criteria = body["items"][0]["criteria"]
        if [c["name"] for c in criteria] == [failing]:
            return 503, {"error": {"message": "the engine is restarting"}}
        results = [JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                               score_source="verdict", output="[FEEDBACK] ok [RESULT] 1 [END]") for c in criteria]
        usage = JudgeResponseUsage(len(results), len(results), 0, 0, 0)
        return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "tagged",
                                  judge.PROMPT_VERSION, [JudgeResponseItem(0, body["items"][0]["id"], results)],
                                  usage).to_json()

    return ScriptedEndpoint(respond)


def _pair_past_the_bound(records: list) -> list:
    """Two criteria of one item, each one's own body within BOUND (its rubric 25,000 characters), both together
    past it."""
    first = judge.prefix_key(records[0])
    pair = [r for r in records if judge.prefix_key(r) == first][:2]
    rubric = "0: нет\n\n1: да\n\n2: " + "b" * 25_000
    return [dataclasses.replace(r, rubrics=f"{rubric} {k}") for k, r in enumerate(pair)]


def test_a_batch_past_the_body_bound_is_asked_one_criterion_at_a_time_and_an_item_past_it_alone_is_final(tmp_path):
    records = judge.load_records(judge.sample_data_path())
    pair = _pair_past_the_bound(records)
    lone = next(r for r in records if judge.prefix_key(r) != judge.prefix_key(pair[0]))
    lone = dataclasses.replace(lone, answer="y" * BOUND)  # its body alone is past the bound
    data = judge.write_jsonl([*pair, lone], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _judge_serve() as server:
        assert main(run_args(server.base_url, data, out, "--backend", "judge-serve", "--max-retries", "0")) == 0
        sent = [[c["name"] for c in body["items"][0]["criteria"]] for path, body in server.requests if body]
    names = [r.criteria_name for r in pair]
    assert sorted(sent) == sorted([names, [names[0]], [names[1]], [lone.criteria_name]])
    rows = {r["id"]: r for r in read_predictions(out)}
    assert [(rows[r.id]["score"], rows[r.id]["error"]) for r in pair] == [(1.0, None), (1.0, None)]
    final = rows[lone.id]
    assert (final["score"], final["parse_ok"], final["error"]) == (None, False, "context_length_exceeded")
    assert final["reason"] == (f"the server refused the request's body as too large (HTTP 413: body: the request body "
                               f"exceeds {BOUND} bytes), with this one judgment alone: a server with a larger bound "
                               "(judge-serve's max_body_bytes) judges it in a new --out, with --overwrite, or once "
                               "this row is deleted (a resume keeps final rows)")
    with _judge_serve() as server:  # a rerun asks nothing again: the row is the item's final one
        assert main(run_args(server.base_url, data, out, "--backend", "judge-serve")) == 0
        assert [body for _, body in server.requests if body] == []


def test_a_criterion_of_a_split_batch_that_fails_fails_alone(tmp_path):
    """A batch past the bound is asked one criterion at a time, each with its own retries and its own row: the
    criterion whose request fails (a 503, retries spent) is the one request_failed row a rerun asks again, and its
    batchmate keeps its verdict. Before, the criteria were asked again inside the batch's request, so the one
    failure failed the whole batch: both rows request_failed, the verdict already given thrown away and asked for
    again, with the batch's 413, by every retry and every rerun."""
    pair = _pair_past_the_bound(judge.load_records(judge.sample_data_path()))
    data, out = judge.write_jsonl(pair, tmp_path / "data.jsonl"), tmp_path / "run"
    with _judge_serve(failing=pair[1].criteria_name) as server:
        assert main(run_args(server.base_url, data, out, "--backend", "judge-serve", "--max-retries", "0")) == 3
        sent = [[c["name"] for c in body["items"][0]["criteria"]] for path, body in server.requests if body]
    names = [r.criteria_name for r in pair]
    assert sent == [names, [names[0]], [names[1]]]
    rows = {r["id"]: r for r in read_predictions(out)}
    assert [(rows[r.id]["score"], rows[r.id]["error"]) for r in pair] == [(1.0, None), (None, "request_failed")]


def test_a_server_whose_bound_no_request_fits_stops_the_run_and_a_larger_one_judges_every_item(tmp_path):
    """A judge-serve whose ``max_body_bytes`` is too small for any request (set in kilobytes, say) refuses the first
    three items, each one criterion alone, alike: the run stops as at an unusable endpoint (exit 4), their rows
    request_failed, and a rerun into the same --out against a judge-serve with a larger bound judges all three.
    Without the stop each was a final context_length_exceeded row (exit 0), which every rerun kept whatever the
    server, so only --overwrite judged them."""
    records = judge.load_records(judge.sample_data_path())
    firsts = list({judge.prefix_key(r): r for r in reversed(records)}.values())[:3]
    data, out = judge.write_jsonl(firsts, tmp_path / "data.jsonl"), tmp_path / "run"
    settings = ("--backend", "judge-serve", "--max-retries", "0", "--concurrency", "1")
    with _judge_serve(bound=100) as server:
        assert main(run_args(server.base_url, data, out, *settings)) == EXIT_UNUSABLE
    assert [(r["error"], r["score"]) for r in read_predictions(out)] == [("request_failed", None)] * 3
    with _judge_serve() as server:
        assert main(run_args(server.base_url, data, out, *settings)) == 0
    assert sorted((r["id"], r["error"], r["score"]) for r in read_predictions(out)) == sorted(
        (r.id, None, 1.0) for r in firsts)


def test_a_chat_prompt_past_the_body_bound_is_a_final_row_never_asked_again(tmp_path):
    """The chat route (judge-serve proxies /v1/chat/completions under the same ``max_body_bytes``) sends one prompt a
    request: one past the bound is its item's final row, as one criterion alone on /v1/judge is, and a rerun asks
    nothing. Before, a request_failed row that every rerun sent and was refused again (exit 3 each time)."""
    records = judge.load_records(judge.sample_data_path())
    firsts = list({judge.prefix_key(r): r for r in reversed(records)}.values())[:3]
    firsts[1] = dataclasses.replace(firsts[1], answer="y" * BOUND)
    data, out = judge.write_jsonl(firsts, tmp_path / "data.jsonl"), tmp_path / "run"
    too_large = judge_serve_too_large(BOUND)

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": "not found"}}
        if len(json.dumps(body).encode()) > BOUND:
            return too_large
        return 200, chat_completion("[FEEDBACK] ok [RESULT] 1 [END]", body["model"])

    settings = ("--verdict-format", "tagged", "--max-retries", "0")
    with ScriptedEndpoint(respond) as server:
        assert main(run_args(server.base_url, data, out, *settings)) == 0
        assert main(run_args(server.base_url, data, out, *settings)) == 0
        asked = len(server.bodies("/v1/chat/completions"))
    assert asked == 3
    rows = {r["id"]: r for r in read_predictions(out)}
    assert [(rows[r.id]["score"], rows[r.id]["error"]) for r in firsts] == [
        (1.0, None), (None, "context_length_exceeded"), (1.0, None)]
    assert rows[firsts[1].id]["reason"].startswith("the server refused the request's body as too large (HTTP 413: body: "
                                                   f"the request body exceeds {BOUND} bytes), with this one judgment")

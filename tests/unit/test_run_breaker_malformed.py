"""`judge-eval run` against an endpoint whose chat answers are HTTP 200 but no chat completion (plain text, an HTML
page, JSON cut short, JSON without ``choices``, ``choices: null``, a choice that is no object), after a valid
``GET /v1/models``: each is a ``request_failed`` row whose reason says what the answer was, and it counts in the
failing streak (judge.plumbing.failing_streak) as a request failed after its retries does, so an endpoint answering
every request so stops the run with exit 4 after the streak's bound, not after the whole data set; one such answer
among good ones is that item's failed row and the run goes on (exit 3). On judge-serve's ``/v1/judge`` route the same
holds for a body that is no ``/v1/judge`` response and for a valid one holding another number of items or results
than the request asked, or an item of another id, and the stop names what the answers should have been there (a
``/v1/judge`` response, not a chat completion).

Driven against a real HTTP endpoint on 127.0.0.1 (tests.support.malformed_answers); nothing is timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from judge.plumbing.failing_streak import stop_after
from judge.plumbing.retry import EXIT_UNUSABLE
from tests.support.malformed_answers import (DEEP_JSON, DEEP_JSON_SAYS, HTML, LONG_NUMBER, LONG_NUMBER_SAYS,
                                             MALFORMED_CHAT, NOT_JSON_SAYS, UNRETRIED_CHAT, UNRETRIED_SERVE,
                                             assert_streak_stop,
                                             chat_endpoint, judge_requests, judge_serve_endpoint)
from tests.support.scripted_endpoint import RawBody, chat_completion

GOOD = "[FEEDBACK] Ответ соответствует критерию. [RESULT] 1 [END]"


def _data(tmp_path: Path, n: int) -> tuple[Path, list]:
    records = judge.load_records(judge.sample_data_path())[:n]
    return judge.write_jsonl(records, tmp_path / "data.jsonl"), records


def _args(url: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--max-tokens", "32", "--no-progress",
            "--verdict-format", "tagged", "--backoff-s", "0.001", "--concurrency", "1", "--max-retries", "1", *extra]


def _stopped_by_the_streak(tmp_path: Path, capsys, server, *extra: str) -> tuple[list, str, list, dict]:
    """Run 20 records against ``server`` at concurrency 1: it stops with exit 4 once stop_after(1) = 3 different
    items in a row failed, each a failed row (the items not sent have none); returns the rows, stderr, the records
    and each record id's item key."""
    data, records = _data(tmp_path, 20)
    with server:
        code = main(_args(server.base_url, data, tmp_path / "run", *extra))
    err = capsys.readouterr().err
    rows = read_predictions(tmp_path / "run")
    assert code == EXIT_UNUSABLE, err
    by_id = {r.id: judge.prefix_key(r) for r in records}
    assert len({by_id[r["id"]] for r in rows}) == stop_after(1) and len(rows) < len(records)
    assert {r["error"] for r in rows} == {"request_failed"}
    return rows, err, records, by_id


@pytest.mark.parametrize("case", sorted(MALFORMED_CHAT))
def test_an_endpoint_answering_every_request_malformed_stops_after_the_streak(tmp_path, capsys, case):
    """Every chat request answered with one malformed 200: at concurrency 1 the run stops with exit 4 once
    stop_after(1) = 3 different answers in a row got one, each asked once (a malformed answer is not retried), each a
    failed row with a reason that says what came back; the items not sent have no row, and one line says why."""
    body, says = MALFORMED_CHAT[case]
    server = chat_endpoint(lambda k, request: body)
    rows, err, records, _ = _stopped_by_the_streak(tmp_path, capsys, server)
    assert len(server.bodies("/v1/chat/completions")) == len(rows)  # one request per row: none retried
    assert all(r["reason"].startswith(says) and "Error" not in r["reason"] for r in rows), rows[0]["reason"]
    assert_streak_stop(err, len(rows), len(records), says, UNRETRIED_CHAT)
    assert UNRETRIED_SERVE not in err


def _served(body: dict, n_items: int, extra_results: int) -> dict:
    """A valid /v1/judge response to ``body`` (one item, its criteria each scored 1), holding ``n_items`` copies of
    the item and ``extra_results`` more results than criteria asked (fewer when negative)."""
    criteria = body["items"][0]["criteria"]
    results = [JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                           score_source="verdict", output=GOOD) for c in criteria]
    results = results + results[:extra_results] if extra_results >= 0 else results[:extra_results]
    items = [JudgeResponseItem(k, body["items"][0]["id"], results) for k in range(n_items)]
    usage = JudgeResponseUsage(len(results), len(results), 0, 0, 0)
    return JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "tagged", judge.PROMPT_VERSION, items,
                         usage).to_json()


def _for_other_criteria(served: dict) -> dict:
    """``served`` with each result named for a criterion the request did not ask (a server that renamed them)."""
    for result in served["items"][0]["results"]:
        result["criterion"] = "Другой критерий"
    return served


def _for_other_item(served: dict) -> dict:
    """``served`` answering an item of another id than the request's (a cache answering another request's item
    with the same criteria)."""
    served["items"][0]["id"] = "s9999"
    return served


# Each malformed /v1/judge answer (a body, or a response to the request's body), and the words its failed row's
# reason starts with.
MALFORMED_SERVE = {
    "html": (lambda body: RawBody(HTML, "text/html"), NOT_JSON_SAYS),
    "cut-json": (lambda body: RawBody(b'{"id": "x", "ite'), NOT_JSON_SAYS),
    "no-item": (lambda body: _served(body, 0, 0), "HTTP 200, but the /v1/judge response holds 0 items for the 1 "
                                                  "asked ("),
    "two-items": (lambda body: _served(body, 2, 0), "HTTP 200, but the /v1/judge response holds 2 items for the 1 "
                                                    "asked ("),
    "one-result-more": (lambda body: _served(body, 1, 1), "HTTP 200, but the /v1/judge response holds "),
    "other-criteria": (lambda body: _for_other_criteria(_served(body, 1, 0)),
                       "judge-serve answered for the criteria ['Другой критерий'"),
    "one-result-less": (lambda body: _served(body, 1, -1), "HTTP 200, but the /v1/judge response holds "),
    "other-item": (lambda body: _for_other_item(_served(body, 1, 0)),
                   "HTTP 200, but the /v1/judge response's item answers id 's9999' at index 0, the request's "),
    "deep-json": (lambda body: DEEP_JSON, DEEP_JSON_SAYS),
    "long-number": (lambda body: LONG_NUMBER, LONG_NUMBER_SAYS),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_SERVE))
def test_a_judge_serve_answering_every_request_malformed_stops_after_the_streak_naming_v1_judge(tmp_path, capsys,
                                                                                                 case):
    """Every /v1/judge request answered with one malformed 200 (no /v1/judge response, or one holding another
    number of items or results than asked, results for other criteria than asked, or an item of another id): each a
    request_failed row, asked once, and the run stops with exit 4 after the streak, saying the answers were no
    /v1/judge response (it said "no chat completion", the chat route's words; a wrong count, and results for other
    criteria, were plain refusals that reset the streak, and every item was asked; an item of another id was
    scored onto the rows asked)."""
    answer, says = MALFORMED_SERVE[case]
    server = judge_serve_endpoint(lambda k, request: answer(request))
    rows, err, records, by_id = _stopped_by_the_streak(tmp_path, capsys, server, "--backend", "judge-serve")
    asked = judge_requests(server)
    assert len(asked) == stop_after(1)  # one request per answer, none retried
    # nothing lost: every judgment a sent request asked has its failed row, whatever count the answer held
    sent = {by_id[b["items"][0]["id"]] for b in asked}
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in records if by_id[r.id] in sent)
    assert len(rows) == sum(len(b["items"][0]["criteria"]) for b in asked)
    assert all(r["reason"].startswith(says) for r in rows), rows[0]["reason"]
    if case.startswith("one-result"):  # the counts named: each request's criteria, one more or one fewer results
        n_asked = [len(b["items"][0]["criteria"]) for b in asked]
        n_back = [n + (1 if case == "one-result-more" else -1) for n in n_asked]
        assert {r["reason"].split(" criteria of ")[0] for r in rows} == {
            f"{says}{back} results for {n}" for back, n in zip(n_back, n_asked)}
    assert_streak_stop(err, len(asked), len(set(by_id.values())), says, UNRETRIED_SERVE)
    assert UNRETRIED_CHAT not in err


@pytest.mark.parametrize("case", ["html", "choice-not-object"])
def test_one_malformed_answer_among_good_ones_does_not_stop_the_run(tmp_path, capsys, case):
    """The second chat request is answered with a malformed 200, every other one well: the streak starts again at
    the next success, so every item is asked once and scored but that one, a failed row (exit 3)."""
    body, says = MALFORMED_CHAT[case]
    data, records = _data(tmp_path, 12)
    with chat_endpoint(lambda k, request: body if k == 2 else chat_completion(GOOD, "judge")) as server:
        code = main(_args(server.base_url, data, tmp_path / "run"))
        asked = server.bodies("/v1/chat/completions")
    assert code == 3, capsys.readouterr().err
    assert len(asked) == len(records)
    rows = read_predictions(tmp_path / "run")
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in records)
    failed = [r for r in rows if r["error"]]
    assert len(failed) == 1 and failed[0]["error"] == "request_failed" and failed[0]["reason"].startswith(says)
    assert sorted(r["score"] for r in rows if not r["error"]) == [1.0] * (len(records) - 1)

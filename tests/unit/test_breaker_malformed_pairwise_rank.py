"""Pairwise `judge-eval run` (chat and judge-serve routes) and `rank`'s candidate answers against an endpoint whose
answers are HTTP 200 but no answer of the protocol (plain text, an HTML page, JSON cut short, JSON without
``choices``, a choice that is no object, JSON that is no ``/v1/judge`` response): each is a failed row whose reason
says what came back, never a verdict or an answer, and it counts in the failing streak
(judge.plumbing.failing_streak) as it does for a pointwise run (tests/unit/test_run_breaker_malformed.py), so an
endpoint answering every request so stops with exit 4 after the streak's bound instead of grinding through every
item; one such answer among good ones is that item's failed row and the run goes on. A valid ``/v1/judge`` response
holding another number of items or results than the one judgment asked is such an answer too, as pointwise reads it
(``eval.judging.backends.judge_results``), where it was a ``ValueError`` row the streak took for an answer, and so
is one whose item is another pair's (its echoed id), where that pair's verdict was written on the pair asked. The
stop names what the answers should have been: a chat completion on the chat route, a ``/v1/judge`` response on
judge-serve's.

Driven against real HTTP endpoints on 127.0.0.1 (tests.support.malformed_answers, the pointwise tests' too); nothing is
timed.
"""

from __future__ import annotations

import pytest

from eval.cli import main
from eval.pairwise.judging import ORDERS, PAIRWISE_PREDICTIONS, read_pairwise_rows
from judge.plumbing.failing_streak import stop_after
from judge.plumbing.retry import EXIT_UNUSABLE
from tests.support.eval_ranking import CASES, Judge, rank_argv, scores_by_output
from tests.support.malformed_answers import (DEEP_JSON, DEEP_JSON_SAYS, HTML, LONG_NUMBER, LONG_NUMBER_SAYS,
                                             MALFORMED_CHAT, NOT_JSON_SAYS, UNRETRIED_CHAT, UNRETRIED_SERVE,
                                             assert_streak_stop,
                                             chat_endpoint, judge_requests, judge_serve_endpoint)
from tests.support.pairwise_breaker import N_PAIRS
from tests.support.pairwise_breaker import journal_rows as _journal, pair_run_args as _pair_args, pairs_file as _pairs
from tests.support.scripted_endpoint import RawBody, chat_completion

TIE = "[FEEDBACK] Ответы равноценны. [RESULT] 0 [END]"

# Each malformed /v1/judge answer of a judge-serve, and the words its failed row's reason starts with.
MALFORMED_SERVE = {
    "html": (RawBody(HTML, "text/html"), NOT_JSON_SAYS),
    "cut-json": (RawBody(b'{"id": "x", "ite'), NOT_JSON_SAYS),
    "not-a-judge-response": ({"id": "x", "object": "chat.completion", "choices": []},
                             "HTTP 200, but the answer is not a /v1/judge response: "),
    "deep-json": (DEEP_JSON, DEEP_JSON_SAYS),
    "long-number": (LONG_NUMBER, LONG_NUMBER_SAYS),
}


def _pairs_stopped(tmp_path, capsys, server) -> tuple[list[dict], str]:
    """Judge the ten pairs in both orders against ``server``: the run stops with exit 4 once stop_after(1) = 3
    different pairs in a row failed, each judgment asked a request_failed row with no verdict; returns the rows
    and stderr."""
    data = _pairs(tmp_path)
    out = tmp_path / "run"
    with server:
        code = main(_pair_args(server.base_url, data, out))
    err = capsys.readouterr().err
    rows = _journal(out / PAIRWISE_PREDICTIONS)
    assert code == EXIT_UNUSABLE, err
    assert len({r["id"] for r in rows}) == stop_after(1)
    assert {(r["error"], r["verdict"]) for r in rows} == {("request_failed", None)}
    return rows, err


@pytest.mark.parametrize("case", sorted(MALFORMED_CHAT))
def test_pairwise_chat_endpoint_answering_every_request_malformed_stops_after_the_streak(tmp_path, capsys, case):
    """Every chat request answered with one malformed 200: the pairwise run stops with exit 4 once stop_after(1) = 3
    different pairs in a row got one (the third pair's first order ends it), each judgment asked once (not retried),
    each a request_failed row whose reason says what came back; the 20 judgments are not all asked."""
    body, says = MALFORMED_CHAT[case]
    server = chat_endpoint(lambda k, request: body)
    rows, err = _pairs_stopped(tmp_path, capsys, server)
    assert len(rows) == 2 * stop_after(1) - 1
    assert len(server.bodies("/v1/chat/completions")) == len(rows)  # one request per row: none retried
    assert {(r["score"], r["parse_ok"]) for r in rows} == {(None, False)}
    assert all(r["reason"].startswith(says) for r in rows), rows[0]["reason"]
    assert_streak_stop(err, len(rows), N_PAIRS * len(ORDERS), says, UNRETRIED_CHAT)
    assert UNRETRIED_SERVE not in err


@pytest.mark.parametrize("case", sorted(MALFORMED_SERVE))
def test_pairwise_judge_serve_answering_every_request_malformed_stops_after_the_streak(tmp_path, capsys, case):
    """A judge-serve (its /v1/judge answers an empty body 400) whose every pairwise /v1/judge request is answered
    with a malformed 200: a request_failed row each, asked once, and the run stops with exit 4 after the streak."""
    body, says = MALFORMED_SERVE[case]
    server = judge_serve_endpoint(lambda k, request: body)
    rows, err = _pairs_stopped(tmp_path, capsys, server)
    assert len(judge_requests(server)) == len(rows) < N_PAIRS * len(ORDERS)
    assert all(r["reason"].startswith(says) for r in rows), rows[0]["reason"]
    assert_streak_stop(err, len(rows), N_PAIRS * len(ORDERS), says, UNRETRIED_SERVE)
    assert UNRETRIED_CHAT not in err


def _served_pair(pair_id: str, model: str, n_items: int, n_results: int) -> dict:
    """A valid /v1/judge response to one pair judged 0, holding ``n_items`` items of ``n_results`` results each."""
    from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult

    result = JudgeResult(criterion="pairwise", criterion_id=None, scale=[-1, 0, 1], feedback="r", score=0.0,
                         parse_ok=True, score_source="verdict", in_scale=True, output=TIE)
    items = [JudgeResponseItem(k, pair_id, [result] * n_results) for k in range(n_items)]
    return JudgeResponse("judge-1", "judge.result", 0, model, "seq2seq", "tagged", "v", items,
                         JudgeResponseUsage(n_items, n_items * n_results, 0, 0, 0)).to_json()


def _served_to(request: dict, n_items: int, n_results: int) -> dict:
    """``_served_pair`` for the one pair ``request`` asks (a request of more pairs fails here)."""
    (pair,) = request["pairs"]
    return _served_pair(pair["id"], request["model"], n_items, n_results)


# A /v1/judge response holding another count than the one judgment asked, and its failed rows' reason, for pair p0
# in its first order (the later rows name their own pair and order).
MISCOUNTED_SERVE = {
    "no-item": ((0, 1), "HTTP 200, but the /v1/judge response holds 0 items for the 1 asked (1 judgment of pair p0 "
                        "(original))"),
    "two-items": ((2, 1), "HTTP 200, but the /v1/judge response holds 2 items for the 1 asked (1 judgment of pair p0 "
                          "(original))"),
    "no-result": ((1, 0), "HTTP 200, but the /v1/judge response holds 0 results for 1 judgment of pair p0 "
                          "(original)"),
    "two-results": ((1, 2), "HTTP 200, but the /v1/judge response holds 2 results for 1 judgment of pair p0 "
                            "(original)"),
}


@pytest.mark.parametrize("case", sorted(MISCOUNTED_SERVE))
def test_pairwise_judge_serve_answering_every_request_with_the_wrong_count_stops_after_the_streak(tmp_path, capsys,
                                                                                                 case):
    """A judge-serve whose every pairwise /v1/judge answer is a valid response holding another number of items or
    results than the one judgment asked: a MalformedAnswer each, as the pointwise backend reads a wrong count, so a
    request_failed row naming the counts, asked once, and the run stops with exit 4 after the streak (it was a
    ValueError row that reset the streak, and all 20 judgments were asked)."""
    (n_items, n_results), says = MISCOUNTED_SERVE[case]
    server = judge_serve_endpoint(
        lambda k, request: _served_to(request, n_items, n_results))
    rows, err = _pairs_stopped(tmp_path, capsys, server)
    assert len(judge_requests(server)) == len(rows) < N_PAIRS * len(ORDERS)
    (first,) = [r for r in rows if (r["id"], r["order"]) == ("p0", "original")]
    assert first["reason"] == says
    last = says.replace("p0", rows[-1]["id"]).replace("original", rows[-1]["order"])
    assert_streak_stop(err, len(rows), N_PAIRS * len(ORDERS), last, UNRETRIED_SERVE)


def test_pairwise_judge_serve_answering_every_request_for_another_pair_stops_after_the_streak(tmp_path, capsys):
    """A judge-serve whose every pairwise /v1/judge answer is for pair "p-other" (a cache answering one pair's
    verdict to every request): a MalformedAnswer each, not a verdict written on the pair asked, so a request_failed
    row naming both ids, each judgment asked once with its own pair, and the run stops with exit 4 after the streak
    (every pair was judged with the cached verdict, exit 0)."""
    server = judge_serve_endpoint(lambda k, request: _served_pair("p-other", request["model"], 1, 1))
    rows, err = _pairs_stopped(tmp_path, capsys, server)
    asked = judge_requests(server)
    assert [(b["pairs"][0]["id"], b["pairs"][0]["answer_1"]) for b in asked] == [
        (f"{r['id']}#{r['order']}", f"Ответ {r['id'][1:]}{'а' if r['order'] == 'original' else 'б'}.") for r in rows]
    assert len(asked) == len(rows) < N_PAIRS * len(ORDERS)
    says = [f"HTTP 200, but the /v1/judge response's item answers id 'p-other' at index 0, the request's "
            f"'{r['id']}#{r['order']}' at index 0 (1 judgment of pair {r['id']} ({r['order']}))" for r in rows]
    assert [r["reason"] for r in rows] == says
    assert_streak_stop(err, len(rows), N_PAIRS * len(ORDERS), says[-1], UNRETRIED_SERVE)


@pytest.mark.parametrize("route", ["chat", "judge-serve"])
def test_pairwise_one_malformed_answer_among_good_ones_does_not_stop_the_run(tmp_path, capsys, route):
    """The second request is answered malformed, every other one well (chat: a choice that is no object;
    judge-serve: two results for its one judgment): the streak starts again at the next success, every judgment is
    asked once, and that one is a request_failed row (exit 3), the others judged."""
    if route == "chat":
        body, says = MALFORMED_CHAT["choice-not-object"]
        server = chat_endpoint(lambda k, request: body if k == 2 else chat_completion(TIE, "judge"))
    else:
        says = "HTTP 200, but the /v1/judge response holds 2 results for 1 judgment of pair "
        server = judge_serve_endpoint(
            lambda k, request: _served_to(request, 1, 2 if k == 2 else 1))
    with server:
        code = main(_pair_args(server.base_url, _pairs(tmp_path), tmp_path / "run"))
    assert code == 3, capsys.readouterr().err
    rows = read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)
    asked = server.bodies("/v1/chat/completions") if route == "chat" else judge_requests(server)
    assert len(asked) == len(rows) == N_PAIRS * len(ORDERS)
    (failed,) = [r for r in rows if r.error]
    assert failed.error == "request_failed" and failed.reason.startswith(says) and failed.verdict is None
    assert {r.verdict for r in rows if not r.error} == {0.0}


@pytest.mark.parametrize("case", sorted(MALFORMED_CHAT))
def test_rank_candidate_answering_every_request_malformed_stops_the_answer_stage(tmp_path, data, capsys, case):
    """Every candidate request answered with one malformed 200: the answer stage stops with exit 4 after
    stop_after(1) = 3 instructions (each asked once), not after all 7, each a request_failed row whose reason says
    what came back, and the judge is never asked."""
    body, says = MALFORMED_CHAT[case]
    out = tmp_path / "bench"
    with (chat_endpoint(lambda k, request: body, model="cand-model", max_model_len=32768) as cand,
          Judge(scores_by_output()) as judge):
        code = main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1", "--max-retries", "1",
                              "--backoff-s", "0.001"))
        asked = cand.bodies("/v1/chat/completions")
        judged = judge.bodies("/v1/chat/completions")
    err = capsys.readouterr().err
    rows = _journal(out / "answers.jsonl")
    assert code == EXIT_UNUSABLE, err
    assert len(rows) == len(asked) == stop_after(1) < len(CASES) and not judged
    assert {(r["error"], r["answer"]) for r in rows} == {("request_failed", None)}
    assert all(r["reason"].startswith(f"Refused: {says}") for r in rows), rows[0]["reason"]
    assert_streak_stop(err, len(rows), len(CASES), says, UNRETRIED_CHAT)
    assert UNRETRIED_SERVE not in err

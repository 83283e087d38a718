"""Pairwise judging and `rank`'s answer stage against an endpoint that keeps failing after every retry
(judge.plumbing.failing_streak): the run stops with exit 4 after a few items, not after every item's full retries, a
rerun resumes (nothing lost, nothing asked twice), and one item the server cannot take never stops a healthy run.

Driven against real HTTP endpoints on 127.0.0.1 (tests.support.scripted_endpoint); the backoff is made next to
nothing with ``--backoff-s``, and nothing is timed.
"""

from __future__ import annotations

import threading

from eval.cli import main
from judge.plumbing.failing_streak import stop_after
from eval.pairwise.judging import ORDERS, PAIRWISE_PREDICTIONS, read_pairwise_rows
from judge.plumbing.retry import EXIT_UNUSABLE
from tests.support.eval_ranking import CASES, Candidate, Judge, rank_argv, scores_by_output
from tests.support.pairwise_breaker import N_PAIRS
from tests.support.pairwise_breaker import journal_rows as _journal, pair_run_args as _pair_args, pairs_file as _pairs
from tests.support.scripted_endpoint import chat_completion, ScriptedEndpoint

TIE = "[FEEDBACK] Ответы равноценны. [RESULT] 0 [END]"
DOWN = (503, {"error": {"message": "scripted outage"}})



def test_pairwise_against_an_endpoint_that_never_recovers_stops_and_a_rerun_resumes(tmp_path, capsys):
    """Every request 503: the pairwise run stops with exit 4 once stop_after(1) = 3 different pairs in a row failed
    after their retries (a pair's two orders count once), not after all 20 judgments; the rerun against a healthy
    judge asks every judgment exactly once (the failed ones and those never sent) and ends with one good row each."""
    data = _pairs(tmp_path)
    healthy = threading.Event()

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return (200, chat_completion(TIE, "judge")) if healthy.is_set() else DOWN

    out = tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_pair_args(server.base_url, data, out))
        err = capsys.readouterr().err
        first = _journal(out / PAIRWISE_PREDICTIONS)
        n_asked = len(server.bodies("/v1/chat/completions"))
        healthy.set()
        server.requests.clear()
        again = main(_pair_args(server.base_url, data, out))
        reasked = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")]
    assert code == EXIT_UNUSABLE, err
    n_stop = stop_after(1)
    assert len({r["id"] for r in first}) == n_stop and len(first) == 2 * n_stop - 1  # the third pair's first order
    assert {r["error"] for r in first} == {"request_failed"} and n_asked == 2 * len(first)  # a try and one retry
    assert "the judge (judge) failed" in err and "HTTP 503: scripted outage" in err and "rerun to resume" in err
    assert f"about {n_stop} different answers" in err
    assert again == 0
    assert len(reasked) == len(set(reasked)) == N_PAIRS * len(ORDERS)  # each judgment asked once: none twice
    final = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
    assert len(final) == N_PAIRS * len(ORDERS) and {r.error for r in final} == {None}


def test_pairwise_one_pair_the_server_cannot_take_never_stops_the_run(tmp_path, capsys):
    """One pair whose text makes the server fail (both orders, after every retry) is one pair, not two: the run
    asks every judgment and ends with exit 3 (the failed ones are rows a rerun retries), not 4."""
    data = _pairs(tmp_path)

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        bad = "Вопрос 3?" in body["messages"][0]["content"]
        return DOWN if bad else (200, chat_completion(TIE, "judge"))

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_pair_args(server.base_url, data, tmp_path / "run"))
    err = capsys.readouterr().err
    rows = read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)
    assert code == 3, err
    assert len(rows) == N_PAIRS * len(ORDERS)
    assert sorted((r.id, r.order) for r in rows if r.error) == [("p3", "original"), ("p3", "swapped")]


def test_rank_candidate_that_never_recovers_stops_the_answer_stage_and_a_rerun_resumes(tmp_path, data):
    """Every candidate request 500: the answer stage stops with exit 4 after stop_after(1) = 3 instructions, not
    after all 7, and the judge is never asked; the rerun against a healthy candidate asks each instruction once."""
    out = tmp_path / "bench"
    argv = ("--concurrency", "1", "--backoff-s", "0.001")
    with Candidate(fail=set(CASES)) as cand, Judge(scores_by_output()) as judge:
        code = main(rank_argv(cand.base_url, judge.base_url, data, out, *argv))
        first = _journal(out / "answers.jsonl")
        judged = judge.bodies("/v1/chat/completions")
    assert code == EXIT_UNUSABLE
    assert len(first) == stop_after(1) and {r["error"] for r in first} == {"request_failed"} and not judged
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *argv)) == 0
        asked = [b["messages"][0]["content"] for b in cand.bodies("/v1/chat/completions")]
    assert len(asked) == len(set(asked)) == len(CASES)
    assert [r["prompt_id"] for r in _journal(out / "answers.jsonl")] == sorted(CASES)


def test_rank_failures_short_of_the_streak_never_stop_the_answer_stage(tmp_path, data):
    """Two instructions in a row whose requests fail, one fewer than stop_after(1): every instruction is asked, the
    ranking finishes with exit 3 (the failed answers counted, retried by the next run), not 4."""
    out = tmp_path / "bench"
    with Candidate(fail={2, 3}) as cand, Judge(scores_by_output()) as judge:
        code = main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1", "--backoff-s", "0.001"))
        asked = cand.bodies("/v1/chat/completions")
    assert code == 3 and len(asked) == len(CASES)
    assert sorted(r["prompt_id"] for r in _journal(out / "answers.jsonl") if r["error"]) == [2, 3]

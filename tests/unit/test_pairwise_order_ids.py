"""A pair's two orders are two judgments, and judge-serve's answer to one is no answer to the other: each order is
sent with its own item id (``<pair id>#original``, ``<pair id>#swapped``), which judge-serve echoes, so a /v1/judge
answer for the swapped order given to the original (a cache or a proxy mixing the two requests) fails the id check
as a MalformedAnswer row, never written as the original's verdict. Both orders were sent with the pair's id, and
such an answer passed: the swapped order's verdict, in the swapped orientation, stood for the original's.

Driven against a real HTTP endpoint on 127.0.0.1 (tests.support.scripted_endpoint); nothing is timed."""

from __future__ import annotations

from eval.cli import main
from eval.pairwise.judging import ORDERS, PAIRWISE_PREDICTIONS, order_item_id, read_pairwise_rows
from tests.support.pairwise_breaker import N_PAIRS
from tests.support.pairwise_breaker import pair_run_args as _pair_args, pairs_file as _pairs
from tests.support.scripted_endpoint import ScriptedEndpoint

FIRST_BETTER = "[FEEDBACK] Первый лучше. [RESULT] -1 [END]"


def _served(item_id: str, model: str, score: float, output: str) -> dict:
    from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult

    result = JudgeResult(criterion="pairwise", criterion_id=None, scale=[-1, 0, 1], feedback="r", score=score,
                         parse_ok=True, score_source="verdict", in_scale=True, output=output)
    return JudgeResponse("judge-1", "judge.result", 0, model, "seq2seq", "tagged", "v",
                         [JudgeResponseItem(0, item_id, [result])], JudgeResponseUsage(1, 1, 0, 0, 0)).to_json()


def test_each_order_is_sent_with_its_own_id_and_a_well_echoed_answer_is_the_verdict(tmp_path, capsys):
    """The exact ids sent, order by order; echoed back, every judgment is read (exit 0)."""
    data = _pairs(tmp_path)

    def respond(path, request):
        if path != "/v1/judge" or not request:
            return 400, {"error": {"message": "items: required field is missing"}}
        (pair,) = request["pairs"]
        return 200, _served(pair["id"], request["model"], -1.0, FIRST_BETTER)

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_pair_args(server.base_url, data, tmp_path / "run"))
        asked = [b for b in server.bodies("/v1/judge") if b]
    assert code == 0, capsys.readouterr().err
    rows = read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)
    assert len(rows) == len(asked) == N_PAIRS * len(ORDERS)
    sent = sorted(b["pairs"][0]["id"] for b in asked)
    assert sent == sorted(f"p{k}#{order}" for k in range(N_PAIRS) for order in ORDERS)
    assert {(r.order, r.verdict) for r in rows} == {("original", -1.0), ("swapped", 1.0)}


def test_an_answer_for_the_swapped_order_given_to_the_original_fails_the_id_check(tmp_path, capsys):
    """The endpoint answers every request with the swapped order's item (its id echoed): the original orders'
    rows are request_failed naming both ids, never a verdict; the swapped orders' are read."""
    data = _pairs(tmp_path)

    def respond(path, request):
        if path != "/v1/judge" or not request:
            return 400, {"error": {"message": "items: required field is missing"}}
        (pair,) = request["pairs"]
        pair_id = pair["id"].rsplit("#", 1)[0]
        return 200, _served(order_item_id(pair_id, "swapped"), request["model"], -1.0, FIRST_BETTER)

    with ScriptedEndpoint(respond, model="judge") as server:
        main(_pair_args(server.base_url, data, tmp_path / "run"))
    capsys.readouterr()
    rows = read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)
    original = [r for r in rows if r.order == "original"]
    assert original and {(r.error, r.verdict) for r in original} == {("request_failed", None)}
    first = original[0]
    assert first.reason == (f"HTTP 200, but the /v1/judge response's item answers id '{first.id}#swapped' at index 0, "
                            f"the request's '{first.id}#original' at index 0 (1 judgment of pair {first.id} "
                            "(original))")
    assert {r.verdict for r in rows if r.order == "swapped"} <= {1.0}


def test_the_order_ids_are_distinct_for_every_pair_id():
    """No pair's order id is another pair's or order's: the order is a suffix no other order's ends alike."""
    ids = ["p1", "p1#original", "p1#swapped", "p1#", "#", ""]
    made = [order_item_id(pair_id, order) for pair_id in ids for order in ORDERS]
    assert len(made) == len(set(made))

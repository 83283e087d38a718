"""A ``/v1/judge`` answer is written onto the rows of the item (or pair) it answers, never onto another's.

judge-serve echoes each request item's ``id`` and its ``index`` (its place in the request) in the response's items, in
request order (``serve.judging``; every release since ``/v1/judge`` began: ``judge.wire.JudgeResponseItem``). A
response whose item names another id or index than the request's (a proxy answering from a cache, a server answering
another request) held results of the same criteria, and ``judge-eval run`` wrote them onto the rows asked: silent
mis-scoring. It is now a ``MalformedAnswer`` (the failing streak counts it), a failed row for every judgment asked,
naming both ids; the rerun asks them again. The reward clients send no ids: their items are matched by position, so
an item answered at another ``index``, or with an id none was sent, is refused there (a ``ValueError`` naming its
sample), never a reward computed on another sample's verdicts.

Driven against real HTTP endpoints on 127.0.0.1 (tests.support.scripted_endpoint), each asserting the exact payloads;
nothing is timed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from eval.pairwise.judging import PAIRWISE_PREDICTIONS, read_pairwise_rows
from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import JudgeRewardClient, RewardSample
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

GOOD = "[FEEDBACK] ok [RESULT] {k} [END]"
TIE = "[FEEDBACK] Ответы равноценны. [RESULT] 0 [END]"
RUBRICS = "-1: лучше первый\n0: равны\n1: лучше второй"


def _args(url: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--max-tokens", "32", "--no-progress",
            "--verdict-format", "tagged", "--backoff-s", "0.001", "--concurrency", "1", "--max-retries", "1", *extra]


def _response(model: str, items: list[tuple[int, str | int | None, list[JudgeResult]]]) -> dict:
    n = sum(len(results) for _, _, results in items)
    return JudgeResponse("judge-1", "judge.result", 0, model, "seq2seq", "tagged", judge.PROMPT_VERSION,
                         [JudgeResponseItem(index, item_id, results) for index, item_id, results in items],
                         JudgeResponseUsage(n, n, 0, 0, 0)).to_json()


def _scored(criteria: list[dict]) -> list[JudgeResult]:
    """Criterion k of a request scored k (0-based), as asked."""
    return [JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2, 3], score=float(k), parse_ok=True,
                        score_source="verdict", output=GOOD.format(k=k)) for k, c in enumerate(criteria)]


def _groups(n: int) -> list[list]:
    """The sample data's first ``n`` items (prefix groups), each with all its criteria: one request each."""
    records = judge.load_records(judge.sample_data_path())
    keys = list(dict.fromkeys(judge.prefix_key(r) for r in records))[:n]
    groups = [[r for r in records if judge.prefix_key(r) == key] for key in keys]
    assert all(2 <= len(g) <= 16 for g in groups)  # one request each (batch_size 16)
    return groups


def _payload(group: list, model: str) -> dict:
    """The exact /v1/judge body judge-eval sends for one item of ``group``'s criteria."""
    first = group[0]
    return {"model": model, "items": [{"id": first.id, "instruction": first.instruction, "answer": first.answer,
                                       "reference_answer": first.reference_answer,
                                       "criteria": [{"name": r.criteria_name, "rubrics": r.rubrics} for r in group]}],
            "max_tokens": 32, "temperature": 0.0, "lenient": False, "oversize": "fail"}


@pytest.mark.parametrize("case", ["other-id", "other-index"])
def test_an_answer_for_another_item_fails_every_judgment_asked_and_the_rerun_scores_them(tmp_path, capsys, case):
    """A judge-serve answering the second and third items' requests with the first item's id (``other-id``: results
    for the same criteria, as a cache keyed on them would) or at index 1 (``other-index``): the first item is scored,
    every judgment of the other two is a request_failed row naming the ids asked and answered, none scored and none
    missing (exit 3: two answers in a row are under the streak's bound). The rerun asks only those two again, and each
    verdict lands on its own row."""
    groups = _groups(3)
    data = judge.write_jsonl([r for g in groups for r in g], tmp_path / "data.jsonl")
    out, first_id = tmp_path / "run", groups[0][0].id

    def respond(path, body):
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (item,) = body["items"]
        if item["id"] == first_id:
            return 200, _response(body["model"], [(0, item["id"], _scored(item["criteria"]))])
        answered = (0, first_id) if case == "other-id" else (1, item["id"])
        return 200, _response(body["model"], [(*answered, _scored(item["criteria"]))])

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_args(server.base_url, data, out, "--backend", "judge-serve"))
        asked = [b for b in server.bodies("/v1/judge") if b]
    assert code == 3, capsys.readouterr().err
    assert asked == [_payload(g, "judge") for g in groups]
    rows = {r["id"]: r for r in read_predictions(out)}
    assert sorted(rows) == sorted(r.id for g in groups for r in g)  # nothing dropped
    assert [rows[r.id]["score"] for r in groups[0]] == [float(k) for k in range(len(groups[0]))]
    for group in groups[1:]:
        want = group[0].id
        said = (f"HTTP 200, but the /v1/judge response's item answers id {first_id!r} at index 0, the request's "
                f"{want!r} at index 0 ({len(group)} criteria of {want})" if case == "other-id" else
                f"HTTP 200, but the /v1/judge response's item answers id {want!r} at index 1, the request's "
                f"{want!r} at index 0 ({len(group)} criteria of {want})")
        assert [(rows[r.id]["error"], rows[r.id]["score"], rows[r.id]["reason"]) for r in group] == [
            ("request_failed", None, said)] * len(group)

    def answers_well(path, body):
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (item,) = body["items"]
        return 200, _response(body["model"], [(0, item["id"], _scored(item["criteria"]))])

    with ScriptedEndpoint(answers_well, model="judge") as server:
        assert main(_args(server.base_url, data, out, "--backend", "judge-serve")) == 0
        asked = [b for b in server.bodies("/v1/judge") if b]
    assert asked == [_payload(g, "judge") for g in groups[1:]]
    rows = {r["id"]: r for r in read_predictions(out)}
    for group in groups:
        assert [(rows[r.id]["error"], rows[r.id]["score"]) for r in group] == [
            (None, float(k)) for k in range(len(group))]


def _pairs(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": f"p{k}", "instruction": f"Вопрос {k}?", "answer_1": f"Ответ {k}а.", "answer_2": f"Ответ {k}б.",
             "rubrics": RUBRICS} for k in range(n)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _pair_payload(k: int, order: str, model: str) -> dict:
    shown = (f"Ответ {k}а.", f"Ответ {k}б.") if order == "original" else (f"Ответ {k}б.", f"Ответ {k}а.")
    return {"model": model, "pairs": [{"id": f"p{k}#{order}", "instruction": f"Вопрос {k}?", "answer_1": shown[0],
                                       "answer_2": shown[1], "rubrics": RUBRICS}],
            "max_tokens": 32, "temperature": 0.0, "lenient": False}


def _tie() -> list[JudgeResult]:
    return [JudgeResult(criterion="pairwise", criterion_id=None, scale=[-1, 0, 1], feedback="r", score=0.0,
                        parse_ok=True, score_source="verdict", in_scale=True, output=TIE)]


@pytest.mark.parametrize("case", ["other-id", "other-index", "int-id"])
def test_a_pairwise_answer_for_another_pair_fails_both_its_judgments(tmp_path, capsys, case):
    """A judge-serve answering pair p1's requests (both orders) for pair p0 (``other-id``), at index 1
    (``other-index``), or with its id as the number 1 where "p1" was sent (``int-id``: echoed ids compare exactly):
    p0 and p2 are judged, each judgment of p1 is a request_failed row naming the ids, no verdict written on it."""
    data = _pairs(tmp_path, 3)

    def respond(path, body):
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (pair,) = body["pairs"]
        answered = ({"other-id": (0, "p0"), "other-index": (1, pair["id"]), "int-id": (0, 1)}[case]
                    if pair["id"].startswith("p1#") else (0, pair["id"]))
        return 200, _response(body["model"], [(*answered, _tie())])

    out = tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_args(server.base_url, data, out, "--backend", "judge-serve"))
        asked = [b for b in server.bodies("/v1/judge") if b]
    assert code == 3, capsys.readouterr().err
    assert asked == [_pair_payload(k, order, "judge") for k in range(3) for order in ("original", "swapped")]
    rows = {(r.id, r.order): r for r in read_pairwise_rows(out / PAIRWISE_PREDICTIONS)}
    assert len(rows) == 6
    for order in ("original", "swapped"):
        got = {"other-id": "id 'p0' at index 0", "other-index": f"id 'p1#{order}' at index 1",
               "int-id": "id 1 at index 0"}[case]
        row = rows[("p1", order)]
        assert (row.error, row.verdict, row.score) == ("request_failed", None, None)
        assert row.reason == (f"HTTP 200, but the /v1/judge response's item answers {got}, the request's "
                              f"'p1#{order}' at index 0 (1 judgment of pair p1 ({order}))")
    assert {(r.error, r.verdict) for key, r in rows.items() if key[0] != "p1"} == {(None, 0.0)}


NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0, max_backoff_s=0.0, asleep=lambda s: asyncio.sleep(0),
                      sleep=lambda s: None)


def _reward_result(criterion: str, score: float) -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=None, scale=[0, 1, 2], score=score, parse_ok=True,
                       in_scale=True, score_source="verdict", feedback="fb")


REWARD_SAMPLES = [RewardSample("Q0", "A0", ("A", "B")), RewardSample("Q1", "", ("A",)),
                  RewardSample("Q2", "A2", ("A",))]
REWARD_PAYLOAD = {"items": [{"instruction": "Q0", "answer": "A0", "criteria": ["A", "B"]},
                            {"instruction": "Q2", "answer": "A2", "criteria": ["A"]}], "oversize": "fail"}

# Each answer to REWARD_PAYLOAD that is no answer to it (items by (index, id, results)), and the error it raises.
WRONG_REWARD_ANSWERS = {
    "reversed": ([(1, None, [_reward_result("A", 0)]), (0, None, [_reward_result("A", 2), _reward_result("B", 2)])],
                 "/v1/judge answered the item at index 1 in the place of the sent item 0 (samples[0]): the items of a "
                 "reward request carry no id and are matched by position"),
    "an-id": ([(0, None, [_reward_result("A", 2), _reward_result("B", 2)]), (1, "s7", [_reward_result("A", 0)])],
              "/v1/judge answered the item 's7' in the place of the sent item 1 (samples[2]), which carried no id"),
}


@pytest.mark.parametrize("case", sorted(WRONG_REWARD_ANSWERS))
def test_a_reward_answer_for_other_items_is_refused_not_valued(case):
    """The reward client's items carry no id: matched by position, a response whose items come at other indexes
    (``reversed``: sample 2's verdict would be sample 0's reward) or carry an id none was sent with raises a
    ValueError naming the sample (by the caller's index: ``first``), sync and async; the same response in order is
    valued (0.75 is no other sample's value)."""
    items, said = WRONG_REWARD_ANSWERS[case]

    def respond(path, body):
        return 200, _response("m", items)

    with ScriptedEndpoint(respond) as endpoint:
        client = JudgeRewardClient(endpoint.base_url, retry=NO_WAIT, api_key_env="")
        with pytest.raises(ValueError) as sync_err:
            client.rewards(REWARD_SAMPLES)
        with pytest.raises(ValueError) as async_err:
            asyncio.run(client.arewards(REWARD_SAMPLES, first=4))  # the batch's samples 4 to 6, the sample named so
    assert [body for _, body in endpoint.requests] == [REWARD_PAYLOAD] * 2
    assert str(sync_err.value) == said
    assert str(async_err.value) == said.replace("samples[0]", "samples[4]").replace("samples[2]", "samples[6]")

    def in_order(path, body):
        return 200, _response("m", [(0, None, [_reward_result("A", 2), _reward_result("B", 1)]),
                                    (1, None, [_reward_result("A", 0)])])

    with ScriptedEndpoint(in_order) as endpoint:
        rewards = JudgeRewardClient(endpoint.base_url, retry=NO_WAIT, api_key_env="").rewards(REWARD_SAMPLES)
    assert [body for _, body in endpoint.requests] == [REWARD_PAYLOAD]
    assert [None if r is None else r.value for r in rewards] == [pytest.approx(0.75), None, 0.0]


def test_another_id_a_server_echoes_is_named_cut_short_in_the_failed_rows_reason():
    """The reason goes into every row of the request: a server's id, echoed back at any length (a proxy's, a page's
    text), is cut as the reason's other server words are (``short``), never carried whole into each row."""
    from eval.judging.backends import MalformedAnswer, judge_results

    echoed = "x" * 100_000
    body = JudgeResponse.from_json(_response("judge", [(0, echoed, _scored([{"name": "A"}]))]))
    with pytest.raises(MalformedAnswer) as refused:
        judge_results(body, 1, "1 criteria of s1", item_id="s1")
    said = str(refused.value)
    assert said == (f"HTTP 200, but the /v1/judge response's item answers id '{'x' * 199}... at index 0, the "
                    "request's 's1' at index 0 (1 criteria of s1)")


def test_an_id_a_reward_answer_carries_is_named_cut_short():
    """As judge-eval's reason: the id a server answered with, at any length, is cut in the reward client's error."""
    from judge.reward_clients import rewards_from_response
    from judge.rewards import RewardRule

    echoed = "y" * 100_000
    response = _response("m", [(0, None, [_reward_result("A", 2), _reward_result("B", 2)]),
                               (1, echoed, [_reward_result("A", 0)])])
    with pytest.raises(ValueError) as refused:
        rewards_from_response(REWARD_SAMPLES, response, RewardRule())
    assert str(refused.value) == (f"/v1/judge answered the item '{'y' * 199}... in the place of the sent item 1 "
                                  "(samples[2]), which carried no id")

"""The trl and verl reward clients report, beside ``judge_failures``, how many of those failures are judgments
judge-serve's engine refused (``engine_refused``): a judge that cannot parse and an engine refusing every long prompt
give the same zero rewards, and only this count tells them apart (as ``/get_reward``'s ``judge_engine_refused``
does for OpenRLHF). At the network boundary: a scripted judge-serve records the exact ``/v1/judge`` payloads."""

from __future__ import annotations

import asyncio

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import compute_score, compute_score_async, trl_reward_function
from judge.verdicts import VerdictError
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0, max_backoff_s=0.0, asleep=lambda s: asyncio.sleep(0),
                      sleep=lambda s: None)

REFUSED = JudgeResult(criterion="A", criterion_id=None, scale=[0, 1, 2], error=VerdictError.ENGINE_REFUSED,
                      error_reason="the engine refused the judgment (HTTP 400): the prompt is longer than its window")
UNPARSABLE = JudgeResult(criterion="B", criterion_id=None, scale=[0, 1, 2], error=VerdictError.NO_RESULT,
                         error_reason="no [RESULT] tag in the output", output="Ответ неплохой.")


def scored(criterion: str, score: int) -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=None, scale=[0, 1, 2], score=score, parse_ok=True,
                       in_scale=True, score_source="verdict", feedback="fb")


def answered(items: list[list[JudgeResult]]):
    """A ``/v1/judge`` responder whose k-th item carries ``items[k]``."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        answer = JudgeResponse("judge-1", "judge.result", 0, "judge", "seq2seq", "tagged", "pollux-ru-v1",
                               [JudgeResponseItem(k, None, results) for k, results in enumerate(items)],
                               JudgeResponseUsage(4, 2, 0, 0, 0))
        return 200, answer.to_json()
    return respond


def test_trl_logs_the_engines_refusals_next_to_the_judges_failures():
    """Sample 0: criterion A refused by the engine, B's verdict unread; sample 1: both scored. judge_failures counts
    both of sample 0's (2), judge_engine_refused only A (1); each metric logged once per call; sample 0's value is
    the default rule's worst level for each failure, (0 + 0) / 2 = 0.0; sample 1's (2/2 + 1/2) / 2 = 0.75."""
    logged: list[tuple[str, float]] = []
    with ScriptedEndpoint(answered([[REFUSED, UNPARSABLE], [scored("A", 2), scored("B", 1)]])) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A", "B"], retry=NO_WAIT, api_key_env="")
        values = asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a0", "a1"],
                                    log_metric=lambda name, value: logged.append((name, value))))
    assert [body for _, body in endpoint.requests] == [{"items": [
        {"instruction": "Q0", "answer": "a0", "criteria": ["A", "B"]},
        {"instruction": "Q1", "answer": "a1", "criteria": ["A", "B"]},
    ], "oversize": "fail"}]
    assert values == [0.0, 0.75]
    metrics = dict(logged)
    assert len(metrics) == len(logged)  # no metric logged twice
    assert metrics["pollux_judge/judge_failures"] == 2.0
    assert metrics["pollux_judge/judge_engine_refused"] == 1.0
    assert metrics["pollux_judge/failed_requests"] == 0.0 and metrics["pollux_judge/cut_completions"] == 0.0


def test_verl_returns_the_engines_refusals_for_every_sample_sync_and_async():
    """verl collects each returned key over the batch: judge_engine_refused is a number in every sample's dict.
    The mixed sample: judge_failures 2, judge_engine_refused 1, score (0 + 0) / 2 = 0.0; a sample with no answer
    (never sent) carries the same keys, each 0 but judge_empty_answer."""
    with ScriptedEndpoint(answered([[REFUSED, UNPARSABLE]])) as endpoint:
        kwargs = dict(data_source="d", solution_str="ans", ground_truth=None,
                      extra_info={"instruction": "Q", "criteria": ["A", "B"]}, judge_url=endpoint.base_url,
                      api_key_env="", max_retries=0)
        expected = {"score": 0.0, "judge_failures": 2, "judge_engine_refused": 1, "judge_gate_closed": 0,
                    "judge_empty_answer": 0}
        assert compute_score(**kwargs) == expected
        assert asyncio.run(compute_score_async(**kwargs)) == expected
        empty = compute_score(**{**kwargs, "solution_str": ""})
    sent = {"items": [{"instruction": "Q", "answer": "ans", "criteria": ["A", "B"]}], "oversize": "fail"}
    assert [body for _, body in endpoint.requests] == [sent, sent]
    assert empty == {"score": 0.0, "judge_failures": 0, "judge_engine_refused": 0, "judge_gate_closed": 0,
                     "judge_empty_answer": 1}

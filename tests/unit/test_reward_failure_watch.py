"""A judge whose verdicts keep failing is said in the log (``judge.rewards.FailedVerdictsWatch``): each failed
criterion gets the rule's ``on_failure`` value, which the policy trains on, and the counts alone went only to the
trainer's metrics."""

from __future__ import annotations

import asyncio
import logging

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import trl_reward_function
from judge.rewards import FailedVerdictsWatch, RewardRule, reward_of
from judge.wire import JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

SCALE = [0, 1, 2]


def _result(score: int | None, criterion: str = "Краткость") -> JudgeResult:
    if score is None:
        return JudgeResult(criterion=criterion, criterion_id=None, scale=SCALE, error="unparseable",
                           error_reason="no [RESULT] tag")
    return JudgeResult(criterion=criterion, criterion_id=None, scale=SCALE, score=score, parse_ok=True, in_scale=True,
                       score_source="verdict", feedback="fb")


def _rewards(*samples: list[int | None]):
    return [reward_of([_result(s) for s in sample], RewardRule()) for sample in samples]


def test_said_once_when_one_request_fails_whole_then_per_window_at_half_failed():
    """The first request whose every judgment failed is said at once; later windows of 4 judgments are said when at
    least half failed (2 of 4 yes, 1 of 4 no), each naming the window's first failure; a sample with nothing judged
    (None) adds no judgment."""
    watch = FailedVerdictsWatch(window=4, share=0.5)
    assert watch.add(_rewards([2, 1])) is None  # 2 judged, none failed
    first = watch.add(_rewards([None]) + [None])  # all of one request failed: said at once (3 judged so far)
    assert first is not None and first.startswith("all 1 judgments of one request failed (the first: Краткость: "
                                                  "unparseable): each failed criterion gets on_failure's value")
    said = watch.add(_rewards([None]))  # the window: 4 judged, 2 failed
    assert said is not None and said.startswith("2 of the last 4 judgments failed (the first: Краткость: unparseable)")
    assert watch.add(_rewards([None])) is None  # a whole request failed again: said once only, the window not full
    assert watch.add(_rewards([2, 2, 1])) is None  # 1 of 4 failed: under half
    assert watch.add(_rewards([None, 2, None, 0])).startswith("2 of the last 4 judgments failed")


def test_a_request_that_fails_whole_is_said_with_its_own_first_failure():
    """The whole-request line named the window's first failure, which an earlier request could have given: a
    "Краткость" verdict that failed beside a good one, then a request of one "Креативность" judgment failing whole,
    was said as "all 1 judgments of one request failed (the first: Краткость: …)". It names its own now; the window's
    line still names the window's first."""
    watch = FailedVerdictsWatch(window=4, share=0.5)
    assert watch.add(_rewards([2, None])) is None  # Краткость failed, beside a good verdict
    whole = [reward_of([_result(None, "Креативность")], RewardRule())]
    assert watch.add(whole).startswith("all 1 judgments of one request failed (the first: Креативность: unparseable)")
    assert watch.add(_rewards([2])).startswith("2 of the last 4 judgments failed (the first: Краткость: unparseable)")


def test_windows_only_for_verls_one_sample_calls():
    """whole_request=False (verl's): one sample's failed criterion says nothing; a window at half failed does."""
    watch = FailedVerdictsWatch(window=2, share=0.5, whole_request=False)
    assert watch.add(_rewards([None])) is None
    assert watch.add(_rewards([2])).startswith("1 of the last 2 judgments failed (the first: Краткость: unparseable)")


def _unparsed(path: str, body: dict) -> tuple[int, dict]:
    """A scripted judge-serve whose every verdict failed to parse."""
    results = [_result(None).to_json()]
    return 200, {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
                 "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
                 "items": [{"index": i, "id": None, "results": results} for i in range(len(body["items"]))],
                 "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def test_the_trl_function_says_a_judge_whose_every_verdict_failed(caplog):
    """Every verdict unparsed: each sample gets 0.0 (on_failure zero), and the log says so once, naming the reason,
    where before only <name>/judge_failures counted it."""
    criterion = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
    with ScriptedEndpoint(_unparsed) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[criterion], name="judge",
                                     retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        with caplog.at_level(logging.WARNING, logger="judge.reward_clients"):
            for _ in range(2):
                assert asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a", "b"])) == [0.0, 0.0]
    said = [r.getMessage() for r in caplog.records if r.name == "judge.reward_clients"]
    assert said == ["judge: all 2 judgments of one request failed (the first: Краткость: unparseable): each failed "
                    "criterion gets on_failure's value (its worst level unless the rule says skip), so the policy is "
                    "trained on the judge's failures; see judge_failures, and the judge's log; by criterion, failed "
                    "of judged: Краткость 2 of 2"]


def test_the_lines_count_failures_per_criterion():
    """Each line counts, per criterion judged, the failed of the judged, most failed first: which criterion's
    verdicts fail is what a person reading it must mend (a rubric, a window too small for its rationale), and the
    totals alone did not say."""
    watch = FailedVerdictsWatch(window=6, share=0.5)

    def sample(brevity: int | None, creativity: int | None):
        return reward_of([_result(brevity), _result(creativity, "Креативность")], RewardRule())

    whole = watch.add([sample(None, None)])
    assert whole.endswith("see judge_failures, and the judge's log; by criterion, failed of judged: Краткость 1 of 1, "
                          "Креативность 1 of 1")
    line = watch.add([sample(2, None), sample(None, None)])  # the window: 6 judged, 5 failed
    assert line.startswith("5 of the last 6 judgments failed (the first: Краткость: unparseable)")
    assert line.endswith("; by criterion, failed of judged: Креативность 3 of 3, Краткость 2 of 3")
    assert watch.add([sample(2, 2), sample(2, 2), sample(2, None)]) is None  # 1 of 6: the next window is its own


def test_failures_by_criterion_counts_every_judged_criterion():
    from judge.rewards import failures_by_criterion

    rewards = [reward_of([_result(None), _result(2, "Креативность")], RewardRule()), None,
               reward_of([_result(1), _result(None, "Креативность")], RewardRule()),
               reward_of([_result(None)], RewardRule())]
    assert failures_by_criterion(rewards) == {"Краткость": (2, 3), "Креативность": (1, 2)}
    assert failures_by_criterion([None]) == {}


def _trl_metrics(criteria: list[dict], results: list[JudgeResult], n_items: int) -> dict[str, float]:
    """The metrics trl's reward function logs for ``n_items`` completions, judge-serve (scripted: the network
    boundary) answering every item with ``results``."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        return 200, {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
                     "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
                     "items": [{"index": i, "id": None, "results": [r.to_json() for r in results]}
                               for i in range(len(body["items"]))],
                     "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0,
                               "total_tokens": 0}}

    metrics: dict[str, float] = {}
    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=criteria, name="judge",
                                     retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        asyncio.run(reward(prompts=[f"Q{i}" for i in range(n_items)], completions=list("abcdefgh"[:n_items]),
                           log_metric=lambda key, value: metrics.__setitem__(key, value)))
    return metrics


def test_the_trl_function_logs_failures_per_criterion():
    """Beside <name>/judge_failures, <name>/judge_failures/<criterion> per criterion the call judged (0 included):
    the metric a person watches to see which criterion's verdicts fail."""
    criteria = [{"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"},
                {"name": "Ясность", "rubrics": "0: нет\n\n1: да"}]

    results = [_result(None), JudgeResult(criterion="Ясность", criterion_id=None, scale=[0, 1], score=1, parse_ok=True,
                                          in_scale=True, score_source="verdict", feedback="fb")]
    metrics = _trl_metrics(criteria, results, n_items=3)
    assert metrics["judge/judge_failures"] == 3.0
    assert {k: v for k, v in metrics.items() if k.startswith("judge/judge_failures/")} == {
        "judge/judge_failures/Краткость": 3.0, "judge/judge_failures/Ясность": 0.0}


def test_a_slash_in_a_criterions_name_does_not_nest_its_metric_key():
    """"… направлений / писателей" made judge/judge_failures/… направлений / писателей, a key W&B and TensorBoard
    nest at its "/": the "/" is written U+2215. Two results of one name (a criterion's domain variants) are summed
    under it; the other metrics' keys are unchanged."""
    slashed = "Знание литературных направлений / писателей"
    criteria = [{"name": slashed, "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}]

    metrics = _trl_metrics(criteria, [_result(None, slashed), _result(None, slashed), _result(2, "Ясность")], n_items=2)
    assert {k: v for k, v in metrics.items() if k.startswith("judge/judge_failures/")} == {
        "judge/judge_failures/Знание литературных направлений \u2215 писателей": 4.0,
        "judge/judge_failures/Ясность": 0.0}
    assert metrics["judge/judge_failures"] == 4.0


def test_the_warning_shows_a_servers_control_characters_as_escapes():
    """The line quotes judge-serve's words (its error code, the criterion it echoes): an ESC sequence in them reaches
    the training console as its escape, not as a screen cleared."""
    failed = JudgeResult(criterion="Краткость\x1b[2J", criterion_id=None, scale=SCALE, error="unparseable\x1b[31m")
    said = FailedVerdictsWatch(window=4, share=0.5).add([reward_of([failed], RewardRule())])
    assert said is not None and "\x1b" not in said
    assert said.startswith("all 1 judgments of one request failed (the first: Краткость\\x1b[2J: unparseable\\x1b[31m)")
    assert said.endswith("by criterion, failed of judged: Краткость\\x1b[2J 1 of 1")


def test_a_request_still_failing_after_the_retries_is_said_on_one_line(caplog):
    """judge-serve answering 503 (transient) past the retries: the trl function gives those samples None and says so,
    naming the URL, the samples and the error. The error's text goes through ``visible``, as any text a console line
    quotes: httpx's message for a 5xx holds a newline (before its "For more information" line), which raw starts a
    console line the warning's prefix does not head."""
    criterion = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
    with ScriptedEndpoint(lambda path, body: (503, {"error": {"message": "overloaded"}})) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[criterion], name="judge",
                                     retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        with caplog.at_level(logging.WARNING, logger="judge.reward_clients"):
            assert asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a", "b"])) == [None, None]
    said = [r.getMessage() for r in caplog.records if r.name == "judge.reward_clients"]
    assert len(said) == 2 and "\n" not in said[0]
    url = f"{endpoint.base_url}/judge"  # base_url ends in /v1
    assert said[0].startswith(f"judge-serve at {url} gave no rewards for 2 samples: HTTPStatusError: Server error "
                              f"'503 Service Unavailable' for url '{url}'\\nFor more information check: ")
    assert said[1].startswith("judge: 2 of 2 samples got no judge reward (None; 1 failed requests)")

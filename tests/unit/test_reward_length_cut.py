"""The trl reward and completions trl's length limit cut: told by trl's own test (the last completion id is no end or
pad id), never sent to ``/v1/judge`` (whose items carry no "cut" flag), valued as failures by the rule."""

from __future__ import annotations

import asyncio
import logging

import pytest

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import CUT_REASON, trl_reward_function
from judge.rewards import RewardRule
from tests.support.judge_in_process import brevity_scored
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
IM_END, END_OF_TEXT = 151645, 151643  # Qwen2.5's <|im_end|> (its generation_config eos) and <|endoftext|> (pad)
ENDS = [IM_END, END_OF_TEXT]
#: A criterion the client resolves as judge-serve does (a cut completion's failed result needs its name and scale).
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}


def _call(reward, completion_ids, **kwargs):
    return asyncio.run(reward(prompts=["Q0", "Q1", "Q2"], completions=["whole", "cut mid-sen", "padded"],
                              completion_ids=completion_ids, trainer_state=None, **kwargs))


@pytest.mark.parametrize("rule, expected", [(RewardRule(), 0.0), (RewardRule(on_failure="skip"), None)])
def test_a_cut_completion_is_not_sent_and_gets_the_rules_failure_value(rule, expected):
    """Ids ending in an end id (Q0) or the pad id (Q2) are whole and sent; ids ending elsewhere (Q1) ran to
    max_completion_length: the body holds the other two only, and Q1's criterion fails "cut", valued by on_failure
    (zero: 0.0, skip: None), in the completions table and counted in <name>/cut_completions."""
    extra, metrics = {}, {}
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, rule=rule,
                                     end_token_ids=ENDS)
        values = _call(reward, [[7, IM_END], [7, 8, 9], [7, END_OF_TEXT]],
                       log_extra=lambda column, vs: extra.setdefault(column, vs),
                       log_metric=lambda name, v: metrics.setdefault(name, v))
    assert endpoint.requests == [("/v1/judge", {"items": [
        {"instruction": "Q0", "answer": "whole", "criteria": [BREVITY]},
        {"instruction": "Q2", "answer": "padded", "criteria": [BREVITY]},
    ], "oversize": "fail"})]  # fmt: skip
    assert values == [1.0, expected, 1.0]
    assert extra["pollux_judge_verdicts"] == ["Краткость: 2 — fb", f"({CUT_REASON}) Краткость: failed (cut)",
                                              "Краткость: 2 — fb"]
    assert metrics["pollux_judge/cut_completions"] == 1.0
    assert metrics["pollux_judge/judge_failures"] == 0.0  # the policy's cut, not the judge's failure


def test_a_batch_of_cut_completions_sends_no_request():
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, end_token_ids=ENDS)
        assert _call(reward, [[1], [2, 3], [4]]) == [0.0, 0.0, 0.0]
    assert endpoint.requests == []


def test_a_cut_completions_row_says_why_in_the_completions_table():
    """A reader of trl's completions table sees why a cut row was not judged, once per row however many criteria
    failed `cut`: the reason names the length limit."""
    extra: dict = {}
    with ScriptedEndpoint(brevity_scored) as endpoint:
        clarity = {"name": "Ясность", "rubrics": "0: неясно\n\n1: ясно"}
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY, clarity], retry=NO_WAIT,
                                     end_token_ids=ENDS)
        _call(reward, [[1], [2, 3], [4]], log_extra=lambda column, vs: extra.setdefault(column, vs))
    assert endpoint.requests == []
    rows = extra["pollux_judge_verdicts"]
    assert rows == [f"({CUT_REASON}) Краткость: failed (cut) | Ясность: failed (cut)"] * 3
    assert "max_completion_length" in CUT_REASON


def test_without_end_ids_every_completion_is_judged_and_a_warning_says_so_once(caplog):
    """No end_token_ids: nothing tells a cut completion, all three are sent as before, and one warning (not one per
    call) says cut completions are judged as if whole."""
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, name="judge")
        with caplog.at_level(logging.WARNING, logger="judge.reward_clients"):
            assert _call(reward, [[7, IM_END], [7, 8, 9], [7, END_OF_TEXT]]) == [1.0, 1.0, 1.0]
            assert _call(reward, [[7, IM_END], [7, 8, 9], [7, END_OF_TEXT]]) == [1.0, 1.0, 1.0]
    assert [len(body["items"]) for _, body in endpoint.requests] == [3, 3]
    assert [r.getMessage() for r in caplog.records] == [
        "judge: no end_token_ids given: a completion max_completion_length cut is judged as if it were whole (pass "
        "the tokenizer's eos and pad ids and the model's generation_config eos ids)"]


def test_a_refusal_still_names_the_batch_row_past_a_cut_completion():
    """A cut row's criteria are resolved as judge-serve would (an unknown one refused, naming that row, before any
    request), and a cut row left out of the request keeps the rows after it at their batch index: judge-serve's
    items[1] is samples[2]."""
    from judge.reward_clients import RewardRequestRefused

    def refuse(path, body):
        return 400, {"error": {"message": "items[1].criteria[0]: no scale", "type": "invalid_request_error",
                               "param": "items[1].criteria[0]", "code": "invalid_request"}}

    with ScriptedEndpoint(refuse) as endpoint:
        unknown = trl_reward_function(endpoint.base_url, criteria=["Нет такого"], retry=NO_WAIT, end_token_ids=ENDS)
        with pytest.raises(ValueError, match=r"samples\[1\]\.criteria\[0\]"):
            _call(unknown, [[7, IM_END], [7, 8], [7, END_OF_TEXT]])
        assert endpoint.requests == []
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, end_token_ids=ENDS)
        with pytest.raises(RewardRequestRefused) as refused:
            _call(reward, [[7, IM_END], [7, 8], [7, END_OF_TEXT]])
    assert refused.value.sample == 2 and refused.value.param == "samples[2].criteria[0]"


def test_end_token_ids_without_an_id_are_refused_when_the_function_is_built():
    """An empty end_token_ids would take every completion for a cut one, and every reward would be the failure's
    value with no error: refused at once, naming the entry. A None beside real ids (a tokenizer without a pad id)
    is passed over: the completion ending in the eos id is whole, and sent."""
    for given, message in (([], r"^end_token_ids: no token id in it"), ([None], r"^end_token_ids: no token id in it"),
                           ([IM_END, "151643"], r"^end_token_ids\[1\]: '151643' is not a token id"),
                           ([True], r"^end_token_ids\[0\]: True is not a token id"),
                           ([-1], r"^end_token_ids\[0\]: -1 is not a token id"),
                           (IM_END, r"^end_token_ids: expected a list of token ids, got int")):
        with pytest.raises(ValueError, match=message):
            trl_reward_function("http://127.0.0.1:9", criteria=[BREVITY], end_token_ids=given)
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, end_token_ids=[IM_END, None])
        assert _call(reward, [[7, IM_END], [7, 8, 9], [7, IM_END]]) == [1.0, 0.0, 1.0]
    assert [len(body["items"]) for _, body in endpoint.requests] == [2]

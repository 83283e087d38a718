"""An HTTP 200 to a reward request whose body is no JSON the client can read (a proxy's HTML page, JSON nested past
what json.loads holds) is no answer to the request: a ValueError naming the URL, in the data readers' words
(``judge.plumbing.json_reading.unreadable_answer``), never a bare JSONDecodeError or RecursionError."""

from __future__ import annotations

import asyncio

import pytest

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import JudgeRewardClient, RewardSample
from tests.support.deep_json import nested_arrays
from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
SAMPLE = RewardSample("Вопрос", "Ответ", ("Краткость",))


@pytest.mark.parametrize(("data", "said"), [
    pytest.param(nested_arrays(200_000).encode(), "unreadable JSON: nested too deeply", id="nested-too-deeply"),
    pytest.param(b"<html>", "invalid JSON (Expecting value at line 1, column 1)", id="html"),
    pytest.param(b'{"items": [1' + b"1" * 5000 + b"]}", "unreadable JSON: a number too long to read", id="long-number"),
    pytest.param(b'{"items": "\xff"}', "not UTF-8 text (byte 0xff at byte 11)", id="not-utf-8"),
])
@pytest.mark.parametrize("awaited", [False, True], ids=["rewards", "arewards"])
def test_a_200_the_client_cannot_read_is_a_value_error_naming_the_url(data, said, awaited):
    with ScriptedEndpoint(lambda path, body: (200, RawBody(data))) as endpoint:
        client = JudgeRewardClient(endpoint.base_url, retry=NO_WAIT)
        with pytest.raises(ValueError) as refused:
            asyncio.run(client.arewards([SAMPLE])) if awaited else client.rewards([SAMPLE])
    assert type(refused.value) is ValueError
    assert str(refused.value).startswith(f"{endpoint.base_url}/judge answered HTTP 200, but the answer is {said}")
    assert len(endpoint.requests) == 1  # not retried: the same body would come back


@pytest.mark.parametrize(("status", "data", "said"), [
    pytest.param(201, b"<html>", "invalid JSON (Expecting value at line 1, column 1)", id="201-html"),
    pytest.param(203, b'{"items": "\xff"}', "not UTF-8 text (byte 0xff at byte 11)", id="203-not-utf-8"),
])
def test_another_2xx_the_client_cannot_read_is_said_with_its_own_status(status, data, said):
    # raise_for_status passes any 2xx: a proxy's 201 is no "HTTP 200"
    with ScriptedEndpoint(lambda path, body: (status, RawBody(data))) as endpoint:
        client = JudgeRewardClient(endpoint.base_url, retry=NO_WAIT)
        with pytest.raises(ValueError) as refused:
            client.rewards([SAMPLE])
    assert str(refused.value).startswith(f"{endpoint.base_url}/judge answered HTTP {status}, but the answer is {said}")

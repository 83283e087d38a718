"""A refused reward request names the URL that refused it (whoever answers there: a proxy, another server at a
wrong port, not always judge-serve), and the client takes judge-serve's root given with the endpoint's own path."""

from __future__ import annotations

import pytest

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import JudgeRewardClient, RewardRequestRefused, RewardSample
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
SAMPLE = RewardSample("Вопрос", "Ответ", ("Краткость",))


@pytest.mark.parametrize("given", ["http://judge:8000", "http://judge:8000/", "http://judge:8000/v1",
                                   "http://judge:8000/v1/", "http://judge:8000/v1/judge", "http://judge:8000/v1/judge/"])
def test_the_root_the_base_url_or_the_endpoints_url_all_post_to_v1_judge(given):
    assert JudgeRewardClient(given).url == "http://judge:8000/v1/judge"


def test_a_refusal_names_the_url_that_refused():
    """A server with no /v1/judge (a 404 from whatever listens there): the error names the URL posted to."""
    with ScriptedEndpoint(lambda path, body: (404, {"detail": "Not Found"})) as endpoint:
        with pytest.raises(RewardRequestRefused) as refused:
            JudgeRewardClient(endpoint.base_url, retry=NO_WAIT).rewards([SAMPLE])
    url = f"{endpoint.base_url}/judge"  # base_url is the OpenAI base URL, ending in /v1
    assert str(refused.value) == f"the reward request to {url} was refused (HTTP 404): Not Found"
    assert (refused.value.status, refused.value.url) == (404, url)
    assert [path for path, _ in endpoint.requests] == ["/v1/judge"]


def test_a_refusal_whose_json_json_loads_cannot_hold_is_said_as_its_text():
    """A 400 whose body is JSON nested past the recursion limit (a hostile or broken proxy): the refusal read its
    ``error`` with json.loads and let the RecursionError through, a traceback naming no URL; it is a refusal naming
    the URL, the body's text as the server sent it (cut)."""
    from tests.support.malformed_answers import DEEP_JSON

    with ScriptedEndpoint(lambda path, body: (400, DEEP_JSON)) as endpoint:
        with pytest.raises(RewardRequestRefused) as refused:
            JudgeRewardClient(endpoint.base_url, retry=NO_WAIT).rewards([SAMPLE])
    assert str(refused.value).startswith(f"the reward request to {endpoint.base_url}/judge was refused (HTTP 400): "
                                         '{"id": "x", "choices": [[[[')
    assert (refused.value.status, refused.value.param, refused.value.sample) == (400, None, None)


def test_a_refusals_message_is_shown_with_its_control_characters_escaped():
    """A server's "\\x1b[2J" (clear the screen) reaches the training console as the escape's text, not the escape;
    the exception's ``message`` keeps the server's words as ``server_message`` reads them (on one line)."""
    body = {"error": {"message": "bad\x1b[2J\nrow", "type": "invalid_request_error"}}
    with ScriptedEndpoint(lambda path, body_sent: (400, body)) as endpoint:
        with pytest.raises(RewardRequestRefused) as refused:
            JudgeRewardClient(endpoint.base_url, retry=NO_WAIT).rewards([SAMPLE])
    url = f"{endpoint.base_url}/judge"
    assert str(refused.value) == f"the reward request to {url} was refused (HTTP 400): bad\\x1b[2J row"
    assert refused.value.message == "bad\x1b[2J row"

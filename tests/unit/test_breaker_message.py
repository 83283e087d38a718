"""``FailingStreak``'s exit-4 message names what the streak's failures were: a streak of timeouts (a healthy server
slower than --timeout-s on long items) is not sent to check the endpoint's quota and health."""

from __future__ import annotations

import httpx
import openai

from judge.plumbing.failing_streak import FailingStreak

URL = "http://judge.invalid/v1/chat/completions"


def _request(read_s: float = 600.0) -> httpx.Request:
    # What httpx attaches to every request it sends: the client's timeouts, which a TimeoutException carries along.
    return httpx.Request("POST", URL, extensions={"timeout": httpx.Timeout(read_s).as_dict()})


def _status_error(status: int) -> openai.APIStatusError:
    response = httpx.Response(status, request=_request(), json={"error": {"message": "upstream gave up"}})
    return openai.APIStatusError("upstream gave up", response=response, body=None)


def _message(failures: list[BaseException]) -> str:
    streak = FailingStreak(len(failures))
    for i, failure in enumerate(failures):
        streak.offer(failure, key=i)
    err = streak.error("the judge (served)", 5, 12, 100)
    message = str(err)
    assert "\n" not in message
    return message


def test_a_streak_of_client_timeouts_names_the_timeout_not_the_endpoints_health():
    message = _message([openai.APITimeoutError(request=_request(30.0)) for _ in range(3)]
                       + [httpx.ReadTimeout("timed out", request=_request(30.0)) for _ in range(3)])
    assert "all 6 timed out after 30 s: a slow server on long items? raise --timeout-s" in message
    assert "quota" not in message and message.endswith("then rerun to resume)")


def test_a_timeout_without_its_request_still_says_timed_out():
    message = _message([httpx.ReadTimeout("timed out") for _ in range(3)])
    assert "all 3 timed out: a slow server on long items? raise --timeout-s" in message


def test_a_streak_of_gateway_timeouts_names_the_server_or_proxy():
    message = _message([_status_error(504), _status_error(408), _status_error(504)])
    assert "all 3 timed out at the server or a proxy before it (HTTP 504/408)" in message
    assert "quota" not in message and "HTTP 504: upstream gave up" in message


def test_a_streak_with_other_failures_still_points_at_the_endpoint():
    message = _message([openai.APITimeoutError(request=_request()), _status_error(503),
                        httpx.ConnectError("refused", request=_request())])
    assert "check the endpoint (its quota, its health)" in message and "timed out" not in message


def test_an_answer_between_starts_the_kinds_again():
    streak = FailingStreak(2)
    streak.offer(_status_error(503), key="a")
    streak.offer(None)  # an answer: the 503 is no longer part of the streak
    streak.offer(openai.APITimeoutError(request=_request(10.0)), key="b")
    streak.offer(openai.APITimeoutError(request=_request(10.0)), key="c")
    assert "all 2 timed out after 10 s" in str(streak.error("the candidate (x)", 5, 3, 10))


def test_a_streak_mixing_client_and_server_timeouts_names_both_timeouts():
    """A proxy's 504s beside the client's own timeouts: raising --timeout-s alone would not help the 504s."""
    import httpx

    from judge.plumbing.failing_streak import FailingStreak

    streak = FailingStreak(2)
    request = httpx.Request("POST", "http://judge/v1/chat/completions")
    streak.offer(httpx.ReadTimeout("slow", request=request), "a")
    streak.offer(httpx.HTTPStatusError("504", request=request, response=httpx.Response(504, request=request)), "b")
    message = str(streak.error("the judge", 2, 2, 10))
    assert "raise --timeout-s and the server's or its proxy's timeout (504/408)" in message
    assert "quota" not in message

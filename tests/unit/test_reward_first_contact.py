"""The trl reward function's first contact: a judge URL nothing answers at stops training at the first step, where
every request failing "transiently" would give None (NaN, no advantage) at every step and never stop the run; a
request that fails after a good first contact stays a transient failure."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judge.plumbing.retry import EndpointUnusable, RetryPolicy
from judge.reward_clients import trl_reward_function
from judge.wire import JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
JUDGED = {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
          "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
          "items": [{"index": 0, "id": None, "results": [
              JudgeResult(criterion="Краткость", criterion_id=None, scale=[0, 1, 2], score=2, parse_ok=True,
                          in_scale=True, score_source="verdict").to_json()]}],
          "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def _call(reward):
    return asyncio.run(reward(prompts=["Вопрос"], completions=["Ответ"]))


def test_a_judge_url_nothing_answers_at_raises_at_the_first_call_naming_it():
    # A port held bound but never listening, through the call: refused, and no other process can take it meanwhile.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}"
        reward = trl_reward_function(url, criteria=[BREVITY], retry=NO_WAIT)
        with pytest.raises(EndpointUnusable, match=rf"^judge-serve at {url}/v1 cannot be reached \(ConnectError"):
            _call(reward)


def test_a_failed_request_after_a_good_first_contact_is_transient():
    """The first call's request gets a 503 (None: no reward this step), the next call's a verdict; neither raises,
    and the first contact was made once."""
    answers = iter([(503, {"error": {"message": "engine restarting"}}), (200, JUDGED)])
    with ScriptedEndpoint(lambda path, body: next(answers)) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT)
        assert _call(reward) == [None]
        assert _call(reward) == [1.0]
    assert endpoint.gets == ["/v1/models"]
    assert [path for path, _ in endpoint.requests] == ["/v1/judge", "/v1/judge"]


class _ClosesOnPost(BaseHTTPRequestHandler):
    """judge-serve's model list on GET; on POST, the connection closed with no answer at all (a server killed
    mid-request, a proxy dropping it): the client's attempt fails at the connection, not with a status."""

    posts: list[str] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        data = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.posts.append(self.path)
        self.close_connection = True  # returning unanswered: the server closes the socket


def test_a_connection_lost_after_a_good_first_contact_is_transient():
    """The first contact answered, the judging request's connection closed unanswered: None for the sample (no
    reward this step), counted as a failed request, and no raise: only the first contact's failure stops training."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ClosesOnPost)
    server.daemon_threads = True
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    serving.start()
    metrics: dict[str, float] = {}
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        reward = trl_reward_function(url, criteria=[BREVITY], retry=NO_WAIT)
        assert asyncio.run(reward(prompts=["Вопрос"], completions=["Ответ"], log_metric=metrics.setdefault)) == [None]
    finally:
        server.shutdown()
        server.server_close()
    assert _ClosesOnPost.posts == ["/v1/judge"]
    assert metrics["pollux_judge/failed_requests"] == 1.0


def test_a_refused_key_at_first_contact_names_the_variable(monkeypatch):
    monkeypatch.setenv("JUDGE_SERVE_API_KEY", "wrong")
    refuse = lambda path: (401, {"error": {"message": "missing or wrong API key"}})  # noqa: E731
    with ScriptedEndpoint(lambda path, body: (200, JUDGED), respond_get=refuse) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT)
        with pytest.raises(EndpointUnusable, match=r"refused the key from \$JUDGE_SERVE_API_KEY \(HTTP 401"):
            _call(reward)
    assert endpoint.requests == []


def test_verl_names_the_judge_url_a_request_could_not_reach():
    """verl calls compute_score once per sample and shows its traceback: the connection error (httpx's own words name
    no URL) carries a note naming judge-serve's URL and the retries' bound, and keeps its type."""
    import httpx

    from judge.reward_clients import compute_score

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}"
        with pytest.raises(httpx.ConnectError) as failed:
            compute_score("d", "Ответ", None, {"instruction": "Вопрос", "criteria": ["Креативность"]},
                          judge_url=url, max_retries=0)
    assert failed.value.__notes__ == [f"judge-serve at {url}/v1/judge: still failing after the retries (max_retries=0)"]

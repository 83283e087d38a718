"""The synthetic stages' ``timeout_s`` ("per-request timeout in seconds") bounds the whole answer, not each read: a
server that sends its headers and then its body a few bytes at a time, each within the read timeout, held a request
(its worker, and a Ctrl-C waiting for it) for as long as it kept trickling, and its late answer was kept."""

from __future__ import annotations

import threading

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from tests.support.trickling_endpoint import trickling_endpoint
from train.synthetic.client import ChatClient
from train.synthetic.config import EndpointConfig

TEXT = "[PROBLEM] Задача [END]"


def test_an_answer_trickled_past_timeout_s_is_a_failed_request(capsys):
    done = threading.Event()
    server = trickling_endpoint(TEXT, done)
    try:
        client = ChatClient(EndpointConfig(model="scripted", base_url=server.base_url, max_tokens=64), max_retries=0,
                            timeout_s=0.5)
        result = client.complete("q")
    finally:
        done.set()
        server.close()
    capsys.readouterr()  # the scripted server's own report of the hand-made answer
    assert server.bodies("/v1/chat/completions") == [
        {"model": "scripted", "messages": [{"role": "user", "content": "q"}], "temperature": 0.7, "max_tokens": 64}]
    assert (result.ok, result.text, result.attempts) == (False, "", 1)
    assert result.error == "APITimeoutError: Request timed out. (no whole answer within timeout_s 0.5 s)"
    assert result.outage is not None  # a timeout: counted by the endpoint's watch as the SDK's own timeouts are


def test_an_answer_whole_in_time_is_read_and_leaves_no_timer_behind():
    with ScriptedEndpoint(lambda path, body: (200, chat_completion(TEXT, body["model"]))) as server:
        client = ChatClient(EndpointConfig(model="scripted", base_url=server.base_url), max_retries=0, timeout_s=30)
        result = client.complete("q")
    assert (result.ok, result.text, result.attempts) == (True, TEXT, 1)
    # the deadline's timer is cancelled once the body is read: none waits out its 30 s
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    for timer in timers:
        timer.join(1)
    assert not [t for t in timers if t.is_alive()]

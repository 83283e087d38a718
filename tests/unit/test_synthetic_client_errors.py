"""The synthetic pipeline's chat client on an exception the SDK raises past its own error types, and the retry module
importing httpx at import, not in a worker thread."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.malformed_answers import UNREADABLE_200
from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint
from train.synthetic.client import ChatClient
from train.synthetic.config import EndpointConfig


def test_an_exception_that_is_not_the_sdk_s_error_is_a_failed_result_naming_it(monkeypatch):
    """A thread that read httpx while another was importing it raised ``AttributeError`` from inside the SDK's call;
    ``complete`` caught only ``openai.APIError``, so it escaped the worker and stopped the stage with a traceback."""
    client = ChatClient(EndpointConfig(name="t", model="teacher", base_url="http://127.0.0.1:9/v1"), max_retries=0)

    sent: list[dict] = []

    def create(**kwargs):
        sent.append(kwargs)
        raise AttributeError("partially initialized module 'httpx' has no attribute 'Timeout'")

    monkeypatch.setattr(client._client.chat.completions, "create", create)
    result = client.complete("q")
    # what reached the SDK: the endpoint's model, one user turn, EndpointConfig's defaults (0.7, 1024, no extra body)
    assert sent == [{"model": "teacher", "messages": [{"role": "user", "content": "q"}], "temperature": 0.7,
                     "max_tokens": 1024, "extra_body": None}]
    assert (result.ok, result.text, result.attempts) == (False, "", 1)
    assert "AttributeError" in result.error and "partially initialized" in result.error


def test_retry_imports_httpx_when_it_is_imported_not_in_a_worker_thread():
    """``is_transient`` imported httpx at a stage's first failed attempt, in several worker threads at once, while
    the openai SDK's threads read it; imported with the module, no thread meets it half-initialised. A fresh
    interpreter, where nothing else imported httpx."""
    code = "import sys; import judge.plumbing.retry; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True"]
    import inspect

    from judge.plumbing import retry

    assert "import httpx" not in inspect.getsource(retry.is_transient)


@pytest.mark.parametrize("body, said", UNREADABLE_200)
def test_a_200_body_json_cannot_read_is_said_in_the_readers_words(body, said):
    """A 200 whose body is valid JSON json.loads cannot hold was "unexpected RecursionError: maximum recursion depth
    exceeded ..." or Python's advice to call sys.set_int_max_str_digits: said as eval's backends say it."""
    with ScriptedEndpoint(lambda path, sent: (200, RawBody(body))) as endpoint:
        client = ChatClient(EndpointConfig(name="t", model="teacher", base_url=endpoint.base_url), max_retries=0)
        result = client.complete("q")
    assert (result.ok, result.text, result.error, result.attempts) == (False, "", said, 1)
    assert [path for path, _ in endpoint.requests] == ["/v1/chat/completions"]

"""judge-serve's client-facing refusals, each as a client meets it: a request that can never succeed refused with its
own 4xx naming the field (while an engine restarts too, not the 503 that says to retry), a
proxied generation bounded by the tokens it really costs, and an engine answer that cannot be read a 502, not a 500.
The app runs in process in front of a scripted engine on 127.0.0.1 (``tests.unit.test_serve_attached_engine``'s
``_attached``), with the openai SDK where a client would use it."""

from __future__ import annotations

import contextlib

import pytest

from tests.unit import test_serve_attached_engine as attached
from tests.unit.test_serve_attached_engine import AUTH, _attached

#: A comparison scale, criterion included, as a pairwise client writes it.
PAIR_SCALE = "Какой ответ лучше по корректности?\n-1: первый\n0: одинаково\n1: второй"


@contextlib.contextmanager
def _restarting(tiny_causal_dir, monkeypatch):
    """judge-serve attached to a stand-in engine, its generator marked as restarting (503, Retry-After 5). The restart
    is faked: no /health probe of the attached engine (every 5 s by default) may end it meanwhile."""
    with _attached(tiny_causal_dir, monkeypatch, attached_probe_interval_s=3600) as (http, engine):
        state = http.app.state.serve

        async def restarting() -> None:
            state.dead_reason["generator"] = "the generator engine exited with code 1; judge-serve is restarting it"
            state.retry_after["generator"] = 5

        http.portal.call(restarting)
        yield http, engine


def test_a_pair_too_long_for_the_context_is_refused_while_the_engine_restarts(tiny_causal_dir, monkeypatch):
    """A pair whose answer alone holds more characters than any prompt of the context's tokens could (a million
    ASCII characters against a 2,048-token window) is refused 400 naming ``pairs[0]`` while the engine restarts, as
    an item too long is: the pointwise route's size check runs before the engines' health, the pairwise one ran
    after it (a 503, Retry-After: the client sent the same pair again for ever). A valid pair still gets the 503."""
    pair = {"instruction": "Что больше, 2 или 3?", "answer_1": "3", "answer_2": "2", "rubrics": PAIR_SCALE}
    with _restarting(tiny_causal_dir, monkeypatch) as (http, engine):
        too_long = http.post("/v1/judge", headers=AUTH, json={"pairs": [pair, {**pair, "answer_2": "a" * 1_000_000}]})
        valid = http.post("/v1/judge", headers=AUTH, json={"pairs": [pair]})
    assert too_long.status_code == 400, too_long.text
    error = too_long.json()["error"]
    assert (error["param"], error["code"]) == ("pairs[1]", "context_length_exceeded"), error
    assert "retry-after" not in too_long.headers
    assert valid.status_code == 503 and valid.headers["retry-after"] == "5", valid.text
    assert engine.bodies("/v1/completions") == []


def test_a_proxied_generation_that_can_never_succeed_is_refused_while_the_engine_restarts(tiny_causal_dir,
                                                                                         monkeypatch):
    """A chat or completion asking for more than ``max_proxy_tokens``, or a body that is no JSON, gets its own 400
    while the engine restarts, as ``/v1/judge``'s requests do: before, the proxy asked the engine's health first, and
    the 503 with Retry-After had a client send the same doomed request again. A valid one still gets the 503, and
    nothing reaches the engine."""
    with _restarting(tiny_causal_dir, monkeypatch) as (http, engine):
        chat = {"model": attached.ENGINE_MODEL, "messages": [{"role": "user", "content": "Привет"}]}
        too_many = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "max_tokens": 3000, "n": 3})
        echoed = http.post("/v1/completions", headers=AUTH, json={"model": attached.ENGINE_MODEL, "prompt": "x",
                                                                  "echo": True, "max_tokens": 0, "n": 9000})
        not_json = http.post("/v1/chat/completions", headers={**AUTH, "Content-Type": "application/json"},
                             content=b'{"max_tokens": NaN}')
        valid = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "max_tokens": 4})
    for refused, param in ((too_many, "max_tokens"), (echoed, "max_tokens"), (not_json, "body")):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["param"] == param and "retry-after" not in refused.headers, refused.text
    assert valid.status_code == 503 and valid.headers["retry-after"] == "5", valid.text
    assert engine.bodies("/v1/chat/completions") == engine.bodies("/v1/completions") == []


def test_score_logprobs_that_are_no_log_probabilities_are_a_502_not_a_500(tiny_causal_dir, monkeypatch):
    """An engine answer whose score-token log-probabilities are NaN, infinite or far above 0 (JSON ``NaN`` and
    ``Infinity``, which Python's reader takes; an attached server that is not vLLM) is a 502 naming the engine's
    answer as unreadable, as any other logprobs of the wrong shape are. Before: NaN reached the expected score and the
    response could not be written (Starlette refuses NaN in JSON): a bare 500; 1000 overflowed ``math.exp``."""
    plain = attached._respond

    tokens = ["[", "FEEDBACK", "]", " Верно", ".", " [", "RESULT", "]", " ", "1", " [", "END", "]"]
    answers = {}

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/completions":
            return plain(path, body)
        assert body["logprob_token_ids"], body  # the level tokens' log-probabilities were asked for
        top = [None] * 9 + [{"0": answers["level 0"], "1": -0.1}] + [None] * 3
        choice = {**attached.VERDICT["choices"][0], "logprobs": {"tokens": tokens, "top_logprobs": top}}
        return 200, {**attached.VERDICT, "choices": [choice]}

    monkeypatch.setattr(attached, "_respond", respond)  # what _attached's engine answers with
    judged = {}
    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        for name, value in {"NaN": float("nan"), "Infinity": float("inf"), "1000": 1000.0, "-0.7": -0.7}.items():
            answers["level 0"] = value
            judged[name] = http.post("/v1/judge", headers=AUTH, json={"items": [attached.ITEM]})
    for name in ("NaN", "Infinity", "1000"):
        assert judged[name].status_code == 502, (name, judged[name].text)
        error = judged[name].json()["error"]
        assert error["code"] == "engine_error" and "could not be read" in error["message"], (name, error)
    (result,) = judged["-0.7"].json()["items"][0]["results"]
    # by hand: p(0) = e^-0.7 / (e^-0.7 + e^-0.1) = 1 / (1 + e^0.6) = 0.354..., expected = p(1) = 0.645...
    assert abs(result["score_probs"]["0"] - 0.3543) < 1e-3 and abs(result["expected_score"] - 0.6457) < 1e-3


def test_a_completion_that_echoes_without_generating_still_counts_one_token_each(tiny_causal_dir, monkeypatch):
    """``/v1/completions`` with ``echo`` and ``max_tokens: 0`` generates one token per completion all the same (vLLM
    samples with ``max_tokens`` 1 then: ``echo_without_generation`` in vllm/entrypoints/openai/completion/protocol.py),
    so ``n`` such completions are ``n`` generated tokens against ``max_proxy_tokens``. Before: counted 0 x n = 0,
    the bound held for any ``n`` (vLLM's own cap is 16,384 per prompt, 1,024 prompts). Sent with the openai SDK."""
    import openai

    with _attached(tiny_causal_dir, monkeypatch, max_proxy_tokens=256) as (http, engine):
        sdk = openai.OpenAI(base_url="http://localhost/v1", api_key="k", http_client=http, max_retries=0)
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.completions.create(model=attached.ENGINE_MODEL, prompt="2+2=", echo=True, max_tokens=0, n=257)
        sdk.completions.create(model=attached.ENGINE_MODEL, prompt="2+2=", echo=True, max_tokens=0, n=256)
        with pytest.raises(openai.BadRequestError) as batch:  # 2 prompts x 200 completions x 1 token
            sdk.completions.create(model=attached.ENGINE_MODEL, prompt=["2+2=", "3+3="], echo=True, max_tokens=0,
                                   n=200)
    assert (refused.value.code, refused.value.param) == ("too_many_tokens", "max_tokens")
    assert "= 257 > this server's max_proxy_tokens=256" in refused.value.message, refused.value.message
    assert "= 400 > this server's max_proxy_tokens=256" in batch.value.message, batch.value.message
    assert [body["n"] for body in engine.bodies("/v1/completions")] == [256]  # only the one within the bound went on


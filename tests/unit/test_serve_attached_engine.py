"""judge-serve in front of an attached engine (``--generator-url``) that is not configured as judge-serve is: it
serves under another name and another context window than judge-serve's config says, or cannot be reached in time.
The app runs in process (Starlette's TestClient) in front of a scripted vLLM on 127.0.0.1 (the network boundary);
each payload and header asserted as it crossed."""

from __future__ import annotations

import contextlib
import json
import sys

import aiohttp
import pytest
from fastapi.testclient import TestClient

from serve.app import create_app, proxied_token_bound
from serve.config import ServeConfig
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from tests.support.serve_in_process import await_bring_up

#: The attached engine's own name: a hub id, as `vllm serve Qwen/T-lite-it-1.0` serves it without
#: --served-model-name. judge-serve's own name is the checkpoint folder's (no served_model_name given).
ENGINE_MODEL = "Qwen/T-lite-it-1.0"
AUTH = {"Authorization": "Bearer k"}
VERDICT = {"choices": [{"text": "[FEEDBACK] Верно. [RESULT] 1 [END]", "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
ITEM = {"instruction": "Сколько будет 2+2?", "answer": "4",
        "criteria": [{"name": "Корректность", "rubrics": "0: нет\n1: да"}]}


def _respond(path: str, body: dict) -> tuple:
    if path == "/v1/responses":
        return 200, {"id": "resp-1", "object": "response", "status": "completed", "output": []}
    if path == "/v1/completions":
        return 200, VERDICT
    return 200, chat_completion("ok", ENGINE_MODEL)


def _listing(window: int | None):
    """The engine's GET answers: its model under its own name (with ``max_model_len`` ``window``, left out when
    None, as a server other than vLLM may), and a healthy ``/health``."""

    def respond_get(path: str) -> tuple:
        if path == "/v1/models":
            entry = {"id": ENGINE_MODEL, "object": "model", "created": 0, "owned_by": "vllm"}
            return 200, {"object": "list", "data": [entry if window is None else {**entry, "max_model_len": window}]}
        return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})

    return respond_get


@contextlib.contextmanager
def _attached(model_dir, monkeypatch, window: int | None = 2048, raising: bool = True, **settings):
    """judge-serve (no served_model_name, config max_model_len 4096 unless ``settings`` say otherwise, the default
    max_proxy_tokens 8192) in front of a scripted engine serving ``ENGINE_MODEL`` with a ``window``-token context;
    yields ``(client, engine)`` once judge-serve is ready. ``raising=False``: a bug in judge-serve is answered as a
    client sees it (its 500), not raised into the test."""
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(_respond, respond_get=_listing(window)) as engine:
        config = ServeConfig(model=str(model_dir), generator_url=engine.url, api_key="k", **settings).validate()
        with TestClient(create_app(config), base_url="http://localhost", raise_server_exceptions=raising) as http:
            await_bring_up(http)
            assert http.get("/ready").status_code == 200, http.get("/health").text
            yield http, engine


@pytest.mark.parametrize(("window", "settings"), [(2048, {}), (None, {"max_model_len": 2048})],
                         ids=["the-engines-listed-window", "the-configured-window"])
def test_a_proxied_request_naming_no_max_tokens_gets_at_most_the_engines_window(tiny_causal_dir, monkeypatch,
                                                                                window, settings):
    """A plain ``chat.completions.create(model, messages)`` (no max_tokens) was sent with max_proxy_tokens // n =
    8192 tokens, which vLLM refuses on any window below it ("max_tokens=8192 cannot be greater than
    max_model_len=4096"): what vLLM alone serves failed behind judge-serve, /v1/responses' max_output_tokens alike.
    The share added is at most the generating engine's window: the one it lists (2048 here, over judge-serve's
    configured 4096), else the configured one; a smaller share (8192 // 8) stays as it was. A completion naming none
    gets nothing added: it generates vLLM's default of 16 tokens, counted so."""
    chat = {"model": ENGINE_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    completion = {"model": ENGINE_MODEL, "prompt": "2+2="}
    response = {"model": ENGINE_MODEL, "input": "hi"}
    with _attached(tiny_causal_dir, monkeypatch, window, **settings) as (http, engine):
        answers = [http.post("/v1/chat/completions", headers=AUTH, json=chat),
                   http.post("/v1/completions", headers=AUTH, json=completion),
                   http.post("/v1/responses", headers=AUTH, json=response),
                   http.post("/v1/chat/completions", headers=AUTH, json={**chat, "n": 8})]
    assert [answer.status_code for answer in answers] == [200] * 4, [answer.text for answer in answers]
    assert engine.bodies("/v1/chat/completions") == [{**chat, "max_tokens": 2048}, {**chat, "n": 8, "max_tokens": 1024}]
    assert engine.bodies("/v1/completions") == [completion]  # vLLM's own default, 16 tokens (serve.proxy_bounds)
    assert engine.bodies("/v1/responses") == [{**response, "max_output_tokens": 2048}]


def test_best_of_is_not_counted_against_max_proxy_tokens(tiny_causal_dir, monkeypatch):
    """vLLM 0.32's chat and completion requests have no ``best_of`` (an unknown field, ignored: it generates
    ``max_tokens`` x ``n``), so 1,000 tokens with ``best_of`` 10 are 1,000 tokens, within max_proxy_tokens 8192, and
    pass unchanged (before: a 400, 1000 x 10 > 8192)."""
    body = {"model": ENGINE_MODEL, "prompt": "2+2=", "max_tokens": 1000, "best_of": 10}
    assert proxied_token_bound(body, "/v1/completions", 8192) == (body, None)
    chat = {"model": ENGINE_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000, "best_of": 10}
    assert proxied_token_bound(chat, "/v1/chat/completions", 8192) == (chat, None)
    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        answer = http.post("/v1/completions", headers=AUTH, json=body)
    assert answer.status_code == 200, answer.text
    assert engine.bodies("/v1/completions") == [body]


@pytest.mark.parametrize(("value", "words"), [({"n": 1}, "an object"), ([1], "a list"), ("8", "a string"),
                                              (True, "true"), (1.5, "a number")])  # fmt: skip
def test_a_token_bound_of_another_json_kind_is_a_400_in_json_words(value, words):
    """A client's ``max_tokens`` that is no integer is refused naming its JSON kind; an object was "got dict"."""
    body = {"model": ENGINE_MODEL, "prompt": "2+2=", "max_tokens": value}
    kept, refused = proxied_token_bound(body, "/v1/completions", 8192)
    assert kept is body and refused.status_code == 400
    error = json.loads(refused.body)["error"]
    assert (error["message"], error["param"]) == (f"max_tokens: must be an integer, got {words}", "max_tokens")


def test_an_engine_serving_under_another_name_answers_to_both_names_everywhere(tiny_causal_dir, monkeypatch):
    """An attached engine serving ``Qwen/T-lite-it-1.0`` while judge-serve's own name is the folder's: /v1/models
    lists the engine's entry (the proxied routes take its name, as vLLM does), and /v1/judge and
    ``GET /v1/models/{id}`` answer to both names: /v1/judge never refuses the listed name ("the model
    `Qwen/T-lite-it-1.0` does not exist; this server serves `tiny-causal0`"), which would fail every request of
    ``judge-eval run`` without --model (models[0]["id"]), nor ``GET /v1/models/tiny-causal0`` its own name with a 404
    "the model `tiny-causal0` does not exist; this server serves `tiny-causal0`"."""
    own = ServeConfig(model=str(tiny_causal_dir)).model_name
    assert own != ENGINE_MODEL
    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        listed = http.get("/v1/models", headers=AUTH).json()["data"]
        by_engine_name = http.get(f"/v1/models/{ENGINE_MODEL}", headers=AUTH)
        by_own_name = http.get(f"/v1/models/{own}", headers=AUTH)
        unknown = http.get("/v1/models/gpt-4", headers=AUTH)
        judged = {name: http.post("/v1/judge", headers=AUTH, json={"model": name, "items": [ITEM]})
                  for name in (listed[0]["id"], own, "gpt-4")}
    assert [entry["id"] for entry in listed] == [ENGINE_MODEL] and listed[0]["max_model_len"] == 2048
    assert by_engine_name.status_code == by_own_name.status_code == 200
    assert by_own_name.json() == by_engine_name.json() == listed[0]
    assert judged[ENGINE_MODEL].status_code == 200 and judged[own].status_code == 200, judged[ENGINE_MODEL].text
    assert judged[ENGINE_MODEL].json()["items"][0]["results"][0]["score"] == 1
    message = f"model: the model `gpt-4` does not exist; this server serves `{ENGINE_MODEL}` or `{own}`"
    assert (unknown.status_code, judged["gpt-4"].status_code) == (404, 404)
    assert unknown.json()["error"] == judged["gpt-4"].json()["error"] == {
        "message": message, "type": "not_found_error", "param": "model", "code": "model_not_found"}
    # Both judgments went to the engine under its own name.
    assert [body["model"] for body in engine.bodies("/v1/completions")] == [ENGINE_MODEL, ENGINE_MODEL]


def test_a_generation_naming_judge_serves_own_name_reaches_the_engine_under_its_name(tiny_causal_dir, monkeypatch):
    """``GET /v1/models/{own}`` answers 200, so a client may name judge-serve's own name in a chat, completion or
    response request: each is sent under the engine's name (vLLM would answer 404 "The model `tiny-causal0` does not
    exist"), every other field as the client sent it; the engine's own name and an unknown one are passed on as
    they are (an unknown one is the engine's to refuse)."""
    own = ServeConfig(model=str(tiny_causal_dir)).model_name
    messages = [{"role": "user", "content": "hi"}]
    bodies = {"/v1/chat/completions": {"messages": messages, "max_tokens": 7, "temperature": 0.5},
              "/v1/completions": {"prompt": "2+2=", "max_tokens": 7},
              "/v1/responses": {"input": "hi", "max_output_tokens": 7}}
    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        answered = {path: [http.post(path, headers=AUTH, json={"model": name, **body}).status_code
                           for name in (own, ENGINE_MODEL, "gpt-4")] for path, body in bodies.items()}
    assert answered == {path: [200, 200, 200] for path in bodies}  # the scripted engine answers any name
    for path, body in bodies.items():
        assert engine.bodies(path) == [{"model": ENGINE_MODEL, **body}, {"model": ENGINE_MODEL, **body},
                                       {"model": "gpt-4", **body}], path


def test_judgments_are_checked_against_the_attached_engines_window(tiny_causal_dir, monkeypatch):
    """judge-serve's config says 4096, the attached engine serves 2048: an answer of ~2,200 tokens is refused as
    judge-serve refuses any item that cannot fit, a 400 naming the item, nothing sent; before, it was checked against
    the configured 4096 and sent to an engine that cannot hold it."""
    long_item = {**ITEM, "answer": "слово " * 1100}  # ~2,200 tokens: within 4096, not within 2048
    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        refused = http.post("/v1/judge", headers=AUTH, json={"items": [long_item], "max_tokens": 16})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["param"], error["code"]) == ("items[0]", "context_length_exceeded")
    assert "the model's context of 2048 " in error["message"], error["message"]
    assert engine.bodies("/v1/completions") == []


def test_an_engine_that_cannot_be_connected_to_in_time_is_unavailable_not_slow(tiny_causal_dir, monkeypatch):
    """aiohttp's connect timeout (``ConnectionTimeoutError``) is a TimeoutError too: it made an attached engine that
    cannot be reached a 504 "did not answer within 600 s" (on /v1/judge "the judgment took longer than
    request_timeout_s"), without Retry-After. No connection was made: it is the 503 with Retry-After of an engine
    that cannot be reached, on the proxied routes and /v1/judge alike."""
    import serve.engine_client

    attempts: list[tuple[str, str]] = []
    real_request = serve.engine_client.EngineHttp.request

    async def request(self, method: str, url: str, **kwargs):
        if method != "POST":  # judge-serve's probes and the model list still reach the engine
            return await real_request(self, method, url, **kwargs)
        attempts.append((method, url))
        raise aiohttp.ConnectionTimeoutError(f"Connection timeout to host {url}")

    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        monkeypatch.setattr(serve.engine_client.EngineHttp, "request", request)
        chat = http.post("/v1/chat/completions", headers=AUTH,
                         json={"model": ENGINE_MODEL, "messages": [{"role": "user", "content": "hi"}]})
        judged = http.post("/v1/judge", headers=AUTH, json={"items": [ITEM]})
    assert attempts == [("POST", engine.url + "/v1/chat/completions"), ("POST", engine.url + "/v1/completions")]
    assert (chat.status_code, judged.status_code) == (503, 503), (chat.text, judged.text)
    assert chat.headers["retry-after"] == judged.headers["retry-after"] == "5"
    assert chat.json()["error"] == {"message": "the generator engine is unreachable (ConnectionTimeoutError)",
                                    "type": "service_unavailable", "param": None, "code": "engine_unavailable"}
    # a judgment's 503 names the cause as the proxied route's does
    assert judged.json()["error"] == {"message": "the generator engine is unreachable (ConnectionTimeoutError)",
                                      "type": "service_unavailable", "param": None, "code": "engine_unavailable"}


def test_a_judge_requests_id_goes_with_each_of_its_engine_calls(tiny_causal_dir, monkeypatch):
    """``X-Request-Id`` is passed to the engine on the proxied routes; the engine calls of a /v1/judge request (one
    per criterion) and of a /get_reward request carried none, so the engine's log could not be tied to the client's
    request. Each carries the client's id now (vLLM adds a suffix of its own, so calls may share one)."""
    two_criteria = {**ITEM, "criteria": [*ITEM["criteria"], {"name": "Краткость", "rubrics": "0: нет\n1: да"}]}
    prompt = "<|im_start|>user\nСколько будет 2+2?<|im_end|>\n<|im_start|>assistant\n"
    reward = {"query": [prompt + "4<|im_end|>"], "prompts": [prompt], "labels": [{"instruction": ITEM["instruction"],
                                                                            "criteria": ITEM["criteria"]}]}
    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        judged = http.post("/v1/judge", headers={**AUTH, "X-Request-Id": "abc"}, json={"items": [two_criteria]})
        rewarded = http.post("/get_reward", headers={**AUTH, "X-Request-Id": "def"}, json=reward)
    assert judged.status_code == 200 and rewarded.status_code == 200, (judged.text, rewarded.text)
    assert judged.headers["x-request-id"] == "abc"
    posted = [headers for headers in engine.headers if headers.get("content-type") == "application/json"]
    assert [(headers.get("x-request-id"), headers.get("authorization")) for headers in posted] == [
        ("abc", "Bearer engine-key"), ("abc", "Bearer engine-key"), ("def", "Bearer engine-key")]
    assert len(engine.bodies("/v1/completions")) == 3


@pytest.mark.parametrize("listing", ["unreachable", "hangs", "unreadable"])
def test_an_engine_back_whose_model_list_cannot_be_read_keeps_what_judge_serve_knew(listing):
    """An attached engine taken back on a /health of 200 whose /v1/models fails, hangs or says nothing readable: the
    name and window read before stay (judge-serve's own config would be a guess: its name is the folder's, and vLLM
    answers 404 to it), and a hanging list is given up after the probe's bound instead of holding up the watch of
    every engine for the session's 600-s read timeout."""
    import asyncio
    from types import SimpleNamespace

    from serve.supervision import _follow_the_engine

    class Http:
        async def probe_request(self, method, url, hop=None, **kwargs):  # the probe session: never queued behind generations
            assert (method, url) == ("GET", "http://engine/v1/models")
            if listing == "unreachable":
                raise aiohttp.ClientConnectionError("refused")
            if listing == "hangs":
                await asyncio.Event().wait()
            content = SimpleNamespace(read=lambda n: asyncio.sleep(0, b'{"data": []}' if n > 1 else b""))
            return SimpleNamespace(content_length=None, content=content, release=lambda: None)

    settings = SimpleNamespace(engine_models={"generator": ENGINE_MODEL}, max_model_len=2048)
    state = SimpleNamespace(http=Http(), engines={"generator": SimpleNamespace(url="http://engine", auth_headers={})},
                            engine_models={"generator": ENGINE_MODEL}, engine_windows={"generator": 2048},
                            judge=SimpleNamespace(settings=settings),
                            config=SimpleNamespace(model_name="tiny-causal0", max_model_len=4096))
    asyncio.run(_follow_the_engine(state, "generator", timeout_s=0.05))
    assert (state.engine_models, state.engine_windows) == ({"generator": ENGINE_MODEL}, {"generator": 2048})
    assert state.judge.settings is settings


#: Requests that can never succeed, each with the status and field of its refusal (and a valid one, None: the 503).
NEVER = {
    "unknown criterion": ({"items": [{**ITEM, "criteria": ["Нет такого критерия"]}]}, 400, "items[0].criteria[0]"),
    "unknown model": ({"model": "nope", "items": [ITEM]}, 404, "model"),
    "max_tokens past the server's": ({"max_tokens": 100_000, "items": [ITEM]}, 400, "max_tokens"),
    "a rubric with no scale": ({"items": [{**ITEM, "criteria": [{"name": "Своё", "rubrics": "плохо"}]}]}, 400,
                               "items[0].criteria[0].rubrics"),
    "a valid request": ({"items": [ITEM]}, 503, None),
}


def test_a_request_that_can_never_succeed_is_refused_while_the_engine_restarts(tiny_causal_dir, monkeypatch):
    """While the engine restarts, /v1/judge answers a request that can never succeed (an unknown criterion or
    model, max_tokens past the server's, a rubric with no scale) with its own 4xx naming the field, not the 503 with
    Retry-After that tells the client to send it again (its checks ran after the engines' health); a valid request
    still gets that 503. /get_reward refuses a bad label at once too, without waiting for the engine. Nothing
    reaches the engine."""
    prompt = "<|im_start|>user\nСколько будет 2+2?<|im_end|>\n<|im_start|>assistant\n"
    reward = {"query": [prompt + "4"], "prompts": [prompt],
              "labels": [{"instruction": ITEM["instruction"], "criteria": ["Нет такого критерия"]}]}
    # The restart is faked: a /health probe of the attached engine (every 5 s by default) found the stand-in
    # healthy and its GET /version a 404, and judge-serve failed mid-test (its 503s then carry no Retry-After).
    with _attached(tiny_causal_dir, monkeypatch, reward_engine_wait_s=30.0,
                   attached_probe_interval_s=3600) as (http, engine):
        state = http.app.state.serve

        async def restarting() -> None:
            state.dead_reason["generator"] = "the generator engine exited with code 1; judge-serve is restarting it"
            state.retry_after["generator"] = 5

        http.portal.call(restarting)
        answers = {case: http.post("/v1/judge", headers=AUTH, json=body) for case, (body, _, _) in NEVER.items()}
        rewarded = http.post("/get_reward", headers=AUTH, json=reward)
    for case, (_, status, param) in NEVER.items():
        assert (answers[case].status_code, answers[case].json()["error"]["param"]) == (status, param), answers[case].text
        assert ("retry-after" in answers[case].headers) == (status == 503), case
    assert answers["unknown criterion"].json()["error"] == {
        "message": "items[0].criteria[0]: unknown criterion 'Нет такого критерия'", "type": "invalid_request_error",
        "param": "items[0].criteria[0]", "code": "invalid_request"}
    assert answers["unknown model"].json()["error"]["code"] == "model_not_found"
    assert rewarded.status_code == 400 and rewarded.json()["error"]["param"] == "labels[0].criteria[0]", rewarded.text
    assert engine.bodies("/v1/completions") == []


def test_a_model_list_larger_than_the_cap_is_a_502_saying_so(tiny_causal_dir, monkeypatch):
    """``GET /v1/models`` reads the engine's list whole (to add judge-serve's fields): past ``MAX_ANSWER_BYTES`` (a
    few hundred bytes here, the engine's list a little more) it is a 502 in OpenAI's shape saying the list is too
    large, not a list read into memory however large. (Before: read whole.)"""
    import serve.app

    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        monkeypatch.setattr(serve.app, "MAX_ANSWER_BYTES", 100, raising=False)
        listed = http.get("/v1/models", headers=AUTH)
    assert listed.status_code == 502, listed.text
    assert listed.json()["error"]["code"] == "engine_error" and "over 100 bytes" in listed.json()["error"]["message"]


def test_a_model_list_nested_past_the_decoders_depth_is_a_502(tiny_causal_dir, monkeypatch):
    """``GET /v1/models`` decodes the engine's list, read from its stream, to add judge-serve's fields: a list nested
    past what ``json.loads`` holds (a RecursionError, not a ValueError) is a 502 saying it could not be read, as any
    other unreadable list, not a 500 of judge-serve's own."""
    from tests.support.scripted_endpoint import RawBody

    deep = {"on": False}
    listing = _listing

    def switchable(window):
        plain = listing(window)
        nested = RawBody(b'{"object": "list", "data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        return lambda path: (200, nested) if deep["on"] and path == "/v1/models" else plain(path)

    monkeypatch.setattr(sys.modules[__name__], "_listing", switchable)  # what _attached's engine lists with
    with _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        deep["on"] = True
        listed = http.get("/v1/models", headers=AUTH)
    assert listed.status_code == 502, listed.text
    assert listed.json()["error"] == {"message": "the generator engine's model list could not be read",
                                      "type": "server_error", "param": None, "code": "engine_error"}


def test_an_unreachable_engines_error_is_logged_with_its_control_characters_escaped(tiny_causal_dir, monkeypatch):
    """The proxy's "unreachable" warning quotes the client library's error: its text goes to the operator's console
    through ``visible``, an ESC sequence or a newline in it shown as its escape, not repainting the terminal or
    starting a line of its own. (aiohttp's own messages quote the bytes an engine sent with repr; the session here
    raises one whose text holds them raw, which the log line may not rely on never meeting.)"""
    from tests.unit.test_reward_route import judge_serve_log

    async def unreachable(*args, **kwargs):
        raise aiohttp.ClientConnectionError("reset by 10.0.0.5\x1b[2J\nforged: judge-serve ready")

    with judge_serve_log(monkeypatch) as records, _attached(tiny_causal_dir, monkeypatch) as (http, engine):
        monkeypatch.setattr(http.app.state.serve.http, "request", unreachable)
        answer = http.post("/v1/chat/completions", headers=AUTH,
                           json={"model": ENGINE_MODEL, "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 503, answer.text
    said = [r.getMessage() for r in records if "is unreachable" in r.getMessage()]
    assert said == [f"the generator engine at {engine.url} is unreachable: ClientConnectionError: reset by "
                    "10.0.0.5\\x1b[2J\\nforged: judge-serve ready"]


def test_a_bugs_log_line_shows_the_clients_path_and_request_id_with_control_characters_escaped(tiny_causal_dir,
                                                                                              monkeypatch):
    """The 500 for an unexpected error logs the request's path and its ``X-Request-Id``, both the client's: the path
    as Starlette decodes it (``%1b`` a raw ESC, ``%e2%80%a8`` a Unicode line separator; ``request.url`` drops a
    ``%0a``). Through ``visible`` they are shown as escapes, not repainting the operator's terminal or starting a
    line of their own."""
    import serve.connections
    from tests.unit.test_reward_route import judge_serve_log

    def broken(*args):
        raise ZeroDivisionError("a bug")

    with judge_serve_log(monkeypatch) as records, _attached(tiny_causal_dir, monkeypatch, raising=False) as (http, _):
        monkeypatch.setattr(serve.connections, "bearer_matches", broken)  # the key check: before any route
        answer = http.get("/m%1b[2J%0a%e2%80%a8forged", headers={**AUTH, "X-Request-Id": "id\x1b[2Jx"})
    assert answer.status_code == 500, answer.text
    said = [r.getMessage() for r in records if r.getMessage().startswith("unexpected")]
    assert said == ["unexpected ZeroDivisionError on GET /m\\x1b[2J\\u2028forged (request id id\\x1b[2Jx)"]

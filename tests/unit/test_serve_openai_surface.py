"""judge-serve's HTTP surface in process (``serve.app.create_app`` under Starlette's TestClient) in front of an
attached engine that is a scripted vLLM on 127.0.0.1 (the network boundary): the whole OpenAI surface, the
bounds and the sanitising of what the server says, each payload asserted as it crossed.

lm-eval is not installed here, so its ``local-completions`` without ``tokenizer=`` is tested at the HTTP level: its
remote tokenizer (lm_eval/models/utils.py ``RemoteTokenizer``) reads ``GET /tokenizer_info`` (its ``eos_token``),
then ``POST /tokenize`` with ``{"prompt", "add_special_tokens": false}`` and ``POST /detokenize`` with
``{"tokens"}``, on the server's root URL, with the same Bearer key.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import openai
import pytest
from fastapi.testclient import TestClient

from serve.app import create_app
from serve.config import ServeConfig
from tests.support.deep_json import nested_arrays
from tests.support.scripted_endpoint import EventStream, ScriptedEndpoint, chat_completion
from tests.support.serve_in_process import await_bring_up, decode_turns_held, on_event_loop

KEY = "surface-key"
ENGINE_KEY = "engine-secret-of-this-test"
MODEL = "attached-judge"
#: The engine's model folder, as vLLM names it on /v1/models (``root``) and /tokenizer_info (``name_or_path``).
ENGINE_FOLDER = "/srv/private/runs/judge/export"
#: What vLLM 0.32's /tokenizer_info answers (vllm/entrypoints/serve/tokenize/serving.py, TokenizerInfo: the
#: tokenizer's init_kwargs less vocab_file and merges_file, then its class and chat template): the folder is still in.
TOKENIZER_INFO = {"eos_token": "<|im_end|>", "bos_token": None, "pad_token": "<|endoftext|>", "chat_template": "{{ x }}",
                  "name_or_path": ENGINE_FOLDER, "tokenizer_file": f"{ENGINE_FOLDER}/tokenizer.json",
                  "special_tokens_map_file": f"{ENGINE_FOLDER}/special_tokens_map.json", "model_max_length": 131072,
                  "added_tokens_decoder": {"151643": {"content": "<|endoftext|>", "special": True}},
                  "tokenizer_class": "Qwen2TokenizerFast"}
#: vLLM 0.32's model card (vllm/entrypoints/serve/engine/protocol.py, ModelCard; vllm/entrypoints/openai/models/
#: serving.py show_available_models: ``root`` is the folder --model loaded).
MODEL_CARD = {"id": MODEL, "object": "model", "created": 0, "owned_by": "vllm", "root": ENGINE_FOLDER, "parent": None,
              "max_model_len": 2048, "permission": [{"id": "modelperm-1", "object": "model_permission", "created": 0,
                                                     "allow_create_engine": False, "organization": "*", "group": None}]}


#: Two chunks of a streamed chat reply, as vLLM writes them (``data: <chunk>``).
STREAM_CHUNKS = tuple(json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": MODEL,
                                  "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]})
                      for word in ("Оценка", ": 2"))  # fmt: skip
#: vLLM's in-stream error events (vllm/entrypoints/openai/chat_completion/serving.py: an exception while generating
#: becomes ``create_streaming_error_response``): an integer code, the engine's message with its paths.
VLLM_STREAM_ERRORS = {
    "stream-400": json.dumps({"error": {"message": "max_tokens too large (see /opt/models/tiny/config.json)",
                                        "type": "BadRequestError", "param": "max_tokens", "code": 400}}),
    "stream-500": json.dumps({"error": {"message": "Traceback in /home/engine/vllm/engine.py pid=4242",
                                        "type": "InternalServerError", "param": None, "code": 500}}),
}


def _respond(path: str, body: dict) -> tuple | EventStream:
    said = (body.get("messages") or [{}])[0].get("content")
    if body.get("model") == "gpt-4":  # vLLM's 404 for a model it does not serve (serving.py ``_check_model``)
        return 404, {"error": {"message": "The model `gpt-4` does not exist. Valid aliases: attached-judge.",
                               "type": "NotFoundError", "param": "model", "code": 404}}
    if body.get("stream") and said in VLLM_STREAM_ERRORS:
        return EventStream((STREAM_CHUNKS[0], VLLM_STREAM_ERRORS[said], "[DONE]"))
    if path == "/tokenize":
        return 200, {"count": 2, "max_model_len": 2048, "tokens": [9707, 1879]}
    if path == "/detokenize":
        return 200, {"prompt": "Привет мир"}
    if path == "/v1/responses":
        return 200, {"id": "resp-1", "object": "response", "status": "completed", "output": []}
    if body.get("messages") == [{"role": "user", "content": "engine-400"}]:
        # vLLM's own error shape: the type is an exception's name, the code an integer; the message has a path.
        return 400, {"error": {"message": "This model's maximum context length is 2048 tokens (see "
                                          "/opt/models/tiny/config.json)", "type": "BadRequestError", "param": None, "code": 400}}
    if path == "/v1/completions" and body.get("max_tokens") == 45:  # a 200 that is no completion (no choices)
        return 200, {"choices": []}
    if path == "/v1/completions" and body.get("max_tokens") in (47, 46):
        # A judgment the engine refuses (47: vLLM's 400 for a window the request's max_tokens overflows) or fails (46).
        if body["max_tokens"] == 46:
            return 500, {"error": {"message": "Traceback in /home/engine/vllm/engine.py", "code": 500}}
        return 400, {"error": {"message": "This model's maximum context length is 2048 tokens (see "
                                          "/opt/models/tiny/config.json)", "type": "BadRequestError", "param": None, "code": 400}}
    if body.get("messages") == [{"role": "user", "content": "engine-500"}]:
        return 500, {"error": {"message": "Traceback in /home/engine/vllm/engine.py pid=4242", "type": "InternalServerError", "code": 500}}
    return 200, chat_completion("ok", MODEL)


def _respond_get(path: str) -> tuple:
    if path == "/v1/models":
        return 200, {"object": "list", "data": [MODEL_CARD]}
    if path == "/version":
        return 200, {"version": "0.32.0"}
    if path == "/tokenizer_info":
        return 200, TOKENIZER_INFO
    if path == "/health":
        return 200, {}
    if path == "/metrics":
        return 200, {"vllm:num_requests_running": 0}
    return 404, {"detail": "Not Found"}


@pytest.fixture
def engine():
    with ScriptedEndpoint(_respond, respond_get=_respond_get) as endpoint:
        yield endpoint


def _client(model_dir, engine_url: str, monkeypatch, raise_server_exceptions: bool = True, **settings) -> TestClient:
    monkeypatch.setenv("VLLM_API_KEY", ENGINE_KEY)  # the attached engine's key, as judge-serve is given it
    config = ServeConfig(model=str(model_dir), served_model_name=MODEL, generator_url=engine_url, max_model_len=2048,
                         max_tokens=48, max_proxy_tokens=256, **settings).validate()  # fmt: skip
    return TestClient(create_app(config), base_url="http://localhost", raise_server_exceptions=raise_server_exceptions)


def _ready(client: TestClient) -> TestClient:
    await_bring_up(client)
    assert client.get("/ready").status_code == 200, client.get("/health").text
    return client


AUTH = {"Authorization": f"Bearer {KEY}"}


def test_models_retrieve_with_the_openai_sdk(tiny_causal_dir, engine, monkeypatch):
    """``client.models.retrieve(id)`` answers the engine's model entry; an unknown id raises the SDK's
    NotFoundError with OpenAI's string code ``model_not_found`` (before: 404 from FastAPI, ``{"detail": ...}``)."""
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        sdk = openai.OpenAI(base_url="http://localhost/v1", api_key=KEY, http_client=_ready(http), max_retries=0)
        model = sdk.models.retrieve(MODEL)
        assert (model.id, model.object, model.owned_by) == (MODEL, "model", "vllm")
        with pytest.raises(openai.NotFoundError) as missing:
            sdk.models.retrieve("gpt-4")
        assert missing.value.code == "model_not_found" and missing.value.body["param"] == "model"
        assert [m.id for m in sdk.models.list()] == [MODEL]


def test_lm_eval_remote_tokenizer_calls_pass_through_behind_the_key(tiny_causal_dir, engine, monkeypatch):
    """What lm-eval's local-completions reaches for without ``tokenizer=`` (``/tokenizer_info``, ``/tokenize``,
    ``/detokenize``), ``/version`` and ``/v1/responses`` reach the engine unchanged, with the engine's key and not the
    client's; without judge-serve's key each is a 401 in OpenAI's shape."""
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        assert http.get("/tokenizer_info", headers=AUTH).json()["eos_token"] == "<|im_end|>"
        tokenized = http.post("/tokenize", headers=AUTH, json={"prompt": "Привет мир", "add_special_tokens": False})
        assert tokenized.json()["tokens"] == [9707, 1879]
        assert http.post("/detokenize", headers=AUTH, json={"tokens": [9707, 1879]}).json() == {"prompt": "Привет мир"}
        assert http.get("/version", headers=AUTH).json() == {"version": "0.32.0"}
        assert http.post("/v1/responses", headers=AUTH, json={"model": MODEL, "input": "hi"}).json()["id"] == "resp-1"
        for method, path in [("GET", "/tokenizer_info"), ("POST", "/tokenize"), ("POST", "/detokenize"),
                             ("GET", "/version"), ("POST", "/v1/responses"), ("GET", f"/v1/models/{MODEL}")]:  # fmt: skip
            refused = http.request(method, path, json={})
            assert refused.status_code == 401, path
            assert refused.json()["error"]["code"] == "invalid_api_key", path
    assert engine.bodies("/tokenize") == [{"prompt": "Привет мир", "add_special_tokens": False}]
    assert engine.bodies("/detokenize") == [{"tokens": [9707, 1879]}]
    # Every request judge-serve passed on carried the engine's key (its /health probes need none), never the client's.
    assert {h.get("authorization") for h in engine.headers if h.get("content-type")} == {f"Bearer {ENGINE_KEY}"}
    assert all(h.get("authorization") != f"Bearer {KEY}" for h in engine.headers)


def test_every_error_is_openai_shaped_with_a_string_code_and_no_internals(tiny_causal_dir, engine, monkeypatch):
    """An unknown route, a wrong method, an engine's 400 (vLLM's ``BadRequestError`` with an integer code) and an
    engine's 500 all answer ``{"error": {"message", "type", "param", "code"}}`` with a string code; the 400 keeps
    the engine's message without its file path, the 500 becomes a 502 that names no path, file or pid."""
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        unknown = http.get("/v1/no-such-route", headers=AUTH)
        wrong_method = http.get("/v1/chat/completions", headers=AUTH)
        bad = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "messages": [{"role": "user", "content": "engine-400"}]})
        failed = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "messages": [{"role": "user", "content": "engine-500"}]})
    for answer, status in [(unknown, 404), (wrong_method, 405), (bad, 400), (failed, 502)]:
        assert answer.status_code == status
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and isinstance(error["code"], str), error
    assert unknown.json()["error"]["code"] == "not_found"
    assert bad.json()["error"] == {
        "message": "This model's maximum context length is 2048 tokens (see <path>)",
        "type": "invalid_request_error", "param": None, "code": "context_length_exceeded",
    }  # fmt: skip
    assert failed.json()["error"]["code"] == "engine_error"
    for leak in ("/home/engine", "engine.py", "4242", "127.0.0.1", engine.url):
        assert leak not in failed.text and leak not in bad.text


def test_x_request_id_is_forwarded_and_echoed(tiny_causal_dir, engine, monkeypatch):
    """A client's ``X-Request-Id`` reaches the engine and comes back on the answer; without one, judge-serve makes
    one, sends it to the engine and echoes it; errors of judge-serve's own carry it too."""
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        given = http.post("/v1/chat/completions", headers={**AUTH, "X-Request-Id": "trace-42"}, json=chat)
        made = http.post("/v1/chat/completions", headers=AUTH, json=chat)
        refused = http.post("/v1/judge", headers={"X-Request-Id": "trace-43"}, json={})
    assert given.headers["x-request-id"] == "trace-42"
    assert len(made.headers["x-request-id"]) == 32
    assert refused.status_code == 401 and refused.headers["x-request-id"] == "trace-43"
    sent = [h.get("x-request-id") for h in engine.headers if h.get("content-type")]
    assert sent[-2:] == ["trace-42", made.headers["x-request-id"]]


def test_two_request_ids_are_one_the_first_and_its_bound_holds(tiny_causal_dir, engine, monkeypatch):
    """A client that sends two ``X-Request-Id`` headers: the first is the request's id, on the answer, in the engine's
    call and in /v1/judge's, and the 200-byte bound applies to it (over it, a fresh id replaces both). Before: the
    middleware checked and echoed the last while /v1/judge sent the engine the first, so a 30,000-byte id reached
    the engine and the client was told another."""
    chat = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}).encode()
    judged = json.dumps({"items": [ITEM]}).encode()
    keyed = [(b"authorization", f"Bearer {KEY}".encode()), (b"content-type", b"application/json")]
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        proxied = http.post("/v1/chat/completions", content=chat,
                            headers=[*keyed, (b"x-request-id", b"trace-1"), (b"x-request-id", b"trace-2")])
        first = http.post("/v1/judge", content=judged,
                          headers=[*keyed, (b"x-request-id", b"trace-3"), (b"x-request-id", b"L" * 30_000)])
        long_first = http.post("/v1/judge", content=judged,
                               headers=[*keyed, (b"x-request-id", b"L" * 30_000), (b"x-request-id", b"short")])
    assert proxied.status_code == first.status_code == long_first.status_code == 200
    made = long_first.headers["x-request-id"]
    assert (proxied.headers["x-request-id"], first.headers["x-request-id"], len(made)) == ("trace-1", "trace-3", 32)
    sent = [h.get("x-request-id") for h in engine.headers if h.get("content-type")]
    assert sent == ["trace-1", "trace-3", made]


def test_proxied_generation_is_bounded_by_max_proxy_tokens(tiny_causal_dir, engine, monkeypatch):
    """``max_tokens`` x ``n`` above ``max_proxy_tokens`` (256 here) is a 400 naming the field, never sent; a chat
    request naming no ``max_tokens`` is sent with ``max_proxy_tokens // n`` (before: 6,000 tokens for one request
    on a server configured for 256)."""
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        too_many = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "max_tokens": 100, "n": 3})
        too_long = http.post("/v1/completions", headers=AUTH, json={"model": MODEL, "prompt": "x", "max_tokens": 6000})
        within = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "max_tokens": 128, "n": 2})
        unnamed = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "n": 4})
        # vLLM generates once per prompt embedding, as per prompt: 50 x 200 tokens, not 200
        embeds = http.post("/v1/completions", headers=AUTH, json={"model": MODEL, "prompt": None,
                                                                  "prompt_embeds": ["AA"] * 50, "max_tokens": 200})
    assert (embeds.status_code, embeds.json()["error"]["param"], embeds.json()["error"]["code"]) == (400, "max_tokens", "too_many_tokens")
    assert embeds.json()["error"]["message"].startswith("max_tokens: 200 tokens x 50 completions = 10000 > ")
    assert (too_many.status_code, too_many.json()["error"]["param"], too_many.json()["error"]["code"]) == (400, "max_tokens", "too_many_tokens")
    assert too_many.json()["error"]["message"].startswith("max_tokens: 100 tokens x 3 completions = 300 > ")
    assert (too_long.status_code, too_long.json()["error"]["param"]) == (400, "max_tokens")
    assert within.status_code == 200 and unnamed.status_code == 200
    assert engine.bodies("/v1/chat/completions") == [{**chat, "max_tokens": 128, "n": 2}, {**chat, "n": 4, "max_tokens": 64}]
    assert engine.bodies("/v1/completions") == []


def test_a_completion_naming_no_max_tokens_is_counted_at_the_default_16_and_sent_as_it_came(tiny_causal_dir, engine,
                                                                                             monkeypatch):
    """``/v1/completions`` without ``max_tokens`` (or with null) generates 16 tokens per completion, OpenAI's default
    and vLLM's (its CompletionRequest reads both as 16): the body goes to the engine as the client sent it, counted
    as 16 x n (x the prompts) against max_proxy_tokens (256 here). Before: it was sent with max_tokens 256, up to 16
    times the tokens the client asked for. Chat still gets the share, its default being the whole window."""
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest

    assert CompletionRequest(model=MODEL, prompt="hi").max_tokens == 16
    assert CompletionRequest(model=MODEL, prompt="hi", max_tokens=None).max_tokens == 16
    plain, null = {"model": MODEL, "prompt": "hi"}, {"model": MODEL, "prompt": "hi", "max_tokens": None}
    within = {"model": MODEL, "prompt": ["a", "b"], "n": 8}  # 16 x 2 prompts x 8 = 256
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        answers = [http.post("/v1/completions", headers=AUTH, json=body) for body in (plain, null, within)]
        too_many = http.post("/v1/completions", headers=AUTH, json={"model": MODEL, "prompt": ["a", "b"], "n": 9})
    assert [answer.status_code for answer in answers] == [200, 200, 200], [answer.text for answer in answers]
    assert engine.bodies("/v1/completions") == [plain, null, within]
    assert too_many.status_code == 400
    assert too_many.json()["error"] == {
        "message": "max_tokens: not set, so 16 tokens (the completions default) x 18 completions = 288 > this server's "
                   "max_proxy_tokens=256",
        "type": "invalid_request_error", "param": "max_tokens", "code": "too_many_tokens"}


def test_health_without_the_key_says_only_up_or_down(tiny_causal_dir, engine, monkeypatch):
    """Without the key ``/health`` is ``{"status": "up"}`` and nothing else (no engine URL, pid or restarts); with
    it, the engines' states."""
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        anonymous = http.get("/health")
        keyed = http.get("/health", headers=AUTH)
    assert (anonymous.status_code, anonymous.json()) == (200, {"status": "up"})
    # No pid even with the key (the key opens judging, not the machine's processes): run.json and the log have it.
    assert (keyed.status_code, keyed.json()) == (200, {"status": "ready", "judge_kind": "seq2seq", "engines": {
        "generator": {"state": "up", "restarts": 0, "last_exit": None}}})
    assert engine.url not in keyed.text


def test_the_model_list_and_tokenizer_info_name_no_folder_of_the_engine(tiny_causal_dir, engine, monkeypatch):
    """vLLM lists the folder --model loaded as each model's ``root``, and /tokenizer_info keeps the tokenizer's
    ``name_or_path`` and its other files: judge-serve gives no client a path (docs/security.md). ``root`` is the
    first 16 hex digits of the SHA-256 of the folder's path (``printf %s /srv/private/runs/judge/export | sha256sum``),
    which judge-eval compares a resume's recorded root with (hashing a recorded path alike); ``parent`` stays null
    (vLLM's for a base model); /tokenizer_info keeps what lm-eval reads (the special tokens, the chat template) and
    the rest that names no file. The root is a digest rather than left out, so judge-eval can still tell another
    folder an attached engine serves under the same name."""
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        listed = http.get("/v1/models", headers=AUTH)
        one = http.get(f"/v1/models/{MODEL}", headers=AUTH)
        info = http.get("/tokenizer_info", headers=AUTH)
    entry = {"id": MODEL, "object": "model", "created": 0, "owned_by": "vllm", "root": "sha256:661741d764e7309b",
             "parent": None, "max_model_len": 2048, "permission": MODEL_CARD["permission"], "judge_max_tokens": 48,
             "max_proxy_tokens": 256, "prompt_version": "pollux-ru-v2", "verdict_format": "tagged"}
    assert (listed.status_code, listed.json()) == (200, {"object": "list", "data": [entry]})
    assert (one.status_code, one.json()) == (200, entry)
    assert (info.status_code, info.json()) == (200, {
        "eos_token": "<|im_end|>", "bos_token": None, "pad_token": "<|endoftext|>", "chat_template": "{{ x }}",
        "model_max_length": 131072, "added_tokens_decoder": {"151643": {"content": "<|endoftext|>", "special": True}},
        "tokenizer_class": "Qwen2TokenizerFast"})
    assert all(ENGINE_FOLDER not in answer.text for answer in (listed, one, info))


def test_without_a_key_only_this_machines_host_names_are_served(tiny_causal_dir, engine, monkeypatch, caplog):
    """With no API key judge-serve warns that it has no authentication and answers only requests whose Host is
    this machine's (a DNS-rebinding page sends its own name: 400 naming ``host``)."""
    with caplog.at_level("WARNING", logger="judge_serve"), _client(tiny_causal_dir, engine.url, monkeypatch) as http:
        _ready(http)
        local = http.get("/v1/models")
        rebound = http.get("/v1/models", headers={"Host": "attacker.example:8000"})
    assert local.status_code == 200
    assert (rebound.status_code, rebound.json()["error"]["param"], rebound.json()["error"]["code"]) == (400, "host", "host_not_allowed")
    assert any("no api_key: judge-serve has no authentication" in r.getMessage() for r in caplog.records)


def test_without_a_key_a_web_page_of_another_site_is_refused_and_curl_is_not(tiny_causal_dir, engine, monkeypatch):
    """Without an API key a page on another site, open in a browser on this machine, could make judge-serve judge:
    a POST of ``text/plain`` (or of no type) is a "simple" request, sent without a CORS preflight, with an allowed
    Host. It carries ``Origin`` and ``Sec-Fetch-Site``, which curl and the SDKs never send: an Origin not in
    allowed_hosts (``null`` too) or ``Sec-Fetch-Site: cross-site`` is a 400 naming ``origin``, nothing sent to the
    engine (before: 200, the judgment made). A page of this machine's own host, and ``curl -d`` (no Origin, a form
    type), are served."""
    page = {"Host": "127.0.0.1:8000", "Content-Type": "text/plain;charset=UTF-8", "Sec-Fetch-Mode": "no-cors"}
    judged = json.dumps({"model": MODEL, "items": [ITEM]}).encode()
    chat = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}).encode()
    with _client(tiny_causal_dir, engine.url, monkeypatch) as http:
        _ready(http)
        refused = [
            http.post("/v1/judge", content=judged,
                      headers={**page, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}),
            http.post("/v1/chat/completions", content=chat, headers={**page, "Origin": "null"}),
            http.post("/get_reward", content=b'{"query": ["q"]}', headers={**page, "Origin": "http://evil.example:8000"}),
            http.post("/v1/chat/completions", content=chat, headers={**page, "Sec-Fetch-Site": "cross-site"}),
            http.get("/v1/models", headers={"Origin": "http://[::2]:8000"}),
            # a page of another web server on this machine (a notebook, a development server): another origin
            http.post("/v1/chat/completions", content=chat,
                      headers={**page, "Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"}),
        ]
        sent_before = len(engine.requests)
        same_host = http.post("/v1/chat/completions", content=chat, headers={
            **page, "Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"})  # fmt: skip
        curl = http.post("/v1/judge", content=judged, headers={"Content-Type": "application/x-www-form-urlencoded"})
    for answer in refused:
        assert answer.status_code == 400, answer.text
        assert (answer.json()["error"]["param"], answer.json()["error"]["code"]) == ("origin", "origin_not_allowed")
    assert refused[0].json()["error"]["message"] == (
        "origin: 'https://evil.example' is not in allowed_hosts: without an api_key judge-serve serves no web page of "
        "another site")
    assert refused[3].json()["error"]["message"].startswith("origin: a cross-site request (Sec-Fetch-Site: cross-site)")
    assert refused[5].json()["error"]["message"].startswith(
        "origin: 'http://localhost:3000' is another port than the one the request was sent to (8000)")
    assert sent_before == 0  # readiness reads GETs only: none of the refused reached the engine
    assert same_host.status_code == 200 and curl.status_code == 200, (same_host.text, curl.text)
    assert [path for path, _ in engine.requests] == ["/v1/chat/completions", "/v1/completions"]


def test_a_judgment_the_engine_refuses_keeps_the_refusal_and_one_it_fails_is_a_502(tiny_causal_dir, engine,
                                                                                    monkeypatch):
    """/v1/judge: the engine's 400 for the one judgment, in its words for a window the prompt overflows, is the
    request's 400 ``context_length_exceeded`` under the default ``oversize`` (as judge-serve's own context check
    answers), the engine's message sanitized in it (a refusal of one judgment among others:
    ``tests/unit/test_serve_engine_refusal.py``); an engine's 500 stays a 502 for the whole request, naming nothing
    internal."""
    item = {"instruction": "Сколько будет 2+2?", "answer": "4", "criteria": [{"name": "Корректность",
                                                                              "rubrics": "0: нет\n1: да"}]}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        refused = http.post("/v1/judge", headers=AUTH, json={"model": MODEL, "items": [item], "max_tokens": 47})
        failed = http.post("/v1/judge", headers=AUTH, json={"model": MODEL, "items": [item], "max_tokens": 46})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == {
        "message": "items[0]: the engine refused the prompt for criterion 'Корректность' as longer than the model's "
                   "context (engine answered 400: This model's maximum context length is 2048 tokens (see <path>)). "
                   "Shorten the answer or ask for fewer max_tokens.",
        "type": "invalid_request_error", "param": "items[0]", "code": "context_length_exceeded"}
    assert failed.status_code == 502 and failed.json()["error"]["code"] == "engine_error"
    assert "/home/engine" not in failed.text and "/opt/models" not in refused.text


ITEM = {"instruction": "Сколько будет 2+2?", "answer": "4", "criteria": [{"name": "Корректность", "rubrics": "0: нет\n1: да"}]}


def test_an_engine_answer_that_is_no_completion_is_a_502_and_a_bug_a_500_both_in_openais_shape(tiny_causal_dir, engine,
                                                                                              monkeypatch, caplog):
    """An attached engine answering 200 ``{"choices": []}`` made /v1/judge a text/plain 500 (an IndexError in the
    judging): it is a 502 saying the answer could not be read, the answer itself in judge-serve's log. Anything else
    unexpected is a 500 in OpenAI's shape with a string code, naming the request id, never Starlette's plain text."""
    import serve.judging

    with _client(tiny_causal_dir, engine.url, monkeypatch, raise_server_exceptions=False, api_key=KEY) as http:
        _ready(http)
        with caplog.at_level("ERROR", logger="judge_serve"):
            unreadable = http.post("/v1/judge", headers=AUTH, json={"items": [ITEM], "max_tokens": 45})

        async def broken(self, request, request_id=""):
            raise ZeroDivisionError("a bug")

        monkeypatch.setattr(serve.judging.Judge, "run", broken)
        bug = http.post("/v1/judge", headers={**AUTH, "X-Request-Id": "trace-7"}, json={"items": [ITEM]})
    assert unreadable.status_code == 502 and unreadable.headers["content-type"] == "application/json"
    assert unreadable.json()["error"] == {
        "message": "the engine's answer to /v1/completions could not be read (no choices); judge-serve's log has it",
        "type": "server_error", "param": None, "code": "engine_error"}
    assert "{'choices': []}" in caplog.text
    assert bug.status_code == 500 and bug.headers["content-type"] == "application/json"
    assert bug.json()["error"] == {
        "message": "judge-serve failed on this request (ZeroDivisionError, request id trace-7); its log has the "
                   "traceback", "type": "server_error", "param": None, "code": "internal_error"}


def test_metrics_and_readiness_details_are_behind_the_key(tiny_causal_dir, engine, monkeypatch):
    """The engines' metrics need the key as every route but the probes (Prometheus sends one with each scrape).
    ``/ready`` without it says only the state, as ``/health`` does: why an engine failed (its log tail, its command
    line) and which model is served are for the key's holder."""
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        metrics = {"anonymous": http.get("/metrics"), "keyed": http.get("/metrics", headers=AUTH),
                   "pooler": http.get("/metrics/pooler")}
        ready = {"anonymous": http.get("/ready").json(), "keyed": http.get("/ready", headers=AUTH).json()}
        state = http.app.state.serve
        state.status, state.failure = "failed", "the generator engine exited: python -m vllm --hf-token SECRET ..."
        failed = {"anonymous": http.get("/ready"), "keyed": http.get("/ready", headers=AUTH)}
        state.status = "ready"  # as it was, for the shutdown
    assert metrics["anonymous"].status_code == 401 and metrics["anonymous"].json()["error"]["code"] == "invalid_api_key"
    assert metrics["pooler"].status_code == 401
    assert metrics["keyed"].status_code == 200 and metrics["keyed"].json() == {"vllm:num_requests_running": 0}
    assert ready == {"anonymous": {"status": "ready"},
                     "keyed": {"status": "ready", "model": MODEL, "judge_kind": "seq2seq"}}
    assert failed["anonymous"].status_code == failed["keyed"].status_code == 503
    assert failed["anonymous"].json() == {"status": "unavailable"}
    assert "SECRET" in failed["keyed"].json()["detail"]


def test_large_bodies_are_read_off_the_event_loop_and_past_the_bounds_nothing_is_validated(tiny_causal_dir, engine,
                                                                                           monkeypatch):
    """A body past 64 KiB is decoded and checked in a worker thread, on /v1/judge and on the proxied routes: the
    event loop keeps serving (an 8 MiB array of zeros held it 6.5 s). A 400 KB /v1/judge body of 200,000 criteria is
    refused on its count of judgments (``max_judgments_per_request``) before any validation: no pydantic error is
    built, no field path walked (before: 400,001 of each, 4 s on the loop)."""
    import serve.app
    import serve.schema

    on_loop: list[tuple[str, bool]] = []

    for name in ("check_values", "parse_judge_request"):
        original = getattr(serve.app, name)
        monkeypatch.setattr(serve.app, name, lambda *a, _name=name, _original=original, **k: (
            on_loop.append((_name, on_event_loop())), _original(*a, **k))[1])
    walks = []
    monkeypatch.setattr(serve.schema, "param_of", lambda *a, **k: walks.append(a) or "")
    first_error = serve.schema._first_error
    monkeypatch.setattr(serve.schema, "_first_error", lambda err, data: walks.append(err) or first_error(err, data))
    # A large body the token bound rewrites (no max_tokens: judge-serve adds its own) is encoded again off the loop.
    import json as real_json
    from types import SimpleNamespace

    encoded_on_loop = []

    def dumps(obj, *a, **k):
        if isinstance(obj, dict) and len(obj.get("user", "")) == 100_000:
            encoded_on_loop.append(on_event_loop())
        return real_json.dumps(obj, *a, **k)

    monkeypatch.setattr(serve.app, "json", SimpleNamespace(**{**vars(real_json), "dumps": dumps}))
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    big = b'{"items":[{"instruction":"x","answer":"y","criteria":[' + b",".join([b"0"] * 200_000) + b"]}]}"
    taken = []

    class Counted(serve.schema.LargeDecodes):  # the server's own bound, which every large read waits its turn under
        def _on_running_loop(self):
            taken.append(on_event_loop())
            return super()._on_running_loop()

    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        http.app.state.serve.large_decodes = Counted(1)
        small_chat = http.post("/v1/chat/completions", headers=AUTH, json=chat)
        big_chat = http.post("/v1/chat/completions", headers=AUTH, json={**chat, "user": "u" * 100_000})
        assert taken == [True]  # the large body's decode, not the small one's
        unbounded = {key: value for key, value in chat.items() if key != "max_tokens"}
        rewritten = http.post("/v1/chat/completions", headers=AUTH, json={**unbounded, "user": "u" * 100_000})
        assert rewritten.status_code == 200 and encoded_on_loop == [False]
        assert len(taken) == 3  # its decode and its encoding again
        small_judge = http.post("/v1/judge", headers=AUTH, json={"items": [{**ITEM, "criteria": ["Нет такого"]}]})
        big_judge = http.post("/v1/judge", headers={**AUTH, "content-type": "application/json"}, content=big)
        assert len(taken) == 4
    assert small_chat.status_code == big_chat.status_code == 200
    assert small_judge.status_code == 400 and big_judge.status_code == 400
    assert big_judge.json()["error"]["param"] == "items"
    assert big_judge.json()["error"]["message"].startswith("items: 200000 (item, criterion) judgments requested")
    assert on_loop == [("check_values", True), ("check_values", False), ("check_values", False),
                       ("parse_judge_request", True), ("parse_judge_request", False)]
    assert walks == []


def test_a_model_the_engine_does_not_serve_is_model_not_found_naming_judge_serves_names(tiny_causal_dir, engine,
                                                                                         monkeypatch):
    """A proxied generation request for a model the engine lacks answers as /v1/judge and GET /v1/models/{id} do:
    404, ``param`` model, OpenAI's code ``model_not_found``, naming the names judge-serve serves (before: vLLM's
    message naming its own aliases, and the code ``not_found`` put in place of vLLM's integer 404)."""
    chat = {"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        sdk = openai.OpenAI(base_url="http://localhost/v1", api_key=KEY, http_client=_ready(http), max_retries=0)
        unknown = http.post("/v1/chat/completions", headers=AUTH, json=chat)
        with pytest.raises(openai.NotFoundError) as missing:
            sdk.completions.create(model="gpt-4", prompt="hi", max_tokens=4)
        judged = http.post("/v1/judge", headers=AUTH, json={"model": "gpt-4", "items": [ITEM]})
    assert unknown.status_code == 404
    assert unknown.json()["error"] == {"message": "model: the model `gpt-4` does not exist; this server serves "
                                                  "`attached-judge`", "type": "not_found_error", "param": "model",
                                       "code": "model_not_found"}  # fmt: skip
    assert judged.json()["error"] == unknown.json()["error"]
    assert (missing.value.code, missing.value.body["param"]) == ("model_not_found", "model")
    assert [body["model"] for body in engine.bodies("/v1/chat/completions")] == ["gpt-4"]  # the engine decided


def test_a_model_name_longer_than_any_served_is_model_not_found_without_asking_the_engine(tiny_causal_dir, engine,
                                                                                          monkeypatch):
    """A 70,000-character model name gets the same 404 as a short unknown name's, without asking the engine: the
    engine's 404 echoing it would pass the bytes judge-serve reads of an engine's error, be cut, and read as no
    404 for a model at all (its raw JSON as the message, ``param`` null)."""
    name = "m" * 70_000
    chat = {"model": name, "messages": [{"role": "user", "content": "hi"}]}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        sent_before = len(engine.bodies("/v1/chat/completions"))
        unknown = http.post("/v1/chat/completions", headers=AUTH, json=chat)
        sent_after = len(engine.bodies("/v1/chat/completions"))
    assert unknown.status_code == 404 and sent_after == sent_before
    error = unknown.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("not_found_error", "model", "model_not_found")
    assert error["message"].startswith("model: the model `mmm") and len(error["message"]) < 4_000
    assert error["message"].endswith("does not exist; this server serves `attached-judge`")


def test_a_stream_the_engine_breaks_off_ends_with_an_error_event_and_done(tiny_causal_dir, monkeypatch):
    """An engine that dies after two chunks of a streamed reply: the client gets the two chunks, then an OpenAI-shaped
    error event and ``data: [DONE]``, as vLLM ends its own failed streams, so OpenAI's SDK raises an APIError with
    a string code, not a connection error (before: the stream was cut, no error event, no [DONE]). The engine
    breaks off only once judge-serve has read both chunks."""
    import threading

    import aiohttp

    holds: list[threading.Event] = []

    def respond(path: str, body: dict) -> tuple | EventStream:
        if not body.get("stream"):
            return _respond(path, body)
        holds.append(threading.Event())
        return EventStream(STREAM_CHUNKS, cut=True, hold=holds[-1])

    # judge-serve's reads of the engine's answer (aiohttp's StreamReader): once both chunks are read, the engine may
    # break off (a break that comes first takes the data aiohttp holds with it).
    read_any, seen = aiohttp.StreamReader.readany, {}

    async def readany(reader):
        data = await read_any(reader)
        seen[id(reader)] = seen.get(id(reader), b"") + data
        if holds and all(chunk.encode() in seen[id(reader)] for chunk in STREAM_CHUNKS):
            holds[-1].set()
        return data

    monkeypatch.setattr(aiohttp.StreamReader, "readany", readany)
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 8}
    with ScriptedEndpoint(respond, respond_get=_respond_get) as engine, \
            _client(tiny_causal_dir, engine.url, monkeypatch, raise_server_exceptions=False, api_key=KEY) as http:
        sdk = openai.OpenAI(base_url="http://localhost/v1", api_key=KEY, http_client=_ready(http), max_retries=0)
        raw = http.post("/v1/chat/completions", headers=AUTH, json=chat)
        words = []
        with pytest.raises(openai.APIError) as broke:
            for chunk in sdk.chat.completions.create(**chat):
                words.append(chunk.choices[0].delta.content)
    error = {"message": "the generator engine's stream broke off (ClientPayloadError); the reply is incomplete",
             "type": "server_error", "param": None, "code": "engine_error"}
    assert raw.status_code == 200 and raw.headers["content-type"].startswith("text/event-stream")
    assert raw.text == "".join(f"data: {chunk}\n\n" for chunk in STREAM_CHUNKS) + (
        f"data: {json.dumps({'error': error})}\n\ndata: [DONE]\n\n")
    assert words == ["Оценка", ": 2"]
    assert not isinstance(broke.value, openai.APIConnectionError)
    assert (broke.value.code, broke.value.body) == ("engine_error", error)


def test_a_stream_whose_engine_is_declared_dead_while_silent_ends_with_an_error_event_and_done(tiny_causal_dir,
                                                                                               monkeypatch):
    """An attached engine that sends one chunk of a streamed reply and then goes silent, its connection open: once
    judge-serve declares it dead, the client gets the chunk, then an OpenAI-shaped error event and ``data: [DONE]``
    (in-flight calls to a dead engine are abandoned, not left hanging), not a stream held until the read timeout. The
    death is declared, as the watcher declares it, once judge-serve has read the chunk; the engine holds its
    connection open until the test ends."""
    import threading

    import aiohttp

    silent = threading.Event()

    def respond(path: str, body: dict) -> tuple | EventStream:
        if not body.get("stream"):
            return _respond(path, body)
        return EventStream(STREAM_CHUNKS[:1], cut=True, hold=silent)

    read_any, seen, states = aiohttp.StreamReader.readany, {}, []

    async def readany(reader):  # on judge-serve's event loop
        data = await read_any(reader)
        seen[id(reader)] = seen.get(id(reader), b"") + data
        if states and STREAM_CHUNKS[0].encode() in seen[id(reader)] and not states[0].dead["generator"].is_set():
            states[0].dead_reason["generator"] = "the generator engine stopped answering /health"
            states[0].dead["generator"].set()
        return data

    monkeypatch.setattr(aiohttp.StreamReader, "readany", readany)
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 8}
    try:
        with ScriptedEndpoint(respond, respond_get=_respond_get) as engine, \
                _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY, request_timeout_s=20.0) as http:
            _ready(http)
            states.append(http.app.state.serve)
            raw = http.post("/v1/chat/completions", headers=AUTH, json=chat)
    finally:
        silent.set()
    error = {"message": "the generator engine died; the reply is incomplete", "type": "server_error", "param": None,
             "code": "engine_error"}
    assert raw.status_code == 200 and raw.headers["content-type"].startswith("text/event-stream")
    assert raw.text == f"data: {STREAM_CHUNKS[0]}\n\ndata: {json.dumps({'error': error})}\n\ndata: [DONE]\n\n"


def test_judge_requests_deadline_runs_from_its_headers_the_wait_to_decode_its_body_included(tiny_causal_dir, engine,
                                                                                          monkeypatch):
    """request_timeout_s bounds a /v1/judge request end to end, as /get_reward's deadline does: a large body whose
    turn to be decoded does not come (other large bodies hold every turn) gets its 504 at the deadline, not a wait
    as long as theirs."""
    item = {**ITEM, "answer": "ответ " * 12_000}  # past the 64 KiB decoded off the loop
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY, request_timeout_s=1.0) as http:
        _ready(http)
        with decode_turns_held(http):
            late = http.post("/v1/judge", headers=AUTH, json={"items": [item]})
    assert late.status_code == 504, late.text
    assert late.json()["error"] == {
        "message": "the judgment took longer than request_timeout_s=1 s (its body's reading and decoding included)",
        "type": "timeout", "param": None, "code": "timeout"}


def test_a_proxied_requests_wait_to_decode_its_large_body_ends_at_its_deadline(tiny_causal_dir, engine, monkeypatch):
    """request_timeout_s bounds a proxied generation's wait for a turn to decode its large body, as it bounds
    /v1/judge's: with other large bodies holding every turn, a 504 in /v1/judge's shape at the deadline, and nothing
    sent to the engine."""
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "user": "u" * 100_000}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY, request_timeout_s=1.0) as http:
        _ready(http)
        with decode_turns_held(http):
            late = http.post("/v1/chat/completions", headers=AUTH, json=chat)
    assert late.status_code == 504, late.text
    assert late.json()["error"] == {
        "message": "the request's body was not decoded within request_timeout_s=1 s (its reading and the wait for a "
                   "turn to decode it included)", "type": "timeout", "param": None, "code": "timeout"}
    assert engine.bodies("/v1/chat/completions") == []


def test_a_proxied_requests_wait_to_encode_its_rewritten_body_again_ends_at_its_deadline(tiny_causal_dir, engine,
                                                                                          monkeypatch):
    """The same deadline bounds the second wait, for a turn to encode again a large body the token bound rewrote:
    its decode done, another large body takes the turn it gave back (queued before it was given back, so the order
    is the semaphore's), and the request's 504 comes at the deadline, nothing sent to the engine."""
    import threading

    import serve.app
    from serve.schema import LargeDecodes

    queued, let_go, held = threading.Event(), [], []
    check_values = serve.app.check_values

    def decoded(body):  # in the decode's worker thread, its turn held: another large body queues for that turn
        if not on_event_loop() and not held:
            held.append(http.portal.start_task_soon(hold))
            assert queued.wait(30)
        return check_values(body)

    async def hold() -> None:
        turns = http.app.state.serve.large_decodes._on_running_loop()
        let_go.append(asyncio.Event())
        queued.set()
        await turns.acquire()  # queued in this step: the decode's turn comes here as it is given back
        try:
            await asyncio.wait_for(let_go[0].wait(), 30)  # the bound only ends a failing test
        except asyncio.TimeoutError:
            pass
        finally:
            turns.release()

    monkeypatch.setattr(serve.app, "check_values", decoded)
    unbounded = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "user": "u" * 100_000}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY, request_timeout_s=1.0) as http:
        _ready(http)
        http.app.state.serve.large_decodes = LargeDecodes(1)
        late = http.post("/v1/chat/completions", headers=AUTH, json=unbounded)
        http.portal.call(let_go[0].set)
        held[0].result(30)
    assert late.status_code == 504, late.text
    assert late.json()["error"] == {
        "message": "the request's body, rewritten for the engine (its token limit or model set), was not encoded again "
                   "within request_timeout_s=1 s (its reading, its decoding and the wait for a turn to encode it "
                   "again included)", "type": "timeout", "param": None, "code": "timeout"}
    assert engine.bodies("/v1/chat/completions") == []


class _CutAnswers:
    """An engine on 127.0.0.1 whose answers, once ``cut`` is set, announce their Content-Length and close after 10
    bytes: its model list, and a 400 to every POST. With ``dies``, the first answer it cuts marks it dead in
    judge-serve's ``state`` first (as judge-serve's watcher marks an engine whose /health fails), and its /health
    answers 503 from then on, so that it stays dead."""

    MODELS = {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "vllm",
                                          "max_model_len": 2048}]}  # fmt: skip

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.cut, self.dies, self.dead, self.state = False, False, False, None
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                cut = engine.cut and self.path != "/health"
                if cut and engine.dies:
                    engine.state.dead_reason["generator"] = "the attached generator engine stopped answering /health"
                    engine.dead = True
                self.send_response(503 if engine.dead and self.path == "/health" else status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[:10] if cut else data)
                self.wfile.flush()
                if cut:
                    self.close_connection = True

            def do_GET(self):
                answers = {"/v1/models": (200, engine.MODELS), "/version": (200, {"version": "0.32.0"})}
                self._send(*answers.get(self.path, (200, {})))

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self._send(400, {"error": {"message": "bad request " * 40, "code": 400}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_engine_answer_cut_off_mid_body_is_a_502_or_a_503_when_the_engine_died(tiny_causal_dir, monkeypatch):
    """An engine answer that stops short of its Content-Length (the engine's connection dropped) while judge-serve
    reads it (the model list it extends, an error it rewrites) is a 502 ``engine_error`` saying so, or, when the
    engine died meanwhile, a 503 with ``Retry-After`` as for any dead engine. Before: a 500 ``internal_error``, as for
    a bug of judge-serve's."""
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    engine = _CutAnswers()
    try:
        with _client(tiny_causal_dir, engine.url, monkeypatch, raise_server_exceptions=False, api_key=KEY) as http:
            _ready(http)
            engine.cut = True
            cut = [http.get("/v1/models", headers=AUTH), http.get(f"/v1/models/{MODEL}", headers=AUTH),
                   http.post("/v1/chat/completions", headers=AUTH, json=chat)]
            engine.dies, engine.state = True, http.app.state.serve
            died = http.get("/v1/models", headers=AUTH)
            engine.cut = False
            after = http.post("/v1/chat/completions", headers=AUTH, json=chat)  # still dead: refused before any call
    finally:
        engine.close()
    for answer, what in zip(cut, ["model list", "model list", "error answer (400)"], strict=True):
        assert answer.status_code == 502, answer.text
        assert answer.json()["error"] == {
            "message": f"the generator engine's {what} could not be read (ClientPayloadError)",
            "type": "server_error", "param": None, "code": "engine_error"}
    assert (died.status_code, died.headers["retry-after"], died.json()["error"]["code"]) == (503, "5", "engine_unavailable")
    assert died.json()["error"]["message"] == after.json()["error"]["message"] == (
        "the attached generator engine stopped answering /health")


def test_a_number_json_has_no_place_for_is_refused_not_sent_on(tiny_causal_dir, engine, monkeypatch):
    """NaN and Infinity are no JSON (RFC 8259), and 1e999 decodes to inf: each was accepted and, the body re-encoded
    to add ``max_tokens``, sent to the engine as ``temperature: inf`` or ``NaN``. Now a 400 naming the body, or the
    field of the number too large, and nothing sent."""
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    head = json.dumps(chat)[:-1]
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        answers = {raw: http.post("/v1/chat/completions", headers={**AUTH, "Content-Type": "application/json"},
                                  content=f'{head}, "temperature": {raw}}}') for raw in ("NaN", "-Infinity", "1e999")}
    for raw, answer in answers.items():
        error = answer.json()["error"]
        assert answer.status_code == 400, raw
        if raw == "1e999":
            assert (error["param"], error["message"]) == ("temperature", "temperature: the number 1e999 is too large for a "
                                                                         "float (it decodes to infinity)")
        else:
            assert (error["param"], error["code"]) == ("body", "invalid_json")
            assert error["message"] == f"body: {raw} is not JSON (RFC 8259 has no NaN or Infinity)"
    assert engine.bodies("/v1/chat/completions") == []


def test_a_body_nested_too_deeply_is_refused_in_the_words_of_its_own_route(tiny_causal_dir, engine, monkeypatch):
    """A body nested past the decoder's limit is a 400 naming ``body`` on every route; only /v1/judge's refusal says
    how deep its own bodies nest (a proxied chat body was told "a /v1/judge body nests at most 6"). Nothing is sent
    on."""
    deep = b'{"messages": ' + nested_arrays(100_000).encode() + b"}"
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        chat = http.post("/v1/chat/completions", headers={**AUTH, "Content-Type": "application/json"}, content=deep)
        judge = http.post("/v1/judge", headers={**AUTH, "Content-Type": "application/json"},
                          content=deep.replace(b"messages", b"items"))
    for answer in (chat, judge):
        assert answer.status_code == 400
        assert (answer.json()["error"]["param"], answer.json()["error"]["code"]) == ("body", "invalid_json")
        assert answer.json()["error"]["message"].startswith("body: JSON nested too deeply to decode (more than about ")
    assert "/v1/judge" not in chat.json()["error"]["message"]
    assert judge.json()["error"]["message"].endswith("; a /v1/judge body nests at most 6)")
    assert engine.bodies("/v1/chat/completions") == []


def test_vllms_own_error_events_pass_in_judge_serves_shape(tiny_causal_dir, engine, monkeypatch, caplog):
    """vLLM's in-stream error event (an integer code, its paths) reaches the client as judge-serve's other errors do:
    a 4xx with its message sanitized and a string code, a 5xx saying only that the engine failed (its text in
    judge-serve's log); every other event passes unchanged, [DONE] included."""
    chat = {"model": MODEL, "stream": True, "max_tokens": 8}
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        with caplog.at_level("ERROR", logger="judge_serve"):
            refused, failed = (http.post("/v1/chat/completions", headers=AUTH,
                                         json={**chat, "messages": [{"role": "user", "content": said}]})
                               for said in ("stream-400", "stream-500"))
    def events(error: dict) -> str:
        return f"data: {STREAM_CHUNKS[0]}\n\ndata: {json.dumps({'error': error})}\n\ndata: [DONE]\n\n"

    assert refused.text == events({"message": "max_tokens too large (see <path>)", "type": "invalid_request_error",
                                   "param": "max_tokens", "code": "invalid_request"})
    assert failed.text == events({"message": "the generator engine failed (it answered 500); judge-serve's log has "
                                             "its message", "type": "server_error", "param": None,
                                  "code": "engine_error"})  # fmt: skip
    assert "Traceback in /home/engine/vllm/engine.py pid=4242" in caplog.text


def test_v1_judge_states_neutral_sampling_so_generation_config_json_changes_nothing(tiny_causal_dir, engine,
                                                                                   monkeypatch, tmp_path):
    """A released judge published with sampling defaults in generation_config.json (repetition_penalty 2.0, top_k
    20, ...): /v1/judge's engine request states every sampling field vLLM would take from that file at its neutral
    value, so the judge decodes as POLLUX decodes it (SamplingParams(temperature=0, max_tokens=1024), nothing
    else: ai-forever/POLLUX src/vllm_offline_generation.py). The body is pinned as it crossed, and vLLM's own
    request reading (CompletionRequest.to_sampling_params, with the defaults vLLM's ModelConfig reads from that
    folder) turns it into neutral sampling, where the body without those fields took the file's penalty and top-k."""
    import shutil
    import types

    from vllm.config.model import ModelConfig
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest

    folder = shutil.copytree(tiny_causal_dir, tmp_path / "released-judge")
    published = {"repetition_penalty": 2.0, "top_k": 20, "top_p": 0.8, "min_p": 0.1, "temperature": 0.7,
                 "do_sample": True}
    generation = json.loads((folder / "generation_config.json").read_text())
    (folder / "generation_config.json").write_text(json.dumps({**generation, **published}))
    # The copy's tokenizer files are the tiny judge's, byte for byte, and no tokenizer reads generation_config.json:
    # judge-serve gets the tokenizer already loaded from the tiny judge (a copy elsewhere would be loaded afresh);
    # everything else it reads of its model folder is the copy's.
    import serve.supervision

    load = serve.supervision.load_tokenizer
    monkeypatch.setattr(serve.supervision, "load_tokenizer",
                        lambda root: load(tiny_causal_dir if Path(root).resolve() == folder.resolve() else root))
    with _client(folder, engine.url, monkeypatch, api_key=KEY) as http:
        _ready(http)
        for temperature in (0.0, 0.7):  # a client may ask /v1/judge for sampling: top_k and top_p stay off then too
            judged = http.post("/v1/judge", headers=AUTH, json={"items": [ITEM], "temperature": temperature})
            assert judged.status_code == 200, judged.text
    bodies = engine.bodies("/v1/completions")
    neutral = {"repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0, "top_p": 1.0,
               "top_k": -1, "min_p": 0.0}
    for body, temperature in zip(bodies, (0.0, 0.7), strict=True):
        assert all(isinstance(token, int) for token in body["prompt"]) and len(body["logprob_token_ids"]) == 2
        assert {k: v for k, v in body.items() if k not in ("prompt", "logprob_token_ids")} == {
            "model": MODEL, "max_tokens": 48, "temperature": temperature, **neutral, "stop": ["[END]"],
            "include_stop_str_in_output": True, "logprobs": 2}

    # What vLLM does with it: its ModelConfig's reading of the folder's generation_config.json, as serving uses it.
    model_config = types.SimpleNamespace(
        generation_config="auto", override_generation_config={}, hf_config_path=None, model=str(folder),
        trust_remote_code=False, _hf_config_revision=None, revision=None, code_revision=None, config_format="auto",
        hf_token=None)  # fmt: skip
    model_config.try_get_generation_config = types.MethodType(ModelConfig.try_get_generation_config, model_config)
    defaults = ModelConfig.get_diff_sampling_param(model_config)
    assert {k: defaults[k] for k in ("repetition_penalty", "top_k", "top_p", "min_p")} == {
        "repetition_penalty": 2.0, "top_k": 20, "top_p": 0.8, "min_p": 0.1}
    for body in bodies:
        params = CompletionRequest(**body).to_sampling_params(48, defaults)
        assert (params.repetition_penalty, params.presence_penalty, params.frequency_penalty, params.top_p,
                params.top_k, params.min_p) == (1.0, 0.0, 0.0, 1.0, params.top_k, 0.0)
        assert params.top_k in (0, -1) and params.temperature == body["temperature"]
    bare = {k: v for k, v in bodies[1].items() if k not in neutral}
    taken = CompletionRequest(**bare).to_sampling_params(48, defaults)
    assert (taken.repetition_penalty, taken.top_k, taken.top_p, taken.min_p) == (2.0, 20, 0.8, 0.1)


@pytest.mark.parametrize("stop_at_end", [True, False])
def test_stop_at_end_false_generates_a_tagged_judge_to_the_end_of_its_turn(tiny_causal_dir, engine, monkeypatch,
                                                                           stop_at_end):
    """``stop_at_end`` (on by default) stops a tagged judge at its first ``[END]``, a stop POLLUX's generation has
    not (``SamplingParams(temperature=0, max_tokens=1024)``, ai-forever/POLLUX ``src/vllm_offline_generation.py``);
    off, the engine's body carries no stop string, and the judge writes to the end of its turn, as POLLUX's does."""
    with _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY, stop_at_end=stop_at_end) as http:
        _ready(http)
        judged = http.post("/v1/judge", headers=AUTH, json={"items": [ITEM]})
        assert judged.status_code == 200, judged.text
    [body] = engine.bodies("/v1/completions")
    stops = {k: body[k] for k in ("stop", "include_stop_str_in_output") if k in body}
    assert stops == ({"stop": ["[END]"], "include_stop_str_in_output": True} if stop_at_end else {})

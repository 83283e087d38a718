"""judge-serve's OpenAI-compatible surface at its edges: every proxied body that names a model answers to
judge-serve's own name, ``/v1/judge`` reads ``"model": ""`` as the proxied routes do, a prompt past the window is
``context_length_exceeded``, a ``/v1/judge`` 504 tells the openai SDK not to resend it, and a 413 closes its
connection with the body unread."""

from __future__ import annotations

import contextlib
import json
import socket

from serve.config import ServeConfig

KEY = "k"
AUTH = {"Authorization": f"Bearer {KEY}"}
ITEM = {"instruction": "Напиши стих.", "answer": "Весна.", "criteria": ["Креативность"]}
VLLM_WINDOW = ("This model's maximum context length is 1024 tokens. However, you requested 2000 tokens (1990 in the "
               "messages, 10 in the completion). Please reduce the length of the messages or completion.")


def _engine_answer(path: str, body: dict) -> tuple:
    """A scripted vLLM serving ``attached``: its 404 for another model on every route, its window refusal for a
    prompt of ``"long"``, a verdict for any other completion."""
    if body.get("model") not in (None, "", "attached"):
        return 404, {"error": {"message": f"The model `{body['model']}` does not exist.", "type": "NotFoundError",
                               "param": "model", "code": 404}}
    if path == "/tokenize":
        return 200, {"count": 1, "max_model_len": 1024, "tokens": [1]}
    if body.get("prompt") == "long":
        return 400, {"error": {"message": VLLM_WINDOW, "type": "BadRequestError", "param": "input_tokens",
                               "code": 400}}
    return 200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]", "finish_reason": "stop"}]}


@contextlib.contextmanager
def _served(model_dir, monkeypatch, **settings):
    """judge-serve in process (its start ended) before a scripted engine serving ``attached``; judge-serve's own
    name is ``judge``."""
    from fastapi.testclient import TestClient

    from serve.app import create_app
    from tests.support.scripted_endpoint import ScriptedEndpoint
    from tests.support.serve_in_process import attached_engine_get, await_bring_up

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    monkeypatch.delenv("JUDGE_SERVE_REWARD_KEY", raising=False)
    with ScriptedEndpoint(_engine_answer, respond_get=attached_engine_get) as engine:
        config = ServeConfig(model=str(model_dir), served_model_name="judge", generator_url=engine.url,
                             max_model_len=1024, max_tokens=128, api_key=KEY, **settings).validate()
        app = create_app(config)
        if settings.get("max_body_bytes"):
            yield app, engine
            return
        with TestClient(app, base_url="http://localhost") as http:
            await_bring_up(http)
            yield http, engine


def test_tokenize_and_detokenize_answer_to_judge_serves_own_name(tiny_causal_dir, monkeypatch):
    """An attached engine serving ``attached``: a ``/tokenize`` or ``/detokenize`` body naming ``judge`` (what
    ``GET /v1/models/judge`` answers to) reached the engine as sent, and its 404 listed only the engine's name. Now
    it goes under the engine's name, as a generation request does; a name judge-serve does not serve is the 404
    ``model_not_found`` naming both of its names; a body naming no model is sent as it came."""
    with _served(tiny_causal_dir, monkeypatch) as (http, engine):
        tokenized = http.post("/tokenize", headers=AUTH, json={"model": "judge", "prompt": "привет"})
        detokenized = http.post("/detokenize", headers=AUTH, json={"model": "judge", "tokens": [1, 2]})
        unnamed = http.post("/tokenize", headers=AUTH, json={"prompt": "hi"})
        unknown = http.post("/tokenize", headers=AUTH, json={"model": "gpt-4", "prompt": "hi"})
        sent = list(engine.requests)
    assert (tokenized.status_code, detokenized.status_code, unnamed.status_code) == (200, 200, 200), tokenized.text
    assert sent[:3] == [("/tokenize", {"model": "attached", "prompt": "привет"}),
                        ("/detokenize", {"model": "attached", "tokens": [1, 2]}), ("/tokenize", {"prompt": "hi"})]
    assert unknown.status_code == 404
    assert unknown.json()["error"] == {"message": "model: the model `gpt-4` does not exist; this server serves "
                                                  "`attached` or `judge`", "type": "not_found_error",
                                       "param": "model", "code": "model_not_found"}


def test_an_empty_model_names_none_on_judge_as_on_the_proxied_routes(tiny_causal_dir, monkeypatch):
    """``"model": ""`` was a 404 on ``/v1/judge`` and the served model on every proxied route (vLLM reads an empty
    name as none). Now ``/v1/judge`` reads it so too; a name it does not serve is still the 404."""
    with _served(tiny_causal_dir, monkeypatch) as (http, _):
        judged = http.post("/v1/judge", headers=AUTH, json={"model": "", "items": [ITEM]})
        chat = http.post("/v1/completions", headers=AUTH, json={"model": "", "prompt": "hi", "max_tokens": 4})
        other = http.post("/v1/judge", headers=AUTH, json={"model": "gpt-4", "items": [ITEM]})
    assert (judged.status_code, chat.status_code) == (200, 200), judged.text
    assert judged.json()["items"][0]["results"][0]["score"] == 1
    assert other.status_code == 404 and other.json()["error"]["code"] == "model_not_found"


def test_a_proxied_prompt_past_the_window_is_context_length_exceeded(tiny_causal_dir, monkeypatch):
    """vLLM's 400 for a prompt past the window reached an SDK client as ``invalid_request``; OpenAI's code for it,
    ``context_length_exceeded``, is what such a client checks. The message stays vLLM's."""
    with _served(tiny_causal_dir, monkeypatch) as (http, _):
        refused = http.post("/v1/completions", headers=AUTH, json={"model": "judge", "prompt": "long",
                                                                   "max_tokens": 4})
    assert refused.status_code == 400
    assert refused.json()["error"] == {"message": VLLM_WINDOW, "type": "invalid_request_error",
                                       "param": "input_tokens", "code": "context_length_exceeded"}


def test_a_judge_request_past_its_deadline_tells_the_openai_sdk_not_to_resend_it(tiny_causal_dir, monkeypatch):
    """The openai SDK resends a 5xx twice by default: a ``/v1/judge`` request that outlived ``request_timeout_s``
    would be judged up to three times for one answer. Its 504 carries ``x-should-retry: false``, which the SDK
    obeys (``openai._base_client``'s ``_should_retry``), checked here through the SDK itself."""
    import httpx
    import openai

    from tests.support.serve_in_process import decode_turns_held

    item = {**ITEM, "answer": "ответ " * 12_000}  # past the 64 KiB decoded off the loop: its turn never comes
    sent = []
    with _served(tiny_causal_dir, monkeypatch, request_timeout_s=1.0) as (http, _):

        def via_app(request: httpx.Request) -> httpx.Response:
            sent.append(request)
            answer = http.request(request.method, request.url.path, headers=dict(request.headers),
                                  content=request.content)
            return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

        client = openai.OpenAI(base_url="http://localhost/v1", api_key=KEY, max_retries=2,
                               http_client=httpx.Client(transport=httpx.MockTransport(via_app)))
        with decode_turns_held(http):
            try:
                client.post("/judge", cast_to=object, body={"items": [item]})
                raise AssertionError("the request was answered")
            except openai.APIStatusError as err:
                late = err.response
    assert late.status_code == 504 and late.headers["x-should-retry"] == "false"
    assert late.json()["error"]["code"] == "timeout" and len(sent) == 1


def _answer_then_close(port: int, request: bytes) -> tuple[bytes, bool]:
    """(what judge-serve sent, whether it closed the connection) for ``request`` sent raw and its body left unsent:
    read until judge-serve closes it; a connection still open 20 s on (well inside the 60 s header and body
    deadlines the test serves with) is one it holds."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(request)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            return received, False
        return received, True


def test_a_413_closes_its_connection_with_the_body_unread(tiny_causal_dir, monkeypatch):
    """A body over ``max_body_bytes``, declared by Content-Length (the check runs before the key's: a client
    without the key) or found while it streams: the 413 came without ``Connection: close`` and the connection went on
    reading that body, so a client trickling it held a connection slot for the whole body deadline. Now the 413
    closes it at once, as the 401 does."""
    from serve.connections import header_deadline_protocol
    from tests.support.serve_in_process import served_over_tcp

    with _served(tiny_causal_dir, monkeypatch, max_body_bytes=1000) as (app, _):
        with served_over_tcp(app, http=header_deadline_protocol(60, body_timeout_s=60)) as (url, _):
            port = int(url.rsplit(":", 1)[1])
            declared = _answer_then_close(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                b"Content-Length: 100000\r\n\r\n" + b"x" * 10)
            streamed = _answer_then_close(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                b"Authorization: Bearer k\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                b"7d0\r\n" + b"x" * 2000 + b"\r\n")
    for received, closed in (declared, streamed):
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 413 "), received[:200]
        assert b"connection: close" in head.lower() and closed
        assert json.loads(body)["error"]["code"] == "body_too_large"

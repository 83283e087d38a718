"""How ``serve.errors.relayed_stream`` passes on an engine's event stream at its edges: an event longer than
``MAX_PENDING_EVENT_BYTES`` that is no error goes on byte for byte, a ``/v1/responses`` stream cut short ends with
the Responses error event, and a refusal for a prompt past the window carries OpenAI's ``context_length_exceeded``,
in a stream as in an answer."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

import serve.errors
from serve.errors import SentStream, engine_error, relayed_stream


def _relayed(chunks, *, responses: bool = False, broken: BaseException | None = None) -> bytes:
    """What the client gets for an engine's event stream arriving in ``chunks``, then ``broken`` raised (if any)."""

    async def engine():
        for chunk in chunks:
            yield chunk
        if broken is not None:
            raise broken

    async def go():
        return b"".join([part async for part in relayed_stream(engine(), "generator", True, SentStream(responses))])

    return asyncio.run(go())


def _in_chunks(stream: bytes, size: int) -> list[bytes]:
    return [stream[at:at + size] for at in range(0, len(stream), size)]


def test_a_long_event_that_is_no_error_is_passed_on_byte_for_byte():
    """A 2 MiB event (a streamed completion with ``echo`` and ``logprobs`` sends the whole prompt's tokens in its
    first event) in 64 KiB chunks, between two small ones: every byte reaches the client, ``[DONE]`` included, not
    an error event in place of the answer."""
    big = json.dumps({"choices": [{"index": 0, "text": "слово " * 200_000,
                                   "logprobs": {"tokens": ["a"] * 40_000}}]}).encode()
    assert len(big) > 2 * serve.errors.MAX_PENDING_EVENT_BYTES
    stream = b'data: {"choices": []}\n\ndata: ' + big + b'\n\ndata: {"choices": [{"text": "!"}]}\n\ndata: [DONE]\n\n'
    assert _relayed(_in_chunks(stream, 64 * 1024)) == stream
    # its blank line split across two chunks, and chunks that end the long event and open the next one
    assert _relayed(_in_chunks(stream, 64 * 1024 + 1)) == stream
    assert _relayed(_in_chunks(stream, 1_000_003)) == stream


def test_a_long_event_that_looks_like_an_error_or_no_event_is_still_cut():
    """What the bound is for stays cut: a long error event (it is rewritten, so held, and an engine's error is small)
    and bytes with no ``data:`` line end the stream with judge-serve's error and ``[DONE]``."""
    cap = serve.errors.MAX_PENDING_EVENT_BYTES
    error = b'data: {"error": {"message": "' + b"x" * (2 * cap) + b'", "code": 400}}\n\n'
    junk = b"x" * (2 * cap) + b"\n\n"
    for tail in (error, junk):
        sent = _relayed(_in_chunks(b"data: first\n\n" + tail, 64 * 1024))
        first, cut, done, end = sent.split(b"\n\n")
        assert (first, done, end) == (b"data: first", b"data: [DONE]", b"")
        assert json.loads(cut.removeprefix(b"data: "))["error"]["code"] == "engine_error"
        assert b"xxxx" not in sent


def test_a_long_event_with_no_end_is_cut_once_past_the_passed_bound(monkeypatch):
    """An event passed on unheld is still bounded: past ``MAX_PASSED_EVENT_BYTES`` without its blank line, what was
    passed (at most the bound) is ended and the stream closes with judge-serve's error event and ``[DONE]``; no
    more is read."""
    monkeypatch.setattr(serve.errors, "MAX_PENDING_EVENT_BYTES", 1000)
    monkeypatch.setattr(serve.errors, "MAX_PASSED_EVENT_BYTES", 5000)
    consumed = []

    def chunks():
        yield b'data: {"choices": [{"text": "'
        for _ in range(100):
            consumed.append(1)
            yield b"y" * 500

    sent = _relayed(chunks())
    passed, cut, done, end = sent.split(b"\n\n")
    assert passed.startswith(b'data: {"choices": [{"text": "yyy') and 4000 < len(passed) <= 5000
    assert (done, end) == (b"data: [DONE]", b"")
    assert "longer than 5000 bytes" in json.loads(cut.removeprefix(b"data: "))["error"]["message"]
    assert len(consumed) < 15


@pytest.mark.parametrize("passing", [False, True])
def test_a_responses_stream_broken_off_ends_with_the_responses_error_event(passing, monkeypatch):
    """A ``/v1/responses`` stream the engine breaks off ends as a Responses stream does: ``event: error`` whose data
    is OpenAI's ``ResponseErrorEvent`` (code ``engine_error``, ``sequence_number`` one past the last one sent), and
    no ``data: [DONE]``, which no Responses stream carries. Also when it breaks inside an event passed on unheld."""
    from openai.types.responses import ResponseErrorEvent

    if passing:
        monkeypatch.setattr(serve.errors, "MAX_PENDING_EVENT_BYTES", 100)
    created = (b'event: response.created\ndata: {"type": "response.created", "response": {"id": "r"}, '
               b'"sequence_number": 0}\n\n')
    delta = (b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", '
             b'"delta": "\\"sequence_number\\": 99", "sequence_number": 1}\n\n')
    unended = b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "delta": "' + b"z" * 300
    sent = _relayed([created, delta[:50], delta[50:], unended], responses=True,
                    broken=aiohttp.ClientPayloadError("cut"))
    assert sent.startswith(created + delta)
    last = sent.rstrip(b"\n").split(b"\n\n")[-1]
    event, data = last.split(b"\n")
    assert event == b"event: error" and b"[DONE]" not in sent
    error = ResponseErrorEvent.model_validate_json(data.removeprefix(b"data: "))
    assert (error.type, error.code, error.sequence_number) == ("error", "engine_error", 2)
    assert error.message == "the generator engine's stream broke off (ClientPayloadError); the reply is incomplete"


def test_a_sequence_number_no_event_count_has_does_not_break_the_relay():
    """An engine's ``sequence_number`` of 5,000 digits (past what ``int`` converts) is passed on, not read: the
    stream still ends with the Responses error event, numbered after the last count it did read."""
    from openai.types.responses import ResponseErrorEvent

    first = b'event: response.created\ndata: {"type": "response.created", "sequence_number": 4}\n\n'
    odd = b'event: response.in_progress\ndata: {"type": "response.in_progress", "sequence_number": ' + b"7" * 5000 \
        + b"}\n\n"
    sent = _relayed([first, odd], responses=True, broken=aiohttp.ClientPayloadError("cut"))
    assert sent.startswith(first + odd)
    error = ResponseErrorEvent.model_validate_json(sent[len(first + odd):].split(b"\n")[1].removeprefix(b"data: "))
    assert (error.code, error.sequence_number) == ("engine_error", 5)


def test_the_closing_responses_error_is_numbered_after_the_last_event_sent_not_the_one_dropped():
    """Events 0 and 1 reach the client, event 2 is cut in two by the break and dropped: the client's next number is
    2, and the closing error event takes it."""
    from openai.types.responses import ResponseErrorEvent

    sent_events = (b'event: response.created\ndata: {"type": "response.created", "sequence_number": 0}\n\n'
                   b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", '
                   b'"sequence_number": 1, "delta": "x"}\n\n')
    dropped = b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "sequence_number": 2'
    sent = _relayed([sent_events, dropped], responses=True, broken=aiohttp.ClientPayloadError("cut"))
    assert sent.startswith(sent_events) and dropped not in sent
    error = ResponseErrorEvent.model_validate_json(sent[len(sent_events):].split(b"\n")[1].removeprefix(b"data: "))
    assert (error.code, error.sequence_number) == ("engine_error", 2)


def test_a_long_responses_error_whose_type_comes_last_is_still_cut():
    """OpenAI's ``ResponseErrorEvent`` serializes ``"type": "error"`` last, past the head of a long message; its
    ``event: error`` line names it an error: held and cut at 1 MiB, its text (a path here) never reaching the
    client, and the stream ends with judge-serve's Responses error event."""
    cap = serve.errors.MAX_PENDING_EVENT_BYTES
    error = (b'event: error\ndata: {"code": "500", "message": "' + b"T" * (2 * cap) + b' /secret/path", "param": null, '
             b'"sequence_number": 1, "type": "error"}\n\n')
    first = b'event: response.created\ndata: {"type": "response.created", "sequence_number": 0}\n\n'
    sent = _relayed(_in_chunks(first + error, 64 * 1024), responses=True)
    assert sent.startswith(first) and b"/secret" not in sent and b"TTTT" not in sent
    event, data = sent[len(first):].rstrip(b"\n").split(b"\n")
    assert event == b"event: error"
    assert (json.loads(data.removeprefix(b"data: "))["code"], json.loads(data[6:])["sequence_number"]) == (
        "engine_error", 1)


def test_a_long_event_whose_data_line_comes_after_4_kib_of_other_lines_is_passed_on():
    """A comment line and an ``id:`` line of more than the 4 KiB read to tell an error: the event is read from its
    first ``data:`` line, so a 2 MiB completion after them goes on byte for byte rather than being cut."""
    big = json.dumps({"choices": [{"index": 0, "text": "a" * (2 * serve.errors.MAX_PENDING_EVENT_BYTES)}]}).encode()
    stream = b": " + b"c" * 5000 + b"\nid: 1\ndata: " + big + b"\n\ndata: [DONE]\n\n"
    assert _relayed(_in_chunks(stream, 64 * 1024)) == stream


def test_a_long_event_broken_off_after_part_of_it_was_passed_on_ends_before_the_error_event():
    """Bytes passed on cannot be taken back: the part of a long completion event already sent is ended with a blank
    line, then judge-serve's error event and ``[DONE]`` follow. The client reads an event whose JSON is cut, which
    the openai SDK raises as ``json.JSONDecodeError`` before it reaches the error event (docs/serving.md,
    "Streams")."""
    import httpx
    import openai

    cap = serve.errors.MAX_PENDING_EVENT_BYTES
    part = b'data: {"id": "c", "object": "text_completion", "created": 1, "model": "m", "choices": [{"index": 0, ' \
        b'"text": "' + b"a" * (2 * cap)
    sent = _relayed(_in_chunks(part, 64 * 1024), broken=aiohttp.ClientPayloadError("cut"))
    passed, error, done, end = sent.split(b"\n\n")
    assert (passed, done, end) == (part, b"data: [DONE]", b"")
    assert json.loads(error.removeprefix(b"data: "))["error"]["code"] == "engine_error"

    def answer(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sent)

    client = openai.OpenAI(api_key="k", base_url="http://judge/v1", max_retries=0,
                           http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    with pytest.raises(json.JSONDecodeError):
        for _ in client.completions.create(model="m", prompt="p", stream=True):
            pass


def test_other_streams_broken_off_still_end_with_an_error_and_done():
    """A chat or completion stream keeps vLLM's ending: ``data: {"error": ...}`` then ``data: [DONE]``."""
    sent = _relayed([b'data: {"choices": []}\n\n'], broken=aiohttp.ClientPayloadError("cut"))
    first, error, done, end = sent.split(b"\n\n")
    assert (done, end) == (b"data: [DONE]", b"") and json.loads(error[6:])["error"]["code"] == "engine_error"


VLLM_WINDOW = ("This model's maximum context length is 1024 tokens. However, you requested 2000 tokens (1990 in the "
               "messages, 10 in the completion). Please reduce the length of the messages or completion.")


def test_a_refusal_for_a_prompt_past_the_window_has_openais_code_in_an_answer_and_in_a_stream():
    """vLLM's 400 for a prompt past the window gets OpenAI's code ``context_length_exceeded`` (a client checks it to
    shorten and retry), proxied and inside a stream alike; any other 400 keeps ``invalid_request``."""
    refusal = {"error": {"message": VLLM_WINDOW, "type": "BadRequestError", "param": "input_tokens", "code": 400}}
    answer = engine_error(400, json.dumps(refusal).encode(), "generator")
    assert answer.status_code == 400
    assert json.loads(answer.body)["error"] == {"message": VLLM_WINDOW, "type": "invalid_request_error",
                                                "param": "input_tokens", "code": "context_length_exceeded"}
    other = engine_error(400, json.dumps({"error": {"message": "temperature: bad", "code": 400}}).encode(), "generator")
    assert json.loads(other.body)["error"]["code"] == "invalid_request"
    streamed = _relayed([b"data: " + json.dumps(refusal).encode() + b"\n\ndata: [DONE]\n\n"])
    assert json.loads(streamed.split(b"\n\n")[0][6:])["error"]["code"] == "context_length_exceeded"
    responses_event = {"type": "error", "code": "400", "message": VLLM_WINDOW, "param": None, "sequence_number": 3}
    streamed = _relayed([b"event: error\ndata: " + json.dumps(responses_event).encode() + b"\n\n"], responses=True)
    data = json.loads(streamed.split(b"\n")[1][6:])
    assert (data["code"], data["sequence_number"]) == ("context_length_exceeded", 3)


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/v1/chat/completions", {"max_tokens": 0}, "max_tokens"),
    ("/v1/chat/completions", {"max_completion_tokens": 0, "max_tokens": 5}, "max_completion_tokens"),
    ("/v1/completions", {"max_tokens": 0}, "max_tokens"),
    ("/v1/completions", {"max_tokens": 0, "echo": False}, "max_tokens"),
    ("/v1/completions", {"max_tokens": -3, "echo": True}, "max_tokens"),
    ("/v1/responses", {"max_output_tokens": 0}, "max_output_tokens"),
], ids=["chat", "chat-completion-tokens", "completion", "completion-no-echo", "negative-with-echo", "responses"])
def test_a_clients_own_limit_below_1_is_refused_naming_the_field_not_read_as_a_full_window(path, body, param):
    """vLLM says "max_tokens must be at least 1, got 0" both for a client's own ``max_tokens: 0`` and for a prompt
    that fills the window; the latter is ``context_length_exceeded``, which a client meets by shortening its prompt.
    The proxy refuses the former before the engine, naming the field, so it never gets that code."""
    from serve.proxy_bounds import proxied_token_bound

    sent, refused = proxied_token_bound({"model": "m", "prompt": "p", **body}, path, 4096, 2048)
    assert refused is not None and refused.status_code == 400
    error = json.loads(refused.body)["error"]
    assert (error["param"], error["code"]) == (param, "invalid_value")
    assert error["message"].startswith(f"{param}: must be at least 1")


@pytest.mark.parametrize("echo", [True, 1, "true", "on"])
def test_a_completion_with_echo_and_max_tokens_0_still_goes_to_the_engine(echo):
    """vLLM's echo without generation (``echo`` true and ``max_tokens`` 0) returns the prompt alone: passed on."""
    from serve.proxy_bounds import proxied_token_bound

    body = {"model": "m", "prompt": "p", "echo": echo, "max_tokens": 0}
    assert proxied_token_bound(body, "/v1/completions", 4096, 2048) == (body, None)


def test_every_event_cut_at_a_bound_is_said_to_the_client_and_logged(monkeypatch, caplog):
    """No event is cut silently at a bound: a long error event and bytes without a ``data:`` line (held, past
    ``MAX_PENDING_EVENT_BYTES``) and an ordinary event passed on unheld past ``MAX_PASSED_EVENT_BYTES`` each end
    the stream with an error event naming the bound, on a chat stream and on a Responses one, and a warning in
    judge-serve's log."""
    monkeypatch.setattr(serve.errors, "MAX_PENDING_EVENT_BYTES", 1000)
    monkeypatch.setattr(serve.errors, "MAX_PASSED_EVENT_BYTES", 5000)
    cases = [(b'data: {"error": {"message": "' + b"x" * 3000, 1000), (b"x" * 3000, 1000),
             (b'event: error\ndata: {"message": "' + b"x" * 3000, 1000),
             (b'data: {"choices": [{"text": "' + b"y" * 9000, 5000)]
    for responses in (False, True):
        for long, bound in cases:
            caplog.clear()
            sent = _relayed(_in_chunks(b"data: {}\n\n" + long, 500), responses=responses)
            error = sent.rstrip(b"\n").removesuffix(b"\n\ndata: [DONE]").split(b"\n\n")[-1].split(b"data: ", 1)[1]
            body = json.loads(error)
            message = body["message"] if responses else body["error"]["message"]
            assert message == f"the generator engine sent an event longer than {bound} bytes; the reply is incomplete"
            assert sent.endswith(b"}\n\n" if responses else b"data: [DONE]\n\n")
            assert [r.levelname for r in caplog.records if f"longer than {bound} bytes" in r.getMessage()] == ["WARNING"]

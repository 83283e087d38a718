"""How a relayed event stream ends (``serve.errors.relayed_stream``): one whose engine's body ends before the event
that ends it (``data: [DONE]``; a Responses stream's ``response.completed``) is ended with judge-serve's error event,
never passed on as a whole reply; one that did send that event is whole, whatever happens to the connection after
it."""

from __future__ import annotations

import json

import aiohttp
import openai

from serve.engine_client import EngineUnavailable
from tests.support.scripted_endpoint import EventStream, ScriptedEndpoint
from tests.unit.test_serve_relay_long_events import _relayed
from tests.unit.test_serve_openai_surface import AUTH, KEY, MODEL, STREAM_CHUNKS, _client, _ready, _respond, \
    _respond_get  # fmt: skip

CHAT = [b'data: {"choices": [{"index": 0, "delta": {"content": "\\u0414\\u0430"}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"content": "!"}}]}\n\n']
DONE = b"data: [DONE]\n\n"
#: vLLM's Responses events (vllm/entrypoints/openai/responses/api_router.py ``_convert_stream_to_sse_events``).
CREATED = b'event: response.created\ndata: {"type": "response.created", "sequence_number": 0}\n\n'
DELTA = b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "delta": "ok", ' \
        b'"sequence_number": 1}\n\n'
COMPLETED = b'event: response.completed\ndata: {"response": {"status": "completed"}, "sequence_number": 2, ' \
            b'"type": "response.completed"}\n\n'




def _chat_error(message: str) -> bytes:
    body = {"error": {"message": message, "type": "server_error", "param": None, "code": "engine_error"}}
    return b"data: " + json.dumps(body).encode() + b"\n\n" + DONE


def test_a_chat_stream_whose_body_ends_before_done_ends_with_an_error_event_and_done():
    """The engine's body ends cleanly after two events, no ``data: [DONE]``: the client was sent the two events and a
    clean end, a truncated reply its SDK took as whole. Now judge-serve's error event and ``[DONE]`` follow them;
    a last event cut before its blank line is dropped, as one held when a stream breaks, however the bytes come."""
    missing = _chat_error("the generator engine's stream ended before its last event (data: [DONE]); the reply is "
                          "incomplete")
    assert _relayed(CHAT) == b"".join(CHAT) + missing
    stream = b"".join(CHAT)
    for cut in range(1, len(stream), 5):
        assert _relayed([stream[:cut], stream[cut:]]) == stream + missing
    inside = _chat_error("the generator engine's stream ended inside an event; the reply is incomplete")
    assert _relayed([CHAT[0], b'data: {"choices": [{"ind']) == CHAT[0] + inside


def test_a_responses_stream_whose_body_ends_before_its_completed_event_ends_with_its_error_event():
    """A Responses stream's body ending before ``response.completed``: ended with the Responses error event, numbered
    one past the last event sent, and no ``[DONE]`` (vLLM's Responses stream has none)."""
    error = {"type": "error", "code": "engine_error", "param": None, "sequence_number": 2,
             "message": "the generator engine's stream ended before its last event (response.completed); the reply "
                        "is incomplete"}
    sent = _relayed([CREATED, DELTA], responses=True)
    assert sent.startswith(CREATED + DELTA + b"event: error\ndata: ") and sent.endswith(b"}\n\n")
    assert json.loads(sent[len(CREATED + DELTA + b"event: error\ndata: "):]) == error


def test_a_stream_that_sent_its_last_event_is_whole_however_its_connection_ends():
    """A stream that sent its end (``[DONE]``, ``response.completed``, or an error event) is passed on as it came: a
    clean end adds nothing, and so does a connection dropped or an engine declared dead after it (the reply lost
    nothing; before, an error event followed a complete reply, which a Responses client reads as its failure)."""
    error_then_nothing = b'data: {"error": {"message": "bad", "type": "BadRequestError", "code": 400}}\n\n'
    for then in (None, aiohttp.ClientPayloadError("Response payload is not completed"), EngineUnavailable("dead")):
        assert _relayed([*CHAT, DONE], broken=then) == b"".join(CHAT) + DONE
        for end in ("completed", "incomplete", "failed"):  # OpenAI's three ends of a Responses stream
            last = COMPLETED.replace(b"response.completed", b"response." + end.encode())
            assert _relayed([CREATED, DELTA, last], responses=True, broken=then) == CREATED + DELTA + last
        sent = _relayed([CHAT[0], error_then_nothing], broken=then)
        assert sent.startswith(CHAT[0]) and b"broke off" not in sent and b"engine died" not in sent
        assert json.loads(sent[len(CHAT[0]):].split(b"\n\n")[0].removeprefix(b"data: "))["error"]["message"] == "bad"


def test_a_client_is_told_a_stream_whose_unframed_body_the_engine_closed_early_is_incomplete(tiny_causal_dir,
                                                                                            monkeypatch):
    """An engine (or a proxy before it) sending its stream with neither chunks nor a Content-Length, closed after
    one event: judge-serve's client read a whole stream of that one event, and the openai SDK ended its iteration
    without a word. Now it raises an ``APIError`` (code ``engine_error``) after the event."""

    def respond(path: str, body: dict) -> tuple | EventStream:
        if not body.get("stream"):
            return _respond(path, body)
        return EventStream(STREAM_CHUNKS[:1], unframed=True)

    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 8}
    with ScriptedEndpoint(respond, respond_get=_respond_get) as engine, \
            _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:  # fmt: skip
        sdk = openai.OpenAI(base_url="http://localhost/v1", api_key=KEY, http_client=_ready(http), max_retries=0)
        raw = http.post("/v1/chat/completions", headers=AUTH, json=chat)
        words, raised = [], None
        try:
            for chunk in sdk.chat.completions.create(**chat):
                words.append(chunk.choices[0].delta.content)
        except openai.APIError as err:
            raised = err
    assert raw.status_code == 200 and raw.text.startswith(f"data: {STREAM_CHUNKS[0]}\n\n")
    assert raw.text.endswith("data: [DONE]\n\n")
    assert words == ["Оценка"]
    assert raised is not None and not isinstance(raised, openai.APIConnectionError)
    assert raised.code == "engine_error" and "ended before its last event" in raised.message


def test_a_sent_stream_is_whole_once_its_ending_event_went_out_however_the_bytes_were_split():
    """``SentStream`` reads an event's end (a blank line) across the bodies it is sent in, a blank line split
    between two included: a stream is whole after its ending event's blank line, and not a byte before it."""
    from serve.errors import SentStream

    stream = CREATED + DELTA + COMPLETED
    for cut in range(1, len(stream)):
        out = SentStream(responses=True)
        out.sent(stream[:cut])
        assert not out.finished  # its last byte, the blank line's second newline, is still to go
        out.sent(stream[cut:])
        assert out.finished and out.sequence == 2 and out.end("cut", "x") == b""


def test_a_long_completed_event_cut_before_its_blank_line_ends_with_the_error_event():
    """A ``response.completed`` past ``MAX_PENDING_EVENT_BYTES`` is passed on as it arrives: the stream is whole only
    once its blank line went out. Broken off, or ended cleanly, before that, the client reads a blank line (the cut
    event's end) and the Responses error event, numbered one past the last event sent, not a cut JSON and silence."""
    from serve.errors import MAX_PENDING_EVENT_BYTES

    long = b'event: response.completed\ndata: {"response": {"status": "completed", "output": "' \
           + b"x" * (MAX_PENDING_EVENT_BYTES + 10)
    for then in (aiohttp.ClientPayloadError("Response payload is not completed"), None):
        sent = _relayed([CREATED, long], responses=True, broken=then)
        assert sent.startswith(CREATED + long + b"\n\nevent: error\ndata: ") and sent.endswith(b"}\n\n")
        assert json.loads(sent[len(CREATED + long + b"\n\nevent: error\ndata: "):])["sequence_number"] == 1
    # whole, it ends the stream however the connection ends after it
    whole = long + b'"}, "sequence_number": 1}\n\n'
    assert _relayed([CREATED, whole], responses=True, broken=EngineUnavailable("dead")) == CREATED + whole


def test_a_stream_whose_body_ends_inside_its_completed_event_ends_with_the_error_event():
    """A body that ends cleanly inside its ``response.completed``, its JSON cut (an unframed engine, or a proxy,
    that died mid-event), is no end: the cut event is dropped and the Responses error event follows the last event
    sent, where the client was passed half a JSON its SDK never dispatched, and no error."""
    cut = b'event: response.completed\ndata: {"response": {"status": "completed", "output": "hal'
    sent = _relayed([CREATED, cut], responses=True)
    assert sent.startswith(CREATED + b"event: error\ndata: ") and sent.endswith(b"}\n\n")
    assert json.loads(sent[len(CREATED + b"event: error\ndata: "):]) == {
        "type": "error", "code": "engine_error", "param": None, "sequence_number": 1,
        "message": "the generator engine's stream ended inside an event; the reply is incomplete"}


def test_a_relayed_stream_is_read_once_for_the_relay_and_the_drain_alike(tiny_causal_dir, monkeypatch):
    """What a relayed stream sent is read once: the relay and judge-serve's drain end a stream from the same
    ``SentStream``, so no part the client was sent is read twice. The route hands the one the relay fills to the
    drain (``SENT_STREAM_SCOPE``): without it a drain would cut the stream with no end."""
    from serve.connections import RefuseWhileDrainingMiddleware
    from serve.errors import SENT_STREAM_SCOPE, SentStream

    scanned: list[bytes] = []
    readers: list[SentStream] = []
    real = SentStream.sent

    def sent(self, body: bytes) -> None:
        scanned.append(body)
        readers.append(self)
        real(self, body)

    monkeypatch.setattr(SentStream, "sent", sent)
    handed: list[list[SentStream]] = []
    middleware = RefuseWhileDrainingMiddleware.__call__

    async def drain_reads(self, scope, receive, send):
        try:
            return await middleware(self, scope, receive, send)
        finally:
            if scope.get("path") == "/v1/chat/completions":
                handed.append(list(scope[SENT_STREAM_SCOPE]))

    monkeypatch.setattr(RefuseWhileDrainingMiddleware, "__call__", drain_reads)

    def respond(path: str, body: dict) -> tuple | EventStream:
        return _respond(path, body) if not body.get("stream") else EventStream(STREAM_CHUNKS)

    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 8}
    with ScriptedEndpoint(respond, respond_get=_respond_get) as engine, \
            _client(tiny_causal_dir, engine.url, monkeypatch, api_key=KEY) as http:  # fmt: skip
        raw = _ready(http).post("/v1/chat/completions", headers=AUTH, json=chat)
    assert raw.status_code == 200 and raw.content.endswith(DONE)
    assert b"".join(scanned) == raw.content
    assert len(handed) == 1 and len(handed[0]) == 1 and handed[0][0].finished, handed
    assert all(reader is handed[0][0] for reader in readers)


def test_a_last_event_without_its_blank_line_was_not_sent_whatever_its_size():
    """An SSE client dispatches an event at its blank line and discards one the stream ends before (the SSE
    standard's "interpreting an event stream"; the openai SDK's decoder alike), and vLLM ends every event with one:
    a body that ends before its last event's blank line ended inside that event, ``[DONE]`` and a whole
    ``response.completed`` included. One rule at every size: a long event passed on unheld, whose JSON the relay
    cannot read back, ends as one held whole does, not as whole or not by its size."""
    from serve.errors import MAX_PENDING_EVENT_BYTES

    inside = "the generator engine's stream ended inside an event; the reply is incomplete"
    assert _relayed([*CHAT, DONE.rstrip(b"\n")]) == b"".join(CHAT) + _chat_error(inside)
    long = COMPLETED.replace(b'"completed"}', b'"completed", "output": "' + b"x" * MAX_PENDING_EVENT_BYTES + b'"}')
    # the long one's bytes went out, its sequence_number 2 among them: the error event is numbered past it
    for last, opened, number in [(COMPLETED, b"", 1), (long, b"\n\n", 3)]:
        held = len(last) <= MAX_PENDING_EVENT_BYTES
        sent = _relayed([CREATED, last.rstrip(b"\n")], responses=True)
        before = CREATED + (b"" if held else last.rstrip(b"\n")) + opened + b"event: error\ndata: "
        assert sent.startswith(before) and sent.endswith(b"}\n\n")
        assert json.loads(sent[len(before):]) == {"type": "error", "code": "engine_error", "param": None,
                                                  "sequence_number": number, "message": inside}


def test_the_openai_sdk_discards_a_last_event_without_its_blank_line_and_reads_the_relays_end():
    """The premise the rule above stands on, pinned against the ``openai`` SDK's own decoder: an event the body ends
    before its blank line (``[DONE]``, a whole ``response.completed``) is never dispatched, so passing one on as a
    whole reply would end the stream for no client; the relay's ending of such a stream is read by that decoder as
    the events sent, the error event, then ``[DONE]``."""
    from openai._streaming import SSEDecoder

    def decoded(stream: bytes) -> list[str]:
        return [event.data for event in SSEDecoder().iter_bytes(iter([stream]))]

    events = [chunk[len(b"data: "):].strip().decode() for chunk in CHAT]
    assert decoded(b"".join([*CHAT, DONE.rstrip(b"\n")])) == events
    assert [event.event for event in SSEDecoder().iter_bytes(iter([CREATED + COMPLETED.rstrip(b"\n")]))] == \
        ["response.created"]
    *sent, error, done = decoded(_relayed([*CHAT, DONE.rstrip(b"\n")]))
    assert sent == events and done == "[DONE]"
    assert json.loads(error)["error"]["message"] == ("the generator engine's stream ended inside an event; the reply "
                                                     "is incomplete")


def test_a_chat_stream_whose_choices_all_finished_is_still_incomplete_without_done():
    """Every choice's ``finish_reason`` is no end of a chat stream: OpenAI's stream is "terminated by a ``data:
    [DONE]`` message", and with ``stream_options.include_usage`` a usage chunk (``choices`` empty) comes after
    every finish and before ``[DONE]``, so a body cut there would lose the usage unsaid. vLLM sends ``[DONE]`` last
    on every path, and judge-serve attaches no other engine (``serve.engine_version``): a body without it was cut."""
    finished = [b'data: {"choices": [{"index": %d, "delta": {}, "finish_reason": "stop"}]}\n\n' % i for i in (0, 1)]
    missing = _chat_error("the generator engine's stream ended before its last event (data: [DONE]); the reply is "
                          "incomplete")
    assert _relayed([*CHAT, *finished]) == b"".join([*CHAT, *finished]) + missing
    usage = b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}\n\n'
    assert _relayed([*CHAT, *finished, usage, DONE]) == b"".join([*CHAT, *finished, usage, DONE])

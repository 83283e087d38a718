"""judge-serve's error messages (``serve.errors``) echo a client's text bounded: an unknown ``model`` of any length
is named clipped, in the 404 of ``/v1/judge`` (``serve.judging.unknown_model``) and of a proxied route whose
engine refused it (``engine_error``)."""

from __future__ import annotations

import json

import pytest

from serve.errors import engine_error, unknown_model_message
from serve.judging import unknown_model
from tests.support.deep_json import nested_arrays


def test_an_unknown_model_name_of_any_length_is_echoed_clipped():
    """A 3 MB model name was echoed whole, a 3 MB 404; now its first 1,000 characters and its length, as a long
    task_type is (``serve.schema``'s clip); a short one is named whole."""
    model = "м" * 3_000_000
    clipped = f"{'м' * 1000}... [3000000 characters]"
    expected = f"model: the model `{clipped}` does not exist; this server serves `a` or `b`"
    assert unknown_model_message(model, ["a", "b"]) == expected
    assert str(unknown_model(model, ("a", "b"))) == expected
    vllm_404 = json.dumps({"error": {"message": f"The model `{model}` does not exist.", "type": "NotFoundError",
                                     "param": "model", "code": 404}}).encode()
    answer = engine_error(404, vllm_404, "generator", names=("a", "b"), asked_model=model)
    assert answer.status_code == 404 and len(answer.body) < 3000
    assert json.loads(answer.body)["error"] == {"message": expected, "type": "not_found_error", "param": "model",
                                                "code": "model_not_found"}
    assert unknown_model_message("gpt-4", ["a"]) == "model: the model `gpt-4` does not exist; this server serves `a`"


def _relayed(chunks: list[bytes], consumed: list[int] | None = None) -> list[bytes]:
    """What ``relayed_stream`` sends the client for an engine's event stream arriving in ``chunks``."""
    import asyncio

    from serve.errors import relayed_stream

    async def engine():
        for chunk in chunks:
            if consumed is not None:
                consumed.append(len(chunk))
            yield chunk

    async def go():
        return [part async for part in relayed_stream(engine(), "generator", event_stream=True)]

    return asyncio.run(go())


def test_an_event_stream_is_relayed_byte_for_byte_however_it_is_cut():
    """A normal stream (events, a blank line splitting two chunks, a last event without its blank line) reaches the
    client byte-identical, whether it comes in one chunk, byte by byte, or cut at every place around its blank
    lines."""
    events = [b'data: {"choices": [{"text": "\\u0414\\u0430", "index": 0}]}', b"data: {\"choices\": []}",
              b": keep-alive", b"data: [DONE]"]
    stream = b"\n\n".join(events) + b"\n\n" + b"data: tail"
    assert b"".join(_relayed([stream])) == stream
    assert b"".join(_relayed([stream[i:i + 1] for i in range(len(stream))])) == stream
    for cut in range(1, len(stream)):
        for second in (cut + 1, cut + 7):
            assert b"".join(_relayed([stream[:cut], stream[cut:second], stream[second:]])) == stream


def test_a_last_error_event_without_its_blank_line_is_sanitized_as_every_other():
    """An engine's stream whose final error event lacks its blank line: it went to the client as sent, the engine's
    traceback and file paths included. Now it goes in judge-serve's shape, ended: a 5xx's message left in the log, a
    4xx's sanitized; whole or cut anywhere."""
    first = b'data: {"choices": []}\n\n'
    server = b'data: {"error": {"message": "Traceback: File \\"/usr/lib/vllm/engine.py\\", line 9", "code": 500}}'
    refused = b'data: {"error": {"message": "bad value at /opt/vllm/x.py", "type": "BadRequestError", "code": 400}}\n'
    for tail, error in [
        (server, {"message": "the generator engine failed (it answered 500); judge-serve's log has its message",
                  "type": "server_error", "param": None, "code": "engine_error"}),
        (refused, {"message": "bad value at <path>", "type": "invalid_request_error", "param": None,
                   "code": "invalid_request"}),
    ]:
        stream = first + tail
        expected = first + b"data: " + json.dumps({"error": error}).encode() + b"\n\n"
        assert b"".join(_relayed([stream])) == expected
        for cut in range(1, len(stream), 7):
            assert b"".join(_relayed([stream[:cut], stream[cut:]])) == expected


def test_a_last_error_event_cut_inside_its_json_ends_the_stream_with_judge_serves_error_event():
    """An engine's stream ending inside its error event's JSON (no closing braces, a path in its text): not the
    engine's text passed on, but judge-serve's stream error and ``data: [DONE]``, as for a stream that broke off."""
    first = b'data: {"choices": []}\n\n'
    cut = b'data: {"error": {"message": "Traceback: File \\"/usr/lib/vllm/engine.py\\", line'
    body = {"error": {"message": "the generator engine's stream ended inside an event; the reply is incomplete",
                      "type": "server_error", "param": None, "code": "engine_error"}}
    expected = first + b"data: " + json.dumps(body).encode() + b"\n\ndata: [DONE]\n\n"
    assert b"".join(_relayed([first + cut])) == expected
    assert b"".join(_relayed([first, cut[:20], cut[20:]])) == expected


def test_an_event_longer_than_the_cap_ends_the_stream_with_an_error_event():
    """2 MiB without a blank line, in 4 KiB chunks: once past ``MAX_PENDING_EVENT_BYTES`` (1 MiB) the client gets
    an error event in OpenAI's shape and ``data: [DONE]``, and no more of the engine's stream is read. The events
    that ended before it are sent as they were. (Before: all of it was held, and searched again on every chunk.)"""
    import serve.errors

    cap = getattr(serve.errors, "MAX_PENDING_EVENT_BYTES", 1024 * 1024)
    consumed: list[int] = []
    chunks = [b"data: first\n\n" + b"x" * 4083] + [b"x" * 4096] * 511
    sent = b"".join(_relayed(chunks, consumed))
    assert sent.startswith(b"data: first\n\n")
    error, done = sent[len(b"data: first\n\n"):].split(b"\n\n")[:2]
    assert done == b"data: [DONE]" and sent.endswith(b"data: [DONE]\n\n")
    body = json.loads(error.removeprefix(b"data: "))
    assert body["error"]["code"] == "engine_error" and "longer than 1048576 bytes" in body["error"]["message"]
    assert cap == 1024 * 1024 and sum(consumed) <= cap + 2 * 4096 and b"xxxx" not in sent


def test_a_503_tells_clients_to_retry_only_while_judge_serve_can_still_serve():
    """An engine unavailable while judge-serve serves (or restarts it): 503 with Retry-After. Once judge-serve has
    failed for good (it is exiting, exit 1), the 503 carries no Retry-After: a retry would meet no judge-serve."""
    from types import SimpleNamespace

    from serve.engine_client import EngineUnavailable
    from serve.errors import judgment_failed
    from serve.supervision import ServerState

    state = ServerState(config=None, layout=None, status="ready",
                        engines={"generator": SimpleNamespace(url="http://127.0.0.1:9")})
    assert judgment_failed(EngineUnavailable("gone"), state).headers["retry-after"] == "5"
    state.status = "failed"
    refused = judgment_failed(EngineUnavailable("gone"), state)
    assert refused.status_code == 503 and "retry-after" not in refused.headers


def test_the_404_of_an_unknown_path_echoes_it_clipped(tiny_causal_dir, monkeypatch):
    """A 5,000-character path was echoed whole in the 404's message; now its first 1,000 characters and its length,
    as every other client text judge-serve names (``serve.schema.clip_message``). A short one is named whole."""
    from tests.unit.test_serve_checks_before_start import AUTH, _starting

    with _starting(tiny_causal_dir, monkeypatch, verdict_format="tagged") as (http, _):
        long = http.get("/" + "x" * 5000, headers=AUTH)
        short = http.get("/nowhere", headers=AUTH)
    assert long.status_code == 404 and short.status_code == 404
    assert long.json()["error"]["message"] == (f"no route GET /{'x' * 999}... [5001 characters] on judge-serve "
                                               "(see /v1/models, /v1/judge)")
    assert short.json()["error"]["message"] == "no route GET /nowhere on judge-serve (see /v1/models, /v1/judge)"


@pytest.mark.parametrize(("status", "said"), [(401, "Unauthorized"), (403, "Forbidden"), (404, "Not Found")])
def test_an_engine_that_refuses_judge_serve_or_lacks_the_route_is_a_502(status, said):
    """An engine's 403 (judge-serve forbidden) or a 404 that is not vLLM's for the model (a route the engine lacks: an
    attached pooler without /classify) went to the client as its own 403/404, as if judge-serve had no /v1/judge or
    the client's key were refused. Neither is the client's to fix: a 502 ``engine_error`` as for the engine's 401,
    with no Retry-After (every judgment fails alike) and the engine's words left in the log."""
    from types import SimpleNamespace

    from serve.engine_client import EngineFailure
    from serve.errors import judgment_failed
    from serve.supervision import ServerState

    state = ServerState(config=None, layout=None, status="ready",
                        engines={"generator": SimpleNamespace(url="http://127.0.0.1:9")})
    answer = judgment_failed(EngineFailure(f"engine answered {status}: {said} at /srv/x/y", status), state)
    error = json.loads(answer.body)["error"]
    assert (answer.status_code, error["type"], error["code"]) == (502, "server_error", "engine_error")
    assert "retry-after" not in answer.headers and "/srv" not in error["message"] and said not in error["message"]


#: vLLM's Responses stream frames each event as ``event: <type>\ndata: <json>``
#: (vllm/entrypoints/openai/responses/api_router.py ``_convert_stream_to_sse_events``); its error event is OpenAI's
#: ``ResponseErrorEvent``: type "error", a string code, message, param, sequence_number.
RESPONSES_DELTA = b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "delta": "ok"}'


def _responses_error(code: str, message: str) -> bytes:
    return b"event: error\ndata: " + json.dumps({"type": "error", "code": code, "message": message, "param": None,
                                                  "sequence_number": 7}).encode()


def test_a_responses_error_event_is_sanitized_as_a_chat_one():
    """``event: error`` then ``data: {"type": "error", ...}`` went to the client byte for byte, the engine's paths
    and pid included: only an event whose first line was ``data: {"error"`` was read. Now the data line is found at
    any line of the event and a ``type: error`` payload is rewritten in its own shape (a string code, the event's
    other lines and sequence_number kept): a 5xx's message left in the log, a 4xx's sanitized."""
    failed = _responses_error("500", "failed reading /srv/private/weights/x.bin pid=4242")
    refused = _responses_error("400", "bad value in /opt/vllm/config.json")
    stream = RESPONSES_DELTA + b"\n\n" + failed + b"\n\n" + refused + b"\n\n"
    sent = b"".join(_relayed([stream]))
    delta, failed_out, refused_out, end = sent.split(b"\n\n")
    assert delta == RESPONSES_DELTA and end == b""
    for event, expected in [
        (failed_out, {"type": "error", "code": "engine_error", "param": None, "sequence_number": 7,
                      "message": "the generator engine failed (it answered 500); judge-serve's log has its message"}),
        (refused_out, {"type": "error", "code": "invalid_request", "param": None, "sequence_number": 7,
                       "message": "bad value in <path>"}),
    ]:
        head, data = event.split(b"\n")
        assert head == b"event: error" and json.loads(data.removeprefix(b"data: ")) == expected
    assert b"4242" not in sent and b"/srv" not in sent and b"/opt" not in sent
    # the same event as the stream's last, without its blank line, and cut anywhere
    for cut in range(1, len(failed), 5):
        assert b"".join(_relayed([failed[:cut], failed[cut:]])) == failed_out + b"\n\n"


def test_a_crlf_framed_stream_goes_event_by_event_its_errors_sanitized():
    """An engine (not vLLM) framing its events with CRLF, as the SSE standard allows and sse-starlette does: the
    stream was held whole (no "\\n\\n" in it) and sent at its end, the error event's path untouched. Now each event
    goes as it ends, LF-framed, its error sanitized; a CRLF (or a blank line) split across two chunks is no event
    boundary too many or too few."""
    error = b'data: {"error": {"message": "bad value at /home/x/y/z.py", "type": "BadRequestError", "code": 400}}'
    events = [b'data: {"choices": []}\r\n\r\n', error + b"\r\n\r\n", b"data: [DONE]\r\n\r\n"]
    stream = b"".join(events)
    expected = [b'data: {"choices": []}\n\n',
                b"data: " + json.dumps({"error": {"message": "bad value at <path>", "type": "invalid_request_error",
                                                  "param": None, "code": "invalid_request"}}).encode() + b"\n\n",
                b"data: [DONE]\n\n"]
    assert _relayed(events) == expected
    assert b"".join(_relayed([stream])) == b"".join(expected)
    for cut in range(1, len(stream)):
        assert b"".join(_relayed([stream[:cut], stream[cut:]])) == b"".join(expected), cut
    # a lone CR ends a line too
    assert b"".join(_relayed([b"data: a\r\rdata: [DONE]\r\r"])) == b"data: a\n\ndata: [DONE]\n\n"


def test_an_engines_5xx_message_reaches_the_log_with_its_control_characters_escaped(caplog):
    """judge-serve's log is a console too: an engine's "\\x1b[2J" (clear the screen) and a newline that forges a log
    line are written as their escapes, the message bounded; the client gets no word of it (a 502)."""
    raw = "boom\x1b[2J\n2026-01-01 INFO judge_serve: all good".encode()  # an engine's plain-text 500
    with caplog.at_level("ERROR", logger="judge_serve"):
        response = engine_error(500, raw, "judge")
    assert response.status_code == 502
    assert [r.getMessage() for r in caplog.records] == [
        "the judge engine answered 500: boom\\x1b[2J\\n2026-01-01 INFO judge_serve: all good"]


def test_an_engines_error_body_json_cannot_hold_is_relayed_as_its_text():
    """An engine's 400 whose body is JSON nested past what json.loads holds: engine_error let the RecursionError
    through (judge-serve's 500 for an unexpected error); it is read as text, as any other body that is not JSON."""
    response = engine_error(400, nested_arrays(20_000).encode(), "judge")
    assert response.status_code == 400
    assert json.loads(response.body)["error"]["message"].startswith("[[[[")


def test_an_error_event_nested_past_what_json_loads_holds_is_read_as_unreadable_not_raised():
    """An engine's error event whose JSON is nested past the recursion limit: json.loads raised RecursionError out of
    the relay (a broken stream for the client, a traceback in the log). Within the stream it goes on as sent, as any
    error event that is not JSON does; as the stream's last event without its blank line it ends the stream with
    judge-serve's stream error, as an event cut inside its JSON does."""
    first = b'data: {"choices": []}\n\n'
    deep = b'data: {"error": ' + nested_arrays(100_000).encode() + b"}"
    assert b"".join(_relayed([first + deep + b"\n\n" + first])) == first + deep + b"\n\n" + first
    body = {"error": {"message": "the generator engine's stream ended inside an event; the reply is incomplete",
                      "type": "server_error", "param": None, "code": "engine_error"}}
    assert b"".join(_relayed([first + deep])) == first + b"data: " + json.dumps(body).encode() + b"\n\ndata: [DONE]\n\n"

"""judge-serve's shutdown when a second SIGINT cuts the drain short (uvicorn's force exit, Ctrl+C twice): judge-serve
as its console script runs it, in front of a scripted engine that holds a request so the first SIGINT has one in
flight to wait for. Each step waits for the one before it (the engine's arrival, judge-serve's own log line); nothing
is timed. The same with real engines: tests/integration/serving/test_serve_faults.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from judge.plumbing.processes import free_port, start_process
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

KEY = "shutdown-key"
#: Bounds a wait only so that a failing test ends; a passing one never reaches it. Under the suite's per-test
#: timeout (60 s in `make test-fast`), so that a hang ends with this file's message and judge-serve's log.
FAILING_AFTER_S = 45


def _log_says(line: str, what: str, log_path: Path) -> None:
    """Wait for judge-serve's log to hold ``line``. The log is a file its supervisor writes, with no pipe to read:
    looked at until the line is there, failing with ``what`` and the log's tail."""
    deadline = time.monotonic() + FAILING_AFTER_S
    while line not in log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"{what} within {FAILING_AFTER_S} s\n" \
                                            f"{log_path.read_text(errors='replace')[-3000:]}"
        time.sleep(0.1)


def _exited(process, timeout_s: float) -> bool:
    """Whether ``process``'s supervisor exits within ``timeout_s``: a blocking waitid (WNOWAIT: not reaped, so
    its group stays reserved until ``stop``) in a thread, its end the event waited on."""
    done = threading.Event()

    def wait() -> None:
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        done.set()

    threading.Thread(target=wait, daemon=True).start()
    return done.wait(timeout_s)


def test_a_second_sigint_cuts_the_drain_short_but_still_stops_the_engines(tiny_causal_dir, tmp_path):
    """A second SIGINT makes uvicorn skip its lifespan shutdown; judge-serve still stops its engines and removes the
    log folder it made before it exits 0 (asyncio.run ends the lifespan on its way out). The request in flight is
    cut off: that is what the second Ctrl+C asks for."""
    release, arrived = threading.Event(), threading.Event()

    def respond(path: str, body: dict) -> tuple:
        arrived.set()
        release.wait(FAILING_AFTER_S)
        return 200, chat_completion("ok", "attached")

    def respond_get(path: str) -> tuple:
        if path == "/version":
            return 200, {"version": "0.32.0"}
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "attached", "object": "model", "max_model_len": 2048}]}
        return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})

    port, log_path = free_port(), tmp_path / "judge-serve.log"
    scratch = tmp_path / "tmp"  # judge-serve's temporary log folder is made here (no --log-dir)
    scratch.mkdir()
    with ScriptedEndpoint(respond, respond_get=respond_get) as engine:
        process = start_process(
            [sys.executable, "-m", "serve.cli", "--model", str(tiny_causal_dir), "--port", str(port),
             "--generator-url", engine.url, "--shutdown-grace-s", str(FAILING_AFTER_S)],
            log_path=log_path, cwd=Path(__file__).parents[2], name="judge-serve",
            env={**os.environ, "JUDGE_SERVE_API_KEY": KEY, "TMPDIR": str(scratch)},
        )  # fmt: skip
        sock = None
        try:
            process.wait_ready(f"http://127.0.0.1:{port}/ready", timeout_s=FAILING_AFTER_S)  # names the log
            body = json.dumps({"model": "attached", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4})
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n"
                         f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n{body}".encode())
            assert arrived.wait(FAILING_AFTER_S), "the request never reached the engine"
            main_pid = process.main_pid()
            os.kill(main_pid, signal.SIGINT)
            _log_says("Waiting for connections to close", "judge-serve did not start draining",
                      log_path)  # the first SIGINT is taken: now the second
            os.kill(main_pid, signal.SIGINT)
            assert _exited(process, FAILING_AFTER_S), f"judge-serve did not exit within {FAILING_AFTER_S} s\n" \
                                                      f"{log_path.read_text(errors='replace')[-3000:]}"
            log = log_path.read_text(errors="replace")
        finally:
            release.set()
            if sock is not None:
                sock.close()
            process.stop(30.0)
    assert process.exit_code() == 0, log[-3000:]
    assert "removed the temporary log folder" in log, log[-3000:]
    assert list(scratch.glob("judge-serve-*")) == []


def _cancelled_mid_request(status_after_entry: str, answer_started: bool, failure: str | None = None,
                           stream: tuple[bytes, ...] | None = None, path: str = "/v1/judge",
                           stalls_on: bytes | None = None) -> list[dict]:
    """A request inside ``RefuseWhileDrainingMiddleware`` whose route is cancelled (uvicorn at the end of
    ``shutdown_grace_s``) once it runs, judge-serve's status then ``status_after_entry``; what the client was sent.
    The cancellation must still reach uvicorn. ``stream``: the route answers an event stream, these parts of it sent.
    ``stalls_on``: the part whose send waits on a client that reads nothing (uvicorn's flow control), unwritten
    when the cancellation lands there."""
    import asyncio

    import pytest

    from serve.connections import RefuseWhileDrainingMiddleware
    from serve.errors import SENT_STREAM_SCOPE, SentStream
    from serve.supervision import ServerState

    state = ServerState(config=None, layout=None, status="ready")
    entered = asyncio.Event()
    sent: list[dict] = []

    async def route(scope, receive, send):
        if stream is not None:  # as the proxied route relays one: each part read once its send returned
            out = SentStream(responses=path == "/v1/responses")
            scope[SENT_STREAM_SCOPE].append(out)
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
            for part in stream:
                await send({"type": "http.response.body", "body": part, "more_body": True})
                out.sent(part)
        elif answer_started:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        entered.set()
        await asyncio.Event().wait()  # a judgment still running

    async def send(message):
        if stalls_on is not None and message.get("body") == stalls_on:
            entered.set()
            await asyncio.Event().wait()  # never written: the cancellation lands here
        sent.append(message)

    async def go():
        scope = {"type": "http", "path": path, "method": "POST", "headers": []}
        task = asyncio.ensure_future(RefuseWhileDrainingMiddleware(route, state)(scope, None, send))
        await entered.wait()
        state.status, state.failure = status_after_entry, failure
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    return sent


def test_a_request_cut_off_by_the_end_of_the_drain_gets_the_drains_503_not_a_plain_500():
    """A request still running when ``shutdown_grace_s`` ends is cancelled: its client gets the 503 ``shutting_down``
    in OpenAI's shape with Retry-After, and the cancellation goes on to uvicorn. (Before: uvicorn's text/plain
    500 "Internal Server Error" and a traceback.)"""

    sent = _cancelled_mid_request("draining", answer_started=False)
    start, body = sent
    assert start["status"] == 503 and (b"retry-after", b"5") in start["headers"]
    assert json.loads(body["body"])["error"]["code"] == "shutting_down"


def test_a_request_cut_off_as_a_failed_judge_serve_stops_gets_its_failure_not_a_plain_500():
    """judge-serve failed (an engine kept dying past engine_max_restarts) and stops: uvicorn lets the requests in
    flight run for shutdown_grace_s, then cancels them, as in a drain. Such a request's client got uvicorn's
    text/plain 500 and the log a traceback; it gets the stated failure as a 503 in OpenAI's shape, worded, typed
    and with no Retry-After as every other 503 of a failed judge-serve (``ServerState.engine_problem`` and
    ``retry_headers``; type ``service_unavailable``, where the drain's own 503 is a ``server_error``): judge-serve
    exits, and a client reading the type reads one for every refusal of a judge-serve that failed."""
    start, body = _cancelled_mid_request("failed", answer_started=False, failure=(
        "the generator engine died 4 times within 600 s (last exit code -9); engine_max_restarts=3 reached, "
        "judge-serve stops"))
    assert start["status"] == 503 and not any(name == b"retry-after" for name, _ in start["headers"])
    assert json.loads(body["body"])["error"] == {
        "message": "judge-serve is shutting down; judge-serve cannot serve: the generator engine died 4 times within "
                   "600 s (last exit code -9); engine_max_restarts=3 reached, judge-serve stops",
        "type": "service_unavailable", "param": None, "code": "shutting_down"}


def test_a_cancelled_request_whose_answer_began_or_that_is_not_draining_gets_nothing_more():
    """An answer already started cannot become a 503 (only the cancellation goes on), nor is a request cancelled
    while judge-serve is not draining (a client gone) sent one."""
    assert _cancelled_mid_request("draining", answer_started=True) == [
        {"type": "http.response.start", "status": 200, "headers": []}]
    assert _cancelled_mid_request("ready", answer_started=False) == []


def test_a_stream_cut_off_by_the_end_of_the_drain_ends_with_an_error_event_not_a_dropped_connection():
    """A streamed generation still running when ``shutdown_grace_s`` ends: its answer began, so no 503 can be sent,
    and uvicorn closed the connection mid-body (the openai SDK raises a connection error, "incomplete chunked read",
    saying nothing of why). It now ends as a stream the engine breaks off does: an error event, code
    ``shutting_down``, and ``data: [DONE]``; on ``/v1/responses`` the Responses error event numbered one past the
    last event sent; an event cut mid-way is ended first. The cancellation still reaches uvicorn."""
    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}}]}\n\n'
    for parts, opened in [((chunk,), b""), ((chunk, b'data: {"choices": [{"ind'), b"\n\n")]:
        sent = _cancelled_mid_request("draining", answer_started=True, stream=parts)
        assert [m["type"] for m in sent] == ["http.response.start", *["http.response.body"] * (len(parts) + 1)]
        last = sent[-1]
        assert last["more_body"] is False and last["body"].startswith(opened + b"data: ")
        error, done, end = last["body"][len(opened):].split(b"\n\n")
        assert (done, end) == (b"data: [DONE]", b"")
        assert json.loads(error.removeprefix(b"data: "))["error"] == {
            "message": "judge-serve is shutting down; the reply is incomplete", "type": "server_error", "param": None,
            "code": "shutting_down"}
    delta = b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "sequence_number": 6}'
    sent = _cancelled_mid_request("draining", answer_started=True, stream=(delta + b"\n\n",), path="/v1/responses")
    head, data, end = sent[-1]["body"].split(b"\n", 2)
    assert (head, end) == (b"event: error", b"\n")
    assert json.loads(data.removeprefix(b"data: ")) == {
        "type": "error", "code": "shutting_down", "message": "judge-serve is shutting down; the reply is incomplete",
        "param": None, "sequence_number": 7}
    # a stream whose last event went out whole gets no more of it: its body is ended as it stands
    sent = _cancelled_mid_request("draining", answer_started=True, stream=(chunk, b"data: [DONE]\n\n"))
    assert [m["body"] for m in sent[1:]] == [chunk, b"data: [DONE]\n\n", b""] and sent[-1]["more_body"] is False


def test_a_stream_cut_off_while_its_last_event_waits_on_the_client_still_gets_the_drains_end():
    """The drain's cancellation lands inside uvicorn's send, which awaits a slow client before it writes: the part
    it was sending never went out, so the stream is not whole and ends with the error event and ``data: [DONE]``;
    counting that part as sent before it was written left a client with neither."""
    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}}]}\n\n'
    sent = _cancelled_mid_request("draining", answer_started=True, stream=(chunk, b"data: [DONE]\n\n"),
                                  stalls_on=b"data: [DONE]\n\n")
    assert [m["body"] for m in sent[1:-1]] == [chunk]
    error, done, end = sent[-1]["body"].split(b"\n\n")
    assert (done, end) == (b"data: [DONE]", b"") and sent[-1]["more_body"] is False
    assert json.loads(error.removeprefix(b"data: "))["error"]["code"] == "shutting_down"


def test_a_stream_whose_end_went_out_gets_no_error_event_from_the_drain():
    """The drain ends a stream as the relay does: one whose ending event went out whole is whole, so a Responses
    stream that sent ``response.completed``, or a chat stream that sent an error event, is ended as it stands, where
    an error event after it was read as the reply's failure (or a second one); an ending event sent in part is not
    one, and gets the error event after a blank line."""
    from tests.unit.test_serve_stream_ends import COMPLETED, CREATED

    error = b'data: {"error": {"message": "bad", "type": "BadRequestError", "code": 400}}\n\n'
    for stream, path in [((CREATED, COMPLETED), "/v1/responses"), ((CREATED, COMPLETED[:20], COMPLETED[20:]),
                         "/v1/responses"), ((error,), "/v1/judge")]:
        sent = _cancelled_mid_request("draining", answer_started=True, stream=stream, path=path)
        assert [m["body"] for m in sent[1:]] == [*stream, b""] and sent[-1]["more_body"] is False
    sent = _cancelled_mid_request("draining", answer_started=True, stream=(CREATED, COMPLETED[:-2]),
                                  path="/v1/responses")
    assert sent[-1]["body"].startswith(b"\n\nevent: error\ndata: ")
    assert json.loads(sent[-1]["body"].split(b"data: ", 1)[1])["sequence_number"] == 3


def test_a_stream_cut_off_as_a_failed_judge_serve_stops_ends_with_its_failure():
    """A failed judge-serve stops through the same grace as a drain: a stream still running ends with the error
    event, code ``shutting_down``, whose message says why it failed, and ``data: [DONE]``."""
    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}}]}\n\n'
    sent = _cancelled_mid_request("failed", answer_started=True, stream=(chunk,),
                                  failure="the generator engine died 3 times")
    error, done, end = sent[-1]["body"].split(b"\n\n")
    assert (done, end) == (b"data: [DONE]", b"") and sent[-1]["more_body"] is False
    body = json.loads(error.removeprefix(b"data: "))["error"]
    assert body["code"] == "shutting_down" and "died 3 times" in body["message"]

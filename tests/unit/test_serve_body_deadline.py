"""judge-serve's connection-level answers (serve.connections.header_deadline_protocol), on a real uvicorn server in
this process with a route that reads its body as judge-serve's routes do (Starlette's ``Request.body()``): a client
that sends its headers and then trickles its body is answered 408 and cut off, so it cannot hold a connection slot
for ever; nor can one without the API key (its 401 closes the connection); past max_connections the 503 is OpenAI's
error object, and /health is still answered; what uvicorn's parser refuses, and headers over their bound, get
OpenAI's error object too, never plain text or a silent close."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading

import pytest

from judge.plumbing.processes import free_port
from serve.connections import MAX_HEADER_BYTES, ApiKeyMiddleware, header_deadline_protocol

BODY_TIMEOUT_S = 1.0
#: An answer larger than a loopback connection's socket buffers (a few MiB at most): one its client must read.
LARGE_ANSWER_BYTES = 32 * 1024 * 1024


@pytest.fixture(scope="module")
def server():
    with _serving() as port:
        yield port


@contextlib.contextmanager
def _serving(api_key: str | None = None, body_timeout_s: float | None = BODY_TIMEOUT_S, lost=None,
             errors_into: logging.Handler | None = None, **config):
    """A uvicorn server on a thread with judge-serve's connection protocol; ``lost`` (a ``threading.Event``), when
    given, is set as the server loses a connection, however it ends. ``errors_into`` (caplog's handler), when given,
    also gets uvicorn's error log (where "Exception in ASGI application" goes) until the server has stopped:
    uvicorn.Config's logging set-up stops uvicorn's loggers propagating to the root, where caplog listens, and drops
    the handlers they had, so it is attached after that set-up."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"bytes": len(await request.body())})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def large(request: Request) -> Response:  # more than the kernel's socket buffers hold
        return Response(b"x" * LARGE_ANSWER_BYTES)

    async def client_gone(request: Request, err: ClientDisconnect) -> Response:
        return Response(status_code=499)

    app = Starlette(routes=[Route("/echo", echo, methods=["POST"]), Route("/health", health),
                            Route("/large", large)],
                    exception_handlers={ClientDisconnect: client_gone})
    if api_key is not None:
        app = ApiKeyMiddleware(app, api_key)
    port = free_port()
    protocol = header_deadline_protocol(5.0, body_timeout_s=body_timeout_s)
    if lost is not None:
        class Watched(protocol):
            def connection_lost(self, exc) -> None:
                super().connection_lost(exc)
                lost.set()

        protocol = Watched
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", http=protocol,
                            **config)
    started = threading.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            started.set()  # bound and listening: the tests' connections wait for nothing

    srv = Server(config)
    errors = logging.getLogger("uvicorn.error")
    if errors_into is not None:
        errors.addHandler(errors_into)
    thread = threading.Thread(target=lambda: asyncio.run(srv.serve()), daemon=True)
    thread.start()
    assert started.wait(30)
    try:
        yield port
    finally:
        srv.should_exit = True
        thread.join(30)
        errors.removeHandler(errors_into)


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (recv returns b"")."""
    sock.settimeout(30)
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _head(length: int) -> bytes:
    return (f"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {length}\r\n\r\n").encode()


def test_a_body_that_does_not_arrive_in_time_gets_408_and_the_connection_is_closed(caplog):
    """The route waiting for the rest of the body is told the client left (judge-serve answers that nobody, as this
    route's handler does, serve/app.py): the 408 is the only answer, and nothing is logged as a server error. A
    server of its own: the route ends after the 408 is sent, and the server's stop waits for it (uvicorn's shutdown
    waits for its requests' tasks), so whatever it logged is in caplog before the assertion reads it."""
    with _serving(errors_into=caplog.handler) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(100) + b"x" * 10)  # 10 of the 100 bytes declared, then nothing
        answer = _until_closed(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout") and b"connection: close" in head
    assert json.loads(body)["error"] == {
        "message": "body: the request body did not arrive within 1 s of its headers", "type": "invalid_request_error",
        "param": "body", "code": "body_timeout"}
    assert answer.count(b"HTTP/1.1") == 1 and "Exception in ASGI application" not in caplog.text


def test_a_body_sent_in_time_is_served_and_the_connection_kept(server):
    """The deadline is per request: a kept-alive connection serves a second request after the first one's body
    arrived, and no 408 follows either."""
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.settimeout(30)
        for _ in range(2):
            sock.sendall(_head(4) + b"abcd")
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):  # one response, however it is split
                chunk = sock.recv(65536)
                assert chunk, f"closed after {answer!r}"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b'\r\n\r\n{"bytes":4}')


def test_a_client_that_does_not_read_its_answer_is_cut_off_after_the_body_deadline():
    """A client that sends its request and then reads nothing of the answer held its connection slot for ever: the
    answer waited in judge-serve's memory for a reader, and its close waited for the answer to be sent. Once the
    client has taken nothing for body_timeout_s the connection is aborted (its slot and the answer's memory freed)."""
    lost = threading.Event()
    with _serving(lost=lost) as port, socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # takes little before it stops reading
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"GET /large HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert lost.wait(30), "the connection of a client that reads nothing is still held"
        read = 0
        with contextlib.suppress(ConnectionResetError):
            read = len(_until_closed(sock))
    assert read < LARGE_ANSWER_BYTES


def test_past_max_connections_the_503_is_in_openais_shape_with_retry_after():
    """uvicorn's own over-limit answer is plain text; judge-serve's is OpenAI's error object, with Retry-After. With
    limit_concurrency 1 the connection asking is itself the one connection allowed, so its request is over it."""
    with _serving(limit_concurrency=1) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(4) + b"abcd")
        answer = _until_closed(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 Service Unavailable") and b"retry-after: 1" in head.lower()
    assert json.loads(body)["error"]["code"] == "too_many_connections"


def _parts(answer: bytes) -> tuple[bytes, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, json.loads(body)


def test_past_max_connections_health_is_still_answered():
    """A liveness probe answered 503 while clients hold every slot would have a healthy judge-serve restarted."""
    with _serving(limit_concurrency=1) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = _until_closed(sock)
    head, body = _parts(answer)
    assert head.startswith(b"HTTP/1.1 200 OK") and body == {"status": "ok"}


def test_a_request_without_the_key_is_answered_401_and_closed_with_its_body_unread():
    """Kept alive, a client with no key that declares a long body and sends little of it would hold its connection
    slot until the body deadline (here: none); the 401 closes it at once."""
    with _serving(api_key="k", body_timeout_s=None) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(100_000) + b"x" * 10)
        answer = _until_closed(sock)  # returns once the server closes the connection
    head, body = _parts(answer)
    assert head.startswith(b"HTTP/1.1 401 Unauthorized") and b"connection: close" in head.lower()
    assert body["error"]["code"] == "invalid_api_key" and answer.count(b"HTTP/1.1") == 1


def test_what_the_parser_refuses_is_a_400_in_openais_shape(server):
    """uvicorn's own answer is text/plain "Invalid HTTP request received."."""
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: -1\r\n\r\n")
        answer = _until_closed(sock)
    head, body = _parts(answer)
    assert head.startswith(b"HTTP/1.1 400 Bad Request") and b"content-type: application/json" in head
    assert body["error"] == {"message": "the request is not valid HTTP/1.1 (Invalid HTTP request received.)",
                             "type": "invalid_request_error", "param": None, "code": "invalid_http_request"}


def test_headers_over_their_bound_get_a_431_in_openais_shape(server):
    """Not a close without a word: the client learns which bound it passed."""
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"GET /" + b"x" * (MAX_HEADER_BYTES + 10) + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = _until_closed(sock)
    head, body = _parts(answer)
    assert head.startswith(b"HTTP/1.1 431 Request Header Fields Too Large") and answer.count(b"HTTP/1.1") == 1
    assert body["error"] == {"message": f"headers: the request line and headers pass {MAX_HEADER_BYTES} bytes",
                             "type": "invalid_request_error", "param": "headers", "code": "headers_too_large"}


def test_a_spaced_warning_logs_the_first_event_then_one_line_per_interval_with_the_count(caplog):
    """A client repeating what is refused (a wrong key, a connection past the limit) adds a line per interval to the
    log, not one per try, and the counts never stop a later burst from being logged."""
    from serve.quiet_logs import SpacedWarning

    now = [0.0]
    warn = SpacedWarning(logging.getLogger("judge_serve"), "refused on %s", interval_s=60, clock=lambda: now[0])
    with caplog.at_level("WARNING", logger="judge_serve"):
        for t in (0, 1, 59, 60, 61, 3600):
            now[0] = t
            warn("/x")
    said = [r.getMessage() for r in caplog.records if r.name == "judge_serve"]
    assert said == [f"refused on /x ({n} since the start; at most one such line per 60 s)" for n in (1, 4, 6)]


def test_past_max_connections_the_refusal_is_logged_by_judge_serve_and_not_per_request_by_uvicorn(caplog):
    """uvicorn's "Exceeded concurrency limit." came once per refused request, /health included
    (serve.quiet_logs.quiet_client_floods drops it); the protocol's own line is spaced, and /health is not counted."""
    from serve.quiet_logs import quiet_client_floods

    errors = logging.getLogger("uvicorn.error")
    before = list(errors.filters)
    try:
        with _serving(limit_concurrency=1, errors_into=caplog.handler) as port:
            quiet_client_floods()  # after uvicorn.Config's logging set-up, as judge-serve does it (serve.cli)
            quiet_client_floods()  # installed once
            # one filter drops uvicorn's line, whether or not an earlier test on this worker left one installed
            flood = logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 0, "Exceeded concurrency limit.",
                                      None, None)
            assert sum(not f.filter(flood) for f in errors.filters) == 1
            for request in (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", _head(4) + b"abcd",
                            _head(4) + b"abcd"):
                with socket.create_connection(("127.0.0.1", port)) as sock:
                    sock.sendall(request)
                    _until_closed(sock)
    finally:
        errors.filters[:] = before
    said = [r.getMessage() for r in caplog.records if r.name == "uvicorn.error" and r.levelno >= logging.WARNING]
    assert said == ["a request refused with 503 too_many_connections: judge-serve holds max_connections connections "
                    "(1 since the start; at most one such line per 60 s)"]


def test_past_max_connections_health_closes_its_connection_after_answering():
    """Kept alive, connections polling /health past the limit would hold descriptors beyond max_connections for
    good; the 200 says ``connection: close`` and the server closes it (``_until_closed`` returns)."""
    with _serving(limit_concurrency=1) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # HTTP/1.1: kept alive unless told
        answer = _until_closed(sock)
    head, body = _parts(answer)
    assert head.startswith(b"HTTP/1.1 200 OK") and b"connection: close" in head.lower() and body == {"status": "ok"}


def test_headers_over_their_bound_after_a_pipelined_request_are_not_answered_in_its_place(server):
    """A 431 written while an earlier request on the connection is unanswered would be read as that request's answer:
    the connection is closed without it."""
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(_head(100) + b"x" * 100 + b"GET /" + b"x" * (MAX_HEADER_BYTES + 10) + b" HTTP/1.1\r\n\r\n")
        answer = _until_closed(sock)
    assert b"431" not in answer.split(b"\r\n", 1)[0] and answer.count(b"HTTP/1.1 431") == 0


def test_a_client_reading_its_answer_steadily_past_the_body_deadline_gets_it_whole():
    """The answer is buffered whole at once, so judge-serve's writing stays paused until the client has taken nearly
    all of it: a deadline armed once at the pause cut off a client that read steadily but needed longer than
    body_timeout_s for the whole answer. Each window in which it takes MIN_READ_PER_WINDOW earns another. Here the
    client takes 256 KiB every 20 ms (128 pauses: at least 2.56 s, past the 1 s deadline), ~200 times the minimum a
    window asks."""
    import time

    from serve.connections import MIN_READ_PER_WINDOW

    assert 256 * 1024 / 0.02 * BODY_TIMEOUT_S > 100 * MIN_READ_PER_WINDOW
    lost = threading.Event()
    with _serving(lost=lost) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /large HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        sock.settimeout(30)
        started, received = time.monotonic(), 0
        while chunk := sock.recv(256 * 1024):
            received += len(chunk)
            time.sleep(0.02)  # the slow reader this test is about: its pace is the workload, not a wait
    assert time.monotonic() - started > BODY_TIMEOUT_S  # it did read past the deadline a single window would give
    head_length = received - LARGE_ANSWER_BYTES
    assert 0 < head_length < 1024, received  # the whole body, after its head


def test_what_a_client_has_not_taken_is_the_transports_buffer_where_the_kernel_cannot_say():
    """Where the socket's send queue cannot be read (no socket, a closed one, an ioctl the platform lacks), what a
    client has not taken is the transport's own buffer alone; on a Linux socket it adds the kernel's queue."""
    from serve.connections import unsent_bytes

    class Transport:
        def __init__(self, sock):
            self.sock = sock

        def get_write_buffer_size(self):
            return 70_000

        def get_extra_info(self, name):
            assert name == "socket"
            return self.sock

    class Closed:
        def fileno(self):
            return -1

    assert unsent_bytes(Transport(None)) == unsent_bytes(Transport(Closed())) == 70_000
    with socket.create_server(("127.0.0.1", 0)) as listening, \
            socket.create_connection(listening.getsockname()) as client:
        served, _ = listening.accept()
        with served:
            served.sendall(b"x" * 4096)
            # TCP's TIOCOUTQ counts bytes the peer has not acknowledged (some or none of the 4096 here, as its
            # acknowledgement races this look), in bytes: not the buffers' size, as a Unix socket's would be
            assert 70_000 <= unsent_bytes(Transport(served)) <= 70_000 + 4096
            assert client.recv(4096, socket.MSG_WAITALL) == b"x" * 4096

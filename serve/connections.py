"""judge-serve's connection guards, below the routes: a deadline and a size bound on each request's headers
(uvicorn's protocol), the body limit, the API key, the Host and Origin allow-list, refusal while draining, the
request id, and the health polls kept out of the access log. A guard that refuses a request answers in OpenAI's
error shape (``serve.errors``); the header deadline closes the connection, which has sent no request to answer yet.
``unless_disconnected`` ends a route's work when its client leaves.

Why one module of ~570 lines: each guard is small, and they are read together (one request passes every one in
order, and the protocol's deadlines share its connection's state); one module per guard would scatter that order."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import uuid
from collections.abc import Iterable
from typing import Any, Awaitable, Callable, TypeVar

from serve.engine_client import discard_unclaimed
from serve.errors import SENT_STREAM_SCOPE, SentStream, error_body, error_response, sanitized
from serve.quiet_logs import SpacedWarning

__all__ = ["ApiKeyMiddleware", "BodyLimitMiddleware", "HostAllowListMiddleware", "MAX_HEADER_BYTES",
           "MIN_READ_PER_WINDOW", "PAST_THE_CONNECTION_LIMIT", "RefuseWhileDrainingMiddleware", "RequestIdMiddleware",
           "bearer_matches", "header_deadline_protocol", "own_host_names", "unless_disconnected"]

T = TypeVar("T")
log = logging.getLogger("judge_serve")

#: Most bytes of request line plus headers one request may send (httptools itself sets no bound).
MAX_HEADER_BYTES = 64 * 1024
#: What a client must take of its answer in each ``body_timeout_s`` while judge-serve's writing is paused on it to
#: keep its connection: one reading steadily takes far more, one that stopped takes nothing, and one taking a few
#: bytes a window would hold its slot for as long as it liked.
MIN_READ_PER_WINDOW = 64 * 1024


#: What uvicorn's limit_concurrency does not refuse: a liveness probe answered 503 while clients hold every
#: connection slot would have a healthy judge-serve restarted (its /health answers 503 only when nothing will heal
#: it). The probe is answered by the app, which is no more work than the 503.
PAST_THE_CONNECTION_LIMIT = frozenset({"/health"})


def _closing_error(status: int, reason: str, message: str, param: str | None, code: str) -> bytes:
    """A whole HTTP/1.1 answer in OpenAI's error shape, the connection closed after it: for the answers the
    connection layer writes itself, before or instead of the app (every error judge-serve gives has that shape)."""
    body = json.dumps(error_body(message, "invalid_request_error", param, code)).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


def header_deadline_protocol(header_timeout_s: float, body_timeout_s: float | None = None):
    """uvicorn's httptools protocol with a deadline and a size bound for each request's headers, and a deadline for
    its body.

    uvicorn times out idle keep-alive connections (``timeout_keep_alive``) but not a connection whose headers never
    finish: enough of those, held open, exhaust the process's file descriptors. Here each connection, and each
    new request on a kept-alive one, must complete its headers within ``header_timeout_s`` or is closed, with
    uvicorn's own keep-alive handler; one whose request line and headers pass ``MAX_HEADER_BYTES`` gets a 431 and is
    closed. Nor does uvicorn bound the time a body takes: a client that sends its headers, then one byte every few
    seconds, holds a connection slot (``max_connections``) for ever. With ``body_timeout_s``, a body not complete
    that long after its headers gets a 408 and the connection is closed. Nor does it bound the time a client takes to
    read its answer: one that reads nothing holds its slot for ever (the answer waiting in memory, the connection's
    close waiting for it to be sent). With ``body_timeout_s``, writing paused that long (the client took too little to
    bring what waits below the transport's low-water mark) aborts the connection. What uvicorn itself answers in
    plain text (a request its parser refuses, the 503 past ``max_connections``) is answered in OpenAI's error shape, and
    ``PAST_THE_CONNECTION_LIMIT`` is served past that limit. Pass the returned class as ``uvicorn.Config(http=...)``.
    """
    from uvicorn.protocols.http.flow_control import service_unavailable
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    too_many = error_response(503, "judge-serve holds as many connections as it takes (max_connections); retry",
                              code="too_many_connections", headers={"Retry-After": "1", "Connection": "close"})
    # uvicorn's own line for each refusal is dropped (serve.quiet_logs): a client holding every slot would grow the
    # log by a line per try.
    over_the_limit = SpacedWarning(logging.getLogger("uvicorn.error"), "a request refused with 503 "
                                   "too_many_connections: judge-serve holds max_connections connections")

    class HeaderDeadlineProtocol(HttpToolsProtocol):
        _header_timer = None
        _header_bytes = 0

        def _count(self, n: int) -> None:
            self._header_bytes += n
            if self._header_bytes > MAX_HEADER_BYTES:
                self._cancel("_header_timer")
                self._close_with(_closing_error(431, "Request Header Fields Too Large", "headers: the request line "
                                                f"and headers pass {MAX_HEADER_BYTES} bytes", "headers",
                                                "headers_too_large"))

        def _close_with(self, answer: bytes) -> None:
            """Write ``answer`` and close the connection, unless it is closing already (the parser goes on with the
            rest of what it was fed after a close). The answer only when no earlier request on the connection (a
            pipelined one) is still unanswered: its client would take the answer for that request's."""
            if self.transport.is_closing():
                return
            cycle = getattr(self, "cycle", None)
            if (cycle is None or cycle.response_complete) and not self.pipeline:
                self.transport.write(answer)
            self.transport.close()

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value))
            super().on_header(name, value)

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _cancel(self, *timers: str) -> None:
            """Cancel the named deadlines still pending (``_header_timer``, ``_body_timer``, ``_stalled_timer``)."""
            for name in timers:
                timer = getattr(self, name)
                if timer is not None:
                    timer.cancel()
                    setattr(self, name, None)

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            self.timeout_keep_alive_handler()  # closes the transport unless it is already closing

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._header_bytes = 0
            self._arm()

        _body_timer = None

        def on_headers_complete(self) -> None:
            self._cancel("_header_timer")
            super().on_headers_complete()
            if body_timeout_s is not None:
                self._body_timer = self.loop.call_later(body_timeout_s, self._body_too_slow)

        def on_message_complete(self) -> None:
            self._cancel("_body_timer")
            super().on_message_complete()

        def _body_too_slow(self) -> None:
            self._body_timer = None
            if self.transport.is_closing():
                return
            cycle = getattr(self, "cycle", None)
            if cycle is not None and not cycle.response_started:  # the route is still reading the body
                self.transport.write(_closing_error(
                    408, "Request Timeout", f"body: the request body did not arrive within {round(body_timeout_s)} s "
                    "of its headers", "body", "body_timeout"))
            if cycle is not None:  # the route reading the body is told the client is gone; nothing more is sent
                cycle.disconnected = True
                cycle.message_event.set()
            self.transport.close()

        def _start_asgi_task(self, cycle, app) -> None:
            # Past limit_concurrency uvicorn answers with its own plain-text 503: every error judge-serve gives is
            # OpenAI's {"error": ...} shape, with a Retry-After its clients honour.
            if app is service_unavailable:
                if cycle.scope.get("path") in PAST_THE_CONNECTION_LIMIT:
                    # Answered, then closed: kept alive, connections polling /health would pass the limit for good.
                    cycle.keep_alive, app = False, self.app
                else:
                    over_the_limit()
                    app = too_many
            super()._start_asgi_task(cycle, app)

        def send_400_response(self, msg: str) -> None:  # uvicorn's answer to what its parser refuses, in plain text
            self._close_with(_closing_error(400, "Bad Request", f"the request is not valid HTTP/1.1 ({msg})", None,
                                            "invalid_http_request"))

        _stalled_timer = None

        def pause_writing(self) -> None:
            super().pause_writing()
            if body_timeout_s is not None and self._stalled_timer is None:
                self._arm_stalled()

        def _arm_stalled(self) -> None:
            self._unsent_when_armed = unsent_bytes(self.transport)
            self._stalled_timer = self.loop.call_later(body_timeout_s, self._reader_too_slow)

        def resume_writing(self) -> None:
            super().resume_writing()
            self._cancel("_stalled_timer")

        def _reader_too_slow(self) -> None:
            self._stalled_timer = None
            # The answer is buffered whole at once (Starlette writes it in one go), so writing stays paused until the
            # client has taken nearly all of it: one reading steadily, if slowly, gets another window for each
            # MIN_READ_PER_WINDOW it took; one that stopped (or trickles) is cut off.
            taken = self._unsent_when_armed - unsent_bytes(self.transport)
            if taken >= min(MIN_READ_PER_WINDOW, self._unsent_when_armed):
                self._arm_stalled()
                return
            # Aborted, not closed: a close waits until what is buffered has been sent, which this client never takes.
            self.transport.abort()

        def connection_lost(self, exc) -> None:
            self._cancel("_header_timer", "_body_timer", "_stalled_timer")
            super().connection_lost(exc)

    return HeaderDeadlineProtocol


def unsent_bytes(transport: Any) -> int:
    """What ``transport`` holds that its client has not yet taken: its own buffer and, on Linux, the socket's send
    queue (``TIOCOUTQ``). The buffer alone moves in jumps: the kernel says a socket is writable again only once a third
    of its send buffer (megabytes, autotuned) is free, so a client reading steadily could leave it unchanged for
    seconds. A TCP socket's queue holds what the client's kernel has not acknowledged: what it acknowledged but the
    client has not read counts as taken, at most its receive buffer, so a client that stopped reading is still cut
    off once that is full. Where the queue cannot be read (another platform, a closed socket) the buffer alone."""
    import fcntl
    import struct
    import termios

    unsent = transport.get_write_buffer_size()
    sock = transport.get_extra_info("socket")
    with contextlib.suppress(AttributeError, OSError, ValueError):
        unsent += struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
    return unsent


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """413 for a request body above ``max_bytes``, whether or not it declares its Content-Length."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        # Closed after the answer, the rest of its body unread: kept alive, the connection would go on reading
        # that body, and a client (one without the key too: this check runs before the key's) could hold a
        # connection slot for the whole body deadline by trickling it.
        too_large = error_response(413, f"body: the request body exceeds {self.max_bytes} bytes",
                                   "invalid_request_error", "body", "body_too_large", headers={"Connection": "close"})
        declared = _bounded_int(dict(scope["headers"]).get(b"content-length", b""), self.max_bytes)
        if declared is not None and declared > self.max_bytes:
            return await too_large(scope, receive, send)
        received = 0
        started = False

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await too_large(scope, receive, send)


def _bounded_int(text: str | bytes, most: int) -> int | None:
    """A header's number, ``most + 1`` for any past ``most``; None where ``text`` is not ASCII digits. str.isdigit
    takes Latin-1's superscripts ("²"), which int() refuses, and int() refuses past 4,300 digits, where the HTTP
    parser passes any number of them; leading zeros are no size."""
    if not (text.isascii() and text.isdigit()):
        return None
    digits = text.lstrip(b"0" if isinstance(text, bytes) else "0")
    return most + 1 if len(digits) > len(str(most)) else min(int(digits or 0), most + 1)


def bearer_matches(headers: Iterable[tuple[bytes, bytes]], api_key: str) -> bool:
    """Whether a request's raw headers (ASGI's ``scope["headers"]``, Starlette's ``request.headers.raw``: lower-case
    names) hold ``Authorization: Bearer <api_key>``: the first such header's key bytes as sent, compared in constant
    time; the scheme in any case, as RFC 9110 section 11.1 has it (``bearer``, ``BEARER``). The one check of
    judge-serve's key, so that every route lets in the same callers (Starlette's ``request.headers.get`` would decode
    them as Latin-1, and ``hmac.compare_digest`` refuses a non-ASCII str)."""
    given = next((value for name, value in headers if name == b"authorization"), b"")
    scheme, _, key = given.partition(b" ")
    return hmac.compare_digest(scheme.lower() + b" " + key.lstrip(b" "), b"bearer " + api_key.encode())


class ApiKeyMiddleware:
    """401 without ``Authorization: Bearer <key>`` on every route but health and readiness (which say only up or
    down without it) and ``/get_reward``.

    The engines' Prometheus metrics are behind the key too: they tell who can read them the model, its load, its
    request counts and latencies, and Prometheus sends a key with every scrape (``authorization: {credentials: KEY}``).
    """

    # Exact paths: as prefixes, /healthz or a later /health/... route would be open unnoticed. /get_reward checks its
    # own key (the reward key in the path under /get_reward/, or this one: serve.rewards).
    OPEN = frozenset({"/health", "/ready", "/get_reward"})
    OPEN_UNDER = "/get_reward/"

    def __init__(self, app, api_key: str):
        self.app, self.api_key = app, api_key

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] == "http" and path not in self.OPEN and not path.startswith(self.OPEN_UNDER) \
                and not bearer_matches(scope["headers"], self.api_key):
            # Closed after the answer, its body unread: kept alive, a client with no key could hold a connection
            # slot for the whole body deadline by declaring a long body and trickling it.
            response = error_response(
                401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "authentication_error",
                code="invalid_api_key", headers={"WWW-Authenticate": "Bearer", "Connection": "close"},
            )  # fmt: skip
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


def own_host_names() -> list[str]:
    """localhost and this machine's own names and addresses: the Host values a client on this machine or the
    cluster uses, and none a rebinding web page can send (it sends its own domain name)."""
    import socket

    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    with contextlib.suppress(OSError):
        names.update(socket.gethostbyname_ex(socket.gethostname())[2])
    return sorted(n for n in names if n)


class HostAllowListMiddleware:
    """Without an API key, 400 for a request whose ``Host`` (its name, without the port) is not allowed: a page in
    a browser that rebinds its own DNS name to 127.0.0.1 still sends its own name as ``Host``.

    Nor is a page of another site served: without a key nothing else tells its request from a local client's. A
    browser may send a cross-site POST with a body of type ``text/plain``, or of no type at all (a "simple" request:
    no CORS preflight asks first), to ``http://127.0.0.1:8000/v1/judge`` or ``/get_reward``: ``Host`` is then allowed,
    and the work would be done (and a reward journalled) before the browser hid the answer from the page. Every such
    request carries ``Origin`` (the Fetch standard sends it on every request whose method is not GET or HEAD, and on
    every cross-origin one in CORS mode) and, in current browsers, ``Sec-Fetch-Site``; curl and the SDKs send neither.
    So a request whose ``Origin`` names a host not allowed (``null`` included: what a page of an https site sends to
    an http URL under the default referrer policy, and what a sandboxed frame sends), or whose ``Sec-Fetch-Site`` is
    ``cross-site``, gets a 400 naming ``origin``."""

    #: Most distinct refused values logged: enough to name every mistyped or missing host a deployment has, and no
    #: log flood from a client sending a new value each time.
    MAX_LOGGED_REFUSALS = 32

    def __init__(self, app, hosts: list[str]):
        self.app, self.hosts = app, {h.lower().strip("[]") for h in hosts}
        self._logged: set[tuple[str, str]] = set()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            hosts = [value for key, value in scope["headers"] if key == b"host"]
            host = hosts[0].decode("latin-1").lower() if hosts else ""
            if host.startswith("["):  # [IPv6]:port
                name, _, port = host[1:].partition("]")
                port = port.removeprefix(":")
            elif host.count(":") == 1:  # name:port
                name, port = host.split(":")
            else:  # a name alone, or a bare IPv6 address (more than one colon, no port)
                name, port = host, ""
            if len(hosts) > 1:  # RFC 9112 section 3.2: a server answers 400 to more than one Host
                return await self._refuse(scope, receive, send, f"host: the request sends {len(hosts)} Host headers; "
                                          "one is allowed", "host", "host_not_allowed")
            if name not in self.hosts:
                shown = f"{name[:200]!r}... [{len(name)} characters]" if len(name) > 200 else repr(name or "(none)")
                return await self._refuse(scope, receive, send, f"host: {shown} is not in allowed_hosts",
                                          "host", "host_not_allowed", logged=name)
            refused = self._cross_site(scope["headers"], port)
            if refused is not None:
                return await self._refuse(scope, receive, send, f"origin: {refused}: without an api_key judge-serve "
                                          "serves no web page of another site", "origin", "origin_not_allowed")
        return await self.app(scope, receive, send)

    async def _refuse(self, scope, receive, send, message: str, param: str, code: str, logged: str = "") -> None:
        """The 400, closed after the answer with its body unread (as the API key's 401 is, ``ApiKeyMiddleware``).
        A host refused is logged the first time (``MAX_LOGGED_REFUSALS`` at most): a client of this machine's
        cluster that reaches judge-serve by a name or address it does not know (a Slurm node's NodeAddr) would
        otherwise see only its own 400s, and judge-serve's log nothing."""
        if logged and (param, logged) not in self._logged and len(self._logged) < self.MAX_LOGGED_REFUSALS:
            self._logged.add((param, logged))
            log.warning("refused a request for Host %r: not one of this machine's names, nor in allowed_hosts (add it "
                        "with --allowed-hosts, or set an api_key); this host's later refusals are not logged",
                        logged[:200])
        response = error_response(400, message, param=param, code=code, headers={"Connection": "close"})
        await response(scope, receive, send)

    def _cross_site(self, headers, port: str) -> str | None:
        """Why a request comes from a web page of another site, or None. Every ``Origin`` and ``Sec-Fetch-Site``
        header is read: a request that sends two is refused if either says so. An ``Origin`` is allowed only on an
        allowed host *and* on the port the request was sent to (``port``, its ``Host`` header's): a page of another
        web server on this machine (a notebook, a development server on localhost:3000) is another origin. A
        ``Host`` without a port is a default one, 80 or 443: a browser names any other in ``Host``, and a reverse
        proxy that sets ``Host`` to the name alone (nginx's ``$host``) serves on either."""
        from urllib.parse import urlsplit

        # a port past 65535, or no number, is none an Origin can name
        number = _bounded_int(port, 65535)
        ports = {number} if number is not None and number <= 65535 else set() if port else {80, 443}
        for key, value in headers:
            if key == b"origin":
                origin = value.decode("latin-1")
                try:
                    parts = urlsplit(origin.strip())
                    name = parts.hostname  # lower-cased, without the port or IPv6 brackets
                    origin_port = parts.port or {"https": 443}.get(parts.scheme, 80)
                except ValueError:  # an unclosed [IPv6 bracket, a port that is no number
                    name, origin_port = None, None
                if name not in self.hosts:
                    return f"{origin[:200]!r} is not in allowed_hosts"
                if origin_port not in ports:
                    return (f"{origin[:200]!r} is another port than the one the request was sent to "
                            f"({port[:20] or 80}{'...' if len(port) > 20 else ''})")
            elif key == b"sec-fetch-site" and value.strip().lower() == b"cross-site":
                return "a cross-site request (Sec-Fetch-Site: cross-site)"
        return None


class RefuseWhileDrainingMiddleware:
    """503 for a request that arrives once judge-serve is draining (SIGTERM, scancel): uvicorn closes its listening
    socket only at its next loop tick (up to 0.1 s later), and a request accepted in that window would otherwise be
    queued behind the drain. The probes (/health, /ready) still answer, with their own draining status."""

    PROBES = ("/health", "/ready")

    def __init__(self, app, state):
        self.app, self.state = app, state

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.state.status == "draining" and scope["path"] not in self.PROBES:
            return await self._refused()(scope, receive, send)
        started = answered = False
        # The relayed event stream's SentStream, put here by the route (serve.errors.relayed_stream reads each part
        # once its send returned: uvicorn's send awaits the client's flow control before it writes, so a part whose
        # send the cancellation lands in is unwritten, and not counted as gone out).
        streams: list[SentStream] = []
        scope[SENT_STREAM_SCOPE] = streams

        async def tracked(message):
            nonlocal started, answered
            await send(message)
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True

        try:
            return await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            # shutdown_grace_s is over and uvicorn cancels what still runs: without an answer here, uvicorn's own
            # would be a plain-text 500 (and a traceback) for a request that merely outlived the drain. It still
            # logs the cancellation; the client gets the drain's 503 first, when nothing of an answer went out yet.
            # A failed judge-serve (an engine past engine_max_restarts) stops through the same grace: its 503 says
            # why, as each of its 503s does.
            if self.state.status in ("draining", "failed") and not started:
                refusal = self._refused()
                with contextlib.suppress(Exception):  # the client may be gone; the cancellation goes on regardless
                    await refusal(scope, receive, send)
            elif self.state.status in ("draining", "failed") and started and not answered and streams:
                # A stream under way cannot become a 503: it ends as one the engine broke off does (an error event,
                # serve.errors.relayed_stream), so that its client reads why, not a connection cut mid-body.
                end = streams[-1].end(f"{self._refused_message()}; the reply is incomplete", "shutting_down")
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.body", "body": end, "more_body": False})
            raise

    def _refused(self):
        """The drain's 503, with Retry-After. A failed judge-serve's is worded, typed and headed as every other 503
        of one (``ServerState.engine_problem``, ``service_unavailable``, no Retry-After: it exits)."""
        failed = self.state.status == "failed"
        return error_response(503, self._refused_message(), "service_unavailable" if failed else "server_error",
                              code="shutting_down", headers=self.state.retry_headers(()))

    def _refused_message(self) -> str:
        """Why a request is refused or cut short now: judge-serve shuts down, and why when it failed."""
        failed = self.state.status == "failed"
        return sanitized(f"judge-serve is shutting down; {self.state.engine_problem('')}" if failed
                         else "judge-serve is shutting down")


class RequestIdMiddleware:
    """Echo ``X-Request-Id`` on every answer (one is made when the client sent none, and passed to the engine).

    The request goes on with exactly one ``X-Request-Id``: the client's first, or a new one when it sent none or one
    over 200 bytes. Every later reader (the routes' ``request.headers.get``, the headers passed to the engine) then
    reads the id echoed; with two sent, a check of one and a use of the other let a 30,000-byte id reach the engine
    while the client was told another."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request_id = next((v for k, v in scope["headers"] if k == b"x-request-id"), None)
        if not request_id or len(request_id) > 200:
            request_id = uuid.uuid4().hex.encode()
        kept = [(k, v) for k, v in scope["headers"] if k != b"x-request-id"]
        scope["headers"] = kept + [(b"x-request-id", request_id)]

        async def echo(message):
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                message = {**message, "headers": kept + [(b"x-request-id", request_id)]}
            await send(message)

        return await self.app(scope, receive, echo)


async def unless_disconnected(request: Any, work: Awaitable[T], discard: Callable[[T], object] | None = None) -> T:
    """``await work``, unless the client disconnects first: then the work is cancelled, awaited until it has ended,
    and ``starlette.requests.ClientDisconnect`` is raised (judge-serve answers it to nobody, 499 in its access log).

    Starlette does not cancel a route's handler when its client goes: a ``/v1/judge`` request given up by its client
    kept sending its judgments to the engine, one after another, for nobody. Call this once the request's body has
    been read: every message its ``receive`` gives after that is the disconnect (uvicorn's waits for it; Starlette's
    test client gives it once the response is sent).

    Args:
        request: the route's ``starlette.requests.Request``, its body already read.
        work: what to await (a coroutine or a future).
        discard: given the work's result when it is not returned (the work finished in the loop turn the caller was
            cancelled in, or finished though cancelled): what holds a resource (an engine's response) is let go.
            It must not raise.

    Returns:
        The work's result (its exception, if it raised one).
    """
    from starlette.requests import ClientDisconnect

    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnect(request.receive))
    handed = False
    try:
        done, _ = await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        handed = task in done
        if handed:
            return task.result()
        task.cancel()
        await asyncio.wait({task})  # its cancellation runs to the end: nothing of it is sent after this
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
        if not handed:
            # Work that failed as it was cancelled (or just before) has nobody to answer: its error is read there,
            # or asyncio would log it as "Task exception was never retrieved" whenever the task is collected.
            discard_unclaimed(task, discard)
    failed = None if task.cancelled() else task.exception()
    log.info("the client of %s %s left before its answer: its work was cancelled%s", request.method,
             request.url.path, f" (it failed: {type(failed).__name__})" if failed is not None else "")
    raise ClientDisconnect()


async def _disconnect(receive) -> None:
    """Until ``receive`` gives ``http.disconnect``."""
    while (await receive())["type"] != "http.disconnect":
        pass

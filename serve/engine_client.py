"""The HTTP transport from judge-serve to its vLLM engines, and the errors an engine call ends in.

``EngineHttp`` (made by ``engine_session``) is the one aiohttp client judge-serve talks to its engines with: the
judgments (``serve.judging``), health probes (``serve.supervision``) and the proxied OpenAI routes (``serve.app``).
``EngineClient`` POSTs JSON to one engine and gives up at once when that engine is known dead (``unless_dead``).
An engine call ends in ``EngineUnavailable`` (503: dead or unreachable, a connect timeout included; its
``EngineBusy``: no pooled connection came free in time, judge-serve busy, ``server_busy``),
``EngineFailure`` (the engine answered an error, or a 200 whose body could not be read: ``unreadable_answer``)
or ``asyncio.TimeoutError`` (504: no answer within the read timeout);
the HTTP layer maps each to its status.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, Awaitable, Callable, TypeVar

import aiohttp

from judge.plumbing.json_reading import value_words

T = TypeVar("T")

__all__ = ["EngineClient", "EngineHttp", "Hop", "engine_session", "discard_unclaimed", "unless_dead", "until_dead",
           "ENGINE_KEEPALIVE_S", "PROBE_CONNECTIONS", "MAX_ANSWER_BYTES", "EngineBusy", "EngineUnavailable",
           "EngineFailure", "unreadable_answer", "read_capped", "read_up_to", "RETRY_HEADERS", "retry_headers_of"]

#: The headers of an engine's answer that say when, and whether, to ask again (RFC 9110's ``Retry-After``,
#: ``retry-after-ms``, which OpenAI and Azure send and ``judge.plumbing.retry`` reads first, and ``x-should-retry``,
#: which overrides the status there: a quota's 429 that says ``false`` is not retried).
RETRY_HEADERS = ("Retry-After", "retry-after-ms", "x-should-retry")


def retry_headers_of(headers: Mapping[str, str]) -> dict[str, str]:
    """The ``RETRY_HEADERS`` among an engine's answer's ``headers`` (case-insensitive, as aiohttp's are), each value
    bounded: a 408, 409 or 429 judge-serve passes on carries them, so its client waits what the engine (or a proxy
    in front of it) asked, not only its own first backoff, and does not retry what the engine said not to."""
    return {name: headers[name][:64] for name in RETRY_HEADERS if name in headers}


class EngineUnavailable(Exception):
    """The engine died or cannot be reached; the server answers 503. Where a call failed to reach it, the
    connection's error is its ``__cause__``."""


class EngineBusy(EngineUnavailable):
    """No connection of judge-serve's own pool to its engines came free within ``request_timeout_s`` (every one
    held by other calls: long proxied generations): judge-serve is busy, the engine may be healthy; a 503
    ``server_busy`` with ``Retry-After``, never one that says the engine is unreachable."""


class EngineFailure(Exception):
    """The engine answered with an error (``status``). A judgment's route answers a refusal (a 4xx but 401, 403 and
    404) with the engine's status and its message, sanitized; vLLM's 404 for the model as a 503 with ``Retry-After``;
    anything else as a 502 without the message (a 5xx's may carry the engine's internals):
    ``serve.errors.judgment_failed``. ``public``: what the client is told
    instead, when the failure is another model's (the task classifier's) and the message for the log says more.
    ``retry_headers``: the engine's ``RETRY_HEADERS`` (``retry_headers_of``), passed on with a status a later attempt
    can pass."""

    def __init__(self, message: str, status: int = 500, public: str | None = None, param: Any = None,
                 retry_headers: Mapping[str, str] | None = None):  # fmt: skip
        super().__init__(message)
        self.status = status
        self.public = public
        self.param = param  # the engine's error's ``param`` ("model": vLLM's 404 for a model it does not serve)
        self.retry_headers = dict(retry_headers or {})


class EngineClient:
    """POSTs JSON to one engine, giving up at once when that engine is known to have died.

    The hop runs on ``aiohttp``: it costs a fraction of the client CPU per request that ``httpx`` does
    (docs/performance.md, the row of judge-serve's hop to its engine, ``python bench/engine_hop.py``), and judge-serve
    makes one such request per judgment, on the machine that also runs the engine's own scheduler.

    Args:
        http: the shared session (``engine_session``).
        url: the engine's root URL.
        dead: set by the server's watcher when the engine exits.
        reason: why the engine is unavailable (for the 503 message).
        headers: sent with every call (the engine's ``Authorization``).
    """

    def __init__(self, http: EngineHttp, url: str, dead: asyncio.Event, reason: Callable[[], str],
                 headers: Mapping[str, str] | None = None):  # fmt: skip
        self.http, self.url, self.dead, self.reason = http, url, dead, reason
        self.headers = {**_IDENTITY, **(headers or {})}

    async def _exchange(self, path: str, payload: dict[str, Any],
                        headers: Mapping[str, str]) -> tuple[int, bytes, dict[str, str]]:
        # The engine's JSON is read as sent: the session does not decompress (the proxy passes bytes through).
        # On the judgments' own pool: proxied generations holding theirs cannot keep a judgment waiting.
        response = await self.http.request("POST", self.url + path, judgment=True, json=payload, headers=headers)
        try:
            return response.status, await read_capped(response, path), retry_headers_of(response.headers)
        finally:
            response.release()

    async def post(self, path: str, payload: dict[str, Any], request_id: str = "") -> dict[str, Any]:
        """POST ``payload`` as JSON; ``request_id``, when given, goes as ``X-Request-Id`` (as the proxied routes pass
        the client's on), so the engine's log of this call names the client request it serves. vLLM makes its own
        ids unique (it adds a random suffix), so the many calls of one judge request may share it."""
        if self.dead.is_set():
            raise EngineUnavailable(self.reason())
        headers = {**self.headers, "X-Request-Id": request_id} if request_id else self.headers
        call = await unless_dead(self._exchange(path, payload, headers), self.dead)
        if call is None:
            raise EngineUnavailable(self.reason())
        try:
            status, body, retry_headers = call.result()
        except EngineBusy:
            raise
        except aiohttp.ConnectionTimeoutError as err:
            # A TimeoutError as well, but no connection was made: an engine that cannot be reached (503 with
            # Retry-After), not one that took too long to answer (504).
            raise EngineUnavailable(f"engine at {self.url} unreachable: {type(err).__name__}: {err}") from err
        except asyncio.TimeoutError as err:
            # aiohttp's read timeout is a TimeoutError: reported like the request's own deadline, 504.
            raise asyncio.TimeoutError(f"engine at {self.url} did not answer in time") from err
        except aiohttp.ClientError as err:
            raise EngineUnavailable(f"engine at {self.url} unreachable: {type(err).__name__}: {err}") from err
        if status != 200:
            param = None
            try:
                error = json.loads(body)["error"]
                message, param = error["message"], error.get("param")
            except (ValueError, KeyError, TypeError, AttributeError):
                message = body[:500].decode("utf-8", "replace")
            raise EngineFailure(f"engine answered {status}: {message}", status, param=param,
                                retry_headers=retry_headers)
        try:
            answer = json.loads(body)
        except ValueError:  # UnicodeDecodeError included
            raise unreadable_answer(path, body[:500].decode("utf-8", "replace"), "not JSON") from None
        if not isinstance(answer, dict):
            raise unreadable_answer(path, answer, f"{value_words(answer)}, not an object")
        return answer


def unreadable_answer(path: str, answer: Any, why: str) -> EngineFailure:
    """The failure for an engine's 200 whose body is not what vLLM answers (not JSON, no ``choices``, a field of
    the wrong type): a 502 that says so, the answer itself left in judge-serve's log (it may hold anything)."""
    return EngineFailure(f"the engine's answer to {path} could not be read ({why}): {str(answer)[:500]}", status=502,
                         public=f"the engine's answer to {path} could not be read ({why}); judge-serve's log has it")


#: The most bytes of an engine's answer judge-serve reads into memory. A completion of vLLM's, logprobs included, is
#: kilobytes; an answer past this is no answer (an engine or a proxy in front of it gone wrong), and reading it
#: whole would let one answer take judge-serve's memory.
MAX_ANSWER_BYTES = 16 * 1024 * 1024


async def read_capped(response: aiohttp.ClientResponse, path: str) -> bytes:
    """The body of ``response`` (an answer to ``path``); ``unreadable_answer`` ("too large", a 502) past
    ``MAX_ANSWER_BYTES``, told by its Content-Length before anything is read, else by reading at most one byte
    more."""
    cap = MAX_ANSWER_BYTES
    if response.content_length is not None and response.content_length > cap:
        raise unreadable_answer(path, f"{response.content_length} bytes (Content-Length)", "too large")
    body = await read_up_to(response, cap + 1)
    if len(body) > cap:
        raise unreadable_answer(path, f"more than {cap} bytes", "too large")
    return body


async def read_up_to(response: aiohttp.ClientResponse, n: int) -> bytes:
    """The first ``n`` bytes of ``response``'s body, or all of it when shorter: read to its end, since one read
    returns only what has arrived (an answer broken off after its first packet was read whole, or not, as the
    packets fell). Raises what aiohttp raises for a body cut short (``aiohttp.ClientPayloadError``)."""
    parts, size = [], 0
    while size < n and (chunk := await response.content.read(n - size)):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


_IDENTITY = {"Accept-Encoding": "identity"}


async def unless_dead(call: Awaitable[T], dead: asyncio.Event,
                      discard: Callable[[T], object] | None = None) -> asyncio.Future[T] | None:
    """Await an engine call until it finishes or its engine is known dead (``dead`` set), whichever comes first.

    Returns the finished call's future (its result, or its exception, still inside), or None when the engine died
    first; the call is then cancelled, as both are when the caller is (a client gone mid-request, which
    ``serve.connections.unless_disconnected`` turns into that cancellation, leaves no request, and no pooled
    connection, behind). judge-serve's judgments and its proxied routes both use it.

    A call this does not hand back can still end with a result: one that finished in the loop turn its caller was
    cancelled in, or one that went on to finish though cancelled. That result goes to ``discard`` (the proxy's
    closes the engine's response, whose pooled connection would otherwise stay taken while the engine generates
    for nobody); its error, if it failed, is retrieved. ``discard`` must not raise.
    """
    task = asyncio.ensure_future(call)
    death = asyncio.ensure_future(dead.wait())
    handed = False
    try:
        done, _ = await asyncio.wait({task, death}, return_when=asyncio.FIRST_COMPLETED)
        handed = task in done
    finally:
        for waiting in (task, death):
            if not waiting.done():
                waiting.cancel()
        if not handed:
            discard_unclaimed(task, discard)
    return task if handed else None


def discard_unclaimed(call: asyncio.Future[T], discard: Callable[[T], object] | None) -> None:
    """Once ``call`` has ended (now, if it has): its result handed to ``discard``, or its error retrieved (asyncio
    would log it as never retrieved). For a call whose caller will not take what it ends with."""

    def ended(call: asyncio.Future[T]) -> None:
        if not call.cancelled() and call.exception() is None and discard is not None:
            discard(call.result())

    if call.done():
        ended(call)
    else:
        call.add_done_callback(ended)


async def until_dead(chunks: AsyncIterator[T], dead: asyncio.Event) -> AsyncIterator[T]:
    """``chunks`` (an engine's answer as it streams) until they end or their engine is known dead (``dead`` set),
    whichever comes first: each read raced against the death as ``unless_dead`` races a call. An engine that goes
    silent with its connection open would otherwise hold the client until the read timeout (``request_timeout_s``).

    No read begins once the death is known: a death before the first read, or while the caller held a chunk (a
    death cleared since by a restart included: this stream was the dead engine's), ends the stream before the
    next, however many an engine's buffer still holds. A chunk that arrives in the loop turn the death is declared
    in goes first; the read still waiting is cancelled. Every read and the wait for the death are ended, and
    awaited, before this ends: a client gone mid-stream (the caller cancelled) or a caller that stops early
    (``aclose``) leaves nothing behind.

    Raises:
        EngineUnavailable: once ``dead`` is set.
    """
    iterator = aiter(chunks)
    death = asyncio.ensure_future(dead.wait())
    read: asyncio.Future[T] | None = None
    try:
        while not (dead.is_set() or death.done()):
            read = asyncio.ensure_future(anext(iterator))
            await asyncio.wait({read, death}, return_when=asyncio.FIRST_COMPLETED)
            if not read.done():
                break
            finished, read = read, None
            try:
                chunk = finished.result()
            except StopAsyncIteration:
                return
            yield chunk
        raise EngineUnavailable("the engine died while its answer streamed")
    finally:
        await _ended(read, death)


async def _ended(*tasks: asyncio.Future | None) -> None:
    """Cancel those of ``tasks`` still running and wait until they have ended, what they end with dropped: every
    one's error retrieved so asyncio does not log it, a read that had already failed before the cancel came (the
    engine's connection dropped in the loop turn the client left) as well as one that failed as it was cancelled.
    A wait cancelled again (an anyio cancel scope, Starlette's streaming response's under uvicorn, cancels on every
    loop turn) ends before a read that takes longer to end: that read's error is retrieved when it ends."""
    ended = [task for task in tasks if task is not None]
    running = [task for task in ended if not task.done()]
    for task in running:
        task.cancel()
    try:
        if running:
            await asyncio.wait(running)
    finally:
        for task in ended:
            discard_unclaimed(task, None)


#: Seconds an idle pooled connection to an engine is kept for reuse. vLLM's HTTP server closes a connection idle
#: for ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` seconds (default 5, vllm/envs.py; uvicorn's ``timeout_keep_alive``);
#: aiohttp's default keeps it 15 s. A connection judge-serve keeps longer than the engine does can be handed out
#: at the moment the engine closes it, and the request on it dies unanswered. 3 s leaves the engine's own
#: timer 2 s of slack for a busy event loop.
ENGINE_KEEPALIVE_S = 3.0


#: Seconds after a request's last byte is written within which a pooled connection found closed counts as the
#: keep-alive race (the engine closed it with the request unread) and the request is resent. The race's drop
#: arrives one round trip after the write (well under a millisecond on one machine or one cluster network); an
#: engine's work on a request it read takes longer than this before it could drop it.
KEEPALIVE_RACE_WINDOW_S = 0.25

#: Connections of the probe session (``EngineHttp.probes``): one probe per engine at a time, plus reads of an
#: engine's model list; a few are plenty.
PROBE_CONNECTIONS = 8

_now = time.monotonic  # the clock of the window (a test moves it instead of waiting)


async def _mark_reused(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    # aiohttp's trace signal: the request is about to go out on a connection taken from the pool.
    context.trace_request_ctx.reused = True


async def _mark_written(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    # aiohttp's trace signals: the request's headers, then each chunk of its body, went to the socket.
    if isinstance(context.trace_request_ctx, Hop):
        context.trace_request_ctx.written_at = _now()


async def _mark_queued(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    if isinstance(context.trace_request_ctx, Hop):
        context.trace_request_ctx.queued = True


async def _mark_dequeued(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    if isinstance(context.trace_request_ctx, Hop):
        context.trace_request_ctx.queued = False


class EngineHttp:
    """The one HTTP client judge-serve talks to its engines with (judgments, health, the proxied OpenAI routes).

    ``request`` is ``aiohttp.ClientSession.request`` (the caller releases the response) plus one safe retry: a
    request that went out on a *pooled* connection and found it closed before its answer's headers came back
    (``ServerDisconnectedError``, a reset or a broken pipe) within ``KEEPALIVE_RACE_WINDOW_S`` of its last byte
    written is sent once more on a fresh connection. That is the keep-alive race: vLLM's server (uvicorn on uvloop)
    closes a connection whose keep-alive timer is due even when the next request already sits in its socket buffer
    unread (uvloop runs due timers before it reads ready sockets), so the request never reached the engine.
    aiohttp retries such a request itself only for idempotent methods, and every engine call here is a POST. A drop
    later than that, or on a fresh connection, is not retried: the engine may have read the request and worked on
    it (a POST sent twice is a judgment made twice), or it is really gone; the watcher decides.

    ``probes`` is a small session of its own for ``/health`` and ``/v1/models``: proxied generations may hold every
    connection of the pooled session for minutes, and a probe queued behind them would find a healthy engine dead.
    The judgments (``EngineClient``, ``request(..., judgment=True)``) have their own pooled session, ``judging``, for
    the same reason: ``judgment_connections`` is the bound on judgments in flight (``serve.judging.Judge.limit``), so
    a judgment never waits for a connection. A call that waited for one of its pool's connections past
    ``request_timeout_s`` raises ``EngineBusy`` (judge-serve busy), not aiohttp's connect timeout (engine unreachable).

    Timeouts: getting a connection ``request_timeout_s`` (waiting for a free one of the pool included; opening one
    10 s of it); each read ``request_timeout_s`` (a streamed proxy response may run longer in all, as long as bytes
    keep coming). Bodies are not decompressed: the proxy forwards them as sent. Create it inside
    the running event loop; close it with ``close()`` or ``async with``.

    Args:
        request_timeout_s: the per-read timeout, in seconds.
        max_connections: connections open at once to all engines (the proxied pool, and the resends' one).
        keepalive_s: seconds an idle connection stays pooled; keep it below the engine's keep-alive.
        judgment_connections: connections of the judgments' pool (None: ``max_connections``).
    """

    def __init__(self, request_timeout_s: float, max_connections: int, keepalive_s: float = ENGINE_KEEPALIVE_S,
                 judgment_connections: int | None = None):
        # ``connect`` bounds the wait for a free pooled connection too: without it, a call queued behind
        # max_connections long generations waited unbounded, outside every timeout request_timeout_s names.
        timeout = aiohttp.ClientTimeout(total=None, connect=request_timeout_s, sock_connect=10.0,
                                        sock_read=request_timeout_s)
        tracing = aiohttp.TraceConfig()
        tracing.on_connection_reuseconn.append(_mark_reused)
        tracing.on_request_headers_sent.append(_mark_written)
        tracing.on_request_chunk_sent.append(_mark_written)
        tracing.on_connection_queued_start.append(_mark_queued)
        tracing.on_connection_queued_end.append(_mark_dequeued)
        self.pooled = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, trace_configs=[tracing],
            connector=aiohttp.TCPConnector(limit=max_connections, keepalive_timeout=keepalive_s),
        )  # fmt: skip
        self.judging = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, trace_configs=[tracing],
            connector=aiohttp.TCPConnector(limit=judgment_connections or max_connections, keepalive_timeout=keepalive_s),
        )  # fmt: skip
        self.fresh = aiohttp.ClientSession(
            timeout=timeout, auto_decompress=False, connector=aiohttp.TCPConnector(limit=max_connections, force_close=True)
        )
        probing = aiohttp.TraceConfig()
        probing.on_connection_queued_start.append(_mark_queued)
        probing.on_connection_queued_end.append(_mark_dequeued)
        # A fresh connection per probe (one every few seconds): no keep-alive race to resend around.
        self.probes = aiohttp.ClientSession(  # read as sent (_IDENTITY): a compressed model list read as JSON failed
            timeout=timeout, auto_decompress=False, trace_configs=[probing], headers=_IDENTITY,
            connector=aiohttp.TCPConnector(limit=PROBE_CONNECTIONS, force_close=True),
        )  # fmt: skip
        self.retries = 0  # requests re-sent after a pooled connection turned out closed

    async def request(self, method: str, url: str, *, judgment: bool = False, **kwargs: Any) -> aiohttp.ClientResponse:
        """Send one request, on the judgments' pool when ``judgment``; its response once the status line and headers
        are in (release it when done).

        Raises:
            EngineBusy: no connection of the pool came free within the connect timeout.
        """
        hop = Hop()
        try:
            return await (self.judging if judgment else self.pooled).request(method, url, trace_request_ctx=hop,
                                                                             **kwargs)
        except aiohttp.ConnectionTimeoutError as err:
            if hop.queued:  # the time went waiting behind judge-serve's own calls: the engine was never tried
                raise EngineBusy(f"no connection to {url} came free in time: every one is in use") from err
            raise
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as err:
            if not hop.reused or isinstance(err, aiohttp.ClientConnectorError):
                raise
            # Only the keep-alive race is resent: the engine closed the connection as the request arrived, so the
            # drop comes back within a round trip of the last byte written (or before anything was written). A
            # drop later than that may follow an engine that read the request and worked on it (a proxy cutting
            # a long call, a worker crash): resending would have the engine judge it twice, so it is a 503. A
            # busy event loop here only makes the drop look later: the error is then a 503, never a duplicate.
            if hop.written_at is not None and _now() - hop.written_at > KEEPALIVE_RACE_WINDOW_S:
                raise
        self.retries += 1
        return await self.fresh.request(method, url, **kwargs)

    async def probe_request(self, method: str, url: str, hop: Hop | None = None, **kwargs: Any) -> aiohttp.ClientResponse:
        """A request of judge-serve's own about an engine (``/health``, ``/v1/models``) on the ``probes`` session,
        never queued behind proxied generations; ``hop.queued`` tells whether it is still waiting for one of that
        session's few connections (a timeout then is judge-serve's own congestion, no news about the engine)."""
        return await self.probes.request(method, url, trace_request_ctx=hop or Hop(), **kwargs)

    async def close(self) -> None:
        await self.pooled.close()
        await self.judging.close()
        await self.fresh.close()
        await self.probes.close()

    async def __aenter__(self) -> EngineHttp:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class Hop:
    __slots__ = ("reused", "written_at", "queued")

    def __init__(self) -> None:
        self.reused = False
        self.written_at: float | None = None  # _now() when the request's last byte was handed to the socket
        self.queued = False  # waiting for a free connection of its session's pool


def engine_session(request_timeout_s: float, max_connections: int, keepalive_s: float = ENGINE_KEEPALIVE_S,
                   judgment_connections: int | None = None) -> EngineHttp:
    """judge-serve's client to its engines (``EngineHttp``); create it inside the running event loop."""
    return EngineHttp(request_timeout_s, max_connections, keepalive_s, judgment_connections)

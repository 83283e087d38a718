"""judge-serve's hop to its engines (``serve.engine_client.EngineClient`` on ``engine_session``): each way an engine
call can end becomes the error judge-serve turns into its status code (EngineFailure → 502, EngineUnavailable → 503,
TimeoutError → 504), against a scripted engine on 127.0.0.1 (the network boundary), with the payload asserted as sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import json
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from serve.engine_client import (ENGINE_KEEPALIVE_S, EngineClient, EngineFailure, EngineUnavailable, engine_session,
                                 unless_dead, until_dead)
from tests.support.scripted_endpoint import ScriptedEndpoint

PAYLOAD = {"model": "gen", "prompt": [151644, 872, 198], "max_tokens": 4, "temperature": 0.0, "stop": ["[END]"],
           "logprobs": 3, "logprob_token_ids": [15, 16, 17]}
COMPLETION = {"choices": [{"text": "[FEEDBACK] Да. [RESULT] 1 [END]", "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 9}}


def _post(root: str, *, dead: asyncio.Event | None = None, read_timeout_s: float = 30.0, die_after_s: float | None = None):
    async def go():
        nonlocal dead
        dead = dead or asyncio.Event()
        async with engine_session(read_timeout_s, max_connections=4) as http:
            client = EngineClient(http, root, dead, lambda: "generator engine exited with code -9")
            if die_after_s is not None:
                asyncio.get_running_loop().call_later(die_after_s, dead.set)
            return await client.post("/v1/completions", PAYLOAD)

    return asyncio.run(go())


def test_a_completion_comes_back_as_sent_and_the_payload_crosses_unchanged():
    """A 200 is the engine's JSON; the engine received exactly the payload judge-serve built."""
    with ScriptedEndpoint(lambda path, body: (200, COMPLETION)) as engine:
        assert _post(engine.base_url.removesuffix("/v1")) == COMPLETION
    assert engine.requests == [("/v1/completions", PAYLOAD)]


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [(400, {"error": {"message": "prompt is too long", "type": "BadRequestError"}}, "engine answered 400: prompt is too long"),
     (500, {"detail": "boom"}, 'engine answered 500: {"detail": "boom"}')],
)
def test_an_engine_error_names_its_status_and_message(status, body, message):
    """A non-200 answer is an EngineFailure carrying the engine's own message (or the start of its body)."""
    with ScriptedEndpoint(lambda path, _: (status, body)) as engine, pytest.raises(EngineFailure) as caught:
        _post(engine.base_url.removesuffix("/v1"))
    assert str(caught.value) == message


def test_an_unreachable_engine_is_unavailable():
    """Nothing listening on the port: EngineUnavailable naming the engine's URL (503), not a crash."""
    # Held bound, never listening, through the call: a port merely closed is the next one bind(0) may hand to any
    # process (the other xdist worker's servers and engines pick ports all the time), and one that took it over
    # would answer.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(EngineUnavailable, match=rf"engine at http://127\.0\.0\.1:{port} unreachable"):
            _post(f"http://127.0.0.1:{port}")


def test_a_silent_engine_times_out():
    """No byte within the read timeout: a TimeoutError naming the engine (judge-serve answers 504)."""
    release = threading.Event()

    def slow(path, body):
        release.wait(60)  # let go by the finally below: a bound for a failing test, never the order (5 s could answer
        # before a loaded event loop saw its 0.3 s timeout, a 200 and no TimeoutError)
        return 200, COMPLETION

    with ScriptedEndpoint(slow) as engine:
        try:
            with pytest.raises(asyncio.TimeoutError, match="did not answer in time"):
                _post(engine.base_url.removesuffix("/v1"), read_timeout_s=0.3)
        finally:
            release.set()


def test_a_dead_engine_is_not_called_and_one_dying_mid_call_is_given_up_at_once():
    """With the engine known dead the call fails before sending; an engine that dies while a call waits ends that
    call at the death (not at the timeout), with the death's reason."""
    with ScriptedEndpoint(lambda path, body: (200, COMPLETION)) as engine:
        dead = asyncio.Event()
        dead.set()
        with pytest.raises(EngineUnavailable, match="exited with code -9"):
            _post(engine.base_url.removesuffix("/v1"), dead=dead)
        assert engine.requests == []

    release = threading.Event()

    def hanging(path, body):
        release.wait(30)
        return 200, COMPLETION

    with ScriptedEndpoint(hanging) as engine:
        # The engine holds its answer until `release`, set only after the call returned: an EngineUnavailable can
        # come from the death alone (untimed; an answer would have meant a 200 after release.wait's 30 s).
        try:
            with pytest.raises(EngineUnavailable, match="exited with code -9"):
                _post(engine.base_url.removesuffix("/v1"), die_after_s=0.2)
        finally:
            release.set()


def test_a_cancelled_caller_cancels_its_engine_call():
    """A caller cancelled while it waits (a client gone mid-request) takes its engine call with it: nothing keeps
    running, or holding a pooled connection, for an answer nobody reads. Before ``unless_dead``, the proxy left it."""

    async def go() -> bool:
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def call():
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        waiting = asyncio.ensure_future(unless_dead(call(), asyncio.Event()))
        await started.wait()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.sleep(0)  # the call's cancellation runs
        return cancelled.is_set()

    assert asyncio.run(go())


def test_a_call_that_finishes_in_the_loop_turn_its_caller_is_cancelled_goes_to_discard():
    """The call finishes and, in that same loop turn, its caller is cancelled (the call's last step cancels it, so
    the order is the loop's, not timing's): unless_dead ends cancelled, and what the call returned goes to
    ``discard``; dropped, the proxy's engine response would keep its pooled connection."""

    async def go() -> tuple[list[str], bool]:
        discarded: list[str] = []

        async def call() -> str:
            await asyncio.sleep(0)  # the caller waits on the call by now
            waiting.cancel()  # the client leaves in the turn the engine's answer came
            return "the engine's response"

        waiting = asyncio.ensure_future(unless_dead(call(), asyncio.Event(), discard=discarded.append))
        try:
            await waiting
        except asyncio.CancelledError:
            pass
        return discarded, waiting.cancelled()

    assert asyncio.run(go()) == (["the engine's response"], True)


def test_a_response_that_came_as_its_caller_was_cancelled_is_closed_and_its_connection_let_go():
    """The same order against a real aiohttp session and a stand-in engine on 127.0.0.1 that streams without end:
    the response the caller never took is closed by the proxy's ``discard``, and the engine sees its connection
    closed (vLLM then aborts the generation) instead of streaming on for nobody."""

    async def go() -> tuple[bool, bool]:
        closed = asyncio.Event()

        async def engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"9\r\ndata: 1\n\n\r\n")
            await writer.drain()
            while await reader.read(1024):
                pass
            closed.set()
            writer.close()

        server = await asyncio.start_server(engine, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        responses = []
        async with server, engine_session(30.0, max_connections=4) as http:

            async def call():
                response = await http.request("POST", f"http://127.0.0.1:{port}/v1/chat/completions", data=b"{}")
                responses.append(response)
                waiting.cancel()  # the client leaves in the turn the engine's headers came
                return response

            waiting = asyncio.ensure_future(unless_dead(call(), asyncio.Event(), discard=lambda r: r.close()))
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await asyncio.wait_for(closed.wait(), 10)  # a bound on a failure, not a wait for an order
            return responses[0].closed, closed.is_set()

    assert asyncio.run(go()) == (True, True)


# ---------------------------------------------------------------------------------------------------------------
# until_dead: a relayed stream's reads raced against its engine's death. The engine is a queue-fed async generator
# (what it has sent and not yet been read is the queue's), each read's start told by an Event: the order of reads,
# chunks and the death is set by the test, never left to timing.
# ---------------------------------------------------------------------------------------------------------------


class _Engine:
    """A stream's chunk source: ``chunks()`` yields what ``send`` queued, in order, until ``end``; ``waiting`` is set
    while a read waits for a chunk not yet sent, and ``cancelled`` once a read was cancelled."""

    def __init__(self, *sent: bytes):
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.waiting, self.cancelled = asyncio.Event(), asyncio.Event()
        for chunk in sent:
            self.send(chunk)

    def send(self, chunk: bytes) -> None:
        self.queue.put_nowait(chunk)

    def end(self) -> None:
        self.queue.put_nowait(None)

    async def chunks(self):
        try:
            while True:
                if self.queue.empty():
                    self.waiting.set()
                chunk = await self.queue.get()
                self.waiting.clear()
                if chunk is None:
                    return
                yield chunk
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def _left_behind() -> set[asyncio.Task]:
    return asyncio.all_tasks() - {asyncio.current_task()}


def test_a_stream_ends_with_its_chunks_when_its_engine_lives():
    async def go():
        engine = _Engine(b"a", b"b")
        engine.end()
        return [chunk async for chunk in until_dead(engine.chunks(), asyncio.Event())], _left_behind()

    assert asyncio.run(go()) == ([b"a", b"b"], set())


def test_an_engine_dead_before_the_stream_begins_streams_nothing():
    """A death declared before the first read ends the stream at once, even from an engine whose chunks are all
    there to read: one always ready was relayed for ever, the race lost by the death at every read."""

    async def endless():
        while True:
            yield b"data: {}\n\n"

    async def go():
        dead = asyncio.Event()
        dead.set()
        relayed = []
        with pytest.raises(EngineUnavailable):
            async for chunk in until_dead(endless(), dead):
                relayed.append(chunk)
                if len(relayed) == 3:
                    break
        return relayed, _left_behind()

    assert asyncio.run(go()) == ([], set())


def test_a_death_while_the_engine_is_silent_ends_the_stream_its_read_cancelled_and_awaited():
    async def go():
        engine, dead = _Engine(b"a"), asyncio.Event()
        stream = until_dead(engine.chunks(), dead)
        first = await anext(stream)
        pending = asyncio.ensure_future(anext(stream))
        await engine.waiting.wait()
        dead.set()
        with pytest.raises(EngineUnavailable):
            await pending
        return first, engine.cancelled.is_set(), _left_behind()

    assert asyncio.run(go()) == (b"a", True, set())


@pytest.mark.parametrize("death_first", [True, False], ids=["death-then-chunk", "chunk-then-death"])
def test_a_chunk_sent_in_the_loop_turn_of_the_death_goes_first_and_then_the_stream_ends(death_first):
    """A chunk and the death in one loop turn, in either order: the chunk is relayed, then the stream ends before
    another read begins (the next chunk, already sent, stays unread)."""

    async def go():
        engine, dead = _Engine(), asyncio.Event()
        stream = until_dead(engine.chunks(), dead)
        pending = asyncio.ensure_future(anext(stream))
        await engine.waiting.wait()
        if death_first:
            dead.set()
        engine.send(b"last")
        if not death_first:
            dead.set()
        engine.send(b"unread")
        relayed = await pending
        with pytest.raises(EngineUnavailable):
            await anext(stream)
        return relayed, engine.queue.qsize(), _left_behind()

    assert asyncio.run(go()) == (b"last", 1, set())


def test_a_client_gone_mid_stream_cancels_the_pending_read():
    """The relay cancelled (Starlette's answer to a client that disconnected): the read it waited on is cancelled
    and ended with it, no task (nor the connection it reads) left waiting on the engine."""

    async def go():
        engine = _Engine(b"a")
        relayed = []

        async def relay():
            async for chunk in until_dead(engine.chunks(), asyncio.Event()):
                relayed.append(chunk)

        relaying = asyncio.ensure_future(relay())
        await engine.waiting.wait()
        relaying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await relaying
        return relayed, engine.cancelled.is_set(), _left_behind()

    assert asyncio.run(go()) == ([b"a"], True, set())


def test_a_read_that_failed_in_the_loop_turn_its_client_left_has_its_error_retrieved():
    """The engine's connection drops (the read ends on its error) and, in that loop turn, the relay is cancelled
    (the client left): the failed read's error is retrieved as the stream ends, so asyncio reports nothing
    ("Task exception was never retrieved") when the read is collected."""

    async def go() -> list[str]:
        reported: list[str] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context["message"]))
        waiting, broke = asyncio.Event(), asyncio.get_running_loop().create_future()

        async def chunks():
            yield b"a"
            waiting.set()
            await broke
            raise ConnectionResetError("the engine's connection dropped")

        async def relay() -> None:
            async for _ in until_dead(chunks(), asyncio.Event()):
                pass

        async def relayed_and_cancelled() -> bool:
            relaying = asyncio.ensure_future(relay())
            await waiting.wait()
            broke.set_result(None)  # the read's next step raises ...
            relaying.cancel()  # ... in the loop turn the relay is cancelled
            with pytest.raises(asyncio.CancelledError):
                await relaying
            return relaying.cancelled()

        assert await relayed_and_cancelled()
        gc.collect()  # the read's task is collected here: asyncio reports an unretrieved error as it is
        return reported

    assert asyncio.run(go()) == []


@pytest.mark.parametrize("extra_steps", [0, 1, 2])
def test_a_read_still_ending_when_the_relay_is_cancelled_again_has_its_error_retrieved(extra_steps):
    """The client leaves mid-stream under an anyio task group (Starlette's StreamingResponse under uvicorn, ASGI spec
    2.3), whose cancel scope cancels the relay again on every loop turn: the read, cancelled, takes ``extra_steps``
    loop turns to end and then fails (its connection dropped as it was cancelled). The relay ends before the read
    does, and the read's error is still retrieved once it ends: asyncio reports nothing when it is collected."""
    import anyio

    async def go() -> list[str]:
        reported: list[str] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context["message"]))
        started = asyncio.Event()
        reads: list[asyncio.Task] = []

        async def chunks():
            yield b"a"
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                reads.append(asyncio.current_task())
                for _ in range(extra_steps):
                    await asyncio.sleep(0)  # the read's cancellation takes a step or two
                raise ConnectionResetError("dropped as it was cancelled") from None

        async def relay() -> None:
            async for _ in until_dead(chunks(), asyncio.Event()):
                pass

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            await started.wait()
            group.cancel_scope.cancel()  # the client left
        await asyncio.wait(reads)  # the read has ended, its error in it
        reads.clear()
        gc.collect()  # the read's task is collected here: asyncio reports an unretrieved error as it is
        return reported

    assert asyncio.run(go()) == []


def test_a_stream_closed_early_leaves_no_wait_for_the_death_behind():
    """A caller that stops reading and closes the stream (``aclose``): the wait for the engine's death is ended with
    it; left pending, it would wait on the engine's event until that engine died."""

    async def go():
        engine = _Engine(b"a", b"b")
        stream = until_dead(engine.chunks(), asyncio.Event())
        first = await anext(stream)
        await stream.aclose()
        return first, _left_behind()

    assert asyncio.run(go()) == (b"a", set())


def test_a_restart_clears_the_death_for_new_streams_not_for_the_dead_engines_own():
    """``dead`` is cleared once the engine is restarted. A stream of the engine that died ends, though the death was
    cleared before it read on; a stream begun after the restart reads to its end."""

    async def go():
        dead = asyncio.Event()
        old = _Engine(b"a", b"b", b"c")
        old_stream = until_dead(old.chunks(), dead)
        first = await anext(old_stream)
        dead.set()
        await asyncio.sleep(0)  # one loop turn: the stream's wait for the death sees it
        dead.clear()
        with pytest.raises(EngineUnavailable):
            await anext(old_stream)
        new = _Engine(b"x", b"y")
        new.end()
        return first, [chunk async for chunk in until_dead(new.chunks(), dead)], _left_behind()

    assert asyncio.run(go()) == (b"a", [b"x", b"y"], set())

# ---------------------------------------------------------------------------------------------------------------
# The 503 after a quiet spell. vLLM's server (uvicorn, ``timeout_keep_alive=VLLM_HTTP_TIMEOUT_KEEP_ALIVE``, 5 s)
# closes a connection whose keep-alive timer is due; a request that reaches it at that moment is dropped unread.
# judge-serve's pool (aiohttp, 15 s by default) reused such connections, and the POST failed with
# ServerDisconnectedError -> 503 while the engine was alive.
# ---------------------------------------------------------------------------------------------------------------


class KeepAliveEngine:
    """An HTTP/1.1 engine on 127.0.0.1 that answers the first request of each connection and keeps it open, then
    closes it, unread, when the next request arrives on it: uvicorn's keep-alive timer winning against a request
    already in the socket buffer, made to happen every time. With ``drop_first``, a fresh connection's first
    request is dropped too (an engine really going away); with ``drop_reused=False`` every request is answered.
    ``connections`` counts accepted connections, ``answered`` the requests answered."""

    def __init__(self, drop_first: bool = False, drop_reused: bool = True):
        self.connections = 0
        self.answered: list[dict] = []
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                engine.connections += 1
                self.served = 0

            def handle_one_request(self):
                if (self.served and drop_reused) or drop_first:
                    select.select([self.connection], [], [])  # the request has arrived: close it unread
                    self.close_connection = True
                    return
                super().handle_one_request()

            def do_POST(self):
                engine.answered.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.served += 1
                data = json.dumps(COMPLETION).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # serve_forever checks for shutdown() every poll_interval (0.5 s by default): each close would wait it
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def _post_twice(root: str) -> tuple[list, int]:
    """Two calls one after the other on one session; each outcome (the answer or the exception) and the retries."""

    async def go():
        async with engine_session(30.0, max_connections=4) as http:
            client = EngineClient(http, root, asyncio.Event(), lambda: "dead")
            outcomes = []
            for _ in range(2):
                try:
                    outcomes.append(await client.post("/v1/completions", PAYLOAD))
                except (EngineUnavailable, EngineFailure) as err:
                    outcomes.append(err)
            return outcomes, http.retries

    return asyncio.run(go())


def test_a_pooled_connection_the_engine_closed_as_the_request_arrived_is_retried_on_a_fresh_one(monkeypatch):
    """The quiet spell's 503: the second call reuses the pooled connection, which the engine closes with the
    request unread. It is sent once more on a fresh connection and answered: no 503 while the engine is alive, and the engine
    answered each call exactly once. (Before the fix: EngineUnavailable "ServerDisconnectedError".) The race window's
    clock stands still: on a loaded machine the drop could otherwise be seen after the 0.25 s window, a 503."""
    import serve.engine_client as engine_client

    monkeypatch.setattr(engine_client, "_now", lambda: 1000.0)
    with KeepAliveEngine() as engine:
        outcomes, retries = _post_twice(engine.url)
    assert outcomes == [COMPLETION, COMPLETION]
    assert retries == 1
    assert engine.connections == 2  # the second call's retry went out on a new connection
    assert engine.answered == [PAYLOAD, PAYLOAD]


def test_a_fresh_connection_closed_unanswered_is_not_retried():
    """Only a reused connection is retried: a fresh one dropped unanswered means the engine is going away, and the
    call is EngineUnavailable (503) after one attempt, never sent twice."""
    with KeepAliveEngine(drop_first=True) as engine:
        outcomes, retries = _post_twice(engine.url)
    assert [type(o) for o in outcomes] == [EngineUnavailable, EngineUnavailable]
    assert retries == 0 and engine.connections == 2 and engine.answered == []


def test_the_pool_drops_a_connection_before_the_engine_would(monkeypatch):
    """judge-serve's pool keeps an idle connection for less than vLLM's server does: a connection idle for the
    engine's keep-alive (read from the installed vLLM's ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` default) is not reused
    but replaced by a fresh one. The pool's clock is moved forward instead of sleeping."""
    spec = importlib.util.find_spec("vllm")
    envs = Path(spec.origin).parent / "envs.py"  # read, not imported (importing vLLM takes seconds)
    engine_keepalive_s = int(re.search(r'"VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "(\d+)"', envs.read_text())[1])
    assert ENGINE_KEEPALIVE_S < engine_keepalive_s

    import aiohttp.connector

    now = [time.monotonic()]
    monkeypatch.setattr(aiohttp.connector, "monotonic", lambda: now[0])

    async def go(root):
        async with engine_session(30.0, max_connections=4) as http:
            client = EngineClient(http, root, asyncio.Event(), lambda: "dead")
            await client.post("/v1/completions", PAYLOAD)
            now[0] += ENGINE_KEEPALIVE_S / 2
            await client.post("/v1/completions", PAYLOAD)  # within the pool's keep-alive: the same connection
            now[0] += engine_keepalive_s
            await client.post("/v1/completions", PAYLOAD)  # idle as long as the engine keeps it: a new one

    with KeepAliveEngine(drop_reused=False) as engine:
        asyncio.run(go(engine.url))
    assert engine.connections == 2


class WorkThenDropEngine:
    """An HTTP/1.1 engine on 127.0.0.1 that answers the first request of a connection, then reads the second one
    whole, runs ``work`` (the engine working on it) and closes the connection unanswered: a proxy cutting a long
    call, or an engine worker crashing mid-judgment. ``received`` holds every request body it read."""

    def __init__(self, work):
        self.received: list[bytes] = []
        self.work = work
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _read(self, conn: socket.socket) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])
        while len(body) < length:
            body += conn.recv(65536)
        return body

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            served = 0
            while (body := self._read(conn)) is not None:
                self.received.append(body)
                if served:
                    self.work()
                    return  # closed with the request read and worked on, unanswered
                served += 1
                data = json.dumps(COMPLETION).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(data), data))

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self._server.accept()
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._server.close()


def test_a_request_the_engine_read_and_worked_on_before_the_drop_is_never_sent_again(monkeypatch):
    """The engine reads the second call on the pooled connection, works on it for longer than the keep-alive race's
    window (the window's clock is moved forward instead of waiting), then drops the connection: the call is one
    EngineUnavailable (503), and the engine received it exactly once. (Before: it was resent on a fresh connection
    and the engine judged it twice.)"""
    import serve.engine_client as engine_client

    now = [1000.0]
    monkeypatch.setattr(engine_client, "_now", lambda: now[0], raising=False)

    def work():
        now[0] += 10 * getattr(engine_client, "KEEPALIVE_RACE_WINDOW_S", 1.0)

    with WorkThenDropEngine(work) as engine:
        outcomes, retries = _post_twice(engine.url)
    assert outcomes[0] == COMPLETION and isinstance(outcomes[1], EngineUnavailable)
    assert retries == 0
    assert len(engine.received) == 2  # the first call and the dropped one: once each


class BigAnswerEngine:
    """An engine whose every answer is a 200 of valid JSON, ``size`` bytes long, sent with a Content-Length or in
    chunks without one (``chunked``); ``sent`` counts the bytes it managed to send."""

    def __init__(self, size: int, chunked: bool):
        body = json.dumps({**COMPLETION, "pad": "x" * (size - len(json.dumps({**COMPLETION, "pad": ""})))}).encode()
        engine = self
        self.sent = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if not chunked:
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    with contextlib.suppress(OSError):
                        self.wfile.write(body)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                with contextlib.suppress(OSError):
                    for start in range(0, len(body), 4096):
                        part = body[start:start + 4096]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        engine.sent += len(part)
                    self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_answer_larger_than_the_cap_is_a_502_saying_so_not_read_whole(monkeypatch, chunked):
    """A 200 of valid JSON past ``MAX_ANSWER_BYTES`` (20 KiB here): an EngineFailure (502) saying the answer is too
    large, told by its Content-Length or by reading one byte past the cap; one within the cap is read as before.
    (Before: any answer was read whole into memory, however large.)"""
    import serve.engine_client as engine_client

    monkeypatch.setattr(engine_client, "MAX_ANSWER_BYTES", 20_000, raising=False)
    with BigAnswerEngine(15_000, chunked) as engine:
        assert _post(engine.url)["pad"] == "x" * (15_000 - len(json.dumps({**COMPLETION, "pad": ""}).encode()))
    with BigAnswerEngine(200_000, chunked) as engine, pytest.raises(EngineFailure) as caught:
        _post(engine.url)
    assert caught.value.status == 502 and "could not be read (too large)" in caught.value.public


def test_the_wait_for_a_pooled_connection_is_bounded_by_request_timeout_s():
    """Getting a connection (waiting for a free one of the pool included) is bounded by ``request_timeout_s``, as
    its help says; each read is too. (Before: only opening one was, 10 s; a call queued behind every pooled
    connection waited without bound.)"""

    async def go():
        async with engine_session(42.0, max_connections=4) as http:
            return http.pooled.timeout, http.fresh.timeout

    for timeout in asyncio.run(go()):
        assert (timeout.connect, timeout.sock_read, timeout.sock_connect) == (42.0, 42.0, 10.0)

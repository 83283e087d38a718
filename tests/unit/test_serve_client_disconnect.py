"""judge-serve's work for a client that left: judge-serve's app on a real uvicorn server in this process (Starlette's
test client never disconnects), in front of a scripted engine that holds each request until the test lets it go.
The client leaves while its first judgment is held at the engine and the rest wait their turn
(``max_concurrent_engine_requests`` 1); the order of events is forced, nothing is timed."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading

import httpx
import pytest

from serve.app import create_app
from serve.config import ServeConfig
from tests.support.scripted_endpoint import EventStream, ScriptedEndpoint
from tests.support.serve_in_process import served_over_tcp

KEY = "disconnect-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
CUSTOM = {"name": "Корректность", "rubrics": "0: нет\n1: да"}
#: Bounds a wait only so that a failing test ends; a passing one never reaches it.
FAILING_AFTER_S = 60


class HeldEngine:
    """A scripted engine whose generation requests wait for ``release``; ``arrived(n)`` waits until n came in.
    With ``watched`` set (an event), the next request is held instead until judge-serve closes its connection, which
    sets ``watched``; a streamed one (``"stream": true``) gets its first event before that."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.watched: threading.Event | None = None
        self.endpoint: ScriptedEndpoint | None = None  # the endpoint answering with respond, once it serves
        self._count = 0
        self._changed = threading.Condition()

    def respond(self, path: str, body: dict) -> tuple:
        with self._changed:
            self._count += 1
            self._changed.notify_all()
            closed, self.watched = self.watched, None
        if closed is not None:
            # the socket judge-serve sent this request on (ScriptedEndpoint's, for the request respond answers)
            assert self.endpoint is not None
            connection = self.endpoint.local.connection
            if body.get("stream"):
                threading.Thread(target=_watch_close, args=(connection, closed), daemon=True).start()
                return EventStream(('{"choices": [{"index": 0, "delta": {"content": "Да"}}]}',), cut=True, hold=closed)
            _watch_close(connection, closed)
        else:
            self.release.wait(FAILING_AFTER_S)
        return 200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]", "finish_reason": "stop"}], "usage": {}}

    @property
    def count(self) -> int:
        with self._changed:
            return self._count

    def arrived(self, n: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self._count >= n, FAILING_AFTER_S), f"{self._count} of {n} arrived"


def _watch_close(connection: socket.socket, closed: threading.Event) -> None:
    """Set ``closed`` when the peer closes ``connection``: nothing more is sent on a connection whose request is
    unanswered, so its next read ends only at the close (b"", or a reset)."""
    connection.settimeout(FAILING_AFTER_S)
    try:
        ended = connection.recv(1) == b""
    except TimeoutError:
        return
    except OSError:  # reset: closed too
        ended = True
    if ended:
        closed.set()


def _respond_get(path: str) -> tuple:
    if path == "/v1/models":
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 2048}]}
    return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})


class LeftClients(logging.Handler):
    """judge-serve's log line for a client that left, per path, as events a test can wait on."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.left: dict[str, threading.Event] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "left before its answer" in message:
            self.event(message.split()[4]).set()  # "the client of POST <path> left ..."

    def event(self, path: str) -> threading.Event:
        return self.left.setdefault(path, threading.Event())


@pytest.fixture(scope="module")
def served(tiny_causal_dir):
    """(judge-serve's root URL, its engine, the log watcher) for one judge-serve on uvicorn in this process."""
    engine = HeldEngine()
    watcher = LeftClients()
    logger = logging.getLogger("judge_serve")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(watcher)
    with ScriptedEndpoint(engine.respond, respond_get=_respond_get) as endpoint, \
            pytest.MonkeyPatch.context() as patch:  # fmt: skip
        engine.endpoint = endpoint
        patch.setenv("VLLM_API_KEY", "engine-key")
        config = ServeConfig(model=str(tiny_causal_dir), served_model_name="judge", generator_url=endpoint.url,
                             max_model_len=2048, max_tokens=48, api_key=KEY, verdict_format="tagged",
                             criteria_classifier="", max_concurrent_engine_requests=1).validate()  # fmt: skip
        app = create_app(config)
        try:
            with served_over_tcp(app, timeout_s=FAILING_AFTER_S) as (root, _):
                try:
                    assert app.state.serve.status == "ready", app.state.serve.failure
                    yield root, endpoint, engine, watcher
                finally:
                    engine.release.set()  # before the server stops: a held request would keep it waiting
        finally:
            logger.removeHandler(watcher)
            logger.setLevel(level)


@contextlib.contextmanager
def _sent(port_url: str, path: str, body: dict):
    """A request sent on a connection of its own, closed (the client leaving) when the block ends."""
    data = json.dumps(body, ensure_ascii=False).encode()
    port = int(port_url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\ncontent-type: "
                     f"application/json\r\ncontent-length: {len(data)}\r\n\r\n".encode() + data)
        yield
    finally:
        sock.close()


def test_a_judgment_whose_client_left_sends_nothing_more_to_the_engine(served):
    """Six criteria, one engine request at a time: the client leaves while the first is held at the engine.
    judge-serve cancels the judging (before, Starlette let the handler run on and the engine got all six, for
    nobody); the next request's one judgment is then the only one the engine sees: the queue held no leftovers."""
    root, endpoint, engine, watcher = served
    before, mark = len(endpoint.bodies("/v1/completions")), engine.count
    item = {"instruction": "Сколько будет 2+2?", "answer": "4",
            "criteria": [{**CUSTOM, "name": f"Критерий {k}"} for k in range(6)]}
    with _sent(root, "/v1/judge", {"items": [item]}):
        engine.arrived(mark + 1)
    assert watcher.event("/v1/judge").wait(FAILING_AFTER_S), "judge-serve did not notice the client leave"
    engine.release.set()
    after = httpx.post(root + "/v1/judge", headers=AUTH, json={"items": [{**item, "criteria": [CUSTOM]}]},
                       timeout=FAILING_AFTER_S)
    assert after.status_code == 200, after.text
    assert len(endpoint.bodies("/v1/completions")) - before == 2  # the first judgment of each request, no more
    engine.release.clear()


def test_a_proxied_completion_whose_client_left_is_cancelled(served):
    """A proxied generation the client gives up on, while the engine holds it, is cancelled: its connection to
    the engine is closed (vLLM then aborts the request) instead of waiting for an answer nobody reads."""
    root, endpoint, engine, watcher = served
    before, mark = len(endpoint.bodies("/v1/completions")), engine.count
    closed = engine.watched = threading.Event()
    with _sent(root, "/v1/completions", {"model": "judge", "prompt": "x", "max_tokens": 4}):
        engine.arrived(mark + 1)
        assert not closed.is_set()  # held while the client waits
    assert watcher.event("/v1/completions").wait(FAILING_AFTER_S), "judge-serve did not notice the client leave"
    assert closed.wait(FAILING_AFTER_S), "judge-serve kept its connection to the engine open"
    assert len(endpoint.bodies("/v1/completions")) - before == 1


def test_a_streamed_chat_whose_client_left_after_its_first_event_closes_the_engine_connection(served):
    """A streamed chat the client leaves after reading its first event, the engine's stream still going: judge-serve
    closes its connection to the engine (vLLM then aborts the generation), rather than keep reading a stream nobody
    receives."""
    root, endpoint, engine, _ = served
    closed = engine.watched = threading.Event()
    body = {"model": "judge", "messages": [{"role": "user", "content": "Привет"}], "stream": True, "max_tokens": 4}
    with httpx.stream("POST", root + "/v1/chat/completions", headers=AUTH, json=body,
                      timeout=FAILING_AFTER_S) as answer:
        assert answer.status_code == 200
        lines = answer.iter_lines()  # kept: an iterator of httpx's dropped mid-stream closes the connection
        first = next(line for line in lines if line)
        assert json.loads(first.removeprefix("data: "))["choices"][0]["delta"]["content"] == "Да"
        assert not closed.is_set()  # the engine's stream is still open while the client reads
    assert closed.wait(FAILING_AFTER_S), "judge-serve kept its connection to the engine open"
    assert endpoint.bodies("/v1/chat/completions")[-1]["stream"] is True

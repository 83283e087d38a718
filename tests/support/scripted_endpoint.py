"""A scripted OpenAI-compatible endpoint on 127.0.0.1: the network boundary of the eval, MERA, synthetic-data and
Slurm tests.

``ScriptedEndpoint`` is a real HTTP server that answers every POST with ``respond(path, body) -> (status, json)``
(or ``(status, json, headers)``, e.g. a ``Retry-After``; a ``RawBody`` for ``json``: bytes that are no JSON, an HTML
page; or an ``EventStream``: a streamed reply, cut or whole) and
records each ``(path, body)`` it receives, so a test can assert the exact payloads that crossed the wire. What to
answer (a table, a script, a fixed verdict) stays with each test module.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class EventStream:
    """A streamed answer for ``respond``: a 200 ``text/event-stream`` sent in HTTP/1.1 chunks, one per event (each
    ``data: ...`` with its blank line), as vLLM streams; ``cut``: the connection is closed after the events without the
    stream's last chunk, as when the engine dies mid-reply, once ``hold`` is set (if given: a test sets it when the
    events have been read, so the break comes after them, as it does after a reply's first tokens). ``unframed``: the
    body has neither chunks nor a Content-Length, so only the close ends it (HTTP/1.1 allows it; a proxy may send
    so): a close after the events is the body's end, whole as far as the client can tell."""

    events: tuple[str, ...]
    cut: bool = False
    hold: threading.Event | None = None
    unframed: bool = False


@dataclass(frozen=True)
class RawBody:
    """A body for ``respond`` sent as these bytes, not as JSON: an HTML page, plain text, JSON cut short (a proxy's
    or a web server's answer where an OpenAI one was expected)."""

    data: bytes
    content_type: str = "application/json"


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up before its answer is written (a test's timeout, a cancelled request) is an event the
    tests force, not a fault of the endpoint: not printed as a traceback in the test run's output."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class ScriptedEndpoint:
    """OpenAI-compatible server on 127.0.0.1 answering with ``respond(path, body) -> (status, json)``.

    It serves from construction until ``close()`` (or the end of a ``with`` block). ``requests`` holds every
    ``(path, body)`` POSTed, in arrival order (an empty body reads as ``{}``), ``gets`` every GET path. ``GET
    /v1/models`` lists ``model`` with ``max_model_len`` (left out when None), as vLLM does; with ``respond_get``,
    every GET is answered by ``respond_get(path) -> (status, json)`` instead. ``headers`` holds each request's
    headers (lower-case names), GET and POST, in arrival order. While ``respond`` runs, ``local.connection`` (a
    thread-local) is the socket of the request it answers: a test can watch its client close it.
    """

    def __init__(self, respond: Callable[[str, dict], tuple], model: str = "scripted",
                 max_model_len: int | None = 4096, *, respond_get: Callable[[str], tuple] | None = None,
                 port: int = 0):  # fmt: skip
        self.respond = respond
        self.model = model
        self.max_model_len = max_model_len
        self.requests: list[tuple[str, dict]] = []
        self.gets: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.local = threading.local()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, status: int, payload: dict | RawBody, headers: dict[str, str] | None = None) -> None:
                raw = isinstance(payload, RawBody)
                data = payload.data if raw else json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", payload.content_type if raw else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                endpoint.headers.append({k.lower(): v for k, v in self.headers.items()})
                endpoint.gets.append(self.path)
                if respond_get is not None:
                    return self._send(*respond_get(self.path))
                if self.path.rstrip("/") != "/v1/models":
                    return self._send(404, {"error": {"message": "not found"}})
                entry = {"id": endpoint.model, "object": "model", "created": 0, "owned_by": "test"}
                if endpoint.max_model_len is not None:
                    entry["max_model_len"] = endpoint.max_model_len
                self._send(200, {"object": "list", "data": [entry]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with endpoint._lock:
                    endpoint.headers.append({k.lower(): v for k, v in self.headers.items()})
                    endpoint.requests.append((self.path, body))
                endpoint.local.connection = self.connection  # each request's handler runs on its own thread
                answer = endpoint.respond(self.path, body)
                if answer is None:  # the responder answered on the connection itself: nothing more to send
                    self.close_connection = True
                    return
                if isinstance(answer, EventStream):
                    return self._stream(answer)
                self._send(*answer)

            def _stream(self, answer: EventStream) -> None:
                # Written raw: the handler's own status line is HTTP/1.0, which has no chunks (a close ends its body).
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                 + (b"\r\n" if answer.unframed else b"Transfer-Encoding: chunked\r\n\r\n"))
                for event in answer.events:
                    data = f"data: {event}\n\n".encode()
                    self.wfile.write(data if answer.unframed else b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                if answer.hold is not None:
                    answer.hold.wait(60)  # bounds a failing test only
                if not answer.cut and not answer.unframed:
                    self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

        self._server = _QuietServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.base_url = self.url + "/v1"
        # serve_forever checks for shutdown() every poll_interval (0.5 s by default): each close would wait it
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def __enter__(self) -> ScriptedEndpoint:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def bodies(self, path: str) -> list[dict]:
        """The bodies POSTed to ``path``, in arrival order."""
        return [b for p, b in self.requests if p == path]


def chat_completion(text: str, model: str, finish_reason: str = "stop") -> dict:
    """An OpenAI ``chat.completion`` with one choice saying ``text``."""
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


def vllm_chat(text: str) -> Callable[[str, dict], tuple]:
    """A responder answering every chat request ``text`` as vLLM would, and judge-eval's backend probe (an empty
    ``POST /v1/judge``) as vLLM does: 404, the route is not there."""
    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(text, body["model"])

    return respond

"""A chat endpoint that sends its answer a few bytes at a time: each read finishes within any read timeout, the whole
answer does not. The network boundary of the tests that a client's ``timeout_s`` bounds a whole answer."""

from __future__ import annotations

import json
import socket
import threading

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion


def trickling_endpoint(text: str, done: threading.Event) -> ScriptedEndpoint:
    """A vLLM-like responder whose chat answers are ``text`` preceded by JSON whitespace sent one byte every 50 ms
    until ``done`` (or 200 bytes, the bound of a failing test): no read ever waits past a 0.5 s read timeout. Its
    ``/v1/judge`` answers 404, as vLLM's does."""
    def respond(path: str, body: dict) -> tuple | None:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        connection = server.local.connection
        payload = json.dumps(chat_completion(text, body["model"])).encode()
        n_spaces = 200
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                           b"Connection: close\r\n\r\n" % (n_spaces + len(payload)))
        try:
            for _ in range(n_spaces):
                if done.wait(0.05):  # paces the trickle; the test sets it once the client has returned
                    break
                connection.sendall(b" ")
            else:
                connection.sendall(payload)
            connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the client gave up and closed the connection: what a whole-answer bound does
        return None  # answered on the connection: the handler sends nothing of its own

    server = ScriptedEndpoint(respond)
    return server

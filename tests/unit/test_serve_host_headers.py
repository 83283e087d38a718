"""Without an API key judge-serve answers only requests whose one ``Host`` names this machine
(serve.connections.HostAllowListMiddleware), driven here as the ASGI app it is: a request with two ``Host`` headers is
a 400 naming ``host`` whichever comes first (RFC 9112 section 3.2), and every refusal closes the connection."""

from __future__ import annotations

import asyncio
import json

import pytest

from serve.connections import HostAllowListMiddleware


async def _app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"x-served", b"1")]})
    await send({"type": "http.response.body", "body": b"{}"})


def _middleware() -> HostAllowListMiddleware:
    return HostAllowListMiddleware(_app, ["localhost", "127.0.0.1"])


def _answer(headers: list[tuple[bytes, bytes]], middleware: HostAllowListMiddleware | None = None
            ) -> tuple[int, dict[bytes, bytes], dict | None]:
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "GET", "path": "/v1/models", "raw_path": b"/v1/models", "query_string": b"",
             "headers": headers, "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 8000)}
    asyncio.run((middleware or _middleware())(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    served = b"x-served" in dict(start["headers"])
    return start["status"], dict(start["headers"]), (None if served else json.loads(body))


@pytest.mark.parametrize("hosts", [[b"attacker.example", b"localhost:8000"], [b"localhost:8000", b"attacker.example"],
                                   [b"localhost:8000", b"localhost:8000"]])
def test_two_host_headers_are_refused_whichever_comes_first(hosts):
    status, headers, body = _answer([(b"host", host) for host in hosts])
    assert status == 400 and headers[b"connection"] == b"close"
    assert body["error"] == {"message": "host: the request sends 2 Host headers; one is allowed",
                             "type": "invalid_request_error", "param": "host", "code": "host_not_allowed"}


def test_one_allowed_host_is_served_and_a_foreign_one_refused_and_closed():
    assert _answer([(b"host", b"localhost:8000")])[:1] == (200,)
    status, headers, body = _answer([(b"host", b"attacker.example:8000")])
    assert (status, headers[b"connection"], body["error"]["param"]) == (400, b"close", "host")


def test_a_refused_host_is_logged_once_and_the_distinct_hosts_logged_are_bounded(caplog):
    """A cluster client reaching judge-serve by a name it does not know (a Slurm node's address) saw only its own
    400s; judge-serve's log now names the host, once per host, for at most MAX_LOGGED_REFUSALS hosts."""
    middleware = _middleware()
    with caplog.at_level("WARNING", logger="judge_serve"):
        for _ in range(3):
            assert _answer([(b"host", b"192.0.2.2:40291")], middleware)[0] == 400
        for n in range(HostAllowListMiddleware.MAX_LOGGED_REFUSALS + 5):
            assert _answer([(b"host", f"h{n}.example".encode())], middleware)[0] == 400
    said = [r.getMessage() for r in caplog.records if r.name == "judge_serve"]
    assert sum("'192.0.2.2'" in line for line in said) == 1
    assert said[0].startswith("refused a request for Host '192.0.2.2': not one of this machine's names, nor in "
                              "allowed_hosts (add it with --allowed-hosts, or set an api_key)")
    assert len(said) == HostAllowListMiddleware.MAX_LOGGED_REFUSALS


def _origin_answer(host: bytes, origin: bytes) -> tuple[int, dict | None]:
    status, _, body = _answer([(b"host", host), (b"origin", origin)])
    return status, body


@pytest.mark.parametrize(("host", "origin"), [
    (b"localhost:8000", b"http://localhost:8000"),
    (b"localhost:08000", b"http://localhost:8000"),  # the same port, written otherwise
    (b"localhost", b"https://localhost"),  # a reverse proxy on 443 that sets Host to the name alone
    (b"localhost", b"http://localhost"),
])
def test_an_origin_on_the_port_the_request_was_sent_to_is_served(host, origin):
    assert _origin_answer(host, origin)[0] == 200


@pytest.mark.parametrize(("host", "origin"), [
    (b"localhost:8000", b"http://localhost:3000"),
    (b"localhost", b"http://localhost:8080"),
    (b"localhost:8000", b"http://localhost"),
])
def test_an_origin_on_another_port_is_another_site(host, origin):
    status, body = _origin_answer(host, origin)
    assert (status, body["error"]["param"]) == (400, "origin")
    assert "is another port than the one the request was sent to" in body["error"]["message"]


def test_a_long_refused_host_or_origin_is_echoed_clipped():
    """A refused Host was echoed whole (up to the 64 KiB the headers may hold), unlike every other text of the
    client's an error echoes: its first 200 characters, as the log line and a refused Origin's, and its length."""
    long_name = b"h" * 60_000
    status, _, body = _answer([(b"host", long_name)])
    assert status == 400 and body["error"]["param"] == "host"
    assert len(body["error"]["message"]) < 400 and "60000 characters" in body["error"]["message"]
    status, _, body = _answer([(b"host", b"localhost:8000"), (b"origin", b"http://" + long_name)])
    assert status == 400 and body["error"]["param"] == "origin" and len(body["error"]["message"]) < 400


@pytest.mark.parametrize("host", [b"localhost:\xb2", b"localhost:\xb9\xb2", b"localhost:1" + b"0" * 5000],
                         ids=["superscript-two", "superscripts", "5001-digits"])
def test_a_host_whose_port_is_no_port_number_is_answered_not_a_traceback(host):
    """A port of Latin-1 digits (``'²'.isdigit()`` is true, ``int('²')`` fails) or of more digits than Python
    converts raised ValueError in the middleware: a 500 and a traceback in the log for every such request. Such a
    port is no port an ``Origin`` can name: a request without one is served, one with one refused naming it."""
    assert _answer([(b"host", host)])[0] == 200
    status, body = _origin_answer(host, b"http://localhost")
    assert (status, body["error"]["param"]) == (400, "origin")
    assert len(body["error"]["message"]) < 600

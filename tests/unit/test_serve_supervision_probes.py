"""judge-serve's probes of its engines (``serve.supervision.probe``, ``_watch``) against a stand-in engine on
127.0.0.1: a probe is never queued behind proxied generations, and a started engine that hangs is noticed."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import serve.engine_client as engine_client
from serve.config import ServeConfig
from serve.engine_client import engine_session
from serve.supervision import ServerState, _watch, probe


class HoldingEngine:
    """An engine whose ``/v1/completions`` (and ``/hold``) wait until ``release`` is set (a long generation),
    ``arrived`` set when one came in; ``/health`` answers 200 at once unless ``hang`` is set, then it waits for
    ``release`` too (an engine alive but not answering). ``answered_three`` is set once three probes were answered."""

    def __init__(self):
        self.arrived, self.release, self.hang = threading.Event(), threading.Event(), threading.Event()
        self.health_probes = 0
        self.answered_three = threading.Event()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/health":
                    engine.health_probes += 1
                    if engine.hang.is_set():
                        engine.release.wait(60)
                    self._answer(b"")
                    if engine.health_probes >= 3 and not engine.hang.is_set():
                        engine.answered_three.set()
                    return None
                engine.arrived.set()
                engine.release.wait(60)
                self._answer(b"{}")

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                engine.arrived.set()
                engine.release.wait(60)
                self._answer(b'{"choices": []}')

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def test_a_probe_is_not_queued_behind_generations_that_hold_every_pooled_connection():
    """Proxied generations hold every connection of the pooled session (its limit is 1 here): a /health probe of
    the healthy engine still answers True at once. (Before: the probe waited for a pooled connection, timed out,
    and two such misses declared the healthy engine dead: every call in flight a 503.)"""

    async def go(engine: HoldingEngine) -> bool | None:
        async with engine_session(30.0, max_connections=1) as http:
            generation = asyncio.ensure_future(http.request("POST", engine.url + "/v1/completions", json={"p": 1}))
            await asyncio.to_thread(engine.arrived.wait, 30)  # the generation holds the pool's only connection
            try:
                return await probe(http, engine.url, timeout_s=2.0)
            finally:
                engine.release.set()
                (await generation).release()

    with HoldingEngine() as engine:
        assert asyncio.run(go(engine)) is True


def test_a_probe_that_waited_out_its_time_for_a_connection_of_its_own_is_no_news(monkeypatch):
    """Every connection of the probe session is busy (its limit is 1 here, held by a read of the engine's model
    list): the probe's time runs out while it waits for one. That is judge-serve's own congestion, not a miss of
    the engine: None (counted neither way), not False."""
    monkeypatch.setattr(engine_client, "PROBE_CONNECTIONS", 1)

    async def go(engine: HoldingEngine) -> bool | None:
        async with engine_session(30.0, max_connections=4) as http:
            listing = asyncio.ensure_future(http.probe_request("GET", engine.url + "/v1/models"))
            await asyncio.to_thread(engine.arrived.wait, 30)
            try:
                return await probe(http, engine.url, timeout_s=0.2)
            finally:
                engine.release.set()
                (await listing).release()

    with HoldingEngine() as engine:
        assert asyncio.run(go(engine)) is None
        assert engine.health_probes == 0  # it never reached the engine


class HungEngine:
    """An engine judge-serve started whose process never exits, its ``/health`` the stand-in's."""

    owned = True
    spec = "generator-spec"
    log_path = None

    def __init__(self, url: str):
        self.url = url
        self.stopped = threading.Event()

    def exit_code(self) -> None:
        return None  # alive: _watch's exit check never fires for it

    def stop(self) -> None:
        self.stopped.set()

    def log_tail(self, lines: int) -> str:
        return ""


def test_a_started_engine_that_stops_answering_is_stopped_and_restarted_as_a_death():
    """A ready judge-serve's own engine answers /health, then hangs (alive, every probe unanswered): after
    ``engine_hang_probes`` failed probes it counts as dead (calls to it get 503 at once), its tree is stopped and
    its restart begins, the reason naming the hang. While it answered, no probe counted against it. (Before: only
    its exit was watched, and a hung engine was served for ever, every call waiting out request_timeout_s.)"""
    config = ServeConfig(model="/ckpt", engine_probe_interval_s=0.05, engine_hang_probes=2,
                         engine_restart_backoff_s=600.0)  # the heal waits in its backoff: nothing restarts

    async def go(stand_in: HoldingEngine, engine: HungEngine) -> ServerState:
        state = ServerState(config=config, layout=None, status="ready", engines={"generator": engine},
                            dead={"generator": asyncio.Event()})
        async with engine_session(30.0, max_connections=4) as http:
            state.http = http
            watcher = asyncio.ensure_future(_watch(state, interval_s=0.01))
            try:
                assert await asyncio.to_thread(stand_in.answered_three.wait, 10), "three /health probes were not answered within 10 s"
                assert not state.dead["generator"].is_set()
                stand_in.hang.set()
                await asyncio.wait_for(state.dead["generator"].wait(), 10)
                await asyncio.to_thread(engine.stopped.wait, 10)
                return state
            finally:
                watcher.cancel()
                for task in state.tasks:
                    task.cancel()
                await asyncio.gather(watcher, *state.tasks, return_exceptions=True)

    with HoldingEngine() as stand_in:
        engine = HungEngine(stand_in.url)
        state = asyncio.run(go(stand_in, engine))
    assert engine.stopped.is_set()
    assert state.dead_reason["generator"].startswith("the generator engine stopped answering /health (2 probes")
    assert "restarting it" in state.dead_reason["generator"]

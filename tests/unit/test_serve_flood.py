"""judge-serve stays up under a flood of connections that never finish their headers.

judge-serve runs for real (``python -m serve.cli``, under ``judge.plumbing.processes``) with its descriptor limit lowered
(``RLIMIT_NOFILE`` 200, soft and hard) in front of an attached engine given by ``--generator-url``: a scripted
engine on 127.0.0.1 (the network boundary). Before the fix the flood used up judge-serve's descriptors, its own
``/health`` probe of the engine failed with EMFILE, the engine was declared dead for good and every later request
got 503 although the engine answered 200.

One judge-serve serves both tests (``flood_server``, a module fixture; the conftest keeps its tests on one xdist
worker): a judge-serve start (~10 CPU-s here) was the largest cost of each test. The flood test leaves the engine
healthy and judge-serve answering; the come-back tests turn the engine's health off and on again, and end it on (the
last one serving another model, which the others do not depend on: the scripted engine answers any name).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from judge.plumbing.processes import free_port, start_process
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

KEY = "flood-test-key"
DESCRIPTORS = 200  # judge-serve's RLIMIT_NOFILE, soft and hard; it holds a few dozen itself before the flood
#: judge-serve's attached_probe_interval_s: the come-back tests wait out five probes and the flood test floods until
#: one fails, so it is the watcher's own tick (serve/supervision.py ``_watch``), the shortest interval it can keep.
PROBE_INTERVAL_S = 0.5


class EngineHealth:
    """The scripted engine's ``/health``: 200 while ``up``, else 500; every answer is counted, so a test can wait
    until judge-serve has acted on a probe instead of polling judge-serve and hoping."""

    def __init__(self) -> None:
        self.up = True
        self.serves = {"id": "attached", "object": "model", "max_model_len": 2048}  # its /v1/models entry
        self.bodies: list[dict] = []  # every POST body the engine was sent
        self._answers: list[int] = []
        self._changed = threading.Condition()

    def answer(self) -> tuple[int, dict]:
        with self._changed:
            status = 200 if self.up else 500
            self._answers.append(status)
            self._changed.notify_all()
        return (status, {}) if status == 200 else (status, {"detail": "down"})

    def switch(self, up: bool) -> int:
        """Turn the engine up or down; returns the mark to wait from (the number of answers so far)."""
        with self._changed:
            self.up = up
            return len(self._answers)

    def wait_probes(self, since: int, status: int, n: int, timeout_s: float = 30.0) -> None:
        """Until ``n`` probes since ``since`` were answered ``status``."""
        with self._changed:
            done = self._changed.wait_for(lambda: self._answers[since:].count(status) >= n, timeout=timeout_s)
        assert done, (f"within {timeout_s:g} s judge-serve sent {self._answers[since:].count(status)} of the {n} "
                      f"probes awaited answered {status}")


def _engine(health: EngineHealth) -> ScriptedEndpoint:
    """An attached vLLM 0.32 engine: /version and /v1/models answer, /health as ``health`` says; every POST is a
    chat completion."""

    def respond_get(path: str) -> tuple[int, dict]:
        if path == "/version":
            return 200, {"version": "0.32.0"}
        if path == "/health":
            return health.answer()
        if path == "/v1/models":
            return 200, {"object": "list", "data": [dict(health.serves)]}
        return 404, {"detail": "Not Found"}

    def respond(path: str, body: dict) -> tuple[int, dict]:
        health.bodies.append(body)
        return 200, chat_completion("ok", health.serves["id"])

    return ScriptedEndpoint(respond, respond_get=respond_get)


@contextlib.contextmanager
def _judge_serve(model_dir: Path, engine_url: str):
    port = free_port()
    run_dir = Path(tempfile.mkdtemp(prefix="judge-serve-flood-"))
    argv = ["serve.cli", "--model", str(model_dir), "--port", str(port), "--generator-url", engine_url,
            "--api-key", KEY, "--header-timeout-s", "2", "--attached-probe-interval-s", str(PROBE_INTERVAL_S),
            "--log-dir", str(run_dir)]  # fmt: skip
    # The limit is set inside judge-serve's own process, before anything else runs; raising the soft limit to the
    # hard one (what judge-serve does at start) then changes nothing.
    boot = (
        "import resource, runpy, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({DESCRIPTORS}, {DESCRIPTORS})); "
        f"sys.argv = {argv!r}; runpy.run_module('serve.cli', run_name='__main__')"
    )
    log_path = run_dir / "judge-serve.log"
    process = start_process([sys.executable, "-c", boot], log_path=log_path, cwd=Path(__file__).parents[2],
                            name="judge-serve", grace_s=30.0)  # fmt: skip
    root = f"http://127.0.0.1:{port}"
    try:
        # Under the suite's per-test timeout (60 s in `make test-fast`): a judge-serve that does not come up fails
        # here, the error naming the command and carrying its log's tail.
        process.wait_ready(root + "/ready", timeout_s=45)
        yield root, log_path, process
    finally:
        process.stop(30.0)


@pytest.fixture(scope="module")
def flood_server(tiny_causal_dir):
    """(root URL, log path, the engine's :class:`EngineHealth`, judge-serve's :class:`ManagedProcess`) of one
    judge-serve in front of a scripted engine."""
    health = EngineHealth()
    with _engine(health) as engine, _judge_serve(tiny_causal_dir, engine.url) as (root, log_path, process):
        yield root, log_path, health, process


def _flood_until(port: int, done, timeout_s: float = 45.0) -> int:
    """Keep several hundred connections open to ``port`` that send one header line and never finish, replacing
    those the server closes, until ``done()``; returns how many were opened."""
    opened: list[socket.socket] = []
    count = 0
    deadline = time.monotonic() + timeout_s
    try:
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"{timeout_s:g} s of flooding ({count} connections opened) and judge-serve's "
                                     "log says no failed probe of its engine")
            for _ in range(50):
                s = socket.socket()
                s.settimeout(1.0)
                with contextlib.suppress(OSError):
                    s.connect(("127.0.0.1", port))
                    s.sendall(b"POST /v1/judge HTTP/1.1\r\n")
                opened.append(s)
                count += 1
            while len(opened) > 3 * DESCRIPTORS:
                opened.pop(0).close()
            time.sleep(0.05)  # the flood's pace, part of the workload: its end is done(), looked at each round
    finally:
        for s in opened:
            s.close()
    return count


def test_a_flood_of_half_open_connections_does_not_mark_the_attached_engine_dead(flood_server):
    """Flooded past its descriptor limit until its probe of the engine fails, judge-serve counts that as its own
    trouble, not the engine's: once the flood stops, /health is 200 and a chat completion is answered by the
    engine, with no 503 in between; and a connection that never finishes its headers is closed by judge-serve
    within ``header_timeout_s``."""
    root, log_path, health, process = flood_server
    assert health.up
    port = int(root.rsplit(":", 1)[1])
    # Only what judge-serve logs from here on counts: the come-back test, if it ran first, stopped the engine on
    # purpose and judge-serve logged it.
    logged_before = len(log_path.read_text(errors="replace"))

    def log_since() -> str:
        return log_path.read_text(errors="replace")[logged_before:]

    def probed() -> bool:
        text = log_since()
        return "could not probe the attached generator engine" in text or "stopped answering /health" in text

    # The probe can fail for want of a descriptor only once the flood holds every one judge-serve had free (the
    # flood opens 50 at a time; the next probe may come at any batch after that, so no more is asserted).
    free = DESCRIPTORS - len(list(Path(f"/proc/{process.main_pid()}/fd").iterdir()))
    opened = _flood_until(port, probed)
    assert opened >= free > 0
    assert "stopped answering /health" not in log_since()

    # The flood is over. A new connection waits in the listening socket's backlog until judge-serve, its
    # descriptors back once it has closed the flood's connections, accepts it: the first request after the flood,
    # given the time, is answered 200. Asked again only when the connection was closed without an answer: under
    # load, a connection accepted while the event loop is still closing the flood's hundreds can pass its header
    # deadline (2 s here) before its request line is read; a closed connection carries no status, so no retry can
    # hide a 503.
    for attempt in range(5):
        try:
            first = httpx.get(root + "/health", timeout=30)
            break
        except httpx.RemoteProtocolError:
            if attempt == 4:
                raise
    assert first.status_code == 200, f"{first.status_code} {first.text}\n{log_since()[-4000:]}"
    answer = httpx.post(root + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                        json={"model": "attached", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "ok"
    assert "stopped answering /health" not in log_since()

    # The header deadline: a connection that sends half a request line is closed by the server (EOF).
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        assert s.recv(1) == b""


def test_an_attached_engine_that_comes_back_is_served_again(flood_server):
    """An attached engine that stops answering is marked dead (503 naming no URL), keeps being probed, and is
    served again by itself once it answers /health: judge-serve needs no restart.

    The order is the engine's to see, not a wait: judge-serve probes one at a time and marks the engine dead after two
    failed probes (serve/supervision.py ``_watch``), so a third failed probe reaching the engine means the first
    two were acted on. Taking it back reads its /version and /v1/models after the probe answered 200, while the next
    probe may already be on its way, so the test waits for what judge-serve says: /ready 200 (judge-serve's own
    ``ManagedProcess.wait_ready``, bounded, which also fails at once if judge-serve exited meanwhile)."""
    root, _, health, process = flood_server
    auth = {"Authorization": f"Bearer {KEY}"}
    body = {"model": "attached", "messages": [{"role": "user", "content": "hi"}]}
    since = health.switch(up=False)
    try:
        health.wait_probes(since, 500, 3)
        refused = httpx.post(root + "/v1/chat/completions", headers=auth, json=body, timeout=30)
        assert refused.status_code == 503, refused.text
        assert "127.0.0.1" not in refused.text  # no engine URL in what a client sees
    finally:
        since = health.switch(up=True)
    health.wait_probes(since, 200, 1)
    process.wait_ready(root + "/ready", timeout_s=30, interval_s=0.1)
    answer = httpx.post(root + "/v1/chat/completions", headers=auth, json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "ok"


def test_an_attached_engine_restarted_with_another_model_is_followed(flood_server, tiny_causal_dir):
    """An attached engine that comes back serving another model with another window (restarted by its operator
    while it was down) is read again when it is taken back: judge-serve's own name reaches it under the new name,
    the max_tokens judge-serve adds stays within the new window, and /v1/judge answers to the new name, no longer the
    old one: the name and window read at start are not kept (vLLM would answer 404 to every call). The engine's
    listing changes while it is down, so the probe that takes it back is the first to see the new one."""
    from serve.config import ServeConfig

    root, _, health, process = flood_server
    auth = {"Authorization": f"Bearer {KEY}"}
    own = ServeConfig(model=str(tiny_causal_dir)).model_name
    since = health.switch(up=False)
    try:
        health.wait_probes(since, 500, 3)
        health.serves = {"id": "restarted", "object": "model", "max_model_len": 1024}
    finally:
        since = health.switch(up=True)
    health.wait_probes(since, 200, 1)
    process.wait_ready(root + "/ready", timeout_s=30, interval_s=0.1)
    sent = len(health.bodies)
    answer = httpx.post(root + "/v1/chat/completions", headers=auth, timeout=30,
                        json={"model": own, "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 200, answer.text
    assert health.bodies[sent:] == [{"model": "restarted", "messages": [{"role": "user", "content": "hi"}],
                                     "max_tokens": 1024}]
    old = httpx.post(root + "/v1/judge", headers=auth, timeout=30, json={"model": "attached", "items": [
        {"instruction": "2+2?", "answer": "4", "criteria": [{"name": "Корректность", "rubrics": "0: нет\n1: да"}]}]})
    assert old.status_code == 404, old.text
    assert old.json()["error"]["message"] == (
        f"model: the model `attached` does not exist; this server serves `restarted` or `{own}`")

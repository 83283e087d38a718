"""`judge-eval run --judge CHECKPOINT_DIR` says what it waits for while the judge server it started comes up.

A CPU start of judge-serve takes minutes. After its ``starting ...`` line the run says once that it waits (up to
``server_timeout_s``, naming server.log), then every ``WAIT_REPORT_S`` the time waited with the log's last line (and,
for judge-serve, what its /ready route says while it is not ready), and the time it took. The server is a stand-in
that answers only at its Nth poll, through ``ManagedProcess.wait_ready``'s own loop; a fake clock that each pause moves
on orders the events (no real pause).
"""

from __future__ import annotations

import contextlib
import json
import logging
import types
from dataclasses import dataclass, field

from eval.judging import local_server as local_server_module
from eval.judging.config import RunConfig
from judge.plumbing import processes as processes_module
from judge.plumbing.processes import ManagedProcess


@dataclass
class FakeClock:
    now: float = 0.0
    pauses: list = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


class StartingServer(ManagedProcess):
    """A server that runs (never exits) and owns its port; ``stop`` only records that it was called."""

    stopped = False

    def exit_code(self):
        return None

    def holds_listener(self, port):
        return True

    def stop(self, grace_s=None):
        self.stopped = True
        return 0


def _checkpoint(tmp_path):
    export = tmp_path / "runs" / "tiny-judge" / "export"
    export.mkdir(parents=True)
    (export / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
    (export.parent / "run.json").write_text("{}")  # a judge-train export: served as its run's name
    return export


def test_a_slow_server_start_is_said_once_then_every_30_s_with_its_logs_last_line(tmp_path, monkeypatch, caplog):
    out = tmp_path / "run"
    out.mkdir()
    log_path = out / "server.log"
    clock = FakeClock()
    polls = []
    ready_at = 75  # the 75th poll answers 200: 74 one-second pauses before it

    def status(url, timeout_s=5.0):
        polls.append(clock.now)
        with open(log_path, "a", encoding="utf-8") as log:  # what the server wrote by this poll
            log.write(f"INFO engine warming up, poll {len(polls)}\n")
        return 200 if len(polls) == ready_at else 503

    server = StartingServer(proc=None, command=["judge-serve"], log_path=log_path, name="the judge server", grace_s=1)

    def start_process(cmd, **kwargs):
        assert kwargs["log_path"] == log_path
        return server

    fake_time = types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep)
    monkeypatch.setattr(processes_module, "time", fake_time)
    monkeypatch.setattr(local_server_module, "time", fake_time, raising=False)
    monkeypatch.setattr(processes_module, "http_status", status)
    monkeypatch.setattr(processes_module, "start_process", start_process)
    monkeypatch.setattr(local_server_module, "_judge_serve_command", lambda: ["judge-serve"])
    export = _checkpoint(tmp_path)
    config = RunConfig(judge=str(export), out=str(out), server_timeout_s=900.0)

    caplog.set_level(logging.INFO, logger="judge_eval.local_server")
    with local_server_module.local_server(export, config, out) as (url, name):
        assert url.startswith("http://127.0.0.1:") and name == "tiny-judge"
    assert server.stopped
    assert len(polls) == ready_at and clock.pauses == [1.0] * (ready_at - 1)
    said = [r.getMessage() for r in caplog.records if r.name == "judge_eval.local_server"]
    assert said[0].startswith("starting judge-serve --model ")
    assert said[1:] == [
        f"waiting for the judge server to answer (up to 900 s, server_timeout_s); its log: {log_path}",
        "still waiting for the judge server: 30 s of up to 900 s; its log's last line: INFO engine warming up, poll 31",
        "still waiting for the judge server: 60 s of up to 900 s; its log's last line: INFO engine warming up, poll 61",
        "the judge server answered after 74 s",
    ]


@contextlib.contextmanager
def _said(lines: list[str]):
    """The local server's log lines, at INFO, appended to ``lines`` while the block runs."""
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("judge_eval.local_server")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def test_one_long_pause_is_one_line_and_an_empty_log_is_not_quoted(tmp_path):
    clock = FakeClock()
    lines = []
    (tmp_path / "server.log").write_text("")  # start_process creates it; nothing written yet
    server = StartingServer(proc=None, command=["judge-serve"], log_path=tmp_path / "server.log", name="s", grace_s=1)
    waiting = local_server_module.StartWait(server, 900.0, tmp_path / "server.log", clock=clock.monotonic)
    with _said(lines):
        clock.now = 29.0
        waiting.poll()  # not yet
        clock.now = 95.0
        waiting.poll()  # three periods passed during one poll: one line
        clock.now = 119.0
        waiting.poll()  # the next is due at 120
        clock.now = 120.0
        waiting.poll()
    assert lines == ["still waiting for the judge server: 95 s of up to 900 s",
                     "still waiting for the judge server: 120 s of up to 900 s"]


def test_the_log_path_is_said_as_a_terminal_shows_it(tmp_path):
    """An ESC sequence or a line break in --out would act on the terminal or forge a line of its own in the "waiting"
    line: the log's path is written as the other lines write the log's words (``visible``), whole."""
    from pathlib import Path

    lines = []
    log_path = Path("runs/x\x1b[31mRED\n[error] forged/server.log")
    with _said(lines):
        local_server_module.StartWait(None, 900.0, log_path, clock=FakeClock().monotonic).begin()
    assert lines == ["waiting for the judge server to answer (up to 900 s, server_timeout_s); its log: "
                     "runs/x\\x1b[31mRED\\n[error] forged/server.log"]


#: uvicorn's line once judge-serve's HTTP app is up, as judge-serve's log has it (its engines may still be loading).
UP = "2026-12-07 08:01:36,125 INFO uvicorn.error: Application startup complete."


def test_a_judge_serve_whose_app_is_up_but_not_ready_says_why_in_the_wait_line(tmp_path, monkeypatch, caplog):
    """judge-serve's HTTP app answers before its engines have loaded: its log's last line is uvicorn's "Application
    startup complete.", which alone reads as if the server were up. The wait line says what its /ready route
    answers (status and detail) before that log line; where /ready gave no answer yet (nothing listens), nothing is
    added. The server is a scripted HTTP endpoint on the port judge-eval picked; a fake clock orders the polls."""
    from tests.support.scripted_endpoint import ScriptedEndpoint

    out = tmp_path / "run"
    out.mkdir()
    log_path = out / "server.log"
    log_path.write_text(f"{UP}\n", encoding="utf-8")
    clock = FakeClock()

    def ready(path):
        assert path == "/ready"
        if clock.now >= 64.0:  # ready from the 65th poll on
            return 200, {"status": "ready"}
        return 503, {"status": "starting", "detail": "the engines are still starting"}

    with ScriptedEndpoint(lambda path, body: (404, {}), respond_get=ready) as endpoint:
        server = StartingServer(proc=None, command=["judge-serve"], log_path=log_path, name="the judge server",
                                grace_s=1)
        fake_time = types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep)
        monkeypatch.setattr(processes_module, "time", fake_time)
        monkeypatch.setattr(local_server_module, "time", fake_time, raising=False)
        monkeypatch.setattr(processes_module, "free_port", lambda host="127.0.0.1": int(endpoint.url.rsplit(":", 1)[1]))
        monkeypatch.setattr(processes_module, "start_process", lambda cmd, **kwargs: server)
        monkeypatch.setattr(local_server_module, "_judge_serve_command", lambda: ["judge-serve"])
        export = _checkpoint(tmp_path)
        config = RunConfig(judge=str(export), out=str(out), server_timeout_s=900.0)
        caplog.set_level(logging.INFO, logger="judge_eval.local_server")
        with local_server_module.local_server(export, config, out):
            pass
    said = [r.getMessage() for r in caplog.records if r.name == "judge_eval.local_server"]
    assert said[2:] == [
        "still waiting for the judge server: 30 s of up to 900 s; judge-serve answers but is not ready (starting: "
        f"the engines are still starting); its log's last line: {UP}",
        "still waiting for the judge server: 60 s of up to 900 s; judge-serve answers but is not ready (starting: "
        f"the engines are still starting); its log's last line: {UP}",
        "the judge server answered after 64 s",
    ]
    assert endpoint.gets == ["/ready"] * (65 + 2)  # a poll each second, and one question per wait line


def test_the_wait_line_asks_ready_only_when_it_is_due_and_adds_nothing_where_nothing_answers(tmp_path, monkeypatch):
    """The question to /ready is asked once per wait line, not at each poll, with a timeout of ``READY_ASK_S``;
    nothing listening (the app not up yet) adds nothing to the line."""
    asked = []

    def urlopen(url, timeout):
        asked.append((url, timeout))
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(local_server_module.urllib.request, "urlopen", urlopen)
    clock = FakeClock()
    lines = []
    (tmp_path / "server.log").write_text("")
    server = StartingServer(proc=None, command=["judge-serve"], log_path=tmp_path / "server.log", name="s", grace_s=1)
    waiting = local_server_module.StartWait(server, 900.0, tmp_path / "server.log", clock=clock.monotonic,
                                            ready_url="http://127.0.0.1:9/ready")
    with _said(lines):
        for now in (1.0, 2.0, 30.0, 31.0):
            clock.now = now
            waiting.poll()
    assert asked == [("http://127.0.0.1:9/ready", local_server_module.READY_ASK_S)]
    assert local_server_module.READY_ASK_S <= 1.0
    assert lines == ["still waiting for the judge server: 30 s of up to 900 s"]


def test_something_else_on_the_port_adds_nothing_to_the_wait_line_and_stops_nothing(tmp_path):
    """A port answered by something that is no HTTP server (an SSH banner: ``http.client.BadStatusLine``) or an answer
    cut short is a server not ready yet: the wait line goes on without a reason, and the run is not stopped."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def banner():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH\r\n")

    thread = threading.Thread(target=banner, daemon=True)
    thread.start()
    clock = FakeClock()
    lines = []
    (tmp_path / "server.log").write_text("")
    server = StartingServer(proc=None, command=["judge-serve"], log_path=tmp_path / "server.log", name="s", grace_s=1)
    waiting = local_server_module.StartWait(server, 900.0, tmp_path / "server.log", clock=clock.monotonic,
                                            ready_url=f"http://127.0.0.1:{port}/ready")
    try:
        with _said(lines):
            clock.now = 30.0
            waiting.poll()
    finally:
        thread.join(5)
        listener.close()
    assert lines == ["still waiting for the judge server: 30 s of up to 900 s"]

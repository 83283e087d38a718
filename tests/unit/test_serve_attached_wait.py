"""judge-serve's waits on its engines are said with their bounds.

judge-serve attached to an engine (``--generator-url``/``--pooling-url``) that does not answer: it waits up to
``--engine-start-timeout-s`` (the engine may still be loading, started beside it), but says at once what it waits
for and why, and its refusal names the bound: a URL with a wrong port never leaves it silent for the whole wait
(900 s by default) with /ready answering "the engines are still starting". Stopping an engine of its own names how
long it may take (``engine_stop_grace_s``)."""

from __future__ import annotations

import logging
import socket

import pytest

from serve.launch import Engine, EngineSpec, EngineStartError


@pytest.fixture
def refusing_port():
    """A port bound and never listened on: every connection to it is refused, and no other process can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_an_attached_engine_that_does_not_answer_is_said_at_once_and_refused_naming_the_bound(refusing_port,
                                                                                              tmp_path, caplog):
    url = f"http://127.0.0.1:{refusing_port}"
    engine = Engine(spec=EngineSpec("generator", tmp_path, "judge", 0.9, url=url + "/v1"), url=url)
    with caplog.at_level(logging.INFO, logger="judge_serve.launch"), pytest.raises(EngineStartError) as raised:
        engine.wait_ready(0.0)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", f"waiting for the attached generator engine at {url} to answer /health (up to 0 s: "
                 "--engine-start-timeout-s): nothing answers there (is it running, at that host and port?)")]
    assert str(raised.value) == (f"the attached generator engine at {url} does not answer /health within 0 s "
                                 "(--engine-start-timeout-s): nothing answers there")
    assert raised.value.role == "generator"


@pytest.fixture
def port_answering_no_http():
    """A port whose server writes a line that is no HTTP (an SSH server's banner, on a mistyped port) to each
    connection, then closes it."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the test is over
                return
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_8.9\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def test_an_attached_url_that_answers_no_http_is_waited_on_as_one_that_does_not_answer(port_answering_no_http,
                                                                                         tmp_path, monkeypatch):
    """A --generator-url whose port answers, but not in HTTP: urllib's BadStatusLine escaped the /health wait, and
    judge-serve's start failed with the bare status line ("SSH-2.0-OpenSSH_8.9") instead of naming the engine and the
    bound; the /version check's thread died of it with a traceback on stderr, its refusal never made. Both are the
    wait's values: no HTTP answer, within the bound."""
    import threading

    from serve.engine_version import engine_version_at, watch_attached_versions

    url = f"http://127.0.0.1:{port_answering_no_http}"
    engine = Engine(spec=EngineSpec("generator", tmp_path, "judge", 0.9, url=url + "/v1"), url=url)
    with pytest.raises(EngineStartError) as raised:
        engine.wait_ready(0.0)
    assert str(raised.value) == (f"the attached generator engine at {url} does not answer /health within 0 s "
                                 "(--engine-start-timeout-s): nothing answers there")
    with pytest.raises(OSError, match="SSH-2.0-OpenSSH_8.9"):
        engine_version_at(url)
    uncaught, refused = [], []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    asked = []

    def stop() -> bool:  # asked before each try: three tries, then stopped
        asked.append(1)
        return len(asked) > 3

    watch_attached_versions({"generator": url}, 3600, refused.append, stop=stop, poll_s=0).join(60)
    assert (uncaught, refused, len(asked)) == ([], [], 4)  # no answer yet at each try: never a refusal, nor a crash


def test_stopping_an_engine_says_how_long_it_may_take(tmp_path, caplog):
    """A Ctrl+C while an engine loads: vLLM may not heed SIGINT until its load is done, and judge-serve then waited
    out engine_stop_grace_s (30 s) after "stopping generator engine" with nothing said of the wait. The line now
    names the bound."""
    import sys
    import time

    from judge.plumbing.processes import start_process

    # An engine that runs until it is stopped (its stdin is /dev/null: a read of it returns at once, and an engine
    # that had exited by itself before stop() would be stopped without a word). Stopped once it says it runs.
    log_path = tmp_path / "engine.log"
    proc = start_process([sys.executable, "-c", "import signal; print('running', flush=True); signal.pause()"],
                         log_path=log_path, grace_s=7.5)
    try:
        bound_s = 60  # bounds a failing test only
        deadline = time.monotonic() + bound_s
        while "running" not in (said := log_path.read_text(encoding="utf-8")) and proc.alive():
            assert time.monotonic() < deadline, f"no 'running' from the engine within {bound_s} s; it wrote {said!r}"
            time.sleep(0.01)
        assert "running" in said, f"the engine exited ({proc.exit_code()}) before saying 'running'; it wrote {said!r}"
        assert proc.alive()
        engine = Engine(spec=EngineSpec("generator", tmp_path, "judge", 0.9), url="http://127.0.0.1:9", proc=proc)
        with caplog.at_level(logging.INFO, logger="judge_serve.launch"):
            engine.stop()
    finally:
        proc.stop()  # a no-op once engine.stop() has run; a failed wait leaves no engine behind
    assert not proc.alive()
    assert [r.getMessage() for r in caplog.records] == [
        f"stopping generator engine (process group {proc.pgid}; killed if still running after 7.5 s: "
        "engine_stop_grace_s)"]

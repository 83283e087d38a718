"""judge-serve attached to an engine (``--generator-url``/``--pooling-url``) that does not answer: it waits up to
``--engine-start-timeout-s`` (the engine may still be loading, started beside it), but says at once what it waits
for and why, and its refusal names the bound. Before, a URL with a wrong port left it silent for the whole wait
(900 s by default), /ready answering "the engines are still starting"."""

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

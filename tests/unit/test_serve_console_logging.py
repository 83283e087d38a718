"""judge-serve's console: one logging set-up (``judge.plumbing.console_logging``) for its own lines and uvicorn's,
on stderr, set up before the checkpoint is read; and the in-process mains leaving the test process's logging as they
found it. judge-serve runs in this process (``run_console_main``) with a stand-in for its app: no engine starts."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import types

import pytest

from judge.plumbing.console_logging import CHATTY_LOGGERS
from judge.plumbing.processes import free_port
from tests.support.first_contact import run_console_main
from tests.support.released_r_checkpoint import released_r


@pytest.fixture(autouse=True)
def uvicorn_loggers_put_back():
    """uvicorn's loggers (``serve.quiet_logs.UVICORN_LOGGERS``) as this module's test found them: judge-serve's main,
    run here up to uvicorn's start, sends them through the root's handler (no handler of their own, propagating, the
    parent at NOTSET) and puts judge-serve's filters on them (``quiet_client_floods``, ``quiet_health_polls``). Neither
    the conftest's ``logging_set_up_put_back`` nor ``run_console_main`` puts those back, and a later test on the worker
    that installs the filters itself and counts them would find one there already. Their handlers, filters,
    propagate flags and levels are put back; pytest adds none of its own to these loggers, so the lists taken at the
    set-up are the ones to put back."""
    from serve.quiet_logs import UVICORN_LOGGERS

    loggers = [logging.getLogger(name) for name in UVICORN_LOGGERS]
    found = [(logger.handlers[:], logger.filters[:], logger.propagate, logger.level) for logger in loggers]
    yield
    for logger, (handlers, filters, propagate, level) in zip(loggers, found):
        logger.handlers[:], logger.filters[:], logger.propagate = handlers, filters, propagate
        logger.setLevel(level)


def console_line(level: str, name: str) -> str:
    """The regex of a line's start in the shared set-up's format: ``2026-12-07 08:00:00,123 INFO name: ``."""
    return r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} " + f"{level} {re.escape(name)}: "


def _causal_folder(path):
    """A checkpoint folder every check before the engines passes: a causal config, weights and a tokenizer (empty)."""
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}), encoding="utf-8")
    for name in ("model.safetensors", "tokenizer.json"):
        (path / name).write_bytes(b"")
    (path / "chat_template.jinja").write_text("{{ messages }}", encoding="utf-8")
    return path


class _AsksItselfThenStops:
    """A stand-in for judge-serve's app (``serve.app.create_app``): once uvicorn has started it, it asks its own
    ``/health`` and ``/v1/models`` over TCP, each answered 200, then stops judge-serve as a fatal failure would
    (``state.serve.on_fatal``): uvicorn's server lines and its access lines of real requests, in order, no sleep."""

    def __init__(self, config, layout) -> None:
        self.port = config.port
        self.state = types.SimpleNamespace(serve=types.SimpleNamespace(status="ready", judge=None, on_fatal=None))

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.asking = asyncio.get_running_loop().create_task(self._ask_then_stop())
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def _ask_then_stop(self) -> None:
        for path in ("/health", "/v1/models"):
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            await reader.read()  # to the server's close: its access line is written by then
            writer.close()
        self.state.serve.on_fatal()


@pytest.mark.parametrize("flags", [[], ["--no-access-log"], ["--log-level", "warning"]])
def test_uvicorns_lines_go_through_the_shared_set_up_on_stderr(tmp_path, monkeypatch, flags):
    """uvicorn's own lines (its start, its shutdown) and its access log used uvicorn's default logging set-up: its
    own handlers and format (``INFO:     ...``, no time), the access log on stdout, where judge-serve's results
    (``--print-config``) go. They now go through the one set-up of every console script: stderr, its format, by
    logger name; the access lines at info (a health poll's only at debug), none with --no-access-log, no uvicorn
    line at all at --log-level warning. Nothing on stdout."""
    import serve.app
    import serve.cli

    monkeypatch.setattr(serve.cli, "check_installed_vllm", lambda: None)  # whichever vLLM this machine has
    monkeypatch.setattr(serve.app, "create_app", _AsksItselfThenStops)
    port = free_port()
    said = run_console_main("judge-serve", ["--model", str(_causal_folder(tmp_path / "ckpt")), "--port", str(port),
                                            "--log-dir", str(tmp_path / "logs"), *flags])
    assert said.code == 0, said.err
    assert said.out == ""
    server_line = re.compile(console_line("INFO", "uvicorn.error") + "Application startup complete")
    access = re.compile(console_line("INFO", "uvicorn.access")
                        + r'127\.0\.0\.1:\d+ - "GET (/\S*) HTTP/1\.1" 200$', re.M)
    assert "INFO:  " not in said.err  # uvicorn's own format
    if "warning" in flags:
        assert "uvicorn" not in said.err, said.err
        return
    assert server_line.search(said.err), said.err
    assert access.findall(said.err) == ([] if "--no-access-log" in flags else ["/v1/models"]), said.err


def test_what_a_released_judges_views_build_says_is_shown(tmp_path):
    """judge-serve set up its logging only after reading the checkpoint: serve.released's INFO lines about building
    (or reusing) a released -r judge's derived views were never shown (Python's last-resort handler shows warnings
    only). The set-up now comes first: the line is on stderr, in the shared format, at --log-level info."""
    root = released_r(tmp_path / "r")
    said = run_console_main("judge-serve", ["--model", str(root), "--derived-cache-dir", str(tmp_path / "views"),
                                            "--print-config"])
    assert said.code == 0, said.err
    assert json.loads(said.out)["judge_kind"] == "regression"
    building = console_line("INFO", "judge_serve.released") + "building the causal and classifier"
    assert re.search(building, said.err), said.err
    quiet = run_console_main("judge-serve", ["--model", str(root), "--derived-cache-dir", str(tmp_path / "views"),
                                             "--print-config", "--log-level", "warning"])
    assert quiet.code == 0 and "judge_serve.released" not in quiet.err, quiet.err


def test_a_main_called_in_process_leaves_the_logging_set_up_as_found(tmp_path, request):
    """judge-serve --print-config now sets up logging (the root logger's level, the HTTP loggers' levels) before it
    prints: a unit test calling the main itself would leave them set for every later test on its worker. The unit
    tests' conftest puts them back after each test (``logging_set_up_put_back``, through ``logging_left_as_found``,
    which ``run_console_main`` uses too). Its body is run here as pytest runs it, a generator set up before the main
    and finished after it, and the set-up must be as it found it."""
    import serve.cli
    from tests.unit.conftest import logging_set_up_put_back

    assert "logging_set_up_put_back" in request.fixturenames  # autouse: every unit test has it
    root = logging.getLogger()
    before = (root.handlers[:], root.level, [logging.getLogger(name).level for name in CHATTY_LOGGERS])
    put_back = logging_set_up_put_back.__wrapped__()  # the fixture's own function, not pytest's wrapper
    next(put_back)
    root.handlers = []  # as in a console start: configure_logging then adds its handler
    assert serve.cli.main(["--model", str(_causal_folder(tmp_path / "ckpt")), "--log-level", "debug",
                           "--print-config"]) == 0
    assert root.level == logging.DEBUG and len(root.handlers) == 1  # the main set logging up
    with pytest.raises(StopIteration):
        next(put_back)
    assert (root.handlers, root.level, [logging.getLogger(name).level for name in CHATTY_LOGGERS]) == before

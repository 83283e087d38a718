"""judge-serve's app in this process (Starlette's ``TestClient``, or a real uvicorn server on a thread when a client
must be able to leave mid-request): waiting for its start without polling."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def await_bring_up(http, timeout_s: float = 120.0) -> None:
    """Wait, on the app's own loop, for judge-serve's start (``serve.supervision._bring_up``, the first of the
    server's tasks) to end, ready or failed: no polling of /ready with sleeps."""
    bring_up = http.app.state.serve.tasks[0]

    async def ended() -> None:
        await asyncio.wait_for(asyncio.shield(bring_up), timeout_s)

    http.portal.call(ended)


@contextlib.contextmanager
def decode_turns_held(http) -> Iterator[None]:
    """Every turn to decode a large body (the app's ``ServerState.large_decodes``, ``serve.schema.read_off_loop``)
    taken on the app's own loop for the block, as by as many large bodies being decoded: a request's large body waits
    for one meanwhile. They are let go as the block ends (or after 30 s: that bound only ends a failing test)."""
    decodes = http.app.state.serve.large_decodes
    held, let_go = threading.Event(), []

    async def hold() -> None:
        turns = decodes._on_running_loop()
        for _ in range(decodes.at_once):
            await turns.acquire()
        let_go.append(asyncio.Event())
        held.set()
        try:
            await asyncio.wait_for(let_go[0].wait(), 30)
        except asyncio.TimeoutError:
            pass
        finally:
            for _ in range(decodes.at_once):
                turns.release()

    holding = http.portal.start_task_soon(hold)
    assert held.wait(30)
    try:
        yield
    finally:
        http.portal.call(let_go[0].set)
        holding.result(30)


def on_event_loop() -> bool:
    """Whether the caller runs on an event loop: what a stand-in records to tell a body read on judge-serve's loop
    from one read in a worker thread (``serve.schema.read_off_loop``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@contextlib.contextmanager
def served_over_tcp(app: Any, *, timeout_s: float = 120.0, **options: Any
                    ) -> Iterator[tuple[str, asyncio.AbstractEventLoop]]:
    """``app`` (``serve.app.create_app``) on a real uvicorn server on a thread of this process, its start
    (``serve.supervision._bring_up``, the first of its tasks) ended, ready or failed: awaited on the server's own loop,
    no polling. ``options``: more of ``uvicorn.Config``'s (``http``: judge-serve's own connection protocol,
    ``serve.connections.header_deadline_protocol``).

    Yields:
        (the root URL, the server's event loop).
    """
    import uvicorn

    from judge.plumbing.processes import free_port

    port = free_port()
    loops: list[asyncio.AbstractEventLoop] = []
    started = threading.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)  # the app's lifespan first: its start (bring-up) is a task by now
            loops.append(asyncio.get_running_loop())
            started.set()

    server = Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    try:
        assert started.wait(timeout_s), "uvicorn never started"
        bring_up = asyncio.wait_for(asyncio.shield(app.state.serve.tasks[0]), timeout_s)
        asyncio.run_coroutine_threadsafe(bring_up, loops[0]).result()
        yield f"http://127.0.0.1:{port}", loops[0]
    finally:
        server.should_exit = True
        thread.join(timeout_s)


def posted_scope(path: str, body: bytes, api_key: str) -> dict:
    """The ASGI scope of a JSON ``POST`` to ``path`` of ``body`` with ``api_key``, for a test that calls judge-serve's
    app itself (``app(scope, receive, send)``) to give its messages in an order of its own."""
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"localhost"), (b"authorization", f"Bearer {api_key}".encode()),
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000), "server": ("localhost", 80),
    }  # fmt: skip


def attached_engine_get(path: str) -> tuple:
    """A scripted engine's GET answers (``tests.support.scripted_endpoint.ScriptedEndpoint``'s ``respond_get``): one
    model, ``attached``, with a 1,024-token context, healthy."""
    if path == "/v1/models":
        return 200, {"object": "list", "data": [{"id": "attached", "object": "model", "max_model_len": 1024}]}
    return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})


def remembering_loader(load: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``load`` (``serve.supervision.load_tokenizer``), answering again with what it loaded for the same local folder
    whose files are unchanged: loading the tiny judges' 151k-token tokenizer is the slow part of a start, and the
    in-process judge-serves of the unit tests start on a handful of folders. The key is the resolved folder and the
    name, size and mtime of each file in it, so a folder rewritten in place, or a copy elsewhere, loads again; a
    failed load is not remembered, and anything but a readable local folder goes to ``load`` each time. judge-serve
    only reads its tokenizer (it renders and tokenizes with it, serve/jobs.py), so one tokenizer may serve several
    apps."""
    loaded: dict[tuple, Any] = {}

    def key(folder) -> tuple | None:
        try:
            root = Path(folder).resolve(strict=True)
            with os.scandir(root) as entries:
                files = sorted((e.name, s.st_size, s.st_mtime_ns)
                               for e in entries if stat.S_ISREG((s := e.stat()).st_mode))
        except OSError:  # a hub id, a folder not there or not readable, a dangling link: not remembered
            return None
        return str(root), tuple(files)

    @functools.wraps(load)
    def remembering(folder):
        at = key(folder)
        if at is None:
            return load(folder)
        if at not in loaded:
            loaded[at] = load(folder)
        return loaded[at]

    return remembering

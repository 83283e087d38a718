"""At bring-up judge-serve reads each engine's model name and window from its ``/v1/models``; where it cannot, its
config's stand in, and the log says so (before: silently, and a wrong guess surfaced later as 404s or 400s)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from serve.engine_client import engine_session
from serve.supervision import _served_model
from tests.support.scripted_endpoint import ScriptedEndpoint

CONFIG = SimpleNamespace(model_name="judge", max_model_len=2048)


def _read(respond_get):
    with ScriptedEndpoint(lambda path, body: (200, {}), respond_get=respond_get) as endpoint:
        engine = SimpleNamespace(role="generator", url=endpoint.url, auth_headers={})

        async def go():
            async with engine_session(30.0, max_connections=2) as http:
                return await _served_model(http, engine, CONFIG)

        return asyncio.run(go())


def test_a_model_list_that_cannot_be_read_is_a_warning_naming_the_fallback(caplog):
    caplog.set_level(logging.WARNING, logger="judge_serve")
    assert _read(lambda path: (200, {"object": "list", "data": []})) == ("judge", 2048)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["the generator engine's /v1/models could not be read (IndexError: list index out of range): "
                        "judge-serve uses its config's model name 'judge' and max_model_len 2048"]


def test_an_entry_without_a_window_names_only_that_fallback(caplog):
    caplog.set_level(logging.WARNING, logger="judge_serve")
    listed = {"object": "list", "data": [{"id": "attached", "object": "model"}]}
    assert _read(lambda path: (200, listed)) == ("attached", 2048)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["the generator engine's /v1/models could not be read (its first entry has no readable "
                        "max_model_len): judge-serve uses its config's max_model_len 2048"]


def test_a_readable_model_list_warns_nothing(caplog):
    caplog.set_level(logging.WARNING, logger="judge_serve")
    listed = {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 2048}]}
    assert _read(lambda path: (200, listed)) == ("judge", 2048)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []

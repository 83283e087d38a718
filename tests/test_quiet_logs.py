"""judge-eval is quiet by default: the HTTP clients' per-request lines and the backend probe's expected 4xx appear
only with ``--log-level debug``."""

from __future__ import annotations

import logging

import pytest

import judge
from eval.cli import CHATTY_LOGGERS, main
from tests.scripted_endpoint import ScriptedEndpoint, chat_completion

GOOD = "[FEEDBACK] Ответ соответствует критерию. [RESULT] 1 [END]"


def _respond(path: str, body: dict) -> tuple[int, dict]:
    if path.endswith("/v1/judge"):
        return 404, {"detail": "Not Found"}  # what vLLM answers to the backend probe
    return 200, chat_completion(GOOD, body.get("model", "scripted"))


@pytest.fixture()
def restore_loggers():
    yield
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)


@pytest.mark.parametrize("flags, shown", [([], False), (["--log-level", "info"], False),
                                          (["--log-level", "debug"], True)])
def test_http_request_lines_only_at_debug(flags, shown, tmp_path, caplog, restore_loggers):
    """A run against a chat server logs no httpx request line and no probe line unless the level is debug; at debug
    both are there (the probe's 404 named as the expected answer)."""
    records = judge.load_records(judge.sample_data_path())[:2]
    data = tmp_path / "data.jsonl"
    judge.write_jsonl(records, data)
    caplog.set_level(logging.DEBUG)  # the capture handler takes everything the loggers let through
    with ScriptedEndpoint(_respond) as server:
        code = main([*flags, "run", "--judge", server.base_url, "--data", str(data), "--out", str(tmp_path / "run"),
                     "--no-progress", "--max-tokens", "32"])
    assert code == 0
    http_lines = [r for r in caplog.records if r.name.split(".")[0] in CHATTY_LOGGERS and r.levelno < logging.WARNING]
    probe_lines = [r.getMessage() for r in caplog.records if "backend probe" in r.getMessage()]
    assert bool(http_lines) is shown
    assert bool(probe_lines) is shown
    if shown:
        assert any("HTTP 404" in line and "chat" in line for line in probe_lines)
    assert any(r.name.startswith("judge_eval") and r.levelno == logging.INFO for r in caplog.records)


def test_unknown_log_level_is_a_usage_error(capsys):
    """``--log-level loud`` stops with a usage error naming the flag."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--log-level", "loud", "compare", "a", "b"])
    assert exit_info.value.code == 2
    assert "--log-level" in capsys.readouterr().err

"""Every console script is quiet by default: the HTTP clients' per-request lines (and judge-eval's backend probe's
expected 4xx) appear only with ``--log-level debug``, through the one set-up in ``judge.plumbing.console_logging``."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.mera.released import SAMPLE_DATA
from judge.plumbing.console_logging import CHATTY_LOGGERS

REPO = Path(__file__).resolve().parents[2]
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

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


def _completion(path: str, body: dict) -> tuple[int, dict]:
    """What a vLLM server answers to MERA's completion requests: the answer "1"."""
    return 200, {"id": "cmpl-quiet", "object": "text_completion", "created": 0, "model": body.get("model", "scripted"),
                 "choices": [{"index": 0, "text": " 1", "finish_reason": "stop", "logprobs": None}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}  # fmt: skip


@pytest.mark.parametrize("flags, shown", [([], False), (["--log-level", "info"], False),
                                          (["--log-level", "debug"], True)])
def test_mera_request_lines_only_at_debug(flags, shown, tmp_path, caplog, restore_loggers):
    """judge-eval mera rutie through MERA's own client (openai SDK): no per-request INFO line at the default level or
    info, its own progress lines still there; at debug the request lines are back."""
    caplog.set_level(logging.DEBUG)
    with ScriptedEndpoint(_completion) as server:
        code = main(["mera", "rutie", "--endpoint", server.base_url, "--model", "scripted", "--data",
                     str(SAMPLE_DATA["rutie"]), "--out", str(tmp_path / "rutie"), "--max-retries", "0", *flags])
        n_requests = len(server.requests)
    assert code == 0 and n_requests > 1
    http_lines = [r for r in caplog.records if r.name.split(".")[0] in CHATTY_LOGGERS and r.levelno < logging.WARNING]
    per_request = [r for r in http_lines if "HTTP Request" in r.getMessage()]
    assert bool(http_lines) is shown
    assert (len(per_request) >= n_requests) is shown
    assert any(r.name == "eval.mera" and r.levelno == logging.INFO for r in caplog.records)


def test_judge_train_takes_log_level_first(capsys, restore_loggers):
    """``judge-train --log-level debug ...`` sets the root level and lets the HTTP lines through; a bad level is an
    error naming the flag (exit 2)."""
    from train.cli import main as train_main

    assert train_main(["--log-level", "debug", "--help"]) == 0
    assert logging.getLogger().level == logging.DEBUG
    assert {logging.getLogger(name).level for name in CHATTY_LOGGERS} == {logging.NOTSET}
    assert train_main(["--log-level=warning", "--help"]) == 0
    assert {logging.getLogger(name).level for name in CHATTY_LOGGERS} == {logging.WARNING}
    assert train_main(["--log-level", "loud", "--help"]) == 2
    assert "--log-level" in capsys.readouterr().err


CONSOLE_MAINS = ("train/cli.py", "serve/cli.py", "eval/cli.py", "eval/mera/cli.py")


def test_every_console_script_uses_the_one_logging_setup():
    """Each console script's main module calls judge.plumbing.console_logging.configure_logging, and no module of the
    toolkit configures the root logger itself (logging.basicConfig lives in judge/plumbing/console_logging.py only)."""
    for rel in CONSOLE_MAINS:
        tree = ast.parse((REPO / rel).read_text(encoding="utf-8"))
        imports = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   for alias in node.names}  # fmt: skip
        calls = {node.func.id for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}  # fmt: skip
        assert ("judge.plumbing.console_logging", "configure_logging") in imports and "configure_logging" in calls, rel
    configuring = [str(path.relative_to(REPO)) for folder in ("judge", "train", "serve", "eval")
                   for path in (REPO / folder).rglob("*.py") if "basicConfig(" in path.read_text(encoding="utf-8")]
    assert configuring == ["judge/plumbing/console_logging.py"]

"""An error judge-eval says in one line (exit 2; ``mera``'s exit 1) keeps its traceback at ``--log-level debug``:
``main`` answers every ValueError and OSError so, a bug's among them, and without the traceback at any level such a
bug could be reported only as its last line. At the default level the console still shows the one line alone."""

from __future__ import annotations

import pytest

from tests.support.first_contact import run_console_main


def _bug(*args, **kwargs):
    raise ValueError("operands could not be broadcast together with shapes (3,) (4,)")


@pytest.mark.parametrize("level", ["debug", "info"])
def test_judge_eval_keeps_the_traceback_of_an_error_at_debug(level, tmp_path, monkeypatch):
    monkeypatch.setattr("eval.cli._merge", _bug)
    outcome = run_console_main("judge-eval", ["--log-level", level, "merge", str(tmp_path / "shard"), "--data",
                                              str(tmp_path / "data.jsonl"), "--out", str(tmp_path / "out")])
    assert outcome.code == 2 and outcome.out == ""
    assert outcome.last_error_line == ("judge-eval merge: error: operands could not be broadcast together with "
                                       "shapes (3,) (4,)")
    if level == "debug":
        assert "Traceback (most recent call last)" in outcome.err and "in _bug" in outcome.err, outcome.err
    else:
        assert outcome.err.count("\n") == 1, outcome.err


def test_judge_eval_keeps_the_traceback_of_an_os_error_at_debug(tmp_path, monkeypatch):
    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "shard" / "predictions.jsonl"))

    monkeypatch.setattr("eval.cli._merge", unreadable)
    outcome = run_console_main("judge-eval", ["--log-level", "debug", "merge", str(tmp_path / "shard"), "--data",
                                              str(tmp_path / "data.jsonl"), "--out", str(tmp_path / "out")])
    assert outcome.code == 2
    assert outcome.last_error_line == f"judge-eval merge: error: {tmp_path / 'shard' / 'predictions.jsonl'}: " \
                                      "Permission denied"
    assert "Traceback (most recent call last)" in outcome.err and "in unreadable" in outcome.err, outcome.err


def test_judge_eval_mera_keeps_the_traceback_of_an_error_at_debug(tmp_path, monkeypatch):
    monkeypatch.setattr("eval.mera.cli.read_task_data", _bug)
    outcome = run_console_main("judge-eval", ["--log-level", "debug", "mera", "rutie", "--endpoint",
                                              "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "out")])
    assert outcome.code == 1
    assert outcome.last_error_line == ("judge-eval mera rutie: error: operands could not be broadcast together with "
                                       "shapes (3,) (4,)")
    assert "Traceback (most recent call last)" in outcome.err and "in _bug" in outcome.err, outcome.err

"""Ctrl+C during `judge-eval run`: one line and exit code 130, not a KeyboardInterrupt traceback.

``asyncio.run`` cancels the judging tasks and re-raises Ctrl+C as ``KeyboardInterrupt``, which reached the console
as a traceback and a death by SIGINT; the rows already journaled are kept either way, and the line says so. The
signal is stood in for by the run raising what ``asyncio.run`` raises.
"""

from __future__ import annotations

import pytest

from eval.cli import main
from eval.judging import run as run_module


def test_ctrl_c_during_a_run_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
    def interrupted(config, **_):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "run", interrupted)
    capsys.readouterr()
    try:
        code = main(["run", "--judge", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run"), "--no-progress"])
    except KeyboardInterrupt:
        pytest.fail("Ctrl+C escaped judge-eval's main as a traceback")
    assert code == 130
    assert capsys.readouterr().err == "judge-eval run: interrupted; the rows written are kept, a rerun resumes\n"

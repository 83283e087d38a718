"""A console script whose stdout's reader has gone (``judge-eval ... | head -1``, a client that hung up) exits
cleanly: no traceback, no "Broken pipe" error line, the exit code ``judge.plumbing.closed_stdout`` names (141, as a
shell reports a program SIGPIPE stopped)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from judge.plumbing.closed_stdout import EXIT_STDOUT_CLOSED

REPO = Path(__file__).resolve().parents[2]


def _into_a_closed_pipe(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` run in a child whose stdout is a pipe with no reader left: its read end is closed before the child
    starts, so the child's first write to stdout fails, whenever it comes (no race with a reader)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.run([sys.executable, "-c", code], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, env=env, timeout=120)
    finally:
        os.close(write_end)


def _quiet(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr, done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr, done.stderr[-2000:]
    # 141 (128 + SIGPIPE) is the number the commands' --help and docs state
    assert done.returncode == EXIT_STDOUT_CLOSED == 141, (done.returncode, done.stderr[-2000:])


def test_judge_eval_into_a_closed_pipe_exits_cleanly_with_its_files_written(tmp_path):
    out = tmp_path / "converted.jsonl"
    done = _into_a_closed_pipe("import sys; from eval.cli import main; sys.exit(main(['convert', '--data', "
                               f"{str(REPO / 'judge/data/sample.jsonl')!r}, '--out', {str(out)!r}]))", tmp_path)
    _quiet(done)
    assert out.is_file() and out.stat().st_size  # the work done before the printout is kept


def test_judge_serve_into_a_closed_pipe_exits_cleanly(tmp_path):
    model = tmp_path / "judge"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}), encoding="utf-8")
    done = _into_a_closed_pipe("import sys; from serve.cli import main; "
                               f"sys.exit(main(['--model', {str(model)!r}, '--print-config']))", tmp_path)
    _quiet(done)


def test_judge_train_into_a_closed_pipe_exits_cleanly(tmp_path):
    """``judge-train --help | head -1``: its usage is printed by its own main, not argparse's."""
    done = _into_a_closed_pipe("import sys; from train.cli import main; sys.exit(main(['--help']))", tmp_path)
    _quiet(done)


def test_a_broken_pipe_that_is_not_stdouts_is_not_taken_for_it():
    """A connection's BrokenPipeError (a server gone mid-request) with stdout still read is no closed stdout: it
    stays the error it is."""
    from judge.plumbing.closed_stdout import stdout_closed

    read_end, write_end = os.pipe()
    try:
        with os.fdopen(os.dup(write_end), "w") as stream:
            assert not stdout_closed(stream)
            os.close(read_end)
            read_end = None
            assert stdout_closed(stream)
    finally:
        os.close(write_end)
        if read_end is not None:
            os.close(read_end)


def test_judge_eval_mera_into_a_closed_pipe_exits_cleanly(tmp_path):
    """``python -m eval.mera.cli`` (the same program as ``judge-eval mera``) and ``judge-eval mera``: the
    canonical-solution self-check on the bundled rows prints its figures into a pipe with no reader; its own error
    handling (an OSError is a run's error) must not take stdout's BrokenPipeError for one."""
    args = ["ruhumaneval", "--self-check", "--data", "sample", "--n", "1", "--k", "1"]
    direct = _into_a_closed_pipe(f"import runpy, sys; sys.argv = ['eval.mera.cli', *{args!r}, '--out', "
                                 f"{str(tmp_path / 'direct')!r}]; runpy.run_module('eval.mera.cli', "
                                 "run_name='__main__')", tmp_path)
    _quiet(direct)
    assert (tmp_path / "direct" / "metrics.json").is_file()  # the work done before the printout is kept
    via = _into_a_closed_pipe("import sys; from eval.cli import main; sys.exit(main(['mera', *"
                              f"{args!r}, '--out', {str(tmp_path / 'via')!r}]))", tmp_path)
    _quiet(via)

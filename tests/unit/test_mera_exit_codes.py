"""`judge-eval mera`'s exit codes follow `judge-eval --help`'s rule: bad input data and a busy run folder are exit 2 (a
usage, configuration or input error), as `judge-eval run` exits for them, with one line naming what (a resume of
other settings: tests/unit/test_mera_first_checks.py); 1 stays a task error (the sandbox unavailable); its --help
says both."""

from __future__ import annotations

import json

import pytest

from eval.cli import EXIT_CODES
from eval.mera import cli
from judge.plumbing.run_folder import hold_run_folder
from tests.support.mera_humaneval import SAMPLE as HUMANEVAL_SAMPLE
from tests.support.mera_rutie import SAMPLE as RUTIE_SAMPLE
from tests.support.scripted_endpoint import ScriptedEndpoint


def _never_asked(path, body):
    raise AssertionError(f"the endpoint was asked {path} before the local checks")


def _error_lines(err: str, task: str) -> list[str]:
    """The error lines `judge-eval mera <task>` printed to stderr, their prefix taken off."""
    return [line.removeprefix(f"judge-eval mera {task}: error: ") for line in err.splitlines()
            if line.startswith("judge-eval mera ")]


def test_a_data_row_that_cannot_be_used_is_exit_2_naming_file_row_and_field(tmp_path, capsys):
    """A ruHumanEval row without its `inputs`: exit 2, as `judge-eval run` exits on bad data, and one error line
    naming the file, the line and the field; no traceback."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"instruction": "Напиши функцию."}, ensure_ascii=False) + "\n", encoding="utf-8")
    code = cli.main(["ruhumaneval", "--self-check", "--data", str(path), "--out", str(tmp_path / "run")])
    assert code == 2 == next(c for c, meaning in EXIT_CODES["run"].items() if "input error" in meaning)
    err = capsys.readouterr().err
    assert _error_lines(err, "ruhumaneval") == [f"{path}: line 1: field 'inputs' is missing"]
    assert "Traceback" not in err


def test_a_busy_run_folder_is_exit_2_as_judge_eval_run(tmp_path, capsys):
    """Another process holding --out: exit 2 (`judge-eval run`'s RunFolderBusy), naming the holder, nothing written."""
    out = tmp_path / "run"
    with ScriptedEndpoint(_never_asked) as endpoint, hold_run_folder(out, "another run"):
        code = cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(RUTIE_SAMPLE),
                         "--out", str(out), "--max-retries", "0"])  # fmt: skip
    (error,) = _error_lines(capsys.readouterr().err, "rutie")
    assert code == 2 and "is in use by another run" in error


@pytest.mark.parametrize("folder_before", [False, True])
def test_ctrl_c_while_the_data_is_read_says_answers_are_kept_only_where_a_run_folder_exists(tmp_path, capsys,
                                                                                          monkeypatch, folder_before):
    """Ctrl+C while --data is read (before the run folder is held): exit 130 and one line; it said "the answers saved
    so far in <out> are kept" where no folder was ever made. A folder already there (an earlier run's) keeps the
    clause, as a resume reads it."""
    def pressed_ctrl_c(config):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "read_task_data", pressed_ctrl_c)
    out = tmp_path / "run"
    if folder_before:
        out.mkdir()
    code = cli.main(["ruhumaneval", "--self-check", "--data", str(HUMANEVAL_SAMPLE), "--out", str(out)])
    kept = f"; the answers saved so far in {out} are kept, rerunning the same command resumes" if folder_before else ""
    assert code == 130
    assert capsys.readouterr().err.splitlines() == [f"judge-eval mera ruhumaneval: interrupted{kept}"]
    assert out.exists() == folder_before


def test_help_states_usage_errors_as_exit_2_and_task_errors_as_1():
    text = " ".join(cli.EPILOG.split())
    task_errors = text.split("; 2 ")[0]
    assert "1 a task error (sandbox unavailable, I/O)" in task_errors
    assert not any(word in task_errors for word in ("bad data", "resume", "busy", "unwritable"))
    usage = "2 a usage, configuration or input error (a resume mismatch, a busy or unwritable run folder; bad data: "
    assert usage in text

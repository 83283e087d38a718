"""`judge-eval mera`'s exit codes follow `judge-eval --help`'s rule: bad input data is exit 2 (a usage, configuration
or input error) with one line naming the file, the row and the field; 1 stays a task error (a resume of other
settings); its --help says both."""

from __future__ import annotations

import json

from eval.cli import EXIT_CODES
from eval.mera import cli
from eval.mera.progress import claim_run_folder
from eval.mera.rutie import PROGRESS_FILE
from tests.support.mera_rutie import SAMPLE as RUTIE_SAMPLE
from tests.support.scripted_endpoint import ScriptedEndpoint


def _never_asked(path, body):
    raise AssertionError(f"the endpoint was asked {path} before the local checks")


def test_a_data_row_that_cannot_be_used_is_exit_2_naming_file_row_and_field(tmp_path, caplog):
    """A ruHumanEval row without its `inputs`: exit 2, as `judge-eval run` exits on bad data, and one error line
    naming the file, the line and the field; no traceback."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"instruction": "Напиши функцию."}, ensure_ascii=False) + "\n", encoding="utf-8")
    with caplog.at_level("ERROR"):
        code = cli.main(["ruhumaneval", "--self-check", "--data", str(path), "--out", str(tmp_path / "run")])
    assert code == 2 == next(c for c, meaning in EXIT_CODES["run"].items() if "input error" in meaning)
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [(r.getMessage(), r.exc_info) for r in errors] == [(f"{path}: line 1: field 'inputs' is missing", None)]


def test_a_resume_of_other_settings_stays_a_task_error(tmp_path, caplog):
    """Progress made with another model is no bad input: exit 1, naming the setting, before any contact."""
    out = tmp_path / "run"
    claim_run_folder(out, {"task": "rutie", "model": "another"}, [PROGRESS_FILE])
    (out / PROGRESS_FILE).write_text(json.dumps({"dialog_id": 0, "question_id": 0}) + "\n")
    with ScriptedEndpoint(_never_asked) as endpoint:
        code = cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(RUTIE_SAMPLE),
                         "--out", str(out), "--max-retries", "0"])  # fmt: skip
    assert code == 1 and "model: 'another' -> 'scripted'" in caplog.text


def test_help_states_bad_data_as_exit_2_and_task_errors_as_1():
    text = " ".join(cli.EPILOG.split())
    assert "1 a task error (resume mismatch, " in text and "bad data" not in text.split("; 2 ")[0]
    assert "2 a usage, configuration or input error (bad data: " in text

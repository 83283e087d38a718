"""``judge-eval mera``: every local input (the data, the run folder, the flags) is checked before the endpoint is
asked anything, so an error in them is said at once rather than after the endpoint's wait (up to 120 s for one
that is unreachable or loading)."""

from __future__ import annotations

import json

import pytest

from eval.cli import EXIT_CODES
from eval.mera import cli
from eval.mera.progress import claim_run_folder
from eval.mera.rutie import PROGRESS_FILE
from tests.support.mera_humaneval import SAMPLE as HUMANEVAL_SAMPLE
from tests.support.mera_rutie import SAMPLE as RUTIE_SAMPLE
from tests.support.scripted_endpoint import ScriptedEndpoint


def _never_asked(path, body):
    raise AssertionError(f"the endpoint was asked {path} before the local inputs were checked")


def _contacts(endpoint: ScriptedEndpoint) -> list[str]:
    return endpoint.gets + [path for path, _ in endpoint.requests]


def _error_lines(err: str, task: str) -> list[str]:
    """The error lines `judge-eval mera <task>` printed to stderr, their prefix taken off."""
    return [line.removeprefix(f"judge-eval mera {task}: error: ") for line in err.splitlines()
            if line.startswith("judge-eval mera ")]


@pytest.mark.parametrize(("task", "data", "said"), [
    ("rutie", HUMANEVAL_SAMPLE, "line 1: field 'instruction' has no {context} placeholder"),
    ("ruhumaneval", RUTIE_SAMPLE, "line 1: field 'inputs.function' is missing"),
])  # fmt: skip
def test_the_other_tasks_data_is_refused_before_the_endpoint_is_asked(tmp_path, capsys, task, data, said):
    """The other task's sample given as --data: exit 2 (bad input) naming the row and the field, and not one request (the
    model list included) reached the endpoint. It had waited for the endpoint first: up to 120 s when unreachable,
    then exit 4 with the data error never shown."""
    with ScriptedEndpoint(_never_asked) as endpoint:
        code = cli.main([task, "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(data),
                         "--out", str(tmp_path / "run"), "--max-retries", "0"])  # fmt: skip
    assert code == 2
    (error,) = _error_lines(capsys.readouterr().err, task)
    assert said in error
    assert _contacts(endpoint) == []


def test_a_rutie_folder_of_other_settings_is_refused_before_the_endpoint_is_asked(tmp_path, capsys):
    """Progress made with another model: the resume is refused (exit 2, naming the setting) before any contact; 2 is
    `judge-eval run`'s usage code for its ResumeMismatch too (it was exit 1, a task error, as a sandbox that cannot
    run)."""
    out = tmp_path / "run"
    claim_run_folder(out, {"task": "rutie", "model": "another"}, [PROGRESS_FILE])
    (out / PROGRESS_FILE).write_text(json.dumps({"dialog_id": 0, "question_id": 0}) + "\n")
    with ScriptedEndpoint(_never_asked) as endpoint:
        code = cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(RUTIE_SAMPLE),
                         "--out", str(out), "--max-retries", "0"])  # fmt: skip
    assert code == 2 == next(c for c, meaning in EXIT_CODES["run"].items() if "usage" in meaning)
    (error,) = _error_lines(capsys.readouterr().err, "rutie")
    assert "model: 'another' -> 'scripted'" in error
    assert _contacts(endpoint) == []


def test_max_tokens_over_the_given_window_is_refused_before_the_endpoint_is_asked(tmp_path, capsys):
    """--max-model-len given: --max-tokens at that window is a usage error (exit 2) with no contact at all."""
    with ScriptedEndpoint(_never_asked) as endpoint:
        with pytest.raises(SystemExit) as stopped:
            cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(RUTIE_SAMPLE),
                      "--out", str(tmp_path / "run"), "--max-model-len", "256", "--max-tokens", "256"])  # fmt: skip
    assert stopped.value.code == 2
    assert "--max-tokens 256 leaves no room" in capsys.readouterr().err
    assert _contacts(endpoint) == []


def test_the_endpoints_window_is_still_read_once_it_answers(tmp_path, capsys):
    """Without --max-model-len the window comes from /v1/models, after the first contact: --max-tokens at it is
    refused (exit 2) having asked only the model list, never a question."""
    with ScriptedEndpoint(_never_asked, max_model_len=256) as endpoint:
        with pytest.raises(SystemExit) as stopped:
            cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(RUTIE_SAMPLE),
                      "--out", str(tmp_path / "run"), "--max-tokens", "256", "--max-retries", "0"])  # fmt: skip
    assert stopped.value.code == 2
    assert "the endpoint's /v1/models" in capsys.readouterr().err
    assert endpoint.requests == [] and all(path.endswith("/models") for path in endpoint.gets) and endpoint.gets


def test_an_out_folder_that_cannot_be_made_is_one_line_before_the_endpoint_is_asked(tmp_path, capsys):
    """--out where no folder can be made (/sys refuses every new entry, root too): exit 2 naming the path, no
    traceback, no contact. It ended in a PermissionError traceback."""
    with ScriptedEndpoint(_never_asked) as endpoint:
        code = cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(RUTIE_SAMPLE),
                         "--out", "/sys/judge-eval-mera-out", "--max-retries", "0"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    (error,) = _error_lines(err, "rutie")
    assert "/sys/judge-eval-mera-out" in error
    assert "Traceback" not in err
    assert _contacts(endpoint) == []

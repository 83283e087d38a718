"""A MERA task's ``--data`` that names nothing usable (a missing file, another task's data, an old name, a folder
without rows, no hub id): exit 2 with one line."""

from __future__ import annotations

import pytest

from eval.mera import cli
from eval.mera.released import HUMANEVAL_EN, resolve_task_data
from eval.mera.task_rows import DataError


@pytest.mark.parametrize(("task", "data", "said"), [
    ("rutie", "{tmp}/missing.jsonl", "no such file"),
    ("ruhumaneval", "{tmp}/missing.jsonl", "no such file"),
    ("rutie", HUMANEVAL_EN, "is for ruhumaneval only"),
    ("ruhumaneval", "openai-humaneval", "is now called 'humaneval-en'"),
    ("rutie", "{tmp}", "no rutie rows"),
    ("rutie", "no-such-thing", "not a hub id"),
])  # fmt: skip
def test_a_data_argument_that_names_nothing_usable_is_exit_2_in_one_line(tmp_path, capsys, task, data, said):
    data = data.format(tmp=tmp_path)
    with pytest.raises(DataError, match=said):
        resolve_task_data(task, data)
    args = [task, "--data", data, "--out", str(tmp_path / "run")]
    args += ["--self-check"] if task == "ruhumaneval" else ["--endpoint", "http://127.0.0.1:9/v1", "--model", "m"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    errors = [line.removeprefix(f"judge-eval mera {task}: error: ") for line in err.splitlines()
              if line.startswith("judge-eval mera ")]
    assert len(errors) == 1 and said in errors[0] and "Traceback" not in err


def test_a_missing_file_is_still_a_file_not_found_to_a_caller_that_asks(tmp_path):
    with pytest.raises(FileNotFoundError):
        resolve_task_data("rutie", str(tmp_path / "missing.jsonl"))

"""tests/support/console_scripts.py: a test's child finds the console scripts of the interpreter running the tests
whether or not the venv is activated, and a script missing there fails the test naming it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.console_scripts import console_script, path_with_console_scripts
from tests.support.fake_commands import write_executables


def test_a_child_finds_judge_eval_by_name_with_the_venv_off_path(monkeypatch, tmp_path):
    """`.venv/bin/python -m pytest` from a shell without the venv activated: PATH lacks .venv/bin, and a Slurm script
    the test runs still finds the interpreter's judge-eval by name, after the stand-ins put before it."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    stand_ins = write_executables(tmp_path / "bin", {"srun": "exit 0\n"})
    path = path_with_console_scripts("judge-eval", before=[stand_ins])
    assert path.split(os.pathsep) == [str(stand_ins), str(Path(sys.executable).parent), "/usr/bin", "/bin"]
    assert shutil.which("judge-eval", path=path) == str(Path(sys.executable).parent / "judge-eval")
    done = subprocess.run(["bash", "-c", "command -v judge-eval && command -v srun"], env={"PATH": path},
                          capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines() == [console_script("judge-eval"), str(stand_ins / "srun")]


def test_a_console_script_missing_beside_the_interpreter_fails_the_test_naming_it():
    missing = Path(sys.executable).parent / "judge-no-such-script"
    with pytest.raises(pytest.fail.Exception) as failed:
        console_script("judge-no-such-script")
    assert str(failed.value) == (f"no judge-no-such-script console script beside the interpreter running the tests "
                                 f"({sys.executable}): {missing} is missing; install pollux-judge into that environment "
                                 "(`make setup`)")
    with pytest.raises(pytest.fail.Exception, match="^no judge-no-such-script console script beside"):
        path_with_console_scripts("judge-eval", "judge-no-such-script")

"""How `judge-eval run --judge CHECKPOINT` starts judge-serve: the judge-serve installed with the judge-eval running,
wherever the installer put the console scripts (beside the interpreter, or not: ``pip install --user`` without
``~/.local/bin`` on PATH, a ``--target`` install on PYTHONPATH), never another environment's found on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from eval.judging import local_server as local_server_module
from eval.judging.config import RunConfig

import serve

#: The folder this checkout's (or install's) packages are imported from.
PACKAGES_ROOT = Path(serve.__file__).resolve().parents[1]


def _interpreter_without_scripts(tmp_path, monkeypatch) -> Path:
    """``sys.executable`` as an interpreter whose folder holds no console scripts, and a PATH whose only judge-serve
    is another environment's."""
    interpreter = tmp_path / "user-python" / "bin" / "python3"
    interpreter.parent.mkdir(parents=True)
    interpreter.symlink_to(sys.executable)
    other = tmp_path / "other-env" / "bin"
    other.mkdir(parents=True)
    (other / "judge-serve").write_text("#!/bin/sh\nexit 1\n")
    (other / "judge-serve").chmod(0o755)
    monkeypatch.setattr(local_server_module.sys, "executable", str(interpreter))
    monkeypatch.setenv("PATH", f"{other}{os.pathsep}{os.environ.get('PATH', '')}")
    return interpreter


def test_without_a_script_beside_the_interpreter_it_runs_the_installed_serve_package(tmp_path, monkeypatch):
    """The serve package ships in the same distribution as eval: it is judge-serve, installed, even where its console
    script is not beside the interpreter; judge-eval ran vLLM's own server instead (``server: auto``) or refused a
    regression judge as "judge-serve is not installed", and took any judge-serve on PATH, another environment's."""
    interpreter = _interpreter_without_scripts(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert local_server_module._judge_serve_command() == [str(interpreter), "-P", "-m", "serve.cli"]
    assert local_server_module.starts_judge_serve(RunConfig(server="auto"))


def test_the_module_command_is_this_installs_judge_serve_not_a_serve_py_in_the_working_folder(tmp_path, monkeypatch):
    """``-P``: a ``serve.py`` in the user's working folder cannot stand in for the package (``python -m`` puts the
    working folder first on the module path)."""
    python = sys.executable  # this environment's interpreter: the stand-in below, a bare link, finds no packages
    _interpreter_without_scripts(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "serve.py").write_text("raise SystemExit('the working folder serve.py ran')\n")
    command = local_server_module._judge_serve_command()
    done = subprocess.run([python, *command[1:], "--help"], cwd=tmp_path, capture_output=True, text=True,
                          env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"},
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: judge-serve")


def test_a_checkout_run_from_its_root_keeps_its_working_folder_on_the_module_path(tmp_path, monkeypatch):
    """``python -m eval.cli`` from a checkout that is not installed imports the packages from the working folder;
    the judge-serve it starts must import them from there too."""
    interpreter = _interpreter_without_scripts(tmp_path, monkeypatch)
    monkeypatch.chdir(PACKAGES_ROOT)
    assert local_server_module._judge_serve_command() == [str(interpreter), "-m", "serve.cli"]


def test_the_script_beside_the_interpreter_comes_first(tmp_path, monkeypatch):
    """The environment's own console script, as pip installs it beside the interpreter."""
    interpreter = _interpreter_without_scripts(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    beside = interpreter.parent / "judge-serve"
    beside.write_text("#!/bin/sh\n")
    assert local_server_module._judge_serve_command() == [str(beside)]


def test_a_checkout_run_from_its_root_runs_its_own_serve_even_beside_an_installed_script(tmp_path, monkeypatch):
    """The console script beside the interpreter imports ``serve`` from wherever its environment was installed from,
    which a shared environment's other checkout or worktree is not: run from its root, a checkout pairs its own
    ``eval`` with its own ``serve``."""
    interpreter = _interpreter_without_scripts(tmp_path, monkeypatch)
    (interpreter.parent / "judge-serve").write_text("#!/bin/sh\n")
    monkeypatch.chdir(PACKAGES_ROOT)
    assert local_server_module._judge_serve_command() == [str(interpreter), "-m", "serve.cli"]

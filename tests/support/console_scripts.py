"""The console scripts (judge-eval, judge-serve, judge-train) of the interpreter running the tests.

pip installs them beside that interpreter (``.venv/bin``), and that folder is on PATH only when the venv is activated:
`.venv/bin/python -m pytest` from a plain shell, or a checkout other than the venv's (``REPO/.venv`` is then not
there), leaves a script or Slurm job that calls ``judge-eval`` by name without it. A test finds them through
``sys.executable``, and one whose interpreter has none fails saying so rather than with a FileNotFoundError or a
script's "not on PATH"."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

#: Where pip put the console scripts of the interpreter running the tests.
SCRIPTS_DIR = Path(sys.executable).parent


def console_script(name: str) -> str:
    """The path of console script ``name`` beside this interpreter; the test fails naming it when it is not there."""
    path = SCRIPTS_DIR / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"no {name} console script beside the interpreter running the tests ({sys.executable}): "
                    f"{path} is missing; install pollux-judge into that environment (`make setup`)", pytrace=False)
    return str(path)


def path_with_console_scripts(*names: str, before: Iterable[Path | str] = ()) -> str:
    """A PATH for a child that runs the console scripts ``names`` by name: the folders ``before`` (stand-ins that must
    win), then this interpreter's scripts folder, then this process's PATH. Fails as ``console_script`` does when one
    of ``names`` is not there."""
    for name in names:
        console_script(name)
    return os.pathsep.join([*map(str, before), str(SCRIPTS_DIR), os.environ.get("PATH", "")])

"""The Makefile's system-packages step, run for real by make in a copy of the repository's Makefile, with the
programs it calls (id, dpkg, apt-get) replaced by scripts on PATH that record what they were asked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _make(work: Path, bin_dir: Path, *targets: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.run(["make", "--no-print-directory", *targets], cwd=work, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_system_packages_installs_as_root_after_a_run_that_could_not(tmp_path):
    """Not root: a warning and no stamp (the packages are not there). Then as root: apt-get is called, the stamp is
    written, and no .venv is made (a root-owned one would stop the user's `make setup`)."""
    work, bin_dir = tmp_path / "repo", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    shutil.copy(REPO / "Makefile", work / "Makefile")
    calls = tmp_path / "apt-calls"
    _stub(bin_dir, "dpkg", f'[ -f "{calls}" ] && exit 0; exit 1')  # installed once apt-get has run
    _stub(bin_dir, "apt-get", f'echo "$*" >> "{calls}"')
    _stub(bin_dir, "id", "echo 1000")
    first = _make(work, bin_dir, "system-packages")
    assert first.returncode == 0 and "warning: cannot install" in first.stdout
    assert not (work / ".apt-installed").exists() and not calls.exists()
    _stub(bin_dir, "id", "echo 0")
    second = _make(work, bin_dir, "system-packages")
    assert second.returncode == 0, second.stderr
    assert "install -y -qq --no-install-recommends bubblewrap" in calls.read_text(encoding="utf-8")
    assert (work / ".apt-installed").exists() and not (work / ".venv").exists()
    assert "Nothing to be done" in _make(work, bin_dir, "system-packages").stdout  # done once, for good

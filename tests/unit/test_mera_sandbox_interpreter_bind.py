"""The interpreter's folder bubblewrap binds into the code sandbox: only one that holds nothing private (no home folder,
not the repository, not the whole file system), checked once per sandbox rather than per sample."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import ExecJob, Limits, Sandbox, SandboxUnavailable, bwrap_argv
from tests.support.mera_sandbox import bwrap_sandbox_or_skip

REPO = Path(__file__).resolve().parents[2]


def _argv(python: str) -> list[str]:
    return bwrap_argv(python, child_fd=3, job_fd=4, seccomp_fd=5, token="t", tmpfs_mb=8, env={})


def test_an_interpreter_whose_prefix_holds_a_home_folder_or_the_repository_is_refused(tmp_path, monkeypatch):
    """The interpreter's prefix (its bin's parent) is bound whole: $HOME/bin/python3 showed every sample the home
    folder (~/.ssh), /bin/python3 on a system whose /bin is a real folder the whole file system."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for python, exposed in [
        (home / "bin" / "python3", str(home)),
        (Path("/x/python3"), "the whole file system"),
        (REPO.parent / "bin" / "python3", str(REPO)),
    ]:
        with pytest.raises(SandboxUnavailable, match="bind whole") as err:
            _argv(str(python))
        assert exposed in str(err.value) and str(python) in str(err.value)
    work = tmp_path / "opt" / "py"
    (work / "run").mkdir(parents=True)
    monkeypatch.chdir(work / "run")
    with pytest.raises(SandboxUnavailable, match="bind whole"):
        _argv(str(work / "bin" / "python3"))


def test_an_interpreter_in_a_folder_of_its_own_or_under_usr_is_bound_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    own = tmp_path / "opt" / "python3.11"
    argv = _argv(str(own / "bin" / "python3"))
    assert argv[argv.index(str(own)) - 1] == "--ro-bind"
    assert sandbox_mod.interpreter_bind("/usr/local/bin/python3") is None
    assert sandbox_mod.interpreter_bind("/usr/bin/python3") is None


def test_a_sample_does_not_see_a_home_folder_through_the_interpreters_prefix(tmp_path, monkeypatch, sandbox_user):
    """End to end: an interpreter copied into a home folder's bin is refused, not run with the home bound."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    python = home / "bin" / "python3"
    shutil.copy2(sandbox_mod.choose_identity()[0], python)
    for folder in (tmp_path, home, home / "bin"):
        folder.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    bwrap_sandbox_or_skip(Limits())  # skips where bubblewrap cannot run at all
    with pytest.raises(SandboxUnavailable, match="bind whole"):
        Sandbox(Limits(), isolation="bwrap", python=str(python))
    with pytest.raises(SandboxUnavailable, match="bind whole"):  # auto never falls back to no isolation for it
        Sandbox(Limits(), isolation="auto", python=str(python))


def test_the_interpreters_folder_is_checked_once_per_sandbox_not_per_sample(monkeypatch, sandbox_user):
    """The check lists every folder of /home (``_private_folders``), a network round trip each on an NFS or autofs
    /home: the probe's command line checks it and every sample reuses the answer, whatever the number of samples."""
    calls = []
    check = sandbox_mod.interpreter_bind
    monkeypatch.setattr(sandbox_mod, "interpreter_bind", lambda python: calls.append(python) or check(python))
    box = bwrap_sandbox_or_skip(Limits())
    checked = len(calls)
    jobs = [ExecJob(program=f"def f():\n    return {k}\n", entry_point="f", tests=[{}], expected=[str(k)])
            for k in range(4)]
    assert [r.passed for r in box.run_many(jobs, workers=2)] == [True] * 4
    assert checked == 1 and len(calls) == checked  # once, by the sandbox: not by the probe again, nor per sample

"""Private folders under ``/usr``, which bubblewrap binds whole: the checkout, the working directory or a home folder
there (the official Python image's example working directory is ``/usr/src/app``) is covered by an empty read-only
tmpfs in the sandbox, or refused where covering it would hide the interpreter."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import NOBODY, Limits, Sandbox, SandboxUnavailable, bwrap_argv
from tests.support.mera_sandbox import bwrap_sandbox_or_skip, run_f

#: What ``interpreter_library`` answers for Debian's /usr/bin/python3.11 (its prefix, standard library, LIBDIR).
DEBIAN_LIBRARY = ("/usr", "/usr/lib/python3.11", "/usr/lib/x86_64-linux-gnu")


def _private(monkeypatch, *folders: str) -> None:
    monkeypatch.setattr(sandbox_mod, "_private_folders", lambda: [Path(f) for f in folders])
    monkeypatch.setattr(sandbox_mod, "interpreter_library", lambda python: DEBIAN_LIBRARY, raising=False)


def test_a_checkout_under_usr_is_covered_by_an_empty_read_only_tmpfs(monkeypatch):
    """/usr/share and /usr/sbin stand for a checkout at /usr/src/app and a home folder under /usr (folders that exist
    everywhere), /usr/share/doc for the working directory inside the checkout: one cover each for the outer two,
    right after /usr is bound; the folders outside /usr need none (they are never bound)."""
    _private(monkeypatch, "/root", "/usr/share", "/usr/share/doc", "/home/ann", "/usr/sbin")
    assert sandbox_mod.covered_usr_folders("/usr/bin/python3") == ["/usr/sbin", "/usr/share"]
    argv = bwrap_argv("/usr/bin/python3", child_fd=3, job_fd=4, seccomp_fd=5, token="t", tmpfs_mb=8, env={},
                      interpreter_folder=None)  # fmt: skip
    usr = argv.index("--ro-bind")
    assert argv[usr:usr + 11] == [
        "--ro-bind", "/usr", "/usr",
        "--tmpfs", "/usr/sbin", "--remount-ro", "/usr/sbin",
        "--tmpfs", "/usr/share", "--remount-ro", "/usr/share",
    ]  # fmt: skip
    assert argv.count("--tmpfs") == 4  # the two covers, /dev and /sandbox


def test_a_private_folder_that_does_not_exist_is_not_covered(monkeypatch):
    """bubblewrap cannot make a mount point inside the read-only /usr ("Can't mkdir /usr/local/nonexistent-home:
    Read-only file system"): the probe failed and auto ran with no isolation. A folder that does not exist holds
    nothing to hide."""
    _private(monkeypatch, "/usr/share", "/usr/local/nonexistent-home", "/usr/nonexistent-checkout/app")
    assert sandbox_mod.covered_usr_folders("/usr/bin/python3") == ["/usr/share"]
    assert sandbox_mod.covered_usr_folders("/usr/bin/python3", NOBODY) == ["/usr/share"]


def test_a_home_under_usr_that_does_not_exist_leaves_bubblewrap_working(monkeypatch):
    """End to end, from $HOME alone (``Path.home()`` does not check that the folder exists)."""
    monkeypatch.setenv("HOME", "/usr/local/nonexistent-home")
    sandbox = bwrap_sandbox_or_skip(Limits())
    assert sandbox.isolation == "bubblewrap" and "/usr/local/nonexistent-home" not in sandbox._covered


def test_a_folder_is_covered_only_where_the_sandbox_user_reaches_it():
    """As the sandbox's user starts bubblewrap: a folder under one that user cannot search (mode 0700, owned by
    someone else) is one it cannot mount over ("Can't mkdir ...: Permission denied") nor read; this process's user
    reaches what it sees."""
    top = Path(tempfile.mkdtemp(prefix="sandbox-reach-"))
    try:
        inner = top / "closed" / "app"
        inner.mkdir(parents=True)
        top.chmod(0o755)
        (top / "closed").chmod(0o700)
        if top.stat().st_uid == NOBODY:
            pytest.skip("this test runs as nobody, who owns the folders it makes")
        assert sandbox_mod._reachable_by(inner, None) is True
        assert sandbox_mod._reachable_by(inner, NOBODY) is False
        assert sandbox_mod._reachable_by(top / "closed", NOBODY) is True  # its parent is searchable
        (top / "closed").chmod(0o701)
        assert sandbox_mod._reachable_by(inner, NOBODY) is True
        assert sandbox_mod._reachable_by(top / "absent", None) is False
        assert sandbox_mod._reachable_by(top / "absent", NOBODY) is False
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_private_folder_that_holds_the_standard_library_is_refused(monkeypatch):
    """Covered, the child could not start ("Could not find platform independent libraries") and auto fell back to no
    isolation: working in /usr/lib/python3.11 (or /usr/lib, or the C library's folder) is refused, naming both."""
    for folder, library in (("/usr/lib/python3.11", "/usr/lib/python3.11"), ("/usr/lib", "/usr/lib/python3.11"),
                            ("/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")):  # fmt: skip
        _private(monkeypatch, folder)
        monkeypatch.setattr(sandbox_mod, "_reachable_by", lambda folder, uid: True)  # exists or not, here
        said = rf"^{folder} is private .* /usr/bin/python3, and the folder holds its standard library \({library}\)"
        with pytest.raises(SandboxUnavailable, match=said):
            sandbox_mod.covered_usr_folders("/usr/bin/python3")


def test_working_in_the_sandbox_interpreters_standard_library_is_refused_not_unisolated(monkeypatch):
    """End to end, with the interpreter the sandbox chooses here: where its standard library lies under /usr, a
    sandbox asked for bubblewrap or for auto refuses to start."""
    if sandbox_mod.find_bwrap() is None:
        pytest.skip("bubblewrap is not installed: the folders under /usr are not checked")
    python = sandbox_mod.choose_identity()[0]
    stdlib = next(Path(p) for p in sandbox_mod.interpreter_library(python)[1:] if Path(p).name.startswith("python"))
    if Path("/usr") not in stdlib.parents:
        pytest.skip(f"the sandbox's interpreter {python} has its standard library outside /usr ({stdlib})")
    monkeypatch.chdir(stdlib)
    with pytest.raises(SandboxUnavailable, match=rf"^{stdlib} is private .* holds its standard library"):
        Sandbox(Limits(), isolation="auto")


def test_the_interpreter_names_its_own_library_folders():
    """Asked of this process's base interpreter: its base prefix and standard library, as it reports them here."""
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    folders = sandbox_mod.interpreter_library(python)
    assert folders[0] == os.path.realpath(sys.base_prefix)
    assert os.path.realpath(sysconfig.get_paths()["stdlib"]) in folders


def test_a_private_folder_that_holds_the_interpreter_or_is_usr_is_refused(monkeypatch):
    """Covered, the interpreter would be gone; /usr itself cannot be covered at all: refused, naming the folder."""
    _private(monkeypatch, "/usr/src/app")
    with pytest.raises(SandboxUnavailable, match=r"^/usr/src/app is private .* /usr/src/app/\.venv/bin/python3"):
        sandbox_mod.covered_usr_folders("/usr/src/app/.venv/bin/python3")
    _private(monkeypatch, "/usr")
    with pytest.raises(SandboxUnavailable, match=r"^/usr is private"):
        sandbox_mod.covered_usr_folders("/usr/bin/python3")


def test_a_sample_sees_a_covered_folder_empty_and_cannot_write_to_it(monkeypatch, sandbox_user):
    """End to end, with /usr/share/doc standing for a checkout under /usr (a folder that exists and is not empty)."""
    if not os.listdir("/usr/share/doc"):
        pytest.skip("/usr/share/doc is empty here")
    bwrap_sandbox_or_skip(Limits())
    _private(monkeypatch, "/root", "/usr/share/doc")
    sandbox = Sandbox(Limits(), isolation="bwrap")
    assert sandbox._covered == ["/usr/share/doc"]
    listed = run_f(sandbox, "import os\ndef f():\n    return str(os.listdir('/usr/share/doc'))\n")
    assert listed.outputs == ("[]",), listed
    written = run_f(sandbox, "def f():\n    open('/usr/share/doc/x', 'w').write('x')\n    return 'ok'\n")
    assert "Read-only file system" in written.detail, written

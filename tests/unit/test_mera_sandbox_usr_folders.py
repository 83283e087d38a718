"""Private folders under ``/usr``, which bubblewrap binds whole: the checkout, the working directory or a home folder
there (the official Python image's example working directory is ``/usr/src/app``) is covered by an empty read-only
tmpfs in the sandbox, or refused where covering it would hide the interpreter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import Limits, Sandbox, SandboxUnavailable, bwrap_argv
from tests.support.mera_sandbox import bwrap_sandbox_or_skip, run_f


def _private(monkeypatch, *folders: str) -> None:
    monkeypatch.setattr(sandbox_mod, "_private_folders", lambda: [Path(f) for f in folders])


def test_a_checkout_under_usr_is_covered_by_an_empty_read_only_tmpfs(monkeypatch):
    """A checkout at /usr/src/app and the working directory inside it: one cover, the outer folder's, right after
    /usr is bound; the folders outside /usr need none (they are never bound)."""
    _private(monkeypatch, "/root", "/usr/src/app", "/usr/src/app/runs", "/home/ann", "/usr/local/share/ann")
    assert sandbox_mod.covered_usr_folders("/usr/bin/python3") == ["/usr/local/share/ann", "/usr/src/app"]
    argv = bwrap_argv("/usr/bin/python3", child_fd=3, job_fd=4, seccomp_fd=5, token="t", tmpfs_mb=8, env={},
                      interpreter_folder=None)  # fmt: skip
    usr = argv.index("--ro-bind")
    assert argv[usr:usr + 11] == [
        "--ro-bind", "/usr", "/usr",
        "--tmpfs", "/usr/local/share/ann", "--remount-ro", "/usr/local/share/ann",
        "--tmpfs", "/usr/src/app", "--remount-ro", "/usr/src/app",
    ]  # fmt: skip
    assert argv.count("--tmpfs") == 4  # the two covers, /dev and /sandbox


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

"""The code sandbox under each bubblewrap version: an option the installed one lacks is left out and its job done
another way (``--disable-userns``, 0.8.0: the seccomp filter refuses ``unshare`` and ``setns``) or its absence said
(``--size``, 0.7.0, refused by a setuid bubblewrap), never a silent fall back to no isolation; one older than the
oldest it runs under (0.5.0, ``--clearenv``) is named, with the version needed, in the fallback's warning.

A fake ``bwrap`` first on PATH stands in for an old one: it prints that version, refuses the options that version
lacks as bubblewrap does ("Unknown option"), records its command line, and runs the real bubblewrap otherwise.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import PASSED, Limits, Sandbox, SandboxUnavailable, bwrap_argv
from tests.support.mera_sandbox import bwrap_sandbox_or_skip, run_f

#: Options each stand-in refuses: those bubblewrap added after its version.
LACKS = {"0.4.0": ("--clearenv", "--size", "--disable-userns"), "0.6.1": ("--size", "--disable-userns")}


@pytest.fixture
def fake_bwrap(monkeypatch, sandbox_user):
    """``make(version)``: a fake ``bwrap`` of that version first on PATH; returns the file its last command line is
    written to (NUL-separated). In a folder of its own under /tmp, readable to ``nobody`` (the sandbox's user when
    the tests run as root), removed afterwards."""
    real = sandbox_mod.find_bwrap()
    folders = []

    def make(version: str, *, refuses: tuple[str, ...] = ()) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="fake-bwrap-"))
        folders.append(folder)
        folder.chmod(0o755)
        log = folder / "argv"
        log.touch(mode=0o666)
        log.chmod(0o666)
        cases = "|".join(refuses) or "--no-such-option-refused"
        script = folder / "bwrap"
        script.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = "--version" ]; then echo "bubblewrap {version}"; exit 0; fi\n'
            f"printf '%s\\0' \"$@\" > {log}\n"
            'for a in "$@"; do\n'
            f'  case "$a" in {cases}) echo "bwrap: Unknown option $a" >&2; exit 1;; esac\n'
            "done\n"
            f'exec {real or "/bin/false"} "$@"\n'
        )
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        return log

    yield make
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _logged(log: Path) -> list[str]:
    return log.read_bytes().decode().split("\0")[:-1]


#: The sample's ``unshare(CLONE_NEWUSER)`` and ``setns(0, 0)`` through the C library: their errno values.
NAMESPACES = (
    'import sys\nfor _m in ("ctypes", "_ctypes"):\n    sys.modules.pop(_m, None)\nimport ctypes\n'
    "def f():\n"
    "    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    unshare = libc.unshare(0x10000000) and ctypes.get_errno()\n"
    "    setns = libc.setns(0, 0) and ctypes.get_errno()\n"
    "    return f'{unshare} {setns}'\n"
)


def test_bubblewrap_0_6_runs_the_sandbox_without_the_options_it_lacks(fake_bwrap, caplog):
    """Ubuntu 22.04's 0.6.1 refused --disable-userns and --size, the probe failed, and ``auto`` ran every sample
    without isolation, telling the user to install the bubblewrap they had. Now it runs the sandbox without both:
    the seccomp filter refuses a nested user namespace (EPERM, 1, for both calls), and a warning says that /sandbox
    and /dev have no size bound."""
    bwrap_sandbox_or_skip(Limits())  # skips where bubblewrap cannot run at all
    log = fake_bwrap("0.6.1", refuses=LACKS["0.6.1"])
    with caplog.at_level(logging.WARNING, logger="eval.mera.sandbox"):
        sandbox = Sandbox(Limits(), isolation="bwrap")
    assert sandbox.isolation == "bubblewrap"
    probe = _logged(log)
    assert probe[:9] == ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--as-pid-1",
                         "--hostname", "sandbox", "--ro-bind", "/usr"]  # fmt: skip
    assert "--size" not in probe and probe.count("--tmpfs") == 2
    assert "NO size bound on /sandbox and /dev" in caplog.text and "0.6.1, older than 0.7.0 (--size)" in caplog.text
    assert sandbox.describe()["bubblewrap"] == {
        "path": str(log.with_name("bwrap")), "version": "0.6.1", "setuid": False,
        "nested_user_namespaces_refused_by": "the seccomp filter (unshare, setns)"}  # fmt: skip
    result = run_f(sandbox, NAMESPACES)
    assert result.outputs == ("1 1",), result
    assert run_f(sandbox, "def f():\n    return 'ok'\n").status == PASSED


def test_a_bubblewrap_older_than_the_oldest_supported_is_named_with_the_version_needed(fake_bwrap, caplog):
    """0.4.0 lacks --clearenv: ``bwrap`` refuses, ``auto`` falls back, and both say the version found and the one
    needed (the old warning said "Install bubblewrap", which reinstalls the same)."""
    bwrap_sandbox_or_skip(Limits())
    log = fake_bwrap("0.4.0", refuses=LACKS["0.4.0"])
    fake = log.with_name("bwrap")
    needed = f"{fake} is bubblewrap 0.4.0, older than 0.5.0, the oldest this sandbox runs under"
    with pytest.raises(SandboxUnavailable) as err:
        Sandbox(Limits(), isolation="bwrap")
    assert needed in str(err.value) and "bwrap: Unknown option --clearenv" in str(err.value)
    with caplog.at_level(logging.WARNING, logger="eval.mera.sandbox"):
        fallback = Sandbox(Limits(), isolation="auto")
    assert fallback.isolation == "none"
    assert "CODE SANDBOX WITHOUT BUBBLEWRAP (probe failed: bubblewrap 0.4.0: sandbox_error" in caplog.text
    assert needed in caplog.text and "install bubblewrap >= 0.5.0" in caplog.text


#: What ``bwrap_argv`` gives for each bubblewrap, by hand: a merged-/usr host (/bin and /lib links into /usr), an
#: interpreter under /usr, nothing to cover, an 8 MiB tmpfs (8388608 bytes).
def _expected(bwrap: str, *, disable_userns: bool, size: bool) -> list[str]:
    sized = ["--size", "8388608"] if size else []
    return [
        bwrap, "--unshare-all", "--unshare-user", *(["--disable-userns"] if disable_userns else []),
        "--die-with-parent", "--new-session", "--as-pid-1", "--hostname", "sandbox",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--proc", "/proc", *sized, "--tmpfs", "/dev",
        "--dev-bind", "/dev/null", "/dev/null", "--dev-bind", "/dev/zero", "/dev/zero",
        "--dev-bind", "/dev/full", "/dev/full", "--dev-bind", "/dev/random", "/dev/random",
        "--dev-bind", "/dev/urandom", "/dev/urandom",
        "--symlink", "/proc/self/fd", "/dev/fd", "--symlink", "/proc/self/fd/0", "/dev/stdin",
        "--symlink", "/proc/self/fd/1", "/dev/stdout", "--symlink", "/proc/self/fd/2", "/dev/stderr",
        "--dir", "/dev/shm", *sized, "--tmpfs", "/sandbox",
        "--ro-bind-data", "3", "/.mera/child.py", "--ro-bind-data", "4", "/.mera/job.json",
        "--remount-ro", "/", "--chdir", "/sandbox", "--clearenv", "--seccomp", "5", "--setenv", "HOME", "/sandbox",
        "/usr/bin/python3", "-S", "-B", "/.mera/child.py", "/.mera/job.json", "t",
    ]  # fmt: skip


@pytest.mark.parametrize(("version", "setuid", "disable_userns", "size"), [
    ("0.6.1", False, False, False),  # Ubuntu 22.04; RHEL 9 has 0.6.3
    ("0.7.0", False, False, True),
    ("0.8.0", False, True, True),
    ("0.8.0", True, True, False),  # setuid: --size refused at any version
    ("", False, True, True),  # no version printed: everything, and the probe decides
])  # fmt: skip
def test_the_command_line_has_exactly_the_options_the_installed_bubblewrap_accepts(
    fake_bwrap, monkeypatch, version, setuid, disable_userns, size
):
    log = fake_bwrap(version)
    fake = log.with_name("bwrap")
    if setuid:
        fake.chmod(0o755 | stat.S_ISUID)
    features = sandbox_mod.bwrap_features(str(fake))
    assert (features.disable_userns, features.sized_tmpfs, features.setuid) == (disable_userns, size, setuid)
    links = {"/bin": "usr/bin", "/lib": "usr/lib"}
    monkeypatch.setattr(os.path, "islink", lambda path: path in links)
    monkeypatch.setattr(os.path, "isdir", lambda path: False)
    monkeypatch.setattr(os, "readlink", lambda path: links[path])
    argv = bwrap_argv("/usr/bin/python3", child_fd=3, job_fd=4, seccomp_fd=5, token="t", tmpfs_mb=8,
                      env={"HOME": "/sandbox"}, interpreter_folder=None, covered=[], features=features)  # fmt: skip
    assert argv == _expected(str(fake), disable_userns=disable_userns, size=size)

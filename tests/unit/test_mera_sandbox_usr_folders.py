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
from eval.mera.sandbox import NOBODY, BwrapFeatures, InterpreterFolders, Limits, Sandbox, SandboxUnavailable, bwrap_argv
from tests.support.mera_sandbox import bwrap_sandbox_or_skip, run_f

#: What ``interpreter_library`` answers for Debian's /usr/bin/python3.11: its prefix and LIBDIR, its standard library,
#: and (some of) what it loads: the program loader as its executable names it, through /lib64's link and resolved.
DEBIAN_LIBRARY = InterpreterFolders(
    prefixes=("/usr", "/usr/lib/x86_64-linux-gnu"), stdlib=("/usr/lib/python3.11",),
    loaded=("/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "/usr/lib64/ld-linux-x86-64.so.2",
            "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
)  # fmt: skip
#: The official python image's /usr/local/bin/python3.11: its own prefix, the C library and loader the system's.
IMAGE_LIBRARY = InterpreterFolders(
    prefixes=("/usr/local", "/usr/local/lib"), stdlib=("/usr/local/lib/python3.11",),
    loaded=("/usr/local/lib/libpython3.11.so.1.0", "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/ld-linux-x86-64.so.2", "/usr/lib64/ld-linux-x86-64.so.2"),
)  # fmt: skip


def _private(monkeypatch, *folders: str, library: InterpreterFolders = DEBIAN_LIBRARY) -> None:
    monkeypatch.setattr(sandbox_mod, "_private_folders", lambda: [Path(f) for f in folders])
    monkeypatch.setattr(sandbox_mod, "interpreter_library", lambda python: library, raising=False)


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
    stdlib = Path(sandbox_mod.interpreter_library(python).stdlib[0])
    if Path("/usr") not in stdlib.parents:
        pytest.skip(f"the sandbox's interpreter {python} has its standard library outside /usr ({stdlib})")
    monkeypatch.chdir(stdlib)
    with pytest.raises(SandboxUnavailable, match=rf"^{stdlib} is private .* holds its standard library"):
        Sandbox(Limits(), isolation="auto")
    # inside it: covered, /usr/lib/python3.11/json hid the json module from the child, and auto ran unisolated
    monkeypatch.chdir(stdlib / "json")
    with pytest.raises(SandboxUnavailable, match=rf"^{stdlib}/json is private .* lies inside its standard library"):
        Sandbox(Limits(), isolation="auto")


def test_the_interpreter_names_its_own_library_folders():
    """Asked of this process's base interpreter: its base prefix and standard library, as it reports them here."""
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    folders = sandbox_mod.interpreter_library(python)
    assert folders.prefixes[0] == os.path.realpath(sys.base_prefix)
    assert os.path.realpath(sysconfig.get_paths()["stdlib"]) in folders.stdlib
    loader = sandbox_mod._elf_interpreter(python)
    if loader is not None:  # a dynamically linked interpreter: its loader as written, and where it resolves
        assert loader in folders.loaded and os.path.realpath(loader) in folders.loaded


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


def test_a_private_folder_inside_the_standard_library_is_refused(monkeypatch):
    """Only a folder that was or held the standard library was refused: working in /usr/lib/python3.11/json, the
    cover hid the json module (the child's json.load failed), the probe failed and auto ran with no isolation. The
    standard library's own folder, a folder in it, and a folder in its compiled modules are refused; a folder in
    the prefix elsewhere is still covered (a checkout at /usr/src/app)."""
    monkeypatch.setattr(sandbox_mod, "_reachable_by", lambda folder, uid: True)
    for folder in ("/usr/lib/python3.11/json", "/usr/lib/python3.11/lib-dynload", "/usr/lib/python3.11/a/b"):
        _private(monkeypatch, folder)
        with pytest.raises(SandboxUnavailable, match=rf"^{folder} is private .* /usr/bin/python3, and the folder "
                                                     r"lies inside its standard library \(/usr/lib/python3\.11\)"):
            sandbox_mod.covered_usr_folders("/usr/bin/python3")
    _private(monkeypatch, "/usr/src/app", "/usr/lib/python3.11-notes")
    assert sandbox_mod.covered_usr_folders("/usr/bin/python3") == ["/usr/lib/python3.11-notes", "/usr/src/app"]


def test_a_private_folder_holding_the_program_loader_or_a_loaded_library_is_refused(monkeypatch):
    """Covering /usr/lib64 hid the program loader the interpreter's executable names (/lib64 is a link to usr/lib64
    on a merged-/usr system): "bwrap: execvp /usr/bin/python3.11: No such file or directory", and auto ran with no
    isolation. So did /usr/lib on the official python image, whose interpreter lives in /usr/local but whose C
    library is the system's."""
    monkeypatch.setattr(sandbox_mod, "_reachable_by", lambda folder, uid: True)
    _private(monkeypatch, "/usr/lib64")
    with pytest.raises(SandboxUnavailable, match=r"^/usr/lib64 is private .* the folder holds a file it loads "
                                                 r"\(/usr/lib64/ld-linux-x86-64\.so\.2\)"):
        sandbox_mod.covered_usr_folders("/usr/bin/python3")
    python = "/usr/local/bin/python3.11"
    for folder, file in (("/usr/lib", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
                         ("/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
                         ("/usr/lib64", "/usr/lib64/ld-linux-x86-64.so.2")):  # fmt: skip
        _private(monkeypatch, folder, library=IMAGE_LIBRARY)
        with pytest.raises(SandboxUnavailable, match=rf"^{folder} is private .* holds a file it loads \({file}\)"):
            sandbox_mod.covered_usr_folders(python)
    # a folder beside them, or inside the loader's folder, hides nothing the interpreter loads
    _private(monkeypatch, "/usr/src/app", "/usr/lib/x86_64-linux-gnu/perl", library=IMAGE_LIBRARY)
    assert sandbox_mod.covered_usr_folders(python) == ["/usr/lib/x86_64-linux-gnu/perl", "/usr/src/app"]


def _elf(wide: bool, big_endian: bool, interpreter: bytes | None) -> bytes:
    """A minimal ELF executable: a file header, one PT_LOAD and (when given) one PT_INTERP program header, then the
    loader's name; laid out by hand from the ELF specification (64-bit: header 64 bytes, program headers 56 each,
    e_phoff at 32, e_phentsize and e_phnum at 54; 32-bit: 52, 32, at 28 and 42)."""
    import struct

    order = ">" if big_endian else "<"
    header_size, entry_size = (64, 56) if wide else (52, 32)
    entries = [(1, b"")] + ([(3, interpreter + b"\0")] if interpreter is not None else [])
    name_at = header_size + entry_size * len(entries)
    ident = b"\x7fELF" + bytes([2 if wide else 1, 2 if big_endian else 1, 1]) + bytes(9)
    if wide:
        head = ident + struct.pack(order + "HHIQQQIHHHHHH", 2, 62, 1, 0, header_size, 0, 0, header_size,
                                   entry_size, len(entries), 0, 0, 0)  # fmt: skip
    else:
        head = ident + struct.pack(order + "HHIIIIIHHHHHH", 2, 3, 1, 0, header_size, 0, 0, header_size,
                                   entry_size, len(entries), 0, 0, 0)  # fmt: skip
    body = b""
    for kind, data in entries:
        offset = name_at if data else 0
        if wide:  # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
            body += struct.pack(order + "IIQQQQQQ", kind, 4, offset, 0, 0, len(data), len(data), 1)
        else:  # p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_flags, p_align
            body += struct.pack(order + "IIIIIIII", kind, offset, 0, 0, len(data), len(data), 4, 1)
    return head + body + (interpreter + b"\0" if interpreter is not None else b"")


def test_the_program_loader_is_read_from_the_executable(tmp_path):
    """PT_INTERP, as the kernel reads it, in 64- and 32-bit, little- and big-endian files; none for a static
    executable or a file that is no ELF (a script)."""
    for wide in (True, False):
        for big_endian in (False, True):
            path = tmp_path / f"elf-{wide}-{big_endian}"
            path.write_bytes(_elf(wide, big_endian, b"/lib64/ld-linux-x86-64.so.2"))
            assert sandbox_mod._elf_interpreter(str(path)) == "/lib64/ld-linux-x86-64.so.2", (wide, big_endian)
    (tmp_path / "static").write_bytes(_elf(True, False, None))
    assert sandbox_mod._elf_interpreter(str(tmp_path / "static")) is None
    (tmp_path / "script").write_bytes(b"#!/bin/sh\nexit 0\n")
    assert sandbox_mod._elf_interpreter(str(tmp_path / "script")) is None
    assert sandbox_mod._elf_interpreter(str(tmp_path / "absent")) is None


def test_the_loader_is_named_as_written_through_its_folders_links_and_resolved(tmp_path):
    """A merged-/usr layout built in a temporary folder: lib64 -> usr/lib64, whose ld.so links to the real file in
    usr/lib/x: the three paths the kernel passes through, each of whose folders a cover would hide."""
    (tmp_path / "usr" / "lib" / "x").mkdir(parents=True)
    (tmp_path / "usr" / "lib64").mkdir()
    (tmp_path / "usr" / "lib" / "x" / "ld.so").write_bytes(b"")
    (tmp_path / "usr" / "lib64" / "ld.so").symlink_to("../lib/x/ld.so")
    (tmp_path / "lib64").symlink_to("usr/lib64")
    root = Path(os.path.realpath(tmp_path))
    assert sandbox_mod._loader_forms(f"{root}/lib64/ld.so") == [
        f"{root}/lib64/ld.so", f"{root}/usr/lib64/ld.so", f"{root}/usr/lib/x/ld.so"]


def test_a_failed_probe_with_covered_folders_names_them_in_its_remedy():
    """The remedy blamed the kernel's user namespaces alone, where an empty folder laid over part of /usr had hidden
    something the interpreter needs; it now names the covered folders and how to tell the two apart."""
    box = Sandbox.__new__(Sandbox)
    box.bwrap = BwrapFeatures(path="/usr/bin/bwrap", version=(0, 8, 0), setuid=False, disable_userns=True,
                              sized_tmpfs=True)  # fmt: skip
    box._covered = ["/usr/src/app"]
    assert box._remedy() == (
        "/usr/bin/bwrap is bubblewrap 0.8.0 (>= 0.5.0 needed), so the probe failed for the reason above: the kernel "
        "refusing user namespaces to this user, or the empty folders laid over /usr/src/app (private folders under "
        "/usr, which bubblewrap binds whole) hiding something the interpreter needs; running the toolkit from a "
        "folder outside /usr tells the two apart")
    box._covered = []
    assert box._remedy() == ("/usr/bin/bwrap is bubblewrap 0.8.0 (>= 0.5.0 needed), so the probe failed for the "
                             "reason above (the kernel refusing user namespaces to this user, for one)")

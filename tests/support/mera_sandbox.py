"""What the MERA sandbox's tests (tests/unit/test_mera_sandbox*.py, tests/integration/mera/test_mera_sandbox.py)
share."""

from __future__ import annotations


from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import (
    RUNTIME,
    TIMEOUT,
    WRONG_ANSWER,
    ExecJob,
    Limits,
    Sandbox,
)
LIMITS = Limits(timeout_s=2.0)


def bwrap_sandbox_or_skip(limits: Limits, python: str | None = None) -> Sandbox:
    """A bubblewrap sandbox; skips only where this machine cannot run bubblewrap at all (not installed, or a bare
    ``bwrap --unshare-all true`` fails as the user the sandbox runs as: no user namespaces here). Where that bare
    run works and the sandbox's own probe fails, the sandbox is broken: the test fails, never skips."""
    import os
    import subprocess

    import pytest

    try:
        return Sandbox(limits, isolation="bwrap", python=python)
    except sandbox_mod.SandboxUnavailable as err:
        broken = err
    binary = sandbox_mod.find_bwrap()
    if binary is None:
        pytest.skip("bubblewrap is not installed; `make system-packages` installs it")
    _, uid, _ = sandbox_mod.choose_identity()
    bare = subprocess.run([binary, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
                          capture_output=True, text=True, timeout=60,
                          **({"user": uid} if uid is not None and os.geteuid() == 0 else {}))
    if bare.returncode != 0:
        pytest.skip(f"bubblewrap cannot run here as uid {uid if uid is not None else os.geteuid()}: "
                    f"{bare.stderr.strip()[:200]}")
    pytest.fail(f"bubblewrap runs here, but the sandbox's own probe failed: {broken}")


#: Defines ``pipes()``: the pipes a sample holds past 0/1/2, the result channel among them (how a sample that means
#: to write to the channel finds it).
FIND_PIPES = (
    "import os, stat\n"
    "def is_pipe(fd):\n"
    "    try:\n"
    "        return stat.S_ISFIFO(os.fstat(fd).st_mode)\n"
    "    except OSError:\n"  # the descriptor listdir itself used, closed by now
    "        return False\n"
    "def pipes():\n"
    "    found = [int(fd) for fd in os.listdir('/proc/self/fd') if int(fd) > 2 and is_pipe(int(fd))]\n"
    "    assert found, 'no result pipe found'\n"
    "    return found\n"
)


def run_f(sandbox: Sandbox, program: str) -> sandbox_mod.ExecResult:
    return sandbox.run(ExecJob(program=program, entry_point="f", tests=[{}], expected=["ok"]))


# ---------------------------------------------------------------------------------------------------------------
# Escape attempts
# ---------------------------------------------------------------------------------------------------------------

#: A second copy of the builtin ``posix`` module, with none of the guard's replacements.
IMP_POSIX = (
    "import _imp, sys\n"
    "def fresh_posix():\n"
    "    p = _imp.create_builtin(sys.modules['posix'].__spec__)\n"
    "    _imp.exec_builtin(p)\n"
    "    return p\n"
)
UNBLOCK_CTYPES = 'import sys\nfor _m in ("ctypes", "_ctypes"):\n    sys.modules.pop(_m, None)\nimport ctypes\n'


ESCAPES = {
    # name: (program template, statuses that count as contained)
    "network to the host's loopback": (
        "import socket\ndef f():\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    s.sendall(b'escaped')\n    return 'ok'\n", {RUNTIME}),
    "network to the internet": (
        "import socket\ndef f():\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    return 'ok'\n",
        {RUNTIME}),
    "name resolution": (
        "import socket\ndef f():\n    socket.getaddrinfo('pypi.org', 443)\n    return 'ok'\n", {RUNTIME}),
    "read a file outside the sandbox": (
        "def f():\n    return 'ok' if open({secret!r}).read() == 'top-secret' else 'no'\n", {RUNTIME}),
    "read /etc/passwd": (
        "def f():\n    return 'ok' if 'root:' in open('/etc/passwd').read() else 'no'\n", {RUNTIME}),
    "read the project": (
        "def f():\n    return 'ok' if open({pyproject!r}).read() else 'no'\n", {RUNTIME}),
    "list home folders": (
        "import os\ndef f():\n    return 'ok' if os.listdir('/root') or os.listdir('/home') else 'no'\n", {RUNTIME}),
    "write outside the sandbox": (
        "def f():\n    open({target!r}, 'w').write('escaped')\n    return 'ok'\n", {RUNTIME}),
    "write into /usr": (
        "def f():\n    open('/usr/escaped', 'w').write('escaped')\n    return 'ok'\n", {RUNTIME}),
    "write into /": (
        "def f():\n    open('/escaped', 'w').write('escaped')\n    return 'ok'\n", {RUNTIME}),
    "fork bomb": (
        "import os\ndef f():\n    while True:\n        os.fork()\n", {RUNTIME}),
    "fork bomb through ctypes": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    libc = ctypes.CDLL(None)\n    while True:\n        libc.fork()\n", {TIMEOUT}),
    "memory bomb": (
        "def f():\n    x = bytearray(64 << 30)\n    return 'ok'\n", {RUNTIME}),
    "memory bomb, growing": (
        "def f():\n    hoard = []\n    while True:\n        hoard.append(bytearray(64 << 20))\n", {RUNTIME, TIMEOUT}),
    "infinite loop": (
        "def f():\n    while True:\n        pass\n", {TIMEOUT}),
    "os.system": (
        "import os\ndef f():\n    return 'ok' if os.system('touch {target}') == 0 else 'no'\n", {RUNTIME}),
    "posix.system": (
        "import posix\ndef f():\n    return 'ok' if posix.system('touch {target}') == 0 else 'no'\n", {RUNTIME}),
    "system() through ctypes": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    rc = ctypes.CDLL(None).system(b'touch {target} && test -e {target}')\n"
        "    return 'ok' if rc == 0 else 'no'\n", {WRONG_ANSWER}),
    "subprocess": (
        "def f():\n    import subprocess\n    subprocess.run(['touch', {target!r}], check=True)\n    return 'ok'\n",
        {RUNTIME}),
    "ctypes": (
        "def f():\n    import ctypes\n    ctypes.string_at(0)\n    return 'ok'\n", {RUNTIME}),
    "ctypes segfault past the guard": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    ctypes.string_at(0)\n    return 'ok'\n", {RUNTIME}),
    "signal the parent": (
        "import os, signal\ndef f():\n    os.kill({pid}, signal.SIGUSR1)\n    return 'ok'\n", {RUNTIME}),
    "signal the parent's group": (
        "import os, signal\ndef f():\n    os.killpg({pgid}, signal.SIGUSR1)\n    return 'ok'\n", {RUNTIME}),
    "signal the parent through ctypes": (
        "def f():\n" + "".join("    " + ln + "\n" for ln in UNBLOCK_CTYPES.splitlines())
        + "    libc = ctypes.CDLL(None)\n"
        "    return 'ok' if libc.kill({pid}, 10) == 0 or libc.kill(-1, 10) == 0 else 'no'\n", {WRONG_ANSWER}),
    "exit before reporting": (
        "import os\ndef f():\n    os._exit(0)\n", {RUNTIME}),
    # The guard replaces os.fork and posix.fork, but a fresh copy of the builtin `posix`
    # module made through `_imp` has the real fork; only the kernel (seccomp) refuses it.
    "fork through a posix module re-created by _imp": (
        IMP_POSIX + "def f():\n    p = fresh_posix()\n    pid = p.fork()\n    if pid == 0:\n        p._exit(0)\n"
        "    p.waitpid(pid, 0)\n    return 'ok'\n", {RUNTIME}),
}  # fmt: skip


def as_another_user() -> tuple[list[str], str]:
    """How to start a supervisor that is not root: the command prefix and its interpreter; skips where neither this
    user nor ``nobody`` through runuser can."""
    import os
    import shutil
    import sys
    from pathlib import Path

    import pytest

    if os.geteuid() != 0:
        return [], sys.executable
    python, uid, _ = sandbox_mod.choose_identity()
    if uid is None or shutil.which("runuser") is None:
        pytest.skip("root without runuser or an interpreter nobody can run")
    source = Path(sandbox_mod.__file__).resolve()
    if not (all(p.stat().st_mode & 0o001 for p in source.parents) and source.stat().st_mode & 0o004):
        pytest.skip("nobody cannot read the repository")
    return ["runuser", "-u", "nobody", "--"], python

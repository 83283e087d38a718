"""What a build of a released ``-r`` judge's views (``serve.released``) leaves beside them when it does not finish:
nothing once SIGTERM ends it, and what a killed build left is swept by the next one. Tiny checkpoints, no vLLM."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.released_r_checkpoint import released_r

REPO = Path(__file__).resolve().parents[2]

#: Builds the views of the checkpoint in argv[1], saying "building" once its scratch folder is written into, then
#: blocked on stdin, which the test never writes (until the test's SIGTERM), as judge-serve's main() builds before it
#: installs any signal handler.
_SLOW_BUILD = """
import sys
import serve.released as released
real = released._write_view
def slow(*args, **kwargs):
    print("building", flush=True)
    sys.stdin.readline()
    return real(*args, **kwargs)
released._write_view = slow
released.prepare_released_regression(sys.argv[1])
"""


def _dot_entries(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if entry.name.startswith("."))


def test_sigterm_during_the_build_removes_its_scratch_folder_and_still_ends_the_process(tmp_path):
    """scancel's SIGTERM while the views are built: its default action ended judge-serve before the clean-up, and
    the scratch folder (a rewritten head shard, gigabytes for a 7B) stayed in the checkpoint's folder for good.
    Now the folder is removed and the process still ends by SIGTERM (status -15), as it would have."""
    root = released_r(tmp_path / "r")
    child = subprocess.Popen([sys.executable, "-c", _SLOW_BUILD, str(root)], cwd=REPO, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "building"
        assert [name.split("-")[1] for name in _dot_entries(root)] == ["building"]
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()
    assert _dot_entries(root) == [] and not (root / "pollux_serve_views").exists()


#: Builds the views of the checkpoint in argv[1] under the caller's SIGTERM disposition argv[2] ("ignore": SIG_IGN;
#: "handler": its own, exiting 143), saying "building" once its scratch folder is written into, then waiting for a
#: line on stdin (after the test's SIGTERM); "finally" from the caller's own finally block.
_CALLERS_BUILD = """
import signal, sys
import serve.released as released
if sys.argv[2] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *_: (print("handler", flush=True), sys.exit(143)))
real = released._write_view
def paused(*args, **kwargs):
    print("building", flush=True)
    sys.stdin.readline()
    return real(*args, **kwargs)
released._write_view = paused
try:
    print("built" if released.prepare_released_regression(sys.argv[1]).built else "not built", flush=True)
finally:
    print("finally", flush=True)
"""


def _build_signalled(root: Path, disposition: str) -> tuple[int, str]:
    """Run ``_CALLERS_BUILD``, send SIGTERM once it builds, then let it go on: its exit status and its output."""
    child = subprocess.Popen([sys.executable, "-c", _CALLERS_BUILD, str(root), disposition], cwd=REPO,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "building\n"
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate("go on\n" * 2, timeout=60)
        return child.returncode, "building\n" + out
    finally:
        child.kill()
        child.wait()


def test_a_build_under_an_ignored_sigterm_goes_on_and_under_a_callers_handler_unwinds_through_it(tmp_path):
    """The clean-up on SIGTERM replaced whatever the caller had set: an ignored SIGTERM (nohup-like wrappers) ended
    the process (status -15) in the middle of the build, and a caller's own handler (a library caller, bench/serve.py
    exiting 143 so that its finally blocks stop its servers) was skipped, the process killed by the signal again.
    Now an ignored SIGTERM leaves the build to finish; a caller's handler runs, its exit unwinds through the build
    (the scratch folder removed) and through the caller's finally, status 143."""
    ignoring = released_r(tmp_path / "ignoring")
    assert _build_signalled(ignoring, "ignore") == (0, "building\nbuilding\nbuilt\nfinally\n")  # causal, classifier
    assert _dot_entries(ignoring) == [] and (ignoring / "pollux_serve_views" / "pollux_views.json").is_file()

    handling = released_r(tmp_path / "handling")
    assert _build_signalled(handling, "handler") == (143, "building\nhandler\nfinally\n")
    assert _dot_entries(handling) == [] and not (handling / "pollux_serve_views").exists()


def test_the_next_build_sweeps_what_a_killed_build_left_and_spares_one_that_runs(tmp_path):
    """A build killed outright (SIGKILL, the OOM killer) cleans up nothing: the next build of the same views removes
    its scratch folder, which no process holds locked any more and nothing has changed in for an hour, and old views
    renamed aside but never removed; a scratch folder another build holds (locked) is left to it, and so is a fresh
    one another machine made (a shared filesystem may keep its locks per machine)."""
    from serve.released import _machine, prepare_released_regression

    root = released_r(tmp_path / "r")
    here = _machine()
    abandoned = _scratch(root / f".pollux_serve_views-building-{here}_4242_0badf00d", hours_unchanged=2)
    running = _scratch(root / f".pollux_serve_views-building-{here}_4343_feedface", hours_unchanged=2)
    elsewhere = _scratch(root / f".pollux_serve_views-building-{here}-2_4242_0badf00d")  # machine "<here>-2"
    stale = _scratch(root / ".pollux_serve_views-stale-4242-0badf00d")
    held = os.open(running, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        views = prepare_released_regression(root)
        assert views.built and _dot_entries(root) == sorted([running.name, elsewhere.name])
        assert not abandoned.exists() and not stale.exists()
    finally:
        os.close(held)
    assert not prepare_released_regression(root).built  # reused: the build that no longer holds its lock is swept
    assert _dot_entries(root) == [elsewhere.name]


#: Builds the views of the checkpoint in argv[1] under a file-size limit no shard fits in, as a full disk or a quota
#: fails the write of the rewritten head shard, and prints what resolve_layout refused it with.
_FULL_DISK_BUILD = """
import resource, signal, sys
from serve.layout import LayoutError, resolve_layout
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails (EFBIG) instead of the signal ending the process
resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
try:
    resolve_layout(sys.argv[1])
except LayoutError as err:
    print(err)
"""


def test_a_write_the_disk_refuses_is_one_line_naming_the_file_and_leaves_nothing(tmp_path):
    """safetensors' own error on a write that fails (a full disk, a quota, a file-size limit) is no OSError:
    judge-serve ended in its traceback. Now it is one line naming the file, the scratch folder removed. The error
    keeps its errno: safetensors' own text holds "File too large" and the path too, so only the errno tells the
    mapped OSError from the fallback that keeps safetensors' words (a release that worded the error otherwise)."""
    root = released_r(tmp_path / "r")
    done = subprocess.run([sys.executable, "-c", _FULL_DISK_BUILD, str(root)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.strip()
    assert "\n" not in said and f"[Errno {errno.EFBIG}] File too large" in said, said
    assert "not written" not in said, said
    assert "/shared/model-00002-of-00002.safetensors" in said, said
    assert _dot_entries(root) == [] and not (root / "pollux_serve_views").exists()


def _scratch(folder: Path, hours_unchanged: float = 0.0) -> Path:
    """A scratch folder as a build leaves it, everything in it last changed ``hours_unchanged`` ago."""
    (folder / "shared").mkdir(parents=True)
    (folder / "shared" / "head.safetensors").write_bytes(b"\0" * 64)
    # a view's link into the scratch folder's own shared/ subfolder, as serve.released lays the views out
    os.symlink("../shared/head.safetensors", folder / "link")
    if hours_unchanged:
        then = time.time() - hours_unchanged * 3600
        for path in (folder / "link", folder / "shared" / "head.safetensors", folder / "shared", folder):
            os.utime(path, (then, then), follow_symlinks=False)
    return folder


def test_scratch_folders_are_swept_only_unlocked_and_unchanged_for_an_hour_whoever_named_them(
        tmp_path, monkeypatch):
    """Scratch folders named after the kernel's boot id ("node" here), not the hostname a container gets anew on each
    run, parsed whole (machine "node"'s sweep once took machine "node_7"'s folders as its own, a prefix). An unlocked
    one of this kernel was swept at once, as if its lock were seen here: two containers on one kernel mounting the
    cache each themselves (a FUSE sidecar per pod, NFS per network namespace) share the boot id but not their locks,
    and a running build of the other one was removed. Every folder a build names, this kernel's, another machine's,
    an older judge-serve's "-building-<pid>-<hex>", a "-making-" one, now goes once unlocked and unchanged for an hour
    (2 h here), never sooner (5 min here, or just made), never while locked."""
    import serve.released
    from serve.released import prepare_released_regression

    boot_id = Path("/proc/sys/kernel/random/boot_id")
    if boot_id.exists():  # every container on this kernel reads the same
        assert serve.released._machine() == boot_id.read_text().strip()
    monkeypatch.setattr(serve.released, "_machine", lambda: "node", raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "node")  # what named the folders before the boot id did
    root = released_r(tmp_path / "r")
    prefix = ".pollux_serve_views-"
    ours_running = _scratch(root / f"{prefix}building-node_4242_0badf00d")
    ours_gone = _scratch(root / f"{prefix}building-node_4141_0badf00d", hours_unchanged=2)
    node_7_running = _scratch(root / f"{prefix}building-node_7_4242_0badf00d", hours_unchanged=5 / 60)
    node_7_gone = _scratch(root / f"{prefix}building-node_7_4343_0badf00d", hours_unchanged=2)
    old_format_recent = _scratch(root / f"{prefix}building-4242-feedface", hours_unchanged=5 / 60)
    old_format_gone = _scratch(root / f"{prefix}building-4343-feedface", hours_unchanged=2)
    making_recent = _scratch(root / f"{prefix}making-node_4444_0badf00d", hours_unchanged=5 / 60)
    making_gone = _scratch(root / f"{prefix}making-node_4545_0badf00d", hours_unchanged=2)
    locked_gone = _scratch(root / f"{prefix}building-e2e1_4646_0badf00d", hours_unchanged=2)
    not_ours = _scratch(root / f"{prefix}building-by-hand", hours_unchanged=2)
    held = os.open(locked_gone, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert prepare_released_regression(root).built
    finally:
        os.close(held)
    assert _dot_entries(root) == sorted(folder.name for folder in (
        ours_running, node_7_running, old_format_recent, making_recent, locked_gone, not_ours))
    assert [folder.exists() for folder in (ours_gone, node_7_gone, old_format_gone, making_gone)] == [False] * 4


def test_a_build_whose_lock_a_sweep_holds_for_a_moment_waits_for_it_and_builds_locked(tmp_path, monkeypatch):
    """A sweep (another judge-serve starting) locks a fresh "-making-" folder for the moment it takes to see it is
    fresh. The build tried its lock once (LOCK_NB) and took the refusal for a filesystem without locks: it built
    unlocked, and a sweep then removed the running build. Now it waits for the lock (a sweep holding it here lets go
    as soon as it is waited for) and builds locked: another process's try on its folder is refused."""
    import serve.released as released

    real_flock = fcntl.flock
    base = tmp_path / "views"
    calls = []

    def flock_meeting_a_sweep(fd, operation):
        if not calls:  # the build's own lock of its "-making-" folder, while a sweep holds it
            sweep = os.open(next(tmp_path.glob(".views-making-*")), os.O_RDONLY)
            real_flock(sweep, fcntl.LOCK_EX | fcntl.LOCK_NB)
            calls.append(operation)
            try:
                if operation & fcntl.LOCK_NB:
                    return real_flock(fd, operation)  # refused: the sweep holds it
            finally:
                os.close(sweep)  # the sweep finds it fresh and lets go
        return real_flock(fd, operation)

    monkeypatch.setattr(released.fcntl, "flock", flock_meeting_a_sweep)
    with released._building(base) as scratch:
        monkeypatch.setattr(released.fcntl, "flock", real_flock)
        other = os.open(scratch, os.O_RDONLY)
        try:
            refused = False
            try:
                real_flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                refused = True
        finally:
            os.close(other)
        assert calls == [fcntl.LOCK_EX] and refused
    assert _dot_entries(tmp_path) == []


def test_a_filesystem_without_locks_builds_unlocked_and_any_other_lock_failure_is_an_error(tmp_path, monkeypatch):
    """Only what flock answers on a filesystem that takes no locks (ENOLCK: NFS without locking) lets the build go on
    unlocked; any other failure ends it, its scratch folder removed."""
    import errno

    import serve.released as released

    def flock_failing(code):
        def flock(fd, operation):
            raise OSError(code, os.strerror(code))
        return flock

    # ENOLCK: NFS without locking; ENOSYS: Lustre mounted noflock; EBADF: NFS's POSIX-lock emulation of flock on a
    # directory's read-only descriptor (each stopped judge-serve when only the first three were let through)
    for code in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.EBADF):
        monkeypatch.setattr(released.fcntl, "flock", flock_failing(code))
        assert released.prepare_released_regression(released_r(tmp_path / f"nolock-{code}")).built
    monkeypatch.setattr(released.fcntl, "flock", flock_failing(errno.EIO))
    failing = released_r(tmp_path / "failing")
    try:
        released.prepare_released_regression(failing)
        raised = None
    except OSError as err:
        raised = err.errno
    assert raised == errno.EIO and _dot_entries(failing) == [] and not (failing / "pollux_serve_views").exists()


def test_a_scratch_folder_removed_under_the_build_is_an_error_and_views_with_dangling_links_are_rebuilt(
        tmp_path, monkeypatch):
    """A scratch folder removed while its views were built (a sweep that took the build for abandoned) was made again
    by the views' mkdir(parents=True): views whose links into the removed shared/ dangled were stamped and placed,
    and every later start reused them (the stamp check read only the two config.json files). Now the build fails,
    one line naming the folder, nothing placed; and placed views with a dangling link are rebuilt, not reused."""
    import serve.released as released

    root = released_r(tmp_path / "r")
    real_view = released._write_view

    def swept_meanwhile(root_, scratch, kind, *args):
        if kind == "causal":
            shutil.rmtree(scratch)
        return real_view(root_, scratch, kind, *args)

    monkeypatch.setattr(released, "_write_view", swept_meanwhile)
    try:
        released.prepare_released_regression(root)
        message = None
    except OSError as err:
        message = str(err)
    assert message is not None and message.startswith(f"{root}/.pollux_serve_views-building-")
    assert "the views' scratch folder was removed while they were built" in message
    assert _dot_entries(root) == [] and not (root / "pollux_serve_views").exists()

    monkeypatch.setattr(released, "_write_view", real_view)
    views = released.prepare_released_regression(root)
    (views.base / "shared" / released.HEAD_FILE).unlink()  # the classifier view's link to it dangles now
    assert released.prepare_released_regression(root).built
    assert (views.classifier / released.HEAD_FILE).exists()
    assert not released.prepare_released_regression(root).built


def test_what_the_sweep_did_is_logged_once_removed_or_not(tmp_path, monkeypatch, caplog):
    """An abandoned folder of another user, readable here but not removable, was logged "removing ..." at every start
    while its removal failed silently. The sweep now says what happened: removed, or could not be removed and why."""
    import errno
    import logging

    from serve.released import _sweep_abandoned

    removable = _scratch(tmp_path / ".views-building-node_4242_0badf00d", hours_unchanged=2)
    others = _scratch(tmp_path / ".views-building-node_4343_0badf00d", hours_unchanged=2)
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        if os.path.basename(path) == "head.safetensors" and kwargs.get("dir_fd") is not None:
            if os.path.samefile(os.readlink(f"/proc/self/fd/{kwargs['dir_fd']}"), others / "shared"):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    with caplog.at_level(logging.INFO, logger="judge_serve.released"):
        _sweep_abandoned(tmp_path / "views")
    said = sorted((r.levelname, r.getMessage()) for r in caplog.records if r.name == "judge_serve.released")
    assert said == [
        ("INFO", f"removed {removable}, left by a build of the views that did not finish"),
        ("WARNING", f"could not remove {others}, left by a build of the views that did not finish "
                    f"({others}/shared/head.safetensors: Permission denied); remove it by hand"),
    ]
    assert not removable.exists() and (others / "shared" / "head.safetensors").exists()

"""What a build of a released ``-r`` judge's views (``serve.released``) leaves beside them when it does not finish:
nothing once SIGTERM ends it, and what a killed build left is swept by the next one. Tiny checkpoints, no vLLM."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.released_r_checkpoint import released_r

REPO = Path(__file__).resolve().parents[2]

#: Builds the views of the checkpoint in argv[1], saying "building" once its scratch folder is written into, then
#: waiting there (for the test's SIGTERM), as judge-serve's main() does before it installs any signal handler.
_SLOW_BUILD = """
import sys, time
import serve.released as released
real = released._write_view
def slow(*args, **kwargs):
    print("building", flush=True)
    time.sleep(60)
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
    child = subprocess.Popen([sys.executable, "-c", _SLOW_BUILD, str(root)], cwd=REPO, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "building"
        assert [name.split("-")[1] for name in _dot_entries(root)] == ["building"]
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()
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
    its scratch folder, which no process holds locked any more, and old views renamed aside but never removed; a
    scratch folder another build holds (locked) is left to it, and so is a fresh one another machine made (a shared
    filesystem may keep its locks per machine)."""
    from serve.released import _machine, prepare_released_regression

    root = released_r(tmp_path / "r")
    here = _machine()
    abandoned = root / f".pollux_serve_views-building-{here}_4242_0badf00d"
    running = root / f".pollux_serve_views-building-{here}_4343_feedface"
    elsewhere = root / f".pollux_serve_views-building-{here}-2_4242_0badf00d"  # machine "<here>-2"
    stale = root / ".pollux_serve_views-stale-4242-0badf00d"
    for folder in (abandoned, running, elsewhere, stale):
        (folder / "shared").mkdir(parents=True)
        (folder / "shared" / "model-00001-of-00002.safetensors").write_bytes(b"\0" * 1024)
    held = os.open(running, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        views = prepare_released_regression(root)
        assert views.built and _dot_entries(root) == sorted([running.name, elsewhere.name])
    finally:
        os.close(held)
    assert not prepare_released_regression(root).built  # reused: the build that no longer holds its lock is swept
    assert _dot_entries(root) == [elsewhere.name]


def _scratch(folder: Path, hours_unchanged: float = 0.0) -> Path:
    """A scratch folder as a build leaves it, everything in it last changed ``hours_unchanged`` ago."""
    (folder / "shared").mkdir(parents=True)
    (folder / "shared" / "head.safetensors").write_bytes(b"\0" * 64)
    os.symlink("../shared/head.safetensors", folder / "link")
    if hours_unchanged:
        then = time.time() - hours_unchanged * 3600
        for path in (folder / "link", folder / "shared" / "head.safetensors", folder / "shared", folder):
            os.utime(path, (then, then), follow_symlinks=False)
    return folder


def test_scratch_folders_are_told_apart_by_their_whole_machine_name_and_others_swept_only_after_an_hour(
        tmp_path, monkeypatch):
    """Scratch folders named after the kernel's boot id ("node" here), not the hostname a container gets anew on each
    run: an unlocked one of this kernel is swept at once. Machine "node"'s sweep matched machine "node_7"'s folders
    as its own (a prefix) and removed a build running there; and a folder it could not vouch for (another machine's,
    this one's before a reboot or under another container hostname, an older judge-serve's "-building-<pid>-<hex>",
    a "-making-" one) was never swept. Those go now once unlocked and unchanged for an hour (2 h here), never sooner
    (5 min here), never while locked."""
    import serve.released
    from serve.released import prepare_released_regression

    boot_id = Path("/proc/sys/kernel/random/boot_id")
    if boot_id.exists():  # every container on this kernel reads the same
        assert serve.released._machine() == boot_id.read_text().strip()
    monkeypatch.setattr(serve.released, "_machine", lambda: "node", raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "node")  # what named the folders before the boot id did
    root = released_r(tmp_path / "r")
    prefix = ".pollux_serve_views-"
    ours = _scratch(root / f"{prefix}building-node_4242_0badf00d")
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
    assert ours.name not in _dot_entries(root)
    assert _dot_entries(root) == sorted(folder.name for folder in (
        node_7_running, old_format_recent, making_recent, locked_gone, not_ours))
    assert [folder.exists() for folder in (node_7_gone, old_format_gone, making_gone)] == [False, False, False]

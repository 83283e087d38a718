"""What a build of a released ``-r`` judge's views (``serve.released``) leaves beside them when it does not finish:
nothing once SIGTERM ends it, and what a killed build left is swept by the next one. Tiny checkpoints, no vLLM."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
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


def test_the_next_build_sweeps_what_a_killed_build_left_and_spares_one_that_runs(tmp_path):
    """A build killed outright (SIGKILL, the OOM killer) cleans up nothing: the next build of the same views removes
    its scratch folder, which no process holds locked any more, and old views renamed aside but never removed; a
    scratch folder another build holds (locked) is left to it, and so is one another machine made (a shared
    filesystem may keep its locks per machine)."""
    from serve.released import prepare_released_regression

    root = released_r(tmp_path / "r")
    host = socket.gethostname()
    abandoned = root / f".pollux_serve_views-building-{host}_4242_0badf00d"
    running = root / f".pollux_serve_views-building-{host}_4343_feedface"
    elsewhere = root / f".pollux_serve_views-building-{host}-2_4242_0badf00d"  # machine "<host>-2"
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

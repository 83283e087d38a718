"""A sample's temporary folder without bubblewrap is removed whatever modes the sample left inside it
(``eval.mera.sandbox.remove_sample_folder``), and one that cannot be is named in a warning.

Root removes a folder of mode 000 anyway, so only another user shows the folder left behind: each scenario runs in a
supervisor process of its own, as ``nobody`` (through runuser) when the tests run as root, else as this user."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


from tests.support.mera_sandbox import as_another_user

REPO = Path(__file__).resolve().parents[2]

#: A sample that locks up its working folder: a folder of mode 000 holding a file and a folder, and a folder of mode
#: 0500 holding a file (listable, not writable: its file cannot be unlinked). Returns the folder.
LOCK_UP = (
    "import os\n"
    "def f():\n"
    "    os.makedirs('locked/inner')\n"
    "    open('locked/x', 'w').close()\n"
    "    os.chmod('locked', 0)\n"
    "    os.mkdir('read_only')\n"
    "    open('read_only/y', 'w').close()\n"
    "    os.chmod('read_only', 0o500)\n"
    "    return os.getcwd()\n"
)

#: The supervisor runs one such sample without bubblewrap; prints the folder and whether it is still there.
SAMPLE_SCENARIO = """
import json, logging, os, sys
sys.path.insert(0, {repo!r})
logging.basicConfig(level=logging.WARNING)
from eval.mera.sandbox import ExecJob, Limits, Sandbox
job = ExecJob(program={program!r}, entry_point="f", tests=[{{}}], expected=["the folder"])
result = Sandbox(Limits(timeout_s=2.0), isolation="none").run(job)
folder = result.outputs[0]
print("RESULT", json.dumps({{"folder": folder, "left": folder is not None and os.path.lexists(folder),
                            "status": result.status, "detail": result.detail}}))
"""

#: A folder whose parent (standing in for the host's temporary folder) is 0500: the folder cannot go, what lay inside
#: it can. Prints the parent's mode afterwards and what is left.
PARENT_SCENARIO = """
import json, logging, os, shutil, sys, tempfile
sys.path.insert(0, {repo!r})
logging.basicConfig(level=logging.WARNING)
from eval.mera.sandbox import remove_sample_folder
parent = tempfile.mkdtemp(prefix="mera-cleanup-")
folder = os.path.join(parent, "mera-sbx-test")
os.makedirs(os.path.join(folder, "locked"))
open(os.path.join(folder, "locked", "x"), "w").close()
os.chmod(os.path.join(folder, "locked"), 0)
os.chmod(parent, 0o500)
try:
    remove_sample_folder(folder)
    print("RESULT", json.dumps({{"folder": folder, "parent_mode": os.stat(parent).st_mode & 0o777,
                                "folder_left": os.path.isdir(folder),
                                "locked_left": os.path.lexists(os.path.join(folder, "locked"))}}))
finally:
    os.chmod(parent, 0o700)
    shutil.rmtree(parent, ignore_errors=True)
"""


def _supervise(scenario: str) -> tuple[dict, str]:
    """Run ``scenario`` as a user other than root; its ``RESULT`` line and its stderr (the log)."""
    prefix, python = as_another_user()
    done = subprocess.run([*prefix, python, "-B", "-c", scenario.format(repo=str(REPO), program=LOCK_UP)],
                          capture_output=True, text=True, timeout=300, cwd="/", stdin=subprocess.DEVNULL)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, done.stderr[-2000:]
    return json.loads(line.removeprefix("RESULT ")), done.stderr


def test_a_sample_that_locks_its_folders_leaves_nothing_behind(sandbox_user):
    """rmtree(ignore_errors=True) left the sample's folder (and its files) in the host's temporary folder."""
    found, log = _supervise(SAMPLE_SCENARIO)
    assert os.path.basename(found["folder"] or "").startswith("mera-sbx-"), found
    assert found["left"] is False
    assert "could not remove" not in log


def test_a_folder_that_cannot_be_removed_is_named_and_its_parent_left_alone(sandbox_user):
    """The folder's own parent is never unlocked (it is the host's temporary folder): a folder the parent's mode keeps
    from being removed stays, what lay inside it goes, and the warning names it."""
    found, log = _supervise(PARENT_SCENARIO)
    assert (found["parent_mode"], found["folder_left"], found["locked_left"]) == (0o500, True, False)
    assert f"could not remove the sample's temporary folder {found['folder']}" in log

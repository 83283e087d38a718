"""The code sandbox without bubblewrap: a sample cannot read its supervisor's environment (its API key), and the
fallback's warning says as whom the sample runs and what it can reach."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path


from tests.support.mera_sandbox import as_another_user
from eval.mera.sandbox import Sandbox

REPO = Path(__file__).resolve().parents[2]

#: A supervisor that runs one sample without bubblewrap; the sample lists the processes whose environment shows the
#: marker, which only the supervisor's holds. Run as a user other than root: root's environ is root's alone.
ENVIRON_PROBE = """
import sys
sys.path.insert(0, {repo!r})
from eval.mera.sandbox import ExecJob, Sandbox
program = '''
import os
def f():
    found = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                if {marker!r}.encode() in open('/proc/' + pid + '/environ', 'rb').read():
                    found.append(pid)
            except OSError:
                pass
    return str(found)
'''
result = Sandbox(isolation="none").run(ExecJob(program=program, entry_point="f", tests=[{{}}], expected=["[]"]))
print("SAMPLE", result.status, result.outputs, result.detail)
"""


def test_without_bubblewrap_a_sample_cannot_read_its_supervisors_environment(sandbox_user):
    """A sample without bubblewrap runs as the supervisor's own user (not root) and sees the host's /proc: it read
    the supervisor's /proc/<pid>/environ, and with it the API key. The supervisor is now not dumpable, so its
    environ is root's."""
    prefix, python = as_another_user()
    marker = "MERA-KEY-" + secrets.token_hex(6)
    done = subprocess.run(
        [*prefix, "env", f"OPENAI_API_KEY={marker}", python, "-B", "-c",
         ENVIRON_PROBE.format(repo=str(REPO), marker=marker)],
        capture_output=True, text=True, timeout=300, cwd="/", stdin=subprocess.DEVNULL,
    )  # fmt: skip
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("SAMPLE ")), None)
    assert line is not None, done.stderr[-2000:]
    assert line.startswith("SAMPLE passed"), line  # the sample found no process holding the key
    assert "this process's own environment unreadable to it" in done.stderr


def test_the_fallback_warning_says_as_whom_the_sample_runs_and_what_it_can_reach(caplog):
    with caplog.at_level("WARNING", logger="eval.mera.sandbox"):
        Sandbox(isolation="none")
    text = " ".join(caplog.text.split())
    for part in ("CODE SANDBOX WITHOUT BUBBLEWRAP", "read and write whatever that user can",
                 "undo the in-process guard", "--sandbox bwrap"):  # fmt: skip
        assert part in text, part
    assert ("as uid 65534 (nobody)" in text or "as ROOT" in text) if os.geteuid() == 0 else "as this user" in text

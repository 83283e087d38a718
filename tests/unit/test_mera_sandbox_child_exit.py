"""The sandbox's child exits by itself once it has reported "done", even when the sample left a non-daemon thread
running: the interpreter's exit joined such threads, and the supervisor waited its whole grace before the kill, on
every such sample. The supervisor's ``_stop`` is wrapped to record whether the process had ended by itself."""

from __future__ import annotations

import subprocess

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import PASSED, ExecJob, Sandbox
from tests.support.mera_sandbox import LIMITS, bwrap_sandbox_or_skip

# A bound on the wait, so that a child that never exits fails the test instead of hanging it; a passing test never
# waits it out.
_BOUND = 30.0

#: A sample that starts a non-daemon thread which never ends, and answers.
LINGERING_THREAD = (
    "import threading\n"
    "def f():\n"
    "    threading.Thread(target=threading.Event().wait).start()\n"
    "    return 1\n"
)


@pytest.mark.parametrize("isolation", ["none", "bwrap"])
def test_the_child_exits_by_itself_after_done_despite_a_lingering_thread(monkeypatch, sandbox_user, isolation):
    sandbox = bwrap_sandbox_or_skip(LIMITS) if isolation == "bwrap" else Sandbox(LIMITS, isolation="none")
    real_stop, ended_by_itself = sandbox_mod._stop, []

    def recording_stop(proc: subprocess.Popen, grace_s: float) -> None:
        try:
            proc.wait(timeout=_BOUND)
            ended_by_itself.append(proc.returncode)
        except subprocess.TimeoutExpired:
            ended_by_itself.append(None)
        real_stop(proc, grace_s=0.0)

    monkeypatch.setattr(sandbox_mod, "_stop", recording_stop)
    result = sandbox.run(ExecJob(program=LINGERING_THREAD, entry_point="f", tests=[{}], expected=["1"]))
    assert (result.status, result.stopped_by, ended_by_itself) == (PASSED, "", [0])

"""``Sandbox``'s bubblewrap probe under ``isolation="auto"``: retried once, and falling back to no isolation only where
bubblewrap itself refused to run or is too old, never for a probe that missed its start-up time on a loaded machine
or whose own child failed. Refusals and failures come from a fake ``bwrap`` first on PATH, run by the real probe
and supervisor, so the detail read is the one ``Sandbox._supervise`` writes; only the start-up timeouts, which no
process makes happen without waiting, come from a scripted probe runner (``Sandbox._run_bwrap``)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import PASSED, SANDBOX_ERROR, BwrapFeatures, ExecResult, Sandbox, SandboxUnavailable
from tests.support.mera_sandbox import LIMITS

#: bubblewrap's own words where the kernel gives this user no user namespace (containers/bubblewrap ``bubblewrap.c``).
NO_NAMESPACE = ("bwrap: No permissions to create new namespace, likely because the kernel does not allow "
                "non-privileged user namespaces.")

#: What ``Sandbox._supervise`` returns for a probe not ready within ``startup_s`` (``outcome_of``'s words).
STARTUP_TIMEOUT = ExecResult(SANDBOX_ERROR, "the sandbox did not start in time (exit -9): ", (None,), 15.0, "startup")
OK = ExecResult(PASSED, "", ("1",), 0.1, "", 3, (1,))


@pytest.fixture
def scripted_probe(monkeypatch):
    """Makes the probe's runner return the given results in turn; returns the list of calls made."""
    calls: list[object] = []
    monkeypatch.setattr(sandbox_mod, "find_bwrap", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox_mod, "bwrap_features", lambda path: BwrapFeatures(
        path=path, version=(0, 8, 0), setuid=False, disable_userns=True, sized_tmpfs=True))
    monkeypatch.setattr(sandbox_mod, "interpreter_bind", lambda python: None)
    monkeypatch.setattr(sandbox_mod, "covered_usr_folders", lambda python, uid: [])

    def script(*results: ExecResult) -> list[object]:
        answers = iter(results)

        def run_bwrap(self, job):
            calls.append(job)
            return next(answers)

        monkeypatch.setattr(Sandbox, "_run_bwrap", run_bwrap)
        return calls

    return script


def test_a_probe_that_missed_its_startup_once_is_retried_and_isolates(scripted_probe):
    """The first probe missed startup_s (a loaded machine), the second ran: the run is isolated, not every sample run
    without bubblewrap on the one miss with only a log warning."""
    calls = scripted_probe(STARTUP_TIMEOUT, OK)
    sandbox = Sandbox(LIMITS, isolation="auto")
    assert (sandbox.isolation, sandbox.unavailable_reason, len(calls)) == ("bubblewrap", "", 2)


def test_a_probe_that_missed_its_startup_twice_refuses_to_run_unisolated(scripted_probe):
    """A working bubblewrap whose probe missed its start-up twice (a loaded machine) is no reason to run untrusted
    code without isolation: auto raises, saying a rerun may pass and naming the explicit choice."""
    calls = scripted_probe(STARTUP_TIMEOUT, STARTUP_TIMEOUT)
    with pytest.raises(SandboxUnavailable, match=r"did not start in time, tried twice \(probe failed: .*sandbox none"):
        Sandbox(LIMITS, isolation="auto")
    assert len(calls) == 2


@pytest.fixture
def fake_bwrap(monkeypatch, sandbox_user):
    """``make(version, stderr)``: a fake ``bwrap`` of that version first on PATH that writes ``stderr`` and exits 1
    for anything but ``--version``; returns the file it appends a line to on each such run. In a folder of its own
    under /tmp, readable to ``nobody`` (the sandbox's user when the tests run as root), removed afterwards."""
    folders = []

    def make(version: str, stderr: str) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="fake-bwrap-"))
        folders.append(folder)
        folder.chmod(0o755)
        runs = folder / "runs"
        runs.touch(mode=0o666)
        runs.chmod(0o666)
        script = folder / "bwrap"
        script.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = "--version" ]; then echo "bubblewrap {version}"; exit 0; fi\n'
            f"echo run >> {runs}\n"
            f"printf '%s\\n' '{stderr}' >&2\n"
            "exit 1\n"
        )
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        return runs

    yield make
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_probe_whose_child_failed_twice_refuses_to_run_unisolated(fake_bwrap):
    """A bubblewrap that ran (no "bwrap:" message of its own) but whose probe exited 1 before the child's first event,
    twice: the failure is not bubblewrap refusing, and a rerun meets it again, so auto raises naming the child's
    failure and the explicit choice, not a loaded machine."""
    runs = fake_bwrap("0.8.0", "child.py: cannot open job.json")
    with pytest.raises(SandboxUnavailable) as raised:
        Sandbox(LIMITS, isolation="auto")
    said = str(raised.value)
    assert "the sandbox's probe child failed under bubblewrap (probe failed: bubblewrap 0.8.0" in said
    assert "child.py: cannot open job.json" in said and "--sandbox none" in said
    assert "did not start in time" not in said
    assert runs.read_text().splitlines() == ["run", "run"]


def test_bubblewraps_own_refusal_still_falls_back_under_auto(fake_bwrap, caplog):
    """bubblewrap refusing to run here (its own "bwrap:" message, before our child wrote anything) is what auto falls
    back for, loudly, as make demo on such a machine needs; bwrap refuses."""
    fake_bwrap("0.8.0", NO_NAMESPACE)
    sandbox = Sandbox(LIMITS, isolation="auto")
    assert sandbox.isolation == "none"
    assert NO_NAMESPACE in sandbox.unavailable_reason
    assert "CODE SANDBOX WITHOUT BUBBLEWRAP" in caplog.text
    with pytest.raises(SandboxUnavailable, match="bubblewrap does not work here"):
        Sandbox(LIMITS, isolation="bwrap")


def test_a_bubblewrap_older_than_supported_still_falls_back_under_auto(fake_bwrap):
    """A bubblewrap below BWRAP_MIN_VERSION fails the probe whatever its message (here none of its own): auto falls
    back, as for none."""
    fake_bwrap("0.4.1", "child.py: cannot open job.json")
    sandbox = Sandbox(LIMITS, isolation="auto")
    assert sandbox.isolation == "none" and "bubblewrap 0.4.1" in sandbox.unavailable_reason

"""Slurm clients run with SIGPIPE ignored, and a query whose client is killed by a signal is asked again; Slurm's
own answers and changes are not.

Against a fake ``scontrol``/``squeue``/``scancel`` first on PATH that kills itself (SIGTERM: SIGPIPE is ignored in
it, which is the point) for its first N calls, then answers: ``scontrol show job`` died of SIGPIPE in a loaded full
run of the suite. Both the job scripts' requeue rule (judge.plumbing.slurm_requeue) and the test cluster's client
calls (tests/support/slurm_cluster.py) go through it.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest

from judge.plumbing import slurm_requeue
from tests.support.slurm_cluster import SlurmCluster

# Each call appends its arguments; while fewer than $FAKE_KILLS calls were made before it, it dies of SIGTERM.
FAKE_CLIENT = """#!/bin/sh
before=0
if [ -f "$FAKE_CALLS" ]; then before=$(wc -l < "$FAKE_CALLS"); fi
echo "$(basename "$0") $*" >> "$FAKE_CALLS"
if [ "$before" -lt "$FAKE_KILLS" ]; then kill -TERM $$; fi
if [ -n "$FAKE_ERROR" ]; then echo "$FAKE_ERROR" >&2; exit 1; fi
echo "JobId=7 JobState=RUNNING Restarts=0"
"""


def _fake_clients(tmp_path: Path, monkeypatch, kills: int, error: str = "") -> Path:
    """FAKE_CLIENT as scontrol, squeue and scancel, first on PATH; returns the file each call is written to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("scontrol", "squeue", "scancel"):
        (bin_dir / name).write_text(FAKE_CLIENT)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_CALLS", str(calls))
    monkeypatch.setenv("FAKE_KILLS", str(kills))
    monkeypatch.setenv("FAKE_ERROR", error)
    return calls


def _calls(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_record_asked_again_after_the_client_died_of_sigpipe(tmp_path, monkeypatch, caplog):
    calls = _fake_clients(tmp_path, monkeypatch, kills=2)
    with caplog.at_level(logging.WARNING, logger=slurm_requeue.__name__):
        record = slurm_requeue.job_record("7")
    assert record == {"JobId": "7", "JobState": "RUNNING", "Restarts": "0"}
    assert _calls(calls) == ["scontrol show job -o 7"] * 3
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "scontrol show job -o 7: killed by SIGTERM before it answered (attempt 1 of 3); asking again",
        "scontrol show job -o 7: killed by SIGTERM before it answered (attempt 2 of 3); asking again",
    ]


def test_a_slurm_client_runs_with_sigpipe_ignored(tmp_path):
    """subprocess restores SIGPIPE's default in a child unless told not to; a client killed by it cannot handle the
    closed socket (libmunge retries a transaction after a socket error). The client here sends itself SIGPIPE and
    lives to say so."""
    client = tmp_path / "client"
    client.write_text("#!/bin/sh\nkill -PIPE $$\necho alive\n")
    client.chmod(0o755)
    result = slurm_requeue.run_client([str(client)], timeout_s=30)
    assert (result.returncode, result.stdout) == (0, "alive\n")
    assert subprocess.run([str(client)], capture_output=True, check=False).returncode == -13  # the default: death


def test_a_client_killed_every_time_is_an_error_that_names_the_signal(tmp_path, monkeypatch, caplog):
    calls = _fake_clients(tmp_path, monkeypatch, kills=10)
    with caplog.at_level(logging.WARNING, logger=slurm_requeue.__name__):
        assert slurm_requeue.job_record("7") == {}
    assert len(_calls(calls)) == slurm_requeue.QUERY_ATTEMPTS == 3
    assert caplog.records[-1].levelno == logging.ERROR
    assert caplog.records[-1].getMessage() == "scontrol show job 7 failed (killed by SIGTERM): "
    assert caplog.records[-2].getMessage().endswith("(attempt 3 of 3)")


def test_slurms_own_error_is_answered_once_and_said(tmp_path, monkeypatch, caplog):
    calls = _fake_clients(tmp_path, monkeypatch, kills=0, error="slurm_load_jobs error: Invalid job id specified")
    with caplog.at_level(logging.WARNING, logger=slurm_requeue.__name__):
        assert slurm_requeue.job_record("7") == {}
    assert _calls(calls) == ["scontrol show job -o 7"]
    assert [r.getMessage() for r in caplog.records] == [
        "scontrol show job 7 failed (exit 1): slurm_load_jobs error: Invalid job id specified"]


def test_a_requeue_whose_client_died_is_not_asked_again(tmp_path, monkeypatch, caplog):
    # A requeue may have reached the controller before its client died: asking again could requeue twice.
    calls = _fake_clients(tmp_path, monkeypatch, kills=1)
    with caplog.at_level(logging.WARNING, logger=slurm_requeue.__name__):
        assert slurm_requeue.requeue_job("7", "SIGTERM", "the rerun resumes") is False
    assert _calls(calls) == ["scontrol requeue 7"]
    assert caplog.records[-1].getMessage() == "scontrol requeue 7 failed (killed by SIGTERM): "


def test_signal_names():
    assert slurm_requeue.signal_name(13) == "SIGPIPE"
    assert slurm_requeue.signal_name(9) == "SIGKILL"
    assert slurm_requeue.signal_name(99) == "signal 99"
    assert slurm_requeue.exit_words(-13) == "killed by SIGPIPE"
    assert slurm_requeue.exit_words(1) == "exit 1"
    assert slurm_requeue.exit_words(0) == "exit 0"


@pytest.fixture()
def cluster(tmp_path) -> SlurmCluster:
    """The test cluster's client side only: no daemon is started (the fake clients answer)."""
    return SlurmCluster(root=tmp_path, conf=tmp_path / "slurm.conf", nodes=("n1", "n2"), partition="debug",
                        cpus_per_node=1)


def test_the_test_clusters_queries_are_asked_again_and_its_changes_are_not(tmp_path, monkeypatch, cluster):
    calls = _fake_clients(tmp_path, monkeypatch, kills=1)
    assert cluster.job("17_1")["JobState"] == "RUNNING"
    assert _calls(calls) == ["scontrol show job -o 17_1"] * 2
    calls.unlink()
    assert cluster.jobs() == []  # "JobId=7 ..." holds no bare job id: squeue's answer, read
    assert _calls(calls) == ["squeue -h -o %i"] * 2
    calls.unlink()
    with pytest.raises(RuntimeError, match=r"^scancel 17_1 failed \(killed by SIGTERM\): $"):
        cluster.command(["scancel", "17_1"])
    assert _calls(calls) == ["scancel 17_1"]


def test_an_unreadable_record_is_said_so_not_called_not_preempted(tmp_path, monkeypatch, caplog):
    # The requeue rule cannot tell a preemption from any other SIGTERM without the record: it does not requeue, and
    # says that it could not tell rather than "state UNKNOWN, not preempted".
    calls = _fake_clients(tmp_path, monkeypatch, kills=0, error="slurm_load_jobs error: Unable to contact slurm")
    with caplog.at_level(logging.WARNING, logger=slurm_requeue.__name__):
        assert slurm_requeue.requeue_if_preempted("7", 0, not_requeued="resubmit to resume") is False
    assert _calls(calls) == ["scontrol show job -o 7"]
    assert [r.getMessage() for r in caplog.records] == [
        "scontrol show job 7 failed (exit 1): slurm_load_jobs error: Unable to contact slurm",
        "Slurm job 7 ended by SIGTERM and its record could not be read, so whether Slurm is preempting it is "
        "unknown: not requeued; resubmit to resume"]

"""A first contact with a server that is not up says so once: one warning at the first failed attempt ("waiting for
the judge at URL (up to N s; --connect-timeout-s): ..."), each attempt after at debug level, then the one-line
error; a refused ``judge-eval run`` prints its one line alone, without the run's config before it. Retries of a
request later in a run still warn per attempt.

The closed port is a socket bound and never listening: a connection to it is refused at once, and no other test's
server can take the port over while it is held."""

from __future__ import annotations

import logging
import re
import socket

import pytest

from judge.plumbing.retry import EXIT_UNUSABLE, EndpointUnusable, RetryPolicy, list_models
from tests.support.first_contact import env_without_keys, run_argv, sample_records_file, start_judge_eval, wait_outcome

REFUSED = "ConnectError: [Errno 111] Connection refused"


@pytest.fixture
def closed_url():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    yield f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()


def test_first_contact_says_it_waits_once_and_each_attempt_at_debug(closed_url, caplog):
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, backoff_s=0.0, max_wait_s=120.0, sleep=waits.append)
    caplog.set_level(logging.DEBUG, logger="judge.plumbing.retry")
    with pytest.raises(EndpointUnusable):
        list_models(closed_url, what="the judge", policy=policy)
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "judge.plumbing.retry"]
    assert said == [
        ("WARNING", f"waiting for the judge at {closed_url} (up to 120 s; --connect-timeout-s): {REFUSED}"),
        ("DEBUG", "attempt 1 failed (ConnectError: [Errno 111] Connection refused); retrying in 0.0 s"),
        ("DEBUG", "attempt 2 failed (ConnectError: [Errno 111] Connection refused); retrying in 0.0 s"),
    ]
    assert waits == [0.0, 0.0]


def test_a_retry_without_a_first_contact_wait_still_warns_per_attempt(caplog):
    """A request later in a run (the runner's own policy, no ``waiting``): each failed attempt is a warning."""
    import httpx

    failures = iter([httpx.ConnectError("refused"), httpx.ConnectError("refused")])

    def call() -> str:
        err = next(failures, None)
        if err is not None:
            raise err
        return "answered"

    caplog.set_level(logging.DEBUG, logger="judge.plumbing.retry")
    assert RetryPolicy(max_retries=2, backoff_s=0.0, sleep=lambda s: None).call(call) == "answered"
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "judge.plumbing.retry"] == [
        ("WARNING", "attempt 1 failed (ConnectError: refused); retrying in 0.0 s"),
        ("WARNING", "attempt 2 failed (ConnectError: refused); retrying in 0.0 s"),
    ]


def _without_stamps(stderr: str) -> list[str]:
    """stderr's lines without the log lines' leading date and time."""
    return [re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", "", line) for line in stderr.strip().splitlines()]


def test_judge_eval_run_against_a_closed_port_prints_its_wait_once(closed_url, tmp_path):
    """The whole stderr: the config of a run that goes on, its data, the one wait line, the one error line. The
    connect bound is waited out, so it is short; run_argv's --backoff-s 0.2 still makes at least three attempts
    within it whatever the jitter: two after the one the wait line is about."""
    data = sample_records_file(tmp_path / "data.jsonl", 2)
    code, _, err = wait_outcome(start_judge_eval(
        run_argv(closed_url, tmp_path / "out", data, "--connect-timeout-s", "1"), env_without_keys()))
    lines = _without_stamps(err)
    assert code == EXIT_UNUSABLE, err
    assert len(lines) == 4, err
    assert lines[0].startswith('INFO judge_eval.run: run config: {"judge": "' + closed_url + '"'), err
    assert lines[1] == f"INFO judge.record_sources: {data}: 2 rows -> 2 records"
    assert lines[2] == (f"WARNING judge.plumbing.retry: waiting for the judge at {closed_url} (up to 1 s; "
                        f"--connect-timeout-s): {REFUSED}")
    assert re.fullmatch(
        rf"judge-eval run: error: the judge at {re.escape(closed_url)} cannot be reached \({re.escape(REFUSED)}\) "
        r"after \d+ attempts in \d+ s: is the server running, on that host and port\? \(--connect-timeout-s sets "
        r"how long to keep trying\)", lines[3]), lines[3]


def test_a_refused_run_prints_its_error_alone(tmp_path):
    """No --judge (nor base_url_env): exit 2 and the one error line, no run config before it."""
    data = sample_records_file(tmp_path / "data.jsonl", 2)
    code, _, err = wait_outcome(start_judge_eval(["run", "--data", str(data), "--out", str(tmp_path / "out")],
                                                 env_without_keys()))
    assert (code, err.strip().splitlines()) == (2, [
        "judge-eval run: error: judge: give a checkpoint folder or URL (--judge), or base_url_env for an API judge"])

"""`judge-eval run` against an endpoint that keeps failing after every retry (judge.plumbing.failing_streak): a quota
that never clears stops the run with exit 4 after a few items, not after every item's full retries; a flaky endpoint
never does.

Driven against a real HTTP endpoint on 127.0.0.1 (tests.support.scripted_endpoint); the backoff is made next to
nothing with ``--backoff-s``, and nothing is timed.
"""

from __future__ import annotations

import itertools
import re
import threading
from pathlib import Path

import judge
from eval.cli import main
from judge.plumbing.failing_streak import MIN_STREAK, FailingStreak, stop_after
from eval.judging.backends import N_FIRST_REFUSALS
from eval.judging.predictions import read_predictions
from judge.plumbing.retry import EXIT_UNUSABLE
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

GOOD = "[FEEDBACK] Ответ соответствует критерию. [RESULT] 1 [END]"
QUOTA = (429, {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                         "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}})


def _data(tmp_path: Path, n: int) -> tuple[Path, list]:
    records = judge.load_records(judge.sample_data_path())[:n]
    return judge.write_jsonl(records, tmp_path / "data.jsonl"), records


def _args(url: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--max-tokens", "32", "--no-progress",
            "--verdict-format", "tagged", "--backoff-s", "0.001", *extra]


def test_a_quota_that_never_clears_stops_the_run_after_a_few_items(tmp_path, capsys):
    """Every chat request answered 429 insufficient_quota: the run stops with exit 4 once stop_after(2) = 4 requests
    in a row failed after their retries (a fifth may have been in flight), naming the status and the server's words;
    their failed rows are kept, the rest have none, and a rerun against a healthy endpoint asks every item."""
    data, records = _data(tmp_path, 20)
    healthy = threading.Event()

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return (200, chat_completion(GOOD, "judge")) if healthy.is_set() else QUOTA

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_args(server.base_url, data, tmp_path / "run", "--concurrency", "2", "--max-retries", "1"))
        err = capsys.readouterr().err
        asked = server.bodies("/v1/chat/completions")
        rows = read_predictions(tmp_path / "run")
        healthy.set()
        server.requests.clear()
        again = main(_args(server.base_url, data, tmp_path / "run", "--concurrency", "2", "--max-retries", "1"))
        reasked = server.bodies("/v1/chat/completions")
    assert code == EXIT_UNUSABLE, err
    n_stop = stop_after(2)
    by_id = {r.id: judge.prefix_key(r) for r in records}
    answers = {by_id[r["id"]] for r in rows}  # the streak counts answers (an answer's criteria fail together)
    assert n_stop <= len(answers) <= n_stop + 1 and len(rows) < len(records)
    assert len(asked) == 2 * len(rows)  # each item: the first attempt and its one retry
    assert {r["error"] for r in rows} == {"request_failed"}
    assert re.search(rf"failed \d+ requests in a row, about {n_stop} different answers, each after up to 1 retries "
                     r"\(none where the server said x-should-retry: false\), with no answer between: last HTTP 429: "
                     + re.escape(f"{QUOTA[1]['error']['message']} (stopped after sending {len(rows)} of "
                                 f"{len(records)} requests"), err), err
    assert again == 0 and len(reasked) == len(records)
    final = read_predictions(tmp_path / "run")
    assert sorted(r["id"] for r in final) == sorted(r.id for r in records)
    assert {r["error"] for r in final} == {None}


def test_a_flaky_endpoint_never_trips_the_breaker(tmp_path, capsys):
    """An endpoint failing every other request (a 503, not retried with --max-retries 0) is no endpoint down: the
    run asks every item, and writes the failures as failed rows for the next run (exit 3, not 4)."""
    data, records = _data(tmp_path, 12)
    answers = itertools.cycle([(503, {"error": {"message": "busy"}}), (200, chat_completion(GOOD, "judge"))])
    lock = threading.Lock()

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        with lock:
            return next(answers)

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_args(server.base_url, data, tmp_path / "run", "--concurrency", "1", "--max-retries", "0"))
        asked = server.bodies("/v1/chat/completions")
    assert code == 3, capsys.readouterr().err
    assert len(asked) == len(records)
    rows = read_predictions(tmp_path / "run")
    assert sorted(r["error"] or "ok" for r in rows) == ["ok"] * 6 + ["request_failed"] * 6


def test_one_answer_the_server_fails_every_time_does_not_stop_a_healthy_run(tmp_path, capsys):
    """The server answers 500 to every request about the first answer (its 2-4 criteria, sent back to back) and 200
    to the rest: at concurrency 1 (stop_after(1) = 3) those requests are one answer's, not three unlucky items, so the
    run goes on to every item (exit 3: the poisoned answer's rows failed). A rerun asks them again last, and their
    failing again is no news of the endpoint: still exit 3."""
    data, records = _data(tmp_path, 30)
    poisoned = judge.prefix_key(records[0])
    n_poisoned = sum(judge.prefix_key(r) == poisoned for r in records)
    assert n_poisoned >= N_FIRST_REFUSALS  # enough to have tripped the breaker when it counted requests
    marker = records[0].answer[:40]

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if any(marker in str(m.get("content")) for m in body.get("messages", [])):
            return 500, {"error": {"message": "Internal error while processing this prompt"}}
        return 200, chat_completion(GOOD, "judge")

    with ScriptedEndpoint(respond, model="judge") as server:
        codes = [main(_args(server.base_url, data, tmp_path / "run", "--concurrency", "1", "--max-retries", "1"))
                 for _ in range(2)]
    rows = read_predictions(tmp_path / "run")
    assert codes == [3, 3], capsys.readouterr().err
    assert len({r["id"] for r in rows}) == len(records)
    assert sorted(r["id"] for r in rows if r["error"] == "request_failed") == sorted(
        r.id for r in records if judge.prefix_key(r) == poisoned)


def test_failing_streak_counts_failures_in_a_row_only():
    """Any other outcome starts the count again; the failure that made the streak long enough is the one named."""
    streak = FailingStreak(3)
    failures = [RuntimeError(str(k)) for k in range(5)]
    for outcome in (failures[0], failures[1], None, failures[2], failures[3]):
        streak.offer(outcome)
    assert streak.stopped is None
    streak.offer(failures[4])
    assert streak.stopped is failures[4]
    streak.offer(None)  # an answer in flight at the stop does not take it back
    assert streak.stopped is failures[4]
    # requests about one answer count once: three of answer "a" and one of "b" are two answers, not four
    by_answer = FailingStreak(3)
    for key in ("a", "a", "a", "b"):
        by_answer.offer(failures[0], key)
    assert by_answer.stopped is None
    by_answer.offer(failures[1], "c")
    assert by_answer.stopped is failures[1]
    assert stop_after(1) == MIN_STREAK == 3 and stop_after(8) == 16


def test_a_quota_marked_not_worth_retrying_is_given_up_at_once_and_stops_the_run(tmp_path, capsys):
    """A 429 with ``x-should-retry: false`` is not retried (as the openai SDK obeys it), and still counts towards
    the stop: an exhausted quota is the endpoint the breaker is for, not a failed row per item."""
    data, records = _data(tmp_path, 20)

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return (*QUOTA, {"x-should-retry": "false"})

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_args(server.base_url, data, tmp_path / "run", "--concurrency", "1", "--max-retries", "3"))
        asked = server.bodies("/v1/chat/completions")
    assert code == EXIT_UNUSABLE, capsys.readouterr().err
    rows = read_predictions(tmp_path / "run")
    by_id = {r.id: judge.prefix_key(r) for r in records}
    assert len(asked) == len(rows)  # one attempt per item
    assert len({by_id[r["id"]] for r in rows}) == stop_after(1)  # the third answer's failure stopped it


def test_a_refusal_marked_worth_retrying_is_retried(tmp_path, capsys):
    """A 400 with ``x-should-retry: true`` (the server says another try may succeed, which the openai SDK obeys) is
    asked again up to --max-retries, then written as a failed row a rerun asks again; before, the backend took any
    4xx for a refusal before the retry policy saw it: one request per item."""
    data, records = _data(tmp_path, 2)

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return 400, {"error": {"message": "try again"}}, {"x-should-retry": "true"}

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_args(server.base_url, data, tmp_path / "run", "--concurrency", "1", "--max-retries", "2"))
        asked = server.bodies("/v1/chat/completions")
    assert code == 3, capsys.readouterr().err
    assert len(asked) == 3 * len(records)  # the first attempt and two retries each
    assert {r["error"] for r in read_predictions(tmp_path / "run")} == {"request_failed"}

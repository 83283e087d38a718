"""`judge-eval run`: items an endpoint refuses one by one (a hosted API's content filter) never stop every rerun.

The first requests refused alike stop a run (``eval.judging.backends.FirstRefusals``) only when they were never asked
before: a rerun left with the items refused before asks them and writes their failed rows (exit 3), and every refusal
that finishes, after the stop too, is a failed row, so ``score`` counts the item failed, not missing. The judge is a
scripted chat server (``tests.support.scripted_endpoint``), the network boundary.
"""

from __future__ import annotations

import judge
from eval.cli import main
from eval.judging.backends import FirstRefusals, Refused
from eval.judging.predictions import read_predictions
from judge.plumbing.retry import EXIT_UNUSABLE
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

FILTERED = (400, {"error": {"message": "Your request was rejected by the safety system",
                            "type": "invalid_request_error"}})


def _items(tmp_path, n: int):
    """``n`` sample items, each its own (instruction, answer): one chat request per item, whatever the order."""
    records = judge.load_records(judge.sample_data_path())
    one_each = list({judge.prefix_key(r): r for r in records}.values())[:n]
    assert len(one_each) == n
    return judge.write_jsonl(one_each, tmp_path / "data.jsonl"), one_each


def test_a_rerun_left_with_items_refused_before_asks_them_and_writes_their_rows(tmp_path, capsys):
    """Five items, three filtered (the first three the judge is sent, concurrency 1): run 1 stops at them (exit 4,
    three failed rows); run 2 asks the two never asked (judged), then the three again (failed rows, exit 3); run 3
    has only the three left, refused alike: it asks them and writes them again (exit 3), where it stopped at them
    (exit 4) on every rerun before."""
    data, _ = _items(tmp_path, 5)
    filtered: list[str] = []

    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt = body["messages"][0]["content"]
        if len(filtered) < 3 and prompt not in filtered:
            filtered.append(prompt)
        return FILTERED if prompt in filtered else (200, chat_completion("[FEEDBACK] ok [RESULT] 1 [END]",
                                                                           body["model"]))

    out = tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        args = run_args(server.base_url, data, out, "--verdict-format", "tagged", "--backend", "chat",
                        "--concurrency", "1")
        assert main(args) == EXIT_UNUSABLE
        assert "refused the first 3 requests alike" in capsys.readouterr().err
        assert main(args) == 3
        assert main(args) == 3
        sent = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")]
    assert len(sent) == 3 + 5 + 3 and sent[8:] == filtered  # run 3: the three filtered, each asked again
    rows = read_predictions(out)
    assert len(rows) == 5  # one per item
    assert sorted(r["error"] or "" for r in rows) == ["", "", "request_failed", "request_failed", "request_failed"]


def test_refusals_that_finish_after_the_stop_are_written_too(tmp_path, capsys):
    """Four items all filtered, four workers: all four are sent before any answer comes back; the third refusal
    stops the run and the fourth, still in flight, finishes after it. Each sent request has its failed row (the
    fourth had none, so `score` counted it missing and the stop's message that the refused ones were written was
    untrue of it)."""
    data, _ = _items(tmp_path, 4)
    with ScriptedEndpoint(lambda path, body: FILTERED if path == "/v1/chat/completions" else (404, {}),
                          model="judge") as server:
        code = main(run_args(server.base_url, data, tmp_path / "run", "--verdict-format", "tagged", "--backend",
                             "chat", "--concurrency", "4"))
        n_sent = len(server.bodies("/v1/chat/completions"))
    assert (code, n_sent) == (EXIT_UNUSABLE, 4)
    assert "(stopped after sending 4 of 4 requests; the refused ones were written as failed rows" in (
        capsys.readouterr().err)
    rows = read_predictions(tmp_path / "run")
    assert [r["error"] for r in rows] == ["request_failed"] * 4
    assert all(r["reason"] == "HTTP 400: Error code: 400 - Your request was rejected by the safety system" for r in rows)


def test_first_refusals_hold_only_requests_never_asked_before():
    """The stop's own rules: a refusal of a request asked before is written at once and leaves the held ones held;
    ``for_run`` arms the stop only with three never-asked requests; a refusal after the stop goes to ``keep_held``."""
    refused = Refused("HTTP 400: no", 400, "no")
    first = FirstRefusals.for_run(3)
    assert first.offer(refused, ("a",)) == [] and first.offer(refused, ("old",), asked_before=True) == [("old",)]
    assert first.offer(refused, ("b",)) == [] and first.stopped is None
    assert first.offer(refused, ("c",)) == [] and first.stopped is refused
    assert first.offer(refused, ("late",)) == [] and first.offer(None, ("ok",)) == [("ok",)]
    written: list[str] = []
    first.keep_held(written.append, "the judge", 5, 5)
    assert written == ["a", "b", "c", "late"]
    assert FirstRefusals.for_run(2).n_first == 0  # two never-asked requests cannot tell


def test_a_refusal_held_while_every_later_item_is_too_long_is_written(tmp_path):
    """Five items, concurrency 1: the first one asked is filtered (held: it could be the first of three alike), the
    four after it are each longer than the judge's window, the items' own final rows, which neither hold nor end the
    holding. The run ends without the stop, so the held refusal is written as its failed row (exit 3); it was never
    written, and `score` counted the item missing."""
    data, _ = _items(tmp_path, 5)
    too_long = ("This model's maximum context length is 2048 tokens. However, your prompt contains 5000 input "
                "tokens, which exceeds this limit even without any output tokens.")
    asked: list[str] = []

    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        asked.append(body["messages"][0]["content"])
        if len(asked) == 1:
            return FILTERED
        return 400, {"error": {"message": too_long, "type": "BadRequestError"}}

    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(run_args(server.base_url, data, tmp_path / "run", "--verdict-format", "tagged", "--backend",
                             "chat", "--concurrency", "1"))
    assert (code, len(asked)) == (3, 5)
    rows = read_predictions(tmp_path / "run")
    assert sorted(r["error"] for r in rows) == ["context_length_exceeded"] * 4 + ["request_failed"]
    (refused,) = [r for r in rows if r["error"] == "request_failed"]
    assert refused["reason"] == "HTTP 400: Error code: 400 - Your request was rejected by the safety system"


def test_release_hands_back_what_is_held_unless_the_stop_fired():
    """``release`` at a run's end: the held payloads (their own, not their ``if_stopped`` ones), after which nothing
    is held; nothing once the stop fired (``keep_held`` writes those)."""
    refused = Refused("HTTP 400: no", 400, "no")
    first = FirstRefusals(3)
    assert first.offer(refused, ("a",), if_stopped=("a failed",)) == [] and first.offer(None, ("long",), aside=True)
    assert first.release() == [("a",)] and first.held == [] and first.release() == []
    stopped = FirstRefusals(1)
    assert stopped.offer(refused, ("b",)) == [] and stopped.stopped is refused
    assert stopped.release() == [] and [p for p, _, _ in stopped.held] == [("b",)]

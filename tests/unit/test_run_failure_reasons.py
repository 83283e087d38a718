"""What `judge-eval run` says when its requests fail: a --model its server does not list is warned of at the first
contact, and a run that ends with failed requests says how many and the first one's reason on stderr, where before
the reason was only in predictions.jsonl's rows and the console showed `"request_failed": 3` and exit 3."""

from __future__ import annotations

import dataclasses
import json
import re

import judge
from eval.cli import main
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

#: vLLM's answer to a chat request naming a model it does not serve.
NOT_FOUND = {"error": {"message": "The model `other` does not exist.", "type": "NotFoundError", "param": None,
                       "code": 404}}


def _server() -> ScriptedEndpoint:
    """A vLLM-like server serving `tiny-seq2seq`: chat requests for another model are refused with vLLM's 404."""
    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        if body["model"] != "tiny-seq2seq":
            return 404, NOT_FOUND
        return 200, chat_completion("[FEEDBACK] ok [RESULT] 1 [END]", body["model"])

    entry = {"id": "tiny-seq2seq", "object": "model", "max_model_len": 4096}
    return ScriptedEndpoint(respond, respond_get=lambda path: (200, {"object": "list", "data": [entry]}))


def test_a_model_the_server_does_not_list_is_warned_of_and_the_failures_reason_said(tmp_path, caplog):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _server() as server:
        assert main(run_args(server.base_url, data, out, "--model", "other", "--max-retries", "0")) == 3
    err = caplog.text
    assert (f"the judge at {server.base_url} does not list the model 'other' (it lists tiny-seq2seq): its requests "
            "may be refused") in err
    ids = "|".join(record.id for record in judge.load_records(data))  # the two requests are in flight together
    said = (rf"2 requests failed \(the first written, item '({ids})': HTTP 404: Error code: 404 - The model `other` does "
            rf"not exist\.\): each is a row of {re.escape(str(out / 'predictions.jsonl'))} with its reason, and a "
            "rerun into the same --out asks them again")
    assert re.search(said, err), err
    # judge-eval's own records only: caplog also holds what other libraries of the same worker logged
    assert not any(r.exc_info for r in caplog.records if r.name.startswith("judge_eval"))


def test_a_run_whose_requests_all_answered_says_nothing_of_failures(tmp_path, caplog):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")
    with _server() as server:
        assert main(run_args(server.base_url, data, tmp_path / "run", "--model", "tiny-seq2seq")) == 0
    err = caplog.text
    assert "requests failed" not in err and "does not list the model" not in err


def test_the_failed_items_id_is_said_on_one_line_whatever_it_holds(tmp_path, caplog):
    """An id is text from the data: one holding a newline and a terminal escape was written into the warning as it
    was, forging a log line of its own and clearing the terminal. It is said as a Python literal, as score says an
    id, on one line."""
    record = judge.load_records(judge.sample_data_path())[0]
    forged = "s1\n2026-01-01 00:00:00,000 INFO judge_eval.run: all good\x1b[2J"
    data = judge.write_jsonl([dataclasses.replace(record, id=forged)], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _server() as server:
        assert main(run_args(server.base_url, data, out, "--model", "other", "--max-retries", "0")) == 3
    (said,) = [m for r in caplog.records if r.name == "judge_eval.run" and "request failed" in (m := r.getMessage())]
    assert said.startswith(f"1 request failed (the first written, item {forged!r}: HTTP 404: ") and said.isprintable()


#: A server's error message meant for a terminal: a clear-screen sequence and a line forged after a newline.
HOSTILE = "bad request\x1b[2J\n2026-01-01 00:00:00,000 INFO judge_eval.run: all good"


def _hostile_server() -> ScriptedEndpoint:
    """A chat server refusing every request with ``HOSTILE`` as its OpenAI error message (HTTP 422)."""
    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 422, {"error": {"message": HOSTILE, "type": "BadRequestError", "param": None, "code": 422}}

    return ScriptedEndpoint(respond, model="tiny-seq2seq")


def test_a_servers_control_characters_reach_the_console_as_escapes_and_the_row_as_said(tmp_path, caplog):
    """The failure's reason is the server's words: an ESC sequence in them was written to the terminal as it was
    (clearing the screen) with %s. The warning shows every control character as its escape, on one line; the row
    keeps the server's words."""
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:1], tmp_path / "data.jsonl")
    item = judge.load_records(data)[0].id
    out = tmp_path / "run"
    with _hostile_server() as server:
        assert main(run_args(server.base_url, data, out, "--max-retries", "0")) == 3
    (said,) = [m for r in caplog.records if r.name == "judge_eval.run" and "request failed" in (m := r.getMessage())]
    assert said == (f"1 request failed (the first written, item {item!r}: HTTP 422: Error code: 422 - bad "
                    "request\\x1b[2J 2026-01-01 00:00:00,000 INFO judge_eval.run: all good): each is a row of "
                    f"{out / 'predictions.jsonl'} with its reason, and a rerun into the same --out asks them again")
    (row,) = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["error"] == "request_failed" and "request\x1b[2J 2026-01-01" in row["reason"]


def test_the_stop_at_the_first_refusals_shows_the_servers_control_characters_as_escapes(tmp_path, capsys):
    """Three items refused alike stop the run with the server's words on stderr: escaped, as the warning's."""
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:3], tmp_path / "data.jsonl")
    with _hostile_server() as server:
        assert main(run_args(server.base_url, data, tmp_path / "run", "--max-retries", "0",
                             "--concurrency", "1")) == 4
    assert capsys.readouterr().err == (
        "judge-eval run: error: the judge (tiny-seq2seq) refused the first 3 requests alike: HTTP 422: bad "
        "request\\x1b[2J 2026-01-01 00:00:00,000 INFO judge_eval.run: all good (stopped after sending 3 of 3 "
        "requests; the refused ones were written as failed rows; a rerun asks the items not asked yet first, then "
        "these again)\n")


def test_visible_escapes_what_a_terminal_would_act_on_and_bounds_the_length():
    from judge.plumbing.console_logging import visible

    assert visible("a\x1b[2J\nb\tc\rd\x7f\x9b\u2028\u202e\ud800 е ё\\") == (
        "a\\x1b[2J\\nb\\tc\\rd\\x7f\\x9b\\u2028\\u202e\\ud800 е ё\\")
    assert visible("\x1b" * 5, 3) == "\\x1b\\x1b\\x1b..."  # the limit counts the text's characters, not the escapes'
    assert visible("abc", 3) == "abc"


def test_a_failed_attempt_said_on_the_console_shows_the_servers_control_characters_as_escapes():
    """failure_said is the console's words for a failed attempt (the first-contact wait's warning, the failing
    streak's stop): the server's message in it is escaped too."""
    import httpx

    from judge.plumbing.retry import failure_said

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(503, json={"error": {"message": HOSTILE}}, request=request)
    err = httpx.HTTPStatusError("503", request=request, response=response)
    assert failure_said(err) == ("HTTP 503: bad request\\x1b[2J 2026-01-01 00:00:00,000 INFO judge_eval.run: all "
                                 "good")
    assert failure_said(httpx.ConnectError("refused\x1b[2J")) == "ConnectError: refused\\x1b[2J"


def _deep_error_server(status: int) -> ScriptedEndpoint:
    """A judge-serve answering every judging request ``status`` with a body of valid JSON nested far past what
    ``json.loads`` holds (a hostile or broken proxy's error page); the route's probe is answered as judge-serve does."""
    from tests.support.malformed_answers import DEEP_JSON

    def respond(path: str, request: dict) -> tuple:
        if path != "/v1/judge" or not request:
            return 400, {"error": {"message": "items: required field is missing"}}
        return status, DEEP_JSON

    return ScriptedEndpoint(respond, model="judge")


def test_an_error_answer_whose_json_json_loads_cannot_hold_is_a_failed_row_in_the_servers_words(tmp_path):
    """A 422 whose body is JSON nested past the recursion limit: server_message read it with json.loads and let the
    RecursionError through, so the row said "RecursionError: maximum recursion depth exceeded" and nothing of the
    server's answer. The row is the refusal, HTTP 422 and the body's text as the server sent it (cut)."""
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:1], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _deep_error_server(422) as server:
        assert main(run_args(server.base_url, data, out, "--backend", "judge-serve", "--max-retries", "0")) == 3
    (row,) = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["error"] == "request_failed"
    assert row["reason"].startswith('HTTP 422: {"id": "x", "choices": [[[['), row["reason"]
    assert "RecursionError" not in row["reason"]


def test_a_failed_attempt_with_json_json_loads_cannot_hold_is_said_in_the_servers_words():
    """failure_said (the retries' warning, the first-contact wait, the failing streak's stop) and pairwise's error
    code reader read an error body with json.loads: JSON nested past the recursion limit raised there, where any other
    unreadable body is read as text."""
    import httpx

    from eval.pairwise.judging import _error_code
    from judge.plumbing.retry import failure_said, server_message
    from tests.support.malformed_answers import DEEP_JSON

    request = httpx.Request("POST", "http://127.0.0.1/v1/judge")
    response = httpx.Response(503, content=DEEP_JSON.data, request=request,
                              headers={"content-type": "application/json"})
    assert server_message(response, 40) == '{"id": "x", "choices": ' + "[" * 17 + "..."
    assert failure_said(httpx.HTTPStatusError("503", request=request, response=response), 40) == (
        'HTTP 503: {"id": "x", "choices": ' + "[" * 17 + "...")
    assert _error_code(response) is None


def test_a_model_list_whose_json_json_loads_cannot_hold_is_no_model_list():
    """GET /models answered 200 with JSON nested past the recursion limit: list_models let json.loads'
    RecursionError through (a traceback at first contact), where any other body that is no model list is said so."""
    import pytest

    from judge.plumbing.retry import EndpointUnusable, list_models
    from tests.support.malformed_answers import DEEP_JSON

    with ScriptedEndpoint(lambda path, body: (404, {}), respond_get=lambda path: (200, DEEP_JSON)) as server:
        with pytest.raises(EndpointUnusable, match=r"did not answer an OpenAI model list \(is it an OpenAI-compatible "
                                                   r"server's base URL\?\)"):
            list_models(server.base_url)

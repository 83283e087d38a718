"""What `judge-eval run` says when its requests fail: a --model its server does not list is warned of at the first
contact, and a run that ends with failed requests says how many and the first one's reason on stderr, where before
the reason was only in predictions.jsonl's rows and the console showed `"request_failed": 3` and exit 3."""

from __future__ import annotations

import dataclasses
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

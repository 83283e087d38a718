"""`judge-eval run`'s ``timeout_s`` ("Seconds one request may take") bounds the whole answer, not each read: a server
that sends its headers and then its body a few bytes at a time, each within the read timeout, held a request for as
long as it kept trickling, and its late answer was kept as a verdict."""

from __future__ import annotations

import json
import threading

import judge
from eval.cli import main
from tests.support.eval_cli import run_args
from tests.support.trickling_endpoint import trickling_endpoint

VERDICT = "[FEEDBACK] ok [RESULT] 1 [END]"


def _trickling(done: threading.Event):
    return trickling_endpoint(VERDICT, done)


def test_a_server_trickling_its_answer_past_timeout_s_is_a_failed_request(tmp_path):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:1], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    done = threading.Event()
    server = _trickling(done)
    try:
        assert main(run_args(server.base_url, data, out, "--timeout-s", "0.5", "--max-retries", "0")) == 3
    finally:
        done.set()
        server.close()
    (chat,) = server.bodies("/v1/chat/completions")  # one request: --max-retries 0
    assert chat["model"] == "scripted" and chat["max_tokens"] == 32
    (row,) = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["error"] == "request_failed" and row["score"] is None and not row["parse_ok"]
    assert "no whole answer within timeout_s 0.5 s" in row["reason"], row["reason"]


def test_a_pairwise_run_bounds_each_orders_whole_answer_by_timeout_s_too(tmp_path):
    """The pairwise runner asks through its own clients: a trickling answer to either order is its pair's failed
    request (both orders here), with the same reason, and the run exits 3."""
    from eval.pairwise.files import PAIRWISE_PREDICTIONS

    pair = {"id": "p1", "instruction": "2+2?", "answer_1": "5", "answer_2": "4",
            "rubrics": "Критерий: точность.\n-1: ответ 1 лучше\n0: ответы равноценны\n1: ответ 2 лучше"}
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(pair, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    done = threading.Event()
    server = _trickling(done)
    try:
        assert main(["run", "--judge", server.base_url, "--model", "scripted", "--data", str(data), "--out", str(out),
                     "--timeout-s", "0.5", "--max-retries", "0", "--no-progress"]) == 3
    finally:
        done.set()
        server.close()
    assert len(server.bodies("/v1/chat/completions")) == 2  # each order once: --max-retries 0
    rows = [json.loads(line) for line in (out / PAIRWISE_PREDICTIONS).read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 and all(row["error"] == "request_failed" for row in rows)
    assert all("no whole answer within timeout_s 0.5 s" in row["reason"] for row in rows), rows

"""`judge-eval run`'s ``timeout_s`` ("Seconds one request may take") bounds the whole answer, not each read: a server
that sends its headers and then its body a few bytes at a time, each within the read timeout, held a request for as
long as it kept trickling, and its late answer was kept as a verdict."""

from __future__ import annotations

import json
import socket
import threading

import judge
from eval.cli import main
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

VERDICT = "[FEEDBACK] ok [RESULT] 1 [END]"


def _trickling(done: threading.Event):
    """A vLLM-like responder whose chat answers are a whole verdict preceded by JSON whitespace sent one byte every
    50 ms until ``done`` (or 200 bytes, the bound of a failing test): no read ever waits past a 0.5 s read timeout."""
    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        connection = server.local.connection
        payload = json.dumps(chat_completion(VERDICT, body["model"])).encode()
        n_spaces = 200
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                           b"Connection: close\r\n\r\n" % (n_spaces + len(payload)))
        try:
            for _ in range(n_spaces):
                if done.wait(0.05):  # paces the trickle; the test sets it once the run has ended
                    break
                connection.sendall(b" ")
            else:
                connection.sendall(payload)
        except OSError:
            pass  # the client gave up and closed the connection: what the fix does
        connection.shutdown(socket.SHUT_RDWR)
        raise ConnectionAbortedError("answered by hand")  # the handler's own answer is not sent

    server = ScriptedEndpoint(respond)
    return server


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

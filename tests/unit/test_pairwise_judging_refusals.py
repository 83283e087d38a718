"""Pairwise `judge-eval run`: judgments a content filter refuses one by one never stop every rerun, and the
predictions file keeps one row per judgment however many reruns ask them again.

As a pointwise run (``eval.judging.backends.FirstRefusals``): the stop is armed only by judgments never asked before,
so a rerun left with the refused ones asks each and writes its failed row (exit 3); ``pending_judgments`` drops a
judgment's earlier rows. A context refusal follows ``eval.judging.backends.context_refusal`` on both routes: a pair
longer than the window (judge-serve's code ``context_length_exceeded`` included) a final row at once; one leaving no
room for max_tokens held by the stop, else a final row naming max_tokens. The judge is a scripted chat server (``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from eval.pairwise.judging import PAIRWISE_PREDICTIONS
from judge.plumbing.retry import EXIT_UNUSABLE
from tests.support.body_bound import judge_serve_too_large
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

SCALE = "-1: первый ответ лучше\n0: ответы равноценны\n1: второй ответ лучше"


def _pairs(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"p{k}", "instruction": f"Вопрос {k}?", "answer_1": f"Ответ {k}.",
                                        "answer_2": f"Иначе {k}.", "rubrics": SCALE}, ensure_ascii=False) + "\n"
                            for k in range(n)), encoding="utf-8")
    return path


def _lines(out: Path) -> list[dict]:
    text = (out / PAIRWISE_PREDICTIONS).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_rerun_left_with_refused_judgments_asks_each_and_keeps_one_row_per_judgment(tmp_path, capsys):
    """Six pairs, both orders (12 judgments); pairs p0 and p1 are filtered (4 judgments), concurrency 1. Run 1 stops
    at the first three (p0 both orders, p1 original: exit 4). Run 2 asks the 9 never asked, then the 3 again: the 8
    others judged, p1 swapped and the 3 failed rows (exit 3). Run 3 has the 4 refused judgments left: it asks all
    four (exit 3), where it stopped at three of them on every rerun and never asked the fourth again. The file holds
    one row per judgment after each resume: 12 rows, then the 4 asked again appended (16), never more."""
    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt = body["messages"][0]["content"]
        if "Вопрос 0?" in prompt or "Вопрос 1?" in prompt:
            return 400, {"error": {"message": "rejected by the safety system"}}
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]", body["model"])

    data, out = _pairs(tmp_path / "pairs.jsonl", 6), tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        args = _chat_run(server, data, out, "--concurrency", "1")
        assert main(args) == EXIT_UNUSABLE
        assert "refused the first 3 requests alike" in capsys.readouterr().err
        assert len(_lines(out)) == 3
        assert main(args) == 3
        assert len(_lines(out)) == 3 + 12
        assert main(args) == 3
        lines = _lines(out)
        assert main(args) == 3
        asked = len(server.bodies("/v1/chat/completions"))
    assert asked == 3 + 12 + 4 + 4
    assert len(lines) == len(_lines(out)) == 12 + 4
    failed = sorted((r["id"], r["order"]) for r in _lines(out)[-4:])
    assert failed == [("p0", "original"), ("p0", "swapped"), ("p1", "original"), ("p1", "swapped")]
    assert {r["error"] for r in _lines(out)[-4:]} == {"request_failed"}


def test_pairs_that_fit_but_leave_no_room_for_max_tokens_first_stop_the_run_with_failed_rows(tmp_path, capsys):
    """vLLM's 400 when prompt + max_tokens overflow the window names each request's own counts ("… your request has
    P input tokens (X > W - P)"), the prompt itself fitting: the settings' fault. The first three such refusals stop
    the run (exit 4; numbers aside they are alike) and their rows are request_failed, asked again by a rerun; kept as
    final context_length_exceeded rows the run ended with exit 0, every judgment unscored. Only when the stop does not
    fire is such a judgment's row final (the next test); a pair longer than the window is one at once
    (tests/unit/test_eval_backends.py)."""
    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt_tokens = 900 + len(body["messages"][0]["content"]) % 50  # each request its own count
        return 400, {"error": {"message": (
            f"'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is 4096 "
            f"tokens and your request has {prompt_tokens} input tokens (4000 > 4096 - {prompt_tokens}).")}}

    data, out = _pairs(tmp_path / "pairs.jsonl", 4), tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        args = _chat_run(server, data, out, "--concurrency", "1")
        assert main(args) == EXIT_UNUSABLE
    assert "refused the first 3 requests alike" in capsys.readouterr().err
    assert [row["error"] for row in _lines(out)] == ["request_failed"] * 3


def test_a_pair_leaving_no_room_for_max_tokens_alone_is_a_final_row_naming_max_tokens(tmp_path):
    """Four pairs, original order, concurrency 1: the second judgment's prompt fits but not with max_tokens 64, the
    others are answered, so the stop does not fire: its row is final (context_length_exceeded, exit 0), its reason the
    server's words, max_tokens and the remedy, and the rerun asks nothing. A failed row was refused again by every
    rerun (exit 3 for ever): a resume keeps max_tokens, part of the run's key."""
    asked = []

    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        asked.append(body["max_tokens"])
        if len(asked) == 2:
            return 400, {"error": {"message": NO_ROOM_64, "type": "BadRequestError", "param": None, "code": 400}}
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]", body["model"])

    data, out = _pairs(tmp_path / "pairs.jsonl", 4), tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        args = _chat_run(server, data, out, "--concurrency", "1", "--max-tokens", "64", "--pairwise-orders", "original")
        assert main(args) == 0
        assert main(args) == 0
    assert asked == [64] * 4
    assert [(row["error"], row["reason"]) for row in _lines(out)][1] == (
        "context_length_exceeded", f"{NO_ROOM_64} (the prompt fits the context window, but not with max_tokens 64: "
                                   "lower --max-tokens, in a new --out or with --overwrite, since a resume keeps the "
                                   "run's max_tokens)")
    assert [row["error"] for row in _lines(out)] == [None, "context_length_exceeded", None, None]


#: Older vLLM's words for a prompt of 901 tokens that fits a 1024-token window but not with max_tokens 64.
NO_ROOM_64 = ("'max_tokens' or 'max_completion_tokens' is too large: 64. This model's maximum context length is 1024 "
              "tokens and your request has 1000 input tokens (64 > 1024 - 1000).")
#: judge-serve's 400 for a pair longer than its judge's window (code context_length_exceeded).
SERVE_TOO_LONG = ("pairs[0]: the prompt is 5000 tokens; with max_tokens 64 it needs 5064 > the model's context of "
                  "4096 tokens.")


def _judge_serve_answer(item_id: str, said: str) -> tuple[int, dict]:
    """judge-serve's /v1/judge answer to one pair's item (``<pair id>#<order>``, echoed): p1 refused with ``said``
    and the error code context_length_exceeded; any other pair judged -1."""
    from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult

    if item_id.startswith("p1#"):
        return 400, {"error": {"message": said, "type": "invalid_request_error", "param": "pairs[0]",
                               "code": "context_length_exceeded"}}
    result = JudgeResult(criterion="pairwise", criterion_id=None, scale=[-1, 0, 1], feedback="r", score=-1.0,
                         parse_ok=True, score_source="verdict", in_scale=True, output="-1")
    answer = JudgeResponse("judge-1", "judge.result", 0, "tiny", "seq2seq", "tagged", "v",
                           [JudgeResponseItem(0, item_id, [result])], JudgeResponseUsage(1, 1, 0, 0, 0))
    return 200, answer.to_json()


def _chat_run(server: ScriptedEndpoint, data: Path, out: Path, *flags: str) -> list[str]:
    """``judge-eval run`` of ``data`` against ``server``'s chat route, its verdicts tagged, retries at once."""
    return ["run", "--judge", server.base_url, "--data", str(data), "--out", str(out), "--no-progress",
            "--backoff-s", "0.01", "--verdict-format", "tagged", *flags]


def _judge_serve_run(server: ScriptedEndpoint, data: Path, out: Path) -> list[str]:
    return ["run", "--judge", server.base_url, "--data", str(data), "--out", str(out), "--no-progress",
            "--pairwise-orders", "original", "--max-tokens", "64", "--max-retries", "0", "--backoff-s", "0.01"]


@pytest.mark.parametrize(("said", "no_room"), [
    # serve/jobs.py build_pair_jobs: the prompt, 3000 tokens, fits the 4096-token window; max_tokens 2000 does not
    ("pairs[0]: the prompt is 3000 tokens; with max_tokens 2000 it needs 5000 > the model's context of 4096 tokens.",
     True),
    # serve/jobs.py check_pair_sizes: a bound at the longest token's characters per token, which cannot tell that
    # the pair would fit the window: the pair's own final row, its words as they are
    ("pairs[0]: 3001 characters of instruction, answers and rubrics cannot fit the 96 prompt tokens left of the "
     "model's context of 4096 (max_tokens 4000); at most 384 characters.", False),
])
def test_a_pair_judge_serve_finds_no_room_for_max_tokens_is_the_settings_final_row_naming_it(tmp_path, said,
                                                                                             no_room):
    """judge-serve answers context_length_exceeded both for a pair longer than the window and for one that fits but
    leaves no room for max_tokens; its words tell which. The second is the settings': held by the first-refusals
    stop, else a final row whose reason names max_tokens (it was a final row saying only the server's words, as if
    the pair were too long, and the run key refuses a lowered --max-tokens on resume)."""
    def respond(path: str, body: dict):
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (pair,) = body["pairs"]
        return _judge_serve_answer(pair["id"], said)

    data, out = _pairs(tmp_path / "pairs.jsonl", 3), tmp_path / "run"
    with ScriptedEndpoint(respond, model="tiny") as server:
        assert main(_judge_serve_run(server, data, out)) == 0
    (row,) = [row for row in _lines(out) if row["id"] == "p1"]
    assert row["error"] == "context_length_exceeded"
    if no_room:
        assert row["reason"].startswith(said) and "max_tokens 64" in row["reason"] and "--max-tokens" in row["reason"]
    else:
        assert row["reason"] == said


def test_a_pair_judge_serve_finds_too_long_is_a_final_row_never_asked_again(tmp_path):
    """judge-serve's /v1/judge answers pair p1 with a 400 whose error code is context_length_exceeded (the pair longer
    than the judge's window): a final row, as the pointwise judge-serve route writes its oversize result, so the run
    exits 0 and its rerun asks nothing. A failed row was asked, and refused, by every rerun (exit 3 for ever)."""
    asked = []

    def respond(path: str, body: dict):
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (pair,) = body["pairs"]
        asked.append(pair["id"])
        return _judge_serve_answer(pair["id"], SERVE_TOO_LONG)

    data, out = _pairs(tmp_path / "pairs.jsonl", 3), tmp_path / "run"
    with ScriptedEndpoint(respond, model="tiny") as server:
        assert main(_judge_serve_run(server, data, out)) == 0
        assert main(_judge_serve_run(server, data, out)) == 0
    assert sorted(asked) == ["p0#original", "p1#original", "p2#original"]
    assert {row["id"]: (row["error"], row["reason"]) for row in _lines(out)} == {
        "p0": (None, ""), "p1": ("context_length_exceeded", SERVE_TOO_LONG), "p2": (None, "")}


def test_a_pair_past_judge_serves_body_bound_is_a_final_row_never_asked_again(tmp_path):
    """judge-serve's /v1/judge answers pair p1 with its 413 (the body past ``max_body_bytes``): one pair a request,
    so nothing smaller can be sent and that server refuses it however often it is asked. A final row, its reason the
    413's and how a larger server judges it, as the pointwise route writes one criterion past the bound
    (``eval.judging.backends.BodyPastBound``), so the run exits 0 and its rerun asks nothing. Before, a failed row
    that every rerun asked, and was refused again (exit 3 for ever)."""
    asked = []
    too_large = "body: the request body exceeds 8388608 bytes"
    refusal = judge_serve_too_large()

    def respond(path: str, body: dict):
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (pair,) = body["pairs"]
        asked.append(pair["id"])
        if pair["id"] == "p1#original":  # a pair and its order: judge-serve's pair id
            return refusal
        return _judge_serve_answer(pair["id"], "")

    data, out = _pairs(tmp_path / "pairs.jsonl", 3), tmp_path / "run"
    with ScriptedEndpoint(respond, model="tiny") as server:
        assert main(_judge_serve_run(server, data, out)) == 0
        assert main(_judge_serve_run(server, data, out)) == 0
    assert sorted(asked) == ["p0#original", "p1#original", "p2#original"]
    rows = {row["id"]: (row["error"], row["reason"]) for row in _lines(out)}
    assert rows == {"p0": (None, ""), "p2": (None, ""), "p1": (
        "context_length_exceeded", f"the server refused the request's body as too large (HTTP 413: {too_large}), "
        "with this one judgment alone: a server with a larger bound (judge-serve's max_body_bytes) judges it in a new "
        "--out, with --overwrite, or once this row is deleted (a resume keeps final rows)")}


def test_a_pair_past_a_chat_servers_body_bound_is_a_final_row_never_asked_again(tmp_path):
    """The chat route's 413 (judge-serve proxies /v1/chat/completions under its ``max_body_bytes``) for pair p1, the
    others answered: p1's final row, as on judge-serve's /v1/judge route, and a rerun asks nothing. Before, a failed
    row that every rerun asked, and was refused again (exit 3 for ever)."""
    refusal = judge_serve_too_large()

    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if "Вопрос 1?" in body["messages"][0]["content"]:
            return refusal
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]", body["model"])

    data, out = _pairs(tmp_path / "pairs.jsonl", 3), tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        args = _chat_run(server, data, out, "--pairwise-orders", "original")
        assert main(args) == 0
        assert main(args) == 0
        asked = len(server.bodies("/v1/chat/completions"))
    assert asked == 3
    rows = {row["id"]: row for row in _lines(out)}
    assert {pair: row["error"] for pair, row in rows.items()} == {
        "p0": None, "p1": "context_length_exceeded", "p2": None}
    assert "HTTP 413: body: the request body exceeds 8388608 bytes" in rows["p1"]["reason"]


def test_a_refusal_held_while_every_later_pair_is_too_long_is_written(tmp_path):
    """Three pairs, one order, concurrency 1: the first judgment is filtered (held: it could be the first of three
    alike), the two after it are longer than the judge's window (their own final rows, which neither hold nor end the
    holding). The run ends without the stop, so the held refusal is written as its failed row (exit 3); it was never
    written, and the pair had no row at all."""
    too_long = ("This model's maximum context length is 2048 tokens. However, your prompt contains 5000 input "
                "tokens, which exceeds this limit even without any output tokens.")

    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if "Вопрос 0?" in body["messages"][0]["content"]:
            return 400, {"error": {"message": "rejected by the safety system"}}
        return 400, {"error": {"message": too_long, "type": "BadRequestError"}}

    data, out = _pairs(tmp_path / "pairs.jsonl", 3), tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_chat_run(server, data, out, "--concurrency", "1", "--pairwise-orders", "original"))
        asked = len(server.bodies("/v1/chat/completions"))
    assert (code, asked) == (3, 3)
    rows = {r["id"]: r for r in _lines(out)}
    assert {pair: row["error"] for pair, row in rows.items()} == {
        "p0": "request_failed", "p1": "context_length_exceeded", "p2": "context_length_exceeded"}


def test_a_pairwise_run_ending_with_failed_requests_warns_with_the_first_ones_reason(tmp_path, caplog):
    """As a pointwise run ends (``eval.judging.predictions.log_failed_requests``): how many requests failed, the
    first written (its pair's id a literal, and its order) and its reason, the server's control characters shown as
    escapes on one line, and the file that holds their rows; a run whose requests all answered says nothing of it."""
    hostile = "bad request\x1b[2J\n2026-01-01 00:00:00,000 INFO judge_eval.pairwise: all good"

    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if "Вопрос 3?" in body["messages"][0]["content"]:
            return 422, {"error": {"message": hostile, "type": "BadRequestError", "param": None, "code": 422}}
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]", body["model"])

    def run(server, data: Path, out: Path) -> int:
        return main(["run", "--judge", server.base_url, "--data", str(data), "--out", str(out), "--no-progress",
                     "--max-retries", "0", "--verdict-format", "tagged", "--concurrency", "1"])

    def said() -> list[str]:
        return [m for r in caplog.records if r.name == "judge_eval.pairwise" and "failed (the first" in
                (m := r.getMessage())]

    with ScriptedEndpoint(respond, model="judge") as server:
        assert run(server, _pairs(tmp_path / "clean.jsonl", 3), tmp_path / "clean") == 0
        assert said() == []
        out = tmp_path / "run"
        assert run(server, _pairs(tmp_path / "pairs.jsonl", 4), out) == 3
    failed = [row for row in _lines(out) if row["error"] == "request_failed"]
    assert sorted(row["order"] for row in failed) == ["original", "swapped"] and {r["id"] for r in failed} == {"p3"}
    (line,) = said()
    assert line == (f"2 requests failed (the first written, pair 'p3' in the {failed[0]['order']} order: HTTP 422: "
                    "Error code: 422 - bad request\\x1b[2J 2026-01-01 00:00:00,000 INFO judge_eval.pairwise: all "
                    f"good): each is a row of {out / PAIRWISE_PREDICTIONS} with its reason, and a rerun into the same "
                    "--out asks them again")

"""Pairwise `judge-eval run`: judgments a content filter refuses one by one never stop every rerun, and the
predictions file keeps one row per judgment however many reruns ask them again.

As a pointwise run (``eval.judging.backends.FirstRefusals``): the stop is armed only by judgments never asked before,
so a rerun left with the refused ones asks each and writes its failed row (exit 3); ``pending_judgments`` drops a
judgment's earlier rows. The judge is a scripted chat server (``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import json
from pathlib import Path

from eval.cli import main
from eval.pairwise.judging import PAIRWISE_PREDICTIONS
from judge.plumbing.retry import EXIT_UNUSABLE
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
        args = ["run", "--judge", server.base_url, "--data", str(data), "--out", str(out), "--no-progress",
                "--backoff-s", "0.01", "--verdict-format", "tagged", "--concurrency", "1"]
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


def test_a_pair_that_fits_but_leaves_no_room_for_max_tokens_is_a_refusal_not_a_final_row(tmp_path, capsys):
    """vLLM's 400 when prompt + max_tokens overflow the window names each request's own counts ("… your request has
    P input tokens (X > W - P)"), the prompt itself fitting: the settings' fault. The first three such refusals stop
    the run (exit 4; numbers aside they are alike) and their rows are request_failed, asked again by a rerun; kept as
    final context_length_exceeded rows the run ended with exit 0, every judgment unscored, and a rerun asked
    nothing. A pair longer than the window itself stays a final row (tests/unit/test_eval_backends.py)."""
    def respond(path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt_tokens = 900 + len(body["messages"][0]["content"]) % 50  # each request its own count
        return 400, {"error": {"message": (
            f"'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is 4096 "
            f"tokens and your request has {prompt_tokens} input tokens (4000 > 4096 - {prompt_tokens}).")}}

    data, out = _pairs(tmp_path / "pairs.jsonl", 4), tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        args = ["run", "--judge", server.base_url, "--data", str(data), "--out", str(out), "--no-progress",
                "--backoff-s", "0.01", "--verdict-format", "tagged", "--concurrency", "1"]
        assert main(args) == EXIT_UNUSABLE
    assert "refused the first 3 requests alike" in capsys.readouterr().err
    assert [row["error"] for row in _lines(out)] == ["request_failed"] * 3

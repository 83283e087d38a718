"""An HTTP 200 chat answer that holds no choice (a proxy's ``{"error": {...}}`` body, or ``choices: []``) is no
answer: `judge-eval run` on pairs and `judge-eval rank`'s candidate write it as a failed request with the server's
words, and the next run asks it again, as the pointwise chat backend does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import REQUEST_FAILED
from eval.pairwise.judging import PAIRWISE_PREDICTIONS, load_pairs, read_pairwise_rows
from tests.support.eval_ranking import Candidate, Judge, instruction_rows, rank_argv, scores_by_output
from tests.support.release_instructions import write_instructions_dataset
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

HUB_ID = "ai-forever/Pollux-4B-Judge"
SCALE = "Критерий: точность.\n-1: ответ 1 лучше\n0: ответы равноценны\n1: ответ 2 лучше"
PAIRS = [{"id": f"p{k}", "instruction": f"Вопрос {k}?", "answer_1": f"Первый {k}.", "answer_2": f"Второй {k}.",
          "rubrics": SCALE, "winner": -1} for k in range(1, 4)]

# The two bodies a proxy answers with HTTP 200 and no choice, and the words each failed row keeps.
NO_CHOICE = [({"error": {"message": "upstream overloaded", "type": "proxy_error"}},
              "HTTP 200, but the answer holds no choice: upstream overloaded"),
             ({"id": "x", "object": "chat.completion", "created": 0, "model": HUB_ID, "choices": []},
              "HTTP 200, but the answer holds no choice")]


@pytest.mark.parametrize(("body", "reason"), NO_CHOICE)
def test_pairwise_no_choice_is_a_failed_request_asked_again(tmp_path: Path, body: dict, reason: str) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in PAIRS), encoding="utf-8")
    pairs = load_pairs(data)
    # pair p2 shown in its original order is the one the proxy answers without a choice
    broken = judge.render_pairwise_prompt(pairs[1].shown("original"))

    def respond(proxy_fails: bool):
        def answer(path: str, request: dict):
            if path != "/v1/chat/completions":  # a chat server: /v1/judge is 404, as on vLLM
                return 404, {"detail": "Not Found"}
            if proxy_fails and request["messages"][0]["content"] == broken:
                return 200, body
            return 200, chat_completion("-1", HUB_ID)
        return answer

    argv = ["run", "--judge", None, "--model", HUB_ID, "--data", str(data), "--out", str(tmp_path / "run"),
            "--no-progress", "--max-retries", "0"]
    with ScriptedEndpoint(respond(True), model=HUB_ID) as server:
        argv[2] = server.base_url
        main(argv)
    rows = {(r.id, r.order): r for r in read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)}
    assert len(rows) == 6
    assert (rows["p2", "original"].error, rows["p2", "original"].reason, rows["p2", "original"].verdict) == (
        REQUEST_FAILED, reason, None)
    assert [k for k, r in rows.items() if r.error] == [("p2", "original")]
    with ScriptedEndpoint(respond(False), model=HUB_ID) as server:
        argv[2] = server.base_url
        assert main(argv) == 0
        assert [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")] == [broken]
    rows = {(r.id, r.order): r for r in read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)}
    assert (rows["p2", "original"].error, rows["p2", "original"].verdict) == (None, -1.0)


class _ProxyCandidate(Candidate):
    """The candidate behind a proxy that answers instruction 2 with HTTP 200 and ``body`` (no choice)."""

    def __init__(self, body: dict):
        self.body = body
        super().__init__()

    def _respond(self, path: str, request: dict):
        if request["messages"][0]["content"].startswith("Инструкция 2:"):
            return 200, self.body
        return super()._respond(path, request)


@pytest.mark.parametrize(("body", "reason"), NO_CHOICE)
def test_ranking_no_choice_is_a_failed_answer_asked_again(tmp_path: Path, body: dict, reason: str) -> None:
    data = write_instructions_dataset(tmp_path / "POLLUX-instructions", instruction_rows())
    out = tmp_path / "bench"
    with _ProxyCandidate(body) as cand, Judge(scores_by_output()) as judge_server:
        assert main(rank_argv(cand.base_url, judge_server.base_url, data, out)) == 3  # an answer is missing
    answers = {row["prompt_id"]: row for row in map(json.loads, (out / "answers.jsonl").read_text().splitlines())}
    assert (answers[2]["answer"], answers[2]["error"]) == (None, REQUEST_FAILED)
    assert answers[2]["reason"] == f"Refused: {reason}"
    assert json.loads((out / "rank.json").read_text(encoding="utf-8"))["counts"]["n_answer_failed"] == 1
    with Candidate() as cand, Judge(scores_by_output()) as judge_server:
        assert main(rank_argv(cand.base_url, judge_server.base_url, data, out)) == 0
        assert [b["messages"][0]["content"] for b in cand.bodies("/v1/chat/completions")] == [
            "Инструкция 2: напиши текст."]

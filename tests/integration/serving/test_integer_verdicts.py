"""The integer verdict format (``ai-forever/Pollux-4B-Judge``): the parser on the outputs POLLUX's own client accepts,
the format chosen from the judge, and ``judge-eval run`` against a server answering as
``vllm serve ai-forever/Pollux-4B-Judge --reasoning-parser qwen3`` does.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_integer_verdicts.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from judge import Scale, parse_integer_verdict
from judge.verdicts import read_served_verdict


# ---- judge-serve serves a Qwen3 judge in the integer format (tiny real model, real vLLM engine) ------------------


@pytest.fixture(scope="module")
def tiny_pollux_4b(tmp_path_factory) -> Path:
    """Pollux-4B-Judge in miniature: a plain Qwen3ForCausalLM folder (no export manifest) named as the release, with
    Qwen3's tokenizer and hybrid-thinking chat template (train.tiny_models)."""
    from train.tiny_models import build_tiny_qwen3

    return build_tiny_qwen3(tmp_path_factory.mktemp("hub") / "Pollux-4B-Judge", seed=0)


def test_judge_serve_serves_a_qwen3_judge_in_the_integer_format(tiny_pollux_4b, tmp_path, monkeypatch):
    """judge-serve on a folder named Pollux-4B-Judge picks the integer format: the prompt is the 4B's own
    (pollux-ru-4b-v1: the POLLUX prompt and one newline), rendered with thinking on; each /v1/judge result is exactly
    its output read with its finish reason (judge.verdicts.read_served_verdict; reasoning as feedback); the chat
    passthrough answers with `reasoning` apart (--reasoning-parser qwen3); and `judge-eval run` against it writes
    the server's verdicts as predictions, with no extra flag."""
    import httpx
    from transformers import AutoTokenizer

    from eval.cli import main
    from eval.judging.predictions import read_predictions
    from tests.support.fixtures_serve import start_judge_serve

    tokenizer = AutoTokenizer.from_pretrained(tiny_pollux_4b)
    item = {"id": "q1", "instruction": "Напиши четверостишие про осень.", "answer": "Листья падают.",
            "reference_answer": ""}
    criterion = {"name": "Вежливость", "rubrics": "0: грубо\n\n1: вежливо"}
    prompt = judge.prompts.POLLUX_4B_PROMPT.render({**item, "criteria_name": criterion["name"],
                                                    "rubrics": criterion["rubrics"]})
    assert prompt == judge.render_prompt({**item, "criteria_name": criterion["name"], "rubrics": criterion["rubrics"]}) + "\n"
    thinking_on = judge.apply_chat(tokenizer, prompt, thinking=True)
    assert thinking_on.endswith("<|im_start|>assistant\n")  # no empty <think></think>: the judge may reason
    n_prompt = len(tokenizer(thinking_on, add_special_tokens=False)["input_ids"])

    records = judge.load_records(judge.sample_data_path())[:3]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    with start_judge_serve(tiny_pollux_4b) as server:
        headers = {"Authorization": f"Bearer {server.api_key}"}
        response = httpx.post(server.root_url + "/v1/judge", headers=headers, timeout=300,
                              json={"items": [{**item, "criteria": [criterion]}], "max_tokens": 24})  # fmt: skip
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["verdict_format"], body["usage"]["prompt_tokens"]) == ("integer", n_prompt)
        assert body["prompt_version"] == "pollux-ru-4b-v1"
        (result,) = body["items"][0]["results"]
        # read as every route reads it: with the finish reason (cut at max_tokens: cut)
        expected = read_served_verdict("integer", result["output"], scale=Scale((0, 1)),
                                       finish_reason=result["finish_reason"])
        assert (result["parse_ok"], result["score"], result["feedback"], result["error"]) == (
            expected.ok, expected.score, expected.feedback, expected.error)
        assert result["output"] and result["usage"]["completion_tokens"] > 0

        refused = httpx.post(server.root_url + "/v1/judge", headers=headers, timeout=60,
                             json={"items": [{**item, "criteria": [criterion]}], "constrained": True})  # fmt: skip
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "constrained"

        chat = httpx.post(server.base_url + "/chat/completions", headers=headers, timeout=300, json={
            "model": server.model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 8,
            "min_tokens": 8, "temperature": 0})  # fmt: skip
        assert chat.status_code == 200, chat.text
        message = chat.json()["choices"][0]["message"]
        # A tiny random model never closes </think> in 8 tokens: vLLM's qwen3 parser returns it all as reasoning.
        assert message["reasoning"] and not message.get("content")

        pair = {"id": "p1", "instruction": item["instruction"], "answer_1": "Листья падают.", "answer_2": "Осень.",
                "rubrics": "Критерий: образность.\n-1: ответ 1 лучше\n0: одинаково\n1: ответ 2 лучше"}
        paired = httpx.post(server.root_url + "/v1/judge", headers=headers, timeout=300,
                            json={"pairs": [pair], "max_tokens": 24})  # fmt: skip
        assert paired.status_code == 200, paired.text
        (pair_result,) = paired.json()["items"][0]["results"]
        again = parse_integer_verdict(pair_result["output"], None, Scale((-1, 0, 1)))
        assert (pair_result["criterion"], pair_result["scale"], pair_result["parse_ok"], pair_result["score"]) == (
            "pairwise", [-1, 0, 1], again.ok, again.score)

        monkeypatch.setenv("TEST_JUDGE_KEY", server.api_key)
        argv = ["run", "--judge", server.base_url, "--api-key-env", "TEST_JUDGE_KEY", "--data", str(data), "--out",
                str(tmp_path / "run"), "--max-tokens", "24", "--no-progress"]
        assert main(argv) == 0
        pairs_file = tmp_path / "pairs.jsonl"
        pairs_file.write_text(json.dumps(pair, ensure_ascii=False) + "\n", encoding="utf-8")
        assert main(["run", "--judge", server.base_url, "--api-key-env", "TEST_JUDGE_KEY", "--data", str(pairs_file),
                     "--out", str(tmp_path / "pairs"), "--max-tokens", "24", "--no-progress"]) == 0
    from eval.pairwise.judging import read_pairwise_rows

    assert sorted(r.order for r in read_pairwise_rows(tmp_path / "pairs" / "pairwise_predictions.jsonl")) == [
        "original", "swapped"]
    rows = read_predictions(tmp_path / "run")
    assert json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["prompt_version"] == "pollux-ru-4b-v1"
    assert len(rows) == 3
    for row in rows:
        again = read_served_verdict("integer", row["raw_output"], finish_reason=row["finish_reason"])
        assert (row["parse_ok"], row["feedback"]) == (again.ok, again.feedback)
        assert row["error"] == (None if again.ok else again.error)

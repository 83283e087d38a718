"""The pairwise ``/v1/judge`` body takes ``oversize`` as the pointwise one does: a pair whose prompt cannot fit the
judge's context is the request's 400 naming it (``refuse``, the default), or under ``"fail"`` that pair's failed
result ``context_length_exceeded``, its ``error_reason`` the 400's message, the other pairs judged. It holds for each
way a pair is found too long: its texts' characters alone (never rendered), its prompt's tokens, and the engine's
refusal in its own words."""

from __future__ import annotations

import pytest

from serve.schema import RequestError, parse_judge_request
from tests.support.served_app import served

HEADERS = {"Authorization": "Bearer k"}
SCALE = "Какой ответ лучше по корректности?\n-1: первый\n0: одинаково\n1: второй"
PAIR = {"instruction": "Что больше, 2 или 3?", "answer_1": "3", "answer_2": "2", "rubrics": SCALE}
PAIRS = [
    PAIR,
    {**PAIR, "answer_2": "a" * 1_000_000},  # past the characters any 896 prompt tokens can stand for
    {**PAIR, "answer_2": "слово " * 2_000},  # under that, but more tokens than the context leaves
    {**PAIR, "instruction": "Третий вопрос"},  # fits here; the engine refuses it as too long
]
#: vLLM 0.32's 400 for a prompt its window cannot hold (``renderers/params.py``).
CONTEXT_400 = {"error": {"message": "This model's maximum context length is 1024 tokens. However, your prompt "
                                    "contains 1500 input tokens, which exceeds this limit even without any output "
                                    "tokens.", "type": "BadRequestError", "param": None, "code": 400}}


def _engine(tokenizer):
    def completions(path, body):
        if "Третий вопрос" in tokenizer.decode(body["prompt"]):
            return 400, CONTEXT_400
        return 200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] -1 [END]", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

    return completions


def test_pairs_too_long_fail_alone_under_oversize_fail_with_the_refusals_words(tiny_causal_dir, qwen_tokenizer,
                                                                               monkeypatch):
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=_engine(qwen_tokenizer)) as (http, engine):
        failed = http.post("/v1/judge", headers=HEADERS, json={"pairs": PAIRS, "oversize": "fail"})
        sent = len(engine.bodies("/v1/completions"))
        # Each too-long pair after a good one, under the default and under "refuse": the request's 400 naming it.
        refused = {}
        for i in (1, 2, 3):
            for chosen in ({}, {"oversize": "refuse"}):
                body = {"pairs": [PAIR, PAIRS[i]], **chosen}
                refused[i, str(chosen)] = http.post("/v1/judge", headers=HEADERS, json=body)
    assert failed.status_code == 200, failed.text
    results = [item["results"][0] for item in failed.json()["items"]]
    assert [(r["error"], r["score"]) for r in results] == [
        (None, -1), ("context_length_exceeded", None), ("context_length_exceeded", None),
        ("context_length_exceeded", None)]
    assert sent == 2  # pairs 0 and 3 reached the engine; 1 and 2 were never sent
    assert failed.json()["usage"]["judgments"] == 4 and failed.json()["usage"]["parsed"] == 1
    assert results[1]["error_reason"].startswith("pairs[1]: 1000") and "characters" in results[1]["error_reason"]
    assert results[2]["error_reason"].startswith("pairs[2]: the prompt is ")
    assert results[3]["error_reason"].startswith("pairs[3]: the engine refused the prompt for criterion 'pairwise' "
                                                 "as longer than the model's context")
    for (i, oversize), answer in refused.items():
        assert answer.status_code == 400, (i, oversize, answer.text)
        error = answer.json()["error"]
        # the 400 names the pair in the request it came in (index 1 of two), in the words the failed result used
        assert (error["param"], error["code"]) == ("pairs[1]", "context_length_exceeded")
        assert error["message"] == results[i]["error_reason"].replace(f"pairs[{i}]", "pairs[1]", 1)


@pytest.mark.parametrize("body", [{"items": [{"instruction": "q", "answer": "a", "criteria": ["Креативность"]}]},
                                  {"pairs": [PAIR]}], ids=["items", "pairs"])
def test_oversize_takes_the_same_values_on_both_bodies(body):
    assert parse_judge_request({**body, "oversize": "fail"}).oversize == "fail"
    assert parse_judge_request(body).oversize is None  # the server reads None as "refuse"
    with pytest.raises(RequestError) as err:
        parse_judge_request({**body, "oversize": "drop"})
    assert (err.value.status, err.value.param) == (400, "oversize")
    assert err.value.message == "oversize: must be one of 'refuse' or 'fail', got a string 'drop'"

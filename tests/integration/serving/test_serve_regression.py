"""judge-serve over a tiny regression judge export: rationale from the generating engine, score from the pooling
engine's head over (prompt + rationale), the LM's own verdict beside it.

A dead engine (503 with Retry-After at once, then healed, or judge-serve's exit past the restart limit) is pinned
in tests/integration/serving/test_serve_faults.py on that module's own server: judge-serve now restarts a killed engine, and killing
this session server's pooler would leave it restarting beside the tests that follow.
"""

from __future__ import annotations

import httpx
import openai
import pytest

import judge

ITEM = {"instruction": "Объясни, почему небо голубое.", "answer": "Из-за рэлеевского рассеяния света.", "reference_answer": "Рассеяние Рэлея."}


def _post(server, body) -> httpx.Response:
    return httpx.post(server.root_url + "/v1/judge", json=body, headers={"Authorization": f"Bearer {server.api_key}"}, timeout=120)


def test_regression_single_item_with_the_openai_sdk(regression_server):
    """One item: the score is the regression head's, the LM's own (score-less) verdict is reported beside it."""
    client = openai.OpenAI(base_url=regression_server.base_url, api_key=regression_server.api_key, max_retries=0)
    response = client.post("/judge", body={**ITEM, "criteria": ["Креативность"], "constrained": True}, cast_to=object)
    assert response["judge_kind"] == "regression"
    (result,) = response["items"][0]["results"]
    assert result["score_source"] == "regression_head" and result["parse_ok"] is True and result["error"] is None
    assert isinstance(result["regression_score"], float)
    assert result["score"] == pytest.approx(min(max(result["regression_score"], 0), 2))
    assert result["rationale_complete"] is True and result["feedback"]
    assert result["output"].startswith("[FEEDBACK] ") and result["output"].endswith(" [END]")
    assert result["feedback"] == result["output"][len("[FEEDBACK] "):-len(" [END]")].strip()
    # The regression LM writes no [RESULT]: its own verdict is a parse failure, reported, not scored.
    assert result["lm_verdict"] == {"score": None, "parse_ok": False, "error": "no_result", "error_reason": "no [RESULT] tag in the output"}
    assert result["expected_score"] is None


def test_head_reads_exactly_the_training_text(regression_server, tiny_regression_export):
    """The served score equals transformers' head on judge.apply_chat(prompt, render_rationale_target(rationale))."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    criterion = judge.load_taxonomy().criterion("Грамотность")
    response = _post(regression_server, {**ITEM, "criteria": ["Грамотность"], "constrained": True})
    (result,) = response.json()["items"][0]["results"]
    tokenizer = AutoTokenizer.from_pretrained(tiny_regression_export)
    prompt = judge.render_prompt({**ITEM, "criteria_name": criterion.name["ru"], "rubrics": criterion.rubric("ru")})
    text = judge.apply_chat(tokenizer, prompt, completion=judge.render_rationale_target(result["feedback"]))
    model = AutoModelForSequenceClassification.from_pretrained(tiny_regression_export, dtype=torch.float32).eval()
    with torch.no_grad():
        expected = model(**tokenizer(text, add_special_tokens=False, return_tensors="pt")).logits[0, 0].item()
    assert result["regression_score"] == pytest.approx(expected, abs=1e-3)


def test_regression_batch_custom_rubric_and_task_type(regression_server):
    """A batch with a custom rubric and a task type's criteria: every judgment scored by the head, in order; an
    unconstrained rationale that runs out of tokens before a tag closed it fails ``cut``, unscored (re-rendered, it
    would gain an [END] the judge never wrote); one cut after such a tag is scored."""
    tax = judge.load_taxonomy()
    body = {
        "items": [
            {**ITEM, "id": 1, "criteria": [{"name": "Краткость", "rubrics": {"0": "многословно", "1": "кратко"}}, "facts__3"]},
            {"id": 2, "instruction": "Сделай рецензию", "answer": "Фильм хороший.", "task_type": "Recommendations"},
        ],
        "max_tokens": 12,
    }
    response = _post(regression_server, body)
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [it["id"] for it in items] == [1, 2]
    assert [r["criterion_id"] for r in items[0]["results"]] == [None, "facts__3"]
    assert [r["criterion_id"] for r in items[1]["results"]] == [c.id for c in tax.criteria_for("Recommendations")]
    for result in items[0]["results"] + items[1]["results"]:
        if result["feedback"] and result["finish_reason"] == "length" and not result["rationale_complete"]:
            # cut before a tag closed the rationale: a failure, never the head's score
            assert (result["error"], result["score"], result["score_source"]) == ("cut", None, None)
            assert result["rationale_complete"] is False and result["regression_score"] is None
        elif result["feedback"]:
            assert result["score_source"] == "regression_head" and result["scale"][0] <= result["score"] <= result["scale"][-1]
            # ended by its stop, or cut at max_tokens after a tag closed the rationale: scored on the closed one
            assert result["rationale_complete"] is True
        else:  # nothing to score: a failure with a reason, never a score
            assert result["score"] is None and result["error"] == "empty"


def test_pooler_metrics(regression_server):
    """The pooling engine's Prometheus metrics are exposed at /metrics/pooler, behind the key."""
    response = httpx.get(regression_server.root_url + "/metrics/pooler",
                         headers={"Authorization": f"Bearer {regression_server.api_key}"})
    assert response.status_code == 200 and "vllm:" in response.text
    assert httpx.get(regression_server.root_url + "/metrics/pooler").status_code == 401

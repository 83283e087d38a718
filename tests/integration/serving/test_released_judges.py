"""The released judges as published: hub ids resolved from the Hugging Face cache, the released
seq2seq layout served as it is, and a released ``-r`` judge (``Qwen2WithRegressionHead``, head with a bias) served
without its custom code, its score equal to the released head over POLLUX's scoring text.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_released_judges.py.
"""

from __future__ import annotations

import httpx
import pytest

import judge
from tests.support.released_judges import indexed_tensors


ITEM = {
    "instruction": "Объясни, почему небо голубое.",
    "answer": "Из-за рэлеевского рассеяния света.\n",
    "reference_answer": "",
}


# ------------------------------------------------------------------------------------------------ served


def test_served_released_r_score_is_the_head_over_the_generated_text(released_regression_server, released_regression_dir):
    """judge-serve --model ai-forever/pollux-judge-7b-r (offline cache): the regression score equals w . h + b, h the
    final normed hidden state of the last token of chat(prompt, output as generated), fp32; no custom code ran."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2Model

    criterion = judge.load_taxonomy().criterion("Грамотность")
    response = httpx.post(
        released_regression_server.root_url + "/v1/judge",
        json={**ITEM, "criteria": ["Грамотность"], "constrained": True},
        headers={"Authorization": f"Bearer {released_regression_server.api_key}"},
        timeout=300,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    (result,) = body["items"][0]["results"]
    assert body["judge_kind"] == "regression" and result["score_source"] == "regression_head"
    assert result["output"].startswith("[FEEDBACK] ") and result["output"].endswith("[END]")

    # The reference: transformers' Qwen2Model on the released weights, the head applied by hand.
    config = Qwen2Config.from_pretrained(released_regression_dir)
    tensors = indexed_tensors(released_regression_dir)
    model = Qwen2Model(config).to(torch.float32).eval()
    model.load_state_dict({k.removeprefix("model."): v for k, v in tensors.items() if k.startswith("model.")})
    tokenizer = AutoTokenizer.from_pretrained(released_regression_dir)
    prompt = judge.render_prompt({**ITEM, "criteria_name": criterion.name["ru"], "rubrics": criterion.rubric("ru")})
    text = judge.apply_chat(tokenizer, prompt, completion=result["output"])
    assert not text.endswith("<|im_start|>assistant\n")  # no generation prompt
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        hidden = model(input_ids=ids).last_hidden_state[0, -1]
    weight, bias = tensors["regression_head.weight"], tensors["regression_head.bias"]
    expected = float(hidden @ weight[0] + bias[0])
    assert result["regression_score"] == pytest.approx(expected, abs=1e-4)
    assert abs(result["regression_score"] - (expected - 0.75)) > 0.5  # the bias is in it
    assert result["score"] == pytest.approx(min(max(result["regression_score"], result["scale"][0]), result["scale"][-1]))

    layout = released_regression_server.run_record()["layout"]
    assert layout["released"] == "True" and layout["head_input"] == "generated_text"
    assert layout["generator_dir"].endswith("/causal") and layout["pooler_dir"].endswith("/classifier")
    assert not (released_regression_dir.parent / "imported").exists()


def test_released_data_judged_by_the_released_regression_judge_and_scored(released_regression_server, released_data,
                                                                          tmp_path, monkeypatch):  # fmt: skip
    """The -r layout served under its hub id: every item gets the head's raw value (regression_score), `score`
    compares with the experts' mean, and POLLUX's evaluator, which reads a score from text, gives no figure."""
    from eval.judging.predictions import read_predictions
    from tests.support.release_artifacts import assert_paper_and_pollux_figures, judge_and_score

    metrics = judge_and_score(released_regression_server, released_data, tmp_path / "r", monkeypatch)
    assert metrics["target"] == "mean"
    assert_paper_and_pollux_figures(metrics, regression=True)  # POLLUX's evaluator reads text: no -r figure
    rows = read_predictions(tmp_path / "r")
    assert all(r["score_source"] == "regression_head" and isinstance(r["regression_score"], float) for r in rows)

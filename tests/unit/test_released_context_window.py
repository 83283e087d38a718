"""The released judges' context window: POLLUX's own scoring (``src/vllm_offline_generation.py`` in
ai-forever/POLLUX) builds ``vllm.LLM`` with no ``max_model_len``, so vLLM takes the checkpoint's whole window and every
benchmark item is judged; judge-serve's window is its ``max_model_len`` setting. The page on the release
(docs/released-pollux.md) and the fidelity table must say what the default does to a long item and how to judge it
as POLLUX does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eval.judging.config import RunConfig
from serve.config import ServeConfig
from serve.jobs import build_jobs
from serve.schema import RequestError, parse_judge_request

DOCS = Path(__file__).parents[2] / "docs"
ITEM = {"instruction": "Перескажи текст.", "criteria": ["Грамотность"]}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_default_window_fails_a_long_item_that_pollux_judges_and_the_docs_say_so(qwen_tokenizer):
    """By hand: the window 4,096 less the 1,024 generated tokens leaves 3,072 for the prompt. An answer of
    3,200 tokens cannot fit it (a counted ``context_length_exceeded`` failure of the item) and fits a window of
    32,768 (a Qwen2.5 judge's own), where POLLUX's ``LLM`` would judge it."""
    window, budget = ServeConfig().max_model_len, RunConfig().max_tokens
    assert (window, budget, window - budget) == (4096, 1024, 3072)
    answer = " ".join(["слово"] * 3200)
    assert 3072 < len(qwen_tokenizer.encode(answer)) < 32768 - 1024
    request = parse_judge_request({"items": [{**ITEM, "answer": answer}]})
    with pytest.raises(RequestError) as refused:
        build_jobs(request, qwen_tokenizer, max_model_len=window, max_tokens=budget)
    assert refused.value.code == "context_length_exceeded"
    (job,) = build_jobs(request, qwen_tokenizer, max_model_len=32768, max_tokens=budget)
    assert window < len(job.prompt_ids) < 32768 - budget

    page = _flat((DOCS / "released-pollux.md").read_text(encoding="utf-8"))
    assert f"`max_model_len`, {window:,} tokens by default" in page
    assert "`context_length_exceeded`" in page and "--max-model-len" in page
    assert """--server-args '["--max-model-len", "32768"]'""" in page
    row = [line for line in (DOCS / "fidelity.md").read_text(encoding="utf-8").splitlines()
           if "max_model_len" in line and "vllm_offline_generation.py" in line]
    assert len(row) == 1 and f"{window:,}" in row[0]
    assert "test_released_context_window.py::test_the_default_window_fails_a_long_item" in row[0]

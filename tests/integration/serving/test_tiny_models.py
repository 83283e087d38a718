"""Tiny real models: the Qwen2.5 tokenizer, the tiny Qwen2 checkpoints, and the vLLM server fixture.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_tiny_models.py.
"""

from __future__ import annotations


def test_vllm_server_answers_chat_completion(vllm_tiny_server):
    """The real vLLM OpenAI server on the tiny model answers /v1/chat/completions through the openai client."""
    from openai import OpenAI

    client = OpenAI(base_url=vllm_tiny_server.base_url, api_key=vllm_tiny_server.api_key, timeout=120)
    assert [m.id for m in client.models.list().data] == ["tiny-judge"]
    response = client.chat.completions.create(
        model=vllm_tiny_server.model,
        messages=[{"role": "user", "content": "Оцени ответ по шкале 0–2."}],
        max_tokens=8,
        temperature=0.0,
        # A random model may pick a special token first; min_tokens keeps the check about serving, not luck.
        extra_body={"min_tokens": 8},
    )
    choice = response.choices[0]
    assert choice.message.content
    assert choice.finish_reason in {"stop", "length"}
    assert response.usage.completion_tokens == 8

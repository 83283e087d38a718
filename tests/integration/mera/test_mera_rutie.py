"""ruTiE: answer parsing, prompts, metrics, and runs against a scripted endpoint at the HTTP boundary.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_mera_rutie.py.
"""

from __future__ import annotations

import json


from eval.mera import cli
from judge.plumbing.journal import read_jsonl
from eval.mera.rutie import (
    load_dialogues,
)
from tests.support.mera_rutie import SAMPLE, lm_eval_loglikelihood


def test_rutie_on_sample_against_tiny_vllm(vllm_tiny_server, tiny_causal_dir, tmp_path, monkeypatch):
    """The bundled sample against the tiny model under real vLLM, generated and by log-probabilities; the latter's
    scores are the harness's log-likelihoods of " 1" and " 2" (transformers, lm-eval's token split)."""
    monkeypatch.setenv("OPENAI_API_KEY", vllm_tiny_server.api_key)  # the engine's key, given as users give it
    n_questions = sum(len(d) for d in load_dialogues(SAMPLE).values())

    def run(name: str, *extra: str) -> dict:
        out = tmp_path / name
        rc = cli.main(["rutie", "--endpoint", vllm_tiny_server.base_url, "--model", vllm_tiny_server.model,
                       "--data", "sample", "--out", str(out), "--concurrency", "3", *extra])  # fmt: skip
        assert rc == 0
        assert len(read_jsonl(out / "answers.jsonl")) == n_questions
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["n"] == n_questions and metrics["max_model_len"] == 2048
        assert metrics["prompt_tokens"]["max"] > metrics["prompt_tokens"]["min"] > 0  # context grows
        # A random tiny model: whatever it scores is reported as it is, parsed or not.
        assert metrics["accuracy"] is not None and 0.0 <= metrics["accuracy"] <= 1.0
        print(name, {k: metrics[k] for k in ("accuracy", "accuracy_parsed", "n_unparsed", "n_context_limit")})
        return metrics

    run("generate", "--max-tokens", "4")
    run("chat", "--mode", "chat", "--max-tokens", "4")
    # echo + logprobs through vLLM's completions endpoint: every question gets an answer, and the two continuations'
    # scores differ (a scorer summing the same prompt tokens for both would tie on every question).
    logprobs = run("logprobs", "--scoring", "logprobs", "--answer-cue", "")
    assert (logprobs["n_unparsed"], logprobs["n_ties"], logprobs["protocol"]["same_as_mera_task"]) == (0, 0, True)
    first = read_jsonl(tmp_path / "logprobs" / "answers.jsonl")[0]
    for choice in ("1", "2"):
        expected = lm_eval_loglikelihood(tiny_causal_dir, first["request"], " " + choice)
        assert abs(first["scores"][choice] - expected) < 1e-3, (choice, first["scores"], expected)

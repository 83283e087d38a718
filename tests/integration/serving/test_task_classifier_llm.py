"""The llm task-classifier method: exact guided-choice payloads, logprob probabilities, failures as values, and a
real vLLM server constrained to the taxonomy's names.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_task_classifier_llm.py.
"""

from __future__ import annotations

import math

import pytest

from judge.criteria_auto import fallback_criteria, leaf_of, type_criteria
from judge.criteria_auto.llm import LLMClassifier


def test_llm_against_tiny_vllm_answers_a_taxonomy_leaf(vllm_tiny_server):
    """A random tiny model on vLLM, constrained by guided choice, can only name a leaf of the taxonomy. The
    threshold 0 keeps the task type; whether the leaf itself decides depends on its share of the type (the policy
    every method follows): a random model's answers below the type are rarely sure, and then the criteria are those
    the type's leaves share."""
    # timeout: the first guided request compiles its grammar; on a loaded 2-core machine that took over 60 s
    clf = LLMClassifier(vllm_tiny_server.base_url, vllm_tiny_server.model, max_tokens=48, threshold=0.0, timeout_s=600,
                        api_key=vllm_tiny_server.api_key)
    choice = clf.choose("Напиши стихотворение о весне")
    leaf = leaf_of(choice.label)
    if choice.level == "leaf":
        assert choice.criteria == leaf.criteria and choice.reason == ""
    elif type_criteria(leaf.task_type, leaf=leaf):  # the shared criteria, in the chosen leaf's variants
        assert choice.level == "task_type" and choice.criteria == type_criteria(leaf.task_type, leaf=leaf)
        assert choice.reason.startswith("leaf share")
    else:  # a type whose leaves share no criterion: the criteria for any text
        assert (choice.level, choice.criteria) == ("fallback", fallback_criteria()) and "share no criterion" in choice.reason
    assert choice.probability is not None and 0.0 < choice.probability <= 1.0
    assert choice.task_type_probability is not None and choice.probability <= choice.task_type_probability <= 1.0


def test_a_guided_choice_s_logprobs_are_renormalised_over_the_options(vllm_tiny_server):
    """What the method's probability is (judge/criteria_auto/llm.py): vLLM masks the logits to the tokens the guided
    choice allows before its sampler computes logprobs, under its default --logprobs-mode raw_logprobs. A random tiny
    model gives each of its 151,936 tokens about exp(-11.9) unmasked; renormalised over the allowed tokens, the
    chosen first token holds a share of a few hundred tokens at most, and every token the options do not allow is
    -inf (vLLM writes -9999.0). So the value is the answer's share among the options, not the model's own."""
    import httpx

    clf = LLMClassifier(vllm_tiny_server.base_url, vllm_tiny_server.model, max_tokens=48, timeout_s=600,
                        api_key=vllm_tiny_server.api_key)
    body = {**clf.payload("Напиши стихотворение о весне", 0, [], clf.options(())), "top_logprobs": 20}
    free = {key: value for key, value in body.items() if key != "structured_outputs"} | {"max_tokens": 1}
    headers = {"Authorization": f"Bearer {vllm_tiny_server.api_key}"}
    guided, unguided = (httpx.post(f"{vllm_tiny_server.base_url}/chat/completions", json=payload, headers=headers,
                                   timeout=600).raise_for_status().json()["choices"][0]["logprobs"]["content"][0]
                        for payload in (body, free))
    assert unguided["logprob"] < math.log(1e-4)  # the model's own: near 1 / 151,936
    assert guided["logprob"] > math.log(1e-3)  # renormalised over the options' tokens
    masked = [entry["logprob"] for entry in guided["top_logprobs"] if entry["logprob"] <= -9999.0]
    allowed = [math.exp(entry["logprob"]) for entry in guided["top_logprobs"] if entry["logprob"] > -9999.0]
    # the top 20 hold either every allowed token (their shares summing to 1, the masked ones after them) or 20 of them
    assert (masked and sum(allowed) == pytest.approx(1.0, abs=1e-3)) or (len(allowed) == 20 and sum(allowed) <= 1.0)

"""The llm task-classifier method: exact guided-choice payloads, logprob probabilities, failures as values, and a
real vLLM server constrained to the taxonomy's names.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_task_classifier_llm.py.
"""

from __future__ import annotations

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

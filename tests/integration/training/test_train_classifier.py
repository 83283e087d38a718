"""judge-train classifier: the head recipe learns on the tiny Qwen2, exports in the contract's vocabulary, and
vLLM's pooling runner serves the export with transformers' probabilities.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_train_classifier.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from judge import load_taxonomy
from judge.criteria_auto import HeadClassifier, build_classifier, label_of, leaf_of, type_criteria
from train.config import load_config
from tests.support.train_classifier import TINY_YAML

TAX = load_taxonomy()


@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory, tiny_causal_dir):
    """The tiny classifier config trained once on the session's tiny Qwen2 (8 rows, 12 steps), checkpointed at its
    last step only: no test here reads a checkpoint, and the config's mid-run one would be a save of the weights and
    the optimizer for nothing."""
    from train.classifier import train_classifier

    out = tmp_path_factory.mktemp("classifier")
    config = load_config(TINY_YAML, {"output_dir": str(out), "model_name_or_path": str(tiny_causal_dir),
                                     "save_steps": 12})  # fmt: skip
    return config, train_classifier(config)


def test_classifier_recipe_learns_and_exports_all_leaf_labels(classifier_run, tiny_causal_dir):
    """Loss is finite and falls; the export's id2label is every leaf label; the backbone's weights changed."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    config, result = classifier_run
    losses = [e["loss"] for e in result.log_history if "loss" in e]
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    exported = json.loads(Path(config.output_dir, "export", "config.json").read_text(encoding="utf-8"))
    assert exported["architectures"] == ["Qwen2ForSequenceClassification"]
    assert [exported["id2label"][str(i)] for i in range(len(TAX.tasks))] == [label_of(t) for t in TAX.tasks]
    assert result.export_report["num_labels"] == 152 and result.export_report["max_abs_logit_diff"] < 1e-4
    base = AutoModelForCausalLM.from_pretrained(tiny_causal_dir).model.embed_tokens.weight
    weights = load_file(config.output_dir + "/export/model.safetensors")
    trained = next(v for k, v in weights.items() if k.endswith("embed_tokens.weight"))
    assert not torch.equal(base, trained)
    run = json.loads(Path(config.output_dir, "run.json").read_text(encoding="utf-8"))
    assert run["data"]["n_train"] == 8 and run["data"]["zero_shot_dropped"] >= 1


def test_head_method_reads_the_export(classifier_run):
    """HeadClassifier: softmax over the export's logits, a choice in the taxonomy's vocabulary."""
    config, _ = classifier_run
    clf = build_classifier("head", path=config.output_dir + "/export", threshold=0.0)
    assert isinstance(clf, HeadClassifier)
    probs = clf.predict_proba(["Напиши функцию на Python"])[0]
    assert len(probs) == 152 and math.isclose(sum(probs.values()), 1.0, rel_tol=1e-5)
    choice = clf.choose("Напиши функцию на Python")
    # a tiny head spreads its probability: the choice stops at the leaf or, below LEAF_SHARE, at the task type's
    # shared criteria (judge.criteria_auto.choose_from_scores); never at a set outside the taxonomy
    leaf = leaf_of(choice.label)
    expected = {"leaf": leaf.criteria, "task_type": type_criteria(choice.task_type, leaf=leaf)}
    assert choice.level in expected and choice.criteria == expected[choice.level] and choice.method == "head"


def test_vllm_pooling_runner_serves_the_classifier(classifier_run):
    """vLLM --runner pooling: /classify's probabilities match transformers' softmax on the export."""
    import httpx

    from tests.support.fixtures_models import start_vllm_server

    config, _ = classifier_run
    export = config.output_dir + "/export"
    texts = ["Напиши функцию на Python", "Дай совет, как выспаться"]
    expected = HeadClassifier(export).predict_proba(texts)
    labels = [label_of(t) for t in TAX.tasks]
    with start_vllm_server(export, extra_args=["--runner", "pooling"]) as server:
        body = httpx.post(server.root_url + "/classify", json={"model": server.model, "input": texts}, timeout=120).json()
    assert len(body["data"]) == len(texts), body  # one row per text: zip alone would pass a short or empty answer
    for row, want in zip(body["data"], expected):
        assert len(row["probs"]) == 152
        got = dict(zip(labels, row["probs"]))
        assert max(abs(got[k] - want[k]) for k in labels) < 1e-3

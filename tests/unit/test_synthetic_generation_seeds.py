"""Stage 1's jobs of one (leaf task, complexity level) send one prompt: a generator seeded through its
``extra_body`` answered them alike, so ``per_task_level`` requests were paid for one instruction and the rest dropped as
exact duplicates. Job ``i`` of a pair is asked with the configured seed + ``i``, as the traces stage moves its teacher's
seed per sample."""

from __future__ import annotations

import json

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic.config import InstructionsConfig
from train.synthetic.generation import render_generation_prompt, run_instructions


def _seeded_sampler(path: str, body: dict) -> tuple:
    """A sampler whose text is a function of its seed alone, as a seeded vLLM's is of prompt and seed."""
    return 200, chat_completion(f"[PROBLEM] Задача с зерном {body.get('seed')} [END]", body["model"])


def _config(base_url: str, extra_body: dict) -> InstructionsConfig:
    generator = {"model": "scripted", "base_url": base_url, "temperature": 0.9, "max_tokens": 64,
                 "extra_body": extra_body}
    return InstructionsConfig(generators=[generator], per_task_level=3, task_types=["Plans"], limit=3, max_retries=0)


def test_each_job_of_a_pair_is_asked_with_its_own_seed(tmp_path):
    from judge import load_taxonomy

    with ScriptedEndpoint(_seeded_sampler) as endpoint:
        summary = run_instructions(_config(endpoint.base_url, {"top_p": 0.95, "seed": 7}), tmp_path / "out")
    task = next(t for t in load_taxonomy().tasks if t.task_type == "Plans")
    prompt = render_generation_prompt(task, "easy")
    sent = sorted(endpoint.bodies("/v1/chat/completions"), key=lambda body: body["seed"])  # arrival order is free
    assert sent == [
        {"model": "scripted", "messages": [{"role": "user", "content": prompt}], "temperature": 0.9, "max_tokens": 64,
         "top_p": 0.95, "seed": seed} for seed in (7, 8, 9)]
    assert (summary["kept"], summary["dropped_by_reason"]) == (3, {})


def test_a_rerun_asks_again_only_the_jobs_journalled_under_another_seed(tmp_path):
    """A journal written when every job of a pair was asked with the configured seed: its first job's request is
    the one this stage sends, the others' are not, and only those are asked again."""
    out = tmp_path / "out"
    with ScriptedEndpoint(_seeded_sampler) as endpoint:
        run_instructions(_config(endpoint.base_url, {"seed": 7}), out)
        # the journal an unmoved seed wrote: every job's request as the first one's (its fingerprint and answer)
        rows = [json.loads(line) for line in (out / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
        by_key = {row["key"]: row for row in rows}
        zero = next(row for key, row in by_key.items() if key.endswith("|0"))
        stale = [{**zero, "key": key} for key in sorted(by_key)]
        (out / "journal.jsonl").write_text("".join(json.dumps(row) + "\n" for row in stale), encoding="utf-8")
        endpoint.requests.clear()
        summary = run_instructions(_config(endpoint.base_url, {"seed": 7}), out)
    assert sorted(body["seed"] for body in endpoint.bodies("/v1/chat/completions")) == [8, 9]
    assert (summary["kept"], summary["dropped_by_reason"]) == (3, {})


def test_an_unseeded_generator_is_sent_no_seed(tmp_path):
    with ScriptedEndpoint(_seeded_sampler) as endpoint:
        run_instructions(_config(endpoint.base_url, {}), tmp_path / "out")
    assert all("seed" not in body for body in endpoint.bodies("/v1/chat/completions"))
    assert len(endpoint.bodies("/v1/chat/completions")) == 3

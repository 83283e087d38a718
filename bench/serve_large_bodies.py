"""judge-serve under many large bodies at once: a small /v1/judge request's latency while 16 bodies of ~8 MiB (an
array of four million zeros, refused only once decoded and counted) arrive together, and the server's peak resident
memory, with the large decodes bounded (``serve.schema.LARGE_BODY_DECODES``, what judge-serve does) and unbounded
(every such body decoded at once, as before the bound), in interleaved rounds.

    .venv/bin/python bench/serve_large_bodies.py --rounds 2
    .venv/bin/python bench/serve_large_bodies.py --bodies 32   # example override

Each arm is a fresh judge-serve process (``serve.app.create_app`` on uvicorn with judge-serve's connection protocol
and key) over a tiny random Qwen2 judge on the real Qwen2.5 vocabulary (``train.tiny_models.build_tiny_qwen2``) and a
scripted engine that answers every generation with one tagged verdict at once (``tests.support.scripted_endpoint``),
so that the figures are judge-serve's own work: no vLLM. The client (this process) times one small request alone,
then sends small requests one after another while the large bodies are in flight, and prints their count, median
and maximum latency, the server's peak resident memory (VmHWM), and how the large bodies ended: the count of each
status, and of each client error that ended one without an answer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import machine_line, positive_int  # noqa: E402

KEY = "bench-key-large-bodies"
ITEM = {"instruction": "Напиши стих", "answer": "Стих", "criteria": ["Креативность"], "task_type": "Literary text"}


def serve(port: int, model: str, unbounded: bool) -> None:
    """The server side, in its own process: judge-serve on ``port`` until killed."""
    import uvicorn

    from serve.app import create_app
    from serve.config import ServeConfig
    from serve.connections import header_deadline_protocol
    from serve.schema import LargeDecodes
    from tests.support.scripted_endpoint import ScriptedEndpoint
    from tests.support.serve_in_process import attached_engine_get

    verdict = "[FEEDBACK] ok [RESULT] 1 [END]"

    def answer(path, body):
        return 200, {"choices": [{"text": verdict, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": verdict}}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    with ScriptedEndpoint(answer, respond_get=attached_engine_get) as engine:
        config = ServeConfig(model=model, served_model_name="judge", generator_url=engine.url, max_model_len=1024,
                             max_tokens=128, api_key=KEY)
        app = create_app(config)
        if unbounded:  # every large body decoded at once, as before the bound
            app.state.serve.large_decodes = LargeDecodes(10**6)
        uvicorn.Server(uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning",
            http=header_deadline_protocol(config.header_timeout_s, body_timeout_s=config.body_timeout_s),
            limit_concurrency=config.max_connections)).run()


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_arm(model: str, unbounded: bool, bodies: int, zeros: int) -> dict:
    import httpx

    from judge.plumbing.processes import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--model", model]
                            + (["--unbounded"] if unbounded else []))
    url, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {KEY}"}
    try:
        deadline = time.monotonic() + 120
        while True:  # a bench may poll: it starts a server it does not own the loop of
            try:
                if httpx.get(url + "/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("judge-serve did not come up")
            time.sleep(0.2)
        small = {"model": "judge", "items": [ITEM]}
        start = time.perf_counter()
        assert httpx.post(url + "/v1/judge", headers=headers, json=small, timeout=600).status_code == 200
        alone = time.perf_counter() - start
        large = b'{"items": [' + b"0," * (zeros - 1) + b"0]}"
        answered: list[str] = []

        def post_large() -> None:
            try:
                response = httpx.post(url + "/v1/judge", headers=headers, content=large, timeout=600)
                answered.append(str(response.status_code))
            except httpx.HTTPError as err:  # a body that got no answer is counted too, by what ended it
                answered.append(type(err).__name__)

        threads = [threading.Thread(target=post_large) for _ in range(bodies)]
        for thread in threads:
            thread.start()
        latencies = []
        while any(thread.is_alive() for thread in threads):
            start = time.perf_counter()
            assert httpx.post(url + "/v1/judge", headers=headers, json=small, timeout=600).status_code == 200
            latencies.append(time.perf_counter() - start)
        return {"arm": "unbounded" if unbounded else "bounded", "alone_s": alone, "n": len(latencies),
                "median_s": statistics.median(latencies) if latencies else float("nan"),
                "max_s": max(latencies, default=float("nan")), "peak_rss_mib": _peak_rss_mib(proc.pid),
                "large_answers": dict(sorted(Counter(answered).items())), "body_mib": len(large) / 2**20}
    finally:
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=positive_int, default=2, help="interleaved rounds of both arms")
    parser.add_argument("--bodies", type=int, default=16, help="large bodies sent at once")
    parser.add_argument("--zeros", type=int, default=4 * 1024 * 1024 - 16, help="entries of each large body's array")
    parser.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--model", default="", help=argparse.SUPPRESS)
    parser.add_argument("--unbounded", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.model, args.unbounded)
        return 0
    from train.tiny_models import build_tiny_qwen2

    print(machine_line())
    with tempfile.TemporaryDirectory() as scratch:
        model = str(build_tiny_qwen2(Path(scratch) / "tiny-judge", kind="causal", seed=0))
        for k in range(args.rounds):
            for unbounded in ((False, True) if k % 2 == 0 else (True, False)):
                r = one_arm(model, unbounded, args.bodies, args.zeros)
                print(f"round {k + 1} {r['arm']:9}: small request alone {r['alone_s']:.3f} s; under {args.bodies} x "
                      f"{r['body_mib']:.1f} MiB bodies: {r['n']} requests, median {r['median_s']:.2f} s, max "
                      f"{r['max_s']:.2f} s; server peak RSS {r['peak_rss_mib']:.0f} MiB; large bodies answered "
                      f"{r['large_answers']}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

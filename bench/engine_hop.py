"""What judge-serve's hop to its engine costs in CPU per request, on the HTTP client it uses (aiohttp, through
``serve.engine_client.engine_session``) against the one it used before (httpx, as configured then).

    .venv/bin/python bench/engine_hop.py                 # 3,000 requests per arm, 6 interleaved rounds, ~1 min
    .venv/bin/python bench/engine_hop.py --concurrency 8 --requests 1000

One judgment is one ``POST /v1/completions`` from judge-serve to vLLM. Here the engine is a local aiohttp server in
a child process answering at once with a vLLM-shaped completion (32 generated tokens, the level tokens'
log-probabilities at each position), so what is timed is the client's side alone: the CPU-seconds of this process
per request (``time.process_time``), with ``--concurrency`` requests in flight (judge-serve's
``max_concurrent_engine_requests``). The payload is judge-serve's: ~900 prompt token ids, greedy, stop at
``[END]``, ``logprob_token_ids``. Arms alternate (A B, B A, ...); printed: each arm's median ms per request with
its min-max over rounds, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
# REPO first, bench/ second, whatever PYTHONPATH says: bench/serve.py must never shadow the serve package.
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved_rounds, machine_line, positive_int, spreads  # noqa: E402

from judge.plumbing.processes import free_port  # noqa: E402
from serve.engine_client import engine_session  # noqa: E402

PAYLOAD = {"model": "bench-judge", "prompt": list(range(1000, 1900)), "max_tokens": 32, "temperature": 0.0,
           "stop": ["[END]"], "include_stop_str_in_output": True, "logprobs": 3, "logprob_token_ids": [15, 16, 17]}
TEXT = "[FEEDBACK] " + "Ответ полный и точный. " * 6 + "[RESULT] 2 [END]"
COMPLETION = {
    "id": "cmpl-0", "object": "text_completion", "created": 0, "model": "bench-judge",
    "choices": [{"index": 0, "text": TEXT, "finish_reason": "stop", "stop_reason": "[END]",
                 "logprobs": {"tokens": ["tok"] * 32, "token_logprobs": [-0.1] * 32, "text_offset": list(range(32)),
                              "top_logprobs": [{"0": -3.2, "1": -1.1, "2": -0.4}] * 32}}],
    "usage": {"prompt_tokens": 900, "completion_tokens": 32, "total_tokens": 932},
}  # fmt: skip

SERVER = """
import sys
from aiohttp import web
body = sys.stdin.buffer.read()
async def complete(request):
    await request.read()
    return web.Response(body=body, content_type="application/json")
app = web.Application()
app.router.add_post("/v1/completions", complete)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    p = ExactArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--requests", type=int, default=3000, help="Requests per arm per round.")
    p.add_argument("--concurrency", type=int, default=32, help="Requests in flight.")
    p.add_argument("--rounds", type=positive_int, default=6)
    return p.parse_args(argv)


def clients(concurrency: int) -> dict:
    """Per arm: (make the client, send one payload and decode the answer, close)."""

    async def httpx_post(http, url):
        response = await http.post(url, json=PAYLOAD)
        return response.json()

    async def aiohttp_post(http, url):
        response = await http.request("POST", url, json=PAYLOAD, headers={"Accept-Encoding": "identity"})
        try:
            return json.loads(await response.read())
        finally:
            response.release()

    return {
        # judge-serve's engine client before this bench: serve/app.py's httpx.AsyncClient.
        "httpx": (lambda: httpx.AsyncClient(timeout=httpx.Timeout(600, connect=10.0, pool=None),
                                            limits=httpx.Limits(max_connections=concurrency + 64, max_keepalive_connections=64)),
                  httpx_post, lambda http: http.aclose()),
        "aiohttp": (lambda: engine_session(600, max_connections=concurrency + 64), aiohttp_post, lambda http: http.close()),
    }  # fmt: skip


async def run(args, url: str) -> list[dict]:
    arms = clients(args.concurrency)

    async def arm(name: str) -> dict[str, float]:
        make, post, close = arms[name]
        http = make()
        limit = asyncio.Semaphore(args.concurrency)

        async def one():
            async with limit:
                answer = await post(http, url)
            assert answer["choices"][0]["text"] == TEXT

        try:
            await asyncio.gather(*(one() for _ in range(200)))  # connections opened, not counted
            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.gather(*(one() for _ in range(args.requests)))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            await close(http)
        return {"cpu_ms": 1000 * cpu / args.requests, "wall_ms": 1000 * wall / args.requests}

    def compare(r, order, result):
        ratio = result["httpx"]["cpu_ms"] / result["aiohttp"]["cpu_ms"]
        print(f"  round {r + 1} ({order[0]} first): httpx {result['httpx']['cpu_ms']:.3f} ms, aiohttp "
              f"{result['aiohttp']['cpu_ms']:.3f} ms CPU per request, x{ratio:.1f}", flush=True)
        return {"ratio": ratio}

    return await interleaved_rounds(arm, ("aiohttp", "httpx"), args.rounds, compare)


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_line(), flush=True)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], stdin=subprocess.PIPE)
    server.stdin.write(json.dumps(COMPLETION).encode())
    server.stdin.close()
    url = f"http://127.0.0.1:{port}/v1/completions"
    try:
        # Each poll has its own bound: a stand-in that listens but never answers would otherwise hold every poll
        # for httpx's default timeout, and the wait would be many times what the message says.
        for _ in range(100):
            try:
                httpx.post(url, json=PAYLOAD, timeout=1.0).raise_for_status()
                break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            state = "still running" if server.poll() is None else f"exited {server.returncode}"
            raise SystemExit(f"engine_hop.py: the stand-in engine at {url} did not answer any of 100 polls (1 s each, "
                             f"0.1 s apart; {state})")
        print(f"{args.requests} requests per arm per round, {args.concurrency} in flight", flush=True)
        rounds = asyncio.run(run(args, url))
    finally:
        server.terminate()
        server.wait()
    s = spreads(rounds, {"httpx": lambda r: r["httpx"]["cpu_ms"], "aiohttp": lambda r: r["aiohttp"]["cpu_ms"],
                         "ratio": lambda r: r["ratio"]})  # fmt: skip
    print("\n== judge-serve's engine hop: client CPU per request ==")
    print(f"httpx    {fmt(s['httpx'])} ms")
    print(f"aiohttp  {fmt(s['aiohttp'])} ms")
    print(f"httpx / aiohttp: {fmt(s['ratio'], 'x', digits=1)}")
    print(machine_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

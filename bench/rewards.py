"""Benchmark rewards through judge-serve: ``POST /get_reward`` against ``POST /v1/judge``, and OpenRLHF's pattern.

    .venv/bin/python bench/rewards.py                                       # tiny judge on CPU, ~3 min
    .venv/bin/python bench/rewards.py --rounds 7 --items 32 --out runs/bench/rewards.json   # example override
    python bench/rewards.py --model /path/to/judge --concurrency 256        # GPU: a real judge

One judge-serve starts its own vLLM engine on a tiny judge (or ``--model``), with constrained decoding (so that the
random tiny judge writes verdicts that parse) and a reward key; ``VLLM_SERVER_DEV_MODE=1`` lets every arm start
from an empty prefix cache (``/reset_prefix_cache`` on the engine). Each figure is a ratio taken inside one round,
the two arms interleaved (A B, B A, ...), reported as the median with its min-max and IQR over rounds
(``bench/measure.py``).

**overhead.** The same ``--items`` samples (sample-data instructions and answers, each on ``--criteria`` criteria
named by id: the samples' criteria in turn go round every scale the taxonomy has, the Critical 0/1 flags best at 0,
the other 0/1 criteria best at 1, 0..2, 0..3 and 0..4, each a criterion of its scale drawn by ``--seed``,
``draw_criteria``) as one ``/v1/judge`` request and as one ``/get_reward`` request in OpenRLHF's shape (the query is
a ChatML prompt + the answer + ``<|im_end|><|endoftext|>``, the label the instruction and criteria). Reported:
rewards per second of each arm, the wall ratio (get_reward / judge; goal <= 1.05), and judge-serve's own
CPU-milliseconds per reward in each arm (``psutil``: its process, not the engine's), the figure a loaded machine
disturbs least.

**openrlhf.** OpenRLHF's single-turn executor posts one sample per request (``openrlhf/utils/agent.py``), a fresh
aiohttp session each, as many at once as it has rollouts in flight: ``--concurrency`` such requests at once against
the same samples in one batched ``/get_reward`` request. Reported: rewards per second of each and the ratio
(one-per-request / batched wall): how well the engine batches requests that arrive separately.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):  # REPO first: bench/serve.py must never shadow the serve package
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved_rounds, machine, machine_line, positive_int, spreads  # noqa: E402

REWARD_KEY = "bench-reward-key-0123456789"
ENGINE_KEY = "bench-engine-key"
CHATML = "<|im_start|>user\n{instruction}<|im_end|>\n<|im_start|>assistant\n"


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="", help="judge checkpoint (default: a tiny random Qwen2 judge, CPU flags)")
    p.add_argument("--items", type=int, default=32, help="samples of the overhead comparison")
    p.add_argument("--criteria", type=int, default=2, help="criteria per sample")
    p.add_argument("--concurrency", type=int, default=64, help="one-sample requests in flight at once (openrlhf)")
    p.add_argument("--rounds", type=positive_int, default=5, help="interleaved rounds per comparison")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="", help="write the rounds and spreads as JSON here")
    return p.parse_args(argv)


def criteria_by_scale() -> list[list[str]]:
    """The taxonomy's criterion ids grouped by scale (its levels and its best end), the groups in the scales' order."""
    import judge

    groups: dict[tuple, list[str]] = {}
    for criterion in judge.load_taxonomy().criteria.values():
        groups.setdefault((criterion.scale.levels, criterion.scale.best), []).append(criterion.id)
    return [groups[scale] for scale in sorted(groups)]


def draw_criteria(n: int, n_criteria: int, seed: int) -> list[list[str]]:
    """Each of ``n`` samples' ``n_criteria`` distinct criteria, the judgments spread over every scale the taxonomy has:
    the samples' criteria taken in turn (sample by sample) go round the scales (``criteria_by_scale``), each a
    criterion of its scale drawn by ``random.Random(seed)``. A task type's first criteria are its Critical 0/1 flags
    (Recommendations' first two): at ``--criteria 2`` no 0..2 prompt, POLLUX's most, would be timed."""
    groups = criteria_by_scale()
    if n_criteria > sum(len(group) for group in groups):
        raise SystemExit(f"--criteria {n_criteria}: the taxonomy has {sum(len(g) for g in groups)} criteria")
    rng, drawn = random.Random(seed), []
    for i in range(n):
        slots = [(i * n_criteria + j) % len(groups) for j in range(n_criteria)]
        picks = {g: rng.sample(groups[g], min(slots.count(g), len(groups[g]))) for g in sorted(set(slots))}
        # a scale with fewer criteria than this sample's turns on it gives its turns left to the next scales'
        spare = [c for g, group in enumerate(groups) for c in group if c not in picks.get(g, [])]
        drawn.append([picks[g].pop(0) if picks[g] else spare.pop(rng.randrange(len(spare))) for g in slots])
    return drawn


def build_samples(n: int, n_criteria: int, seed: int) -> list[dict[str, Any]]:
    """``n`` distinct (instruction, answer) samples from the sample data, each on ``n_criteria`` criteria
    (``draw_criteria``: all the taxonomy's scales among them)."""
    import judge

    records = judge.load_records(judge.sample_data_path())
    criteria = draw_criteria(n, n_criteria, seed)
    rng = random.Random(seed)
    # Stripped: /get_reward judges the answer stripped (judge.rewards.policy_answer), /v1/judge as sent.
    return [{"instruction": rng.choice(records).instruction, "answer": (f"Ответ {i}. " + rng.choice(records).answer[:600]).strip(),
             "criteria": criteria[i]} for i in range(n)]  # fmt: skip


def judge_body(samples: list[dict]) -> dict:
    return {"items": samples}


def reward_body(samples: list[dict]) -> dict:
    """OpenRLHF's request for these samples (its query keeps the special tokens)."""
    prompts = [CHATML.format(instruction=s["instruction"]) for s in samples]
    return {"query": [p + s["answer"] + "<|im_end|><|endoftext|>" for p, s in zip(prompts, samples)], "prompts": prompts,
            "labels": [{"instruction": s["instruction"], "criteria": s["criteria"]} for s in samples]}  # fmt: skip


async def post(session: aiohttp.ClientSession, url: str, body: dict, headers: dict | None = None) -> dict:
    async with session.post(url, json=body, headers=headers or {}) as response:
        if response.status != 200:  # the server's words as sent, JSON or not
            said = await response.text(errors="replace")
            raise RuntimeError(f"{url.split('/get_reward/')[0]} answered {response.status}: {said[:300]}")
        return await response.json()


async def reset_prefix_cache(engine_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(engine_url + "/reset_prefix_cache", headers={"Authorization": f"Bearer {ENGINE_KEY}"}) as r:
            if r.status != 200:
                raise RuntimeError(f"/reset_prefix_cache answered {r.status}: start the engine with VLLM_SERVER_DEV_MODE=1")


def cpu_s(proc) -> float:
    """User + system CPU-seconds of judge-serve's own process (not its engine)."""
    times = proc.cpu_times()
    return times.user + times.system


async def overhead(root: str, engine_url: str, api_key: str, samples: list[dict], rounds: int, proc) -> list[dict]:
    n = len(samples)

    async def arm(name: str) -> dict:
        await reset_prefix_cache(engine_url)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as session:
            cpu, started = cpu_s(proc), time.perf_counter()
            if name == "judge":
                await post(session, root + "/v1/judge", judge_body(samples), {"Authorization": f"Bearer {api_key}"})
            else:
                await post(session, f"{root}/get_reward/{REWARD_KEY}", reward_body(samples))
            wall, cpu = time.perf_counter() - started, cpu_s(proc) - cpu
        return {"wall_s": wall, "rewards_per_s": n / wall, "serve_cpu_ms_per_reward": 1000 * cpu / n}

    def compare(r, order, result):
        ratio = result["get_reward"]["wall_s"] / result["judge"]["wall_s"]
        print(f"  overhead round {r} ({' '.join(order)}): /v1/judge {result['judge']['rewards_per_s']:.2f}/s "
              f"({result['judge']['serve_cpu_ms_per_reward']:.2f} ms judge-serve CPU per reward), /get_reward "
              f"{result['get_reward']['rewards_per_s']:.2f}/s ({result['get_reward']['serve_cpu_ms_per_reward']:.2f} ms), "
              f"ratio x{ratio:.3f}", flush=True)  # fmt: skip
        return {"ratio": ratio}

    return await interleaved_rounds(arm, ("judge", "get_reward"), rounds, compare)


async def openrlhf(root: str, engine_url: str, samples: list[dict], concurrency: int, rounds: int) -> list[dict]:
    url = f"{root}/get_reward/{REWARD_KEY}"

    async def one(sample: dict) -> dict:
        # OpenRLHF's _post_request: a fresh session per request, no headers, 180 s.
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=180)) as session:
            return await post(session, url, reward_body([sample]))

    async def arm(name: str) -> dict:
        await reset_prefix_cache(engine_url)
        started = time.perf_counter()
        if name == "one_per_request":
            limit = asyncio.Semaphore(concurrency)

            async def bounded(sample):
                async with limit:
                    return await one(sample)

            await asyncio.gather(*(bounded(s) for s in samples))
        else:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as session:
                await post(session, url, reward_body(samples))
        wall = time.perf_counter() - started
        return {"wall_s": wall, "rewards_per_s": len(samples) / wall}

    def compare(r, order, result):
        ratio = result["one_per_request"]["wall_s"] / result["batched"]["wall_s"]
        print(f"  openrlhf round {r} ({' '.join(order)}): one per request {result['one_per_request']['rewards_per_s']:.2f}/s, "
              f"batched {result['batched']['rewards_per_s']:.2f}/s, ratio x{ratio:.3f}", flush=True)
        return {"ratio": ratio}

    return await interleaved_rounds(arm, ("one_per_request", "batched"), rounds, compare)


def main(argv=None) -> int:
    args = parse_args(argv)
    from judge.plumbing.processes import free_port, start_process

    scratch = Path(tempfile.mkdtemp(prefix="bench-rewards-"))
    flags = ["--enforce-eager", "--dtype", "float32", "--max-model-len", "2048", "--max-tokens", "48",
             "--feedback-max-chars", "16", "--engine-args", json.dumps(["--kv-cache-memory-bytes", "256M"])]
    if args.model:
        model = Path(args.model)
    else:
        from train.tiny_models import build_tiny_qwen2

        model = build_tiny_qwen2(scratch / "tiny-judge", kind="causal", seed=args.seed)
    port = free_port()
    api_key = "bench-api-key"
    cmd = [sys.executable, "-m", "serve.cli", "--model", str(model), "--port", str(port), "--log-dir", str(scratch / "serve"),
           "--served-model-name", "bench-judge", "--constrained-decoding", "true", "--no-access-log",
           "--max-batch-items", str(max(args.items, args.concurrency)), "--max-judgments-per-request", "8192",
           "--criteria-classifier", "", *flags]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_SERVER_DEV_MODE": "1", "VLLM_API_KEY": ENGINE_KEY,
           "JUDGE_SERVE_API_KEY": api_key, "JUDGE_SERVE_REWARD_KEY": REWARD_KEY}  # fmt: skip
    info = machine()
    print(machine_line(info), flush=True)
    server = start_process(cmd, log_path=scratch / "judge-serve.log", env=env, cwd=REPO, name="judge-serve", grace_s=60)
    root = f"http://127.0.0.1:{port}"
    try:
        server.wait_ready(root + "/ready", 900, interval_s=1.0)
        record = json.loads((scratch / "serve" / "run.json").read_text())
        engine_url = record["engines"]["generator"]["url"]
        samples = build_samples(max(args.items, args.concurrency), args.criteria, args.seed)
        import psutil

        proc = psutil.Process(server.main_pid())
        asyncio.run(overhead(root, engine_url, api_key, samples[: args.items], 1, proc))  # warm-up: grammars, connections
        print(f"overhead: {args.items} samples x {args.criteria} criteria, one request each way", flush=True)
        over = asyncio.run(overhead(root, engine_url, api_key, samples[: args.items], args.rounds, proc))
        print(f"openrlhf: {args.concurrency} one-sample requests at once vs one request of {args.concurrency}", flush=True)
        rl = asyncio.run(openrlhf(root, engine_url, samples[: args.concurrency], args.concurrency, args.rounds))
    except Exception:
        print(f"judge-serve's log: {scratch / 'judge-serve.log'}", file=sys.stderr)
        raise
    finally:
        server.stop()
    summary = {
        "overhead": spreads(over, {"ratio": lambda r: r["ratio"], "judge_rewards_per_s": lambda r: r["judge"]["rewards_per_s"],
                                   "get_reward_rewards_per_s": lambda r: r["get_reward"]["rewards_per_s"],
                                   "judge_cpu_ms": lambda r: r["judge"]["serve_cpu_ms_per_reward"],
                                   "get_reward_cpu_ms": lambda r: r["get_reward"]["serve_cpu_ms_per_reward"]}),
        "openrlhf": spreads(rl, {"ratio": lambda r: r["ratio"], "one_per_request_rewards_per_s": lambda r: r["one_per_request"]["rewards_per_s"],
                                 "batched_rewards_per_s": lambda r: r["batched"]["rewards_per_s"]}),
    }  # fmt: skip
    end = machine()
    print(machine_line(end))
    o, b = summary["overhead"], summary["openrlhf"]
    print(f"overhead (get_reward / v1/judge wall): {fmt(o['ratio'], 'x')}")
    print(f"  rewards/s: /v1/judge {fmt(o['judge_rewards_per_s'], '', 2)}; /get_reward {fmt(o['get_reward_rewards_per_s'], '', 2)}")
    print(f"  judge-serve CPU ms per reward: /v1/judge {fmt(o['judge_cpu_ms'], '', 2)}; /get_reward {fmt(o['get_reward_cpu_ms'], '', 2)}")
    print(f"openrlhf (one-per-request / batched wall): {fmt(b['ratio'], 'x')}")
    print(f"  rewards/s: one per request {fmt(b['one_per_request_rewards_per_s'], '', 2)}; batched {fmt(b['batched_rewards_per_s'], '', 2)}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"args": vars(args), "machine": [info, end], "overhead_rounds": over,
                                              "openrlhf_rounds": rl, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark judge-serve on ONE vLLM engine: its overhead over calling that engine directly, and prefix ordering.

    .venv/bin/python bench/serve.py overhead                      # tiny judge on CPU, ~5 min
    .venv/bin/python bench/serve.py ordering                      # 'small' judge, prefill-bound, ~10 min
    .venv/bin/python bench/serve.py overhead --rounds 6 --items 48 --client-cpus 1 --direct tokens   # a figure in docs/dev-log.md
    .venv/bin/python bench/serve.py overhead --rounds 9 --out runs/bench/overhead.json   # example override
    python bench/serve.py overhead --arch t-lite                  # GPU: the T-lite (Qwen2.5-7B) shape, random weights

Both modes start one vLLM engine (``python -m vllm.entrypoints.openai.api_server``, the command line judge-serve
itself would build, ``serve.launch.engine_command``, with ``VLLM_SERVER_DEV_MODE=1`` for ``/reset_prefix_cache``)
and, for ``overhead``, one judge-serve attached to it with ``--generator-url``. Every figure is a ratio taken
inside one round, A and B interleaved (A B, B A, ...), each arm from an empty prefix cache; the median ratio is
printed with its min-max and inter-quartile range over rounds (``bench/measure.py``), with the machine and its
load average at start and end.

**overhead.** ``--items`` distinct answers of ``--answer-tokens`` tokens, each on ``--criteria`` criteria,
``--max-tokens`` generated, greedy; ``--clients`` concurrent clients each take one item at a time. Both arms decode
under judge-serve's verdict regex (vLLM structured outputs, llguidance, a feedback of at most 16 characters, as the
tests' servers and ``configs/serve/tiny-cpu.yaml`` have it), so that the random tiny judge writes verdicts and
judge-serve's arm times the path a user's judgments take (a verdict read, its score computed from the level tokens'
log-probabilities), not its failure path (an output holding no verdict, what a random judge writes freely); the mask
costs the engine alike in both arms. ``--unconstrained`` decodes freely (a trained ``--model`` that keeps the
format). Printed: each arm's share of judgments that came back as verdicts (the direct arm's outputs read by
``judge.parse_verdict``, strictly, as judge-serve reads them, inside the arm's timing: a user calling vLLM directly
reads the verdict too); a share under 1 is that part of the arm timing the failure path. Through judge-serve an item
is one ``POST /v1/judge``. Directly (``--direct chat``, what a user does without judge-serve) each judgment is one
``POST /v1/chat/completions`` with the same rendered prompt as one user turn and the sampling parameters judge-serve
sends (max_tokens, temperature, stop at ``[END]``, the scale's level-token log-probabilities, the verdict regex);
``--direct tokens`` sends judge-serve's own ``/v1/completions`` payloads, tokenized beforehand outside the timing
(so the ratio also charges judge-serve for the tokenizing vLLM's chat path does itself). Reported per round:
throughput ratio (direct / judge-serve; 1.03 = judge-serve 3 % slower), p50 and p95 latency ratios (judge-serve /
direct), and judge-serve's own CPU-seconds per judgment (``psutil`` cpu_times of the judge-serve process, before
and after its arm: rendering, tokenizing, parsing and its HTTP hop), beside the engine's CPU-seconds per judgment
in each arm. On a CPU host vLLM binds its model's OpenMP threads to every core but those it reserves for its own
processes (the engine log's ``reserved_cpus``: core 1 of 2 here); ``--client-cpus 1`` puts judge-serve and this
bench's client there in both arms, so that neither arm's client side preempts the model's threads (on 2 cores it
narrowed the ratio's spread over rounds, docs/dev-log.md).

**ordering.** What ``judge.prefix_order`` (judge-serve and ``judge-eval run`` both order by it) buys: all
judgments sent to the engine at once, at most ``--window`` in flight (judge-serve's
``max_concurrent_engine_requests``), in prefix-grouped order or shuffled. Chosen so that prefill dominates and the
cache cannot hold the whole batch, as on the full POLLUX test (~10,000 distinct answers, never all cached):
the ``small`` judge (4 layers, 512 wide: its prefill is a real cost, where the tiny judge's is negligible
beside its 152k-vocabulary LM head), POLLUX-shaped work (each answer on the 16 criteria of its task type), long
answers, ``--max-tokens 4``, and a KV cache (``--kv-cache``) holding a few answers' prefixes but not all of them.
Reported: wall ratio (shuffled / grouped) and each arm's prefix-cache hit rate (vLLM ``/metrics``:
``prefix_cache_hits`` / ``prefix_cache_queries``, in tokens).

Results are printed and, with ``--out``, written as JSON.

Why one script of ~700 lines: both modes share the engine and judge-serve they start, the payloads and the
interleaved rounds; a reader runs it as one file, the way each script of ``bench/`` is run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil

REPO = Path(__file__).resolve().parents[1]
# REPO first, bench/ second, whatever PYTHONPATH says: bench/serve.py must never shadow the serve package.
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved_rounds, machine, machine_line, positive_int, spreads  # noqa: E402

from judge.plumbing.processes import start_process  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("mode", choices=["overhead", "ordering"])
    p.add_argument("--arch", choices=["tiny", "small", "t-lite"], default=None,
                   help="tiny: the 2-layer, 64-wide test judge (CPU); small: 4 layers, 512 wide, random (CPU, prefill "
                        "costs something); t-lite: Qwen2.5-7B shape, random weights (--load-format dummy), GPU. "
                        "Default: tiny for overhead, small for ordering.")
    p.add_argument("--model", default="", help="Serve this checkpoint instead of building one.")
    p.add_argument("--items", type=int, default=None, help="Distinct answers (default: 24 overhead, 8 ordering).")
    p.add_argument("--criteria", type=int, default=None, help="Criteria per answer (default: 5 overhead, 16 ordering).")
    p.add_argument("--answer-tokens", type=int, default=None, help="Approximate tokens per answer (default: 600 overhead, 400 ordering).")
    p.add_argument("--max-tokens", type=int, default=None, help="Tokens generated per judgment (default: 32 overhead, 4 ordering).")
    p.add_argument("--clients", type=int, default=8, help="overhead: concurrent clients, one item each at a time.")
    p.add_argument("--window", type=int, default=32, help="Engine requests in flight (judge-serve's max_concurrent_engine_requests).")
    p.add_argument("--unconstrained", action="store_true",
                   help="overhead: decode freely rather than under the verdict regex (for a trained --model that keeps "
                        "the format; the random tiny judge then seldom writes a verdict, and judge-serve's arm times "
                        "its failure path: the printed verdict shares say which path was timed).")
    p.add_argument("--direct", choices=["chat", "tokens"], default="chat",
                   help="overhead: how the direct arm calls vLLM (chat: /v1/chat/completions with the rendered prompt; "
                        "tokens: judge-serve's own /v1/completions payloads, pre-tokenized).")
    p.add_argument("--client-cpus", default="",
                   help="overhead: run judge-serve and this bench's own client (both arms' client side) on these CPUs "
                        "(taskset list, e.g. '1': the core vLLM's CPU backend reserves for its own processes, where "
                        "its model threads are not). Default: wherever the OS puts them.")
    p.add_argument("--kv-cache", default=None,
                   help="vLLM --kv-cache-memory-bytes (default: 1 GiB via VLLM_CPU_KVCACHE_SPACE for overhead; 16M, "
                        "about 4,000 tokens of the small judge: fewer than the 8 answers prefixes, for ordering).")
    p.add_argument("--rounds", type=positive_int, default=None, help="Rounds, each one A and one B (default: 6 overhead, 3 ordering).")
    p.add_argument("--profile", default="",
                   help="overhead: run judge-serve under py-spy (all threads, raw samples to this file) and print where "
                        "its CPU goes. Sampling costs judge-serve time: leave it off for the figures.")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="", help="JSON results file (default: print only).")
    args = p.parse_args(argv)
    overhead = args.mode == "overhead"
    defaults = {"arch": "tiny" if overhead else "small", "items": 24 if overhead else 8,
                "criteria": 5 if overhead else 16, "max_tokens": 32 if overhead else 4,
                "answer_tokens": 600 if overhead else 400, "kv_cache": "" if overhead else "16M",
                "rounds": 6 if overhead else 3}  # fmt: skip
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


# ------------------------------------------------------------------------------------------ model and workload

#: overhead's constrained decoding, as the tests' servers and configs/serve/tiny-cpu.yaml have it: judge-serve's
#: verdict regex (``serve.judging.verdict_regex``) with a feedback of at most this many characters, masked by
#: llguidance (``--structured-outputs-backend guidance`` on the engine).
FEEDBACK_MAX_CHARS = 16


def constrained(args: argparse.Namespace) -> bool:
    """Whether the judgments decode under the verdict regex: overhead's default, so that the random tiny judge writes
    verdicts and both arms time the path a user's judgments take (a verdict read, its score computed), not
    judge-serve's failure path (no verdict); ``ordering`` times prefill and four tokens, which no verdict fits."""
    return args.mode == "overhead" and not args.unconstrained


def decoding_flags(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The flags judge-serve and the engine's config add for ``constrained``: the feedback bound (judge-serve's regex
    and the direct arm's payloads alike), and the engine's structured-outputs backend (an engine judge-serve attaches
    to keeps its own: judge-serve is not given it)."""
    if not constrained(args):
        return [], []
    bound = ["--feedback-max-chars", str(FEEDBACK_MAX_CHARS)]
    return bound, [*bound, "--structured-outputs-backend", "guidance"]


def served_body(args: argparse.Namespace, item: dict[str, Any]) -> dict[str, Any]:
    """judge-serve's request for one item: the direct arm's max_tokens and decoding."""
    return {"items": [item], "max_tokens": args.max_tokens, "constrained": constrained(args)}


def build_model(args: argparse.Namespace, scratch: Path) -> tuple[Path, list[str]]:
    """The checkpoint folder to serve and the judge-serve flags its architecture needs."""
    if args.arch == "t-lite":
        import transformers

        from train.tiny_models import QWEN25_PADDED_VOCAB_SIZE, QWEN_SPECIAL_IDS, build_qwen_tokenizer

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
        return folder, ["--dtype", "bfloat16", "--max-model-len", "8192", "--engine-args", "--load-format dummy"]
    cpu_flags = ["--enforce-eager", "--dtype", "float32", "--max-model-len", "2048"]
    if args.model:
        return Path(args.model), cpu_flags
    from train.tiny_models import TINY_CONFIG, build_tiny_qwen2

    if args.arch == "small":
        import torch
        import transformers

        from train.tiny_models import build_qwen_tokenizer

        folder = scratch / "small-judge"
        shape = {"hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2}
        config = transformers.Qwen2Config(**{**TINY_CONFIG, **shape}, tie_word_embeddings=True, architectures=["Qwen2ForCausalLM"])
        torch.manual_seed(args.seed)
        transformers.Qwen2ForCausalLM(config).save_pretrained(str(folder))
        build_qwen_tokenizer(folder)
        return folder, cpu_flags
    return build_tiny_qwen2(scratch / "tiny-judge", kind="causal", seed=args.seed), cpu_flags


def build_items(args: argparse.Namespace, tokenizer) -> list[dict[str, Any]]:
    """Distinct long answers (sample-data answers strung together), each judged on the same criteria."""
    import judge

    records = judge.load_records(judge.sample_data_path())
    criteria = [c.id for c in judge.load_taxonomy().criteria_for("Recommendations")][: args.criteria]
    if len(criteria) < args.criteria:
        raise SystemExit(f"--criteria {args.criteria}: the Recommendations task type has {len(criteria)}")
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


class Process:
    """A server under ``judge.plumbing.processes``' supervisor (its whole tree stops with it), logging to a file; ``ps`` is the
    command's own process, whose CPU-seconds the benches read."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], log: Path):
        self.name, self.log = name, log
        self.managed = start_process(cmd, log_path=log, env=env, cwd=REPO, name=name, grace_s=120)
        deadline = time.monotonic() + 30
        while (pid := self.managed.main_pid()) is None:  # the supervisor forks the command at once
            if time.monotonic() > deadline or not self.managed.alive():
                raise RuntimeError(f"{name} did not start; see {log}")
            time.sleep(0.05)
        self.ps = psutil.Process(pid)

    def wait_ready(self, url: str, timeout_s: float = 1800) -> None:
        self.managed.wait_ready(url, timeout_s, interval_s=1.0)

    def cpu_s(self, tree: bool) -> float:
        """User + system CPU-seconds of the process (``tree``: and of its live descendants)."""
        procs = [self.ps, *(self.ps.children(recursive=True) if tree else [])]
        total = 0.0
        for proc in procs:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """``sig`` to the command first (py-spy writes its profile on SIGINT), then the supervisor's stop."""
        if sig != signal.SIGTERM and self.managed.alive():
            os.kill(self.ps.pid, sig)
            with contextlib.suppress(psutil.TimeoutExpired, psutil.NoSuchProcess):
                self.ps.wait(timeout=120)
        self.managed.stop()


def start_engine(args, model: Path, flags: list[str], scratch: Path) -> tuple[Process, str, Any]:
    """One vLLM engine, configured exactly as judge-serve would start it for these flags."""
    from serve.cli import resolve_config
    from judge.plumbing.processes import free_port
    from serve.launch import engine_command, engine_env, engine_specs
    from serve.layout import resolve_layout

    engine_flags = [*flags, *decoding_flags(args)[1]]
    config, _ = resolve_config(["--model", str(model), "--served-model-name", "bench-judge", *engine_flags])
    if not args.kv_cache and args.arch != "t-lite":
        config.cpu_kv_cache_gib = 1
    elif args.kv_cache:
        # VLLM_CPU_KVCACHE_SPACE (cpu_kv_cache_gib) would override --kv-cache-memory-bytes: it stays unset.
        config.engine_args = [*config.engine_args, "--kv-cache-memory-bytes", args.kv_cache]
    spec = engine_specs(config, resolve_layout(str(model)))[0]
    port = free_port()
    env = {**engine_env(config), "VLLM_SERVER_DEV_MODE": "1", "VLLM_CACHE_ROOT": str(scratch / "vllm-cache"), "HF_HUB_OFFLINE": "1"}
    engine = Process("vLLM engine", engine_command(spec, config, port), env, scratch / "engine.log")
    return engine, f"http://127.0.0.1:{port}", config


def parse_cpu_list(text: str) -> set[int]:
    """'1' or '0,2-3' (taskset's list syntax) as a set of CPU ids."""
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def start_judge_serve(args, model: Path, flags: list[str], engine_url: str, scratch: Path) -> tuple[Process, str]:
    from judge.plumbing.processes import free_port

    port = free_port()
    cmd = [
        sys.executable, "-m", "serve.cli", "--model", str(model), "--port", str(port), "--log-dir", str(scratch / "judge-serve"),
        "--served-model-name", "bench-judge", "--max-concurrent-engine-requests", str(args.window), "--no-access-log",
        "--max-batch-items", "1024", "--max-judgments-per-request", "8192", "--generator-url", engine_url, *flags,
        *decoding_flags(args)[0],
    ]  # fmt: skip
    if args.profile:
        # py-spy starts judge-serve as its child and writes the samples when SIGINT stops both.
        spy = Path(sys.executable).with_name("py-spy")
        cmd = [str(spy), "record", "--format", "raw", "--rate", "200", "--output", str(Path(args.profile).resolve()), "--", *cmd]
    if args.client_cpus:
        cmd = ["taskset", "-c", args.client_cpus, *cmd]  # exec'd: the pid (and its CPU-seconds) are judge-serve's
    server = Process("judge-serve", cmd, {**os.environ, "HF_HUB_OFFLINE": "1"}, scratch / "judge-serve.log")
    if args.profile:
        server.ps = _wait_child(server.ps)  # CPU-seconds are judge-serve's, not py-spy's
    return server, f"http://127.0.0.1:{port}"


def _wait_child(parent: psutil.Process) -> psutil.Process:
    for _ in range(600):
        children = parent.children()
        if children:
            return children[0]
        time.sleep(0.1)
    raise RuntimeError("py-spy did not start judge-serve")


def print_profile(path: Path, top: int = 25) -> None:
    """Where judge-serve's sampled time went: leaf functions (self time) and this project's frames (inclusive)."""
    from collections import Counter

    leaf, inclusive, total = Counter(), Counter(), 0
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        n = int(count)
        total += n
        leaf[frames[-1]] += n
        for frame in set(frames):
            if any(part in frame for part in ("serve/", "judge/", "aiohttp/", "httpx/", "httpcore/", "uvicorn/", "starlette/",
                                              "fastapi/", "tokenizers", "transformers/", "jinja2/", "json/")):  # fmt: skip
                inclusive[frame] += n
    print(f"\n== judge-serve profile ({total} samples, idle threads left out) ==")
    print("self time:")
    for frame, n in leaf.most_common(top):
        print(f"  {100 * n / total:5.1f} %  {frame}")
    print("inclusive (this project, HTTP, tokenizer):")
    for frame, n in inclusive.most_common(top):
        print(f"  {100 * n / total:5.1f} %  {frame}")


class ServerFailed(RuntimeError):
    """A server answered the bench with an error, or could not be reached."""


async def _send(http, method: str, url: str, **kwargs) -> tuple[int, bytes]:
    try:
        response = await http.request(method, url, **kwargs)
    except aiohttp.ClientError as err:
        raise ServerFailed(f"{method} {url}: unreachable ({type(err).__name__}: {err})") from err
    try:
        return response.status, await response.read()
    finally:
        response.release()


async def post(http, url: str, payload: dict | None = None) -> Any:
    """POST (JSON) and return the answer's JSON; any status but 200 raises with the server's own message.

    The bench's client is aiohttp, like judge-serve's engine hop: httpx costs ~10x the CPU per request
    (``bench/engine_hop.py``), CPU the measured engine would lose on this 2-core machine, and the direct arm makes
    ``--criteria`` times as many requests from here as the judge-serve arm does.
    """
    status, body = await _send(http, "POST", url, json=payload)
    if status != 200:
        raise ServerFailed(f"POST {url}: {status} {body[:500].decode('utf-8', 'replace')}")
    return json.loads(body) if body else None


async def reset_prefix_cache(http, engine_url: str) -> None:
    for _ in range(50):
        status, body = await _send(http, "POST", engine_url + "/reset_prefix_cache")
        if status == 200:
            return
        await asyncio.sleep(0.2)  # refused while requests are still running
    raise ServerFailed(f"POST {engine_url}/reset_prefix_cache: vLLM refused to reset its prefix cache: {status} {body[:200]!r}")


async def prefix_counters(http, engine_url: str) -> tuple[float, float]:
    """(queried, hit) prompt tokens of the prefix cache so far (vLLM /metrics)."""
    _, body = await _send(http, "GET", engine_url + "/metrics")
    text = body.decode("utf-8", "replace")
    values = {"vllm:prefix_cache_queries_total": 0.0, "vllm:prefix_cache_hits_total": 0.0}
    for line in text.splitlines():
        for name in values:
            if line.startswith(name + "{") or line.startswith(name + " "):
                values[name] += float(line.rsplit(" ", 1)[1])
    return values["vllm:prefix_cache_queries_total"], values["vllm:prefix_cache_hits_total"]


# ------------------------------------------------------------------------------------------ payloads


def build_payloads(args, model: Path) -> tuple[list[dict], dict[str, list[dict]], dict[str, list[dict]], list[tuple]]:
    """Items; per item the direct chat payloads and judge-serve's own /v1/completions payloads; prefix keys."""
    from transformers import AutoTokenizer

    import judge
    from judge.checkpoints import JudgeKind
    from serve.jobs import build_jobs
    from serve.judging import Judge, JudgeOptions, JudgeSettings
    from serve.schema import parse_judge_request

    tokenizer = AutoTokenizer.from_pretrained(str(model))
    items = build_items(args, tokenizer)
    settings = JudgeSettings(
        model_name="bench-judge", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "bench-judge"}, max_model_len=0,
        max_tokens=args.max_tokens, temperature=0.0, score_logprobs=True, lenient=False, constrained=constrained(args),
        feedback_max_chars=FEEDBACK_MAX_CHARS if constrained(args) else 0, max_judgments=10**9,
    )  # fmt: skip
    builder = Judge(settings, tokenizer, None, None, None)  # only builds payloads here
    options = JudgeOptions(max_tokens=args.max_tokens, temperature=0.0, lenient=False, constrained=constrained(args))
    max_len = 8192 if args.arch == "t-lite" else 2048
    tokens, chat, keys = {}, {}, []
    for item in items:
        jobs = build_jobs(parse_judge_request({"items": [item]}), tokenizer, max_model_len=max_len, max_tokens=args.max_tokens)
        tokens[item["id"]] = [builder.completion_payload(job, options, reasoning_opened=builder.opens_reasoning(job))
                              for job in jobs]
        chat[item["id"]] = []
        for job, payload in zip(jobs, tokens[item["id"]]):
            body = {k: v for k, v in payload.items() if k not in ("prompt", "logprobs")}
            body["messages"] = judge.chat_messages(job.prompt)
            if "logprob_token_ids" in payload:
                body["logprobs"] = True  # chat's switch; the level tokens' log-probabilities come with it
            chat[item["id"]].append(body)
        keys += [(item["instruction"], item["answer"])] * len(jobs)
    return items, chat, tokens, keys


def direct_verdict(answer: dict[str, Any], direct: str) -> bool:
    """Whether vLLM's answer to one direct judgment holds a verdict, read as judge-serve reads one (strictly)."""
    import judge

    choice = answer["choices"][0]
    return judge.parse_verdict(choice["message"]["content"] if direct == "chat" else choice["text"]).ok


def latency_stats(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


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


# ------------------------------------------------------------------------------------------ overhead


async def overhead(args, http, engine: Process, engine_url: str, served: Process, served_url: str, model: Path) -> dict[str, Any]:
    items, chat, tokens, _ = build_payloads(args, model)
    direct_payloads = chat if args.direct == "chat" else tokens
    path = "/v1/chat/completions" if args.direct == "chat" else "/v1/completions"
    n = sum(len(p) for p in tokens.values())
    lengths = [len(p["prompt"]) for ps in tokens.values() for p in ps]
    workload = {"items": len(items), "criteria": args.criteria, "judgments": n, "max_tokens": args.max_tokens,
                "prompt_tokens_min": min(lengths), "prompt_tokens_max": max(lengths), "clients": args.clients,
                "window": args.window, "arch": args.arch, "direct": f"{args.direct} ({path})",
                "client_cpus": args.client_cpus or "any",
                "decoding": f"constrained (verdict regex, feedback <= {FEEDBACK_MAX_CHARS} characters, guidance)"
                            if constrained(args) else "unconstrained"}  # fmt: skip
    print(f"workload: {workload}", flush=True)
    limit = asyncio.Semaphore(args.window)
    verdicts = {"direct": 0, "judge-serve": 0}  # the arm's judgments that came back as a verdict (a score read)

    async def direct_item(item):
        async def one(payload):
            async with limit:
                answer = await post(http, engine_url + path, payload)
            verdicts["direct"] += direct_verdict(answer, args.direct)

        await asyncio.gather(*(one(p) for p in direct_payloads[item["id"]]))

    async def served_item(item):
        answer = await post(http, served_url + "/v1/judge", served_body(args, item))
        assert answer["usage"]["judgments"] == len(item["criteria"])
        verdicts["judge-serve"] += sum(bool(r["parse_ok"]) for r in answer["items"][0]["results"])

    arms = {"direct": direct_item, "judge-serve": served_item}

    async def arm(name: str) -> dict[str, float]:
        await reset_prefix_cache(http, engine_url)
        serve_cpu, engine_cpu = served.cpu_s(tree=False), engine.cpu_s(tree=True)
        verdicts[name] = 0
        latencies, wall = await run_clients(items, args.clients, arms[name])
        p50, p95 = latency_stats(latencies)
        return {"judgments_per_s": n / wall, "wall_s": wall, "p50_s": p50, "p95_s": p95,
                "verdict_share": verdicts[name] / n,
                "serve_cpu_s_per_judgment": (served.cpu_s(tree=False) - serve_cpu) / n,
                "engine_cpu_s_per_judgment": (engine.cpu_s(tree=True) - engine_cpu) / n}  # fmt: skip

    print("warm-up (not counted): one pass of each arm", flush=True)
    for name in arms:
        await arm(name)

    def compare(r: int, order: tuple[str, str], result: dict[str, dict[str, float]]) -> dict[str, Any]:
        d, s = result["direct"], result["judge-serve"]
        ratios = {"throughput": d["judgments_per_s"] / s["judgments_per_s"], "p50": s["p50_s"] / d["p50_s"],
                  "p95": s["p95_s"] / d["p95_s"]}  # fmt: skip
        print(f"  round {r + 1} ({order[0]} first): direct {d['judgments_per_s']:6.2f} j/s, judge-serve "
              f"{s['judgments_per_s']:6.2f} j/s, throughput x{ratios['throughput']:.3f}, p50 x{ratios['p50']:.3f}, "
              f"judge-serve CPU {1000 * s['serve_cpu_s_per_judgment']:.2f} ms/judgment; verdicts: direct "
              f"{d['verdict_share']:.0%}, judge-serve {s['verdict_share']:.0%}", flush=True)
        return {"ratios": ratios}

    rounds = await interleaved_rounds(arm, ("direct", "judge-serve"), args.rounds, compare)
    summary = spreads(rounds, {
        "throughput_ratio": lambda r: r["ratios"]["throughput"],
        "p50_ratio": lambda r: r["ratios"]["p50"],
        "p95_ratio": lambda r: r["ratios"]["p95"],
        "direct_judgments_per_s": lambda r: r["direct"]["judgments_per_s"],
        "serve_judgments_per_s": lambda r: r["judge-serve"]["judgments_per_s"],
        "serve_cpu_ms_per_judgment": lambda r: 1000 * r["judge-serve"]["serve_cpu_s_per_judgment"],
        "engine_cpu_ms_per_judgment_direct": lambda r: 1000 * r["direct"]["engine_cpu_s_per_judgment"],
        "engine_cpu_ms_per_judgment_served": lambda r: 1000 * r["judge-serve"]["engine_cpu_s_per_judgment"],
        "direct_verdict_share": lambda r: r["direct"]["verdict_share"],
        "serve_verdict_share": lambda r: r["judge-serve"]["verdict_share"],
    })  # fmt: skip
    return {"workload": workload, "rounds": rounds, "summary": summary}


def print_overhead(result: dict[str, Any]) -> None:
    s = result["summary"]
    print("\n== judge-serve vs vLLM direct, same engine, interleaved rounds ==")
    print(f"direct        {fmt(s['direct_judgments_per_s'], digits=2)} judgments/s")
    print(f"judge-serve   {fmt(s['serve_judgments_per_s'], digits=2)} judgments/s")
    print(f"throughput ratio (direct / judge-serve): {fmt(s['throughput_ratio'], 'x')}")
    print(f"p50 latency ratio (judge-serve / direct): {fmt(s['p50_ratio'], 'x')}")
    print(f"p95 latency ratio (judge-serve / direct): {fmt(s['p95_ratio'], 'x')}")
    print(f"judge-serve CPU per judgment: {fmt(s['serve_cpu_ms_per_judgment'], digits=2)} ms")
    print(f"engine CPU per judgment: direct {fmt(s['engine_cpu_ms_per_judgment_direct'], digits=1)} ms; "
          f"through judge-serve {fmt(s['engine_cpu_ms_per_judgment_served'], digits=1)} ms")
    # Which path was timed: judge-serve's success path (a verdict read, its score computed) only where its share is 1.
    print(f"share of judgments that were verdicts ({result['workload']['decoding']}): direct "
          f"{fmt(s['direct_verdict_share'], digits=2)}; judge-serve {fmt(s['serve_verdict_share'], digits=2)}")


# ------------------------------------------------------------------------------------------ ordering


async def ordering(args, http, engine_url: str, model: Path) -> dict[str, Any]:
    from judge import prefix_order

    _, _, tokens, keys = build_payloads(args, model)
    payloads = [p for ps in tokens.values() for p in ps]
    lengths = [len(p["prompt"]) for p in payloads]
    workload = {"items": args.items, "criteria": args.criteria, "judgments": len(payloads), "max_tokens": args.max_tokens,
                "prompt_tokens_min": min(lengths), "prompt_tokens_max": max(lengths), "window": args.window,
                "arch": args.arch, "kv_cache": args.kv_cache or "1 GiB"}  # fmt: skip
    print(f"workload: {workload}", flush=True)
    grouped = [payloads[i] for i in prefix_order(keys)]
    shuffled = list(payloads)
    random.Random(args.seed + 1).shuffle(shuffled)
    orders = {"grouped": grouped, "shuffled": shuffled}

    async def arm(name: str) -> dict[str, float]:
        limit = asyncio.Semaphore(args.window)

        async def one(payload):
            async with limit:
                await post(http, engine_url + "/v1/completions", payload)

        await reset_prefix_cache(http, engine_url)
        queried0, hit0 = await prefix_counters(http, engine_url)
        started = time.perf_counter()
        # Tasks are created in order and take the semaphore in that order (FIFO), as in judge-serve.
        await asyncio.gather(*(one(p) for p in orders[name]))
        wall = time.perf_counter() - started
        queried1, hit1 = await prefix_counters(http, engine_url)
        return {"wall_s": wall, "hit_rate": (hit1 - hit0) / max(queried1 - queried0, 1), "prompt_tokens": queried1 - queried0}

    print("warm-up (not counted): one grouped pass", flush=True)
    await arm("grouped")

    def compare(r: int, order: tuple[str, str], result: dict[str, dict[str, float]]) -> dict[str, Any]:
        g, s = result["grouped"], result["shuffled"]
        ratio = s["wall_s"] / g["wall_s"]
        print(f"  round {r + 1} ({order[0]} first): grouped {g['wall_s']:6.2f} s (hit {g['hit_rate']:.2f}), shuffled "
              f"{s['wall_s']:6.2f} s (hit {s['hit_rate']:.2f}), x{ratio:.2f}", flush=True)
        return {"speedup": ratio}

    rounds = await interleaved_rounds(arm, ("grouped", "shuffled"), args.rounds, compare)
    summary = spreads(rounds, {
        "speedup": lambda r: r["speedup"],
        "grouped_wall_s": lambda r: r["grouped"]["wall_s"],
        "shuffled_wall_s": lambda r: r["shuffled"]["wall_s"],
        "grouped_hit_rate": lambda r: r["grouped"]["hit_rate"],
        "shuffled_hit_rate": lambda r: r["shuffled"]["hit_rate"],
    })  # fmt: skip
    return {"workload": workload, "rounds": rounds, "summary": summary}


def print_ordering(result: dict[str, Any]) -> None:
    s = result["summary"]
    print("\n== prefix-grouped vs shuffled order, same engine, cold prefix cache each arm ==")
    print(f"grouped   wall {fmt(s['grouped_wall_s'], digits=2)} s, hit rate {fmt(s['grouped_hit_rate'], digits=2)}")
    print(f"shuffled  wall {fmt(s['shuffled_wall_s'], digits=2)} s, hit rate {fmt(s['shuffled_hit_rate'], digits=2)}")
    print(f"speed-up (shuffled wall / grouped wall): {fmt(s['speedup'], 'x', digits=2)}")


# ------------------------------------------------------------------------------------------ main


async def measure(args, engine, engine_url, served, served_url, model) -> dict[str, Any]:
    from serve.engine_client import engine_session

    # judge-serve's own client (serve.engine_client.EngineHttp) for both arms: its pool keeps idle connections for less
    # than vLLM's server does, and re-sends a request whose pooled connection the server had closed.
    async with engine_session(1800, max_connections=512) as http:
        if args.mode == "overhead":
            return await overhead(args, http, engine, engine_url, served, served_url, model)
        return await ordering(args, http, engine_url, model)


def report_failure(err: Exception, servers: list[tuple[Process | None, str | None]]) -> None:
    """Say which server failed the bench (the one the failing URL names, or one that died), where its log is, and
    the log's last lines."""
    print(f"bench failed: {err}", file=sys.stderr)
    for server, url in servers:
        if server is None or url is None:
            continue
        named = url in str(err)
        dead = not server.managed.alive()
        if named or dead:
            why = "answered with the error above" if named else "is no longer running"
            print(f"the {server.name} at {url} {why}; its log: {server.log}", file=sys.stderr)
            with contextlib.suppress(OSError):
                print("\n".join(server.log.read_text(errors="replace").splitlines()[-30:]), file=sys.stderr)
    print("all logs stay in the scratch folder above", file=sys.stderr)


def main(argv=None) -> int:
    args = parse_args(argv)
    # A timeout's SIGTERM unwinds through the finally blocks, which stop the servers this bench started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started_machine = machine()
    print(machine_line(started_machine), flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    model, flags = build_model(args, scratch)
    engine, engine_url, _ = start_engine(args, model, flags, scratch)
    served = served_url = None
    try:
        started = time.monotonic()
        engine.wait_ready(engine_url + "/health")
        if args.mode == "overhead":
            served, served_url = start_judge_serve(args, model, flags, engine_url, scratch)
            served.wait_ready(served_url + "/ready")
        print(f"servers ready in {time.monotonic() - started:.0f} s (logs in {scratch})", flush=True)
        if args.client_cpus:  # after the engine started: it must not inherit the mask
            os.sched_setaffinity(0, parse_cpu_list(args.client_cpus))
        try:
            result = asyncio.run(measure(args, engine, engine_url, served, served_url, model))
        except ServerFailed as err:
            report_failure(err, [(engine, engine_url), (served, served_url)])
            return 1
    finally:
        if served is not None:
            served.stop(signal.SIGINT if args.profile else signal.SIGTERM)
        engine.stop()
    if args.profile:
        print_profile(Path(args.profile))
    ended_machine = machine()
    result = {"command": " ".join(["bench/serve.py", *(argv if argv is not None else sys.argv[1:])]),
              "machine_start": started_machine, "machine_end": ended_machine, **result}  # fmt: skip
    (print_overhead if args.mode == "overhead" else print_ordering)(result)
    print(f"load average: {started_machine['load_1m']} at start, {ended_machine['load_1m']} at end")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Demo: serve a judge with judge-serve and judge a few bundled sample items through /v1/judge (openai SDK).

    python -m serve.demo --model runs/demo/seq2seq/export
    python -m serve.demo --model runs/demo/regression/export --items 5

Without ``--model`` a random tiny judge is built; it cannot write a verdict by itself, so the demo then asks for
constrained decoding (the format forced by vLLM structured outputs) and its verdicts show the plumbing only.
The ``make demo`` step after training runs this on the trained tiny judges.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

__all__ = ["main"]

# The CPU settings of configs/serve/tiny-cpu.yaml that a demo needs.
CPU_FLAGS = ("--enforce-eager", "--dtype", "float32", "--max-model-len", "2048", "--cpu-kv-cache-gib", "1")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default="", help="Judge checkpoint (a judge-train export); default: a random tiny judge.")
    parser.add_argument("--items", type=int, default=3, help="Sample items to judge (each on its own criterion).")
    parser.add_argument("--max-tokens", type=int, default=160, help="Tokens the judge may write per verdict.")
    parser.add_argument("--constrained", action=argparse.BooleanOptionalAction, default=None,
                        help="Force the verdict format (default: only for the random tiny judge).")
    parser.add_argument("--timeout-s", type=float, default=900.0, help="Seconds to wait for the server.")
    args = parser.parse_args(argv)

    import openai

    import judge

    scratch = Path(tempfile.mkdtemp(prefix="serve-demo-"))
    model = args.model
    if not model:
        from judge.tiny_models import build_tiny_qwen2

        model = str(build_tiny_qwen2(scratch / "tiny-judge", kind="causal", seed=0))
        print(f"no --model: built a random tiny judge in {model}")
    constrained = args.constrained if args.constrained is not None else not args.model

    port, key = _free_port(), "demo-key"
    cmd = [sys.executable, "-m", "serve.cli", "--model", model, "--port", str(port), "--api-key", key,
           "--served-model-name", "pollux-judge-demo", "--log-dir", str(scratch / "serve"), "--no-access-log",
           "--max-tokens", str(args.max_tokens), *CPU_FLAGS]  # fmt: skip
    if not args.model:
        # A random model fills whatever feedback length the format allows: keep it within max_tokens.
        cmd += ["--feedback-max-chars", "40"]
    print("starting:", " ".join(cmd))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CACHE_ROOT": str(scratch / "vllm-cache")}
    log = open(scratch / "judge-serve.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0, timeout=600)
        deadline = time.monotonic() + args.timeout_s
        while True:
            if proc.poll() is not None:
                print((scratch / "judge-serve.log").read_text(errors="replace")[-3000:], file=sys.stderr)
                return 1
            with contextlib.suppress(Exception):
                import httpx

                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                print(f"judge-serve not ready in {args.timeout_s:.0f} s; log: {scratch / 'judge-serve.log'}", file=sys.stderr)
                return 1
            time.sleep(1)

        records = judge.load_records(judge.sample_data_path())[: args.items]
        body = {
            "items": [
                {
                    "id": r.id,
                    "instruction": r.instruction,
                    "answer": r.answer,
                    "reference_answer": r.reference_answer,
                    "criteria": [{"name": r.criteria_name, "rubrics": r.rubrics}],
                }
                for r in records
            ],
            "constrained": constrained,
        }
        response = client.post("/judge", body=body, cast_to=object)
        print(f"\n/v1/judge: {response['judge_kind']} judge {response['model']!r}, {response['usage']['judgments']} "
              f"judgments, {response['usage']['parsed']} parsed")  # fmt: skip
        for record, item in zip(records, response["items"]):
            for result in item["results"]:
                print(f"\n[{item['id']}] {result['criterion']} (scale {result['scale'][0]}..{result['scale'][-1]}); "
                      f"experts: {record.criteria_score}")  # fmt: skip
                shown = {k: result[k] for k in ("score", "score_source", "parse_ok", "error", "expected_score", "confidence", "regression_score") if result.get(k) is not None}
                print("  " + json.dumps(shown, ensure_ascii=False))
                print(f"  feedback: {result['feedback'][:200]!r}")
        return 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


if __name__ == "__main__":
    raise SystemExit(main())

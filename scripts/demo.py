"""``make demo``: the main job end to end on the bundled sample data and tiny judges built locally.

Why one module of ~560 lines: it is the script a newcomer reads beside its output, top to bottom; its five stages
share the judge-serve processes (``_Servers``) and the one-line ``DemoError`` convention, and split they would be a
package to find one's way through for what ``make demo`` runs as one file.

Run from anywhere (the configs are read from this repository, ``--out`` is taken from the working directory):
    .venv/bin/python scripts/demo.py --out runs/demo
    .venv/bin/python scripts/demo.py --out runs/demo --stages contract,train     # only some stages
    .venv/bin/python scripts/demo.py --out runs/demo --data my_pollux_rows.jsonl # the contract stage on other data

Stages, in the order of the ``STAGES`` table, each through the same console scripts a user runs (the command is
printed before it runs):

1. **contract** — build the tiny real judge models (a random 2-layer Qwen2 on the real Qwen2.5 vocabulary), load
   the sample data, render a prompt through the chat template, parse verdicts (the experts' rationales as
   training targets and the malformed outputs judges really write) and summarise.
2. **train** — ``judge-train`` trains tiny seq2seq and regression judges on the sample's Standard rows.
3. **serve** — ``judge-serve`` serves the trained seq2seq judge (with the verdict format forced by structured
   outputs: a judge trained for a minute cannot keep it); a few sample items are judged through ``/v1/judge``
   with the ``openai`` SDK.
4. **eval** — ``judge-eval run`` judges the whole sample with both trained judges, ``score`` prints the POLLUX
   tables for the Zero-Shot and Standard tests, ``compare`` puts the two side by side; the demo ends by printing
   where their ``report.html`` / ``compare.html`` pages are.
5. **mera** — ruHumanEval on a few HumanEval problems against the served judge (pass@k near zero: a tiny model
   writes no code) and the canonical-solution self-check of the sandbox.

The tiny judges are smoke-test models: their numbers show the plumbing, not a useful judge. The demo sits outside
the packages it exercises: it imports the contract (``judge``), and ``train.tiny_models`` for the contract stage's
tiny models (built in this process so that the stage can render a prompt through their tokenizer); training,
serving and evaluation run as subprocesses, and nothing is imported from ``serve`` or ``eval``.

A mistake in how it was asked to run (a ``--data`` that is missing or empty, or given to ``--stages`` without the
contract stage that alone reads it, a ``--stages`` that names no stage,
``--stages serve``, ``eval`` or ``mera`` on an ``--out`` with no trained judge, said before any stage runs, a
judge-serve that does not start or fails the serve stage's request, a console script that is not installed, an
``--out`` that is a file or cannot be written, a Python without the toolkit) stops it with one line on stderr and
exit code 2; Ctrl+C stops it with one line and exit code 130. It runs
offline: ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` are set to 1 unless already set.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

try:
    from judge import (
        ZERO_SHOT,
        load_records,
        parse_verdict,
        render_prompt,
        render_target,
        sample_data_path,
        scale_of,
        split_of,
    )
    from judge.plumbing.processes import ManagedProcess, ProcessStartError, free_port, log_tail, start_process
    from judge.plumbing.provenance import scrub_secrets
    from judge.prompts import apply_chat
    from judge.sample_data import data_source
    from judge.scales import has_unique_mode
except ModuleNotFoundError as missing:
    # `python3 scripts/demo.py` outside the venv: the toolkit, or with PYTHONPATH at the clone a dependency the set-up
    # installs (numpy), is not on this Python's path: a setup step missed, not a bug to show as a traceback (even for
    # --help). A module missing inside the toolkit is a bug: raised.
    if (missing.name or "").partition(".")[0] in ("judge", "train", "serve", "eval", "scripts") \
            and missing.name != "judge":
        raise
    print(f"demo: run it with .venv/bin/python (make setup first); this Python has no module {missing.name!r}",
          file=sys.stderr)
    raise SystemExit(2) from None

# What real judges emit besides clean verdicts; each must come back as a counted failure, never a score.
MALFORMED_OUTPUTS = [
    "[FEEDBACK] Ответ в целом верный, но неполный. [RESULT] 1",  # cut at the token limit
    "[FEEDBACK] Ответ хороший. [RESULT] отлично [END]",  # a word, not a score
    "Я думаю, ответ хороший.",  # no tags at all
    "<think>Надо сравнить с эталоном...",  # reasoning never closed
]
# A number outside a 0..2 scale is not a failure: it is scored, flagged in_scale=False (POLLUX paper Table 11).
OUT_OF_SCALE_OUTPUT = "[FEEDBACK] Ответ безупречен. [RESULT] 5 [END]"

# The configs ship with the repository, so they are found from this file, not from the working directory: the demo
# run from another folder would otherwise stop at the train stage with "config file ... not found".
REPO_ROOT = Path(__file__).resolve().parents[1]
TINY_TRAIN_CONFIGS = REPO_ROOT / "configs" / "train" / "tiny"
# judge-serve on a CPU, with the verdict format forced for a judge trained for a minute: the settings live in the
# tiny serve config (eager fp32, 1 GiB of KV cache, constrained decoding; its comments say why), as in
# docs/quickstart.md.
TINY_SERVE_CONFIG = REPO_ROOT / "configs" / "serve" / "tiny-cpu.yaml"
# Everything the demo needs is built here or bundled, so nothing may reach the network: a mistyped --data path would
# otherwise be read as a hub dataset's name and fetched. A value the user set stays; the subprocesses inherit these.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
DEMO_API_KEY = "demo-key"
SERVED_NAME = "pollux-judge-demo"


class DemoError(Exception):
    """A mistake in how the demo was asked to run: ``main`` prints its one line and exits 2."""


def _parse_args(argv):
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(prog="python scripts/demo.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/demo", help="folder for models, runs and reports (default: runs/demo)")
    parser.add_argument("--data", default=None, help="POLLUX-format records for the contract stage (default: the sample)")
    names = [stage.name for stage in STAGES]
    parser.add_argument("--stages", default=",".join(names), help=f"comma-separated subset of {','.join(names)}")
    parser.add_argument("--serve-timeout-s", type=float, default=900.0, help="seconds judge-serve may take to start")
    args = parser.parse_args(argv)
    args.stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(args.stages) - set(names))
    if unknown:
        parser.error(f"--stages: unknown stage{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; choose from "
                     f"{','.join(names)} (comma-separated), or leave --stages out for every stage")
    if not args.stages:  # `--stages ""` or `--stages ,` would run nothing and still say "make demo finished"
        parser.error(f"--stages names no stage; choose from {names}")
    return args


def missing_judges(out: Path, chosen) -> DemoError | None:
    """The mistake of a plan whose stages serve a trained judge that neither ``--out`` holds nor its train stage
    will write: said before any stage runs, so that ``--stages mera`` fails at once, not after the sandbox self-check."""
    if any(stage.name == "train" for stage in chosen):
        return None
    for stage in chosen:
        for recipe in stage.judges:
            if not (out / "train" / recipe / "export").is_dir():
                return no_trained_judge(out, recipe)
    return None


def no_trained_judge(out: Path, recipe: str) -> DemoError:
    return DemoError(f"--out {out}: no trained {recipe} judge at {out / 'train' / recipe / 'export'}; run the train "
                     "stage first (add train to --stages, or leave --stages out for every stage)")


def main(argv=None) -> int:
    args = _parse_args(argv)
    try:
        return run_stages(args)
    except KeyboardInterrupt:  # Ctrl+C: the judge-serves are stopped on the way out (_Servers); no traceback
        print("demo: interrupted; what the finished stages wrote is kept (--stages reruns only some)",
              file=sys.stderr)
        return 130


def run_stages(args: argparse.Namespace) -> int:
    """The chosen stages, in order; the exit code of the first that fails (2 for a ``DemoError``), else 0."""
    from judge.plumbing.config_files import ConfigError
    from judge.plumbing.run_folder import refuse_unwritable

    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
    out = Path(args.out).resolve()
    try:  # a file, or a place that cannot be written: said now, not as mkdir's traceback or at a stage's first write
        refuse_unwritable(out, "--out", "output folder")
    except ConfigError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 2
    chosen = [stage for stage in STAGES if stage.name in args.stages]
    if error := missing_judges(out, chosen):
        print(f"demo: {error}", file=sys.stderr)
        return 2
    if args.data is not None and not any(stage.name == "contract" for stage in chosen):
        # Only the contract stage reads --data (the others train and judge on the bundled sample): ignoring it
        # would run a plan other than the one asked for.
        print(f"demo: --data is read by the contract stage only, which --stages {','.join(args.stages)} leaves out; "
              "add contract to --stages or leave --data out", file=sys.stderr)
        return 2
    if any(stage.name == "contract" for stage in chosen):
        try:  # a wrong --data is said before any stage runs, not after the stages before it
            args.contract_records = contract_records(args.data)
        except DemoError as error:
            print(f"demo: {error}", file=sys.stderr)
            return 2
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print("Stages:")
    for number, stage in enumerate(chosen, 1):
        print(f"  {number}. {stage.name:<8} {stage.summary}")
    # One judge-serve per trained judge, started when a stage first needs it (or ahead of it) and shared by the
    # later stages: a vLLM engine takes most of a minute to start on a CPU.
    with _Servers(out, args.serve_timeout_s) as servers:
        for stage in chosen:
            print(f"\n======== {stage.name} ========", flush=True)
            servers.stage = stage.name
            stage_started = time.monotonic()
            try:
                code = stage.run(out, args, servers)
            except DemoError as error:
                print(f"[{stage.name}] FAILED", flush=True)
                print(f"demo: {error}", file=sys.stderr)
                return 2
            print(f"[{stage.name}] {'done' if code == 0 else f'FAILED ({code})'} in {time.monotonic() - stage_started:.0f} s",
                  flush=True)
            if code != 0:
                return code
            try:
                # A judge-serve loading ahead that already gave up is said now, not after the stages before the
                # one that needs it.
                servers.check()
            except DemoError as error:
                print(f"demo: {error}", file=sys.stderr)
                return 2
    print(f"\nmake demo finished in {time.monotonic() - started:.0f} s; everything is under {out}")
    pages = report_pages(out)
    if pages:
        print("Report pages (open in a browser; they work offline):")
        for page in pages:
            print(f"  file://{page}")
    return 0


def report_pages(out: Path) -> list[Path]:
    """The browsable pages ``judge-eval score`` and ``compare`` wrote under the demo's folder, in stage order."""
    eval_dir = Path(out) / "eval"
    return sorted(eval_dir.glob("*/report.html")) + sorted(eval_dir.glob("*/compare.html"))


# ---------------------------------------------------------------------------------------------------- contract


def contract_records(data: str | None) -> list:
    """The contract stage's records: ``--data``'s, else the bundled sample's; a ``DemoError`` naming the file and
    the row when they cannot be read or there are none."""
    source = None
    try:
        source = data_source(data) or sample_data_path()  # `--data sample` too; `--data ""` refused, as judge-eval's
        records = load_records(source)
    except (OSError, ValueError) as error:  # the loader's message names the file and the row
        if source is None:  # data_source's own line, which names --data
            raise DemoError(str(error)) from None
        said = str(error).removeprefix(f"{source}: ")  # the path once, after the flag
        raise DemoError(f"--data {source}: {said}") from None
    if not records:
        raise DemoError(f"--data {source}: no records; the contract stage needs at least one labelled row")
    return records


def stage_contract(out: Path, args, servers) -> int:
    from train.tiny_models import build_qwen_tokenizer, build_tiny_qwen2

    source = data_source(args.data) or sample_data_path()
    records = getattr(args, "contract_records", None) or contract_records(args.data)

    tokenizer = build_qwen_tokenizer()
    models = {kind: build_tiny_qwen2(out / "models" / f"tiny-{kind}", kind=kind, tokenizer=tokenizer) for kind in ("causal", "regression")}
    for kind, path in models.items():
        print(f"[model] random tiny {kind} judge saved to {path}")

    splits = Counter(split_of(r) for r in records)
    no_mode = sum(not has_unique_mode(r.expert_scores) for r in records)
    print(f"[data] {len(records)} records from {source}")
    print(f"[data] {splits[ZERO_SHOT]} Zero-Shot, {len(records) - splits[ZERO_SHOT]} Standard; "
          f"{len({r.instruction for r in records})} instructions, {len({r.model_id for r in records})} evaluated models, "
          f"{len({r.task_type for r in records})} task types, {len({r.criteria_name for r in records})} criteria")
    print(f"[data] {statistics.mean(len(r.expert_scores) for r in records):.2f} experts per item on average; "
          f"{no_mode} items without a unique mode (excluded from MAE, and counted)")

    first = records[0]
    chat_text = apply_chat(tokenizer, render_prompt(first))
    lengths = [len(tokenizer(apply_chat(tokenizer, render_prompt(r)), add_special_tokens=False).input_ids) for r in records]
    print(f"[prompt] item {first.id} ({first.task_type}, «{first.criteria_name}») through the chat template:")
    print("\n".join("    " + line for line in chat_text.splitlines()[:12]) + "\n    ...")
    print(f"[prompt] Qwen2.5 tokens per prompt: median {statistics.median(lengths):.0f}, max {max(lengths)}")

    targets = [
        render_target(feedback, score)
        for r in records if r.expert_feedback
        for feedback, score in zip(r.expert_feedback, r.expert_scores)
    ]
    parsed = [parse_verdict(t) for t in targets]
    failures = [parse_verdict(t, scale=scale_of("0: a\n1: b\n2: c")) for t in MALFORMED_OUTPUTS]
    print(f"[verdict] {sum(v.ok for v in parsed)}/{len(parsed)} expert rationales rendered as training targets parse back")
    if targets:
        print(f"[verdict] e.g. {targets[0]}")
    else:  # rows without rationales (expert_feedback): scores alone make no seq2seq training target
        print(f"[verdict] no expert rationale (expert_feedback) in {source}: no training target to show")
    for text, verdict in zip(MALFORMED_OUTPUTS, failures):
        print(f"[verdict] {verdict.error:<15} {verdict.reason}  <- {text[:50]!r}")
    flagged = parse_verdict(OUT_OF_SCALE_OUTPUT, scale=scale_of("0: a\n1: b\n2: c"))
    print(f"[verdict] {'scored':<15} {flagged.score:g}, in_scale={flagged.in_scale}: {flagged.reason}  <- {OUT_OF_SCALE_OUTPUT[:50]!r}")

    summary = {
        "records": len(records),
        "zero_shot": splits[ZERO_SHOT],
        "standard": len(records) - splits[ZERO_SHOT],
        "no_unique_mode": no_mode,
        "targets_parsed": sum(v.ok for v in parsed),
        "targets": len(parsed),
        "malformed_failed": sum(not v.ok for v in failures),
        "models": {kind: str(path) for kind, path in models.items()},
    }
    (out / "contract_summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    ok = summary["targets_parsed"] == summary["targets"] and summary["malformed_failed"] == len(failures)
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------------- train


def stage_train(out: Path, args, servers) -> int:
    serving_later = bool({"serve", "eval", "mera"} & set(args.stages))
    for recipe in ("seq2seq", "regression"):
        # A second `make demo` trains again from scratch rather than refusing the folder of the first.
        code = _run(["judge-train", "--config", str(TINY_TRAIN_CONFIGS / f"{recipe}.yaml"),
                     "--output-dir", str(out / "train" / recipe), "--overwrite-output-dir", "true"])
        if code:
            return code
        print(f"[train] {recipe} judge exported to {out / 'train' / recipe / 'export'}")
        if serving_later:
            # Its judge-serve loads while the next stages run: an engine's start is mostly one core importing
            # Python, which leaves the other core to training, judging or the other engine's start.
            servers.start(recipe)
    return 0


# ---------------------------------------------------------------------------------------------------- serve


def stage_serve(out: Path, args, servers) -> int:
    import openai

    url = servers.url("seq2seq")
    client = openai.OpenAI(base_url=url, api_key=DEMO_API_KEY, max_retries=0, timeout=600)
    records = [r for r in load_records(sample_data_path()) if split_of(r) != ZERO_SHOT][:3]
    body = {
        "items": [
            {"id": r.id, "instruction": r.instruction, "answer": r.answer, "reference_answer": r.reference_answer,
             "criteria": [{"name": r.criteria_name, "rubrics": r.rubrics}]}
            for r in records
        ]
    }
    print(f"[serve] POST {url}/judge with {len(records)} items through the openai SDK")
    try:
        response = client.post("/judge", body=body, cast_to=object)
    except openai.APIError as error:  # judge-serve died or refused mid-stage: why is in its log, not in a traceback
        said = str(error).splitlines()[0][:300] if str(error) else ""
        raise DemoError(f"judge-serve for the seq2seq judge failed the serve stage's request "
                        f"({type(error).__name__}: {scrub_secrets(said)}); its log: {servers.log('seq2seq')}") from None
    # Each item is printed beside the record at its place: an answer that is not one item per record, at its index
    # with its id (as judge-serve answers: docs/serving.md), would drop a record or show another's verdict.
    answered = response["items"]
    wrong = f"{len(answered)} items for the {len(records)} sent" if len(answered) != len(records) else next(
        (f"item {item['id']!r} at index {item['index']} in the place of {record.id!r} at index {k}"
         for k, (record, item) in enumerate(zip(records, answered)) if (item["index"], item["id"]) != (k, record.id)),
        None)
    if wrong:
        raise DemoError(f"judge-serve for the seq2seq judge answered the serve stage's request with {wrong}; its log: "
                        f"{servers.log('seq2seq')}")
    for record, item in zip(records, answered):
        for result in item["results"]:
            shown = {k: result.get(k) for k in ("score", "parse_ok", "error", "expected_score", "confidence")}
            print(f"[serve] {record.id} «{result['criterion'][:40]}» experts {list(record.expert_scores)} "
                  f"-> {json.dumps(shown, ensure_ascii=False)}")
            print(f"        feedback: {result['feedback'][:160]!r}")
    return 0


# ---------------------------------------------------------------------------------------------------- eval


def stage_eval(out: Path, args, servers) -> int:
    # Loading already when the train stage ran (stage_train); with `--stages eval` alone it starts here, so its
    # engines load while the seq2seq judge judges.
    servers.start("regression")
    runs = []
    for recipe in ("seq2seq", "regression"):
        run_dir = out / "eval" / recipe
        # --overwrite: the judges were just trained again, and a resume would find every item already judged by the
        # last run's model and score its verdicts; an interrupted run would leave two models' verdicts mixed.
        code = _run(["judge-eval", "run", "--judge", servers.url(recipe), "--api-key-env", "JUDGE_DEMO_KEY",
                     "--name", f"tiny-{recipe}", "--out", str(run_dir), "--max-tokens", "160", "--concurrency", "16",
                     "--overwrite"],
                    env={"JUDGE_DEMO_KEY": DEMO_API_KEY})
        if recipe == "regression":
            servers.stop(recipe)  # frees its two engines before scoring
        if code:
            return code
        code = _run(["judge-eval", "score", "--predictions", str(run_dir), "--n-boot", "200"])
        if code:
            return code
        runs.append(str(run_dir))
    # compare's default --n-boot: Holm's adjustment calls a cell of a table of m callable cells only from more than
    # 2 m / alpha resamples (the sample's table by model holds 5), and compare warns of a --n-boot below that
    return _run(["judge-eval", "compare", *runs, "--out", str(out / "eval" / "compare")])


# ---------------------------------------------------------------------------------------------------- mera


def stage_mera(out: Path, args, servers) -> int:
    code = _run(["judge-eval", "mera", "ruhumaneval", "--self-check", "--data", "humaneval-en",
                 "--out", str(out / "mera" / "self-check"), "--overwrite"])
    if code:
        return code
    return _run(["judge-eval", "mera", "ruhumaneval", "--endpoint", servers.url("seq2seq"), "--model", SERVED_NAME,
                 "--api-key-env", "JUDGE_DEMO_KEY", "--data", "humaneval-en", "--limit", "4", "--n", "4", "--k", "1",
                 "4", "--max-tokens", "64", "--out", str(out / "mera" / "ruhumaneval"), "--overwrite"],
                env={"JUDGE_DEMO_KEY": DEMO_API_KEY})  # keys travel in the environment (docs/security.md)


# ---------------------------------------------------------------------------------------------------- the stage table


@dataclass(frozen=True)
class Stage:
    """One step of the demo: its name (for ``--stages``), what it shows (printed in the plan), the function that
    runs it, ``run(out, args, servers) -> exit code`` (0 is success; anything else stops the demo), and the trained
    judges (recipes) it serves, which the train stage writes under ``--out``."""

    name: str
    summary: str
    run: Callable[[Path, argparse.Namespace, "_Servers"], int]
    judges: tuple[str, ...] = ()


STAGES = (
    Stage("contract", "tiny judge models, the sample data, a prompt through the chat template, verdict parsing",
          stage_contract),
    Stage("train", "judge-train: tiny seq2seq and regression judges on the sample's Standard rows", stage_train),
    Stage("serve", "judge-serve: a few sample items judged through /v1/judge with the openai SDK", stage_serve,
          judges=("seq2seq",)),
    Stage("eval", "judge-eval run, score and compare for both trained judges", stage_eval,
          judges=("seq2seq", "regression")),
    Stage("mera", "judge-eval mera ruhumaneval: sandbox self-check, then the served judge", stage_mera,
          judges=("seq2seq",)),
)


# ---------------------------------------------------------------------------------------------------- processes


def _run(cmd: list[str], env: dict | None = None) -> int:
    """Run a console script of this environment, printing the command first."""
    print("$ " + " ".join(cmd), flush=True)
    try:
        return subprocess.call([_script(cmd[0]), *cmd[1:]], env={**os.environ, **(env or {})})
    except OSError as error:  # _script fell back to the bare name: the console script is not installed here
        raise DemoError(f"{cmd[0]}: cannot run it ({error.strerror or error}); run the demo with .venv/bin/python "
                        "after make setup, which installs it") from None


def _script(name: str) -> str:
    """A console script of the running interpreter's environment (works without an activated venv)."""
    return shutil.which(name, path=str(Path(sys.executable).parent)) or name


class _Servers:
    """judge-serve processes for the trained judges, started on first use (or ahead, with ``start``) and stopped
    (whole tree) at exit."""

    def __init__(self, out: Path, timeout_s: float):
        self.out, self.timeout_s = out, timeout_s
        self.running: dict[str, tuple[ManagedProcess, str]] = {}
        self.starting: dict[str, tuple[ManagedProcess, int, float]] = {}
        # The stage running now (run_stages sets it) and the one each judge-serve was launched in: a wait counted
        # from a launch in an earlier stage is said to be, or it reads as longer than the stage that printed it.
        self.stage = ""
        self.launched_in: dict[str, str] = {}
        self.clock: Callable[[], float] = time.monotonic

    def __enter__(self) -> _Servers:
        return self

    def __exit__(self, *exc) -> None:
        for recipe in [*self.running, *self.starting]:
            self.stop(recipe)

    def start(self, recipe: str) -> None:
        """Launch the judge-serve for ``recipe``'s trained judge without waiting for it; ``url`` waits."""
        if recipe not in self.running and recipe not in self.starting:
            self.starting[recipe] = self._launch(recipe)
            self.launched_in[recipe] = self.stage

    def url(self, recipe: str) -> str:
        """The ``/v1`` base URL of the judge-serve for ``recipe``'s trained judge, once it is ready (started if
        needed)."""
        if recipe not in self.running:
            self.start(recipe)
            server, port, started = self.starting.pop(recipe)
            asked = self.clock()
            try:
                server.wait_ready(f"http://127.0.0.1:{port}/ready", self.timeout_s, interval_s=1.0)
            except ProcessStartError as error:
                # The error's first line says how it ended.
                raise self._did_not_start(recipe, server, str(error).splitlines()[0]) from None
            ready = self.clock()
            launched_in = self.launched_in.pop(recipe, self.stage)
            if launched_in == self.stage:
                when = f" after {ready - started:.0f} s"
            else:
                waited = f"{ready - asked:.0f} s of them" if round(ready - asked) else "none of them"
                when = (f", {ready - started:.0f} s after its launch during the {launched_in} stage (the {self.stage} "
                        f"stage waited {waited})")
            print(f"[serve] judge-serve ({recipe} judge) ready on port {port}{when}", flush=True)
            self.running[recipe] = (server, f"http://127.0.0.1:{port}/v1")
        return self.running[recipe][1]

    def check(self) -> None:
        """Raise ``DemoError`` for a judge-serve that exited while still starting (nothing waits on one launched
        ahead until a stage needs its URL)."""
        for recipe, (server, _port, _started) in list(self.starting.items()):
            code = server.exit_code()
            if code is not None:
                self.starting.pop(recipe)
                raise self._did_not_start(recipe, server, f"judge-serve exited with code {code} while starting")

    def log(self, recipe: str) -> Path:
        """The judge-serve log of ``recipe``'s trained judge: where a failure's reason is."""
        return self.out / "serve" / recipe / "judge-serve.log"

    def _did_not_start(self, recipe: str, server: ManagedProcess, how: str) -> DemoError:
        """Stop ``server`` and say, in one line, how it ended and why: judge-serve writes the reason it gives up
        (vLLM missing, a bad config, a port in use) as its log's last line, which is named with the log."""
        server.stop()
        log = self.log(recipe)
        lines = [line.strip() for line in log_tail(log).splitlines() if line.strip()]
        reason = f": {scrub_secrets(lines[-1])[:400]}" if lines and log.is_file() else ""
        return DemoError(f"judge-serve for the {recipe} judge did not start ({how.rstrip('.')}{reason}); "
                         f"its log: {log}")

    def _launch(self, recipe: str) -> tuple[ManagedProcess, int, float]:
        model = self.out / "train" / recipe / "export"
        if not model.is_dir():  # said before a judge-serve is started only to refuse the folder
            raise no_trained_judge(self.out, recipe)
        log_dir = self.out / "serve" / recipe
        port = free_port()
        cmd = ["judge-serve", "--model", str(model), "--port", str(port), "--api-key-env", "JUDGE_DEMO_KEY",
               "--served-model-name", SERVED_NAME, "--log-dir", str(log_dir), "--no-access-log", "--config",
               str(TINY_SERVE_CONFIG)]
        print("$ " + " ".join(cmd) + " &", flush=True)
        # judge-serve drains in-flight requests and stops its engines on SIGTERM; 120 s before SIGKILL.
        server = start_process([_script(cmd[0]), *cmd[1:]], log_path=self.log(recipe), grace_s=120,
                               name="judge-serve",
                               env={**os.environ, "VLLM_CACHE_ROOT": str(log_dir / "vllm-cache"),
                                    "JUDGE_DEMO_KEY": DEMO_API_KEY})
        return server, port, self.clock()

    def stop(self, recipe: str) -> None:
        entry = self.running.pop(recipe, None) or self.starting.pop(recipe, None)
        if entry is not None:
            entry[0].stop()  # the ManagedProcess, ready or not


if __name__ == "__main__":
    raise SystemExit(main())

"""judge-eval: run a judge over expert-labelled POLLUX records, score it, compare checkpoints; MERA tasks.

    judge-eval run --judge http://127.0.0.1:8000/v1 --data DATA.jsonl --out runs/judge-a
    judge-eval run --judge CHECKPOINT_DIR --out runs/judge-b --server-args='["--enforce-eager","--dtype","float32"]'
    judge-eval run --config configs/eval/gpt-4o.yaml --data DATA.jsonl --out runs/gpt-4o
    judge-eval score --predictions runs/judge-a --data DATA.jsonl --out runs/judge-a
    judge-eval compare runs/judge-a runs/judge-b [runs/gpt-4o ...] --out runs/compare
    judge-eval bench --model http://127.0.0.1:8001/v1 --judge http://127.0.0.1:8000/v1 --data INSTRUCTIONS --out runs/bench/m
    judge-eval compare runs/bench/model-a runs/bench/model-b --out runs/bench/a-vs-b   (two bench runs: paired)
    judge-eval convert --data data/POLLUX --out pollux_test.jsonl   (released Parquet shards -> JSONL, lossless)
    judge-eval experts --data ai-forever/POLLUX --out runs/experts   (the paper's expert-only tables, no judge)
    judge-eval mera ruhumaneval --endpoint URL --model NAME --out runs/rhe      (see eval/mera/cli.py)

Example override: ``judge-eval run --config configs/eval/gpt-4o.yaml --concurrency 4 --limit 100 ...`` (flags
override the YAML, which overrides the defaults). Without ``--data`` the bundled sample data is judged.
``--judge`` may be a checkpoint folder (judge-serve is started for it if installed, else vLLM), a judge-serve or
vLLM URL, or any OpenAI-compatible API. Run ``judge-eval SUBCOMMAND --help`` for every option.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys

__all__ = ["main", "build_parser", "resolve_run_config", "configure_logging", "CHATTY_LOGGERS"]

from judge.plumbing.console_logging import CHATTY_LOGGERS, configure_logging  # the one set-up of every console script

log = logging.getLogger("judge_eval")


def build_parser() -> argparse.ArgumentParser:
    """The ``judge-eval`` parser with its subcommands (``mera`` is dispatched before parsing)."""
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full only (#30.7)

    parser = ExactArgumentParser(prog="judge-eval", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--log-level", default="info",
                        help="Logging level (debug, info, warning); HTTP request lines are shown at debug only.")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{run,score,compare,bench,convert,experts,mera}")

    run_p = sub.add_parser("run", help="Judge records; writes predictions.jsonl (resumable) and run.json.",
                           description="Judge every record of --data and append one prediction per item to "
                                       "OUT/predictions.jsonl; rerunning resumes.")
    run_p.add_argument("--config", default=None, help="YAML with RunConfig keys (configs/eval/*.yaml).")
    from eval.config import RunConfig
    from judge.plumbing.config_files import add_config_flags

    add_config_flags(run_p, RunConfig)

    score_p = sub.add_parser("score", help="POLLUX metrics of a run: metrics.json, report.md, report.html, items.parquet.",
                             description="Compare a run's predictions with the experts (POLLUX Appendix D.2).")
    score_p.add_argument("--predictions", required=True, help="predictions.jsonl, or the run folder holding it.")
    score_p.add_argument("--data", default=None, help="The labelled records (default: the data named in run.json).")
    score_p.add_argument("--out", default=None, help="Output folder (default: the predictions' folder).")
    score_p.add_argument("--target", choices=("auto", "mode", "mean"), default="auto",
                         help="Reference score: mode of the experts, or mean (regression judges); auto picks by the "
                              "predictions' score_source.")
    score_p.add_argument("--n-boot", type=int, default=1000, help="Bootstrap resamples per interval (0: none).")
    score_p.add_argument("--seed", type=int, default=0, help="Seed of the Verdict Confidence draws and bootstraps.")
    score_p.add_argument("--vc-repeats", type=int, default=100, help="Random expert replacements for the judge's VC.")
    score_p.add_argument("--name", default="", help="The judge's label in the report (default: from predictions).")
    score_p.add_argument("--png", action="store_true",
                         help="Also draw the PNG plots (plots/*.png; report.html has them as SVG). On with "
                              "--wandb-project, which uploads them.")
    score_p.add_argument("--spearman-target", choices=("auto", "mode", "mean"), default="auto",
                         help="Reference of Spearman (and Pearson, Kendall), chosen apart from MAE's --target: auto "
                              "= the same as MAE's (the paper names no aggregate for its correlations).")
    score_p.add_argument("--clip-regression", action="store_true",
                         help="Score regression (-r) judges on the head's value clipped into the scale (as "
                              "judge-serve's score) instead of its raw value (the default: the paper's and POLLUX's "
                              "evaluator's). Named in metrics.json and the report.")
    score_p.add_argument("--no-plots", dest="png", action="store_false",
                         help="No PNG plots: the default now (kept for older command lines).")
    score_p.add_argument("--wandb-project", default="", help="Also log tables and plots to this W&B project.")
    score_p.add_argument("--allow-repeated-ids", action="store_true",
                         help="Score each id's first row when the predictions repeat an id (default: refuse the file).")
    score_p.add_argument("--html-text-items", type=int, default=None,
                         help="Items whose full texts report.html embeds, largest disagreements first (default: "
                              "5000; -1: all).")

    cmp_p = sub.add_parser("compare", help="Scored runs side by side with paired-bootstrap significance.",
                           description="Compare scored runs (folders written by `score`) with the first one.")
    cmp_p.add_argument("runs", nargs="+", metavar="RUN", help="Scored run folders; the first is the baseline.")
    cmp_p.add_argument("--out", default=None, help="Also write compare.json, compare.md and compare.html here.")
    cmp_p.add_argument("--n-boot", type=int, default=1000, help="Paired bootstrap resamples.")
    cmp_p.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")
    cmp_p.add_argument("--alpha", type=float, default=0.05, help="Significance level of better/worse calls.")
    cmp_p.add_argument("--allow-other-judge", action="store_true",
                       help="Two bench runs: compare them even when different judges scored them.")

    bench_p = sub.add_parser("bench", help="Rank a candidate LLM with a judge: answers, verdicts, POLLUX's matrix.",
                             description="POLLUX's answer.py -> score.py -> metrics.py: the candidate (--model) "
                                         "answers every instruction of --data, the judge scores each answer on each "
                                         "of its criteria, and OUT/matrix.csv is POLLUX's metrics.csv, with "
                                         "bootstrap intervals and failure counts in OUT/report.html; rerunning "
                                         "resumes (see eval/bench.py).")
    bench_p.add_argument("--config", default=None, help="YAML with BenchConfig keys.")
    from eval.bench import BenchConfig

    add_config_flags(bench_p, BenchConfig)

    conv_p = sub.add_parser("convert", help="Any supported data source -> one JSONL file (for eval.sbatch shards).",
                            description="Read records with judge.load_records (a JSONL/JSON/Parquet file, a folder of "
                                        "the hub's Parquet shards, a save_to_disk folder or a dataset name) and write "
                                        "them as JSONL in the project schema; abstentions, released columns and "
                                        "unknown columns survive the round trip.")
    conv_p.add_argument("--data", required=True, help="The source.")
    conv_p.add_argument("--out", required=True, help="The JSONL file to write.")
    conv_p.add_argument("--split", default=None, help="Split of a multi-split source (default: the only one, or test).")

    exp_p = sub.add_parser("experts", help="The experts' own tables from the labels alone (no judge).",
                           description="Mean expert score by evaluated model per split (Table 10's Experts column), "
                                       "by task type (Table 1) and by criterion (Table 9), and the experts' Verdict "
                                       "Confidence (Tables 14-16): experts_tables.csv, experts.md and "
                                       "experts.html.")
    exp_p.add_argument("--data", required=True, help="The labelled records (any source judge.load_records reads, "
                                                     "e.g. ai-forever/POLLUX or a folder of its Parquet shards).")
    exp_p.add_argument("--out", required=True, help="Folder for experts_tables.csv, experts.md and experts.html.")
    exp_p.add_argument("--split", default=None, help="Split of a multi-split source (default: the only one, or test).")

    sub.add_parser("mera", help="MERA tasks (ruHumanEval, ruTiE): `judge-eval mera --help`.", add_help=False)
    return parser


def resolve_run_config(args: argparse.Namespace):
    """``RunConfig`` from defaults, then ``--config`` YAML, then the flags actually given."""
    from eval.config import RunConfig
    from judge.plumbing.config_files import given_flags, resolve_config

    return resolve_config(RunConfig, args.config, given_flags(args, RunConfig))


def _run(args: argparse.Namespace) -> int:
    from eval.run import run

    config = resolve_run_config(args)
    from judge.plumbing.provenance import redact

    log.info("run config: %s", json.dumps(redact(dataclasses.asdict(config)), ensure_ascii=False))
    summary = run(config)
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    return 0 if summary["request_failed"] == 0 else 3


def _score(args: argparse.Namespace) -> int:
    from eval.pairwise_metrics import is_pairwise_run, pairwise_markdown, score_pairwise

    if is_pairwise_run(args.predictions):  # a pairwise run (eval.pairwise): its own metrics and report
        print(pairwise_markdown(score_pairwise(args.predictions, args.data, args.out, n_boot=args.n_boot,
                                               seed=args.seed, name=args.name)))
        return 0
    from eval.report import SPLIT_TITLES, fmt, fmt_ci
    from eval.scoring import score

    result = score(args.predictions, args.data, args.out, target=args.target, n_boot=args.n_boot, seed=args.seed,
                   vc_repeats=args.vc_repeats, png=args.png, clip_regression=args.clip_regression,
                   spearman_target=args.spearman_target,
                   wandb_project=args.wandb_project, name=args.name,
                   html_text_items=args.html_text_items, allow_repeated_ids=args.allow_repeated_ids)
    for split, block in result["splits"].items():
        c = block["overall"]
        print(f"{SPLIT_TITLES[split]:>22}: n {c['n']}, n_failed {c['n_failed']}, no unique mode "
              f"{c['n_no_unique_mode']}, out of scale {c['n_out_of_scale']}, MAE {fmt_ci(c['mae'], c['mae_ci'])}, "
              f"Spearman {fmt_ci(c['spearman'], c['spearman_ci'])}, VC judge {fmt(c['vc_judge'])} / experts "
              f"{fmt(c['vc_experts'])} (n VC {c['n_vc']})" + (f"; {c['why_empty_text']}" if c.get("why_empty_text") else ""))
    official = result["pollux_official"]["splits"].get("all")
    if official:
        print(f"{'POLLUX repository eval':>22}: format_acc {fmt(official['format_acc'])}, score_acc "
              f"{fmt(official['score_acc'])}, mse {fmt(official['mse'])} (not the paper's metrics)")
    return 0


def _convert(args: argparse.Namespace) -> int:
    import judge

    records, report = judge.load_records_report(args.data, split=args.split)
    path = judge.write_jsonl(records, args.out)
    print(f"{report.summary()} -> {path}")
    return 0


def _experts(args: argparse.Namespace) -> int:
    import judge
    from eval.experts import expert_tables, summary_line, write_expert_tables

    records = judge.load_records(args.data, split=args.split)
    result = expert_tables(records)
    paths = write_expert_tables(result, args.out)
    print(summary_line(result))
    print("\n".join(str(path) for path in paths.values()))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from eval.bench import BenchConfig, bench
    from judge.plumbing.config_files import given_flags, resolve_config

    config = resolve_config(BenchConfig, args.config, given_flags(args, BenchConfig))
    log.info("bench config: %s", json.dumps(dataclasses.asdict(config), ensure_ascii=False))
    summary = bench(config)
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    return 0 if summary["request_failed"] == 0 and summary["n_answer_failed"] == 0 else 3


def _compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from eval.bench_compare import is_bench_run

    if any(map(is_bench_run, args.runs)):
        return _compare_bench(args)
    from eval.compare import compare, render_markdown
    from eval.item_table import dumps

    result = compare(args.runs, n_boot=args.n_boot, seed=args.seed, alpha=args.alpha)
    markdown = render_markdown(result)
    print(markdown)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(dumps(result) + "\n", encoding="utf-8")
        (out / "compare.md").write_text(markdown + "\n", encoding="utf-8")
        from eval.html_report import write_compare_page

        print(f"compare.html: {write_compare_page(result, out)}")
    return 0


def _compare_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from eval.bench_compare import compare_bench, render_bench_markdown
    from eval.bench_report import render_bench_compare_page

    if len(args.runs) != 2:
        raise ValueError(f"bench runs are compared two at a time (A, then B); got {len(args.runs)}")
    result = compare_bench(*args.runs, n_boot=args.n_boot, seed=args.seed, alpha=args.alpha,
                           allow_other_judge=args.allow_other_judge)
    markdown = render_bench_markdown(result)
    print(markdown)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        (out / "compare.md").write_text(markdown + "\n", encoding="utf-8")
        (out / "compare.html").write_text(render_bench_compare_page(result), encoding="utf-8")
        print(f"compare.html: {out / 'compare.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``judge-eval``; returns the exit code (0 ok, 2 usage or configuration error, 3 some requests failed)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # `mera` owns its own parser: everything after the word goes to it untouched (its --help included).
    if argv[:1] == ["mera"]:
        from eval.mera.cli import main as mera_main

        return mera_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    from judge.plumbing.config_files import ConfigError
    from judge.plumbing.run_folder import ResumeMismatch, RunFolderBusy

    try:
        configure_logging(args.log_level)
    except ValueError as err:
        parser.error(str(err))

    handlers = {"run": _run, "score": _score, "compare": _compare, "bench": _bench, "convert": _convert,
                "experts": _experts}
    try:
        return handlers[args.command](args)
    except (ConfigError, FileNotFoundError, ValueError, ResumeMismatch, RunFolderBusy) as err:
        print(f"judge-eval {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""judge-eval: run a judge over expert-labelled POLLUX records, score it, compare checkpoints; MERA tasks.

    judge-eval run --judge http://127.0.0.1:8000/v1 --data DATA.jsonl --out runs/judge-a
    judge-eval run --judge CHECKPOINT_DIR --out runs/judge-b --config configs/eval/local-cpu.yaml  (CPU; tiny: tiny-cpu)
    OPENAI_BASE_URL=https://api.openai.com/v1 judge-eval run --config configs/eval/gpt-4o.yaml --data DATA.jsonl --out runs/gpt-4o
    judge-eval score --predictions runs/judge-a --data DATA.jsonl --out runs/judge-a
    judge-eval compare runs/judge-a runs/judge-b [runs/gpt-4o ...] --out runs/compare
    judge-eval rank --model http://127.0.0.1:8001/v1 --judge http://127.0.0.1:8000/v1 --data INSTRUCTIONS --out runs/rank/m
    judge-eval compare runs/rank/model-a runs/rank/model-b --out runs/rank/a-vs-b   (rank runs: 2 paired, 3+ ranked)
    judge-eval convert --data data/POLLUX --out pollux_test.jsonl   (released Parquet shards -> JSONL, lossless)
    judge-eval merge --data DATA.jsonl --out runs/judge-a runs/judge-a/shards/0 runs/judge-a/shards/1   (eval.sbatch)
    judge-eval experts --data ai-forever/POLLUX --out runs/experts   (the paper's expert-only tables, no judge)
    judge-eval mera ruhumaneval --endpoint URL --model NAME --out runs/rhe      (see eval/mera/cli.py)

Exit codes: 0 done; 2 a usage, configuration or input error (named on stderr); 3 run/rank: some requests failed;
4 run/rank: the server cannot be used; 130 interrupted; 141 stdout's reader gone (`judge-eval ... | head -1`)
(`judge-eval SUBCOMMAND --help` lists each one's).

Example override: ``judge-eval run --config configs/eval/gpt-4o.yaml --concurrency 4 --limit 100 ...`` (flags
override the YAML, which overrides the defaults). Without ``--data`` the bundled sample data is judged.
``--judge`` may be a checkpoint folder or hub id (judge-serve is started for it if installed, else vLLM), a
judge-serve or vLLM URL, or any OpenAI-compatible API. ``judge-eval SUBCOMMAND --help`` lists every option.

Why one module of ~510 lines: judge-eval's one parser, every subcommand's flags, and one ``main`` that answers each
subcommand's failures with the exit codes its ``--help`` lists; each handler is a few lines calling the package that
does the work, and split, a subcommand's flags and the codes it exits with would be read in two places.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from pathlib import Path

__all__ = ["main", "build_parser", "resolve_run_config", "configure_logging", "CHATTY_LOGGERS", "EXIT_CODES",
           "EXIT_INTERRUPTED"]

from eval.exit_codes import EXIT_CODES, EXIT_INTERRUPTED  # the subcommands' exit codes, as each --help lists them
from eval.input_checks import os_error_text, refuse_empty_data, refuse_missing_predictions, refuse_out_of_bounds
from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.json_reading import counted
from judge.sample_data import SAMPLE_DATA, data_source  # `--data sample` and an empty --data, as judge-train reads them
from judge.plumbing.console_logging import CHATTY_LOGGERS, configure_logging, split_log_level  # every script's set-up
from judge.plumbing.openmp import idle_threads_sleep  # first thing in main, before torch loads
from judge.plumbing.closed_stdout import exits_quietly_on_closed_stdout, stdout_closed  # main's closed stdout

log = logging.getLogger("judge_eval")

#: run's and rank's --help epilog: the key rule (judge.plumbing.api_keys) and the exit codes.
CLIENT_EPILOG = """\
API keys: the first set of the variables --api-key-env names: by default $JUDGE_SERVE_API_KEY (the key judge-serve
is started with), else $OPENAI_API_KEY, else no key; one variable named alone must be set; --api-key-env '' sends no
key. rank's candidate and judge follow the same rule.

First contact: GET /v1/models is retried (connection errors, 5xx, Retry-After honoured) for --connect-timeout-s
seconds; the server's caps (max_model_len; judge-serve's judge_max_tokens, max_proxy_tokens) fit --max-tokens, with a
printed note.

"""


def build_parser() -> argparse.ArgumentParser:
    """The ``judge-eval`` parser with its subcommands (``mera`` is dispatched before parsing)."""
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(prog="judge-eval", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--log-level", default="info",
                        help="Logging level: debug, info (default) or warning; HTTP request lines are shown at debug only.")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{run,score,compare,rank,convert,merge,experts,mera}")

    run_p = sub.add_parser("run", help="Judge records; writes predictions.jsonl (resumable) and run.json.",
                           description="Judge every record of --data and append one prediction per item to "
                                       "OUT/predictions.jsonl; rerunning resumes.", epilog=CLIENT_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    run_p.add_argument("--config", default=None, help="YAML with RunConfig keys (configs/eval/*.yaml).")
    from eval.judging.config import RunConfig
    from eval.scoring.interval_options import add_extreme_rate_flag
    from judge.plumbing.config_files import add_config_flags

    add_config_flags(run_p, RunConfig)

    score_p = sub.add_parser("score", help="POLLUX metrics of a run: metrics.json, report.md, report.html, items.parquet.",
                             description="Compare a run's predictions with the experts (POLLUX Appendix D.2).")
    score_p.add_argument("--predictions", required=True, help="predictions.jsonl, or the run folder holding it.")
    score_p.add_argument("--data", default=None, help="The labelled records (default: the data named in run.json).")
    score_p.add_argument("--out", default=None, help="Output folder (default: the predictions' folder).")
    score_p.add_argument("--target", choices=("auto", "mode", "mean"), default="auto",
                         help="Reference score: mode of the experts, or mean (regression judges); auto picks by the "
                              "predictions' score_source (default: %(default)s).")
    score_p.add_argument("--n-boot", type=int, default=1000, help="Bootstrap resamples per interval: 0 (none), "
                         ">= 10, at most 100,000 (default: %(default)s).")
    score_p.add_argument("--seed", type=int, default=0,
                         help="Seed of the VC draws and bootstraps, >= 0 (default: %(default)s).")
    score_p.add_argument("--vc-repeats", type=int, default=100, help="Random expert replacements for the judge's VC: "
                         "1 to 10,000 (default: %(default)s).")
    score_p.add_argument("--name", default="", help="The judge's label in the report (default: from predictions).")
    score_p.add_argument("--png", action="store_true",
                         help="Also draw the PNG plots (plots/*.png; report.html has them as SVG). On with "
                              "--wandb-project, which uploads them.")
    score_p.add_argument("--spearman-target", choices=("auto", "mode", "mean"), default="auto",
                         help="Reference of Spearman (and Pearson, Kendall), chosen apart from MAE's --target: auto "
                              "= the same as MAE's (the paper names no aggregate for its correlations; default: "
                              "%(default)s).")
    score_p.add_argument("--bootstrap-unit", choices=("item", "instruction"), default="item",
                         help="What the intervals resample: items (default), or whole instructions, every answer and "
                              "criterion of an instruction together (wider: they err together). The paper gives no "
                              "intervals.")
    score_p.add_argument("--clip-regression", action="store_true",
                         help="Score regression (-r) judges on the head's value clipped into the scale (as "
                              "judge-serve's score) instead of its raw value (the default: the paper's and POLLUX's "
                              "evaluator's). Named in metrics.json and the report.")
    score_p.add_argument("--judge-minus-one", choices=("score", "fail"), default="score",
                         help="A judge's -1 on a scale without it (the release's code for an expert's abstention; the "
                              "paper is silent): scored as out of scale (default), or counted as a failed verdict.")
    add_extreme_rate_flag(score_p, "A pairwise run's rates")
    score_p.add_argument("--no-plots", dest="png", action="store_false", help="No PNG plots (the default).")
    score_p.add_argument("--wandb-project", default="", help="Also log tables and plots to this W&B project.")
    score_p.add_argument("--allow-repeated-ids", action="store_true",
                         help="Score each id's first row when the predictions repeat an id (default: refuse the file).")
    score_p.add_argument("--html-text-items", type=int, default=None,
                         help="Items whose full texts report.html embeds, largest disagreements first (default: "
                              "5000; -1: all).")
    # The validity section's alternative annotator test (eval/validity/alt_test.py; defaults are its authors').
    score_p.add_argument("--alt-test-epsilon", type=float, default=0.2,
                         help="Alt-test cost-benefit margin ε, in [0, 1) (the authors: 0.2 expert, 0.15 skilled, 0.1 "
                              "crowd; default: %(default)s).")
    score_p.add_argument("--alt-test-q", type=float, default=0.05,
                         help="Alt-test false discovery rate of the Benjamini-Yekutieli correction, in (0, 1) "
                              "(default: %(default)s).")
    score_p.add_argument("--alt-test-failures", choices=("loss", "drop"), default="loss",
                         help="An item the judge failed to score: a loss for the judge (default) or left out (the "
                              "reference implementation's rule).")
    score_p.add_argument("--alt-test-scoring", choices=("neg_rmse", "accuracy"), default="neg_rmse",
                         help="Alignment with the other experts: minus the RMSE (numeric rubrics) or accuracy "
                              "(default: %(default)s).")
    score_p.add_argument("--alt-test-min-items", type=int, default=30,
                         help="An expert is tested only with at least this many items (>= 1; others: untested; "
                              "default: %(default)s).")
    score_p.add_argument("--alt-test-min-experts", type=int, default=2,
                         help="An item takes part only with at least this many named experts (>= 2; default: %(default)s).")
    score_p.add_argument("--alt-test-min-tested", type=int, default=2,
                         help="A pass/fail verdict only with at least this many tested experts (>= 1; 1: the "
                              "reference notebook's rule, which this toolkit's 2 departs from; default: %(default)s).")
    score_p.add_argument("--ceiling-failures", choices=("worst", "drop"), default="worst",  # eval/validity/ceiling.py
                         help="A failed verdict in the experts' ceiling: its largest error on the scale, or left out "
                              "(default: %(default)s).")

    cmp_p = sub.add_parser("compare", help="Scored runs side by side with paired-bootstrap significance.",
                           description="Compare scored runs (folders written by `score`) with the first one, two "
                                       "ranking runs (folders written by `rank`), or three or more (a leaderboard).")
    cmp_p.add_argument("runs", nargs="+", metavar="RUN", help="Scored (or rank) run folders; the first is the baseline.")
    cmp_p.add_argument("--out", default=None, help="Also write compare.json, compare.md and compare.html here.")
    cmp_p.add_argument("--n-boot", type=int, default=1000, help="Paired bootstrap resamples: 0 (no intervals, "
                       "p-values or calls but the failed verdicts' McNemar call, which draws none) or >= 10, at most "
                       "100,000; a better/worse call of scored runs needs more than 2/alpha (41 at the default "
                       "--alpha), in a table of m cells more than 2m/alpha (Holm; 1,001 for 25 criteria); of two "
                       "rank runs, >= 2/alpha (40); a board of K draws >= 2m/alpha (1,120 for 8) (default: "
                       "%(default)s).")
    cmp_p.add_argument("--seed", type=int, default=0, help="Bootstrap seed, >= 0 (default: %(default)s).")
    cmp_p.add_argument("--alpha", type=float, default=0.05, help="Significance level of better/worse calls, in (0, 1); paired "
                       "intervals at 1 - alpha (a leaderboard pair's at 1 - alpha/m, m = K(K-1)/2); a rank call also "
                       "needs a sign-flip p below alpha (for two rank runs Holm-adjusted over the tested cells; a board's pairs "
                       "alpha/m): at 0.05, >= 6 instructions for one test, more for m tests (2/2^n below "
                       "alpha/m: Holm's first step over two rank runs' m tested cells; 7 for a board of 3, 11 of 8) "
                       "(default: %(default)s).")
    cmp_p.add_argument("--bootstrap-unit", choices=("item", "instruction"), default=None,
                       help="What a paired resample draws: items or whole instructions (as score's); default: "
                            "instructions where any run was scored by them. Rank runs: always instructions.")
    add_extreme_rate_flag(cmp_p, "A leaderboard's win rates (three or more rank runs)")
    cmp_p.add_argument("--allow-other-judge", action="store_true",
                       help="Rank runs: compare them even when their judge settings (run.json) differ; refused "
                            "for scored runs, which are compared whatever judged them.")

    rank_p = sub.add_parser("rank", aliases=["bench"],
                            help="Rank a candidate LLM with a judge: answers, verdicts, POLLUX's matrix.",
                            description="POLLUX's answer.py -> score.py -> metrics.py: the candidate (--model) "
                                        "answers every instruction of --data, the judge scores each answer on each "
                                        "of its criteria, and OUT/matrix.csv is POLLUX's metrics.csv, with "
                                        "bootstrap intervals and failure counts in OUT/report.html; rerunning "
                                        "resumes (see eval/ranking/rank.py).", epilog=CLIENT_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    rank_p.add_argument("--config", default=None, help="YAML with RankConfig keys.")
    from eval.ranking.rank import RankConfig

    add_config_flags(rank_p, RankConfig)

    conv_p = sub.add_parser("convert", help="Any supported data source -> one JSONL file (for eval.sbatch shards).",
                            description="Read records with judge.load_records (a JSONL/JSON/Parquet file, a folder of "
                                        "the hub's Parquet shards, a save_to_disk folder or a dataset name) and write "
                                        "them as JSONL in the project schema; abstentions, released columns and "
                                        "unknown columns survive the round trip.")
    conv_p.add_argument("--data", required=True, help="The source.")
    conv_p.add_argument("--out", required=True, help="The JSONL file to write.")
    conv_p.add_argument("--split", default=None, help="Split of a multi-split source (default: the only one, or test).")

    merge_p = sub.add_parser("merge", help="The shards of an eval array -> one run folder (slurm/eval_merge.sbatch).",
                             description="Read every shard's predictions.jsonl (each row checked, named by its "
                                         "shard and line), write them into OUT/predictions.jsonl and their common "
                                         "run.json beside it (the whole data in its config), which `judge-eval "
                                         "score` reads the judge's settings from. Shards judged with different "
                                         "settings are refused, naming the first key that differs; so are a bad "
                                         "row, a torn last line (rerun that array task), an id in two shards, "
                                         "a merge where no shard had an item to judge, an eval array's shard left "
                                         "off (unless --allow-missing-shards), shards of two arrays, and a shard "
                                         "still running or unfinished.")
    merge_p.add_argument("shards", nargs="+", help="The shard folders (each holding predictions.jsonl, run.json).")
    merge_p.add_argument("--data", required=True, help="The whole labelled JSONL the shards were cut from.")
    merge_p.add_argument("--out", required=True, help="The folder for the merged predictions.jsonl and run.json.")
    merge_p.add_argument("--allow-missing-shards", action="store_true",
                         help="Merge an eval array's shards though some were not given (default: refuse, naming "
                              "them); run.json's shard_array records the missing ones, and score's report says so.")

    exp_p = sub.add_parser("experts", help="The experts' own tables from the labels alone (no judge).",
                           description="Mean expert scores (Tables 10, 1, 9), experts' Verdict Confidence (14-16).")
    exp_p.add_argument("--data", required=True, help="The labelled records (any source judge.load_records reads, "
                                                     "e.g. ai-forever/POLLUX or a folder of its Parquet shards).")
    exp_p.add_argument("--out", required=True, help="Folder for experts_tables.csv, experts.md and experts.html.")
    exp_p.add_argument("--split", default=None, help="Split of a multi-split source (default: the only one, or test).")
    exp_p.add_argument("--critical-in-means", choices=("include", "exclude"), default="include",
                       help="The two Critical criteria (0 best) in the mean scores' pooled figures (Tables 10, 1, 9): "
                            "the paper does not say; POLLUX's src/metrics.py leaves 0/1 criteria out (default: "
                            "%(default)s).")
    exp_p.add_argument("--mean-over", choices=("items", "annotations"), default="items", help="A mean-score cell: "
                       "each item's score once, or weighed by its non-abstaining experts; the paper does not say "
                       "(default: %(default)s).")

    sub.add_parser("mera", help="MERA tasks (ruHumanEval, ruTiE): `judge-eval mera --help`.", add_help=False)
    for name, codes in EXIT_CODES.items():  # each subcommand's --help ends with the exit codes it uses
        sub.choices[name].epilog = ((sub.choices[name].epilog or "") + "exit codes: "
                                    + "; ".join(f"{code} {meaning}" for code, meaning in codes.items()))
    return parser


def resolve_run_config(args: argparse.Namespace):
    """``RunConfig`` from defaults, then ``--config`` YAML, then the flags actually given."""
    from eval.judging.config import RunConfig
    from judge.plumbing.config_files import given_flags, resolve_config

    return resolve_config(RunConfig, args.config, given_flags(args, RunConfig))


def _run(args: argparse.Namespace) -> int:
    from eval.judging.config import RunConfig
    from judge.plumbing.config_files import chosen_fields
    from judge.plumbing.run_folder import refuse_file

    if "data" in vars(args):  # given as a flag: an empty one is a mistake, never the default (the sample)
        data_source(args.data)
    config = resolve_run_config(args)
    if config.data == SAMPLE_DATA:  # the bundled sample, as judge-train's `data: sample` (and as no --data)
        config = dataclasses.replace(config, data="")
    refuse_empty_data(config.data)
    refuse_file(config.out, "--out")
    args.out = config.out  # from the flags or the YAML: the Ctrl+C line (main) says whether it holds rows
    # run() validates the config, refuses a judge it could not reach, then logs the config: once, for every caller.
    # Imported here, so the refusals above come before the judging client (httpx, openai, the wire models) loads.
    from eval.judging.run import run
    summary = run(config, max_tokens_chosen="max_tokens" in chosen_fields(args, RunConfig))
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    return 0 if summary["request_failed"] == 0 else 3


def _score(args: argparse.Namespace) -> int:
    from eval.pairwise.files import is_pairwise_run
    from eval.scoring.interval_options import extreme_rate_choice

    refuse_missing_predictions(args.predictions)  # a missing input named first, then any flag out of its bounds
    predictions = Path(args.predictions)
    refuse_out_of_bounds(args, default_out=predictions if predictions.is_dir() else predictions.parent)
    if args.html_text_items is not None and args.html_text_items < -1:  # -3 embedded every item, as -1 does
        raise ValueError(f"--html-text-items: must be -1 (all) or 0 or more, got {args.html_text_items}")
    args.data = data_source(args.data)
    extreme = extreme_rate_choice(args, is_pairwise_run(args.predictions), "only a pairwise run has rates")
    if is_pairwise_run(args.predictions):  # a pairwise run (eval.pairwise.judging): its own metrics and report
        from eval.input_checks import refuse_pointwise_flags
        from eval.pairwise.metrics import pairwise_markdown, score_pairwise
        refuse_pointwise_flags(args, build_parser().parse_args(["score", "--predictions", args.predictions]))
        print(pairwise_markdown(score_pairwise(args.predictions, args.data, args.out, n_boot=args.n_boot,
                                               seed=args.seed, name=args.name, extreme_rate_interval=extreme)))
        return 0
    from eval.reports.report import SPLIT_TITLES, constant_judge_score, fmt, fmt_ci, run_notes, why_no_spearman
    from eval.reports.notes import console_text
    from eval.scoring.pollux_official import official_not_computed
    from eval.scoring.score import score
    from eval.validity.alt_test import AltTestSettings

    alt_test = AltTestSettings(epsilon=args.alt_test_epsilon, q=args.alt_test_q, failures=args.alt_test_failures,
                               scoring=args.alt_test_scoring, min_items_per_expert=args.alt_test_min_items,
                               min_experts_per_item=args.alt_test_min_experts,
                               min_experts_tested=args.alt_test_min_tested)
    result = score(args.predictions, args.data, args.out, target=args.target, n_boot=args.n_boot, seed=args.seed,
                   vc_repeats=args.vc_repeats, png=args.png, clip_regression=args.clip_regression,
                   spearman_target=args.spearman_target, bootstrap_unit=args.bootstrap_unit,
                   wandb_project=args.wandb_project, name=args.name,
                   html_text_items=args.html_text_items, allow_repeated_ids=args.allow_repeated_ids,
                   alt_test=alt_test, ceiling_failures=args.ceiling_failures, judge_minus_one=args.judge_minus_one)
    for split, block in result.splits.items():
        c = block.overall
        why_dash = why_no_spearman(c, constant_judge_score(block, result.target))
        print(f"{SPLIT_TITLES[split]:>22}: n {c.n}, n_failed {c.n_failed}, no unique mode "
              f"{c.n_no_unique_mode}, out of scale {c.n_out_of_scale}, MAE {fmt_ci(c.mae, c.mae_ci)}, "
              f"Spearman {fmt_ci(c.spearman, c.spearman_ci)}, VC judge {fmt(c.vc_judge)} / experts "
              f"{fmt(c.vc_experts)} (n VC {c.n_vc})" + (f"; {c.why_empty_text}" if c.why_empty_text else "")
              + (f"; Spearman —: {why_dash}" if why_dash else ""))
    for note in run_notes(result):  # report.md's sentences: an unfinished run must not read as a complete one
        print(console_text(note))
    official = result.pollux_official.splits.get("all") if result.pollux_official else None
    if official or (why := official_not_computed(result)):  # a section left out (integer, -r judges) says why
        print(f"{'POLLUX repository eval':>22}: " + (f"format_acc {fmt(official.format_acc)}, score_acc "
              f"{fmt(official.score_acc)}, mse {fmt(official.mse)} (not the paper's metrics)" if official
              else why.replace("`", "")))
    return 0


def _convert(args: argparse.Namespace) -> int:
    import judge
    from eval.input_checks import refuse_convert_out
    from judge.plumbing.run_folder import refuse_file, refuse_unwritable

    args.data = data_source(args.data)
    refuse_convert_out(args.out, args.data)
    refuse_file(Path(args.out).parent, "--out")  # FILE/x.jsonl: mkdir of FILE stopped in FileExistsError
    refuse_unwritable(Path(args.out).parent, what=f"folder of --out {args.out}")
    records, report = judge.load_records_report(args.data, split=args.split)
    if not records:
        raise ValueError(f"--data {args.data}: no records ({report.summary()}); nothing to convert")
    path = judge.write_jsonl(records, args.out)
    print(f"{report.summary()} -> {path}")
    return 0


def _experts(args: argparse.Namespace) -> int:
    import judge
    from eval.experts.tables import expert_tables, summary_line, write_expert_tables
    from judge.plumbing.run_folder import refuse_unwritable

    refuse_unwritable(args.out, "--out", "output folder")
    records, report = judge.load_record_columns(data_source(args.data), split=args.split)  # columns: no object per record
    if not len(records):
        raise ValueError(f"--data {args.data}: no records; the experts' tables need labelled rows")
    result = expert_tables(records, critical_in_means=args.critical_in_means, mean_over=args.mean_over,
                           load_report=report)
    counts = result["counts"]
    if counts["n_no_experts"] == counts["n_records"]:  # every table would be empty: said as the input error it is
        raise ValueError(f"--data {args.data}: no item with an expert score ({counted(counts['n_records'], 'record')}"
                         f", {counted(counts['n_abstentions'], 'expert abstention')}); the experts' tables need "
                         "labelled rows")
    paths = write_expert_tables(result, args.out)
    print(summary_line(result), *paths.values(), sep="\n")
    return 0


def _merge(args: argparse.Namespace) -> int:
    from eval.judging.shards import merge_command

    print(merge_command(args.shards, args.data, args.out, allow_missing_shards=args.allow_missing_shards))
    return 0


def _rank(args: argparse.Namespace) -> int:
    from eval.ranking.rank import RankConfig, rank
    from judge.plumbing.config_files import given_flags, resolve_config
    from judge.plumbing.run_folder import refuse_file

    config = resolve_config(RankConfig, args.config, given_flags(args, RankConfig))
    config.validate()  # a setting out of its bounds first, as run's; rank() validates again, at no cost
    refuse_empty_data(config.data)  # as run's: a missing, empty or unreadable file named before --out is made
    refuse_file(config.out, "--out")
    args.out = config.out  # as _run's
    log.info("rank config: %s", json.dumps(dataclasses.asdict(config), ensure_ascii=False))
    summary = rank(config)
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    return 0 if summary["request_failed"] == 0 and summary["n_answer_failed"] == 0 else 3


def _compare(args: argparse.Namespace) -> int:
    from eval.scoring.interval_options import extreme_rate_choice

    missing = [run for run in args.runs if not Path(run).exists()]
    if missing:
        raise ValueError(f"{', '.join(missing)}: not found; compare takes run folders written by `judge-eval score` "
                         "(or by `judge-eval rank`)")
    files = [run for run in args.runs if not Path(run).is_dir()]
    if files:  # a run's metrics.json, say: the folder holding it is what compare reads
        raise ValueError(f"{', '.join(files)}: a file, not a folder; compare takes run folders written by "
                         "`judge-eval score` (or by `judge-eval rank`), not the files in them")
    for i, run in enumerate(args.runs):  # a run against itself: every difference 0, read as a finding
        if same := next((earlier for earlier in args.runs[:i] if os.path.samefile(run, earlier)), None):
            raise ValueError(f"{run}: given twice" + ("" if run == same else f" (the folder {same})") + "; compare "
                             "takes different runs")
    refuse_out_of_bounds(args)  # as score: a missing input named first, then any flag out of its bounds
    from eval.ranking.compare import is_ranking_run  # numpy and the wire models: not for the refusals above
    extreme_rate_choice(args, len(args.runs) > 2 and any(map(is_ranking_run, args.runs)),
                        "only a leaderboard (three or more rank runs) has rates with an interval, its win rates")
    if any(map(is_ranking_run, args.runs)):
        return _compare_rankings(args)
    if args.allow_other_judge:  # scored runs are compared whatever judged them: the flag would change nothing
        raise ValueError("--allow-other-judge: only rank runs have their judge settings checked (run.json); leave the "
                         "flag out")
    from eval.reports.notes import console_text, runs_notes
    from eval.scoring.compare import compare, console_name, decision, headline, named_as, render_markdown
    from eval.scoring.item_table import dumps

    result = compare(args.runs, n_boot=args.n_boot, seed=args.seed, alpha=args.alpha,
                     bootstrap_unit=args.bootstrap_unit)
    markdown = render_markdown(result)
    if not args.out:
        print(markdown)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # compare.json is what a later step reads: replaced whole (a kill mid-write leaves the earlier one).
    write_atomically(out / "compare.json", (dumps(result) + "\n").encode("utf-8"))
    write_atomically(out / "compare.md", (markdown + "\n").encode("utf-8"))
    from eval.reports.html_report import write_compare_page

    page = write_compare_page(result, out)
    # The whole table (hundreds of lines) is in the files; the console gets the headline and where they are, each
    # run's name escaped and cut: a judge's --name or folder may hold an ESC sequence, or be any length.
    result = named_as(result, console_name)
    print("\n".join([f"Judge comparison (baseline: {result.baseline})",
                     *(f"- {decision(result, k)}" for k in range(len(result.comparisons))),
                     *(f"- {line}" for line in headline(result)),
                     *(f"- {name}: {console_text(note)}" for name, note in runs_notes(result)),
                     f"tables: {out / 'compare.md'}, {out / 'compare.json'}", f"compare.html: {page}"]))
    return 0


def _compare_rankings(args: argparse.Namespace) -> int:
    from eval.ranking.compare import compare_rankings, render_ranking_compare_markdown
    from eval.ranking.report import console_calls_line, render_ranking_compare_page, write_ranking_compare

    if args.bootstrap_unit == "item":  # the matrix's binary gate lives inside an instruction: it cannot be split
        raise ValueError("bootstrap_unit: rank runs are compared by instruction (their matrices' gate holds within an "
                         "instruction); leave --bootstrap-unit out or give instruction")
    if len(args.runs) != 2:  # three or more: one leaderboard (one run alone is refused there)
        from eval.ranking.leaderboard import leaderboard_command
        return leaderboard_command(args)
    result = compare_rankings(*args.runs, n_boot=args.n_boot, seed=args.seed, alpha=args.alpha,
                           allow_other_judge=args.allow_other_judge)
    markdown = render_ranking_compare_markdown(result)
    if not args.out:
        print(markdown)
        return 0
    written = write_ranking_compare(args.out, result, markdown, render_ranking_compare_page(result))
    # The matrix of deltas is in the files; the console gets its title and summary lines (what was left out too).
    print("\n".join([*markdown.split("\n\n|", 1)[0].splitlines(), console_calls_line(result), *written]))
    return 0


@exits_quietly_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    """``judge-eval``; returns the exit code (0 ok, 2 usage or configuration error, 3 some requests failed, 4 the
    server cannot be used: ``CLIENT_EPILOG``; 130 interrupted; 141 stdout's reader gone)."""
    idle_threads_sleep()  # before anything loads torch (judge.plumbing.openmp); the judge-serve it starts inherits it
    # --log-level before or after the subcommand (judge.plumbing.console_logging.split_log_level)
    level, argv = split_log_level(sys.argv[1:] if argv is None else argv, default="")
    # `mera` owns its own parser: everything after the word goes to it untouched (its --help included).
    if argv[:1] == ["mera"]:
        from eval.mera.cli import main as mera_main

        return mera_main(argv[1:] + (["--log-level", level] if level else []))
    parser = build_parser()
    args = parser.parse_args(argv)
    args.log_level = level or "info"
    if args.command == "bench":  # the subcommand's old name, kept for scripts written before `rank`
        print("judge-eval: note: `bench` is now `judge-eval rank`; the old name still works", file=sys.stderr)
        args.command = "rank"
    from judge.plumbing.config_files import ConfigError
    from judge.plumbing.endpoint_unusable import EXIT_UNUSABLE, EndpointUnusable
    from judge.plumbing.run_folder import ResumeMismatch, RunFolderBusy

    try:
        configure_logging(args.log_level)
    except ValueError as err:
        parser.error(str(err))

    handlers = {"run": _run, "score": _score, "compare": _compare, "rank": _rank, "convert": _convert,
                "merge": _merge, "experts": _experts}
    try:
        return handlers[args.command](args)
    except (EndpointUnusable, ConfigError, ValueError, ResumeMismatch, RunFolderBusy) as err:
        # One line for the user; its traceback kept at --log-level debug, since a ValueError may be a bug's too
        log.debug("judge-eval %s: the traceback of the error below", args.command, exc_info=True)
        print(f"judge-eval {args.command}: error: {err}", file=sys.stderr)
        return EXIT_UNUSABLE if isinstance(err, EndpointUnusable) else 2
    except OSError as err:  # a missing input; or, a backstop, the output checked up front failing (a full disk)
        if (args.command in ("run", "rank") and not isinstance(err, FileNotFoundError) and not err.filename) or (
                isinstance(err, BrokenPipeError) and stdout_closed()):  # stdout's reader gone: main answers it
            raise  # a connection's or the server's OSError names no file: no input error (exit 2)
        log.debug("judge-eval %s: the traceback of the error below", args.command, exc_info=True)
        print(f"judge-eval {args.command}: error: {os_error_text(err, getattr(args, 'out', None))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl+C (asyncio.run cancels its tasks first): the rows are journaled, no traceback
        # Rows are kept where a journal (*.jsonl) holds some: a stop before the first leaves the folder as it was found
        # (hold_run_folder), and --overwrite has emptied an earlier run's before its first.
        kept = args.command in ("run", "rank") and getattr(args, "out", None) and any(
            p.is_file() and p.stat().st_size for p in Path(args.out).glob("*.jsonl"))
        print(f"judge-eval {args.command}: interrupted" + ("; the rows written are kept, a rerun resumes" if kept
                                                          else ""), file=sys.stderr)  # fmt: skip
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())

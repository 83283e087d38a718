"""Time `judge-eval score` at the size of the full POLLUX test: ~160,000 items, ~470,000 expert estimates.

    .venv/bin/python bench/eval_metrics.py
    .venv/bin/python bench/eval_metrics.py --items 40000 --regression --end-to-end   # example override

A synthetic table (seeded) with the POLLUX shape: 2-5 experts per item (mean ~2.94), scales 0-1 / 0-2 / 0-3 / 0-4
(each item's task type and criterion a pair the taxonomy has, its criterion one the taxonomy scores on that scale,
each record's rubric that scale), 11 evaluated models, the taxonomy's 35 task types and 60 criterion names
(Zero-Shot by the real rule: about 26 % of the items), 3 % parse failures, experts named from a pool of
``EXPERT_POOL`` (``expert_ids``, for the validity section's alternative annotator test). The timed step is
`eval.scoring.item_table.evaluate`, with BLAS on one thread as `judge-eval score` runs it: every metric cell of the
report (3 splits x overall / model / task type / criterion), the 100-fold Verdict Confidence, 1,000-resample
bootstrap intervals for MAE and Spearman, Kendall, confusion matrices. ``--end-to-end`` also writes the table as
JSONL data + predictions and times the whole `judge-eval score` command (loading and validating 160k records,
metrics.json, Markdown, report.html; no PNGs, which are opt-in)
``--rounds`` times, each round a fresh Python process (imports counted, as a user's command pays them), printing
the median wall and CPU time with their min-max and each stage's share (the functions `score` calls, timed by
wrapping them: load records, read predictions, build table, POLLUX's own evaluator, metrics, items.parquet, plots,
report page). CPU is the command's own plus its children's (none since eval.scoring.score runs in one process; older
checkouts ran parts of it in child processes).
``--baseline DIR`` times another checkout (e.g. ``git archive main | tar -x -C /tmp/base``) in the same run,
rounds interleaved (A B, B A, ...), prints both sides and the ratio of their walls, and says whether the first
round's items.parquet, metrics.json, report.md and report.html are the same bytes on both sides. Each round is a
child process whose ``sys.path`` starts with its side's checkout and which imports nothing before it is there: the
venv's editable install maps ``judge`` and ``eval`` to the clone it was made from, so a module imported any earlier
would come from that clone on both sides. The child checks that every ``judge``, ``eval``, ``serve`` and ``train``
module it loaded is a file of its checkout, and refuses the round otherwise. "This checkout" is the one this script
lies in: to time a commit rather than a working tree with others' edits, run the script from an archive of it.

    .venv/bin/python bench/eval_metrics.py --end-to-end --rounds 3    # this checkout alone
    .venv/bin/python bench/eval_metrics.py --end-to-end --rounds 3 --skip-metrics --baseline DIR   # performance.md
    .venv/bin/python bench/eval_metrics.py --items 40000 --end-to-end --rationale-chars 800 --skip-metrics  # long outputs
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


# The bench's panels are drawn from this many named experts (the released POLLUX data names none; a pool this size
# gives each expert ~20,000 items of the full test, and each task type x expert and criterion x expert domain of
# the alt-test tens to hundreds).
EXPERT_POOL = 24


def synthetic_table(n_items: int, seed: int = 0, regression: bool = False):
    """A seeded ItemTable shaped like the POLLUX test.

    Args:
        n_items: number of judged items.
        seed: generator seed.
        regression: real-valued judge scores (a regression head) instead of integer verdicts.

    Returns:
        ``eval.scoring.item_table.ItemTable``.
    """
    from types import SimpleNamespace

    import judge

    from eval.scoring.item_table import ItemTable

    rng = np.random.default_rng(seed)
    taxonomy = judge.load_taxonomy()
    task_types = np.array(taxonomy.task_types, dtype=object)  # the 35 real task types (8 of them Zero-Shot)
    criteria = np.array(sorted({c.name["ru"] for c in taxonomy.criteria.values()}), dtype=object)  # 60 names
    # Experts per item: mean 2*.45 + 3*.30 + 4*.12 + 5*.13 = 2.93, i.e. ~470k estimates for 160k items.
    k = rng.choice([2, 3, 4, 5], size=n_items, p=[0.45, 0.30, 0.12, 0.13])
    top = rng.choice([1, 2, 3, 4], size=n_items, p=[0.08, 0.85, 0.03, 0.04])
    quality = rng.random(n_items) * top
    noise = rng.normal(0.0, 0.6, size=(n_items, 5))
    experts = np.clip(np.rint(quality[:, None] + noise), 0, top[:, None])
    experts[np.arange(5)[None, :] >= k[:, None]] = np.nan
    raw = quality + rng.normal(0.0, 0.7, size=n_items)
    judge_scores = np.clip(raw if regression else np.rint(raw), 0, top)
    status = np.where(rng.random(n_items) < 0.03, "parse_failed", "ok").astype(object)
    judge_scores[status != "ok"] = np.nan
    # Drawn and left unused, so that the columns drawn after them (the models) stay as they were; each item's task type
    # and criterion come as one pair of the taxonomy's instead (``_taxonomy_pairs``).
    rng.integers(0, len(task_types), n_items), rng.integers(0, len(criteria), n_items)
    task_idx, crit_idx = _taxonomy_pairs(top, task_types, criteria, taxonomy, seed)
    # The split comes from the real rule (judge.split_of), once per (task type, criterion) pair.
    spec = judge.load_split_spec()
    split_of_pair = np.array([[judge.split_of(SimpleNamespace(id="", task_type=t, task_subtype="", criteria_name=c),
                                              spec) for c in criteria] for t in task_types], dtype=object)
    groups = np.array([next(x.group for x in taxonomy.tasks if x.task_type == t) for t in task_types], dtype=object)
    # Each panel: consecutive members of the pool from a random start (distinct within the item); a generator of its
    # own, so that naming the experts left every other column of the table as it was.
    pool = np.array([f"expert-{i:02d}" for i in range(EXPERT_POOL)], dtype=object)
    start = np.random.default_rng(seed + 1).integers(0, EXPERT_POOL, n_items)
    expert_ids = np.where(np.isnan(experts), None, pool[(start[:, None] + np.arange(5)[None, :]) % EXPERT_POOL])
    return ItemTable(
        ids=np.array([f"item-{i}" for i in range(n_items)], dtype=object),
        judge=judge_scores,
        status=status,
        error=np.where(status == "ok", "", "no_result").astype(object),
        score_source=np.full(n_items, "regression_head" if regression else "verdict", dtype=object),
        experts=experts,
        split=split_of_pair[task_idx, crit_idx],
        model_id=np.array([f"model-{i}" for i in range(11)], dtype=object)[rng.integers(0, 11, n_items)],
        task_type=task_types[task_idx],
        task_group=groups[task_idx],
        criteria_name=criteria[crit_idx],
        judge_name="synthetic",
        expert_ids=expert_ids,
        instruction_key=np.arange(n_items) % 5000,  # the instructions write_files gives the items
        # what `judge-eval score` reads from each record's rubric (write_files writes the rubric of 0..top) and name
        scale_low=np.zeros(n_items),
        scale_high=top.astype(float),
        best_low=np.array([taxonomy.is_best_at_lowest(name) for name in criteria])[crit_idx],
    )


def _taxonomy_pairs(top: np.ndarray, task_types: np.ndarray, criteria: np.ndarray, taxonomy,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each item's (task type, criterion name) as indices into ``task_types`` and ``criteria``: a pair the taxonomy has
    (a leaf of the task type lists a criterion of that name) whose criterion is scored on 0..``top`` of the item,
    drawn uniformly among such pairs by a generator of its own, so that every other column stays as drawn. An item's
    task type, criterion and scale come together, as in the POLLUX test: a task type scored on a criterion its
    leaves never list, or a criterion on a scale it does not have, is no item a real run holds."""
    type_of = {name: i for i, name in enumerate(task_types)}
    name_of = {name: i for i, name in enumerate(criteria)}
    pairs: dict[int, set[tuple[int, int]]] = {}
    for task in taxonomy.tasks:
        for cid in task.criteria:
            criterion = taxonomy.criteria[cid]
            pair = (type_of[task.task_type], name_of[criterion.name["ru"]])
            pairs.setdefault(criterion.scale.levels[-1], set()).add(pair)
    redraw = np.random.default_rng(seed + 2)
    task_idx, crit_idx = np.zeros(len(top), dtype=np.int64), np.zeros(len(top), dtype=np.int64)
    for t in np.unique(top):
        on_scale = np.array(sorted(pairs[int(t)]), dtype=np.int64)  # sorted: the draw follows no set order
        rows = np.flatnonzero(top == t)
        chosen = on_scale[redraw.integers(0, len(on_scale), len(rows))]
        task_idx[rows], crit_idx[rows] = chosen[:, 0], chosen[:, 1]
    return task_idx, crit_idx


# A rationale of the length a POLLUX judge writes (several hundred characters of Russian), for --rationale-chars.
_RATIONALE_WORDS = "Ответ по существу верен, но рассуждение местами неполно и не опирается на условие задачи. "


#: The levels' words of the bench's rubrics: an item on 0..top has the first top + 1 of them.
_RUBRIC_LINES = ("0: плохо", "1: средне", "2: хорошо", "3: очень хорошо", "4: отлично")
#: A Critical criterion's (a yes/no question about a violation, best at 0; its name says so, not its words).
_FLAG_RUBRIC = "0: нарушения нет\n\n1: есть нарушение"


def rubric_of(top: int, best_low: bool = False) -> str:
    """The rubric text of the scale 0..``top`` (1 to 4), one level a line as the taxonomy writes them; ``best_low``:
    a Critical criterion's 0/1."""
    return _FLAG_RUBRIC if best_low and top == 1 else "\n\n".join(_RUBRIC_LINES[:top + 1])


def write_files(table, folder: Path, rationale_chars: int = 0) -> tuple[Path, Path]:
    """The table as POLLUX-format JSONL records and a predictions JSONL (what `run` writes, each row's
    ``content_key`` included, which `score` checks against the data); each record's rubric is its item's scale
    (``rubric_of``), read back as ``synthetic_table`` carries it; each raw output's
    rationale is one short sentence, or ``rationale_chars`` characters of one repeated. bench/experts_tables.py
    times `judge-eval experts` on the same records."""
    rationale = "Обоснование." if not rationale_chars else (
        _RATIONALE_WORDS * (rationale_chars // len(_RATIONALE_WORDS) + 1))[:rationale_chars]
    from judge.plumbing.run_folder import content_key

    data, preds = folder / "data.jsonl", folder / "predictions.jsonl"
    with data.open("w", encoding="utf-8") as d, preds.open("w", encoding="utf-8") as p:
        for i in range(len(table)):
            rubric = rubric_of(int(table.scale_high[i]), bool(table.best_low[i]))
            scores = [float(v) for v in table.experts[i] if not np.isnan(v)]
            row = {
                "id": table.ids[i], "instruction": f"задание {i % 5000}", "answer": f"ответ {i}",
                "criteria_name": table.criteria_name[i], "rubrics": rubric, "model_id": table.model_id[i],
                "task_type": table.task_type[i], "expert_scores": scores,
            }
            if table.expert_ids is not None:
                row["expert_ids"] = list(table.expert_ids[i, :len(scores)])
            d.write(json.dumps(row, ensure_ascii=False) + "\n")
            ok = table.status[i] == "ok"
            regression = table.score_source[i] == "regression_head"
            # A raw output POLLUX's own evaluator can read (eval.scoring.pollux_official), the head's value for
            # regression.
            raw = f"[FEEDBACK] {rationale} [RESULT] {table.judge[i]:g} [END]" if ok and not regression else "мусор"
            p.write(json.dumps({
                "id": table.ids[i], "judge": "synthetic", "raw_output": raw, "feedback": "",
                "score": float(table.judge[i]) if ok else None, "parse_ok": bool(ok),
                "error": None if ok else "no_result", "reason": "", "score_source": table.score_source[i],
                "in_scale": True if ok else None,
                "regression_score": float(table.judge[i]) if ok and regression else None, "latency_s": 0.0,
                # as `run` writes it (eval.judging.predictions.record_content_key): score checks it against the data
                "content_key": content_key(row["instruction"], "", row["answer"], row["criteria_name"], rubric),
            }, ensure_ascii=False) + "\n")
    return data, preds


def _this_checkout_first() -> None:
    """Put this checkout and bench/ first on sys.path."""
    # Time this checkout's code: run as a script, `judge` and `eval` would otherwise resolve to wherever the venv's
    # editable install points (its finder comes after sys.path's entries).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))


def build_parser():
    """The command line's parser (argparse's checks only; `parse_args` adds the ones between flags)."""
    _this_checkout_first()
    from measure import positive_int

    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=160_000, help="judged items (default: the full POLLUX test)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per interval")
    parser.add_argument("--vc-repeats", type=int, default=100, help="Verdict Confidence replacements")
    parser.add_argument("--regression", action="store_true", help="real-valued judge scores (compared to the mean)")
    parser.add_argument("--end-to-end", action="store_true", help="also time `judge-eval score` on JSONL files")
    parser.add_argument("--rounds", type=positive_int, default=None,
                        help="with --end-to-end: runs per checkout (default 3; median and min-max reported)")
    parser.add_argument("--baseline", default="", help="with --end-to-end: another checkout to time in the same run")
    parser.add_argument("--rationale-chars", type=int, default=0,
                        help="with --end-to-end: each raw output's rationale this long (default: one short sentence; "
                             "a POLLUX judge writes several hundred characters)")
    parser.add_argument("--bootstrap-unit", choices=("item", "instruction", "both"), default="item",
                        help="what the metrics step's intervals resample (score's --bootstrap-unit); both: each, "
                             "with the ratio")
    parser.add_argument("--skip-metrics", action="store_true",
                        help="with --end-to-end: skip the separate timing of the metrics step")
    return parser


def parse_args(argv: list[str] | None = None, parser=None):
    """The command line, with the end-to-end-only flags refused without --end-to-end.

    The check between flags lives here rather than in `main` so that whatever parses a documented command (the
    docs' command check) refuses what a reader's run would. Whether ``--baseline`` names a checkout is `main`'s to
    check: a doc's placeholder folder must still parse. ``parser``: ``build_parser()``'s, where the caller refuses
    with it too (None: built here).
    """
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    end_to_end_only = {"--baseline": args.baseline, "--rounds": args.rounds is not None,
                       "--skip-metrics": args.skip_metrics, "--rationale-chars": args.rationale_chars}  # fmt: skip
    given = [flag for flag, value in end_to_end_only.items() if value]
    if given and not args.end_to_end:
        parser.error(f"{', '.join(given)}: only with --end-to-end (they time `judge-eval score` end to end)")
    return args


def main(argv: list[str] | None = None) -> int:
    """Generate the table, time the metrics (and optionally the whole `score` command), print the figures."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--score-once"]:  # one end-to-end round, in the child end_to_end starts: before any import of
        return _score_once(*argv[1:])  # the project's packages, which would come from the editable install's clone
    parser = build_parser()
    args = parse_args(argv, parser)
    from measure import not_a_checkout

    if args.baseline and (why := not_a_checkout(args.baseline, ("judge", "eval"))):
        parser.error(why)
    args.rounds = 3 if args.rounds is None else args.rounds

    from eval.scoring import item_table, metrics
    from eval.scoring.score import one_blas_thread

    table = synthetic_table(args.items, regression=args.regression)
    n_estimates = int((~np.isnan(table.experts)).sum())
    print(f"items: {len(table):,}  expert estimates: {n_estimates:,}  judge: "
          f"{'regression (vs mean)' if args.regression else 'verdicts (vs mode)'}  cores: {os.cpu_count()}  "
          f"load average before: {os.getloadavg()[0]:.1f}")
    if not (args.skip_metrics and args.end_to_end):
        # BLAS on one thread, by score's own limit: BLAS's default threads would add the helper thread's spinning
        # between the bootstraps' small products, CPU that score never spends.
        with one_blas_thread():
            # Wall time and this process's CPU time: on a shared machine the wall time grows with the load, the CPU
            # time much less (the metrics run on one core).
            start, cpu = time.perf_counter(), time.process_time()
            vc = metrics.verdict_confidence_judge(table.experts, table.judge, repeats=args.vc_repeats, seed=0)
            print(f"verdict confidence ({args.vc_repeats}-fold, all items): {time.perf_counter() - start:.2f} s wall, "
                  f"{time.process_time() - cpu:.2f} s CPU  (mean {np.nanmean(vc):.4f})")

            units = ("item", "instruction") if args.bootstrap_unit == "both" else (args.bootstrap_unit,)
            cpu_of = {}
            for unit in units:
                start, cpu = time.perf_counter(), time.process_time()
                result = item_table.evaluate(table, n_boot=args.n_boot, vc_repeats=args.vc_repeats, bootstrap_unit=unit)
                eval_s, cpu_of[unit] = time.perf_counter() - start, time.process_time() - cpu
                cells = sum(1 + sum(len(block.by(g)) for g in item_table.GROUPINGS) for block in result.splits.values())
                overall = result.splits["all"].overall
                print(f"score metrics incl. VC ({cells} cells, {args.n_boot} bootstrap resamples each, by {unit}): "
                      f"{eval_s:.2f} s wall, {cpu_of[unit]:.2f} s CPU")
                print(f"  all: MAE {overall.mae:.4f} [{overall.mae_ci[0]:.4f}, {overall.mae_ci[1]:.4f}]  "
                      f"Spearman {overall.spearman:.4f}  VC judge {overall.vc_judge:.4f} / experts "
                      f"{overall.vc_experts:.4f}  n_failed {overall.n_failed}")
            if len(units) == 2:
                print(f"  by instruction / by item, CPU: x{cpu_of['instruction'] / cpu_of['item']:.2f}")

    if args.end_to_end:
        end_to_end(table, args.n_boot, args.rounds, args.baseline, args.rationale_chars)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


# The stages of `judge-eval score`, as (module, function) pairs `score` looks up at call time; a name that has
# moved (eval's modules are being split) is skipped and its time lands in "other".
STAGES = [
    ("judge", "load_records", "load + validate records"),
    ("judge", "load_record_columns", "load + validate records"),
    ("eval.judging.predictions", "read_prediction_table", "read predictions"),
    ("eval.judging.predictions", "read_predictions", "read predictions"),
    ("eval.scoring.item_table", "build_table", "build item table"),
    ("eval.scoring.pollux_official", "pollux_official", "POLLUX's own evaluator"),
    ("eval.scoring.item_table", "derive", "metrics"),
    ("eval.scoring.item_table", "evaluate", "metrics"),
    ("eval.scoring.score", "validity_section", "validity section"),
    ("eval.scoring.item_table", "write_table", "items.parquet"),
    ("eval.scoring.item_table", "write_arrow", "items.parquet"),
    ("eval.scoring.score", "report_items", "report.html"),
    ("eval.scoring.score", "item_columns", "report.html"),
    ("eval.scoring.score", "render_report_page", "report.html"),
    ("eval.scoring.score", "write_plots", "plots"),
    # The older checkouts' stages (the baseline of --baseline), where they ran in child processes.
    ("eval.judging.predictions", "PredictionsProcess.rows", "read predictions"),
    ("eval.forked", "ForkedCall.__init__", "forked calls (POLLUX's evaluator)"),
    ("eval.forked", "ForkedCall.result", "forked calls (POLLUX's evaluator)"),
    ("eval.reports.html_report", "ReportPageProcess.__init__", "report.html"),
    ("eval.reports.html_report", "ReportPageProcess.finish", "report.html"),
]


def _timed_stages(stages: dict[str, list[float]]):
    """Wrap each stage's function to add its (wall, CPU) seconds to ``stages``; returns an undo function."""
    import importlib

    undo = []
    for module_name, attr, label in STAGES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner, *path, attr = [module, *attr.split(".")]  # "Class.method": the method, wrapped on its class
        for part in path:
            owner = getattr(owner, part, None)
        original = getattr(owner, attr, None) if owner is not None else None
        if original is None:  # not in this checkout (the baseline's older code)
            continue

        def wrapper(*a, _original=original, _label=label, **k):
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return _original(*a, **k)
            finally:
                totals = stages.setdefault(_label, [0.0, 0.0])
                totals[0] += time.perf_counter() - start
                totals[1] += time.process_time() - cpu

        setattr(owner, attr, wrapper)
        undo.append((owner, attr, original))
    return lambda: [setattr(m, a, o) for m, a, o in undo]


#: The project's top-level packages: a round may load them from its own checkout only.
PACKAGES = ("judge", "eval", "serve", "train")


def _foreign_modules(checkout: Path) -> list[str]:
    """The loaded modules of ``PACKAGES`` whose files (a namespace package: its folders) are not under ``checkout``."""
    foreign = []
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in PACKAGES or module is None:
            continue
        places = [module.__file__] if getattr(module, "__file__", None) else list(getattr(module, "__path__", []))
        if not places or not all(Path(place).resolve().is_relative_to(checkout) for place in places):
            foreign.append(f"{name} ({', '.join(map(str, places)) or 'no file'})")
    return sorted(foreign)


def _score_once(checkout: str, predictions: str, data: str, out: str, n_boot: str) -> int:
    """One `judge-eval score` of ``checkout``'s code with its stages timed; prints one JSON line.

    Runs in a child of its own (``end_to_end``), which has imported none of ``PACKAGES`` yet: ``checkout`` goes first
    on ``sys.path`` and this script's folder (the other checkout's ``bench/``) leaves it. Refuses (exit 3) when
    ``judge`` or ``eval``, or any module of ``PACKAGES`` loaded during the run, is not a file of ``checkout``.
    """
    from measure import children_cpu_s  # this bench/'s, the script's folder, before it leaves sys.path

    root = Path(checkout).resolve()
    loaded = [name for name in sys.modules if name.split(".")[0] in PACKAGES]
    if loaded:
        print(f"--score-once: {', '.join(sorted(loaded))} imported before {root} was on sys.path", file=sys.stderr)
        return 3
    bench = Path(__file__).resolve().parent
    sys.path[:] = [str(root)] + [p for p in sys.path if Path(p or ".").resolve() not in (root, bench)]
    import eval as eval_package
    import judge

    from eval.cli import main as cli_main

    for package in (judge, eval_package):
        if not Path(package.__file__).resolve().is_relative_to(root):
            print(f"--score-once: {package.__name__} is {package.__file__}, not under {root}", file=sys.stderr)
            return 3

    stages: dict[str, list[float]] = {}
    undo = _timed_stages(stages)
    start, cpu = time.perf_counter(), time.process_time()
    children = children_cpu_s()
    try:
        code = cli_main(["score", "--predictions", predictions, "--data", data, "--out", out, "--n-boot", n_boot])
    finally:
        undo()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    child_cpu = children_cpu_s() - children
    if child_cpu > 0:
        stages["child processes"] = [float("nan"), child_cpu]
    foreign = _foreign_modules(root)
    if foreign:
        print(f"--score-once: modules from outside {root}: {'; '.join(foreign)}", file=sys.stderr)
        return 3
    print(json.dumps({"code": code, "wall": wall, "cpu": cpu, "child_cpu": child_cpu, "stages": stages,
                      "judge": judge.__file__, "eval": eval_package.__file__}))
    return 0


def end_to_end(table, n_boot: int, rounds: int, baseline: str = "", rationale_chars: int = 0) -> None:
    """Time `judge-eval score` on the table written as JSONL, ``rounds`` times per checkout, with its stages."""
    import subprocess

    from measure import fmt, interleaved, machine_line, spread

    here = str(Path(__file__).resolve().parent.parent)
    sides = {"this checkout": here} if not baseline else {"baseline": str(Path(baseline).resolve()),
                                                          "this checkout": here}
    order = ([(name,) for name in sides] * rounds if len(sides) == 1
             else interleaved(tuple(sides), rounds))  # type: ignore[arg-type]
    print(machine_line())
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    # A user's command loads the bytecode its first run wrote. This machine kind sets PYTHONDONTWRITEBYTECODE (the
    # Makefile unsets it) and the set-up installs with --no-compile: with it set, every round would compile what
    # nothing wrote yet again (importing scipy.stats takes several times the CPU that way; measured:
    # docs/performance.md, row "a module loaded from its bytecode against compiled from source"), a cost no user pays.
    child_env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, preds = write_files(table, folder, rationale_chars)
        for r, names in enumerate(order):
            for name in names:
                start = time.perf_counter()
                # The child runs this file as a script (its sys.path[0] is this bench/ folder, not its working
                # folder); _score_once puts the side's checkout first. PYTHONPATH names it too, for any process
                # the command itself starts.
                done = subprocess.run([sys.executable, __file__, "--score-once", sides[name], str(preds), str(data),
                                       str(folder / f"score-{r}-{name.split()[0]}"), str(n_boot)],
                                      capture_output=True, text=True, env={**child_env, "PYTHONPATH": sides[name]},
                                      cwd=sides[name])
                if done.returncode != 0:
                    sys.exit(f"round {r + 1} {name} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
                run = json.loads(done.stdout.strip().splitlines()[-1])
                if run["code"] != 0:  # figures of a refused command would time its refusal, not the scoring
                    sys.exit(f"round {r + 1} {name}: judge-eval score exited {run['code']}:\n{done.stderr[-4000:]}")
                run["process_wall"] = time.perf_counter() - start
                runs[name].append(run)
                parts = ", ".join(f"{label} {w:.2f}/{c:.2f}" for label, (w, c) in run["stages"].items())
                print(f"  round {r + 1} {name}: {run['process_wall']:.2f} s wall (process), {run['wall']:.2f} s "
                      f"(score), {run['cpu']:.2f} + {run['child_cpu']:.2f} s CPU (command + children), exit "
                      f"{run['code']}, load {os.getloadavg()[0]:.1f}; stages wall/CPU s: {parts}", flush=True)
        if baseline:  # the same outputs, byte for byte, from both checkouts (PNGs aside: this checkout draws none)
            for file in ("items.parquet", "metrics.json", "report.md", "report.html"):
                one, two = (folder / f"score-0-{name.split()[0]}" / file for name in sides)
                same = one.read_bytes() == two.read_bytes()
                print(f"  {file}: {'the same bytes' if same else 'DIFFERS'} in both checkouts ({two.stat().st_size:,} "
                      f"bytes)")
    for name, side in runs.items():
        print(f"judge-eval score end to end, {len(table):,} items, {name} ({sides[name]}; judge and eval "
              f"imported from {Path(side[0]['judge']).parent.parent}):")
        print(f"  wall, whole process: {fmt(spread([r['process_wall'] for r in side]), digits=2)} s")
        print(f"  wall, score call:    {fmt(spread([r['wall'] for r in side]), digits=2)} s")
        print(f"  CPU, command:        {fmt(spread([r['cpu'] for r in side]), digits=2)} s")
        print(f"  CPU, with children:  {fmt(spread([r['cpu'] + r['child_cpu'] for r in side]), digits=2)} s")
        for label in side[0]["stages"]:
            walls = [r["stages"].get(label, [0, 0])[0] for r in side]
            cpus = spread([r["stages"].get(label, [0, 0])[1] for r in side])
            wall_text = "" if any(w != w for w in walls) else f"wall {spread(walls)['median']:.2f} s, "
            print(f"    {label}: {wall_text}CPU {cpus['median']:.2f} s ({cpus['min']:.2f}-{cpus['max']:.2f})")
    if baseline:
        ratios = [b["process_wall"] / a["process_wall"] for a, b in zip(runs["baseline"], runs["this checkout"])]
        cpu_ratios = [(b["cpu"] + b["child_cpu"]) / (a["cpu"] + a["child_cpu"])
                      for a, b in zip(runs["baseline"], runs["this checkout"])]
        print(f"this checkout / baseline, per round: wall {fmt(spread(ratios))}; CPU {fmt(spread(cpu_ratios))}")


if __name__ == "__main__":
    sys.exit(main())

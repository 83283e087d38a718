"""Time `judge-eval score` at the size of the full POLLUX test: ~160,000 items, ~470,000 expert estimates.

    .venv/bin/python bench/eval_metrics.py
    .venv/bin/python bench/eval_metrics.py --items 40000 --regression --end-to-end   # example override

A synthetic table (seeded) with the POLLUX shape: 2-5 experts per item (mean ~2.94), scales 0-1 / 0-2 / 0-3 / 0-4,
11 evaluated models, 35 task types, ~180 criteria, a quarter of the items in the Zero-Shot test, 3 % parse
failures. The timed step is `eval.scoring.evaluate`: every metric cell of the report (3 splits x overall / model /
task type / criterion), the 100-fold Verdict Confidence, 1,000-resample bootstrap intervals for MAE and Spearman,
Kendall, confusion matrices. ``--end-to-end`` also writes the table as JSONL data + predictions and times the whole
`judge-eval score` command (loading and validating 160k records, metrics.json, Markdown, PNGs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def synthetic_table(n_items: int, seed: int = 0, regression: bool = False):
    """A seeded ItemTable shaped like the POLLUX test.

    Args:
        n_items: number of judged items.
        seed: generator seed.
        regression: real-valued judge scores (a regression head) instead of integer verdicts.

    Returns:
        ``eval.scoring.ItemTable``.
    """
    from eval.scoring import ItemTable

    rng = np.random.default_rng(seed)
    # Experts per item: mean 2*.45 + 3*.30 + 4*.12 + 5*.13 = 2.93, i.e. ~470k estimates for 160k items.
    k = rng.choice([2, 3, 4, 5], size=n_items, p=[0.45, 0.30, 0.12, 0.13])
    top = rng.choice([1, 2, 3, 4], size=n_items, p=[0.08, 0.85, 0.03, 0.04])
    quality = rng.random(n_items) * top
    noise = rng.normal(0.0, 0.6, size=(n_items, 5))
    experts = np.clip(np.rint(quality[:, None] + noise), 0, top[:, None])
    experts[np.arange(5)[None, :] >= k[:, None]] = np.nan
    raw = quality + rng.normal(0.0, 0.7, size=n_items)
    judge = np.clip(raw if regression else np.rint(raw), 0, top)
    status = np.where(rng.random(n_items) < 0.03, "parse_failed", "ok").astype(object)
    judge[status != "ok"] = np.nan
    criteria = np.array([f"criterion {i}" for i in range(180)], dtype=object)
    task_types = np.array([f"task type {i}" for i in range(35)], dtype=object)
    task_type_idx = rng.integers(0, 35, n_items)
    return ItemTable(
        ids=np.array([f"item-{i}" for i in range(n_items)], dtype=object),
        judge=judge,
        status=status,
        error=np.where(status == "ok", "", "no_result").astype(object),
        score_source=np.full(n_items, "regression" if regression else "verdict", dtype=object),
        experts=experts,
        split=np.where(task_type_idx < 9, "zero_shot", "standard").astype(object),
        model_id=np.array([f"model-{i}" for i in range(11)], dtype=object)[rng.integers(0, 11, n_items)],
        task_type=task_types[task_type_idx],
        task_group=np.array([f"group {i}" for i in range(8)], dtype=object)[task_type_idx % 8],
        criteria_name=criteria[rng.integers(0, 180, n_items)],
        judge_name="synthetic",
    )


def _write_files(table, folder: Path) -> tuple[Path, Path]:
    """The table as POLLUX-format JSONL records and a predictions JSONL (what `run` writes)."""
    data, preds = folder / "data.jsonl", folder / "predictions.jsonl"
    rubric = "0: плохо\n\n1: средне\n\n2: хорошо\n\n3: очень хорошо\n\n4: отлично"
    with data.open("w", encoding="utf-8") as d, preds.open("w", encoding="utf-8") as p:
        for i in range(len(table)):
            scores = [float(v) for v in table.experts[i] if not np.isnan(v)]
            d.write(json.dumps({
                "id": table.ids[i], "instruction": f"задание {i % 5000}", "answer": f"ответ {i}",
                "criteria_name": table.criteria_name[i], "rubrics": rubric, "model_id": table.model_id[i],
                "task_type": table.task_type[i], "expert_scores": scores,
            }, ensure_ascii=False) + "\n")
            ok = table.status[i] == "ok"
            p.write(json.dumps({
                "id": table.ids[i], "judge": "synthetic", "raw_output": "", "feedback": "",
                "score": float(table.judge[i]) if ok else None, "parse_ok": bool(ok),
                "error": None if ok else "no_result", "reason": "", "score_source": table.score_source[i],
                "latency_s": 0.0,
            }) + "\n")
    return data, preds


def main(argv: list[str] | None = None) -> int:
    """Generate the table, time the metrics (and optionally the whole `score` command), print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=160_000, help="judged items (default: the full POLLUX test)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per interval")
    parser.add_argument("--vc-repeats", type=int, default=100, help="Verdict Confidence replacements")
    parser.add_argument("--regression", action="store_true", help="real-valued judge scores (compared to the mean)")
    parser.add_argument("--end-to-end", action="store_true", help="also time `judge-eval score` on JSONL files")
    args = parser.parse_args(argv)

    from eval import metrics, scoring

    table = synthetic_table(args.items, regression=args.regression)
    n_estimates = int((~np.isnan(table.experts)).sum())
    print(f"items: {len(table):,}  expert estimates: {n_estimates:,}  judge: "
          f"{'regression (vs mean)' if args.regression else 'verdicts (vs mode)'}  cores: {os.cpu_count()}")

    start = time.perf_counter()
    vc = metrics.verdict_confidence_judge(table.experts, table.judge, repeats=args.vc_repeats, seed=0)
    vc_s = time.perf_counter() - start
    print(f"verdict confidence ({args.vc_repeats}-fold, all items): {vc_s:.2f} s  (mean {np.nanmean(vc):.4f})")

    start = time.perf_counter()
    result = scoring.evaluate(table, n_boot=args.n_boot, vc_repeats=args.vc_repeats)
    eval_s = time.perf_counter() - start
    cells = sum(1 + sum(len(result["splits"][s][f"by_{g}"]) for g in scoring.GROUPINGS) for s in scoring.SPLITS)
    overall = result["splits"]["all"]["overall"]
    print(f"score metrics ({cells} cells, {args.n_boot} bootstrap resamples each): {eval_s:.2f} s")
    print(f"  all: MAE {overall['mae']:.4f} {overall['mae_ci']}  Spearman {overall['spearman']:.4f}  "
          f"VC judge {overall['vc_judge']:.4f} / experts {overall['vc_experts']:.4f}  n_failed {overall['n_failed']}")

    if args.end_to_end:
        from eval.cli import main as cli_main

        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            data, preds = _write_files(table, folder)
            start = time.perf_counter()
            code = cli_main(["score", "--predictions", str(preds), "--data", str(data), "--out", str(folder / "score"),
                             "--n-boot", str(args.n_boot)])
            total_s = time.perf_counter() - start
        print(f"judge-eval score end to end (load + metrics + report + plots): {total_s:.2f} s  (exit {code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

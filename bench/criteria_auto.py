"""Measure `criteria: auto` task classifiers on the bundled held-out instructions (never used for training).

    .venv/bin/python bench/criteria_auto.py                                   # the tfidf classifier that ships
    .venv/bin/python bench/criteria_auto.py --train bundled --exclude-zero-shot   # transfer to unseen task types
    .venv/bin/python bench/criteria_auto.py --methods tfidf,llm --llm-url http://127.0.0.1:8000/v1 --llm-model judge
    .venv/bin/python bench/criteria_auto.py --train runs/instructions/instructions.jsonl --save runs/task-clf
    .venv/bin/python bench/criteria_auto.py --methods head --head runs/classifier/final
    .venv/bin/python bench/criteria_auto.py --threshold-readings        # the tfidf threshold by either reading (~1 min)

Per method and per split (all / Standard / Zero-Shot task types): leaf-task and task-type top-1 / top-3 accuracy,
the share of choices made at the leaf, at the task type, falling back and failing (an answer off the taxonomy, a bad
log-probability, a failed request: a miss in the accuracies, counted apart from the fallbacks, and how many after
the table), precision / recall / Jaccard of the chosen criteria set against the gold leaf's set (macro-averaged
over the instructions whose choice did not fail; once as chosen and once with the top-1 leaf's set), and latency
per instruction (ms, median and mean, one instruction at a time). The set scores are given by both readings of
``judge.criteria_auto.CRITERIA_MATCHES``: **exact** criterion ids (the criteria a judge is asked, each variant with
its own rubric: a Python instruction routed to the C++ leaf scores 0) and **base** ids (a sibling leaf's variant
counts: the same instruction scores 1).
Then the calibration of the stated task-type probability: a reliability table (per probability bin: n, stated,
accuracy) and the expected calibration error. The tfidf method is the shipped classifier unless ``--train`` is given
(files, or ``bundled`` for the bundled rows, read as ``judge-train criteria-classifier`` reads them:
``train.criteria_classifier.training_rows``); ``--exclude-zero-shot`` keeps the Zero-Shot task types out of training,
so that its Zero-Shot figures measure transfer to unseen task types. A ``--heldout`` that overlaps the training
rows, exactly or nearly, is refused, naming the first overlapping pair: ``--train``'s, or the shipped classifier's
(the bundled rows) when tfidf is measured without it. Prints Markdown tables and, with ``--json``, writes the
figures. ``--threshold-readings`` prints instead the threshold the tfidf training would choose on its out-of-fold
predictions by either reading (``train.criteria_tfidf.threshold_readings``). ``--train`` and the flags that shape
or keep its fit are refused where nothing would read them: without ``--train``, without tfidf in ``--methods``, or
with ``--threshold-readings``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from judge.criteria_auto.expansion import UNSURE_BELOW
from judge.splits import STANDARD, ZERO_SHOT
from judge.criteria_auto import (
    CRITERIA_MATCHES,
    DEFAULT_THRESHOLD,
    LABEL_SEPARATOR,
    TaskChoice,
    TfidfClassifier,
    build_classifier,
    criteria_set_scores,
    heldout_path,
    leaf_of,
    load_labelled,
    reliability,
)


def _type(label: str) -> str:
    return label.split(LABEL_SEPARATOR)[0] if label else ""


#: The flags that shape or keep the tfidf fit ``--train`` makes (``--train`` itself first), in the order a refusal
#: names the first given: without ``--train``, or without tfidf in ``--methods``, or beside ``--threshold-readings``,
#: each would go unread (``_unread_training_flags``).
TRAINING_FLAGS = ("--train", "--save", "--no-taxonomy-text", "--exclude-zero-shot", "--allow-benchmark-rows")

#: The set scores of a choice that names no leaf but did not fail: nothing chosen to score.
_MISSED = {"precision": 0.0, "recall": 0.0, "jaccard": 0.0}


def _choose(classifier, instruction: str, top_k: int):
    """The classifier's choice, or a failed one (``TaskChoice.failed``) naming the error: one row's failed request
    (an unreachable endpoint, a bad response) is that row's failure, counted, not the end of the bench."""
    try:
        return classifier.choose(instruction, top_k=top_k)
    except Exception as err:  # noqa: BLE001 - any method's failure on one row is that row's counted failure
        said = " ".join(str(err).split())[:200]  # one line: httpx's status errors carry a second one
        return TaskChoice.failed(f"{type(err).__name__}: {said}", getattr(classifier, "name", "?"))


def evaluate(classifier, rows: list[dict], top_k: int = 3) -> list[dict]:
    """One result row per held-out instruction: gold, choice, hits, criteria-set scores, latency (ms).

    A failed choice (``TaskChoice.is_failure``: an answer off the taxonomy, a bad logprob, a failed request) is a
    miss in the accuracies, ``failed`` and not ``fallback`` (it is no doubt of the classifier's), and has no
    criteria-set scores (None): ``summarise`` leaves it out of their means and states how many it left out."""
    out = []
    for row in rows:
        start = time.perf_counter()
        choice = _choose(classifier, row["instruction"], top_k)
        latency_ms = (time.perf_counter() - start) * 1000.0
        gold = leaf_of(row["label"])
        failed = choice.is_failure
        labels = [lab for lab, _ in choice.alternatives]
        top1_leaf = leaf_of(choice.label).criteria if choice.label else ()
        out.append({
            "id": row.get("id", ""), "gold": row["label"], "split": row["split"], "chosen": choice.label,
            "probability": choice.probability, "failed": failed, "fallback": choice.fallback and not failed,
            "level": "failed" if failed else choice.level, "reason": choice.reason if failed else "",
            "type_probability": choice.task_type_probability,
            "leaf_top1": choice.label == row["label"], "leaf_top3": row["label"] in labels[:3],
            "type_top1": _type(choice.label) == _type(row["label"]),
            "type_top3": _type(row["label"]) in {_type(lab) for lab in labels[:3]},
            **{f"set_{match}": None if failed else criteria_set_scores(choice.criteria, gold.criteria, match=match)
               for match in CRITERIA_MATCHES},
            **{f"set_no_fallback_{match}": None if failed else criteria_set_scores(top1_leaf, gold.criteria,
                                                                                   match=match) if top1_leaf
               else _MISSED for match in CRITERIA_MATCHES},
            "latency_ms": latency_ms,
        })  # fmt: skip
    return out


def summarise(results: list[dict]) -> dict:
    """Means over instructions (accuracies: a failed choice a miss), the share of failed choices (``failed``,
    ``n_failed``), set-score means over the instructions with a choice (``n_scored``: failed ones left out, None
    when none is left), latency median/mean; n per split."""
    if not results:
        return {"n": 0}
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    summary = {"n": len(results)}
    for key in ("leaf_top1", "leaf_top3", "type_top1", "type_top3", "fallback", "failed"):
        summary[key] = mean([float(r.get(key, False)) for r in results])
    summary["n_failed"] = sum(bool(r.get("failed")) for r in results)
    for level in ("leaf", "task_type"):
        summary[f"level_{level}"] = mean([float(r.get("level") == level) for r in results])
    scored = [r for r in results if not r.get("failed")]
    summary["n_scored"] = len(scored)
    for which in ("set", "set_no_fallback"):
        for match in CRITERIA_MATCHES:
            for metric in ("precision", "recall", "jaccard"):
                summary[f"{which}_{match}_{metric}"] = mean([r[f"{which}_{match}"][metric] for r in scored])
    lat = [r["latency_ms"] for r in results]
    summary["latency_ms_median"] = statistics.median(lat)
    summary["latency_ms_mean"] = mean(lat)
    return summary


def build(method: str, args, train_pairs: list[dict] | None):
    if method == "tfidf":
        if train_pairs is None:
            return TfidfClassifier.load(None, threshold=args.threshold)
        from train.criteria_tfidf import fit_tfidf, save_tfidf

        clf = fit_tfidf(train_pairs, threshold=args.threshold)
        if args.save:
            save_tfidf(clf, args.save)
            print(f"saved the tfidf artefact to {args.save}", file=sys.stderr)
        return clf
    if method == "llm":
        if not (args.llm_url and args.llm_model):
            raise SystemExit("--methods llm needs --llm-url and --llm-model")
        return build_classifier("llm", base_url=args.llm_url, model=args.llm_model,
                                threshold=DEFAULT_THRESHOLD if args.threshold is None else args.threshold)
    if method == "head":
        if not args.head:
            raise SystemExit("--methods head needs --head DIR (a `judge-train classifier` export)")
        return build_classifier("head", path=args.head,
                                threshold=DEFAULT_THRESHOLD if args.threshold is None else args.threshold)
    raise SystemExit(f"unknown method {method!r}")


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="tfidf", help="comma-separated: tfidf, llm, head")
    parser.add_argument("--heldout", default=str(heldout_path()), help="labelled JSONL to evaluate on")
    parser.add_argument("--train", action="append", default=None,
                        help="fit tfidf here on these files (instructions output / POLLUX records / labelled JSONL, "
                             "or 'bundled'); repeatable; default: the shipped classifier, no training")  # fmt: skip
    parser.add_argument("--no-taxonomy-text", action="store_true", help="with --train: no taxonomy-text rows")
    parser.add_argument("--exclude-zero-shot", action="store_true", help="with --train: leave Zero-Shot types out")
    parser.add_argument("--allow-benchmark-rows", action="store_true",
                        help="with --train: take a source in the released benchmark's schema (refused by default, "
                             "as judge-train criteria-classifier refuses it)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="fallback threshold (default: the classifier's own; 0.5 for llm/head)")
    parser.add_argument("--save", default=None, help="write the trained tfidf artefact to this folder")
    parser.add_argument("--llm-url", default=None, help="OpenAI base URL for the llm method")
    parser.add_argument("--llm-model", default=None, help="served model name for the llm method")
    parser.add_argument("--head", default=None, help="classifier export folder for the head method")
    parser.add_argument("--json", default=None, help="write the summaries (and per-row results) here")
    parser.add_argument("--threshold-readings", action="store_true",
                        help="print the threshold the tfidf training chooses on its out-of-fold predictions of the "
                             "bundled rows by exact and by base criterion ids, and nothing else (~1 min)")
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    training = [flag for flag in TRAINING_FLAGS if getattr(args, flag.removeprefix("--").replace("-", "_"))]
    refusal = _unread_training_flags(args, methods, training)
    if refusal:
        print(f"criteria_auto.py: error: {refusal}", file=sys.stderr)
        return 2
    if args.threshold_readings:
        return _print_threshold_readings()
    try:
        return _run(args, methods)
    except (ValueError, OSError) as err:  # bad input, a missing file: one line, never a traceback
        print(f"criteria_auto.py: error: {err}", file=sys.stderr)
        return 2


def _unread_training_flags(args, methods: list[str], training: list[str]) -> str | None:
    """Why a training flag given (``training``: ``--train`` and the flags that shape or keep its fit) would go
    unread, or None: the figures printed would stand for a fit it did not shape."""
    if args.threshold_readings and training:
        # the readings are of the rows the shipped classifier is built from, all of them, and nothing is saved
        return (f"{training[0]} does not apply to --threshold-readings, which reads the bundled rows the shipped "
                "classifier is built from: drop one of them")
    if training and not args.train:
        # without --train the shipped classifier's figures would stand for the flag
        return (f"{training[0]} applies to the tfidf classifier --train fits; without --train the shipped one is "
                "measured: add --train (bundled, or files) or drop it")
    if training and "tfidf" not in methods:
        return (f"{training[0]} applies to the tfidf method, which --methods {args.methods} leaves out: add tfidf "
                "to --methods or drop it")
    return None


def _refuse_overlap(args, heldout: list[dict], pairs: list[dict], whose: str, advice: str) -> None:
    """Refuse a ``--heldout`` that overlaps ``pairs`` (``whose`` rows), exactly or nearly, naming the first pair
    (``training_overlap``): measured on rows it was trained on, a classifier reads right on every one of them."""
    from judge.criteria_auto.labelled import training_overlap

    n, _, first = training_overlap(heldout, pairs)
    if n:
        raise ValueError(f"{n} held-out instructions of {args.heldout} are {whose} or near duplicates of them (the "
                         f"first: {first}); {advice}")


def _training_pairs(args, heldout: list[dict]) -> tuple[list[dict], dict]:
    """The rows ``--train`` names, as ``judge-train criteria-classifier`` reads them (``training_rows``: a source in
    the released benchmark's schema refused without ``--allow-benchmark-rows``, the bundled held-out set's
    instructions refused, exact copies dropped), less the taxonomy-text rows with ``--no-taxonomy-text``; then
    refused when ``--heldout`` (which need not be the bundled held-out set) overlaps them."""
    from train.criteria_classifier import training_rows

    files = [f for f in args.train if f != "bundled"]
    pairs, counts = training_rows(files, bundled="bundled" in args.train, include_zero_shot=not args.exclude_zero_shot,
                                  allow_benchmark_rows=args.allow_benchmark_rows)  # fmt: skip
    if args.no_taxonomy_text:
        pairs = [p for p in pairs if p.get("source") != "taxonomy"]
    # exact copies and near ones (a clause dropped, a word changed): either would inflate every figure below
    _refuse_overlap(args, heldout, pairs, "rows --train trains on", "remove them")
    return pairs, counts


def _refuse_shipped_training_rows(args, heldout: list[dict]) -> None:
    """Refuse a ``--heldout`` that overlaps the rows the shipped tfidf classifier was trained on
    (``train.criteria_rows.bundled_rows``: the bundled training set, the sample's instructions, the taxonomy texts;
    a test pins the shipped build to them), exactly or nearly, as ``_training_pairs`` refuses an overlap with
    ``--train``: measured on its own training rows, it reads right on every one of them."""
    from train.criteria_rows import bundled_rows

    _refuse_overlap(args, heldout, bundled_rows(include_zero_shot=True)[0],
                    "rows the shipped tfidf classifier was trained on (the bundled training set, sample and taxonomy "
                    "texts)", "measure it on other rows, or train one with --train")


def _run(args, methods: list[str]) -> int:
    heldout, _ = load_labelled([args.heldout], include_zero_shot=True)
    train_pairs, counts = _training_pairs(args, heldout) if args.train else (None, {})
    if train_pairs is None and "tfidf" in methods:
        _refuse_shipped_training_rows(args, heldout)

    report = {"heldout": args.heldout, "n_heldout": len(heldout), "train_counts": counts,
              "n_train": len(train_pairs) if train_pairs is not None else "shipped", "methods": {}}  # fmt: skip
    print(f"held-out: {len(heldout)} instructions ({sum(r['split'] == ZERO_SHOT for r in heldout)} Zero-Shot); "
          f"tfidf: {'shipped classifier' if train_pairs is None else f'{len(train_pairs)} training rows'}")
    header = ("| method | split | n | leaf top-1 | leaf top-3 | type top-1 | type top-3 | at leaf | at type | "
              "fallback | failed | P / R / J exact ids | P / R / J base ids | P / R / J top-1 leaf, exact | "
              "P / R / J top-1 leaf, base | ms median / mean |")  # fmt: skip
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    clfs = {}
    for method in methods:
        clf = clfs[method] = build(method, args, train_pairs)
        results = evaluate(clf, heldout)
        report["methods"][method] = {"results": results, "summary": {}}
        for split, rows in (("all", results), (STANDARD, [r for r in results if r["split"] == STANDARD]),
                            (ZERO_SHOT, [r for r in results if r["split"] == ZERO_SHOT])):  # fmt: skip
            s = summarise(rows)
            report["methods"][method]["summary"][split] = s
            if not s["n"]:
                print(f"| {method} | {split} | 0 | (no rows) |")
                continue
            sets = " | ".join(" / ".join(_figure(s[f"{which}_{match}_{metric}"], 2)
                                         for metric in ("precision", "recall", "jaccard"))
                              for which in ("set", "set_no_fallback") for match in CRITERIA_MATCHES)  # fmt: skip
            print(f"| {method} | {split} | {s['n']} | {s['leaf_top1']:.3f} | {s['leaf_top3']:.3f} | "
                  f"{s['type_top1']:.3f} | {s['type_top3']:.3f} | {s['level_leaf']:.3f} | "
                  f"{s['level_task_type']:.3f} | {s['fallback']:.3f} | {s['failed']:.3f} | {sets} | "
                  f"{s['latency_ms_median']:.1f} / {s['latency_ms_mean']:.1f} |")  # fmt: skip
    for method, entry in report["methods"].items():
        n_failed = entry["summary"]["all"].get("n_failed", 0)
        if n_failed:
            index, first = next((i, r) for i, r in enumerate(entry["results"]) if r["failed"])
            print(f"{method}: {n_failed} of {len(entry['results'])} choices failed (a miss in the accuracies, left out "
                  f"of the P / R / J means); the first, held-out row {index}: {first['reason']}")
    print("\ncalibration of the stated task-type probability (all held-out instructions)")
    for method, entry in report["methods"].items():
        rows = [r for r in entry["results"] if r["type_probability"] is not None]
        if not rows:
            print(f"{method}: no probabilities")
            continue
        cal = reliability([r["type_probability"] for r in rows], [r["type_top1"] for r in rows])
        entry["calibration"] = cal
        print(f"{method}: ECE {cal['ece']:.3f} over {cal['n']}; threshold {clfs[method].threshold:.3f}")
        print("| bin | n | stated | accuracy |\n|---|---|---|---|")
        for b in cal["bins"]:
            print(f"| {b['bin'][0]:.1f}-{b['bin'][1]:.1f} | {b['n']} | {b['stated']:.3f} | {b['accuracy']:.3f} |")
        # the choices judge-eval's warning counts (expansion.taken_unsure): taken, yet stated below one half
        unsure = [r for r in rows if r["level"] in ("leaf", "task_type") and r["type_probability"] < UNSURE_BELOW]
        print(f"{method}: {len(unsure)} taken below {UNSURE_BELOW} (above the threshold, judged on the chosen task's "
              f"criteria), the task type right for {sum(r['type_top1'] for r in unsure)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


def _figure(value: float | None, digits: int) -> str:
    """A mean, or "n/a" when nothing was left to average (every choice failed)."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def _print_threshold_readings() -> int:
    """``--threshold-readings``: the out-of-fold threshold choice of the shipped build's rows by each reading, and
    each reading's mean Jaccard over a sweep of thresholds."""
    from train.criteria_rows import bundled_rows
    from train.criteria_tfidf import THRESHOLD_MATCH, threshold_readings

    readings = threshold_readings(bundled_rows()[0])
    print(f"tfidf threshold chosen on the out-of-fold predictions of the bundled rows (the training uses "
          f"{THRESHOLD_MATCH!r})")
    print("| chosen by | threshold | falls back | mean Jaccard, exact ids | mean Jaccard, base ids |\n"
          "|---|---|---|---|---|")
    for match, r in readings["chosen"].items():
        by = r["mean_jaccard_by"]
        print(f"| {match} ids | {r['threshold']:.3f} | {r['fallback_rate']:.3f} | {by['exact']:.3f} | "
              f"{by['base']:.3f} |")
    print("\n| threshold | falls back | mean Jaccard, exact ids | mean Jaccard, base ids |\n|---|---|---|---|")
    for r in readings["sweep"]:
        by = r["mean_jaccard_by"]
        print(f"| {r['threshold']:.1f} | {r['fallback_rate']:.3f} | {by['exact']:.3f} | {by['base']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""judge-train criteria-classifier: train the tfidf task classifier of ``criteria: auto`` (``judge.criteria_auto``).

    judge-train criteria-classifier --out runs/criteria-clf                  # rebuild the classifier that ships
    judge-train criteria-classifier --data runs/instructions/instructions.jsonl --out runs/task-clf --no-bundled
    judge-train criteria-classifier --data ai-forever/POLLUX --allow-benchmark-rows --out runs/task-clf   # see below

With no ``--data`` it trains on the bundled rows and the taxonomy (``train.criteria_rows.bundled_rows``) with
the default parameters: the artefact in ``judge/data/criteria_tfidf`` (a test checks it against today's rows), up to
float noise in the last digits on another machine, whose BLAS sums in another order; ``--out
judge/data/criteria_tfidf`` replaces the shipped files, for when the bundled rows or the taxonomy change.
``--data`` adds labelled instructions: POLLUX-format records by their task columns, ``judge-train data
instructions`` output, or labelled JSONL. A source in the released benchmark's schema (the release by hub id or
folder, or a JSONL converted from it) is refused unless ``--allow-benchmark-rows`` is given
(``train.criteria_rows.refuse_benchmark_sources``): a classifier trained on the release's 2,100 instructions has
seen the test that ``judge-eval run --criteria auto`` routes, and the dataset card asks that the benchmark not be
trained on, so the flag is for a deliberate experiment only, never for a classifier that is evaluated on POLLUX.
The fallback threshold is chosen on out-of-fold predictions (``train.criteria_tfidf.fit_tfidf``; near duplicates
held out together) unless ``--threshold`` is given; ``model.json`` records it, the calibration it was chosen on, and
a digest of the training rows.
Use it: ``judge-eval run --criteria auto --criteria-classifier-path runs/task-clf``, or judge-serve's
``--criteria-classifier-path``.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from collections.abc import Sequence

__all__ = ["main", "training_rows"]

logger = logging.getLogger(__name__)


def training_rows(data: Sequence[str], bundled: bool, include_zero_shot: bool,
                  allow_benchmark_rows: bool = False) -> tuple[list[dict], dict]:
    """The rows to train on: the bundled rows (unless ``bundled`` is off: then the taxonomy texts alone) plus
    labelled ``data`` sources. The counts: ``load_labelled``'s, per part; a data row whose instruction is already
    among the bundled rows or the taxonomy texts is left out, counted under ``copies_of_bundled_or_taxonomy`` and
    not under ``kept``.

    Raises:
        ValueError: an instruction of the bundled held-out set, or a near duplicate of one
            (``judge.criteria_auto.labelled.near_duplicates``), among them (it would inflate the bench's figures).
        BenchmarkRowsError: a source in the released benchmark's schema, unless ``allow_benchmark_rows``.
    """
    from judge.criteria_auto import load_labelled
    from judge.criteria_auto.labelled import heldout_leaks
    from train.criteria_rows import bundled_rows, refuse_benchmark_sources, taxonomy_rows

    refuse_benchmark_sources(data, allow_benchmark_rows, config_file=False)  # the command takes flags only

    pairs, counts = bundled_rows(include_zero_shot) if bundled else (taxonomy_rows(include_zero_shot), {})
    if data:
        extra, extra_counts = load_labelled(list(data), include_zero_shot=include_zero_shot)
        # Only exact copies of the rows above are dropped: a near duplicate (a rewording, the final "."
        # left off) is a row to learn from, and fit_tfidf holds each group of them out in one fold
        # (train.criteria_tfidf.out_of_fold_folds), so it does not inflate the out-of-fold figures the threshold
        # and temperature are chosen on.
        seen = {p["instruction"] for p in pairs}
        added = [p for p in extra if p["instruction"] not in seen]
        pairs += added
        # counted as left out, not as kept: the summary's data counts say what was trained on
        copies = len(extra) - len(added)
        counts = {"bundled": counts,
                  "data": {**extra_counts, "kept": len(added), "copies_of_bundled_or_taxonomy": copies}}
    # near duplicates too (a held-out instruction with a clause cut, a few words changed), not only exact copies
    leaked = heldout_leaks(pairs)
    if leaked:
        raise ValueError(leaked)
    return pairs, counts


def _bad_number(args) -> str | None:
    """What is wrong with the numeric flags, or None: a threshold is a probability, a vocabulary cap at least 1."""
    if args.threshold is not None and not (math.isfinite(args.threshold) and 0.0 <= args.threshold <= 1.0):
        return f"--threshold must be a probability in [0, 1], got {args.threshold}"
    for flag in ("max_char_features", "max_word_features"):
        if getattr(args, flag) < 1:
            return f"--{flag.replace('_', '-')} must be at least 1, got {getattr(args, flag)}"
    if args.folds is not None and args.folds < 1:
        return f"--folds must be at least 1 (1: no out-of-fold calibration), got {args.folds}"
    return None


def _unwritable_out(out: str) -> str | None:
    """Why ``--out`` cannot take the artefact, or None: checked before the fit (about a minute), which otherwise ended
    in a FileExistsError or PermissionError traceback from the save. The nearest existing folder on its path must be
    a writable folder; the save creates the rest."""
    import os
    from pathlib import Path

    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"--out {out}: not a folder"
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        return f"--out {out}: {existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"--out {out}: {existing} is not writable"
    return None


def _too_many_folds(pairs: Sequence[dict], folds: int | None) -> str | None:
    """Why a ``--folds`` given cannot be honoured, or None: more folds than real instructions to hold out (rows not
    from the taxonomy texts) skipped the calibration, with exit 0. The default is not refused: with few rows it
    says in the summary that the default threshold was used."""
    real = sum(p.get("source") != "taxonomy" for p in pairs)
    if folds is not None and folds >= 2 and folds > real:
        return (f"--folds {folds}: only {real} instructions to hold out (the taxonomy texts stay in every fold); give "
                f"at most {real}, or 1 for no out-of-fold calibration")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(
        prog="judge-train criteria-classifier", description=__doc__.splitlines()[0], allow_abbrev=False,
        epilog="example: judge-train criteria-classifier --data runs/data/instructions/instructions.jsonl --out runs/task-clf. "
               "Exit codes: 0 the classifier written (its summary printed); 2 a usage error, a --threshold, "
               "--folds or vocabulary cap out of range, an --out that is not a writable folder, or refused --data "
               "(held-out or released-benchmark rows, an unreadable line, a missing or unreadable file), said in "
               "one line on stderr before anything is fitted.",
    )  # fmt: skip
    parser.add_argument("--out", required=True, help="folder to write model.json + weights.npz into")
    parser.add_argument("--data", action="append", default=[],
                        help="labelled instructions to add (records by task columns, instructions output, labelled "
                             "JSONL, a dataset name); repeatable")  # fmt: skip
    parser.add_argument("--allow-benchmark-rows", action="store_true",
                        help="accept --data in the released POLLUX benchmark's schema (refused by default: a router "
                             "trained on the benchmark's instructions has seen the test it routes)")
    parser.add_argument("--no-bundled", action="store_true",
                        help="train on --data and the taxonomy texts only, without the bundled instructions")
    parser.add_argument("--exclude-zero-shot", action="store_true",
                        help="leave the Zero-Shot task types out (to measure transfer to unseen types)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="fallback threshold on the task-type probability (default: chosen on out-of-fold data)")
    parser.add_argument("--folds", type=int, default=None,
                        help="out-of-fold folds for calibration and the threshold (default 5; 1: none, temperature 1 "
                             "and the default threshold; at most the number of instructions)")
    parser.add_argument("--max-char-features", type=int, default=16000,
                        help="character n-gram vocabulary cap (default: %(default)s)")
    parser.add_argument("--max-word-features", type=int, default=4000,
                        help="word n-gram vocabulary cap (default: %(default)s)")
    args = parser.parse_args(argv)
    # Checked before the fit: sklearn refuses a vocabulary cap below 1 with a traceback, and a threshold outside
    # [0, 1] (or NaN, which no probability falls below) was refused only by the classifier's own check after the
    # whole fit, naming a model.json not yet written.
    bad = _bad_number(args) or _unwritable_out(args.out)
    if bad:
        print(f"judge-train criteria-classifier: error: {bad}", file=sys.stderr)
        return 2

    from train.criteria_tfidf import fit_tfidf, save_tfidf

    from train.build_data import BenchmarkRowsError

    try:
        pairs, counts = training_rows(args.data, not args.no_bundled, not args.exclude_zero_shot,
                                      allow_benchmark_rows=args.allow_benchmark_rows)
    except (BenchmarkRowsError, ValueError) as err:
        print(f"judge-train criteria-classifier: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a --data that is not there or cannot be read: named, as the epilog promises
        what = f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
        print(f"judge-train criteria-classifier: error: --data {what}", file=sys.stderr)
        return 2
    bad = _too_many_folds(pairs, args.folds)
    if bad:
        print(f"judge-train criteria-classifier: error: {bad}", file=sys.stderr)
        return 2
    clf = fit_tfidf(pairs, folds=5 if args.folds is None else args.folds, threshold=args.threshold,
                    max_char_features=args.max_char_features, max_word_features=args.max_word_features)
    try:
        out = save_tfidf(clf, args.out)
    except OSError as err:  # a backstop for what the check up front cannot see (a full disk, a read-only mount)
        print(f"judge-train criteria-classifier: error: --out {args.out}: {err.strerror or err}", file=sys.stderr)
        return 2
    cal = clf.meta["calibration"]
    for warning in cal.get("warnings") or []:  # a calibration on too few instructions (train.criteria_tfidf)
        print(f"judge-train criteria-classifier: warning: {warning}", file=sys.stderr)
    # "note": why no out-of-fold calibration was made (one fold, or too few instructions for the default five)
    summary = {"out": str(out), "rows": len(pairs), "counts": counts, "threshold": clf.threshold,
               **{k: cal[k] for k in ("temperature", "type_accuracy", "ece", "chosen", "note", "warnings")
                  if cal.get(k) not in (None, [])}}  # fmt: skip
    print(json.dumps(summary, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

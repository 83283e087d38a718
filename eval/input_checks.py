"""judge-eval's up-front checks of its inputs and outputs: each refuses, before any record is read, request sent or
file written, an input that is not there or empty, a flag out of its bounds, or an output folder that cannot be made
or written, in one line naming the flag or the file (``eval.cli`` prints it and exits 2).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["FLAG_BOUNDS", "MAX_RESAMPLES", "N_BOOT_CAP", "POINTWISE_SCORE_FLAGS", "RUN_MARKERS", "RANKING_MARKERS",
           "refuse_empty_data", "refuse_out_of_bounds", "refuse_score_arguments", "refuse_pointwise_flags",
           "refuse_missing_predictions",
           "refuse_convert_out", "refuse_another_run", "run_marker", "os_error_text"]

#: What marks a folder as holding a run, in the order a refusal names them: its verdicts (pointwise or pairwise: a
#: pairwise run scored with ``--data`` needs no run.json beside them), else the record every run writes
#: (``judge-eval run``'s, a ranking's, a MERA task's, a training's).
RUN_MARKERS = ("predictions.jsonl", "pairwise_predictions.jsonl", "run.json")
#: What only a ranking's folder holds (its candidate stage's answers and key, ``eval.ranking.rank``): a ranking
#: judges through ``judge-eval run`` in its own folder, so its predictions and run.json alone do not tell it from a
#: plain run's.
RANKING_MARKERS = ("answers.jsonl", "candidate/run_key.json")


def run_marker(folder: str | Path, markers: tuple[str, ...] = RUN_MARKERS) -> str | None:
    """The first of ``markers`` that ``folder`` holds (a file or a folder), or None: what a refusal of a folder
    holding a run of another kind (``refuse_convert_out``, ``refuse_another_run``,
    ``eval.judging.run_settings.refuse_other_run_kind``) names as the reason."""
    return next((name for name in markers if (Path(folder) / name).exists()), None)


def refuse_another_run(out: str | Path, run_dir: str | Path) -> None:
    """ValueError for an ``--out`` that is not the scored run's folder but holds a run of its own (its
    ``predictions.jsonl``, ``pairwise_predictions.jsonl`` or ``run.json``: ``run_marker``; another judge's verdicts,
    a ranking, a training run, a pairwise run): its metrics.json, report.md and report.html would be replaced by this
    run's, and a later ``judge-eval compare`` would read this judge's figures under that run's name. Refused before
    anything is read or written.

    Raises:
        ValueError: naming ``--out``, the file that marks it as a run, and what to give instead.
    """
    out, run_dir = Path(out), Path(run_dir)
    if not out.is_dir() or out.resolve() == run_dir.resolve():
        return
    held = run_marker(out)
    if held is not None:
        raise ValueError(f"--out {out}: holds another run (its {held}), whose reports this would replace with "
                         f"{run_dir}'s; leave --out out to write beside the predictions, or give a folder of its own")


def refuse_empty_data(data: str) -> None:
    """Refuse, before any request is sent or any folder made, a ``--data`` file that is not there (a name with a
    data file's suffix; other names may be datasets), cannot be read (no permission) or holds no records (empty, or
    blank lines only).

    Raises:
        ValueError: naming the file.
    """
    if not data:
        return
    path = Path(data)
    if not path.exists() and path.suffix in (".jsonl", ".json", ".parquet"):
        raise ValueError(f"--data {data}: no such file")
    if path.is_file() and path.suffix in (".jsonl", ".json", "") and not _has_content(path, f"--data {data}"):
        raise ValueError(f"--data {data}: the file is empty (no records to judge)")


#: score's and compare's numeric flags: what each must be (NaN is none of them). Out of bounds, --vc-repeats -3 wrote
#: "vc_judge": 0.0 (a figure never computed), --alpha 2 called p = 0.7 "better", --n-boot -1 read as 0.
_OPEN_0_1 = (lambda v: 0 < v < 1, "between 0 and 1 (both excluded)")
FLAG_BOUNDS = {"seed": (lambda v: v >= 0, "0 or more"), "vc_repeats": (lambda v: v >= 1, "at least 1"),
               "alpha": _OPEN_0_1, "alt_test_q": _OPEN_0_1, "alt_test_epsilon": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
               "alt_test_min_items": (lambda v: v >= 1, "at least 1"),
               "alt_test_min_experts": (lambda v: v >= 2, "at least 2"),
               # tested experts are counted over the panel, not per item: no per-item cap bounds them from above
               "alt_test_min_tested": (lambda v: v >= 1, "at least 1")}  # fmt: skip


#: The most resamples (and drawn sign-flip swaps) a leaderboard (``eval.ranking.leaderboard``) raises ``n_boot`` to:
#: a call at alpha / m needs 2m / alpha, so a tiny alpha would otherwise multiply the work without bound (alpha 1e-6
#: over three candidates: 6,000,000 of each). Here, not in the leaderboard, so that rank's config check
#: (``eval.ranking.rank.RankConfig.validate``) reads it without importing what imports rank.
MAX_RESAMPLES = 100_000

#: score's, compare's and rank's --n-boot cap and why, as the refusal says it.
N_BOOT_CAP = (MAX_RESAMPLES, "the most resamples a leaderboard raises --n-boot to")


def _flag_caps() -> dict[str, tuple[int, str]]:
    """The most each work-sized flag takes, and why: past it a run works for hours without a word (--vc-repeats
    1e9 is a billion passes over every item). A function, not a table: metrics.json's types are no part of
    --help."""
    from judge.metrics_json.metrics import MAX_VC_REPEATS

    return {"vc_repeats": (MAX_VC_REPEATS, "100 times the paper's 100 draws per item"), "n_boot": N_BOOT_CAP}


def refuse_out_of_bounds(args: argparse.Namespace, default_out: Path | None = None) -> None:
    """Refuse, before a run is read or anything written, a flag out of its bounds (``FLAG_BOUNDS``, ``--n-boot``'s
    ``N_BOOT_BOUND``, the caps of --vc-repeats and --n-boot), or an output folder (``--out``, else ``default_out``)
    that is a file or cannot be made or written (the work, done first, stopped at its first write: a traceback, or
    an error naming a temporary file).

    Raises:
        ValueError: naming the flag, its bound and the value; ConfigError: naming the output folder.
    """
    from eval.scoring.compare import N_BOOT_BOUND  # here, not at import: numpy and the reports are no part of --help
    from judge.plumbing.run_folder import refuse_unwritable

    for dest, (within, bound) in {"n_boot": N_BOOT_BOUND, **FLAG_BOUNDS}.items():
        if hasattr(args, dest) and not within(getattr(args, dest)):
            raise ValueError(f"--{dest.replace('_', '-')}: must be {bound}, got {getattr(args, dest)}")
    for dest, (cap, why) in _flag_caps().items():
        if hasattr(args, dest) and getattr(args, dest) > cap:
            raise ValueError(f"--{dest.replace('_', '-')}: must be at most {cap:,} ({why}), got {getattr(args, dest)}")
    if args.out:
        refuse_unwritable(args.out, "--out", "output folder")
    else:
        refuse_unwritable(default_out, what="predictions' folder (the default --out)")



def refuse_score_arguments(*, judge_minus_one: object, n_boot: object, seed: object) -> None:
    """Refuse a ``judge-eval score`` argument given from Python, where no flag check runs first: one metrics.json's
    ``settings`` cannot record (its reader's whole-number rule, ``judge.metrics_json.json_record.count``), or one
    out of the bounds the CLI holds its flags to (``N_BOOT_BOUND``, ``N_BOOT_CAP``, ``FLAG_BOUNDS``), so that a
    call is refused before any work, naming the argument, as the flag would be.

    Raises:
        ValueError: ``judge_minus_one`` not one of ``eval.scoring.item_table.JUDGE_MINUS_ONE``, or ``n_boot`` or
            ``seed`` not a whole number or out of its flag's bounds, naming the argument, what it may be and the
            value.
    """
    from eval.scoring.compare import N_BOOT_BOUND  # here, not at import: numpy and the reports are no part of --help
    from eval.scoring.item_table import JUDGE_MINUS_ONE
    from judge.metrics_json.json_record import count

    if judge_minus_one not in JUDGE_MINUS_ONE:
        raise ValueError(f"judge_minus_one: must be one of {', '.join(JUDGE_MINUS_ONE)}, got {judge_minus_one!r}")
    for name, value in (("n_boot", n_boot), ("seed", seed)):
        try:
            count(value)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name}: {err}") from None
    for name, value, (within, bound) in (("n_boot", n_boot, N_BOOT_BOUND), ("seed", seed, FLAG_BOUNDS["seed"])):
        if not within(value):
            raise ValueError(f"{name}: must be {bound}, got {value}")
    cap, why = N_BOOT_CAP
    if n_boot > cap:
        raise ValueError(f"n_boot: must be at most {cap:,} ({why}), got {n_boot}")


def os_error_text(err: OSError, out: str | Path | None) -> str:
    """An OSError in one line: a write into the output folder (or, convert's, beside the output file) that failed
    after the up-front checks (a full disk, a folder made read-only meanwhile) names ``--out`` and what to do, not
    the temporary file it stopped in."""
    if err.errno is None or not err.filename:  # raised with a message of the project's own
        return str(err)
    where, target = Path(err.filename).resolve(), Path(out or ".").resolve()
    if out and (where.is_relative_to(target) or (where.parent == target.parent
                                                  and where.name.startswith(f"{target.name}."))):
        return f"--out {out}: cannot write there ({err.strerror}); choose another output folder"
    return str(err) if isinstance(err, FileNotFoundError) else f"{err.filename}: {err.strerror}"


def refuse_missing_predictions(predictions: str) -> None:
    """Refuse a ``--predictions`` that is not there, is a file other than JSONL, holds no prediction, or is a run
    folder a job still writes (its ``run.lock`` held), before anything is read or written.

    Raises:
        ValueError: naming the path and what to do.
    """
    from eval.pairwise.files import PAIRWISE_PREDICTIONS
    from judge.plumbing.config_files import special_file_kind
    from judge.plumbing.run_folder import run_folder_holder

    path = Path(predictions)
    if not path.exists():
        raise ValueError(f"--predictions {predictions}: not found; give a run folder written by `judge-eval run` "
                         "(or its predictions.jsonl)")
    folder = path if path.is_dir() else path.parent
    # A run still judging has written only part of its verdicts (and no run.json yet): scored now, its figures read
    # as a finished run's, and a report written into its folder goes stale when the run ends.
    if holder := run_folder_holder(folder):
        raise ValueError(f"--predictions {predictions}: {holder} is still writing this run; score it once the run "
                         "has finished, or stop the run first (what it judged is kept and scored as it is)")
    # A pairwise run writes its judgments under another name (eval.pairwise.judging); either file is a run's
    # predictions.
    names = ("predictions.jsonl", PAIRWISE_PREDICTIONS)
    file = next((path / n for n in names if (path / n).is_file()), path / names[0]) if path.is_dir() else path
    if kind := special_file_kind(file):  # /dev/null or a pipe (<(...)): there, but nothing to read rows back from
        raise ValueError(f"--predictions {predictions}: {file} is {kind}, not a predictions.jsonl; give a run folder "
                         "written by `judge-eval run` (a stream: write it to a file first)")
    if not file.is_file():
        raise ValueError(f"--predictions {predictions}: no predictions.jsonl (or {PAIRWISE_PREDICTIONS}) in the "
                         "folder; give a run folder written by `judge-eval run`")
    if file.suffix.lower() != ".jsonl":  # a config or report given by mistake: said before score asks for --data
        raise ValueError(f"--predictions {predictions}: not a predictions.jsonl (JSONL rows written by judge-eval run)")
    first = _first_line(file, str(file))
    if first is None:
        raise ValueError(f"{file}: no predictions (the file is empty); run `judge-eval run --out "
                         f"{file.parent}` first, or rerun it if it stopped")
    if _is_record(first):  # --data's file given as --predictions: asked for --data, or told of 15 unknown fields
        from judge.records import REQUIRED_TEXT_FIELDS

        raise ValueError(f"--predictions {predictions}: holds POLLUX records ({', '.join(REQUIRED_TEXT_FIELDS)}: what "
                         "--data takes), not a judge's predictions; give the run folder `judge-eval run` wrote")


def _is_record(line: bytes) -> bool:
    """Whether a JSONL line is a POLLUX record (its required text fields), not a prediction row."""
    from judge.plumbing.json_reading import UTF8_BOM, json_or_none
    from judge.records import REQUIRED_TEXT_FIELDS

    row = json_or_none(line.removeprefix(UTF8_BOM))  # unreadable: the predictions reader names the line
    return isinstance(row, dict) and all(name in row for name in REQUIRED_TEXT_FIELDS)


def _has_content(path, name: str) -> bool:
    """Whether a text file has a character other than white space (read until the first one).

    Raises:
        ValueError: naming ``name`` when the file cannot be read (no permission, a write-only file): an input error,
            said in one line, not a traceback.
    """
    return _first_line(path, name) is not None


def _first_line(path, name: str) -> bytes | None:
    """A text file's first line with a character other than white space, or None (read until that line).

    Raises:
        ValueError: as ``_has_content``.
    """
    try:
        with open(path, "rb") as handle:
            return next((line for line in handle if line.strip()), None)
    except OSError as err:
        raise ValueError(f"{name}: cannot be read ({err.strerror or err})") from None


def refuse_convert_out(out: str, data: str) -> None:
    """Refuse, before any record is read, a ``judge-eval convert --out`` that is not a JSONL file of its own: a
    folder (open() stopped in IsADirectoryError, a traceback, after the records were read), a name not ending in
    .jsonl (out.parquet held JSONL text, a name every reader misreads), the ``--data`` file itself, or a file that
    exists in a run folder (one holding run.json: replaced by records, a run's predictions.jsonl lost its verdicts
    without a word). Writing the same plain file again (a rerun of an eval.sbatch set-up) stays allowed.

    Raises:
        ValueError: naming ``--out`` and what to give instead.
    """
    path = Path(out)
    if path.is_dir():
        raise ValueError(f"--out: {out} is a folder, not a file; give the JSONL file to write")
    if path.suffix.lower() != ".jsonl":
        raise ValueError(f"--out {out}: convert writes JSONL; give a file name ending in .jsonl")
    if path.exists() and Path(data).exists() and os.path.samefile(out, data):
        raise ValueError(f"--out {out}: is the --data file itself, which the JSONL would replace; give another --out")
    # run.json alone: a predictions.jsonl beside a file need not be a run's (a folder of data files), and the file
    # itself is no marker (a plain predictions.jsonl may be converted into again)
    held = run_marker(path.parent, ("run.json",)) if path.exists() else None
    if held is not None:
        raise ValueError(f"--out {out}: a file of the run in {path.parent} (it holds {held}), which the records "
                         "would replace; give a file outside that run folder")


#: ``judge-eval score``'s flags that only a pointwise run reads (its reference score, VC, correlations, intervals'
#: unit, validity section, plots and pages): a pairwise run (``eval.pairwise.metrics.score_pairwise``) reads none, its
#: intervals resampling pairs. In the parser's order.
POINTWISE_SCORE_FLAGS = ("target", "vc_repeats", "spearman_target", "bootstrap_unit", "clip_regression",
                         "judge_minus_one", "png", "wandb_project", "allow_repeated_ids", "html_text_items",
                         "alt_test_epsilon", "alt_test_q", "alt_test_failures", "alt_test_scoring", "alt_test_min_items",
                         "alt_test_min_experts", "alt_test_min_tested", "ceiling_failures")


def refuse_pointwise_flags(args: argparse.Namespace, defaults: argparse.Namespace) -> None:
    """Refuse (ValueError, naming each) a ``POINTWISE_SCORE_FLAGS`` flag given to the score of a pairwise run, one
    whose value is not the parser's default (``defaults``): it would change nothing and read as taken, as
    ``--bootstrap-unit instruction`` read as if the pairwise intervals drew whole instructions."""
    given = [f"--{name.replace('_', '-')}" for name in POINTWISE_SCORE_FLAGS
             if getattr(args, name, None) != getattr(defaults, name, None)]
    if given:
        raise ValueError(f"{', '.join(given)}: a pairwise run takes none of the pointwise scoring flags (its intervals "
                         "resample pairs); leave them out")

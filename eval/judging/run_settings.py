"""What ties a ``judge-eval run`` folder to its settings: the run key a resume must match, the paths run.json
records, which records its ``--split`` and ``--limit`` select, what ``--overwrite`` clears besides the progress
files (``eval.judging.run``), and whether the folder is a plain run's or a ranking's (``refuse_other_run_kind``,
which ``judge-eval rank`` asks before its data is read, without the judging client)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from eval.input_checks import RANKING_MARKERS, run_marker
from eval.pairwise.files import PAIRWISE_PAIRS, PAIRWISE_PREDICTIONS
from judge.plumbing.run_folder import ResumeMismatch
from judge.sample_data import SAMPLE_DATA, data_name, data_source

if TYPE_CHECKING:
    from eval.judging.config import RunConfig

__all__ = ["RESUME_FREE", "SCORE_OUTPUTS", "IN_OUT", "run_key", "earlier_run_keys", "resolved_paths",
           "data_sha256", "clear_score_outputs", "selected_positions", "RUN_FOLDER_JOBS", "refuse_other_run_kind",
           "PROGRESS_FILES"]

log = logging.getLogger("judge_eval.run")

#: Settings that say how a run goes, not what it computes: a resume may change them. Every other setting is part
#: of the run's key (``run_key``), so a new setting is guarded unless it is added here.
RESUME_FREE = ("out", "concurrency", "max_retries", "backoff_s", "timeout_s", "progress", "batch_size", "api_key",
               "api_key_env", "base_url_env", "server_env", "server_timeout_s", "overwrite",
               "connect_timeout_s", "retry_wait_budget_s", "criteria_classifier_api_key_env")  # fmt: skip

#: What ``judge-eval score`` writes into a run folder (``eval.scoring.score``, ``eval.pairwise.metrics``): figures of
#: the predictions ``--overwrite`` discards, so discarded with them (the plots by the names ``eval.reports.plots``
#: gives them; anything else in the folder is left).
SCORE_OUTPUTS = ("metrics.json", "report.md", "report.html", "items.parquet", PAIRWISE_PAIRS,
                 "plots/confusion_*.png", "plots/mae_by_criterion_*.png")


def run_key(config: RunConfig) -> dict[str, Any]:
    """The settings a resume must share with the run that started the folder (``judge.plumbing.run_folder``).

    A judge given as a URL is left out: a requeued Slurm shard reaches its server at a new address, and the served
    model's name is checked against the rows already written instead. The bundled sample is one key (""), however
    ``data`` names it: unset, ``sample`` (what run.json records) or its path (an older run.json's).
    """
    key = {k: v for k, v in dataclasses.asdict(config).items() if k not in RESUME_FREE}
    if key["prompt_version"] == "auto":  # today's rule: folders keyed before the setting existed resume as they were
        del key["prompt_version"]
    if key["cut_rationale"] == "fail":  # the rule before the setting existed: those folders resume
        del key["cut_rationale"]
    if str(key["judge"]).startswith(("http://", "https://")):
        key["judge"] = "<url>"
    if key["data"] and data_name(key["data"]) == SAMPLE_DATA:
        key["data"] = ""
    inside = _inside_out(config) if key["data"] else None  # the sample stays "" wherever it lies
    if inside is not None:  # a file of the folder's own (a ranking's items.jsonl): the folder may be moved
        key["data"] = inside
    return key


#: How ``run_key`` names a data file inside the run folder: this, then its path from the folder.
IN_OUT = "<out>/"


def _inside_out(config: RunConfig) -> str | None:
    """``data`` as ``IN_OUT`` and its path from ``out`` when it is a file inside the run folder (``judge-eval rank``
    judges its candidate's answers from its folder's ``items.jsonl``; a Slurm eval shard's block is its folder's
    ``data.jsonl``), else None (a dataset name, a hub id, a file elsewhere): so keyed, the folder resumes where it
    is moved or copied, its answers and verdicts kept."""
    if not (config.data and config.out) or config.data.startswith(("http://", "https://")):
        return None
    data, out = Path(config.data).expanduser().resolve(), Path(config.out).expanduser().resolve()
    if not data.is_file() or not data.is_relative_to(out):
        return None
    return f"{IN_OUT}{data.relative_to(out).as_posix()}"


def earlier_run_keys(config: RunConfig) -> tuple[dict[str, Any], ...]:
    """Keys of this run as releases before ``_inside_out`` wrote them (a data file inside the folder by its absolute
    path), which a resume in place still takes (``claim_run_folder``'s ``earlier_keys``); none otherwise."""
    key = run_key(config)
    if not str(key.get("data", "")).startswith(IN_OUT):
        return ()
    return ({**key, "data": str(Path(config.data).expanduser().resolve())},)


def resolved_paths(config: RunConfig) -> dict[str, str]:
    """The config's local paths made absolute (``data``, ``out``, a checkpoint ``judge``, the classifier's folder);
    a dataset name, a hub id or a URL is left as given."""
    out = {"out": str(Path(config.out).expanduser().resolve())} if config.out else {}
    for name in ("data", "judge", "criteria_classifier_path"):
        value = getattr(config, name)
        if value and not value.startswith(("http://", "https://")) and Path(value).expanduser().exists():
            out[name] = str(Path(value).expanduser().resolve())
    return out


def data_sha256(data: str) -> str | None:
    """The SHA-256 of the data file a run judged, as run.json records it (``data_sha256``, the key ``judge-eval mera``
    records too): the path alone does not say which rows were judged once the file is edited or replaced. The bundled
    sample (``sample``) is its file in this install. None where ``data`` names no single file (a dataset name or hub
    id, a datasets folder)."""
    from eval.mera.progress import sha256_of

    path = Path(data_source(data)).expanduser() if data else None
    return sha256_of(path) if path is not None and path.is_file() else None


def clear_score_outputs(out: Path) -> list[Path]:
    """Delete the ``SCORE_OUTPUTS`` in ``out`` (an ``--overwrite`` discards the predictions they were computed
    from: left, they would stand for a run that no longer exists, or beside another's predictions), saying which.

    Returns:
        The files deleted.
    """
    gone = sorted(path for pattern in SCORE_OUTPUTS for path in out.glob(pattern) if path.is_file())
    for path in gone:
        path.unlink()
    if gone:
        log.info("overwrite: deleted the scores of the discarded predictions: %s",
                 ", ".join(str(p.relative_to(out)) for p in gone))
    return gone


def selected_positions(splits: Sequence[str], split: str, limit: int) -> list[int]:
    """The positions of the records ``judge-eval run`` judges, given each record's split (``judge.split_of``), in the
    data's order: those of ``split`` (``all``: every one), then the first ``limit`` of them (0: all). One rule for the
    run that selects and for ``judge-eval score``, which tells an item the run never meant to judge from one it has
    not judged yet (``eval.scoring.score.selected_items``)."""
    chosen = [k for k, of in enumerate(splits) if split == "all" or of == split]
    return chosen[: limit or None]


#: What a run's work writes (its verdicts, criteria auto's items and choices): a folder holding them is resumed.
PROGRESS_FILES = ["predictions.jsonl", PAIRWISE_PREDICTIONS, "auto_items.jsonl", "task_choices.jsonl"]

#: The run.json jobs a ranking's folder may hold: `judge-eval rank` judges its candidate's answers in its own folder
#: through this run (whose job its run.json then names), and writes its own where no item reached the judge.
RUN_FOLDER_JOBS = ("judge-eval run", "judge-eval rank")


def refuse_other_run_kind(out: Path, ranking: bool) -> None:
    """Refuse a ranking's folder to a plain `judge-eval run` and a plain run's folder (any of its
    ``PROGRESS_FILES``, pairwise verdicts and criteria auto's choices too, no ranking's answers) to a ranking, before
    any request: both write `judge-eval run` in run.json, so the job alone (``refuse_other_job``) does not tell them
    apart, and --overwrite would discard the other's verdicts. What marks each: ``eval.input_checks.run_marker``
    with ``RANKING_MARKERS``.

    Raises:
        ResumeMismatch: naming the folder and what it holds.
    """
    marked = run_marker(out, RANKING_MARKERS)
    if not ranking and marked:
        held, kind, this = f"its {marked}", "judge-eval rank", "judge-eval run"
    elif ranking and not marked and (found := run_marker(out, tuple(PROGRESS_FILES))):
        held, kind, this = f"its {found}, no ranking's answers", "judge-eval run", "judge-eval rank"
    else:
        return
    raise ResumeMismatch(f"{out} holds a `{kind}` run ({held}), not a `{this}` one: use a fresh --out (--overwrite "
                         "discards this command's own progress, never another command's files)")

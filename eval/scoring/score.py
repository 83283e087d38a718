"""The ``judge-eval score`` step: join a run's predictions with the expert-labelled records, compute the paper's
metrics (``eval.scoring.item_table``), and write the report (``eval.reports.report``, ``eval.reports.html_report``).

    judge-eval score --predictions runs/judge-a --data DATA.jsonl          # report beside the predictions
    judge-eval score --predictions runs/judge-a --png                      # also the PNG plots
    judge-eval score --predictions runs/judge-a-r --clip-regression        # -r judges: the head clipped to the scale

Files written to the output folder:

- ``metrics.json``: ``eval.scoring.item_table.evaluate``'s result (per test: the cells, ``model_means`` = the paper's
  Table 10, ``why_empty`` where a cell has no scored item), ``validity`` (``eval.validity.section``: the alternative
  annotator test, the experts' ceiling, agreement and bias, per test and cell; docs/validity.md) plus
  ``pollux_official`` (POLLUX's repository evaluator,
  ``eval.scoring.pollux_official``: not the paper's metrics), the run's provenance; ``notes.n_stale_predictions`` when
  the data was edited after the run (``stale_rows``: predictions of a text no longer there, scored as none);
  ``notes.n_off_scale`` and ``notes.off_scale_rows`` when records have an expert score off their rubric's scale
  (counted by the load, scored as given), ``notes.n_duplicate_rows`` and ``notes.duplicate_rows`` when exact
  duplicate rows were left out; report.md and report.html say both under the summary; ``notes.n_missing_unselected``
  when items have no prediction because the run's ``--limit`` or ``--split`` left them out (``selected_items``), so
  that the reports say so instead of calling the run unfinished; ``notes.n_unknown_ids`` and
  ``notes.first_unknown_id`` when predictions name ids the data lacks (left out; the reports say so and name one);
- ``report.md``: the tables; ``report.html``: the same tables, SVG plots and the item explorer;
- ``items.parquet``: the per-item table (judge score, status, experts, reference, Verdict Confidences, ``in_scale``,
  ``n_abstained``, ``why_unscored``), which ``judge-eval compare`` pairs across runs;
- with ``png`` (or W&B logging, which uploads them): ``plots/confusion_<split>.png`` (judge x expert mode, per task
  group) and ``plots/mae_by_criterion_<split>.png``.

One process, one pass, top to bottom: the predictions are read as one Arrow table, the records as columns
(``judge.load_record_columns``), joined by id into the item table's numpy columns (``eval.scoring.item_table.build_table``), and every file is written from that table
and the metrics computed on it (bench/eval_metrics.py --end-to-end times it on the full test's 160,000 items).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from pathlib import Path

from eval.input_checks import refuse_another_run, refuse_score_arguments
from eval.scoring import item_table
from eval.scoring.gc_freeze import frozen_from_here, older_objects_frozen
from eval.reports.html_explorer import DEFAULT_TEXT_ITEMS, item_columns, report_items
from eval.reports.html_report import render_report_page
from eval.reports.plots import write_plots
from eval.reports.report import log_wandb, render_markdown
from eval.reports.notes import load_report_notes
from eval.validity.scale_reading import read_scales
from eval.validity.section import ValiditySettings, validity_section
from judge.metrics_json.metrics import Metrics, Notes, RunInfo
from judge.plumbing.atomic_write import write_atomically
from judge.sample_data import data_source, sample_data_path

__all__ = ["one_blas_thread", "score"]

log = logging.getLogger("judge_eval.score")


@contextlib.contextmanager
def one_blas_thread():
    """BLAS on one thread inside the block, or the call it decorates: the bootstraps' many small matrix products
    would each wake OpenBLAS's helper thread, which then spins waiting for more work, a second core's time for
    nothing (measured: docs/performance.md, "BLAS on one thread"). Restored after, whatever it was. ``score`` runs
    under it, and so does the bench that times score's metrics (``bench/eval_metrics.py``)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _absolute(data: str | Path) -> str:
    """``data`` as an absolute path when it names a local file or folder (a dataset name is kept as given), as
    ``eval.judging.run_settings.resolved_paths`` records run.json's: report.html and ``judge-eval compare`` read the files
    metrics.json names back, from whatever directory they run in."""
    path = Path(data).expanduser()
    return str(path.resolve()) if path.exists() else str(data)


def stale_rows(records, rows, *, record_ids=None):
    """Which prediction rows judged a text their item no longer has: a row's ``content_key`` (what ``run`` sent,
    ``eval.judging.predictions.record_content_key``) differs from its record's now (the data was edited in place
    after the run, under the same ids). A row without a key (written before rows kept one) or of an id not in the
    records is not stale: it cannot be checked.

    Each distinct text is JSON-encoded once, by the encoder ``json.dumps(..., ensure_ascii=False)`` itself calls for
    a string, and to UTF-8 once: a row's bytes, those ``judge.plumbing.run_folder.content_key`` hashes, are its five
    texts' joined by ", " in brackets; then one SHA-256 per keyed row and the keys compared as one array.
    Returns a boolean numpy mask over ``rows``; ``record_ids``: ``records.ids`` as an Arrow string array, where the
    caller has built it (None: built here).
    """
    import hashlib
    from json.encoder import encode_basestring  # json.dumps' own string encoder when ensure_ascii is off

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = rows.column("content_key")
    stale = np.zeros(rows.num_rows, dtype=bool)
    if keys.null_count == rows.num_rows:
        return stale
    keyed = np.flatnonzero(keys.is_valid().to_numpy(zero_copy_only=False))
    # ids are unique once loaded (a repeat is dropped, or refused), and UTF-8 text (an id with a lone surrogate is
    # refused): each row's record looked up by Arrow's hash join, not a Python dict per id; -1: not in the records
    record_ids = pa.array(records.ids, type=pa.string()) if record_ids is None else record_ids
    where = pc.index_in(rows.column("id").take(keyed), value_set=record_ids)
    where = where.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    checked = where >= 0
    keyed, where = keyed[checked], where[checked]
    pieces = []
    for name in ("instruction", "reference_answer", "answer", "criteria_name", "rubrics"):
        before, after = "[" if name == "instruction" else "", "]" if name == "rubrics" else ""  # the list's brackets
        encoded: dict = {}  # by the text (its hash cached on each distinct text's one string); a missing text is ""
        pieces.append([encoded.get(text) or encoded.setdefault(text, f"{before}{encode_basestring(text or '')}{after}"
                                                                .encode("utf-8"))
                       for text in records.text(name)[where].tolist()])
    sha256, join = hashlib.sha256, b", ".join
    now = [sha256(join(five)).hexdigest()[:16] for five in zip(*pieces)]
    stale[keyed] = np.array(now, dtype=object) != np.array(keys.take(keyed).to_pylist(), dtype=object)
    return stale


def _without_stale(rows, records, predictions: Path, data):
    """``rows`` without the stale ones (``stale_rows``): their items count as having no prediction (``n_missing``,
    ``no_prediction``), with a warning naming how many and one id. Every row stale: refused, the data changed.

    Returns:
        ``(rows, n_stale)``: the rows kept and how many were left out.

    Raises:
        ValueError: every prediction row of an item in the records is stale.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    record_ids = pa.array(records.ids, type=pa.string())  # the value set of both joins
    stale = stale_rows(records, rows, record_ids=record_ids)
    n_stale = int(stale.sum())
    if not n_stale:
        return rows, 0
    example = rows.column("id")[int(stale.argmax())].as_py()
    if not pc.any(pc.is_in(rows.column("id").filter(fresh := pa.array(~stale)), value_set=record_ids)).as_py():
        raise ValueError(f"--predictions {predictions}: every one of its {n_stale} predictions judged a text that "
                         f"is no longer in --data {data} (e.g. id {example!r}): the data changed since the run; "
                         "rerun `judge-eval run` on it (it resumes: the edited items are asked again)")
    log.warning("%d predictions judged a text their item no longer has in %s (e.g. id %r: the data changed since "
                "the run): counted as no prediction; rerun `judge-eval run` to ask them again", n_stale, data, example)
    return rows.filter(fresh), n_stale


def _data_of_run(run_info: dict, run_dir: Path) -> str | None:
    """The data a run judged, as its run.json's ``config.data`` records it (None when it records none).

    Raises:
        ValueError: ``config`` or ``config.data`` is not what ``judge-eval run`` writes (a hand edit, another tool's
            file), naming the file and the field.
    """
    config = run_info.get("config")
    if config is None:
        return None
    if not isinstance(config, dict):
        raise ValueError(f"{run_dir / 'run.json'}: config.data: expected a path, got config "
                         f"{json.dumps(config)[:80]} (not an object); pass --data")
    data = config.get("data")
    if data is None or isinstance(data, str):
        return data_source(data) if data else data  # "sample": how judge-eval run and the shard merge record the bundled sample
    raise ValueError(f"{run_dir / 'run.json'}: config.data: expected a path, got {json.dumps(data)[:80]}; pass --data")


def refuse_ranking_folder(predictions: Path, run_dir: Path) -> None:
    """ValueError for predictions in a folder ``judge-eval rank`` wrote (its ``rank.json``, or ``bench.json`` if
    ranked before the rename, which ``judge-eval run`` never writes; ``eval.ranking.rank.ranking_result``): its
    predictions are verdicts on a candidate's answers, which carry no expert scores, and scoring them wrote a judge
    report of no items over the ranking's own report.html. Refused before the predictions are read or any output is
    written.

    Raises:
        ValueError: ``run_dir`` holds a ranking's result, saying where the ranking's results are (naming the file it
            holds) and what to run instead.
    """
    from eval.ranking.rank import ranking_result

    result = ranking_result(run_dir)
    if result is not None:
        where = "" if predictions == run_dir else f" (in {run_dir})"
        raise ValueError(f"--predictions {predictions}{where}: a folder written by `judge-eval rank` (it holds "
                         f"{result.name}), which scores its own verdicts: the ranking is in its report.html and "
                         f"{result.name}, and `judge-eval rank` on the same --out scores it again; `judge-eval score` "
                         "scores a folder written by `judge-eval run`")


def selected_items(run_info: dict, table, data: str | Path, left_out=None) -> dict[str, object]:
    """What the run's own selection (its run.json's ``config.split`` and ``config.limit``, ``judge-eval run``'s
    ``--split`` and ``--limit``) left unjudged, for metrics.json's ``notes``: an item the run never meant to
    judge has no prediction, but the run is not unfinished for it.

    ``judge-eval run`` selects the records of its split, in the data's order, then the first ``limit`` of them; so
    only when the data scored is the data the run judged (its ``config.data``) and the run selected as many items as
    its run.json's ``n_items`` records. Any doubt (another --data, a field not as ``judge-eval run`` writes it, data
    edited since) gives {}, and the reports say what they say of any item without a prediction.

    ``left_out`` marks the items of the shards a partial merge left out (``missing_block_items``): they were never
    judged, so neither the run's ``n_items`` nor ``n_missing_unselected`` counts them (``missing_shards`` does).

    Returns:
        ``Notes``' ``n_missing_unselected`` (the items with no prediction outside the selection) with
        ``unselected_split`` and ``unselected_limit`` (each only when it left out one of them), and for a merged
        eval array whose tasks each applied the limit to their own block (``_array_blocks``) ``limit_per_shard``
        and ``shard_count``; {} when there are none.
    """
    import numpy as np

    from eval.judging.run_settings import selected_positions

    config = run_info.get("config")
    if not isinstance(config, dict):
        return {}
    limit, split, run_data = config.get("limit") or 0, config.get("split") or "all", config.get("data")
    if (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
            or split not in ("all", "zero_shot", "standard") or not isinstance(run_data, str) or not run_data
            or (not limit and split == "all")):
        return {}
    if _absolute(data_source(run_data)) != _absolute(data):
        return {}
    in_split = np.ones(len(table), dtype=bool) if split == "all" else table.split == split
    selected = np.zeros(len(table), dtype=bool)
    blocks = _array_blocks(run_info, len(table)) if limit else None
    for first, end in blocks or [(0, len(table))]:
        # an eval array's tasks each ran `judge-eval run --limit N` on their own block (slurm/eval.sbatch passes the
        # flags after it to every task): the selection is each block's first N, not the whole data's
        selected[[first + k for k in selected_positions(table.split[first:end], split, limit)]] = True
    kept = np.ones(len(table), dtype=bool) if left_out is None else ~left_out
    n_items = run_info.get("n_items")
    if isinstance(n_items, int) and not isinstance(n_items, bool) and n_items != int((selected & kept).sum()):
        return {}  # the data is not as the run read it: its first items may not be the run's
    outside = (table.status == "missing") & ~selected & kept
    if not outside.any():
        return {}
    flags = {"unselected_split": split} if (outside & ~in_split).any() else {}
    if limit and (outside & in_split).any():
        flags["unselected_limit"] = limit
        if blocks is not None and len(blocks) > 1:
            flags.update(limit_per_shard=True, shard_count=len(blocks))
    return {**flags, "n_missing_unselected": int(outside.sum())}


def _array_blocks(run_info: dict, n_items: int) -> list[tuple[int, int]] | None:
    """Each shard's items of a merged eval array (run.json's ``shard_array``) as (first, end) positions, by
    eval.sbatch's cut; None for no array, or other data than it cut (as ``missing_block_items`` requires)."""
    from eval.judging.shard_array import shard_block

    array = run_info.get("shard_array")
    if (not isinstance(array, dict) or not _whole(array.get("count")) or not array["count"]
            or array.get("n_records") != n_items or not _whole(n_items)):
        return None
    blocks = (shard_block(k, array["count"], n_items) for k in range(array["count"]))
    return [(first - 1, last) for first, last in blocks]


def missing_shards(run_info: dict) -> dict[str, object]:
    """The shards a partial merge left out (``judge-eval merge --allow-missing-shards`` records them in run.json's
    ``shard_array``: ``eval.judging.shard_array``), for metrics.json's ``notes``; {} when none are (or the record is
    not as the merge writes it), so that the reports call the run unfinished only for the items the shards do not
    explain."""
    array = run_info.get("shard_array")
    missing = array.get("missing") if isinstance(array, dict) else None
    if not missing or not isinstance(missing, list) or not all(_whole(k) for k in missing):
        return {}
    out: dict[str, object] = {"missing_shards": missing}
    for key, field in (("count", "shard_count"), ("missing_records", "n_missing_shard_records")):
        if _whole(array.get(key)):
            out[field] = array[key]
    return out


def missing_block_items(run_info: dict, n_items: int):
    """Which of the data's ``n_items`` items (in its order) the shards a partial merge left out held: a bool array,
    by eval.sbatch's cut (``eval.judging.shard_array.shard_block``); None when no shard is missing, or when the data
    is not the one the array was cut from (another number of records than run.json's ``shard_array.n_records``)."""
    import numpy as np

    from eval.judging.shard_array import shard_block

    array = run_info.get("shard_array")
    if not missing_shards(run_info) or not _whole(array.get("count")) or not array["count"]:
        return None
    if array.get("n_records") != n_items or not _whole(n_items):
        return None  # one item a record, in order, only where the load kept every record the array cut
    left_out = np.zeros(n_items, dtype=bool)
    for k in array["missing"]:
        first, last = shard_block(k, array["count"], n_items)
        left_out[first - 1:last] = True
    return left_out


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@one_blas_thread()
@older_objects_frozen()  # imports made before score's work are not walked by every full collection again
def score(
    predictions: str | Path,
    data: str | Path | None = None,
    out: str | Path | None = None,
    *,
    target: str = "auto",
    spearman_target: str = "auto",
    bootstrap_unit: str = "item",
    n_boot: int = 1000,
    seed: int = 0,
    vc_repeats: int = 100,
    png: bool = False,
    clip_regression: bool = False,
    wandb_project: str = "",
    name: str = "",
    html_text_items: int | None = None,
    allow_repeated_ids: bool = False,
    alt_test=None,
    ceiling_failures: str = "worst",
    judge_minus_one: str = "score",
) -> Metrics:
    """Score a run against the experts and write the report (and ``report.html``, see ``eval.reports.html_report``).

    Args:
        predictions: ``predictions.jsonl`` or the run folder holding it.
        data: the labelled records; default: the ``data`` recorded in the run's ``run.json``.
        out: output folder; default: the folder of the predictions.
        target: MAE's reference: ``auto`` (mean for regression judges, else mode), ``mode`` or ``mean``.
        spearman_target: the correlations' reference, ``auto`` (the same as MAE's), ``mode`` or ``mean``.
        n_boot, seed, vc_repeats, bootstrap_unit: see ``eval.scoring.item_table.evaluate``.
        png: also draw the PNG plots (matplotlib, ~4 s CPU on the full test; report.html draws the same figures as
            SVG). Always drawn when ``wandb_project`` is set, since W&B shows them.
        clip_regression: score regression (``-r``) judges on their head's value clipped into the scale, instead of
            its raw value (the default, as the paper); named in ``metrics.json``
            (``settings.regression_scores``) and the report.
        wandb_project: log to this W&B project ("" for none).
        name: the judge's label (default: from the predictions).
        html_text_items: items whose full texts ``report.html`` embeds (default:
            ``eval.reports.html_explorer.DEFAULT_TEXT_ITEMS``; negative: all).
        allow_repeated_ids: score each id's first row when an id repeats, instead of refusing the file
            (``eval.judging.predictions.refuse_repeated_ids``).
        alt_test: the validity section's ``eval.validity.alt_test.AltTestSettings`` (default: the authors').
        ceiling_failures: what a judge failure counts as in the experts' ceiling, ``worst`` (its largest error on the
            item's scale) or ``drop`` (left out); ``eval.validity.ceiling``.
        judge_minus_one: a judge's ``-1`` on a scale without it, ``score``d as out of scale or a ``fail``ed verdict
            (``eval.scoring.item_table.fail_minus_one``); named in ``metrics.json`` (``settings.judge_minus_one``).

    Returns:
        The metrics, as ``metrics.json`` reads back (``judge.metrics_json.metrics.Metrics``).

    Raises:
        ValueError: an argument metrics.json cannot record (``eval.input_checks.refuse_score_arguments``), before
            anything is read or written.
    """
    import judge
    import numpy as np

    refuse_score_arguments(judge_minus_one=judge_minus_one, n_boot=n_boot, seed=seed)

    from eval.scoring.pollux_official import (bare_integer_outputs, no_raw_outputs, official_not_computed,
                                               pollux_official)
    from eval.judging.predictions import read_prediction_table, refuse_repeated_ids
    from judge.plumbing.journal import JournalError
    from judge.plumbing.provenance import read_provenance
    from judge.plumbing.config_files import ConfigError
    from judge.plumbing.wandb_login import (no_key_problem, wandb_host_without_a_key, wandb_installed,
                                            wandb_mode_problem)

    predictions = Path(predictions)
    run_dir = predictions if predictions.is_dir() else predictions.parent
    refuse_ranking_folder(predictions, run_dir)  # first: no other flag matters for a folder score cannot read
    # each stops log_wandb after the whole scoring: refused here, before any work
    if wandb_project and not wandb_installed():
        raise ConfigError(f"--wandb-project {wandb_project}: the wandb package is not installed (pip install wandb); "
                          "install it, or leave --wandb-project out")
    if wandb_project and (problem := wandb_mode_problem()) is not None:
        raise ConfigError(f"--wandb-project {wandb_project}: {problem}, or leave --wandb-project out")
    if wandb_project and (host := wandb_host_without_a_key()) is not None:  # wandb.init would stop after the scoring
        raise ConfigError(f"--wandb-project {wandb_project}: {no_key_problem(host)}; set WANDB_API_KEY, or "
                          "WANDB_MODE=offline to log locally, or leave --wandb-project out")
    run_info = read_provenance(run_dir, missing_ok=True)
    config = run_info.get("config") if isinstance(run_info.get("config"), dict) else {}
    data_from_run = not data
    data = data or _data_of_run(run_info, run_dir) or None
    verdict_format = config.get("verdict_format")
    if not data:
        held = (f"{run_dir / 'run.json'} names no data" if (run_dir / "run.json").exists()
                else f"the run folder {run_dir} has no run.json naming the data")
        raise ValueError(f"--data: not given, and {held}; give --data (the labelled records the run judged)")
    out = Path(out) if out else run_dir
    refuse_another_run(out, run_dir)

    # ---- inputs: the predictions as one Arrow table, the records, joined by id into the item table's columns
    try:
        rows = read_prediction_table(predictions)
    except JournalError as err:  # a half row mid-file (an older run's cut write, a hand edit): say what to do
        raise JournalError(f"{err}; mend or delete that line (`judge-eval run` on the same --out then asks its item "
                           "again), or rerun `judge-eval run --overwrite`") from None
    if not allow_repeated_ids:
        refuse_repeated_ids(rows.column("id"), predictions)
    try:
        records, load_report = judge.load_record_columns(data)  # columns, not an object per record
    except FileNotFoundError as err:
        lost = f"{data}: no such file or folder"  # the loader's own words for a path that is not there
        if data_from_run and str(err).startswith(lost):
            # an older run.json names the bundled sample by its path in the install that judged it
            sample = (" sample (the bundled sample of an earlier install: this install's)"
                      if Path(data).parts[-3:] == sample_data_path().parts[-3:] else "")
            raise FileNotFoundError(f"{run_dir / 'run.json'} names --data {data}, which is not here (moved, or "
                                    f"judged on another machine); pass --data{sample}{str(err)[len(lost):]}") from None
        raise
    log.info("%s", load_report.summary())
    if not len(records):  # every figure would be over no items (numpy's broadcasting error deep in the table)
        raise ValueError(f"--data {data}: no records ({load_report.summary()}); nothing to score")
    rows, n_stale = _without_stale(rows, records, predictions, data)
    table, notes = item_table.build_table(records, rows, judge_name=name, clip_regression=clip_regression)
    frozen_from_here()  # the records, predictions and item table live to the end: no full collection walks them again
    if judge_minus_one == "fail" and (failed := item_table.fail_minus_one(table))[1]:
        table, notes["n_minus_one_failed"] = failed
    left_out = missing_block_items(run_info, len(table))
    selection = {**selected_items(run_info, table, data, left_out), **missing_shards(run_info)}
    if notes["n_unknown_ids"]:
        import pyarrow.compute as pc

        if notes["n_unknown_ids"] >= pc.count_distinct(rows.column("id")).as_py():
            # Not an unfinished run (every item would read "no prediction"): the predictions are of other data.
            raise ValueError(f"--predictions {predictions}: none of its {notes['n_unknown_ids']} ids is in --data "
                             f"{data}; these predictions were made on other data")
        log.warning("%d predictions have ids that are not in %s (the first: %r): ignored", notes["n_unknown_ids"],
                    data, notes["first_unknown_id"])
    # The same tests as the paper's metrics: "all" is Zero-Shot + Standard; "unknown" only where some item has it.
    tests = {split: np.flatnonzero(table.split == split) if split != "all" else np.flatnonzero(table.split != "unknown")
             for split in item_table.SPLITS if split != "unknown" or (table.split == split).any()}

    # ---- metrics: every cell of the report, then POLLUX's own evaluator on the same items
    inferred = "integer" if verdict_format is None and bare_integer_outputs(rows) else None
    no_raw = verdict_format != "integer" and no_raw_outputs(rows)
    target = item_table.choose_target(table, target)
    spearman_target = target if spearman_target == "auto" else spearman_target
    derived = item_table.derive(table, target, vc_repeats=vc_repeats, seed=seed, spearman_target=spearman_target)
    # the judge's scores against each item's scale, read once for the confusion matrices and the validity section
    reading = read_scales(table)
    evaluated = item_table.evaluate(table, target=target, n_boot=n_boot, seed=seed, vc_repeats=vc_repeats,
                                    derived=derived, spearman_target=spearman_target,
                                    bootstrap_unit=bootstrap_unit, reading=reading)
    # ---- validity: can the judge stand in for an expert? From the same item table, per test and cell.
    # --n-boot 0 turns its intervals off too; otherwise each is capped (eval/validity/section.py)
    validity = ValiditySettings(seed=seed, n_boot=n_boot, alpha_boot=ValiditySettings.alpha_boot if n_boot else 0,
                                bootstrap_unit=bootstrap_unit, ceiling_failures=ceiling_failures,
                                **({"alt_test": alt_test} if alt_test is not None else {}))
    result = dataclasses.replace(
        evaluated,
        settings=dataclasses.replace(evaluated.settings, regression_scores="clipped" if clip_regression else "raw",
                                     judge_minus_one=judge_minus_one),
        validity=validity_section(table, target, tests, validity, reading), data=_absolute(data),
        predictions=str(predictions.resolve()),
        # n_stale_predictions beside the items' no-prediction counts (n_missing), which the stale rows' items are in
        notes=Notes(**notes, **({"n_stale_predictions": n_stale} if n_stale else {}), **load_report_notes(load_report),
                    **selection, **({"verdict_format_inferred": inferred} if inferred else {}),
                    **({"no_raw_outputs": True} if no_raw else {})),
        # POLLUX's evaluator reads "[RESULT] n" tags: a judge that answers with a bare integer (Pollux-4B-Judge)
        # would read as 0 % format accuracy under a title that presents it as POLLUX's figure. Left out; the
        # report says why. A run with a regression head's scores gets None from pollux_official itself (no POLLUX
        # code puts a head's value through its evaluator; eval.scoring.pollux_official, "Regression").
        # The records whose criteria_score the loader derived from the experts: the records do not say so, the
        # load report does, and POLLUX's section counts them (n_reference_from_experts).
        pollux_official=None if (verdict_format or inferred) == "integer" or no_raw else pollux_official(
            records, rows, tests, derived_references=load_report.derived_criteria_records),
        run=RunInfo.of({**{k: run_info.get(k) for k in ("backend", "model", "prompt_version", "git_revision")},
                        "verdict_format": verdict_format} if run_info else None, where="run.json"),
    )

    if why := official_not_computed(result):
        log.info("POLLUX repository evaluator: %s", why.replace("`", ""))
    # ---- files, all from the item table and the metrics; the folder only now, once every input has been read
    # (a predictions file or --data refused above leaves no empty output folder behind)
    out.mkdir(parents=True, exist_ok=True)
    extra = {"reference": derived.reference, "vc_judge": derived.vc_judge, "vc_experts": derived.vc_experts}
    if derived.spearman_reference is not None and derived.spearman_reference is not derived.reference:
        extra["spearman_reference"] = derived.spearman_reference  # --spearman-target apart: what compare pairs on
    items = item_table.arrow_table(table, extra={**extra, "why_unscored": item_table.why_unscored_labels(derived)})
    item_table.write_arrow(items, out / "items.parquet")
    written = item_table.dumps(result)
    # what compare and rank read back: replaced whole, so that a kill mid-write leaves the earlier file
    write_atomically(out / "metrics.json", (written + "\n").encode("utf-8"))
    # As every reader sees it (NaN written as null reads back as NaN; validity's nulls stay None): from the text
    # just written, not from the disk again
    result = Metrics.from_json(json.loads(written))
    markdown = render_markdown(result)
    write_atomically(out / "report.md", (markdown + "\n").encode("utf-8"))
    explorer = report_items(item_columns(items), records, rows, table.judge_name or "", str(target),
                            DEFAULT_TEXT_ITEMS if html_text_items is None else html_text_items, keys_checked=True)
    write_atomically(out / "report.html", render_report_page(result, explorer).encode("utf-8"))
    log.info("wrote %s", out / "report.html")
    images: list[Path] = write_plots(result, out / "plots") if png or wandb_project else []
    if wandb_project:
        log_wandb(result, markdown, images, wandb_project, out)
    return result

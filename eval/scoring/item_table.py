"""The item table of a run: predictions joined with expert-labelled records, and every metric
cell of the report (Zero-Shot / Standard / all x overall / evaluated model / task type / criterion).

The item table is a set of aligned numpy columns, so the metric cells are index selections over the same
arrays: the 100-fold Verdict Confidence is computed once for all items and averaged per cell.

Why one module of ~1,350 lines: building the columns, deriving the per-item quantities once and selecting every
cell from them share the private ``_Derived`` columns and the scale cache; split apart they would pass those
arrays through public signatures for no reader's gain.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval.scoring import bootstrap, metrics
from eval.scoring.error_codes import code_counts, code_labels
from eval.scoring.interval_options import PERCENTILE_METHOD
from eval.judging.predictions import REQUEST_FAILED
from judge.metrics_json.metrics import (Cell, Confusion, Confusions, Metrics, ModelMeans, ModelMeansRow, Settings,
                                        SplitMetrics, check_vc_repeats)
from judge.records import RowIndex, row_place
from judge.wire_fields import ScoreSource
from judge.verdicts import rationale_cut_short

__all__ = [
    "BOOTSTRAP_UNITS",
    "ItemTable",
    "UNSCORED_REASONS",
    "model_means",
    "why_empty",
    "why_unscored_labels",
    "label_groups",
    "SPLITS",
    "GROUPINGS",
    "JUDGE_MINUS_ONE",
    "MINUS_ONE_FAILED",
    "STATUSES",
    "build_table",
    "first_prediction_rows",
    "id_array",
    "choose_target",
    "evaluate",
    "value_levels",
    "fail_minus_one",
    "write_table",
    "arrow_table",
    "write_arrow",
    "read_table",
]

# Report order of the splits and the groupings; the Spearman correlation is pooled per evaluated model and per
# task type only (the paper: per criterion, 2-5 distinct scores make too many ties).
SPLITS = ("zero_shot", "standard", "unknown", "all")
GROUPINGS = {"model": "model_id", "task_type": "task_type", "criterion": "criteria_name"}
_CORRELATED = {"model", "task_type"}
# Why an item has no score: the judge answered but the verdict did not parse, the request itself failed
# (retried on the next `run`), or there is no prediction for it at all (the run is unfinished, or its --limit or
# --split left the item out).
STATUSES = ("ok", "parse_failed", "request_failed", "missing")
# judge.VerdictError.OUT_OF_SCALE: the error older runs wrote for a number outside the scale (now a scored verdict).
OUT_OF_SCALE = "out_of_scale"
#: What a judge's ``-1`` on a scale without it becomes (``judge-eval score --judge-minus-one``): ``score``d as out of
#: scale like any other number off the scale, or a ``fail``ed verdict (``fail_minus_one``). The paper is silent.
JUDGE_MINUS_ONE = ("score", "fail")
#: The error code of such a ``-1`` under ``--judge-minus-one fail``: its own reason among the failures.
MINUS_ONE_FAILED = "minus_one_off_scale"
#: What the metrics' bootstrap intervals resample (``evaluate``'s ``bootstrap_unit``).
BOOTSTRAP_UNITS = ("item", "instruction")
# The prediction fields build_table reads for every item (the raw output only where an old row is read again).
_TABLE_FIELDS = ["error", "score_source", "score", "parse_ok", "in_scale", "regression_score", "finish_reason",
                 "content_key"]
_OK, _PARSE_FAILED, _REQUEST_FAILED, _MISSING = range(len(STATUSES))


@dataclass
class ItemTable:
    """Aligned per-item columns (numpy arrays of length n; strings are object arrays).

    Attributes:
        ids: item ids.
        judge: the judge's score, NaN where it gave none.
        status: one of STATUSES.
        error: the verdict's error code ("" when ok).
        score_source: where the score came from (a ``judge.ScoreSource`` value; "" when none).
        experts: NaN-padded ``(n, k)`` expert scores.
        split: "zero_shot" or "standard".
        model_id, task_type, task_group, criteria_name: grouping labels.
        judge_name: the judge's label (for report headers).
        in_scale: 1.0 where the judge's score lies within the item's scale, 0.0 outside it (scored all the same,
            as the paper does), NaN where there is no score or no readable scale.
        n_abstained: per item, how many experts abstained (a released ``-1``): not scores, counted.
        expert_ids: the ``(n, k)`` experts' ids parallel to ``experts`` (None where a record names no experts), or
            None when no record names any (the released POLLUX data); read by ``eval.validity``.
        scale_low, scale_high: each item's rubric scale ends (NaN where unreadable); None for a hand-built table.
        best_low: True where the criterion is best at its lowest level (the Critical ones); None: every one on top.
        answer_chars: the evaluated answer's length in characters (the length-bias check); None when unknown.
        instruction_key: per item, a number its instruction's text alone has in this table (the clusters of
            ``evaluate(..., bootstrap_unit="instruction")``); None when unknown (an items.parquet written before it).
        text_key: per item, its prediction's ``content_key``: a digest of the texts the judge was asked about
            (``eval.judging.predictions.record_content_key``: instruction, reference answer, answer, criterion and
            rubric), the same in every run of the same data, so that compare tells two revisions of one item apart;
            None for an item without a prediction or whose prediction predates the key, and the whole column None
            where no item has one (an items.parquet written before it, a hand-built table).
    """

    ids: np.ndarray
    judge: np.ndarray
    status: np.ndarray
    error: np.ndarray
    score_source: np.ndarray
    experts: np.ndarray
    split: np.ndarray
    model_id: np.ndarray
    task_type: np.ndarray
    task_group: np.ndarray
    criteria_name: np.ndarray
    judge_name: str = ""
    in_scale: np.ndarray | None = None
    n_abstained: np.ndarray | None = None
    expert_ids: np.ndarray | None = None
    scale_low: np.ndarray | None = None
    scale_high: np.ndarray | None = None
    best_low: np.ndarray | None = None
    answer_chars: np.ndarray | None = None
    instruction_key: np.ndarray | None = None
    text_key: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.in_scale is None:  # a hand-built table: every score taken as inside its scale
            self.in_scale = np.where(np.isfinite(self.judge), 1.0, np.nan)
        if self.n_abstained is None:
            self.n_abstained = np.zeros(len(self.ids), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, index: np.ndarray) -> ItemTable:
        """The rows at ``index`` (for pairing two runs on shared items)."""
        fields = {name: getattr(self, name)[index] for name in _COLUMNS}
        optional = {name: None if getattr(self, name) is None else getattr(self, name)[index] for name in _OPTIONAL}
        return ItemTable(**fields, **optional, judge_name=self.judge_name)


_COLUMNS = ("ids", "judge", "status", "error", "score_source", "experts", "split", "model_id", "task_type",
            "task_group", "criteria_name", "in_scale", "n_abstained")
_OPTIONAL = ("expert_ids", "scale_low", "scale_high", "best_low", "answer_chars", "instruction_key", "text_key")



def pad_expert_ids(id_lists, width: int) -> np.ndarray | None:
    """The experts' ids as an ``(n, width)`` object matrix beside ``metrics.pad_scores``'s (None-padded), or None
    when no item names its experts."""
    if not any(ids for ids in id_lists):
        return None
    out = np.full((len(id_lists), width), None, dtype=object)
    for i, ids in enumerate(id_lists):
        if ids:
            out[i, :len(ids)] = ids
    return out


# ------------------------------------------------------------------------------------------- the item table


def _best_low(criteria: np.ndarray) -> np.ndarray:
    """Per item, True where its criterion is best at its lowest level (the taxonomy's Critical ones): derived from
    the criteria names alone, so a table read back from items.parquet orients its leniency as the scored one did."""
    import judge

    taxonomy = judge.load_taxonomy()
    best_low_of = {name: taxonomy.is_best_at_lowest(name) for name in set(criteria.tolist()) if name}
    return np.array([best_low_of.get(name, False) for name in criteria.tolist()], dtype=bool)


def _labels(columns) -> tuple[np.ndarray, np.ndarray]:
    """Split and task group of each record, resolved once per group of records ``split_of`` cannot tell apart
    (``judge.split_groups``): ``split_of`` resolves names through the taxonomy, which would cost seconds on the 160k
    items of the full test."""
    import judge

    taxonomy = judge.load_taxonomy()
    spec = judge.load_split_spec()
    key, first = judge.split_groups(columns)
    # An unresolvable task type is its own "unknown" split (unless scored on a held-out criterion: Zero-Shot), shown
    # apart in the report, never Standard.
    representatives = columns.records_at(first)
    splits = np.array([judge.split_of(r, spec, allow_unknown=True) for r in representatives], dtype=object)
    groups_of: dict[tuple[str, str], str] = {}
    for r in representatives:
        if (r.task_type, r.task_subtype) not in groups_of:
            groups_of[r.task_type, r.task_subtype] = _task_group(taxonomy, r.task_type, r.task_subtype)
    groups = np.array([groups_of[r.task_type, r.task_subtype] for r in representatives], dtype=object)
    return splits[key], groups[key]


def _task_group(taxonomy, task_type: str, subtype: str) -> str:
    """The taxonomy's task group (English) of a task type; the task type itself when the taxonomy lacks it."""
    for name in (task_type, subtype):
        if not name:
            continue
        group = taxonomy.canonical_group(name)
        if group is not None:
            return group
        canonical = taxonomy.canonical_task_type(name)
        if canonical is not None:
            return next(t.group for t in taxonomy.tasks if t.task_type == canonical)
    return task_type or "(unknown)"


def id_array(ids, whose: str = "predictions'"):
    """Ids as one Arrow type for a join: text (``pa.string()``), a dictionary-encoded, large or view column decoded
    and whole numbers written as text (``5`` as ``"5"``, as ``str`` writes it; all null stays null); a Python
    sequence of str made into one, as bytes (``pa.binary()``, the str's own code points, a lone surrogate too) where
    one has no UTF-8.

    Raises:
        ValueError: ``id: the <whose> ids are <type>, not text``, for any other type.
    """
    import pyarrow as pa

    if not isinstance(ids, (pa.Array, pa.ChunkedArray)):
        texts = [str(v) for v in ids]
        try:
            return pa.array(texts, type=pa.string())
        except UnicodeEncodeError:
            return pa.array([v.encode("utf-8", "surrogatepass") for v in texts], type=pa.binary())
    kind = ids.type.value_type if pa.types.is_dictionary(ids.type) else ids.type
    if pa.types.is_binary(kind):
        return ids.cast(pa.binary())
    # string_view came with pyarrow 16; pyproject allows 14, whose columns are never of that type.
    is_string_view = getattr(pa.types, "is_string_view", lambda _: False)
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or is_string_view(kind)
            or pa.types.is_integer(kind) or pa.types.is_null(kind)):
        raise ValueError(f"id: the {whose} ids are {ids.type}, not text")
    return ids.cast(pa.string())


def _joinable(record_ids, prediction_ids):
    """Both sides through ``id_array``, then of one type: where one is bytes (a lone surrogate), both as bytes (text
    as its UTF-8)."""
    import pyarrow as pa

    record_ids, prediction_ids = id_array(record_ids, "records'"), id_array(prediction_ids)
    if record_ids.type != prediction_ids.type:
        record_ids, prediction_ids = record_ids.cast(pa.binary()), prediction_ids.cast(pa.binary())
    return record_ids, prediction_ids


def first_prediction_rows(record_ids, prediction_ids) -> tuple[np.ndarray, np.ndarray]:
    """Each record's prediction row, the first of its id as `run`'s resume keeps it, by Arrow's hash join
    (``index_in`` gives a value's first position in the value set), not a Python dict of every id.

    Args:
        record_ids, prediction_ids: Arrow arrays (chunked or not) or sequences of str, each made one type by
            ``id_array`` (text of any Arrow text type, dictionary-encoded or whole numbers; bytes where a str has
            no UTF-8), the two the same.

    Returns:
        ``(match, first_rows)``: per record the position of its id's first row (-1: none), and each distinct
        prediction id's first row, ascending (the predictions' order).

    Raises:
        ValueError: ids of another type (``id_array``), naming the field.
    """
    import pyarrow.compute as pc

    record_ids, prediction_ids = _joinable(record_ids, prediction_ids)
    own = pc.index_in(prediction_ids, value_set=prediction_ids).to_numpy(zero_copy_only=False)
    first_rows = np.flatnonzero(own == np.arange(len(own)))
    match = pc.index_in(record_ids, value_set=prediction_ids).fill_null(-1).to_numpy(zero_copy_only=False)
    return match.astype(np.int64), first_rows


def build_table(records, predictions, judge_name: str = "", clip_regression: bool = False) -> tuple[ItemTable, dict]:
    """Join records (the expert labels) with a run's predictions by id, column-wise.

    A regression head's score (``score_source`` ``regression_head``) is its raw value (``regression_score``), as
    the paper scores it: judge-serve clips the head into the scale for ``score``, which would
    hide the low scores the paper finds regression judges give. ``in_scale`` says whether that raw value lies
    within the scale, whichever value is scored.

    Args:
        records: the labelled records: ``judge.RecordColumns`` (``judge.load_record_columns``) or a ``JudgeRecord``
            list.
        predictions: the run's prediction table (``eval.judging.predictions.read_prediction_table``), or prediction rows
            (dicts, made into that table by ``eval.judging.predictions.prediction_table``); its ids of any type
            ``id_array`` takes.
        judge_name: label for reports; default: the most frequent ``judge`` of the predictions.
        clip_regression: score a regression head's value clipped into the scale (the row's ``score``) instead of
            its raw value (``judge-eval score --clip-regression``; a choice of this toolkit, not the paper's).

    Returns:
        ``(table, notes)``: the table over all records (items without a prediction have status "missing"), and
        notes counting predictions whose id is not in the data (``n_unknown_ids``, ignored; the first of them in
        the predictions' order, ``first_unknown_id``, when any), repeated ids, the
        scored items whose rubric has no readable scale (``n_no_scale``, when any) and those a regression head scored
        on a rationale ``max_tokens`` cut (``n_cut_scored``, when any; rows written before predictions kept their
        ``finish_reason`` read as null, so never as cut).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from eval.judging.predictions import prediction_rows, prediction_table
    from judge.record_columns import as_columns

    columns = as_columns(records)
    if not isinstance(predictions, pa.Table):
        predictions = prediction_table(predictions)
    # The first row of each id counts, as in `run`'s resume: its position in the predictions, per record.
    record_ids, prediction_ids = _joinable(columns.ids, predictions.column("id"))
    match, first_rows = first_prediction_rows(record_ids, prediction_ids)
    repeated = predictions.num_rows - len(first_rows)
    n = len(columns)
    found = match >= 0
    # Only the fields read here are taken: the outputs and rationales are most of a run's bytes.
    rows = predictions.select(_TABLE_FIELDS).take(pa.array(match[found]))

    def column(name: str, kind=None) -> np.ndarray:
        """The matched rows' values of ``name`` at the records' positions (None / NaN for the unmatched)."""
        values = rows.column(name)
        if kind is float:
            out = np.full(n, np.nan)
            out[found] = values.to_numpy(zero_copy_only=False).astype(np.float64)
        else:
            out = np.full(n, None, dtype=object)
            out[found] = values.to_pylist()
        return out

    error, source, text_key = column("error"), column("score_source"), column("content_key")
    rescue = np.flatnonzero(error == OUT_OF_SCALE)
    if len(rescue):
        raw_outputs = predictions.column("raw_output").take(pa.array(match[rescue])).to_pylist()
        rescue = rescue[[bool(v) for v in raw_outputs]]
    scores, parse_ok, row_in_scale = column("score", float), column("parse_ok"), column("in_scale")
    scales = _ScaleCache()
    rubrics = columns.text("rubrics")
    if len(rescue):
        # Written before out-of-scale numbers were scored (they were parse failures then): read them again.
        whole = prediction_rows(predictions.take(pa.array(match[rescue])))
        for i, row in zip(rescue.tolist(), whole):
            row = _reparse(row, rubrics[i], scales)
            scores[i] = np.nan if row["score"] is None else float(row["score"])
            parse_ok[i], error[i], row_in_scale[i] = row["parse_ok"], row["error"], row["in_scale"]
            source[i] = row["score_source"]
    # A parse failure is a value, never a score: whatever `score` says, it is not used.
    ok = found & (parse_ok == True) & np.isfinite(scores)  # noqa: E712 (an object array of True/False/None)
    request_failed = found & ~ok & (error == REQUEST_FAILED)
    code = np.where(ok, _OK, np.where(request_failed, _REQUEST_FAILED, np.where(found, _PARSE_FAILED, _MISSING)))
    judge_scores = np.where(ok, scores, np.nan)
    raw = column("regression_score", float)
    from_head = ok & (source == ScoreSource.REGRESSION_HEAD) & np.isfinite(raw)
    answered = np.where(from_head, raw, judge_scores)  # the judge's own value: a head's raw one
    if not clip_regression:
        judge_scores = answered
    # The item's own rubric decides (whatever the server resolved); the row's flag when it has no readable scale.
    low, high = _scale_bounds(rubrics.tolist(), scales)
    with np.errstate(invalid="ignore"):
        inside = np.where(np.isnan(low), np.nan, ((low <= answered) & (answered <= high)).astype(float))
    no_scale = ok & np.isnan(low)
    inside[no_scale] = [np.nan if flag is None else float(bool(flag)) for flag in row_in_scale[no_scale]]
    in_scale = np.where(ok, inside, np.nan)
    splits, groups = _labels(columns)
    names = Counter(predictions.column("judge").take(pa.array(first_rows)).to_pylist())
    names = Counter({name or "": count for name, count in names.items()})  # None and "" are one label
    label = judge_name or (max(names, key=names.__getitem__) if names else "")

    experts = columns.expert_matrix()
    criteria = columns.text("criteria_name")
    table = ItemTable(
        ids=np.array(columns.ids, dtype=object),
        judge=judge_scores,
        status=np.array(STATUSES, dtype=object)[code],
        error=np.where(found, [e or "" for e in error], "").astype(object),
        score_source=np.where(found, [s or "" for s in source], "").astype(object),
        experts=experts,
        split=splits,
        model_id=columns.text("model_id"),
        task_type=columns.text("task_type"),
        task_group=groups,
        criteria_name=criteria,
        judge_name=label,
        in_scale=in_scale,
        # Abstentions as the loader counts them (judge.JudgeRecord.n_abstained, released -1 scores).
        n_abstained=columns.n_abstained,
        expert_ids=columns.expert_id_matrix(),
        scale_low=low,
        scale_high=high,
        best_low=_best_low(criteria),
        answer_chars=columns.text_lengths("answer"),
        instruction_key=columns.distinct(["instruction"])[0],
        # what the judge was sent (the stale check has dropped a row whose key is not its record's now)
        text_key=text_key if np.not_equal(text_key, None).any() else None,
    )
    # the ids (each once, at its first row) that no record has
    unknown = first_rows[~pc.is_in(prediction_ids.take(pa.array(first_rows)), value_set=record_ids)
                         .to_numpy(zero_copy_only=False)]
    notes = {"n_unknown_ids": len(unknown), "n_repeated_ids": repeated}
    if len(unknown):  # the first in the predictions' order, for the reports to name (``notes.first_unknown_id``)
        first_unknown = prediction_ids[int(unknown[0])].as_py()
        if isinstance(first_unknown, bytes):  # a lone surrogate's bytes as that str; bytes of no UTF-8 as \xff
            try:
                first_unknown = first_unknown.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                first_unknown = first_unknown.decode("utf-8", "backslashreplace")
        notes["first_unknown_id"] = str(first_unknown)
    without_raw = ok & (source == ScoreSource.REGRESSION_HEAD) & ~np.isfinite(raw)
    if from_head.any() or without_raw.any():
        # How many of the head's raw values fell outside their scale (they are clipped only with clip_regression),
        # and how many rows (written before predictions kept the raw value) had only judge-serve's clipped score.
        notes["n_regression_scores"] = int(from_head.sum())
        notes["n_regression_out_of_scale"] = int((from_head & (inside == 0.0)).sum())
    if without_raw.any():
        notes["n_regression_without_raw"] = int(without_raw.sum())
    if len(rescue):
        notes["n_out_of_scale_reparsed"] = len(rescue)
    # A head's score on a rationale max_tokens cut before a tag closed it (cut_rationale: score keeps it, as POLLUX
    # does): a scored row like any other, so only this count says how many figures rest on an unfinished rationale
    # (eval.reports.notes). Read as judge-serve and the run read it (judge.verdicts.rationale_cut_short), from the
    # outputs of the rows the length limit stopped only.
    stopped = np.flatnonzero(ok & (source == ScoreSource.REGRESSION_HEAD) & (column("finish_reason") == "length"))
    if len(stopped):
        outputs = predictions.column("raw_output").take(pa.array(match[stopped])).to_pylist()
        if n_cut_scored := sum(rationale_cut_short(text, "length") for text in outputs):
            notes["n_cut_scored"] = n_cut_scored
    if no_scale.any():  # their scores count as in scale (n_out_of_scale cannot flag them): said, not left silent
        notes["n_no_scale"] = int(no_scale.sum())
    return table, notes


def _scale_bounds(rubrics: list[str], scales: _ScaleCache) -> tuple[np.ndarray, np.ndarray]:
    """Each item's scale minimum and maximum (NaN where its rubric has no readable scale), one parse per rubric."""
    number = {text: k for k, text in enumerate(dict.fromkeys(rubrics))}
    bounds = np.full((len(number) + 1, 2), np.nan)
    for text, k in number.items():
        scale = scales.get(text)
        if scale is not None:
            bounds[k] = scale.min, scale.max
    index = np.fromiter(map(number.__getitem__, rubrics), dtype=np.intp, count=len(rubrics))
    return bounds[index, 0], bounds[index, 1]


class _ScaleCache:
    """``judge.scale_of`` per distinct rubric text (None when unreadable): 160k items share a few hundred rubrics."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def get(self, rubrics: str):
        if rubrics not in self._cache:
            import judge

            try:
                self._cache[rubrics] = judge.scale_of(rubrics)
            except judge.ScaleError:
                self._cache[rubrics] = None
        return self._cache[rubrics]


def _reparse(row: Mapping[str, Any], rubrics: str, scales: _ScaleCache) -> dict[str, Any]:
    """A prediction row whose verdict an older parser refused as out of scale, parsed again (now scored)."""
    import judge

    # lenient: the old parser checked [END] before the range, so a row refused for its range parses either way.
    verdict = judge.parse_verdict(row["raw_output"], scale=scales.get(rubrics), lenient=True)
    if not verdict.ok:  # cannot happen for a row refused only for its range; keep the row's own failure then
        return dict(row)
    return {**row, "score": verdict.score, "parse_ok": True, "error": None, "in_scale": verdict.in_scale,
            "score_source": row.get("score_source") or ScoreSource.VERDICT}


def fail_minus_one(table: ItemTable) -> tuple[ItemTable, int]:
    """``table`` with every judge's ``-1`` on a scale without it a failed verdict (status ``parse_failed``, error
    ``MINUS_ONE_FAILED``, no score), and how many: ``judge-eval score --judge-minus-one fail``. The ``-1`` is the
    release's code for an expert's abstention, which the paper does not say a judge may write; so failed, it is
    counted in ``n_failed`` and the failures by code, and in no MAE or correlation."""
    hit = (table.status == "ok") & (table.in_scale == 0.0) & (table.judge == -1.0)
    if not hit.any():
        return table, 0
    status, error, source = table.status.copy(), table.error.copy(), table.score_source.copy()
    judge_scores, in_scale = table.judge.copy(), table.in_scale.copy()
    status[hit], error[hit], source[hit], judge_scores[hit], in_scale[hit] = (
        "parse_failed", MINUS_ONE_FAILED, "", np.nan, np.nan)
    return dataclasses.replace(table, status=status, error=error, score_source=source, judge=judge_scores,
                               in_scale=in_scale), int(hit.sum())


def choose_target(table: ItemTable, target: str = "auto") -> str:
    """The reference the judge is compared with: ``"mode"`` of the experts, or ``"mean"`` for regression judges.

    ``auto`` picks ``mean`` when most of the run's scores come from a regression head (``score_source``
    ``regression_head``, as judge-serve reports it).
    """
    if target in ("mode", "mean"):
        return target
    if target != "auto":
        raise ValueError(f"target must be auto, mode or mean, got {target!r}")
    sources = table.score_source[table.status == "ok"].astype(str)
    return "mean" if len(sources) and np.mean(sources == ScoreSource.REGRESSION_HEAD) > 0.5 else "mode"


def write_table(table: ItemTable, path: str | Path, extra: Mapping[str, np.ndarray] | None = None) -> Path:
    """Save the item table as Parquet (``compare`` pairs runs from it without reloading the data)."""
    return write_arrow(arrow_table(table, extra), path)


def write_arrow(items, path: str | Path) -> Path:
    """Write ``arrow_table``'s table as ``items.parquet``, replacing it whole (``judge.plumbing.atomic_write``): a
    re-score stopped mid-write (Ctrl-C, a full disk) leaves the earlier file, never a truncated one compare cannot
    read."""
    import pyarrow.parquet as pq

    from judge.plumbing.atomic_write import write_atomically

    return write_atomically(Path(path), lambda handle: pq.write_table(items, handle))


def arrow_table(table: ItemTable, extra: Mapping[str, np.ndarray] | None = None):
    """The item table as the Arrow table ``write_table`` writes (``extra``: more per-item columns after its own)."""
    import pyarrow as pa

    # A list column from flat values and row offsets (scores sit first in each padded row), not 160k Python lists.
    valid = ~np.isnan(table.experts)
    offsets = np.r_[0, np.cumsum(valid.sum(axis=1))].astype(np.int32)
    experts = pa.ListArray.from_arrays(pa.array(offsets), pa.array(table.experts[valid]))
    # numpy columns straight to Arrow (the same types and values as from their lists, without a list of 160k)
    columns = {
        "id": pa.array(table.ids),
        "judge_score": pa.array(table.judge),
        "status": pa.array(table.status),
        "error": pa.array(table.error),
        "score_source": pa.array(table.score_source),
        "expert_scores": experts,
        "split": pa.array(table.split),
        "model_id": pa.array(table.model_id),
        "task_type": pa.array(table.task_type),
        "task_group": pa.array(table.task_group),
        "criteria_name": pa.array(table.criteria_name),
        # true / false for a scored item (false: outside its scale, scored as the paper does), null otherwise
        "in_scale": pa.array(np.where(np.isnan(table.in_scale), False, table.in_scale == 1.0),
                             mask=np.isnan(table.in_scale)),
        "n_abstained": pa.array(np.asarray(table.n_abstained, dtype=np.int64)),
    }
    if table.instruction_key is not None:  # `compare --bootstrap-unit instruction` resamples by it
        columns["instruction_key"] = pa.array(np.asarray(table.instruction_key, dtype=np.int64))
    if table.text_key is not None:  # compare refuses to pair two runs' items judged on other texts
        columns["text_key"] = pa.array(table.text_key, type=pa.string())
    if table.scale_low is not None and table.scale_high is not None:  # compare's paired validity reads the item's
        # own scale, as score's section did, not the widest of its criterion's scales (null: unreadable)
        for name in ("scale_low", "scale_high"):
            values = np.asarray(getattr(table, name), dtype=np.float64)
            columns[name] = pa.array(values, mask=np.isnan(values))
    if table.answer_chars is not None:  # compare refuses to pair two runs' items whose answers differ in length
        chars = np.asarray(table.answer_chars, dtype=np.float64)
        columns["answer_chars"] = pa.array(np.nan_to_num(chars).astype(np.int64), mask=np.isnan(chars))
    if table.expert_ids is not None:  # beside expert_scores, one id per score (null: a record naming no experts)
        columns["expert_ids"] = pa.ListArray.from_arrays(pa.array(offsets), pa.array(table.expert_ids[valid],
                                                                                     type=pa.string()))
    for name, values in (extra or {}).items():
        values = np.asarray(values)
        # float64, int64 and object (texts) straight from numpy, the types their lists give; any other as a list: a
        # narrow numpy type (float32, int8) would change the file's schema, as would an empty column (its list is
        # null-typed) or a 2-D one (its nested lists are a list column; numpy's 2-D array Arrow refuses)
        numpy_ok = values.ndim == 1 and len(values) and values.dtype in (np.float64, np.int64, object)
        columns[name] = pa.array(values) if numpy_ok else values.tolist()
    arrow = pa.table(columns)
    return arrow.replace_schema_metadata({"judge_name": table.judge_name})


#: ``items.parquet``'s columns every reader needs, and the Arrow types each typed column may have (a file written by
#: another tool or damaged by hand is refused naming the column, not met as a KeyError or numpy's conversion error).
_REQUIRED_COLUMNS = ("id", "judge_score", "status", "error", "score_source", "expert_scores", "split", "model_id",
                     "task_type", "task_group", "criteria_name")


def _column_type_error(name: str, kind) -> str | None:
    """What is wrong with column ``name`` of Arrow type ``kind`` (None: nothing)."""
    import pyarrow as pa

    def number(t):
        return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)

    def text(t):
        return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)

    def listed(test):
        return lambda t: pa.types.is_null(t) or (pa.types.is_list(t) or pa.types.is_large_list(t)) and test(t.value_type)

    expected = {"judge_score": (number, "numbers"), "n_abstained": (pa.types.is_integer, "integers"),
                "instruction_key": (pa.types.is_integer, "integers"), "text_key": (text, "strings"),
                "answer_chars": (pa.types.is_integer, "integers"),
                "in_scale": (lambda t: pa.types.is_boolean(t) or number(t), "booleans"),
                "expert_scores": (listed(number), "lists of numbers"), "expert_ids": (listed(text), "lists of strings"),
                **{name: (text, "strings") for name in _REQUIRED_COLUMNS if name not in ("judge_score", "expert_scores")}}
    test, what = expected.get(name, (lambda t: number(t) or pa.types.is_boolean(t), "numbers"))
    return None if test(kind) else f"expected {what}, got {kind}"


def _expert_ids_suspect(arrow) -> bool:
    """Whether some row's ``expert_ids`` may break ``_check_expert_ids``'s rule, tested on the columns (a pass over
    160,000 rows in Python is a quarter of a second, paid on every table compare reads)."""
    import pandas as pd
    import pyarrow.compute as pc

    ids, scores = (arrow.column(name).combine_chunks() for name in ("expert_ids", "expert_scores"))
    n = arrow.num_rows
    flat, parents = pc.list_flatten(ids), pc.list_parent_indices(ids).to_numpy()
    named = np.asarray(flat.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    per_row = np.bincount(parents[named], minlength=n)
    lengths = [np.nan_to_num(pc.list_value_length(c).to_numpy(zero_copy_only=False).astype(float), nan=0.0)
               for c in (ids, scores)]
    if np.any((per_row > 0) & ((per_row != lengths[0]) | (lengths[0] != lengths[1]))):
        return True
    codes = pd.factorize(np.asarray(flat.filter(named).to_numpy(zero_copy_only=False), dtype=object))[0]
    keys = parents[named].astype(np.int64) * (int(codes.max(initial=0)) + 1) + codes
    return len(np.unique(keys)) != len(keys)


def _check_expert_ids(path: str | Path, data: dict[str, list]) -> None:
    """Each row's ids as the record loaders accept them (``judge.records``): one per expert score, all null (a record
    naming no experts) or none, no id twice. A table another tool wrote or edited may break this, and the validity
    figures would then compare an expert with itself, or fail deep in numpy without naming the row."""
    for row, (item, ids, scores) in enumerate(zip(data["id"], data["expert_ids"], data["expert_scores"])):
        if ids is None or all(i is None for i in ids):
            continue
        named = [i for i in ids if i is not None]
        problem = (f"{len(ids)} ids for {len(scores or ())} expert scores" if len(ids) != len(scores or ()) else
                   "some ids are null and others are not" if len(named) != len(ids) else
                   f"id {next(i for i in named if named.count(i) > 1)!r} given twice" if len(set(named)) != len(named)
                   else None)
        if problem:
            raise ValueError(f"{path}: {row_place(RowIndex(row))} (id {item!r}): column expert_ids: {problem} (not an "
                             "items.parquet written by judge-eval score)")


# The extra columns compare pairs runs on (NaN: the item has none; an infinity is no score any run writes).
_FINITE_OR_NAN_COLUMNS = ("reference", "spearman_reference", "vc_judge")


def _check_scores(path: str | Path, arrow) -> None:
    """Refuse a null ``expert_scores`` row, a null, NaN or infinite expert score, or an infinite ``reference``,
    ``spearman_reference`` or ``vc_judge``, naming the first such row. ``write_table`` writes none of these; read
    from a table another tool wrote, a null row fails deep in numpy, and a null inside a row becomes a NaN that
    breaks the "valid scores first" layout ``metrics.verdict_confidence_judge`` draws from. Column-wise (a pass
    over 160,000 rows in Python would be paid on every table compare reads)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    scores = arrow.column("expert_scores").combine_chunks()
    null_rows = np.flatnonzero(np.asarray(scores.is_null().to_numpy(zero_copy_only=False), dtype=bool))
    flat = pc.list_flatten(scores).cast(pa.float64()).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(scores).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(~np.isfinite(flat))
    problems = []  # (row, column, what)
    if len(null_rows):
        problems.append((int(null_rows[0]), "expert_scores", "null (a list of scores, empty for none, expected)"))
    if len(bad):
        row = int(parents[bad[0]])
        position = int(bad[0] - np.searchsorted(parents, row))
        value = "null or NaN" if np.isnan(flat[bad[0]]) else f"{flat[bad[0]]}"
        problems.append((row, "expert_scores", f"score {position} is {value} (finite scores expected)"))
    for name in _FINITE_OR_NAN_COLUMNS:
        if name in arrow.column_names:
            values = arrow.column(name).combine_chunks()
            if pa.types.is_floating(values.type):
                infinite = np.flatnonzero(np.isinf(values.to_numpy(zero_copy_only=False)))
                if len(infinite):
                    problems.append((int(infinite[0]), name, "infinite (a finite number or NaN expected)"))
    _refuse_row(path, arrow, problems)


#: The values of the ``split`` column: ``SPLITS`` but "all", which is their union, never an item's.
_ITEM_SPLITS = tuple(split for split in SPLITS if split != "all")


def _check_item_columns(path: str | Path, arrow) -> None:
    """Refuse a null ``n_abstained`` or ``instruction_key`` (integers numpy cannot hold a null in: the read would
    fail in ``np.array``) and a ``split`` that is not one of ``_ITEM_SPLITS`` (a ``Standard`` would put
    the item in no test, and compare would find the runs sharing none), naming the first such row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    problems = []  # (row, column, what)
    for name in ("n_abstained", "instruction_key"):
        if name in arrow.column_names and arrow.column(name).null_count:
            nulls = arrow.column(name).combine_chunks().is_null().to_numpy(zero_copy_only=False)
            problems.append((int(np.flatnonzero(nulls)[0]), name, "null (an integer expected)"))
    split = arrow.column("split").combine_chunks().cast(pa.string())  # a column of nulls too
    known = pc.is_in(split, value_set=pa.array(_ITEM_SPLITS)).fill_null(False)
    if not pc.all(known).as_py():
        row = int(np.flatnonzero(~np.asarray(known.to_numpy(zero_copy_only=False), dtype=bool))[0])
        problems.append((row, "split", f"{split[row].as_py()!r} is not one of {', '.join(_ITEM_SPLITS)}"))
    _refuse_row(path, arrow, problems)


def _refuse_row(path: str | Path, arrow, problems: list[tuple[int, str, str]]) -> None:
    """Raise for the first of ``problems`` (row, column, what) by row, naming the file, the row, its id and the
    column; nothing when there are none."""
    if problems:
        row, name, what = min(problems)
        item = arrow.column("id")[row].as_py()
        raise ValueError(f"{path}: {row_place(RowIndex(row))} (id {item!r}): column {name}: {what} (not an "
                         "items.parquet written by judge-eval score)")


def read_table(path: str | Path) -> tuple[ItemTable, dict[str, np.ndarray]]:
    """Read an item table written by ``write_table``.

    Returns:
        ``(table, extra)``: the table and the extra per-item columns written beside it.

    Raises:
        ValueError: a file that is not Parquet (truncated, another format), lacks a column or holds one of another
            type, naming the file and the column; or repeats an id, naming the first repeated; or a row's
            ``expert_ids`` that do not pair one to one with its expert scores, naming the row; or a null
            ``expert_scores`` row, a null, NaN or infinite expert score, an infinite ``reference``,
            ``spearman_reference`` or ``vc_judge``, a null ``n_abstained`` or ``instruction_key``, or a ``split``
            that is not one of ``_ITEM_SPLITS``, naming the row, its id and the column.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        arrow = pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        if isinstance(err, OSError) and not isinstance(err, pa.ArrowException) and err.errno is not None:
            raise  # the file system's error (no permission): its own words name the file
        why = str(err).replace(f"Could not open Parquet input source '{path}': ", "")  # the path said once
        raise ValueError(f"{path}: not a readable Parquet file ({why or type(err).__name__})") from None
    missing = [name for name in _REQUIRED_COLUMNS if name not in arrow.column_names]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} (not an items.parquet written by judge-eval score)")
    for field in arrow.schema:
        if field.name != "why_unscored" and (problem := _column_type_error(field.name, field.type)):
            raise ValueError(f"{path}: column {field.name}: {problem}")
    _check_scores(path, arrow)
    _check_item_columns(path, arrow)
    data = arrow.to_pydict()
    meta = arrow.schema.metadata or {}
    # score writes each id once; a table joined or appended by another tool may not, and a repeated id would pair
    # one run's item with another's row (or index past the table) wherever two tables are matched by id
    # (both checks column-wise first, a Python pass over the rows only to name the first bad one)
    import pyarrow.compute as pc

    if pc.count_distinct(arrow.column("id").cast(pa.string())).as_py() != arrow.num_rows:
        seen: set[str] = set()
        for item in map(str, data["id"]):
            if item in seen:
                raise ValueError(f"{path}: id {item!r} appears more than once (not an items.parquet written by "
                                 "judge-eval score, which writes each item once)")
            seen.add(item)
    if "expert_ids" in data and _expert_ids_suspect(arrow):
        _check_expert_ids(path, data)

    def strings(name: str) -> np.ndarray:
        return np.array(data[name], dtype=object)

    table = ItemTable(
        ids=strings("id"),
        judge=np.array([np.nan if v is None else v for v in data["judge_score"]], dtype=np.float64),
        status=strings("status"),
        error=strings("error"),
        score_source=strings("score_source"),
        experts=metrics.pad_scores(data["expert_scores"]),
        split=strings("split"),
        model_id=strings("model_id"),
        task_type=strings("task_type"),
        task_group=strings("task_group"),
        criteria_name=strings("criteria_name"),
        # not a column: derived from the names as the scored table derived it (compare's paired leniency reads it)
        best_low=_best_low(strings("criteria_name")),
        judge_name=meta.get(b"judge_name", b"").decode("utf-8"),
        # Tables written before these columns existed: every score in scale, no abstentions.
        in_scale=(np.array([np.nan if v is None else float(v) for v in data["in_scale"]], dtype=np.float64)
                  if "in_scale" in data else None),
        n_abstained=np.array(data["n_abstained"], dtype=np.int64) if "n_abstained" in data else None,
        expert_ids=(pad_expert_ids(data["expert_ids"], max(map(len, data["expert_scores"]), default=0))
                    if "expert_ids" in data else None),
        instruction_key=np.array(data["instruction_key"], dtype=np.int64) if "instruction_key" in data else None,
        text_key=np.array(data["text_key"], dtype=object) if "text_key" in data else None,
        answer_chars=(np.array([np.nan if v is None else v for v in data["answer_chars"]], dtype=np.float64)
                      if "answer_chars" in data else None),  # None: a table written before it was kept
        # Tables written before the scales were kept: compare falls back to the criterion's widest scale.
        **{name: np.array([np.nan if v is None else v for v in data[name]], dtype=np.float64)
           for name in ("scale_low", "scale_high") if "scale_low" in data and "scale_high" in data},
    )
    known = {"id", "judge_score", "status", "error", "score_source", "expert_scores", "split", "model_id",
             "task_type", "task_group", "criteria_name", "in_scale", "n_abstained", "expert_ids", "instruction_key",
             "text_key", "scale_low", "scale_high", "answer_chars"}
    extra = {name: np.array([np.nan if v is None else v for v in values], dtype=np.float64)
             for name, values in data.items() if name not in known and name != "why_unscored"}
    return table, extra


# ---------------------------------------------------------------------------------------------- the cells


@dataclass
class _Derived:
    """Per-item quantities every cell reads: computed once per table."""

    status: np.ndarray
    reference: np.ndarray
    mode: np.ndarray
    unique_mode: np.ndarray
    has_experts: np.ndarray
    vc_judge: np.ndarray
    vc_experts: np.ndarray
    expert_mean: np.ndarray
    why_unscored: np.ndarray
    #: the reference of the correlations (Spearman, Pearson, Kendall): ``reference`` itself unless chosen apart.
    spearman_reference: np.ndarray | None = None


# Why an item has no (judge score, reference) pair, in the order the reasons are checked; an item gets the first
# that applies. "all_experts_abstained": every expert said the criterion does not apply (a released -1): the item
# is unlabelled, not an error. "no_expert_scores": unlabelled data. "no_unique_mode": the experts tie (the paper
# excludes such items, arXiv 2505.24616v3, Appendix D.2.1).
UNSCORED_REASONS = ("no_prediction", "request_failed", "parse_failed", "all_experts_abstained", "no_expert_scores",
                    "no_unique_mode")
_REASON_TEXT = {
    # an unfinished run's, or one its own --limit or --split left out (the note under the summary says which)
    "no_prediction": "no prediction (an unfinished run, or outside its --limit or --split)",
    "request_failed": "the request failed (retried by the next `run`)",
    # every answered row without a score: the judge's text read no verdict, or its prompt was too long for the
    # judge's context (judge.VerdictError.CONTEXT_LENGTH_EXCEEDED, the final row `run` writes for it); ABORTED and
    # ENGINE_REFUSED, judge-serve's /v1/judge result codes, reach a predictions file only from another writer: `run`
    # writes request_failed for them instead (an aborted generation after its retries, a refusal at once).
    "parse_failed": ("no verdict (an answer unparsed or cut; a prompt too long for the judge's context: "
                     "context_length_exceeded; in predictions written elsewhere, a generation judge-serve's engine "
                     "aborted or a judgment it refused: aborted, engine_refused, which judge-eval run never writes, as "
                     "it writes request_failed for them; or a -1 failed by --judge-minus-one fail: report.md's 'Failures by reason' "
                     "says which)"),
    "all_experts_abstained": "every expert abstained (unlabelled, not an error)",
    "no_expert_scores": "no expert scores (unlabelled)",
    "no_unique_mode": "the experts have no unique mode",
}


def derive(table: ItemTable, target: str, vc_repeats: int = 100, seed: int = 0,
           spearman_target: str | None = None) -> _Derived:
    """The reference score, unique-mode mask and both Verdict Confidences of every item.

    Args:
        spearman_target: ``mode`` or ``mean``, the correlations' reference when it differs from ``target`` (MAE's);
            None: the same as MAE's.

    Raises:
        ValueError: ``vc_repeats`` outside 1..``MAX_VC_REPEATS``, before any draw (a billion ran for hours).
    """
    try:
        check_vc_repeats(vc_repeats)
    except ValueError as err:
        raise ValueError(f"vc_repeats: {err}") from None
    mode, unique = metrics.expert_mode(table.experts)
    reference = mode if target == "mode" else metrics.expert_mean(table.experts)
    # Integer status codes (index into STATUSES): comparisons on object arrays would dominate the cell loop.
    status = np.zeros(len(table), dtype=np.int8)
    for code, name in enumerate(STATUSES):
        status[table.status == name] = code
    has_experts = (~np.isnan(table.experts)).any(axis=1)
    # Reason codes: 0 = scored, 1 + index into UNSCORED_REASONS otherwise (assigned last reason first, so the first
    # applicable reason wins).
    why = np.zeros(len(table), dtype=np.int8)
    conditions = [
        status == _MISSING,
        status == _REQUEST_FAILED,
        status == _PARSE_FAILED,
        ~has_experts & (np.asarray(table.n_abstained) > 0),
        ~has_experts,
        ~np.isfinite(reference),
    ]
    for code in range(len(conditions) - 1, -1, -1):
        why[conditions[code]] = code + 1
    return _Derived(
        status=status,
        reference=reference,
        mode=mode,
        unique_mode=unique,
        has_experts=has_experts,
        vc_judge=metrics.verdict_confidence_judge(table.experts, table.judge, repeats=vc_repeats, seed=seed,
                                                  keys=metrics.item_keys(table.ids)),
        vc_experts=metrics.verdict_confidence_experts(table.experts),
        expert_mean=reference if target == "mean" else metrics.expert_mean(table.experts),
        why_unscored=why,
        spearman_reference=(reference if spearman_target in (None, target)
                            else mode if spearman_target == "mode" else metrics.expert_mean(table.experts)),
    )


def why_unscored_labels(derived: _Derived) -> np.ndarray:
    """Per item, why it has no (judge, reference) pair ("" when it has one): the items.parquet column."""
    labels = np.array(("",) + UNSCORED_REASONS, dtype=object)
    return labels[derived.why_unscored]


def why_empty(counts: Mapping[str, int]) -> str:
    """A sentence saying why a cell has no scored item, from its counts per reason."""
    parts = [f"{n} {_REASON_TEXT[k]}" for k, n in counts.items() if n]
    return "no scored item: " + "; ".join(parts) if parts else "no items"


def _nan_mean(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(values.mean()) if len(values) else float("nan")


def cell(table: ItemTable, derived: _Derived, index: np.ndarray, *, key: str, correlations: bool,
         n_boot: int, seed: int, ci_level: float = 0.95, clusters: np.ndarray | None = None) -> Cell:
    """All metrics of one cell (a set of items), as ``judge.metrics_json.metrics.Cell`` (its attributes say what
    each is). ``clusters``: per item of the table, the unit its intervals resample whole (``bootstrap_unit``);
    None: items.

    Returns, in short:
        ``n`` items with a prediction, ``n_missing`` without one, ``n_failed`` (parse + request failures) and
        ``failure_rate`` = n_failed / n; ``n_no_unique_mode`` among the n; ``n_scored`` items in MAE / correlations
        (scored by the judge, with a defined reference); ``mae`` and ``mae_ci``; with ``correlations``:
        ``spearman``, ``spearman_ci``, ``pearson``, ``kendall``.

        Out-of-scale verdicts are in the headline figures, as in the paper (arXiv 2505.24616v3,
        Table 11); ``n_out_of_scale`` counts them among the n verdicts (``n_out_of_scale_minus_one``: those of -1,
        the release's abstention code), and
        ``n_scored_in_scale``, ``mae_in_scale`` (+ ``_ci``) and, with correlations, ``spearman_in_scale``
        (+ ``_ci``) give the figures without them.

        ``vc_judge`` and ``vc_experts`` over the items the judge scored that have two or more annotators
        (``n_vc``; NaN when 0, the paper's "—"), ``vc_experts_all`` over all such items with a prediction
        (``n_vc_experts_all``), ``vc_experts_labelled`` over all such items whether predicted or not
        (``n_vc_experts_labelled``: judge-independent, the paper's Experts VC); ``why_no_vc`` when n_vc is 0
        though items were scored.

        ``n_abstained`` expert abstentions over the cell's items, ``n_all_abstained`` items whose experts all
        abstained and ``n_unlabelled`` items with no expert score at all, those included (unlabelled, not errors:
        in no figure, which the tables' ``n`` alone does not show). When ``n_scored`` is 0: ``why_empty`` (reason
        -> items, see ``UNSCORED_REASONS``) and ``why_empty_text``.
    """
    status = derived.status[index]
    present = status != _MISSING
    ok = status == _OK
    parse_failed, request_failed = status == _PARSE_FAILED, status == _REQUEST_FAILED
    n = int(present.sum())
    n_failed = int((parse_failed | request_failed).sum())
    reference = derived.reference[index]
    judge_scores = table.judge[index]
    scored = ok & np.isfinite(reference)
    x, y = judge_scores[scored], reference[scored]
    mine = None if clusters is None else clusters[index]
    scored_clusters = None if mine is None else mine[scored]
    rng = bootstrap.cell_rng(seed, key)
    out: dict[str, Any] = {
        "n": n,
        "n_missing": int((~present).sum()),
        "n_failed": n_failed,
        "n_parse_failed": int(parse_failed.sum()),
        "n_request_failed": int(request_failed.sum()),
        "failure_rate": n_failed / n if n else float("nan"),
        "n_no_unique_mode": int((present & derived.has_experts[index] & ~derived.unique_mode[index]).sum()),
        "n_scored": int(scored.sum()),
    }
    apart = derived.spearman_reference is not None and derived.spearman_reference is not derived.reference
    together = correlations and not apart  # MAE and the correlations on the same pairs, sharing each resample
    # draw_as_correlated: MAE's resamples the same whether or not the correlations share them, so that its interval
    # does not move with --spearman-target (the correlations apart draw from their own generator, key/spearman)
    stats = bootstrap.describe_pairs(x, y, n_boot, rng, ci_level, correlations=together, clusters=scored_clusters,
                                     draw_as_correlated=correlations)
    stats.pop("n")
    out.update(stats)
    flags = table.in_scale[index]
    # Every verdict outside its scale, whether or not its item has a reference (it is the judge's answer either way).
    out["n_out_of_scale"] = int((ok & (flags == 0.0)).sum())
    # Of them, the -1s: the release's abstention code (an expert's "not applicable"), which a judge that saw it may
    # write for the same; scored as any off-scale verdict is, counted apart so the report can name it.
    out["n_out_of_scale_minus_one"] = int((ok & (flags == 0.0) & (judge_scores == -1.0)).sum())
    inside = flags[scored] != 0.0  # NaN (no readable scale) counts as inside: nothing to flag
    out["n_scored_in_scale"] = int(inside.sum())
    names = ("mae", "spearman") if together else ("mae",)
    if out["n_scored_in_scale"] < len(inside):
        within = bootstrap.describe_pairs(x[inside], y[inside], n_boot, bootstrap.cell_rng(seed, key + "/in_scale"),
                                          ci_level, correlations=together,
                                          clusters=None if mine is None else scored_clusters[inside],
                                          draw_as_correlated=correlations)
    else:  # nothing to leave out: the in-scale figures are the headline ones (no second bootstrap)
        within = stats
    for name in names:
        out[f"{name}_in_scale"] = within[name]
        out[f"{name}_in_scale_ci"] = within[f"{name}_ci"]
    if correlations and apart:  # the correlations against their own reference (its own generator: key/spearman)
        against = derived.spearman_reference[index]
        paired = ok & np.isfinite(against)
        sx, sy, s_inside = judge_scores[paired], against[paired], flags[paired] != 0.0
        s_clusters = None if mine is None else mine[paired]
        corr = bootstrap.describe_pairs(sx, sy, n_boot, bootstrap.cell_rng(seed, key + "/spearman"), ci_level,
                                        clusters=s_clusters)
        out["n_spearman"] = corr.pop("n")
        for name in ("spearman", "spearman_ci", "pearson", "kendall"):
            out[name] = corr[name]
        if "spearman_n_resamples" in corr:
            out["spearman_n_resamples"] = corr["spearman_n_resamples"]
        if s_inside.sum() < len(s_inside):
            corr = bootstrap.describe_pairs(sx[s_inside], sy[s_inside], n_boot,
                                            bootstrap.cell_rng(seed, key + "/spearman/in_scale"), ci_level,
                                            clusters=None if s_clusters is None else s_clusters[s_inside])
        out["spearman_in_scale"], out["spearman_in_scale_ci"] = corr["spearman"], corr["spearman_ci"]
    vc_judge, vc_experts = derived.vc_judge[index], derived.vc_experts[index]
    judged = ok & np.isfinite(vc_judge)  # finite only with a judge score and >= 2 annotators
    out["n_vc"] = int(judged.sum())
    out["vc_judge"] = _nan_mean(vc_judge[judged])
    out["vc_experts"] = _nan_mean(vc_experts[judged])
    overlapping = present & np.isfinite(vc_experts)
    out["n_vc_experts_all"] = int(overlapping.sum())
    out["vc_experts_all"] = _nan_mean(vc_experts[overlapping])
    # Judge-independent: every labelled item of the cell with two or more annotators, predicted or not (the paper's
    # Experts VC, Tables 14-16), beside the experts' VC over the judge's own items (vc_experts).
    labelled = np.isfinite(vc_experts)
    out["n_vc_experts_labelled"] = int(labelled.sum())
    out["vc_experts_labelled"] = _nan_mean(vc_experts[labelled])
    if out["n_vc"] == 0 and out["n_scored"]:
        out["why_no_vc"] = ("no scored item has two or more annotators: Verdict Confidence needs overlapping "
                            "annotations (the paper shows it as \u2014 for criteria annotated by one expert)")
    out["n_abstained"] = int(table.n_abstained[index].sum())
    out["n_all_abstained"] = int((~derived.has_experts[index] & (table.n_abstained[index] > 0)).sum())
    out["n_unlabelled"] = int((~derived.has_experts[index]).sum())
    if out["n_scored"] == 0:
        counts = np.bincount(derived.why_unscored[index], minlength=len(UNSCORED_REASONS) + 1)
        out["why_empty"] = {reason: int(counts[i + 1]) for i, reason in enumerate(UNSCORED_REASONS) if counts[i + 1]}
        out["why_empty_text"] = why_empty(out["why_empty"])
    return Cell(**{name: tuple(value) if name.endswith("_ci") else value for name, value in out.items()})


def label_groups(labels: np.ndarray) -> dict[str, np.ndarray]:
    """Item indices per label, labels in sorted order (one sort for all labels, not one scan per label).

    The labels are numbered by ``pandas.factorize`` (a hash table in C, first seen first), then the few distinct
    ones sorted as text: ``np.unique`` on the labels as a string array sorted 160,000 strings per grouping, ~0.4 s
    each on the full test, and numbering them through an Arrow string array made a Python string per item first.
    The same groups: each label is grouped as its text (``str``), Python orders strings by code point as numpy
    does (numpy's string arrays also drop trailing NUL characters, which no label has).
    """
    import pandas as pd

    labels = np.asarray(labels, dtype=object)
    codes, seen = pd.factorize(labels)
    texts = [str(label) for label in seen]
    missing = np.flatnonzero(codes < 0)  # None / NaN, which pandas takes as one missing value: grouped by text
    if len(missing):
        extra_codes, extra_texts = pd.factorize(np.array([str(labels[i]) for i in missing], dtype=object))
        codes[missing] = len(texts) + extra_codes
        texts += [str(text) for text in extra_texts]
    names = sorted(set(texts))
    rank_of = {name: rank for rank, name in enumerate(names)}
    rank = np.array([rank_of[text] for text in texts], dtype=np.intp)
    inverse = rank[codes] if len(labels) else np.zeros(0, dtype=np.intp)
    order = np.argsort(inverse.astype(np.uint16) if len(names) < 2**16 else inverse, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(inverse, minlength=len(names)))]
    return {name: order[bounds[i]:bounds[i + 1]] for i, name in enumerate(names)}


def drawn_as_name(split: str, n_items: int, n_all: int) -> str:
    """The name a split's resamples are drawn under (``bootstrap.cell_rng`` is keyed by name): a test that holds
    every one of the ``n_all`` predicted items of "all" draws as "all" does, so that one item set shows one interval,
    not two that differ: data without Zero-Shot items (any custom data set), or predictions of one test's items only
    (a run under ``--limit`` or ``--split``), whose other test's items are never resampled. ``n_items``: the test's
    predicted items, a subset of "all"'s. One rule for the runs' metrics, their validity sections and compare's
    paired draws (there, the items both runs predicted)."""
    return "all" if split in ("zero_shot", "standard") and n_items == n_all else split


def predicted_count(table: ItemTable, index: np.ndarray) -> int:
    """How many of the items at ``index`` have a prediction (status not ``missing``): what ``drawn_as_name``
    counts."""
    return int((table.status[index] != "missing").sum())


def evaluate(table: ItemTable, target: str = "auto", n_boot: int = 1000, seed: int = 0, vc_repeats: int = 100,
             ci_level: float = 0.95, derived: _Derived | None = None,
             spearman_target: str | None = None, bootstrap_unit: str = "item", reading=None) -> dict[str, Any]:
    """Every metric of the report, for one judge.

    Args:
        table: the judged items.
        target: ``mode``, ``mean`` or ``auto`` (see ``choose_target``).
        n_boot: bootstrap resamples per interval (0 disables intervals).
        seed: seed of the Verdict Confidence draws and of every bootstrap (per cell, see ``bootstrap.cell_rng``).
        vc_repeats: random expert replacements averaged in the judge's Verdict Confidence.
        ci_level: coverage of the percentile bootstrap intervals.
        derived: ``derive(table, target, vc_repeats, seed, spearman_target)`` when the caller already has it.
        spearman_target: the correlations' reference, ``mode`` or ``mean`` of the experts, chosen apart from MAE's
            ``target`` (``auto`` or None: the same). The paper correlates with "expert ratings" and names no
            aggregate; its item aggregate is the unweighted mean of the experts' estimates
            (arXiv 2505.24616v3, Section 2.3). With a reference of its own, the correlation cells carry
            ``n_spearman`` (the pairs they cover) and draw their intervals from their own generator.
        bootstrap_unit: what the intervals resample: ``item`` (each judged item on its own) or ``instruction``
            (every item of an instruction together: its answers and their criteria, which share the instruction's
            difficulty and so err together; ``bootstrap.cluster_resample_weights``). The paper reports no
            intervals; ``item`` is the default, ``instruction`` the honest one where items of an instruction are
            correlated, and wider.
        reading: ``eval.validity.scale_reading.read_scales(table)`` when the caller already has it (``score`` reads
            it once for the validity section too); None: read here.
    Returns:
        ``judge.metrics_json.metrics.Metrics`` with ``judge``, ``target``, ``settings``, ``levels`` and ``splits`` →
        {zero_shot, standard, all} → ``SplitMetrics`` (the ``overall`` cell, the cells ``by_model``,
        ``by_task_type``, ``by_criterion``, ``failures`` (error code → count), ``model_means`` (Table 10, see
        ``model_means``), ``confusion``); ``score`` adds the rest of ``metrics.json``.
    """
    target = choose_target(table, target)
    spearman_target = target if spearman_target in (None, "auto") else spearman_target
    if spearman_target not in ("mode", "mean"):
        raise ValueError(f"spearman_target must be auto, mode or mean, got {spearman_target!r}")
    clusters = bootstrap_clusters(table, bootstrap_unit)
    derived = derived or derive(table, target, vc_repeats=vc_repeats, seed=seed, spearman_target=spearman_target)
    everything = np.arange(len(table))
    # "all" is the paper's two tests together (Zero-Shot + Standard); items of a task type the taxonomy does not
    # know are reported on their own ("unknown"; Zero-Shot where scored on a held-out criterion), never folded into
    # either test or into their sum.
    split_index = {"zero_shot": everything[table.split == "zero_shot"],
                   "standard": everything[table.split == "standard"]}
    if (table.split == "unknown").any():
        split_index["unknown"] = everything[table.split == "unknown"]
    split_index["all"] = everything[table.split != "unknown"]
    drawn_as = {split: drawn_as_name(split, predicted_count(table, index), predicted_count(table, split_index["all"]))
                for split, index in split_index.items()}
    groupings = {name: label_groups(getattr(table, column)) for name, column in GROUPINGS.items()}
    task_groups = label_groups(table.task_group)
    # The axes: the rubric's whole scale and every expert score, and a judge's level only where it lies on its item's
    # range (``off_scale_sides``).
    levels = np.unique(np.concatenate([table.experts[~np.isnan(table.experts)],
                                       value_levels(table, np.arange(len(table)))])) if len(table) else np.zeros(0)
    levels, judge_on, judge_sides = off_scale_sides(table, levels, reading)

    settings = Settings(n_boot=n_boot, seed=seed, vc_repeats=vc_repeats, ci_level=ci_level,
                        spearman_target=spearman_target, bootstrap_unit=bootstrap_unit,
                        percentile_method=PERCENTILE_METHOD, judge_rounding=metrics.JUDGE_ROUNDING,
                        confusion_rows=metrics.CONFUSION_ROWS, confusion_columns=metrics.CONFUSION_COLUMNS)

    def cells_by(name: str, split: str, in_split: np.ndarray) -> dict[str, Cell]:
        return {label: cell(table, derived, index[in_split[index]], key=f"{drawn_as[split]}/{name}/{label}",
                            correlations=name in _CORRELATED, n_boot=n_boot, seed=seed, ci_level=ci_level,
                            clusters=clusters)
                for label, index in groupings[name].items() if in_split[index].any()}

    in_splits = {}
    for split, split_idx in split_index.items():
        in_split = in_splits[split] = np.zeros(len(table), dtype=bool)
        in_split[split_idx] = True
    failed_anywhere = (table.status == "parse_failed") | (table.status == REQUEST_FAILED)
    # One labelling over every failed item of the table: labelled per test, a code alone in its test would keep its
    # unmarked cut there while another test showed that same key for a different code.
    labels = code_labels(table.error[failed_anywhere])
    splits: dict[str, SplitMetrics] = {}
    for split, split_idx in split_index.items():
        in_split = in_splits[split]
        overall = cell(table, derived, split_idx, key=f"{drawn_as[split]}/overall", correlations=True, n_boot=n_boot,
                       seed=seed, ci_level=ci_level, clusters=clusters)
        by = {name: cells_by(name, split, in_split) for name in groupings}
        failed = split_idx[(table.status[split_idx] == "parse_failed") | (table.status[split_idx] == REQUEST_FAILED)]
        by_model_index = {label: index[in_split[index]] for label, index in groupings["model"].items()}
        splits[split] = SplitMetrics(
            overall=overall, by_model=by["model"], by_task_type=by["task_type"], by_criterion=by["criterion"],
            failures=code_counts(table.error[failed], labels),
            model_means=model_means(table, derived, split_idx, by["model"], overall,
                                    {k: v for k, v in by_model_index.items() if len(v)}),
            confusion=_confusions(table, derived, split_idx, in_split, task_groups, levels, judge_on, judge_sides),
        )
    return Metrics(judge=table.judge_name, target=target, settings=settings, levels=[float(v) for v in levels],
                   splits=splits)


def value_levels(table: ItemTable, index: np.ndarray) -> np.ndarray:
    """The levels the items at ``index`` may take, sorted: every whole level of their readable scales, and for the
    items without one their experts' whole-number span. The confusion matrices' axes hold them (over the whole
    table) beside every expert score, so that a level no expert and no judge gave is an empty row and column, not a
    missing one (App. D.2.3 reads the use of the mid level off these matrices); the validity section's value domain
    of a cell is them and the judge's levels on the scale.

    Readable scales within one rubric's span of each other (``judge.scales.MAX_LEVELS``) give every integer from the
    lowest end to the highest; farther apart (0-2 beside 900-1000), each scale's own levels, not a pooled table of
    every integer between them. An item whose scale is unreadable (NaN ends, or a table without scale ends: hand-
    built, or an items.parquet that kept none) has no rubric to read its levels from, so its experts' lowest and
    highest score, rounded out to whole levels, bound them; pooled wider than a rubric, the values seen alone.
    """
    from judge.scales import MAX_LEVELS

    found: set[float] = set()
    if table.scale_low is not None and table.scale_high is not None and len(index):
        low, high = np.asarray(table.scale_low, dtype=float)[index], np.asarray(table.scale_high, dtype=float)[index]
        known = np.isfinite(low) & np.isfinite(high)
        if known.any() and np.max(high[known]) - np.min(low[known]) < MAX_LEVELS:
            found.update(np.arange(np.min(low[known]), np.max(high[known]) + 1).tolist())
        elif known.any():
            for scale_low, scale_high in set(zip(low[known].tolist(), high[known].tolist())):
                found.update(np.arange(scale_low, scale_high + 1).tolist())
        index = index[~known]
    seen = table.experts[index][np.isfinite(table.experts[index])]
    low, high = (np.floor(seen.min()), np.ceil(seen.max())) if len(seen) else (0.0, -1.0)
    found.update((np.arange(low, high + 1) if high - low < MAX_LEVELS else np.unique(seen)).tolist())
    return np.array(sorted(found), dtype=float)


def bootstrap_clusters(table: ItemTable, bootstrap_unit: str, where: str = "this item table") -> np.ndarray | None:
    """What the intervals resample whole under ``bootstrap_unit``: None for ``item``, each item's instruction key for
    ``instruction`` (the metrics, the validity section and ``compare`` all read it here).

    Raises:
        ValueError: an unknown unit, or ``instruction`` on a table that does not say which items share an
            instruction (an items.parquet written before it kept the keys), naming ``where``.
    """
    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise ValueError(f"bootstrap_unit must be one of {', '.join(BOOTSTRAP_UNITS)}, got {bootstrap_unit!r}")
    if bootstrap_unit == "item":
        return None
    if table.instruction_key is None:
        raise ValueError(f"{where}: its items.parquet does not say which items share an instruction (written by an "
                         "older version); score it again to resample by instruction")
    return np.asarray(table.instruction_key)


def model_means(table: ItemTable, derived: _Derived, index: np.ndarray, by_model: Mapping[str, Cell],
                overall: Cell, groups: Mapping[str, np.ndarray] | None = None) -> ModelMeans:
    """The paper's Table 10 (arXiv 2505.24616v3, Appendix D.2.1): the mean score of each evaluated model by
    the experts and by the judge, side by side, with the judge's MAE in brackets.

    How the paper aggregates: an item's expert score is "an unweighted average of the corresponding point
    estimates" (Section 2.3), i.e. the mean of its (non-abstaining) experts; the Experts column averages it over the
    model's items. The Experts column is the same for every judge (and is given for the Human Baseline, which no
    judge scored), so it does not depend on the judge: it covers every item of the model with expert scores. The
    judge column averages the judge's scores, out-of-scale ones included (M-Prometheus-14B's 2.5-4.0 means on mostly
    0-2 scales show the paper kept them). The "Avg." row pools items (it is not the mean of the rows: the Experts
    rows average 1.406, the Avg. is 1.401). The paper is silent on whether the judge's mean covers only items with
    expert scores: here it does (both columns over the same labelled items), and ``experts_mean_on_judged`` gives
    the experts' mean over exactly the items the judge scored.

    Returns:
        ``ModelMeans``: ``by_model`` (model -> row) and ``all``, row = ``n_items`` (with expert scores), ``experts_mean``,
        ``n_judged`` (of those, scored by the judge), ``judge_mean``, ``experts_mean_on_judged``,
        ``n_out_of_scale``, ``mae`` (the cell's MAE, vs the reference of the run) and ``n_scored``. ``groups``:
        the item indices of each model within ``index`` when the caller has them (else grouped here).
    """
    def row(items: np.ndarray, cell: Cell | None) -> ModelMeansRow:
        labelled = items[derived.has_experts[items]]
        judged = labelled[derived.status[labelled] == _OK]
        return ModelMeansRow(
            n_items=int(len(labelled)),
            experts_mean=_nan_mean(derived.expert_mean[labelled]),
            n_judged=int(len(judged)),
            judge_mean=_nan_mean(table.judge[judged]),
            experts_mean_on_judged=_nan_mean(derived.expert_mean[judged]),
            n_out_of_scale=int((table.in_scale[judged] == 0.0).sum()),
            mae=cell.mae if cell is not None else float("nan"),
            n_scored=cell.n_scored if cell is not None else 0,
        )

    if groups is None:
        groups = {label: index[rows] for label, rows in label_groups(table.model_id[index]).items()}
    return ModelMeans(by_model={label: row(items, by_model.get(label)) for label, items in groups.items()},
                      all=row(index, overall))


def off_scale_sides(table: ItemTable, levels: np.ndarray, reading=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The confusion matrices' axes and each judge score as they read it: ``levels`` with the judge's levels that lie
    on their item's range beside them, each score's level (NaN where it has none on the scale, or no score) and its
    side, -1 below its item's scale, 1 above it, 0 on it or no score. On or off the scale by the validity section's
    rule (``eval.validity.scale_reading``), so that an item with a unique experts' mode lies off the scale in the
    matrices and the section alike: the item's own scale, else its criterion's expert range (``item_scale_ends``),
    the score rounded half up, a regression head's raw value past an end at that end (its 2.6 on 0-2 is 2). A level
    on the item's range that no expert gave (an item without a readable scale, where experts spread over more than a
    rubric's levels leave the axes only the values seen, ``value_levels``) joins the axes where that range spans at
    most a rubric's levels (``judge.scales.MAX_LEVELS``): it is on the scale; each such range adds at most that many
    levels, so the axes grow with the data's criteria, as far-apart readable scales' do, never with the judge's
    distinct answers past a range. A wider range (a criterion too wide to rate,
    ``eval.validity.section.too_wide_to_rate``, which the section leaves out, or an item read against a table's
    range that wide) or none bounds nothing: there the answers are read against the axes as they are, and a level
    no axis holds is a 1, so that no score is dropped. The matrices count a -1 in their ``below_scale`` row and a 1
    in ``above_scale`` (``judge.metrics_json.metrics.Confusion``), so a judge's stray numbers never become levels of
    the axes (a levels x levels matrix per panel, growing with the square of its distinct scores). ``reading``:
    ``eval.validity.scale_reading.read_scales(table)`` when the caller has it; None: read here."""
    from eval.validity.scale_reading import read_scales
    from judge.scales import MAX_LEVELS

    reading = reading if reading is not None else read_scales(table)
    (low, high), on, off = reading.rating, reading.levels, reading.off_scale
    with np.errstate(invalid="ignore"):
        rated = np.isfinite(on) & (high - low + 1 <= MAX_LEVELS)  # NaN ends: False
    levels = np.union1d(levels, on[rated]) if rated.any() else levels
    stray = np.isfinite(on) & ~np.isin(on, levels)
    with np.errstate(invalid="ignore"):
        below = off < low
    sides = np.where(below, -1, np.where(np.isfinite(off) | stray, 1, 0)).astype(np.int8)
    return levels, np.where(sides == 0, on, np.nan), sides


def _confusions(table, derived, split_idx, in_split, task_groups, levels, judge_on, sides) -> Confusions:
    """Judge x expert-mode confusion matrices (items the judge scored that have a unique mode): the judge's levels on
    the scale (``judge_on``) in the matrix, its scores off it (``sides``; both ``off_scale_sides``) in a row per
    side, written where any item of the table has one."""
    mode_column = np.searchsorted(levels, np.nan_to_num(derived.mode, nan=0.0))
    counted = np.isfinite(table.judge) & np.isfinite(derived.mode)
    written = {"below_scale": (sides == -1).any(), "above_scale": (sides == 1).any()}

    def one(index: np.ndarray) -> Confusion:
        matrix, _ = metrics.confusion_matrix(judge_on[index], derived.mode[index], levels)
        rows = {}
        for name, side in (("below_scale", -1), ("above_scale", 1)):
            if written[name]:
                at = index[counted[index] & (sides[index] == side)]
                rows[name] = np.bincount(mode_column[at], minlength=len(levels)).tolist()
        return Confusion(levels=[float(v) for v in levels], matrix=matrix.tolist(), **rows)

    return Confusions(all=one(split_idx),
                      by_task_group={label: one(index[in_split[index]]) for label, index in task_groups.items()
                                     if in_split[index].any()})


def dumps(result: Any) -> str:
    """JSON text with NaN written as null (strict JSON readers reject NaN); typed parts (``judge.metrics_json.metrics``)
    as their ``to_json()``."""
    import math

    plain = (str, int, bool, type(None))

    def clean(value):
        # the JSON values themselves first, by their exact type (none of them has a ``to_json``): a full test's
        # metrics hold tens of thousands of them, and numpy's isfinite of a Python float makes a numpy scalar of each
        kind = type(value)
        if kind in plain:
            return value
        if kind is float:
            return value if math.isfinite(value) else None
        if kind is dict:
            return {str(k): clean(v) for k, v in value.items()}
        if kind is list:
            return [clean(v) for v in value]
        if hasattr(value, "to_json"):
            return clean(value.to_json())
        if isinstance(value, float):
            return None if not np.isfinite(value) else value
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, np.generic):
            return clean(value.item())
        return value

    return json.dumps(clean(result), ensure_ascii=False, indent=2)

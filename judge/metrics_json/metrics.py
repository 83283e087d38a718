"""The typed ``metrics.json``: what ``judge-eval score`` writes and ``judge-eval compare``, the reports and
``judge-train card`` read.

Why one module of ~690 lines: it is one file's schema, every record of which reads by the same readers (null as NaN,
counts, ranges, intervals, text and tables checked, the file named in errors); split, a record would live apart from
its readers.

``Metrics.to_json()`` gives the file's JSON object (``eval.scoring.item_table.dumps`` writes it, NaN as null) and
``Metrics.from_json()`` reads one back; a reader sees attributes, never string keys. Files written by earlier
versions read too: a count an older file lacks (``n_out_of_scale`` and the other optional fields below) is None,
and the readers show "—" for it, as they did.

The file's bytes are those of the dicts this module replaced, key for key: each object writes its fields in
declaration order, leaving out the optional ones a cell does not carry (None here). Numbers that JSON writes as
null (an undefined MAE, an interval without resamples) are NaN in memory, so None always means "absent".

The ``validity`` section has its own types (``judge.metrics_json.validity``): its nulls stay None.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from judge.metrics_json.json_record import (COUNT_READERS, JsonRecord, JsonRecordError, count, extra_field, got_words,
                                            keyed, listed, optional_field, read_record, shown_value)
from judge.metrics_json.validity import Validity

__all__ = ["JUDGE_ROUNDINGS", "MAX_VC_REPEATS", "NUMBER_READERS", "PERCENTILE_METHODS", "TARGETS", "Cell", "Confusion",
           "Confusions", "Interval", "Metrics", "ModelMeans", "ModelMeansRow", "Notes", "OfficialSplit",
           "PolluxOfficial", "RunInfo", "Settings", "SplitMetrics", "check_vc_repeats"]

NAN = float("nan")
Interval = tuple[float, float]


def _number(value: Any) -> float:
    """A float read from JSON: null (NaN written by ``dumps``) back to NaN. A boolean or a string is refused: float()
    would take ``true`` as 1.0 and ``"0.5"`` as 0.5, a figure the file never held."""
    if value is None:
        return NAN
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"expected a number, got {got_words(value)}")
    return float(value)


def _share(value: Any) -> float:
    """``_number`` of a share of items (a failure rate, a Verdict Confidence): null, or within [0, 1]."""
    share = _number(value)
    if not (math.isnan(share) or 0.0 <= share <= 1.0):
        raise ValueError(f"expected a share between 0 and 1, got {value!r}")
    return share


def _level(value: Any) -> float:
    """A score level of a confusion matrix: a finite number (a null level heads no row a reader can name)."""
    level = _number(value)
    if not math.isfinite(level):
        raise ValueError(f"expected a finite score level, got {got_words(value)}")
    return level


def _interval(value: Any) -> Interval:
    """An interval read from JSON: null, or a list [low, high] of ``_number``s, low not above high where both are
    finite: refused here, naming the field, since anything else would surface as Python's unpacking error ("too
    many values to unpack"), take a two-letter string's letters for its ends, or draw a whisker backwards."""
    if value is None:
        return NAN, NAN
    if not isinstance(value, list) or len(value) != 2:
        shown = f"a list of {len(value)}" if isinstance(value, list) else got_words(value)
        raise ValueError(f"expected a list of 2 numbers (low, high), got {shown}")
    low, high = _number(value[0]), _number(value[1])
    if low > high:  # False where either is NaN: an end without resamples
        raise ValueError(f"expected low <= high, got [{shown_value(value[0])}, {shown_value(value[1])}]")
    return low, high


def _within(low: float, high: float, what: str) -> Any:
    """A reader of a figure that is null (NaN) or a finite number in [low, high] (``what`` names the range in the
    error), and of an interval whose finite ends are (``_interval``): an MAE below 0 or a correlation past 1 is no
    figure score writes, and the pages would draw it as given."""
    def check(number: float, value: Any) -> float:
        if not (math.isnan(number) or (math.isfinite(number) and low <= number <= high)):
            raise ValueError(f"expected {what}, got {shown_value(value)}")
        return number

    def figure(value: Any) -> float:
        return check(_number(value), value)

    def interval(value: Any) -> Interval:
        ends = _interval(value)
        for end, given in zip(ends, value or (None, None)):
            check(end, given)
        return ends

    return figure, interval


_MAE, _MAE_INTERVAL = _within(0.0, math.inf, "a finite mean absolute error of 0 or more")
_CORRELATION, _CORRELATION_INTERVAL = _within(-1.0, 1.0, "a correlation between -1 and 1")


def _ci_level(value: Any) -> float:
    """The intervals' level: a finite number strictly between 0 and 1 (every page would write 2.0 as "200 %")."""
    level = _number(value)
    if not (0.0 < level < 1.0):  # NaN (a null) fails too
        raise ValueError(f"expected a level between 0 and 1 (0.95 for 95 %), got {shown_value(value)}")
    return level


def _text(value: Any) -> str:
    """A string read from JSON as it is; anything else refused (a number as the judge's name failed far later,
    in the report pages)."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {got_words(value)}")
    return value


def _text_or_none(value: Any) -> str | None:
    """``_text``, or None (a path the writer did not have): a number as ``data`` failed in the report's file links."""
    return None if value is None else _text(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {got_words(value)}")
    return value


def _or_none(read: Any) -> Any:
    return lambda value: None if value is None else read(value)


def _one_of(*allowed: str, absent: bool = False) -> Any:
    """A reader of a string that must be one of ``allowed`` (None too, with ``absent``): a target of "median" was
    taken as it is and failed at use, naming a reference the file never chose."""
    def read(value: Any) -> str | None:
        if value is None and absent:
            return None
        if not isinstance(value, str) or value not in allowed:
            got = shown_value(value) if isinstance(value, str) else got_words(value)  # a choice's text says itself
            raise ValueError(f"expected one of {', '.join(allowed)}, got {got}")
        return value

    return read


#: The most Verdict Confidence draws per item a run takes (``--vc-repeats``; the paper draws 100, Appendix D.2.2):
#: ``judge-eval compare`` draws again with a baseline's, so a metrics.json giving more is refused too.
MAX_VC_REPEATS = 10_000


def check_vc_repeats(repeats: int) -> None:
    """Refuse a number of Verdict Confidence draws per item outside 1..``MAX_VC_REPEATS`` (``ValueError``): the
    scorer calls it before drawing, the reader on every metrics.json."""
    if not 1 <= repeats <= MAX_VC_REPEATS:
        raise ValueError(f"expected 1 to {MAX_VC_REPEATS:,} draws per item, got {repeats}")


def _vc_repeats(value: Any) -> int:
    repeats = count(value)
    check_vc_repeats(repeats)
    return repeats


#: The references MAE and the correlations are against (``judge-eval score --target``, ``--spearman-target``).
TARGETS = ("mode", "mean")
#: What ``Settings.percentile_method`` and ``Settings.judge_rounding`` may say: the one rule ``judge-eval score``
#: applies of each (a file saying another was not written by it).
PERCENTILE_METHODS = ("linear",)
JUDGE_ROUNDINGS = ("half-up",)

#: Readers that follow from a field's annotation: JSON's null is NaN in a number and in an interval's ends; a
#: whole number is checked as one (``json_record.count``).
NUMBER_READERS = {"float": _number, "float | None": _number, "Interval": _interval, "Interval | None": _interval,
                  **COUNT_READERS}
#: ``NUMBER_READERS`` and the readers of metrics.json's text, lists, tables and flags: a number for a name or a
#: string for a list is refused at the file, naming its field, rather than failing far from it in a page that
#: writes it.
_METRICS_READERS = {**NUMBER_READERS, "str": _text, "str | None": _text_or_none,
                    "list[str] | None": _or_none(listed(_text)), "list[int] | None": _or_none(listed(count)),
                    "list[float]": listed(_level), "dict[str, int]": keyed(count),
                    "dict[str, int] | None": _or_none(keyed(count)), "bool | None": _or_none(_flag)}


class _MetricsRecord(JsonRecord):
    """A part of metrics.json: null read as NaN in its numbers and intervals (``NUMBER_READERS``), its text, lists
    and tables checked by their annotation."""

    json_where = "metrics.json"
    json_by_type = _METRICS_READERS


def _read(cls, data: Mapping[str, Any], /, **readers) -> Any:  # a field may be called data
    return read_record(cls, data, where=cls.json_where, by_type=cls.json_by_type, **readers)


# ------------------------------------------------------------------------------------------------- cells


@dataclass(frozen=True, kw_only=True)
class Cell(_MetricsRecord):
    """Every metric of one cell (a set of items): ``eval.scoring.item_table.cell``.

    Attributes:
        n: items with a prediction; n_missing: items without one (the run is unfinished).
        n_failed: parse + request failures among the n (never scored); n_parse_failed, n_request_failed: each.
        failure_rate: n_failed / n (NaN when n is 0).
        n_no_unique_mode: items among the n whose experts tie (no mode reference).
        n_scored: items in MAE and the correlations (scored by the judge, with a defined reference).
        mae, mae_ci: the MAE and its percentile bootstrap interval.
        spearman, spearman_ci, pearson, kendall: the correlations, in the cells that pool them (overall, by model,
            by task type); None elsewhere.
        spearman_n_resamples: the resamples spearman_ci is taken over: those with a defined Spearman (a resample
            whose judge or reference scores are all one value has none), fewer than the bootstrap's in small cells.
        n_out_of_scale: verdicts outside their scale (scored, as the paper does, arXiv 2505.24616v3, Table 11);
            n_scored_in_scale, mae_in_scale (+ _ci), spearman_in_scale (+ _ci): the figures without them.
        n_out_of_scale_minus_one: of n_out_of_scale, the verdicts of -1 (on a scale without -1): the release's code
            for an expert's abstention, counted apart so that it is not read as one more off-scale number.
        n_spearman: the pairs the correlations cover when their reference is chosen apart from MAE's
            (``--spearman-target``); None otherwise.
        n_vc, vc_judge, vc_experts: Verdict Confidence over the scored items with two or more annotators (NaN when
            n_vc is 0, the paper's "—"); n_vc_experts_all, vc_experts_all: the experts' over every predicted such
            item; n_vc_experts_labelled, vc_experts_labelled: over every labelled one (the paper's Experts VC).
        why_no_vc: why VC is "—" though items were scored; None otherwise.
        n_abstained: expert abstentions over the cell's items; n_all_abstained: items every expert abstained on;
            n_unlabelled: items with no expert score at all (no experts, or every one abstained), in no figure.
        why_empty (reason -> items, see ``item_table.UNSCORED_REASONS``), why_empty_text: when n_scored is 0.
        extra: keys of a file written by a later version, kept and shown as they are.

    A count None is one the file does not carry (written before it existed, or by hand).
    """

    n: int
    n_missing: int | None = optional_field()
    n_failed: int
    n_parse_failed: int | None = optional_field()
    n_request_failed: int | None = optional_field()
    failure_rate: float | None = optional_field()
    n_no_unique_mode: int
    n_scored: int | None = optional_field()
    mae: float
    mae_ci: Interval
    spearman: float | None = optional_field()
    spearman_ci: Interval | None = optional_field()
    spearman_n_resamples: int | None = optional_field()
    pearson: float | None = optional_field()
    kendall: float | None = optional_field()
    n_out_of_scale: int | None = optional_field()
    n_out_of_scale_minus_one: int | None = optional_field()
    n_scored_in_scale: int | None = optional_field()
    mae_in_scale: float | None = optional_field()
    mae_in_scale_ci: Interval | None = optional_field()
    spearman_in_scale: float | None = optional_field()
    spearman_in_scale_ci: Interval | None = optional_field()
    n_spearman: int | None = optional_field()
    n_vc: int | None = optional_field()
    vc_judge: float | None = optional_field()
    vc_experts: float | None = optional_field()
    n_vc_experts_all: int | None = optional_field()
    vc_experts_all: float | None = optional_field()
    n_vc_experts_labelled: int | None = optional_field()
    vc_experts_labelled: float | None = optional_field()
    why_no_vc: str | None = optional_field()
    n_abstained: int | None = optional_field()
    n_all_abstained: int | None = optional_field()
    n_unlabelled: int | None = optional_field()
    why_empty: dict[str, int] | None = optional_field()
    why_empty_text: str | None = optional_field()
    extra: dict[str, Any] = extra_field()

    # The correlations against a reference of their own are computed after the in-scale MAE and written there.
    _APART = ("n_spearman", "spearman", "spearman_ci", "pearson", "kendall", "spearman_in_scale",
              "spearman_in_scale_ci")

    def items(self) -> Iterator[tuple[str, Any]]:
        present = list(super().items())
        if self.n_spearman is None:
            yield from present
            return
        apart = [(k, v) for k, v in present if k in self._APART]
        rest = [(k, v) for k, v in present if k not in self._APART]
        # after the in-scale MAE's interval, or after the last field (before a later version's keys) where a
        # hand-edited file left that optional key out
        # not the later version's keys' holder: a key of theirs may bear its name
        fields_here = {f.name for f in fields(self) if not f.metadata.get("extra")}
        last_field = max((i for i, (k, _) in enumerate(rest) if k in fields_here), default=-1)
        at = next((i for i, (k, _) in enumerate(rest) if k == "mae_in_scale_ci"), last_field) + 1
        yield from rest[:at] + sorted(apart, key=lambda kv: self._APART.index(kv[0])) + rest[at:]

    #: The fields that are shares of items: a figure outside [0, 1] there is no figure score writes.
    _SHARES = ("failure_rate", "vc_judge", "vc_experts", "vc_experts_all", "vc_experts_labelled")

    #: The fields read within a range (``_within``): MAE's of 0 or more, the correlations' in [-1, 1].
    _RANGED = {**dict.fromkeys(("mae", "mae_in_scale"), _MAE),
               **dict.fromkeys(("mae_ci", "mae_in_scale_ci"), _MAE_INTERVAL),
               **dict.fromkeys(("spearman", "spearman_in_scale", "pearson", "kendall"), _CORRELATION),
               **dict.fromkeys(("spearman_ci", "spearman_in_scale_ci"), _CORRELATION_INTERVAL)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Cell:
        """Read each field, then refuse counts of the n items that exceed n (failed or scored verdicts)."""
        cell = _read(cls, data, **dict.fromkeys(cls._SHARES, _share), **cls._RANGED)
        for name in ("n_failed", "n_scored"):
            part = getattr(cell, name)
            if part is not None and part > cell.n:
                raise JsonRecordError(cls.json_where, f"Cell.{name} is not readable ({part} of the cell's n = "
                                                      f"{cell.n} items: more than it holds)", (name,))
        return cell

    @property
    def has_correlations(self) -> bool:
        return self.spearman is not None


# --------------------------------------------------------------------------------------------- a split


@dataclass(frozen=True)
class ModelMeansRow(_MetricsRecord):
    """A row of the paper's Table 10 (``item_table.model_means``): the experts' and the judge's mean score."""

    n_items: int
    experts_mean: float
    n_judged: int
    judge_mean: float
    experts_mean_on_judged: float
    n_out_of_scale: int
    mae: float
    n_scored: int


@dataclass(frozen=True)
class ModelMeans(_MetricsRecord):
    by_model: dict[str, ModelMeansRow]
    all: ModelMeansRow

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelMeans:
        return _read(cls, data, by_model=keyed(ModelMeansRow.from_json),
                     all=ModelMeansRow.from_json)


@dataclass(frozen=True)
class Confusion(_MetricsRecord):
    """Judge (rows) x experts' mode (columns) counts over ``levels``, and the judge's scores off the scale in two
    rows of their own.

    ``levels`` (both axes) are the rubric's whole scale and every expert score, and a judge's level only where it
    lies on its item's range (an item without a readable scale, whose experts leave a level of that range ungiven),
    so a judge writing 60 distinct numbers past the scale gives the same three columns as one writing a single one.
    A judge's score (rounded half up; a regression head's raw value past an end at that end) below its item's scale
    (its lowest level; an item without a readable scale: its criterion's expert range, as the validity section reads
    it) is counted in ``below_scale``, any other score that is no level of the axes in ``above_scale`` (past its
    item's highest level, or, on a range wider than a rubric's, ``judge.scales.MAX_LEVELS``, a level no axis holds):
    one count per expert column each, never dropped, so the matrix and the two rows together count every item scored
    with a unique mode (``n_counted``). Each row is written only when some judge score of the run lies off the scale
    on its side (then in every matrix of the run, zeros included); absent (None): no such score, or a file written
    before the rows existed, whose judge's levels joined ``levels``.
    """

    levels: list[float]
    matrix: list[list[int]]
    below_scale: list[int] | None = optional_field()
    above_scale: list[int] | None = optional_field()

    #: The heading of each off-scale row on the pages and in the plots, in the order they draw it (below the axis'
    #: levels first, above them last).
    OFF_SCALE_ROWS = {"below_scale": "below scale", "above_scale": "above scale"}

    def __post_init__(self) -> None:
        """Refuse (ValueError), where the matrix is made (score's ``evaluate`` as well as a read), one that is not
        ``len(levels)`` rows of ``len(levels)`` whole counts of 0 or more, or an off-scale row that is not one such
        count per level: the report draws one row and one column per level, and a 1x1 matrix beside three levels
        misdrew it. A dozen levels a side: the pass costs nothing."""
        size = len(self.levels)
        if len(self.matrix) != size or any(len(r) != size for r in self.matrix):
            shape = f"{len(self.matrix)} rows of {sorted({len(r) for r in self.matrix}) or [0]} counts"
            raise ValueError(f"Confusion.matrix: {shape}, not {size} rows of {size} counts (one per level)")
        rows = [(f"matrix: row {at}", row) for at, row in enumerate(self.matrix)]
        for name in self.OFF_SCALE_ROWS:
            row = getattr(self, name)
            if row is not None and len(row) != size:
                raise ValueError(f"Confusion.{name}: {len(row)} counts, not {size} (one per level)")
            rows += [(name, row)] if row is not None else []
        for where, row in rows:
            for column, value in enumerate(row):
                if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                    raise ValueError(f"Confusion.{where}, column {column}: {value!r} is not a whole "
                                     "number of 0 or more")

    def off_scale_rows(self) -> list[tuple[str, list[int]]]:
        """The off-scale rows the matrix has, as (heading, counts per level): "below scale", then "above scale"."""
        return [(heading, getattr(self, name)) for name, heading in self.OFF_SCALE_ROWS.items()
                if getattr(self, name) is not None]

    def drawn_rows(self, labels: list[str]) -> list[tuple[str, list[int]]]:
        """Every row as the pages draw it, (heading, counts per level): "below scale" above the levels' rows (headed
        by ``labels``), "above scale" under them, each where the matrix has it."""
        off = dict(self.off_scale_rows())
        return ([("below scale", off["below scale"])] if "below scale" in off else []) \
            + list(zip(labels, self.matrix or [])) \
            + ([("above scale", off["above scale"])] if "above scale" in off else [])

    def n_counted(self) -> int:
        """The pairs counted: the matrix's and the off-scale rows' (the items scored that have a unique mode)."""
        return sum(map(sum, self.matrix)) + sum(sum(row) for _, row in self.off_scale_rows())

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Confusion:
        """Read each level and count (a bad one named by its place), then the shape ``__post_init__`` checks."""
        def levels(values: Any) -> list[float]:
            if not isinstance(values, list):
                raise TypeError(f"expected a list, got {got_words(values)}")
            return [_level(v) for v in values]

        def row(values: Any, name: str = "matrix") -> list[int]:
            if not isinstance(values, list):
                raise JsonRecordError(cls.json_where, f"Confusion.{name}: expected a list of counts, got "
                                                      f"{got_words(values)}")
            out = []
            for at, value in enumerate(values):
                try:
                    out.append(count(value))
                except (TypeError, ValueError) as err:
                    raise JsonRecordError(cls.json_where, f"Confusion.{name} is not readable ({err})", (str(at),)) \
                        from err
            return out

        def off_scale(name: str) -> Any:
            return lambda values: None if values is None else row(values, name)

        def matrix(values: Any) -> list[list[int]]:
            if not isinstance(values, list):
                raise TypeError(f"expected a list of rows, got {got_words(values)}")
            return listed(row)(values)

        try:
            return _read(cls, data, levels=levels, matrix=matrix, below_scale=off_scale("below_scale"),
                         above_scale=off_scale("above_scale"))
        except JsonRecordError:
            raise
        except ValueError as err:  # __post_init__'s: every count read, the shape is what is left; its field named
            named = next((name for name in cls.OFF_SCALE_ROWS if str(err).startswith(f"Confusion.{name}")), "matrix")
            raise JsonRecordError(cls.json_where, str(err), (named,)) from err


@dataclass(frozen=True)
class Confusions(_MetricsRecord):
    all: Confusion
    by_task_group: dict[str, Confusion]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Confusions:
        return _read(cls, data, all=Confusion.from_json,
                     by_task_group=keyed(Confusion.from_json))


def _cells(data: Mapping[str, Any]) -> dict[str, Cell]:
    return keyed(Cell.from_json)(data)


@dataclass(frozen=True)
class SplitMetrics(_MetricsRecord):
    """One test (Zero-Shot, Standard, both): the overall cell, the cells by evaluated model, task type and criterion,
    the failures by error code, Table 10 and the confusion matrices."""

    overall: Cell
    by_model: dict[str, Cell]
    by_task_type: dict[str, Cell]
    by_criterion: dict[str, Cell]
    failures: dict[str, int]
    model_means: ModelMeans | None = optional_field()
    confusion: Confusions | None = optional_field()
    extra: dict[str, Any] = extra_field()

    def by(self, grouping: str) -> dict[str, Cell]:
        """The cells of a grouping (``item_table.GROUPINGS``: model, task_type, criterion)."""
        return {"model": self.by_model, "task_type": self.by_task_type, "criterion": self.by_criterion}[grouping]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SplitMetrics:
        return _read(cls, data, overall=Cell.from_json, by_model=_cells, by_task_type=_cells, by_criterion=_cells,
                     model_means=ModelMeans.from_json,
                     confusion=lambda data: Confusions.from_json(data) if data else None)


# ------------------------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Settings(_MetricsRecord):
    """How the metrics were computed (``judge-eval score``'s options)."""

    n_boot: int
    seed: int
    vc_repeats: int
    ci_level: float
    spearman_target: str | None = optional_field()
    regression_scores: str | None = optional_field()  # "raw" or "clipped" (``--clip-regression``)
    #: what the intervals resample, "item" or "instruction" (``--bootstrap-unit``); None: items (older files)
    bootstrap_unit: str | None = optional_field()
    #: How each percentile interval's ends are read off the resamples: numpy.percentile's method, "linear"
    #: (``eval.scoring.interval_options.PERCENTILE_METHOD``, a fixed choice); None: not said (older files, the same).
    percentile_method: str | None = optional_field()
    #: How a real-valued judge score (a regression head's, a decimal verdict) becomes a score level in the judge's
    #: Verdict Confidence and the confusion matrices: "half-up" (1.5 -> 2, 0.5 -> 1; the paper says "rounded to the
    #: nearest integer", Appendix D.2.3, silent on halves); None: not said (older files, the same).
    judge_rounding: str | None = optional_field()
    #: The confusion matrices' axes: rows "judge" (its score rounded by ``judge_rounding``), columns "expert_mode"
    #: (the experts' mode, whatever MAE's target); None: not said (older files, the same).
    confusion_rows: str | None = optional_field()
    confusion_columns: str | None = optional_field()
    #: What a judge's ``-1`` on a scale without it was (``--judge-minus-one``): "score" (scored as out of scale, the
    #: default) or "fail" (a failed verdict of its own code); None: not said (older files, scored).
    judge_minus_one: str | None = optional_field()

    def __post_init__(self) -> None:
        """Refuse (ValueError) ``vc_repeats`` out of 1 to ``MAX_VC_REPEATS`` where the settings are made:
        ``evaluate`` given 20,000 wrote a metrics.json its own read-back (and compare) refused."""
        try:
            check_vc_repeats(self.vc_repeats)
        except ValueError as err:
            raise ValueError(f"Settings.vc_repeats: {err}") from None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Settings:
        # each checked against what score writes: compare pairs on these and says when two runs' differ
        return _read(cls, data, vc_repeats=_vc_repeats, ci_level=_ci_level,
                     spearman_target=_one_of(*TARGETS, absent=True),
                     regression_scores=_one_of("raw", "clipped", absent=True),
                     bootstrap_unit=_one_of("item", "instruction", absent=True),
                     percentile_method=_one_of(PERCENTILE_METHODS[0], absent=True),
                     judge_rounding=_one_of(JUDGE_ROUNDINGS[0], absent=True),
                     confusion_rows=_one_of("judge", absent=True),
                     confusion_columns=_one_of("expert_mode", absent=True),
                     judge_minus_one=_one_of("score", "fail", absent=True))


@dataclass(frozen=True)
class Notes(_MetricsRecord):
    """What joining the predictions with the records counted (``item_table.build_table``), and what the load of the
    records counted that the scores do not show (``n_off_scale``, ``n_duplicate_rows``)."""

    n_unknown_ids: int = 0
    #: the first of those ids in the predictions file's order, for the reports to name (absent when there are none)
    first_unknown_id: str | None = optional_field()
    n_repeated_ids: int | None = optional_field()
    n_regression_scores: int | None = optional_field()
    n_regression_out_of_scale: int | None = optional_field()
    #: regression-head rows without the raw value (older predictions): scored on judge-serve's clipped score
    n_regression_without_raw: int | None = optional_field()
    n_out_of_scale_reparsed: int | None = optional_field()
    #: judges' ``-1``s on a scale without it counted as failed verdicts (``--judge-minus-one fail``), when any
    n_minus_one_failed: int | None = optional_field()
    #: items the judge scored whose rubric has no readable scale (``judge.scale_of``): their scores were not
    #: checked against a scale, so they count as in scale unless the prediction's own ``in_scale`` flag says not
    n_no_scale: int | None = optional_field()
    #: scored items whose score a regression head gave on a rationale ``max_tokens`` cut (``judge-eval run`` with
    #: ``cut_rationale: score``, as POLLUX scores them; ``eval.judging.backends.is_scored_cut``): said under the summary
    n_cut_scored: int | None = optional_field()
    #: predictions of a text their item no longer has (the data edited after the run; ``eval.scoring.score.stale_rows``):
    #: left out, so their items are among the ones without a prediction (``n_missing``)
    n_stale_predictions: int | None = optional_field()
    #: items with no prediction that the run never selected: beyond its ``--limit``, or outside its ``--split``
    #: (``eval.scoring.score.selected_items``); unselected_split / unselected_limit: the run's flags that left them
    #: out, each only when it left out one of them. The reports call the run unfinished only for the rest.
    n_missing_unselected: int | None = optional_field()
    unselected_split: str | None = optional_field()
    unselected_limit: int | None = optional_field()
    #: True where the run is a merged eval array whose every task applied ``unselected_limit`` to its own block of
    #: the data (``--limit`` after slurm/eval.sbatch): each shard judged its block's first N items, of shard_count.
    limit_per_shard: bool | None = optional_field()
    #: the eval array's shards a ``judge-eval merge --allow-missing-shards`` left out (its run.json's
    #: ``shard_array``), of shard_count; n_missing_shard_records: the records of the data their blocks hold (absent
    #: where the array recorded no count). Their items are among those without a prediction (``n_missing``).
    missing_shards: list[int] | None = optional_field()
    shard_count: int | None = optional_field()
    n_missing_shard_records: int | None = optional_field()
    #: records whose expert score or aggregate lies outside their rubric's scale (the load's
    #: ``judge.records.LoadReport.n_off_scale``): scored as given, against that reference
    n_off_scale: int | None = optional_field()
    #: the first 20 of them as the load names them ("line 2" of a JSONL file, "row index 1" of a table)
    off_scale_rows: list[str] | None = optional_field()
    #: exact duplicate rows of the records (same id, same content) the load left out, the first copy scored
    #: (``judge.records.LoadReport.n_duplicates``); duplicate_rows: the first 20, as "line 8 = line 3"
    n_duplicate_rows: int | None = optional_field()
    duplicate_rows: list[str] | None = optional_field()
    #: the verdict format the outputs were read as where the run's ``run.json`` names none: ``integer`` when none
    #: holds a ``[RESULT]`` tag and some were read as verdicts (``eval.scoring.pollux_official.bare_integer_outputs``),
    #: so POLLUX's repository evaluator is left out, as for a run that names the format
    verdict_format_inferred: str | None = optional_field()
    #: true where rows were read as verdicts but none holds a raw output (scores converted from another tool), so
    #: POLLUX's repository evaluator, which reads the output's text, is left out
    #: (``eval.scoring.pollux_official.no_raw_outputs``)
    no_raw_outputs: bool | None = optional_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Notes:
        return _read(cls, data or {"n_unknown_ids": 0})


@dataclass(frozen=True)
class OfficialSplit(_MetricsRecord):
    """POLLUX's repository evaluator over one test (``eval.scoring.pollux_official``)."""

    n: int
    n_parsed: int
    format_acc: float
    score_acc: float
    score_format_acc: float
    mse: float
    note: str
    n_no_prediction: int
    n_request_failed: int
    n_no_reference: int
    n_reference_from_experts: int
    n_regression: int
    n_regression_clipped: int


@dataclass(frozen=True)
class PolluxOfficial(_MetricsRecord):
    title: str
    extraction: str
    reference: str
    splits: dict[str, OfficialSplit]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PolluxOfficial:
        return _read(cls, data, splits=keyed(OfficialSplit.from_json))


@dataclass(frozen=True)
class RunInfo(_MetricsRecord):
    """The run's provenance (its ``run.json``), each None where it does not say."""

    backend: str | None
    model: str | None
    prompt_version: str | None
    git_revision: str | None
    #: The judge's verdict format (``tagged`` or ``integer``; absent from runs written before it was kept).
    verdict_format: str | None = optional_field()

    @classmethod
    def of(cls, info: Mapping[str, Any] | None, where: str = "metrics.json") -> RunInfo | None:
        """From a run's provenance (``judge.plumbing.provenance.read_provenance``, ``where`` its file) or
        metrics.json's ``run``; None for a run without one.

        Raises:
            JsonRecordError: a field that is neither text nor null, naming it.
        """
        if not info:
            return None
        # every field filled, an absent key as None: a run.json without a backend is read, not refused
        return read_record(cls, {f.name: info.get(f.name) for f in fields(cls)}, where=where, by_type=cls.json_by_type)


@dataclass(frozen=True, kw_only=True)
class Metrics(_MetricsRecord):
    """``metrics.json``.

    Attributes:
        judge: the judge's label; target: MAE's reference, "mode" or "mean" of the experts.
        settings: how the metrics were computed; levels: the confusion matrices' axes, every whole level of the
            items' readable scales, every expert score as given, and a judge's level on its item's range no expert
            gave where that range is at most a rubric's levels (the judge's scores off the scale are counted in
            each ``Confusion``'s off-scale rows; a file written before those rows has the judge's levels here too).
        splits: per test (``item_table.SPLITS``) its ``SplitMetrics``.
        validity: the validity section (``judge.metrics_json.validity.Validity``); None for files written before it
            existed.
        data, predictions: the files scored; notes: what the join counted.
        pollux_official: POLLUX's repository evaluator (not the paper's metrics); run: the run's provenance.
        extra: keys of a file written by a later version, kept and shown as they are.
    """

    judge: str
    target: str
    settings: Settings
    levels: list[float] = field(default_factory=list)
    splits: dict[str, SplitMetrics]
    validity: Validity | None = optional_field()
    data: str | None = optional_field()
    predictions: str | None = optional_field()
    notes: Notes | None = optional_field()
    pollux_official: PolluxOfficial | None = optional_field()
    run: RunInfo | None = None  # written as {} for a run folder without provenance
    extra: dict[str, Any] = extra_field()

    def items(self) -> Iterator[tuple[str, Any]]:
        for name, value in super().items():
            yield name, ({} if name == "run" and value is None else value)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Metrics:
        return _read(cls, data, judge=_text, data=_text_or_none, predictions=_text_or_none,
                     target=_one_of(*TARGETS), settings=Settings.from_json,
                     splits=keyed(SplitMetrics.from_json),
                     notes=Notes.from_json, pollux_official=PolluxOfficial.from_json, run=RunInfo.of,
                     validity=Validity.from_json)

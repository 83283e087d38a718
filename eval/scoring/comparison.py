"""The typed ``compare.json``: what ``judge-eval compare`` builds (``eval.scoring.compare.compare``) and its Markdown,
its page and its console headline read (``eval.scoring.compare``, ``eval.reports.html_report``,
``eval.reports.html_explorer``, ``eval.validity.render``).

``Comparison.to_json()`` is the file's JSON object, key for key as before (``judge.metrics_json.json_record``); NaN (a
statistic with no paired item) is written as null by ``eval.scoring.item_table.dumps`` and read back as NaN by
``Comparison.from_json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judge.metrics_json.json_record import JsonRecord, keyed, listed, optional_field, read_record
from judge.metrics_json.metrics import NUMBER_READERS, Interval, Metrics
from judge.metrics_json.validity import PairedValidity

__all__ = ["Comparison", "Paired", "PairedFailures", "RunComparison", "SplitComparison"]


class _ComparisonRecord(JsonRecord):
    json_where = "compare.json"
    json_by_type = NUMBER_READERS


def _read(cls, data: Mapping[str, Any], **readers) -> Any:
    return read_record(cls, data, where=cls.json_where, by_type=cls.json_by_type, **readers)


def _by_metric(cells: Mapping[str, Any]) -> dict[str, Paired]:
    return keyed(Paired.from_json)(cells)


@dataclass(frozen=True)
class Paired(_ComparisonRecord):
    """One statistic of both judges on the items both scored (``eval.scoring.bootstrap.paired_bootstrap``).

    Attributes:
        n: paired items; a, b: the baseline's and the run's statistic on them; delta: b - a; ci: its interval,
        read off the resamples with p_value by one count (it excludes 0 exactly when p_value < alpha); p_value: the
        two-sided paired-bootstrap p-value of delta = 0; verdict: "better", "worse", "n.s." (also, whatever the
        p-value, for a cell of fewer than ``eval.scoring.compare.MIN_PAIRED`` paired items or instructions) or "—"
        (undefined); n_resamples: the resamples whose delta was defined, over which
        ``p_value`` is a share (its resolution: a p-value of 0 means below 2 / n_resamples), absent where no
        resample was drawn; n_units: what the bootstrap resampled and the minimum counts, the paired items or,
        under ``--bootstrap-unit instruction``, their instructions (absent in a compare.json written before);
        p_holm: in a table by evaluated model, task type or criterion, ``p_value`` adjusted by Holm's step-down
        method over that table's cells of the metric that may be called (``eval.scoring.compare``), the p-value
        ``verdict`` is read against there; absent in the overall cells (called on ``p_value``), in cells too small
        to call, in cells not called and in a compare.json written before. why_no_call: why the cell is not called
        whatever its p-value (verdict "—"): "targets differ" where the two runs' MAE targets (``--target``) or
        correlations' references (``--spearman-target``) differ, so that identical scores would differ too, in a
        cell with a delta and enough paired units to call; absent in every other cell (one too small to call reads
        "n.s." as it would against one reference).
    """

    n: int
    a: float
    b: float
    delta: float
    ci: Interval
    p_value: float
    verdict: str
    n_resamples: int | None = optional_field()
    n_units: int | None = optional_field()
    p_holm: float | None = optional_field()
    why_no_call: str | None = optional_field()

    def resamples(self, n_boot: int) -> int:
        """The p-value's resolution: the resamples its share was taken over (``n_boot``, the number drawn, for a
        compare.json written before they were kept)."""
        return self.n_resamples if self.n_resamples is not None else n_boot

    @classmethod
    def of(cls, found: Mapping[str, Any], verdict: str, n_units: int | None = None,
           why_no_call: str | None = None) -> Paired:
        """From ``paired_bootstrap``'s result, the call made on it, the units it resampled and why it was not
        called (None where it was)."""
        return cls(found["n"], found["a"], found["b"], found["delta"], tuple(found["ci"]), found["p_value"], verdict,
                   found.get("n_resamples"), n_units, why_no_call=why_no_call)


@dataclass(frozen=True)
class PairedFailures(_ComparisonRecord):
    """Both judges' failed verdicts (the verdict did not parse, or its request failed) on the items both have a
    prediction for, paired: the deltas of ``Paired`` read only the items both scored, so a judge failing on most
    items can be better there on the few it answered.

    Attributes:
        n: items both runs have a prediction for; a, b: the baseline's and the run's failures among them; only_a,
        only_b: the items only the baseline, only the run failed on; p_value: McNemar's exact test of only_a
        against only_b (two-sided; 1.0 when no item differs); verdict: "better" (the run fails on fewer items),
        "worse" or "n.s." at the comparison's alpha.
    """

    n: int
    a: int
    b: int
    only_a: int
    only_b: int
    p_value: float
    verdict: str


@dataclass(frozen=True)
class SplitComparison(_ComparisonRecord):
    """One test: the overall cell's statistics (metric -> ``Paired``) and the cells by evaluated model, task type and
    criterion (label -> metric -> ``Paired``; Spearman only where it is pooled), and the failed verdicts paired
    (``PairedFailures``; None in a compare.json written before)."""

    overall: dict[str, Paired]
    by_model: dict[str, dict[str, Paired]]
    by_task_type: dict[str, dict[str, Paired]]
    by_criterion: dict[str, dict[str, Paired]]
    failures: PairedFailures | None = optional_field()

    def by(self, grouping: str) -> dict[str, dict[str, Paired]]:
        """The cells of a grouping: ``model``, ``task_type`` or ``criterion``."""
        return {"model": self.by_model, "task_type": self.by_task_type, "criterion": self.by_criterion}[grouping]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SplitComparison:
        def cells(block: Mapping[str, Any]) -> dict[str, dict[str, Paired]]:
            return keyed(_by_metric)(block)

        return _read(cls, data, overall=_by_metric, by_model=cells, by_task_type=cells, by_criterion=cells,
                     failures=PairedFailures.from_json)


@dataclass(frozen=True)
class RunComparison(_ComparisonRecord):
    """A run against the baseline: ``n_common``, the items both runs' tables hold (predicted or not; the paired
    statistics' ``n`` counts those of them both scored), per test the paired statistics, and the paired validity
    figures (empty when the baseline was scored without a validity section); ``first_only_baseline`` /
    ``first_only_run``: the id of the first item (in that run's table) the other run does not hold, None where it
    holds none (or in a compare.json written before they were kept)."""

    run: str
    folder: str
    n_common: int
    splits: dict[str, SplitComparison]
    validity: dict[str, PairedValidity]
    first_only_baseline: str | None = optional_field()
    first_only_run: str | None = optional_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunComparison:
        return _read(cls, data, splits=keyed(SplitComparison.from_json),
                     validity=keyed(PairedValidity.from_json))


@dataclass(frozen=True)
class Comparison(_ComparisonRecord):
    """``compare.json``: the runs (the first is the baseline), the settings, each comparison, and each run's own
    ``metrics.json`` (``metrics``, in run order)."""

    baseline: str
    runs: list[str]
    folders: list[str]
    alpha: float
    n_boot: int
    comparisons: list[RunComparison]
    metrics: list[Metrics]
    #: what the paired resamples drew, "item" or "instruction" (``--bootstrap-unit``); None: items (older files)
    bootstrap_unit: str | None = optional_field()
    #: the paired intervals' coverage, 1 - alpha, so that a call and its interval agree; None: 0.95 (older files)
    ci_level: float | None = optional_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comparison:
        return _read(cls, data, comparisons=listed(RunComparison.from_json),
                     metrics=listed(Metrics.from_json))

"""The typed ``validity`` section of ``metrics.json``: what ``eval.validity.section`` writes and the reports and
``judge-eval compare`` read (``eval.validity.render``, ``eval.scoring.compare``).

Why one module of ~630 lines: it is one file's schema, every record of which reads and writes by the same rules
(nulls kept, counts checked, the file named in errors); split, a record's rules would live apart from its section's.

The statistics (``alt_test``, ``ceiling``, ``agreement``, ``bias``) return JSON-ready dicts, pinned by their own
tests; the section reads them into these types once (``Validity.from_json``) and every reader sees attributes.
``Validity.to_json()`` writes the same keys in the same order (``judge.metrics_json.json_record``).

Unlike the headline cells (``judge.metrics_json.metrics``), a null here stays None: "not computable" (an alpha without
pairable items, a slope of fewer than three answers) is part of the figure. A figure that is not computed at all
says why (``Unavailable``): the alternative annotator test without named experts, the length bias without the
answers' lengths.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from judge.metrics_json.json_record import (COUNT_READERS, PLAIN_NUMBER_READERS, JsonRecord, extra_field, keyed, listed,
                                            optional_field)
from judge.metrics_json.json_record import JsonRecordError, got_words, read_record, shown_value
from judge.plumbing.json_reading import value_words

__all__ = ["CEILING_FAILURES", "FAILURES", "SCORINGS", "TARGETS", "Agreement", "AgreementClass", "AlphaBoot", "AltTest", "AltTestExpert",
           "AltTestFamily", "AltTestSettings", "Ceiling", "LENIENCY_DIRECTIONS", "MIN_EXPERTS_TESTED",
           "LengthBias", "Leniency", "MarginalHomogeneity", "NamedExpertSlopes", "PairedFigure", "PairedLeniency",
           "PairedValidity",
           "PooledExpertSlopes", "SectionSettings", "Slope", "Unavailable", "UntestedExpert", "Validity",
           "ValidityCell", "ValiditySplit"]

Interval = list  # [low, high], either end None when not computable

# The alternative annotator test's parameters (eval.validity.alt_test computes it); here because the section
# records them.
SCORINGS = ("neg_rmse", "accuracy")
FAILURES = ("loss", "drop")
#: The ceiling's reference (the headline's target) and what a judge failure counts as in it (``eval.validity.ceiling``).
TARGETS = ("mode", "mean")
CEILING_FAILURES = ("worst", "drop")
#: The fewest tested experts the alt-test gives a verdict on by default (``eval.validity.alt_test``); the reference
#: notebook gives one on any number (``AltTestSettings.min_experts_tested`` 1).
MIN_EXPERTS_TESTED = 2


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A setting's value as an error shows it: a string quoted, a number as written, anything else in JSON's words
    (``value_words``), where a metrics.json's null read back was shown as Python's None."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return shown_value(value)  # cut with a mark past 40 characters
    return str(value) if _is_number(value) else value_words(value)


@dataclass(frozen=True)
class AltTestSettings:
    """The alt-test's parameters; defaults are the authors' (epsilon 0.2 for expert annotators, q 0.05, items
    with >= 2 experts, experts with >= 30 items).

    Attributes:
        epsilon: the cost-benefit margin granted to the judge (the paper: 0.2 for experts, 0.15 skilled annotators,
            0.1 crowd workers).
        q: the false discovery rate of the Benjamini–Yekutieli correction.
        scoring: ``neg_rmse`` (the default here) or ``accuracy``. The reference function's own default is
            ``accuracy``, but its notebook scores its rating-scale data sets (summeval, 10k_prompts, cebab_stars,
            lesion) with ``neg_rmse`` and only the categorical ones with ``accuracy``; POLLUX's rubrics are
            ordered levels, where a judge one level off should count as nearer than one two levels off.
        failures: ``loss`` (a judge failure is a loss for the judge) or ``drop`` (the reference: left out).
        min_items_per_expert: an expert is tested only with at least this many items.
        min_experts_per_item: an item takes part only with at least this many experts (the left-out one included).
        min_experts_tested: the test gives a verdict (``passed``) only with at least this many tested experts (this
            toolkit's 2 by default; 1 is the reference notebook's rule: ``eval.validity.alt_test``). A file written
            before the option reads as 2, the rule it was written under.
    """

    epsilon: float = 0.2
    q: float = 0.05
    scoring: str = "neg_rmse"
    failures: str = "loss"
    min_items_per_expert: int = 30
    min_experts_per_item: int = 2
    min_experts_tested: int = MIN_EXPERTS_TESTED

    def __post_init__(self) -> None:
        if self.scoring not in SCORINGS:
            raise ValueError(f"alt-test scoring must be one of {', '.join(SCORINGS)}, got {_shown(self.scoring)}")
        if self.failures not in FAILURES:
            raise ValueError(f"alt-test failures must be one of {', '.join(FAILURES)}, got {_shown(self.failures)}")
        if not (_is_number(self.q) and 0 < self.q < 1):  # a null from a metrics.json failed in the comparison
            raise ValueError(f"alt-test q must lie in (0, 1), got {_shown(self.q)}")
        # The tested difference of two advantage probabilities lies in [-1, 1]: an epsilon of 1 or more rejects
        # every expert whatever the judge does (a judge wrong on most items passes), and NaN fails in scipy.
        if not (_is_number(self.epsilon) and 0 <= self.epsilon < 1):
            raise ValueError(f"alt-test epsilon must lie in [0, 1), got {_shown(self.epsilon)}")
        if self.min_experts_per_item < 2 or self.min_items_per_expert < 1:
            raise ValueError("alt-test needs at least 2 experts per item and 1 item per expert")
        if self.min_experts_tested < 1:  # 0 would call a judge with no expert tested
            raise ValueError(f"alt-test min_experts_tested (--alt-test-min-tested) must be at least 1, got "
                             f"{self.min_experts_tested}")


class _SectionRecord(JsonRecord):
    json_where = "metrics.json's validity section"
    json_by_type = PLAIN_NUMBER_READERS  # its counts and numbers checked, as the rest of metrics.json's are


def _read(cls, data: Mapping[str, Any], /, **readers) -> Any:
    return read_record(cls, data, where=cls.json_where, by_type=cls.json_by_type, **readers)


def _left_out(value: Any) -> dict[str, int]:
    """``ValiditySplit.criteria_left_out``: criterion -> its items left out, each a whole number above 0 (the section
    writes the key only where any is). Checked on read, where the error names the file and the field, not first
    where a report draws it."""
    got = f"not {value_words(value)}"
    if isinstance(value, Mapping):
        wrong = [(name, n) for name, n in value.items() if not (type(n) is int and n > 0)]  # true is no count
        if not wrong:
            return dict(value)
        got = f"but {shown_value(wrong[0][0])} holds {got_words(wrong[0][1])}"  # an object, a value no count
    raise JsonRecordError(_SectionRecord.json_where, "ValiditySplit.criteria_left_out should be an object of item "
                          f"counts (whole numbers above 0), {got}")


def _table(reader):
    return keyed(reader)


@dataclass(frozen=True)
class Unavailable(_SectionRecord):
    """A figure not computed, and why (the alt-test without named experts: ``available`` False; the length bias
    without the answers' lengths: ``why`` alone)."""

    available: bool | None = optional_field()
    why: str = ""

    @classmethod
    def recognises(cls, data: Mapping[str, Any]) -> bool:
        return data.get("available") is False or set(data) == {"why"}


# ---------------------------------------------------------------------------- the alternative annotator test


@dataclass(frozen=True)
class AltTestExpert(_SectionRecord):
    """One tested expert: the judge's advantage probability over them, the t-test's p-value, Benjamini–Yekutieli's
    adjusted one, whether the judge wins (rejected), and whether the differences were constant (the stated rule)."""

    expert: str
    n_items: int
    advantage_probability: float
    p_value: float | None
    p_adjusted: float | None
    rejected: bool
    constant_difference: bool


@dataclass(frozen=True)
class UntestedExpert(_SectionRecord):
    """An expert with fewer items than the test needs (listed, never counted)."""

    expert: str
    n_items: int


@dataclass(frozen=True, kw_only=True)
class AltTest(_SectionRecord):
    """The alt-test over a cell's items (``eval.validity.alt_test.summarise``).

    The overall cell carries the test's settings and item counts too (``available`` True); a task type's or a
    criterion's result is its domain's within the family's one correction and carries the outcome, with
    ``n_items_tested`` and ``n_items_two_experts`` (absent from files written before a domain had them).

    Attributes:
        winning_rate: omega, the share of tested experts the judge wins against; advantage_probability: rho, the
            tested experts' mean; passed: omega >= 0.5 (None with fewer than ``min_experts_tested`` experts tested,
            2 where absent: a file written before the option).
    """

    available: bool | None = optional_field()
    epsilon: float | None = optional_field()
    q: float | None = optional_field()
    scoring: str | None = optional_field()
    failures: str | None = optional_field()
    min_items_per_expert: int | None = optional_field()
    min_experts_per_item: int | None = optional_field()
    min_experts_tested: int | None = optional_field()  # absent: a file written before the option, 2
    n_items: int | None = optional_field()
    n_items_few_experts: int | None = optional_field()
    n_items_judge_failed: int | None = optional_field()
    # the items a tested expert is left out on, and of those the ones with two named experts: the left-out expert's
    # one other (both absent from files before the counts)
    n_items_tested: int | None = optional_field()
    n_items_two_experts: int | None = optional_field()
    n_experts_tested: int = 0
    n_experts_rejected: int = 0
    winning_rate: float | None = None
    advantage_probability: float | None = None
    passed: bool | None = None
    experts: list[AltTestExpert] = field(default_factory=list)
    untested: list[UntestedExpert] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AltTest | Unavailable:
        if Unavailable.recognises(data):
            return Unavailable.from_json(data)
        return _read(cls, data, experts=listed(AltTestExpert.from_json),
                     untested=listed(UntestedExpert.from_json))


@dataclass(frozen=True)
class AltTestFamily(_SectionRecord):
    """The alt-test per domain (task type or criterion) under one Benjamini–Yekutieli correction: passes in
    ``n_passed`` of ``n_domains`` (domains with at least ``min_experts_tested`` tested experts, 2 where absent)."""

    available: bool
    epsilon: float
    q: float
    scoring: str
    failures: str
    min_items_per_expert: int
    min_experts_per_item: int
    n_passed: int
    n_domains: int
    n_domains_without_verdict: int | None = optional_field()  # the grouping's other domains (absent before it)
    min_experts_tested: int | None = optional_field()  # absent: a file written before the option, 2

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AltTestFamily | Unavailable:
        return Unavailable.from_json(data) if Unavailable.recognises(data) else _read(cls, data)


# --------------------------------------------------------------------------------- ceiling, agreement, bias


@dataclass(frozen=True, kw_only=True)
class Ceiling(_SectionRecord):
    """Each expert and the judge against the rest of the panel on the same pairs (``eval.validity.ceiling``).

    ``n_judge_failed`` counts the (item, expert) pairs the judge failed on (the unit of ``n_pairs``),
    ``n_items_judge_failed`` the items (the unit of ``n_items``; absent from files written before it); the section's
    ``settings.ceiling_failures`` says whether they count as the judge's largest error or are left out."""

    reference: str
    n_judge_failed: int
    n_items_judge_failed: int | None = optional_field()
    # answers off the item's scale, in kappa at a failure's level (pairs, items; absent from files written before)
    n_judge_off_scale: int | None = optional_field()
    n_items_judge_off_scale: int | None = optional_field()
    n_items: int
    n_pairs: int
    # the cell's items without a pair, by why (absent from files written before): fewer than two experts, no unique
    # mode among the others of any expert (mode reference), every pair dropped (a failure under ``drop``)
    n_items_few_experts: int | None = optional_field()
    n_items_no_reference: int | None = optional_field()
    n_items_dropped: int | None = optional_field()
    expert_mae: float | None
    judge_mae: float | None
    gap: float | None
    gap_ci: Interval
    expert_kappa: float | None
    judge_kappa: float | None
    # pairs left out of both kappas, an expert score, the judge's level or the reference off the value domain (mode
    # reference only; absent from files written before it)
    n_kappa_off_domain: int | None = optional_field()
    verdict: str | None  # "inside" / "outside" the experts' range; None without pairs or without an interval


@dataclass(frozen=True)
class AgreementClass(_SectionRecord):
    """The judge on the items whose experts were unanimous, a majority, or split."""

    n: int
    n_judged: int
    exact: float | None  # the judge's share equal to the unique mode; None for split items
    mae_to_mean: float | None


@dataclass(frozen=True)
class AlphaBoot(_SectionRecord):
    resamples: int
    items_per_resample: int
    clusters_per_resample: int | None = optional_field()  # resampling whole instructions (``bootstrap_unit``)
    # the usable resamples (both alphas defined) of ``resamples`` drawn; under 90 % of them no interval (None: none
    # drawn, or a file written before the count)
    n_resamples: int | None = optional_field()


@dataclass(frozen=True, kw_only=True)
class Agreement(_SectionRecord):
    """Krippendorff's alpha with and without the judge, quadratic kappa, agreement by class
    (``eval.validity.agreement``)."""

    value_domain: list[float]
    # the items both alphas are over, two expert scores or more on the domain (absent from files written before it,
    # whose alpha with the judge also took items of one expert)
    n_items_alpha: int | None = optional_field()
    alpha_experts: float | None
    alpha_with_judge: float | None
    alpha_difference: float | None
    alpha_difference_ci: Interval
    alpha_boot: AlphaBoot
    n_kappa: int
    kappa_quadratic: float | None
    by_expert_agreement: dict[str, AgreementClass]
    # items whose judge verdict failed: alpha with the judge, kappa and the classes are over its readable verdicts
    n_items_judge_failed: int | None = optional_field()
    # (judge, mode) pairs with a value off the value domain (a mode of 0.5 between levels): not in kappa or n_kappa
    n_kappa_off_domain: int | None = optional_field()
    # items with a judge answer whose experts have no unique mode: not in kappa or the homogeneity table (absent from
    # files written before it)
    n_items_no_mode: int | None = optional_field()
    # items whose judge answer lies off the item's scale: out of alpha with the judge and kappa, unique mode or not
    n_items_judge_off_scale: int | None = optional_field()
    # expert scores that are no level of the value domain (a half-point, an off-rubric score): out of both alphas
    n_expert_scores_off_domain: int | None = optional_field()
    # of the n_items_alpha items, those the judge failed on and answered off the scale: what alpha with it left out
    n_alpha_items_judge_failed: int | None = optional_field()
    n_alpha_items_judge_off_scale: int | None = optional_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Agreement:
        return _read(cls, data, alpha_boot=AlphaBoot.from_json, by_expert_agreement=_table(AgreementClass.from_json))


@dataclass(frozen=True)
class Leniency(_SectionRecord):
    """The judge's mean signed error against the experts' mean, oriented so that + is lenient."""

    n: int
    mean_signed_error: float | None
    ci: Interval
    direction: str  # "lenient", "harsh" or "neither"
    # items with an experts' mean whose judge verdict failed, or lies off the item's scale: out of the errors (absent
    # from files written before the counts, whose leniency took off-scale answers in)
    n_judge_failed: int | None = optional_field()
    n_judge_off_scale: int | None = optional_field()
    # items with an experts' mean and no readable scale whose judge answer lies outside the experts' observed range
    # (the ends its levels are read against): out of kappa and alpha, kept in the errors (absent from files written
    # before they were kept, which counted them in n_judge_off_scale and left them out)
    n_judge_outside_observed: int | None = optional_field()


@dataclass(frozen=True)
class MarginalHomogeneity(_SectionRecord):
    """The Stuart–Maxwell test of the judge x experts' mode table, clustered by answer (``levels`` the levels
    tested; ``why`` when no item is off the diagonal)."""

    n: int
    judge_margin: list[float]
    experts_margin: list[float]
    levels: list[float]
    statistic: float | None
    df: int | None
    p_value: float | None
    why: str | None = optional_field()
    # the overall table's items of a Critical criterion (best at the lowest level), their levels read flipped on the
    # item's scale (low + high - level) as leniency orients them; absent from a criterion's table (one orientation,
    # its own levels) and from files written before the overall table was oriented
    n_items_oriented: int | None = optional_field()
    # the levels the oriented table's margins run over: the cell's value domain and any level a flip reads outside
    # it (an unreadable scale's ends are its criterion's range over the whole table); absent where
    # ``n_items_oriented`` is, the margins then running over the cell's value domain
    margin_levels: list[float] | None = optional_field()


@dataclass(frozen=True)
class Slope(_SectionRecord):
    """A residual's slope on log answer length, with its t interval."""

    n: int
    slope: float
    ci: Interval

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Slope | None:
        return None if data is None else _read(cls, data)


@dataclass(frozen=True)
class NamedExpertSlopes(_SectionRecord):
    """Each named expert's leave-one-out slope, and their range (absent when no expert has one); ``why`` there is
    no flag where fewer experts have a slope than a flag needs (``eval.validity.bias.MIN_EXPERT_SLOPES``)."""

    by_expert: dict[str, Slope]
    range: Interval | None = optional_field()
    why: str | None = optional_field()


@dataclass(frozen=True)
class PooledExpertSlopes(_SectionRecord):
    """Without named experts: no expert slope (``pooled`` None) and ``why`` (each item's leave-one-out residuals
    sum to 0, so a pooled slope is 0 by construction and compares with nothing). Files written before that carry a
    pooled slope and no ``why``."""

    pooled: Slope | None
    why: str | None = optional_field()


@dataclass(frozen=True)
class LengthBias(_SectionRecord):
    """The judge's length slope beside the experts' (``eval.validity.bias.length_bias``)."""

    judge: Slope | None
    experts: NamedExpertSlopes | PooledExpertSlopes
    flag: str | None  # "lenient on long answers", "harsh on long answers" or None
    # items with two experts or more whose judge verdict failed, or lies off the item's scale: out of the judge's
    # slope (absent from files written before the counts)
    n_judge_failed: int | None = optional_field()
    n_judge_off_scale: int | None = optional_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LengthBias | Unavailable:
        if Unavailable.recognises(data):
            return Unavailable.from_json(data)

        def experts(block: Mapping[str, Any]) -> NamedExpertSlopes | PooledExpertSlopes:
            if "pooled" in block:
                return PooledExpertSlopes(Slope.from_json(block["pooled"]), block.get("why"))
            return _read(NamedExpertSlopes, block, by_expert=_table(Slope.from_json))

        return _read(cls, data, judge=Slope.from_json, experts=experts)


# ----------------------------------------------------------------------------------------- cells and splits


@dataclass(frozen=True, kw_only=True)
class ValidityCell(_SectionRecord):
    """Every validity figure of one cell (overall, a task type, a criterion).

    ``agreement`` and ``marginal_homogeneity`` are None in a task type's cell (they are read per criterion, one
    rubric's scale, and overall as a summary pooling every criterion's levels), ``length_bias`` outside the overall
    cells. The file repeats alpha and kappa beside ``agreement`` for
    its readers; here they are properties of it.
    """

    n_items: int
    value_domain: list[float]
    ceiling: Ceiling
    n_items_missing: int | None = optional_field()  # items without a prediction, left out of every figure
    leniency: Leniency
    agreement: Agreement | None = optional_field()
    marginal_homogeneity: MarginalHomogeneity | None = optional_field()
    length_bias: LengthBias | Unavailable | None = optional_field()
    alt_test: AltTest | Unavailable
    extra: dict[str, Any] = extra_field()

    _REPEATED = ("alpha_experts", "alpha_with_judge", "kappa_quadratic")

    @property
    def alpha_experts(self) -> float | None:
        return self.agreement.alpha_experts if self.agreement else None

    @property
    def alpha_with_judge(self) -> float | None:
        return self.agreement.alpha_with_judge if self.agreement else None

    @property
    def kappa_quadratic(self) -> float | None:
        return self.agreement.kappa_quadratic if self.agreement else None

    def items(self) -> Iterator[tuple[str, Any]]:
        for name, value in super().items():
            yield name, value
            if name == "agreement":
                yield from ((key, getattr(self, key)) for key in self._REPEATED)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ValidityCell:
        data = {k: v for k, v in data.items() if k not in cls._REPEATED}
        return _read(cls, data, ceiling=Ceiling.from_json, leniency=Leniency.from_json,
                     agreement=Agreement.from_json, marginal_homogeneity=MarginalHomogeneity.from_json,
                     length_bias=LengthBias.from_json, alt_test=AltTest.from_json)


@dataclass(frozen=True, kw_only=True)
class ValiditySplit(_SectionRecord):
    """One test's validity: the lead ``sentence``, the cells, the alt-test's families per grouping."""

    overall: ValidityCell
    alt_test_domains: dict[str, AltTestFamily | Unavailable]
    by_task_type: dict[str, ValidityCell]
    by_criterion: dict[str, ValidityCell]
    sentence: str
    # criterion -> its items left out of every figure (eval.validity.section.too_wide_to_rate); absent where none is,
    # as in a file written before the rule
    criteria_left_out: dict[str, int] | None = optional_field()
    extra: dict[str, Any] = extra_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ValiditySplit:
        cells = _table(ValidityCell.from_json)
        return _read(cls, data, overall=ValidityCell.from_json, alt_test_domains=_table(AltTestFamily.from_json),
                     by_task_type=cells, by_criterion=cells, criteria_left_out=_left_out)


@dataclass(frozen=True)
class SectionSettings(_SectionRecord):
    """How the section was computed (``eval.validity.section.ValiditySettings``) and the ceiling's reference."""

    alt_test: AltTestSettings
    n_boot: int
    alpha_boot: int
    seed: int
    level: float
    target: str
    ceiling_margin: float | None = optional_field()  # the ceiling verdict's margin, in MAE (eval.validity.ceiling)
    ceiling_min_items: int | None = optional_field()  # fewer items: "inconclusive"
    # what the ceiling's and the alpha difference's intervals resample (None: written before the setting, items)
    bootstrap_unit: str | None = optional_field()
    # what a judge failure counts as in the ceiling: "worst" or "drop" (None: written before the setting, drop)
    ceiling_failures: str | None = optional_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SectionSettings:
        # Checked here, where the error can name the file and the field: read as they are, a target of "median"
        # failed later without either, and a ceiling_failures of "maybe" read silently as drop.
        def one_of(allowed: tuple[str, ...], may_be_absent: bool = False) -> Any:
            def read(value: Any) -> Any:
                if value not in allowed and not (may_be_absent and value is None):
                    got = shown_value(value) if isinstance(value, str) else got_words(value)  # text says itself
                    raise ValueError(f"{got} is none of {', '.join(allowed)}")
                return value
            return read

        return _read(cls, data, alt_test=lambda block: read_record(AltTestSettings, block, where=cls.json_where,
                                                                           by_type=COUNT_READERS),
                     target=one_of(TARGETS), ceiling_failures=one_of(CEILING_FAILURES, may_be_absent=True))


@dataclass(frozen=True)
class Validity(_SectionRecord):
    """The ``validity`` section: its settings, whether the data names its experts, and each test's figures."""

    settings: SectionSettings
    named_experts: bool
    splits: dict[str, ValiditySplit]
    extra: dict[str, Any] = extra_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Validity:
        return _read(cls, data, settings=SectionSettings.from_json, splits=_table(ValiditySplit.from_json))


# ------------------------------------------------------------------------- two judges paired (compare.json)


@dataclass(frozen=True)
class PairedFigure(_SectionRecord):
    """A validity figure of the baseline and of the run on the same items, ``delta`` = run - baseline with its
    paired bootstrap interval (``eval.validity.paired``)."""

    json_where = "compare.json's paired validity"

    baseline: float
    run: float
    delta: float
    ci: Interval
    # the resamples the interval was read from, of ``PairedValidity.n_boot`` drawn (absent from files written before)
    n_resamples: int | None = optional_field()
    # the units the interval resampled (items, or instructions) and whether they are under MIN_VERDICT_UNITS
    # (eval.validity.paired; absent from files written before)
    n_units: int | None = optional_field()
    too_few_units: bool | None = optional_field()


#: What a paired leniency difference calls (``PairedLeniency.direction``).
LENIENCY_DIRECTIONS = ("less lenient", "more lenient", "n.s.")


@dataclass(frozen=True)
class PairedLeniency(_SectionRecord):
    """The leniency (oriented mean signed error against the experts' mean, + lenient) of the baseline and of the run
    over the items both scored on the item's scale, ``delta`` = run - baseline with its paired bootstrap interval
    (``eval.validity.paired``)."""

    json_where = "compare.json's paired validity"

    baseline: float
    run: float
    delta: float
    ci: Interval
    direction: str  # one of LENIENCY_DIRECTIONS: called only where the interval excludes 0 over enough units
    n: int  # the items both means are over
    # items with an experts' mean left out of both: failed on by either judge; of the rest, off its scale for either
    n_left_out_failed: int
    n_left_out_off_scale: int
    n_units: int
    too_few_units: bool
    n_resamples: int | None = optional_field()  # the usable resamples, where any were drawn

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairedLeniency:
        def one_of(value: Any) -> str:
            if value not in LENIENCY_DIRECTIONS:
                got = shown_value(value) if isinstance(value, str) else got_words(value)
                raise ValueError(f"{got} is none of {', '.join(LENIENCY_DIRECTIONS)}")
            return value

        return _read(cls, data, direction=one_of)


@dataclass(frozen=True)
class PairedValidity(_SectionRecord):
    """rho and the ceiling gap of a run against the baseline on one test (each a ``PairedFigure``, or why not), and
    the leniency difference (a ``PairedLeniency``, or why not; None: a compare.json written before it)."""

    json_where = "compare.json's paired validity"

    n_items: int
    n_boot: int
    rho: PairedFigure | Unavailable
    ceiling_gap: PairedFigure | Unavailable
    leniency: PairedLeniency | Unavailable | None = optional_field()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairedValidity:
        def figure(block: Mapping[str, Any]) -> PairedFigure | Unavailable:
            return Unavailable.from_json(block) if Unavailable.recognises(block) else PairedFigure.from_json(block)

        def leniency(block: Mapping[str, Any]) -> PairedLeniency | Unavailable:
            return Unavailable.from_json(block) if Unavailable.recognises(block) else PairedLeniency.from_json(block)

        return _read(cls, data, rho=figure, ceiling_gap=figure, leniency=leniency)

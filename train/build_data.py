"""Training rows from POLLUX-format records: one row per (record, expert or teacher verdict).

    judge-train build-data --data judge/data/sample.jsonl --recipe seq2seq --zero-shot drop --out runs/rows.jsonl

The released POLLUX benchmark is not training data: rows in its schema are refused (``BenchmarkRowsError``) unless
``--allow-benchmark-rows`` says otherwise (the ``ai-forever/POLLUX`` dataset card asks that the benchmark not be used for training).
Rows of ``judge-train data traces`` are refused too (``refuse_trace_rows``): each carries its item's every expert
rationale, so one row per kept trace would train each rationale once per trace; ``verdict_format: integer`` trains them.
So are rows whose ``split`` column names a side other than ``train`` (``refuse_other_split_rows``: the split stage's
``split.jsonl`` pools both sides; its ``train.jsonl`` is the file to give).

A record carries one or more verdicts as ``expert_scores`` with matching ``expert_feedback`` (a teacher model's
verdicts come in the same shape, one per row). Each verdict becomes a row unless a rule of the POLLUX paper
(Appendix B) or of this toolkit rejects it; every rejection is counted under its reason:

- ``zero_shot``        the record belongs to the Zero-Shot test (only with ``zero_shot="drop"``; ``"refuse"``
                       raises ``judge.LeakageError`` naming the rows, ``"allow"`` keeps them);
- ``no_expert_scores`` the record has no verdict at all (no scores, or every expert abstained): counted once per
                       record, as the GRPO recipe counts the same case;
- ``no_feedback``      the record has scores but no rationales;
- ``no_scale``         no scale can be read from the rubric;
- ``score_out_of_scale`` the verdict's score (or the regression label) lies outside the criterion's scale;
- ``not_russian``      fewer than ``min_russian_share`` of the rationale's letters are Cyrillic, its code left out
                       (``rationale_without_code``: closed fences, and inline spans that are not prose; an unclosed
                       fence and English prose in backticks count);
- ``too_few_words``    a rationale under two words (``judge.verdicts.gives_reasons``, the rule every training
                       stage applies), unless it is one word and the score is the scale's best level (paper, Appendix
                       B: "one word rationale are only eligible for the perfect scores"; the best level is 0 for the
                       two Critical criteria, the top elsewhere: ``judge.oriented_scale``); one with no word at all
                       (empty, blank, only punctuation) never is, whatever the score;
- ``tags_in_feedback`` the rationale contains ``[RESULT]`` or ``[END]`` (the target would not parse back), a
  ``[FEEDBACK]`` (a second block, which GRPO's tagged format reward refuses), or a ``<think>`` / ``</think>`` tag (a
  reasoning judge's block inside a rationale it was never served).

Each dropped verdict is kept with its reason (``BuildReport.dropped_rows``; ``build-data --out rows.jsonl`` writes them
to ``rows.dropped.jsonl``, ``dropped_path``), and the report names the first per reason (``first_dropped``).
The recipes add one more, ``too_long`` (the tokenized row exceeds ``max_length``; see ``drop_too_long`` and, on the
ids a recipe trains, ``drop_long_examples``). Records that repeat an earlier record's content under another id are
counted (``repeated_content``) and kept: each id may be meant, but every copy is trained on.
The seq2seq target is ``judge.render_target(feedback, score)`` with the verdict's own score; the regression row
carries ``judge.render_rationale_target(feedback)`` and, as its label, the record's ``criteria_score`` (mean over
experts, or the teacher's score) or, with ``score_target="expert"``, the verdict's own score.

Why one module of ~997 lines: the rules that drop a verdict, the report that counts each drop, and ``build-data``,
which prints that report and refuses what no recipe could train on, are one path; the recipes' data step
(``rows_for_config``, with the validation split ``split_rows`` draws by instruction group) and ``judge-train run``'s
early check take the same rules from here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import judge
from judge.plumbing.atomic_write import NotSynced, write_atomically, write_atomically_together
from judge import JudgeRecord, ScaleError
from judge.verdicts import gives_reasons, rationale_words

__all__ = ["BenchmarkRowsError", "BuildReport", "build_rows", "refuse_trace_rows", "zero_shot_records", "scores_off_the_rubric",
           "records_for_config", "rows_for_config", "split_rows", "instruction_id", "item_of", "records_by_prompt", "validation_unit", "drop_too_long", "drop_long_examples",
           "InstructionGroups", "VALIDATION_UNITS", "DEFAULT_VALIDATION_UNIT",
           "load_training_records", "load_training_records_report", "refuse_other_split_rows", "write_rows",
           "dropped_path", "main", "VERDICT_OR_THINK_TAG", "russian_share", "rationale_without_code", "without_code"]

logger = logging.getLogger(__name__)

_CYRILLIC = re.compile(r"[а-яёА-ЯЁ]")
_LETTER = re.compile(r"[^\W\d_]")
_CODE = re.compile(r"```.*?(```|$)|`[^`\n]*`", re.DOTALL)
#: A closed fence; an unclosed fence's marker with its language tag; an inline span (``rationale_without_code``)
_RATIONALE_CODE = re.compile(r"```.*?```|```[\w+#.-]*[ \t]*(?=\n|$)|```|`[^`\n]*`", re.DOTALL)
#: A plain word as prose writes it: letters, then at most one punctuation mark
_PLAIN_WORD = re.compile(r"[^\W\d_]+[,.;:!?]?")
#: Verdict tags, and reasoning tags: a <think> left in a feedback would teach the judge to write one in its answer,
#: and a second [FEEDBACK] a second block, which GRPO's format reward (``judge.verdicts.bare_tagged_answer``) refuses.
#: The synthetic annotate stage asks its teacher again for such a feedback, rather than keep a label dropped here.
VERDICT_OR_THINK_TAG = re.compile(r"\[\s*(FEEDBACK|RESULT|END)\s*\]|</?think\s*>", re.IGNORECASE)

#: What ``split_rows`` can draw validation rows by, and the row field each hashes.
VALIDATION_UNITS = {"instruction_group": "instruction_group", "instruction": "instruction_id", "record": "record_id"}
#: What a fresh run draws its validation rows by (``validation_unit``).
DEFAULT_VALIDATION_UNIT = "instruction_group"


class BenchmarkRowsError(judge.LeakageError):
    """Training data in the released POLLUX benchmark's schema: test data that would leak into training."""


@dataclass
class BuildReport:
    """What the builder kept and dropped.

    Attributes:
        n_records: records read.
        n_verdicts: (score, rationale) pairs considered (records with no rationales count one per score; a record
            with no score at all counts once, under ``no_expert_scores``, so that every record read is a row or a
            drop).
        n_rows: rows kept.
        dropped: reason -> number of verdicts dropped for it.
        dropped_rows: each verdict ``build_rows`` dropped (``id``, ``record_id``, ``score``, ``feedback``,
            ``drop_reason``), one per count in ``dropped``; not in ``to_dict``.
        zero_shot_ids: ids of the Zero-Shot records dropped (first 20).
        cut_by_max_rows: training rows left out by ``max_rows`` (None where the recipe does not count them).
        eval: the validation rows: their ``source``, ``n_rows`` and what was ``dropped`` from them (None where the
            recipe holds none out), so that the training and validation counts add up to the rows built; from an
            ``eval_data`` also ``n_rows_sharing_instructions``, its rows whose instruction is trained on (counted
            before a recipe's length check on the ids it trains, ``drop_long_examples``).
        repeated_content: records whose content (instruction, answers, criterion, rubric, scores, rationales) repeats
            an earlier record's under another id: kept, and counted so that a copied record shows.
        first_dropped: reason -> the id of the first row dropped for it, where the builder names them (``drop``):
            a count alone does not say which row to look at.
        duplicate_input_rows: exact duplicate rows of the input (same id, same content) the loader left out
            (``judge.LoadReport``'s ``n_duplicates``): ``n_records`` plus these is the rows read.
        looser_row_tolerance: integer-format trace rows judged by a ``tolerance`` they record that is looser than
            the one the config sets (a row's own rule wins: ``train.seq2seq.integer_rows``); kept or dropped by it
            all the same, and counted so that a config's stricter tolerance is seen not to reach them.
        rule_differs_from_config: integer-format trace rows judged by an ``agreement`` or ``tolerance`` they record
            that differs from the one the config sets (stricter or looser; ``looser_row_tolerance`` counts those of a
            looser tolerance among them), counted as ``looser_row_tolerance`` is.
        kept_under_tied_modes: integer-format trace rows that agree with one of the experts' tied modes (by the
            row's recorded rule, the traces stage's ``no_unique_mode: any``, or the settings for rows that record
            none), which a config's ``no_unique_mode: skip`` does not reach. Counted as the rows are built, before
            the length check and the validation split (as ``looser_row_tolerance`` is): at most the rows trained.
        prompts_with_several_labels: prompts that integer-format trace rows of different items train under more than
            one score (``train.seq2seq.integer_rows``), counted as the rows are built.
    """

    n_records: int = 0
    n_verdicts: int = 0
    n_rows: int = 0
    dropped: Counter = field(default_factory=Counter)
    zero_shot_ids: list[str] = field(default_factory=list)
    validation_split: str = DEFAULT_VALIDATION_UNIT  # what the held-out rows are drawn by (``split_rows``)
    cut_by_max_rows: int | None = None
    eval: dict[str, Any] | None = None
    repeated_content: int = 0
    first_dropped: dict[str, str] = field(default_factory=dict)
    looser_row_tolerance: int = 0
    rule_differs_from_config: int = 0
    kept_under_tied_modes: int = 0
    prompts_with_several_labels: int = 0
    duplicate_input_rows: int = 0
    dropped_rows: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def drop(self, reason: str, row_id: Any) -> None:
        """Count one row dropped for ``reason``, keeping the first such row's id."""
        self.dropped[reason] += 1
        self.first_dropped.setdefault(reason, str(row_id))

    def drop_verdict(self, reason: str, record: JudgeRecord, index: int | None = None,
                     verdict: tuple[float, str | None] | None = None) -> None:
        """``drop`` one verdict of ``record`` (``index``; None for a record with no verdict, counted once), keeping it
        with its reason in ``dropped_rows`` (what ``build-data --out`` writes beside its rows)."""
        row_id = record.id if index is None else f"{record.id}/{index}"
        self.drop(reason, row_id)
        score, feedback = verdict or (None, None)
        self.dropped_rows.append({"id": row_id, "record_id": record.id, "score": score, "feedback": feedback,
                                  "drop_reason": reason})

    def drop_all(self, reason: str, record: JudgeRecord) -> None:
        """``drop_verdict`` every verdict of ``record``, or the record once when it has none."""
        verdicts = _verdicts(record)
        if not verdicts:
            self.drop_verdict(reason, record)
        for index, verdict in enumerate(verdicts):
            self.drop_verdict(reason, record, index, verdict)

    def summary(self) -> str:
        """One line: kept and dropped counts with their reasons."""
        reasons = ", ".join(f"{reason}={n}" for reason, n in sorted(self.dropped.items())) or "none"
        repeated = (f"; kept {self.repeated_content} record(s) repeating an earlier record's content under another id"
                    if self.repeated_content else "")  # fmt: skip
        return (
            f"{self.n_records} records, {self.n_verdicts} verdicts -> {self.n_rows} rows kept; "
            f"dropped {sum(self.dropped.values())}: {reasons}{repeated}{self.duplicates_line()}"
        )

    def duplicates_line(self) -> str:
        """The summary's words for ``duplicate_input_rows`` ("" when there are none)."""
        n = self.duplicate_input_rows
        return f"; {n} exact duplicate input row(s) left out before these counts" if n else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_records": self.n_records,
            "n_verdicts": self.n_verdicts,
            "n_rows": self.n_rows,
            "dropped": dict(sorted(self.dropped.items())),
            "validation_split": self.validation_split,
            **({} if self.cut_by_max_rows is None else {"cut_by_max_rows": self.cut_by_max_rows}),
            **({} if self.eval is None else {"eval": self.eval}),
            **({"repeated_content": self.repeated_content} if self.repeated_content else {}),
            **({"first_dropped": dict(sorted(self.first_dropped.items()))} if self.first_dropped else {}),
            **({"looser_row_tolerance": self.looser_row_tolerance} if self.looser_row_tolerance else {}),
            **({"rule_differs_from_config": self.rule_differs_from_config} if self.rule_differs_from_config else {}),
            **({"kept_under_tied_modes": self.kept_under_tied_modes} if self.kept_under_tied_modes else {}),
            **({"prompts_with_several_labels": self.prompts_with_several_labels}
               if self.prompts_with_several_labels else {}),
            **({"duplicate_input_rows": self.duplicate_input_rows} if self.duplicate_input_rows else {}),
        }

    def count_held_out(self, config, held_out: Sequence[dict[str, Any]], eval_report: BuildReport | None) -> None:
        """Fill ``eval``: the validation rows built from ``config.eval_data`` (``eval_report``: what they dropped),
        or held out of ``config.data`` by ``validation_split``."""
        if eval_report is not None:
            self.eval = {"source": config.eval_data, "n_records": eval_report.n_records,
                         "n_verdicts": eval_report.n_verdicts, "n_rows": len(held_out),
                         "dropped": dict(sorted(eval_report.dropped.items())),
                         **({"duplicate_input_rows": eval_report.duplicate_input_rows}
                            if eval_report.duplicate_input_rows else {}),
                         **({"looser_row_tolerance": eval_report.looser_row_tolerance}
                            if eval_report.looser_row_tolerance else {}),
                         **({"rule_differs_from_config": eval_report.rule_differs_from_config}
                            if eval_report.rule_differs_from_config else {}),
                         **({"kept_under_tied_modes": eval_report.kept_under_tied_modes}
                            if eval_report.kept_under_tied_modes else {}),
                         **({"prompts_with_several_labels": eval_report.prompts_with_several_labels}
                            if eval_report.prompts_with_several_labels else {})}  # fmt: skip
        else:
            self.eval = {"source": f"held out of data by {self.validation_split} (eval_fraction "
                                   f"{config.eval_fraction})", "n_rows": len(held_out), "dropped": {}}

    def count_shared_instructions(self, config, train: Sequence[dict[str, Any]],
                                  held_out: Sequence[dict[str, Any]]) -> None:  # fmt: skip
        """Record in ``eval`` how many validation rows from ``config.eval_data`` share their instruction with the
        training rows (``n_rows_sharing_instructions``), and warn when any do; every recipe that reads an
        ``eval_data`` calls it once its training rows are final. Shared is one ``instruction_group`` (the groups
        over both files' records, ``InstructionGroups``): a copy spelt apart is the same instruction to the judge."""
        trained = {row["instruction_group"] for row in train}
        shared = sum(row["instruction_group"] in trained for row in held_out)
        self.eval["n_rows_sharing_instructions"] = shared
        if shared:
            # Warned, not refused: a user may mean it; its validation loss then measures memory as much as judging.
            logger.warning("eval_data %s: %d of its %d rows share their instruction with training rows of %s: the "
                           "validation loss and the best checkpoint partly measure memory", config.eval_data, shared,
                           len(held_out), config.data)  # fmt: skip

    def cut_to_max_rows(self, train: list[dict[str, Any]], max_rows: int | None) -> list[dict[str, Any]]:
        """The first ``max_rows`` training rows, counting the rest in ``cut_by_max_rows``."""
        kept = train if max_rows is None else train[:max_rows]
        self.cut_by_max_rows = len(train) - len(kept)
        return kept

    def rows_line(self, train: Sequence[Any], held_out: Sequence[Any], max_rows: int | None) -> str:
        """What the run trains on, for the console: the rows after the length and ``max_rows`` cuts (a tiny config's
        ``max_rows: 4`` keeps 4 of 139 rows, which the rows kept before it do not say)."""
        cut = f" ({self.cut_by_max_rows} more left out by max_rows {max_rows})" if self.cut_by_max_rows else ""
        return f"{len(train)} training rows{cut}, {len(held_out)} validation rows"


def without_code(text: str) -> str:
    """``text`` with its fenced (an unclosed fence runs to the end) and inline code blanked out: the instructions
    stage's rule. A code task's text quotes code by design, whose identifiers say nothing of the language it is
    written in; every backticked span counts as quoted. A rationale is read by ``rationale_without_code``."""
    return _CODE.sub(" ", text)


def rationale_without_code(text: str) -> str:
    """``text`` with its code blanked out, by the rationale check's rule: a closed fence is code; an unclosed fence
    loses only its marker and language tag (the text after it counts: a fence the writer never closed is no proof
    that the rest is code); an inline span is code unless it holds three plain words in a row (letters, each with at
    most one punctuation mark after it), which is prose quoted in backticks, an English verdict among them.

    The instructions stage keeps ``without_code``, which leaves every backticked span and everything after an
    unclosed fence out: a task's text may quote foreign material in backticks, and its 5% bound would drop it.
    """
    def blank(match: re.Match) -> str:
        span = match.group(0)
        if span.startswith("```"):
            return " "
        words = [bool(_PLAIN_WORD.fullmatch(token)) for token in span[1:-1].split()]
        prose = any(all(words[i:i + 3]) for i in range(len(words) - 2))
        return span if prose else " "

    return _RATIONALE_CODE.sub(blank, text)


def russian_share(text: str) -> float:
    """Share of Cyrillic letters among the letters of ``text`` outside code (``rationale_without_code``): 0.0 when it
    has none."""
    letters = _LETTER.findall(rationale_without_code(text))
    if not letters:
        return 0.0
    return sum(1 for ch in letters if _CYRILLIC.match(ch)) / len(letters)


def _verdicts(record: JudgeRecord) -> list[tuple[float, str | None]]:
    feedback = record.expert_feedback or (None,) * len(record.expert_scores)
    return list(zip(record.expert_scores, feedback))


def build_rows(
    records: Iterable[JudgeRecord],
    *,
    recipe: str,
    zero_shot: str = "refuse",
    min_russian_share: float = 0.5,
    score_target: str = "mean",
    split_spec: judge.SplitSpec | None = None,
    groups: InstructionGroups | None = None,
) -> tuple[list[dict[str, Any]], BuildReport]:
    """Turn records into training rows.

    Args:
        records: judged items with ``expert_scores`` and ``expert_feedback``.
        recipe: ``"seq2seq"`` (target ``[FEEDBACK] ... [RESULT] n [END]``) or ``"regression"`` (target
            ``[FEEDBACK] ... [END]`` plus a float ``label``).
        zero_shot: ``"refuse"`` (raise on Zero-Shot records), ``"drop"`` or ``"allow"``.
        min_russian_share: minimum Cyrillic share of a rationale's letters.
        score_target: regression label: ``"mean"`` (``criteria_score``) or ``"expert"`` (the verdict's score).
        split_spec: the Zero-Shot split ``zero_shot`` applies (default: the packaged one).
        groups: the instruction groups of every record the run reads, these among them (default: the groups over
            ``records`` alone).

    Returns:
        (rows, report). A row has ``id`` (``<record id>/<verdict index>``), ``record_id``, ``instruction_id`` and
        ``instruction_group`` (what ``split_rows`` draws by), ``prompt`` (the rendered
        Russian judge prompt, no chat wrapping), ``feedback``, ``score`` (the verdict's score), ``completion`` (the
        target text) and, for regression, ``label``.

    Raises:
        judge.LeakageError: Zero-Shot records with ``zero_shot="refuse"``.
        ConfigError: records that are the traces stage's rows (``refuse_trace_rows``).
    """
    if recipe not in ("seq2seq", "regression"):
        raise ValueError(f"recipe must be 'seq2seq' or 'regression', got {recipe!r}")
    records = list(records)
    refuse_trace_rows(records)
    groups = groups if groups is not None else InstructionGroups(records)
    report = BuildReport(n_records=len(records), repeated_content=_repeated_content(records))
    records, held_out = zero_shot_records(records, zero_shot, split_spec)
    for record in held_out:
        # A record whose experts all abstained counts once, as under no_expert_scores: it is still one read.
        report.n_verdicts += max(1, len(_verdicts(record)))
        report.drop_all("zero_shot", record)
        if len(report.zero_shot_ids) < 20:
            report.zero_shot_ids.append(record.id)

    rows: list[dict[str, Any]] = []
    for record in records:
        verdicts = _verdicts(record)
        if not verdicts:
            # Empty expert_scores, or every expert abstained (the loader keeps such items without a score): nothing
            # to train on, and without a count the record would vanish from the report unexplained.
            report.n_verdicts += 1
            report.drop_verdict("no_expert_scores", record)
            continue
        report.n_verdicts += len(verdicts)
        try:
            scale = judge.oriented_scale(record.criteria_name, record.rubrics)
        except ScaleError:
            report.drop_all("no_scale", record)
            continue
        if recipe == "regression" and score_target != "expert" and not all(map(scale.contains, record.expert_scores)):
            # The label is the experts' mean: one expert's score off the rubric (a -1 on 0..2) would pull every
            # row's label, though that expert's own row is dropped.
            report.drop_all("label_from_off_scale_scores", record)
            continue
        prompt = judge.render_prompt(record)
        label = record.criteria_score
        for index, (score, feedback) in enumerate(verdicts):
            reason = _reject(score, feedback, scale, min_russian_share)
            if reason is None and recipe == "regression":
                label = score if score_target == "expert" else record.criteria_score
                if label is None or not scale.contains(label):
                    reason = "score_out_of_scale"
            if reason is not None:
                report.drop_verdict(reason, record, index, (score, feedback))
                continue
            feedback = feedback.strip()
            row = {"id": f"{record.id}/{index}", "record_id": record.id, "instruction_id": instruction_id(record),
                   "instruction_group": groups(record), "prompt": prompt, "feedback": feedback,
                   "score": float(score)}  # fmt: skip
            if recipe == "seq2seq":
                row["completion"] = judge.render_target(feedback, score)
            else:
                row["completion"] = judge.render_rationale_target(feedback)
                row["label"] = float(label)
            rows.append(row)
    report.n_rows = len(rows)
    logger.info("training data: %s", report.summary())
    if report.repeated_content:
        logger.warning("%d record(s) repeat an earlier record's content under another id: kept, so each copy is "
                       "trained on", report.repeated_content)
    return rows, report


#: The columns ``judge-train data traces`` adds to an item's record (``train.synthetic.traces``): its integer, and the
#: item and sample the row is one trace of.
_TRACE_COLUMNS = ("item_id", "trace_index")


def refuse_trace_rows(records: Sequence[JudgeRecord]) -> None:
    """Refuse records that are ``judge-train data traces`` rows: each carries its item's whole record (every expert
    rationale), one row per kept trace, so the tagged and regression rows built from them would train every expert
    rationale once per trace, and never the trace itself.

    Raises:
        ConfigError: naming the first such record and what to train them with instead.
    """
    from judge.plumbing.config_files import ConfigError

    for record in records:
        if "reasoning_score" in record.extra and any(name in record.extra for name in _TRACE_COLUMNS):
            raise ConfigError(f"record {record.id!r}: these are `judge-train data traces` rows (reasoning_score, "
                              "item_id, trace_index): train them with the seq2seq recipe and verdict_format: integer")


def _repeated_content(records: Sequence[JudgeRecord]) -> int:
    """How many records repeat an earlier one's content under another id (the loader drops only repeated lines)."""
    seen: set[tuple] = set()
    repeated = 0
    for r in records:
        key = (r.instruction, r.reference_answer, r.answer, r.criteria_name, r.rubrics, r.criteria_score,
               tuple(r.expert_scores), tuple(r.expert_feedback or ()))  # fmt: skip
        repeated += key in seen
        seen.add(key)
    return repeated


#: What a Zero-Shot refusal tells a judge-train user to do instead.
_ZERO_SHOT_HINT = ("In judge-train: zero_shot: drop (--zero-shot drop) leaves Zero-Shot rows out and counts them, "
                   "zero_shot: allow (--zero-shot allow) trains on every row without the check")  # fmt: skip


def zero_shot_records(records: Iterable[JudgeRecord], zero_shot: str, spec: judge.SplitSpec | None = None,
                      ) -> tuple[list[JudgeRecord], list[JudgeRecord]]:  # fmt: skip
    """The paper's no-Zero-Shot rule for training data, as every judge-train stage applies it.

    Args:
        records: the candidate training records.
        zero_shot: ``"refuse"`` (raise when any record belongs to the Zero-Shot test), ``"drop"`` (leave them out)
            or ``"allow"`` (keep every record, unchecked).
        spec: the split whose task types and criteria are held out (default: the packaged one; a judge-train
            config's ``split_file``: ``train.config.zero_shot_split``).

    Returns:
        (records to train on, Zero-Shot records left out), both in input order.

    Raises:
        ValueError: an unknown ``zero_shot``; judge.LeakageError: Zero-Shot records with ``zero_shot="refuse"``.
    """
    if zero_shot not in ("refuse", "drop", "allow"):
        raise ValueError(f"zero_shot must be 'refuse', 'drop' or 'allow', got {zero_shot!r}")
    records = list(records)
    if zero_shot == "refuse":
        try:
            judge.check_no_leakage(records, spec)
        except judge.UnknownTaskTypeError as err:
            raise judge.UnknownTaskTypeError(err.source, err.row, err.field, f"{err.message}. {_ZERO_SHOT_HINT}") from None
        except judge.LeakageError as err:
            raise judge.LeakageError(f"{err}. {_ZERO_SHOT_HINT}") from None
    if zero_shot != "drop":
        return records, []
    from judge.splits import splits_of

    try:
        # By instruction: a held-out criterion's row dropped alone left its instruction's other rows to train on.
        splits = splits_of(records, spec or judge.load_split_spec())
    except judge.UnknownTaskTypeError as err:
        raise judge.UnknownTaskTypeError(err.source, err.row, err.field, f"{err.message}. {_ZERO_SHOT_HINT}") from None
    kept = [r for r, split in zip(records, splits) if split != judge.ZERO_SHOT]
    held_out = [r for r, split in zip(records, splits) if split == judge.ZERO_SHOT]
    return kept, held_out


def scores_off_the_rubric(scale, scores: Iterable[float]) -> str | None:
    """Why expert scores cannot be trained towards on ``scale``: ``score_out_of_scale`` (one outside the rubric's
    range: a 3 on a 0..2 rubric; a project file's -1 is refused at loading unless the rubric has that level),
    ``score_not_a_level`` (one between its levels: a 1.5 on 0..2 would teach a score between the rubric's points);
    None when every one is a level. The reasons a verdict's own score is dropped here and a traces item is not asked
    (``train.synthetic.traces.training_records``), the ones GRPO drops an item for (``train.grpo``)."""
    scores = list(scores)
    if not all(scale.contains(score) for score in scores):
        return "score_out_of_scale"
    if not all(scale.is_level(score) for score in scores):
        return "score_not_a_level"
    return None


def _reject(score: float, feedback: str | None, scale, min_russian_share: float) -> str | None:
    if feedback is None:
        return "no_feedback"
    off_rubric = scores_off_the_rubric(scale, (score,))
    if off_rubric is not None:
        return off_rubric
    if VERDICT_OR_THINK_TAG.search(feedback):
        return "tags_in_feedback"
    # "one word rationale are only eligible for the perfect scores" (arXiv 2505.24616v3, Appendix B): one word, not
    # none; a blank rationale at the best level trained the target "[FEEDBACK]  [RESULT] 2 [END]". Perfect is the
    # scale's best level, 0 for the two Critical criteria (judge.oriented_scale).
    if not gives_reasons(feedback) and not (scale.is_best(score) and rationale_words(feedback) == 1):
        return "too_few_words"
    if russian_share(feedback) < min_russian_share:
        return "not_russian"
    return None


def instruction_id(record: JudgeRecord) -> str:
    """A short hash of the record's raw instruction text: what ``split_rows`` draws an ``instruction`` run's rows by."""
    return hashlib.sha256(record.instruction.encode("utf-8")).hexdigest()[:16]


class InstructionGroups:
    """Each record's instruction group over every record a run reads (``judge.splits.instruction_groups``: one
    ``instruction_id`` column or one text, compatibility-composed, whitespace collapsed and case-folded, through any
    chain of both), as a short hash of the group's name: what ``split_rows`` draws an ``instruction_group`` run's rows
    by and ``BuildReport.count_shared_instructions`` compares.

    Computed once over all the records, before any is dropped: a group is a property of the whole data, and a chain
    through a record that yields no row still ties the records on either side of it.
    """

    def __init__(self, records: Iterable[JudgeRecord]):
        from judge.splits import instruction_groups

        # The records are held so that no other object takes an id() of theirs while the groups are asked.
        self._records = list(records)
        self._of = {id(record): hashlib.sha256(group.encode("utf-8")).hexdigest()[:16]
                    for record, group in zip(self._records, instruction_groups(self._records))}  # fmt: skip

    def __call__(self, record: JudgeRecord) -> str:
        """The group of ``record``, which must be one of the records grouped.

        Raises:
            KeyError: a record not among them (its group over these records is not known).
        """
        try:
            return self._of[id(record)]
        except KeyError:
            raise KeyError(f"record {record.id!r} is not among the records these instruction groups were computed "
                           "over") from None


def item_of(record: JudgeRecord) -> str:
    """The item a record judges: the traces stage's ``item_id`` (its rows are ``<item id>#<sample>``), else its id:
    the one rule GRPO, the integer format and the traces stage's pooling name an item by."""
    return str(record.extra.get("item_id") or record.id)


def records_by_prompt(records: Iterable[JudgeRecord],
                      render: Callable[[JudgeRecord], str]) -> dict[str, list[JudgeRecord]]:
    """prompt -> a record per item of the prompt, in item-id order: each item's record of the smallest id, so the
    result does not depend on the records' order and every stage that keeps one row per prompt names one item alike
    (the first)."""
    items_of_prompt: dict[str, dict[str, JudgeRecord]] = {}
    for record in records:
        items = items_of_prompt.setdefault(render(record), {})
        item = item_of(record)
        if item not in items or str(record.id) < str(items[item].id):
            items[item] = record
    return {prompt: [items[item] for item in sorted(items)] for prompt, items in items_of_prompt.items()}


def validation_unit(config: Any) -> str:
    """What a run's validation rows are drawn by: ``instruction_group`` (``split_rows``), except for a ``--resume`` of
    a run whose run.json records another rule (``instruction``: the raw text), or none (written when the split was by
    record): a resumed run keeps its held-out rows, or its validation loss would include rows it has trained on.

    Raises:
        ConfigError: run.json records a rule ``split_rows`` does not know (its rows could not be drawn again).
    """
    default = DEFAULT_VALIDATION_UNIT
    if not getattr(config, "resume", False):
        return default
    path = Path(config.output_dir) / "run.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")).get("data") or {}
    except (OSError, ValueError, AttributeError):
        return default
    unit = data.get("validation_split", "record")
    if unit not in VALIDATION_UNITS:
        from train.config import ConfigError

        raise ConfigError(f"{path}: data.validation_split {unit!r} is none of {', '.join(VALIDATION_UNITS)}: the "
                          "resumed run's validation rows cannot be drawn again; resume it with the pollux-judge "
                          "version that wrote it, or start over (--overwrite-output-dir, or another --output-dir)")
    if unit != default:
        logger.warning("resuming a run whose validation rows were drawn by %s: kept for this run", unit)
    return unit


def split_rows(rows: Sequence[dict[str, Any]], eval_fraction: float,
               unit: str = DEFAULT_VALIDATION_UNIT) -> tuple[list[dict], list[dict]]:
    """Split rows into (train, eval) by a hash of their instruction group (``InstructionGroups``), so every answer
    and criterion of one instruction (and so every verdict of one record) stays on one side, and so do copies of it
    spelt apart (whitespace, case, Unicode compatibility form) or tied by an ``instruction_id`` column: a validation
    row whose instruction, or whose answer under another criterion, was trained on measures memory, not the judge
    (the synthetic ``split`` stage splits by the same groups for the same reason). Rows without the unit's field
    fall back to their record id.

    The assignment depends only on the group's name (its least ``judge.splits.instruction_key``): adding data moves
    an existing instruction across only when the new rows join its group to another.
    ``unit="instruction"``: by the raw instruction text's hash; ``unit="record"``: by record id; the rules a resume
    keeps when its run.json records them (``validation_unit``).

    Raises:
        ValueError: a unit not in ``VALIDATION_UNITS``.
    """
    if unit not in VALIDATION_UNITS:
        raise ValueError(f"split_rows: unit {unit!r} is none of {', '.join(VALIDATION_UNITS)}")
    if eval_fraction <= 0:
        return list(rows), []
    field_name = VALIDATION_UNITS[unit]
    train, held_out = [], []
    for row in rows:
        key = row.get(field_name) or row["record_id"]
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        bucket = int.from_bytes(digest[:8], "big") / 2**64
        (held_out if bucket < eval_fraction else train).append(row)
    return train, held_out


def drop_too_long(rows: Sequence[dict[str, Any]], tokenizer, max_length: int, *, thinking: bool = False,
                  text_of: Callable[[dict[str, Any]], str] | None = None) -> tuple[list[dict], int]:  # fmt: skip
    """Drop rows whose chat-formatted prompt + target exceeds ``max_length`` tokens.

    Args:
        thinking: render as an integer-format judge is trained, thinking on (``judge.apply_chat``).
        text_of: the text a row is trained as, where the recipe's differs from the chat template's rendering of
            prompt and target (the seq2seq recipe's on a template that drops an assistant turn's reasoning:
            ``train.seq2seq.training_text``); counted before the split and the ``max_rows`` cut, so that a row
            too long is not first drawn and then dropped after them.

    Returns:
        (kept rows, number dropped).
    """
    kept = []
    for row in rows:
        text = (text_of(row) if text_of is not None
                else judge.apply_chat(tokenizer, row["prompt"], row["completion"], thinking=thinking))
        if len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= max_length:
            kept.append(row)
    return kept, len(rows) - len(kept)


def drop_long_examples(config, report: BuildReport, rows: list[dict], examples: list[dict], *,
                       validation: bool = False) -> tuple[list[dict], list[dict]]:  # fmt: skip
    """The rows (and their tokenized examples) of at most ``config.max_length`` ids, the others counted as ``too_long``.

    ``drop_too_long`` counts a special-token string in a row's text as one token; in the ids a recipe trains
    (judge-serve's, ``judge.chat_tokens.chat_ids``) it is its characters' tokens, so such a row can be longer than
    counted, and no collator cuts it. The drops are counted with the training rows' (``validation``: the validation
    rows') other drops, before the report is recorded. Validation rows held out of ``config.data`` were counted in
    ``report.n_rows`` too, and leave it with their drop, so that ``n_rows`` stays the training rows, those
    ``max_rows`` cut and those held out (``eval_data``'s rows never were in it).

    Raises:
        ConfigError: no training row is left.
    """
    kept = [k for k, example in enumerate(examples) if len(example["input_ids"]) <= config.max_length]
    n_long = len(rows) - len(kept)
    if n_long:
        logger.info("dropped %d %s rows longer than max_length=%d tokens", n_long,
                    "validation" if validation else "training", config.max_length)  # fmt: skip
        if not validation:
            report.dropped["too_long"] += n_long
            report.n_rows -= n_long
        elif report.eval is not None:
            report.eval["dropped"]["too_long"] = report.eval["dropped"].get("too_long", 0) + n_long
            report.eval["n_rows"] -= n_long
            if report.eval["source"] != config.eval_data:  # held out of data (count_held_out names no file then)
                report.n_rows -= n_long
    if not validation and not kept:
        from train.config import ConfigError

        raise ConfigError(f"data: no training rows left in {config.data} within max_length {config.max_length} "
                          f"tokens: {report.summary()}")
    return [rows[k] for k in kept], [examples[k] for k in kept]


def rows_for_config(config, tokenizer, text_of: Callable[[dict[str, Any]], str] | None = None,
                    ) -> tuple[list[dict], list[dict], BuildReport]:  # fmt: skip
    """The recipes' data step: records -> rows -> drop too long -> split train/eval -> first ``max_rows``.

    The validation rows come from ``config.eval_data`` when given, else from a hash split of ``config.data``.

    Args:
        config: a resolved ``Seq2SeqConfig`` or ``RegressionConfig``.
        tokenizer: the base model's tokenizer (lengths are counted through its chat template).
        text_of: the text a row is trained as, where the recipe's is not the chat template's rendering of prompt and
            target (``drop_too_long``).

    Returns:
        (train rows, eval rows, report); ``report.dropped["too_long"]`` counts the rows over ``max_length``.
    """
    from train.config import zero_shot_split

    spec = zero_shot_split(config)
    # before any data is read: a resume whose recorded rule no split knows is refused at once
    unit = validation_unit(config) if not config.eval_data else None

    data_read, eval_read = records_for_config(config)
    # over both files: the split of data draws by them, and eval_data's overlap with training is counted by them
    groups = InstructionGroups([*data_read[0], *eval_read[0]])

    def build(source: str, read_back: tuple[list[JudgeRecord], judge.LoadReport]) -> tuple[list[dict], BuildReport]:
        records, load_report = read_back
        rows, report = build_rows(
            records,
            recipe=config.recipe,
            zero_shot=config.zero_shot,
            min_russian_share=config.min_russian_share,
            score_target=getattr(config, "score_target", "mean"),
            split_spec=spec,
            groups=groups,
        )
        report.duplicate_input_rows = load_report.n_duplicates
        rows, n_long = drop_too_long(rows, tokenizer, config.max_length, text_of=text_of)
        if n_long:
            report.dropped["too_long"] += n_long
            report.n_rows = len(rows)
            logger.info("%s: dropped %d rows longer than max_length=%d tokens", source, n_long, config.max_length)
        return rows, report

    rows, report = build(config.data, data_read)
    eval_report = None
    if config.eval_data:
        train = rows
        held_out, eval_report = build(config.eval_data, eval_read)
        logger.info("validation data: %s", eval_report.summary())
    else:
        report.validation_split = unit
        train, held_out = split_rows(rows, config.eval_fraction, report.validation_split)
    report.count_held_out(config, held_out, eval_report)
    train = report.cut_to_max_rows(train, config.max_rows)
    if eval_report is not None:
        report.count_shared_instructions(config, train, held_out)
    if not train:
        # ConfigError: a data/config choice (judge-train exits 2 with this line), not a failure of the run.
        from train.config import ConfigError

        raise ConfigError(f"data: no training rows left in {config.data} (max_length {config.max_length}, eval "
                          f"rows held out, max_rows {config.max_rows}): {report.summary()}")
    logger.info("%s", report.rows_line(train, held_out, config.max_rows))
    return train, held_out, report


def records_for_config(config) -> tuple[tuple[list[JudgeRecord], judge.LoadReport],
                                         tuple[list[JudgeRecord], judge.LoadReport | None]]:  # fmt: skip
    """The records of ``config.data`` and of ``config.eval_data``, each with its load report, read once for a recipe's
    data step (``rows_for_config``, ``train.seq2seq.integer_rows_for_config``); benchmark rows refused unless
    ``allow_benchmark_rows``. No ``eval_data``: no records and no report for it."""
    def read(source: str) -> tuple[list[JudgeRecord], judge.LoadReport]:
        return load_training_records_report(source, allow_benchmark_rows=config.allow_benchmark_rows)

    return read(config.data), (read(config.eval_data) if config.eval_data else ([], None))


def load_training_records(data: str, allow_benchmark_rows: bool = False) -> list[JudgeRecord]:
    """Records from a path or dataset name; ``"sample"`` is the bundled sample data
    (:func:`load_training_records_report` without its load report)."""
    return load_training_records_report(data, allow_benchmark_rows)[0]


def load_training_records_report(data: str, allow_benchmark_rows: bool = False,
                                 ) -> tuple[list[JudgeRecord], judge.LoadReport]:  # fmt: skip
    """Records from a path or dataset name (``"sample"`` is the bundled sample data) and ``judge.LoadReport``, whose
    ``n_duplicates`` (exact duplicate rows left out) a recipe's ``BuildReport`` records as ``duplicate_input_rows``.

    Args:
        data: the source (as ``judge.load_records`` takes it) or ``"sample"``.
        allow_benchmark_rows: accept rows in the released POLLUX benchmark's schema.

    Raises:
        BenchmarkRowsError: the source holds rows in the released benchmark's schema (``judge.LoadReport``'s
            ``n_benchmark_rows``: an ``annotations`` column, or its ``is_provocative`` and ``criteria_description``
            columns) and ``allow_benchmark_rows`` is off.
    """
    from judge.sample_data import data_source

    source = data_source(data, "data")
    records, load_report = judge.load_records_report(source)
    logger.info("%s", load_report.summary())
    if load_report.n_benchmark_rows and not allow_benchmark_rows:
        # The ai-forever/POLLUX dataset card asks that the benchmark not be used for training.
        raise BenchmarkRowsError(
            f"{source}: {load_report.n_benchmark_rows} of {load_report.n_rows} rows are in the released POLLUX "
            "benchmark's schema (an 'annotations' column, or its 'is_provocative' and 'criteria_description' "
            "columns). POLLUX is a test set: its dataset card (ai-forever/POLLUX) asks that it not be used for "
            "training, and training on it would leak the test into the judge. Train on the synthetic pipeline's "
            "output (judge-train data) or your own data; pass --allow-benchmark-rows (config: "
            "allow_benchmark_rows: true) only for a deliberate experiment."
        )
    refuse_other_split_rows(records)
    return records, load_report


def refuse_other_split_rows(records: Sequence[JudgeRecord]) -> None:
    """Refuse a record whose ``split`` column (the split stage's ``split.jsonl``, which pools both sides) names a side
    other than ``train``: as training data it would train the held-out rows, and as eval data it would hold trained
    ones. The message names the files to give, the split folder's ``train.jsonl`` for ``data`` and
    ``validation.jsonl`` for ``eval_data``; a ``train.jsonl`` or ``validation.jsonl`` that itself carries the column
    holds a stale one, copied from the input of the split run that wrote it, and is told so rather than pointed back
    at itself.

    Raises:
        judge.RecordError: naming the file, the row and the field ``split``.
    """
    for record in records:
        side = (record.extra or {}).get("split")
        if side is None or side == "train":
            continue
        source, row = record.origin or (f"record {record.id!r}", None)
        problem = f"record {record.id!r} is on the {side!r} side of a train/validation split"
        if record.origin and Path(source).name in ("train.jsonl", "validation.jsonl"):
            raise judge.RecordError(source, row, "split", f"{problem}, but this file is a split stage's output side: "
                                    "its split column is stale, copied from an input that was already split; rerun "
                                    "the split stage on the annotate stage's output")
        folder = Path(source).parent if record.origin else Path("the split stage's folder")
        raise judge.RecordError(source, row, "split", f"{problem} (the split stage's split.jsonl pools both sides): "
                                f"give the split's training rows ({folder / 'train.jsonl'}) as data and its "
                                f"validation rows ({folder / 'validation.jsonl'}) as eval_data")


def write_rows(rows: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write rows as JSONL (UTF-8, one object per line), replacing ``path`` whole: a row that cannot be written, or a
    kill, leaves the earlier file as it was rather than a cut one that trains on part of the data."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    return write_atomically(path, lambda handle: _write_lines(handle, rows))


def _write_lines(handle: Any, rows: Iterable[dict[str, Any]]) -> None:
    """Write rows as JSONL lines into a binary handle."""
    for row in rows:
        handle.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))


def main(argv: Sequence[str] | None = None) -> int:
    """``judge-train build-data``: build training rows, print the report, optionally write them."""
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(
        prog="judge-train build-data",
        description="Turn POLLUX-format records into training rows and report what was dropped and why.",
        epilog="Exit codes: 0 rows built (the report printed, and written with --out); 2 a usage error, a missing or "
        "unreadable --data or --out, held-out or released-benchmark rows in the data, rows of `judge-train data "
        "traces`, a malformed row, or no row left (the report printed first; the message on stderr names what).",
    )
    parser.add_argument("--data", default="sample",
                        help="Records: JSONL, Parquet, datasets folder/name, or 'sample' (default: %(default)s).")
    parser.add_argument("--recipe", choices=["seq2seq", "regression"], default="seq2seq",
                        help="Target format (default: %(default)s).")
    parser.add_argument("--zero-shot", "--zero_shot", dest="zero_shot", choices=["refuse", "drop", "allow"],
                        default="refuse", help="What to do with Zero-Shot rows (default: refuse).")  # fmt: skip
    parser.add_argument("--split-file", "--split_file", dest="split_file", default="",
                        help="Zero-Shot split YAML whose task types and criteria --zero-shot refuses or drops "
                        "(default: the packaged judge/data/zero_shot.yaml).")  # fmt: skip
    parser.add_argument("--min-russian-share", "--min_russian_share", dest="min_russian_share", type=float,
                        default=0.5,
                        help="Minimum Cyrillic share of a rationale's letters (default: %(default)s).")  # fmt: skip
    parser.add_argument("--score-target", "--score_target", dest="score_target", choices=["mean", "expert"],
                        default="mean", help="Regression label (default: mean over experts).")  # fmt: skip
    parser.add_argument("--allow-benchmark-rows", "--allow_benchmark_rows", dest="allow_benchmark_rows",
                        action="store_true", help="Accept rows in the released POLLUX benchmark schema (refused by "
                        "default: the dataset card asks that POLLUX not be used for training).")  # fmt: skip
    parser.add_argument("--out", default=None, help="Write the rows to this JSONL file, and the dropped verdicts, each "
                        "with its drop_reason, beside it (rows.jsonl: rows.dropped.jsonl).")
    args = parser.parse_args(argv)
    prog = parser.prog
    try:
        refuse_bad_arguments(args)
        try:  # before the data is read: a typo in the split file is said first, naming the flag
            spec = judge.load_split_spec(args.split_file or None)
        except (OSError, ValueError) as err:
            raise ValueError(f"--split-file: {err}") from None
        records, load_report = load_training_records_report(args.data, allow_benchmark_rows=args.allow_benchmark_rows)
        rows, report = build_rows(
            records,
            recipe=args.recipe,
            zero_shot=args.zero_shot,
            min_russian_share=args.min_russian_share,
            score_target=args.score_target,
            split_spec=spec,
        )
        report.duplicate_input_rows = load_report.n_duplicates  # its summary says them, as a run's data step logs them
    except (judge.LeakageError, judge.RecordError, OSError, ValueError) as err:
        # ValueError: an unknown file type, a shard folder missing shards, a bound refused; OSError: a source that is
        # not there (judge.record_sources) or not readable. One line, as `judge-train run` says them.
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    print(report.summary())
    if not rows:
        # What `judge-train run` refuses with the same data (train.cli.check_training_data): an empty rows file
        # would only move the failure to the first training step.
        what = (f"--data {args.data} holds no records" if not report.n_records else
                f"no training rows left in --data {args.data}: {_what_dropped(report)}")
        print(f"{prog}: error: {what}" + ("; nothing written" if args.out else ""), file=sys.stderr)
        return 2
    if args.out:
        # A file that was not there before is "written", never "replaced".
        what = "replaced" if Path(args.out).exists() else "written"
        try:
            written, dropped = write_rows_and_dropped(rows, report.dropped_rows, args.out)
        except NotSynced as err:  # both renamed into place, then their folder's fsync failed
            print(f"{prog}: error: --out {args.out}: {args.out} {what}, but not yet synced to disk "
                  f"({err.strerror or err})", file=sys.stderr)
            return 2
        except OSError as err:  # no permission, a read-only disk, a parent that is a file: named, the rows kept
            # The rows file is renamed last, so a failed write or rename leaves it as it was (the dropped file may
            # have been replaced).
            print(f"{prog}: error: --out {args.out}: cannot write ({err.strerror or err}); {args.out} not "
                  f"{what}", file=sys.stderr)
            return 2
        print(f"wrote {written}")
        print(f"wrote {dropped} ({len(report.dropped_rows)} dropped verdict(s), each with its drop_reason)")
    return 0


def write_rows_and_dropped(rows: list[dict], dropped: list[dict], out: str | Path) -> tuple[Path, Path]:
    """Write the rows to ``out`` and the dropped verdicts beside it (``dropped_path``) as one pair: both are written
    aside first and renamed into place only when both are whole, so a failed write leaves the earlier pair, never new
    rows beside an earlier run's dropped verdicts.

    Returns:
        (the rows file, the dropped file).

    Raises:
        OSError: as a write or rename raises (the files written aside are removed).
        NotSynced: the folder's fsync failed after both renames (both files replaced).
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # the dropped file first: a rename that fails between the two leaves the earlier rows, the file trained on
    written_dropped, written = write_atomically_together([
        (dropped_path(out), lambda handle: _write_lines(handle, dropped)),
        (out, lambda handle: _write_lines(handle, rows)),
    ])
    return written, written_dropped


def dropped_path(out: str | Path) -> Path:
    """Where ``build-data --out rows.jsonl`` writes its dropped verdicts: ``rows.dropped.jsonl`` beside it."""
    out = Path(out)
    return out.with_name(f"{out.stem if out.suffix == '.jsonl' else out.name}.dropped.jsonl")


def refuse_bad_arguments(args: Any) -> None:
    """Refuse, before the data is read, an empty ``--data``, a ``--min-russian-share`` that is not a share (NaN
    compares false with every share, so every rationale passed; above 1 none can) and an ``--out`` that is a folder,
    lies under a file, or cannot be written (as ``judge-eval convert`` checks its ``--out``), or that is the
    ``--data`` file itself or lies inside the ``--data`` folder (and so the dropped file beside it).

    Raises:
        ValueError: naming the flag and the value (``ConfigError``, a ValueError, for an ``--out`` under a file or
            in a place that cannot be written).
    """
    share = args.min_russian_share
    if not (math.isfinite(share) and 0 <= share <= 1):
        raise ValueError(f"--min-russian-share: must be a share between 0 and 1, got {share}")
    if args.out and Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: a folder; give the JSONL file to write (e.g. {Path(args.out) / 'rows.jsonl'})")
    from judge.sample_data import data_source

    # An empty --data named as the flag typed here; load_training_records words it as the config key `data`
    data = data_source(args.data)
    if args.out:  # FILE/rows.jsonl, or a read-only place: said now, not as "cannot write" after every row was built
        from judge.plumbing.run_folder import refuse_file, refuse_unwritable

        refuse_file(Path(args.out).parent, "--out")
        refuse_unwritable(Path(args.out).parent, what=f"folder of --out {args.out}")
        # The rows replace --out whole: written over --data, they would destroy the records they were built from.
        data = Path(data)
        # The dropped file beside --out is replaced as well: it is checked by the same rules.
        for written, what in ((Path(args.out), ""), (dropped_path(args.out), "its dropped file {} is ")):
            what = what.format(written)
            if data.is_file() and written.exists() and data.samefile(written):
                raise ValueError(f"--out {args.out}: {what}the same file as --data {args.data}; the rows would replace "
                                 "the records they are built from: give --out another file")
            # A folder's records are its Parquet shards or its save_to_disk files (judge.record_sources): a file
            # written there could replace one. Refused anywhere in the folder, one rule to keep in mind rather than
            # the loader's layouts (a JSONL beside the shards is not read as records, but the folder is the data's).
            if data.is_dir() and written.resolve().is_relative_to(data.resolve()):
                raise ValueError(f"--out {args.out}: {what}inside the --data folder {args.data}, which holds the "
                                 "records the rows are built from (a shard written over is lost): give --out a file "
                                 "outside it")


def _what_dropped(report: BuildReport) -> str:
    """Which filters dropped how many verdicts, most first, with the flag that sets a threshold where there is one."""
    flags = {"not_russian": "--min-russian-share"}
    parts = [f"{reason} {n}" + (f" ({flags[reason]})" if reason in flags else "")
             for reason, n in sorted(report.dropped.items(), key=lambda item: -item[1])]
    return (f"every one of the {report.n_verdicts} verdicts of {report.n_records} records was dropped: "
            + (", ".join(parts) or "none"))

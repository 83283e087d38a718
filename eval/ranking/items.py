"""One judged (instruction, criterion) of a ranking run and POLLUX's rules for one item: the rubric's levels as POLLUX
reads them, whether the item is scored, and the score its binary gate reads (``eval.ranking.matrix`` folds the items
into POLLUX's matrix; its docstring gives the rules with their sources).

    from eval.ranking.items import RankedItem, pollux_scale_levels
    item = RankedItem(prompt_id=1, meta="m", criteria_name="c", levels=pollux_scale_levels(rubrics), score=2.0)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from judge.verdicts import VerdictError

__all__ = ["RankedItem", "STATUSES", "NOT_RUN_ERRORS", "UNJUDGED_STATUSES", "EMPTY_ANSWER", "NO_ANSWER", "VERDICT", "REGRESSION_HEAD",
           "pollux_scale_levels", "gate_score", "item_status", "is_scored", "unnormalisable", "data_binary_criteria"]

#: What became of one (instruction, criterion): ``ok`` is scored; the others are counted per cell (``no_prediction``:
#: the item has no row in the judge's predictions at all, as a run cut short leaves it; ``no_answer``: the
#: candidate's request failed, so the judge was not asked; ``empty_answer``: see ``EMPTY_ANSWER``; ``not_run``: the
#: judge's server never ran the judgment, its prompt too long for the judge's context (``NOT_RUN_ERRORS``), where
#: ``unparsed`` is a judge's text that read no score). Only ``no_answer`` and ``empty_answer`` items can also be
#: scored (0, by ``NO_ANSWER`` and ``EMPTY_ANSWER``). ``not_run`` comes last so that cells.csv keeps the earlier counts' columns where they were.
STATUSES = ("ok", "unparsed", "out_of_scale", "request_failed", "no_prediction", "no_answer", "empty_answer",
            "not_run")
#: A prediction's errors (``judge.VerdictError``) for a judgment its server never ran, as the judge stage
#: (``eval.judging.run``) writes them: a final row for a prompt that did not fit the judge's context
#: (``eval.judging.backends.too_long_outcome``; its ``reason`` quotes the server's words), never asked again.
#: An engine's aborted generation or refused judgment (``aborted``, ``engine_refused`` on judge-serve's
#: ``/v1/judge``) is no such row: the stage writes ``request_failed`` (an aborted generation once its retries are
#: spent, a refusal at once), a row the next run asks again.
#: ``judge-eval score`` reports the code under its failures by reason.
NOT_RUN_ERRORS = (VerdictError.CONTEXT_LENGTH_EXCEEDED,)
#: The statuses of items the judge was not asked about (``eval.ranking.rank.write_items``'s ``unjudged.jsonl``).
UNJUDGED_STATUSES = ("no_answer", "empty_answer")
#: How an answer that is empty once thinking is stripped enters the matrix. POLLUX's score.py skips only an answer
#: that is ``None`` and sends ``""`` to its judge (ai-forever/POLLUX ``src/score.py`` at 2e8eb789; answer.py's
#: ``strip_think_tags`` leaves ``""`` for an answer that ended inside ``<think>``). The toolkit's records refuse an
#: empty answer, so the judge cannot be asked; instead:
#: ``zero``: every criterion of the instruction scores 0 after normalisation, unjudged: the matrix POLLUX's rules
#: give when the judge scores the Critical criterion on an unevaluable output ("does not allow evaluating the LLM's
#: output", paper App. P.1) 1, since its gate then zeroes every score of the instruction; an answer the candidate
#: ran out of budget on counts against it, never for it.
#: ``unscored``: not scored, counted per cell like an unparsed verdict (this toolkit's earlier behaviour).
EMPTY_ANSWER = ("zero", "unscored")
#: How an instruction whose answer request failed (``no_answer``) enters the matrix, by the same two rules:
#: ``zero`` is what POLLUX effectively does (its ``src/utils/openai_runner.py`` at 2e8eb789 turns a failed request
#: into ``""``, which its judge then scores as an empty answer), so a candidate whose hardest prompts fail for good
#: ranks no higher for it; ``unscored`` leaves them out (this toolkit's earlier behaviour).
NO_ANSWER = EMPTY_ANSWER
#: ``judge.wire.ScoreSource``'s values: a verdict's ``[RESULT] n``, or a regression head's continuous score.
VERDICT, REGRESSION_HEAD = "verdict", "regression_head"


# POLLUX's rubric reader (ai-forever/POLLUX, src/utils/score_utils.py: ``NUMBER_PATTERN``, ``RUBRIC_SCORE_PATTERN``,
# ``NAMED_RANGE_PATTERN``, ``SCALE_RANGE_PATTERN``, ``parse_scale_values``), for text rubrics.
_NUMBER = r"[+-]?(?:\d+(?:[.,]\d+)?|[.,]\d+)"
_LEVEL_LINE = re.compile(rf"^\s*(?:[-*•]\s+)?({_NUMBER})\s*(?::|[—–]|\.(?=\s)|\)|-(?=\s))", re.MULTILINE)
_NAMED_RANGE = re.compile(rf"(?:от|from)\s+({_NUMBER})\s+(?:до|to)\s+({_NUMBER})", re.IGNORECASE)
_SCALE_RANGE = re.compile(rf"(?:шкала|scale)[^\n]*?({_NUMBER})\s*(?:\.\.|…|[—–-])\s*({_NUMBER})", re.IGNORECASE)


def pollux_scale_levels(rubrics: str | None) -> tuple[float, ...]:
    """The score values a text rubric declares, as POLLUX's ``parse_scale_values`` reads them (sorted, distinct).

    Every line that starts (after whitespace and an optional ``-``, ``*`` or ``•`` bullet with a space) with a
    number followed by ``:``, an em or en dash, ``)``, or ``.``/``-`` and whitespace declares that number (``,`` read
    as ``.``); with no such line, the two ends of the first "от A до B" / "from A to B" range, else of the first
    "шкала ... A-B" / "scale ... A..B"; else nothing (no scale: POLLUX keeps the raw score and never gates on it).
    """
    if not isinstance(rubrics, str):
        return ()
    values = [float(m.group(1).replace(",", ".")) for m in _LEVEL_LINE.finditer(rubrics)]
    if not values:
        for pattern in (_NAMED_RANGE, _SCALE_RANGE):
            found = pattern.search(rubrics)
            if found:
                values = [float(g.replace(",", ".")) for g in found.groups()]
                break
    return tuple(sorted(set(values)))


@dataclass(frozen=True)
class RankedItem:
    """One judged (instruction, criterion) of a ranking run.

    Attributes:
        prompt_id: the instruction's id (the bootstrap's unit).
        meta: the instruction's ``meta`` value (the matrix column).
        criteria_name: the criterion (the matrix row).
        levels: the rubric's levels as POLLUX reads them (``pollux_scale_levels``), () when it reads none.
        score: the judge's score, None unless the verdict parsed.
        status: ``request_failed`` when the judge's request failed, ``no_prediction`` when the item has no
            prediction, ``not_run`` when the judge's server never ran the judgment, its prompt too long for the
            judge's context (``NOT_RUN_ERRORS``), ``unparsed`` for a verdict without a score, ``no_answer`` /
            ``empty_answer`` when the judge was not asked (``STATUSES``); else ``ok`` (``out_of_scale`` is decided
            here from ``levels``).
        source: where the score came from (``judge.wire.ScoreSource``): ``verdict`` (a score read from the judge's
            text) or ``regression_head`` (continuous; the gate reads it snapped to a level: ``gate_score``).
    """

    prompt_id: Any
    meta: str
    criteria_name: str
    levels: tuple[float, ...]
    score: float | None
    status: str = "ok"
    source: str = VERDICT

    @property
    def binary(self) -> bool | None:
        """POLLUX's binary criterion: levels exactly {0, 1}; None when the rubric has no readable scale."""
        return set(self.levels) == {0, 1} if self.levels else None


def data_binary_criteria(criteria: Iterable[tuple[str, str, str]]) -> list[list[str]]:
    """The ``[meta, criterion]`` pairs, sorted, with a binary rubric among ``(meta, criterion, rubrics)`` triples: the
    whole data set's, as POLLUX's metrics.py collects ``binary_criteria`` from every row of the data (not only those
    scored), so that a rubric without a readable scale gates by the same rule whatever ``--limit`` selected."""
    pairs = {(meta, name) for meta, name, rubrics in criteria if set(pollux_scale_levels(rubrics)) == {0, 1}}
    return [list(pair) for pair in sorted(pairs)]


def unnormalisable(levels: tuple[float, ...], normalize: str) -> str | None:
    """Why a rubric with these levels cannot normalise a score (None when it can): one level under ``minmax`` (no
    range to divide by), a maximum of 0 under ``max``. A rubric without levels keeps its raw score."""
    if not levels or normalize == "none":
        return None
    if normalize == "max" and max(levels) == 0:
        return f"cannot normalise by a scale whose maximum is 0 (levels {levels})"
    if normalize == "minmax" and min(levels) == max(levels):
        return f"cannot normalise a score on a scale with one level ({levels})"
    return None


def gate_score(item: RankedItem) -> float:
    """The score a binary criterion's gate reads: the verdict's own, or a regression head's snapped to the nearest
    level of its rubric (to 0 or 1 for a rubric without levels, binary by its (meta, criterion) elsewhere); halfway
    between two levels, the higher one, as POLLUX's gate closes on any score above 0."""
    score = float(item.score)
    if item.source != REGRESSION_HEAD:
        return score
    return min(item.levels or (0.0, 1.0), key=lambda level: (abs(level - score), -level))


def item_status(item: RankedItem) -> str:
    """The item's status with ``unparsed`` and ``out_of_scale`` decided (``STATUSES``)."""
    if item.status == "ok" and item.score is None:
        return "unparsed"
    if item.status == "ok" and item.levels and not (min(item.levels) <= item.score <= max(item.levels)):
        return "out_of_scale"
    return item.status


def is_scored(item: RankedItem, empty_answer: str = "zero", no_answer: str = "zero") -> bool:
    """Whether the item enters the matrix: a score in its scale, or an unjudged item scored 0 by its setting."""
    status = item_status(item)
    return status == "ok" or {"empty_answer": empty_answer, "no_answer": no_answer}.get(status) == "zero"

"""Pairwise judging in ``judge-eval run``: two answers to one instruction, asked in both orders.

Rows carry ``instruction``, ``answer_1``, ``answer_2``, ``rubrics`` (the comparison scale, criterion included, as
POLLUX's demo folds it: ``demo/serve_pollux_demo.py:77-78``), optionally ``id`` and a ``winner`` label. A judge reads
them through ``judge.render_pairwise_prompt`` and answers ``-1`` (answer 1 better), ``0`` (tie) or ``1`` (answer 2
better), in its own verdict format.

Position bias is the best-known weakness of pairwise judges, so every pair is asked **in both orders** by default
(``pairwise_orders: both``): ``original`` shows (answer_1, answer_2), ``swapped`` shows (answer_2, answer_1). Each
judgment is one row of ``pairwise_predictions.jsonl`` (``PairwiseRow``): ``score`` is the verdict as the judge gave it
for the order it saw, ``verdict`` the same verdict in the pair's own orientation (negated for ``swapped``), so a
judge that reads content rather than position gives the same ``verdict`` in both orders. ``eval.pairwise.metrics``
scores the file. The file is a ``judge.plumbing.journal``: a rerun resumes, asking again only judgments whose request
failed and pairs whose text changed: each row keeps the ``content_key`` of what the judge read (instruction, both
answers, rubrics), so a pair edited in place under the same ``id`` is judged again, never scored by stale verdicts;
rows of pairs removed from the data are dropped. A run stops as a pointwise one does (``judge_pairs``): an endpoint refusing
its first requests alike, or failing every retry for pair after pair, or answering each with an HTTP 200 that is no
answer (``eval.judging.backends.MalformedAnswer``: a failed row each) (``judge.plumbing.failing_streak``, exit 4), a
judge whose first answers do not read in the verdict format guessed from its model id (``FormatWatch``, exit 2), and
``split``, which chooses pointwise items by task type, is refused on pairwise data (``selected_pairs``).

``winner`` labels: ``-1``/``0``/``1`` as the judge writes them (``-1.0``/``0.0``/``1.0`` too, as pandas writes an
integer column with a null), or ``"answer_1"``/``"tie"``/``"answer_2"``.

Why one module of ~620 lines: the pairwise file's reading, its resume and its requests (chat and judge-serve) share
``PairRecord``, ``PairwiseRow`` and the journal's rules; the request rules they share with the pointwise runner live in
``eval.judging.backends``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.judging.backends import ABORTED_FINISH, generation_aborted, unasked_first, within_timeout
from eval.judging.predictions import REQUEST_FAILED, log_failed_requests  # REQUEST_FAILED: retried by the next run
from eval.pairwise.files import PAIRWISE_PREDICTIONS
from judge.plumbing.run_folder import content_key
from judge.plumbing.config_files import ConfigError
from judge.plumbing.invisible_text import is_blank
from judge.plumbing.json_reading import JSON_REFUSALS, shown_value
from judge.plumbing.journal import JournalWriter, iter_journal, iter_journal_lines, rewrite_journal
from judge.prompts import PAIRWISE_FIELDS, render_pairwise_prompt
from judge.records import LineIndex, row_place, value_words
from judge.plumbing.retry import RetryPolicy
from judge.scales import PAIRWISE_SCALE, pairwise_scale_error
from judge.verdicts import VerdictError, VerdictFormat, inline_reasoning, read_served_verdict
from judge.wire import PairItem, PairwiseRequest, checked_json_fields

if TYPE_CHECKING:
    from eval.judging.format_choice import FormatWatch

__all__ = ["PAIRWISE_PREDICTIONS", "PAIRWISE_SCALE", "ORDERS", "PairRecord", "PairwiseRow", "is_pairwise_data",
           "load_pairs", "selected_pairs", "pending_judgments", "judge_pairs", "read_pairwise_rows",
           "iter_pairwise_rows", "order_item_id"]

log = logging.getLogger("judge_eval.pairwise")

ORDERS = ("original", "swapped")


def order_item_id(pair_id: str, order: str) -> str:
    """The item id one order of a pair is sent to judge-serve with, which it echoes: ``<pair id>#<order>``. The two
    orders are two judgments, and an answer for one given to the other (a cache or a proxy mixing two requests)
    must fail ``judge_results``' id check, which the pair's id alone, the same in both, let pass. No two (pair,
    order) share one: the order ends the id, and no order's name ends another's."""
    return f"{pair_id}#{order}"
_WINNER_NAMES = {"answer_1": -1, "tie": 0, "answer_2": 1}


@dataclass(frozen=True)
class PairRecord:
    """One labelled (or unlabelled) pair."""

    id: str
    instruction: str
    answer_1: str
    answer_2: str
    rubrics: str
    winner: int | None = None

    @property
    def content_key(self) -> str:
        """``judge.plumbing.run_folder.content_key`` of everything the judge reads (the same in either order: the order is
        the other half of a judgment's resume key)."""
        return content_key(self.instruction, self.answer_1, self.answer_2, self.rubrics)

    def shown(self, order: str) -> dict[str, str]:
        """The prompt fields in the order the judge sees them."""
        first, second = (self.answer_1, self.answer_2) if order == "original" else (self.answer_2, self.answer_1)
        return {"instruction": self.instruction, "answer_1": first, "answer_2": second, "rubrics": self.rubrics}


@dataclass(frozen=True)
class PairwiseRow:
    """One judgment of one pair in one order, as written to ``pairwise_predictions.jsonl``.

    ``content_key`` is the judged pair's ``PairRecord.content_key`` ("" in rows written before it was kept: their
    text is unknown, so a rerun judges them again; ``score`` keeps them, as it did, unable to tell).
    """

    id: str
    order: str
    judge: str
    raw_output: str | None
    feedback: str
    score: float | None
    verdict: float | None
    parse_ok: bool
    error: str | None
    reason: str
    latency_s: float
    content_key: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str) -> PairwiseRow:
        """A row from its JSON object, checked as ``eval.judging.predictions.PredictionRow.from_json`` checks one: the
        scores read it, so a value of another type (a ``"-1"`` verdict, a ``"yes"`` parse flag: nothing is converted),
        a NaN, an ``order`` that is neither of ``ORDERS``, a parsed judgment whose score or verdict is not on the
        pairwise scale, or whose verdict is not its score in the pair's orientation (``original``: the score;
        ``swapped``: the score negated), is refused rather than scored.

        Raises:
            ValueError: naming ``where`` and the field.
        """
        values = checked_json_fields(cls, data, where, noun="pairwise field", typed=True)
        if values["order"] not in ORDERS:  # else scored as an order the run never asked, its real one "missing"
            raise ValueError(f"{where}.order: expected {' or '.join(map(repr, ORDERS))}, "
                             f"got {shown_value(values['order'])}")
        for name in ("score", "verdict") if values["parse_ok"] else ():
            if not _on_scale(values[name]):
                got = value_words(None) if values[name] is None else shown_value(values[name])  # null, not None
                raise ValueError(f"{where}.{name}: a parsed judgment's {name} is one of -1, 0, 1, got {got}")
        # Agreement and position consistency read the verdict, the first-position rate the score: a row whose two
        # disagree (merged by hand) would have the two halves of one report read two different judgments.
        score, order = values["score"], values["order"]
        if values["parse_ok"] and values["verdict"] != (expected := _pair_verdict(score, order)):
            how = "negated for a swapped order" if order == "swapped" else "as it is for an original order"
            raise ValueError(f"{where}.verdict: expected {shown_value(expected)}: the score {score:g} {how}, "
                             f"got {shown_value(values['verdict'])}")
        return cls(**values)


def _pair_verdict(score: float, order: str) -> float:
    """A judgment's ``verdict``: its ``score`` (the answer for the order shown) in the pair's own orientation, the
    one ``winner`` labels: the score itself for ``original``, negated for ``swapped`` (a tie stays ``0.0``, never
    ``-0.0``)."""
    return score if order == "original" else (-score or 0.0)


def is_pairwise_data(path: str | Path | None) -> bool:
    """Whether ``path`` is a JSONL file whose first row is pairwise: it has ``answer_1`` or ``answer_2`` and no
    ``answer`` (one of the two misspelt is then named by the pairwise reader, not read as a pointwise row with no
    ``answer``)."""
    if not path or not Path(path).is_file() or Path(path).suffix not in (".jsonl", ".json"):
        return False
    # Bytes, decoded a line at a time: a text-mode handle decodes ahead of the line it returns, so a bad byte on a
    # later line would stop this sniff with a bare UnicodeDecodeError that names no file or row. Whatever this cannot
    # read is "not pairwise"; the record loader then names the file, row and column.
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                try:
                    row = json.loads(line.decode("utf-8"))
                except JSON_REFUSALS:  # not UTF-8, not JSON, or JSON json.loads cannot hold
                    return False
                return isinstance(row, dict) and "answer" not in row and ("answer_1" in row or "answer_2" in row)
    return False


def _winner(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value in _WINNER_NAMES:
        return _WINNER_NAMES[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in (-1, 0, 1):
        return value
    # pandas writes an integer column that has a null as floats (1.0, -1.0): those are the labels, a 0.5 is not.
    if isinstance(value, float) and value in (-1.0, 0.0, 1.0):
        return int(value)
    raise ConfigError(f"{where}.winner: {value!r} is not one of -1, 0, 1, 'answer_1', 'tie', 'answer_2'")


def load_pairs(path: str | Path, unscored_labels: list[str] | None = None) -> list[PairRecord]:
    """Read pairwise rows from a JSONL file.

    ``unscored_labels``: where given, a win label on a pair whose two answers are the same text is not refused but
    read as no label, and the pair's id appended to it (``judge-eval score`` of verdicts already asked counts them).

    Raises:
        ConfigError: a line that is not UTF-8 or not JSON, a row that is not an object, a missing or non-text field,
            a bad ``winner`` (or a win label on a pair whose two answers are the same text), a ``rubrics`` on other
            levels than -1/0/1 (``judge.scales.pairwise_scale_error``), an ``id`` that is not text or an integer
            (``judge.load_records``' rule) or a repeated id (with no id, a repeated pair), with the line it repeats;
            naming the file, row (its line, from 1, as ``judge.load_records`` names it: "line 2") and field.
    """
    pairs: list[PairRecord] = []
    seen: dict[str, str] = {}  # each id's row, as the refusal of a repeat names it ("line 2")
    for index, row in _numbered_rows(path):
        where = f"{path}: {row_place(index)}"
        if not isinstance(row, dict):
            raise ConfigError(f"{where}: expected a JSON object")
        for name in PAIRWISE_FIELDS:
            value = row.get(name)
            if value is None:
                raise ConfigError(f"{where}.{name}: required text is missing")
            if not isinstance(value, str):
                raise ConfigError(f"{where}.{name}: must be text, got {value_words(value)}")
            if is_blank(value):  # white space and characters that show nothing: judge.load_records' rule
                raise ConfigError(f"{where}.{name}: required text is empty")
        if (why := pairwise_scale_error(row["rubrics"])) is not None:  # judge-serve refuses it alike
            raise ConfigError(f"{where}.rubrics: {why}")
        winner = _winner(row.get("winner"), where)
        same_text_win = bool(winner) and row["answer_1"] == row["answer_2"]
        if same_text_win and unscored_labels is None:
            # Both orders are then one prompt: a judge reading the answers gives both one raw answer, verdicts s and
            # -s, so a win label agrees with one judgment at most and never with the orders combined. A data error
            # (a column copied), refused as any other bad label; unlabelled or a tie, the pair is a position probe.
            raise ConfigError(f"{where}.winner: {row.get('winner')!r} says one answer is better, but answer_1 and "
                              "answer_2 are the same text: label it a tie (0) or leave it unlabelled, or fix the "
                              "answers")
        text_id = row.get("id")
        derived = text_id is None or (isinstance(text_id, str) and not text_id.strip())
        if derived:
            # a stable id from the content, as records without ids get one (a blank id is none, as there)
            text_id = _content_id([row[n] for n in PAIRWISE_FIELDS])
        elif not isinstance(text_id, (str, int)) or isinstance(text_id, bool):
            # judge.load_records' rule: a list or an object would be its Python repr, true "True", 1.0 "1.0"
            raise ConfigError(f"{where}: field 'id': must be text or an integer, got {value_words(text_id)}")
        text_id = str(text_id)
        if same_text_win:  # unscored_labels given: the label is counted, not used
            unscored_labels.append(text_id)
            winner = None
        if text_id in seen:
            if derived:  # the id is a digest of the text, which the file does not hold: name what repeats
                raise ConfigError(f"{where}: a pair with no id and the same instruction, answers and rubrics as "
                                  f"{seen[text_id]}: drop the repeat, or give the two pairs ids of their own")
            raise ConfigError(f"{where}.id: {text_id!r} appears twice (first on {seen[text_id]})")
        seen[text_id] = row_place(index)
        pairs.append(PairRecord(text_id, row["instruction"], row["answer_1"], row["answer_2"], row["rubrics"],
                                winner))
    return pairs


def _content_id(fields: Sequence[str]) -> str:
    """The id of a pair given none (or a blank one): a digest of its ``PAIRWISE_FIELDS``, in that order."""
    return hashlib.sha1(json.dumps(list(fields), ensure_ascii=False).encode()).hexdigest()[:16]


def _numbered_rows(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(the ``LineIndex``, the parsed value) of each non-blank line, read as the pointwise loader reads
    (``judge.record_sources.jsonl_rows``: bytes decoded a line at a time, so a byte that is not UTF-8 is named with its
    line and column, not as a bare UnicodeDecodeError), its refusal a ``ConfigError`` naming the file and line
    as that loader names it."""
    from judge.record_sources import jsonl_rows
    from judge.records import RecordError

    try:
        yield from ((index, row) for _, index, row in jsonl_rows(Path(path)))
    except RecordError as err:  # its place ("line 2") as the pointwise loader says it
        raise ConfigError(f"{path}: {err.place}: {err.message}") from None


def selected_pairs(config) -> list[PairRecord]:
    """The pairs a ``judge-eval run`` judges: ``config.data``'s, the first ``config.limit`` of them.

    Raises:
        ConfigError: a ``split`` other than ``all``: a split is a set of pointwise items chosen by task type, and a
            pair has none; judging every pair while the setting says otherwise would score what was not asked for.
            Raised before any request.
    """
    if config.split != "all":
        raise ConfigError(f"split: {config.split!r} chooses pointwise items by task type, and the pairwise rows of "
                          f"{config.data} have none: drop --split (every pair is judged; --limit takes the first N)")
    return load_pairs(config.data)[: config.limit or None]


def iter_pairwise_rows(path: str | Path) -> Iterator[PairwiseRow]:
    """The rows of a ``pairwise_predictions.jsonl`` in the order written (a torn last line, from a kill, is dropped),
    read one at a time: ``FormatWatch.offer_written`` stops at its first rows."""
    for number, data in iter_journal_lines(path, quiet=True):  # named by the line an editor shows, blanks counted
        yield PairwiseRow.from_json(data, f"{path}: {row_place(LineIndex(number - 1))}")


def read_pairwise_rows(path: str | Path) -> list[PairwiseRow]:
    """The rows of a ``pairwise_predictions.jsonl`` (a torn last line, from a kill, is dropped), the last row of each
    (id, order) winning, as a resumed run leaves them."""
    rows: dict[tuple[str, str], PairwiseRow] = {}
    for row in iter_pairwise_rows(path):
        rows[(row.id, row.order)] = row
    return list(rows.values())


def pending_judgments(pairs: Sequence[PairRecord], path: Path, orders: Sequence[str]) -> tuple[list[tuple[PairRecord, str]], int, set[str]]:
    """Prepare a ``pairwise_predictions.jsonl`` for appending: the (pair, order) judgments still to ask (those whose
    request failed before last), how many are done, and the judges the file's rows name.

    A judgment is done when its last row's request did not fail and the row judged the pair's current text (its
    ``content_key``): a pair edited in place keeps its ``id``, and its old verdicts are of answers no longer there.
    Rows of pairs not in ``pairs`` (removed from the data) are dropped, the file rewritten atomically, as a pointwise
    resume drops rows of ids no longer selected: ``score`` refuses judgments of pairs its data does not have. Rows
    under a blank id (written before a blank id read as none) are rewritten under the id of the pair, given a blank
    or no id, whose text they judged. A judgment's earlier rows are dropped: the file keeps one row per judgment.
    """
    rows = read_pairwise_rows(path) if path.exists() else []
    keys = {pair.id: pair.content_key for pair in pairs}
    # A blank id was the pair's id ("") before it read as none (load_pairs): a folder written then holds rows under
    # it, the pair's whose text they judged, not a pair gone from the data to be asked again.
    owners = {pair.content_key: pair.id for pair in pairs
              if pair.id == _content_id([getattr(pair, name) for name in PAIRWISE_FIELDS])}
    gone: set[str] = set()
    n_taken = 0

    def kept() -> Iterator[dict[str, Any]]:
        nonlocal n_taken
        for data in iter_journal(path, quiet=True):
            pair_id = owners.get(data.get("content_key"), data["id"]) if not data["id"].strip() else data["id"]
            if pair_id not in keys:
                gone.add(data["id"])
                continue
            n_taken += pair_id != data["id"]
            yield {**data, "id": pair_id}

    if any(row.id not in keys for row in rows):  # a blank id is in none
        rewrite_journal(path, kept())
        rows = read_pairwise_rows(path)  # the last row of each (id, order) again, a taken row's under its new id
    if rows and sum(1 for _ in iter_journal(path, quiet=True)) > len(rows):  # else every rerun's retries pile up
        rewrite_journal(path, (row.to_json() for row in rows))  # the last row per judgment (a failed one: asked last)
    if n_taken:
        log.info("resume: %d rows of pairs with a blank id in %s kept under the id their text now gives", n_taken, path)
    if gone:
        log.info("resume: dropped the rows of %d pairs no longer in the data from %s (%s)", len(gone), path,
                 ", ".join(map(repr, sorted(gone)[:5])) + (", ..." if len(gone) > 5 else ""))
    final = {(r.id, r.order) for r in rows if r.error != REQUEST_FAILED and r.content_key == keys.get(r.id)}
    failed = {(r.id, r.order) for r in rows if r.error == REQUEST_FAILED}
    todo = [(pair, order) for pair in pairs for order in orders if (pair.id, order) not in final]
    # As a pointwise resume: judgments never asked first, those whose request failed before last (FirstRefusals).
    todo = unasked_first(todo, lambda job: (job[0].id, job[1]) in failed)
    done = sum(1 for pair in pairs for order in orders if (pair.id, order) in final)
    return todo, done, {r.judge for r in rows}


# ---------------------------------------------------------------------------------------------------------------
# asking the judge
# ---------------------------------------------------------------------------------------------------------------


#: A pairwise verdict is -1, 0 or 1: anything else the parser reads (a 2, a 0.5) is no verdict. Scoring it would
#: count a 2 and a -2 as one consistent preference; it is a failure, counted, as an unparseable one is.
_OFF_SCALE_REASON = "not one of -1, 0, 1 (the pairwise scale)"


def _on_scale(score: float | None) -> bool:
    return score is not None and float(score) in PAIRWISE_SCALE.levels


def _outcome(text: str | None, reasoning: str | None, verdict_format: str, lenient: bool,
             finish_reason: str | None = None) -> dict[str, Any]:
    """A chat answer's row, read as every route reads one (``judge.verdicts.read_served_verdict``), on the
    pairwise scale; an integer judge's separated reasoning put back before its answer
    (``judge.verdicts.inline_reasoning``), so the row holds what ``/v1/judge`` returns for the same generation."""
    if verdict_format == VerdictFormat.INTEGER:
        text, reasoning = inline_reasoning(text, reasoning, finish_reason), None
    verdict = read_served_verdict(verdict_format, text, reasoning=reasoning, scale=PAIRWISE_SCALE, lenient=lenient,
                                  finish_reason=finish_reason)
    ok = verdict.ok and _on_scale(verdict.score)
    off = verdict.ok and not ok
    return {"raw_output": text, "feedback": verdict.feedback, "score": verdict.score if ok else None,
            "parse_ok": ok, "error": VerdictError.OUT_OF_SCALE if off else verdict.error,
            "reason": f"{verdict.score:g} is {_OFF_SCALE_REASON}" if off else verdict.reason}


def _from_result(result) -> dict[str, Any]:
    ok = result.parse_ok and _on_scale(result.score)
    off = result.parse_ok and result.score is not None and not ok
    return {"raw_output": result.output, "feedback": result.feedback or "", "score": float(result.score) if ok else None,
            "parse_ok": ok,
            "error": None if ok else VerdictError.OUT_OF_SCALE if off else (result.error or VerdictError.NO_SCORE),
            "reason": "" if ok else f"{result.score:g} is {_OFF_SCALE_REASON}" if off else (result.error_reason or "")}


def _error_code(response: Any) -> Any:
    """An error response's OpenAI-style ``error.code`` (judge-serve's ``context_length_exceeded`` for a pair its
    judge's window cannot hold), None for none."""
    try:
        body = response.json()
    except JSON_REFUSALS:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def pairwise_request(model: str, pair: PairItem, config) -> PairwiseRequest:
    """judge-serve's pairwise ``/v1/judge`` body for one shown pair, with the run's ``extra_body`` fields, as the
    pointwise backend sends them (``eval.judging.backends.JudgeServeBackend.request``).

    Raises:
        ConfigError: ``extra_body`` has a key the pairwise body does not take, or a value of the wrong type.
    """
    from eval.judging.backends import short

    fields = {"model": model, "pairs": [pair], "max_tokens": config.max_tokens,
              "temperature": float(config.temperature), "lenient": config.lenient}
    try:
        return PairwiseRequest.model_validate({**fields, **dict(config.extra_body)})
    except ValueError as err:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"extra_body: not a pairwise /v1/judge field or value: {short(str(err))}") from err


async def judge_pairs(todo: Sequence[tuple[PairRecord, str]], path: Path, *, kind: str, base_url: str, root_url: str,
                      api_key: str, model: str, name: str, config, policy: RetryPolicy,
                      watch: FormatWatch | None = None) -> dict[str, int]:
    """Ask every (pair, order) of ``todo`` with ``config.concurrency`` workers; append one row per judgment.

    ``kind`` is the backend (``chat``: one chat completion per judgment, carrying the fields the pointwise chat
    backend sends, ``eval.judging.backends.chat_extra_body``; ``judge-serve``: a ``PairwiseRequest`` to
    ``/v1/judge``). A judgment whose request fails (after ``policy``'s retries) is a ``request_failed`` row. The run
    stops as the pointwise one does (``eval.judging.run``): at a judge-serve answering in another verdict format than
    ``config.verdict_format`` (``ServerChanged``), when its first requests are all refused alike
    (``FirstRefusals``), and when the requests of ``stop_after(concurrency)`` different pairs in a row still failed
    transiently after their retries or were answered with an HTTP 200 that is no answer (``MalformedAnswer``)
    (``FailingStreak``; a pair is the streak's unit, as an answer is pointwise: a pair
    whose text makes the server fail fails in both orders). No row is written for a changed answer; the refused and
    the failed judgments are written as failed rows, which the next run asks after the judgments never asked
    (``pending_judgments``), and a judgment whose row failed before is not counted by the streak. ``watch``
    (``eval.judging.format_choice.FormatWatch``) is offered each row written, as the pointwise runner offers it: a
    verdict format guessed from a URL's model id that the judge's first answers do not read in stops the run (the
    caller offers it the folder's rows first, ``FormatWatch.offer_written``, as the pointwise runner does).

    Returns:
        ``written``, ``parse_failed``, ``request_failed``.

    Raises:
        EndpointUnusable: the run stopped (the message says why, and what was sent and kept).
        ConfigError: ``watch`` found the guessed verdict format misread (its sentence, with the flag to set).
    """
    import httpx
    import openai

    from eval.judging.backends import (BodyPastBound, FirstRefusals, NoRoom, Refused, ServerChanged, TooLong,
                                       chat_answer_text, chat_choice, chat_extra_body, context_refusal, failed_outcome,
                                       failure_reason, judge_response, judge_results, not_json, reasoning_of,
                                       refusal_of, refuse_format_change, retryable_status, short, too_long_outcome)
    from judge.plumbing.failing_streak import FailingStreak, stop_after, streak_failure
    from judge.plumbing.retry import EndpointUnusable, server_message
    from judge.prompts import PAIRWISE_PROMPT_VERSION, chat_messages
    from judge.verdicts import VerdictFormat

    if kind == "judge-serve" and todo:  # a bad extra_body is a configuration error before any request is sent
        pair, order = todo[0]
        pairwise_request(model, PairItem(id=order_item_id(pair.id, order), **pair.shown(order)), config)
    if kind != "judge-serve" and todo:
        if config.prompt == "en":
            # There is one pairwise prompt, POLLUX's Russian one; `prompt: en` is how API judges are configured, and
            # it keeps meaning what it means for them: no vLLM-only field (which api.openai.com refuses) is sent.
            log.warning("note: pairwise data is asked with the Russian pairwise prompt template %s, the only one; "
                        "--prompt en sends it without the vLLM sampling fields", PAIRWISE_PROMPT_VERSION)
        else:
            log.info("prompt template %s (the pairwise prompt)", PAIRWISE_PROMPT_VERSION)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
    chat = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=config.timeout_s)
    http = httpx.AsyncClient(base_url=root_url, headers=headers, timeout=config.timeout_s)
    integer = config.verdict_format == VerdictFormat.INTEGER
    body = chat_extra_body(config)

    async def ask(pair: PairRecord, order: str) -> dict[str, Any]:
        shown = pair.shown(order)
        if kind == "judge-serve":
            sent_id = order_item_id(pair.id, order)
            request = pairwise_request(model, PairItem(id=sent_id, **shown), config)
            response = await within_timeout(http.post("/v1/judge", json=request.model_dump(mode="json",
                                                                                    exclude_unset=True)),
                                            config.timeout_s)  # the whole answer, as the pointwise backend's
            if response.status_code == 413:  # one pair past max_body_bytes: nothing smaller to send
                raise BodyPastBound(Refused(f"HTTP 413: {short(response.text)}", 413, server_message(response)))
            if response.status_code != 200:
                if retryable_status(response.status_code) or retryable_status(response.status_code, response.headers):
                    response.raise_for_status()
                refused = Refused(f"HTTP {response.status_code}: {short(response.text)}", response.status_code,
                                  server_message(response))
                if response.status_code == 400 and _error_code(response) == VerdictError.CONTEXT_LENGTH_EXCEEDED:
                    # the chat route's rule (context_refusal) on judge-serve's words: a pair longer than the window
                    # its final row, one leaving no room for max_tokens held as the settings' refusal
                    raise context_refusal(refused, refused.said, config.max_tokens, is_context=True)
                raise refused
            answer = judge_response(response)  # a 200 that is no /v1/judge response: MalformedAnswer
            refuse_format_change(answer.verdict_format, config, model)
            # Another number of items or results than the one judgment asked, or another pair's item (its echoed id),
            # is no answer to it: a MalformedAnswer, as the pointwise backend reads one, so a failed row that the
            # failing streak counts. The id names the pair and the order (order_item_id): an answer for the pair's
            # other order fails too.
            (result,) = judge_results(answer, 1, f"1 judgment of pair {pair.id} ({order})", item_id=sent_id)
            if result.error == VerdictError.ABORTED:  # no verdict: asked again, as the pointwise backend does
                raise generation_aborted(f"judge-serve's engine aborted the generation for pair {pair.id} ({order})")
            # Never from judge-eval's one pair a request (a lone refusal is the request's 400, above): it guards a
            # judge-serve answering a request of several pairs, or one answering a lone refusal as a result.
            if result.error == VerdictError.ENGINE_REFUSED:  # a refused request, as the pointwise backend records it
                raise Refused(f"judge-serve's engine refused pair {pair.id} ({order}): "
                              f"{short(result.error_reason or '', 200)}", 400, result.error_reason or "")
            return _from_result(result)
        try:
            reply = await within_timeout(chat.chat.completions.create(
                model=model, messages=chat_messages(render_pairwise_prompt(shown)), max_tokens=config.max_tokens,
                temperature=config.temperature, **({"extra_body": body} if body else {})), config.timeout_s)
        except openai.APIStatusError as err:
            if retryable_status(err.status_code) or retryable_status(err.status_code, err.response.headers):
                raise
            if err.status_code == 413:  # one pair past the server's body bound: as on judge-serve's route (above)
                raise BodyPastBound(refusal_of(err)) from err
            # the pointwise chat path's rule (eval.judging.backends.context_refusal): a pair too long for the window
            # its final row (TooLong, below), one leaving no room for max_tokens held as a refusal (NoRoom)
            raise context_refusal(refusal_of(err), str(err.message), config.max_tokens) from err
        except JSON_REFUSALS as err:  # a body json.loads refused: MalformedAnswer (not_json)
            if (malformed := not_json(err)) is None:
                raise
            raise malformed from err
        choice = chat_choice(reply)  # a 200 with no choice, or one that is no object: MalformedAnswer
        finish_reason = getattr(choice, "finish_reason", None)
        if finish_reason == ABORTED_FINISH:  # no verdict: retried, then a request_failed row a rerun asks again
            raise generation_aborted(f"the chat server's engine aborted the generation for pair {pair.id} ({order})")
        message = choice.message
        return _outcome(chat_answer_text(message), reasoning_of(message) if integer else None,
                        config.verdict_format, config.lenient, finish_reason)

    queue: asyncio.Queue = asyncio.Queue()
    for job in todo:
        queue.put_nowait(job)
    journal = JournalWriter(path)
    counts = {"written": 0, "parse_failed": 0, "request_failed": 0}
    first_failed: list[PairwiseRow] = []  # said at the end: the reasons are otherwise only in the file's rows
    changed: list[ServerChanged] = []  # a judge-serve answering in another verdict format: the run stops at the first
    failing = FailingStreak(stop_after(config.concurrency))  # an endpoint failing every retry: stopped, not waited out
    # The judgments whose last row failed: asked last (pending_judgments), neither counted by the streak nor held by
    # the first refusals' stop, or every rerun would stop on the few pairs the server fails or its filter refuses.
    failed_before = ({(row.id, row.order) for row in read_pairwise_rows(path) if row.error == REQUEST_FAILED}
                     if todo and path.exists() else set())
    first = FirstRefusals.for_run(sum((pair.id, order) not in failed_before for pair, order in todo))

    def write(pair: PairRecord, order: str, outcome: dict[str, Any], latency: float) -> None:
        score = outcome["score"]
        verdict = None if score is None else _pair_verdict(score, order)
        row = PairwiseRow(id=pair.id, order=order, judge=name, verdict=verdict, **outcome, latency_s=round(latency, 4),
                          content_key=pair.content_key)
        journal.append(row.to_json())
        counts["written"] += 1
        if row.error == REQUEST_FAILED:
            counts["request_failed"] += 1
            first_failed[:] = first_failed or [row]
        elif not row.parse_ok:
            counts["parse_failed"] += 1
        if watch is not None:
            watch.offer([row])

    async def worker() -> None:
        while first.stopped is None and failing.stopped is None and not changed and not (watch and watch.misread):
            try:
                pair, order = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            start, refusal, failure = time.perf_counter(), None, None
            try:
                outcome = await policy.acall(lambda: ask(pair, order))
            except ServerChanged as err:
                # Not this judgment's failure but the server's: every later answer would be in the same other format,
                # read as the one run.json records. The judgment is unwritten: a rerun asks it again.
                changed.append(err)
                return
            except (TooLong, NoRoom) as err:  # final rows; NoRoom's held, a failed row if the run stops at it
                refusal = err if isinstance(err, NoRoom) else None
                outcome = too_long_outcome(err.final_reason, pairwise=True)
            except Exception as err:  # noqa: BLE001 - transient ones were retried; every failure is a counted row
                refusal = err if isinstance(err, Refused) else None
                reason = str(err) if refusal else failure_reason(err)
                outcome = failed_outcome(REQUEST_FAILED, reason, pairwise=True)
                # As every runner counts one (judge.plumbing.failing_streak.streak_failure): a transient failure
                # after its retries, or a 200 that is no answer (MalformedAnswer, a Refused); no other refusal.
                failure = streak_failure(err, policy)
            before = (pair.id, order) in failed_before  # neither counted by the streak nor a reset, nor held
            if failure is None or not before:
                failing.offer(failure, pair.id)
            latency = time.perf_counter() - start
            if_stopped = ((pair, order, failed_outcome(REQUEST_FAILED, str(refusal), pairwise=True), latency)
                          if isinstance(refusal, NoRoom) else None)
            too_long = refusal is None and outcome["error"] == VerdictError.CONTEXT_LENGTH_EXCEEDED  # the pair's own
            for held in first.offer(refusal, (pair, order, outcome, latency), asked_before=before,
                                    if_stopped=if_stopped, aside=too_long):
                write(*held)

    try:
        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, max(len(todo), 1)))))
    finally:
        await chat.close()
        await http.aclose()
    # Refusals held while every later judgment was too long for the window or asked before (neither ends the
    # holding) are still held when the run ends without the stop: written now, as any refusal the stop did not fire at.
    for held in first.release():
        write(*held)
    n_sent = len(todo) - queue.qsize()
    if watch is not None and watch.misread:  # the rows written are kept: the folder is started again anyway
        raise ConfigError(watch.misread)
    if changed:
        raise EndpointUnusable(changed[0].stopped(n_sent, len(todo), counts["written"]))
    if first.stopped is not None:  # the refused judgments as failed rows, asked again after the others
        raise first.keep_held(write, f"the judge ({name})", n_sent, len(todo))
    if failing.stopped is not None:  # its failed rows are written: a rerun asks them after the judgments never sent
        raise failing.error(f"the judge ({name})", policy.max_retries, n_sent, len(todo))
    if first_failed:  # as the pointwise run ends: the pair's id a literal, its text inert
        row = first_failed[0]
        log_failed_requests(log, counts["request_failed"], f"pair {row.id!r} in the {row.order} order", row.reason,
                            path)
    return counts

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
answers, rubrics), so a pair edited in place under the same ``id`` is judged again, never scored by stale verdicts.

``winner`` labels: ``-1``/``0``/``1`` as the judge writes them (``-1.0``/``0.0``/``1.0`` too, as pandas writes an
integer column with a null), or ``"answer_1"``/``"tie"``/``"answer_2"``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.judging.predictions import REQUEST_FAILED  # a judgment whose request failed: retried by the next run
from judge.checkpoints import NEUTRAL_SAMPLING
from judge.plumbing.run_folder import content_key
from judge.plumbing.config_files import ConfigError
from judge.plumbing.journal import JournalWriter, iter_journal
from judge.plumbing.json_reading import unreadable_json
from judge.prompts import PAIRWISE_FIELDS, render_pairwise_prompt
from judge.plumbing.retry import RetryPolicy
from judge.scales import Scale
from judge.verdicts import VerdictError, parse_judge_output
from judge.wire import JudgeResponse, PairItem, PairwiseRequest, checked_json_fields

__all__ = ["PAIRWISE_PREDICTIONS", "PAIRWISE_SCALE", "ORDERS", "PairRecord", "PairwiseRow", "is_pairwise_data",
           "load_pairs", "pending_judgments", "judge_pairs", "read_pairwise_rows"]

PAIRWISE_PREDICTIONS = "pairwise_predictions.jsonl"
#: -1 answer 1 better, 0 tie, 1 answer 2 better (demo/serve_pollux_demo.py:77-78).
PAIRWISE_SCALE = Scale((-1, 0, 1))
ORDERS = ("original", "swapped")
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
        return cls(**checked_json_fields(cls, data, where))


def is_pairwise_data(path: str | Path | None) -> bool:
    """Whether ``path`` is a JSONL file whose first row has ``answer_1`` (pairwise rows) rather than ``answer``."""
    if not path or not Path(path).is_file() or Path(path).suffix not in (".jsonl", ".json"):
        return False
    # Bytes, decoded a line at a time: a text-mode handle decodes ahead of the line it returns, so a bad byte on a
    # later line stopped this sniff with a bare UnicodeDecodeError that named no file or row. Whatever this cannot
    # read is "not pairwise"; the record loader then names the file, row and column.
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                try:
                    row = json.loads(line.decode("utf-8"))
                except (ValueError, RecursionError):  # not UTF-8, not JSON, or JSON json.loads cannot hold
                    return False
                return isinstance(row, dict) and "answer_1" in row
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


def load_pairs(path: str | Path) -> list[PairRecord]:
    """Read pairwise rows from a JSONL file.

    Raises:
        ConfigError: a row that is not an object, a missing or non-text field, a bad ``winner`` or a repeated id,
            naming the file, row and field.
    """
    pairs: list[PairRecord] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}: row {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ConfigError(f"{where}: not JSON ({err.msg})") from None
            except (ValueError, RecursionError) as err:  # valid JSON json.loads cannot hold
                raise ConfigError(f"{where}: {unreadable_json(err)}") from None
            if not isinstance(row, dict):
                raise ConfigError(f"{where}: expected a JSON object")
            for name in PAIRWISE_FIELDS:
                if not isinstance(row.get(name), str) or not row[name].strip():
                    raise ConfigError(f"{where}.{name}: required text is missing or empty")
            text_id = row.get("id")
            if text_id is None:  # a stable id from the content, as records without ids get one
                text_id = hashlib.sha1(json.dumps([row[n] for n in PAIRWISE_FIELDS], ensure_ascii=False).encode()).hexdigest()[:16]
            text_id = str(text_id)
            if text_id in seen:
                raise ConfigError(f"{where}.id: {text_id!r} appears twice")
            seen.add(text_id)
            pairs.append(PairRecord(text_id, row["instruction"], row["answer_1"], row["answer_2"], row["rubrics"],
                                    _winner(row.get("winner"), where)))  # fmt: skip
    return pairs


def read_pairwise_rows(path: str | Path) -> list[PairwiseRow]:
    """The rows of a ``pairwise_predictions.jsonl`` (a torn last line, from a kill, is dropped), the last row of each
    (id, order) winning, as a resumed run leaves them."""
    rows: dict[tuple[str, str], PairwiseRow] = {}
    for k, data in enumerate(iter_journal(path, quiet=True)):
        row = PairwiseRow.from_json(data, f"{path}: row {k + 1}")
        rows[(row.id, row.order)] = row
    return list(rows.values())


def pending_judgments(pairs: Sequence[PairRecord], path: Path, orders: Sequence[str]) -> tuple[list[tuple[PairRecord, str]], int, set[str]]:
    """The (pair, order) judgments still to ask, how many are done, and the judges the file's rows name.

    A judgment is done when its last row's request did not fail and the row judged the pair's current text (its
    ``content_key``): a pair edited in place keeps its ``id``, and its old verdicts are of answers no longer there.
    """
    rows = read_pairwise_rows(path) if path.exists() else []
    keys = {pair.id: pair.content_key for pair in pairs}
    final = {(r.id, r.order) for r in rows if r.error != REQUEST_FAILED and r.content_key == keys.get(r.id)}
    todo = [(pair, order) for pair in pairs for order in orders if (pair.id, order) not in final]
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


def _outcome(text: str | None, reasoning: str | None, verdict_format: str, lenient: bool) -> dict[str, Any]:
    verdict = parse_judge_output(verdict_format, text, reasoning=reasoning, scale=PAIRWISE_SCALE, lenient=lenient)
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
                      api_key: str, model: str, name: str, config, policy: RetryPolicy) -> dict[str, int]:
    """Ask every (pair, order) of ``todo`` with ``config.concurrency`` workers; append one row per judgment.

    ``kind`` is the backend (``chat``: one chat completion per judgment; ``judge-serve``: a ``PairwiseRequest`` to
    ``/v1/judge``). A judgment whose request fails (after ``policy``'s retries) is a ``request_failed`` row.

    Returns:
        ``written``, ``parse_failed``, ``request_failed``.
    """
    import httpx
    import openai

    from eval.judging.backends import Refused, reasoning_of, retryable_status, short
    from judge.prompts import JUDGE_CHAT_TEMPLATE_KWARGS, chat_messages
    from judge.verdicts import VerdictFormat

    if kind == "judge-serve" and todo:  # a bad extra_body is a configuration error before any request is sent
        pair, order = todo[0]
        pairwise_request(model, PairItem(id=pair.id, **pair.shown(order)), config)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
    chat = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=config.timeout_s)
    http = httpx.AsyncClient(base_url=root_url, headers=headers, timeout=config.timeout_s)
    integer = config.verdict_format == VerdictFormat.INTEGER

    async def ask(pair: PairRecord, order: str) -> dict[str, Any]:
        shown = pair.shown(order)
        if kind == "judge-serve":
            request = pairwise_request(model, PairItem(id=pair.id, **shown), config)
            response = await http.post("/v1/judge", json=request.model_dump(mode="json", exclude_unset=True))
            if response.status_code != 200:
                if retryable_status(response.status_code):
                    response.raise_for_status()
                raise Refused(f"HTTP {response.status_code}: {short(response.text)}")
            (item,) = JudgeResponse.from_json(response.json()).items
            (result,) = item.results
            return _from_result(result)
        body: dict[str, Any] = {} if integer else {"chat_template_kwargs": dict(JUDGE_CHAT_TEMPLATE_KWARGS)}
        if config.prompt == "ru":
            # As the pointwise chat backend: vLLM would fill every sampling field left out from the checkpoint's
            # generation_config.json (a released judge's repetition_penalty); an API judge refuses unknown fields.
            body.update(NEUTRAL_SAMPLING)
        body.update(config.extra_body)
        try:
            reply = await chat.chat.completions.create(model=model, messages=chat_messages(render_pairwise_prompt(shown)),
                                                       max_tokens=config.max_tokens, temperature=config.temperature,
                                                       **({"extra_body": body} if body else {}))  # fmt: skip
        except openai.APIStatusError as err:
            if retryable_status(err.status_code):
                raise
            raise Refused(f"HTTP {err.status_code}: {short(err.message)}") from err
        message = reply.choices[0].message if reply.choices else None
        return _outcome(message.content if message else None, reasoning_of(message) if integer else None,
                        config.verdict_format, config.lenient)

    queue: asyncio.Queue = asyncio.Queue()
    for job in todo:
        queue.put_nowait(job)
    journal = JournalWriter(path)
    counts = {"written": 0, "parse_failed": 0, "request_failed": 0}

    async def worker() -> None:
        while True:
            try:
                pair, order = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            start = time.perf_counter()
            try:
                outcome = await policy.acall(lambda: ask(pair, order))
            except Exception as err:  # noqa: BLE001 - transient ones were retried; every failure is a counted row
                reason = str(err) if isinstance(err, Refused) else f"{type(err).__name__}: {short(str(err))}"
                outcome = {"raw_output": None, "feedback": "", "score": None, "parse_ok": False,
                           "error": REQUEST_FAILED, "reason": reason}
            score = outcome["score"]
            verdict = None if score is None else (score if order == "original" else (-score or 0.0))
            row = PairwiseRow(id=pair.id, order=order, judge=name, verdict=verdict, **outcome,
                              latency_s=round(time.perf_counter() - start, 4), content_key=pair.content_key)
            journal.append(row.to_json())
            counts["written"] += 1
            if row.error == REQUEST_FAILED:
                counts["request_failed"] += 1
            elif not row.parse_ok:
                counts["parse_failed"] += 1

    try:
        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, max(len(todo), 1)))))
    finally:
        await chat.close()
        await http.aclose()
    return counts

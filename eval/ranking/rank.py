"""``judge-eval rank``: rank a candidate LLM with a judge, POLLUX's ``answer.py`` -> ``score.py`` -> ``metrics.py``.

    judge-eval rank --model http://127.0.0.1:8001/v1 --judge http://127.0.0.1:8000/v1 \\
        --data ai-forever/POLLUX-instructions --out runs/rank/my-model
    judge-eval rank --model /ckpt/my-model --judge /ckpt/pollux-judge-7b --data POLLUX-instructions/ --out ...

Example override: ``--judge-config configs/eval/local-cpu.yaml --n-boot 0 --limit 20`` (a tiny judge on CPU:
``configs/eval/tiny-cpu.yaml``).

Why one module of ~1,350 lines: it follows POLLUX's three scripts in order (config, instructions, answers, the
judge's verdicts, the matrix), each stage reading the files of the one before; the page and the comparison of two
runs live beside it (``report.py``, ``compare.py``), POLLUX's matrix in ``matrix.py``.

Three stages, each resumable, all in ``--out``:

1. **answers** (POLLUX ``src/answer.py``): the candidate answers every instruction of ``--data``: one chat
   completion, one user turn holding the instruction, ``max_tokens`` 4096 and temperature 0.7 by default (answer.py's
   defaults); ``<think>`` blocks are stripped from the answer, and an unclosed ``<think>`` cuts the rest
   (answer.py ``strip_think_tags``); content sent as a list of text parts is read joined
   (``judge.plumbing.message_content``), and a generation the server's engine aborted (``finish_reason`` ``abort``)
   is retried, then a failed request, never an answer cut short; an instruction longer than the candidate's context
   is a final ``context_length_exceeded`` row, scored by ``--no-answer``; one that fits but leaves no room for
   ``max_tokens`` is the settings' fault: the first three alike stop the ranking as failed rows, else it is a final
   ``context_length_exceeded`` row too, its reason naming ``max_tokens``. Rows go to ``answers.jsonl`` as they arrive
   (``judge.plumbing.journal``); a rerun keeps them and asks only for failed requests and instructions whose text
   changed (each row keeps a ``content_key`` of the instruction it answered); other candidate settings
   (``candidate_key``) are refused unless ``--overwrite``. Answers outside a run's selection (a smaller
   ``--limit``, another ``--meta``) stay for the run that selects them again. ``--model`` is a URL, or a
   checkpoint folder / hub id served for the stage by vLLM's OpenAI server (``eval.judging.local_server``, as
   ``judge-eval run`` serves a judge).
2. **verdicts** (POLLUX ``src/score.py``): every (instruction, criterion) becomes a judged item in ``items.jsonl``
   (the project's record schema; ``prompt_id`` and ``meta`` ride along) and ``judge-eval run``'s own machinery
   (``eval.judging.run.run``) judges them into the usual ``predictions.jsonl`` and ``run.json``: any judge ``judge-eval run``
   takes, in its own verdict format, resumable the same way. An item's id ends with a ``content_key`` of all
   the judge reads, so a verdict is reused only for the same (instruction, answer, criterion); items outside the
   selection that already have a verdict are written marked ``selected: false``, so the judge keeps their verdicts
   and asks nothing for them. ``--judge-config`` is a ``judge-eval run`` YAML; keys that select items
   (``SELECTION_KEYS``) are refused, the ranking selects them. With no answer to judge (every one empty or failed)
   the stage is skipped (``unasked_judge``) and the matrix holds the unjudged items alone.
3. **matrix** (POLLUX ``src/metrics.py``, see ``eval.ranking.matrix``): ``matrix.csv`` laid out exactly as POLLUX's
   ``metrics.csv``; ``rank.json`` (its ``matrix``; ``bench.json`` in a folder ranked before the rename, read as it
   is: ``ranking_result``) and ``cells.csv`` with bootstrap intervals over instructions and, per cell, the verdicts
   that did not parse, scores out of scale, failed requests, judgments the judge's server never ran (``not_run``: a
   prompt too long for the judge's context, a final row) and items with no verdict at all (POLLUX drops those
   silently; a missing verdict fails the run, exit code 3, and the next run asks for it), and the items
   of instructions the judge was not asked about (``n_no_answer``, ``n_empty_answer``; listed in ``unjudged.jsonl``);
   ``report.html``, the matrix as a heat map. ``judge-eval compare`` of two ranking folders is ``eval.ranking.compare``,
   of three or more ``eval.ranking.leaderboard``.

One ranking writes in ``--out`` at a time: the answers stage holds ``candidate/`` (``judge.plumbing.run_folder``),
then ``--out`` itself from its end to the ranking's, the verdict stage judging under that hold (``answers_stage``).

Departures from POLLUX, each counted in the matrix: an instruction whose answer request failed is not judged
(``no_answer``, retried by the next run, exit code 3; POLLUX's ``src/utils/openai_runner.py`` at 2e8eb789 turns a
failed request into ``""`` and judges that) and is scored by ``--no-answer`` (``eval.ranking.matrix.NO_ANSWER``: 0
on every criterion by default); an answer that is empty once thinking is stripped is not judged either,
since the toolkit's records refuse an empty answer (POLLUX sends ``""`` to its judge), and is scored by
``--empty-answer`` (``eval.ranking.matrix.EMPTY_ANSWER``: 0 on every criterion by default). A rubric that cannot
normalise a score (one level) is refused before the candidate is asked anything (``unnormalisable_rubric``). The
matrix reads rubrics as POLLUX does and verdicts with the toolkit's parser unless
``--verdict-reader pollux``; the remaining differences are listed in docs/evaluation.md ("Differences from POLLUX's
evaluator").

Before answering, the candidate's model list is asked (``eval.judging.contact.first_contact``; its key by
``judge.plumbing.api_keys.KEY_RULE``, as the judge's), ``max_tokens`` is fitted to its ``max_model_len`` with a printed
note; a candidate that refuses its first requests alike, or whose requests keep failing after their retries for
instruction after instruction (``judge.plumbing.failing_streak``), stops the ranking with its words (exit code 4): the
instructions it failed are written as failed rows, and a rerun asks those never sent first, then the failed ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import re
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.api_keys import CLIENT_KEY_ENV
from judge.plumbing.config_files import ConfigError
from judge.plumbing.config_files import option as _f
from judge.plumbing.invisible_text import is_blank
from judge.plumbing.json_reading import JSON_REFUSALS
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S
from judge.plumbing.run_folder import content_key
from judge.records import RecordError, row_place, value_words
from judge.verdicts import blocks_replaced

__all__ = ["ANSWERS", "EARLIER_RANKING_RESULT", "ITEMS", "MATRIX", "NOT_A_RANKING", "RANKED_FILES", "RANKING_RESULT",
           "UNJUDGED", "AnswerRow", "InstructionError", "InstructionRow", "RankConfig", "load_instructions", "rank",
           "ranked_files_key", "ranking_result", "strip_think", "unnormalisable_rubric", "ranked_items", "item_origin",
           "read_unjudged", "say_no_meta", "selected_records"]

log = logging.getLogger("judge_eval.rank")

ANSWERS, ITEMS, MATRIX, RANKING_RESULT = "answers.jsonl", "items.jsonl", "matrix.csv", "rank.json"
#: The name the same file has in a folder ranked before it was named ``rank.json``: read as it is (``ranking_result``).
EARLIER_RANKING_RESULT = "bench.json"
#: What a reader says of a folder holding neither (``ranking_result`` None).
NOT_A_RANKING = (f"not a judge-eval rank run (no {RANKING_RESULT}, nor the {EARLIER_RANKING_RESULT} of a run ranked "
                 "before the rename)")
#: The (instruction, criterion) items of this run's selection the judge was not asked about (``write_items``).
UNJUDGED = "unjudged.jsonl"
#: The files a run's matrix is read from (``ranked_items``), which ``compare`` reads again: a rerun rewrites
#: items.jsonl before its judge stage, so rank.json records them as they were (``ranked_files_key``).
RANKED_FILES = (ITEMS, "predictions.jsonl", UNJUDGED)
#: What a ranking writes from its answers: ``--overwrite`` deletes them with the answers (``_answers_holding``), and
#: the judge stage's run_key.json and run.json with them.
RANKING_OUTPUTS = (*RANKED_FILES, RANKING_RESULT, EARLIER_RANKING_RESULT, MATRIX, "cells.csv", "report.html")
#: answer.py's defaults: ``max_tokens: int = 4096``, ``temperature: float = 0.7``, ``concurrency: int = 10``.
POLLUX_ANSWER_MAX_TOKENS, POLLUX_ANSWER_TEMPERATURE, POLLUX_ANSWER_CONCURRENCY = 4096, 0.7, 10


@dataclass
class RankConfig:
    """Everything ``judge-eval rank`` needs; defaults, then ``--config`` YAML, then flags. Unknown keys are errors."""

    model: str = _f("", "The candidate LLM: the base URL of an OpenAI-compatible server (http://host:8001/v1), or a "
                        "checkpoint folder / hub id served for the run by vLLM.")
    model_name: str = _f("", "Model name sent to the candidate (default: the first model it lists; for a checkpoint: "
                             "its folder name).")
    judge: str = _f("", "The judge, as judge-eval run takes it: a checkpoint folder or hub id, or the base URL of "
                        "judge-serve / vLLM / an OpenAI-compatible API. Overrides judge_config's judge.")
    judge_config: str = _f("", "A judge-eval run YAML (configs/eval/*.yaml) for the verdict stage: backend, prompt, "
                               "verdict format, concurrency, server args, API key variables...")
    judge_model: str = _f("", "Model name sent to the judge (default: judge_config's, else the first one listed).")
    data: str = _f("", "POLLUX-instructions rows (prompt_id, instruction, reference_answer, meta, criteria): JSONL, "
                       "Parquet, a folder of hub shards, a save_to_disk folder or a dataset name.")
    split: str = _f("", "Split of a multi-split source (default: the only one, else 'test'; POLLUX's answer.py "
                        "reads 'train').")
    out: str = _f("", "Output folder: answers.jsonl, items.jsonl, predictions.jsonl, matrix.csv, rank.json, "
                      "report.html.")
    meta: str = _f("", "Rank only the instructions whose meta equals this value (answer.py's --meta; empty: all).")
    limit: int = _f(0, "Rank only the first N instructions (0: all).")
    max_tokens: int = _f(POLLUX_ANSWER_MAX_TOKENS, "Tokens the candidate may generate per answer (answer.py: 4096).")
    temperature: float = _f(POLLUX_ANSWER_TEMPERATURE, "The candidate's sampling temperature (answer.py: 0.7).")
    concurrency: int = _f(POLLUX_ANSWER_CONCURRENCY, "Candidate requests in flight at once (answer.py: 10).")
    extra_body: dict = _f({}, "Extra JSON fields sent with every candidate request, e.g. "
                              "{chat_template_kwargs: {enable_thinking: false}}.")
    api_key_env: str = _f(CLIENT_KEY_ENV, "Variables holding the candidate's API key, the first one set: by "
                                          "default $JUDGE_SERVE_API_KEY (judge-serve's own key), else $OPENAI_API_KEY, "
                                          "else no key; one variable named alone must be set; '' sends no key "
                                          "(judge.plumbing.api_keys.KEY_RULE). The judge's key follows the same "
                                          "rule (judge_config's api_key_env).")
    timeout_s: float = _f(600.0, "Seconds one candidate request may take.")
    connect_timeout_s: float = _f(120.0, "Seconds the first contact with the candidate and with the judge (GET "
                                         "/v1/models) keeps retrying a server that is unreachable or still loading "
                                         "before the ranking stops with exit code 4.")
    max_retries: int = _f(5, "Retries of a candidate request that failed for a transient reason (judge.plumbing.retry).")
    retry_wait_budget_s: float = _f(DEFAULT_WAIT_BUDGET_S, "Seconds one candidate request may spend waiting between "
                                    "its retries, all waits together (the backoff and the server's Retry-After, "
                                    "each taken up to 600 s): a retry whose wait would pass it is not made, and the "
                                    "answer is a failed row saying so (judge.plumbing.retry). The judge's requests "
                                    "have judge-eval run's own (judge_config's retry_wait_budget_s).")
    backoff_s: float = _f(1.0, "First retry delay in seconds; doubles per retry (judge.plumbing.retry).")
    server_args: list = _f([], "Checkpoint candidates: extra vLLM flags, e.g. ['--enforce-eager'].")
    server_env: dict = _f({}, "Checkpoint candidates: environment variables for the vLLM server.")
    server_timeout_s: float = _f(900.0, "Checkpoint candidates: seconds the server may take to start.")
    normalize: str = _f("minmax", "Score normalisation before averaging: minmax (POLLUX's metrics.csv today, "
                                  "score_utils.py at 9179cb4e), max (POLLUX's at 83f6eb6b), none (raw means on the "
                                  "rubrics' scales with today's gate: neither POLLUX's metrics.py at any commit nor "
                                  "the paper's Tables 1, 9, 10, which have no gate; see docs/ranking.md).",
                        choices=("minmax", "max", "none"))
    empty_answer: str = _f("zero", "An answer empty once thinking is stripped (a reasoning candidate out of "
                                   "max_tokens inside <think>, a server giving no content): POLLUX's score.py sends "
                                   "'' to its judge, which the toolkit's records refuse. zero: every criterion of the "
                                   "instruction scores 0, unjudged (as POLLUX's gate leaves an instruction whose "
                                   "Critical criterion 'does not allow evaluating the output' is scored 1); "
                                   "unscored: left out of the scores. Counted per cell (n_empty_answer) either way.",
                           choices=("zero", "unscored"))
    no_answer: str = _f("zero", "An instruction whose answer request failed for good (retried by each rerun, exit "
                                "code 3): POLLUX's runner turns a failed request into '' and judges that. zero: every "
                                "criterion of the instruction scores 0, unjudged, as --empty-answer zero; unscored: "
                                "left out of the scores, so a candidate whose hardest prompts fail ranks higher. "
                                "Counted per cell (n_no_answer) either way.", choices=("zero", "unscored"))
    verdict_reader: str = _f("toolkit", "How the matrix reads each verdict's score: toolkit (the judge stage's own "
                                        "parse: the last [RESULT], markdown tolerated) or pollux (POLLUX's "
                                        "metrics.py: the first complete '[RESULT] n [END]', nothing else; "
                                        "judge.verdicts.parse_pollux_result), to reproduce POLLUX's matrix from the "
                                        "same outputs; pollux is refused for an integer-format judge "
                                        "(Pollux-4B-Judge), none of whose verdicts it reads.",
                        choices=("toolkit", "pollux"))
    n_boot: int = _f(1000, "Bootstrap resamples of the instructions per interval: 0 (none) or at least 10 (one "
                           "resample is a zero-width interval), at most 100,000.")
    seed: int = _f(0, "Seed of the bootstrap resamples.")
    progress: bool = _f(True, "Show progress bars.")
    overwrite: bool = _f(False, "Discard the answers, verdicts and matrix already in out instead of resuming; "
                                "without it, a resume with other candidate settings (model, max_tokens, temperature, "
                                "extra_body, server_args) or judge settings is refused.")

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad key."""
        for key in ("model", "data", "out"):
            if not getattr(self, key):
                raise ConfigError(f"{key}: required (--{key})")
        if not self.judge and not self.judge_config:
            raise ConfigError("judge: give a judge (--judge) or a judge-eval run YAML (--judge-config)")
        for key in ("concurrency", "max_tokens"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key}: must be at least 1, got {getattr(self, key)}")
        # As RunConfig.validate: every comparison with NaN is false, so a NaN passed each bound below and reached
        # the client (a NaN connect_timeout_s retried for ever); an infinity is no number of seconds either.
        for key in ("timeout_s", "connect_timeout_s", "backoff_s", "retry_wait_budget_s", "server_timeout_s",
                    "temperature"):
            if not math.isfinite(getattr(self, key)):
                raise ConfigError(f"{key}: must be a finite number, got {getattr(self, key)}")
        for key in ("limit", "seed", "max_retries", "backoff_s", "retry_wait_budget_s", "temperature"):
            if getattr(self, key) < 0:
                raise ConfigError(f"{key}: must be >= 0, got {getattr(self, key)}")
        for key in ("timeout_s", "connect_timeout_s", "server_timeout_s"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{key}: must be positive, got {getattr(self, key)}")
        from eval.input_checks import N_BOOT_CAP  # score's and compare's cap too
        from eval.scoring.compare import N_BOOT_BOUND  # the one bound of score's, compare's and rank's --n-boot

        (within, bound), (cap, why) = N_BOOT_BOUND, N_BOOT_CAP
        if not within(self.n_boot):
            raise ConfigError(f"n_boot: must be {bound}, got {self.n_boot}")
        if self.n_boot > cap:  # a run's matrix resampled for hours without a word, after every request
            raise ConfigError(f"n_boot: must be at most {cap:,} ({why}), got {self.n_boot}")


# ---------------------------------------------------------------------------------------------- instructions


@dataclass(frozen=True)
class InstructionRow:
    """One row of POLLUX-instructions: an instruction and the criteria its answers are judged on.

    Attributes:
        prompt_id: the row's id (an integer in the released data; text accepted).
        instruction: the task given to the candidate.
        reference_answer: "" when none (score.py: ``row.get("reference_answer") or ""``).
        meta: the matrix column ("" when null, as metrics.py's ``fillna("")``).
        criteria: ``(criteria_name, rubrics)`` pairs, in the row's order.
    """

    prompt_id: int | str
    instruction: str
    reference_answer: str
    meta: str
    criteria: tuple[tuple[str, str], ...]


def _text(row: Mapping[str, Any], name: str, fail, *, required: bool) -> str:
    value = row.get(name)
    if value is None:
        if required:
            raise fail(name, "is missing")
        return ""
    if not isinstance(value, str):
        raise fail(name, f"must be text, got {value_words(value)}")
    if required and is_blank(value):  # white space and characters that show nothing, as judge.load_records reads it
        raise fail(name, "is empty")
    return value


class InstructionError(RecordError):
    """A POLLUX-instructions row that cannot be ranked. Its ``row`` is the index the source gave (0-based, a
    ``LineIndex`` or ``RowIndex``), named as the record loader names it: "line 2" for a JSONL file's second line,
    "row index 1" for a table's."""


def instruction_from_row(row: Any, source: str, index: int) -> InstructionRow:
    """Validate one POLLUX-instructions row, at ``index`` of ``source`` (as ``source_rows`` yields it).

    Raises:
        InstructionError: naming the source, row and field; a row without criteria too (its answer would be paid
            for and never judged).
    """
    def fail(name: str | None, message: str) -> RecordError:
        return InstructionError(source, index, name, message)

    if not isinstance(row, Mapping):
        raise fail(None, f"expected an object, got {value_words(row)}")
    pid = row.get("prompt_id")
    if type(pid).__name__.startswith(("int", "uint")) and not isinstance(pid, (bool, int)):
        pid = int(pid)  # a numpy integer (pandas, datasets)
    if pid is None:
        raise fail("prompt_id", "is missing")
    if isinstance(pid, bool) or not isinstance(pid, (int, str)) or (isinstance(pid, str) and not pid.strip()):
        raise fail("prompt_id", f"must be an integer or text, got {pid!r}")
    meta = row.get("meta")
    if meta is not None and not isinstance(meta, str):
        raise fail("meta", f"must be text or null, got {value_words(meta)}")
    criteria = row.get("criteria")
    if criteria is None or isinstance(criteria, (str, bytes, Mapping)) or not hasattr(criteria, "__iter__"):
        raise fail("criteria", "must be a list of {criteria_name, rubrics}"
                   + ("" if criteria is None else f", got {value_words(criteria)}"))
    pairs = []
    for k, crit in enumerate(criteria):
        if not isinstance(crit, Mapping):
            raise fail(f"criteria[{k}]", f"expected an object, got {value_words(crit)}")
        name = _text(crit, "criteria_name", lambda f, m, k=k: fail(f"criteria[{k}].{f}", m), required=True)
        rubrics = _text(crit, "rubrics", lambda f, m, k=k: fail(f"criteria[{k}].{f}", m), required=True)
        pairs.append((name, rubrics))
    if not pairs:  # its answer would be paid for and never judged
        raise fail("criteria", "is empty: an instruction needs at least one criterion to be judged on")
    return InstructionRow(prompt_id=pid, instruction=_text(row, "instruction", fail, required=True),
                          reference_answer=_text(row, "reference_answer", fail, required=False),
                          meta=meta if meta and meta.strip() else "", criteria=tuple(pairs))  # blank is none


def load_instructions(source: str | Path, split: str | None = None) -> list[InstructionRow]:
    """POLLUX-instructions rows from any source ``judge.load_records`` reads (``judge.record_sources.source_rows``).

    Raises:
        InstructionError: a bad row (source, row as ``row_place`` names it, field), or a ``prompt_id`` repeated
            (naming both rows);
            ``1`` and ``"1"`` count as the same id.
        FileNotFoundError: as ``judge.load_records``.
    """
    import os

    from judge.record_sources import near_sample, source_rows
    from judge.sample_data import SAMPLE_DATA

    # The index as the source gives it (a JSONL line, a table's row index), named as load_records names it: a +1
    # here once made a Parquet row "row 2" where pandas and the loader say index 1.
    def indexed() -> Iterator[tuple[str, int, Any]]:
        try:
            yield from source_rows(source, split=split)
        except RecordError as err:  # an unreadable line: its place kept, the type this loader raises
            raise InstructionError(err.source, err.row, err.field, err.message) from None
        except FileNotFoundError:
            # `--data sampel` is asked whether it meant `sample` by the readers of judged records; here that name
            # reads as a path too, so the ranking says what it reads instead. A path that is there is the user's.
            if os.path.lexists(source) or not near_sample(str(source)):
                raise
            raise FileNotFoundError(f"{source}: no such file or folder; the bundled `{SAMPLE_DATA}` holds judged "
                                    "records, which judge-eval rank does not read: it ranks on POLLUX-instructions "
                                    "rows (prompt_id, instruction, criteria), such as ai-forever/POLLUX-instructions"
                                    ) from None

    rows, seen = [], {}
    for where, index, row in indexed():
        parsed = instruction_from_row(row, where, index)
        # Keyed by the id's text: item ids and the judge's predictions hold it as text, so 1 and "1" would share
        # their items after the candidate had been paid for both answers.
        key = str(parsed.prompt_id)
        if key in seen:
            first_row, first_id = seen[key]
            same = "repeats" if first_id == parsed.prompt_id else f"is the same id as {first_id!r} of"
            raise InstructionError(where, index, "prompt_id", f"{parsed.prompt_id!r} {same} {row_place(first_row)}")
        seen[key] = (index, parsed.prompt_id)
        rows.append(parsed)
    return rows


def say_no_meta(rows: Sequence[InstructionRow], source: str | Path) -> None:
    """Warn when ranked ``rows`` (the run's selection) have no meta: kept, not refused (null is the schema's "none"),
    as one matrix column with a blank name, which pandas' groupby in POLLUX's metrics.py would drop unseen."""
    no_meta = [r.prompt_id for r in rows if not r.meta]
    if no_meta:
        log.warning("data: %s: %d of %d instructions have no meta (the first: prompt_id %r): they make one matrix "
                    "column with a blank name; give each a meta (a task type, a domain) to name its column",
                    source, len(no_meta), len(rows), no_meta[0])


# ---------------------------------------------------------------------------------------------- answers


_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_THINK_CLOSE = re.compile(r"</think>")
_THINK_OPEN = re.compile(r"<think>.*", re.DOTALL)


def strip_think(text: str | None) -> tuple[str | None, bool]:
    """The answer without reasoning, as POLLUX's ``answer.py`` ``strip_think_tags`` does: every closed
    ``<think>…</think>`` block removed, then everything from an unclosed ``<think>`` on, then surrounding whitespace.

    Returns:
        (the answer, whether an unclosed ``<think>`` cut it: the answer stopped inside its reasoning).
    """
    if not text:
        return text, False
    closed = blocks_replaced(text, _THINK_BLOCK, _THINK_CLOSE, "")  # linear in a candidate looping on "<think>"
    cut = _THINK_OPEN.sub("", closed)
    return cut.strip(), cut != closed


@dataclass(frozen=True)
class AnswerRow:
    """One line of ``answers.jsonl``: the candidate's answer to one instruction.

    Attributes:
        prompt_id: the instruction's id.
        model: the candidate's label.
        answer: the answer with thinking stripped (None when the request failed).
        finish_reason: the server's (``length``: cut by max_tokens).
        cut_in_thinking: an unclosed ``<think>`` was cut away (the answer stopped inside its reasoning).
        error: ``request_failed`` or None; reason: why.
        latency_s: seconds of the request.
        instruction_key: ``content_key`` of the instruction the candidate was sent ("" in rows written before the
            field): a resumed run reuses the answer only while the data's instruction has the same key.
    """

    prompt_id: int | str
    model: str
    answer: str | None
    finish_reason: str | None = None
    cut_in_thinking: bool = False
    error: str | None = None
    reason: str = ""
    latency_s: float | None = None
    instruction_key: str = ""

    def answers(self, row: InstructionRow) -> bool:
        """Whether this is a usable answer to ``row`` as the data states it now."""
        return self.error is None and self.answer is not None and self.instruction_key == content_key(row.instruction)

    def final(self, row: InstructionRow) -> bool:
        """Whether this row is ``row``'s last word, never asked again: an answer, or an instruction longer than the
        candidate's context (``CONTEXT_LENGTH_EXCEEDED``, scored by ``--no-answer``)."""
        return self.answers(row) or (self.error == CONTEXT_LENGTH_EXCEEDED
                                     and self.instruction_key == content_key(row.instruction))

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> AnswerRow:
        from judge.wire_fields import checked_json_fields

        # Typed: a prompt_id that is a list was a TypeError traceback, and an answer that is a number an
        # AttributeError far from the file; each is now an error naming the file, the line and the field.
        return cls(**checked_json_fields(cls, data, where, noun="answer field", typed=True))


REQUEST_FAILED = "request_failed"
#: An instruction its candidate's context refused (``eval.judging.backends.context_refusal``): a final answer row
#: without an answer, scored by ``--no-answer`` and never asked again (``judge.VerdictError``'s).
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"


def candidate_policy(config: RankConfig):
    """The candidate's answers' ``judge.plumbing.retry`` policy: ``max_retries``, ``backoff_s`` (base delay capped at
    60 s), one request's waits together bounded by ``retry_wait_budget_s``."""
    from judge.plumbing.retry import RetryPolicy

    return RetryPolicy(max_retries=config.max_retries, backoff_s=config.backoff_s, max_backoff_s=60.0,
                       wait_budget_s=config.retry_wait_budget_s, bound_flag="--retry-wait-budget-s")


def _stopped(err: BaseException) -> str:
    """Why the retry policy stopped before ``err``'s retries were spent, bracketed for a row's reason; "" if not."""
    from judge.plumbing.retry import retry_stop_said

    return f" ({said})" if (said := retry_stop_said(err)) else ""


async def _answer_all(rows: Sequence[InstructionRow], config: RankConfig, base_url: str, model: str, name: str,
                      path: Path, api_key: str = "", failed_before: Collection[Any] = ()) -> dict[str, int]:
    """Ask the candidate every instruction of ``rows``, appending one ``AnswerRow`` each to ``path``.

    Stops as ``judge-eval run`` does (``EndpointUnusable``, exit 4): when the first requests are all refused alike
    (``FirstRefusals``), and when ``stop_after(concurrency)`` different instructions in a row still failed
    transiently after their retries or were answered with an HTTP 200 that is no chat completion
    (``eval.judging.backends.MalformedAnswer``) (``judge.plumbing.failing_streak.FailingStreak``): either way their
    failed rows are written, the instructions not sent have none, and a rerun asks those first, then the failed ones
    (``answers_stage``). ``failed_before``: the prompt ids whose answer failed in an earlier run, which the streak
    does not count (a rerun would otherwise stop on the same few instructions).

    An answer the server's engine aborted (HTTP 200, ``finish_reason`` ``abort``: a paused engine, a fault-tolerance
    abort) holds only the text written so far: retried as a dropped connection is, then a failed row, never an
    answer judged on its cut text (or an empty one scored by ``--empty-answer``). Content the chat API allows but no
    stage can read as text (``judge.plumbing.message_content.message_text``: an image part, a JSON object) is a
    failed row too; a list of text parts is read joined.
    """
    import asyncio  # here, as the client: every judge-eval start imports this module for RankConfig's flags

    import openai
    from tqdm import tqdm

    from eval.judging.backends import (ABORTED_FINISH, BodyPastBound, FirstRefusals, NoRoom, Refused, TooLong,
                                       chat_choice, context_refusal, generation_aborted, not_json, refusal_of)
    from eval.judging.answer_text import answer_text
    from eval.judging.predictions import log_failed_requests
    from judge.plumbing.failing_streak import FailingStreak, stop_after, streak_failure
    from judge.plumbing.journal import JournalWriter
    from judge.plumbing.message_content import described_content, separated_reasoning
    from judge.plumbing.retry import retryable_status

    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=config.timeout_s)
    # Only instructions never asked before can tell a refusing candidate from refused instructions: one refused
    # before is refused again on its own (a content filter), written as a failed row, never held (FirstRefusals).
    first = FirstRefusals.for_run(sum(row.prompt_id not in failed_before for row in rows))
    policy = candidate_policy(config)
    failing = FailingStreak(stop_after(config.concurrency))  # an endpoint failing every retry: stopped, not waited out
    journal = JournalWriter(path)
    queue: asyncio.Queue = asyncio.Queue()
    for row in rows:
        queue.put_nowait(row)
    counts = {"answered": 0, "request_failed": 0, "too_long": 0}
    first_failed: list[AnswerRow] = []  # said at the end: the reasons are otherwise only in answers.jsonl's rows
    bar = tqdm(total=len(rows), desc="answers", unit="instruction", disable=not config.progress)

    async def ask(row: InstructionRow):
        kwargs = {"extra_body": dict(config.extra_body)} if config.extra_body else {}
        try:
            # answer.py: ``openai_messages_fn=lambda instr: [{"role": "user", "content": instr}]``.
            response = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": row.instruction}],
                max_tokens=config.max_tokens, temperature=config.temperature, **kwargs)
        except openai.APIStatusError as err:
            if retryable_status(err.status_code) or retryable_status(err.status_code, err.response.headers):
                raise
            if err.status_code == 413:  # one instruction past the server's body bound: nothing smaller to send
                # held as NoRoom is (below), else a final row: the judge routes' rule (BodyPastBound)
                raise BodyPastBound(refusal_of(err), one="instruction", does="answers") from err
            # the judge routes' rule (eval.judging.backends.context_refusal): an instruction too long for the
            # candidate's window its final answer row (TooLong), one leaving no room for max_tokens held (NoRoom)
            raise context_refusal(refusal_of(err), str(err.message), config.max_tokens) from err
        except JSON_REFUSALS as err:  # a body json.loads refused: MalformedAnswer (not_json)
            if (malformed := not_json(err)) is None:
                raise
            raise malformed from err
        # An HTTP 200 that is no chat completion (a proxy's page, no choice, a choice that is no object) is a
        # MalformedAnswer: a failed row, never retried, and counted by the failing streak as the judge's clients do.
        choice = chat_choice(response)
        # Raised here, inside the retry policy's call: an aborted generation is worth another attempt, as the judge's
        # clients treat one (eval.judging.backends.ChatBackend.judge).
        if getattr(choice, "finish_reason", None) == ABORTED_FINISH:
            raise generation_aborted(f"the candidate's engine aborted the generation for prompt_id {row.prompt_id!r} "
                                     f"(finish_reason {ABORTED_FINISH})")
        return choice

    def write(result: AnswerRow, failed: bool) -> None:
        counts[{None: "answered", CONTEXT_LENGTH_EXCEEDED: "too_long"}.get(result.error, "request_failed")] += 1
        if result.error == REQUEST_FAILED and not first_failed:
            first_failed.append(result)
        journal.append(result.to_json())
        bar.update(1)

    async def worker() -> None:
        while first.stopped is None and failing.stopped is None:
            try:
                row = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            start = time.perf_counter()
            refusal = failure = None
            try:
                choice = await policy.acall(lambda row=row: ask(row))
                content = choice.message.content if choice.message is not None else None
                # Reasoning parts alone read as an unclosed <think> (eval.judging.answer_text): the answer cut inside
                # its reasoning, an empty answer scored by --empty-answer as the inline cut is, not asked again.
                text = answer_text(content)
                if text is None:  # no answer of the model's to judge: a failed row the next run asks again
                    raise Refused(f"the candidate's message content is not text: {described_content(content)}")
                answer, cut = strip_think(text)
                finish_reason = getattr(choice, "finish_reason", None)
                # The same cut with the reasoning in a field of its own (a vLLM or SGLang --reasoning-parser): no
                # content, the generation stopped by max_tokens, some reasoning beside it.
                cut = cut or (answer == "" and finish_reason == "length"
                              and separated_reasoning(choice.message) is not None)
                result = AnswerRow(prompt_id=row.prompt_id, model=name, answer=answer,
                                   finish_reason=finish_reason, cut_in_thinking=cut,
                                   instruction_key=content_key(row.instruction))
            except (TooLong, NoRoom) as err:
                # The instruction's final answer row. A too-long instruction is the data's own, never held by the
                # first refusals' stop; NoRoom is the settings' refusal: held, and a failed row if the run stops at it.
                refusal = err if isinstance(err, NoRoom) else None
                result = AnswerRow(prompt_id=row.prompt_id, model=name, answer=None, error=CONTEXT_LENGTH_EXCEEDED,
                                   reason=err.final_reason, instruction_key=content_key(row.instruction))
            except Exception as err:  # noqa: BLE001 - transient ones were retried; every failure is a counted row
                refusal = err if isinstance(err, Refused) else None
                result = AnswerRow(prompt_id=row.prompt_id, model=name, answer=None, error=REQUEST_FAILED,
                                   # a MalformedAnswer is a Refused: named so, as it was before it had its name
                                   reason=f"{'Refused' if refusal else type(err).__name__}: "
                                          f"{' '.join(str(err).split())[:300]}{_stopped(err)}",
                                   instruction_key=content_key(row.instruction))
                # As every runner counts one (judge.plumbing.failing_streak.streak_failure): a transient failure
                # after its retries, or a 200 that is no answer (MalformedAnswer, a Refused); no other refusal.
                failure = streak_failure(err, policy)
            if failure is None or row.prompt_id not in failed_before:
                failing.offer(failure, row.prompt_id)  # an instruction failed before: neither counted nor a reset
            result = dataclasses.replace(result, latency_s=round(time.perf_counter() - start, 4))
            if_stopped = None
            if isinstance(refusal, NoRoom):  # the failed row the stop writes, as for any other refusal (below)
                said = " ".join(str(refusal).split())[:300]
                if_stopped = (dataclasses.replace(result, error=REQUEST_FAILED, reason=f"Refused: {said}"), True)
            too_long = refusal is None and result.error == CONTEXT_LENGTH_EXCEEDED
            for held in first.offer(refusal, (result, result.error is not None),
                                    asked_before=row.prompt_id in failed_before, if_stopped=if_stopped,
                                    aside=too_long):
                write(*held)

    try:
        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, max(len(rows), 1)))))
    finally:
        bar.close()
        await client.close()
    # Refusals held while every later instruction was too long for the window or asked before (neither ends the
    # holding) are still held when the stage ends without the stop: written now, as any refusal the stop did not fire
    # at.
    for held in first.release():
        write(*held)
    if first.stopped is not None:
        # The refused instructions as failed rows (a NoRoom's too: its if_stopped row), asked after the others by the
        # rerun (``answers_stage``): unwritten, every rerun sent the same refused instructions first and stopped at
        # them again, never ranking the rest.
        raise first.keep_held(write, f"the candidate ({name})", len(rows) - queue.qsize(), len(rows))
    if failing.stopped is not None:  # its failed rows are written: a rerun asks them with the instructions never sent
        raise failing.error(f"the candidate ({name})", policy.max_retries, len(rows) - queue.qsize(), len(rows))
    if first_failed:  # as judge-eval run says its failed requests: the run then exits 3 with counts alone
        n, row = counts["request_failed"], first_failed[0]
        # the prompt_id as a literal (a text one comes from the data: a newline or an escape in it stays inert)
        log_failed_requests(log, n, f"prompt_id {row.prompt_id!r}", row.reason, path, to="the candidate")
    return counts


def read_answers(path: Path) -> dict[Any, AnswerRow]:
    """The latest row per ``prompt_id`` of ``answers.jsonl`` (a failed request is superseded by its retry)."""
    from judge.plumbing.journal import iter_journal_lines, open_journal
    from judge.records import LineIndex

    latest: dict[Any, AnswerRow] = {}
    open_journal(path)  # a torn last line cut (and said), for the appends to start on a line of their own
    for number, data in iter_journal_lines(path, quiet=True):  # named by the line an editor shows, blanks counted
        row = AnswerRow.from_json(data, f"{path}: {row_place(LineIndex(number - 1))}")
        latest[row.prompt_id] = row
    return latest


@contextlib.contextmanager
def _candidate(config: RankConfig, out: Path) -> Iterator[tuple[str, str]]:
    """(base URL, model name) of the candidate: the given URL, or a vLLM server for a checkpoint."""
    from eval.judging.contact import base_of
    from judge.checkpoints import is_hub_id

    if config.model.startswith(("http://", "https://")):
        yield base_of(config.model), config.model_name
        return
    if not (Path(config.model).is_dir() or is_hub_id(config.model)):
        from eval.judging.run import not_a_model_ref  # judge-eval run's words (judge-serve's) for the same mistake

        raise not_a_model_ref(config.model, "model")
    from eval.judging.local_server import local_server
    from eval.judging.config import RunConfig

    # The judge's server helper, told to start plain vLLM: a candidate is an ordinary chat model, not a judge.
    served = RunConfig(judge=config.model, out=str(out), model=config.model_name, server="vllm",
                       server_args=list(config.server_args), server_env=dict(config.server_env),
                       server_timeout_s=config.server_timeout_s)
    (out / "candidate").mkdir(parents=True, exist_ok=True)
    with local_server(Path(config.model), served, out / "candidate") as (base_url, model):
        yield base_url, model


#: Candidate settings that change what the candidate answers: a resume must keep them (``candidate_key``). The
#: others say how the stage goes (concurrency, retries, timeouts, keys) and may change. The instructions are checked
#: one by one instead (``AnswerRow.instruction_key``), so a changed instruction is asked again and the others kept.
CANDIDATE_KEY = ("model", "max_tokens", "temperature", "extra_body", "server_args")


def candidate_key(config: RankConfig) -> dict[str, Any]:
    """The candidate settings a resume must share with the run that wrote ``answers.jsonl``.

    A candidate given as a URL is left out (a requeued Slurm task reaches its server at a new address); the served
    model's name is checked against the answers already written instead. ``max_tokens`` is the one asked for, before
    it is fitted to the server.
    """
    key = {name: getattr(config, name) for name in CANDIDATE_KEY}
    if config.model.startswith(("http://", "https://")):
        key["model"] = "<url>"
        del key["server_args"]  # flags of a server this run does not start
    elif Path(config.model).expanduser().exists():  # a checkpoint folder, named the same from any directory
        key["model"] = str(Path(config.model).expanduser().resolve())
    return key


@contextlib.contextmanager
def answers_stage(rows: Sequence[InstructionRow], config: RankConfig, out: Path) -> Iterator[dict[str, Any]]:
    """Ask the candidate for every instruction of ``rows`` that has no answer to its text yet; yield the stage's
    counts with ``out`` held (``hold_run_folder``) until the block ends: the stages after it (items.jsonl and
    unjudged.jsonl, the verdicts, the matrix and its files) run under that one hold.

    ``answers.jsonl`` ends with one row per instruction: those of ``rows`` in data order, then the answers to
    instructions outside this run's selection (a smaller ``--limit``, another ``--meta``), kept for the run that
    selects them again.

    Raises:
        ResumeMismatch: ``answers.jsonl`` was asked with other candidate settings (``candidate_key``), naming each.
        ConfigError: it holds another candidate's answers.
        RunFolderBusy: another ranking's candidate stage holds the folder, or another ranking holds ``out``.
    """
    from judge.plumbing.run_folder import hold_run_folder

    # The stage holds its own folder (``out`` is held after it): one writer of answers.jsonl, and a refusal
    # before any answer (an unreachable candidate, a key it refuses, other settings; --overwrite deletes nothing
    # before the candidate's first contact) leaves the folder as it found it. The key it left marked a ranking's folder (eval.input_checks.RANKING_MARKERS): judge-eval run refused it.
    with contextlib.ExitStack() as out_held:
        with hold_run_folder(out / "candidate", "judge-eval rank", progress_files=[f"../{ANSWERS}"]):
            counts = _answers_holding(rows, config, out)
            # ``out`` is taken before the candidate's folder is let go, in the one order the two locks are taken in
            # (``_claim``'s): let go between the stages, another ranking's --overwrite deleted the answers, items and
            # verdicts this one was about to judge, and one started after the verdicts wrote its items and results
            # among this one's. The verdict stage runs under this hold (``judge-eval run``'s ``ranking``).
            out_held.enter_context(hold_run_folder(out, "judge-eval rank"))
        yield counts


def _record_claim(config: RankConfig, folder: Path) -> None:
    """Write ``folder/run.json`` (``judge.plumbing.provenance``), its launch naming this run's Slurm job: once the
    claim has cleared what ``--overwrite`` discards and before any answer. ``slurm/rank.sbatch`` resumes a requeued
    task (``--no-overwrite``) only when this record names its job, as ``eval.sbatch`` does with a shard's run.json.
    An earlier record that cannot be read is replaced (said): it names no launch to keep."""
    from judge.plumbing.provenance import PROVENANCE_FILE, write_provenance

    try:
        write_provenance(folder, "judge-eval rank", candidate_key(config))
    except ValueError as err:
        log.warning("%s: %s; replaced by this run's record", folder / PROVENANCE_FILE, err)
        (folder / PROVENANCE_FILE).unlink()
        write_provenance(folder, "judge-eval rank", candidate_key(config))


def _claim(config: RankConfig, out: Path) -> None:
    """Claim the candidate's folder under this run's key (``--overwrite``: deleting the answers and what was computed
    from them), then record the claim (``_record_claim``).

    Raises:
        RunFolderBusy: with ``--overwrite``, another ranking holds ``out`` (still after ``BUSY_RETRY_S``): nothing
            is deleted.
    """
    from judge.plumbing.provenance import PROVENANCE_FILE
    from judge.plumbing.run_folder import RUN_KEY_FILE, claim_run_folder, hold_run_folder

    # The deletions hold ``out`` as a ranking does from the end of its candidate stage (``hold_run_folder``, the lock
    # ``judge-eval run`` takes): a look at the lock just before them leaves a window in which another ranking takes
    # ``out`` and writes verdicts they then delete. Held, a ranking holding ``out`` refuses them, and a ``judge-eval
    # run`` on the folder meanwhile is refused; no other ranking reaches ``out`` during them, since it takes the
    # candidate's lock first, held here. Taken after the candidate's lock, the one order the two are taken in.
    with hold_run_folder(out, "judge-eval rank") if config.overwrite else contextlib.nullcontext():
        # The candidate's own key file, in the folder of its stage (the judge stage's is ``out/run_key.json``);
        # answers written before the file existed are kept under this key: their rows have no instruction key, so
        # they are asked again anyway.
        claim_run_folder(out / "candidate", candidate_key(config), [f"../{ANSWERS}"], overwrite=config.overwrite,
                         adopt_unkeyed=True)
        if config.overwrite:
            # The claim has just deleted the answers: what was computed from them goes with them, as `judge-eval run
            # --overwrite` deletes its scores with its predictions. Left, a Ctrl+C before this run's first answer
            # said them kept, and a rerun without --overwrite judged its items by their verdicts.
            # The judge stage's key and record go too: kept, a rerun resumed without --overwrite whose judge stage
            # asks nothing (``unasked_judge`` keeps a run.json) joined the ranking's settings to the discarded
            # judge's record. No plain run's progress is left for them to describe: ``refuse_other_run_kind``
            # refused its folder.
            gone = [name for name in (*RANKING_OUTPUTS, RUN_KEY_FILE, PROVENANCE_FILE) if (out / name).is_file()]
            for name in gone:
                (out / name).unlink()
            if gone:
                log.info("overwrite: deleted the discarded ranking's %s", ", ".join(gone))
    _record_claim(config, out / "candidate")


def _answers_holding(rows: Sequence[InstructionRow], config: RankConfig, out: Path) -> dict[str, Any]:
    """``answers_stage``, its folder held."""
    from eval.judging.backends import unasked_first
    from judge.plumbing.journal import rewrite_journal
    from judge.plumbing.run_folder import RunFolderBusy, run_folder_holder

    # Another ranking holds ``out`` (from the end of its candidate stage to the end of its ranking, its verdict stage
    # judging under that hold): this run would rewrite the items it judges, and --overwrite delete its verdicts.
    # Asked here, before the candidate is reached (a served one takes minutes to start); --overwrite's deletions then
    # hold out itself (``_claim``), and the stage takes it again at its end (``answers_stage``), asking for it for
    # ``BUSY_RETRY_S`` at most, so the one order the two locks are taken in (the candidate's, then out's) has nothing
    # to deadlock on.
    holder = run_folder_holder(out)
    if holder is not None:
        raise RunFolderBusy.held(out, holder)
    path = out / ANSWERS
    if not config.overwrite:  # other candidate settings refused before the candidate is reached
        _claim(config, out)
    # With --overwrite the answers on disk are discarded: the claim that deletes them waits for the candidate's first
    # contact (below), so a run stopped before it (a key unset or refused, a candidate unreachable) deletes nothing.
    written = {} if config.overwrite else read_answers(path)
    done = {r.prompt_id for r in rows if r.prompt_id in written and written[r.prompt_id].final(r)}
    failed_before = {r.prompt_id for r in rows if r.prompt_id not in done and r.prompt_id in written
                     and written[r.prompt_id].error}
    # Those failed before asked last: a run stopped by refused first requests wrote them as failed rows, and sent
    # first again they would stop this run too before it asked anything new.
    todo = unasked_first([r for r in rows if r.prompt_id not in done], lambda r: r.prompt_id in failed_before)
    counts: dict[str, Any] = {"answered": 0, "request_failed": 0, "too_long": 0}
    name = next((a.model for a in written.values() if a.error is None), "")
    if name and config.model_name and config.model_name != name:
        raise ConfigError(f"out: {path} holds answers of {name!r}, not of {config.model_name!r}; use another --out")
    if todo:
        from eval.judging.contact import first_contact, fit_max_tokens
        from eval.judging.run import first_contact_policy
        from judge.plumbing.api_keys import client_api_key

        key = client_api_key("", config.api_key_env, command="judge-eval rank")
        with _candidate(config, out) as (base_url, model):
            # First contact: a loading server is waited for, a wrong key or URL said plainly (exit 4); the
            # candidate's max_tokens is fitted to what it allows (its max_model_len, judge-serve's caps).
            model, limits = first_contact(base_url, key.key, model, key_source=key.source, what="the candidate",
                                          policy=first_contact_policy(config))
            if config.overwrite:  # every instruction is to do: the claim, holding out, comes before the first answer
                _claim(config, out)
            max_tokens, note = fit_max_tokens(config.max_tokens, limits, route="chat")
            if note:
                log.warning("note: the candidate's %s", note)
                config = dataclasses.replace(config, max_tokens=max_tokens)
            label = config.model_name or model
            if name and label != name:
                raise ConfigError(f"out: {path} holds answers of {name!r}, not of {label!r}; use another --out")
            name = label
            log.info("answers: %d instructions (%d already answered) from %s", len(todo), len(done), name)
            import asyncio

            counts = asyncio.run(_answer_all(todo, config, base_url, model, name, path, api_key=key.key,
                                             failed_before=failed_before))
    # One row per instruction: this run's in data order (the failed ones kept, so the next run retries them), then
    # every other one already paid for.
    latest = read_answers(path)
    selected = [r.prompt_id for r in rows if r.prompt_id in latest]
    chosen = set(selected)
    others = [pid for pid in latest if pid not in chosen]
    rewrite_journal(path, [latest[pid].to_json() for pid in [*selected, *others]])
    return {**counts, "n_done_before": len(done), "model": name}


# ---------------------------------------------------------------------------------------------- verdicts


def item_id(row: InstructionRow, k: int, answer: str) -> str:
    """The judged item of criterion ``k`` (0-based, in the row's order) of instruction ``row``, answered ``answer``.

    The id ends with the ``content_key`` of everything the judge reads (instruction, reference answer, answer,
    criterion, rubric): the judge stage resumes by id, so a verdict on disk is reused only for the same item, and
    an item whose data or answer changed is judged again.
    """
    name, rubrics = row.criteria[k]
    return f"{row.prompt_id}#{k}#{content_key(row.instruction, row.reference_answer, answer, name, rubrics)}"


def write_items(rows: Sequence[InstructionRow], answers: Mapping[Any, AnswerRow], path: Path,
                others: Sequence[InstructionRow] = (), judged: Collection[str] = (),
                unjudged: Path | None = None) -> dict[str, int]:
    """One record per (answered instruction, criterion), as score.py builds its samples; counts what is left out.

    Args:
        rows: this run's instructions.
        answers: the latest answer per ``prompt_id``; one is used only if it answers the instruction's text.
        path: ``items.jsonl``.
        others: instructions of the data outside this run's selection. The judge stage drops the verdicts of ids its
            items lack, so the items of these that already have a verdict are written too, marked ``selected:
            false``: the judge keeps their verdicts and asks nothing for them, and the matrix leaves them out.
        judged: the ids that have a final verdict on disk (``judged_ids``).
        unjudged: ``unjudged.jsonl``: one row per (instruction, criterion) of ``rows`` left out, with why
            (``no_answer``, ``empty_answer``) and what the matrix and ``compare`` need of it (``ranked_items``).

    Returns:
        ``n_items`` (this run's), ``n_kept`` (the marked ones), ``n_no_answer``, ``n_empty_answer``.
    """
    import judge
    from judge.plumbing.journal import rewrite_journal

    def items_of(row: InstructionRow) -> list:
        answer = answers[row.prompt_id].answer
        return [judge.JudgeRecord(
            id=item_id(row, k, answer), instruction=row.instruction, answer=answer, criteria_name=name,
            rubrics=rubrics, reference_answer=row.reference_answer,
            extra={"prompt_id": row.prompt_id, "meta": row.meta}) for k, (name, rubrics) in enumerate(row.criteria)]

    def why_unjudged(row: InstructionRow) -> str | None:
        """Why ``row`` has no items (``no_answer``, ``empty_answer``), or None where its answer is judged: the one
        rule for this run's rows and the marked ones of ``others``."""
        answer = answers.get(row.prompt_id)
        return ("no_answer" if answer is None or not answer.answers(row) else
                "empty_answer" if is_blank(answer.answer) else None)  # shows nothing: load_records refuses it

    records, counts, left_out = [], {"n_no_answer": 0, "n_empty_answer": 0}, []
    for row in rows:
        why = why_unjudged(row)
        if why is None:
            records.extend(items_of(row))
            continue
        counts[f"n_{why}"] += len(row.criteria)
        left_out.extend({"prompt_id": row.prompt_id, "meta": row.meta, "instruction": row.instruction,
                         "reference_answer": row.reference_answer, "criteria_name": name, "rubrics": rubrics,
                         "status": why} for name, rubrics in row.criteria)
    kept = [dataclasses.replace(record, extra={**record.extra, "selected": False})
            for row in others if why_unjudged(row) is None
            for record in items_of(row) if record.id in judged]
    judge.write_jsonl([*records, *kept], path)
    if unjudged is not None:
        # Written and read (``read_unjudged``) by the journals' rules: replaced whole, one row a line, and a line is
        # what ends in "\n" alone, so an instruction holding U+2028 or U+0085 (written as it is) stays one row.
        rewrite_journal(unjudged, left_out)
    return {**counts, "n_items": len(records), "n_kept": len(kept)}


def _bad_prompt_id(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, (int, str))


def item_origin(record: Any, path: Path) -> tuple[int | str, str]:
    """The ``prompt_id`` and ``meta`` a record of ``items.jsonl`` carries (``write_items``).

    Raises:
        ValueError: one missing or of the wrong type, naming the file, the item's id and the field (a file edited by
            hand would otherwise stop in a KeyError traceback naming neither).
    """
    prompt_id, meta = record.extra.get("prompt_id"), record.extra.get("meta")
    if _bad_prompt_id(prompt_id):
        raise ValueError(f"{path}: item {record.id!r}: field 'prompt_id' must be an integer or text, got "
                         f"{prompt_id!r}; items.jsonl is written by judge-eval rank: rerun it on the folder")
    if not isinstance(meta, str):
        raise ValueError(f"{path}: item {record.id!r}: field 'meta' must be text, got {value_words(meta)}; items.jsonl is "
                         "written by judge-eval rank: rerun it on the folder")
    return prompt_id, meta


def read_unjudged(path: Path) -> list[dict[str, Any]]:
    """The rows ``write_items`` wrote to ``unjudged.jsonl``; none when the file is absent (a run written before it).

    Raises:
        ValueError: a line that is not such a row, naming the file and line.
    """
    from judge.plumbing.journal import iter_journal_lines
    from eval.ranking.matrix import UNJUDGED_STATUSES

    if not path.is_file():
        return []
    rows = []
    # The journals' strict reader: lines end at "\n" alone. str.splitlines also ended one at U+2028, U+2029 and
    # U+0085, which the writer leaves as they are in an instruction's text, cutting its row and blaming the file.
    for k, row in iter_journal_lines(path):
        fields = ("prompt_id", "meta", "instruction", "reference_answer", "criteria_name", "rubrics")
        if (not isinstance(row, dict) or any(name not in row for name in fields)
                or row.get("status") not in UNJUDGED_STATUSES or _bad_prompt_id(row["prompt_id"])
                or not all(isinstance(row[name], str) for name in fields[1:])):
            raise ValueError(f"{path}:{k}: not an unjudged item (fields {', '.join(fields)}: prompt_id an integer or "
                             f"text, the others text; and a status {' or '.join(UNJUDGED_STATUSES)})")
        rows.append(row)
    return rows


def judged_ids(predictions: Path) -> set[str]:
    """The ids that have a final row in ``predictions`` (parsed or not; a failed request is asked again)."""
    from eval.judging.predictions import REQUEST_FAILED as JUDGE_REQUEST_FAILED
    from eval.judging.predictions import iter_predictions

    if not predictions.is_file():
        return set()
    return {str(row["id"]) for row in iter_predictions(predictions) if row.get("error") != JUDGE_REQUEST_FAILED}


#: ``judge-eval run`` settings that choose which items are judged: the ranking chooses them (``--meta``, ``--limit``),
#: and an item the judge skipped would leave the matrix as if it had never been asked.
SELECTION_KEYS = ("limit", "split", "criteria")


def judge_config(config: RankConfig, items: Path, out: Path):
    """``judge-eval run``'s config for the verdict stage: ``judge_config`` YAML, then the ranking's judge flags.

    Raises:
        ConfigError: the YAML sets a key that selects items (``SELECTION_KEYS``), naming it and the file, or
            ``server_args`` for a judge given as a URL.
    """
    from eval.judging.config import RunConfig
    from judge.plumbing.config_files import resolve_config

    flags = {"data": str(items), "out": str(out), "judge": config.judge or None, "model": config.judge_model or None,
             "progress": config.progress, "connect_timeout_s": config.connect_timeout_s,
             "overwrite": config.overwrite or None}
    resolved = resolve_config(RunConfig, config.judge_config or None, flags, label="judge_config")
    # Before any candidate answer is asked: the verdict stage would refuse it only after the candidates were done.
    from eval.judging.run import refuse_server_args_for_url

    refuse_server_args_for_url(resolved)
    default = RunConfig()
    for key in SELECTION_KEYS:
        if getattr(resolved, key) != getattr(default, key):
            raise ConfigError(f"judge_config: {config.judge_config} sets {key}: {getattr(resolved, key)!r}, which "
                              "would have the judge skip items of the ranking; remove "
                              f"{key} from the file (rank's --meta and --limit select the instructions)")
    return resolved


# ---------------------------------------------------------------------------------------------- matrix


def ranked_files_key(folder: Path) -> dict[str, str | None]:
    """Per file of ``RANKED_FILES``, the SHA-256 of its bytes (None: absent, as predictions.jsonl of a run with
    nothing to judge): written into rank.json beside the matrix, so that ``compare`` refuses a folder whose files
    changed since (a rank rerun in progress or cut short) instead of comparing a matrix rank.json does not
    describe."""
    import hashlib

    key: dict[str, str | None] = {}
    for name in RANKED_FILES:
        path = Path(folder) / name
        if not path.is_file():
            key[name] = None
            continue
        with path.open("rb") as handle:
            key[name] = hashlib.file_digest(handle, "sha256").hexdigest()
    return key


def ranking_result(folder: str | Path) -> Path | None:
    """The file holding a ranking's result in ``folder``: ``RANKING_RESULT``, or ``EARLIER_RANKING_RESULT`` (a
    folder ranked before the rename, same content). When both are there, the one written last: an older checkout's
    rank rerun in the folder writes only the earlier name, and this one's rerun cut between writing its result and
    removing the earlier file leaves that file older. None: neither, so not a folder ``judge-eval rank`` finished."""
    found = [path for path in (Path(folder) / RANKING_RESULT, Path(folder) / EARLIER_RANKING_RESULT) if path.is_file()]
    if len(found) == 2:
        with contextlib.suppress(OSError):
            return max(found, key=lambda path: path.stat().st_mtime_ns)
    return found[0] if found else None


def refuse_pollux_reading(verdict_reader: str, verdict_format: str, why: str) -> None:
    """``--verdict-reader pollux`` reads only POLLUX's ``[RESULT] n [END]``: a judge writing integer verdicts
    (Pollux-4B-Judge) would leave every verdict unparsed, found out only once the matrix is read.

    Raises:
        ConfigError: naming both settings; ``why``: where the judge's format was learnt.
    """
    from judge.verdicts import VerdictFormat, VerdictReader

    if verdict_reader == VerdictReader.POLLUX and verdict_format == VerdictFormat.INTEGER:
        raise ConfigError(f"verdict_reader: pollux reads only POLLUX's '[RESULT] n [END]', but the judge's "
                          f"verdict_format is integer ({why}), so every verdict would be unparsed; use "
                          "--verdict-reader toolkit")


def selected_records(items_path: Path) -> list:
    """The records of ``items_path`` (``items.jsonl``) this run selected, as ``judge.load_records`` reads them: every
    one but another selection's items, kept marked ``selected: false`` for their verdicts (``write_items``)."""
    import judge

    return [record for record in judge.load_records(items_path) if record.extra.get("selected") is not False]


def ranked_items(items_path: Path, predictions: Path, verdict_reader: str = "toolkit",
                 unjudged: Path | None = None, records: Sequence[Any] | None = None) -> list:
    """The matrix's items: one per (instruction, criterion) of ``items.jsonl`` this run selected, failures included
    (``eval.ranking.matrix.RankedItem``); an item with no prediction is a ``no_prediction`` failure, never left out.
    Then one per row of ``unjudged`` (``unjudged.jsonl``), its status ``no_answer`` or ``empty_answer``.
    ``records``: ``selected_records(items_path)`` where the caller has read them already; read here otherwise.

    Each rubric's levels are read as POLLUX reads them (``eval.ranking.matrix.pollux_scale_levels``). The score is the
    prediction's (``verdict_reader="toolkit"``), or, with ``"pollux"``, the one POLLUX's ``metrics.py`` reads from the
    raw output (``judge.verdicts.parse_pollux_result``); a regression head's score is its own either way, and its
    item says so (``source``: the gate reads a head's continuous score snapped to a level, ``matrix.gate_score``).
    """
    from eval.ranking.items import NOT_RUN_ERRORS
    from eval.ranking.matrix import RankedItem, pollux_scale_levels
    from eval.judging.predictions import REQUEST_FAILED as JUDGE_REQUEST_FAILED
    from eval.judging.predictions import iter_predictions
    from judge.verdicts import VerdictReader, parse_pollux_result
    from judge.wire_fields import ScoreSource

    if verdict_reader not in VerdictReader.ALL:
        raise ValueError(f"verdict_reader: {verdict_reader!r} is not one of {', '.join(VerdictReader.ALL)}")
    by_id = {str(data["id"]): data for data in iter_predictions(predictions)}
    items, levels_of = [], {}
    for record in selected_records(items_path) if records is None else records:
        if record.rubrics not in levels_of:
            levels_of[record.rubrics] = pollux_scale_levels(record.rubrics)
        prompt_id, meta = item_origin(record, items_path)
        pred = by_id.get(record.id)
        if pred is None:
            items.append(RankedItem(prompt_id=prompt_id, meta=meta,
                                    criteria_name=record.criteria_name, levels=levels_of[record.rubrics], score=None,
                                    status="no_prediction"))
            continue
        score = pred.get("score") if pred.get("parse_ok") else None
        head = pred.get("score_source") == ScoreSource.REGRESSION_HEAD
        if verdict_reader == VerdictReader.POLLUX and not head:
            score = parse_pollux_result(pred.get("raw_output")).score
        if pred.get("error") == JUDGE_REQUEST_FAILED:
            status = "request_failed"
        elif score is None and pred.get("error") in NOT_RUN_ERRORS:
            status = "not_run"
        elif score is None:
            status = "unparsed"
        else:
            status = "ok"
        items.append(RankedItem(prompt_id=prompt_id, meta=meta,
                               criteria_name=record.criteria_name, levels=levels_of[record.rubrics],
                               score=float(score) if status == "ok" else None, status=status,
                               source=ScoreSource.REGRESSION_HEAD if head else ScoreSource.VERDICT))
    for row in read_unjudged(unjudged) if unjudged is not None else ():
        if row["rubrics"] not in levels_of:
            levels_of[row["rubrics"]] = pollux_scale_levels(row["rubrics"])
        items.append(RankedItem(prompt_id=row["prompt_id"], meta=row["meta"], criteria_name=row["criteria_name"],
                                levels=levels_of[row["rubrics"]], score=None, status=row["status"]))
    return items


def _summary_line(matrix, unanswered: Mapping[str, Sequence[Any]], selection: Mapping[str, Any] | None = None,
                  n_selected: int = 0) -> str:
    """The log's line: the grand mean, what it rests on (a selection of the data named as one), the verdicts not
    scored and the instructions not judged."""
    from eval.ranking.matrix import MIN_INSTRUCTIONS, UNJUDGED_STATUSES

    failed = {s: int(a[-1, -1]) for s, a in matrix.failed.items() if s not in UNJUDGED_STATUSES}
    head = (f"grand mean {matrix.grand_mean:.4f} over {int(matrix.n[-1, -1])} non-binary scores of "
            f"{int(matrix.instructions[-1, -1])} instructions" if math.isfinite(matrix.grand_mean) else "no grand mean")
    if matrix.n_instructions < MIN_INSTRUCTIONS:
        head += f" (no interval: one instruction redrawn is always itself, an interval needs {MIN_INSTRUCTIONS})"
    total = (selection or {}).get("n_data_instructions", 0)
    if n_selected < total:
        flags = ", ".join(f"--{k} {selection[k]}" for k in ("limit", "meta") if selection.get(k))
        head += f" (a selection: {n_selected} of the data's {total} instructions, {flags})"
    empty, failed_answers = unanswered["empty_answer"], unanswered["no_answer"]

    def how(setting: str) -> str:
        return "scored 0 on every criterion" if setting == "zero" else "not scored"

    return (f"{head}; verdicts not scored: {failed}; instructions not judged: {len(failed_answers)} without an "
            f"answer (request failed, or too long for the candidate; {how(matrix.no_answer)}, --no-answer "
            f"{matrix.no_answer}){_ids(failed_answers)}, "
            f"{len(empty)} with an empty answer ({how(matrix.empty_answer)}, --empty-answer {matrix.empty_answer})"
            f"{_ids(empty)}")


def _first_not_run(predictions: Path, ids: Iterable[str]) -> str:
    """The first of ``ids`` (the ranked items' own, in their order) whose row in ``predictions`` is a judgment the
    judge's server never ran (``not_run``), said with its id, error code and reason (cut at 300 characters), or ""
    when there is none. Each id's row is its last, as ``ranked_items`` reads it: the file also keeps the rows of
    items another selection ranked (``write_items``), which are none of this ranking's."""
    from eval.judging.predictions import iter_predictions
    from eval.ranking.items import NOT_RUN_ERRORS

    by_id = {str(row["id"]): row for row in iter_predictions(predictions)}
    for row in (by_id[key] for key in map(str, ids) if key in by_id):
        if row.get("error") in NOT_RUN_ERRORS and not row.get("parse_ok"):
            reason = str(row.get("reason") or "no reason recorded")
            reason = reason if len(reason) <= 300 else reason[:300] + "…"
            return f"the first judgment not run, id {row['id']}: {row['error']}: {reason}"
    return ""


def _ids(ids: Sequence[Any]) -> str:
    """The first ten of ``ids`` as a message shows them (a mark when there are more), or "" for none."""
    if not ids:
        return ""
    shown = ", ".join(map(str, ids[:10]))
    return f" [prompt_id {shown}{', …' if len(ids) > 10 else ''}]"


def unnormalisable_rubric(rows: Sequence[InstructionRow], normalize: str, source: str) -> None:
    """Refuse, before any answer is paid for, a selected rubric whose levels cannot normalise a score (one level;
    a maximum of 0 under ``max``), naming the instruction and criterion; ``--normalize none`` needs no scale.

    Raises:
        ConfigError: naming the data, the prompt_id, the criterion and the levels read.
    """
    from eval.ranking.matrix import pollux_scale_levels, unnormalisable

    raw = []  # (prompt_id, criterion) whose rubric has no levels: kept raw among normalised scores
    for row in rows:
        for name, rubrics in row.criteria:
            levels = pollux_scale_levels(rubrics)
            why = unnormalisable(levels, normalize)
            if why:
                raise ConfigError(f"data: {source}: prompt_id {row.prompt_id!r}, criterion {name!r}: its rubric "
                                  f"{why} (read as POLLUX's score_utils.py reads a rubric); fix the rubric, leave the "
                                  "instruction out (--meta, --limit), or rank with --normalize none")
            if not levels:
                raw.append((row.prompt_id, name))
    if raw and normalize != "none":
        # POLLUX's metrics.py keeps such a score raw too (module docstring), so it is kept, and said: a judge's 5 there
        # sits among 0-1 scores and can lift a cell above 1.
        names = len({name for _, name in raw})
        log.warning("data: %s: %d (instruction, criterion) items (%d %s) have a rubric with no levels read (as "
                    "POLLUX's score_utils.py reads one), so their scores enter the matrix raw, not normalised to 0-1 "
                    "like the others, as in POLLUX's metrics.py; the first: prompt_id %r, criterion %r", source,
                    len(raw), names, "criterion" if names == 1 else "criteria", *raw[0])


def special_token_items(records: Iterable[Any], judge_counts: Mapping[str, Any]) -> dict[str, int]:
    """``{"special_token_rows": n}``: the items of this selection whose text holds a special-token string, where the
    verdict stage asked a chat judge (its summary counts them, ``eval.judging.special_tokens``) and n is not 0; else
    empty. A chat server reads such a string as the judge's control token, so a candidate's answer that writes
    ``<|im_end|>\\n<|im_start|>assistant\\n...`` can end the judge's turn and write its verdict. The verdict stage
    counts every item of ``items.jsonl``, those of another selection kept for their verdicts too (``write_items``):
    they are not in the matrix, nor in this count. ``records``: ``selected_records``', those the matrix holds."""
    if not judge_counts.get("special_token_rows"):
        return {}
    from eval.judging.special_tokens import special_token_rows

    n = special_token_rows(records)["n_rows"]
    return {"special_token_rows": n} if n else {}


def unasked_judge(config: RankConfig, out: Path) -> dict[str, Any]:
    """The verdict stage's summary when no item reaches the judge: nothing asked, no server contacted. The folder's
    run.json is kept when an earlier run wrote one (its verdicts, of another selection, stay with their settings);
    otherwise, or with ``overwrite`` (which discards those verdicts, as the stage would), one is written holding the
    judge's config, so that the ranking's settings have a record to join."""
    from judge.plumbing.provenance import PROVENANCE_FILE, write_provenance

    run_config = judge_config(config, out / ITEMS, out)
    predictions = out / "predictions.jsonl"
    if config.overwrite:
        predictions.unlink(missing_ok=True)
    if config.overwrite or not (out / PROVENANCE_FILE).is_file():
        write_provenance(out, "judge-eval rank", dataclasses.asdict(run_config), n_items=0)
    # No predictions file is made: one without the verdict stage's run_key.json would have the next run, with
    # answers to judge, refuse the folder as progress of unknown settings (a missing file reads as no verdicts).
    return {"n_items": 0, "n_done_before": 0, "written": 0, "parse_failed": 0, "request_failed": 0,
            "predictions": str(predictions), "judge": run_config.name}


def rank(config: RankConfig) -> dict[str, Any]:
    """Run the three stages (each resumes) and write the matrix and its report.

    Returns:
        A summary: counts of each stage, the grand mean, and the paths written.

    Raises:
        ConfigError: a bad key, or a selected rubric that cannot normalise (``unnormalisable_rubric``);
            InstructionError (a RecordError): bad data; ValueError: nothing scored (``pollux_matrix``;
            every answer empty or failed, and those left unscored).
    """
    from eval.judging.format_choice import chosen_verdict_format
    from eval.judging.run_settings import RUN_FOLDER_JOBS, refuse_other_run_kind
    from judge.plumbing.run_folder import refuse_other_job
    from judge.verdicts import VerdictReader

    config.validate()
    out = Path(config.out)
    # Another command's folder (a MERA task's) is refused before any candidate answer is paid for: its own key
    # files are not the ranking's, so nothing else would stop its record and results being written over.
    refuse_other_job(out, RUN_FOLDER_JOBS)
    refuse_other_run_kind(out, ranking=True)
    if config.judge_config or config.verdict_reader == VerdictReader.POLLUX:
        # A missing YAML, or one that selects items, fails before the candidate is asked anything; so does a
        # format the POLLUX reader cannot read, where the settings tell it (a judge URL tells it when asked: below).
        resolved = judge_config(config, out / ITEMS, out)
        if config.verdict_reader == VerdictReader.POLLUX and resolved.judge:  # none: the judge stage says so
            refuse_pollux_reading(config.verdict_reader,
                                  *chosen_verdict_format(resolved.verdict_format, resolved.judge, resolved.model))
    data_rows = load_instructions(config.data, split=config.split or None)
    rows = data_rows
    if config.meta:
        rows = [r for r in rows if r.meta == config.meta]
        if not rows:
            raise ValueError(f"meta: no instruction has meta {config.meta!r}; the data has "
                             f"{sorted({r.meta for r in data_rows})}")
    if config.limit:
        rows = rows[: config.limit]
    if not rows:
        raise ValueError(f"data: {config.data} holds no instructions")
    say_no_meta(rows, config.data)
    unnormalisable_rubric(rows, config.normalize, str(config.data))
    # The folder is made by the candidate stage, once the data is read and checked (a bad one leaves no empty
    # folder), and taken back if the stage is refused before any answer.
    with answers_stage(rows, config, out) as answer_counts:
        return _ranking_holding(config, out, rows, data_rows, answer_counts)


def _ranking_holding(config: RankConfig, out: Path, rows: Sequence[InstructionRow],
                     data_rows: Sequence[InstructionRow], answer_counts: Mapping[str, Any]) -> dict[str, Any]:
    """``rank``'s items, verdict and matrix stages, ``out`` held (``answers_stage``): ``rows`` the selection of
    ``data_rows``, ``answer_counts`` the candidate stage's."""
    from judge.plumbing.provenance import read_provenance, update_provenance

    answers = read_answers(out / ANSWERS)
    chosen = {r.prompt_id for r in rows}
    others = [r for r in data_rows if r.prompt_id not in chosen]
    item_counts = write_items(rows, answers, out / ITEMS, others=others,
                              judged=judged_ids(out / "predictions.jsonl") if others else (), unjudged=out / UNJUDGED)
    if item_counts["n_items"]:
        from eval.judging.run import run  # the judging client: once there are items to judge

        judge_counts = run(judge_config(config, out / ITEMS, out), ranking=True)
    else:
        # Every selected answer is empty or failed (a reasoning candidate always cut inside <think>): no verdict to
        # ask for, and the matrix is the unjudged items' alone, scored by --empty-answer and --no-answer. Refusing
        # here left no rank.json, and every rerun refused again, since an empty answer is final.
        judge_counts = unasked_judge(config, out)
    # The format the judge stage resolved (a judge URL's from its server): its verdicts stay for a rerun.
    refuse_pollux_reading(config.verdict_reader, (read_provenance(out, missing_ok=True).get("config") or {}).get(
        "verdict_format"), "recorded in run.json by the judge stage")

    # The matrix and its page (numpy, the scoring's compare tables) only once there are verdicts to put in them:
    # a refused config or data does not import them.
    from eval.ranking.items import data_binary_criteria, is_scored
    from eval.ranking.matrix import UNJUDGED_STATUSES, pollux_matrix
    from eval.ranking.report import write_ranking_page

    records = selected_records(out / ITEMS)  # read once: the matrix's items and the special-token count
    items = ranked_items(out / ITEMS, out / "predictions.jsonl", config.verdict_reader, unjudged=out / UNJUDGED,
                         records=records)
    # The binary criteria of the whole data, not of this selection: metrics.py collects them from every row, and a
    # --limit that leaves out an instruction's binary rubric would otherwise turn a scale-less rubric's gate off
    # without a word.
    binary = data_binary_criteria((r.meta, name, rubrics) for r in data_rows for name, rubrics in r.criteria)
    try:
        matrix = pollux_matrix(items, normalize=config.normalize, n_boot=config.n_boot, seed=config.seed,
                               empty_answer=config.empty_answer, no_answer=config.no_answer, binary_criteria=binary)
    except ValueError as err:
        if any(is_scored(it, config.empty_answer, config.no_answer) for it in items) or \
                not any(it.status == "not_run" for it in items):
            raise
        # Counts alone leave the reader to open predictions.jsonl: the first such row's words say what to change.
        # ranked_items gives one item per selected record, in order, before the unjudged ones.
        not_run = [record.id for record, item in zip(records, items) if item.status == "not_run"]
        raise ValueError(f"{err}; {_first_not_run(out / 'predictions.jsonl', not_run)}") from None
    matrix.write_csv(out / MATRIX)
    write_atomically(out / "cells.csv", matrix.cells_csv().encode("utf-8"))
    answered = [a for r in rows if (a := answers.get(r.prompt_id)) is not None and a.answers(r)]
    n_too_long = sum(1 for r in rows if (a := answers.get(r.prompt_id)) is not None and a.final(r) and not a.answers(r))
    unanswered = {status: list(dict.fromkeys(it.prompt_id for it in items if it.status == status))
                  for status in UNJUDGED_STATUSES}
    counts = {"n_instructions": len(rows), "n_answer_failed": len(rows) - len(answered) - n_too_long,
              "n_answer_too_long": n_too_long,
              "n_answer_empty": len(unanswered["empty_answer"]),
              "n_cut_in_thinking": sum(1 for a in answered if a.cut_in_thinking),
              "n_finish_length": sum(1 for a in answered if a.finish_reason == "length"), **item_counts,
              "n_no_prediction": int(matrix.failed["no_prediction"][-1, -1]),
              **special_token_items(records, judge_counts)}
    # What the selection cut: a matrix of a --limit or --meta subset is not the data set's, and its page says so.
    selection = {"n_data_instructions": len(data_rows), "limit": config.limit, "meta": config.meta}
    result = {"model": answer_counts["model"], "judge": judge_counts.get("judge", ""), "data": str(config.data),
              "selection": selection, "verdict_reader": config.verdict_reader, "counts": counts,
              "answers": answer_counts, "verdicts": judge_counts, "matrix": matrix.to_json(),
              "content_key": ranked_files_key(out)}
    # ``compare`` and the ranking page read it back: replaced whole, never left cut by a kill.
    write_atomically(out / RANKING_RESULT,
                     (json.dumps(result, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode("utf-8"))
    # A folder ranked before the rename keeps its old result otherwise: readers skip it, a script reading it by name
    # would get the earlier matrix as if it were this run's.
    (out / EARLIER_RANKING_RESULT).unlink(missing_ok=True)
    page = write_ranking_page(result, out)
    # run.json is the verdict stage's (written by eval.judging.run.run); the ranking's settings join it.
    # The section's name before the result was rank.json: left, it would describe an earlier ranking of the folder.
    update_provenance(out, replacing=("bench",), rank={"config": dataclasses.asdict(config), "model": result["model"]})
    log.info("rank: %s", _summary_line(matrix, unanswered, selection, len(rows)))
    # A verdict the judge never wrote fails the run as a failed request does (exit 3): the next run asks for it.
    return {"model": result["model"], "judge": result["judge"], "grand_mean": result["matrix"]["grand_mean"],
            **counts, "request_failed": judge_counts.get("request_failed", 0) + counts["n_no_prediction"],
            "matrix": str(out / MATRIX), "report": str(page)}

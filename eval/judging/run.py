"""Running a judge over POLLUX-format records: the ``judge-eval run`` step.

A judge is reached over HTTP in every case:

- **a URL** of judge-serve, of vLLM's OpenAI server, or of any OpenAI-compatible API. judge-serve is recognised
  by its ``/v1/judge`` route and gets all criteria of one (instruction, answer) in one request (its response
  carries regression heads' real-valued scores); anything else gets one chat completion per item.
- **an API judge** (GPT-4o, DeepSeek-R1): the base URL and key come from the environment variables the config
  names, and ``prompt: en`` selects the English task-description prompt.
- **a local checkpoint folder**: ``judge-serve`` is started for it as a child process when installed, else vLLM's
  OpenAI server (``python -m vllm.entrypoints.openai.api_server``); it is stopped when the run ends.

Output, in ``--out``: ``predictions.jsonl`` (one ``eval.judging.predictions.PredictionRow`` per item; ``in_scale`` is false
for a number outside the rubric's scale, which is scored as the paper does; ``regression_score`` is a regression
head's raw value; the latency is that of the request that produced the row, shared by the criteria of one
``/v1/judge`` request), appended as answers arrive (``judge.plumbing.journal``: one fsync per request), and ``run.json``
(resolved config, git revision, package versions, prompt version, the data file's SHA-256). A rerun resumes: rows
already written are kept, a line cut by a kill is dropped, items whose *request* failed are retried, so are items
edited in place (a row's ``content_key``), and the file ends with exactly one row per item; a judge now serving
another model than run.json records is refused (``eval.judging.format_choice.held_model``), so is one whose model
entry names other weights (``held_root``) or whose judge-serve fingerprints other weights files (``held_fingerprint``:
a judge retrained into the same folder). A rerun with nothing left to ask (a requeued shard already whole) asks no
server and keeps in run.json what the folder's server said (``backend``, ``server_limits``). A verdict that does not
parse is a final answer (``parse_ok: false`` with the parser's error); it is never a score.

Before any item is sent, the server's model list is asked (``eval.judging.contact.first_contact``: retried while the server
is unreachable or loading, up to ``connect_timeout_s``; a wrong key, URL or path is one sentence, ``EndpointUnusable``,
exit code 4), ``max_tokens`` is fitted to what it advertises (``eval.judging.contact.fit_max_tokens``, with a printed note),
and a run whose first requests are all refused alike stops with the server's words (``eval.judging.backends.FirstRefusals``)
instead of writing a failed row per item, as does one whose requests keep failing after their retries, or keep
being answered with an HTTP 200 that is no chat completion or ``/v1/judge`` response
(``eval.judging.backends.MalformedAnswer``) (``judge.plumbing.failing_streak``, exit code 4; the items not sent have
no row).
Keys: ``judge.plumbing.api_keys.KEY_RULE``.
Paths in ``run.json`` are absolute (``resolved_paths``), so ``judge-eval score`` finds the data from any directory.

The judge's verdict format (``judge.VerdictFormat``: ``tagged`` or ``integer``, ``Pollux-4B-Judge``) is the one a
judge-serve names in its ``GET /v1/models`` entry (a ``verdict_format`` set otherwise is refused before any item), else
``verdict_format`` when set, else it follows from the checkpoint or the model id (``eval.judging.format_choice``);
run.json records it, a resume keeps it, and a ``/v1/judge`` answer in another format stops the run, as do first chat
answers that read only in the other format than the one guessed from a URL's model id (``FormatWatch``, pointwise
and pairwise alike), or, pointwise, in neither and with no verdict's shape (a chat model that is no judge); a resume
counts the folder's rows first, pointwise and pairwise. The Russian prompt's template is the one ``prompt_version``
names when set (a judge-serve naming another is refused), else follows from the format and the checkpoint's export
manifest (``resolve_prompt_template``: the released Pollux-4B-Judge is asked with its own), or is the one a
judge-serve names; run.json records it and why. Data whose rows carry ``answer_1``/``answer_2`` is judged pairwise
(``eval.pairwise.judging``: every pair in both orders by default, into ``pairwise_predictions.jsonl``).

Why one module of ~749 lines: ``_run_holding`` resolves one run's judge, budget, verdict format and template against
the folder's earlier rows in an order where each check reads the ones before it, and hands them to the runner beside
it; what stands alone already lives apart (``contact``, ``format_choice``, ``backends``, ``run_settings``; the streak
breaker is ``judge.plumbing.failing_streak``, which the synthetic-data stages share).
"""


from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.judging.config import RunConfig
from judge.plumbing.failing_streak import FailingStreak, stop_after, streak_failure
from eval.judging.backends import (N_FIRST_REFUSALS, ChatBackend, FirstRefusals, JudgeBackend, JudgeServeBackend,
                                   NoRoom, Refused, ServerChanged, failed_outcome, failure_reason, is_scored_cut,
                                   too_long_outcome, unasked_first)
from eval.judging.contact import base_of, detect_backend, first_contact, fit_max_tokens, root_of, weights_fingerprint
from eval.judging.format_choice import (FormatWatch, checkpoint_folder, earlier_max_tokens, earlier_model,
                                        earlier_prompt_version, earlier_record, held_fingerprint, held_model, held_root,
                                        judged_export, resolve_prompt_template, resolve_verdict_format,
                                        run_verdict_format)
from eval.judging.local_server import local_server, served_name, starts_judge_serve
from eval.judging.special_tokens import special_token_rows, special_token_warning
from eval.judging.predictions import (REQUEST_FAILED, PredictionRow, iter_predictions, log_failed_requests,
                                      record_content_key, resume_predictions)
from eval.judging.run_settings import (PROGRESS_FILES, RUN_FOLDER_JOBS, clear_score_outputs, data_sha256, earlier_run_keys,
                                      refuse_other_run_kind, resolved_paths, run_key)
from eval.pairwise.judging import (ORDERS, PAIRWISE_PREDICTIONS, is_pairwise_data, iter_pairwise_rows, judge_pairs,
                                   pending_judgments, selected_pairs)
from judge.plumbing.api_keys import client_api_key
from judge.checkpoints import export_training_record, export_weights_fingerprint, is_hub_id
from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.config_files import ConfigError
from judge.plumbing.journal import JournalWriter
from judge.plumbing.json_reading import counted
from judge.plumbing.message_content import without_lone_surrogates
from judge.plumbing.provenance import redact, write_provenance
from judge.plumbing.retry import EndpointUnusable, RetryPolicy
from judge.plumbing.run_folder import claim_run_folder, hold_run_folder
from judge.sample_data import data_name
from judge.verdicts import VerdictError
from judge.wire import ModelLimits

__all__ = ["RunConfig", "ConfigError", "EndpointUnusable", "run", "resolved_paths", "N_FIRST_REFUSALS",
           "not_a_model_ref", "refuse_unreachable_judge",
           "refuse_server_args_for_url",
           "resolve_verdict_format", "resolve_prompt_template"]  # the last two: eval.judging.format_choice's

log = logging.getLogger("judge_eval.run")


# ---------------------------------------------------------------------------------------------- the runner


async def _judge_all(backend: JudgeBackend, records: Sequence, config: RunConfig, path: Path,
                     content_keys: Mapping[str, str], watch: FormatWatch | None = None,
                     failed_before: Collection[str] = ()) -> dict[str, int]:
    """Send every batch with ``concurrency`` workers, append one row per record as its batch finishes, each with its
    record's ``record_content_key`` from ``content_keys`` (by id: computed once per record, for the resume too);
    stop when ``watch`` finds the guessed verdict format misread (``ConfigError``). ``failed_before``: the ids an
    earlier run wrote failed rows for, which the breaker does not count (``FailingStreak``)."""
    import judge
    from tqdm import tqdm

    batches = backend.batches(records)
    queue: asyncio.Queue = asyncio.Queue()
    for batch in batches:  # in prefix order: workers take them in that order
        queue.put_nowait(batch)
    counts = {"written": 0, "parse_failed": 0, "request_failed": 0, "cut_scored": 0}
    first_failed: list[PredictionRow] = []  # said at the end: the reasons are otherwise only in the file's rows
    bar = tqdm(total=len(records), desc=f"judging ({backend.name})", unit="item", disable=not config.progress)
    journal = JournalWriter(path)
    policy = retry_policy(config)
    # Only requests never asked before can tell a refusing endpoint from refused items: a batch holding an item
    # refused before is that item's refusal again, written as a failed row, and never held (FirstRefusals.offer).
    def asked_before(batch: Sequence) -> bool:
        return any(record.id in failed_before for record in batch)

    first = FirstRefusals.for_run(sum(not asked_before(batch) for batch in batches))
    changed: list[ServerChanged] = []  # a server answering in another verdict format: the run stops at the first
    failing = FailingStreak(stop_after(config.concurrency))  # an endpoint failing every retry: stopped, not waited out

    def write(batch: Sequence, outcomes: list[dict[str, Any]], latency: float) -> None:
        # Every outcome's texts were read where it was made (``_attempted``, ``if_stopped`` below), once.
        rows = [PredictionRow(id=record.id, judge=backend.name, **outcome, latency_s=round(latency, 4),
                              content_key=content_keys[record.id]) for record, outcome in zip(batch, outcomes)]
        journal.append(*(row.to_json() for row in rows))  # one fsync per batch; a kill's torn line is dropped on resume
        for row in rows:
            counts["written"] += 1
            if row.error == REQUEST_FAILED:
                counts["request_failed"] += 1
                first_failed[:] = first_failed or [row]
            elif not row.parse_ok:
                counts["parse_failed"] += 1
            counts["cut_scored"] += is_scored_cut(row)
        bar.update(len(batch))
        if watch is not None:
            watch.offer(rows)

    async def worker() -> None:
        while first.stopped is None and failing.stopped is None and not changed and not (watch and watch.misread):
            try:
                batch = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            start = time.perf_counter()
            try:
                outcomes, refusal, failure = await _attempted(backend, batch, policy)
            except ServerChanged as err:
                # Stopped, not counted as this batch's failed rows: every later answer would be in the same other
                # format, and rows read in it would be scored as the format run.json records. The batch is unwritten:
                # a rerun asks it again, once its resume checks have compared the server with the folder.
                changed.append(err)
                return
            if failure is None or not asked_before(batch):
                failing.offer(failure, judge.prefix_key(batch[0]))  # an item failed before: neither counted nor a reset
            latency = time.perf_counter() - start
            # A prompt too long for the judge's window is the item's own final row, never held (TooLong); one that
            # fits but leaves no room for max_tokens is held as the refusal it is, a failed row if the run stops at
            # it (NoRoom), else its final row.
            too_long = refusal is None and all(o.get("error") == VerdictError.CONTEXT_LENGTH_EXCEEDED for o in outcomes)
            if_stopped = ((batch, [_texts_read(failed_outcome(REQUEST_FAILED, str(refusal))) for _ in batch], latency)
                          if isinstance(refusal, NoRoom) else None)
            for held in first.offer(refusal, (batch, outcomes, latency), asked_before=asked_before(batch),
                                    if_stopped=if_stopped, aside=too_long):
                write(*held)

    try:
        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, max(len(batches), 1)))))
    finally:
        bar.close()
        await backend.aclose()
    # Refusals held while every later batch was too long for the window or asked before (neither ends the holding)
    # are still held when the run ends without the stop: written now, as any refusal the stop did not fire at.
    for held in first.release():
        write(*held)
    if watch is not None and watch.misread:  # the rows written are kept: the folder is started again anyway
        raise ConfigError(watch.misread)
    if changed:
        raise EndpointUnusable(changed[0].stopped(len(batches) - queue.qsize(), len(batches), counts["written"]))
    if first.stopped is not None:  # the refused items as counted failures, asked again after the others
        raise first.keep_held(write, f"the judge ({backend.name})", len(batches) - queue.qsize(), len(batches))
    if failing.stopped is not None:  # its failed rows are written: a rerun asks them after the items never sent
        raise failing.error(f"the judge ({backend.name})", policy.max_retries, len(batches) - queue.qsize(), len(batches))
    if first_failed:
        row = first_failed[0]
        n = counts["request_failed"]
        # the id as a literal, as score says one: text from the data, a newline or an escape in it stays inert
        log_failed_requests(log, n, f"item {row.id!r}", row.reason, path)
    return counts


def retry_policy(config: RunConfig) -> RetryPolicy:
    """The run's ``judge.plumbing.retry`` policy (``max_retries``, ``backoff_s``; base delay capped at 60 s; one
    request's waits together bounded by ``retry_wait_budget_s``), pointwise and pairwise."""
    return RetryPolicy(max_retries=config.max_retries, backoff_s=config.backoff_s, max_backoff_s=60.0,
                       wait_budget_s=config.retry_wait_budget_s, bound_flag="--retry-wait-budget-s")


def probe_policy(config: RunConfig) -> RetryPolicy:
    """The backend probe's policy (``eval.judging.contact.PROBE_POLICY``, read when asked), its waits bounded by
    ``retry_wait_budget_s`` as every request of the run is: unbounded, a server answering the probe 503 with a long
    ``Retry-After`` held the run four waits of up to 600 s before it asked anything."""
    from eval.judging import contact

    return dataclasses.replace(contact.PROBE_POLICY, wait_budget_s=config.retry_wait_budget_s,
                               bound_flag="--retry-wait-budget-s")


def first_contact_policy(config: Any) -> RetryPolicy:
    """The first contact's policy: the run's backoff, waits of at most 10 s, bounded by ``connect_timeout_s``."""
    return RetryPolicy(max_retries=10**6, backoff_s=config.backoff_s, max_backoff_s=10.0,
                       max_wait_s=config.connect_timeout_s)


async def _with_retries(backend: JudgeBackend, batch: Sequence, policy: RetryPolicy) -> list[dict[str, Any]]:
    """The backend's outcomes, retrying transient failures by ``policy`` (``Retry-After`` honoured); a batch that
    still fails (or is refused) gets ``request_failed`` rows, retried by the next run."""
    return (await _judged(backend, batch, policy))[0]


def _english_prompt_on_judge_serve(judge_ref: str) -> ConfigError:
    """``--prompt en`` against a judge-serve's /v1/judge, which renders the Russian POLLUX prompt itself: the English
    one would be recorded in run.json as what the verdicts were asked with, and never sent."""
    return ConfigError(f"prompt: en, but {judge_ref} is a judge-serve, whose /v1/judge renders the Russian POLLUX "
                       "prompt itself: the English prompt would be recorded in run.json, not sent; send it through "
                       "its chat route with --backend chat, or drop --prompt en")


def _hold_local_weights(out: Path, n_written: int, judge_ref: str, folder: Path | None) -> None:
    """``held_fingerprint`` for a judge-train export on this machine, before any server starts: the weights
    fingerprint judge-serve will give for it (``judge.checkpoints.export_weights_fingerprint``; the one recorded for
    an export served with vLLM, ``_vllm_export_fingerprint``) is known from the folder alone. Checked here, a judge
    retrained into the same folder and rerun into the same --out is refused before a server starts for it, and
    also when every item is already judged and no server would start: otherwise the old verdicts would stand as
    the new judge's, silently.

    ``folder``: the export, ``_served_export``'s.

    Raises:
        ConfigError: the verdicts already in ``out`` were asked of other weights (``held_fingerprint``'s message).
    """
    if not n_written or folder is None:
        return  # nothing to hold; not an export, or served with a generating model whose fingerprint its check holds
    held_fingerprint(out, n_written, export_weights_fingerprint(folder), judge_ref, asking=True, held_by="holds",
                     export=folder)


def _served_export(judge_ref: str, config: RunConfig) -> Path | None:
    """The judge-train export on this machine whose weights the judge's fingerprint is of (``judge_ref`` a folder
    with its manifest, served alone), by which a fingerprint recorded by either formula is held
    (``eval.judging.format_choice.same_weights``), by ``eval.judging.format_choice.judged_export``'s rule (a relative
    ``judge_ref`` read against this launch's working directory); None for any other judge, and for judge-serve given
    a generating model of its own (any ``--generator-model`` it may be given), which fingerprints that model too."""
    return judged_export(str(Path(judge_ref).absolute()), config.server_args, starts_judge_serve(config))


def _judge_training(judge_ref: str) -> dict[str, Any]:
    """``{"judge_training": ...}``, run.json's record of the training a judge-train export on this machine came from
    (``judge.checkpoints.export_training_record``); {} for any other judge (a URL, a hub id, a released folder)."""
    record = export_training_record(judge_ref) if judge_ref and Path(judge_ref).is_dir() else None
    return {"judge_training": record} if record else {}


def _vllm_export_fingerprint(export: Path | None, config: RunConfig) -> str | None:
    """The weights fingerprint of a judge-train export that judge-eval serves with vLLM's own server, read from its
    folder (``judge.checkpoints.export_weights_fingerprint``, what judge-serve gives for it): vLLM's model entry gives
    none, so run.json records this one, which a resume checks an export retrained in place against. ``export``: the
    served export, ``_served_export``'s, found once per launch. None for anything else (judge-serve says its own; a
    URL's weights are not on this machine)."""
    return None if export is None or starts_judge_serve(config) else export_weights_fingerprint(export)


async def _judged(backend: JudgeBackend, batch: Sequence, policy: RetryPolicy) -> tuple[list, Refused | None]:
    """``_with_retries``'s outcomes and the server's refusal, if any (``FirstRefusals`` reads it)."""
    return (await _attempted(backend, batch, policy))[:2]


def _texts_read(outcome: dict[str, Any]) -> dict[str, Any]:
    """An outcome's texts (a judge's answer, its feedback, a server's error words a reason quotes) with each lone
    surrogate read as U+FFFD, as vLLM writes bytes that are no text: kept, the row was one no reader of predictions
    takes (``PredictionRow.from_json``), and a resumed run or ``score`` stopped on the whole file."""
    return {key: without_lone_surrogates(value) if isinstance(value, str) else value for key, value in outcome.items()}


async def _attempted(backend: JudgeBackend, batch: Sequence, policy: RetryPolicy) -> tuple[list, Refused | None, Any]:
    """``_judged``'s, and the error of a request that still failed transiently after its retries, or was answered with
    a ``MalformedAnswer`` (``FailingStreak`` counts both). Every outcome returned has its texts read
    (``_texts_read``), as ``_judge_all``'s ``write`` takes them."""
    refusal = failure = None
    try:
        outcomes = [_texts_read(outcome) for outcome in await policy.acall(lambda: backend.judge(batch))]
        for record, outcome in zip(batch, outcomes):
            # Checked as it will be written (``write``), as every reader checks a row: a value no reader takes (a NaN
            # score: Python's json writes and reads one) is this request's failure, not a row that makes the whole
            # file unreadable to resume and score.
            PredictionRow.from_json({"id": record.id, **outcome}, where=f"the judge's answer for {record.id}")
        return outcomes, None, None
    except ServerChanged:
        raise  # the server's, not this batch's: the runner stops (_judge_all)
    except Refused as err:
        if len(batch) > 1 and err.status in (400, 413, 422):
            # A server refuses a whole /v1/judge request for one criterion it cannot take (a rubric without a
            # readable scale), or its body past max_body_bytes (413) where each criterion's may fit: asked alone, only
            # that record fails, where its batchmates failed with it on every rerun.
            # A wrong key (401), a forbidden model (403) or a missing route (404) is no criterion's fault: not split.
            parts = [await _attempted(backend, [record], policy) for record in batch]
            # The batch's refusal, and its transient failure, only when every record's request had one.
            shared = [None if None in column else column[0] for column in ([p[1] for p in parts], [p[2] for p in parts])]
            return [outcome for outcomes, _, _ in parts for outcome in outcomes], *shared
        if isinstance(err, NoRoom):  # its final rows, unless the first refusals' stop fires at it (_judge_all)
            return [_texts_read(too_long_outcome(err.final_reason)) for _ in batch], err, None
        reason, refusal = str(err), err
        # A 200 that is no answer (MalformedAnswer) says nothing of the items: an endpoint answering every request so
        # is as unusable as one failing every retry, and each of its failed rows alone read as one item's failure.
        failure = streak_failure(err, policy)
    except Exception as err:  # noqa: BLE001 - transient ones were retried; every failure becomes a counted row
        reason = failure_reason(err)
        failure = streak_failure(err, policy)
    return [_texts_read(failed_outcome(REQUEST_FAILED, reason)) for _ in batch], refusal, failure


def _select(records: list, config: RunConfig) -> list:
    import judge
    from eval.judging.run_settings import selected_positions

    splits = [""] * len(records)  # --split all reads no record's split
    if config.split != "all":
        spec = judge.load_split_spec()
        # An item whose task type the taxonomy does not know is in neither test, unless scored on a held-out
        # criterion (Zero-Shot, so it runs under --split zero_shot): it runs only under --split all (score then
        # reports it as the "unknown" split), never silently as Standard, and never aborts the run.
        splits = [judge.split_of(r, spec, allow_unknown=True) for r in records]
        if records and config.split not in splits:  # said, not refused: a Slurm shard of one split's rows has none
            log.warning("split: none of the %d records of %s is in the %s test (judge.split_of): nothing to judge; "
                        "--split all judges them", len(records), config.data or "the bundled sample", config.split)
    return [records[k] for k in selected_positions(splits, config.split, config.limit)]


def _expand_auto(config: RunConfig, out: Path) -> tuple[Path, dict[str, int], int]:
    """``--criteria auto``: ``out/auto_items.jsonl`` (one item per chosen criterion) and ``out/task_choices.jsonl``;
    returns the items' path, the rows counted by the level their criteria were chosen at (``choice_levels``) and how
    many rows were classified as a Zero-Shot task (``zero_shot_choices``; before ``--split`` and ``--limit``)."""
    import judge
    from judge.criteria_auto import classifier_from_settings, expand_file
    from judge.criteria_auto.expansion import choice_levels, zero_shot_choices

    items, recorded = out / "auto_items.jsonl", out / "task_choices.jsonl"
    resume = items.is_file() and recorded.is_file()
    if resume:
        # A resumed run keeps the choices it started with (an llm classifier asked again could choose differently and
        # orphan the predictions already written), but reads the data every time: a row whose id and instruction
        # are unchanged keeps its recorded choice when the classifier asked now made it (classifier_identity: the
        # same artefact or model, threshold and settings that move a choice; an llm endpoint's address is none); a
        # failed choice, a row added or edited since, a choice of another classifier and one recorded without
        # either key are classified again (expand_file(resume=True)).
        log.info("criteria auto: resuming from %s (delete it to classify every row again)", recorded)
    classifier = classifier_from_settings(config.criteria_classifier, config.criteria_classifier_path,
                                          config.criteria_classifier_model, config.criteria_threshold,
                                          config.criteria_classifier_api_key_env)
    items = expand_file(config.data or judge.sample_data_path(), out, classifier, resume=resume)
    # expand_file returns only the items' path: the choices it wrote are counted from its file, once.
    return items, choice_levels(recorded), zero_shot_choices(recorded)


def run(config: RunConfig, *, max_tokens_chosen: bool = True, ranking: bool = False) -> dict[str, Any]:
    """Judge every selected record that has no final prediction yet.

    Args:
        config: the resolved configuration.
        max_tokens_chosen: whether the user chose ``max_tokens`` (the CLI knows; a caller passing a config has).
            When not, a judge-serve judge trained by GRPO is asked for the completion length it was trained with,
            where that is more (``trained_max_completion_length`` in its ``GET /v1/models`` entry).
        ranking: the caller is `judge-eval rank`'s verdict stage, judging in the ranking's own folder
            (``refuse_other_run_kind``), which it may hold already: the run then goes on under the ranking's hold
            (``hold_run_folder``'s ``reentrant``) instead of being refused as another writer.

    With ``overwrite``, the predictions, criteria auto's items and the scores ``judge-eval score`` wrote into ``out``
    (``eval.judging.run_settings.SCORE_OUTPUTS``, each named in the log) are deleted once the folder is claimed,
    before the judge is reached: a launch whose judge then cannot be reached leaves no scores of the discarded run.
    The config is validated and a judge no run could reach refused (``refuse_unreachable_judge``) here, once, for
    every caller; it is logged (redacted) only once they pass.

    Returns:
        A summary: ``n_items``, ``n_done_before`` (resumed), ``written``, ``parse_failed``, ``request_failed``,
        ``predictions`` (path) and ``judge`` (label); with ``cut_rationale`` ``score``, ``cut_scored``: the rows
        written now that hold a regression head's score on a rationale ``max_tokens`` cut; on the chat route,
        ``special_token_rows``: the rows whose text holds a special-token string (``eval.judging.special_tokens``),
        where there are any.

    Raises:
        ConfigError: a bad key; RecordError: bad data; EndpointUnusable: a local server that does not start;
        RunFolderBusy: another process writes to ``out``; ResumeMismatch: ``out`` holds progress made with other
        settings (``run_key``) and ``overwrite`` is off.
    """
    # Before the run folder, its lock and key exist; the config is logged after, so that a refusal is its one line,
    # not one after a ~1.4 KB config dump.
    config.validate()
    refuse_unreachable_judge(config)
    refuse_server_args_for_url(config)
    log.info("run config: %s", json.dumps(redact(dataclasses.asdict(config)), ensure_ascii=False))
    # The data too: a bad row refused after the folder was claimed left run.lock and run_key.json behind, and the
    # run with the row fixed in a new file was then refused as a resume under another `data`.
    data = None if config.criteria == "auto" else _read_data(config)
    # One writer per folder; a refusal before any verdict (another kind's folder, other settings, a key unset or
    # refused) leaves the folder as it found it, not holding a lock and a key of settings nothing was asked with.
    with hold_run_folder(config.out, "judge-eval run", progress_files=PROGRESS_FILES, reentrant=ranking) as out:
        return _run_holding(config, out, max_tokens_chosen, data, ranking)


def _read_data(config: RunConfig) -> tuple[bool, list]:
    """(pairwise, the selected records or pairs) of ``config.data`` (the bundled sample when unset)."""
    import judge

    if is_pairwise_data(config.data):  # rows with answer_1/answer_2: eval.pairwise.judging
        return True, selected_pairs(config)
    try:
        records = judge.load_records(config.data or judge.sample_data_path())
    except judge.RecordError as err:
        if config.criteria == "auto" or (err.field, err.message) != ("criteria_name", "is missing"):
            raise
        # Most often an (instruction, answer) pair meant for criteria: auto, run without it: the way there, said.
        raise judge.RecordError(err.source, err.row, err.field, f"{err.message} (a row without a criterion is an "
                                "(instruction, answer) pair to judge with --criteria auto, which chooses its "
                                "criteria)") from None
    if not records:  # `[]` or `{}`: a run that judged nothing and exited 0 read as a finished one
        raise ValueError(f"--data {config.data}: no records; nothing to judge")
    return False, _select(records, config)


def refuse_unreachable_judge(config: RunConfig) -> None:
    """ConfigError for a ``judge`` no run could reach: not a URL, a folder or a hub id; or an unset ``base_url_env``."""
    judge_ref = config.judge
    if not judge_ref:
        if not os.environ.get(config.base_url_env, ""):
            raise ConfigError(f"base_url_env: the environment variable {config.base_url_env} is not set")
        return
    if not (judge_ref.startswith(("http://", "https://")) or Path(judge_ref).is_dir() or is_hub_id(judge_ref)):
        raise not_a_model_ref(judge_ref, "judge")


def refuse_server_args_for_url(config: RunConfig) -> None:
    """ConfigError for ``server_args`` beside a judge reached by URL (``judge``, or the URL ``base_url_env`` holds):
    no server is started for it, and its flags were dropped without a word. Refused before the run folder is
    claimed, as judge-train refuses a setting its recipe does not apply."""
    judge_ref = config.judge or os.environ.get(config.base_url_env, "")
    if config.server_args and judge_ref.startswith(("http://", "https://")):
        raise ConfigError("server_args: does not apply to a judge given as a URL (judge-eval starts no server for it; "
                          "server_args are the flags of the server it starts for a checkpoint folder or hub id): "
                          "drop --server-args, or server_args from the config file")


def not_a_model_ref(ref: str, field: str) -> ConfigError:
    """The error for a ``--judge`` / ``--model`` that is no http(s) URL, no folder and not spelled as a hub id, in
    judge-serve's words (``judge.checkpoints.resolve_checkpoint``'s, which such a ref stops in before any hub call):
    most often a checkpoint path mistyped or not there yet."""
    import re

    from judge.checkpoints import CheckpointNotFound, checkpoint_file_hint, resolve_checkpoint

    # A server's address typed as the console shows it (host:port, maybe a path): the scheme is what is missing.
    address = re.fullmatch(r"(localhost|[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})(/\S*)?", ref)
    if address and not Path(ref).exists():
        host, port, path = address.groups()
        return ConfigError(f"{field}: {ref}: no such folder; a server's address is a URL with its scheme: "
                           f"--{field.replace('_', '-')} http://{host}:{port}{path or '/v1'}")
    if Path(ref).exists():  # a file: no checkpoint is one file; a checkpoint's own file names its folder
        return ConfigError(f"{field}: {ref}: a file, not a checkpoint folder"
                           f"{checkpoint_file_hint(ref) or ' (nor a hub id or an http(s) URL)'}")
    try:
        resolve_checkpoint(ref, allow_download=False)
    except CheckpointNotFound as err:
        return ConfigError(f"{field}: {err} (nor an http(s) URL)")
    return ConfigError(f"{field}: {ref}: no such folder, and not an http(s) URL")


def _run_holding(config: RunConfig, out: Path, max_tokens_chosen: bool = True,
                 data: tuple[bool, list] | None = None, ranking: bool = False) -> dict[str, Any]:
    import judge

    # The run resolves data, name and model into its own copy: the caller's config is left as it was given. Paths
    # are made absolute, so run.json names files a later `score` (or a Slurm job) finds from any directory.
    config = dataclasses.replace(config, extra_body=dict(config.extra_body), server_args=list(config.server_args),
                                 server_env=dict(config.server_env), **resolved_paths(config))
    if not ranking:
        refuse_other_run_kind(out, ranking=False)
    claim_run_folder(out, run_key(config), PROGRESS_FILES, overwrite=config.overwrite,
                     jobs=RUN_FOLDER_JOBS if ranking else ("judge-eval run",), earlier_keys=earlier_run_keys(config))
    if config.overwrite:  # with the predictions: their scores, never left to stand for the next run's
        clear_score_outputs(out)
    # How sure the classifier was of each auto row's task (leaf, task type, fallback, failed): a run whose rows
    # fell back to the general criteria says so in its record, not only row by row in task_choices.jsonl.
    levels = {}
    if config.criteria == "auto":
        source = data_name(config.data)
        expanded, choice_levels, n_zero_shot = _expand_auto(config, out)
        config.data = str(expanded)  # run.json then names the expanded items, as `score` reads them
        # Apart from the levels (they add up to the rows): rows judged on criteria a judge trained by default on
        # the Standard split never saw. The rows given are named beside them: config.data names the items only.
        levels = {"task_choice_levels": choice_levels, "task_choice_zero_shot": n_zero_shot,
                  "source_data": source, "source_data_sha256": data_sha256(source)}
    if config.criteria == "auto" and config.limit:
        # --limit counts items, and an auto row expands to one per chosen criterion: where it cuts the items (those
        # of --split, as loaded: a repeated row once), said, with what the choice counts cover (every row expanded)
        pairwise, records = _read_data(dataclasses.replace(config, limit=0))
        n_items, records = len(records), records[: config.limit]
        if len(records) < n_items:
            log.warning("criteria auto: --limit %d judges the first %d of the %d items%s (an auto row gives one per "
                        "chosen criterion), not %d rows; task_choice_levels and the log's choice counts cover the %s "
                        "expanded", config.limit, len(records), n_items,
                        "" if config.split == "all" else f" in the {config.split} test", config.limit,
                        counted(sum(choice_levels.values()), "row"))
    else:
        pairwise, records = data if data is not None else _read_data(config)
    if pairwise and config.prompt_version != "auto":  # names a pointwise template: never silently left unused
        raise ConfigError(f"prompt_version: {config.prompt_version} names a pointwise template; {config.data} holds "
                          "pairwise rows, asked with the pairwise one: drop --prompt-version")
    if pairwise and config.cut_rationale != "fail":  # no regression head's score to read: never silently unused
        raise ConfigError(f"cut_rationale: {config.cut_rationale} reads a regression judge's pointwise score; "
                          f"{config.data} holds pairwise rows, which it would not change: drop --cut-rationale")
    if pairwise:  # every pair in both orders by default
        predictions = out / PAIRWISE_PREDICTIONS
        orders = ORDERS if config.pairwise_orders == "both" else ORDERS[:1]
        todo, n_done, pair_judges = pending_judgments(records, predictions, orders)
        done: Any = ()  # counted in n_done
    else:
        config.data = data_name(config.data)  # the sample by name: found again once the package moves
        predictions = out / "predictions.jsonl"
        # What each item's judge is asked about, hashed once: the resume checks the rows already written against
        # it, and each new row keeps it (the record loaders refuse one id with two contents, so the id is the key).
        content_keys = {r.id: record_content_key(r) for r in records}
        failed_before: set[str] = set()
        done = resume_predictions(predictions, content_keys, failed=failed_before)
        todo = [r for r in records if r.id not in done]
        # All criteria of one answer consecutive: their prompts share a prefix the server computes once.
        todo = [todo[i] for i in judge.prefix_order([judge.prefix_key(r) for r in todo])]
        todo = unasked_first(todo, lambda r: r.id in failed_before)  # refused before: asked after the others

    key = client_api_key(config.api_key, config.api_key_env, command="judge-eval run")
    api_key = key.key
    judge_ref = config.judge
    if not judge_ref:
        judge_ref = os.environ.get(config.base_url_env, "")
        if not judge_ref:
            raise ConfigError(f"base_url_env: the environment variable {config.base_url_env} is not set")

    n_written = n_done if pairwise else len(done)
    export = None  # the judge-train export on this machine served alone, whose fingerprint either formula holds
    with contextlib.ExitStack() as stack:
        if judge_ref.startswith(("http://", "https://")):
            base_url, model = base_of(judge_ref), config.model
        elif Path(judge_ref).is_dir() or is_hub_id(judge_ref):
            # A resume serves the checkpoint under the name its verdicts were asked of (the run key holds its path):
            # a folder started before exports were served as their run still names them "export".
            name = config.model or (earlier_model(out) if n_written else None) or served_name(judge_ref)
            export = _served_export(judge_ref, config)
            _hold_local_weights(out, n_written, judge_ref, export)
            if not todo:
                base_url, model = "", name  # nothing to do: no server needed
            else:
                if (config.prompt == "en" and not pairwise and config.backend in ("auto", "judge-serve")
                        and starts_judge_serve(config)):
                    raise _english_prompt_on_judge_serve(judge_ref)  # before its engines load, not after
                base_url, model = stack.enter_context(local_server(Path(judge_ref), config, out, name))
        else:
            raise not_a_model_ref(judge_ref, "judge")
        limits, entry = ModelLimits(), {}
        # Nothing to ask (a requeued or resubmitted shard already whole): no server says what it serves, so what the
        # server of the folder's verdicts said stands in run.json, which `judge-eval merge` compares across shards.
        said_before = earlier_record(out) if n_written and not todo else {}
        held_limits = said_before.get("server_limits") if isinstance(said_before.get("server_limits"), dict) else None
        if todo:  # first contact: a loading server is waited for, a wrong key or URL said plainly (exit 4)
            model, limits = first_contact(base_url, api_key, model, key_source=key.source, what="the judge",
                                          policy=first_contact_policy(config), entry=entry)
        elif held_limits is not None:
            limits = ModelLimits.from_entry(held_limits)
        model = held_model(out, n_written, model, judge_ref, asking=bool(todo))  # one folder, one judge's verdicts
        served = weights_fingerprint(entry) or (_vllm_export_fingerprint(export, config) if todo else None)
        fingerprint = held_fingerprint(out, n_written, served, judge_ref, asking=bool(todo), export=export)
        limits = dataclasses.replace(limits, root=held_root(out, n_written, limits.root, judge_ref, asking=bool(todo),
                                                            fingerprint=served, export=export))
        kind = config.backend
        if todo and kind == "auto":
            kind = detect_backend(base_url, api_key, limits, policy=probe_policy(config))
        elif kind == "auto" and isinstance(said_before.get("backend"), str):
            kind = said_before["backend"]
        # One folder, one route: a regression judge's /v1/judge scores are its head's, its chat passthrough's the
        # LM's own verdicts, and a probe that once failed must not mix the two in one predictions file.
        if todo and kind == "judge-serve" and config.prompt == "en" and not pairwise:
            raise _english_prompt_on_judge_serve(judge_ref)
        made_by = earlier_record(out).get("backend") if n_written and todo else None
        if made_by and made_by != kind:
            raise ConfigError(f"backend: the {n_written} verdicts already in {out} were asked through {made_by}, this "
                              f"resume would use {kind} (the server answers as one now): resume against the server "
                              "that judged them, or start again with --overwrite")
        requested_max_tokens, adopted_max_tokens = config.max_tokens, None
        trained = limits.trained_max_completion_length
        if todo and trained and config.max_tokens < trained:
            # A reasoning judge cut before its verdict fails to parse: give it the room it was trained to reason in.
            if max_tokens_chosen:
                log.warning("note: max_tokens %d is below the %d tokens this judge was trained to reason in; verdicts "
                            "cut short fail to parse (raise --max-tokens)", config.max_tokens, trained)
            else:
                log.info("max_tokens %d, the completion length this judge was trained with (was %d)", trained,
                         config.max_tokens)
                config.max_tokens = adopted_max_tokens = trained
        if todo:
            config.max_tokens, note = fit_max_tokens(config.max_tokens, limits,
                                                     route="judge" if kind == "judge-serve" else "chat")
            if note:
                log.warning("note: the judge's %s", note)
            if adopted_max_tokens is not None:  # run.json says what was asked for: the trained length as it fits
                adopted_max_tokens = config.max_tokens
        # The budget the verdicts already in the folder were asked with (run.json's config holds what the requests
        # asked for, adopted and fitted): a resume keeps it, so that one folder never holds verdicts of two budgets.
        made_with, adopted_before = earlier_max_tokens(out) if n_written else (None, None)
        if made_with is not None and made_with != config.max_tokens and todo:
            if max_tokens_chosen:
                # the run key matched, so the same flag gave another budget (the first launch adopted the judge's
                # trained length, or another server fitted it): only a resume without the flag keeps the folder's
                raise ConfigError(f"max_tokens: the {n_written} verdicts already in {out} were asked with max_tokens "
                                  f"{made_with}, this resume would ask {config.max_tokens}: resume without "
                                  f"--max-tokens (the folder keeps {made_with}), or start again with --overwrite")
            fitted, _ = fit_max_tokens(made_with, limits, route="judge" if kind == "judge-serve" else "chat")
            if fitted != made_with:  # a server with a smaller window: it would refuse every request, or cut them
                raise ConfigError(f"max_tokens: the {n_written} verdicts already in {out} were asked with max_tokens "
                                  f"{made_with}, which this server cannot give (it allows {fitted}): resume against "
                                  "a server like the first launch's, or start again with --overwrite")
            log.info("max_tokens %d, the budget of the %d verdicts already here (not %d)", made_with, n_written,
                     config.max_tokens)
        if made_with is not None:  # asked now or not, run.json goes on saying what the folder's verdicts had
            config.max_tokens, adopted_max_tokens = made_with, adopted_before
        if pairwise:
            written_judges = pair_judges
        else:
            written_judges = {row.get("judge") for row in iter_predictions(predictions)} if done else set()
        if not (config.name or model) and not todo and len(written_judges) == 1:
            # A rerun of a finished run (a requeued Slurm task whose shard was complete) asks no server for its
            # model: it keeps the name its rows were written under, so it passes the check below and exits 0.
            (model,) = written_judges
        config.name = config.name or model
        others = written_judges - {config.name}
        if others:
            raise ConfigError(f"out: {predictions} holds predictions of {sorted(map(str, others))}, not of "
                              f"{config.name!r}; resume with the same --name or use another --out")
        # A judge-serve says which format it serves (what its engine writes and its /v1/judge parses): that, not a
        # guess from the served name, is what the folder's rows are, and what `score` reads run.json for. A resume
        # keeps the format of the verdicts already here, as it keeps their prompt template and max_tokens.
        guessed = config.verdict_format == "auto" and not limits.verdict_format and not checkpoint_folder(judge_ref)
        config.verdict_format, _ = run_verdict_format(config.verdict_format, judge_ref, model, limits.verdict_format,
                                                      out, n_written, asking=bool(todo), root=limits.root)
        template, why = resolve_prompt_template(config.verdict_format, judge_ref, limits.prompt_version,
                                                config.prompt_version)  # a setting judge-serve contradicts: refused
        prompt_version = template.version
        if kind == "judge-serve" and limits.prompt_version and config.prompt_version == "auto":  # it renders them
            prompt_version, why = limits.prompt_version, (
                "judge-serve renders the prompts; its GET /v1/models says so" if todo else
                "judge-serve rendered the prompts; its GET /v1/models said so when the folder's verdicts were asked, "
                "as run.json's server_limits records")
        if not pairwise and config.prompt == "ru":
            log.info("prompt template %s (%s)", prompt_version, why)
        asked_with = (judge.prompts.PAIRWISE_PROMPT_VERSION if pairwise else
                      judge.PROMPT_VERSION_EN if config.prompt == "en" else prompt_version)
        asked_why = ("pairwise rows: the pairwise template" if pairwise else
                     "prompt en: the English task-description prompt" if config.prompt == "en" else why)
        # The template the verdicts already in the folder were asked with (run.json's prompt_version): the run key
        # holds the settings, not the template they resolve to, which also follows the checkpoint's export manifest,
        # what a judge-serve says it renders and this toolkit's choice for the released judges. A resume keeps it, so
        # that one folder never holds verdicts of two prompts, as it keeps their max_tokens.
        made_with_template = earlier_prompt_version(out) if n_written else None
        if made_with_template is not None and made_with_template != asked_with:
            if todo:
                chosen = f" ({why})" if not pairwise and config.prompt == "ru" else ""
                raise ConfigError(f"prompt: the {n_written} verdicts already in {out} were asked with the prompt "
                                  f"template {made_with_template}, this resume would ask {asked_with}{chosen}: "
                                  "start again with --overwrite, or use another --out")
            asked_with = made_with_template  # nothing asked now: run.json goes on saying what its verdicts had
            asked_why = "the template of the verdicts already in the folder (nothing asked now)"
        if not todo and isinstance(said_before.get("prompt_version_why"), str):
            # Nothing asked: the reason recorded with the verdicts stands (this run's log words it for a rerun), so a
            # whole shard run again still agrees with its siblings in `judge-eval merge`.
            asked_why = said_before["prompt_version_why"]
        # The chat server tokenizes a prompt whole, its special-token strings as control tokens: such rows counted.
        special = special_token_rows(records) if kind == "chat" else None
        if special and special["n_rows"] and todo:
            log.warning("%s", special_token_warning(special))
        write_provenance(out, "judge-eval run", dataclasses.asdict(config), backend=kind, model=model,
                         n_items=len(records), **({} if special is None else {"chat_special_tokens": special}),
                         server_limits=held_limits or {**dataclasses.asdict(limits),
                                                       "max_tokens_requested": requested_max_tokens,
                                                       "max_tokens_adopted": adopted_max_tokens},
                         prompt_version=asked_with, prompt_version_why=asked_why, weights_fingerprint=fingerprint,
                         data_sha256=data_sha256(config.data), **levels, **_judge_training(judge_ref))
        counts = {"written": 0, "parse_failed": 0, "request_failed": 0}
        if todo and pairwise:
            log.info("judging %d pairwise judgments (%d already done) with %s via %s", len(todo), n_done, model, kind)
            # Watched whatever --prompt says: every pair is asked with the one pairwise template, the 4B judge's.
            watch = FormatWatch(config.verdict_format) if guessed and kind == "chat" else None
            if watch is not None and n_done and watch.offer_written(iter_pairwise_rows(predictions)):
                raise ConfigError(watch.misread)
            counts = asyncio.run(judge_pairs(todo, predictions, kind=kind, base_url=base_url, root_url=root_of(base_url),
                                             api_key=api_key, model=model, name=config.name, config=config,
                                             policy=retry_policy(config), watch=watch))  # fmt: skip
        elif todo:
            log.info("judging %d items (%d already done) with %s via %s", len(todo), len(done), model, kind)
            watch = (FormatWatch(config.verdict_format, no_verdict=True) if guessed and kind == "chat"
                     and config.prompt == "ru" else None)
            if watch is not None and done and watch.offer_written(
                    PredictionRow.from_json(data) for data in iter_predictions(predictions)):  # the folder's rows
                raise ConfigError(watch.misread)
            backend: JudgeBackend = (JudgeServeBackend(root_of(base_url), api_key, model, config) if kind == "judge-serve"
                                     else ChatBackend(base_url, api_key, model, config, template))
            counts = asyncio.run(_judge_all(backend, todo, config, predictions, content_keys, watch, failed_before))
    # Counted only where asked for: under fail no row is scored on a cut rationale, and a summary's keys stay as
    # they were for every run that does not depart from them.
    cut_scored = counts.pop("cut_scored", 0)
    if config.cut_rationale == "score":
        counts["cut_scored"] = cut_scored
        if cut_scored:
            log.info("%d rows written now scored by the regression head on a rationale max_tokens cut (cut_rationale "
                     "score, as POLLUX scores them); their finish_reason is length", cut_scored)
    if not predictions.exists():  # named on disk, as a journal made by its first rows is
        write_atomically(predictions, b"")
    flagged = {"special_token_rows": special["n_rows"]} if special and special["n_rows"] else {}
    return {"n_items": len(records), "n_done_before": n_done if pairwise else len(done), **counts, **flagged,
            "predictions": str(predictions), "judge": config.name}


"""Stage 3, answers: every kept instruction answered by models from a pool of endpoints, in equal shares.

The POLLUX judges' instructions were answered by 15 open LLMs in equal shares (paper §3.1). With
``answers_per_instruction`` k > 1, an instruction's k answers come from k different models: the first model is drawn
in the shares from a seeded hash of the instruction's id (``stable_endpoint``), the others are the next models of the
pool in turn. The shares are met in expectation, not exactly; in exchange an answer's model never depends on the other
instructions, so a rerun on an edited input asks only the new instructions.

A thinking model's answer that opens with its reasoning inline (``<think>...</think>``, a server without a
reasoning parser) is the text after that block: the reasoning is not the answer a judge is asked about. The removed
block is kept in the row's ``answer_reasoning`` and such rows are counted in summary.json
(``answers_reasoning_removed``). A bare ``</think>`` with no leading ``<think>`` is left in the answer: an answer may
mention the tag, and cutting before it would lose that text silently (the journal keeps the raw text either way). Dropped: a failed request (asked again by a rerun), ``oversized``: an output longer than
``max_tokens`` could produce (``train.synthetic.client.longer_than_asked``; the model's answer, so not asked again),
an empty answer, and ``unfinished_reasoning``: an answer whose ``<think>`` never closed (its reasoning cut by the
token limit), which holds no answer at all. Any other answer cut at
the token limit is kept (judges must see bad answers too) with its ``finish_reason``. ``limit`` counts answers: those past it are not asked, and counted in summary.json
(``answers_beyond_limit``, beside ``answers`` and ``input_instructions``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path

from judge.plumbing.invisible_text import is_blank

from train.synthetic.client import ChatClient, EndpointWatch, stable_endpoint, unusable_endpoints
from train.synthetic.config import AnswersConfig, EndpointConfig
from train.synthetic.journal import (Journal, answered_oversized, log, read_input, request_failed, require_fields,
                                     refuse_later_stage_rows, run_jobs, write_stage_outputs)

__all__ = ["answer_jobs", "run_answers", "split_answer_reasoning"]

_CARRIED = ("task_group", "task_type", "task_subtype", "task_subsubtype", "difficulty", "domain")


def split_answer_reasoning(text: str) -> tuple[str | None, str | None]:
    """``(reasoning, answer)``: the body of one leading ``<think>...</think>`` block (whitespace before it allowed)
    and the text after it; ``(reasoning, None)`` when that ``<think>`` never closes (no answer was written); else
    ``(None, text)`` (``judge.verdicts.leading_reasoning``, the answer's leading white space dropped): a bare
    ``</think>`` is taken as part of the answer, which may mention the tag."""
    from judge.verdicts import leading_reasoning

    reasoning, answer = leading_reasoning(text)
    return reasoning, (answer.lstrip() if reasoning is not None and answer is not None else answer)


def _fingerprint(endpoint: int, instruction: str) -> str:
    """What an answer's request is made of, as journalled (``request_sha``): the endpoint index and the instruction
    (the system prompt and the models are in the run key)."""
    return f"{endpoint}\n{instruction}"


def _answered_by(journalled: dict | None, instruction: str, n_models: int) -> int | None:
    """The endpoint whose answer to this same instruction the journal holds for a job, or None (no row, a failed
    request, a row from before request fingerprints, or another instruction under the id)."""
    if journalled is None or request_failed(journalled) or "request_sha" not in journalled:
        return None
    for endpoint in range(n_models):
        if hashlib.sha256(_fingerprint(endpoint, instruction).encode("utf-8")).hexdigest() == journalled["request_sha"]:
            return endpoint
    return None


def answer_jobs(rows: list[dict], config: AnswersConfig, journalled: Mapping[str, dict] | None = None) -> list[tuple[str, dict]]:
    """(key, payload) per (instruction, answer slot), with the endpoint index each job goes to.

    An instruction's first model is ``stable_endpoint`` of its id (in the models' shares); slot s goes to the s-th
    model after it, so its answers come from different models. Nothing but the instruction's own id decides that:
    adding or dropping other instructions (a dedup rerun) or a ``limit`` moves no job.

    Args:
        journalled: the stage journal's rows by key. A journalled answer to the same instruction stays with the model
            that gave it, whichever that was: a journal written while jobs were assigned by list position (before
            this scheme) resumes without asking its answers again, and its instruction's other slots follow that
            model in turn.
    """
    config.check_runnable()  # as many models as answers per instruction
    n_models = len(config.answer_models)
    shares = [EndpointConfig(**m).share for m in config.answer_models]
    journalled = journalled or {}
    jobs = []
    for row in rows:
        keys = [f"{row['id']}|{slot}" for slot in range(config.answers_per_instruction)]
        recorded = {}
        for slot, key in enumerate(keys):
            endpoint = _answered_by(journalled.get(key), row["instruction"], n_models)
            if endpoint is not None:
                recorded[slot] = endpoint
        if recorded:
            slot = min(recorded)
            first = (recorded[slot] - slot) % n_models
        else:
            first = stable_endpoint(str(row["id"]), shares, config.seed)
        for slot, key in enumerate(keys):
            jobs.append((key, {"row": row, "endpoint": recorded.get(slot, (first + slot) % n_models)}))
    return jobs[: config.limit] if config.limit else jobs


def run_answers(config: AnswersConfig, input_path: str | Path, out_dir: Path) -> dict:
    """Run stage 3 on the de-duplicated instructions at ``input_path`` into ``out_dir`` (resumable)."""
    config.check_runnable()  # answer models configured (also checked before the CLI claims the folder)
    endpoints = [EndpointConfig(**m) for m in config.answer_models]
    clients = [ChatClient(e, config.max_retries, config.backoff_s, config.timeout_s,
                          retry_wait_budget_s=config.retry_wait_budget_s,
                          watch=EndpointWatch(e, "answer model", config.concurrency)) for e in endpoints]
    inputs = read_input(input_path, "dedup")
    refuse_later_stage_rows(inputs.rows, input_path, "answers", "dedup", row_index=inputs.row_index)
    rows = require_fields(inputs.rows, ("id", "instruction"), input_path, row_index=inputs.row_index)
    # Before any request: annotate refuses such a row only after its answers are paid for.
    from train.synthetic.dedup import INPUT_TASK_TYPE, task_types_of

    task_types_of(rows, input_path, inputs.row_index, known=True, why=INPUT_TASK_TYPE, leaf=True)
    journal = Journal(out_dir / "journal.jsonl")
    every_job = answer_jobs(rows, dataclasses.replace(config, limit=0), journal.rows)
    jobs = every_job[: config.limit] if config.limit else every_job
    log(f"answers: {len(jobs)} answers for {len(rows)} instructions from {len(endpoints)} models -> {out_dir}")

    def work(payload: dict) -> dict:
        row, ep = payload["row"], payload["endpoint"]
        result = clients[ep].complete(row["instruction"], system=config.system_prompt)
        return {
            "instruction_id": row["id"],
            "instruction": row["instruction"],
            **{name: row.get(name, "") for name in _CARRIED},
            "model_id": endpoints[ep].name,
            "answer": result.text,
            "finish_reason": result.finish_reason,
            "ok": result.ok,
            "error": result.error,
            "attempts": result.attempts,
        }

    run_jobs(jobs, work, journal, config.concurrency, "answers",
             fingerprint=lambda payload: _fingerprint(payload["endpoint"], payload["row"]["instruction"]))

    kept, dropped = [], []
    reasoning_removed = 0  # kept answers whose leading reasoning block was removed
    for key, _ in jobs:
        row = dict(journal.rows[key])
        row["id"] = "ans-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
        row.pop("request_sha", None)  # the journal's own check (run_jobs), not part of an answer
        if answered_oversized(row):  # the model's answer, refused unread: counted, not asked again as an outage
            row.pop("ok", None)
            dropped.append({**row, "drop_reason": "oversized"})
            continue
        if row.pop("ok", None) is not True or request_failed({**row, "ok": True}):
            dropped.append({**row, "drop_reason": "request_failed"})
            continue
        reasoning, row["answer"] = split_answer_reasoning(row["answer"])
        if reasoning is not None:
            row["answer_reasoning"] = reasoning
        if row["answer"] is None:
            dropped.append({**row, "answer": journal.rows[key]["answer"], "drop_reason": "unfinished_reasoning"})
        elif is_blank(row["answer"]):  # white space, or characters that show nothing: no answer to judge
            dropped.append({**row, "drop_reason": "empty_answer"})
        else:
            kept.append(row)
            reasoning_removed += reasoning is not None
    # What --limit left out is counted, not only logged: every (instruction, slot) is kept, dropped or left out.
    return write_stage_outputs(out_dir, "answers", kept, dropped, config, {
        "input_instructions": len(rows), "answers": len(every_job), "answers_beyond_limit": len(every_job) - len(jobs),
        "answers_reasoning_removed": reasoning_removed, **unusable_endpoints(clients)})

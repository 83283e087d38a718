"""Stage 3, answers: every kept instruction answered by models from a pool of endpoints, in equal shares.

The POLLUX judges' instructions were answered by 15 open LLMs in equal shares (paper §3.1). With
``answers_per_instruction`` k > 1, an instruction's k answers come from k different models: the first model follows
the shares, the others the next models of the pool in turn.

Dropped: a failed request, an empty answer. An answer cut at the token limit is kept (judges must see bad answers
too) with its ``finish_reason``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from train.synthetic.client import ChatClient, assign_shares
from train.synthetic.config import AnswersConfig, EndpointConfig
from train.synthetic.journal import Journal, log, read_rows, require_fields, run_jobs, write_stage_outputs

__all__ = ["answer_jobs", "run_answers"]

_CARRIED = ("task_group", "task_type", "task_subtype", "task_subsubtype", "difficulty", "domain")


def answer_jobs(rows: list[dict], config: AnswersConfig) -> list[tuple[str, dict]]:
    """(key, payload) per (instruction, answer slot), with the endpoint index each job goes to."""
    n_models = len(config.answer_models)
    if config.answers_per_instruction > n_models:
        raise ValueError(f"answers: {config.answers_per_instruction} answers per instruction need as many models, got {n_models}")
    shares = [EndpointConfig(**m).share for m in config.answer_models]
    first = assign_shares(len(rows), shares, config.seed)
    jobs = []
    for row, model in zip(rows, first):
        for slot in range(config.answers_per_instruction):
            jobs.append((f"{row['id']}|{slot}", {"row": row, "endpoint": (model + slot) % n_models}))
    return jobs[: config.limit] if config.limit else jobs


def run_answers(config: AnswersConfig, input_path: str | Path, out_dir: Path) -> dict:
    """Run stage 3 on the de-duplicated instructions at ``input_path`` into ``out_dir`` (resumable)."""
    if not config.answer_models:
        raise ValueError("answers: no answer models configured (list them under 'answer_models' in the YAML)")
    endpoints = [EndpointConfig(**m) for m in config.answer_models]
    clients = [ChatClient(e, config.max_retries, config.backoff_s, config.timeout_s) for e in endpoints]
    rows = require_fields(read_rows(input_path, "dedup"), ("id", "instruction"), input_path)
    jobs = answer_jobs(rows, config)
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

    journal = Journal(out_dir / "journal.jsonl")
    run_jobs(jobs, work, journal, config.concurrency, "answers",
             fingerprint=lambda payload: f"{payload['endpoint']}\n{payload['row']['instruction']}")

    kept, dropped = [], []
    for key, _ in jobs:
        row = dict(journal.rows[key])
        row["id"] = "ans-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
        row.pop("request_sha", None)  # the journal's own check (run_jobs), not part of an answer
        if not row.pop("ok"):
            dropped.append({**row, "drop_reason": "request_failed"})
        elif not row["answer"].strip():
            dropped.append({**row, "drop_reason": "empty_answer"})
        else:
            kept.append(row)
    return write_stage_outputs(out_dir, "answers", kept, dropped, config)

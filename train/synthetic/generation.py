"""Stage 1, instructions: problems for every leaf task and complexity level, from generator endpoints in shares.

The POLLUX judges' 78,000 instructions came from three strong LLMs in equal shares, each prompted with the leaf's
task type, subtypes, domain, description, the complexity level's requirements, and asked for the problem wrapped in
``[PROBLEM] ... [END]`` (paper App. C.3). ``GENERATION_TEMPLATE`` follows that structure; its wording is ours (the
paper's exact text was not at hand), so it carries its own version.

Filters, in order: a failed request; a malformed output (no ``[PROBLEM] ... [END]``, an empty or repeated block);
more than ``max_non_russian`` non-Russian word tokens; an exact duplicate (case and whitespace folded) of an earlier
instruction, in job order.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from train.synthetic.client import ChatClient, assign_shares
from train.synthetic.config import EndpointConfig, InstructionsConfig
from train.synthetic.journal import Journal, log, run_jobs, write_stage_outputs

__all__ = [
    "GENERATION_VERSION",
    "GENERATION_TEMPLATE",
    "render_generation_prompt",
    "parse_problem",
    "non_russian_share",
    "generation_jobs",
    "run_instructions",
]

GENERATION_VERSION = "pollux-gen-v1"

GENERATION_TEMPLATE = (
    "You write tasks that test AI assistants in Russian. Write one new problem: a request a user could send to an "
    "AI assistant, for the task described below.\n\n"
    "Task type: {task_type} ({task_type_ru})\n"
    "Subtypes: {subtypes}\n"
    "Domain: {domain}\n"
    "Task description: {description}\n"
    "Complexity: {complexity}\n"
    "Requirements for this complexity: {requirements}\n\n"
    "The problem must be written in Russian, be self-contained (include any text it asks to work on), match the "
    "task type, domain and complexity, and contain neither the solution nor comments about the problem.\n"
    "Output only the problem, in this format:\n"
    "[PROBLEM] (the problem) [END]"
)

_PROBLEM = re.compile(r"\[PROBLEM\](.*?)\[END\]", re.DOTALL | re.IGNORECASE)
_THINK = re.compile(r"^.*?</think\s*>", re.DOTALL | re.IGNORECASE)
_CODE = re.compile(r"```.*?(```|$)|`[^`\n]*`", re.DOTALL)
_WORD = re.compile(r"[^\W\d_]+")
_RUSSIAN_WORD = re.compile(r"[а-яё]+", re.IGNORECASE)


@lru_cache(maxsize=1)
def _leaf_domains() -> dict[tuple, dict]:
    """Domain ({"en", "ru"}) of every leaf, keyed by its English path; judge.Task does not carry it."""
    raw = json.loads((resources.files("judge") / "data" / "tasks.json").read_text(encoding="utf-8"))
    out: dict[tuple, dict] = {}

    def walk(node: dict, path: tuple) -> None:
        if "criteria" in node:
            out[(path + (None, None))[:3]] = node.get("domain") or {}
        for key in ("tasks", "subtasks_l1", "subtasks_l2"):
            for name, child in (node.get(key) or {}).items():
                walk(child, path + (name,))

    for group in raw.values():
        walk(group, ())
    return out


def render_generation_prompt(task, level: str) -> str:
    """The generation prompt for one leaf task (a ``judge.Task``) at one complexity level (easy/medium/hard)."""
    domain = _leaf_domains().get((task.task_type, task.subtype, task.subsubtype), {})
    subtypes = " / ".join(p for p in (task.subtype, task.subsubtype) if p) or "none"
    return GENERATION_TEMPLATE.format(
        task_type=task.task_type,
        task_type_ru=task.names_ru[1],
        subtypes=subtypes,
        domain=domain.get("en") or domain.get("ru") or "general",
        description=task.description.get("en") or task.description.get("ru") or "",
        complexity=level,
        requirements=task.complexity[level].get("en") or task.complexity[level].get("ru") or "",
    )


def parse_problem(text: str) -> tuple[str | None, str]:
    """The problem inside ``[PROBLEM] ... [END]`` (a ``<think>`` preamble is skipped).

    Returns:
        (problem, "") or (None, reason) with reason one of ``malformed:no_tags``, ``malformed:empty``,
        ``malformed:several_problems``.
    """
    text = _THINK.sub("", text or "", count=1) if "</think" in (text or "").lower() else (text or "")
    blocks = _PROBLEM.findall(text)
    if not blocks:
        return None, "malformed:no_tags"
    if len(blocks) > 1:
        return None, "malformed:several_problems"
    problem = blocks[0].strip()
    if not problem:
        return None, "malformed:empty"
    return problem, ""


def non_russian_share(text: str, ignore_code: bool = True) -> float:
    """Share of word tokens (letter runs) that are not Russian (not all Cyrillic).

    Digits and punctuation are not words. With ``ignore_code``, fenced and inline code do not count: a code task's
    instruction quotes code by design. A text with no words at all counts as entirely non-Russian (1.0).
    """
    if ignore_code:
        text = _CODE.sub(" ", text)
    words = _WORD.findall(text)
    if not words:
        return 1.0
    foreign = sum(1 for w in words if not _RUSSIAN_WORD.fullmatch(w))
    return foreign / len(words)


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def generation_jobs(config: InstructionsConfig) -> list[tuple[str, dict]]:
    """(key, payload) for every (leaf, complexity level, index) selected by the config, in taxonomy order."""
    from judge import load_split_spec, load_taxonomy

    taxonomy = load_taxonomy()
    wanted = {taxonomy.canonical_task_type(name) or name for name in config.task_types}
    held_out = load_split_spec().task_types if config.skip_zero_shot else frozenset()
    jobs = []
    for task in taxonomy.tasks:
        if (wanted and task.task_type not in wanted) or task.task_type in held_out:
            continue
        for level in ("easy", "medium", "hard"):
            if level not in task.complexity:
                continue
            for index in range(config.per_task_level):
                key = f"{'/'.join(task.path)}|{level}|{index}"
                jobs.append((key, {"task": task, "level": level}))
    if config.limit:
        jobs = jobs[: config.limit]
    for (key, payload), endpoint in zip(jobs, assign_shares(len(jobs), [g["share"] if "share" in g else 1.0 for g in config.generators], config.seed)):
        payload["endpoint"] = endpoint
    return jobs


def run_instructions(config: InstructionsConfig, out_dir: Path) -> dict:
    """Run stage 1 into ``out_dir`` (resumable). Returns the summary."""
    if not config.generators:
        raise ValueError("instructions: no generators configured (list them under 'generators' in the YAML)")
    endpoints = [EndpointConfig(**g) for g in config.generators]
    clients = [ChatClient(e, config.max_retries, config.backoff_s, config.timeout_s) for e in endpoints]
    jobs = generation_jobs(config)
    log(f"instructions: {len(jobs)} jobs over {len(endpoints)} generators -> {out_dir}")

    def work(payload: dict) -> dict:
        task, level, ep = payload["task"], payload["level"], payload["endpoint"]
        result = clients[ep].complete(render_generation_prompt(task, level))
        return {
            "task_group": task.group,
            "task_type": task.task_type,
            "task_subtype": task.subtype or "",
            "task_subsubtype": task.subsubtype or "",
            "difficulty": level,
            "domain": _leaf_domains().get((task.task_type, task.subtype, task.subsubtype), {}).get("ru", ""),
            "generator": endpoints[ep].name,
            "raw": result.text,
            "ok": result.ok,
            "error": result.error,
            "attempts": result.attempts,
        }

    journal = Journal(out_dir / "journal.jsonl")
    run_jobs(jobs, work, journal, config.concurrency, "instructions")

    kept, dropped, seen = [], [], set()
    for key, _ in jobs:
        row = dict(journal.rows[key])
        row["id"] = "ins-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
        row["generation_version"] = GENERATION_VERSION
        if not row.pop("ok"):
            dropped.append({**row, "drop_reason": "request_failed"})
            continue
        problem, reason = parse_problem(row["raw"])
        if problem is None:
            dropped.append({**row, "drop_reason": reason})
            continue
        row["instruction"] = problem
        share = non_russian_share(problem, config.ignore_code)
        if share > config.max_non_russian:
            dropped.append({**row, "drop_reason": "non_russian", "non_russian_share": share})
            continue
        norm = _normalise(problem)
        if norm in seen:
            dropped.append({**row, "drop_reason": "exact_duplicate"})
            continue
        seen.add(norm)
        kept.append(row)
    return write_stage_outputs(out_dir, "instructions", kept, dropped, config, {"generation_version": GENERATION_VERSION})

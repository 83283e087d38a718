"""Stage 1, instructions: problems for every leaf task and complexity level, from generator endpoints in shares.

The POLLUX judges' 78,000 instructions came from three strong LLMs in equal shares (paper App. C.1), each given the
paper's instruction-generation prompt (arXiv 2505.24616v3, Appendix M.1; ``GENERATION_TEMPLATE``, byte
for byte) with the leaf's type, subtypes, domain, description, and the complexity level with its requirements, and
asked for the problem wrapped in ``[PROBLEM] ... [END]``.

Filters, in order: a failed request (asked again by a rerun); an output longer than ``max_tokens`` could produce
(``oversized``: ``train.synthetic.client.longer_than_asked``, the generator's answer, not asked again); a malformed
output (no ``[PROBLEM] ... [END]``, an empty or repeated block, or an opening ``<think>`` never closed); more than ``max_non_russian`` non-Russian word
tokens; an exact duplicate (``judge.splits.instruction_text_key``: Unicode compatibility form, invisible characters,
case and whitespace folded) of an earlier instruction, in job order.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from judge.splits import instruction_text_key
from train.synthetic.client import (ChatClient, EndpointWatch, generator_seed, job_seed, seed_suffix, stable_endpoint,
                                    unusable_endpoints)
from train.synthetic.config import EndpointConfig, InstructionsConfig
from train.synthetic.journal import Journal, answered_oversized, log, run_jobs, write_stage_outputs

__all__ = [
    "GENERATION_VERSION",
    "UNRECORDED_VERSION",
    "GENERATION_TEMPLATE",
    "generation_fields",
    "render_generation_prompt",
    "parse_problem",
    "non_russian_share",
    "generation_jobs",
    "generation_fingerprint",
    "run_instructions",
]

GENERATION_VERSION = "pollux-gen-v2"  # v1: our own wording; v2: the paper's M.1 text
#: The ``generation_version`` of a row journalled before rows recorded theirs (its template is unknown).
UNRECORDED_VERSION = "unrecorded"

# arXiv 2505.24616v3, Appendix M.1, "The prompt for generating instructions". The paper prints this prompt as two
# code fences: the first closes after "- **Complexity:**", three blank lines follow outside any fence, and a second
# fence opens before the "---" and the rules. We read the stray fence as a typesetting split of ONE prompt (a page
# or column break in the source), not as text the generators saw: the template is the lines inside both fences,
# joined by "\n", exactly as for the judge prompts (the lines inside the fence, no newline after the last one). The
# second fence's last line is empty, so the template ends in "extra messages.\n". The fences themselves and the
# three blank lines between them are not part of it.
GENERATION_TEMPLATE = (
    "### **Instruction:**\n"
    "Your task is to generate a new novel problem based on the given details about its type, description, "
    "requirements, and complexity.\n"
    "\n"
    "### **Problem Details:**\n"
    "- **General Problem Type:** {problem_type}\n"
    "- **Specific Problem Type:** {problem_subtype}\n"
    "- **More Specific Subtype:** {problem_subtype2}\n"
    "- **Domain:** {domain}\n"
    "- **Description:** {problem_description}\n"
    "- **Requirements:** {problem_requirements}\n"
    "- **Complexity:** {problem_complexity}\n"
    "\n"
    "---\n"
    "\n"
    "### **Problem Generation Rules:**\n"
    "\n"
    "1. **Relevance:**\n"
    "  - The problem must be directly related to the given description and domain.\n"
    "  - It should align with the specified problem type and complexity level.\n"
    "\n"
    "2. **Complexity & Challenge:**\n"
    "  - The problem should not be too generic or easy to solve.\n"
    "  - The complexity should match '{problem_complexity}'.\n"
    "\n"
    "3. **Implicit Requirements:**\n"
    "  - The problem should naturally contain the requirements but should not list them explicitly.\n"
    "\n"
    "4. **Text-Based Problems:**\n"
    "  - If the problem involves working with text, the text content should be provided after the problem statement.\n"
    "\n"
    "5. **Perspective & Style:**\n"
    "  - Assume a situation where a user is asking a question.\n"
    "  - The user should ask in first-person perspective but should not use phrases like \"I\", \"A user\", or \"You\" in "
    "the first sentence.\n"
    "  - Do not assign a role to any entity in the problem.\n"
    "  - Avoid mentioning AI models in any way.\n"
    "\n"
    "---\n"
    "\n"
    "### **Format:**\n"
    "\n"
    "- Prefix the problem with: [PROBLEM]\n"
    "- Write the problem in Russian (matching the given description).\n"
    "- End the problem with: [END]\n"
    "- No greetings or extra messages.\n"
)

# The level names of the released POLLUX `difficulty` column (the ai-forever/POLLUX dataset); the paper does not show the filled value.
_COMPLEXITY_NAMES = {"easy": "Easy", "medium": "Medium", "hard": "Hard"}

# Searched only up to the text's last [END] (``_problem_blocks``): past it no block can close, and each [PROBLEM]
# with no [END] after it sent the lazy body to the text's end before failing: quadratic in a model's output.
_PROBLEM = re.compile(r"\[PROBLEM\](.*?)\[END\]", re.DOTALL | re.IGNORECASE)
_PROBLEM_END = re.compile(r"\[END\]", re.IGNORECASE)
_THINK = re.compile(r"^.*?</think\s*>", re.DOTALL | re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+")
_RUSSIAN_WORD = re.compile(r"[а-яё]+", re.IGNORECASE)


def generation_fields(task, level: str, language: str = "en") -> dict[str, str]:
    """The placeholders of ``GENERATION_TEMPLATE`` for one leaf task at one complexity level.

    The paper names the placeholders (Appendix M.1, "Problem Details") but shows no filled example, so
    two choices are ours: the taxonomy texts are in ``language`` (default English, the prompt's own language;
    ``ru`` gives the Russian names and texts); an absent subtype level is ``""``, as in the released POLLUX data's
    ``task_subtype`` / ``task_subsubtype`` columns.

    Args:
        task: a leaf ``judge.Task``.
        level: ``easy``, ``medium`` or ``hard``.
        language: ``en`` or ``ru``.
    """
    if language not in ("en", "ru"):
        raise ValueError(f"generation prompt language must be 'en' or 'ru', got {language!r}")
    if level not in task.complexity:
        raise ValueError(f"task {'/'.join(task.path)!r} has no complexity level {level!r}")
    if language == "en":
        names = (task.task_type, task.subtype or "", task.subsubtype or "")
    else:
        ru = tuple(task.names_ru[1:]) + ("", "")
        names = ru[:3]
    return {
        "problem_type": names[0],
        "problem_subtype": names[1],
        "problem_subtype2": names[2],
        "domain": task.domain.get(language, ""),
        "problem_description": task.description.get(language, ""),
        "problem_requirements": task.complexity[level].get(language, ""),
        "problem_complexity": _COMPLEXITY_NAMES[level],
    }


def render_generation_prompt(task, level: str, language: str = "en") -> str:
    """The paper's instruction-generation prompt for one leaf task (a ``judge.Task``) at one complexity level
    (easy/medium/hard), its placeholders filled by ``generation_fields``."""
    return GENERATION_TEMPLATE.format(**generation_fields(task, level, language))


def parse_problem(text: str) -> tuple[str | None, str]:
    """The problem inside ``[PROBLEM] ... [END]`` (a ``<think>`` preamble is skipped).

    An output that opens with a ``<think>`` it never closes (its reasoning cut by ``max_tokens``, on a server without
    a reasoning parser) holds no answer: a block in it is a draft the generator wrote while reasoning, so it is
    ``malformed:unfinished_reasoning``, as the answers stage drops such an answer.

    Returns:
        (problem, "") or (None, reason) with reason one of ``malformed:no_tags``, ``malformed:empty``,
        ``malformed:several_problems``, ``malformed:unfinished_reasoning``.
    """
    from judge.verdicts import leading_reasoning

    if leading_reasoning(text or "")[1] is None:
        return None, "malformed:unfinished_reasoning"
    text = _THINK.sub("", text or "", count=1) if "</think" in (text or "").lower() else (text or "")
    blocks = _problem_blocks(text)
    if not blocks:
        return None, "malformed:no_tags"
    if len(blocks) > 1:
        return None, "malformed:several_problems"
    problem = blocks[0].strip()
    if not problem:
        return None, "malformed:empty"
    return problem, ""


def _problem_blocks(text: str) -> list[str]:
    """``_PROBLEM.findall(text)``, in linear time: every match ends at an [END], so all lie before the end of the
    last one, where each [PROBLEM] has an [END] after it and each attempt succeeds without overlapping the next."""
    last = None
    for last in _PROBLEM_END.finditer(text):
        pass
    return [] if last is None else _PROBLEM.findall(text, 0, last.end())


def non_russian_share(text: str, ignore_code: bool = True) -> float:
    """Share of word tokens (letter runs) that are not Russian (not all Cyrillic).

    Digits and punctuation are not words. With ``ignore_code``, fenced and inline code do not count: a code task's
    instruction quotes code by design. A text with no words at all counts as entirely non-Russian (1.0).
    """
    if ignore_code:
        # every backticked span left out, quoted material as well as code (build-data's rationale rule counts prose)
        from train.build_data import without_code

        text = without_code(text)
    words = _WORD.findall(text)
    if not words:
        return 1.0
    foreign = sum(1 for w in words if not _RUSSIAN_WORD.fullmatch(w))
    return foreign / len(words)


def generation_jobs(config: InstructionsConfig) -> list[tuple[str, dict]]:
    """(key, payload) for every (leaf, complexity level, index) selected by the config, in taxonomy order."""
    from judge import load_taxonomy

    taxonomy = load_taxonomy()
    wanted = {taxonomy.canonical_task_type(name) or name for name in config.task_types}
    shares = [g["share"] if "share" in g else 1.0 for g in config.generators]
    held_out = config.held_out_task_types()  # the run's split file, as the split stage reads it
    jobs = []
    for task in taxonomy.tasks:
        if (wanted and task.task_type not in wanted) or task.task_type in held_out:
            continue
        for level in ("easy", "medium", "hard"):
            if level not in task.complexity:
                continue
            for index in range(config.per_task_level):
                key = f"{'/'.join(task.path)}|{level}|{index}"
                # The generator is a function of the job's own key (``stable_endpoint``): another --limit,
                # --per-task-level or task_types selects other jobs but sends none of the journalled ones elsewhere.
                endpoint = stable_endpoint(key, shares, config.seed) if shares else 0
                jobs.append((key, {"task": task, "level": level, "endpoint": endpoint, "index": index}))
    return jobs[: config.limit] if config.limit else jobs


def generation_fingerprint(task, level: str, language: str = "en", seed: int | None = None, index: int = 0) -> str:
    """What a generation request is made of, as journalled (``request_sha``): ``GENERATION_VERSION`` and the rendered
    prompt (the template filled from the taxonomy), and for job ``index`` > 0 of a generator seeded with ``seed``
    (``job_seed``) the seed it is asked with. A journal written under another template or version, or a job
    journalled under another seed, is asked again, not relabelled with this one."""
    return f"{GENERATION_VERSION}\n{render_generation_prompt(task, level, language)}{seed_suffix(seed, index)}"


def run_instructions(config: InstructionsConfig, out_dir: Path) -> dict:
    """Run stage 1 into ``out_dir`` (resumable). Returns the summary."""
    config.check_runnable()  # generators and the details language (also checked before the CLI claims the folder)
    endpoints = [EndpointConfig(**g) for g in config.generators]
    clients = [ChatClient(e, config.max_retries, config.backoff_s, config.timeout_s,
                          retry_wait_budget_s=config.retry_wait_budget_s,
                          watch=EndpointWatch(e, "generator", config.concurrency)) for e in endpoints]
    jobs = generation_jobs(config)
    log(f"instructions: {len(jobs)} jobs over {len(endpoints)} generators -> {out_dir}")

    seeds = [generator_seed(e) for e in endpoints]

    def work(payload: dict) -> dict:
        task, level, ep = payload["task"], payload["level"], payload["endpoint"]
        result = clients[ep].complete(render_generation_prompt(task, level, config.details_language),
                                      seed=job_seed(seeds[ep], payload["index"]))
        return {
            "task_group": task.group,
            "task_type": task.task_type,
            "task_subtype": task.subtype or "",
            "task_subsubtype": task.subsubtype or "",
            "difficulty": level,
            "domain": task.domain.get("ru", ""),
            "generator": endpoints[ep].name,
            "generation_version": GENERATION_VERSION,
            "raw": result.text,
            "ok": result.ok,
            "error": result.error,
            "attempts": result.attempts,
        }

    journal = Journal(out_dir / "journal.jsonl")
    run_jobs(jobs, work, journal, config.concurrency, "instructions",
             fingerprint=lambda payload: generation_fingerprint(payload["task"], payload["level"], config.details_language,
                                                                seeds[payload["endpoint"]], payload["index"]))
    unrecorded = sum(1 for key, _ in jobs if "generation_version" not in journal.rows[key])
    if unrecorded:
        log(f"instructions: {unrecorded} journalled rows predate recorded prompt versions; kept, labelled "
            f"{UNRECORDED_VERSION!r} (--overwrite asks them again under {GENERATION_VERSION})")

    kept, dropped, seen = [], [], set()
    for key, _ in jobs:
        row = dict(journal.rows[key])
        row["id"] = "ins-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
        # The version that wrote the row, never this run's by default: a journal from before rows carried their
        # prompt's fingerprint is kept (journal.run_jobs) but its prompt is unknown.
        row["generation_version"] = row.get("generation_version", UNRECORDED_VERSION)
        row.pop("request_sha", None)  # the journal's own check (run_jobs), not part of an instruction
        if answered_oversized(row):  # the generator's answer, refused unread: counted, not asked again as an outage
            row.pop("ok", None)
            dropped.append({**row, "drop_reason": "oversized"})
            continue
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
        # the splits' key, so that a copy the split stage would group with its twin is a duplicate here too
        norm = instruction_text_key(problem)
        if norm in seen:
            dropped.append({**row, "drop_reason": "exact_duplicate"})
            continue
        seen.add(norm)
        kept.append(row)
    return write_stage_outputs(out_dir, "instructions", kept, dropped, config,
                               {"generation_version": GENERATION_VERSION, **unusable_endpoints(clients)})

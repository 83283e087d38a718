"""Stage 4, annotate: a teacher's verdict for every (instruction, answer, criterion of the task).

The POLLUX judges learned from DeepSeek-R1's verdicts given the paper's English prompt "for generating synthetic data"
(arXiv 2505.24616v3, Appendix M.1): ``judge.render_prompt_en`` renders it, ``judge.parse_verdict`` reads the answer back against the criterion's scale.
Every raw output is kept. An output that does not parse is asked again, up to ``max_attempts`` queries; an item
that never parses is counted under its parse error and dropped — it is never given a score. A score outside the
criterion's scale is not a training label either: it is asked again like a parse failure and, if it persists,
dropped as ``verdict_out_of_scale`` (``unusable_verdict``). So is an output that is more than one ``[FEEDBACK] ...
[RESULT] n [END]`` block (``judge.verdicts.bare_tagged_answer``: "... [RESULT] 2 [END] а вообще 0", two blocks, a
score before ``[FEEDBACK]``), which the parser reads as its last score while the teacher also gave another:
``verdict_answer_not_bare``, as the traces stage drops an integer answer that is not bare. So is an output longer
than the request's ``max_tokens`` could have produced (``train.synthetic.client.longer_than_asked``: an answer of
more than 16 characters a token, or a reasoning returned apart past its own larger cap, since a provider such as
DeepSeek's API does not count it in ``max_tokens``), which a server that ignored the limit returned: the client keeps
none of its text (so no raw output of it is kept, though the query counts in ``attempts``), ``verdict_oversized``,
never a label. An output the limit stopped (``finish_reason``
``length``) is asked again too and, if every attempt is cut, dropped as ``verdict_cut``: a verdict read from it may be
a draft inside a reasoning the teacher's chat template opened in the prompt, cut before its ``</think>``. A rerun asks again a label an earlier version
journalled that this one would not keep: its last raw output, read again by ``judge.parse_verdict``, is another
verdict, or one ``unusable_verdict`` refuses.

An item whose prompt holds one of ``judge.chat_tokens.SPECIAL_TOKEN_STRINGS`` is not asked, and dropped as
``special_token_string`` (a label journalled for it before is not kept): the teacher's chat API would read it as a
control token (an answer that writes ``<|im_end|>\\n<|im_start|>assistant\\n...`` ends the user's turn and writes the
teacher's verdict), where SFT reads it as the characters it is; the traces stage and GRPO leave such items out by the
same list.

``limit`` counts verdicts: those past it are not asked, and counted in summary.json (``verdicts_beyond_limit``) beside
``input_answers`` and ``verdicts``, so every (answer, criterion) is a kept row, a counted drop or counted left out.

Rows come out in the POLLUX record layout (``judge.JudgeRecord``): the teacher's score is ``criteria_score`` and the
single entry of ``expert_scores``, its feedback the single ``expert_feedback``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

from judge.chat_tokens import special_token_strings_in
from train.synthetic.client import (CHARS_PER_TOKEN, ChatClient, EndpointWatch, longer_than_asked,
                                    unusable_endpoints)
from train.synthetic.config import AnnotateConfig, EndpointConfig
from train.synthetic.journal import (Journal, log, read_input, refuse_later_stage_rows, require_fields, run_jobs,
                                     write_stage_outputs)

__all__ = ["annotation_items", "unusable_verdict", "tagged_answer_is_bare", "run_annotate"]

#: The columns that name an answer's task, in the order ``Taxonomy.leaf`` takes them (``TaxonomyError.level``).
_TASK_FIELDS = ("task_type", "task_subtype", "task_subsubtype")
_CARRIED = ("task_type", "task_subtype", "task_subsubtype", "difficulty", "domain", "model_id")


def annotation_items(rows: list[dict], config: AnnotateConfig, source: str = "answers",
                     row_index: Sequence[int] | None = None) -> list[tuple[str, dict]]:
    """(key, record dict) per (answer, criterion of its leaf task), in answer order then taxonomy order.

    Args:
        row_index: each row's index in ``source`` (``read_input``'s ``InputRows.row_index``), which an error names;
            None names positions in ``rows``.

    Raises:
        judge.RecordError: an answer whose task is not one leaf of the taxonomy (``Taxonomy.leaf``: a blank level
            is unknown, narrowed by the levels given), naming ``source``, the row and the field at fault; or one
            whose ``task_type``, ``task_subtype`` or ``task_subsubtype`` is present but not a string, naming that
            field (the taxonomy lookup failed on it with a bare AttributeError).
    """
    from judge import RecordError, TaxonomyError, load_taxonomy
    from judge.plumbing.json_reading import value_words

    taxonomy = load_taxonomy()
    lang = config.criteria_language
    wanted = set(config.criteria)
    items = []
    for index, row in zip(range(len(rows)) if row_index is None else row_index, rows):
        for name in _TASK_FIELDS:
            value = row.get(name)
            if value is not None and not isinstance(value, str):
                raise RecordError(source, index, name, f"{value_words(value)}, not a string")
        try:
            leaf = taxonomy.leaf(row["task_type"], row.get("task_subtype"), row.get("task_subsubtype"))
        except TaxonomyError as err:  # a KeyError: the CLI would print a traceback that names no row
            raise RecordError(source, index, _TASK_FIELDS[err.level or 0], err.args[0]) from None
        for cid in leaf.criteria:
            crit = taxonomy.criteria[cid]
            if wanted and crit.base_id not in wanted:
                continue
            key = f"{row['id']}:{cid}"
            items.append((key, {
                "id": key,
                "instruction": row["instruction"],
                "reference_answer": "",
                "answer": row["answer"],
                "criteria_name": crit.name[lang],
                "rubrics": crit.rubric(lang),
                **{name: row.get(name, "") for name in _CARRIED},
                "criterion_id": cid,
                "instruction_id": row.get("instruction_id", ""),
                "answer_id": row["id"],
            }))
    return items[: config.limit] if config.limit else items


def tagged_answer_is_bare(text: str, lenient: bool = False) -> bool:
    """Whether a teacher's raw output is one ``[FEEDBACK] ... [RESULT] n [END]`` block and nothing else
    (``judge.verdicts.bare_tagged_answer``), after a reasoning block when it opens with one, or after a reasoning its
    chat template opened in the prompt (text up to a ``</think>``, read as ``parse_verdict`` reads it, the ``<think>``
    put back in front). With ``lenient``, an output whose only fault is the missing ``[END]`` that lenient reading
    accepts is read with it.
    """
    from judge import VerdictError, parse_verdict
    from judge.verdicts import bare_tagged_answer

    def bare(answer: str) -> bool:
        opens = _OPENS_THINK.match(answer) is not None
        return bare_tagged_answer(answer, reasoning=opens) or (
            not opens and bare_tagged_answer("<think>" + answer, reasoning=True))

    if bare(text):
        return True
    return lenient and parse_verdict(text).error == VerdictError.MISSING_END and bare(text.rstrip() + " [END]")


#: A text that opens with a reasoning block (whitespace before it allowed, as ``bare_tagged_answer`` strips it).
_OPENS_THINK = re.compile(r"\s*<think\s*>", re.IGNORECASE)


def unusable_verdict(verdict, scale=None, text: str | None = None, lenient: bool = False) -> tuple[str, str] | None:
    """Why a teacher verdict cannot label a training row, as (error code, reason); None when it can.

    An out-of-scale score is refused whichever way ``judge.parse_verdict`` reports it: as a failure with error
    ``out_of_scale`` (the parser that refuses such scores), or as ``ok=True`` with ``in_scale=False`` (the parser
    that keeps them as the judge's answer, for evaluation). With ``scale``, a score between two of its levels is
    refused too ("the score must correspond to a single scale point", the English prompt, App. M.1): training
    would drop it as ``score_not_a_level``, so the teacher is asked again instead. So is a feedback holding a verdict
    tag or a ``<think>`` tag (``tags_in_feedback``), which training drops too. With ``text`` (the raw output the
    verdict was read from), an output that is more than one tagged block (``tagged_answer_is_bare``) is refused as
    ``answer_not_bare``: ``parse_verdict`` reads the last ``[RESULT]`` of "[FEEDBACK] ... [RESULT] 2 [END] а вообще
    0", of two blocks, or of "Score: 0. [FEEDBACK] ... [RESULT] 2 [END]", where the teacher also said another score.
    """
    if getattr(verdict, "in_scale", True) is False or (not verdict.ok and verdict.error == "out_of_scale"):
        return "out_of_scale", verdict.reason or f"score {verdict.score} is outside the criterion's scale"
    if not verdict.ok:
        return verdict.error, verdict.reason
    # A forged "[RESULT] 0 [END]" or a <think> left in the feedback was kept as a label that build-data then drops
    # (tags_in_feedback, train.build_data.VERDICT_OR_THINK_TAG): unusable here, so the teacher is asked again while a
    # new answer can still help.
    from train.build_data import VERDICT_OR_THINK_TAG

    if verdict.feedback and VERDICT_OR_THINK_TAG.search(verdict.feedback):
        return "tags_in_feedback", "the feedback holds a verdict tag ([FEEDBACK], [RESULT], [END]) or a <think> tag"
    if scale is not None and not scale.is_level(verdict.score):
        return "not_a_level", f"score {verdict.score:g} is between the levels {list(scale.levels)}"
    if text is not None and not tagged_answer_is_bare(text, lenient):
        return "answer_not_bare", ("the output is more than one [FEEDBACK] ... [RESULT] n [END] block: text before "
                                   "or after it, or a second block, may give another score")
    return None


def run_annotate(config: AnnotateConfig, input_path: str | Path, out_dir: Path) -> dict:
    """Run stage 4 on the answers at ``input_path`` into ``out_dir`` (resumable). Returns the summary."""
    from judge import PROMPT_VERSION_EN, VerdictError, parse_verdict, render_prompt_en, scale_of
    from judge.verdicts import read_tagged_verdict

    config.check_runnable()  # a teacher configured (max_attempts >= 1 is checked when the config is built)
    teacher = EndpointConfig(**config.teacher)
    client = ChatClient(teacher, config.max_retries, config.backoff_s, config.timeout_s,
                        retry_wait_budget_s=config.retry_wait_budget_s,
                        watch=EndpointWatch(teacher, "teacher", config.concurrency))
    inputs = read_input(input_path, "answers")
    refuse_later_stage_rows(inputs.rows, input_path, "annotate", "answers", row_index=inputs.row_index)
    rows = require_fields(inputs.rows, ("id", "instruction", "answer", "task_type"), input_path,
                          row_index=inputs.row_index)
    every_item = annotation_items(rows, dataclasses.replace(config, limit=0), source=str(input_path),
                                  row_index=inputs.row_index)
    items = every_item[: config.limit] if config.limit else every_item
    # A chat API parses such a string in the prompt as a control token (the answer ends the user's turn and writes
    # the teacher's: its label would be the answer's), where SFT reads it as text: the traces stage's rule, the list
    # GRPO drops its prompts by. Not asked, and dropped whatever an earlier version journalled for it.
    forging = {key: held for key, record in items if (held := special_token_strings_in(render_prompt_en(record)))}
    log(f"annotate: {len(items) - len(forging)} verdicts for {len(rows)} answers from {teacher.name} -> {out_dir}"
        + (f" ({len(forging)} not asked: a special-token string in the prompt)" if forging else ""))
    oversized = (f"longer than max_tokens {teacher.max_tokens} x {CHARS_PER_TOKEN} characters allows: the server did "
                 "not generate under the limit it was asked with")

    def work(record: dict) -> dict:
        scale = scale_of(record["rubrics"])
        prompt = render_prompt_en(record)
        raw_outputs: list[str] = []
        verdict = None
        for attempt in range(1, config.max_attempts + 1):
            result = client.complete(prompt)
            if result.oversized:
                # The client kept none of it (train.synthetic.client.longer_than_asked): no raw output to keep, and
                # asked again, as a verdict that does not parse is. Its error says whether the answer or the
                # reasoning returned apart passed its bound.
                problem = ("oversized", result.error.removeprefix("oversized: "))
                continue
            if not result.ok:  # attempts: the queries made, not one its endpoint's watch did not send
                return {"raw_outputs": raw_outputs, "ok": False, "error": "request_failed", "reason": result.error,
                        "attempts": attempt if result.attempts else attempt - 1}
            raw_outputs.append(result.text)
            if result.finish_reason == "length":
                # Still writing when the limit stopped it: a block read from it may be a draft inside a reasoning the
                # teacher's chat template opened in the prompt (no <think> in the text, no </think> reached yet).
                problem = ("cut", f"finish_reason length: the output reached max_tokens {teacher.max_tokens} before "
                           "its end, so the verdict read from it may be a draft")
                continue
            verdict = parse_verdict(result.text, scale=scale, lenient=config.lenient)
            problem = unusable_verdict(verdict, scale, result.text, config.lenient)
            if problem is None:
                return {"raw_outputs": raw_outputs, "ok": True, "score": verdict.score, "feedback": verdict.feedback,
                        "max_tokens": teacher.max_tokens, "finish_reason": result.finish_reason, "attempts": attempt}
        error, reason = problem
        return {"raw_outputs": raw_outputs, "ok": False, "error": f"verdict_{error}", "reason": reason,
                "max_tokens": teacher.max_tokens, "attempts": config.max_attempts}

    journal = Journal(out_dir / "journal.jsonl")
    # A label an earlier version kept is asked again when this version would not keep it: its feedback holds a tag
    # (unusable_verdict), or its raw output, read again, is another verdict or none. A parser that cut the feedback
    # at a quoted </think> left no tag in it to see, and one that read a reasoning's draft kept the draft's score;
    # only the raw output shows either.
    from train.build_data import VERDICT_OR_THINK_TAG

    def stale(done: dict, record: dict) -> bool:
        if VERDICT_OR_THINK_TAG.search(str(done.get("feedback") or "")):
            return True
        raw = done.get("raw_outputs") or []
        if not raw or not isinstance(raw[-1], str):
            return False  # nothing to read again: the label stands as kept
        scale = scale_of(record["rubrics"])
        verdict = parse_verdict(raw[-1], scale=scale, lenient=config.lenient)
        if "finish_reason" not in done and read_tagged_verdict(raw[-1], scale, config.lenient,
                                                               "length").error == VerdictError.CUT:
            # kept before finish_reason was journalled, from an output that may have been cut mid-reasoning after
            # a drafted block (text after its last [END]): asked again once, since the journal cannot tell
            return True
        return (unusable_verdict(verdict, scale, raw[-1], config.lenient) is not None
                or verdict.score != done.get("score")
                or verdict.feedback != done.get("feedback"))

    asked = [(key, record) for key, record in items if key not in forging]
    redo = [key for key, record in asked if key in journal and journal.rows[key].get("ok") is True
            and stale(journal.rows[key], record)]
    run_jobs(asked, work, journal, config.concurrency, "annotate", fingerprint=render_prompt_en, redo=redo,
             redo_why="whose kept feedback holds a verdict or <think> tag, or whose raw output reads as another "
             "verdict now or is more than one tagged block, or, kept without its finish_reason, may have been cut after a drafted block")

    kept, dropped = [], []
    for key, record in items:
        if key in forging:
            dropped.append({**record, "teacher": teacher.name, "prompt_version_en": PROMPT_VERSION_EN,
                            "teacher_raw": [], "attempts": 0, "drop_reason": "special_token_string",
                            "reason": f"the prompt holds {', '.join(forging[key])}, which the teacher's chat API "
                                      "would read as a control token (SFT reads it as text): not asked"})
            continue
        done = journal.rows[key]
        raw = done.get("raw_outputs") or []  # a hand-made or foreign journal row may carry none
        row = {**record, "teacher": teacher.name, "prompt_version_en": PROMPT_VERSION_EN, "teacher_raw": raw,
               # queries made: an oversized output counts but keeps no raw text (a row from before: its raw outputs)
               "attempts": done.get("attempts", len(raw))}
        if done.get("ok") is True and longer_than_asked(len((raw or [""])[-1] or ""),
                                            done.get("max_tokens") or teacher.max_tokens):
            # Kept by a version that did not look at its length: the label of an output the limit could not produce.
            dropped.append({**row, "drop_reason": "verdict_oversized", "reason": oversized})
        elif done.get("ok") is True:
            kept.append({**row, "criteria_score": done["score"], "expert_scores": [done["score"]], "expert_feedback": [done["feedback"]]})
        else:
            dropped.append({**row, "drop_reason": done.get("error") or "request_failed", "reason": done.get("reason")})
    return write_stage_outputs(out_dir, "annotate", kept, dropped, config, {
        "teacher": teacher.name, "input_answers": len(rows), "verdicts": len(every_item),
        "verdicts_beyond_limit": len(every_item) - len(items), **unusable_endpoints([client])})

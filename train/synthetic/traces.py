"""Stage traces: reasoning traces as training data, kept only when the teacher's score agrees with the experts.

    judge-train data traces --config configs/data/traces.yaml --input runs/data/split --output runs/data/traces
    judge-train data traces --config configs/data/traces.yaml --input my_records.jsonl --output runs/data/traces-mine \\
        --samples-per-item 8 --tolerance 0

A teacher that thinks and then answers a bare integer (the ``integer`` verdict format: judge-serve serving
``Pollux-4B-Judge``, or vLLM with any Qwen3-style model; any OpenAI-compatible chat endpoint) judges every training
item ``samples_per_item`` times. Each request is the Russian POLLUX judge prompt (``judge.render_prompt``) as the only
turn (``system_prompt`` is refused), what judge-serve renders for an integer-format judge judge-train exported, and
what the SFT rows hold (the released Pollux-4B-Judge is served its own template, one newline longer: the teacher is
asked with the student's prompt); the server's chat template adds the thinking
(judge-serve and vLLM's ``--reasoning-parser`` return the reasoning apart from the answer, other servers inline as
``<think>...</think>``). ``judge.parse_integer_verdict`` (the serving parser) reads every answer back.

This is rejection sampling, the first step of the reasoning-judge recipes (J1, JudgeLRM, RM-R1; 2025): a trace is
**kept** when its score agrees with the experts' reference for the item — by default the mode of their scores
(``agreement``), within ``tolerance`` points. An item whose experts have several modes is not asked
(``no_unique_mode: skip``, counted) or keeps a trace agreeing with any of them (``any``); GRPO's ``skip`` is not this
one: it keeps such items for its format reward (its ``drop`` leaves them out). Every trace is counted
under one reason:

- kept: the score agrees (at most ``max_kept_per_item`` per item, in sample order; the rest ``over_item_cap``);
- dropped (a verdict was read, but it is no training example): ``disagrees``, ``answer_not_bare`` (the answer after
  the reasoning is more than an integer: the serving parser reads the last one, and "Оценка 1 из 2" is read as 2
  while the trace argued for 1; a second reasoning block, which the trace would leave out, too), ``out_of_scale``
  (an integer outside the rubric's range), ``score_not_a_level`` (an integer between the rubric's levels: 2 on
  levels 0, 1, 3), ``no_reasoning`` (an integer with no reasoning before
  it, or one under two words: ``judge.verdicts.gives_reasons``, the GRPO format reward's rule),
  ``think_tags_in_reasoning`` and ``not_russian`` (the seq2seq recipe's own filters, applied here before
  ``max_kept_per_item`` so that the cap counts only traces SFT trains on), ``duplicate_trace`` (an agreeing trace whose
  reasoning and integer an earlier sample of the item already gave: a seeded or greedy teacher answers the same
  prompt alike, and the copy would weigh the trace twice in SFT), ``over_item_cap``;
- failed (no verdict): ``request_failed`` (asked again by a rerun), ``request_refused`` (a 400, 413 or 422,
  ``REFUSED_STATUSES``: the server's answer to the request, a prompt past its context or a body it cannot take,
  which a server or proxy set up otherwise may accept; asked again by every rerun, as it cost no tokens) and
  ``verdict_<parse error>`` (``verdict_unclosed_think`` for an answer
  cut inside its reasoning, ``verdict_no_score``, ``verdict_empty`` for nothing, or nothing after a reasoning the
  teacher ended itself: ``finish_reason`` ``stop``, a larger ``max_tokens`` would not change it), and ``verdict_cut``
  (the reasoning closed, but the answer stopped at ``max_tokens``: ``finish_reason`` ``length``, whether an integer
  was read from it or none yet), and
  ``turn_not_ended`` (any other reported ``finish_reason``: ``abort``, ``content_filter``, ``tool_calls``; the
  teacher did not end its turn, so the integer read may not be its verdict; an ``abort``, the server's doing, is
  asked again by a rerun), and ``verdict_oversized`` (an answer
  longer than the request's ``max_tokens`` could have produced, ``CHARS_PER_TOKEN`` characters a token, or a
  reasoning returned apart longer than its own cap: ``train.synthetic.client.longer_than_asked``; a server that
  ignored the limit, whatever ``finish_reason`` it reports). A failure is never a score.

The k requests of an item send the same prompt; a teacher configured with a ``seed`` (``extra_body: {seed: s}``) is
asked sample ``i`` with seed ``s + i``, so that its k samples can differ (one seed for all k returns one trace k
times). ``limit`` counts items: ``--limit N`` asks the first N items, ``N x samples_per_item`` requests; the items
past it are counted in summary.json (``items_beyond_limit``), as are the input's exact duplicate rows, which the
loader leaves out (``duplicate_input_rows``), so that ``input_rows`` is their sum with ``items`` and ``skipped_items``.

Items are refused as training data exactly as ``judge-train build-data`` refuses them
(``train.build_data.load_training_records``: rows in the released benchmark's schema; ``zero_shot_records``: the
Zero-Shot test), and rows of this stage's own output are refused (``refuse_traces_rows``). Rows that render one
prompt are one item, their experts' scores pooled (``pooled_by_prompt``: the item of the smallest id stands for them;
the others counted ``duplicate_prompt``).
Items not asked (``zero_shot`` with ``drop``, ``no_unique_mode``, ``no_expert_scores``, ``special_token_string``
(the prompt holds one of ``judge.chat_tokens.SPECIAL_TOKEN_STRINGS``, the list GRPO drops prompts by),
``tolerance_admits_every_level`` (every level of the rubric within ``tolerance`` of the reference: nothing would be
rejected), ``references_cover_every_level`` (tied modes that are every level, under ``no_unique_mode: any``),
``too_many_experts`` (a pooled panel past a record's bound on experts), ``no_scale``, ``score_out_of_scale`` /
``score_not_a_level`` for an expert's score off the rubric or between its levels, as GRPO drops such an item, and
``reference_not_a_level``: a ``median`` or ``mean`` reference between the rubric's levels with none within
``tolerance``, which no integer could agree with) are counted per item. The mode is
the paper's reference (arXiv 2505.24616v3, Appendix D.2.1, where the judge's MAE is taken against the experts' mode);
``median`` and ``mean`` are options beside it, and either may be a level no expert gave (experts 0 and 2: 1).

The folder (``train.synthetic.journal``): ``journal.jsonl`` (one raw teacher answer per (item, sample); a rerun with
the same output folder asks only what is missing, failed, or whose prompt changed, and re-decides everything from the
journal, so changing ``tolerance`` and rerunning costs no request (under ``median`` or ``mean``, save for the items a
larger one brings within reach of a level, asked then for the first time); every row records the teacher's
``max_tokens`` it was asked with, and a rerun with a larger one asks again only the answers cut by the smaller
(``cut_by_max_tokens``; a row from before rows recorded it, once), counted as ``cut_traces_asked_again``; changing
``agreement`` asks only for the items the old setting did not ask: from ``mode`` to ``median`` or ``mean``, those
whose experts have no unique mode, skipped under ``no_unique_mode: skip``, unless their reference is not a level),
``traces.jsonl`` (kept traces), ``dropped.jsonl``, ``failed.jsonl``, ``skipped.jsonl`` (items not asked),
``dataset/``, ``summary.json`` (the counts by reason) and ``run.json``. A kept row is the item's POLLUX record (its
experts' scores unchanged) with ``id`` ``<item id>#<sample>``, ``item_id``, ``reasoning`` (the trace) and
``reasoning_score`` (its integer), and the rule it was kept by (``experts_reference``, ``agreement``,
``tolerance``): the rows the seq2seq recipe trains on with ``verdict_format: integer``
(``train.seq2seq.integer_rows``), by that rule wherever they are copied.

Why one module of ~620 lines: which items are asked, how each answer is decided and the run that journals them
apply one agreement rule and write one set of row keys (``STAGE_KEYS``); ``train.seq2seq.integer_rows`` calls the
decision on every trace it trains, so the rule has one home.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from judge.chat_tokens import special_token_strings_in
from judge.verdicts import bare_answer, has_think_tag
from train.synthetic.client import (CHARS_PER_TOKEN, ChatClient, EndpointWatch, generator_seed, job_seed,
                                    longer_than_asked, seed_suffix, unusable_endpoints)
from train.synthetic.config import EndpointConfig, TracesConfig
from train.synthetic.journal import (REFUSED_PREFIX, Journal, log, refused_request, request_failed, run_jobs,
                                     write_stage_outputs)

__all__ = ["experts_reference", "within_tolerance", "every_level_reason", "EVERY_LEVEL_REASONS", "reference_within_reach", "bare_answer", "trace_outcome",
           "cut_by_max_tokens", "ask_again_for_max_tokens", "training_records", "run_traces", "MIN_RUSSIAN_SHARE",
           "CHARS_PER_TOKEN", "longer_than_asked", "REFUSED_STATUSES", "STAGE_KEYS", "POOLED_KEY", "own_record",
           "tolerance_admits_every_level", "refuse_traces_rows", "pooled_by_prompt"]

#: The least Cyrillic share of a kept trace's letters: the seq2seq recipe's default ``min_russian_share``
#: (``train.config.TrainConfig``), so that a trace kept here is one SFT trains on.
MIN_RUSSIAN_SHARE = 0.5
#: Slack on ``|score - reference| <= tolerance``: a mean is a float, and experts 1, 1, 1 and seven 2s give 1.7,
#: from which 2 lies 0.30000000000000004 away, past a tolerance of 0.3 by a rounding error. Scores and levels are
#: integers and experts few, so no distance they give lies this close past a tolerance unless meant to equal it.
_ROUNDING = 1e-9
def within_tolerance(score: float, reference: float, tolerance: float) -> bool:
    """``|score - reference| <= tolerance``, as the rule reads in exact arithmetic (see ``_ROUNDING``)."""
    return abs(score - reference) <= tolerance + _ROUNDING


def experts_reference(scores, agreement: str) -> tuple[float, ...]:
    """The values a trace's score is compared with: every mode of the experts' scores (one when the mode is
    unique), or their median, or their mean.

    Args:
        scores: the non-abstaining experts' scores (``JudgeRecord.expert_scores``), not empty.
        agreement: ``mode``, ``median`` or ``mean``.

    Returns:
        The reference values, ascending (several only for ``mode`` with tied counts).
    """
    values = [float(score) for score in scores]
    if agreement == "mode":
        return tuple(sorted(statistics.multimode(values)))
    if agreement == "median":
        return (float(statistics.median(values)),)
    if agreement == "mean":
        return (statistics.fmean(values),)
    raise ValueError(f"agreement must be mode, median or mean, got {agreement!r}")


def reference_within_reach(scale, references: tuple[float, ...], tolerance: float) -> bool:
    """Whether an integer verdict on ``scale`` could agree with ``references``: some level lies within ``tolerance``
    of one of them. A mode is always a level (an expert's score, on the rubric); a median or mean need not be: the
    experts' 1 and 2 give 1.5, which at the default tolerance 0 no trace can equal, so every request for the item
    would be paid for and dropped as ``disagrees``.
    """
    return any(within_tolerance(level, reference, tolerance) for level in scale.levels for reference in references)


def trace_outcome(done: dict, scale, references: tuple[float, ...], tolerance: float, *,
                  min_russian_share: float = MIN_RUSSIAN_SHARE, max_tokens: int | None = None):
    """Decide one journalled teacher answer.

    Args:
        done: the journal row (``ok``, ``content``, ``reasoning``, ``finish_reason``, ``error``).
        scale: the criterion's ``judge.Scale`` (oriented, as build-data reads it).
        references: ``experts_reference``'s values for the item.
        tolerance: the largest |score - reference| that agrees.
        min_russian_share: the least Cyrillic share of the reasoning's letters (``train.build_data.russian_share``),
            the seq2seq recipe's rule: a trace below it is dropped (``not_russian``) before it can take a place.
        max_tokens: the limit the answer was asked with when its row does not record one (``longer_than_asked``).

    Returns:
        ``(outcome, reason, verdict)``: outcome ``kept``, ``dropped`` or ``failed``; reason ``agrees`` or the drop or
        failure reason; the parsed ``judge.Verdict`` (None when the request failed).
    """
    from judge import VerdictError, VerdictFormat
    from judge.verdicts import failed_by_the_cut, gives_reasons, read_served_verdict
    from train.build_data import russian_share

    if str(done.get("error") or "").startswith("verdict_oversized"):
        # The client refused an answer longer than max_tokens allows (train.synthetic.client.longer_than_asked)
        return "failed", "verdict_oversized", None
    if refused_request(done):
        return "failed", "request_refused", None  # the server refused the request (400, 413, 422)
    if done.get("ok") is not True or request_failed(done):  # the latter: an answer journalled that is not text, asked again
        return "failed", "request_failed", None
    # .get: a hand-made or foreign journal row may lack a field; it reads as an empty answer, a failure counted
    content, reasoning = done.get("content") or "", done.get("reasoning") or ""
    if longer_than_asked(len(content), done.get("max_tokens") or max_tokens, len(reasoning)):
        # More text than max_tokens allows: the server did not generate under the limit it was asked with, so its
        # integer and its reasoning are not the teacher's answer to this request. No verdict is read from it.
        return "failed", "verdict_oversized", None
    finish = done.get("finish_reason")
    # Read as every serving route reads an answer: a reasoning apart with no answer after it and the teacher's turn
    # ended (stop) is empty, not unclosed_think, whose advice (a larger max_tokens) would give no verdict. "length"
    # is not passed: read_served_verdict would fail a readable integer as cut, where the stage names the cut itself
    # (verdict_cut, below) and keeps the integer read in the row.
    verdict = read_served_verdict(VerdictFormat.INTEGER, content, reasoning=reasoning, scale=scale,
                                  finish_reason=None if finish == "length" else finish)
    if not verdict.ok:
        if finish == "length" and verdict.error != VerdictError.UNCLOSED_THINK:
            # The limit stopped the answer (before its first character, or inside "Оценка:" before its integer): the
            # teacher did not end it, so no verdict is missing from it but the one the cut kept back. verdict_cut, as
            # a cut answer that did parse; one cut inside its reasoning keeps its own name, unclosed_think. The row
            # keeps the failure every serving route gives it (cut, the parser's reading in its reason: the one rule,
            # judge.verdicts.failed_by_the_cut, on the verdict read above).
            return "failed", "verdict_cut", failed_by_the_cut(verdict, finish)
        return "failed", f"verdict_{verdict.error}", verdict
    if finish not in (None, "", "stop", "length"):
        # Aborted, filtered or turned into a tool call: the teacher never ended its turn, and the integer read is
        # wherever the generation stopped. ("" or None: an endpoint, or a row journalled, that does not report it.)
        return "failed", "turn_not_ended", verdict
    if finish == "length":
        # Cut by max_tokens after its reasoning closed: the integer read is wherever the cut fell (a "1" of "10", the
        # first digit of an answer still being written), not the teacher's verdict.
        return "failed", "verdict_cut", verdict
    if not bare_answer(content, reasoning):
        return "dropped", "answer_not_bare", verdict
    if not verdict.in_scale:
        return "dropped", "out_of_scale", verdict
    if not scale.is_level(verdict.score):
        return "dropped", "score_not_a_level", verdict
    if not gives_reasons(verdict.feedback):
        return "dropped", "no_reasoning", verdict
    # The seq2seq recipe's filters (train.seq2seq.integer_rows), here too: a trace it would drop must not take one
    # of the item's max_kept_per_item places from one it trains on.
    if has_think_tag(verdict.feedback):
        return "dropped", "think_tags_in_reasoning", verdict
    if russian_share(verdict.feedback) < min_russian_share:
        return "dropped", "not_russian", verdict
    if not any(within_tolerance(verdict.score, reference, tolerance) for reference in references):
        return "dropped", "disagrees", verdict
    return "kept", "agrees", verdict


def cut_by_max_tokens(done: dict, scale) -> bool:
    """Whether a journalled teacher answer was cut by the token limit: ``finish_reason`` ``length`` (``verdict_cut``,
    or a ``verdict_...`` failure the cut caused), or, in a row that reports no ``finish_reason`` (journalled before it
    was, or a server that leaves it out), an answer cut inside its reasoning (``verdict_unclosed_think``).

    An unclosed reasoning the server reports as ``stop`` ended on its own: a larger ``max_tokens`` would not finish
    it, so it is not counted cut. A failed request is no answer (``request_failed`` asks it again anyway).
    """
    if done.get("ok") is not True or request_failed(done):
        return False
    if done.get("finish_reason") == "length":
        return True
    if done.get("finish_reason"):
        return False
    return trace_outcome(done, scale, (), 0.0)[1] == "verdict_unclosed_think"


def ask_again_for_max_tokens(done: dict, scale, max_tokens: int) -> bool:
    """Whether a rerun asking with ``max_tokens`` asks a journalled answer again: it was cut by the limit
    (``cut_by_max_tokens``) and asked with a smaller ``max_tokens`` than now. Asked with as many or more, it would be
    paid for again to be cut again, and is not. A row from before rows recorded their ``max_tokens`` has no limit to
    compare: a cut one is asked again once, after which it records this run's.
    """
    if not cut_by_max_tokens(done, scale):
        return False
    asked_with = done.get("max_tokens")
    return asked_with is None or asked_with < max_tokens


#: Statuses that are the server's answer to a request rather than an outage (a prompt past its context, a body it or
#: a proxy cannot take): journalled ``refused_<status>`` and counted ``request_refused``, not in the warning that a
#: rerun recovers failed requests. The remedy is on the server's side (a larger context, a proxy's body limit), and
#: the run key leaves the server out, so every rerun asks them again: no tokens were generated, a refusal costs
#: nothing to ask (counted ``refused_traces_asked_again``). 401, 403 and 404 (a key or model name wrong) stay failed
#: requests, which a rerun after the fix asks again.
REFUSED_STATUSES = (400, 413, 422)


def own_record(record) -> dict:
    """``record.to_dict()`` without this stage's keys (``STAGE_KEYS``): what a row of this run starts from."""
    return {key: value for key, value in record.to_dict().items() if key not in STAGE_KEYS}


def tolerance_admits_every_level(scale, references: tuple[float, ...], tolerance: float) -> bool:
    """Whether every level of ``scale`` lies within ``tolerance`` of a reference: tolerance 1 on a 0/1 rubric, or on
    0..2 around a mode of 1. Rejection sampling then rejects no verdict that parses."""
    return all(any(within_tolerance(level, reference, tolerance) for reference in references)
               for level in scale.levels)


#: The reasons an item is skipped unchecked, every verdict that parses agreeing (``every_level_reason``).
EVERY_LEVEL_REASONS = ("tolerance_admits_every_level", "references_cover_every_level")


def every_level_reason(scale, references: tuple[float, ...], tolerance: float) -> str | None:
    """Why no trace of this item can be checked against its label (None: one can): every level of ``scale`` agrees
    under ``tolerance``. Tied modes that are every level (experts 0 and 1 on a 0/1 rubric, under no_unique_mode:
    any) do it at any tolerance: their own reason, whose remedy is not a smaller tolerance."""
    if not tolerance_admits_every_level(scale, references, tolerance):
        return None
    covered = tolerance_admits_every_level(scale, references, 0.0)
    return EVERY_LEVEL_REASONS[1] if covered else EVERY_LEVEL_REASONS[0]


#: The keys the traces stage writes on its rows (kept, dropped, failed, skipped) beside the item's POLLUX record:
#: left out of the record it copies, so that an input row's own never land on a row of this run. Not ``teacher``,
#: which an annotated row holds for the teacher that labelled it (a row of this run names its own over it).
STAGE_KEYS = ("item_id", "trace_index", "prompt_version", "experts_reference", "agreement", "tolerance",
              "teacher_content", "finish_reason", "reasoning", "reasoning_score", "drop_reason", "fail_reason",
              "skip_reason", "error")
#: The ids of the items whose experts' scores a kept row's ``expert_scores`` pools with its own (one prompt).
POOLED_KEY = "pooled_item_ids"


def refuse_traces_rows(records, source: str) -> None:
    """Refuse a row of this stage's own output as its input: a kept trace (``reasoning``, ``reasoning_score`` and
    ``item_id``) would be asked again as an item of its own, one prompt once per kept trace, and a dropped or failed
    row (a ``drop_reason`` or ``fail_reason`` with a value: this stage's dropped.jsonl or failed.jsonl, or another
    stage's dropped.jsonl) would carry it onto a kept row, which SFT then drops. An empty or null one is no mark:
    ``train.seq2seq.integer_rows`` trains such a row too.

    Raises:
        judge.RecordError: naming the file, the row and the keys that mark it.
    """
    from judge import RecordError
    from train.synthetic.journal import STAGE_ROW_MARKS

    for position, record in enumerate(records):
        marks = STAGE_ROW_MARKS["traces"]
        if all(mark in record.extra for mark in marks):
            what, held = "a row of the traces stage's output", marks
        else:
            what, held = ("a dropped or failed row of a judge-train data stage",
                          [key for key in ("drop_reason", "fail_reason") if record.extra.get(key)])
        if held:
            where, row = record.origin or (source, position)
            raise RecordError(where, row, None, f"{what} (it holds {', '.join(held)}): the traces stage reads the "
                              "split stage's output (train.jsonl) or records of your own")


def pooled_by_prompt(records) -> tuple[list, list, int]:
    """One record per rendered judge prompt, as ``train.grpo.grpo_rows`` pools them: two answer models writing the
    same answer to one instruction are one item to the judge, and asking each apart would pay for the prompt twice
    and train it on each row's own label (2 from one, 1 from the other) where GRPO's reference pools them.

    A record is its own item, or the ``item_id`` it names: a copy of an item already pooled carries its panel again,
    and adds none. The prompt's item is the one of the smallest item id (and of those records the smallest id),
    ``train.build_data.records_by_prompt``, as GRPO's: the journal keys ``<item id>#<sample>`` and the kept rows' ids do not depend on the input's order, so a
    rerun on the rows reordered reuses the journal (an item of a smaller id joining the prompt is asked anew).

    Returns:
        (records, skipped, n_pooled_panels): a record per prompt, whose experts' scores are those of every item of
        the prompt in item-id order (its ``POOLED_KEY`` names the others); ``(record, reason)`` for the records not
        asked on their own, ``duplicate_prompt`` (the prompt's other records) or ``too_many_experts`` (the prompt's
        item when the pooled panel holds more than ``judge.records.MAX_EXPERTS_PER_ITEM`` scores, more than a
        record may carry: its skipped row names the items pooled); and how many items' panels joined another's.
    """
    import judge
    from judge.records import MAX_EXPERTS_PER_ITEM

    from train.build_data import records_by_prompt

    groups: dict[str, list] = {}  # prompt -> its records, in input order (the skipped rows' order)

    def render(record) -> str:
        prompt = judge.render_prompt(record)
        groups.setdefault(prompt, []).append(record)
        return prompt

    panels = records_by_prompt(records, render)
    kept, skipped, n_pooled = [], [], 0
    for prompt, group in groups.items():
        ordered = panels[prompt]
        first, rest = ordered[0], ordered[1:]
        skipped += [(record, "duplicate_prompt") for record in group if record is not first]
        if not rest:
            kept.append(first)
            continue
        n_pooled += len(rest)
        rows = [record.to_dict() for record in ordered]
        source, index = first.origin or ("<records>", 0)
        if sum(len(r["expert_scores"]) for r in rows) > MAX_EXPERTS_PER_ITEM:
            skipped.append((judge.JudgeRecord.from_row({**rows[0], POOLED_KEY: [record.id for record in rest]},
                                                       source=source, index=index), "too_many_experts"))
            continue
        row = {**rows[0], "expert_scores": [score for r in rows for score in r["expert_scores"]],
               "criteria_score": None, POOLED_KEY: [record.id for record in rest]}  # fmt: skip
        feedback = [r.get("expert_feedback") or [None] * len(r["expert_scores"]) for r in rows]
        row["expert_feedback"] = [text or "" for texts in feedback for text in texts] if any(
            r.get("expert_feedback") for r in rows) else None
        experts = [expert for r in rows for expert in (r.get("expert_ids") or [None] * len(r["expert_scores"]))]
        row.pop("expert_ids", None)
        if None not in experts and len(set(experts)) == len(experts):  # one expert on two items: one panel, unnamed
            row["expert_ids"] = experts
        kept.append(judge.JudgeRecord.from_row(row, source=source, index=index))
    return kept, skipped, n_pooled


def training_records(input_path: str | Path, config: TracesConfig, counts: dict | None = None):
    """The items to ask about, refused or filtered exactly as build-data does, with why the others are not asked.

    A folder holding ``train.jsonl`` (the split stage's output) is read through that file.

    Args:
        counts: when given, filled with the input rows no item stands for, which summary.json counts so that every
            row read is accounted for: ``input_rows`` (read), ``duplicate_input_rows`` (exact copies of an earlier
            row, which the loader leaves out) and ``items_beyond_limit`` (left out by ``limit``).

    Returns:
        (items: list of (record, scale, references), skipped: list of (record, reason)).

    Raises:
        train.build_data.BenchmarkRowsError: rows in the released benchmark's schema (unless allowed).
        judge.LeakageError: Zero-Shot items with ``zero_shot: refuse``.
    """
    import judge
    from train.build_data import load_training_records_report, scores_off_the_rubric, zero_shot_records
    from train.config import SAMPLE_DATA

    source = Path(input_path)
    if source.is_dir() and (source / "train.jsonl").is_file():
        source = source / "train.jsonl"
    # With its report: summary.json counts the input rows and the exact duplicates the loader left out.
    records, load_report = load_training_records_report(
        SAMPLE_DATA if str(input_path) == SAMPLE_DATA else str(source),
        allow_benchmark_rows=config.allow_benchmark_rows)
    refuse_traces_rows(records, str(source))
    records, held_out = zero_shot_records(records, config.zero_shot, config.zero_shot_split())
    skipped = [(record, "zero_shot") for record in held_out]
    records, not_pooled, n_pooled = pooled_by_prompt(records)
    skipped += not_pooled
    items = []
    for record in records:
        # A chat API parses such a string in the user text as a control token (a forged turn the teacher answers
        # under), where SFT and judge-serve read it as text: the list GRPO drops its prompts by too.
        if special_token_strings_in(judge.render_prompt(record)):
            skipped.append((record, "special_token_string"))
            continue
        if not record.expert_scores:
            skipped.append((record, "no_expert_scores"))
            continue
        try:
            scale = judge.oriented_scale(record.criteria_name, record.rubrics)
        except judge.ScaleError:
            skipped.append((record, "no_scale"))
            continue
        # An expert's score off the rubric has no level a trace could equal, and it would pull a median or mean.
        off_rubric = scores_off_the_rubric(scale, record.expert_scores)
        if off_rubric is not None:
            skipped.append((record, off_rubric))
            continue
        references = experts_reference(record.expert_scores, config.agreement)
        if len(references) > 1 and config.no_unique_mode == "skip":
            skipped.append((record, "no_unique_mode"))
            continue
        if not reference_within_reach(scale, references, config.tolerance):
            skipped.append((record, "reference_not_a_level"))
            continue
        if (why := every_level_reason(scale, references, config.tolerance)) is not None:
            # Every verdict that parses would agree: no trace is rejected, one arguing against the label included.
            skipped.append((record, why))
            continue
        items.append((record, scale, references))
    beyond_limit = max(0, len(items) - config.limit) if config.limit else 0
    if config.limit:
        items = items[: config.limit]
    if counts is not None:
        counts.update(input_rows=load_report.n_rows, duplicate_input_rows=load_report.n_duplicates,
                      items_beyond_limit=beyond_limit,
                      n_pooled_panels=n_pooled)
    return items, skipped


def run_traces(config: TracesConfig, input_path: str | Path, out_dir: Path) -> dict:
    """Run the traces stage on the records at ``input_path`` into ``out_dir`` (resumable). Returns the summary."""
    from judge import PROMPT_VERSION, render_prompt

    config.check_runnable()  # a teacher configured (also checked before the CLI claims the folder)
    teacher = EndpointConfig(**config.teacher)
    input_counts: dict = {}
    items, skipped = training_records(input_path, config, input_counts)
    k = config.samples_per_item
    # The k samples of an item send one prompt: sample i is asked with the configured seed + i (job_seed), so they
    # can differ; a teacher with no seed keeps its body.
    seed = generator_seed(teacher)
    client = ChatClient(teacher, config.max_retries, config.backoff_s, config.timeout_s,
                        retry_wait_budget_s=config.retry_wait_budget_s,
                        watch=EndpointWatch(teacher, "teacher", config.concurrency))
    jobs = [(f"{record.id}#{sample}", (record, sample)) for record, _, _ in items for sample in range(k)]
    limited = f" (--limit {config.limit})" if config.limit else ""
    # the requests a fresh run sends; a resumed one says below (run_jobs) how many its journal answered
    log(f"traces: {len(jobs)} traces ({len(items)} items{limited} x {k} samples: {len(jobs)} requests) from "
        f"{teacher.name}; {len(skipped)} items not asked -> {out_dir}")

    def work(job) -> dict:
        record, sample = job
        result = client.complete(render_prompt(record), system=config.system_prompt, seed=job_seed(seed, sample))
        # The limit it was asked with: a rerun with a larger one asks again the answers this one cut.
        row = {"ok": result.ok, "content": result.text, "reasoning": result.reasoning,
               "finish_reason": result.finish_reason, "error": result.error, "attempts": result.attempts,
               "max_tokens": teacher.max_tokens}
        if result.oversized:
            # The teacher's answer, not an outage (the client kept none of its text): final, as a verdict that does
            # not parse is, where a failed request is asked again.
            row["error"] = f"verdict_{result.error}"
        elif result.status in REFUSED_STATUSES:
            # The server's answer to this request (too long for its context, a body it cannot take), not an outage:
            # request_refused, not request_failed; every rerun asks it again (below), since a server set up otherwise
            # may take it and asking costs no tokens.
            row["error"] = f"{REFUSED_PREFIX}{result.status}: {result.error}"
        return row

    def request(job) -> str:
        # What a journalled answer was asked with: the prompt, and a sample's own seed when it is not the configured
        # one, so that a journalled answer asked under another seed than its sample's is asked again with its own.
        record, sample = job
        return render_prompt(record) + seed_suffix(seed, sample)

    journal = Journal(out_dir / "journal.jsonl")
    # max_tokens is a cap, not part of an answer (train.synthetic.cli.UNKEYED_CAPS): an answer that finished under
    # a lower one is the same answer under a higher one, and only those it cut can change. Raising it asks those
    # again, through run_jobs's own re-asking, where the newer row wins.
    scales = {record.id: scale for record, scale, _ in items}
    cut = [key for key, (record, _) in jobs
           if key in journal and ask_again_for_max_tokens(journal.rows[key], scales[record.id], teacher.max_tokens)]
    # An answer the server aborted (finish_reason abort: a restart, a cancelled request) is no verdict of the
    # teacher's: asked again, as a request that failed is.
    aborted = [key for key, _ in jobs if key in journal and journal.rows[key].get("finish_reason") == "abort"]
    # A refusal is asked again on every rerun: its remedy is the server's (a larger context, a proxy's body limit),
    # which the run key does not see, and a refused request generated no tokens.
    refused = [key for key, _ in jobs if key in journal and refused_request(journal.rows[key])]
    why = [f"whose answer a smaller max_tokens cut (now {teacher.max_tokens})"] if cut else []
    why += ["whose answer the server aborted"] if aborted else []
    why += ["the server refused (400, 413, 422)"] if refused else []
    run_jobs(jobs, work, journal, config.concurrency, "traces", fingerprint=request, redo=[*cut, *aborted, *refused],
             redo_why=" or ".join(why))

    kept, dropped, failed = [], [], []
    items_kept = items_all_failed = 0
    for record, scale, references in items:
        n_kept = n_failed = 0
        traces_kept = set()  # (reasoning, integer) of the item's agreeing traces so far
        for sample in range(k):
            key = f"{record.id}#{sample}"
            done = journal.rows[key]
            outcome, reason, verdict = trace_outcome(done, scale, references, config.tolerance,
                                                       min_russian_share=config.min_russian_share,
                                                       max_tokens=teacher.max_tokens)
            if outcome == "kept":
                # The same trace twice is one training example weighed twice, whatever the teacher was asked with
                # (a seeded or greedy one answers a prompt alike): dropped as a duplicate, the cap left for new ones.
                trace = (verdict.feedback.strip(), verdict.score)
                if trace in traces_kept:
                    outcome, reason = "dropped", "duplicate_trace"
                else:
                    traces_kept.add(trace)
            if outcome == "kept" and config.max_kept_per_item and n_kept >= config.max_kept_per_item:
                outcome, reason = "dropped", "over_item_cap"
            # The rule it was judged by (the references, the agreement that gave them, the tolerance) goes with every
            # row: a kept row copied away from summary.json (dataset/, or a file of its own) trains by it still.
            row = {**own_record(record), "id": key, "item_id": record.id, "trace_index": sample,
                   "teacher": teacher.name, "prompt_version": PROMPT_VERSION, "experts_reference": list(references),
                   "agreement": config.agreement, "tolerance": float(config.tolerance),
                   "teacher_content": done.get("content"),
                   # .get: a row journalled before finish_reason was (trace_outcome reads it as not cut) is resumed
                   "finish_reason": done.get("finish_reason")}  # fmt: skip
            if verdict is not None:
                row["reasoning"] = verdict.feedback
                row["reasoning_score"] = None if verdict.score is None else int(verdict.score)
            if outcome == "kept":
                n_kept += 1
                kept.append(row)
            elif outcome == "dropped":
                dropped.append({**row, "drop_reason": reason})
            else:
                n_failed += 1
                why = done.get("error") or (verdict.reason if verdict else "")
                if reason == "verdict_oversized" and done.get("ok") is True:  # journalled before the client bound it
                    why = (f"{len(done.get('content') or '')} characters of answer and "
                           f"{len(done.get('reasoning') or '')} of reasoning, more than max_tokens "
                           f"{done.get('max_tokens') or teacher.max_tokens} x {CHARS_PER_TOKEN} allows "
                           "(train.synthetic.client.longer_than_asked)")
                failed.append({**row, "fail_reason": reason, "error": why})
        items_kept += n_kept > 0
        # No verdict from any of its k samples: the item is missing from the traces for want of a verdict, not because
        # the teacher disagreed. A rerun recovers only the failures it asks again (request_failed, an aborted answer,
        # a refused request, with a larger max_tokens a cut one), not a verdict that did not parse.
        items_all_failed += n_failed == k

    skipped_rows = [{**own_record(record), "skip_reason": reason} for record, reason in skipped]
    extra = {
        "teacher": teacher.name,
        "prompt_version": PROMPT_VERSION,
        "samples_per_item": k,
        "agreement": config.agreement,
        "tolerance": config.tolerance,
        "no_unique_mode": config.no_unique_mode,
        "items": len(items),
        # Every input row is an item asked, an item skipped (skipped_items), a copy left out or an item past --limit.
        **input_counts,
        "items_with_a_kept_trace": items_kept,
        "items_without_a_kept_trace": len(items) - items_kept,
        "items_every_trace_failed": items_all_failed,
        "traces": len(jobs),
        "failed": len(failed),
        "failed_by_reason": dict(sorted(Counter(row["fail_reason"] for row in failed).items())),
        "cut_traces_asked_again": len(cut),
        "aborted_traces_asked_again": len(aborted),
        "refused_traces_asked_again": len(refused),
        "skipped_items": len(skipped),
        "skipped_items_by_reason": dict(sorted(Counter(reason for _, reason in skipped).items())),
        **unusable_endpoints([client]),
    }
    admits_all = sum(reason == "tolerance_admits_every_level" for _, reason in skipped)
    if admits_all:
        log(f"traces: warning: {admits_all} items not asked (tolerance_admits_every_level): tolerance "
            f"{config.tolerance} lets every level of their rubric agree with the experts, so no trace would be "
            "rejected; a tolerance below the gap between levels (0: the reference exactly) asks them")
    covered = sum(reason == "references_cover_every_level" for _, reason in skipped)
    if covered:
        log(f"traces: warning: {covered} items not asked (references_cover_every_level): their experts' tied modes "
            "are every level of their rubric, so under no_unique_mode: any no trace would be rejected at any "
            "tolerance; no_unique_mode: skip counts them as no_unique_mode instead")
    if jobs and not kept:
        # A stage that exits 0 says no more than that it finished: the SFT step after it finds no traces to train on
        reasons = Counter(row["fail_reason"] for row in failed) + Counter(row["drop_reason"] for row in dropped)
        log(f"traces: warning: no trace kept of the {len(jobs)} asked "
            f"({', '.join(f'{reason} {n}' for reason, n in reasons.most_common())}): the integer-format SFT step has "
            "nothing to train on; failed.jsonl and dropped.jsonl hold each answer with its reason")
    return write_stage_outputs(out_dir, "traces", kept, dropped, config, extra,
                               extra_files={"failed.jsonl": failed, "skipped.jsonl": skipped_rows})

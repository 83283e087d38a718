"""Seq2seq judge recipe: fine-tune a causal LM to write ``[FEEDBACK] rationale [RESULT] score [END]``.

    judge-train --config configs/train/tiny/seq2seq.yaml                       # CPU, a minute or two
    judge-train --config configs/train/t-lite/seq2seq.yaml --output_dir runs/t-lite-seq2seq
    accelerate launch --num_processes 8 -m train.cli --config configs/train/t-lite/seq2seq.yaml   # 8 GPUs
    torchrun --nproc_per_node 8 -m train.cli --config configs/train/t-lite/seq2seq.yaml          # the same

trl's ``SFTTrainer`` on a pre-tokenized prompt-completion dataset (``sft_dataset``): the user turn is the Russian
POLLUX judge prompt (``judge.render_prompt``) and the assistant turn the target (``judge.render_target``), both
rendered through the base model's own chat template, exactly as ``judge.apply_chat`` renders them at serving time,
and tokenized as judge-serve tokenizes the prompt (``judge.chat_tokens.chat_ids``: a special-token string in an
answer is the characters it is, never a turn of its own). ``completion_only_loss`` puts the cross-entropy on the
assistant turn only, including the end-of-turn token after ``[END]`` (``<|im_end|>`` for Qwen2.5): a judge that
never learns to stop never writes ``[END]``. A template that opens ``<think>`` in its generation prompt whatever
``enable_thinking`` says (QwQ, DeepSeek-R1 distills) trains that prompt, then ``</think>`` closing the empty reasoning
block and the target: judge-serve sends that prompt and reads the verdict after the block's close.

With ``verdict_format: integer`` the judge learns ``Pollux-4B-Judge``'s format instead: the assistant turn is
``<think>\\n{reasoning}\\n</think>\\n\\n{score}`` (``integer_target``), rendered with the chat template's thinking left
on, exactly as judge-serve prompts an integer-format judge (``judge.apply_chat(..., thinking=True)``); the loss
again covers the whole assistant turn through the end-of-turn token. A template that renders an assistant turn
without its reasoning (DeepSeek-R1 distills, QwQ) but opens ``<think>`` in its generation prompt trains that prompt
and what the judge writes after it; one that drops the reasoning otherwise is refused, never trained as the bare
integer. Its rows come from the reasoning traces of ``judge-train data traces`` (``integer_rows``), and the export's
manifest says ``verdict_format: integer`` and records the lengths it was trained within (``trained_lengths``), so
that judge-serve gives it room to reason.

Why one module of ~794 lines: it is the whole recipe of both verdict formats, which share one trainer and one
tokenization (``sft_examples``, with the chat templates whose text each format repairs); what the integer format
adds (its rows from reasoning traces and the rules that keep a trace, ~250 lines) is read with the step that trains
on it.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from typing import Any

import judge
from judge.checkpoints import TrainedLengths
from judge.plumbing.invisible_text import is_blank
from judge.plumbing.json_reading import counted
from judge.rewards import prompt_opens_reasoning
from judge.verdicts import bare_answer, gives_reasons, has_think_tag
from train.config import ConfigError, Seq2SeqConfig, agreement_rule_problem, zero_shot_split
from train.provenance import RunResult
from train.recipe_data import TrainingData, recorded_datasets
from train.recipe_steps import labelled_positions_only_on_cpu

__all__ = ["integer_rows", "integer_rows_for_config", "integer_target", "main", "sft_dataset", "sft_examples",
           "traces_agreement", "traces_settings_for_config", "trained_lengths", "training_data", "training_text",
           "holds_traces"]

logger = logging.getLogger(__name__)


def sft_examples(rows: list[dict[str, Any]], tokenizer, *, thinking: bool = False) -> list[dict[str, list[int]]]:
    """Each row's training ids as judge-serve tokenizes them, and which of them carry the loss.

    The text is the one trl rendered from a conversational row before (``judge.apply_chat``: one user turn, one
    assistant turn, thinking off, or left on for ``thinking``), but its ids are ``judge.chat_tokens.chat_ids``': only
    the chat template's own special tokens are special, and a special-token string in the prompt (an answer that
    writes ``<|im_end|>\\n<|im_start|>assistant\\n...``) or in the target is the characters it is, as judge-serve reads
    the prompt it sends. trl rendered the row to text and tokenized the whole text, so such an answer trained the
    judge on a forged turn it is never served. An ordinary row's ids are exactly trl's (pinned in
    tests/unit/test_train_seq2seq_tokens.py).

    ``completion_mask`` is what trl's own tokenization writes for a prompt-completion row (trl/trainer/sft_trainer.py,
    ``SFTTrainer._prepare_dataset``, ``tokenize_fn``): 0 over the longest common prefix of the prompt's ids (through
    the generation prompt) and the whole text's, 1 from there through the end-of-turn token and what the template
    writes after it. A judge that never learns to stop never writes ``[END]``. That prefix must be the prompt's ids
    whole: a generation prompt whose last token merges with the target's first (one ending ``assistant:`` before
    ``[FEEDBACK]``: ``:[`` is one token) would train a prompt judge-serve never sends, and is refused.

    With ``thinking`` the reasoning must be trained, where judge-serve prompts the judge to write it
    (:func:`_with_the_reasoning`): a template that drops it from a rendered assistant turn (DeepSeek-R1 distills,
    QwQ) but opens ``<think>`` in its generation prompt trains the generation prompt, the rest of the target and the
    template's end of turn; one that drops it and opens nothing is refused. Without ``thinking`` (the tagged format)
    a template that opens ``<think>`` in its generation prompt all the same (QwQ, R1 distills ignore
    ``enable_thinking``) trains that prompt, then the empty reasoning block judge-serve reads the verdict after
    (:func:`_after_an_empty_reasoning`); one whose rendered turn does not follow its generation prompt is refused.

    Raises:
        ConfigError: a row whose prompt the chat template does not keep verbatim (its user turn cannot be told from
            the template's text; ``judge.chat_tokens.unfit_template``), or whose generation prompt it tokenizes
            otherwise with the target after it; ``thinking``, and a chat template the integer
            format's reasoning cannot be trained through; or a chat template whose rendered assistant turn does not
            follow its generation prompt.
    """
    from judge.chat_tokens import chat_ids, chat_parts, generation_prompt_merged

    parts = []
    for row in rows:
        full, generation, completion = _training_texts(row, tokenizer, thinking)
        # a completion the template rewrote is read as the template's text (chat_parts); neither format's is, on the
        # Qwen templates (tests/unit/test_train_seq2seq_tokens.py)
        parts += [chat_parts(generation, row["prompt"]), chat_parts(full, row["prompt"], completion=completion)]
    ids = chat_ids(tokenizer, parts)
    examples = []
    for row, prompt_ids, full_ids in zip(rows, ids[::2], ids[1::2]):
        # trl's common_prefix_length (trl/data_utils.py) puts the completion where the two diverge: it must be all of
        # the prompt, or the prompt's last ids merge with the target's first, not the prompt judge-serve sends
        n = len(prompt_ids)
        if why := generation_prompt_merged(tokenizer, prompt_ids, full_ids):
            raise _unfit_template(tokenizer, row, why)
        examples.append({"input_ids": full_ids, "completion_mask": [0] * n + [1] * (len(full_ids) - n)})
    return examples


def _unfit_template(tokenizer, row: dict[str, Any], why: str):
    """The refusal of a chat template the seq2seq recipe cannot train through, suggesting bases it takes."""
    from judge.chat_tokens import unfit_template

    return unfit_template(tokenizer, row, why, recipe="seq2seq", instead="Qwen3, or a ChatML base: Qwen2.5, T-lite")


def training_text(row: dict[str, Any], tokenizer, *, thinking: bool = False) -> str:
    """The whole text ``sft_examples`` trains ``row`` as (generation prompt and target, repaired for templates
    that drop an assistant turn's reasoning or open ``<think>`` themselves): what the data step counts a row's
    length by (``train.build_data.drop_too_long``)."""
    return _training_texts(row, tokenizer, thinking)[0]


def _training_texts(row: dict[str, Any], tokenizer, thinking: bool) -> tuple[str, str, str]:
    """``row``'s training text, the generation prompt it starts with, and the part the judge writes."""
    prompt, completion = row["prompt"], row["completion"]
    full = judge.apply_chat(tokenizer, prompt, completion, thinking=thinking)
    if prompt not in full:
        raise _unfit_template(tokenizer, row, "does not keep the prompt verbatim")
    generation = judge.apply_chat(tokenizer, prompt, thinking=thinking)
    if thinking:
        full, completion = _with_the_reasoning(tokenizer, row, generation, full)
    elif prompt_opens_reasoning(generation) or not full.startswith(generation):
        full = _after_an_empty_reasoning(tokenizer, row, generation)
    return full, generation, completion


#: An assistant turn's text that no template rewrites (no ``</think>`` to split at): what the template writes after
#: it is its end of turn.
_TURN_MARK = "\x00judge answer\x00"


def _with_the_reasoning(tokenizer, row: dict[str, Any], generation: str, full: str) -> tuple[str, str]:
    """The integer-format training text of ``row`` and the part of it the judge writes: (text, completion).

    judge-serve prompts an integer-format judge with the generation prompt (``generation``) and reads what it
    writes after it, so that is what must be trained: the reasoning, ``</think>``, the integer and the end of turn.
    Qwen3's and ChatML templates render the target after the generation prompt unchanged (``full``, as it is). A
    template that renders an assistant turn as what follows its ``</think>`` (DeepSeek-R1 distills and QwQ:
    ``content.split('</think>')[-1]``) drops the reasoning from ``full``, and ``full`` no longer starts with its
    generation prompt, which opens ``<think>`` itself (``judge.rewards.prompt_opens_reasoning``): trained as
    rendered, the judge learned to answer the bare integer. For such a template the text is the generation prompt,
    the target after the block it opened, and the template's end of turn (what it writes after an assistant turn
    it keeps whole); any other template that loses the reasoning is refused.
    """
    completion = row["completion"]
    reasoning = completion.split("</think>")[0].removeprefix("<think>").strip()
    if full.startswith(generation) and reasoning in full[len(generation):]:
        return full, completion
    why = ("drops the reasoning from the assistant turn it renders" if reasoning not in full
           else "renders the reasoning elsewhere than after its generation prompt")
    if prompt_opens_reasoning(generation):
        opened = generation[[m.start() for m in re.finditer(r"<think\s*>", generation, re.IGNORECASE)][-1]:]
        turn = judge.apply_chat(tokenizer, row["prompt"], _TURN_MARK, thinking=True)
        if completion.startswith(opened) and _TURN_MARK in turn:
            continuation = completion[len(opened):]
            return generation + continuation + turn[turn.rfind(_TURN_MARK) + len(_TURN_MARK):], continuation
        where = f"and its generation prompt opens the reasoning as {opened!r}, which the target does not start with"
    else:
        where = "and does not open <think> in its generation prompt for the target to continue"
    name = getattr(tokenizer, "name_or_path", "") or tokenizer.__class__.__name__
    raise ConfigError(f"model_name_or_path: the chat template of {name} {why} (row {row.get('id')!r}) {where}: the "
                      "integer format would train the judge to answer without reasoning. Use a base whose template "
                      "keeps an assistant turn's reasoning (Qwen3, or a ChatML base: Qwen2.5, T-lite), or "
                      "verdict_format: tagged")


#: What a tagged judge writes first after a generation prompt that opened ``<think>``: the close of an empty
#: reasoning block (``<think>\n</think>\n\n`` with the prompt's own ``<think>\n``), then the verdict. judge-serve's
#: reader and GRPO's ``format_reward`` take up to two newlines before ``</think>`` (``serve.judging.verdict_regex``,
#: ``judge.verdicts.bare_tagged_answer``); none here, because a newline after the prompt's own would be tokenized
#: with it as one ``\n\n`` token, and the trained prompt's ids would no longer be the ones judge-serve sends.
_EMPTY_REASONING_CLOSE = "</think>\n\n"


def _after_an_empty_reasoning(tokenizer, row: dict[str, Any], generation: str) -> str:
    """The tagged-format training text of ``row`` for a template whose generation prompt opens ``<think>`` with
    thinking off, or whose rendered assistant turn does not start with its generation prompt.

    QwQ's and DeepSeek-R1 distills' templates ignore ``enable_thinking``: the generation prompt judge-serve sends
    still ends in ``<think>\n`` (``judge.rewards.prompt_opens_reasoning``), and judge-serve reads the verdict after
    the close of that block (``serve.score_reading.seq2seq_verdict(..., reasoning_opened=True)``), while the
    assistant turn they render (no reasoning in a tagged target) has no ``<think>`` at all: trained as rendered, the
    judge learned a prompt it is never sent. A template that renders the empty block itself (Qwen3 Thinking-2507:
    ``<think>\n\n</think>\n\n``) is trained the same way: its ``\n\n`` is one token, and the prompt trained before
    it ended one ``\n`` short of the served one. The text is that generation prompt, the close of an empty block
    (``_EMPTY_REASONING_CLOSE``), the target and the template's end of turn (what it writes after an assistant
    turn, found as the integer format finds it). Any other template whose rendered turn does not follow its
    generation prompt is refused.

    Raises:
        ConfigError: such a template, or one whose end of turn cannot be told.
    """
    name = getattr(tokenizer, "name_or_path", "") or tokenizer.__class__.__name__
    if not prompt_opens_reasoning(generation):
        raise ConfigError(f"model_name_or_path: the chat template of {name} renders the assistant turn of row "
                          f"{row.get('id')!r} other than after its generation prompt: the tagged format would train "
                          "the judge on a prompt judge-serve never sends. Use a base whose template renders an "
                          "assistant turn after its generation prompt (Qwen3, or a ChatML base: Qwen2.5, T-lite)")
    turn = judge.apply_chat(tokenizer, row["prompt"], _TURN_MARK)
    if _TURN_MARK not in turn:
        raise ConfigError(f"model_name_or_path: the chat template of {name} opens <think> in its generation prompt "
                          f"and rewrites an assistant turn (row {row.get('id')!r}), so the end of turn after a tagged "
                          "verdict cannot be told. Use a base whose template renders an assistant turn as it is "
                          "(Qwen3, or a ChatML base: Qwen2.5, T-lite)")
    return generation + _EMPTY_REASONING_CLOSE + row["completion"] + turn[turn.rfind(_TURN_MARK) + len(_TURN_MARK):]


def sft_dataset(rows: list[dict[str, Any]], tokenizer, *, thinking: bool = False):
    """Rows as the pre-tokenized dataset trl's ``SFTTrainer`` trains on as it is (``sft_examples``' columns).

    A dataset with an ``input_ids`` column is "processed" for trl (trl/trainer/sft_trainer.py,
    ``SFTTrainer._prepare_dataset``: ``is_processed``): it renders and tokenizes nothing, builds ``labels`` from
    ``completion_mask`` when ``completion_only_loss`` is on (-100 over the prompt), then truncates to ``max_length``
    and packs, as it did the rows it tokenized itself.

    Args:
        rows: training rows with ``prompt`` and ``completion``.
        tokenizer: the base model's tokenizer.
        thinking: integer-format rows: rendered with the chat template's thinking left on, as
            ``judge.apply_chat(..., thinking=True)`` (judge-serve's integer-format prompt) renders them; else off.
    """
    from datasets import Dataset

    return Dataset.from_list(sft_examples(rows, tokenizer, thinking=thinking))


# ---------------------------------------------------------------------------------------------------------------
# the integer format: reasoning, then the bare integer (Pollux-4B-Judge)
# ---------------------------------------------------------------------------------------------------------------

def integer_target(reasoning: str, score: float) -> str:
    """The integer-format training target: ``<think>\\n{reasoning}\\n</think>\\n\\n{score}``.

    These are the bytes Qwen3's chat template writes for an assistant turn whose reasoning and answer are given
    (``'<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + content``), so a Qwen3 base renders it unchanged,
    and a ChatML base (Qwen2.5, T-lite) learns the same text; ``judge.parse_integer_verdict`` reads it back as
    (reasoning, score).
    """
    return f"<think>\n{reasoning.strip()}\n</think>\n\n{judge.format_score(score)}"


def traces_agreement(source: str | None) -> dict[str, Any]:
    """The traces stage's agreement settings for the records at ``source``: ``agreement``, ``tolerance`` and
    ``no_unique_mode`` from the ``summary.json`` that ``judge-train data traces`` wrote beside its ``traces.jsonl``
    (or in the folder ``source`` names, or above the stage's ``dataset/`` folder), else the stage's defaults
    (``train.synthetic.config.TracesConfig``: the experts' mode exactly, items with several modes left out). A stage
    run with ``--tolerance 1`` kept traces one point off; its traces.jsonl trains with that tolerance, not with the
    default's. Rows the stage writes now carry their own ``tolerance`` and ``agreement``, which win over these
    (``integer_rows``): the summary is for rows written before they did.

    Raises:
        ConfigError: a setting in the summary that the config would refuse for the same key
            (``train.config.agreement_rule_problem``), naming the file, the key and the value."""
    import json
    from pathlib import Path

    from train.synthetic.config import TracesConfig

    defaults = TracesConfig()
    settings = {"agreement": defaults.agreement, "tolerance": defaults.tolerance,
                "no_unique_mode": defaults.no_unique_mode}  # fmt: skip
    if not source:
        return settings
    path = Path(source)
    summary = path / "summary.json" if path.is_dir() else path.parent / "summary.json"
    if path.is_dir() and path.name == "dataset" and not summary.exists():
        # The stage saves its kept rows twice, traces.jsonl and dataset/ (a datasets folder) inside its output
        # folder, with one summary.json beside both: dataset/'s rows from before rows carried their rule train by
        # it as traces.jsonl's do, not by the defaults.
        summary = path.parent / "summary.json"
    try:
        written = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # deep nesting is a RecursionError: unreadable all the same
        return settings
    if not isinstance(written, dict) or written.get("stage") != "traces":
        return settings
    for key in settings:
        if key in written:
            if (must := agreement_rule_problem(key, written[key])) is not None:
                raise ConfigError(f"{summary}: {key} {must}, got {written[key]!r}; the traces stage records there "
                                  "the rule its traces were kept by: correct it to that rule")
            settings[key] = written[key]
    return settings


def traces_settings_for_config(config: Seq2SeqConfig, source: str) -> dict[str, Any]:
    """The agreement settings the integer format trains the records at ``source`` by: the config's ``agreement``,
    ``tolerance`` and ``no_unique_mode`` where set, the rest as ``traces_agreement(source)`` finds them (the traces
    stage's summary.json, else its defaults). Rows that record their own rule still go by it (``integer_rows``)."""
    settings = traces_agreement(source)
    for key in settings:
        if getattr(config, key, None) is not None:
            settings[key] = getattr(config, key)
    return settings


def _row_rule(record, rule: dict[str, Any]) -> dict[str, Any]:
    """``rule`` with the ``agreement`` and ``tolerance`` a traces-stage row records for itself: a row keeps the rule
    it was kept by wherever it is copied (the stage's ``dataset/``, a file of its own), where no summary.json may
    be; a row written before rows carried them, or any other record, goes by ``rule``."""
    own = dict(rule)
    tolerance = record.extra.get("tolerance")
    if "tolerance" in record.extra and agreement_rule_problem("tolerance", tolerance) is None:
        own["tolerance"] = float(tolerance)
    if "agreement" in record.extra and agreement_rule_problem("agreement", record.extra["agreement"]) is None:
        own["agreement"] = record.extra["agreement"]  # experts_reference's
    return own


def _rule_against_config(record, config_rule: dict[str, Any]) -> dict[str, Any]:
    """The ``agreement`` and ``tolerance`` ``record`` records for itself that differ from those the config sets
    (``config_rule``: the keys it sets), by key; empty for a row that records none or the config's."""
    own = _row_rule(record, {})
    return {key: own[key] for key, value in config_rule.items()
            if key in own and own[key] != (float(value) if key == "tolerance" else value)}


def _trace_references(record, agreement: str, no_unique_mode: str) -> tuple[tuple[float, ...] | None, str | None]:
    """(the values a trace's score must agree with, None) or (None, why the item has none), as the traces stage
    decides it (``train.synthetic.traces.training_records``): always from the row's own ``expert_scores`` under
    ``agreement``. A row the stage wrote also carries the references it was judged against (``experts_reference``):
    one that differs from the scores' is a row relabelled since (its trace agreed with the old label), dropped as
    ``reference_mismatch``; one that matches them with several modes was kept under the stage's
    ``no_unique_mode: any``, and is not skipped."""
    from train.synthetic.traces import experts_reference

    if not record.expert_scores:
        return None, "no_expert_scores"
    references = experts_reference(record.expert_scores, agreement)
    recorded = record.extra.get("experts_reference")
    if (isinstance(recorded, list) and recorded
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in recorded)):  # fmt: skip
        same = len(recorded) == len(references) and all(
            math.isclose(float(v), reference, rel_tol=1e-9, abs_tol=1e-9) for v, reference in zip(recorded, references))
        return (references, None) if same else (None, "reference_mismatch")
    if len(references) > 1 and no_unique_mode == "skip":
        return None, "no_unique_mode"
    return references, None


def integer_rows(records, *, zero_shot: str = "refuse", missing_reasoning: str = "refuse",
                 source: str = "<records>", traces_settings: dict[str, Any] | None = None,
                 min_russian_share: float = 0.5, split_spec: judge.SplitSpec | None = None,
                 config_tolerance: float | None = None,
                 config_no_unique_mode: str | None = None, config_agreement: str | None = None,
                 groups=None) -> tuple[list[dict[str, Any]], Any]:  # fmt: skip
    """Integer-format training rows from reasoning traces: one row per record with ``reasoning`` and ``reasoning_score``.

    The records are ``judge-train data traces`` output (or any POLLUX-format records with those two columns): the
    reasoning is the trace, ``reasoning_score`` the integer it concluded with. The Zero-Shot rule is build-data's
    (``train.build_data.zero_shot_records``).

    Args:
        records: ``judge.JudgeRecord`` objects; the two columns are in ``record.extra``.
        zero_shot: ``refuse``, ``drop`` or ``allow`` (as build-data).
        missing_reasoning: a record with no reasoning text or no ``reasoning_score``: ``refuse`` raises naming it,
            ``drop`` counts it (``no_reasoning`` / ``no_reasoning_score``).
        source: where the records came from, for error messages, and where the traces stage's settings are read
            (``traces_agreement``).
        traces_settings: ``{"agreement", "tolerance", "no_unique_mode"}`` to judge agreement by, instead of
            ``traces_agreement(source)``'s. Either is for rows that carry no rule of their own: a row the traces stage
            wrote records its ``agreement`` and ``tolerance``, and is judged by them.
        min_russian_share: the least Cyrillic share of the reasoning's letters (``train.build_data.russian_share``),
            as build-data requires of a tagged rationale (its ``min_russian_share``).
        split_spec: the Zero-Shot split ``zero_shot`` applies (default: the packaged one).
        config_tolerance: the ``tolerance`` the config sets, where it sets one: rows judged by a looser tolerance of
            their own are judged by it all the same, and counted (``looser_row_tolerance``).
        config_agreement: the ``agreement`` the config sets, where it sets one. A row recording an ``agreement`` or
            ``tolerance`` other than the config's is judged by its own (the rule its trace was kept by: the
            config's is for rows that record none), counted (``rule_differs_from_config``) and warned of once,
            naming the config's rule and the rows'.
        config_no_unique_mode: the ``no_unique_mode`` the config sets, where it sets one: rows that agree with one of
            the experts' tied modes (by the row's recorded rule, the traces stage's ``no_unique_mode: any``, or the
            settings for rows that record none) train under ``skip`` all the same, and are counted
            (``kept_under_tied_modes``, whatever the config says) and, under ``skip``, warned of once.
        groups: ``train.build_data.InstructionGroups`` over every record the run reads, these among them (default:
            over ``records`` alone).

    Returns:
        (rows, ``train.build_data.BuildReport``). A row has ``id``, ``record_id`` (the judged item's, ``item_id`` when
        the traces stage wrote one, so every trace of an item lands on the same side of the train/eval split),
        ``instruction_id`` and ``instruction_group`` (what ``train.build_data.split_rows`` draws by), ``prompt``,
        ``reasoning``, ``score`` and ``completion`` (``integer_target``). Also dropped and counted:
        ``no_scale``, ``answer_not_bare`` (the row's recorded answer, ``teacher_content``, is more than the integer:
        the score read from it may not be the one the reasoning reached, ``judge.verdicts.bare_answer``),
        ``score_not_integer``, ``score_out_of_scale`` (outside the rubric's range), ``score_not_a_level`` (between
        its levels), ``too_few_words``
        (a reasoning under two words: ``judge.verdicts.gives_reasons``, the rule of the traces stage and of
        the GRPO format reward), ``not_russian`` (a reasoning under ``min_russian_share`` Cyrillic, build-data's
        rule for a rationale), ``think_tags_in_reasoning`` (a ``<think>`` tag
        inside the reasoning would end the block early), ``trace_not_kept`` (a row the traces stage dropped or
        failed, with its ``drop_reason`` or ``fail_reason``: its score disagrees with the label, or it was cut), and
        what the traces stage's own rule drops (``train.synthetic.traces.trace_outcome``, the same function):
        ``disagrees`` (the score does not agree with the item's ``expert_scores``: the mode exactly by default, or
        the stage's ``agreement`` and ``tolerance``), ``no_expert_scores`` (no label to agree with) and
        ``no_unique_mode`` (experts tied between modes, which the stage leaves out by default),
        ``tolerance_admits_every_level`` / ``references_cover_every_level`` (every level of the rubric agrees by the
        row's rule, so no agreement was checked: the stage skips such items, and a row written before it did is
        left out here, warned of once) and ``reference_mismatch`` (the row's recorded ``experts_reference`` is not its ``expert_scores``': relabelled
        since its trace was kept), and ``duplicate_trace`` (the same reasoning and score for the same prompt as a row
        kept before it, whatever its id, item or file). Rejection sampling
        keeps only traces that agree with the label, whatever file they come from. A prompt trained under more than
        one score by rows of different items (each agreeing with its own item's experts: two traces folders over
        one input, records of your own) is kept, counted as ``prompts_with_several_labels`` and warned of.

    Raises:
        judge.RecordError: with ``missing_reasoning="refuse"``, the first record without a reasoning or a score,
            naming its source row and id. judge.LeakageError: Zero-Shot records with ``zero_shot="refuse"``.
            ConfigError: a setting of the traces stage's summary.json the config would refuse (``traces_agreement``).
    """
    from train.build_data import BuildReport, InstructionGroups, russian_share, zero_shot_records
    from train.synthetic.traces import experts_reference

    rule = traces_settings if traces_settings is not None else traces_agreement(None if source == "<records>" else source)
    records = list(records)
    groups = groups if groups is not None else InstructionGroups(records)
    report = BuildReport(n_records=len(records), n_verdicts=len(records))
    records, held_out = zero_shot_records(records, zero_shot, split_spec)
    if held_out:
        report.dropped["zero_shot"] += len(held_out)
        report.zero_shot_ids.extend(record.id for record in held_out[:20])
    from train.build_data import instruction_id, item_of

    config_rule = {key: value for key, value in (("agreement", config_agreement), ("tolerance", config_tolerance))
                   if value is not None}
    rules_seen: set[tuple[str, Any]] = set()  # the (key, value) of the recorded rules that differ from the config's
    rows: list[dict[str, Any]] = []
    trained: set[tuple[str, str, float]] = set()  # (item, reasoning, score) of the rows kept so far
    labels_of_prompt: dict[str, dict[str, set[float]]] = {}  # prompt -> item -> the scores its kept rows train
    for record in records:
        if record.extra.get("drop_reason") or record.extra.get("fail_reason"):
            # a row of the traces stage's dropped.jsonl or failed.jsonl: it carries a reasoning and a score too, but
            # one that disagrees with the label (or was cut); only traces.jsonl's rows agree
            report.drop("trace_not_kept", record.id)
            continue
        reasoning, score = record.extra.get("reasoning"), record.extra.get("reasoning_score")
        missing = ("reasoning" if not isinstance(reasoning, str) or is_blank(reasoning)
                   else "reasoning_score" if score is None or isinstance(score, bool) else None)  # fmt: skip
        if missing is not None:
            if missing_reasoning == "refuse":
                where_source, where_row = record.origin or (source, None)
                raise judge.RecordError(
                    where_source, where_row, missing,
                    f"record {record.id!r} has no {missing} to train an integer-format judge on; make the rows with "
                    "`judge-train data traces`, or set missing_reasoning: drop (--missing-reasoning drop) to leave "
                    "such rows out and count them",
                )
            report.drop(f"no_{missing}", record.id)
            continue
        try:
            scale = judge.oriented_scale(record.criteria_name, record.rubrics)
        except judge.ScaleError:
            report.drop("no_scale", record.id)
            continue
        try:
            value = float(score)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int past float's range (400 digits)
            value = float("nan")
        answer = record.extra.get("teacher_content")
        if isinstance(answer, str) and not bare_answer(answer):
            # The stage's rule (trace_outcome): the integer read from "Оценка 1 из 2" is 2, not the reasoning's 1.
            report.drop("answer_not_bare", record.id)
        elif not value.is_integer():
            report.drop("score_not_integer", record.id)
        elif not scale.contains(value):
            report.drop("score_out_of_scale", record.id)
        elif not scale.is_level(value):
            report.drop("score_not_a_level", record.id)
        elif not gives_reasons(reasoning):
            report.drop("too_few_words", record.id)
        elif has_think_tag(reasoning):
            report.drop("think_tags_in_reasoning", record.id)
        elif russian_share(reasoning) < min_russian_share:
            # The judge learns to reason in the language it is trained on: an English trace teaches English
            # reasoning, as an English rationale would teach English feedback (build-data drops that one too).
            report.drop("not_russian", record.id)
        else:
            # judged by its own rule whether it agrees or not: counted either way
            differs = _rule_against_config(record, config_rule)
            report.looser_row_tolerance += "tolerance" in differs and differs["tolerance"] > config_tolerance
            if differs:
                report.rule_differs_from_config += 1
                rules_seen.update((key, value) for key, value in differs.items())
            why = _disagreement(record, reasoning, value, scale, _row_rule(record, rule), min_russian_share)
            if why is not None:
                report.drop(why, record.id)
                continue
            prompt = judge.render_prompt(record)
            # The traces stage's duplicate_trace (one trace given twice), across files, ids and items: a traces.jsonl
            # joined with a dropped.jsonl whose drop_reason was stripped, two trace folders, or two items rendering
            # one prompt (two answer models writing the same answer) would weigh it twice. Keyed by what the judge
            # reads and writes, the prompt, since two item ids of one prompt are one example to it.
            trace = (prompt, reasoning.strip(), value)
            if trace in trained:
                report.drop("duplicate_trace", record.id)
                continue
            trained.add(trace)
            # A trace kept against tied modes (the stage's no_unique_mode: any, recorded in the row's
            # experts_reference) trains whatever the config's no_unique_mode says: counted.
            report.kept_under_tied_modes += len(experts_reference(
                record.expert_scores, _row_rule(record, rule)["agreement"])) > 1
            labels_of_prompt.setdefault(prompt, {}).setdefault(item_of(record), set()).add(value)
            rows.append({"id": record.id, "record_id": item_of(record),
                         "instruction_id": instruction_id(record), "instruction_group": groups(record),
                         "prompt": prompt, "reasoning": reasoning.strip(), "score": value,
                         "completion": integer_target(reasoning, value)})  # fmt: skip
    report.n_rows = len(rows)
    # One prompt trained "-> 2" from one item and "-> 1" from another: each row agreed with its own item's experts,
    # so both are kept (dropping either would choose between two panels' evidence), but the judge is taught two
    # answers to one prompt where the traces stage and GRPO pool the panels: counted and warned of, with the remedy.
    report.prompts_with_several_labels = sum(
        len(items) > 1 and len(set().union(*items.values())) > 1 for items in labels_of_prompt.values())
    if report.prompts_with_several_labels:
        logger.warning("%s: %d prompt(s) are trained under more than one score by rows of different items (each row "
                       "agreed with its own item's experts); the traces stage pools the experts of one prompt into "
                       "one item: rerun it on the joined input to train each prompt against one panel; counted as "
                       "prompts_with_several_labels in run.json's data report", source,
                       report.prompts_with_several_labels)
    if report.kept_under_tied_modes and config_no_unique_mode == "skip":
        logger.warning("%s: %d trace row(s) were kept against the experts' tied modes (their experts_reference "
                       "records several, the traces stage's no_unique_mode: any) and are trained although the config "
                       "says no_unique_mode: skip, which applies to rows that record no reference of their own; "
                       "counted as kept_under_tied_modes in run.json's data report", source,
                       report.kept_under_tied_modes)
    from train.synthetic.traces import EVERY_LEVEL_REASONS

    unchecked = {reason: report.dropped[reason] for reason in EVERY_LEVEL_REASONS if report.dropped.get(reason)}
    if unchecked:
        logger.warning("%s: %s left out: by their agreement rule every level of the item's rubric agrees with the "
                       "experts (%s), so no trace of it was checked against the label; the traces stage skips such "
                       "items (rows it wrote before it did keep every trace); counted in run.json's data report",
                       source, counted(sum(unchecked.values()), "trace row"),
                       ", ".join(f"{reason}: {n}" for reason, n in unchecked.items()))
    if report.rule_differs_from_config:
        looser = (f"; {report.looser_row_tolerance} of them by a looser tolerance, counted as looser_row_tolerance"
                  if report.looser_row_tolerance else "")
        logger.warning("%s: %s with an agreement rule other than the config's (%s): %s, each judged by the rule "
                       "it records (a row's recorded agreement and tolerance win over the config's, which "
                       "apply to rows that record none: a row keeps the rule its trace was kept by); counted as "
                       "rule_differs_from_config in run.json's data report%s", source,
                       counted(report.rule_differs_from_config, "trace row"), _rule_words(config_rule.items()),
                       _rule_words(rules_seen),
                       looser)
    first = "; ".join(f"{reason} {row_id}" for reason, row_id in sorted(report.first_dropped.items()))
    logger.info("integer-format rows from the traces: %s%s", report.summary(),
                f" (the first row dropped for each reason: {first})" if first else "")
    return rows, report


def _rule_words(rule) -> str:
    """(key, value) pairs of an agreement rule as a warning names them: "agreement mode, tolerance 1.0"."""
    return ", ".join(f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}"
                     for key, value in sorted(rule, key=lambda pair: (pair[0], str(pair[1]))))


def _disagreement(record, reasoning: str, score: float, scale, rule: dict[str, Any],
                  min_russian_share: float) -> str | None:
    """Why the traces stage would not keep this trace (its reason), or None when it agrees with the label.

    The trace is put to ``trace_outcome`` as the journal row of a teacher answer that wrote this reasoning and then
    this integer, and was not cut: one rule for what agrees, here and in the stage."""
    from train.build_data import scores_off_the_rubric
    from train.synthetic.traces import every_level_reason, trace_outcome

    if record.expert_scores and (off := scores_off_the_rubric(scale, record.expert_scores)) is not None:
        return off  # experts off the rubric (a 3 on 0..2): no label a trace can agree with
    references, why = _trace_references(record, rule["agreement"], rule["no_unique_mode"])
    if references is None:
        return why
    if (why := every_level_reason(scale, references, float(rule["tolerance"]))) is not None:
        # The stage skips such an item before asking (every verdict that parses would agree: no trace was checked);
        # a row the stage did not skip, or a record of your own, is skipped here by the stage's reasons.
        return why
    answer = {"ok": True, "content": judge.format_score(score), "reasoning": reasoning, "finish_reason": "stop"}
    outcome, reason, _ = trace_outcome(answer, scale, references, float(rule["tolerance"]),
                                       min_russian_share=min_russian_share)
    return None if outcome == "kept" else reason


def holds_traces(records: Sequence[judge.Record]) -> bool:
    """Whether any of ``records`` carries a reasoning trace (``reasoning``): an ``eval_data`` without one is the
    split stage's validation records, not traces, and the integer format holds out a part of its training traces
    instead (``integer_rows_for_config``)."""
    return any(isinstance(r.extra.get("reasoning"), str) and not is_blank(r.extra["reasoning"]) for r in records)


def integer_rows_for_config(config: Seq2SeqConfig, tokenizer) -> tuple[list[dict], list[dict], Any]:
    """The integer format's data step, as ``train.build_data.rows_for_config`` for the tagged one: records (the
    benchmark refused as build-data refuses it) -> rows -> drop too long (thinking on) -> split -> first ``max_rows``.

    The held-out rows come from ``eval_data`` when it holds traces; an ``eval_data`` without any (the split stage's
    ``validation.jsonl``, which the configs name for the tagged format) is set aside, with a warning, for the
    traces' own split by instruction (``eval_fraction``; every trace of one instruction on one side).

    Returns:
        (train rows, eval rows, report).
    """
    from train import build_data

    spec = zero_shot_split(config)

    def build(source: str, read_back: tuple[list[judge.JudgeRecord], judge.LoadReport], groups):
        records, load_report = read_back
        rows, report = integer_rows(records, zero_shot=config.zero_shot, missing_reasoning=config.missing_reasoning,
                                    source=source, min_russian_share=config.min_russian_share,
                                    traces_settings=traces_settings_for_config(config, source),
                                    split_spec=spec, config_tolerance=config.tolerance,
                                    config_no_unique_mode=config.no_unique_mode, config_agreement=config.agreement,
                                    groups=groups)  # fmt: skip
        report.duplicate_input_rows = load_report.n_duplicates
        # counted as trained: a template that drops the reasoning from a rendered turn (R1 distills, QwQ) would
        # count the row without it, and the row be dropped only after the split and the max_rows cut
        rows, n_long = build_data.drop_too_long(
            rows, tokenizer, config.max_length, text_of=lambda row: training_text(row, tokenizer, thinking=True))
        if n_long:
            report.dropped["too_long"] += n_long
            report.n_rows = len(rows)
        return rows, report

    # before the data is built and tokenized: a resume whose recorded rule no split knows is refused at once (eval_data
    # of traces means no split, known once it is read)
    unit = build_data.validation_unit(config) if not config.eval_data else None
    data_read, eval_read = build_data.records_for_config(config)  # eval_data read once: asked for traces, then built
    eval_traces = holds_traces(eval_read[0])
    if config.eval_data and not eval_traces:
        unit = build_data.validation_unit(config)
    # over every record trained or validated on: the split of data draws by them, and eval_data's overlap is counted
    groups = build_data.InstructionGroups([*data_read[0], *(eval_read[0] if eval_traces else [])])
    rows, report = build(config.data, data_read, groups)
    if config.eval_data and not eval_traces:
        logger.warning("eval_data %s holds no reasoning traces (records, not `judge-train data traces` rows): the "
                       "validation rows are %.0f%% of the training traces' instructions, held out with all their "
                       "traces", config.eval_data,
                       100 * config.eval_fraction)
    eval_report = None
    if eval_traces:
        train, (held_out, eval_report) = rows, build(config.eval_data, eval_read, groups)
    else:
        report.validation_split = unit
        train, held_out = build_data.split_rows(rows, config.eval_fraction, report.validation_split)
    report.count_held_out(config, held_out, eval_report)
    train = report.cut_to_max_rows(train, config.max_rows)
    if eval_report is not None:
        report.count_shared_instructions(config, train, held_out)
    # the rows integer_rows counted are before the length and max_rows cuts: what is trained on is said here
    logger.info("integer-format training data: %s; %s", report.summary(), report.rows_line(train, held_out,
                                                                                          config.max_rows))
    if not train:
        # ConfigError: a data/config choice (judge-train exits 2 with this line), not a failure of the run.
        raise ConfigError(f"data: no integer-format training rows left in {config.data} (max_length "
                          f"{config.max_length}, eval rows held out, max_rows {config.max_rows}): {report.summary()}")
    return train, held_out, report


def trained_lengths(config: Seq2SeqConfig, rows: Sequence[dict[str, Any]], tokenizer) -> TrainedLengths | None:
    """The token lengths an integer-format judge was trained to answer within, for its export's manifest
    (``judge.checkpoints.TrainedLengths``, as a GRPO export records its sampling bounds).

    Its completions are whole reasoning traces (the teacher's, up to ``configs/data/traces.yaml``'s ``max_tokens``):
    served with judge-serve's default ``max_tokens`` of 1024, a judge that learned to reason for longer is cut before
    its verdict (``unclosed_think``). Recorded, judge-serve and judge-eval adopt them
    (``serve.cli.fit_trained_lengths``).

    Args:
        config: the run's config: the context is its ``max_length`` (every row was kept within it).
        rows: the training rows (``prompt``, ``completion``).
        tokenizer: the base model's tokenizer.

    Returns:
        ``max_length`` and, as ``max_completion_length``, the longest trained completion in tokens: the assistant
        turn as the chat template renders it with thinking on, through its end-of-turn token and whatever the
        template puts after it (Qwen's newline: one token more than the judge generates, room to spare rather than
        a token short); None for the tagged format, whose short ``[FEEDBACK]`` verdicts the serving defaults hold,
        and for no rows.
    """
    if config.verdict_format != judge.VerdictFormat.INTEGER or not rows:
        return None
    # Which completion is longest, by the completion alone (one batched call); then that one counted exactly in the
    # ids it was trained on (sft_examples: its labelled tokens), where the template adds the end-of-turn token the
    # judge learned to write.
    counts = tokenizer([row["completion"] for row in rows], add_special_tokens=False)["input_ids"]
    longest = rows[max(range(len(rows)), key=lambda i: len(counts[i]))]
    generated = sum(sft_examples([longest], tokenizer, thinking=True)[0]["completion_mask"])
    return TrainedLengths(config.max_length, min(generated, config.max_length))


def training_data(config: Seq2SeqConfig, tokenizer) -> TrainingData:
    """The recipe's data step: rows (tagged, or the integer format's from traces), cut to ``max_length``, and the ids
    they train as (``sft_examples``), each row tokenized for training once. ``judge-train run`` takes it before it
    claims the run folder, with the base's tokenizer alone, and hands it to ``main``.

    Raises:
        ConfigError: a chat template that cannot render the judge prompt
            (``train.recipe_data.refuse_unrenderable_chat_template``) or that the rows cannot be trained through
            (``sft_examples``), naming ``model_name_or_path`` (and the row); no training row left within
            ``max_length``, naming ``data``.
    """
    from train import build_data
    from train.recipe_data import refuse_unrenderable_chat_template

    thinking = config.verdict_format == judge.VerdictFormat.INTEGER
    refuse_unrenderable_chat_template(tokenizer, config.model_name_or_path, thinking=thinking)
    if thinking:
        train_rows, eval_rows, report = integer_rows_for_config(config, tokenizer)
    else:
        train_rows, eval_rows, report = build_data.rows_for_config(
            config, tokenizer, text_of=lambda row: training_text(row, tokenizer))
    train_rows, train_examples = build_data.drop_long_examples(
        config, report, train_rows, sft_examples(train_rows, tokenizer, thinking=thinking))
    eval_rows, eval_examples = build_data.drop_long_examples(
        config, report, eval_rows, sft_examples(eval_rows, tokenizer, thinking=thinking), validation=True)
    return TrainingData(tokenizer, train_rows, eval_rows, report, train_examples, eval_examples)


def main(config: Seq2SeqConfig, *, callbacks: tuple = (), data: TrainingData | None = None) -> RunResult:
    """Train and export a seq2seq judge.

    Args:
        config: a resolved ``Seq2SeqConfig`` (``train.config.load_config``).
        callbacks: extra ``transformers.TrainerCallback`` objects (tests use them to interrupt a run).
        data: ``training_data``'s result, where the caller took the data step before the run folder was claimed
            (``judge-train run``); None takes it here, after ``prepare``.

    Returns:
        A ``RunResult``; the export is in ``<output_dir>/export``.
    """
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from train import lora, recipe_steps

    # ---- config -------------------------------------------------------------------------------------------------
    run = recipe_steps.prepare(config, "seq2seq judge", tokenizer=data.tokenizer if data is not None else None)

    # ---- data ---------------------------------------------------------------------------------------------------
    if data is None:
        data = training_data(config, run.tokenizer)
    train_dataset, eval_dataset = recorded_datasets(run, data)
    train_rows = data.train_rows

    # ---- model --------------------------------------------------------------------------------------------------
    # Arguments before the model: under ZeRO-3 from_pretrained then partitions the weights as they load.
    args = run.training_arguments(
        SFTConfig,
        has_eval=eval_dataset is not None,
        max_length=config.max_length,
        completion_only_loss=True,  # labels from the datasets' completion_mask: -100 over the prompt (sft_dataset)
        packing=config.packing,
        packing_strategy="bfd",
        prediction_loss_only=True,
    )
    model = AutoModelForCausalLM.from_pretrained(run.base_model, dtype=run.dtype, attn_implementation=config.attn_implementation)

    # ---- trainer ------------------------------------------------------------------------------------------------
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=run.tokenizer,
        peft_config=lora.lora_config(config, model=model),
        callbacks=[run.stopper, *callbacks],
    )

    # ---- train --------------------------------------------------------------------------------------------------
    with labelled_positions_only_on_cpu():
        result = run.train(trainer)
    if run.stopped:
        return result

    # ---- save ---------------------------------------------------------------------------------------------------
    run.export_judge(trainer, result, mode="seq2seq", model_cls=AutoModelForCausalLM, train_rows=train_rows,
                     verdict_format=config.verdict_format,
                     trained_lengths=trained_lengths(config, train_rows, run.tokenizer))
    logger.info("seq2seq judge exported to %s", result.export_dir)
    return result


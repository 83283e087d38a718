"""The GRPO recipe (train/grpo.py): its rewards on hand-written verdicts, its data rules, its config, the vLLM lines
for training and serving, the Slurm job in both vLLM modes, and a real trl GRPOTrainer run on a tiny Qwen3.

Run: .venv/bin/python -m pytest tests/unit/test_train_grpo.py -q -n 0
The tests that train or serve are in tests/integration/training/test_train_grpo.py.
"""

from __future__ import annotations

import dataclasses

import json
import os
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import judge
from train import grpo
from train.config import ConfigError, GRPORecipeConfig, load_config
from train.grpo_rewards import agreement_reward, format_reward
from tests.support.train_grpo import REPO, TINY_GRPO


SERVER_GRPO = REPO / "configs" / "train" / "qwen3-8b" / "grpo.yaml"
COLOCATE_GRPO = REPO / "configs" / "train" / "t-lite" / "grpo.yaml"

RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."
NEGATIVE_RUBRIC = "-1: Хуже эталона.\n\n0: Как эталон.\n\n1: Лучше эталона."


def record(rid: str, scores, *, criterion: str = "Грамотность", rubrics: str = RUBRIC, task_type: str = "Editing",
           answer: str = "Четыре."):
    """An item; items of one test that differ in their scores differ in their ``answer`` too: one prompt is one item
    (``grpo_rows`` keeps one row per prompt and pools the scores of other panels into it)."""
    return judge.JudgeRecord(id=rid, instruction="Сколько будет два плюс два?", answer=answer, criteria_name=criterion,
                             rubrics=rubrics, expert_scores=tuple(scores), task_type=task_type)


def rewards_for(rows: list[dict], completions: list[str]) -> tuple[list[float], list[float | None], list[tuple]]:
    """Both rewards for one completion per row, called as trl calls them (dataset columns as keyword lists)."""
    columns = {key: [row[key] for row in rows] for key in rows[0] if key != "prompt"}
    logged: list[tuple] = []
    kwargs = {"prompts": [row["prompt"] for row in rows], "completions": completions, "completion_ids": [[]] * len(rows)}
    formats = format_reward(**kwargs, **columns, log_metric=lambda name, value: logged.append((name, value)))
    return formats, agreement_reward(**kwargs, **columns), logged


# ---- the rewards on hand-written completions ---------------------------------------------------------------------

#: (experts' scores, rubric, verdict format, completion, format reward, agreement reward). Agreement is
#: 1 - |score - mode| / (max - min); the arithmetic is in each row's comment.
REWARD_CASES = [
    # 0..2, mode 2: the experts' score -> 1 - 0/2 = 1
    ([2, 2, 1], RUBRIC, "integer", "<think>Ответ верный и полный.</think>\n\n2", 1.0, 1.0),
    # 0..2, mode 2, verdict 1 -> 1 - |1 - 2| / 2 = 0.5
    ([2, 2, 1], RUBRIC, "integer", "<think>Есть неточность.</think>\n\n1", 1.0, 0.5),
    # 0..2, mode 2, verdict 0 -> 1 - 2/2 = 0
    ([2, 2, 1], RUBRIC, "integer", "<think>Ответ неверный.</think>\n\n0", 1.0, 0.0),
    # reasoning cut by the completion limit: unclosed <think>, a failure -> 0 and 0, never a score
    ([2, 2, 1], RUBRIC, "integer", "<think>Ответ верный, но надо проверить ещё", 0.0, 0.0),
    # reasoning closed, no answer after it: a failure too
    ([2, 2, 1], RUBRIC, "integer", "<think>Ответ верный.</think>\n\n", 0.0, 0.0),
    # 5 on a 0..2 rubric: parsed, off the scale -> 0 and 0
    ([2, 2, 1], RUBRIC, "integer", "<think>Всё отлично.</think>\n\n5", 0.0, 0.0),
    # negative levels -1..1 (span 2), mode 1: verdict -1 -> 1 - |-1 - 1| / 2 = 0; verdict 0 -> 1 - 1/2 = 0.5
    ([1, 1, 0], NEGATIVE_RUBRIC, "integer", "<think>Хуже эталона.</think>\n\n-1", 1.0, 0.0),
    ([1, 1, 0], NEGATIVE_RUBRIC, "integer", "<think>Так же.</think>\n\n0", 1.0, 0.5),
    # -2 on -1..1: off the scale
    ([1, 1, 0], NEGATIVE_RUBRIC, "integer", "<think>Намного хуже.</think>\n\n-2", 0.0, 0.0),
    # the tagged format, parsed strictly as judge-serve parses it: 0..2, mode 2, verdict 1 -> 0.5
    ([2], RUBRIC, "tagged", "[FEEDBACK] Есть неточность. [RESULT] 1 [END]", 1.0, 0.5),
    # ... a tagged verdict cut before [END] fails
    ([2], RUBRIC, "tagged", "[FEEDBACK] Есть неточность. [RESULT] 1", 0.0, 0.0),
    # a bare score, an empty reasoning block, an empty [FEEDBACK]: no reasons, no format reward; the score still agrees
    ([2, 2, 1], RUBRIC, "integer", "2", 0.0, 1.0),
    ([2, 2, 1], RUBRIC, "integer", "<think>\n\n</think>\n\n2", 0.0, 1.0),
    ([2], RUBRIC, "tagged", "[FEEDBACK]  [RESULT] 1 [END]", 0.0, 0.5),
    # reasons of one word, or one character, are none (judge.verdicts.gives_reasons: two words at least, the
    # traces stage's rule), even at the best level, which tagged build-data rows may reach with one word
    ([2, 2, 1], RUBRIC, "integer", "<think>.</think>2", 0.0, 1.0),
    ([2, 2, 1], RUBRIC, "integer", "<think>Верно.</think>\n\n2", 0.0, 1.0),
    ([2], RUBRIC, "tagged", "[FEEDBACK] Верно. [RESULT] 2 [END]", 0.0, 1.0),
]


@pytest.mark.parametrize("scores, rubric, verdict_format, completion, expected_format, expected_agreement", REWARD_CASES,
                         ids=[f"{case[2]}:{case[3][-12:]!r}" for case in REWARD_CASES])
def test_rewards_on_hand_written_completions(scores, rubric, verdict_format, completion, expected_format,
                                             expected_agreement):  # fmt: skip
    """format_reward: 1 for a verdict that parses on the scale with its reasons; agreement_reward: 1 - |score - mode|
    / (max - min), 0 for a failed or off-scale verdict (cut reasoning, out of scale, negative levels, both formats)."""
    rows, _ = grpo.grpo_rows([record("r", scores, rubrics=rubric)], verdict_format=verdict_format)
    formats, agreements, _ = rewards_for(rows, [completion])
    assert formats == [expected_format] and agreements == [pytest.approx(expected_agreement)]


def test_a_critical_criterion_is_rewarded_on_its_own_scale():
    """A Critical criterion (best at 0: no violation) reads its 0..1 scale with best 0; the experts' mode 0 and a
    verdict 1 are a whole span apart: 1 - |1 - 0| / 1 = 0; verdict 0: 1."""
    crit = judge.load_taxonomy().criteria["censor"]
    rows, _ = grpo.grpo_rows([record("c", [0, 0, 1], criterion=crit.name["ru"], rubrics=crit.rubric("ru"))])
    assert (rows[0]["scale_levels"], rows[0]["scale_best"], rows[0]["reference_scores"]) == ([0, 1], 0, [0.0])
    formats, agreements, _ = rewards_for(rows * 2, ["<think>Есть заглушка.</think>\n\n1",
                                                    "<think>Ответ есть.</think>\n\n0"])
    assert formats == [1.0, 1.0] and agreements == [0.0, 1.0]


def test_items_without_a_unique_mode_follow_the_named_rule():
    """Experts 0, 2 tie: 'drop' leaves the item out and counts it; 'nearest' rewards the closer tied mode (verdict 1:
    max(1 - 1/2, 1 - 1/2) = 0.5; verdict 2: 1); 'skip' keeps the item for the format reward, agreement None."""
    items = [record("tie", [0, 2]), record("unique", [1, 1, 2], answer="4.")]
    rows, report = grpo.grpo_rows(items, no_unique_mode="drop")
    assert [row["id"] for row in rows] == ["unique"] and dict(report.dropped) == {"no_unique_mode": 1}

    rows, report = grpo.grpo_rows(items, no_unique_mode="nearest")
    assert rows[0]["reference_scores"] == [0.0, 2.0] and not report.dropped
    # Kept with tied modes, counted as drop counts the items it leaves out: one of the two prompts.
    assert report.n_kept_without_unique_mode == 1 and report.to_dict()["n_kept_without_unique_mode"] == 1
    assert report.summary() == ("2 items (5 expert scores) -> 2 prompts kept; dropped 0 items: none; "
                                "1 kept prompts' experts have no unique mode")
    _, agreements, _ = rewards_for([rows[0]] * 2, ["<think>Ответ частично верный.</think>1",
                                                   "<think>Ответ полностью верный.</think>2"])
    assert agreements == [0.5, 1.0]

    rows, report = grpo.grpo_rows(items, no_unique_mode="skip")
    formats, agreements, _ = rewards_for(rows, ["<think>Ответ частично верный.</think>1"] * 2)
    assert formats == [1.0, 1.0] and agreements == [None, 1.0]
    assert report.n_kept_without_unique_mode == 1 and report.to_dict()["n_kept_without_unique_mode"] == 1


def test_the_format_reward_logs_the_failed_and_off_scale_shares():
    """Per generation batch of 5: 2 verdicts failed (cut reasoning, no answer), 1 is off the scale, 1 is a bare
    score (no reasons)."""
    rows, _ = grpo.grpo_rows([record("r", [2])])
    completions = ["<think>Ответ верный.</think>2", "<think>Обрыв", "<think>Пусто.</think>", "<think>Много.</think>7",
                   "2"]
    formats, _, logged = rewards_for(rows * 5, completions)
    assert formats == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert logged == [("verdicts/failed_share", 0.4), ("verdicts/out_of_scale_share", 0.2),
                      ("verdicts/between_levels_share", 0.0), ("verdicts/no_reasoning_share", 0.2),
                      ("verdicts/answer_not_bare_share", 0.0)]


def test_the_format_reward_pays_only_for_answers_the_trace_steps_train_on():
    """An integer verdict is well-formed as the traces stage and the integer-format rows keep one: one reasoning
    block, then a bare integer. "Оценка 1 из 2" reads as 2 (the serving parser's trailing integer) and a listing
    "0 1 2" as 2: both agree with the experts' 2 and earn agreement, not format; a second block or a <think> inside
    the reasoning neither. The same answers dropped by the traces stage's rule (judge.verdicts.bare_answer) alike."""
    from judge.verdicts import bare_answer

    rows, _ = grpo.grpo_rows([record("r", [2])])
    completions = ["<think>Ответ полностью верный.</think>\n\n2",
                   "<think>Ответ частично верный.</think>\n\nОценка 1 из 2",
                   "<think>Ответ частично верный.</think>\n\n0 1 2",
                   "<think>Сначала так.</think> <think>Потом иначе.</think>2",
                   "<think>Ответ <think>верный</think> полностью.</think>2"]
    formats, agreements, logged = rewards_for(rows * 5, completions)
    assert formats == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert agreements[:3] == [1.0, 1.0, 1.0]
    assert dict(logged)["verdicts/answer_not_bare_share"] == pytest.approx(4 / 5)
    assert [bare_answer(c) for c in completions] == [True, False, False, False, False]


def test_a_tagged_verdict_is_well_formed_only_as_the_one_block_build_data_trains():
    """The tagged counterpart of the integer format's bare answer (judge.verdicts.bare_tagged_answer): text after
    [END] or before [FEEDBACK], or a second block, earns no format reward; the verdict judge-serve's parser reads
    still earns its agreement (experts' 2: verdict 2 -> 1, the final block's 0 -> 1 - 2/2 = 0). Of the 4 scored
    verdicts with reasons, 3 are not of the trained form: answer_not_bare_share 3/4."""
    rows, _ = grpo.grpo_rows([record("r", [2])], verdict_format="tagged")
    completions = ["[FEEDBACK] Ответ верный полностью. [RESULT] 2 [END]",
                   "[FEEDBACK] Ответ верный полностью. [RESULT] 2 [END] а вообще 0",
                   "Думаю: [RESULT] 0. [FEEDBACK] Ответ верный полностью. [RESULT] 2 [END]",
                   "[FEEDBACK] Ответ верный полностью. [RESULT] 2 [END][FEEDBACK] Нет, неверно. [RESULT] 0 [END]"]
    formats, agreements, logged = rewards_for(rows * 4, completions)
    assert formats == [1.0, 0.0, 0.0, 0.0] and agreements == [1.0, 1.0, 1.0, 0.0]
    assert dict(logged)["verdicts/answer_not_bare_share"] == pytest.approx(3 / 4)


def test_the_agreement_reward_alone_counts_failed_verdicts():
    """agreement_reward logs its failed verdicts as verdicts/failed_share, the name format_reward logs them under,
    whatever other reward is weighted beside it (a config weighting it without format_reward is refused:
    tests/unit/test_grpo_guards.py): here 2 of 4 (a cut reasoning, no answer), also for an item with no reference
    (agreement None)."""
    rows, _ = grpo.grpo_rows([record("r", [2]), record("tie", [0, 2], answer="4.")], no_unique_mode="skip")
    rows = [rows[0]] * 3 + [rows[1]]
    columns = {key: [row[key] for row in rows] for key in rows[0] if key != "prompt"}
    logged: list[tuple] = []
    completions = ["<think>Ответ верный.</think>2", "<think>Обрыв", "<think>Ответ есть.</think>",
                   "<think>Ответ верный.</think>2"]
    rewards = agreement_reward(completions=completions, log_metric=lambda name, value: logged.append((name, value)),
                               **columns)
    assert rewards == [1.0, 0.0, 0.0, None] and logged == [("verdicts/failed_share", 0.5),
                                                           ("verdicts/out_of_scale_share", 0.0),
                                                           ("verdicts/between_levels_share", 0.0)]


def test_a_tagged_verdict_between_two_levels_is_no_well_formed_verdict():
    """A tagged judge's "[RESULT] 1.5" on a 0..2 rubric hedges between two points, which the prompt rules out
    ("the score must correspond to a single scale point"): no format reward and no agreement, counted in its own
    share; on a level the same verdict earns both (agreement 1 - |1 - 2| / 2 = 0.5)."""
    rows, _ = grpo.grpo_rows([record("r", [2])], verdict_format="tagged")
    formats, agreements, logged = rewards_for(rows * 2, ["[FEEDBACK] Почти верно. [RESULT] 1.5 [END]",
                                                         "[FEEDBACK] Почти верно. [RESULT] 1 [END]"])
    assert (formats, agreements) == ([0.0, 1.0], [0.0, 0.5])
    assert ("verdicts/between_levels_share", 0.5) in logged and ("verdicts/out_of_scale_share", 0.0) in logged


# ---- data rules --------------------------------------------------------------------------------------------------


def test_zero_shot_items_are_refused_or_dropped_and_bad_labels_counted():
    """The paper's no-Zero-Shot rule as the other recipes apply it (refuse by default, drop and count on request);
    an expert score off the rubric or between its levels, and a rubric without a scale, are counted, never trained
    on."""
    # The Zero-Shot item has an instruction of its own: an instruction's rows share one split (judge.splits_of).
    zero_shot = dataclasses.replace(record("zs", [1], task_type="Code modification"),
                                    instruction="Перепиши функцию на Python без рекурсии.")
    items = [record("std", [2]), zero_shot, record("off", [3], answer="4."),
             record("noscale", [1], rubrics="Оцените ответ."), record("between", [1.5, 2], answer="Четыре!")]
    with pytest.raises(judge.LeakageError, match="zs"):
        grpo.grpo_rows(items)
    rows, report = grpo.grpo_rows(items, zero_shot="drop")
    assert [row["id"] for row in rows] == ["std"]
    assert dict(report.dropped) == {"zero_shot": 1, "score_out_of_scale": 1, "no_scale": 1, "score_not_a_level": 1}
    assert report.zero_shot_ids == ["zs"] and (report.n_records, report.n_verdicts, report.n_rows) == (5, 5, 1)


def _write_traces(path: Path, rows: list[dict]) -> list[judge.JudgeRecord]:
    """Rows as the traces stage writes traces.jsonl (one per kept trace, an item's fields on each), read back by
    judge-train's loader: the data of the SFT step before GRPO."""
    from train.build_data import load_training_records

    item = {"instruction": "Сколько будет два плюс два?", "answer": "Четыре.", "criteria_name": "Грамотность",
            "rubrics": RUBRIC, "task_type": "Editing"}
    path.write_text("".join(json.dumps({**item, **row}, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return load_training_records(str(path))


def test_one_prompt_per_item_when_given_the_traces_of_the_sft_step(tmp_path):
    """traces.jsonl holds an item once per kept trace: 4 traces of item1 and 1 of item2 are 2 prompts, not 5 (each
    copy would be drawn as a prompt of its own, the item the teacher agreed on most weighing 4 times). The first
    row of a prompt is kept; the other 3 are counted as duplicate_prompt, so 2 + 3 = 5 rows read."""
    traces = [{"id": f"item1#{k}", "item_id": "item1", "expert_scores": [2], "reasoning": f"Рассуждение {k}: верно.",
               "reasoning_score": 2} for k in range(4)]
    traces.append({"id": "item2#0", "item_id": "item2", "answer": "Пять.", "expert_scores": [0],
                   "reasoning": "Ответ неверный совсем.", "reasoning_score": 0})
    rows, report = grpo.grpo_rows(_write_traces(tmp_path / "traces.jsonl", traces))
    assert [row["id"] for row in rows] == ["item1#0", "item2#0"]
    assert dict(report.dropped) == {"duplicate_prompt": 3} and (report.n_records, report.n_rows) == (5, 2)
    # The copies' scores are item1's again: 1 + 1 expert scores, not 5.
    assert report.summary() == ("5 items (2 expert scores) -> 2 prompts kept; dropped 3 items: "
                                "duplicate_prompt=3")


def test_one_prompt_judged_by_two_panels_pools_their_scores(tmp_path):
    """Records of one prompt that are other items (two answer models writing the same text to one instruction) pool
    their panels' scores: the reference must not depend on the rows' order. A copy is told by its item, never by its
    scores: b [1, 2] is another item whose panel scored as a's did, and is evidence all the same. By hand: a [2, 1],
    b [1, 2] and c [1, 1] pool to [2, 1, 1, 2, 1, 1], four 1s and two 2s, mode 1 (alone, a's panel has no unique
    mode). Two rows dropped as duplicate_prompt, both pooled."""
    rows = [{"id": "a", "expert_scores": [2, 1]}, {"id": "b", "expert_scores": [1, 2]},
            {"id": "c", "expert_scores": [1, 1]}]
    kept, report = grpo.grpo_rows(_write_traces(tmp_path / "items.jsonl", rows))
    assert [(row["id"], row["expert_scores"], row["reference_scores"]) for row in kept] == \
        [("a", [2.0, 1.0, 1.0, 2.0, 1.0, 1.0], [1.0])]
    assert dict(report.dropped) == {"duplicate_prompt": 2} and report.n_pooled_panels == 2
    assert report.summary() == ("3 items (6 expert scores) -> 1 prompts kept; dropped 2 items: duplicate_prompt=2 "
                                "(2 other panels' scores pooled)")
    assert report.to_dict()["n_pooled_panels"] == 2
    # In the other order the row is the same: the item of the smallest id (a, the traces stage's rule), its panel
    # first, the others in item order.
    kept, _ = grpo.grpo_rows(_write_traces(tmp_path / "items2.jsonl", rows[::-1]))
    assert [(row["id"], row["expert_scores"], row["reference_scores"]) for row in kept] == \
        [("a", [2.0, 1.0, 1.0, 2.0, 1.0, 1.0], [1.0])]


def test_items_of_one_prompt_with_one_label_each_pool_into_their_mode(tmp_path):
    """One-label data (a teacher's score per answer): three answer models answered one instruction alike and were
    labelled 2, 1, 2. Three items, three labels: pooled [2, 1, 2], mode 2 by 2 votes to 1, so a verdict 1 earns
    1 - 1/2 = 0.5, not the full reward a tie's nearest mode would pay it. Told apart by score alone, m3 [2] was m1's
    copy: [2, 1] tied and the item was dropped."""
    rows = [{"id": "m1", "expert_scores": [2]}, {"id": "m2", "expert_scores": [1]}, {"id": "m3", "expert_scores": [2]}]
    kept, report = grpo.grpo_rows(_write_traces(tmp_path / "items.jsonl", rows))
    assert [(row["id"], row["expert_scores"], row["reference_scores"]) for row in kept] == \
        [("m1", [2.0, 1.0, 2.0], [2.0])]
    assert (dict(report.dropped), report.n_pooled_panels, report.n_expert_scores) == ({"duplicate_prompt": 2}, 2, 3)
    _, agreements, _ = rewards_for(kept * 2, ["<think>Ответ частично верный.</think>1",
                                              "<think>Ответ полностью верный.</think>2"])
    assert agreements == [0.5, 1.0]


def test_copies_of_one_item_are_told_by_its_item_id_not_its_scores(tmp_path):
    """traces.jsonl rows of one item (``item_id`` item1) are copies whatever order their scores come in; a record of
    another item with the same scores (item2, no item_id: its id) is pooled. By hand: item1 [2, 1] once, item2
    [1, 2] added: [2, 1, 1, 2], tied 1 and 2, so drop leaves the prompt out; nearest keeps both modes."""
    rows = [{"id": "item1#0", "item_id": "item1", "expert_scores": [2, 1]},
            {"id": "item1#1", "item_id": "item1", "expert_scores": [2, 1]},
            {"id": "item2", "expert_scores": [1, 2]}]
    records = _write_traces(tmp_path / "traces.jsonl", rows)
    kept, report = grpo.grpo_rows(records, no_unique_mode="nearest")
    assert [(row["id"], row["expert_scores"], row["reference_scores"]) for row in kept] == \
        [("item1#0", [2.0, 1.0, 1.0, 2.0], [1.0, 2.0])]
    assert (dict(report.dropped), report.n_pooled_panels, report.n_expert_scores) == ({"duplicate_prompt": 2}, 1, 4)
    assert report.n_kept_without_unique_mode == 1


def test_the_prompt_is_the_one_judge_serve_renders_for_the_format(qwen3_tokenizer):
    """integer: judge.apply_chat with thinking on (the template stops at the assistant header, the judge opens its
    own <think>); tagged: thinking off (the empty <think> block closed in the prompt)."""
    rows, _ = grpo.grpo_rows([record("r", [2])])
    prompt = judge.render_prompt(record("r", [2]))
    integer = grpo.grpo_dataset(rows, qwen3_tokenizer, "integer")[0]["prompt"]
    tagged = grpo.grpo_dataset(rows, qwen3_tokenizer, "tagged")[0]["prompt"]
    assert integer == "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n"
    assert tagged == integer + "<think>\n\n</think>\n\n"


def _char_tokenizer(post_processor: str):
    """A real fast tokenizer, one token per character, whose own special tokens are ``post_processor`` (a
    ``TemplateProcessing`` single template) and whose chat template renders ``{{ bos_token }}`` as Llama's does."""
    import string

    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "</s>": 1, "<unk>": 2}
    for ch in "абвгдеёжзийклмнопрстуфхцчшщъыьэюя" + "АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ" + "«»—–…№" + string.printable:
        vocab.setdefault(ch, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    backend.post_processor = processors.TemplateProcessing(single=post_processor,
                                                           special_tokens=[("<s>", 0), ("</s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tokenizer.chat_template = ("{{ bos_token }}{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
                               "{% if add_generation_prompt %}[assistant]{% endif %}")
    return tokenizer


def test_a_bos_adding_tokenizer_trains_on_the_prompt_tokens_judge_serve_sends():
    """trl tokenizes a text prompt with the tokenizer's special tokens (``processing_class(text=prompts)``), judge-serve
    the chat text without them: a tokenizer that adds its BOS to a template that renders one got two in training."""
    tokenizer = _char_tokenizer("<s> $A")
    rows, _ = grpo.grpo_rows([record("r", [2])])
    served = tokenizer(judge.apply_chat(tokenizer, rows[0]["prompt"]), add_special_tokens=False)["input_ids"]
    assert served[:2] == [0, tokenizer.convert_tokens_to_ids("[")] and served.count(0) == 1  # one BOS, then "[user]"
    text = grpo.grpo_dataset(rows, tokenizer, "tagged")[0]["prompt"]
    assert tokenizer(text)["input_ids"] == served  # what trl's _tokenize_prompts computes


def test_a_tokenizer_adding_tokens_its_template_does_not_render_is_refused():
    tokenizer = _char_tokenizer("$A </s>")  # an EOS after every prompt: no text trl is given tokenizes as served
    rows, _ = grpo.grpo_rows([record("r", [2])])
    with pytest.raises(ConfigError, match="adds special tokens its chat template does not account for"):
        grpo.grpo_dataset(rows, tokenizer, "tagged")


def test_the_tokenization_check_reads_one_prompt_not_the_whole_set():
    """Whether trl tokenizes a prompt as judge-serve does is decided on one prompt: the check does not tokenize every
    prompt, work that grows with the data set, to learn what one prompt tells."""
    rows, _ = grpo.grpo_rows([record(f"r{i}", [2]) for i in range(20)])

    class Counting:
        """The tokenizer, counting the texts it is asked to tokenize."""

        def __init__(self, tokenizer):
            self.tokenizer, self.texts = tokenizer, 0

        def __call__(self, text, **kwargs):
            self.texts += len(text) if isinstance(text, list) else 1
            return self.tokenizer(text, **kwargs)

        def __getattr__(self, name):
            return getattr(self.tokenizer, name)

    for post_processor in ("$A", "<s> $A"):  # adds nothing; adds a BOS its template renders too
        tokenizer = Counting(_char_tokenizer(post_processor))
        texts = [judge.apply_chat(tokenizer.tokenizer, row["prompt"]) for row in rows]
        served = [tokenizer.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
        prompts = grpo.grpo_dataset(rows, tokenizer, "tagged")["prompt"]
        assert tokenizer.texts <= 3
        assert [tokenizer.tokenizer(text)["input_ids"] for text in prompts] == served  # every one, as served


# ---- config --------------------------------------------------------------------------------------------------------


def test_the_tiny_config_parses_and_a_flag_overrides_it(monkeypatch):
    """configs/train/tiny/grpo.yaml is a GRPORecipeConfig; --num-generations beats the YAML; the defaults not in
    the YAML are trl 1.16 GRPOConfig's (beta 0, loss dapo, temperature 1.0, group 8, lr 1e-6)."""
    from train.cli import build_run_parser
    from train.config import config_from_args

    monkeypatch.chdir(REPO)
    config = config_from_args(build_run_parser().parse_args(["--config", str(TINY_GRPO), "--num-generations", "2"]))
    assert isinstance(config, GRPORecipeConfig) and config.num_generations == 2 and config.verdict_format == "integer"
    defaults = GRPORecipeConfig()
    from trl import GRPOConfig

    trl_defaults = GRPOConfig(output_dir="unused", use_cpu=True, bf16=False)
    for name in ("num_generations", "beta", "loss_type", "temperature", "learning_rate", "max_completion_length",
                 "vllm_mode", "vllm_gpu_memory_utilization"):
        assert getattr(defaults, name) == getattr(trl_defaults, name), name


def test_grpo_loss_types_are_trls():
    """The loss types the config takes are those trl's GRPOConfig documents."""
    from trl import GRPOConfig

    from train.config import GRPO_LOSS_TYPES

    documented = GRPOConfig.__dataclass_fields__["loss_type"].metadata["help"]
    assert all(f"'{name}'" in documented for name in GRPO_LOSS_TYPES)


@pytest.mark.parametrize("text, message", [
    ("recipe: grpo\nglobal_batch_size: 6\nnum_generations: 4\n", "must be a multiple of num_generations 4"),
    ("recipe: grpo\nrewards: {length_reward: 1.0}\n", "unknown reward"),
    ("recipe: grpo\neval_fraction: 0.1\n", "takes no validation set"),
    ("recipe: grpo\nno_unique_mode: median\n", "no_unique_mode must be"),
    ("recipe: grpo\nvllm_mode: remote\n", "vllm_mode must be"),
    ("recipe: grpo\nloss_type: daop\n", "loss_type must be one of .*'dapo'"),  # trl: only at its first loss
    ("recipe: grpo\ntrainer_args: {beta: 0.1}\n", "'beta' is a key of this config"),
    # trl settings trl itself checks only mid-training: 0 iterations divide by zero at the first step; an unknown
    # scale_rewards or importance_sampling_level is refused after the first generation
    ("recipe: grpo\ntrainer_args: {num_iterations: 0}\n", r"^trainer_args\.num_iterations must be a positive "
     r"integer, got 0$"),
    ("recipe: grpo\ntrainer_args: {scale_rewards: bogus}\n", r"^trainer_args\.scale_rewards must be one of "
     r"\['group', 'batch', 'none', True, False\], got 'bogus'$"),
    ("recipe: grpo\ntrainer_args: {importance_sampling_level: bogus}\n", r"^trainer_args\.importance_sampling_level "
     r"must be one of \['token', 'sequence'\], got 'bogus'$"),
    ("recipe: grpo\ntrainer_args: {multi_objective_aggregation: sum}\n", r"^trainer_args\.multi_objective_aggregation "
     r"must be one of \['sum_then_normalize', 'normalize_then_sum'\], got 'sum'$"),
    ("recipe: grpo\ntrainer_args: {epsilon: -0.2}\n", r"^trainer_args\.epsilon must be a number >= 0, got -0\.2$"),
    ("recipe: grpo\ntrainer_args: {epsilon_high: -1}\n", r"^trainer_args\.epsilon_high must be a number >= 0 or "
     r"null, got -1\.0$"),
    ("recipe: grpo\ntrainer_args: {top_p: 0.0}\n", r"^trainer_args\.top_p must be a number in \(0, 1\], got 0\.0$"),
    ("recipe: grpo\ntrainer_args: {top_p: 1.5}\n", r"^trainer_args\.top_p must be a number in \(0, 1\], got 1\.5$"),
])
def test_bad_grpo_settings_are_refused(tmp_path, text, message):
    """Impossible GRPO settings are config errors naming the field, before any work."""
    path = tmp_path / "grpo.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_trls_own_values_of_the_checked_grpo_settings_are_taken(tmp_path):
    """Every value trl 1.16 accepts for a checked setting loads: scale_rewards false (trl's "none"), sequence-level
    importance sampling, epsilon_high unset, top_p 1, 2 iterations."""
    path = tmp_path / "grpo.yaml"
    path.write_text("recipe: grpo\ntrainer_args: {scale_rewards: false, importance_sampling_level: sequence, "
                    "epsilon_high: null, epsilon: 0, top_p: 1, num_iterations: 2, "
                    "multi_objective_aggregation: normalize_then_sum}\n")
    assert load_config(path).trainer_args["num_iterations"] == 2


def test_checked_grpo_setting_values_are_those_trl_documents():
    """The named values the config takes for a trl setting are the ones trl's GRPOConfig documents for it (its help
    text), so a trl upgrade that renames one fails here rather than mid-training."""
    from trl import GRPOConfig

    from train.config import GRPO_TRAINER_ARG_CHOICES

    assert set(GRPO_TRAINER_ARG_CHOICES) == {"scale_rewards", "importance_sampling_level",
                                             "multi_objective_aggregation"}
    for key, values in GRPO_TRAINER_ARG_CHOICES.items():
        documented = GRPOConfig.__dataclass_fields__[key].metadata["help"]
        assert all(f"{value}'" in documented or f"`{value}`" in documented for value in values), key


def test_judge_train_grpo_help(capsys):
    """`judge-train grpo --help` exits 0 and lists the GRPO fields."""
    from train.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["grpo", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and "judge-train grpo" in out and "--num-generations" in out


# ---- vLLM: trl's line for training generation, 0.32 for serving ------------------------------------------------


def test_training_generation_uses_trls_vllm_line_and_serving_its_own():
    """trl 1.16 generates with vLLM 0.22-0.31 (it warns on the installed 0.32); the grpo-gpu extra pins that range
    (TRAINING_VLLM), judge-serve's gpu extra the 0.32 line, and the two admit no common release."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet
    from trl.import_utils import is_vllm_available

    from serve.engine_version import SUPPORTED_VLLM

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["grpo-gpu"] == [f"vllm{grpo.TRAINING_VLLM}"]
    training, serving = SpecifierSet(grpo.TRAINING_VLLM), SpecifierSet(SUPPORTED_VLLM)
    # trl's own vllm extra and its version check stop at 0.31.0 (a 0.31.2 gets its warning)
    assert {v for v in ("0.21.9", "0.22.0", "0.31.0", "0.31.2") if v in training} == {"0.22.0", "0.31.0"}
    trl_vllm = next(r for r in metadata.requires("trl") if r.startswith("vllm") and "extra ==" in r)
    assert SpecifierSet(trl_vllm.split(";")[0].removeprefix("vllm")) == training
    assert not any(v in training for v in ("0.21.9", "0.32.0")) and not any(v in serving for v in ("0.31.0", "0.22.0"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        is_vllm_available()
    assert any("0.22.0 to 0.31.0" in str(w.message) for w in caught), "trl's supported vLLM range moved: revisit"


@pytest.mark.parametrize("installed, accepted", [("0.31.0", True), ("0.22.0", True), ("0.32.0", False),
                                                 ("0.21.0", False), (None, False)])
def test_vllm_generation_refuses_a_vllm_outside_trls_line(installed, accepted):
    """use_vllm with the serving line (0.32) or no vLLM is a config error naming the extra to install."""
    if accepted:
        grpo.check_training_vllm(installed)
    else:
        with pytest.raises(ConfigError, match=r"grpo-gpu"):
            grpo.check_training_vllm(installed)


# ---- Slurm ---------------------------------------------------------------------------------------------------------


def _in_submit_folder(monkeypatch, tmp_path: Path) -> Path:
    """Submit from a folder holding what the shipped configs' relative paths name: submit checks the data and the
    base model there, as the job reads them (tests/support/submit_folder.py); their hub ids are in no cache."""
    from tests.support.submit_folder import shipped_configs_submit_folder

    folder = shipped_configs_submit_folder(tmp_path / "submit")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # online, so an uncached hub id is left to the job
        monkeypatch.delenv(name, raising=False)
    return folder


def _dry_run(capsys, config: Path, nodes: int, *after: str) -> tuple[int, str, str]:
    from train import slurm_submit

    code = slurm_submit.main(["--config", str(config), "--nodes", str(nodes), "--gpus-per-node", "8", "--dry-run",
                              *(("--", *after) if after else ())])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_colocated_grpo_job_is_an_ordinary_one_node_job(capsys, monkeypatch, tmp_path):
    """vllm_mode colocate: one node, 8 ranks, 256 / (4 x 8) = 8 accumulation, no server."""
    _in_submit_folder(monkeypatch, tmp_path)
    code, script, _ = _dry_run(capsys, COLOCATE_GRPO, 1)
    assert code == 0 and "export JUDGE_GRAD_ACCUM=8" in script and "#SBATCH --nodes=1" in script
    assert "export JUDGE_VLLM_SERVE_MODEL" not in script


def test_a_job_is_planned_from_the_config_with_the_arguments_after_the_double_dash(capsys, monkeypatch, tmp_path):
    """The job runs the config with the arguments after ``--`` applied, so submit plans from that one (it planned
    from the file alone): the vLLM server serves the model the job trains, colocate takes every node for training
    (2 nodes x 8 ranks: 256 / (4 x 16) = 4 accumulation, no server), and a per-device batch of 32 on the 16 training
    ranks (512 > 256) is refused now, not after the queue."""
    _in_submit_folder(monkeypatch, tmp_path)
    code, script, _ = _dry_run(capsys, SERVER_GRPO, 3, "--model-name-or-path", "Qwen/Qwen3-4B")
    assert code == 0 and "export JUDGE_VLLM_SERVE_MODEL=Qwen/Qwen3-4B" in script
    code, script, _ = _dry_run(capsys, SERVER_GRPO, 2, "--vllm-mode", "colocate")
    assert code == 0 and "export JUDGE_VLLM_SERVE_MODEL" not in script and "export JUDGE_GRAD_ACCUM=4" in script
    code, _, err = _dry_run(capsys, SERVER_GRPO, 3, "--per-device-train-batch-size", "32")
    assert code == 2 and "does not divide" in err, err


def test_a_server_mode_grpo_job_serves_on_the_first_node_and_trains_on_the_rest(capsys, monkeypatch, tmp_path):
    """vllm_mode server on 3 nodes: `trl vllm-serve` (tensor parallel 8) on node 1, torchrun on nodes 2-3 (16 ranks:
    256 / (4 x 16) = 4 accumulation) pointed at node 1's address; one node is refused. The rendered script runs
    against stand-in srun/scontrol and launches both steps with the same requeue/resume logic as SFT jobs."""
    submit_folder = _in_submit_folder(monkeypatch, tmp_path)
    code, _, err = _dry_run(capsys, SERVER_GRPO, 1)
    assert code == 2 and "--nodes 2 or more" in err
    code, script, _ = _dry_run(capsys, SERVER_GRPO, 3)
    assert code == 0 and "export JUDGE_GRAD_ACCUM=4" in script and "#SBATCH --requeue" in script
    assert "export JUDGE_VLLM_SERVE_MODEL=Qwen/Qwen3-8B" in script and "export JUDGE_VLLM_SERVE_TP=8" in script

    out = tmp_path / "run"
    (out / "checkpoint-3").mkdir(parents=True)
    (out / "checkpoint-3" / "trainer_state.json").write_text("{}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # The server's srun runs in the background and the job kills it on exit: the training srun waits until the
    # server's call is on record, so that both are, whatever the scheduling.
    # A port probe's step (python3 on one host) runs, as on the host it names, and is not recorded.
    fakes = {"srun": 'if [[ $* == *"import socket"* ]]; then while [[ $1 == --* ]]; do shift; done; exec "$@"; fi\n'
                     'if [[ " $* " != *" --ntasks=1 "* ]]; then\n'
                     '  for _ in $(seq 100); do grep -q -- --ntasks=1 "$FAKE_SRUN_ARGS" 2>/dev/null && break; sleep 0.1; done\n'
                     'fi\nprintf "%s\\0" "$@" >>"$FAKE_SRUN_ARGS"; printf "\\036" >>"$FAKE_SRUN_ARGS"\n',
             "scontrol": 'case "$1 $2" in\n  "show hostnames") printf "gx-1\\ngx-2\\ngx-3\\n";;\n'
                         '  "show node") echo "NodeName=$3 NodeAddr=10.0.0.${3#gx-}";;\nesac\n',
             "torchrun": "exit 0\n", "judge-train": "exit 0\n", "trl": "exit 0\n"}
    for name, body in fakes.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    script = script.replace(f"export JUDGE_OUTPUT_DIR={submit_folder / 'runs' / 'qwen3-8b-grpo'}",
                            f"export JUDGE_OUTPUT_DIR={out}")
    # What `submit --srun-args=--container-image=judge.sqsh --master-port 29577` renders: a value in the job's
    # environment does not reach the script, which unsets every JUDGE_* variable submit was not given.
    script = script.replace("# --- end of rendered values ---", "export JUDGE_SRUN_ARGS=--container-image=judge.sqsh "
                            "JUDGE_MASTER_PORT=29577\n# --- end of rendered values ---", 1)
    (tmp_path / "job.sbatch").write_text(script)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
           # python3 is this test's interpreter, which imports train (the script asks train.output_folder which
           # checkpoints are whole)
           "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
           "FAKE_SRUN_ARGS": str(tmp_path / "srun"), "SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "gx-[1-3]", "SLURM_JOB_NUM_NODES": "3",
           "SLURM_CPUS_PER_TASK": "16", "JUDGE_SRUN_ARGS": "--container-image=judge.sqsh",
           "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
           "JUDGE_MASTER_PORT": "29577"}  # the port probe's own step is tests/unit/test_slurm_scripts.py's  # fmt: skip
    proc = subprocess.run(["bash", str(tmp_path / "job.sbatch")], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "resume      yes" in proc.stdout and "rendezvous  10.0.0.2:29577" in proc.stdout
    # A call's arguments end in NUL, the call in RS (\x1e): the server's Python program holds newlines.
    server, training = sorted((call.split("\0") for call in (tmp_path / "srun").read_text().split("\0\x1e")[:-1]),
                              key=lambda call: "--ntasks=1" not in call)  # the server's step first
    assert "--nodelist=gx-1" in server and server[-8:-3] == ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "8",
                                                               "--port"] and server[-2:] == ["--host", "0.0.0.0"]
    serve_port = server[-3]  # found free on gx-1 when the job started: the trainer is pointed at the same one
    assert 'trap "" USR1' in server[server.index("-c") + 1]
    assert "--nodes=2" in training and "--nodelist=gx-2,gx-3" in training
    for step in (server, training):  # the generation server runs in the job's container, on its CPUs, as training
        assert "--cpus-per-task=16" in step and "--container-image=judge.sqsh" in step, step
    tail = training[training.index("judge-train", training.index("-c") + 2) + 1:]
    assert tail[:-1] == ["--config", str(SERVER_GRPO), "--output-dir", str(out), "--resume",
                         "--vllm-server-host", "10.0.0.1", "--vllm-server-port", serve_port, "--vllm-group-port"]
    assert 1 <= int(serve_port) <= 65535 and 1 <= int(tail[-1]) <= 65535


def test_released_benchmark_rows_are_refused_as_grpo_prompts(tmp_path, capsys):
    """Rows in the released POLLUX benchmark's schema stop `judge-train grpo` with exit 2 and the dataset card's
    reason, as in the other recipes (train.build_data.load_training_records), before the base model is built."""
    from train.cli import main

    row = json.loads((REPO / "judge" / "data" / "sample.jsonl").read_text(encoding="utf-8").splitlines()[0])
    data = tmp_path / "benchmark.jsonl"
    data.write_text(json.dumps({**row, "is_provocative": False, "criteria_description": "Описание."},
                               ensure_ascii=False) + "\n", encoding="utf-8")  # fmt: skip
    code = main(["grpo", "--config", str(TINY_GRPO), "--data", str(data), "--output-dir", str(tmp_path / "run")])
    assert code == 2 and "released POLLUX benchmark" in capsys.readouterr().err
    assert not (tmp_path / "run" / "base-model").exists()


def test_gives_reasons_counts_words_not_pieces_between_spaces():
    """Two words are two runs of letters or digits: punctuation alone gives no reason, and words joined by
    punctuation without a space are still two (the paper's "at least two words", Appendix B)."""
    from judge.verdicts import gives_reasons, rationale_words

    assert not gives_reasons(". .") and not gives_reasons("— —") and not gives_reasons("что-то")
    assert gives_reasons("Ошибок,нет.") and gives_reasons("Ответ верен") and not gives_reasons("Верно.")
    # the count build-data's one-word exception reads: a hyphenated word is one, punctuation none
    assert (rationale_words("Безупречно-точно."), rationale_words(". —"), rationale_words(None)) == (1, 0, 0)


# ---- the data report counts items; the t-lite config keeps the integer SFT's room --------------------------------


def test_the_data_report_counts_items_in_every_field_the_log_and_run_json_read():
    """One prompt per item, so the report counts items: kept + dropped is the items read, which n_verdicts (one
    reference each) is; the six expert scores of the five items are n_expert_scores, beside them. By hand: std
    kept; zs (zero_shot), off (3 on 0..2), noscale, between (1.5) dropped: 1 + 4 = 5 items, 1+1+1+1+2 = 6 scores."""
    zero_shot = dataclasses.replace(record("zs", [1], task_type="Code modification"),
                                    instruction="Перепиши функцию на Python без рекурсии.")
    items = [record("std", [2]), zero_shot, record("off", [3], answer="4."),
             record("noscale", [1], rubrics="Оцените ответ."), record("between", [1.5, 2], answer="Четыре!")]
    _, report = grpo.grpo_rows(items, zero_shot="drop")
    assert report.n_rows + sum(report.dropped.values()) == report.n_verdicts == report.n_records == 5
    assert report.to_dict()["n_expert_scores"] == 6
    # the line the recipe's data step logs, once a run (grpo.grpo_prompts)
    assert report.summary() == ("5 items (6 expert scores) -> 1 prompts kept; dropped 4 items: no_scale=1, "
                                "score_not_a_level=1, score_out_of_scale=1, zero_shot=1")


def test_the_t_lite_grpo_config_samples_as_long_as_its_base_learned():
    """The t-lite GRPO run starts from the integer SFT export (configs/train/t-lite/seq2seq.yaml with --verdict-format
    integer), trained on teacher traces of up to configs/data/traces.yaml's max_tokens (4096) in rows of up to its
    max_length (4096): its completions are shorter than both. GRPO samples up to 4096 completion tokens, so none of
    them is cut, and keeps the room for prompts of up to 4096 tokens it had (8192 - 4096)."""
    from judge.plumbing.config_files import read_config_file

    grpo_config = load_config(COLOCATE_GRPO, {"deepspeed": None})
    sft = load_config(REPO / "configs" / "train" / "t-lite" / "seq2seq.yaml", {"deepspeed": None})
    traces_max_tokens = read_config_file(REPO / "configs" / "data" / "traces.yaml")["teacher"]["max_tokens"]
    assert grpo_config.max_completion_length >= min(traces_max_tokens, sft.max_length) == 4096
    assert grpo_config.max_length - grpo_config.max_completion_length == 4096
    assert grpo_config.model_name_or_path == "runs/t-lite-integer/export" and grpo_config.verdict_format == "integer"


def test_a_run_whose_groups_never_differed_in_reward_is_warned_about(caplog):
    """Every step of a GRPO run with frac_reward_zero_std 1 (every completion of a group rewarded alike, e.g. all
    cut and paid 0) had advantages of 0: the export was the base model, exit 0, and nothing said so. One step with
    a group that differed (0.5) is learning; a history without the figure (not GRPO's) says nothing."""
    import logging

    history = [{"loss": 0.0, "frac_reward_zero_std": 1.0}, {"frac_reward_zero_std": 1.0}, {"train_runtime": 3.0}]
    with caplog.at_level(logging.WARNING, logger="train.grpo"):
        assert grpo.warn_if_nothing_to_learn(history)
        assert not grpo.warn_if_nothing_to_learn([*history, {"frac_reward_zero_std": 0.5}])
        assert not grpo.warn_if_nothing_to_learn([{"loss": 0.1}])
    (said,) = [r.getMessage() for r in caplog.records if r.name == "train.grpo"]
    assert said.startswith("every group of completions at every logged step (2) had equal rewards "
                           "(frac_reward_zero_std 1): GRPO had no advantage to learn from, and the export is the base "
                           "model again.")

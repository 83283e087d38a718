"""train.grpo_rewards.format_reward reads each completion once: the verdict and the bare-answer check are made from
one read text (after the ``<think>`` its prompt opened), with the results the hand-written cases pin."""

from __future__ import annotations

import pytest

import train.grpo_rewards as grpo_rewards
from train.grpo_rewards import format_reward

END = 9  # the one end id bound here: a completion's ids ending elsewhere were cut by the length limit
ZERO_TO_TWO, MINUS_ONE_TO_ONE = ([0, 1, 2], 2), ([-1, 0, 1], 1)
THINKING = "<|im_start|>user\n### Задание:\nОцените ответ.<|im_end|>\n<|im_start|>assistant\n<think>\n"
PLAIN = "<|im_start|>user\n### Задание:\nМодель пишет <think>.<|im_end|>\n<|im_start|>assistant\n"

#: (completion, verdict format, (levels, best), prompt, cut, format reward): the cases of the existing format_reward
#: tests (tests/unit/test_train_grpo.py's REWARD_CASES and answers-as-trained cases, test_grpo_rewards_think.py's
#: prompts), plus a cut one, in one batch.
CASES = [
    ("<think>Ответ верный и полный.</think>\n\n2", "integer", ZERO_TO_TWO, None, False, 1.0),
    ("<think>Есть неточность.</think>\n\n1", "integer", ZERO_TO_TWO, None, False, 1.0),
    ("<think>Ответ неверный.</think>\n\n0", "integer", ZERO_TO_TWO, None, False, 1.0),
    ("<think>Ответ верный, но надо проверить ещё", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Ответ верный.</think>\n\n", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Всё отлично.</think>\n\n5", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Хуже эталона.</think>\n\n-1", "integer", MINUS_ONE_TO_ONE, None, False, 1.0),
    ("<think>Так же.</think>\n\n0", "integer", MINUS_ONE_TO_ONE, None, False, 1.0),
    ("<think>Намного хуже.</think>\n\n-2", "integer", MINUS_ONE_TO_ONE, None, False, 0.0),
    ("[FEEDBACK] Есть неточность. [RESULT] 1 [END]", "tagged", ZERO_TO_TWO, None, False, 1.0),
    ("[FEEDBACK] Есть неточность. [RESULT] 1", "tagged", ZERO_TO_TWO, None, False, 0.0),
    ("2", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>\n\n</think>\n\n2", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("[FEEDBACK]  [RESULT] 1 [END]", "tagged", ZERO_TO_TWO, None, False, 0.0),
    ("<think>.</think>2", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Верно.</think>\n\n2", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("[FEEDBACK] Верно. [RESULT] 2 [END]", "tagged", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Ответ частично верный.</think>\n\nОценка 1 из 2", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Ответ частично верный.</think>\n\n0 1 2", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Сначала так.</think> <think>Потом иначе.</think>2", "integer", ZERO_TO_TWO, None, False, 0.0),
    ("<think>Ответ <think>верный</think> полностью.</think>2", "integer", ZERO_TO_TWO, None, False, 0.0),
    # read after the <think> the prompt opened: closed, a bare integer after it; never closed, a failure
    ("Ответ верный и полный.</think>\n\n2", "integer", ZERO_TO_TWO, THINKING, False, 1.0),
    ("Ответ верный и полный, значит 2", "integer", ZERO_TO_TWO, THINKING, False, 0.0),
    # a prompt whose judged answer mentions <think> opens nothing
    ("[FEEDBACK] Ответ точный и полный, ошибок нет. [RESULT] 2 [END]", "tagged", ZERO_TO_TWO, PLAIN, False, 1.0),
    # the length limit stopped it: whatever it reads as, no verdict
    ("<think>Ответ верный и полный.</think>\n\n2", "integer", ZERO_TO_TWO, None, True, 0.0),
]


def _call(log_metric=None):
    return format_reward(completions=[c[0] for c in CASES], verdict_format=[c[1] for c in CASES],
                         scale_levels=[c[2][0] for c in CASES], scale_best=[c[2][1] for c in CASES],
                         prompts=[c[3] for c in CASES], completion_ids=[[1, 2] if c[4] else [1, END] for c in CASES],
                         end_token_ids=frozenset({END}), log_metric=log_metric)


def test_format_reward_keeps_its_results_on_the_existing_cases():
    logged = {}
    assert _call(logged.__setitem__) == [c[5] for c in CASES]
    n = len(CASES)
    # failed: unclosed, no answer, tagged without [END], unclosed after the prompt's <think>, cut; off the scale: 5,
    # -2; no reasons: the bare 2, the empty block, the empty [FEEDBACK], "." and the one-word reasons (two formats);
    # not bare: "Оценка 1 из 2", "0 1 2", two blocks, a <think> inside
    assert logged == {"verdicts/failed_share": pytest.approx(5 / n),
                      "verdicts/out_of_scale_share": pytest.approx(2 / n),
                      "verdicts/between_levels_share": 0.0, "verdicts/no_reasoning_share": pytest.approx(6 / n),
                      "verdicts/answer_not_bare_share": pytest.approx(4 / n)}


def test_format_reward_reads_each_completion_once(monkeypatch):
    """One read text per completion serves both the parse and the bare-answer check."""
    read = []

    def counted(completion, prompt):
        read.append(completion)
        return original(completion, prompt)

    original = grpo_rewards._read_text
    monkeypatch.setattr(grpo_rewards, "_read_text", counted)
    assert _call() == [c[5] for c in CASES]
    assert read == [c[0] for c in CASES]

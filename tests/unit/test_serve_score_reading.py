"""judge-serve's reading of a seq2seq completion (``serve.score_reading.seq2seq_verdict``) agrees with the GRPO
rewards' (``train.grpo_rewards.read_verdict``) for a tagged judge whose chat template opened the reasoning in its
prompt: both read the completion after that ``<think>`` (fast tier)."""

from __future__ import annotations

import pytest

from judge import Scale, VerdictError, VerdictFormat
from serve.score_reading import seq2seq_verdict
from train.grpo_rewards import read_verdict

SCALE = Scale((0, 1, 2), best=2)
#: A thinking-always template's generation prompt (Qwen3 Thinking-2507, the R1 distills): it opens the reasoning.
PROMPT = "<|im_start|>user\nОцени<|im_end|>\n<|im_start|>assistant\n<think>\n"
DRAFT = "Черновик: [FEEDBACK] плохо [RESULT] 0 [END]\nНет, верно.\n"


@pytest.mark.parametrize(("completion", "expected"), [
    # the reasoning drafted a verdict, the verdict after its </think> was cut: no verdict, not the draft's 0
    (DRAFT + "</think>\n\n[FEEDBACK] Ответ верный, всё по делу", (None, False, VerdictError.NO_RESULT, "Ответ верный, всё по делу")),
    (DRAFT + "</think>\n\n[FEEDBACK] Ответ верный, всё по делу [RESULT] 2",
     (None, False, VerdictError.MISSING_END, "Ответ верный, всё по делу")),
    # cut inside the reasoning: its draft is no verdict (read without the prompt's <think>, it scored 0)
    (DRAFT + "Проверю ещё", (None, False, VerdictError.UNCLOSED_THINK, "")),
    (DRAFT + "</think>\n\n[FEEDBACK] Ответ верный. [RESULT] 2 [END]", (2.0, True, None, "Ответ верный.")),
    ("\n</think>\n\n[FEEDBACK] Ответ верный. [RESULT] 1 [END]", (1.0, True, None, "Ответ верный.")),
])  # fmt: skip
def test_serve_reads_a_tagged_completion_after_the_reasoning_its_prompt_opened(completion, expected):
    served = seq2seq_verdict(completion, None, SCALE, False, VerdictFormat.TAGGED, reasoning_opened=True)
    trained = read_verdict(completion, "tagged", [0, 1, 2], 2, prompt=PROMPT)
    assert (served["score"], served["parse_ok"], served["error"], served["feedback"]) == expected
    assert (trained.score, trained.ok, trained.error, trained.feedback) == expected


def test_a_prompt_that_opened_nothing_reads_the_completion_as_written():
    """Without reasoning_opened a tagged verdict with no </think> is the verdict, as before."""
    served = seq2seq_verdict("[FEEDBACK] Ответ верный. [RESULT] 2 [END]", None, SCALE, False, VerdictFormat.TAGGED)
    assert (served["score"], served["parse_ok"], served["feedback"]) == (2.0, True, "Ответ верный.")

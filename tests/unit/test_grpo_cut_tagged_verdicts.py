"""A tagged verdict the length limit stopped is read in GRPO training as judge-serve and judge-eval read it
(``judge.verdicts.read_served_verdict``): a ``[RESULT] n [END]`` written whole before the cut scores, a draft with
text after its ``[END]`` fails as ``cut``, and so does a cut before ``[END]``, the parser's reading in its reason
(fast tier)."""

from __future__ import annotations

import pytest

from judge import Scale, VerdictError, VerdictFormat
from serve.score_reading import seq2seq_verdict
from train.grpo_rewards import agreement_reward, format_reward, read_verdict

SCALE = Scale((0, 1, 2), best=2)
END = 9  # the one end id bound here: ids ending elsewhere were cut by max_completion_length
#: A thinking template's generation prompt: the completion starts inside the reasoning it opened.
OPENED = "<|im_start|>user\nОцените ответ.<|im_end|>\n<|im_start|>assistant\n<think>\n"

#: (completion, prompt opened the reasoning, score, ok, error, format reward, agreement reward against the experts' 2)
CASES = [
    # the verdict's block opens the text and is whole: what follows the [END] does not unmake it (format pays 0 for
    # the text around the block, as for any completion)
    pytest.param("[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END] Дополнительно отмечу", False, 2.0, True, None,
                 0.0, 1.0, id="text-after-end"),
    # the limit fell right after [END]: the verdict was written whole
    pytest.param("[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", False, 2.0, True, None, 1.0, 1.0,
                 id="ends-at-end"),
    # cut before [END]: a failure the cut made, so cut (the strict parser's missing_end in its reason), as judge-serve
    # reads it
    pytest.param("[FEEDBACK] Ответ полностью верный. [RESULT] 1", False, None, False, VerdictError.CUT,
                 0.0, 0.0, id="cut-before-end"),
    # cut inside the rationale: no [RESULT] yet, cut too (no_result in its reason)
    pytest.param("[FEEDBACK] Ответ полностью", False, None, False, VerdictError.CUT, 0.0, 0.0,
                 id="cut-in-rationale"),
    # a block drafted inside a reasoning, the text still going after its [END]: no verdict
    pytest.param("Черновик: [FEEDBACK] Ответ верный. [RESULT] 0 [END] Хотя нет", False, None, False, VerdictError.CUT,
                 0.0, 0.0, id="draft-then-text"),
    # after the reasoning its prompt opened and closed, the block whole up to [END]
    pytest.param("Ответ проверен.</think>\n\n[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", True, 2.0, True,
                 None, 1.0, 1.0, id="after-opened-reasoning"),
    # the reasoning the prompt opened never closed: the block is a draft inside it
    pytest.param("[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", True, None, False,
                 VerdictError.UNCLOSED_THINK, 0.0, 0.0, id="inside-opened-reasoning"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "opened", "score", "ok", "error", "formatted", "agreed"), CASES)
def test_grpo_reads_a_cut_tagged_verdict_as_judge_serve(text, opened, score, ok, error, formatted, agreed):
    """The same (score, ok, error) from train.grpo_rewards.read_verdict (cut) and serve's seq2seq_verdict
    (finish_reason "length"), the values derived by hand above."""
    trained = read_verdict(text, "tagged", [0, 1, 2], 2, prompt=OPENED if opened else "", cut=True)
    served = seq2seq_verdict(text, None, SCALE, False, VerdictFormat.TAGGED, reasoning_opened=opened,
                             finish_reason="length")
    assert (trained.score, trained.ok, trained.error) == (score, ok, error)
    assert (served["score"], served["parse_ok"], served["error"]) == (score, ok, error)


@pytest.mark.parametrize(("text", "opened", "score", "ok", "error", "formatted", "agreed"), CASES)
def test_the_rewards_pay_a_cut_tagged_verdict_as_it_reads(text, opened, score, ok, error, formatted, agreed):
    """Called as trl calls them, with completion ids that end on no end id (cut): agreement pays the verdict read
    (1 - |2 - 2| / 2 = 1 for a whole 2), the format reward only a bare, reasoned block."""
    columns = dict(completions=[text], verdict_format=["tagged"], scale_levels=[[0, 1, 2]], scale_best=[2],
                   prompts=[OPENED if opened else ""], completion_ids=[[1, 2]], end_token_ids=frozenset({END}))
    logged: dict[str, float] = {}
    assert format_reward(log_metric=logged.__setitem__, **columns) == [formatted]
    assert agreement_reward(reference_scores=[[2]], **columns) == [agreed]
    assert logged["verdicts/failed_share"] == (0.0 if ok else 1.0)

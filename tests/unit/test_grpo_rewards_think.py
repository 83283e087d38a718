"""train.grpo_rewards reads a completion after its prompt: only the prompt's own end opens a reasoning block, so a
judge prompt whose judged answer mentions "<think>" leaves a tagged verdict a verdict (fast tier)."""

from __future__ import annotations

from train.grpo_rewards import format_reward, read_verdict

# A judge prompt through a ChatML template: the judged answer quotes the tag, the generation prompt opens nothing.
JUDGED_MENTION = ("<|im_start|>user\n### Задание:\nОбъясните формат ответа модели.\n### Ответ модели:\nМодель "
                  "пишет <think>, рассуждает и только потом отвечает.\n### Критерий:\nПолнота\n<|im_end|>\n"
                  "<|im_start|>assistant\n")
THINKING = "<|im_start|>user\n### Задание:\nОцените ответ.<|im_end|>\n<|im_start|>assistant\n<think>\n"
TAGGED = "[FEEDBACK] Ответ точный и полный, ошибок нет. [RESULT] 2 [END]"


def test_a_tagged_verdict_on_an_answer_that_mentions_think_is_read():
    """It failed as unclosed_think: the "<think>" inside the judged answer was taken for the template's."""
    verdict = read_verdict(TAGGED, "tagged", [0, 1, 2], 2, prompt=JUDGED_MENTION)
    assert (verdict.ok, verdict.score, verdict.error) == (True, 2.0, None)
    assert format_reward([TAGGED], ["tagged"], [[0, 1, 2]], [2], prompts=[JUDGED_MENTION]) == [1.0]


def test_the_reasoning_a_thinking_template_opens_still_closes_and_fails_unclosed():
    """A generation prompt ending in "<think>\\n": the completion is read inside that reasoning; closed, its integer
    is the verdict; never closed, it is a counted failure whatever integer it ends with."""
    closed = read_verdict("Ответ верный и полный.</think>\n\n2", "integer", [0, 1, 2], 2, prompt=THINKING)
    assert (closed.ok, closed.score) == (True, 2.0)
    unclosed = read_verdict("Ответ верный и полный, значит 2", "integer", [0, 1, 2], 2, prompt=THINKING)
    assert (unclosed.ok, unclosed.error) == (False, "unclosed_think")
    logged = {}
    assert format_reward(["Ответ верный и полный, значит 2"], ["integer"], [[0, 1, 2]], [2], prompts=[THINKING],
                         log_metric=logged.__setitem__) == [0.0]
    assert logged["verdicts/failed_share"] == 1.0
    # Qwen3 with thinking on opens its own block: read the same with or without a prompt
    own = read_verdict("<think>Ответ верный и полный.</think>\n\n2", "integer", [0, 1, 2], 2, prompt=JUDGED_MENTION)
    assert (own.ok, own.score) == (True, 2.0)


def test_a_tagged_verdict_after_the_reasoning_a_thinking_template_opened_earns_the_format_reward():
    """Where the prompt opened the reasoning, the tagged answer is the block after its </think> (every completion
    is read after the "<think>\\n" put back in front, so a block required at the text's start was never there):
    1 for the one block after one reasoning, nothing after [END]; 0 otherwise."""
    completions = [
        "Думаю.\n</think>\n\n[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]",  # reasoning, then the block
        "\n</think>\n\n[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]",  # the empty block SFT renders
        "Думаю.\n</think>\n\n[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END] а вообще 0",  # text after [END]
        "Думаю.</think><think>Ещё.</think>[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]",  # two blocks
        "[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]",  # never closed: unclosed_think
    ]
    n = len(completions)
    logged = {}
    rewards = format_reward(completions, ["tagged"] * n, [[0, 1, 2]] * n, [2] * n, prompts=[THINKING] * n,
                            log_metric=logged.__setitem__)
    assert rewards == [1.0, 1.0, 0.0, 0.0, 0.0]
    # the third and fourth read as 2 with reasons but are not of the trained form; the fifth fails to parse
    assert (logged["verdicts/answer_not_bare_share"], logged["verdicts/failed_share"]) == (2 / 5, 1 / 5)
    # a prompt that opened nothing: a reasoning block the policy opened itself is text before [FEEDBACK]
    own = "<think>Думаю.</think>[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]"
    assert format_reward([own, TAGGED], ["tagged"] * 2, [[0, 1, 2]] * 2, [2] * 2, prompts=[JUDGED_MENTION] * 2) == [0.0, 1.0]

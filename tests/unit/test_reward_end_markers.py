"""The DeepSeek-R1 distills' end of turn ends the judged answer (fast tier)."""

from __future__ import annotations

import pytest

from judge.rewards import END_OF_TURN_MARKERS, policy_answer
from serve.rewards import answer_of

#: R1's end-of-sequence token, as its tokenizer decodes it with the special tokens kept: full-width vertical bars
#: (U+FF5C) and U+2581 for the spaces, not ASCII "|" and " ".
R1_END = "<\uff5cend\u2581of\u2581sentence\uff5c>"


@pytest.mark.parametrize(("text", "answer"), [
    (f"Ответ.{R1_END}", "Ответ."),
    (f"Ответ.{R1_END}{R1_END}  ", "Ответ."),                                  # more markers, whitespace
    (f"Ответ.{R1_END}<\uff5c\u2581pad\u2581\uff5c><\uff5c\u2581pad\u2581\uff5c>", "Ответ."),  # R1's padding
    (f"Ответ.{R1_END}<\uff5cUser\uff5c>ещё", "Ответ."),                        # ran on into the next turn
    (f"Токен {R1_END} завершает ход.", f"Токен {R1_END} завершает ход."),      # a mention with text after it
])  # fmt: skip
def test_an_r1_distills_end_of_sentence_ends_the_answer(text, answer):
    assert R1_END in END_OF_TURN_MARKERS
    assert policy_answer(text) == answer


def test_get_reward_drops_an_r1_policys_end_marker_and_reasoning():
    """OpenRLHF's query of an R1 distill (its generation prompt opens the reasoning): the answer after </think>,
    without the end-of-sentence token the query decodes with."""
    prompt = "<\uff5cUser\uff5c>Напиши стих.<\uff5cAssistant\uff5c><think>\n"
    assert answer_of(prompt + f"Думаю.\n</think>\n\nВесна пришла.{R1_END}", prompt) == "Весна пришла."


@pytest.mark.parametrize(("text", "answer"), [
    ("Ответ<|end|><|endoftext|>", "Ответ"),                                   # Phi-3's end of turn, then its padding
    ("Ответ<|end|><|user|>ещё", "Ответ"),                                     # Phi-3, ran on into the next turn
    ("Ответ<|eom_id|>", "Ответ"),                                             # Llama 3.1, end of a tool-calling message
    ("Ответ<|END_OF_TURN_TOKEN|>", "Ответ"),                                  # Command-R
    ("Ответ<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>ещё", "Ответ"),
    ("Ответ</s><s>[INST] ещё", "Ответ"),                                      # Llama 2's next turn
    ("Ответ</s> <s> [INST] ещё", "Ответ"),
    ("Ответ</s>[INST] ещё", "Ответ"),                                         # Mistral's next turn: no <s>
    ("Токен <|end|> завершает ход.", "Токен <|end|> завершает ход."),          # a mention with text after it
    ("<s>1000</s>[INST] в тексте", "<s>1000</s>[INST] в тексте"),              # strikethrough: the answer's markup
])  # fmt: skip
def test_phi3_llama31_command_r_and_llama2_turn_ends_end_the_answer(text, answer):
    assert {"<|end|>", "<|eom_id|>", "<|END_OF_TURN_TOKEN|>"} <= set(END_OF_TURN_MARKERS)
    assert policy_answer(text) == answer

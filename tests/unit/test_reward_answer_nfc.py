"""/get_reward's answer when the tokenizer gave the prompt back in another Unicode form (fast tier)."""

from __future__ import annotations

import unicodedata

from serve.rewards import answer_of

# "чай" written with "и" and a combining breve (U+0306): NFD, as some editors and scrapers leave Cyrillic "й".
NFD_PROMPT = "<|im_start|>user\nНапишите рассказ про чаи\u0306 и кофе, пожалуйста.<|im_end|>\n<|im_start|>assistant\n"


def test_answer_of_a_query_whose_tokenizer_composed_the_prompt(qwen_tokenizer):
    """OpenRLHF decodes the prompt's tokens with the response's (``openrlhf/utils/agent.py``); Qwen's tokenizer
    normalises to NFC, so the query starts with the composed "й", not the prompt as sent. The answer is what follows
    it all the same (a refusal would leave OpenRLHF's reward None and fail the step), in the policy's own characters."""
    ids = qwen_tokenizer(NFD_PROMPT, add_special_tokens=False)["input_ids"]
    response = qwen_tokenizer("Жил-был чайник.<|im_end|>", add_special_tokens=False)["input_ids"]
    query = qwen_tokenizer.decode(ids + response, skip_special_tokens=False)
    assert not query.startswith(NFD_PROMPT)  # the case is exercised: the tokenizer changed the prompt's form
    assert answer_of(query, NFD_PROMPT) == "Жил-был чайник."


def test_answer_of_in_nfc_keeps_the_answers_own_characters_and_cut_prompts():
    """Only the form differs: the answer keeps the query's characters (an NFD answer stays NFD when its prompt
    matched as sent, and is read in NFC only where the prompt matched in NFC alone); a prompt cut from the left
    matches in NFC too; another prompt is still refused."""
    composed = unicodedata.normalize("NFC", NFD_PROMPT)
    assert answer_of(composed + "Ответ.<|im_end|>", NFD_PROMPT) == "Ответ."
    assert answer_of(NFD_PROMPT + "Мои\u0306 ответ.<|im_end|>", NFD_PROMPT) == "Мои\u0306 ответ."
    assert answer_of(composed + "Мои\u0306 ответ.<|im_end|>", NFD_PROMPT) == "Мой ответ."
    assert answer_of(composed[40:] + "Ответ.<|im_end|>", NFD_PROMPT) == "Ответ."
    assert answer_of("<|im_start|>user\nДругой запрос про чай и кофе.<|im_end|>\nОтвет.", NFD_PROMPT) is None


def test_the_whole_prompt_in_nfc_is_matched_before_any_exact_tail():
    """The prompt's first sentence, written in NFD, comes back composed at its end, so the query (the prompt
    composed, then the answer) also starts with an exact tail of the prompt (that sentence), after which most of
    the prompt would be taken for the answer. The whole prompt, compared in NFC, matches first (docs/rewards.md)."""
    x = "Напишите рассказ про чай и кофе, пожалуйста, и покороче."
    prompt = unicodedata.normalize("NFD", x) + " Что дальше? " + x
    assert prompt != x + " Что дальше? " + x  # the case is exercised: the first sentence differs in form only
    query = x + " Что дальше? " + x + " Жил-был чайник.<|im_end|>"
    assert answer_of(query, prompt) == "Жил-был чайник."

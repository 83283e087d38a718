"""``/get_reward``'s answer where the tokenizer gives the prompt back spaced otherwise than the dataset wrote it
(fast tier).

OpenRLHF's query is ``decode(encode(prompt) + response)``: ``clean_up_tokenization_spaces`` drops the space before
``. , ? ! '``, a Llama 2 / Mistral SentencePiece decoder writes ``<s>[INST]`` as ``<s> [INST]``. The query then does
not start with the prompt's text, yet the answer is what follows it.
"""

from __future__ import annotations

import pytest

from serve.rewards import answer_of

CHATML = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize(("query", "prompt", "answer"), [
    # clean_up_tokenization_spaces: " ," and " ?" lose their space in the decoded query.
    (CHATML.format("Ответь, пожалуйста : what isn't there?") + "Ответ.<|im_end|>",
     CHATML.format("Ответь , пожалуйста : what isn't there ?"), "Ответ."),
    # " ' " and " n't" are cleaned up too: only spaces go.
    (CHATML.format("It's what isn't.") + "Да.<|im_end|>", CHATML.format("It ' s what is n't ."), "Да."),
    # A SentencePiece decoder: a space after <s>, and the response's own leading space doubled.
    ("<s> [INST] write a poem [/INST]  roses.</s>", "<s>[INST] write a poem [/INST]", "roses."),
    # The prompt decomposed ("й" as "и" and a combining breve) and cleaned up at once: NFC, then the spacing.
    (CHATML.format("Какой ответ?") + "Такой.<|im_end|>", CHATML.format("Како\u0438\u0306 ответ ?"), "Такой."),
    # A thinking template's prompt: the reasoning it opened still closes before the answer.
    (CHATML.format("Почему?") + "<think>\nдумаю\n</think>\n\nПотому.<|im_end|>",
     CHATML.format("Почему ?") + "<think>\n", "Потому."),
])  # fmt: skip
def test_the_answer_follows_a_prompt_spaced_otherwise(query, prompt, answer):
    assert answer_of(query, prompt) == answer


@pytest.mark.parametrize(("query", "prompt"), [
    (CHATML.format("Ответь, пожалуйста?") + "Ответ.", CHATML.format("Ответь , пожалуйста !")),  # "?" is not "!"
    ("<s> [INST] write a poem [/INST] roses.", "<s>[INST] write a song [/INST]"),               # another prompt
    ("<s> [INST] write", "<s>[INST] write a poem [/INST]"),                                     # the prompt cut short
])  # fmt: skip
def test_only_spacing_may_differ(query, prompt):
    """Every character other than whitespace must be the prompt's, in order: anything else is still refused."""
    assert answer_of(query, prompt) is None


def test_an_exact_prompt_is_still_matched_as_written():
    """The exact match comes first: a query that starts with its prompt loses exactly the prompt."""
    prompt = CHATML.format("Ответь , пожалуйста")
    assert answer_of(prompt + "Ответ , вот.<|im_end|>", prompt) == "Ответ , вот."


def test_a_prompt_whose_start_comes_back_at_its_end_is_matched_whole_before_any_tail():
    """The query is the prompt respaced by the tokenizer ("кот ?" decoded "кот?") and then the answer; the prompt's
    first sentence is also its last, so the query also starts with a tail of the prompt (that sentence), after which
    the tail match took most of the prompt for the answer. The whole prompt, spaced otherwise, matches first."""
    from serve.rewards import answer_of

    x = "Ответь на вопрос кратко и по делу."
    prompt = x + " Что такое кот ? " + x
    query = x + " Что такое кот? " + x + " Кот — это животное."
    assert answer_of(query, prompt) == "Кот — это животное."

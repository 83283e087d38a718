"""``/get_reward``'s answer where OpenRLHF cut a long prompt from the left (``prompt_token_ids[-max_prompt_length:]``)
and the tokenizer's decoding also gave the kept tail back spaced otherwise (``clean_up_tokenization_spaces``: "там
?" decoded "там?"): the query starts with a tail of the prompt only on the characters other than whitespace. Its answer
is found: a 400 would cost OpenRLHF the step (it retries, leaves the reward None and fails the step). Untrusted
input: the search stays linear and bounded, and the answer is never text of the prompt."""

from __future__ import annotations

import pytest

import serve.rewards as rewards
from serve.rewards import MAX_TAIL_SEARCH, MIN_PROMPT_TAIL, answer_of

LLAMA3 = ("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{}<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n")
QUESTION = " ".join(f"Вопрос номер {k} : что это такое ?" for k in range(12))
PROMPT = LLAMA3.format(QUESTION)
DECODED = PROMPT.replace(" ?", "?").replace(" :", ":")  # what clean_up_tokenization_spaces gives back


def test_a_cut_and_respaced_prompt_gives_the_answer_after_it():
    assert not DECODED[200:].startswith(PROMPT[-len(DECODED[200:]):])  # no exact tail: only the spacing tells it
    assert answer_of(DECODED[200:] + "Ответ.<|eot_id|>", PROMPT) == "Ответ."


def test_a_cut_that_split_a_letter_and_a_respaced_tail():
    """The cut split a Cyrillic letter's bytes: a replacement character or two open the query."""
    assert answer_of("\ufffd" + DECODED[201:] + " Ответ : да.<|eot_id|>", PROMPT) == "Ответ : да."


def test_a_cut_respaced_prompt_with_no_answer_gives_nothing_to_judge():
    """The policy wrote nothing: the answer is "", never the kept text of the prompt."""
    assert answer_of(DECODED[200:] + "<|eot_id|>", PROMPT) == ""


def test_only_spacing_may_differ_in_the_kept_tail():
    """A tail in which a character other than whitespace differs ("?" written "!") is no tail of the prompt."""
    assert answer_of(DECODED[200:].replace("это такое?", "это такое!") + "Ответ.<|eot_id|>", PROMPT) is None


def test_a_piece_of_the_prompt_that_does_not_reach_its_end_is_no_tail():
    """The query starts inside the prompt but leaves its end out: the prompt's own text after it would be read as
    the answer; refused, as the exact tail match refuses it."""
    query = DECODED[200:-120] + "Ответ.<|eot_id|>"
    assert answer_of(query, PROMPT) is None


def test_a_query_that_only_shares_a_short_start_is_refused():
    """Fewer than MIN_PROMPT_TAIL characters other than whitespace in common: no tail, refused."""
    tail = "".join(PROMPT.split())[-(MIN_PROMPT_TAIL - 1):]
    assert answer_of(tail + " Ответ.", PROMPT) is None


def test_a_whitespace_prompt_does_not_place_a_query_that_opens_with_a_replacement_character():
    """A prompt of only whitespace has nothing to align on, even after a replacement character that a cut would
    leave: the whole-prompt spacing-blind match refuses it, and the cut one refuses it too."""
    assert answer_of("\ufffd answer", "   ") is None


def test_the_spacing_blind_tail_search_is_bounded_on_a_repetitive_prompt(monkeypatch):
    """A repetitive prompt defeats the quick tries, and the linear search runs; it is given at most MAX_TAIL_SEARCH
    characters of the prompt and of the query, whatever their lengths (untrusted input: no unbounded work)."""
    seen = []
    real = rewards._longest_tail

    def watched(prompt, body):
        seen.append((len(prompt), len(body[:len(prompt)])))
        return real(prompt, body)

    monkeypatch.setattr(rewards, "_longest_tail", watched)
    prompt = "а ?б " * (MAX_TAIL_SEARCH // 2)           # 2.5 times MAX_TAIL_SEARCH characters, 1.5 times bare
    query = prompt.replace(" ?", "?")[-(MAX_TAIL_SEARCH // 2):] + "Ответ."
    assert answer_of(query, prompt) == "Ответ."
    assert seen and all(p <= MAX_TAIL_SEARCH and b <= MAX_TAIL_SEARCH for p, b in seen)


def test_a_query_whose_start_fills_the_search_window_is_refused_rather_than_searched():
    """Its first MAX_TAIL_SEARCH + 1 characters other than whitespace all occur in the prompt: a tail could be longer
    than the search looks at, so it is refused, as the exact tail match refuses it."""
    prompt = "а ?б " * MAX_TAIL_SEARCH
    query = prompt.replace(" ?", "?")[-(3 * MAX_TAIL_SEARCH):] + "Ответ."
    assert answer_of(query, prompt) is None


@pytest.mark.parametrize("query", [DECODED + "Ответ.<|eot_id|>", PROMPT[300:] + "Ответ.<|eot_id|>"])
def test_the_whole_respaced_prompt_and_an_exact_tail_still_match_first(query):
    assert answer_of(query, PROMPT) == "Ответ."

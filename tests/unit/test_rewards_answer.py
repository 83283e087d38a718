"""The answer a reward judges (judge.rewards.policy_answer and its callers: /get_reward's answer_of, the trl function,
verl's sample): where the policy's turn ends, and which reasoning block is the policy's own (fast tier)."""

from __future__ import annotations

import asyncio

import pytest

from judge.reward_clients import sample_from_verl, trl_reward_function
from judge.rewards import RewardRule, policy_answer, prompt_opens_reasoning
from judge.wire import JudgeResult
from serve.rewards import answer_of
from tests.support.scripted_endpoint import ScriptedEndpoint

CHATML = "<|im_start|>user\nНапишите ответ.<|im_end|>\n<|im_start|>assistant\n"
VERL_INFO = {"instruction": "Напишите ответ.", "criteria": ["A"]}

# Answers whose end-of-turn strings are their own text: HTML strikethrough, a mention of the tags.
STRIKE_PRICE = "Старая цена <s>1000</s> руб., новая 800 руб. Скидка 20%."
STRIKE_HTML = "Используйте HTML: <s>зачёркнутый</s> текст, он покажет отменённое."
THINK_TAGS = "Модель рассуждает между тегами <think> и </think>, а ответ идёт после них."
TEXT_ANSWERS = [STRIKE_PRICE, STRIKE_HTML, THINK_TAGS,
                "Токен <eos> завершает последовательность, а <end_of_turn> закрывает ход в Gemma.",
                "Цена: <s>1000</s>",  # strikethrough at the very end: the "</s>" closes its "<s>"
                "Цена: <S>1000</s>",  # HTML tags are any case
                "Тег </think> без открывающего ничего не закрывает."]


@pytest.mark.parametrize("answer", TEXT_ANSWERS)
def test_an_answers_own_markers_and_tags_are_judged_as_written(answer):
    """trl and verl decode without special tokens, so "</s>", "<eos>" or "<think>" in what they pass is the policy's
    text: it reaches the judge whole, wherever the reward path sees it. The one exception, a "</think>" with nothing
    before it where the prompt is not seen, is the prompt-opened block of the last test."""
    assert policy_answer(answer, reasoning_opened=False) == answer
    assert answer_of(CHATML + answer + "<|im_end|>", CHATML) == answer
    if not answer.startswith("Тег </think>"):
        assert policy_answer(answer) == answer
        assert sample_from_verl(answer, None, VERL_INFO).answer == answer


def test_strikethrough_before_the_end_of_turn_is_kept():
    """The two cases once cut at the first "</s>": "Старая цена <s>1000" and "Используйте HTML: <s>зачёркнутый"."""
    assert policy_answer("Старая цена <s>1000</s> руб., новая 800 руб. ...<|im_end|>") == \
        "Старая цена <s>1000</s> руб., новая 800 руб. ..."
    answer = "Используйте HTML: <s>зачёркнутый</s> текст ..."
    assert sample_from_verl(answer, None, {"instruction": "Q", "criteria": ["A"]}).answer == answer


@pytest.mark.parametrize(
    "tail",
    ["<|im_end|>", "<|im_end|><|endoftext|><|endoftext|>", "<|im_end|>\n", "<|im_end|>\n<|im_start|>user\nещё",
     "<|eot_id|><|finetune_right_pad_id|><|finetune_right_pad_id|>", "<end_of_turn><eos><pad><pad>", "</s></s></s>"],
)
def test_an_openrlhf_query_is_cut_where_the_turn_ends(tail):
    """OpenRLHF decodes prompt and response with the special tokens kept: the response ends in the policy's
    end-of-sequence token, a padded batch in pad tokens after it (and a policy that ran past its turn opens the
    next one). There the answer ends, its own strikethrough kept."""
    assert answer_of(CHATML + STRIKE_PRICE + tail, CHATML) == STRIKE_PRICE


def test_a_real_qwen_query_with_strikethrough_and_padding(qwen_tokenizer):
    """The query as OpenRLHF builds it from token ids (``decode(..., skip_special_tokens=False)``): the answer is
    what the policy wrote, up to its <|im_end|>, with its HTML intact."""
    prompt_ids = qwen_tokenizer(CHATML, add_special_tokens=False)["input_ids"]
    response = qwen_tokenizer(STRIKE_HTML + "<|im_end|><|endoftext|><|endoftext|>", add_special_tokens=False)
    query = qwen_tokenizer.decode(prompt_ids + response["input_ids"], skip_special_tokens=False)
    assert answer_of(query, CHATML) == STRIKE_HTML


def test_a_think_in_the_users_prompt_opens_no_reasoning():
    """A user asking about the tag: the prompt does not end in a template's "<think>", so the answer is judged (it
    was "": an unclosed reasoning block)."""
    prompt = ("<|im_start|>system\nТы помощник.<|im_end|>\n<|im_start|>user\nЧто делает тег <think> в DeepSeek-R1?"
              "<|im_end|>\n<|im_start|>assistant\n")
    answer = "Он открывает блок рассуждений модели; ответ идёт после закрывающего тега."
    assert not prompt_opens_reasoning(prompt)
    assert answer_of(prompt + answer + "<|im_end|>", prompt) == answer


@pytest.mark.parametrize(
    "prompt, opened",
    [(CHATML + "<think>\n", True),                                  # Qwen3 Thinking-2507: the template opens it
     ("<｜User｜>Вопрос<｜Assistant｜><think>\n", True),             # the R1 distills
     (CHATML + "<think>\n\n</think>\n\n", False),                   # Qwen3 with thinking off: opened and closed
     (CHATML, False),
     ("<|im_start|>user\nЗакончи фразу: <think>\n<|im_end|>\n<|im_start|>assistant\n", False)],
)
def test_only_the_prompts_end_opens_a_reasoning_block(prompt, opened):
    assert prompt_opens_reasoning(prompt) is opened


def test_the_reasoning_a_policy_really_writes_is_dropped():
    """Qwen3 with thinking on opens "<think>" at the start of its output; a thinking template opens it in the
    prompt. The first "</think>" closes it: what follows is the answer, a later mention of the tag included. A block
    never closed holds no answer."""
    assert policy_answer("<think>\nДумаю.\n</think>\n\nОтвет про тег </think>.<|im_end|>", False) == \
        "Ответ про тег </think>."
    assert policy_answer("  <think>Думаю о <think> и </think>Ответ.") == "Ответ."  # a "<think>" inside: its text
    thinking = CHATML + "<think>\n"
    assert answer_of(thinking + "Думаю.\n</think>\n\nОтвет.<|im_end|>", thinking) == "Ответ."
    assert answer_of(thinking + "Думаю, а тег <think> тут ни при чём<|im_end|>", thinking) == ""
    assert answer_of(CHATML + "<think>\nДумаю и не заканчиваю", CHATML) == ""
    # the prompt unseen (verl, trl's conversational prompts): a "</think>" nothing opened closes the prompt's block
    assert policy_answer("Думаю.\n</think>\n\nОтвет.") == "Ответ."
    assert sample_from_verl("Думаю.\n</think>\n\nОтвет.", None, VERL_INFO).answer == "Ответ."
    # the prompt seen and opening nothing: the same "</think>" is text
    assert policy_answer("Думаю.\n</think>\n\nОтвет.", reasoning_opened=False) == "Думаю.\n</think>\n\nОтвет."


def _judge_response(n: int) -> dict:
    result = JudgeResult(criterion="A", criterion_id=None, scale=[0, 1, 2], score=2, parse_ok=True, in_scale=True,
                         score_source="verdict")
    return {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
            "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
            "items": [{"index": i, "id": None, "results": [result.to_json()]} for i in range(n)],
            "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def test_the_trl_function_sends_a_mention_and_gives_an_unclosed_block_the_empty_reward():
    """On text prompts the trl function reads the prompt: a user's "<think>" opens nothing and the answer is sent
    whole; after a thinking template's "<think>\\n" a completion cut before "</think>" is sent nowhere and gets the
    rule's empty_answer, never its reasoning judged."""
    asking = "<|im_start|>user\nЧто делает тег <think> в DeepSeek-R1?<|im_end|>\n<|im_start|>assistant\n"
    thinking = CHATML + "<think>\n"
    with ScriptedEndpoint(lambda path, body: (200, _judge_response(len(body["items"])))) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], rule=RewardRule(empty_answer=0.25))
        values = asyncio.run(reward(prompts=[asking, thinking, thinking],
                                    completions=[THINK_TAGS, "Думаю.</think>\n\nОтвет.", "Думаю и не заканчиваю"]))
    assert values == [1.0, 1.0, 0.25]
    (_, body), = endpoint.requests
    assert [item["answer"] for item in body["items"]] == [THINK_TAGS, "Ответ."]


def test_a_templated_prompts_instruction_ends_at_its_own_templates_closer():
    """The instruction of a text prompt rendered through a chat template is its last user turn, up to that
    template's closer: a "</s>" of the user's HTML, or a Gemma marker the user quotes, stays in it (it was cut
    there)."""
    user = "Что значит <s>1000</s> в HTML, и зачем Gemma токен <end_of_turn>?"
    prompts = [f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n",
               f"<|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n"]
    with ScriptedEndpoint(lambda path, body: (200, _judge_response(len(body["items"])))) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"])
        assert asyncio.run(reward(prompts=prompts, completions=["Зачёркнутая цена."] * 2)) == [1.0, 1.0]
    (_, body), = endpoint.requests
    assert [item["instruction"] for item in body["items"]] == [user, user]


def test_a_conversational_prompt_whose_template_opened_the_reasoning():
    """trl renders a conversational prompt itself: through a thinking template (Qwen3 Thinking-2507) the completion
    is "reasoning</think>answer", its "<think>" in a prompt the function never sees. The "</think>" nothing in the
    completion opened closes that block: the answer is sent, not the reasoning with it."""
    with ScriptedEndpoint(lambda path, body: (200, _judge_response(len(body["items"])))) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"])
        asyncio.run(reward(prompts=[[{"role": "user", "content": "Вопрос"}]] * 2,
                           completions=[[{"role": "assistant", "content": "Думаю.\n</think>\n\nОтвет."}],
                                        [{"role": "assistant", "content": "Ответ про <think> и </think>."}]]))
    (_, body), = endpoint.requests
    assert [item["answer"] for item in body["items"]] == ["Ответ.", "Ответ про <think> и </think>."]


def test_the_tail_search_reads_at_most_the_prompts_last_max_tail_search_characters(monkeypatch):
    """The linear search for a cut prompt's tail runs in Python: on a body of millions of characters whose start
    occurs all through a repetitive prompt it took seconds before its refusal. It is now given only the prompt's
    last MAX_TAIL_SEARCH characters, which hold every tail wherever the body's first MAX_TAIL_SEARCH + 1 characters
    are nowhere in the prompt (the tail found is the same), and is not run at all where they are (refused)."""
    import serve.rewards as rewards

    limit = rewards.MAX_TAIL_SEARCH
    searched: list[tuple[int, int]] = []
    longest_tail = rewards._longest_tail

    def spy(prompt: str, body: str) -> int:
        searched.append((len(prompt), len(body)))
        return longest_tail(prompt, body)

    monkeypatch.setattr(rewards, "_longest_tail", spy)
    # The body's first limit + 1 characters are all in the prompt: refused without the search.
    assert answer_of("a" * (limit + 10) + "b", "a" * (limit + 10) + "c") is None
    assert searched == []
    # A repetitive prompt longer than the limit, cut to its last 1,003 characters ("ab" x 500 and "END"); the
    # answer is longer than the limit too. The start "abab..." occurs too often for the fast tries: the search
    # finds the tail in the prompt's last `limit` characters, and the answer is all that follows it.
    prompt = "Z" + "ab" * (limit // 2 + 50) + "END"
    answer = "Ответ: " + "да " * (limit // 3)
    assert answer_of(prompt[-1003:] + answer, prompt) == answer.strip()
    assert searched == [(limit, 1003 + len(answer))]
